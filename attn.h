/* attn.h - v0.1 - exact and approximate attention for C99 - public domain or MIT (see end of file)

   Table of contents
     1. Documentation (this block)
     2. Public API: types, status codes, functions
     3. Implementation (#define ATTN_IMPLEMENTATION)
        3.1 portability and configuration
        3.2 memory and threads
        3.3 numerics: fp16/bf16 conversion
        3.4 argument validation
        3.5 exact attention: masks, tiled online-softmax forward
        3.6 merge of partial results
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
                                                attn_workspace_size() for the size needed */
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
    X(ATTN_ERR_NULL_ARG,              ATTN_CAT_NULL,        "a required pointer argument is NULL") \
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
    X(ATTN_ERR_OVERFLOW,              ATTN_CAT_OVERFLOW,    "a tensor's size or strides overflow ptrdiff_t/size_t") \
    X(ATTN_ERR_OUT_OF_MEMORY,         ATTN_CAT_MEMORY,      "out of memory (workspace allocation failed)") \
    X(ATTN_ERR_THREADS,               ATTN_CAT_MEMORY,      "could not start worker threads")

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

#ifdef __cplusplus
}
#endif
#endif /* ATTN_H_INCLUDED */
