/* tests/test_amx.c - the bf16 tile kernels (attn.h 3.12: AMX tdpbf16ps where the CPU and OS
   allow it, else AVX512-BF16 vdpbf16ps) that attn_forward runs for bf16 q/k/v outside decoding.

   TOLERANCES (bf16 inputs are exact in the double reference, so only the kernels' own error
   counts): Q.K^T is exact products with fp32 sums; the probabilities P are rounded to bf16
   (relative 2^-9) for the P.V product while the row sums use fp32 P, so each output moves by
   at most 2^-9 * max|v| beyond fp32 arithmetic:
     out:   |out - ref| <= 1e-5 * max(1, max |ref| of the row) + 2^-8 * max|v| (+ one rounding
            of the output: 2^-10 |ref| f16, 2^-7 |ref| bf16)
     lse:   |lse - ref| <= 1e-5 * max(1, |ref|)   (P's rounding does not reach lse)
     fully masked rows: out exactly 0, lse exactly -inf
   attn_desc.bf16_kernels = 2 (the fp32 kernels on converted inputs, the fallback when neither AMX
   nor AVX512-BF16 is there) is held to the fp32 bound without the 2^-8 term, and = 1 (never
   AMX) to the bf16 bound; where the CPU has no AMX, bf16_kernels = 1 must equal bf16_kernels = 0 bitwise.
   Tile state: calls alternating kernels (bf16_kernels 0/1/2) and thread counts 1..3 must reproduce
   each kernel's first result bitwise; a caller workspace full of NaN bytes changes nothing.
   The AMX branch itself runs only on a CPU with AMX (the suite prints which kernels ran). */
#include "test.h"
#include "ref.h"

#define A_TOL 1e-5

typedef struct a_buf { attn_tensor t; size_t n; } a_buf;

static a_buf a_make(attn_dtype dt, int b, int s, int h, int d) {
    a_buf x;
    x.t = attn_tensor_dense(NULL, dt, b, s, h, d);
    x.n = (size_t)b * s * h * d;
    x.t.data = t_xmalloc(x.n * t_dt_size(dt));
    return x;
}

static double a_maxabs(const attn_tensor *t) {
    double m = 0.0;
    int b, s, h, c;
    for (b = 0; b < t->batch; ++b) for (s = 0; s < t->seq; ++s) for (h = 0; h < t->heads; ++h)
        for (c = 0; c < t->dim; ++c) m = fmax(m, fabs(t_load(t, b, s, h, c)));
    return m;
}

/* out/lse against the double reference; extra = the kernels' allowance (0 or 2^-8 max|v|). */
static int a_cmp(const char *tag, const double *ro, const double *rl, const attn_tensor *out, const float *lse,
                 double extra) {
    const int B = out->batch, S = out->seq, H = out->heads, Dv = out->dim;
    const double rel = t_dt_rel(out->dtype);
    double worst = 0.0, wg = 0, wr = 0;
    int b, i, h, c, masked_bad = 0, lse_bad = 0;
    for (b = 0; b < B; ++b) for (i = 0; i < S; ++i) for (h = 0; h < H; ++h) {
        const double *r = ro + (((size_t)b * S + i) * H + h) * Dv;
        const double rlv = rl[((size_t)b * H + h) * S + i];
        const double g_lse = lse[((size_t)b * H + h) * S + i];
        double mx = 1.0;
        if (rlv == -INFINITY) {
            for (c = 0; c < Dv; ++c) masked_bad += !(t_load(out, b, i, h, c) == 0.0);
            lse_bad += !(g_lse == -INFINITY);
            continue;
        }
        lse_bad += !(fabs(g_lse - rlv) <= A_TOL * fmax(1.0, fabs(rlv)));
        for (c = 0; c < Dv; ++c) mx = fmax(mx, fabs(r[c]));
        for (c = 0; c < Dv; ++c) {
            const double g = t_load(out, b, i, h, c), e = fabs(g - r[c]) / (A_TOL * mx + extra + rel * fabs(r[c]));
            if (!(e <= worst)) { worst = e != e ? INFINITY : e; wg = g; wr = r[c]; }
        }
    }
    return T_CHECK(worst <= 1.0, "%s: out %.9g vs reference %.9g (%.3g of tolerance)", tag, wg, wr, worst) &
           T_CHECK(masked_bad == 0, "%s: %d outputs of fully masked rows are not exactly 0", tag, masked_bad) &
           T_CHECK(lse_bad == 0, "%s: %d lse values off the reference", tag, lse_bad);
}

enum { M_NONE, M_CAUSAL, M_WL, M_WR, M_WLR_CAUSAL, M_DIL, M_SINK, M_GLOBAL, M_ALIBI, M_SOFTCAP, M_BIAS,
       M_SOFTCAP_BIAS, M_SOFTCAP_DIL, M_SEQLENS, M_VARLEN, M_SCALE, M_COUNT };
static const char *const a_mask_names[M_COUNT] = {
    "none", "causal", "window_left", "window_right", "window both + causal", "dilation", "sinks",
    "global", "alibi", "softcap", "bias", "softcap+bias", "softcap+dilation", "seqlens", "varlen", "scale" };

static double g_worst_bf16 = 0.0;   /* largest |out - ref| / max|v| seen on the bf16 kernels */

/* One case: bf16 q/k/v on the bf16 kernels (bf16_kernels 0 and 1) and on the fp32 fallback (2). */
static void a_case(t_rng *r, int mask, int B, int Sq, int Sk, int Hq, int Hkv, int D, int Dv, attn_dtype odt) {
    a_buf q = a_make(ATTN_BF16, B, Sq, Hq, D), k = a_make(ATTN_BF16, B, Sk, Hkv, D), v = a_make(ATTN_BF16, B, Sk, Hkv, Dv);
    a_buf o[3];
    const size_t nl = (size_t)B * Hq * Sq;
    float *lse[3], *bias = NULL, *slopes = NULL;
    double *ro = (double *)t_xmalloc((size_t)B * Sq * Hq * Dv * sizeof(double)), *rl = (double *)t_xmalloc(nl * sizeof(double));
    int seqlens_q[4], seqlens_k[4], cu_q[4], cu_k[4], m, i;
    char tag[200];
    attn_desc d;
    double vmax, err = 0.0;
    memset(&d, 0, sizeof d);
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    switch (mask) {
    case M_CAUSAL: d.causal = 1; break;
    case M_WL: d.window_left = t_irange(r, 1, 40); break;
    case M_WR: d.window_right = t_irange(r, 1, 40); break;
    case M_WLR_CAUSAL: d.causal = 1; d.window_left = t_irange(r, 1, 70); d.window_right = 3; break;
    case M_DIL: d.window_left = t_irange(r, 2, 30); d.window_right = t_irange(r, 0, 5); d.dilation = t_irange(r, 2, 3); break;
    case M_SINK: d.causal = 1; d.window_left = t_irange(r, 5, 50); d.sink_tokens = t_irange(r, 1, 9); break;
    case M_GLOBAL: d.window_left = 10; d.window_right = 10; d.global_tokens = t_irange(r, 1, 20); break;
    case M_ALIBI:
        d.causal = 1; slopes = (float *)t_xmalloc(sizeof(float) * (size_t)Hq);
        for (i = 0; i < Hq; ++i) slopes[i] = (float)ldexp(1.0, -(i + 1));
        d.alibi_slopes = slopes; break;
    case M_SOFTCAP: d.softcap = 1.5f; break;
    case M_BIAS: case M_SOFTCAP_BIAS: {
        const size_t nb = (size_t)B * Hq * Sq * Sk;
        bias = (float *)t_xmalloc(nb * sizeof(float));
        for (i = 0; i < (int)nb; ++i) bias[i] = t_chance(r, 0.05) ? -INFINITY : (float)t_normal(r);
        d.bias = attn_bias_dense(bias, B, Hq, Sq, Sk);
        if (mask == M_SOFTCAP_BIAS) { d.softcap = 2.0f; d.causal = 1; }
        break; }
    case M_SOFTCAP_DIL: d.softcap = 3.0f; d.window_left = 12; d.dilation = 2; d.causal = 1; break;
    case M_SEQLENS:
        for (i = 0; i < B; ++i) { seqlens_q[i] = t_irange(r, 0, Sq); seqlens_k[i] = t_irange(r, 0, Sk); }
        d.seqlens_q = seqlens_q; d.seqlens_k = seqlens_k; d.causal = t_irange(r, 0, 1); break;
    case M_VARLEN:      /* B must be 1: three packed sequences, one of them empty in q */
        cu_q[0] = 0; cu_q[1] = Sq / 3; cu_q[2] = Sq / 3; cu_q[3] = Sq;
        cu_k[0] = 0; cu_k[1] = Sk / 2; cu_k[2] = Sk / 2 + 5; cu_k[3] = Sk;
        d.cu_seqlens_q = cu_q; d.cu_seqlens_k = cu_k; d.varlen_batch = 3; d.causal = 1; break;
    case M_SCALE: d.scale = 0.3f; break;
    default: break;
    }
    ref_attention(&d, q.t, k.t, v.t, ro, rl);
    vmax = a_maxabs(&v.t);
    for (m = 0; m < 3; ++m) {
        attn_status s;
        o[m] = a_make(odt, B, Sq, Hq, Dv);
        lse[m] = (float *)t_xmalloc(nl * sizeof(float));
        d.bf16_kernels = m;
        d.n_threads = 1 + m;
        s = attn_forward(&d, q.t, k.t, v.t, o[m].t, lse[m]);
        snprintf(tag, sizeof tag, "amx: mask '%s' B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d Dv=%d out %s bf16_kernels=%d",
                 a_mask_names[mask], B, Sq, Sk, Hq, Hkv, D, Dv, t_dt_name(odt), m);
        if (!T_CHECK(s == ATTN_OK, "%s: status %d", tag, (int)s)) continue;
        a_cmp(tag, ro, rl, &o[m].t, lse[m], m == 2 ? 0.0 : ldexp(vmax, -8));
        if (m == 0 && odt == ATTN_F32) {
            int b, ii, h, c;
            for (b = 0; b < B; ++b) for (ii = 0; ii < Sq; ++ii) for (h = 0; h < Hq; ++h) for (c = 0; c < Dv; ++c)
                err = fmax(err, fabs(t_load(&o[0].t, b, ii, h, c) - ro[(((size_t)b * Sq + ii) * Hq + h) * Dv + c]));
            if (vmax > 0) g_worst_bf16 = fmax(g_worst_bf16, err / vmax);
        }
    }
    if (strcmp(attn_bf16_kernels(), "amx") != 0)
        T_CHECK(memcmp(o[0].t.data, o[1].t.data, o[0].n * t_dt_size(odt)) == 0 && memcmp(lse[0], lse[1], nl * sizeof(float)) == 0,
                "amx: mask '%s' D=%d: without AMX, bf16_kernels=1 must equal bf16_kernels=0 bitwise", a_mask_names[mask], D);
    for (m = 0; m < 3; ++m) { free(o[m].t.data); free(lse[m]); }
    free(q.t.data); free(k.t.data); free(v.t.data); free(ro); free(rl); free(bias); free(slopes);
}

/* Every mask over awkward head dims and lengths (not multiples of the 64 x 64 tiles). */
static void test_amx_reference(void) {
    static const int dims[][2] = { { 1, 1 }, { 7, 5 }, { 16, 16 }, { 33, 20 }, { 64, 64 }, { 100, 72 }, { 128, 128 }, { 256, 40 } };
    t_rng r = t_rng_seed(0xA3A);
    int mask, di;
    for (mask = 0; mask < M_COUNT; ++mask)
        for (di = 0; di < (int)(sizeof dims / sizeof dims[0]); ++di) {
            const int D = dims[di][0], Dv = dims[di][1];
            const int varlen = mask == M_VARLEN, B = varlen ? 1 : 2;
            const int Sq = t_irange(&r, 1, T_QUICK ? 90 : 150), Sk = mask == M_SEQLENS || varlen ? t_irange(&r, 10, 150) : t_irange(&r, 1, 150);
            const int Hkv = t_irange(&r, 1, 2), Hq = Hkv * t_irange(&r, 1, 3);
            a_case(&r, mask, B, Sq, Sk, Hq, Hkv, D, Dv, di % 3 == 2 ? ATTN_BF16 : di % 3 == 1 ? ATTN_F16 : ATTN_F32);
        }
    /* long keys with few row blocks: the keys are split (flash-decoding) and merged */
    a_case(&r, M_NONE, 1, 70, 1500, 1, 1, 64, 64, ATTN_F32);
    a_case(&r, M_CAUSAL, 1, 1100, 1100, 1, 1, 32, 48, ATTN_F32);
    a_case(&r, M_SINK, 1, 130, 1400, 2, 1, 128, 128, ATTN_F32);
    /* global rows alone on the key blocks past their tile's window (several blocks, GQA) */
    a_case(&r, M_GLOBAL, 1, 400, 400, 4, 2, 64, 64, ATTN_F32);
    /* Sq = 1 with Hq/Hkv = 1 is decoding (fp32 narrow kernels), 17 rows of a group are not */
    a_case(&r, M_CAUSAL, 2, 1, 300, 4, 4, 64, 64, ATTN_F32);
    a_case(&r, M_CAUSAL, 1, 1, 300, 17, 1, 64, 64, ATTN_F32);
    printf("      amx: bf16 kernels in use: %s; largest |out - ref| / max|v| on them %.2e (bound 2^-9 = %.2e)\n",
           attn_bf16_kernels(), g_worst_bf16, ldexp(1.0, -9));
}

/* Alternating kernels and thread counts: every result equals its kernel's first bitwise, so
   no tile configuration or data leaks from a call, a thread or a kernel into another. */
static void test_amx_state(void) {
    const int B = 1, S = 200, H = 4, D = 72;
    a_buf q = a_make(ATTN_BF16, B, S, H, D), k = a_make(ATTN_BF16, B, S, H, D), v = a_make(ATTN_BF16, B, S, H, D);
    a_buf first[3], o = a_make(ATTN_F32, B, S, H, D);
    const size_t bytes = o.n * sizeof(float);
    t_rng r = t_rng_seed(77);
    int it, m, nt, bad = 0;
    attn_desc d;
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
    memset(&d, 0, sizeof d);
    d.causal = 1; d.window_left = 90;
    for (m = 0; m < 3; ++m) {
        first[m] = a_make(ATTN_F32, B, S, H, D);
        d.bf16_kernels = m; d.n_threads = 1;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, first[m].t, NULL) == ATTN_OK, "amx state: first call, bf16_kernels=%d", m);
    }
    for (it = 0; it < (T_QUICK ? 2 : 4); ++it)
        for (nt = 1; nt <= 3; ++nt)
            for (m = 0; m < 3; ++m) {
                const int mm = (m + it) % 3;
                d.bf16_kernels = mm; d.n_threads = nt;
                memset(o.t.data, 0xFF, bytes);
                if (attn_forward(&d, q.t, k.t, v.t, o.t, NULL) != ATTN_OK || memcmp(o.t.data, first[mm].t.data, bytes) != 0) ++bad;
            }
    T_CHECK(bad == 0, "amx state: %d of the alternating calls differ from their kernel's first result", bad);
    {   /* a caller workspace of exactly the size asked for, full of NaN bytes */
        size_t ws = 0;
        void *w;
        d.bf16_kernels = 0; d.n_threads = 2;
        T_CHECK(attn_workspace_size(&d, q.t, k.t, v.t, &ws) == ATTN_OK, "amx state: attn_workspace_size");
        w = t_xmalloc(ws);
        memset(w, 0xFF, ws);
        d.workspace = w; d.workspace_size = ws;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, NULL) == ATTN_OK && memcmp(o.t.data, first[0].t.data, bytes) == 0,
                "amx state: a NaN-filled caller workspace changed the result");
        d.workspace_size = ws - 1;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, NULL) == ATTN_ERR_WORKSPACE, "amx state: workspace one byte short");
        free(w);
    }
    for (m = 0; m < 3; ++m) free(first[m].t.data);
    free(o.t.data); free(q.t.data); free(k.t.data); free(v.t.data);
}

/* attn_desc.bf16_kernels outside 0..2: ATTN_ERR_BF16_KERNELS, nothing written, same from attn_workspace_size. */
static void test_amx_errors(void) {
    static const int bad_values[] = { -1, 3, INT_MAX, INT_MIN };
    a_buf q = a_make(ATTN_BF16, 1, 9, 2, 8), k = a_make(ATTN_BF16, 1, 9, 2, 8), v = a_make(ATTN_BF16, 1, 9, 2, 8);
    a_buf o = a_make(ATTN_F32, 1, 9, 2, 8);
    float lse[18];
    t_rng r = t_rng_seed(5);
    int i;
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
    for (i = 0; i < 4; ++i) {
        attn_desc d;
        size_t ws = 12345;
        attn_status s, s2;
        memset(&d, 0, sizeof d);
        d.bf16_kernels = bad_values[i];
        t_sentinel(o.t.data, o.n * sizeof(float), 0x5A); t_sentinel(lse, sizeof lse, 0x5B);
        s = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
        s2 = attn_workspace_size(&d, q.t, k.t, v.t, &ws);
        if (T_CHECK(s == ATTN_ERR_BF16_KERNELS && s2 == ATTN_ERR_BF16_KERNELS, "amx: bf16_kernels=%d gave %d / %d", bad_values[i], (int)s, (int)s2))
            t_status_provoked[ATTN_ERR_BF16_KERNELS] = 1;
        T_CHECK(strstr(attn_status_str(s), "bf16_kernels") != NULL, "amx: message does not name the field");
        T_CHECK(t_sentinel_ok(o.t.data, o.n * sizeof(float), 0x5A) && t_sentinel_ok(lse, sizeof lse, 0x5B) && ws == 12345,
                "amx: bf16_kernels=%d wrote outputs", bad_values[i]);
    }
    free(o.t.data); free(q.t.data); free(k.t.data); free(v.t.data);
}

/* Dropout and in-kernel RoPE are not on the bf16 tile kernels: such calls must run the fp32
   kernels, bit for bit what bf16_kernels = 2 gives (a bf16 path that ignored them would differ). */
static void test_amx_uncovered_options(void) {
    const int B = 1, S = 96, H = 2, D = 64;
    a_buf q = a_make(ATTN_BF16, B, S, H, D), k = a_make(ATTN_BF16, B, S, H, D), v = a_make(ATTN_BF16, B, S, H, D);
    a_buf o0 = a_make(ATTN_F32, B, S, H, D), o2 = a_make(ATTN_F32, B, S, H, D);
    const size_t bytes = o0.n * sizeof(float);
    t_rng r = t_rng_seed(91);
    int opt;
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0); t_fill_normal(&v.t, &r, 1.0);
    for (opt = 0; opt < 2; ++opt) {
        attn_desc d;
        memset(&d, 0, sizeof d);
        d.causal = 1;
        if (opt == 0) { d.dropout_p = 0.25f; d.dropout_seed = 7; }
        else d.rope = ATTN_ROPE_HALF;
        d.bf16_kernels = 0;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, o0.t, NULL) == ATTN_OK, "amx: %s call failed", opt ? "rope" : "dropout");
        d.bf16_kernels = 2;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, o2.t, NULL) == ATTN_OK, "amx: %s fp32 call failed", opt ? "rope" : "dropout");
        T_CHECK(memcmp(o0.t.data, o2.t.data, bytes) == 0, "amx: bf16 q/k/v with %s must run the fp32 kernels",
                opt ? "in-kernel RoPE" : "dropout");
    }
    free(o0.t.data); free(o2.t.data); free(q.t.data); free(k.t.data); free(v.t.data);
}

void test_amx(void) {
    const char *kn = attn_bf16_kernels();
    T_CHECK(strcmp(kn, "amx") == 0 || strcmp(kn, "avx512bf16") == 0 || strcmp(kn, "none") == 0,
            "attn_bf16_kernels() = %s", kn);
    test_amx_errors();
    test_amx_reference();
    test_amx_state();
    test_amx_uncovered_options();
}
