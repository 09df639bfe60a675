/* tests/cuda/emu.h - a CPU emulation of the CUDA execution model, for running attn_cuda.cuh's
   kernels (compiled as host C++ with -DATTN_CUDA_EMULATE) without a GPU. Test-only: it is not
   part of attn_cuda.cuh.

   Model
   - A launch runs the grid's blocks one after another. A block's threads are cooperative
     fibers (ucontext): each runs until it reaches __syncthreads or a warp collective, then the
     scheduler runs the next. threadIdx/blockIdx/blockDim/gridDim are set on every switch.
   - __syncthreads: released when every thread of the block waits at it. A thread that exits
     while others wait, threads waiting at different kinds of collective with no way on, or a
     warp collective some lanes of the warp never reach: a reported error (deadlock).
   - Warp collectives (shuffles, votes, mma.sync, ldmatrix): each lane deposits its operands, and when
     all 32 lanes of the warp have arrived at the same instruction the result of each lane is
     computed from the PTX ISA's definition (fragment layouts of mma.m16n8k16 and ldmatrix) and
     handed back. One host function per instruction: emu_mma_f16, emu_mma_bf16, emu_mma_tf32,
     emu_ldmatrix_x4, emu_ldmatrix_x4_trans, emu_shfl_xor, emu_shfl_idx, emu_any, emu_ballot; and
     the per-thread emu_cvt_rna_tf32 (cvt.rna.tf32.f32).
   - Dynamic shared memory: one buffer per block, filled with 0xFF bytes (NaN as f16, bf16 and
     fp32) before each block. Every shared access of the kernels goes through a primitive
     (ldmatrix, cp.async, emu_sts/emu_lds), so a shadow memory tracks, per byte, the last
     writer thread and barrier epoch and the reader(s) of the current epoch: a read or write by
     one thread of a byte another thread wrote in the same epoch (between the same two
     barriers), or a write to a byte another thread read in that epoch, is a reported race.
     Accesses outside the block's buffer are reported too.
   - cp.async: the copy is queued at issue (with its group) and lands in shared memory only at
     the cp.async.wait_group that retires its group; until then the destination keeps its old
     bytes (poison), so a read before the wait sees NaN.
   - Runtime shims: cudaMalloc (a registry of "device" allocations, so cudaPointerGetAttributes
     tells device from host pointers; carved back to back at 256-byte alignment from one arena,
     as the CUDA driver places successive small allocations, so a view that runs past its buffer
     overlaps the next one here too: on an H100 a test whose f32 view outran its f16 buffer got
     ATTN_ERR_OVERLAP where malloc's scattered blocks had hidden it), cudaMemcpy/Async, cudaMemset, streams (synchronous),
     cudaGetLastError (a launch error is reported there), cudaFuncSetAttribute.
   Errors are counted in emu_errors (and the first messages printed); tests assert on it. */
#ifndef ATTN_TESTS_CUDA_EMU_H
#define ATTN_TESTS_CUDA_EMU_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <math.h>
#include <ucontext.h>
#include <functional>
#include <vector>
#include <map>

/* ---- CUDA language surface ---------------------------------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
struct uint3_emu { unsigned x, y, z; };

/* ---- runtime API shims -------------------------------------------------------------------- */
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2, cudaErrorLaunchFailure = 719,
       cudaErrorInvalidConfiguration = 9 };
typedef struct emu_stream *cudaStream_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
                      cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4 };
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2,
                      cudaMemoryTypeManaged = 3 };
struct cudaPointerAttributes { enum cudaMemoryType type; int device; void *devicePointer; void *hostPointer; };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };

struct emu_state {
    std::map<uintptr_t, size_t> allocs;       /* "device" allocations: base -> bytes */
    int errors;                               /* emulator-detected errors since emu_reset_errors */
    int printed;
    cudaError_t last_error;
    int fail_next_malloc;                     /* tests: make the next cudaMalloc fail */
    int fail_next_launch;                     /* tests: make the next launch report an error */
    long long launches;
    size_t max_shared;                        /* like sm_90's 227 KiB opt-in limit */
};
static inline emu_state &emu() { static emu_state s = { {}, 0, 0, 0, 0, 0, 0, 227 * 1024 }; return s; }

static inline void emu_error(const char *fmt, ...) {
    va_list ap;
    emu().errors++;
    if (emu().printed++ < 8) {
        fprintf(stderr, "emu: ");
        va_start(ap, fmt); vfprintf(stderr, fmt, ap); va_end(ap);
        fprintf(stderr, "\n");
    }
}
static inline int emu_errors(void) { return emu().errors; }
static inline void emu_reset_errors(void) { emu().errors = 0; emu().printed = 0; }
static inline void emu_quiet(int on) { emu().printed = on ? 1 << 30 : 0; }

/* The arena successive allocations are carved from, back to back (256-byte aligned); it starts
   over when every allocation is freed. Allocations it cannot hold come from malloc. */
#define EMU_ARENA_BYTES ((size_t)256 << 20)
struct emu_arena { unsigned char *base; size_t used; };
static inline emu_arena &emu_heap() { static emu_arena a = { NULL, 0 }; return a; }
static inline int emu_in_arena(const void *p) {
    return emu_heap().base && (const unsigned char *)p >= emu_heap().base && (const unsigned char *)p < emu_heap().base + EMU_ARENA_BYTES;
}
static inline cudaError_t cudaMalloc(void **p, size_t n) {
    const size_t want = ((n ? n : 1) + 255) & ~(size_t)255;
    emu_arena &a = emu_heap();
    if (emu().fail_next_malloc) { emu().fail_next_malloc = 0; *p = NULL; return emu().last_error = cudaErrorMemoryAllocation; }
    if (!a.base) a.base = (unsigned char *)malloc(EMU_ARENA_BYTES);
    if (a.base && want <= EMU_ARENA_BYTES - a.used) { *p = a.base + a.used; a.used += want; }
    else *p = malloc(n ? n : 1);
    if (!*p) return cudaErrorMemoryAllocation;
    emu().allocs[(uintptr_t)*p] = n ? n : 1;
    return cudaSuccess;
}
static inline cudaError_t cudaFree(void *p) {
    if (!p) return cudaSuccess;
    if (!emu().allocs.erase((uintptr_t)p)) return cudaErrorInvalidValue;
    if (!emu_in_arena(p)) free(p);
    /* the arena restarts once nothing in it is live */
    int live = 0;
    for (std::map<uintptr_t, size_t>::iterator it = emu().allocs.begin(); it != emu().allocs.end() && !live; ++it)
        live = emu_in_arena((const void *)it->first);
    if (!live) emu_heap().used = 0;
    return cudaSuccess;
}
/* the allocation holding [p, p + n), or 0 */
static inline int emu_is_device(const void *p, size_t n) {
    std::map<uintptr_t, size_t>::iterator it = emu().allocs.upper_bound((uintptr_t)p);
    if (it == emu().allocs.begin()) return 0;
    --it;
    return (uintptr_t)p >= it->first && (uintptr_t)p + n <= it->first + it->second;
}
static inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *p) {
    memset(a, 0, sizeof *a);
    a->type = emu_is_device(p, 1) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    a->devicePointer = a->type == cudaMemoryTypeDevice ? (void *)p : NULL;
    a->hostPointer = a->type == cudaMemoryTypeDevice ? NULL : (void *)p;
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpy(void *d, const void *s, size_t n, cudaMemcpyKind k) {
    if ((k == cudaMemcpyHostToDevice || k == cudaMemcpyDeviceToDevice) && !emu_is_device(d, n)) return cudaErrorInvalidValue;
    if ((k == cudaMemcpyDeviceToHost || k == cudaMemcpyDeviceToDevice) && !emu_is_device(s, n)) return cudaErrorInvalidValue;
    memmove(d, s, n);
    return cudaSuccess;
}
static inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t) {
    return cudaMemcpy(d, s, n, k);
}
static inline cudaError_t cudaMemset(void *d, int v, size_t n) {
    if (!emu_is_device(d, n)) return cudaErrorInvalidValue;
    memset(d, v, n);
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t) { return cudaMemset(d, v, n); }
static inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
static inline cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
/* 16 "SMs": small calls split their keys as on a GPU, so the tests exercise split-KV; the opt-in
   shared memory per block is max_shared (tests may lower it, e.g. to sm_86's 99 KiB) */
static inline cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int) {
    *v = a == cudaDevAttrMaxSharedMemoryPerBlockOptin ? (int)emu().max_shared : 16;
    return cudaSuccess;
}
static inline cudaError_t cudaGetLastError(void) { cudaError_t e = emu().last_error; emu().last_error = cudaSuccess; return e; }
static inline cudaError_t cudaPeekAtLastError(void) { return emu().last_error; }
static inline const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }
template <class F> static inline cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int v) {
    return (size_t)v <= emu().max_shared ? cudaSuccess : cudaErrorInvalidValue;
}

/* ---- the block scheduler ------------------------------------------------------------------ */
enum { EMU_RUN = 0, EMU_BARRIER, EMU_WARP, EMU_DONE };
enum { EMU_OP_NONE = 0, EMU_OP_SHFL_XOR, EMU_OP_SHFL_IDX, EMU_OP_MMA_F16, EMU_OP_MMA_BF16, EMU_OP_MMA_TF32, EMU_OP_LDM,
       EMU_OP_LDM_T, EMU_OP_SYNCWARP, EMU_OP_VOTE_ANY, EMU_OP_BALLOT };

struct emu_cp { unsigned char *dst; unsigned char data[16]; int n; int group; uint32_t epoch; };

struct emu_fiber {
    ucontext_t ctx;
    int state;
    int op;                                   /* warp collective waited at */
    uint32_t in[16];                          /* its operands */
    const void *addr;
    uint32_t out[8];                          /* its results */
    std::vector<emu_cp> cp;                   /* cp.async copies not yet landed */
    int cp_group;                             /* group the next cp.async joins */
};

struct emu_shadow { int16_t wt, rt; uint32_t we, re; };  /* writer/reader thread (-2: several), epochs */

struct emu_block {
    dim3 grid, block, bid;
    int nthreads, cur;
    std::vector<emu_fiber> f;
    std::vector<char> stacks;
    ucontext_t sched;
    std::function<void()> body;
    unsigned char *shm;
    size_t shm_bytes;
    std::vector<emu_shadow> shadow;
    uint32_t epoch;
    int aborted;
};
static inline emu_block *&emu_cur() { static emu_block *b = NULL; return b; }

/* threadIdx etc. of the running fiber */
static dim3 threadIdx, blockIdx, blockDim, gridDim;

#define EMU_STACK (256 * 1024)

static inline void emu_set_ids(emu_block *B, int t) {
    threadIdx = dim3((unsigned)t % B->block.x, ((unsigned)t / B->block.x) % B->block.y, (unsigned)t / (B->block.x * B->block.y));
    blockIdx = B->bid; blockDim = B->block; gridDim = B->grid;
}
static inline int emu_tid(void) { return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)); }

static void emu_fiber_main(void) {
    emu_block *B = emu_cur();
    B->body();
    B->f[B->cur].state = EMU_DONE;
    swapcontext(&B->f[B->cur].ctx, &B->sched);
}
static inline void emu_yield(void) {
    emu_block *B = emu_cur();
    swapcontext(&B->f[B->cur].ctx, &B->sched);
    emu_set_ids(B, B->cur);
}

/* ---- shared memory and its race detector --------------------------------------------------- */
static inline unsigned char *emu_shared_base(void) { return emu_cur()->shm; }
static inline int emu_sh_range(const void *p, size_t n, const char *what) {
    emu_block *B = emu_cur();
    if ((const unsigned char *)p < B->shm || (const unsigned char *)p + n > B->shm + B->shm_bytes) {
        emu_error("%s: thread %d of block (%u,%u,%u) accesses shared memory outside the block's %zu bytes (offset %td)",
                  what, emu_tid(), B->bid.x, B->bid.y, B->bid.z, B->shm_bytes, (const unsigned char *)p - B->shm);
        return 0;
    }
    return 1;
}
static inline void emu_sh_note(const void *p, size_t n, int write, int t, const char *what) {
    emu_block *B = emu_cur();
    size_t o = (size_t)((const unsigned char *)p - B->shm), i;
    int raced = 0;
    for (i = o; i < o + n; ++i) {
        emu_shadow &s = B->shadow[i];
        if (s.we == B->epoch && s.wt != t && s.wt >= 0) raced = 1;             /* RAW, WAW */
        if (write && s.re == B->epoch && s.rt != t) raced = 1;                 /* WAR */
        if (write) { s.wt = (int16_t)t; s.we = B->epoch; }
        else if (s.re == B->epoch && s.rt != t) s.rt = -2;
        else { s.rt = (int16_t)t; s.re = B->epoch; }
    }
    if (raced)
        emu_error("race on shared memory: %s by thread %d of block (%u,%u,%u) at offset %zu (%zu bytes): another "
                  "thread accessed it since the last __syncthreads (epoch %u)", what, t, B->bid.x, B->bid.y, B->bid.z, o,
                  n, B->epoch);
}
static inline void emu_sts(void *p, const void *v, size_t n) {
    if (!emu_sh_range(p, n, "st.shared")) return;
    emu_sh_note(p, n, 1, emu_tid(), "st.shared");
    memcpy(p, v, n);
}
static inline void emu_lds(void *v, const void *p, size_t n) {
    if (!emu_sh_range(p, n, "ld.shared")) { memset(v, 0xFF, n); return; }
    emu_sh_note(p, n, 0, emu_tid(), "ld.shared");
    memcpy(v, p, n);
}

/* ---- cp.async ------------------------------------------------------------------------------ */
/* The hardware may write a cp.async destination any time between issue and wait_group: a read by
   another thread of those bytes in an epoch from the issue on is a race (write after read). */
static inline void emu_cp_war(const unsigned char *p, size_t n, uint32_t since, int t) {
    emu_block *B = emu_cur();
    size_t o = (size_t)(p - B->shm), i;
    for (i = o; i < o + n; ++i)
        if (B->shadow[i].re >= since && B->shadow[i].rt != t) {
            emu_error("race on shared memory: cp.async by thread %d of block (%u,%u,%u) to offset %zu, which another thread "
                      "reads between the copy's issue (epoch %u) and its wait_group", t, B->bid.x, B->bid.y, B->bid.z, o, since);
            return;
        }
}
static inline void emu_cp_async16(void *dst, const void *src, int src_bytes) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    emu_cp c;
    if (((uintptr_t)dst & 15) || (src_bytes && ((uintptr_t)src & 15)))
        emu_error("cp.async.cg 16: misaligned address (dst %p, src %p)", dst, src);
    if (!emu_sh_range(dst, 16, "cp.async")) return;
    c.dst = (unsigned char *)dst; c.n = 16; c.group = F.cp_group;
    c.epoch = emu_cur()->epoch;
    emu_cp_war(c.dst, 16, c.epoch, emu_cur()->cur);
    memset(c.data, 0, 16);
    if (src_bytes) memcpy(c.data, src, (size_t)src_bytes);   /* the global source is read-only */
    F.cp.push_back(c);
}
static inline void emu_cp_commit(void) { emu_cur()->f[emu_cur()->cur].cp_group++; }
/* cp.async.wait_group n: every committed group but the newest n has landed */
static inline void emu_cp_wait(int n) {
    emu_block *B = emu_cur();
    emu_fiber &F = B->f[B->cur];
    std::vector<emu_cp> keep;
    for (size_t i = 0; i < F.cp.size(); ++i) {
        emu_cp &c = F.cp[i];
        if (c.group < F.cp_group - n) {
            emu_cp_war(c.dst, (size_t)c.n, c.epoch, B->cur);
            emu_sh_note(c.dst, (size_t)c.n, 1, B->cur, "cp.async (landing)");
            memcpy(c.dst, c.data, (size_t)c.n);
        } else keep.push_back(c);
    }
    F.cp.swap(keep);
}

/* ---- warp collectives ---------------------------------------------------------------------- */
static inline void emu_warp_arrive(int op) {
    emu_block *B = emu_cur();
    B->f[B->cur].op = op;
    B->f[B->cur].state = EMU_WARP;
    emu_yield();
    if (B->aborted) { B->f[B->cur].state = EMU_DONE; swapcontext(&B->f[B->cur].ctx, &B->sched); }
}
static inline uint32_t emu_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float emu_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline float emu_h2f(uint16_t h) {       /* IEEE binary16 -> fp32, exact */
    const int e = (h >> 10) & 31, m = h & 1023;
    const float s = (h >> 15) ? -1.0f : 1.0f;
    if (e == 0) return s * ldexpf((float)m, -24);
    if (e == 31) return m ? NAN : s * INFINITY;
    return s * ldexpf((float)(m | 1024), e - 25);
}
static inline float emu_bf2f(uint16_t b) { return emu_u2f((uint32_t)b << 16); }

/* The PTX ISA's mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32 fragments, with
   g = lane >> 2 (groupID) and t = lane & 3 (threadID_in_group):
     A (16x16): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..2t+1], a2 = A[g][2t+8..2t+9], a3 = A[g+8][2t+8..2t+9]
     B (16x8):  b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]
     C, D (16x8 fp32): c0, c1 = C[g][2t], C[g][2t+1]; c2, c3 = C[g+8][2t], C[g+8][2t+1]
   (each .b32 register holds its lower-index element in the low 16 bits). The products are
   accumulated in fp32 in k order: the hardware's internal order is unspecified, and the tests
   give the kernels a tolerance for that. */
static inline void emu_mma_resolve(emu_fiber *L, int bf16) {
    float A[16][16], Bm[16][8], C[16][8];
    int lane, i, j, k;
    for (lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        const uint32_t *a = L[lane].in, *b = L[lane].in + 4;
        const float *c = (const float *)(const void *)(L[lane].in + 6);
        for (i = 0; i < 2; ++i) {
            float (*cv)(uint16_t) = bf16 ? emu_bf2f : emu_h2f;
            A[g][2 * t + i] = cv((uint16_t)(a[0] >> (16 * i)));
            A[g + 8][2 * t + i] = cv((uint16_t)(a[1] >> (16 * i)));
            A[g][2 * t + 8 + i] = cv((uint16_t)(a[2] >> (16 * i)));
            A[g + 8][2 * t + 8 + i] = cv((uint16_t)(a[3] >> (16 * i)));
            Bm[2 * t + i][g] = cv((uint16_t)(b[0] >> (16 * i)));
            Bm[2 * t + 8 + i][g] = cv((uint16_t)(b[1] >> (16 * i)));
        }
        C[g][2 * t] = c[0]; C[g][2 * t + 1] = c[1]; C[g + 8][2 * t] = c[2]; C[g + 8][2 * t + 1] = c[3];
    }
    for (i = 0; i < 16; ++i)
        for (j = 0; j < 8; ++j) {
            float acc = C[i][j];
            for (k = 0; k < 16; ++k) acc += A[i][k] * Bm[k][j];
            C[i][j] = acc;
        }
    for (lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        L[lane].out[0] = emu_f2u(C[g][2 * t]); L[lane].out[1] = emu_f2u(C[g][2 * t + 1]);
        L[lane].out[2] = emu_f2u(C[g + 8][2 * t]); L[lane].out[3] = emu_f2u(C[g + 8][2 * t + 1]);
    }
}
/* cvt.rna.tf32.f32: x rounded to TF32 (8-bit exponent, 10-bit mantissa), to nearest with ties
   away from zero, in a .b32 register as the fp32 bit pattern whose low 13 mantissa bits are zero.
   A finite x whose rounding passes FLT_MAX becomes infinity; infinities stay; a NaN stays a NaN
   (its payload's top bits, quiet bit set). */
static inline uint32_t emu_cvt_rna_tf32(float x) {
    uint32_t u = emu_f2u(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return (u & 0x007fffffu) ? ((u & 0xffffe000u) | 0x00400000u) : u;
    return (u + 0x1000u) & 0xffffe000u;   /* the carry into the exponent is the round up of a binade */
}
/* The PTX ISA's mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 fragments (g = lane >> 2,
   t = lane & 3), one .tf32 element per .b32 register:
     A (16x8):  a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]
     B (8x8):   b0 = B[t][g], b1 = B[t+4][g]
     C, D:      as m16n8k16 (c0, c1 = C[g][2t], C[g][2t+1]; c2, c3 = C[g+8][2t], C[g+8][2t+1]).
   The ISA leaves .tf32's internal layout implementation-defined and makes .tf32 values with
   cvt...tf32.f32 only, so an operand with nonzero low 13 bits (raw fp32 bits: a forgotten cvt,
   which the hardware would take silently, truncating or worse) is reported. Products of two TF32 values are exact in fp32 and
   are accumulated in fp32 in k order (the hardware's order is unspecified). */
static inline void emu_mma_tf32_resolve(emu_fiber *L) {
    float A[16][8], Bm[8][8], C[16][8];
    int lane, i, j, k, bad = -1;
    for (lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        const uint32_t *a = L[lane].in, *b = L[lane].in + 4;
        const float *c = (const float *)(const void *)(L[lane].in + 6);
        for (i = 0; i < 6; ++i) if ((L[lane].in[i] & 0x1fffu) && bad < 0) bad = lane;
        A[g][t] = emu_u2f(a[0]); A[g + 8][t] = emu_u2f(a[1]); A[g][t + 4] = emu_u2f(a[2]); A[g + 8][t + 4] = emu_u2f(a[3]);
        Bm[t][g] = emu_u2f(b[0]); Bm[t + 4][g] = emu_u2f(b[1]);
        C[g][2 * t] = c[0]; C[g][2 * t + 1] = c[1]; C[g + 8][2 * t] = c[2]; C[g + 8][2 * t + 1] = c[3];
    }
    if (bad >= 0) emu_error("mma tf32: an operand of lane %d has nonzero low 13 bits (not converted by cvt.rna.tf32.f32)", bad);
    for (i = 0; i < 16; ++i)
        for (j = 0; j < 8; ++j) {
            float acc = C[i][j];
            for (k = 0; k < 8; ++k) acc += A[i][k] * Bm[k][j];
            C[i][j] = acc;
        }
    for (lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        L[lane].out[0] = emu_f2u(C[g][2 * t]); L[lane].out[1] = emu_f2u(C[g][2 * t + 1]);
        L[lane].out[2] = emu_f2u(C[g + 8][2 * t]); L[lane].out[3] = emu_f2u(C[g + 8][2 * t + 1]);
    }
}
/* ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8m..8m+7 give the addresses of rows
   0..7 of matrix m (16 bytes each). Result register m of lane l: M_m[l/4][2(l%4) .. 2(l%4)+1];
   with .trans: M_m[2(l%4)][l/4] (low) and M_m[2(l%4)+1][l/4] (high). */
static inline void emu_ldm_resolve(emu_fiber *L, int base_tid, int trans) {
    uint16_t M[4][8][8];
    int lane, m, r;
    for (lane = 0; lane < 32; ++lane) {
        const unsigned char *p = (const unsigned char *)L[lane].addr;
        m = lane >> 3; r = lane & 7;
        if (((uintptr_t)p & 15) != 0) emu_error("ldmatrix: row address of lane %d not 16-byte aligned", lane);
        if (!emu_sh_range(p, 16, "ldmatrix")) { memset(M[m][r], 0xFF, 16); continue; }
        emu_sh_note(p, 16, 0, base_tid + lane, "ldmatrix");
        memcpy(M[m][r], p, 16);
    }
    for (lane = 0; lane < 32; ++lane)
        for (m = 0; m < 4; ++m) {
            const int a = lane >> 2, b = 2 * (lane & 3);
            uint16_t lo = trans ? M[m][b][a] : M[m][a][b], hi = trans ? M[m][b + 1][a] : M[m][a][b + 1];
            L[lane].out[m] = (uint32_t)lo | ((uint32_t)hi << 16);
        }
}
/* all 32 lanes of warp w are at a collective: check they agree, compute, release */
static inline void emu_warp_resolve(emu_block *B, int w) {
    emu_fiber *L = &B->f[(size_t)w * 32];
    int lane, op = L[0].op;
    for (lane = 1; lane < 32; ++lane)
        if (L[lane].op != op) { emu_error("warp %d: lanes wait at different collectives (%d vs %d)", w, op, L[lane].op); B->aborted = 1; return; }
    switch (op) {
    case EMU_OP_SHFL_XOR:
        for (lane = 0; lane < 32; ++lane) L[lane].out[0] = L[lane ^ (L[lane].in[1] & 31)].in[0];
        break;
    case EMU_OP_SHFL_IDX:
        for (lane = 0; lane < 32; ++lane) L[lane].out[0] = L[L[lane].in[1] & 31].in[0];
        break;
    case EMU_OP_MMA_F16: emu_mma_resolve(L, 0); break;
    case EMU_OP_MMA_BF16: emu_mma_resolve(L, 1); break;
    case EMU_OP_MMA_TF32: emu_mma_tf32_resolve(L); break;
    case EMU_OP_LDM: emu_ldm_resolve(L, w * 32, 0); break;
    case EMU_OP_LDM_T: emu_ldm_resolve(L, w * 32, 1); break;
    case EMU_OP_SYNCWARP: break;
    case EMU_OP_VOTE_ANY:
    case EMU_OP_BALLOT: {                 /* vote.sync.any.pred, vote.sync.ballot.b32 (full mask) */
        uint32_t bits = 0;
        for (lane = 0; lane < 32; ++lane) bits |= (L[lane].in[0] != 0) << lane;
        for (lane = 0; lane < 32; ++lane) L[lane].out[0] = op == EMU_OP_BALLOT ? bits : (uint32_t)(bits != 0);
        break;
    }
    default: emu_error("warp %d: unknown collective %d", w, op); B->aborted = 1; return;
    }
    for (lane = 0; lane < 32; ++lane) { L[lane].state = EMU_RUN; L[lane].op = EMU_OP_NONE; }
}

/* The device-side instruction functions (one per instruction) */
static inline uint32_t emu_shfl_xor(uint32_t v, int mask) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    F.in[0] = v; F.in[1] = (uint32_t)mask;
    emu_warp_arrive(EMU_OP_SHFL_XOR);
    return emu_cur()->f[emu_cur()->cur].out[0];
}
static inline uint32_t emu_shfl_idx(uint32_t v, int src) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    F.in[0] = v; F.in[1] = (uint32_t)src;
    emu_warp_arrive(EMU_OP_SHFL_IDX);
    return emu_cur()->f[emu_cur()->cur].out[0];
}
static inline void emu_mma(float d[4], const uint32_t a[4], const uint32_t b[2], int bf16) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    memcpy(F.in, a, 16); memcpy(F.in + 4, b, 8); memcpy(F.in + 6, d, 16);
    emu_warp_arrive(bf16 ? EMU_OP_MMA_BF16 : EMU_OP_MMA_F16);
    memcpy(d, emu_cur()->f[emu_cur()->cur].out, 16);
}
static inline void emu_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    memcpy(F.in, a, 16); memcpy(F.in + 4, b, 8); memcpy(F.in + 6, d, 16);
    emu_warp_arrive(EMU_OP_MMA_TF32);
    memcpy(d, emu_cur()->f[emu_cur()->cur].out, 16);
}
static inline void emu_mma_f16(float d[4], const uint32_t a[4], const uint32_t b[2]) { emu_mma(d, a, b, 0); }
static inline void emu_mma_bf16(float d[4], const uint32_t a[4], const uint32_t b[2]) { emu_mma(d, a, b, 1); }
static inline void emu_ldmatrix(uint32_t r[4], const void *p, int trans) {
    emu_fiber &F = emu_cur()->f[emu_cur()->cur];
    F.addr = p;
    emu_warp_arrive(trans ? EMU_OP_LDM_T : EMU_OP_LDM);
    memcpy(r, emu_cur()->f[emu_cur()->cur].out, 16);
}
static inline void emu_ldmatrix_x4(uint32_t r[4], const void *p) { emu_ldmatrix(r, p, 0); }
static inline void emu_ldmatrix_x4_trans(uint32_t r[4], const void *p) { emu_ldmatrix(r, p, 1); }
static inline void emu_syncwarp(void) { emu_warp_arrive(EMU_OP_SYNCWARP); }
static inline uint32_t emu_vote(int pred, int op) {
    emu_cur()->f[emu_cur()->cur].in[0] = (uint32_t)(pred != 0);
    emu_warp_arrive(op);
    return emu_cur()->f[emu_cur()->cur].out[0];
}
static inline int emu_any(int pred) { return (int)emu_vote(pred, EMU_OP_VOTE_ANY); }
static inline uint32_t emu_ballot(int pred) { return emu_vote(pred, EMU_OP_BALLOT); }

static inline void __syncthreads(void) {
    emu_block *B = emu_cur();
    B->f[B->cur].state = EMU_BARRIER;
    emu_yield();
    if (B->aborted) { B->f[B->cur].state = EMU_DONE; swapcontext(&B->f[B->cur].ctx, &B->sched); }
}

/* Runs one block to completion (or to a reported deadlock). */
static inline void emu_run_block(emu_block *B) {
    int t, w, nw = (B->nthreads + 31) / 32;
    for (t = 0; t < B->nthreads; ++t) {
        emu_fiber &F = B->f[t];
        F.state = EMU_RUN; F.op = EMU_OP_NONE; F.cp.clear(); F.cp_group = 0;
        getcontext(&F.ctx);
        F.ctx.uc_stack.ss_sp = &B->stacks[(size_t)t * EMU_STACK];
        F.ctx.uc_stack.ss_size = EMU_STACK;
        F.ctx.uc_link = NULL;
        makecontext(&F.ctx, emu_fiber_main, 0);
    }
    B->epoch = 1; B->aborted = 0;
    for (;;) {
        int ran = 0, done = 0, at_bar = 0;
        for (t = 0; t < B->nthreads; ++t)
            if (B->f[t].state == EMU_RUN) {
                B->cur = t; emu_set_ids(B, t);
                swapcontext(&B->sched, &B->f[t].ctx);
                ran = 1;
            }
        for (w = 0; w < nw; ++w) {
            int n = 0, d = 0, lanes = (w + 1) * 32 <= B->nthreads ? 32 : B->nthreads - w * 32;
            for (t = w * 32; t < w * 32 + lanes; ++t) { n += B->f[t].state == EMU_WARP; d += B->f[t].state == EMU_DONE; }
            if (n == 32) { emu_warp_resolve(B, w); ran = 1; }
            else if (n > 0 && n + d == lanes) {
                emu_error("warp %d of block (%u,%u,%u): %d lanes wait at a warp collective that %d exited lanes never reach",
                          w, B->bid.x, B->bid.y, B->bid.z, n, d);
                B->aborted = 1;
            }
            else if (n > 0 && lanes < 32) { emu_error("warp collective in a partial warp"); B->aborted = 1; }
        }
        for (t = 0; t < B->nthreads; ++t) { done += B->f[t].state == EMU_DONE; at_bar += B->f[t].state == EMU_BARRIER; }
        if (done == B->nthreads) break;
        if (at_bar == B->nthreads) {
            for (t = 0; t < B->nthreads; ++t) B->f[t].state = EMU_RUN;
            B->epoch++;
            continue;
        }
        if (at_bar > 0 && at_bar + done == B->nthreads) {
            emu_error("block (%u,%u,%u): %d threads wait at __syncthreads that %d exited threads never reach",
                      B->bid.x, B->bid.y, B->bid.z, at_bar, done);
            B->aborted = 1;
        }
        if (B->aborted) {                  /* unblock every fiber so it ends at its next wait */
            for (t = 0; t < B->nthreads; ++t) if (B->f[t].state != EMU_DONE) B->f[t].state = EMU_RUN;
            continue;
        }
        if (!ran) {
            emu_error("block (%u,%u,%u): deadlock (threads at __syncthreads and at warp collectives)", B->bid.x, B->bid.y,
                      B->bid.z);
            B->aborted = 1;
        }
    }
    for (t = 0; t < B->nthreads; ++t)
        if (!B->f[t].cp.empty()) { /* never-waited copies never land: harmless, like the hardware */ B->f[t].cp.clear(); }
}

/* emu_launch(grid, block, shared bytes, kernel, args...): the <<<>>> of the emulator. */
template <class... P, class... A>
static inline void emu_launch(dim3 grid, dim3 block, size_t shmem, void (*kernel)(P...), A... args) {
    emu_block B;
    unsigned bx, by, bz;
    std::vector<unsigned char> shm(shmem + 16);
    emu().launches++;
    if (emu().fail_next_launch) { emu().fail_next_launch = 0; emu().last_error = cudaErrorLaunchFailure; return; }
    B.nthreads = (int)(block.x * block.y * block.z);
    if (B.nthreads < 1 || B.nthreads > 1024 || grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535 ||
        shmem > emu().max_shared) {
        emu().last_error = cudaErrorInvalidConfiguration;
        return;
    }
    B.grid = grid; B.block = block;
    B.f.resize((size_t)B.nthreads);
    B.stacks.resize((size_t)B.nthreads * EMU_STACK);
    B.body = [=]() { kernel(args...); };
    B.shm = shm.data() + ((16 - ((uintptr_t)shm.data() & 15)) & 15);
    B.shm_bytes = shmem;
    B.shadow.resize(shmem);
    emu_cur() = &B;
    for (bz = 0; bz < grid.z; ++bz)
        for (by = 0; by < grid.y; ++by)
            for (bx = 0; bx < grid.x; ++bx) {
                emu_shadow z = { -1, -1, 0, 0 };
                B.bid = dim3(bx, by, bz);
                memset(B.shm, 0xFF, shmem);
                std::fill(B.shadow.begin(), B.shadow.end(), z);
                emu_run_block(&B);
            }
    emu_cur() = NULL;
}

#endif
