/* tests/test_linear_bwd.c - attn_backward for the kinds of the ATTN_LINEAR core (ATTN_LINEAR,
   ATTN_COSFORMER, ATTN_PERFORMER with the softmax and ReLU kernels) against central finite
   differences of a double-precision forward written here from shared/ZOO.md (sharing no code
   with attn.h), for the loss sum(dO . out) with a random dO:
     ATTN_LINEAR     w_ij = phi(q_i) . phi(k_j), phi = elu + 1, out = sum w v / (sum w + eps)
     ATTN_COSFORMER  w_ij = relu(q_i) . relu(k_j) cos(pi/2 (p_i - p_j) / M), out = sum w v / max(sum w, eps)
     ATTN_PERFORMER  w_ij = phi(q_i) . phi_s(k_j) (ZOO; ReLU: relu(x W^T) + eps), out = sum w v / sum w
   over the visible keys. Performer's convention (attn.h): W and every max of the stabiliser are
   constants, so the finite differences here freeze them at the unperturbed inputs (each query's
   row max and each row's visible-key max) - the same function the library differentiates.
   In double with step 1e-5 the differences are exact to ~1e-9 (24 coordinates per tensor per
   case, all of them for the smallest cases); and every coordinate against an independent double
   gradient evaluated pair by pair from the definition (lb_grad_ref). Tolerance for both:
   max |err| / max(1, max |grad|) <= 2e-4 (fp32 GEMMs over O(100) terms; f16/bf16 gradients add
   1.5x their rounding).
   Also: threads 1/2/3 bitwise, a caller workspace, padding rows and keys get 0, f16/bf16
   storage, and the backward statuses with outputs untouched. */
#include "test.h"

typedef struct {
    attn_kind kind;
    int relu, causal, B, Sq, Sk, Hq, Hkv, D, Dv, m, M;
    double eps;
    const float *W;
    const int *lq, *lk;
    int no_fd;                   /* long cases: the pairwise reference only (finite differences cost O(S^2) each) */
    int dout_out;                /* dO = out + noise: dO . out large, so c_i = -(dO_i . out_i) / den_i weighs in */
    int threads;                 /* n_threads, or 0: 1 to 3 at random */
} lb_case;

/* cosFormer's M for a sequence of valid lengths Lq, Lk: c->M, or (when c->M is the default, passed
   as max_len 0) max(Lq, Lk) of the sequence, as ZOO.md defines it */
static double lb_M(const lb_case *c, int Lq, int Lk) {
    const int top = Lq > Lk ? Lq : Lk;
    if (c->M != (c->Sq > c->Sk ? c->Sq : c->Sk)) return c->M;
    return top > 0 ? top : 1;
}

/* out [B][Sq][Hq][Dv] from double q, k, v (dense); frozen: Performer's maxes (fill = 1 records them) */
static void lb_forward(const lb_case *c, const double *q, const double *k, const double *v, double *out, double *fq,
                       double *fk, int fill) {
    const int g = c->Hq / c->Hkv, D = c->D, Dv = c->Dv, m = c->m;
    double *pq = (double *)t_xmalloc(sizeof(double) * (size_t)(m > 2 * D ? m : 2 * D));
    double *uk = (double *)t_xmalloc(sizeof(double) * (size_t)c->Sk * (m > 0 ? m : 1));
    double *hk = (double *)t_xmalloc(sizeof(double) * (size_t)c->Sk);
    double *acc = (double *)t_xmalloc(sizeof(double) * Dv);
    const double dn = pow((double)D, -0.25);
    int b, h, i, j, d, l;
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h) {
            const int Lq = c->lq ? c->lq[b] : c->Sq, Lk = c->lk ? c->lk[b] : c->Sk, hv = h / g;
            if (c->kind == ATTN_PERFORMER)
                for (j = 0; j < Lk; ++j) {
                    const double *x = k + (((size_t)b * c->Sk + j) * c->Hkv + hv) * D;
                    hk[j] = 0.0;
                    for (d = 0; d < D; ++d) hk[j] += x[d] * x[d] / (2.0 * sqrt((double)D));
                    for (l = 0; l < m; ++l) {
                        double u = 0.0;
                        for (d = 0; d < D; ++d) u += c->W[l * D + d] * x[d];
                        uk[(size_t)j * m + l] = c->relu ? u : u * dn;
                    }
                }
            for (i = 0; i < c->Sq; ++i) {
                const double *x = q + (((size_t)b * c->Sq + i) * c->Hq + h) * D;
                double *o = out + (((size_t)b * c->Sq + i) * c->Hq + h) * Dv, den = 0.0, s = -HUGE_VAL;
                const long long last = c->causal ? (long long)i + Lk - Lq : (long long)Lk - 1;
                const size_t fi = ((size_t)b * c->Hq + h) * c->Sq + i;
                for (d = 0; d < Dv; ++d) { acc[d] = 0.0; o[d] = 0.0; }
                if (i >= Lq || last < 0) continue;
                if (c->kind == ATTN_PERFORMER) {
                    double hq = 0.0, mx = -HUGE_VAL;
                    for (d = 0; d < D; ++d) hq += x[d] * x[d] / (2.0 * sqrt((double)D));
                    for (l = 0; l < m; ++l) {
                        double u = 0.0;
                        for (d = 0; d < D; ++d) u += c->W[l * D + d] * x[d];
                        pq[l] = c->relu ? u : u * dn;
                        if (pq[l] > mx) mx = pq[l];
                    }
                    for (j = 0; j < Lk && j <= last; ++j)
                        for (l = 0; l < m; ++l) s = fmax(s, uk[(size_t)j * m + l]);
                    if (fill) { fq[fi] = mx; fk[fi] = s; } else { mx = fq[fi]; s = fk[fi]; }
                    for (l = 0; l < m; ++l)
                        pq[l] = c->relu ? (pq[l] > 0 ? pq[l] : 0.0) + c->eps : exp(pq[l] - hq - mx) + c->eps;
                } else {
                    for (d = 0; d < D; ++d)
                        pq[d] = c->kind == ATTN_LINEAR ? (x[d] > 0 ? x[d] + 1.0 : exp(x[d])) : (x[d] > 0 ? x[d] : 0.0);
                }
                for (j = 0; j < Lk && j <= last; ++j) {
                    const double *y = k + (((size_t)b * c->Sk + j) * c->Hkv + hv) * D;
                    const double *vj = v + (((size_t)b * c->Sk + j) * c->Hkv + hv) * Dv;
                    double wgt = 0.0;
                    if (c->kind == ATTN_PERFORMER) {
                        for (l = 0; l < m; ++l) {
                            const double u = uk[(size_t)j * m + l];
                            wgt += pq[l] * (c->relu ? (u > 0 ? u : 0.0) + c->eps : exp(u - hk[j] - s) + c->eps);
                        }
                    } else {
                        for (d = 0; d < D; ++d)
                            wgt += pq[d] * (c->kind == ATTN_LINEAR ? (y[d] > 0 ? y[d] + 1.0 : exp(y[d])) : (y[d] > 0 ? y[d] : 0.0));
                        if (c->kind == ATTN_COSFORMER) {
                            const double pi_ = (double)i + 1.0 + (c->causal ? (double)(Lk - Lq) : 0.0);
                            wgt *= cos(1.57079632679489661923 * (pi_ - (j + 1.0)) / lb_M(c, Lq, Lk));
                        }
                    }
                    den += wgt;
                    for (d = 0; d < Dv; ++d) acc[d] += wgt * vj[d];
                }
                if (c->kind == ATTN_LINEAR) den += c->eps;
                else if (c->kind == ATTN_COSFORMER) den = den > c->eps ? den : c->eps;
                for (d = 0; d < Dv; ++d) o[d] = acc[d] / den;
            }
        }
    free(pq); free(uk); free(hk); free(acc);
}

/* The gradient directly from the pairwise definition, in double (the second, independent check:
   every coordinate): dA_ij = g_i . v_j + c_i with g_i = dO_i / den_i, c_i = -(dO_i . out_i) / den_i
   (0 under an active cosFormer clamp); dv_j += A_ij g_i; dphi(q_i) += dA_ij phi(k_j);
   dphi(k_j) = dA_ij phi(q_i) taken through k_j's features as row i sees them (Performer: with s_i). */
static void lb_feat_grad(const lb_case *c, const double *x, const double *dphi, double s, int query, double *dx) {
    const int D = c->D, m = c->m;
    const double dn = pow((double)D, -0.25);
    int d, l;
    for (d = 0; d < D; ++d) dx[d] = 0.0;
    if (c->kind == ATTN_PERFORMER) {
        double h = 0.0, mx = -HUGE_VAL, tot = 0.0;
        double *u = (double *)t_xmalloc(sizeof(double) * (size_t)m);
        for (d = 0; d < D; ++d) h += x[d] * x[d] / (2.0 * sqrt((double)D));
        for (l = 0; l < m; ++l) {
            u[l] = 0.0;
            for (d = 0; d < D; ++d) u[l] += c->W[l * D + d] * x[d];
            if (!c->relu) u[l] *= dn;
            if (u[l] > mx) mx = u[l];
        }
        for (l = 0; l < m; ++l) {
            double t;
            if (c->relu) t = u[l] > 0 ? dphi[l] : 0.0;
            else { t = dphi[l] * exp(u[l] - h - (query ? mx : s)); tot += t; }
            for (d = 0; d < D; ++d) dx[d] += t * c->W[l * D + d] * (c->relu ? 1.0 : dn);
        }
        for (d = 0; d < D; ++d) dx[d] -= tot * x[d] / sqrt((double)D);
        free(u);
    } else {
        for (d = 0; d < D; ++d)
            dx[d] = c->kind == ATTN_LINEAR ? dphi[d] * (x[d] > 0 ? 1.0 : exp(x[d])) : (x[d] > 0 ? dphi[d] : 0.0);
    }
}
static void lb_phi(const lb_case *c, const double *x, double s, int query, double *f) {
    const int D = c->D, m = c->m;
    const double dn = pow((double)D, -0.25);
    int d, l;
    if (c->kind == ATTN_PERFORMER) {
        double h = 0.0, mx = -HUGE_VAL;
        for (d = 0; d < D; ++d) h += x[d] * x[d] / (2.0 * sqrt((double)D));
        for (l = 0; l < m; ++l) {
            f[l] = 0.0;
            for (d = 0; d < D; ++d) f[l] += c->W[l * D + d] * x[d];
            if (!c->relu) f[l] *= dn;
            if (f[l] > mx) mx = f[l];
        }
        for (l = 0; l < m; ++l) f[l] = c->relu ? (f[l] > 0 ? f[l] : 0.0) + c->eps : exp(f[l] - h - (query ? mx : s)) + c->eps;
    } else {
        for (d = 0; d < D; ++d) f[d] = c->kind == ATTN_LINEAR ? (x[d] > 0 ? x[d] + 1.0 : exp(x[d])) : (x[d] > 0 ? x[d] : 0.0);
    }
}
static void lb_grad_ref(const lb_case *c, const double *q, const double *k, const double *v, const double *dO,
                        const double *fk, double *gq, double *gk, double *gv) {
    const int g = c->Hq / c->Hkv, D = c->D, Dv = c->Dv, F = c->kind == ATTN_PERFORMER ? c->m : D;
    double *pq = (double *)t_xmalloc(sizeof(double) * F), *pk = (double *)t_xmalloc(sizeof(double) * F);
    double *dpq = (double *)t_xmalloc(sizeof(double) * F), *dpk = (double *)t_xmalloc(sizeof(double) * F);
    double *dx = (double *)t_xmalloc(sizeof(double) * D), *num = (double *)t_xmalloc(sizeof(double) * Dv);
    double *gi = (double *)t_xmalloc(sizeof(double) * Dv);
    int b, h, i, j, d, l;
    memset(gq, 0, sizeof(double) * (size_t)c->B * c->Sq * c->Hq * D);
    memset(gk, 0, sizeof(double) * (size_t)c->B * c->Sk * c->Hkv * D);
    memset(gv, 0, sizeof(double) * (size_t)c->B * c->Sk * c->Hkv * Dv);
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h) {
            const int Lq = c->lq ? c->lq[b] : c->Sq, Lk = c->lk ? c->lk[b] : c->Sk, hv = h / g;
            for (i = 0; i < Lq; ++i) {
                const double *x = q + (((size_t)b * c->Sq + i) * c->Hq + h) * D, *o = dO + (((size_t)b * c->Sq + i) * c->Hq + h) * Dv;
                const long long last = c->causal ? (long long)i + Lk - Lq : (long long)Lk - 1;
                const double s = c->kind == ATTN_PERFORMER ? fk[((size_t)b * c->Hq + h) * c->Sq + i] : 0.0;
                const double pi_ = (double)i + 1.0 + (c->causal ? (double)(Lk - Lq) : 0.0);
                double den = 0.0, cc, dot = 0.0;
                int clamped = 0;
                if (last < 0) continue;
                lb_phi(c, x, 0.0, 1, pq);
                for (d = 0; d < Dv; ++d) num[d] = 0.0;
                for (j = 0; j < Lk && j <= last; ++j) {          /* forward: den, num */
                    const double *y = k + (((size_t)b * c->Sk + j) * c->Hkv + hv) * D, *vj = v + (((size_t)b * c->Sk + j) * c->Hkv + hv) * Dv;
                    double a = 0.0;
                    lb_phi(c, y, s, 0, pk);
                    for (l = 0; l < F; ++l) a += pq[l] * pk[l];
                    if (c->kind == ATTN_COSFORMER) a *= cos(1.57079632679489661923 * (pi_ - (j + 1.0)) / lb_M(c, Lq, Lk));
                    den += a;
                    for (d = 0; d < Dv; ++d) num[d] += a * vj[d];
                }
                if (c->kind == ATTN_LINEAR) den += c->eps;
                else if (c->kind == ATTN_COSFORMER && !(den > c->eps)) { den = c->eps; clamped = 1; }
                for (d = 0; d < Dv; ++d) { gi[d] = o[d] / den; dot += o[d] * num[d] / den; }
                cc = clamped ? 0.0 : -dot / den;
                for (l = 0; l < F; ++l) dpq[l] = 0.0;
                for (j = 0; j < Lk && j <= last; ++j) {          /* backward */
                    const double *y = k + (((size_t)b * c->Sk + j) * c->Hkv + hv) * D, *vj = v + (((size_t)b * c->Sk + j) * c->Hkv + hv) * Dv;
                    double *gkj = gk + (((size_t)b * c->Sk + j) * c->Hkv + hv) * D, *gvj = gv + (((size_t)b * c->Sk + j) * c->Hkv + hv) * Dv;
                    const double cw = c->kind == ATTN_COSFORMER ? cos(1.57079632679489661923 * (pi_ - (j + 1.0)) / lb_M(c, Lq, Lk)) : 1.0;
                    double a = 0.0, da = cc;
                    lb_phi(c, y, s, 0, pk);
                    for (l = 0; l < F; ++l) a += pq[l] * pk[l];
                    a *= cw;
                    for (d = 0; d < Dv; ++d) { da += gi[d] * vj[d]; gvj[d] += a * gi[d]; }
                    for (l = 0; l < F; ++l) { dpq[l] += da * cw * pk[l]; dpk[l] = da * cw * pq[l]; }
                    lb_feat_grad(c, y, dpk, s, 0, dx);
                    for (d = 0; d < D; ++d) gkj[d] += dx[d];
                }
                lb_feat_grad(c, x, dpq, 0.0, 1, dx);
                for (d = 0; d < D; ++d) gq[(((size_t)b * c->Sq + i) * c->Hq + h) * D + d] = dx[d];
            }
        }
    free(pq); free(pk); free(dpq); free(dpk); free(dx); free(num); free(gi);
}

static double lb_loss(const lb_case *c, const double *q, const double *k, const double *v, const double *dout, double *out,
                      double *fq, double *fk) {
    const size_t n = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    double s = 0.0;
    size_t i;
    lb_forward(c, q, k, v, out, fq, fk, 0);
    for (i = 0; i < n; ++i) s += dout[i] * out[i];
    return s;
}

static double *lb_read(const attn_tensor *t) {
    const size_t n = (size_t)t->batch * t->seq * t->heads * t->dim;
    double *x = (double *)t_xmalloc(n * sizeof(double));
    size_t at = 0;
    int b, s, h, d;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d) x[at++] = t_load(t, b, s, h, d);
    return x;
}

static attn_tensor lb_tensor(attn_dtype dt, int B, int S, int H, int D, t_rng *r, double sigma) {
    attn_tensor t = attn_tensor_dense(NULL, dt, B, S, H, D);
    t.data = t_xmalloc(t_extent(&t) * t_dt_size(dt));
    if (r) t_fill_normal(&t, r, sigma); else t_fill_nan(t.data, dt, t_extent(&t));
    return t;
}

static double g_lb_worst = 0.0;

static void lb_run_case(int idx, lb_case *c, attn_dtype tin, attn_dtype tgrad, t_rng *r, int all) {
    attn_desc d;
    attn_tensor q, k, v, o, dO, dq, dk, dv;
    double *qd, *kd, *vd, *od, *outd, *fq, *fk, *lib[3], *base[3], err = 0.0, aerr = 0.0, gmax = 1.0;
    size_t sizes[3], t;
    float *W = NULL;
    int which;
    attn_status st;
    memset(&d, 0, sizeof d);
    d.kind = c->kind; d.causal = c->causal; d.n_threads = t_irange(r, 1, 3);
    if (c->threads) d.n_threads = c->threads;
    d.seqlens_q = c->lq; d.seqlens_k = c->lk;
    if (c->kind == ATTN_LINEAR) d.linear.eps = (float)c->eps;
    if (c->kind == ATTN_COSFORMER) { d.cosformer.eps = (float)c->eps; d.cosformer.max_len = c->M == (c->Sq > c->Sk ? c->Sq : c->Sk) ? 0 : c->M; }
    if (c->kind == ATTN_PERFORMER) {
        d.performer.features = c->m; d.performer.kernel = c->relu; d.performer.eps = (float)c->eps; d.performer.seed = 17u + (unsigned)idx;
        W = (float *)t_xmalloc(sizeof(float) * (size_t)c->m * c->D);
        attn_performer_draw(&d.performer, c->D, W);
        c->W = W;
    }
    q = lb_tensor(tin, c->B, c->Sq, c->Hq, c->D, r, 0.8);
    k = lb_tensor(tin, c->B, c->Sk, c->Hkv, c->D, r, 0.8);
    v = lb_tensor(tin, c->B, c->Sk, c->Hkv, c->Dv, r, 1.0);
    dO = lb_tensor(tin, c->B, c->Sq, c->Hq, c->Dv, r, 1.0);
    o = lb_tensor(ATTN_F32, c->B, c->Sq, c->Hq, c->Dv, NULL, 0);
    dq = lb_tensor(tgrad, c->B, c->Sq, c->Hq, c->D, NULL, 0);
    dk = lb_tensor(tgrad, c->B, c->Sk, c->Hkv, c->D, NULL, 0);
    dv = lb_tensor(tgrad, c->B, c->Sk, c->Hkv, c->Dv, NULL, 0);
    T_CHECK(attn_forward(&d, q, k, v, o, NULL) == ATTN_OK, "linear-bwd #%d forward", idx);
    if (c->dout_out) {
        int b, i, h, e;
        for (b = 0; b < c->B; ++b) for (i = 0; i < c->Sq; ++i) for (h = 0; h < c->Hq; ++h) for (e = 0; e < c->Dv; ++e)
            t_store(&dO, b, i, h, e, t_load(&o, b, i, h, e) + 0.1 * t_load(&dO, b, i, h, e));
    }
    st = attn_backward(&d, q, k, v, o, dO, NULL, dq, dk, dv);
    if (!T_CHECK(st == ATTN_OK, "linear-bwd #%d: %s", idx, attn_status_str(st))) goto done;
    qd = lb_read(&q); kd = lb_read(&k); vd = lb_read(&v); od = lb_read(&dO);
    lib[0] = lb_read(&dq); lib[1] = lb_read(&dk); lib[2] = lb_read(&dv);
    base[0] = qd; base[1] = kd; base[2] = vd;
    sizes[0] = t_extent(&q); sizes[1] = t_extent(&k); sizes[2] = t_extent(&v);
    outd = (double *)t_xmalloc(sizeof(double) * t_extent(&o));
    fq = (double *)t_xmalloc(sizeof(double) * (size_t)c->B * c->Hq * c->Sq + 1);
    fk = (double *)t_xmalloc(sizeof(double) * (size_t)c->B * c->Hq * c->Sq + 1);
    lb_forward(c, qd, kd, vd, outd, fq, fk, 1);
    for (which = 0; which < 3; ++which)
        for (t = 0; t < sizes[which]; ++t) gmax = fmax(gmax, fabs(lib[which][t]));
    for (which = 0; which < 3; ++which) {
        const int n_pick = c->no_fd ? 0 : (all ? (int)sizes[which] : 24);
        int p;
        for (p = 0; p < n_pick; ++p) {
            const size_t at = all ? (size_t)p : (size_t)t_irange(r, 0, (int)sizes[which] - 1);
            const double x0 = base[which][at], hstep = 1e-5;
            double lp, lm, fd;
            base[which][at] = x0 + hstep; lp = lb_loss(c, qd, kd, vd, od, outd, fq, fk);
            base[which][at] = x0 - hstep; lm = lb_loss(c, qd, kd, vd, od, outd, fq, fk);
            base[which][at] = x0;
            fd = (lp - lm) / (2.0 * hstep);
            err = fmax(err, fabs(fd - lib[which][at]));
        }
    }
    {   /* every coordinate against the pairwise gradient */
        double *ref[3];
        ref[0] = (double *)t_xmalloc(sizeof(double) * sizes[0]); ref[1] = (double *)t_xmalloc(sizeof(double) * sizes[1]);
        ref[2] = (double *)t_xmalloc(sizeof(double) * sizes[2]);
        lb_grad_ref(c, qd, kd, vd, od, fk, ref[0], ref[1], ref[2]);
        for (which = 0; which < 3; ++which) {
            for (t = 0; t < sizes[which]; ++t) aerr = fmax(aerr, fabs(ref[which][t] - lib[which][t]));
            free(ref[which]);
        }
        aerr /= gmax;
    }
    err /= gmax;
    T_CHECK(aerr <= (tgrad == ATTN_F32 ? 2e-4 : 1.5 * t_dt_rel(tgrad) + 2e-4), "linear-bwd #%d (%s%s causal %d): pairwise gradient err %.3g",
            idx, attn_kind_name(c->kind), c->relu ? " relu" : "", c->causal, aerr);
    if (aerr > g_lb_worst && tgrad == ATTN_F32) g_lb_worst = aerr;
    if (err > g_lb_worst && tgrad == ATTN_F32) g_lb_worst = err;
    T_CHECK(err <= (tgrad == ATTN_F32 ? 2e-4 : 1.5 * t_dt_rel(tgrad) + 2e-4),
            "linear-bwd #%d (%s%s causal %d B%d Sq%d Sk%d Hq%d Hkv%d D%d Dv%d m%d len %d, in %s, grads %s): err %.3g", idx,
            attn_kind_name(c->kind), c->relu ? " relu" : "", c->causal, c->B, c->Sq, c->Sk, c->Hq, c->Hkv, c->D, c->Dv, c->m,
            c->lq != NULL, t_dt_name(tin), t_dt_name(tgrad), err);
    free(qd); free(kd); free(vd); free(od); free(lib[0]); free(lib[1]); free(lib[2]); free(outd); free(fq); free(fk);
done:
    free(q.data); free(k.data); free(v.data); free(dO.data); free(o.data); free(dq.data); free(dk.data); free(dv.data);
    free(W);
    c->W = NULL;
}

static void test_lbw_sweep(void) {
    static const attn_kind kinds[4] = { ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER, ATTN_PERFORMER };
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng r = t_rng_seed(4711);
    const int n_cases = T_QUICK ? 12 : 40;
    int idx;
    for (idx = 0; idx < n_cases; ++idx) {
        lb_case c;
        int lq[2], lk[2], b, small = idx < 8;
        memset(&c, 0, sizeof c);
        c.kind = kinds[idx % 4]; c.relu = idx % 4 == 3;
        c.causal = (idx / 4) % 2;
        c.B = t_irange(&r, 1, 2); c.Hkv = t_irange(&r, 1, 2); c.Hq = c.Hkv * t_irange(&r, 1, 2);
        c.Sq = small ? t_irange(&r, 1, 9) : t_irange(&r, 1, 150);
        c.Sk = t_chance(&r, 0.5) ? c.Sq : (small ? t_irange(&r, 1, 9) : t_irange(&r, 1, 150));
        c.D = t_pick(&r, (const int[]){ 1, 3, 8, 13 }, 4); c.Dv = t_pick(&r, (const int[]){ 1, 4, 7 }, 3);
        c.m = c.kind == ATTN_PERFORMER ? t_pick(&r, (const int[]){ 1, 5, 16, 24 }, 4) : 0;
        c.M = c.Sq > c.Sk ? c.Sq : c.Sk;
        if (c.kind == ATTN_COSFORMER && t_chance(&r, 0.3)) c.M += 7;
        c.eps = c.kind == ATTN_PERFORMER ? (c.relu ? 1e-3 : 1e-6) : 1e-6;
        if ((idx / 8) % 2 == 1) c.eps = c.kind == ATTN_COSFORMER ? 1.0 : 1e-2;   /* cosFormer: the clamp active in some rows */
        if (!small && t_chance(&r, 0.3)) {
            for (b = 0; b < c.B; ++b) { lq[b] = t_irange(&r, 0, c.Sq); lk[b] = t_irange(&r, 0, c.Sk); }
            c.lq = lq; c.lk = lk;
        }
        lb_run_case(idx, &c, idx < 24 ? ATTN_F32 : dts[idx % 3], idx < 24 ? ATTN_F32 : dts[(idx / 3) % 3], &r, small);
    }
}

/* Non-causal ATTN_LINEAR / ATTN_COSFORMER run a pass of their own (full-length sums, blocks of
   256 keys and up to 256 query rows): sequences of several blocks, GQA, padding (one sequence
   with no valid key), the cosFormer clamp, f16/bf16, against the pairwise reference. Cases 4
   and 5: the causal one (attn__lcb_task, chunks of 28 to 32 rows): more keys than rows (keys
   every row sees, several chunks of them), fewer (first rows with no visible key), GQA, padding. */
static void test_lbw_long(void) {
    t_rng r = t_rng_seed(815);
    int idx;
    for (idx = 0; idx < 6; ++idx) {
        lb_case c;
        int lq[2], lk[2];
        memset(&c, 0, sizeof c);
        c.kind = idx == 2 ? ATTN_COSFORMER : ATTN_LINEAR;
        c.B = 2; c.Hkv = idx == 1 ? 1 : 2; c.Hq = idx == 0 ? 4 : (idx == 1 ? 3 : 2);
        c.Sq = idx == 1 ? 700 : 600; c.Sk = idx == 0 ? 530 : c.Sq;
        c.D = idx == 3 ? 16 : 13; c.Dv = 7; c.M = c.Sq > c.Sk ? c.Sq : c.Sk;
        c.eps = idx == 2 ? 1.0 : 1e-6;
        c.no_fd = 1;
        if (idx == 0) { lq[0] = 600; lq[1] = 311; lk[0] = 529; lk[1] = 0; c.lq = lq; c.lk = lk; }
        if (idx == 2) { lq[0] = 257; lq[1] = 600; lk[0] = 600; lk[1] = 513; c.lq = lq; c.lk = lk; }
        if (idx >= 4) {
            c.causal = 1; c.kind = idx == 4 ? ATTN_LINEAR : ATTN_COSFORMER;
            c.Hkv = 2; c.Hq = idx == 4 ? 4 : 2;
            c.Sq = idx == 4 ? 200 : 300; c.Sk = idx == 4 ? 330 : 170; c.M = c.Sq > c.Sk ? c.Sq : c.Sk;
            if (idx == 4) { lq[0] = 200; lq[1] = 150; lk[0] = 330; lk[1] = 97; c.lq = lq; c.lk = lk; }
        }
        lb_run_case(100 + idx, &c, idx == 3 ? ATTN_F16 : ATTN_F32, idx == 3 ? ATTN_BF16 : ATTN_F32, &r, 0);
    }
}

/* threads 1/2/3 and a caller workspace: bitwise equal gradients. The last three cases (non-causal
   ATTN_LINEAR and ATTN_PERFORMER, one sequence, 5 KV heads, 2 blocks of rows; the Performer's 2
   blocks of keys, the second partial) run 5, 2 (the last task 1) and 1 KV heads per task. The
   last one has 1024 features and 600 keys: with 5 heads a task keeps K~ of the first block of
   keys only and computes the other two again (ATTN__PBW_KEEP), with 2 or 1 it keeps all three,
   so the two must agree bitwise. */
static void test_lbw_threads(void) {
    static const attn_kind kinds[6] = { ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER, ATTN_LINEAR, ATTN_PERFORMER, ATTN_PERFORMER };
    t_rng r = t_rng_seed(12);
    int kk, causal, th;
    for (kk = 0; kk < 6; ++kk)
        for (causal = 0; causal <= (kk < 3); ++causal) {
            const int B = kk < 3 ? 2 : 1, Sq = kk < 3 ? 100 : 300, Sk = kk < 3 ? 90 : (kk < 5 ? 280 : 600), Hkv = kk < 3 ? 2 : 5, Hq = 2 * Hkv;
            attn_tensor q = lb_tensor(ATTN_F32, B, Sq, Hq, 16, &r, 0.8), k = lb_tensor(ATTN_F32, B, Sk, Hkv, 16, &r, 0.8);
            attn_tensor v = lb_tensor(ATTN_F32, B, Sk, Hkv, 8, &r, 1.0), dO = lb_tensor(ATTN_F32, B, Sq, Hq, 8, &r, 1.0);
            attn_tensor o = lb_tensor(ATTN_F32, B, Sq, Hq, 8, NULL, 0);
            attn_tensor g[3], first[3];
            attn_desc d;
            size_t bytes = 0, m0;
            void *ws;
            int i;
            g[0] = lb_tensor(ATTN_F32, B, Sq, Hq, 16, NULL, 0); g[1] = lb_tensor(ATTN_F32, B, Sk, Hkv, 16, NULL, 0);
            g[2] = lb_tensor(ATTN_F32, B, Sk, Hkv, 8, NULL, 0);
            for (i = 0; i < 3; ++i) first[i] = lb_tensor(ATTN_F32, g[i].batch, g[i].seq, g[i].heads, g[i].dim, NULL, 0);
            memset(&d, 0, sizeof d);
            d.kind = kinds[kk]; d.causal = causal; d.performer.features = kk == 5 ? 1024 : 40;
            for (th = 1; th <= 4; ++th) {
                d.n_threads = th == 4 ? 2 : th;
                if (th == 4) {
                    T_CHECK(attn_backward_workspace_size(&d, q, k, v, &bytes) == ATTN_OK && bytes > 0, "linear-bwd workspace size");
                    ws = t_xmalloc(bytes);
                    d.workspace = ws; d.workspace_size = bytes;
                }
                m0 = t_attn_mallocs;
                T_CHECK(attn_backward(&d, q, k, v, o, dO, NULL, g[0], g[1], g[2]) == ATTN_OK, "linear-bwd threads %d", th);
                if (th == 4) {
                    T_CHECK(t_attn_mallocs == m0, "linear-bwd with a caller workspace allocated");
                    free(ws);
                    d.workspace = NULL; d.workspace_size = 0;
                }
                for (i = 0; i < 3; ++i) {
                    const size_t nb = t_extent(&g[i]) * 4;
                    if (th == 1) memcpy(first[i].data, g[i].data, nb);
                    else T_CHECK(memcmp(first[i].data, g[i].data, nb) == 0, "linear-bwd %s causal %d: run %d differs (grad %d)",
                                 attn_kind_name(d.kind), causal, th, i);
                }
            }
            free(q.data); free(k.data); free(v.data); free(dO.data); free(o.data);
            for (i = 0; i < 3; ++i) { free(g[i].data); free(first[i].data); }
        }
}

/* ATTN_PERFORMER with dO = out + noise, so the c_i = -(dO_i . out_i) / den_i term is a large part
   of every gradient (a random dO leaves it small: a missing 1/den there passed every random-dO
   case of the performer family). Non-causal (its c from g S^T . phi(Q) and eps sumQ g . vs) and
   causal, several 64-row chunks and 64-key blocks, GQA, padding, eps large enough that the eps
   terms count, both kernels; against the pairwise double gradient, and finite differences for the
   smallest. Case 4: non-causal with 3 blocks of 256 keys (the staged backward keeps each block's
   K~ of all heads together), the second sequence padded to 2. Cases 5, 6: 8192 features
   (softmax) and 16384 (ReLU): a task keeps K~ of the first block of keys (ATTN__PBW_KEEP), or
   of none, and computes the others again. The performer family runs it (test_performer). */
void t_performer_bwd_out(void) {
    t_rng r = t_rng_seed(3342);
    int idx;
    for (idx = 0; idx < 7; ++idx) {
        lb_case c;
        int lq[2] = { 150, 97 }, lk[2] = { 140, 71 };
        memset(&c, 0, sizeof c);
        c.kind = ATTN_PERFORMER; c.dout_out = 1; c.no_fd = idx != 1;
        c.relu = idx == 2; c.causal = idx == 3;
        c.B = idx == 0 ? 2 : 1; c.Hkv = idx == 2 ? 2 : 1 + (idx == 0); c.Hq = idx == 2 ? 2 : 2 * c.Hkv;
        c.Sq = idx == 1 ? 70 : (idx == 2 ? 130 : (idx == 3 ? 140 : 150));
        c.Sk = idx == 1 ? 90 : (idx == 2 ? 130 : (idx == 3 ? 150 : 140));
        c.D = idx == 1 ? 6 : 8; c.Dv = idx == 2 ? 3 : (idx == 1 ? 4 : 5); c.m = idx == 1 ? 12 : 16;
        c.eps = idx == 1 ? 1e-6 : (idx == 2 ? 1e-3 : 1e-2);
        if (idx == 0) { c.lq = lq; c.lk = lk; }
        if (idx == 4) {
            c.B = 2; c.Hkv = 2; c.Hq = 4; c.Sq = 90; c.Sk = 600; c.Dv = 5; c.m = 16;
            c.threads = 1;                              /* both KV heads in one task */
            lq[0] = 90; lq[1] = 61; lk[0] = 600; lk[1] = 300; c.lq = lq; c.lk = lk;
        }
        if (idx >= 5) {                                 /* K~ computed again past the first block, or all */
            c.B = 2; c.Hkv = 1; c.Hq = 1; c.Sq = 8; c.Sk = 300; c.D = 4; c.Dv = 3; c.m = idx == 5 ? 8192 : 16384;
            c.relu = idx == 6; c.threads = 1;
            lq[0] = 8; lq[1] = 5; lk[0] = 300; lk[1] = idx == 5 ? 280 : 100; c.lq = lq; c.lk = lk;
        }
        lb_run_case(200 + idx, &c, ATTN_F32, ATTN_F32, &r, 0);
    }
}

static void test_lbw_errors(void) {
    float q[1 * 3 * 2 * 4], k[1 * 3 * 1 * 4], v[1 * 3 * 1 * 5], out[1 * 3 * 2 * 5], dout[1 * 3 * 2 * 5];
    float dq[1 * 3 * 2 * 4], dk[1 * 3 * 1 * 4], dv[1 * 3 * 1 * 5], lse[6];
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, 3, 2, 4), tk = attn_tensor_dense(k, ATTN_F32, 1, 3, 1, 4);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, 3, 1, 5), to = attn_tensor_dense(out, ATTN_F32, 1, 3, 2, 5);
    attn_tensor tdo = attn_tensor_dense(dout, ATTN_F32, 1, 3, 2, 5), tdq = attn_tensor_dense(dq, ATTN_F32, 1, 3, 2, 4);
    attn_tensor tdk = attn_tensor_dense(dk, ATTN_F32, 1, 3, 1, 4), tdv = attn_tensor_dense(dv, ATTN_F32, 1, 3, 1, 5);
    int i;
    memset(q, 0, sizeof q); memset(k, 0, sizeof k); memset(v, 0, sizeof v); memset(out, 0, sizeof out); memset(dout, 0, sizeof dout);
    for (i = 0; i < 14; ++i) {
        attn_desc d;
        attn_tensor a = tdo, gq = tdq, gk = tdk, gv = tdv;
        const float *lp = NULL;
        attn_status want = ATTN_OK, got;
        memset(&d, 0, sizeof d);
        d.kind = i % 3 == 0 ? ATTN_LINEAR : (i % 3 == 1 ? ATTN_COSFORMER : ATTN_PERFORMER);
        d.performer.features = 8;
        switch (i) {
        case 0: a.data = NULL; want = ATTN_ERR_BWD_NULL_DOUT; break;
        case 1: gq.data = NULL; want = ATTN_ERR_BWD_NULL_DQ; break;
        case 2: gk.data = NULL; want = ATTN_ERR_BWD_NULL_DK; break;
        case 3: gv.data = NULL; want = ATTN_ERR_BWD_NULL_DV; break;
        case 4: a.seq = 2; want = ATTN_ERR_BWD_DOUT_SHAPE; break;
        case 5: gq.dim = 3; want = ATTN_ERR_BWD_DQ_SHAPE; break;
        case 6: gk.heads = 2; want = ATTN_ERR_BWD_DK_SHAPE; break;
        case 7: gv.seq = 2; want = ATTN_ERR_BWD_DV_SHAPE; break;
        case 8: lp = lse; want = ATTN_ERR_KIND_LSE; break;
        case 9: d.linear.eps = -2.0f; want = ATTN_ERR_LINEAR_EPS; break;
        case 10: d.cosformer.eps = NAN; want = ATTN_ERR_COSFORMER_EPS; break;
        case 11: d.performer.features = -2; want = ATTN_ERR_PERFORMER_FEATURES; break;
        case 12: gq.stride_seq = 0; gq.stride_head = 4; gq.stride_batch = 0; want = ATTN_ERR_BWD_DQ_BROADCAST; break;
        case 13: d.workspace = lse; d.workspace_size = 4; want = ATTN_ERR_WORKSPACE; break;
        }
        t_sentinel(dq, sizeof dq, 31); t_sentinel(dk, sizeof dk, 32); t_sentinel(dv, sizeof dv, 33);
        got = attn_backward(&d, tq, tk, tv, to, a, lp, gq, gk, gv);
        if (T_CHECK(got == want, "linear-bwd error %d (%s): got %s, want %s", i, attn_kind_name(d.kind), attn_status_str(got),
                    attn_status_str(want)))
            t_status_provoked[want] = 1;
        T_CHECK(t_sentinel_ok(dq, sizeof dq, 31) && t_sentinel_ok(dk, sizeof dk, 32) && t_sentinel_ok(dv, sizeof dv, 33),
                "linear-bwd error %d: a gradient was written", i);
    }
}

void test_linear_bwd(void) {
    test_lbw_sweep();
    test_lbw_long();
    test_lbw_threads();
    test_lbw_errors();
    t_packed_linear();
    printf("      linear-bwd: largest passing fp32 gradient error %.3g (tolerance 2e-4)\n", g_lb_worst);
}
