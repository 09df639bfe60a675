/* attn_cuda.cuh - the CUDA companion of attn.h: the same API as CUDA kernels - public domain or
   MIT (see attn.h)

   USAGE
     In exactly one .cu file:
         #define ATTN_CUDA_IMPLEMENTATION
         #include "attn_cuda.cuh"
     That file also compiles a private (static) copy of attn.h's implementation, whose argument
     validation attn_cuda_* reuse, so the CPU and CUDA paths reject the same bad inputs with the
     same statuses; other files of the program may include attn.h's implementation as usual.
     Include attn_cuda.cuh before any other include of attn.h in that file. Everywhere else just
     #include "attn_cuda.cuh". Compile for sm_80 or newer (mma.sync m16n8k16 bf16, m16n8k8 tf32,
     ldmatrix, cp.async): nvcc -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90.

   WHAT IT COMPUTES
     attn_cuda_forward is attn_forward (attn.h's SEMANTICS OF EXACT ATTENTION) on the GPU:
     every mask (causal bottom-right, windows, dilation, sinks, global tokens, seqlens padding,
     cu_seqlens varlen), ALiBi, softcap, additive bias, GQA/MQA, lse. The mask rule is attn.h's
     own (attn__lane_rule, attn__lane_pre, attn__lane_ok, attn__visible, attn__chunk_full,
     attn__key_ranges, attn__seq_at are host+device functions, ATTN__HD): one definition.
     - f16 / bf16 q, k, v (one dtype), head dims 32, 64, 96, 128, 256 (v.dim == q.dim): a
       FlashAttention-2 style kernel on tensor cores (mma.sync m16n8k16, fp32 accumulation,
       online softmax in registers, ldmatrix(.trans), 2-stage cp.async K/V pipeline, the query
       heads of a GQA group packed into one block's rows so K/V tiles are read once). P is
       rounded to the input dtype for P.V, as FlashAttention does (|error| <= 2^-11 max|v| for
       f16, 2^-8 for bf16, plus the fp32 sums).
     - f32 q, k, v, any q.dim and v.dim up to 256: CUDA-core FMA kernel, fp32 throughout.
     - f32 q, k, v with attn_desc.allow_tf32 set and a head dim of the tensor-core kernel (32, 64,
       96, 128, 256, v.dim == q.dim): the same tensor-core kernel on TF32 (acu_fwd_mma<D,
       ACU_TF32>: f32 tiles in shared memory, mma.sync m16n8k8 .tf32 with Q, K, P and V rounded
       by cvt.rna.tf32.f32 (10-bit mantissas, |relative error| <= 2^-11 each), fp32 accumulation,
       softmax in fp32). Other f32 shapes, and D = 256 on a device that cannot give a block its
       130 KiB of shared memory (sm_86, sm_89: 99 KiB), take the fp32 kernel whatever
       allow_tf32 says.
       attn_cuda_decode follows the same rule; attn_cuda_backward ignores allow_tf32 (fp32 only).
     - attn_cuda_decode: the same kernels over a contiguous or paged KV cache (any page size),
       split-KV (flash-decoding) with a merge kernel; attn_cuda_merge: attn_merge.
     - attn_cuda_backward: FlashAttention-2's recomputation, deterministic (no atomics: dK/dV
       rows owned by one block or warp, dQ in a second kernel; bitwise repeatable), every mask,
       ALiBi, softcap, bias, GQA, seqlens and varlen of the forward. Which path runs:
       - q, k, v and dout all f16 or all bf16, head dim 32, 64, 96 or 128, v.dim == q.dim: on
         tensor cores (mma.sync m16n8k16, fp32 accumulation, ldmatrix(.trans), 2-stage
         cp.async pipelines): a dK/dV kernel whose blocks own 64 key rows and loop over the
         group's query heads and query tiles, then a dQ kernel whose blocks own 64 query rows. P and dS are rounded to
         the input dtype before their mma, as FlashAttention does: |error| <= u sum_i P_ij
         |dO_i| for dV_j, u scale sum_i |dS_ij| |q_i| for dK_j, u scale sum_j |dS_ij| |k_j|
         for dQ_i, with u = 2^-11 (f16) or 2^-8 (bf16), plus the fp32 sums (section 2d).
       - anything else (f32 or mixed dtypes, head dim 256 or other, v.dim != q.dim): on CUDA
         cores, fp32 FMA for every storage dtype (section 2c).
     out may have any dtype. Pointers: tensors, lse, bias.data, seqlens_q/_k, cu_seqlens_q/_k
     and alibi_slopes are DEVICE pointers (the small int/float arrays are copied to the host
     once per call for validation and launch sizing, on the given stream, synchronously).
     Not supported (ATTN_ERR_CUDA_UNSUPPORTED, nothing launched): dropout_p > 0, rope, kinds
     other than ATTN_SOFTMAX, dbias (backward). Not done yet: a TF32 or head-dim-256 tensor-core
     backward (those run on CUDA cores).

   EXECUTED WITHOUT A GPU
     Compiled as host C++ with -DATTN_CUDA_EMULATE after including tests/cuda/emu.h, the same
     kernel source runs under a CPU emulation of the CUDA execution model (blocks, threads as
     fibers, __syncthreads, warp shuffles, mma/ldmatrix from the PTX ISA fragment layouts,
     cp.async landing at wait_group, a shared-memory race detector). tests/cuda/ does that. */
#ifndef ATTN_CUDA_CUH_INCLUDED
#define ATTN_CUDA_CUH_INCLUDED

#if defined(ATTN_CUDA_IMPLEMENTATION) && !defined(ATTN_IMPLEMENTATION)
#define ATTN_STATIC
#define ATTN_IMPLEMENTATION
#define ATTN_CUDA__OWN_IMPL
#endif

#ifdef ATTN_CUDA__OWN_IMPL
/* attn.h's implementation, private to this file: host code nvcc's front end checks more
   strictly (set-but-unused locals in the cpuid code) and public functions this file does not
   call. */
#ifdef __NVCC__
#pragma nv_diagnostic push
#pragma nv_diag_suppress 550
#endif
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#endif
#include "attn.h"
#ifdef ATTN_CUDA__OWN_IMPL
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#ifdef __NVCC__
#pragma nv_diagnostic pop
#endif
#endif

#ifndef ATTN_CUDA_EMULATE
#include <cuda_runtime.h>
#endif

/* ---- public API ------------------------------------------------------------------------- */

/* attn_forward on the GPU (see WHAT IT COMPUTES): q, k, v, out, lse and desc's arrays are
   device pointers; the work is queued on stream. Returns attn_forward's status for the same
   arguments, or an ATTN_ERR_CUDA_* one; on any error nothing is written or launched. */
attn_status attn_cuda_forward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out,
                              float *lse, cudaStream_t stream);
/* Device workspace bytes attn_cuda_forward needs (the same validation runs first): 0. */
attn_status attn_cuda_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                     size_t *bytes);

/* attn_decode on the GPU: q [batch, Sq, Hq, D] over a KV cache whose k/v data, lens and
   block_table are device memory (the attn_kv_cache struct itself is a host struct; contiguous
   or paged with any page size). Split-KV (flash-decoding): long caches are split across
   blocks, each writes an fp32 partial row and its lse to the workspace, a second kernel merges
   them. desc->workspace (device memory of attn_cuda_decode_workspace_size bytes) makes the
   call allocation-free; without it the call allocates and frees the workspace itself (and then
   waits for the stream). Same options and statuses as attn_decode, except RoPE and dropout. */
attn_status attn_cuda_decode(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache, attn_tensor out,
                             float *lse, cudaStream_t stream);
/* Device workspace bytes attn_cuda_decode needs (0 when the cache is not split). */
attn_status attn_cuda_decode_workspace_size(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                            size_t *bytes);
/* attn_merge on the GPU: parts and part_lse are host arrays of device tensors / pointers; out
   may be parts[0] (in place). Waits for the stream before returning (it frees a small device
   copy of the part views). */
attn_status attn_cuda_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse, attn_tensor out,
                            float *lse, cudaStream_t stream);
/* attn_backward on the GPU (device pointers; the forward's desc, q, k, v, out and lse):
   FlashAttention-2's recomputation, on tensor cores for f16/bf16 q, k, v, dout of one dtype
   with head dim 32/64/96/128 (P and dS rounded to that dtype for the mma, fp32 accumulation),
   else on CUDA cores in fp32 (see WHAT IT COMPUTES; allow_tf32 does not apply); deterministic (no atomics: dk/dv rows
   owned by one block or warp each, dq in a second pass over the keys). Every mask, ALiBi, softcap, bias, GQA and varlen of the forward; dropout, rope and
   dbias give ATTN_ERR_CUDA_UNSUPPORTED. Without desc->workspace the call allocates its
   [B, Hq, Sq] floats itself and waits for the stream. */
attn_status attn_cuda_backward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out,
                               attn_tensor dout, const float *lse, attn_tensor dq, attn_tensor dk, attn_tensor dv,
                               cudaStream_t stream);
/* Device workspace bytes attn_cuda_backward needs. */
attn_status attn_cuda_backward_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                              size_t *bytes);

#ifdef ATTN_CUDA_IMPLEMENTATION
#ifndef ATTN_CUDA__IMPLEMENTATION_DONE
#define ATTN_CUDA__IMPLEMENTATION_DONE

#ifndef ATTN_CUDA_EMULATE
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#endif
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <vector>

/* ---------------------------------------------------------------------------------------
   1. device primitives: inline PTX under nvcc, the emulator's instruction functions under
      ATTN_CUDA_EMULATE (tests/cuda/emu.h). Every shared-memory access of the kernels goes
      through one of these (so the emulator sees all of them).
   --------------------------------------------------------------------------------------- */
#ifdef ATTN_CUDA_EMULATE
#define ACU_DEV static inline
#define ACU_UNROLL
#define ACU_GRID_CONST
#define ACU_SHARED_BASE(name) unsigned char *name = emu_shared_base()
#define ACU_LAUNCH(kernel, grid, block, smem, stream, ...) ((void)(stream), emu_launch(grid, block, smem, kernel, __VA_ARGS__))
ACU_DEV void acu_mma(float d[4], const uint32_t a[4], const uint32_t b[2], int bf16) { emu_mma(d, a, b, bf16); }
ACU_DEV void acu_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) { emu_mma_tf32(d, a, b); }
ACU_DEV uint32_t acu_tf32(float x) { return emu_cvt_rna_tf32(x); }
ACU_DEV float acu_u2f(uint32_t u) { return emu_u2f(u); }
ACU_DEV uint32_t acu_lds32(const void *p) { uint32_t v; emu_lds(&v, p, 4); return v; }
ACU_DEV void acu_ldsm_x4(uint32_t r[4], const void *p) { emu_ldmatrix_x4(r, p); }
ACU_DEV void acu_ldsm_x4_t(uint32_t r[4], const void *p) { emu_ldmatrix_x4_trans(r, p); }
ACU_DEV void acu_cp_async16(void *s, const void *g, int src_bytes) { emu_cp_async16(s, g, src_bytes); }
ACU_DEV void acu_cp_commit(void) { emu_cp_commit(); }
template <int N> ACU_DEV void acu_cp_wait(void) { emu_cp_wait(N); }
ACU_DEV float acu_shfl_xor(float v, int m) { return emu_u2f(emu_shfl_xor(emu_f2u(v), m)); }
ACU_DEV float acu_shfl_idx(float v, int src) { return emu_u2f(emu_shfl_idx(emu_f2u(v), src)); }
ACU_DEV int acu_any(int pred) { return emu_any(pred); }
ACU_DEV void acu_sts16B(void *p, const uint32_t v[4]) { emu_sts(p, v, 16); }
ACU_DEV float acu_h2f(uint16_t h, int bf16) { return bf16 ? attn__bf16_to_f32(h) : attn__f16_to_f32(h); }
ACU_DEV uint16_t acu_f2h(float f, int bf16) { return bf16 ? attn__f32_to_bf16(f) : attn__f32_to_f16(f); }
#else
#define ACU_DEV static __device__ __forceinline__
#define ACU_UNROLL _Pragma("unroll")
#define ACU_GRID_CONST __grid_constant__
#define ACU_SHARED_BASE(name) extern __shared__ __align__(16) unsigned char name[]
#define ACU_LAUNCH(kernel, grid, block, smem, stream, ...) kernel<<<grid, block, smem, stream>>>(__VA_ARGS__)
ACU_DEV void acu_mma(float d[4], const uint32_t a[4], const uint32_t b[2], int bf16) {
    if (bf16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* mma.sync m16n8k8 on TF32 operands (each the fp32 bit pattern cvt.rna.tf32.f32 returns), fp32 accumulation */
ACU_DEV void acu_mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
ACU_DEV uint32_t acu_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
}
ACU_DEV float acu_u2f(uint32_t u) { return __uint_as_float(u); }
ACU_DEV uint32_t acu_lds32(const void *p) { return *(const uint32_t *)p; }
ACU_DEV void acu_ldsm_x4(uint32_t r[4], const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory");
}
ACU_DEV void acu_ldsm_x4_t(uint32_t r[4], const void *p) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s) : "memory");
}
ACU_DEV void acu_cp_async16(void *sp, const void *g, int src_bytes) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(sp);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(g), "r"(src_bytes) : "memory");
}
ACU_DEV void acu_cp_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> ACU_DEV void acu_cp_wait(void) { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }
ACU_DEV float acu_shfl_xor(float v, int m) { return __shfl_xor_sync(0xffffffffu, v, m); }
ACU_DEV float acu_shfl_idx(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
ACU_DEV int acu_any(int pred) { return __any_sync(0xffffffffu, pred); }
ACU_DEV void acu_sts16B(void *p, const uint32_t v[4]) { *(uint4 *)p = make_uint4(v[0], v[1], v[2], v[3]); }
ACU_DEV float acu_h2f(uint16_t h, int bf16) {
    return bf16 ? __bfloat162float(__ushort_as_bfloat16(h)) : __half2float(__ushort_as_half(h));
}
ACU_DEV uint16_t acu_f2h(float f, int bf16) {
    return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(f)) : __half_as_ushort(__float2half_rn(f));
}
#endif

/* element i of a row of dtype t, as fp32; and the store back */
ACU_DEV float acu_ld(const void *row, attn_dtype t, int i) {
    if (t == ATTN_F32) return ((const float *)row)[i];
    return acu_h2f(((const uint16_t *)row)[i], t == ATTN_BF16);
}
ACU_DEV void acu_st(void *row, attn_dtype t, int i, float x) {
    if (t == ATTN_F32) ((float *)row)[i] = x;
    else ((uint16_t *)row)[i] = acu_f2h(x, t == ATTN_BF16);
}
ACU_DEV uint32_t acu_pack(float lo, float hi, int bf16) {
    return (uint32_t)acu_f2h(lo, bf16) | ((uint32_t)acu_f2h(hi, bf16) << 16);
}
/* row (b, s, h) of a view: the element offset rule of attn__at, on the device */
ACU_DEV const char *acu_row(const attn__view &v, long long b, long long s, long long h) {
    return v.data + (ptrdiff_t)v.esize * ((ptrdiff_t)b * v.sb + (ptrdiff_t)s * v.ss + (ptrdiff_t)h * v.sh);
}
/* K/V row: token `row` of sequence tb, head h; a paged cache (P.page_size > 0) looks the page up in
   the block table, as attn.h's attn__kv_at does */
ACU_DEV const char *acu_kv_row(const attn__problem &P, const attn__view &v, long long tb, long long row, long long h) {
    if (P.page_size) {
        const ptrdiff_t page = P.block_table[(size_t)tb * (size_t)P.max_pages + (size_t)(row / P.page_size)];
        return v.data + (ptrdiff_t)v.esize * (page * v.sb + (ptrdiff_t)(row % P.page_size) * v.ss + (ptrdiff_t)h * v.sh);
    }
    return acu_row(v, tb, row, h);
}

/* ---------------------------------------------------------------------------------------
   2. the forward kernels
   --------------------------------------------------------------------------------------- */
struct acu_fwd_params {
    attn__problem P;            /* attn__check_forward's resolved problem (device pointers) */
    int aligned;                /* q/k/v rows 16-byte aligned: cp.async, else element loads */
    int tf32;                   /* f32 q/k/v on acu_fwd_mma<D, ACU_TF32> (acu_use_tf32), else acu_fwd_f32 */
    int tail;                   /* varlen: grid.z has one extra slice for rows past cu_seqlens_q[n] */
    int n_splits, split_keys;   /* split-KV (decoding): grid.z = slices x n_splits, split s takes keys
                                   [s split_keys, (s + 1) split_keys) (a multiple of 64) */
    float *part_out, *part_lse; /* n_splits > 1: normalised partial rows, fp32 dense [split][B][Sq][Hq][Dv],
                                   and their lse [split][B][Hq][Sq], merged by acu_merge */
};

/* One sequence slice of the grid: where its rows live, how many tensor rows it owns. */
ACU_DEV void acu_slice(const attn__problem &P, int z, int tail, attn__seq *S, int *rows) {
    if (tail && z == P.n_seqs) {       /* packed rows after the last sequence: padding only */
        S->tb = 0; S->seq = z; S->q0 = P.cu_q[P.n_seqs]; S->k0 = P.cu_k[P.n_seqs]; S->Lq = 0; S->Lk = 0;
        *rows = P.q.seq - S->q0;
        return;
    }
    attn__seq_at(&P, z, S);
    *rows = P.cu_q ? S->Lq : P.q.seq;
}

/* logit processing of one element, in attn.h's order: softcap, bias, ALiBi; -inf if masked */
ACU_DEV float acu_logit(const attn__problem &P, float acc, const float *brow, float slope, long long p, long long j,
                        int vis) {
    float x = acc * P.scale;
    if (!vis) return -INFINITY;
    if (P.softcap > 0.0f) x = P.softcap * tanhf(x / P.softcap);
    if (brow) x += brow[j];
    if (P.alibi) x -= slope * fabsf((float)(p - j));
    return x;
}
ACU_DEV int acu_visible(const attn__problem &P, int32_t cap, int32_t lo, int32_t hi, int pre, long long p, long long j,
                        long long Lk) {
    if (P.dilation > 1) return j < Lk && attn__visible(&P, p, j);
    return attn__lane_ok(cap, lo, hi, pre, j);
}

/* Key tiles [t0, t1) of the block's rows [p0, p1] within keys [klo, khi) as up to two runs of BN-key tiles. */
ACU_DEV int acu_tiles(const attn__problem &P, long long p0, long long p1, long long Lk, int BN, long long klo, long long khi,
                      int t[2][2]) {
    long long r[2][2];
    int n = attn__key_ranges(&P, p0, p1, Lk, r), i, m = 0;
    for (i = 0; i < n; ++i) {
        const long long lo = r[i][0] > klo ? r[i][0] : klo, hi = r[i][1] < khi ? r[i][1] : khi;
        int a = (int)(lo / BN), b = lo < hi ? (int)((hi + BN - 1) / BN) : a;
        if (m && a < t[m - 1][1]) a = t[m - 1][1];
        if (a < b) { t[m][0] = a; t[m][1] = b; ++m; }
    }
    return m;
}

/* Where row i of slice S, head h goes: out (and lse), or with split-KV the split's fp32 partial. */
ACU_DEV char *acu_out_row(const acu_fwd_params &prm, const attn__seq &S, int i, int h, int split, attn_dtype *dt,
                          float **lse) {
    const attn__problem &P = prm.P;
    if (prm.n_splits > 1) {
        const size_t rowi = ((size_t)S.tb * P.q.seq + (size_t)S.q0 + (size_t)i) * (size_t)P.q.heads + (size_t)h;
        *dt = ATTN_F32;
        *lse = prm.part_lse + (size_t)split * P.q.batch * P.q.heads * P.q.seq;
        return (char *)(prm.part_out + ((size_t)split * P.q.batch * P.q.seq * P.q.heads + rowi) * (size_t)P.v.dim);
    }
    return (char *)acu_row(P.out, S.tb, (long long)S.q0 + i, h);
}

#define ACU_BM 64                 /* query rows per block: 4 warps x 16 */
#define ACU_LOG2E 1.4426950408889634f
#define ACU_LN2 0.6931471805599453f
#define ACU_THREADS 128

/* The tensor-core kernel's operand types: ACU_F16 / ACU_BF16 (16-bit storage, mma.m16n8k16) and
   ACU_TF32 (f32 storage, mma.m16n8k8.tf32 on operands rounded by cvt.rna.tf32.f32). */
enum { ACU_F16 = 0, ACU_BF16 = 1, ACU_TF32 = 2 };

template <int D, int T> struct acu_cfg {
    enum { RB = D * (T == ACU_TF32 ? 4 : 2),          /* bytes of a Q/K/V row */
           BN = RB <= 256 ? 64 : RB <= 512 ? 32 : 16,  /* keys per tile */
           LDB = RB + 16,     /* shared row stride in bytes: the 16 B pad puts the 8 rows of an ldmatrix
                                 matrix, and tf32's V loads (keys 2t, 2t+1 x dims g), on 32 distinct banks */
           KS = RB / 32,      /* k-steps of Q K^T, 32 bytes of a row each (16 f16/bf16, 8 tf32) */
           QREG = RB <= 256,  /* Q fragments held in registers */
           SMEM = (ACU_BM + 4 * BN) * LDB };
};

/* Tile rows [r0, r0 + n) of a view (rows of RB bytes) into shared dst (row stride LDB bytes), rows
   >= valid zero filled, never read. Each 16 bytes is one cp.async (aligned) or 8 16-bit loads. */
template <int RB, int LDB>
ACU_DEV void acu_load_tile(unsigned char *dst, const attn__problem &P, const attn__view &v, int kv, long long b, long long s0,
                           long long h, int n, int valid, int aligned, int tid) {
    const int chunks = RB / 16;
    int c;
    for (c = tid; c < n * chunks; c += ACU_THREADS) {
        const int r = c / chunks, col = (c % chunks) * 16;     /* byte column */
        unsigned char *sp = dst + (size_t)r * LDB + col;
        const char *g = r < valid ? (kv ? acu_kv_row(P, v, b, s0 + r, h) : acu_row(v, b, s0 + r, h)) + col : v.data;
        if (aligned) acu_cp_async16(sp, g, r < valid ? 16 : 0);
        else {
            uint32_t w[4] = { 0, 0, 0, 0 };
            int e;
            if (r < valid)
                for (e = 0; e < 4; ++e)
                    w[e] = (uint32_t)((const uint16_t *)g)[2 * e] | ((uint32_t)((const uint16_t *)g)[2 * e + 1] << 16);
            acu_sts16B(sp, w);
        }
    }
}

/* The Q tile of packed rows [m0, m0 + BM): packed row pr is query row pr / G of head hk G + pr % G
   (the G query heads of KV head hk side by side, so K/V tiles are loaded once for all of them);
   rows past Lq zero filled. */
template <int RB, int LDB>
ACU_DEV void acu_load_q(unsigned char *dst, const attn__problem &P, long long b, long long q0, int m0, int hk, int Lq,
                        int aligned, int tid) {
    const int chunks = RB / 16, G = P.groups;
    int c;
    for (c = tid; c < ACU_BM * chunks; c += ACU_THREADS) {
        const int r = c / chunks, col = (c % chunks) * 16, i = (m0 + r) / G, h = hk * G + (m0 + r) % G, ok = i < Lq;
        unsigned char *sp = dst + (size_t)r * LDB + col;
        const char *g = ok ? acu_row(P.q, b, q0 + i, h) + col : P.q.data;
        if (aligned) acu_cp_async16(sp, g, ok ? 16 : 0);
        else {
            uint32_t w[4] = { 0, 0, 0, 0 };
            int e;
            if (ok)
                for (e = 0; e < 4; ++e)
                    w[e] = (uint32_t)((const uint16_t *)g)[2 * e] | ((uint32_t)((const uint16_t *)g)[2 * e + 1] << 16);
            acu_sts16B(sp, w);
        }
    }
}

/* ldmatrix.x4 of the A or B fragments of one k-step: for ACU_TF32 each register is then rounded
   by cvt.rna.tf32.f32 (ldmatrix moves 16-bit pairs: on f32 rows lane l gets element l % 4 of row
   l / 4 of each 8x4 matrix, which is the m16n8k8 tf32 A and B fragment layout) */
template <int T> ACU_DEV void acu_ldsm_op(uint32_t r[4], const void *p) {
    int i;
    acu_ldsm_x4(r, p);
    if (T == ACU_TF32) ACU_UNROLL for (i = 0; i < 4; ++i) r[i] = acu_tf32(acu_u2f(r[i]));
}
template <int T> ACU_DEV void acu_mma_op(float d[4], const uint32_t a[4], const uint32_t b[2]) {
    if (T == ACU_TF32) acu_mma_tf32(d, a, b);
    else acu_mma(d, a, b, T == ACU_BF16);
}

/* FlashAttention-2 forward on tensor cores: block (m-tile of packed rows, KV head, sequence
   slice [x split]), 4 warps of 16 packed rows each (row = query row x query head of the KV
   head's group: GQA packing); K/V tiles of BN keys double-buffered with cp.async. T: ACU_F16,
   ACU_BF16 (k-steps of 16) or ACU_TF32 (f32 tiles, k-steps of 8; the same byte addressing). */
template <int D, int T>
__global__ void __launch_bounds__(ACU_THREADS) acu_fwd_mma(const ACU_GRID_CONST acu_fwd_params prm) {
    typedef acu_cfg<D, T> C;
    enum { BN = C::BN, LDB = C::LDB, KS = C::KS, NT = BN / 8, DT = D / 8 };
    const attn__problem &P = prm.P;
    ACU_SHARED_BASE(smem);
    unsigned char *Qs = smem, *Ks = smem + (size_t)ACU_BM * LDB, *Vs = Ks + (size_t)2 * BN * LDB;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int hk = (int)blockIdx.y, G = P.groups, m0 = (int)blockIdx.x * ACU_BM;
    attn__seq S;
    int rows, r, i, j, kk;
    const int split = (int)blockIdx.z % prm.n_splits;
    const long long klo = (long long)split * prm.split_keys, khi = prm.n_splits > 1 ? klo + prm.split_keys : (1LL << 40);
    acu_slice(P, (int)blockIdx.z / prm.n_splits, prm.tail, &S, &rows);
    if (m0 >= rows * G) return;
    const long long shift = (long long)S.Lk - S.Lq;
    /* this thread's two rows: warp rows g and g + 8 (query row ri, head hr) */
    int ri[2], hr[2], valid[2];
    float slope[2];
    long long pos[2];
    int32_t cap[2], lo[2], hi[2];
    const float *brow[2];
    float mrow[2], lrow[2], o[DT][4];
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    /* Logits are kept in log2 units (times log2 e), so each softmax weight is one exp2f. Tiles
       that every valid row sees whole, with no softcap, bias or ALiBi, take only the scale. */
    const int plain = !(P.softcap > 0.0f) && !P.bias && !P.alibi;
    const float scale2 = P.scale * ACU_LOG2E;
    ACU_UNROLL for (r = 0; r < 2; ++r) {
        const int pr = m0 + warp * 16 + g + 8 * r;
        ri[r] = pr / G; hr[r] = hk * G + pr % G;
        slope[r] = P.alibi ? P.alibi[hr[r]] : 0.0f;
        valid[r] = ri[r] < S.Lq;
        pos[r] = ri[r] + shift;
        attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, pos[r], S.Lk, &cap[r], &lo[r], &hi[r]);
        brow[r] = P.bias && valid[r] ? P.bias + (ptrdiff_t)(P.bias_batch == 1 ? 0 : S.seq) * P.bias_sb +
                                           (ptrdiff_t)(P.bias_heads == 1 ? 0 : hr[r]) * P.bias_sh + (ptrdiff_t)ri[r] * P.bias_sq
                                     : (const float *)0;
        mrow[r] = -INFINITY; lrow[r] = 0.0f;
    }
    ACU_UNROLL for (i = 0; i < DT; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;

    int tiles[2][2], nrun = 0, ntiles = 0;
    if (m0 / G < S.Lq) {
        const long long p0 = m0 / G + shift, p1 = (long long)((m0 + ACU_BM - 1) / G < S.Lq ? (m0 + ACU_BM - 1) / G : S.Lq - 1) + shift;
        nrun = acu_tiles(P, p0, p1, S.Lk, BN, klo, khi, tiles);
        for (i = 0; i < nrun; ++i) ntiles += tiles[i][1] - tiles[i][0];
    }
    if (ntiles > 0) {
        uint32_t qf[C::QREG ? KS : 1][4];
        acu_load_q<C::RB, LDB>(Qs, P, S.tb, S.q0, m0, hk, S.Lq, prm.aligned, tid);
        acu_cp_commit();
#define ACU_TILE_C0(n) (((n) < tiles[0][1] - tiles[0][0] ? tiles[0][0] + (n) : tiles[1][0] + (n) - (tiles[0][1] - tiles[0][0])) * BN)
        {
            const int c0 = ACU_TILE_C0(0), kn = S.Lk - c0 < BN ? S.Lk - c0 : BN;
            acu_load_tile<C::RB, LDB>(Ks, P, P.k, 1, S.tb, (long long)S.k0 + c0, hk, BN, kn, prm.aligned, tid);
            acu_load_tile<C::RB, LDB>(Vs, P, P.v, 1, S.tb, (long long)S.k0 + c0, hk, BN, kn, prm.aligned, tid);
            acu_cp_commit();
        }
        for (int n = 0; n < ntiles; ++n) {
            const int st = n & 1, c0 = ACU_TILE_C0(n);
            /* a tile every valid row sees whole (attn.h's attn__chunk_full over the block's valid rows;
               rows past Lq are computed on zero-filled Q and never stored): no per-element mask */
            const int last = (m0 + ACU_BM - 1) / G < S.Lq ? (m0 + ACU_BM - 1) / G : S.Lq - 1;
            const int full = c0 + BN <= S.Lk && attn__chunk_full(&P, m0 / G + shift, last + shift, c0, c0 + BN);
            const int lean = full && plain;
            unsigned char *Kc = Ks + (size_t)st * BN * LDB, *Vc = Vs + (size_t)st * BN * LDB;
            if (n + 1 < ntiles) {       /* prefetch the next tile into the other stage */
                const int c1 = ACU_TILE_C0(n + 1), kn = S.Lk - c1 < BN ? S.Lk - c1 : BN;
                acu_load_tile<C::RB, LDB>(Ks + (size_t)(st ^ 1) * BN * LDB, P, P.k, 1, S.tb, (long long)S.k0 + c1, hk, BN, kn,
                                          prm.aligned, tid);
                acu_load_tile<C::RB, LDB>(Vs + (size_t)(st ^ 1) * BN * LDB, P, P.v, 1, S.tb, (long long)S.k0 + c1, hk, BN, kn,
                                          prm.aligned, tid);
            }
            acu_cp_commit();
            acu_cp_wait<1>();           /* Q and tile n have landed (this thread's copies) */
            __syncthreads();            /* ... and everyone's */
            if (C::QREG && n == 0)
                ACU_UNROLL for (kk = 0; kk < KS; ++kk)
                    acu_ldsm_op<T>(qf[C::QREG ? kk : 0], Qs + (size_t)(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDB +
                                                         kk * 32 + (lane >> 4) * 16);
            /* S = Q K^T: 16 rows x BN keys per warp */
            float s[NT][4];
            ACU_UNROLL for (j = 0; j < NT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
            ACU_UNROLL for (kk = 0; kk < KS; ++kk) {
                uint32_t a[4];
                if (C::QREG) { a[0] = qf[kk][0]; a[1] = qf[kk][1]; a[2] = qf[kk][2]; a[3] = qf[kk][3]; }
                else acu_ldsm_op<T>(a, Qs + (size_t)(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDB + kk * 32 +
                                           (lane >> 4) * 16);
                ACU_UNROLL for (j = 0; j < NT; j += 2) {
                    uint32_t b[4];
                    acu_ldsm_op<T>(b, Kc + (size_t)(j * 8 + (lane >> 4) * 8 + (lane & 7)) * LDB + kk * 32 +
                                          ((lane >> 3) & 1) * 16);
                    acu_mma_op<T>(s[j], a, b);
                    acu_mma_op<T>(s[j + 1], a, b + 2);
                }
            }
            /* masks, online softmax (rows g and g + 8; a row's 4 threads are lanes 4g..4g+3) */
            ACU_UNROLL for (r = 0; r < 2; ++r) {
                float mx = -INFINITY, msafe, alpha, sum = 0.0f;
                if (lean)
                    ACU_UNROLL for (j = 0; j < NT; ++j)
                        ACU_UNROLL for (i = 0; i < 2; ++i) {
                            const float x = s[j][2 * r + i] * scale2;
                            s[j][2 * r + i] = x;
                            mx = fmaxf(mx, x);
                        }
                else
                    ACU_UNROLL for (j = 0; j < NT; ++j)
                        ACU_UNROLL for (i = 0; i < 2; ++i) {
                            const long long key = (long long)c0 + j * 8 + 2 * t4 + i;
                            const int vis = full || (valid[r] && acu_visible(P, cap[r], lo[r], hi[r], pre, pos[r], key, S.Lk));
                            const float x = acu_logit(P, s[j][2 * r + i], brow[r], slope[r], pos[r], key, vis) * ACU_LOG2E;
                            s[j][2 * r + i] = x;
                            mx = fmaxf(mx, x);
                        }
                mx = fmaxf(mx, acu_shfl_xor(mx, 1));
                mx = fmaxf(mx, acu_shfl_xor(mx, 2));
                mx = fmaxf(mx, mrow[r]);
                msafe = mx == -INFINITY ? 0.0f : mx;
                alpha = mrow[r] == -INFINITY ? 0.0f : exp2f(mrow[r] - msafe);
                mrow[r] = mx;
                ACU_UNROLL for (j = 0; j < NT; ++j)
                    ACU_UNROLL for (i = 0; i < 2; ++i) {
                        const float e = exp2f(s[j][2 * r + i] - msafe);
                        s[j][2 * r + i] = e;
                        sum += e;
                    }
                lrow[r] = lrow[r] * alpha + sum;
                ACU_UNROLL for (i = 0; i < DT; ++i) { o[i][2 * r] *= alpha; o[i][2 * r + 1] *= alpha; }
            }
            /* O += P V: P's accumulator fragments are the A fragments of the next mma */
            if (T == ACU_TF32)
                ACU_UNROLL for (kk = 0; kk < NT; ++kk) {
                    /* k-steps of 8 keys. This thread holds P[g][2t], P[g][2t+1] (and row g + 8) of keys
                       kk*8..kk*8+7; the k-step takes key 2t as its k = t and key 2t+1 as k = t + 4 (a
                       permutation of the keys, which the sum over keys does not see), so b0, b1 are V's
                       rows 2t and 2t+1 at dim g: two 32-bit loads, conflict-free with the 16 B pad. */
                    uint32_t a[4];
                    a[0] = acu_tf32(s[kk][0]); a[1] = acu_tf32(s[kk][2]); a[2] = acu_tf32(s[kk][1]); a[3] = acu_tf32(s[kk][3]);
                    const unsigned char *vp = Vc + (size_t)(kk * 8 + 2 * t4) * LDB + g * 4;
                    ACU_UNROLL for (j = 0; j < DT; ++j) {
                        uint32_t b[2];
                        b[0] = acu_tf32(acu_u2f(acu_lds32(vp + j * 32)));
                        b[1] = acu_tf32(acu_u2f(acu_lds32(vp + LDB + j * 32)));
                        acu_mma_tf32(o[j], a, b);
                    }
                }
            else
                ACU_UNROLL for (kk = 0; kk < BN / 16; ++kk) {
                    uint32_t a[4];
                    a[0] = acu_pack(s[2 * kk][0], s[2 * kk][1], T == ACU_BF16);
                    a[1] = acu_pack(s[2 * kk][2], s[2 * kk][3], T == ACU_BF16);
                    a[2] = acu_pack(s[2 * kk + 1][0], s[2 * kk + 1][1], T == ACU_BF16);
                    a[3] = acu_pack(s[2 * kk + 1][2], s[2 * kk + 1][3], T == ACU_BF16);
                    ACU_UNROLL for (j = 0; j < DT; j += 2) {
                        uint32_t b[4];
                        acu_ldsm_x4_t(b, Vc + (size_t)(kk * 16 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LDB + j * 16 +
                                              (lane >> 4) * 16);
                        acu_mma(o[j], a, b, T == ACU_BF16);
                        acu_mma(o[j + 1], a, b + 2, T == ACU_BF16);
                    }
                }
            __syncthreads();            /* stage st is refilled by the next iteration's prefetch */
        }
#undef ACU_TILE_C0
    }
    /* epilogue: row sums over the 4 threads of a row, normalise, store out and lse */
    ACU_UNROLL for (r = 0; r < 2; ++r) {
        float l = lrow[r], inv, lse;
        l += acu_shfl_xor(l, 1);
        l += acu_shfl_xor(l, 2);
        if (ri[r] >= rows) continue;
        if (!valid[r] || l == 0.0f) { inv = 0.0f; lse = -INFINITY; }
        else { inv = 1.0f / l; lse = mrow[r] * ACU_LN2 + logf(l); }
        attn_dtype odt = P.out.dtype;
        float *plse = P.lse;
        char *orow = acu_out_row(prm, S, ri[r], hr[r], split, &odt, &plse);
        ACU_UNROLL for (i = 0; i < DT; ++i) {
            acu_st(orow, odt, i * 8 + 2 * t4, !valid[r] || l == 0.0f ? 0.0f : o[i][2 * r] * inv);
            acu_st(orow, odt, i * 8 + 2 * t4 + 1, !valid[r] || l == 0.0f ? 0.0f : o[i][2 * r + 1] * inv);
        }
        if (plse && t4 == 0) plse[((size_t)S.tb * P.q.heads + hr[r]) * P.q.seq + S.q0 + ri[r]] = lse;
    }
}

/* fp32 forward on CUDA cores: one warp per query row (4 per block, 4 rows per warp); a lane
   takes one key of each 32-key chunk for Q.K and BN/32 value dimensions for P.V. */
#define ACU_F32_ROWS 16
#define ACU_F32_DV 8               /* value dims per lane: v.dim <= 256 */
__global__ void __launch_bounds__(ACU_THREADS, 1) acu_fwd_f32(const ACU_GRID_CONST acu_fwd_params prm) {
    const attn__problem &P = prm.P;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, D = P.q.dim, Dv = P.v.dim;
    const int h = (int)blockIdx.y, hk = h / P.groups;
    attn__seq S;
    int rows, rr, u;
    const int split = (int)blockIdx.z % prm.n_splits;
    const long long klo = (long long)split * prm.split_keys, khi = prm.n_splits > 1 ? klo + prm.split_keys : (1LL << 40);
    acu_slice(P, (int)blockIdx.z / prm.n_splits, prm.tail, &S, &rows);
    const long long shift = (long long)S.Lk - S.Lq;
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    const float slope = P.alibi ? P.alibi[h] : 0.0f;
    for (rr = 0; rr < ACU_F32_ROWS / 4; ++rr) {
        const int row = (int)blockIdx.x * ACU_F32_ROWS + warp * (ACU_F32_ROWS / 4) + rr;
        if (row >= rows) break;                        /* uniform across the warp */
        const int valid = row < S.Lq;
        const long long p = row + shift;
        float m = -INFINITY, l = 0.0f, acc[ACU_F32_DV];
        int32_t cap, lo, hi;
        int tl[2][2], nrun = 0, nt = 0, len0 = 0, tn;
        const char *qrow = acu_row(P.q, S.tb, (long long)S.q0 + row, h);
        const float *brow = P.bias && valid ? P.bias + (ptrdiff_t)(P.bias_batch == 1 ? 0 : S.seq) * P.bias_sb +
                                                  (ptrdiff_t)(P.bias_heads == 1 ? 0 : h) * P.bias_sh + (ptrdiff_t)row * P.bias_sq
                                            : (const float *)0;
        ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) acc[u] = 0.0f;
        attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, p, S.Lk, &cap, &lo, &hi);
        if (valid) nrun = acu_tiles(P, p, p, S.Lk, 32, klo, khi, tl);
        if (nrun > 0) { len0 = tl[0][1] - tl[0][0]; nt = len0 + (nrun > 1 ? tl[1][1] - tl[1][0] : 0); }
        {
            const int t00 = nrun > 0 ? tl[0][0] : 0, t10 = nrun > 1 ? tl[1][0] : 0;   /* scalars: no indexed arrays in the loop */
            for (tn = 0; tn < nt; ++tn) {
                const long long c0 = (long long)(tn < len0 ? t00 + tn : t10 + tn - len0) * 32, key = c0 + lane;
                float dot = 0.0f, x, mx, msafe, alpha, e, sum;
                int d, jj;
                const int vis = key < S.Lk && acu_visible(P, cap, lo, hi, pre, p, key, S.Lk);
                if (vis) {
                    const char *krow = acu_kv_row(P, P.k, S.tb, (long long)S.k0 + key, hk);
                    for (d = 0; d < D; ++d) dot += acu_ld(qrow, P.q.dtype, d) * acu_ld(krow, P.k.dtype, d);
                }
                x = acu_logit(P, dot, brow, slope, p, key, vis);
                mx = x;
                ACU_UNROLL for (d = 16; d >= 1; d >>= 1) mx = fmaxf(mx, acu_shfl_xor(mx, d));
                mx = fmaxf(mx, m);
                msafe = mx == -INFINITY ? 0.0f : mx;
                alpha = m == -INFINITY ? 0.0f : expf(m - msafe);
                m = mx;
                e = expf(x - msafe);
                sum = e;
                ACU_UNROLL for (d = 16; d >= 1; d >>= 1) sum += acu_shfl_xor(sum, d);
                l = l * alpha + sum;
                ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) acc[u] *= alpha;
                for (jj = 0; jj < 32; ++jj) {
                    const float pj = acu_shfl_idx(e, jj);
                    if (c0 + jj >= S.Lk) break;               /* uniform: keys past Lk are never read */
                    const char *vrow = acu_kv_row(P, P.v, S.tb, (long long)S.k0 + c0 + jj, hk);
                    ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u)
                        if (lane + 32 * u < Dv) acc[u] += pj * acu_ld(vrow, P.v.dtype, lane + 32 * u);
                }
            }
        }
        {
            const int empty = !valid || l == 0.0f;
            const float inv = empty ? 0.0f : 1.0f / l;
            attn_dtype odt = P.out.dtype;
            float *plse = P.lse;
            char *orow = acu_out_row(prm, S, row, h, split, &odt, &plse);
            ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u)
                if (lane + 32 * u < Dv) acu_st(orow, odt, lane + 32 * u, empty ? 0.0f : acc[u] * inv);
            if (plse && lane == 0)
                plse[((size_t)S.tb * P.q.heads + h) * P.q.seq + S.q0 + row] = empty ? -INFINITY : m + logf(l);
        }
    }
}

/* ---------------------------------------------------------------------------------------
   2b. merge of partial results (attn_cuda_merge, and split-KV decoding's second kernel):
       out = sum_p part_p exp(lse_p - lse), lse = log sum_p exp(lse_p), with attn.h's rules
       (attn__lse_weights): a NaN lse makes the row NaN, all -inf gives zeros and -inf.
   --------------------------------------------------------------------------------------- */
struct acu_merge_params {
    int n, B, S, H, Dv;
    const attn__view *views;          /* device array of n part views, or NULL: dense parts */
    const float *const *lses;         /* device array of n lse pointers (with views) */
    const float *dense_out, *dense_lse;   /* dense fp32 parts [n][B][S][H][Dv], lse [n][B][H][S] */
    attn__view out;
    float *lse;
};
ACU_DEV float acu_part_lse(const acu_merge_params &M, int p, size_t li) {
    return M.views ? M.lses[p][li] : M.dense_lse[(size_t)p * M.B * M.H * M.S + li];
}
/* one warp per row (b, s, h); lanes split the parts for the max and the sum, then the dims */
__global__ void __launch_bounds__(ACU_THREADS) acu_merge(const ACU_GRID_CONST acu_merge_params M) {
    const int lane = (int)threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * 4 + ((int)threadIdx.x >> 5);
    if (row >= (long long)M.B * M.S * M.H) return;     /* uniform across the warp */
    const int h = (int)(row % M.H), s = (int)(row / M.H % M.S), b = (int)(row / M.H / M.S);
    const size_t li = ((size_t)b * M.H + h) * M.S + s;
    float mx = -INFINITY, L = 0.0f, nan = 0.0f, lse;
    int p, d;
    for (p = lane; p < M.n; p += 32) {
        const float m = acu_part_lse(M, p, li);
        if (m != m) nan = 1.0f;
        mx = fmaxf(mx, m);
    }
    ACU_UNROLL for (d = 16; d >= 1; d >>= 1) { mx = fmaxf(mx, acu_shfl_xor(mx, d)); nan = fmaxf(nan, acu_shfl_xor(nan, d)); }
    for (p = lane; p < M.n; p += 32) {
        const float m = acu_part_lse(M, p, li);
        if (m != -INFINITY) L += expf(m - mx);
    }
    ACU_UNROLL for (d = 16; d >= 1; d >>= 1) L += acu_shfl_xor(L, d);
    lse = nan != 0.0f ? NAN : mx == -INFINITY ? -INFINITY : mx + logf(L);
    char *orow = (char *)acu_row(M.out, b, s, h);
    for (d = lane; d < M.Dv; d += 32) {
        float acc = 0.0f;
        if (nan != 0.0f) acc = NAN;
        else if (mx != -INFINITY)
            for (p = 0; p < M.n; ++p) {
                const float m = acu_part_lse(M, p, li);
                const float w = m == -INFINITY ? 0.0f : expf(m - mx) / L;
                const float x = M.views ? acu_ld(acu_row(M.views[p], b, s, h), M.views[p].dtype, d)
                                        : M.dense_out[(((size_t)p * M.B * M.S + (size_t)b * M.S + s) * M.H + h) * M.Dv + d];
                acc += x * w;
            }
        acu_st(orow, M.out.dtype, d, acc);    /* every part read before the element is written: in-place safe */
    }
    if (M.lse && lane == 0) M.lse[li] = lse;
}

/* ---------------------------------------------------------------------------------------
   2c. backward: FlashAttention-2's recomputation on CUDA cores (fp32 FMA, any storage dtype),
       deterministic: no atomics, every gradient row is owned by one warp that sums in a fixed
       order. drow_i = dout_i . out_i; P = exp(s - lse) recomputed from q, k and the forward's
       lse; dS = P (dout V^T - drow) (times 1 - tanh^2 under softcap); dV_j = sum_i P_ij dout_i,
       dK_j = scale sum_i dS_ij q_i (over the KV head's query heads: GQA), dQ_i = scale
       sum_j dS_ij k_j in a second pass (keys again) instead of atomics.
   --------------------------------------------------------------------------------------- */
struct acu_bwd_params {
    attn__problem P;            /* q, k, v, out (the forward's) views, masks */
    attn__view dout, dq, dk, dv;
    const float *lse;           /* the forward's lse [B, Hq, Sq] */
    float *drow;                /* workspace [B, Hq, Sq] */
    int aligned;                /* tensor-core path: q, k, v, dout rows 16-byte aligned (cp.async) */
    int tail;                   /* varlen: one extra slice for rows past the last sequence */
};
/* logit s_ij of a visible pair, and d s / d (scale q.k) (softcap's 1 - tanh^2) */
ACU_DEV float acu_bwd_logit(const attn__problem &P, float dot, const float *brow, float slope, long long p, long long j,
                            float *dcap) {
    float x = dot * P.scale;
    *dcap = 1.0f;
    if (P.softcap > 0.0f) { const float t = tanhf(x / P.softcap); x = P.softcap * t; *dcap = 1.0f - t * t; }
    if (brow) x += brow[j];
    if (P.alibi) x -= slope * fabsf((float)(p - j));
    return x;
}
ACU_DEV float acu_dot(const char *a, attn_dtype ta, const char *b, attn_dtype tb, int n) {
    float s = 0.0f;
    int d;
    for (d = 0; d < n; ++d) s += acu_ld(a, ta, d) * acu_ld(b, tb, d);
    return s;
}
ACU_DEV const float *acu_bias_row(const attn__problem &P, const attn__seq &S, int h, int i) {
    return P.bias ? P.bias + (ptrdiff_t)(P.bias_batch == 1 ? 0 : S.seq) * P.bias_sb + (ptrdiff_t)(P.bias_heads == 1 ? 0 : h) * P.bias_sh +
                        (ptrdiff_t)i * P.bias_sq
                  : (const float *)0;
}

/* drow = rowsum(dout * out): one warp per (b, s, h) of the tensors */
__global__ void __launch_bounds__(ACU_THREADS) acu_bwd_drow(const ACU_GRID_CONST acu_bwd_params prm) {
    const attn__problem &P = prm.P;
    const int lane = (int)threadIdx.x & 31;
    const long long row = (long long)blockIdx.x * 4 + ((int)threadIdx.x >> 5);
    if (row >= (long long)P.q.batch * P.q.seq * P.q.heads) return;
    const int h = (int)(row % P.q.heads), s = (int)(row / P.q.heads % P.q.seq), b = (int)(row / P.q.heads / P.q.seq);
    const char *o = acu_row(P.out, b, s, h), *g = acu_row(prm.dout, b, s, h);
    float acc = 0.0f;
    int d;
    for (d = lane; d < P.v.dim; d += 32) acc += acu_ld(o, P.out.dtype, d) * acu_ld(g, prm.dout.dtype, d);
    ACU_UNROLL for (d = 16; d >= 1; d >>= 1) acc += acu_shfl_xor(acc, d);
    if (lane == 0) prm.drow[((size_t)b * P.q.heads + h) * P.q.seq + s] = acc;
}

/* dK, dV: one warp per key row of a (KV head, sequence slice); lanes take 32 query rows at a
   time for the dot products, then each lane owns dims lane, lane + 32, ... of dk and dv. */
__global__ void __launch_bounds__(ACU_THREADS, 1) acu_bwd_dkdv(const ACU_GRID_CONST acu_bwd_params prm) {
    const attn__problem &P = prm.P;
    const int lane = (int)threadIdx.x & 31, hk = (int)blockIdx.y, D = P.q.dim, Dv = P.v.dim;
    attn__seq S;
    int qrows, u;
    acu_slice(P, (int)blockIdx.z, prm.tail, &S, &qrows);
    const int krows = prm.tail && (int)blockIdx.z == P.n_seqs ? P.k.seq - S.k0 : P.cu_k ? S.Lk : P.k.seq;
    const int j = (int)blockIdx.x * 4 + ((int)threadIdx.x >> 5);
    if (j >= krows) return;                            /* uniform across the warp */
    const long long shift = (long long)S.Lk - S.Lq;
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    float dk[ACU_F32_DV], dv[ACU_F32_DV];
    ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) dk[u] = dv[u] = 0.0f;
    if (j < S.Lk) {
        const char *krow = acu_row(P.k, S.tb, (long long)S.k0 + j, hk), *vrow = acu_row(P.v, S.tb, (long long)S.k0 + j, hk);
        for (int g = 0; g < P.groups; ++g) {
            const int h = hk * P.groups + g;
            const float slope = P.alibi ? P.alibi[h] : 0.0f;
            for (int i0 = 0; i0 < S.Lq; i0 += 32) {
                const int i = i0 + lane;
                const long long p = (long long)i + shift;
                float pr = 0.0f, ds = 0.0f;
                int vis = 0, jj;
                if (i < S.Lq) {
                    int32_t cap, lo, hi;
                    attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, p, S.Lk, &cap, &lo, &hi);
                    vis = acu_visible(P, cap, lo, hi, pre, p, j, S.Lk);
                }
                if (vis) {
                    const size_t li = ((size_t)S.tb * P.q.heads + h) * P.q.seq + S.q0 + i;
                    const float lse = prm.lse[li];
                    float dcap;
                    const char *qrow = acu_row(P.q, S.tb, (long long)S.q0 + i, h);
                    const float x = acu_bwd_logit(P, acu_dot(qrow, P.q.dtype, krow, P.k.dtype, D), acu_bias_row(P, S, h, i),
                                                  slope, p, j, &dcap);
                    if (lse != -INFINITY) {
                        const float dp = acu_dot(acu_row(prm.dout, S.tb, (long long)S.q0 + i, h), prm.dout.dtype, vrow,
                                                 P.v.dtype, Dv);
                        pr = expf(x - lse);
                        ds = pr * (dp - prm.drow[li]) * dcap;
                    }
                }
                if (!acu_any(vis)) continue;               /* uniform: no query of the chunk sees key j */
                for (jj = 0; jj < 32; ++jj) {
                    const float pj = acu_shfl_idx(pr, jj), dsj = acu_shfl_idx(ds, jj);
                    if (i0 + jj >= S.Lq) break;            /* uniform */
                    if (pj == 0.0f && dsj == 0.0f) continue;
                    const char *grow = acu_row(prm.dout, S.tb, (long long)S.q0 + i0 + jj, h);
                    const char *qrow = acu_row(P.q, S.tb, (long long)S.q0 + i0 + jj, h);
                    ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) {
                        if (lane + 32 * u < Dv) dv[u] += pj * acu_ld(grow, prm.dout.dtype, lane + 32 * u);
                        if (lane + 32 * u < D) dk[u] += dsj * acu_ld(qrow, P.q.dtype, lane + 32 * u);
                    }
                }
            }
        }
    }
    {
        char *kr = (char *)acu_row(prm.dk, S.tb, (long long)S.k0 + j, hk), *vr = (char *)acu_row(prm.dv, S.tb, (long long)S.k0 + j, hk);
        ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) {
            if (lane + 32 * u < D) acu_st(kr, prm.dk.dtype, lane + 32 * u, dk[u] * P.scale);
            if (lane + 32 * u < Dv) acu_st(vr, prm.dv.dtype, lane + 32 * u, dv[u]);
        }
    }
}

/* dQ: one warp per query row (4 per block); lanes take 32 keys at a time */
__global__ void __launch_bounds__(ACU_THREADS, 1) acu_bwd_dq(const ACU_GRID_CONST acu_bwd_params prm) {
    const attn__problem &P = prm.P;
    const int lane = (int)threadIdx.x & 31, h = (int)blockIdx.y, hk = h / P.groups, D = P.q.dim, Dv = P.v.dim;
    attn__seq S;
    int rows, u;
    acu_slice(P, (int)blockIdx.z, prm.tail, &S, &rows);
    const int i = (int)blockIdx.x * 4 + ((int)threadIdx.x >> 5);
    if (i >= rows) return;                             /* uniform across the warp */
    const long long shift = (long long)S.Lk - S.Lq, p = (long long)i + shift;
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    const float slope = P.alibi ? P.alibi[h] : 0.0f;
    float dq[ACU_F32_DV];
    ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u) dq[u] = 0.0f;
    if (i < S.Lq) {
        const size_t li = ((size_t)S.tb * P.q.heads + h) * P.q.seq + S.q0 + i;
        const float lse = prm.lse[li], drow = prm.drow[li];
        const char *qrow = acu_row(P.q, S.tb, (long long)S.q0 + i, h), *grow = acu_row(prm.dout, S.tb, (long long)S.q0 + i, h);
        const float *brow = acu_bias_row(P, S, h, i);
        int32_t cap, lo, hi;
        int tl[2][2], nrun, nt = 0, len0 = 0, tn;
        attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, p, S.Lk, &cap, &lo, &hi);
        nrun = lse == -INFINITY ? 0 : acu_tiles(P, p, p, S.Lk, 32, 0, 1LL << 40, tl);
        if (nrun > 0) { len0 = tl[0][1] - tl[0][0]; nt = len0 + (nrun > 1 ? tl[1][1] - tl[1][0] : 0); }
        const int t00 = nrun > 0 ? tl[0][0] : 0, t10 = nrun > 1 ? tl[1][0] : 0;
        for (tn = 0; tn < nt; ++tn) {
            const long long c0 = (long long)(tn < len0 ? t00 + tn : t10 + tn - len0) * 32, key = c0 + lane;
            float ds = 0.0f;
            int jj;
            if (key < S.Lk && acu_visible(P, cap, lo, hi, pre, p, key, S.Lk)) {
                const char *krow = acu_kv_row(P, P.k, S.tb, (long long)S.k0 + key, hk);
                float dcap;
                const float x = acu_bwd_logit(P, acu_dot(qrow, P.q.dtype, krow, P.k.dtype, D), brow, slope, p, key, &dcap);
                const float dp = acu_dot(grow, prm.dout.dtype, acu_kv_row(P, P.v, S.tb, (long long)S.k0 + key, hk), P.v.dtype, Dv);
                ds = expf(x - lse) * (dp - drow) * dcap;
            }
            for (jj = 0; jj < 32; ++jj) {
                const float dsj = acu_shfl_idx(ds, jj);
                if (c0 + jj >= S.Lk) break;            /* uniform */
                if (dsj == 0.0f) continue;
                const char *krow = acu_kv_row(P, P.k, S.tb, (long long)S.k0 + c0 + jj, hk);
                ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u)
                    if (lane + 32 * u < D) dq[u] += dsj * acu_ld(krow, P.k.dtype, lane + 32 * u);
            }
        }
    }
    char *qr = (char *)acu_row(prm.dq, S.tb, (long long)S.q0 + i, h);
    ACU_UNROLL for (u = 0; u < ACU_F32_DV; ++u)
        if (lane + 32 * u < D) acu_st(qr, prm.dq.dtype, lane + 32 * u, dq[u] * P.scale);
}

/* ---------------------------------------------------------------------------------------
   2d. backward on tensor cores: f16 / bf16 q, k, v and dout of one dtype, head dims 32, 64,
       96, 128 with v.dim == q.dim. FlashAttention-2's algorithm on mma.sync m16n8k16 with
       fp32 accumulation, deterministic like 2c (no atomics, fixed summation orders):
       - acu_bwd_mma_dkdv: a block owns 64 key rows of one KV head (4 warps x 16 rows) and
         loops over the KV group's query heads in order, for each over the query tiles of BQ
         rows that see its keys (attn__key_ranges via acu_tiles): S^T = K Q^T and
         dP^T = V dO^T (mma), then per element, with 2c's masks and logit processing
         (acu_visible, acu_bwd_logit): P = exp(S - lse), dS = P (dP - drow) (times softcap's
         1 - tanh^2); then dV += P^T dO and dK += dS^T Q (mma); dK scaled once at the end.
         K and V stay in shared memory; the Q / dO tiles are double-buffered with cp.async.
       - acu_bwd_mma_dq: a block owns 64 query rows of one query head and loops over the key
         tiles of BN keys they see: S = Q K^T, dP = dO V^T, dS as above, dQ += dS K (mma);
         Q and dO stay in shared memory, the K / V tiles are double-buffered.
       Dynamic shared memory (acu_bwd_cfg, both kernels): (128 + 4 x 64) (D + 8) 2 bytes for
       D 32 and 64 (30720, 55296), (128 + 4 x 32) (D + 8) 2 for D 96 and 128 (53248, 69632).
       Rounding: P and dS are rounded to the input dtype (unit roundoff u = 2^-11 for f16,
       2^-8 for bf16) as the A operands of the P^T dO, dS^T Q and dS K products, as
       FlashAttention does; S, dP, P, dS themselves and every sum are fp32. So, beyond fp32
       summation error, elementwise over the head dims:
           |err dV_j| <= u sum_i P_ij |dO_i|,   |err dK_j| <= u scale sum_i |dS_ij| |q_i|,
           |err dQ_i| <= u scale sum_j |dS_ij| |k_j|.
       dS beyond the dtype's range (|dS| > 65504 in f16) overflows, as in FlashAttention.
   --------------------------------------------------------------------------------------- */
#define ACU_BWD_BK 64                /* key rows of a dK/dV block, query rows of a dQ block: 4 warps x 16 */
template <int D> struct acu_bwd_cfg {
    enum { BQ = D <= 64 ? 64 : 32,  /* query rows per tile of the dK/dV loop */
           BN = D <= 64 ? 64 : 32,  /* keys per tile of the dQ loop */
           LD = D + 8,              /* shared row stride in 16-bit elements (16 B pad: no ldmatrix bank conflicts) */
           SMEM_KV = (2 * ACU_BWD_BK + 4 * BQ) * LD * 2,   /* K, V | 2 stages of Q, dO tiles */
           SMEM_Q = (2 * ACU_BWD_BK + 4 * BN) * LD * 2 };  /* Q, dO | 2 stages of K, V tiles */
};
/* Rows [s0, s0 + n) of head h of a 16-bit view (D elements a row) into shared dst (row stride LD
   elements), rows >= valid zero filled. Each 16 bytes is one cp.async (aligned) or 8 element loads. */
template <int D, int LD>
ACU_DEV void acu_bwd_load_tile(unsigned char *dst, const attn__view &v, long long b, long long s0, long long h, int n, int valid,
                               int aligned, int tid) {
    const int chunks = D / 8;
    int c;
    for (c = tid; c < n * chunks; c += ACU_THREADS) {
        const int r = c / chunks, col = (c % chunks) * 8;
        unsigned char *sp = dst + ((size_t)r * LD + col) * 2;
        const char *g = r < valid ? acu_row(v, b, s0 + r, h) + (size_t)col * 2 : v.data;
        if (aligned) acu_cp_async16(sp, g, r < valid ? 16 : 0);
        else {
            uint32_t w[4] = { 0, 0, 0, 0 };
            int e;
            if (r < valid)
                for (e = 0; e < 4; ++e)
                    w[e] = (uint32_t)((const uint16_t *)g)[2 * e] | ((uint32_t)((const uint16_t *)g)[2 * e + 1] << 16);
            acu_sts16B(sp, w);
        }
    }
}
/* dK/dV: the query tiles a block visits, numbered t = group head x nqt + tile (nqt = ceil(Lq / BQ)):
   the first after t that some row of sees a key of [kb0, kb0 + BK) (attn__key_ranges), or -1.
   Block-uniform. */
ACU_DEV int acu_bwd_next_qtile(const attn__problem &P, const attn__seq &S, int BQ, int kb0, int BK, int t) {
    const long long shift = (long long)S.Lk - S.Lq;
    const int nqt = (S.Lq + BQ - 1) / BQ;
    int tl[2][2];
    for (++t; t < P.groups * nqt; ++t) {
        const int i0 = t % nqt * BQ, qn = S.Lq - i0 < BQ ? S.Lq - i0 : BQ;
        if (acu_tiles(P, i0 + shift, i0 + qn - 1 + shift, S.Lk, BK, kb0, kb0 + BK, tl) > 0) return t;
    }
    return -1;
}
/* ldmatrix addresses of lane `lane` in a row-major 16-bit tile X (row stride LD elements):
   the A fragment of rows [r0, r0 + 16) x cols [c0, c0 + 16); the B fragments (two n-tiles of
   8) of X^T for X rows [r0, r0 + 16) x cols [c0, c0 + 16) (X rows are the mma's n); and with
   .trans, of X itself for rows [r0, r0 + 16) (the mma's k) x cols [c0, c0 + 16) (n). */
template <int LD> ACU_DEV const unsigned char *acu_frag_a(const unsigned char *X, int r0, int c0, int lane) {
    return X + ((size_t)(r0 + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + c0 + (lane >> 4) * 8) * 2;
}
template <int LD> ACU_DEV const unsigned char *acu_frag_bt(const unsigned char *X, int r0, int c0, int lane) {
    return X + ((size_t)(r0 + (lane >> 4) * 8 + (lane & 7)) * LD + c0 + ((lane >> 3) & 1) * 8) * 2;
}
template <int LD> ACU_DEV const unsigned char *acu_frag_b(const unsigned char *X, int r0, int c0, int lane) {
    return X + ((size_t)(r0 + ((lane >> 3) & 1) * 8 + (lane & 7)) * LD + c0 + (lane >> 4) * 8) * 2;
}

/* Both backward kernels' two products over a tile: x = A1 B1^T and y = A2 B2^T for the warp's 16
   rows of A1 / A2 and the NT * 8 rows of B1 / B2, over D columns (dK/dV: S^T = K Q^T and
   dP^T = V dO^T; dQ: S = Q K^T and dP = dO V^T). Element [2r + e] of n-tile j: row g + 8r of the
   warp, column 8j + 2t4 + e. */
template <int D, int LD, int NT, int BF16>
ACU_DEV void acu_bwd_two_products(float (&x)[NT][4], float (&y)[NT][4], const unsigned char *A1, const unsigned char *A2,
                                  const unsigned char *B1, const unsigned char *B2, int warp, int lane) {
    int j, kk;
    ACU_UNROLL for (j = 0; j < NT; ++j) x[j][0] = x[j][1] = x[j][2] = x[j][3] = y[j][0] = y[j][1] = y[j][2] = y[j][3] = 0.0f;
    ACU_UNROLL for (kk = 0; kk < D / 16; ++kk) {
        uint32_t a1[4], a2[4];
        acu_ldsm_x4(a1, acu_frag_a<LD>(A1, warp * 16, kk * 16, lane));
        acu_ldsm_x4(a2, acu_frag_a<LD>(A2, warp * 16, kk * 16, lane));
        ACU_UNROLL for (j = 0; j < NT; j += 2) {
            uint32_t b[4];
            acu_ldsm_x4(b, acu_frag_bt<LD>(B1, j * 8, kk * 16, lane));
            acu_mma(x[j], a1, b, BF16);
            acu_mma(x[j + 1], a1, b + 2, BF16);
            acu_ldsm_x4(b, acu_frag_bt<LD>(B2, j * 8, kk * 16, lane));
            acu_mma(y[j], a2, b, BF16);
            acu_mma(y[j + 1], a2, b + 2, BF16);
        }
    }
}

template <int D, int BF16>
__global__ void __launch_bounds__(ACU_THREADS) acu_bwd_mma_dkdv(const ACU_GRID_CONST acu_bwd_params prm) {
    typedef acu_bwd_cfg<D> C;
    enum { BK = ACU_BWD_BK, BQ = C::BQ, LD = C::LD, NT = BQ / 8, DT = D / 8 };
    const attn__problem &P = prm.P;
    ACU_SHARED_BASE(smem);
    unsigned char *Ks = smem, *Vs = Ks + (size_t)BK * LD * 2, *Qs0 = Vs + (size_t)BK * LD * 2, *Gs0 = Qs0 + (size_t)2 * BQ * LD * 2;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int hk = (int)blockIdx.y, kb0 = (int)blockIdx.x * BK;
    attn__seq S;
    int qrows, r, e, i, j, kk;
    acu_slice(P, (int)blockIdx.z, prm.tail, &S, &qrows);
    const int krows = prm.tail && (int)blockIdx.z == P.n_seqs ? P.k.seq - S.k0 : P.cu_k ? S.Lk : P.k.seq;
    if (kb0 >= krows) return;                          /* uniform across the block */
    const long long shift = (long long)S.Lk - S.Lq;
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    float dk[DT][4], dv[DT][4];
    ACU_UNROLL for (i = 0; i < DT; ++i) dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.0f;
    /* the query tiles that see the block's keys, over the group's heads in order; the Q / dO tiles
       double-buffered with cp.async (tile n in stage n & 1, tile n + 1 loading during n) */
    const int nqt = (S.Lq + BQ - 1) / BQ;
    int cur = kb0 < S.Lk ? acu_bwd_next_qtile(P, S, BQ, kb0, BK, -1) : -1;
    if (cur >= 0) {
        const int kn = S.Lk - kb0 < BK ? S.Lk - kb0 : BK;
        acu_bwd_load_tile<D, LD>(Ks, P.k, S.tb, (long long)S.k0 + kb0, hk, BK, kn, prm.aligned, tid);
        acu_bwd_load_tile<D, LD>(Vs, P.v, S.tb, (long long)S.k0 + kb0, hk, BK, kn, prm.aligned, tid);
        {
            const int i0 = cur % nqt * BQ;
            acu_bwd_load_tile<D, LD>(Qs0, P.q, S.tb, (long long)S.q0 + i0, hk * P.groups + cur / nqt, BQ,
                                 S.Lq - i0 < BQ ? S.Lq - i0 : BQ, prm.aligned, tid);
            acu_bwd_load_tile<D, LD>(Gs0, prm.dout, S.tb, (long long)S.q0 + i0, hk * P.groups + cur / nqt, BQ,
                                 S.Lq - i0 < BQ ? S.Lq - i0 : BQ, prm.aligned, tid);
            acu_cp_commit();
        }
        for (int n = 0; cur >= 0; ++n) {
            const int nxt = acu_bwd_next_qtile(P, S, BQ, kb0, BK, cur), st = n & 1;
            const int h = hk * P.groups + cur / nqt, i0 = cur % nqt * BQ, qn = S.Lq - i0 < BQ ? S.Lq - i0 : BQ;
            const float slope = P.alibi ? P.alibi[h] : 0.0f;
            const int full = qn == BQ && kb0 + BK <= S.Lk && attn__chunk_full(&P, i0 + shift, i0 + BQ - 1 + shift, kb0, kb0 + BK);
            const unsigned char *Qs = Qs0 + (size_t)st * BQ * LD * 2, *Gs = Gs0 + (size_t)st * BQ * LD * 2;
            if (nxt >= 0) {                 /* prefetch the next tile into the other stage */
                const int j0 = nxt % nqt * BQ, hn = hk * P.groups + nxt / nqt, jn = S.Lq - j0 < BQ ? S.Lq - j0 : BQ;
                acu_bwd_load_tile<D, LD>(Qs0 + (size_t)(st ^ 1) * BQ * LD * 2, P.q, S.tb, (long long)S.q0 + j0, hn, BQ, jn,
                                     prm.aligned, tid);
                acu_bwd_load_tile<D, LD>(Gs0 + (size_t)(st ^ 1) * BQ * LD * 2, prm.dout, S.tb, (long long)S.q0 + j0, hn, BQ, jn,
                                     prm.aligned, tid);
            }
            acu_cp_commit();
            acu_cp_wait<1>();               /* K, V and tile n have landed (this thread's copies) */
            __syncthreads();                /* ... and everyone's */
            {
                /* S^T = K Q^T, dP^T = V dO^T: the warp's 16 keys x BQ queries */
                float s[NT][4], dp[NT][4];
                acu_bwd_two_products<D, LD, NT, BF16>(s, dp, Ks, Vs, Qs, Gs, warp, lane);
                /* element [2r + e] of n-tile j: key row g + 8r of the warp, query column 8j + 2t4 + e */
                ACU_UNROLL for (j = 0; j < NT; ++j)
                    ACU_UNROLL for (e = 0; e < 2; ++e) {
                        const int qi = i0 + j * 8 + 2 * t4 + e;
                        const long long p = (long long)qi + shift;
                        int32_t cap = -1, lo = 0, hi = -1;
                        float lse = -INFINITY, drow = 0.0f;
                        const float *brow = (const float *)0;
                        if (qi < S.Lq) {
                            const size_t li = ((size_t)S.tb * P.q.heads + h) * P.q.seq + S.q0 + qi;
                            lse = prm.lse[li]; drow = prm.drow[li];
                            brow = acu_bias_row(P, S, h, qi);
                            attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, p, S.Lk, &cap, &lo, &hi);
                        }
                        ACU_UNROLL for (r = 0; r < 2; ++r) {
                            const long long key = (long long)kb0 + warp * 16 + g + 8 * r;
                            float pr = 0.0f, ds = 0.0f;
                            if (lse != -INFINITY && key < S.Lk && (full || acu_visible(P, cap, lo, hi, pre, p, key, S.Lk))) {
                                float dcap;
                                const float x = acu_bwd_logit(P, s[j][2 * r + e], brow, slope, p, key, &dcap);
                                pr = expf(x - lse);
                                ds = pr * (dp[j][2 * r + e] - drow) * dcap;
                            }
                            s[j][2 * r + e] = pr;
                            dp[j][2 * r + e] = ds;
                        }
                    }
                /* dV += P^T dO, dK += dS^T Q: the accumulators of n-tiles 2kk, 2kk + 1 are the A fragments */
                ACU_UNROLL for (kk = 0; kk < BQ / 16; ++kk) {
                    uint32_t ap[4], as[4];
                    ap[0] = acu_pack(s[2 * kk][0], s[2 * kk][1], BF16);
                    ap[1] = acu_pack(s[2 * kk][2], s[2 * kk][3], BF16);
                    ap[2] = acu_pack(s[2 * kk + 1][0], s[2 * kk + 1][1], BF16);
                    ap[3] = acu_pack(s[2 * kk + 1][2], s[2 * kk + 1][3], BF16);
                    as[0] = acu_pack(dp[2 * kk][0], dp[2 * kk][1], BF16);
                    as[1] = acu_pack(dp[2 * kk][2], dp[2 * kk][3], BF16);
                    as[2] = acu_pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1], BF16);
                    as[3] = acu_pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3], BF16);
                    ACU_UNROLL for (j = 0; j < DT; j += 2) {
                        uint32_t b[4];
                        acu_ldsm_x4_t(b, acu_frag_b<LD>(Gs, kk * 16, j * 8, lane));
                        acu_mma(dv[j], ap, b, BF16);
                        acu_mma(dv[j + 1], ap, b + 2, BF16);
                        acu_ldsm_x4_t(b, acu_frag_b<LD>(Qs, kk * 16, j * 8, lane));
                        acu_mma(dk[j], as, b, BF16);
                        acu_mma(dk[j + 1], as, b + 2, BF16);
                    }
                }
            }
            __syncthreads();                /* stage st is refilled by the next iteration's prefetch */
            cur = nxt;
        }
    }
    /* every owned key row is written (zeros past Lk) */
    ACU_UNROLL for (r = 0; r < 2; ++r) {
        const int key = kb0 + warp * 16 + g + 8 * r;
        if (key >= krows) continue;
        char *kr = (char *)acu_row(prm.dk, S.tb, (long long)S.k0 + key, hk), *vr = (char *)acu_row(prm.dv, S.tb, (long long)S.k0 + key, hk);
        ACU_UNROLL for (i = 0; i < DT; ++i)
            ACU_UNROLL for (e = 0; e < 2; ++e) {
                acu_st(kr, prm.dk.dtype, i * 8 + 2 * t4 + e, dk[i][2 * r + e] * P.scale);
                acu_st(vr, prm.dv.dtype, i * 8 + 2 * t4 + e, dv[i][2 * r + e]);
            }
    }
}

template <int D, int BF16>
__global__ void __launch_bounds__(ACU_THREADS, 1) acu_bwd_mma_dq(const ACU_GRID_CONST acu_bwd_params prm) {
    typedef acu_bwd_cfg<D> C;
    enum { BM = ACU_BWD_BK, BN = C::BN, LD = C::LD, NT = BN / 8, DT = D / 8 };
    const attn__problem &P = prm.P;
    ACU_SHARED_BASE(smem);
    unsigned char *Qs = smem, *Gs = Qs + (size_t)BM * LD * 2, *Ks0 = Gs + (size_t)BM * LD * 2, *Vs0 = Ks0 + (size_t)2 * BN * LD * 2;
    const int tid = (int)threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
    const int h = (int)blockIdx.y, hk = h / P.groups, m0 = (int)blockIdx.x * BM;
    attn__seq S;
    int rows, r, e, i, j, kk;
    acu_slice(P, (int)blockIdx.z, prm.tail, &S, &rows);
    if (m0 >= rows) return;                            /* uniform across the block */
    const long long shift = (long long)S.Lk - S.Lq;
    const int pre = attn__lane_pre(P.sink, P.global, S.Lk);
    const float slope = P.alibi ? P.alibi[h] : 0.0f;
    /* this thread's two rows: warp rows g and g + 8 */
    long long pos[2];
    float lse[2], drow[2];
    int32_t cap[2], lo[2], hi[2];
    const float *brow[2];
    float dq[DT][4];
    ACU_UNROLL for (r = 0; r < 2; ++r) {
        const int qi = m0 + warp * 16 + g + 8 * r;
        pos[r] = (long long)qi + shift;
        lse[r] = -INFINITY; drow[r] = 0.0f; brow[r] = (const float *)0; cap[r] = -1; lo[r] = 0; hi[r] = -1;
        if (qi < S.Lq) {
            const size_t li = ((size_t)S.tb * P.q.heads + h) * P.q.seq + S.q0 + qi;
            lse[r] = prm.lse[li]; drow[r] = prm.drow[li];
            brow[r] = acu_bias_row(P, S, h, qi);
            attn__lane_rule(P.causal, P.window_left, P.window_right, P.global, pos[r], S.Lk, &cap[r], &lo[r], &hi[r]);
        }
    }
    ACU_UNROLL for (i = 0; i < DT; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.0f;
    int tiles[2][2], nrun = 0, ntiles = 0;
    const int qn = S.Lq - m0 < BM ? S.Lq - m0 : BM;
    if (qn > 0) {
        nrun = acu_tiles(P, m0 + shift, m0 + qn - 1 + shift, S.Lk, BN, 0, 1LL << 40, tiles);
        for (i = 0; i < nrun; ++i) ntiles += tiles[i][1] - tiles[i][0];
    }
    if (ntiles > 0) {
        /* K / V tiles double-buffered with cp.async (tile n in stage n & 1, tile n + 1 loading during n) */
        const int len0 = tiles[0][1] - tiles[0][0], t00 = tiles[0][0], t10 = nrun > 1 ? tiles[1][0] : 0;
        acu_bwd_load_tile<D, LD>(Qs, P.q, S.tb, (long long)S.q0 + m0, h, BM, qn, prm.aligned, tid);
        acu_bwd_load_tile<D, LD>(Gs, prm.dout, S.tb, (long long)S.q0 + m0, h, BM, qn, prm.aligned, tid);
        {
            const int c0 = t00 * BN, kn = S.Lk - c0 < BN ? S.Lk - c0 : BN;
            acu_bwd_load_tile<D, LD>(Ks0, P.k, S.tb, (long long)S.k0 + c0, hk, BN, kn, prm.aligned, tid);
            acu_bwd_load_tile<D, LD>(Vs0, P.v, S.tb, (long long)S.k0 + c0, hk, BN, kn, prm.aligned, tid);
            acu_cp_commit();
        }
        for (int n = 0; n < ntiles; ++n) {
            const int st = n & 1, c0 = (n < len0 ? t00 + n : t10 + n - len0) * BN;
            const int full = qn == BM && c0 + BN <= S.Lk && attn__chunk_full(&P, m0 + shift, m0 + BM - 1 + shift, c0, c0 + BN);
            const unsigned char *Ks = Ks0 + (size_t)st * BN * LD * 2, *Vs = Vs0 + (size_t)st * BN * LD * 2;
            if (n + 1 < ntiles) {           /* prefetch the next tile into the other stage */
                const int c1 = (n + 1 < len0 ? t00 + n + 1 : t10 + n + 1 - len0) * BN, kn = S.Lk - c1 < BN ? S.Lk - c1 : BN;
                acu_bwd_load_tile<D, LD>(Ks0 + (size_t)(st ^ 1) * BN * LD * 2, P.k, S.tb, (long long)S.k0 + c1, hk, BN, kn,
                                     prm.aligned, tid);
                acu_bwd_load_tile<D, LD>(Vs0 + (size_t)(st ^ 1) * BN * LD * 2, P.v, S.tb, (long long)S.k0 + c1, hk, BN, kn,
                                     prm.aligned, tid);
            }
            acu_cp_commit();
            acu_cp_wait<1>();               /* Q, dO and tile n have landed (this thread's copies) */
            __syncthreads();                /* ... and everyone's */
            /* S = Q K^T, dP = dO V^T: the warp's 16 query rows x BN keys */
            float s[NT][4], dp[NT][4];
            acu_bwd_two_products<D, LD, NT, BF16>(s, dp, Qs, Gs, Ks, Vs, warp, lane);
            /* element [2r + e] of n-tile j: query row g + 8r of the warp, key c0 + 8j + 2t4 + e */
            ACU_UNROLL for (r = 0; r < 2; ++r)
                ACU_UNROLL for (j = 0; j < NT; ++j)
                    ACU_UNROLL for (e = 0; e < 2; ++e) {
                        const long long key = (long long)c0 + j * 8 + 2 * t4 + e;
                        float ds = 0.0f;
                        if (lse[r] != -INFINITY && key < S.Lk &&
                            (full || acu_visible(P, cap[r], lo[r], hi[r], pre, pos[r], key, S.Lk))) {
                            float dcap;
                            const float x = acu_bwd_logit(P, s[j][2 * r + e], brow[r], slope, pos[r], key, &dcap);
                            ds = expf(x - lse[r]) * (dp[j][2 * r + e] - drow[r]) * dcap;
                        }
                        dp[j][2 * r + e] = ds;
                    }
            /* dQ += dS K */
            ACU_UNROLL for (kk = 0; kk < BN / 16; ++kk) {
                uint32_t as[4];
                as[0] = acu_pack(dp[2 * kk][0], dp[2 * kk][1], BF16);
                as[1] = acu_pack(dp[2 * kk][2], dp[2 * kk][3], BF16);
                as[2] = acu_pack(dp[2 * kk + 1][0], dp[2 * kk + 1][1], BF16);
                as[3] = acu_pack(dp[2 * kk + 1][2], dp[2 * kk + 1][3], BF16);
                ACU_UNROLL for (j = 0; j < DT; j += 2) {
                    uint32_t b[4];
                    acu_ldsm_x4_t(b, acu_frag_b<LD>(Ks, kk * 16, j * 8, lane));
                    acu_mma(dq[j], as, b, BF16);
                    acu_mma(dq[j + 1], as, b + 2, BF16);
                }
            }
            __syncthreads();                /* stage st is refilled by the next iteration's prefetch */
        }
    }
    /* every owned row is written (zeros for rows past Lq and rows that see no key) */
    ACU_UNROLL for (r = 0; r < 2; ++r) {
        const int qi = m0 + warp * 16 + g + 8 * r;
        if (qi >= rows) continue;
        char *qr = (char *)acu_row(prm.dq, S.tb, (long long)S.q0 + qi, h);
        ACU_UNROLL for (i = 0; i < DT; ++i)
            ACU_UNROLL for (e = 0; e < 2; ++e) acu_st(qr, prm.dq.dtype, i * 8 + 2 * t4 + e, dq[i][2 * r + e] * P.scale);
    }
}

/* ---------------------------------------------------------------------------------------
   3. host side: validation (attn.h's), pointer checks, launch
   --------------------------------------------------------------------------------------- */
/* 1 when p is device (or managed) memory */
static int acu_is_device(const void *p) {
    cudaPointerAttributes a;
    if (!p) return 1;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* Host copies of desc's small device arrays, so attn.h's validation (which reads them) runs on
   the host. Sizes come from shapes the caller checked (check_qkv passed). */
typedef struct acu_host_arrays {
    int *seqlens_q, *seqlens_k, *cu_q, *cu_k;
    float *alibi;
    void *block;
} acu_host_arrays;
static void acu_arrays_free(acu_host_arrays *A) { free(A->block); memset(A, 0, sizeof *A); }
static attn_status acu_arrays_copy(const attn_desc *d, int batch, int heads, attn_desc *hd, acu_host_arrays *A,
                                   cudaStream_t stream) {
    const int nb = batch, nv = d->varlen_batch >= 1 && d->varlen_batch < (1 << 28) ? d->varlen_batch + 1 : 0;
    size_t n = 0;
    char *p;
    memset(A, 0, sizeof *A);
    *hd = *d;
    if (d->seqlens_q) n += (size_t)nb * sizeof(int);
    if (d->seqlens_k) n += (size_t)nb * sizeof(int);
    if (d->cu_seqlens_q) n += (size_t)nv * sizeof(int);
    if (d->cu_seqlens_k) n += (size_t)nv * sizeof(int);
    if (d->alibi_slopes) n += (size_t)heads * sizeof(float);
    if (!n) return ATTN_OK;
    if (!(A->block = malloc(n))) return ATTN_ERR_OUT_OF_MEMORY;
    p = (char *)A->block;
#define ACU_COPY(field, dst, count, type)                                                                        \
    if (d->field) {                                                                                                \
        dst = (type *)(void *)p;                                                                                   \
        if ((count) && cudaMemcpyAsync(dst, d->field, (size_t)(count) * sizeof(type), cudaMemcpyDeviceToHost, stream) != cudaSuccess) \
            { (void)cudaGetLastError(); acu_arrays_free(A); return ATTN_ERR_CUDA_RUNTIME; }                        \
        p += (size_t)(count) * sizeof(type);                                                                       \
        hd->field = dst;                                                                                           \
    }
    ACU_COPY(seqlens_q, A->seqlens_q, nb, int)
    ACU_COPY(seqlens_k, A->seqlens_k, nb, int)
    ACU_COPY(cu_seqlens_q, A->cu_q, nv, int)
    ACU_COPY(cu_seqlens_k, A->cu_k, nv, int)
    ACU_COPY(alibi_slopes, A->alibi, heads, float)
#undef ACU_COPY
    if (cudaStreamSynchronize(stream) != cudaSuccess) { (void)cudaGetLastError(); acu_arrays_free(A); return ATTN_ERR_CUDA_RUNTIME; }
    return ATTN_OK;
}

static int acu_head_dim_ok(int d) { return d == 32 || d == 64 || d == 96 || d == 128 || d == 256; }
static int acu_rows_aligned(const attn__view *v) {
    const ptrdiff_t e = (ptrdiff_t)v->esize;
    return ((uintptr_t)v->data & 15) == 0 && (v->sb * e) % 16 == 0 && (v->ss * e) % 16 == 0 && (v->sh * e) % 16 == 0;
}
/* f32 q/k/v run on TF32 tensor cores when desc->allow_tf32 permits it, the tensor-core kernel
   has the shape (head dim 32, 64, 96, 128 or 256, v.dim == q.dim) and the device gives a block
   its shared memory (D = 256 takes 130 KiB: more than sm_86/sm_89's 99 KiB); else on the
   CUDA-core kernel. */
static int acu_use_tf32(const attn_desc *d, attn_dtype qt, int dim, int vdim) {
    int dev = 0, optin = 0, smem;
    if (!d->allow_tf32 || qt != ATTN_F32 || !acu_head_dim_ok(dim) || vdim != dim) return 0;
    smem = dim == 32 ? (int)acu_cfg<32, ACU_TF32>::SMEM : dim == 64 ? (int)acu_cfg<64, ACU_TF32>::SMEM
         : dim == 96 ? (int)acu_cfg<96, ACU_TF32>::SMEM : dim == 128 ? (int)acu_cfg<128, ACU_TF32>::SMEM
         : (int)acu_cfg<256, ACU_TF32>::SMEM;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return smem <= optin;
}

/* The checks of attn_cuda_forward, in attn_forward's order, then the CUDA ones. On success P
   holds the resolved problem with the device pointers. */
static attn_status acu_check_forward(const attn_desc *desc, const attn_tensor *q, const attn_tensor *k,
                                     const attn_tensor *v, const attn_tensor *out, float *lse, attn__problem *P,
                                     cudaStream_t stream) {
    attn__view qv, kv, vv, ov;
    attn__call c;
    attn_desc hd;
    acu_host_arrays A;
    attn_status s;
    if (!desc) return ATTN_ERR_NULL_DESC;
    if ((int)desc->kind != (int)ATTN_SOFTMAX) return attn__mech_of(desc->kind) ? ATTN_ERR_CUDA_UNSUPPORTED : ATTN_ERR_KIND;
    if ((s = attn__check_qkv(q, k, v, out, &qv, &kv, &vv, &ov)) != ATTN_OK) return s;
    if (!acu_is_device(q->data) || !acu_is_device(k->data) || !acu_is_device(v->data) || (out && !acu_is_device(out->data)) ||
        !acu_is_device(lse) || !acu_is_device(desc->bias.data) || !acu_is_device(desc->seqlens_q) ||
        !acu_is_device(desc->seqlens_k) || !acu_is_device(desc->cu_seqlens_q) || !acu_is_device(desc->cu_seqlens_k) ||
        !acu_is_device(desc->alibi_slopes))
        return ATTN_ERR_CUDA_HOST_POINTER;
    if (out) {
        attn__call_init(&c, desc, q, k, v);
        c.out = *out; c.lse = lse;
        if ((s = attn__check_overlap(ATTN__FORWARD, &c)) != ATTN_OK) return s;
    }
    if ((s = acu_arrays_copy(desc, q->batch, q->heads, &hd, &A, stream)) != ATTN_OK) return s;
    memset(P, 0, sizeof *P);
    s = attn__check_forward(&hd, q, k, v, out, P);
    acu_arrays_free(&A);
    if (s != ATTN_OK) return s;
    /* P's array pointers back to the device ones */
    P->seqlens_q = desc->seqlens_q; P->seqlens_k = desc->seqlens_k;
    P->cu_q = P->cu_q ? desc->cu_seqlens_q : NULL; P->cu_k = P->cu_k ? desc->cu_seqlens_k : NULL;
    P->alibi = desc->alibi_slopes;
    P->lse = lse;
    if (desc->dropout_p != 0.0f || desc->rope) return ATTN_ERR_CUDA_UNSUPPORTED;
    if (q->dtype != k->dtype) return ATTN_ERR_CUDA_DTYPE_MIX;
    if (q->dtype == ATTN_F32 ? (q->dim > 256 || v->dim > 256) : (!acu_head_dim_ok(q->dim) || v->dim != q->dim))
        return ATTN_ERR_CUDA_HEAD_DIM;
    return ATTN_OK;
}

template <int D, int T> static attn_status acu_launch_mma(const acu_fwd_params &prm, dim3 grid, cudaStream_t stream) {
    void (*kern)(const acu_fwd_params) = acu_fwd_mma<D, T>;
    const int smem = acu_cfg<D, T>::SMEM;
    if (cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess) {
        (void)cudaGetLastError();
        return ATTN_ERR_CUDA_RUNTIME;
    }
    ACU_LAUNCH(kern, grid, dim3(ACU_THREADS), (size_t)smem, stream, prm);
    return ATTN_OK;
}
template <int D> static attn_status acu_launch_mma_d(int t, const acu_fwd_params &prm, dim3 grid, cudaStream_t stream) {
    return t == ACU_TF32 ? acu_launch_mma<D, ACU_TF32>(prm, grid, stream)
         : t == ACU_BF16 ? acu_launch_mma<D, ACU_BF16>(prm, grid, stream) : acu_launch_mma<D, ACU_F16>(prm, grid, stream);
}

/* Launches the forward kernel for prm (grid: row tiles x heads x slices*splits). */
static attn_status acu_run(acu_fwd_params &prm, int maxrows, int slices, cudaStream_t stream) {
    const attn__problem &P = prm.P;
    const long long z = (long long)slices * prm.n_splits;
    attn_status s = ATTN_OK;
    if (z > 65535 || P.q.heads > 65535) return ATTN_ERR_OVERFLOW;
    (void)cudaGetLastError();
    if (P.q.dtype == ATTN_F32 && !prm.tf32) {
        dim3 grid((unsigned)((maxrows + ACU_F32_ROWS - 1) / ACU_F32_ROWS), (unsigned)P.q.heads, (unsigned)z);
        ACU_LAUNCH(acu_fwd_f32, grid, dim3(ACU_THREADS), 0, stream, prm);
    } else {
        dim3 grid((unsigned)(((long long)maxrows * P.groups + ACU_BM - 1) / ACU_BM), (unsigned)P.k.heads, (unsigned)z);
        const int t = prm.tf32 ? ACU_TF32 : P.q.dtype == ATTN_BF16 ? ACU_BF16 : ACU_F16;
        switch (P.q.dim) {
        case 32: s = acu_launch_mma_d<32>(t, prm, grid, stream); break;
        case 64: s = acu_launch_mma_d<64>(t, prm, grid, stream); break;
        case 96: s = acu_launch_mma_d<96>(t, prm, grid, stream); break;
        case 128: s = acu_launch_mma_d<128>(t, prm, grid, stream); break;
        default: s = acu_launch_mma_d<256>(t, prm, grid, stream); break;
        }
        if (s != ATTN_OK) return s;
    }
    if (cudaGetLastError() != cudaSuccess) return ATTN_ERR_CUDA_RUNTIME;
    return ATTN_OK;
}

attn_status attn_cuda_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                     size_t *bytes) {
    attn__problem P;
    attn_status s;
    if ((s = acu_check_forward(desc, &q, &k, &v, NULL, NULL, &P, (cudaStream_t)0)) != ATTN_OK) return s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    *bytes = 0;
    return ATTN_OK;
}

attn_status attn_cuda_forward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out,
                              float *lse, cudaStream_t stream) {
    acu_fwd_params prm;
    attn_status s;
    int maxrows;
    memset(&prm, 0, sizeof prm);
    if ((s = acu_check_forward(desc, &q, &k, &v, &out, lse, &prm.P, stream)) != ATTN_OK) return s;
    prm.aligned = acu_rows_aligned(&prm.P.q) && acu_rows_aligned(&prm.P.k) && acu_rows_aligned(&prm.P.v);
    prm.tf32 = acu_use_tf32(desc, q.dtype, q.dim, v.dim);
    prm.n_splits = 1;
    maxrows = q.seq;
    if (prm.P.cu_q) {               /* varlen: the longest segment, plus the rows after the last one */
        std::vector<int> cu((size_t)desc->varlen_batch + 1);
        int i;
        if (cudaMemcpy(cu.data(), desc->cu_seqlens_q, cu.size() * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
            { (void)cudaGetLastError(); return ATTN_ERR_CUDA_RUNTIME; }
        maxrows = q.seq - cu[(size_t)desc->varlen_batch];
        prm.tail = maxrows > 0;
        for (i = 0; i < desc->varlen_batch; ++i) maxrows = ATTN__MAX(maxrows, cu[(size_t)i + 1] - cu[(size_t)i]);
        if (maxrows < 1) maxrows = 1;
    }
    return acu_run(prm, maxrows, prm.P.n_seqs + prm.tail, stream);
}

/* ---- decoding over a KV cache: split-KV (flash-decoding) + the merge kernel -------------- */
static int acu_sm_count(void) {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 1;
    }
    return n > 0 ? n : 1;
}

/* The checks of attn_cuda_decode (attn_decode's, on host copies of lens, the block table and
   desc's arrays), the CUDA ones, and the split plan. */
static attn_status acu_check_decode(const attn_desc *desc, const attn_tensor *q, const attn_kv_cache *cache,
                                    const attn_tensor *out, float *lse, acu_fwd_params *prm, size_t *ws_bytes, int *maxrows,
                                    cudaStream_t stream) {
    attn_kv_cache hc;
    attn_desc hd;
    acu_host_arrays A;
    std::vector<int> lens, table;
    attn__call c;
    attn_tensor qc = *q, oc;
    attn_status s;
    int b, mx = 0;
    if (!desc) return ATTN_ERR_NULL_DESC;
    if ((int)desc->kind != (int)ATTN_SOFTMAX) return attn__mech_of(desc->kind) ? ATTN_ERR_CUDA_UNSUPPORTED : ATTN_ERR_KIND;
    if (!cache) return ATTN_ERR_KV_NULL;
    if (!acu_is_device(q->data) || (out && !acu_is_device(out->data)) || !acu_is_device(lse) ||
        !acu_is_device(cache->k.data) || !acu_is_device(cache->v.data) || !acu_is_device(cache->lens) ||
        !acu_is_device(cache->block_table) || !acu_is_device(desc->bias.data) || !acu_is_device(desc->seqlens_q) ||
        !acu_is_device(desc->alibi_slopes) || !acu_is_device(desc->workspace))
        return ATTN_ERR_CUDA_HOST_POINTER;
    hc = *cache;
    if (cache->lens && cache->batch >= 1 && cache->batch < (1 << 28)) {
        lens.resize((size_t)cache->batch);
        if (cudaMemcpy(lens.data(), cache->lens, lens.size() * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
            { (void)cudaGetLastError(); return ATTN_ERR_CUDA_RUNTIME; }
        hc.lens = lens.data();
    }
    if (cache->page_size > 0 && cache->block_table && cache->batch >= 1 && cache->max_pages >= 1 &&
        (long long)cache->batch * cache->max_pages < (1LL << 28)) {
        table.resize((size_t)cache->batch * (size_t)cache->max_pages);
        if (cudaMemcpy(table.data(), cache->block_table, table.size() * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess)
            { (void)cudaGetLastError(); return ATTN_ERR_CUDA_RUNTIME; }
        hc.block_table = table.data();
    }
    if (out) {
        memset(&c, 0, sizeof c);
        c.d = desc; c.q = *q; c.out = *out; c.lse = lse; c.cache = &hc;
        if ((s = attn__check_overlap(ATTN__DECODE, &c)) != ATTN_OK) return s;
        oc = *out;
    }
    if ((s = acu_arrays_copy(desc, q->batch, q->heads, &hd, &A, stream)) != ATTN_OK) return s;
    memset(&prm->P, 0, sizeof prm->P);
    s = attn__decode_setup(&hd, &qc, &hc, out ? &oc : NULL, &prm->P);
    acu_arrays_free(&A);
    if (s != ATTN_OK) return s;
    attn__problem &P = prm->P;
    P.seqlens_q = desc->seqlens_q; P.seqlens_k = cache->lens; P.alibi = desc->alibi_slopes;
    P.block_table = cache->page_size ? cache->block_table : NULL;
    P.lse = lse;
    if (desc->dropout_p != 0.0f || desc->rope) return ATTN_ERR_CUDA_UNSUPPORTED;
    if (q->dtype != cache->k.dtype) return ATTN_ERR_CUDA_DTYPE_MIX;
    if (q->dtype == ATTN_F32 ? (q->dim > 256 || cache->v.dim > 256) : (!acu_head_dim_ok(q->dim) || cache->v.dim != q->dim))
        return ATTN_ERR_CUDA_HEAD_DIM;
    prm->tf32 = acu_use_tf32(desc, q->dtype, q->dim, cache->v.dim);
    /* the split plan: enough blocks for two waves of the device's SMs, >= 64 keys a split */
    for (b = 0; b < cache->batch; ++b) mx = ATTN__MAX(mx, lens[(size_t)b]);
    {
        const int rows = q->seq, f32 = q->dtype == ATTN_F32 && !prm->tf32, g = q->heads / cache->k.heads;
        const long long blocks = f32 ? (long long)cache->batch * q->heads * ((rows + ACU_F32_ROWS - 1) / ACU_F32_ROWS)
                                     : (long long)cache->batch * cache->k.heads * (((long long)rows * g + ACU_BM - 1) / ACU_BM);
        long long want = (2LL * acu_sm_count() + blocks - 1) / blocks, keys;
        if (want > (mx + 63) / 64) want = (mx + 63) / 64;
        if (want > 64) want = 64;
        if (want < 1) want = 1;
        keys = ((mx + want - 1) / want + 63) / 64 * 64;
        prm->n_splits = keys > 0 ? (int)((mx + keys - 1) / keys) : 1;
        if (prm->n_splits < 1) prm->n_splits = 1;
        prm->split_keys = (int)keys;
        *maxrows = rows;
    }
    *ws_bytes = 0;
    if (prm->n_splits > 1) {
        const size_t rowsn = (size_t)q->batch * q->seq * q->heads;
        *ws_bytes = (size_t)prm->n_splits * rowsn * ((size_t)cache->v.dim + 1) * sizeof(float);
    }
    prm->aligned = acu_rows_aligned(&P.q) && acu_rows_aligned(&P.k) && acu_rows_aligned(&P.v);
    return ATTN_OK;
}

static attn_status acu_launch_merge(const acu_merge_params &M, cudaStream_t stream) {
    const long long rows = (long long)M.B * M.S * M.H;
    if ((rows + 3) / 4 > 0x7fffffffLL) return ATTN_ERR_OVERFLOW;
    (void)cudaGetLastError();
    ACU_LAUNCH(acu_merge, dim3((unsigned)((rows + 3) / 4)), dim3(ACU_THREADS), 0, stream, M);
    if (cudaGetLastError() != cudaSuccess) return ATTN_ERR_CUDA_RUNTIME;
    return ATTN_OK;
}

attn_status attn_cuda_decode_workspace_size(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                            size_t *bytes) {
    acu_fwd_params prm;
    int maxrows;
    size_t n;
    attn_status s;
    memset(&prm, 0, sizeof prm);
    if ((s = acu_check_decode(desc, &q, cache, NULL, NULL, &prm, &n, &maxrows, (cudaStream_t)0)) != ATTN_OK) return s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    *bytes = n;
    return ATTN_OK;
}

attn_status attn_cuda_decode(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache, attn_tensor out,
                             float *lse, cudaStream_t stream) {
    acu_fwd_params prm;
    acu_merge_params M;
    int maxrows;
    size_t n;
    void *ws = NULL;
    attn_status s;
    memset(&prm, 0, sizeof prm);
    if ((s = acu_check_decode(desc, &q, cache, &out, lse, &prm, &n, &maxrows, stream)) != ATTN_OK) return s;
    if (n && desc->workspace) {
        if (desc->workspace_size < n) return ATTN_ERR_WORKSPACE;
        ws = desc->workspace;
    } else if (n && cudaMalloc(&ws, n) != cudaSuccess) {
        (void)cudaGetLastError();
        return ATTN_ERR_CUDA_RUNTIME;
    }
    if (prm.n_splits > 1) {
        prm.part_out = (float *)ws;
        prm.part_lse = prm.part_out + (size_t)prm.n_splits * q.batch * q.seq * q.heads * cache->v.dim;
    }
    s = acu_run(prm, maxrows, prm.P.n_seqs, stream);
    if (s == ATTN_OK && prm.n_splits > 1) {
        memset(&M, 0, sizeof M);
        M.n = prm.n_splits; M.B = q.batch; M.S = q.seq; M.H = q.heads; M.Dv = cache->v.dim;
        M.dense_out = prm.part_out; M.dense_lse = prm.part_lse;
        M.out = prm.P.out; M.lse = lse;
        s = acu_launch_merge(M, stream);
    }
    if (ws && ws != desc->workspace) {
        if (cudaStreamSynchronize(stream) != cudaSuccess) s = ATTN_ERR_CUDA_RUNTIME;
        cudaFree(ws);
    }
    return s;
}

/* ---- attn_cuda_merge --------------------------------------------------------------------- */
attn_status attn_cuda_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse, attn_tensor out,
                            float *lse, cudaStream_t stream) {
    acu_merge_params M;
    attn__view o;
    std::vector<attn__view> pv;
    void *dev = NULL;
    attn_status st;
    int p;
    if ((st = attn__merge_check(n_parts, parts, part_lse, &out, &o)) != ATTN_OK) return st;   /* attn_merge's checks */
    pv.resize((size_t)n_parts);
    for (p = 0; p < n_parts; ++p) if ((st = attn__make_view(&parts[p], &pv[(size_t)p])) != ATTN_OK) return st;
    /* the CUDA ones */
    if (!acu_is_device(out.data) || !acu_is_device(lse)) return ATTN_ERR_CUDA_HOST_POINTER;
    for (p = 0; p < n_parts; ++p)
        if (!acu_is_device(parts[p].data) || !acu_is_device(part_lse[p])) return ATTN_ERR_CUDA_HOST_POINTER;
    {   /* the part views and lse pointers, copied to the device */
        const size_t vb = (size_t)n_parts * sizeof(attn__view), lb = (size_t)n_parts * sizeof(float *);
        if (cudaMalloc(&dev, vb + lb) != cudaSuccess) { (void)cudaGetLastError(); return ATTN_ERR_CUDA_RUNTIME; }
        if (cudaMemcpy(dev, pv.data(), vb, cudaMemcpyHostToDevice) != cudaSuccess ||
            cudaMemcpy((char *)dev + vb, part_lse, lb, cudaMemcpyHostToDevice) != cudaSuccess) {
            (void)cudaGetLastError(); cudaFree(dev); return ATTN_ERR_CUDA_RUNTIME;
        }
        memset(&M, 0, sizeof M);
        M.n = n_parts; M.B = out.batch; M.S = out.seq; M.H = out.heads; M.Dv = out.dim;
        M.views = (const attn__view *)dev; M.lses = (const float *const *)(const void *)((char *)dev + vb);
        M.out = o; M.lse = lse;
    }
    st = acu_launch_merge(M, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess && st == ATTN_OK) st = ATTN_ERR_CUDA_RUNTIME;
    cudaFree(dev);
    return st;
}

/* ---- backward ------------------------------------------------------------------------------ */
/* attn_backward's checks in its order (on host copies of desc's arrays), then the CUDA ones. */
static attn_status acu_check_backward(const attn_desc *desc, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                                      const attn_tensor *out, const attn_tensor *dout, const float *lse, const attn_tensor *dq,
                                      const attn_tensor *dk, const attn_tensor *dv, acu_bwd_params *prm, size_t *bytes,
                                      cudaStream_t stream) {
    attn__call c;
    attn_desc hd;
    acu_host_arrays A;
    attn_status s;
    const int query = dq == NULL;          /* a workspace query: q, k, v and desc only */
    if (!desc) return ATTN_ERR_NULL_DESC;
    if ((int)desc->kind != (int)ATTN_SOFTMAX) return attn__mech_of(desc->kind) ? ATTN_ERR_CUDA_UNSUPPORTED : ATTN_ERR_KIND;
    if (!acu_is_device(q->data) || !acu_is_device(k->data) || !acu_is_device(v->data) || !acu_is_device(desc->bias.data) ||
        !acu_is_device(desc->seqlens_q) || !acu_is_device(desc->seqlens_k) || !acu_is_device(desc->cu_seqlens_q) ||
        !acu_is_device(desc->cu_seqlens_k) || !acu_is_device(desc->alibi_slopes) || !acu_is_device(desc->workspace) ||
        (!query && (!acu_is_device(out->data) || !acu_is_device(dout->data) || !acu_is_device(lse) ||
                    !acu_is_device(dq->data) || !acu_is_device(dk->data) || !acu_is_device(dv->data))))
        return ATTN_ERR_CUDA_HOST_POINTER;
    if (!query) {
        attn__call_init(&c, desc, q, k, v);
        c.out = *out; c.dout = *dout; c.lse_in = lse; c.dq = *dq; c.dk = *dk; c.dv = *dv;
        if ((s = attn__check_overlap(ATTN__BACKWARD, &c)) != ATTN_OK) return s;
    }
    if ((s = acu_arrays_copy(desc, q->batch, q->heads, &hd, &A, stream)) != ATTN_OK) return s;
    memset(&prm->P, 0, sizeof prm->P);
    s = attn__check_forward(&hd, q, k, v, query ? NULL : out, &prm->P);
    acu_arrays_free(&A);
    if (s != ATTN_OK) return s;
    attn__problem &P = prm->P;
    P.seqlens_q = desc->seqlens_q; P.seqlens_k = desc->seqlens_k;
    P.cu_q = P.cu_q ? desc->cu_seqlens_q : NULL; P.cu_k = P.cu_k ? desc->cu_seqlens_k : NULL;
    P.alibi = desc->alibi_slopes;
    if (!query) {
        if (!dout->data) return ATTN_ERR_BWD_NULL_DOUT;
        if (!lse) return ATTN_ERR_BWD_NULL_LSE;
        if (!dq->data) return ATTN_ERR_BWD_NULL_DQ;
        if (!dk->data) return ATTN_ERR_BWD_NULL_DK;
        if (!dv->data) return ATTN_ERR_BWD_NULL_DV;
        if (!attn__dtype_ok(dout->dtype) || !attn__dtype_ok(dq->dtype) || !attn__dtype_ok(dk->dtype) || !attn__dtype_ok(dv->dtype))
            return ATTN_ERR_DTYPE;
        if (dout->batch != out->batch || dout->seq != out->seq || dout->heads != out->heads || dout->dim != out->dim)
            return ATTN_ERR_BWD_DOUT_SHAPE;
        if (dq->batch != q->batch || dq->seq != q->seq || dq->heads != q->heads || dq->dim != q->dim) return ATTN_ERR_BWD_DQ_SHAPE;
        if (dk->batch != k->batch || dk->seq != k->seq || dk->heads != k->heads || dk->dim != k->dim) return ATTN_ERR_BWD_DK_SHAPE;
        if (dv->batch != v->batch || dv->seq != v->seq || dv->heads != v->heads || dv->dim != v->dim) return ATTN_ERR_BWD_DV_SHAPE;
        if (attn__tensor_bcast(dq)) return ATTN_ERR_BWD_DQ_BROADCAST;
        if (attn__tensor_bcast(dk)) return ATTN_ERR_BWD_DK_BROADCAST;
        if (attn__tensor_bcast(dv)) return ATTN_ERR_BWD_DV_BROADCAST;
        if (desc->dbias) {
            if (!P.bias) return ATTN_ERR_BWD_DBIAS_NO_BIAS;
            if ((P.bias_batch > 1 && P.bias_sb == 0) || (P.bias_heads > 1 && P.bias_sh == 0) || (P.bias_rows > 1 && P.bias_sq == 0))
                return ATTN_ERR_BWD_DBIAS_BROADCAST;
        }
        if ((s = attn__make_view(dout, &prm->dout)) != ATTN_OK || (s = attn__make_view(dq, &prm->dq)) != ATTN_OK ||
            (s = attn__make_view(dk, &prm->dk)) != ATTN_OK || (s = attn__make_view(dv, &prm->dv)) != ATTN_OK) return s;
    }
    if (desc->dropout_p != 0.0f || desc->rope || desc->dbias) return ATTN_ERR_CUDA_UNSUPPORTED;
    if (q->dim > 256 || v->dim > 256) return ATTN_ERR_CUDA_HEAD_DIM;
    prm->lse = lse;
    *bytes = (size_t)q->batch * q->heads * q->seq * sizeof(float);
    return ATTN_OK;
}

attn_status attn_cuda_backward_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                              size_t *bytes) {
    acu_bwd_params prm;
    size_t n;
    attn_status s;
    memset(&prm, 0, sizeof prm);
    if ((s = acu_check_backward(desc, &q, &k, &v, NULL, NULL, NULL, NULL, NULL, NULL, &prm, &n, (cudaStream_t)0)) != ATTN_OK)
        return s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    *bytes = n;
    return ATTN_OK;
}

/* The tensor-core backward (2d) for head dim D: sets the kernels' dynamic shared memory, launches dK/dV then dQ. */
template <int D, int BF16>
static attn_status acu_launch_bwd_mma(const acu_bwd_params &prm, dim3 gkv, dim3 gq, cudaStream_t stream) {
    void (*kkv)(const acu_bwd_params) = acu_bwd_mma_dkdv<D, BF16>;
    void (*kq)(const acu_bwd_params) = acu_bwd_mma_dq<D, BF16>;
    const int skv = acu_bwd_cfg<D>::SMEM_KV, sq = acu_bwd_cfg<D>::SMEM_Q;
    if (cudaFuncSetAttribute(kkv, cudaFuncAttributeMaxDynamicSharedMemorySize, skv) != cudaSuccess ||
        cudaFuncSetAttribute(kq, cudaFuncAttributeMaxDynamicSharedMemorySize, sq) != cudaSuccess) {
        (void)cudaGetLastError();
        return ATTN_ERR_CUDA_RUNTIME;
    }
    ACU_LAUNCH(kkv, gkv, dim3(ACU_THREADS), (size_t)skv, stream, prm);
    ACU_LAUNCH(kq, gq, dim3(ACU_THREADS), (size_t)sq, stream, prm);
    return ATTN_OK;
}
/* Whether attn_cuda_backward takes the tensor-core path (2d): q, k, v, dout of one 16-bit dtype,
   head dim 32/64/96/128, v.dim == q.dim. Otherwise the CUDA-core kernels of 2c. */
static int acu_bwd_tensor_cores(const attn_tensor &q, const attn_tensor &k, const attn_tensor &v, const attn_tensor &dout) {
    const int D = q.dim;
    return q.dtype != ATTN_F32 && k.dtype == q.dtype && v.dtype == q.dtype && dout.dtype == q.dtype && v.dim == D &&
           (D == 32 || D == 64 || D == 96 || D == 128);
}

attn_status attn_cuda_backward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out,
                               attn_tensor dout, const float *lse, attn_tensor dq, attn_tensor dk, attn_tensor dv,
                               cudaStream_t stream) {
    acu_bwd_params prm;
    size_t n;
    void *ws = NULL;
    attn_status s;
    int qrows = q.seq, krows = k.seq, slices;
    memset(&prm, 0, sizeof prm);
    if ((s = acu_check_backward(desc, &q, &k, &v, &out, &dout, lse, &dq, &dk, &dv, &prm, &n, stream)) != ATTN_OK) return s;
    if (desc->workspace) {
        if (desc->workspace_size < n) return ATTN_ERR_WORKSPACE;
        ws = desc->workspace;
    } else if (cudaMalloc(&ws, n) != cudaSuccess) {
        (void)cudaGetLastError();
        return ATTN_ERR_CUDA_RUNTIME;
    }
    prm.drow = (float *)ws;
    if (prm.P.cu_q) {               /* varlen: the longest segments, plus the rows after the last ones */
        std::vector<int> cq((size_t)desc->varlen_batch + 1), ck((size_t)desc->varlen_batch + 1);
        int i;
        if (cudaMemcpy(cq.data(), desc->cu_seqlens_q, cq.size() * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(ck.data(), desc->cu_seqlens_k, ck.size() * sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) {
            (void)cudaGetLastError();
            if (ws != desc->workspace) cudaFree(ws);
            return ATTN_ERR_CUDA_RUNTIME;
        }
        qrows = q.seq - cq[(size_t)desc->varlen_batch]; krows = k.seq - ck[(size_t)desc->varlen_batch];
        prm.tail = qrows > 0 || krows > 0;
        for (i = 0; i < desc->varlen_batch; ++i) {
            qrows = ATTN__MAX(qrows, cq[(size_t)i + 1] - cq[(size_t)i]);
            krows = ATTN__MAX(krows, ck[(size_t)i + 1] - ck[(size_t)i]);
        }
        qrows = ATTN__MAX(qrows, 1); krows = ATTN__MAX(krows, 1);
    }
    slices = prm.P.n_seqs + prm.tail;
    s = ATTN_OK;
    if (slices > 65535 || q.heads > 65535) s = ATTN_ERR_OVERFLOW;
    else {
        const long long rows = (long long)q.batch * q.seq * q.heads;
        (void)cudaGetLastError();
        ACU_LAUNCH(acu_bwd_drow, dim3((unsigned)((rows + 3) / 4)), dim3(ACU_THREADS), 0, stream, prm);
        if (acu_bwd_tensor_cores(q, k, v, dout)) {
            const dim3 gkv((unsigned)((krows + ACU_BWD_BK - 1) / ACU_BWD_BK), (unsigned)k.heads, (unsigned)slices),
                gq((unsigned)((qrows + ACU_BWD_BK - 1) / ACU_BWD_BK), (unsigned)q.heads, (unsigned)slices);
            const int bf = q.dtype == ATTN_BF16;
            prm.aligned = acu_rows_aligned(&prm.P.q) && acu_rows_aligned(&prm.P.k) && acu_rows_aligned(&prm.P.v) &&
                          acu_rows_aligned(&prm.dout);
            switch (q.dim) {
            case 32: s = bf ? acu_launch_bwd_mma<32, 1>(prm, gkv, gq, stream) : acu_launch_bwd_mma<32, 0>(prm, gkv, gq, stream); break;
            case 64: s = bf ? acu_launch_bwd_mma<64, 1>(prm, gkv, gq, stream) : acu_launch_bwd_mma<64, 0>(prm, gkv, gq, stream); break;
            case 96: s = bf ? acu_launch_bwd_mma<96, 1>(prm, gkv, gq, stream) : acu_launch_bwd_mma<96, 0>(prm, gkv, gq, stream); break;
            default: s = bf ? acu_launch_bwd_mma<128, 1>(prm, gkv, gq, stream) : acu_launch_bwd_mma<128, 0>(prm, gkv, gq, stream); break;
            }
        } else {
            ACU_LAUNCH(acu_bwd_dkdv, dim3((unsigned)((krows + 3) / 4), (unsigned)k.heads, (unsigned)slices), dim3(ACU_THREADS), 0,
                       stream, prm);
            ACU_LAUNCH(acu_bwd_dq, dim3((unsigned)((qrows + 3) / 4), (unsigned)q.heads, (unsigned)slices), dim3(ACU_THREADS), 0,
                       stream, prm);
        }
        if (cudaGetLastError() != cudaSuccess && s == ATTN_OK) s = ATTN_ERR_CUDA_RUNTIME;
    }
    if (ws != desc->workspace) {
        if (cudaStreamSynchronize(stream) != cudaSuccess) s = ATTN_ERR_CUDA_RUNTIME;
        cudaFree(ws);
    }
    return s;
}

#endif /* ATTN_CUDA__IMPLEMENTATION_DONE */
#endif /* ATTN_CUDA_IMPLEMENTATION */
#endif /* ATTN_CUDA_CUH_INCLUDED */
