/* tests/test_lsh.c - ATTN_LSH (Reformer) against Hugging Face's conventions: padding through
   seqlens_q/_k with HF's pad bucket, HF's rotation layout (rotations_layout), HF's default
   n_buckets and HF's fp32 round merge (hf_merge), each checked against an independent double reference of HF's LSHSelfAttention
   written from modeling_reformer.py, plus the fixture made by tests/fixtures/reformer_hf.py
   (HF's own outputs on a padded batch), reproduced through attn.h's documented fields only.
   (The unpadded mechanism's sweep is in test_sparse.c.) */
#include "test.h"
#include "fixture.h"

#define LT_TOL 2e-5


/* ---- the reference: HF's LSHSelfAttention in double ------------------------------------------
   _hash_vectors: bucket = argmax([x R, -x R]) on the raw shared QK (factorised: per factor f_t on
   its f_t/2 columns, combined as a_0 + f_0 a_1 + ...), padding (mask 0) in the extra bucket nb
   (the product), round offsets r (nb + 1); _stable_argsort of the flattened (round, position) axis;
   chunks of c looking at [previous chunk, own chunk], circularly; _len_and_dim_norm keys;
   _compute_attn_mask: key mask (and causal, key <= query) -> -1e9; then the self mask -> -1e5;
   rounds merged by their logsumexp: normalised exactly, or (hfm) as HF does in fp32, each
   round's logsumexp and their logsumexp L rounded to fp32, weights exp(lse_r - L). Padding query
   rows: out 0, lse -inf (attn.h's definition; HF returns whatever the round gave). R is read in
   the given layout. */
typedef struct { long long key; int pos; } lt_ent;
static int lt_cmp(const void *a, const void *b) {
    const lt_ent *x = (const lt_ent *)a, *y = (const lt_ent *)b;
    return x->key < y->key ? -1 : x->key > y->key;
}

static double lt_rot(const float *R, int hf, int nh, int D, int cols, int h, int r, int e, int j) {
    return hf ? R[(((size_t)h * D + e) * nh + r) * cols + j] : R[(((size_t)h * nh + r) * D + e) * cols + j];
}

/* The reference on dense double arrays q, k [B][n][H][D], v, out [B][n][H][Dv] (a fixed problem
   in lt_prob). out, lse [B][H][n]; with dout given (rows past a sequence's length not read),
   also the gradients dq, dk, dv of sum(dout * out) by the chain rule through HF's graph, as
   autograd takes it: the round merge (w_r = exp(lse_r - L), L = logsumexp_r lse_r: dlse_r =
   w_r (g.o_r) - w_r sum_s w_s (g.o_s), do_r = w_r g), each round's softmax (ds = p (do.v_j -
   do.o_r) + p dlse_r), the logits s = scale q.n(k) (the -1e9 / -1e5 constants take nothing)
   and the RMS norm n(k) = k r, r = (mean(k^2) + 1e-6)^-1/2 (dk = r dn - r^3 k (dn.k) / D).
   The hashing is piecewise constant: no gradient. Padding rows of dq, dk, dv are 0. Returns 0
   when a valid token's bucket argmax is a near tie. */
typedef struct {
    int B, n, H, D, Dv, c, nh, causal, hfm, hf_layout, nfac;
    int cb, ca;                                  /* chunks looked back at / ahead at (HF's 1, 0) */
    const int *fac, *lens;
    const float *R;
    double scale;
} lt_prob;

static int lt_ref_d(const lt_prob *P, const double *q, const double *k, const double *v, double *out, double *lse,
                    const double *dout, double *dq, double *dk, double *dv) {
    const int B = P->B, n = P->n, H = P->H, D = P->D, Dv = P->Dv, c = P->c, nh = P->nh, N = nh * n, nch = N / c;
    const int kw = (P->cb + 1 + P->ca) * c;   /* keys a chunk sees: chunks ch - cb .. ch + ca */
    const int *fac = P->fac, nfac = P->nfac;
    int nb = 1, cols = 0, ft;
    lt_ent *ax = (lt_ent *)t_xmalloc(sizeof(lt_ent) * (size_t)N);
    double *o = (double *)t_xmalloc(sizeof(double) * (size_t)N * Dv), *lr = (double *)t_xmalloc(sizeof(double) * (size_t)N);
    double *le = (double *)t_xmalloc(sizeof(double) * (size_t)N), *w = (double *)t_xmalloc(sizeof(double) * (size_t)N);
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)kw * N), *kn = (double *)t_xmalloc(sizeof(double) * (size_t)n * D);
    double *rr = (double *)t_xmalloc(sizeof(double) * (size_t)n), *dn = (double *)t_xmalloc(sizeof(double) * (size_t)n * D);
    double *gw = (double *)t_xmalloc(sizeof(double) * (size_t)N);
    char *cst = (char *)t_xmalloc((size_t)kw * N);
    int b, h, r, i, e, t, u, ok = 1;
#define LT_X(a, i_, h_, e_, dim) ((((size_t)b * n + (i_)) * H + (h_)) * (dim) + (e_))
    for (ft = 0; ft < nfac; ++ft) { nb *= fac[ft]; cols += fac[ft] / 2; }
    for (b = 0; b < B; ++b)
        for (h = 0; h < H; ++h) {
            const int L = P->lens ? P->lens[b] : n;
            for (i = 0; i < n; ++i) {                    /* keys: x rsqrt(mean(x^2) + 1e-6) */
                double ms = 0;
                for (e = 0; e < D; ++e) ms += k[LT_X(b, i, h, e, D)] * k[LT_X(b, i, h, e, D)];
                rr[i] = 1.0 / sqrt(ms / D + 1e-6);
                for (e = 0; e < D; ++e) kn[(size_t)i * D + e] = k[LT_X(b, i, h, e, D)] * rr[i];
            }
            for (r = 0; r < nh; ++r)
                for (i = 0; i < n; ++i) {
                    int arg = nb, cc;
                    if (i < L) {
                        int off = 0, mult = 1;
                        arg = 0;
                        for (ft = 0; ft < nfac; ++ft) {
                            const int fh = fac[ft] / 2;
                            double best = -INFINITY, second = -INFINITY;
                            int a = -1;
                            for (cc = 0; cc < fac[ft]; ++cc) {
                                double y = 0;
                                for (e = 0; e < D; ++e)
                                    y += k[LT_X(b, i, h, e, D)] * lt_rot(P->R, P->hf_layout, nh, D, cols, h, r, e, off + cc % fh);
                                if (cc >= fh) y = -y;
                                if (y > best) { second = best; best = y; a = cc; }
                                else if (y > second) second = y;
                            }
                            if (best - second < 1e-3) ok = 0;
                            arg += mult * a;
                            off += fh; mult *= fac[ft];
                        }
                    }
                    /* offset bucket * N + flattened index: HF's stable sort key */
                    ax[(size_t)r * n + i].key = ((long long)r * (nb + 1) + arg) * N + (long long)r * n + i;
                    ax[(size_t)r * n + i].pos = i;
                }
            qsort(ax, (size_t)N, sizeof(lt_ent), lt_cmp);
            for (t = 0; t < N; ++t) {                    /* every sorted entry as a query */
                const int ch = t / c, p = ax[t].pos;
                double mx = -INFINITY, l = 0, *st = s + (size_t)t * kw;
                char *ct = cst + (size_t)t * kw;
                for (u = 0; u < kw; ++u) {
                    const int jj = ax[(((ch + u / c - P->cb) % nch + nch) % nch) * c + u % c].pos;
                    double x = 0;
                    for (e = 0; e < D; ++e) x += q[LT_X(b, p, h, e, D)] * kn[(size_t)jj * D + e];
                    x *= P->scale;
                    ct[u] = 0;
                    if (jj >= L || (P->causal && jj > p)) { x = -1e9; ct[u] = 1; }
                    if (jj == p) { x = -1e5; ct[u] = 1; }
                    st[u] = x;
                    if (x > mx) mx = x;
                }
                for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] = 0;
                for (u = 0; u < kw; ++u) {
                    const int jj = ax[(((ch + u / c - P->cb) % nch + nch) % nch) * c + u % c].pos;
                    const double wu = exp(st[u] - mx);
                    l += wu;
                    if (wu > 0) for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] += wu * v[LT_X(b, jj, h, e, Dv)];
                }
                for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] /= l;
                le[t] = mx + log(l);
                lr[t] = P->hfm ? (double)(float)le[t] : le[t];
            }
            for (i = 0; i < n; ++i) {                    /* rounds merged by their logsumexp */
                double M = -INFINITY, S = 0, *orow = out + LT_X(b, i, h, 0, Dv);
                for (e = 0; e < Dv; ++e) orow[e] = 0;
                if (i >= L) { lse[((size_t)b * H + h) * n + i] = -INFINITY; continue; }
                for (t = 0; t < N; ++t) if (ax[t].pos == i && lr[t] > M) M = lr[t];
                for (t = 0; t < N; ++t) if (ax[t].pos == i) S += exp(lr[t] - M);
                S = M + log(S);
                if (P->hfm) S = (double)(float)S;
                for (t = 0; t < N; ++t)
                    if (ax[t].pos == i) {
                        w[t] = exp(lr[t] - S);
                        for (e = 0; e < Dv; ++e) orow[e] += o[(size_t)t * Dv + e] * w[t];
                    }
                lse[((size_t)b * H + h) * n + i] = S;
            }
            if (!dout) continue;
            for (i = 0; i < n; ++i) {
                for (e = 0; e < D; ++e) { dq[LT_X(b, i, h, e, D)] = 0; dn[(size_t)i * D + e] = 0; }
                for (e = 0; e < Dv; ++e) dv[LT_X(b, i, h, e, Dv)] = 0;
            }
            for (i = 0; i < L; ++i) {                    /* the merge: gw = g.o_r, then dlse_r in gw */
                const double *g = dout + LT_X(b, i, h, 0, Dv);
                double sw = 0;
                for (t = 0; t < N; ++t)
                    if (ax[t].pos == i) {
                        gw[t] = 0;
                        for (e = 0; e < Dv; ++e) gw[t] += g[e] * o[(size_t)t * Dv + e];
                        sw += w[t] * gw[t];
                    }
                for (t = 0; t < N; ++t) if (ax[t].pos == i) gw[t] = w[t] * gw[t] - w[t] * sw;
            }
            for (t = 0; t < N; ++t) {                    /* each round's softmax and logits */
                const int ch = t / c, p = ax[t].pos;
                const double *g = dout + LT_X(b, p, h, 0, Dv), *st = s + (size_t)t * kw;
                double go_o = 0;
                if (p >= L) continue;
                for (e = 0; e < Dv; ++e) go_o += w[t] * g[e] * o[(size_t)t * Dv + e];
                for (u = 0; u < kw; ++u) {
                    const int jj = ax[(((ch + u / c - P->cb) % nch + nch) % nch) * c + u % c].pos;
                    const double pu = exp(st[u] - le[t]);
                    double gp = 0, gs;
                    if (jj >= L) continue;
                    for (e = 0; e < Dv; ++e) {
                        gp += w[t] * g[e] * v[LT_X(b, jj, h, e, Dv)];
                        dv[LT_X(b, jj, h, e, Dv)] += pu * w[t] * g[e];
                    }
                    gs = pu * (gp - go_o) + pu * gw[t];
                    if (cst[(size_t)t * kw + u]) continue;
                    for (e = 0; e < D; ++e) {
                        dq[LT_X(b, p, h, e, D)] += P->scale * gs * kn[(size_t)jj * D + e];
                        dn[(size_t)jj * D + e] += P->scale * gs * q[LT_X(b, p, h, e, D)];
                    }
                }
            }
            for (i = 0; i < n; ++i) {                    /* through n(k) = k r */
                double dk_dot = 0;
                for (e = 0; e < D; ++e) dk_dot += dn[(size_t)i * D + e] * k[LT_X(b, i, h, e, D)];
                for (e = 0; e < D; ++e)
                    dk[LT_X(b, i, h, e, D)] = i >= L ? 0
                        : rr[i] * dn[(size_t)i * D + e] - rr[i] * rr[i] * rr[i] * k[LT_X(b, i, h, e, D)] * dk_dot / D;
            }
        }
#undef LT_X
    free(ax); free(o); free(lr); free(le); free(w); free(s); free(kn); free(rr); free(dn); free(gw); free(cst);
    return ok;
}

/* every element of a tensor as doubles, dense [B][S][H][dim] */
static double *lt_read(const attn_tensor *t) {
    double *x = (double *)t_xmalloc(sizeof(double) * (size_t)t->batch * t->seq * t->heads * t->dim);
    t_read(t, x);
    return x;
}

/* out [B][n][H][Dv], lse [B][H][n] of the tensors' values; returns 0 when a valid token's bucket
   argmax is a near tie. */
static int lt_ref(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const int *lens, const float *R, int hf,
                  int c, const int *fac, int nfac, int nh, int causal, int hfm, double scale, int cb, int ca, double *out,
                  double *lse) {
    lt_prob P;
    double *qd = lt_read(q), *kd = lt_read(k), *vd = lt_read(v);
    int ok;
    P.B = q->batch; P.n = q->seq; P.H = q->heads; P.D = q->dim; P.Dv = v->dim; P.c = c; P.nh = nh; P.causal = causal;
    P.hfm = hfm; P.hf_layout = hf; P.nfac = nfac; P.fac = fac; P.lens = lens; P.R = R; P.scale = scale;
    P.cb = cb; P.ca = ca;
    ok = lt_ref_d(&P, qd, kd, vd, out, lse, NULL, NULL, NULL, NULL);
    free(qd); free(kd); free(vd);
    return ok;
}

/* max |got - ref| over out (padding rows must be exactly 0) and lse; 1 when within tol */
static int lt_compare(const char *what, const attn_tensor *out, const float *lse, const double *ro, const double *rl,
                      const int *lens, double tol) {
    const int B = out->batch, n = out->seq, H = out->heads, Dv = out->dim;
    const double rel = t_dt_rel(out->dtype);
    double worst = 0;
    int b, i, h, e, ok = 1;
    for (b = 0; b < B; ++b)
        for (i = 0; i < n; ++i)
            for (h = 0; h < H; ++h) {
                const int pad = lens && i >= lens[b];
                const double *rr = ro + (((size_t)b * n + i) * H + h) * Dv, L = rl[((size_t)b * H + h) * n + i];
                const float got_l = lse[((size_t)b * H + h) * n + i];
                for (e = 0; e < Dv; ++e) {
                    const double got = t_load(out, b, i, h, e), err = fabs(got - rr[e]);
                    if (pad ? got != 0.0 : !(err <= tol * (fabs(rr[e]) > 1 ? fabs(rr[e]) : 1) + rel * fabs(rr[e]))) ok = 0;
                    if (!(err <= worst)) worst = err;
                }
                if (pad ? got_l != -INFINITY : !(fabs(got_l - L) <= tol * (fabs(L) > 1 ? fabs(L) : 1))) ok = 0;
            }
    T_CHECK(ok, "%s: out/lse differ from the reference (max |error| %.3g)", what, worst);
    return ok;
}

/* HF's default n_buckets, written from _set_num_buckets: 2 ** ((2 * (n // c)).bit_length() - 1) */
static int lt_hf_buckets(int n, int c) {
    int x = 2 * (n / c), bits = 0;
    while (x) { ++bits; x >>= 1; }
    return 1 << (bits - 1);
}

/* Chunks looked back / ahead at (lsh.chunks_before / _after): HF's default 1, 0 (fields 0) most
   of the time, else 0..3 before and 0..2 after (at most the nch chunks), an exact 0 asked for
   by ATTN_LSH_CHUNKS_ZERO (after: 0 or that, both meaning 0). */
static void lt_draw_chunks(t_rng *r, attn_lsh_params *p, int nch, int *cb, int *ca) {
    *cb = 1; *ca = 0;
    if (!t_chance(r, 0.4)) return;
    *cb = t_irange(r, 0, nch < 3 ? nch : 3); *ca = t_irange(r, 0, nch < 2 ? nch : 2);
    p->chunks_before = *cb ? *cb : ATTN_LSH_CHUNKS_ZERO;
    p->chunks_after = *ca ? *ca : t_chance(r, 0.5) ? ATTN_LSH_CHUNKS_ZERO : 0;
}

/* ---- a padded batch against the reference, and the independence properties --------------- */
static void lt_case(t_rng *r, int B, int n, int H, int D, int Dv, attn_dtype qt, attn_dtype kvt, int c, int nb, int nh,
                    int causal, int hf_layout, int hf_merge, int shared, const int *fac, int nfac) {
    const int cc = c ? c : 64;   /* bucket_size 0: 64 */
    const int nbd = nb ? nb : lt_hf_buckets(n, cc);
    const int one[1] = { nbd }, *fs = nfac ? fac : one, nfs = nfac ? nfac : 1;
    int cols = 0, ft;
    size_t nrot, nl = (size_t)B * H * n;
    t_owned q = t_owned_dense(qt, B, n, H, D), k = t_owned_dense(kvt, B, n, H, D), v = t_owned_dense(kvt, B, n, H, Dv);
    t_owned o = t_owned_dense(qt, B, n, H, Dv), o2 = t_owned_dense(qt, B, n, H, Dv);
    float *R, *lse = (float *)t_xmalloc(sizeof(float) * nl);
    float *lse2 = (float *)t_xmalloc(sizeof(float) * nl);
    double *ro = (double *)t_xmalloc(sizeof(double) * o.n), *rl = (double *)t_xmalloc(sizeof(double) * nl);
    int *lens = (int *)t_xmalloc(sizeof(int) * (size_t)B);
    attn_desc d;
    attn_status s;
    char what[200];
    size_t i;
    int b, tries = 0, cb, ca;
    for (ft = 0; ft < nfs; ++ft) cols += fs[ft] / 2;
    nrot = (size_t)H * nh * D * cols;
    R = (float *)t_xmalloc(sizeof(float) * nrot);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.causal = causal; d.n_threads = 1 + (int)(t_next(r) % 3);
    lt_draw_chunks(r, &d.lsh, nh * n / cc, &cb, &ca);
    for (ft = 0; ft < nfac; ++ft) d.lsh.bucket_factors[ft] = fac[ft];
    d.lsh.bucket_size = c; d.lsh.n_buckets = nb; d.lsh.n_hashes = nh; d.lsh.hf_merge = hf_merge;
    d.lsh.rotations = R; d.lsh.rotations_layout = hf_layout ? ATTN_LSH_ROT_HF : ATTN_LSH_ROT_ATTN;
    for (i = 0; i < nrot; ++i) R[i] = (float)t_normal(r);
    for (b = 0; b < B; ++b) lens[b] = b == 0 ? n : t_irange(r, 0, n);   /* one full, the rest padded (0 too) */
    d.seqlens_k = lens;
    sprintf(what, "lsh padded B%d n%d H%d D%d/%d %s/%s c%d nb%d%s nh%d causal%d hf_layout%d hf_merge%d factors%d(%d,%d) chunks%d/%d",
            B, n, H, D, Dv, t_dt_name(qt), t_dt_name(kvt), cc, nbd, nb ? "" : " (default)", nh, causal, hf_layout, hf_merge, nfac,
            fs[0], nfs > 1 ? fs[1] : 0, cb, ca);
    do {   /* padding rows hold large garbage; no near ties among valid tokens */
        t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
        if (shared && qt == kvt) memcpy(q.buf, k.buf, q.n * t_dt_size(qt));
        else t_fill_normal(&q.t, r, 1.0);
        for (b = 0; b < B; ++b) {
            int j, h, e;
            for (j = lens[b]; j < n; ++j)
                for (h = 0; h < H; ++h) {
                    for (e = 0; e < D; ++e) { t_store(&q.t, b, j, h, e, 50 * t_normal(r)); t_store(&k.t, b, j, h, e, 50 * t_normal(r)); }
                    for (e = 0; e < Dv; ++e) t_store(&v.t, b, j, h, e, 50 * t_normal(r));
                }
        }
    } while (!lt_ref(&q.t, &k.t, &v.t, lens, R, hf_layout, cc, fs, nfs, nh, causal, hf_merge, 1.0 / sqrt((double)D), cb, ca, ro, rl) &&
             ++tries < 20);
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    s = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    if (!T_CHECK(s == ATTN_OK, "%s: status %s", what, attn_status_str(s))) goto done;
    lt_compare(what, &o.t, lse, ro, rl, lens, LT_TOL);
    {   /* seqlens_q alone, and both (equal): the same mask, bitwise */
        attn_desc e = d;
        e.seqlens_k = NULL; e.seqlens_q = lens;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && !memcmp(o.buf, o2.buf, o.n * t_dt_size(qt)) && !memcmp(lse, lse2, sizeof(float) * nl),
                "%s: seqlens_q alone differs from seqlens_k", what);
        e.seqlens_k = lens;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && !memcmp(o.buf, o2.buf, o.n * t_dt_size(qt)) && !memcmp(lse, lse2, sizeof(float) * nl),
                "%s: seqlens_q and seqlens_k together differ from seqlens_k", what);
    }
    /* each sequence alone, padded to n with NaN: its rows bitwise equal to the batch's, padding
       rows 0 and -inf (valid rows independent of the rest of the batch and the padding) */
    for (b = 0; b < B; ++b) {
        t_owned q1 = t_owned_dense(qt, 1, n, H, D), k1 = t_owned_dense(kvt, 1, n, H, D), v1 = t_owned_dense(kvt, 1, n, H, Dv);
        t_owned o1 = t_owned_dense(qt, 1, n, H, Dv);
        float *l1 = (float *)t_xmalloc(sizeof(float) * (size_t)H * n);
        attn_desc e = d;
        int j, h, x, same = 1;
        t_fill_nan(q1.buf, qt, q1.n); t_fill_nan(k1.buf, kvt, k1.n); t_fill_nan(v1.buf, kvt, v1.n);
        for (j = 0; j < lens[b]; ++j)
            for (h = 0; h < H; ++h) {
                for (x = 0; x < D; ++x) {
                    t_store(&q1.t, 0, j, h, x, t_load(&q.t, b, j, h, x));
                    t_store(&k1.t, 0, j, h, x, t_load(&k.t, b, j, h, x));
                }
                for (x = 0; x < Dv; ++x) t_store(&v1.t, 0, j, h, x, t_load(&v.t, b, j, h, x));
            }
        e.seqlens_k = lens + b;
        s = attn_forward(&e, q1.t, k1.t, v1.t, o1.t, l1);
        for (j = 0; j < n; ++j)
            for (h = 0; h < H; ++h) {
                for (x = 0; x < Dv; ++x) if (t_load(&o1.t, 0, j, h, x) != t_load(&o.t, b, j, h, x)) same = 0;
                if (memcmp(&l1[(size_t)h * n + j], &lse[((size_t)b * H + h) * n + j], sizeof(float))) same = 0;
            }
        T_CHECK(s == ATTN_OK && same, "%s: sequence %d (length %d) alone with NaN padding differs from its batch rows", what, b,
                lens[b]);
        t_owned_free(&q1); t_owned_free(&k1); t_owned_free(&v1); t_owned_free(&o1); free(l1);
    }
    if (hf_layout) {   /* the same rotations in attn.h's own order: bitwise the same result */
        float *R0 = (float *)t_xmalloc(sizeof(float) * nrot);
        attn_desc e = d;
        int h, rr, x, j;
        for (h = 0; h < H; ++h)
            for (rr = 0; rr < nh; ++rr)
                for (x = 0; x < D; ++x)
                    for (j = 0; j < cols; ++j)
                        R0[(((size_t)h * nh + rr) * D + x) * cols + j] = R[(((size_t)h * D + x) * nh + rr) * cols + j];
        e.lsh.rotations = R0; e.lsh.rotations_layout = ATTN_LSH_ROT_ATTN;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && !memcmp(o.buf, o2.buf, o.n * t_dt_size(qt)) && !memcmp(lse, lse2, sizeof(float) * nl),
                "%s: HF-layout rotations differ from the same rotations transposed", what);
        free(R0);
    }
    if (!nb && !nfac) {   /* the default == the explicit count from HF's formula, bitwise */
        attn_desc e = d;
        e.lsh.n_buckets = lt_hf_buckets(n, cc);
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && !memcmp(o.buf, o2.buf, o.n * t_dt_size(qt)) && !memcmp(lse, lse2, sizeof(float) * nl),
                "%s: the default n_buckets differs from n_buckets = %d", what, lt_hf_buckets(n, cc));
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(R); free(lse); free(lse2); free(ro); free(rl); free(lens);
}

/* ---- attn_lsh_rotations in both layouts, with the default n_buckets ------------------------ */
static void lt_rotations(void) {
    static const int ns[4] = { 8, 64, 96, 256 }, cs[4] = { 4, 8, 16, 4 };
    int t;
    for (t = 0; t < 4; ++t) {
        const int H = 2, D = 5, nh = 3, n = ns[t], c = cs[t], nb = lt_hf_buckets(n, c), half = nb / 2;
        const size_t cnt = (size_t)H * nh * D * half;
        float *A = (float *)t_xmalloc(sizeof(float) * (cnt + 4)), *F = (float *)t_xmalloc(sizeof(float) * (cnt + 4));
        attn_desc d;
        int h, r, e, j, ok = 1;
        memset(&d, 0, sizeof d);
        d.lsh.bucket_size = c; d.lsh.n_hashes = nh; d.lsh.seed = 77 + (unsigned)t;
        t_sentinel(A, sizeof(float) * (cnt + 4), 3); t_sentinel(F, sizeof(float) * (cnt + 4), 3);
        ok &= attn_lsh_rotations(&d, H, n, D, A) == ATTN_OK;
        d.lsh.rotations_layout = ATTN_LSH_ROT_HF;
        ok &= attn_lsh_rotations(&d, H, n, D, F) == ATTN_OK;
        for (h = 0; h < H; ++h)
            for (r = 0; r < nh; ++r)
                for (e = 0; e < D; ++e)
                    for (j = 0; j < half; ++j)
                        if (A[(((size_t)h * nh + r) * D + e) * half + j] != F[(((size_t)h * D + e) * nh + r) * half + j]) ok = 0;
        {   /* exactly H * n_hashes * D * nb/2 written (HF's count): the tail keeps its bytes */
            const unsigned char *pa = (const unsigned char *)(A + cnt), *pf = (const unsigned char *)(F + cnt);
            size_t x;
            for (x = 0; x < 4 * sizeof(float); ++x) {
                const unsigned char want = (unsigned char)(3 + (cnt * sizeof(float) + x) * 37u);
                if (pa[x] != want || pf[x] != want) ok = 0;
            }
        }
        T_CHECK(ok, "lsh rotations n %d c %d: the HF layout must be the transposition [H][D][n_hashes][nb/2] of the "
                "default one, with nb = %d", n, c, nb);
        free(A); free(F);
    }
}

/* ---- HF's own outputs (tests/fixtures/reformer_hf.txt) ------------------------------------ */
/* array `name` of case cs (its cs-th occurrence) of fixture `file` into floats (n values) */
static int lt_read_floats(const char *file, const char *name, int cs, float *x, size_t n) {
    double *d = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    size_t i;
    const int ok = T_FIXTURE_NTH(file, name, cs, d, n);
    for (i = 0; ok && i < n; ++i) x[i] = (float)d[i];
    free(d);
    return ok;
}

/* The shape of fixture case cs: its "case" array (B n H D chunk n_hashes n_buckets causal
   n_factors factors[4] chunks_before chunks_after, HF's lsh_num_chunks_*), each value in range
   (0 otherwise); and the rotation columns it implies (HF: nb/2, or the sum of the factors' halves). */
static int lt_read_case(const char *file, int cs, int *B, int *n, int *H, int *D, int *c, int *nh, int *nb, int *causal,
                        int *nfac, int fac[4], int *cb, int *ca) {
    double v[15];
    int i, ok = T_FIXTURE_NTH(file, "case", cs, v, 15);
    for (i = 0; i < 15 && ok; ++i) ok = fabs(v[i]) <= 1e6 && v[i] == floor(v[i]);   /* integers */
    if (!ok) return 0;
    *B = (int)v[0]; *n = (int)v[1]; *H = (int)v[2]; *D = (int)v[3]; *c = (int)v[4]; *nh = (int)v[5]; *nb = (int)v[6];
    *causal = (int)v[7]; *nfac = (int)v[8]; *cb = (int)v[13]; *ca = (int)v[14];
    ok = *B > 0 && *B <= 64 && *n > 0 && *n <= 4096 && *H > 0 && *H <= 64 && *D > 0 && *D <= 256 && *c > 0 && *nh > 0 &&
         *nh <= 16 && *nb >= 2 && *nb <= 4096 && *nfac >= 0 && *nfac <= 4;
    for (i = 0; i < *nfac && ok; ++i) ok = (fac[i] = (int)v[9 + i]) >= 2 && fac[i] <= 4096;
    return ok && *cb >= 0 && *cb <= 64 && *ca >= 0 && *ca <= 64;
}
/* case cs's "lens" (B values, each in [0, n]) */
static int lt_read_lens(const char *file, int cs, int B, int n, int *lens) {
    double v[64];
    int b, ok = B <= 64 && T_FIXTURE_NTH(file, "lens", cs, v, (size_t)B);
    for (b = 0; b < B && ok; ++b) {
        ok = v[b] >= 0 && v[b] <= n && v[b] == floor(v[b]);
        if (ok) lens[b] = (int)v[b];
    }
    return ok;
}
static int lt_rotation_cols(int nb, int nfac, const int fac[4]) {
    int i, cols = 0;
    if (!nfac) return nb / 2;
    for (i = 0; i < nfac; ++i) cols += fac[i] / 2;
    return cols;
}

static void lt_fixture(void) {
    const char *path = "reformer_hf.txt";
    double cases = 0.0;
    int ncases, cs;
    if (!T_CHECK(T_FIXTURE(path, "cases", &cases, 1), "lsh fixture: cannot read tests/fixtures/%s (run the tests from the "
                 "repository root or set ATTN_FIXTURES)", path)) return;
    ncases = cases >= 1 && cases <= 64 && cases == floor(cases) ? (int)cases : 0;
    if (!T_CHECK(ncases > 0, "lsh fixture: bad header")) return;
    for (cs = 0; cs < ncases; ++cs) {
        char name[32];
        int B, n, H, D, c, nh, nb, causal, b, i, h, e, ok, nfac = 0, fac[4] = { 0, 0, 0, 0 }, cols = 0, cb, ca;
        size_t cnt, nrot;
        t_owned qk, v, o;
        float *rot, *hf, *lse;
        double *ro, *rl, err = 0, err_ref = 0, ref_hf = 0, hf_pad = 0;
        int *lens;
        attn_desc d;
        attn_status s;
        snprintf(name, sizeof name, "case %d", cs);
        ok = lt_read_case(path, cs, &B, &n, &H, &D, &c, &nh, &nb, &causal, &nfac, fac, &cb, &ca);
        if (!T_CHECK(ok, "lsh fixture: bad case line")) break;
        cols = lt_rotation_cols(nb, nfac, fac);
        cnt = (size_t)B * n * H * D; nrot = (size_t)H * D * nh * cols;
        qk = t_owned_dense(ATTN_F32, B, n, H, D); v = t_owned_dense(ATTN_F32, B, n, H, D); o = t_owned_dense(ATTN_F32, B, n, H, D);
        rot = (float *)t_xmalloc(sizeof(float) * nrot); hf = (float *)t_xmalloc(sizeof(float) * cnt);
        lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * n);
        ro = (double *)t_xmalloc(sizeof(double) * cnt); rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * H * n);
        lens = (int *)t_xmalloc(sizeof(int) * (size_t)B);
        ok = lt_read_lens(path, cs, B, n, lens) && lt_read_floats(path, "qk", cs, (float *)qk.buf, cnt) &&
             lt_read_floats(path, "v", cs, (float *)v.buf, cnt) && lt_read_floats(path, "rot", cs, rot, nrot) &&
             lt_read_floats(path, "out", cs, hf, cnt);
        if (T_CHECK(ok, "lsh fixture %s: truncated", name)) {
            /* the porting recipe (docs/porting.md): HF's tensors as they are, documented fields only */
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LSH;
            d.causal = causal;                         /* config.is_decoder */
            d.lsh.bucket_size = c;                     /* config.lsh_attn_chunk_length */
            d.lsh.n_hashes = nh;                       /* config.num_hashes */
            /* n_buckets 0: config.num_buckets = None (HF's rule; else config.num_buckets) */
            for (i = 0; i < nfac; ++i) d.lsh.bucket_factors[i] = fac[i];   /* config.num_buckets as a list */
            d.lsh.rotations = rot;                     /* torch.manual_seed(hash_seed); torch.randn(H, D, nh, nb/2) */
            d.lsh.rotations_layout = ATTN_LSH_ROT_HF;
            d.lsh.hf_merge = 1;                        /* HF's fp32 round weights */
            d.lsh.chunks_before = cb ? cb : ATTN_LSH_CHUNKS_ZERO;   /* lsh_num_chunks_before (0: the constant) */
            d.lsh.chunks_after = ca;                   /* lsh_num_chunks_after */
            d.seqlens_k = lens;                        /* attention_mask.sum(-1), right padding */
            s = attn_forward(&d, qk.t, qk.t, v.t, o.t, lse);
            if (!nfac) { fac[0] = nb; nfac = 1; }   /* the reference's one factor */
            (void)lt_ref(&qk.t, &qk.t, &v.t, lens, rot, 1, c, fac, nfac, nh, causal, 1, 1.0 / sqrt((double)D), cb, ca, ro, rl);   /* ties: HF decided */
            for (b = 0; b < B; ++b)
                for (i = 0; i < n; ++i)
                    for (h = 0; h < H; ++h)
                        for (e = 0; e < D; ++e) {
                            const size_t x = (((size_t)b * n + i) * H + h) * D + e;
                            const double a = ((const float *)o.buf)[x];
                            if (i >= lens[b]) { if (fabs(hf[x]) > hf_pad) hf_pad = fabs(hf[x]); continue; }
                            if (!(fabs(a - hf[x]) <= err)) err = fabs(a - hf[x]);
                            if (!(fabs(a - ro[x]) <= err_ref)) err_ref = fabs(a - ro[x]);
                            if (!(fabs(ro[x] - hf[x]) <= ref_hf)) ref_hf = fabs(ro[x] - hf[x]);
                        }
            T_CHECK(s == ATTN_OK && err <= 2e-5, "lsh fixture %s: attn.h vs HF's LSHSelfAttention: max |error| %.3g (status %s)",
                    name, err, attn_status_str(s));
            T_CHECK(ref_hf <= 2e-5 && err_ref <= 2e-5, "lsh fixture %s: reference vs HF %.3g, attn.h vs reference %.3g", name,
                    ref_hf, err_ref);
            lt_compare("lsh fixture (padding rows 0)", &o.t, lse, ro, rl, lens, LT_TOL);
            {   /* without hf_merge: the exact merge, against the reference's; its distance to HF */
                double exact_hf = 0;
                d.lsh.hf_merge = 0;
                s = attn_forward(&d, qk.t, qk.t, v.t, o.t, lse);
                (void)lt_ref(&qk.t, &qk.t, &v.t, lens, rot, 1, c, fac, nfac, nh, causal, 0, 1.0 / sqrt((double)D), cb, ca, ro, rl);
                T_CHECK(s == ATTN_OK, "lsh fixture %s: exact merge status %s", name, attn_status_str(s));
                lt_compare("lsh fixture (exact merge)", &o.t, lse, ro, rl, lens, LT_TOL);
                for (b = 0; b < B; ++b)
                    for (i = 0; i < lens[b] * H * D; ++i) {
                        const size_t x = (size_t)b * n * H * D + (size_t)i;
                        if (fabs(((const float *)o.buf)[x] - hf[x]) > exact_hf) exact_hf = fabs(((const float *)o.buf)[x] - hf[x]);
                    }
                if (getenv("ATTN_TEST_VERBOSE")) printf("lsh fixture %s: without hf_merge, max |attn.h - HF| %.3g\n", name, exact_hf);
            }
            if (getenv("ATTN_TEST_VERBOSE"))
                printf("lsh fixture %s: valid rows: max |attn.h - HF| %.3g, |reference - HF| %.3g; padding rows: HF's max |out| "
                       "%.3g, attn.h 0\n", name, err, ref_hf, hf_pad);
        }
        t_owned_free(&qk); t_owned_free(&v); t_owned_free(&o);
        free(rot); free(hf); free(lse); free(ro); free(rl); free(lens);
        if (!ok) break;
    }
}

/* ---- bad input: a specific status, nothing written ---------------------------------------- */
static void lt_statuses(void) {
    const int B = 2, n = 16, H = 1, D = 4;
    t_owned q = t_owned_dense(ATTN_F32, B, n, H, D), o = t_owned_dense(ATTN_F32, B, n, H, D);
    int lens[2] = { 16, 9 }, lens2[2] = { 16, 10 }, bad_hi[2] = { 17, 3 }, bad_lo[2] = { 3, -1 };
    float rot[64];
    attn_desc d, e;
    t_rng r = t_rng_seed(41);
    t_fill_normal(&q.t, &r, 1.0);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 4; d.seqlens_k = lens;
#define LT_EXPECT(desc, want, what)                                                                                  \
    do {                                                                                                           \
        t_sentinel(o.buf, o.n * 4, 9);                                                                             \
        if (t_expect_status(attn_forward(&(desc), q.t, q.t, q.t, o.t, NULL), want, "lsh", what))                   \
            T_CHECK(t_sentinel_ok(o.buf, o.n * 4, 9), "lsh %s: out was written", what);                           \
    } while (0)
    e = d; e.lsh.rotations_layout = (attn_lsh_layout)2;
    LT_EXPECT(e, ATTN_ERR_LSH_LAYOUT, "rotations_layout 2");
    e = d; e.lsh.rotations_layout = (attn_lsh_layout)-1;
    LT_EXPECT(e, ATTN_ERR_LSH_LAYOUT, "rotations_layout -1");
    e = d; e.lsh.hf_merge = 2;
    LT_EXPECT(e, ATTN_ERR_LSH_HF_MERGE, "hf_merge 2");
    e = d; e.lsh.hf_merge = -1;
    LT_EXPECT(e, ATTN_ERR_LSH_HF_MERGE, "hf_merge -1");
    e = d; e.lsh.bucket_factors[0] = 4; e.lsh.bucket_factors[1] = 3;
    LT_EXPECT(e, ATTN_ERR_LSH_FACTORS, "odd bucket factor");
    e = d; e.lsh.bucket_factors[0] = 4; e.lsh.bucket_factors[2] = 4;
    LT_EXPECT(e, ATTN_ERR_LSH_FACTORS, "bucket factor after a zero");
    e = d; e.lsh.bucket_factors[0] = 4; e.lsh.n_buckets = 4;
    LT_EXPECT(e, ATTN_ERR_LSH_FACTORS, "bucket factors with n_buckets");
    e = d; e.lsh.bucket_factors[0] = 1 << 13; e.lsh.bucket_factors[1] = 1 << 12;
    LT_EXPECT(e, ATTN_ERR_LSH_FACTORS, "bucket factors past 2^24");
    e = d; e.lsh.chunks_before = -2;
    LT_EXPECT(e, ATTN_ERR_LSH_CHUNKS, "chunks_before -2");
    e = d; e.lsh.chunks_after = 5;                 /* n 16, bucket_size 4, one round: 4 chunks */
    LT_EXPECT(e, ATTN_ERR_LSH_CHUNKS, "chunks_after past the chunk count");
    e = d; e.lsh.chunks_before = 5;
    LT_EXPECT(e, ATTN_ERR_LSH_CHUNKS, "chunks_before past the chunk count");
    e = d; e.seqlens_q = lens2;
    LT_EXPECT(e, ATTN_ERR_LSH_SEQLENS, "seqlens_q != seqlens_k");
    e = d; e.seqlens_k = bad_hi;
    LT_EXPECT(e, ATTN_ERR_SEQLENS_K, "seqlens_k > seq");
    e = d; e.seqlens_k = NULL; e.seqlens_q = bad_lo;
    LT_EXPECT(e, ATTN_ERR_SEQLENS_Q, "seqlens_q < 0");
    e = d; e.seqlens_k = NULL; e.varlen_batch = 2;
    LT_EXPECT(e, ATTN_ERR_SPARSE_MASKS, "varlen_batch without cu_seqlens");   /* packing: test_packed.c */
#undef LT_EXPECT
    rot[0] = 1.0f;
    e = d; e.lsh.rotations_layout = (attn_lsh_layout)5;
    t_expect_status(attn_lsh_rotations(&e, 1, n, D, rot), ATTN_ERR_LSH_LAYOUT, "lsh", "attn_lsh_rotations layout 5");
    e = d; e.lsh.hf_merge = 3;
    t_expect_status(attn_lsh_rotations(&e, 1, n, D, rot), ATTN_ERR_LSH_HF_MERGE, "lsh", "attn_lsh_rotations hf_merge 3");
    T_CHECK(rot[0] == 1.0f, "lsh: attn_lsh_rotations wrote on error");
    {   /* the workspace query accepts padding too */
        size_t bytes = 0;
        T_CHECK(attn_workspace_size(&d, q.t, q.t, q.t, &bytes) == ATTN_OK && bytes > 0, "lsh: workspace size with seqlens_k");
    }
    t_owned_free(&q); t_owned_free(&o);
}

/* ---- attn_backward: gradients against the reference, finite differences, threads ---------- */

/* sum over valid rows of dout * out, out from the reference (the finite differences' loss) */
static double lt_loss(const lt_prob *P, const double *q, const double *k, const double *v, const double *dout, double *out,
                      double *lse) {
    double s = 0;
    int b, i, x;
    (void)lt_ref_d(P, q, k, v, out, lse, NULL, NULL, NULL, NULL);
    for (b = 0; b < P->B; ++b)
        for (i = 0; i < (P->lens ? P->lens[b] : P->n); ++i)
            for (x = 0; x < P->H * P->Dv; ++x) {
                const size_t at = ((size_t)b * P->n + i) * P->H * P->Dv + (size_t)x;
                s += dout[at] * out[at];
            }
    return s;
}

/* One padded batch: attn_backward against the chain-rule reference on every coordinate (padding
   rows exactly 0), against central differences of the reference's loss (exact merge: fd_all
   every coordinate, else 24 per gradient), the same gradients bitwise for n_threads 1, 2, 3 and
   with a caller workspace (no allocation), and (shared QK) each sequence alone, padded with
   NaN, bitwise its rows of the batch. */
static void lt_bwd_case(t_rng *r, int B, int n, int H, int D, int Dv, attn_dtype tin, attn_dtype tgrad, int c, int nb, int nh,
                        int causal, int hf_layout, int hf_merge, int shared, const int *fac, int nfac, int fd_all) {
    const int cc = c ? c : 64, nbd = nb ? nb : lt_hf_buckets(n, cc);
    const int one[1] = { nbd }, *fs = nfac ? fac : one, nfs = nfac ? nfac : 1;
    const double tol = tgrad == ATTN_F32 ? 2e-4 : 1.5 * t_dt_rel(tgrad) + 2e-4;
    int cols = 0, ft, b, tries = 0, which, th;
    size_t nrot, nl = (size_t)B * H * n, i;
    t_owned q = t_owned_dense(tin, B, n, H, D), k = t_owned_dense(tin, B, n, H, D), v = t_owned_dense(tin, B, n, H, Dv);
    t_owned o = t_owned_dense(ATTN_F32, B, n, H, Dv), dO = t_owned_dense(tin, B, n, H, Dv), g[3], first[3];
    float *R, *lse = (float *)t_xmalloc(sizeof(float) * nl);
    double *ro = (double *)t_xmalloc(sizeof(double) * o.n), *rl = (double *)t_xmalloc(sizeof(double) * nl);
    double *qd, *kd, *vd, *od, *ref[3], *got[3], *base[3];
    int *lens = (int *)t_xmalloc(sizeof(int) * (size_t)B);
    lt_prob P;
    attn_desc d;
    attn_status s;
    char what[220];
    memset(&P, 0, sizeof P);
    for (ft = 0; ft < nfs; ++ft) cols += fs[ft] / 2;
    nrot = (size_t)H * nh * D * cols;
    R = (float *)t_xmalloc(sizeof(float) * nrot);
    for (b = 0; b < B; ++b) lens[b] = b == 0 ? n : t_irange(r, 0, n);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.causal = causal; d.n_threads = 1;
    lt_draw_chunks(r, &d.lsh, (nh ? nh : 1) * n / cc, &P.cb, &P.ca);
    for (ft = 0; ft < nfac; ++ft) d.lsh.bucket_factors[ft] = fac[ft];
    d.lsh.bucket_size = c; d.lsh.n_buckets = nb; d.lsh.n_hashes = nh; d.lsh.hf_merge = hf_merge;
    d.lsh.rotations = R; d.lsh.rotations_layout = hf_layout ? ATTN_LSH_ROT_HF : ATTN_LSH_ROT_ATTN;
    d.seqlens_k = lens;
    if (t_chance(r, 0.3)) {   /* drawn rotations (rotations NULL): the reference gets attn_lsh_rotations' */
        d.lsh.seed = t_next(r);
        T_CHECK(attn_lsh_rotations(&d, H, n, D, R) == ATTN_OK, "lsh backward: attn_lsh_rotations");
        d.lsh.rotations = NULL;
    } else
        for (i = 0; i < nrot; ++i) R[i] = (float)t_normal(r);
    P.B = B; P.n = n; P.H = H; P.D = D; P.Dv = Dv; P.c = cc; P.nh = nh ? nh : 1; P.causal = causal; P.hfm = hf_merge;
    P.hf_layout = hf_layout; P.nfac = nfs; P.fac = fs; P.lens = lens; P.R = R; P.scale = 1.0 / sqrt((double)D);
    sprintf(what, "lsh backward B%d n%d H%d D%d/%d %s->%s c%d nb%d nh%d causal%d hf_layout%d hf_merge%d shared%d factors%d%s chunks%d/%d",
            B, n, H, D, Dv, t_dt_name(tin), t_dt_name(tgrad), cc, nbd, nh, causal, hf_layout, hf_merge, shared, nfac,
            d.lsh.rotations ? "" : " seeded", P.cb, P.ca);
    do {   /* padding rows hold large garbage; no near ties among valid tokens */
        int j, h, e;
        t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0); t_fill_normal(&dO.t, r, 1.0);
        if (shared) memcpy(q.buf, k.buf, q.n * t_dt_size(tin));
        else t_fill_normal(&q.t, r, 1.0);
        for (b = 0; b < B; ++b)
            for (j = lens[b]; j < n; ++j)
                for (h = 0; h < H; ++h) {
                    for (e = 0; e < D; ++e) { t_store(&q.t, b, j, h, e, 50 * t_normal(r)); t_store(&k.t, b, j, h, e, 50 * t_normal(r)); }
                    for (e = 0; e < Dv; ++e) { t_store(&v.t, b, j, h, e, 50 * t_normal(r)); t_store(&dO.t, b, j, h, e, NAN); }
                }
        if (shared) memcpy(q.buf, k.buf, q.n * t_dt_size(tin));
    } while (!lt_ref(&q.t, &k.t, &v.t, lens, R, hf_layout, cc, fs, nfs, P.nh, causal, hf_merge, P.scale, P.cb, P.ca, ro, rl) &&
             ++tries < 20);
    g[0] = t_owned_dense(tgrad, B, n, H, D); g[1] = t_owned_dense(tgrad, B, n, H, D); g[2] = t_owned_dense(tgrad, B, n, H, Dv);
    for (which = 0; which < 3; ++which) {
        first[which] = t_owned_dense(tgrad, B, n, H, which == 2 ? Dv : D);
        ref[which] = (double *)t_xmalloc(sizeof(double) * g[which].n);
        got[which] = (double *)t_xmalloc(sizeof(double) * g[which].n);
    }
    qd = lt_read(&q.t); kd = lt_read(&k.t); vd = lt_read(&v.t); od = lt_read(&dO.t);
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    s = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    if (!T_CHECK(s == ATTN_OK, "%s: forward status %s", what, attn_status_str(s))) goto done;
    for (which = 0; which < 3; ++which) t_sentinel(g[which].buf, g[which].n * t_dt_size(tgrad), (unsigned char)(5 + which));
    s = attn_backward(&d, q.t, k.t, v.t, o.t, dO.t, lse, g[0].t, g[1].t, g[2].t);
    if (!T_CHECK(s == ATTN_OK, "%s: status %s", what, attn_status_str(s))) goto done;
    (void)lt_ref_d(&P, qd, kd, vd, ro, rl, od, ref[0], ref[1], ref[2]);
    for (which = 0; which < 3; ++which) {
        const int dim = which == 2 ? Dv : D;
        int j, h, e, pad0 = 1;
        double err;
        t_read(&g[which].t, got[which]);
        for (b = 0; b < B; ++b)
            for (j = lens[b]; j < n; ++j)
                for (h = 0; h < H; ++h)
                    for (e = 0; e < dim; ++e) if (got[which][(((size_t)b * n + j) * H + h) * dim + e] != 0.0) pad0 = 0;
        err = t_max_norm_err(ref[which], got[which], g[which].n);
        T_CHECK(pad0, "%s: padding rows of d%s not 0", what, which == 0 ? "q" : which == 1 ? "k" : "v");
        T_CHECK(err <= tol, "%s: d%s differs from the reference: %.3g", what, which == 0 ? "q" : which == 1 ? "k" : "v", err);
    }
    if (!hf_merge) {   /* central differences of the reference's loss (smooth: the exact merge) */
        double *tmp_o = (double *)t_xmalloc(sizeof(double) * o.n), *tmp_l = (double *)t_xmalloc(sizeof(double) * nl);
        double fd_ref = 0, fd_got = 0, gmax = 1;
        base[0] = qd; base[1] = kd; base[2] = vd;
        for (which = 0; which < 3; ++which)
            for (i = 0; i < g[which].n; ++i) gmax = fmax(gmax, fabs(ref[which][i]));
        for (which = 0; which < 3; ++which) {
            const size_t cnt = fd_all ? g[which].n : 24;
            size_t p;
            for (p = 0; p < cnt; ++p) {
                const size_t at = fd_all ? p : (size_t)t_irange(r, 0, (int)g[which].n - 1);
                const double x0 = base[which][at], step = 1e-5;
                double lp, lm, fd;
                base[which][at] = x0 + step; lp = lt_loss(&P, qd, kd, vd, od, tmp_o, tmp_l);
                base[which][at] = x0 - step; lm = lt_loss(&P, qd, kd, vd, od, tmp_o, tmp_l);
                base[which][at] = x0;
                fd = (lp - lm) / (2 * step);
                fd_ref = fmax(fd_ref, fabs(fd - ref[which][at]));
                fd_got = fmax(fd_got, fabs(fd - got[which][at]));
            }
        }
        T_CHECK(fd_ref / gmax <= 1e-6, "%s: the reference's gradient vs finite differences: %.3g", what, fd_ref / gmax);
        T_CHECK(fd_got / gmax <= tol, "%s: attn_backward vs finite differences: %.3g", what, fd_got / gmax);
        free(tmp_o); free(tmp_l);
    }
    for (th = 1; th <= 4; ++th) {   /* bitwise the same for every thread count and a caller workspace */
        attn_desc e = d;
        size_t bytes = 0, m0;
        void *ws = NULL;
        int same = 1;
        e.n_threads = th == 4 ? 2 : th;
        if (th == 4) {
            T_CHECK(attn_backward_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace size", what);
            ws = t_xmalloc(bytes);
            e.workspace = ws; e.workspace_size = bytes;
        }
        m0 = t_attn_mallocs;
        s = attn_backward(&e, q.t, k.t, v.t, o.t, dO.t, lse, first[0].t, first[1].t, first[2].t);
        if (th == 4) T_CHECK(t_attn_mallocs == m0, "%s: allocated with a caller workspace", what);
        for (which = 0; which < 3; ++which) same &= !memcmp(first[which].buf, g[which].buf, g[which].n * t_dt_size(tgrad));
        T_CHECK(s == ATTN_OK && same, "%s: n_threads %d%s: gradients differ bitwise", what, e.n_threads,
                th == 4 ? " (caller workspace)" : "");
        free(ws);
    }
    if (shared)   /* each sequence alone, padded with NaN: bitwise its rows of the batch */
        for (b = 0; b < B; ++b) {
            t_owned q1 = t_owned_dense(tin, 1, n, H, D), v1 = t_owned_dense(tin, 1, n, H, Dv), o1 = t_owned_dense(ATTN_F32, 1, n, H, Dv);
            t_owned d1 = t_owned_dense(tin, 1, n, H, Dv), g1[3];
            float *l1 = (float *)t_xmalloc(sizeof(float) * (size_t)H * n);
            attn_desc e = d;
            int j, h, x, same = 1;
            t_fill_nan(q1.buf, tin, q1.n); t_fill_nan(v1.buf, tin, v1.n); t_fill_nan(d1.buf, tin, d1.n);
            t_fill_nan(o1.buf, ATTN_F32, o1.n);
            for (j = 0; j < lens[b]; ++j)
                for (h = 0; h < H; ++h) {
                    for (x = 0; x < D; ++x) t_store(&q1.t, 0, j, h, x, t_load(&q.t, b, j, h, x));
                    for (x = 0; x < Dv; ++x) {
                        t_store(&v1.t, 0, j, h, x, t_load(&v.t, b, j, h, x));
                        t_store(&d1.t, 0, j, h, x, t_load(&dO.t, b, j, h, x));
                        t_store(&o1.t, 0, j, h, x, t_load(&o.t, b, j, h, x));
                    }
                }
            for (j = 0; j < H * n; ++j) l1[j] = lse[(size_t)b * H * n + (size_t)j];
            g1[0] = t_owned_dense(tgrad, 1, n, H, D); g1[1] = t_owned_dense(tgrad, 1, n, H, D); g1[2] = t_owned_dense(tgrad, 1, n, H, Dv);
            e.seqlens_k = lens + b;
            s = attn_backward(&e, q1.t, q1.t, v1.t, o1.t, d1.t, l1, g1[0].t, g1[1].t, g1[2].t);
            for (which = 0; which < 3; ++which) {
                const size_t row = g1[which].n * t_dt_size(tgrad);
                same &= !memcmp(g1[which].buf, (const char *)g[which].buf + (size_t)b * row, row);
                t_owned_free(&g1[which]);
            }
            T_CHECK(s == ATTN_OK && same, "%s: sequence %d (length %d) alone with NaN padding: gradients differ from the batch's",
                    what, b, lens[b]);
            t_owned_free(&q1); t_owned_free(&v1); t_owned_free(&o1); t_owned_free(&d1); free(l1);
        }
done:
    for (which = 0; which < 3; ++which) { t_owned_free(&g[which]); t_owned_free(&first[which]); free(ref[which]); free(got[which]); }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&dO);
    free(qd); free(kd); free(vd); free(od);
    free(R); free(lse); free(ro); free(rl); free(lens);
}

/* HF's autograd gradients (tests/fixtures/reformer_hf_grad.txt): dq and dk are the query and key
   roles of the shared QK (their sum is HF's gradient of the projection), dv; HF's conventions by
   the documented fields (as lt_fixture), within 1e-4 of the largest gradient. */
static void lt_bwd_fixture(void) {
    const char *path = "reformer_hf_grad.txt";
    double cases = 0.0;
    int ncases, cs;
    if (!T_CHECK(T_FIXTURE(path, "cases", &cases, 1), "lsh backward fixture: cannot read tests/fixtures/%s (run the tests "
                 "from the repository root or set ATTN_FIXTURES)", path)) return;
    ncases = cases >= 1 && cases <= 64 && cases == floor(cases) ? (int)cases : 0;
    if (!T_CHECK(ncases > 0, "lsh backward fixture: bad header")) return;
    for (cs = 0; cs < ncases; ++cs) {
        static const char *const names[4] = { "dq", "dk", "dv", "dq + dk" };
        char name[32];
        int B, n, H, D, c, nh, nb, causal, i, nfac = 0, fac[4] = { 0, 0, 0, 0 }, cols = 0, ok, x, cb, ca;
        size_t cnt, nrot, j;
        t_owned qk, v, o, dO, g[3];
        float *rot, *hf[5], *lse;
        int *lens;
        attn_desc d;
        attn_status s;
        snprintf(name, sizeof name, "case %d", cs);
        ok = lt_read_case(path, cs, &B, &n, &H, &D, &c, &nh, &nb, &causal, &nfac, fac, &cb, &ca);
        if (!T_CHECK(ok, "lsh backward fixture: bad case line")) break;
        cols = lt_rotation_cols(nb, nfac, fac);
        cnt = (size_t)B * n * H * D; nrot = (size_t)H * D * nh * cols;
        qk = t_owned_dense(ATTN_F32, B, n, H, D); v = t_owned_dense(ATTN_F32, B, n, H, D); o = t_owned_dense(ATTN_F32, B, n, H, D);
        dO = t_owned_dense(ATTN_F32, B, n, H, D);
        for (x = 0; x < 3; ++x) g[x] = t_owned_dense(ATTN_F32, B, n, H, D);
        rot = (float *)t_xmalloc(sizeof(float) * nrot);
        for (x = 0; x < 5; ++x) hf[x] = (float *)t_xmalloc(sizeof(float) * cnt);   /* out, dqk, dq, dk, dv */
        lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * n);
        lens = (int *)t_xmalloc(sizeof(int) * (size_t)B);
        ok = lt_read_lens(path, cs, B, n, lens) && lt_read_floats(path, "qk", cs, (float *)qk.buf, cnt) &&
             lt_read_floats(path, "v", cs, (float *)v.buf, cnt) && lt_read_floats(path, "rot", cs, rot, nrot) &&
             lt_read_floats(path, "dout", cs, (float *)dO.buf, cnt) && lt_read_floats(path, "out", cs, hf[0], cnt) &&
             lt_read_floats(path, "dqk", cs, hf[1], cnt) && lt_read_floats(path, "dq", cs, hf[2], cnt) &&
             lt_read_floats(path, "dk", cs, hf[3], cnt) && lt_read_floats(path, "dv", cs, hf[4], cnt);
        if (T_CHECK(ok, "lsh backward fixture %s: truncated", name)) {
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LSH; d.causal = causal; d.lsh.bucket_size = c; d.lsh.n_hashes = nh;
            for (i = 0; i < nfac; ++i) d.lsh.bucket_factors[i] = fac[i];
            d.lsh.rotations = rot; d.lsh.rotations_layout = ATTN_LSH_ROT_HF; d.lsh.hf_merge = 1;
            d.lsh.chunks_before = cb ? cb : ATTN_LSH_CHUNKS_ZERO; d.lsh.chunks_after = ca;
            d.seqlens_k = lens;
            s = attn_forward(&d, qk.t, qk.t, v.t, o.t, lse);
            if (s == ATTN_OK) s = attn_backward(&d, qk.t, qk.t, v.t, o.t, dO.t, lse, g[0].t, g[1].t, g[2].t);
            if (T_CHECK(s == ATTN_OK, "lsh backward fixture %s: status %s", name, attn_status_str(s))) {
                double err_out = 0, mo = 0;
                for (j = 0; j < cnt; ++j) {   /* valid rows of out (HF's padding rows are not 0) */
                    const int row = (int)(j / ((size_t)H * D) % (size_t)n), bb = (int)(j / ((size_t)n * H * D));
                    if (row >= lens[bb]) continue;
                    err_out = fmax(err_out, fabs(((const float *)o.buf)[j] - hf[0][j]));
                    mo = fmax(mo, fabs(hf[0][j]));
                }
                T_CHECK(err_out <= 2e-5 * fmax(1, mo), "lsh backward fixture %s: out vs HF %.3g", name, err_out);
                for (x = 0; x < 4; ++x) {   /* dq, dk, dv, and dq + dk against HF's dqk */
                    const float *want = x == 3 ? hf[1] : hf[2 + x];
                    double err = 0, mx = 0;
                    for (j = 0; j < cnt; ++j) {
                        const double a = x == 3 ? (double)((const float *)g[0].buf)[j] + ((const float *)g[1].buf)[j]
                                                : ((const float *)g[x].buf)[j];
                        err = fmax(err, fabs(a - want[j]));
                        mx = fmax(mx, fabs(want[j]));
                    }
                    T_CHECK(err <= 1e-4 * mx, "lsh backward fixture %s: %s vs HF autograd: max |error| %.3g (max |grad| %.3g)",
                            name, names[x], err, mx);
                    if (getenv("ATTN_TEST_VERBOSE"))
                        printf("lsh backward fixture %s: %s: max |attn.h - HF| %.3g, relative %.3g\n", name, names[x], err,
                               err / mx);
                }
            }
        }
        t_owned_free(&qk); t_owned_free(&v); t_owned_free(&o); t_owned_free(&dO);
        for (x = 0; x < 3; ++x) t_owned_free(&g[x]);
        for (x = 0; x < 5; ++x) free(hf[x]);
        free(rot); free(lse); free(lens);
        if (!ok) break;
    }
}

/* bad input to attn_backward: a specific status, no gradient written */
static void lt_bwd_statuses(void) {
    const int B = 2, n = 16, H = 2, D = 4;
    t_owned q = t_owned_dense(ATTN_F32, B, n, H, D), o = t_owned_dense(ATTN_F32, B, n, H, D), dO = t_owned_dense(ATTN_F32, B, n, H, D);
    t_owned g[3], k1 = t_owned_dense(ATTN_F32, B, n, 1, D);
    int lens[2] = { 16, 9 }, lens2[2] = { 16, 10 }, x, cse;
    float lse[2 * 2 * 16], ws[8];
    attn_desc d;
    t_rng r = t_rng_seed(43);
    for (x = 0; x < 3; ++x) g[x] = t_owned_dense(ATTN_F32, B, n, H, D);
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&dO.t, &r, 1.0);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 4; d.lsh.n_hashes = 2; d.seqlens_k = lens;
    T_CHECK(attn_forward(&d, q.t, q.t, q.t, o.t, lse) == ATTN_OK, "lsh backward statuses: forward");
    for (cse = 0; cse < 18; ++cse) {
        attn_desc e = d;
        attn_tensor tq = q.t, tk = q.t, tv = q.t, tdo = dO.t, gq = g[0].t, gk = g[1].t, gv = g[2].t;
        const float *lp = lse;
        attn_status want = ATTN_OK;
        const char *what = "";
        switch (cse) {
        case 0: tdo.data = NULL; want = ATTN_ERR_BWD_NULL_DOUT; what = "dout NULL"; break;
        case 1: lp = NULL; want = ATTN_ERR_BWD_NULL_LSE; what = "lse NULL"; break;
        case 2: gq.data = NULL; want = ATTN_ERR_BWD_NULL_DQ; what = "dq NULL"; break;
        case 3: gk.data = NULL; want = ATTN_ERR_BWD_NULL_DK; what = "dk NULL"; break;
        case 4: gv.data = NULL; want = ATTN_ERR_BWD_NULL_DV; what = "dv NULL"; break;
        case 5: tdo.dim = 3; want = ATTN_ERR_BWD_DOUT_SHAPE; what = "dout dim"; break;
        case 6: gq.seq = 8; want = ATTN_ERR_BWD_DQ_SHAPE; what = "dq seq"; break;
        case 7: gk.heads = 1; want = ATTN_ERR_BWD_DK_SHAPE; what = "dk heads"; break;
        case 8: gv.batch = 1; want = ATTN_ERR_BWD_DV_SHAPE; what = "dv batch"; break;
        case 9: gq.stride_seq = 0; want = ATTN_ERR_BWD_DQ_BROADCAST; what = "dq broadcast"; break;
        case 10: gk.stride_head = 0; want = ATTN_ERR_BWD_DK_BROADCAST; what = "dk broadcast"; break;
        case 11: gv.stride_batch = 0; want = ATTN_ERR_BWD_DV_BROADCAST; what = "dv broadcast"; break;
        case 12: gv.dtype = (attn_dtype)7; want = ATTN_ERR_DTYPE; what = "dv dtype"; break;
        case 13: e.workspace = ws; e.workspace_size = sizeof ws; want = ATTN_ERR_WORKSPACE; what = "workspace too small"; break;
        case 14: e.seqlens_q = lens2; want = ATTN_ERR_LSH_SEQLENS; what = "seqlens_q != seqlens_k"; break;
        case 15: tk = tv = k1.t; want = ATTN_ERR_LSH_HEADS; what = "k.heads != q.heads"; break;
        case 16: gq = tq; want = ATTN_ERR_BWD_OVERLAP; what = "dq is q"; break;
        case 17: e.lsh.chunks_after = -2; want = ATTN_ERR_LSH_CHUNKS; what = "chunks_after -2"; break;
        }
        for (x = 0; x < 3; ++x) t_sentinel(g[x].buf, g[x].n * 4, (unsigned char)(20 + x));
        {
            char msg[64];
            sprintf(msg, "backward %s", what);
            if (cse == 16) {   /* dq = q: q must stay as it was */
                t_owned keep = t_owned_dense(ATTN_F32, B, n, H, D);
                memcpy(keep.buf, q.buf, q.n * 4);
                t_expect_status(attn_backward(&e, tq, tk, tv, o.t, tdo, lp, gq, gk, gv), want, "lsh", msg);
                T_CHECK(!memcmp(keep.buf, q.buf, q.n * 4), "lsh %s: q was written", msg);
                t_owned_free(&keep);
            } else
                t_expect_status(attn_backward(&e, tq, tk, tv, o.t, tdo, lp, gq, gk, gv), want, "lsh", msg);
            for (x = 0; x < 3; ++x)
                T_CHECK(t_sentinel_ok(g[x].buf, g[x].n * 4, (unsigned char)(20 + x)), "lsh %s: a gradient was written", msg);
        }
    }
    {   /* the size query runs the forward's checks */
        size_t bytes = 0;
        attn_desc e = d;
        e.lsh.hf_merge = 3;
        t_expect_status(attn_backward_workspace_size(&e, q.t, q.t, q.t, &bytes), ATTN_ERR_LSH_HF_MERGE, "lsh",
                        "backward workspace size with hf_merge 3");
        T_CHECK(attn_backward_workspace_size(&d, q.t, q.t, q.t, &bytes) == ATTN_OK && bytes > 0, "lsh: backward workspace size");
    }
    t_owned_free(&q); t_owned_free(&o); t_owned_free(&dO); t_owned_free(&k1);
    for (x = 0; x < 3; ++x) t_owned_free(&g[x]);
}

static void lt_backward(t_rng *r) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    static const int f48[2] = { 4, 8 }, f242[3] = { 2, 4, 2 };
    int it, iters = T_QUICK ? 4 : 16;
    lt_bwd_fixture();
    lt_bwd_statuses();
    /* every coordinate against finite differences: odd lengths and dims, padding, rounds, causal */
    lt_bwd_case(r, 3, 15, 2, 5, 3, ATTN_F32, ATTN_F32, 3, 4, 2, 0, 0, 0, 1, NULL, 0, 1);
    lt_bwd_case(r, 2, 21, 1, 7, 6, ATTN_F32, ATTN_F32, 7, 2, 3, 1, 1, 0, 1, NULL, 0, 1);
    lt_bwd_case(r, 2, 24, 2, 6, 5, ATTN_F32, ATTN_F32, 4, 0, 3, 1, 0, 0, 0, NULL, 0, 1);   /* q != k */
    lt_bwd_case(r, 2, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 0, 1, 0, 1, f48, 2, 1);    /* factorised [4, 8] */
    lt_bwd_case(r, 1, 9, 1, 4, 4, ATTN_F32, ATTN_F32, 9, 2, 1, 1, 0, 0, 1, NULL, 0, 1);    /* one chunk: its own previous */
    /* HF's merge (against the reference's chain rule, rounded as HF) */
    lt_bwd_case(r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 0, 1, 1, 1, NULL, 0, 0);
    lt_bwd_case(r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 3, 1, 1, 1, 1, NULL, 0, 0);
    lt_bwd_case(r, 2, 48, 2, 8, 8, ATTN_F32, ATTN_F32, 8, 0, 3, 1, 0, 1, 1, f242, 3, 0);
    /* chunks past a tile: c 64 (128 keys), c 96 (two query blocks), defaults (c 64, nb from n) */
    lt_bwd_case(r, 2, 256, 2, 16, 16, ATTN_F32, ATTN_F32, 0, 0, 2, 1, 0, 0, 1, NULL, 0, 0);
    lt_bwd_case(r, 1, 192, 2, 16, 24, ATTN_F32, ATTN_F32, 96, 2, 2, 0, 0, 1, 1, NULL, 0, 0);
    /* storage types */
    lt_bwd_case(r, 2, 32, 2, 8, 8, ATTN_F16, ATTN_BF16, 4, 0, 2, 1, 0, 0, 1, NULL, 0, 0);
    lt_bwd_case(r, 2, 32, 1, 8, 4, ATTN_BF16, ATTN_F16, 8, 0, 2, 0, 1, 1, 1, NULL, 0, 0);
    for (it = 0; it < iters; ++it) {
        static const int cs[5] = { 1, 2, 3, 4, 8 };
        const int c = t_pick(r, cs, 5), nch = t_irange(r, 1, 6), nh = t_irange(r, 1, 3);
        const int nb = t_chance(r, 0.5) ? 0 : 2 * t_irange(r, 1, 6), nfac = t_chance(r, 0.3) ? t_irange(r, 2, 3) : 0;
        const int f32 = t_chance(r, 0.7);
        int fac[3];
        fac[0] = 2 * t_irange(r, 1, 4); fac[1] = 2 * t_irange(r, 1, 4); fac[2] = 2 * t_irange(r, 1, 2);
        lt_bwd_case(r, t_irange(r, 1, 3), c * nch, t_irange(r, 1, 3), t_irange(r, 2, 12), t_irange(r, 1, 12),
                    f32 ? ATTN_F32 : dts[t_irange(r, 0, 2)], f32 ? ATTN_F32 : dts[t_irange(r, 0, 2)], c, nfac ? 0 : nb, nh,
                    t_chance(r, 0.5), t_chance(r, 0.5), t_chance(r, 0.3), t_chance(r, 0.7), fac, nfac, 0);
    }
}

void test_lsh_hf(void) {
    t_rng r = t_rng_seed(2028);
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int it, iters = T_QUICK ? 6 : 40;
    lt_fixture();
    lt_rotations();
    lt_statuses();
    static const int f48[2] = { 4, 8 }, f242[3] = { 2, 4, 2 }, f40[2] = { 40, 2 };
    lt_case(&r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 0, 1, 1, 1, NULL, 0);   /* the fixture's shape: HF's conventions */
    lt_case(&r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 1, 1, 1, 1, NULL, 0);   /* causal */
    lt_case(&r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 1, 1, 0, 1, NULL, 0);   /* causal, exact merge */
    lt_case(&r, 3, 32, 2, 8, 8, ATTN_F32, ATTN_F32, 4, 0, 2, 0, 1, 1, 1, f48, 2);    /* factorised [4, 8] */
    lt_case(&r, 2, 48, 2, 8, 8, ATTN_F32, ATTN_F32, 8, 0, 3, 1, 0, 0, 1, f242, 3);   /* three factors */
    lt_case(&r, 1, 64, 1, 8, 8, ATTN_F32, ATTN_F32, 8, 0, 1, 0, 1, 0, 1, f40, 2);    /* 20 + 1 columns: two lane blocks */
    lt_case(&r, 2, 256, 2, 16, 16, ATTN_F32, ATTN_F32, 0, 0, 1, 0, 0, 0, 1, NULL, 0); /* defaults: c 64, nb 8 */
    lt_case(&r, 2, 192, 1, 16, 24, ATTN_F32, ATTN_F32, 96, 2, 2, 1, 0, 0, 1, NULL, 0); /* c > 64: two lane blocks */
    for (it = 0; it < iters; ++it) {
        static const int cs[4] = { 2, 4, 8, 16 };
        const int c = t_pick(&r, cs, 4), nch = t_irange(&r, 1, 6), nh = t_irange(&r, 1, 3);
        const int nb = t_chance(&r, 0.5) ? 0 : 2 * t_irange(&r, 1, 6), nfac = t_chance(&r, 0.3) ? t_irange(&r, 2, 3) : 0;
        int fac[3];
        fac[0] = 2 * t_irange(&r, 1, 4); fac[1] = 2 * t_irange(&r, 1, 4); fac[2] = 2 * t_irange(&r, 1, 2);
        lt_case(&r, t_irange(&r, 1, 4), c * nch, t_irange(&r, 1, 3), t_irange(&r, 2, 20), t_irange(&r, 1, 20),
                dts[t_irange(&r, 0, 2)], dts[t_irange(&r, 0, 2)], c, nfac ? 0 : nb, nh, t_chance(&r, 0.5), t_chance(&r, 0.5),
                t_chance(&r, 0.5), t_chance(&r, 0.7), fac, nfac);
    }
    lt_backward(&r);
    t_packed_lsh();
    t_lsh_decode();
}
