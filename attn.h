/* attn.h - v0.1 - exact and approximate attention for C99 - public domain or MIT (see end of file)

   Table of contents
     1. Documentation (this block)
     2. Public API: types, status codes, functions
     3. Implementation (#define ATTN_IMPLEMENTATION)
        3.1 portability and configuration
        3.2 memory and threads
        3.3 numerics: fp16/bf16 conversion
        3.4 argument validation
        3.5 micro-kernels: scalar, AVX2+FMA, AVX-512 (run-time dispatch), NEON
        3.6 exact attention: masks, tiled online-softmax forward, split-KV
        3.7 merge of partial results
        3.8 exact attention backward (FlashAttention-2 recomputation), dropout
        3.9 GEMM (blocked SIMD SGEMM for the layers, caller BLAS hook)
        3.10 layers: standard MHA, Optimized, Efficient, Super, Direct
        3.11 generation: KV caches (contiguous, paged), RoPE, StreamingLLM, EL-attention
        3.12 AMX tile kernels (bf16)
     4. License

   USAGE
     In exactly one C or C++ file:
         #define ATTN_IMPLEMENTATION
         #include "attn.h"
     Everywhere else just #include "attn.h". Link with -lm and, unless ATTN_NO_THREADS is
     defined, with -pthread.

         attn_desc d = {0};                 // zero = plain non-causal softmax attention
         d.causal = 1;
         attn_status s = attn_forward(&d, q, k, v, out, NULL);
         if (s != ATTN_OK) fprintf(stderr, "attn: %s\n", attn_status_str(s));

     Tensors are strided views [batch, seq, heads, dim] (attn_tensor); the last axis is
     contiguous. attn_tensor_dense() builds a dense BSHD view, attn_tensor_bhsd() a dense
     [batch, heads, seq, dim] one. Storage may be f32, f16 or bf16; maths is always fp32.

   CONFIGURATION (define before the #include that has ATTN_IMPLEMENTATION)
     ATTNDEF            decoration of every public function (default: extern)
     ATTN_STATIC        make every function static (private to one translation unit)
     ATTN_MALLOC(sz), ATTN_FREE(p)    replace malloc/free; define both or neither
     ATTN_ASSERT(x)     internal invariants only, never user input (default: assert)
     ATTN_NO_THREADS    no pthreads; work runs on the calling thread unless you pass a
                        parallel hook in attn_desc.parallel
     ATTN_NO_SIMD       scalar kernels only
     ATTN_NO_AVX512     never use the AVX-512 kernels (AVX2+FMA at most; no bf16 tile kernels)
     ATTN_NO_AMX        never compile the AMX tile kernels (bf16 prefill then runs on AVX512-BF16
                        where the CPU has it, else on the fp32 kernels); see 3.12
   x86 kernels are compiled with per-function target attributes and picked at run time
   (cpuid), so a binary built without -march runs AVX-512 or AVX2 where the CPU has them.
   bf16 q/k/v outside decoding run on bf16 dot-product tiles (AMX, else AVX512-BF16; gcc >= 11
   or clang >= 12) that round the softmax weights P to bf16 for P.V: |error| <= 2^-9 max|v|.
   attn_bf16_kernels() names them; attn_desc.no_amx = 2 keeps such calls on the fp32 kernels.

   SEMANTICS OF EXACT ATTENTION (attn_forward with attn_desc.kind = ATTN_SOFTMAX)
     For batch b, query head h (KV head h / (Hq/Hkv)), valid lengths Lq, Lk (q.seq/k.seq, or
     seqlens_q[b]/seqlens_k[b], or the cu_seqlens segment lengths):
       query i sits at key position p = i + Lk - Lq (bottom-right alignment, FlashAttention 2.1+)
       s_ij   = scale * q_i . k_j                           scale 0 means 1/sqrt(q.dim)
       s_ij   = softcap * tanh(s_ij / softcap)              if softcap > 0
       s_ij  += bias[b][h][i][j] - alibi_slopes[h] * |p - j|
       key j is visible from query i when  j < Lk  and  (!causal || j <= p)  and
         ( local(i, j)  ||  j < sink_tokens  ||  j < global_tokens  ||  p < global_tokens )
       local(i, j): with D = max(dilation, 1) and t = p - j:
         t % D == 0,  window_left == 0 || t <= window_left * D,  window_right == 0 || -t <= window_right * D
       out_i = sum_j softmax_j(s_ij over visible j) v_j ;  lse_i = log sum_j exp(s_ij) (natural log)
     A row with no visible key (or a padding row, i >= Lq) gets out = 0 and lse = -inf.
     So: window_left = w-1 with causal = Mistral's sliding window w; sinks and global tokens
     bypass the window and dilation but never causality or padding.

   VERSION  0.1   first release: exact attention with every mask, merge.
*/
#ifndef ATTN_H_INCLUDED
#define ATTN_H_INCLUDED

#include <stddef.h>   /* size_t, ptrdiff_t */

#define ATTN_VERSION_MAJOR 0
#define ATTN_VERSION_MINOR 1

#ifndef ATTNDEF
#ifdef ATTN_STATIC
#define ATTNDEF static
#else
#define ATTNDEF extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ====================================================================================== */
/* 2. Public API                                                                          */
/* ====================================================================================== */

/* Storage type of a tensor. Arithmetic is always fp32. */
typedef enum attn_dtype { ATTN_F32 = 0, ATTN_F16 = 1, ATTN_BF16 = 2 } attn_dtype;

/* A strided view of a 4-D tensor [batch, seq, heads, dim]; the dim axis has stride 1.
   Strides are in elements. All three 0 means dense [batch][seq][heads][dim]. An input may use
   stride 0 on an axis to broadcast it; an output may not (on an axis of extent > 1). */
typedef struct attn_tensor {
    void *data;
    attn_dtype dtype;
    int batch, seq, heads, dim;
    ptrdiff_t stride_batch, stride_seq, stride_head;
} attn_tensor;

/* Which mechanism attn_forward computes. */
typedef enum attn_kind {
    ATTN_SOFTMAX = 0          /* exact scaled dot-product attention with masks */
} attn_kind;

/* Optional additive bias on the logits, fp32, shape [batch|1, heads|1, seq_q, seq_k].
     data          NULL: no bias
     batch         1 (broadcast over batch) or q.batch
     heads         1 (broadcast over heads) or q.heads
     stride_*      in elements; all 0 = dense; the seq_k axis is contiguous */
typedef struct attn_bias {
    const float *data;
    int batch, heads;
    ptrdiff_t stride_batch, stride_head, stride_q;
} attn_bias;

/* A parallel-for you can plug in to run attn's work on your own thread pool. It must call
   task(task_ctx, i, thread) once for every i in [0, n_tasks), where thread is in
   [0, n_threads) and no two calls running at the same time share a thread value, and return
   when all calls have finished. */
typedef void (*attn_task_fn)(void *task_ctx, int task_index, int thread_index);
typedef void (*attn_parallel_fn)(void *user, int n_tasks, int n_threads,
                                 attn_task_fn task, void *task_ctx);

/* Everything that configures a call. Zero-initialise, then set what you need.
   field            default (0)                 meaning
   kind             ATTN_SOFTMAX                mechanism
   scale            1/sqrt(q.dim)               logit scale; must be finite
   causal           off                         bottom-right aligned causal mask
   window_left      unbounded                   at most n keys (n*dilation positions) before p
   window_right     unbounded                   at most n keys after p
   dilation         none (0 or 1)               Longformer dilated window: every dilation-th key
   sink_tokens      none                        first n keys visible to every query (StreamingLLM)
   global_tokens    none                        first n positions attend to and from everything
   seqlens_q/_k     full length                 [batch] valid lengths (padding at the end)
   cu_seqlens_q/_k  not packed                  [varlen_batch+1] offsets of packed sequences;
                                                q/k/v then have batch 1 and seq = total length
   varlen_batch     -                           number of packed sequences (with cu_seqlens)
   alibi_slopes     none                        [q.heads] ALiBi slopes
   softcap          off                         logit soft-capping c*tanh(s/c)
   bias             none                        additive fp32 bias (attn_bias)
   n_threads        all cores                   threads to use
   parallel         built-in threads            your parallel-for (see attn_parallel_fn)
   parallel_user    -                           passed to parallel
   workspace        allocate per call           scratch memory of workspace_size bytes; ask
                                                attn_workspace_size() for the size needed
   no_amx           fastest bf16 kernels        bf16 q/k/v (not decoding): 0 = AMX tiles where the CPU
                                                and OS allow them, else AVX512-BF16 dot products,
                                                else the fp32 kernels; 1 = never AMX; 2 = fp32
                                                kernels only (inputs converted), as without either */
typedef struct attn_desc {
    attn_kind kind;
    float scale;
    int causal;
    int window_left, window_right;
    int dilation;
    int sink_tokens;
    int global_tokens;
    const int *seqlens_q, *seqlens_k;
    const int *cu_seqlens_q, *cu_seqlens_k;
    int varlen_batch;
    const float *alibi_slopes;
    float softcap;
    attn_bias bias;
    int n_threads;
    attn_parallel_fn parallel;
    void *parallel_user;
    void *workspace;
    size_t workspace_size;
    /* backward / training fields */
    /* generation fields */
    /* AMX fields */
    int no_amx;
} attn_desc;

/* Status codes: one per check, each message names the field at fault.
   X(name, category, message) */
#define ATTN__STATUS_LIST(X) \
    X(ATTN_OK,                        ATTN_CAT_OK,          "ok") \
    X(ATTN_ERR_NULL_DESC,             ATTN_CAT_NULL,        "desc is NULL") \
    X(ATTN_ERR_NULL_Q,                ATTN_CAT_NULL,        "q.data is NULL") \
    X(ATTN_ERR_NULL_K,                ATTN_CAT_NULL,        "k.data is NULL") \
    X(ATTN_ERR_NULL_V,                ATTN_CAT_NULL,        "v.data is NULL") \
    X(ATTN_ERR_NULL_OUT,              ATTN_CAT_NULL,        "out.data is NULL") \
    X(ATTN_ERR_NULL_ARG,              ATTN_CAT_NULL,        "attn_workspace_size: bytes is NULL") \
    X(ATTN_ERR_DTYPE,                 ATTN_CAT_DTYPE,       "a tensor's dtype is not ATTN_F32, ATTN_F16 or ATTN_BF16") \
    X(ATTN_ERR_DTYPE_MISMATCH,        ATTN_CAT_DTYPE,       "k.dtype and v.dtype must equal q.dtype") \
    X(ATTN_ERR_Q_SHAPE,               ATTN_CAT_SHAPE,       "q.batch, q.seq, q.heads and q.dim must all be >= 1") \
    X(ATTN_ERR_K_SHAPE,               ATTN_CAT_SHAPE,       "k.batch, k.seq, k.heads and k.dim must all be >= 1") \
    X(ATTN_ERR_V_SHAPE,               ATTN_CAT_SHAPE,       "v.batch, v.seq, v.heads and v.dim must all be >= 1") \
    X(ATTN_ERR_OUT_SHAPE,             ATTN_CAT_SHAPE,       "out must be [q.batch, q.seq, q.heads, v.dim]") \
    X(ATTN_ERR_K_BATCH,               ATTN_CAT_SHAPE,       "k.batch must equal q.batch") \
    X(ATTN_ERR_K_DIM,                 ATTN_CAT_SHAPE,       "k.dim must equal q.dim") \
    X(ATTN_ERR_V_BATCH_SEQ,           ATTN_CAT_SHAPE,       "v.batch and v.seq must equal k.batch and k.seq") \
    X(ATTN_ERR_V_HEADS,               ATTN_CAT_SHAPE,       "v.heads must equal k.heads") \
    X(ATTN_ERR_GQA_HEADS,             ATTN_CAT_SHAPE,       "q.heads must be a multiple of k.heads (GQA/MQA)") \
    X(ATTN_ERR_OUT_BROADCAST,         ATTN_CAT_SHAPE,       "out must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_KIND,                  ATTN_CAT_RANGE,       "attn_desc.kind is not a known attn_kind") \
    X(ATTN_ERR_SCALE,                 ATTN_CAT_RANGE,       "attn_desc.scale must be finite") \
    X(ATTN_ERR_SOFTCAP,               ATTN_CAT_RANGE,       "attn_desc.softcap must be finite and >= 0") \
    X(ATTN_ERR_WINDOW_LEFT,           ATTN_CAT_RANGE,       "attn_desc.window_left must be >= 0") \
    X(ATTN_ERR_WINDOW_RIGHT,          ATTN_CAT_RANGE,       "attn_desc.window_right must be >= 0") \
    X(ATTN_ERR_DILATION,              ATTN_CAT_RANGE,       "attn_desc.dilation must be >= 0") \
    X(ATTN_ERR_SINK_TOKENS,           ATTN_CAT_RANGE,       "attn_desc.sink_tokens must be >= 0") \
    X(ATTN_ERR_GLOBAL_TOKENS,         ATTN_CAT_RANGE,       "attn_desc.global_tokens must be >= 0") \
    X(ATTN_ERR_CAUSAL,                ATTN_CAT_RANGE,       "attn_desc.causal must be 0 or 1") \
    X(ATTN_ERR_SEQLENS_Q,             ATTN_CAT_RANGE,       "attn_desc.seqlens_q[b] must be in [0, q.seq]") \
    X(ATTN_ERR_SEQLENS_K,             ATTN_CAT_RANGE,       "attn_desc.seqlens_k[b] must be in [0, k.seq]") \
    X(ATTN_ERR_CU_SEQLENS_Q,          ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_q must start at 0, never decrease and end at most at q.seq") \
    X(ATTN_ERR_CU_SEQLENS_K,          ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_k must start at 0, never decrease and end at most at k.seq") \
    X(ATTN_ERR_CU_SEQLENS_PAIR,       ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_q and attn_desc.cu_seqlens_k must be given together") \
    X(ATTN_ERR_VARLEN_BATCH,          ATTN_CAT_RANGE,       "attn_desc.varlen_batch must be >= 1 when cu_seqlens are given, else 0") \
    X(ATTN_ERR_VARLEN_SHAPE,          ATTN_CAT_SHAPE,       "with cu_seqlens, q, k, v and out must have batch 1") \
    X(ATTN_ERR_ALIBI,                 ATTN_CAT_RANGE,       "attn_desc.alibi_slopes[h] must be finite") \
    X(ATTN_ERR_BIAS_BATCH,            ATTN_CAT_SHAPE,       "attn_desc.bias.batch must be 1 or q.batch") \
    X(ATTN_ERR_BIAS_HEADS,            ATTN_CAT_SHAPE,       "attn_desc.bias.heads must be 1 or q.heads") \
    X(ATTN_ERR_N_THREADS,             ATTN_CAT_RANGE,       "attn_desc.n_threads must be >= 0") \
    X(ATTN_ERR_WORKSPACE,             ATTN_CAT_RANGE,       "attn_desc.workspace_size is smaller than attn_workspace_size() asks for") \
    X(ATTN_ERR_VARLEN_WITH_SEQLENS,   ATTN_CAT_UNSUPPORTED, "attn_desc.seqlens_q/_k cannot be combined with cu_seqlens_q/_k") \
    X(ATTN_ERR_VARLEN_WITH_BIAS,      ATTN_CAT_UNSUPPORTED, "attn_desc.bias cannot be combined with cu_seqlens_q/_k") \
    X(ATTN_ERR_MERGE_N_PARTS,         ATTN_CAT_RANGE,       "attn_merge: n_parts must be >= 1") \
    X(ATTN_ERR_MERGE_NULL,            ATTN_CAT_NULL,        "attn_merge: parts, part_lse, a part's data or a part_lse[p] is NULL") \
    X(ATTN_ERR_MERGE_SHAPE,           ATTN_CAT_SHAPE,       "attn_merge: every part must have out's batch, seq, heads and dim") \
    /* -- backward (attn_backward, dropout) -- */ \
    /* -- GEMM (attn_sgemm) -- */ \
    /* -- layers (attn_layer_*) -- */ \
    /* -- generation (KV caches, RoPE, StreamingLLM, EL-attention) -- */ \
    /* -- AMX -- */ \
    X(ATTN_ERR_NO_AMX,                ATTN_CAT_RANGE,       "attn_desc.no_amx must be 0, 1 or 2") \
    X(ATTN_ERR_OVERFLOW,              ATTN_CAT_OVERFLOW,    "a tensor's or attn_desc.bias's size or strides overflow ptrdiff_t/size_t") \
    X(ATTN_ERR_OUT_OF_MEMORY,         ATTN_CAT_MEMORY,      "out of memory (workspace allocation failed)")

#define ATTN__STATUS_ENUM(name, cat, msg) name,
typedef enum attn_status { ATTN__STATUS_LIST(ATTN__STATUS_ENUM) ATTN_STATUS_COUNT } attn_status;
#undef ATTN__STATUS_ENUM

/* The broad class of a status, for callers that branch on the kind of failure. */
typedef enum attn_status_category {
    ATTN_CAT_OK = 0, ATTN_CAT_NULL, ATTN_CAT_SHAPE, ATTN_CAT_DTYPE, ATTN_CAT_RANGE,
    ATTN_CAT_UNSUPPORTED, ATTN_CAT_OVERFLOW, ATTN_CAT_MEMORY
} attn_status_category;

/* Human-readable message for a status ("attn_desc.window_left must be >= 0"). Never NULL. */
ATTNDEF const char *attn_status_str(attn_status s);
/* Category of a status. */
ATTNDEF attn_status_category attn_status_cat(attn_status s);

/* The kernel set attn_forward runs on this CPU: "avx512", "avx2" or "scalar". */
ATTNDEF const char *attn_kernels(void);

/* Dense [batch][seq][heads][dim] view of data. */
ATTNDEF attn_tensor attn_tensor_dense(void *data, attn_dtype dtype, int batch, int seq, int heads, int dim);
/* Dense [batch][heads][seq][dim] view of data (PyTorch's usual layout), as an attn_tensor. */
ATTNDEF attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int batch, int heads, int seq, int dim);

/* Exact attention forward.
     q    [B, Sq, Hq, D]      k [B, Sk, Hkv, D]     v [B, Sk, Hkv, Dv]     Hq % Hkv == 0
     out  [B, Sq, Hq, Dv]     written (overwritten) on success; any dtype
     lse  [B, Hq, Sq] fp32 dense, natural-log logsumexp of each row, or NULL
   On any error nothing is written. out must not overlap q, k, v. */
ATTNDEF attn_status attn_forward(const attn_desc *desc, attn_tensor q, attn_tensor k,
                                 attn_tensor v, attn_tensor out, float *lse);

/* Bytes of scratch attn_forward needs for these arguments (the same validation runs first).
   Pass memory of that size in desc->workspace to make the call allocation-free. */
ATTNDEF attn_status attn_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k,
                                        attn_tensor v, size_t *bytes);

/* Combine n_parts partial results computed over disjoint key sets (split-KV, ring attention,
   cascade) into the exact result: out = sum_p part_p * exp(lse_p - lse), lse = log sum_p exp(lse_p).
     parts[p]     [B, S, H, Dv], each with out's shape (any dtype, any strides)
     part_lse[p]  [B, H, S] fp32 dense; -inf marks a row that saw no key
     out          [B, S, H, Dv]; may be parts[0] itself (element-wise in place)
     lse          [B, H, S] or NULL; may be part_lse[0]
   Rows where every part has lse = -inf get zeros and -inf. */
ATTNDEF attn_status attn_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse,
                               attn_tensor out, float *lse);

/* ---- Backward (training) --------------------------------------------------------------- */

/* ---- GEMM ------------------------------------------------------------------------------ */

/* ---- Layers: hidden states + weights -> output ----------------------------------------- */

/* Weights of one attention layer: fp32, row-major, projections written as the papers write
   them, y = x W + b with W [in, out]. A NULL bias means no bias. Head i (d_k = d_model/heads)
   owns columns i*d_k .. (i+1)*d_k-1 of wq, wk, wv and rows i*d_k .. (i+1)*d_k-1 of wo; with
   kv_heads < heads (GQA/MQA) wk/wv have kv_heads*d_k columns. Which fields a layer kind reads
   is documented with attn_layer_kind. */
typedef struct attn_layer_weights {
    const float *wq, *bq;     /* [d_model, heads*d_k],    [heads*d_k]    */
    const float *wk, *bk;     /* [d_model, kv_heads*d_k], [kv_heads*d_k] */
    const float *wv, *bv;     /* [d_model, kv_heads*d_k], [kv_heads*d_k] */
    const float *wo, *bo;     /* [heads*d_k, d_model],    [d_model]      */
    /* layer-kind specific weights */
} attn_layer_weights;

/* ---- Generation: KV caches, RoPE, StreamingLLM, EL-attention --------------------------- */

/* ---- AMX -------------------------------------------------------------------------------- */

/* The kernels attn_forward runs for bf16 q/k/v outside decoding (attn_desc.no_amx = 0):
   "amx" (tdpbf16ps tiles), "avx512bf16" (vdpbf16ps) or "none" (the fp32 kernels of
   attn_kernels() on converted inputs). The first two round P to bf16 for the P.V product. */
ATTNDEF const char *attn_bf16_kernels(void);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_H_INCLUDED */

/* ====================================================================================== */
/* 3. Implementation                                                                      */
/* ====================================================================================== */
#ifdef ATTN_IMPLEMENTATION
#ifndef ATTN__IMPLEMENTATION_DONE
#define ATTN__IMPLEMENTATION_DONE

/* ---------------------------------------------------------------------------------------
   3.1 portability and configuration
   --------------------------------------------------------------------------------------- */
#if defined(ATTN_MALLOC) && defined(ATTN_FREE)
#elif !defined(ATTN_MALLOC) && !defined(ATTN_FREE)
#include <stdlib.h>
#define ATTN_MALLOC(sz) malloc(sz)
#define ATTN_FREE(p) free(p)
#else
#error "attn.h: define both ATTN_MALLOC and ATTN_FREE, or neither"
#endif

#ifndef ATTN_ASSERT
#include <assert.h>
#define ATTN_ASSERT(x) assert(x)
#endif

#include <string.h>
#include <math.h>
#include <limits.h>
#include <stdint.h>

#if !defined(ATTN_NO_THREADS)
#if defined(_WIN32)
#define ATTN__WIN32_THREADS 1
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#define ATTN__PTHREADS 1
#include <pthread.h>
#include <unistd.h>
#endif
#endif

#define ATTN__MIN(a, b) ((a) < (b) ? (a) : (b))
#define ATTN__MAX(a, b) ((a) > (b) ? (a) : (b))
#define ATTN__ALIGN 64

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
   3.2 memory and threads
   --------------------------------------------------------------------------------------- */

/* Checked size arithmetic: return 0 on overflow. */
static int attn__mul_size(size_t a, size_t b, size_t *r) {
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *r = a * b; return 1;
}
static int attn__add_size(size_t a, size_t b, size_t *r) {
    if (b > SIZE_MAX - a) return 0;
    *r = a + b; return 1;
}

/* 64-byte aligned allocation; the original pointer is kept just before the aligned block. */
static void *attn__alloc(size_t bytes) {
    unsigned char *raw, *p;
    if (bytes > SIZE_MAX - ATTN__ALIGN - sizeof(void *)) return NULL;
    raw = (unsigned char *)ATTN_MALLOC(bytes + ATTN__ALIGN + sizeof(void *));
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (ATTN__ALIGN - ((uintptr_t)p % ATTN__ALIGN)) % ATTN__ALIGN;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}
static void attn__free(void *p) {
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    ATTN_FREE(raw);
}

static int attn__cpu_count(void) {
#if defined(ATTN__PTHREADS) && defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 256 ? 256 : (int)n);
#elif defined(ATTN__WIN32_THREADS)
    SYSTEM_INFO si; GetSystemInfo(&si);
    return si.dwNumberOfProcessors < 1 ? 1 : (int)ATTN__MIN(si.dwNumberOfProcessors, 256);
#else
    return 1;
#endif
}

#if defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS)
/* Built-in parallel-for: n_threads workers (the caller is worker 0) take task indices from a
   shared counter. Which thread runs a task never changes its result: every task writes its own
   outputs and uses only its thread's scratch. */
typedef struct attn__pool {
    attn_task_fn task; void *ctx;
    int n_tasks, next;
#if defined(ATTN__PTHREADS)
    pthread_mutex_t lock;
#elif defined(ATTN__WIN32_THREADS)
    CRITICAL_SECTION lock;
#endif
} attn__pool;

typedef struct attn__worker { attn__pool *pool; int thread; } attn__worker;

static int attn__pool_take(attn__pool *p) {
    int i;
#if defined(ATTN__PTHREADS)
    pthread_mutex_lock(&p->lock); i = p->next++; pthread_mutex_unlock(&p->lock);
#elif defined(ATTN__WIN32_THREADS)
    EnterCriticalSection(&p->lock); i = p->next++; LeaveCriticalSection(&p->lock);
#endif
    return i;
}
static void attn__worker_loop(attn__worker *w) {
    int i;
    while ((i = attn__pool_take(w->pool)) < w->pool->n_tasks) w->pool->task(w->pool->ctx, i, w->thread);
}
#if defined(ATTN__PTHREADS)
static void *attn__worker_main(void *arg) { attn__worker_loop((attn__worker *)arg); return NULL; }
#elif defined(ATTN__WIN32_THREADS)
static DWORD WINAPI attn__worker_main(LPVOID arg) { attn__worker_loop((attn__worker *)arg); return 0; }
#endif
#endif /* threads */

#define ATTN__MAX_THREADS 256

/* Runs task over [0, n_tasks) on n_threads threads (or the caller's hook). Threads that fail
   to start just leave more tasks to the others, so the result is always complete. */
static void attn__parallel_for(const attn_desc *d, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    if (n_tasks <= 0) return;
    if (d && d->parallel) { d->parallel(d->parallel_user, n_tasks, n_threads, task, ctx); return; }
    if (n_threads > n_tasks) n_threads = n_tasks;
#if defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS)
    if (n_threads > 1) {
        attn__pool pool;
        attn__worker workers[ATTN__MAX_THREADS];
        int started = 1;
#if defined(ATTN__PTHREADS)
        pthread_t th[ATTN__MAX_THREADS];
        pthread_mutex_init(&pool.lock, NULL);
#else
        HANDLE th[ATTN__MAX_THREADS];
        InitializeCriticalSection(&pool.lock);
#endif
        pool.task = task; pool.ctx = ctx; pool.n_tasks = n_tasks; pool.next = 0;
        for (i = 0; i < n_threads; ++i) { workers[i].pool = &pool; workers[i].thread = i; }
        for (i = 1; i < n_threads; ++i) {
#if defined(ATTN__PTHREADS)
            if (pthread_create(&th[i], NULL, attn__worker_main, &workers[i]) != 0) break;
#else
            th[i] = CreateThread(NULL, 0, attn__worker_main, &workers[i], 0, NULL);
            if (!th[i]) break;
#endif
            ++started;
        }
        attn__worker_loop(&workers[0]);   /* a failed start just leaves more work for us */
        for (i = 1; i < started; ++i) {
#if defined(ATTN__PTHREADS)
            pthread_join(th[i], NULL);
#else
            WaitForSingleObject(th[i], INFINITE); CloseHandle(th[i]);
#endif
        }
#if defined(ATTN__PTHREADS)
        pthread_mutex_destroy(&pool.lock);
#else
        DeleteCriticalSection(&pool.lock);
#endif
        return;
    }
#endif
    for (i = 0; i < n_tasks; ++i) task(ctx, i, 0);
}

static int attn__resolve_threads(const attn_desc *d) {
    int n = d->n_threads > 0 ? d->n_threads : attn__cpu_count();
    return ATTN__MIN(n, ATTN__MAX_THREADS);
}

/* ---------------------------------------------------------------------------------------
   3.3 numerics: fp16 / bf16 conversion (round to nearest even, NaN kept quiet)
   --------------------------------------------------------------------------------------- */
static float attn__bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t attn__f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float attn__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
    if (exp == 0x1f) return attn__bits_to_f32(sign | 0x7f800000u | (man << 13));   /* inf/NaN */
    if (exp == 0) {                                                                  /* subnormal */
        float f = (float)man * (1.0f / 16777216.0f);                                 /* man * 2^-24 */
        return sign ? -f : f;
    }
    return attn__bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}
static uint16_t attn__f32_to_f16(float f) {
    uint32_t u = attn__f32_to_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);          /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                            /* below 2^-14: subnormal */
        /* adding 0.5 makes the FPU round the mantissa at 2^-24 granularity, ties to even */
        float r = attn__bits_to_f32(a) + 0.5f;
        return (uint16_t)(sign | (attn__f32_to_bits(r) - 0x3f000000u));
    }
    a += ((a >> 13) & 1u) + 0xfffu;                                   /* round to nearest even */
    return (uint16_t)(sign | ((a - 0x38000000u) >> 13));
}
static float attn__bf16_to_f32(uint16_t b) { return attn__bits_to_f32((uint32_t)b << 16); }
static uint16_t attn__f32_to_bf16(float f) {
    uint32_t u = attn__f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);   /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static size_t attn__dtype_size(attn_dtype t) { return t == ATTN_F32 ? 4 : 2; }

/* n consecutive elements of storage type t -> fp32, optionally times mul */
static void attn__load_row(const void *src, attn_dtype t, float *dst, int n, float mul) {
    int i;
    if (t == ATTN_F32) { const float *s = (const float *)src; for (i = 0; i < n; ++i) dst[i] = s[i] * mul; }
    else if (t == ATTN_F16) { const uint16_t *s = (const uint16_t *)src; for (i = 0; i < n; ++i) dst[i] = attn__f16_to_f32(s[i]) * mul; }
    else { const uint16_t *s = (const uint16_t *)src; for (i = 0; i < n; ++i) dst[i] = attn__bf16_to_f32(s[i]) * mul; }
}
/* n fp32 values, each times mul -> storage type t */
static void attn__store_row(void *dst, attn_dtype t, const float *src, int n, float mul) {
    int i;
    if (t == ATTN_F32) { float *o = (float *)dst; for (i = 0; i < n; ++i) o[i] = src[i] * mul; }
    else if (t == ATTN_F16) { uint16_t *o = (uint16_t *)dst; for (i = 0; i < n; ++i) o[i] = attn__f32_to_f16(src[i] * mul); }
    else { uint16_t *o = (uint16_t *)dst; for (i = 0; i < n; ++i) o[i] = attn__f32_to_bf16(src[i] * mul); }
}
static void attn__store_zero_row(void *dst, attn_dtype t, int n) {
    memset(dst, 0, (size_t)n * attn__dtype_size(t));   /* +0.0 is all-zero bits in all three */
}

/* ---------------------------------------------------------------------------------------
   3.4 argument validation
   --------------------------------------------------------------------------------------- */
static const char *const attn__status_msg[] = {
#define ATTN__STATUS_MSG(name, cat, msg) msg,
    ATTN__STATUS_LIST(ATTN__STATUS_MSG)
#undef ATTN__STATUS_MSG
};
static const attn_status_category attn__status_cat[] = {
#define ATTN__STATUS_CAT(name, cat, msg) cat,
    ATTN__STATUS_LIST(ATTN__STATUS_CAT)
#undef ATTN__STATUS_CAT
};

ATTNDEF const char *attn_status_str(attn_status s) {
    if ((int)s < 0 || (int)s >= (int)ATTN_STATUS_COUNT) return "unknown attn_status value";
    return attn__status_msg[s];
}
ATTNDEF attn_status_category attn_status_cat(attn_status s) {
    if ((int)s < 0 || (int)s >= (int)ATTN_STATUS_COUNT) return ATTN_CAT_RANGE;
    return attn__status_cat[s];
}

ATTNDEF attn_tensor attn_tensor_dense(void *data, attn_dtype dtype, int batch, int seq, int heads, int dim) {
    attn_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data; t.dtype = dtype; t.batch = batch; t.seq = seq; t.heads = heads; t.dim = dim;
    return t;
}
ATTNDEF attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int batch, int heads, int seq, int dim) {
    attn_tensor t = attn_tensor_dense(data, dtype, batch, seq, heads, dim);
    t.stride_head = (ptrdiff_t)seq * dim;                 /* overflow is caught by validation */
    t.stride_seq = dim;
    t.stride_batch = (ptrdiff_t)heads * seq * dim;
    if (t.stride_head == 0 && t.stride_seq == 0 && t.stride_batch == 0) t.stride_seq = 1;
    return t;
}

/* A tensor with its strides resolved (dense defaults filled in). */
typedef struct attn__view {
    char *data;
    attn_dtype dtype;
    size_t esize;
    int batch, seq, heads, dim;
    ptrdiff_t sb, ss, sh;
} attn__view;

static void *attn__at(const attn__view *v, int b, int s, int h) {
    return v->data + (ptrdiff_t)v->esize * ((ptrdiff_t)b * v->sb + (ptrdiff_t)s * v->ss + (ptrdiff_t)h * v->sh);
}

/* |a| * n added to *span, with overflow checks against PTRDIFF_MAX. */
static int attn__span_add(size_t *span, ptrdiff_t stride, int n) {
    size_t a, t;
    if (stride == PTRDIFF_MIN) return 0;
    a = (size_t)(stride < 0 ? -stride : stride);
    if (!attn__mul_size(a, (size_t)(n - 1), &t) || !attn__add_size(*span, t, span)) return 0;
    return *span <= (size_t)PTRDIFF_MAX;
}

static int attn__dtype_ok(attn_dtype t) { return t == ATTN_F32 || t == ATTN_F16 || t == ATTN_BF16; }

/* Resolves strides and checks that every element offset (in bytes) fits in ptrdiff_t.
   Shape and dtype must already be valid. */
static attn_status attn__make_view(const attn_tensor *t, attn__view *v) {
    size_t span = 0, bytes, dense;
    v->data = (char *)t->data; v->dtype = t->dtype; v->esize = attn__dtype_size(t->dtype);
    v->batch = t->batch; v->seq = t->seq; v->heads = t->heads; v->dim = t->dim;
    if (t->stride_batch == 0 && t->stride_seq == 0 && t->stride_head == 0) {
        if (!attn__mul_size((size_t)t->heads, (size_t)t->dim, &dense) || dense > (size_t)PTRDIFF_MAX) return ATTN_ERR_OVERFLOW;
        v->sh = t->dim; v->ss = (ptrdiff_t)dense;
        if (!attn__mul_size(dense, (size_t)t->seq, &dense) || dense > (size_t)PTRDIFF_MAX) return ATTN_ERR_OVERFLOW;
        v->sb = (ptrdiff_t)dense;
    } else {
        v->sb = t->stride_batch; v->ss = t->stride_seq; v->sh = t->stride_head;
    }
    if (!attn__span_add(&span, 1, t->dim) || !attn__span_add(&span, v->sh, t->heads) ||
        !attn__span_add(&span, v->ss, t->seq) || !attn__span_add(&span, v->sb, t->batch) ||
        !attn__add_size(span, 1, &span) || !attn__mul_size(span, v->esize, &bytes) || bytes > (size_t)PTRDIFF_MAX)
        return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}

static int attn__shape_ok(const attn_tensor *t) {
    return t->batch >= 1 && t->seq >= 1 && t->heads >= 1 && t->dim >= 1;
}

/* Checks an int array of lengths, each in [0, max]. */
static int attn__lengths_ok(const int *len, int n, int max) {
    int i;
    for (i = 0; i < n; ++i) if (len[i] < 0 || len[i] > max) return 0;
    return 1;
}
/* Checks cumulative offsets: cu[0] == 0, non-decreasing, cu[n] <= max. */
static int attn__offsets_ok(const int *cu, int n, int max) {
    int i;
    if (cu[0] != 0) return 0;
    for (i = 0; i < n; ++i) if (cu[i + 1] < cu[i]) return 0;
    return cu[n] <= max;
}

/* Everything attn_forward needs, resolved from the arguments. */
typedef struct attn__problem {
    attn__view q, k, v, out;
    float *lse;
    float scale, softcap;
    int causal, window_left, window_right, dilation, sink, global;
    int groups;                  /* Hq / Hkv */
    int n_seqs;                  /* batch, or varlen_batch */
    const int *seqlens_q, *seqlens_k, *cu_q, *cu_k;
    const float *alibi;
    const float *bias;
    int bias_batch, bias_heads;
    ptrdiff_t bias_sb, bias_sh, bias_sq;
    int n_threads;
    int no_amx;                  /* attn_desc.no_amx (3.12) */
} attn__problem;

static attn_status attn__check_forward(const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                                       const attn_tensor *v, const attn_tensor *out, attn__problem *P) {
    attn_status s;
    int h, varlen;
    if (!d) return ATTN_ERR_NULL_DESC;
    if ((int)d->kind != (int)ATTN_SOFTMAX) return ATTN_ERR_KIND;
    if (!q->data) return ATTN_ERR_NULL_Q;
    if (!k->data) return ATTN_ERR_NULL_K;
    if (!v->data) return ATTN_ERR_NULL_V;
    if (out && !out->data) return ATTN_ERR_NULL_OUT;
    if (!attn__dtype_ok(q->dtype) || !attn__dtype_ok(k->dtype) || !attn__dtype_ok(v->dtype) ||
        (out && !attn__dtype_ok(out->dtype))) return ATTN_ERR_DTYPE;
    if (k->dtype != q->dtype || v->dtype != q->dtype) return ATTN_ERR_DTYPE_MISMATCH;
    if (!attn__shape_ok(q)) return ATTN_ERR_Q_SHAPE;
    if (!attn__shape_ok(k)) return ATTN_ERR_K_SHAPE;
    if (!attn__shape_ok(v)) return ATTN_ERR_V_SHAPE;
    if (k->batch != q->batch) return ATTN_ERR_K_BATCH;
    if (k->dim != q->dim) return ATTN_ERR_K_DIM;
    if (v->batch != k->batch || v->seq != k->seq) return ATTN_ERR_V_BATCH_SEQ;
    if (v->heads != k->heads) return ATTN_ERR_V_HEADS;
    if (q->heads % k->heads != 0) return ATTN_ERR_GQA_HEADS;
    if (out) {
        if (out->batch != q->batch || out->seq != q->seq || out->heads != q->heads || out->dim != v->dim)
            return ATTN_ERR_OUT_SHAPE;
        if (!(out->stride_batch == 0 && out->stride_seq == 0 && out->stride_head == 0) &&
            ((out->batch > 1 && out->stride_batch == 0) || (out->seq > 1 && out->stride_seq == 0) ||
             (out->heads > 1 && out->stride_head == 0)))
            return ATTN_ERR_OUT_BROADCAST;
    }
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (!isfinite(d->softcap) || d->softcap < 0) return ATTN_ERR_SOFTCAP;
    if (d->causal != 0 && d->causal != 1) return ATTN_ERR_CAUSAL;
    if (d->window_left < 0) return ATTN_ERR_WINDOW_LEFT;
    if (d->window_right < 0) return ATTN_ERR_WINDOW_RIGHT;
    if (d->dilation < 0) return ATTN_ERR_DILATION;
    if (d->sink_tokens < 0) return ATTN_ERR_SINK_TOKENS;
    if (d->global_tokens < 0) return ATTN_ERR_GLOBAL_TOKENS;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (d->no_amx < 0 || d->no_amx > 2) return ATTN_ERR_NO_AMX;
    varlen = d->cu_seqlens_q || d->cu_seqlens_k;
    if (varlen) {
        if (!d->cu_seqlens_q || !d->cu_seqlens_k) return ATTN_ERR_CU_SEQLENS_PAIR;
        if (d->seqlens_q || d->seqlens_k) return ATTN_ERR_VARLEN_WITH_SEQLENS;
        if (d->bias.data) return ATTN_ERR_VARLEN_WITH_BIAS;
        if (d->varlen_batch < 1) return ATTN_ERR_VARLEN_BATCH;
        if (q->batch != 1 || (out && out->batch != 1)) return ATTN_ERR_VARLEN_SHAPE;
        if (!attn__offsets_ok(d->cu_seqlens_q, d->varlen_batch, q->seq)) return ATTN_ERR_CU_SEQLENS_Q;
        if (!attn__offsets_ok(d->cu_seqlens_k, d->varlen_batch, k->seq)) return ATTN_ERR_CU_SEQLENS_K;
    } else {
        if (d->varlen_batch != 0) return ATTN_ERR_VARLEN_BATCH;
        if (d->seqlens_q && !attn__lengths_ok(d->seqlens_q, q->batch, q->seq)) return ATTN_ERR_SEQLENS_Q;
        if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, q->batch, k->seq)) return ATTN_ERR_SEQLENS_K;
    }
    if (d->alibi_slopes)
        for (h = 0; h < q->heads; ++h) if (!isfinite(d->alibi_slopes[h])) return ATTN_ERR_ALIBI;
    if (d->bias.data) {
        if (d->bias.batch != 1 && d->bias.batch != q->batch) return ATTN_ERR_BIAS_BATCH;
        if (d->bias.heads != 1 && d->bias.heads != q->heads) return ATTN_ERR_BIAS_HEADS;
    }
    if ((s = attn__make_view(q, &P->q)) != ATTN_OK || (s = attn__make_view(k, &P->k)) != ATTN_OK ||
        (s = attn__make_view(v, &P->v)) != ATTN_OK) return s;
    if (out && (s = attn__make_view(out, &P->out)) != ATTN_OK) return s;
    {   /* lse [B, Hq, Sq] and the work decomposition must be indexable */
        size_t n;
        if (!attn__mul_size((size_t)q->batch, (size_t)q->heads, &n) || !attn__mul_size(n, (size_t)q->seq, &n) ||
            n > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
    }
    P->bias = d->bias.data;
    if (P->bias) {                              /* bias [Bb, Hb, Sq, Sk], seq_k contiguous */
        size_t span = 0;
        P->bias_batch = d->bias.batch; P->bias_heads = d->bias.heads;
        if (d->bias.stride_batch == 0 && d->bias.stride_head == 0 && d->bias.stride_q == 0) {
            size_t sq = (size_t)k->seq, sh, sb;
            if (!attn__mul_size(sq, (size_t)q->seq, &sh) || !attn__mul_size(sh, (size_t)d->bias.heads, &sb) ||
                sb > (size_t)PTRDIFF_MAX) return ATTN_ERR_OVERFLOW;
            P->bias_sq = (ptrdiff_t)sq; P->bias_sh = (ptrdiff_t)sh; P->bias_sb = (ptrdiff_t)sb;
        } else {
            P->bias_sq = d->bias.stride_q; P->bias_sh = d->bias.stride_head; P->bias_sb = d->bias.stride_batch;
        }
        if (!attn__span_add(&span, 1, k->seq) || !attn__span_add(&span, P->bias_sq, q->seq) ||
            !attn__span_add(&span, P->bias_sh, d->bias.heads) || !attn__span_add(&span, P->bias_sb, d->bias.batch) ||
            span > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
    }
    P->scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)q->dim);
    P->softcap = d->softcap;
    P->causal = d->causal; P->window_left = d->window_left; P->window_right = d->window_right;
    P->dilation = d->dilation > 1 ? d->dilation : 1;
    P->sink = d->sink_tokens; P->global = d->global_tokens;
    P->groups = q->heads / k->heads;
    P->n_seqs = varlen ? d->varlen_batch : q->batch;
    P->seqlens_q = d->seqlens_q; P->seqlens_k = d->seqlens_k;
    P->cu_q = varlen ? d->cu_seqlens_q : NULL; P->cu_k = varlen ? d->cu_seqlens_k : NULL;
    P->alibi = d->alibi_slopes;
    P->n_threads = attn__resolve_threads(d);
    P->no_amx = d->no_amx;
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.5 micro-kernels: scalar, AVX2+FMA and AVX-512 chosen at run time, NEON on AArch64
   ---------------------------------------------------------------------------------------
   Exact attention works on tiles of ATTN__BQ "rows" (a row = one query position of one query
   head; the heads of a GQA group share a tile so K/V are read once for all of them) against
   chunks of ATTN__BK keys. Layouts, chosen so no kernel transposes K or V:
     QT  [D][BQ]    the tile's queries transposed, pre-multiplied by scale (packed once a tile)
     S   [BK][BQ]   scores, then probabilities: one key per line, rows across SIMD lanes
     acc [BQ][ldo]  unnormalised output rows
     K, V rows are read in place (f32) or from a converted copy (f16/bf16).
   So Q.K^T broadcasts K[j][d] against QT's lanes, P.V broadcasts P[j][r] against V's row, and
   the online softmax runs down the key axis with one lane per row: no horizontal reductions. */
#define ATTN__BQ 64          /* rows per tile; a multiple of 16 */
#define ATTN__BK 64          /* keys per chunk */
#define ATTN__BK_DECODE 8    /* keys per chunk when decoding walks every KV head at once */

/* What the softmax stage needs per row of the tile ("lane"). */
typedef struct attn__smx {
    float *m, *l, *alpha;               /* running max, running sum, this chunk's rescale factor */
    const float *pos, *slope;           /* query position (ALiBi distance) and ALiBi slope */
    const int32_t *lo, *hi, *cap;       /* key j visible iff j <= cap && (j < pre || lo <= j <= hi) */
    int pre;                            /* sinks / global keys: visible to all (under cap) */
    float softcap;                      /* 0: off */
    int alibi, mask;                    /* apply ALiBi; apply the lo/hi/cap mask */
} attn__smx;

/* One implementation of the four kernels. */
typedef struct attn__isa {
    const char *name;
    /* S[j][r] = sum_d K[j][d] QT[d][r], j < nk, r < nlanes (a multiple of 16) */
    void (*qk)(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S);
    /* the same for n <= 16 rows from row-major QR [16][ldq]; NULL: use qk */
    void (*qk_narrow)(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq, int n, int D, float *S);
    /* softcap, ALiBi, mask, then online softmax of S's nk lines: S becomes P, m/l/alpha updated */
    void (*softmax)(float *S, int nk, int nlanes, int c0, const attn__smx *X);
    /* acc[r][c] = alpha[r] acc[r][c] + sum_j S[j][r] V[j][c] for r < nrows; may also compute
       rows up to the next multiple of 8 (acc has ATTN__BQ rows) */
    void (*pv)(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
               const float *alpha, float *acc, size_t ldo);
    /* n elements of dtype t -> fp32, times mul */
    void (*load)(const void *src, attn_dtype t, float *dst, int n, float mul);
} attn__isa;

/* --- scalar: always compiled, the reference the SIMD kernels are tested against --------- */
static void attn__qk_scalar(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S) {
    int j, d, r;
    for (j = 0; j < nk; ++j) {
        float *s = S + (size_t)j * ATTN__BQ;
        const float *kj = K + (ptrdiff_t)j * ldk;
        for (r = 0; r < nlanes; ++r) s[r] = 0.0f;
        for (d = 0; d < D; ++d) {
            const float kd = kj[d], *qt = QT + (size_t)d * ATTN__BQ;
            for (r = 0; r < nlanes; ++r) s[r] += kd * qt[r];
        }
    }
}

/* Narrow tiles (decoding): one dot product per (key, query row); lanes n..15 get 0. */
static void attn__qk_narrow_scalar(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq, int n, int D,
                                   float *S) {
    int j, d, r;
    for (j = 0; j < nk; ++j) {
        const float *kj = K + (ptrdiff_t)j * ldk;
        float *s = S + (size_t)j * ATTN__BQ;
        for (r = 0; r < 16; ++r) {
            const float *q = QR + (size_t)r * ldq;
            float a = 0.0f;
            if (r < n)
                for (d = 0; d < D; ++d) a += kj[d] * q[d];
            s[r] = a;
        }
    }
}

/* Shared by every ISA: the visibility rule for one lane, as the SIMD code evaluates it. */
static int attn__lane_visible(const attn__smx *X, int r, int j) {
    return j <= X->cap[r] && (j < X->pre || (j >= X->lo[r] && j <= X->hi[r]));
}

static void attn__softmax_scalar(float *S, int nk, int nlanes, int c0, const attn__smx *X) {
    int r, j;
    for (r = 0; r < nlanes; ++r) {
        float mx = -INFINITY, mnew, msafe, alpha, sum = 0.0f;
        for (j = 0; j < nk; ++j) {
            float s = S[(size_t)j * ATTN__BQ + r];
            if (X->softcap > 0.0f) s = X->softcap * tanhf(s / X->softcap);
            if (X->alibi) s -= X->slope[r] * fabsf(X->pos[r] - (float)(c0 + j));
            if (X->mask && !attn__lane_visible(X, r, c0 + j)) s = -INFINITY;
            S[(size_t)j * ATTN__BQ + r] = s;
            mx = s > mx ? s : mx;
        }
        mnew = ATTN__MAX(X->m[r], mx);
        msafe = mnew == -INFINITY ? 0.0f : mnew;      /* a row with nothing visible yet stays 0 */
        alpha = expf(X->m[r] - msafe);
        for (j = 0; j < nk; ++j) {
            float p = expf(S[(size_t)j * ATTN__BQ + r] - msafe);
            S[(size_t)j * ATTN__BQ + r] = p;
            sum += p;
        }
        X->l[r] = X->l[r] * alpha + sum;
        X->m[r] = mnew;
        X->alpha[r] = alpha;
    }
}

static void attn__pv_scalar(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
                            const float *alpha, float *acc, size_t ldo) {
    int r, j, c;
    for (r = 0; r < nrows; ++r) {
        float *o = acc + (size_t)r * ldo;
        const float a = alpha[r];
        for (c = 0; c < Dv; ++c) o[c] *= a;
        for (j = 0; j < nk; ++j) {
            const float p = S[(size_t)j * ATTN__BQ + r], *vj = V + (ptrdiff_t)j * ldv;
            if (p == 0.0f) continue;
            for (c = 0; c < Dv; ++c) o[c] += p * vj[c];
        }
    }
}

static const attn__isa attn__isa_scalar = {
    "scalar", attn__qk_scalar, attn__qk_narrow_scalar, attn__softmax_scalar, attn__pv_scalar, attn__load_row
};

/* --- x86 SIMD: compiled with target attributes so one binary serves every x86 CPU -------- */
#if !defined(ATTN_NO_SIMD) && (defined(__x86_64__) || defined(__i386__) || defined(_M_X64)) && \
    (defined(__GNUC__) || defined(__clang__) || defined(__AVX512F__))
#define ATTN__X86_SIMD 1
#include <immintrin.h>
#if defined(__GNUC__) || defined(__clang__)
#define ATTN__T512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define ATTN__T256 __attribute__((target("avx2,fma,f16c")))
#define ATTN__INLINE __attribute__((always_inline)) inline
#else
#define ATTN__T512
#define ATTN__T256
#define ATTN__INLINE __forceinline
#endif

/* exp(x) on 16 lanes, Cephes' expf: |rel err| < 2 ulp on [-87, 88]; 0 below -104; NaN kept.
   Also returns (via q, n) the pieces expm1 needs: exp(x) = 2^n (1 + q). */
ATTN__T512 static ATTN__INLINE __m512 attn__exp_parts512(__m512 x, __m512 *q_out, __m512 *n_out) {
    __m512 n, r, r2, p, q;
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), _mm512_min_ps(_mm512_set1_ps(88.5f), x));
    n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    r2 = _mm512_mul_ps(r, r);
    q = _mm512_fmadd_ps(p, r2, r);                      /* exp(r) - 1, no cancellation */
    if (q_out) { *q_out = q; *n_out = n; }
    return _mm512_scalef_ps(_mm512_add_ps(q, _mm512_set1_ps(1.0f)), n);
}
ATTN__T512 static ATTN__INLINE __m512 attn__exp512(__m512 x) { return attn__exp_parts512(x, NULL, NULL); }

/* tanh(x) = -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of x; expm1 = 2^n q + (2^n - 1). */
ATTN__T512 static ATTN__INLINE __m512 attn__tanh512(__m512 x) {
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    __m512 ax = _mm512_castsi512_ps(_mm512_andnot_si512(_mm512_castps_si512(sign), _mm512_castps_si512(x)));
    __m512 q, n, two_n, em, t;
    attn__exp_parts512(_mm512_mul_ps(ax, _mm512_set1_ps(-2.0f)), &q, &n);
    two_n = _mm512_scalef_ps(_mm512_set1_ps(1.0f), n);
    em = _mm512_fmadd_ps(two_n, q, _mm512_sub_ps(two_n, _mm512_set1_ps(1.0f)));
    t = _mm512_div_ps(_mm512_sub_ps(_mm512_setzero_ps(), em), _mm512_add_ps(em, _mm512_set1_ps(2.0f)));
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
                               _mm512_and_si512(_mm512_castps_si512(x), _mm512_castps_si512(sign))));
}

/* Q.K^T register tiles: 6 keys x 64 lanes (24 zmm accumulators) for full tiles, 8 keys x 16
   lanes for narrow ones (decoding: a GQA group's few rows), 1 key for the tails. Written out
   by macro so the accumulators stay in registers whatever the compiler's unrolling. */
#define ATTN__QK6_ROW(x) b = _mm512_set1_ps(k##x[d]); \
    c##x##0 = _mm512_fmadd_ps(b, q0, c##x##0); c##x##1 = _mm512_fmadd_ps(b, q1, c##x##1); \
    c##x##2 = _mm512_fmadd_ps(b, q2, c##x##2); c##x##3 = _mm512_fmadd_ps(b, q3, c##x##3);
#define ATTN__QK6_STORE(x) _mm512_store_ps(S + x * ATTN__BQ, c##x##0); _mm512_store_ps(S + x * ATTN__BQ + 16, c##x##1); \
    _mm512_store_ps(S + x * ATTN__BQ + 32, c##x##2); _mm512_store_ps(S + x * ATTN__BQ + 48, c##x##3);
ATTN__T512 static void attn__qk512_6x64(const float *K, ptrdiff_t ldk, const float *QT, int D, float *S) {
    const float *k0 = K, *k1 = K + ldk, *k2 = K + 2 * ldk, *k3 = K + 3 * ldk, *k4 = K + 4 * ldk, *k5 = K + 5 * ldk;
    __m512 c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
           c40, c41, c42, c43, c50, c51, c52, c53, b;
    int d;
    c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = _mm512_setzero_ps();
    c30 = c31 = c32 = c33 = c40 = c41 = c42 = c43 = c50 = c51 = c52 = c53 = _mm512_setzero_ps();
    for (d = 0; d < D; ++d) {
        const float *qt = QT + (size_t)d * ATTN__BQ;
        const __m512 q0 = _mm512_load_ps(qt), q1 = _mm512_load_ps(qt + 16), q2 = _mm512_load_ps(qt + 32),
                     q3 = _mm512_load_ps(qt + 48);
        ATTN__QK6_ROW(0) ATTN__QK6_ROW(1) ATTN__QK6_ROW(2) ATTN__QK6_ROW(3) ATTN__QK6_ROW(4) ATTN__QK6_ROW(5)
    }
    ATTN__QK6_STORE(0) ATTN__QK6_STORE(1) ATTN__QK6_STORE(2) ATTN__QK6_STORE(3) ATTN__QK6_STORE(4) ATTN__QK6_STORE(5)
}
ATTN__T512 static void attn__qk512_1x64(const float *K, const float *QT, int D, float *S) {
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
    int d;
    for (d = 0; d < D; ++d) {
        const float *qt = QT + (size_t)d * ATTN__BQ;
        const __m512 b = _mm512_set1_ps(K[d]);
        c0 = _mm512_fmadd_ps(b, _mm512_load_ps(qt), c0);      c1 = _mm512_fmadd_ps(b, _mm512_load_ps(qt + 16), c1);
        c2 = _mm512_fmadd_ps(b, _mm512_load_ps(qt + 32), c2); c3 = _mm512_fmadd_ps(b, _mm512_load_ps(qt + 48), c3);
    }
    _mm512_store_ps(S, c0); _mm512_store_ps(S + 16, c1); _mm512_store_ps(S + 32, c2); _mm512_store_ps(S + 48, c3);
}
#define ATTN__QK8_ROW(x) c##x = _mm512_fmadd_ps(_mm512_set1_ps(k##x[d]), q, c##x);
ATTN__T512 static void attn__qk512_8x16(const float *K, ptrdiff_t ldk, const float *QT, int D, float *S) {
    const float *k0 = K, *k1 = K + ldk, *k2 = K + 2 * ldk, *k3 = K + 3 * ldk, *k4 = K + 4 * ldk, *k5 = K + 5 * ldk,
                *k6 = K + 6 * ldk, *k7 = K + 7 * ldk;
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    int d;
    for (d = 0; d < D; ++d) {
        const __m512 q = _mm512_load_ps(QT + (size_t)d * ATTN__BQ);
        ATTN__QK8_ROW(0) ATTN__QK8_ROW(1) ATTN__QK8_ROW(2) ATTN__QK8_ROW(3)
        ATTN__QK8_ROW(4) ATTN__QK8_ROW(5) ATTN__QK8_ROW(6) ATTN__QK8_ROW(7)
    }
    _mm512_store_ps(S, c0); _mm512_store_ps(S + ATTN__BQ, c1); _mm512_store_ps(S + 2 * ATTN__BQ, c2);
    _mm512_store_ps(S + 3 * ATTN__BQ, c3); _mm512_store_ps(S + 4 * ATTN__BQ, c4); _mm512_store_ps(S + 5 * ATTN__BQ, c5);
    _mm512_store_ps(S + 6 * ATTN__BQ, c6); _mm512_store_ps(S + 7 * ATTN__BQ, c7);
}
ATTN__T512 static void attn__qk512_1x16(const float *K, const float *QT, int D, float *S) {
    __m512 c0 = _mm512_setzero_ps(), c1 = c0;
    int d;
    for (d = 0; d + 2 <= D; d += 2) {
        c0 = _mm512_fmadd_ps(_mm512_set1_ps(K[d]), _mm512_load_ps(QT + (size_t)d * ATTN__BQ), c0);
        c1 = _mm512_fmadd_ps(_mm512_set1_ps(K[d + 1]), _mm512_load_ps(QT + (size_t)(d + 1) * ATTN__BQ), c1);
    }
    if (d < D) c0 = _mm512_fmadd_ps(_mm512_set1_ps(K[d]), _mm512_load_ps(QT + (size_t)d * ATTN__BQ), c0);
    _mm512_store_ps(S, _mm512_add_ps(c0, c1));
}

/* First n lanes set (n clamped to [0, 16]). */
static __mmask16 attn__mask16(int n) { return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u); }

/* Lane i of the result = sum of the 16 lanes of v[i]: a transposing reduction tree. */
ATTN__T512 static ATTN__INLINE __m512 attn__hsum16x16(const __m512 *v) {
    __m512 u[8], x[4], y0, y1, s01, s23;
    int i;
    for (i = 0; i < 8; ++i)
        u[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
    for (i = 0; i < 4; ++i)
        x[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u[2 * i]), _mm512_castps_pd(u[2 * i + 1]))),
                             _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u[2 * i]), _mm512_castps_pd(u[2 * i + 1]))));
    y0 = _mm512_shuffle_f32x4(x[0], x[1], 0x88); y1 = _mm512_shuffle_f32x4(x[0], x[1], 0xdd); s01 = _mm512_add_ps(y0, y1);
    y0 = _mm512_shuffle_f32x4(x[2], x[3], 0x88); y1 = _mm512_shuffle_f32x4(x[2], x[3], 0xdd); s23 = _mm512_add_ps(y0, y1);
    return _mm512_add_ps(_mm512_shuffle_f32x4(s01, s23, 0x88), _mm512_shuffle_f32x4(s01, s23, 0xdd));
}

/* Narrow tiles (at most 16 rows: decoding, a GQA group): dot products of whole K rows with
   Q rows (QR [16][ldq], zero rows past n) instead of lane broadcasts, so no SIMD lane idles.
   R rows (a power of two) x 16/R keys make 16 accumulators, reduced by attn__hsum16x16;
   keys past nk read row j again and are not stored. */
#define ATTN__NQ_FMA(i) a##i = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, K + (ptrdiff_t)kj[(i) / R] * ldk + d), \
                                               _mm512_load_ps(QR + (size_t)((i) % R) * ldq + d), a##i);
ATTN__T512 static ATTN__INLINE void attn__qk512_narrow_r(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq,
                                                         int D, float *S, const int R) {
    const int KJ = 16 / R;
    const __mmask16 tail = attn__mask16(D % 16 ? D % 16 : 16);
    int j, d, kk;
    for (j = 0; j < nk; j += KJ) {
        const int kn = ATTN__MIN(KJ, nk - j);
        int kj[16];
        __m512 a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, v[16];
        float tmp[16];
        for (kk = 0; kk < KJ; ++kk) kj[kk] = kk < kn ? j + kk : j;
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = a10 = a11 = a12 = a13 = a14 = a15 = _mm512_setzero_ps();
        for (d = 0; d < D; d += 16) {
            const __mmask16 m = d + 16 <= D ? (__mmask16)0xffff : tail;
            ATTN__NQ_FMA(0) ATTN__NQ_FMA(1) ATTN__NQ_FMA(2) ATTN__NQ_FMA(3) ATTN__NQ_FMA(4) ATTN__NQ_FMA(5)
            ATTN__NQ_FMA(6) ATTN__NQ_FMA(7) ATTN__NQ_FMA(8) ATTN__NQ_FMA(9) ATTN__NQ_FMA(10) ATTN__NQ_FMA(11)
            ATTN__NQ_FMA(12) ATTN__NQ_FMA(13) ATTN__NQ_FMA(14) ATTN__NQ_FMA(15)
        }
        v[0] = a0; v[1] = a1; v[2] = a2; v[3] = a3; v[4] = a4; v[5] = a5; v[6] = a6; v[7] = a7;
        v[8] = a8; v[9] = a9; v[10] = a10; v[11] = a11; v[12] = a12; v[13] = a13; v[14] = a14; v[15] = a15;
        _mm512_storeu_ps(tmp, attn__hsum16x16(v));
        for (kk = 0; kk < kn; ++kk) {
            memcpy(S + (size_t)(j + kk) * ATTN__BQ, tmp + kk * R, sizeof(float) * (size_t)R);
            memset(S + (size_t)(j + kk) * ATTN__BQ + R, 0, sizeof(float) * (size_t)(16 - R));
        }
    }
}
ATTN__T512 static void attn__qk512_narrow(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq,
                                          int n, int D, float *S) {
    if (n <= 1) attn__qk512_narrow_r(K, ldk, nk, QR, ldq, D, S, 1);
    else if (n <= 2) attn__qk512_narrow_r(K, ldk, nk, QR, ldq, D, S, 2);
    else if (n <= 4) attn__qk512_narrow_r(K, ldk, nk, QR, ldq, D, S, 4);
    else if (n <= 8) attn__qk512_narrow_r(K, ldk, nk, QR, ldq, D, S, 8);
    else attn__qk512_narrow_r(K, ldk, nk, QR, ldq, D, S, 16);
}

ATTN__T512 static void attn__qk_avx512(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S) {
    int j = 0;
    if (nlanes <= 16) {
        for (; j + 8 <= nk; j += 8) attn__qk512_8x16(K + (ptrdiff_t)j * ldk, ldk, QT, D, S + (size_t)j * ATTN__BQ);
        for (; j < nk; ++j) attn__qk512_1x16(K + (ptrdiff_t)j * ldk, QT, D, S + (size_t)j * ATTN__BQ);
    } else {        /* lanes past nlanes hold zeros in QT: computing all 64 is harmless */
        for (; j + 6 <= nk; j += 6) attn__qk512_6x64(K + (ptrdiff_t)j * ldk, ldk, QT, D, S + (size_t)j * ATTN__BQ);
        for (; j < nk; ++j) attn__qk512_1x64(K + (ptrdiff_t)j * ldk, QT, D, S + (size_t)j * ATTN__BQ);
    }
}

ATTN__T512 static void attn__softmax_avx512(float *S, int nk, int nlanes, int c0, const attn__smx *X) {
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    const __m512 cap = _mm512_set1_ps(X->softcap), inv_cap = _mm512_set1_ps(X->softcap > 0 ? 1.0f / X->softcap : 0.0f);
    const int transform = X->softcap > 0.0f || X->alibi || X->mask;
    int r, j;
    for (r = 0; r < nlanes; r += 16) {
        const __m512 mold = _mm512_loadu_ps(X->m + r);
        const __m512 pos = _mm512_loadu_ps(X->pos + r), slope = _mm512_loadu_ps(X->slope + r);
        const __m512i lo = _mm512_loadu_si512(X->lo + r), hi = _mm512_loadu_si512(X->hi + r),
                      capi = _mm512_loadu_si512(X->cap + r);
        __m512 mx = ninf, mnew, msafe, alpha, sum = zero;
        float *s = S + r;
        if (transform) {
            for (j = 0; j < nk; ++j) {
                __m512 v = _mm512_load_ps(s + (size_t)j * ATTN__BQ);
                if (X->softcap > 0.0f) v = _mm512_mul_ps(cap, attn__tanh512(_mm512_mul_ps(v, inv_cap)));
                if (X->alibi) {
                    __m512 dist = _mm512_sub_ps(pos, _mm512_set1_ps((float)(c0 + j)));
                    dist = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(dist), _mm512_set1_epi32(0x7fffffff)));
                    v = _mm512_fnmadd_ps(slope, dist, v);
                }
                if (X->mask) {
                    const __m512i jv = _mm512_set1_epi32(c0 + j);
                    __mmask16 k = _mm512_cmple_epi32_mask(jv, capi);
                    if (c0 + j >= X->pre) k &= _mm512_cmple_epi32_mask(lo, jv) & _mm512_cmple_epi32_mask(jv, hi);
                    v = _mm512_mask_blend_ps(k, ninf, v);
                }
                _mm512_store_ps(s + (size_t)j * ATTN__BQ, v);
                mx = _mm512_max_ps(mx, v);
            }
        } else {
            for (j = 0; j < nk; ++j) mx = _mm512_max_ps(mx, _mm512_load_ps(s + (size_t)j * ATTN__BQ));
        }
        mnew = _mm512_max_ps(mold, mx);
        msafe = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ), mnew, zero);
        alpha = attn__exp512(_mm512_sub_ps(mold, msafe));
        for (j = 0; j < nk; ++j) {
            const __m512 p = attn__exp512(_mm512_sub_ps(_mm512_load_ps(s + (size_t)j * ATTN__BQ), msafe));
            _mm512_store_ps(s + (size_t)j * ATTN__BQ, p);
            sum = _mm512_add_ps(sum, p);
        }
        _mm512_storeu_ps(X->l + r, _mm512_fmadd_ps(_mm512_loadu_ps(X->l + r), alpha, sum));
        _mm512_storeu_ps(X->m + r, mnew);
        _mm512_storeu_ps(X->alpha + r, alpha);
    }
}


/* P.V register tile: 8 rows x 32 columns (16 zmm accumulators), alpha rescale folded in;
   masked loads/stores cover a head dim that is not a multiple of 32. */
#define ATTN__PV_LOAD(r) al = _mm512_set1_ps(alpha[r0 + r]); o = acc + (size_t)(r0 + r) * ldo + c; \
    a##r##0 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m0, o)); a##r##1 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m1, o + 16));
#define ATTN__PV_FMA(r) p = _mm512_set1_ps(pj[r]); a##r##0 = _mm512_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm512_fmadd_ps(p, v1, a##r##1);
#define ATTN__PV_STORE(r) o = acc + (size_t)(r0 + r) * ldo + c; \
    _mm512_mask_storeu_ps(o, m0, a##r##0); _mm512_mask_storeu_ps(o + 16, m1, a##r##1);
#define ATTN__PV4_LOAD(r) al = _mm512_set1_ps(alpha[r]); o = acc + (size_t)r * ldo + c; \
    a##r##0 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m0, o));      a##r##1 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m1, o + 16)); \
    a##r##2 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m2, o + 32)); a##r##3 = _mm512_mul_ps(al, _mm512_maskz_loadu_ps(m3, o + 48));
#define ATTN__PV4_FMA(r) p = _mm512_set1_ps(pj[r]); \
    a##r##0 = _mm512_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm512_fmadd_ps(p, v1, a##r##1); \
    a##r##2 = _mm512_fmadd_ps(p, v2, a##r##2); a##r##3 = _mm512_fmadd_ps(p, v3, a##r##3);
#define ATTN__PV4_STORE(r) o = acc + (size_t)r * ldo + c; \
    _mm512_mask_storeu_ps(o, m0, a##r##0);      _mm512_mask_storeu_ps(o + 16, m1, a##r##1); \
    _mm512_mask_storeu_ps(o + 32, m2, a##r##2); _mm512_mask_storeu_ps(o + 48, m3, a##r##3);
/* 4 rows x 64 columns, for narrow tiles (a decoding step's GQA group). */
ATTN__T512 static void attn__pv512_4rows(const float *S, int nk, const float *V, ptrdiff_t ldv, int Dv,
                                         const float *alpha, float *acc, size_t ldo) {
    int c, j;
    for (c = 0; c < Dv; c += 64) {
        const __mmask16 m0 = attn__mask16(Dv - c), m1 = attn__mask16(Dv - c - 16), m2 = attn__mask16(Dv - c - 32),
                        m3 = attn__mask16(Dv - c - 48);
        __m512 a00, a01, a02, a03, a10, a11, a12, a13, a20, a21, a22, a23, a30, a31, a32, a33, al, p;
        float *o;
        ATTN__PV4_LOAD(0) ATTN__PV4_LOAD(1) ATTN__PV4_LOAD(2) ATTN__PV4_LOAD(3)
        for (j = 0; j < nk; ++j) {
            const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ;
            const __m512 v0 = _mm512_maskz_loadu_ps(m0, vj), v1 = _mm512_maskz_loadu_ps(m1, vj + 16),
                         v2 = _mm512_maskz_loadu_ps(m2, vj + 32), v3 = _mm512_maskz_loadu_ps(m3, vj + 48);
            ATTN__PV4_FMA(0) ATTN__PV4_FMA(1) ATTN__PV4_FMA(2) ATTN__PV4_FMA(3)
        }
        ATTN__PV4_STORE(0) ATTN__PV4_STORE(1) ATTN__PV4_STORE(2) ATTN__PV4_STORE(3)
    }
}
ATTN__T512 static void attn__pv_avx512(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
                                       const float *alpha, float *acc, size_t ldo) {
    int r0, c, j;
    if (nrows <= 4) { attn__pv512_4rows(S, nk, V, ldv, Dv, alpha, acc, ldo); return; }
    for (r0 = 0; r0 < nrows; r0 += 8)
        for (c = 0; c < Dv; c += 32) {
            const __mmask16 m0 = attn__mask16(Dv - c), m1 = attn__mask16(Dv - c - 16);
            __m512 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51, a60, a61, a70, a71, al, p;
            float *o;
            ATTN__PV_LOAD(0) ATTN__PV_LOAD(1) ATTN__PV_LOAD(2) ATTN__PV_LOAD(3)
            ATTN__PV_LOAD(4) ATTN__PV_LOAD(5) ATTN__PV_LOAD(6) ATTN__PV_LOAD(7)
            for (j = 0; j < nk; ++j) {
                const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ + r0;
                const __m512 v0 = _mm512_maskz_loadu_ps(m0, vj), v1 = _mm512_maskz_loadu_ps(m1, vj + 16);
                ATTN__PV_FMA(0) ATTN__PV_FMA(1) ATTN__PV_FMA(2) ATTN__PV_FMA(3)
                ATTN__PV_FMA(4) ATTN__PV_FMA(5) ATTN__PV_FMA(6) ATTN__PV_FMA(7)
            }
            ATTN__PV_STORE(0) ATTN__PV_STORE(1) ATTN__PV_STORE(2) ATTN__PV_STORE(3)
            ATTN__PV_STORE(4) ATTN__PV_STORE(5) ATTN__PV_STORE(6) ATTN__PV_STORE(7)
        }
}

ATTN__T512 static void attn__load_avx512(const void *src, attn_dtype t, float *dst, int n, float mul) {
    const __m512 mv = _mm512_set1_ps(mul);
    int i = 0;
    if (t == ATTN_F32) {
        const float *s = (const float *)src;
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, _mm512_mul_ps(mv, _mm512_loadu_ps(s + i)));
    } else if (t == ATTN_F16) {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 16 <= n; i += 16)
            _mm512_storeu_ps(dst + i, _mm512_mul_ps(mv, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + i)))));
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 16 <= n; i += 16) {
            const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(s + i)));
            _mm512_storeu_ps(dst + i, _mm512_mul_ps(mv, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16))));
        }
    }
    if (i < n) attn__load_row((const char *)src + (size_t)i * attn__dtype_size(t), t, dst + i, n - i, mul);
}

static const attn__isa attn__isa_avx512 = {
    "avx512", attn__qk_avx512, attn__qk512_narrow, attn__softmax_avx512, attn__pv_avx512, attn__load_avx512
};

/* --- AVX2 + FMA + F16C: the same kernels on 8 lanes --------------------------------------- */

/* exp on 8 lanes (same polynomial as the AVX-512 one); 2^n built in the exponent field, so
   inputs below -87.3 give exactly 0. Returns exp(r) - 1 and n through q/n when asked. */
ATTN__T256 static ATTN__INLINE __m256 attn__exp_parts256(__m256 x, __m256 *q_out, __m256 *n_out) {
    __m256 n, r, r2, p, q, two_n;
    const __m256 under = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3f), _CMP_LT_OQ);
    x = _mm256_max_ps(_mm256_set1_ps(-87.3f), _mm256_min_ps(_mm256_set1_ps(88.37f), x));
    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    r2 = _mm256_mul_ps(r, r);
    q = _mm256_fmadd_ps(p, r2, r);
    two_n = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
    if (q_out) { *q_out = q; *n_out = two_n; }
    return _mm256_andnot_ps(under, _mm256_fmadd_ps(two_n, q, two_n));
}
ATTN__T256 static ATTN__INLINE __m256 attn__exp256(__m256 x) { return attn__exp_parts256(x, NULL, NULL); }

ATTN__T256 static ATTN__INLINE __m256 attn__tanh256(__m256 x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 q, two_n, em, t;
    attn__exp_parts256(_mm256_mul_ps(_mm256_andnot_ps(sign, x), _mm256_set1_ps(-2.0f)), &q, &two_n);
    em = _mm256_fmadd_ps(two_n, q, _mm256_sub_ps(two_n, _mm256_set1_ps(1.0f)));     /* expm1(-2|x|) */
    t = _mm256_div_ps(_mm256_sub_ps(_mm256_setzero_ps(), em), _mm256_add_ps(em, _mm256_set1_ps(2.0f)));
    return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

/* Q.K^T: 6 keys x 16 lanes (12 ymm accumulators) per step, lane blocks of 16. */
#define ATTN__QK6Y_ROW(x) b = _mm256_broadcast_ss(k##x + d); \
    c##x##0 = _mm256_fmadd_ps(b, q0, c##x##0); c##x##1 = _mm256_fmadd_ps(b, q1, c##x##1);
#define ATTN__QK6Y_STORE(x) _mm256_store_ps(S + x * ATTN__BQ, c##x##0); _mm256_store_ps(S + x * ATTN__BQ + 8, c##x##1);
ATTN__T256 static void attn__qk256_6x16(const float *K, ptrdiff_t ldk, const float *QT, int D, float *S) {
    const float *k0 = K, *k1 = K + ldk, *k2 = K + 2 * ldk, *k3 = K + 3 * ldk, *k4 = K + 4 * ldk, *k5 = K + 5 * ldk;
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51, b;
    int d;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    for (d = 0; d < D; ++d) {
        const __m256 q0 = _mm256_load_ps(QT + (size_t)d * ATTN__BQ), q1 = _mm256_load_ps(QT + (size_t)d * ATTN__BQ + 8);
        ATTN__QK6Y_ROW(0) ATTN__QK6Y_ROW(1) ATTN__QK6Y_ROW(2) ATTN__QK6Y_ROW(3) ATTN__QK6Y_ROW(4) ATTN__QK6Y_ROW(5)
    }
    ATTN__QK6Y_STORE(0) ATTN__QK6Y_STORE(1) ATTN__QK6Y_STORE(2) ATTN__QK6Y_STORE(3) ATTN__QK6Y_STORE(4) ATTN__QK6Y_STORE(5)
}
ATTN__T256 static void attn__qk256_1x16(const float *K, const float *QT, int D, float *S) {
    __m256 c0 = _mm256_setzero_ps(), c1 = c0;
    int d;
    for (d = 0; d < D; ++d) {
        const __m256 b = _mm256_broadcast_ss(K + d);
        c0 = _mm256_fmadd_ps(b, _mm256_load_ps(QT + (size_t)d * ATTN__BQ), c0);
        c1 = _mm256_fmadd_ps(b, _mm256_load_ps(QT + (size_t)d * ATTN__BQ + 8), c1);
    }
    _mm256_store_ps(S, c0); _mm256_store_ps(S + 8, c1);
}
ATTN__T256 static void attn__qk_avx2(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S) {
    int r, j;
    for (r = 0; r < nlanes; r += 16) {
        for (j = 0; j + 6 <= nk; j += 6) attn__qk256_6x16(K + (ptrdiff_t)j * ldk, ldk, QT + r, D, S + (size_t)j * ATTN__BQ + r);
        for (; j < nk; ++j) attn__qk256_1x16(K + (ptrdiff_t)j * ldk, QT + r, D, S + (size_t)j * ATTN__BQ + r);
    }
}

ATTN__T256 static void attn__softmax_avx2(float *S, int nk, int nlanes, int c0, const attn__smx *X) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    const __m256 cap = _mm256_set1_ps(X->softcap), inv_cap = _mm256_set1_ps(X->softcap > 0 ? 1.0f / X->softcap : 0.0f);
    const int transform = X->softcap > 0.0f || X->alibi || X->mask;
    int r, j;
    for (r = 0; r < nlanes; r += 8) {
        const __m256 mold = _mm256_loadu_ps(X->m + r);
        const __m256 pos = _mm256_loadu_ps(X->pos + r), slope = _mm256_loadu_ps(X->slope + r);
        const __m256i one = _mm256_set1_epi32(1);
        const __m256i lo1 = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(X->lo + r)), one);
        const __m256i hi1 = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(X->hi + r)), one);
        const __m256i cap1 = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(X->cap + r)), one);
        __m256 mx = ninf, mnew, msafe, alpha, sum = zero;
        float *s = S + r;
        if (transform) {
            for (j = 0; j < nk; ++j) {
                __m256 v = _mm256_load_ps(s + (size_t)j * ATTN__BQ);
                if (X->softcap > 0.0f) v = _mm256_mul_ps(cap, attn__tanh256(_mm256_mul_ps(v, inv_cap)));
                if (X->alibi) {
                    const __m256 dist = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(pos, _mm256_set1_ps((float)(c0 + j))));
                    v = _mm256_fnmadd_ps(slope, dist, v);
                }
                if (X->mask) {       /* j <= cap  &&  (j < pre || (lo <= j && j <= hi)) */
                    const __m256i jv = _mm256_set1_epi32(c0 + j);
                    __m256i k = _mm256_cmpgt_epi32(cap1, jv);
                    if (c0 + j >= X->pre) k = _mm256_and_si256(k, _mm256_and_si256(_mm256_cmpgt_epi32(jv, lo1), _mm256_cmpgt_epi32(hi1, jv)));
                    v = _mm256_blendv_ps(ninf, v, _mm256_castsi256_ps(k));
                }
                _mm256_store_ps(s + (size_t)j * ATTN__BQ, v);
                mx = _mm256_max_ps(mx, v);
            }
        } else {
            for (j = 0; j < nk; ++j) mx = _mm256_max_ps(mx, _mm256_load_ps(s + (size_t)j * ATTN__BQ));
        }
        mnew = _mm256_max_ps(mold, mx);
        msafe = _mm256_blendv_ps(mnew, zero, _mm256_cmp_ps(mnew, ninf, _CMP_EQ_OQ));
        alpha = attn__exp256(_mm256_sub_ps(mold, msafe));
        for (j = 0; j < nk; ++j) {
            const __m256 p = attn__exp256(_mm256_sub_ps(_mm256_load_ps(s + (size_t)j * ATTN__BQ), msafe));
            _mm256_store_ps(s + (size_t)j * ATTN__BQ, p);
            sum = _mm256_add_ps(sum, p);
        }
        _mm256_storeu_ps(X->l + r, _mm256_fmadd_ps(_mm256_loadu_ps(X->l + r), alpha, sum));
        _mm256_storeu_ps(X->m + r, mnew);
        _mm256_storeu_ps(X->alpha + r, alpha);
    }
}

/* P.V: 4 rows x 16 columns (8 ymm accumulators); maskload/maskstore for a ragged head dim. */
ATTN__T256 static __m256i attn__mask8(int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n < 0 ? 0 : n), idx);
}
#define ATTN__PVY_LOAD(r) al = _mm256_set1_ps(alpha[r0 + r]); o = acc + (size_t)(r0 + r) * ldo + c; \
    a##r##0 = _mm256_mul_ps(al, _mm256_maskload_ps(o, m0)); a##r##1 = _mm256_mul_ps(al, _mm256_maskload_ps(o + 8, m1));
#define ATTN__PVY_FMA(r) p = _mm256_broadcast_ss(pj + r); a##r##0 = _mm256_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm256_fmadd_ps(p, v1, a##r##1);
#define ATTN__PVY_STORE(r) o = acc + (size_t)(r0 + r) * ldo + c; _mm256_maskstore_ps(o, m0, a##r##0); _mm256_maskstore_ps(o + 8, m1, a##r##1);
ATTN__T256 static void attn__pv_avx2(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
                                     const float *alpha, float *acc, size_t ldo) {
    int r0, c, j;
    for (r0 = 0; r0 < nrows; r0 += 4)
        for (c = 0; c < Dv; c += 16) {
            const __m256i m0 = attn__mask8(Dv - c), m1 = attn__mask8(Dv - c - 8);
            __m256 a00, a01, a10, a11, a20, a21, a30, a31, al, p;
            float *o;
            ATTN__PVY_LOAD(0) ATTN__PVY_LOAD(1) ATTN__PVY_LOAD(2) ATTN__PVY_LOAD(3)
            for (j = 0; j < nk; ++j) {
                const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ + r0;
                const __m256 v0 = _mm256_maskload_ps(vj, m0), v1 = _mm256_maskload_ps(vj + 8, m1);
                ATTN__PVY_FMA(0) ATTN__PVY_FMA(1) ATTN__PVY_FMA(2) ATTN__PVY_FMA(3)
            }
            ATTN__PVY_STORE(0) ATTN__PVY_STORE(1) ATTN__PVY_STORE(2) ATTN__PVY_STORE(3)
        }
}

ATTN__T256 static void attn__load_avx2(const void *src, attn_dtype t, float *dst, int n, float mul) {
    const __m256 mv = _mm256_set1_ps(mul);
    int i = 0;
    if (t == ATTN_F32) {
        const float *s = (const float *)src;
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_mul_ps(mv, _mm256_loadu_ps(s + i)));
    } else if (t == ATTN_F16) {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i, _mm256_mul_ps(mv, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i)))));
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 8 <= n; i += 8) {
            const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
            _mm256_storeu_ps(dst + i, _mm256_mul_ps(mv, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16))));
        }
    }
    if (i < n) attn__load_row((const char *)src + (size_t)i * attn__dtype_size(t), t, dst + i, n - i, mul);
}

static const attn__isa attn__isa_avx2 = {
    "avx2", attn__qk_avx2, NULL, attn__softmax_avx2, attn__pv_avx2, attn__load_avx2
};
#endif /* ATTN__X86_SIMD */

/* --- NEON (AArch64): the same kernels on 4 lanes --------------------------------------- */
#if !defined(ATTN_NO_SIMD) && defined(__aarch64__)
#define ATTN__NEON 1
#include <arm_neon.h>

/* exp on 4 lanes (the same polynomial); inputs below -87.3 give exactly 0. Returns
   exp(r) - 1 and 2^n through q/two_n when asked. */
static inline float32x4_t attn__exp_parts_neon(float32x4_t x, float32x4_t *q_out, float32x4_t *two_n_out) {
    const uint32x4_t under = vcltq_f32(x, vdupq_n_f32(-87.3f));
    float32x4_t n, r, p, q, two_n;
    x = vmaxq_f32(vdupq_n_f32(-87.3f), vminq_f32(vdupq_n_f32(88.37f), x));
    n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    q = vfmaq_f32(r, p, vmulq_f32(r, r));
    two_n = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23));
    if (q_out) { *q_out = q; *two_n_out = two_n; }
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(vfmaq_f32(two_n, two_n, q)), under));
}
static inline float32x4_t attn__exp_neon(float32x4_t x) { return attn__exp_parts_neon(x, NULL, NULL); }
static inline float32x4_t attn__tanh_neon(float32x4_t x) {
    float32x4_t q, two_n, em, t;
    attn__exp_parts_neon(vmulq_f32(vabsq_f32(x), vdupq_n_f32(-2.0f)), &q, &two_n);
    em = vfmaq_f32(vsubq_f32(two_n, vdupq_n_f32(1.0f)), two_n, q);          /* expm1(-2|x|) */
    t = vdivq_f32(vnegq_f32(em), vaddq_f32(em, vdupq_n_f32(2.0f)));
    return vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(t),
                                 vandq_u32(vreinterpretq_u32_f32(x), vdupq_n_u32(0x80000000u))));
}

/* Q.K^T: 4 keys x 16 lanes (16 accumulators) per step, lane blocks of 16. */
static void attn__qk_neon(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S) {
    int r, j, d, x, g;
    for (r = 0; r < nlanes; r += 16) {
        for (j = 0; j + 4 <= nk; j += 4) {
            const float *k0 = K + (ptrdiff_t)j * ldk, *k1 = k0 + ldk, *k2 = k1 + ldk, *k3 = k2 + ldk;
            float32x4_t a[4][4];
            for (x = 0; x < 4; ++x) for (g = 0; g < 4; ++g) a[x][g] = vdupq_n_f32(0.0f);
            for (d = 0; d < D; ++d) {
                const float *qt = QT + (size_t)d * ATTN__BQ + r;
                const float32x4_t q0 = vld1q_f32(qt), q1 = vld1q_f32(qt + 4), q2 = vld1q_f32(qt + 8), q3 = vld1q_f32(qt + 12);
                const float kv[4] = {k0[d], k1[d], k2[d], k3[d]};
                for (x = 0; x < 4; ++x) {
                    a[x][0] = vfmaq_n_f32(a[x][0], q0, kv[x]); a[x][1] = vfmaq_n_f32(a[x][1], q1, kv[x]);
                    a[x][2] = vfmaq_n_f32(a[x][2], q2, kv[x]); a[x][3] = vfmaq_n_f32(a[x][3], q3, kv[x]);
                }
            }
            for (x = 0; x < 4; ++x) for (g = 0; g < 4; ++g) vst1q_f32(S + (size_t)(j + x) * ATTN__BQ + r + 4 * g, a[x][g]);
        }
        for (; j < nk; ++j) {
            const float *kj = K + (ptrdiff_t)j * ldk;
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
            for (d = 0; d < D; ++d) {
                const float *qt = QT + (size_t)d * ATTN__BQ + r;
                a0 = vfmaq_n_f32(a0, vld1q_f32(qt), kj[d]);     a1 = vfmaq_n_f32(a1, vld1q_f32(qt + 4), kj[d]);
                a2 = vfmaq_n_f32(a2, vld1q_f32(qt + 8), kj[d]); a3 = vfmaq_n_f32(a3, vld1q_f32(qt + 12), kj[d]);
            }
            vst1q_f32(S + (size_t)j * ATTN__BQ + r, a0);     vst1q_f32(S + (size_t)j * ATTN__BQ + r + 4, a1);
            vst1q_f32(S + (size_t)j * ATTN__BQ + r + 8, a2); vst1q_f32(S + (size_t)j * ATTN__BQ + r + 12, a3);
        }
    }
}

static void attn__softmax_neon(float *S, int nk, int nlanes, int c0, const attn__smx *X) {
    const float32x4_t ninf = vdupq_n_f32(-INFINITY), zero = vdupq_n_f32(0.0f);
    const float32x4_t cap = vdupq_n_f32(X->softcap), inv_cap = vdupq_n_f32(X->softcap > 0 ? 1.0f / X->softcap : 0.0f);
    const int transform = X->softcap > 0.0f || X->alibi || X->mask;
    int r, j;
    for (r = 0; r < nlanes; r += 4) {
        const float32x4_t mold = vld1q_f32(X->m + r), pos = vld1q_f32(X->pos + r), slope = vld1q_f32(X->slope + r);
        const int32x4_t lo = vld1q_s32(X->lo + r), hi = vld1q_s32(X->hi + r), capi = vld1q_s32(X->cap + r);
        float32x4_t mx = ninf, mnew, msafe, alpha, sum = zero;
        float *s = S + r;
        if (transform) {
            for (j = 0; j < nk; ++j) {
                float32x4_t v = vld1q_f32(s + (size_t)j * ATTN__BQ);
                if (X->softcap > 0.0f) v = vmulq_f32(cap, attn__tanh_neon(vmulq_f32(v, inv_cap)));
                if (X->alibi) v = vfmsq_f32(v, slope, vabsq_f32(vsubq_f32(pos, vdupq_n_f32((float)(c0 + j)))));
                if (X->mask) {       /* j <= cap  &&  (j < pre || (lo <= j && j <= hi)) */
                    const int32x4_t jv = vdupq_n_s32(c0 + j);
                    uint32x4_t k = vcleq_s32(jv, capi);
                    if (c0 + j >= X->pre) k = vandq_u32(k, vandq_u32(vcleq_s32(lo, jv), vcleq_s32(jv, hi)));
                    v = vbslq_f32(k, v, ninf);
                }
                vst1q_f32(s + (size_t)j * ATTN__BQ, v);
                mx = vmaxq_f32(mx, v);
            }
        } else {
            for (j = 0; j < nk; ++j) mx = vmaxq_f32(mx, vld1q_f32(s + (size_t)j * ATTN__BQ));
        }
        mnew = vmaxq_f32(mold, mx);
        msafe = vbslq_f32(vceqq_f32(mnew, ninf), zero, mnew);
        alpha = attn__exp_neon(vsubq_f32(mold, msafe));
        for (j = 0; j < nk; ++j) {
            const float32x4_t p = attn__exp_neon(vsubq_f32(vld1q_f32(s + (size_t)j * ATTN__BQ), msafe));
            vst1q_f32(s + (size_t)j * ATTN__BQ, p);
            sum = vaddq_f32(sum, p);
        }
        vst1q_f32(X->l + r, vfmaq_f32(sum, vld1q_f32(X->l + r), alpha));
        vst1q_f32(X->m + r, mnew);
        vst1q_f32(X->alpha + r, alpha);
    }
}

/* P.V: 4 rows x 16 columns (16 accumulators); a ragged head dim's last columns in scalar. */
static void attn__pv_neon(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
                          const float *alpha, float *acc, size_t ldo) {
    const int dv16 = Dv & ~15;
    int r0, c, j, x, g;
    for (r0 = 0; r0 < nrows; r0 += 4) {
        for (c = 0; c < dv16; c += 16) {
            float32x4_t a[4][4];
            for (x = 0; x < 4; ++x)
                for (g = 0; g < 4; ++g) a[x][g] = vmulq_n_f32(vld1q_f32(acc + (size_t)(r0 + x) * ldo + c + 4 * g), alpha[r0 + x]);
            for (j = 0; j < nk; ++j) {
                const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ + r0;
                const float32x4_t v0 = vld1q_f32(vj), v1 = vld1q_f32(vj + 4), v2 = vld1q_f32(vj + 8), v3 = vld1q_f32(vj + 12);
                for (x = 0; x < 4; ++x) {
                    a[x][0] = vfmaq_n_f32(a[x][0], v0, pj[x]); a[x][1] = vfmaq_n_f32(a[x][1], v1, pj[x]);
                    a[x][2] = vfmaq_n_f32(a[x][2], v2, pj[x]); a[x][3] = vfmaq_n_f32(a[x][3], v3, pj[x]);
                }
            }
            for (x = 0; x < 4; ++x) for (g = 0; g < 4; ++g) vst1q_f32(acc + (size_t)(r0 + x) * ldo + c + 4 * g, a[x][g]);
        }
        for (x = 0; x < 4; ++x) {
            float *o = acc + (size_t)(r0 + x) * ldo;
            for (c = dv16; c < Dv; ++c) {
                float t = o[c] * alpha[r0 + x];
                for (j = 0; j < nk; ++j) t += S[(size_t)j * ATTN__BQ + r0 + x] * V[(ptrdiff_t)j * ldv + c];
                o[c] = t;
            }
        }
    }
}

static void attn__load_neon(const void *src, attn_dtype t, float *dst, int n, float mul) {
    int i = 0;
    if (t == ATTN_F32) {
        const float *s = (const float *)src;
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vmulq_n_f32(vld1q_f32(s + i), mul));
    } else if (t == ATTN_F16) {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vmulq_n_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(s + i))), mul));
    } else {
        const uint16_t *s = (const uint16_t *)src;
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vmulq_n_f32(vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(s + i), 16)), mul));
    }
    if (i < n) attn__load_row((const char *)src + (size_t)i * attn__dtype_size(t), t, dst + i, n - i, mul);
}

static const attn__isa attn__isa_neon = {
    "neon", attn__qk_neon, NULL, attn__softmax_neon, attn__pv_neon, attn__load_neon
};
#endif /* ATTN__NEON */

/* The fastest kernels this CPU runs (ATTN_NO_AVX512 caps it at AVX2, ATTN_NO_SIMD at scalar). */
static const attn__isa *attn__pick_isa(void) {
#if defined(ATTN__X86_SIMD)
#if defined(__GNUC__) || defined(__clang__)
    __builtin_cpu_init();
#if !defined(ATTN_NO_AVX512)
    if (__builtin_cpu_supports("avx512f")) return &attn__isa_avx512;
#endif
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &attn__isa_avx2;
#elif defined(__AVX512F__) && !defined(ATTN_NO_AVX512)
    return &attn__isa_avx512;
#elif defined(__AVX2__)
    return &attn__isa_avx2;
#endif
#endif
#if defined(ATTN__NEON)
    return &attn__isa_neon;
#endif
    return &attn__isa_scalar;
}

/* ---------------------------------------------------------------------------------------
   3.12 AMX tile kernels (bf16): placed before 3.6, which calls them
   --------------------------------------------------------------------------------------- */
/* bf16 q/k/v outside decoding (Sq x Hq/Hkv <= 16 stays on 3.6's decode path, which is
   bandwidth-bound): Q.K^T and P.V as bf16 products
   with fp32 accumulation, on AMX tiles (tdpbf16ps) where the CPU and OS allow them, else on
   AVX512-BF16 (vdpbf16ps). Between the products the AVX-512 online-softmax stage of 3.5 runs
   on fp32 scores with every mask and option of the fp32 path (softcap, ALiBi, bias, windows,
   dilation, sinks, global tokens, padding, varlen); the probabilities P are rounded to bf16
   (round to nearest even) for the P.V product, while the row sums l use the fp32 P.
   Accuracy: q.k is exact in fp32 accumulation up to summation order (bf16 x bf16 products are
   exact in fp32); the only extra error against the fp32 kernels is P's rounding, a relative
   2^-9 per weight: |out - out_fp32| <= 2^-9 max|v| (= 1.95e-3 max|v|; measured up to 8.8e-4
   max|v| on N(0,1) data; tests/test_amx.c allows 2^-8 max|v|). lse is not affected.
   Layouts (per tile of ATTN__BQ rows, per chunk of ATTN__BK keys; "word" = a bf16 pair):
     QP  [ldk2/2][BQ] words   q[r][2i], q[r][2i+1]: queries in VNNI pairs, packed once a tile
     Kb  [BK][ldk2] bf16      the chunk's keys, rows zero-padded to ldk2 = D rounded to 32
                              (AMX, odd D; the AVX512-BF16 path reads even-D keys in place)
     VP  [BK/2][ldv2] words   v[2i][c], v[2i+1][c]: the chunk's values in VNNI pairs
     S   [BK][BQ] fp32        scores, then P (the layout of 3.5's softmax stage)
     PP  [BK/2][BQ] words     P[2i][r], P[2i+1][r] (AVX512-BF16 path), or
     PT  [BQ][BK] bf16        P transposed (AMX path: the A operand of P.V)
     acc [BQ][ldv2] fp32      unnormalised output rows
   AMX: S^T blocks = Kb (A, 16 keys x 32 dims) x QP (B, 16 pairs x 16 rows); acc blocks =
   PT (A, 16 rows x 32 keys) x VP (B, 16 pairs x 16 columns); 2 x 2 blocks of 16 x 16 fp32
   per step in tmm0-3, A in tmm4-5, B in tmm6-7. Each attn__bf16_tile call (one row tile of a
   task, on whatever thread runs the task) loads its own configuration
   (ldtilecfg) and releases the tiles (tilerelease) before it returns, so no tile state
   outlives a call or moves between threads.
   Compiled with gcc >= 11 / clang >= 12 on x86-64 (target attributes, so no -m flags are
   needed); AMX only on Linux (the tile data permission is asked with arch_prctl). Run-time
   detection: cpuid (AVX512F/BW/VL + AVX512-BF16; AMX-TILE + AMX-BF16), XCR0 tile state,
   ARCH_REQ_XCOMP_PERM; anything missing or refused falls back (AMX -> AVX512-BF16 -> fp32).
   ATTN_NO_AMX compiles the AMX kernels out, ATTN_NO_AVX512 / ATTN_NO_SIMD both paths;
   attn_desc.no_amx picks per call (1: no AMX, 2: neither). */
#if defined(ATTN__X86_SIMD) && defined(__x86_64__) && !defined(ATTN_NO_AVX512) && \
    ((defined(__clang__) && (defined(__apple_build_version__) ? __clang_major__ >= 13 : __clang_major__ >= 12)) || \
     (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define ATTN__BF16K 1
#if (defined(__linux__) || defined(ATTN__AMX_EMULATE)) && !defined(ATTN_NO_AMX)
#define ATTN__AMX 1
#endif
#include <cpuid.h>
#define ATTN__TBF __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#if defined(ATTN__AMX_EMULATE)
/* Test builds only (tests/test_amx_emu.c): the AMX kernels run on a software tile file that
   the test defines through the ATTN__TILE_* macros, on any CPU with AVX512-BF16. */
#define ATTN__TAMX ATTN__TBF
#else
#define ATTN__TAMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
/* gcc's tile intrinsics are asm statements that do not tell the compiler which memory they
   read (tileloadd: none; ldtilecfg: 8 of the 64 bytes): a compiler barrier with the address
   makes every earlier store visible to them. tilestored has its own memory clobber. */
#define ATTN__TILE_BARRIER(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#define ATTN__TILE_FILE
#define ATTN__TILE_CFG(cfg) do { ATTN__TILE_BARRIER(cfg); _tile_loadconfig(cfg); } while (0)
#define ATTN__TILE_RELEASE() _tile_release()
#define ATTN__TILE_ZERO(t) _tile_zero(t)
#define ATTN__TILE_LOAD(t, base, stride) do { ATTN__TILE_BARRIER(base); _tile_loadd(t, base, stride); } while (0)
#define ATTN__TILE_STORE(t, base, stride) do { _tile_stored(t, base, stride); ATTN__TILE_BARRIER(base); } while (0)
#define ATTN__TILE_DP(c, a, b) _tile_dpbf16ps(c, a, b)
#endif

/* 3.6's helpers, defined after this section */
static int attn__chunk_full(const attn__problem *P, long long p0, long long p1, long long c0, long long c1);
static int attn__key_ranges(const attn__problem *P, long long p0, long long p1, long long Lk, long long r[2][2]);
static int attn__visible(const attn__problem *P, long long p, long long j);
static void attn__fwd_store(const attn__problem *P, int tb, int row, int h, const float *acc, float m, float l);

/* Per-row state of a bf16 tile (the fields attn__tile keeps, plus m, l, alpha). */
typedef struct attn__btile {
    int32_t lo[ATTN__BQ], hi[ATTN__BQ], cap[ATTN__BQ];
    int head[ATTN__BQ], qrow[ATTN__BQ];
    float pos[ATTN__BQ], slope[ATTN__BQ], m[ATTN__BQ], l[ATTN__BQ], alpha[ATTN__BQ];
} attn__btile;

/* Offsets (floats, each 64-byte aligned) of the pieces of one thread's workspace. */
typedef struct attn__bgeo { size_t ldk2, ldv2, qp, kb, vp, s, pp, acc, total; } attn__bgeo;

static attn__bgeo attn__bf16_geometry(int D, int Dv) {
    attn__bgeo g;
    g.ldk2 = ((size_t)D + 31) & ~(size_t)31; g.ldv2 = ((size_t)Dv + 31) & ~(size_t)31;
    g.qp = ((sizeof(attn__btile) + 63) & ~(size_t)63) / sizeof(float);
    g.kb = g.qp + g.ldk2 / 2 * ATTN__BQ;
    g.vp = g.kb + ATTN__BK * g.ldk2 / 2;
    g.s = g.vp + ATTN__BK / 2 * g.ldv2;
    g.pp = g.s + (size_t)ATTN__BK * ATTN__BQ;
    g.acc = g.pp + (size_t)ATTN__BK / 2 * ATTN__BQ;
    g.total = g.acc + ATTN__BQ * g.ldv2;
    return g;
}

/* Which bf16 kernels this CPU/OS can run: 0 none, 1 AVX512-BF16, 2 AMX as well. */
static int attn__bf16_cpu(void) {
    unsigned a, b, c, d, a1, b1, c1, d1;
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f") || __get_cpuid_max(0, NULL) < 7) return 0;   /* avx512f: OS zmm state too */
    __cpuid_count(7, 0, a, b, c, d);
    __cpuid_count(7, 1, a1, b1, c1, d1);
    (void)c; (void)b1; (void)c1; (void)d1;
    if (!(b & (1u << 30)) || !(b & (1u << 31)) || !(a1 & (1u << 5))) return 0;   /* AVX512BW, VL, BF16 */
    if (a < 1) return 1;
#if defined(ATTN__AMX_EMULATE)
    (void)d;
    return 2;
#elif defined(ATTN__AMX)
    if ((d & (1u << 24)) && (d & (1u << 22))) {             /* AMX-TILE, AMX-BF16 */
        unsigned xlo, xhi;
        long r;
        __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
        (void)xhi;
        if ((xlo & (3u << 17)) != (3u << 17)) return 1;      /* XTILECFG, XTILEDATA enabled by the OS */
        /* arch_prctl(ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18): process-wide, idempotent */
        __asm__ volatile("syscall" : "=a"(r) : "a"(158L), "D"(0x1023L), "S"(18L) : "rcx", "r11", "memory");
        if (r == 0) return 2;
    }
#else
    (void)d;
#endif
    return 1;
}

/* The kernels this call runs (0: the fp32 path). */
static int attn__bf16_kernel(const attn__problem *P) {
    int k;
    if (P->no_amx == 2 || P->q.dtype != ATTN_BF16) return 0;
    k = attn__bf16_cpu();
    return P->no_amx == 1 ? ATTN__MIN(k, 1) : k;
}

static ATTN__INLINE uint32_t attn__ld32(const void *p) { uint32_t u; memcpy(&u, p, 4); return u; }

/* S[j][r] = scale * K[j] . Q[r] on 64 lanes from VNNI words, 6 keys x 64 lanes per step:
   keys j < nr (<= 6) of K (row stride ldk elements); past nr the last key is recomputed, not
   stored, so a tail runs at the full rate. */
#define ATTN__BQK_ROW(x) b = (__m512bh)_mm512_set1_epi32((int)attn__ld32(k##x + 2 * dp)); \
    c##x##0 = _mm512_dpbf16_ps(c##x##0, q0, b); c##x##1 = _mm512_dpbf16_ps(c##x##1, q1, b); \
    c##x##2 = _mm512_dpbf16_ps(c##x##2, q2, b); c##x##3 = _mm512_dpbf16_ps(c##x##3, q3, b);
#define ATTN__BQK_STORE(x) if (x < nr) { \
    _mm512_store_ps(S + x * ATTN__BQ, _mm512_mul_ps(sc, c##x##0)); \
    _mm512_store_ps(S + x * ATTN__BQ + 16, _mm512_mul_ps(sc, c##x##1)); \
    _mm512_store_ps(S + x * ATTN__BQ + 32, _mm512_mul_ps(sc, c##x##2)); \
    _mm512_store_ps(S + x * ATTN__BQ + 48, _mm512_mul_ps(sc, c##x##3)); }
ATTN__TBF static void attn__bqk_6x64(const uint16_t *K, ptrdiff_t ldk, int nr, const uint32_t *QP, int nd2, float scale,
                                     float *S) {
    const uint16_t *k0 = K, *k1 = K + ATTN__MIN(1, nr - 1) * ldk, *k2 = K + ATTN__MIN(2, nr - 1) * ldk,
                   *k3 = K + ATTN__MIN(3, nr - 1) * ldk, *k4 = K + ATTN__MIN(4, nr - 1) * ldk, *k5 = K + ATTN__MIN(5, nr - 1) * ldk;
    const __m512 sc = _mm512_set1_ps(scale);
    __m512 c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33,
           c40, c41, c42, c43, c50, c51, c52, c53;
    __m512bh b;
    int dp;
    c00 = c01 = c02 = c03 = c10 = c11 = c12 = c13 = c20 = c21 = c22 = c23 = _mm512_setzero_ps();
    c30 = c31 = c32 = c33 = c40 = c41 = c42 = c43 = c50 = c51 = c52 = c53 = _mm512_setzero_ps();
    for (dp = 0; dp < nd2; ++dp) {
        const uint32_t *qw = QP + (size_t)dp * ATTN__BQ;
        const __m512bh q0 = (__m512bh)_mm512_load_si512(qw), q1 = (__m512bh)_mm512_load_si512(qw + 16),
                       q2 = (__m512bh)_mm512_load_si512(qw + 32), q3 = (__m512bh)_mm512_load_si512(qw + 48);
        ATTN__BQK_ROW(0) ATTN__BQK_ROW(1) ATTN__BQK_ROW(2) ATTN__BQK_ROW(3) ATTN__BQK_ROW(4) ATTN__BQK_ROW(5)
    }
    ATTN__BQK_STORE(0) ATTN__BQK_STORE(1) ATTN__BQK_STORE(2) ATTN__BQK_STORE(3) ATTN__BQK_STORE(4) ATTN__BQK_STORE(5)
}

/* 16 bf16 pair words (a[i], b[i]) from two fp32 vectors, each rounded to nearest even. */
ATTN__TBF static ATTN__INLINE __m512i attn__bf16_pairs(__m512 a, __m512 b) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                         23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));   /* [a0..a15 | b0..b15] */
}

/* PP[jp][r] = (P[2jp][r], P[2jp+1][r]) for jp < (nk+1)/2, r < nlanes; P[nk][.] = 0. */
ATTN__TBF static void attn__bf16_pack_pp(const float *S, int nk, int nlanes, uint32_t *PP) {
    int jp, r;
    for (jp = 0; 2 * jp < nk; ++jp) {
        const float *s0 = S + (size_t)(2 * jp) * ATTN__BQ, *s1 = s0 + ATTN__BQ;
        for (r = 0; r < nlanes; r += 16) {
            const __m512 b = 2 * jp + 1 < nk ? _mm512_load_ps(s1 + r) : _mm512_setzero_ps();
            _mm512_store_si512(PP + (size_t)jp * ATTN__BQ + r, attn__bf16_pairs(_mm512_load_ps(s0 + r), b));
        }
    }
}

/* VP[jp][c] = (V[2jp][c], V[2jp+1][c]) from bf16 rows (byte stride vst): npairs pair rows,
   zero past nk keys and past Dv columns (to ldv2, a multiple of 32). */
ATTN__TBF static void attn__bf16_pack_v(const char *vp, ptrdiff_t vst, int nk, int npairs, int Dv, size_t ldv2, uint32_t *VP) {
    const __m512i lo = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                        39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    int jp, c;
    for (jp = 0; jp < npairs; ++jp) {
        const uint16_t *v0 = 2 * jp < nk ? (const uint16_t *)(const void *)(vp + (ptrdiff_t)(2 * jp) * vst) : NULL;
        const uint16_t *v1 = 2 * jp + 1 < nk ? (const uint16_t *)(const void *)(vp + (ptrdiff_t)(2 * jp + 1) * vst) : NULL;
        uint32_t *o = VP + (size_t)jp * ldv2;
        for (c = 0; c < (int)ldv2; c += 32) {
            const __mmask32 m = Dv - c >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (Dv - c > 0 ? Dv - c : 0)) - 1u);
            const __m512i a = v0 ? _mm512_maskz_loadu_epi16(m, v0 + c) : _mm512_setzero_si512();
            const __m512i b = v1 ? _mm512_maskz_loadu_epi16(m, v1 + c) : _mm512_setzero_si512();
            _mm512_store_si512(o + c, _mm512_permutex2var_epi16(a, lo, b));
            _mm512_store_si512(o + c + 16, _mm512_permutex2var_epi16(a, hi, b));
        }
    }
}

/* In-register transpose of a 16 x 16 matrix of 32-bit words. */
ATTN__TBF static ATTN__INLINE void attn__tr16x16(__m512i *r) {
    __m512i t[16];
    int i, k;
    for (i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; ++i) {   /* r[4i+k], 128-bit lane L: column 4L+k of rows 4i..4i+3 */
        r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (k = 0; k < 4; ++k) {
        t[k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0x88);
        t[4 + k] = _mm512_shuffle_i32x4(r[k], r[4 + k], 0xdd);
        t[8 + k] = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0x88);
        t[12 + k] = _mm512_shuffle_i32x4(r[8 + k], r[12 + k], 0xdd);
    }
    for (k = 0; k < 4; ++k) {
        r[k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0x88);
        r[4 + k] = _mm512_shuffle_i32x4(t[4 + k], t[12 + k], 0x88);
        r[8 + k] = _mm512_shuffle_i32x4(t[k], t[8 + k], 0xdd);
        r[12 + k] = _mm512_shuffle_i32x4(t[4 + k], t[12 + k], 0xdd);
    }
}

/* QP[dp][r] = (q_r[2dp], q_r[2dp+1]) for the n rows at q[r] (bf16), zero past n and past D,
   dp < ldk2 / 2: each row's bf16 pairs are already 32-bit words, so 16 x 16 word blocks are
   transposed. */
ATTN__TBF static void attn__bf16_pack_q(const uint16_t *const *q, int n, int D, size_t ldk2, uint32_t *QP) {
    int r0, d0, i;
    for (r0 = 0; r0 < ATTN__BQ; r0 += 16)
        for (d0 = 0; d0 < (int)ldk2; d0 += 32) {
            const __mmask32 m = D - d0 >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (D - d0 > 0 ? D - d0 : 0)) - 1u);
            __m512i w[16];
            for (i = 0; i < 16; ++i) w[i] = r0 + i < n ? _mm512_maskz_loadu_epi16(m, q[r0 + i] + d0) : _mm512_setzero_si512();
            attn__tr16x16(w);
            for (i = 0; i < 16; ++i) _mm512_store_si512(QP + (size_t)(d0 / 2 + i) * ATTN__BQ + r0, w[i]);
        }
}

/* acc[r][c] = alpha[r] acc[r][c] + sum_j P[j][r] V[j][c]: 8 rows x 32 columns per step (acc
   and VP are padded to ldv2 columns, so no masks); rows up to the next multiple of 8. */
#define ATTN__BPV_LOAD(x) al = _mm512_set1_ps(alpha[r0 + x]); o = acc + (size_t)(r0 + x) * ldo + c; \
    a##x##0 = _mm512_mul_ps(al, _mm512_load_ps(o)); a##x##1 = _mm512_mul_ps(al, _mm512_load_ps(o + 16));
#define ATTN__BPV_FMA(x) p = (__m512bh)_mm512_set1_epi32((int)pw[x]); \
    a##x##0 = _mm512_dpbf16_ps(a##x##0, v0, p); a##x##1 = _mm512_dpbf16_ps(a##x##1, v1, p);
#define ATTN__BPV_STORE(x) o = acc + (size_t)(r0 + x) * ldo + c; _mm512_store_ps(o, a##x##0); _mm512_store_ps(o + 16, a##x##1);
ATTN__TBF static void attn__bpv(const uint32_t *PP, int npairs, int nrows, const uint32_t *VP, size_t ldv2, int Dv,
                                const float *alpha, float *acc, size_t ldo) {
    int r0, c, jp;
    for (r0 = 0; r0 < nrows; r0 += 8)
        for (c = 0; c < Dv; c += 32) {
            __m512 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51, a60, a61, a70, a71, al;
            __m512bh p;
            float *o;
            ATTN__BPV_LOAD(0) ATTN__BPV_LOAD(1) ATTN__BPV_LOAD(2) ATTN__BPV_LOAD(3)
            ATTN__BPV_LOAD(4) ATTN__BPV_LOAD(5) ATTN__BPV_LOAD(6) ATTN__BPV_LOAD(7)
            for (jp = 0; jp < npairs; ++jp) {
                const uint32_t *vw = VP + (size_t)jp * ldv2 + c, *pw = PP + (size_t)jp * ATTN__BQ + r0;
                const __m512bh v0 = (__m512bh)_mm512_load_si512(vw), v1 = (__m512bh)_mm512_load_si512(vw + 16);
                ATTN__BPV_FMA(0) ATTN__BPV_FMA(1) ATTN__BPV_FMA(2) ATTN__BPV_FMA(3)
                ATTN__BPV_FMA(4) ATTN__BPV_FMA(5) ATTN__BPV_FMA(6) ATTN__BPV_FMA(7)
            }
            ATTN__BPV_STORE(0) ATTN__BPV_STORE(1) ATTN__BPV_STORE(2) ATTN__BPV_STORE(3)
            ATTN__BPV_STORE(4) ATTN__BPV_STORE(5) ATTN__BPV_STORE(6) ATTN__BPV_STORE(7)
        }
}

#if defined(ATTN__AMX)
/* PT[r][j] = P[j][r] in bf16 (as words: PT[r][jp] = (P[2jp][r], P[2jp+1][r])), rows r <
   nrows32 and keys j < nk32 (multiples of 32); zero for j >= nk and r >= nlanes. */
ATTN__TBF static void attn__bf16_pack_pt(const float *S, int nk, int nk32, int nlanes, int nrows32, uint32_t *PT) {
    int jp0, r0, i;
    for (jp0 = 0; 2 * jp0 < nk32; jp0 += 16)
        for (r0 = 0; r0 < nrows32; r0 += 16) {
            const __mmask16 lm = attn__mask16(nlanes - r0);
            __m512i w[16];
            for (i = 0; i < 16; ++i) {
                const int j = 2 * (jp0 + i);
                const float *s = S + (size_t)j * ATTN__BQ + r0;
                const __m512 a = j < nk ? _mm512_maskz_load_ps(lm, s) : _mm512_setzero_ps();
                const __m512 b = j + 1 < nk ? _mm512_maskz_load_ps(lm, s + ATTN__BQ) : _mm512_setzero_ps();
                w[i] = attn__bf16_pairs(a, b);
            }
            attn__tr16x16(w);
            for (i = 0; i < 16; ++i) _mm512_store_si512(PT + (size_t)(r0 + i) * (ATTN__BK / 2) + jp0, w[i]);
        }
}

/* Palette 1, tmm0-7 all 16 rows x 64 bytes. */
typedef struct attn__amx_cfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} attn__amx_cfg;

static void attn__amx_config(attn__amx_cfg *cfg) {
    int i;
    memset(cfg, 0, sizeof *cfg);
    cfg->palette = 1;
    for (i = 0; i < 8; ++i) { cfg->colsb[i] = 64; cfg->rows[i] = 16; }
}
ATTN__TAMX static void attn__amx_begin(void) {
    attn__amx_cfg cfg;
    attn__amx_config(&cfg);
    ATTN__TILE_CFG(&cfg);
}
ATTN__TAMX static void attn__amx_end(void) { ATTN__TILE_RELEASE(); }

/* S[j][r] = scale * K[j] . Q[r], j < nk32, r < nl32 (multiples of 32; Kb and QP zero-padded). */
ATTN__TAMX static void attn__qk_amx(const uint16_t *Kb, size_t ldk2, int nk32, const uint32_t *QP, int nl32,
                                    int nlanes, int nk, float scale, float *S) {
    const __m512 sc = _mm512_set1_ps(scale);
    int j0, r0, d, j;
    ATTN__TILE_FILE
    for (j0 = 0; j0 < nk32; j0 += 32)
        for (r0 = 0; r0 < nl32; r0 += 32) {
            ATTN__TILE_ZERO(0); ATTN__TILE_ZERO(1); ATTN__TILE_ZERO(2); ATTN__TILE_ZERO(3);
            for (d = 0; d < (int)ldk2; d += 32) {
                ATTN__TILE_LOAD(4, Kb + (size_t)j0 * ldk2 + d, (long)(ldk2 * 2));
                ATTN__TILE_LOAD(5, Kb + (size_t)(j0 + 16) * ldk2 + d, (long)(ldk2 * 2));
                ATTN__TILE_LOAD(6, QP + (size_t)(d / 2) * ATTN__BQ + r0, ATTN__BQ * 4);
                ATTN__TILE_LOAD(7, QP + (size_t)(d / 2) * ATTN__BQ + r0 + 16, ATTN__BQ * 4);
                ATTN__TILE_DP(0, 4, 6); ATTN__TILE_DP(1, 4, 7); ATTN__TILE_DP(2, 5, 6); ATTN__TILE_DP(3, 5, 7);
            }
            ATTN__TILE_STORE(0, S + (size_t)j0 * ATTN__BQ + r0, ATTN__BQ * 4);
            ATTN__TILE_STORE(1, S + (size_t)j0 * ATTN__BQ + r0 + 16, ATTN__BQ * 4);
            ATTN__TILE_STORE(2, S + (size_t)(j0 + 16) * ATTN__BQ + r0, ATTN__BQ * 4);
            ATTN__TILE_STORE(3, S + (size_t)(j0 + 16) * ATTN__BQ + r0 + 16, ATTN__BQ * 4);
        }
    for (j = 0; j < nk; ++j)
        for (r0 = 0; r0 < nlanes; r0 += 16) {
            float *s = S + (size_t)j * ATTN__BQ + r0;
            _mm512_store_ps(s, _mm512_mul_ps(sc, _mm512_load_ps(s)));
        }
}

/* acc[r][c] = alpha[r] acc[r][c] + sum_j PT[r][j] V[j][c], r < nrows32, j < nk32, c < ldv2. */
ATTN__TAMX static void attn__pv_amx(const uint32_t *PT, int nk32, int nrows32, const uint32_t *VP, size_t ldv2,
                                    const float *alpha, float *acc) {
    int r0, c, jk, r;
    ATTN__TILE_FILE
    for (r0 = 0; r0 < nrows32; r0 += 32)
        for (c = 0; c < (int)ldv2; c += 32) {
            for (r = r0; r < r0 + 32; ++r) {
                float *o = acc + (size_t)r * ldv2 + c;
                const __m512 al = _mm512_set1_ps(alpha[r]);
                _mm512_store_ps(o, _mm512_mul_ps(al, _mm512_load_ps(o)));
                _mm512_store_ps(o + 16, _mm512_mul_ps(al, _mm512_load_ps(o + 16)));
            }
            ATTN__TILE_LOAD(0, acc + (size_t)r0 * ldv2 + c, (long)(ldv2 * 4));
            ATTN__TILE_LOAD(1, acc + (size_t)r0 * ldv2 + c + 16, (long)(ldv2 * 4));
            ATTN__TILE_LOAD(2, acc + (size_t)(r0 + 16) * ldv2 + c, (long)(ldv2 * 4));
            ATTN__TILE_LOAD(3, acc + (size_t)(r0 + 16) * ldv2 + c + 16, (long)(ldv2 * 4));
            for (jk = 0; jk < nk32; jk += 32) {
                ATTN__TILE_LOAD(4, PT + (size_t)r0 * (ATTN__BK / 2) + jk / 2, ATTN__BK * 2);
                ATTN__TILE_LOAD(5, PT + (size_t)(r0 + 16) * (ATTN__BK / 2) + jk / 2, ATTN__BK * 2);
                ATTN__TILE_LOAD(6, VP + (size_t)(jk / 2) * ldv2 + c, (long)(ldv2 * 4));
                ATTN__TILE_LOAD(7, VP + (size_t)(jk / 2) * ldv2 + c + 16, (long)(ldv2 * 4));
                ATTN__TILE_DP(0, 4, 6); ATTN__TILE_DP(1, 4, 7); ATTN__TILE_DP(2, 5, 6); ATTN__TILE_DP(3, 5, 7);
            }
            ATTN__TILE_STORE(0, acc + (size_t)r0 * ldv2 + c, (long)(ldv2 * 4));
            ATTN__TILE_STORE(1, acc + (size_t)r0 * ldv2 + c + 16, (long)(ldv2 * 4));
            ATTN__TILE_STORE(2, acc + (size_t)(r0 + 16) * ldv2 + c, (long)(ldv2 * 4));
            ATTN__TILE_STORE(3, acc + (size_t)(r0 + 16) * ldv2 + c + 16, (long)(ldv2 * 4));
        }
}
#endif /* ATTN__AMX */

/* One chunk of keys [c0, c0 + nk) into a bf16 tile of n rows (kind 1: AVX512-BF16, 2: AMX). */
static void attn__bf16_chunk(const attn__problem *P, int kind, const attn__bgeo *G, float *ws, int tb, int seq, int k0, int Lk,
                             int hk, int v0, int n, long long shift, long long p0, long long p1, long long c0, int nk) {
    attn__btile *T = (attn__btile *)(void *)ws;
    uint32_t *QP = (uint32_t *)(void *)(ws + G->qp), *VP = (uint32_t *)(void *)(ws + G->vp);
    uint32_t *PP = (uint32_t *)(void *)(ws + G->pp);
    uint16_t *Kb = (uint16_t *)(void *)(ws + G->kb);
    float *S = ws + G->s, *acc = ws + G->acc;
    const int D = P->q.dim, Dv = P->v.dim, g = P->groups, nlanes = (n + 15) & ~15;
    const int nk32 = (nk + 31) & ~31, full = attn__chunk_full(P, p0, p1, c0, c0 + nk);
    const char *kp = (const char *)attn__at(&P->k, tb, k0 + (int)c0, hk);
    const char *vp = (const char *)attn__at(&P->v, tb, k0 + (int)c0, hk);
    const ptrdiff_t kst = P->k.ss * (ptrdiff_t)P->k.esize, vst = P->v.ss * (ptrdiff_t)P->v.esize;
    attn__smx X;
    int r, j;
    if (kind == 2 || D % 2) {                       /* keys: zero-padded rows of ldk2 */
        for (j = 0; j < nk32; ++j) {
            uint16_t *kr = Kb + (size_t)j * G->ldk2;
            if (j < nk) memcpy(kr, kp + (ptrdiff_t)j * kst, sizeof(uint16_t) * (size_t)D);
            memset(kr + (j < nk ? D : 0), 0, sizeof(uint16_t) * (G->ldk2 - (size_t)(j < nk ? D : 0)));
        }
    }
    attn__bf16_pack_v(vp, vst, nk, kind == 2 ? nk32 / 2 : (nk + 1) / 2, Dv, G->ldv2, VP);
#if defined(ATTN__AMX)
    if (kind == 2) attn__qk_amx(Kb, G->ldk2, nk32, QP, (nlanes + 31) & ~31, nlanes, nk, P->scale, S);
    else
#endif
    {   /* even D: the pairs are read from k in place */
        const uint16_t *K = D % 2 ? Kb : (const uint16_t *)(const void *)kp;
        const ptrdiff_t ldk = D % 2 ? (ptrdiff_t)G->ldk2 : P->k.ss;
        for (j = 0; j < nk; j += 6)
            attn__bqk_6x64(K + (ptrdiff_t)j * ldk, ldk, ATTN__MIN(6, nk - j), QP, (D + 1) / 2, P->scale, S + (size_t)j * ATTN__BQ);
    }
    /* the same stage as attn__tile_chunk: softcap, bias, masks, online softmax */
    X.m = T->m; X.l = T->l; X.alpha = T->alpha; X.pos = T->pos; X.slope = T->slope;
    X.lo = T->lo; X.hi = T->hi; X.cap = T->cap;
    X.pre = (int)ATTN__MIN((long long)ATTN__MAX(P->sink, P->global), (long long)Lk);
    X.alibi = P->alibi != NULL;
    X.softcap = P->softcap;
    X.mask = !full;
    if (P->softcap > 0.0f && (P->bias || (!full && P->dilation > 1))) {
        for (j = 0; j < nk; ++j)
            for (r = 0; r < n; ++r) {
                float *sv = S + (size_t)j * ATTN__BQ + r;
                *sv = P->softcap * tanhf(*sv / P->softcap);
            }
        X.softcap = 0.0f;
    }
    if (P->bias) {
        for (r = 0; r < n; ++r) {
            const int bb = P->bias_batch == 1 ? 0 : seq, bh = P->bias_heads == 1 ? 0 : T->head[r];
            const float *br = P->bias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh +
                              (ptrdiff_t)T->qrow[r] * P->bias_sq + c0;
            for (j = 0; j < nk; ++j) S[(size_t)j * ATTN__BQ + r] += br[j];
        }
    }
    if (!full && P->dilation > 1) {
        for (r = 0; r < nlanes; ++r)
            for (j = 0; j < nk; ++j)
                if (r >= n || !attn__visible(P, (v0 + r) / g + shift, c0 + j)) S[(size_t)j * ATTN__BQ + r] = -INFINITY;
        X.mask = 0;
    }
    attn__softmax_avx512(S, nk, nlanes, (int)c0, &X);
#if defined(ATTN__AMX)
    if (kind == 2) {
        attn__bf16_pack_pt(S, nk, nk32, nlanes, (n + 31) & ~31, PP);
        attn__pv_amx(PP, nk32, (n + 31) & ~31, VP, G->ldv2, T->alpha, acc);
        return;
    }
#endif
    attn__bf16_pack_pp(S, nk, nlanes, PP);
    attn__bpv(PP, (nk + 1) / 2, n, VP, G->ldv2, Dv, T->alpha, acc, G->ldv2);
}

/* Rows v0..v0+n-1 (row v = query v / groups of head hk * groups + v % groups) of sequence
   seq (tensor batch tb, first q/k rows q0/k0, lengths Lq/Lk) over the keys [klo, khi): the
   bf16 counterpart of attn__tile_begin + attn__tile_keys + attn__tile_end. */
static void attn__bf16_tile(const attn__problem *P, int kind, float *ws, int tb, int seq, int q0, int k0, int Lq, int Lk,
                            int hk, int v0, int n, long long klo, long long khi, float *partial, size_t partial_row) {
    const attn__bgeo G = attn__bf16_geometry(P->q.dim, P->v.dim);
    attn__btile *T = (attn__btile *)(void *)ws;
    uint32_t *QP = (uint32_t *)(void *)(ws + G.qp);
    float *acc = ws + G.acc;
    const int D = P->q.dim, Dv = P->v.dim, g = P->groups;
    const long long shift = (long long)Lk - Lq, p0 = v0 / g + shift, p1 = (v0 + n - 1) / g + shift;
    long long ranges[2][2], c0;
    int r, ri, n_ranges;
    for (r = 0; r < ATTN__BQ; ++r) {               /* per-row masks, as attn__tile_begin */
        long long p, c, a, b;
        T->m[r] = -INFINITY; T->l[r] = 0.0f; T->alpha[r] = 1.0f;
        if (r >= n) { T->lo[r] = 0; T->hi[r] = -1; T->cap[r] = -1; T->pos[r] = 0.0f; T->slope[r] = 0.0f; T->head[r] = 0; T->qrow[r] = 0; continue; }
        T->head[r] = hk * g + (v0 + r) % g;
        T->qrow[r] = q0 + (v0 + r) / g;
        p = (v0 + r) / g + shift;
        c = P->causal ? ATTN__MIN(p, (long long)Lk - 1) : (long long)Lk - 1;
        if (p < P->global) { a = 0; b = Lk - 1; }
        else {
            a = P->window_left ? p - (long long)P->window_left : 0;
            b = P->window_right ? p + (long long)P->window_right : (long long)Lk - 1;
        }
        T->cap[r] = (int32_t)ATTN__MAX(c, -1LL);
        T->lo[r] = (int32_t)ATTN__MAX(a, 0LL);
        T->hi[r] = (int32_t)ATTN__MIN(b, (long long)Lk - 1);
        T->pos[r] = (float)p;
        T->slope[r] = P->alibi ? P->alibi[T->head[r]] : 0.0f;
    }
    {                                               /* queries in VNNI pairs, unscaled (exact) */
        const uint16_t *qr[ATTN__BQ];
        for (r = 0; r < ATTN__BQ; ++r) qr[r] = r < n ? (const uint16_t *)attn__at(&P->q, tb, T->qrow[r], T->head[r]) : NULL;
        attn__bf16_pack_q(qr, n, D, G.ldk2, QP);
    }
    memset(acc, 0, sizeof(float) * ATTN__BQ * G.ldv2);
#if defined(ATTN__AMX)
    if (kind == 2) attn__amx_begin();
#endif
    n_ranges = attn__key_ranges(P, p0, p1, Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        const long long a = ATTN__MAX(ranges[ri][0], klo), b = ATTN__MIN(ranges[ri][1], khi);
        for (c0 = a; c0 < b; c0 += ATTN__BK)
            attn__bf16_chunk(P, kind, &G, ws, tb, seq, k0, Lk, hk, v0, n, shift, p0, p1, c0, (int)ATTN__MIN((long long)ATTN__BK, b - c0));
    }
#if defined(ATTN__AMX)
    if (kind == 2) attn__amx_end();
#endif
    for (r = 0; r < n; ++r) {
        const float *ar = acc + (size_t)r * G.ldv2;
        if (partial) {
            float *pr = partial + (size_t)r * partial_row;
            memcpy(pr, ar, sizeof(float) * (size_t)Dv);
            pr[partial_row - 2] = T->m[r]; pr[partial_row - 1] = T->l[r];
        } else {
            attn__fwd_store(P, tb, T->qrow[r], T->head[r], ar, T->m[r], T->l[r]);
        }
    }
}
#endif /* ATTN__BF16K */

ATTNDEF const char *attn_bf16_kernels(void) {
#if defined(ATTN__BF16K)
    const int k = attn__pick_isa() == &attn__isa_avx512 ? attn__bf16_cpu() : 0;
    return k == 2 ? "amx" : k == 1 ? "avx512bf16" : "none";
#else
    return "none";
#endif
}

/* ---------------------------------------------------------------------------------------
   3.6 exact attention: masks, tiled online-softmax forward, split-KV
   --------------------------------------------------------------------------------------- */
static size_t attn__round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Key j (in [0, Lk)) visible from query position p: the SEMANTICS block, literally. */
static int attn__visible(const attn__problem *P, long long p, long long j) {
    long long t = p - j, D = P->dilation;
    if (P->causal && j > p) return 0;
    if (j < P->sink || j < P->global || p < P->global) return 1;
    if (D > 1 && t % D != 0) return 0;
    if (P->window_left && t > (long long)P->window_left * D) return 0;
    if (P->window_right && -t > (long long)P->window_right * D) return 0;
    return 1;
}

/* Whether every key in [c0, c1) is visible from every query position in [p0, p1]. */
static int attn__chunk_full(const attn__problem *P, long long p0, long long p1, long long c0, long long c1) {
    if (P->causal && c1 - 1 > p0) return 0;
    if (c1 <= P->sink || c1 <= P->global || p1 < P->global) return 1;
    if (P->dilation > 1) return 0;
    if (P->window_left && p1 - c0 > P->window_left) return 0;
    if (P->window_right && c1 - 1 - p0 > P->window_right) return 0;
    return 1;
}

/* Up to two key ranges [lo, hi) outside which no key is visible from positions [p0, p1]:
   fully masked chunks are never computed. Returns how many ranges. */
static int attn__key_ranges(const attn__problem *P, long long p0, long long p1, long long Lk, long long r[2][2]) {
    long long D = P->dilation, hi = Lk, pre, lo, lhi;
    if (P->causal) hi = ATTN__MIN(hi, p1 + 1);
    if (hi <= 0) return 0;
    if (p0 < P->global) { r[0][0] = 0; r[0][1] = hi; return 1; }
    pre = ATTN__MIN((long long)ATTN__MAX(P->sink, P->global), hi);
    lo = P->window_left ? ATTN__MAX(p0 - (long long)P->window_left * D, 0) : 0;
    lhi = P->window_right ? ATTN__MIN(p1 + (long long)P->window_right * D + 1, hi) : hi;
    if (lo >= lhi) { if (pre <= 0) return 0; r[0][0] = 0; r[0][1] = pre; return 1; }
    if (pre >= lo) { r[0][0] = 0; r[0][1] = ATTN__MAX(pre, lhi); return 1; }
    if (pre <= 0) { r[0][0] = lo; r[0][1] = lhi; return 1; }
    r[0][0] = 0; r[0][1] = pre; r[1][0] = lo; r[1][1] = lhi; return 2;
}

/* Where one sequence of the batch lives: tensor batch, its index for seqlens/bias, first row
   of q and of k on the tensors' seq axis, valid lengths. */
typedef struct attn__seq { int tb, seq, q0, k0, Lq, Lk; } attn__seq;

/* The sequence owning tensor row `row` of batch tb; 0 if none (padding, varlen tail). */
static int attn__seq_of_row(const attn__problem *P, int tb, int row, attn__seq *S) {
    if (P->cu_q) {
        int lo = 0, hi = P->n_seqs;                       /* last s with cu_q[s] <= row */
        while (hi - lo > 1) { int mid = (lo + hi) / 2; if (P->cu_q[mid] <= row) lo = mid; else hi = mid; }
        while (lo < P->n_seqs && P->cu_q[lo + 1] <= row) ++lo;   /* skip empty segments */
        if (lo >= P->n_seqs) return 0;
        S->tb = 0; S->seq = lo; S->q0 = P->cu_q[lo]; S->k0 = P->cu_k[lo];
        S->Lq = P->cu_q[lo + 1] - P->cu_q[lo]; S->Lk = P->cu_k[lo + 1] - P->cu_k[lo];
    } else {
        S->tb = tb; S->seq = tb; S->q0 = 0; S->k0 = 0;
        S->Lq = P->seqlens_q ? P->seqlens_q[tb] : P->q.seq;
        S->Lk = P->seqlens_k ? P->seqlens_k[tb] : P->k.seq;
        if (row >= S->Lq) return 0;
    }
    return 1;
}

/* One tile's state: its rows and their masks, packed queries, running softmax and output.
   Memory-bound decoding keeps one per KV head and walks the keys once for all of them. */
typedef struct attn__tile {
    attn__seq S;
    int hk, v0, n, nlanes, narrow;
    long long shift, p0, p1;                   /* query i sits at position i + shift */
    float *qt, *qr, *acc, *m, *l, *alpha;      /* workspace: [D][BQ], [16][ldk], [rows][ldo], [rows] */
    int32_t lo[ATTN__BQ], hi[ATTN__BQ], cap[ATTN__BQ];
    int head[ATTN__BQ], qrow[ATTN__BQ];
    float pos[ATTN__BQ], slope[ATTN__BQ];
} attn__tile;

/* Workspace geometry, in floats; every piece starts 64-byte aligned. */
typedef struct attn__fwd_geo {
    size_t ldk, ldv, ldo;        /* row strides of Q/K, V, out rows */
    size_t scratch;              /* S [BK][BQ], K and V chunk copies */
    size_t tile;                 /* a tile with ATTN__BQ rows: struct, QT, acc, m/l/alpha */
    size_t narrow_tile;          /* a tile with at most 16 rows: struct, QR, acc, m/l/alpha */
} attn__fwd_geo;

static attn__fwd_geo attn__fwd_geometry(int D, int Dv) {
    attn__fwd_geo g;
    const size_t st = attn__round16((sizeof(attn__tile) + sizeof(float) - 1) / sizeof(float));
    g.ldk = attn__round16((size_t)D); g.ldv = attn__round16((size_t)Dv); g.ldo = g.ldv;
    g.scratch = (size_t)ATTN__BK * ATTN__BQ + ATTN__BK * g.ldk + ATTN__BK * g.ldv;
    g.tile = st + g.ldk * ATTN__BQ + ATTN__BQ * g.ldo + 3 * ATTN__BQ;
    g.narrow_tile = st + 16 * g.ldk + 16 * g.ldo + 3 * 16;
    return g;
}

typedef struct attn__fwd_ctx {
    const attn__problem *P;
    const attn__isa *isa;
    attn__fwd_geo geo;
    float *ws;                 /* n_threads blocks of ws_floats */
    size_t ws_floats;
    float *partial;            /* n_splits > 1: [unit][split][unit_rows] x partial_row */
    size_t partial_row;        /* ldo acc floats, then m, l */
    int unit_rows;             /* rows in a unit: min(ATTN__BQ, q.seq * groups) */
    int units_per_head, n_units, n_splits, split_keys;
    int decode;                /* one narrow tile per (batch, KV head): a task takes every KV head */
    int bf16;                  /* 3.12 bf16 tile kernels: 0 none, 1 AVX512-BF16, 2 AMX */
} attn__fwd_ctx;

/* Writes one finished row: out = acc / l, lse = m + log l; zeros and -inf if l == 0. */
static void attn__fwd_store(const attn__problem *P, int tb, int row, int h, const float *acc, float m, float l) {
    void *o = attn__at(&P->out, tb, row, h);
    float *lse = P->lse ? P->lse + ((size_t)tb * P->q.heads + h) * P->q.seq + row : NULL;
    if (l > 0.0f) {
        attn__store_row(o, P->out.dtype, acc, P->v.dim, 1.0f / l);
        if (lse) *lse = m + logf(l);
    } else {
        attn__store_zero_row(o, P->out.dtype, P->v.dim);
        if (lse) *lse = -INFINITY;
    }
}

/* Sets up tile T in memory mem: rows v0..v0+n-1 (row v = query v / groups of head
   hk * groups + v % groups) of sequence S. */
static void attn__tile_begin(const attn__fwd_ctx *C, attn__tile *T, float *mem, const attn__seq *S, int hk, int v0, int n) {
    const attn__problem *P = C->P;
    const int D = P->q.dim, g = P->groups;
    const size_t st = attn__round16((sizeof(attn__tile) + sizeof(float) - 1) / sizeof(float));
    int r, d, rows;
    float qtmp[16];
    T->S = *S; T->hk = hk; T->v0 = v0; T->n = n;
    T->nlanes = (int)attn__round16((size_t)n);
    T->narrow = n <= 16 && C->isa->qk_narrow != NULL;
    T->shift = (long long)S->Lk - S->Lq;
    T->p0 = v0 / g + T->shift; T->p1 = (v0 + n - 1) / g + T->shift;
    rows = T->narrow ? 16 : ATTN__BQ;
    T->qt = mem + st;
    T->qr = T->qt;                                  /* a tile packs QT or QR, never both */
    T->acc = T->qt + (T->narrow ? 16 * C->geo.ldk : C->geo.ldk * ATTN__BQ);
    T->m = T->acc + (size_t)rows * C->geo.ldo; T->l = T->m + rows; T->alpha = T->l + rows;
    for (r = 0; r < T->nlanes; ++r) {
        long long p, c, a, b;
        if (r >= n) { T->lo[r] = 0; T->hi[r] = -1; T->cap[r] = -1; T->pos[r] = 0.0f; T->slope[r] = 0.0f; continue; }
        T->head[r] = hk * g + (v0 + r) % g;
        T->qrow[r] = S->q0 + (v0 + r) / g;
        p = (v0 + r) / g + T->shift;
        c = P->causal ? ATTN__MIN(p, (long long)S->Lk - 1) : (long long)S->Lk - 1;
        if (p < P->global) { a = 0; b = S->Lk - 1; }
        else {
            a = P->window_left ? p - (long long)P->window_left : 0;
            b = P->window_right ? p + (long long)P->window_right : (long long)S->Lk - 1;
        }
        T->cap[r] = (int32_t)ATTN__MAX(c, -1LL);
        T->lo[r] = (int32_t)ATTN__MAX(a, 0LL);
        T->hi[r] = (int32_t)ATTN__MIN(b, (long long)S->Lk - 1);
        T->pos[r] = (float)p;
        T->slope[r] = P->alibi ? P->alibi[T->head[r]] : 0.0f;
    }
    for (r = 0; r < T->nlanes; ++r) {             /* queries, scale folded in */
        for (d = 0; d < D; d += 16) {
            const int m = ATTN__MIN(16, D - d);
            int e;
            if (r < n) C->isa->load((const char *)attn__at(&P->q, S->tb, T->qrow[r], T->head[r]) + (size_t)d * P->q.esize,
                                    P->q.dtype, qtmp, m, P->scale);
            else for (e = 0; e < m; ++e) qtmp[e] = 0.0f;
            for (e = m; e < 16; ++e) qtmp[e] = 0.0f;
            /* QR rows are read 16 floats at a time with the K load masked: the padding must be
               0, not garbage (0 * NaN would poison the dot product) */
            if (T->narrow) memcpy(T->qr + (size_t)r * C->geo.ldk + d, qtmp, sizeof qtmp);
            else for (e = 0; e < m; ++e) T->qt[(size_t)(d + e) * ATTN__BQ + r] = qtmp[e];
        }
        T->m[r] = -INFINITY; T->l[r] = 0.0f;
        memset(T->acc + (size_t)r * C->geo.ldo, 0, sizeof(float) * C->geo.ldo);
    }
    if (!T->narrow && T->nlanes < ATTN__BQ)        /* the 64-lane QK kernel reads every lane */
        for (d = 0; d < D; ++d)
            memset(T->qt + (size_t)d * ATTN__BQ + T->nlanes, 0, sizeof(float) * (size_t)(ATTN__BQ - T->nlanes));
}

/* Keys [c0, c0 + nk) of the sequence into tile T. */
static void attn__tile_chunk(const attn__fwd_ctx *C, attn__tile *T, float *scratch, long long c0, int nk) {
    const attn__problem *P = C->P;
    const attn__isa *isa = C->isa;
    const int D = P->q.dim, Dv = P->v.dim, n = T->n, g = P->groups;
    const int full = attn__chunk_full(P, T->p0, T->p1, c0, c0 + nk);
    const char *kp = (const char *)attn__at(&P->k, T->S.tb, T->S.k0 + (int)c0, T->hk);
    const char *vp = (const char *)attn__at(&P->v, T->S.tb, T->S.k0 + (int)c0, T->hk);
    float *S = scratch, *kbuf = S + ATTN__BK * ATTN__BQ, *vbuf = kbuf + ATTN__BK * C->geo.ldk;
    const float *K, *V;
    ptrdiff_t ldk, ldv;
    attn__smx X;
    int r, j;
    if (P->k.dtype == ATTN_F32) {
        K = (const float *)kp; ldk = P->k.ss; V = (const float *)vp; ldv = P->v.ss;
    } else {                                        /* f16/bf16: convert once for all rows */
        const ptrdiff_t kst = P->k.ss * (ptrdiff_t)P->k.esize, vst = P->v.ss * (ptrdiff_t)P->v.esize;
        for (j = 0; j < nk; ++j) {
            isa->load(kp + (ptrdiff_t)j * kst, P->k.dtype, kbuf + (size_t)j * C->geo.ldk, D, 1.0f);
            isa->load(vp + (ptrdiff_t)j * vst, P->v.dtype, vbuf + (size_t)j * C->geo.ldv, Dv, 1.0f);
        }
        K = kbuf; ldk = (ptrdiff_t)C->geo.ldk; V = vbuf; ldv = (ptrdiff_t)C->geo.ldv;
    }
    if (T->narrow) isa->qk_narrow(K, ldk, nk, T->qr, C->geo.ldk, n, D, S);
    else isa->qk(K, ldk, nk, T->qt, T->nlanes, D, S);

    X.m = T->m; X.l = T->l; X.alpha = T->alpha; X.pos = T->pos; X.slope = T->slope;
    X.lo = T->lo; X.hi = T->hi; X.cap = T->cap;
    X.pre = (int)ATTN__MIN((long long)ATTN__MAX(P->sink, P->global), (long long)T->S.Lk);
    X.alibi = P->alibi != NULL;
    X.softcap = P->softcap;
    X.mask = !full;
    if (P->softcap > 0.0f && (P->bias || (!full && P->dilation > 1))) {
        /* softcap comes before bias and mask: apply it here, not in the stage */
        for (j = 0; j < nk; ++j)
            for (r = 0; r < n; ++r) {
                float *sv = S + (size_t)j * ATTN__BQ + r;
                *sv = P->softcap * tanhf(*sv / P->softcap);
            }
        X.softcap = 0.0f;
    }
    if (P->bias) {
        for (r = 0; r < n; ++r) {
            const int bb = P->bias_batch == 1 ? 0 : T->S.seq, bh = P->bias_heads == 1 ? 0 : T->head[r];
            const float *br = P->bias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh +
                              (ptrdiff_t)T->qrow[r] * P->bias_sq + c0;
            for (j = 0; j < nk; ++j) S[(size_t)j * ATTN__BQ + r] += br[j];
        }
    }
    if (!full && P->dilation > 1) {                 /* dilated windows: the rule per element */
        for (r = 0; r < T->nlanes; ++r)
            for (j = 0; j < nk; ++j)
                if (r >= n || !attn__visible(P, (T->v0 + r) / g + T->shift, c0 + j)) S[(size_t)j * ATTN__BQ + r] = -INFINITY;
        X.mask = 0;
    }
    isa->softmax(S, nk, T->nlanes, (int)c0, &X);
    isa->pv(S, nk, n, V, ldv, Dv, T->alpha, T->acc, C->geo.ldo);
}

/* Every visible key of [klo, khi) into tile T, chunk by chunk; fully masked chunks skipped. */
static void attn__tile_keys(const attn__fwd_ctx *C, attn__tile *T, float *scratch, long long klo, long long khi) {
    const attn__problem *P = C->P;
    long long ranges[2][2], c0;
    int ri, n_ranges = attn__key_ranges(P, T->p0, T->p1, T->S.Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        const long long a = ATTN__MAX(ranges[ri][0], klo), b = ATTN__MIN(ranges[ri][1], khi);
        for (c0 = a; c0 < b; c0 += ATTN__BK) {
            const int nk = (int)ATTN__MIN((long long)ATTN__BK, b - c0);
            attn__tile_chunk(C, T, scratch, c0, nk);
        }
    }
}

/* Finished rows to out/lse, or (partial != NULL, row stride partial_row) acc, m, l. */
static void attn__tile_end(const attn__fwd_ctx *C, const attn__tile *T, float *partial) {
    const int Dv = C->P->v.dim;
    int r;
    for (r = 0; r < T->n; ++r) {
        const float *acc = T->acc + (size_t)r * C->geo.ldo;
        if (partial) {
            float *pr = partial + (size_t)r * C->partial_row;
            memcpy(pr, acc, sizeof(float) * (size_t)Dv);
            pr[C->partial_row - 2] = T->m[r]; pr[C->partial_row - 1] = T->l[r];
        } else {
            attn__fwd_store(C->P, T->S.tb, T->qrow[r], T->head[r], acc, T->m[r], T->l[r]);
        }
    }
}

/* Partial slot of unit u, split s, first row v (relative to the unit). */
static float *attn__partial_at(const attn__fwd_ctx *C, int u, int s, int v) {
    return C->partial + (((size_t)u * C->n_splits + s) * C->unit_rows + (size_t)v) * C->partial_row;
}

/* Runs every tile of unit u (its rows, cut where the owning sequence changes) over the keys
   of one split; rows no sequence owns get zeros. */
static void attn__fwd_unit(const attn__fwd_ctx *C, float *ws, int u, int split) {
    const attn__problem *P = C->P;
    const int g = P->groups, blk = u % C->units_per_head, bh = u / C->units_per_head;
    const int hk = bh % P->k.heads, tb = bh / P->k.heads;
    const int vr0 = blk * ATTN__BQ, vr1 = (int)ATTN__MIN((long long)P->q.seq * g, (long long)vr0 + ATTN__BQ);
    attn__tile *T = (attn__tile *)(void *)(ws + C->geo.scratch);
    int v = vr0;
    while (v < vr1) {
        attn__seq S;
        const int row = v / g;
        if (!attn__seq_of_row(P, tb, row, &S)) {       /* no sequence owns this row: zeros */
            if (split == 0) attn__fwd_store(P, tb, row, hk * g + v % g, NULL, 0.0f, 0.0f);
            ++v;
            continue;
        }
        {
            const int end = (int)ATTN__MIN((long long)vr1, ((long long)S.q0 + S.Lq) * g);
            long long klo = 0, khi = S.Lk;
            if (C->n_splits > 1) { klo = (long long)split * C->split_keys; khi = ATTN__MIN(khi, klo + C->split_keys); }
#if defined(ATTN__BF16K)   /* 3.12: bf16 q/k/v on the bf16 dot-product / AMX tile kernels */
            if (C->bf16) {
                attn__bf16_tile(P, C->bf16, ws, S.tb, S.seq, S.q0, S.k0, S.Lq, S.Lk, hk, v - S.q0 * g, end - v, klo, khi,
                                C->n_splits > 1 ? attn__partial_at(C, u, split, v - vr0) : NULL, C->partial_row);
                v = end;
                continue;
            }
#endif
            attn__tile_begin(C, T, ws + C->geo.scratch, &S, hk, v - S.q0 * g, end - v);
            attn__tile_keys(C, T, ws, klo, khi);
            attn__tile_end(C, T, C->n_splits > 1 ? attn__partial_at(C, u, split, v - vr0) : NULL);
            v = end;
        }
    }
}

/* Decoding: all KV heads of batch tb over one split of the keys, chunk by chunk, so K and V
   are read as the contiguous [seq][heads][dim] rows they are (one head alone is a strided
   walk across pages that caps the read bandwidth far below the machine's). */
/* Decoding's per-KV-head tiles live one after another after the scratch. */
static attn__tile *attn__decode_tile(const attn__fwd_ctx *C, float *ws, int hk) {
    return (attn__tile *)(void *)(ws + C->geo.scratch + (size_t)hk * C->geo.narrow_tile);
}

static void attn__fwd_decode(const attn__fwd_ctx *C, float *ws, int tb, int split) {
    const attn__problem *P = C->P;
    const int g = P->groups, Hk = P->k.heads;
    attn__seq S;
    long long klo, khi, ranges[2][2], c0;
    int hk, ri, n_ranges, v, n;
    if (!attn__seq_of_row(P, tb, 0, &S)) S.Lq = 0;
    n = S.Lq * g;                                   /* rows past Lq are padding: zeros */
    if (split == 0)
        for (hk = 0; hk < Hk; ++hk)
            for (v = n; v < P->q.seq * g; ++v) attn__fwd_store(P, tb, v / g, hk * g + v % g, NULL, 0.0f, 0.0f);
    if (n == 0) return;
    klo = (long long)split * C->split_keys; khi = ATTN__MIN((long long)S.Lk, klo + C->split_keys);
    for (hk = 0; hk < Hk; ++hk) {
        attn__tile *T = attn__decode_tile(C, ws, hk);
        attn__tile_begin(C, T, (float *)(void *)T, &S, hk, 0, n);
    }
    n_ranges = attn__key_ranges(P, (long long)S.Lk - S.Lq, (long long)S.Lk - 1, S.Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        const long long a = ATTN__MAX(ranges[ri][0], klo), b = ATTN__MIN(ranges[ri][1], khi);
        for (c0 = a; c0 < b; c0 += ATTN__BK_DECODE) {
            const int nk = (int)ATTN__MIN((long long)ATTN__BK_DECODE, b - c0);
            for (hk = 0; hk < Hk; ++hk) attn__tile_chunk(C, attn__decode_tile(C, ws, hk), ws, c0, nk);
        }
    }
    for (hk = 0; hk < Hk; ++hk)
        attn__tile_end(C, attn__decode_tile(C, ws, hk), C->n_splits > 1 ? attn__partial_at(C, tb * Hk + hk, split, 0) : NULL);
}

static void attn__fwd_task(void *vctx, int task, int thread) {
    const attn__fwd_ctx *C = (const attn__fwd_ctx *)vctx;
    float *ws = C->ws + (size_t)thread * C->ws_floats;
    const int split = task % C->n_splits, t = task / C->n_splits;
    if (C->decode) { attn__fwd_decode(C, ws, t, split); return; }
    /* the last row blocks first: under a causal mask they carry the most keys */
    attn__fwd_unit(C, ws, (t / C->units_per_head) * C->units_per_head + (C->units_per_head - 1 - t % C->units_per_head), split);
}

/* Second pass with n_splits > 1: merge each row's partials in split order. */
static void attn__fwd_merge_task(void *vctx, int u, int thread) {
    const attn__fwd_ctx *C = (const attn__fwd_ctx *)vctx;
    const attn__problem *P = C->P;
    const int g = P->groups, blk = u % C->units_per_head, bh = u / C->units_per_head;
    const int hk = bh % P->k.heads, tb = bh / P->k.heads, Dv = P->v.dim;
    const int vr0 = blk * ATTN__BQ, vr1 = (int)ATTN__MIN((long long)P->q.seq * g, (long long)vr0 + ATTN__BQ);
    float *acc = C->ws + (size_t)thread * C->ws_floats;
    int v, s, c;
    for (v = vr0; v < vr1; ++v) {
        attn__seq S;
        const int row = v / g;
        float mx = -INFINITY, l = 0.0f;
        if (!attn__seq_of_row(P, tb, row, &S)) continue;       /* zeroed by split 0 */
        for (s = 0; s < C->n_splits; ++s) mx = ATTN__MAX(mx, attn__partial_at(C, u, s, v - vr0)[C->partial_row - 2]);
        for (c = 0; c < Dv; ++c) acc[c] = 0.0f;
        if (mx != -INFINITY)
            for (s = 0; s < C->n_splits; ++s) {
                const float *pr = attn__partial_at(C, u, s, v - vr0);
                const float f = pr[C->partial_row - 2] == -INFINITY ? 0.0f : expf(pr[C->partial_row - 2] - mx);
                l += f * pr[C->partial_row - 1];
                for (c = 0; c < Dv; ++c) acc[c] += f * pr[c];
            }
        attn__fwd_store(P, tb, row, hk * g + v % g, acc, mx, l);
    }
}

/* Plans the decomposition and sizes the workspace. */
static attn_status attn__fwd_plan(const attn__problem *P, const attn__isa *isa, attn__fwd_ctx *C, size_t *bytes) {
    size_t units, tasks, per_thread, total, partial = 0, heads_mem;
    const size_t vrows = (size_t)P->q.seq * (size_t)P->groups;
    memset(C, 0, sizeof *C);
    C->P = P; C->isa = isa;
    C->geo = attn__fwd_geometry(P->q.dim, P->v.dim);
    if (vrows / ATTN__BQ >= (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;
    C->units_per_head = (int)((vrows + ATTN__BQ - 1) / ATTN__BQ);
    C->unit_rows = (int)ATTN__MIN(vrows, (size_t)ATTN__BQ);
    if (!attn__mul_size((size_t)C->units_per_head, (size_t)P->k.heads * (size_t)P->q.batch, &units) || units > INT_MAX)
        return ATTN_ERR_OVERFLOW;
    C->n_units = (int)units;
    C->decode = vrows <= 16 && isa->qk_narrow != NULL && !P->cu_q;
    /* flash-decoding: too few units to keep a machine busy -> cut the keys into splits of
       at least 8 chunks, aiming at 32 tasks; depends on shapes only, never on threads */
    C->n_splits = 1;
    {
        const long long work = C->decode ? P->q.batch : (long long)units;
        if (work < 32) {
            const long long min_keys = 8LL * ATTN__BK;
            const long long want = (32 + work - 1) / work, by_len = ((long long)P->k.seq + min_keys - 1) / min_keys;
            C->n_splits = (int)ATTN__MAX(1LL, ATTN__MIN(want, by_len));
        }
    }
    C->split_keys = (int)((((long long)P->k.seq + C->n_splits - 1) / C->n_splits + ATTN__BK - 1) / ATTN__BK * ATTN__BK);
    if (!attn__mul_size(C->decode ? (size_t)P->q.batch : units, (size_t)C->n_splits, &tasks) || tasks > INT_MAX)
        return ATTN_ERR_OVERFLOW;
    C->partial_row = C->geo.ldo + 2;
    if (!attn__mul_size(C->geo.narrow_tile, (size_t)P->k.heads, &heads_mem)) return ATTN_ERR_OVERFLOW;
    C->ws_floats = C->geo.scratch + (C->decode ? heads_mem : C->geo.tile);
    C->ws_floats = ATTN__MAX(C->ws_floats, C->geo.ldo);          /* the merge pass's row */
#if defined(ATTN__BF16K)   /* 3.12: bf16 prefill on the bf16 kernels, with their own tile memory */
    C->bf16 = C->decode || isa != &attn__isa_avx512 ? 0 : attn__bf16_kernel(P);
    if (C->bf16) C->ws_floats = ATTN__MAX(C->ws_floats, attn__bf16_geometry(P->q.dim, P->v.dim).total);
#endif
    if (!attn__mul_size(C->ws_floats, (size_t)P->n_threads, &per_thread)) return ATTN_ERR_OVERFLOW;
    if (C->n_splits > 1 && (!attn__mul_size(units * (size_t)C->n_splits, (size_t)C->unit_rows, &partial) ||
                            !attn__mul_size(partial, C->partial_row, &partial))) return ATTN_ERR_OVERFLOW;
    if (!attn__add_size(per_thread, partial, &total) || !attn__mul_size(total, sizeof(float), &total) ||
        !attn__add_size(total, ATTN__ALIGN, bytes)) return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}

ATTNDEF const char *attn_kernels(void) { return attn__pick_isa()->name; }

ATTNDEF attn_status attn_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, size_t *bytes) {
    attn__problem P;
    attn__fwd_ctx C;
    attn_status s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(desc, &q, &k, &v, NULL, &P)) != ATTN_OK) return s;
    return attn__fwd_plan(&P, attn__pick_isa(), &C, bytes);
}

ATTNDEF attn_status attn_forward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                 attn_tensor out, float *lse) {
    attn__problem P;
    attn__fwd_ctx C;
    size_t bytes;
    void *owned = NULL;
    char *base;
    attn_status s;
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(desc, &q, &k, &v, &out, &P)) != ATTN_OK) return s;
    P.lse = lse;
    if ((s = attn__fwd_plan(&P, attn__pick_isa(), &C, &bytes)) != ATTN_OK) return s;
    if (desc->workspace) {
        if (desc->workspace_size < bytes) return ATTN_ERR_WORKSPACE;
        base = (char *)desc->workspace;
    } else {
        if (!(owned = attn__alloc(bytes))) return ATTN_ERR_OUT_OF_MEMORY;
        base = (char *)owned;
    }
    base += (ATTN__ALIGN - (uintptr_t)base % ATTN__ALIGN) % ATTN__ALIGN;
    C.ws = (float *)(void *)base;
    C.partial = C.ws + C.ws_floats * (size_t)P.n_threads;
    attn__parallel_for(desc, (C.decode ? q.batch : C.n_units) * C.n_splits, P.n_threads, attn__fwd_task, &C);
    if (C.n_splits > 1) attn__parallel_for(desc, C.n_units, P.n_threads, attn__fwd_merge_task, &C);
    attn__free(owned);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.7 merge of partial results
   --------------------------------------------------------------------------------------- */
ATTNDEF attn_status attn_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse,
                               attn_tensor out, float *lse) {
    attn__view o, *pv;
    float *w;
    int p, b, s, h, c;
    attn_status st;
    if (n_parts < 1) return ATTN_ERR_MERGE_N_PARTS;
    if (!parts || !part_lse) return ATTN_ERR_MERGE_NULL;
    if (!out.data) return ATTN_ERR_NULL_OUT;
    for (p = 0; p < n_parts; ++p) if (!parts[p].data || !part_lse[p]) return ATTN_ERR_MERGE_NULL;
    if (!attn__dtype_ok(out.dtype)) return ATTN_ERR_DTYPE;
    for (p = 0; p < n_parts; ++p) if (!attn__dtype_ok(parts[p].dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(&out)) return ATTN_ERR_OUT_SHAPE;
    for (p = 0; p < n_parts; ++p)
        if (parts[p].batch != out.batch || parts[p].seq != out.seq || parts[p].heads != out.heads || parts[p].dim != out.dim)
            return ATTN_ERR_MERGE_SHAPE;
    if (!(out.stride_batch == 0 && out.stride_seq == 0 && out.stride_head == 0) &&
        ((out.batch > 1 && out.stride_batch == 0) || (out.seq > 1 && out.stride_seq == 0) ||
         (out.heads > 1 && out.stride_head == 0)))
        return ATTN_ERR_OUT_BROADCAST;
    if ((st = attn__make_view(&out, &o)) != ATTN_OK) return st;
    {
        size_t n, bytes;
        if (!attn__mul_size((size_t)out.batch, (size_t)out.heads, &n) || !attn__mul_size(n, (size_t)out.seq, &n) ||
            n > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
        if (!attn__mul_size((size_t)n_parts, sizeof(attn__view) + sizeof(float), &bytes)) return ATTN_ERR_OVERFLOW;
        pv = (attn__view *)attn__alloc(bytes);
        if (!pv) return ATTN_ERR_OUT_OF_MEMORY;
    }
    w = (float *)(pv + n_parts);
    for (p = 0; p < n_parts; ++p)
        if ((st = attn__make_view(&parts[p], &pv[p])) != ATTN_OK) { attn__free(pv); return st; }

    for (b = 0; b < out.batch; ++b)
        for (h = 0; h < out.heads; ++h)
            for (s = 0; s < out.seq; ++s) {
                const size_t li = ((size_t)b * out.heads + h) * out.seq + s;
                float mx = -INFINITY, sum = 0.0f, total;
                for (p = 0; p < n_parts; ++p) mx = ATTN__MAX(mx, part_lse[p][li]);
                if (mx == -INFINITY) {
                    attn__store_zero_row(attn__at(&o, b, s, h), o.dtype, o.dim);
                    if (lse) lse[li] = -INFINITY;
                    continue;
                }
                for (p = 0; p < n_parts; ++p) { w[p] = expf(part_lse[p][li] - mx); sum += w[p]; }
                total = mx + logf(sum);
                for (p = 0; p < n_parts; ++p) w[p] /= sum;
                /* element by element, all parts read before the element is written: in-place safe */
                for (c = 0; c < o.dim; c += 16) {
                    float acc[16], tmp[16];
                    int n = ATTN__MIN(16, o.dim - c), e;
                    for (e = 0; e < n; ++e) acc[e] = 0.0f;
                    for (p = 0; p < n_parts; ++p) {
                        attn__load_row((const char *)attn__at(&pv[p], b, s, h) + (size_t)c * pv[p].esize, pv[p].dtype, tmp, n, w[p]);
                        for (e = 0; e < n; ++e) acc[e] += tmp[e];
                    }
                    attn__store_row((char *)attn__at(&o, b, s, h) + (size_t)c * o.esize, o.dtype, acc, n, 1.0f);
                }
                if (lse) lse[li] = total;
            }
    attn__free(pv);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.8 exact attention backward (FlashAttention-2 recomputation), dropout
   --------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------
   3.9 GEMM (blocked SIMD SGEMM for the layers, caller BLAS hook)
   --------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------
   3.10 layers: standard MHA, Optimized, Efficient, Super, Direct
   --------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------
   3.11 generation: KV caches (contiguous, paged), RoPE, StreamingLLM, EL-attention
   --------------------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif
#endif /* ATTN__IMPLEMENTATION_DONE */
#endif /* ATTN_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
4. License: this software is available under 2 licenses -- choose whichever you prefer.
------------------------------------------------------------------------------
ALTERNATIVE A - MIT License
Copyright (c) 2026 the attn.h authors
Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
associated documentation files (the "Software"), to deal in the Software without restriction,
including without limitation the rights to use, copy, modify, merge, publish, distribute,
sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:
The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.
THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT
NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES
OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
------------------------------------------------------------------------------
ALTERNATIVE B - Public Domain (www.unlicense.org)
This is free and unencumbered software released into the public domain. Anyone is free to copy,
modify, publish, use, compile, sell, or distribute this software, either in source code form or as
a compiled binary, for any purpose, commercial or non-commercial, and by any means.
------------------------------------------------------------------------------
*/
