/* tests/test_exact.c - exact attention (attn_forward, ATTN_SOFTMAX), attn_workspace_size,
   attn_merge and the status table, checked against the naive double reference in ref.h and
   against the properties DESIGN.md lists.

   TOLERANCES (q/k/v stored as f16/bf16 are rounded before the reference reads them, so the
   reference computes on exactly the stored values and the f32 tolerances apply to them too):
     out, f32:       |out - ref| <= TOL_OUT * max(1, max |ref| over that row's Dv values)
     lse:            |lse - ref| <= TOL_LSE * max(1, |ref|)
     out, f16/bf16:  the f32 bound plus one rounding of the output: 2^-10 (f16) or 2^-7 (bf16)
                     times |ref| of that element
     fully masked rows (no visible key, padding, outside every packed segment):
                     out exactly 0 and lse exactly -inf, never NaN
   Properties between two attn_forward results (GQA vs MHA, window vs none, decode vs prefill,
   split + merge vs one pass) use the same bounds with one result as the reference. Thread
   counts, the parallel hook and a caller workspace must give bitwise identical results.
   Inputs are N(0,1) and logits stay moderate (see tame_alibi): the bounds above are what fp32
   arithmetic can meet; the suite prints how much of the f32 bound it actually used.

   CONTENTS
     test_conversions, test_tensor_helpers   our fp16/bf16 codecs; attn_tensor_dense/_bhsd
     test_status_table, test_errors,         every status code: exact code for a call with one
     test_merge_errors                       fault, message names the field, outputs untouched,
                                             attn_workspace_size agrees; size overflow
     test_masks                              every mask alone and combined, Sq<Sk and Sq>Sk
     test_edges                              fully masked rows, extreme arguments, -inf bias,
                                             overflowing logits, long decode
     test_sweep                              random shapes x dtypes x layouts x masks
     prop_gqa, prop_window, prop_decode,     GQA == repeated MHA, MQA == stride-0 K/V, window
     prop_split_merge                        >= seq == none, decode == prefill rows, split-KV +
                                             attn_merge == one pass (also in place)
     prop_threads, prop_history              bitwise equal for any n_threads, parallel hook and
                                             caller workspace (allocation-free); no dependence
                                             on what earlier calls left in scratch memory
     test_merge                              attn_merge vs its reference, -inf parts, in place
     fuzz_forward, fuzz_merge                random valid/invalid arguments with exact-size
                                             buffers, against an independent validity predictor */
#include "test.h"
#include "ref.h"

#define TOL_OUT 1e-5
#define TOL_LSE 1e-5

/* ---------------------------------------------------------------------------------------- */
/* Tensors with their own buffers                                                            */
/* ---------------------------------------------------------------------------------------- */

enum { L_DENSE, L_BHSD, L_PADDED, L_SEQMAJOR, L_BCAST, L_COUNT };

typedef struct {
    attn_tensor t;   /* the view */
    void *buf;       /* the allocation, exactly t_extent(view) elements */
    size_t n;        /* elements in buf */
    int is_out;      /* outputs are filled with sentinel bytes, inputs with NaN gaps */
} tb;

#define OUT_SEED 0xC3u
#define LSE_SEED 0x5Au

static void layout_strides(int layout, int B, int S, int H, int D, t_rng *r,
                           ptrdiff_t *sb, ptrdiff_t *ss, ptrdiff_t *sh) {
    ptrdiff_t a = t_irange(r, 0, 3), b = t_irange(r, 0, 3), c = t_irange(r, 0, 3);
    switch (layout) {
    case L_BHSD:     *sh = (ptrdiff_t)S * D; *ss = D; *sb = (ptrdiff_t)H * S * D; break;
    case L_PADDED:   if (a + b + c == 0) a = 1;
                     *sh = D + a; *ss = H * *sh + b; *sb = S * *ss + c; break;
    case L_SEQMAJOR: *sh = D; *sb = (ptrdiff_t)H * D; *ss = (ptrdiff_t)B * H * D; break;
    case L_BCAST:    *sh = 0; *ss = D + a; *sb = S * *ss + b; break;
    default:         *sh = D; *ss = (ptrdiff_t)H * D; *sb = (ptrdiff_t)S * H * D; break;
    }
}

/* A [B, S, H, D] tensor of dtype dt in the given layout. Dense and BHSD views are built with
   the library's constructors (checked separately in test_tensor_helpers). */
static tb tb_new(attn_dtype dt, int B, int S, int H, int D, int layout, t_rng *r, int is_out) {
    tb x;
    attn_tensor tmp;
    memset(&x, 0, sizeof x);
    memset(&tmp, 0, sizeof tmp);
    tmp.dtype = dt; tmp.batch = B; tmp.seq = S; tmp.heads = H; tmp.dim = D;
    layout_strides(layout, B, S, H, D, r, &tmp.stride_batch, &tmp.stride_seq, &tmp.stride_head);
    x.n = t_extent(&tmp);
    x.buf = t_xmalloc(x.n * t_dt_size(dt));
    x.is_out = is_out;
    if (is_out) t_sentinel(x.buf, x.n * t_dt_size(dt), OUT_SEED);
    else t_fill_nan(x.buf, dt, x.n);
    if (layout == L_DENSE) x.t = attn_tensor_dense(x.buf, dt, B, S, H, D);
    else if (layout == L_BHSD) x.t = attn_tensor_bhsd(x.buf, dt, B, H, S, D);
    else { x.t = tmp; x.t.data = x.buf; }
    return x;
}
static void tb_free(tb *x) { free(x->buf); x->buf = NULL; }

static int tb_gaps_ok(const tb *x) { return t_gaps_ok(&x->t, x->buf, x->n, OUT_SEED); }

/* a view of rows [s0, s0 + n) of t along seq, with explicit strides */
static attn_tensor view_seq(const attn_tensor *t, int s0, int n) {
    attn_tensor v = *t;
    t_strides st = t_resolve(t);
    v.stride_batch = st.sb; v.stride_seq = st.ss; v.stride_head = st.sh;
    v.data = (char *)t->data + (ptrdiff_t)s0 * st.ss * (ptrdiff_t)t_dt_size(t->dtype);
    v.seq = n;
    return v;
}

/* ---------------------------------------------------------------------------------------- */
/* Describing a call (for failure messages: every failure prints a reproducer)               */
/* ---------------------------------------------------------------------------------------- */

static char g_desc[4096];

static void cat_ints(char *buf, size_t cap, const char *name, const int *a, int n) {
    size_t len = strlen(buf);
    int i;
    if (!a) return;
    len += (size_t)snprintf(buf + len, cap - len, " %s=[", name);
    for (i = 0; i < n && len < cap; ++i) {
        if (i == 12) { len += (size_t)snprintf(buf + len, cap - len, " ..."); break; }
        len += (size_t)snprintf(buf + len, cap - len, i ? " %d" : "%d", a[i]);
    }
    if (len < cap) snprintf(buf + len, cap - len, "]");
}
static void cat_tensor(char *buf, size_t cap, const char *name, const attn_tensor *t) {
    size_t len = strlen(buf);
    if (len < cap)
        snprintf(buf + len, cap - len, " %s[%d,%d,%d,%d %s strides b%ld s%ld h%ld]", name, t->batch, t->seq,
                 t->heads, t->dim, t_dt_name(t->dtype), (long)t->stride_batch, (long)t->stride_seq,
                 (long)t->stride_head);
}
static const char *describe(const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                            const attn_tensor *v, const attn_tensor *out) {
    size_t cap = sizeof g_desc, len;
    g_desc[0] = 0;
    cat_tensor(g_desc, cap, "q", q); cat_tensor(g_desc, cap, "k", k);
    cat_tensor(g_desc, cap, "v", v); cat_tensor(g_desc, cap, "out", out);
    len = strlen(g_desc);
    snprintf(g_desc + len, cap - len,
             " | scale=%.9g causal=%d wl=%d wr=%d dil=%d sink=%d global=%d softcap=%g n_threads=%d"
             " varlen_batch=%d",
             (double)d->scale, d->causal, d->window_left, d->window_right, d->dilation,
             d->sink_tokens, d->global_tokens, (double)d->softcap, d->n_threads, d->varlen_batch);
    cat_ints(g_desc, cap, "seqlens_q", d->seqlens_q, q->batch);
    cat_ints(g_desc, cap, "seqlens_k", d->seqlens_k, q->batch);
    cat_ints(g_desc, cap, "cu_q", d->cu_seqlens_q, d->varlen_batch + 1);
    cat_ints(g_desc, cap, "cu_k", d->cu_seqlens_k, d->varlen_batch + 1);
    len = strlen(g_desc);
    if (d->alibi_slopes && len < cap)
        snprintf(g_desc + len, cap - len, " alibi[0]=%g", (double)d->alibi_slopes[0]);
    len = strlen(g_desc);
    if (d->bias.data && len < cap)
        snprintf(g_desc + len, cap - len, " bias[b%d h%d strides b%ld h%ld q%ld]", d->bias.batch,
                 d->bias.heads, (long)d->bias.stride_batch, (long)d->bias.stride_head,
                 (long)d->bias.stride_q);
    return g_desc;
}

/* ---------------------------------------------------------------------------------------- */
/* Comparison against a double reference                                                     */
/* ---------------------------------------------------------------------------------------- */

/* Compares out (any dtype, strided) and lse (dense [B,H,S] or NULL) with dense double
   references. Returns 1 when everything is within tolerance. */
static double g_worst_ratio = 0.0;   /* largest passing f32 error / tolerance (margin report) */
/* amx: bf16 q/k/v run on the bf16 tile kernels (3.12), which round P to bf16 for P.V: that
   adds at most 2^-9 * max|v| to each output; check_result sets this to 2^-8 * max|v| then. */
static double g_kernel_tol = 0.0;
static char g_worst_tag[160];

static int cmp_ref(const char *tag, const char *ctx, const double *rout, const double *rlse,
                   const attn_tensor *out, const float *lse, int B, int S, int H, int Dv) {
    const double rel = t_dt_rel(out->dtype);
    double worst = 0.0, w_got = 0, w_ref = 0, w_tol = 0;
    int wb = -1, wi = -1, wh = -1, wc = -1;
    int mb = -1, mi = -1, mh = -1, mc = -1; double m_got = 0;   /* masked-row violation */
    int lb = -1, li = -1, lh = -1; double l_got = 0, l_ref = 0;  /* lse violation */
    int b, i, h, c, ok = 1;
    for (b = 0; b < B; ++b)
        for (i = 0; i < S; ++i)
            for (h = 0; h < H; ++h) {
                const double *r = rout + (((size_t)b * S + i) * H + h) * Dv;
                const double rl = rlse[((size_t)b * H + h) * S + i];
                double mx = 1.0;
                if (rl == -INFINITY) {
                    for (c = 0; c < Dv; ++c) {
                        double g = t_load(out, b, i, h, c);
                        if (!(g == 0.0) && mb < 0) { mb = b; mi = i; mh = h; mc = c; m_got = g; }
                    }
                } else {
                    for (c = 0; c < Dv; ++c) if (fabs(r[c]) > mx) mx = fabs(r[c]);
                    for (c = 0; c < Dv; ++c) {
                        double g = t_load(out, b, i, h, c);
                        double tol = TOL_OUT * mx + rel * fabs(r[c]) + g_kernel_tol;
                        double e = fabs(g - r[c]) / tol;
                        if (!(e <= worst)) {
                            worst = e != e ? INFINITY : e;
                            wb = b; wi = i; wh = h; wc = c; w_got = g; w_ref = r[c]; w_tol = tol;
                        }
                    }
                }
                if (lse) {
                    double g = lse[((size_t)b * H + h) * S + i];
                    int lok = rl == -INFINITY ? g == -INFINITY
                                              : fabs(g - rl) <= TOL_LSE * (fabs(rl) > 1 ? fabs(rl) : 1.0);
                    if (!lok && lb < 0) { lb = b; li = i; lh = h; l_got = g; l_ref = rl; }
                }
            }
    if (out->dtype == ATTN_F32 && worst <= 1.0 && worst > g_worst_ratio) { g_worst_ratio = worst; snprintf(g_worst_tag, sizeof g_worst_tag, "%s", tag); }
    ok &= T_CHECK(worst <= 1.0,
                  "%s: out[b=%d,i=%d,h=%d,c=%d] = %.9g, reference %.9g (|err| %.3g > tol %.3g, %.3gx)%s",
                  tag, wb, wi, wh, wc, w_got, w_ref, fabs(w_got - w_ref), w_tol, worst, ctx);
    ok &= T_CHECK(mb < 0, "%s: fully masked row out[b=%d,i=%d,h=%d,c=%d] = %.9g, want exactly 0%s",
                  tag, mb, mi, mh, mc, m_got, ctx);
    if (lse)
        ok &= T_CHECK(lb < 0, "%s: lse[b=%d,h=%d,i=%d] = %.9g, reference %.9g%s", tag, lb, lh, li,
                      l_got, l_ref, ctx);
    return ok;
}

/* Compare two attn_forward results for a property; a is treated as the reference. */
static int cmp_outputs(const char *tag, const char *ctx, const attn_tensor *a, const float *alse,
                       const attn_tensor *b_, const float *blse, int B, int S, int H, int Dv) {
    size_t n = (size_t)B * S * H * Dv, m = (size_t)B * H * S, i;
    double *ro = (double *)t_xmalloc(n * sizeof(double));
    double *rl = (double *)t_xmalloc(m * sizeof(double));
    int b, s, h, c, ok;
    for (b = 0; b < B; ++b)
        for (s = 0; s < S; ++s)
            for (h = 0; h < H; ++h)
                for (c = 0; c < Dv; ++c) ro[(((size_t)b * S + s) * H + h) * Dv + c] = t_load(a, b, s, h, c);
    for (i = 0; i < m; ++i) rl[i] = alse[i];
    ok = cmp_ref(tag, ctx, ro, rl, b_, blse, B, S, H, Dv);
    free(ro); free(rl);
    return ok;
}

static int lse_has_nan(const float *lse, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) if (lse[i] != lse[i]) return 1;
    return 0;
}

/* Check a successful attn_forward result (out, lse or NULL) against the reference. */
static int check_result(const char *tag, const char *ctx, const attn_desc *d, attn_tensor q, attn_tensor k,
                        attn_tensor v, attn_tensor out, const float *lse) {
    const int B = q.batch, Sq = q.seq, Hq = q.heads, Dv = v.dim;
    size_t nl = (size_t)B * Hq * Sq;
    double *rout = (double *)t_xmalloc((size_t)B * Sq * Hq * Dv * sizeof(double));
    double *rlse = (double *)t_xmalloc(nl * sizeof(double));
    int ok;
    ref_attention(d, q, k, v, rout, rlse);
    if (q.dtype == ATTN_BF16 && k.dtype == ATTN_BF16 && d->bf16_kernels != 2) {   /* amx: see g_kernel_tol */
        int b, s, h, c;
        for (b = 0; b < v.batch; ++b) for (s = 0; s < v.seq; ++s) for (h = 0; h < v.heads; ++h) for (c = 0; c < Dv; ++c)
            g_kernel_tol = fmax(g_kernel_tol, ldexp(fabs(t_load(&v, b, s, h, c)), -8));
    }
    ok = cmp_ref(tag, ctx, rout, rlse, &out, lse, B, Sq, Hq, Dv);
    g_kernel_tol = 0.0;
    if (lse) ok &= T_CHECK(!lse_has_nan(lse, nl), "%s: NaN in lse%s", tag, ctx);
    free(rout); free(rlse);
    return ok;
}

/* Run attn_forward on fresh output state and check it against the reference.
   lse_mode: 0 = pass NULL, 1 = pass a buffer. Returns 1 when all checks passed. */
static int fwd_check(const char *tag, const attn_desc *d, const tb *q, const tb *k, const tb *v,
                     tb *out, int lse_mode) {
    const int B = q->t.batch, Sq = q->t.seq, Hq = q->t.heads;
    size_t nl = (size_t)B * Hq * Sq;
    float *lse = lse_mode ? (float *)t_xmalloc(nl * sizeof(float)) : NULL;
    attn_status st;
    int ok;
    char ctx[4200];
    snprintf(ctx, sizeof ctx, " |%s", describe(d, &q->t, &k->t, &v->t, &out->t));
    if (lse) t_sentinel(lse, nl * sizeof(float), LSE_SEED);
    t_sentinel(out->buf, out->n * t_dt_size(out->t.dtype), OUT_SEED);
    st = attn_forward(d, q->t, k->t, v->t, out->t, lse);
    ok = T_CHECK(st == ATTN_OK, "%s: attn_forward returned %d (%s)%s", tag, (int)st, attn_status_str(st), ctx);
    if (ok) {
        ok &= check_result(tag, ctx, d, q->t, k->t, v->t, out->t, lse);
        ok &= T_CHECK(tb_gaps_ok(out), "%s: attn_forward wrote outside the out view (padding gaps)%s", tag, ctx);
    }
    free(lse);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* Mask/extra builders                                                                       */
/* ---------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------- */
/* Randomised sweep over shapes, dtypes, layouts and masks                                    */
/* ---------------------------------------------------------------------------------------- */

static attn_dtype pick_dtype(t_rng *r, double p32) {
    double u = t_unif(r);
    return u < p32 ? ATTN_F32 : u < p32 + (1 - p32) / 2 ? ATTN_F16 : ATTN_BF16;
}
static int pick_layout(t_rng *r, int allow_bcast) {
    double u = t_unif(r);
    if (u < 0.40) return L_DENSE;
    if (u < 0.60) return L_BHSD;
    if (u < 0.80) return L_PADDED;
    if (u < 0.90 || !allow_bcast) return L_SEQMAJOR;
    return L_BCAST;
}

static void sweep_one(int idx, t_rng *r) {
    static const int seqs[9] = { 1, 2, 3, 17, 63, 65, 127, 129, 1000 };
    static const int dims[9] = { 1, 3, 8, 32, 64, 80, 96, 128, 256 };
    static const int ratios[3] = { 1, 2, 8 };
    const int pair = (idx * 7) % 81;                 /* idx 0..80 covers every (Sq, D) pair */
    const double cap = T_QUICK ? 4e6 : 2.5e7;      /* B*Hq*Sq*Sk*(D+Dv) per case */
    int Sq = seqs[pair % 9], D = dims[pair / 9];
    int ksi = t_chance(r, 0.4) ? pair % 9 : t_irange(r, 0, 8);
    int Sk = seqs[ksi];
    int Dv = t_chance(r, 0.75) ? D : dims[t_irange(r, 0, 8)];
    int ratio = t_pick(r, ratios, 3), Hkv = t_irange(r, 1, 2), B = t_irange(r, 1, 3), Hq;
    int varlen = t_chance(r, 0.15);
    attn_dtype dt = pick_dtype(r, 0.5), odt = pick_dtype(r, 0.7);
    attn_desc d;
    tb q, k, v, out;
    float *bias = NULL, *alibi = NULL;
    int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL;
    char tag[64];

    if (varlen) B = 1;
    while ((double)B * Hkv * ratio * Sq * Sk * (D + Dv) > cap) {
        if (B > 1) --B;
        else if (Hkv > 1) --Hkv;
        else if (ratio > 1) ratio = ratio == 8 ? 2 : 1;
        else if (ksi > 0) Sk = seqs[--ksi];
        else break;
    }
    Hq = Hkv * ratio;

    memset(&d, 0, sizeof d);
    d.causal = t_chance(r, 0.5);
    if (t_chance(r, 0.3)) d.window_left = t_chance(r, 0.8) ? t_irange(r, 1, Sk / 2 + 2) : Sk + t_irange(r, 0, 5);
    if (t_chance(r, 0.2)) d.window_right = t_irange(r, 1, Sk / 2 + 2);
    if (t_chance(r, 0.15)) d.dilation = t_irange(r, 0, 4);
    if (t_chance(r, 0.15)) d.sink_tokens = t_irange(r, 1, 4);
    if (t_chance(r, 0.1)) d.global_tokens = t_irange(r, 1, 3);
    if (t_chance(r, 0.15)) d.softcap = t_chance(r, 0.5) ? 5.0f : t_chance(r, 0.5) ? 1.0f : 30.0f;
    if (t_chance(r, 0.2))
        d.scale = (float)((t_chance(r, 0.2) ? -1 : 1) * (0.3 + 1.5 * t_unif(r)) / sqrt((double)D));
    if (t_chance(r, 0.2)) d.alibi_slopes = alibi = t_make_alibi(Hq, r);
    d.n_threads = t_irange(r, 0, 3);
    if (varlen) {
        d.varlen_batch = t_irange(r, 1, 4);
        d.cu_seqlens_q = cuq = t_make_cu(d.varlen_batch, Sq, t_chance(r, 0.7), r);
        d.cu_seqlens_k = cuk = t_make_cu(d.varlen_batch, Sk, t_chance(r, 0.7), r);
    } else {
        if (t_chance(r, 0.15)) d.seqlens_q = sql = t_make_seqlens(B, Sq, r);
        if (t_chance(r, 0.2)) d.seqlens_k = skl = t_make_seqlens(B, Sk, r);
        if (t_chance(r, 0.25)) bias = t_make_bias(&d.bias, B, Hq, Sq, Sk, t_irange(r, 0, 3), r, NULL);
    }

    t_tame_alibi(alibi, Hq, d.causal, Sq > Sk ? Sq : Sk);
    /* a quarter of the calls mix dtypes: q (and out) apart from K/V (f32 queries over an f16 cache) */
    q = tb_new(t_chance(r, 0.25) ? pick_dtype(r, 0.6) : dt, B, Sq, Hq, D, pick_layout(r, 1), r, 0);
    k = tb_new(dt, B, Sk, Hkv, D, pick_layout(r, 1), r, 0);
    v = tb_new(dt, B, Sk, Hkv, Dv, pick_layout(r, 1), r, 0);
    out = tb_new(odt, B, Sq, Hq, Dv, pick_layout(r, 0), r, 1);
    t_fill_normal(&q.t, r, 1.0);
    t_fill_normal(&k.t, r, 1.0);
    t_fill_normal(&v.t, r, 1.0);

    snprintf(tag, sizeof tag, "sweep #%d", idx);
    fwd_check(tag, &d, &q, &k, &v, &out, t_chance(r, 0.9));

    tb_free(&q); tb_free(&k); tb_free(&v); tb_free(&out);
    free(bias); free(alibi); free(sql); free(skl); free(cuq); free(cuk);
}

static void test_sweep(void) {
    t_rng r = t_rng_seed(1);
    int i, n = T_QUICK ? 120 : 405;
    for (i = 0; i < n; ++i) sweep_one(i, &r);
}

/* ---------------------------------------------------------------------------------------- */
/* Every mask alone and in combinations, at fixed shapes, both Sq < Sk and Sq > Sk             */
/* ---------------------------------------------------------------------------------------- */

#define N_MASK_CFG 30
static const char *mask_cfg(int cfg, attn_desc *d, int B, int Hq, int Sq, int Sk, t_rng *r,
                            float **bias, float **alibi, int **sql, int **skl, int **cuq, int **cuk) {
    switch (cfg) {
    case 0: return "none";
    case 1: d->causal = 1; return "causal";
    case 2: d->window_left = 5; return "window_left";
    case 3: d->window_right = 3; return "window_right";
    case 4: d->window_left = 4; d->window_right = 2; return "window both";
    case 5: d->dilation = 3; return "dilation alone";
    case 6: d->dilation = 2; d->window_left = 3; d->window_right = 3; return "dilated window";
    case 7: d->sink_tokens = 3; d->causal = 1; return "sinks + causal (no window)";
    case 8: d->causal = 1; d->window_left = 7; return "sliding window (Mistral)";
    case 9: d->causal = 1; d->window_left = 7; d->sink_tokens = 4; return "sliding window + sinks";
    case 10: d->global_tokens = 3; return "global alone";
    case 11: d->global_tokens = 3; d->window_left = 2; d->window_right = 2; return "Longformer";
    case 12: d->global_tokens = 2; d->dilation = 2; d->window_left = 3; d->causal = 1; return "global+dilated+causal";
    case 13: d->seqlens_q = *sql = t_make_seqlens(B, Sq, r); return "seqlens_q";
    case 14: d->seqlens_k = *skl = t_make_seqlens(B, Sk, r); (*skl)[0] = 0; return "seqlens_k (one 0)";
    case 15: d->seqlens_q = *sql = t_make_seqlens(B, Sq, r); d->seqlens_k = *skl = t_make_seqlens(B, Sk, r);
             d->causal = 1; return "seqlens both + causal";
    case 16: d->alibi_slopes = *alibi = t_make_alibi(Hq, r); return "alibi";
    case 17: d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->causal = 1; return "alibi + causal";
    case 18: d->softcap = 2.0f; return "softcap";
    case 19: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 0, r, NULL); return "bias dense";
    case 20: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 2, r, NULL); return "bias zero-stride broadcast";
    case 21: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 1, r, NULL); return "bias padded strides";
    case 22: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 3, r, NULL); return "bias one row for every query";
    case 23: d->scale = 0.37f; return "scale";
    case 24: d->scale = -0.21f; return "negative scale";
    case 25: d->causal = 1; d->window_left = 6; d->sink_tokens = 2; d->global_tokens = 1; d->dilation = 2;
             d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->softcap = 3.0f; d->scale = 0.3f;
             *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 1, r, NULL);
             d->seqlens_q = *sql = t_make_seqlens(B, Sq, r); d->seqlens_k = *skl = t_make_seqlens(B, Sk, r);
             return "everything";
    case 26: d->varlen_batch = 3; d->cu_seqlens_q = *cuq = t_make_cu(3, Sq, 0, r);
             d->cu_seqlens_k = *cuk = t_make_cu(3, Sk, 1, r); return "varlen";
    case 27: d->varlen_batch = 4; d->cu_seqlens_q = *cuq = t_make_cu(4, Sq, 1, r);
             d->cu_seqlens_k = *cuk = t_make_cu(4, Sk, 0, r); d->causal = 1; d->window_left = 4;
             d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->softcap = 4.0f; d->sink_tokens = 1;
             return "varlen + causal + window + alibi + softcap + sink";
    case 28: d->window_left = 3; d->window_right = 1; d->sink_tokens = 2; d->global_tokens = 2;
             return "window + sinks + global, non-causal";
    default: d->dilation = 3; d->window_left = 2; d->causal = 1;   /* Sq == Sk: D undilated problems */
             return "dilated causal window";
    }
}

static void test_masks(void) {
    t_rng r = t_rng_seed(2);
    static const int shapes[3][2] = { { 37, 53 }, { 53, 37 }, { 29, 29 } };
    int cfg, sh, rep;
    for (cfg = 0; cfg < N_MASK_CFG; ++cfg)
        for (sh = 0; sh < 3; ++sh)
            for (rep = 0; rep < 3; ++rep) {
                const int Sq = shapes[sh][0], Sk = shapes[sh][1], Hq = 4, Hkv = 2, D = 16, Dv = 12;
                const int varlen = cfg == 26 || cfg == 27, B = varlen ? 1 : 2;
                attn_dtype dt = rep == 0 ? ATTN_F32 : rep == 1 ? ATTN_F16 : ATTN_BF16;
                attn_dtype odt = rep == 0 ? ATTN_F32 : rep == 1 ? ATTN_BF16 : ATTN_F16;
                attn_desc d;
                float *bias = NULL, *alibi = NULL;
                int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL;
                tb q, k, v, out;
                const char *name;
                char tag[128];
                memset(&d, 0, sizeof d);
                name = mask_cfg(cfg, &d, B, Hq, Sq, Sk, &r, &bias, &alibi, &sql, &skl, &cuq, &cuk);
                d.n_threads = rep + 1;
                t_tame_alibi(alibi, Hq, d.causal, Sq > Sk ? Sq : Sk);
                q = tb_new(dt, B, Sq, Hq, D, rep == 2 ? L_BHSD : L_DENSE, &r, 0);
                k = tb_new(dt, B, Sk, Hkv, D, rep == 1 ? L_PADDED : L_DENSE, &r, 0);
                v = tb_new(dt, B, Sk, Hkv, Dv, L_DENSE, &r, 0);
                out = tb_new(odt, B, Sq, Hq, Dv, rep == 1 ? L_PADDED : L_DENSE, &r, 1);
                t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
                snprintf(tag, sizeof tag, "mask '%s' Sq=%d Sk=%d %s->%s", name, Sq, Sk, t_dt_name(dt), t_dt_name(odt));
                fwd_check(tag, &d, &q, &k, &v, &out, 1);
                tb_free(&q); tb_free(&k); tb_free(&v); tb_free(&out);
                free(bias); free(alibi); free(sql); free(skl); free(cuq); free(cuk);
            }
}

/* ---------------------------------------------------------------------------------------- */
/* Edge cases: fully masked rows, extreme arguments, numerically hard inputs                  */
/* ---------------------------------------------------------------------------------------- */

/* Row (b, i, h) of an attn_forward result is fully masked: out all exactly 0, lse -inf. */
static int row_masked(const attn_tensor *out, const float *lse, int b, int i, int h) {
    int c;
    for (c = 0; c < out->dim; ++c) if (!(t_load(out, b, i, h, c) == 0.0)) return 0;
    return lse[((size_t)b * out->heads + h) * out->seq + i] == -INFINITY;
}
static int row_finite(const attn_tensor *out, const float *lse, int b, int i, int h) {
    int c;
    for (c = 0; c < out->dim; ++c) { double x = t_load(out, b, i, h, c); if (!(x - x == 0.0)) return 0; }
    return fabs((double)lse[((size_t)b * out->heads + h) * out->seq + i]) < 1e30;
}

typedef struct {
    attn_desc d;
    tb q, k, v, out;
    float *lse;
} simple_call;

static void sc_init(simple_call *c, attn_dtype dt, attn_dtype odt, int B, int Sq, int Sk, int Hq, int Hkv,
                    int D, int Dv, t_rng *r) {
    memset(&c->d, 0, sizeof c->d);
    c->q = tb_new(dt, B, Sq, Hq, D, L_DENSE, r, 0);
    c->k = tb_new(dt, B, Sk, Hkv, D, L_DENSE, r, 0);
    c->v = tb_new(dt, B, Sk, Hkv, Dv, L_DENSE, r, 0);
    c->out = tb_new(odt, B, Sq, Hq, Dv, L_DENSE, r, 1);
    c->lse = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
    t_fill_normal(&c->q.t, r, 1.0); t_fill_normal(&c->k.t, r, 1.0); t_fill_normal(&c->v.t, r, 1.0);
}
static void sc_free(simple_call *c) {
    tb_free(&c->q); tb_free(&c->k); tb_free(&c->v); tb_free(&c->out); free(c->lse);
}
static attn_status sc_run(simple_call *c) {
    return attn_forward(&c->d, c->q.t, c->k.t, c->v.t, c->out.t, c->lse);
}

static void test_edges(void) {
    t_rng r = t_rng_seed(3);
    simple_call c;
    int b, i, h, ok;
    attn_status st;

    /* causal with Sq > Sk: query i sits at key position i + Sk - Sq; rows with p < 0 see no key */
    {
        static const attn_dtype odts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
        int od;
        for (od = 0; od < 3; ++od) {
            sc_init(&c, ATTN_F32, odts[od], 2, 7, 3, 2, 1, 4, 5, &r);
            c.d.causal = 1;
            st = sc_run(&c);
            T_CHECK(st == ATTN_OK, "causal Sq=7 Sk=3: status %s", attn_status_str(st));
            for (b = 0; b < 2; ++b)
                for (h = 0; h < 2; ++h)
                    for (i = 0; i < 7; ++i)
                        T_CHECK(i < 4 ? row_masked(&c.out.t, c.lse, b, i, h) : row_finite(&c.out.t, c.lse, b, i, h),
                                "causal Sq=7 Sk=3 out %s: row b=%d i=%d h=%d should be %s (p = i - 4)",
                                t_dt_name(odts[od]), b, i, h, i < 4 ? "fully masked (0, -inf)" : "finite");
            fwd_check("causal Sq=7 Sk=3 vs reference", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
            sc_free(&c);
        }
    }
    /* seqlens_k = 0 for one batch, seqlens_q padding rows */
    {
        int slk[2] = { 0, 3 }, slq[2] = { 2, 0 };
        sc_init(&c, ATTN_BF16, ATTN_F16, 2, 4, 5, 3, 3, 8, 8, &r);
        c.d.seqlens_k = slk;
        st = sc_run(&c);
        T_CHECK(st == ATTN_OK, "seqlens_k={0,3}: status %s", attn_status_str(st));
        for (h = 0; h < 3; ++h)
            for (i = 0; i < 4; ++i) {
                T_CHECK(row_masked(&c.out.t, c.lse, 0, i, h), "seqlens_k[0]=0: row b=0 i=%d h=%d not (0, -inf)", i, h);
                T_CHECK(row_finite(&c.out.t, c.lse, 1, i, h), "seqlens_k[1]=3: row b=1 i=%d h=%d not finite", i, h);
            }
        fwd_check("seqlens_k={0,3}", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        c.d.seqlens_k = NULL; c.d.seqlens_q = slq; c.d.causal = 1;
        st = sc_run(&c);
        T_CHECK(st == ATTN_OK, "seqlens_q={2,0}: status %s", attn_status_str(st));
        for (h = 0; h < 3; ++h)
            for (i = 0; i < 4; ++i) {
                T_CHECK(i < 2 ? row_finite(&c.out.t, c.lse, 0, i, h) : row_masked(&c.out.t, c.lse, 0, i, h),
                        "seqlens_q[0]=2 causal: row b=0 i=%d h=%d wrong masking", i, h);
                T_CHECK(row_masked(&c.out.t, c.lse, 1, i, h), "seqlens_q[1]=0: padding row b=1 i=%d h=%d not (0, -inf)", i, h);
            }
        fwd_check("seqlens_q={2,0} causal", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        sc_free(&c);
    }
    /* varlen: an empty key segment, an empty query segment, trailing padding rows */
    {
        int cuq[4] = { 0, 3, 3, 6 }, cuk[4] = { 0, 0, 4, 9 };
        sc_init(&c, ATTN_F32, ATTN_F32, 1, 8, 10, 2, 1, 6, 3, &r);
        c.d.cu_seqlens_q = cuq; c.d.cu_seqlens_k = cuk; c.d.varlen_batch = 3;
        st = sc_run(&c);
        T_CHECK(st == ATTN_OK, "varlen with empty segments: status %s", attn_status_str(st));
        for (h = 0; h < 2; ++h)
            for (i = 0; i < 8; ++i)
                T_CHECK(i >= 3 && i < 6 ? row_finite(&c.out.t, c.lse, 0, i, h) : row_masked(&c.out.t, c.lse, 0, i, h),
                        "varlen cu_q={0,3,3,6} cu_k={0,0,4,9} q.seq=8: row i=%d h=%d should be %s", i, h,
                        i >= 3 && i < 6 ? "finite" : "fully masked (empty key segment or padding row)");
        c.d.causal = 1;
        fwd_check("varlen with empty segments, causal", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        sc_free(&c);
    }
    /* bias with -inf entries: some keys masked by bias (each row keeps a finite one) */
    {
        float *bias;
        sc_init(&c, ATTN_F32, ATTN_F32, 2, 9, 13, 2, 2, 8, 8, &r);
        bias = t_make_bias(&c.d.bias, 2, 2, 9, 13, 0, &r, NULL);
        c.d.bias.batch = 1; c.d.bias.heads = 1;    /* dense [1,1,9,13], only the first block used */
        for (i = 0; i < 9 * 13; ++i) if (i % 13 != i / 13 && t_chance(&r, 0.5)) bias[i] = -INFINITY;
        fwd_check("bias with -inf entries", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        /* every visible logit of rows 0 and 5 is -inf: documented "never NaN" says 0 and -inf */
        for (i = 0; i < 13; ++i) { bias[0 * 13 + i] = -INFINITY; bias[5 * 13 + i] = -INFINITY; }
        st = sc_run(&c);
        T_CHECK(st == ATTN_OK, "bias rows all -inf: status %s", attn_status_str(st));
        ok = 1;
        for (b = 0; b < 2; ++b)
            for (h = 0; h < 2; ++h) ok &= row_masked(&c.out.t, c.lse, b, 0, h) && row_masked(&c.out.t, c.lse, b, 5, h);
        T_CHECK(ok, "bias row entirely -inf (rows 0 and 5): want out 0 and lse -inf, never NaN "
                    "(got out[0,0,0,0]=%g lse[0]=%g)", t_load(&c.out.t, 0, 0, 0, 0), (double)c.lse[0]);
        fwd_check("bias rows entirely -inf", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        /* a huge but finite bias is an ordinary logit: uniform weights */
        for (i = 0; i < 9 * 13; ++i) bias[i] = -1e30f;
        fwd_check("bias -1e30 everywhere", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        free(bias);
        sc_free(&c);
    }
    /* extreme but valid arguments: 64-bit window arithmetic, sinks/global beyond the sequence */
    {
        static const int cfgs[7][6] = {   /* causal, wl, wr, dil, sink, global */
            { 0, INT_MAX, INT_MAX, 2, 0, 0 },       { 1, INT_MAX, 0, INT_MAX, 0, 0 },
            { 0, 0, 0, INT_MAX, 0, 0 },              { 0, 1, 1, 0, INT_MAX, 0 },
            { 1, 1, 0, 0, 0, INT_MAX },              { 0, INT_MAX - 1, 1, 3, 2, 1 },
            { 1, 2, INT_MAX, 1000000007, INT_MAX, 0 }
        };
        int n;
        for (n = 0; n < 7; ++n) {
            char tag[160];
            sc_init(&c, ATTN_F32, ATTN_F32, 1, 11, 23, 2, 1, 4, 4, &r);
            c.d.causal = cfgs[n][0]; c.d.window_left = cfgs[n][1]; c.d.window_right = cfgs[n][2];
            c.d.dilation = cfgs[n][3]; c.d.sink_tokens = cfgs[n][4]; c.d.global_tokens = cfgs[n][5];
            snprintf(tag, sizeof tag, "extreme args #%d", n);
            fwd_check(tag, &c.d, &c.q, &c.k, &c.v, &c.out, 1);
            sc_free(&c);
        }
    }
    /* 1x1x1x1 */
    {
        sc_init(&c, ATTN_F32, ATTN_F32, 1, 1, 1, 1, 1, 1, 1, &r);
        st = sc_run(&c);
        T_CHECK(st == ATTN_OK && ((float *)c.out.buf)[0] == ((float *)c.v.buf)[0],
                "1x1x1x1: out must equal v exactly (one key, weight 1): got %g want %g",
                (double)((float *)c.out.buf)[0], (double)((float *)c.v.buf)[0]);
        T_CHECK(st == ATTN_OK && fabs((double)c.lse[0] - (double)((float *)c.q.buf)[0] * ((float *)c.k.buf)[0]) <=
                                     1e-6 * (1.0 + fabs((double)((float *)c.q.buf)[0] * ((float *)c.k.buf)[0])),
                "1x1x1x1: lse must be q*k*scale(1) = %g, got %g",
                (double)((float *)c.q.buf)[0] * ((float *)c.k.buf)[0], (double)c.lse[0]);
        sc_free(&c);
    }
    /* overflow-prone logits: small-integer inputs (exact dot products) times scale 64 */
    {
        static const float scales[3] = { 64.0f, 512.0f, -256.0f };
        int n, e;
        for (n = 0; n < 3; ++n) {
            char tag[96];
            sc_init(&c, ATTN_F32, ATTN_F32, 2, 20, 150, 2, 1, 8, 8, &r);
            for (e = 0; e < 2 * 20 * 2 * 8; ++e) ((float *)c.q.buf)[e] = (float)t_irange(&r, -3, 3);
            for (e = 0; e < 2 * 150 * 8; ++e) ((float *)c.k.buf)[e] = (float)t_irange(&r, -3, 3);
            c.d.scale = scales[n];
            c.d.causal = n == 1;
            snprintf(tag, sizeof tag, "large logits, scale %g", (double)scales[n]);
            fwd_check(tag, &c.d, &c.q, &c.k, &c.v, &c.out, 1);
            sc_free(&c);
        }
    }
    /* tiny softcap, huge scale under a softcap, big ALiBi slopes */
    {
        float slopes[3] = { 100.0f, -0.01f, 0.0f };
        sc_init(&c, ATTN_F32, ATTN_F32, 1, 33, 40, 3, 3, 16, 16, &r);
        c.d.softcap = 1e-3f;
        fwd_check("softcap 1e-3", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        c.d.softcap = 1.0f; c.d.scale = 1e4f;
        fwd_check("softcap 1, scale 1e4", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        c.d.softcap = 0; c.d.scale = 0; c.d.alibi_slopes = slopes;
        fwd_check("alibi slopes 100, -0.01, 0", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        sc_free(&c);
    }
    /* long decode (Sq=1, Sk=4099) and Sk=1 under Sq=1000 causal */
    {
        sc_init(&c, ATTN_F16, ATTN_F32, 1, 1, 4099, 2, 1, 64, 64, &r);
        fwd_check("decode Sq=1 Sk=4099", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        c.d.causal = 1; c.d.window_left = 1000; c.d.sink_tokens = 4;
        fwd_check("decode Sq=1 Sk=4099 causal window 1000 + 4 sinks", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        sc_free(&c);
        sc_init(&c, ATTN_F32, ATTN_F32, 1, T_QUICK ? 300 : 1000, 1, 1, 1, 8, 8, &r);
        c.d.causal = 1;
        fwd_check("causal Sq>>Sk=1", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
        sc_free(&c);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Properties                                                                                */
/* ---------------------------------------------------------------------------------------- */

/* random masks that keep every property below meaningful */
static void random_masks(attn_desc *d, int Sk, t_rng *r) {
    d->causal = t_chance(r, 0.5);
    if (t_chance(r, 0.4)) d->window_left = t_irange(r, 1, Sk / 2 + 1);
    if (t_chance(r, 0.2)) d->window_right = t_irange(r, 1, 4);
    if (t_chance(r, 0.2)) d->dilation = t_irange(r, 2, 3);
    if (t_chance(r, 0.3)) d->sink_tokens = t_irange(r, 1, 3);
    if (t_chance(r, 0.2)) d->global_tokens = t_irange(r, 1, 2);
    if (t_chance(r, 0.3)) d->softcap = 4.0f;
    if (t_chance(r, 0.3)) d->scale = 0.2f + 0.3f * (float)t_unif(r);
}

/* GQA == MHA with K/V heads repeated (Llama repeat_kv: head h uses KV head h / (Hq/Hkv));
   MQA == K/V broadcast over heads with stride 0. */
static void prop_gqa(void) {
    t_rng r = t_rng_seed(4);
    static const int hkvs[3] = { 4, 2, 1 };
    int n, rep;
    for (rep = 0; rep < 2; ++rep)
        for (n = 0; n < 3; ++n) {
            const int B = 2, Sq = 33, Sk = 47, Hq = 8, Hkv = hkvs[n], D = 24, Dv = 16, g = Hq / Hkv;
            attn_dtype dt = rep ? ATTN_BF16 : ATTN_F32;
            attn_desc d;
            float *alibi = NULL, *lse1, *lse2;
            tb q, k, v, kr, vr, o1, o2;
            int b, s, h, c;
            char tag[64];
            attn_status s1, s2;
            memset(&d, 0, sizeof d);
            random_masks(&d, Sk, &r);
            if (t_chance(&r, 0.5)) d.alibi_slopes = alibi = t_make_alibi(Hq, &r);
            q = tb_new(dt, B, Sq, Hq, D, L_DENSE, &r, 0);
            k = tb_new(dt, B, Sk, Hkv, D, L_PADDED, &r, 0);
            v = tb_new(dt, B, Sk, Hkv, Dv, L_BHSD, &r, 0);
            kr = tb_new(dt, B, Sk, Hq, D, L_DENSE, &r, 0);
            vr = tb_new(dt, B, Sk, Hq, Dv, L_DENSE, &r, 0);
            o1 = tb_new(ATTN_F32, B, Sq, Hq, Dv, L_DENSE, &r, 1);
            o2 = tb_new(ATTN_F32, B, Sq, Hq, Dv, L_DENSE, &r, 1);
            lse1 = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
            lse2 = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
            t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
            for (b = 0; b < B; ++b)
                for (s = 0; s < Sk; ++s)
                    for (h = 0; h < Hq; ++h) {
                        for (c = 0; c < D; ++c) t_store(&kr.t, b, s, h, c, t_load(&k.t, b, s, h / g, c));
                        for (c = 0; c < Dv; ++c) t_store(&vr.t, b, s, h, c, t_load(&v.t, b, s, h / g, c));
                    }
            s1 = attn_forward(&d, q.t, k.t, v.t, o1.t, lse1);
            s2 = attn_forward(&d, q.t, kr.t, vr.t, o2.t, lse2);
            snprintf(tag, sizeof tag, "GQA Hq=%d Hkv=%d %s == MHA repeated", Hq, Hkv, t_dt_name(dt));
            if (T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "%s: status %s / %s", tag, attn_status_str(s1), attn_status_str(s2)))
                cmp_outputs(tag, describe(&d, &q.t, &k.t, &v.t, &o1.t), &o2.t, lse2, &o1.t, lse1, B, Sq, Hq, Dv);
            fwd_check(tag, &d, &q, &k, &v, &o1, 1);
            if (Hkv == 1) {   /* MQA vs K/V broadcast over Hq heads with stride_head = 0 */
                tb kb = tb_new(dt, B, Sk, Hq, D, L_BCAST, &r, 0), vb = tb_new(dt, B, Sk, Hq, Dv, L_BCAST, &r, 0);
                for (b = 0; b < B; ++b)
                    for (s = 0; s < Sk; ++s) {
                        for (c = 0; c < D; ++c) t_store(&kb.t, b, s, 0, c, t_load(&k.t, b, s, 0, c));
                        for (c = 0; c < Dv; ++c) t_store(&vb.t, b, s, 0, c, t_load(&v.t, b, s, 0, c));
                    }
                s2 = attn_forward(&d, q.t, kb.t, vb.t, o2.t, lse2);
                snprintf(tag, sizeof tag, "MQA == K/V broadcast (stride_head 0) %s", t_dt_name(dt));
                if (T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "%s: status %s", tag, attn_status_str(s2)))
                    cmp_outputs(tag, describe(&d, &q.t, &kb.t, &vb.t, &o2.t), &o1.t, lse1, &o2.t, lse2, B, Sq, Hq, Dv);
                tb_free(&kb); tb_free(&vb);
            }
            tb_free(&q); tb_free(&k); tb_free(&v); tb_free(&kr); tb_free(&vr); tb_free(&o1); tb_free(&o2);
            free(lse1); free(lse2); free(alibi);
        }
}

/* window_left/right >= the sequence lengths (any dilation 0/1) == no window */
static void prop_window(void) {
    t_rng r = t_rng_seed(5);
    static const int lens[4] = { 5, 17, 64, 130 };
    int n;
    for (n = 0; n < 16; ++n) {
        const int Sq = lens[n % 4], Sk = lens[(n / 4) % 4], B = 2, H = 3, D = 16;
        const int W = (Sq > Sk ? Sq : Sk) + t_irange(&r, 0, 3);
        attn_desc d1, d2;
        simple_call c;
        float *lse2 = (float *)t_xmalloc((size_t)B * H * Sq * sizeof(float));
        tb o2;
        attn_status s1, s2;
        char tag[96];
        sc_init(&c, ATTN_F32, ATTN_F32, B, Sq, Sk, H, H, D, D, &r);
        o2 = tb_new(ATTN_F32, B, Sq, H, D, L_DENSE, &r, 1);
        memset(&d1, 0, sizeof d1);
        d1.causal = n % 2;
        if (t_chance(&r, 0.3)) d1.sink_tokens = 2;
        if (t_chance(&r, 0.3)) d1.softcap = 3.0f;
        d2 = d1;
        d2.window_left = W; d2.window_right = t_chance(&r, 0.5) ? W : 0; d2.dilation = t_irange(&r, 0, 1);
        c.d = d1;
        s1 = sc_run(&c);
        s2 = attn_forward(&d2, c.q.t, c.k.t, c.v.t, o2.t, lse2);
        snprintf(tag, sizeof tag, "window %d/%d >= seq (Sq=%d Sk=%d) == no window", d2.window_left, d2.window_right, Sq, Sk);
        if (T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "%s: status %s / %s", tag, attn_status_str(s1), attn_status_str(s2)))
            cmp_outputs(tag, describe(&d2, &c.q.t, &c.k.t, &c.v.t, &o2.t), &c.out.t, c.lse, &o2.t, lse2, B, Sq, H, D);
        tb_free(&o2); free(lse2);
        sc_free(&c);
    }
}

/* causal decode of the last m rows (m = 1: one step, m = 3: a speculative chunk) against a
   key cache == the last m rows of the causal prefill (windows, sinks, ALiBi, softcap, bias) */
static void prop_decode(void) {
    t_rng r = t_rng_seed(6);
    static const int lens[4] = { 17, 64, 129, 300 };
    int n;
    for (n = 0; n < 8; ++n) {
        const int S = lens[n % 4], m = n < 4 ? 1 : 3, B = 2, Hq = 4, Hkv = 2, D = 32, Dv = 32;
        simple_call c;
        attn_desc dd;
        float *alibi = NULL, *bias = NULL, *lse2 = (float *)t_xmalloc((size_t)B * Hq * m * sizeof(float));
        double *ro, *rl;
        tb o2;
        attn_tensor qd;
        attn_status s1, s2;
        int b, i, h, cc;
        char tag[96];
        sc_init(&c, ATTN_F32, ATTN_F32, B, S, S, Hq, Hkv, D, Dv, &r);
        c.d.causal = 1;
        if (n & 1) c.d.window_left = t_irange(&r, 1, S / 2);
        if (n & 2) c.d.sink_tokens = 4;
        if (t_chance(&r, 0.5)) c.d.alibi_slopes = alibi = t_make_alibi(Hq, &r);
        if (t_chance(&r, 0.5)) c.d.softcap = 5.0f;
        if (n >= 4) bias = t_make_bias(&c.d.bias, B, Hq, S, S, 1, &r, NULL);   /* explicit strides */
        s1 = sc_run(&c);
        dd = c.d;
        if (bias) { dd.bias.data = bias + (ptrdiff_t)(S - m) * c.d.bias.stride_q; dd.bias.rows = m; }   /* its last m rows */
        qd = view_seq(&c.q.t, S - m, m);
        o2 = tb_new(ATTN_F32, B, m, Hq, Dv, L_PADDED, &r, 1);
        s2 = attn_forward(&dd, qd, c.k.t, c.v.t, o2.t, lse2);
        snprintf(tag, sizeof tag, "causal decode of %d row(s) == prefill rows (S=%d)", m, S);
        if (T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "%s: status %s / %s", tag, attn_status_str(s1), attn_status_str(s2))) {
            ro = (double *)t_xmalloc((size_t)B * m * Hq * Dv * sizeof(double));
            rl = (double *)t_xmalloc((size_t)B * Hq * m * sizeof(double));
            for (b = 0; b < B; ++b)
                for (i = 0; i < m; ++i)
                    for (h = 0; h < Hq; ++h) {
                        for (cc = 0; cc < Dv; ++cc)
                            ro[(((size_t)b * m + i) * Hq + h) * Dv + cc] = t_load(&c.out.t, b, S - m + i, h, cc);
                        rl[((size_t)b * Hq + h) * m + i] = c.lse[((size_t)b * Hq + h) * S + S - m + i];
                    }
            cmp_ref(tag, describe(&dd, &qd, &c.k.t, &c.v.t, &o2.t), ro, rl, &o2.t, lse2, B, m, Hq, Dv);
            free(ro); free(rl);
        }
        fwd_check(tag, &dd, &(tb){ qd, NULL, 0, 0 }, &c.k, &c.v, &o2, 1);
        tb_free(&o2); free(lse2); free(alibi); free(bias);
        sc_free(&c);
    }
}

/* Keys split into 2-3 disjoint ranges, attn_forward on each sub-view of k/v (and of the bias),
   attn_merge of the parts == one pass == the reference; also merged in place into parts[0]. */
static void prop_split_merge(void) {
    t_rng r = t_rng_seed(7);
    int n;
    for (n = 0; n < 12; ++n) {
        const int B = 2, Hq = 4, Hkv = n % 3 == 0 ? 4 : 2, Sq = 19, Sk = 100, D = 32, Dv = 24;
        const int np = 2 + n % 2;
        const int empty_part = n % 4 == 3;          /* one part sees no key: seqlens_k all 0 */
        simple_call c;
        attn_desc dp[3];
        tb parts[3];
        float *plse[3], *lse_m = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
        attn_tensor pt[3];
        tb om;
        float *bias = NULL;
        int *sql = NULL, zeros[2] = { 0, 0 }, cut[4], p, okp = 1;
        double *rout, *rlse;
        attn_status st;
        char tag[96];

        sc_init(&c, n % 2 ? ATTN_F16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hkv, D, Dv, &r);
        if (n % 3 == 1) bias = t_make_bias(&c.d.bias, B, Hq, Sq, Sk, t_irange(&r, 0, 3), &r, NULL);
        if (n % 5 == 2) c.d.softcap = 3.0f;
        if (n % 4 == 1) c.d.scale = 0.11f;
        if (n % 6 == 5) c.d.seqlens_q = sql = t_make_seqlens(B, Sq, &r);
        cut[0] = 0; cut[np] = Sk;
        cut[1] = t_irange(&r, 1, Sk - 2);
        if (np == 3) { cut[2] = t_irange(&r, cut[1] + 1, Sk - 1); }
        for (p = 0; p < np; ++p) {
            attn_tensor kp = view_seq(&c.k.t, cut[p], cut[p + 1] - cut[p]);
            attn_tensor vp = view_seq(&c.v.t, cut[p], cut[p + 1] - cut[p]);
            dp[p] = c.d;
            if (bias) {
                dp[p].bias = c.d.bias;
                dp[p].bias.data = bias + cut[p];
            }
            if (empty_part && p == np - 1) dp[p].seqlens_k = zeros;
            parts[p] = tb_new(ATTN_F32, B, Sq, Hq, Dv, p == 1 ? L_PADDED : L_DENSE, &r, 1);
            pt[p] = parts[p].t;
            plse[p] = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
            st = attn_forward(&dp[p], c.q.t, kp, vp, parts[p].t, plse[p]);
            okp &= T_CHECK(st == ATTN_OK, "split part %d: status %s", p, attn_status_str(st));
        }
        snprintf(tag, sizeof tag, "split-KV into %d parts%s + attn_merge == reference", np, empty_part ? " (one empty)" : "");
        om = tb_new(n % 3 == 2 ? ATTN_BF16 : ATTN_F32, B, Sq, Hq, Dv, L_SEQMAJOR, &r, 1);
        st = attn_merge(np, pt, (const float *const *)plse, om.t, lse_m);
        if (okp && T_CHECK(st == ATTN_OK, "%s: attn_merge status %s", tag, attn_status_str(st))) {
            attn_desc full = c.d;
            if (empty_part) {   /* the reference: the last range is invisible */
                full.seqlens_k = NULL;
            }
            rout = (double *)t_xmalloc((size_t)B * Sq * Hq * Dv * sizeof(double));
            rlse = (double *)t_xmalloc((size_t)B * Hq * Sq * sizeof(double));
            if (empty_part) {
                attn_tensor kk = view_seq(&c.k.t, 0, cut[np - 1]), vv = view_seq(&c.v.t, 0, cut[np - 1]);
                if (bias) full.bias = c.d.bias;
                ref_attention(&full, c.q.t, kk, vv, rout, rlse);
            } else {
                ref_attention(&full, c.q.t, c.k.t, c.v.t, rout, rlse);
            }
            cmp_ref(tag, describe(&c.d, &c.q.t, &c.k.t, &c.v.t, &om.t), rout, rlse, &om.t, lse_m, B, Sq, Hq, Dv);
            if (!empty_part) {   /* against the library's own one pass */
                st = sc_run(&c);
                if (T_CHECK(st == ATTN_OK, "one pass: status %s", attn_status_str(st)))
                    cmp_outputs("split-KV + merge == one pass", describe(&c.d, &c.q.t, &c.k.t, &c.v.t, &c.out.t),
                                &c.out.t, c.lse, &om.t, lse_m, B, Sq, Hq, Dv);
            }
            /* in place: out = parts[0], lse = part_lse[0] */
            st = attn_merge(np, pt, (const float *const *)plse, pt[0], plse[0]);
            if (T_CHECK(st == ATTN_OK, "in-place merge: status %s", attn_status_str(st)))
                cmp_ref("split-KV + in-place merge into parts[0]", describe(&c.d, &c.q.t, &c.k.t, &c.v.t, &pt[0]),
                        rout, rlse, &pt[0], plse[0], B, Sq, Hq, Dv);
            free(rout); free(rlse);
        }
        for (p = 0; p < np; ++p) { tb_free(&parts[p]); free(plse[p]); }
        tb_free(&om); free(lse_m); free(bias); free(sql);
        sc_free(&c);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Determinism: thread counts, the parallel hook, a caller workspace                          */
/* ---------------------------------------------------------------------------------------- */

typedef struct { int calls, bad, mode; long tasks; int max_threads; } hook_state;

static void test_hook(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    hook_state *hs = (hook_state *)user;
    int i;
    hs->calls++;
    if (n_threads < 1 || n_tasks < 0 || !task) { hs->bad++; return; }
    if (n_threads > hs->max_threads) hs->max_threads = n_threads;
    hs->tasks += n_tasks;
    switch (hs->mode) {
    case 0: for (i = 0; i < n_tasks; ++i) task(ctx, i, i % n_threads); break;
    case 1: for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, n_threads - 1 - i % n_threads); break;
    default:   /* odd tasks first, then even ones, all on the last thread index */
        for (i = 1; i < n_tasks; i += 2) task(ctx, i, n_threads - 1);
        for (i = 0; i < n_tasks; i += 2) task(ctx, i, n_threads - 1);
        break;
    }
}

/* Longformer's global rows alone: where a 64-row tile holds global rows (p < global_tokens)
   and its other rows see none of a key block, the forward runs that block on the global rows
   alone (attn__rows_seeing). Global rows far outside the window, several of them, past the
   first tile, under GQA (tiles that start inside a position's heads), causal, dilated, sinks,
   padded sequences, a KV offset (Sq < Sk), bf16 kernels: each against the double reference,
   and bitwise the same on 1, 2 and 3 threads. */
static void test_global_rows(void) {
    t_rng r = t_rng_seed(45);
    static const int cfgs[10][13] = {   /* B, Sq, Sk, Hq, Hkv, D, global, wl, wr, causal, dil, sinks, pad/bf16 */
        { 1, 300, 300, 2, 2, 64, 1, 16, 16, 0, 0, 0, 0 },   /* one global row, far keys */
        { 1, 333, 333, 4, 2, 64, 3, 8, 8, 0, 0, 0, 0 },     /* several, GQA */
        { 1, 260, 260, 3, 1, 32, 70, 20, 5, 0, 0, 0, 0 },   /* global rows past tile 0, groups 3 */
        { 1, 400, 400, 2, 2, 64, 2, 30, 0, 1, 0, 0, 0 },    /* causal + global */
        { 2, 350, 350, 2, 1, 48, 2, 10, 10, 0, 0, 0, 1 },   /* padded sequences */
        { 1, 300, 302, 2, 2, 64, 5, 12, 12, 0, 0, 0, 0 },   /* KV offset: query i at i + 2 */
        { 1, 320, 320, 2, 2, 64, 2, 9, 9, 0, 2, 1, 0 },     /* dilated, a sink */
        { 1, 300, 300, 2, 2, 64, 1, 16, 16, 0, 0, 0, 2 },   /* bf16 kernels */
        { 1, 129, 129, 16, 1, 16, 1, 4, 4, 0, 0, 0, 0 },    /* 16 global rows (one per head) */
        { 1, 200, 200, 2, 2, 80, 3, 0, 6, 1, 0, 0, 1 }      /* causal, right window, padded */
    };
    int cfg;
    for (cfg = 0; cfg < 10; ++cfg) {
        const int *x = cfgs[cfg];
        const int B = x[0], Sq = x[1], Sk = x[2], Hq = x[3], D = x[5];
        const size_t ob = (size_t)B * Sq * Hq * D * sizeof(float), lb = (size_t)B * Hq * Sq * sizeof(float);
        unsigned char *out0 = (unsigned char *)t_xmalloc(ob), *lse0 = (unsigned char *)t_xmalloc(lb);
        int sql[2], skl[2], t;
        simple_call c;
        char tag[96];
        sc_init(&c, x[12] == 2 ? ATTN_BF16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, x[4], D, D, &r);
        c.d.global_tokens = x[6]; c.d.window_left = x[7]; c.d.window_right = x[8]; c.d.causal = x[9];
        c.d.dilation = x[10]; c.d.sink_tokens = x[11];
        if (x[12] == 1) {           /* the second sequence padded: its last tiles shorter */
            sql[0] = Sq; sql[1] = Sq - 77; skl[0] = Sk; skl[1] = Sk - 77;
            c.d.seqlens_q = sql; c.d.seqlens_k = skl;
        }
        for (t = 1; t <= 3; ++t) {
            attn_status st;
            c.d.n_threads = t;
            snprintf(tag, sizeof tag, "global rows alone #%d, %d thread(s)", cfg, t);
            if (t == 1) {
                if (!fwd_check(tag, &c.d, &c.q, &c.k, &c.v, &c.out, 1)) break;
                st = sc_run(&c);          /* this time with c.lse */
                if (!T_CHECK(st == ATTN_OK, "%s: status %s", tag, attn_status_str(st))) break;
                memcpy(out0, c.out.buf, ob); memcpy(lse0, c.lse, lb);
                continue;
            }
            t_sentinel(c.out.buf, ob, 1); t_sentinel(c.lse, lb, 2);
            st = sc_run(&c);
            T_CHECK(st == ATTN_OK && memcmp(out0, c.out.buf, ob) == 0 && memcmp(lse0, c.lse, lb) == 0,
                    "%s: status %s, or the result differs bitwise from 1 thread", tag, attn_status_str(st));
        }
        sc_free(&c);
        free(out0); free(lse0);
    }
}

static void prop_threads(void) {
    t_rng r = t_rng_seed(8);
    int cfg, hook_calls = 0;
    for (cfg = 0; cfg < 5; ++cfg) {
        static const int shp[5][7] = {   /* B, Sq, Sk, Hq, Hkv, D, Dv */
            { 1, 1, 1500, 1, 1, 64, 64 },     /* decode: the KV length is what gets split */
            { 2, 129, 129, 4, 2, 32, 32 },
            { 1, 40, 60, 2, 2, 16, 8 },       /* varlen */
            { 1, 3, 1000, 8, 1, 32, 32 },     /* GQA decode chunk */
            { 3, 65, 200, 2, 1, 80, 96 }
        };
        const int B = shp[cfg][0], Sq = shp[cfg][1], Sk = shp[cfg][2], Hq = shp[cfg][3];
        const int Dv = shp[cfg][6];
        const size_t ob = (size_t)B * Sq * Hq * Dv * sizeof(float), lb = (size_t)B * Hq * Sq * sizeof(float);
        int cuq[4] = { 0, 10, 25, 40 }, cuk[4] = { 0, 30, 31, 60 };
        float *alibi = NULL;
        unsigned char *out0 = (unsigned char *)t_xmalloc(ob), *lse0 = (unsigned char *)t_xmalloc(lb);
        static const int nts[5] = { 1, 2, 3, 7, 0 };
        simple_call c;
        attn_status st;
        int t, mode;
        const char *ctx;
        sc_init(&c, cfg == 4 ? ATTN_BF16 : ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, shp[cfg][4], shp[cfg][5], Dv, &r);
        if (cfg == 1) { c.d.causal = 1; c.d.window_left = 50; }
        if (cfg == 2) { c.d.cu_seqlens_q = cuq; c.d.cu_seqlens_k = cuk; c.d.varlen_batch = 3; c.d.causal = 1; }
        if (cfg == 3) { c.d.alibi_slopes = alibi = t_make_alibi(Hq, &r); c.d.sink_tokens = 4; c.d.causal = 1; }
        if (cfg == 4) { c.d.softcap = 10.0f; }
        ctx = describe(&c.d, &c.q.t, &c.k.t, &c.v.t, &c.out.t);
        for (t = 0; t < 5; ++t) {
            c.d.n_threads = nts[t];
            t_sentinel(c.out.buf, ob, 1); t_sentinel(c.lse, lb, 2);
            st = sc_run(&c);
            if (!T_CHECK(st == ATTN_OK, "threads cfg %d n_threads=%d: status %s", cfg, nts[t], attn_status_str(st))) continue;
            if (t == 0) {
                memcpy(out0, c.out.buf, ob); memcpy(lse0, c.lse, lb);
                fwd_check("threads baseline", &c.d, &c.q, &c.k, &c.v, &c.out, 1);
            } else {
                T_CHECK(memcmp(out0, c.out.buf, ob) == 0 && memcmp(lse0, c.lse, lb) == 0,
                        "n_threads=%d result differs bitwise from n_threads=1 (cfg %d)%s", nts[t], cfg, ctx);
            }
        }
        /* the caller's parallel-for: serial, in three task orders and thread numberings */
        for (mode = 0; mode < 3; ++mode)
            for (t = 1; t < 5; ++t) {
                hook_state hs;
                memset(&hs, 0, sizeof hs);
                hs.mode = mode;
                c.d.n_threads = nts[t];
                c.d.parallel = test_hook; c.d.parallel_user = &hs;
                t_sentinel(c.out.buf, ob, 1); t_sentinel(c.lse, lb, 2);
                st = sc_run(&c);
                c.d.parallel = NULL; c.d.parallel_user = NULL;
                hook_calls += hs.calls;
                if (!T_CHECK(st == ATTN_OK, "hook cfg %d: status %s", cfg, attn_status_str(st))) continue;
                T_CHECK(hs.bad == 0, "parallel hook called with n_threads < 1, n_tasks < 0 or task NULL (cfg %d)", cfg);
                T_CHECK(nts[t] == 0 || hs.max_threads <= nts[t],
                        "parallel hook got n_threads=%d > desc.n_threads=%d (cfg %d)", hs.max_threads, nts[t], cfg);
                T_CHECK(memcmp(out0, c.out.buf, ob) == 0 && memcmp(lse0, c.lse, lb) == 0,
                        "parallel hook (mode %d, n_threads=%d) result differs bitwise from n_threads=1 (cfg %d)%s",
                        mode, nts[t], cfg, ctx);
            }
        /* a caller workspace of exactly attn_workspace_size bytes (ASan checks the bound) */
        for (t = 0; t < 5; ++t) {
            size_t bytes = 12345, m0;
            void *ws;
            c.d.n_threads = nts[t];
            st = attn_workspace_size(&c.d, c.q.t, c.k.t, c.v.t, &bytes);
            if (!T_CHECK(st == ATTN_OK, "attn_workspace_size cfg %d: status %s", cfg, attn_status_str(st))) continue;
            ws = t_xmalloc(bytes);
            memset(ws, 0xFF, bytes);   /* NaN garbage: the kernel must not read what it did not write */
            c.d.workspace = bytes ? ws : NULL; c.d.workspace_size = bytes;
            t_sentinel(c.out.buf, ob, 1); t_sentinel(c.lse, lb, 2);
            m0 = t_attn_mallocs;
            st = sc_run(&c);
            m0 = t_attn_mallocs - m0;
            if (T_CHECK(st == ATTN_OK, "caller workspace of %lu bytes cfg %d n_threads=%d: status %s", (unsigned long)bytes, cfg,
                        nts[t], attn_status_str(st))) {
                T_CHECK(memcmp(out0, c.out.buf, ob) == 0 && memcmp(lse0, c.lse, lb) == 0,
                        "caller workspace (n_threads=%d) result differs bitwise (cfg %d)%s", nts[t], cfg, ctx);
                T_CHECK(m0 == 0, "attn_forward with a caller workspace of attn_workspace_size() bytes still made %lu "
                                 "ATTN_MALLOC call(s) (n_threads=%d, cfg %d); documented as allocation-free",
                        (unsigned long)m0, nts[t], cfg);
            }
            if (bytes > 0) {   /* one byte short must be refused with ATTN_ERR_WORKSPACE, outputs untouched */
                c.d.workspace_size = bytes - 1;
                t_sentinel(c.out.buf, ob, 1); t_sentinel(c.lse, lb, 2);
                st = sc_run(&c);
                if (T_CHECK(st == ATTN_ERR_WORKSPACE, "workspace one byte short (%lu of %lu): status %s, want ATTN_ERR_WORKSPACE",
                            (unsigned long)(bytes - 1), (unsigned long)bytes, attn_status_str(st)))
                    t_status_provoked[ATTN_ERR_WORKSPACE] = 1;
                T_CHECK(t_sentinel_ok(c.out.buf, ob, 1) && t_sentinel_ok(c.lse, lb, 2),
                        "ATTN_ERR_WORKSPACE call wrote its outputs");
            }
            c.d.workspace = NULL; c.d.workspace_size = 0;
            free(ws);
        }
        free(out0); free(lse0); free(alibi);
        sc_free(&c);
    }
    T_CHECK(hook_calls > 0, "attn_desc.parallel was never called, over 5 problems x 12 runs with n_threads 2, 3, 7, 0");
}

/* A result must not depend on what earlier calls left in scratch memory: compute a few
   problems, run calls that fill every internal buffer with NaN, -inf and huge values (NaN
   inputs, rows masked by -inf bias, overflowing logits), then recompute: same bits. */
static void prop_history(void) {
    t_rng r = t_rng_seed(12);
    static const int shp[4][7] = {   /* B, Sq, Sk, Hq, Hkv, D, causal */
        { 1, 1, 700, 8, 2, 64, 0 }, { 2, 37, 53, 4, 2, 16, 1 }, { 1, 7, 3, 2, 1, 4, 1 }, { 3, 65, 65, 2, 2, 128, 1 }
    };
    int cfg, dirt, t;
    for (cfg = 0; cfg < 4; ++cfg) {
        const int B = shp[cfg][0], Sq = shp[cfg][1], Sk = shp[cfg][2], Hq = shp[cfg][3], Hkv = shp[cfg][4], D = shp[cfg][5];
        const size_t ob = (size_t)B * Sq * Hq * D * sizeof(float), lb = (size_t)B * Hq * Sq * sizeof(float);
        unsigned char *out0 = (unsigned char *)t_xmalloc(ob), *lse0 = (unsigned char *)t_xmalloc(lb);
        simple_call c;
        attn_status st;
        sc_init(&c, ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hkv, D, D, &r);
        c.d.causal = shp[cfg][6];
        for (t = 0; t < 2; ++t) {           /* n_threads 1 and 0 (all cores) */
            c.d.n_threads = t ? 0 : 1;
            st = sc_run(&c);
            if (!T_CHECK(st == ATTN_OK, "history cfg %d: status %s", cfg, attn_status_str(st))) continue;
            memcpy(out0, c.out.buf, ob); memcpy(lse0, c.lse, lb);
            for (dirt = 0; dirt < 3; ++dirt) {
                simple_call x;
                float *bias = NULL;
                int e;
                sc_init(&x, ATTN_F32, ATTN_F32, B, Sq, Sk, Hq, Hkv, D, D, &r);
                x.d = c.d;
                if (dirt == 0) {            /* NaN everywhere in the inputs */
                    t_fill_nan(x.q.buf, ATTN_F32, x.q.n); t_fill_nan(x.k.buf, ATTN_F32, x.k.n); t_fill_nan(x.v.buf, ATTN_F32, x.v.n);
                } else if (dirt == 1) {     /* every logit -inf through the bias */
                    bias = t_make_bias(&x.d.bias, B, Hq, Sq, Sk, 0, &r, NULL);
                    for (e = 0; e < Sq * Sk; ++e) bias[e] = -INFINITY;
                    x.d.bias.batch = 1; x.d.bias.heads = 1;
                } else {                    /* logits far beyond exp's range, huge values */
                    x.d.scale = 1e30f;
                    for (e = 0; e < (int)x.v.n; ++e) ((float *)x.v.buf)[e] = 3e38f;
                }
                st = sc_run(&x);
                T_CHECK(st == ATTN_OK, "history dirtying call %d: status %s", dirt, attn_status_str(st));
                free(bias);
                sc_free(&x);
                st = sc_run(&c);
                T_CHECK(st == ATTN_OK && memcmp(out0, c.out.buf, ob) == 0 && memcmp(lse0, c.lse, lb) == 0,
                        "history cfg %d n_threads=%d: result changed after a call with %s inputs (stale scratch memory?)%s",
                        cfg, c.d.n_threads, dirt == 0 ? "NaN" : dirt == 1 ? "all -inf bias" : "overflowing",
                        describe(&c.d, &c.q.t, &c.k.t, &c.v.t, &c.out.t));
            }
        }
        free(out0); free(lse0);
        sc_free(&c);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* attn_merge against its double reference                                                   */
/* ---------------------------------------------------------------------------------------- */

static void test_merge(void) {
    t_rng r = t_rng_seed(9);
    int it, n_it = T_QUICK ? 40 : 120;
    for (it = 0; it < n_it; ++it) {
        const int B = t_irange(&r, 1, 2), S = t_irange(&r, 1, 20), H = t_irange(&r, 1, 3), Dv = t_irange(&r, 1, 40);
        const int np = t_irange(&r, 1, 4), inplace = it % 5 == 4, with_lse = it % 4 != 3;
        const size_t nl = (size_t)B * H * S;
        const double offset = it % 7 == 6 ? (it % 2 ? 1e4 : -1e4) : 0.0;
        tb parts[4], out;
        attn_tensor pt[4];
        float *plse[4], *lse = NULL, *lse_copy[4];
        double *rout = (double *)t_xmalloc((size_t)B * S * H * Dv * sizeof(double));
        double *rlse = (double *)t_xmalloc(nl * sizeof(double));
        attn_status st;
        size_t i;
        int p, lse_ok = 1;
        char ctx[160];
        for (p = 0; p < np; ++p) {
            parts[p] = tb_new(inplace && p == 0 ? ATTN_F32 : pick_dtype(&r, 0.5), B, S, H, Dv,
                              pick_layout(&r, !(inplace && p == 0)), &r, 0);
            t_fill_normal(&parts[p].t, &r, 1.0);
            pt[p] = parts[p].t;
            plse[p] = (float *)t_xmalloc(nl * sizeof(float));
            lse_copy[p] = (float *)t_xmalloc(nl * sizeof(float));
            for (i = 0; i < nl; ++i) {
                double u = t_unif(&r);
                /* rows with i % 9 == 4: every part -inf; else -inf with probability 0.2 */
                plse[p][i] = (i % 9 == 4 || u < 0.2) ? -INFINITY : (float)(offset + 3.0 * t_normal(&r));
            }
            memcpy(lse_copy[p], plse[p], nl * sizeof(float));
        }
        ref_merge(np, pt, (const float *const *)plse, rout, rlse);
        if (inplace) {
            out = parts[0];
            lse = with_lse ? plse[0] : NULL;
        } else {
            out = tb_new(pick_dtype(&r, 0.6), B, S, H, Dv, pick_layout(&r, 0), &r, 1);
            if (with_lse) { lse = (float *)t_xmalloc(nl * sizeof(float)); t_sentinel(lse, nl * sizeof(float), LSE_SEED); }
        }
        snprintf(ctx, sizeof ctx, " | merge n_parts=%d [%d,%d,%d,%d] out %s%s%s lse offset %g", np, B, S, H, Dv,
                 t_dt_name(out.t.dtype), inplace ? " in place" : "", lse ? "" : " lse NULL", offset);
        st = attn_merge(np, pt, (const float *const *)plse, out.t, lse);
        if (T_CHECK(st == ATTN_OK, "attn_merge: status %s%s", attn_status_str(st), ctx)) {
            cmp_ref("attn_merge vs reference", ctx, rout, rlse, &out.t, lse, B, S, H, Dv);
            if (!inplace) T_CHECK(tb_gaps_ok(&out), "attn_merge wrote outside the out view%s", ctx);
            for (p = inplace ? 1 : 0; p < np; ++p) lse_ok &= memcmp(lse_copy[p], plse[p], nl * sizeof(float)) == 0;
            T_CHECK(lse_ok, "attn_merge modified an input part_lse%s", ctx);
        }
        for (p = 0; p < np; ++p) { tb_free(&parts[p]); free(plse[p]); free(lse_copy[p]); }
        if (!inplace) { tb_free(&out); free(lse); }
        free(rout); free(rlse);
    }
    /* all parts -inf everywhere: zeros and -inf */
    {
        float l0[6], l1[6], lo[6], a[6 * 2], b2[6 * 2], o[6 * 2];
        const float *pl[2];
        attn_tensor pts[2];
        int i2, ok = 1;
        for (i2 = 0; i2 < 6; ++i2) { l0[i2] = l1[i2] = -INFINITY; lo[i2] = 7.0f; }
        for (i2 = 0; i2 < 12; ++i2) { a[i2] = 1.0f + (float)i2; b2[i2] = -2.0f; o[i2] = 99.0f; }
        pts[0] = attn_tensor_dense(a, ATTN_F32, 1, 3, 2, 2);
        pts[1] = attn_tensor_dense(b2, ATTN_F32, 1, 3, 2, 2);
        pl[0] = l0; pl[1] = l1;
        {
            attn_status st = attn_merge(2, pts, pl, attn_tensor_dense(o, ATTN_F32, 1, 3, 2, 2), lo);
            for (i2 = 0; i2 < 12; ++i2) ok &= o[i2] == 0.0f;
            for (i2 = 0; i2 < 6; ++i2) ok &= lo[i2] == -INFINITY;
            T_CHECK(st == ATTN_OK && ok, "attn_merge with every part_lse = -inf: want out 0 and lse -inf (status %s, out[0]=%g lse[0]=%g)",
                    attn_status_str(st), (double)o[0], (double)lo[0]);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Status table and error paths                                                              */
/* ---------------------------------------------------------------------------------------- */

/* The documented table, indexed by value (the list's values are sparse: blocks per family). */
#define T_STATUS_NAME(name, value, cat, msg) [value] = #name,
#define T_STATUS_CAT(name, value, cat, msg) [value] = cat,
#define T_STATUS_MSG(name, value, cat, msg) [value] = msg,
#define T_STATUS_VALUE(name, value, cat, msg) value,
static const char *const status_names[ATTN_STATUS_END] = { ATTN__STATUS_LIST(T_STATUS_NAME) };
static const attn_status_category status_cats[ATTN_STATUS_END] = { ATTN__STATUS_LIST(T_STATUS_CAT) };
static const char *const status_msgs[ATTN_STATUS_END] = { ATTN__STATUS_LIST(T_STATUS_MSG) };
static const int status_values[] = { ATTN__STATUS_LIST(T_STATUS_VALUE) };
#define T_N_STATUS ((int)(sizeof status_values / sizeof status_values[0]))

static const char *sname(attn_status s) {
    return (int)s >= 0 && (int)s < (int)ATTN_STATUS_END && status_names[s] ? status_names[s] : "(out of range)";
}

/* attn_status_str / attn_status_cat agree with the documented table and are never NULL; the
   values are unique and strictly increasing in list order (a code is never renumbered or
   inserted in the middle of a block), and values outside the list read as unknown. */
static void test_status_table(void) {
    int i, s;
    for (i = 0; i < T_N_STATUS; ++i) {
        s = status_values[i];
        T_CHECK(s >= 0 && s < (int)ATTN_STATUS_END, "status value %d outside [0, ATTN_STATUS_END)", s);
        if (s < 0 || s >= (int)ATTN_STATUS_END) continue;
        T_CHECK(i == 0 || s > status_values[i - 1], "status %s: value %d not above the previous %d",
                status_names[s], s, status_values[i > 0 ? i - 1 : 0]);
        {
            const char *m = attn_status_str((attn_status)s);
            T_CHECK(m && strcmp(m, status_msgs[s]) == 0, "attn_status_str(%s) = \"%s\", documented \"%s\"",
                    status_names[s], m ? m : "(null)", status_msgs[s]);
            T_CHECK(attn_status_cat((attn_status)s) == status_cats[s], "attn_status_cat(%s) = %d, documented %d",
                    status_names[s], (int)attn_status_cat((attn_status)s), (int)status_cats[s]);
        }
    }
    T_CHECK(status_cats[0] == ATTN_CAT_OK && ATTN_OK == 0, "ATTN_OK must be 0 in category ATTN_CAT_OK");
    T_CHECK(ATTN_ERR_OVERFLOW == 137 && ATTN_ERR_OUT_OF_MEMORY == 138 && ATTN_ERR_NULL_DESC == 1,
            "pinned status values changed (ATTN_ERR_OVERFLOW %d, ATTN_ERR_OUT_OF_MEMORY %d)",
            (int)ATTN_ERR_OVERFLOW, (int)ATTN_ERR_OUT_OF_MEMORY);
    for (s = 0; s < (int)ATTN_STATUS_END + 2; ++s) {
        if (s < (int)ATTN_STATUS_END && status_msgs[s]) continue;
        T_CHECK(strcmp(attn_status_str((attn_status)s), "unknown attn_status value") == 0,
                "attn_status_str(%d) (no such code) = \"%s\"", s, attn_status_str((attn_status)s));
    }
    {
        const char *m2 = attn_status_str((attn_status)-1), *m3 = attn_status_str((attn_status)100000);
        T_CHECK(m2 && *m2 && m3 && *m3, "attn_status_str of an out-of-range value must be a non-empty string");
    }
}

/* The error-path fixture: real buffers for every pointer, so a call that wrongly reads or
   writes lands in memory that ASan watches and that the sentinel check inspects. */
enum { E_QN = 320, E_KN = 224, E_VN = 168, E_ON = 240, E_LN = 40 };
static float *e_q, *e_k, *e_v, *e_out, *e_lse, *e_bias, *e_alibi;
static int e_sq[2] = { 3, 5 }, e_sk[2] = { 7, 0 }, e_cuq[3] = { 0, 4, 10 }, e_cuk[3] = { 0, 5, 12 };

typedef struct {
    attn_desc d;
    int null_desc;
    attn_tensor q, k, v, out;
    float *lse;
} ecall;

/* regular base: q [2,5,4,8], k [2,7,2,8], v [2,7,2,6], out [2,5,4,6], lse [2,4,5]; the
   desc uses several valid features so range checks on them run */
static ecall base_a(void) {
    ecall e;
    memset(&e, 0, sizeof e);
    e.q = attn_tensor_dense(e_q, ATTN_F32, 2, 5, 4, 8);
    e.k = attn_tensor_dense(e_k, ATTN_F32, 2, 7, 2, 8);
    e.v = attn_tensor_dense(e_v, ATTN_F32, 2, 7, 2, 6);
    e.out = attn_tensor_dense(e_out, ATTN_F32, 2, 5, 4, 6);
    e.lse = e_lse;
    e.d.causal = 1; e.d.window_left = 3; e.d.seqlens_q = e_sq; e.d.seqlens_k = e_sk;
    e.d.alibi_slopes = e_alibi; e.d.softcap = 20.0f; e.d.n_threads = 2;
    return e;
}
/* packed base: q [1,10,4,8], k [1,12,2,8], v [1,12,2,6], out [1,10,4,6], 2 segments */
static ecall base_v(void) {
    ecall e;
    memset(&e, 0, sizeof e);
    e.q = attn_tensor_dense(e_q, ATTN_F32, 1, 10, 4, 8);
    e.k = attn_tensor_dense(e_k, ATTN_F32, 1, 12, 2, 8);
    e.v = attn_tensor_dense(e_v, ATTN_F32, 1, 12, 2, 6);
    e.out = attn_tensor_dense(e_out, ATTN_F32, 1, 10, 4, 6);
    e.lse = e_lse;
    e.d.cu_seqlens_q = e_cuq; e.d.cu_seqlens_k = e_cuk; e.d.varlen_batch = 2; e.d.causal = 1;
    return e;
}

/* want: the exact code; field: what its message must name; ws: whether attn_workspace_size
   (which takes no out) must return the same code */
static void expect_err(const char *label, const ecall *e, attn_status want, const char *field, int ws) {
    const char *msg = attn_status_str(want);
    attn_status st;
    t_sentinel(e_out, E_ON * sizeof(float), OUT_SEED);
    t_sentinel(e_lse, E_LN * sizeof(float), LSE_SEED);
    st = attn_forward(e->null_desc ? NULL : &e->d, e->q, e->k, e->v, e->out, e->lse);
    if (T_CHECK(st == want, "%s: attn_forward returned %s, want %s", label, sname(st), sname(want)))
        t_status_provoked[want] = 1;
    T_CHECK(msg && *msg && strstr(msg, field) != NULL, "attn_status_str(%s) = \"%s\" does not name \"%s\"",
            sname(want), msg ? msg : "(null)", field);
    T_CHECK(t_sentinel_ok(e_out, E_ON * sizeof(float), OUT_SEED) && t_sentinel_ok(e_lse, E_LN * sizeof(float), LSE_SEED),
            "%s: attn_forward returned %s but wrote out or lse", label, sname(st));
    if (ws) {
        size_t bytes = 4242;
        st = attn_workspace_size(e->null_desc ? NULL : &e->d, e->q, e->k, e->v, &bytes);
        T_CHECK(st == want, "%s: attn_workspace_size returned %s, want %s", label, sname(st), sname(want));
    }
}

static void test_errors(void) {
    static char dummy[64];
    int i;
    e_q = (float *)t_xmalloc(E_QN * sizeof(float)); e_k = (float *)t_xmalloc(E_KN * sizeof(float));
    e_v = (float *)t_xmalloc(E_VN * sizeof(float)); e_out = (float *)t_xmalloc(E_ON * sizeof(float));
    e_lse = (float *)t_xmalloc(E_LN * sizeof(float)); e_bias = (float *)t_xmalloc(2 * 4 * 10 * 12 * sizeof(float));
    e_alibi = (float *)t_xmalloc(4 * sizeof(float));
    for (i = 0; i < E_QN; ++i) e_q[i] = (float)((i * 7) % 13) * 0.1f;
    for (i = 0; i < E_KN; ++i) e_k[i] = (float)((i * 5) % 11) * 0.1f;
    for (i = 0; i < E_VN; ++i) e_v[i] = (float)((i * 3) % 7) * 0.1f;
    for (i = 0; i < 2 * 4 * 10 * 12; ++i) e_bias[i] = 0.5f;
    for (i = 0; i < 4; ++i) e_alibi[i] = 0.25f;

    /* the bases themselves are valid */
    {
        ecall a = base_a(), v = base_v();
        attn_status s1 = attn_forward(&a.d, a.q, a.k, a.v, a.out, a.lse);
        attn_status s2 = attn_forward(&v.d, v.q, v.k, v.v, v.out, v.lse);
        T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "error-test bases must be valid: %s / %s", sname(s1), sname(s2));
    }
#define E_CASE(base, label, want, field, ws, mutate) \
    do { ecall e = base(); mutate; expect_err(label, &e, want, field, ws); } while (0)

    E_CASE(base_a, "desc NULL", ATTN_ERR_NULL_DESC, "desc", 1, e.null_desc = 1);
    E_CASE(base_a, "q.data NULL", ATTN_ERR_NULL_Q, "q.data", 1, e.q.data = NULL);
    E_CASE(base_a, "k.data NULL", ATTN_ERR_NULL_K, "k.data", 1, e.k.data = NULL);
    E_CASE(base_a, "v.data NULL", ATTN_ERR_NULL_V, "v.data", 1, e.v.data = NULL);
    E_CASE(base_a, "out.data NULL", ATTN_ERR_NULL_OUT, "out.data", 0, e.out.data = NULL);
    E_CASE(base_a, "q/k/v dtype 3", ATTN_ERR_DTYPE, "dtype", 1, e.q.dtype = e.k.dtype = e.v.dtype = (attn_dtype)3);
    E_CASE(base_a, "q/k/v dtype -1", ATTN_ERR_DTYPE, "dtype", 1, e.q.dtype = e.k.dtype = e.v.dtype = (attn_dtype)-1);
    E_CASE(base_a, "out dtype 7", ATTN_ERR_DTYPE, "dtype", 0, e.out.dtype = (attn_dtype)7);
    E_CASE(base_a, "v f16 with k f32", ATTN_ERR_DTYPE_MISMATCH, "v.dtype", 1, e.v.dtype = ATTN_F16);
    E_CASE(base_a, "v bf16 with k f16", ATTN_ERR_DTYPE_MISMATCH, "v.dtype", 1, (e.k.dtype = ATTN_F16, e.v.dtype = ATTN_BF16));
    E_CASE(base_a, "q.seq 0", ATTN_ERR_Q_SHAPE, "q.", 1, (e.q.seq = 0, e.out.seq = 0, e.d.seqlens_q = NULL));
    E_CASE(base_a, "q.seq -1", ATTN_ERR_Q_SHAPE, "q.", 1, (e.q.seq = -1, e.out.seq = -1, e.d.seqlens_q = NULL));
    E_CASE(base_a, "q.heads 0", ATTN_ERR_Q_SHAPE, "q.", 1, (e.q.heads = 0, e.out.heads = 0, e.d.alibi_slopes = NULL));
    E_CASE(base_a, "k.seq 0", ATTN_ERR_K_SHAPE, "k.", 1, (e.k.seq = 0, e.v.seq = 0, e.d.seqlens_k = NULL));
    E_CASE(base_a, "k.heads 0 (no division by zero)", ATTN_ERR_K_SHAPE, "k.", 1, (e.k.heads = 0, e.v.heads = 0));
    E_CASE(base_a, "v.dim 0", ATTN_ERR_V_SHAPE, "v.", 1, (e.v.dim = 0, e.out.dim = 0));
    E_CASE(base_a, "v.dim -3", ATTN_ERR_V_SHAPE, "v.", 1, (e.v.dim = -3, e.out.dim = -3));
    E_CASE(base_a, "out.seq q.seq+1", ATTN_ERR_OUT_SHAPE, "out", 0, e.out.seq = 6);
    E_CASE(base_a, "out.dim q.dim, not v.dim", ATTN_ERR_OUT_SHAPE, "out", 0, e.out.dim = 8);
    E_CASE(base_a, "out.heads k.heads", ATTN_ERR_OUT_SHAPE, "out", 0, e.out.heads = 2);
    E_CASE(base_a, "out.batch 1", ATTN_ERR_OUT_SHAPE, "out", 0, e.out.batch = 1);
    E_CASE(base_a, "k.batch 1 (q.batch 2)", ATTN_ERR_K_BATCH, "k.batch", 1, (e.k.batch = 1, e.v.batch = 1));
    E_CASE(base_a, "k.dim 4 (q.dim 8)", ATTN_ERR_K_DIM, "k.dim", 1, e.k.dim = 4);
    E_CASE(base_a, "v.seq k.seq+1", ATTN_ERR_V_BATCH_SEQ, "v.", 1, e.v.seq = 8);
    E_CASE(base_a, "v.batch 1", ATTN_ERR_V_BATCH_SEQ, "v.batch", 1, e.v.batch = 1);
    E_CASE(base_a, "v.heads 1 (k.heads 2)", ATTN_ERR_V_HEADS, "v.heads", 1, e.v.heads = 1);
    E_CASE(base_a, "k.heads 3 (q.heads 4)", ATTN_ERR_GQA_HEADS, "q.heads", 1, (e.k.heads = 3, e.v.heads = 3));
    E_CASE(base_a, "k.heads 8 (q.heads 4)", ATTN_ERR_GQA_HEADS, "q.heads", 1, (e.k.heads = 8, e.v.heads = 8));
    E_CASE(base_a, "out.stride_head 0", ATTN_ERR_OUT_BROADCAST, "out", 0,
           (e.out.stride_batch = 5 * 6, e.out.stride_seq = 6, e.out.stride_head = 0));
    E_CASE(base_a, "out.stride_batch 0", ATTN_ERR_OUT_BROADCAST, "out", 0,
           (e.out.stride_batch = 0, e.out.stride_seq = 24, e.out.stride_head = 6));
    E_CASE(base_a, "kind 1000", ATTN_ERR_KIND, "kind", 1, e.d.kind = (attn_kind)1000);
    E_CASE(base_a, "kind -1", ATTN_ERR_KIND, "kind", 1, e.d.kind = (attn_kind)-1);
    E_CASE(base_a, "scale NaN", ATTN_ERR_SCALE, "scale", 1, e.d.scale = (float)NAN);
    E_CASE(base_a, "scale +inf", ATTN_ERR_SCALE, "scale", 1, e.d.scale = (float)INFINITY);
    E_CASE(base_a, "scale -inf", ATTN_ERR_SCALE, "scale", 1, e.d.scale = -(float)INFINITY);
    E_CASE(base_a, "softcap -1", ATTN_ERR_SOFTCAP, "softcap", 1, e.d.softcap = -1.0f);
    E_CASE(base_a, "softcap NaN", ATTN_ERR_SOFTCAP, "softcap", 1, e.d.softcap = (float)NAN);
    E_CASE(base_a, "softcap inf", ATTN_ERR_SOFTCAP, "softcap", 1, e.d.softcap = (float)INFINITY);
    E_CASE(base_a, "window_left -1", ATTN_ERR_WINDOW_LEFT, "window_left", 1, e.d.window_left = -1);
    E_CASE(base_a, "window_left INT_MIN", ATTN_ERR_WINDOW_LEFT, "window_left", 1, e.d.window_left = INT_MIN);
    E_CASE(base_a, "window_right -2", ATTN_ERR_WINDOW_RIGHT, "window_right", 1, e.d.window_right = -2);
    E_CASE(base_a, "dilation -1", ATTN_ERR_DILATION, "dilation", 1, e.d.dilation = -1);
    E_CASE(base_a, "sink_tokens -1", ATTN_ERR_SINK_TOKENS, "sink_tokens", 1, e.d.sink_tokens = -1);
    E_CASE(base_a, "global_tokens -1", ATTN_ERR_GLOBAL_TOKENS, "global_tokens", 1, e.d.global_tokens = -1);
    E_CASE(base_a, "causal 2", ATTN_ERR_CAUSAL, "causal", 1, e.d.causal = 2);
    E_CASE(base_a, "causal -1", ATTN_ERR_CAUSAL, "causal", 1, e.d.causal = -1);
    {
        static int sq_hi[2] = { 3, 6 }, sq_neg[2] = { -1, 5 }, sk_hi[2] = { 8, 0 }, sk_neg[2] = { 7, -5 };
        E_CASE(base_a, "seqlens_q[1] = q.seq+1", ATTN_ERR_SEQLENS_Q, "seqlens_q", 1, e.d.seqlens_q = sq_hi);
        E_CASE(base_a, "seqlens_q[0] = -1", ATTN_ERR_SEQLENS_Q, "seqlens_q", 1, e.d.seqlens_q = sq_neg);
        E_CASE(base_a, "seqlens_k[0] = k.seq+1", ATTN_ERR_SEQLENS_K, "seqlens_k", 1, e.d.seqlens_k = sk_hi);
        E_CASE(base_a, "seqlens_k[1] = -5", ATTN_ERR_SEQLENS_K, "seqlens_k", 1, e.d.seqlens_k = sk_neg);
    }
    {
        static int cq_start[3] = { 1, 4, 10 }, cq_dec[3] = { 0, 6, 5 }, cq_end[3] = { 0, 4, 11 };
        static int ck_start[3] = { 2, 5, 12 }, ck_dec[3] = { 0, 5, 4 }, ck_end[3] = { 0, 5, 13 };
        E_CASE(base_v, "cu_seqlens_q[0] = 1", ATTN_ERR_CU_SEQLENS_Q, "cu_seqlens_q", 1, e.d.cu_seqlens_q = cq_start);
        E_CASE(base_v, "cu_seqlens_q decreasing", ATTN_ERR_CU_SEQLENS_Q, "cu_seqlens_q", 1, e.d.cu_seqlens_q = cq_dec);
        E_CASE(base_v, "cu_seqlens_q end > q.seq", ATTN_ERR_CU_SEQLENS_Q, "cu_seqlens_q", 1, e.d.cu_seqlens_q = cq_end);
        E_CASE(base_v, "cu_seqlens_k[0] = 2", ATTN_ERR_CU_SEQLENS_K, "cu_seqlens_k", 1, e.d.cu_seqlens_k = ck_start);
        E_CASE(base_v, "cu_seqlens_k decreasing", ATTN_ERR_CU_SEQLENS_K, "cu_seqlens_k", 1, e.d.cu_seqlens_k = ck_dec);
        E_CASE(base_v, "cu_seqlens_k end > k.seq", ATTN_ERR_CU_SEQLENS_K, "cu_seqlens_k", 1, e.d.cu_seqlens_k = ck_end);
    }
    E_CASE(base_v, "cu_seqlens_q without cu_seqlens_k", ATTN_ERR_CU_SEQLENS_PAIR, "cu_seqlens", 1, e.d.cu_seqlens_k = NULL);
    E_CASE(base_v, "cu_seqlens_k without cu_seqlens_q", ATTN_ERR_CU_SEQLENS_PAIR, "cu_seqlens", 1, e.d.cu_seqlens_q = NULL);
    E_CASE(base_v, "varlen_batch 0 with cu_seqlens", ATTN_ERR_VARLEN_BATCH, "varlen_batch", 1, e.d.varlen_batch = 0);
    E_CASE(base_v, "varlen_batch -1 with cu_seqlens", ATTN_ERR_VARLEN_BATCH, "varlen_batch", 1, e.d.varlen_batch = -1);
    E_CASE(base_a, "varlen_batch 2 without cu_seqlens", ATTN_ERR_VARLEN_BATCH, "varlen_batch", 1, e.d.varlen_batch = 2);
    {
        static int cq2[3] = { 0, 2, 5 }, ck2[3] = { 0, 3, 6 };
        E_CASE(base_v, "cu_seqlens with batch 2", ATTN_ERR_VARLEN_SHAPE, "batch", 1,
               (e.q = attn_tensor_dense(e_q, ATTN_F32, 2, 5, 4, 8), e.k = attn_tensor_dense(e_k, ATTN_F32, 2, 6, 2, 8),
                e.v = attn_tensor_dense(e_v, ATTN_F32, 2, 6, 2, 6), e.out = attn_tensor_dense(e_out, ATTN_F32, 2, 5, 4, 6),
                e.d.cu_seqlens_q = cq2, e.d.cu_seqlens_k = ck2));
    }
    E_CASE(base_a, "alibi_slopes[2] NaN", ATTN_ERR_ALIBI, "alibi_slopes", 1, (e_alibi[2] = (float)NAN));
    e_alibi[2] = 0.25f;
    E_CASE(base_a, "alibi_slopes[3] -inf", ATTN_ERR_ALIBI, "alibi_slopes", 1, (e_alibi[3] = -(float)INFINITY));
    e_alibi[3] = 0.25f;
    E_CASE(base_a, "bias.batch 3 (q.batch 2)", ATTN_ERR_BIAS_BATCH, "bias.batch", 1,
           (e.d.bias = attn_bias_dense(e_bias, 3, 1, 5, 7)));
    E_CASE(base_a, "bias.batch 0", ATTN_ERR_BIAS_BATCH, "bias.batch", 1,
           (e.d.bias = attn_bias_dense(e_bias, 0, 4, 5, 7)));
    E_CASE(base_a, "bias.heads 2 (q.heads 4)", ATTN_ERR_BIAS_HEADS, "bias.heads", 1,
           (e.d.bias = attn_bias_dense(e_bias, 2, 2, 5, 7)));
    E_CASE(base_a, "bias.heads 0", ATTN_ERR_BIAS_HEADS, "bias.heads", 1,
           (e.d.bias = attn_bias_dense(e_bias, 1, 0, 5, 7)));
    E_CASE(base_a, "bias.rows 0", ATTN_ERR_BIAS_ROWS, "bias.rows", 1, (e.d.bias = attn_bias_dense(e_bias, 2, 4, 0, 7)));
    E_CASE(base_a, "bias.rows 4 (q.seq 5)", ATTN_ERR_BIAS_ROWS, "bias.rows", 1,
           (e.d.bias = attn_bias_dense(e_bias, 1, 1, 4, 7)));
    E_CASE(base_a, "n_threads -1", ATTN_ERR_N_THREADS, "n_threads", 1, e.d.n_threads = -1);
    {
        static int sl1[1] = { 3 };
        E_CASE(base_v, "cu_seqlens + seqlens_q", ATTN_ERR_VARLEN_WITH_SEQLENS, "seqlens", 1, e.d.seqlens_q = sl1);
        E_CASE(base_v, "cu_seqlens + seqlens_k", ATTN_ERR_VARLEN_WITH_SEQLENS, "seqlens", 1, e.d.seqlens_k = sl1);
    }
    E_CASE(base_v, "cu_seqlens + bias", ATTN_ERR_VARLEN_WITH_BIAS, "bias", 1,
           (e.d.bias = attn_bias_dense(e_bias, 1, 1, 10, 12)));
    /* size overflow: dims/strides whose extent does not fit ptrdiff_t; data points at small
       real buffers, so the call must refuse before touching memory */
    E_CASE(base_a, "q.stride_batch PTRDIFF_MAX", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.q.stride_batch = PTRDIFF_MAX, e.q.stride_seq = 32, e.q.stride_head = 8));
    E_CASE(base_a, "k.stride_seq PTRDIFF_MAX/4", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.k.stride_batch = 1, e.k.stride_seq = PTRDIFF_MAX / 4, e.k.stride_head = 8));
    E_CASE(base_a, "v.stride_head PTRDIFF_MAX-2", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.v.stride_batch = 84, e.v.stride_seq = 12, e.v.stride_head = PTRDIFF_MAX - 2));
    E_CASE(base_a, "out.stride_seq PTRDIFF_MAX/2", ATTN_ERR_OVERFLOW, "overflow", 0,
           (e.out.stride_batch = 1, e.out.stride_seq = PTRDIFF_MAX / 2, e.out.stride_head = 6));
    E_CASE(base_a, "every dim INT_MAX (dense)", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.q = attn_tensor_dense(dummy, ATTN_F32, INT_MAX, INT_MAX, INT_MAX, INT_MAX), e.k = e.q, e.v = e.q, e.out = e.q,
            e.d.seqlens_q = NULL, e.d.seqlens_k = NULL, e.d.alibi_slopes = NULL, e.q.data = e_q, e.k.data = e_k,
            e.v.data = e_v, e.out.data = e_out));
    E_CASE(base_a, "q 2^30 x 2^30 x 2^30 (dense)", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.q = attn_tensor_dense(e_q, ATTN_F32, 2, 1 << 30, 1 << 30, 1 << 30),
            e.k = attn_tensor_dense(e_k, ATTN_F32, 2, 7, 1 << 30, 1 << 30), e.v = attn_tensor_dense(e_v, ATTN_F32, 2, 7, 1 << 30, 6),
            e.out = attn_tensor_dense(e_out, ATTN_F32, 2, 1 << 30, 1 << 30, 6), e.d.seqlens_q = NULL, e.d.alibi_slopes = NULL));
    E_CASE(base_a, "bias.stride_q PTRDIFF_MAX/2", ATTN_ERR_OVERFLOW, "overflow", 1,
           (e.d.bias = attn_bias_dense(e_bias, 1, 1, 5, 7), e.d.bias.stride_q = PTRDIFF_MAX / 2));
#undef E_CASE

    /* attn_workspace_size: bytes NULL */
    {
        ecall a = base_a();
        attn_status st = attn_workspace_size(&a.d, a.q, a.k, a.v, NULL);
        if (T_CHECK(st == ATTN_ERR_NULL_ARG, "attn_workspace_size(bytes = NULL) returned %s, want ATTN_ERR_NULL_ARG", sname(st)))
            t_status_provoked[ATTN_ERR_NULL_ARG] = 1;
        T_CHECK(strstr(attn_status_str(ATTN_ERR_NULL_ARG), "NULL") != NULL, "ATTN_ERR_NULL_ARG message names no pointer");
    }
    free(e_q); free(e_k); free(e_v); free(e_out); free(e_lse); free(e_bias); free(e_alibi);
}

/* attn_merge error paths: exact codes, outputs untouched */
static void expect_merge_err(const char *label, int n, const attn_tensor *parts, const float *const *pl,
                             attn_tensor out, float *lse, int want, const char *field) {
    attn_status st;
    const size_t ob = 2 * 3 * 2 * 4 * sizeof(float), lb = 2 * 2 * 3 * sizeof(float);
    if (out.data) t_sentinel(out.data, ob, OUT_SEED);
    if (lse) t_sentinel(lse, lb, LSE_SEED);
    st = attn_merge(n, parts, pl, out, lse);
    if (want >= 0) {
        if (T_CHECK(st == (attn_status)want, "%s: attn_merge returned %s, want %s", label, sname(st), sname((attn_status)want)))
            t_status_provoked[want] = 1;
        T_CHECK(strstr(attn_status_str((attn_status)want), field) != NULL, "attn_status_str(%s) does not name \"%s\"",
                sname((attn_status)want), field);
    } else {
        T_CHECK(st != ATTN_OK, "%s: attn_merge accepted an invalid call", label);
    }
    T_CHECK((!out.data || t_sentinel_ok(out.data, ob, OUT_SEED)) && (!lse || t_sentinel_ok(lse, lb, LSE_SEED)),
            "%s: attn_merge returned %s but wrote out or lse", label, sname(st));
}

static void test_merge_errors(void) {
    float a[48], b[48], o[48], l0[12], l1[12], lo[12];
    attn_tensor parts[2], out;
    const float *pl[2];
    int i;
    for (i = 0; i < 48; ++i) { a[i] = (float)i; b[i] = -(float)i; }
    for (i = 0; i < 12; ++i) { l0[i] = 0.5f; l1[i] = -1.0f; }
#define M_RESET() do { parts[0] = attn_tensor_dense(a, ATTN_F32, 2, 3, 2, 4); parts[1] = attn_tensor_dense(b, ATTN_F32, 2, 3, 2, 4); \
        out = attn_tensor_dense(o, ATTN_F32, 2, 3, 2, 4); pl[0] = l0; pl[1] = l1; } while (0)
    M_RESET();
    {
        attn_status st = attn_merge(2, parts, pl, out, lo);
        T_CHECK(st == ATTN_OK, "merge error-test base must be valid: %s", sname(st));
    }
    M_RESET(); expect_merge_err("n_parts 0", 0, parts, pl, out, lo, ATTN_ERR_MERGE_N_PARTS, "n_parts");
    M_RESET(); expect_merge_err("n_parts -1", -1, parts, pl, out, lo, ATTN_ERR_MERGE_N_PARTS, "n_parts");
    M_RESET(); expect_merge_err("parts NULL", 2, NULL, pl, out, lo, ATTN_ERR_MERGE_NULL, "parts");
    M_RESET(); expect_merge_err("part_lse NULL", 2, parts, NULL, out, lo, ATTN_ERR_MERGE_NULL, "part_lse");
    M_RESET(); parts[1].data = NULL; expect_merge_err("parts[1].data NULL", 2, parts, pl, out, lo, ATTN_ERR_MERGE_NULL, "part");
    M_RESET(); pl[1] = NULL; expect_merge_err("part_lse[1] NULL", 2, parts, pl, out, lo, ATTN_ERR_MERGE_NULL, "part_lse");
    M_RESET(); parts[1].seq = 2; expect_merge_err("parts[1].seq 2", 2, parts, pl, out, lo, ATTN_ERR_MERGE_SHAPE, "part");
    M_RESET(); parts[0].dim = 3; expect_merge_err("parts[0].dim 3", 2, parts, pl, out, lo, ATTN_ERR_MERGE_SHAPE, "part");
    M_RESET(); parts[1].heads = 1; expect_merge_err("parts[1].heads 1", 2, parts, pl, out, lo, ATTN_ERR_MERGE_SHAPE, "part");
    M_RESET(); parts[1].batch = 1; expect_merge_err("parts[1].batch 1", 2, parts, pl, out, lo, ATTN_ERR_MERGE_SHAPE, "part");
    M_RESET(); out.data = NULL; expect_merge_err("out.data NULL", 2, parts, pl, out, lo, ATTN_ERR_NULL_OUT, "out.data");
    M_RESET(); parts[1].dtype = (attn_dtype)5; expect_merge_err("parts[1].dtype 5", 2, parts, pl, out, lo, ATTN_ERR_DTYPE, "dtype");
    M_RESET(); out.dtype = (attn_dtype)-2; expect_merge_err("out.dtype -2", 2, parts, pl, out, lo, ATTN_ERR_DTYPE, "dtype");
    M_RESET(); out.stride_batch = 24; out.stride_seq = 8; out.stride_head = 0;
    expect_merge_err("out.stride_head 0", 2, parts, pl, out, lo, ATTN_ERR_OUT_BROADCAST, "out");
    M_RESET(); parts[1].stride_batch = PTRDIFF_MAX; parts[1].stride_seq = 8; parts[1].stride_head = 4;
    expect_merge_err("parts[1].stride_batch PTRDIFF_MAX", 2, parts, pl, out, lo, ATTN_ERR_OVERFLOW, "overflow");
    M_RESET(); out.stride_batch = PTRDIFF_MAX / 2 + 1; out.stride_seq = 8; out.stride_head = 4;
    expect_merge_err("out.stride_batch PTRDIFF_MAX/2+1", 2, parts, pl, out, lo, ATTN_ERR_OVERFLOW, "overflow");
    M_RESET(); out.seq = 0; parts[0].seq = 0; parts[1].seq = 0;
    expect_merge_err("every seq 0", 2, parts, pl, out, lo, -1, "");
    M_RESET(); out.dim = -1; parts[0].dim = -1; parts[1].dim = -1;
    expect_merge_err("every dim -1", 2, parts, pl, out, NULL, -1, "");
#undef M_RESET
}

/* ---------------------------------------------------------------------------------------- */
/* Argument fuzzer                                                                           */
/* ---------------------------------------------------------------------------------------- */

/* Every buffer is allocated to exactly what its own declared shape needs (a single element
   when the shape is invalid), so any read or write outside what a call is entitled to hits
   ASan. An independent predictor says whether each call is valid. */

typedef struct { attn_tensor t; void *buf; size_t bytes; } fzt;

static int dt_ok(attn_dtype d) { return d == ATTN_F32 || d == ATTN_F16 || d == ATTN_BF16; }
static int dims_ok(const attn_tensor *t) { return t->batch >= 1 && t->seq >= 1 && t->heads >= 1 && t->dim >= 1; }
static int out_zero_stride(const attn_tensor *t) {
    if (t->stride_batch == 0 && t->stride_seq == 0 && t->stride_head == 0) return 0;
    return (t->stride_batch == 0 && t->batch > 1) || (t->stride_seq == 0 && t->seq > 1) ||
           (t->stride_head == 0 && t->heads > 1);
}

static fzt fz_tensor(t_rng *r, attn_dtype dt, int B, int S, int H, int D, int is_out) {
    fzt x;
    size_t n = 1, es = dt_ok(dt) ? t_dt_size(dt) : 4;
    memset(&x, 0, sizeof x);
    x.t.dtype = dt; x.t.batch = B; x.t.seq = S; x.t.heads = H; x.t.dim = D;
    if (dims_ok(&x.t)) {
        layout_strides(pick_layout(r, !is_out), B, S, H, D, r, &x.t.stride_batch, &x.t.stride_seq, &x.t.stride_head);
        if (is_out && t_chance(r, 0.05)) {   /* a zero stride on one axis of an output */
            int ax = t_irange(r, 0, 2);
            if (ax == 0) x.t.stride_batch = 0; else if (ax == 1) x.t.stride_seq = 0; else x.t.stride_head = 0;
        }
        n = t_extent(&x.t);
    }
    x.bytes = n * es;
    x.buf = t_xmalloc(x.bytes);
    if (is_out) t_sentinel(x.buf, x.bytes, OUT_SEED);
    else {
        size_t i;
        if (dt_ok(dt)) for (i = 0; i < n; ++i) t_store_at(x.buf, dt, (ptrdiff_t)i, t_normal(r));
        else memset(x.buf, 0, x.bytes);
    }
    x.t.data = x.buf;
    return x;
}

static int fz_small(t_rng *r, const int *vals, int n, double p_valid) {
    /* vals[0..n-2] are valid choices, vals[n-1] an invalid one, taken with 1 - p_valid */
    return t_chance(r, p_valid) ? vals[t_irange(r, 0, n - 2)] : vals[n - 1];
}

/* NULL when the call is valid per the documented contract, else the reason. out == NULL:
   judge it as attn_workspace_size would (no out, no workspace). */
static const char *fz_predict(const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                              const attn_tensor *v, const attn_tensor *out) {
    int b, h, s, varlen;
    if (!q->data) return "q.data NULL";
    if (!k->data) return "k.data NULL";
    if (!v->data) return "v.data NULL";
    if (out && !out->data) return "out.data NULL";
    if (!dt_ok(q->dtype) || !dt_ok(k->dtype) || !dt_ok(v->dtype) || (out && !dt_ok(out->dtype))) return "dtype";
    if (v->dtype != k->dtype) return "dtype mismatch";
    if (!dims_ok(q)) return "q shape";
    if (!dims_ok(k)) return "k shape";
    if (!dims_ok(v)) return "v shape";
    if (out && (out->batch != q->batch || out->seq != q->seq || out->heads != q->heads || out->dim != v->dim))
        return "out shape";
    if (k->batch != q->batch) return "k.batch";
    if (k->dim != q->dim) return "k.dim";
    if (v->batch != k->batch || v->seq != k->seq) return "v.batch/seq";
    if (v->heads != k->heads) return "v.heads";
    if (q->heads % k->heads != 0) return "GQA heads";
    if (out && out_zero_stride(out)) return "out zero stride";
    if (d->kind != ATTN_SOFTMAX) return "kind";
    if (!(d->scale - d->scale == 0.0f)) return "scale";
    if (!(d->softcap >= 0.0f) || !(d->softcap - d->softcap == 0.0f)) return "softcap";
    if (d->window_left < 0 || d->window_right < 0 || d->dilation < 0 || d->sink_tokens < 0 || d->global_tokens < 0)
        return "negative window/dilation/sink/global";
    if (d->causal != 0 && d->causal != 1) return "causal";
    if (d->n_threads < 0) return "n_threads";
    if ((d->cu_seqlens_q != NULL) != (d->cu_seqlens_k != NULL)) return "cu_seqlens pair";
    varlen = d->cu_seqlens_q != NULL;
    if (varlen ? d->varlen_batch < 1 : d->varlen_batch != 0) return "varlen_batch";
    if (varlen) {
        if (q->batch != 1 || k->batch != 1 || v->batch != 1 || (out && out->batch != 1)) return "varlen batch 1";
        if (d->seqlens_q || d->seqlens_k) return "varlen + seqlens";
        if (d->bias.data) return "varlen + bias";
        if (d->cu_seqlens_q[0] != 0 || d->cu_seqlens_k[0] != 0) return "cu start";
        for (s = 1; s <= d->varlen_batch; ++s)
            if (d->cu_seqlens_q[s] < d->cu_seqlens_q[s - 1] || d->cu_seqlens_k[s] < d->cu_seqlens_k[s - 1]) return "cu decreasing";
        if (d->cu_seqlens_q[d->varlen_batch] > q->seq || d->cu_seqlens_k[d->varlen_batch] > k->seq) return "cu end";
    }
    for (b = 0; b < q->batch; ++b) {
        if (d->seqlens_q && (d->seqlens_q[b] < 0 || d->seqlens_q[b] > q->seq)) return "seqlens_q range";
        if (d->seqlens_k && (d->seqlens_k[b] < 0 || d->seqlens_k[b] > k->seq)) return "seqlens_k range";
    }
    if (d->alibi_slopes)
        for (h = 0; h < q->heads; ++h)
            if (!(d->alibi_slopes[h] - d->alibi_slopes[h] == 0.0f)) return "alibi not finite";
    if (d->bias.data) {
        if (d->bias.batch != 1 && d->bias.batch != q->batch) return "bias.batch";
        if (d->bias.heads != 1 && d->bias.heads != q->heads) return "bias.heads";
        if (d->bias.rows != 1 && d->bias.rows != q->seq) return "bias.rows";
    }
    return NULL;
}

static void fuzz_forward(void) {
    t_rng r = t_rng_seed(10);
    static const int bv[] = { 1, 1, 2, 3, 0 }, sv[] = { 1, 2, 3, 5, 9, 0 }, hv[] = { 1, 2, 4, 0 };
    static const int dv[] = { 1, 2, 4, 7, -1 }, small[] = { 1, 2, 3, 5, -1 };
    const int n_it = T_QUICK ? 2000 : 4000;
    int it, n_ok = 0, n_err = 0;
    for (it = 0; it < n_it; ++it) {
        attn_desc d;
        int B = fz_small(&r, bv, 5, 0.95), Sq = fz_small(&r, sv, 6, 0.95), Sk = fz_small(&r, sv, 6, 0.95);
        int Hkv = fz_small(&r, hv, 4, 0.96), Hq = Hkv * t_irange(&r, 1, 3), D = fz_small(&r, dv, 5, 0.96);
        int Dv = fz_small(&r, dv, 5, 0.96);
        int dims[4][4], ti, fi, cu_mode;
        attn_dtype dts[4];
        fzt q, k, v, out;
        float *bias = NULL, *alibi = NULL, *lse = NULL, *ws = NULL;
        int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL, ws_short = 0;
        size_t nl = 1, ws_bytes = 0;
        const char *why, *why_ws;
        attn_status st, st_ws;
        char ctx[4400];

        if (t_chance(&r, 0.05)) Hq = fz_small(&r, hv, 4, 0.8);
        memset(&d, 0, sizeof d);
        /* packed variable-length batches */
        cu_mode = t_chance(&r, 0.15) ? (t_chance(&r, 0.9) ? 3 : t_irange(&r, 1, 2)) : 0;
        if (cu_mode && t_chance(&r, 0.9)) B = 1;
        {
            int tmp[4][4] = { { B, Sq, Hq, D }, { B, Sk, Hkv, D }, { B, Sk, Hkv, Dv }, { B, Sq, Hq, Dv } };
            memcpy(dims, tmp, sizeof dims);
        }
        if (t_chance(&r, 0.12)) {   /* mismatch one field of one tensor */
            ti = t_irange(&r, 0, 3); fi = t_irange(&r, 0, 3);
            dims[ti][fi] = t_chance(&r, 0.5) ? dims[ti][fi] + t_irange(&r, -2, 2) : fz_small(&r, small, 5, 0.7);
        }
        dts[0] = pick_dtype(&r, 0.5); dts[1] = dts[2] = dts[0]; dts[3] = pick_dtype(&r, 0.5);
        if (t_chance(&r, 0.04)) dts[t_irange(&r, 1, 2)] = pick_dtype(&r, 0.3);
        if (t_chance(&r, 0.02)) dts[t_irange(&r, 0, 3)] = (attn_dtype)t_irange(&r, 3, 9);
        q = fz_tensor(&r, dts[0], dims[0][0], dims[0][1], dims[0][2], dims[0][3], 0);
        k = fz_tensor(&r, dts[1], dims[1][0], dims[1][1], dims[1][2], dims[1][3], 0);
        v = fz_tensor(&r, dts[2], dims[2][0], dims[2][1], dims[2][2], dims[2][3], 0);
        out = fz_tensor(&r, dts[3], dims[3][0], dims[3][1], dims[3][2], dims[3][3], 1);
        if (t_chance(&r, 0.01)) q.t.data = NULL;
        if (t_chance(&r, 0.01)) k.t.data = NULL;
        if (t_chance(&r, 0.01)) v.t.data = NULL;
        if (t_chance(&r, 0.01)) out.t.data = NULL;

        if (t_chance(&r, 0.02)) d.kind = (attn_kind)t_irange(&r, 1, 1000);
        if (t_chance(&r, 0.1)) {
            static const float sc[5] = { 0.5f, -0.7f, 3.0f, 1e-3f, 0.0f };
            d.scale = t_chance(&r, 0.85) ? sc[t_irange(&r, 0, 4)] : t_chance(&r, 0.5) ? (float)NAN : (float)INFINITY;
        }
        d.causal = t_chance(&r, 0.97) ? t_irange(&r, 0, 1) : t_chance(&r, 0.5) ? 2 : -1;
        if (t_chance(&r, 0.3)) d.window_left = fz_small(&r, small, 5, 0.9);
        if (t_chance(&r, 0.2)) d.window_right = fz_small(&r, small, 5, 0.9);
        if (t_chance(&r, 0.2)) d.dilation = fz_small(&r, small, 5, 0.9);
        if (t_chance(&r, 0.2)) d.sink_tokens = fz_small(&r, small, 5, 0.9);
        if (t_chance(&r, 0.2)) d.global_tokens = fz_small(&r, small, 5, 0.9);
        if (t_chance(&r, 0.1)) d.softcap = t_chance(&r, 0.8) ? 2.0f : t_chance(&r, 0.5) ? -1.0f : (float)NAN;
        if (t_chance(&r, 0.15)) d.n_threads = t_chance(&r, 0.9) ? t_irange(&r, 0, 3) : -1;
        if (t_chance(&r, 0.15)) {
            int nh = q.t.heads > 0 ? q.t.heads : 1, h;
            alibi = (float *)t_xmalloc((size_t)nh * sizeof(float));
            for (h = 0; h < nh; ++h) alibi[h] = (float)t_unif(&r);
            if (t_chance(&r, 0.1)) alibi[t_irange(&r, 0, nh - 1)] = t_chance(&r, 0.5) ? (float)NAN : (float)INFINITY;
            d.alibi_slopes = alibi;
        }
        if (t_chance(&r, 0.15) || (cu_mode && t_chance(&r, 0.05))) {
            int nb = q.t.batch > k.t.batch ? q.t.batch : k.t.batch, b;
            if (nb < 1) nb = 1;
            sql = (int *)t_xmalloc((size_t)nb * sizeof(int));
            for (b = 0; b < nb; ++b) sql[b] = t_chance(&r, 0.93) ? t_irange(&r, 0, q.t.seq > 0 ? q.t.seq : 0) : t_irange(&r, -1, q.t.seq + 1);
            d.seqlens_q = sql;
        }
        if (t_chance(&r, 0.15)) {
            int nb = q.t.batch > k.t.batch ? q.t.batch : k.t.batch, b;
            if (nb < 1) nb = 1;
            skl = (int *)t_xmalloc((size_t)nb * sizeof(int));
            for (b = 0; b < nb; ++b) skl[b] = t_chance(&r, 0.93) ? t_irange(&r, 0, k.t.seq > 0 ? k.t.seq : 0) : t_irange(&r, -1, k.t.seq + 1);
            d.seqlens_k = skl;
        }
        if (cu_mode) {
            int vb = t_chance(&r, 0.92) ? t_irange(&r, 1, 3) : t_irange(&r, -1, 0), n = vb >= 1 ? vb : 0;
            int qs = q.t.seq > 0 ? q.t.seq : 0, ks = k.t.seq > 0 ? k.t.seq : 0;
            cuq = t_make_cu(n, qs, t_chance(&r, 0.6), &r);
            cuk = t_make_cu(n, ks, t_chance(&r, 0.6), &r);
            if (t_chance(&r, 0.1)) {   /* corrupt one array */
                int *c = t_chance(&r, 0.5) ? cuq : cuk, w = t_irange(&r, 0, 2);
                if (w == 0) c[0] = 1;
                else if (w == 1 && n >= 2) c[1] = c[2] + 1;
                else c[n] += 1 + (c == cuq ? qs - c[n] : ks - c[n]);
            }
            d.varlen_batch = vb;
            if (cu_mode & 1) d.cu_seqlens_q = cuq;
            if (cu_mode & 2) d.cu_seqlens_k = cuk;
        } else if (t_chance(&r, 0.02)) {
            d.varlen_batch = t_irange(&r, 1, 2);
        }
        if (t_chance(&r, 0.12)) {   /* a bias with possibly wrong broadcast dims */
            static const int bbs[4] = { 1, 0, 2, 3 };
            attn_bias *bs = &d.bias;
            size_t n = 1, i;
            bs->batch = t_chance(&r, 0.5) ? q.t.batch : bbs[t_irange(&r, 0, 3)];
            bs->heads = t_chance(&r, 0.5) ? q.t.heads : bbs[t_irange(&r, 0, 3)];
            bs->rows = t_chance(&r, 0.7) ? q.t.seq : t_chance(&r, 0.8) ? 1 : bbs[t_irange(&r, 0, 3)];
            if (bs->batch >= 1 && bs->heads >= 1 && bs->rows >= 1 && q.t.seq >= 1 && k.t.seq >= 1) {
                ptrdiff_t sq = k.t.seq, sh = (ptrdiff_t)bs->rows * k.t.seq, sb = (ptrdiff_t)bs->heads * sh;
                if (t_chance(&r, 0.5)) {
                    sq = k.t.seq + t_irange(&r, 0, 2); sh = bs->rows * sq + t_irange(&r, 0, 2); sb = bs->heads * sh + 1;
                }
                bs->stride_q = sq; bs->stride_head = sh; bs->stride_batch = sb;
                n = t_bias_extent(bs, k.t.seq);
            }
            bias = (float *)t_xmalloc(n * sizeof(float));
            for (i = 0; i < n; ++i) bias[i] = (float)t_normal(&r);
            bs->data = bias;
        }
        if (t_chance(&r, 0.8)) {
            if (q.t.batch >= 1 && q.t.heads >= 1 && q.t.seq >= 1) nl = (size_t)q.t.batch * q.t.heads * q.t.seq;
            lse = (float *)t_xmalloc(nl * sizeof(float));
            t_sentinel(lse, nl * sizeof(float), LSE_SEED);
        }
        if (t_chance(&r, 0.06)) {   /* a caller workspace, possibly one byte short */
            if (attn_workspace_size(&d, q.t, k.t, v.t, &ws_bytes) == ATTN_OK) {
                ws = (float *)t_xmalloc(ws_bytes);
                ws_short = ws_bytes > 0 && t_chance(&r, 0.3);
                d.workspace = ws; d.workspace_size = ws_bytes - (size_t)ws_short;
            }
        }

        why = fz_predict(&d, &q.t, &k.t, &v.t, &out.t);
        if (!why && ws_short) why = "workspace one byte short";
        why_ws = fz_predict(&d, &q.t, &k.t, &v.t, NULL);
        snprintf(ctx, sizeof ctx, " | fuzz #%d:%s lse %s", it, describe(&d, &q.t, &k.t, &v.t, &out.t), lse ? "buffer" : "NULL");
        st = attn_forward(&d, q.t, k.t, v.t, out.t, lse);
        if (st == ATTN_OK) {
            ++n_ok;
            if (T_CHECK(why == NULL, "fuzz: attn_forward accepted a call the contract makes invalid (%s)%s", why, ctx)) {
                check_result("fuzz", ctx, &d, q.t, k.t, v.t, out.t, lse);
                T_CHECK(tb_gaps_ok(&(tb){ out.t, out.buf, out.bytes / t_dt_size(out.t.dtype), 1 }),
                        "fuzz: attn_forward wrote outside the out view%s", ctx);
            }
        } else {
            ++n_err;
            T_CHECK(why != NULL, "fuzz: attn_forward rejected a valid call with %s%s", sname(st), ctx);
            T_CHECK(t_sentinel_ok(out.buf, out.bytes, OUT_SEED) && (!lse || t_sentinel_ok(lse, nl * sizeof(float), LSE_SEED)),
                    "fuzz: attn_forward returned %s but wrote out or lse%s", sname(st), ctx);
            T_CHECK(st > ATTN_OK && st < ATTN_STATUS_END && st != ATTN_ERR_OUT_OF_MEMORY,
                    "fuzz: unexpected status %d%s", (int)st, ctx);
        }
        {
            size_t bytes = 0;
            st_ws = attn_workspace_size(&d, q.t, k.t, v.t, &bytes);
            T_CHECK((st_ws == ATTN_OK) == (why_ws == NULL), "fuzz: attn_workspace_size returned %s, predicted %s%s",
                    sname(st_ws), why_ws ? why_ws : "valid", ctx);
        }
        free(q.buf); free(k.buf); free(v.buf); free(out.buf);
        free(bias); free(alibi); free(lse); free(ws); free(sql); free(skl); free(cuq); free(cuk);
    }
    /* the fuzzer must exercise both outcomes substantially */
    T_CHECK(n_ok > n_it / 5 && n_err > n_it / 5, "fuzz: %d valid and %d invalid calls, want both > %d", n_ok, n_err, n_it / 5);
}

static void fuzz_merge(void) {
    t_rng r = t_rng_seed(11);
    static const int small[] = { 1, 2, 3, 4, 0 };
    const int n_it = T_QUICK ? 500 : 1000;
    int it, n_ok = 0, n_err = 0;
    for (it = 0; it < n_it; ++it) {
        int np = t_chance(&r, 0.93) ? t_irange(&r, 1, 4) : t_irange(&r, -1, 0);
        int na = np > 0 ? np : 1, p, i;
        int B = fz_small(&r, small, 5, 0.97), S = fz_small(&r, small, 5, 0.97);
        int H = fz_small(&r, small, 5, 0.97), Dv = fz_small(&r, small, 5, 0.97);
        fzt parts[4], out;
        attn_tensor pt[4];
        float *pl[4], *lse = NULL;
        size_t nl = 1;
        const char *why = NULL;
        attn_status st;
        char ctx[256];
        if (B >= 1 && S >= 1 && H >= 1) nl = (size_t)B * S * H;
        for (p = 0; p < na; ++p) {
            int dd[4] = { B, S, H, Dv };
            if (t_chance(&r, 0.06)) dd[t_irange(&r, 0, 3)] += t_chance(&r, 0.5) ? 1 : -1;
            parts[p] = fz_tensor(&r, t_chance(&r, 0.98) ? pick_dtype(&r, 0.5) : (attn_dtype)4, dd[0], dd[1], dd[2], dd[3], 0);
            pt[p] = parts[p].t;
            if (t_chance(&r, 0.02)) pt[p].data = NULL;
            pl[p] = (float *)t_xmalloc(nl * sizeof(float));
            for (i = 0; i < (int)nl; ++i) pl[p][i] = t_chance(&r, 0.2) ? -INFINITY : (float)t_normal(&r);
        }
        out = fz_tensor(&r, t_chance(&r, 0.98) ? pick_dtype(&r, 0.5) : (attn_dtype)-1, B, S, H,
                        t_chance(&r, 0.04) ? Dv + 1 : Dv, 1);
        if (t_chance(&r, 0.02)) out.t.data = NULL;
        if (t_chance(&r, 0.7)) { lse = (float *)t_xmalloc(nl * sizeof(float)); t_sentinel(lse, nl * sizeof(float), LSE_SEED); }
        {
            const attn_tensor *pp = t_chance(&r, 0.02) ? NULL : pt;
            float *plx[4];
            const float *const *ppl;
            for (p = 0; p < na; ++p) plx[p] = t_chance(&r, 0.02) ? NULL : pl[p];
            ppl = t_chance(&r, 0.02) ? NULL : (const float *const *)plx;
            /* prediction */
            if (np < 1) why = "n_parts";
            else if (!pp || !ppl) why = "parts/part_lse NULL";
            else {
                for (p = 0; p < np && !why; ++p)
                    if (!pt[p].data || !plx[p]) why = "a part's data or lse NULL";
                if (!why && !out.t.data) why = "out.data NULL";
                for (p = 0; p < np && !why; ++p) if (!dt_ok(pt[p].dtype)) why = "part dtype";
                if (!why && !dt_ok(out.t.dtype)) why = "out dtype";
                if (!why && !dims_ok(&out.t)) why = "out shape";
                for (p = 0; p < np && !why; ++p)
                    if (pt[p].batch != out.t.batch || pt[p].seq != out.t.seq || pt[p].heads != out.t.heads || pt[p].dim != out.t.dim)
                        why = "part shape";
                if (!why && out_zero_stride(&out.t)) why = "out zero stride";
            }
            snprintf(ctx, sizeof ctx, " | merge fuzz #%d: n_parts=%d out[%d,%d,%d,%d] %s", it, np, out.t.batch, out.t.seq,
                     out.t.heads, out.t.dim, t_dt_name(out.t.dtype));
            st = attn_merge(np, pp, ppl, out.t, lse);
        }
        if (st == ATTN_OK) {
            ++n_ok;
            if (T_CHECK(why == NULL, "merge fuzz: accepted an invalid call (%s)%s", why, ctx)) {
                double *ro = (double *)t_xmalloc((size_t)B * S * H * Dv * sizeof(double)), *rl = (double *)t_xmalloc(nl * sizeof(double));
                ref_merge(np, pt, (const float *const *)pl, ro, rl);
                cmp_ref("merge fuzz", ctx, ro, rl, &out.t, lse, B, S, H, Dv);
                free(ro); free(rl);
            }
        } else {
            ++n_err;
            T_CHECK(why != NULL, "merge fuzz: rejected a valid call with %s%s", sname(st), ctx);
            T_CHECK(t_sentinel_ok(out.buf, out.bytes, OUT_SEED) && (!lse || t_sentinel_ok(lse, nl * sizeof(float), LSE_SEED)),
                    "merge fuzz: returned %s but wrote out or lse%s", sname(st), ctx);
        }
        for (p = 0; p < na; ++p) { free(parts[p].buf); free(pl[p]); }
        free(out.buf); free(lse);
    }
    T_CHECK(n_ok > n_it / 5 && n_err > n_it / 20, "merge fuzz: %d valid and %d invalid calls", n_ok, n_err);
}

/* ---------------------------------------------------------------------------------------- */
/* Tensor constructors                                                                       */
/* ---------------------------------------------------------------------------------------- */

static void test_tensor_helpers(void) {
    float buf[1];
    attn_tensor d = attn_tensor_dense(buf, ATTN_F16, 2, 3, 4, 5), b = attn_tensor_bhsd(buf, ATTN_BF16, 2, 4, 3, 5);
    int dense_ok = d.stride_batch == 60 && d.stride_seq == 20 && d.stride_head == 5;   /* always explicit (0.3) */
    T_CHECK(d.data == buf && d.dtype == ATTN_F16 && d.batch == 2 && d.seq == 3 && d.heads == 4 && d.dim == 5 && dense_ok,
            "attn_tensor_dense(buf, F16, 2,3,4,5) = {%p %d [%d,%d,%d,%d] strides %ld %ld %ld}", d.data, (int)d.dtype,
            d.batch, d.seq, d.heads, d.dim, (long)d.stride_batch, (long)d.stride_seq, (long)d.stride_head);
    T_CHECK(b.data == buf && b.dtype == ATTN_BF16 && b.batch == 2 && b.seq == 3 && b.heads == 4 && b.dim == 5 &&
            b.stride_batch == 60 && b.stride_head == 15 && b.stride_seq == 5,
            "attn_tensor_bhsd(buf, BF16, B=2,H=4,S=3,D=5) = {[%d,%d,%d,%d] strides b%ld s%ld h%ld}, want strides b60 s5 h15",
            b.batch, b.seq, b.heads, b.dim, (long)b.stride_batch, (long)b.stride_seq, (long)b.stride_head);
    /* a BHSD tensor with a single head and seq: strides still describe BHSD */
    b = attn_tensor_bhsd(buf, ATTN_F32, 3, 1, 1, 7);
    T_CHECK(b.batch == 3 && b.seq == 1 && b.heads == 1 && b.dim == 7 && t_offset(&b, 2, 0, 0, 6) == 20,
            "attn_tensor_bhsd(B=3,H=1,S=1,D=7): element [2,0,0,6] must be at offset 20");
    {   /* dims whose products do not fit: strides saturate, and validation refuses the view */
        attn_tensor h = attn_tensor_dense(buf, ATTN_F32, 2, INT_MAX, INT_MAX, INT_MAX);
        attn_bias bb = attn_bias_dense(buf, 2, 3, 4, 5);
        T_CHECK(h.stride_head == INT_MAX && h.stride_batch == PTRDIFF_MAX, "attn_tensor_dense saturates: b%ld",
                (long)h.stride_batch);
        T_CHECK(bb.data == buf && bb.batch == 2 && bb.heads == 3 && bb.rows == 4 && bb.stride_q == 5 && bb.stride_head == 20 &&
                bb.stride_batch == 60, "attn_bias_dense(buf, 2, 3, 4, 5) strides b%ld h%ld q%ld", (long)bb.stride_batch,
                (long)bb.stride_head, (long)bb.stride_q);
    }
}

/* 0.2 read "all strides 0" as dense: a bias row shared by every query ([1, 1, 1, Sk], Hugging
   Face's attention_mask) then read Sq x Sk floats from a buffer of Sk. Strides are now taken as
   given: that row, with every stride 0 (rows q.seq) or as rows 1, reads exactly its Sk floats
   (an exact-size heap buffer: ASan faults on a read past it) and equals the reference. */
static void test_bias_key_row(void) {
    t_rng r = t_rng_seed(1201);
    const int B = 2, Sq = 9, Sk = 13, H = 2, D = 8;
    tb q = tb_new(ATTN_F32, B, Sq, H, D, L_DENSE, &r, 0), k = tb_new(ATTN_F32, B, Sk, H, D, L_DENSE, &r, 0);
    tb v = tb_new(ATTN_F32, B, Sk, H, D, L_DENSE, &r, 0), out = tb_new(ATTN_F32, B, Sq, H, D, L_DENSE, &r, 1);
    float *row = (float *)t_xmalloc(sizeof(float) * (size_t)Sk);
    int j, form;
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
    for (j = 0; j < Sk; ++j) row[j] = j >= Sk - 3 ? -10000.0f : 0.0f;      /* three padded keys */
    for (form = 0; form < 2; ++form) {
        attn_desc d;
        memset(&d, 0, sizeof d);
        d.bias.data = row; d.bias.batch = 1; d.bias.heads = 1;
        d.bias.rows = form == 0 ? Sq : 1;          /* all strides 0 / one row */
        if (form == 1) d.bias.stride_q = 12345;    /* never read: rows 1 */
        fwd_check(form == 0 ? "bias row, rows q.seq and every stride 0" : "bias row, rows 1", &d, &q, &k, &v, &out, 1);
    }
    free(row); tb_free(&q); tb_free(&k); tb_free(&v); tb_free(&out);
}

/* our own fp16/bf16 conversions against values fixed by the IEEE formats */
static void test_conversions(void) {
    T_CHECK(t_f32_to_f16(1.0f) == 0x3C00u && t_f32_to_f16(-2.0f) == 0xC000u && t_f32_to_f16(65504.0f) == 0x7BFFu,
            "f16 encode of exact values");
    T_CHECK(t_f32_to_f16(65520.0f) == 0x7C00u && t_f32_to_f16(65519.0f) == 0x7BFFu, "f16 overflow threshold");
    T_CHECK(t_f32_to_f16(1.0f + 1.0f / 2048.0f) == 0x3C00u && t_f32_to_f16(1.0f + 3.0f / 2048.0f) == 0x3C02u,
            "f16 ties to even");
    T_CHECK(t_f32_to_f16(5.9604645e-8f) == 0x0001u && t_f32_to_f16(2.9802322e-8f) == 0x0000u &&
            t_f32_to_f16(4.5e-8f) == 0x0001u && t_f32_to_f16(6.0975552e-5f) == 0x03FFu, "f16 subnormals");
    /* 2^-24 through a float object: under FLT_EVAL_METHOD 2 (x87, -m32) the literal itself keeps
       long double precision, where 5.9604645e-8 is not 2^-24 */
    volatile float tiny = 5.9604645e-8f;
    T_CHECK(t_f16_to_f32(0x0001u) == tiny && t_f16_to_f32(0x7BFFu) == 65504.0f && t_f16_to_f32(0xC000u) == -2.0f &&
            t_f16_to_f32(0x7C00u) == INFINITY && t_f16_to_f32(0x7E00u) != t_f16_to_f32(0x7E00u), "f16 decode");
    T_CHECK(t_f32_to_bf16(1.0f) == 0x3F80u && t_f32_to_bf16(1.0f + 1.0f / 256.0f) == 0x3F80u &&
            t_f32_to_bf16(1.0f + 3.0f / 256.0f) == 0x3F82u && t_bf16_to_f32(0x3F81u) == 1.0f + 1.0f / 128.0f,
            "bf16 round to nearest even");
    {   /* exhaustive: every finite f16 survives decode -> encode */
        unsigned u;
        int bad = 0;
        for (u = 0; u < 65536u; ++u)
            if (((u >> 10) & 0x1Fu) != 0x1Fu && t_f32_to_f16(t_f16_to_f32((uint16_t)u)) != u) ++bad;
        T_CHECK(bad == 0, "f16 round trip failed for %d values", bad);
    }
}

/* ---------------------------------------------------------------------------------------- */

/* The mechanism seam: every public entry point dispatches on attn_desc.kind. A value that is
   not a kind is ATTN_ERR_KIND from each of them; a kind without the operation is
   ATTN_ERR_KIND_OP; both before anything is written. attn_kind_name follows ATTN__KIND_LIST. */
#define T_KIND_VALUE(name, value, id, text) value,
#define T_KIND_TEXT(name, value, id, text) text,
static void test_seam(void) {
    static const int kinds[] = { ATTN__KIND_LIST(T_KIND_VALUE) };
    static const char *const texts[] = { ATTN__KIND_LIST(T_KIND_TEXT) };
    const int n_kinds = (int)(sizeof kinds / sizeof kinds[0]);
    float q[2 * 3 * 2 * 4], k[2 * 5 * 1 * 4], v[2 * 5 * 1 * 3], out[2 * 3 * 2 * 3], lse[2 * 2 * 3], st[64];
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 2, 3, 2, 4), tk = attn_tensor_dense(k, ATTN_F32, 2, 5, 1, 4);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 2, 5, 1, 3), to = attn_tensor_dense(out, ATTN_F32, 2, 3, 2, 3);
    attn_desc d;
    attn_state state;
    size_t bytes;
    int kv, i, is_kind;
    for (i = 0; i < (int)(sizeof q / sizeof q[0]); ++i) q[i] = (float)i * 0.01f;
    for (i = 0; i < (int)(sizeof k / sizeof k[0]); ++i) k[i] = (float)i * -0.02f;
    for (i = 0; i < (int)(sizeof v / sizeof v[0]); ++i) v[i] = (float)i;
    T_CHECK(kinds[0] == ATTN_SOFTMAX && ATTN_SOFTMAX == 0, "ATTN_SOFTMAX must be kind 0 (the zero desc)");
    for (kv = -2; kv <= (int)ATTN_KIND_END + 1; ++kv) {
        const char *name = attn_kind_name((attn_kind)kv);
        attn_status s1, s2, s3, s4;
        is_kind = -1;
        for (i = 0; i < n_kinds; ++i) if (kinds[i] == kv) is_kind = i;
        T_CHECK(i == 0 || is_kind < 0 || kv < (int)ATTN_KIND_END, "kind %d at or above ATTN_KIND_END", kv);
        if (is_kind >= 0) {
            T_CHECK(name && strcmp(name, texts[is_kind]) == 0, "attn_kind_name(%d) = \"%s\"", kv, name ? name : "(null)");
            continue;
        }
        T_CHECK(name && strcmp(name, "unknown attn_kind") == 0, "attn_kind_name(%d) (no such kind) = \"%s\"", kv, name ? name : "(null)");
        memset(&d, 0, sizeof d);
        d.kind = (attn_kind)kv;
        t_sentinel(out, sizeof out, 5); t_sentinel(lse, sizeof lse, 6);
        s1 = attn_forward(&d, tq, tk, tv, to, lse);
        s2 = attn_workspace_size(&d, tq, tk, tv, &bytes);
        s3 = attn_state_size(&d, tq, tk, tv, &bytes);
        s4 = attn_step(&d, tq, tk, tv, &state, to);
        T_CHECK(s1 == ATTN_ERR_KIND && s2 == ATTN_ERR_KIND && s3 == ATTN_ERR_KIND && s4 == ATTN_ERR_KIND,
                "kind %d: forward %s, workspace %s, state_size %s, step %s (want ATTN_ERR_KIND)", kv,
                attn_status_str(s1), attn_status_str(s2), attn_status_str(s3), attn_status_str(s4));
        T_CHECK(t_sentinel_ok(out, sizeof out, 5) && t_sentinel_ok(lse, sizeof lse, 6), "kind %d: outputs written", kv);
    }
    /* softmax has no recurrent state: the state entry points refuse it, touching nothing */
    memset(&d, 0, sizeof d);
    t_sentinel(out, sizeof out, 5); t_sentinel(st, sizeof st, 7);
    memset(&state, 0, sizeof state);
    state.data = st; state.size = 64;
    {
        const attn_status s1 = attn_state_size(&d, tq, tk, tv, &bytes);
        const attn_status s2 = attn_state_init(&d, tq, tk, tv, st, 64, &state);
        const attn_status s3 = attn_step(&d, tq, tk, tv, &state, to);
        if (T_CHECK(s1 == ATTN_ERR_KIND_OP && s2 == ATTN_ERR_KIND_OP && s3 == ATTN_ERR_KIND_OP,
                    "softmax state_size %s, state_init %s, step %s (want ATTN_ERR_KIND_OP)", attn_status_str(s1),
                    attn_status_str(s2), attn_status_str(s3)))
            t_status_provoked[ATTN_ERR_KIND_OP] = 1;
        T_CHECK(t_sentinel_ok(out, sizeof out, 5) && t_sentinel_ok(st, sizeof st, 7) && state.size == 64,
                "softmax state calls wrote something");
    }
    T_CHECK(attn_state_size(&d, tq, tk, tv, NULL) == ATTN_ERR_NULL_ARG, "attn_state_size(floats NULL)");
}

/* ---------------------------------------------------------------------------------------- */
/* Robustness (issue 16): huge key lengths, ALiBi past 2^24, non-finite inputs, overlaps      */
/* ---------------------------------------------------------------------------------------- */

/* A view of one element repeated over batch and seq (stride 0): any length, no memory. */
static attn_tensor bcast_view(float *x, int B, int S) {
    attn_tensor t = attn_tensor_dense(x, ATTN_F32, B, S, 1, 1);
    t.stride_batch = 0; t.stride_seq = 0; t.stride_head = 1;
    return t;
}

/* Defect 1: a single split over more than 2^31 - 64 keys (split_keys rounded up in an int). */
static void robust_huge_keys(void) {
    float q = 1.0f, k = 1.0f, v = 2.0f, out[32], lse[32];
    const double want_lse = 1.0 + log(5.0);
    attn_desc d;
    int b, ok = 1;
    attn_status st;
    memset(&d, 0, sizeof d);
    d.causal = 1; d.window_left = 4;
    for (b = 0; b < 32; ++b) { out[b] = -7.0f; lse[b] = -7.0f; }
    {
        attn_tensor tq = attn_tensor_dense(&q, ATTN_F32, 1, 1, 1, 1);
        tq.batch = 32; tq.stride_batch = 0; tq.stride_seq = 1; tq.stride_head = 1;
        st = attn_forward(&d, tq, bcast_view(&k, 32, INT_MAX), bcast_view(&v, 32, INT_MAX),
                          attn_tensor_dense(out, ATTN_F32, 32, 1, 1, 1), lse);
    }
    T_CHECK(st == ATTN_OK, "k.seq = INT_MAX broadcast: status %s", attn_status_str(st));
    for (b = 0; b < 32; ++b) ok &= fabs(out[b] - 2.0) < 1e-6 && fabs(lse[b] - want_lse) < 1e-5;
    T_CHECK(ok, "k.seq = INT_MAX, causal, window_left 4: out[0] = %g (want 2), lse[0] = %g (want %g)",
            (double)out[0], (double)lse[0], want_lse);
}

/* Defect 2: ALiBi distances past 2^24 (positions held in float). q = 0: logits are -slope |p - j|. */
static void robust_alibi_far(void) {
    static const int sqs[3] = { 1, 20, 100 };
    const int Sk = (1 << 24) + 4;
    float kv[4] = { 1.0f, 1.0f, 1.0f, 1.0f }, slope = 3.0f, *out, *lse, *q;
    int n, i, mode;
    q = (float *)calloc(100 * 4, sizeof(float));
    out = (float *)t_xmalloc(100 * 4 * sizeof(float));
    lse = (float *)t_xmalloc(100 * sizeof(float));
    for (mode = 0; mode < 2; ++mode)
        for (n = 0; n < 3; ++n) {
            const int Sq = sqs[n];
            attn_desc d;
            attn_tensor tk = attn_tensor_dense(kv, ATTN_F32, 1, Sk, 1, 4), tv = tk;
            attn_status st;
            double worst = 0.0;
            int bad = -1;
            tk.stride_batch = 0; tk.stride_seq = 0; tk.stride_head = 4; tv = tk;
            tk.dim = 4; tv.dim = 1;
            memset(&d, 0, sizeof d);
            d.alibi_slopes = &slope;
            d.window_left = 4;
            if (mode == 0) d.causal = 1; else d.window_right = 2;
            st = attn_forward(&d, attn_tensor_dense(q, ATTN_F32, 1, Sq, 1, 4), tk, tv,
                              attn_tensor_dense(out, ATTN_F32, 1, Sq, 1, 1), lse);
            T_CHECK(st == ATTN_OK, "alibi Sk=2^24+4 Sq=%d: status %s", Sq, attn_status_str(st));
            for (i = 0; i < Sq; ++i) {
                const long long p = (long long)i + Sk - Sq;
                double sum = 0.0, e;
                long long j;
                for (j = p - 4; j <= p + (mode ? 2 : 0) && j < Sk; ++j) sum += exp(-3.0 * (double)(j > p ? j - p : p - j));
                e = fabs((double)lse[i] - log(sum));
                if (!(e <= worst)) { worst = e; bad = i; }
            }
            T_CHECK(worst < 1e-5, "alibi slope 3 past 2^24 (Sk=2^24+4, Sq=%d, %s): lse row %d off by %g",
                    Sq, mode ? "window 4/2" : "causal window 4", bad, worst);
        }
    free(q); free(out); free(lse);
}

static int row_nan(const attn_tensor *out, const float *lse, int b, int i, int h) {
    int c;
    for (c = 0; c < out->dim; ++c) { double x = t_load(out, b, i, h, c); if (x == x) return 0; }
    { const float l = lse[((size_t)b * out->heads + h) * out->seq + i]; return l != l; }
}

/* Defect 3: non-finite inputs propagate (NaN in, NaN out); only rows that see no key are 0 / -inf.
   Each shape takes a different kernel path: decoding (narrow/fused), decoding split over keys,
   prefill tiles, prefill tiles split over keys; every storage dtype (bf16: the bf16 tiles). */
static void robust_nonfinite(void) {
    static const int shapes[5][4] = { { 1, 37, 2, 1 }, { 1, 3000, 1, 1 }, { 70, 50, 2, 2 }, { 5, 2000, 1, 1 }, { 3, 9, 4, 2 } };
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng r = t_rng_seed(1616);
    int sh, di, kind;
    for (sh = 0; sh < 5; ++sh)
        for (di = 0; di < 3; ++di)
            for (kind = 0; kind < 6; ++kind) {
                const int Sq = shapes[sh][0], Sk = shapes[sh][1], Hq = shapes[sh][2], Hkv = shapes[sh][3], B = 2, D = 8;
                const int g = Hq / Hkv;
                const attn_dtype dt = dts[di];
                simple_call c;
                float *bias = NULL;
                int lk[2];
                attn_status st;
                int b, i, h, bad = 0, first = -1, n_nan = 0;
                sc_init(&c, dt, ATTN_F32, B, Sq, Sk, Hq, Hkv, D, D, &r);
                if (kind == 0) {            /* NaN in q[0, Sq-1, 0, 3]: that row only */
                    t_store(&c.q.t, 0, Sq - 1, 0, 3, NAN);
                } else if (kind == 1) {     /* +inf in k[1, Sk-1, 0, 0], non-causal: rows with q[.,0] >= 0 see a +inf or NaN logit */
                    t_store(&c.k.t, 1, Sk - 1, 0, 0, INFINITY);
                } else if (kind == 2) {     /* a scale whose logits overflow to +inf: every row */
                    int e;
                    for (e = 0; e < (int)c.q.n; ++e) t_store_at(c.q.buf, dt, e, 1.0);
                    for (e = 0; e < (int)c.k.n; ++e) t_store_at(c.k.buf, dt, e, 1.0);
                    c.d.scale = 3e38f;
                } else if (kind == 3) {     /* bias +inf at (row Sq-1, key 0) of every batch and head */
                    bias = (float *)calloc((size_t)Sq * Sk, sizeof(float));
                    bias[(size_t)(Sq - 1) * Sk] = INFINITY;
                    c.d.bias = attn_bias_dense(bias, 1, 1, Sq, Sk);
                } else if (kind == 4) {     /* NaN in q of rows that see no key (seqlens_k[0] = 0): stay 0 / -inf */
                    c.d.causal = 1;
                    lk[0] = 0; lk[1] = Sk; c.d.seqlens_k = lk;
                    t_store(&c.q.t, 0, Sq - 1, 0, 0, NAN);
                } else {                    /* +inf in a key past seqlens_k (no row sees it): no effect */
                    c.d.causal = 1;
                    lk[0] = Sk - 1; lk[1] = Sk - 1; c.d.seqlens_k = lk;
                    t_store(&c.k.t, 0, Sk - 1, 0, 0, INFINITY);
                }
                st = sc_run(&c);
                T_CHECK(st == ATTN_OK, "non-finite #%d %s Sq=%d Sk=%d: status %s", kind, t_dt_name(dt), Sq, Sk, attn_status_str(st));
                for (b = 0; b < B; ++b)
                    for (h = 0; h < Hq; ++h)
                        for (i = 0; i < Sq; ++i) {
                            int want;   /* 0 finite, 1 NaN, 2 masked (0, -inf) */
                            if (kind == 0) want = b == 0 && i == Sq - 1 && h == 0;
                            else if (kind == 1) want = b == 1 && h / g == 0 && t_load(&c.q.t, b, i, h, 0) >= 0.0;
                            else if (kind == 2) want = 1;
                            else if (kind == 3) want = i == Sq - 1;
                            else if (kind == 4) want = b == 0 || i + Sk - Sq < 0 ? 2 : 0;
                            else want = i + Sk - 1 - Sq < 0 ? 2 : 0;
                            if (want == 1) ++n_nan;
                            if (!(want == 0 ? row_finite(&c.out.t, c.lse, b, i, h) :
                                  want == 1 ? row_nan(&c.out.t, c.lse, b, i, h) : row_masked(&c.out.t, c.lse, b, i, h))) {
                                if (first < 0) first = (b * Hq + h) * Sq + i;
                                ++bad;
                            }
                        }
                T_CHECK(bad == 0, "non-finite #%d (%s) %s Sq=%d Sk=%d Hq=%d Hkv=%d: %d rows wrong (first b,h,i = %d,%d,%d: "
                        "out[0] = %g, lse = %g); %d rows should be NaN",
                        kind, kind == 0 ? "NaN in q" : kind == 1 ? "+inf in k" : kind == 2 ? "scale 3e38" :
                        kind == 3 ? "bias +inf" : kind == 4 ? "NaN q, no key" : "+inf in an invisible key",
                        t_dt_name(dt), Sq, Sk, Hq, Hkv, bad, first < 0 ? 0 : first / Sq / Hq, first < 0 ? 0 : first / Sq % Hq,
                        first < 0 ? 0 : first % Sq, first < 0 ? 0.0 : t_load(&c.out.t, first / Sq / Hq, first % Sq, first / Sq % Hq, 0),
                        first < 0 ? 0.0 : (double)c.lse[first], n_nan);
                free(bias);
                sc_free(&c);
            }
}

/* Defect 5: outputs that share memory with inputs, with another output or with themselves, and
   KV caches whose views overlap: a specific status, nothing written. */
static void robust_overlap(void) {
    enum { B = 2, S = 5, H = 2, D = 16, N = B * S * H * D };
    static float qb[N], kb[N], vb[N], ob[N], dob[N], dqb[N], dkb[N], dvb[N], lse[B * H * S], big[4 * N];
    attn_desc d;
    attn_tensor q, k, v, o;
    attn_status st;
    t_rng r = t_rng_seed(1605);
    int i;
    memset(&d, 0, sizeof d);
    for (i = 0; i < N; ++i) { qb[i] = (float)t_normal(&r); kb[i] = (float)t_normal(&r); vb[i] = (float)t_normal(&r); dob[i] = (float)t_normal(&r); }
    q = attn_tensor_dense(qb, ATTN_F32, B, S, H, D); k = attn_tensor_dense(kb, ATTN_F32, B, S, H, D);
    v = attn_tensor_dense(vb, ATTN_F32, B, S, H, D); o = attn_tensor_dense(ob, ATTN_F32, B, S, H, D);
    T_CHECK(attn_forward(&d, q, k, v, o, lse) == ATTN_OK, "overlap fixture must succeed");
    {   /* forward: out == q, out == v, out inside k (offset by one row), lse inside q, out rows overlapping */
        int c;
        for (c = 0; c < 5; ++c) {
            attn_tensor oo = o;
            float *ll = lse;
            unsigned char *watch;
            size_t wbytes;
            if (c == 0) oo.data = qb;
            else if (c == 1) oo.data = vb;
            else if (c == 2) oo.data = kb + D;
            else if (c == 3) ll = qb + 3;
            else { oo.stride_head = D; oo.stride_seq = D; oo.stride_batch = (ptrdiff_t)S * H * D; }   /* heads of a row overlap the next row */
            watch = (unsigned char *)(c == 0 || c == 3 ? (void *)qb : c == 1 ? (void *)vb : c == 2 ? (void *)kb : (void *)ob);
            wbytes = sizeof(float) * N;
            if (c == 4) t_sentinel(ob, wbytes, 0x61);
            {
                unsigned char *copy = (unsigned char *)t_xmalloc(wbytes);
                memcpy(copy, watch, wbytes);
                t_sentinel(lse, sizeof lse, 0x62);
                if (c == 3) memcpy(copy, watch, wbytes);
                st = attn_forward(&d, q, k, v, oo, ll);
                if (T_CHECK(st == ATTN_ERR_OUT_OVERLAP && memcmp(copy, watch, wbytes) == 0 &&
                            (c == 3 || t_sentinel_ok(lse, sizeof lse, 0x62)),
                            "forward overlap case %d: %s (want %s), or an output was written", c, attn_status_str(st),
                            attn_status_str(ATTN_ERR_OUT_OVERLAP)))
                    t_status_provoked[ATTN_ERR_OUT_OVERLAP] = 1;
                free(copy);
            }
        }
        /* inputs may share memory freely: q, k, v interleaved in one packed [B, S, 3, H, D] buffer */
        {
            attn_tensor pq = attn_tensor_dense(big, ATTN_F32, B, S, H, D), pk, pv;
            pq.stride_head = D; pq.stride_seq = 3 * H * D; pq.stride_batch = (ptrdiff_t)S * 3 * H * D;
            pk = pq; pk.data = big + H * D; pv = pq; pv.data = big + 2 * H * D;
            for (i = 0; i < 3 * N; ++i) big[i] = (float)t_normal(&r);
            st = attn_forward(&d, pq, pk, pv, o, lse);
            T_CHECK(st == ATTN_OK, "packed QKV inputs (shared buffer) with a separate out: %s", attn_status_str(st));
            st = attn_forward(&d, q, q, q, o, lse);
            T_CHECK(st == ATTN_OK, "q = k = v (self-attention on one tensor): %s", attn_status_str(st));
        }
    }
    {   /* backward: dq == dout, dk == k, dv overlapping dq, dq rows overlapping */
        attn_tensor dout = attn_tensor_dense(dob, ATTN_F32, B, S, H, D);
        attn_tensor dq = attn_tensor_dense(dqb, ATTN_F32, B, S, H, D), dk = attn_tensor_dense(dkb, ATTN_F32, B, S, H, D),
                    dv = attn_tensor_dense(dvb, ATTN_F32, B, S, H, D);
        int c;
        T_CHECK(attn_forward(&d, q, k, v, o, lse) == ATTN_OK, "backward overlap fixture (forward)");
        T_CHECK(attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv) == ATTN_OK, "backward overlap fixture");
        for (c = 0; c < 5; ++c) {
            attn_tensor gq = dq, gk = dk, gv = dv;
            float *snap = (float *)t_xmalloc(sizeof(float) * N * 7);
            if (c == 0) gq.data = dob;
            else if (c == 1) gk.data = kb;
            else if (c == 2) gv.data = dqb + 7;
            else if (c == 3) { gq.stride_head = 1; gq.stride_seq = H; gq.stride_batch = (ptrdiff_t)S * H; }
            else gk.data = lse;
            memcpy(snap, qb, sizeof qb); memcpy(snap + N, kb, sizeof kb); memcpy(snap + 2 * N, vb, sizeof vb);
            memcpy(snap + 3 * N, dob, sizeof dob);
            t_sentinel(dqb, sizeof dqb, 0x71); t_sentinel(dkb, sizeof dkb, 0x72); t_sentinel(dvb, sizeof dvb, 0x73);
            st = attn_backward(&d, q, k, v, o, dout, lse, gq, gk, gv);
            if (T_CHECK(st == ATTN_ERR_BWD_OVERLAP && t_sentinel_ok(dqb, sizeof dqb, 0x71) && t_sentinel_ok(dkb, sizeof dkb, 0x72) &&
                        t_sentinel_ok(dvb, sizeof dvb, 0x73) && memcmp(snap, qb, sizeof qb) == 0 && memcmp(snap + N, kb, sizeof kb) == 0 &&
                        memcmp(snap + 2 * N, vb, sizeof vb) == 0 && memcmp(snap + 3 * N, dob, sizeof dob) == 0,
                        "backward overlap case %d: %s (want %s), or something was written", c, attn_status_str(st),
                        attn_status_str(ATTN_ERR_BWD_OVERLAP)))
                t_status_provoked[ATTN_ERR_BWD_OVERLAP] = 1;
            free(snap);
        }
    }
    {   /* KV caches: rows of k overlapping (issue 16: k.stride_batch = 1, page_size 1, one head, D 16),
           k and v in one span; append and decode refuse them; decode's out inside the cache */
        enum { P = 8 };
        static float ck[P * D], cv[P * D], kn[2 * D], vn[2 * D], qd[2 * D], od[2 * D], ld[2];
        static int table[2 * 4] = { 0, 1, 2, 3, 4, 5, 6, 7 };
        int lens[2] = { 1, 1 }, c;
        attn_kv_cache kc;
        for (i = 0; i < 2 * D; ++i) { kn[i] = (float)t_normal(&r); vn[i] = (float)t_normal(&r); qd[i] = (float)t_normal(&r); }
        for (i = 0; i < P * D; ++i) { ck[i] = (float)t_normal(&r); cv[i] = (float)t_normal(&r); }
        for (c = 0; c < 4; ++c) {
            float sk[P * D], sv[P * D];
            int sl[2];
            memset(&kc, 0, sizeof kc);
            kc.k = attn_tensor_dense(ck, ATTN_F32, P, 1, 1, D); kc.v = attn_tensor_dense(cv, ATTN_F32, P, 1, 1, D);
            kc.lens = lens; kc.batch = 2; kc.page_size = 1; kc.block_table = table; kc.max_pages = 4;
            if (c == 0) T_CHECK(attn_kv_append(&kc, attn_tensor_dense(kn, ATTN_F32, 2, 1, 1, D),
                                               attn_tensor_dense(vn, ATTN_F32, 2, 1, 1, D), NULL) == ATTN_OK,
                                "paged cache fixture: append");
            if (c == 1) { kc.k.stride_batch = 1; kc.k.stride_seq = D; kc.k.stride_head = D; }   /* pages one element apart */
            if (c == 2) kc.v.data = ck + D;                                                   /* v's span inside k's */
            if (c == 3) { kc.v.stride_batch = D; kc.v.stride_seq = 0; kc.v.stride_head = 0; kc.v.dim = D; kc.v.seq = 1;
                          kc.v.stride_seq = (ptrdiff_t)D; kc.v.stride_batch = D / 2; }          /* pages half a row apart */
            memcpy(sk, ck, sizeof sk); memcpy(sv, cv, sizeof sv); sl[0] = lens[0]; sl[1] = lens[1];
            st = attn_kv_append(&kc, attn_tensor_dense(kn, ATTN_F32, 2, 1, 1, D), attn_tensor_dense(vn, ATTN_F32, 2, 1, 1, D), NULL);
            if (c == 0) { T_CHECK(st == ATTN_OK, "paged cache: second append %s", attn_status_str(st)); continue; }
            if (T_CHECK(st == ATTN_ERR_KV_OVERLAP && memcmp(sk, ck, sizeof sk) == 0 && memcmp(sv, cv, sizeof sv) == 0 &&
                        sl[0] == lens[0] && sl[1] == lens[1],
                        "cache overlap case %d: attn_kv_append %s (want %s), or the cache was written", c, attn_status_str(st),
                        attn_status_str(ATTN_ERR_KV_OVERLAP)))
                t_status_provoked[ATTN_ERR_KV_OVERLAP] = 1;
            t_sentinel(od, sizeof od, 0x81);
            st = attn_decode(&d, attn_tensor_dense(qd, ATTN_F32, 2, 1, 1, D), &kc, attn_tensor_dense(od, ATTN_F32, 2, 1, 1, D), ld);
            T_CHECK(st == ATTN_ERR_KV_OVERLAP && t_sentinel_ok(od, sizeof od, 0x81),
                    "cache overlap case %d: attn_decode %s (want %s), or out was written", c, attn_status_str(st),
                    attn_status_str(ATTN_ERR_KV_OVERLAP));
        }
        {   /* decode: out inside the cache's v pool, lse inside k's */
            float sk[P * D], sv[P * D];
            memset(&kc, 0, sizeof kc);
            kc.k = attn_tensor_dense(ck, ATTN_F32, P, 1, 1, D); kc.v = attn_tensor_dense(cv, ATTN_F32, P, 1, 1, D);
            kc.lens = lens; kc.batch = 2; kc.page_size = 1; kc.block_table = table; kc.max_pages = 4;
            memcpy(sk, ck, sizeof sk); memcpy(sv, cv, sizeof sv);
            st = attn_decode(&d, attn_tensor_dense(qd, ATTN_F32, 2, 1, 1, D), &kc, attn_tensor_dense(cv + 5 * D, ATTN_F32, 2, 1, 1, D), ld);
            T_CHECK(st == ATTN_ERR_OUT_OVERLAP && memcmp(sv, cv, sizeof sv) == 0, "decode with out inside the cache: %s", attn_status_str(st));
            st = attn_decode(&d, attn_tensor_dense(qd, ATTN_F32, 2, 1, 1, D), &kc, attn_tensor_dense(od, ATTN_F32, 2, 1, 1, D), ck + 3);
            T_CHECK(st == ATTN_ERR_OUT_OVERLAP && memcmp(sk, ck, sizeof sk) == 0, "decode with lse inside the cache: %s", attn_status_str(st));
            st = attn_decode(&d, attn_tensor_dense(qd, ATTN_F32, 2, 1, 1, D), &kc, attn_tensor_dense(od, ATTN_F32, 2, 1, 1, D), ld);
            T_CHECK(st == ATTN_OK, "decode fixture: %s", attn_status_str(st));
        }
    }
}

static void test_robust(void) {
    robust_huge_keys();
    robust_alibi_far();
    robust_nonfinite();
    robust_overlap();
}

void test_exact(void) {
    test_conversions();
    test_tensor_helpers();
    test_bias_key_row();
    test_status_table();
    test_seam();
    test_errors();
    test_merge_errors();
    test_masks();
    test_edges();
    test_sweep();
    prop_gqa();
    prop_window();
    prop_decode();
    prop_split_merge();
    prop_threads();
    test_global_rows();
    prop_history();
    test_merge();
    fuzz_forward();
    fuzz_merge();
    test_robust();
    printf("      exact: largest passing f32 out error is %.2f of its tolerance (%s)\n", g_worst_ratio, g_worst_tag);
}

/* Every status code in ATTN__STATUS_LIST that arguments can provoke was provoked by some
   test family. Exempt: ATTN_OK and ATTN_ERR_OUT_OF_MEMORY (needs a failing allocator). */
void test_status_coverage(void) {
    int s;
    int i;
    for (i = 1; i < T_N_STATUS; ++i) {
        s = status_values[i];
        if (s == (int)ATTN_ERR_OUT_OF_MEMORY) continue;
        if (s >= 250 && s < 300) continue;   /* CUDA block: provoked by tests/cuda (its own coverage check) */
        T_CHECK(t_status_provoked[s], "status %s was never provoked by an otherwise-valid call", status_names[s]);
    }
}
