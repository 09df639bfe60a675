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
     test_layer_errors  every layer status code: exact code, outputs untouched */
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
    attn_layer_grads G;
    attn_status s;
    int i;
    for (i = 0; i < CAP; ++i) { xq[i] = 0.5f; xk[i] = -0.25f; }
    t_sentinel(out, sizeof(float) * CAP, OUT_SEED_L); t_sentinel(dxq, sizeof(float) * CAP, OUT_SEED_L);
    t_sentinel(dxk, sizeof(float) * CAP, OUT_SEED_L); t_sentinel(gw, sizeof(float) * CAP, OUT_SEED_L);
    G.wq = G.bq = G.wk = G.bk = G.wv = G.bv = G.wo = G.bo = G.wa = G.ba = G.wd = gw;
    if (which & E_FWD) {
        s = attn_layer_forward(&e->d, e->null_w ? NULL : &e->W, e->B, e->lq, e->lk, e->null_x ? NULL : xq,
                               e->self ? NULL : xk, e->null_out ? NULL : out);
        if (T_CHECK(s == want, "%s: forward returned %s, want %s", what, attn_status_str(s), attn_status_str(want)))
            t_status_provoked[want] = 1;
        if (want != ATTN_OK) T_CHECK(t_sentinel_ok(out, sizeof(float) * CAP, OUT_SEED_L), "%s: forward wrote out", what);
    }
    if (!(which & E_BWD)) { free(xq); free(xk); free(out); free(dxq); free(dxk); free(gw); return; }
    s = attn_layer_backward(&e->d, e->null_w ? NULL : &e->W, e->B, e->lq, e->lk, e->null_x ? NULL : xq,
                            e->self ? NULL : xk, e->null_dout ? NULL : xq, dxq, (e->self && !e->dx_kv_self) ? NULL : dxk,
                            e->null_grads ? NULL : &G);
    if (T_CHECK(s == want, "%s: backward returned %s, want %s", what, attn_status_str(s), attn_status_str(want)))
        t_status_provoked[want] = 1;
    if (want != ATTN_OK)
        T_CHECK(t_sentinel_ok(dxq, sizeof(float) * CAP, OUT_SEED_L) && t_sentinel_ok(dxk, sizeof(float) * CAP, OUT_SEED_L) &&
            t_sentinel_ok(gw, sizeof(float) * CAP, OUT_SEED_L), "%s: backward wrote an output", what);
    free(xq); free(xk); free(out); free(dxq); free(dxk); free(gw);
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
    {   /* issue 27 item 11: the layers' core is softmax; another attn.kind was run by the forward
           (undocumented) and aborted the backward (lse passed to a kind without one) */
        static const attn_kind kinds[4] = { ATTN_PERFORMER, ATTN_LINEAR, ATTN_NYSTROM, ATTN_LONGFORMER };
        int i, bwd;
        for (i = 0; i < 4; ++i) {
            char what[80];
            e = base; e.d.kind = ATTN_LAYER_STANDARD; e.d.attn.kind = kinds[i];
            snprintf(what, sizeof what, "attn.kind %s", attn_kind_name(kinds[i]));
            expect_err(&e, ATTN_ERR_LAYER_ATTN_KIND, E_FWD, what);
            for (bwd = 0; bwd <= 1; ++bwd) {
                size_t bytes = 99;
                const attn_status s = attn_layer_workspace_size(&e.d, bwd, e.B, e.lq, e.lk, &bytes);
                T_CHECK(s == ATTN_ERR_LAYER_ATTN_KIND && bytes == 99, "%s: workspace query (backward %d) %s", what, bwd, attn_status_str(s));
            }
            expect_err(&e, ATTN_ERR_LAYER_ATTN_KIND, E_BWD, what);
        }
    }
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

void test_layers(void) {
    test_counts();
    test_forward();
    test_properties();
    test_gradients();
    test_layer_errors();
    printf("      layers: largest passing errors: forward %.2g of %.0e, gradients %.2g of %.0e\n", g_worst_fwd, TOL_FWD,
           g_worst_grad, TOL_GRAD);
}
