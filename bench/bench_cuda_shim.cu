/* bench/bench_cuda_shim.cu - attn_cuda's forward, backward and decode behind a few extern "C"
   functions of plain integers and device pointers, built as build/libattn_cuda_shim.so, so that
   bench/bench_cuda_torch.py can time attn_cuda beside PyTorch's SDPA in ONE process, on the same
   torch-allocated inputs, with the same CUDA events and the same stream. Every tensor is dense
   [B, H, S, D] (torch's SDPA layout); the paged cache is [n_pages, page, Hkv, D] (attn.h's).
   Each function returns attn_status (0 = ATTN_OK); shim_status_str names it.
   Built with -DATTN_CUDA_EMULATE (build/libattn_cuda_shim_emu.so) the same kernels run under the
   CPU emulator of tests/cuda/emu.h, for the script's dry run (BENCH_DRY=1) without a GPU. */
#ifdef ATTN_CUDA_EMULATE
#include "emu.h"
#endif
#define ATTN_CUDA_IMPLEMENTATION
#include "attn_cuda.cuh"

#ifdef ATTN_CUDA_EMULATE
/* the dry run's torch CPU tensors become "device" memory for the emulator's pointer checks */
extern "C" void shim_emu_register(void *p, size_t bytes) { emu().allocs[(uintptr_t)p] = bytes ? bytes : 1; }
#endif

static attn_dtype shim_dtype(int code) { return code == 0 ? ATTN_F32 : code == 1 ? ATTN_F16 : ATTN_BF16; }

extern "C" const char *shim_status_str(int status) { return attn_status_str((attn_status)status); }

/* out, lse [B, Hq, Sq] (may be 0) = attention of q [B, Hq, Sq, D] over k, v [B, Hkv, Sk, D] */
extern "C" int shim_forward(void *q, void *k, void *v, void *out, float *lse, int dtype, int B, int Hq, int Hkv, int Sq,
                            int Sk, int D, int causal, int allow_tf32, void *stream) {
    const attn_dtype dt = shim_dtype(dtype);
    attn_desc d = {};
    d.causal = causal;
    d.allow_tf32 = allow_tf32;
    return (int)attn_cuda_forward(&d, attn_tensor_bhsd(q, dt, B, Hq, Sq, D), attn_tensor_bhsd(k, dt, B, Hkv, Sk, D),
                                  attn_tensor_bhsd(v, dt, B, Hkv, Sk, D), attn_tensor_bhsd(out, dt, B, Hq, Sq, D), lse,
                                  (cudaStream_t)stream);
}

/* bytes of device workspace shim_backward needs */
extern "C" int shim_backward_workspace(void *q, void *k, void *v, int dtype, int B, int Hq, int Hkv, int Sq, int Sk, int D,
                                       int causal, size_t *bytes) {
    const attn_dtype dt = shim_dtype(dtype);
    attn_desc d = {};
    d.causal = causal;
    return (int)attn_cuda_backward_workspace_size(&d, attn_tensor_bhsd(q, dt, B, Hq, Sq, D), attn_tensor_bhsd(k, dt, B, Hkv, Sk, D),
                                                  attn_tensor_bhsd(v, dt, B, Hkv, Sk, D), bytes);
}

/* dq, dk, dv from the forward's q, k, v, out, lse and dout (workspace of shim_backward_workspace bytes) */
extern "C" int shim_backward(void *q, void *k, void *v, void *out, void *dout, const float *lse, void *dq, void *dk, void *dv,
                             void *workspace, size_t workspace_bytes, int dtype, int B, int Hq, int Hkv, int Sq, int Sk, int D,
                             int causal, void *stream) {
    const attn_dtype dt = shim_dtype(dtype);
    attn_desc d = {};
    d.causal = causal;
    d.workspace = workspace;
    d.workspace_size = workspace_bytes;
    const attn_tensor tq = attn_tensor_bhsd(q, dt, B, Hq, Sq, D), tk = attn_tensor_bhsd(k, dt, B, Hkv, Sk, D),
                      tv = attn_tensor_bhsd(v, dt, B, Hkv, Sk, D);
    return (int)attn_cuda_backward(&d, tq, tk, tv, attn_tensor_bhsd(out, dt, B, Hq, Sq, D), attn_tensor_bhsd(dout, dt, B, Hq, Sq, D),
                                   lse, attn_tensor_bhsd(dq, dt, B, Hq, Sq, D), attn_tensor_bhsd(dk, dt, B, Hkv, Sk, D),
                                   attn_tensor_bhsd(dv, dt, B, Hkv, Sk, D), (cudaStream_t)stream);
}

/* the cache: pages [n_pages, page, Hkv, D] for k and v, lens [B] and block_table [B][max_pages]
   (device ints); page 0 means contiguous [B, capacity, Hkv, D] with capacity = max_pages */
static attn_kv_cache shim_cache(void *kp, void *vp, int *lens, const int *table, int dt, int B, int Hkv, int D, int page,
                                int max_pages, int n_pages) {
    attn_kv_cache c = {};
    const attn_dtype t = shim_dtype(dt);
    if (page) {
        c.k = attn_tensor_dense(kp, t, n_pages, page, Hkv, D);
        c.v = attn_tensor_dense(vp, t, n_pages, page, Hkv, D);
        c.block_table = table;
        c.max_pages = max_pages;
    } else {
        c.k = attn_tensor_dense(kp, t, B, max_pages, Hkv, D);
        c.v = attn_tensor_dense(vp, t, B, max_pages, Hkv, D);
    }
    c.lens = lens;
    c.batch = B;
    c.page_size = page;
    return c;
}

extern "C" int shim_decode_workspace(void *q, void *kp, void *vp, int *lens, const int *table, int dtype, int B, int Hq, int Hkv,
                                     int D, int page, int max_pages, int n_pages, size_t *bytes) {
    attn_desc d = {};
    const attn_kv_cache c = shim_cache(kp, vp, lens, table, dtype, B, Hkv, D, page, max_pages, n_pages);
    return (int)attn_cuda_decode_workspace_size(&d, attn_tensor_dense(q, shim_dtype(dtype), B, 1, Hq, D), &c, bytes);
}

/* out [B, 1, Hq, D] = one query token per sequence q [B, 1, Hq, D] over the cache */
extern "C" int shim_decode(void *q, void *kp, void *vp, int *lens, const int *table, void *out, void *workspace,
                           size_t workspace_bytes, int dtype, int B, int Hq, int Hkv, int D, int page, int max_pages,
                           int n_pages, void *stream) {
    attn_desc d = {};
    d.workspace = workspace;
    d.workspace_size = workspace_bytes;
    const attn_kv_cache c = shim_cache(kp, vp, lens, table, dtype, B, Hkv, D, page, max_pages, n_pages);
    const attn_dtype dt = shim_dtype(dtype);
    return (int)attn_cuda_decode(&d, attn_tensor_dense(q, dt, B, 1, Hq, D), &c, attn_tensor_dense(out, dt, B, 1, Hq, D), NULL,
                                 (cudaStream_t)stream);
}
