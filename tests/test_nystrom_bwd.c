/* tests/test_nystrom_bwd.c - attn_backward for ATTN_NYSTROM (dq, dk, dv and nystrom.dconv)
   against central finite differences of a double-precision forward written here from ZOO.md and
   attn.h's documented padding rules (sharing no code with attn.h or test_lowrank.c), for the
   loss sum(dO . out) with a random dO. The reference works on positions, as the upstream codes
   do: the sequence padded to m*l (at the end; nystrom-attention's rule: at the front), tokens
   past the valid length zero (zero and nystrom-attention rules) or as given (Hugging Face's),
   landmark means, F = softmax(Q K~^T), A = softmax(Q~ K~^T), B = softmax(Q~ K^T) over the valid
   landmarks / keys (a landmark with no valid token: uniform rows), Z0 = A^T / c with c the
   largest column sum (per head or over the call), 6 (or `iterations`) pseudo-inverse steps,
   out = F Z (B V) + conv(V), rows past Lq 0; landmarks = q.seq = k.seq (not nystrom-attention's
   rule): exact softmax attention plus the conv. Every coordinate of q, k, v and the conv taps
   is differenced (step 1e-5, double: exact to ~1e-9); tolerance max |lib - fd| <= 1e-4 max |fd|
   per tensor (fp32 through the pseudo-inverse's 24 GEMMs).
   Also: padding rows of dq, dk, dv exactly 0 where the rule never reads them, threads 1/2/3
   bitwise, a caller workspace (and a short one), bf16 storage, and the backward statuses with
   the outputs untouched. Fixtures (tests/fixtures/nystromformer_hf_bwd.py,
   nystrom_attention_lucidrains_bwd.py): torch autograd of Hugging Face's
   NystromformerSelfAttention and of nystrom-attention's NystromAttention on small padded
   batches; out, dq, dk, dv and dconv within 1e-4 of each tensor's largest magnitude. */
#include "test.h"
#include "fixture.h"

typedef struct {
    int B, Sq, Sk, Hq, Hk, D, Dv, m, iters, pad, rule, batch_init, kernel;   /* kernel 0: no conv */
    const int *lq, *lk;                                                    /* seqlens_q, seqlens_k */
    const char *name;
} nb_case;

/* row-wise softmax of s[0..n) over the entries with ok[j] (NULL: all); none: fill (uniform 1/n
   when fill < 0, else the value fill) */
static void nb_softmax(double *s, const int *ok, int n, double fill) {
    double mx = -INFINITY, sum = 0.0;
    int j, any = 0;
    for (j = 0; j < n; ++j) if (!ok || ok[j]) { any = 1; if (s[j] > mx) mx = s[j]; }
    if (!any) { for (j = 0; j < n; ++j) s[j] = fill < 0.0 ? 1.0 / n : fill; return; }
    for (j = 0; j < n; ++j) { s[j] = !ok || ok[j] ? exp(s[j] - mx) : 0.0; sum += s[j]; }
    for (j = 0; j < n; ++j) s[j] /= sum;
}

/* Z = the Nystromformer iterate from Z0 = A^T / c */
static void nb_pinv(const double *A, int m, int iters, double c, double *Z) {
    const size_t mm = (size_t)m * m;
    double *AZ = (double *)t_xmalloc(sizeof(double) * mm * 3), *T = AZ + mm, *U = T + mm;
    int i, j, it;
    for (i = 0; i < m; ++i) for (j = 0; j < m; ++j) Z[(size_t)i * m + j] = A[(size_t)j * m + i] / c;
    for (it = 0; it < iters; ++it) {
        r_mm(A, Z, AZ, m, m, m);
        for (i = 0; i < (int)mm; ++i) T[i] = -AZ[i];
        for (i = 0; i < m; ++i) T[(size_t)i * m + i] += 7.0;
        r_mm(AZ, T, U, m, m, m);
        for (i = 0; i < (int)mm; ++i) U[i] = -U[i];
        for (i = 0; i < m; ++i) U[(size_t)i * m + i] += 15.0;
        r_mm(AZ, U, T, m, m, m);
        for (i = 0; i < (int)mm; ++i) T[i] = -T[i];
        for (i = 0; i < m; ++i) T[(size_t)i * m + i] += 13.0;
        r_mm(Z, T, U, m, m, m);
        for (i = 0; i < (int)mm; ++i) Z[i] = 0.25 * U[i];
    }
    free(AZ);
}

static double nb_dot(const double *a, const double *b, int n) {
    double s = 0.0;
    int i;
    for (i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

/* out [B][Sq][Hq][Dv] of dense q [B][Sq][Hq][D], k [B][Sk][Hk][D], v [B][Sk][Hk][Dv], conv [Hq][kernel] */
static void nb_forward(const nb_case *c, const double *q, const double *k, const double *v, const double *conv, double *out) {
    const int B = c->B, Sq = c->Sq, Sk = c->Sk, Hq = c->Hq, Hk = c->Hk, D = c->D, Dv = c->Dv, m = c->m, g = Hq / Hk;
    const int luc = c->rule == 2, hf = c->rule == 1, masked = luc && c->lk;
    const int lq = (Sq + m - 1) / m, lk = (Sk + m - 1) / m, nq = m * lq, nk = m * lk;
    const int pq = luc ? nq - Sq : 0, pk = luc ? nk - Sk : 0, exact = m == Sq && m == Sk && !luc;
    const double sc = 1.0 / sqrt((double)D);
    double gmax = -INFINITY;
    int pass, b, h, i, j, t, e;
    for (pass = c->batch_init ? 0 : 1; pass < 2; ++pass)
        for (b = 0; b < B; ++b)
            for (h = 0; h < Hq; ++h) {
                const int Lk = c->lk ? c->lk[b] : Sk, Lq = c->lq ? c->lq[b] : !hf && Sq == Sk && c->lk ? Lk : Sq;
                const int rq = hf ? Sq : Lq, rk = hf ? Sk : Lk, hk = h / g;
                double *o = (double *)calloc((size_t)Sq * Dv, sizeof(double));
#define NB_Q(r, e) q[(((size_t)b * Sq + (r)) * Hq + h) * D + (e)]
#define NB_K(r, e) k[(((size_t)b * Sk + (r)) * Hk + hk) * D + (e)]
#define NB_V(r, e) v[(((size_t)b * Sk + (r)) * Hk + hk) * Dv + (e)]
                if (exact) {
                    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
                    for (i = 0; i < Lq && pass == 1; ++i) {
                        for (j = 0; j < Lk; ++j) {
                            s[j] = 0.0;
                            for (e = 0; e < D; ++e) s[j] += NB_Q(i, e) * NB_K(j, e);
                            s[j] *= sc;
                        }
                        if (Lk > 0) nb_softmax(s, NULL, Lk, 0.0);
                        for (j = 0; j < Lk; ++j) for (e = 0; e < Dv; ++e) o[(size_t)i * Dv + e] += s[j] * NB_V(j, e);
                    }
                    free(s);
                } else {
                    double *Qp = (double *)calloc((size_t)nq * D, sizeof(double)), *Kp = (double *)calloc((size_t)nk * D, sizeof(double));
                    double *Vp = (double *)calloc((size_t)nk * Dv, sizeof(double));
                    double *Ql = (double *)calloc((size_t)m * D, sizeof(double)), *Kl = (double *)calloc((size_t)m * D, sizeof(double));
                    double *A = (double *)t_xmalloc(sizeof(double) * (size_t)m * m), *Z = (double *)t_xmalloc(sizeof(double) * (size_t)m * m);
                    double *Bm = (double *)t_xmalloc(sizeof(double) * (size_t)m * nk), *BV = (double *)t_xmalloc(sizeof(double) * (size_t)m * Dv);
                    double *W = (double *)t_xmalloc(sizeof(double) * (size_t)m * Dv), *f = (double *)t_xmalloc(sizeof(double) * (size_t)m);
                    int *mq = (int *)t_xmalloc(sizeof(int) * (size_t)nq), *mk = (int *)t_xmalloc(sizeof(int) * (size_t)nk);
                    int *lmq = (int *)t_xmalloc(sizeof(int) * (size_t)m), *lmk = (int *)t_xmalloc(sizeof(int) * (size_t)m);
                    for (t = 0; t < nq; ++t) {
                        const int r = t - pq;
                        if (r >= 0 && r < rq) for (e = 0; e < D; ++e) Qp[(size_t)t * D + e] = NB_Q(r, e);
                        mq[t] = !masked || (r >= 0 && r < Lq);
                    }
                    for (t = 0; t < nk; ++t) {
                        const int r = t - pk;
                        if (r >= 0 && r < rk) {
                            for (e = 0; e < D; ++e) Kp[(size_t)t * D + e] = NB_K(r, e);
                            for (e = 0; e < Dv; ++e) Vp[(size_t)t * Dv + e] = NB_V(r, e);
                        }
                        mk[t] = luc ? !masked || (r >= 0 && r < Lk) : t < Lk;   /* keys B sees */
                    }
                    for (j = 0; j < m; ++j) {   /* landmark means (nystrom-attention's mask: over the valid tokens) */
                        int cq = 0, ck = 0;
                        for (t = j * lq; t < (j + 1) * lq; ++t) { cq += mq[t]; for (e = 0; e < D; ++e) Ql[(size_t)j * D + e] += Qp[(size_t)t * D + e]; }
                        for (t = j * lk; t < (j + 1) * lk; ++t) { ck += mk[t]; for (e = 0; e < D; ++e) Kl[(size_t)j * D + e] += Kp[(size_t)t * D + e]; }
                        for (e = 0; e < D; ++e) {
                            Ql[(size_t)j * D + e] /= masked ? (cq ? cq : 1) : lq;
                            Kl[(size_t)j * D + e] /= masked ? (ck ? ck : 1) : lk;
                        }
                        lmq[j] = !masked || cq > 0; lmk[j] = !masked || ck > 0;
                    }
                    for (i = 0; i < m; ++i) {
                        for (j = 0; j < m; ++j) A[(size_t)i * m + j] = sc * nb_dot(Ql + (size_t)i * D, Kl + (size_t)j * D, D);
                        if (lmq[i]) nb_softmax(A + (size_t)i * m, lmk, m, -1.0);
                        else for (j = 0; j < m; ++j) A[(size_t)i * m + j] = 1.0 / m;
                    }
                    if (pass == 0) {
                        const double cm = r_colmax(A, m);
                        if (cm > gmax) gmax = cm;
                    } else {
                        for (i = 0; i < m; ++i) {
                            for (t = 0; t < nk; ++t) Bm[(size_t)i * nk + t] = sc * nb_dot(Ql + (size_t)i * D, Kp + (size_t)t * D, D);
                            if (lmq[i]) nb_softmax(Bm + (size_t)i * nk, mk, nk, 0.0);
                            else for (t = 0; t < nk; ++t) Bm[(size_t)i * nk + t] = 1.0 / nk;
                        }
                        r_mm(Bm, Vp, BV, m, nk, Dv);
                        nb_pinv(A, m, c->iters, c->batch_init ? gmax : r_colmax(A, m), Z);
                        r_mm(Z, BV, W, m, m, Dv);
                        for (i = 0; i < Lq; ++i) {
                            for (j = 0; j < m; ++j) f[j] = sc * nb_dot(Qp + (size_t)(pq + i) * D, Kl + (size_t)j * D, D);
                            nb_softmax(f, lmk, m, -1.0);
                            for (j = 0; j < m; ++j) for (e = 0; e < Dv; ++e) o[(size_t)i * Dv + e] += f[j] * W[(size_t)j * Dv + e];
                        }
                    }
                    free(Qp); free(Kp); free(Vp); free(Ql); free(Kl); free(A); free(Z); free(Bm); free(BV); free(W); free(f);
                    free(mq); free(mk); free(lmq); free(lmk);
                }
                if (pass == 1) {
                    for (i = 0; i < Lq && c->kernel; ++i)   /* the conv residual over the rows the rule reads */
                        for (t = 0; t < c->kernel; ++t) {
                            const int r = i + t - c->kernel / 2;
                            if (r < 0 || r >= rk) continue;
                            for (e = 0; e < Dv; ++e) o[(size_t)i * Dv + e] += conv[(size_t)h * c->kernel + t] * NB_V(r, e);
                        }
                    for (i = 0; i < Sq; ++i)
                        for (e = 0; e < Dv; ++e) out[(((size_t)b * Sq + i) * Hq + h) * Dv + e] = i < Lq ? o[(size_t)i * Dv + e] : 0.0;
                }
                free(o);
#undef NB_Q
#undef NB_K
#undef NB_V
            }
}

static double nb_loss(const nb_case *c, const double *q, const double *k, const double *v, const double *conv, const double *dO,
                      double *out) {
    const size_t n = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    nb_forward(c, q, k, v, conv, out);
    return nb_dot(out, dO, (int)n);
}

static attn_desc nb_desc(const nb_case *c, const float *conv, float *dconv, int threads) {
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_NYSTROM;
    d.nystrom.landmarks = c->m; d.nystrom.iterations = c->iters == 6 ? 0 : c->iters; d.nystrom.pad = c->pad;
    d.nystrom.padding_rule = (attn_nystrom_padding)c->rule;
    d.nystrom.pinv_init = c->batch_init ? ATTN_NYSTROM_PINV_BATCH : ATTN_NYSTROM_PINV_PER_HEAD;
    if (c->kernel) { d.nystrom.conv = conv; d.nystrom.conv_kernel = c->kernel; d.nystrom.dconv = dconv; }
    d.seqlens_q = c->lq; d.seqlens_k = c->lk; d.n_threads = threads;
    return d;
}

static const int nb_l2a[2] = { 12, 7 }, nb_l2b[2] = { 11, 5 }, nb_q2b[2] = { 9, 5 }, nb_l2c[2] = { 12, 6 };
static const int nb_q2d[2] = { 8, 10 }, nb_l2d[2] = { 10, 7 }, nb_l2e[2] = { 10, 3 }, nb_l2f[2] = { 12, 5 };
static const int nb_l2g[2] = { 6, 4 }, nb_l2h[2] = { 12, 0 }, nb_l2i[2] = { 13, 6 }, nb_q2i[2] = { 7, 9 };

static const nb_case nb_cases[] = {
    /*  B  Sq  Sk Hq Hk  D Dv  m it pad rule bat ker  lq      lk */
    { 2, 12, 12, 2, 1, 5, 3, 4, 6, 0, 0, 0, 5, NULL, nb_l2a, "zero rule, GQA, conv" },
    { 2, 11, 11, 1, 1, 4, 3, 3, 6, 1, 0, 1, 3, nb_q2b, nb_l2b, "zero rule, pad 1, seqlens_q, batch Z0, conv" },
    { 2, 12, 12, 2, 2, 4, 3, 4, 6, 0, 1, 1, 5, NULL, nb_l2c, "HF rule, batch Z0, conv" },
    { 2, 10, 10, 2, 1, 4, 2, 4, 6, 1, 1, 0, 0, nb_q2d, nb_l2d, "HF rule, pad 1, seqlens_q, GQA" },
    { 2, 10, 10, 2, 1, 4, 3, 4, 6, 0, 2, 1, 3, NULL, NULL, "nystrom-attention rule, no mask, batch Z0, GQA, conv" },
    { 2, 10, 10, 1, 1, 4, 3, 4, 6, 0, 2, 0, 5, NULL, nb_l2e, "nystrom-attention rule, mask (empty landmarks), conv" },
    { 2, 8, 12, 4, 2, 4, 3, 4, 3, 0, 0, 0, 0, NULL, nb_l2f, "cross-attention, GQA, 3 iterations" },
    { 2, 9, 13, 2, 1, 3, 2, 4, 6, 0, 2, 1, 0, nb_q2i, nb_l2i, "nystrom-attention rule, cross-attention, mask" },
    { 2, 6, 6, 2, 1, 4, 3, 6, 6, 0, 0, 0, 3, NULL, nb_l2g, "landmarks = seq (exact), zero rule, conv" },
    { 2, 6, 6, 1, 1, 4, 3, 6, 6, 0, 1, 0, 3, NULL, nb_l2g, "landmarks = seq (exact), HF rule, conv" },
    { 2, 12, 12, 1, 1, 4, 3, 4, 6, 0, 0, 1, 3, NULL, nb_l2h, "zero rule, a sequence with Lk = 0, batch Z0, conv" },
};

/* larger shapes (several GEMM blocks): random coordinates only */
static const int nb_lbig[2] = { 257, 190 }, nb_lbig2[2] = { 130, 61 };
static const nb_case nb_big[] = {
    { 2, 257, 257, 4, 2, 32, 24, 16, 6, 1, 1, 1, 33, NULL, nb_lbig, "large: HF rule, pad 1, batch Z0, GQA, conv 33" },
    { 2, 130, 130, 2, 1, 16, 16, 12, 6, 0, 2, 0, 9, NULL, nb_lbig2, "large: nystrom-attention rule, mask, GQA, conv 9" },
    /* dW and dK~ split at their k blocks (3 of 272, 272, 256 rows), B read in place (rows 128 floats apart) */
    { 1, 800, 800, 2, 1, 64, 64, 32, 6, 0, 0, 0, 0, NULL, NULL, "large: 800 tokens, zero rule, GQA" },
};

static float *nb_rand(t_rng *r, size_t n, double sigma) {
    float *x = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) x[i] = (float)(sigma * t_normal(r));
    return x;
}

/* B [m][Sk], F [Sq][m] and B V [m][Dv] per (b, query head): nystrom.saved's documented size */
static size_t nb_saved_bytes(const nb_case *c) {
    return sizeof(float) * (size_t)c->B * c->Hq * c->m * (size_t)(c->Sq + c->Sk + c->Dv);
}

/* the library's gradients of one case with n threads (dq, dk, dv, dconv concatenated); saved:
   pass nystrom.saved (a buffer of its size) to both calls; out_keep (or NULL) gets the forward's */
static attn_status nb_lib_saved(const nb_case *c, const float *q, const float *k, const float *v, const float *conv,
                                const float *dO, int threads, float *grads, int saved, float *out_keep) {
    const size_t nq = (size_t)c->B * c->Sq * c->Hq * c->D, nk = (size_t)c->B * c->Sk * c->Hk * c->D;
    const size_t nv = (size_t)c->B * c->Sk * c->Hk * c->Dv, no = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    float *out = (float *)t_xmalloc(sizeof(float) * no), *buf = NULL;
    attn_desc d = nb_desc(c, conv, c->kernel ? grads + nq + nk + nv : NULL, threads);
    attn_status s;
    if (saved) {
        size_t i;
        buf = (float *)t_xmalloc(nb_saved_bytes(c));
        for (i = 0; i < nb_saved_bytes(c) / sizeof(float); ++i) buf[i] = NAN;   /* the forward must fill what is read */
        d.nystrom.saved = buf; d.nystrom.saved_size = nb_saved_bytes(c);
    }
    s = attn_forward(&d, attn_tensor_dense((void *)q, ATTN_F32, c->B, c->Sq, c->Hq, c->D),
                     attn_tensor_dense((void *)k, ATTN_F32, c->B, c->Sk, c->Hk, c->D),
                     attn_tensor_dense((void *)v, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv),
                     attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv), NULL);
    if (s == ATTN_OK)
        s = attn_backward(&d, attn_tensor_dense((void *)q, ATTN_F32, c->B, c->Sq, c->Hq, c->D),
                          attn_tensor_dense((void *)k, ATTN_F32, c->B, c->Sk, c->Hk, c->D),
                          attn_tensor_dense((void *)v, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv),
                          attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv),
                          attn_tensor_dense((void *)dO, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv), NULL,
                          attn_tensor_dense(grads, ATTN_F32, c->B, c->Sq, c->Hq, c->D),
                          attn_tensor_dense(grads + nq, ATTN_F32, c->B, c->Sk, c->Hk, c->D),
                          attn_tensor_dense(grads + nq + nk, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv));
    if (out_keep) memcpy(out_keep, out, sizeof(float) * no);
    free(out); free(buf);
    return s;
}
static attn_status nb_lib(const nb_case *c, const float *q, const float *k, const float *v, const float *conv, const float *dO,
                          int threads, float *grads) {
    return nb_lib_saved(c, q, k, v, conv, dO, threads, grads, 0, NULL);
}

static double nb_worst;   /* the largest err / max |fd| seen, printed */

/* pick 0: every coordinate; else that many random ones per tensor */
static void nb_fd_case(const nb_case *c, t_rng *r, int pick) {
    const size_t nq = (size_t)c->B * c->Sq * c->Hq * c->D, nk = (size_t)c->B * c->Sk * c->Hk * c->D;
    const size_t nv = (size_t)c->B * c->Sk * c->Hk * c->Dv, no = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    const size_t nc = (size_t)c->Hq * c->kernel, ng = nq + nk + nv + nc, sizes[4] = { nq, nk, nv, nc };
    const char *names[4] = { "dq", "dk", "dv", "dconv" };
    float *qf = nb_rand(r, nq, 1.0), *kf = nb_rand(r, nk, 1.0), *vf = nb_rand(r, nv, 1.0);
    float *cf = nb_rand(r, nc, 0.3), *of = nb_rand(r, no, 1.0);
    float *lib = (float *)t_xmalloc(sizeof(float) * ng), *lib2 = (float *)t_xmalloc(sizeof(float) * ng);
    double *x = (double *)t_xmalloc(sizeof(double) * ng), *dO = (double *)t_xmalloc(sizeof(double) * no);
    double *out = (double *)t_xmalloc(sizeof(double) * no), *in[4];
    size_t i, off = 0;
    int w, th;
    attn_status s;
    for (i = 0; i < nq; ++i) x[i] = qf[i];
    for (i = 0; i < nk; ++i) x[nq + i] = kf[i];
    for (i = 0; i < nv; ++i) x[nq + nk + i] = vf[i];
    for (i = 0; i < nc; ++i) x[nq + nk + nv + i] = cf[i];
    for (i = 0; i < no; ++i) dO[i] = of[i];
    in[0] = x; in[1] = x + nq; in[2] = in[1] + nk; in[3] = in[2] + nv;
    for (i = 0; i < ng; ++i) lib[i] = NAN;
    s = nb_lib(c, qf, kf, vf, cf, of, 1, lib);
    if (!T_CHECK(s == ATTN_OK, "nystrom backward (%s): %s", c->name, attn_status_str(s))) goto done;
    for (w = 0; w < 4; ++w) {
        const double hstep = 1e-5;
        double err = 0.0, mx = 0.0;
        size_t it;
        for (it = 0; it < (pick ? (size_t)pick : sizes[w]) && sizes[w]; ++it) {
            const size_t i = pick ? (size_t)t_irange(r, 0, (int)sizes[w] - 1) : it;
            const double x0 = in[w][i];
            double lp, lm, fd;
            in[w][i] = x0 + hstep; lp = nb_loss(c, in[0], in[1], in[2], in[3], dO, out);
            in[w][i] = x0 - hstep; lm = nb_loss(c, in[0], in[1], in[2], in[3], dO, out);
            in[w][i] = x0;
            fd = (lp - lm) / (2.0 * hstep);
            mx = fmax(mx, fabs(fd));
            err = fmax(err, fabs(fd - (double)lib[off + i]));
            if (lib[off + i] != lib[off + i]) err = INFINITY;
        }
        nb_worst = fmax(nb_worst, err / fmax(mx, 1e-3));
        T_CHECK(err <= 1e-4 * fmax(mx, 1e-3), "nystrom backward (%s): %s vs finite differences: max err %.3g, max |grad| %.3g",
                c->name, names[w], err, mx);
        off += sizes[w];
    }
    {   /* padding rows the rule never reads get exactly 0 */
        const int hf = c->rule == 1;
        int b, t, h, e, zero = 1;
        for (b = 0; b < c->B && !hf; ++b) {
            const int Lk = c->lk ? c->lk[b] : c->Sk, Lq = c->lq ? c->lq[b] : c->Sq == c->Sk && c->lk ? Lk : c->Sq;
            for (t = 0; t < c->Sq; ++t) for (h = 0; h < c->Hq; ++h) for (e = 0; e < c->D; ++e)
                if (t >= Lq && lib[(((size_t)b * c->Sq + t) * c->Hq + h) * c->D + e] != 0.0f) zero = 0;
            for (t = Lk; t < c->Sk; ++t) for (h = 0; h < c->Hk; ++h) {
                for (e = 0; e < c->D; ++e) if (lib[nq + (((size_t)b * c->Sk + t) * c->Hk + h) * c->D + e] != 0.0f) zero = 0;
                for (e = 0; e < c->Dv; ++e) if (lib[nq + nk + (((size_t)b * c->Sk + t) * c->Hk + h) * c->Dv + e] != 0.0f) zero = 0;
            }
        }
        T_CHECK(zero, "nystrom backward (%s): padding rows of dq/dk/dv are not 0", c->name);
    }
    for (th = 2; th <= (pick ? 4 : 3); ++th) {   /* bitwise the same for every thread count */
        for (i = 0; i < ng; ++i) lib2[i] = NAN;
        s = nb_lib(c, qf, kf, vf, cf, of, th, lib2);
        T_CHECK(s == ATTN_OK && memcmp(lib, lib2, sizeof(float) * ng) == 0, "nystrom backward (%s): %d threads differ from 1",
                c->name, th);
    }
    {   /* nystrom.saved: the forward's B and F read back by the backward; out and the gradients
           bitwise those without it (1 and 2 threads) */
        float *o1 = (float *)t_xmalloc(sizeof(float) * no), *o2 = (float *)t_xmalloc(sizeof(float) * no);
        s = nb_lib_saved(c, qf, kf, vf, cf, of, 1, lib2, 0, o1);
        T_CHECK(s == ATTN_OK, "nystrom (%s): forward without saved", c->name);
        for (th = 1; th <= 2; ++th) {
            for (i = 0; i < ng; ++i) lib2[i] = NAN;
            s = nb_lib_saved(c, qf, kf, vf, cf, of, th, lib2, 1, o2);
            T_CHECK(s == ATTN_OK && memcmp(o1, o2, sizeof(float) * no) == 0, "nystrom forward (%s): saved changes out (%d threads)",
                    c->name, th);
            T_CHECK(s == ATTN_OK && memcmp(lib, lib2, sizeof(float) * ng) == 0,
                    "nystrom backward (%s): gradients with saved differ from without (%d threads)", c->name, th);
        }
        free(o1); free(o2);
    }
done:
    free(qf); free(kf); free(vf); free(cf); free(of); free(lib); free(lib2); free(x); free(dO); free(out);
}

/* workspace query, a caller's workspace (same bits), a short one (ATTN_ERR_WORKSPACE, nothing
   written), bf16 inputs with f16 gradients against the fp32 call, and the statuses */
static void nb_contract(void) {
    const nb_case *c = &nb_cases[2];   /* HF rule, batch Z0, conv */
    const size_t nq = (size_t)c->B * c->Sq * c->Hq * c->D, nk = (size_t)c->B * c->Sk * c->Hk * c->D;
    const size_t nv = (size_t)c->B * c->Sk * c->Hk * c->Dv, no = (size_t)c->B * c->Sq * c->Hq * c->Dv, nc = (size_t)c->Hq * c->kernel;
    const size_t ng = nq + nk + nv + nc;
    t_rng r = t_rng_seed(2907);
    float *qf = nb_rand(&r, nq, 1.0), *kf = nb_rand(&r, nk, 1.0), *vf = nb_rand(&r, nv, 1.0), *cf = nb_rand(&r, nc, 0.3);
    float *of = nb_rand(&r, no, 1.0), *out = nb_rand(&r, no, 1.0), *ref = (float *)t_xmalloc(sizeof(float) * ng);
    float *g = (float *)t_xmalloc(sizeof(float) * ng), *g0 = (float *)t_xmalloc(sizeof(float) * ng);
    attn_tensor q = attn_tensor_dense(qf, ATTN_F32, c->B, c->Sq, c->Hq, c->D), k = attn_tensor_dense(kf, ATTN_F32, c->B, c->Sk, c->Hk, c->D);
    attn_tensor v = attn_tensor_dense(vf, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv), o = attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv);
    attn_tensor dout = attn_tensor_dense(of, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv);
    attn_tensor dq = attn_tensor_dense(g, ATTN_F32, c->B, c->Sq, c->Hq, c->D), dk = attn_tensor_dense(g + nq, ATTN_F32, c->B, c->Sk, c->Hk, c->D);
    attn_tensor dv = attn_tensor_dense(g + nq + nk, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv);
    attn_desc d = nb_desc(c, cf, g + nq + nk + nv, 2);
    size_t bytes = 0, i;
    void *ws;
    float lse[64];
    int e;
    T_CHECK(nb_lib(c, qf, kf, vf, cf, of, 2, ref) == ATTN_OK, "nystrom backward reference call");
    T_CHECK(attn_backward_workspace_size(&d, q, k, v, &bytes) == ATTN_OK && bytes > 0, "nystrom backward workspace query");
    ws = t_xmalloc(bytes);
    d.workspace = ws; d.workspace_size = bytes;
    for (i = 0; i < ng; ++i) g[i] = NAN;
    T_CHECK(attn_backward(&d, q, k, v, o, dout, NULL, dq, dk, dv) == ATTN_OK && memcmp(g, ref, sizeof(float) * ng) == 0,
            "nystrom backward with a caller workspace differs");
    /* the exact path's workspace too */
    {
        const nb_case *x = &nb_cases[8];
        attn_desc dx = nb_desc(x, cf, NULL, 1);
        size_t bx = 0;
        T_CHECK(attn_backward_workspace_size(&dx, attn_tensor_dense(qf, ATTN_F32, x->B, x->Sq, x->Hq, x->D),
                                             attn_tensor_dense(kf, ATTN_F32, x->B, x->Sk, x->Hk, x->D),
                                             attn_tensor_dense(vf, ATTN_F32, x->B, x->Sk, x->Hk, x->Dv), &bx) == ATTN_OK && bx > 0,
                "nystrom exact-path backward workspace query");
    }
    for (i = 0; i < ng; ++i) g0[i] = g[i] = 7.0f;
#define NB_UNTOUCHED(what) T_CHECK(memcmp(g, g0, sizeof(float) * ng) == 0, "nystrom backward %s: outputs written", what)
    d.workspace_size = bytes - 1;
    t_expect_status(attn_backward(&d, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_WORKSPACE, "nystrom backward", "short workspace");
    NB_UNTOUCHED("short workspace");
    d.workspace = NULL; d.workspace_size = 0;
    t_expect_status(attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv), ATTN_ERR_NYSTROM_LSE, "nystrom backward", "lse given");
    NB_UNTOUCHED("lse");
    {
        attn_desc d2 = d;
        attn_tensor bad = dk;
        d2.nystrom.conv = NULL; d2.nystrom.conv_kernel = 0;
        t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_NYSTROM_DCONV, "nystrom backward", "dconv without conv");
        NB_UNTOUCHED("dconv without conv");
        t_expect_status(attn_backward_workspace_size(&d2, q, k, v, &bytes), ATTN_ERR_NYSTROM_DCONV, "nystrom backward", "dconv query");
        d2 = d; d2.causal = 1;
        t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_NYSTROM_MASK, "nystrom backward", "causal");
        NB_UNTOUCHED("causal");
        bad.data = NULL;
        t_expect_status(attn_backward(&d, q, k, v, o, dout, NULL, dq, bad, dv), ATTN_ERR_BWD_NULL_DK, "nystrom backward", "dk NULL");
        bad = dq; bad.seq -= 1;
        t_expect_status(attn_backward(&d, q, k, v, o, dout, NULL, bad, dk, dv), ATTN_ERR_BWD_DQ_SHAPE, "nystrom backward", "dq shape");
        bad = dout; bad.data = NULL;
        t_expect_status(attn_backward(&d, q, k, v, o, bad, NULL, dq, dk, dv), ATTN_ERR_BWD_NULL_DOUT, "nystrom backward", "dout NULL");
        bad = dv; bad.stride_seq = 0;
        t_expect_status(attn_backward(&d, q, k, v, o, dout, NULL, dq, dk, bad), ATTN_ERR_BWD_DV_BROADCAST, "nystrom backward", "dv broadcast");
        d2 = d; d2.nystrom.landmarks = 5;
        t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_NYSTROM_DIVIDE, "nystrom backward", "m does not divide");
        NB_UNTOUCHED("bad input");
        {   /* nystrom.saved one float short (both calls), or overlapping an input / a gradient */
            const size_t sb = nb_saved_bytes(c);
            float *sv = (float *)t_xmalloc(sb), *o0 = (float *)t_xmalloc(sizeof(float) * no);
            memcpy(o0, out, sizeof(float) * no);
            d2 = d; d2.nystrom.saved = sv; d2.nystrom.saved_size = sb - sizeof(float);
            t_expect_status(attn_forward(&d2, q, k, v, o, NULL), ATTN_ERR_NYSTROM_SAVED_SIZE, "nystrom forward", "saved short");
            T_CHECK(memcmp(o0, out, sizeof(float) * no) == 0, "nystrom forward saved short: out written");
            t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_NYSTROM_SAVED_SIZE, "nystrom backward",
                            "saved short");
            NB_UNTOUCHED("saved short");
            d2.nystrom.saved_size = 0;
            t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_NYSTROM_SAVED_SIZE, "nystrom backward",
                            "saved without saved_size");
            d2.nystrom.saved = g; d2.nystrom.saved_size = sb;   /* the gradients' memory */
            t_expect_status(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv), ATTN_ERR_BWD_OVERLAP, "nystrom backward",
                            "saved overlaps dq");
            NB_UNTOUCHED("saved overlaps dq");
            d2.nystrom.saved = kf;   /* an input's: the forward writes it */
            t_expect_status(attn_forward(&d2, q, k, v, o, NULL), ATTN_ERR_OUT_OVERLAP, "nystrom forward", "saved overlaps k");
            T_CHECK(memcmp(o0, out, sizeof(float) * no) == 0, "nystrom forward saved overlaps k: out written");
            free(sv); free(o0);
        }
    }
#undef NB_UNTOUCHED
    {   /* the backward reads nystrom.saved (not a copy of its own): one changed entry of F changes dq */
        const size_t sb = nb_saved_bytes(c);
        float *sv = (float *)t_xmalloc(sb), *g1 = (float *)t_xmalloc(sizeof(float) * ng);
        attn_desc d2 = nb_desc(c, cf, g + nq + nk + nv, 1);
        d2.nystrom.saved = sv; d2.nystrom.saved_size = sb;
        T_CHECK(attn_forward(&d2, q, k, v, o, NULL) == ATTN_OK && attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv) == ATTN_OK,
                "nystrom saved: calls");
        memcpy(g1, g, sizeof(float) * ng);
        sv[(size_t)c->m * c->Sk] += 0.25f;   /* F [0][0] of (b 0, head 0) */
        T_CHECK(attn_backward(&d2, q, k, v, o, dout, NULL, dq, dk, dv) == ATTN_OK && memcmp(g1, g, sizeof(float) * nq) != 0,
                "nystrom saved: the backward does not read F from saved");
        free(sv); free(g1);
    }
    {   /* bf16 inputs, f16 gradients: the fp32 call on the rounded inputs, within the storage's rounding */
        attn_tensor qb = attn_tensor_dense(NULL, ATTN_BF16, c->B, c->Sq, c->Hq, c->D), kb = attn_tensor_dense(NULL, ATTN_BF16, c->B, c->Sk, c->Hk, c->D);
        attn_tensor vb = attn_tensor_dense(NULL, ATTN_BF16, c->B, c->Sk, c->Hk, c->Dv);
        attn_tensor dqh = attn_tensor_dense(NULL, ATTN_F16, c->B, c->Sq, c->Hq, c->D), dkh = attn_tensor_dense(NULL, ATTN_F16, c->B, c->Sk, c->Hk, c->D);
        attn_tensor dvh = attn_tensor_dense(NULL, ATTN_F16, c->B, c->Sk, c->Hk, c->Dv);
        double err = 0.0, mx = 0.0;
        int b, t, h;
        qb.data = t_xmalloc(nq * 2); kb.data = t_xmalloc(nk * 2); vb.data = t_xmalloc(nv * 2);
        dqh.data = t_xmalloc(nq * 2); dkh.data = t_xmalloc(nk * 2); dvh.data = t_xmalloc(nv * 2);
        for (b = 0; b < c->B; ++b) {   /* round the inputs to bf16 (the fp32 call then sees the same values) */
            for (t = 0; t < c->Sq; ++t) for (h = 0; h < c->Hq; ++h) for (e = 0; e < c->D; ++e) {
                t_store(&qb, b, t, h, e, t_load(&q, b, t, h, e)); t_store(&q, b, t, h, e, t_load(&qb, b, t, h, e));
            }
            for (t = 0; t < c->Sk; ++t) for (h = 0; h < c->Hk; ++h) {
                for (e = 0; e < c->D; ++e) { t_store(&kb, b, t, h, e, t_load(&k, b, t, h, e)); t_store(&k, b, t, h, e, t_load(&kb, b, t, h, e)); }
                for (e = 0; e < c->Dv; ++e) { t_store(&vb, b, t, h, e, t_load(&v, b, t, h, e)); t_store(&v, b, t, h, e, t_load(&vb, b, t, h, e)); }
            }
        }
        T_CHECK(nb_lib(c, qf, kf, vf, cf, of, 1, ref) == ATTN_OK, "nystrom backward fp32 on rounded inputs");
        d = nb_desc(c, cf, g + nq + nk + nv, 3);
        T_CHECK(attn_backward(&d, qb, kb, vb, o, dout, NULL, dqh, dkh, dvh) == ATTN_OK, "nystrom backward bf16 -> f16");
        for (i = 0; i < nq + nk + nv; ++i) {
            const attn_tensor *tt = i < nq ? &dqh : i < nq + nk ? &dkh : &dvh;
            const size_t j = i < nq ? i : i < nq + nk ? i - nq : i - nq - nk;
            const double got = t_load_at(tt->data, tt->dtype, (ptrdiff_t)j);   /* dense: flat index j */
            mx = fmax(mx, fabs(ref[i]));
            err = fmax(err, fabs(got - ref[i]));
        }
        T_CHECK(err <= 2e-3 * mx, "nystrom backward bf16 storage: err %.3g (max %.3g)", err, mx);
        free(qb.data); free(kb.data); free(vb.data); free(dqh.data); free(dkh.data); free(dvh.data);
    }
    free(ws); free(qf); free(kf); free(vf); free(cf); free(of); free(out); free(ref); free(g); free(g0);
}

/* fp32 gradients that are not dense [B, S, H, D] (rows padded by 3 floats; or [B, H, S, D]) are
   accumulated in place as the dense ones: the same bits, the padding untouched; per-head and
   batch Z0, with and without a conv */
static void nb_strided_grads(const nb_case *c, int heads_major, t_rng *r) {
    const size_t nq = (size_t)c->B * c->Sq * c->Hq * c->D, nk = (size_t)c->B * c->Sk * c->Hk * c->D;
    const size_t nv = (size_t)c->B * c->Sk * c->Hk * c->Dv, no = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    const size_t nc = (size_t)c->Hq * c->kernel, ng = nq + nk + nv + nc;
    const int S[3] = { c->Sq, c->Sk, c->Sk }, H[3] = { c->Hq, c->Hk, c->Hk }, Dx[3] = { c->D, c->D, c->Dv };
    float *qf = nb_rand(r, nq, 1.0), *kf = nb_rand(r, nk, 1.0), *vf = nb_rand(r, nv, 1.0), *cf = nb_rand(r, nc + 1, 0.3);
    float *of = nb_rand(r, no, 1.0), *out = (float *)t_xmalloc(sizeof(float) * no), *ref = (float *)t_xmalloc(sizeof(float) * ng);
    float *dc = (float *)t_xmalloc(sizeof(float) * (nc + 1)), *buf[3];
    attn_tensor gt[3];
    attn_desc d = nb_desc(c, cf, c->kernel ? dc : NULL, 2);
    size_t len[3], i;
    int x, b, t, h, e, bad = 0;
    T_CHECK(nb_lib(c, qf, kf, vf, cf, of, 2, ref) == ATTN_OK, "nystrom strided gradients (%s): dense call", c->name);
    for (x = 0; x < 3; ++x) {
        const ptrdiff_t row = heads_major ? Dx[x] : (ptrdiff_t)H[x] * Dx[x] + 3;
        len[x] = (size_t)c->B * S[x] * (heads_major ? (size_t)H[x] * Dx[x] : (size_t)row);
        buf[x] = (float *)t_xmalloc(sizeof(float) * len[x]);
        for (i = 0; i < len[x]; ++i) buf[x][i] = 7.0f;
        gt[x] = attn_tensor_dense(buf[x], ATTN_F32, c->B, S[x], H[x], Dx[x]);
        gt[x].stride_seq = row; gt[x].stride_head = heads_major ? (ptrdiff_t)S[x] * Dx[x] : Dx[x];
        gt[x].stride_batch = (ptrdiff_t)(len[x] / (size_t)c->B);
    }
    T_CHECK(attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, c->B, c->Sq, c->Hq, c->D), attn_tensor_dense(kf, ATTN_F32, c->B, c->Sk, c->Hk, c->D),
                         attn_tensor_dense(vf, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv), attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv), NULL) == ATTN_OK &&
            attn_backward(&d, attn_tensor_dense(qf, ATTN_F32, c->B, c->Sq, c->Hq, c->D), attn_tensor_dense(kf, ATTN_F32, c->B, c->Sk, c->Hk, c->D),
                          attn_tensor_dense(vf, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv), attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv),
                          attn_tensor_dense(of, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv), NULL, gt[0], gt[1], gt[2]) == ATTN_OK,
            "nystrom strided gradients (%s): calls", c->name);
    for (x = 0, i = 0; x < 3; ++x) {
        size_t pad = 0, j;
        for (b = 0; b < c->B; ++b) for (t = 0; t < S[x]; ++t) for (h = 0; h < H[x]; ++h) for (e = 0; e < Dx[x]; ++e, ++i)
            bad += t_load(&gt[x], b, t, h, e) != ref[i];   /* the dense call's bits, in its flat order */
        for (j = 0; j < len[x]; ++j) pad += buf[x][j] == 7.0f;
        bad += !heads_major && pad != (size_t)c->B * S[x] * 3;   /* every padding float untouched */
    }
    for (i = 0; i < nc; ++i) bad += dc[i] != ref[nq + nk + nv + i];
    T_CHECK(bad == 0, "nystrom strided gradients (%s, %s): %d entries differ from the dense call", c->name,
            heads_major ? "[B, H, S, D]" : "padded rows", bad);
    for (x = 0; x < 3; ++x) free(buf[x]);
    free(qf); free(kf); free(vf); free(cf); free(of); free(out); free(ref); free(dc);
}

/* ---- allocations: none with a caller workspace of the queried size, one block without -------- */

/* packed (cu_seqlens, batch 1) variants: segments of 4 (landmarks = rows: the exact path), 7, 0, 19 */
static const int nb_cu[5] = { 0, 4, 11, 11, 30 };
static const nb_case nb_packed[] = {
    { 1, 30, 30, 2, 1, 4, 3, 4, 6, 1, 0, 1, 5, NULL, NULL, "packed: pad 1, batch Z0, GQA, conv" },
    { 1, 30, 30, 2, 2, 4, 3, 4, 3, 1, 1, 0, 0, NULL, NULL, "packed: HF rule, pad 1, 3 iterations" },
};

/* attn_forward then attn_backward of case c (packed along nb_cu when packed) on `threads`
   threads: without a workspace (at most one ATTN_MALLOC each), with one of exactly the queried
   size (none, the same bits; the block starts as NaN garbage), and one byte short
   (ATTN_ERR_WORKSPACE, out and every gradient untouched). */
static void nb_ws_case(const nb_case *c, int packed, int threads, t_rng *r) {
    const size_t nq = (size_t)c->B * c->Sq * c->Hq * c->D, nk = (size_t)c->B * c->Sk * c->Hk * c->D;
    const size_t nv = (size_t)c->B * c->Sk * c->Hk * c->Dv, no = (size_t)c->B * c->Sq * c->Hq * c->Dv;
    const size_t ng = nq + nk + nv + (size_t)c->Hq * c->kernel;
    float *qf = nb_rand(r, nq, 1.0), *kf = nb_rand(r, nk, 1.0), *vf = nb_rand(r, nv, 1.0), *cf = nb_rand(r, (size_t)c->Hq * c->kernel, 0.3);
    float *of = nb_rand(r, no, 1.0), *out = (float *)t_xmalloc(sizeof(float) * no), *out0 = (float *)t_xmalloc(sizeof(float) * no);
    float *g = (float *)t_xmalloc(sizeof(float) * ng), *g0 = (float *)t_xmalloc(sizeof(float) * ng);
    const attn_tensor q = attn_tensor_dense(qf, ATTN_F32, c->B, c->Sq, c->Hq, c->D), k = attn_tensor_dense(kf, ATTN_F32, c->B, c->Sk, c->Hk, c->D);
    const attn_tensor v = attn_tensor_dense(vf, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv), o = attn_tensor_dense(out, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv);
    const attn_tensor dout = attn_tensor_dense(of, ATTN_F32, c->B, c->Sq, c->Hq, c->Dv);
    const attn_tensor dq = attn_tensor_dense(g, ATTN_F32, c->B, c->Sq, c->Hq, c->D);
    const attn_tensor dk = attn_tensor_dense(g + nq, ATTN_F32, c->B, c->Sk, c->Hk, c->D);
    const attn_tensor dv = attn_tensor_dense(g + nq + nk, ATTN_F32, c->B, c->Sk, c->Hk, c->Dv);
    attn_desc d = nb_desc(c, cf, c->kernel ? g + nq + nk + nv : NULL, threads);
    size_t bytes = 0, m0, i;
    attn_status st;
    int bwd;
    void *ws;
    if (packed) { d.cu_seqlens_q = d.cu_seqlens_k = nb_cu; d.varlen_batch = 4; }
    for (i = 0; i < ng; ++i) g[i] = 0.0f;
    st = attn_forward(&d, q, k, v, o, NULL);   /* the warm-up (the first threaded call may start the shared pool) */
    if (!T_CHECK(st == ATTN_OK, "nystrom workspace (%s): forward %s", c->name, attn_status_str(st))) goto done;
    memcpy(out0, out, sizeof(float) * no);
    for (bwd = 0; bwd < 2; ++bwd) {
        const char *op = bwd ? "attn_backward" : "attn_forward";
        float *res = bwd ? g : out, *ref = bwd ? g0 : out0;
        const size_t n = bwd ? ng : no;
#define NB_CALL(dd) (bwd ? attn_backward(&(dd), q, k, v, o, dout, NULL, dq, dk, dv) : attn_forward(&(dd), q, k, v, o, NULL))
        m0 = t_attn_mallocs;
        st = NB_CALL(d);
        m0 = t_attn_mallocs - m0;
        if (!T_CHECK(st == ATTN_OK, "nystrom workspace (%s): %s %s", c->name, op, attn_status_str(st))) break;
        T_CHECK(m0 <= 1, "nystrom %s (%s, %d threads) without a workspace: %lu ATTN_MALLOC calls, want at most 1", op, c->name,
                threads, (unsigned long)m0);
        if (!bwd) T_CHECK(memcmp(out, out0, sizeof(float) * no) == 0, "nystrom forward (%s): a second call differs", c->name);
        memcpy(ref, res, sizeof(float) * n);
        st = bwd ? attn_backward_workspace_size(&d, q, k, v, &bytes) : attn_workspace_size(&d, q, k, v, &bytes);
        if (!T_CHECK(st == ATTN_OK && bytes > 0, "nystrom %s (%s) workspace query: %s", op, c->name, attn_status_str(st))) break;
        ws = t_xmalloc(bytes);
        memset(ws, 0xFF, bytes);   /* NaN garbage: the kernel must not read what it did not write */
        d.workspace = ws; d.workspace_size = bytes;
        t_sentinel(res, sizeof(float) * n, 3);
        m0 = t_attn_mallocs;
        st = NB_CALL(d);
        m0 = t_attn_mallocs - m0;
        if (T_CHECK(st == ATTN_OK, "nystrom %s (%s) with a caller workspace: %s", op, c->name, attn_status_str(st))) {
            T_CHECK(m0 == 0, "nystrom %s (%s, %d threads) with a workspace of the queried %lu bytes: %lu ATTN_MALLOC calls", op,
                    c->name, threads, (unsigned long)bytes, (unsigned long)m0);
            T_CHECK(memcmp(res, ref, sizeof(float) * n) == 0, "nystrom %s (%s, %d threads): a caller workspace changes the bits", op,
                    c->name, threads);
        }
        d.workspace_size = bytes - 1;
        t_sentinel(res, sizeof(float) * n, 4);
        t_expect_status(NB_CALL(d), ATTN_ERR_WORKSPACE, "nystrom workspace one byte short", op);
        T_CHECK(t_sentinel_ok(res, sizeof(float) * n, 4), "nystrom %s (%s): a short workspace wrote the outputs", op, c->name);
        d.workspace = NULL; d.workspace_size = 0;
        free(ws);
        memcpy(out, out0, sizeof(float) * no);   /* the backward's out */
#undef NB_CALL
    }
done:
    free(qf); free(kf); free(vf); free(cf); free(of); free(out); free(out0); free(g); free(g0);
}

static void nb_workspace(void) {
    t_rng r = t_rng_seed(2908);
    size_t i;
    int th;
    for (th = 1; th <= 3; th += 2) {
        for (i = 0; i < sizeof nb_cases / sizeof nb_cases[0]; ++i) nb_ws_case(&nb_cases[i], 0, th, &r);
        for (i = 0; i < sizeof nb_big / sizeof nb_big[0]; ++i) nb_ws_case(&nb_big[i], 0, th, &r);
        for (i = 0; i < sizeof nb_packed / sizeof nb_packed[0]; ++i) nb_ws_case(&nb_packed[i], 1, th, &r);
    }
}

/* ---- fixtures: torch autograd of the upstream modules ----------------------------------------- */

/* array `name` of fixture `file` (exactly want values) in a malloc'd array, or NULL */
static double *nb_next(const char *file, const char *name, size_t want) {
    double *v = (double *)t_xmalloc(sizeof(double) * (want ? want : 1));
    if (!T_FIXTURE(file, name, v, want)) { free(v); return NULL; }
    return v;
}
static float *nb_f32(const double *x, size_t n) {
    float *y = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) y[i] = (float)x[i];
    return y;
}

/* One variant of a fixture: attn_forward and attn_backward (desc d, dense [B, n, H, D] tensors,
   dconv [H][K]) against the arrays <prefix>_out, _dq, _dk, _dv, _dconv of the fixture: each
   within 1e-4 of its largest magnitude. Returns the worst such relative error (-1: unreadable). */
static double nb_fx_variant(const char *file, const char *prefix, attn_desc d, int B, int n, int H, int D, int K,
                            const double *q, const double *k, const double *v, const double *conv, const double *dout) {
    const size_t N = (size_t)B * n * H * D, sizes[5] = { N, N, N, N, (size_t)H * K };
    const char *parts[5] = { "out", "dq", "dk", "dv", "dconv" };
    float *qf = nb_f32(q, N), *kf = nb_f32(k, N), *vf = nb_f32(v, N), *cf = nb_f32(conv, (size_t)H * K), *of = nb_f32(dout, N);
    float *got[5];
    double worst = 0.0;
    int p;
    attn_status s;
    for (p = 0; p < 5; ++p) got[p] = (float *)t_xmalloc(sizeof(float) * sizes[p]);
    d.nystrom.conv = cf; d.nystrom.conv_kernel = K; d.nystrom.dconv = got[4];
    s = attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, n, H, D), attn_tensor_dense(kf, ATTN_F32, B, n, H, D),
                     attn_tensor_dense(vf, ATTN_F32, B, n, H, D), attn_tensor_dense(got[0], ATTN_F32, B, n, H, D), NULL);
    if (s == ATTN_OK)
        s = attn_backward(&d, attn_tensor_dense(qf, ATTN_F32, B, n, H, D), attn_tensor_dense(kf, ATTN_F32, B, n, H, D),
                          attn_tensor_dense(vf, ATTN_F32, B, n, H, D), attn_tensor_dense(got[0], ATTN_F32, B, n, H, D),
                          attn_tensor_dense(of, ATTN_F32, B, n, H, D), NULL, attn_tensor_dense(got[1], ATTN_F32, B, n, H, D),
                          attn_tensor_dense(got[2], ATTN_F32, B, n, H, D), attn_tensor_dense(got[3], ATTN_F32, B, n, H, D));
    T_CHECK(s == ATTN_OK, "%s %s: %s", file, prefix, attn_status_str(s));
    for (p = 0; p < 5; ++p) {
        char name[64];
        double *ref, mx = 0.0, err = 0.0;
        size_t i;
        snprintf(name, sizeof name, "%s_%s", prefix, parts[p]);
        ref = nb_next(file, name, sizes[p]);
        if (!T_CHECK(ref != NULL, "fixture %s: array %s missing or malformed", file, name)) { worst = -1.0; break; }
        for (i = 0; i < sizes[p]; ++i) {
            mx = fmax(mx, fabs(ref[i]));
            err = fabs(got[p][i] - ref[i]) <= err ? err : got[p][i] != got[p][i] ? INFINITY : fabs(got[p][i] - ref[i]);
        }
        T_CHECK(err <= 1e-4 * mx, "%s %s: %s vs torch autograd: max |diff| %.3g, max |ref| %.3g", file, prefix, parts[p], err, mx);
        worst = fmax(worst, err / fmax(mx, 1e-30));
        free(ref);
    }
    for (p = 0; p < 5; ++p) free(got[p]);
    free(qf); free(kf); free(vf); free(cf); free(of);
    return worst;
}

/* tests/fixtures/nystromformer_hf_bwd.py: Hugging Face's NystromformerSelfAttention; variants hf
   (padding_rule HF, pinv_init BATCH), orig (q, k, v masked: rule ZERO, BATCH), perhead (HF,
   PER_HEAD), exact (landmarks = seq: HF's softmax shortcut, rule HF) */
static void nb_fixture_hf(void) {
    const char *file = "nystromformer_hf_bwd.txt";
    double *dims, *lensd, *lens2d, *q, *k, *v, *conv, *dout, *q2, *k2, *v2, *dout2, w[4];
    int B, n, H, D, m, K, n2, lens[8], lens2[8], b, i;
    size_t N, N2;
    dims = nb_next(file, "dims", 7);
    if (!T_CHECK(dims != NULL, "cannot read tests/fixtures/%s (run from the repository root, or set ATTN_FIXTURES)", file)) return;
    if (!T_CHECK(dims != NULL && dims[0] <= 8, "fixture %s: dims", file)) { free(dims); return; }
    B = (int)dims[0]; n = (int)dims[1]; H = (int)dims[2]; D = (int)dims[3]; m = (int)dims[4]; K = (int)dims[5]; n2 = (int)dims[6];
    N = (size_t)B * n * H * D; N2 = (size_t)B * n2 * H * D;
    lensd = nb_next(file, "lens", (size_t)B); lens2d = nb_next(file, "lens2", (size_t)B);
    q = nb_next(file, "q", N); k = nb_next(file, "k", N); v = nb_next(file, "v", N);
    conv = nb_next(file, "conv", (size_t)H * K); dout = nb_next(file, "dout", N);
    q2 = nb_next(file, "q2", N2); k2 = nb_next(file, "k2", N2); v2 = nb_next(file, "v2", N2); dout2 = nb_next(file, "dout2", N2);
    if (T_CHECK(lensd && lens2d && q && k && v && conv && dout && q2 && k2 && v2 && dout2, "fixture %s: malformed", file)) {
        for (b = 0; b < B; ++b) { lens[b] = (int)lensd[b]; lens2[b] = (int)lens2d[b]; }
        for (i = 0; i < 4; ++i) {
            attn_desc d;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_NYSTROM; d.nystrom.landmarks = i == 3 ? n2 : m;
            d.nystrom.padding_rule = i == 1 ? ATTN_NYSTROM_PADDING_ZERO : ATTN_NYSTROM_PADDING_HF;
            d.nystrom.pinv_init = i == 2 ? ATTN_NYSTROM_PINV_PER_HEAD : ATTN_NYSTROM_PINV_BATCH;
            d.seqlens_k = i == 3 ? lens2 : lens; d.n_threads = 2;
            w[i] = i == 3 ? nb_fx_variant(file, "exact", d, B, n2, H, D, K, q2, k2, v2, conv, dout2)
                          : nb_fx_variant(file, i == 0 ? "hf" : i == 1 ? "orig" : "perhead", d, B, n, H, D, K, q, k, v, conv, dout);
            if (w[i] < 0) break;
        }
        if (i == 4)
            printf("     nystrom backward vs HF autograd (B %d, n %d, H %d, d %d, m %d, conv %d), max |diff| / max |ref|:\n"
                   "       HF rule %.2g, original code (zero rule) %.2g, per-head Z0 %.2g, m = n %.2g\n", B, n, H, D, m, K, w[0], w[1], w[2], w[3]);
    }
    free(dims); free(lensd); free(lens2d); free(q); free(k); free(v); free(conv); free(dout); free(q2); free(k2); free(v2); free(dout2);
}

/* tests/fixtures/nystrom_attention_lucidrains_bwd.py: nystrom-attention's NystromAttention (front
   padding), padding_rule LUCIDRAINS + pinv_init BATCH, without and with the mask (seqlens_k) */
static void nb_fixture_lucidrains(void) {
    const char *file = "nystrom_attention_lucidrains_bwd.txt";
    double *dims, *lensd, *q, *k, *v, *conv, *dout, w[2];
    int B, n, H, D, m, K, lens[8], b, i;
    size_t N;
    dims = nb_next(file, "dims", 6);
    if (!T_CHECK(dims != NULL, "cannot read tests/fixtures/%s (run from the repository root, or set ATTN_FIXTURES)", file)) return;
    if (!T_CHECK(dims != NULL && dims[0] <= 8, "fixture %s: dims", file)) { free(dims); return; }
    B = (int)dims[0]; n = (int)dims[1]; H = (int)dims[2]; D = (int)dims[3]; m = (int)dims[4]; K = (int)dims[5];
    N = (size_t)B * n * H * D;
    lensd = nb_next(file, "lens", (size_t)B);
    q = nb_next(file, "q", N); k = nb_next(file, "k", N); v = nb_next(file, "v", N);
    conv = nb_next(file, "conv", (size_t)H * K); dout = nb_next(file, "dout", N);
    if (T_CHECK(lensd && q && k && v && conv && dout, "fixture %s: malformed", file)) {
        for (b = 0; b < B; ++b) lens[b] = (int)lensd[b];
        for (i = 0; i < 2; ++i) {
            attn_desc d;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_NYSTROM; d.nystrom.landmarks = m;
            d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_LUCIDRAINS; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;
            d.seqlens_k = i ? lens : NULL; d.n_threads = 3;
            w[i] = nb_fx_variant(file, i ? "mask" : "nomask", d, B, n, H, D, K, q, k, v, conv, dout);
            if (w[i] < 0) break;
        }
        if (i == 2)
            printf("     nystrom backward vs nystrom-attention autograd (B %d, n %d, H %d, d %d, m %d, conv %d), max |diff| / max |ref|:"
                   " no mask %.2g, mask %.2g\n", B, n, H, D, m, K, w[0], w[1]);
    }
    free(dims); free(lensd); free(q); free(k); free(v); free(conv); free(dout);
}

void test_nystrom_bwd(void) {
    t_rng r = t_rng_seed(2906);
    size_t i;
    for (i = 0; i < sizeof nb_cases / sizeof nb_cases[0]; ++i) nb_fd_case(&nb_cases[i], &r, 0);
    for (i = 0; i < sizeof nb_big / sizeof nb_big[0]; ++i) nb_fd_case(&nb_big[i], &r, T_QUICK ? 4 : 12);
    printf("     nystrom backward vs finite differences (%d cases): largest max|err| / max|grad| %.2g\n",
           (int)(sizeof nb_cases / sizeof nb_cases[0] + sizeof nb_big / sizeof nb_big[0]), nb_worst);
    nb_contract();
    for (i = 0; i < 4; ++i) nb_strided_grads(&nb_cases[i], (int)(i & 1), &r);   /* GQA, batch Z0, HF rule, seqlens */
    nb_workspace();
    nb_fixture_hf();
    nb_fixture_lucidrains();
    t_packed_nystrom();
}
