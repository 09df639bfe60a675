/* tests/test.h - a tiny test runner for attn.h, plus helpers every test family shares:
   counters and T_CHECK, a deterministic RNG, IEEE fp16/bf16 conversion written from the
   format definitions (independent of attn.h's own), strided element access through an
   attn_tensor, and max-normalised-error helpers.

   Everything here is static (header-only helpers); the counters are defined in tests/main.c.
   Only section 2 of attn.h (the public types) is used: nothing here shares code with the
   implementation. */
#ifndef ATTN_TESTS_TEST_H
#define ATTN_TESTS_TEST_H

#include "attn.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* every helper is static; families use different subsets of them */
#if defined(__GNUC__) || defined(__clang__)
#define T_UNUSED __attribute__((unused))
#else
#define T_UNUSED
#endif

/* ---------------------------------------------------------------------------------------- */
/* Runner                                                                                    */
/* ---------------------------------------------------------------------------------------- */

extern int t_passed, t_failed;
extern int t_printed;   /* failures printed in the current family (main.c resets it) */
/* t_status_provoked[s] is set once a test saw a call return exactly s when it was meant to;
   test_status_coverage() (last in main.c) checks every provocable code was seen. */
extern int t_status_provoked[ATTN_STATUS_END];
/* ATTN_MALLOC calls made by the implementation so far (tests/attn_impl.c) */
extern size_t t_attn_mallocs;

/* ATTN_TEST_QUICK (the sanitizer build) shrinks the randomised sweeps. */
#ifdef ATTN_TEST_QUICK
#define T_QUICK 1
#else
#define T_QUICK 0
#endif

#ifndef T_MAX_PRINTED_FAILURES   /* per family; -DT_MAX_PRINTED_FAILURES=1000000 prints all */
#define T_MAX_PRINTED_FAILURES 200
#endif

/* Test families (each in tests/test_<family>.c), called from tests/main.c. */
void test_exact(void);
void test_kernels(void);
/* backward */
void test_backward(void);
/* gemm */
void test_gemm(void);
/* layers */
void test_layers(void);
/* generation */
void test_generation(void);
/* amx */
void test_amx(void);
void test_amx_emu(void);   /* the AMX branch on a software tile file */
/* sparse */
void test_sparse(void);
void test_lsh_hf(void);
void t_lsh_decode(void);   /* tests/test_lsh_decode.c: attn_decode with ATTN_LSH, attn_lsh_buckets; called by test_lsh_hf */
void t_packed_lsh(void);   /* tests/test_packed.c: cu_seqlens, called by test_lsh_hf */   /* tests/test_lsh.c: ATTN_LSH against HF's Reformer conventions */
void test_bigbird_hf(void);   /* tests/test_bigbird.c, called by test_sparse */
void test_longformer_mask(void);   /* called by test_sparse */
void test_bigbird_bwd(void);   /* tests/test_bigbird_bwd.c: attn_backward of ATTN_BIGBIRD */
void t_packed_bigbird(void);   /* tests/test_packed.c: cu_seqlens, called by test_bigbird_bwd */
void test_routing_bwd(void);   /* tests/test_routing_bwd.c: attn_backward of ATTN_ROUTING */

/* linear */
void test_linear(void);
void test_rwkv(void);
void test_cosformer(void);
void test_performer(void);
void test_linear_bwd(void);   /* attn_backward of ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER */

/* low-rank */
void test_lowrank(void);
void t_packed_linformer(void);   /* tests/test_packed.c: cu_seqlens, called by test_lowrank */
void t_performer_bwd_out(void);   /* tests/test_linear_bwd.c: Performer backward, dO = out + noise, run by test_performer */
void t_packed_linear(void);   /* tests/test_packed.c: cu_seqlens for the linear kinds, called by test_linear_bwd */
/* tests/test_lowrank.c's double helpers, shared with test_nystrom_bwd.c: C = A B ([m][k] x [k][n]);
   the largest column sum of an m x m A */
void r_mm(const double *A, const double *Bm, double *C, int m, int k, int n);
double r_colmax(const double *A, int m);
void test_nystrom_bwd(void);
void t_packed_nystrom(void);   /* tests/test_packed.c: cu_seqlens, called by test_nystrom_bwd */   /* attn_backward of ATTN_NYSTROM */

/* state space */
void test_ssm(void);
void test_port_mamba_hf(void);   /* tests/test_ports.c, called by test_ssm */
void test_ssm_bwd(void);   /* tests/test_ssm_bwd.c: conv1d, S4D and complex-A scan gradients, called by test_ssm */
void test_port_rwkv4_hf(void);   /* tests/test_ports.c, called by test_rwkv */
void test_port_rwkv6_fla(void);  /* tests/test_ports.c, called by test_rwkv */

/* cuda (emulated) */

/* fuzz */

void test_status_coverage(void);   /* last: every provocable status code was provoked */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 4, 5)))
#endif
T_UNUSED static int t_check_(int ok, const char *file, int line, const char *fmt, ...) {
    if (ok) { ++t_passed; return 1; }
    ++t_failed;
    if (++t_printed <= T_MAX_PRINTED_FAILURES) {
        va_list ap;
        printf("FAIL %s:%d: ", file, line);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        printf("\n");
        if (t_printed == T_MAX_PRINTED_FAILURES) printf("(further failures of this family counted, not printed)\n");
        fflush(stdout);
    }
    return 0;
}

/* T_CHECK(cond, fmt, ...): counts a pass, or prints "FAIL file:line: message" and counts a
   failure. The format string is part of __VA_ARGS__, so T_CHECK(c, "plain message") is valid
   C99 under -pedantic. Evaluates to 1 on pass, 0 on failure. */
#define T_CHECK(cond, ...) t_check_((cond) ? 1 : 0, __FILE__, __LINE__, __VA_ARGS__)
#define T_CHECK0(cond, msg) t_check_((cond) ? 1 : 0, __FILE__, __LINE__, "%s", (msg))
/* got == want, counted as provoking want (the caller checks the outputs stayed untouched) */
T_UNUSED static int t_expect_status(attn_status got, attn_status want, const char *family, const char *what) {
    if (T_CHECK(got == want, "%s %s: got %s, want %s", family, what, attn_status_str(got), attn_status_str(want))) {
        t_status_provoked[want] = 1;
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Deterministic RNG (splitmix64)                                                            */
/* ---------------------------------------------------------------------------------------- */

typedef struct { uint64_t s; } t_rng;

T_UNUSED static t_rng t_rng_seed(uint64_t seed) { t_rng r; r.s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull; return r; }

T_UNUSED static uint64_t t_next(t_rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform in [0, 1) with 53 random bits */
T_UNUSED static double t_unif(t_rng *r) { return (double)(t_next(r) >> 11) * (1.0 / 9007199254740992.0); }
/* uniform integer in [lo, hi] (inclusive) */
T_UNUSED static int t_irange(t_rng *r, int lo, int hi) {
    uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1u;
    return (int)((int64_t)lo + (int64_t)(t_next(r) % span));
}
T_UNUSED static int t_chance(t_rng *r, double p) { return t_unif(r) < p; }
/* standard normal (Box-Muller) */
T_UNUSED static double t_normal(t_rng *r) {
    double u1 = t_unif(r), u2 = t_unif(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
T_UNUSED static int t_pick(t_rng *r, const int *xs, int n) { return xs[t_irange(r, 0, n - 1)]; }

/* ---------------------------------------------------------------------------------------- */
/* IEEE binary16 / bfloat16 <-> binary32, round to nearest even                               */
/* ---------------------------------------------------------------------------------------- */

T_UNUSED static uint32_t t_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
T_UNUSED static float t_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

T_UNUSED static uint16_t t_f32_to_f16(float f) {
    uint32_t x = t_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    uint32_t e = ax >> 23, m = ax & 0x7FFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | (m >> 13));   /* NaN stays NaN */
    if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);   /* >= 65520 rounds to inf */
    if (ax < 0x38800000u) {                                     /* below 2^-14: subnormal */
        /* value = (m | 2^23) * 2^(e-150); in units of 2^-24 that is (m|2^23) >> (126 - e) */
        uint32_t mm, shift, r, rem, half;
        if (e < 102u) return sign;                              /* < 2^-25: rounds to 0 */
        mm = m | 0x800000u;
        shift = 126u - e;                                       /* 14 .. 24 */
        r = mm >> shift;
        rem = mm & ((1u << shift) - 1u);
        half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return (uint16_t)(sign | r);
    } else {
        uint32_t h = ((e - 112u) << 10) | (m >> 13);
        uint32_t rem = m & 0x1FFFu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  /* carry may bump exponent */
        return (uint16_t)(sign | h);
    }
}

T_UNUSED static float t_f16_to_f32(uint16_t h) {
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = ((uint32_t)h >> 10) & 0x1Fu, m = (uint32_t)h & 0x3FFu;
    if (e == 0) {
        float v = (float)ldexp((double)m, -24);
        return sign ? -v : v;
    }
    if (e == 31) return t_bits_f32(sign | 0x7F800000u | (m << 13));
    return t_bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

T_UNUSED static uint16_t t_f32_to_bf16(float f) {
    uint32_t x = t_f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x0040u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
T_UNUSED static float t_bf16_to_f32(uint16_t b) { return t_bits_f32((uint32_t)b << 16); }

/* value as stored in dtype dt (rounded once, from float) */
T_UNUSED static double t_round_dt(double x, attn_dtype dt) {
    float f = (float)x;
    if (dt == ATTN_F16) return t_f16_to_f32(t_f32_to_f16(f));
    if (dt == ATTN_BF16) return t_bf16_to_f32(t_f32_to_bf16(f));
    return f;
}
T_UNUSED static size_t t_dt_size(attn_dtype dt) { return dt == ATTN_F32 ? 4u : 2u; }
/* positions [t0, t0 + len) of t (a view with t's strides) */
T_UNUSED static attn_tensor t_seq_view(attn_tensor t, int t0, int len) {
    t.data = (char *)t.data + (size_t)t0 * (size_t)t.stride_seq * t_dt_size(t.dtype);
    t.seq = len;
    return t;
}
T_UNUSED static const char *t_dt_name(attn_dtype dt) {
    return dt == ATTN_F32 ? "f32" : dt == ATTN_F16 ? "f16" : dt == ATTN_BF16 ? "bf16" : "bad";
}
/* relative size of one rounding to dt (with margin: 2x the unit roundoff) */
T_UNUSED static double t_dt_rel(attn_dtype dt) {
    return dt == ATTN_F16 ? 1.0 / 1024.0 : dt == ATTN_BF16 ? 1.0 / 128.0 : 0.0;
}

/* ---------------------------------------------------------------------------------------- */
/* Strided element access through an attn_tensor (own addressing, from the documented layout) */
/* ---------------------------------------------------------------------------------------- */

typedef struct { ptrdiff_t sb, ss, sh; } t_strides;

/* Documented: strides in elements, always explicit (0 broadcasts an axis; nothing is guessed). */
T_UNUSED static t_strides t_resolve(const attn_tensor *t) {
    t_strides s;
    s.sb = t->stride_batch; s.ss = t->stride_seq; s.sh = t->stride_head;
    return s;
}
T_UNUSED static ptrdiff_t t_offset(const attn_tensor *t, int b, int s, int h, int d) {
    t_strides st = t_resolve(t);
    return (ptrdiff_t)b * st.sb + (ptrdiff_t)s * st.ss + (ptrdiff_t)h * st.sh + d;
}
/* number of elements a buffer needs to hold the view (max offset + 1); dims must be >= 1 */
T_UNUSED static size_t t_extent(const attn_tensor *t) {
    t_strides st = t_resolve(t);
    return (size_t)((ptrdiff_t)(t->batch - 1) * st.sb + (ptrdiff_t)(t->seq - 1) * st.ss +
                    (ptrdiff_t)(t->heads - 1) * st.sh + t->dim);
}
T_UNUSED static double t_load_at(const void *data, attn_dtype dt, ptrdiff_t off) {
    if (dt == ATTN_F32) return ((const float *)data)[off];
    if (dt == ATTN_F16) return t_f16_to_f32(((const uint16_t *)data)[off]);
    return t_bf16_to_f32(((const uint16_t *)data)[off]);
}
T_UNUSED static void t_store_at(void *data, attn_dtype dt, ptrdiff_t off, double x) {
    if (dt == ATTN_F32) ((float *)data)[off] = (float)x;
    else if (dt == ATTN_F16) ((uint16_t *)data)[off] = t_f32_to_f16((float)x);
    else ((uint16_t *)data)[off] = t_f32_to_bf16((float)x);
}
T_UNUSED static double t_load(const attn_tensor *t, int b, int s, int h, int d) {
    return t_load_at(t->data, t->dtype, t_offset(t, b, s, h, d));
}
T_UNUSED static void t_store(const attn_tensor *t, int b, int s, int h, int d, double x) {
    t_store_at(t->data, t->dtype, t_offset(t, b, s, h, d), x);
}
/* fill every element of the view with N(0, sigma) values rounded to the tensor's dtype */
T_UNUSED static void t_fill_normal(const attn_tensor *t, t_rng *r, double sigma) {
    int b, s, h, d;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d) t_store(t, b, s, h, d, sigma * t_normal(r));
}
/* fill a whole raw buffer of n elements with NaN of dtype dt (gaps must never be read) */
T_UNUSED static void t_fill_nan(void *data, attn_dtype dt, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) {
        if (dt == ATTN_F32) ((float *)data)[i] = (float)NAN;
        else ((uint16_t *)data)[i] = dt == ATTN_F16 ? 0x7E00u : 0x7FC0u;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Error measures                                                                            */
/* ---------------------------------------------------------------------------------------- */

/* max |got - ref| / max(1, max |ref|) over n values; NaN in got gives +inf */
T_UNUSED static double t_max_norm_err(const double *ref, const double *got, size_t n) {
    double mx = 1.0, err = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    for (i = 0; i < n; ++i) {
        double e = fabs(got[i] - ref[i]);
        if (!(e <= err)) err = e != e ? INFINITY : e;
    }
    return err / mx;
}

/* every element of a view into dst, as doubles in [B][S][H][D] order */
T_UNUSED static void t_read(const attn_tensor *t, double *dst) {
    int b, s, h, d;
    size_t n = 0;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d) dst[n++] = t_load(t, b, s, h, d);
}

/* a byte pattern used to prove an output buffer was not written */
T_UNUSED static void t_sentinel(void *p, size_t bytes, unsigned char seed) {
    size_t i;
    for (i = 0; i < bytes; ++i) ((unsigned char *)p)[i] = (unsigned char)(seed + i * 37u);
}
T_UNUSED static int t_sentinel_ok(const void *p, size_t bytes, unsigned char seed) {
    size_t i;
    for (i = 0; i < bytes; ++i)
        if (((const unsigned char *)p)[i] != (unsigned char)(seed + i * 37u)) return 0;
    return 1;
}

T_UNUSED static void *t_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "test: out of memory (%lu bytes)\n", (unsigned long)n); exit(2); }
    return p;
}

/* A zero-filled dense [B, S, H, D] tensor that owns its buffer (free with t_owned_free). */
typedef struct { attn_tensor t; void *buf; size_t n; } t_owned;
T_UNUSED static t_owned t_owned_dense(attn_dtype dt, int B, int S, int H, int D) {
    t_owned x;
    x.n = (size_t)B * S * H * D;
    x.buf = t_xmalloc(x.n * t_dt_size(dt));
    memset(x.buf, 0, x.n * t_dt_size(dt));
    x.t = attn_tensor_dense(x.buf, dt, B, S, H, D);
    return x;
}
T_UNUSED static void t_owned_free(t_owned *x) { free(x->buf); x->buf = NULL; }

/* The elements of an output buffer [0, n) that t's view does not cover still hold the sentinel
   (t_sentinel(buf, n * element size, seed)): nothing was written outside the view. */
T_UNUSED static int t_gaps_ok(const attn_tensor *t, const void *buf, size_t n, unsigned char seed) {
    size_t es = t_dt_size(t->dtype), i, k;
    unsigned char *mark = (unsigned char *)calloc(n ? n : 1, 1);
    const unsigned char *p = (const unsigned char *)buf;
    int b, s, h, d, ok = 1;
    if (!mark) return 0;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d) mark[t_offset(t, b, s, h, d)] = 1;
    for (i = 0; i < n && ok; ++i)
        if (!mark[i])
            for (k = i * es; k < (i + 1) * es; ++k)
                if (p[k] != (unsigned char)(seed + k * 37u)) { ok = 0; break; }
    free(mark);
    return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* Builders of masks and extras (shared by test_exact and test_backward)                     */
/* ---------------------------------------------------------------------------------------- */

/* An fp32 bias for [B|1, Hq|1, Sq|1, Sk] in one of four stride modes:
   0 dense, 1 explicit padded strides, 2 broadcast by a zero stride (a read pattern dbias
   refuses), 3 one row shared by every query (rows 1: a key-padding mask, HF's
   attention_mask, with a stride_q that must never be read). *count: the floats allocated. */
T_UNUSED static float *t_make_bias(attn_bias *bs, int B, int Hq, int Sq, int Sk, int mode, t_rng *r, size_t *count) {
    ptrdiff_t sb, sh, sq, n, i;
    float *data;
    memset(bs, 0, sizeof *bs);
    bs->batch = (B > 1 && t_chance(r, 0.5)) ? B : 1;
    bs->heads = (Hq > 1 && t_chance(r, 0.5)) ? Hq : 1;
    bs->rows = mode == 3 ? 1 : Sq;
    if (mode == 2 && bs->batch == 1 && bs->heads == 1) mode = 1;
    sq = Sk; sh = (ptrdiff_t)bs->rows * Sk; sb = (ptrdiff_t)bs->heads * sh;
    if (mode == 1 || mode == 3) { sq = Sk + t_irange(r, 0, 3); sh = bs->rows * sq + t_irange(r, 1, 5); sb = bs->heads * sh + t_irange(r, 0, 3); }
    if (mode == 2) {
        sq = Sk + t_irange(r, 0, 2);
        if (bs->batch > 1) { sb = 0; sh = bs->rows * sq + 1; }   /* every batch reads batch 0 */
        else { sh = 0; sb = bs->rows * sq; }                     /* every head reads head 0 */
    }
    bs->stride_batch = sb; bs->stride_head = sh; bs->stride_q = sq;
    n = (ptrdiff_t)(bs->batch - 1) * sb + (ptrdiff_t)(bs->heads - 1) * sh + (ptrdiff_t)(bs->rows - 1) * sq + Sk;
    if (bs->rows == 1) bs->stride_q = PTRDIFF_MAX / 2;         /* never read: would fault */
    data = (float *)t_xmalloc((size_t)n * sizeof(float));
    for (i = 0; i < n; ++i) data[i] = (float)t_normal(r);
    bs->data = data;
    if (count) *count = (size_t)n;
    return data;
}

/* floats a buffer needs to hold the bias view (an axis of extent 1 steps nothing) */
T_UNUSED static size_t t_bias_extent(const attn_bias *bs, int Sk) {
    return (size_t)((bs->batch > 1 ? (ptrdiff_t)(bs->batch - 1) * bs->stride_batch : 0) +
                    (bs->heads > 1 ? (ptrdiff_t)(bs->heads - 1) * bs->stride_head : 0) +
                    (bs->rows > 1 ? (ptrdiff_t)(bs->rows - 1) * bs->stride_q : 0) + Sk);
}

/* ALiBi slopes for Hq heads: the paper's geometric sequence, or random ones in [0, 0.5]
   (a negative slope is valid but makes far keys dominate with logits ~ slope * distance, whose
   fp32 rounding alone can exceed TOL_OUT at long lengths; test_edges covers a small one). */
T_UNUSED static float *t_make_alibi(int Hq, t_rng *r) {
    float *s = (float *)t_xmalloc((size_t)Hq * sizeof(float));
    int h, geo = t_chance(r, 0.6);
    for (h = 0; h < Hq; ++h)
        s[h] = geo ? (float)pow(2.0, -8.0 * (h + 1) / Hq) : (float)(t_unif(r) * 0.5);
    return s;
}

/* Without causal masking a query row with p < 0 (more queries than keys) sees only keys at
   distance >= -p, so every logit carries an ALiBi offset of slope * distance; fp32 cannot hold
   such logits to TOL_OUT (rounding ~ 2^-24 * |logit|). Keep slope * max distance <= 8 there. */
T_UNUSED static void t_tame_alibi(float *s, int Hq, int causal, int max_dist) {
    float mx = 0.0f;
    int h;
    if (causal || !s) return;
    for (h = 0; h < Hq; ++h) if (fabsf(s[h]) > mx) mx = fabsf(s[h]);
    if (mx * (float)max_dist > 8.0f)
        for (h = 0; h < Hq; ++h) s[h] *= 8.0f / (mx * (float)max_dist);
}

/* cu_seqlens with nseg segments over [0, total]: sorted cut points, empty segments allowed;
   tight: the last segment ends at total (else possibly earlier: trailing padding rows). */
T_UNUSED static int *t_make_cu(int nseg, int total, int tight, t_rng *r) {
    int *cu = (int *)t_xmalloc((size_t)(nseg + 1) * sizeof(int));
    int i, j;
    cu[0] = 0;
    for (i = 1; i <= nseg; ++i) cu[i] = t_irange(r, 0, total);
    for (i = 2; i <= nseg; ++i)
        for (j = i; j > 1 && cu[j - 1] > cu[j]; --j) { int x = cu[j]; cu[j] = cu[j - 1]; cu[j - 1] = x; }
    if (tight) cu[nseg] = total;
    return cu;
}

T_UNUSED static int *t_make_seqlens(int B, int S, t_rng *r) {
    int *a = (int *)t_xmalloc((size_t)B * sizeof(int));
    int b;
    for (b = 0; b < B; ++b) {
        double u = t_unif(r);
        a[b] = u < 0.2 ? 0 : u < 0.5 ? S : t_irange(r, 0, S);
    }
    return a;
}

#endif /* ATTN_TESTS_TEST_H */
