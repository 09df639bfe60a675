/* tests/test_kernels.c - the SIMD building blocks and the decoding path.
   - the vector exp and tanh of every x86 kernel set this CPU runs, against libm in double,
     over the whole input range the softmax can see (stated bounds below);
   - decoding (few query rows: the narrow, all-KV-heads-per-task, split-KV path) against the
     double reference, with padding, windows, sinks, ALiBi, softcap, f16/bf16 caches;
   - the same bits for every thread count, and through a caller's parallel hook.
   This file includes the implementation privately (ATTN_STATIC) to reach the internal
   vector functions; everything else goes through the public API. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#define ATTN_STATIC
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "test.h"
#if defined(__unix__)
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#include "ref.h"

/* Accuracy bounds the vector functions are held to. */
#define EXP_MAX_ULP   2.0      /* relative, on [-87, 88.3] (softmax only feeds it x <= 0) */
#define EXP_ABS_LOW   1.25e-38 /* absolute, below -87 (AVX2 flushes to 0 below -87.3) */
#define TANH_MAX_ERR  3.0e-7   /* absolute, and 4 ulp relative for |x| >= 2^-10 */

static double ulp_of(double x) {
    int e;
    frexp(x, &e);                               /* x = m 2^e, 0.5 <= |m| < 1 */
    return ldexp(1.0, (e - 24 < -149) ? -149 : e - 24);
}

typedef void (*vec_fn)(const float *x, float *y);   /* 16 inputs -> 16 outputs */

#if defined(ATTN__X86_SIMD)
ATTN__T512 static void exp16_avx512(const float *x, float *y) { _mm512_storeu_ps(y, attn__exp512(_mm512_loadu_ps(x))); }
ATTN__T512 static void tanh16_avx512(const float *x, float *y) { _mm512_storeu_ps(y, attn__tanh512(_mm512_loadu_ps(x))); }
ATTN__T256 static void exp16_avx2(const float *x, float *y) {
    _mm256_storeu_ps(y, attn__exp256(_mm256_loadu_ps(x)));
    _mm256_storeu_ps(y + 8, attn__exp256(_mm256_loadu_ps(x + 8)));
}
ATTN__T256 static void tanh16_avx2(const float *x, float *y) {
    _mm256_storeu_ps(y, attn__tanh256(_mm256_loadu_ps(x)));
    _mm256_storeu_ps(y + 8, attn__tanh256(_mm256_loadu_ps(x + 8)));
}
#endif

#if defined(ATTN__NEON)
static void exp16_neon(const float *x, float *y) {
    int i;
    for (i = 0; i < 16; i += 4) vst1q_f32(y + i, attn__exp_neon(vld1q_f32(x + i)));
}
static void tanh16_neon(const float *x, float *y) {
    int i;
    for (i = 0; i < 16; i += 4) vst1q_f32(y + i, attn__tanh_neon(vld1q_f32(x + i)));
}
#endif

static void check_exp(const char *isa, vec_fn f) {
    double worst_ulp = 0.0, worst_low = 0.0;
    float x[16], y[16];
    const int n = 1 << 21;
    int i, e;
    for (i = 0; i < n; i += 16) {
        for (e = 0; e < 16; ++e) x[e] = (float)(-104.0 + (88.3 + 104.0) * (double)(i + e) / n);
        f(x, y);
        for (e = 0; e < 16; ++e) {
            const double ref = exp((double)x[e]), err = fabs((double)y[e] - ref);
            if (x[e] >= -87.0f) { if (err / ulp_of(ref) > worst_ulp) worst_ulp = err / ulp_of(ref); }
            else if (err > worst_low) worst_low = err;
        }
    }
    T_CHECK(worst_ulp <= EXP_MAX_ULP, "%s exp: %.2f ulp on [-87, 88.3] (bound %.1f)", isa, worst_ulp, EXP_MAX_ULP);
    T_CHECK(worst_low <= EXP_ABS_LOW, "%s exp: abs error %.3g below -87 (bound %.3g)", isa, worst_low, EXP_ABS_LOW);
    for (e = 0; e < 16; ++e) x[e] = 0.0f;
    x[1] = -INFINITY; x[2] = NAN; x[3] = -1e30f; x[4] = 1e-30f;
    f(x, y);
    T_CHECK(y[0] == 1.0f, "%s exp(0) = %.9g, want 1", isa, y[0]);
    T_CHECK(y[1] == 0.0f, "%s exp(-inf) = %.9g, want 0 (masked keys must weigh nothing)", isa, y[1]);
    T_CHECK(y[2] != y[2], "%s exp(NaN) = %.9g, want NaN", isa, y[2]);
    T_CHECK(y[3] == 0.0f, "%s exp(-1e30) = %.9g, want 0", isa, y[3]);
    T_CHECK(y[4] == 1.0f, "%s exp(1e-30) = %.9g, want 1", isa, y[4]);
    printf("      %s exp: max %.2f ulp on [-87, 88.3], max abs %.2g below\n", isa, worst_ulp, worst_low);
}

static void check_tanh(const char *isa, vec_fn f) {
    double worst = 0.0, worst_rel = 0.0;
    float x[16], y[16];
    const int n = 1 << 20;
    int i, e;
    for (i = 0; i < n; i += 16) {
        for (e = 0; e < 16; ++e) {
            const double t = (double)(i + e) / n;            /* dense near 0, out to +-30 */
            x[e] = (float)((e & 1 ? -1.0 : 1.0) * 30.0 * t * t * t);
        }
        f(x, y);
        for (e = 0; e < 16; ++e) {
            const double ref = tanh((double)x[e]), err = fabs((double)y[e] - ref);
            if (err > worst) worst = err;
            if (fabs(x[e]) >= 1.0 / 1024 && err / ulp_of(ref) > worst_rel) worst_rel = err / ulp_of(ref);
        }
    }
    T_CHECK(worst <= TANH_MAX_ERR, "%s tanh: abs error %.3g (bound %.3g)", isa, worst, TANH_MAX_ERR);
    T_CHECK(worst_rel <= 4.0, "%s tanh: %.2f ulp for |x| >= 2^-10 (bound 4)", isa, worst_rel);
    printf("      %s tanh: max abs %.2g, max %.2f ulp for |x| >= 2^-10\n", isa, worst, worst_rel);
}

static void test_vector_math(void) {
#if defined(ATTN__X86_SIMD) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) { check_exp("avx512", exp16_avx512); check_tanh("avx512", tanh16_avx512); }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) { check_exp("avx2", exp16_avx2); check_tanh("avx2", tanh16_avx2); }
#endif
#if defined(ATTN__NEON)
    check_exp("neon", exp16_neon); check_tanh("neon", tanh16_neon);
#endif
    printf("      kernels in use: %s\n", attn__pick_isa()->name);
}

/* attn__sgemm_1t2 (C = op(A1) op(B1) + op(A2) op(B2) + beta C) through the kernel the CPU
   runs, and the in-place path (attn__gemm_1t2_direct) of every kernel with a ukr2 the CPU
   runs, against double sums: random m, n, k1, k2 (0 included) up to 40, every transpose of
   either segment, beta 0 / 1 / other, operands at a padded leading dimension whose padding
   holds NaN (a padding float summed into C shows), and C's padding that must survive. The
   edge tiles (AVX-512 8- and 4-row, AVX2 4-row kernels; partial columns) come up among them. */
static void check_gemm2(const char *name, const attn__gemm_kern *K, t_rng *r, int cases) {
    enum { MX = 40, LD = MX + 3 };
    static float A[2][LD * LD], B[2][LD * LD], C[LD * LD], C0[LD * LD];
    static float ws[2 * MX * (MX + 32 + MX + 14) + 64];
    float *wa = ws + (16 - ((uintptr_t)ws / sizeof(float)) % 16) % 16;
    const float betas[3] = { 0.0f, 1.0f, -0.75f };
    int c, bad = 0, guard = 0;
    for (c = 0; c < cases; ++c) {
        const int m = t_irange(r, 1, MX), n = t_irange(r, 1, MX), ks[2] = { t_irange(r, 0, MX), t_irange(r, 0, MX) };
        const int ta[2] = { t_irange(r, 0, 1), t_irange(r, 0, 1) }, tb[2] = { t_irange(r, 0, 1), t_irange(r, 0, 1) };
        const float beta = betas[t_irange(r, 0, 2)];
        const ptrdiff_t ld = LD;
        int s, i, p;
        for (s = 0; s < 2; ++s)
            for (i = 0; i < LD * LD; ++i) {   /* op(X) rows / columns within the shape: values; the rest NaN */
                const int row = i / LD, col = i % LD;
                const int ina = ta[s] ? row < ks[s] && col < m : row < m && col < ks[s];
                const int inb = tb[s] ? row < n && col < ks[s] : row < ks[s] && col < n;
                A[s][i] = ina ? (float)t_normal(r) : NAN;
                B[s][i] = inb ? (float)t_normal(r) : NAN;
            }
        for (i = 0; i < LD * LD; ++i) C0[i] = C[i] = i / LD < m && i % LD < n ? (float)t_normal(r) : 1234.5f;
        if (K) attn__gemm_1t2_direct(K, wa, m, n, beta, C, ld, ta[0], tb[0], ks[0], A[0], ld, B[0], ld, ta[1], tb[1], ks[1], A[1], ld, B[1], ld);
        else attn__sgemm_1t2(wa, m, n, beta, C, ld, ta[0], tb[0], ks[0], A[0], ld, B[0], ld, ta[1], tb[1], ks[1], A[1], ld, B[1], ld);
        for (i = 0; i < LD * LD; ++i) {
            const int row = i / LD, col = i % LD;
            double want, mag;
            if (row >= m || col >= n) { guard += memcmp(&C[i], &C0[i], 4) != 0; continue; }
            want = beta == 0.0f ? 0.0 : (double)beta * C0[i];
            mag = fabs(want);
            for (s = 0; s < 2; ++s)
                for (p = 0; p < ks[s]; ++p) {
                    const double x = (double)(ta[s] ? A[s][p * LD + row] : A[s][row * LD + p]) *
                                     (tb[s] ? B[s][col * LD + p] : B[s][p * LD + col]);
                    want += x; mag += fabs(x);
                }
            bad += !(fabs(C[i] - want) <= (ks[0] + ks[1] + 2) * ldexp(mag, -23) + 1e-30);
        }
    }
    T_CHECK(bad == 0, "%s attn__sgemm_1t2: %d elements off the double sum", name, bad);
    T_CHECK(guard == 0, "%s attn__sgemm_1t2: %d floats written outside C", name, guard);
}

static void test_gemm2(void) {
    t_rng r = t_rng_seed(4242);
    check_gemm2(attn__gemm_pick()->name, NULL, &r, 300);
#if defined(ATTN__X86_SIMD) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) check_gemm2("avx512 in place", &attn__gemm_avx512, &r, 300);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) check_gemm2("avx2 in place", &attn__gemm_avx2, &r, 300);
#endif
}

static attn_pool *g_pool;   /* attn_pool with 3 threads (NULL without threads: runs inline) */

/* A caller's "thread pool": runs tasks in reverse order on pretend thread 1. */
static void reverse_pool(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    (void)user; (void)n_threads;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, n_threads > 1 ? 1 : 0);
}

/* One decoding step (Sq query rows per sequence against a cache of Lk) vs the reference. */
static void check_decode(t_rng *r, int B, int Sq, int Hq, int Hkv, int D, int Dv, int Lk, attn_dtype dt, const attn_desc *d0) {
    attn_desc d = *d0;
    const size_t nq = (size_t)B * Sq * Hq * D, nk = (size_t)B * Lk * Hkv * D, nv = (size_t)B * Lk * Hkv * Dv,
                 no = (size_t)B * Sq * Hq * Dv;
    void *q = t_xmalloc(nq * t_dt_size(dt)), *k = t_xmalloc(nk * t_dt_size(dt)), *v = t_xmalloc(nv * t_dt_size(dt));
    float *out = (float *)t_xmalloc(no * sizeof(float)), *out2 = (float *)t_xmalloc(no * sizeof(float));
    float *lse = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float)), *lse2 = (float *)t_xmalloc((size_t)B * Hq * Sq * sizeof(float));
    double *ro = (double *)t_xmalloc(no * sizeof(double)), *rl = (double *)t_xmalloc((size_t)B * Hq * Sq * sizeof(double));
    double *got = (double *)t_xmalloc(no * sizeof(double));
    attn_tensor tq = attn_tensor_dense(q, dt, B, Sq, Hq, D), tk = attn_tensor_dense(k, dt, B, Lk, Hkv, D);
    attn_tensor tv = attn_tensor_dense(v, dt, B, Lk, Hkv, Dv), to = attn_tensor_dense(out, ATTN_F32, B, Sq, Hq, Dv);
    attn_status s;
    size_t i;
    int threads[3] = {1, 2, 5}, t, same = 1;
    t_fill_normal(&tq, r, 1.0); t_fill_normal(&tk, r, 1.0); t_fill_normal(&tv, r, 1.0);
    s = attn_forward(&d, tq, tk, tv, to, lse);
    T_CHECK(s == ATTN_OK, "decode B%d Sq%d %d/%d D%d Dv%d Lk%d %s: %s", B, Sq, Hq, Hkv, D, Dv, Lk, t_dt_name(dt), attn_status_str(s));
    ref_attention(&d, tq, tk, tv, ro, rl);
    for (i = 0; i < no; ++i) got[i] = out[i];
    {
        const double err = t_max_norm_err(ro, got, no), tol = 1e-5;
        double lerr = 0.0;
        for (i = 0; i < (size_t)B * Hq * Sq; ++i) {
            const double e = rl[i] == -INFINITY ? (lse[i] == -INFINITY ? 0.0 : INFINITY) : fabs(lse[i] - rl[i]) / (1.0 + fabs(rl[i]));
            if (!(e <= lerr)) lerr = e;
        }
        T_CHECK(err <= tol && lerr <= tol, "decode B%d Sq%d %d/%d D%d Dv%d Lk%d %s causal%d win%d sink%d global%d softcap%g "
                "alibi%d lens%d: out err %.3g lse err %.3g", B, Sq, Hq, Hkv, D, Dv, Lk, t_dt_name(dt), d.causal, d.window_left,
                d.sink_tokens, d.global_tokens, d.softcap, d.alibi_slopes != NULL, d.seqlens_k != NULL, err, lerr);
    }
    for (t = 0; t < 5; ++t) {                     /* same bits for any thread count, any pool */
        attn_desc d2 = d;
        if (t < 3) d2.n_threads = threads[t];
        else if (t == 3) { d2.parallel = reverse_pool; d2.n_threads = 2; }
        else { d2.parallel = attn_pool_parallel; d2.parallel_user = g_pool; d2.n_threads = 3; }
        s = attn_forward(&d2, tq, tk, tv, attn_tensor_dense(out2, ATTN_F32, B, Sq, Hq, Dv), lse2);
        same &= s == ATTN_OK && memcmp(out, out2, no * sizeof(float)) == 0 &&
                memcmp(lse, lse2, (size_t)B * Hq * Sq * sizeof(float)) == 0;
    }
    T_CHECK(same, "decode B%d Sq%d Lk%d: results differ between thread counts / a custom pool", B, Sq, Lk);
    free(q); free(k); free(v); free(out); free(out2); free(lse); free(lse2); free(ro); free(rl); free(got);
}

/* One query row per sequence over random shapes and options: on AVX-512 and AVX2 this is the
   fused decoding kernel (tiles of up to 8 rows, 12 and 16 rows as two tiles; row counts
   rounded to 1/2/4/8, chunk tails, head dims that leave a partial P.V pass, two key ranges
   from sinks + window), the staged one on the other kernels. */
static void test_decode_sweep(void) {
    static const int groups[] = {1, 2, 3, 4, 5, 8, 12, 16}, dims[] = {16, 32, 48, 64, 80, 128, 256};
    static const int lens[] = {1, 2, 15, 16, 17, 31, 33, 100, 257, 600};
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    t_rng r = t_rng_seed(2024);
    float slopes[48];
    int it, i, seqlens_k[2];
    for (i = 0; i < 48; ++i) slopes[i] = (float)pow(2.0, -8.0 * (i + 1) / 48);
    for (it = 0; it < (T_QUICK ? 40 : 160); ++it) {
        attn_desc d;
        const int g = t_pick(&r, groups, 8), Hkv = t_irange(&r, 1, 3), D = t_pick(&r, dims, 7);
        const int Dv = t_chance(&r, 0.5) ? D : t_pick(&r, dims, 7), B = t_irange(&r, 1, 2);
        const int Lk = t_chance(&r, 0.5) ? t_pick(&r, lens, 10) : t_irange(&r, 1, 600);
        memset(&d, 0, sizeof d);
        d.causal = t_chance(&r, 0.5);
        if (t_chance(&r, 0.3)) d.window_left = t_irange(&r, 1, 60);
        if (t_chance(&r, 0.3)) d.sink_tokens = t_irange(&r, 1, 8);
        if (t_chance(&r, 0.15)) d.global_tokens = t_irange(&r, 1, 5);
        if (t_chance(&r, 0.3)) d.softcap = (float)t_irange(&r, 5, 50);
        if (t_chance(&r, 0.3)) d.alibi_slopes = slopes;
        if (t_chance(&r, 0.3)) {
            for (i = 0; i < B; ++i) seqlens_k[i] = t_irange(&r, 0, Lk);
            d.seqlens_k = seqlens_k;
        }
        d.n_threads = t_irange(&r, 1, 3);
        check_decode(&r, B, 1, g * Hkv, Hkv, D, Dv, Lk, dts[t_irange(&r, 0, 2)], &d);
    }
}

/* Several query rows per sequence (speculative steps, up to 32 rows per KV head: 4 fused
   tiles): the fused kernel takes the keys every row sees, the staged tiles the edges only some
   rows see (the last Sq - 1 keys under a causal mask, the start of a window), and ALiBi
   distances differ per row. */
static void test_decode_steps(void) {
    static const int groups[] = {1, 2, 4, 8}, dims[] = {16, 64, 128};
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    t_rng r = t_rng_seed(2025);
    float slopes[48];
    int it, i;
    for (i = 0; i < 48; ++i) slopes[i] = (float)pow(2.0, -8.0 * (i + 1) / 48);
    for (it = 0; it < (T_QUICK ? 30 : 120); ++it) {
        attn_desc d;
        const int g = t_pick(&r, groups, 4), Sq = t_irange(&r, 2, 32 / g), Hkv = t_irange(&r, 1, 2);
        const int D = t_pick(&r, dims, 3), Lk = t_irange(&r, Sq, 400);
        memset(&d, 0, sizeof d);
        d.causal = t_chance(&r, 0.8);
        if (t_chance(&r, 0.3)) d.window_left = t_irange(&r, 1, 60);
        if (t_chance(&r, 0.3)) d.sink_tokens = t_irange(&r, 1, 8);
        if (t_chance(&r, 0.1)) d.global_tokens = t_irange(&r, 1, 5);
        if (t_chance(&r, 0.3)) d.softcap = (float)t_irange(&r, 5, 50);
        if (t_chance(&r, 0.4)) d.alibi_slopes = slopes;
        d.n_threads = t_irange(&r, 1, 3);
        check_decode(&r, t_irange(&r, 1, 2), Sq, g * Hkv, Hkv, D, D, Lk, dts[t_irange(&r, 0, 2)], &d);
    }
}

static void test_decoding(void) {
    t_rng r = t_rng_seed(77);
    attn_desc d;
    int seqlens_q[3] = {1, 0, 1}, seqlens_k[3] = {900, 37, 1};
    float slopes[32];
    int i;
    memset(&d, 0, sizeof d);
    check_decode(&r, 1, 1, 32, 8, 128, 128, T_QUICK ? 700 : 3000, ATTN_F32, &d);    /* split-KV, GQA 4 */
    check_decode(&r, 2, 1, 8, 8, 64, 64, 1025, ATTN_BF16, &d);                    /* MHA, bf16 cache */
    check_decode(&r, 1, 1, 16, 1, 80, 80, 777, ATTN_F16, &d);                      /* MQA, 16 rows */
    d.causal = 1;
    check_decode(&r, 1, 3, 12, 4, 96, 96, 513, ATTN_F32, &d);                      /* 3 tokens (speculative) */
    check_decode(&r, 3, 2, 8, 2, 40, 40, 300, ATTN_F32, &d);
    d.window_left = 100; d.sink_tokens = 4;                                    /* StreamingLLM-style */
    check_decode(&r, 1, 1, 32, 8, 128, 128, 2000, ATTN_F16, &d);
    d.window_left = 0; d.sink_tokens = 0; d.softcap = 30.0f;
    for (i = 0; i < 32; ++i) slopes[i] = (float)pow(2.0, -8.0 * (i + 1) / 32);
    d.alibi_slopes = slopes;
    check_decode(&r, 1, 1, 32, 8, 64, 64, 1500, ATTN_F32, &d);
    d.softcap = 0.0f; d.alibi_slopes = NULL; d.causal = 0;
    d.seqlens_q = seqlens_q; d.seqlens_k = seqlens_k;                          /* padded batch */
    check_decode(&r, 3, 1, 8, 4, 32, 32, 900, ATTN_F32, &d);
}

/* Output conversion, each kernel set's store against the test's own IEEE conversion (t_f32_to_f16,
   t_f32_to_bf16, written from the spec): ties to even, f16 subnormals, overflow to inf, -0,
   every length mod 16 (vector body + scalar tail), and NaN staying a quiet NaN. */
typedef void (*store_fn)(void *dst, attn_dtype t, const float *src, int n, float mul);
static void check_store(const char *isa, store_fn store) {
    static const attn_dtype dts[] = {ATTN_F32, ATTN_F16, ATTN_BF16};
    float src[67], got32[67];
    uint16_t got[67];
    t_rng r = t_rng_seed(31);
    int it, i, di, bad = 0, n;
    for (it = 0; it < 400; ++it) {
        n = 1 + it % 67;
        for (i = 0; i < n; ++i) {
            const float unit = t_chance(&r, 0.5) ? 1.0f : (float)ldexp(1.0, t_irange(&r, -30, 18));
            switch (t_irange(&r, 0, 5)) {   /* exact ties of f16 (2^-11 steps at 1) and bf16 (2^-8) */
            case 0: src[i] = unit * (1.0f + (float)ldexp(2.0 * t_irange(&r, 0, 511) + 1.0, -11)); break;
            case 1: src[i] = unit * (1.0f + (float)ldexp(2.0 * t_irange(&r, 0, 63) + 1.0, -8)); break;
            case 2: src[i] = (float)ldexp(t_irange(&r, 0, 4000) * 0.5, -24); break;           /* f16 subnormals, ties */
            case 3: src[i] = t_chance(&r, 0.5) ? 65519.0f + (float)t_irange(&r, 0, 2) : -1e30f; break; /* overflow */
            case 4: src[i] = t_chance(&r, 0.5) ? -0.0f : (t_chance(&r, 0.5) ? INFINITY : -INFINITY); break;
            default: src[i] = (float)(t_normal(&r) * ldexp(1.0, t_irange(&r, -40, 40))); break;
            }
            if (t_chance(&r, 0.5)) src[i] = -src[i];
        }
        if (it % 7 == 0) src[it % n] = t_chance(&r, 0.5) ? NAN : -NAN;
        for (di = 0; di < 3; ++di) {
            const attn_dtype dt = dts[di];
            const float mul = it % 3 == 0 ? 1.0f : 0.75f;
            store(dt == ATTN_F32 ? (void *)got32 : (void *)got, dt, src, n, mul);
            for (i = 0; i < n; ++i) {
                const float x = src[i] * mul;
                if (dt == ATTN_F32) bad += memcmp(&got32[i], &x, 4) != 0;
                else if (x != x)           /* any quiet NaN, sign kept */
                    bad += dt == ATTN_F16 ? (got[i] & 0x7e00u) != 0x7e00u || (got[i] >> 15) != (t_f32_bits(x) >> 31)
                                          : (got[i] & 0x7fc0u) != 0x7fc0u || (got[i] >> 15) != (t_f32_bits(x) >> 31);
                else bad += got[i] != (dt == ATTN_F16 ? t_f32_to_f16(x) : t_f32_to_bf16(x));
            }
        }
    }
    T_CHECK(bad == 0, "%s store: %d values rounded differently from IEEE round-to-nearest-even", isa, bad);
}

static void test_output_store(void) {
    check_store("scalar", attn__store_row);
#if defined(ATTN__X86_SIMD) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) check_store("avx512", attn__isa_avx512.store);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))   /* F16C comes with both */
        check_store("avx2", attn__isa_avx2.store);
#endif
#if defined(ATTN__NEON)
    check_store("neon", attn__isa_neon.store);
#endif
}

/* The vector layer (attn__isa dot .. exp_sum) of every ISA this CPU runs, against double
   sums: every length 0..80 at every start offset mod 16, a guard float on both sides that must
   survive, -inf entries (masked logits) in exp_sum, and y aliasing x. Bounds: dot within
   n * 2^-23 * sum|a_i b_i|, exp_sum elements 2 ulp (SIMD exp) and the sum 4 ulp + n 2^-24 rel,
   max and axpy/scal exact (one rounding each, fused or not: 1 ulp of |y| + |a x|). */
static void check_vec(const char *isa, const attn__isa *V) {
    enum { NMAX = 80, PAD = 16 };
    float a[NMAX + 2 * PAD + 2], b[NMAX + 2 * PAD + 2], y[NMAX + 2 * PAD + 2], y0[NMAX + 2 * PAD + 2];
    t_rng r = t_rng_seed(777);
    float f[NMAX + 2 * PAD + 2], y1[NMAX + 2 * PAD + 2];
    int n, off, i, bad_dot = 0, bad_axpy = 0, bad_scal = 0, bad_max = 0, bad_exp = 0, bad_guard = 0, bad_elu = 0, bad_cos = 0;
    for (n = 0; n <= NMAX; ++n)
        for (off = 1; off <= PAD; off += 5) {
            float *pa = a + off, *pb = b + off, *py = y + off, got, m, mu;
            double ref = 0.0, mag = 0.0, dmax = -INFINITY, esum = 0.0;
            const float alpha = (float)t_normal(&r);
            for (i = 0; i < NMAX + 2 * PAD + 2; ++i) { a[i] = (float)t_normal(&r); b[i] = (float)t_normal(&r); y0[i] = y[i] = (float)t_normal(&r); }
            for (i = 0; i < n; ++i) { ref += (double)pa[i] * pb[i]; mag += fabs((double)pa[i] * pb[i]); dmax = pa[i] > dmax ? pa[i] : dmax; }
            got = V->dot(pa, pb, n);
            bad_dot += fabs(got - ref) > (n + 1) * ldexp(1.0, -23) * mag + 1e-30;
            got = V->max(pa, n);
            bad_max += n == 0 ? !(got == -INFINITY) : got != (float)dmax;
            V->axpy(py, alpha, pa, n);
            for (i = 0; i < n; ++i) {
                const double want = (double)y0[off + i] + (double)alpha * pa[i];
                bad_axpy += fabs(py[i] - want) > ldexp(fabs(y0[off + i]) + fabs((double)alpha * pa[i]), -23);
            }
            for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + n) bad_guard += memcmp(&y[i], &y0[i], 4) != 0;
            memcpy(y, y0, sizeof y);
            V->scal(py, alpha, n);
            for (i = 0; i < n; ++i) { volatile float p = y0[off + i] * alpha; bad_scal += py[i] != p; }   /* fp32 product (x87) */
            for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + n) bad_guard += memcmp(&y[i], &y0[i], 4) != 0;
            /* exp_sum in place over logits with some -inf, shifted by their max */
            memcpy(y, y0, sizeof y);
            for (i = 0; i < n; ++i) if (t_chance(&r, 0.2)) py[i] = -INFINITY;
            memcpy(y0, y, sizeof y);
            m = n ? V->max(py, n) : 0.0f;
            mu = m == -INFINITY ? 0.0f : m;
            got = V->exp_sum(py, py, mu, n);
            for (i = 0; i < n; ++i) {   /* exp of the fp32 difference x - m, as the op defines it */
                volatile float dx = y0[off + i] - mu;
                const double e = exp((double)dx);
                esum += e;
                bad_exp += fabs(py[i] - e) > 2.5 * ldexp(1.0, -23) * e + 1e-37;
            }
            bad_exp += fabs(got - esum) > (4.0 + n) * ldexp(1.0, -24) * esum + 1e-37;
            for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + n) bad_guard += memcmp(&y[i], &y0[i], 4) != 0;
            /* elu1_grad from the features elu1 made: bitwise elu1's gradient (zeros and NaN too) */
            if (n > 2) { pa[0] = 0.0f; pa[1] = -0.0f; pa[2] = NAN; }
            V->elu1(f, pa, NULL, n);
            V->elu1(y1, pa, pb, n);
            memcpy(y, y0, sizeof y);
            V->elu1_grad(py, pa, f, pb, n);
            for (i = 0; i < n; ++i) bad_elu += memcmp(&py[i], &y1[i], 4) != 0;
            for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + n) bad_guard += memcmp(&y[i], &y0[i], 4) != 0;
            memcpy(y, y0, sizeof y);
            /* cos_feat: features [a relu(x), b relu(x)] (one fp32 product each: exact against
               double rounded once) into f (2n, guards after), then the gradient in place over a
               copy of x, against a dy0 + b dy1 in double (two products and a sum: 2 ulp) */
            if (n <= NMAX / 2) {
                const float ca = (float)t_normal(&r), cb = (float)t_normal(&r), pzero = 0.0f;
                float xc[NMAX + 2 * PAD + 2];
                for (i = 0; i < NMAX + 2 * PAD + 2; ++i) f[i] = y0[i];
                V->cos_feat(f + off, pa, NULL, ca, cb, n);
                for (i = 0; i < n; ++i) {
                    const float x = pa[i];
                    const double rx = x > 0.0f ? (double)x : 0.0;
                    const float wa = (float)(ca * rx), wb = (float)(cb * rx);
                    if (x != x) bad_cos += f[off + i] == f[off + i] || f[off + n + i] == f[off + n + i];
                    else bad_cos += memcmp(&f[off + i], &wa, 4) != 0 || memcmp(&f[off + n + i], &wb, 4) != 0;
                }
                for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + 2 * n) bad_guard += memcmp(&f[i], &y0[i], 4) != 0;
                for (i = 0; i < NMAX + 2 * PAD + 2; ++i) xc[i] = a[i];
                V->cos_feat(xc + off, xc + off, pb, ca, cb, n);   /* pb: dy [2n] (b has NMAX + 2 PAD + 2 floats) */
                for (i = 0; i < n; ++i) {
                    const float x = pa[i], got = xc[off + i];
                    const double g = (double)ca * pb[i] + (double)cb * pb[n + i];
                    const double bound = ldexp(fabs((double)ca * pb[i]) + fabs((double)cb * pb[n + i]), -22) + 1e-37;
                    if (x != x) bad_cos += got == got;
                    else if (x > 0.0f) bad_cos += fabs(got - g) > bound;
                    else bad_cos += memcmp(&got, &pzero, 4) != 0;   /* +0, also for x = -0 */
                }
                for (i = 0; i < NMAX + 2 * PAD + 2; ++i) if (i < off || i >= off + n) bad_guard += memcmp(&xc[i], &a[i], 4) != 0;
            }
        }
    T_CHECK(bad_cos == 0, "%s cos_feat: %d features or gradients wrong", isa, bad_cos);
    T_CHECK(bad_elu == 0, "%s elu1_grad: %d elements differ from elu1's gradient", isa, bad_elu);
    T_CHECK(bad_dot == 0, "%s dot: %d results outside n 2^-23 sum|a b|", isa, bad_dot);
    T_CHECK(bad_max == 0, "%s max: %d wrong", isa, bad_max);
    T_CHECK(bad_axpy == 0, "%s axpy: %d elements off by more than 1 ulp", isa, bad_axpy);
    T_CHECK(bad_scal == 0, "%s scal: %d elements not the exact product", isa, bad_scal);
    T_CHECK(bad_exp == 0, "%s exp_sum: %d elements or sums outside their bound", isa, bad_exp);
    T_CHECK(bad_guard == 0, "%s vector layer: %d floats written outside [0, n)", isa, bad_guard);
}

static void test_vector_layer(void) {
    check_vec("scalar", &attn__isa_scalar);
#if defined(ATTN__X86_SIMD) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) check_vec("avx512", &attn__isa_avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) check_vec("avx2", &attn__isa_avx2);
#endif
#if defined(ATTN__NEON)
    check_vec("neon", &attn__isa_neon);
#endif
    T_CHECK(attn__vec() == attn__pick_isa(), "attn__vec() is not the ISA the kernels run on");
}

/* The shared-QK kinds' tile helpers of one ISA (ATTN_LSH, ATTN_ROUTING): gather_t against
   its definition, bitwise (a copy), with zero lanes n..round16(n) and nothing written past D
   rows; sqk_softmax against the masks applied here and double exp: mx exactly the masked max
   (in u order, m > x ? m : x), each S entry within 2.5 ulp of exp of the fp32 x - mx (the SIMD
   exp's bound), sum within (4 + nk) 2^-24 relative, lanes past nq untouched, mx -inf and sum 0 there.
   Query and key ids overlap (self logits), causal and not, nq 1..64 and nk 1..130. hash_arg
   (ATTN_LSH's bucket argmax) against the strict scan: the same indices, with ties, NaN, inf and
   signed zeros, over two blocks of columns. rt_above (ATTN_ROUTING's screen) against the
   compares one by one; rt_top2 (its bound's block maxima) against the scores sorted here, and
   rt_kth: k keys at or above its result, fewer above, and the result one of the keys. */
/* A float's rank as an unsigned key, written here for rt_top2's check: order-preserving (-inf
   lowest, +inf highest), negatives' bits inverted, positives' sign bit set. */
static uint32_t t_rank_key(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (u >> 31) ? ~u : u + 0x80000000u;
}

static void check_sqk(const char *isa, const attn__isa *V) {
    enum { NK = 130, DM = 40, NR = 200 };
    static float X[NR * DM], XTb[(DM + 1) * ATTN__BQ + 16], Sb[NK * ATTN__BQ + 16], S0[NK * ATTN__BQ];
    float *XT = XTb + (16 - ((uintptr_t)XTb / 4) % 16) % 16, *S = Sb + (16 - ((uintptr_t)Sb / 4) % 16) % 16;   /* 64-byte aligned */
    float mx[ATTN__BQ], sum[ATTN__BQ];
    t_rng r = t_rng_seed(4242);
    int rows[ATTN__BQ], kpos[NK], it, i, j, u, e, bad_t = 0, bad_k = 0, bad_a = 0, bad_h = 0, bad_g = 0, bad_m = 0, bad_e = 0, bad_s = 0, bad_lane = 0;
    for (i = 0; i < NR * DM; ++i) X[i] = (float)t_normal(&r);
    for (it = 0; it < 300; ++it) {
        const int n = t_irange(&r, 1, ATTN__BQ), D = t_irange(&r, 1, DM), nk = t_irange(&r, 1, NK), causal = it & 1;
        const int lanes = (n + 15) & ~15;
        const float masked = -1e9f, self = -1e5f;
        for (j = 0; j < n; ++j) rows[j] = t_irange(&r, 0, NR - 1);
        for (i = 0; i < (DM + 1) * ATTN__BQ; ++i) XT[i] = 7.0f;
        V->gather_t(X, DM, rows, n, D, XT);
        for (e = 0; e <= DM; ++e)
            for (j = 0; j < ATTN__BQ; ++j) {
                const float want = e >= D || j >= lanes ? 7.0f : j >= n ? 0.0f : X[(size_t)rows[j] * DM + e];
                bad_g += memcmp(&XT[(size_t)e * ATTN__BQ + j], &want, 4) != 0;
            }
        for (u = 0; u < nk; ++u) kpos[u] = t_chance(&r, 0.3) ? rows[t_irange(&r, 0, n - 1)] : t_irange(&r, 0, NR - 1);
        for (i = 0; i < nk * ATTN__BQ; ++i) S0[i] = S[i] = 4.0f * (float)t_normal(&r);
        V->sqk_softmax(S, nk, n, kpos, rows, causal, masked, self, mx, sum);
        for (j = 0; j < ATTN__BQ; ++j) {
            float m = -INFINITY;
            double es = 0.0;
            if (j >= n) {
                bad_lane += !(mx[j] == -INFINITY) || sum[j] != 0.0f;
                for (u = 0; u < nk; ++u) bad_lane += memcmp(&S[(size_t)u * ATTN__BQ + j], &S0[(size_t)u * ATTN__BQ + j], 4) != 0;
                continue;
            }
            for (u = 0; u < nk; ++u) {
                float *x = &S0[(size_t)u * ATTN__BQ + j];
                *x = kpos[u] == rows[j] ? self : causal && kpos[u] > rows[j] ? masked : *x;
                m = m > *x ? m : *x;
            }
            bad_m += mx[j] != m;
            for (u = 0; u < nk; ++u) {
                volatile float dx = S0[(size_t)u * ATTN__BQ + j] - m;   /* the kernel's fp32 difference */
                const double w = exp((double)dx);
                es += w;
                bad_e += fabs(S[(size_t)u * ATTN__BQ + j] - w) > 2.5 * ldexp(1.0, -23) * w + 1e-37;
            }
            bad_s += fabs(sum[j] - es) > (4.0 + nk) * ldexp(1.0, -24) * es;
        }
    }
    for (it = 0; it < 200; ++it) {   /* hash_arg: two blocks of columns against the strict scan here */
        const int nk = t_irange(&r, 1, NK), nl = t_irange(&r, 1, ATTN__BQ), c0 = t_irange(&r, 0, 100);
        float hi[NK], lo[NK], rh[NK], rl[NK];
        int ah[NK], al[NK], rah[NK], ral[NK], blk;
        for (i = 0; i < nk; ++i) { hi[i] = rh[i] = -INFINITY; lo[i] = rl[i] = INFINITY; ah[i] = al[i] = rah[i] = ral[i] = 0; }
        for (blk = 0; blk < 2; ++blk) {
            for (i = 0; i < nk * ATTN__BQ; ++i) {   /* few distinct values: ties; zeros of both signs, NaN, inf */
                const int v = t_irange(&r, 0, 12);
                S[i] = v == 0 ? NAN : v == 1 ? -0.0f : v == 2 ? 0.0f : v == 3 && t_chance(&r, 0.1) ? -INFINITY
                     : (float)t_irange(&r, -4, 4) * 0.5f;
            }
            if (it % 5 == 0) for (i = 0; i < nk * ATTN__BQ; ++i) S[i] = NAN;
            V->hash_arg(S, nk, nl, c0 + blk * nl, hi, ah, lo, al);
            for (i = 0; i < nk; ++i)
                for (j = 0; j < nl; ++j) {
                    const float x = S[(size_t)i * ATTN__BQ + j];
                    if (x > rh[i]) { rh[i] = x; rah[i] = c0 + blk * nl + j; }
                    if (x < rl[i]) { rl[i] = x; ral[i] = c0 + blk * nl + j; }
                }
            for (i = 0; i < nk; ++i) bad_h += hi[i] != rh[i] || lo[i] != rl[i] || ah[i] != rah[i] || al[i] != ral[i];
        }
    }
    for (it = 0; it < 200; ++it) {   /* rt_above: the mask of s > thr, bit by bit, with ties, NaN, inf, signed zeros */
        float s[ATTN__BQ], thr[ATTN__BQ];
        uint64_t want = 0, got;
        for (j = 0; j < ATTN__BQ; ++j) {
            const int v = t_irange(&r, 0, 9);
            s[j] = v == 0 ? NAN : v == 1 ? -0.0f : v == 2 ? INFINITY : (float)t_irange(&r, -3, 3) * 0.5f;
            thr[j] = it % 7 == 0 ? INFINITY : v == 3 ? 0.0f : v == 4 ? -INFINITY : (float)t_irange(&r, -3, 3) * 0.5f;
            if (s[j] > thr[j]) want |= (uint64_t)1 << j;
        }
        got = V->rt_above(s, thr);
        bad_a += got != want;
    }
    for (it = 0; it < 200; ++it) {   /* rt_top2 and rt_kth: ranks against sorted floats, with ties, NaN, inf, signed zeros */
        enum { MR = 2 * ATTN__BQ };
        static uint32_t M[MR * ATTN__BQ], T[ATTN__BQ];
        const int nt = t_irange(&r, 1, ATTN__BQ), bs = 1 << t_irange(&r, 0, 6), nb = (nt + bs - 1) / bs;
        int k, blk;
        for (i = 0; i < nt * ATTN__BQ; ++i) {
            const int v = t_irange(&r, 0, 12);
            S[i] = v == 0 ? NAN : v == 1 ? -0.0f : v == 2 ? 0.0f : v == 3 ? INFINITY : v == 4 ? -INFINITY
                 : it % 3 ? (float)t_irange(&r, -4, 4) * 0.5f : (float)t_normal(&r);
        }
        V->rt_top2(S, nt, bs, M);
        for (blk = 0; blk < nb; ++blk)
            for (j = 0; j < ATTN__BQ; ++j) {   /* the two largest of the block, NaN as -inf and -0 as +0 */
                float a = -INFINITY, b = -INFINITY, x;
                const int rows = ATTN__MIN(bs, nt - blk * bs);
                for (u = blk * bs; u < blk * bs + rows; ++u) {
                    x = S[(size_t)u * ATTN__BQ + j];
                    x = x != x ? -INFINITY : x == 0.0f ? 0.0f : x;
                    if (x > a) { b = a; a = x; } else if (x > b) b = x;
                }
                bad_t += M[(size_t)2 * blk * ATTN__BQ + j] != t_rank_key(a);
                bad_t += M[(size_t)(2 * blk + 1) * ATTN__BQ + j] != (rows > 1 ? t_rank_key(b) : 0u);
            }
        k = t_irange(&r, 1, 2 * nb);
        V->rt_kth(M, 2 * nb, k, T);
        for (j = 0; j < ATTN__BQ; ++j) {       /* the k-th largest: k keys at or above it, fewer above */
            int ge = 0, gt = 0;
            for (u = 0; u < 2 * nb; ++u) {
                ge += M[(size_t)u * ATTN__BQ + j] >= T[j];
                gt += M[(size_t)u * ATTN__BQ + j] > T[j];
            }
            for (u = 0; u < 2 * nb && M[(size_t)u * ATTN__BQ + j] != T[j]; ++u) {}
            bad_k += ge < k || gt >= k || u == 2 * nb;
        }
    }
    T_CHECK(bad_t == 0, "%s rt_top2: %d block maxima / seconds differ from the sorted scores", isa, bad_t);
    T_CHECK(bad_k == 0, "%s rt_kth: %d lanes' bounds are not the k-th largest key", isa, bad_k);
    T_CHECK(bad_h == 0, "%s hash_arg: %d rows' first max / min differ from the scan", isa, bad_h);
    T_CHECK(bad_a == 0, "%s rt_above: %d masks differ from the compares", isa, bad_a);
    T_CHECK(bad_g == 0, "%s gather_t: %d floats differ from the gathered rows (or written outside)", isa, bad_g);
    T_CHECK(bad_m == 0, "%s sqk_softmax: %d row maxima differ from the masked max", isa, bad_m);
    T_CHECK(bad_e == 0, "%s sqk_softmax: %d exp entries outside 2.5 ulp", isa, bad_e);
    T_CHECK(bad_s == 0, "%s sqk_softmax: %d sums outside their bound", isa, bad_s);
    T_CHECK(bad_lane == 0, "%s sqk_softmax: %d values wrong past nq", isa, bad_lane);
}

static void test_sqk_helpers(void) {
    check_sqk("scalar", &attn__isa_scalar);
#if defined(ATTN__X86_SIMD) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) check_sqk("avx512", &attn__isa_avx512);
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) check_sqk("avx2", &attn__isa_avx2);
#endif
#if defined(ATTN__NEON)
    check_sqk("neon", &attn__isa_neon);
#endif
}

/* attn_pool: every task exactly once, thread indices below the call's n_threads and the
   pool's size, many calls in a row (spinning and sleeping workers), two callers at once. */
typedef struct pool_job { int hits[1000]; int bad_thread; int limit; } pool_job;
static void pool_count(void *ctx, int i, int thread) {
    pool_job *j = (pool_job *)ctx;
    ++j->hits[i];                               /* index i belongs to one task: no race */
    if (thread < 0 || thread >= j->limit) j->bad_thread = 1;
}
static int pool_round(attn_pool *p, int n_tasks, int n_threads) {
    static pool_job j;
    int i, ok;
    memset(&j, 0, sizeof j);
    j.limit = p ? ATTN__MIN(n_threads < 1 ? 1 : n_threads, attn_pool_threads(p)) : 1;
    attn_pool_parallel(p, n_tasks, n_threads, pool_count, &j);
    ok = !j.bad_thread;
    for (i = 0; i < n_tasks; ++i) ok &= j.hits[i] == 1;
    for (; i < 1000; ++i) ok &= j.hits[i] == 0;
    return ok;
}
#if defined(ATTN__PTHREADS)
typedef struct pool_caller { attn_pool *p; int ok; pool_job job; } pool_caller;
static void *pool_caller_main(void *arg) {
    pool_caller *c = (pool_caller *)arg;
    int it, i;
    c->ok = 1;
    for (it = 0; it < 50; ++it) {
        memset(&c->job, 0, sizeof c->job);
        c->job.limit = 3;
        attn_pool_parallel(c->p, 500, 3, pool_count, &c->job);
        for (i = 0; i < 500; ++i) c->ok &= c->job.hits[i] == 1;
        c->ok &= !c->job.bad_thread;
    }
    return NULL;
}
#endif
static void test_pool(void) {
    static const int tasks[] = {0, 1, 2, 3, 7, 64, 1000}, threads[] = {0, 1, 2, 3, 8};
    int spin, ti, hi, it, ok = 1;
#if defined(ATTN_NO_THREADS)
    T_CHECK(attn_pool_create(2, 0) == NULL && attn_pool_threads(NULL) == 0, "ATTN_NO_THREADS: attn_pool_create must return NULL");
    T_CHECK(pool_round(NULL, 64, 2), "a NULL pool must run every task inline");
    return;
#endif
    for (spin = -1; spin <= 0; ++spin) {       /* -1: workers sleep between calls; 0: spin first */
        attn_pool *p = attn_pool_create(3, spin);
        T_CHECK(p != NULL && attn_pool_threads(p) == 3, "attn_pool_create(3, %d) failed", spin);
        if (!p) continue;
        for (ti = 0; ti < 7; ++ti)
            for (hi = 0; hi < 5; ++hi) ok &= pool_round(p, tasks[ti], threads[hi]);
        for (it = 0; it < 300; ++it) ok &= pool_round(p, 1 + it % 9, 3);
        T_CHECK(ok, "attn_pool (spin %d): a task ran twice, never, or on a thread index out of range", spin);
#if defined(ATTN__PTHREADS)
        {
            pool_caller a, b;
            pthread_t ta, tb;
            a.p = b.p = p;
            if (pthread_create(&ta, NULL, pool_caller_main, &a) == 0) {
                if (pthread_create(&tb, NULL, pool_caller_main, &b) == 0) {
                    pthread_join(tb, NULL);
                    T_CHECK(b.ok, "attn_pool: a second concurrent caller lost tasks");
                }
                pthread_join(ta, NULL);
                T_CHECK(a.ok, "attn_pool: concurrent callers lost tasks");
            }
        }
#endif
        attn_pool_destroy(p);
    }
    attn_pool_destroy(NULL);
    {
        attn_pool *one = attn_pool_create(1, 0);
        T_CHECK(one != NULL && attn_pool_threads(one) == 1 && pool_round(one, 50, 4), "a 1-thread pool runs tasks inline");
        attn_pool_destroy(one);
    }
}

/* The adaptive team (attn_pool_parallel): a worker that holds a task long after the caller ran
   out of them (a worker descheduled mid-task, simulated: thread 1's task spins until every other
   task is done, then 2M ticks more) puts the pool on the caller alone for `backoff` calls (1, 2,
   4, ... 64: doubled by each straggling probe); those calls use thread 0 only; every task still
   runs once; calls without a straggler bring the team back (backoff halved to 1); attn_forward's result is
   bitwise the same on the caller alone, on the team and on one thread. */
#if defined(ATTN__HAVE_TICKS) && defined(ATTN__PTHREADS) && (defined(__GNUC__) || defined(__clang__))
#define T_ADAPTIVE 1
typedef struct straggle_job { int hits[64]; int n_tasks, done, on_worker, straggle, waited; } straggle_job;
static void t_spin_ticks(long long n) {
    const long long t0 = attn__ticks();
    while (attn__ticks() - t0 < n) ATTN__PAUSE();
}
static void straggle_task(void *ctx, int i, int thread) {
    straggle_job *j = (straggle_job *)ctx;
    ++j->hits[i];                                   /* index i belongs to one task: no race */
    if (thread != 0) {
        __atomic_store_n(&j->on_worker, 1, __ATOMIC_RELEASE);
        if (j->straggle) {
            while (__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) < j->n_tasks - 1) ATTN__PAUSE();
            t_spin_ticks(2000000);
            return;
        }
    }
    if (j->straggle && thread == 0 && !j->waited) { /* give the worker (slow to wake on a loaded machine) time to join */
        const long long t0 = attn__ticks();
        j->waited = 1;
        while (!__atomic_load_n(&j->on_worker, __ATOMIC_ACQUIRE) && attn__ticks() - t0 < 100000000) ATTN__PAUSE();   /* 100 ms */
    }
    t_spin_ticks(10000);
    __atomic_fetch_add(&j->done, 1, __ATOMIC_ACQ_REL);
}
static int straggle_call(attn_pool *p, straggle_job *j, int straggle) {
    int i, ok = 1;
    memset(j, 0, sizeof *j);
    j->n_tasks = 64; j->straggle = straggle;
    attn_pool_parallel(p, 64, 2, straggle_task, j);
    for (i = 0; i < 64; ++i) ok &= j->hits[i] == 1;
    return ok;
}
static void adaptive_forward(attn_pool *p, attn_kind kind, int n_threads, int solo, float *out) {
    enum { L = 200, H = 2, D = 32 };
    static float q[L * H * D];
    attn_desc d;
    attn_tensor t;
    t_rng r = t_rng_seed(77);
    attn_status s;
    memset(&d, 0, sizeof d);
    d.kind = kind; d.causal = 1; d.n_threads = n_threads;
    d.parallel = attn_pool_parallel; d.parallel_user = p;
    t = attn_tensor_dense(q, ATTN_F32, 1, L, H, D);
    t_fill_normal(&t, &r, 1.0);
    p->solo_left = solo; p->backoff = 1;            /* the internal state: force the caller alone */
    s = attn_forward(&d, t, t, t, attn_tensor_dense(out, ATTN_F32, 1, L, H, D), NULL);
    /* forced alone: one call counted down; on the team: 0, or 1 if the OS made a straggler */
    T_CHECK(s == ATTN_OK && (solo ? p->solo_left == solo - 1 : p->solo_left <= 1),
            "adaptive pool: attn_forward (kind %d) status %d, solo_left %d", (int)kind, (int)s, p->solo_left);
}
static void test_pool_adaptive(void) {
    static straggle_job j;
    static float a[200 * 2 * 32], b[200 * 2 * 32], c[200 * 2 * 32];
    static const attn_kind kinds[2] = { ATTN_SOFTMAX, ATTN_LINEAR };
    attn_pool *p = attn_pool_create(2, 0);
    int it, k, straggled = 0, once = 1, solo_ok = 1, probe_ok = 1, verdict_ok = 1;
    T_CHECK(p != NULL, "attn_pool_create(2, 0) failed");
    if (!p) return;
    T_CHECK(p->backoff == 1 && p->solo_left == 0, "a new pool must start with the whole team");
    for (it = 0; it < 2000 && straggled < 7; ++it) {
        const int solo = p->solo_left, backoff = p->backoff;
        once &= straggle_call(p, &j, 1);
        if (solo > 0) solo_ok &= !j.on_worker && p->solo_left == solo - 1 && p->backoff == backoff;
        else if (j.on_worker) {                     /* a probe the worker joined: it straggled */
            ++straggled;
            probe_ok &= p->solo_left == backoff && p->backoff == ATTN__MIN(2 * backoff, ATTN__SOLO_MAX);
        } else {                  /* the worker woke too late (no straggler, unless the OS stopped the caller) */
            straggled = 0;
        }
    }
    T_CHECK(straggled == 7, "adaptive pool: no 7 straggling probes in a row in %d calls", it);
    T_CHECK(probe_ok && p->backoff == 64, "adaptive pool: a straggling probe must run the next `backoff` calls on the caller alone and double backoff (backoff %d)", p->backoff);
    T_CHECK(solo_ok, "adaptive pool: a call on the caller alone ran a task on a worker or miscounted");
    /* calls without a deliberate straggler: on a loaded machine the OS may still make one (the
       wake hands the caller's core to the worker), so each probe is checked for a consistent
       verdict, not for a recovery; the rule itself is checked on attn__pool_judge below */
    for (it = 0; it < 300; ++it) {
        const int solo = p->solo_left, backoff = p->backoff;
        once &= straggle_call(p, &j, 0);
        if (solo > 0) verdict_ok &= p->solo_left == solo - 1 && p->backoff == backoff;
        else verdict_ok &= (p->solo_left == backoff && p->backoff == ATTN__MIN(2 * backoff, ATTN__SOLO_MAX)) ||
                           (p->solo_left == 0 && p->backoff == ATTN__MAX(backoff / 2, 1));
    }
    T_CHECK(verdict_ok, "adaptive pool: a call's verdict was neither a straggle (solo run, backoff doubled) nor a good call (backoff halved)");
    T_CHECK(once, "adaptive pool: a task ran twice or never");
    {   /* the verdict rule: both the ratio and the floor must be exceeded, by the wait or the longest step */
        const long long F = ATTN__STRAGGLER_FLOOR, R = ATTN__STRAGGLER_RATIO;
        int ok = 1, n;
        p->solo_left = 0; p->backoff = ATTN__SOLO_MAX;
        for (n = 0; n < 8; ++n) attn__pool_judge(p, F, F, F / (2 * R));          /* at the floor: good */
        ok &= p->backoff == 1 && p->solo_left == 0;
        attn__pool_judge(p, F + 1, 0, (F + 1) / R - 1); ok &= p->solo_left == 1 && p->backoff == 2;   /* the wait */
        p->solo_left = 0;
        attn__pool_judge(p, 0, F + 1, (F + 1) / R - 1); ok &= p->solo_left == 2 && p->backoff == 4;   /* the longest step */
        p->solo_left = 0;
        attn__pool_judge(p, 10 * F, 10 * F, 10 * F / R); ok &= p->solo_left == 0 && p->backoff == 2; /* within the ratio */
        for (n = 0; n < 10; ++n) { p->solo_left = 0; attn__pool_judge(p, 100 * F, 0, 1); }
        ok &= p->solo_left == ATTN__SOLO_MAX && p->backoff == ATTN__SOLO_MAX;
        T_CHECK(ok, "adaptive pool: attn__pool_judge's rule (solo_left %d, backoff %d)", p->solo_left, p->backoff);
    }
    for (k = 0; k < 2; ++k) {
        adaptive_forward(p, kinds[k], 2, 0, a);
        adaptive_forward(p, kinds[k], 2, 3, b);
        adaptive_forward(p, kinds[k], 1, 0, c);
        T_CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(a, c, sizeof a) == 0,
                "adaptive pool: kind %d differs between the team, the caller alone and one thread", (int)kinds[k]);
    }
    attn_pool_destroy(p);
}
#endif

/* The shared pool behind attn__parallel_for (calls without desc.parallel): every task once on a
   thread index below the call's n_threads, whether the call gets the pool (2 threads) or starts
   its own (more threads than the pool has, a call from inside a pool task, a second user
   thread while the first holds the pool), and after fork() in the child (which must not wait
   for the parent's workers; not under qemu-user, T_NO_FORK: it aborts on such a fork). */
static int shared_round(int n_tasks, int n_threads) {
    pool_job *j = (pool_job *)calloc(1, sizeof *j);
    int i, ok;
    if (!j) return 0;
    j->limit = n_threads < 1 ? 1 : n_threads;
    attn__parallel_for(NULL, n_tasks, n_threads, pool_count, j);
    ok = !j->bad_thread;
    for (i = 0; i < n_tasks; ++i) ok &= j->hits[i] == 1;
    for (; i < 1000; ++i) ok &= j->hits[i] == 0;
    free(j);
    return ok;
}
typedef struct nested_job { int ok[64]; } nested_job;
static void nested_task(void *ctx, int i, int thread) {
    (void)thread;
    ((nested_job *)ctx)->ok[i] = shared_round(100 + i, 2);
}
#if defined(ATTN__PTHREADS)
static void *shared_caller_main(void *arg) {
    int it, *ok = (int *)arg;
    for (it = 0; it < 200; ++it) *ok &= shared_round(1 + it % 97, 2);
    return NULL;
}
#endif
static void test_shared_pool(void) {
    nested_job nj;
    int i, it, ok = 1;
    for (it = 0; it < 200; ++it) ok &= shared_round(1 + it % 131, 2);
    for (it = 0; it < 20; ++it) ok &= shared_round(1 + it * 37 % 1000, 8);
    T_CHECK(ok, "attn__parallel_for (shared pool / per-call threads): a task ran twice, never, or on a thread index out of range");
    memset(&nj, 0, sizeof nj);
    attn__parallel_for(NULL, 64, 2, nested_task, &nj);
    for (i = 0, ok = 1; i < 64; ++i) ok &= nj.ok[i];
    T_CHECK(ok, "attn__parallel_for called from inside a shared-pool task lost tasks");
#if defined(ATTN__PTHREADS)
    {
        int oka = 1, okb = 1;
        pthread_t ta, tb;
        if (pthread_create(&ta, NULL, shared_caller_main, &oka) == 0) {
            if (pthread_create(&tb, NULL, shared_caller_main, &okb) == 0) pthread_join(tb, NULL);
            pthread_join(ta, NULL);
        }
        T_CHECK(oka && okb, "attn__parallel_for from two user threads at once lost tasks");
    }
#endif
#if defined(ATTN__PTHREADS) && defined(__unix__) && !defined(T_NO_FORK)
    {
        pid_t pid = fork();
        if (pid == 0) {                             /* child: the pool must be rebuilt, not awaited */
            alarm(20);
            _exit(shared_round(500, 2) && shared_round(7, 2) ? 0 : 1);
        } else if (pid > 0) {
            int st = 0;
            waitpid(pid, &st, 0);
            T_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "attn__parallel_for in a fork()ed child: tasks lost or hung (status %d)", st);
        }
    }
#endif
}

/* attn__lane_rule (the per-row form every tile kernel derives its masks from) against the
   reference's literal rule, for every key of every row, dilation 1 (dilation is applied per
   element on top of the lane form). */
static void test_lane_rule(void) {
    t_rng r = t_rng_seed(4242);
    int c, bad = 0, n = 0;
    for (c = 0; c < 400; ++c) {
        attn_desc d;
        const int Lq = t_irange(&r, 1, 40), Lk = t_irange(&r, 1, 40);
        int i, j, pre;
        memset(&d, 0, sizeof d);
        d.causal = t_irange(&r, 0, 1);
        d.window_left = t_chance(&r, 0.5) ? t_irange(&r, 1, 10) : 0;
        d.window_right = t_chance(&r, 0.5) ? t_irange(&r, 1, 10) : 0;
        d.sink_tokens = t_chance(&r, 0.3) ? t_irange(&r, 1, 5) : 0;
        d.global_tokens = t_chance(&r, 0.3) ? t_irange(&r, 1, 5) : 0;
        pre = attn__lane_pre(d.sink_tokens, d.global_tokens, Lk);
        for (i = 0; i < Lq; ++i) {
            int32_t cap, lo, hi;
            attn__lane_rule(d.causal, d.window_left, d.window_right, d.global_tokens, (long long)i + Lk - Lq, Lk, &cap, &lo, &hi);
            for (j = 0; j < Lk; ++j, ++n)
                if (attn__lane_ok(cap, lo, hi, pre, j) != ref_visible(&d, i, j, Lq, Lk)) ++bad;
        }
    }
    T_CHECK(bad == 0, "attn__lane_rule disagrees with the reference rule on %d of %d (row, key) pairs", bad, n);
}

void test_kernels(void) {
    test_lane_rule();
    g_pool = attn_pool_create(3, 0);
    test_output_store();
    test_vector_layer();
    test_gemm2();
    test_sqk_helpers();
    test_pool();
#if defined(T_ADAPTIVE)
    test_pool_adaptive();
#endif
    test_shared_pool();
    test_vector_math();
    test_decoding();
    test_decode_sweep();
    test_decode_steps();
    attn_pool_destroy(g_pool);
    g_pool = NULL;
}
