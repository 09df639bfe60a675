/* tests/cuda/test_cuda.cu - the CUDA companion's test suite (C++).
   make test:      g++ -x c++ -DATTN_CUDA_EMULATE: the kernels run under tests/cuda/emu.h (no GPU),
                   plus the emulator's own self-tests.
   make test-cuda: nvcc, on a real GPU.
   Every result is compared with attn.h's CPU attn_forward on the same inputs (the same f16/bf16
   bits). Tolerances (max |cuda - cpu| over the output, divided by max |v|; lse absolute):
     f32 1e-5 (out) 1e-4 (lse); f16 4e-3, 4e-3; bf16 3e-2, 3e-2: the tensor-core path rounds the
   softmax weights P to the input dtype for P.V (as FlashAttention does), the CPU keeps fp32.
     f32 with allow_tf32 (TF32 tensor cores): bounds derived per case from TF32's rounding, against
   the CPU on the f32 inputs and on TF32-rounded ones (see "TF32: tolerances derived" below). */
#ifdef ATTN_CUDA_EMULATE
#include "emu.h"
#endif
#define ATTN_CUDA_IMPLEMENTATION
#include "attn_cuda.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <vector>

static int passed = 0, failed = 0;
static int provoked[ATTN_STATUS_END];
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (cond) ++passed;                                                                  \
        else { ++failed; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } \
    } while (0)

/* ---- deterministic inputs --------------------------------------------------------------- */
static unsigned long long rng_state = 88172645463325252ull;
static double urand(void) {
    rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static float nrand(void) { return (float)((urand() + urand() + urand() + urand() - 2.0) * 1.7); }

/* IEEE conversions written here from the formats (independent of attn.h's) */
static uint16_t to_f16(float f) {
    uint32_t u; memcpy(&u, &f, 4);
    uint32_t s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x477ff000u) return (uint16_t)(s | 0x7c00u);
    if (a < 0x38800000u) { float r = fabsf(f) * 16777216.0f; return (uint16_t)(s | (uint32_t)nearbyintf(r)); }
    a += ((a >> 13) & 1u) + 0xfffu;
    return (uint16_t)(s | ((a - 0x38000000u) >> 13));
}
static float from_f16(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023; float s = (h >> 15) ? -1.0f : 1.0f;
    if (e == 0) return s * ldexpf((float)m, -24);
    if (e == 31) return m ? NAN : s * INFINITY;
    return s * ldexpf((float)(m | 1024), e - 25);
}
static uint16_t to_bf16(float f) { uint32_t u; memcpy(&u, &f, 4); u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16); }
static float from_bf16(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
/* TF32 (8-bit exponent, 10-bit mantissa) rounding of cvt.rna.tf32.f32, from its definition: to
   nearest, ties away from zero (round()), in double arithmetic; below 2^-126 the quantum is
   2^-136 (TF32's subnormals). A result past FLT_MAX is infinity. */
static float tf32_round(float x) {
    if (isnan(x) || isinf(x) || x == 0.0f) return x;
    if (fabs((double)x) < ldexp(1.0, -126)) return (float)ldexp(round(ldexp((double)x, 136)), -136);
    int e;
    const double m = frexp((double)x, &e);          /* x = m 2^e, 0.5 <= |m| < 1: 11 significant bits kept */
    return (float)ldexp(round(m * 2048.0) / 2048.0, e);
}
static size_t esz(attn_dtype t) { return t == ATTN_F32 ? 4 : 2; }
static void put(void *p, attn_dtype t, size_t i, float x) {
    if (t == ATTN_F32) ((float *)p)[i] = x;
    else if (t == ATTN_F16) ((uint16_t *)p)[i] = to_f16(x);
    else ((uint16_t *)p)[i] = to_bf16(x);
}
static float get(const void *p, attn_dtype t, size_t i) {
    if (t == ATTN_F32) return ((const float *)p)[i];
    if (t == ATTN_F16) return from_f16(((const uint16_t *)p)[i]);
    return from_bf16(((const uint16_t *)p)[i]);
}

/* a host buffer and its device twin */
struct buf {
    std::vector<unsigned char> h;
    void *d;
    buf() : d(NULL) {}
    ~buf() { if (d) cudaFree(d); }
    void alloc(size_t n) { h.assign(n, 0); if (cudaMalloc(&d, n ? n : 1) != cudaSuccess) { printf("cudaMalloc failed\n"); exit(1); } }
    void up() { cudaMemcpy(d, h.data(), h.size(), cudaMemcpyHostToDevice); }
    void down() { cudaMemcpy(h.data(), d, h.size(), cudaMemcpyDeviceToHost); }
};

/* ---- emulator self-tests --------------------------------------------------------------- */
#ifdef ATTN_CUDA_EMULATE
/* fragments of A (16x16 row), B (16x8 col), C (16x8) for lane l, from the PTX ISA tables
   (written here again, element by element, so the test does not share the emulator's code) */
static int frag_a_row(int l, int i) { return (l >> 2) + ((i % 4) >= 2 ? 8 : 0); }     /* i: element 0..7 */
static int frag_a_col(int l, int i) { return (l % 4) * 2 + (i & 1) + (i >= 4 ? 8 : 0); }
static int frag_b_row(int l, int i) { return (l % 4) * 2 + (i & 1) + (i >= 2 ? 8 : 0); }  /* i: 0..3 */
static int frag_b_col(int l, int) { return l >> 2; }
static int frag_c_row(int l, int i) { return (l >> 2) + (i >= 2 ? 8 : 0); }
static int frag_c_col(int l, int i) { return (l % 4) * 2 + (i & 1); }

static int g_swap_bug = 0;   /* the "wrong fragment index" mutation */
__global__ void k_mma(const uint16_t *A, const uint16_t *B, const float *Cin, float *Dout, int bf16) {
    const int l = (int)threadIdx.x;
    uint32_t a[4], b[2];
    float d[4];
    int i;
    for (i = 0; i < 4; ++i) {
        /* register r of A holds elements 2r, 2r+1 in the PTX ISA's numbering a0..a7 */
        int r = g_swap_bug && (i == 1 || i == 2) ? 3 - i : i;
        a[i] = (uint32_t)A[frag_a_row(l, 2 * r) * 16 + frag_a_col(l, 2 * r)] |
               ((uint32_t)A[frag_a_row(l, 2 * r + 1) * 16 + frag_a_col(l, 2 * r + 1)] << 16);
    }
    for (i = 0; i < 2; ++i)
        b[i] = (uint32_t)B[frag_b_row(l, 2 * i) * 8 + frag_b_col(l, 2 * i)] |
               ((uint32_t)B[frag_b_row(l, 2 * i + 1) * 8 + frag_b_col(l, 2 * i + 1)] << 16);
    for (i = 0; i < 4; ++i) d[i] = Cin[frag_c_row(l, i) * 8 + frag_c_col(l, i)];
    acu_mma(d, a, b, bf16);
    for (i = 0; i < 4; ++i) Dout[frag_c_row(l, i) * 8 + frag_c_col(l, i)] = d[i];
}
/* max |D - (C + A B)| for random A, B, C (the product in double) */
static double mma_error(int bf16, int swap) {
    buf A, B, C, D;
    double err = 0;
    int i, j, k;
    A.alloc(256 * 2); B.alloc(128 * 2); C.alloc(128 * 4); D.alloc(128 * 4);
    for (i = 0; i < 256; ++i) put(A.h.data(), bf16 ? ATTN_BF16 : ATTN_F16, (size_t)i, nrand());
    for (i = 0; i < 128; ++i) put(B.h.data(), bf16 ? ATTN_BF16 : ATTN_F16, (size_t)i, nrand());
    for (i = 0; i < 128; ++i) ((float *)C.h.data())[i] = nrand();
    A.up(); B.up(); C.up();
    g_swap_bug = swap;
    emu_launch(dim3(1), dim3(32), 0, k_mma, (const uint16_t *)A.d, (const uint16_t *)B.d, (const float *)C.d, (float *)D.d, bf16);
    g_swap_bug = 0;
    D.down();
    for (i = 0; i < 16; ++i)
        for (j = 0; j < 8; ++j) {
            double s = ((float *)C.h.data())[i * 8 + j];
            for (k = 0; k < 16; ++k)
                s += (double)get(A.h.data(), bf16 ? ATTN_BF16 : ATTN_F16, (size_t)(i * 16 + k)) *
                     get(B.h.data(), bf16 ? ATTN_BF16 : ATTN_F16, (size_t)(k * 8 + j));
            err = fmax(err, fabs(s - ((float *)D.h.data())[i * 8 + j]));
        }
    return err;
}

/* mma.m16n8k8 tf32: fragments of A (16x8 row), B (8x8 col) for lane l from the PTX ISA's table
   (again written here element by element): a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4],
   a3 = A[g+8][t+4]; b0 = B[t][g], b1 = B[t+4][g]; C/D as m16n8k16. */
static int frag_ta_row(int l, int i) { return (l >> 2) + ((i & 1) ? 8 : 0); }
static int frag_ta_col(int l, int i) { return (l & 3) + (i >= 2 ? 4 : 0); }
static int frag_tb_row(int l, int i) { return (l & 3) + (i ? 4 : 0); }
static int frag_tb_col(int l, int) { return l >> 2; }
__global__ void k_mma_tf32(const float *A, const float *B, const float *Cin, float *Dout, int swap, int raw) {
    const int l = (int)threadIdx.x;
    uint32_t a[4], b[2];
    float d[4];
    int i;
    for (i = 0; i < 4; ++i) {
        const int r = swap && (i == 1 || i == 2) ? 3 - i : i;     /* the mutation: a1 and a2 swapped */
        const float x = A[frag_ta_row(l, r) * 8 + frag_ta_col(l, r)];
        a[i] = raw ? emu_f2u(x) : acu_tf32(x);                  /* raw: the cvt.rna.tf32.f32 forgotten */
    }
    for (i = 0; i < 2; ++i) b[i] = acu_tf32(B[frag_tb_row(l, i) * 8 + frag_tb_col(l, i)]);
    for (i = 0; i < 4; ++i) d[i] = Cin[frag_c_row(l, i) * 8 + frag_c_col(l, i)];
    acu_mma_tf32(d, a, b);
    for (i = 0; i < 4; ++i) Dout[frag_c_row(l, i) * 8 + frag_c_col(l, i)] = d[i];
}
/* max |D - (C + rna(A) rna(B))| (the product in double of the TF32-rounded inputs) */
static double mma_tf32_error(int swap, int raw) {
    buf A, B, C, D;
    double err = 0;
    int i, j, k;
    A.alloc(128 * 4); B.alloc(64 * 4); C.alloc(128 * 4); D.alloc(128 * 4);
    for (i = 0; i < 128; ++i) ((float *)A.h.data())[i] = nrand();
    for (i = 0; i < 64; ++i) ((float *)B.h.data())[i] = nrand();
    for (i = 0; i < 128; ++i) ((float *)C.h.data())[i] = nrand();
    A.up(); B.up(); C.up();
    emu_launch(dim3(1), dim3(32), 0, k_mma_tf32, (const float *)A.d, (const float *)B.d, (const float *)C.d, (float *)D.d, swap, raw);
    D.down();
    for (i = 0; i < 16; ++i)
        for (j = 0; j < 8; ++j) {
            double s = ((float *)C.h.data())[i * 8 + j];
            for (k = 0; k < 8; ++k)
                s += (double)tf32_round(((float *)A.h.data())[i * 8 + k]) * tf32_round(((float *)B.h.data())[k * 8 + j]);
            err = fmax(err, fabs(s - ((float *)D.h.data())[i * 8 + j]));
        }
    return err;
}
/* cvt.rna.tf32.f32 of n values, one per thread */
__global__ void k_cvt(const float *in, uint32_t *out, int n) {
    const int i = (int)threadIdx.x;
    if (i < n) out[i] = acu_tf32(in[i]);
}
/* 0: every value converts to tf32_round's bits (NaN: any NaN with the low 13 bits zero) */
static int cvt_tf32_bad(void) {
    std::vector<float> v;
    int i, bad = 0;
    const float tie = 1.0f + ldexpf(1.0f, -11);               /* halfway between 1 and 1 + 2^-10: away gives the latter */
    const float specials[] = { tie, -tie, 1.0f + 3 * ldexpf(1.0f, -11), 1.0f + ldexpf(1.0f, -11) - ldexpf(1.0f, -23),
                               3.4028235e38f, -3.4028235e38f, 3.38e38f, ldexpf(1.0f, -130), ldexpf(3.0f, -137),
                               -ldexpf(5.0f, -140), ldexpf(1.0f, -149), INFINITY, -INFINITY, NAN, 0.0f, -0.0f, 1.0f, 65504.0f };
    for (i = 0; i < (int)(sizeof specials / sizeof specials[0]); ++i) v.push_back(specials[i]);
    while (v.size() < 128) v.push_back(nrand() * ldexpf(1.0f, (int)(urand() * 60) - 30));
    buf I, O;
    I.alloc(v.size() * 4); O.alloc(v.size() * 4);
    memcpy(I.h.data(), v.data(), v.size() * 4); I.up();
    emu_launch(dim3(1), dim3(128), 0, k_cvt, (const float *)I.d, (uint32_t *)O.d, (int)v.size());
    O.down();
    for (i = 0; i < (int)v.size(); ++i) {
        const uint32_t got = ((uint32_t *)O.h.data())[i];
        const float want = tf32_round(v[(size_t)i]);
        uint32_t wb;
        memcpy(&wb, &want, 4);
        if (isnan(want) ? !isnan(emu_u2f(got)) || (got & 0x1fffu) : got != wb) {
            if (bad < 4) printf("  cvt.rna.tf32.f32(%a) = 0x%08x, want 0x%08x\n", (double)v[(size_t)i], got, wb);
            ++bad;
        }
    }
    return bad;
}

/* ldmatrix: 4 8x8 matrices of 16-bit values in shared memory, rows at scattered offsets */
__global__ void k_ldm(const uint16_t *M, uint32_t *out, int trans) {
    ACU_SHARED_BASE(sm);
    const int l = (int)threadIdx.x;
    uint32_t w[4], r[4];
    int i, e;
    /* lane l stores row l of the 32 rows (matrix l / 8, row l % 8) at row slot (l * 5) % 32, 48 B apart */
    for (i = 0; i < 4; ++i) {
        w[i] = 0;
        for (e = 0; e < 2; ++e) w[i] |= (uint32_t)M[l * 8 + 2 * i + e] << (16 * e);
    }
    acu_sts16B(sm + ((l * 5) % 32) * 48, w);
    __syncthreads();
    if (trans) acu_ldsm_x4_t(r, sm + ((l * 5) % 32) * 48);
    else acu_ldsm_x4(r, sm + ((l * 5) % 32) * 48);
    for (i = 0; i < 4; ++i) out[l * 4 + i] = r[i];
}
static int ldm_ok(int trans) {
    buf M, O;
    int l, m, bad = 0;
    M.alloc(256 * 2); O.alloc(128 * 4);
    for (l = 0; l < 256; ++l) ((uint16_t *)M.h.data())[l] = (uint16_t)(l * 7 + 3);
    M.up();
    emu_launch(dim3(1), dim3(32), 32 * 48, k_ldm, (const uint16_t *)M.d, (uint32_t *)O.d, trans);
    O.down();
    for (l = 0; l < 32; ++l)
        for (m = 0; m < 4; ++m) {
            /* PTX ISA: lane l gets row l/4, columns 2(l%4), +1 of matrix m; .trans: the transpose */
            const uint16_t *Mm = (const uint16_t *)M.h.data() + m * 64;
            int row = l / 4, col = 2 * (l % 4);
            uint32_t want = trans ? ((uint32_t)Mm[col * 8 + row] | ((uint32_t)Mm[(col + 1) * 8 + row] << 16))
                                  : ((uint32_t)Mm[row * 8 + col] | ((uint32_t)Mm[row * 8 + col + 1] << 16));
            bad += ((uint32_t *)O.h.data())[l * 4 + m] != want;
        }
    return bad == 0;
}

__global__ void k_shfl(float *out) {
    const int l = (int)threadIdx.x;
    out[l] = acu_shfl_xor((float)(l * 3 + 1), 5);
    out[32 + l] = acu_shfl_idx((float)(l * 3 + 1), (l * 7) % 32);
}

__global__ void k_vote(uint32_t *out) {
    const int l = (int)threadIdx.x;
    out[l] = emu_ballot(l % 3 == 0);
    out[32 + l] = (uint32_t)acu_any(l == 17);
    out[64 + l] = (uint32_t)acu_any(0);
}
/* thread t writes word t, then reads word t+1: without the barrier, a race */
__global__ void k_race(int *out, int barrier) {
    ACU_SHARED_BASE(sm);
    const int t = (int)threadIdx.x;
    uint32_t w[4] = { (uint32_t)t, 0, 0, 0 }, r[4];
    acu_sts16B(sm + 16 * t, w);
    if (barrier) __syncthreads();
    emu_lds(r, sm + 16 * ((t + 1) % 64), 16);
    out[t] = (int)r[0];
}
/* cp.async read before the wait sees the poison; after it, the data */
__global__ void k_cp(const float *src, float *out) {
    ACU_SHARED_BASE(sm);
    float x[4];
    if (threadIdx.x == 0) {
        acu_cp_async16(sm, src, 16);
        acu_cp_commit();
        emu_lds(x, sm, 16);
        out[0] = x[0];
        acu_cp_wait<0>();
        emu_lds(x, sm, 16);
        out[1] = x[0];
    }
}
/* half the threads leave before the barrier */
__global__ void k_exit(int *out) {
    if (threadIdx.x < 32) return;
    __syncthreads();
    out[threadIdx.x] = 1;
}

static void test_emulator(void) {
    int i;
    double e;
    e = mma_error(0, 0);
    CHECK(e < 1e-3, "emulated mma f16 vs matrix product: max error %g", e);
    e = mma_error(1, 0);
    CHECK(e < 1e-3, "emulated mma bf16 vs matrix product: max error %g", e);
    e = mma_error(0, 1);
    CHECK(e > 0.1, "a wrong fragment index (a1/a2 swapped) must give a wrong product: error %g", e);
    CHECK(cvt_tf32_bad() == 0, "cvt.rna.tf32.f32 vs round-to-nearest-away at 10 mantissa bits (ties, overflow, subnormals, NaN)");
    emu_reset_errors();
    e = mma_tf32_error(0, 0);
    CHECK(e < 1e-4 && emu_errors() == 0, "emulated mma m16n8k8 tf32 vs matrix product of TF32-rounded inputs: max error %g", e);
    e = mma_tf32_error(1, 0);
    CHECK(e > 0.1, "tf32: a wrong fragment index (a1/a2 swapped) must give a wrong product: error %g", e);
    emu_reset_errors(); emu_quiet(1);
    (void)mma_tf32_error(0, 1);
    CHECK(emu_errors() > 0, "tf32: an operand not rounded by cvt.rna.tf32.f32 must be reported");
    emu_reset_errors();
    CHECK(ldm_ok(0), "ldmatrix.x4 vs its definition");
    CHECK(ldm_ok(1), "ldmatrix.x4.trans vs its definition");
    {
        buf O;
        int bad = 0;
        O.alloc(64 * 4);
        emu_launch(dim3(1), dim3(32), 0, k_shfl, (float *)O.d);
        O.down();
        for (i = 0; i < 32; ++i) {
            bad += ((float *)O.h.data())[i] != (float)(((i ^ 5) * 3) + 1);
            bad += ((float *)O.h.data())[32 + i] != (float)((((i * 7) % 32) * 3) + 1);
        }
        CHECK(bad == 0, "shfl.bfly / shfl.idx vs their definition: %d wrong lanes", bad);
    }
    {
        buf O;
        int bad = 0;
        uint32_t want = 0;
        O.alloc(96 * 4);
        for (i = 0; i < 32; i += 3) want |= 1u << i;
        emu_launch(dim3(1), dim3(32), 0, k_vote, (uint32_t *)O.d);
        O.down();
        for (i = 0; i < 32; ++i)
            bad += ((uint32_t *)O.h.data())[i] != want || ((uint32_t *)O.h.data())[32 + i] != 1 || ((uint32_t *)O.h.data())[64 + i] != 0;
        CHECK(bad == 0, "vote.ballot / vote.any vs their definition: %d wrong lanes", bad);
    }
    {
        buf O;
        O.alloc(64 * 4);
        emu_reset_errors(); emu_quiet(1);
        emu_launch(dim3(2), dim3(64), 64 * 16, k_race, (int *)O.d, 0);
        CHECK(emu_errors() > 0, "a kernel with a missing __syncthreads must be reported as a race");
        emu_reset_errors();
        emu_launch(dim3(2), dim3(64), 64 * 16, k_race, (int *)O.d, 1);
        O.down();
        CHECK(emu_errors() == 0 && ((int *)O.h.data())[63] == 0 && ((int *)O.h.data())[5] == 6,
              "the same kernel with the barrier: no race, right data (%d errors)", emu_errors());
    }
    {
        buf S, O;
        S.alloc(16); O.alloc(8);
        for (i = 0; i < 4; ++i) ((float *)S.h.data())[i] = 1.5f;
        S.up();
        emu_reset_errors();
        emu_launch(dim3(1), dim3(32), 64, k_cp, (const float *)S.d, (float *)O.d);
        O.down();
        CHECK(isnan(((float *)O.h.data())[0]) && ((float *)O.h.data())[1] == 1.5f && emu_errors() == 0,
              "cp.async: poison before wait_group, the data after (%g, %g)", ((float *)O.h.data())[0], ((float *)O.h.data())[1]);
    }
    {
        buf O;
        O.alloc(64 * 4);
        emu_reset_errors(); emu_quiet(1);
        emu_launch(dim3(1), dim3(64), 0, k_exit, (int *)O.d);
        CHECK(emu_errors() > 0, "threads waiting at a __syncthreads others exited before must be reported");
        emu_reset_errors();
    }
}
#endif

/* ---- TF32: tolerances derived from the rounding ---------------------------------------------
   u = 2^-11 is cvt.rna.tf32.f32's relative rounding error (10 stored mantissa bits, to nearest).
   Against attn_forward / attn_decode on the f32 inputs (reference A): a logit s = scale q.k from
   rna(q), rna(k) is off by <= scale sum_d |q_d k_d| ((1 + u)^2 - 1) <= M (2^-10 + 2^-22), with
   M = scale max_ij sum_d |q_id k_jd| (taken over every q row and k row, an upper bound); the fp32
   accumulation on both sides (the tensor cores' order and rounding are unspecified) adds
   <= M D 2^-22. Softcap is 1-Lipschitz, bias and ALiBi are added exactly, so every logit of a row
   moves by <= eps_A. The softmax weights then move by factors in [e^-2eps, e^2eps]: out by
   <= (e^(2 eps) - 1) max|v|. P and V rounded to TF32 for P.V move each term p_j v_j by <= (2^-10 +
   2^-22) |p_j v_j|, out (divided by l = sum_j p_j, summed in fp32 from the unrounded p) by <= (2^-10
   + 2^-22) max|v|; lse = m + log l moves by <= eps_A. Plus the fp32 path's own tolerances (out
   1e-5 max|v|, lse 1e-4):
     out_A = (e^(2 eps_A) - 1) + 2^-10 + 2^-22 + 1e-5 (x max|v|),  lse_A = eps_A + 1e-4.
   Against the same CPU call on TF32-rounded q, k, v (reference B, rounded by tf32_round above) the
   products q_d k_d are the kernel's exactly (two 11-bit significands: exact in fp32) and V is the
   same, so eps_B = M D 2^-22 (summation order) and only P's rounding remains:
     out_B = (e^(2 eps_B) - 1) + 2^-11 + 1e-5 (x max|v|),           lse_B = eps_B + 1e-4,
   a tight check that the kernel rounds what it should, as it should (a truncating or missing cvt
   moves logits by up to M 2^-10). */
struct tf32_tol { double out_a, lse_a, out_b, lse_b; };
static tf32_tol tf32_tolerances(double M, int D) {
    const double acc = M * D * ldexp(1.0, -22), ea = M * (ldexp(1.0, -10) + ldexp(1.0, -22)) + acc;
    tf32_tol t;
    t.out_a = expm1(2 * ea) + ldexp(1.0, -10) + ldexp(1.0, -22) + 1e-5; t.lse_a = ea + 1e-4;
    t.out_b = expm1(2 * acc) + ldexp(1.0, -11) + 1e-5; t.lse_b = acc + 1e-4;
    return t;
}
/* f32 row (b, s, h) of a host copy of t (strides all 0: dense) */
static const float *f32_row(const attn_tensor &t, const void *host, int b, int s, int h) {
    ptrdiff_t sb = t.stride_batch, ss = t.stride_seq, sh = t.stride_head;
    if (!sb && !ss && !sh) { sh = t.dim; ss = (ptrdiff_t)t.heads * t.dim; sb = (ptrdiff_t)t.seq * ss; }
    return (const float *)host + b * sb + s * ss + h * sh;
}
/* M = scale max over every q row and k row of sum_d |q_d k_d| (NaN elements skipped) */
static double qk_abs_max(const attn_tensor &q, const void *qh, const attn_tensor &k, const void *kh, float scale) {
    std::vector<std::vector<float> > kr;
    double M = 0;
    int b, s, h, d;
    for (b = 0; b < k.batch; ++b)
        for (s = 0; s < k.seq; ++s)
            for (h = 0; h < k.heads; ++h) {
                const float *r = f32_row(k, kh, b, s, h);
                kr.push_back(std::vector<float>(r, r + k.dim));
            }
    for (b = 0; b < q.batch; ++b)
        for (s = 0; s < q.seq; ++s)
            for (h = 0; h < q.heads; ++h) {
                const float *r = f32_row(q, qh, b, s, h);
                for (size_t j = 0; j < kr.size(); ++j) {
                    double acc = 0;
                    for (d = 0; d < q.dim; ++d) if (!isnan(r[d]) && !isnan(kr[j][(size_t)d])) acc += fabs((double)r[d] * kr[j][(size_t)d]);
                    M = fmax(M, acc);
                }
            }
    return M * (scale != 0.0f ? scale : 1.0 / sqrt((double)q.dim));
}
static std::vector<unsigned char> tf32_rounded(const std::vector<unsigned char> &f32) {
    std::vector<unsigned char> r(f32);
    for (size_t i = 0; i + 4 <= r.size(); i += 4) {
        float x;
        memcpy(&x, &r[i], 4); x = tf32_round(x); memcpy(&r[i], &x, 4);
    }
    return r;
}
/* the shapes the TF32 kernel takes: its head dims, v.dim == q.dim, and its shared memory ((64 + 4 BN)
   (4 D + 16) bytes, BN = 64, 32, 16 keys for rows of <= 256, <= 512, more bytes) within the device's
   opt-in limit; other f32 calls run the fp32 kernel whatever allow_tf32 says */
static int tf32_shape(int D, int Dv) {
    int dev = 0, optin = 0;
    const int rb = 4 * D, bn = rb <= 256 ? 64 : rb <= 512 ? 32 : 16;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess)
        return 0;
    return (D == 32 || D == 64 || D == 96 || D == 128 || D == 256) && Dv == D && (64 + 4 * bn) * (rb + 16) <= optin;
}
static double tf32_worst_a = 0, tf32_worst_b = 0;   /* max error / tolerance over the TF32 cases */

/* ---- forward vs attn_forward ------------------------------------------------------------ */
struct fcase {
    const char *name;
    attn_dtype dt, odt;
    int B, Sq, Sk, Hq, Hkv, D, Dv;
    int causal, wl, wr, dil, sink, global, softcap, alibi, bias, seqlens, varlen, lse, strided;
    int nan;                    /* a NaN in q row 3 (head 0): that row's out and lse are NaN, as on the CPU */
};

static void run_forward_case(const fcase &c, int tf32 = 0) {
    const attn_dtype dt = c.dt;
    const int B = c.varlen ? 1 : c.B;
    int nseq = c.varlen ? c.B : c.B, i;
    std::vector<int> cu_q(nseq + 1), cu_k(nseq + 1), lq(nseq), lk(nseq);
    int Sq = c.Sq, Sk = c.Sk;
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.bf16_kernels = ATTN_BF16_FP32;
    if (c.varlen) {      /* segment lengths around Sq/Sk, one empty query segment; 3 tail rows */
        cu_q[0] = cu_k[0] = 0;
        for (i = 0; i < nseq; ++i) {
            lq[i] = i == 1 ? 0 : c.Sq - 7 * i; lk[i] = c.Sk - 5 * i;
            if (lq[i] < 0) lq[i] = 1;
            if (lk[i] < 1) lk[i] = 1;
            cu_q[i + 1] = cu_q[i] + lq[i]; cu_k[i + 1] = cu_k[i] + lk[i];
        }
        Sq = cu_q[nseq] + 3; Sk = cu_k[nseq] + 2;
    } else {
        for (i = 0; i < nseq; ++i) { lq[i] = c.Sq - 3 * i; lk[i] = c.Sk - 11 * i; if (lq[i] < 0) lq[i] = 0; if (lk[i] < 0) lk[i] = 0; }
    }
    /* tensors: dense, or BHSD (strided) views */
    attn_tensor q, k, v, o;
    buf bq, bk, bv, bo, blse, bbias, bslope, bsq, bsk, bcq, bck;
    const int pad = c.strided == 2 ? (dt == ATTN_F32 ? 2 : 4) : 0;   /* strided 2: k/v rows 8 bytes off 16-byte alignment */
    const size_t nq = (size_t)B * Sq * c.Hq * c.D, nk = (size_t)B * Sk * (c.Hkv * c.D + pad), nv = (size_t)B * Sk * (c.Hkv * c.Dv + pad),
                 no = (size_t)B * Sq * c.Hq * c.Dv;
    bq.alloc(nq * esz(dt)); bk.alloc(nk * esz(dt)); bv.alloc(nv * esz(dt)); bo.alloc(no * esz(c.odt));
    blse.alloc((size_t)B * c.Hq * Sq * 4);
    for (size_t x = 0; x < nq; ++x) put(bq.h.data(), dt, x, nrand());
    if (c.nan) put(bq.h.data(), dt, (size_t)3 * c.Hq * c.D + 5, NAN);
    for (size_t x = 0; x < nk; ++x) put(bk.h.data(), dt, x, nrand());
    for (size_t x = 0; x < nv; ++x) put(bv.h.data(), dt, x, nrand());
    float vmax = 0;
    for (size_t x = 0; x < nv; ++x) vmax = fmaxf(vmax, fabsf(get(bv.h.data(), dt, x)));
    if (c.strided == 1) {
        q = attn_tensor_bhsd(NULL, dt, B, c.Hq, Sq, c.D); k = attn_tensor_bhsd(NULL, dt, B, c.Hkv, Sk, c.D);
        v = attn_tensor_bhsd(NULL, dt, B, c.Hkv, Sk, c.Dv); o = attn_tensor_bhsd(NULL, c.odt, B, c.Hq, Sq, c.Dv);
    } else {
        q = attn_tensor_dense(NULL, dt, B, Sq, c.Hq, c.D); k = attn_tensor_dense(NULL, dt, B, Sk, c.Hkv, c.D);
        v = attn_tensor_dense(NULL, dt, B, Sk, c.Hkv, c.Dv); o = attn_tensor_dense(NULL, c.odt, B, Sq, c.Hq, c.Dv);
    }
    if (pad) {
        k.stride_head = c.D; k.stride_seq = c.Hkv * c.D + pad; k.stride_batch = (ptrdiff_t)Sk * k.stride_seq;
        v.stride_head = c.Dv; v.stride_seq = c.Hkv * c.Dv + pad; v.stride_batch = (ptrdiff_t)Sk * v.stride_seq;
    }
    d.causal = c.causal; d.window_left = c.wl; d.window_right = c.wr; d.dilation = c.dil; d.sink_tokens = c.sink;
    d.global_tokens = c.global; d.softcap = c.softcap ? 1.5f : 0.0f;
    d.allow_tf32 = tf32;
    if (c.alibi) { bslope.alloc((size_t)c.Hq * 4); for (i = 0; i < c.Hq; ++i) ((float *)bslope.h.data())[i] = 0.05f * (i + 1); }
    if (c.bias) {
        bbias.alloc((size_t)(c.bias == 2 ? 1 : B * c.Hq) * Sq * Sk * 4);   /* bias 2: one [Sq, Sk] broadcast over batch and heads */
        for (size_t x = 0; x < bbias.h.size() / 4; ++x) ((float *)bbias.h.data())[x] = nrand() * 0.5f;
    }
    if (c.seqlens) {
        bsq.alloc((size_t)B * 4); bsk.alloc((size_t)B * 4);
        memcpy(bsq.h.data(), lq.data(), (size_t)B * 4); memcpy(bsk.h.data(), lk.data(), (size_t)B * 4);
    }
    if (c.varlen) {
        bcq.alloc((size_t)(nseq + 1) * 4); bck.alloc((size_t)(nseq + 1) * 4);
        memcpy(bcq.h.data(), cu_q.data(), (size_t)(nseq + 1) * 4); memcpy(bck.h.data(), cu_k.data(), (size_t)(nseq + 1) * 4);
        d.varlen_batch = nseq;
    }
    /* CPU reference on the host copies; with tf32 also on TF32-rounded copies (reference B) */
    std::vector<unsigned char> ref_o(bo.h.size()), ref_ob(tf32 ? bo.h.size() : 0);
    std::vector<float> ref_lse((size_t)B * c.Hq * Sq), ref_lseb(tf32 ? ref_lse.size() : 0);
    std::vector<unsigned char> rq, rk, rv;
    if (tf32) { rq = tf32_rounded(bq.h); rk = tf32_rounded(bk.h); rv = tf32_rounded(bv.h); }
    for (int ref = 0; ref < (tf32 ? 2 : 1); ++ref) {
        attn_desc hd = d;
        attn_tensor hq = q, hk = k, hv = v, ho = o;
        hq.data = ref ? rq.data() : bq.h.data(); hk.data = ref ? rk.data() : bk.h.data(); hv.data = ref ? rv.data() : bv.h.data();
        ho.data = ref ? ref_ob.data() : ref_o.data();
        if (c.alibi) hd.alibi_slopes = (const float *)bslope.h.data();
        if (c.bias) { hd.bias = attn_bias_dense((const float *)bbias.h.data(), c.bias == 2 ? 1 : B, c.bias == 2 ? 1 : c.Hq, Sq, Sk); }
        if (c.seqlens) { hd.seqlens_q = (const int *)bsq.h.data(); hd.seqlens_k = (const int *)bsk.h.data(); }
        if (c.varlen) { hd.cu_seqlens_q = (const int *)bcq.h.data(); hd.cu_seqlens_k = (const int *)bck.h.data(); }
        attn_status s = attn_forward(&hd, hq, hk, hv, ho, c.lse ? (ref ? ref_lseb : ref_lse).data() : NULL);
        CHECK(s == ATTN_OK, "%s: CPU attn_forward: %s", c.name, attn_status_str(s));
    }
    bq.up(); bk.up(); bv.up();
    memset(bo.h.data(), 0x7F, bo.h.size()); bo.up();       /* every element must be written */
    if (c.alibi) { bslope.up(); d.alibi_slopes = (const float *)bslope.d; }
    if (c.bias) { bbias.up(); d.bias = attn_bias_dense((const float *)bbias.d, c.bias == 2 ? 1 : B, c.bias == 2 ? 1 : c.Hq, Sq, Sk); }
    if (c.seqlens) { bsq.up(); bsk.up(); d.seqlens_q = (const int *)bsq.d; d.seqlens_k = (const int *)bsk.d; }
    if (c.varlen) { bcq.up(); bck.up(); d.cu_seqlens_q = (const int *)bcq.d; d.cu_seqlens_k = (const int *)bck.d; }
    q.data = bq.d; k.data = bk.d; v.data = bv.d; o.data = bo.d;
#ifdef ATTN_CUDA_EMULATE
    emu_reset_errors();
#endif
    attn_status s = attn_cuda_forward(&d, q, k, v, o, c.lse ? (float *)blse.d : NULL, (cudaStream_t)0);
    CHECK(s == ATTN_OK, "%s: attn_cuda_forward: %s", c.name, attn_status_str(s));
    cudaDeviceSynchronize();
#ifdef ATTN_CUDA_EMULATE
    CHECK(emu_errors() == 0, "%s: the emulator reported %d errors (races, barrier faults)", c.name, emu_errors());
#endif
    bo.down(); blse.down();
    const double otol = c.odt == ATTN_F32 ? 0 : c.odt == ATTN_F16 ? 1.0 / 1024 : 1.0 / 128;   /* out's own rounding */
    for (int ref = 0; ref < (tf32 && tf32_shape(c.D, c.Dv) ? 2 : 1); ++ref) {
        const unsigned char *ro = ref ? ref_ob.data() : ref_o.data();
        const float *rl = ref ? ref_lseb.data() : ref_lse.data();
        double err = 0, lerr = 0;
        for (size_t x = 0; x < no; ++x) {
            const float a = get(bo.h.data(), c.odt, x), r = get(ro, c.odt, x);
            const double e = a == r || (isnan(a) && isnan(r)) ? 0.0 : (isnan(a) || isnan(r)) ? 1e30 : fabs((double)a - r);
            err = fmax(err, e);
        }
        if (c.lse)
            for (size_t x = 0; x < ref_lse.size(); ++x) {
                const float a = ((float *)blse.h.data())[x], r = rl[x];
                const double e = a == r || (isnan(a) && isnan(r)) ? 0.0 : (isnan(a) || isnan(r) || isinf(a) || isinf(r)) ? 1e30 : fabs((double)a - r);
                lerr = fmax(lerr, e);
            }
        double tol = dt == ATTN_F32 ? 1e-5 : dt == ATTN_F16 ? 4e-3 : 3e-2;
        double ltol = dt == ATTN_F32 ? 1e-4 : dt == ATTN_F16 ? 4e-3 : 3e-2;
        const char *what = "";
        if (tf32 && tf32_shape(c.D, c.Dv)) {
            const tf32_tol t = tf32_tolerances(qk_abs_max(q, bq.h.data(), k, bk.h.data(), d.scale), c.D);
            tol = ref ? t.out_b : t.out_a; ltol = ref ? t.lse_b : t.lse_a;
            what = ref ? " (TF32 vs cpu on TF32-rounded q, k, v)" : " (TF32 vs cpu)";
            double &w = ref ? tf32_worst_b : tf32_worst_a;
            w = fmax(w, fmax(err / (vmax > 0 ? vmax : 1) / (tol + otol), lerr / ltol));
        }
        CHECK(err / (vmax > 0 ? vmax : 1) <= tol + otol, "%s%s: max |out - cpu| / max|v| = %g (tolerance %g)", c.name, what,
              err / (vmax > 0 ? vmax : 1), tol + otol);
        CHECK(lerr <= ltol, "%s%s: max |lse - cpu| = %g (tolerance %g)", c.name, what, lerr, ltol);
    }
    if (tf32) {   /* the same call with allow_tf32 = 0 (the fp32 CUDA-core kernel) */
        const std::vector<unsigned char> t_out(bo.h), t_lse(blse.h);
        d.allow_tf32 = 0;
        memset(bo.h.data(), 0x7F, bo.h.size()); bo.up();
        s = attn_cuda_forward(&d, q, k, v, o, c.lse ? (float *)blse.d : NULL, (cudaStream_t)0);
        cudaDeviceSynchronize();
        bo.down(); blse.down();
        CHECK(s == ATTN_OK, "%s: allow_tf32 = 0: %s", c.name, attn_status_str(s));
        if (tf32_shape(c.D, c.Dv))
            CHECK(bo.h != t_out, "%s: the TF32 result differs from the fp32 one (TF32 rounding was used)", c.name);
        else
            CHECK(bo.h == t_out && (!c.lse || blse.h == t_lse), "%s: a shape the TF32 kernel lacks: allow_tf32 1 and 0 bitwise equal (fp32 kernel)",
                  c.name);
        if (!c.varlen) {  /* allow_tf32 = 0 is bitwise the CUDA-core kernel, launched here directly */
            const std::vector<unsigned char> f_out(bo.h), f_lse(blse.h);
            acu_fwd_params prm;
            memset(&prm, 0, sizeof prm);
            memset(bo.h.data(), 0x7F, bo.h.size()); bo.up();
            s = acu_check_forward(&d, &q, &k, &v, &o, c.lse ? (float *)blse.d : NULL, &prm.P, (cudaStream_t)0);
            prm.n_splits = 1;
            ACU_LAUNCH(acu_fwd_f32, dim3((unsigned)((Sq + ACU_F32_ROWS - 1) / ACU_F32_ROWS), (unsigned)c.Hq, (unsigned)prm.P.n_seqs),
                       dim3(ACU_THREADS), 0, (cudaStream_t)0, prm);
            cudaDeviceSynchronize();
            bo.down(); blse.down();
            CHECK(s == ATTN_OK && bo.h == f_out && (!c.lse || blse.h == f_lse),
                  "%s: allow_tf32 = 0 is bitwise acu_fwd_f32 launched directly", c.name);
        }
    }
}

static void test_forward(void) {
    static const fcase cases[] = {
        /* name                dt        odt      B Sq  Sk  Hq Hkv D   Dv  caus wl wr dil sink glob cap ali bias sl vl lse str nan */
        { "plain f16 D64",     ATTN_F16, ATTN_F16, 1, 70, 90, 2, 2, 64, 64,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "causal bf16 D64",   ATTN_BF16, ATTN_F32, 1, 70, 90, 2, 1, 64, 64, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "causal f16 D32 GQA", ATTN_F16, ATTN_F32, 2, 33, 65, 4, 2, 32, 32, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "window f16 D96",    ATTN_F16, ATTN_F32, 1, 80, 80, 1, 1, 96, 96,  1, 9, 0, 0, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "window lr D128",    ATTN_F16, ATTN_F32, 1, 67, 130, 1, 1, 128, 128, 0, 20, 5, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "dilation global",   ATTN_F16, ATTN_F32, 1, 70, 70, 2, 1, 32, 32,  1, 4, 0, 3, 0, 5, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "softcap alibi bias", ATTN_BF16, ATTN_BF16, 2, 40, 50, 2, 2, 32, 32, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0 },
        { "seqlens padding",   ATTN_F16, ATTN_F32, 3, 50, 60, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0 },
        { "varlen MQA",        ATTN_F16, ATTN_F32, 3, 30, 40, 4, 1, 32, 32,  1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0 },
        { "bhsd strided D256", ATTN_BF16, ATTN_F32, 1, 20, 40, 1, 1, 256, 256, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0 },
        { "f32 masks",         ATTN_F32, ATTN_F32, 2, 37, 45, 2, 1, 40, 24,  1, 6, 0, 2, 2, 3, 1, 1, 1, 1, 0, 1, 0, 0 },
        { "f32 varlen",        ATTN_F32, ATTN_F16, 2, 25, 20, 2, 2, 16, 16,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0 },
        /* every head dim in both 16-bit dtypes; the element-load path (unaligned rows); a long key run
           (5 double-buffered tiles); windows that leave rows with no key (out 0, lse -inf) */
        { "f16 D32 unaligned",  ATTN_F16, ATTN_F32, 1, 45, 77, 2, 1, 32, 32,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0 },
        { "bf16 D96 unaligned", ATTN_BF16, ATTN_F16, 1, 30, 50, 1, 1, 96, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0 },
        { "bf16 D128",          ATTN_BF16, ATTN_F32, 1, 66, 70, 1, 1, 128, 128, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "f16 D256 GQA",       ATTN_F16, ATTN_F32, 1, 17, 70, 2, 1, 256, 256, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "bf16 D32 long keys", ATTN_BF16, ATTN_F32, 1, 20, 300, 1, 1, 32, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "f16 empty rows",     ATTN_F16, ATTN_F32, 1, 70, 40, 1, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "f16 right window",   ATTN_F16, ATTN_F32, 2, 40, 90, 2, 2, 64, 64,  0, 3, 2, 2, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0 },
        { "f16 bias broadcast", ATTN_F16, ATTN_F32, 2, 70, 80, 4, 2, 64, 64,  1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 1, 0, 0 },
        { "f16 NaN in q",       ATTN_F16, ATTN_F32, 1, 20, 30, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1 },
        { "f32 NaN in q",       ATTN_F32, ATTN_F32, 1, 20, 30, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_forward_case(cases[i]);
}

/* allow_tf32: the mask and shape classes of test_forward in f32 (every tensor-core head dim,
   GQA/MQA, windows, dilation, sinks, global tokens, softcap, ALiBi, bias, padding, varlen, BHSD
   and unaligned rows, empty rows, NaN), each against the CPU on the f32 inputs and on TF32-rounded
   ones, and against the same call with allow_tf32 = 0; plus shapes the TF32 kernel lacks. */
static void test_tf32(void) {
    static const fcase cases[] = {
        /* name                    dt        odt      B Sq  Sk  Hq Hkv D   Dv  caus wl wr dil sink glob cap ali bias sl vl lse str nan */
        { "tf32 plain D64",        ATTN_F32, ATTN_F32, 1, 70, 90, 2, 2, 64, 64,  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 causal D32 GQA",   ATTN_F32, ATTN_F16, 2, 33, 65, 4, 2, 32, 32,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 window sink D96",  ATTN_F32, ATTN_F32, 1, 80, 80, 1, 1, 96, 96,  1, 9, 0, 0, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 window lr D128",   ATTN_F32, ATTN_F32, 1, 67, 130, 1, 1, 128, 128, 0, 20, 5, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 dilation global",  ATTN_F32, ATTN_F32, 1, 70, 70, 2, 1, 32, 32,  1, 4, 0, 3, 0, 5, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 cap alibi bias",   ATTN_F32, ATTN_BF16, 2, 40, 50, 2, 2, 32, 32, 1, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 0, 0 },
        { "tf32 seqlens padding",  ATTN_F32, ATTN_F32, 3, 50, 60, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0 },
        { "tf32 varlen MQA",       ATTN_F32, ATTN_F32, 3, 30, 40, 4, 1, 32, 32,  1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1, 0, 0 },
        { "tf32 bhsd D256 GQA",    ATTN_F32, ATTN_F32, 1, 20, 40, 2, 1, 256, 256, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0 },
        { "tf32 D64 unaligned",    ATTN_F32, ATTN_F32, 1, 45, 77, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0 },
        { "tf32 D32 long keys",    ATTN_F32, ATTN_F32, 1, 20, 300, 1, 1, 32, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 empty rows",       ATTN_F32, ATTN_F32, 1, 70, 40, 1, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
        { "tf32 right window",     ATTN_F32, ATTN_F32, 2, 40, 90, 2, 2, 64, 64,  0, 3, 2, 2, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0 },
        { "tf32 bias broadcast",   ATTN_F32, ATTN_F32, 2, 70, 80, 4, 2, 64, 64,  1, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 1, 0, 0 },
        { "tf32 NaN in q",         ATTN_F32, ATTN_F32, 1, 20, 30, 2, 1, 64, 64,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1 },
        /* shapes the TF32 kernel lacks: the fp32 kernel, bitwise as without allow_tf32 */
        { "tf32 fallback D40/24",  ATTN_F32, ATTN_F32, 2, 37, 45, 2, 1, 40, 24,  1, 6, 0, 2, 2, 3, 1, 1, 1, 1, 0, 1, 0, 0 },
        { "tf32 fallback Dv != D", ATTN_F32, ATTN_F32, 1, 20, 30, 2, 2, 64, 32,  1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_forward_case(cases[i], 1);
#ifdef ATTN_CUDA_EMULATE
    {   /* D = 256 takes 130 KiB of shared memory: on a device with sm_86's 99 KiB, the fp32 kernel */
        const size_t keep = emu().max_shared;
        fcase c = cases[8];
        c.name = "tf32 D256 on a 99 KiB device (fp32)";
        emu().max_shared = 99 * 1024;
        CHECK(!tf32_shape(256, 256) && tf32_shape(128, 128), "99 KiB of shared memory: TF32 for D <= 128 only");
        run_forward_case(c, 1);
        emu().max_shared = keep;
    }
#endif
}

/* ---- bad input: the status, outputs untouched ------------------------------------------- */
static void test_errors(void) {
    buf bq, bk, bv, bo, blse;
    const int S = 8, H = 2, D = 64;
    bq.alloc((size_t)S * H * D * 2); bk.alloc((size_t)S * H * D * 2); bv.alloc((size_t)S * H * D * 2);
    bo.alloc((size_t)S * H * D * 4); blse.alloc((size_t)H * S * 4);
    memset(bo.h.data(), 0x5A, bo.h.size()); bo.up();
    memset(blse.h.data(), 0x5A, blse.h.size()); blse.up();
    attn_tensor q = attn_tensor_dense(bq.d, ATTN_F16, 1, S, H, D), k = attn_tensor_dense(bk.d, ATTN_F16, 1, S, H, D),
                v = attn_tensor_dense(bv.d, ATTN_F16, 1, S, H, D), o = attn_tensor_dense(bo.d, ATTN_F32, 1, S, H, D);
    attn_desc d;
    memset(&d, 0, sizeof d);
    std::vector<unsigned char> host(bq.h.size());
#define EXPECT(call, status, what)                                                                  \
    do {                                                                                            \
        attn_status s_ = (call);                                                                    \
        std::vector<unsigned char> o_(bo.h.size()), l_(blse.h.size());                              \
        cudaMemcpy(o_.data(), bo.d, o_.size(), cudaMemcpyDeviceToHost);                             \
        cudaMemcpy(l_.data(), blse.d, l_.size(), cudaMemcpyDeviceToHost);                           \
        int untouched_ = o_ == bo.h && l_ == blse.h;                                                \
        CHECK(s_ == (status) && untouched_, "%s: got %s (want %s), outputs %s", what, attn_status_str(s_), \
              attn_status_str(status), untouched_ ? "untouched" : "WRITTEN");                       \
        if (s_ == (status) && untouched_) provoked[status] = 1;                                    \
    } while (0)
    {   /* host pointer where a device one is expected: a tensor, and a desc array */
        attn_tensor hq = q; hq.data = host.data();
        EXPECT(attn_cuda_forward(&d, hq, k, v, o, (float *)blse.d, 0), ATTN_ERR_CUDA_HOST_POINTER, "host q");
        std::vector<float> slopes(H, 0.1f);
        attn_desc hd = d; hd.alibi_slopes = slopes.data();
        EXPECT(attn_cuda_forward(&hd, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_CUDA_HOST_POINTER, "host alibi_slopes");
        std::vector<float> hl((size_t)H * S);
        EXPECT(attn_cuda_forward(&d, q, k, v, o, hl.data(), 0), ATTN_ERR_CUDA_HOST_POINTER, "host lse");
    }
    {   /* unsupported head dims */
        attn_tensor q2 = attn_tensor_dense(bq.d, ATTN_F16, 1, S, H, 48), k2 = attn_tensor_dense(bk.d, ATTN_F16, 1, S, H, 48),
                    v2 = attn_tensor_dense(bv.d, ATTN_F16, 1, S, H, 48), o2 = attn_tensor_dense(bo.d, ATTN_F32, 1, S, H, 48);
        EXPECT(attn_cuda_forward(&d, q2, k2, v2, o2, (float *)blse.d, 0), ATTN_ERR_CUDA_HEAD_DIM, "f16 D = 48");
        attn_tensor v3 = attn_tensor_dense(bv.d, ATTN_F16, 1, S, H, 32), o3 = attn_tensor_dense(bo.d, ATTN_F32, 1, S, H, 32);
        EXPECT(attn_cuda_forward(&d, q, k, v3, o3, (float *)blse.d, 0), ATTN_ERR_CUDA_HEAD_DIM, "f16 v.dim != q.dim");
        /* one row of 300 f32 (1200 bytes) fits the 2048-byte buffers (two rows ran into the next one) */
        attn_tensor q4 = attn_tensor_dense(bq.d, ATTN_F32, 1, 1, 1, 300), k4 = attn_tensor_dense(bk.d, ATTN_F32, 1, 1, 1, 300),
                    v4 = attn_tensor_dense(bv.d, ATTN_F32, 1, 1, 1, 300), o4 = attn_tensor_dense(bo.d, ATTN_F32, 1, 1, 1, 300);
        EXPECT(attn_cuda_forward(&d, q4, k4, v4, o4, (float *)blse.d, 0), ATTN_ERR_CUDA_HEAD_DIM, "f32 D = 300");
    }
    {   /* dtype mix: f32 q over an f16 cache (the CPU takes it, the CUDA kernels do not) */
        attn_tensor q5 = attn_tensor_dense(bo.d, ATTN_F32, 1, S, H, D);
        attn_tensor o5 = attn_tensor_dense(bq.d, ATTN_F16, 1, S, H, D);
        EXPECT(attn_cuda_forward(&d, q5, k, v, o5, (float *)blse.d, 0), ATTN_ERR_CUDA_DTYPE_MIX, "f32 q, f16 k/v");
    }
    {   /* unsupported options */
        attn_desc dd = d; dd.dropout_p = 0.1f;
        EXPECT(attn_cuda_forward(&dd, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_CUDA_UNSUPPORTED, "dropout_p");
        attn_desc dk = d; dk.kind = ATTN_LINEAR;
        EXPECT(attn_cuda_forward(&dk, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_CUDA_UNSUPPORTED, "kind ATTN_LINEAR");
    }
#ifdef ATTN_CUDA_EMULATE
    {   /* a runtime failure (the emulator fails the launch) becomes a status */
        emu().fail_next_launch = 1;
        attn_status s = attn_cuda_forward(&d, q, k, v, o, (float *)blse.d, 0);
        CHECK(s == ATTN_ERR_CUDA_RUNTIME, "failed launch: got %s", attn_status_str(s));
        if (s == ATTN_ERR_CUDA_RUNTIME) provoked[ATTN_ERR_CUDA_RUNTIME] = 1;
        memset(bo.h.data(), 0x5A, bo.h.size()); bo.up();
    }
#endif
    {   /* the CPU's own statuses, the same on both paths */
        attn_desc dw = d; dw.window_left = -1;
        EXPECT(attn_cuda_forward(&dw, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_WINDOW_LEFT, "window_left < 0");
        attn_tensor k6 = attn_tensor_dense(bk.d, ATTN_F16, 1, S, 3, D);
        EXPECT(attn_cuda_forward(&d, q, k6, v, o, (float *)blse.d, 0), ATTN_ERR_V_HEADS, "v.heads != k.heads");
        EXPECT(attn_cuda_forward(NULL, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_NULL_DESC, "NULL desc");
        buf sl; sl.alloc(4); ((int *)sl.h.data())[0] = S + 1; sl.up();
        attn_desc ds = d; ds.seqlens_q = (const int *)sl.d;
        EXPECT(attn_cuda_forward(&ds, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_SEQLENS_Q, "seqlens_q > q.seq (a device array)");
        buf al; al.alloc((size_t)H * 4); ((float *)al.h.data())[1] = NAN; al.up();
        attn_desc da = d; da.alibi_slopes = (const float *)al.d;
        EXPECT(attn_cuda_forward(&da, q, k, v, o, (float *)blse.d, 0), ATTN_ERR_ALIBI, "NaN ALiBi slope (a device array)");
        attn_tensor o7 = attn_tensor_dense(bq.d, ATTN_F16, 1, S, H, D);
        EXPECT(attn_cuda_forward(&d, q, k, v, o7, (float *)blse.d, 0), ATTN_ERR_OUT_OVERLAP, "out is q");
        attn_status scpu;
        {
            std::vector<unsigned char> hq2(bq.h.size()), hk2(bk.h.size()), hv2(bv.h.size()), ho2(bo.h.size());
            attn_tensor a = q, b = k, c = v, e = o;
            a.data = hq2.data(); b.data = hk2.data(); c.data = hv2.data(); e.data = ho2.data();
            scpu = attn_forward(&dw, a, b, c, e, NULL);
        }
        CHECK(scpu == ATTN_ERR_WINDOW_LEFT, "the CPU gives the same status");
    }
    {   /* decode: attn_decode's statuses on the device arrays (copied for validation), the CUDA ones */
        buf pk, pv, lens, tab;
        pk.alloc((size_t)4 * 4 * H * D * 2); pv.alloc((size_t)4 * 4 * H * D * 2); lens.alloc(4); tab.alloc(2 * 4);
        ((int *)lens.h.data())[0] = 7; ((int *)tab.h.data())[0] = 1; ((int *)tab.h.data())[1] = 9;   /* page 9 of 4 */
        lens.up(); tab.up();
        attn_kv_cache c;
        memset(&c, 0, sizeof c);
        c.k = attn_tensor_dense(pk.d, ATTN_F16, 4, 4, H, D); c.v = attn_tensor_dense(pv.d, ATTN_F16, 4, 4, H, D);
        c.lens = (int *)lens.d; c.batch = 1; c.page_size = 4; c.block_table = (const int *)tab.d; c.max_pages = 2;
        attn_tensor q1 = attn_tensor_dense(bq.d, ATTN_F16, 1, 1, H, D), o1 = attn_tensor_dense(bo.d, ATTN_F32, 1, 1, H, D);
        EXPECT(attn_cuda_decode(&d, q1, &c, o1, (float *)blse.d, 0), ATTN_ERR_KV_PAGE_INDEX, "decode, block table entry past the pool");
        int hl = 3;
        attn_kv_cache ch = c; ch.lens = &hl;
        EXPECT(attn_cuda_decode(&d, q1, &ch, o1, (float *)blse.d, 0), ATTN_ERR_CUDA_HOST_POINTER, "decode, host lens");
        ((int *)lens.h.data())[0] = 9; lens.up();
        EXPECT(attn_cuda_decode(&d, q1, &c, o1, (float *)blse.d, 0), ATTN_ERR_KV_LEN, "decode, lens past the capacity");
    }
    {   /* backward: attn_backward's statuses, the CUDA ones */
        buf gq, gk, gv, gl;
        gq.alloc(bq.h.size()); gk.alloc(bk.h.size()); gv.alloc(bv.h.size()); gl.alloc(blse.h.size());
        attn_tensor dq = attn_tensor_dense(gq.d, ATTN_F16, 1, S, H, D), dk = attn_tensor_dense(gk.d, ATTN_F16, 1, S, H, D),
                    dv = attn_tensor_dense(gv.d, ATTN_F16, 1, S, H, D), dout = attn_tensor_dense(NULL, ATTN_F16, 1, S, H, D);
        attn_tensor oo = attn_tensor_dense(bo.d, ATTN_F16, 1, S, H, D);
        std::vector<unsigned char> h0(gq.h.size(), 0);
        attn_status s = attn_cuda_backward(&d, q, k, v, oo, dout, (const float *)gl.d, dq, dk, dv, 0);
        CHECK(s == ATTN_ERR_BWD_NULL_DOUT, "backward, NULL dout: %s", attn_status_str(s));
        dout.data = bo.d;
        attn_tensor hq = dq; hq.data = h0.data();
        s = attn_cuda_backward(&d, q, k, v, oo, dout, (const float *)gl.d, hq, dk, dv, 0);
        CHECK(s == ATTN_ERR_CUDA_HOST_POINTER, "backward, host dq: %s", attn_status_str(s));
        buf db; db.alloc(4);
        attn_desc dd = d; dd.dbias = (float *)db.d;
        s = attn_cuda_backward(&dd, q, k, v, oo, dout, (const float *)gl.d, dq, dk, dv, 0);
        CHECK(s == ATTN_ERR_BWD_DBIAS_NO_BIAS, "backward, dbias without bias (attn_backward's status): %s", attn_status_str(s));
        size_t n = 0;
        s = attn_cuda_backward_workspace_size(&d, q, k, v, &n);
        CHECK(s == ATTN_OK && n == (size_t)H * S * 4, "backward workspace query: %s, %zu bytes", attn_status_str(s), n);
    }
}

/* ---- decoding over contiguous and paged caches vs attn_decode -------------------------------- */
struct dcase {
    const char *name;
    attn_dtype dt;
    int B, Sq, Hq, Hkv, D, page;   /* page 0: contiguous */
    int causal, wl, sink, alibi, softcap, ws;   /* ws: pass a workspace of the queried size */
    int bias;                       /* a [B, Hq, Sq, capacity] bias */
};
static void run_decode_case(const dcase &c, int tf32 = 0) {
    const int lens_v[4] = { 150, 97, 1, 64 };
    const int cap = 160, mp = c.page ? (cap + c.page - 1) / c.page : 0, npages = c.page ? c.B * mp + 3 : 0;
    int i;
    buf bq, bk, bv, bo, blse, blens, btab, bslope, bws, bbias;
    attn_tensor k, v;
    if (c.page) {
        k = attn_tensor_dense(NULL, c.dt, npages, c.page, c.Hkv, c.D); v = attn_tensor_dense(NULL, c.dt, npages, c.page, c.Hkv, c.D);
    } else {
        k = attn_tensor_dense(NULL, c.dt, c.B, cap, c.Hkv, c.D); v = attn_tensor_dense(NULL, c.dt, c.B, cap, c.Hkv, c.D);
    }
    const size_t nk = (size_t)k.batch * k.seq * k.heads * k.dim, nq = (size_t)c.B * c.Sq * c.Hq * c.D;
    bk.alloc(nk * esz(c.dt)); bv.alloc(nk * esz(c.dt)); bq.alloc(nq * esz(c.dt)); bo.alloc(nq * 4);
    blse.alloc((size_t)c.B * c.Hq * c.Sq * 4); blens.alloc((size_t)c.B * 4);
    for (size_t x = 0; x < nk; ++x) { put(bk.h.data(), c.dt, x, nrand()); put(bv.h.data(), c.dt, x, nrand()); }
    for (size_t x = 0; x < nq; ++x) put(bq.h.data(), c.dt, x, nrand());
    for (i = 0; i < c.B; ++i) ((int *)blens.h.data())[i] = lens_v[i % 4];
    if (c.page) {   /* pages handed out in a scrambled order */
        btab.alloc((size_t)c.B * mp * 4);
        for (i = 0; i < c.B * mp; ++i) ((int *)btab.h.data())[i] = (i * 7 + 2) % npages;
    }
    if (c.alibi) { bslope.alloc((size_t)c.Hq * 4); for (i = 0; i < c.Hq; ++i) ((float *)bslope.h.data())[i] = 0.03f * (i + 1); }
    if (c.bias) { bbias.alloc((size_t)c.B * c.Hq * c.Sq * cap * 4); for (size_t x = 0; x < bbias.h.size() / 4; ++x) ((float *)bbias.h.data())[x] = nrand(); }
    float vmax = 0;
    for (size_t x = 0; x < nk; ++x) vmax = fmaxf(vmax, fabsf(get(bv.h.data(), c.dt, x)));
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.causal = c.causal; d.window_left = c.wl; d.sink_tokens = c.sink; d.softcap = c.softcap ? 2.0f : 0.0f;
    d.bf16_kernels = ATTN_BF16_FP32;
    d.allow_tf32 = tf32;
    attn_kv_cache hc;
    memset(&hc, 0, sizeof hc);
    hc.batch = c.B; hc.page_size = c.page; hc.max_pages = mp;
    /* CPU; with tf32 also on TF32-rounded q and cache (reference B) */
    const int nref = tf32 && tf32_shape(c.D, c.D) ? 2 : 1;
    std::vector<float> ref_o(nq), ref_lse((size_t)c.B * c.Hq * c.Sq), ref_ob(nq), ref_lseb(ref_lse.size());
    std::vector<unsigned char> rq, rk, rv;
    if (nref == 2) { rq = tf32_rounded(bq.h); rk = tf32_rounded(bk.h); rv = tf32_rounded(bv.h); }
    for (int ref = 0; ref < nref; ++ref) {
        attn_desc hd = d;
        if (c.alibi) hd.alibi_slopes = (const float *)bslope.h.data();
        if (c.bias) { hd.bias = attn_bias_dense((const float *)bbias.h.data(), c.B, c.Hq, c.Sq, cap); }
        hc.k = k; hc.v = v; hc.k.data = ref ? rk.data() : bk.h.data(); hc.v.data = ref ? rv.data() : bv.h.data();
        hc.lens = (int *)blens.h.data(); hc.block_table = c.page ? (const int *)btab.h.data() : NULL;
        attn_tensor q = attn_tensor_dense(ref ? rq.data() : bq.h.data(), c.dt, c.B, c.Sq, c.Hq, c.D);
        attn_tensor o = attn_tensor_dense((ref ? ref_ob : ref_o).data(), ATTN_F32, c.B, c.Sq, c.Hq, c.D);
        attn_status s = attn_decode(&hd, q, &hc, o, (ref ? ref_lseb : ref_lse).data());
        CHECK(s == ATTN_OK, "%s: CPU attn_decode: %s", c.name, attn_status_str(s));
    }
    bq.up(); bk.up(); bv.up(); blens.up();
    if (c.page) btab.up();
    if (c.alibi) { bslope.up(); d.alibi_slopes = (const float *)bslope.d; }
    if (c.bias) { bbias.up(); d.bias = attn_bias_dense((const float *)bbias.d, c.B, c.Hq, c.Sq, cap); }
    memset(bo.h.data(), 0x7F, bo.h.size()); bo.up();
    attn_kv_cache dc = hc;
    dc.k.data = bk.d; dc.v.data = bv.d; dc.lens = (int *)blens.d; dc.block_table = c.page ? (const int *)btab.d : NULL;
    attn_tensor q = attn_tensor_dense(bq.d, c.dt, c.B, c.Sq, c.Hq, c.D);
    attn_tensor o = attn_tensor_dense(bo.d, ATTN_F32, c.B, c.Sq, c.Hq, c.D);
    size_t wsb = 0;
    attn_status s = attn_cuda_decode_workspace_size(&d, q, &dc, &wsb);
    CHECK(s == ATTN_OK, "%s: workspace query: %s", c.name, attn_status_str(s));
    if (c.ws && wsb) {
        bws.alloc(wsb);
        d.workspace = bws.d; d.workspace_size = wsb - 4;   /* too small first: attn_decode's status */
        std::vector<unsigned char> before(bo.h);
        s = attn_cuda_decode(&d, q, &dc, o, (float *)blse.d, 0);
        bo.down();
        CHECK(s == ATTN_ERR_WORKSPACE && bo.h == before, "%s: short workspace: %s", c.name, attn_status_str(s));
        d.workspace_size = wsb;
    }
#ifdef ATTN_CUDA_EMULATE
    emu_reset_errors();
#endif
    s = attn_cuda_decode(&d, q, &dc, o, (float *)blse.d, 0);
    CHECK(s == ATTN_OK, "%s: attn_cuda_decode: %s", c.name, attn_status_str(s));
    cudaDeviceSynchronize();
#ifdef ATTN_CUDA_EMULATE
    CHECK(emu_errors() == 0, "%s: the emulator reported %d errors", c.name, emu_errors());
    CHECK(wsb > 0, "%s: the cache was split (workspace %zu bytes)", c.name, wsb);
#endif
    bo.down(); blse.down();
    for (int ref = 0; ref < nref; ++ref) {
        const std::vector<float> &ro = ref ? ref_ob : ref_o, &rl = ref ? ref_lseb : ref_lse;
        double err = 0, lerr = 0;
        for (size_t x = 0; x < nq; ++x) {
            const float a = ((float *)bo.h.data())[x], r = ro[x];
            err = fmax(err, a == r ? 0.0 : (isnan(a) || isnan(r)) ? 1e30 : fabs((double)a - r));
        }
        for (size_t x = 0; x < rl.size(); ++x) {
            const float a = ((float *)blse.h.data())[x], r = rl[x];
            lerr = fmax(lerr, a == r ? 0.0 : (isnan(a) || isnan(r) || isinf(a) || isinf(r)) ? 1e30 : fabs((double)a - r));
        }
        double tol = c.dt == ATTN_F32 ? 1e-5 : c.dt == ATTN_F16 ? 4e-3 : 3e-2;
        double ltol = c.dt == ATTN_F32 ? 1e-4 : c.dt == ATTN_F16 ? 4e-3 : 3e-2;
        const char *what = "";
        if (nref == 2) {
            const tf32_tol t = tf32_tolerances(qk_abs_max(q, bq.h.data(), k, bk.h.data(), d.scale), c.D);
            tol = ref ? t.out_b : t.out_a; ltol = ref ? t.lse_b : t.lse_a;
            what = ref ? " (TF32 vs cpu on TF32-rounded q, k, v)" : " (TF32 vs cpu)";
            double &w = ref ? tf32_worst_b : tf32_worst_a;
            w = fmax(w, fmax(err / vmax / tol, lerr / ltol));
        }
        CHECK(err / vmax <= tol, "%s%s: max |out - cpu| / max|v| = %g (tolerance %g)", c.name, what, err / vmax, tol);
        CHECK(lerr <= ltol, "%s%s: max |lse - cpu| = %g (tolerance %g)", c.name, what, lerr, ltol);
    }
    if (tf32) {   /* allow_tf32 = 0: the fp32 kernel; different bits where TF32 ran, the same where it cannot */
        const std::vector<unsigned char> t_out(bo.h), t_lse(blse.h);
        d.allow_tf32 = 0;
        memset(bo.h.data(), 0x7F, bo.h.size()); bo.up();
        s = attn_cuda_decode(&d, q, &dc, o, (float *)blse.d, 0);
        cudaDeviceSynchronize();
        bo.down(); blse.down();
        CHECK(s == ATTN_OK, "%s: allow_tf32 = 0: %s", c.name, attn_status_str(s));
        if (nref == 2) CHECK(bo.h != t_out, "%s: the TF32 result differs from the fp32 one (TF32 rounding was used)", c.name);
        else CHECK(bo.h == t_out && blse.h == t_lse, "%s: a head dim the TF32 kernel lacks: allow_tf32 1 and 0 bitwise equal", c.name);
    }
}
static void test_decode(void) {
    static const dcase cases[] = {
        /* name                      dt         B Sq Hq Hkv D   page caus wl sink ali cap ws */
        { "contiguous f16 GQA",      ATTN_F16,  2, 1, 4, 2, 64,  0,  0,  0, 0,   0,  0,  0, 0 },
        { "contiguous bf16 Sq=3",    ATTN_BF16, 3, 3, 2, 1, 32,  0,  1,  0, 0,   1,  0,  1, 0 },
        { "paged 16 f16 window",     ATTN_F16,  3, 1, 2, 2, 128, 16, 1, 40, 4,   0,  1,  0, 0 },
        { "paged 5 bf16 MQA",        ATTN_BF16, 4, 2, 4, 1, 64,  5,  1,  0, 0,   0,  0,  1, 0 },
        { "paged 7 f32",             ATTN_F32,  2, 1, 2, 1, 48,  7,  1,  0, 0,   1,  1,  0, 0 },
        { "paged 8 f16 bias",        ATTN_F16,  2, 2, 4, 2, 32,  8,  1,  0, 0,   1,  0,  0, 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_decode_case(cases[i]);
    static const dcase tcases[] = {   /* allow_tf32 over f32 caches */
        /* name                      dt         B Sq Hq Hkv D   page caus wl sink ali cap ws bias */
        { "tf32 contiguous GQA D64", ATTN_F32,  2, 1, 4, 2, 64,  0,  0,  0, 0,   0,  0,  0, 0 },
        { "tf32 paged 16 window D128", ATTN_F32, 3, 1, 2, 2, 128, 16, 1, 40, 4,  0,  1,  0, 0 },
        { "tf32 paged 5 MQA Sq=2 D32", ATTN_F32, 4, 2, 4, 1, 32,  5,  1,  0, 0,   1,  0,  1, 0 },
        { "tf32 paged 8 bias D256",  ATTN_F32,  2, 2, 4, 2, 256, 8,  1,  0, 0,   1,  0,  0, 1 },
        { "tf32 paged 7 D48 (fp32)", ATTN_F32,  2, 1, 2, 1, 48,  7,  1,  0, 0,   1,  1,  0, 0 },
    };
    for (size_t i = 0; i < sizeof tcases / sizeof tcases[0]; ++i) run_decode_case(tcases[i], 1);
}

/* ---- attn_cuda_merge vs attn_merge ------------------------------------------------------------ */
static void test_merge(void) {
    const int B = 2, S = 3, H = 2, Dv = 40, n = 3;
    const attn_dtype dts[n] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    buf bp[n], bl[n];
    attn_tensor parts[n], hparts[n];
    const float *lses[n], *hlses[n];
    int p, inplace;
    for (p = 0; p < n; ++p) {
        bp[p].alloc((size_t)B * S * H * Dv * esz(dts[p])); bl[p].alloc((size_t)B * H * S * 4);
        for (size_t x = 0; x < (size_t)B * S * H * Dv; ++x) put(bp[p].h.data(), dts[p], x, nrand());
        for (size_t x = 0; x < (size_t)B * H * S; ++x) ((float *)bl[p].h.data())[x] = nrand() * 3;
    }
    /* row 0: every part -inf; row 1: one part -inf; row 2: a NaN */
    for (p = 0; p < n; ++p) ((float *)bl[p].h.data())[0] = -INFINITY;
    ((float *)bl[1].h.data())[1] = -INFINITY;
    ((float *)bl[2].h.data())[2] = NAN;
    for (inplace = 0; inplace < 2; ++inplace) {
        buf bo, blo;
        for (p = 0; p < n; ++p) {
            bp[p].up(); bl[p].up();
            parts[p] = attn_tensor_dense(bp[p].d, dts[p], B, S, H, Dv); lses[p] = (const float *)bl[p].d;
            hparts[p] = parts[p]; hparts[p].data = bp[p].h.data(); hlses[p] = (const float *)bl[p].h.data();
        }
        std::vector<float> ref((size_t)B * S * H * Dv), rlse((size_t)B * H * S);
        attn_status s = attn_merge(n, hparts, hlses, attn_tensor_dense(ref.data(), ATTN_F32, B, S, H, Dv), rlse.data());
        CHECK(s == ATTN_OK, "CPU attn_merge: %s", attn_status_str(s));
        bo.alloc(ref.size() * 4); blo.alloc(rlse.size() * 4);
        attn_tensor out = inplace ? parts[0] : attn_tensor_dense(bo.d, ATTN_F32, B, S, H, Dv);
        s = attn_cuda_merge(n, parts, lses, out, (float *)blo.d, 0);
        CHECK(s == ATTN_OK, "attn_cuda_merge%s: %s", inplace ? " (in place)" : "", attn_status_str(s));
        (inplace ? bp[0] : bo).down(); blo.down();
        double err = 0, lerr = 0;
        for (size_t x = 0; x < ref.size(); ++x) {
            const float a = inplace ? get(bp[0].h.data(), ATTN_F32, x) : ((float *)bo.h.data())[x], r = ref[x];
            err = fmax(err, a == r || (isnan(a) && isnan(r)) ? 0.0 : isnan(a) || isnan(r) ? 1e30 : fabs((double)a - r));
        }
        for (size_t x = 0; x < rlse.size(); ++x) {
            const float a = ((float *)blo.h.data())[x], r = rlse[x];
            lerr = fmax(lerr, a == r || (isnan(a) && isnan(r)) ? 0.0 : isnan(a) || isnan(r) || isinf(a) || isinf(r) ? 1e30 : fabs((double)a - r));
        }
        CHECK(err <= 1e-5 && lerr <= 1e-5, "attn_cuda_merge%s vs attn_merge: out %g, lse %g", inplace ? " (in place)" : "", err, lerr);
    }
    {   /* a host part: the CUDA status; a bad part shape: attn_merge's */
        buf bo;
        std::vector<float> host((size_t)B * S * H * Dv);
        attn_tensor pp[2] = { parts[1], attn_tensor_dense(host.data(), ATTN_F32, B, S, H, Dv) };
        const float *ll[2] = { lses[1], lses[2] };
        bo.alloc(host.size() * 4);
        memset(bo.h.data(), 0x5A, bo.h.size()); bo.up();
        attn_status s = attn_cuda_merge(2, pp, ll, attn_tensor_dense(bo.d, ATTN_F32, B, S, H, Dv), NULL, 0);
        std::vector<unsigned char> before(bo.h); bo.down();
        CHECK(s == ATTN_ERR_CUDA_HOST_POINTER && before == bo.h, "merge with a host part: %s", attn_status_str(s));
        pp[1] = parts[2]; pp[1].dim = Dv - 1;
        s = attn_cuda_merge(2, pp, ll, attn_tensor_dense(bo.d, ATTN_F32, B, S, H, Dv), NULL, 0);
        CHECK(s == ATTN_ERR_MERGE_SHAPE, "merge with a part of another shape: %s", attn_status_str(s));
    }
}

/* ---- backward vs attn_backward ----------------------------------------------------------------- */
struct bcase {
    const char *name;
    attn_dtype dt;
    int B, Sq, Sk, Hq, Hkv, D, Dv;
    int causal, wl, dil, sink, global, softcap, alibi, bias, seqlens, varlen;
    int wr = 0;                 /* window_right */
    int pad = 0;                /* dout rows `pad` elements apart from 16-byte alignment (element loads) */
};
static double bwd_tolerance(const bcase &c);     /* in the tensor-core backward block below */
static void run_backward_case(const bcase &c) {
    const int B = c.varlen ? 1 : c.B, nseq = c.B;
    int Sq = c.Sq, Sk = c.Sk, i;
    std::vector<int> cu_q(nseq + 1, 0), cu_k(nseq + 1, 0), lq(nseq), lk(nseq);
    for (i = 0; i < nseq; ++i) {
        lq[i] = c.Sq - 5 * i; lk[i] = c.Sk - 7 * i;
        cu_q[i + 1] = cu_q[i] + lq[i]; cu_k[i + 1] = cu_k[i] + lk[i];
    }
    if (c.varlen) { Sq = cu_q[nseq] + 2; Sk = cu_k[nseq] + 3; }
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.bf16_kernels = ATTN_BF16_FP32;
    d.causal = c.causal; d.window_left = c.wl; d.window_right = c.wr; d.dilation = c.dil; d.sink_tokens = c.sink; d.global_tokens = c.global;
    d.softcap = c.softcap ? 1.5f : 0.0f;
    buf bq, bk, bv, bo, bdo, blse, bdq, bdk, bdv, bslope, bbias, bsq, bsk, bcq, bck;
    const size_t nq = (size_t)B * Sq * c.Hq * c.D, nk = (size_t)B * Sk * c.Hkv * c.D, nv = (size_t)B * Sk * c.Hkv * c.Dv,
                 no = (size_t)B * Sq * c.Hq * c.Dv, ndo = (size_t)B * Sq * (c.Hq * c.Dv + c.pad);
    bq.alloc(nq * esz(c.dt)); bk.alloc(nk * esz(c.dt)); bv.alloc(nv * esz(c.dt)); bo.alloc(no * esz(c.dt));
    bdo.alloc(ndo * esz(c.dt)); blse.alloc((size_t)B * c.Hq * Sq * 4);
    bdq.alloc(nq * 4); bdk.alloc(nk * 4); bdv.alloc(nv * 4);
    for (size_t x = 0; x < nq; ++x) put(bq.h.data(), c.dt, x, nrand());
    for (size_t x = 0; x < nk; ++x) put(bk.h.data(), c.dt, x, nrand());
    for (size_t x = 0; x < nv; ++x) put(bv.h.data(), c.dt, x, nrand());
    for (size_t x = 0; x < ndo; ++x) put(bdo.h.data(), c.dt, x, nrand());
    attn_tensor q = attn_tensor_dense(NULL, c.dt, B, Sq, c.Hq, c.D), k = attn_tensor_dense(NULL, c.dt, B, Sk, c.Hkv, c.D),
                v = attn_tensor_dense(NULL, c.dt, B, Sk, c.Hkv, c.Dv), o = attn_tensor_dense(NULL, c.dt, B, Sq, c.Hq, c.Dv),
                go = o, gq = attn_tensor_dense(NULL, ATTN_F32, B, Sq, c.Hq, c.D),
                gk = attn_tensor_dense(NULL, ATTN_F32, B, Sk, c.Hkv, c.D), gv = attn_tensor_dense(NULL, ATTN_F32, B, Sk, c.Hkv, c.Dv);
    if (c.pad) { go.stride_head = c.Dv; go.stride_seq = c.Hq * c.Dv + c.pad; go.stride_batch = (ptrdiff_t)Sq * go.stride_seq; }
    if (c.alibi) { bslope.alloc((size_t)c.Hq * 4); for (i = 0; i < c.Hq; ++i) ((float *)bslope.h.data())[i] = 0.07f * (i + 1); }
    if (c.bias) { bbias.alloc((size_t)(c.bias == 2 ? 1 : B * c.Hq) * Sq * Sk * 4); for (size_t x = 0; x < bbias.h.size() / 4; ++x) ((float *)bbias.h.data())[x] = nrand() * 0.5f; }
    if (c.seqlens) { bsq.alloc((size_t)B * 4); bsk.alloc((size_t)B * 4); memcpy(bsq.h.data(), lq.data(), (size_t)B * 4); memcpy(bsk.h.data(), lk.data(), (size_t)B * 4); }
    if (c.varlen) {
        bcq.alloc((size_t)(nseq + 1) * 4); bck.alloc((size_t)(nseq + 1) * 4);
        memcpy(bcq.h.data(), cu_q.data(), bcq.h.size()); memcpy(bck.h.data(), cu_k.data(), bck.h.size());
        d.varlen_batch = nseq;
    }
    std::vector<float> rq(nq), rk(nk), rv(nv);
    {   /* the CPU forward (its out and lse feed both backward passes), then the CPU backward */
        attn_desc hd = d;
        attn_tensor hq = q, hk = k, hv = v, ho = o, hgo = go, hgq = gq, hgk = gk, hgv = gv;
        hq.data = bq.h.data(); hk.data = bk.h.data(); hv.data = bv.h.data(); ho.data = bo.h.data(); hgo.data = bdo.h.data();
        hgq.data = rq.data(); hgk.data = rk.data(); hgv.data = rv.data();
        if (c.alibi) hd.alibi_slopes = (const float *)bslope.h.data();
        if (c.bias) { hd.bias = attn_bias_dense((const float *)bbias.h.data(), c.bias == 2 ? 1 : B, c.bias == 2 ? 1 : c.Hq, Sq, Sk); }
        if (c.seqlens) { hd.seqlens_q = (const int *)bsq.h.data(); hd.seqlens_k = (const int *)bsk.h.data(); }
        if (c.varlen) { hd.cu_seqlens_q = (const int *)bcq.h.data(); hd.cu_seqlens_k = (const int *)bck.h.data(); }
        attn_status s = attn_forward(&hd, hq, hk, hv, ho, (float *)blse.h.data());
        CHECK(s == ATTN_OK, "%s: CPU forward: %s", c.name, attn_status_str(s));
        s = attn_backward(&hd, hq, hk, hv, ho, hgo, (const float *)blse.h.data(), hgq, hgk, hgv);
        CHECK(s == ATTN_OK, "%s: CPU backward: %s", c.name, attn_status_str(s));
    }
    bq.up(); bk.up(); bv.up(); bo.up(); bdo.up(); blse.up();
    if (c.alibi) { bslope.up(); d.alibi_slopes = (const float *)bslope.d; }
    if (c.bias) { bbias.up(); d.bias = attn_bias_dense((const float *)bbias.d, c.bias == 2 ? 1 : B, c.bias == 2 ? 1 : c.Hq, Sq, Sk); }
    if (c.seqlens) { bsq.up(); bsk.up(); d.seqlens_q = (const int *)bsq.d; d.seqlens_k = (const int *)bsk.d; }
    if (c.varlen) { bcq.up(); bck.up(); d.cu_seqlens_q = (const int *)bcq.d; d.cu_seqlens_k = (const int *)bck.d; }
    q.data = bq.d; k.data = bk.d; v.data = bv.d; o.data = bo.d; go.data = bdo.d; gq.data = bdq.d; gk.data = bdk.d; gv.data = bdv.d;
    std::vector<unsigned char> first[3];
    for (int rep = 0; rep < 2; ++rep) {
        memset(bdq.h.data(), 0x7F, bdq.h.size()); memset(bdk.h.data(), 0x7F, bdk.h.size()); memset(bdv.h.data(), 0x7F, bdv.h.size());
        bdq.up(); bdk.up(); bdv.up();
#ifdef ATTN_CUDA_EMULATE
        emu_reset_errors();
#endif
        attn_status s = attn_cuda_backward(&d, q, k, v, o, go, (const float *)blse.d, gq, gk, gv, 0);
        CHECK(s == ATTN_OK, "%s: attn_cuda_backward: %s", c.name, attn_status_str(s));
        cudaDeviceSynchronize();
#ifdef ATTN_CUDA_EMULATE
        CHECK(emu_errors() == 0, "%s: the emulator reported %d errors", c.name, emu_errors());
#endif
        bdq.down(); bdk.down(); bdv.down();
        if (rep == 0) { first[0] = bdq.h; first[1] = bdk.h; first[2] = bdv.h; continue; }
        CHECK(first[0] == bdq.h && first[1] == bdk.h && first[2] == bdv.h, "%s: two runs bitwise equal (deterministic)", c.name);
    }
    const std::vector<float> *refs[3] = { &rq, &rk, &rv };
    buf *got[3] = { &bdq, &bdk, &bdv };
    const char *names[3] = { "dq", "dk", "dv" };
    for (int t = 0; t < 3; ++t) {
        double err = 0, mx = 1e-30;
        for (size_t x = 0; x < refs[t]->size(); ++x) {
            const float a = ((float *)got[t]->h.data())[x], r = (*refs[t])[x];
            mx = fmax(mx, fabs((double)r));
            err = fmax(err, a == r ? 0.0 : isnan(a) || isnan(r) ? 1e30 : fabs((double)a - r));
        }
        const double tol = bwd_tolerance(c);
        if (getenv("TCB_PRINT")) printf("  %-28s %s %.3g\n", c.name, names[t], err / mx);
        CHECK(err / mx <= tol, "%s: %s: max |cuda - cpu| / max |cpu| = %g (tolerance %g)", c.name, names[t], err / mx, tol);
    }
}
static void test_backward(void) {
    static const bcase cases[] = {
        /* name                  dt         B Sq  Sk  Hq Hkv D   Dv  caus wl dil sink glob cap ali bias sl vl */
        { "causal GQA f16",      ATTN_F16,  2, 40, 50, 4, 2, 64, 64,  1,  0, 0, 0,   0,   0,  0,  0,   0, 0 },
        { "masks f32",           ATTN_F32,  1, 45, 45, 2, 1, 40, 24,  1,  6, 2, 2,   3,   1,  1,  1,   0, 0 },
        { "seqlens bf16",        ATTN_BF16, 3, 30, 35, 2, 2, 32, 32,  1,  0, 0, 0,   0,   0,  0,  0,   1, 0 },
        { "varlen MQA f32",      ATTN_F32,  3, 20, 25, 4, 1, 16, 16,  1,  5, 0, 1,   0,   1,  0,  0,   0, 1 },
        { "D128 bf16 GQA 4:1",   ATTN_BF16, 1, 33, 40, 4, 1, 128, 128, 1, 9, 0, 2,   0,   0,  0,  2,   0, 0 },
        { "D256 f16 bias",       ATTN_F16,  2, 17, 20, 2, 2, 256, 256, 0, 0, 0, 0,   2,   0,  1,  1,   0, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_backward_case(cases[i]);
}

/* ---- tensor-core backward (attn_cuda.cuh 2d) ---------------------------------------------------
   f16/bf16 q, k, v, dout of one dtype with head dim 32/64/96/128 (v.dim == q.dim) run the
   tensor-core kernels; everything else (f32, D 256, mixed dtypes) the CUDA-core ones, held to
   1e-4. The tensor-core path rounds P and dS to the input dtype before the mma (unit roundoff
   u = 2^-11 f16, 2^-8 bf16): the error of dV_j is at most u sum_i P_ij |dO_i|, of dK_j
   u scale sum_i |dS_ij| |q_i|, of dQ_i u scale sum_j |dS_ij| |k_j| (plus fp32 sums); the
   rounding errors of the terms have random signs, so relative to max |cpu| over a gradient
   the error stays below u (measured: at most 0.85 u over these cases). Tolerance 4 u:
   f16 1.95e-3, bf16 1.56e-2 (a wrong mask element, fragment or tile gives errors of order
   0.1 and more). Every case also runs twice and must be bitwise equal (run_backward_case),
   with no emulator error (races, barriers, misaligned or out-of-bounds fragment addresses).
   run_backward_bound checks the elementwise bound itself, element by element (measured: at
   most 0.84 of it). */
static int bwd_tc_path(const bcase &c) {
    return c.dt != ATTN_F32 && c.D == c.Dv && (c.D == 32 || c.D == 64 || c.D == 96 || c.D == 128);
}
static double bwd_tolerance(const bcase &c) {
    if (!bwd_tc_path(c)) return 1e-4;
    return 4.0 * (c.dt == ATTN_F16 ? 1.0 / 2048 : 1.0 / 256);
}
static void run_backward_bound(attn_dtype dt, int Sq, int Sk, int D, int causal);
static void test_backward_tc(void) {
    static const bcase cases[] = {
        /* name                  dt         B Sq   Sk   Hq Hkv D   Dv  caus wl dil sink glob cap ali bias sl vl  wr */
        /* several key and query tiles with tails (dK/dV: 3 key blocks x 3 query tiles; dQ: 3 x 3) */
        { "tc tiles f16 D64",    ATTN_F16,  1, 150, 140, 2, 1, 64, 64,   0,  0, 0, 0,   0,   0,  0,  0,   0, 0,  0 },
        { "tc causal bf16 D128", ATTN_BF16, 1, 70,  100, 2, 2, 128, 128, 1,  0, 0, 0,   0,   0,  0,  0,   0, 0,  0 },
        { "tc window f16 D32",   ATTN_F16,  1, 90,  90,  2, 1, 32, 32,   0, 20, 0, 3,   0,   0,  0,  0,   0, 0,  7 },
        { "tc dilation bf16 D96", ATTN_BF16, 1, 70, 70,  2, 1, 96, 96,   1,  4, 3, 0,   5,   0,  0,  0,   0, 0,  0 },
        { "tc cap alibi bias f16", ATTN_F16, 2, 40, 50,  2, 2, 64, 64,   1,  0, 0, 0,   0,   1,  1,  1,   0, 0,  0 },
        { "tc bias bcast bf16 D32", ATTN_BF16, 1, 33, 70, 2, 1, 32, 32,  0,  0, 0, 0,   0,   0,  0,  2,   0, 0,  0 },
        { "tc seqlens f16 D96",  ATTN_F16,  3, 45,  70,  2, 1, 96, 96,   1,  0, 0, 0,   0,   0,  0,  0,   1, 0,  0 },
        { "tc varlen GQA bf16",  ATTN_BF16, 3, 40,  75,  4, 2, 64, 64,   1,  0, 0, 2,   0,   0,  1,  0,   0, 1,  0 },
        { "tc varlen MQA f16 D128", ATTN_F16, 2, 20, 30, 4, 1, 128, 128, 0, 10, 0, 0,   0,   1,  0,  0,   0, 1,  0 },
        /* GQA with per-head bias, ALiBi slopes and softcap (the group's heads differ in each) */
        { "tc GQA bias alibi cap bf16", ATTN_BF16, 2, 36, 44, 4, 2, 64, 64, 0, 0, 0, 0, 0, 1,  1,  1,   0, 0,  0 },
        /* bottom-right causal with Sq > Sk: the first 30 rows see no key (lse -inf, zero gradients) */
        { "tc causal Sq>Sk f16 D32", ATTN_F16, 1, 100, 70, 2, 1, 32, 32, 1,  0, 0, 0,   0,   0,  0,  0,   0, 0,  0 },
        /* dout rows not 16-byte aligned: element loads instead of cp.async */
        { "tc unaligned bf16 D64", ATTN_BF16, 2, 50, 66, 2, 1, 64, 64,   1,  0, 0, 0,   0,   0,  0,  0,   0, 0,  0, 4 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) run_backward_case(cases[i]);
    run_backward_bound(ATTN_F16, 90, 100, 64, 0);
    run_backward_bound(ATTN_BF16, 90, 100, 64, 0);
    run_backward_bound(ATTN_F16, 70, 70, 128, 1);
    run_backward_bound(ATTN_BF16, 70, 70, 32, 1);
}
/* The elementwise bound of attn_cuda.cuh 2d, checked per gradient element against attn_backward
   (same inputs: the CPU forward's out, rounded to the dtype, and lse), one head, causal or not:
     |dV_jd - cpu| <= u sum_i P_ij |dO_id| + eps sum_i P_ij |dO_id|
     |dK_jd - cpu| <= scale sum_i ((u + eps) |dS_ij| + eps E_ij) |q_id|,
     |dQ_id - cpu| <= scale sum_j ((u + eps) |dS_ij| + eps E_ij) |k_jd|
   with P, dS in double from the same inputs, eps = 2^-13 for the fp32 sums of both sides (at
   most ~130 terms: 130 x 2^-24 < 2^-13 of the sum of their magnitudes) and E_ij =
   P_ij (sum_d |dO_id v_jd| + sum_d |dO_id o_id|), the scale of dS's own fp32 error (dP - D_i
   cancels: a row that sees one key has dS = 0 exactly in double). */
static void run_backward_bound(attn_dtype dt, int Sq, int Sk, int D, int causal) {
    const double u = dt == ATTN_F16 ? 1.0 / 2048 : 1.0 / 256, eps = 1.0 / 8192;
    const float scale = 1.0f / sqrtf((float)D);
    const size_t nq = (size_t)Sq * D, nk = (size_t)Sk * D;
    const long long shift = (long long)Sk - Sq;
    buf bq, bk, bv, bo, bdo, blse, bdq, bdk, bdv;
    int i, j, d;
    bq.alloc(nq * esz(dt)); bk.alloc(nk * esz(dt)); bv.alloc(nk * esz(dt)); bo.alloc(nq * esz(dt)); bdo.alloc(nq * esz(dt));
    blse.alloc((size_t)Sq * 4); bdq.alloc(nq * 4); bdk.alloc(nk * 4); bdv.alloc(nk * 4);
    for (size_t x = 0; x < nq; ++x) { put(bq.h.data(), dt, x, nrand()); put(bdo.h.data(), dt, x, nrand()); }
    for (size_t x = 0; x < nk; ++x) { put(bk.h.data(), dt, x, nrand()); put(bv.h.data(), dt, x, nrand()); }
    attn_desc dsc;
    memset(&dsc, 0, sizeof dsc);
    dsc.bf16_kernels = ATTN_BF16_FP32;
    dsc.causal = causal;
    attn_tensor q = attn_tensor_dense(bq.h.data(), dt, 1, Sq, 1, D), k = attn_tensor_dense(bk.h.data(), dt, 1, Sk, 1, D),
                v = attn_tensor_dense(bv.h.data(), dt, 1, Sk, 1, D), o = attn_tensor_dense(bo.h.data(), dt, 1, Sq, 1, D),
                go = attn_tensor_dense(bdo.h.data(), dt, 1, Sq, 1, D);
    std::vector<float> rq(nq), rk(nk), rv(nk);
    attn_status s = attn_forward(&dsc, q, k, v, o, (float *)blse.h.data());
    CHECK(s == ATTN_OK, "bound: CPU forward: %s", attn_status_str(s));
    s = attn_backward(&dsc, q, k, v, o, go, (const float *)blse.h.data(), attn_tensor_dense(rq.data(), ATTN_F32, 1, Sq, 1, D),
                      attn_tensor_dense(rk.data(), ATTN_F32, 1, Sk, 1, D), attn_tensor_dense(rv.data(), ATTN_F32, 1, Sk, 1, D));
    CHECK(s == ATTN_OK, "bound: CPU backward: %s", attn_status_str(s));
    bq.up(); bk.up(); bv.up(); bo.up(); bdo.up(); blse.up();
    q.data = bq.d; k.data = bk.d; v.data = bv.d; o.data = bo.d; go.data = bdo.d;
#ifdef ATTN_CUDA_EMULATE
    emu_reset_errors();
#endif
    s = attn_cuda_backward(&dsc, q, k, v, o, go, (const float *)blse.d, attn_tensor_dense(bdq.d, ATTN_F32, 1, Sq, 1, D),
                           attn_tensor_dense(bdk.d, ATTN_F32, 1, Sk, 1, D), attn_tensor_dense(bdv.d, ATTN_F32, 1, Sk, 1, D), 0);
    CHECK(s == ATTN_OK, "bound: attn_cuda_backward: %s", attn_status_str(s));
    cudaDeviceSynchronize();
#ifdef ATTN_CUDA_EMULATE
    CHECK(emu_errors() == 0, "bound: the emulator reported %d errors", emu_errors());
#endif
    bdq.down(); bdk.down(); bdv.down();
    /* P and dS in double */
    std::vector<double> P((size_t)Sq * Sk, 0.0), dS((size_t)Sq * Sk, 0.0), E((size_t)Sq * Sk, 0.0);
    const unsigned char *Q = bq.h.data(), *K = bk.h.data(), *V = bv.h.data(), *O = bo.h.data(), *G = bdo.h.data();
    for (i = 0; i < Sq; ++i) {
        double Di = 0, Dabs = 0;
        for (d = 0; d < D; ++d) {
            const double t = (double)get(G, dt, (size_t)i * D + d) * get(O, dt, (size_t)i * D + d);
            Di += t; Dabs += fabs(t);
        }
        for (j = 0; j < Sk; ++j) {
            double sij = 0, dp = 0, dpabs = 0;
            if (causal && j > i + shift) continue;
            for (d = 0; d < D; ++d) {
                const double t = (double)get(G, dt, (size_t)i * D + d) * get(V, dt, (size_t)j * D + d);
                sij += (double)get(Q, dt, (size_t)i * D + d) * get(K, dt, (size_t)j * D + d);
                dp += t; dpabs += fabs(t);
            }
            P[(size_t)i * Sk + j] = exp(sij * scale - ((float *)blse.h.data())[i]);
            dS[(size_t)i * Sk + j] = P[(size_t)i * Sk + j] * (dp - Di);
            E[(size_t)i * Sk + j] = P[(size_t)i * Sk + j] * (dpabs + Dabs);
        }
    }
    double worst[3] = { 0, 0, 0 };     /* max over elements of |cuda - cpu| / bound, dq dk dv */
    for (i = 0; i < Sq; ++i)
        for (d = 0; d < D; ++d) {
            double b = 0;
            for (j = 0; j < Sk; ++j)
                b += ((u + eps) * fabs(dS[(size_t)i * Sk + j]) + eps * E[(size_t)i * Sk + j]) * fabs(get(K, dt, (size_t)j * D + d));
            b = scale * b + 1e-30;
            worst[0] = fmax(worst[0], fabs((double)((float *)bdq.h.data())[(size_t)i * D + d] - rq[(size_t)i * D + d]) / b);
        }
    for (j = 0; j < Sk; ++j)
        for (d = 0; d < D; ++d) {
            double bk_ = 0, bv_ = 0;
            for (i = 0; i < Sq; ++i) {
                bk_ += ((u + eps) * fabs(dS[(size_t)i * Sk + j]) + eps * E[(size_t)i * Sk + j]) * fabs(get(Q, dt, (size_t)i * D + d));
                bv_ += P[(size_t)i * Sk + j] * fabs(get(G, dt, (size_t)i * D + d));
            }
            bk_ = scale * bk_ + 1e-30; bv_ = (u + eps) * bv_ + 1e-30;
            worst[1] = fmax(worst[1], fabs((double)((float *)bdk.h.data())[(size_t)j * D + d] - rk[(size_t)j * D + d]) / bk_);
            worst[2] = fmax(worst[2], fabs((double)((float *)bdv.h.data())[(size_t)j * D + d] - rv[(size_t)j * D + d]) / bv_);
        }
    if (getenv("TCB_PRINT")) printf("  bound %s D%d causal %d: %.3g %.3g %.3g\n", dt == ATTN_F16 ? "f16" : "bf16", D, causal, worst[0], worst[1], worst[2]);
    CHECK(worst[0] <= 1.0 && worst[1] <= 1.0 && worst[2] <= 1.0,
          "bound %s D%d: |cuda - cpu| / (elementwise bound of 2d): dq %g, dk %g, dv %g (must be <= 1)", dt == ATTN_F16 ? "f16" : "bf16",
          D, worst[0], worst[1], worst[2]);
}
/* ---- end of the tensor-core backward block ---------------------------------------------------- */

/* TEST_CUDA_ONLY=forward,bwd_tc,... runs just those parts (for compute-sanitizer runs, which are
   slow); the status-coverage check then is skipped. */
static int want(const char *part) {
    const char *only = getenv("TEST_CUDA_ONLY");
    if (!only || !*only) return 1;
    for (const char *p = strstr(only, part); p; p = strstr(p + 1, part)) {
        const size_t n = strlen(part);
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    }
    return 0;
}
#define PART(name, call, ...)                                                                      \
    if (want(name)) {                                                                              \
        call;                                                                                      \
        printf("%s %-9s %d checks so far, %d failed" __VA_ARGS__ "\n", failed ? "FAIL" : "ok  ", name, passed + failed, failed); \
    }

int main(void) {
#ifdef ATTN_CUDA_EMULATE
    PART("emulator", test_emulator());
#endif
    PART("forward", test_forward());
    PART("tf32", test_tf32());
    if (want("decode")) {
        test_decode();
        printf("%s decode    %d checks so far, %d failed (TF32 forward and decode, worst error / tolerance: %.3f vs cpu, %.3f vs "
               "cpu on TF32-rounded inputs)\n", failed ? "FAIL" : "ok  ", passed + failed, failed, tf32_worst_a, tf32_worst_b);
    }
    PART("merge", test_merge());
    PART("backward", test_backward());
    PART("bwd_tc", test_backward_tc());
    PART("errors", test_errors());
    for (int s = 250; s < 300 && !getenv("TEST_CUDA_ONLY"); ++s) {
        if (attn_status_str((attn_status)s)[0] == 'u') continue;    /* "unknown attn_status value": unused */
#ifndef ATTN_CUDA_EMULATE
        if (s == ATTN_ERR_CUDA_RUNTIME) continue;      /* provoked under the emulator only */
#endif
        CHECK(provoked[s], "status %d (%s) was never provoked", s, attn_status_str((attn_status)s));
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
