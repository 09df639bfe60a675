/* tests/test_layers.c - attention layers (attn_layer_forward/_backward, attn_layer_param_count,
   attn_layer_flops, attn_layer_workspace_size) against a naive double-precision reference layer
   written here from the formulas documented with attn_layer_kind (its own projections, W^A mix,
   masks via ref_visible and softmax; it never calls attn.h's implementation).

   TOLERANCES (fp32 storage and arithmetic; inputs N(0,1), weights N(0, 1/d_model)):
     forward:   |out - ref| <= TOL_FWD * max(1, max |ref|) over the whole output
     gradients: against central finite differences of the double reference (h = 1e-5, whose own
                error is ~1e-10): |g - fd| <= TOL_GRAD * max(1, max |fd|) per gradient tensor
     properties between two library results (Optimized == Standard with identity W^V, ...):
                TOL_FWD as above; causal Super's earlier rows: bitwise equal after a later
                token changes; thread counts, hook and caller workspace: bitwise equal.

   CONTENTS
     test_counts        paper parameter counts, FLOP counter, workspace query
     test_forward       every kind x self/cross x masks (causal, window, padding, sinks, ALiBi,
                        softcap, scale) x GQA vs the reference; threads, workspace, sgemm hook
     test_properties    Optimized == Standard(W^V = I); Efficient == Standard(W^K = W^V = I);
                        Super(W^A = I, b^A = 0) == Efficient; causal Super never reads later
                        tokens (and non-causal does)
     test_gradients     every gradient of every kind vs finite differences; unread fields untouched
     test_layer_errors  every layer status code: exact code, outputs untouched
     test_any_kind      every attn_kind x Standard/Optimized/Efficient/Super x self/cross against
                        the layer composed by hand (attn_sgemm + attn_forward/attn_backward); a
                        kind without a backward: the same status, nothing written; threads
     check_linformer_fd a Linformer layer (dE, dF, padding, GQA, shared_kv) against finite
                        differences of its own double reference
     test_any_kind_counts_errors  counts and FLOPs of the kinds' weights; refused combinations
                        (ATTN_ERR_LAYER_ATTN_KIND), the kinds' weights given twice or not at all
     test_packed_kinds  packed sequences (attn.cu_seqlens) with every kind that takes them, 5
                        segments (one of 1 row, one empty) x Standard/Optimized/Efficient/Super,
                        cross-attention: each segment through the layer alone (rows bitwise,
                        weight, E, F, conv gradients vs the segments' sum in double within 1e-6),
                        the queried workspace, threads; bad cu_seqlens and the kinds refusing
                        them: the kind's attn_forward status from every layer entry, nothing written */
#include "test.h"
#include "ref.h"

#define TOL_FWD 5e-6
#define TOL_GRAD 2e-5

static double g_worst_fwd, g_worst_grad;   /* largest passing errors, printed at the end */

enum { W_Q, W_BQ, W_K, W_BK, W_V, W_BV, W_O, W_BO, W_A, W_BA, W_D, W_COUNT };
static const char *const w_names[W_COUNT] = { "wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "wa", "ba", "wd" };

/* One layer configuration with its weights in double (reference) and float (library). */
typedef struct {
    attn_layer_desc d;
    int H, Hkv, dk, dm, ctx;
    size_t n[W_COUNT];          /* elements of each weight; 0 = not read by this kind */
    double *wd[W_COUNT];        /* double copies */
    float *wf[W_COUNT];         /* float copies (what the library reads) */
} lcfg;

static int reads(int kind, int w) {
    switch (w) {
    case W_Q: case W_BQ: return kind <= ATTN_LAYER_SUPER;
    case W_K: case W_BK: return kind == ATTN_LAYER_STANDARD || kind == ATTN_LAYER_OPTIMIZED;
    case W_V: case W_BV: return kind == ATTN_LAYER_STANDARD || kind >= ATTN_LAYER_DIRECT;
    case W_O: case W_BO: return 1;
    case W_A: case W_BA: return kind == ATTN_LAYER_SUPER;
    default: return kind >= ATTN_LAYER_DIRECT;
    }
}

static void lcfg_init(lcfg *c, int kind, int dm, int H, int Hkv, int ctx, t_rng *r) {
    int w;
    size_t i, dkv;
    memset(c, 0, sizeof *c);
    c->d.kind = (attn_layer_kind)kind; c->d.d_model = dm; c->d.heads = H; c->d.kv_heads = Hkv; c->d.context = ctx;
    c->H = H ? H : 1; c->Hkv = Hkv ? Hkv : c->H; c->dm = dm; c->dk = dm / c->H; c->ctx = ctx;
    dkv = (size_t)c->Hkv * c->dk;
    c->n[W_Q] = (size_t)dm * dm; c->n[W_BQ] = dm;
    c->n[W_K] = (size_t)dm * dkv; c->n[W_BK] = dkv;
    c->n[W_V] = (size_t)dm * dkv; c->n[W_BV] = dkv;
    c->n[W_O] = (size_t)dm * dm; c->n[W_BO] = dm;
    c->n[W_A] = (size_t)ctx * ctx; c->n[W_BA] = ctx; c->n[W_D] = (size_t)ctx * ctx;
    for (w = 0; w < W_COUNT; ++w) {
        if (!reads(kind, w)) c->n[w] = 0;
        if (!c->n[w]) continue;
        c->wd[w] = (double *)t_xmalloc(sizeof(double) * c->n[w]);
        c->wf[w] = (float *)t_xmalloc(sizeof(float) * c->n[w]);
        for (i = 0; i < c->n[w]; ++i) {
            double sd = (w == W_A) ? 1.0 / ctx : (w == W_D ? 1.0 : (w == W_BQ || w == W_BK || w == W_BV || w == W_BO || w == W_BA) ? 0.3 : 1.0 / sqrt((double)dm));
            c->wf[w][i] = (float)(sd * t_normal(r));
            c->wd[w][i] = c->wf[w][i];
        }
    }
}
static void lcfg_free(lcfg *c) {
    int w;
    for (w = 0; w < W_COUNT; ++w) { free(c->wd[w]); free(c->wf[w]); c->wd[w] = NULL; c->wf[w] = NULL; }
}
static attn_layer_weights lcfg_weights(const lcfg *c) {
    attn_layer_weights W;
    memset(&W, 0, sizeof W);
    W.wq = c->wf[W_Q]; W.bq = c->wf[W_BQ]; W.wk = c->wf[W_K]; W.bk = c->wf[W_BK];
    W.wv = c->wf[W_V]; W.bv = c->wf[W_BV]; W.wo = c->wf[W_O]; W.bo = c->wf[W_BO];
    W.wa = c->wf[W_A]; W.ba = c->wf[W_BA]; W.wd = c->wf[W_D];
    return W;
}

/* ---------------------------------------------------------------------------------------- */
/* The double reference layer                                                                */
/* ---------------------------------------------------------------------------------------- */

/* Y[m, n] = X[m, k] W[k, n] + b */
static void rproj(const double *X, int m, int k, const double *W, const double *b, int n, double *Y) {
    int i, j, p;
    for (i = 0; i < m; ++i)
        for (j = 0; j < n; ++j) {
            double s = b ? b[j] : 0.0;
            for (p = 0; p < k; ++p) s += X[(size_t)i * k + p] * W[(size_t)p * n + j];
            Y[(size_t)i * n + j] = s;
        }
}

/* out [B, lq, dm] from xq [B, lq, dm], xkv [B, lk, dm] (xkv == xq for self-attention) */
static void ref_layer(const lcfg *c, double *const *w, int B, int lq, int lk, const double *xq, const double *xkv,
                      double *out) {
    const attn_desc *ad = &c->d.attn;
    const int kind = c->d.kind, dm = c->dm, ctx = c->ctx, direct = kind >= ATTN_LAYER_DIRECT;
    const int H = direct ? 1 : c->H, dk = direct ? dm : c->dk, g = direct ? 1 : c->H / c->Hkv;
    const int dkv = c->Hkv * c->dk;
    const double scale = ad->scale != 0.0f ? ad->scale : 1.0 / sqrt((double)dk);
    const double dscale = ad->scale != 0.0f ? ad->scale : 1.0 / sqrt((double)dm);
    const int wrow = lk > lq ? lk - lq : 0;   /* W_D rows bottom-right aligned (tensor lengths) */
    double *Q = (double *)t_xmalloc(sizeof(double) * (size_t)lq * dm);
    double *K = (double *)t_xmalloc(sizeof(double) * (size_t)lk * dm);
    double *V = (double *)t_xmalloc(sizeof(double) * (size_t)lk * dm);
    double *A = (double *)t_xmalloc(sizeof(double) * (size_t)lq * dm);
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)lk);
    int b, h, i, j, e, t;
    for (b = 0; b < B; ++b) {
        const double *Xq = xq + (size_t)b * lq * dm, *Xk = xkv + (size_t)b * lk * dm;
        const int Lq = ad->seqlens_q ? ad->seqlens_q[b] : lq, Lk = ad->seqlens_k ? ad->seqlens_k[b] : lk;
        int kcols = dm, vcols = dm;
        if (!direct) rproj(Xq, lq, dm, w[W_Q], w[W_BQ], dm, Q);
        if (kind == ATTN_LAYER_STANDARD || kind == ATTN_LAYER_OPTIMIZED) { rproj(Xk, lk, dm, w[W_K], w[W_BK], dkv, K); kcols = dkv; }
        else memcpy(K, Xk, sizeof(double) * (size_t)lk * dm);
        if (kind == ATTN_LAYER_STANDARD || direct) { rproj(Xk, lk, dm, w[W_V], w[W_BV], dkv, V); vcols = dkv; }
        else if (kind == ATTN_LAYER_SUPER) {
            /* token t mixes the window [o, o + ctx) that ends at t once t >= ctx, with row t - o */
            for (t = 0; t < lk; ++t)
                for (e = 0; e < dm; ++e) {
                    double acc = 0.0;
                    const int o = t > ctx - 1 ? t - (ctx - 1) : 0, rw = t - o;
                    int s2;
                    if (t < Lk) {
                        acc = w[W_BA] ? w[W_BA][rw] : 0.0;
                        for (s2 = o; s2 < Lk && s2 < o + ctx; ++s2)
                            if (!ad->causal || s2 <= t) acc += w[W_A][(size_t)rw * ctx + (s2 - o)] * Xk[(size_t)s2 * dm + e];
                    }
                    V[(size_t)t * dm + e] = acc;
                }
        } else memcpy(V, Xk, sizeof(double) * (size_t)lk * dm);
        for (i = 0; i < lq * dm; ++i) A[i] = 0.0;
        for (h = 0; h < H; ++h) {
            const int hk = h / g;
            for (i = 0; i < Lq; ++i) {
                const long long p = (long long)i + Lk - Lq;
                double mx = -INFINITY, sum = 0.0;
                for (j = 0; j < Lk; ++j) {
                    double x = 0.0;
                    if (!ref_visible(ad, i, j, Lq, Lk)) { s[j] = -INFINITY; continue; }
                    if (!direct) {
                        for (e = 0; e < dk; ++e) x += Q[(size_t)i * dm + h * dk + e] * K[(size_t)j * kcols + hk * dk + e];
                        x *= scale;
                        if (ad->softcap > 0.0f) x = ad->softcap * tanh(x / ad->softcap);
                        if (ad->bias.data) x += ref_bias(&ad->bias, lq, lk, b, h, i, j);
                    } else if (kind == ATTN_LAYER_DIRECT) x = w[W_D][(size_t)(i + wrow) * ctx + j];
                    else {
                        for (e = 0; e < dm; ++e) x += Xq[(size_t)i * dm + e] * Xk[(size_t)j * dm + e];
                        x *= dscale * w[W_D][(size_t)(i + wrow) * ctx + j];
                    }
                    if (ad->alibi_slopes) x -= ad->alibi_slopes[h] * (double)llabs(p - j);
                    s[j] = x;
                    if (x > mx) mx = x;
                }
                if (mx == -INFINITY) continue;
                for (j = 0; j < Lk; ++j) if (s[j] != -INFINITY) { s[j] = exp(s[j] - mx); sum += s[j]; } else s[j] = 0.0;
                for (e = 0; e < dk; ++e) {
                    double acc = 0.0;
                    for (j = 0; j < Lk; ++j) acc += s[j] * V[(size_t)j * vcols + hk * dk + e];
                    A[(size_t)i * dm + h * dk + e] = acc / sum;
                }
            }
        }
        rproj(A, lq, dm, w[W_O], w[W_BO], dm, out + (size_t)b * lq * dm);
    }
    free(Q); free(K); free(V); free(A); free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* Helpers                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void fill_x(float *xf, double *xd, size_t n, t_rng *r) {
    size_t i;
    for (i = 0; i < n; ++i) { xf[i] = (float)t_normal(r); xd[i] = xf[i]; }
}
static double max_err_fd(const float *got, const double *ref, size_t n) {
    double *g = (double *)t_xmalloc(sizeof(double) * (n ? n : 1)), e;
    size_t i;
    for (i = 0; i < n; ++i) g[i] = got[i];
    e = t_max_norm_err(ref, g, n);
    free(g);
    return e;
}
static double max_diff(const float *a, const float *b, size_t n) {
    double m = 1.0, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) { if (fabs(b[i]) > m) m = fabs(b[i]); if (!(fabs(a[i] - b[i]) <= e)) e = a[i] != a[i] ? INFINITY : fabs(a[i] - b[i]); }
    return e / m;
}
static const char *kind_name(int k) {
    static const char *const n[] = { "standard", "optimized", "efficient", "super", "direct", "direct_input" };
    return k >= 0 && k < 6 ? n[k] : "?";
}

/* a mask setting for the sweeps */
typedef struct { const char *name; int causal, wl, wr, sink, glob, pad, alibi, softcap, scale, bias; } lmask;
static const lmask masks[] = {
    { "none", 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }, { "causal", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 },
    { "window", 1, 2, 0, 1, 0, 0, 0, 0, 0, 0 }, { "bidir-window+global", 0, 1, 1, 0, 1, 0, 0, 0, 0, 0 },
    { "padding", 0, 0, 0, 0, 0, 1, 0, 0, 0, 0 }, { "causal+padding", 1, 0, 0, 0, 0, 1, 0, 0, 0, 0 },
    { "alibi+scale", 0, 0, 0, 0, 0, 0, 1, 0, 1, 0 }, { "softcap", 1, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
    { "bias", 1, 0, 0, 0, 0, 0, 0, 0, 0, 1 },
};
#define N_MASKS ((int)(sizeof masks / sizeof masks[0]))

static int g_seqlens_q[8], g_seqlens_k[8];
static float g_slopes[16];
static float g_bias[2 * 16 * 16 * 80];

static void apply_mask(lcfg *c, const lmask *m, int B, int lq, int lk, t_rng *r) {
    attn_desc *a = &c->d.attn;
    int b;
    memset(a, 0, sizeof *a);
    a->causal = m->causal; a->window_left = m->wl; a->window_right = m->wr; a->sink_tokens = m->sink;
    a->global_tokens = m->glob;
    if (m->pad) {
        for (b = 0; b < B; ++b) { g_seqlens_q[b] = t_irange(r, 1, lq); g_seqlens_k[b] = t_irange(r, 1, lk); }
        g_seqlens_k[0] = lk;
        a->seqlens_q = g_seqlens_q; a->seqlens_k = g_seqlens_k;
    }
    if (m->alibi) { for (b = 0; b < 16; ++b) g_slopes[b] = 0.1f * (float)(b + 1); a->alibi_slopes = g_slopes; }
    if (m->softcap && c->d.kind < ATTN_LAYER_DIRECT) a->softcap = 2.0f;
    if (m->scale) a->scale = 0.4f;
    if (m->bias && c->d.kind < ATTN_LAYER_DIRECT) {   /* [B, H, lq, lk] additive logits bias */
        size_t i, n = (size_t)B * c->H * lq * lk;
        if (n > sizeof g_bias / sizeof g_bias[0]) return;
        for (i = 0; i < n; ++i) g_bias[i] = (float)(0.5 * t_normal(r));
        a->bias = attn_bias_dense(g_bias, B, c->H, lq, lk);
    }
}

/* runs forward of c on random inputs; compares against the reference */
static void check_forward(lcfg *c, int B, int lq, int lk, int self, const char *what, t_rng *r) {
    const int dm = c->dm;
    const size_t nq = (size_t)B * lq * dm, nk = (size_t)B * lk * dm;
    float *xq = (float *)t_xmalloc(sizeof(float) * nq), *xk = (float *)t_xmalloc(sizeof(float) * nk);
    float *out = (float *)t_xmalloc(sizeof(float) * nq), *out2 = (float *)t_xmalloc(sizeof(float) * nq);
    double *xqd = (double *)t_xmalloc(sizeof(double) * nq), *xkd = (double *)t_xmalloc(sizeof(double) * nk);
    double *ref = (double *)t_xmalloc(sizeof(double) * nq);
    attn_layer_weights W = lcfg_weights(c);
    attn_status s;
    double e;
    fill_x(xq, xqd, nq, r); fill_x(xk, xkd, nk, r);
    c->d.n_threads = 1;
    s = attn_layer_forward(&c->d, &W, B, lq, lk, xq, self ? NULL : xk, out);
    T_CHECK(s == ATTN_OK, "%s %s: forward status %s", kind_name(c->d.kind), what, attn_status_str(s));
    ref_layer(c, c->wd, B, lq, lk, xqd, self ? xqd : xkd, ref);
    e = max_err_fd(out, ref, nq);
    if (e <= TOL_FWD && e > g_worst_fwd) g_worst_fwd = e;
    T_CHECK(e <= TOL_FWD, "%s %s B%d lq%d lk%d dm%d H%d Hkv%d self%d: forward err %.3g", kind_name(c->d.kind), what,
            B, lq, lk, dm, c->H, c->Hkv, self, e);
    /* any thread count gives bitwise the same */
    c->d.n_threads = 3;
    s = attn_layer_forward(&c->d, &W, B, lq, lk, xq, self ? NULL : xk, out2);
    T_CHECK(s == ATTN_OK && memcmp(out, out2, sizeof(float) * nq) == 0, "%s %s: n_threads 3 differs from 1",
            kind_name(c->d.kind), what);
    c->d.n_threads = 0;
    free(xq); free(xk); free(out); free(out2); free(xqd); free(xkd); free(ref);
}

/* ---------------------------------------------------------------------------------------- */
/* Counts                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void test_counts(void) {
    /* the paper's tables: d_m, l, then Standard / Optimized / Efficient / Super */
    static const size_t tab[3][6] = { { 128, 64, 66048, 49536, 33024, 37184 },
                                      { 32, 32, 4224, 3168, 2112, 3168 },
                                      { 256, 256, 263168, 197376, 131584, 197376 } };
    int t, k;
    for (t = 0; t < 3; ++t)
        for (k = 0; k < 4; ++k) {
            attn_layer_desc d;
            size_t n = 0;
            attn_status s;
            memset(&d, 0, sizeof d);
            d.kind = (attn_layer_kind)k; d.d_model = (int)tab[t][0]; d.heads = 4; d.context = (int)tab[t][1];
            s = attn_layer_param_count(&d, &n);
            T_CHECK(s == ATTN_OK && n == tab[t][2 + k], "param count %s d_m %d l %d: %lu, paper %lu", kind_name(k),
                    (int)tab[t][0], (int)tab[t][1], (unsigned long)n, (unsigned long)tab[t][2 + k]);
        }
    {   /* GQA standard and Direct: from the formulas */
        attn_layer_desc d;
        size_t n = 0;
        memset(&d, 0, sizeof d);
        d.d_model = 64; d.heads = 8; d.kv_heads = 2;
        T_CHECK(attn_layer_param_count(&d, &n) == ATTN_OK && n == (size_t)2 * (64 * 64 + 64) + 2 * (64 * 16 + 16),
                "GQA param count %lu", (unsigned long)n);
        d.kind = ATTN_LAYER_DIRECT; d.kv_heads = 0; d.context = 10;
        T_CHECK(attn_layer_param_count(&d, &n) == ATTN_OK && n == (size_t)2 * (64 * 64 + 64) + 100, "direct param count %lu",
                (unsigned long)n);
    }
    {   /* FLOPs: d_m 128, h 4, l 64, batch 2, per kind */
        const double B = 2, l = 64, dm = 128;
        const double want[6] = {
            2 * B * l * dm * dm * 4 + 4 * B * l * l * dm, 2 * B * l * dm * dm * 3 + 4 * B * l * l * dm,
            2 * B * l * dm * dm * 2 + 4 * B * l * l * dm, 2 * B * l * dm * dm * 2 + 6 * B * l * l * dm,
            2 * B * l * dm * dm * 2 + 2 * B * l * l * dm, 2 * B * l * dm * dm * 2 + 4 * B * l * l * dm };
        int k2;
        for (k2 = 0; k2 < 6; ++k2) {
            attn_layer_desc d;
            double f = 0;
            memset(&d, 0, sizeof d);
            d.kind = (attn_layer_kind)k2; d.d_model = 128; d.heads = 4; d.context = 64;
            T_CHECK(attn_layer_flops(&d, 2, 64, 64, &f) == ATTN_OK && f == want[k2], "flops %s: %.0f want %.0f",
                    kind_name(k2), f, want[k2]);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Forward vs reference                                                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct { int calls; } hook_state;
/* a naive sgemm for the hook test, written from the documented contract */
static void test_sgemm(void *user, int ta, int tb, int m, int n, int k, float alpha, const float *a, ptrdiff_t lda,
                       const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    int i, j, p;
    ((hook_state *)user)->calls++;
    for (i = 0; i < m; ++i)
        for (j = 0; j < n; ++j) {
            double s = 0.0;
            for (p = 0; p < k; ++p)
                s += (double)(ta ? a[(ptrdiff_t)p * lda + i] : a[(ptrdiff_t)i * lda + p]) *
                     (double)(tb ? b[(ptrdiff_t)j * ldb + p] : b[(ptrdiff_t)p * ldb + j]);
            c[(ptrdiff_t)i * ldc + j] = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * c[(ptrdiff_t)i * ldc + j]));
        }
}

static void test_forward(void) {
    t_rng r = t_rng_seed(501);
    int kind, m, self;
    for (kind = 0; kind < 6; ++kind)
        for (m = 0; m < N_MASKS; ++m)
            for (self = 0; self <= 1; ++self) {
                lcfg c;
                const int B = 2, lq = self ? 9 : 7, lk = self ? 9 : 11;
                const int gqa = kind == ATTN_LAYER_STANDARD && m % 2 == 1;
                lcfg_init(&c, kind, 16, 4, gqa ? 2 : 0, 12, &r);
                apply_mask(&c, &masks[m], B, lq, lk, &r);
                check_forward(&c, B, lq, lk, self, masks[m].name, &r);
                lcfg_free(&c);
            }
    {   /* MQA, a bigger shape, heads 0 (= 1) */
        lcfg c;
        lcfg_init(&c, ATTN_LAYER_STANDARD, 24, 6, 1, 0, &r);
        check_forward(&c, 3, 33, 70, 0, "mqa", &r);
        lcfg_free(&c);
        lcfg_init(&c, ATTN_LAYER_EFFICIENT, 20, 0, 0, 0, &r);
        check_forward(&c, 1, 5, 5, 1, "heads0", &r);
        lcfg_free(&c);
        lcfg_init(&c, ATTN_LAYER_SUPER, 32, 4, 0, 80, &r);
        c.d.attn.causal = 1;
        check_forward(&c, 2, 70, 70, 1, "long causal super", &r);
        lcfg_free(&c);
        for (m = 0; m < N_MASKS; ++m) {       /* sliding alignment: sequences longer than W^A */
            lcfg_init(&c, ATTN_LAYER_SUPER, 16, 2, 0, 5, &r);
            apply_mask(&c, &masks[m], 2, 13, 13, &r);
            c.d.sliding_alignment = 1;
            check_forward(&c, 2, 13, 13, 1, masks[m].name, &r);
            apply_mask(&c, &masks[m], 2, 9, 80, &r);
            check_forward(&c, 2, 9, 80, 0, masks[m].name, &r);
            lcfg_free(&c);
        }
    }
    {   /* caller workspace (no allocation), the sgemm hook, packed sequences (Super) */
        lcfg c;
        const int B = 2, l = 10, dm = 16;
        float *x = (float *)t_xmalloc(sizeof(float) * B * l * dm), *o1 = (float *)t_xmalloc(sizeof(float) * B * l * dm);
        float *o2 = (float *)t_xmalloc(sizeof(float) * B * l * dm);
        double *xd = (double *)t_xmalloc(sizeof(double) * B * l * dm), *ref = (double *)t_xmalloc(sizeof(double) * B * l * dm);
        attn_layer_weights W;
        size_t bytes = 0, m0;
        void *ws;
        hook_state hs;
        int k2;
        fill_x(x, xd, (size_t)B * l * dm, &r);
        for (k2 = 0; k2 < 6; ++k2) {
            attn_status s;
            lcfg_init(&c, k2, dm, 2, 0, 12, &r);
            W = lcfg_weights(&c);
            T_CHECK(attn_layer_forward(&c.d, &W, B, l, l, x, NULL, o1) == ATTN_OK, "%s: plain", kind_name(k2));
            T_CHECK(attn_layer_workspace_size(&c.d, 0, B, l, l, &bytes) == ATTN_OK && bytes > 0, "workspace size");
            ws = t_xmalloc(bytes);
            c.d.workspace = ws; c.d.workspace_size = bytes;
            s = attn_layer_forward(&c.d, &W, B, l, l, x, NULL, o2);
            T_CHECK(s == ATTN_OK && memcmp(o1, o2, sizeof(float) * B * l * dm) == 0, "%s: caller workspace changes the result",
                    kind_name(k2));
            /* with a caller workspace and an sgemm hook nothing is allocated (the built-in SGEMM
               may allocate its packing buffers, so the allocation count is checked with the hook) */
            hs.calls = 0;
            c.d.sgemm = test_sgemm; c.d.sgemm_user = &hs;
            m0 = t_attn_mallocs;
            s = attn_layer_forward(&c.d, &W, B, l, l, x, NULL, o2);
            T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "%s: workspace + sgemm hook must make forward allocation-free", kind_name(k2));
            T_CHECK(hs.calls >= 1, "%s: sgemm hook not called", kind_name(k2));
            free(ws);
            c.d.workspace = NULL; c.d.workspace_size = 0;
            T_CHECK(attn_layer_workspace_size(&c.d, 1, B, l, l, &bytes) == ATTN_OK, "bwd workspace size");
            {   /* backward with a caller workspace (and the hook) == backward allocating (built-in) */
                float *g1 = (float *)t_xmalloc(sizeof(float) * B * l * dm), *g2 = (float *)t_xmalloc(sizeof(float) * B * l * dm);
                attn_layer_grads G;
                memset(&G, 0, sizeof G);
                c.d.sgemm = NULL; c.d.sgemm_user = NULL;
                s = attn_layer_backward(&c.d, &W, B, l, l, x, NULL, x, g1, NULL, &G);
                ws = t_xmalloc(bytes);
                c.d.workspace = ws; c.d.workspace_size = bytes;
                c.d.sgemm = test_sgemm; c.d.sgemm_user = &hs;
                T_CHECK(s == ATTN_OK && attn_layer_backward(&c.d, &W, B, l, l, x, NULL, x, g2, NULL, &G) == ATTN_OK &&
                        max_diff(g2, g1, (size_t)B * l * dm) <= TOL_GRAD, "%s: backward with workspace + hook differs", kind_name(k2));
                free(g1); free(g2); free(ws);
                c.d.workspace = NULL; c.d.workspace_size = 0;
            }
            ref_layer(&c, c.wd, B, l, l, xd, xd, ref);
            T_CHECK(max_err_fd(o2, ref, (size_t)B * l * dm) <= TOL_FWD, "%s: forward through the hook", kind_name(k2));
            lcfg_free(&c);
        }
        {   /* packed sequences through Super: each segment == its own call */
            static const int cu[4] = { 0, 3, 3, 10 };
            lcfg_init(&c, ATTN_LAYER_SUPER, dm, 2, 0, 8, &r);
            c.d.attn.causal = 1; c.d.attn.cu_seqlens_q = cu; c.d.attn.cu_seqlens_k = cu; c.d.attn.varlen_batch = 3;
            W = lcfg_weights(&c);
            T_CHECK(attn_layer_forward(&c.d, &W, 1, l, l, x, NULL, o1) == ATTN_OK, "packed super");
            memset(&c.d.attn, 0, sizeof c.d.attn);
            c.d.attn.causal = 1;
            T_CHECK(attn_layer_forward(&c.d, &W, 1, 3, 3, x, NULL, o2) == ATTN_OK &&
                    attn_layer_forward(&c.d, &W, 1, 7, 7, x + 3 * dm, NULL, o2 + 3 * dm) == ATTN_OK, "segments");
            {
                double *a = (double *)t_xmalloc(sizeof(double) * l * dm);
                int i2;
                for (i2 = 0; i2 < l * dm; ++i2) a[i2] = o2[i2];
                T_CHECK(max_err_fd(o1, a, (size_t)l * dm) <= TOL_FWD, "packed Super differs from per-segment calls");
                free(a);
            }
            lcfg_free(&c);
        }
        free(x); free(o1); free(o2); free(xd); free(ref);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Properties                                                                                */
/* ---------------------------------------------------------------------------------------- */

static void set_identity(float *w, int n) {
    int i;
    memset(w, 0, sizeof(float) * (size_t)n * n);
    for (i = 0; i < n; ++i) w[(size_t)i * n + i] = 1.0f;
}

static void test_properties(void) {
    t_rng r = t_rng_seed(502);
    const int B = 2, lq = 6, lk = 8, dm = 16, H = 4;
    const size_t nq = (size_t)B * lq * dm, nk = (size_t)B * lk * dm;
    float *xq = (float *)t_xmalloc(sizeof(float) * nq), *xk = (float *)t_xmalloc(sizeof(float) * nk);
    float *o1 = (float *)t_xmalloc(sizeof(float) * nq), *o2 = (float *)t_xmalloc(sizeof(float) * nq);
    double *tmp = (double *)t_xmalloc(sizeof(double) * (nq > nk ? nq : nk));
    float *eye = (float *)t_xmalloc(sizeof(float) * dm * dm), *zero = (float *)calloc(64, sizeof(float));
    int causal;
    fill_x(xq, tmp, nq, &r); fill_x(xk, tmp, nk, &r);
    set_identity(eye, dm);
    for (causal = 0; causal <= 1; ++causal) {
        lcfg std, oth;
        attn_layer_weights Ws, Wo;
        lcfg_init(&std, ATTN_LAYER_STANDARD, dm, H, 0, 0, &r);
        std.d.attn.causal = causal;
        /* Optimized == Standard whose W^V is the slicing matrix (identity), b^V = 0 */
        lcfg_init(&oth, ATTN_LAYER_OPTIMIZED, dm, H, 0, 0, &r);
        oth.d.attn.causal = causal;
        Wo = lcfg_weights(&oth);
        Ws = Wo; Ws.wv = eye; Ws.bv = NULL;
        T_CHECK(attn_layer_forward(&std.d, &Ws, B, lq, lk, xq, xk, o1) == ATTN_OK &&
                attn_layer_forward(&oth.d, &Wo, B, lq, lk, xq, xk, o2) == ATTN_OK, "optimized/standard run");
        T_CHECK(max_diff(o2, o1, nq) <= TOL_FWD, "Optimized != Standard with W^V = I (causal %d): %.3g", causal, max_diff(o2, o1, nq));
        Ws.bv = zero;   /* an explicit zero bias is the same */
        T_CHECK(attn_layer_forward(&std.d, &Ws, B, lq, lk, xq, xk, o1) == ATTN_OK && max_diff(o2, o1, nq) <= TOL_FWD,
                "Optimized != Standard with W^V = I, b^V = 0");
        lcfg_free(&oth);
        /* Efficient == Standard with W^K = W^V = I, b^K = b^V = 0 */
        lcfg_init(&oth, ATTN_LAYER_EFFICIENT, dm, H, 0, 0, &r);
        oth.d.attn.causal = causal;
        Wo = lcfg_weights(&oth);
        Ws = Wo; Ws.wk = eye; Ws.wv = eye; Ws.bk = NULL; Ws.bv = NULL;
        T_CHECK(attn_layer_forward(&std.d, &Ws, B, lq, lk, xq, xk, o1) == ATTN_OK &&
                attn_layer_forward(&oth.d, &Wo, B, lq, lk, xq, xk, o2) == ATTN_OK, "efficient/standard run");
        T_CHECK(max_diff(o2, o1, nq) <= TOL_FWD, "Efficient != Standard with W^K = W^V = I (causal %d): %.3g", causal, max_diff(o2, o1, nq));
        {   /* Super with W^A = I, b^A = 0 == Efficient */
            lcfg sup;
            attn_layer_weights Wp;
            float *wa = (float *)t_xmalloc(sizeof(float) * 10 * 10);
            lcfg_init(&sup, ATTN_LAYER_SUPER, dm, H, 0, 10, &r);
            sup.d.attn.causal = causal;
            set_identity(wa, 10);
            Wp = Wo; Wp.wa = wa; Wp.ba = zero;
            T_CHECK(attn_layer_forward(&sup.d, &Wp, B, lq, lk, xq, xk, o1) == ATTN_OK, "super run");
            T_CHECK(max_diff(o1, o2, nq) <= TOL_FWD, "Super(W^A = I) != Efficient (causal %d): %.3g", causal, max_diff(o1, o2, nq));
            free(wa);
            lcfg_free(&sup);
        }
        lcfg_free(&oth);
        lcfg_free(&std);
    }
    {   /* decoding: the last n queries against every key == the last n rows of causal self-attention */
        const int l = 9;
        float *x = (float *)t_xmalloc(sizeof(float) * l * dm), *a = (float *)t_xmalloc(sizeof(float) * l * dm);
        float *b = (float *)t_xmalloc(sizeof(float) * l * dm);
        int kind, nl;
        fill_x(x, tmp, (size_t)l * dm, &r);
        for (kind = 0; kind < 6; ++kind) {
            lcfg c;
            attn_layer_weights W;
            lcfg_init(&c, kind, dm, H, 0, 12, &r);
            c.d.attn.causal = 1;
            W = lcfg_weights(&c);
            T_CHECK(attn_layer_forward(&c.d, &W, 1, l, l, x, NULL, a) == ATTN_OK, "%s prefill", kind_name(kind));
            for (nl = 1; nl <= 3; nl += 2) {
                T_CHECK(attn_layer_forward(&c.d, &W, 1, nl, l, x + (size_t)(l - nl) * dm, x, b) == ATTN_OK, "%s decode", kind_name(kind));
                T_CHECK(max_diff(b, a + (size_t)(l - nl) * dm, (size_t)nl * dm) <= TOL_FWD,
                        "%s: the last %d queries differ from the causal prefill's rows (%.3g)", kind_name(kind), nl,
                        max_diff(b, a + (size_t)(l - nl) * dm, (size_t)nl * dm));
            }
            lcfg_free(&c);
        }
        free(x); free(a); free(b);
    }
    {   /* causal Super never reads later tokens; non-causal Super does */
        const int l = 9, t0 = 5;
        float *x = (float *)t_xmalloc(sizeof(float) * l * dm), *a = (float *)t_xmalloc(sizeof(float) * l * dm);
        float *b = (float *)t_xmalloc(sizeof(float) * l * dm);
        lcfg sup;
        attn_layer_weights Wp;
        int e, pass;
        fill_x(x, tmp, (size_t)l * dm, &r);
        lcfg_init(&sup, ATTN_LAYER_SUPER, dm, H, 0, 12, &r);
        Wp = lcfg_weights(&sup);
        for (pass = 1; pass >= 0; --pass) {
            int same_before, changed_after = 0;
            sup.d.attn.causal = pass;
            T_CHECK(attn_layer_forward(&sup.d, &Wp, 1, l, l, x, NULL, a) == ATTN_OK, "super causal run");
            for (e = 0; e < dm; ++e) x[t0 * dm + e] += 1.0f;
            T_CHECK(attn_layer_forward(&sup.d, &Wp, 1, l, l, x, NULL, b) == ATTN_OK, "super causal run 2");
            for (e = 0; e < dm; ++e) x[t0 * dm + e] -= 1.0f;
            same_before = memcmp(a, b, sizeof(float) * t0 * dm) == 0;
            for (e = t0 * dm; e < l * dm; ++e) changed_after |= a[e] != b[e];
            if (pass) T_CHECK(same_before && changed_after, "causal Super: rows before token %d must not change (%d), later must (%d)",
                              t0, same_before, changed_after);
            else T_CHECK(!same_before, "non-causal Super: earlier rows should see a later token");
        }
        lcfg_free(&sup);
        free(x); free(a); free(b);
    }
    free(xq); free(xk); free(o1); free(o2); free(tmp); free(eye); free(zero);
}

/* ---------------------------------------------------------------------------------------- */
/* Gradients vs finite differences of the double reference                                   */
/* ---------------------------------------------------------------------------------------- */

/* a parallel hook that runs the tasks backwards, on "thread" i % n_threads */
static void reverse_parallel(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    (void)user;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, i % (n_threads > 0 ? n_threads : 1));
}

static double ref_loss(const lcfg *c, double *const *w, int B, int lq, int lk, const double *xq, const double *xkv,
                       const double *R, double *buf) {
    double L = 0.0;
    size_t i, n = (size_t)B * lq * c->dm;
    ref_layer(c, w, B, lq, lk, xq, xkv, buf);
    for (i = 0; i < n; ++i) L += buf[i] * R[i];
    return L;
}

#define GRAD_SEED 0xA7u

static void check_gradients(lcfg *c, int B, int lq, int lk, int self, const char *what, t_rng *r) {
    const int dm = c->dm;
    const size_t nq = (size_t)B * lq * dm, nk = (size_t)B * lk * dm;
    const double h = 1e-5;
    float *xq = (float *)t_xmalloc(sizeof(float) * nq), *xk = (float *)t_xmalloc(sizeof(float) * nk);
    float *dout = (float *)t_xmalloc(sizeof(float) * nq);
    float *dxq = (float *)t_xmalloc(sizeof(float) * nq), *dxk = (float *)t_xmalloc(sizeof(float) * nk);
    double *xqd = (double *)t_xmalloc(sizeof(double) * nq), *xkd = (double *)t_xmalloc(sizeof(double) * nk);
    double *R = (double *)t_xmalloc(sizeof(double) * nq), *buf = (double *)t_xmalloc(sizeof(double) * nq);
    double *fd;
    float *g[W_COUNT];
    size_t gn[W_COUNT];
    attn_layer_weights W = lcfg_weights(c);
    attn_layer_grads G;
    attn_status s;
    int w;
    size_t i;
    {
        size_t mx = nq > nk ? nq : nk;
        for (w = 0; w < W_COUNT; ++w) if (c->n[w] > mx) mx = c->n[w];
        fd = (double *)t_xmalloc(sizeof(double) * mx);
    }
    fill_x(xq, xqd, nq, r); fill_x(xk, xkd, nk, r); fill_x(dout, R, nq, r);
    /* every gradient buffer, also those the kind does not read (must stay untouched) */
    for (w = 0; w < W_COUNT; ++w) {
        const size_t dkv = (size_t)c->Hkv * c->dk;
        gn[w] = w == W_Q || w == W_O ? (size_t)dm * dm : w == W_K || w == W_V ? (size_t)dm * dkv :
                w == W_BQ || w == W_BO ? (size_t)dm : w == W_BK || w == W_BV ? dkv :
                w == W_BA ? (size_t)c->ctx : (size_t)c->ctx * c->ctx;
        g[w] = (float *)t_xmalloc(sizeof(float) * (gn[w] ? gn[w] : 1));
        t_sentinel(g[w], sizeof(float) * gn[w], GRAD_SEED);
    }
    memset(&G, 0, sizeof G);
    G.wq = g[W_Q]; G.bq = g[W_BQ]; G.wk = g[W_K]; G.bk = g[W_BK]; G.wv = g[W_V]; G.bv = g[W_BV];
    G.wo = g[W_O]; G.bo = g[W_BO]; G.wa = g[W_A]; G.ba = g[W_BA]; G.wd = g[W_D];
    s = attn_layer_backward(&c->d, &W, B, lq, lk, xq, self ? NULL : xk, dout, dxq, self ? NULL : dxk, &G);
    T_CHECK(s == ATTN_OK, "%s %s: backward status %s", kind_name(c->d.kind), what, attn_status_str(s));
    for (w = 0; w < W_COUNT; ++w) {
        if (!c->n[w]) {
            T_CHECK(t_sentinel_ok(g[w], sizeof(float) * gn[w], GRAD_SEED), "%s %s: grads.%s written though not read",
                    kind_name(c->d.kind), what, w_names[w]);
            continue;
        }
        for (i = 0; i < c->n[w]; ++i) {
            const double v0 = c->wd[w][i];
            double lp, lm;
            c->wd[w][i] = v0 + h; lp = ref_loss(c, c->wd, B, lq, lk, xqd, self ? xqd : xkd, R, buf);
            c->wd[w][i] = v0 - h; lm = ref_loss(c, c->wd, B, lq, lk, xqd, self ? xqd : xkd, R, buf);
            c->wd[w][i] = v0;
            fd[i] = (lp - lm) / (2 * h);
        }
        {
            const double e = max_err_fd(g[w], fd, c->n[w]);
            if (e <= TOL_GRAD && e > g_worst_grad) g_worst_grad = e;
            T_CHECK(e <= TOL_GRAD, "%s %s self%d: grad %s err %.3g", kind_name(c->d.kind), what, self, w_names[w], e);
        }
    }
    for (w = 0; w < 2; ++w) {   /* inputs */
        double *x = w == 0 ? xqd : xkd;
        const size_t n = w == 0 ? nq : nk;
        double e;
        if (w == 1 && self) break;
        for (i = 0; i < n; ++i) {
            const double v0 = x[i];
            double lp, lm;
            x[i] = v0 + h; lp = ref_loss(c, c->wd, B, lq, lk, xqd, self ? xqd : xkd, R, buf);
            x[i] = v0 - h; lm = ref_loss(c, c->wd, B, lq, lk, xqd, self ? xqd : xkd, R, buf);
            x[i] = v0;
            fd[i] = (lp - lm) / (2 * h);
        }
        e = max_err_fd(w == 0 ? dxq : dxk, fd, n);
        if (e <= TOL_GRAD && e > g_worst_grad) g_worst_grad = e;
        T_CHECK(e <= TOL_GRAD, "%s %s self%d: grad %s err %.3g", kind_name(c->d.kind), what, self, w == 0 ? "x_q" : "x_kv", e);
    }
    {   /* bitwise the same for another thread count and through a parallel hook */
        float *dxq2 = (float *)t_xmalloc(sizeof(float) * nq);
        attn_layer_grads G2;
        attn_layer_desc d0 = c->d;
        int pass;
        memset(&G2, 0, sizeof G2);
        G2.wo = (float *)t_xmalloc(sizeof(float) * gn[W_O]);
        for (pass = 0; pass < 2; ++pass) {
            if (pass == 0) c->d.n_threads = 3;
            else { c->d.attn.parallel = reverse_parallel; c->d.attn.parallel_user = NULL; }
            s = attn_layer_backward(&c->d, &W, B, lq, lk, xq, self ? NULL : xk, dout, dxq2, NULL, &G2);
            T_CHECK(s == ATTN_OK && memcmp(dxq2, dxq, sizeof(float) * nq) == 0 && memcmp(G2.wo, g[W_O], sizeof(float) * gn[W_O]) == 0,
                    "%s %s: backward differs with %s", kind_name(c->d.kind), what, pass ? "a parallel hook" : "3 threads");
        }
        c->d = d0;
        free(G2.wo); free(dxq2);
    }
    {   /* NULL gradient pointers are skipped; the ones given are the same */
        attn_layer_grads G2;
        float *dxq2 = (float *)t_xmalloc(sizeof(float) * nq);
        memset(&G2, 0, sizeof G2);
        G2.wo = (float *)t_xmalloc(sizeof(float) * gn[W_O]);
        s = attn_layer_backward(&c->d, &W, B, lq, lk, xq, self ? NULL : xk, dout, dxq2, NULL, &G2);
        T_CHECK(s == ATTN_OK && memcmp(dxq2, dxq, sizeof(float) * nq) == 0 && memcmp(G2.wo, g[W_O], sizeof(float) * gn[W_O]) == 0,
                "%s %s: backward with NULL gradients differs", kind_name(c->d.kind), what);
        free(G2.wo); free(dxq2);
    }
    for (w = 0; w < W_COUNT; ++w) free(g[w]);
    free(xq); free(xk); free(dout); free(dxq); free(dxk); free(xqd); free(xkd); free(R); free(buf); free(fd);
}

/* packed sequences (cu_seqlens, causal): the backward equals per-segment calls: weight gradients
   summed over segments, input gradients row by row; a row outside every segment gets 0 */
static void check_packed_backward(int kind, t_rng *r) {
    static const int cu[4] = { 0, 3, 3, 8 };
    const int l = 9, dm = 8;
    const size_t n = (size_t)l * dm;
    float *x = (float *)t_xmalloc(sizeof(float) * n), *dout = (float *)t_xmalloc(sizeof(float) * n);
    float *dx = (float *)t_xmalloc(sizeof(float) * n), *dx2 = (float *)t_xmalloc(sizeof(float) * n);
    double *tmp = (double *)t_xmalloc(sizeof(double) * n);
    float *g1[W_COUNT], *g2[W_COUNT], *acc[W_COUNT];
    lcfg c;
    attn_layer_weights W;
    attn_layer_grads G1, G2;
    attn_status s;
    int w, seg, ok = 1;
    size_t i;
    lcfg_init(&c, kind, dm, 2, 0, 6, r);
    W = lcfg_weights(&c);
    fill_x(x, tmp, n, r); fill_x(dout, tmp, n, r);
    for (w = 0; w < W_COUNT; ++w) {
        const size_t k = c.n[w] ? c.n[w] : 1;
        g1[w] = (float *)calloc(k, sizeof(float)); g2[w] = (float *)calloc(k, sizeof(float)); acc[w] = (float *)calloc(k, sizeof(float));
    }
#define T_SET_GRADS(G, g) (G.wq = g[W_Q], G.bq = g[W_BQ], G.wk = g[W_K], G.bk = g[W_BK], G.wv = g[W_V], G.bv = g[W_BV], \
                           G.wo = g[W_O], G.bo = g[W_BO], G.wa = g[W_A], G.ba = g[W_BA], G.wd = g[W_D])
    memset(&G1, 0, sizeof G1); memset(&G2, 0, sizeof G2);
    T_SET_GRADS(G1, g1); T_SET_GRADS(G2, g2);
    c.d.attn.causal = 1; c.d.attn.cu_seqlens_q = cu; c.d.attn.cu_seqlens_k = cu; c.d.attn.varlen_batch = 3;
    s = attn_layer_backward(&c.d, &W, 1, l, l, x, NULL, dout, dx, NULL, &G1);
    if (kind >= ATTN_LAYER_DIRECT) {   /* the Direct kinds do not take packed sequences */
        T_CHECK(s == ATTN_ERR_LAYER_DIRECT_ATTN, "%s packed: status %s", kind_name(kind), attn_status_str(s));
    } else {
        T_CHECK(s == ATTN_OK, "%s packed backward: %s", kind_name(kind), attn_status_str(s));
        memset(&c.d.attn, 0, sizeof c.d.attn);
        c.d.attn.causal = 1;
        memset(dx2, 0, sizeof(float) * n);
        for (seg = 0; seg < 3; ++seg) {
            const int a = cu[seg], len = cu[seg + 1] - cu[seg];
            if (!len) continue;
            s = attn_layer_backward(&c.d, &W, 1, len, len, x + (size_t)a * dm, NULL, dout + (size_t)a * dm, dx2 + (size_t)a * dm, NULL, &G2);
            ok &= s == ATTN_OK;
            for (w = 0; w < W_COUNT; ++w) for (i = 0; i < c.n[w]; ++i) acc[w][i] += g2[w][i];
        }
        /* row 8 lies outside every segment: its output is b^O, so dout's row 8 reaches grads.bo */
        for (i = 0; i < (size_t)dm; ++i) acc[W_BO][i] += dout[(size_t)(l - 1) * dm + i];
        T_CHECK(ok, "%s: per-segment backward failed", kind_name(kind));
        T_CHECK(max_diff(dx, dx2, n) <= TOL_GRAD, "%s packed: dx differs from per-segment (%.3g)", kind_name(kind), max_diff(dx, dx2, n));
        for (w = 0; w < W_COUNT; ++w)
            if (c.n[w]) T_CHECK(max_diff(g1[w], acc[w], c.n[w]) <= TOL_GRAD, "%s packed: grad %s differs from per-segment sum (%.3g)",
                                kind_name(kind), w_names[w], max_diff(g1[w], acc[w], c.n[w]));
    }
#undef T_SET_GRADS
    for (w = 0; w < W_COUNT; ++w) { free(g1[w]); free(g2[w]); free(acc[w]); }
    lcfg_free(&c);
    free(x); free(dout); free(dx); free(dx2); free(tmp);
}

static void test_gradients(void) {
    t_rng r = t_rng_seed(503);
    int kind, m, self;
    for (kind = 0; kind < 6; ++kind)
        for (m = 0; m < N_MASKS; ++m)
            for (self = 0; self <= 1; ++self) {
                lcfg c;
                const int B = 2, lq = self ? 5 : 4, lk = self ? 5 : 6;
                const int gqa = kind == ATTN_LAYER_STANDARD && self == 0;
                if (T_QUICK && m % 3 != 0) continue;
                lcfg_init(&c, kind, 8, 2, gqa ? 1 : 0, 7, &r);
                apply_mask(&c, &masks[m], B, lq, lk, &r);
                check_gradients(&c, B, lq, lk, self, masks[m].name, &r);
                lcfg_free(&c);
            }
    {   /* more query rows than one backward block (64), with padding and GQA */
        lcfg c;
        lcfg_init(&c, ATTN_LAYER_STANDARD, 8, 4, 2, 0, &r);
        apply_mask(&c, &masks[5], 2, 70, 70, &r);            /* causal + padding */
        g_seqlens_q[1] = 67; g_seqlens_k[1] = 69;
        check_gradients(&c, 2, 70, 70, 1, "70 rows", &r);
        lcfg_free(&c);
        lcfg_init(&c, ATTN_LAYER_DIRECT_INPUT, 8, 1, 0, 80, &r);
        c.d.attn.causal = 1;
        check_gradients(&c, 1, 66, 75, 0, "66 rows", &r);
        lcfg_free(&c);
    }
    for (kind = 0; kind < 6; ++kind) check_packed_backward(kind, &r);
    for (m = 0; m < N_MASKS; ++m)            /* Super with sliding alignment (context 3 < lk) */
        for (self = 0; self <= 1; ++self) {
            lcfg c;
            const int B = 2, lq = self ? 7 : 4, lk = 7;
            if (T_QUICK && m % 3 != 0) continue;
            lcfg_init(&c, ATTN_LAYER_SUPER, 8, 2, 0, 3, &r);
            apply_mask(&c, &masks[m], B, lq, lk, &r);
            c.d.sliding_alignment = 1;
            check_gradients(&c, B, lq, lk, self, masks[m].name, &r);
            lcfg_free(&c);
        }
}

/* ---------------------------------------------------------------------------------------- */
/* Errors                                                                                    */
/* ---------------------------------------------------------------------------------------- */

#define OUT_SEED_L 0x3Du

typedef struct {
    attn_layer_desc d;
    attn_layer_weights W;
    int B, lq, lk, self, null_x, null_out, null_w, null_dout, null_grads, dx_kv_self;
} ecase;

/* one call of forward and one of backward with the fault; both must return want (forward:
   when the fault applies to it) and leave every output byte untouched */
enum { E_FWD = 1, E_BWD = 2, E_BOTH = 3 };
static void expect_err(const ecase *e, attn_status want, int which, const char *what) {
    enum { CAP = 4096 };
    float *xq = (float *)t_xmalloc(sizeof(float) * CAP), *xk = (float *)t_xmalloc(sizeof(float) * CAP);
    float *out = (float *)t_xmalloc(sizeof(float) * CAP), *dxq = (float *)t_xmalloc(sizeof(float) * CAP);
    float *dxk = (float *)t_xmalloc(sizeof(float) * CAP), *gw = (float *)t_xmalloc(sizeof(float) * CAP);
    float *gf = (float *)t_xmalloc(sizeof(float) * CAP);   /* dF apart from dE: attn_backward refuses them aliased */
    attn_layer_grads G;
    attn_status s;
    int i;
    for (i = 0; i < CAP; ++i) { xq[i] = 0.5f; xk[i] = -0.25f; }
    t_sentinel(out, sizeof(float) * CAP, OUT_SEED_L); t_sentinel(dxq, sizeof(float) * CAP, OUT_SEED_L);
    t_sentinel(dxk, sizeof(float) * CAP, OUT_SEED_L); t_sentinel(gw, sizeof(float) * CAP, OUT_SEED_L);
    t_sentinel(gf, sizeof(float) * CAP, OUT_SEED_L);
    G.wq = G.bq = G.wk = G.bk = G.wv = G.bv = G.wo = G.bo = G.wa = G.ba = G.wd = G.e = G.conv = gw;
    G.f = gf;
    if (which & E_FWD) {
        s = attn_layer_forward(&e->d, e->null_w ? NULL : &e->W, e->B, e->lq, e->lk, e->null_x ? NULL : xq,
                               e->self ? NULL : xk, e->null_out ? NULL : out);
        if (T_CHECK(s == want, "%s: forward returned %s, want %s", what, attn_status_str(s), attn_status_str(want)))
            t_status_provoked[want] = 1;
        if (want != ATTN_OK) T_CHECK(t_sentinel_ok(out, sizeof(float) * CAP, OUT_SEED_L), "%s: forward wrote out", what);
    }
    if (!(which & E_BWD)) { free(xq); free(xk); free(out); free(dxq); free(dxk); free(gw); free(gf); return; }
    s = attn_layer_backward(&e->d, e->null_w ? NULL : &e->W, e->B, e->lq, e->lk, e->null_x ? NULL : xq,
                            e->self ? NULL : xk, e->null_dout ? NULL : xq, dxq, (e->self && !e->dx_kv_self) ? NULL : dxk,
                            e->null_grads ? NULL : &G);
    if (T_CHECK(s == want, "%s: backward returned %s, want %s", what, attn_status_str(s), attn_status_str(want)))
        t_status_provoked[want] = 1;
    if (want != ATTN_OK)
        T_CHECK(t_sentinel_ok(dxq, sizeof(float) * CAP, OUT_SEED_L) && t_sentinel_ok(dxk, sizeof(float) * CAP, OUT_SEED_L) &&
            t_sentinel_ok(gw, sizeof(float) * CAP, OUT_SEED_L) && t_sentinel_ok(gf, sizeof(float) * CAP, OUT_SEED_L),
            "%s: backward wrote an output", what);
    free(xq); free(xk); free(out); free(dxq); free(dxk); free(gw); free(gf);
}

static void test_layer_errors(void) {
    static float wbuf[1024];
    ecase base, e;
    size_t n;
    double f;
    memset(&base, 0, sizeof base);
    base.d.kind = ATTN_LAYER_SUPER; base.d.d_model = 8; base.d.heads = 2; base.d.context = 6;
    base.W.wq = base.W.wk = base.W.wv = base.W.wo = base.W.wa = base.W.wd = wbuf;
    base.B = 2; base.lq = 4; base.lk = 5;
    e = base; expect_err(&e, ATTN_OK, E_BOTH, "valid super call");   /* the base call is valid */
    e = base; e.d.kind = (attn_layer_kind)6; expect_err(&e, ATTN_ERR_LAYER_KIND, E_BOTH, "kind 6");
    e = base; e.d.kind = (attn_layer_kind)-1; expect_err(&e, ATTN_ERR_LAYER_KIND, E_BOTH, "kind -1");
    e = base; e.d.d_model = 0; expect_err(&e, ATTN_ERR_LAYER_D_MODEL, E_BOTH, "d_model 0");
    e = base; e.d.heads = 3; expect_err(&e, ATTN_ERR_LAYER_HEADS, E_BOTH, "heads 3 of 8");
    e = base; e.d.heads = -2; expect_err(&e, ATTN_ERR_LAYER_HEADS, E_BOTH, "heads -2");
    e = base; e.d.kind = ATTN_LAYER_STANDARD; e.d.kv_heads = 3; expect_err(&e, ATTN_ERR_LAYER_KV_HEADS, E_BOTH, "kv_heads 3");
    e = base; e.d.kv_heads = -1; expect_err(&e, ATTN_ERR_LAYER_KV_HEADS, E_BOTH, "kv_heads -1");
    e = base; e.d.kv_heads = 1; expect_err(&e, ATTN_ERR_LAYER_KV_HEADS_KIND, E_BOTH, "GQA super");
    e = base; e.d.context = 0; expect_err(&e, ATTN_ERR_LAYER_CONTEXT, E_BOTH, "context 0");
    e = base; e.d.n_threads = -1; expect_err(&e, ATTN_ERR_N_THREADS, E_BOTH, "n_threads -1");
    e = base; e.d.kind = ATTN_LAYER_DIRECT; e.d.attn.softcap = 1.0f; expect_err(&e, ATTN_ERR_LAYER_DIRECT_ATTN, E_BOTH, "direct softcap");
    e = base; e.d.kind = ATTN_LAYER_DIRECT_INPUT; e.d.attn.bias.data = wbuf; e.d.attn.bias.batch = 1; e.d.attn.bias.heads = 1;
    expect_err(&e, ATTN_ERR_LAYER_DIRECT_ATTN, E_BOTH, "direct bias");
    e = base; e.B = 0; expect_err(&e, ATTN_ERR_LAYER_SHAPE, E_BOTH, "batch 0");
    e = base; e.lq = 0; expect_err(&e, ATTN_ERR_LAYER_SHAPE, E_BOTH, "lq 0");
    e = base; e.lk = -3; expect_err(&e, ATTN_ERR_LAYER_SHAPE, E_BOTH, "lk -3");
    e = base; e.self = 1; expect_err(&e, ATTN_ERR_LAYER_SELF_LK, E_BOTH, "self lk != lq");
    e = base; e.lk = 7; expect_err(&e, ATTN_ERR_LAYER_SEQ_CONTEXT, E_BOTH, "super lk above context");
    e = base; e.d.kind = ATTN_LAYER_DIRECT; e.lq = 7; expect_err(&e, ATTN_ERR_LAYER_SEQ_CONTEXT, E_BOTH, "direct lq above context");
    e = base; e.lq = 7; expect_err(&e, ATTN_OK, E_BOTH, "super lq above context is fine (W^A mixes keys)");
    e = base; e.lk = 7; e.d.sliding_alignment = 1; expect_err(&e, ATTN_OK, E_BOTH, "super lk above context with sliding alignment");
    e = base; e.d.sliding_alignment = 2; expect_err(&e, ATTN_ERR_LAYER_SLIDING, E_BOTH, "sliding_alignment 2");
    e = base; e.d.kind = ATTN_LAYER_DIRECT; e.lk = 7; e.d.sliding_alignment = 1;
    expect_err(&e, ATTN_ERR_LAYER_SEQ_CONTEXT, E_BOTH, "direct lk above context (no sliding for W_D)");
    e = base; e.null_x = 1; expect_err(&e, ATTN_ERR_LAYER_NULL_X, E_BOTH, "x_q NULL");
    e = base; e.null_out = 1; expect_err(&e, ATTN_ERR_LAYER_NULL_OUT, E_FWD, "out NULL");
    e = base; e.null_w = 1; expect_err(&e, ATTN_ERR_LAYER_NULL_WEIGHTS, E_BOTH, "weights NULL");
    e = base; e.W.wq = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WQ, E_BOTH, "wq NULL");
    e = base; e.d.kind = ATTN_LAYER_OPTIMIZED; e.W.wk = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WK, E_BOTH, "wk NULL");
    e = base; e.d.kind = ATTN_LAYER_EFFICIENT; e.W.wk = NULL; e.W.wv = NULL; expect_err(&e, ATTN_OK, E_BOTH, "efficient needs no wk/wv");
    e = base; e.d.kind = ATTN_LAYER_STANDARD; e.W.wv = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WV, E_BOTH, "wv NULL");
    e = base; e.W.wo = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WO, E_BOTH, "wo NULL");
    e = base; e.W.wa = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WA, E_BOTH, "wa NULL");
    e = base; e.d.kind = ATTN_LAYER_DIRECT; e.W.wd = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_WD, E_BOTH, "wd NULL");
    e = base; e.null_dout = 1; expect_err(&e, ATTN_ERR_LAYER_NULL_DOUT, E_BWD, "dout NULL");
    e = base; e.null_grads = 1; expect_err(&e, ATTN_ERR_LAYER_NULL_GRADS, E_BWD, "grads NULL");
    e = base; e.self = 1; e.lk = e.lq; e.dx_kv_self = 1; expect_err(&e, ATTN_ERR_LAYER_DX_KV, E_BWD, "dx_kv with self-attention");
    e = base; e.d.attn.window_left = -1; expect_err(&e, ATTN_ERR_WINDOW_LEFT, E_BOTH, "attn.window_left -1 (passed through)");
    e = base; e.d.workspace = wbuf; e.d.workspace_size = 16; expect_err(&e, ATTN_ERR_WORKSPACE, E_BOTH, "small workspace");
    e = base; e.B = INT_MAX; e.lq = 2; expect_err(&e, ATTN_ERR_OVERFLOW, E_BOTH, "batch * lq overflows int");
    {   /* packed Super: the longest segment must fit W^A */
        static const int cu[3] = { 0, 2, 9 };
        e = base; e.B = 1; e.lq = e.lk = 9; e.self = 1; e.d.context = 8;
        e.d.attn.cu_seqlens_q = cu; e.d.attn.cu_seqlens_k = cu; e.d.attn.varlen_batch = 2;
        expect_err(&e, ATTN_OK, E_BOTH, "packed super: segments of 2 and 7 fit context 8 though lk 9 does not");
        e.d.context = 6; expect_err(&e, ATTN_ERR_LAYER_SEQ_CONTEXT, E_BOTH, "packed super: segment of 7 above context 6");
    }
    if (T_CHECK(attn_layer_param_count(&base.d, NULL) == ATTN_ERR_NULL_ARG, "param_count NULL result"))
        t_status_provoked[ATTN_ERR_NULL_ARG] = 1;
    T_CHECK(attn_layer_flops(&base.d, 1, 1, 1, NULL) == ATTN_ERR_NULL_ARG, "flops NULL result");
    T_CHECK(attn_layer_workspace_size(&base.d, 0, 1, 1, 1, NULL) == ATTN_ERR_NULL_ARG, "workspace_size NULL result");
    T_CHECK(attn_layer_param_count(NULL, &n) == ATTN_ERR_NULL_DESC, "param_count NULL desc");
    T_CHECK(attn_layer_flops(&base.d, 1, 1, 7, &f) == ATTN_ERR_LAYER_SEQ_CONTEXT, "flops lk above context");
    e = base; e.d.heads = 3;
    T_CHECK(attn_layer_param_count(&e.d, &n) == ATTN_ERR_LAYER_HEADS, "param_count heads 3");
}

/* ---------------------------------------------------------------------------------------- */
/* Any attention kind inside a layer                                                         */
/* ---------------------------------------------------------------------------------------- */

/* Every attn_kind with its test parameters (Routing twice: shared QK and separate_qk). */
typedef struct { attn_kind kind; int sep; const char *name; } akind;
static const akind akinds[] = {
    { ATTN_SOFTMAX, 0, "softmax" }, { ATTN_LONGFORMER, 0, "longformer" }, { ATTN_BIGBIRD, 0, "bigbird" },
    { ATTN_LSH, 0, "lsh" }, { ATTN_ROUTING, 0, "routing" }, { ATTN_ROUTING, 1, "routing-separate-qk" },
    { ATTN_LINEAR, 0, "linear" }, { ATTN_PERFORMER, 0, "performer" }, { ATTN_COSFORMER, 0, "cosformer" },
    { ATTN_LINFORMER, 0, "linformer" }, { ATTN_NYSTROM, 0, "nystrom" },
};
#define N_AKINDS ((int)(sizeof akinds / sizeof akinds[0]))

/* from the kinds' documentation: queries are also keys (one projection) / a logsumexp exists */
static int ak_shared(const akind *k) { return k->kind == ATTN_LSH || (k->kind == ATTN_ROUTING && !k->sep); }
static int ak_lse(attn_kind k) {
    return k == ATTN_SOFTMAX || k == ATTN_LONGFORMER || k == ATTN_BIGBIRD || k == ATTN_LSH || k == ATTN_LINFORMER;
}

#define AK_LP 4      /* Linformer's projected length k */
#define AK_N 9       /* Linformer's n (>= the sequence, 8) */
#define AK_TAPS 3    /* Nystromformer's conv taps */

/* the kind's parameters for heads H of dim dk at length 8, and its trainable weights */
typedef struct { float cen[2 * 2 * 8]; float e[2 * AK_LP * AK_N], f[2 * AK_LP * AK_N], conv[2 * AK_TAPS]; } akparams;
static void ak_setup(attn_desc *a, const akind *k, akparams *p, int H, int dk, t_rng *r) {
    int i;
    memset(a, 0, sizeof *a);
    a->kind = k->kind;
    for (i = 0; i < H * 2 * dk; ++i) p->cen[i] = (float)t_normal(r);
    for (i = 0; i < H * AK_LP * AK_N; ++i) { p->e[i] = (float)(0.4 * t_normal(r)); p->f[i] = (float)(0.4 * t_normal(r)); }
    for (i = 0; i < H * AK_TAPS; ++i) p->conv[i] = (float)(0.5 * t_normal(r));
    switch (k->kind) {
    case ATTN_LONGFORMER: a->window_left = a->window_right = 2; a->global_tokens = 1; break;
    case ATTN_BIGBIRD: a->bigbird.block = 2; a->bigbird.random_blocks = 1; a->bigbird.seed = 3; break;
    case ATTN_LSH: a->lsh.bucket_size = 2; a->lsh.n_buckets = 4; a->lsh.n_hashes = 2; a->lsh.seed = 5; break;
    case ATTN_ROUTING: a->routing.centroids = p->cen; a->routing.n_clusters = 2; a->routing.window = 4;
                       a->routing.separate_qk = k->sep; break;
    case ATTN_PERFORMER: a->performer.features = 16; a->performer.seed = 7; break;
    case ATTN_LINFORMER: a->linformer.k = AK_LP; a->linformer.n = AK_N; break;
    case ATTN_NYSTROM: a->nystrom.landmarks = 4; a->nystrom.conv_kernel = AK_TAPS; break;
    default: break;
    }
}

/* C = op(A) op(B) (+ C with beta 1) on attn_sgemm, one thread */
static void hmm(int ta, int tb, int m, int n, int k, const float *A, int lda, const float *Bm, int ldb, float beta, float *C, int ldc) {
    const attn_status s = attn_sgemm(ta, tb, m, n, k, 1.0f, A, lda, Bm, ldb, beta, C, ldc, 1);
    T_CHECK(s == ATTN_OK, "hand layer: attn_sgemm %s", attn_status_str(s));
}
static void hbias(float *Y, const float *b, int rows, int cols) {
    int i, j;
    if (b) for (i = 0; i < rows; ++i) for (j = 0; j < cols; ++j) Y[(size_t)i * cols + j] += b[j];
}
static void hcolsum(float *g, const float *Y, int rows, int cols, int add) {
    int i, j;
    if (!add) for (j = 0; j < cols; ++j) g[j] = 0.0f;
    for (i = 0; i < rows; ++i) for (j = 0; j < cols; ++j) g[j] += Y[(size_t)i * cols + j];
}

/* The layer of c with the attention kind of ad composed by hand (self-attention: xkv NULL; lq ==
   lk == l; the layer's dense heads; Super's W^A block l x l, no masks): attn_sgemm for the
   projections, attn_forward / attn_backward for the core. Forward into out; with dout, the
   backward into dxq, dxk and g (the fields the layer kind reads), ge/gf/gc the kind's
   gradients. Returns the first status that is not ATTN_OK (forward's or backward's). */
static attn_status hand_layer(const lcfg *c, attn_desc ad, int shared, int B, int l, const float *xq, const float *xkv_in,
                              const float *dout, float *out, float *dxq, float *dxk, float *const *g) {
    const int kind = c->d.kind, dm = c->dm, m = B * l, H = c->H, dk = c->dk, ctx = c->ctx, self = xkv_in == NULL;
    const float *xkv = self ? xq : xkv_in;
    const size_t n = (size_t)m * dm;
    float *Q = (float *)t_xmalloc(sizeof(float) * n), *K = (float *)t_xmalloc(sizeof(float) * n);
    float *V = (float *)t_xmalloc(sizeof(float) * n), *A = (float *)t_xmalloc(sizeof(float) * n);
    float *dA = (float *)t_xmalloc(sizeof(float) * n), *dQ = (float *)t_xmalloc(sizeof(float) * n);
    float *dK = (float *)t_xmalloc(sizeof(float) * n), *dV = (float *)t_xmalloc(sizeof(float) * n);
    float *dXk = (float *)t_xmalloc(sizeof(float) * n);
    float *lse = ak_lse(ad.kind) && dout ? (float *)t_xmalloc(sizeof(float) * (size_t)B * H * l) : NULL;
    float *const *wf = c->wf;
    attn_tensor tq = attn_tensor_dense(Q, ATTN_F32, B, l, H, dk), tk = attn_tensor_dense(K, ATTN_F32, B, l, H, dk);
    attn_tensor tv = attn_tensor_dense(V, ATTN_F32, B, l, H, dk), to = attn_tensor_dense(A, ATTN_F32, B, l, H, dk);
    attn_status s;
    int b, t, u, f;
    size_t i;
    ad.n_threads = 1;
    hmm(0, 0, m, dm, dm, xq, dm, wf[W_Q], dm, 0.0f, Q, dm); hbias(Q, wf[W_BQ], m, dm);
    if (shared) { hmm(0, 0, m, dm, dm, xkv, dm, wf[W_Q], dm, 0.0f, K, dm); hbias(K, wf[W_BQ], m, dm); }
    else if (kind == ATTN_LAYER_STANDARD || kind == ATTN_LAYER_OPTIMIZED) { hmm(0, 0, m, dm, dm, xkv, dm, wf[W_K], dm, 0.0f, K, dm); hbias(K, wf[W_BK], m, dm); }
    else memcpy(K, xkv, sizeof(float) * n);
    if (kind == ATTN_LAYER_STANDARD) { hmm(0, 0, m, dm, dm, xkv, dm, wf[W_V], dm, 0.0f, V, dm); hbias(V, wf[W_BV], m, dm); }
    else if (kind == ATTN_LAYER_SUPER)
        for (b = 0; b < B; ++b) {          /* V'[t] = sum_s W^A[t][s] X[s] + b^A[t] */
            hmm(0, 0, l, dm, l, wf[W_A], ctx, xkv + (size_t)b * l * dm, dm, 0.0f, V + (size_t)b * l * dm, dm);
            for (t = 0; t < l; ++t) for (f = 0; f < dm; ++f) V[((size_t)b * l + t) * dm + f] += wf[W_BA][t];
        }
    else memcpy(V, xkv, sizeof(float) * n);
    if ((s = attn_forward(&ad, tq, tk, tv, to, lse)) != ATTN_OK) goto done;
    hmm(0, 0, m, dm, dm, A, dm, wf[W_O], dm, 0.0f, out, dm); hbias(out, wf[W_BO], m, dm);
    if (!dout) goto done;
    hmm(0, 1, m, dm, dm, dout, dm, wf[W_O], dm, 0.0f, dA, dm);
    {
        attn_tensor tdo = attn_tensor_dense(dA, ATTN_F32, B, l, H, dk), tdq = attn_tensor_dense(dQ, ATTN_F32, B, l, H, dk);
        attn_tensor tdk = attn_tensor_dense(dK, ATTN_F32, B, l, H, dk), tdv = attn_tensor_dense(dV, ATTN_F32, B, l, H, dk);
        if ((s = attn_backward(&ad, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv)) != ATTN_OK) goto done;
    }
    hmm(1, 0, dm, dm, m, A, dm, dout, dm, 0.0f, g[W_O], dm); hcolsum(g[W_BO], dout, m, dm, 0);
    hmm(1, 0, dm, dm, m, xq, dm, dQ, dm, 0.0f, g[W_Q], dm); hcolsum(g[W_BQ], dQ, m, dm, 0);
    hmm(0, 1, m, dm, dm, dQ, dm, wf[W_Q], dm, 0.0f, dxq, dm);
    memset(dXk, 0, sizeof(float) * n);
    if (shared) {                           /* K's role adds into wq, bq */
        hmm(1, 0, dm, dm, m, xkv, dm, dK, dm, 1.0f, g[W_Q], dm); hcolsum(g[W_BQ], dK, m, dm, 1);
        hmm(0, 1, m, dm, dm, dK, dm, wf[W_Q], dm, 1.0f, dXk, dm);
    } else if (kind == ATTN_LAYER_STANDARD || kind == ATTN_LAYER_OPTIMIZED) {
        hmm(1, 0, dm, dm, m, xkv, dm, dK, dm, 0.0f, g[W_K], dm); hcolsum(g[W_BK], dK, m, dm, 0);
        hmm(0, 1, m, dm, dm, dK, dm, wf[W_K], dm, 1.0f, dXk, dm);
    } else for (i = 0; i < n; ++i) dXk[i] += dK[i];
    if (kind == ATTN_LAYER_STANDARD) {
        hmm(1, 0, dm, dm, m, xkv, dm, dV, dm, 0.0f, g[W_V], dm); hcolsum(g[W_BV], dV, m, dm, 0);
        hmm(0, 1, m, dm, dm, dV, dm, wf[W_V], dm, 1.0f, dXk, dm);
    } else if (kind == ATTN_LAYER_SUPER) {
        memset(g[W_A], 0, sizeof(float) * (size_t)ctx * ctx); memset(g[W_BA], 0, sizeof(float) * (size_t)ctx);
        for (b = 0; b < B; ++b) {
            const float *gv = dV + (size_t)b * l * dm, *x = xkv + (size_t)b * l * dm;
            hmm(0, 1, l, l, dm, gv, dm, x, dm, 1.0f, g[W_A], ctx);
            for (t = 0; t < l; ++t) for (f = 0; f < dm; ++f) g[W_BA][t] += gv[(size_t)t * dm + f];
            for (t = 0; t < l; ++t)         /* dX[s] += sum_t W^A[t][s] dV'[t] */
                for (u = 0; u < l; ++u) for (f = 0; f < dm; ++f) dXk[((size_t)b * l + u) * dm + f] += wf[W_A][(size_t)t * ctx + u] * gv[(size_t)t * dm + f];
        }
    } else for (i = 0; i < n; ++i) dXk[i] += dV[i];
    if (self) for (i = 0; i < n; ++i) dxq[i] += dXk[i];
    else memcpy(dxk, dXk, sizeof(float) * n);
done:
    free(Q); free(K); free(V); free(A); free(dA); free(dQ); free(dK); free(dV); free(dXk); free(lse);
    return s;
}

#define TOL_HAND 1e-5
static int g_any_runs, g_any_bwd;   /* layers run, of which with a backward to compare */
static double hdot(const double *a, const double *b, size_t n) {
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}
#define HAND_SEED 0x5Bu

/* one attention kind in one layer kind, self- or cross-attention (lq = lk = 8): the layer's
   forward and backward against hand_layer; a kind whose attn_backward is missing gives the
   layer backward the same status with every output untouched; threads bitwise */
static void check_any_kind(const akind *k, int lkind, int self, t_rng *r) {
    enum { B = 2, L = 8, DM = 8, H = 2 };
    const size_t n = (size_t)B * L * DM;
    const int shared = ak_shared(k);
    lcfg c;
    akparams P;
    attn_layer_weights W;
    attn_layer_grads G, G2;
    float *xq = (float *)t_xmalloc(sizeof(float) * n), *xk = (float *)t_xmalloc(sizeof(float) * n);
    float *dout = (float *)t_xmalloc(sizeof(float) * n), *out = (float *)t_xmalloc(sizeof(float) * n);
    float *hout = (float *)t_xmalloc(sizeof(float) * n), *dxq = (float *)t_xmalloc(sizeof(float) * n);
    float *dxk = (float *)t_xmalloc(sizeof(float) * n), *hdxq = (float *)t_xmalloc(sizeof(float) * n);
    float *hdxk = (float *)t_xmalloc(sizeof(float) * n), *dxq2 = (float *)t_xmalloc(sizeof(float) * n);
    double *tmp = (double *)t_xmalloc(sizeof(double) * n);
    float *g[W_COUNT], *hg[W_COUNT], ge[2 * AK_LP * AK_N], gf[2 * AK_LP * AK_N], gc[2 * AK_TAPS];
    float he[2 * AK_LP * AK_N], hf[2 * AK_LP * AK_N], hc[2 * AK_TAPS], ge2[2 * AK_LP * AK_N];
    attn_status sh, sl;
    char what[120];
    int w, read[W_COUNT];
    const size_t big = (size_t)DM * DM;
    snprintf(what, sizeof what, "%s in %s (%s)", k->name, kind_name(lkind), self ? "self" : "cross");
    lcfg_init(&c, lkind, DM, H, 0, L, r);
    ak_setup(&c.d.attn, k, &P, H, DM / H, r);
    fill_x(xq, tmp, n, r); fill_x(xk, tmp, n, r); fill_x(dout, tmp, n, r);
    W = lcfg_weights(&c);
    if (shared) { W.wk = NULL; W.bk = NULL; }   /* never read */
    W.e = P.e; W.f = P.f; W.conv = P.conv;
    for (w = 0; w < W_COUNT; ++w) {
        read[w] = c.n[w] != 0 && !(shared && (w == W_K || w == W_BK));
        g[w] = (float *)t_xmalloc(sizeof(float) * big); hg[w] = (float *)t_xmalloc(sizeof(float) * big);
        t_sentinel(g[w], sizeof(float) * big, HAND_SEED);
    }
    t_sentinel(ge, sizeof ge, HAND_SEED); t_sentinel(gf, sizeof gf, HAND_SEED); t_sentinel(gc, sizeof gc, HAND_SEED);
    t_sentinel(dxq, sizeof(float) * n, HAND_SEED); t_sentinel(dxk, sizeof(float) * n, HAND_SEED);
    memset(&G, 0, sizeof G);
    G.wq = g[W_Q]; G.bq = g[W_BQ]; G.wk = g[W_K]; G.bk = g[W_BK]; G.wv = g[W_V]; G.bv = g[W_BV];
    G.wo = g[W_O]; G.bo = g[W_BO]; G.wa = g[W_A]; G.ba = g[W_BA]; G.wd = g[W_D]; G.e = ge; G.f = gf; G.conv = gc;
    {   /* the hand layer reads the kind's weights from its desc */
        attn_desc ad = c.d.attn;
        if (k->kind == ATTN_LINFORMER) { ad.linformer.e = P.e; ad.linformer.f = P.f; ad.linformer.de = he; ad.linformer.df = hf; }
        if (k->kind == ATTN_NYSTROM) { ad.nystrom.conv = P.conv; ad.nystrom.dconv = hc; }
        sh = hand_layer(&c, ad, shared, B, L, xq, self ? NULL : xk, NULL, hout, NULL, NULL, hg);
        T_CHECK(sh == ATTN_OK, "%s: hand forward %s", what, attn_status_str(sh));
        c.d.n_threads = 1;
        sl = attn_layer_forward(&c.d, &W, B, L, L, xq, self ? NULL : xk, out);
        if (T_CHECK(sl == ATTN_OK, "%s: layer forward %s", what, attn_status_str(sl)))
            T_CHECK(max_diff(out, hout, n) <= TOL_HAND, "%s: forward differs from the hand layer by %.3g", what, max_diff(out, hout, n));
        c.d.n_threads = 3;
        sl = attn_layer_forward(&c.d, &W, B, L, L, xq, self ? NULL : xk, hout);
        T_CHECK(sl == ATTN_OK && memcmp(out, hout, sizeof(float) * n) == 0, "%s: forward with 3 threads differs", what);
        c.d.n_threads = 1;
        sh = hand_layer(&c, ad, shared, B, L, xq, self ? NULL : xk, dout, hout, hdxq, hdxk, hg);
    }
    sl = attn_layer_backward(&c.d, &W, B, L, L, xq, self ? NULL : xk, dout, dxq, self ? NULL : dxk, &G);
    T_CHECK(sl == sh, "%s: layer backward %s, the hand layer's attn_backward %s", what, attn_status_str(sl), attn_status_str(sh));
    ++g_any_runs;
    if (sh != ATTN_OK) {   /* e.g. ATTN_ERR_KIND_OP until the kind's backward exists: nothing written */
        int ok = t_sentinel_ok(dxq, sizeof(float) * n, HAND_SEED) && t_sentinel_ok(dxk, sizeof(float) * n, HAND_SEED) &&
                 t_sentinel_ok(ge, sizeof ge, HAND_SEED) && t_sentinel_ok(gf, sizeof gf, HAND_SEED) && t_sentinel_ok(gc, sizeof gc, HAND_SEED);
        for (w = 0; w < W_COUNT; ++w) ok &= t_sentinel_ok(g[w], sizeof(float) * big, HAND_SEED);
        T_CHECK(ok, "%s: backward failing with %s wrote an output", what, attn_status_str(sl));
        if (sl == sh) t_status_provoked[sl] = 1;
    } else if (sl == ATTN_OK) {
        ++g_any_bwd;
        T_CHECK(max_diff(dxq, hdxq, n) <= TOL_HAND, "%s: dx_q differs by %.3g", what, max_diff(dxq, hdxq, n));
        if (!self) T_CHECK(max_diff(dxk, hdxk, n) <= TOL_HAND, "%s: dx_kv differs by %.3g", what, max_diff(dxk, hdxk, n));
        for (w = 0; w < W_COUNT; ++w) {
            if (read[w]) T_CHECK(max_diff(g[w], hg[w], c.n[w]) <= TOL_HAND, "%s: grad %s differs by %.3g", what, w_names[w],
                                 max_diff(g[w], hg[w], c.n[w]));
            else T_CHECK(t_sentinel_ok(g[w], sizeof(float) * big, HAND_SEED), "%s: grads.%s written though not read", what, w_names[w]);
        }
        if (k->kind == ATTN_LINFORMER) {
            T_CHECK(max_diff(ge, he, sizeof ge / sizeof ge[0]) <= TOL_HAND, "%s: grads.e differs", what);
            T_CHECK(max_diff(gf, hf, sizeof gf / sizeof gf[0]) <= TOL_HAND, "%s: grads.f differs", what);
        } else T_CHECK(t_sentinel_ok(ge, sizeof ge, HAND_SEED) && t_sentinel_ok(gf, sizeof gf, HAND_SEED), "%s: grads.e/f written", what);
        if (k->kind == ATTN_NYSTROM) T_CHECK(max_diff(gc, hc, sizeof gc / sizeof gc[0]) <= TOL_HAND, "%s: grads.conv differs", what);
        else T_CHECK(t_sentinel_ok(gc, sizeof gc, HAND_SEED), "%s: grads.conv written", what);
        /* bitwise the same with 3 threads */
        memset(&G2, 0, sizeof G2);
        G2.wq = hg[W_Q]; G2.e = ge2;
        c.d.n_threads = 3;
        sl = attn_layer_backward(&c.d, &W, B, L, L, xq, self ? NULL : xk, dout, dxq2, NULL, &G2);
        T_CHECK(sl == ATTN_OK && memcmp(dxq2, dxq, sizeof(float) * n) == 0 && memcmp(hg[W_Q], g[W_Q], sizeof(float) * c.n[W_Q]) == 0 &&
                (k->kind != ATTN_LINFORMER || memcmp(ge2, ge, sizeof ge) == 0), "%s: backward with 3 threads differs", what);
    }
    if (k->kind == ATTN_LINFORMER || k->kind == ATTN_NYSTROM) {   /* the kind's weights from the desc instead: the same */
        attn_layer_desc d2 = c.d;
        attn_layer_weights W2 = W;
        W2.e = W2.f = W2.conv = NULL;
        d2.n_threads = 1;
        if (k->kind == ATTN_LINFORMER) { d2.attn.linformer.e = P.e; d2.attn.linformer.f = P.f; d2.attn.linformer.de = ge2; }
        else d2.attn.nystrom.conv = P.conv;
        sl = attn_layer_forward(&d2, &W2, B, L, L, xq, self ? NULL : xk, hout);
        T_CHECK(sl == ATTN_OK && memcmp(out, hout, sizeof(float) * n) == 0, "%s: forward with the desc's weights differs", what);
        memset(&G2, 0, sizeof G2);
        sl = attn_layer_backward(&d2, &W2, B, L, L, xq, self ? NULL : xk, dout, dxq2, NULL, &G2);
        T_CHECK(sl == sh && (sl != ATTN_OK || (memcmp(dxq2, dxq, sizeof(float) * n) == 0 &&
                                                (k->kind != ATTN_LINFORMER || memcmp(ge2, ge, sizeof ge) == 0))),
                "%s: backward with the desc's weights and gradients differs (%s)", what, attn_status_str(sl));
    }
    for (w = 0; w < W_COUNT; ++w) { free(g[w]); free(hg[w]); }
    lcfg_free(&c);
    free(xq); free(xk); free(dout); free(out); free(hout); free(dxq); free(dxk); free(hdxq); free(hdxk); free(dxq2); free(tmp);
}

static void test_any_kind(void) {
    t_rng r = t_rng_seed(811);
    int i, v, lkind, self;
    for (v = 0; v < ATTN_KIND_END; ++v) {   /* the table holds every kind (a new kind fails here until added) */
        int found = strcmp(attn_kind_name((attn_kind)v), "unknown attn_kind") == 0;
        for (i = 0; i < N_AKINDS; ++i) found |= akinds[i].kind == (attn_kind)v;
        T_CHECK(found, "layer kind table lacks attn_kind %d (%s)", v, attn_kind_name((attn_kind)v));
    }
    for (i = 0; i < N_AKINDS; ++i)
        for (lkind = ATTN_LAYER_STANDARD; lkind <= ATTN_LAYER_SUPER; ++lkind)
            for (self = 1; self >= 0; --self) {
                if (akinds[i].kind == ATTN_LINFORMER && lkind == ATTN_LAYER_SUPER) continue;   /* refused: test_any_kind_errors */
                check_any_kind(&akinds[i], lkind, self, &r);
            }
}

/* A Linformer Standard layer in double, written from the formulas (attn_layer_kind and
   attn_linformer_params): per KV head hk, E_hk K_hk[:L] and F_hk V_hk[:L] over the valid keys
   (L = lens[b]), softmax(Q_h (E K)^T / sqrt(d_k)) (F V), then W^O. F == E with shared_kv. */
static void ref_linformer_layer(const lcfg *c, double *const *w, const double *E, const double *F, int shared_heads,
                                int B, int l, const double *x, const int *lens, double *out) {
    const int dm = c->dm, H = c->H, Hkv = c->Hkv, dk = c->dk, g = H / Hkv, dkv = Hkv * dk, kp = AK_LP, n = AK_N;
    const double scale = 1.0 / sqrt((double)dk);
    double *Q = (double *)t_xmalloc(sizeof(double) * (size_t)l * dm), *K = (double *)t_xmalloc(sizeof(double) * (size_t)l * dkv);
    double *V = (double *)t_xmalloc(sizeof(double) * (size_t)l * dkv), *A = (double *)t_xmalloc(sizeof(double) * (size_t)l * dm);
    double EK[AK_LP][8], FV[AK_LP][8], p[AK_LP];
    int b, h, i, j, r2, e;
    for (b = 0; b < B; ++b) {
        const double *X = x + (size_t)b * l * dm;
        const int Lb = lens ? lens[b] : l;
        rproj(X, l, dm, w[W_Q], w[W_BQ], dm, Q);
        rproj(X, l, dm, w[W_K], w[W_BK], dkv, K);
        rproj(X, l, dm, w[W_V], w[W_BV], dkv, V);
        for (h = 0; h < H; ++h) {
            const int hk = h / g;
            const double *Eh = E + (shared_heads ? 0 : (size_t)hk * kp * n), *Fh = F + (shared_heads ? 0 : (size_t)hk * kp * n);
            for (r2 = 0; r2 < kp; ++r2)
                for (e = 0; e < dk; ++e) {
                    double a = 0.0, v = 0.0;
                    for (j = 0; j < Lb; ++j) {
                        a += Eh[(size_t)r2 * n + j] * K[(size_t)j * dkv + hk * dk + e];
                        v += Fh[(size_t)r2 * n + j] * V[(size_t)j * dkv + hk * dk + e];
                    }
                    EK[r2][e] = a; FV[r2][e] = v;
                }
            for (i = 0; i < l; ++i) {
                double mx = -INFINITY, sum = 0.0;
                for (r2 = 0; r2 < kp; ++r2) {
                    double s = 0.0;
                    for (e = 0; e < dk; ++e) s += Q[(size_t)i * dm + h * dk + e] * EK[r2][e];
                    p[r2] = s * scale;
                    if (p[r2] > mx) mx = p[r2];
                }
                for (r2 = 0; r2 < kp; ++r2) { p[r2] = exp(p[r2] - mx); sum += p[r2]; }
                for (e = 0; e < dk; ++e) {
                    double a = 0.0;
                    for (r2 = 0; r2 < kp; ++r2) a += p[r2] * FV[r2][e];
                    A[(size_t)i * dm + h * dk + e] = a / sum;
                }
            }
        }
        rproj(A, l, dm, w[W_O], w[W_BO], dm, out + (size_t)b * l * dm);
    }
    free(Q); free(K); free(V); free(A);
}

/* a non-softmax kind's layer against finite differences of the double reference: every weight,
   E and F (dE, dF), and the input; padding (seqlens_k) or GQA with shared_kv and shared_heads */
static void check_linformer_fd(int Hkv, int padded, int shared, t_rng *r) {
    enum { B = 2, L = 6, DM = 8, H = 2 };
    static const int lens[B] = { 6, 4 };
    const size_t n = (size_t)B * L * DM, ne = (size_t)(shared ? 1 : Hkv) * AK_LP * AK_N;
    const double h = 1e-5;
    lcfg c;
    attn_layer_weights W;
    attn_layer_grads G;
    float *x = (float *)t_xmalloc(sizeof(float) * n), *dout = (float *)t_xmalloc(sizeof(float) * n);
    float *dx = (float *)t_xmalloc(sizeof(float) * n), ef[2][2 * AK_LP * AK_N], gef[2][2 * AK_LP * AK_N];
    double *xd = (double *)t_xmalloc(sizeof(double) * n), *R = (double *)t_xmalloc(sizeof(double) * n);
    double *buf = (double *)t_xmalloc(sizeof(double) * n), *fd = (double *)t_xmalloc(sizeof(double) * n);
    double efd[2][2 * AK_LP * AK_N];
    float *g[W_COUNT];
    attn_status s;
    char what[80];
    int w, which;
    size_t i;
    snprintf(what, sizeof what, "linformer layer fd (Hkv %d%s%s)", Hkv, padded ? ", padded" : "", shared ? ", shared_kv/heads" : "");
    lcfg_init(&c, ATTN_LAYER_STANDARD, DM, H, Hkv, 0, r);
    c.d.attn.kind = ATTN_LINFORMER; c.d.attn.linformer.k = AK_LP; c.d.attn.linformer.n = AK_N;
    c.d.attn.linformer.shared_kv = shared; c.d.attn.linformer.shared_heads = shared;
    if (padded) c.d.attn.seqlens_k = lens;
    for (which = 0; which < 2; ++which)
        for (i = 0; i < ne; ++i) { ef[which][i] = (float)(0.4 * t_normal(r)); efd[which][i] = ef[which][i]; }
    fill_x(x, xd, n, r); fill_x(dout, R, n, r);
    W = lcfg_weights(&c); W.e = ef[0]; W.f = shared ? NULL : ef[1];
    memset(&G, 0, sizeof G);
    for (w = 0; w < W_COUNT; ++w) { g[w] = c.n[w] ? (float *)t_xmalloc(sizeof(float) * c.n[w]) : NULL; }
    G.wq = g[W_Q]; G.bq = g[W_BQ]; G.wk = g[W_K]; G.bk = g[W_BK]; G.wv = g[W_V]; G.bv = g[W_BV]; G.wo = g[W_O]; G.bo = g[W_BO];
    G.e = gef[0]; G.f = gef[1];
    t_sentinel(gef[1], sizeof gef[1], HAND_SEED);
    s = attn_layer_backward(&c.d, &W, B, L, L, x, NULL, dout, dx, NULL, &G);
    if (!T_CHECK(s == ATTN_OK, "%s: backward %s", what, attn_status_str(s))) goto out;
#define LOSS() (ref_linformer_layer(&c, c.wd, efd[0], shared ? efd[0] : efd[1], shared, B, L, xd, padded ? lens : NULL, buf), hdot(buf, R, n))
    for (w = 0; w < W_COUNT; ++w) {
        double e;
        if (!c.n[w]) continue;
        for (i = 0; i < c.n[w]; ++i) {
            const double v0 = c.wd[w][i];
            double lp, lm;
            c.wd[w][i] = v0 + h; lp = LOSS();
            c.wd[w][i] = v0 - h; lm = LOSS();
            c.wd[w][i] = v0; fd[i] = (lp - lm) / (2 * h);
        }
        e = max_err_fd(g[w], fd, c.n[w]);
        if (e <= TOL_GRAD && e > g_worst_grad) g_worst_grad = e;
        T_CHECK(e <= TOL_GRAD, "%s: grad %s err %.3g", what, w_names[w], e);
    }
    for (which = 0; which < (shared ? 1 : 2); ++which) {
        double e;
        for (i = 0; i < ne; ++i) {
            const double v0 = efd[which][i];
            double lp, lm;
            efd[which][i] = v0 + h; lp = LOSS();
            efd[which][i] = v0 - h; lm = LOSS();
            efd[which][i] = v0; fd[i] = (lp - lm) / (2 * h);
        }
        e = max_err_fd(gef[which], fd, ne);
        if (e <= TOL_GRAD && e > g_worst_grad) g_worst_grad = e;
        T_CHECK(e <= TOL_GRAD, "%s: grad %s err %.3g", what, which ? "f" : "e", e);
    }
    if (shared) T_CHECK(t_sentinel_ok(gef[1], sizeof gef[1], HAND_SEED), "%s: grads.f written with shared_kv", what);
    {
        double e;
        for (i = 0; i < n; ++i) {
            const double v0 = xd[i];
            double lp, lm;
            xd[i] = v0 + h; lp = LOSS();
            xd[i] = v0 - h; lm = LOSS();
            xd[i] = v0; fd[i] = (lp - lm) / (2 * h);
        }
        e = max_err_fd(dx, fd, n);
        if (e <= TOL_GRAD && e > g_worst_grad) g_worst_grad = e;
        T_CHECK(e <= TOL_GRAD, "%s: grad x err %.3g", what, e);
    }
    {   /* and the forward against the same reference */
        float *out = (float *)t_xmalloc(sizeof(float) * n);
        double e;
        s = attn_layer_forward(&c.d, &W, B, L, L, x, NULL, out);
        ref_linformer_layer(&c, c.wd, efd[0], shared ? efd[0] : efd[1], shared, B, L, xd, padded ? lens : NULL, buf);
        e = max_err_fd(out, buf, n);
        T_CHECK(s == ATTN_OK && e <= TOL_FWD, "%s: forward %s err %.3g", what, attn_status_str(s), e);
        free(out);
    }
#undef LOSS
out:
    for (w = 0; w < W_COUNT; ++w) free(g[w]);
    lcfg_free(&c);
    free(x); free(dout); free(dx); free(xd); free(R); free(buf); free(fd);
}

/* parameter counts and FLOPs with the kinds' weights; the combinations refused; the kinds'
   weights in the wrong place or missing; the kind's own statuses passed through */
static void test_any_kind_counts_errors(void) {
    static float wbuf[1024];
    attn_layer_desc d;
    size_t cnt = 0, bytes;
    double f = 0;
    const size_t base4 = 4 * (64 * 64 + 64);
    ecase base, e;
    int i, k;
    memset(&d, 0, sizeof d);
    d.d_model = 64; d.heads = 4;
    d.attn.kind = ATTN_LINFORMER; d.attn.linformer.k = 16; d.attn.linformer.n = 128;
    T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == base4 + 2 * 4 * 16 * 128, "linformer param count %lu", (unsigned long)cnt);
    d.attn.linformer.shared_kv = 1;
    T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == base4 + 4 * 16 * 128, "linformer shared_kv param count %lu", (unsigned long)cnt);
    d.attn.linformer.shared_heads = 1; d.attn.linformer.shared_kv = 0;
    T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == base4 + 2 * 16 * 128, "linformer shared_heads param count %lu", (unsigned long)cnt);
    d.kv_heads = 2; d.attn.linformer.shared_heads = 0;
    T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == 2 * (64 * 64 + 64) + 2 * (64 * 32 + 32) + 2 * 2 * 16 * 128,
            "linformer GQA param count %lu", (unsigned long)cnt);
    d.kv_heads = 0;
    {   /* FLOPs: the dense formula with 16 projected keys, plus E K and F V */
        const double B = 2, l = 64, dm = 64, kp = 16;
        T_CHECK(attn_layer_flops(&d, 2, 64, 64, &f) == ATTN_OK && f == 2 * B * l * dm * dm * 4 + 4 * B * l * kp * dm + 4 * B * kp * l * dm,
                "linformer flops %.0f", f);
        d.attn.linformer.k = 0;
        T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_ERR_LINFORMER_K, "linformer k 0 param count");
        memset(&d.attn, 0, sizeof d.attn);
        d.attn.kind = ATTN_NYSTROM; d.attn.nystrom.conv_kernel = 33; d.attn.nystrom.landmarks = 8;
        T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == base4 + 4 * 33, "nystrom conv param count %lu", (unsigned long)cnt);
        T_CHECK(attn_layer_flops(&d, 2, 64, 64, &f) == ATTN_OK && f == 2 * B * l * dm * dm * 4 + 4 * B * l * l * dm + 2 * B * l * 33 * dm,
                "nystrom flops %.0f", f);
        d.attn.nystrom.conv_kernel = 4;
        T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_ERR_NYSTROM_CONV_KERNEL, "nystrom even conv_kernel param count");
        memset(&d.attn, 0, sizeof d.attn);
        d.kind = ATTN_LAYER_EFFICIENT; d.attn.kind = ATTN_LSH;   /* shared QK: K = Xkv wq counted as a W^K */
        T_CHECK(attn_layer_flops(&d, 2, 64, 64, &f) == ATTN_OK && f == 2 * B * l * dm * dm * 3 + 4 * B * l * l * dm, "lsh efficient flops %.0f", f);
        T_CHECK(attn_layer_param_count(&d, &cnt) == ATTN_OK && cnt == 2 * (64 * 64 + 64), "lsh efficient param count %lu", (unsigned long)cnt);
    }
    /* refused combinations: one status from every entry point */
    memset(&base, 0, sizeof base);
    base.d.d_model = 8; base.d.heads = 2; base.d.context = 8;
    base.W.wq = base.W.wk = base.W.wv = base.W.wo = base.W.wa = base.W.wd = base.W.e = base.W.f = base.W.conv = wbuf;
    base.B = 2; base.lq = 8; base.lk = 8; base.self = 1;
    for (i = 0; i < N_AKINDS; ++i)
        for (k = ATTN_LAYER_DIRECT; k <= ATTN_LAYER_DIRECT_INPUT + 1; ++k) {
            char what[100];
            int bad;
            akparams P;
            t_rng r = t_rng_seed(5);
            e = base;
            ak_setup(&e.d.attn, &akinds[i], &P, 2, 4, &r);
            e.d.kind = k <= ATTN_LAYER_DIRECT_INPUT ? (attn_layer_kind)k : ATTN_LAYER_SUPER;
            bad = k <= ATTN_LAYER_DIRECT_INPUT ? akinds[i].kind != ATTN_SOFTMAX : akinds[i].kind == ATTN_LINFORMER;
            if (!bad) continue;
            snprintf(what, sizeof what, "%s in %s", akinds[i].name, kind_name(e.d.kind));
            expect_err(&e, ATTN_ERR_LAYER_ATTN_KIND, E_BOTH, what);
            T_CHECK(attn_layer_workspace_size(&e.d, 1, 2, 8, 8, &bytes) == ATTN_ERR_LAYER_ATTN_KIND &&
                    attn_layer_param_count(&e.d, &cnt) == ATTN_ERR_LAYER_ATTN_KIND &&
                    attn_layer_flops(&e.d, 2, 8, 8, &f) == ATTN_ERR_LAYER_ATTN_KIND, "%s: queries", what);
        }
    {   /* GQA with a shared-QK kind; separate_qk routing is not shared */
        akparams P;
        t_rng r = t_rng_seed(6);
        e = base; e.d.kv_heads = 1; e.d.kind = ATTN_LAYER_STANDARD;
        ak_setup(&e.d.attn, &akinds[3], &P, 2, 4, &r);
        expect_err(&e, ATTN_ERR_LAYER_ATTN_KIND, E_BOTH, "lsh with kv_heads 1");
        ak_setup(&e.d.attn, &akinds[4], &P, 2, 4, &r);
        expect_err(&e, ATTN_ERR_LAYER_ATTN_KIND, E_BOTH, "routing (shared qk) with kv_heads 1");
        e = base; e.d.kind = ATTN_LAYER_STANDARD; e.W.wk = NULL;
        ak_setup(&e.d.attn, &akinds[3], &P, 2, 4, &r);
        expect_err(&e, ATTN_OK, E_FWD, "lsh: wk NULL (not read)");
        ak_setup(&e.d.attn, &akinds[5], &P, 2, 4, &r);
        expect_err(&e, ATTN_ERR_LAYER_NULL_WK, E_FWD, "routing separate_qk: wk NULL");
        /* a kind's status that reads data comes back, with nothing written (no abort) */
        e = base; e.d.kind = ATTN_LAYER_EFFICIENT;
        ak_setup(&e.d.attn, &akinds[4], &P, 2, 4, &r);
        P.cen[3] = (float)INFINITY;
        expect_err(&e, ATTN_ERR_ROUTING_NONFINITE, E_BOTH, "routing non-finite centroid");
        e.d.attn.kind = (attn_kind)39;
        expect_err(&e, ATTN_ERR_KIND, E_BOTH, "attn.kind 39");
        T_CHECK(attn_layer_param_count(&e.d, &cnt) == ATTN_ERR_KIND, "param_count attn.kind 39");
        /* the kinds' weights: attn_layer_weights, or the desc's fields, each in one place */
        e = base; e.d.kind = ATTN_LAYER_STANDARD;
        ak_setup(&e.d.attn, &akinds[9], &P, 2, 4, &r);
        expect_err(&e, ATTN_OK, E_BOTH, "linformer layer");
        e.d.attn.linformer.e = wbuf; expect_err(&e, ATTN_ERR_LAYER_KIND_PARAMS, E_BOTH, "E in weights and attn.linformer.e");
        e.W.e = NULL; expect_err(&e, ATTN_OK, E_BOTH, "E in attn.linformer.e only");
        e.d.attn.linformer.e = NULL; e.W.e = wbuf;
        e.d.attn.linformer.df = wbuf; expect_err(&e, ATTN_ERR_LAYER_KIND_PARAMS, E_BWD, "dF in grads and attn.linformer.df");
        e.d.attn.linformer.df = NULL;
        e.W.e = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_KIND_WEIGHT, E_BOTH, "weights.e NULL");
        e.W.e = wbuf; e.W.f = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_KIND_WEIGHT, E_BOTH, "weights.f NULL");
        e.d.attn.linformer.shared_kv = 1; expect_err(&e, ATTN_OK, E_BOTH, "weights.f NULL with shared_kv");
        e = base; e.d.kind = ATTN_LAYER_OPTIMIZED;
        ak_setup(&e.d.attn, &akinds[10], &P, 2, 4, &r);
        e.d.attn.nystrom.conv = wbuf; expect_err(&e, ATTN_ERR_LAYER_KIND_PARAMS, E_FWD, "conv in weights and attn.nystrom.conv");
        e.W.conv = NULL; expect_err(&e, ATTN_OK, E_FWD, "conv in attn.nystrom.conv only");
        e.d.attn.nystrom.conv = NULL; expect_err(&e, ATTN_ERR_LAYER_NULL_KIND_WEIGHT, E_FWD, "weights.conv NULL");
        e.d.attn.nystrom.conv_kernel = 0; expect_err(&e, ATTN_OK, E_FWD, "no conv: weights.conv not read");
        /* a kind without attn_backward: the layer's backward and its workspace query say so */
        bytes = 7;
        T_CHECK(attn_layer_workspace_size(&e.d, 0, 2, 8, 8, &bytes) == ATTN_OK, "nystrom forward workspace");
        {
            attn_tensor t = attn_tensor_dense(wbuf, ATTN_F32, 2, 8, 2, 4);
            const attn_status want = attn_backward_workspace_size(&e.d.attn, t, t, t, &cnt);
            T_CHECK(attn_layer_workspace_size(&e.d, 1, 2, 8, 8, &bytes) == want, "nystrom backward workspace: the kind's %s",
                    attn_status_str(want));
        }
    }
}


/* ---------------------------------------------------------------------------------------- */
/* Packed sequences (attn.cu_seqlens_q/_k) inside a layer                                    */
/* ---------------------------------------------------------------------------------------- */

#define TOL_PACK 1e-6
static int g_pack_runs;        /* packed layer cases compared */
static double g_worst_pack;    /* largest passing gradient difference from the segments' sum */

/* ak_setup at lengths a 1-row segment takes: BigBird blocks, LSH chunks and Nystromformer
   landmarks of one row (the other parameters as ak_setup's) */
static void pk_setup(attn_desc *a, const akind *k, akparams *P, int H, int dk, t_rng *r) {
    ak_setup(a, k, P, H, dk, r);
    if (k->kind == ATTN_BIGBIRD) a->bigbird.block = 1;
    if (k->kind == ATTN_LSH) { a->lsh.bucket_size = 1; a->lsh.n_buckets = 0; }
    if (k->kind == ATTN_NYSTROM) a->nystrom.landmarks = 1;
}

/* Largest |got - want| over max(1, max |want|): want the per-segment gradients summed in double. */
static double pk_err(const float *got, const double *want, size_t n) {
    double m = 1.0, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(want[i]) > m) m = fabs(want[i]);
    for (i = 0; i < n; ++i) { const double d = fabs((double)got[i] - want[i]); if (!(d <= e)) e = d != d ? INFINITY : d; }
    return e / m;
}

/* One attention kind in one layer kind over packed segments (lq[u], lk[u]; self: lq == lk): the
   packed layer's forward and backward against each segment run through the layer alone. out,
   dx_q and dx_kv rows bitwise where the kind promises each segment its result alone (the kinds
   run segment by segment, and Routing), else within TOL_PACK; every weight gradient read (E, F and the conv taps too) within
   TOL_PACK of the segments' gradients summed in double; the caller workspace of the queried
   size and 3 threads give the same bits. */
static void check_packed_kind(const akind *k, int lkind, int self, const int *lq, const int *lk, int nseg, t_rng *r) {
    enum { DM = 8, H = 2, CTX = 8, NE = 2 * AK_LP * AK_N, NC = 2 * AK_TAPS };
    const int shared = ak_shared(k), exact = k->kind != ATTN_SOFTMAX && k->kind != ATTN_LONGFORMER;
    const size_t big = (size_t)DM * DM;   /* >= every weight (CTX * CTX too) */
    int cuq[9], cuk[9], Tq, Tk, u, w, p;
    lcfg c;
    akparams P;
    attn_layer_weights W;
    attn_layer_grads G, Ga;
    attn_layer_desc d1;
    float *xq, *xk, *dout, *out, *dxq, *dxk, *o2, *dxq2, *dxk2, *ao, *adxq, *adxk;
    float *g[W_COUNT], *ga[W_COUNT], ge[NE], gf[NE], gc[NC], gae[NE], gaf[NE], gac[NC];
    double *acc[W_COUNT], acce[NE], accf[NE], accc[NC], *tmp;
    size_t bytes[2], i;
    void *ws;
    attn_status s = ATTN_OK;
    char what[140];
    int read[W_COUNT], ok_out = 1, ok_dx = 1, ok_alone = 1;
    for (u = 0, cuq[0] = cuk[0] = 0; u < nseg; ++u) { cuq[u + 1] = cuq[u] + lq[u]; cuk[u + 1] = cuk[u] + lk[u]; }
    Tq = cuq[nseg]; Tk = cuk[nseg];
    snprintf(what, sizeof what, "packed %s in %s (%s, %d segments)", k->name, kind_name(lkind), self ? "self" : "cross", nseg);
    lcfg_init(&c, lkind, DM, H, 0, CTX, r);
    pk_setup(&c.d.attn, k, &P, H, DM / H, r);
    if (!self && k->kind == ATTN_NYSTROM) c.d.attn.nystrom.conv_kernel = 0;   /* the conv residual needs lq == lk */
    W = lcfg_weights(&c);
    if (shared) { W.wk = NULL; W.bk = NULL; }
    W.e = P.e; W.f = P.f; W.conv = P.conv;
    xq = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM); xk = (float *)t_xmalloc(sizeof(float) * (size_t)Tk * DM);
    dout = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM); out = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM);
    o2 = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM); ao = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM);
    dxq = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM); dxq2 = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM);
    adxq = (float *)t_xmalloc(sizeof(float) * (size_t)Tq * DM);
    dxk = (float *)t_xmalloc(sizeof(float) * (size_t)Tk * DM); dxk2 = (float *)t_xmalloc(sizeof(float) * (size_t)Tk * DM);
    adxk = (float *)t_xmalloc(sizeof(float) * (size_t)Tk * DM);
    tmp = (double *)t_xmalloc(sizeof(double) * (size_t)(Tq > Tk ? Tq : Tk) * DM);
    fill_x(xq, tmp, (size_t)Tq * DM, r); fill_x(xk, tmp, (size_t)Tk * DM, r); fill_x(dout, tmp, (size_t)Tq * DM, r);
    for (w = 0; w < W_COUNT; ++w) {
        read[w] = c.n[w] != 0 && !(shared && (w == W_K || w == W_BK));
        g[w] = (float *)t_xmalloc(sizeof(float) * big); ga[w] = (float *)t_xmalloc(sizeof(float) * big);
        acc[w] = (double *)calloc(big, sizeof(double));
    }
    memset(acce, 0, sizeof acce); memset(accf, 0, sizeof accf); memset(accc, 0, sizeof accc);
    memset(&G, 0, sizeof G); memset(&Ga, 0, sizeof Ga);
    G.wq = g[W_Q]; G.bq = g[W_BQ]; G.wk = g[W_K]; G.bk = g[W_BK]; G.wv = g[W_V]; G.bv = g[W_BV];
    G.wo = g[W_O]; G.bo = g[W_BO]; G.wa = g[W_A]; G.ba = g[W_BA]; G.wd = g[W_D]; G.e = ge; G.f = gf; G.conv = gc;
    Ga.wq = ga[W_Q]; Ga.bq = ga[W_BQ]; Ga.wk = ga[W_K]; Ga.bk = ga[W_BK]; Ga.wv = ga[W_V]; Ga.bv = ga[W_BV];
    Ga.wo = ga[W_O]; Ga.bo = ga[W_BO]; Ga.wa = ga[W_A]; Ga.ba = ga[W_BA]; Ga.wd = ga[W_D]; Ga.e = gae; Ga.f = gaf; Ga.conv = gac;
    /* each segment through the layer alone (an empty one has no rows and no call) */
    d1 = c.d; d1.n_threads = 1;
    for (u = 0; u < nseg; ++u) {
        if (!lq[u]) continue;
        s = attn_layer_forward(&d1, &W, 1, lq[u], lk[u], xq + (size_t)cuq[u] * DM, self ? NULL : xk + (size_t)cuk[u] * DM,
                               ao + (size_t)cuq[u] * DM);
        ok_alone &= s == ATTN_OK;
        s = attn_layer_backward(&d1, &W, 1, lq[u], lk[u], xq + (size_t)cuq[u] * DM, self ? NULL : xk + (size_t)cuk[u] * DM,
                                dout + (size_t)cuq[u] * DM, adxq + (size_t)cuq[u] * DM, self ? NULL : adxk + (size_t)cuk[u] * DM, &Ga);
        ok_alone &= s == ATTN_OK;
        if (s != ATTN_OK) continue;
        for (w = 0; w < W_COUNT; ++w) if (read[w]) for (i = 0; i < c.n[w]; ++i) acc[w][i] += ga[w][i];
        for (i = 0; i < NE; ++i) { acce[i] += gae[i]; accf[i] += gaf[i]; }
        for (i = 0; i < NC; ++i) accc[i] += gac[i];
    }
    if (!T_CHECK(ok_alone, "%s: a segment alone failed (%s)", what, attn_status_str(s))) goto out;
    /* packed, one thread */
    c.d.attn.cu_seqlens_q = cuq; c.d.attn.cu_seqlens_k = cuk; c.d.attn.varlen_batch = nseg;
    c.d.n_threads = 1;
    s = attn_layer_forward(&c.d, &W, 1, Tq, Tk, xq, self ? NULL : xk, out);
    if (!T_CHECK(s == ATTN_OK, "%s: forward %s", what, attn_status_str(s))) goto out;
    s = attn_layer_backward(&c.d, &W, 1, Tq, Tk, xq, self ? NULL : xk, dout, dxq, self ? NULL : dxk, &G);
    if (!T_CHECK(s == ATTN_OK, "%s: backward %s", what, attn_status_str(s))) goto out;
    for (u = 0; u < nseg; ++u) {   /* the kinds that promise a segment its rows alone: bitwise */
        const size_t q0 = (size_t)cuq[u] * DM, k0 = (size_t)cuk[u] * DM, nq = (size_t)lq[u] * DM, nk = (size_t)lk[u] * DM;
        if (exact) {
            ok_out &= memcmp(out + q0, ao + q0, sizeof(float) * nq) == 0;
            ok_dx &= memcmp(dxq + q0, adxq + q0, sizeof(float) * nq) == 0;
            if (!self) ok_dx &= memcmp(dxk + k0, adxk + k0, sizeof(float) * nk) == 0;
        } else {
            ok_out &= max_diff(out + q0, ao + q0, nq) <= TOL_PACK;
            ok_dx &= max_diff(dxq + q0, adxq + q0, nq) <= TOL_PACK && (self || max_diff(dxk + k0, adxk + k0, nk) <= TOL_PACK);
        }
    }
    T_CHECK(ok_out, "%s: out rows differ from the segments alone (%.3g)", what, max_diff(out, ao, (size_t)Tq * DM));
    T_CHECK(ok_dx, "%s: dx rows differ from the segments alone (%.3g)", what, max_diff(dxq, adxq, (size_t)Tq * DM));
    for (w = 0; w < W_COUNT; ++w) {
        double e;
        if (!read[w]) continue;
        e = pk_err(g[w], acc[w], c.n[w]);
        if (e <= TOL_PACK && e > g_worst_pack) g_worst_pack = e;
        T_CHECK(e <= TOL_PACK, "%s: grad %s differs from the segments' sum by %.3g", what, w_names[w], e);
    }
    ++g_pack_runs;
    if (k->kind == ATTN_LINFORMER) {
        T_CHECK(pk_err(ge, acce, NE) <= TOL_PACK, "%s: grads.e differs from the segments' sum by %.3g", what, pk_err(ge, acce, NE));
        T_CHECK(pk_err(gf, accf, NE) <= TOL_PACK, "%s: grads.f differs from the segments' sum by %.3g", what, pk_err(gf, accf, NE));
    }
    if (k->kind == ATTN_NYSTROM && c.d.attn.nystrom.conv_kernel)
        T_CHECK(pk_err(gc, accc, NC) <= TOL_PACK, "%s: grads.conv differs from the segments' sum by %.3g", what, pk_err(gc, accc, NC));
    /* a caller workspace of the queried size (forward, then backward), and 3 threads: the same bits */
    for (p = 0; p < 2; ++p) {
        s = attn_layer_workspace_size(&c.d, p, 1, Tq, Tk, &bytes[p]);
        if (!T_CHECK(s == ATTN_OK, "%s: workspace query %s", what, attn_status_str(s))) goto out;
        ws = t_xmalloc(bytes[p]);
        c.d.workspace = ws; c.d.workspace_size = bytes[p];
        if (p == 0) {
            s = attn_layer_forward(&c.d, &W, 1, Tq, Tk, xq, self ? NULL : xk, o2);
            T_CHECK(s == ATTN_OK && memcmp(o2, out, sizeof(float) * (size_t)Tq * DM) == 0,
                    "%s: forward in the queried workspace (%lu bytes): %s or other bits", what, (unsigned long)bytes[p], attn_status_str(s));
        } else {
            s = attn_layer_backward(&c.d, &W, 1, Tq, Tk, xq, self ? NULL : xk, dout, dxq2, self ? NULL : dxk2, &Ga);
            T_CHECK(s == ATTN_OK && memcmp(dxq2, dxq, sizeof(float) * (size_t)Tq * DM) == 0 &&
                    memcmp(ga[W_Q], g[W_Q], sizeof(float) * c.n[W_Q]) == 0 &&
                    (k->kind != ATTN_LINFORMER || memcmp(gae, ge, sizeof ge) == 0) &&
                    (k->kind != ATTN_NYSTROM || !c.d.attn.nystrom.conv_kernel || memcmp(gac, gc, sizeof gc) == 0),
                    "%s: backward in the queried workspace (%lu bytes): %s or other bits", what, (unsigned long)bytes[p], attn_status_str(s));
        }
        c.d.workspace = NULL; c.d.workspace_size = 0;
        free(ws);
    }
    c.d.n_threads = 3;
    s = attn_layer_backward(&c.d, &W, 1, Tq, Tk, xq, self ? NULL : xk, dout, dxq2, self ? NULL : dxk2, &Ga);
    T_CHECK(s == ATTN_OK && memcmp(dxq2, dxq, sizeof(float) * (size_t)Tq * DM) == 0 &&
            memcmp(ga[W_O], g[W_O], sizeof(float) * c.n[W_O]) == 0 && memcmp(ga[W_Q], g[W_Q], sizeof(float) * c.n[W_Q]) == 0,
            "%s: backward with 3 threads differs", what);
out:
    for (w = 0; w < W_COUNT; ++w) { free(g[w]); free(ga[w]); free(acc[w]); }
    lcfg_free(&c);
    free(xq); free(xk); free(dout); free(out); free(o2); free(ao); free(dxq); free(dxq2); free(adxq);
    free(dxk); free(dxk2); free(adxk); free(tmp);
}

/* Bad cu_seqlens inside a layer: the status the kind's own attn_forward gives the same packed
   desc, from the layer's forward, backward and workspace queries, nothing written. */
static void check_packed_errors(void) {
    static float wbuf[1024];
    static const int cover[4] = { 0, 3, 4, 8 }, down[4] = { 0, 4, 3, 10 }, odd[4] = { 0, 3, 4, 10 }, one[2] = { 0, 10 };
    static const struct { const int *cu; int n; const char *name; } cases[] = {
        { cover, 3, "ending before the rows" }, { down, 3, "decreasing" }, { odd, 3, "segments of 3, 1, 6" }, { one, 1, "one segment of 10" },
    };
    float *q = (float *)t_xmalloc(sizeof(float) * 10 * 8), *o = (float *)t_xmalloc(sizeof(float) * 10 * 8);
    int i, j;
    for (i = 0; i < 80; ++i) q[i] = (float)(i % 7) * 0.1f;
    for (i = 0; i < N_AKINDS; ++i)
        for (j = 0; j < (int)(sizeof cases / sizeof cases[0]); ++j) {
            ecase e;
            akparams P;
            attn_desc ad;
            attn_tensor t = attn_tensor_dense(q, ATTN_F32, 1, 10, 2, 4), to = attn_tensor_dense(o, ATTN_F32, 1, 10, 2, 4);
            attn_status want;
            int doc = -1;           /* the status documented, where this test knows it */
            size_t bytes;
            char what[120];
            t_rng r = t_rng_seed(7);
            const attn_kind kd = akinds[i].kind;
            memset(&e, 0, sizeof e);
            e.d.kind = ATTN_LAYER_STANDARD; e.d.d_model = 8; e.d.heads = 2;
            e.W.wq = e.W.wk = e.W.wv = e.W.wo = wbuf;
            ak_setup(&e.d.attn, &akinds[i], &P, 2, 4, &r);
            e.W.e = P.e; e.W.f = P.f; e.W.conv = P.conv;
            e.B = 1; e.lq = e.lk = 10; e.self = 1;
            e.d.attn.cu_seqlens_q = e.d.attn.cu_seqlens_k = cases[j].cu; e.d.attn.varlen_batch = cases[j].n;
            ad = e.d.attn;          /* the kind's own call on tensors of the projected shape */
            ad.linformer.e = P.e; ad.linformer.f = P.f; ad.nystrom.conv = P.conv;
            want = attn_forward(&ad, t, t, t, to, NULL);
            /* the statuses documented (ak_setup: BigBird block 2, LSH chunk 2, 4 landmarks, E/F of 9 columns) */
            if (j == 1) doc = ATTN_ERR_CU_SEQLENS_Q;
            else if (kd == ATTN_LINEAR || kd == ATTN_PERFORMER || kd == ATTN_COSFORMER) doc = j == 0 ? ATTN_ERR_VARLEN_COVER : ATTN_OK;
            else if (kd == ATTN_BIGBIRD || kd == ATTN_LSH || kd == ATTN_NYSTROM || kd == ATTN_LINFORMER) {
                static const int by[4][3] = {   /* cases 0, 2, 3 */
                    { ATTN_ERR_VARLEN_COVER, ATTN_ERR_BIGBIRD_BLOCK, ATTN_OK }, { ATTN_ERR_VARLEN_COVER, ATTN_ERR_LSH_BUCKET_SIZE, ATTN_OK },
                    { ATTN_ERR_VARLEN_COVER, ATTN_ERR_NYSTROM_LANDMARKS, ATTN_ERR_NYSTROM_DIVIDE },
                    { ATTN_ERR_VARLEN_COVER, ATTN_OK, ATTN_ERR_LINFORMER_N } };
                doc = by[kd == ATTN_BIGBIRD ? 0 : kd == ATTN_LSH ? 1 : kd == ATTN_NYSTROM ? 2 : 3][j == 0 ? 0 : j - 1];
            }
            snprintf(what, sizeof what, "packed %s layer, cu_seqlens %s", akinds[i].name, cases[j].name);
            if (doc >= 0) T_CHECK(want == (attn_status)doc, "%s: attn_forward gives %s, documented %s", what, attn_status_str(want),
                                  attn_status_str((attn_status)doc));
            expect_err(&e, want, E_BOTH, what);
            T_CHECK(attn_layer_workspace_size(&e.d, 0, 1, 10, 10, &bytes) == want &&
                    attn_layer_workspace_size(&e.d, 1, 1, 10, 10, &bytes) == want, "%s: workspace queries", what);
        }
    free(q); free(o);
}


/* Packed layers of every kind that takes cu_seqlens: 5 segments with a 1-row and an empty one
   (self-attention), every layer kind the attention kind fits; cross-attention where the kind
   has it; then bad cu_seqlens */
static void test_packed_kinds(t_rng *r) {
    static const int ls[5] = { 3, 1, 0, 4, 2 }, cq[4] = { 2, 1, 3, 2 }, ck[4] = { 4, 1, 3, 2 };
    int i, lkind;
    for (i = 0; i < N_AKINDS; ++i) {
        const attn_kind kd = akinds[i].kind;
        for (lkind = ATTN_LAYER_STANDARD; lkind <= ATTN_LAYER_SUPER; ++lkind) {
            if (kd == ATTN_LINFORMER && lkind == ATTN_LAYER_SUPER) continue;
            check_packed_kind(&akinds[i], lkind, 1, ls, ls, 5, r);
        }
        if (kd == ATTN_LINFORMER || kd == ATTN_NYSTROM || kd == ATTN_SOFTMAX || kd == ATTN_LINEAR || kd == ATTN_PERFORMER ||
            kd == ATTN_COSFORMER)
            check_packed_kind(&akinds[i], ATTN_LAYER_STANDARD, 0, cq, ck, 4, r);
    }
    check_packed_errors();
}

/* The backward's workspace query covers W_D's gradient: Direct at a context where the core's
   reduction of dW_D over the batch needs more scratch than the forward (it once asked for the
   forward's size only, and a caller workspace of the queried size was refused at context 256). */
static void test_direct_workspace(t_rng *r) {
    const int B = 8, l = 256, dm = 16;
    lcfg c;
    attn_layer_weights W;
    attn_layer_grads G1, G2;
    float *x = (float *)t_xmalloc(sizeof(float) * B * l * dm), *g1 = (float *)t_xmalloc(sizeof(float) * B * l * dm);
    float *g2 = (float *)t_xmalloc(sizeof(float) * B * l * dm);
    float *wd1 = (float *)t_xmalloc(sizeof(float) * l * l), *wd2 = (float *)t_xmalloc(sizeof(float) * l * l);
    double *xd = (double *)t_xmalloc(sizeof(double) * B * l * dm);
    size_t bytes = 0;
    void *ws;
    attn_status s1, s2;
    fill_x(x, xd, (size_t)B * l * dm, r);
    lcfg_init(&c, ATTN_LAYER_DIRECT, dm, 2, 0, l, r);
    W = lcfg_weights(&c);
    memset(&G1, 0, sizeof G1); memset(&G2, 0, sizeof G2);
    memset(wd1, 0, sizeof(float) * l * l); memset(wd2, 0, sizeof(float) * l * l);
    G1.wd = wd1; G2.wd = wd2;
    s1 = attn_layer_backward(&c.d, &W, B, l, l, x, NULL, x, g1, NULL, &G1);
    T_CHECK(attn_layer_workspace_size(&c.d, 1, B, l, l, &bytes) == ATTN_OK, "direct: bwd workspace size");
    ws = t_xmalloc(bytes);
    c.d.workspace = ws; c.d.workspace_size = bytes;
    s2 = attn_layer_backward(&c.d, &W, B, l, l, x, NULL, x, g2, NULL, &G2);
    T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "direct, context %d, batch %d: backward in the queried workspace: %s / %s", l, B,
            attn_status_str(s1), attn_status_str(s2));
    T_CHECK(s2 == ATTN_OK && max_diff(g2, g1, (size_t)B * l * dm) <= TOL_GRAD && max_diff(wd2, wd1, (size_t)l * l) <= TOL_GRAD,
            "direct: backward in a caller workspace differs from the allocating one");
    free(ws); free(x); free(g1); free(g2); free(wd1); free(wd2); free(xd);
    lcfg_free(&c);
}

void test_layers(void) {
    t_rng r = t_rng_seed(977);
    test_counts();
    test_forward();
    test_properties();
    test_gradients();
    test_layer_errors();
    test_any_kind();
    check_linformer_fd(2, 1, 0, &r);
    check_linformer_fd(1, 0, 1, &r);
    check_linformer_fd(2, 1, 1, &r);
    test_any_kind_counts_errors();
    test_direct_workspace(&r);
    test_packed_kinds(&r);
    printf("      layers: any attention kind: %d kind x layer x self/cross cases, %d with a backward compared\n", g_any_runs, g_any_bwd);
    printf("      layers: packed sequences: %d kind x layer x self/cross cases; weight gradients vs the segments' sum: %.2g of %.0e\n",
           g_pack_runs, g_worst_pack, TOL_PACK);
    printf("      layers: largest passing errors: forward %.2g of %.0e, gradients %.2g of %.0e\n", g_worst_fwd, TOL_FWD,
           g_worst_grad, TOL_GRAD);
}
