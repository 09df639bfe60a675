/* tests/test_lowrank.c - low-rank attention: Linformer (ATTN_LINFORMER) and Nystromformer
   (ATTN_NYSTROM, attn_nystrom_pinv), against naive double-precision references written from
   ZOO.md's equations (nothing shared with attn.h), plus the properties of issue 19:
   Linformer with E = F = I (k = n) == exact attention; Nystrom with landmarks = n == exact
   attention; Nystrom on segment-constant inputs == exact attention (the general path:
   landmarks, three softmaxes, pseudo-inverse); the pseudo-inverse iteration converges to a
   double-precision inverse; thread counts 1/2/3 bitwise equal; f16/bf16 storage; strided
   views; workspace; every error path with outputs untouched. */
#include "test.h"
#include <float.h>
#include "fixture.h"
#include "ref_backward.h"

/* ---- references (double) ---------------------------------------------------------------- */

/* softmax attention of rows: out[i] = sum_j p_ij v_j, p = softmax(scale q_i.k_j (softcap)) */
static void r_attn(const double *Q, int Sq, const double *K, int Sk, const double *V, int D, int Dv, double scale,
                   double softcap, double *out, double *lse) {
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
    int i, j, c;
    for (i = 0; i < Sq; ++i) {
        double mx = -INFINITY, sum = 0.0;
        for (j = 0; j < Sk; ++j) {
            double a = 0.0;
            for (c = 0; c < D; ++c) a += Q[(size_t)i * D + c] * K[(size_t)j * D + c];
            a *= scale;
            if (softcap > 0.0) a = softcap * tanh(a / softcap);
            s[j] = a; if (a > mx) mx = a;
        }
        for (j = 0; j < Sk; ++j) { s[j] = exp(s[j] - mx); sum += s[j]; }
        for (c = 0; c < Dv; ++c) {
            double a = 0.0;
            for (j = 0; j < Sk; ++j) a += s[j] * V[(size_t)j * Dv + c];
            out[(size_t)i * Dv + c] = a / sum;
        }
        if (lse) lse[i] = mx + log(sum);
    }
    free(s);
}

/* rows (b, ., h) of a tensor as a dense double [seq][dim] matrix */
static double *r_rows(const attn_tensor *t, int b, int h) {
    double *x = (double *)t_xmalloc(sizeof(double) * (size_t)t->seq * (size_t)t->dim);
    int i, c;
    for (i = 0; i < t->seq; ++i)
        for (c = 0; c < t->dim; ++c) x[(size_t)i * t->dim + c] = t_load(t, b, i, h, c);
    return x;
}

/* key j of batch b is valid (not padding): j < seqlens_k[b] */
static int t_lin_valid(const attn_desc *d, int b, int j) { return !d->seqlens_k || j < d->seqlens_k[b]; }

static double r_scale(const attn_desc *d, int D) { return d->scale != 0.0f ? (double)d->scale : 1.0 / sqrt((double)D); }

/* Linformer: out [B][Sq][Hq][Dv], lse [B][Hq][Sq] (ZOO: head = softmax(Q (E K)^T / sqrt d) (F V));
   padding: keys j >= seqlens_k[b] are zeroed before the projection (they add nothing), query rows
   i >= seqlens_q[b] are 0 with lse -inf. */
static void r_linformer(const attn_desc *d, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                        double *out, double *lse) {
    const attn_linformer_params *L = &d->linformer;
    const int B = q->batch, Sq = q->seq, Sk = k->seq, Hq = q->heads, Hk = k->heads, D = q->dim, Dv = v->dim;
    const int g = Hq / Hk, kp = L->k, n = L->n;
    double *Kp = (double *)t_xmalloc(sizeof(double) * (size_t)kp * D), *Vp = (double *)t_xmalloc(sizeof(double) * (size_t)kp * Dv);
    double *o = (double *)t_xmalloc(sizeof(double) * (size_t)Sq * Dv);
    int b, h, i, j, c;
    for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h) {
            const int hk = h / g;
            const float *E = L->e + (L->shared_heads ? 0 : (size_t)hk * kp * n);
            const float *F = (L->shared_kv ? L->e : L->f) + (L->shared_heads ? 0 : (size_t)hk * kp * n);
            double *Q = r_rows(q, b, h), *K = r_rows(k, b, hk), *V = r_rows(v, b, hk), *ls = NULL;
            const int Lq = d->seqlens_q ? d->seqlens_q[b] : Sq;
            for (i = 0; i < kp; ++i) {
                for (c = 0; c < D; ++c) {
                    double a = 0.0;
                    for (j = 0; j < Sk; ++j) a += (double)E[(size_t)i * n + j] * (t_lin_valid(d, b, j) ? K[(size_t)j * D + c] : 0.0);
                    Kp[(size_t)i * D + c] = a;
                }
                for (c = 0; c < Dv; ++c) {
                    double a = 0.0;
                    for (j = 0; j < Sk; ++j) a += (double)F[(size_t)i * n + j] * (t_lin_valid(d, b, j) ? V[(size_t)j * Dv + c] : 0.0);
                    Vp[(size_t)i * Dv + c] = a;
                }
            }
            if (lse) ls = lse + ((size_t)b * Hq + h) * Sq;
            r_attn(Q, Sq, Kp, kp, Vp, D, Dv, r_scale(d, D), d->softcap, o, ls);
            for (i = 0; i < Sq; ++i) {
                for (c = 0; c < Dv; ++c) out[(((size_t)b * Sq + i) * Hq + h) * Dv + c] = i < Lq ? o[(size_t)i * Dv + c] : 0.0;
                if (ls && i >= Lq) ls[i] = -INFINITY;
            }
            free(Q); free(K); free(V);
        }
    free(Kp); free(Vp); free(o);
}

/* plain matrix product C [m][n] = A [m][k] B [k][n] (also test_nystrom_bwd.c's) */
void r_mm(const double *A, const double *Bm, double *C, int m, int k, int n) {
    int i, j, p;
    for (i = 0; i < m; ++i)
        for (j = 0; j < n; ++j) {
            double a = 0.0;
            for (p = 0; p < k; ++p) a += A[(size_t)i * k + p] * Bm[(size_t)p * n + j];
            C[(size_t)i * n + j] = a;
        }
}

/* A's largest column sum (also test_nystrom_bwd.c's) */
double r_colmax(const double *A, int m) {
    double mx = -INFINITY;
    int i, j;
    for (j = 0; j < m; ++j) {
        double s = 0.0;
        for (i = 0; i < m; ++i) s += A[(size_t)i * m + j];
        if (s > mx) mx = s;
    }
    return mx;
}

/* ZOO's pseudo-inverse iteration in double: Z0 = A^T / mx (0: A's largest column sum), iters steps */
static void r_pinv_iter(const double *A, int m, int iters, double mx, double *Z) {
    const size_t mm = (size_t)m * m;
    double *AZ = (double *)t_xmalloc(sizeof(double) * mm * 3), *T = AZ + mm, *U = T + mm;
    int i, j, it;
    if (mx == 0.0) mx = r_colmax(A, m);
    for (i = 0; i < m; ++i)
        for (j = 0; j < m; ++j) Z[(size_t)i * m + j] = A[(size_t)j * m + i] / mx;
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

/* row-wise softmax of S [r][c] times scale, in place */
static void r_softmax_rows(double *S, int r, int c, double scale) {
    int i, j;
    for (i = 0; i < r; ++i) {
        double *s = S + (size_t)i * c, mx = -INFINITY, sum = 0.0;
        for (j = 0; j < c; ++j) { s[j] *= scale; if (s[j] > mx) mx = s[j]; }
        for (j = 0; j < c; ++j) { s[j] = exp(s[j] - mx); sum += s[j]; }
        for (j = 0; j < c; ++j) s[j] /= sum;
    }
}

/* segment-mean landmarks [m][D] of X [S][D], segment length l = ceil(S/m), padding zeros counted */
static double *r_landmarks(const double *X, int S, int D, int m) {
    const int l = (S + m - 1) / m;
    double *L = (double *)t_xmalloc(sizeof(double) * (size_t)m * D);
    int j, r, c;
    for (j = 0; j < m; ++j)
        for (c = 0; c < D; ++c) {
            double a = 0.0;
            for (r = j * l; r < (j + 1) * l && r < S; ++r) a += X[(size_t)r * D + c];
            L[(size_t)j * D + c] = a / l;
        }
    return L;
}

/* nystrom-attention's forward (NystromAttention), literally, in double: front zero padding to
   m*l, optional mask (from seqlens_k; the queries' from seqlens_q or, self-attention, seqlens_k)
   zeroing q, k, v; masked landmark means; masked_fill of -DBL_MAX (every entry masked: uniform);
   out = softmax1 pinv(softmax2) (softmax3 V) + conv(V) on the padded positions; the last S rows,
   rows past Lq set to 0. pinv's Z0: the column-sum max per (b, h) or over every (b, h) (gmax). */
static void r_nystrom_luc(const attn_desc *d, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, double *out) {
    const attn_nystrom_params *N = &d->nystrom;
    const int B = q->batch, Sq = q->seq, Sk = k->seq, Hq = q->heads, Hk = k->heads, D = q->dim, Dv = v->dim;
    const int g = Hq / Hk, m = N->landmarks ? N->landmarks : 64, iters = N->iterations ? N->iterations : 6, ks = N->conv_kernel;
    const int lq = (Sq + m - 1) / m, lk = (Sk + m - 1) / m, nq = m * lq, nk = m * lk, pq = nq - Sq, pk = nk - Sk;
    const int masked = d->seqlens_k != NULL;
    const double sc = r_scale(d, D), NEG = -DBL_MAX;
    double gmax = -INFINITY;
    int pass, b, h, i, j, c;
    for (pass = N->pinv_init == ATTN_NYSTROM_PINV_BATCH ? 0 : 1; pass < 2; ++pass)
      for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h) {
            const int Lk = d->seqlens_k ? d->seqlens_k[b] : Sk;
            const int Lq = d->seqlens_q ? d->seqlens_q[b] : Sq == Sk && d->seqlens_k ? Lk : Sq;
            double *Q0 = r_rows(q, b, h), *K0 = r_rows(k, b, h / g), *V0 = r_rows(v, b, h / g);
            double *Q = (double *)calloc((size_t)nq * D, sizeof(double)), *K = (double *)calloc((size_t)nk * D, sizeof(double));
            double *V = (double *)calloc((size_t)nk * Dv, sizeof(double));
            int *mq = (int *)t_xmalloc(sizeof(int) * (size_t)nq), *mk = (int *)t_xmalloc(sizeof(int) * (size_t)nk);
            int *lmq = (int *)t_xmalloc(sizeof(int) * (size_t)m), *lmk = (int *)t_xmalloc(sizeof(int) * (size_t)m);
            double *Ql = (double *)calloc((size_t)m * D, sizeof(double)), *Kl = (double *)calloc((size_t)m * D, sizeof(double));
            double *S1 = (double *)t_xmalloc(sizeof(double) * (size_t)nq * m), *S2 = (double *)t_xmalloc(sizeof(double) * (size_t)m * m);
            double *S3 = (double *)t_xmalloc(sizeof(double) * (size_t)m * nk), *Z = (double *)t_xmalloc(sizeof(double) * (size_t)m * m);
            double *BV = (double *)t_xmalloc(sizeof(double) * (size_t)m * Dv), *W = (double *)t_xmalloc(sizeof(double) * (size_t)m * Dv);
            double *O = (double *)t_xmalloc(sizeof(double) * (size_t)nq * Dv);
            /* padded, masked tensors: position t holds row t - p */
            for (i = 0; i < nq; ++i) {
                mq[i] = i >= pq && i - pq < Lq;
                if (mq[i]) for (c = 0; c < D; ++c) Q[(size_t)i * D + c] = Q0[(size_t)(i - pq) * D + c];
            }
            for (i = 0; i < nk; ++i) {
                mk[i] = i >= pk && i - pk < Lk;
                if (mk[i]) {
                    for (c = 0; c < D; ++c) K[(size_t)i * D + c] = K0[(size_t)(i - pk) * D + c];
                    for (c = 0; c < Dv; ++c) V[(size_t)i * Dv + c] = V0[(size_t)(i - pk) * Dv + c];
                }
            }
            if (!masked) for (i = 0; i < nq; ++i) mq[i] = 1;   /* no mask: the front zeros are tokens */
            if (!masked) for (i = 0; i < nk; ++i) mk[i] = 1;
            for (j = 0; j < m; ++j) {   /* landmarks: sums over l, divided by l or the mask's count */
                int cq = 0, ck = 0;
                for (i = j * lq; i < (j + 1) * lq; ++i) { cq += mq[i]; for (c = 0; c < D; ++c) Ql[(size_t)j * D + c] += Q[(size_t)i * D + c]; }
                for (i = j * lk; i < (j + 1) * lk; ++i) { ck += mk[i]; for (c = 0; c < D; ++c) Kl[(size_t)j * D + c] += K[(size_t)i * D + c]; }
                for (c = 0; c < D; ++c) {
                    Ql[(size_t)j * D + c] /= masked ? cq + 1e-8 : lq;
                    Kl[(size_t)j * D + c] /= masked ? ck + 1e-8 : lk;
                }
                lmq[j] = !masked || cq > 0; lmk[j] = !masked || ck > 0;
            }
            for (i = 0; i < nq; ++i)
                for (j = 0; j < m; ++j) {
                    double a = 0.0;
                    for (c = 0; c < D; ++c) a += Q[(size_t)i * D + c] * Kl[(size_t)j * D + c];
                    S1[(size_t)i * m + j] = mq[i] && lmk[j] ? a * sc : NEG;
                }
            for (i = 0; i < m; ++i)
                for (j = 0; j < m; ++j) {
                    double a = 0.0;
                    for (c = 0; c < D; ++c) a += Ql[(size_t)i * D + c] * Kl[(size_t)j * D + c];
                    S2[(size_t)i * m + j] = lmq[i] && lmk[j] ? a * sc : NEG;
                }
            for (i = 0; i < m; ++i)
                for (j = 0; j < nk; ++j) {
                    double a = 0.0;
                    for (c = 0; c < D; ++c) a += Ql[(size_t)i * D + c] * K[(size_t)j * D + c];
                    S3[(size_t)i * nk + j] = lmq[i] && mk[j] ? a * sc : NEG;
                }
            r_softmax_rows(S1, nq, m, 1.0); r_softmax_rows(S2, m, m, 1.0); r_softmax_rows(S3, m, nk, 1.0);
            if (pass == 0) {
                const double cm = r_colmax(S2, m);
                if (cm > gmax) gmax = cm;
            } else {
                r_pinv_iter(S2, m, iters, N->pinv_init == ATTN_NYSTROM_PINV_BATCH ? gmax : 0.0, Z);
                r_mm(S3, V, BV, m, nk, Dv);
                r_mm(Z, BV, W, m, m, Dv);
                r_mm(S1, W, O, nq, m, Dv);
                if (N->conv)   /* over the padded positions; the last Sq rows are the caller's */
                    for (i = 0; i < nq; ++i)
                        for (j = 0; j < ks; ++j) {
                            const int t = i + j - ks / 2;
                            if (t < 0 || t >= nk) continue;
                            for (c = 0; c < Dv; ++c) O[(size_t)i * Dv + c] += (double)N->conv[(size_t)h * ks + j] * V[(size_t)t * Dv + c];
                        }
                for (i = 0; i < Sq; ++i)
                    for (c = 0; c < Dv; ++c)
                        out[(((size_t)b * Sq + i) * Hq + h) * Dv + c] = i < Lq ? O[(size_t)(pq + i) * Dv + c] : 0.0;
            }
            free(Q0); free(K0); free(V0); free(Q); free(K); free(V); free(mq); free(mk); free(lmq); free(lmk);
            free(Ql); free(Kl); free(S1); free(S2); free(S3); free(Z); free(BV); free(W); free(O);
        }
}

/* Nystromformer (ZOO): out = F pinv(A) (B V) + conv(V); m = Sq = Sk: exact softmax attention.
   Padding (seqlens_q/_k), as attn.h documents it: the zero rule zeroes Q, K, V past Lq / Lk (the
   original code's Q * mask), the HF rule keeps them; both drop the keys past Lk from B; rows past
   Lq are 0. pinv_init BATCH: Z0's divisor is the largest column sum over every (b, h) (pass 0). */
static void r_nystrom(const attn_desc *d, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, double *out) {
    const attn_nystrom_params *N = &d->nystrom;
    const int B = q->batch, Sq = q->seq, Sk = k->seq, Hq = q->heads, Hk = k->heads, D = q->dim, Dv = v->dim;
    const int g = Hq / Hk, m = N->landmarks ? N->landmarks : 64, iters = N->iterations ? N->iterations : 6;
    const int ks = N->conv_kernel, hf = N->padding_rule == ATTN_NYSTROM_PADDING_HF;
    const double sc = r_scale(d, D);
    double gmax = -INFINITY;
    int pass, b, h, i, j, c;
    if (N->padding_rule == ATTN_NYSTROM_PADDING_LUCIDRAINS) { r_nystrom_luc(d, q, k, v, out); return; }
    for (pass = N->pinv_init == ATTN_NYSTROM_PINV_BATCH ? 0 : 1; pass < 2; ++pass)
      for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h) {
            const int Lk = d->seqlens_k ? d->seqlens_k[b] : Sk;
            const int Lq = d->seqlens_q ? d->seqlens_q[b] : !hf && Sq == Sk && d->seqlens_k ? Lk : Sq;
            double *Q = r_rows(q, b, h), *K = r_rows(k, b, h / g), *V = r_rows(v, b, h / g);
            double *o = (double *)calloc((size_t)Sq * Dv, sizeof(double));
            if (!hf) {
                for (i = Lq * D; i < Sq * D; ++i) Q[i] = 0.0;
                for (i = Lk * D; i < Sk * D; ++i) K[i] = 0.0;
                for (i = Lk * Dv; i < Sk * Dv; ++i) V[i] = 0.0;
            }
            if (m == Sq && m == Sk) {
                if (pass == 1 && Lk > 0) r_attn(Q, Sq, K, Lk, V, D, Dv, sc, 0.0, o, NULL);
            } else {
                double *Ql = r_landmarks(Q, Sq, D, m), *Kl = r_landmarks(K, Sk, D, m);
                double *F = (double *)t_xmalloc(sizeof(double) * (size_t)Sq * m);
                double *A = (double *)t_xmalloc(sizeof(double) * (size_t)m * m), *Z = (double *)t_xmalloc(sizeof(double) * (size_t)m * m);
                double *Bm = (double *)t_xmalloc(sizeof(double) * (size_t)m * Sk);
                double *BV = (double *)calloc((size_t)m * Dv, sizeof(double)), *W = (double *)t_xmalloc(sizeof(double) * (size_t)m * Dv);
                double *KlT = (double *)t_xmalloc(sizeof(double) * (size_t)D * (m > Sk ? m : Sk));
                for (i = 0; i < m; ++i) for (c = 0; c < D; ++c) KlT[(size_t)c * m + i] = Kl[(size_t)i * D + c];
                r_mm(Ql, KlT, A, m, D, m); r_softmax_rows(A, m, m, sc);
                if (pass == 0) {
                    double cm = r_colmax(A, m);
                    if (cm > gmax) gmax = cm;
                } else {
                    r_mm(Q, KlT, F, Sq, D, m); r_softmax_rows(F, Sq, m, sc);
                    for (i = 0; i < Lk; ++i) for (c = 0; c < D; ++c) KlT[(size_t)c * Lk + i] = K[(size_t)i * D + c];
                    if (Lk > 0) {   /* B over the valid keys only (the padding keys' weight is 0) */
                        r_mm(Ql, KlT, Bm, m, D, Lk); r_softmax_rows(Bm, m, Lk, sc);
                        r_mm(Bm, V, BV, m, Lk, Dv);
                    }
                    r_pinv_iter(A, m, iters, N->pinv_init == ATTN_NYSTROM_PINV_BATCH ? gmax : 0.0, Z);
                    r_mm(Z, BV, W, m, m, Dv);
                    r_mm(F, W, o, Sq, m, Dv);
                }
                free(Ql); free(Kl); free(F); free(A); free(Z); free(Bm); free(BV); free(W); free(KlT);
            }
            if (pass == 1) {
                if (N->conv)
                    for (i = 0; i < Sq; ++i)
                        for (j = 0; j < ks; ++j) {
                            const int p = i + j - ks / 2;
                            if (p < 0 || p >= Sk) continue;
                            for (c = 0; c < Dv; ++c) o[(size_t)i * Dv + c] += (double)N->conv[(size_t)h * ks + j] * V[(size_t)p * Dv + c];
                        }
                for (i = 0; i < Sq; ++i)
                    for (c = 0; c < Dv; ++c) out[(((size_t)b * Sq + i) * Hq + h) * Dv + c] = i < Lq ? o[(size_t)i * Dv + c] : 0.0;
            }
            free(Q); free(K); free(V); free(o);
        }
}

/* ---- fixtures ------------------------------------------------------------------------------- */

typedef struct {
    attn_tensor q, k, v, out;
    int layout;        /* 0 dense BSHD, 1 BHSD strides */
} fx;

static attn_tensor fx_tensor(attn_dtype dt, int B, int S, int H, int D, int layout) {
    attn_tensor t = layout ? attn_tensor_bhsd(NULL, dt, B, H, S, D) : attn_tensor_dense(NULL, dt, B, S, H, D);
    t.data = t_xmalloc(t_extent(&t) * t_dt_size(dt));
    return t;
}
static fx fx_make(attn_dtype dt, attn_dtype odt, int B, int Sq, int Sk, int Hq, int Hk, int D, int Dv, int layout, t_rng *r,
                  double sigma) {
    fx f;
    f.layout = layout;
    f.q = fx_tensor(dt, B, Sq, Hq, D, layout); f.k = fx_tensor(dt, B, Sk, Hk, D, layout);
    f.v = fx_tensor(dt, B, Sk, Hk, Dv, layout); f.out = fx_tensor(odt, B, Sq, Hq, Dv, layout);
    t_fill_normal(&f.q, r, sigma); t_fill_normal(&f.k, r, sigma); t_fill_normal(&f.v, r, 1.0);
    return f;
}
static void fx_free(fx *f) { free(f->q.data); free(f->k.data); free(f->v.data); free(f->out.data); }
static size_t t_bytes(const attn_tensor *t) { return t_extent(t) * t_dt_size(t->dtype); }

static double *out_get(const attn_tensor *o) {
    double *x = (double *)t_xmalloc(sizeof(double) * (size_t)o->batch * o->seq * o->heads * o->dim);
    t_read(o, x);
    return x;
}
static size_t out_n(const attn_tensor *o) { return (size_t)o->batch * o->seq * o->heads * o->dim; }

static float *rand_mat(t_rng *r, size_t n, double sigma) {
    float *x = (float *)t_xmalloc(sizeof(float) * n);
    size_t i;
    for (i = 0; i < n; ++i) x[i] = (float)(sigma * t_normal(r));
    return x;
}

/* ---- Linformer ------------------------------------------------------------------------------ */

static double lin_tol(attn_dtype odt) { return odt == ATTN_F32 ? 2e-5 : 3.0 * t_dt_rel(odt); }

static void test_linformer_ref(void) {
    t_rng r = t_rng_seed(1901);
    const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int it, n_it = T_QUICK ? 8 : 30;
    for (it = 0; it < n_it; ++it) {
        const attn_dtype dt = dts[it % 3], odt = dts[(it / 3) % 3];
        const int B = t_irange(&r, 1, 2), Hk = t_irange(&r, 1, 2), Hq = Hk * t_irange(&r, 1, 2);
        const int n = t_irange(&r, 4, 48), Sk = t_irange(&r, 1, n), Sq = t_irange(&r, 1, 40);
        const int D = t_irange(&r, 1, 40), Dv = t_irange(&r, 1, 36), kp = t_irange(&r, 1, n);
        const int layout = t_irange(&r, 0, 1);
        fx f = fx_make(dt, odt, B, Sq, Sk, Hq, Hk, D, Dv, layout, &r, 1.0);
        attn_desc d;
        float *e, *fm, *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq);
        double *ref = (double *)t_xmalloc(sizeof(double) * out_n(&f.out)), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq), *got, err, lerr = 0.0;
        attn_status s;
        size_t i;
        int lk[2], lq[2];
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER;
        d.linformer.k = kp; d.linformer.n = n;
        d.linformer.shared_heads = t_irange(&r, 0, 1);
        d.linformer.shared_kv = t_irange(&r, 0, 1);
        e = rand_mat(&r, (size_t)kp * n * (d.linformer.shared_heads ? 1 : Hk), 1.0 / sqrt((double)kp));
        fm = rand_mat(&r, (size_t)kp * n * (d.linformer.shared_heads ? 1 : Hk), 1.0 / sqrt((double)kp));
        d.linformer.e = e; d.linformer.f = d.linformer.shared_kv ? NULL : fm;
        if (t_chance(&r, 0.3)) d.scale = 0.3f;
        if (t_chance(&r, 0.2)) d.softcap = 3.0f;
        d.n_threads = t_irange(&r, 1, 3);
        if (t_chance(&r, 0.5)) {   /* padding: NaN in the padded keys and values, which must not be read */
            int b, j, h, c;
            for (b = 0; b < B; ++b) {
                lk[b] = t_irange(&r, 0, Sk); lq[b] = t_irange(&r, 0, Sq);
                for (j = lk[b]; j < Sk; ++j)
                    for (h = 0; h < Hk; ++h) {
                        for (c = 0; c < D; ++c) t_store(&f.k, b, j, h, c, NAN);
                        for (c = 0; c < Dv; ++c) t_store(&f.v, b, j, h, c, NAN);
                    }
            }
            d.seqlens_k = lk;
            if (t_chance(&r, 0.5)) d.seqlens_q = lq;
        }
        s = attn_forward(&d, f.q, f.k, f.v, f.out, lse);
        T_CHECK(s == ATTN_OK, "linformer forward: %s", attn_status_str(s));
        r_linformer(&d, &f.q, &f.k, &f.v, ref, rl);
        got = out_get(&f.out);
        err = t_max_norm_err(ref, got, out_n(&f.out));
        for (i = 0; i < (size_t)B * Hq * Sq; ++i) {
            double e2 = rl[i] == -INFINITY && lse[i] == -INFINITY ? 0.0 : fabs(rl[i] - lse[i]) / (1.0 + fabs(rl[i]));
            if (!(e2 <= lerr)) lerr = e2 != e2 ? INFINITY : e2;
        }
        T_CHECK(err <= lin_tol(odt), "linformer vs ref: err %.3g (tol %.3g) dt %s out %s B%d Sq%d Sk%d n%d k%d Hq%d Hk%d D%d Dv%d share h%d kv%d layout %d seqlens_k %d seqlens_q %d",
                err, lin_tol(odt), t_dt_name(dt), t_dt_name(odt), B, Sq, Sk, n, kp, Hq, Hk, D, Dv,
                d.linformer.shared_heads, d.linformer.shared_kv, layout, d.seqlens_k != NULL, d.seqlens_q != NULL);
        T_CHECK(lerr <= 2e-5, "linformer lse err %.3g", lerr);
        free(got); free(ref); free(rl); free(lse); free(e); free(fm); fx_free(&f);
    }
}

/* lucidrains' linformer 0.2.3 (tests/fixtures/linformer_ref.py writes the fixture): its
   LinformerSelfAttention on a padded batch, each sequence run alone, reproduced through attn.h as
   docs/porting.md shows: E = proj_k^T and F = proj_v^T ([k][seq_len]), shared_heads = 1,
   shared_kv = share_kv, k.heads = 1 with one_kv_head, seqlens_k = seqlens_q = the valid lengths.
   Within 2e-5, padding rows 0. */
/* array `name` of configuration cfg of linformer.txt (n values) in a malloc'd array, NULL if absent */
static double *lr_fix(const char *name, int cfg, size_t n) {
    double *p = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (!T_FIXTURE_NTH("linformer.txt", name, cfg, p, n)) { free(p); return NULL; }
    return p;
}

static void test_linformer_fixture(void) {
    double c8[8];
    int cfg;
    if (!T_CHECK(T_FIXTURE("linformer.txt", "config", c8, 8), "linformer fixture: cannot read tests/fixtures/linformer.txt (run "
                 "from the repository root or set ATTN_FIXTURES)")) return;
    for (cfg = 0; cfg < 2; ++cfg) {
        size_t nl = 0, nq = 0, nk = 0, nv, ne = 0, nf, no, i, j;
        double *c = lr_fix("config", cfg, 8), *l = NULL, *q = NULL, *k = NULL, *v = NULL, *pe = NULL, *pf = NULL, *out = NULL, err = 0;
        if (c) {   /* the config gives the other arrays' counts */
            nl = (size_t)c[6]; nq = (size_t)c[6] * (size_t)c[7] * (size_t)c[2] * (size_t)c[3];
            nk = (size_t)c[6] * (size_t)c[7] * (size_t)(c[5] != 0 ? 1 : c[2]) * (size_t)c[3]; ne = (size_t)c[0] * (size_t)c[1];
            l = lr_fix("lens", cfg, nl); q = lr_fix("q", cfg, nq); k = lr_fix("k", cfg, nk); v = lr_fix("v", cfg, nk);
            pe = lr_fix("proj_k", cfg, ne); pf = lr_fix("proj_v", cfg, ne); out = lr_fix("out", cfg, nq);
        }
        nv = nk; nf = ne; no = nq;
        if (T_CHECK(c && l && q && k && v && pe && pf && out, "linformer fixture: malformed tests/fixtures/linformer.txt (config %d)",
                    cfg)) {
            const int n = (int)c[0], kp = (int)c[1], H = (int)c[2], DH = (int)c[3], skv = (int)c[4], HK = c[5] != 0 ? 1 : H;
            const int B = (int)c[6], T = (int)c[7];
            float *qf = (float *)t_xmalloc(sizeof(float) * nq), *kf = (float *)t_xmalloc(sizeof(float) * nk);
            float *vf = (float *)t_xmalloc(sizeof(float) * nv), *of = (float *)t_xmalloc(sizeof(float) * no);
            float *e = (float *)t_xmalloc(sizeof(float) * ne), *f = (float *)t_xmalloc(sizeof(float) * nf);
            int lens[8], b;
            attn_desc d;
            attn_status st;
            for (i = 0; i < nq; ++i) qf[i] = (float)q[i];
            for (i = 0; i < nk; ++i) kf[i] = (float)k[i];
            for (i = 0; i < nv; ++i) vf[i] = (float)v[i];
            for (i = 0; i < (size_t)n; ++i)            /* proj [seq_len][k] -> E [k][seq_len] */
                for (j = 0; j < (size_t)kp; ++j) { e[j * n + i] = (float)pe[i * kp + j]; f[j * n + i] = (float)pf[i * kp + j]; }
            for (b = 0; b < B && b < 8; ++b) lens[b] = (int)l[b];
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LINFORMER;
            d.linformer.e = e; d.linformer.f = skv ? NULL : f; d.linformer.k = kp; d.linformer.n = n;
            d.linformer.shared_heads = 1; d.linformer.shared_kv = skv;
            d.seqlens_k = d.seqlens_q = lens;
            st = attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, T, H, DH), attn_tensor_dense(kf, ATTN_F32, B, T, HK, DH),
                              attn_tensor_dense(vf, ATTN_F32, B, T, HK, DH), attn_tensor_dense(of, ATTN_F32, B, T, H, DH), NULL);
            for (i = 0; i < no; ++i) if (!(fabs(of[i] - out[i]) <= err)) err = of[i] != of[i] ? INFINITY : fabs(of[i] - out[i]);
            T_CHECK(st == ATTN_OK && err <= 2e-5, "linformer fixture (share_kv %d, kv heads %d): %s, max |attn.h - reference| %.3g",
                    skv, HK, attn_status_str(st), err);
            printf("     linformer fixture share_kv %d, kv heads %d: max |attn.h - reference| %.2g\n", skv, HK, err);
            free(qf); free(kf); free(vf); free(of); free(e); free(f);
        }
        free(c); free(l); free(q); free(k); free(v); free(pe); free(pf); free(out);
    }
}

/* E = F = I (k = n): exactly attn_forward's exact attention on the same inputs (bitwise for fp32) */
static void test_linformer_identity(void) {
    t_rng r = t_rng_seed(1902);
    const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int it;
    for (it = 0; it < 6; ++it) {
        const attn_dtype dt = dts[it % 3];
        const int n = 37 + 20 * it, B = 2, Hk = 2, Hq = 4, D = 24, Dv = 20;
        fx f = fx_make(dt, ATTN_F32, B, 29, n, Hq, Hk, D, Dv, it >= 3, &r, 1.0);
        attn_tensor o2 = fx_tensor(ATTN_F32, B, 29, Hq, Dv, it >= 3);
        float *e = (float *)calloc((size_t)n * n, sizeof(float));
        attn_desc d, x;
        double *a, *b;
        int i;
        for (i = 0; i < n; ++i) e[(size_t)i * n + i] = 1.0f;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.k = n; d.linformer.n = n;
        d.linformer.shared_heads = 1; d.linformer.shared_kv = 1; d.n_threads = 2;
        x = d; x.kind = ATTN_SOFTMAX; x.bf16_kernels = ATTN_BF16_FP32;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "identity linformer");
        T_CHECK(attn_forward(&x, f.q, f.k, f.v, o2, NULL) == ATTN_OK, "identity exact");
        a = out_get(&f.out); b = out_get(&o2);
        if (dt == ATTN_F32) T_CHECK(memcmp(a, b, sizeof(double) * out_n(&o2)) == 0, "E = F = I not bitwise exact attention (n %d)", n);
        else T_CHECK(t_max_norm_err(b, a, out_n(&o2)) <= 1e-5, "E = F = I vs exact (%s) err %.3g", t_dt_name(dt), t_max_norm_err(b, a, out_n(&o2)));
        free(a); free(b); free(e); free(o2.data); fx_free(&f);
    }
}

/* ---- shared property helpers ------------------------------------------------------------------ */

/* thread counts 1, 2, 3 (and a workspace given by the caller) give bitwise the same output */
static void check_threads(attn_desc d, const fx *f, const char *what) {
    const size_t ob = t_bytes(&f->out);
    unsigned char *ref = (unsigned char *)t_xmalloc(ob);
    size_t ws = 0;
    void *buf;
    int t;
    d.n_threads = 1;
    T_CHECK(attn_forward(&d, f->q, f->k, f->v, f->out, NULL) == ATTN_OK, "%s: 1 thread", what);
    memcpy(ref, f->out.data, ob);
    for (t = 2; t <= 3; ++t) {
        d.n_threads = t;
        memset(f->out.data, 0x55, ob);
        T_CHECK(attn_forward(&d, f->q, f->k, f->v, f->out, NULL) == ATTN_OK, "%s: %d threads", what, t);
        T_CHECK(memcmp(ref, f->out.data, ob) == 0, "%s: %d threads differ from 1", what, t);
    }
    T_CHECK(attn_workspace_size(&d, f->q, f->k, f->v, &ws) == ATTN_OK && ws > 0, "%s: workspace query", what);
    buf = t_xmalloc(ws);
    memset(buf, 0xFF, ws);
    d.workspace = buf; d.workspace_size = ws;
    memset(f->out.data, 0x55, ob);
    T_CHECK(attn_forward(&d, f->q, f->k, f->v, f->out, NULL) == ATTN_OK, "%s: with workspace", what);
    T_CHECK(memcmp(ref, f->out.data, ob) == 0, "%s: caller workspace changes the result", what);
    d.workspace_size = ws - 1;
    memcpy(f->out.data, ref, ob);
    T_CHECK(attn_forward(&d, f->q, f->k, f->v, f->out, NULL) == ATTN_ERR_WORKSPACE, "%s: small workspace", what);
    T_CHECK(memcmp(ref, f->out.data, ob) == 0, "%s: small workspace wrote out", what);
    free(buf); free(ref);
}

static void test_linformer_threads(void) {
    t_rng r = t_rng_seed(1903);
    int c;
    for (c = 0; c < 3; ++c) {   /* many heads (tasks >= threads), one head (threaded GEMMs), f16 */
        const int Hk = c == 1 ? 1 : 3, n = 300;
        fx f = fx_make(c == 2 ? ATTN_F16 : ATTN_F32, c == 2 ? ATTN_BF16 : ATTN_F32, c == 1 ? 1 : 2, 70, 260, Hk, Hk, 48, 40, c == 2, &r, 1.0);
        float *e = rand_mat(&r, (size_t)64 * n * Hk, 0.1), *fm = rand_mat(&r, (size_t)64 * n * Hk, 0.1);
        attn_desc d;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.f = fm; d.linformer.k = 64; d.linformer.n = n;
        check_threads(d, &f, "linformer");
        free(e); free(fm); fx_free(&f);
    }
}

/* Issue 28: with a caller workspace of exactly the queried size, Linformer's forward and backward
   make no ATTN_MALLOC call and give bitwise the result of the allocating call; one byte short is
   ATTN_ERR_WORKSPACE with every output (out, lse; dq, dk, dv, dE, dF) untouched. Cases: E shared
   across heads with fp32 k, v (the one-product path), per-head E, BHSD strides, f16 inputs with
   bf16 gradients, padded keys; 1 and 3 threads; each without and with linformer.proj (then both
   queried sizes are smaller by at least E K and F V, and the results bitwise those without). */
static void test_linformer_workspace(void) {
    t_rng r = t_rng_seed(1931);
    int ci;
    for (ci = 0; ci < 16; ++ci) {
        const int cfg = ci % 8, pj = ci >= 8;
        const int sh = cfg % 2 == 0, f16 = cfg == 4 || cfg == 5, layout = cfg == 2 || cfg == 3, kp = 16, n = 40;
        const int B = 2, Sq = 9, Sk = 33, Hq = 4, Hk = 2, D = 8, Dv = 6;
        static const int lens[2] = { 33, 20 };
        fx f = fx_make(f16 ? ATTN_F16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, layout, &r, 1.0);
        fx g = fx_make(f16 ? ATTN_BF16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, layout, &r, 1.0);   /* dq, dk, dv */
        fx ref = fx_make(f16 ? ATTN_BF16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, 0, &r, 1.0);
        const size_t ne = (size_t)kp * n * (sh ? 1 : Hk), nl = (size_t)B * Hq * Sq;
        const size_t ob = t_bytes(&f.out), qb = t_bytes(&g.q), kb = t_bytes(&g.k), vb = t_bytes(&g.v);
        float *e = rand_mat(&r, ne, 0.3), *fm = rand_mat(&r, ne, 0.3), *dout = rand_mat(&r, out_n(&f.out), 1.0);
        float *de = (float *)t_xmalloc(4 * ne), *df = (float *)t_xmalloc(4 * ne);
        float *de0 = (float *)t_xmalloc(4 * ne), *df0 = (float *)t_xmalloc(4 * ne);
        float *lse = (float *)t_xmalloc(4 * nl), *lse0 = (float *)t_xmalloc(4 * nl);
        float *proj = (float *)t_xmalloc(4 * (size_t)B * kp * Hk * (D + Dv));
        unsigned char *out0 = (unsigned char *)t_xmalloc(ob);
        const attn_tensor to = attn_tensor_dense(dout, ATTN_F32, B, Sq, Hq, Dv);
        attn_desc d;
        size_t bytes = 0, m0, fwd0 = 0, bwd0 = 0;
        void *ws;
        attn_status st;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.f = fm; d.linformer.k = kp; d.linformer.n = n;
        d.linformer.shared_heads = sh; d.linformer.de = de; d.linformer.df = df;
        d.n_threads = cfg % 3 == 1 || cfg >= 6 ? 3 : 1;
        if (cfg >= 6) d.seqlens_k = lens;
        /* the allocating calls: the reference results */
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse0) == ATTN_OK, "linformer workspace cfg %d: forward", cfg);
        memcpy(out0, f.out.data, ob);
        T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse0, ref.q, ref.k, ref.v) == ATTN_OK, "cfg %d: backward", cfg);
        memcpy(de0, de, 4 * ne); memcpy(df0, df, 4 * ne);
        if (pj) {   /* proj holds E K and F V: the workspace does not */
            const size_t saved = 4 * (size_t)B * kp * Hk * (D + Dv);
            T_CHECK(attn_workspace_size(&d, f.q, f.k, f.v, &fwd0) == ATTN_OK &&
                    attn_backward_workspace_size(&d, f.q, f.k, f.v, &bwd0) == ATTN_OK, "cfg %d: size queries", cfg);
            d.linformer.proj = proj;
            T_CHECK(attn_workspace_size(&d, f.q, f.k, f.v, &bytes) == ATTN_OK && bytes + saved <= fwd0,
                    "cfg %d: forward workspace with proj %lu bytes, without %lu", cfg, (unsigned long)bytes, (unsigned long)fwd0);
            T_CHECK(attn_backward_workspace_size(&d, f.q, f.k, f.v, &bytes) == ATTN_OK && bytes + saved <= bwd0,
                    "cfg %d: backward workspace with proj %lu bytes, without %lu", cfg, (unsigned long)bytes, (unsigned long)bwd0);
        }
        /* forward with exactly attn_workspace_size bytes (NaN garbage: nothing read before written;
           with proj it also fills proj for the backward below) */
        st = attn_workspace_size(&d, f.q, f.k, f.v, &bytes);
        if (T_CHECK(st == ATTN_OK && bytes > 0, "cfg %d: workspace query: %s", cfg, attn_status_str(st))) {
            ws = t_xmalloc(bytes); memset(ws, 0xFF, bytes);
            d.workspace = ws; d.workspace_size = bytes;
            memset(f.out.data, 0x55, ob);
            m0 = t_attn_mallocs;
            st = attn_forward(&d, f.q, f.k, f.v, f.out, lse);
            m0 = t_attn_mallocs - m0;
            T_CHECK(st == ATTN_OK, "cfg %d: forward with a workspace: %s", cfg, attn_status_str(st));
            T_CHECK(m0 == 0, "linformer forward with a workspace of %lu bytes made %lu allocation(s) (cfg %d)", (unsigned long)bytes,
                    (unsigned long)m0, cfg);
            T_CHECK(memcmp(out0, f.out.data, ob) == 0 && memcmp(lse0, lse, 4 * nl) == 0, "cfg %d: workspace changes the forward", cfg);
            d.workspace_size = bytes - 1;
            t_sentinel(f.out.data, ob, 3); t_sentinel(lse, 4 * nl, 4);
            st = attn_forward(&d, f.q, f.k, f.v, f.out, lse);
            if (T_CHECK(st == ATTN_ERR_WORKSPACE, "cfg %d: forward, workspace one byte short: %s", cfg, attn_status_str(st)))
                t_status_provoked[ATTN_ERR_WORKSPACE] = 1;
            T_CHECK(t_sentinel_ok(f.out.data, ob, 3) && t_sentinel_ok(lse, 4 * nl, 4), "cfg %d: short workspace wrote out or lse", cfg);
            memcpy(f.out.data, out0, ob);   /* the backward reads out */
            free(ws);
        }
        /* backward the same */
        d.workspace = NULL; d.workspace_size = 0;
        st = attn_backward_workspace_size(&d, f.q, f.k, f.v, &bytes);
        if (T_CHECK(st == ATTN_OK && bytes > 0, "cfg %d: backward workspace query: %s", cfg, attn_status_str(st))) {
            ws = t_xmalloc(bytes); memset(ws, 0xFF, bytes);
            d.workspace = ws; d.workspace_size = bytes;
            t_sentinel(de, 4 * ne, 5); t_sentinel(df, 4 * ne, 6);
            t_sentinel(g.q.data, qb, 7); t_sentinel(g.k.data, kb, 8); t_sentinel(g.v.data, vb, 9);
            m0 = t_attn_mallocs;
            st = attn_backward(&d, f.q, f.k, f.v, f.out, to, lse0, g.q, g.k, g.v);
            m0 = t_attn_mallocs - m0;
            T_CHECK(st == ATTN_OK, "cfg %d: backward with a workspace: %s", cfg, attn_status_str(st));
            T_CHECK(m0 == 0, "linformer backward with a workspace of %lu bytes made %lu allocation(s) (cfg %d)", (unsigned long)bytes,
                    (unsigned long)m0, cfg);
            {   /* g may be strided: compare the values with the dense reference run */
                const attn_tensor *gt[3], *rt[3];
                int i;
                gt[0] = &g.q; gt[1] = &g.k; gt[2] = &g.v; rt[0] = &ref.q; rt[1] = &ref.k; rt[2] = &ref.v;
                for (i = 0; i < 3; ++i) {
                    double *a = out_get(gt[i]), *b0 = out_get(rt[i]);
                    T_CHECK(memcmp(a, b0, sizeof(double) * out_n(rt[i])) == 0, "cfg %d: workspace changes gradient %d", cfg, i);
                    free(a); free(b0);
                }
            }
            T_CHECK(memcmp(de, de0, 4 * ne) == 0 && memcmp(df, df0, 4 * ne) == 0, "cfg %d: workspace changes dE or dF", cfg);
            d.workspace_size = bytes - 1;
            t_sentinel(de, 4 * ne, 5); t_sentinel(df, 4 * ne, 6);
            t_sentinel(g.q.data, qb, 7); t_sentinel(g.k.data, kb, 8); t_sentinel(g.v.data, vb, 9);
            st = attn_backward(&d, f.q, f.k, f.v, f.out, to, lse0, g.q, g.k, g.v);
            if (T_CHECK(st == ATTN_ERR_WORKSPACE, "cfg %d: backward, workspace one byte short: %s", cfg, attn_status_str(st)))
                t_status_provoked[ATTN_ERR_WORKSPACE] = 1;
            T_CHECK(t_sentinel_ok(de, 4 * ne, 5) && t_sentinel_ok(df, 4 * ne, 6) && t_sentinel_ok(g.q.data, qb, 7) &&
                    t_sentinel_ok(g.k.data, kb, 8) && t_sentinel_ok(g.v.data, vb, 9),
                    "cfg %d: short backward workspace wrote a gradient", cfg);
            free(ws);
        }
        free(e); free(fm); free(dout); free(de); free(df); free(de0); free(df0); free(lse); free(lse0); free(out0); free(proj);
        fx_free(&f); fx_free(&g); fx_free(&ref);
    }
}

/* linformer.proj: attn_forward stores E K, F V there (checked against a double-precision E K, F V)
   with its output unchanged; attn_backward reads them instead of k, v: with k and v zeroed after
   the forward it gives bitwise the gradients of the call that projects the real k, v. Cases: E
   shared across heads with fp32 k, v (one product), per-head E with f16 inputs, padded keys. */
static void test_linformer_proj(void) {
    t_rng r = t_rng_seed(1937);
    int cfg;
    for (cfg = 0; cfg < 3; ++cfg) {
        const int sh = cfg != 1, f16 = cfg == 1, kp = 12, n = 30, B = 2, Sq = 7, Sk = 25, Hq = 4, Hk = 2, D = 8, Dv = 6;
        static const int lens[2] = { 25, 13 };
        fx f = fx_make(f16 ? ATTN_F16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, 0, &r, 1.0);
        fx g = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, 0, &r, 1.0), g0 = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, 0, &r, 1.0);
        const size_t ne = (size_t)kp * n * (sh ? 1 : Hk), nl = (size_t)B * Hq * Sq, ob = t_bytes(&f.out);
        const size_t nkp = (size_t)B * kp * Hk * D, nvp = (size_t)B * kp * Hk * Dv;
        float *e = rand_mat(&r, ne, 0.3), *fm = rand_mat(&r, ne, 0.3), *dout = rand_mat(&r, out_n(&f.out), 1.0);
        float *proj = (float *)t_xmalloc(sizeof(float) * (nkp + nvp)), *lse = (float *)t_xmalloc(4 * nl);
        unsigned char *out0 = (unsigned char *)t_xmalloc(ob);
        double *kd = out_get(&f.k), *vd = out_get(&f.v), err = 0.0;
        const attn_tensor to = attn_tensor_dense(dout, ATTN_F32, B, Sq, Hq, Dv);
        attn_desc d;
        int b, i, h, c, j, w;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.f = fm; d.linformer.k = kp; d.linformer.n = n;
        d.linformer.shared_heads = sh; d.n_threads = 1 + cfg;
        if (cfg == 2) d.seqlens_k = lens;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "linformer proj cfg %d: forward", cfg);
        memcpy(out0, f.out.data, ob);
        T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, g0.q, g0.k, g0.v) == ATTN_OK, "proj cfg %d: backward", cfg);
        d.linformer.proj = proj;
        memset(f.out.data, 0x55, ob);
        t_sentinel(proj, sizeof(float) * (nkp + nvp), 3);
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "proj cfg %d: forward with proj", cfg);
        T_CHECK(memcmp(out0, f.out.data, ob) == 0, "linformer proj cfg %d: proj changes the forward", cfg);
        for (w = 0; w < 2; ++w) {   /* proj against E K, F V in double */
            const int dim = w ? Dv : D;
            const double *x = w ? vd : kd;
            const float *P = w ? proj + nkp : proj, *M = w ? fm : e;
            for (b = 0; b < B; ++b)
                for (i = 0; i < kp; ++i)
                    for (h = 0; h < Hk; ++h)
                        for (c = 0; c < dim; ++c) {
                            const float *row = M + (sh ? 0 : (size_t)h * kp * n) + (size_t)i * n;
                            const int L = d.seqlens_k ? d.seqlens_k[b] : Sk;
                            double s = 0.0;
                            for (j = 0; j < L; ++j) s += (double)row[j] * x[(((size_t)b * Sk + j) * Hk + h) * dim + c];
                            err = fmax(err, fabs(s - (double)P[(((size_t)b * kp + i) * Hk + h) * dim + c]));
                        }
        }
        T_CHECK(err <= 1e-5, "linformer proj cfg %d: stored E K, F V off by %.3g", cfg, err);
        memset(f.k.data, 0, t_bytes(&f.k)); memset(f.v.data, 0, t_bytes(&f.v));   /* the backward must read proj */
        T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, g.q, g.k, g.v) == ATTN_OK, "proj cfg %d: backward with proj", cfg);
        T_CHECK(memcmp(g.q.data, g0.q.data, t_bytes(&g.q)) == 0 && memcmp(g.k.data, g0.k.data, t_bytes(&g.k)) == 0 &&
                memcmp(g.v.data, g0.v.data, t_bytes(&g.v)) == 0,
                "linformer proj cfg %d: backward reading proj differs from the one projecting k, v", cfg);
        free(e); free(fm); free(dout); free(proj); free(lse); free(out0); free(kd); free(vd);
        fx_free(&f); fx_free(&g); fx_free(&g0);
    }
}

/* ---- Nystromformer ---------------------------------------------------------------------------- */

static void test_nystrom_ref(void) {
    t_rng r = t_rng_seed(1904);
    const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int it, n_it = T_QUICK ? 8 : 30;
    for (it = 0; it < n_it + 4; ++it) {   /* the last 4: several key chunks (256) and query blocks (128) */
        const attn_dtype dt = dts[it % 3], odt = dts[(it / 3) % 3];
        const int big = it >= n_it, B = t_irange(&r, 1, 2), Hk = t_irange(&r, 1, 2), Hq = Hk * t_irange(&r, 1, 2);
        const int pad = it % 2, m = big ? t_irange(&r, 8, 24) : t_irange(&r, 1, 8);
        int Sq = m * (big ? t_irange(&r, 20, 40) : t_irange(&r, 1, 6)) + (pad ? t_irange(&r, 0, m - 1) : 0);
        int Sk = m * (big ? t_irange(&r, 20, 40) : t_irange(&r, 1, 6)) + (pad ? t_irange(&r, 0, m - 1) : 0);
        const int D = t_irange(&r, 1, 33), Dv = t_irange(&r, 1, 30), conv = big || t_chance(&r, 0.5), layout = t_irange(&r, 0, 1);
        fx f;
        attn_desc d;
        float *w = NULL;
        double *ref, *got, err, tol;
        attn_status s;
        if (conv) Sk = Sq;
        f = fx_make(dt, odt, B, Sq, Sk, Hq, Hk, D, Dv, layout, &r, 0.8);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM;
        d.nystrom.landmarks = m; d.nystrom.pad = pad;
        d.nystrom.iterations = t_chance(&r, 0.5) ? 0 : t_irange(&r, 1, 9);
        if (conv) {
            d.nystrom.conv_kernel = t_chance(&r, 0.5) ? 35 : 2 * t_irange(&r, 0, 4) + 1;   /* given with conv */
            w = rand_mat(&r, (size_t)Hq * d.nystrom.conv_kernel, 0.2);
            d.nystrom.conv = w;
        }
        if (t_chance(&r, 0.3)) d.scale = 0.25f;
        d.n_threads = t_irange(&r, 1, 3);
        s = attn_forward(&d, f.q, f.k, f.v, f.out, NULL);
        T_CHECK(s == ATTN_OK, "nystrom forward: %s", attn_status_str(s));
        ref = (double *)t_xmalloc(sizeof(double) * out_n(&f.out));
        r_nystrom(&d, &f.q, &f.k, &f.v, ref);
        got = out_get(&f.out);
        err = t_max_norm_err(ref, got, out_n(&f.out));
        /* fp32 pseudo-inverse iterations amplify rounding by about cond(A) */
        tol = odt == ATTN_F32 ? 2e-4 : 3.0 * t_dt_rel(odt) + 2e-4;
        T_CHECK(err <= tol, "nystrom vs ref: err %.3g (tol %.3g) dt %s out %s B%d Sq%d Sk%d m%d pad%d Hq%d Hk%d D%d Dv%d conv%d it%d layout%d",
                err, tol, t_dt_name(dt), t_dt_name(odt), B, Sq, Sk, m, pad, Hq, Hk, D, Dv, conv, d.nystrom.iterations, layout);
        free(ref); free(got); free(w); fx_free(&f);
    }
}

/* landmarks = n: exact softmax attention (bitwise: the same exact kernel runs) */
static void test_nystrom_exact(void) {
    t_rng r = t_rng_seed(1905);
    int it;
    for (it = 0; it < 4; ++it) {
        const int n = 16 + 24 * it;
        fx f = fx_make(it == 3 ? ATTN_BF16 : ATTN_F32, ATTN_F32, 2, n, n, 4, 2, 32, 24, it & 1, &r, 1.0);
        attn_tensor o2 = fx_tensor(ATTN_F32, 2, n, 4, 24, it & 1);
        attn_desc d, x;
        double *a, *b;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM; d.nystrom.landmarks = n; d.n_threads = 2;
        x = d; x.kind = ATTN_SOFTMAX;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom m = n");
        T_CHECK(attn_forward(&x, f.q, f.k, f.v, o2, NULL) == ATTN_OK, "exact");
        a = out_get(&f.out); b = out_get(&o2);
        T_CHECK(memcmp(a, b, sizeof(double) * out_n(&o2)) == 0, "nystrom m = n is not exact attention (n %d)", n);
        free(a); free(b); free(o2.data); fx_free(&f);
    }
}

/* The general path on segment-constant inputs: Q and K constant on each of the m segments, so
   the landmarks are the distinct tokens, B V = A Vbar (Vbar: segment means of V) and
   F pinv(A) A Vbar = F Vbar is exact attention when the pseudo-inverse has converged. */
static void test_nystrom_segments(void) {
    t_rng r = t_rng_seed(1906);
    const int m = 16, l = 4, n = m * l, D = 16, Dv = 8;
    fx f = fx_make(ATTN_F32, ATTN_F32, 1, n, n, 2, 2, D, Dv, 0, &r, 1.0);
    attn_tensor o2 = fx_tensor(ATTN_F32, 1, n, 2, Dv, 0);
    attn_desc d, x;
    double *a, *b, err;
    int s, h, c;
    for (h = 0; h < 2; ++h)     /* q = k = 2.5 x the segment's first key: A near the identity */
        for (s = 0; s < n; ++s)
            for (c = 0; c < D; ++c) t_store(&f.q, 0, s, h, c, 2.5 * t_load(&f.k, 0, (s / l) * l, h, c));
    for (h = 0; h < 2; ++h)
        for (s = 0; s < n; ++s)
            for (c = 0; c < D; ++c) t_store(&f.k, 0, s, h, c, t_load(&f.q, 0, s, h, c));
    memset(&d, 0, sizeof d);
    d.kind = ATTN_NYSTROM; d.nystrom.landmarks = m; d.nystrom.iterations = 12; d.n_threads = 2;
    x = d; x.kind = ATTN_SOFTMAX;
    T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom segments");
    T_CHECK(attn_forward(&x, f.q, f.k, f.v, o2, NULL) == ATTN_OK, "exact segments");
    a = out_get(&f.out); b = out_get(&o2);
    err = t_max_norm_err(b, a, out_n(&o2));
    T_CHECK(err <= 1e-4, "nystrom on segment-constant inputs vs exact: err %.3g", err);
    free(a); free(b); free(o2.data); fx_free(&f);
}

/* the iteration converges to a double-precision inverse (Gauss-Jordan) for well-conditioned A */
static int r_inverse(const double *A, int m, double *X) {
    double *M = (double *)t_xmalloc(sizeof(double) * (size_t)m * 2 * m);
    int i, j, p, c;
    for (i = 0; i < m; ++i)
        for (j = 0; j < 2 * m; ++j) M[(size_t)i * 2 * m + j] = j < m ? A[(size_t)i * m + j] : (j - m == i);
    for (c = 0; c < m; ++c) {
        int piv = c;
        double pv;
        for (i = c + 1; i < m; ++i) if (fabs(M[(size_t)i * 2 * m + c]) > fabs(M[(size_t)piv * 2 * m + c])) piv = i;
        if (M[(size_t)piv * 2 * m + c] == 0.0) { free(M); return 0; }
        for (j = 0; j < 2 * m; ++j) { double t = M[(size_t)c * 2 * m + j]; M[(size_t)c * 2 * m + j] = M[(size_t)piv * 2 * m + j]; M[(size_t)piv * 2 * m + j] = t; }
        pv = M[(size_t)c * 2 * m + c];
        for (j = 0; j < 2 * m; ++j) M[(size_t)c * 2 * m + j] /= pv;
        for (p = 0; p < m; ++p) {
            double fct = M[(size_t)p * 2 * m + c];
            if (p == c || fct == 0.0) continue;
            for (j = 0; j < 2 * m; ++j) M[(size_t)p * 2 * m + j] -= fct * M[(size_t)c * 2 * m + j];
        }
    }
    for (i = 0; i < m; ++i) for (j = 0; j < m; ++j) X[(size_t)i * m + j] = M[(size_t)i * 2 * m + m + j];
    free(M);
    return 1;
}

static void test_nystrom_pinv(void) {
    t_rng r = t_rng_seed(1907);
    const int ms[6] = { 1, 7, 32, 64, 64, 128 }, its[6] = { 6, 6, 6, 6, 14, 14 };
    const double diags[6] = { 3.0, 3.0, 5.0, 6.0, 3.0, 3.0 };
    int t;
    for (t = 0; t < 6; ++t) {
        const int m = ms[t], iters = its[t];
        const double diag = diags[t];
        double *A = (double *)t_xmalloc(sizeof(double) * (size_t)m * m), *X = (double *)t_xmalloc(sizeof(double) * (size_t)m * m);
        double *Zr = (double *)t_xmalloc(sizeof(double) * (size_t)m * m), err6 = 0.0, errd = 0.0, mx = 0.0;
        float *a = (float *)t_xmalloc(sizeof(float) * (size_t)m * m), *z = (float *)t_xmalloc(sizeof(float) * (size_t)m * m);
        int i, j;
        /* a softmax matrix with a strong diagonal: rows sum to 1, condition number a few units */
        for (i = 0; i < m; ++i) for (j = 0; j < m; ++j) A[(size_t)i * m + j] = 0.5 * t_normal(&r) + (i == j ? diag : 0.0);
        r_softmax_rows(A, m, m, 1.0);
        for (i = 0; i < m * m; ++i) { a[i] = (float)A[i]; A[i] = a[i]; }
        T_CHECK(r_inverse(A, m, X), "test matrix singular");
        {
            const size_t m0 = t_attn_mallocs;
            T_CHECK(attn_nystrom_pinv(m, iters, a, z) == ATTN_OK, "pinv");
            T_CHECK(t_attn_mallocs - m0 == 1, "attn_nystrom_pinv (m %d): %lu ATTN_MALLOC calls, want one block", m,
                    (unsigned long)(t_attn_mallocs - m0));
        }
        r_pinv_iter(A, m, iters, 0.0, Zr);
        for (i = 0; i < m * m; ++i) {
            if (fabs(X[i]) > mx) mx = fabs(X[i]);
            if (fabs(z[i] - X[i]) > err6) err6 = fabs(z[i] - X[i]);
            if (fabs(Zr[i] - X[i]) > errd) errd = fabs(Zr[i] - X[i]);
        }
        T_CHECK(errd / mx <= 1e-10, "pinv iteration (double, %d steps) vs inverse: %.3g (m %d)", iters, errd / mx, m);
        T_CHECK(err6 / mx <= 2e-5, "attn_nystrom_pinv (%d steps) vs double inverse: %.3g (m %d)", iters, err6 / mx, m);
        free(A); free(X); free(Zr); free(a); free(z);
    }
}

static void test_nystrom_threads(void) {
    t_rng r = t_rng_seed(1908);
    int c;
    for (c = 0; c < 2; ++c) {
        fx f = fx_make(c ? ATTN_BF16 : ATTN_F32, c ? ATTN_F16 : ATTN_F32, 2, 640, 640, 4, 2, 32, 32, c, &r, 1.0);
        float *w = rand_mat(&r, 4 * 35, 0.1);
        attn_desc d;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM; d.nystrom.landmarks = 32;
        if (c) { d.nystrom.conv = w; d.nystrom.conv_kernel = 35; }
        check_threads(d, &f, c ? "nystrom bf16 conv" : "nystrom");
        free(w); fx_free(&f);
    }
}

/* Padding (seqlens_k, seqlens_q) under both rules and both Z0 rules against r_nystrom: random
   lengths (0 and full included), the exact path (m = n), pad = 1, GQA, cross-attention, conv. */
static void test_nystrom_padding_ref(void) {
    t_rng r = t_rng_seed(1911);
    int it, n_it = T_QUICK ? 10 : 40;
    for (it = 0; it < n_it; ++it) {
        const attn_dtype dt = it % 4 == 3 ? ATTN_BF16 : ATTN_F32;
        const int big = it % 5 == 4, B = t_irange(&r, 1, 3), Hk = t_irange(&r, 1, 2), Hq = Hk * t_irange(&r, 1, 2);
        const int rule = t_irange(&r, 0, 2), pad = rule == 2 || t_chance(&r, 0.3);   /* rule 2 pads (at the front) by itself */
        const int m = big ? t_irange(&r, 8, 16) : t_irange(&r, 1, 8), exact = !big && t_chance(&r, 0.15);
        int Sq = exact ? m : m * (big ? t_irange(&r, 20, 36) : t_irange(&r, 1, 6)) + (pad ? t_irange(&r, 0, m - 1) : 0);
        int Sk = Sq, lq[3], lk[3], b, conv = t_chance(&r, 0.5), with_q;
        const int D = t_irange(&r, 1, 24), Dv = t_irange(&r, 1, 20), layout = t_irange(&r, 0, 1);
        fx f;
        attn_desc d;
        float *w = NULL;
        double *ref, *got, err, tol;
        attn_status s;
        if (!exact && !conv && t_chance(&r, 0.3)) Sk = m * t_irange(&r, 1, 6) + (pad ? t_irange(&r, 0, m - 1) : 0);
        if (Sk < m) Sk = m;
        f = fx_make(dt, ATTN_F32, B, Sq, Sk, Hq, Hk, D, Dv, layout, &r, 0.8);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM;
        d.nystrom.landmarks = m; d.nystrom.pad = rule == 2 ? 0 : pad;
        d.nystrom.padding_rule = (attn_nystrom_padding)rule;
        d.nystrom.pinv_init = t_chance(&r, 0.5) ? ATTN_NYSTROM_PINV_BATCH : ATTN_NYSTROM_PINV_PER_HEAD;
        if (conv) {
            d.nystrom.conv_kernel = 2 * t_irange(&r, 0, 17) + 1;
            w = rand_mat(&r, (size_t)Hq * d.nystrom.conv_kernel, 0.2);
            d.nystrom.conv = w;
        }
        with_q = t_chance(&r, 0.3);
        for (b = 0; b < B; ++b) {
            const int u = t_irange(&r, 0, 9);
            lk[b] = u == 0 ? Sk : u == 1 ? 0 : t_irange(&r, 1, Sk);
            lq[b] = t_irange(&r, 0, Sq);
        }
        if (rule != 2 || t_chance(&r, 0.7)) d.seqlens_k = lk;   /* nystrom-attention without a mask too */
        if (with_q) d.seqlens_q = lq;
        d.n_threads = t_irange(&r, 1, 3);
        s = attn_forward(&d, f.q, f.k, f.v, f.out, NULL);
        T_CHECK(s == ATTN_OK, "nystrom padded forward: %s", attn_status_str(s));
        ref = (double *)t_xmalloc(sizeof(double) * out_n(&f.out));
        r_nystrom(&d, &f.q, &f.k, &f.v, ref);
        got = out_get(&f.out);
        err = t_max_norm_err(ref, got, out_n(&f.out));
        tol = 2e-4;
        T_CHECK(err <= tol, "nystrom padded vs ref: err %.3g dt %s B%d Sq%d Sk%d m%d pad%d rule%d init%d Hq%d Hk%d D%d Dv%d conv%d q%d lk %d,%d,%d",
                err, t_dt_name(dt), B, Sq, Sk, m, pad, (int)d.nystrom.padding_rule, (int)d.nystrom.pinv_init, Hq, Hk, D, Dv, conv,
                with_q, lk[0], B > 1 ? lk[1] : -1, B > 2 ? lk[2] : -1);
        if (it % 8 == 0) check_threads(d, &f, "nystrom padded");
        free(ref); free(got); free(w); fx_free(&f);
    }
}

/* copy rows of sequence b of src (batch B) into dst (batch 1), same seq and heads */
static void nys_copy_seq(const attn_tensor *src, int b, const attn_tensor *dst) {
    int s, h, c;
    for (s = 0; s < src->seq; ++s)
        for (h = 0; h < src->heads; ++h)
            for (c = 0; c < src->dim; ++c) t_store(dst, 0, s, h, c, t_load(src, b, s, h, c));
}

/* Valid rows of a padded batch equal the same sequence padded to the same length on its own
   (bitwise), whatever the other sequences; under the zero and nystrom-attention rules also
   whatever the padding holds (NaN included: it is never read) and padding rows are 0; under
   Hugging Face's rule the padding's contents do enter (landmarks, conv), as in Hugging Face. */
static void test_nystrom_padding_props(void) {
    t_rng r = t_rng_seed(1912);
    const int B = 3, n = 96, H = 2, D = 16, Dv = 12, lens[3] = { 96, 70, 29 };
    float *w = rand_mat(&r, (size_t)H * 33, 0.2);
    int rule, b, c;
    for (rule = 0; rule < 3; ++rule)   /* ZERO, HF, LUCIDRAINS (13 landmarks: 8 rows of front padding) */
        for (c = 0; c < 2; ++c) {   /* c: with the conv residual */
            fx f = fx_make(ATTN_F32, ATTN_F32, B, n, n, H, H, D, Dv, c, &r, 0.8);
            const int hf = rule == ATTN_NYSTROM_PADDING_HF;
            attn_desc d;
            double *all, *one;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_NYSTROM; d.nystrom.landmarks = rule == 2 ? 13 : 12; d.n_threads = 2;
            d.nystrom.padding_rule = (attn_nystrom_padding)rule;
            if (c) { d.nystrom.conv = w; d.nystrom.conv_kernel = 33; }
            d.seqlens_k = lens;
            T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom padded batch");
            all = out_get(&f.out);
            for (b = 0; b < B; ++b) {
                fx g = fx_make(ATTN_F32, ATTN_F32, 1, n, n, H, H, D, Dv, 0, &r, 3.0);   /* other padding contents */
                const int L = lens[b];
                int i, h, e, same = 1, zero = 1, changed = 0;
                attn_desc d1 = d;
                size_t o;
                nys_copy_seq(&f.q, b, &g.q); nys_copy_seq(&f.k, b, &g.k); nys_copy_seq(&f.v, b, &g.v);
                d1.seqlens_k = lens + b;
                if (!hf) {   /* the zero and nystrom-attention rules never read the padding: NaN there changes nothing */
                    for (i = L; i < n; ++i)
                        for (h = 0; h < H; ++h) {
                            for (e = 0; e < D; ++e) { t_store(&g.q, 0, i, h, e, NAN); t_store(&g.k, 0, i, h, e, NAN); }
                            for (e = 0; e < Dv; ++e) t_store(&g.v, 0, i, h, e, NAN);
                        }
                }
                T_CHECK(attn_forward(&d1, g.q, g.k, g.v, g.out, NULL) == ATTN_OK, "nystrom one sequence");
                one = out_get(&g.out);
                for (i = 0; i < n; ++i)
                    for (o = 0; o < (size_t)H * Dv; ++o) {
                        const double x = all[((size_t)b * n + i) * H * Dv + o], y = one[(size_t)i * H * Dv + o];
                        if (i < L && memcmp(&x, &y, sizeof x) != 0) same = 0;
                        if (!hf && i >= L && (x != 0.0 || y != 0.0)) zero = 0;
                    }
                T_CHECK(same, "nystrom rule %d conv %d: sequence %d's valid rows differ alone / in the batch%s", rule, c, b,
                        hf ? "" : " with NaN padding");
                T_CHECK(zero, "nystrom rule %d: padding rows of sequence %d are not 0", rule, b);
                free(one);
                if (hf && L < n) {   /* Hugging Face's rule reads the padding: other contents, other valid rows */
                    for (i = L; i < n; ++i)
                        for (h = 0; h < H; ++h)
                            for (e = 0; e < D; ++e) t_store(&g.k, 0, i, h, e, 2.0 * t_load(&g.k, 0, i, h, e) + 1.0);
                    T_CHECK(attn_forward(&d1, g.q, g.k, g.v, g.out, NULL) == ATTN_OK, "nystrom one sequence (HF, new padding)");
                    one = out_get(&g.out);
                    for (i = 0; i < L; ++i)
                        for (o = 0; o < (size_t)H * Dv; ++o) changed |= one[(size_t)i * H * Dv + o] != all[((size_t)b * n + i) * H * Dv + o];
                    T_CHECK(changed, "nystrom HF rule: the padding keys' contents should enter the landmarks (sequence %d)", b);
                    free(one);
                }
                fx_free(&g);
            }
            free(all);
            {   /* batch-global Z0 equals the per-head one for one sequence and one head */
                fx g = fx_make(ATTN_F32, ATTN_F32, 1, n, n, 1, 1, D, Dv, 0, &r, 0.8);
                const size_t ob = t_bytes(&g.out);
                unsigned char *a = (unsigned char *)t_xmalloc(ob);
                attn_desc d1 = d;
                d1.seqlens_k = lens + 1; d1.nystrom.conv = NULL;
                T_CHECK(attn_forward(&d1, g.q, g.k, g.v, g.out, NULL) == ATTN_OK, "nystrom per-head Z0");
                memcpy(a, g.out.data, ob);
                d1.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;
                T_CHECK(attn_forward(&d1, g.q, g.k, g.v, g.out, NULL) == ATTN_OK, "nystrom batch Z0");
                T_CHECK(memcmp(a, g.out.data, ob) == 0, "nystrom: batch-global Z0 differs from per-head with B = H = 1");
                free(a); fx_free(&g);
            }
            fx_free(&f);
        }
    free(w);
}

/* ---- the Hugging Face fixture (tests/fixtures/nystromformer_hf.py) ----------------------- */

/* array `name` of fixture `file` (exactly want values) in a malloc'd array, or NULL */
static double *nys_fix(const char *file, const char *name, size_t want) {
    double *x = (double *)t_xmalloc(sizeof(double) * (want ? want : 1));
    if (!T_FIXTURE(file, name, x, want)) { free(x); return NULL; }
    return x;
}
/* a fixture's "dims" v (B n H d m conv_kernel) as ints; 0 when one is out of range */
static int nys_dims(const double *v, int *B, int *n, int *H, int *D, int *m, int *K) {
    int i, ok = 1;
    for (i = 0; i < 6 && ok; ++i) ok = v[i] >= 1 && v[i] <= 4096 && v[i] == floor(v[i]);
    if (!ok) return 0;
    *B = (int)v[0]; *n = (int)v[1]; *H = (int)v[2]; *D = (int)v[3]; *m = (int)v[4]; *K = (int)v[5];
    return *B <= 8;
}

/* Hugging Face's NystromformerSelfAttention (conv 65, batch-global Z0, padded batch of 3)
   through attn.h's documented fields only: padding_rule HF + pinv_init BATCH reproduces out_hf
   (every row) and padding_rule ZERO + pinv_init BATCH the original code's out_orig (valid
   rows) within 2e-5; the differences of attn.h's defaults are reported (docs/porting.md). */
static void test_nystrom_hf_fixture(void) {
    const char *path = "nystromformer_hf.txt";
    double dims[6], *lensd, *q, *k, *v, *conv, *ohf, *oorig;
    int B, n, H, D, m, K, lens[8], b, i, e, rule, init;
    size_t N;
    float *qf, *kf, *vf, *cf, *of;
    if (!T_CHECK(T_FIXTURE(path, "dims", dims, 6), "cannot read tests/fixtures/%s (run from the repository root, or set "
                 "ATTN_FIXTURES)", path)) return;
    if (!T_CHECK(nys_dims(dims, &B, &n, &H, &D, &m, &K), "fixture %s: dims out of range", path)) return;
    N = (size_t)B * n * H * D;
    lensd = nys_fix(path, "lens", (size_t)B);
    q = nys_fix(path, "q", N); k = nys_fix(path, "k", N); v = nys_fix(path, "v", N);
    conv = nys_fix(path, "conv", (size_t)H * K); ohf = nys_fix(path, "out_hf", N); oorig = nys_fix(path, "out_orig", N);
    if (!T_CHECK(lensd && q && k && v && conv && ohf && oorig, "fixture %s: malformed", path)) return;
    for (b = 0; b < B; ++b) lens[b] = (int)lensd[b];
    qf = (float *)t_xmalloc(N * sizeof(float)); kf = (float *)t_xmalloc(N * sizeof(float));
    vf = (float *)t_xmalloc(N * sizeof(float)); of = (float *)t_xmalloc(N * sizeof(float));
    cf = (float *)t_xmalloc((size_t)H * K * sizeof(float));
    for (i = 0; i < (int)N; ++i) { qf[i] = (float)q[i]; kf[i] = (float)k[i]; vf[i] = (float)v[i]; }
    for (i = 0; i < H * K; ++i) cf[i] = (float)conv[i];
    {
        double mx = 0.0;
        for (i = 0; i < (int)N; ++i) mx = fabs(ohf[i]) > mx ? fabs(ohf[i]) : mx;
        printf("     nystrom on the HF fixture (B %d, n %d, H %d, d %d, m %d, conv %d, max |out| %.2g), max |diff| on valid rows\n"
               "       vs HF / vs the original code:", B, n, H, D, m, K, mx);
    }
    for (rule = 1; rule >= 0; --rule)
        for (init = 1; init >= 0; --init) {
            /* HF's layout [B, n, H*d] is attn.h's dense [B, S, H, D]; HF's d^-1/4 on q and on k
               is the default scale 1/sqrt(d); HF's defaults: 6 iterations, Z0 batch-global */
            attn_desc d;
            double err_all = 0.0, err_hf = 0.0, err_orig = 0.0;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_NYSTROM;
            d.nystrom.landmarks = m;
            d.nystrom.conv = cf; d.nystrom.conv_kernel = K;
            d.nystrom.padding_rule = rule ? ATTN_NYSTROM_PADDING_HF : ATTN_NYSTROM_PADDING_ZERO;
            d.nystrom.pinv_init = init ? ATTN_NYSTROM_PINV_BATCH : ATTN_NYSTROM_PINV_PER_HEAD;
            d.seqlens_k = lens;
            T_CHECK(attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, n, H, D), attn_tensor_dense(kf, ATTN_F32, B, n, H, D),
                                 attn_tensor_dense(vf, ATTN_F32, B, n, H, D), attn_tensor_dense(of, ATTN_F32, B, n, H, D), NULL) == ATTN_OK,
                    "nystrom on the HF fixture");
            for (b = 0; b < B; ++b)
                for (i = 0; i < n; ++i)
                    for (e = 0; e < H * D; ++e) {
                        const size_t o = ((size_t)b * n + i) * H * D + e;
                        const double x = fabs(of[o] - ohf[o]), y = fabs(of[o] - oorig[o]);
                        if (!(x <= err_all)) err_all = x != x ? INFINITY : x;
                        if (i >= lens[b]) continue;
                        if (!(x <= err_hf)) err_hf = x != x ? INFINITY : x;
                        if (!(y <= err_orig)) err_orig = y != y ? INFINITY : y;
                    }
            printf(" %s %s %.2g / %.2g%s", rule ? "HF rule" : "zero rule", init ? "batch Z0" : "per-head Z0", err_hf, err_orig,
                   rule + init == 0 ? "\n" : ";");
            if (rule && init) T_CHECK(err_all <= 2e-5, "nystrom HF rule + batch Z0 vs HF (every row): max |diff| %.3g", err_all);
            if (!rule && init) T_CHECK(err_orig <= 2e-5, "nystrom zero rule + batch Z0 vs the original code (valid rows): %.3g", err_orig);
            if (!init) T_CHECK(err_hf > 1e-4, "nystrom per-head Z0 should differ from HF's batch-global one (%.3g)", err_hf);
        }
    free(lensd); free(q); free(k); free(v); free(conv); free(ohf); free(oorig);
    free(qf); free(kf); free(vf); free(of); free(cf);
}

/* lucidrains' nystrom-attention (tests/fixtures/nystrom_attention_lucidrains.py): n = 60 with 8
   landmarks, which the module pads with 4 zero tokens at the front (kept as keys without a
   mask, masked with one). padding_rule LUCIDRAINS + pinv_init BATCH on the caller's rows as
   they are reproduces `out` (no mask) and `out_mask` (seqlens_k = the mask's lengths) within
   2e-5. Also reported: the same by hand (the caller prepends the zero rows, rule ZERO, pad 0;
   exact without a mask), attn.h's per-head Z0, and the nearest zero-rule call with the mask. */
static void test_nystrom_lucidrains_fixture(void) {
    const char *path = "nystrom_attention_lucidrains.txt";
    double dims[6], *lensd, *q, *k, *v, *conv, *out, *outm;
    int B, n, H, D, m, K, p, np, b, i, e, lens[8], c;
    size_t N, NP;
    float *qf, *kf, *vf, *cf, *of;
    if (!T_CHECK(T_FIXTURE(path, "dims", dims, 6), "cannot read tests/fixtures/%s (run from the repository root, or set "
                 "ATTN_FIXTURES)", path)) return;
    if (!T_CHECK(nys_dims(dims, &B, &n, &H, &D, &m, &K), "fixture %s: dims out of range", path)) return;
    N = (size_t)B * n * H * D;
    lensd = nys_fix(path, "lens", (size_t)B);
    q = nys_fix(path, "q", N); k = nys_fix(path, "k", N); v = nys_fix(path, "v", N);
    conv = nys_fix(path, "conv", (size_t)H * K); out = nys_fix(path, "out", N); outm = nys_fix(path, "out_mask", N);
    if (!T_CHECK(lensd && q && k && v && conv && out && outm, "fixture %s: malformed", path)) return;
    np = m * ((n + m - 1) / m); p = np - n; NP = (size_t)B * np * H * D;
    qf = (float *)calloc(NP, sizeof(float)); kf = (float *)calloc(NP, sizeof(float));
    vf = (float *)calloc(NP, sizeof(float)); of = (float *)t_xmalloc(NP * sizeof(float));
    cf = (float *)t_xmalloc((size_t)H * K * sizeof(float));
    for (i = 0; i < H * K; ++i) cf[i] = (float)conv[i];
    printf("     nystrom-attention fixture (B %d, n %d, H %d, d %d, m %d, conv %d), max |diff| on valid rows:\n      ", B, n, H, D, m, K);
    for (c = 0; c < 5; ++c) {
        /* 0, 1: rule LUCIDRAINS on the n rows as they are, without / with the mask;
           2, 3, 4: p zero rows prepended by hand, rule ZERO: batch Z0, per-head Z0, with the mask */
        const int by_hand = c >= 2, masked = c == 1 || c == 4, len = by_hand ? np : n, off = by_hand ? p : 0;
        attn_desc d;
        double err = 0.0;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM;
        d.nystrom.landmarks = m;
        d.nystrom.conv = cf; d.nystrom.conv_kernel = K;
        d.nystrom.padding_rule = by_hand ? ATTN_NYSTROM_PADDING_ZERO : ATTN_NYSTROM_PADDING_LUCIDRAINS;
        d.nystrom.pinv_init = c == 3 ? ATTN_NYSTROM_PINV_PER_HEAD : ATTN_NYSTROM_PINV_BATCH;
        for (b = 0; b < B; ++b) lens[b] = off + (int)lensd[b];
        if (masked) d.seqlens_k = lens;
        memset(qf, 0, NP * sizeof(float)); memset(kf, 0, NP * sizeof(float)); memset(vf, 0, NP * sizeof(float));
        for (b = 0; b < B; ++b)   /* row i of sequence b -> row off + i */
            for (i = 0; i < n * H * D; ++i) {
                const size_t src = (size_t)b * n * H * D + i, dst = ((size_t)b * len + off) * H * D + i;
                qf[dst] = (float)q[src]; kf[dst] = (float)k[src]; vf[dst] = (float)v[src];
            }
        T_CHECK(attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, len, H, D), attn_tensor_dense(kf, ATTN_F32, B, len, H, D),
                             attn_tensor_dense(vf, ATTN_F32, B, len, H, D), attn_tensor_dense(of, ATTN_F32, B, len, H, D), NULL) == ATTN_OK,
                "nystrom on the nystrom-attention fixture (%d)", c);
        for (b = 0; b < B; ++b)
            for (i = 0; i < (masked ? (int)lensd[b] : n); ++i)
                for (e = 0; e < H * D; ++e) {
                    const double x = fabs(of[((size_t)b * len + off + i) * H * D + e] - (masked ? outm : out)[((size_t)b * n + i) * H * D + e]);
                    if (!(x <= err)) err = x != x ? INFINITY : x;
                }
        if (c <= 2) T_CHECK(err <= 2e-5, "nystrom vs nystrom-attention (case %d): max |diff| %.3g", c, err);
        printf("%s %.2g%s", c == 0 ? "rule LUCIDRAINS: no mask" : c == 1 ? ", mask" : c == 2 ? "; by hand: no mask" :
               c == 3 ? " (per-head Z0" : ", mask (nearest call)", err, c == 3 ? ")" : c == 4 ? "\n" : "");
    }
    free(lensd); free(q); free(k); free(v); free(conv); free(out); free(outm);
    free(qf); free(kf); free(vf); free(of); free(cf);
}

/* Approximation error vs exact attention for m in {16, 32, 64, 128} on a fixed input (reported) */
static void test_nystrom_error_report(void) {
    t_rng r = t_rng_seed(1909);
    const int n = T_QUICK ? 256 : 512, ms[5] = { 16, 32, 64, 128, 0 };
    fx f = fx_make(ATTN_F32, ATTN_F32, 1, n, n, 2, 2, 32, 32, 0, &r, 0.7);
    attn_tensor o2 = fx_tensor(ATTN_F32, 1, n, 2, 32, 0);
    attn_desc d, x;
    double *ex, err[5];
    int i;
    memset(&x, 0, sizeof x);
    T_CHECK(attn_forward(&x, f.q, f.k, f.v, o2, NULL) == ATTN_OK, "exact");
    ex = out_get(&o2);
    printf("     nystrom error vs exact (n %d, d 32, q,k ~ N(0, 0.49), max-normalised):", n);
    for (i = 0; i < 5; ++i) {
        double *a;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM; d.nystrom.landmarks = ms[i] ? ms[i] : n;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom m %d", d.nystrom.landmarks);
        a = out_get(&f.out);
        err[i] = t_max_norm_err(ex, a, out_n(&o2));
        printf(" m %d: %.3g%s", d.nystrom.landmarks, err[i], i < 4 ? "," : "\n");
        free(a);
    }
    T_CHECK(err[3] < err[0] && err[0] < 1.0, "nystrom error should fall from m 16 (%.3g) to 128 (%.3g)", err[0], err[3]);
    T_CHECK(err[4] == 0.0, "nystrom m = n error %.3g", err[4]);
    free(ex); free(o2.data); fx_free(&f);
}

/* ---- error paths ------------------------------------------------------------------------------ */

/* call must return exactly want and leave out (and lse) untouched */
static void expect_status(const attn_desc *d, const fx *f, float *lse, attn_status want, const char *what) {
    const size_t ob = t_bytes(&f->out);
    float lbuf[64];
    attn_status s;
    t_sentinel(f->out.data, ob, 0x3B);
    t_sentinel(lbuf, sizeof lbuf, 0x11);
    s = attn_forward(d, f->q, f->k, f->v, f->out, lse ? lbuf : NULL);
    if (T_CHECK(s == want, "%s: got %s, want %s", what, attn_status_str(s), attn_status_str(want)) &&
        T_CHECK(t_sentinel_ok(f->out.data, ob, 0x3B) && t_sentinel_ok(lbuf, sizeof lbuf, 0x11), "%s: output written", what))
        t_status_provoked[want] = 1;
}

static void test_lowrank_errors(void) {
    t_rng r = t_rng_seed(1910);
    fx f = fx_make(ATTN_F32, ATTN_F32, 1, 8, 8, 2, 2, 4, 4, 0, &r, 1.0);
    fx g = fx_make(ATTN_F32, ATTN_F32, 1, 8, 6, 2, 2, 4, 4, 0, &r, 1.0);
    float *e = rand_mat(&r, 2 * 4 * 8, 0.3), w[2 * 35], a[4] = { 0, 0, 0, 0 }, z[4];
    attn_desc d0, d;
    int dummy[1] = { 8 };
    float dummyf[2] = { 0, 0 };
    memset(w, 0, sizeof w);
    memset(&d0, 0, sizeof d0);
    d0.kind = ATTN_LINFORMER; d0.linformer.e = e; d0.linformer.k = 4; d0.linformer.n = 8; d0.linformer.shared_kv = 1;
    d = d0; T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "linformer base call");
    d = d0; d.linformer.e = NULL; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_NULL_E, "linformer e NULL");
    d = d0; d.linformer.shared_kv = 0; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_NULL_F, "linformer f NULL");
    d = d0; d.linformer.n = 7; d.linformer.k = 4; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_N, "linformer n < k.seq");
    d = d0; d.linformer.k = 9; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_K, "linformer k > n");
    d = d0; d.linformer.k = 0; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_K, "linformer k 0");
    d = d0; d.linformer.shared_heads = 2; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_SHARED_HEADS, "linformer shared_heads");
    d = d0; d.linformer.shared_kv = -1; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_SHARED_KV, "linformer shared_kv");
    d = d0; d.causal = 1; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_MASK, "linformer causal");
    d = d0; d.varlen_batch = 1; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_MASK, "linformer varlen_batch without cu_seqlens");   /* packing: test_packed.c */
    { static const int big[2] = { 9, 9 }; d = d0; d.seqlens_k = big; expect_status(&d, &f, NULL, ATTN_ERR_SEQLENS_K, "linformer seqlens_k > k.seq"); }
    d = d0; d.alibi_slopes = dummyf; expect_status(&d, &f, NULL, ATTN_ERR_LINFORMER_MASK, "linformer alibi");
    d = d0; d.scale = INFINITY; expect_status(&d, &f, NULL, ATTN_ERR_SCALE, "linformer scale (exact kernel's check)");
    d = d0; d.n_threads = -1; expect_status(&d, &f, NULL, ATTN_ERR_N_THREADS, "linformer n_threads");
    d = d0; { attn_tensor q2 = f.q; fx h = f; q2.data = NULL; h.q = q2; expect_status(&d, &h, NULL, ATTN_ERR_NULL_Q, "linformer q NULL"); }
    /* decode and step are not operations of the low-rank kinds, nor is Nystrom's backward */
    T_CHECK(attn_decode(&d0, f.q, NULL, f.out, NULL) == ATTN_ERR_KIND_OP, "linformer decode: KIND_OP");
    {   /* backward: the user's dk/dv checked before anything is written */
        fx h = fx_make(ATTN_F32, ATTN_F32, 1, 8, 8, 2, 2, 4, 4, 0, &r, 1.0);   /* dq, dk, dv */
        float lse[16];
        attn_tensor dk2 = h.k;
        const size_t bq = t_bytes(&h.q), bk = t_bytes(&h.k), bv = t_bytes(&h.v);
        attn_status st;
        T_CHECK(attn_forward(&d0, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "linformer forward for backward");
        t_sentinel(h.q.data, bq, 1); t_sentinel(h.k.data, bk, 2); t_sentinel(h.v.data, bv, 3);
        dk2.data = NULL;
        st = attn_backward(&d0, f.q, f.k, f.v, f.out, f.out, lse, h.q, dk2, h.v);
        T_CHECK(st == ATTN_ERR_BWD_NULL_DK, "linformer backward dk NULL: %s", attn_status_str(st));
        dk2 = h.k; dk2.seq = 7;
        st = attn_backward(&d0, f.q, f.k, f.v, f.out, f.out, lse, h.q, dk2, h.v);
        T_CHECK(st == ATTN_ERR_BWD_DK_SHAPE, "linformer backward dk shape: %s", attn_status_str(st));
        st = attn_backward(&d0, f.q, f.k, f.v, f.out, f.out, NULL, h.q, h.k, h.v);
        T_CHECK(st == ATTN_ERR_BWD_NULL_LSE, "linformer backward lse NULL: %s", attn_status_str(st));
        d = d0; d.linformer.k = 9;
        st = attn_backward(&d, f.q, f.k, f.v, f.out, f.out, lse, h.q, h.k, h.v);
        T_CHECK(st == ATTN_ERR_LINFORMER_K, "linformer backward k > n: %s", attn_status_str(st));
        T_CHECK(t_sentinel_ok(h.q.data, bq, 1) && t_sentinel_ok(h.k.data, bk, 2) && t_sentinel_ok(h.v.data, bv, 3),
                "linformer backward error wrote an output");
        d = d0; d.kind = ATTN_NYSTROM; d.nystrom.landmarks = 4;
        T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, f.out, lse, h.q, h.k, h.v) == ATTN_ERR_NYSTROM_LSE &&
                t_sentinel_ok(h.q.data, bq, 1) && t_sentinel_ok(h.k.data, bk, 2) && t_sentinel_ok(h.v.data, bv, 3),
                "nystrom backward with an lse: ATTN_ERR_NYSTROM_LSE, nothing written (its backward: test_nystrom_bwd.c)");
        fx_free(&h);
    }

    memset(&d0, 0, sizeof d0);
    d0.kind = ATTN_NYSTROM; d0.nystrom.landmarks = 4;
    d = d0; T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom base call");
    d = d0; d.nystrom.landmarks = 3; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_DIVIDE, "nystrom m does not divide n");
    d = d0; d.nystrom.landmarks = 4; expect_status(&d, &g, NULL, ATTN_ERR_NYSTROM_DIVIDE, "nystrom m does not divide k.seq");
    d = d0; d.nystrom.landmarks = 3; d.nystrom.pad = 1; T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom pad accepts m 3");
    d = d0; d.nystrom.landmarks = 9; d.nystrom.pad = 1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_LANDMARKS, "nystrom m > n");
    d = d0; d.nystrom.landmarks = -1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_LANDMARKS, "nystrom m < 0");
    d = d0; d.nystrom.landmarks = 0; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_LANDMARKS, "nystrom default 64 > n");
    d = d0; d.nystrom.iterations = -1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_ITERATIONS, "nystrom iterations < 0");
    d = d0; d.nystrom.pad = 2; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_PAD, "nystrom pad");
    d = d0; d.nystrom.conv = w; d.nystrom.conv_kernel = 4; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_CONV_KERNEL, "nystrom even kernel");
    d = d0; d.nystrom.conv = w; d.nystrom.conv_kernel = -3; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_CONV_KERNEL, "nystrom negative kernel");
    d = d0; d.nystrom.conv = w; d.nystrom.conv_kernel = 35; d.nystrom.landmarks = 2; expect_status(&d, &g, NULL, ATTN_ERR_NYSTROM_CONV_SEQ, "nystrom conv with q.seq != k.seq");
    {   /* issue 27 item 4: conv given, conv_kernel 0 read 35 taps per head of a 3-tap filter */
        float *w3 = rand_mat(&r, 2 * 3, 0.2);
        d = d0; d.nystrom.conv = w3; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_CONV_TAPS, "nystrom conv with conv_kernel 0");
        d = d0; d.nystrom.conv = w3; d.nystrom.conv_kernel = 3; T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom conv with conv_kernel 3");
        d = d0; d.nystrom.conv_kernel = 5; T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom conv_kernel without conv is not read");
        free(w3);
    }
    d = d0; d.causal = 1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_MASK, "nystrom causal");
    d = d0; d.softcap = 1.0f; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_MASK, "nystrom softcap");
    d = d0; d.dropout_p = 0.1f; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_MASK, "nystrom dropout");
    d = d0; expect_status(&d, &f, dummyf, ATTN_ERR_NYSTROM_LSE, "nystrom lse");
    d = d0; d.scale = NAN; expect_status(&d, &f, NULL, ATTN_ERR_SCALE, "nystrom scale (exact kernel's check)");
    {   /* padding: the rule and Z0 fields, the lengths, varlen */
        int bad_k[1] = { 9 }, bad_q[1] = { -1 };
        d = d0; d.nystrom.padding_rule = (attn_nystrom_padding)3; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_PADDING_RULE, "nystrom padding_rule 3");
        d = d0; d.nystrom.padding_rule = (attn_nystrom_padding)-1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_PADDING_RULE, "nystrom padding_rule -1");
        d = d0; d.nystrom.pinv_init = (attn_nystrom_pinv_init)2; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_PINV_INIT, "nystrom pinv_init 2");
        d = d0; d.seqlens_k = bad_k; expect_status(&d, &f, NULL, ATTN_ERR_SEQLENS_K, "nystrom seqlens_k > k.seq");
        d = d0; d.seqlens_q = bad_q; expect_status(&d, &f, NULL, ATTN_ERR_SEQLENS_Q, "nystrom seqlens_q < 0");
        d = d0; d.varlen_batch = 1; expect_status(&d, &f, NULL, ATTN_ERR_NYSTROM_MASK, "nystrom varlen_batch without cu_seqlens");   /* packing: test_packed.c */
        d = d0; d.seqlens_k = dummy; d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_HF; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, NULL) == ATTN_OK, "nystrom seqlens_k, HF rule, batch Z0");
    }
    {   /* one rule for iterations: 0 is 6 in attn_nystrom_pinv as in the desc */
        float a2[4] = { 0.7f, 0.3f, 0.4f, 0.6f }, z0[4], z6[4];
        T_CHECK(attn_nystrom_pinv(2, 0, a2, z0) == ATTN_OK && attn_nystrom_pinv(2, 6, a2, z6) == ATTN_OK &&
                memcmp(z0, z6, sizeof z0) == 0, "attn_nystrom_pinv: iterations 0 is not 6");
    }
    {   /* the public pseudo-inverse */
        float one[1] = { 2.0f };
        memcpy(z, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16);
        T_CHECK(attn_nystrom_pinv(2, 6, NULL, z) == ATTN_ERR_NYSTROM_PINV_NULL, "pinv a NULL");
        T_CHECK(attn_nystrom_pinv(2, 6, a, NULL) == ATTN_ERR_NYSTROM_PINV_NULL, "pinv z NULL");
        T_CHECK(attn_nystrom_pinv(0, 6, a, z) == ATTN_ERR_NYSTROM_PINV_M, "pinv m 0");
        T_CHECK(attn_nystrom_pinv(2, -1, a, z) == ATTN_ERR_NYSTROM_ITERATIONS, "pinv negative iterations");
        T_CHECK(attn_nystrom_pinv(2, 6, a, z) == ATTN_ERR_NYSTROM_PINV_A, "pinv zero matrix");
        T_CHECK(memcmp(z, "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10", 16) == 0, "pinv error wrote z");
        t_status_provoked[ATTN_ERR_NYSTROM_PINV_NULL] = t_status_provoked[ATTN_ERR_NYSTROM_PINV_M] = 1;
        t_status_provoked[ATTN_ERR_NYSTROM_PINV_A] = 1;
        T_CHECK(attn_nystrom_pinv(1, 6, one, z) == ATTN_OK && fabs(z[0] - 0.5) < 1e-6, "pinv of [2] = %g", (double)z[0]);
    }
    {   /* issue 27: z overlapping a is refused (the docs forbid it); a result that is not finite
           (the iteration diverged) is a status, not ATTN_OK with inf/NaN, and z is untouched */
        float b[8] = { 0.7f, 0.3f, 0.4f, 0.6f, 0, 0, 0, 0 }, bad[4] = { 3.0f, 1.0f, -2.9f, 0.0f };
        static const unsigned char pat[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
        float keep[8];
        attn_status s;
        memcpy(keep, b, sizeof b);
        s = attn_nystrom_pinv(2, 6, b, b);
        t_expect_status(s, ATTN_ERR_NYSTROM_PINV_ALIAS, "low-rank", "pinv z == a");
        s = attn_nystrom_pinv(2, 6, b, b + 2);
        t_expect_status(s, ATTN_ERR_NYSTROM_PINV_ALIAS, "low-rank", "pinv z overlapping a's second row");
        T_CHECK(memcmp(b, keep, sizeof b) == 0, "pinv alias error wrote a or z");
        T_CHECK(attn_nystrom_pinv(2, 6, b, b + 4) == ATTN_OK, "pinv z right after a (no overlap)");
        memcpy(z, pat, 16);
        s = attn_nystrom_pinv(2, 6, bad, z);
        t_expect_status(s, ATTN_ERR_NYSTROM_PINV_DIVERGED, "low-rank", "pinv of a matrix the iteration cannot invert");
        T_CHECK(memcmp(z, pat, 16) == 0, "pinv divergence error wrote z");
    }
    {   /* issue 27 item 5: one checked task count; Linformer runs 2 B Hkv projection tasks and
           Nystrom B Hq + B Hkv landmark tasks, which wrapped an int with B H just under INT_MAX */
        float dummy[4] = { 0, 0, 0, 0 };
        attn_tensor t1 = attn_tensor_dense(dummy, ATTN_F32, 32768, 1, 65535, 1), t2 = attn_tensor_dense(dummy, ATTN_F32, 32768, 2, 65535, 1);
        size_t n = 77;
        attn_status s;
        d = d0; d.kind = ATTN_LINFORMER; d.linformer.e = dummy; d.linformer.k = 1; d.linformer.n = 1; d.linformer.shared_kv = 1;
        d.linformer.shared_heads = 1;
        s = attn_workspace_size(&d, t1, t1, t1, &n);
        t_expect_status(s, ATTN_ERR_OVERFLOW, "low-rank", "linformer workspace size, 2 B Hkv > INT_MAX");
        s = attn_backward_workspace_size(&d, t1, t1, t1, &n);
        t_expect_status(s, ATTN_ERR_OVERFLOW, "low-rank", "linformer backward workspace size, 2 B Hkv > INT_MAX");
        memset(&d, 0, sizeof d); d.kind = ATTN_NYSTROM; d.nystrom.landmarks = 1;
        s = attn_workspace_size(&d, t2, t2, t2, &n);
        t_expect_status(s, ATTN_ERR_OVERFLOW, "low-rank", "nystrom workspace size, B Hq + B Hkv > INT_MAX");
        T_CHECK(n == 77, "low-rank task overflow: a size was written");
    }
    T_CHECK(strstr(attn_kind_name(ATTN_LINFORMER), "Linformer") != NULL && strstr(attn_kind_name(ATTN_NYSTROM), "Nystrom") != NULL,
            "kind names");
    free(e); fx_free(&f); fx_free(&g);
}

/* ---- Linformer backward: finite differences of a double-precision forward ---------------- */

typedef struct {
    int B, Sq, Sk, Hq, Hk, D, Dv, kp, n, sh, skv;
    double *q, *k, *v, *e, *f, *dout;    /* dense [B][S][H][dim]; E, F [ne][kp][n] */
    const int *lens;                     /* seqlens_k: keys j >= lens[b] zeroed before the projection */
} lin_prob;

static double lin_loss(const lin_prob *P) {
    const int g = P->Hq / P->Hk;
    double *Kp = (double *)t_xmalloc(sizeof(double) * (size_t)P->kp * P->D), *Vp = (double *)t_xmalloc(sizeof(double) * (size_t)P->kp * P->Dv);
    double *Q = (double *)t_xmalloc(sizeof(double) * (size_t)P->Sq * P->D), *o = (double *)t_xmalloc(sizeof(double) * (size_t)P->Sq * P->Dv);
    double L = 0.0;
    int b, h, i, j, c;
    for (b = 0; b < P->B; ++b)
        for (h = 0; h < P->Hq; ++h) {
            const int hk = h / g;
            const double *E = P->e + (P->sh ? 0 : (size_t)hk * P->kp * P->n), *F = (P->skv ? P->e : P->f) + (P->sh ? 0 : (size_t)hk * P->kp * P->n);
            for (i = 0; i < P->kp; ++i) {
                for (c = 0; c < P->D; ++c) {
                    double a = 0.0;
                    for (j = 0; j < (P->lens ? P->lens[b] : P->Sk); ++j) a += E[(size_t)i * P->n + j] * P->k[(((size_t)b * P->Sk + j) * P->Hk + hk) * P->D + c];
                    Kp[(size_t)i * P->D + c] = a;
                }
                for (c = 0; c < P->Dv; ++c) {
                    double a = 0.0;
                    for (j = 0; j < (P->lens ? P->lens[b] : P->Sk); ++j) a += F[(size_t)i * P->n + j] * P->v[(((size_t)b * P->Sk + j) * P->Hk + hk) * P->Dv + c];
                    Vp[(size_t)i * P->Dv + c] = a;
                }
            }
            for (i = 0; i < P->Sq; ++i)
                for (c = 0; c < P->D; ++c) Q[(size_t)i * P->D + c] = P->q[(((size_t)b * P->Sq + i) * P->Hq + h) * P->D + c];
            r_attn(Q, P->Sq, Kp, P->kp, Vp, P->D, P->Dv, 1.0 / sqrt((double)P->D), 0.0, o, NULL);
            for (i = 0; i < P->Sq; ++i)
                for (c = 0; c < P->Dv; ++c) L += o[(size_t)i * P->Dv + c] * P->dout[(((size_t)b * P->Sq + i) * P->Hq + h) * P->Dv + c];
        }
    free(Kp); free(Vp); free(Q); free(o);
    return L;
}

/* max-normalised error of the library's gradient g (n floats) against central differences of x */
static double fd_err(lin_prob *P, double *x, const float *g, size_t n) {
    double *fd = (double *)t_xmalloc(sizeof(double) * n), *gd = (double *)t_xmalloc(sizeof(double) * n), err;
    size_t i;
    for (i = 0; i < n; ++i) {
        const double x0 = x[i], eps = 1e-6;
        double lp, lm;
        x[i] = x0 + eps; lp = lin_loss(P);
        x[i] = x0 - eps; lm = lin_loss(P);
        x[i] = x0;
        fd[i] = (lp - lm) / (2 * eps); gd[i] = g[i];
    }
    err = t_max_norm_err(fd, gd, n);
    free(fd); free(gd);
    return err;
}

static double *to_double(const float *x, size_t n) {
    double *d = (double *)t_xmalloc(sizeof(double) * n);
    size_t i;
    for (i = 0; i < n; ++i) d[i] = x[i];
    return d;
}

static void test_linformer_backward(void) {
    t_rng r = t_rng_seed(1911);
    int cfg;
    for (cfg = 0; cfg < 9; ++cfg) {   /* 6: f16 inputs, bf16 gradients; 7, 8: padded keys (seqlens_k) */
        lin_prob P;
        const int only_de = cfg == 4, threads_check = cfg == 5;
        const double tol = cfg == 6 ? 1e-2 : 1e-5;
        fx f, gr;
        attn_desc d;
        float *e, *fm, *de, *df, *lse, *dout;
        attn_tensor to;
        size_t ne, nq, nk, nv, no, i;
        double err;
        attn_status s;
        P.B = 2; P.Sq = 5; P.Sk = 6 + (cfg & 1); P.Hq = 4; P.Hk = 2; P.D = 4; P.Dv = 3; P.kp = 3; P.n = 8;
        P.sh = cfg == 1 || cfg == 3 || cfg == 8; P.skv = cfg == 2 || cfg == 3 || cfg == 8;
        P.lens = NULL;
        f = fx_make(cfg == 6 ? ATTN_F16 : ATTN_F32, ATTN_F32, P.B, P.Sq, P.Sk, P.Hq, P.Hk, P.D, P.Dv, 0, &r, 1.0);
        gr = fx_make(cfg == 6 ? ATTN_BF16 : ATTN_F32, ATTN_F32, P.B, P.Sq, P.Sk, P.Hq, P.Hk, P.D, P.Dv, cfg & 1, &r, 1.0);   /* dq, dk, dv (strided for odd cfg) */
        ne = (size_t)P.kp * P.n * (P.sh ? 1 : P.Hk);
        nq = (size_t)P.B * P.Sq * P.Hq * P.D; nk = (size_t)P.B * P.Sk * P.Hk * P.D; nv = (size_t)P.B * P.Sk * P.Hk * P.Dv;
        no = (size_t)P.B * P.Sq * P.Hq * P.Dv;
        e = rand_mat(&r, ne, 0.7); fm = rand_mat(&r, ne, 0.7);
        de = (float *)t_xmalloc(sizeof(float) * ne); df = (float *)t_xmalloc(sizeof(float) * ne);
        t_sentinel(de, sizeof(float) * ne, 7); t_sentinel(df, sizeof(float) * ne, 8);
        dout = rand_mat(&r, no, 1.0);
        lse = (float *)t_xmalloc(sizeof(float) * (size_t)P.B * P.Hq * P.Sq);
        to = attn_tensor_dense(dout, ATTN_F32, P.B, P.Sq, P.Hq, P.Dv);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.f = P.skv ? NULL : fm; d.linformer.k = P.kp; d.linformer.n = P.n;
        d.linformer.shared_heads = P.sh; d.linformer.shared_kv = P.skv;
        d.linformer.de = de; d.linformer.df = only_de ? NULL : df;
        d.n_threads = 1 + cfg % 3;
        if (cfg >= 7) {
            static const int lens7[2] = { 4, 7 }, lens8[2] = { 0, 5 };
            P.lens = d.seqlens_k = cfg == 7 ? lens7 : lens8;
        }
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "linformer forward (backward test)");
        s = attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, gr.q, gr.k, gr.v);
        T_CHECK(s == ATTN_OK, "linformer backward: %s", attn_status_str(s));
        P.q = out_get(&f.q); P.k = out_get(&f.k); P.v = out_get(&f.v); P.e = to_double(e, ne); P.f = to_double(fm, ne); P.dout = to_double(dout, no);
        {   /* gradients read back densely from the (maybe strided) outputs */
            float *gq = (float *)t_xmalloc(sizeof(float) * nq), *gk = (float *)t_xmalloc(sizeof(float) * nk), *gv = (float *)t_xmalloc(sizeof(float) * nv);
            double *t;
            t = out_get(&gr.q); for (i = 0; i < nq; ++i) gq[i] = (float)t[i]; free(t);
            t = out_get(&gr.k); for (i = 0; i < nk; ++i) gk[i] = (float)t[i]; free(t);
            t = out_get(&gr.v); for (i = 0; i < nv; ++i) gv[i] = (float)t[i]; free(t);
            err = fd_err(&P, P.q, gq, nq); T_CHECK(err <= tol, "linformer dq vs finite differences: %.3g (cfg %d)", err, cfg);
            err = fd_err(&P, P.k, gk, nk); T_CHECK(err <= tol, "linformer dk vs finite differences: %.3g (cfg %d)", err, cfg);
            err = fd_err(&P, P.v, gv, nv); T_CHECK(err <= tol, "linformer dv vs finite differences: %.3g (cfg %d)", err, cfg);
            err = fd_err(&P, P.e, de, ne); T_CHECK(err <= tol, "linformer dE vs finite differences: %.3g (cfg %d sh %d kv %d)", err, cfg, P.sh, P.skv);
            if (!P.skv && !only_de) {
                err = fd_err(&P, P.f, df, ne); T_CHECK(err <= tol, "linformer dF vs finite differences: %.3g (cfg %d)", err, cfg);
            } else {
                T_CHECK(t_sentinel_ok(df, sizeof(float) * ne, 8), "linformer df written when it should not be (cfg %d)", cfg);
            }
            free(gq); free(gk); free(gv);
        }
        if (threads_check) {   /* bitwise the same for 1, 2, 3 threads and a caller workspace */
            float *ref = (float *)t_xmalloc(sizeof(float) * (nq + nk + nv + ne)), *cur = (float *)t_xmalloc(sizeof(float) * (nq + nk + nv + ne));
            size_t ws = 0;
            void *buf;
            int t;
            for (t = 1; t <= 4; ++t) {
                d.n_threads = t == 4 ? 2 : t;
                if (t == 4) {
                    T_CHECK(attn_backward_workspace_size(&d, f.q, f.k, f.v, &ws) == ATTN_OK && ws > 0, "linformer backward workspace query");
                    buf = t_xmalloc(ws); memset(buf, 0xFF, ws); d.workspace = buf; d.workspace_size = ws;
                }
                T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, gr.q, gr.k, gr.v) == ATTN_OK, "linformer backward threads");
                memcpy(cur, gr.q.data, sizeof(float) * nq); memcpy(cur + nq, gr.k.data, sizeof(float) * nk);
                memcpy(cur + nq + nk, gr.v.data, sizeof(float) * nv); memcpy(cur + nq + nk + nv, de, sizeof(float) * ne);
                if (t == 1) memcpy(ref, cur, sizeof(float) * (nq + nk + nv + ne));
                else T_CHECK(memcmp(ref, cur, sizeof(float) * (nq + nk + nv + ne)) == 0, "linformer backward: run %d differs from 1 thread", t);
                if (t == 4) { d.workspace = NULL; free(buf); }
            }
            free(ref); free(cur);
        }
        free(P.q); free(P.k); free(P.v); free(P.e); free(P.f); free(P.dout);
        free(e); free(fm); free(de); free(df); free(lse); free(dout); fx_free(&f); fx_free(&gr);
    }
}

/* dk, dv over more rows than one 256-row block (S 600, padded to 500 keys): fp32 dk, dv laid out
   as the product (written in place, one product over the rows) are bitwise those of BHSD dk, dv
   (converted block by block) and of 3 threads; and dk = E^T dK' row by row, checked in double:
   E's first kp columns are the identity, so dk's first kp rows are dK' itself. */
static void test_linformer_long_rows(void) {
    t_rng r = t_rng_seed(1941);
    const int B = 1, Sq = 8, Sk = 600, H = 2, D = 8, kp = 16, n = 600, L = 500;
    static const int lens[1] = { 500 };
    fx f = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, H, H, D, D, 0, &r, 1.0);
    fx g[3];
    float *e = rand_mat(&r, (size_t)kp * n, 0.2), *fm = rand_mat(&r, (size_t)kp * n, 0.2), *dout = rand_mat(&r, out_n(&f.out), 1.0);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * Sq);
    const attn_tensor to = attn_tensor_dense(dout, ATTN_F32, B, Sq, H, D);
    double *x[3][2], err = 0.0;
    attn_desc d;
    int i, j, c, t, w;
    for (i = 0; i < kp; ++i)
        for (j = 0; j < kp; ++j) e[(size_t)i * n + j] = fm[(size_t)i * n + j] = i == j ? 1.0f : 0.0f;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.f = fm; d.linformer.k = kp; d.linformer.n = n;
    d.linformer.shared_heads = 1; d.seqlens_k = lens; d.n_threads = 1;
    T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "linformer long rows: forward");
    for (t = 0; t < 3; ++t) {   /* 0: dense, 1 thread; 1: BHSD, 1 thread; 2: dense, 3 threads */
        g[t] = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, H, H, D, D, t == 1, &r, 1.0);
        d.n_threads = t == 2 ? 3 : 1;
        T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, g[t].q, g[t].k, g[t].v) == ATTN_OK, "linformer long rows: backward %d", t);
        x[t][0] = out_get(&g[t].k); x[t][1] = out_get(&g[t].v);
    }
    for (t = 1; t < 3; ++t)
        for (w = 0; w < 2; ++w)
            T_CHECK(memcmp(x[0][w], x[t][w], sizeof(double) * (size_t)Sk * H * D) == 0, "linformer long rows: %s of run %d differs",
                    w ? "dv" : "dk", t);
    for (w = 0; w < 2; ++w) {
        const float *E = w ? fm : e;
        const double *dx = x[0][w];
        double big = 0.0, worst = 0.0;
        for (j = 0; j < Sk * H * D; ++j) big = fmax(big, fabs(dx[j]));
        for (j = kp; j < Sk; ++j)
            for (c = 0; c < H * D; ++c) {
                double want = 0.0;
                if (j < L) for (i = 0; i < kp; ++i) want += (double)E[(size_t)i * n + j] * dx[(size_t)i * H * D + c];
                worst = fmax(worst, fabs(dx[(size_t)j * H * D + c] - want));
            }
        err = fmax(err, big > 0.0 ? worst / big : worst);
        T_CHECK(big > 0.0, "linformer long rows: %s is all zero", w ? "dv" : "dk");
    }
    T_CHECK(err <= 1e-5, "linformer long rows: dk, dv vs E^T dK', F^T dV' in double: %.3g", err);
    for (t = 0; t < 3; ++t) { free(x[t][0]); free(x[t][1]); fx_free(&g[t]); }
    free(e); free(fm); free(dout); free(lse); fx_free(&f);
}

/* The core's key splits (ATTN__LFM_SPLIT_TASKS): with E = F = the identity Linformer is exact
   attention over k, v, so dq, dk, dv match the double softmax-backward reference; 130 projected
   keys are 3 key blocks, cut in 1 split at B Hkv = 8 (two before) and 2 at B Hkv = 4 (GQA);
   bitwise the same on 1 and 3 threads and on a caller workspace of the queried size (query and
   call agree on the split). */
static void test_linformer_key_splits(void) {
    t_rng r = t_rng_seed(4301);
    int cfg;
    for (cfg = 0; cfg < 2; ++cfg) {
        const int B = 2, Sq = 20, Sk = 130, Hq = 4, Hk = cfg ? 2 : 4, D = 8, kp = Sk, n = Sk;
        fx f = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, D, 0, &r, 1.0), g[3];
        float *e = (float *)t_xmalloc(sizeof(float) * (size_t)kp * n), *dout = rand_mat(&r, out_n(&f.out), 1.0);
        float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq);
        const attn_tensor to = attn_tensor_dense(dout, ATTN_F32, B, Sq, Hq, D);
        double *q = out_get(&f.q), *k = out_get(&f.k), *v = out_get(&f.v), *o, *dd = to_double(dout, out_n(&f.out));
        double *rq = (double *)t_xmalloc(sizeof(double) * out_n(&f.q)), *rk = (double *)t_xmalloc(sizeof(double) * out_n(&f.k));
        double *rv = (double *)t_xmalloc(sizeof(double) * out_n(&f.v)), *x[3];
        const rb_dims z = { B, Sq, Sk, Hq, Hk, D, D, 1, 1 };
        attn_desc d, ds;
        size_t ws = 0, i;
        void *buf = NULL;
        int t;
        for (i = 0; i < (size_t)kp * n; ++i) e[i] = i % (size_t)(n + 1) == 0 ? 1.0f : 0.0f;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = e; d.linformer.k = kp; d.linformer.n = n;
        d.linformer.shared_heads = 1; d.linformer.shared_kv = 1; d.n_threads = 1;
        T_CHECK(attn_forward(&d, f.q, f.k, f.v, f.out, lse) == ATTN_OK, "linformer key splits: forward (cfg %d)", cfg);
        o = out_get(&f.out);
        memset(&ds, 0, sizeof ds);
        ref_backward(&ds, &z, q, k, v, dd, NULL, o, NULL, NULL, rq, rk, rv, NULL);
        for (t = 0; t < 3; ++t) {   /* 0: 1 thread; 1: 3 threads; 2: 2 threads on a caller workspace */
            g[t] = fx_make(ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hk, D, D, 0, &r, 1.0);
            d.n_threads = t + 1;
            if (t == 2) {
                T_CHECK(attn_backward_workspace_size(&d, f.q, f.k, f.v, &ws) == ATTN_OK && ws > 0, "linformer key splits: query");
                buf = t_xmalloc(ws); memset(buf, 0xFF, ws); d.workspace = buf; d.workspace_size = ws;
            }
            T_CHECK(attn_backward(&d, f.q, f.k, f.v, f.out, to, lse, g[t].q, g[t].k, g[t].v) == ATTN_OK,
                    "linformer key splits: backward %d (cfg %d)", t, cfg);
            if (t > 0)
                T_CHECK(memcmp(g[0].q.data, g[t].q.data, t_bytes(&g[t].q)) == 0 && memcmp(g[0].k.data, g[t].k.data, t_bytes(&g[t].k)) == 0 &&
                        memcmp(g[0].v.data, g[t].v.data, t_bytes(&g[t].v)) == 0, "linformer key splits: run %d differs (cfg %d)", t, cfg);
        }
        x[0] = out_get(&g[0].q); x[1] = out_get(&g[0].k); x[2] = out_get(&g[0].v);
        T_CHECK(t_max_norm_err(rq, x[0], out_n(&f.q)) <= 1e-5, "linformer key splits: dq vs double: %.3g (cfg %d)",
                t_max_norm_err(rq, x[0], out_n(&f.q)), cfg);
        T_CHECK(t_max_norm_err(rk, x[1], out_n(&f.k)) <= 1e-5, "linformer key splits: dk vs double: %.3g (cfg %d)",
                t_max_norm_err(rk, x[1], out_n(&f.k)), cfg);
        T_CHECK(t_max_norm_err(rv, x[2], out_n(&f.v)) <= 1e-5, "linformer key splits: dv vs double: %.3g (cfg %d)",
                t_max_norm_err(rv, x[2], out_n(&f.v)), cfg);
        for (t = 0; t < 3; ++t) { free(x[t]); fx_free(&g[t]); }
        free(buf); free(e); free(dout); free(lse); free(q); free(k); free(v); free(o); free(dd); free(rq); free(rk); free(rv);
        fx_free(&f);
    }
}

/* The kinds' arrays under the memory rule (attn_tensor): Linformer's E, F (inputs), dE, dF
   (backward outputs), proj (forward output, backward input) and Nystromformer's conv (input),
   dconv (backward output) may not meet an output / input of the same call: refused with
   ATTN_ERR_OUT_OVERLAP / ATTN_ERR_BWD_OVERLAP, every byte of the arena and of out, dq, dk, dv
   untouched. The disjoint layouts, and F = dE under shared_kv (F is not read), are accepted. */
typedef struct { float *arena; size_t na; attn_tensor out, dq, dk, dv; } ko_bufs;
static void ko_expect(int bwd, const attn_desc *d, const fx *f, const ko_bufs *K, attn_tensor dout, float *lse,
                      attn_status want, const char *what) {
    const attn_tensor *o[5];
    void *snap[5];
    size_t nb[5];
    attn_status s;
    int i, same = 1;
    o[0] = &K->out; o[1] = &K->dq; o[2] = &K->dk; o[3] = &K->dv; o[4] = NULL;
    for (i = 0; i < 5; ++i) {
        nb[i] = i < 4 ? t_bytes(o[i]) : K->na * sizeof(float);
        snap[i] = t_xmalloc(nb[i]);
        memcpy(snap[i], i < 4 ? o[i]->data : (void *)K->arena, nb[i]);
    }
    s = bwd ? attn_backward(d, f->q, f->k, f->v, K->out, dout, lse, K->dq, K->dk, K->dv)
            : attn_forward(d, f->q, f->k, f->v, K->out, lse);
    for (i = 0; i < 5; ++i) same &= memcmp(snap[i], i < 4 ? o[i]->data : (void *)K->arena, nb[i]) == 0;
    if (T_CHECK(s == want, "kind arrays, %s: got %s, want %s", what, attn_status_str(s), attn_status_str(want)) && want != ATTN_OK &&
        T_CHECK(same, "kind arrays, %s: refused but memory changed", what))
        t_status_provoked[want] = 1;
    for (i = 0; i < 5; ++i) free(snap[i]);
}
static void test_kind_array_overlap(void) {
    t_rng r = t_rng_seed(2203);
    const int B = 1, S = 8, H = 2, D = 4, kp = 4, n = 8, ne = H * kp * n, np = B * kp * H * (D + D);
    fx f = fx_make(ATTN_F32, ATTN_F32, B, S, S, H, H, D, D, 0, &r, 1.0);
    ko_bufs K;
    float *A, *e, *fm, *de, *df, *proj, *conv, *dconv, *lse = (float *)t_xmalloc(sizeof(float) * B * H * S);
    attn_tensor dout;
    attn_desc d0, d;
    K.na = 1024; K.arena = A = rand_mat(&r, K.na, 0.3);
    e = A; fm = A + ne; de = A + 2 * ne; df = A + 3 * ne; proj = A + 4 * ne; conv = proj + np; dconv = conv + 3 * H;
    K.out = f.out;
    K.dq = fx_tensor(ATTN_F32, B, S, H, D, 0); K.dk = fx_tensor(ATTN_F32, B, S, H, D, 0); K.dv = fx_tensor(ATTN_F32, B, S, H, D, 0);
    dout = fx_tensor(ATTN_F32, B, S, H, D, 0);
    t_fill_normal(&dout, &r, 1.0);
    memset(&d0, 0, sizeof d0);
    d0.kind = ATTN_LINFORMER; d0.linformer.e = e; d0.linformer.f = fm; d0.linformer.k = kp; d0.linformer.n = n;
    d0.linformer.de = de; d0.linformer.df = df; d0.linformer.proj = proj;
    ko_expect(0, &d0, &f, &K, dout, lse, ATTN_OK, "linformer forward storing proj");
    ko_expect(1, &d0, &f, &K, dout, lse, ATTN_OK, "linformer backward reading proj, dE and dF apart");
    d = d0; d.linformer.df = de;             ko_expect(1, &d, &f, &K, dout, lse, ATTN_ERR_BWD_OVERLAP, "dF is dE");
    d = d0; d.linformer.de = e + 3;          ko_expect(1, &d, &f, &K, dout, lse, ATTN_ERR_BWD_OVERLAP, "dE inside E");
    d = d0; d.linformer.de = (float *)K.dq.data + 5; ko_expect(1, &d, &f, &K, dout, lse, ATTN_ERR_BWD_OVERLAP, "dE inside dq");
    d = d0; d.linformer.proj = df + ne - 1;  ko_expect(1, &d, &f, &K, dout, lse, ATTN_ERR_BWD_OVERLAP, "proj (read) meets dF");
    d = d0; d.linformer.df = (float *)f.k.data; ko_expect(1, &d, &f, &K, dout, lse, ATTN_ERR_BWD_OVERLAP, "dF is k");
    d = d0; d.linformer.proj = e + ne / 2;   ko_expect(0, &d, &f, &K, dout, lse, ATTN_ERR_OUT_OVERLAP, "proj (written) meets E");
    d = d0; d.linformer.proj = (float *)f.q.data; ko_expect(0, &d, &f, &K, dout, lse, ATTN_ERR_OUT_OVERLAP, "proj is q");
    d = d0; d.linformer.f = (float *)f.out.data + 1; ko_expect(0, &d, &f, &K, dout, lse, ATTN_ERR_OUT_OVERLAP, "F inside out");
    d = d0; d.linformer.proj = NULL; d.linformer.shared_kv = 1; d.linformer.f = de; d.linformer.df = de;
    ko_expect(1, &d, &f, &K, dout, lse, ATTN_OK, "shared_kv: F and dF not used, may be dE");
    memset(&d0, 0, sizeof d0);
    d0.kind = ATTN_NYSTROM; d0.nystrom.landmarks = 4; d0.nystrom.conv = conv; d0.nystrom.conv_kernel = 3; d0.nystrom.dconv = dconv;
    ko_expect(0, &d0, &f, &K, dout, NULL, ATTN_OK, "nystrom forward with conv");
    ko_expect(1, &d0, &f, &K, dout, NULL, ATTN_OK, "nystrom backward with dconv apart");
    d = d0; d.nystrom.dconv = conv + 1;      ko_expect(1, &d, &f, &K, dout, NULL, ATTN_ERR_BWD_OVERLAP, "dconv meets conv");
    d = d0; d.nystrom.dconv = (float *)K.dk.data; ko_expect(1, &d, &f, &K, dout, NULL, ATTN_ERR_BWD_OVERLAP, "dconv is dk");
    d = d0; d.nystrom.conv = (float *)f.out.data; ko_expect(0, &d, &f, &K, dout, NULL, ATTN_ERR_OUT_OVERLAP, "conv is out");
    free(A); free(lse); free(K.dq.data); free(K.dk.data); free(K.dv.data); free(dout.data);
    fx_free(&f);
}

void test_lowrank(void) {
    test_linformer_backward();
    test_linformer_long_rows();
    test_linformer_key_splits();
    test_linformer_ref();
    test_linformer_fixture();
    test_linformer_identity();
    test_linformer_threads();
    test_linformer_workspace();
    test_linformer_proj();
    test_nystrom_pinv();
    test_nystrom_ref();
    test_nystrom_exact();
    test_nystrom_segments();
    test_nystrom_threads();
    test_nystrom_error_report();
    test_nystrom_padding_ref();
    test_nystrom_padding_props();
    test_nystrom_hf_fixture();
    test_nystrom_lucidrains_fixture();
    test_lowrank_errors();
    test_kind_array_overlap();
    t_packed_linformer();
}
