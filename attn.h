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
#else
    i = p->next++;
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
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.5 exact attention: masks, tiled online-softmax forward
   --------------------------------------------------------------------------------------- */
#define ATTN__BQ 64          /* query rows per tile */
#define ATTN__BK 64          /* keys per tile */

static size_t attn__round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Key j (in [0, Lk)) visible from query position p (see the SEMANTICS block). */
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
    long long D = P->dilation;
    if (P->causal && c1 - 1 > p0) return 0;
    if (c1 <= P->sink || c1 <= P->global || p1 < P->global) return 1;
    if (D > 1) return 0;
    if (P->window_left && p1 - c0 > P->window_left) return 0;
    if (P->window_right && c1 - 1 - p0 > P->window_right) return 0;
    return 1;
}

/* Up to two key ranges [lo, hi) outside which no key is visible from positions [p0, p1].
   Returns how many. */
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

/* --- tile kernels: the only loops that see O(tile * dim) work ------------------------ */

/* S[r][j] = sum_d Q[r][d] * Kt[d][j]  (Q row-major ldq, Kt is K transposed, ldk) */
static void attn__qk_scalar(const float *Q, size_t ldq, const float *Kt, size_t ldk, int nq, int nk, int D,
                            float *S, size_t lds) {
    int r, j, d;
    for (r = 0; r < nq; ++r) {
        float *s = S + (size_t)r * lds;
        for (j = 0; j < nk; ++j) s[j] = 0.0f;
        for (d = 0; d < D; ++d) {
            const float qd = Q[(size_t)r * ldq + d], *kt = Kt + (size_t)d * ldk;
            for (j = 0; j < nk; ++j) s[j] += qd * kt[j];
        }
    }
}
/* O[r][c] += sum_j P[r][j] * V[j][c] */
static void attn__pv_scalar(const float *Pm, size_t ldp, const float *V, size_t ldv, int nq, int nk, int Dv,
                            float *O, size_t ldo) {
    int r, j, c;
    for (r = 0; r < nq; ++r) {
        float *o = O + (size_t)r * ldo;
        for (j = 0; j < nk; ++j) {
            const float p = Pm[(size_t)r * ldp + j], *vj = V + (size_t)j * ldv;
            if (p == 0.0f) continue;
            for (c = 0; c < Dv; ++c) o[c] += p * vj[c];
        }
    }
}

/* Per-thread scratch for the forward: tiles of Q, K^T, V, scores, accumulators. */
typedef struct attn__fwd_ws {
    float *q, *kt, *v, *s, *acc, *m, *l;
    size_t ldq, ldk, ldv, lds, ldo;
} attn__fwd_ws;

static size_t attn__fwd_ws_floats(int D, int Dv) {
    size_t dq = attn__round16((size_t)D), dv = attn__round16((size_t)Dv);
    return ATTN__BQ * dq + dq * ATTN__BK + ATTN__BK * dv + ATTN__BQ * ATTN__BK + ATTN__BQ * dv + 2 * ATTN__BQ;
}
static attn__fwd_ws attn__fwd_ws_at(float *base, int D, int Dv) {
    attn__fwd_ws w;
    w.ldq = attn__round16((size_t)D); w.ldk = ATTN__BK; w.ldv = attn__round16((size_t)Dv);
    w.lds = ATTN__BK; w.ldo = w.ldv;
    w.q = base; w.kt = w.q + ATTN__BQ * w.ldq; w.v = w.kt + w.ldq * ATTN__BK;
    w.s = w.v + ATTN__BK * w.ldv; w.acc = w.s + ATTN__BQ * ATTN__BK; w.m = w.acc + ATTN__BQ * w.ldo;
    w.l = w.m + ATTN__BQ;
    return w;
}

/* Where one sequence of the batch lives: tensor batch index, first row of q and k in the
   tensor's seq axis, valid lengths. */
typedef struct attn__seq { int tb, seq, q0, k0, Lq, Lk; } attn__seq;

typedef struct attn__fwd_ctx {
    const attn__problem *P;
    float *ws;                 /* n_threads per-thread blocks */
    size_t ws_floats;
    int row_blocks;            /* tiles of ATTN__BQ rows along q.seq */
} attn__fwd_ctx;

/* Rows [i0, i0+nq) (indices inside sequence S) of head h: full online-softmax pass. */
static void attn__fwd_tile(const attn__problem *P, attn__fwd_ws *w, const attn__seq *S, int h, int i0, int nq) {
    const int D = P->q.dim, Dv = P->v.dim, hk = h / P->groups;
    const long long shift = (long long)S->Lk - S->Lq;      /* position of query i is i + shift */
    const long long p0 = i0 + shift, p1 = i0 + nq - 1 + shift;
    const float slope = P->alibi ? P->alibi[h] : 0.0f;
    const float *bias = NULL;
    long long ranges[2][2];
    int n_ranges, ri, r, j, c;

    if (P->bias) {
        int bb = P->bias_batch == 1 ? 0 : S->seq, bh = P->bias_heads == 1 ? 0 : h;
        bias = P->bias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh;
    }
    for (r = 0; r < nq; ++r) {
        attn__load_row(attn__at(&P->q, S->tb, S->q0 + i0 + r, h), P->q.dtype, w->q + (size_t)r * w->ldq, D, P->scale);
        w->m[r] = -INFINITY; w->l[r] = 0.0f;
        for (c = 0; c < Dv; ++c) w->acc[(size_t)r * w->ldo + c] = 0.0f;
    }
    n_ranges = attn__key_ranges(P, p0, p1, S->Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        long long c0;
        for (c0 = ranges[ri][0]; c0 < ranges[ri][1]; c0 += ATTN__BK) {
            const int nk = (int)ATTN__MIN((long long)ATTN__BK, ranges[ri][1] - c0);
            const int full = attn__chunk_full(P, p0, p1, c0, c0 + nk);
            const float *vt;
            size_t ldv;
            /* K^T tile and V tile in fp32 (f32 V with unit dim stride is read in place) */
            for (j = 0; j < nk; ++j) {
                float tmp[16];
                const char *kr = (const char *)attn__at(&P->k, S->tb, S->k0 + (int)c0 + j, hk);
                int d0;
                for (d0 = 0; d0 < D; d0 += 16) {
                    int n = ATTN__MIN(16, D - d0), d;
                    attn__load_row(kr + (size_t)d0 * P->k.esize, P->k.dtype, tmp, n, 1.0f);
                    for (d = 0; d < n; ++d) w->kt[(size_t)(d0 + d) * w->ldk + j] = tmp[d];
                }
            }
            if (P->v.dtype == ATTN_F32) {
                vt = (const float *)attn__at(&P->v, S->tb, S->k0 + (int)c0, hk);
                ldv = (size_t)P->v.ss;
                if (P->v.ss < 0 || nk == 1) ldv = 0;     /* negative/unused stride: copy below */
            } else {
                ldv = 0; vt = NULL;
            }
            if (ldv == 0) {
                for (j = 0; j < nk; ++j)
                    attn__load_row(attn__at(&P->v, S->tb, S->k0 + (int)c0 + j, hk), P->v.dtype, w->v + (size_t)j * w->ldv, Dv, 1.0f);
                vt = w->v; ldv = w->ldv;
            }
            attn__qk_scalar(w->q, w->ldq, w->kt, w->ldk, nq, nk, D, w->s, w->lds);

            for (r = 0; r < nq; ++r) {
                float *s = w->s + (size_t)r * w->lds, mx = -INFINITY, mnew, alpha, sum = 0.0f;
                const long long p = p0 + r;
                if (P->softcap > 0.0f) {
                    const float cap = P->softcap, inv = 1.0f / P->softcap;
                    for (j = 0; j < nk; ++j) s[j] = cap * tanhf(s[j] * inv);
                }
                if (P->alibi) for (j = 0; j < nk; ++j) s[j] -= slope * fabsf((float)(p - (c0 + j)));
                if (bias) {
                    const float *br = bias + (ptrdiff_t)(S->q0 + i0 + r) * P->bias_sq + c0;
                    for (j = 0; j < nk; ++j) s[j] += br[j];
                }
                if (!full) for (j = 0; j < nk; ++j) if (!attn__visible(P, p, c0 + j)) s[j] = -INFINITY;
                for (j = 0; j < nk; ++j) mx = s[j] > mx ? s[j] : mx;
                mnew = ATTN__MAX(w->m[r], mx);
                if (mnew == -INFINITY) { for (j = 0; j < nk; ++j) s[j] = 0.0f; continue; }
                alpha = expf(w->m[r] - mnew);
                for (j = 0; j < nk; ++j) { s[j] = expf(s[j] - mnew); sum += s[j]; }
                w->l[r] = w->l[r] * alpha + sum;
                w->m[r] = mnew;
                if (alpha != 1.0f) { float *o = w->acc + (size_t)r * w->ldo; for (c = 0; c < Dv; ++c) o[c] *= alpha; }
            }
            attn__pv_scalar(w->s, w->lds, vt, ldv, nq, nk, Dv, w->acc, w->ldo);
        }
    }
    for (r = 0; r < nq; ++r) {
        void *o = attn__at(&P->out, S->tb, S->q0 + i0 + r, h);
        float *lse = P->lse ? P->lse + ((size_t)S->tb * P->q.heads + h) * P->q.seq + S->q0 + i0 + r : NULL;
        if (w->l[r] > 0.0f) {
            attn__store_row(o, P->out.dtype, w->acc + (size_t)r * w->ldo, Dv, 1.0f / w->l[r]);
            if (lse) *lse = w->m[r] + logf(w->l[r]);
        } else {
            attn__store_zero_row(o, P->out.dtype, Dv);
            if (lse) *lse = -INFINITY;
        }
    }
}

/* Zero output and -inf lse for tensor rows no sequence owns (padding, varlen tail). */
static void attn__fwd_empty_row(const attn__problem *P, int tb, int row, int h) {
    attn__store_zero_row(attn__at(&P->out, tb, row, h), P->out.dtype, P->v.dim);
    if (P->lse) P->lse[((size_t)tb * P->q.heads + h) * P->q.seq + row] = -INFINITY;
}

/* The sequence that owns tensor row `row` of batch tb; 0 if none. */
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

/* One task: ATTN__BQ tensor rows of one (batch, head). Rows are cut where sequences change. */
static void attn__fwd_task(void *vctx, int task, int thread) {
    const attn__fwd_ctx *ctx = (const attn__fwd_ctx *)vctx;
    const attn__problem *P = ctx->P;
    attn__fwd_ws w = attn__fwd_ws_at(ctx->ws + (size_t)thread * ctx->ws_floats, P->q.dim, P->v.dim);
    const int blk = task % ctx->row_blocks, bh = task / ctx->row_blocks;
    const int h = bh % P->q.heads, tb = bh / P->q.heads;
    const int r1 = ATTN__MIN(P->q.seq, (blk + 1) * ATTN__BQ);
    int row = blk * ATTN__BQ;
    while (row < r1) {
        attn__seq S;
        if (!attn__seq_of_row(P, tb, row, &S)) { attn__fwd_empty_row(P, tb, row, h); ++row; continue; }
        {
            const int end = ATTN__MIN(r1, S.q0 + S.Lq);
            attn__fwd_tile(P, &w, &S, h, row - S.q0, end - row);
            row = end;
        }
    }
}

static attn_status attn__fwd_workspace(const attn__problem *P, size_t *floats_per_thread, size_t *bytes) {
    size_t n = attn__fwd_ws_floats(P->q.dim, P->v.dim);
    if (!attn__mul_size(n, (size_t)P->n_threads, bytes) || !attn__mul_size(*bytes, sizeof(float), bytes) ||
        !attn__add_size(*bytes, ATTN__ALIGN, bytes)) return ATTN_ERR_OVERFLOW;
    *floats_per_thread = n;
    return ATTN_OK;
}

ATTNDEF attn_status attn_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, size_t *bytes) {
    attn__problem P;
    size_t per;
    attn_status s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(desc, &q, &k, &v, NULL, &P)) != ATTN_OK) return s;
    return attn__fwd_workspace(&P, &per, bytes);
}

ATTNDEF attn_status attn_forward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                 attn_tensor out, float *lse) {
    attn__problem P;
    attn__fwd_ctx ctx;
    size_t bytes, n_tasks;
    void *owned = NULL;
    attn_status s;
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(desc, &q, &k, &v, &out, &P)) != ATTN_OK) return s;
    P.lse = lse;
    if ((s = attn__fwd_workspace(&P, &ctx.ws_floats, &bytes)) != ATTN_OK) return s;
    ctx.row_blocks = (q.seq + ATTN__BQ - 1) / ATTN__BQ;
    if (!attn__mul_size((size_t)ctx.row_blocks, (size_t)q.heads, &n_tasks) ||
        !attn__mul_size(n_tasks, (size_t)q.batch, &n_tasks) || n_tasks > INT_MAX) return ATTN_ERR_OVERFLOW;
    if (desc->workspace) {
        if (desc->workspace_size < bytes) return ATTN_ERR_WORKSPACE;
        ctx.ws = (float *)desc->workspace;
        ctx.ws = (float *)((char *)ctx.ws + (ATTN__ALIGN - (uintptr_t)ctx.ws % ATTN__ALIGN) % ATTN__ALIGN);
    } else {
        if (!(owned = attn__alloc(bytes))) return ATTN_ERR_OUT_OF_MEMORY;
        ctx.ws = (float *)owned;
    }
    ctx.P = &P;
    attn__parallel_for(desc, (int)n_tasks, P.n_threads, attn__fwd_task, &ctx);
    attn__free(owned);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.6 merge of partial results
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

#ifdef __cplusplus
}
#endif
/* ATTN_IMPL_READY */
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
