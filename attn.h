/* attn.h - v0.3 - exact and approximate attention for C99 - public domain or MIT (see end of file)

   Table of contents (each section starts with a banner "   3.N title"; grep "3.N " to jump)
     1. Documentation (this block)
     2. Public API: types, status codes, functions
     3. Implementation (#define ATTN_IMPLEMENTATION)
        3.1 portability and configuration (attn__lse_weights: the one logsumexp merge)
        3.2 memory and threads (checked sizes, attn__parallel_for, attn_pool)
        3.3 numerics: fp16/bf16 conversion
        3.4 argument validation and the mechanism seam (attn__call, attn__mech, attn__check_qkv,
            attn__check_forward: how a family plugs in is described there; attn__ovl: the one
            overlap check of every call that writes)
        3.5 micro-kernels and the vector layer: scalar, AVX2+FMA, AVX-512 (run-time dispatch),
            NEON (attn__isa, attn__pick_isa, attn__vec)
        3.6 AMX / AVX512-BF16 tile kernels (bf16)
        3.7 exact attention: masks, tiled online-softmax forward, split-KV, decoding kernels
            (attn__fwd_plan, attn__fwd_unit, attn__dec512, attn__dec256, attn__softmax_forward)
        3.8 merge of partial results (attn_merge)
        3.9 exact attention backward: FlashAttention-2 recomputation, dropout
            (attn__bwd_plan, attn__softmax_backward)
        3.10 GEMM: blocked SIMD SGEMM (attn__sgemm_par, attn_sgemm)
        3.11 layers: standard MHA, Optimized, Efficient, Super, Direct
        3.12 generation: KV caches (contiguous, paged), RoPE, StreamingLLM, decoding
             (attn__softmax_decode), EL-attention
        3.13 sparse attention: ATTN_LONGFORMER (the exact core per run of heads sharing a
             dilation; attn__lfg_task with a global_mask), attn__bsr (the block-sparse kernel on the exact core's tiles),
             ATTN_BIGBIRD, ATTN_LSH (attn__lsh_task), ATTN_ROUTING (attn__rt_task)
        3.14 linear and kernel attention: the ATTN_LINEAR core (attn__lin_task: chunked causal,
             state for attn_step) shared by ATTN_COSFORMER and ATTN_PERFORMER (attn__perf_task:
             split stabilised state; attn__perf_draw: RNG, Householder QR), their backward
             (attn__lbw_task; non-causal attn__lnc_task; attn__linear_backward), RWKV-4 and RWKV-5/6 scans
        3.15 low-rank attention: Linformer (attn__linformer_forward/_backward: SGEMM
             projections around the exact kernel), Nystromformer (attn__nystrom_forward:
             landmarks, chunked B V, attn__nys_pinv, blocked F W + conv), attn_nystrom_pinv
        3.16 state-space scans and their backwards: Mamba selective scan (real or complex A),
             its step, causal conv1d, S4D (attn__ssm_scan_task, attn__ssm_bwd_task,
             attn__ssm_conv_task, attn__ssm_convb_task, attn__s4d_task, attn__s4db_task)
        3.17 the mechanism table (attn__mech_of) and the public entry points that dispatch
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
                        where the CPU has it, else on the fp32 kernels); see 3.6
   x86 kernels are compiled with per-function target attributes and picked at run time
   (cpuid), so a binary built without -march runs AVX-512 or AVX2 where the CPU has them;
   AArch64 builds use the NEON kernels; ATTN_NO_SIMD (or any other CPU) the scalar ones.
   attn_kernels() names the set in use ("avx512", "avx2", "neon" or "scalar").
   Storage dtypes: q and out may each be f32, f16 or bf16; k and v share one (so f32 queries
   over an f16/bf16 cache, as llama.cpp holds it, are fine).
   bf16 q/k/v outside decoding run on bf16 dot-product tiles (AMX, else AVX512-BF16; gcc >= 11
   or clang >= 12) that round the softmax weights P to bf16 for P.V: |error| <= 2^-9 max|v|.
   attn_bf16_kernels() names them; attn_desc.bf16_kernels = ATTN_BF16_FP32 keeps such calls on the fp32 kernels.

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
     Non-finite values propagate as the maths does (NaN in, NaN out, as PyTorch and
     FlashAttention do): a visible logit s_ij that is NaN or +inf (NaN/inf in q or k, a +inf
     bias, a scale whose products overflow to +inf) makes row i's out and lse NaN. A logit of
     -inf (a -inf bias, a product that overflows to -inf) is a masked key, so a row whose
     visible logits are all -inf is 0 / -inf like a row with no key. Keys that are not visible
     never change the logits; their v rows are read only inside a 64-key block that holds a
     visible key, where they are multiplied by weight 0: NaN/inf there reaches out (0 * inf is
     NaN), as in PyTorch and FlashAttention (which rows, depends on the kernels). Keys past the
     valid length (seqlens_k, cu_seqlens_k) are never read. NaN/inf in visible v rows reaches
     out through the weighted sum.
     ALiBi distances |p - j| are exact integers converted to fp32 once (exact up to 2^24;
     beyond, one rounding), so ALiBi holds at any position.
     So: window_left = w-1 with causal = Mistral's sliding window w; sinks and global tokens
     bypass the window and dilation but never causality or padding. ATTN_LONGFORMER's
     longformer.global_mask adds per-token global positions to this rule (see its struct).

   LAYERS (attn_layer_forward / attn_layer_backward): hidden states + weights -> output for
     standard MHA and the cost-effective variants (Optimized, Efficient, Super) and Direct
     attention; the exact formula of each is documented with attn_layer_kind (section 2).

   LOW-RANK (attn_forward with kind ATTN_LINFORMER or ATTN_NYSTROM; parameters in
     attn_desc.linformer / .nystrom, formulas and defaults with attn_linformer_params and
     attn_nystrom_params in section 2): Linformer = exact attention over E K, F V (forward and
     backward, dE/dF; its dropout mask indexes the k projected keys as j); Nystromformer =
     F pinv(A) (B V) with segment-mean landmarks, forward only.

   DROPOUT (attn_desc.dropout_p = p > 0; FlashAttention's placement)
     out_i = sum_j softmax_ij * z_ij * v_j with z_ij = keep_ij / (1 - p); lse stays the
     logsumexp of the undropped logits. keep_ij is a pure function of (dropout_seed, b, h, i, j)
     with b the tensor batch, h the query head, i the q tensor row, j the k tensor row (packed
     varlen: positions in the packed tensors), so attn_backward regenerates the forward's mask:
       u64 mix(u64 z) { z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
                        z *= 0x94D049BB133111EB; return z ^ (z >> 31); }
       u32 low(u32 x) { x ^= x >> 16; x *= 0x7FEB352D; x ^= x >> 15; x *= 0x846CA68B;
                        return x ^ (x >> 16); }
       r = mix(seed + 0x9E3779B97F4A7C15 * (1 + (b * Hq + h) * q.seq + i))     (mod 2^64)
       x = low(low((u32)j + (u32)r) ^ (u32)(r >> 32))
       keep_ij = (x >> 8) >= (u32)(p * 2^24);   1 / (1 - p) is computed in fp32

   VERSION  0.3   strides always explicit: "all strides 0 means dense" is retired for tensors, the
                  bias and the scan views (a zero stride broadcasts, nothing is guessed); the
                  constructors fill every stride; attn_bias.rows (1: one row for every query)
                  and attn_bias_dense; attn_ssm_tensor_dense; see docs/guide.md "API changes
                  in 0.3".
            0.2   the mechanism seam: attn_kind table (attn_kind_name), attn_state / attn_step for
                  recurrent kinds, fixed status values in blocks per family, ATTN_ERR_N_THREADS
                  for every thread-count check, mixed dtypes (q/out any, K and V one dtype),
                  ATTN_ERR_KIND_OP; bf16_kernels (was no_amx), attn_kv_len returns a status;
                  overlap statuses; NaN propagation; the sparse (Longformer, BigBird, LSH,
                  Routing), linear (linear, Performer, cosFormer, RWKV; attn_backward for the
                  first three), low-rank (Linformer, Nystromformer) and state-space (Mamba
                  scan, conv1d, S4D) families; attn_desc.allow_tf32 (the CUDA companion's f32
                  path); see docs/guide.md "API changes in 0.2".
            0.1   first release: exact attention with every mask, merge, backward, layers,
                  generation (KV caches, decoding, RoPE, StreamingLLM, EL-attention).
*/
#ifndef ATTN_H_INCLUDED
#define ATTN_H_INCLUDED

#include <stddef.h>   /* size_t, ptrdiff_t */

#define ATTN_VERSION_MAJOR 0
#define ATTN_VERSION_MINOR 3

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
   Strides are in elements and always explicit: attn_tensor_dense / attn_tensor_bhsd fill them,
   and no layout is ever guessed from zeros (0.2 read "all three 0" as dense, which a broadcast
   of every axis also is). An input may use stride 0 on an axis to broadcast it (every stride 0:
   one row for every position); an output may not (on an axis of extent > 1).
   Outputs and memory (checked, never a silent race or overwrite):
     - an output's rows must not overlap each other: sorted by |stride|, each axis of extent > 1
       must step at least over the span of the axes inside it (the row of dim elements for the
       innermost). Dense, BHSD, padded and paged layouts all are; a layout that interleaves two
       axes without sharing elements is refused too (the check stays O(1) and exact to this rule).
     - an output's span (lowest to highest byte its view can address) must not meet the span
       of an input or of another output of the same call: ATTN_ERR_OUT_OVERLAP (forward,
       decode, attn_step, where attn_state.data[0, size) counts as an output),
       ATTN_ERR_BWD_OVERLAP (backward). So out may not live inside a packed QKV buffer even in
       slots no input uses: give it its own buffer. Inputs may share memory freely.
     - the scans keep the same rule for every output (out / y, state_out, the state of a _step,
       attn_ssm_s4d_kernel's K, the backwards' gradients) against every input (their views and
       arrays): ATTN_ERR_RWKV_OVERLAP, ATTN_ERR_SSM_OVERLAP, ATTN_ERR_SSM_BWD_OVERLAP; a
       state_out that is state_in itself is the documented in-place update, a partial overlap
       ATTN_ERR_RWKV_STATE_ALIAS / ATTN_ERR_SSM_STATE_ALIAS.
     - KV caches: k's and v's rows must not overlap (same rule) and k's span must not meet v's:
       ATTN_ERR_KV_OVERLAP (an append would overwrite other pages).
   attn_merge is in-place safe (out may be parts[0]); attn_sgemm refuses c overlapping a or b. */
typedef struct attn_tensor {
    void *data;
    attn_dtype dtype;
    int batch, seq, heads, dim;
    ptrdiff_t stride_batch, stride_seq, stride_head;
} attn_tensor;

/* Which mechanism attn_forward (and attn_backward, attn_decode, attn_step where the kind has
   them) computes. X(name, value, id, description): values are fixed, a new kind takes the next
   free value of its family's block. attn_kind_name() gives the description. */
#define ATTN__KIND_LIST(X) \
    X(ATTN_SOFTMAX,            0, softmax,     "exact scaled dot-product attention with masks") \
    /* -- sparse (10-19) -- */ \
    X(ATTN_LONGFORMER,        10, longformer,  "Longformer: dilated sliding window (dilation per head) and global tokens") \
    X(ATTN_BIGBIRD,           11, bigbird,     "BigBird ITC: block-sparse window, global and random blocks") \
    X(ATTN_LSH,               12, lsh,         "Reformer LSH: shared-QK attention within hashed, sorted chunks") \
    X(ATTN_ROUTING,           13, routing,     "Routing Transformer: shared-QK attention within each centroid's top-w window") \
    \
    /* -- linear and kernel (20-29) -- */ \
    X(ATTN_LINEAR,            20, linear,      "linear attention, phi(x) = elu(x) + 1 (Katharopoulos et al. 2020)") \
    X(ATTN_PERFORMER,         21, performer,   "Performer FAVOR+: positive orthogonal random features for the softmax kernel (Choromanski et al. 2021)") \
    X(ATTN_COSFORMER,         22, cosformer,   "cosFormer: ReLU linear attention re-weighted by cos(pi/2 (i - j) / M) (Qin et al. 2022)") \
    \
    /* -- low-rank (30-39) -- */ \
    X(ATTN_LINFORMER,         30, linformer,   "Linformer: softmax attention over keys and values projected along the sequence (E K, F V)") \
    X(ATTN_NYSTROM,           31, nystrom,     "Nystromformer: softmax attention approximated through segment-mean landmarks and an iterative pseudo-inverse") \
    /* (end of list) */
#define ATTN__KIND_ENUM(name, value, id, text) name = value,
typedef enum attn_kind { ATTN__KIND_LIST(ATTN__KIND_ENUM) ATTN_KIND_END = 40 } attn_kind;
#undef ATTN__KIND_ENUM

/* Per-kind parameters live in attn_desc, one struct per family, read only by its kinds. */
/* -- sparse parameter structs -- */

/* ATTN_LONGFORMER (Beltagy et al. 2020): exact attention (every attn_desc mask and option
   applies: window_left/_right = the one-sided window w in keys, global_tokens, causal for the
   autoregressive form, seqlens, ALiBi, bias, softcap, RoPE, GQA) where query head h uses
   dilation dilations[h] instead of attn_desc.dilation: key j is visible from position p when
   (p - j) % D_h == 0 and |p - j| <= w * D_h (keys p + D_h (k - w), k = 0..2w), or a global
   token is involved. Runs the exact kernel once per run of heads with the same dilation, so
   the cost is O(seq * window) per head (a dilated head without global tokens, sinks, padding,
   ALiBi, bias or RoPE and with q.seq == k.seq runs as D undilated problems on every D-th row;
   otherwise its dilated window is masked element by element: O(seq * window * D)). Dropout is
   not supported. attn_backward: the exact backward on the same pieces (the query heads of a KV
   group must share a dilation; dbias with a head-broadcast bias needs one dilation for all).
   Per-token global positions (Hugging Face's global_attention_mask): global_mask [k.batch][k.seq]
   (row-major, row stride k.seq; nonzero = global) marks positions j whose KEY is visible to every
   query of its sequence, and positions p whose QUERY row (the row i with p = i + Lk - Lq) sees
   every key, on top of the window: key j is visible from position p when
       j < Lk  and  (!causal || j <= p)  and  (local(p, j) || mask[b][j] || mask[b][p] || the
       global_tokens / sink_tokens rules of attn_desc)
   each key counted once (a global key inside the window is not counted twice). Entries at
   j >= Lk are never read. global_rows_only = 1 computes only the rows at global positions
   (mask[b][p], or p < global_tokens) and leaves every other row of out and lse as it was
   (their q rows are not read; padding rows included): with the same
   out, one call with the local projections then one with the global projections give Hugging
   Face's LongformerSelfAttention (docs/guide.md). With a global_mask the call runs a direct
   kernel (each row's visible keys gathered: the window, plus every global key; a global row
   reads all Lk keys), fp32, one SIMD dot product and axpy per key, threads over (batch, head):
   about 5x the tiled core's time for the same window (S 4096, w 256, D 64, 1 thread: 2.3 s
   against 0.49 s with global_tokens); bias, rope and cu_seqlens are refused
   (ATTN_ERR_LONGFORMER_GLOBAL_MASK), as is attn_backward (ATTN_ERR_LONGFORMER_MASK_BACKWARD).
   field             default (NULL/0)            meaning
   dilations         attn_desc.dilation for all  [q.heads] dilation of each query head, >= 0 (0, 1: none)
   global_mask       none                        [k.batch][k.seq] per-token global positions
   global_rows_only  0                           1: write only the rows at global positions */
typedef struct attn_longformer_params {
    const int *dilations;
    const unsigned char *global_mask;
    int global_rows_only;
} attn_longformer_params;

/* ATTN_BIGBIRD (Zaheer et al. 2020, ITC; Hugging Face BigBirdBlockSparseAttention), self-attention
   (q.seq == k.seq = n) in nb = n / block blocks. Query block i of head h attends
     i == 0 or i == nb-1 (global rows):  every key block
     otherwise:  {0, nb-1} (global columns), {i-1, i, i+1} (window), and its r random blocks
                 table[h][i-1][0..r-1]
   Softmax over those keys, scale as attn_desc.scale; softcap and GQA/MQA apply; the other
   attn_desc masks must be 0/NULL. lse is written. How often a key of rows 1..nb-2 counts is
   multiplicity (the global rows and hf_fallback's full attention count every key once):
     ATTN_BIGBIRD_UNION (0)    each key once: the set union (a table entry repeating a window,
                               global or other random block adds nothing)
     ATTN_BIGBIRD_HF_LISTED    as HF concatenates the blocks: the window and global blocks once,
                               plus one more copy per table entry (HF's training mode with its
                               rand_attn passed as random_table; at n = 1024 its draw can
                               repeat a window block, which then counts twice)
     ATTN_BIGBIRD_HF_EVAL      HF's eval mode: HF_LISTED with every random slot at block 0 (HF's
                               all-zero rand_attn), so block 0 counts 1 + r times; random_table
                               and seed are not read
   (no_random is r = 0, which is not HF's eval mode: that is ATTN_BIGBIRD_HF_EVAL.)
   The random table [q.heads][nb-2][r] (entries in [0, nb)) is random_table, or, when NULL,
   drawn from seed by attn_bigbird_random_table() (documented there; the same on every platform
   and thread count).
   Padding, as HF's attention_mask (one mask: pass its row sums as both seqlens_q and seqlens_k;
   cu_seqlens are refused): keys j >= seqlens_k[b] get -10000 ADDED to their logits (HF's
   value, not -inf: a padded key keeps the weight e^(s - 10000 - max), 0 in fp32 unless the
   logits of a row span about 1e4, and it is all a row sees when seqlens_k[b] == 0); query rows
   i >= seqlens_q[b] are written 0 (lse -inf). The blocks stay those of q.seq (a multiple of
   block: BigBirdModel pads to it; the last block stays global), so valid rows depend on the
   padded length, as in HF, but not on the other sequences or on the padding's (finite)
   contents. HF also masks window and random keys by the query's own mask: that only reaches
   rows it then writes 0, so nothing here corresponds to it. Padded query blocks cost nothing.
   field          default (0)      meaning
   block          64               block size b; must divide q.seq
   random_blocks  3                r random key blocks per middle query block (see no_random)
   no_random      off              1: r = 0 (window and global blocks only; not HF's eval mode)
   random_table   NULL (seeded)    [q.heads][nb-2][r] explicit random blocks
   seed           0                seed of the drawn table
   hf_fallback    off              1: full attention when n <= (5 + 2r) b, as HF does
   multiplicity   UNION            ATTN_BIGBIRD_UNION, _HF_LISTED or _HF_EVAL (above)
   docs/porting.md maps HF's tensors and config onto these fields. */
/* ATTN_LSH (Kitaev et al. 2020, Reformer; Hugging Face LSHSelfAttention), self-attention with
   shared QK: q.seq == k.seq = n, q.heads == k.heads; pass the shared QK projection as both q and
   k (queries are q's rows, raw; hashing and keys come from k's rows). For batch b, head h, round
   r < n_hashes, valid length L (seqlens_k[b] or seqlens_q[b]; n without padding), position i:
     bucket_r(i) = argmax over [k_i R_hr, -k_i R_hr] (first maximum), R_hr [dim][n_buckets/2];
     factorised (bucket_factors f_0, f_1, ...: n_buckets = prod f_t, HF's list num_buckets):
     R_hr has sum_t f_t/2 columns, factor t takes the next f_t/2 of them, a_t = the argmax of
     [k_i R_t, -k_i R_t] and bucket_r(i) = a_0 + f_0 a_1 + f_0 f_1 a_2 + ...
     a padding position (i >= L) goes to the extra bucket n_buckets (HF's pad bucket)
     positions sorted stably by (r, bucket, position) into one axis of n_hashes * n entries, cut
     into chunks of bucket_size; chunk m's queries attend the keys of chunks m-1 and m (chunk 0
     looks at the last chunk, circularly over all rounds), without deduplication
     s = scale * q_i . n(k_j),  n(k) = k / sqrt(mean(k^2) + 1e-6)   (scale 0: 1/sqrt(dim))
     s = -1e9 where key j is padding (j >= L) or, causal, j > i; then s = -1e5 where j == i (a
     token sees itself only when nothing else is visible)
     round r gives o_r(i) = softmax(s) . v and lse_r(i); out_i = sum_r o_r(i) exp(lse_r(i) - L_i),
     L_i = logsumexp_r lse_r(i) (written to lse); the weights are normalised exactly (they sum
     to 1), or with hf_merge as HF computes them in fp32: exp(lse_r - fl32(L_i)), which sum to
     1 only up to fp32's rounding of L_i - visibly for a row that sees only itself in every
     round (L_i near -1e5, where fp32's spacing is 2^-7: HF's out_i is then (1 - up to 0.4%) v_i)
   Padding rows (i >= L) get out = 0 and lse = -inf; padding rows of q, k and v are never read.
   As in HF, the pad bucket sits in the chunk grid, so a valid row depends on n (the padded
   length) but not on the padding's contents or the batch's other sequences: it equals the same
   sequence padded to n on its own. A -1e9 logit adds exactly 0 in fp32 next to the self logit,
   so padding keys are skipped rather than scored.
   seqlens_q and seqlens_k are one mask (HF's attention_mask, padding at the end): give either,
   or both equal. softcap, cu_seqlens and the other attn_desc masks must be 0/NULL;
   attn_desc.causal applies (HF's is_decoder).
   field            default (0)                   meaning
   bucket_size      64                            chunk length; must divide n
   n_buckets        2^floor(log2(2n/bucket_size)) buckets per round; even, >= 2 (HF's
                    (the paper's 2n/bucket_size   config.num_buckets as an int; a list: see
                    as a power of 2, HF's rule)   bucket_factors)
   bucket_factors   {0}: not factorised           up to 4 even factors >= 2, then zeros (HF's list
                                                  num_buckets); n_buckets must then be 0; their
                                                  product (the bucket count) at most 2^24
   n_hashes         1                             hashing rounds (>= 1; negative is an error)
   rotations        NULL: drawn from seed         fp32, finite, in rotations_layout's order, with
                                                  R = n_buckets/2 (factorised: sum f_t/2) columns
   rotations_layout ATTN_LSH_ROT_ATTN             ATTN_LSH_ROT_ATTN: [q.heads][n_hashes][dim][R];
                                                  ATTN_LSH_ROT_HF: [q.heads][dim][n_hashes][R],
                                                  HF's random_rotations tensor as it is
   hf_merge         off                           1: the rounds' weights as HF computes them (above)
   seed             0                             seed of the drawn rotations (attn_lsh_rotations)
   The default n_buckets is HF's _set_num_buckets for the padded length n (HF computes it on its
   first call and keeps it in config.num_buckets: pass that value when lengths vary). attn.h's
   earlier default n / bucket_size was not closer to full attention on every input measured
   (docs/porting.md), so the reference's rule is the default; set n_buckets for another. */
typedef enum attn_lsh_layout { ATTN_LSH_ROT_ATTN = 0, ATTN_LSH_ROT_HF = 1 } attn_lsh_layout;
typedef struct attn_lsh_params {
    int bucket_size;
    int n_buckets;
    int n_hashes;
    const float *rotations;
    unsigned long long seed;
    attn_lsh_layout rotations_layout;   /* order of rotations (and of attn_lsh_rotations' output) */
    int bucket_factors[4];              /* HF's factorised num_buckets, or {0} */
    int hf_merge;                       /* 1: merge the rounds with HF's fp32 weights */
} attn_lsh_params;

/* ATTN_ROUTING (Roy et al. 2021, Routing Transformer), self-attention with shared QK: q.seq ==
   k.seq, q.heads == k.heads; pass the shared QK projection as both q and k (see normalize_keys
   for routing-transformer's convention). For head h of a sequence of L valid tokens:
     x_i = k_i / |k_i| (0 for a zero row), mu_c = centroids[h][c] / |centroids[h][c]|
     cluster c's window W_c: the w = min(window, L) positions with the largest x_i . mu_c (ties:
     the lower position first), in position order
     key rows: k'_j = k_j, or x_j with normalize_keys
     inside W_c, query i attends keys j in W_c with s = scale * q_i . k'_j; causal: j > i hidden;
     j == i gets the logit -5e4 (a token sees itself only when nothing else is visible, as the
     reference code's TOKEN_SELF_ATTN_VALUE); o_c(i) = softmax(s) . v
     out_i = sum of o_c(i) over the windows holding i / (their count + count_eps), 0 when none does
   Padding: L = seqlens_k[b] (or seqlens_q[b]; where both are given they must be equal) or the
   cu_seqlens segment's length (packed sequences; cu_seqlens_q and _k both given and equal, batch
   1, rows past the last segment are written 0). Padded tokens are in no cluster, neither as
   queries nor as keys, and their rows are written 0: each sequence's rows are exactly its
   result run alone at length L, whatever the padding holds and the other sequences are.
   (routing-transformer's input_mask instead keeps padded tokens in the windows and masks them
   in the softmax, so its valid rows depend on the padding: see docs/porting.md.)
   No logsumexp is defined (a mean of softmaxes): lse must be NULL. softcap and the other attn_desc
   masks must be 0/NULL. attn_routing_update() moves the centroids (k-means EMA).
   field           default (0)   meaning
   centroids       required      [q.heads][n_clusters][dim] fp32, finite
   n_clusters      required      clusters c, >= 1 (about sqrt(n) in the paper)
   window          64            tokens per cluster window w
   normalize_keys  off           1: attend with the unit keys x_j (routing-transformer's
                                 KmeansAttention with shared_qk normalises k, not q)
   count_eps       0             added to the window count of each token (routing-transformer's
                                 scatter_mean: 1e-5); finite, >= 0
   separate_qk     off           1: q and k are separate projections (routing-transformer's
                                 shared_qk=False): cluster c's query window is the w queries
                                 with the largest (q_i / |q_i|) . mu_c (same tie rule), its key
                                 window W_c as above; each query of the one attends the keys of
                                 W_c, with no self logit (a key at the query's position is an
                                 ordinary key); out_i averages over the query windows holding
                                 i. causal must be 0 (the reference's causal form adds learned
                                 memory keys, which attn.h does not have). */
typedef struct attn_routing_params {
    const float *centroids;
    int n_clusters;
    int window;
    int normalize_keys;
    float count_eps;
    int separate_qk;
} attn_routing_params;

typedef enum attn_bigbird_multiplicity {
    ATTN_BIGBIRD_UNION = 0, ATTN_BIGBIRD_HF_LISTED = 1, ATTN_BIGBIRD_HF_EVAL = 2
} attn_bigbird_multiplicity;
typedef struct attn_bigbird_params {
    int block;
    int random_blocks;
    int no_random;
    const int *random_table;
    unsigned long long seed;
    int hf_fallback;
    int multiplicity;            /* attn_bigbird_multiplicity */
} attn_bigbird_params;

/* -- linear and kernel parameter structs -- */
/* The eps fields below (linear, cosformer, performer) take 0 as "the default"; ATTN_EPS_ZERO
   asks for an exact 0 (any other negative value is an error). */
#define ATTN_EPS_ZERO (-1.0f)
/* ATTN_LINEAR, linear attention ("Transformers are RNNs", Katharopoulos et al. 2020; the
   fast-transformers reference). With phi(x) = elu(x) + 1 applied to q and k (no 1/sqrt(d)
   scale) and the visible keys of query i (all valid keys; under causal, j <= i + Lk - Lq,
   bottom-right aligned as ATTN_SOFTMAX):
       out_i = phi(q_i)^T S_i / (phi(q_i) . z_i + eps),  S_i = sum_j phi(k_j) v_j^T,  z_i = sum_j phi(k_j)
   Cost O(n d dv) instead of O(n^2 d): the causal form runs in chunks of 64 rows (dense within
   the chunk, a carried (S, z) state between chunks), all on GEMMs. attn_step decodes it as an
   RNN with the state (S, z) per sequence and KV head. Reads causal, seqlens_q/_k, n_threads,
   parallel, workspace and linear; the softmax-only fields must be 0 (ATTN_ERR_KIND_OPTION) and
   lse NULL (no logsumexp). A row with no visible key or a padding row gets 0. attn_backward
   gives dq, dk, dv (here, for ATTN_COSFORMER and for ATTN_PERFORMER) on the same chunked GEMMs,
   in two passes over the chunks (section 3.14); lse must be NULL and out is validated but not
   read (the forward's quantities are recomputed).
   field   default   meaning
   eps     1e-6      added to the denominator; finite and > 0, 0 selects the default,
                     ATTN_EPS_ZERO an exact 0 */
typedef struct attn_linear_params {
    float eps;
} attn_linear_params;

/* ATTN_COSFORMER (cosFormer, Qin et al. 2022, and its reference code): ReLU features with a
   cos re-weighting, computed as linear attention over [relu(x) sin a, relu(x) cos a] (2 d
   features), so O(n d dv) on ATTN_LINEAR's chunked core. Positions are 1-based: key j at
   j + 1, query i at i + 1 (under causal, i + 1 + Lk - Lq: bottom-right aligned, so a decoding
   query sits at its own key's position); attn_step continues from attn_state.pos. With
   a_p = (pi/2) p / M, phi(q_i) . phi(k_j) = relu(q_i) . relu(k_j) cos(pi/2 (p_i - p_j) / M):
       out_i = sum_j w_ij v_j / max(sum_j w_ij, eps)   over the visible keys j (as ATTN_LINEAR)
   Reads what ATTN_LINEAR reads plus cosformer; lse must be NULL.
   field     default          meaning
   max_len   max(Lq, Lk)      M; every position must be <= M (so cos >= 0). The default is per
                              sequence, from its valid lengths (seqlens_q[b], seqlens_k[b]):
                              padding a sequence does not change its rows. attn_step needs it
                              set (> 0): decoding cannot know the final length
   eps       1e-6             denominator clamp; finite and > 0, 0 selects the default,
                              ATTN_EPS_ZERO an exact 0 (a zero denominator then gives NaN) */
typedef struct attn_cosformer_params {
    int max_len;
    float eps;
} attn_cosformer_params;

/* ATTN_PERFORMER (Performer FAVOR+, Choromanski et al. 2021, and Google's fast_attention
   reference): softmax attention exp(q.k / sqrt(d)) approximated by positive random features, so
   O(n m dv) on ATTN_LINEAR's chunked core. W [m][d] is the projection; x' = d^-1/4 x, u = W x',
   h = |x|^2 / (2 sqrt d), and (the common m^-1/2 cancels in the ratio and is not applied):
       phi(x)_l = exp(u_l - h - s) + eps,   out_i = sum_j w_ij v_j / sum_j w_ij,  w_ij = phi(q_i) . phi(k_j)
   over the visible keys j (as ATTN_LINEAR; no eps in the denominator: every phi > 0). The
   stabiliser s: for a query its own row max max_l u_l; for the keys, the max of u_jl over the
   keys VISIBLE to the query row: all valid keys of the (sequence, KV head) without causal (Google
   exactly), the keys j <= i + Lk - Lq under causal, and the keys seen so far (state included) in
   attn_step. Because s enters through eps, the kernel keeps sum_j exp(a_jl - c) v_j and
   sum_j exp(a_jl - c) (a = u - h, c the running max, rescaled when it grows, as online softmax)
   apart from eps sum_j v_j and eps n, so causal parallel == chunked == attn_step == the
   non-causal result restricted to the prefix, exactly up to rounding. Every exp argument is <= 0.
   kernel = ATTN_PERFORMER_RELU is the generalised kernel phi(x) = relu(c x W^T) + eps (no h, no s;
   Google's generalised attention) with c = 1, or c = d^-1/4 with relu_normalize = 1
   (performer-pytorch's generalized_kernel, normalize_data=True). W is the caller's (projection) or drawn from seed
   by attn_performer_draw (orthogonal blocks, chi or sqrt(d) row norms; the same bits on every
   platform, ISA and thread count). A forward call draws W anew (a few d^3 flops); attn_step
   caches the drawn W in the state (redrawn when seed or fixed_norms change), so decoding does
   not pay for it. Reads what ATTN_LINEAR reads plus performer; lse must be NULL. attn_backward:
   gradients of q, k and v; W and the stabiliser's maxes are constants (not differentiated).
   field           default   meaning
   features        256       m, random features: 0..65536 (0 selects the default, only when
                             projection is NULL: with a caller's W it must be set, else
                             ATTN_ERR_PERFORMER_PROJECTION_FEATURES)
   eps             1e-6      the features' additive epsilon; 1e-3 with the ReLU kernel; finite
                             and > 0, 0 selects the default, ATTN_EPS_ZERO an exact 0 (features
                             that all underflow then give 0/0 = NaN, as the references do).
                             Others: performer-pytorch 1e-4 (softmax_kernel), 1e-3 (ReLU)
   kernel          0         ATTN_PERFORMER_SOFTMAX (positive exp features) or ATTN_PERFORMER_RELU
   fixed_norms     0         0: rows scaled by chi-distributed norms; 1: by sqrt(d)
   projection      NULL      the caller's W [features][projection_dim] fp32 row-major, finite
                             (features and projection_dim both set: W's size is never guessed);
                             NULL: attn_performer_draw(&performer, q.dim, W)
   projection_dim  0         must equal q.dim when projection is set
   seed            0         the counter-based RNG's seed when projection is NULL
   relu_normalize  0         ReLU kernel only: 0 c = 1 (Google's generalised attention);
                             1 c = d^-1/4 (performer-pytorch's default); must be 0 or 1 */
typedef enum attn_performer_kernel { ATTN_PERFORMER_SOFTMAX = 0, ATTN_PERFORMER_RELU = 1 } attn_performer_kernel;
typedef struct attn_performer_params {
    int features;
    float eps;
    int kernel;
    int fixed_norms;
    const float *projection;
    int projection_dim;
    unsigned long long seed;
    int relu_normalize;
} attn_performer_params;

/* -- low-rank parameter structs -- */
/* Linformer (ATTN_LINFORMER; Wang et al. 2020), read from attn_desc.linformer. Keys and values are
   projected along the sequence before exact softmax attention, per KV head:
       out_h = softmax(scale * Q_h (E_h K_h)^T) (F_h V_h),   E_h, F_h in R^{k x n}
   E and F are fp32, row-major [k][n] (row stride n). An input of k.seq = s < n tokens uses
   the leading s columns of E and F (the paper's "shorter inputs"; lucidrains' linformer slices
   its [n][k] proj_k the same way).
   Padding: seqlens_k[b] = L keeps keys and values 0..L-1 of sequence b and zeroes the rest
   before the projection, E_h[:, :L] K_h[:L] (padded rows are never read): each sequence gets
   exactly its unpadded result, whatever the padding holds. With seqlens_q too (the same
   lengths) the padded query rows are written 0, else they are computed like valid rows.
   Packed sequences (cu_seqlens) are not offered: pad them (each segment would need its own
   projected keys).
   The projected attention is attn_forward's exact kernel (ATTN_SOFTMAX) on E K, F V: scale,
   softcap, seqlens_q (padding queries), dropout_p/_seed, n_threads, parallel and bf16_kernels
   apply; lse gets the logsumexp over the k projected keys. Key-position options (causal,
   windows, dilation, sinks, global tokens, cu_seqlens, ALiBi, bias, RoPE) do not exist after
   the projection and are rejected.
   GQA: E and F are per KV head (k.heads of them), shared by that head's query heads.
   Sharing across layers: pass the same e/f to each layer's call.
   field          default            meaning
   e              - (required)       E: [k.heads][k][n] (shared_heads 0) or [k][n] (shared_heads 1)
   f              - (required unless shared_kv) F, laid out as E
   k              - (required)       projected length: rows of E and F, in [1, n]
   n              - (required)       columns of E and F: the longest sequence, >= k.seq
   shared_heads   0: per KV head     1: one E (and F) shared by every head
   shared_kv      0: F given         1: F = E (key-value sharing; f is not read)
   de, df         NULL: not computed attn_backward only: dL/dE, dL/dF, written with E's layout
                                     (columns k.seq..n-1 get 0); with shared_kv, de gets the whole
                                     gradient of the shared matrix and df is not written
   attn_backward (lse: the forward's) gives dq, dk, dv and de/df; it recomputes E K and F V and
   runs the exact kernel's backward on them (dropout with the forward's seed). With seqlens_k the
   padded rows of dk, dv are 0 and sequence b adds to columns 0..L-1 of dE, dF only. */
typedef struct attn_linformer_params {
    const float *e, *f;
    int k, n;
    int shared_heads, shared_kv;
    float *de, *df;
} attn_linformer_params;

/* Nystromformer (ATTN_NYSTROM; Xiong et al. 2021), read from attn_desc.nystrom. Per (batch,
   query head), with logits scaled by attn_desc.scale (0: 1/sqrt(d), the paper's d^-1/4 on Q and
   on K), m landmarks Q~, K~ [m, d] = means of m contiguous segments of Q and K (length l = n/m):
       F = softmax(Q K~^T)  [Sq, m]   A = softmax(Q~ K~^T)  [m, m]   B = softmax(Q~ K^T)  [m, Sk]
       out = F pinv(A) (B V)  (+ conv(V) when conv is given)
   pinv(A) is attn_nystrom_pinv's iteration: Z0 = A^T / c, then `iterations` steps of
   Z <- Z (13I - AZ (15I - AZ (7I - AZ))) / 4, where c is A's largest column sum taken per
   (batch, head) (pinv_init ATTN_NYSTROM_PINV_PER_HEAD, the default: a sequence's output never
   depends on the rest of its batch) or the largest over every (batch, head) of the call
   (ATTN_NYSTROM_PINV_BATCH: Hugging Face's NystromformerSelfAttention, init_option "original",
   and the original code; nystrom-attention's divisor, max row sum * max column sum over the
   call, is the same up to a rounding, a softmax's rows summing to 1; the outputs then depend on
   the whole batch, padding included).
   F.W and B.V are attn_forward's exact kernel (keys K~ with values W = pinv(A) B V; queries Q~ over
   K, V). With landmarks = q.seq = k.seq the landmarks are the tokens and the call is exact softmax
   attention (Hugging Face's shortcut for num_landmarks == seq_len), plus the conv residual.
   pad = 1 (lengths not divisible by m; not Hugging Face, which requires m | seq_len): l = ceil(S/m),
   the sequence is padded AT THE END with zero tokens to m*l, landmark j = (sum of the tokens in
   [j*l, (j+1)*l)) / l (the zeros count in the mean), the zero keys are masked out of B and the
   zero queries produce no output. (nystrom-attention pads at the FRONT instead and, without a
   mask, keeps the zero tokens as keys of B: padding_rule ATTN_NYSTROM_PADDING_LUCIDRAINS below.)
   Cross-attention (q.seq != k.seq) takes landmarks of each at its own segment length. GQA: K~ of
   KV head h/g serves query head h.
   Padding of a batch (attn_desc.seqlens_k, optional seqlens_q; valid lengths Lk, Lq, padding at
   the end; cu_seqlens are refused): the landmark segments are still cut from the padded length
   n (l = n/m), so the result depends on n (pad a sequence to the same n to reproduce it).
   padding_rule says what the padding positions are:
     ATTN_NYSTROM_PADDING_ZERO (0, default; the original code, which multiplies Q, K, V by the
       mask): zero tokens. Q, K, V past Lq / Lk are never read: they count as zeros in the
       landmark means and in the conv, padding keys are masked out of B, padding query rows get
       out = 0. With q.seq == k.seq and seqlens_q NULL, Lq = Lk (one mask, self-attention).
       Valid rows depend neither on the padding's contents nor on the other sequences.
     ATTN_NYSTROM_PADDING_HF (1; Hugging Face NystromformerSelfAttention: its attention_mask,
       (1 - mask) * finfo.min, enters only kernel_3 = B): the padding's q, k, v are read as given
       into the landmark means and the conv, and only B masks the keys past Lk. Every query row
       is computed, as Hugging Face computes it (rows past seqlens_q, when given, get 0). Valid
       rows depend on the padding's contents, as Hugging Face's do.
     ATTN_NYSTROM_PADDING_LUCIDRAINS (2; nystrom-attention's NystromAttention): a length S that
       m does not divide is padded at the FRONT with p = m ceil(S/m) - S zero tokens (pad is not
       read), the caller's row r sitting at position p + r; the landmarks are always taken (no
       exact shortcut at landmarks = S). Without seqlens_k (no mask) the front zeros are tokens:
       they count in the landmark means (over l) and are keys of B (logit 0, value 0). With
       seqlens_k (its mask; Lq as under the zero rule) every padding position, front and end, is
       masked: q, k, v there are zeros (never read); landmark j = (sum of its valid tokens) /
       (their count); a landmark with no valid token is masked out of F and A (its column) and
       its rows of A and B are uniform (B's: over all m*l keys, i.e. the sum of the valid v over
       m*l); padding query rows get out = 0. Valid rows depend neither on the padding's contents
       nor on the other sequences (with the per-head Z0).
   A sequence with Lk = 0 has B V = 0 (out = conv only). seqlens_q/_k values are checked as for
   ATTN_SOFTMAX (ATTN_ERR_SEQLENS_Q/_K).
   conv: depthwise convolution of V along the sequence, one filter per query head (query head h
   filters V head h/g), zero padded, centred: out[i] += sum_t conv[h][t] V[i + t - kernel/2]
   (Hugging Face's Conv2d(heads, heads, (kernel, 1), padding=(kernel/2, 0), groups=heads, bias
   False) weight [H, 1, kernel, 1] flattened; needs q.seq = k.seq). Only scale, seqlens_q/_k,
   n_threads, parallel, workspace and bf16_kernels of attn_desc apply; lse must be NULL (the
   approximation has no logsumexp).
   field          default            meaning
   landmarks      64                 m, in [1, min(q.seq, k.seq)]
   iterations     6                  pseudo-inverse iterations (0: 6, as in attn_nystrom_pinv;
                                     negative is ATTN_ERR_NYSTROM_ITERATIONS)
   pad            0: m must divide   1: the end-padding rule above
                  q.seq and k.seq
   conv           NULL: no residual  [q.heads][conv_kernel] fp32 filter taps
   conv_kernel    - (required with   odd taps per filter (Hugging Face: 65, nystrom-attention: 33);
                  conv)              never defaulted: conv with conv_kernel 0 is
                                     ATTN_ERR_NYSTROM_CONV_TAPS
   padding_rule   ZERO               ATTN_NYSTROM_PADDING_ZERO / _HF / _LUCIDRAINS: what
                                     seqlens_k's padding is (above); other values:
                                     ATTN_ERR_NYSTROM_PADDING_RULE
   pinv_init      PER_HEAD           ATTN_NYSTROM_PINV_PER_HEAD / _BATCH: Z0's divisor c (above);
                                     other values: ATTN_ERR_NYSTROM_PINV_INIT */
typedef enum attn_nystrom_padding {
    ATTN_NYSTROM_PADDING_ZERO = 0, ATTN_NYSTROM_PADDING_HF = 1, ATTN_NYSTROM_PADDING_LUCIDRAINS = 2
} attn_nystrom_padding;
typedef enum attn_nystrom_pinv_init { ATTN_NYSTROM_PINV_PER_HEAD = 0, ATTN_NYSTROM_PINV_BATCH = 1 } attn_nystrom_pinv_init;
typedef struct attn_nystrom_params {
    int landmarks;
    int iterations;
    int pad;
    const float *conv;
    int conv_kernel;
    attn_nystrom_padding padding_rule;
    attn_nystrom_pinv_init pinv_init;
} attn_nystrom_params;


/* Optional additive bias on the logits, fp32, shape [batch, heads, rows, seq_k].
     data          NULL: no bias
     batch         1 (shared by every sequence) or q.batch
     heads         1 (shared by every head) or q.heads
     rows          1 (one row shared by every query: a key-padding mask such as Hugging Face's
                   attention_mask [B, 1, 1, Sk]) or q.seq
     stride_*      in elements, always explicit (attn_bias_dense fills them; no layout is
                   guessed from zeros): the stride of an axis of extent 1 is never read, a 0
                   stride on a longer axis repeats one slice along it; seq_k is contiguous.
   dbias (attn_backward) takes the same shape: with rows 1 it is the sum over query rows. */
typedef struct attn_bias {
    const float *data;
    int batch, heads, rows;
    ptrdiff_t stride_batch, stride_head, stride_q;
} attn_bias;

/* A parallel-for you can plug in to run attn's work on your own thread pool. It must call
   task(task_ctx, i, thread) once for every i in [0, n_tasks), where thread is in
   [0, n_threads) and no two calls running at the same time share a thread value, and return
   when all calls have finished. */
typedef void (*attn_task_fn)(void *task_ctx, int task_index, int thread_index);
typedef void (*attn_parallel_fn)(void *user, int n_tasks, int n_threads,
                                 attn_task_fn task, void *task_ctx);

/* A persistent thread pool, for calls made again and again (a decoding loop). Without one,
   every call starts and joins its threads, which costs tens of microseconds (about 40-120 us
   on the 2-core test machine: a third of a 4k-token decode step). Plug it in with
       desc.parallel = attn_pool_parallel; desc.parallel_user = pool;
   Between calls its workers spin for up to spin_us microseconds (0: 100; negative: never)
   waiting for the next one, then sleep. One call at a time: a second caller waits for the
   first. Do not call it from inside one of its own tasks, and destroy it only when no call
   is running. attn_pool_create returns NULL where attn.h has no threads (ATTN_NO_THREADS)
   or the threads could not be created. n_threads 0 = all cores. */
typedef struct attn_pool attn_pool;
ATTNDEF attn_pool *attn_pool_create(int n_threads, int spin_us);
ATTNDEF void attn_pool_destroy(attn_pool *pool);
ATTNDEF int attn_pool_threads(const attn_pool *pool);
ATTNDEF void attn_pool_parallel(void *pool, int n_tasks, int n_threads, attn_task_fn task, void *task_ctx);

/* Everything that configures a call. Zero-initialise, then set what you need.
   field            default (0)                 meaning
   kind             ATTN_SOFTMAX                mechanism
   scale            1/sqrt(q.dim)               logit scale; must be finite
   causal           off                         bottom-right aligned causal mask
   window_left      unbounded                   at most n keys (n*dilation positions) before p
   window_right     unbounded                   at most n keys after p
   dilation         none (0 or 1)               Longformer dilated window: every dilation-th key
                                                (cost O(seq * window) when q.seq == k.seq and no global
                                                tokens, sinks, padding, ALiBi, bias, RoPE or dropout;
                                                else the mask is applied per element: x dilation)
   sink_tokens      none                        first n keys visible to every query (StreamingLLM)
   global_tokens    none                        first n positions attend to and from everything
                                                (per-token positions: longformer.global_mask)
   seqlens_q/_k     full length                 [batch] valid lengths (padding at the end)
   cu_seqlens_q/_k  not packed                  [varlen_batch+1] offsets of packed sequences;
                                                q/k/v then have batch 1 and seq = total length
   varlen_batch     -                           number of packed sequences (with cu_seqlens)
   alibi_slopes     none                        [q.heads] ALiBi slopes
   softcap          off                         logit soft-capping c*tanh(s/c)
   bias             none                        additive fp32 bias (attn_bias)
   n_threads        all cores                   threads to use ("all cores": counted once per process)
   parallel         built-in threads            your parallel-for (see attn_parallel_fn)
   parallel_user    -                           passed to parallel
   workspace        allocate per call           scratch memory of workspace_size bytes; ask
                                                attn_workspace_size() for the size needed
                                                (attn_backward_workspace_size() for attn_backward)
   dropout_p        no dropout                  attention dropout probability in [0, 1), applied
                                                by attn_forward and attn_backward (see DROPOUT)
   dropout_seed     0                           the dropout mask's seed (forward and backward
                                                must get the same one)
   dbias            not computed                attn_backward only: bias gradient, written with
                                                bias's shape [batch, heads, rows, Sk] and
                                                strides (summed over broadcast axes; rows 1:
                                                over the queries)
   rope             off (ATTN_ROPE_OFF)         rotate q and k in the kernel (RoPE), so K/V
                                                caches can hold un-rotated keys
   rope_dim         q.dim (even part)           leading dims rotated (even); the rest pass through
   rope_base        10000                       theta_i = base^(-2i/rope_dim)
   rope_scaling     1                           linear position interpolation: pos / scaling
   rope_pos_q       i + Lk - Lq                 [q.batch][q.seq] query positions
   rope_pos_k       j (slot in the sequence)    [k.batch][k.seq] key positions
   bf16_kernels     ATTN_BF16_AUTO              bf16 q/k/v (not decoding): AUTO = AMX tiles where the
                                                CPU and OS allow them, else AVX512-BF16 dot products,
                                                else the fp32 kernels; ATTN_BF16_NO_AMX = never AMX;
                                                ATTN_BF16_FP32 = the fp32 kernels only (inputs
                                                converted), as on a CPU with neither
   allow_tf32       off                         nonzero: the CUDA companion's f32 path may run
                                                Q.K^T and P.V on TF32 tensor cores (inputs rounded
                                                to 10-bit mantissas, fp32 accumulation; like
                                                PyTorch's allow_tf32); the CPU has no TF32 and
                                                computes in fp32 whatever this says: it is a
                                                permission, not a request */
/* attn_desc.bf16_kernels: which kernels bf16 q/k/v may run on (see attn_bf16_kernels()). */
typedef enum attn_bf16_mode { ATTN_BF16_AUTO = 0, ATTN_BF16_NO_AMX = 1, ATTN_BF16_FP32 = 2 } attn_bf16_mode;

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
    float dropout_p;
    unsigned long long dropout_seed;
    float *dbias;
    /* generation fields */
    int rope;                      /* ATTN_ROPE_OFF (0), ATTN_ROPE_INTERLEAVED, ATTN_ROPE_HALF */
    int rope_dim;                  /* 0: q.dim rounded down to even */
    float rope_base;               /* 0: 10000 */
    float rope_scaling;            /* 0: 1 */
    const int *rope_pos_q;         /* [q.batch][q.seq] or NULL */
    const int *rope_pos_k;         /* [k.batch][k.seq] (a cache: [batch][capacity]) or NULL */
    /* AMX fields */
    attn_bf16_mode bf16_kernels;
    /* CUDA companion fields */
    int allow_tf32;                /* 0: fp32 maths; nonzero: attn_cuda_*'s f32 path may use TF32 */
    /* per-kind parameters (read only by their kind; zero = the kind's defaults) */
    /* -- sparse -- */
    attn_longformer_params longformer;
    attn_bigbird_params bigbird;
    attn_lsh_params lsh;
    attn_routing_params routing;
    /* -- linear and kernel -- */
    attn_linear_params linear;   /* ATTN_LINEAR */
    attn_cosformer_params cosformer;   /* ATTN_COSFORMER */
    attn_performer_params performer;   /* ATTN_PERFORMER */
    /* -- low-rank -- */
    attn_linformer_params linformer;  /* ATTN_LINFORMER */
    attn_nystrom_params nystrom;      /* ATTN_NYSTROM */

} attn_desc;

/* Status codes: one per check, each message names the field at fault.
   X(name, value, category, message). Values are fixed: a new code takes the next free value
   of its block and is never renumbered. Blocks: 0-199 core (exact attention, backward, GEMM,
   layers, generation, EL), 200-249 recurrent state and mechanism seam, 250-299 CUDA, 300-349 sparse,
   350-399 linear and kernel, 400-449 low-rank, 450-499 state space. */
#define ATTN__STATUS_LIST(X) \
    X(ATTN_OK,                          0, ATTN_CAT_OK,          "ok") \
    X(ATTN_ERR_NULL_DESC,               1, ATTN_CAT_NULL,        "desc is NULL") \
    X(ATTN_ERR_NULL_Q,                  2, ATTN_CAT_NULL,        "q.data is NULL") \
    X(ATTN_ERR_NULL_K,                  3, ATTN_CAT_NULL,        "k.data is NULL") \
    X(ATTN_ERR_NULL_V,                  4, ATTN_CAT_NULL,        "v.data is NULL") \
    X(ATTN_ERR_NULL_OUT,                5, ATTN_CAT_NULL,        "out.data is NULL") \
    X(ATTN_ERR_NULL_ARG,                6, ATTN_CAT_NULL,        "a result pointer is NULL (bytes or floats of a workspace/state size query, attn_kv_len's len, a layer counter's result)") \
    X(ATTN_ERR_DTYPE,                   7, ATTN_CAT_DTYPE,       "a tensor's dtype is not ATTN_F32, ATTN_F16 or ATTN_BF16") \
    X(ATTN_ERR_DTYPE_MISMATCH,          8, ATTN_CAT_DTYPE,       "v.dtype must equal k.dtype (q and out may have any dtype)") \
    X(ATTN_ERR_Q_SHAPE,                 9, ATTN_CAT_SHAPE,       "q.batch, q.seq, q.heads and q.dim must all be >= 1") \
    X(ATTN_ERR_K_SHAPE,                10, ATTN_CAT_SHAPE,       "k.batch, k.seq, k.heads and k.dim must all be >= 1") \
    X(ATTN_ERR_V_SHAPE,                11, ATTN_CAT_SHAPE,       "v.batch, v.seq, v.heads and v.dim must all be >= 1") \
    X(ATTN_ERR_OUT_SHAPE,              12, ATTN_CAT_SHAPE,       "out must be [q.batch, q.seq, q.heads, v.dim]") \
    X(ATTN_ERR_K_BATCH,                13, ATTN_CAT_SHAPE,       "k.batch must equal q.batch") \
    X(ATTN_ERR_K_DIM,                  14, ATTN_CAT_SHAPE,       "k.dim must equal q.dim") \
    X(ATTN_ERR_V_BATCH_SEQ,            15, ATTN_CAT_SHAPE,       "v.batch and v.seq must equal k.batch and k.seq") \
    X(ATTN_ERR_V_HEADS,                16, ATTN_CAT_SHAPE,       "v.heads must equal k.heads") \
    X(ATTN_ERR_GQA_HEADS,              17, ATTN_CAT_SHAPE,       "q.heads must be a multiple of k.heads (GQA/MQA)") \
    X(ATTN_ERR_OUT_BROADCAST,          18, ATTN_CAT_SHAPE,       "out must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_KIND,                   19, ATTN_CAT_RANGE,       "attn_desc.kind is not a known attn_kind") \
    X(ATTN_ERR_SCALE,                  20, ATTN_CAT_RANGE,       "scale (of attn_desc or attn_el_desc) must be finite") \
    X(ATTN_ERR_SOFTCAP,                21, ATTN_CAT_RANGE,       "attn_desc.softcap must be finite and >= 0") \
    X(ATTN_ERR_WINDOW_LEFT,            22, ATTN_CAT_RANGE,       "attn_desc.window_left must be >= 0") \
    X(ATTN_ERR_WINDOW_RIGHT,           23, ATTN_CAT_RANGE,       "attn_desc.window_right must be >= 0") \
    X(ATTN_ERR_DILATION,               24, ATTN_CAT_RANGE,       "attn_desc.dilation must be >= 0") \
    X(ATTN_ERR_SINK_TOKENS,            25, ATTN_CAT_RANGE,       "attn_desc.sink_tokens must be >= 0") \
    X(ATTN_ERR_GLOBAL_TOKENS,          26, ATTN_CAT_RANGE,       "attn_desc.global_tokens must be >= 0") \
    X(ATTN_ERR_CAUSAL,                 27, ATTN_CAT_RANGE,       "attn_desc.causal must be 0 or 1") \
    X(ATTN_ERR_SEQLENS_Q,              28, ATTN_CAT_RANGE,       "attn_desc.seqlens_q[b] must be in [0, q.seq]") \
    X(ATTN_ERR_SEQLENS_K,              29, ATTN_CAT_RANGE,       "attn_desc.seqlens_k[b] must be in [0, k.seq]") \
    X(ATTN_ERR_CU_SEQLENS_Q,           30, ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_q must start at 0, never decrease and end at most at q.seq") \
    X(ATTN_ERR_CU_SEQLENS_K,           31, ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_k must start at 0, never decrease and end at most at k.seq") \
    X(ATTN_ERR_CU_SEQLENS_PAIR,        32, ATTN_CAT_RANGE,       "attn_desc.cu_seqlens_q and attn_desc.cu_seqlens_k must be given together") \
    X(ATTN_ERR_VARLEN_BATCH,           33, ATTN_CAT_RANGE,       "attn_desc.varlen_batch must be >= 1 when cu_seqlens are given, else 0") \
    X(ATTN_ERR_VARLEN_SHAPE,           34, ATTN_CAT_SHAPE,       "with cu_seqlens, q, k, v and out must have batch 1") \
    X(ATTN_ERR_ALIBI,                  35, ATTN_CAT_RANGE,       "attn_desc.alibi_slopes[h] must be finite") \
    X(ATTN_ERR_BIAS_BATCH,             36, ATTN_CAT_SHAPE,       "attn_desc.bias.batch must be 1 or q.batch") \
    X(ATTN_ERR_BIAS_HEADS,             37, ATTN_CAT_SHAPE,       "attn_desc.bias.heads must be 1 or q.heads") \
    X(ATTN_ERR_N_THREADS,              38, ATTN_CAT_RANGE,       "n_threads (of attn_desc, attn_layer_desc, attn_el_desc or attn_sgemm) must be >= 0") \
    X(ATTN_ERR_WORKSPACE,              39, ATTN_CAT_RANGE,       "workspace_size (of attn_desc or attn_layer_desc) is smaller than the matching size query (attn_workspace_size, attn_backward_workspace_size, attn_decode_workspace_size, attn_layer_workspace_size) asks for") \
    X(ATTN_ERR_VARLEN_WITH_SEQLENS,    40, ATTN_CAT_UNSUPPORTED, "attn_desc.seqlens_q/_k cannot be combined with cu_seqlens_q/_k") \
    X(ATTN_ERR_VARLEN_WITH_BIAS,       41, ATTN_CAT_UNSUPPORTED, "attn_desc.bias cannot be combined with cu_seqlens_q/_k") \
    X(ATTN_ERR_MERGE_N_PARTS,          42, ATTN_CAT_RANGE,       "attn_merge: n_parts must be >= 1") \
    X(ATTN_ERR_MERGE_NULL,             43, ATTN_CAT_NULL,        "attn_merge: parts, part_lse, a part's data or a part_lse[p] is NULL") \
    X(ATTN_ERR_MERGE_SHAPE,            44, ATTN_CAT_SHAPE,       "attn_merge: every part must have out's batch, seq, heads and dim") \
    /* -- backward (attn_backward, dropout) -- */ \
    X(ATTN_ERR_DROPOUT,                45, ATTN_CAT_RANGE,       "attn_desc.dropout_p must be in [0, 1)") \
    X(ATTN_ERR_BWD_NULL_DOUT,          46, ATTN_CAT_NULL,        "attn_backward: dout.data is NULL") \
    X(ATTN_ERR_BWD_NULL_LSE,           47, ATTN_CAT_NULL,        "attn_backward: lse is NULL (pass the forward's logsumexp)") \
    X(ATTN_ERR_BWD_NULL_DQ,            48, ATTN_CAT_NULL,        "attn_backward: dq.data is NULL") \
    X(ATTN_ERR_BWD_NULL_DK,            49, ATTN_CAT_NULL,        "attn_backward: dk.data is NULL") \
    X(ATTN_ERR_BWD_NULL_DV,            50, ATTN_CAT_NULL,        "attn_backward: dv.data is NULL") \
    X(ATTN_ERR_BWD_DOUT_SHAPE,         51, ATTN_CAT_SHAPE,       "attn_backward: dout must be [q.batch, q.seq, q.heads, v.dim]") \
    X(ATTN_ERR_BWD_DQ_SHAPE,           52, ATTN_CAT_SHAPE,       "attn_backward: dq must have q's batch, seq, heads and dim") \
    X(ATTN_ERR_BWD_DK_SHAPE,           53, ATTN_CAT_SHAPE,       "attn_backward: dk must have k's batch, seq, heads and dim") \
    X(ATTN_ERR_BWD_DV_SHAPE,           54, ATTN_CAT_SHAPE,       "attn_backward: dv must have v's batch, seq, heads and dim") \
    X(ATTN_ERR_BWD_DQ_BROADCAST,       55, ATTN_CAT_SHAPE,       "attn_backward: dq must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_BWD_DK_BROADCAST,       56, ATTN_CAT_SHAPE,       "attn_backward: dk must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_BWD_DV_BROADCAST,       57, ATTN_CAT_SHAPE,       "attn_backward: dv must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_BWD_DBIAS_NO_BIAS,      58, ATTN_CAT_RANGE,       "attn_backward: attn_desc.dbias needs attn_desc.bias.data (dbias takes bias's shape and strides)") \
    X(ATTN_ERR_BWD_DBIAS_BROADCAST,    59, ATTN_CAT_SHAPE,       "attn_backward: attn_desc.dbias needs attn_desc.bias strides with no zero stride on an axis of extent > 1") \
    /* -- GEMM (attn_sgemm) -- */ \
    X(ATTN_ERR_GEMM_M,                 60, ATTN_CAT_SHAPE,       "attn_sgemm: m must be >= 0") \
    X(ATTN_ERR_GEMM_N,                 61, ATTN_CAT_SHAPE,       "attn_sgemm: n must be >= 0") \
    X(ATTN_ERR_GEMM_K,                 62, ATTN_CAT_SHAPE,       "attn_sgemm: k must be >= 0") \
    X(ATTN_ERR_GEMM_ALPHA,             64, ATTN_CAT_RANGE,       "attn_sgemm: alpha must be finite") \
    X(ATTN_ERR_GEMM_BETA,              65, ATTN_CAT_RANGE,       "attn_sgemm: beta must be finite") \
    X(ATTN_ERR_GEMM_LDA,               66, ATTN_CAT_SHAPE,       "attn_sgemm: lda must be >= max(1, row length of the stored a: k, or m when trans_a)") \
    X(ATTN_ERR_GEMM_LDB,               67, ATTN_CAT_SHAPE,       "attn_sgemm: ldb must be >= max(1, row length of the stored b: n, or k when trans_b)") \
    X(ATTN_ERR_GEMM_LDC,               68, ATTN_CAT_SHAPE,       "attn_sgemm: ldc must be >= max(1, n)") \
    X(ATTN_ERR_GEMM_NULL_A,            69, ATTN_CAT_NULL,        "attn_sgemm: a is NULL (allowed only when m or k is 0)") \
    X(ATTN_ERR_GEMM_NULL_B,            70, ATTN_CAT_NULL,        "attn_sgemm: b is NULL (allowed only when k or n is 0)") \
    X(ATTN_ERR_GEMM_NULL_C,            71, ATTN_CAT_NULL,        "attn_sgemm: c is NULL (allowed only when m or n is 0)") \
    X(ATTN_ERR_GEMM_A_OVERFLOW,        72, ATTN_CAT_OVERFLOW,    "attn_sgemm: the extent of a, (rows-1)*lda + row length floats, overflows ptrdiff_t") \
    X(ATTN_ERR_GEMM_B_OVERFLOW,        73, ATTN_CAT_OVERFLOW,    "attn_sgemm: the extent of b, (rows-1)*ldb + row length floats, overflows ptrdiff_t") \
    X(ATTN_ERR_GEMM_C_OVERFLOW,        74, ATTN_CAT_OVERFLOW,    "attn_sgemm: the extent of c, (m-1)*ldc + n floats, overflows ptrdiff_t") \
    X(ATTN_ERR_GEMM_ALIAS,             75, ATTN_CAT_UNSUPPORTED, "attn_sgemm: c overlaps a or b") \
    /* -- layers (attn_layer_*) -- */ \
    X(ATTN_ERR_LAYER_KIND,             76, ATTN_CAT_RANGE,       "attn_layer_desc.kind is not a known attn_layer_kind") \
    X(ATTN_ERR_LAYER_D_MODEL,          77, ATTN_CAT_RANGE,       "attn_layer_desc.d_model must be >= 1") \
    X(ATTN_ERR_LAYER_HEADS,            78, ATTN_CAT_RANGE,       "attn_layer_desc.heads must be >= 0 and divide attn_layer_desc.d_model") \
    X(ATTN_ERR_LAYER_KV_HEADS,         79, ATTN_CAT_RANGE,       "attn_layer_desc.kv_heads must be >= 0 and divide attn_layer_desc.heads") \
    X(ATTN_ERR_LAYER_KV_HEADS_KIND,    80, ATTN_CAT_UNSUPPORTED, "attn_layer_desc.kv_heads < heads (GQA/MQA) needs kind ATTN_LAYER_STANDARD") \
    X(ATTN_ERR_LAYER_CONTEXT,          81, ATTN_CAT_RANGE,       "attn_layer_desc.context must be >= 1 for ATTN_LAYER_SUPER and the Direct kinds") \
    X(ATTN_ERR_LAYER_SLIDING,          83, ATTN_CAT_RANGE,       "attn_layer_desc.sliding_alignment must be 0 or 1") \
    X(ATTN_ERR_LAYER_DIRECT_ATTN,      84, ATTN_CAT_UNSUPPORTED, "attn_layer_desc.attn.softcap, .bias, .cu_seqlens_q/_k must be 0/NULL with the Direct kinds") \
    X(ATTN_ERR_LAYER_SHAPE,            85, ATTN_CAT_SHAPE,       "attn_layer: batch, lq and lk must be >= 1") \
    X(ATTN_ERR_LAYER_SELF_LK,          86, ATTN_CAT_SHAPE,       "attn_layer: with x_kv NULL (self-attention) lk must equal lq") \
    X(ATTN_ERR_LAYER_SEQ_CONTEXT,      87, ATTN_CAT_SHAPE,       "attn_layer: lk (Super without sliding_alignment) or lq and lk (Direct) must be <= attn_layer_desc.context") \
    X(ATTN_ERR_LAYER_NULL_X,           88, ATTN_CAT_NULL,        "attn_layer: x_q is NULL") \
    X(ATTN_ERR_LAYER_NULL_OUT,         89, ATTN_CAT_NULL,        "attn_layer_forward: out is NULL") \
    X(ATTN_ERR_LAYER_NULL_WEIGHTS,     90, ATTN_CAT_NULL,        "attn_layer: weights is NULL") \
    X(ATTN_ERR_LAYER_NULL_WQ,          91, ATTN_CAT_NULL,        "attn_layer_weights.wq is NULL (read by Standard, Optimized, Efficient, Super)") \
    X(ATTN_ERR_LAYER_NULL_WK,          92, ATTN_CAT_NULL,        "attn_layer_weights.wk is NULL (read by Standard, Optimized)") \
    X(ATTN_ERR_LAYER_NULL_WV,          93, ATTN_CAT_NULL,        "attn_layer_weights.wv is NULL (read by Standard and the Direct kinds)") \
    X(ATTN_ERR_LAYER_NULL_WO,          94, ATTN_CAT_NULL,        "attn_layer_weights.wo is NULL (read by every kind)") \
    X(ATTN_ERR_LAYER_NULL_WA,          95, ATTN_CAT_NULL,        "attn_layer_weights.wa is NULL (read by Super)") \
    X(ATTN_ERR_LAYER_NULL_WD,          96, ATTN_CAT_NULL,        "attn_layer_weights.wd is NULL (read by the Direct kinds)") \
    X(ATTN_ERR_LAYER_NULL_DOUT,        97, ATTN_CAT_NULL,        "attn_layer_backward: dout is NULL") \
    X(ATTN_ERR_LAYER_NULL_GRADS,       98, ATTN_CAT_NULL,        "attn_layer_backward: grads is NULL") \
    X(ATTN_ERR_LAYER_DX_KV,            99, ATTN_CAT_RANGE,       "attn_layer_backward: dx_kv must be NULL for self-attention (dx_q gets the whole input gradient)") \
    /* -- generation (KV caches, RoPE, StreamingLLM, EL-attention) -- */ \
    X(ATTN_ERR_ROPE_MODE,             102, ATTN_CAT_RANGE,       "attn_desc.rope must be ATTN_ROPE_OFF, ATTN_ROPE_INTERLEAVED or ATTN_ROPE_HALF") \
    X(ATTN_ERR_ROPE_DIM,              103, ATTN_CAT_RANGE,       "attn_desc.rope_dim must be even and in [0, q.dim]") \
    X(ATTN_ERR_ROPE_BASE,             104, ATTN_CAT_RANGE,       "attn_desc.rope_base must be 0 or finite and > 0") \
    X(ATTN_ERR_ROPE_SCALING,          105, ATTN_CAT_RANGE,       "attn_desc.rope_scaling must be 0 or finite and > 0") \
    X(ATTN_ERR_ROPE_X,                106, ATTN_CAT_NULL,        "attn_rope_apply: x.data is NULL") \
    X(ATTN_ERR_ROPE_X_SHAPE,          107, ATTN_CAT_SHAPE,       "attn_rope_apply: x.batch, x.seq, x.heads and x.dim must all be >= 1") \
    X(ATTN_ERR_ROPE_X_BROADCAST,      108, ATTN_CAT_SHAPE,       "attn_rope_apply: x must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_KV_NULL,               109, ATTN_CAT_NULL,        "the attn_kv_cache pointer is NULL") \
    X(ATTN_ERR_KV_DATA,               110, ATTN_CAT_NULL,        "attn_kv_cache.k.data or attn_kv_cache.v.data is NULL") \
    X(ATTN_ERR_KV_LENS,               111, ATTN_CAT_NULL,        "attn_kv_cache.lens is NULL") \
    X(ATTN_ERR_KV_DTYPE,              112, ATTN_CAT_DTYPE,       "attn_kv_cache.k.dtype and .v.dtype must be equal and one of ATTN_F32, ATTN_F16, ATTN_BF16") \
    X(ATTN_ERR_KV_SHAPE,              113, ATTN_CAT_SHAPE,       "attn_kv_cache.k and .v must have extents >= 1 and equal batch, seq and heads") \
    X(ATTN_ERR_KV_BROADCAST,          114, ATTN_CAT_SHAPE,       "attn_kv_cache.k and .v must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_KV_BATCH,              115, ATTN_CAT_SHAPE,       "attn_kv_cache.batch must be >= 1, and equal k.batch when page_size is 0") \
    X(ATTN_ERR_KV_PAGE_SIZE,          116, ATTN_CAT_SHAPE,       "attn_kv_cache.page_size must be 0 (contiguous) or equal k.seq (paged)") \
    X(ATTN_ERR_KV_BLOCK_TABLE,        117, ATTN_CAT_NULL,        "attn_kv_cache.block_table is NULL in a paged cache") \
    X(ATTN_ERR_KV_MAX_PAGES,          118, ATTN_CAT_RANGE,       "attn_kv_cache.max_pages must be >= 1 in a paged cache") \
    X(ATTN_ERR_KV_LEN,                119, ATTN_CAT_RANGE,       "attn_kv_cache.lens[b] must be in [0, capacity]") \
    X(ATTN_ERR_KV_PAGE_INDEX,         120, ATTN_CAT_RANGE,       "attn_kv_cache.block_table[b][p] must be in [0, k.batch) for every page in use") \
    X(ATTN_ERR_KV_NEW_NULL,           121, ATTN_CAT_NULL,        "attn_kv_append(_streaming): k_new.data or v_new.data is NULL") \
    X(ATTN_ERR_KV_NEW_SHAPE,          122, ATTN_CAT_SHAPE,       "attn_kv_append(_streaming): k_new and v_new must be [cache.batch, S, k.heads, k.dim|v.dim]") \
    X(ATTN_ERR_KV_N_NEW,              123, ATTN_CAT_RANGE,       "attn_kv_append(_streaming): n_new[b] must be in [0, k_new.seq]") \
    X(ATTN_ERR_KV_FULL,               124, ATTN_CAT_RANGE,       "attn_kv_append: lens[b] + n_new[b] exceeds the cache capacity") \
    X(ATTN_ERR_KV_SEQ,                125, ATTN_CAT_RANGE,       "attn_kv_evict / attn_kv_len: seq must be in [0, cache.batch)") \
    X(ATTN_ERR_KV_EVICT_RANGE,        126, ATTN_CAT_RANGE,       "attn_kv_evict: start and count must be >= 0 and start + count <= lens[seq]") \
    X(ATTN_ERR_KV_STREAM,             127, ATTN_CAT_RANGE,       "attn_kv_append_streaming: sink must be >= 0, recent >= 1 and sink + recent <= capacity") \
    X(ATTN_ERR_DECODE_LENGTHS,        128, ATTN_CAT_UNSUPPORTED, "attn_decode: attn_desc.seqlens_k and cu_seqlens_q/_k must be NULL (the cache holds the lengths)") \
    X(ATTN_ERR_EL_NULL,               129, ATTN_CAT_NULL,        "attn_el_attention: desc, w, x, h or out is NULL") \
    X(ATTN_ERR_EL_WEIGHTS,            130, ATTN_CAT_NULL,        "attn_el_attention: w->wq, w->wk, w->wv and w->wo must not be NULL") \
    X(ATTN_ERR_EL_SHAPE,              131, ATTN_CAT_SHAPE,       "attn_el_desc.d_model, heads, batch, beams and src_len must be >= 1") \
    X(ATTN_ERR_EL_HEADS,              132, ATTN_CAT_SHAPE,       "attn_el_desc.d_model must be a multiple of heads, heads a multiple of kv_heads") \
    X(ATTN_ERR_EL_SRC_LENS,           133, ATTN_CAT_RANGE,       "attn_el_desc.src_lens[b] must be in [1, src_len]") \
    /* -- AMX, then core (values 63, 82, 100, 101, 134 and 135 are retired, never reused) -- */ \
    X(ATTN_ERR_BF16_KERNELS,               136, ATTN_CAT_RANGE,       "attn_desc.bf16_kernels must be ATTN_BF16_AUTO, ATTN_BF16_NO_AMX or ATTN_BF16_FP32") \
    X(ATTN_ERR_OVERFLOW,              137, ATTN_CAT_OVERFLOW,    "a tensor's or attn_desc.bias's size or strides overflow ptrdiff_t/size_t, or a task count (q.batch * q.heads, times the kind's blocks) exceeds INT_MAX") \
    X(ATTN_ERR_OUT_OF_MEMORY,         138, ATTN_CAT_MEMORY,      "out of memory (workspace allocation failed)") \
    /* -- core, continued (139-199) -- */ \
    X(ATTN_ERR_OUT_OVERLAP,           139, ATTN_CAT_UNSUPPORTED, "out (or lse) overlaps q, k, v, the KV cache (attn_decode) or attn_state.data[0, size) (attn_step), or out's rows overlap each other (see attn_tensor)") \
    X(ATTN_ERR_BWD_OVERLAP,           140, ATTN_CAT_UNSUPPORTED, "attn_backward: dq, dk or dv overlaps q, k, v, out, dout, lse, another gradient or its own rows (see attn_tensor)") \
    X(ATTN_ERR_KV_OVERLAP,            141, ATTN_CAT_UNSUPPORTED, "attn_kv_cache.k or .v rows overlap each other, or k's memory span meets v's (see attn_tensor)") \
    X(ATTN_ERR_LAYER_ATTN_KIND,       142, ATTN_CAT_UNSUPPORTED, "attn_layer_desc.attn.kind must be ATTN_SOFTMAX (the layers' attention core is exact softmax attention)") \
    X(ATTN_ERR_BIAS_ROWS,             143, ATTN_CAT_SHAPE,       "attn_desc.bias.rows must be 1 (one row for every query) or q.seq") \
    \
    /* -- recurrent state and mechanism seam (200-249) -- */ \
    X(ATTN_ERR_KIND_OP,               200, ATTN_CAT_UNSUPPORTED, "this attn_desc.kind has no such operation (see the kind's documentation: backward, decode or step)") \
    X(ATTN_ERR_STATE_NULL,            201, ATTN_CAT_NULL,        "the attn_state pointer or its data is NULL") \
    X(ATTN_ERR_STATE_SIZE,            202, ATTN_CAT_RANGE,       "attn_state.size (or floats) is smaller than attn_state_size() asks for") \
    X(ATTN_ERR_STATE_MISMATCH,        203, ATTN_CAT_SHAPE,       "attn_state was initialised for another kind, other batch, heads or dims, or other state-shaping parameters (performer.features / kernel, cosformer.max_len)") \
    X(ATTN_ERR_KIND_LSE,              204, ATTN_CAT_UNSUPPORTED, "lse must be NULL: this attn_desc.kind has no logsumexp") \
    X(ATTN_ERR_KIND_OPTION,           205, ATTN_CAT_UNSUPPORTED, "attn_desc sets a softmax-only field this kind does not read (scale, window_left/_right, dilation, sink_tokens, global_tokens, alibi_slopes, softcap, bias, dropout_p, rope, rope_pos_q/_k, cu_seqlens_q/_k, varlen_batch, bf16_kernels, dbias)") \
    X(ATTN_ERR_STEP_SEQ,              206, ATTN_CAT_SHAPE,       "attn_step: k.seq must equal q.seq (one key and value per new token)") \
    X(ATTN_ERR_STEP_LENGTHS,          207, ATTN_CAT_UNSUPPORTED, "attn_step: attn_desc.seqlens_q/_k must be NULL (every sequence consumes q.seq tokens)") \
    X(ATTN_ERR_STATE_POS,             208, ATTN_CAT_RANGE,       "attn_state.pos must be >= 0 (the tokens the state has consumed)") \
    \
    /* -- CUDA companion, attn_cuda.cuh (250-299) -- */ \
    X(ATTN_ERR_CUDA_HOST_POINTER,     250, ATTN_CAT_UNSUPPORTED, "attn_cuda: q, k, v, out, lse (or another tensor of the call), bias.data, seqlens_q/_k, cu_seqlens_q/_k or alibi_slopes is not device memory") \
    X(ATTN_ERR_CUDA_HEAD_DIM,         251, ATTN_CAT_UNSUPPORTED, "attn_cuda: f16/bf16 need q.dim == v.dim in {32, 64, 96, 128, 256}; f32 needs q.dim and v.dim <= 256") \
    X(ATTN_ERR_CUDA_DTYPE_MIX,        252, ATTN_CAT_DTYPE,       "attn_cuda: q, k and v (the KV cache) must have one dtype (out may have any)") \
    X(ATTN_ERR_CUDA_UNSUPPORTED,      253, ATTN_CAT_UNSUPPORTED, "attn_cuda: only attn_desc.kind ATTN_SOFTMAX, without dropout_p and rope (attn_cuda_backward: and without dbias)") \
    X(ATTN_ERR_CUDA_RUNTIME,          254, ATTN_CAT_MEMORY,      "attn_cuda: a CUDA runtime call failed (allocation, copy, launch or no device); see cudaGetLastError") \
    \
    /* -- sparse (300-349) -- */ \
    X(ATTN_ERR_LONGFORMER_DILATIONS,  300, ATTN_CAT_RANGE,       "attn_desc.longformer.dilations[h] must be >= 0") \
    X(ATTN_ERR_LONGFORMER_DROPOUT,    301, ATTN_CAT_UNSUPPORTED, "attn_desc.dropout_p must be 0 with ATTN_LONGFORMER") \
    X(ATTN_ERR_SPARSE_MASKS,          302, ATTN_CAT_UNSUPPORTED, "with ATTN_BIGBIRD, ATTN_LSH and ATTN_ROUTING, attn_desc.causal (BigBird), softcap (LSH, routing), window_left/_right, dilation, sink_tokens, global_tokens, cu_seqlens_q/_k, varlen_batch (BigBird, LSH), alibi_slopes, bias, dropout_p and rope must be 0/NULL") \
    X(ATTN_ERR_SPARSE_SELF,           303, ATTN_CAT_SHAPE,       "ATTN_BIGBIRD, ATTN_LSH and ATTN_ROUTING are self-attention: k.seq must equal q.seq") \
    X(ATTN_ERR_BIGBIRD_BLOCK,         304, ATTN_CAT_RANGE,       "attn_desc.bigbird.block must be >= 0 and divide q.seq") \
    X(ATTN_ERR_BIGBIRD_RANDOM,        305, ATTN_CAT_RANGE,       "attn_desc.bigbird.random_blocks must be >= 0") \
    X(ATTN_ERR_BIGBIRD_FLAGS,         306, ATTN_CAT_RANGE,       "attn_desc.bigbird.no_random and .hf_fallback must be 0 or 1") \
    X(ATTN_ERR_BIGBIRD_TABLE,         307, ATTN_CAT_RANGE,       "attn_desc.bigbird.random_table[h][i][t] must be in [0, q.seq / block)") \
    X(ATTN_ERR_BIGBIRD_NULL_TABLE,    308, ATTN_CAT_NULL,        "attn_bigbird_random_table: desc or table is NULL") \
    X(ATTN_ERR_BIGBIRD_SHAPE,         309, ATTN_CAT_SHAPE,       "attn_bigbird_random_table: heads and seq must be >= 1") \
    X(ATTN_ERR_LSH_HEADS,             310, ATTN_CAT_SHAPE,       "ATTN_LSH and ATTN_ROUTING share QK: k.heads must equal q.heads") \
    X(ATTN_ERR_LSH_BUCKET_SIZE,       311, ATTN_CAT_RANGE,       "attn_desc.lsh.bucket_size must be >= 0 and divide q.seq") \
    X(ATTN_ERR_LSH_BUCKETS,           312, ATTN_CAT_RANGE,       "attn_desc.lsh.n_buckets must be 0 (default) or even and >= 2") \
    X(ATTN_ERR_LSH_HASHES,            313, ATTN_CAT_RANGE,       "attn_desc.lsh.n_hashes must be >= 0 (0: 1), and n_hashes * q.seq must fit in an int") \
    X(ATTN_ERR_LSH_ROTATIONS,         314, ATTN_CAT_RANGE,       "attn_desc.lsh.rotations must be finite") \
    X(ATTN_ERR_LSH_NULL,              315, ATTN_CAT_NULL,        "attn_lsh_rotations: desc or rotations is NULL") \
    X(ATTN_ERR_LSH_SHAPE,             316, ATTN_CAT_SHAPE,       "attn_lsh_rotations: heads, seq and dim must be >= 1") \
    X(ATTN_ERR_ROUTING_CENTROIDS,     317, ATTN_CAT_NULL,        "attn_desc.routing.centroids is NULL") \
    X(ATTN_ERR_ROUTING_CLUSTERS,      318, ATTN_CAT_RANGE,       "attn_desc.routing.n_clusters must be >= 1") \
    X(ATTN_ERR_ROUTING_WINDOW,        319, ATTN_CAT_RANGE,       "attn_desc.routing.window must be >= 0 (0: 64)") \
    X(ATTN_ERR_ROUTING_LSE,           320, ATTN_CAT_UNSUPPORTED, "ATTN_ROUTING defines no logsumexp: lse must be NULL") \
    X(ATTN_ERR_ROUTING_NONFINITE,     321, ATTN_CAT_RANGE,       "attn_desc.routing.centroids must be finite") \
    X(ATTN_ERR_ROUTING_DECAY,         322, ATTN_CAT_RANGE,       "attn_routing_update: decay must be in [0, 1) (0: 0.999)") \
    X(ATTN_ERR_ROUTING_X,             323, ATTN_CAT_NULL,        "attn_routing_update: x.data is NULL") \
    X(ATTN_ERR_LONGFORMER_BACKWARD,   324, ATTN_CAT_UNSUPPORTED, "attn_backward with ATTN_LONGFORMER: the query heads of a KV group must share one dilation, and attn_desc.dbias with a head-broadcast bias needs one dilation for every head") \
    X(ATTN_ERR_BIGBIRD_MULTIPLICITY,  325, ATTN_CAT_RANGE,       "attn_desc.bigbird.multiplicity must be ATTN_BIGBIRD_UNION (0), ATTN_BIGBIRD_HF_LISTED (1) or ATTN_BIGBIRD_HF_EVAL (2)") \
    X(ATTN_ERR_LONGFORMER_GLOBAL_MASK, 326, ATTN_CAT_UNSUPPORTED, "attn_desc.longformer.global_mask cannot be combined with bias, rope or cu_seqlens_q/_k") \
    X(ATTN_ERR_LONGFORMER_GLOBAL_ROWS, 327, ATTN_CAT_RANGE,      "attn_desc.longformer.global_rows_only must be 0 or 1, and 1 needs longformer.global_mask") \
    X(ATTN_ERR_LONGFORMER_MASK_BACKWARD, 328, ATTN_CAT_UNSUPPORTED, "attn_backward with ATTN_LONGFORMER does not take longformer.global_mask (forward only)") \
    X(ATTN_ERR_ROUTING_SEQLENS,       329, ATTN_CAT_RANGE,       "ATTN_ROUTING, attn_routing_update: where both seqlens_q and seqlens_k (cu_seqlens_q and cu_seqlens_k) are given they must be equal (a token is padding as query and key alike)") \
    X(ATTN_ERR_ROUTING_OPTIONS,       330, ATTN_CAT_RANGE,       "attn_desc.routing.normalize_keys and separate_qk must be 0 or 1 (separate_qk needs causal 0) and count_eps finite and >= 0") \
    X(ATTN_ERR_LSH_LAYOUT,            340, ATTN_CAT_RANGE,       "attn_desc.lsh.rotations_layout must be ATTN_LSH_ROT_ATTN (0) or ATTN_LSH_ROT_HF (1)") \
    X(ATTN_ERR_LSH_HF_MERGE,          341, ATTN_CAT_RANGE,       "attn_desc.lsh.hf_merge must be 0 or 1") \
    X(ATTN_ERR_LSH_SEQLENS,           342, ATTN_CAT_UNSUPPORTED, "ATTN_LSH: attn_desc.seqlens_q[b] and seqlens_k[b] must be equal when both are given (one padding mask, HF's attention_mask)") \
    X(ATTN_ERR_LSH_FACTORS,           343, ATTN_CAT_RANGE,       "attn_desc.lsh.bucket_factors must be even values >= 2 followed by zeros, with a product <= 2^24 and n_buckets 0") \
    \
    /* -- linear and kernel (350-399) -- */ \
    X(ATTN_ERR_LINEAR_EPS,            350, ATTN_CAT_RANGE,       "attn_desc.linear.eps must be finite and >= 0, or ATTN_EPS_ZERO") \
    X(ATTN_ERR_PERFORMER_FEATURES,    351, ATTN_CAT_RANGE,       "attn_desc.performer.features (attn_performer_draw: params->features) must be in [0, 65536] (0: 256, only when W is drawn: with .projection it must be set)") \
    X(ATTN_ERR_PERFORMER_EPS,         352, ATTN_CAT_RANGE,       "attn_desc.performer.eps must be finite and >= 0, or ATTN_EPS_ZERO") \
    X(ATTN_ERR_PERFORMER_OPTIONS,     353, ATTN_CAT_RANGE,       "attn_desc.performer.kernel must be 0 (softmax) or 1 (ReLU) and .fixed_norms 0 or 1") \
    X(ATTN_ERR_PERFORMER_PROJECTION_DIM, 354, ATTN_CAT_SHAPE,    "attn_desc.performer.projection_dim must equal q.dim when .projection is set") \
    X(ATTN_ERR_PERFORMER_PROJECTION,  355, ATTN_CAT_RANGE,       "attn_desc.performer.projection must hold finite values") \
    X(ATTN_ERR_PERFORMER_DRAW_NULL,   356, ATTN_CAT_NULL,        "attn_performer_draw: params or W is NULL") \
    X(ATTN_ERR_PERFORMER_DRAW_DIM,    357, ATTN_CAT_SHAPE,       "attn_performer_draw: dim must be >= 1") \
    X(ATTN_ERR_PERFORMER_PROJECTION_FEATURES, 358, ATTN_CAT_RANGE, "attn_desc.performer.features must be set (>= 1, the rows of W) when .projection is given: it is never defaulted for a caller's array") \
    X(ATTN_ERR_PERFORMER_RELU_NORMALIZE, 359, ATTN_CAT_RANGE,    "attn_desc.performer.relu_normalize must be 0 or 1") \
    /* cosFormer: 387-389 (after the RWKV block) */ \
    \
    /* RWKV scans (attn_rwkv4_*, attn_rwkv6_*): 370-389 */ \
    X(ATTN_ERR_RWKV_NULL_R,           370, ATTN_CAT_NULL,        "attn_rwkv6: r.data is NULL") \
    X(ATTN_ERR_RWKV_NULL_W,           371, ATTN_CAT_NULL,        "attn_rwkv6: w.data is NULL") \
    X(ATTN_ERR_RWKV_NULL_TIME_DECAY,  372, ATTN_CAT_NULL,        "attn_rwkv4: time_decay is NULL") \
    X(ATTN_ERR_RWKV_NULL_TIME_FIRST,  373, ATTN_CAT_NULL,        "attn_rwkv4: time_first is NULL") \
    X(ATTN_ERR_RWKV_NULL_U,           374, ATTN_CAT_NULL,        "attn_rwkv6: u is NULL") \
    X(ATTN_ERR_RWKV_NULL_STATE,       375, ATTN_CAT_NULL,        "attn_rwkv4_step/attn_rwkv6_step/attn_rwkv4_state_init: state is NULL") \
    X(ATTN_ERR_RWKV_SHAPE,            376, ATTN_CAT_SHAPE,       "attn_rwkv: v, out (and r, w for attn_rwkv6) must have k's batch, seq, heads and dim") \
    X(ATTN_ERR_RWKV_STEP_SEQ,         377, ATTN_CAT_SHAPE,       "attn_rwkv4_step/attn_rwkv6_step: k.seq must be 1 (one token; use _forward with state for more)") \
    X(ATTN_ERR_RWKV_TIME_DECAY,       378, ATTN_CAT_RANGE,       "attn_rwkv4: time_decay[c] must be finite") \
    X(ATTN_ERR_RWKV_TIME_FIRST,       379, ATTN_CAT_RANGE,       "attn_rwkv4: time_first[c] must be finite") \
    X(ATTN_ERR_RWKV_U,                380, ATTN_CAT_RANGE,       "attn_rwkv6: u[c] must be finite") \
    X(ATTN_ERR_RWKV_W_RANGE,          381, ATTN_CAT_RANGE,       "attn_rwkv6: every decay w[b][t][h][i] must be in [0, 1]") \
    X(ATTN_ERR_RWKV_HEAD_SIZE,        382, ATTN_CAT_RANGE,       "attn_rwkv_desc.head_size must be >= 0 and divide k.dim") \
    X(ATTN_ERR_RWKV_STATE_ALIAS,      383, ATTN_CAT_UNSUPPORTED, "attn_rwkv: state_out must be state_in itself or not overlap it") \
    X(ATTN_ERR_RWKV_WORKSPACE,        384, ATTN_CAT_RANGE,       "attn_rwkv_desc.workspace_size is smaller than attn_rwkv6_workspace_size() asks for") \
    X(ATTN_ERR_RWKV_NULL_BYTES,       385, ATTN_CAT_NULL,        "attn_rwkv6_workspace_size: bytes is NULL") \
    X(ATTN_ERR_RWKV_STATE_SHAPE,      386, ATTN_CAT_SHAPE,       "attn_rwkv4_state_init: batch and channels must be >= 1") \
    X(ATTN_ERR_COSFORMER_EPS,         387, ATTN_CAT_RANGE,       "attn_desc.cosformer.eps must be finite and >= 0, or ATTN_EPS_ZERO") \
    X(ATTN_ERR_COSFORMER_MAX_LEN,     388, ATTN_CAT_RANGE,       "attn_desc.cosformer.max_len must be >= 0 and >= every position (each sequence's valid lengths: seqlens_q/_k or q.seq, k.seq; attn_step: state.pos + k.seq)") \
    X(ATTN_ERR_COSFORMER_STEP_M,      389, ATTN_CAT_RANGE,       "attn_step with ATTN_COSFORMER: attn_desc.cosformer.max_len must be set (> 0), fixed for the whole decode") \
    X(ATTN_ERR_RWKV_OVERLAP,          390, ATTN_CAT_UNSUPPORTED, "attn_rwkv: out or state_out (the step's state) overlaps an input (r, k, v, w, time_decay, time_first, u, state_in), the other output, or out's rows overlap each other (see attn_tensor)") \
    /* -- low-rank (400-449) -- */ \
    X(ATTN_ERR_LINFORMER_NULL_E,      400, ATTN_CAT_NULL,        "attn_desc.linformer.e is NULL") \
    X(ATTN_ERR_LINFORMER_NULL_F,      401, ATTN_CAT_NULL,        "attn_desc.linformer.f is NULL (set attn_desc.linformer.shared_kv = 1 for F = E)") \
    X(ATTN_ERR_LINFORMER_N,           402, ATTN_CAT_SHAPE,       "attn_desc.linformer.n must be >= k.seq (shorter inputs use E's leading columns)") \
    X(ATTN_ERR_LINFORMER_K,           403, ATTN_CAT_RANGE,       "attn_desc.linformer.k must be in [1, attn_desc.linformer.n]") \
    X(ATTN_ERR_LINFORMER_SHARED_HEADS,404, ATTN_CAT_RANGE,       "attn_desc.linformer.shared_heads must be 0 or 1") \
    X(ATTN_ERR_LINFORMER_SHARED_KV,   405, ATTN_CAT_RANGE,       "attn_desc.linformer.shared_kv must be 0 or 1") \
    X(ATTN_ERR_LINFORMER_MASK,        406, ATTN_CAT_UNSUPPORTED, "ATTN_LINFORMER: attn_desc.causal, window_left/_right, dilation, sink_tokens, global_tokens, cu_seqlens_q/_k, varlen_batch, alibi_slopes, bias.data and rope must be 0/NULL (no key positions after the projection; pad with seqlens_k)") \
    X(ATTN_ERR_NYSTROM_LANDMARKS,     407, ATTN_CAT_RANGE,       "attn_desc.nystrom.landmarks must be in [0, min(q.seq, k.seq)] (0: 64)") \
    X(ATTN_ERR_NYSTROM_DIVIDE,        408, ATTN_CAT_SHAPE,       "attn_desc.nystrom.landmarks must divide q.seq and k.seq (or set attn_desc.nystrom.pad = 1)") \
    X(ATTN_ERR_NYSTROM_ITERATIONS,    409, ATTN_CAT_RANGE,       "attn_desc.nystrom.iterations and attn_nystrom_pinv's iterations must be >= 0 (0: 6)") \
    X(ATTN_ERR_NYSTROM_PAD,           410, ATTN_CAT_RANGE,       "attn_desc.nystrom.pad must be 0 or 1") \
    X(ATTN_ERR_NYSTROM_CONV_KERNEL,   411, ATTN_CAT_RANGE,       "attn_desc.nystrom.conv_kernel must be 0 (no conv) or odd and >= 1") \
    X(ATTN_ERR_NYSTROM_CONV_SEQ,      412, ATTN_CAT_SHAPE,       "attn_desc.nystrom.conv needs q.seq == k.seq (the residual adds conv(V) at each position)") \
    X(ATTN_ERR_NYSTROM_MASK,          413, ATTN_CAT_UNSUPPORTED, "ATTN_NYSTROM: attn_desc.causal, window_left/_right, dilation, sink_tokens, global_tokens, cu_seqlens_q/_k, varlen_batch, alibi_slopes, softcap, bias.data, dropout_p and rope must be 0/NULL") \
    X(ATTN_ERR_NYSTROM_LSE,           414, ATTN_CAT_UNSUPPORTED, "ATTN_NYSTROM: lse must be NULL (the approximation has no logsumexp)") \
    X(ATTN_ERR_NYSTROM_PINV_NULL,     415, ATTN_CAT_NULL,        "attn_nystrom_pinv: a or z is NULL") \
    X(ATTN_ERR_NYSTROM_PINV_M,        416, ATTN_CAT_SHAPE,       "attn_nystrom_pinv: m must be >= 1") \
    X(ATTN_ERR_NYSTROM_PINV_A,        417, ATTN_CAT_RANGE,       "attn_nystrom_pinv: a's largest column sum must be finite and > 0") \
    X(ATTN_ERR_NYSTROM_CONV_TAPS,     418, ATTN_CAT_RANGE,       "attn_desc.nystrom.conv_kernel must be set (odd, >= 1: the taps of each filter) when .conv is given: it is never defaulted for a caller's array") \
    X(ATTN_ERR_NYSTROM_PINV_ALIAS,    419, ATTN_CAT_UNSUPPORTED, "attn_nystrom_pinv: z overlaps a") \
    X(ATTN_ERR_NYSTROM_PINV_DIVERGED, 420, ATTN_CAT_RANGE,       "attn_nystrom_pinv: the iteration did not give a finite result (a is singular or too ill-conditioned); z is left untouched") \
    X(ATTN_ERR_NYSTROM_PADDING_RULE,  421, ATTN_CAT_RANGE,       "attn_desc.nystrom.padding_rule must be ATTN_NYSTROM_PADDING_ZERO, _HF or _LUCIDRAINS") \
    X(ATTN_ERR_NYSTROM_PINV_INIT,     422, ATTN_CAT_RANGE,       "attn_desc.nystrom.pinv_init must be ATTN_NYSTROM_PINV_PER_HEAD or ATTN_NYSTROM_PINV_BATCH") \
    \
    /* -- state space (450-499; 488, the complex-A backward's refusal, is retired, never reused) -- */ \
    X(ATTN_ERR_SSM_SHAPE,             450, ATTN_CAT_SHAPE,       "attn_ssm_desc.batch, .dim and .len must be >= 1 (the step forms ignore len)") \
    X(ATTN_ERR_SSM_D_STATE,           451, ATTN_CAT_SHAPE,       "attn_ssm_desc.d_state must be >= 1") \
    X(ATTN_ERR_SSM_GROUPS,            452, ATTN_CAT_SHAPE,       "attn_ssm_desc.n_groups must be >= 0 (0: 1) and divide attn_ssm_desc.dim") \
    X(ATTN_ERR_SSM_BC_CONST,          453, ATTN_CAT_RANGE,       "attn_ssm_desc.bc_const must be ATTN_SSM_BC_TOKEN or ATTN_SSM_BC_CONST") \
    X(ATTN_ERR_SSM_SOFTPLUS,          454, ATTN_CAT_RANGE,       "attn_ssm_desc.delta_softplus must be 0 or 1") \
    X(ATTN_ERR_SSM_VARLEN_BATCH,      455, ATTN_CAT_SHAPE,       "attn_ssm_desc.varlen_batch must be >= 1 with cu_seqlens (else 0), and batch must then be 1") \
    X(ATTN_ERR_SSM_CU_SEQLENS,        456, ATTN_CAT_RANGE,       "attn_ssm_desc.cu_seqlens must start at 0, never decrease and end at attn_ssm_desc.len") \
    X(ATTN_ERR_SSM_N_THREADS,         457, ATTN_CAT_RANGE,       "attn_ssm_desc.n_threads must be >= 0") \
    X(ATTN_ERR_SSM_NULL_U,            458, ATTN_CAT_NULL,        "attn_ssm: u.data (the step's x.data) is NULL") \
    X(ATTN_ERR_SSM_NULL_DELTA,        459, ATTN_CAT_NULL,        "attn_ssm: delta.data (the step's dt.data) is NULL") \
    X(ATTN_ERR_SSM_NULL_A,            460, ATTN_CAT_NULL,        "attn_ssm: A is NULL") \
    X(ATTN_ERR_SSM_NULL_B,            461, ATTN_CAT_NULL,        "attn_ssm: B.data is NULL") \
    X(ATTN_ERR_SSM_NULL_C,            462, ATTN_CAT_NULL,        "attn_ssm: C.data is NULL") \
    X(ATTN_ERR_SSM_NULL_Y,            463, ATTN_CAT_NULL,        "attn_ssm: y.data (conv1d: out.data) is NULL") \
    X(ATTN_ERR_SSM_DTYPE,             464, ATTN_CAT_DTYPE,       "attn_ssm: a tensor's dtype is not ATTN_F32, ATTN_F16 or ATTN_BF16") \
    X(ATTN_ERR_SSM_OVERFLOW,          465, ATTN_CAT_OVERFLOW,    "attn_ssm: a tensor's extent (sizes times strides) or the workspace size overflows") \
    X(ATTN_ERR_SSM_Y_BROADCAST,       466, ATTN_CAT_SHAPE,       "attn_ssm: y (conv1d: out) must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_SSM_NULL_STATE,        467, ATTN_CAT_NULL,        "attn_ssm_*_step: state is NULL") \
    X(ATTN_ERR_SSM_STEP_VARLEN,       468, ATTN_CAT_UNSUPPORTED, "attn_ssm_selective_step: attn_ssm_desc.cu_seqlens must be NULL") \
    X(ATTN_ERR_SSM_CONV_KERNEL,       469, ATTN_CAT_RANGE,       "attn_ssm_desc.conv_kernel must be >= 0 (0: 4)") \
    X(ATTN_ERR_SSM_CONV_ACT,          470, ATTN_CAT_RANGE,       "attn_ssm_desc.conv_act must be ATTN_SSM_CONV_SILU or ATTN_SSM_CONV_NONE") \
    X(ATTN_ERR_SSM_NULL_WEIGHT,       471, ATTN_CAT_NULL,        "attn_ssm_conv1d: weight is NULL") \
    X(ATTN_ERR_SSM_CONV_VARLEN,       472, ATTN_CAT_UNSUPPORTED, "attn_ssm_conv1d: attn_ssm_desc.cu_seqlens must be NULL") \
    X(ATTN_ERR_SSM_WORKSPACE,         473, ATTN_CAT_RANGE,       "attn_ssm_desc.workspace_size is smaller than attn_ssm_workspace_size() asks for") \
    X(ATTN_ERR_SSM_NULL_RESULT,       474, ATTN_CAT_NULL,        "attn_ssm_workspace_size: bytes is NULL") \
    X(ATTN_ERR_SSM_OP,                475, ATTN_CAT_RANGE,       "attn_ssm_workspace_size: op is not an attn_ssm_op") \
    X(ATTN_ERR_SSM_NULL_PARAMS,       476, ATTN_CAT_NULL,        "attn_ssm_s4d*: params is NULL") \
    X(ATTN_ERR_SSM_S4D_NULL_DT,       477, ATTN_CAT_NULL,        "attn_s4d_params.log_dt is NULL") \
    X(ATTN_ERR_SSM_S4D_NULL_A,        478, ATTN_CAT_NULL,        "attn_s4d_params.log_a_real or .a_imag is NULL") \
    X(ATTN_ERR_SSM_S4D_NULL_C,        479, ATTN_CAT_NULL,        "attn_s4d_params.c_re or .c_im is NULL") \
    X(ATTN_ERR_SSM_S4D_B_PAIR,        480, ATTN_CAT_NULL,        "attn_s4d_params.b_re and .b_im must be given together (or both NULL)") \
    X(ATTN_ERR_SSM_S4D_DISC,          481, ATTN_CAT_RANGE,       "attn_ssm_desc.s4d_disc must be ATTN_SSM_ZOH or ATTN_SSM_BILINEAR") \
    X(ATTN_ERR_SSM_S4D_VARLEN,        482, ATTN_CAT_UNSUPPORTED, "attn_ssm_s4d*: attn_ssm_desc.cu_seqlens must be NULL") \
    X(ATTN_ERR_SSM_NULL_K,            483, ATTN_CAT_NULL,        "attn_ssm_s4d_kernel: K is NULL") \
    X(ATTN_ERR_SSM_NULL_DY,           484, ATTN_CAT_NULL,        "attn_ssm_*_backward: dy.data (conv1d: dout.data) is NULL") \
    X(ATTN_ERR_SSM_NULL_GRADS,        485, ATTN_CAT_NULL,        "attn_ssm_selective_scan_backward / attn_ssm_s4d_backward: grads is NULL") \
    X(ATTN_ERR_SSM_BWD_VARLEN,        486, ATTN_CAT_UNSUPPORTED, "attn_ssm_selective_scan_backward: attn_ssm_desc.cu_seqlens must be NULL") \
    X(ATTN_ERR_SSM_A_COMPLEX,         487, ATTN_CAT_RANGE,       "attn_ssm_desc.a_complex must be 0 (real A) or 1 (complex A, B, C)") \
    X(ATTN_ERR_SSM_DY_BROADCAST,      489, ATTN_CAT_SHAPE,       "attn_ssm_*_backward: dy (conv1d: dout) must not have a zero stride on an axis of extent > 1") \
    X(ATTN_ERR_SSM_STATE_ALIAS,       490, ATTN_CAT_UNSUPPORTED, "attn_ssm: state_out must be state_in itself (updated in place) or not overlap it") \
    X(ATTN_ERR_SSM_OVERLAP,           491, ATTN_CAT_UNSUPPORTED, "attn_ssm: y (conv1d: out), state_out (the step's state) or attn_ssm_s4d_kernel's K overlaps an input (u, delta, A, B, C, d_skip, z, delta_bias, weight, bias, the S4D params, state_in), the other output, or y's rows overlap each other") \
    X(ATTN_ERR_SSM_BWD_OVERLAP,       492, ATTN_CAT_UNSUPPORTED, "attn_ssm_*_backward: a gradient overlaps an input (the forward's inputs, state_in, dy / dout) or another gradient") \
    /* (end of list) */

/* ATTN_STATUS_END is one past the largest value: an array indexed by status has this many
   entries (values in the gaps between blocks are unused). */
#define ATTN__STATUS_ENUM(name, value, cat, msg) name = value,
typedef enum attn_status { ATTN__STATUS_LIST(ATTN__STATUS_ENUM) ATTN_STATUS_END = 500 } attn_status;
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

/* The kernel set attn_forward runs on this CPU: "avx512", "avx2", "neon" or "scalar". */
ATTNDEF const char *attn_kernels(void);

/* Dense [batch][seq][heads][dim] view of data: every stride filled (a stride whose product
   does not fit ptrdiff_t saturates, and validation then returns ATTN_ERR_OVERFLOW). */
ATTNDEF attn_tensor attn_tensor_dense(void *data, attn_dtype dtype, int batch, int seq, int heads, int dim);
/* Dense [batch][heads][seq][dim] view of data (PyTorch's usual layout), as an attn_tensor. */
ATTNDEF attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int batch, int heads, int seq, int dim);
/* Dense [batch][heads][rows][seq_k] bias (attn_desc.bias); rows 1 for a key-padding row. */
ATTNDEF attn_bias attn_bias_dense(const float *data, int batch, int heads, int rows, int seq_k);

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

/* Exact attention backward (FlashAttention-2: probabilities recomputed block by block from
   q, k and lse, never stored; memory O(blocks + dq)). Gradients of the loss with respect to
   q, k, v (and, if desc->dbias, to the bias) given dout = dLoss/dout.
     q, k, v, desc   exactly what the forward got (same masks, scale, softcap, ALiBi, bias,
                     dropout_p and dropout_seed)
     out   [B, Sq, Hq, Dv]   the forward's output (any dtype)
     dout  [B, Sq, Hq, Dv]   gradient of out (any dtype; may broadcast with zero strides)
     lse   [B, Hq, Sq] fp32 dense: the forward's logsumexp
     dq    [B, Sq, Hq, D]    dk [B, Sk, Hkv, D]    dv [B, Sk, Hkv, Dv]   (any dtype each)
   dq, dk, dv (and dbias) are OVERWRITTEN, never accumulated into: add them to your running
   gradients yourself. With GQA/MQA dk and dv hold the sum over each KV head's query heads.
   Padding rows/keys and keys no query sees get zero gradients. Results are bitwise identical
   for any thread count (no atomics: key blocks own dk/dv rows, fixed-order reductions for dq
   and dbias). On any error nothing is written. Outputs must not overlap the inputs or each
   other. */
ATTNDEF attn_status attn_backward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                  attn_tensor out, attn_tensor dout, const float *lse,
                                  attn_tensor dq, attn_tensor dk, attn_tensor dv);

/* Bytes of scratch attn_backward needs for these arguments (the same checks on desc, q, k, v
   run first); pass memory of that size in desc->workspace to make attn_backward allocation-free. */
ATTNDEF attn_status attn_backward_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k,
                                                 attn_tensor v, size_t *bytes);

/* ---- GEMM ------------------------------------------------------------------------------ */

/* A GEMM you can plug in (the layers' hook) to route their projections to your BLAS. It must
   compute, row-major, C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, op(X) = X^T when
   trans_x != 0 (A is then stored [k,m] with leading dimension lda, B stored [n,k]); beta == 0
   means C is not read. With CBLAS:
     cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                 m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                                */
typedef void (*attn_sgemm_fn)(void *user, int trans_a, int trans_b, int m, int n, int k, float alpha,
                              const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
                              float beta, float *c, ptrdiff_t ldc);

/* Built-in fp32 GEMM (blocked, packed, AVX-512 / AVX2+FMA / scalar picked at run time,
   multi-threaded), row-major:
     C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C      op(X) = X^T when trans_x != 0
     a    stored [m,k] (lda >= max(1,k)), or [k,m] when trans_a (lda >= max(1,m))
     b    stored [k,n] (ldb >= max(1,n)), or [n,k] when trans_b (ldb >= max(1,k))
     c    [m,n], ldc >= max(1,n); must not overlap a or b
   m, n, k >= 0; a pointer may be NULL only when its matrix has no elements. beta == 0 means C is
   not read (NaN/inf in C are overwritten); k == 0 or alpha == 0 gives C = beta*C without
   reading a or b. alpha and beta must be finite. n_threads: 0 = all cores. The result is
   bitwise the same for every n_threads. On any error nothing is written. */
ATTNDEF attn_status attn_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
                               const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
                               float beta, float *c, ptrdiff_t ldc, int n_threads);

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
    const float *wa, *ba;     /* Super: W^A [context, context], b^A [context]; row t mixes keys s */
    const float *wd;          /* Direct kinds: W_D [context, context]; row = query i, column = key j */
} attn_layer_weights;

/* Which layer attn_layer_forward computes. Per batch, with queries from Xq [lq, d_model] and
   keys/values from Xkv [lk, d_model] (Xkv = Xq for self-attention), d_k = d_model / heads,
   head i = columns i*d_k .. (i+1)*d_k-1, and SDPA_i = softmax attention of head i with every
   mask of attn_layer_desc.attn (scale 1/sqrt(d_k) unless attn.scale is set):
     STANDARD      Q = Xq wq + bq, K = Xkv wk + bk, V = Xkv wv + bv (GQA: kv_heads heads)
                   O = concat_i SDPA_i(Q_i, K_i, V_i) wo + bo
     OPTIMIZED     as STANDARD without wv, bv: V_i = Xkv_i (head i's slice of the input)
     EFFICIENT     without wk, bk, wv, bv: K_i = V_i = Xkv_i; S_i = softmax(Q_i Xkv_i^T / sqrt(d_k))
     SUPER         EFFICIENT with V'_i = A Xkv_i + b^A (b^A[t] added to every feature of token t),
                   A = the leading lk x lk block of wa; causal: A lower triangular (A[t][s] used only
                   for s <= t); padding (attn.seqlens_k): only valid tokens are mixed, rows past
                   the valid length are 0 (never visible); packed (cu_seqlens): each segment uses
                   the leading block with its own positions. lk > context is an error, unless
                   sliding_alignment = 1: token t >= context then mixes the context tokens that
                   end at t with W^A's last row, V'_t = sum_u wa[(c-1)*c + u] Xkv_{t-c+1+u} +
                   b^A[c-1] (c = context): the trained alignment of the last position slides
                   along the sequence (causal by construction); tokens t < c are unchanged.
     DIRECT        V = Xkv wv + bv, one score matrix shared by every feature (heads unused):
                   O = softmax(logits + masks) V wo + bo, logit (i, j) = wd[(i + a)*context + j],
                   a = max(lk - lq, 0) (tensor lengths; padding does not shift rows): query
                   rows are bottom-right aligned like the causal mask,
                   so a short query block against a longer key sequence (decoding) uses the rows
                   of its positions
     DIRECT_INPUT  logit (i, j) = wd[(i + a)*context + j] * s * (Xq_i . Xkv_j), s = attn.scale or
                   1/sqrt(d_model); then as DIRECT. lq, lk <= context for both Direct kinds;
                   one head: attn.alibi_slopes has 1 entry.
   Fields read:  STANDARD wq bq wk bk wv bv wo bo;  OPTIMIZED wq bq wk bk wo bo;  EFFICIENT
   wq bq wo bo;  SUPER wq bq wo bo wa ba;  DIRECT, DIRECT_INPUT wv bv wo bo wd.
   Parameter counts (biases included, as the paper's tables): STANDARD 4 d^2 + 4 d (GQA: K/V
   columns kv_heads*d_k), OPTIMIZED 3 d^2 + 3 d, EFFICIENT 2 d^2 + 2 d, SUPER 2 d^2 + 2 d + c^2 + c,
   Direct kinds 2 d^2 + 2 d + c^2 (d = d_model, c = context). */
typedef enum attn_layer_kind {
    ATTN_LAYER_STANDARD = 0, ATTN_LAYER_OPTIMIZED, ATTN_LAYER_EFFICIENT, ATTN_LAYER_SUPER,
    ATTN_LAYER_DIRECT, ATTN_LAYER_DIRECT_INPUT
} attn_layer_kind;

/* Configures a layer call. Zero-initialise, then set what you need.
   field            default (0)                 meaning
   kind             ATTN_LAYER_STANDARD         which layer (attn_layer_kind)
   d_model          - (required)                hidden size
   heads            1                           attention heads; must divide d_model
   kv_heads         heads                       K/V heads (GQA/MQA, STANDARD only)
   context          - (Super, Direct: required) trained length: W^A / W_D are context x context
   sliding_alignment off (lk > context: error)  Super only: 1 = slide W^A's last row along longer
                                                sequences (see ATTN_LAYER_SUPER)
   attn             plain softmax               masks for the SDPA core (causal, windows, sinks,
                                                global, seqlens/cu_seqlens, alibi, softcap, bias):
                                                see attn_desc; attn.kind must be ATTN_SOFTMAX
                                                (others: ATTN_ERR_LAYER_ATTN_KIND from the forward,
                                                backward and workspace query); its n_threads and workspace are
                                                ignored (the layer's are used); its parallel hook
                                                runs the attention and the layer's own loops
   n_threads        all cores                   threads for GEMMs and attention
   sgemm, sgemm_user built-in attn sgemm        route every projection GEMM (and W^A, Xq Xkv^T) to
                                                your BLAS (the attention core never calls it)
   workspace        allocate per call           scratch of attn_layer_workspace_size() bytes: the
                                                layer then allocates nothing itself (a GEMM may:
                                                the built-in one packs into its own buffers) */
typedef struct attn_layer_desc {
    attn_layer_kind kind;
    int d_model, heads, kv_heads, context;
    int sliding_alignment;
    attn_desc attn;
    int n_threads;
    attn_sgemm_fn sgemm;
    void *sgemm_user;
    void *workspace;
    size_t workspace_size;
} attn_layer_desc;

/* Gradients of attn_layer_backward, one per field of attn_layer_weights with the same shape;
   overwritten. A NULL field is not computed. Fields the kind does not read are not written. */
typedef struct attn_layer_grads {
    float *wq, *bq, *wk, *bk, *wv, *bv, *wo, *bo;
    float *wa, *ba;           /* [context, context], [context]: entries outside the block used get 0 */
    float *wd;                /* [context, context] */
} attn_layer_grads;

/* Layer forward.
     x_q   [batch, lq, d_model] fp32 dense     queries' hidden states
     x_kv  [batch, lk, d_model] fp32 dense, or NULL for self-attention (then lk must equal lq)
     out   [batch, lq, d_model] fp32 dense; written on success only; must not overlap the inputs
   Padding query rows (attn.seqlens_q) and rows that see no key get out = bo. */
ATTNDEF attn_status attn_layer_forward(const attn_layer_desc *desc, const attn_layer_weights *weights,
                                       int batch, int lq, int lk, const float *x_q, const float *x_kv,
                                       float *out);

/* Layer backward: given dout = dL/dout [batch, lq, d_model], writes dx_q [batch, lq, d_model]
   (self-attention: the whole input gradient; dx_kv must be NULL), dx_kv [batch, lk, d_model]
   (cross-attention) and the weight gradients; any of them may be NULL (not computed). Recomputes
   the forward, then runs attn_backward on the attention core (no lq x lk matrix beside the
   projections; the Direct kinds keep [batch, lq, lk] logit gradients). Outputs must not overlap
   the inputs. */
ATTNDEF attn_status attn_layer_backward(const attn_layer_desc *desc, const attn_layer_weights *weights,
                                        int batch, int lq, int lk, const float *x_q, const float *x_kv,
                                        const float *dout, float *dx_q, float *dx_kv,
                                        const attn_layer_grads *grads);

/* Bytes of scratch the forward (backward != 0: the backward) needs; pass it in desc->workspace
   to make the calls allocation-free. Validates desc and the sizes (not the weights). */
ATTNDEF attn_status attn_layer_workspace_size(const attn_layer_desc *desc, int backward, int batch, int lq,
                                              int lk, size_t *bytes);

/* Number of parameters of the layer (biases included; see attn_layer_kind). */
ATTNDEF attn_status attn_layer_param_count(const attn_layer_desc *desc, size_t *count);

/* Forward FLOPs (2 per multiply-add) of the projections, alignment and attention matmuls,
   counted dense (masks not deducted; softmax and bias adds not counted). */
ATTNDEF attn_status attn_layer_flops(const attn_layer_desc *desc, int batch, int lq, int lk, double *flops);

/* ---- Generation: KV caches, RoPE, StreamingLLM, EL-attention --------------------------- */

/* RoPE conventions (attn_desc.rope). Pair i (i < rope_dim/2) of a head vector is rotated by
   angle pos/scaling * base^(-2i/rope_dim): (a, b) -> (a cos - b sin, b cos + a sin).
     ATTN_ROPE_INTERLEAVED   pairs (x[2i], x[2i+1])           GPT-J, Meta's original Llama
     ATTN_ROPE_HALF          pairs (x[i], x[i + rope_dim/2])  GPT-NeoX, Hugging Face Llama */
enum { ATTN_ROPE_OFF = 0, ATTN_ROPE_INTERLEAVED = 1, ATTN_ROPE_HALF = 2 };

/* Rotates x [B, S, H, D] in place by the RoPE configuration in desc (rope, rope_dim,
   rope_base, rope_scaling; the rope_pos_* fields are not read). positions [B][S] or NULL
   (position = s). rope == ATTN_ROPE_OFF leaves x as it is. attn_forward/attn_decode with the
   same desc fields and positions compute exactly this rotation in the kernel. */
ATTNDEF attn_status attn_rope_apply(const attn_desc *desc, attn_tensor x, const int *positions);

/* A K/V cache for decoding: contiguous (page_size 0) or paged (vLLM's block table).
     contiguous  k [batch, capacity, kv_heads, D]   v [batch, capacity, kv_heads, Dv]
     paged       k [n_pages, page_size, kv_heads, D] v [n_pages, page_size, kv_heads, Dv]: the
                 page pool; sequence b's token t lives on page block_table[b*max_pages +
                 t/page_size], row t % page_size. capacity = max_pages * page_size.
   lens[b] (caller memory) is how many tokens sequence b holds; the helpers update it. Any
   strides (elements) as attn_tensor allows, f32/f16/bf16 (k and v alike). Only the pages
   covering [0, lens[b]) (and, when appending, the new tokens) are read or validated. */
typedef struct attn_kv_cache {
    attn_tensor k, v;
    int *lens;                   /* [batch] */
    int batch;                   /* sequences */
    int page_size;               /* 0: contiguous; else tokens per page (= k.seq) */
    const int *block_table;      /* paged: [batch][max_pages] */
    int max_pages;               /* paged: block-table row length */
} attn_kv_cache;

/* Appends n_new[b] (NULL: k_new.seq) tokens of k_new/v_new [batch, S, kv_heads, D|Dv] (any
   dtype, converted to the cache's) to each sequence b at lens[b], then lens[b] += n_new[b].
   All or nothing: on error neither the cache nor lens is written. */
ATTNDEF attn_status attn_kv_append(attn_kv_cache *cache, attn_tensor k_new, attn_tensor v_new, const int *n_new);

/* *len = the tokens sequence seq holds (the cache is validated as by attn_kv_append). */
ATTNDEF attn_status attn_kv_len(const attn_kv_cache *cache, int seq, int *len);

/* Removes tokens [start, start + count) of sequence seq; later tokens move down (their slot,
   and so their default RoPE position, drops by count). */
ATTNDEF attn_status attn_kv_evict(attn_kv_cache *cache, int seq, int start, int count);

/* StreamingLLM's cache policy (StartRecentKVCache): appends like attn_kv_append, but keeps only
   the first `sink` tokens ever appended and the most recent `recent` ones, evicting the middle;
   a sequence never holds more than sink + recent tokens. Keys are stored un-rotated: decode
   with attn_desc.rope set and rope_pos_q/_k NULL, so every key is rotated by its cache slot
   and the query by its own slot (distances in cache slots, as the reference does). */
ATTNDEF attn_status attn_kv_append_streaming(attn_kv_cache *cache, int sink, int recent,
                                             attn_tensor k_new, attn_tensor v_new, const int *n_new);

/* Decoding attention over a cache: q [batch, Sq, Hq, D] holds each sequence's newest Sq
   tokens (already appended), so query i sits at position lens[b] - Sq + i (seqlens_q[b]
   instead of Sq when given). Every attn_forward option applies (GQA/MQA, causal, windows,
   sinks, softcap, ALiBi, bias [B|1, H|1, Sq, capacity], RoPE, threads, workspace) except
   seqlens_k and cu_seqlens (the cache holds the lengths). Splits long caches across threads
   (flash-decoding); results are bitwise the same for every thread count. With Sq = 1 on
   AVX-512 (AVX2: Hq/Hkv <= 8), no bias, dilation, dropout or RoPE, a fused kernel reads the
   cache once in address order for every head; other steps stage each chunk of keys first.
     out [batch, Sq, Hq, Dv]    lse [batch, Hq, Sq] or NULL */
ATTNDEF attn_status attn_decode(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                attn_tensor out, float *lse);
/* Workspace bytes attn_decode needs (for desc->workspace). */
ATTNDEF attn_status attn_decode_workspace_size(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                               size_t *bytes);

/* EL-attention (Yan et al. 2021): the output of a standard MHA layer (attn_layer_weights,
   biases optional) for queries x attending to hidden states h, without building per-head K/V
   and without a K/V cache. Per head i: q_i = x W_i^Q + b_i^Q, expanded query
   q_i (W_i^K)^T, logits (q_i (W_i^K)^T) . h_j + q_i . b_i^K times scale, P_i h, and
   out = sum_i ((P_i h) W_i^V + b_i^V) W_i^O + b^O. All beams and heads of a batch entry
   share h, which is streamed once per call for all of them.
   field       default     meaning
   d_model     required    model width (x, h, out rows)
   heads       required    query heads, d_k = d_model / heads
   kv_heads    heads       K/V heads (GQA/MQA: wk, wv have kv_heads*d_k columns)
   batch       required    batch entries (each with its own h)
   beams       required    queries per batch entry (beams, or several tokens)
   src_len     required    rows of h per batch entry
   src_lens    src_len     [batch] valid rows of h (padding after), each >= 1
   scale       1/sqrt(d_k) logit scale
   n_threads, parallel, parallel_user: as attn_desc
     x [batch, beams, d_model]   h [batch, src_len, d_model]   out [batch, beams, d_model], fp32 */
typedef struct attn_el_desc {
    int d_model, heads, kv_heads;
    int batch, beams, src_len;
    const int *src_lens;
    float scale;
    int n_threads;
    attn_parallel_fn parallel;
    void *parallel_user;
} attn_el_desc;
ATTNDEF attn_status attn_el_attention(const attn_el_desc *desc, const attn_layer_weights *w,
                                      const float *x, const float *h, float *out);

/* ---- Mechanisms: names and recurrent state ---------------------------------------------- */

/* "exact scaled dot-product attention with masks" for ATTN_SOFTMAX, and so on; never NULL
   ("unknown attn_kind" for a value that is not a kind). */
ATTNDEF const char *attn_kind_name(attn_kind kind);

/* The state of a mechanism that decodes like an RNN (linear attention and its kernel variants):
   everything the past tokens left behind, in fp32 caller memory, so a long sequence can be
   processed in pieces and generation costs O(1) per token. The kind defines the layout; the
   caller only sizes, initialises and passes it:
       size_t n; attn_state_size(&desc, q, k, v, &n);            // floats needed
       attn_state st; attn_state_init(&desc, q, k, v, buf, n, &st);   // empty state, pos 0
       attn_step(&desc, q_t, k_t, v_t, &st, out_t);              // any number of tokens per call
   attn_step consumes q/k/v's seq tokens in order (the causal form, continuing from the state),
   writes their outputs and advances the state; several tokens per call run the kind's chunked
   algorithm. All or nothing: a call that fails leaves the state and out untouched. The shapes
   (batch, heads, dims) and the kind must match those the state was initialised for. out obeys
   attn_forward's memory rule (attn_tensor), with the state's data[0, size) counted as an output:
   out overlapping q, k, v, the state or its own rows is ATTN_ERR_OUT_OVERLAP. */
typedef struct attn_state {
    float *data;                 /* fp32 state, attn_state_size() floats of caller memory */
    size_t size;                 /* floats at data */
    attn_kind kind;              /* the kind it was initialised for */
    int batch, heads, dim_k, dim_v;   /* q.batch, q.heads, q.dim (k.dim), v.dim at init */
    int heads_kv;                /* k.heads at init */
    long long pos;               /* tokens consumed so far: the position of the next one (>= 0,
                                    else ATTN_ERR_STATE_POS) */
    unsigned long long params;   /* the kind's parameters that shape the state, at init (Performer's
                                    features and kernel, cosFormer's max_len): attn_step refuses others */
} attn_state;

/* Floats of state the kind needs for q/k/v of these shapes (seq is not read). */
ATTNDEF attn_status attn_state_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                    size_t *floats);
/* Makes state describe an empty history (pos 0) in data[0, floats). */
ATTNDEF attn_status attn_state_init(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                    float *data, size_t floats, attn_state *state);
/* Consumes seq tokens: out [batch, seq, heads, v.dim]. */
ATTNDEF attn_status attn_step(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                              attn_state *state, attn_tensor out);

/* ---- Sparse attention ------------------------------------------------------------------- */

/* The random block table ATTN_BIGBIRD uses when attn_desc.bigbird.random_table is NULL, for
   heads query heads and sequence length seq (block, random_blocks, no_random, seed and
   multiplicity from desc->bigbird; the other desc fields are not read): table [heads][nb-2][r] ints, nb = seq /
   block (nothing is written when nb < 3 or r = 0). Row (h, i), for query block i in 1..nb-2:
   the candidates are blocks 1..nb-2 without the window {i-1, i, i+1}, in ascending order,
   a[0..M); a partial Fisher-Yates shuffle picks min(r, M) of them: for t = 0..min(r, M)-1,
       key = (h * (nb-2) + i-1) * r + t
       z   = mix(seed + 0x9E3779B97F4A7C15 * (1 + key))             (mod 2^64; mix as DROPOUT)
       j   = t + ((z >> 32) * (M - t) >> 32)                         (64-bit product)
       swap(a[t], a[j]); table[h][i-1][t] = a[t]
   and slots t >= M get 0 (block 0, global anyway), so r >= M covers every candidate. A pure function of (seed, heads, seq, block, r): the same on every platform.
   With multiplicity ATTN_BIGBIRD_HF_EVAL every entry is 0 (the table that mode uses). */
ATTNDEF attn_status attn_bigbird_random_table(const attn_desc *desc, int heads, int seq, int *table);

/* The rotations ATTN_LSH uses when attn_desc.lsh.rotations is NULL, for heads query heads,
   sequence length seq and head dim (bucket_size, n_buckets, bucket_factors, n_hashes, seed and
   rotations_layout from desc->lsh): R fp32 in rotations_layout's order, so it can be passed
   back as attn_desc.lsh.rotations. Element R[h][r][e][j] (idx, its index in the
   [heads][n_hashes][dim][cols] order, ATTN_LSH_ROT_ATTN, whatever the layout written; cols =
   n_buckets/2, or sum f_t/2 with bucket_factors):
       z  = mix(seed + 0x9E3779B97F4A7C15 * (1 + idx))              (mod 2^64; mix as DROPOUT)
       u1 = ((z >> 32) + 0.5) / 2^32,  u2 = ((z & 0xFFFFFFFF) + 0.5) / 2^32
       R  = (float)(sqrt(-2 log u1) * cos(2 pi u2))                  (in double; Box-Muller)
   a pure function of (seed, idx): the same on every platform and thread count. */
ATTNDEF attn_status attn_lsh_rotations(const attn_desc *desc, int heads, int seq, int dim, float *rotations);

/* The Routing Transformer's centroid update (k-means by EMA): centroids [heads][n_clusters][dim]
   fp32 (n_clusters from desc->routing; its centroids pointer is not read), updated in place,
   from x [B, n, heads, dim] (the shared QK rows, any dtype; its own strides):
   per head, every token goes to the cluster c maximising x_i . mu_c (first maximum; x_i, mu_c
   normalised as for ATTN_ROUTING); a cluster with tokens moves to
       mu_c = decay * mu_c + (1 - decay) * m / |m|,   m = sum of its tokens' x_i / count
   (m / |m| = 0 when m = 0); a cluster without tokens keeps its centroid. decay 0 means 0.999.
   Padding as ATTN_ROUTING's (pass the forward's desc): tokens past seqlens_k[b] (or seqlens_q[b])
   or past the last cu_seqlens segment are skipped. Sums run in double in token order on the
   calling thread; a small scratch is allocated. */
ATTNDEF attn_status attn_routing_update(const attn_desc *desc, attn_tensor x, float decay, float *centroids);

/* ---- Linear and kernel attention --------------------------------------------------------- */

/* The projection ATTN_PERFORMER draws when attn_desc.performer.projection is NULL (features,
   fixed_norms and seed from params; kernel and eps are validated, not read): W [m][dim] fp32,
   m = features (0: 256). Call it with a new seed to redraw the features (the paper redraws them
   during training) and pass W as attn_desc.performer.projection. The maths, all in double:
     gauss(stream, idx): for attempt a = 0, 1, ..., 63, key = (idx * 64 + a) * 2 + stream,
         z1 = mix(seed + 0x9E3779B97F4A7C15 * (1 + 2 key)), z2 = mix(seed + 0x9E3779B97F4A7C15 * (2 + 2 key))
         (mod 2^64; mix as DROPOUT), v = ((z >> 12) + 0.5) 2^-51 - 1 for each, s = v1^2 + v2^2;
         the first attempt with s < 1 gives v1 sqrt(-2 ln(s) / s) (Marsaglia's polar method;
         64 rejections in a row, probability 1e-43, give 0)
     block b (b = 0 .. ceil(m/dim) - 1): G[i][t] = gauss(0, (b dim + i) dim + t), i, t < dim;
         G = Q R (QR with R's diagonal > 0, i.e. Gram-Schmidt's Q; computed by Householder);
         rows b dim + i < m of W are Q's columns i: W[b dim + i][t] = norm[b dim + i] Q[t][i]
     norm[r] = sqrt(sum_t gauss(1, r dim + t)^2), t < dim (chi with dim degrees of freedom), or
         sqrt(dim) with fixed_norms = 1
   so rows within a block are orthogonal (Gaussian orthogonal random features, the last block
   partial). ln is the library's own (frexp and a series), so W uses no libm function but
   sqrt and the same bits come out on every platform, ISA and thread count (the double
   arithmetic is kept uncontracted: no FMA fusion changes a bit). Allocates 2 dim^2 + dim
   doubles. Cost: ceil(m/dim) QRs of dim^3 flops and (m + ceil(m/dim) dim) dim Gaussians (a few
   ms at m 256, dim 64), which a forward call with projection NULL pays each time. */
ATTNDEF attn_status attn_performer_draw(const attn_performer_params *params, int dim, float *W);

/* ---- Low-rank attention ----------------------------------------------------------------- */

/* Nystromformer's iterative Moore-Penrose pseudo-inverse (the one ATTN_NYSTROM runs): a and z
   are [m][m] fp32 row-major, a meant to be a softmax matrix (nonnegative, rows summing to 1).
   Z0 = a^T / (max over columns j of sum_i a[i][j]), then `iterations` (0: 6, the paper's and
   attn_desc.nystrom's default; negative: ATTN_ERR_NYSTROM_ITERATIONS) steps of Z <- 1/4 Z (13I - aZ (15I - aZ (7I - aZ))), in fp32 on the library SGEMM. z must not
   overlap a (ATTN_ERR_NYSTROM_PINV_ALIAS). The iteration converges when a is well enough
   conditioned; when it does not give a finite result (a singular or ill-conditioned a, e.g.
   columns whose sums cancel) the call returns ATTN_ERR_NYSTROM_PINV_DIVERGED and leaves z
   untouched. Allocates 4 m^2 floats of scratch. */
ATTNDEF attn_status attn_nystrom_pinv(int m, int iterations, const float *a, float *z);

/* ---- AMX -------------------------------------------------------------------------------- */

/* The kernels attn_forward runs for bf16 q/k/v outside decoding (attn_desc.bf16_kernels = ATTN_BF16_AUTO):
   "amx" (tdpbf16ps tiles), "avx512bf16" (vdpbf16ps) or "none" (the fp32 kernels of
   attn_kernels() on converted inputs). The first two round P to bf16 for the P.V product. */
ATTNDEF const char *attn_bf16_kernels(void);

/* ---- state-space scans (Mamba selective scan, causal conv1d, S4D) ---------------------- */

/* A strided view of a [batch, channels, len] tensor: the scans' layout (Mamba's u, delta, z
   and y are [B, D, L]; per-token B and C are [B, G*N, L]; a one-token step sees len 1).
   The len axis is contiguous (stride 1). Strides in elements, always explicit
   (attn_ssm_tensor_dense fills them for a dense [batch][channels][len]; no layout is guessed
   from zeros). An input may use stride 0 to broadcast an axis; an output may not (extent > 1).
   Storage f32, f16 or bf16; maths fp32. A NULL data marks an optional tensor as absent.
   Memory (attn_tensor's rule, checked before any write): an output's rows (channels) must not
   overlap, and no output (y / out, state_out, a step's state, attn_ssm_s4d_kernel's K, the
   backward's gradients) may meet an input (tensors, A, weight, bias, d_skip, delta_bias, the
   S4D params, state_in) or another output: ATTN_ERR_SSM_OVERLAP (ATTN_ERR_SSM_BWD_OVERLAP for
   gradients). state_out may be state_in itself (updated in place); a partial overlap is
   ATTN_ERR_SSM_STATE_ALIAS. */
typedef struct attn_ssm_tensor {
    void *data;
    attn_dtype dtype;
    ptrdiff_t stride_batch, stride_chan;
} attn_ssm_tensor;
/* Dense [batch][channels][len] view of data (stride_chan = len, stride_batch = channels len). */
ATTNDEF attn_ssm_tensor attn_ssm_tensor_dense(void *data, attn_dtype dtype, int channels, int len);

/* Where the selective scan's B and C come from (attn_ssm_desc.bc_const). */
enum { ATTN_SSM_BC_TOKEN = 0,    /* input-dependent: [batch, n_groups * d_state, len] */
       ATTN_SSM_BC_CONST = 1 };  /* constant per channel: [dim, d_state] (stride_chan = row
                                    stride, e.g. attn_ssm_tensor_dense(p, dt, dim, d_state);
                                    stride_batch ignored) */
/* Activation after the causal conv1d (attn_ssm_desc.conv_act). */
enum { ATTN_SSM_CONV_SILU = 0, ATTN_SSM_CONV_NONE = 1 };
/* S4D discretisation (attn_ssm_desc.s4d_disc). */
enum { ATTN_SSM_ZOH = 0, ATTN_SSM_BILINEAR = 1 };

/* Everything that configures a scan call. Zero-initialise, then set what you need.
   field            default (0)           meaning
   batch            - (required)          sequences (1 with cu_seqlens)
   dim              - (required)          channels D
   len              - (required)          tokens L (the step forms ignore it: one token)
   d_state          - (required)          state size N per channel (Mamba: 16 in the paper;
                                          S4D: complex modes, N/2 of the paper's N)
   n_groups         1                     G: per-token B/C groups; group g serves channels
                                          [g D/G, (g+1) D/G); must divide dim
   bc_const         ATTN_SSM_BC_TOKEN     B and C layout (ATTN_SSM_BC_TOKEN / _CONST)
   delta_softplus   off                   1: delta = softplus(delta + delta_bias), threshold 20
   cu_seqlens       not packed            [varlen_batch + 1] starts of packed sequences (batch 1,
                                          first 0, non-decreasing, last = len): the state resets
                                          at every start; states are then per sequence
   varlen_batch     -                     number of packed sequences (with cu_seqlens)
   conv_kernel      4                     causal conv1d width K
   conv_act         ATTN_SSM_CONV_SILU    activation after the conv (ATTN_SSM_CONV_NONE: none)
   s4d_disc         ATTN_SSM_ZOH          S4D discretisation (ATTN_SSM_ZOH / ATTN_SSM_BILINEAR)
   a_complex        real                  selective scan / step / backward: 1 = complex A, B
                                          and C (see attn_ssm_selective_scan)
   n_threads        all cores             threads; results are bitwise the same for any count
   parallel, parallel_user                your parallel-for (attn_parallel_fn), as attn_desc
   workspace        allocate per call     scratch of attn_ssm_workspace_size() bytes */
typedef struct attn_ssm_desc {
    int batch, dim, len, d_state;
    int n_groups;
    int bc_const;
    int delta_softplus;
    const int *cu_seqlens;
    int varlen_batch;
    int conv_kernel;
    int conv_act;
    int s4d_disc;
    int a_complex;
    int n_threads;
    attn_parallel_fn parallel;
    void *parallel_user;
    void *workspace;
    size_t workspace_size;
} attn_ssm_desc;

/* Mamba's selective scan (selective_scan_ref). S = number of state slots: batch, or
   varlen_batch with cu_seqlens (one per packed sequence). For each sequence, channel d:
     dt_l  = delta[d][l] + delta_bias[d];  dt_l = softplus(dt_l) if delta_softplus (dt_l if > 20)
     x_l   = exp(dt_l A[d]) * x_{l-1} + dt_l B_l u[d][l]     (x_{-1} = state_in or 0; N-vectors)
     y[d][l] = (C_l . x_l + d_skip[d] u[d][l]) * silu(z[d][l])         (silu(z) = z / (1 + e^-z))
   B_l, C_l: ATTN_SSM_BC_TOKEN: B[b][g N + n][l] for channel d in group g; ATTN_SSM_BC_CONST:
   B[d][n].
     u, delta, z, y  [batch, dim, len]      z.data NULL: no gate
     A               [dim, d_state] fp32    real, typically -exp(A_log)
     B, C            see bc_const
     d_skip          [dim] fp32 or NULL (0)  delta_bias [dim] fp32 or NULL (0)
     state_in        [S, dim, d_state] fp32 or NULL (zeros): the state before token 0 of each
                     sequence, so a long sequence runs in pieces
     state_out       [S, dim, d_state] fp32 or NULL: the state after each sequence's last token
                     (may be state_in: updated in place)
   Complex A (desc->a_complex = 1; selective_scan_ref with A.is_complex()): N complex modes per
   channel, numbers stored as (re, im) float pairs, the state complex:
     x_l = exp(dt_l A[d]) * x_{l-1} + dt_l B_l u[d][l]   (complex A, B; x, B, C in C^N)
     y[d][l] = (2 Re(sum_n C_l[n] x_l[n]) + d_skip[d] u[d][l]) * silu(z[d][l])   (no conjugate)
     A [dim, d_state, 2]; per-token B, C [batch, G N, 2 len] (token l's re, im at 2l, 2l + 1,
     as the reference's "(L two)"); constant B, C [dim, 2 d_state]; state_in / state_out
     [S, dim, d_state, 2]. Runs one channel at a time (fp32 expf / cosf / sinf), not SIMD.
   Parallel over (sequence, 64-channel block); the real case runs the vector layer's fused
   kernel (ssm_scan: 16 channels in SIMD lanes, the state in registers, exp(dt A) as 2^t with
   A prescaled by log2 e, about 1.5 ulp). */
ATTNDEF attn_status attn_ssm_selective_scan(const attn_ssm_desc *desc, attn_ssm_tensor u, attn_ssm_tensor delta,
                                            const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                            const float *d_skip, attn_ssm_tensor z, const float *delta_bias,
                                            const float *state_in, attn_ssm_tensor y, float *state_out);

/* One token of the selective scan (selective_state_update): desc->len is ignored (1) and
   cu_seqlens must be NULL. x, dt, z, y [batch, dim, 1]; per-token B, C [batch, G N, 1];
   state [batch, dim, d_state] fp32, read and updated in place:
     state = state * exp(dt A) + dt B x;  y = (state . C + d_skip x) * silu(z).
   With desc->a_complex: per-token B, C [batch, G N, 2], state [batch, dim, d_state, 2] and
   y = (2 Re(C . state) + d_skip x) * silu(z), as attn_ssm_selective_scan. The same kernel as
   the scan, so L steps give the scan's results bit for bit. */
ATTNDEF attn_status attn_ssm_selective_step(const attn_ssm_desc *desc, attn_ssm_tensor x, attn_ssm_tensor dt,
                                            const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                            const float *d_skip, attn_ssm_tensor z, const float *dt_bias,
                                            float *state, attn_ssm_tensor y);

/* Gradients of attn_ssm_selective_scan, overwritten; a NULL field is not returned.
     du, ddelta, dz  [batch, dim, len] dense fp32 (dz only with z)
     dA              [dim, d_state]           dD, ddelta_bias  [dim]
     dB, dC          ATTN_SSM_BC_TOKEN: [batch, G N, len] dense; ATTN_SSM_BC_CONST: [dim, d_state]
   Complex A (a_complex): dA [dim, d_state, 2], dB, dC [batch, G N, 2 len] or [dim, 2 d_state],
   each complex entry as (dLoss/d re, dLoss/d im) (torch's .grad of a complex tensor through
   view_as_real). (No gradient for state_in; d_skip NULL counts as D = 0, delta_bias NULL as 0.) */
typedef struct attn_ssm_grads {
    float *du, *ddelta, *dz;
    float *dA, *dB, *dC;
    float *dD, *ddelta_bias;
} attn_ssm_grads;

/* Backward of the selective scan: the forward's arguments (y and state_out aside), dy [batch,
   dim, len] (no zero strides) = dLoss/dy, and the gradients. The vector layer's fused kernel
   per ISA (ssm_bwd: 16 channels in SIMD lanes, exp(dt A) as the forward's 2^t): a checkpoint
   pass keeps the state every 256 tokens (O(L/256 x 16 N) floats per thread, never O(L N)), then
   the chunks last first recompute their states and run the gradients backwards. Threads over
   channel blocks; dA, dD, ddelta_bias and constant dB/dC summed per channel in double over
   sequences and chunks in a fixed order, per-token dB/dC over the 16 lanes, the block's pieces
   and the blocks in a fixed order (bitwise the same for any thread count). Complex A runs the
   same plan on the vector layer's ssm_cbwd (complex arithmetic per state, e^{dt A} from the
   2^t and a 16-lane sincos, 8-token tiles for the per-token dB / dC trees; O(L/256 x 32 N)
   floats per thread). cu_seqlens is not supported (ATTN_ERR_SSM_BWD_VARLEN). */
ATTNDEF attn_status attn_ssm_selective_scan_backward(const attn_ssm_desc *desc, attn_ssm_tensor u, attn_ssm_tensor delta,
                                                     const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                                     const float *d_skip, attn_ssm_tensor z, const float *delta_bias,
                                                     const float *state_in, attn_ssm_tensor dy, const attn_ssm_grads *grads);

/* The depthwise causal conv1d in front of Mamba's scan (K = conv_kernel):
     out[b][c][t] = act(bias[c] + sum_{k<K} w[c][k] x[b][c][t - (K-1) + k])
   where positions before 0 read state_in[b][c][K-1 + pos] (the K-1 previous inputs, oldest
   first) or 0; tap K-1 multiplies the current token (no flip). act = SiLU or none.
     x, out [batch, dim, len]   weight [dim, K] fp32   bias [dim] fp32 or NULL
     state_in, state_out [batch, dim, K-1] fp32 or NULL: the last K-1 inputs (may alias)
   cu_seqlens is not supported here (ATTN_ERR_SSM_CONV_VARLEN). */
ATTNDEF attn_status attn_ssm_conv1d(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                    const float *bias, const float *state_in, attn_ssm_tensor out,
                                    float *state_out);
/* One token of the conv1d: x, out [batch, dim, 1]; state [batch, dim, K-1] updated in place. */
ATTNDEF attn_status attn_ssm_conv1d_step(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                         const float *bias, float *state, attn_ssm_tensor out);
/* Backward of attn_ssm_conv1d: its arguments (out and state_out aside), dout [batch, dim, len]
   (no zero strides) = dLoss/dout, and the gradients, overwritten (NULL: not returned):
     dx [batch, dim, len] dense fp32   dweight [dim, K] fp32   dbias [dim] fp32 (with or
     without bias: the gradient of a zero bias)
   through the SiLU when conv_act applies it (no gradient for state_in). Per channel the chunks
   of 1024 tokens last first recompute the pre-activation (the forward's arithmetic) and run the
   vector layer's axpy / dot; dweight and dbias are summed per chunk, then in double over
   sequences and chunks in a fixed order (bitwise the same for any thread count). */
ATTNDEF attn_status attn_ssm_conv1d_backward(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                             const float *bias, const float *state_in, attn_ssm_tensor dout,
                                             float *dx, float *dweight, float *dbias);

/* S4D (diagonal state space, Gu et al. 2022), per channel h and complex mode n < d_state:
     A = -exp(log_a_real) + i a_imag,  dt = exp(log_dt[h]),  B = b_re + i b_im (NULL: 1),
     C = c_re + i c_im (all [dim, d_state] fp32, log_dt [dim]);
     ZOH:      dA = e^{dt A},                     dB = (e^{dt A} - 1) / A * B
     bilinear: dA = (1 + dt A/2) / (1 - dt A/2),  dB = dt B / (1 - dt A/2)
     kernel    K_l = 2 Re sum_n C_n dB_n dA_n^l
     y         y_l = sum_{k<=l} K_{l-k} u_k + 2 Re sum_n C_n dA_n^{l+1} x0_n + d_skip u_l
   which equals the recurrence x_l = dA x_{l-1} + dB u_l (x_{-1} = x0), y_l = 2 Re(C x_l) + D u_l.
   (d_state is the number of complex modes: the paper's N/2.) */
typedef struct attn_s4d_params {
    const float *log_dt;             /* [dim] */
    const float *log_a_real, *a_imag;/* [dim, d_state] */
    const float *b_re, *b_im;        /* [dim, d_state], both or neither (NULL: B = 1) */
    const float *c_re, *c_im;        /* [dim, d_state] */
    const float *d_skip;             /* [dim] or NULL (0) */
} attn_s4d_params;

/* The S4D convolution kernel K [dim, len] (fp32, row h = channel h), from the Vandermonde
   product evaluated in double. */
ATTNDEF attn_status attn_ssm_s4d_kernel(const attn_ssm_desc *desc, const attn_s4d_params *params, float *K);

/* S4D as a causal convolution: u, y [batch, dim, len]; state_in / state_out [batch, dim,
   d_state, 2] fp32 (complex x as re, im) or NULL: the state before the first / after the last
   token, so sequences run in pieces (state_out may be state_in). Chunks of 64 tokens: a direct
   convolution with K inside a chunk, the carried complex state across chunks, so the cost is
   O(L (64 + d_state)) per channel at any length; one chunk (L <= 64) is the direct form. */
ATTNDEF attn_status attn_ssm_s4d(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                 const float *state_in, attn_ssm_tensor y, float *state_out);

/* One S4D token: u, y [batch, dim, 1]; state [batch, dim, d_state, 2] updated in place:
   x = dA x + dB u, y = 2 Re(C x) + d_skip u. */
ATTNDEF attn_status attn_ssm_s4d_step(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                      float *state, attn_ssm_tensor y);

/* Gradients of attn_ssm_s4d (the same function as attn_ssm_s4d_kernel's K convolved with u,
   plus the state_in term and D u), overwritten; a NULL field is not returned.
     du [batch, dim, len] dense fp32;  dlog_dt, dd_skip [dim] (dd_skip: the gradient of a zero
     D when params->d_skip is NULL);  dlog_a_real, da_imag, dc_re, dc_im [dim, d_state];
     db_re, db_im [dim, d_state] only with params->b_re (B = 1 has no gradient: not written)
   (no gradient for state_in). */
typedef struct attn_s4d_grads {
    float *du;
    float *dlog_dt, *dlog_a_real, *da_imag;
    float *db_re, *db_im, *dc_re, *dc_im;
    float *dd_skip;
} attn_s4d_grads;

/* Backward of attn_ssm_s4d: its arguments (y and state_out aside), dy [batch, dim, len] (no
   zero strides) = dLoss/dy, and the gradients, through the ZOH or bilinear discretisation
   (desc->s4d_disc). Computed by the recurrence's adjoint, which is the kernel convolution's
   gradient: per channel, modes in the vector layer's rows (madd, axpy, dot), a checkpoint pass
   keeps the state every 256 tokens (O(L/256 x d_state) floats per thread, never O(L
   d_state)), then the chunks last first recompute their states and run the tokens backwards;
   the chain rule through dA, dB to log_dt, A, B in double. Threads over channels; every
   parameter gradient summed per chunk, then in double over sequences and chunks in a fixed
   order (bitwise the same for any thread count). */
ATTNDEF attn_status attn_ssm_s4d_backward(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                          const float *state_in, attn_ssm_tensor dy, const attn_s4d_grads *grads);

/* Which call attn_ssm_workspace_size sizes. */
typedef enum attn_ssm_op {
    ATTN_SSM_OP_SCAN = 0, ATTN_SSM_OP_STEP, ATTN_SSM_OP_CONV, ATTN_SSM_OP_CONV_STEP,
    ATTN_SSM_OP_S4D, ATTN_SSM_OP_S4D_STEP, ATTN_SSM_OP_SCAN_BACKWARD,
    ATTN_SSM_OP_CONV_BACKWARD, ATTN_SSM_OP_S4D_BACKWARD
} attn_ssm_op;
/* Bytes of scratch the call op needs with this desc (pass it in desc->workspace). */
ATTNDEF attn_status attn_ssm_workspace_size(const attn_ssm_desc *desc, attn_ssm_op op, size_t *bytes);

/* ---- RWKV ------------------------------------------------------------------------------- */

/* RWKV time mixing as scans: they take the recurrence's inputs (receptance r, key k, value v,
   decay, bonus), not q/k/v attention, so they are plain functions (no attn_kind). Tensors are
   attn_tensor views [batch, T, heads, dim] (f32, f16 or bf16 storage each, fp32 maths; inputs
   may broadcast with stride 0, out may not); a token's C = heads * dim channels are numbered
   c = h * dim + d, so a flat [B, T, C] buffer is attn_tensor_dense(p, dt, B, T, 1, C).
   State is fp32 caller memory, so a sequence can run in pieces: pass one call's state_out as
   the next call's state_in (they may be the same buffer; partial overlap is
   ATTN_ERR_RWKV_STATE_ALIAS). A NULL state_in is the empty history, a NULL state_out is not
   written. out and state_out (a step's state) must not overlap any input (r, k, v, w,
   time_decay, time_first, u, state_in) or each other, nor out's rows each other (attn_tensor's
   rule): ATTN_ERR_RWKV_OVERLAP. Results are bitwise the same for every thread count, for one
   pass or any split into pieces, and step == forward.
   field            default (0)                 meaning
   head_size        64 if k.dim % 64 == 0,      RWKV-5/6 head size N (channels per head); must
                    else k.dim                  divide k.dim (attn_rwkv4_* do not read it)
   n_threads        all cores (fewer for calls  threads (work splits over batch x channel
                    of a few microseconds)      blocks, or batch x heads)
   parallel         built-in threads            your parallel-for (see attn_parallel_fn)
   parallel_user    -                           passed to parallel
   workspace        allocate per call           RWKV-5/6: scratch of attn_rwkv6_workspace_size()
                                                bytes (RWKV-4 needs none) */
typedef struct attn_rwkv_desc {
    int head_size;
    int n_threads;
    attn_parallel_fn parallel;
    void *parallel_user;
    void *workspace;
    size_t workspace_size;
} attn_rwkv_desc;

/* RWKV-4 WKV (time mixing), per channel c, with w = -exp(time_decay[c]), u = time_first[c]:
     wkv_t = (sum_{i<t} e^{(t-1-i) w + k_i} v_i + e^{u + k_t} v_t)
           / (sum_{i<t} e^{(t-1-i) w + k_i}     + e^{u + k_t})
   computed with the stable max-tracking recurrence of the reference CUDA kernel (state aa, bb,
   pp; pp starts at -1e38), which stays finite where the sums overflow:
     p = max(pp, u + k); e1 = exp(pp - p); e2 = exp(u + k - p); wkv = (e1 aa + e2 v) / (e1 bb + e2)
     p' = max(pp + w, k); e1 = exp(pp + w - p'); e2 = exp(k - p'); aa = e1 aa + e2 v;
     bb = e1 bb + e2; pp = p'
     time_decay, time_first   [C] fp32
     k, v, out                [B, T, H, D] (C = H * D); out written on success only
     state_in, state_out      [B][3][C] fp32: aa, bb, pp of each channel (or NULL)
   Parallel over batch x groups of 64-channel blocks; SIMD exp from the vector layer. */
ATTNDEF attn_status attn_rwkv4_forward(const attn_rwkv_desc *desc, const float *time_decay, const float *time_first,
                                       attn_tensor k, attn_tensor v, attn_tensor out,
                                       const float *state_in, float *state_out);
/* One token (k.seq == 1) of attn_rwkv4_forward, state [B][3][C] read and updated in place. */
ATTNDEF attn_status attn_rwkv4_step(const attn_rwkv_desc *desc, const float *time_decay, const float *time_first,
                                    attn_tensor k, attn_tensor v, attn_tensor out, float *state);
/* Writes the empty history into state [batch][3][channels]: aa = bb = 0, pp = -1e38. */
ATTNDEF attn_status attn_rwkv4_state_init(float *state, int batch, int channels);

/* RWKV-5/6 time mixing with a matrix-valued state per head (N = head_size channels; head g
   covers channels [g N, g N + N)): with r, k, v, w the token's head slices,
     y_t[j] = sum_i r_t[i] (u[i] k_t[i] v_t[j] + S[i][j]);   then  S[i][j] = w_t[i] S[i][j] + k_t[i] v_t[j]
   w is the decay in [0, 1] (RWKV-6: data-dependent, w = exp(-exp(x)) of the model's decay
   projection x; RWKV-5: one decay per channel: pass a view with stride_batch = stride_seq = 0).
     r, k, v, w, out          [B, T, H, D] (C = H * D channels, N divides D); out written on
                              success only (y, before the model's group norm and gate)
     u                        [C] fp32, the bonus (time_first / time_faaaa)
     state_in, state_out      [B][C / N][N][N] fp32, S[i][j] (i: key channel, j: value channel)
   Parallel over batch x groups of heads; the recurrent form, O(T N C) work. */
ATTNDEF attn_status attn_rwkv6_forward(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                       attn_tensor w, const float *u, attn_tensor out,
                                       const float *state_in, float *state_out);
/* One token (seq 1) of attn_rwkv6_forward, state [B][C/N][N][N] read and updated in place. */
ATTNDEF attn_status attn_rwkv6_step(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                    attn_tensor w, const float *u, attn_tensor out, float *state);
/* Bytes of scratch attn_rwkv6_forward and attn_rwkv6_step need for these shapes (desc->workspace).
   Validates desc and the tensors' shapes and dtypes (not u, not the data). */
ATTNDEF attn_status attn_rwkv6_workspace_size(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                              attn_tensor w, size_t *bytes);

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
#ifndef NOMINMAX              /* windows.h's min/max macros would rewrite attn__isa's ->max() calls */
#define NOMINMAX
#endif
#include <windows.h>
#else
#define ATTN__PTHREADS 1
#include <pthread.h>
#include <unistd.h>
#endif
#endif

#if defined(__GNUC__) || defined(__clang__)
#define ATTN__MAYBE_UNUSED __attribute__((unused))   /* shared helpers a build may not call */
#else
#define ATTN__MAYBE_UNUSED
#endif
#define ATTN__MIN(a, b) ((a) < (b) ? (a) : (b))
#define ATTN__MAX(a, b) ((a) > (b) ? (a) : (b))
/* Host+device marker of the few mask helpers attn_cuda.cuh shares with the CUDA kernels (attn__lane_rule,
   attn__lane_pre, attn__lane_ok, attn__visible, attn__chunk_full, attn__key_ranges, attn__seq_at): empty in C. */
#ifndef ATTN__HD
#if defined(__CUDACC__)
#define ATTN__HD __host__ __device__ __forceinline__
#else
#define ATTN__HD
#endif
#endif
#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#define ATTN__RESTRICT __restrict
#else
#define ATTN__RESTRICT
#endif

/* y += a x over n floats; restrict and 16-float blocks, so compilers vectorise it at -O2
   (gcc's cheap cost model takes only loops with a known trip count) */
static void attn__axpy(float *ATTN__RESTRICT y, float a, const float *ATTN__RESTRICT x, int n) {
    int i = 0, j;
    for (; i + 16 <= n; i += 16)
        for (j = 0; j < 16; ++j) y[i + j] += a * x[i + j];
    for (; i < n; ++i) y[i] += a * x[i];
}

/* The one logsumexp merge of partial softmax results (split-KV, attn_merge, EL-attention's
   splits): part p has running max m_p (in w[p]) and sum l_p (l NULL: every l_p = 1, parts
   already normalised with m_p their lse). On return w[p] = exp(m_p - M) / L with M = max m,
   L = sum_p exp(m_p - M) l_p, so the merged row is sum_p w[p] row_p (unnormalised partial
   rows) and its lse is the return value M + log L. Parts with m_p = -inf weigh 0; when every
   part has -inf, all weights are 0 and the result is -inf (a row that saw no key). A NaN m_p
   or l_p (a part that met a NaN or +inf logit) makes every weight and the result NaN. */
static float attn__lse_weights(int n, float *w, const float *l) {
    float M = -INFINITY, L = 0.0f;
    int p, nan = 0;
    for (p = 0; p < n; ++p) { M = ATTN__MAX(M, w[p]); nan |= w[p] != w[p] || (l && l[p] != l[p]); }
    if (nan) { for (p = 0; p < n; ++p) w[p] = (float)NAN; return (float)NAN; }
    if (M == -INFINITY) { for (p = 0; p < n; ++p) w[p] = 0.0f; return -INFINITY; }
    for (p = 0; p < n; ++p) {
        w[p] = w[p] == -INFINITY ? 0.0f : expf(w[p] - M);
        L += w[p] * (l ? l[p] : 1.0f);
    }
    for (p = 0; p < n; ++p) w[p] /= L;
    return M + logf(L);
}
#define ATTN__ALIGN 64

/* g++ 12 at -O2 reports its own _mm512_undefined_* helpers (self-initialised) as "maybe
   uninitialized" (or "uninitialized") where the AVX-512 intrinsics inline into our kernels: a false positive that
   -Werror users would otherwise hit; popped at the end of the implementation. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

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
/* The one checked task count every kind uses: a * b * c work items as the int that
   attn__parallel_for takes, or 0 when the product exceeds INT_MAX (the caller returns
   ATTN_ERR_OVERFLOW). attn__check_qkv applies it to q.batch * q.heads for every kind. */
static int attn__tasks(size_t a, size_t b, size_t c, int *n) {
    size_t t;
    if (!attn__mul_size(a, b, &t) || !attn__mul_size(t, c, &t) || t > (size_t)INT_MAX) return 0;
    *n = (int)t; return 1;
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

/* Scratch memory of one call: the caller's (a desc's workspace, at least bytes long) or one
   allocation. The one place every entry point gets its workspace from. base is aligned to
   ATTN__ALIGN; ask for ATTN__ALIGN bytes more than you use so a caller's unaligned buffer fits. */
typedef struct attn__ws { char *base; void *owned; } attn__ws;
static attn_status attn__ws_acquire(void *user, size_t user_bytes, size_t bytes, attn_status too_small, attn__ws *w) {
    w->owned = NULL;
    if (user) {
        if (user_bytes < bytes) return too_small;
        w->base = (char *)user;
    } else {
        if (!(w->owned = attn__alloc(bytes))) return ATTN_ERR_OUT_OF_MEMORY;
        w->base = (char *)w->owned;
    }
    w->base += (ATTN__ALIGN - (uintptr_t)w->base % ATTN__ALIGN) % ATTN__ALIGN;
    return ATTN_OK;
}
static void attn__ws_release(attn__ws *w) { attn__free(w->owned); w->owned = NULL; }

#if defined(ATTN__PTHREADS) && defined(_SC_NPROCESSORS_ONLN)
/* sysconf reads /sys on Linux (15 us a call on an AMD EPYC Zen 4 VM, more than a one-token decode step),
   so the count is read once per process: every call with n_threads = 0 asks for it. */
static int attn__cpu_count_value;
static pthread_once_t attn__cpu_count_once = PTHREAD_ONCE_INIT;
static void attn__cpu_count_init(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    attn__cpu_count_value = n < 1 ? 1 : (n > 256 ? 256 : (int)n);
}
#endif
static int attn__cpu_count(void) {
#if defined(ATTN__PTHREADS) && defined(_SC_NPROCESSORS_ONLN)
    pthread_once(&attn__cpu_count_once, attn__cpu_count_init);
    return attn__cpu_count_value;
#elif defined(ATTN__WIN32_THREADS)
    SYSTEM_INFO si; GetSystemInfo(&si);
    return si.dwNumberOfProcessors < 1 ? 1 : (int)ATTN__MIN(si.dwNumberOfProcessors, 256);
#else
    return 1;
#endif
}

#define ATTN__MAX_THREADS 256

#if defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS)
/* Thread primitives, one set for the per-call parallel-for and attn_pool below. */
#if defined(ATTN__PTHREADS)
typedef pthread_mutex_t attn__mutex;
typedef pthread_cond_t attn__cond;
typedef pthread_t attn__thread;
#define ATTN__THREAD_MAIN(name, type, body) static void *name(void *arg) { body((type *)arg); return NULL; }
#define attn__mutex_init(m) (pthread_mutex_init(m, NULL) == 0)
#define attn__mutex_destroy(m) pthread_mutex_destroy(m)
#define attn__cond_init(c) (pthread_cond_init(c, NULL) == 0)
#define attn__cond_destroy(c) pthread_cond_destroy(c)
#define attn__lock(m) pthread_mutex_lock(m)
#define attn__unlock(m) pthread_mutex_unlock(m)
#define attn__wait(c, m) pthread_cond_wait(c, m)
#define attn__broadcast(c) pthread_cond_broadcast(c)
#define attn__thread_start(t, fn, arg) (pthread_create(t, NULL, fn, arg) == 0)
#define attn__thread_join(t) pthread_join(t, NULL)
#else
typedef CRITICAL_SECTION attn__mutex;
typedef CONDITION_VARIABLE attn__cond;
typedef HANDLE attn__thread;
#define ATTN__THREAD_MAIN(name, type, body) static DWORD WINAPI name(LPVOID arg) { body((type *)arg); return 0; }
#define attn__mutex_init(m) (InitializeCriticalSection(m), 1)
#define attn__mutex_destroy(m) DeleteCriticalSection(m)
#define attn__cond_init(c) (InitializeConditionVariable(c), 1)
#define attn__cond_destroy(c) ((void)(c))
#define attn__lock(m) EnterCriticalSection(m)
#define attn__unlock(m) LeaveCriticalSection(m)
#define attn__wait(c, m) SleepConditionVariableCS(c, m, INFINITE)
#define attn__broadcast(c) WakeAllConditionVariable(c)
#define attn__thread_start(t, fn, arg) ((*(t) = CreateThread(NULL, 0, fn, arg, 0, NULL)) != NULL)
#define attn__thread_join(t) (WaitForSingleObject(t, INFINITE), CloseHandle(t))
#endif

/* A job: task indices handed out from a shared counter to whichever thread asks next. Which
   thread runs a task never changes its result: every task writes its own outputs and uses
   only its thread's scratch. */
typedef struct attn__job { attn_task_fn task; void *ctx; int n_tasks, next; attn__mutex lock; } attn__job;
static void attn__job_run(attn__job *j, int thread) {
    for (;;) {
        int i;
        attn__lock(&j->lock); i = j->next++; attn__unlock(&j->lock);
        if (i >= j->n_tasks) return;
        j->task(j->ctx, i, thread);
    }
}

/* Per-call threads: worker i runs the job as thread i, then exits. */
typedef struct attn__worker { attn__job *job; int thread; } attn__worker;
static void attn__worker_run(attn__worker *w) { attn__job_run(w->job, w->thread); }
ATTN__THREAD_MAIN(attn__worker_main, attn__worker, attn__worker_run)
#endif /* threads */

/* Runs task over [0, n_tasks) on n_threads threads (or the caller's hook). Threads that fail
   to start just leave more tasks to the others, so the result is always complete. */
static void attn__parallel_for(const attn_desc *d, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    if (n_tasks <= 0) return;
    if (d && d->parallel) { d->parallel(d->parallel_user, n_tasks, n_threads, task, ctx); return; }
    if (n_threads > n_tasks) n_threads = n_tasks;
#if defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS)
    if (n_threads > 1) {
        attn__job job;
        attn__worker workers[ATTN__MAX_THREADS];
        attn__thread th[ATTN__MAX_THREADS];
        int started = 1;
        job.task = task; job.ctx = ctx; job.n_tasks = n_tasks; job.next = 0;
        if (attn__mutex_init(&job.lock)) {
            for (i = 0; i < n_threads; ++i) { workers[i].job = &job; workers[i].thread = i; }
            for (i = 1; i < n_threads; ++i) {
                if (!attn__thread_start(&th[i], attn__worker_main, &workers[i])) break;
                ++started;
            }
            attn__job_run(&job, 0);           /* the caller is thread 0 */
            for (i = 1; i < started; ++i) attn__thread_join(th[i]);
            attn__mutex_destroy(&job.lock);
            return;
        }
    }
#endif
    for (i = 0; i < n_tasks; ++i) task(ctx, i, 0);
}

/* --- attn_pool: persistent workers ----------------------------------------------------
   Worker i (1..n-1) sleeps on `wake` until `generation` moves, runs the new job as thread i
   (when i < the job's n_threads), then counts itself out of `busy`; the caller is thread 0.
   Spinning reads generation and busy with atomic loads (GCC/clang builtins or Interlocked*),
   writes happen under `lock`; without those builtins nothing spins. */
#if (defined(__GNUC__) || defined(__clang__)) && (defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS))
#define ATTN__ATOMIC_LOAD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define ATTN__ATOMIC_STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define ATTN__HAVE_SPIN 1
#elif defined(ATTN__WIN32_THREADS)
#define ATTN__ATOMIC_LOAD(x) InterlockedOr((volatile LONG *)&(x), 0)
#define ATTN__ATOMIC_STORE(x, v) InterlockedExchange((volatile LONG *)&(x), (LONG)(v))
#define ATTN__HAVE_SPIN 1
#else
#define ATTN__ATOMIC_LOAD(x) (x)
#define ATTN__ATOMIC_STORE(x, v) ((x) = (v))
#endif
#if defined(__x86_64__) || defined(__i386__)
#define ATTN__PAUSE() __asm__ __volatile__("pause")
#elif defined(_MSC_VER)
#define ATTN__PAUSE() YieldProcessor()
#else
#define ATTN__PAUSE() ((void)0)
#endif
#define ATTN__SPINS_PER_US 32       /* pause + load rounds per microsecond, roughly (25-40 ns each) */

#if defined(ATTN__PTHREADS) || defined(ATTN__WIN32_THREADS)
typedef struct attn__pool_worker { struct attn_pool *pool; int index; } attn__pool_worker;

struct attn_pool {
    int n_threads, started;          /* threads including the caller; workers running */
    long spins;                      /* spin rounds before sleeping */
    attn__mutex lock, run;           /* lock: the fields below; run: one job at a time */
    attn__cond wake, done;
    unsigned generation;             /* counts jobs; a worker runs each new value once */
    int stop, busy, job_threads;     /* shutting down; workers still in the job; its threads */
    attn__job job;                   /* the current job */
    attn__thread th[ATTN__MAX_THREADS];
    attn__pool_worker workers[ATTN__MAX_THREADS];
};

static void attn__pool_worker_loop(attn__pool_worker *w) {
    attn_pool *p = w->pool;
    unsigned seen = 0;
    for (;;) {
        long k;
        for (k = 0; k < p->spins && ATTN__ATOMIC_LOAD(p->generation) == seen && !ATTN__ATOMIC_LOAD(p->stop); ++k) ATTN__PAUSE();
        attn__lock(&p->lock);
        while (p->generation == seen && !p->stop) attn__wait(&p->wake, &p->lock);
        if (p->stop) { attn__unlock(&p->lock); return; }
        seen = p->generation;
        attn__unlock(&p->lock);
        if (w->index < p->job_threads) attn__job_run(&p->job, w->index);
        attn__lock(&p->lock);
        ATTN__ATOMIC_STORE(p->busy, p->busy - 1);
        if (p->busy == 0) attn__broadcast(&p->done);
        attn__unlock(&p->lock);
    }
}
ATTN__THREAD_MAIN(attn__pool_main, attn__pool_worker, attn__pool_worker_loop)

/* Undoes the first `inited` of attn_pool_create's five initialisations, then frees p. */
static void attn__pool_release(attn_pool *p, int inited) {
    if (inited > 4) attn__mutex_destroy(&p->job.lock);
    if (inited > 3) attn__cond_destroy(&p->done);
    if (inited > 2) attn__cond_destroy(&p->wake);
    if (inited > 1) attn__mutex_destroy(&p->run);
    if (inited > 0) attn__mutex_destroy(&p->lock);
    attn__free(p);
}

/* Stops and joins the workers, then releases p. */
static void attn__pool_close(attn_pool *p) {
    int i;
    attn__lock(&p->lock);
    ATTN__ATOMIC_STORE(p->stop, 1);
    attn__broadcast(&p->wake);
    attn__unlock(&p->lock);
    for (i = 1; i <= p->started; ++i) attn__thread_join(p->th[i]);
    attn__pool_release(p, 5);
}

ATTNDEF attn_pool *attn_pool_create(int n_threads, int spin_us) {
    attn_pool *p;
    int i, inited;
    if (n_threads <= 0) n_threads = attn__cpu_count();
    n_threads = ATTN__MIN(n_threads, ATTN__MAX_THREADS);
    p = (attn_pool *)attn__alloc(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->n_threads = n_threads;
#if defined(ATTN__HAVE_SPIN)
    p->spins = spin_us < 0 ? 0 : (long)(spin_us == 0 ? 100 : ATTN__MIN(spin_us, 1000000)) * ATTN__SPINS_PER_US;
#else
    (void)spin_us;
#endif
    inited = !attn__mutex_init(&p->lock) ? 0 : !attn__mutex_init(&p->run) ? 1 : !attn__cond_init(&p->wake) ? 2
           : !attn__cond_init(&p->done) ? 3 : !attn__mutex_init(&p->job.lock) ? 4 : 5;
    if (inited < 5) { attn__pool_release(p, inited); return NULL; }
    for (i = 1; i < n_threads; ++i) {
        p->workers[i].pool = p; p->workers[i].index = i;
        if (!attn__thread_start(&p->th[i], attn__pool_main, &p->workers[i])) break;
        p->started = i;
    }
    if (p->started != n_threads - 1) { attn__pool_close(p); return NULL; }
    return p;
}

ATTNDEF void attn_pool_destroy(attn_pool *pool) {
    if (pool) attn__pool_close(pool);
}

ATTNDEF int attn_pool_threads(const attn_pool *pool) { return pool ? pool->n_threads : 0; }

ATTNDEF void attn_pool_parallel(void *user, int n_tasks, int n_threads, attn_task_fn task, void *task_ctx) {
    attn_pool *p = (attn_pool *)user;
    long k;
    int i;
    if (n_tasks <= 0) return;
    if (!p || n_threads <= 1 || n_tasks == 1 || p->n_threads == 1) {     /* nothing to share */
        for (i = 0; i < n_tasks; ++i) task(task_ctx, i, 0);
        return;
    }
    attn__lock(&p->run);
    attn__lock(&p->lock);
    p->job.task = task; p->job.ctx = task_ctx; p->job.n_tasks = n_tasks; p->job.next = 0;
    p->job_threads = ATTN__MIN(n_threads, p->n_threads);
    ATTN__ATOMIC_STORE(p->busy, p->n_threads - 1);
    ATTN__ATOMIC_STORE(p->generation, p->generation + 1u);
    attn__broadcast(&p->wake);
    attn__unlock(&p->lock);
    attn__job_run(&p->job, 0);
    for (k = 0; k < p->spins && ATTN__ATOMIC_LOAD(p->busy) != 0; ++k) ATTN__PAUSE();
    attn__lock(&p->lock);
    while (p->busy != 0) attn__wait(&p->done, &p->lock);
    attn__unlock(&p->lock);
    attn__unlock(&p->run);
}
#else  /* no threads: the pool does not exist */
ATTNDEF attn_pool *attn_pool_create(int n_threads, int spin_us) { (void)n_threads; (void)spin_us; return NULL; }
ATTNDEF void attn_pool_destroy(attn_pool *pool) { (void)pool; }
ATTNDEF int attn_pool_threads(const attn_pool *pool) { (void)pool; return 0; }
ATTNDEF void attn_pool_parallel(void *user, int n_tasks, int n_threads, attn_task_fn task, void *task_ctx) {
    int i;
    (void)user; (void)n_threads;
    for (i = 0; i < n_tasks; ++i) task(task_ctx, i, 0);
}
#endif

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
   3.4 argument validation and the mechanism seam
   --------------------------------------------------------------------------------------- */
ATTNDEF const char *attn_status_str(attn_status s) {
    switch (s) {
#define ATTN__STATUS_MSG(name, value, cat, msg) case name: return msg;
    ATTN__STATUS_LIST(ATTN__STATUS_MSG)
#undef ATTN__STATUS_MSG
    case ATTN_STATUS_END: default: return "unknown attn_status value";
    }
}
ATTNDEF attn_status_category attn_status_cat(attn_status s) {
    switch (s) {
#define ATTN__STATUS_CAT(name, value, cat, msg) case name: return cat;
    ATTN__STATUS_LIST(ATTN__STATUS_CAT)
#undef ATTN__STATUS_CAT
    case ATTN_STATUS_END: default: return ATTN_CAT_RANGE;
    }
}

/* a * b as a stride, or PTRDIFF_MAX when it does not fit (validation then reports
   ATTN_ERR_OVERFLOW if the axis is ever stepped); 0 for a non-positive factor (a shape error). */
static ptrdiff_t attn__stride_mul(ptrdiff_t a, int b) {
    if (a <= 0 || b <= 0) return 0;
    return a > PTRDIFF_MAX / b ? PTRDIFF_MAX : a * b;
}
ATTNDEF attn_tensor attn_tensor_dense(void *data, attn_dtype dtype, int batch, int seq, int heads, int dim) {
    attn_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data; t.dtype = dtype; t.batch = batch; t.seq = seq; t.heads = heads; t.dim = dim;
    t.stride_head = dim > 0 ? dim : 0;
    t.stride_seq = attn__stride_mul(t.stride_head, heads);
    t.stride_batch = attn__stride_mul(t.stride_seq, seq);
    return t;
}
ATTNDEF attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int batch, int heads, int seq, int dim) {
    attn_tensor t = attn_tensor_dense(data, dtype, batch, seq, heads, dim);
    t.stride_seq = dim > 0 ? dim : 0;
    t.stride_head = attn__stride_mul(t.stride_seq, seq);
    t.stride_batch = attn__stride_mul(t.stride_head, heads);
    return t;
}
ATTNDEF attn_bias attn_bias_dense(const float *data, int batch, int heads, int rows, int seq_k) {
    attn_bias b;
    memset(&b, 0, sizeof b);
    b.data = data; b.batch = batch; b.heads = heads; b.rows = rows;
    b.stride_q = seq_k > 0 ? seq_k : 0;
    b.stride_head = attn__stride_mul(b.stride_q, rows);
    b.stride_batch = attn__stride_mul(b.stride_head, heads);
    return b;
}

/* A validated tensor: its strides, as the caller gave them (a zero stride broadcasts). */
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

/* Takes the strides and checks that every element offset (in bytes) fits in ptrdiff_t.
   Shape and dtype must already be valid. */
static attn_status attn__make_view(const attn_tensor *t, attn__view *v) {
    size_t span = 0, bytes;
    v->data = (char *)t->data; v->dtype = t->dtype; v->esize = attn__dtype_size(t->dtype);
    v->batch = t->batch; v->seq = t->seq; v->heads = t->heads; v->dim = t->dim;
    v->sb = t->stride_batch; v->ss = t->stride_seq; v->sh = t->stride_head;
    if (!attn__span_add(&span, 1, t->dim) || !attn__span_add(&span, v->sh, t->heads) ||
        !attn__span_add(&span, v->ss, t->seq) || !attn__span_add(&span, v->sb, t->batch) ||
        !attn__add_size(span, 1, &span) || !attn__mul_size(span, v->esize, &bytes) || bytes > (size_t)PTRDIFF_MAX)
        return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}

static int attn__shape_ok(const attn_tensor *t) {
    return t->batch >= 1 && t->seq >= 1 && t->heads >= 1 && t->dim >= 1;
}

/* Bytes [lo, hi) a view (made by attn__make_view, so every sum fits ptrdiff_t) can address. */
typedef struct attn__span { uintptr_t lo, hi; } attn__span;
static attn__span attn__view_span(const attn__view *v) {
    const ptrdiff_t st[3] = { v->sb, v->ss, v->sh };
    const int n[3] = { v->batch, v->seq, v->heads };
    ptrdiff_t neg = 0, pos = v->dim;
    attn__span r;
    int i;
    for (i = 0; i < 3; ++i) {
        const ptrdiff_t e = st[i] * (ptrdiff_t)(n[i] - 1);
        if (e < 0) neg += e; else pos += e;
    }
    r.lo = (uintptr_t)v->data - (uintptr_t)(-neg) * v->esize;
    r.hi = (uintptr_t)v->data + (uintptr_t)pos * v->esize;
    return r;
}
static int attn__spans_meet(attn__span a, attn__span b) { return a.lo < b.hi && b.lo < a.hi; }

/* 1 when two different rows of the view can share an element, by the rule attn_tensor documents:
   sorted by |stride|, each axis of extent > 1 must step over the span of the axes inside it. */
static int attn__view_self_overlap(const attn__view *v) {
    size_t st[3], inner = (size_t)v->dim, t;
    int n[3], k = 0, i, j;
    const ptrdiff_t s3[3] = { v->sh, v->ss, v->sb };
    const int n3[3] = { v->heads, v->seq, v->batch };
    for (i = 0; i < 3; ++i)
        if (n3[i] > 1) { st[k] = (size_t)(s3[i] < 0 ? -s3[i] : s3[i]); n[k] = n3[i]; ++k; }
    for (i = 1; i < k; ++i)                       /* insertion sort by |stride| */
        for (j = i; j > 0 && st[j] < st[j - 1]; --j) {
            t = st[j]; st[j] = st[j - 1]; st[j - 1] = t;
            { const int m = n[j]; n[j] = n[j - 1]; n[j - 1] = m; }
        }
    for (i = 0; i < k; ++i) {                     /* sums bounded by the view's span (checked) */
        if (st[i] < inner) return 1;
        inner += st[i] * (size_t)(n[i] - 1);
    }
    return 0;
}

/* ---- The one overlap check of every call that writes (the memory rule of attn_tensor) ----
   A call lists the memory it reads (inputs) and writes (outputs) in an attn__ovl, from resolved
   views (attn__ovl_view) or plain arrays (attn__ovl_mem), then asks attn__ovl_bad(): 1 when an
   output's rows overlap each other, or an output's span meets an input's or another output's.
   Inputs may share memory freely. An in-place buffer (a state read and written) is listed once,
   as an output. Absent tensors (NULL, or no elements) are skipped. O(inputs x outputs). */
#define ATTN__OVL_MAX 16                       /* the largest call lists 10 inputs and 8 outputs */
typedef struct attn__ovl {
    attn__span in[ATTN__OVL_MAX], out[ATTN__OVL_MAX];
    int n_in, n_out, self;
} attn__ovl;
static void attn__ovl_init(attn__ovl *o) { o->n_in = o->n_out = o->self = 0; }
static void attn__ovl_span(attn__ovl *o, int is_out, attn__span sp) {
    if (sp.lo >= sp.hi) return;
    if (is_out) { ATTN_ASSERT(o->n_out < ATTN__OVL_MAX); o->out[o->n_out++] = sp; }
    else { ATTN_ASSERT(o->n_in < ATTN__OVL_MAX); o->in[o->n_in++] = sp; }
}
/* n elements of esize bytes at p (the span saturates instead of wrapping) */
static void attn__ovl_mem(attn__ovl *o, int is_out, const void *p, size_t n, size_t esize) {
    attn__span sp;
    if (!p || !n) return;
    sp.lo = (uintptr_t)p;
    sp.hi = n > (UINTPTR_MAX - sp.lo) / esize ? UINTPTR_MAX : sp.lo + (uintptr_t)(n * esize);
    attn__ovl_span(o, is_out, sp);
}
/* a view made by attn__make_view (or by attn__ovl_ssm); an output's rows are checked too */
static void attn__ovl_view(attn__ovl *o, int is_out, const attn__view *v) {
    if (!v->data) return;
    if (is_out && attn__view_self_overlap(v)) o->self = 1;
    attn__ovl_span(o, is_out, attn__view_span(v));
}
static int attn__ovl_bad(const attn__ovl *o) {
    int i, j;
    if (o->self) return 1;
    for (i = 0; i < o->n_out; ++i) {
        for (j = 0; j < o->n_in; ++j) if (attn__spans_meet(o->out[i], o->in[j])) return 1;
        for (j = 0; j < i; ++j) if (attn__spans_meet(o->out[i], o->out[j])) return 1;
    }
    return 0;
}
/* A state read from state_in and written to state_out (n floats each, either may be NULL):
   one buffer (in place: listed once, as an output) or two apart; 0 when they partly overlap. */
static int attn__ovl_state(attn__ovl *o, const float *in, float *out, size_t n) {
    const int n_in = o->n_in, n_out = o->n_out;
    attn__ovl_mem(o, 1, out, n, sizeof(float));
    if (in == out) return 1;
    attn__ovl_mem(o, 0, in, n, sizeof(float));
    return !(o->n_in > n_in && o->n_out > n_out && attn__spans_meet(o->in[n_in], o->out[n_out]));
}

/* The span of a tensor that passes the basic checks (data, dtype, shape, size), else 0: such a
   tensor is left to the operation's own validation, which reports it. */
static int attn__tensor_span(const attn_tensor *t, attn__span *sp, attn__view *vw) {
    attn__view v;
    if (!t->data || !attn__dtype_ok(t->dtype) || !attn__shape_ok(t) || attn__make_view(t, &v) != ATTN_OK) return 0;
    *sp = attn__view_span(&v);
    if (vw) *vw = v;
    return 1;
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
    int bias_batch, bias_heads, bias_rows;
    ptrdiff_t bias_sb, bias_sh, bias_sq;
    int n_threads;
    float dropout_p;             /* backward / training: attention dropout (3.9) */
    unsigned long long dropout_seed;
    /* generation (3.12): in-kernel RoPE (rope 0: off); a paged cache (page_size > 0: the k/v
       views are the page pool, batch/seq hold the logical batch and key length) */
    int rope, rope_dim;
    double rope_base, rope_scaling;
    const int *rope_pos_q, *rope_pos_k;
    ptrdiff_t rope_ld_k;                       /* row length of rope_pos_k */
    const float *rope_tab;                     /* attn_decode: [slot][rope_dim/2] (cos, sin), or NULL */
    const int *block_table;
    int page_size, max_pages;
    int bf16_kernels;            /* attn_desc.bf16_kernels (3.6) */
} attn__problem;

/* 3.12 generation: RoPE settings of attn_desc checked / copied into the problem */
static attn_status attn__check_rope(const attn_desc *d, int dim);
static void attn__rope_resolve(const attn_desc *d, attn__problem *P, int k_seq);
/* used by 3.7: rotate an fp32 row in place; load q elements [d0, d0+n) rotated, times mul */
static void attn__rope_row(const attn__problem *P, float *x, long long pos);
static void attn__rope_rows(const attn__problem *P, float *x, size_t ld, int n, long long pos0);
static void attn__rope_rows_tab(const attn__problem *P, float *x, size_t ld, int n, long long pos0);
static void attn__rope_load(const attn__problem *P, const void *row, attn_dtype t, int d0, int n, long long pos,
                            float *dst, float mul);

/* ---- The mechanism seam -------------------------------------------------------------------
   Every attn_kind is one attn__mech: the operations it has (NULL: ATTN_ERR_KIND_OP), each taking
   the public call's arguments in an attn__call. attn_forward, attn_backward, attn_decode,
   attn_step, attn_state_size and the workspace queries only pick the kind's entry (section
   3.17) and call it, so a family adds its kind to ATTN__KIND_LIST, one attn__mech and its
   kernels, and touches nothing else. One function per operation does validate -> plan ->
   (query: report the bytes and return) -> workspace -> run, so a workspace query can never
   disagree with the call it sizes:
       static attn_status attn__mykind_forward(const attn__call *c) {
           my_plan P; size_t bytes; attn__ws w; attn_status s;
           if ((s = my_check(c, &P)) != ATTN_OK) return s;   // attn__check_qkv + my fields
           bytes = my_bytes(&P);
           if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }   // workspace query
           if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes,
                                     ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
           my_run(&P, w.base);                              // kernels on attn__vec(), threads
           attn__ws_release(&w);                            // on attn__parallel_for(c->d, ...)
           return ATTN_OK;
       }
       static const attn__mech attn__mech_mykind = { attn__mykind_forward, NULL, NULL, NULL, NULL };
   plus one line X(ATTN_MYKIND, 11, mykind, "...") in ATTN__KIND_LIST. Kernels are written once
   against the vector layer (attn__vec(), 3.5), which runs them on AVX-512, AVX2, NEON or scalar. */
typedef struct attn__call {
    const attn_desc *d;                 /* never NULL (the dispatcher checks) */
    attn_tensor q, k, v, out;           /* out unused by workspace and state-size queries */
    float *lse;                         /* forward / decode: [B, Hq, Sq] or NULL */
    attn_tensor dout, dq, dk, dv;       /* backward */
    const float *lse_in;                /* backward: the forward's lse */
    const attn_kv_cache *cache;         /* decode */
    attn_state *state;                  /* step */
    size_t *bytes;                      /* non-NULL: a query; write the workspace bytes (state
                                           size: floats) here, and nothing else */
} attn__call;
typedef attn_status (*attn__op_fn)(const attn__call *c);
typedef enum attn__op { ATTN__FORWARD, ATTN__BACKWARD, ATTN__DECODE, ATTN__STEP, ATTN__STATE_SIZE } attn__op;
typedef struct attn__mech {
    attn__op_fn forward;                /* attn_forward, attn_workspace_size */
    attn__op_fn backward;               /* attn_backward, attn_backward_workspace_size */
    attn__op_fn decode;                 /* attn_decode, attn_decode_workspace_size */
    attn__op_fn step;                   /* attn_step (state given) */
    attn__op_fn state_size;             /* attn_state_size, attn_state_init: floats in *c->bytes */
} attn__mech;

/* The kind's parameters a state's layout or meaning depends on (attn_state.params): a state of
   256 features read as one of 128 would pass the size check and be garbage. */
static unsigned long long attn__state_params(const attn_desc *d) {
    if (d->kind == ATTN_PERFORMER)
        return (unsigned long long)(unsigned)(d->performer.features ? d->performer.features : 256) |
               (unsigned long long)(unsigned)d->performer.kernel << 32;
    if (d->kind == ATTN_COSFORMER) return (unsigned long long)(unsigned)d->cosformer.max_len;
    return 0;
}

/* The checks every kind's step shares: the state exists, was made for this kind, these shapes
   and parameters, and is large enough. Kinds call it from their step after attn__check_qkv. */
static attn_status attn__check_state(const attn__call *c, size_t need) {
    const attn_state *st = c->state;
    if (!st || !st->data) return ATTN_ERR_STATE_NULL;
    if (st->kind != c->d->kind || st->batch != c->q.batch || st->heads != c->q.heads || st->dim_k != c->q.dim ||
        st->dim_v != c->v.dim || st->heads_kv != c->k.heads || st->params != attn__state_params(c->d))
        return ATTN_ERR_STATE_MISMATCH;
    if (st->pos < 0) return ATTN_ERR_STATE_POS;
    if (st->size < need) return ATTN_ERR_STATE_SIZE;
    return ATTN_OK;
}

/* The kinds other than ATTN_SOFTMAX share attn_desc's threads, workspace, causal and seqlens
   fields; the softmax-only fields must be zero so a setting is never silently ignored. */
static attn_status attn__check_plain(const attn_desc *d) {
    if (d->scale != 0.0f || d->window_left || d->window_right || d->dilation || d->sink_tokens || d->global_tokens ||
        d->alibi_slopes || d->softcap != 0.0f || d->bias.data || d->dropout_p != 0.0f || d->rope || d->rope_pos_q ||
        d->rope_pos_k || d->cu_seqlens_q || d->cu_seqlens_k || d->varlen_batch || d->bf16_kernels || d->dbias)
        return ATTN_ERR_KIND_OPTION;
    return ATTN_OK;
}

/* An output view with a zero stride on an axis of extent > 1 (two elements would share memory).
   The one broadcast check of every output. */
static int attn__tensor_bcast(const attn_tensor *t) {
    return (t->batch > 1 && t->stride_batch == 0) || (t->seq > 1 && t->stride_seq == 0) || (t->heads > 1 && t->stride_head == 0);
}

/* The tensor contract every attn_kind shares: q [B, Sq, Hq, D], k [B, Sk, Hkv, D],
   v [B, Sk, Hkv, Dv], out [B, Sq, Hq, Dv] (NULL: a workspace query), Hq a multiple of Hkv;
   any dtype for q and out, one dtype for k and v. Fills the four views. Kinds then check their
   own fields (desc and per-kind parameters). */
static attn_status attn__check_qkv(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                                   const attn_tensor *out, attn__view *qv, attn__view *kv, attn__view *vv,
                                   attn__view *ov) {
    attn_status s;
    if (!q->data) return ATTN_ERR_NULL_Q;
    if (!k->data) return ATTN_ERR_NULL_K;
    if (!v->data) return ATTN_ERR_NULL_V;
    if (out && !out->data) return ATTN_ERR_NULL_OUT;
    if (!attn__dtype_ok(q->dtype) || !attn__dtype_ok(k->dtype) || !attn__dtype_ok(v->dtype) ||
        (out && !attn__dtype_ok(out->dtype))) return ATTN_ERR_DTYPE;
    if (v->dtype != k->dtype) return ATTN_ERR_DTYPE_MISMATCH;
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
        if (attn__tensor_bcast(out)) return ATTN_ERR_OUT_BROADCAST;
    }
    if ((s = attn__make_view(q, qv)) != ATTN_OK || (s = attn__make_view(k, kv)) != ATTN_OK ||
        (s = attn__make_view(v, vv)) != ATTN_OK) return s;
    if (out && (s = attn__make_view(out, ov)) != ATTN_OK) return s;
    {   /* lse [B, Hq, Sq] and the work decomposition must be indexable; one task per (sequence,
           head) must fit an int (Hkv <= Hq, so per KV head too) */
        size_t n;
        int t;
        if (!attn__mul_size((size_t)q->batch, (size_t)q->heads, &n) || !attn__mul_size(n, (size_t)q->seq, &n) ||
            n > (size_t)PTRDIFF_MAX / sizeof(float) || !attn__tasks((size_t)q->batch, (size_t)q->heads, 1, &t))
            return ATTN_ERR_OVERFLOW;
    }
    return ATTN_OK;
}

static attn_status attn__check_forward(const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                                       const attn_tensor *v, const attn_tensor *out, attn__problem *P) {
    attn_status s;
    int h, varlen;
    if (!d) return ATTN_ERR_NULL_DESC;
    if ((int)d->kind != (int)ATTN_SOFTMAX) return ATTN_ERR_KIND;
    if ((s = attn__check_qkv(q, k, v, out, &P->q, &P->k, &P->v, &P->out)) != ATTN_OK) return s;
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (!isfinite(d->softcap) || d->softcap < 0) return ATTN_ERR_SOFTCAP;
    if (!(d->dropout_p >= 0.0f && d->dropout_p < 1.0f)) return ATTN_ERR_DROPOUT;
    if (d->causal != 0 && d->causal != 1) return ATTN_ERR_CAUSAL;
    if (d->window_left < 0) return ATTN_ERR_WINDOW_LEFT;
    if (d->window_right < 0) return ATTN_ERR_WINDOW_RIGHT;
    if (d->dilation < 0) return ATTN_ERR_DILATION;
    if (d->sink_tokens < 0) return ATTN_ERR_SINK_TOKENS;
    if (d->global_tokens < 0) return ATTN_ERR_GLOBAL_TOKENS;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if ((s = attn__check_rope(d, q->dim)) != ATTN_OK) return s;
    if ((int)d->bf16_kernels < ATTN_BF16_AUTO || (int)d->bf16_kernels > ATTN_BF16_FP32) return ATTN_ERR_BF16_KERNELS;
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
        if (d->bias.rows != 1 && d->bias.rows != q->seq) return ATTN_ERR_BIAS_ROWS;
    }
    P->bias = d->bias.data;
    if (P->bias) {                              /* bias [Bb, Hb, Sq, Sk], seq_k contiguous */
        size_t span = 0;
        P->bias_batch = d->bias.batch; P->bias_heads = d->bias.heads; P->bias_rows = d->bias.rows;
        /* an axis of extent 1 is read at index 0 only: its stride is 0 whatever the caller left there */
        P->bias_sq = d->bias.rows == 1 ? 0 : d->bias.stride_q;
        P->bias_sh = d->bias.heads == 1 ? 0 : d->bias.stride_head;
        P->bias_sb = d->bias.batch == 1 ? 0 : d->bias.stride_batch;
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
    P->dropout_p = d->dropout_p; P->dropout_seed = d->dropout_seed;
    attn__rope_resolve(d, P, k->seq);
    P->bf16_kernels = (int)d->bf16_kernels;
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
#define ATTN__BK_DECODE 32   /* most keys per chunk when decoding stages every KV head at once */
#define ATTN__DECODE_STAGE_BYTES (192 * 1024)   /* decoding's staged K/V chunk: fits L2 */
#define ATTN__DEC_NK 32      /* most keys per chunk of the fused decoding kernels */
#define ATTN__DEC_ROWS 8     /* most query rows per tile of the fused decoding kernels: 16 rows (q.seq x
                                groups) run as two tiles of 8 over each chunk, which beat one tile of
                                16 rows (register spills) and the staged tiles */
#define ATTN__DEC_TILES 4    /* most fused decoding tiles per KV head (32 rows) */
#define ATTN__DEC_CHUNK_BYTES (128 * 1024)  /* K+V bytes per fused decoding chunk (AVX-512), which is
                                also how far ahead it prefetches, into L2. Zen 4, Hq 32 / Hkv 8, D 128,
                                65k-token cache from memory, 1 thread: f32 40.0 -> 29.7 ms, f16 26.4 ->
                                16.5 ms against 32 KiB chunks prefetched into L1 (which had measured best
                                on Zen 5's 48 KiB L1 against 16-key chunks into L1); 64 KiB: 30.7-34.5 /
                                17.0-18.2 ms. Small chunks paid the accumulator's rescale every 4 keys. */
#define ATTN__DEC_CHUNK_BYTES_AVX2 (64 * 1024)  /* the same for the AVX2 kernel: 64 KiB (8 f32 keys at
                                Hkv 8, D 128) ran 29.9-30.4 ms where 128 KiB ran 30.7-32.4 (same case) */

/* What the softmax stage needs per row of the tile ("lane"). */
typedef struct attn__smx {
    float *m, *l, *alpha;               /* running max, running sum, this chunk's rescale factor */
    const float *pos, *slope;           /* query position minus c0 (ALiBi distance) and ALiBi slope */
    const int32_t *lo, *hi, *cap;       /* key j visible iff j <= cap && (j < pre || lo <= j <= hi) */
    int pre;                            /* sinks / global keys: visible to all (under cap) */
    float softcap;                      /* 0: off */
    int alibi, mask;                    /* apply ALiBi; apply the lo/hi/cap mask */
    float rel[ATTN__BQ];                /* pos's storage: position - c0 is exact in 64-bit integers and
                                           converted once, so |p - j| stays exact past 2^24 */
} attn__smx;

/* One tile of Mamba's selective scan on a block of 16 channels: the vector layer's fused
   kernel (ssm_scan below; 3.16 drives it). Channel c < 16 of the block reads tokens [0, nt) of
   its fp32 rows u[c], dl[c] (delta) and z[c] and writes y[c]; its A, constant B / C and state
   rows hold N floats each (A[c][n], ...). Rows of channels past the block's w point at a zero
   row (inputs) or a scratch row (outputs), so the SIMD kernels run 16 lanes with no masks;
   the scalar kernel skips them. Per channel and token:
     dt = dl + bias (softplus(dt) if softplus, threshold 20);  x_n = exp(dt A_n) x_n + dt u B_n
     y = (sum_n C_n x_n + dsk u) * silu(z)      (the sum in n order; silu only with has_z)
   B_n, C_n: bc_const ? Bc[c][n] : Bt[n ldb + t] (shared by the block). The state is read from
   xin[c] and written to xout[c] (may be the same rows). scratch: 4 N x 16 floats, 64-aligned. */
typedef struct attn__ssm_k {
    const float *u[16], *dl[16], *z[16], *A[16], *Bc[16], *Cc[16], *xin[16];
    float *y[16], *xout[16];
    const float *Bt, *Ct;          /* per-token B / C: row n at Bt + n ldb */
    ptrdiff_t ldb;
    float bias[16], dsk[16];
    float *scratch;
    int N, nt, w, softplus, has_z, bc_const;
} attn__ssm_k;
/* The selective scan's backward on one piece of 16 channels in the lanes (the vector layer's
   ssm_bwd; 3.16 drives it) and one chunk of nt <= ATTN__SSM_BT tokens. Rows as attn__ssm_k's:
   u, dl, z, dy (nt tokens from the chunk's start), A, constant Bc / Cc (N floats), per-token
   B / C at Bt, Ct (row n at + n ldb); rows past the piece's channels point at a zero row
   (inputs) or a scratch row (outputs), so every lane runs and pads contribute exact zeros.
   State vectors are [N][16] (lane c = channel c).
   phase 0: x advanced over the chunk in place (the checkpoint pass).
   phase 1: x is the state before the chunk (read only), gr [N][16] dLoss/dx after the chunk,
     updated to before it; writes the chunk's du, ddt, dz rows, adds (padd) or writes the
     per-token dB, dC over the 16 channels to pB, pC (row n at + n ldp; not with bc_const), and
     writes acc: dA [N][16], constant dB [N][16], dC [N][16], dD [16], ddelta_bias [16]: the
     chunk's sums per lane. scratch: attn__ssm_bk_floats(N). */
typedef struct attn__ssm_bk {
    const float *u[16], *dl[16], *z[16], *dy[16], *A[16], *Bc[16], *Cc[16];
    float *du[16], *ddt[16], *dz[16];
    const float *Bt, *Ct;
    ptrdiff_t ldb, ldp;
    float *pB, *pC;
    float bias[16], dsk[16];
    float *x, *gr, *acc, *scratch;
    int N, nt, phase, padd, softplus, has_z, bc_const;
} attn__ssm_bk;
#define ATTN__SSM_BT 256        /* tokens per backward chunk (the checkpoint interval) */
static size_t attn__ssm_bk_floats(int N) {
    return (size_t)16 * (4 * (size_t)N + 10 * ATTN__SSM_BT + 32 + (size_t)N * (2 * ATTN__SSM_BT + 1));
}

/* The kernel, written once against each ISA's 16-lane primitives attn__w_*_S (a 16-float value
   attn__w_S: one zmm, 2 ymm, 4 NEON vectors or 16 floats). Per chunk: dt, softplus and D u per
   token; the states and exp(dt A) of the chunk recomputed from its checkpoint (the forward's
   arithmetic, 2^t with A prescaled by log2 e) into xs, es [N][T(+1)][16]; the gate's gradients;
   then per 16-token tile, last first, per state n with dLoss/dx_n in a register, the tokens
   backwards:  g += dy' C_n;  dA_n += g x_{l-1} e dt;  ddt_A += g x_{l-1} e A_n;  q += g B_n;
   dB_n = g dt u;  dC_n = dy' x_l;  g *= e   (dy' = dLoss/dy before the gate), the per-token dB,
   dC summed over the 16 lanes by one register tree per tile and state; then du = dy' D + dt q,
   ddt = ddt_A + u q (times sigmoid for the softplus). */
#define ATTN__SSM_BWD_DEF(S, ATTR)                                                                               \
ATTR static void attn__ssm_bwd_##S(const attn__ssm_bk *k) {                                                      \
    const int N = k->N, nt = k->nt, T = ATTN__SSM_BT, bcc = k->bc_const;                                        \
    const ptrdiff_t ldb = k->ldb;                                                                                \
    float *A2 = k->scratch, *An = A2 + 16 * (size_t)N, *Bc = An + 16 * (size_t)N, *Cc = Bc + 16 * (size_t)N;     \
    float *tu = Cc + 16 * (size_t)N, *tr = tu + 16 * T, *tdt = tr + 16 * T, *tdc = tdt + 16 * T;                 \
    float *tdu = tdc + 16 * T, *tdy = tdu + 16 * T, *tz = tdy + 16 * T, *typ = tz + 16 * T;                      \
    float *tda = typ + 16 * T, *tdq = tda + 16 * T, *tv = tdq + 16 * T, *tw = tv + 256;                          \
    float *xs = tw + 256, *es = xs + (size_t)16 * N * (T + 1), *acc = k->acc;                                    \
    const attn__w_##S bias = attn__w_ld_##S(k->bias), dsk = attn__w_ld_##S(k->dsk), zero = attn__w_set_##S(0.0f);\
    const attn__w_##S one = attn__w_set_##S(1.0f), szero = attn__w_set_##S(ATTN__SILU_ZERO);                     \
    attn__w_##S accD = zero, accDb = zero;                                                                       \
    int j, n, s0;                                                                                                \
    attn__w_rows_in_##S(k->A, 0, N, An);                                                                         \
    for (n = 0; n < N; ++n)                                                                                      \
        attn__w_st_##S(A2 + 16 * n, attn__w_clamp_##S(attn__w_mul_##S(attn__w_ld_##S(An + 16 * n),              \
                                                                      attn__w_set_##S(1.44269504088896341f))));  \
    if (bcc) { attn__w_rows_in_##S(k->Bc, 0, N, Bc); attn__w_rows_in_##S(k->Cc, 0, N, Cc); }                     \
    attn__w_rows_in_##S(k->u, 0, nt, tu);                                                                        \
    attn__w_rows_in_##S(k->dl, 0, nt, tr);                                                                       \
    for (j = 0; j < nt; ++j) {            /* r (tr), dt (tdt), clamped for the exp (tdc), dt u (tdu), D u (typ) */\
        const attn__w_##S uv = attn__w_ld_##S(tu + 16 * j), r = attn__w_add_##S(attn__w_ld_##S(tr + 16 * j), bias);\
        const attn__w_##S dt = k->softplus ? attn__w_softplus_##S(r) : r;                                        \
        attn__w_st_##S(tr + 16 * j, r);                                                                          \
        attn__w_st_##S(tdt + 16 * j, dt);                                                                        \
        attn__w_st_##S(tdc + 16 * j, attn__w_clamp_##S(dt));                                                    \
        attn__w_st_##S(tdu + 16 * j, attn__w_mul_##S(dt, uv));                                                   \
        attn__w_st_##S(typ + 16 * j, attn__w_mul_##S(dsk, uv));                                                  \
    }                                                                                                            \
    if (k->phase == 0) {                  /* the checkpoint pass: x over the chunk, in place */                  \
        for (n = 0; n < N; ++n) {                                                                                \
            const attn__w_##S a = attn__w_ld_##S(A2 + 16 * n), bn = bcc ? attn__w_ld_##S(Bc + 16 * n) : zero;   \
            const float *Bt = bcc ? NULL : k->Bt + n * ldb;                                                      \
            attn__w_##S xn = attn__w_ld_##S(k->x + 16 * n);                                                      \
            for (j = 0; j < nt; ++j) {                                                                           \
                const attn__w_##S e = attn__w_exp2_##S(attn__w_mul_##S(attn__w_ld_##S(tdc + 16 * j), a));        \
                xn = attn__w_fma_##S(e, xn, attn__w_mul_##S(attn__w_ld_##S(tdu + 16 * j), bcc ? bn : attn__w_set_##S(Bt[j]))); \
            }                                                                                                    \
            attn__w_st_##S(k->x + 16 * n, xn);                                                                   \
        }                                                                                                        \
        return;                                                                                                  \
    }                                                                                                            \
    attn__w_rows_in_##S(k->dy, 0, nt, tdy);                                                                      \
    if (k->has_z) attn__w_rows_in_##S(k->z, 0, nt, tz);                                                          \
    for (n = 0; n < N; ++n) {             /* recompute: xs[n][j] (x before token j; j = nt: after), es, yp */    \
        const attn__w_##S a = attn__w_ld_##S(A2 + 16 * n);                                                       \
        const attn__w_##S bn = bcc ? attn__w_ld_##S(Bc + 16 * n) : zero, cn = bcc ? attn__w_ld_##S(Cc + 16 * n) : zero;\
        const float *Bt = bcc ? NULL : k->Bt + n * ldb, *Ct = bcc ? NULL : k->Ct + n * ldb;                      \
        float *xr = xs + (size_t)16 * (T + 1) * n, *er = es + (size_t)16 * T * n;                                \
        attn__w_##S xn = attn__w_ld_##S(k->x + 16 * n);                                                          \
        attn__w_st_##S(xr, xn);                                                                                  \
        for (j = 0; j < nt; ++j) {                                                                               \
            const attn__w_##S e = attn__w_exp2_##S(attn__w_mul_##S(attn__w_ld_##S(tdc + 16 * j), a));            \
            xn = attn__w_fma_##S(e, xn, attn__w_mul_##S(attn__w_ld_##S(tdu + 16 * j), bcc ? bn : attn__w_set_##S(Bt[j])));\
            attn__w_st_##S(er + 16 * j, e);                                                                      \
            attn__w_st_##S(xr + 16 * (j + 1), xn);                                                               \
            attn__w_st_##S(typ + 16 * j, attn__w_fma_##S(bcc ? cn : attn__w_set_##S(Ct[j]), xn, attn__w_ld_##S(typ + 16 * j)));\
        }                                                                                                        \
    }                                                                                                            \
    for (j = 0; j < nt; ++j) {            /* the gate: dz (tz), dLoss/dy before it (tdy); dD */                  \
        attn__w_##S dy = attn__w_ld_##S(tdy + 16 * j);                                                           \
        if (k->has_z) {                                                                                          \
            const attn__w_##S z = attn__w_ld_##S(tz + 16 * j), sg = attn__w_sig_##S(z);                         \
            const attn__w_##S dz = attn__w_mul_##S(attn__w_mul_##S(dy, attn__w_ld_##S(typ + 16 * j)),           \
                                                   attn__w_mul_##S(sg, attn__w_fma_##S(z, attn__w_sub_##S(one, sg), one)));\
            attn__w_st_##S(tz + 16 * j, attn__w_sel_lt_##S(z, szero, zero, dz));                                 \
            dy = attn__w_sel_lt_##S(z, szero, zero, attn__w_mul_##S(dy, attn__w_mul_##S(z, sg)));               \
            attn__w_st_##S(tdy + 16 * j, dy);                                                                    \
        }                                                                                                        \
        accD = attn__w_fma_##S(dy, attn__w_ld_##S(tu + 16 * j), accD);                                           \
        attn__w_st_##S(tda + 16 * j, zero);                                                                      \
        attn__w_st_##S(tdq + 16 * j, zero);                                                                      \
    }                                                                                                            \
    for (n = 0; n < 3 * N; ++n) attn__w_st_##S(acc + 16 * n, zero);                                              \
    for (s0 = (nt - 1) / 16 * 16; s0 >= 0; s0 -= 16) {   /* tiles of 16 tokens, last first */                  \
        const int m = ATTN__MIN(16, nt - s0);                                                                    \
        for (n = 0; n < N; ++n) {                                                                                \
            const attn__w_##S a = attn__w_ld_##S(An + 16 * n);                                                   \
            const attn__w_##S bn = bcc ? attn__w_ld_##S(Bc + 16 * n) : zero, cn = bcc ? attn__w_ld_##S(Cc + 16 * n) : zero;\
            const float *Bt = bcc ? NULL : k->Bt + n * ldb, *Ct = bcc ? NULL : k->Ct + n * ldb;                  \
            const float *xr = xs + (size_t)16 * (T + 1) * n, *er = es + (size_t)16 * T * n;                      \
            attn__w_##S g = attn__w_ld_##S(k->gr + 16 * n), dA = attn__w_ld_##S(acc + 16 * n);                   \
            attn__w_##S dB = attn__w_ld_##S(acc + 16 * (N + n)), dC = attn__w_ld_##S(acc + 16 * (2 * N + n));    \
            attn__w_##S xl = attn__w_ld_##S(xr + 16 * (s0 + m));                                                 \
            for (j = m - 1; j >= 0; --j) {                                                                       \
                const int l = s0 + j;                                                                            \
                const attn__w_##S dyp = attn__w_ld_##S(tdy + 16 * l), xp = attn__w_ld_##S(xr + 16 * l);          \
                const attn__w_##S e = attn__w_ld_##S(er + 16 * l);                                               \
                const attn__w_##S gx = attn__w_fma_##S(dyp, bcc ? cn : attn__w_set_##S(Ct[l]), g);               \
                const attn__w_##S t = attn__w_mul_##S(gx, attn__w_mul_##S(xp, e));                               \
                dA = attn__w_fma_##S(t, attn__w_ld_##S(tdt + 16 * l), dA);                                       \
                attn__w_st_##S(tda + 16 * l, attn__w_fma_##S(t, a, attn__w_ld_##S(tda + 16 * l)));              \
                attn__w_st_##S(tdq + 16 * l, attn__w_fma_##S(gx, bcc ? bn : attn__w_set_##S(Bt[l]), attn__w_ld_##S(tdq + 16 * l)));\
                if (bcc) {                                                                                       \
                    dB = attn__w_fma_##S(gx, attn__w_ld_##S(tdu + 16 * l), dB);                                  \
                    dC = attn__w_fma_##S(dyp, xl, dC);                                                           \
                } else {                                                                                         \
                    attn__w_st_##S(tv + 16 * j, attn__w_mul_##S(gx, attn__w_ld_##S(tdu + 16 * l)));              \
                    attn__w_st_##S(tw + 16 * j, attn__w_mul_##S(dyp, xl));                                       \
                }                                                                                                \
                g = attn__w_mul_##S(gx, e);                                                                      \
                xl = xp;                                                                                         \
            }                                                                                                    \
            attn__w_st_##S(k->gr + 16 * n, g);                                                                   \
            attn__w_st_##S(acc + 16 * n, dA);                                                                    \
            if (bcc) {                                                                                           \
                attn__w_st_##S(acc + 16 * (N + n), dB);                                                          \
                attn__w_st_##S(acc + 16 * (2 * N + n), dC);                                                      \
            } else {                                                                                             \
                attn__w_hred_##S(tv, k->pB + n * k->ldp + s0, m, k->padd);                                       \
                attn__w_hred_##S(tw, k->pC + n * k->ldp + s0, m, k->padd);                                       \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    for (j = 0; j < nt; ++j) {            /* du (tdq), ddelta (tda); ddelta_bias */                              \
        const attn__w_##S q = attn__w_ld_##S(tdq + 16 * j), r = attn__w_ld_##S(tr + 16 * j);                     \
        attn__w_##S ddt = attn__w_fma_##S(attn__w_ld_##S(tu + 16 * j), q, attn__w_ld_##S(tda + 16 * j));         \
        if (k->softplus) ddt = attn__w_sel_lt_##S(attn__w_set_##S(20.0f), r, ddt, attn__w_mul_##S(ddt, attn__w_sig_##S(r)));\
        accDb = attn__w_add_##S(accDb, ddt);                                                                     \
        attn__w_st_##S(tdq + 16 * j, attn__w_fma_##S(attn__w_ld_##S(tdt + 16 * j), q,                            \
                                                     attn__w_mul_##S(attn__w_ld_##S(tdy + 16 * j), dsk)));       \
        attn__w_st_##S(tda + 16 * j, ddt);                                                                       \
    }                                                                                                            \
    attn__w_rows_out_##S(tdq, k->du, nt);                                                                        \
    attn__w_rows_out_##S(tda, k->ddt, nt);                                                                       \
    if (k->has_z) attn__w_rows_out_##S(tz, k->dz, nt);                                                           \
    attn__w_st_##S(acc + 16 * 3 * (size_t)N, accD);                                                              \
    attn__w_st_##S(acc + 16 * 3 * (size_t)N + 16, accDb);                                                        \
}
/* The complex-A backward (ssm_cbwd): attn__ssm_bk with every A, constant B / C row 2N floats
   (re, im pairs), per-token B / C rows of 2 nt floats (token j's re, im at 2j, 2j + 1; pB, pC
   the same), the state x and gr [2N][16] (row 2n re, 2n + 1 im), acc: dA, constant dB, dC
   [2N][16] each, dD [16], ddelta_bias [16]. scratch: attn__ssm_cbk_floats(N). */
static size_t attn__ssm_cbk_floats(int N) {
    return (size_t)16 * (8 * (size_t)N + 9 * ATTN__SSM_BT + 32 + (size_t)N * (4 * ATTN__SSM_BT + 2));
}

/* sin and cos of x on 16 lanes: k = round(x 2/pi) (the 1.5 2^23 trick: |x| < 6e6), x - k pi/2 in
   three FMAs (Cody-Waite, Cephes' constants), Cephes' sinf / cosf polynomials on [-pi/4, pi/4],
   the quadrant k mod 4 applied by selects: ~2 ulp for |x| < 1e4, as the forward's libm sinf /
   cosf to rounding. The complex scan's phase dt Im(A). */
#define ATTN__SSM_SINCOS_DEF(S, ATTR)                                                                            \
ATTR static void attn__w_sincos_##S(attn__w_##S x, attn__w_##S *sn, attn__w_##S *cs) {              \
    const attn__w_##S mg = attn__w_set_##S(12582912.0f), zero = attn__w_set_##S(0.0f);                          \
    const attn__w_##S k = attn__w_sub_##S(attn__w_add_##S(attn__w_mul_##S(x, attn__w_set_##S(0.636619772367581343f)), mg), mg);\
    const attn__w_##S k4 = attn__w_mul_##S(k, attn__w_set_##S(0.25f));                                         \
    const attn__w_##S fl = attn__w_sub_##S(attn__w_add_##S(attn__w_sub_##S(k4, attn__w_set_##S(0.375f)), mg), mg);\
    attn__w_##S q = attn__w_sub_##S(k, attn__w_mul_##S(fl, attn__w_set_##S(4.0f))), y, z, s, c, t;             \
    y = attn__w_fma_##S(k, attn__w_set_##S(-1.5703125f), x);                                                    \
    y = attn__w_fma_##S(k, attn__w_set_##S(-4.837512969970703125e-4f), y);                                      \
    y = attn__w_fma_##S(k, attn__w_set_##S(-7.54978995489188216e-8f), y);                                       \
    z = attn__w_mul_##S(y, y);                                                                                   \
    s = attn__w_fma_##S(z, attn__w_set_##S(-1.9515295891e-4f), attn__w_set_##S(8.3321608736e-3f));             \
    s = attn__w_fma_##S(z, s, attn__w_set_##S(-1.6666654611e-1f));                                              \
    s = attn__w_fma_##S(attn__w_mul_##S(z, y), s, y);                                                            \
    c = attn__w_fma_##S(z, attn__w_set_##S(2.443315711809948e-5f), attn__w_set_##S(-1.388731625493765e-3f));    \
    c = attn__w_fma_##S(z, c, attn__w_set_##S(4.166664568298827e-2f));                                           \
    c = attn__w_fma_##S(attn__w_mul_##S(z, z), c, attn__w_fma_##S(z, attn__w_set_##S(-0.5f), attn__w_set_##S(1.0f)));\
    t = attn__w_set_##S(1.5f);                                      /* quadrants 2, 3: negate, then 0, 1 */   \
    s = attn__w_sel_lt_##S(q, t, s, attn__w_sub_##S(zero, s));                                                   \
    c = attn__w_sel_lt_##S(q, t, c, attn__w_sub_##S(zero, c));                                                   \
    q = attn__w_sel_lt_##S(q, t, q, attn__w_sub_##S(q, attn__w_set_##S(2.0f)));                                  \
    t = attn__w_set_##S(0.5f);                                      /* quadrant 1: (c, -s) */                \
    *sn = attn__w_sel_lt_##S(q, t, s, c);                                                                        \
    *cs = attn__w_sel_lt_##S(q, t, c, attn__w_sub_##S(zero, s));                                                 \
}

/* The complex kernel on the real one's plan (16 channels in the lanes, the chunk recomputed
   from its checkpoint, tiles backwards), complex arithmetic per state n:
     e = exp(dt A) = 2^(dt Re A log2 e) (cos, sin)(dt Im A);  x_l = e x_{l-1} + dt u B_l
     y' = 2 Re(C . x) + D u;  backwards with g = dLoss/dx (re + i im):
     g += 2 dy' conj(C);  s = g conj(e x_{l-1}) (the gradient of dt A);  dA += dt s;
     ddt_A += Re(s conj(A));  q += Re(g conj(B));  dB = dt u g;  dC = 2 dy' conj(x_l);  g = conj(e) g
   Tiles of 8 tokens: a per-token dB / dC tile is 16 (re, im) rows for one register tree. */
#define ATTN__SSM_CBWD_DEF(S, ATTR)                                                                              \
ATTN__SSM_SINCOS_DEF(S, ATTR)                                                                                    \
ATTR static void attn__ssm_cbwd_##S(const attn__ssm_bk *k) {                                                     \
    const int N = k->N, N2 = 2 * k->N, nt = k->nt, T = ATTN__SSM_BT, bcc = k->bc_const;                         \
    const ptrdiff_t ldb = k->ldb;                                                                                \
    float *A2 = k->scratch, *An = A2 + 16 * (size_t)N2, *Bc = An + 16 * (size_t)N2, *Cc = Bc + 16 * (size_t)N2;  \
    float *tu = Cc + 16 * (size_t)N2, *tr = tu + 16 * T, *tdt = tr + 16 * T, *tdc = tdt + 16 * T;                \
    float *tdu = tdc + 16 * T, *tdy = tdu + 16 * T, *tz = tdy + 16 * T, *typ = tz + 16 * T;                      \
    float *tda = typ + 16 * T, *tv = tda + 16 * T, *tw = tv + 256;                                               \
    float *xs = tw + 256, *es = xs + (size_t)32 * N * (T + 1), *acc = k->acc, *tdq = tdc;                        \
    const attn__w_##S bias = attn__w_ld_##S(k->bias), dsk = attn__w_ld_##S(k->dsk), zero = attn__w_set_##S(0.0f);\
    const attn__w_##S one = attn__w_set_##S(1.0f), szero = attn__w_set_##S(ATTN__SILU_ZERO);                     \
    attn__w_##S accD = zero, accDb = zero;                                                                       \
    int j, n, s0;                                                                                                \
    attn__w_rows_in_##S(k->A, 0, N2, An);           /* An [2N][16]; A2: Re A log2 e (re rows only) */           \
    for (n = 0; n < N; ++n)                                                                                      \
        attn__w_st_##S(A2 + 32 * n, attn__w_clamp_##S(attn__w_mul_##S(attn__w_ld_##S(An + 32 * n),              \
                                                                      attn__w_set_##S(1.44269504088896341f))));  \
    if (bcc) { attn__w_rows_in_##S(k->Bc, 0, N2, Bc); attn__w_rows_in_##S(k->Cc, 0, N2, Cc); }                   \
    attn__w_rows_in_##S(k->u, 0, nt, tu);                                                                        \
    attn__w_rows_in_##S(k->dl, 0, nt, tr);                                                                       \
    for (j = 0; j < nt; ++j) {            /* r (tr), dt (tdt), clamped for the exp (tdc), dt u (tdu), D u (typ) */\
        const attn__w_##S uv = attn__w_ld_##S(tu + 16 * j), r = attn__w_add_##S(attn__w_ld_##S(tr + 16 * j), bias);\
        const attn__w_##S dt = k->softplus ? attn__w_softplus_##S(r) : r;                                        \
        attn__w_st_##S(tr + 16 * j, r);                                                                          \
        attn__w_st_##S(tdt + 16 * j, dt);                                                                        \
        attn__w_st_##S(tdc + 16 * j, attn__w_clamp_##S(dt));                                                    \
        attn__w_st_##S(tdu + 16 * j, attn__w_mul_##S(dt, uv));                                                   \
        attn__w_st_##S(typ + 16 * j, attn__w_mul_##S(dsk, uv));                                                  \
    }                                                                                                            \
    if (k->phase == 1) {                                                                                         \
        attn__w_rows_in_##S(k->dy, 0, nt, tdy);                                                                  \
        if (k->has_z) attn__w_rows_in_##S(k->z, 0, nt, tz);                                                      \
    }                                                                                                            \
    for (n = 0; n < N; ++n) {             /* the recurrence; phase 1 keeps xs[n][j] (before token j), es, y' */  \
        const attn__w_##S a = attn__w_ld_##S(A2 + 32 * n), ai = attn__w_ld_##S(An + 32 * n + 16);               \
        const attn__w_##S bnr = bcc ? attn__w_ld_##S(Bc + 32 * n) : zero, bni = bcc ? attn__w_ld_##S(Bc + 32 * n + 16) : zero;\
        const attn__w_##S cnr = bcc ? attn__w_ld_##S(Cc + 32 * n) : zero, cni = bcc ? attn__w_ld_##S(Cc + 32 * n + 16) : zero;\
        const float *Bt = bcc ? NULL : k->Bt + n * ldb, *Ct = bcc ? NULL : k->Ct + n * ldb;                      \
        float *xr = xs + (size_t)32 * (T + 1) * n, *er = es + (size_t)32 * T * n;                                \
        attn__w_##S xa = attn__w_ld_##S(k->x + 32 * n), xb = attn__w_ld_##S(k->x + 32 * n + 16);                \
        if (k->phase == 1) { attn__w_st_##S(xr, xa); attn__w_st_##S(xr + 16, xb); }                              \
        for (j = 0; j < nt; ++j) {                                                                               \
            const attn__w_##S mag = attn__w_exp2_##S(attn__w_mul_##S(attn__w_ld_##S(tdc + 16 * j), a));          \
            const attn__w_##S du = attn__w_ld_##S(tdu + 16 * j);                                                 \
            const attn__w_##S br = bcc ? bnr : attn__w_set_##S(Bt[2 * j]), bi = bcc ? bni : attn__w_set_##S(Bt[2 * j + 1]);\
            attn__w_##S sn, cs, e_r, e_i, nr;                                                                    \
            attn__w_sincos_##S(attn__w_mul_##S(attn__w_ld_##S(tdt + 16 * j), ai), &sn, &cs);                     \
            e_r = attn__w_mul_##S(mag, cs); e_i = attn__w_mul_##S(mag, sn);                                      \
            nr = attn__w_fma_##S(e_r, xa, attn__w_fma_##S(du, br, attn__w_mul_##S(attn__w_sub_##S(zero, e_i), xb)));\
            xb = attn__w_fma_##S(e_r, xb, attn__w_fma_##S(du, bi, attn__w_mul_##S(e_i, xa)));                    \
            xa = nr;                                                                                             \
            if (k->phase == 1) {                                                                                 \
                const attn__w_##S cr = bcc ? cnr : attn__w_set_##S(Ct[2 * j]), ci = bcc ? cni : attn__w_set_##S(Ct[2 * j + 1]);\
                const attn__w_##S re = attn__w_sub_##S(attn__w_mul_##S(cr, xa), attn__w_mul_##S(ci, xb));       \
                attn__w_st_##S(er + 32 * j, e_r); attn__w_st_##S(er + 32 * j + 16, e_i);                         \
                attn__w_st_##S(xr + 32 * (j + 1), xa); attn__w_st_##S(xr + 32 * (j + 1) + 16, xb);               \
                attn__w_st_##S(typ + 16 * j, attn__w_add_##S(attn__w_ld_##S(typ + 16 * j), attn__w_add_##S(re, re)));    \
            }                                                                                                    \
        }                                                                                                        \
        if (k->phase == 0) { attn__w_st_##S(k->x + 32 * n, xa); attn__w_st_##S(k->x + 32 * n + 16, xb); }        \
    }                                                                                                            \
    if (k->phase == 0) return;                                                                                   \
    for (j = 0; j < nt; ++j) {            /* the gate: dz (tz), dLoss/dy' (tdy); dD */                           \
        attn__w_##S dy = attn__w_ld_##S(tdy + 16 * j);                                                           \
        if (k->has_z) {                                                                                          \
            const attn__w_##S z = attn__w_ld_##S(tz + 16 * j), sg = attn__w_sig_##S(z);                         \
            const attn__w_##S dz = attn__w_mul_##S(attn__w_mul_##S(dy, attn__w_ld_##S(typ + 16 * j)),           \
                                                   attn__w_mul_##S(sg, attn__w_fma_##S(z, attn__w_sub_##S(one, sg), one)));\
            attn__w_st_##S(tz + 16 * j, attn__w_sel_lt_##S(z, szero, zero, dz));                                 \
            dy = attn__w_sel_lt_##S(z, szero, zero, attn__w_mul_##S(dy, attn__w_mul_##S(z, sg)));               \
            attn__w_st_##S(tdy + 16 * j, dy);                                                                    \
        }                                                                                                        \
        accD = attn__w_fma_##S(dy, attn__w_ld_##S(tu + 16 * j), accD);                                           \
        attn__w_st_##S(tda + 16 * j, zero);                                                                      \
        attn__w_st_##S(tdq + 16 * j, zero);              /* tdc is done: q's sums there */                       \
    }                                                                                                            \
    for (n = 0; n < 6 * N; ++n) attn__w_st_##S(acc + 16 * n, zero);                                              \
    for (s0 = (nt - 1) / 8 * 8; s0 >= 0; s0 -= 8) {      /* tiles of 8 tokens, last first */                   \
        const int m = ATTN__MIN(8, nt - s0);                                                                     \
        for (n = 0; n < N; ++n) {                                                                                \
            const attn__w_##S a_r = attn__w_ld_##S(An + 32 * n), a_i = attn__w_ld_##S(An + 32 * n + 16);         \
            const attn__w_##S bnr = bcc ? attn__w_ld_##S(Bc + 32 * n) : zero, bni = bcc ? attn__w_ld_##S(Bc + 32 * n + 16) : zero;\
            const attn__w_##S cnr = bcc ? attn__w_ld_##S(Cc + 32 * n) : zero, cni = bcc ? attn__w_ld_##S(Cc + 32 * n + 16) : zero;\
            const float *Bt = bcc ? NULL : k->Bt + n * ldb, *Ct = bcc ? NULL : k->Ct + n * ldb;                  \
            const float *xr = xs + (size_t)32 * (T + 1) * n, *er = es + (size_t)32 * T * n;                      \
            attn__w_##S g_r = attn__w_ld_##S(k->gr + 32 * n), g_i = attn__w_ld_##S(k->gr + 32 * n + 16);         \
            attn__w_##S dAr = attn__w_ld_##S(acc + 32 * n), dAi = attn__w_ld_##S(acc + 32 * n + 16);             \
            attn__w_##S dBr = attn__w_ld_##S(acc + 32 * (N + n)), dBi = attn__w_ld_##S(acc + 32 * (N + n) + 16);  \
            attn__w_##S dCr = attn__w_ld_##S(acc + 32 * (2 * N + n)), dCi = attn__w_ld_##S(acc + 32 * (2 * N + n) + 16);\
            attn__w_##S xlr = attn__w_ld_##S(xr + 32 * (s0 + m)), xli = attn__w_ld_##S(xr + 32 * (s0 + m) + 16); \
            for (j = m - 1; j >= 0; --j) {                                                                       \
                const int l = s0 + j;                                                                            \
                const attn__w_##S dyp = attn__w_ld_##S(tdy + 16 * l), d2 = attn__w_add_##S(dyp, dyp);            \
                const attn__w_##S xpr = attn__w_ld_##S(xr + 32 * l), xpi = attn__w_ld_##S(xr + 32 * l + 16);     \
                const attn__w_##S e_r = attn__w_ld_##S(er + 32 * l), e_i = attn__w_ld_##S(er + 32 * l + 16);     \
                const attn__w_##S cr = bcc ? cnr : attn__w_set_##S(Ct[2 * l]), ci = bcc ? cni : attn__w_set_##S(Ct[2 * l + 1]);\
                const attn__w_##S br = bcc ? bnr : attn__w_set_##S(Bt[2 * l]), bi = bcc ? bni : attn__w_set_##S(Bt[2 * l + 1]);\
                const attn__w_##S gxr = attn__w_fma_##S(d2, cr, g_r), gxi = attn__w_sub_##S(g_i, attn__w_mul_##S(d2, ci));\
                const attn__w_##S wr = attn__w_sub_##S(attn__w_mul_##S(e_r, xpr), attn__w_mul_##S(e_i, xpi));   \
                const attn__w_##S wi = attn__w_fma_##S(e_r, xpi, attn__w_mul_##S(e_i, xpr));                     \
                const attn__w_##S sr = attn__w_fma_##S(gxr, wr, attn__w_mul_##S(gxi, wi));                       \
                const attn__w_##S si = attn__w_sub_##S(attn__w_mul_##S(gxi, wr), attn__w_mul_##S(gxr, wi));      \
                const attn__w_##S dt = attn__w_ld_##S(tdt + 16 * l), du = attn__w_ld_##S(tdu + 16 * l);          \
                dAr = attn__w_fma_##S(sr, dt, dAr);                                                              \
                dAi = attn__w_fma_##S(si, dt, dAi);                                                              \
                attn__w_st_##S(tda + 16 * l, attn__w_fma_##S(sr, a_r, attn__w_fma_##S(si, a_i, attn__w_ld_##S(tda + 16 * l))));\
                attn__w_st_##S(tdq + 16 * l, attn__w_fma_##S(gxr, br, attn__w_fma_##S(gxi, bi, attn__w_ld_##S(tdq + 16 * l))));\
                if (bcc) {                                                                                       \
                    dBr = attn__w_fma_##S(gxr, du, dBr); dBi = attn__w_fma_##S(gxi, du, dBi);                    \
                    dCr = attn__w_fma_##S(d2, xlr, dCr); dCi = attn__w_sub_##S(dCi, attn__w_mul_##S(d2, xli));   \
                } else {                                                                                         \
                    attn__w_st_##S(tv + 32 * j, attn__w_mul_##S(gxr, du));                                       \
                    attn__w_st_##S(tv + 32 * j + 16, attn__w_mul_##S(gxi, du));                                  \
                    attn__w_st_##S(tw + 32 * j, attn__w_mul_##S(d2, xlr));                                       \
                    attn__w_st_##S(tw + 32 * j + 16, attn__w_sub_##S(zero, attn__w_mul_##S(d2, xli)));           \
                }                                                                                                \
                g_r = attn__w_fma_##S(e_r, gxr, attn__w_mul_##S(e_i, gxi));                                      \
                g_i = attn__w_sub_##S(attn__w_mul_##S(e_r, gxi), attn__w_mul_##S(e_i, gxr));                     \
                xlr = xpr; xli = xpi;                                                                            \
            }                                                                                                    \
            attn__w_st_##S(k->gr + 32 * n, g_r); attn__w_st_##S(k->gr + 32 * n + 16, g_i);                       \
            attn__w_st_##S(acc + 32 * n, dAr); attn__w_st_##S(acc + 32 * n + 16, dAi);                           \
            if (bcc) {                                                                                           \
                attn__w_st_##S(acc + 32 * (N + n), dBr); attn__w_st_##S(acc + 32 * (N + n) + 16, dBi);           \
                attn__w_st_##S(acc + 32 * (2 * N + n), dCr); attn__w_st_##S(acc + 32 * (2 * N + n) + 16, dCi);   \
            } else {                                                                                             \
                attn__w_hred_##S(tv, k->pB + n * k->ldp + 2 * s0, 2 * m, k->padd);                               \
                attn__w_hred_##S(tw, k->pC + n * k->ldp + 2 * s0, 2 * m, k->padd);                               \
            }                                                                                                    \
        }                                                                                                        \
    }                                                                                                            \
    for (j = 0; j < nt; ++j) {            /* du (tdq), ddelta (tda); ddelta_bias */                              \
        const attn__w_##S q = attn__w_ld_##S(tdq + 16 * j), r = attn__w_ld_##S(tr + 16 * j);                     \
        attn__w_##S ddt = attn__w_fma_##S(attn__w_ld_##S(tu + 16 * j), q, attn__w_ld_##S(tda + 16 * j));         \
        if (k->softplus) ddt = attn__w_sel_lt_##S(attn__w_set_##S(20.0f), r, ddt, attn__w_mul_##S(ddt, attn__w_sig_##S(r)));\
        accDb = attn__w_add_##S(accDb, ddt);                                                                     \
        attn__w_st_##S(tdq + 16 * j, attn__w_fma_##S(attn__w_ld_##S(tdt + 16 * j), q,                            \
                                                     attn__w_mul_##S(attn__w_ld_##S(tdy + 16 * j), dsk)));       \
        attn__w_st_##S(tda + 16 * j, ddt);                                                                       \
    }                                                                                                            \
    attn__w_rows_out_##S(tdq, k->du, nt);                                                                        \
    attn__w_rows_out_##S(tda, k->ddt, nt);                                                                       \
    if (k->has_z) attn__w_rows_out_##S(tz, k->dz, nt);                                                           \
    attn__w_st_##S(acc + 16 * 6 * (size_t)N, accD);                                                              \
    attn__w_st_##S(acc + 16 * 6 * (size_t)N + 16, accDb);                                                        \
}
/* 2^r = 1 + r (C1 + r (C2 + r (C3 + r (C4 + r C5)))) on |r| <= 1/2, relative error 9.2e-8: the
   scan kernels' exp(dt A) = 2^(dt A log2 e) (A prescaled by log2 e) */
#define ATTN__EXP2_C1 0.6931469776f
#define ATTN__EXP2_C2 0.2402224207f
#define ATTN__EXP2_C3 0.0555073373f
#define ATTN__EXP2_C4 0.0096715134f
#define ATTN__EXP2_C5 0.0013264732f
/* SiLU z / (1 + e^-z) below this is -0 on every ISA: e^-z would overflow (the vector exps clamp
   instead of giving inf, which made SiLU(-3e38) -1.1), and |z e^z| < 2e-36 there anyway. */
#define ATTN__SILU_ZERO (-87.0f)

/* One ISA's kernels: the exact-attention tile kernels (qk .. store), then the vector layer. */
typedef struct attn__isa {
    const char *name;
    /* 1: the forward copies f32 K/V rows that are not contiguous (e.g. [B, S, H, D], rows
       H*D floats apart) into fp32 rows, as it does f16/bf16 ones (through the head cache, once
       per thread and KV head). Measured on an AMD EPYC Zen 4 (family 25 model 17), one thread,
       S 2048, D 128, H 8, [B, S, H, D]: AVX2 61 -> 74 GFLOP/s copying per tile and key block,
       87 with the head cache (89 on [B, H, S, D]); AVX-512 read such rows in place, since the
       per-tile copy cost it 8%, until the head cache: 182-183 ms against 196-202 in place
       (170-179 on [B, H, S, D]). NEON and scalar read them in place (not measured). */
    int pack_strided_kv;
    /* S[j][r] = sum_d K[j][d] QT[d][r], j < nk, r < nlanes (a multiple of 16) */
    void (*qk)(const float *K, ptrdiff_t ldk, int nk, const float *QT, int nlanes, int D, float *S);
    /* the same for n <= 16 rows from row-major QR [16][ldq] (decoding's narrow tiles) */
    void (*qk_narrow)(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq, int n, int D, float *S);
    /* softcap, ALiBi, mask, then online softmax of S's nk lines: S becomes P, m/l/alpha updated */
    void (*softmax)(float *S, int nk, int nlanes, int c0, const attn__smx *X);
    /* acc[r][c] = alpha[r] acc[r][c] + sum_j S[j][r] V[j][c] for r < nrows; may also compute
       rows up to the next multiple of 8 (acc has ATTN__BQ rows) */
    void (*pv)(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
               const float *alpha, float *acc, size_t ldo);
    /* n elements of dtype t -> fp32, times mul */
    void (*load)(const void *src, attn_dtype t, float *dst, int n, float mul);
    /* n fp32 values times mul -> dtype t, bit for bit attn__store_row */
    void (*store)(void *dst, attn_dtype t, const float *src, int n, float mul);
    /* ---- the vector layer: the row operations every family's kernels are written with
       (attn__vec() returns the table of the CPU's best ISA). Rows are fp32 and contiguous, any
       length n >= 0 (tails masked, never read past n), any alignment; load and store above
       convert f16/bf16 storage. The reductions sum in a fixed, length-determined order, so a
       result never depends on threads or on where a row sits in memory. */
    float (*dot)(const float *a, const float *b, int n);          /* sum_i a[i] b[i] */
    void (*axpy)(float *y, float a, const float *x, int n);       /* y[i] += a x[i] */
    void (*scal)(float *y, float a, int n);                       /* y[i] *= a */
    float (*max)(const float *x, int n);                          /* max_i x[i]; -inf when n = 0 */
    /* y[i] = exp(x[i] - m) (y may be x), returns sum_i y[i]; exp(-inf) = 0, so masked entries
       (-inf) drop out. The SIMD exp is the polynomial of the softmax kernels (1 ulp). */
    float (*exp_sum)(float *y, const float *x, float m, int n);
    /* y[i] = a[i] b[i] + c x[i]; y may be a, b or x (element i is read before it is written) */
    void (*madd)(float *y, const float *a, const float *b, float c, const float *x, int n);
    /* Mamba's selective scan on one tile of 16 channels (attn__ssm_k): channels in the lanes,
       the state in registers / L1, exp and softplus / silu vectorised */
    void (*ssm_scan)(const attn__ssm_k *k);
    /* linear attention's feature map phi = elu + 1: dy NULL: y[i] = x[i] + 1 if x[i] > 0, else
       exp(x[i]); dy given: its gradient y[i] = dy[i] phi'(x[i]) (dy[i] if x[i] > 0, else dy[i]
       exp(x[i])). NaN stays NaN; y may be x or dy. Branch-free: the signs of q and k rows are
       what a branch predictor cannot guess (scalar branches measured 220 ns a 64-float row). */
    void (*elu1)(float *y, const float *x, const float *dy, int n);
    /* the same gradient from the features f = phi(x) already computed (no exp): y[i] = dy[i] if
       x[i] > 0, else dy[i] f[i]; bitwise elu1's. y may be x, f or dy. */
    void (*elu1_grad)(float *y, const float *x, const float *f, const float *dy, int n);
    /* the selective scan's backward on one piece of 16 channels and one chunk (attn__ssm_bk) */
    void (*ssm_bwd)(const attn__ssm_bk *k);
    /* the same with complex A, B, C (attn__ssm_bk's complex layout, see attn__ssm_cbk_floats) */
    void (*ssm_cbwd)(const attn__ssm_bk *k);
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

/* The visibility rule (attn__visible, 3.7) in the form the kernels evaluate per row ("lane"):
   key j is visible from the row iff j <= cap && (j < pre || lo <= j <= hi). attn__lane_rule
   gives a row's cap/lo/hi for query position p of a sequence with Lk keys, attn__lane_pre the
   keys every row sees (sinks, global keys); with dilation 1 the form equals attn__visible, and
   dilation is applied per element on top of it (attn__visible itself). Every tile kernel -
   forward, bf16, backward - derives its per-row ranges here and only here. */
ATTN__HD static void attn__lane_rule(int causal, int window_left, int window_right, int global, long long p, long long Lk,
                            int32_t *cap, int32_t *lo, int32_t *hi) {
    long long c = causal ? ATTN__MIN(p, Lk - 1) : Lk - 1, a = 0, b = Lk - 1;
    if (p >= global) {
        if (window_left) a = p - (long long)window_left;
        if (window_right) b = p + (long long)window_right;
    }
    *cap = (int32_t)ATTN__MAX(c, -1LL);
    *lo = (int32_t)ATTN__MAX(a, 0LL);
    *hi = (int32_t)ATTN__MIN(b, Lk - 1);
}
ATTN__HD static int attn__lane_pre(int sink, int global, long long Lk) { return (int)ATTN__MIN((long long)ATTN__MAX(sink, global), Lk); }
ATTN__HD static int attn__lane_ok(int32_t cap, int32_t lo, int32_t hi, int pre, long long j) {
    return j <= cap && (j < pre || (j >= lo && j <= hi));
}
/* Shared by every ISA: the visibility rule for one lane, as the SIMD code evaluates it. */
static int attn__lane_visible(const attn__smx *X, int r, int j) {
    return attn__lane_ok(X->cap[r], X->lo[r], X->hi[r], X->pre, j);
}

static void attn__softmax_scalar(float *S, int nk, int nlanes, int c0, const attn__smx *X) {
    int r, j;
    for (r = 0; r < nlanes; ++r) {
        float mx = -INFINITY, mnew, msafe, alpha, sum = 0.0f;
        for (j = 0; j < nk; ++j) {
            float s = S[(size_t)j * ATTN__BQ + r];
            if (X->softcap > 0.0f) s = X->softcap * tanhf(s / X->softcap);
            if (X->alibi) s -= X->slope[r] * fabsf(X->pos[r] - (float)j);
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

/* The scalar vector layer: the reference the SIMD ones are tested against. */
static float attn__dot_scalar(const float *a, const float *b, int n) {
    float s = 0.0f;
    int i;
    for (i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}
static void attn__axpy_scalar(float *y, float a, const float *x, int n) {
    int i;
    for (i = 0; i < n; ++i) y[i] += a * x[i];
}
static void attn__scal_scalar(float *y, float a, int n) {
    int i;
    for (i = 0; i < n; ++i) y[i] *= a;
}
static float attn__max_scalar(const float *x, int n) {
    float m = -INFINITY;
    int i;
    for (i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
    return m;
}
static float attn__exp_sum_scalar(float *y, const float *x, float m, int n) {
    float s = 0.0f;
    int i;
    for (i = 0; i < n; ++i) { y[i] = expf(x[i] - m); s += y[i]; }
    return s;
}

static void attn__madd_scalar(float *y, const float *a, const float *b, float c, const float *x, int n) {
    int i;
    for (i = 0; i < n; ++i) y[i] = a[i] * b[i] + c * x[i];
}

/* z / (1 + e^-z), -0 below ATTN__SILU_ZERO (so -inf gives -0, not NaN); NaN stays NaN */
static float attn__silu1(float z) { return z < ATTN__SILU_ZERO ? -0.0f : z / (1.0f + expf(-z)); }

/* softplus with PyTorch's threshold: v > 20 stays v */
static float attn__softplus_scalar(float v) { return v > 20.0f ? v : log1pf(expf(v)); }

static void attn__ssm_scan_scalar(const attn__ssm_k *k) {
    const int N = k->N;
    float *x = k->scratch;
    int c, t, n;
    for (c = 0; c < k->w; ++c) {
        const float *A = k->A[c];
        for (n = 0; n < N; ++n) x[n] = k->xin[c][n];
        for (t = 0; t < k->nt; ++t) {
            const float uv = k->u[c][t], dt = k->softplus ? attn__softplus_scalar(k->dl[c][t] + k->bias[c]) : k->dl[c][t] + k->bias[c];
            const float du = dt * uv;
            float y = k->dsk[c] * uv;
            if (k->bc_const)
                for (n = 0; n < N; ++n) {
                    x[n] = expf(dt * A[n]) * x[n] + du * k->Bc[c][n];
                    y += k->Cc[c][n] * x[n];
                }
            else
                for (n = 0; n < N; ++n) {
                    x[n] = expf(dt * A[n]) * x[n] + du * k->Bt[(ptrdiff_t)n * k->ldb + t];
                    y += k->Ct[(ptrdiff_t)n * k->ldb + t] * x[n];
                }
            if (k->has_z) y *= attn__silu1(k->z[c][t]);
            k->y[c][t] = y;
        }
        for (n = 0; n < N; ++n) k->xout[c][n] = x[n];
    }
}

static void attn__elu1_scalar(float *y, const float *x, const float *dy, int n) {
    int i;
    for (i = 0; i < n; ++i) {
        const float v = x[i], e = v > 0.0f ? 1.0f : (v <= 0.0f ? expf(v) : v);
        y[i] = dy ? dy[i] * e : (v > 0.0f ? v + 1.0f : e);
    }
}
static void attn__elu1_grad_scalar(float *y, const float *x, const float *f, const float *dy, int n) {
    int i;
    for (i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? dy[i] : dy[i] * f[i];
}
/* The backward kernel's 16-lane primitives on plain floats (attn__ssm_bwd_sc: the scalar ISA) */
typedef struct attn__w_sc { float v[16]; } attn__w_sc;
static attn__w_sc attn__w_ld_sc(const float *p) { attn__w_sc r; memcpy(r.v, p, sizeof r.v); return r; }
static void attn__w_st_sc(float *p, attn__w_sc a) { memcpy(p, a.v, sizeof a.v); }
static attn__w_sc attn__w_set_sc(float s) {
    attn__w_sc r;
    int i;
    memset(&r, 0, sizeof r);
    for (i = 0; i < 16; ++i) r.v[i] = s;
    return r;
}
static attn__w_sc attn__w_add_sc(attn__w_sc a, attn__w_sc b) { int i; for (i = 0; i < 16; ++i) a.v[i] += b.v[i]; return a; }
static attn__w_sc attn__w_sub_sc(attn__w_sc a, attn__w_sc b) { int i; for (i = 0; i < 16; ++i) a.v[i] -= b.v[i]; return a; }
static attn__w_sc attn__w_mul_sc(attn__w_sc a, attn__w_sc b) { int i; for (i = 0; i < 16; ++i) a.v[i] *= b.v[i]; return a; }
static attn__w_sc attn__w_fma_sc(attn__w_sc a, attn__w_sc b, attn__w_sc c) {
    int i;
    for (i = 0; i < 16; ++i) c.v[i] += a.v[i] * b.v[i];
    return c;
}
static attn__w_sc attn__w_exp2_sc(attn__w_sc t) { int i; for (i = 0; i < 16; ++i) t.v[i] = exp2f(t.v[i]); return t; }
static attn__w_sc attn__w_clamp_sc(attn__w_sc a) {
    int i;
    for (i = 0; i < 16; ++i) a.v[i] = a.v[i] < -1e18f ? -1e18f : a.v[i] > 1e18f ? 1e18f : a.v[i];
    return a;
}
static attn__w_sc attn__w_softplus_sc(attn__w_sc a) { int i; for (i = 0; i < 16; ++i) a.v[i] = attn__softplus_scalar(a.v[i]); return a; }
/* 1 / (1 + e^-z) */
static attn__w_sc attn__w_sig_sc(attn__w_sc a) { int i; for (i = 0; i < 16; ++i) a.v[i] = 1.0f / (1.0f + expf(-a.v[i])); return a; }
/* a < b ? x : y per lane */
static attn__w_sc attn__w_sel_lt_sc(attn__w_sc a, attn__w_sc b, attn__w_sc x, attn__w_sc y) {
    int i;
    for (i = 0; i < 16; ++i) y.v[i] = a.v[i] < b.v[i] ? x.v[i] : y.v[i];
    return y;
}
/* dst[j][16] = rows[c][t0 + j], j < m */
static void attn__w_rows_in_sc(const float *const *rows, int t0, int m, float *dst) {
    int j, c;
    for (j = 0; j < m; ++j)
        for (c = 0; c < 16; ++c) dst[16 * j + c] = rows[c][t0 + j];
}
/* rows[c][j] = src[j][16], j < m */
static void attn__w_rows_out_sc(const float *src, float *const *rows, int m) {
    int j, c;
    for (j = 0; j < m; ++j)
        for (c = 0; c < 16; ++c) rows[c][j] = src[16 * j + c];
}
/* out[j] = (add ? out[j] : 0) + sum_c v[j][c] for j < m (each ISA's fixed lane order) */
static void attn__w_hred_sc(const float *v, float *out, int m, int add) {
    int j, c;
    for (j = 0; j < m; ++j) {
        float s = 0.0f;
        for (c = 0; c < 16; ++c) s += v[16 * j + c];
        out[j] = add ? out[j] + s : s;
    }
}
ATTN__SSM_BWD_DEF(sc, )
ATTN__SSM_CBWD_DEF(sc, )

static const attn__isa attn__isa_scalar = {
    "scalar", 0, attn__qk_scalar, attn__qk_narrow_scalar, attn__softmax_scalar, attn__pv_scalar, attn__load_row, attn__store_row,
    attn__dot_scalar, attn__axpy_scalar, attn__scal_scalar, attn__max_scalar, attn__exp_sum_scalar, attn__madd_scalar,
    attn__ssm_scan_scalar, attn__elu1_scalar, attn__elu1_grad_scalar, attn__ssm_bwd_sc, attn__ssm_cbwd_sc
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
                    __m512 dist = _mm512_sub_ps(pos, _mm512_set1_ps((float)j));
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

/* 16 elements of dtype t at p, as fp32. */
ATTN__T512 static ATTN__INLINE __m512 attn__ld16_512(const void *p, attn_dtype t) {
    if (t == ATTN_F32) return _mm512_loadu_ps((const float *)p);
    if (t == ATTN_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

ATTN__T512 static void attn__load_avx512(const void *src, attn_dtype t, float *dst, int n, float mul) {
    const __m512 mv = _mm512_set1_ps(mul);
    const size_t es = attn__dtype_size(t);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_mul_ps(mv, attn__ld16_512((const char *)src + (size_t)i * es, t)));
    if (i < n) attn__load_row((const char *)src + (size_t)i * es, t, dst + i, n - i, mul);
}

/* 16 fp32 lanes -> 16 f16 or bf16, rounded as attn__f32_to_f16 / attn__f32_to_bf16 do (to
   nearest even; a NaN becomes the same quiet NaN, whatever its payload). vcvtps2ph rounds
   exactly; vcvtneps2bf16 would flush denormals, so bf16 rounds in integers. */
ATTN__T512 static ATTN__INLINE __m256i attn__half16_512(__m512 x, attn_dtype t) {
    const __m512i u = _mm512_castps_si512(x), sign = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x8000));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    if (t == ATTN_F16)                  /* AVX512F only: the NaN fix-up in 32-bit lanes */
        return _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(
            _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)), nan,
            _mm512_or_si512(sign, _mm512_set1_epi32(0x7e00))));
    {
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
        return _mm512_cvtepi32_epi16(_mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    }
}

ATTN__T512 static void attn__store_avx512(void *dst, attn_dtype t, const float *src, int n, float mul) {
    const __m512 mv = _mm512_set1_ps(mul);
    int i = 0;
    if (t == ATTN_F32)
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps((float *)dst + i, _mm512_mul_ps(mv, _mm512_loadu_ps(src + i)));
    else
        for (; i + 16 <= n; i += 16)
            _mm256_storeu_si256((__m256i *)(void *)((uint16_t *)dst + i), attn__half16_512(_mm512_mul_ps(mv, _mm512_loadu_ps(src + i)), t));
    if (i < n) attn__store_row((char *)dst + (size_t)i * attn__dtype_size(t), t, src + i, n - i, mul);
}

/* The AVX-512 vector layer: 16 lanes, masked tails. */
ATTN__T512 static ATTN__INLINE __mmask16 attn__tail16(int n) { return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u); }
ATTN__T512 static float attn__dot_avx512(const float *a, const float *b, int n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
    }
    for (; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        s0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), s0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}
ATTN__T512 static void attn__axpy_avx512(float *y, float a, const float *x, int n) {
    const __m512 va = _mm512_set1_ps(a);
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(k, x + i), _mm512_maskz_loadu_ps(k, y + i)));
    }
}
ATTN__T512 static void attn__scal_avx512(float *y, float a, int n) {
    const __m512 va = _mm512_set1_ps(a);
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(va, _mm512_maskz_loadu_ps(k, y + i)));
    }
}
ATTN__T512 static float attn__max_avx512(const float *x, int n) {
    __m512 m = _mm512_set1_ps(-INFINITY);
    int i;
    for (i = 0; i < n; i += 16) m = _mm512_max_ps(m, _mm512_mask_loadu_ps(m, attn__tail16(n - i), x + i));
    return _mm512_reduce_max_ps(m);
}
ATTN__T512 static float attn__exp_sum_avx512(float *y, const float *x, float m, int n) {
    const __m512 vm = _mm512_set1_ps(m);
    __m512 s = _mm512_setzero_ps();
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        const __m512 e = _mm512_maskz_mov_ps(k, attn__exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm)));
        _mm512_mask_storeu_ps(y + i, k, e);
        s = _mm512_add_ps(s, e);
    }
    return _mm512_reduce_add_ps(s);
}

ATTN__T512 static void attn__madd_avx512(float *y, const float *a, const float *b, float c, const float *x, int n) {
    const __m512 vc = _mm512_set1_ps(c);
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        const __m512 cx = _mm512_mul_ps(vc, _mm512_maskz_loadu_ps(k, x + i));
        _mm512_mask_storeu_ps(y + i, k, _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, a + i), _mm512_maskz_loadu_ps(k, b + i), cx));
    }
}

ATTN__T512 static void attn__elu1_avx512(float *y, const float *x, const float *dy, int n) {
    const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f);
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(k, x + i);
        const __mmask16 pos = _mm512_cmp_ps_mask(v, zero, _CMP_GT_OQ), le = _mm512_cmp_ps_mask(v, zero, _CMP_LE_OQ);
        const __m512 e = _mm512_mask_blend_ps(le, v, attn__exp512(_mm512_min_ps(zero, v)));   /* NaN: v */
        const __m512 r = dy ? _mm512_mul_ps(_mm512_maskz_loadu_ps(k, dy + i), _mm512_mask_blend_ps(pos, e, one))
                            : _mm512_mask_blend_ps(pos, e, _mm512_add_ps(v, one));
        _mm512_mask_storeu_ps(y + i, k, r);
    }
}

ATTN__T512 static void attn__elu1_grad_avx512(float *y, const float *x, const float *f, const float *dy, int n) {
    int i;
    for (i = 0; i < n; i += 16) {
        const __mmask16 k = attn__tail16(n - i);
        const __m512 g = _mm512_maskz_loadu_ps(k, dy + i);
        const __mmask16 pos = _mm512_cmp_ps_mask(_mm512_maskz_loadu_ps(k, x + i), _mm512_setzero_ps(), _CMP_GT_OQ);
        _mm512_mask_storeu_ps(y + i, k, _mm512_mask_blend_ps(pos, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(k, f + i)), g));
    }
}

/* ---- the selective scan's fused kernel (attn__ssm_k) on 16 lanes ---- */

/* 2^t for finite t (the scan's exp(dt A) = 2^(dt A log2 e), A prescaled, |dt|, |A log2 e|
   clamped to 1e18 so t stays finite): t = n + r, |r| <= 1/2, 2^r = 1 + r P(r) with a degree-4
   P fitted to 2^r on [-1/2, 1/2] (relative error 9.2e-8, so about 1.5 ulp with the rounding),
   2^n by scalef (0 and inf past the float range). The coefficients ATTN__EXP2_C* (3.5's top)
   are every ISA's. */
ATTN__T512 static ATTN__INLINE __m512 attn__exp2_512(__m512 t) {
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), r = _mm512_sub_ps(t, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(ATTN__EXP2_C5), r, _mm512_set1_ps(ATTN__EXP2_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ATTN__EXP2_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ATTN__EXP2_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(ATTN__EXP2_C1));
    return _mm512_scalef_ps(_mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f)), n);
}
/* max(-1e18, min(1e18, v)), NaN kept */
ATTN__T512 static ATTN__INLINE __m512 attn__clamp18_512(__m512 v) {
    return _mm512_max_ps(_mm512_set1_ps(-1e18f), _mm512_min_ps(_mm512_set1_ps(1e18f), v));
}

/* 16 x 16 transpose in registers: lane j of r[i] becomes lane i of r[j] */
ATTN__T512 static ATTN__INLINE void attn__tr16_512(__m512 *r) {
    __m512 t[16];
    int i, j;
    for (i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; ++i) {           /* r[4i + j], 128-bit lane l: rows 4i..4i+3 of column 4l + j */
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (j = 0; j < 4; ++j) {
        const __m512 a = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88), b = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
        const __m512 c = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88), d = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
        t[j] = _mm512_shuffle_f32x4(a, c, 0x88);
        t[8 + j] = _mm512_shuffle_f32x4(a, c, 0xdd);
        t[4 + j] = _mm512_shuffle_f32x4(b, d, 0x88);
        t[12 + j] = _mm512_shuffle_f32x4(b, d, 0xdd);
    }
    for (i = 0; i < 16; ++i) r[i] = t[i];
}
/* dst[n][16] = rows[c][n] for n < N */
ATTN__T512 static void attn__ssm_in512(const float *const *rows, int N, float *dst) {
    __m512 r[16];
    int c, n0, n;
    for (n0 = 0; n0 + 16 <= N; n0 += 16) {
        for (c = 0; c < 16; ++c) r[c] = _mm512_loadu_ps(rows[c] + n0);
        attn__tr16_512(r);
        for (c = 0; c < 16; ++c) _mm512_storeu_ps(dst + (size_t)(n0 + c) * 16, r[c]);
    }
    for (n = n0; n < N; ++n)
        for (c = 0; c < 16; ++c) dst[(size_t)n * 16 + c] = rows[c][n];
}
/* rows[c][n] = src[n][16] for n < N */
ATTN__T512 static void attn__ssm_out512(const float *src, float *const *rows, int N) {
    __m512 r[16];
    int c, n0, n;
    for (n0 = 0; n0 + 16 <= N; n0 += 16) {
        for (c = 0; c < 16; ++c) r[c] = _mm512_loadu_ps(src + (size_t)(n0 + c) * 16);
        attn__tr16_512(r);
        for (c = 0; c < 16; ++c) _mm512_storeu_ps(rows[c] + n0, r[c]);
    }
    for (n = n0; n < N; ++n)
        for (c = 0; c < 16; ++c) rows[c][n] = src[(size_t)n * 16 + c];
}
/* 1 / d by rcp14 and one Newton step (about 1 ulp; d finite and nonzero) */
ATTN__T512 static ATTN__INLINE __m512 attn__rcp512(__m512 d) {
    const __m512 r = _mm512_rcp14_ps(d);
    return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r);
}
/* softplus, threshold 20: log1p(e^v) = log(u) e / (u - 1), u = 1 + e (the correction of u's
   rounding), log u = k ln 2 + 2 atanh(s), u = 2^k m, m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1),
   the atanh series to s^9 (|s| < 0.172: < 2^-30); e^v = 2^(v log2 e) (v clamped to 1e18). */
ATTN__T512 static ATTN__INLINE __m512 attn__softplus512(__m512 v) {
    const __m512 one = _mm512_set1_ps(1.0f);
    const __m512 e = attn__exp2_512(_mm512_mul_ps(attn__clamp18_512(v), _mm512_set1_ps(1.44269504088896341f)));
    const __m512 u = _mm512_add_ps(one, e), d = _mm512_sub_ps(u, one);
    const __m512i bits = _mm512_castps_si512(u), man = _mm512_and_si512(bits, _mm512_set1_epi32(0x007fffff));
    const __mmask16 big = _mm512_cmpgt_epi32_mask(man, _mm512_set1_epi32(0x003504f3));
    const __m512 m = _mm512_castsi512_ps(_mm512_or_si512(man, _mm512_mask_blend_epi32(big, _mm512_set1_epi32(0x3f800000),
                                                                                       _mm512_set1_epi32(0x3f000000))));
    __m512i ki = _mm512_sub_epi32(_mm512_srli_epi32(bits, 23), _mm512_set1_epi32(127));
    __m512 s, s2, p, lg;
    const __mmask16 d0 = _mm512_cmp_ps_mask(d, _mm512_setzero_ps(), _CMP_EQ_OQ);
    ki = _mm512_mask_add_epi32(ki, big, ki, _mm512_set1_epi32(1));
    s = _mm512_mul_ps(_mm512_sub_ps(m, one), attn__rcp512(_mm512_add_ps(m, one)));
    s2 = _mm512_mul_ps(s, s);
    p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 9), s2, _mm512_set1_ps(1.0f / 7));
    p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(1.0f / 5));
    p = _mm512_fmadd_ps(p, s2, _mm512_set1_ps(1.0f / 3));
    p = _mm512_fmadd_ps(p, s2, one);
    lg = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ki), _mm512_set1_ps(0.693147180559945f), _mm512_mul_ps(_mm512_add_ps(s, s), p));
    lg = _mm512_mask_blend_ps(d0, _mm512_mul_ps(lg, _mm512_mul_ps(e, attn__rcp512(_mm512_mask_blend_ps(d0, d, one)))), e);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_set1_ps(20.0f), _CMP_GT_OQ), lg, v);
}
/* z / (1 + e^-z) with e^-z = 2^t, t = -z log2 e clamped to [-1e18, 126] (1 + e^-z finite);
   -0 below ATTN__SILU_ZERO, where the clamp would make it z / 2^126 instead */
ATTN__T512 static ATTN__INLINE __m512 attn__silu512(__m512 z) {
    const __m512 t = _mm512_min_ps(_mm512_set1_ps(126.0f), attn__clamp18_512(_mm512_mul_ps(z, _mm512_set1_ps(-1.44269504088896341f))));
    const __m512 r = _mm512_mul_ps(z, attn__rcp512(_mm512_add_ps(_mm512_set1_ps(1.0f), attn__exp2_512(t))));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(z, _mm512_set1_ps(ATTN__SILU_ZERO), _CMP_LT_OQ), r, _mm512_set1_ps(-0.0f));
}
/* tokens [t0, t0 + m) of 16 rows -> dst[j][16] (m = 16: one register transpose) */
ATTN__T512 static ATTN__INLINE void attn__ssm_tile_in512(const float *const *rows, int t0, int m, float *dst) {
    int c, j;
    if (m == 16) {
        __m512 r[16];
        for (c = 0; c < 16; ++c) r[c] = _mm512_loadu_ps(rows[c] + t0);
        attn__tr16_512(r);
        for (c = 0; c < 16; ++c) _mm512_storeu_ps(dst + 16 * c, r[c]);
    } else
        for (j = 0; j < m; ++j)
            for (c = 0; c < 16; ++c) dst[16 * j + c] = rows[c][t0 + j];
}
ATTN__T512 static void attn__ssm_scan_avx512(const attn__ssm_k *k) {
    const int N = k->N, nt = k->nt;
    const ptrdiff_t ldb = k->ldb;
    float *x = k->scratch, *A = x + (size_t)N * 16, *Bc = A + (size_t)N * 16, *Cc = Bc + (size_t)N * 16;
    float tu[256], td[256], tz[256], ty[256];
    const __m512 bias = _mm512_loadu_ps(k->bias), dsk = _mm512_loadu_ps(k->dsk);
    int t0, j, n, c;
    attn__ssm_in512(k->xin, N, x);
    attn__ssm_in512(k->A, N, A);
    for (n = 0; n < N; ++n)
        _mm512_storeu_ps(A + 16 * n, attn__clamp18_512(_mm512_mul_ps(_mm512_loadu_ps(A + 16 * n), _mm512_set1_ps(1.44269504088896341f))));
    if (k->bc_const) { attn__ssm_in512(k->Bc, N, Bc); attn__ssm_in512(k->Cc, N, Cc); }
    for (t0 = 0; t0 < nt; t0 += 16) {
        const int m = ATTN__MIN(16, nt - t0);
        attn__ssm_tile_in512(k->u, t0, m, tu);
        attn__ssm_tile_in512(k->dl, t0, m, td);
        if (k->has_z) attn__ssm_tile_in512(k->z, t0, m, tz);
        for (j = 0; j < m; ++j) {            /* per token: dt (clamped for the exp: tz), dt u (tu), D u (ty) */
            const __m512 uv = _mm512_loadu_ps(tu + 16 * j);
            __m512 dt = _mm512_add_ps(_mm512_loadu_ps(td + 16 * j), bias);
            if (k->softplus) dt = attn__softplus512(dt);
            _mm512_storeu_ps(td + 16 * j, attn__clamp18_512(dt));
            _mm512_storeu_ps(tu + 16 * j, _mm512_mul_ps(dt, uv));
            _mm512_storeu_ps(ty + 16 * j, _mm512_mul_ps(dsk, uv));
        }
        for (n = 0; n < N; ++n) {            /* state n in a register across the tokens */
            const __m512 a = _mm512_loadu_ps(A + 16 * n);
            __m512 xn = _mm512_loadu_ps(x + 16 * n);
            if (k->bc_const) {
                const __m512 bn = _mm512_loadu_ps(Bc + 16 * n), cn = _mm512_loadu_ps(Cc + 16 * n);
                for (j = 0; j < m; ++j) {
                    const __m512 e = attn__exp2_512(_mm512_mul_ps(_mm512_loadu_ps(td + 16 * j), a));
                    xn = _mm512_fmadd_ps(e, xn, _mm512_mul_ps(_mm512_loadu_ps(tu + 16 * j), bn));
                    _mm512_storeu_ps(ty + 16 * j, _mm512_fmadd_ps(cn, xn, _mm512_loadu_ps(ty + 16 * j)));
                }
            } else {
                const float *Bt = k->Bt + n * ldb + t0, *Ct = k->Ct + n * ldb + t0;
                for (j = 0; j < m; ++j) {
                    const __m512 e = attn__exp2_512(_mm512_mul_ps(_mm512_loadu_ps(td + 16 * j), a));
                    xn = _mm512_fmadd_ps(e, xn, _mm512_mul_ps(_mm512_loadu_ps(tu + 16 * j), _mm512_set1_ps(Bt[j])));
                    _mm512_storeu_ps(ty + 16 * j, _mm512_fmadd_ps(_mm512_set1_ps(Ct[j]), xn, _mm512_loadu_ps(ty + 16 * j)));
                }
            }
            _mm512_storeu_ps(x + 16 * n, xn);
        }
        if (k->has_z)                        /* y *= z / (1 + e^-z) */
            for (j = 0; j < m; ++j) {
                _mm512_storeu_ps(ty + 16 * j, _mm512_mul_ps(_mm512_loadu_ps(ty + 16 * j), attn__silu512(_mm512_loadu_ps(tz + 16 * j))));
            }
        if (m == 16) {
            __m512 r[16];
            for (c = 0; c < 16; ++c) r[c] = _mm512_loadu_ps(ty + 16 * c);
            attn__tr16_512(r);
            for (c = 0; c < 16; ++c) _mm512_storeu_ps(k->y[c] + t0, r[c]);
        } else
            for (j = 0; j < m; ++j)
                for (c = 0; c < 16; ++c) k->y[c][t0 + j] = ty[16 * j + c];
    }
    attn__ssm_out512(x, k->xout, N);
}

/* ---- the selective scan's backward (attn__ssm_bk) on 16 lanes ---- */
typedef __m512 attn__w_512;
ATTN__T512 static ATTN__INLINE __m512 attn__w_ld_512(const float *p) { return _mm512_loadu_ps(p); }
ATTN__T512 static ATTN__INLINE void attn__w_st_512(float *p, __m512 a) { _mm512_storeu_ps(p, a); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_set_512(float s) { return _mm512_set1_ps(s); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_add_512(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_sub_512(__m512 a, __m512 b) { return _mm512_sub_ps(a, b); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_mul_512(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_fma_512(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_exp2_512(__m512 t) { return attn__exp2_512(t); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_clamp_512(__m512 a) { return attn__clamp18_512(a); }
ATTN__T512 static ATTN__INLINE __m512 attn__w_softplus_512(__m512 a) { return attn__softplus512(a); }
/* 1 / (1 + e^-z), e^-z = 2^t with t clamped to [-1e18, 126] (as attn__silu512) */
ATTN__T512 static ATTN__INLINE __m512 attn__w_sig_512(__m512 z) {
    const __m512 t = _mm512_min_ps(_mm512_set1_ps(126.0f), attn__clamp18_512(_mm512_mul_ps(z, _mm512_set1_ps(-1.44269504088896341f))));
    return attn__rcp512(_mm512_add_ps(_mm512_set1_ps(1.0f), attn__exp2_512(t)));
}
ATTN__T512 static ATTN__INLINE __m512 attn__w_sel_lt_512(__m512 a, __m512 b, __m512 x, __m512 y) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x);
}
ATTN__T512 static void attn__w_rows_in_512(const float *const *rows, int t0, int m, float *dst) {
    int j;
    for (j = 0; j < m; j += 16) attn__ssm_tile_in512(rows, t0 + j, ATTN__MIN(16, m - j), dst + 16 * j);
}
ATTN__T512 static void attn__w_rows_out_512(const float *src, float *const *rows, int m) {
    int j0, j, c;
    for (j0 = 0; j0 < m; j0 += 16)
        if (m - j0 >= 16) {
            __m512 r[16];
            for (c = 0; c < 16; ++c) r[c] = _mm512_loadu_ps(src + 16 * (j0 + c));
            attn__tr16_512(r);
            for (c = 0; c < 16; ++c) _mm512_storeu_ps(rows[c] + j0, r[c]);
        } else
            for (j = j0; j < m; ++j)
                for (c = 0; c < 16; ++c) rows[c][j] = src[16 * j + c];
}
/* out[j] = (add ? out[j] : 0) + sum_c v[j][c], j < m: a tree of 128-bit, 64-bit and 32-bit
   shuffles and adds over the 16 rows (30 shuffles), rows fed in the order that leaves sum j in
   lane j */
ATTN__T512 static void attn__w_hred_512(const float *v, float *out, int m, int add) {
    static const int ord[16] = { 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15 };
    __m512 s[8];
    float tmp[16];
    int i, j;
    for (i = 0; i < 8; ++i) {
        const __m512 a = _mm512_loadu_ps(v + 16 * ord[2 * i]), b = _mm512_loadu_ps(v + 16 * ord[2 * i + 1]);
        s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xee));
    }
    for (i = 0; i < 4; ++i)
        s[i] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0x88), _mm512_shuffle_f32x4(s[2 * i], s[2 * i + 1], 0xdd));
    for (i = 0; i < 2; ++i)
        s[i] = _mm512_add_ps(_mm512_unpacklo_ps(s[2 * i], s[2 * i + 1]), _mm512_unpackhi_ps(s[2 * i], s[2 * i + 1]));
    s[0] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(s[0]), _mm512_castps_pd(s[1]))),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(s[0]), _mm512_castps_pd(s[1]))));
    if (m == 16) {
        _mm512_storeu_ps(out, add ? _mm512_add_ps(_mm512_loadu_ps(out), s[0]) : s[0]);
        return;
    }
    _mm512_storeu_ps(tmp, s[0]);
    for (j = 0; j < m; ++j) out[j] = add ? out[j] + tmp[j] : tmp[j];
}
ATTN__SSM_BWD_DEF(512, ATTN__T512)
ATTN__SSM_CBWD_DEF(512, ATTN__T512)

static const attn__isa attn__isa_avx512 = {
    "avx512", 1, attn__qk_avx512, attn__qk512_narrow, attn__softmax_avx512, attn__pv_avx512, attn__load_avx512,
    attn__store_avx512, attn__dot_avx512, attn__axpy_avx512, attn__scal_avx512, attn__max_avx512, attn__exp_sum_avx512,
    attn__madd_avx512, attn__ssm_scan_avx512, attn__elu1_avx512, attn__elu1_grad_avx512, attn__ssm_bwd_512, attn__ssm_cbwd_512
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
        const __m256i lo1 = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(X->lo + r)), one);
        const __m256i hi1 = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(X->hi + r)), one);
        const __m256i cap1 = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(X->cap + r)), one);
        __m256 mx = ninf, mnew, msafe, alpha, sum = zero;
        float *s = S + r;
        if (transform) {
            for (j = 0; j < nk; ++j) {
                __m256 v = _mm256_load_ps(s + (size_t)j * ATTN__BQ);
                if (X->softcap > 0.0f) v = _mm256_mul_ps(cap, attn__tanh256(_mm256_mul_ps(v, inv_cap)));
                if (X->alibi) {
                    const __m256 dist = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(pos, _mm256_set1_ps((float)j)));
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

/* P.V in blocks of 6 rows x 16 columns: 12 ymm accumulators, so the two FMA pipes (latency 4)
   always have independent work (4 rows left 8 in flight, exactly the minimum, and ran at about
   60% of the FMA peak from L1); plain loads and stores where all 16 columns exist, maskload /
   maskstore only at a ragged head dim's tail. Rows are covered up to the next multiple of 4
   in blocks of 6 and 4. Each acc element is alpha * acc + sum_j p_j v_j in j order whatever
   the blocking, so the bits do not depend on it. */
ATTN__T256 static __m256i attn__mask8(int n) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n < 0 ? 0 : n), idx);
}
#define ATTN__PVY_ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ATTN__PVY_ROWS4(X) X(0) X(1) X(2) X(3)
#define ATTN__PVY_DECL(r) __m256 a##r##0, a##r##1;
#define ATTN__PVY_LOAD(r) al = _mm256_set1_ps(alpha[r0 + r]); o = acc + (size_t)(r0 + r) * ldo + c; \
    a##r##0 = _mm256_mul_ps(al, full ? _mm256_loadu_ps(o) : _mm256_maskload_ps(o, m0)); \
    a##r##1 = _mm256_mul_ps(al, full ? _mm256_loadu_ps(o + 8) : _mm256_maskload_ps(o + 8, m1));
#define ATTN__PVY_FMA(r) p = _mm256_broadcast_ss(pj + r); a##r##0 = _mm256_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm256_fmadd_ps(p, v1, a##r##1);
#define ATTN__PVY_STORE(r) o = acc + (size_t)(r0 + r) * ldo + c; \
    if (full) { _mm256_storeu_ps(o, a##r##0); _mm256_storeu_ps(o + 8, a##r##1); } \
    else { _mm256_maskstore_ps(o, m0, a##r##0); _mm256_maskstore_ps(o + 8, m1, a##r##1); }
/* One block of ROWS rows at r0, columns [c, c + 16) (masked past Dv). */
#define ATTN__PVY_BLOCK(ROWS) { \
    const int full = Dv - c >= 16; \
    const __m256i m0 = attn__mask8(Dv - c), m1 = attn__mask8(Dv - c - 8); \
    __m256 al, p, v0, v1; \
    float *o; \
    ROWS(ATTN__PVY_DECL) \
    ROWS(ATTN__PVY_LOAD) \
    if (full) { \
        for (j = 0; j < nk; ++j) { \
            const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ + r0; \
            v0 = _mm256_loadu_ps(vj); v1 = _mm256_loadu_ps(vj + 8); \
            ROWS(ATTN__PVY_FMA) \
        } \
    } else { \
        for (j = 0; j < nk; ++j) { \
            const float *vj = V + (ptrdiff_t)j * ldv + c, *pj = S + (size_t)j * ATTN__BQ + r0; \
            v0 = _mm256_maskload_ps(vj, m0); v1 = _mm256_maskload_ps(vj + 8, m1); \
            ROWS(ATTN__PVY_FMA) \
        } \
    } \
    ROWS(ATTN__PVY_STORE) }
ATTN__T256 static void attn__pv_avx2(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv,
                                     const float *alpha, float *acc, size_t ldo) {
    const int R = (nrows + 3) & ~3, r6 = R - (R % 12 == 0 ? 0 : R % 12 == 4 ? 4 : 8);   /* rows in 6-blocks */
    int r0, c, j;
    for (r0 = 0; r0 < r6; r0 += 6)
        for (c = 0; c < Dv; c += 16) ATTN__PVY_BLOCK(ATTN__PVY_ROWS6)
    for (; r0 < R; r0 += 4)
        for (c = 0; c < Dv; c += 16) ATTN__PVY_BLOCK(ATTN__PVY_ROWS4)
}

/* 8 elements of dtype t at p as fp32 (F16C for f16, a shift for bf16) */
ATTN__T256 static ATTN__INLINE __m256 attn__ld8_256(const void *p, attn_dtype t) {
    if (t == ATTN_F32) return _mm256_loadu_ps((const float *)p);
    if (t == ATTN_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

ATTN__T256 static void attn__load_avx2(const void *src, attn_dtype t, float *dst, int n, float mul) {
    const __m256 mv = _mm256_set1_ps(mul);
    const size_t es = attn__dtype_size(t);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(mv, attn__ld8_256((const char *)src + (size_t)i * es, t)));
    if (i < n) attn__load_row((const char *)src + (size_t)i * es, t, dst + i, n - i, mul);
}

/* One vector whose lane i is the sum of a_i's 8 lanes. */
ATTN__T256 static ATTN__INLINE __m256 attn__hsum8_256(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5,
                                                     __m256 a6, __m256 a7) {
    const __m256 b0 = _mm256_hadd_ps(a0, a1), b1 = _mm256_hadd_ps(a2, a3), b2 = _mm256_hadd_ps(a4, a5), b3 = _mm256_hadd_ps(a6, a7);
    const __m256 c0 = _mm256_hadd_ps(b0, b1), c1 = _mm256_hadd_ps(b2, b3);  /* a0..a3 | a4..a7, per 128-bit half */
    return _mm256_add_ps(_mm256_permute2f128_ps(c0, c1, 0x20), _mm256_permute2f128_ps(c0, c1, 0x31));
}

/* Narrow tiles (decoding): S[j][r] = K_j . QR_r for r < n, 0 for n <= r < 16; two keys x four
   rows per pass (8 accumulators), the K tail masked (QR rows are zero-padded to 16 floats). */
ATTN__T256 static void attn__qk256_narrow(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq, int n, int D,
                                          float *S) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(D % 8), lane);
    const int Dm = D - D % 8;
    int j, r0, d, r;
    for (j = 0; j < nk; j += 2) {
        const float *k0 = K + (ptrdiff_t)j * ldk, *k1 = j + 1 < nk ? k0 + ldk : k0;   /* odd tail: key j twice */
        float out[8];
        for (r0 = 0; r0 < n; r0 += 4) {
            const float *q0 = QR + (size_t)r0 * ldq, *q1 = q0 + ldq, *q2 = q1 + ldq, *q3 = q2 + ldq;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, x0, x1;
            for (d = 0; d < D; d += 8) {
                if (d < Dm) { x0 = _mm256_loadu_ps(k0 + d); x1 = _mm256_loadu_ps(k1 + d); }
                else { x0 = _mm256_maskload_ps(k0 + d, tail); x1 = _mm256_maskload_ps(k1 + d, tail); }
                a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q0 + d), a0); a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q1 + d), a1);
                a2 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q2 + d), a2); a3 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(q3 + d), a3);
                a4 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q0 + d), a4); a5 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q1 + d), a5);
                a6 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q2 + d), a6); a7 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(q3 + d), a7);
            }
            _mm256_storeu_ps(out, attn__hsum8_256(a0, a1, a2, a3, a4, a5, a6, a7));
            for (r = r0; r < r0 + 4 && r < n; ++r) {
                S[(size_t)j * ATTN__BQ + r] = out[r - r0];
                if (j + 1 < nk) S[(size_t)(j + 1) * ATTN__BQ + r] = out[4 + r - r0];
            }
        }
        for (r = n; r < 16; ++r) {
            S[(size_t)j * ATTN__BQ + r] = 0.0f;
            if (j + 1 < nk) S[(size_t)(j + 1) * ATTN__BQ + r] = 0.0f;
        }
    }
}

/* fp32 -> f16 with F16C (exact rounding; NaN as attn__f32_to_f16 writes it); bf16 in the
   scalar loop */
ATTN__T256 static void attn__store_avx2(void *dst, attn_dtype t, const float *src, int n, float mul) {
    const __m256 mv = _mm256_set1_ps(mul);
    int i = 0;
    if (t == ATTN_F32)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps((float *)dst + i, _mm256_mul_ps(mv, _mm256_loadu_ps(src + i)));
    else if (t == ATTN_F16)
        for (; i + 8 <= n; i += 8) {
            const __m256 x = _mm256_mul_ps(mv, _mm256_loadu_ps(src + i));
            const __m256i u = _mm256_castps_si256(x);
            const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
            const __m256i qn = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7e00));
            const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            const __m256i r = _mm256_blendv_epi8(h, qn, nan);     /* 32-bit lanes, values < 2^16 */
            _mm_storeu_si128((__m128i *)(void *)((uint16_t *)dst + i),
                             _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
        }
    if (i < n) attn__store_row((char *)dst + (size_t)i * attn__dtype_size(t), t, src + i, n - i, mul);
}

/* The AVX2 vector layer: 8 lanes, masked tails. */
ATTN__T256 static ATTN__INLINE float attn__hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
ATTN__T256 static float attn__dot_avx2(const float *a, const float *b, int n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        s0 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, k), _mm256_maskload_ps(b + i, k), s0);
    }
    return attn__hsum256(_mm256_add_ps(s0, s1));
}
ATTN__T256 static void attn__axpy_avx2(float *y, float a, const float *x, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        _mm256_maskstore_ps(y + i, k, _mm256_fmadd_ps(va, _mm256_maskload_ps(x + i, k), _mm256_maskload_ps(y + i, k)));
    }
}
ATTN__T256 static void attn__scal_avx2(float *y, float a, int n) {
    const __m256 va = _mm256_set1_ps(a);
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        _mm256_maskstore_ps(y + i, k, _mm256_mul_ps(va, _mm256_maskload_ps(y + i, k)));
    }
}
ATTN__T256 static float attn__max_avx2(const float *x, int n) {
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 m = ninf;
    __m128 h;
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        m = _mm256_max_ps(m, _mm256_blendv_ps(ninf, _mm256_maskload_ps(x + i, k), _mm256_castsi256_ps(k)));
    }
    h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}
ATTN__T256 static float attn__exp_sum_avx2(float *y, const float *x, float m, int n) {
    const __m256 vm = _mm256_set1_ps(m);
    __m256 s = _mm256_setzero_ps();
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(k), attn__exp256(_mm256_sub_ps(_mm256_maskload_ps(x + i, k), vm)));
        _mm256_maskstore_ps(y + i, k, e);
        s = _mm256_add_ps(s, e);
    }
    return attn__hsum256(s);
}

ATTN__T256 static void attn__madd_avx2(float *y, const float *a, const float *b, float c, const float *x, int n) {
    const __m256 vc = _mm256_set1_ps(c);
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        const __m256 cx = _mm256_mul_ps(vc, _mm256_maskload_ps(x + i, k));
        _mm256_maskstore_ps(y + i, k, _mm256_fmadd_ps(_mm256_maskload_ps(a + i, k), _mm256_maskload_ps(b + i, k), cx));
    }
}

ATTN__T256 static void attn__elu1_avx2(float *y, const float *x, const float *dy, int n) {
    const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        const __m256 v = _mm256_maskload_ps(x + i, k);
        const __m256 pos = _mm256_cmp_ps(v, zero, _CMP_GT_OQ), le = _mm256_cmp_ps(v, zero, _CMP_LE_OQ);
        const __m256 e = _mm256_blendv_ps(v, attn__exp256(_mm256_min_ps(zero, v)), le);   /* NaN: v */
        const __m256 r = dy ? _mm256_mul_ps(_mm256_maskload_ps(dy + i, k), _mm256_blendv_ps(e, one, pos))
                            : _mm256_blendv_ps(e, _mm256_add_ps(v, one), pos);
        _mm256_maskstore_ps(y + i, k, r);
    }
}

ATTN__T256 static void attn__elu1_grad_avx2(float *y, const float *x, const float *f, const float *dy, int n) {
    int i;
    for (i = 0; i < n; i += 8) {
        const __m256i k = attn__mask8(n - i);
        const __m256 g = _mm256_maskload_ps(dy + i, k);
        const __m256 pos = _mm256_cmp_ps(_mm256_maskload_ps(x + i, k), _mm256_setzero_ps(), _CMP_GT_OQ);
        _mm256_maskstore_ps(y + i, k, _mm256_blendv_ps(_mm256_mul_ps(g, _mm256_maskload_ps(f + i, k)), g, pos));
    }
}

/* ---- the selective scan's fused kernel (attn__ssm_k) on 2 x 8 lanes ---- */

/* 2^t (attn__exp2_512's polynomial), t clamped to [-127, 128]: 2^n built in the exponent field
   (n = -127: 0, n = 128: inf), NaN kept */
ATTN__T256 static ATTN__INLINE __m256 attn__exp2_256(__m256 t) {
    __m256 n, r, p;
    t = _mm256_max_ps(_mm256_set1_ps(-127.0f), _mm256_min_ps(_mm256_set1_ps(128.0f), t));
    n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_sub_ps(t, n);
    p = _mm256_fmadd_ps(_mm256_set1_ps(ATTN__EXP2_C5), r, _mm256_set1_ps(ATTN__EXP2_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ATTN__EXP2_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ATTN__EXP2_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(ATTN__EXP2_C1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23)));
}
ATTN__T256 static ATTN__INLINE __m256 attn__clamp18_256(__m256 v) {
    return _mm256_max_ps(_mm256_set1_ps(-1e18f), _mm256_min_ps(_mm256_set1_ps(1e18f), v));
}
/* 8 x 8 transpose in registers */
ATTN__T256 static ATTN__INLINE void attn__tr8_256(__m256 *r) {
    __m256 t[8], q[8];
    int i;
    for (i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 2; ++i) {             /* q[4i + j], 128-bit lane l: rows 4i..4i+3 of column 4l + j */
        q[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        q[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xee);
        q[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        q[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
    }
    for (i = 0; i < 4; ++i) {
        r[i] = _mm256_permute2f128_ps(q[i], q[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(q[i], q[4 + i], 0x31);
    }
}
/* dst[n][16] = rows[c][n] for n < N */
ATTN__T256 static void attn__ssm_in256(const float *const *rows, int N, float *dst) {
    __m256 r[8];
    int c, n0, n, h;
    for (n0 = 0; n0 + 8 <= N; n0 += 8)
        for (h = 0; h < 16; h += 8) {
            for (c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(rows[h + c] + n0);
            attn__tr8_256(r);
            for (c = 0; c < 8; ++c) _mm256_storeu_ps(dst + (size_t)(n0 + c) * 16 + h, r[c]);
        }
    for (n = n0; n < N; ++n)
        for (c = 0; c < 16; ++c) dst[(size_t)n * 16 + c] = rows[c][n];
}
/* rows[c][n] = src[n][16] for n < N */
ATTN__T256 static void attn__ssm_out256(const float *src, float *const *rows, int N) {
    __m256 r[8];
    int c, n0, n, h;
    for (n0 = 0; n0 + 8 <= N; n0 += 8)
        for (h = 0; h < 16; h += 8) {
            for (c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(src + (size_t)(n0 + c) * 16 + h);
            attn__tr8_256(r);
            for (c = 0; c < 8; ++c) _mm256_storeu_ps(rows[h + c] + n0, r[c]);
        }
    for (n = n0; n < N; ++n)
        for (c = 0; c < 16; ++c) rows[c][n] = src[(size_t)n * 16 + c];
}
/* 1 / d by rcp (12 bits) and one Newton step (about 1.5 ulp; d finite and nonzero) */
ATTN__T256 static ATTN__INLINE __m256 attn__rcp256(__m256 d) {
    const __m256 r = _mm256_rcp_ps(d);
    return _mm256_fmadd_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(1.0f)), r);
}
/* softplus as attn__softplus512 (e^v = 2^(v log2 e)) */
ATTN__T256 static ATTN__INLINE __m256 attn__softplus256(__m256 v) {
    const __m256 one = _mm256_set1_ps(1.0f);
    const __m256 e = attn__exp2_256(_mm256_mul_ps(attn__clamp18_256(v), _mm256_set1_ps(1.44269504088896341f)));
    const __m256 u = _mm256_add_ps(one, e), d = _mm256_sub_ps(u, one);
    const __m256i bits = _mm256_castps_si256(u), man = _mm256_and_si256(bits, _mm256_set1_epi32(0x007fffff));
    const __m256i big = _mm256_cmpgt_epi32(man, _mm256_set1_epi32(0x003504f3));
    const __m256 m = _mm256_castsi256_ps(_mm256_or_si256(man, _mm256_xor_si256(_mm256_set1_epi32(0x3f800000),
                                                                              _mm256_and_si256(big, _mm256_set1_epi32(0x00800000)))));
    const __m256i ki = _mm256_sub_epi32(_mm256_sub_epi32(_mm256_srli_epi32(bits, 23), _mm256_set1_epi32(127)), big);
    const __m256 s = _mm256_mul_ps(_mm256_sub_ps(m, one), attn__rcp256(_mm256_add_ps(m, one))), s2 = _mm256_mul_ps(s, s);
    const __m256 d0 = _mm256_cmp_ps(d, _mm256_setzero_ps(), _CMP_EQ_OQ);
    __m256 p, lg;
    p = _mm256_fmadd_ps(_mm256_set1_ps(1.0f / 9), s2, _mm256_set1_ps(1.0f / 7));
    p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.0f / 5));
    p = _mm256_fmadd_ps(p, s2, _mm256_set1_ps(1.0f / 3));
    p = _mm256_fmadd_ps(p, s2, one);
    lg = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ki), _mm256_set1_ps(0.693147180559945f), _mm256_mul_ps(_mm256_add_ps(s, s), p));
    lg = _mm256_blendv_ps(_mm256_mul_ps(lg, _mm256_mul_ps(e, attn__rcp256(_mm256_blendv_ps(d, one, d0)))), e, d0);
    return _mm256_blendv_ps(lg, v, _mm256_cmp_ps(v, _mm256_set1_ps(20.0f), _CMP_GT_OQ));
}
/* z / (1 + e^-z) as attn__silu512 (attn__exp2_256 clamps to [-127, 128]: 1 + e^-z <= 1 + 2^126 is
   kept finite by the clamp to 126); -0 below ATTN__SILU_ZERO */
ATTN__T256 static ATTN__INLINE __m256 attn__silu256(__m256 z) {
    const __m256 t = _mm256_min_ps(_mm256_set1_ps(126.0f), attn__clamp18_256(_mm256_mul_ps(z, _mm256_set1_ps(-1.44269504088896341f))));
    const __m256 r = _mm256_mul_ps(z, attn__rcp256(_mm256_add_ps(_mm256_set1_ps(1.0f), attn__exp2_256(t))));
    return _mm256_blendv_ps(r, _mm256_set1_ps(-0.0f), _mm256_cmp_ps(z, _mm256_set1_ps(ATTN__SILU_ZERO), _CMP_LT_OQ));
}
/* tokens [t0, t0 + m) of 16 rows <-> buf[j][16] (m = 16: four register transposes) */
ATTN__T256 static ATTN__INLINE void attn__ssm_tile256(const float *const *rows_in, float *const *rows_out, int t0, int m, float *buf) {
    int c, j, h, b;
    if (m == 16) {
        __m256 r[8];
        for (h = 0; h < 16; h += 8)
            for (b = 0; b < 16; b += 8) {
                if (rows_in) {
                    for (c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(rows_in[h + c] + t0 + b);
                    attn__tr8_256(r);
                    for (c = 0; c < 8; ++c) _mm256_storeu_ps(buf + 16 * (b + c) + h, r[c]);
                } else {
                    for (c = 0; c < 8; ++c) r[c] = _mm256_loadu_ps(buf + 16 * (b + c) + h);
                    attn__tr8_256(r);
                    for (c = 0; c < 8; ++c) _mm256_storeu_ps(rows_out[h + c] + t0 + b, r[c]);
                }
            }
    } else if (rows_in) {
        for (j = 0; j < m; ++j)
            for (c = 0; c < 16; ++c) buf[16 * j + c] = rows_in[c][t0 + j];
    } else
        for (j = 0; j < m; ++j)
            for (c = 0; c < 16; ++c) rows_out[c][t0 + j] = buf[16 * j + c];
}
ATTN__T256 static void attn__ssm_scan_avx2(const attn__ssm_k *k) {
    const int N = k->N, nt = k->nt;
    const ptrdiff_t ldb = k->ldb;
    float *x = k->scratch, *A = x + (size_t)N * 16, *Bc = A + (size_t)N * 16, *Cc = Bc + (size_t)N * 16;
    float tu[256], td[256], tz[256], ty[256];
    int t0, j, n, h;
    attn__ssm_in256(k->xin, N, x);
    attn__ssm_in256(k->A, N, A);
    for (n = 0; n < 16 * N; n += 8)
        _mm256_storeu_ps(A + n, attn__clamp18_256(_mm256_mul_ps(_mm256_loadu_ps(A + n), _mm256_set1_ps(1.44269504088896341f))));
    if (k->bc_const) { attn__ssm_in256(k->Bc, N, Bc); attn__ssm_in256(k->Cc, N, Cc); }
    for (t0 = 0; t0 < nt; t0 += 16) {
        const int m = ATTN__MIN(16, nt - t0);
        attn__ssm_tile256(k->u, NULL, t0, m, tu);
        attn__ssm_tile256(k->dl, NULL, t0, m, td);
        if (k->has_z) attn__ssm_tile256(k->z, NULL, t0, m, tz);
        for (j = 0; j < m; ++j)               /* per token: dt (clamped for the exp: td), dt u (tu), D u (ty) */
            for (h = 0; h < 16; h += 8) {
                const __m256 uv = _mm256_loadu_ps(tu + 16 * j + h);
                __m256 dt = _mm256_add_ps(_mm256_loadu_ps(td + 16 * j + h), _mm256_loadu_ps(k->bias + h));
                if (k->softplus) dt = attn__softplus256(dt);
                _mm256_storeu_ps(td + 16 * j + h, attn__clamp18_256(dt));
                _mm256_storeu_ps(tu + 16 * j + h, _mm256_mul_ps(dt, uv));
                _mm256_storeu_ps(ty + 16 * j + h, _mm256_mul_ps(_mm256_loadu_ps(k->dsk + h), uv));
            }
        for (n = 0; n < N; ++n)               /* state n in registers across the tokens */
            for (h = 0; h < 16; h += 8) {
                const __m256 a = _mm256_loadu_ps(A + 16 * n + h);
                __m256 xn = _mm256_loadu_ps(x + 16 * n + h);
                if (k->bc_const) {
                    const __m256 bn = _mm256_loadu_ps(Bc + 16 * n + h), cn = _mm256_loadu_ps(Cc + 16 * n + h);
                    for (j = 0; j < m; ++j) {
                        const __m256 e = attn__exp2_256(_mm256_mul_ps(_mm256_loadu_ps(td + 16 * j + h), a));
                        xn = _mm256_fmadd_ps(e, xn, _mm256_mul_ps(_mm256_loadu_ps(tu + 16 * j + h), bn));
                        _mm256_storeu_ps(ty + 16 * j + h, _mm256_fmadd_ps(cn, xn, _mm256_loadu_ps(ty + 16 * j + h)));
                    }
                } else {
                    const float *Bt = k->Bt + n * ldb + t0, *Ct = k->Ct + n * ldb + t0;
                    for (j = 0; j < m; ++j) {
                        const __m256 e = attn__exp2_256(_mm256_mul_ps(_mm256_loadu_ps(td + 16 * j + h), a));
                        xn = _mm256_fmadd_ps(e, xn, _mm256_mul_ps(_mm256_loadu_ps(tu + 16 * j + h), _mm256_set1_ps(Bt[j])));
                        _mm256_storeu_ps(ty + 16 * j + h, _mm256_fmadd_ps(_mm256_set1_ps(Ct[j]), xn, _mm256_loadu_ps(ty + 16 * j + h)));
                    }
                }
                _mm256_storeu_ps(x + 16 * n + h, xn);
            }
        if (k->has_z)                         /* y *= z / (1 + e^-z) */
            for (j = 0; j < 16 * m; j += 8) {
                _mm256_storeu_ps(ty + j, _mm256_mul_ps(_mm256_loadu_ps(ty + j), attn__silu256(_mm256_loadu_ps(tz + j))));
            }
        attn__ssm_tile256(NULL, k->y, t0, m, ty);
    }
    attn__ssm_out256(x, k->xout, N);
}

/* ---- the selective scan's backward (attn__ssm_bk) on 2 x 8 lanes ---- */
typedef struct attn__w_256 { __m256 a, b; } attn__w_256;
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_mk_256(__m256 a, __m256 b) { attn__w_256 r; r.a = a; r.b = b; return r; }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_ld_256(const float *p) { return attn__w_mk_256(_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)); }
ATTN__T256 static ATTN__INLINE void attn__w_st_256(float *p, attn__w_256 x) { _mm256_storeu_ps(p, x.a); _mm256_storeu_ps(p + 8, x.b); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_set_256(float s) { return attn__w_mk_256(_mm256_set1_ps(s), _mm256_set1_ps(s)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_add_256(attn__w_256 x, attn__w_256 y) { return attn__w_mk_256(_mm256_add_ps(x.a, y.a), _mm256_add_ps(x.b, y.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_sub_256(attn__w_256 x, attn__w_256 y) { return attn__w_mk_256(_mm256_sub_ps(x.a, y.a), _mm256_sub_ps(x.b, y.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_mul_256(attn__w_256 x, attn__w_256 y) { return attn__w_mk_256(_mm256_mul_ps(x.a, y.a), _mm256_mul_ps(x.b, y.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_fma_256(attn__w_256 x, attn__w_256 y, attn__w_256 z) {
    return attn__w_mk_256(_mm256_fmadd_ps(x.a, y.a, z.a), _mm256_fmadd_ps(x.b, y.b, z.b));
}
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_exp2_256(attn__w_256 x) { return attn__w_mk_256(attn__exp2_256(x.a), attn__exp2_256(x.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_clamp_256(attn__w_256 x) { return attn__w_mk_256(attn__clamp18_256(x.a), attn__clamp18_256(x.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_softplus_256(attn__w_256 x) { return attn__w_mk_256(attn__softplus256(x.a), attn__softplus256(x.b)); }
/* 1 / (1 + e^-z) as attn__w_sig_512 */
ATTN__T256 static ATTN__INLINE __m256 attn__sig256(__m256 z) {
    const __m256 t = _mm256_min_ps(_mm256_set1_ps(126.0f), attn__clamp18_256(_mm256_mul_ps(z, _mm256_set1_ps(-1.44269504088896341f))));
    return attn__rcp256(_mm256_add_ps(_mm256_set1_ps(1.0f), attn__exp2_256(t)));
}
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_sig_256(attn__w_256 x) { return attn__w_mk_256(attn__sig256(x.a), attn__sig256(x.b)); }
ATTN__T256 static ATTN__INLINE attn__w_256 attn__w_sel_lt_256(attn__w_256 p, attn__w_256 q, attn__w_256 x, attn__w_256 y) {
    return attn__w_mk_256(_mm256_blendv_ps(y.a, x.a, _mm256_cmp_ps(p.a, q.a, _CMP_LT_OQ)),
                          _mm256_blendv_ps(y.b, x.b, _mm256_cmp_ps(p.b, q.b, _CMP_LT_OQ)));
}
ATTN__T256 static void attn__w_rows_in_256(const float *const *rows, int t0, int m, float *dst) {
    int j;
    for (j = 0; j < m; j += 16) attn__ssm_tile256(rows, NULL, t0 + j, ATTN__MIN(16, m - j), dst + 16 * j);
}
ATTN__T256 static void attn__w_rows_out_256(float *src, float *const *rows, int m) {
    int j;
    for (j = 0; j < m; j += 16) attn__ssm_tile256(NULL, rows, j, ATTN__MIN(16, m - j), src + 16 * j);
}
/* out[j] = (add ? out[j] : 0) + sum_c v[j][c], j < m: the two halves added, then per 8 rows a
   hadd tree and one 128-bit swap */
ATTN__T256 static void attn__w_hred_256(const float *v, float *out, int m, int add) {
    __m256 h[16], q[4], s[2];
    float tmp[16];
    int i, j;
    for (i = 0; i < 16; ++i) h[i] = _mm256_add_ps(_mm256_loadu_ps(v + 16 * i), _mm256_loadu_ps(v + 16 * i + 8));
    for (i = 0; i < 2; ++i) {
        const __m256 *r = h + 8 * i;
        q[0] = _mm256_hadd_ps(r[0], r[1]); q[1] = _mm256_hadd_ps(r[2], r[3]);
        q[2] = _mm256_hadd_ps(r[4], r[5]); q[3] = _mm256_hadd_ps(r[6], r[7]);
        q[0] = _mm256_hadd_ps(q[0], q[1]); q[2] = _mm256_hadd_ps(q[2], q[3]);
        s[i] = _mm256_add_ps(_mm256_permute2f128_ps(q[0], q[2], 0x20), _mm256_permute2f128_ps(q[0], q[2], 0x31));
    }
    if (m == 16) {
        if (add) { s[0] = _mm256_add_ps(_mm256_loadu_ps(out), s[0]); s[1] = _mm256_add_ps(_mm256_loadu_ps(out + 8), s[1]); }
        _mm256_storeu_ps(out, s[0]); _mm256_storeu_ps(out + 8, s[1]);
        return;
    }
    _mm256_storeu_ps(tmp, s[0]); _mm256_storeu_ps(tmp + 8, s[1]);
    for (j = 0; j < m; ++j) out[j] = add ? out[j] + tmp[j] : tmp[j];
}
ATTN__SSM_BWD_DEF(256, ATTN__T256)
ATTN__SSM_CBWD_DEF(256, ATTN__T256)

static const attn__isa attn__isa_avx2 = {
    "avx2", 1, attn__qk_avx2, attn__qk256_narrow, attn__softmax_avx2, attn__pv_avx2, attn__load_avx2, attn__store_avx2,
    attn__dot_avx2, attn__axpy_avx2, attn__scal_avx2, attn__max_avx2, attn__exp_sum_avx2, attn__madd_avx2,
    attn__ssm_scan_avx2, attn__elu1_avx2, attn__elu1_grad_avx2, attn__ssm_bwd_256, attn__ssm_cbwd_256
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
                if (X->alibi) v = vfmsq_f32(v, slope, vabsq_f32(vsubq_f32(pos, vdupq_n_f32((float)j))));
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

/* Narrow tiles (decoding): S[j][r] = K_j . QR_r for r < n, 0 for n <= r < 16; four rows per
   pass, each reduced across its lanes at the end, the K tail in scalar code. */
static void attn__qk_narrow_neon(const float *K, ptrdiff_t ldk, int nk, const float *QR, size_t ldq, int n, int D,
                                 float *S) {
    const int Dm = D & ~3;
    int j, r0, r, d;
    for (j = 0; j < nk; ++j) {
        const float *kj = K + (ptrdiff_t)j * ldk;
        float *s = S + (size_t)j * ATTN__BQ;
        for (r0 = 0; r0 < n; r0 += 4) {
            const float *q0 = QR + (size_t)r0 * ldq, *q1 = q0 + ldq, *q2 = q1 + ldq, *q3 = q2 + ldq;
            float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;
            float t[4];
            for (d = 0; d < Dm; d += 4) {
                const float32x4_t k = vld1q_f32(kj + d);
                a0 = vfmaq_f32(a0, k, vld1q_f32(q0 + d)); a1 = vfmaq_f32(a1, k, vld1q_f32(q1 + d));
                a2 = vfmaq_f32(a2, k, vld1q_f32(q2 + d)); a3 = vfmaq_f32(a3, k, vld1q_f32(q3 + d));
            }
            t[0] = vaddvq_f32(a0); t[1] = vaddvq_f32(a1); t[2] = vaddvq_f32(a2); t[3] = vaddvq_f32(a3);
            for (; d < D; ++d) { t[0] += kj[d] * q0[d]; t[1] += kj[d] * q1[d]; t[2] += kj[d] * q2[d]; t[3] += kj[d] * q3[d]; }
            for (r = r0; r < r0 + 4 && r < n; ++r) s[r] = t[r - r0];
        }
        for (r = n; r < 16; ++r) s[r] = 0.0f;
    }
}

/* The NEON vector layer: 4 lanes, scalar tails folded into lane 0's order. */
static float attn__dot_neon(const float *a, const float *b, int n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
    float s;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
    }
    for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s = vaddvq_f32(vaddq_f32(s0, s1));
    for (; i < n; ++i) s += a[i] * b[i];
    return s;
}
static void attn__axpy_neon(float *y, float a, const float *x, int n) {
    const float32x4_t va = vdupq_n_f32(a);
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, vld1q_f32(x + i)));
    for (; i < n; ++i) y[i] += a * x[i];
}
static void attn__scal_neon(float *y, float a, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_n_f32(vld1q_f32(y + i), a));
    for (; i < n; ++i) y[i] *= a;
}
static float attn__max_neon(const float *x, int n) {
    float32x4_t m = vdupq_n_f32(-INFINITY);
    float r;
    int i = 0;
    for (; i + 4 <= n; i += 4) m = vmaxq_f32(m, vld1q_f32(x + i));
    r = vmaxvq_f32(m);
    for (; i < n; ++i) r = x[i] > r ? x[i] : r;
    return r;
}
static float attn__exp_sum_neon(float *y, const float *x, float m, int n) {
    const float32x4_t vm = vdupq_n_f32(m);
    float32x4_t s = vdupq_n_f32(0.0f);
    float r;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = attn__exp_neon(vsubq_f32(vld1q_f32(x + i), vm));
        vst1q_f32(y + i, e);
        s = vaddq_f32(s, e);
    }
    r = vaddvq_f32(s);
    for (; i < n; ++i) { y[i] = expf(x[i] - m); r += y[i]; }
    return r;
}

static void attn__madd_neon(float *y, const float *a, const float *b, float c, const float *x, int n) {
    const float32x4_t vc = vdupq_n_f32(c);
    int i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(y + i, vfmaq_f32(vmulq_f32(vc, vld1q_f32(x + i)), vld1q_f32(a + i), vld1q_f32(b + i)));
    for (; i < n; ++i) y[i] = a[i] * b[i] + c * x[i];
}

static void attn__elu1_neon(float *y, const float *x, const float *dy, int n) {
    const float32x4_t zero = vdupq_n_f32(0.0f), one = vdupq_n_f32(1.0f);
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        const uint32x4_t pos = vcgtq_f32(v, zero), le = vcleq_f32(v, zero);
        const float32x4_t e = vbslq_f32(le, attn__exp_neon(vminq_f32(zero, v)), v);   /* NaN: v */
        vst1q_f32(y + i, dy ? vmulq_f32(vld1q_f32(dy + i), vbslq_f32(pos, one, e)) : vbslq_f32(pos, vaddq_f32(v, one), e));
    }
    if (i < n) attn__elu1_scalar(y + i, x + i, dy ? dy + i : NULL, n - i);
}

static void attn__elu1_grad_neon(float *y, const float *x, const float *f, const float *dy, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t g = vld1q_f32(dy + i);
        vst1q_f32(y + i, vbslq_f32(vcgtq_f32(vld1q_f32(x + i), vdupq_n_f32(0.0f)), g, vmulq_f32(g, vld1q_f32(f + i))));
    }
    if (i < n) attn__elu1_grad_scalar(y + i, x + i, f + i, dy + i, n - i);
}

/* ---- the selective scan's fused kernel (attn__ssm_k) on 4 x 4 lanes ---- */

/* 2^t as attn__exp2_256 */
static inline float32x4_t attn__exp2_neon(float32x4_t t) {
    float32x4_t n, r, p;
    t = vmaxq_f32(vdupq_n_f32(-127.0f), vminq_f32(vdupq_n_f32(128.0f), t));
    n = vrndnq_f32(t);
    r = vsubq_f32(t, n);
    p = vfmaq_f32(vdupq_n_f32(ATTN__EXP2_C4), vdupq_n_f32(ATTN__EXP2_C5), r);
    p = vfmaq_f32(vdupq_n_f32(ATTN__EXP2_C3), p, r);
    p = vfmaq_f32(vdupq_n_f32(ATTN__EXP2_C2), p, r);
    p = vfmaq_f32(vdupq_n_f32(ATTN__EXP2_C1), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    return vmulq_f32(p, vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23)));
}
static inline float32x4_t attn__clamp18_neon(float32x4_t v) {
    return vmaxq_f32(vdupq_n_f32(-1e18f), vminq_f32(vdupq_n_f32(1e18f), v));
}
/* 4 x 4 transpose in registers */
static inline void attn__tr4_neon(float32x4_t *r) {
    const float32x4_t t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
    const float32x4_t t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[1] = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
    r[2] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0), vreinterpretq_f64_f32(t2)));
    r[3] = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1), vreinterpretq_f64_f32(t3)));
}
/* the 16 rows' elements [o, o + m) <-> buf[j][16] (whole blocks of 4 by register transposes) */
static void attn__ssm_tile_neon(const float *const *rows_in, float *const *rows_out, int o, int m, float *buf) {
    float32x4_t r[4];
    int c, j, h, b;
    for (b = 0; b + 4 <= m; b += 4)
        for (h = 0; h < 16; h += 4) {
            if (rows_in) {
                for (c = 0; c < 4; ++c) r[c] = vld1q_f32(rows_in[h + c] + o + b);
                attn__tr4_neon(r);
                for (c = 0; c < 4; ++c) vst1q_f32(buf + 16 * (b + c) + h, r[c]);
            } else {
                for (c = 0; c < 4; ++c) r[c] = vld1q_f32(buf + 16 * (b + c) + h);
                attn__tr4_neon(r);
                for (c = 0; c < 4; ++c) vst1q_f32(rows_out[h + c] + o + b, r[c]);
            }
        }
    for (j = b; j < m; ++j)
        for (c = 0; c < 16; ++c) {
            if (rows_in) buf[16 * j + c] = rows_in[c][o + j];
            else rows_out[c][o + j] = buf[16 * j + c];
        }
}
/* softplus as attn__softplus512 */
static inline float32x4_t attn__softplus_neon(float32x4_t v) {
    const float32x4_t one = vdupq_n_f32(1.0f), e = attn__exp_neon(v), u = vaddq_f32(one, e), d = vsubq_f32(u, one);
    const uint32x4_t bits = vreinterpretq_u32_f32(u), man = vandq_u32(bits, vdupq_n_u32(0x007fffffu));
    const uint32x4_t big = vcgtq_u32(man, vdupq_n_u32(0x003504f3u));
    const float32x4_t m = vreinterpretq_f32_u32(vorrq_u32(man, veorq_u32(vdupq_n_u32(0x3f800000u), vandq_u32(big, vdupq_n_u32(0x00800000u)))));
    const int32x4_t ki = vsubq_s32(vsubq_s32(vreinterpretq_s32_u32(vshrq_n_u32(bits, 23)), vdupq_n_s32(127)), vreinterpretq_s32_u32(big));
    const float32x4_t s = vdivq_f32(vsubq_f32(m, one), vaddq_f32(m, one)), s2 = vmulq_f32(s, s);
    float32x4_t p, lg;
    p = vfmaq_f32(vdupq_n_f32(1.0f / 7), vdupq_n_f32(1.0f / 9), s2);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 5), p, s2);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 3), p, s2);
    p = vfmaq_f32(one, p, s2);
    lg = vfmaq_f32(vmulq_f32(vaddq_f32(s, s), p), vcvtq_f32_s32(ki), vdupq_n_f32(0.693147180559945f));
    lg = vbslq_f32(vceqq_f32(d, vdupq_n_f32(0.0f)), e, vmulq_f32(lg, vdivq_f32(e, d)));
    return vbslq_f32(vcgtq_f32(v, vdupq_n_f32(20.0f)), v, lg);
}
static void attn__ssm_scan_neon(const attn__ssm_k *k) {
    const int N = k->N, nt = k->nt;
    const ptrdiff_t ldb = k->ldb;
    float *x = k->scratch, *A = x + (size_t)N * 16, *Bc = A + (size_t)N * 16, *Cc = Bc + (size_t)N * 16;
    float tu[256], td[256], tz[256], ty[256];
    const float32x4_t one = vdupq_n_f32(1.0f);
    int t0, j, n, h;
    attn__ssm_tile_neon(k->xin, NULL, 0, N, x);
    attn__ssm_tile_neon(k->A, NULL, 0, N, A);
    for (n = 0; n < 16 * N; n += 4) vst1q_f32(A + n, attn__clamp18_neon(vmulq_f32(vld1q_f32(A + n), vdupq_n_f32(1.44269504088896341f))));
    if (k->bc_const) { attn__ssm_tile_neon(k->Bc, NULL, 0, N, Bc); attn__ssm_tile_neon(k->Cc, NULL, 0, N, Cc); }
    for (t0 = 0; t0 < nt; t0 += 16) {
        const int m = ATTN__MIN(16, nt - t0);
        attn__ssm_tile_neon(k->u, NULL, t0, m, tu);
        attn__ssm_tile_neon(k->dl, NULL, t0, m, td);
        if (k->has_z) attn__ssm_tile_neon(k->z, NULL, t0, m, tz);
        for (j = 0; j < m; ++j)               /* per token: dt (clamped for the exp: td), dt u (tu), D u (ty) */
            for (h = 0; h < 16; h += 4) {
                const float32x4_t uv = vld1q_f32(tu + 16 * j + h);
                float32x4_t dt = vaddq_f32(vld1q_f32(td + 16 * j + h), vld1q_f32(k->bias + h));
                if (k->softplus) dt = attn__softplus_neon(dt);
                vst1q_f32(td + 16 * j + h, attn__clamp18_neon(dt));
                vst1q_f32(tu + 16 * j + h, vmulq_f32(dt, uv));
                vst1q_f32(ty + 16 * j + h, vmulq_f32(vld1q_f32(k->dsk + h), uv));
            }
        for (n = 0; n < N; ++n)               /* state n in registers across the tokens */
            for (h = 0; h < 16; h += 4) {
                const float32x4_t a = vld1q_f32(A + 16 * n + h);
                float32x4_t xn = vld1q_f32(x + 16 * n + h);
                if (k->bc_const) {
                    const float32x4_t bn = vld1q_f32(Bc + 16 * n + h), cn = vld1q_f32(Cc + 16 * n + h);
                    for (j = 0; j < m; ++j) {
                        const float32x4_t e = attn__exp2_neon(vmulq_f32(vld1q_f32(td + 16 * j + h), a));
                        xn = vfmaq_f32(vmulq_f32(vld1q_f32(tu + 16 * j + h), bn), e, xn);
                        vst1q_f32(ty + 16 * j + h, vfmaq_f32(vld1q_f32(ty + 16 * j + h), cn, xn));
                    }
                } else {
                    const float *Bt = k->Bt + n * ldb + t0, *Ct = k->Ct + n * ldb + t0;
                    for (j = 0; j < m; ++j) {
                        const float32x4_t e = attn__exp2_neon(vmulq_f32(vld1q_f32(td + 16 * j + h), a));
                        xn = vfmaq_f32(vmulq_f32(vld1q_f32(tu + 16 * j + h), vdupq_n_f32(Bt[j])), e, xn);
                        vst1q_f32(ty + 16 * j + h, vfmaq_f32(vld1q_f32(ty + 16 * j + h), vdupq_n_f32(Ct[j]), xn));
                    }
                }
                vst1q_f32(x + 16 * n + h, xn);
            }
        if (k->has_z)                         /* y *= z / (1 + e^-z) */
            for (j = 0; j < 16 * m; j += 4) {
                const float32x4_t z = vld1q_f32(tz + j);
                const float32x4_t g = vdivq_f32(z, vaddq_f32(one, attn__exp_neon(vnegq_f32(z))));
                /* -0 below ATTN__SILU_ZERO (the exp clamps instead of giving inf) */
                vst1q_f32(ty + j, vmulq_f32(vld1q_f32(ty + j), vbslq_f32(vcltq_f32(z, vdupq_n_f32(ATTN__SILU_ZERO)), vdupq_n_f32(-0.0f), g)));
            }
        attn__ssm_tile_neon(NULL, k->y, t0, m, ty);
    }
    attn__ssm_tile_neon(NULL, k->xout, 0, N, x);
}

/* ---- the selective scan's backward (attn__ssm_bk) on 4 x 4 lanes ---- */
typedef struct attn__w_neon { float32x4_t v[4]; } attn__w_neon;
static inline attn__w_neon attn__w_ld_neon(const float *p) {
    attn__w_neon r;
    r.v[0] = vld1q_f32(p); r.v[1] = vld1q_f32(p + 4); r.v[2] = vld1q_f32(p + 8); r.v[3] = vld1q_f32(p + 12);
    return r;
}
static inline void attn__w_st_neon(float *p, attn__w_neon x) {
    vst1q_f32(p, x.v[0]); vst1q_f32(p + 4, x.v[1]); vst1q_f32(p + 8, x.v[2]); vst1q_f32(p + 12, x.v[3]);
}
static inline attn__w_neon attn__w_set_neon(float s) {
    attn__w_neon r;
    r.v[0] = r.v[1] = r.v[2] = r.v[3] = vdupq_n_f32(s);
    return r;
}
static inline attn__w_neon attn__w_add_neon(attn__w_neon x, attn__w_neon y) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = vaddq_f32(x.v[i], y.v[i]);
    return x;
}
static inline attn__w_neon attn__w_sub_neon(attn__w_neon x, attn__w_neon y) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = vsubq_f32(x.v[i], y.v[i]);
    return x;
}
static inline attn__w_neon attn__w_mul_neon(attn__w_neon x, attn__w_neon y) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = vmulq_f32(x.v[i], y.v[i]);
    return x;
}
static inline attn__w_neon attn__w_fma_neon(attn__w_neon x, attn__w_neon y, attn__w_neon z) {
    int i;
    for (i = 0; i < 4; ++i) z.v[i] = vfmaq_f32(z.v[i], x.v[i], y.v[i]);
    return z;
}
static inline attn__w_neon attn__w_exp2_neon(attn__w_neon x) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = attn__exp2_neon(x.v[i]);
    return x;
}
static inline attn__w_neon attn__w_clamp_neon(attn__w_neon x) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = attn__clamp18_neon(x.v[i]);
    return x;
}
static inline attn__w_neon attn__w_softplus_neon(attn__w_neon x) {
    int i;
    for (i = 0; i < 4; ++i) x.v[i] = attn__softplus_neon(x.v[i]);
    return x;
}
/* 1 / (1 + e^-z) as attn__w_sig_512 */
static inline attn__w_neon attn__w_sig_neon(attn__w_neon x) {
    int i;
    for (i = 0; i < 4; ++i) {
        const float32x4_t t = vminq_f32(vdupq_n_f32(126.0f), attn__clamp18_neon(vmulq_f32(x.v[i], vdupq_n_f32(-1.44269504088896341f))));
        x.v[i] = vdivq_f32(vdupq_n_f32(1.0f), vaddq_f32(vdupq_n_f32(1.0f), attn__exp2_neon(t)));
    }
    return x;
}
static inline attn__w_neon attn__w_sel_lt_neon(attn__w_neon p, attn__w_neon q, attn__w_neon x, attn__w_neon y) {
    int i;
    for (i = 0; i < 4; ++i) y.v[i] = vbslq_f32(vcltq_f32(p.v[i], q.v[i]), x.v[i], y.v[i]);
    return y;
}
static void attn__w_rows_in_neon(const float *const *rows, int t0, int m, float *dst) { attn__ssm_tile_neon(rows, NULL, t0, m, dst); }
static void attn__w_rows_out_neon(float *src, float *const *rows, int m) { attn__ssm_tile_neon(NULL, rows, 0, m, src); }
/* out[j] = (add ? out[j] : 0) + sum_c v[j][c], j < m: each row's four vectors added pairwise,
   then pairwise adds over 4 rows at a time */
static void attn__w_hred_neon(const float *v, float *out, int m, int add) {
    float tmp[16];
    int i, j;
    for (i = 0; i < 16; i += 4) {
        float32x4_t r[4];
        for (j = 0; j < 4; ++j) {
            const float *p = v + 16 * (i + j);
            r[j] = vaddq_f32(vaddq_f32(vld1q_f32(p), vld1q_f32(p + 4)), vaddq_f32(vld1q_f32(p + 8), vld1q_f32(p + 12)));
        }
        vst1q_f32(tmp + i, vpaddq_f32(vpaddq_f32(r[0], r[1]), vpaddq_f32(r[2], r[3])));
    }
    for (j = 0; j < m; ++j) out[j] = add ? out[j] + tmp[j] : tmp[j];
}
ATTN__SSM_BWD_DEF(neon, )
ATTN__SSM_CBWD_DEF(neon, )

static const attn__isa attn__isa_neon = {
    "neon", 0, attn__qk_neon, attn__qk_narrow_neon, attn__softmax_neon, attn__pv_neon, attn__load_neon, attn__store_row,
    attn__dot_neon, attn__axpy_neon, attn__scal_neon, attn__max_neon, attn__exp_sum_neon, attn__madd_neon,
    attn__ssm_scan_neon, attn__elu1_neon, attn__elu1_grad_neon, attn__ssm_bwd_neon, attn__ssm_cbwd_neon
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
/* The vector layer of the CPU's best ISA (see attn__isa's dot .. exp_sum). */
static const attn__isa *attn__vec(void) { return attn__pick_isa(); }

/* ---------------------------------------------------------------------------------------
   3.6 AMX / AVX512-BF16 tile kernels (bf16), called by 3.7
   --------------------------------------------------------------------------------------- */
/* bf16 q/k/v outside decoding (Sq x Hq/Hkv <= 16, or <= 32 on the fused decoding kernels,
   stays on 3.7's decode path, which is bandwidth-bound): Q.K^T and P.V as bf16 products
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
   attn_desc.bf16_kernels picks per call (ATTN_BF16_NO_AMX, ATTN_BF16_FP32). */
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

/* 3.7's helpers, defined after this section */
ATTN__HD static int attn__chunk_full(const attn__problem *P, long long p0, long long p1, long long c0, long long c1);
ATTN__HD static int attn__key_ranges(const attn__problem *P, long long p0, long long p1, long long Lk, long long r[2][2]);
ATTN__HD static int attn__visible(const attn__problem *P, long long p, long long j);
static void attn__fwd_store(const attn__problem *P, const attn__isa *isa, int tb, int row, int h, const float *acc, float m, float l);
static void attn__score_stage(const attn__problem *P, attn__smx *X, float *S, int nk, int n, int nlanes, long long c0,
                              int full, int seq, int Lk, const int *head, const int *qrow, int v0, long long shift);

/* Per-row state of a bf16 tile (the fields attn__tile keeps, plus m, l, alpha). */
typedef struct attn__btile {
    int32_t lo[ATTN__BQ], hi[ATTN__BQ], cap[ATTN__BQ];
    int head[ATTN__BQ], qrow[ATTN__BQ];
    float slope[ATTN__BQ], m[ATTN__BQ], l[ATTN__BQ], alpha[ATTN__BQ];
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
    /* dropout (3.9), in-kernel RoPE and paged caches (3.12) run on the fp32 kernels */
    if (P->bf16_kernels == ATTN_BF16_FP32 || P->q.dtype != ATTN_BF16 || P->k.dtype != ATTN_BF16 || P->dropout_p > 0.0f || P->rope || P->page_size) return 0;
    k = attn__bf16_cpu();
    return P->bf16_kernels == ATTN_BF16_NO_AMX ? ATTN__MIN(k, 1) : k;
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
    const int D = P->q.dim, Dv = P->v.dim, nlanes = (n + 15) & ~15;
    const int nk32 = (nk + 31) & ~31, full = attn__chunk_full(P, p0, p1, c0, c0 + nk);
    const char *kp = (const char *)attn__at(&P->k, tb, k0 + (int)c0, hk);
    const char *vp = (const char *)attn__at(&P->v, tb, k0 + (int)c0, hk);
    const ptrdiff_t kst = P->k.ss * (ptrdiff_t)P->k.esize, vst = P->v.ss * (ptrdiff_t)P->v.esize;
    attn__smx X;
    int j;
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
    X.m = T->m; X.l = T->l; X.alpha = T->alpha; X.slope = T->slope;
    X.lo = T->lo; X.hi = T->hi; X.cap = T->cap;
    attn__score_stage(P, &X, S, nk, n, nlanes, c0, full, seq, Lk, T->head, T->qrow, v0, shift);
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
    for (r = 0; r < ATTN__BQ; ++r) {               /* per-row masks (attn__lane_rule) */
        long long p;
        T->m[r] = -INFINITY; T->l[r] = 0.0f; T->alpha[r] = 1.0f;
        if (r >= n) { T->lo[r] = 0; T->hi[r] = -1; T->cap[r] = -1; T->slope[r] = 0.0f; T->head[r] = 0; T->qrow[r] = 0; continue; }
        T->head[r] = hk * g + (v0 + r) % g;
        T->qrow[r] = q0 + (v0 + r) / g;
        p = (v0 + r) / g + shift;
        attn__lane_rule(P->causal, P->window_left, P->window_right, P->global, p, Lk, &T->cap[r], &T->lo[r], &T->hi[r]);
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
            attn__fwd_store(P, &attn__isa_avx512, tb, T->qrow[r], T->head[r], ar, T->m[r], T->l[r]);
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
   3.7 exact attention: masks, tiled online-softmax forward, split-KV
   --------------------------------------------------------------------------------------- */
static size_t attn__round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Key j (in [0, Lk)) visible from query position p: the SEMANTICS block, literally. */
ATTN__HD static int attn__visible(const attn__problem *P, long long p, long long j) {
    long long t = p - j, D = P->dilation;
    if (P->causal && j > p) return 0;
    if (j < P->sink || j < P->global || p < P->global) return 1;
    if (D > 1 && t % D != 0) return 0;
    if (P->window_left && t > (long long)P->window_left * D) return 0;
    if (P->window_right && -t > (long long)P->window_right * D) return 0;
    return 1;
}

/* Whether every key in [c0, c1) is visible from every query position in [p0, p1]. */
ATTN__HD static int attn__chunk_full(const attn__problem *P, long long p0, long long p1, long long c0, long long c1) {
    if (P->causal && c1 - 1 > p0) return 0;
    if (c1 <= P->sink || c1 <= P->global || p1 < P->global) return 1;
    if (P->dilation > 1) return 0;
    if (P->window_left && p1 - c0 > P->window_left) return 0;
    if (P->window_right && c1 - 1 - p0 > P->window_right) return 0;
    return 1;
}

/* Up to two key ranges [lo, hi) outside which no key is visible from positions [p0, p1]:
   fully masked chunks are never computed. Returns how many ranges. */
ATTN__HD static int attn__key_ranges(const attn__problem *P, long long p0, long long p1, long long Lk, long long r[2][2]) {
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

/* Sequence n of the batch (packed: segment n of cu_seqlens; else batch entry n): where it
   lives and its valid lengths. The one place seqlens / cu_seqlens are read. */
ATTN__HD static void attn__seq_at(const attn__problem *P, int n, attn__seq *S) {
    if (P->cu_q) {
        S->tb = 0; S->seq = n; S->q0 = P->cu_q[n]; S->k0 = P->cu_k[n];
        S->Lq = P->cu_q[n + 1] - P->cu_q[n]; S->Lk = P->cu_k[n + 1] - P->cu_k[n];
    } else {
        S->tb = n; S->seq = n; S->q0 = 0; S->k0 = 0;
        S->Lq = P->seqlens_q ? P->seqlens_q[n] : P->q.seq;
        S->Lk = P->seqlens_k ? P->seqlens_k[n] : P->k.seq;
    }
}

/* The sequence owning tensor row `row` of batch tb; 0 if none (padding, varlen tail). */
static int attn__seq_of_row(const attn__problem *P, int tb, int row, attn__seq *S) {
    if (P->cu_q) {
        int lo = 0, hi = P->n_seqs;                       /* last s with cu_q[s] <= row */
        while (hi - lo > 1) { int mid = (lo + hi) / 2; if (P->cu_q[mid] <= row) lo = mid; else hi = mid; }
        while (lo < P->n_seqs && P->cu_q[lo + 1] <= row) ++lo;   /* skip empty segments */
        if (lo >= P->n_seqs) return 0;
        attn__seq_at(P, lo, S);
        return 1;
    }
    attn__seq_at(P, tb, S);
    return row < S->Lq;
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
    long long pos[ATTN__BQ];                   /* query position (ALiBi in the decoding kernels) */
    float slope[ATTN__BQ];
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
    int units_per_head, n_units, n_splits;
    long long split_keys;      /* keys per split, a multiple of ATTN__BK (64-bit: k.seq may be near INT_MAX) */
    int decode;                /* one narrow tile per (batch, KV head): a task takes every KV head */
    int decode_chunk;          /* keys per staged chunk when decoding (attn__decode_stage) */
    int fused;                 /* decoding takes attn__fwd_decode_fused (no stage) */
    int dec_tiles;             /* decoding tiles per KV head (rows in blocks of ATTN__DEC_ROWS when fused) */
    int bf16;                  /* 3.6 bf16 tile kernels: 0 none, 1 AVX512-BF16, 2 AMX */
    int copy_k, copy_v;        /* K / V rows are copied into fp32 rows before the tile kernels read them */
    size_t hc_off, hc_rows;    /* the head cache (attn__tile_chunk) at ws + hc_off in each thread's
                                  block, rows of one (batch, KV head); hc_rows 0: none */
} attn__fwd_ctx;

/* Writes one finished row: out = acc / l, lse = m + log l; zeros and -inf if l == 0 (no key
   seen). A NaN l (a NaN or +inf logit reached the sum) is stored as it is: NaN out, NaN lse. */
static void attn__fwd_store(const attn__problem *P, const attn__isa *isa, int tb, int row, int h, const float *acc, float m, float l) {
    void *o = attn__at(&P->out, tb, row, h);
    float *lse = P->lse ? P->lse + ((size_t)tb * P->q.heads + h) * P->q.seq + row : NULL;
    if (l != 0.0f) {
        isa->store(o, P->out.dtype, acc, P->v.dim, 1.0f / l);
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
    T->narrow = n <= 16;
    T->shift = (long long)S->Lk - S->Lq;
    T->p0 = v0 / g + T->shift; T->p1 = (v0 + n - 1) / g + T->shift;
    rows = T->narrow ? 16 : ATTN__BQ;
    T->qt = mem + st;
    T->qr = T->qt;                                  /* a tile packs QT or QR, never both */
    T->acc = T->qt + (T->narrow ? 16 * C->geo.ldk : C->geo.ldk * ATTN__BQ);
    T->m = T->acc + (size_t)rows * C->geo.ldo; T->l = T->m + rows; T->alpha = T->l + rows;
    for (r = 0; r < T->nlanes; ++r) {
        long long p;
        if (r >= n) { T->lo[r] = 0; T->hi[r] = -1; T->cap[r] = -1; T->pos[r] = 0; T->slope[r] = 0.0f; continue; }
        T->head[r] = hk * g + (v0 + r) % g;
        T->qrow[r] = S->q0 + (v0 + r) / g;
        p = (v0 + r) / g + T->shift;
        attn__lane_rule(P->causal, P->window_left, P->window_right, P->global, p, S->Lk, &T->cap[r], &T->lo[r], &T->hi[r]);
        T->pos[r] = p;
        T->slope[r] = P->alibi ? P->alibi[T->head[r]] : 0.0f;
    }
    for (r = 0; r < T->nlanes; ++r) {             /* queries, scale folded in */
        if (T->narrow && !P->rope) {               /* row-major QR, one load per row */
            float *qr = T->qr + (size_t)r * C->geo.ldk;
            const int d0 = r < n ? D : 0;
            if (r < n) C->isa->load(attn__at(&P->q, S->tb, T->qrow[r], T->head[r]), P->q.dtype, qr, D, P->scale);
            memset(qr + d0, 0, sizeof(float) * (attn__round16((size_t)D) - (size_t)d0));   /* see below */
        } else for (d = 0; d < D; d += 16) {
            const int m = ATTN__MIN(16, D - d);
            int e;
            if (r < n && P->rope)                  /* in-kernel RoPE (3.12): rotate, then scale */
                attn__rope_load(P, attn__at(&P->q, S->tb, T->qrow[r], T->head[r]), P->q.dtype, d, m,
                                P->rope_pos_q ? P->rope_pos_q[(size_t)S->tb * P->q.seq + T->qrow[r]] : (v0 + r) / g + T->shift,
                                qtmp, P->scale);
            else if (r < n) C->isa->load((const char *)attn__at(&P->q, S->tb, T->qrow[r], T->head[r]) + (size_t)d * P->q.esize,
                                    P->q.dtype, qtmp, m, P->scale);
            else for (e = 0; e < m; ++e) qtmp[e] = 0.0f;
            for (e = m; e < 16; ++e) qtmp[e] = 0.0f;
            /* QR rows are read 16 floats at a time with the K load masked: the padding must be
               0, not garbage (0 * NaN would poison the dot product) */
            if (T->narrow) memcpy(T->qr + (size_t)r * C->geo.ldk + d, qtmp, sizeof qtmp);
            else for (e = 0; e < m; ++e) T->qt[(size_t)(d + e) * ATTN__BQ + r] = qtmp[e];
        }
        T->m[r] = -INFINITY; T->l[r] = 0.0f;
        if (r < ((n + 7) & ~7))                    /* the P.V kernels touch rows up to a multiple of 8 */
            memset(T->acc + (size_t)r * C->geo.ldo, 0, sizeof(float) * C->geo.ldo);
    }
    if (!T->narrow && T->nlanes < ATTN__BQ)        /* the 64-lane QK kernel reads every lane */
        for (d = 0; d < D; ++d)
            memset(T->qt + (size_t)d * ATTN__BQ + T->nlanes, 0, sizeof(float) * (size_t)(ATTN__BQ - T->nlanes));
}

/* K/V row `row` of batch tb, head h: in place, or through the block table of a paged cache. */
static const char *attn__kv_at(const attn__problem *P, const attn__view *v, int tb, int row, int h) {
    if (P->page_size) {
        const ptrdiff_t page = P->block_table[(size_t)tb * (size_t)P->max_pages + (size_t)(row / P->page_size)];
        return v->data + (ptrdiff_t)v->esize * (page * v->sb + (ptrdiff_t)(row % P->page_size) * v->ss + (ptrdiff_t)h * v->sh);
    }
    return (const char *)attn__at(v, tb, row, h);
}
/* How many of the n keys from row `row` on are one strided run (a paged cache: same page). */
static int attn__kv_run(const attn__problem *P, long long row, int n) {
    return P->page_size ? (int)ATTN__MIN((long long)n, P->page_size - row % P->page_size) : n;
}

/* Attention dropout on a tile's probabilities S [nk][BQ] (defined in 3.9). */
static void attn__dropout_tile(const attn__problem *P, const attn__tile *T, float *S, long long c0, int nk);

/* Between Q.K^T and the softmax, for every kind of tile: softcap (it comes before bias and
   mask, so it is applied here when either follows; else the softmax kernel fuses it), the
   additive bias, the dilated-window rule per element; then the rest of X for isa->softmax
   (which applies ALiBi and the lo/hi/cap mask). Row r < n is query row qrow[r] of head
   head[r] at position (v0 + r) / groups + shift; lanes n..nlanes-1 are padding. */
static void attn__score_stage(const attn__problem *P, attn__smx *X, float *S, int nk, int n, int nlanes, long long c0,
                              int full, int seq, int Lk, const int *head, const int *qrow, int v0, long long shift) {
    int r, j;
    X->pre = attn__lane_pre(P->sink, P->global, Lk);
    X->alibi = P->alibi != NULL;
    X->pos = X->rel;
    if (X->alibi)           /* distances relative to c0 in 64-bit integers: exact in fp32 below 2^24 */
        for (r = 0; r < nlanes; ++r) X->rel[r] = r < n ? (float)((long long)(v0 + r) / P->groups + shift - c0) : 0.0f;
    X->softcap = P->softcap;
    X->mask = !full;
    if (P->softcap > 0.0f && (P->bias || (!full && P->dilation > 1))) {
        for (j = 0; j < nk; ++j)
            for (r = 0; r < n; ++r) {
                float *sv = S + (size_t)j * ATTN__BQ + r;
                *sv = P->softcap * tanhf(*sv / P->softcap);
            }
        X->softcap = 0.0f;
    }
    if (P->bias) {
        for (r = 0; r < n; ++r) {
            const int bb = P->bias_batch == 1 ? 0 : seq, bh = P->bias_heads == 1 ? 0 : head[r];
            const float *br = P->bias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh +
                              (ptrdiff_t)qrow[r] * P->bias_sq + c0;
            for (j = 0; j < nk; ++j) S[(size_t)j * ATTN__BQ + r] += br[j];
        }
    }
    if (!full && P->dilation > 1) {                 /* dilated windows: the rule per element */
        for (r = 0; r < nlanes; ++r)
            for (j = 0; j < nk; ++j)
                if (r >= n || !attn__visible(P, (v0 + r) / P->groups + shift, c0 + j)) S[(size_t)j * ATTN__BQ + r] = -INFINITY;
        X->mask = 0;
    }
}

/* Keys [c0, c0 + nk) of the sequence into tile T, from fp32 rows K (stride ldk) and V. */
static void attn__tile_chunk_rows(const attn__fwd_ctx *C, attn__tile *T, float *S, long long c0, int nk,
                                  const float *K, ptrdiff_t ldk, const float *V, ptrdiff_t ldv) {
    const attn__problem *P = C->P;
    const attn__isa *isa = C->isa;
    const int D = P->q.dim, Dv = P->v.dim, n = T->n;
    const int full = attn__chunk_full(P, T->p0, T->p1, c0, c0 + nk);
    attn__smx X;
    if (T->narrow) isa->qk_narrow(K, ldk, nk, T->qr, C->geo.ldk, n, D, S);
    else isa->qk(K, ldk, nk, T->qt, T->nlanes, D, S);

    X.m = T->m; X.l = T->l; X.alpha = T->alpha; X.slope = T->slope;
    X.lo = T->lo; X.hi = T->hi; X.cap = T->cap;
    attn__score_stage(P, &X, S, nk, n, T->nlanes, c0, full, T->S.seq, T->S.Lk, T->head, T->qrow, T->v0, T->shift);
    isa->softmax(S, nk, T->nlanes, (int)c0, &X);
    if (P->dropout_p > 0.0f) attn__dropout_tile(P, T, S, c0, nk);   /* l keeps the undropped sum */
    isa->pv(S, nk, n, V, ldv, Dv, T->alpha, T->acc, C->geo.ldo);
}

/* In-kernel RoPE (3.12) on fp32 key rows x[j] = keys c0 + j of sequence S: at their slots
   (from the per-call table, or by recurrence), or at the positions the caller gave. */
static void attn__rope_keys(const attn__problem *P, const attn__seq *S, float *x, size_t ld, long long c0, int nk) {
    int j;
    if (P->rope_tab) attn__rope_rows_tab(P, x, ld, nk, c0);
    else if (!P->rope_pos_k) attn__rope_rows(P, x, ld, nk, c0);
    else
        for (j = 0; j < nk; ++j)
            attn__rope_row(P, x + (size_t)j * ld, P->rope_pos_k[(size_t)S->tb * (size_t)P->rope_ld_k + (size_t)(S->k0 + (int)c0 + j)]);
}

/* Keys [c0, c0 + nk) of the sequence (one strided run of K/V rows) of tile T's KV head as fp32
   rows: K (copy_k) to kdst and V (copy_v) to vdst, row strides geo.ldk / geo.ldv; f16/bf16
   converted, K rotated under in-kernel RoPE. */
static void attn__tile_copy_kv(const attn__fwd_ctx *C, const attn__tile *T, long long c0, int nk, float *kdst, float *vdst) {
    const attn__problem *P = C->P;
    int j;
    if (C->copy_k) {
        const char *kp = attn__kv_at(P, &P->k, T->S.tb, T->S.k0 + (int)c0, T->hk);
        const ptrdiff_t kst = P->k.ss * (ptrdiff_t)P->k.esize;
        for (j = 0; j < nk; ++j)
            C->isa->load(kp + (ptrdiff_t)j * kst, P->k.dtype, kdst + (size_t)j * C->geo.ldk, P->q.dim, 1.0f);
        if (P->rope) attn__rope_keys(P, &T->S, kdst, C->geo.ldk, c0, nk);
    }
    if (C->copy_v) {
        const char *vp = attn__kv_at(P, &P->v, T->S.tb, T->S.k0 + (int)c0, T->hk);
        const ptrdiff_t vst = P->v.ss * (ptrdiff_t)P->v.esize;
        for (j = 0; j < nk; ++j)
            C->isa->load(vp + (ptrdiff_t)j * vst, P->v.dtype, vdst + (size_t)j * C->geo.ldv, P->v.dim, 1.0f);
    }
}

/* The head cache: a thread's copies of the K/V rows of the (batch, KV head, sequence) it ran
   last, filled a block of ATTN__BK keys at a time as its tiles first need them. Each query tile
   of a head reads every key block it sees, so without it a block was copied again for every
   tile (S / 64 times at S keys): S 1024, D 128, [B,S,H,D] f32 on AVX2 that was 7% more
   instructions and 13% more time than reading [B,H,S,D] in place. Layout: tag (tb, hk, k0,
   valid) as 4 long longs, a bitmap of filled blocks, then hc_rows K rows and hc_rows V rows. */
#define ATTN__HEAD_CACHE_BYTES ((size_t)8 << 20)   /* most bytes of K/V rows per thread */
static void attn__fwd_copies(attn__fwd_ctx *C) {   /* which of K and V the tiles read from copies */
    const attn__problem *P = C->P;
    C->copy_k = P->k.dtype != ATTN_F32 || P->rope || (C->isa->pack_strided_kv && P->k.ss != P->q.dim);
    C->copy_v = P->v.dtype != ATTN_F32 || (C->isa->pack_strided_kv && P->v.ss != P->v.dim);
}
static size_t attn__head_cache_bits(size_t rows) { return attn__round16(((rows / ATTN__BK + 63) / 64) * 2); }
static void attn__head_cache_reset(const attn__fwd_ctx *C, float *ws) {
    if (C->hc_rows) { long long tag[4] = { -1, -1, -1, 0 }; memcpy(ws + C->hc_off, tag, sizeof tag); }
}

/* Keys [c0, c0 + nk) of the sequence (one strided run of K/V rows) into tile T: f32 rows read in
   place, copies (f16/bf16, RoPE, strided rows where isa->pack_strided_kv) from the head cache
   or the scratch. */
static void attn__tile_chunk(const attn__fwd_ctx *C, attn__tile *T, float *scratch, long long c0, int nk) {
    const attn__problem *P = C->P;
    float *S = scratch, *kbuf = S + ATTN__BK * ATTN__BQ, *vbuf = kbuf + ATTN__BK * C->geo.ldk;
    const float *K = (const float *)(const void *)attn__kv_at(P, &P->k, T->S.tb, T->S.k0 + (int)c0, T->hk);
    const float *V = (const float *)(const void *)attn__kv_at(P, &P->v, T->S.tb, T->S.k0 + (int)c0, T->hk);
    ptrdiff_t ldk = P->k.ss, ldv = P->v.ss;
    if (C->hc_rows) {
        float *hc = scratch + C->hc_off, *hk_rows = hc + 16 + attn__head_cache_bits(C->hc_rows);
        float *hv_rows = hk_rows + C->hc_rows * C->geo.ldk;
        uint64_t *bits = (uint64_t *)(void *)(hc + 16);
        long long tag[4], b;
        memcpy(tag, hc, sizeof tag);
        if (!tag[3] || tag[0] != T->S.tb || tag[1] != T->hk || tag[2] != T->S.k0) {
            tag[0] = T->S.tb; tag[1] = T->hk; tag[2] = T->S.k0; tag[3] = 1;
            memcpy(hc, tag, sizeof tag);
            memset(bits, 0, attn__head_cache_bits(C->hc_rows) * sizeof(float));
        }
        for (b = c0 / ATTN__BK; b <= (c0 + nk - 1) / ATTN__BK; ++b)
            if (!(bits[b / 64] >> (b % 64) & 1u)) {
                const long long b1 = ATTN__MIN((b + 1) * ATTN__BK, (long long)T->S.Lk);
                long long c;
                int n;
                for (c = b * ATTN__BK; c < b1; c += n) {    /* one strided run (page) at a time */
                    n = attn__kv_run(P, T->S.k0 + c, (int)(b1 - c));
                    attn__tile_copy_kv(C, T, c, n, hk_rows + (size_t)c * C->geo.ldk, hv_rows + (size_t)c * C->geo.ldv);
                }
                bits[b / 64] |= (uint64_t)1 << (b % 64);
            }
        kbuf = hk_rows + (size_t)c0 * C->geo.ldk; vbuf = hv_rows + (size_t)c0 * C->geo.ldv;
    } else {
        attn__tile_copy_kv(C, T, c0, nk, kbuf, vbuf);
    }
    if (C->copy_k) { K = kbuf; ldk = (ptrdiff_t)C->geo.ldk; }
    if (C->copy_v) { V = vbuf; ldv = (ptrdiff_t)C->geo.ldv; }
    attn__tile_chunk_rows(C, T, S, c0, nk, K, ldk, V, ldv);
}

/* Every visible key of [klo, khi) into tile T, chunk by chunk; fully masked chunks skipped. */
static void attn__tile_keys(const attn__fwd_ctx *C, attn__tile *T, float *scratch, long long klo, long long khi) {
    const attn__problem *P = C->P;
    long long ranges[2][2], c0;
    int ri, nk, n_ranges = attn__key_ranges(P, T->p0, T->p1, T->S.Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        const long long a = ATTN__MAX(ranges[ri][0], klo), b = ATTN__MIN(ranges[ri][1], khi);
        for (c0 = a; c0 < b; c0 += nk) {
            nk = attn__kv_run(P, T->S.k0 + c0, (int)ATTN__MIN((long long)ATTN__BK, b - c0));
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
            attn__fwd_store(C->P, C->isa, T->S.tb, T->qrow[r], T->head[r], acc, T->m[r], T->l[r]);
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
            if (split == 0) attn__fwd_store(P, C->isa, tb, row, hk * g + v % g, NULL, 0.0f, 0.0f);
            ++v;
            continue;
        }
        {
            const int end = (int)ATTN__MIN((long long)vr1, ((long long)S.q0 + S.Lq) * g);
            long long klo = 0, khi = S.Lk;
            if (C->n_splits > 1) { klo = (long long)split * C->split_keys; khi = ATTN__MIN(khi, klo + C->split_keys); }
#if defined(ATTN__BF16K)   /* 3.6: bf16 q/k/v on the bf16 dot-product / AMX tile kernels */
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

/* Decoding: all KV heads of batch tb over one split of the keys, chunk by chunk. The common
   step (one query row per sequence, AVX-512, no bias/dilation/dropout/in-kernel RoPE) runs
   the fused kernel below (attn__fwd_decode_fused); everything else stages: each chunk's
   K and V rows of every head are first staged (converted to fp32) into an L2-resident buffer
   in one pass that walks memory in address order, so the hardware prefetchers stream it; the
   per-head kernels then read the staged rows. Reading one head's rows straight from a
   [seq][heads][dim] cache is a walk with a page-sized stride that the prefetchers do not
   follow: it measured 7 GB/s on one core against 38 GB/s for a streaming read. */
/* Decoding's per-KV-head tiles live one after another after the scratch, then the stage. */
static attn__tile *attn__decode_tile(const attn__fwd_ctx *C, float *ws, int hk) {
    return (attn__tile *)(void *)(ws + C->geo.scratch + (size_t)hk * C->geo.narrow_tile);
}

/* Prefetches part `part` of `parts` of the rows attn__decode_stage will read for keys
   [c0, c0 + nk) into L2, so the next chunk's memory reads overlap this chunk's arithmetic. */
static void attn__decode_prefetch(const attn__fwd_ctx *C, const attn__seq *S, long long c0, int nk, int part, int parts) {
#if defined(__GNUC__) || defined(__clang__)
    const attn__problem *P = C->P;
    const int Hk = P->k.heads, rows = nk * Hk, r0 = (int)((long long)rows * part / parts),
              r1 = (int)((long long)rows * (part + 1) / parts);
    const size_t kb = (size_t)P->q.dim * P->k.esize, vb = (size_t)P->v.dim * P->v.esize;
    int r;
    size_t off;
    for (r = r0; r < r1; ++r) {
        const int key = S->k0 + (int)c0 + r / Hk, hk = r % Hk;
        const char *kp = attn__kv_at(P, &P->k, S->tb, key, hk), *vp = attn__kv_at(P, &P->v, S->tb, key, hk);
        for (off = 0; off < kb; off += 64) __builtin_prefetch(kp + off, 0, 2);
        for (off = 0; off < vb; off += 64) __builtin_prefetch(vp + off, 0, 2);
    }
#else
    (void)C; (void)S; (void)c0; (void)nk; (void)part; (void)parts;
#endif
}

/* Keys [c0, c0 + nk) of every KV head into the stage: K rows at stage[hk][j][ldk], V rows
   after all K rows at [hk][j][ldv]. The loop order follows the larger stride outside. */
static void attn__decode_stage(const attn__fwd_ctx *C, const attn__seq *S, float *stage, long long c0, int nk) {
    const attn__problem *P = C->P;
    const int Hk = P->k.heads, dk = C->decode_chunk;
    float *vstage = stage + (size_t)Hk * dk * C->geo.ldk;
    const int keys_outer = (P->k.ss < 0 ? -P->k.ss : P->k.ss) >= (P->k.sh < 0 ? -P->k.sh : P->k.sh);
    int a, b;
    for (a = 0; a < (keys_outer ? nk : Hk); ++a)
        for (b = 0; b < (keys_outer ? Hk : nk); ++b) {
            const int j = keys_outer ? a : b, hk = keys_outer ? b : a;
            const int key = S->k0 + (int)c0 + j;
            C->isa->load(attn__kv_at(P, &P->k, S->tb, key, hk), P->k.dtype,
                         stage + ((size_t)hk * dk + j) * C->geo.ldk, P->q.dim, 1.0f);
            C->isa->load(attn__kv_at(P, &P->v, S->tb, key, hk), P->v.dtype,
                         vstage + ((size_t)hk * dk + j) * C->geo.ldv, P->v.dim, 1.0f);
        }
    if (P->rope)
        for (a = 0; a < Hk; ++a) attn__rope_keys(P, S, stage + (size_t)a * dk * C->geo.ldk, C->geo.ldk, c0, nk);
}

#if defined(ATTN__X86_SIMD)
/* Fused decoding (AVX-512), for the keys every query row of a sequence sees (attn__fwd_decode
   stages the few that only some rows see), so a chunk of keys needs no mask beyond its tail.
   No stage: each chunk's K rows are read once, in address order (key groups outer, KV heads
   inner), straight into register dot products; then per head the online softmax and P.V with
   the accumulators in registers. The next chunk's rows are prefetched (into L2) while this one
   computes, so the memory reads overlap the arithmetic.
   R = the tile's rows (at most ATTN__DEC_ROWS) rounded up to a power of two; 16 accumulators are
   16/R keys x R rows in Q.K^T and R rows x 16/R column vectors in P.V. Scores sit in
   S[h][j*R + r] (ATTN__DEC_NK keys x R rows per head), the tile's m, l and alpha as 16-lane patterns
   (lane i = row i % R). */
#define ATTN__X16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)

/* One vector whose lane i is the sum of a_i's 16 lanes. */
ATTN__T512 static ATTN__INLINE __m512 attn__hsum16_512(__m512 a0, __m512 a1, __m512 a2, __m512 a3, __m512 a4, __m512 a5,
                                                      __m512 a6, __m512 a7, __m512 a8, __m512 a9, __m512 a10, __m512 a11,
                                                      __m512 a12, __m512 a13, __m512 a14, __m512 a15) {
#define ATTN__HS1(x, y) _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y))
#define ATTN__HS2(x, y) _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))), \
                                      _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(x), _mm512_castps_pd(y))))
#define ATTN__HS3(x, y) _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xdd))
    const __m512 b0 = ATTN__HS1(a0, a1), b1 = ATTN__HS1(a2, a3), b2 = ATTN__HS1(a4, a5), b3 = ATTN__HS1(a6, a7);
    const __m512 b4 = ATTN__HS1(a8, a9), b5 = ATTN__HS1(a10, a11), b6 = ATTN__HS1(a12, a13), b7 = ATTN__HS1(a14, a15);
    const __m512 c0 = ATTN__HS2(b0, b1), c1 = ATTN__HS2(b2, b3), c2 = ATTN__HS2(b4, b5), c3 = ATTN__HS2(b6, b7);
    const __m512 d0 = ATTN__HS3(c0, c1), d1 = ATTN__HS3(c2, c3);
    return ATTN__HS3(d0, d1);
#undef ATTN__HS1
#undef ATTN__HS2
#undef ATTN__HS3
}

/* Keeps a vector in a register: without it gcc folds each use into the FMA as a memory
   operand, loading it 16/R times instead of once (the loads then bound the loop). */
#if defined(__GNUC__) || defined(__clang__)
#define ATTN__IN_REG(x) __asm__("" : "+v"(x))
#else
#define ATTN__IN_REG(x) ((void)0)
#endif

/* x_i for a constant i (the kernels below index named registers by row or key). */
ATTN__T512 static ATTN__INLINE __m512 attn__pick16(int i, __m512 x0, __m512 x1, __m512 x2, __m512 x3, __m512 x4, __m512 x5,
                                                  __m512 x6, __m512 x7, __m512 x8, __m512 x9, __m512 x10, __m512 x11,
                                                  __m512 x12, __m512 x13, __m512 x14, __m512 x15) {
    switch (i) {
    case 0: return x0;   case 1: return x1;   case 2: return x2;   case 3: return x3;
    case 4: return x4;   case 5: return x5;   case 6: return x6;   case 7: return x7;
    case 8: return x8;   case 9: return x9;   case 10: return x10; case 11: return x11;
    case 12: return x12; case 13: return x13; case 14: return x14; default: return x15;
    }
}

/* Max (or sum) of the lanes of x that hold the same row (lane i: row i % R), in every lane. */
ATTN__T512 static ATTN__INLINE __m512 attn__fold512(__m512 x, int R, int is_max) {
#define ATTN__FOLD(y) x = is_max ? _mm512_max_ps(x, y) : _mm512_add_ps(x, y)
    if (R <= 8) ATTN__FOLD(_mm512_shuffle_f32x4(x, x, 0x4e));
    if (R <= 4) ATTN__FOLD(_mm512_shuffle_f32x4(x, x, 0xb1));
    if (R <= 2) ATTN__FOLD(_mm512_permute_ps(x, 0x4e));
    if (R <= 1) ATTN__FOLD(_mm512_permute_ps(x, 0xb1));
#undef ATTN__FOLD
    return x;
}

/* A chunk of nk <= ATTN__DEC_NK keys, and the next chunk's nn keys to prefetch. Every key has
   its own row pointers, so a chunk may span the pages of a paged cache. */
typedef struct attn__dec_chunk {
    const char *k[ATTN__DEC_NK], *v[ATTN__DEC_NK];    /* key c0 + j's rows of KV head 0 */
    const char *kn[ATTN__DEC_NK], *vn[ATTN__DEC_NK];  /* the next chunk's */
    ptrdiff_t khs, vhs;                               /* bytes to the next head */
    long long c0;
    int nk, nn;
    int tile0;                                        /* the first tile: attn__decode_tile(tile0 + KV head) */
} attn__dec_chunk;

/* into L2: a whole chunk ahead would not fit L1 beside the chunk in use */
ATTN__T256 static ATTN__INLINE void attn__prefetch_bytes(const char *p, size_t n) {
    size_t off;
    for (off = 0; off < n; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
}

ATTN__T512 static ATTN__INLINE void attn__dec512_chunk(const attn__fwd_ctx *C, float *ws, float *S, const attn__dec_chunk *X,
                                                       const int R, const attn_dtype t) {
    const attn__problem *P = C->P;
    const int Hk = P->k.heads, D = P->q.dim, nv = P->v.dim / 16, KG = 16 / R, CW = 16 / R, nvec = (X->nk * R + 15) / 16;
    const ptrdiff_t es = (ptrdiff_t)attn__dtype_size(t);
    const size_t ldq = C->geo.ldk, ldo = C->geo.ldo;
    const __m512 ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    int h, g0, kk, d, j, c, v, i;
    /* Q.K^T in address order: 16/R keys x every head, R query rows each */
    for (g0 = 0; g0 < X->nk; g0 += KG) {           /* a short chunk (page end) computes only its keys */
        const char *kr[16];
        for (kk = 0; kk < KG; ++kk) kr[kk] = X->k[ATTN__MIN(g0 + kk, X->nk - 1)];  /* tail: repeat the last key */
        for (h = 0; h < Hk; ++h) {
            const float *q = attn__decode_tile(C, ws, X->tile0 + h)->qr;
            const ptrdiff_t ho = (ptrdiff_t)h * X->khs;
            __m512 a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
            __m512 a8 = zero, a9 = zero, a10 = zero, a11 = zero, a12 = zero, a13 = zero, a14 = zero, a15 = zero;
            __m512 q0 = zero, q1 = zero, q2 = zero, q3 = zero, q4 = zero, q5 = zero, q6 = zero, q7 = zero;
            __m512 q8 = zero, q9 = zero, q10 = zero, q11 = zero, q12 = zero, q13 = zero, q14 = zero, q15 = zero;
            __m512 k0 = zero, k1 = zero, k2 = zero, k3 = zero, k4 = zero, k5 = zero, k6 = zero, k7 = zero;
            __m512 k8 = zero, k9 = zero, k10 = zero, k11 = zero, k12 = zero, k13 = zero, k14 = zero, k15 = zero;
            for (kk = 0; kk < KG && g0 + kk < X->nn; ++kk) attn__prefetch_bytes(X->kn[g0 + kk] + ho, (size_t)(D * es));
            for (d = 0; d < D; d += 16) {       /* R query and 16/R key vectors in registers */
#define ATTN__DEC_LQ(i) if ((i) < R) { q##i = _mm512_loadu_ps(q + (size_t)(i) * ldq + d); ATTN__IN_REG(q##i); }
#define ATTN__DEC_LK(i) if ((i) < KG) { k##i = attn__ld16_512(kr[i] + ho + (ptrdiff_t)d * es, t); ATTN__IN_REG(k##i); }
#define ATTN__DEC_QK(i) a##i = _mm512_fmadd_ps(attn__pick16((i) % R, q0, q1, q2, q3, q4, q5, q6, q7, q8, q9, q10, q11, q12, q13, q14, q15), \
                                               attn__pick16((i) / R, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11, k12, k13, k14, k15), a##i);
                ATTN__X16(ATTN__DEC_LQ)
                ATTN__X16(ATTN__DEC_LK)
                ATTN__X16(ATTN__DEC_QK)
#undef ATTN__DEC_LQ
#undef ATTN__DEC_LK
#undef ATTN__DEC_QK
            }
            _mm512_storeu_ps(S + (size_t)h * ATTN__DEC_NK * R + (size_t)g0 * R,
                             attn__hsum16_512(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15));
        }
    }
    for (h = 0; h < Hk; ++h) {
        attn__tile *T = attn__decode_tile(C, ws, X->tile0 + h);
        float *sh = S + (size_t)h * ATTN__DEC_NK * R;
        const ptrdiff_t vo = (ptrdiff_t)h * X->vhs;
        __m512 mx = ninf, sum = zero, mold, mnew, msafe, alpha, slope = zero, koff = zero;
        if (P->alibi) {                 /* lane i: row i % R's slope; key offset i / R minus that row's position */
            float sl[16], ko[16];
            for (i = 0; i < 16; ++i) { sl[i] = T->slope[i % R]; ko[i] = (float)(X->c0 + i / R - T->pos[i % R]); }
            slope = _mm512_loadu_ps(sl); koff = _mm512_loadu_ps(ko);
        }
        /* online softmax over the chunk (the SEMANTICS order: softcap, ALiBi, mask) */
        for (v = 0; v < nvec; ++v) {
            __m512 x = _mm512_loadu_ps(sh + 16 * v);
            const int valid = X->nk * R - 16 * v;
            if (P->softcap > 0.0f)
                x = _mm512_mul_ps(_mm512_set1_ps(P->softcap), attn__tanh512(_mm512_mul_ps(x, _mm512_set1_ps(1.0f / P->softcap))));
            if (P->alibi) {
                __m512 dist = _mm512_add_ps(_mm512_set1_ps((float)(v * KG)), koff);     /* key - row position */
                dist = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(dist), _mm512_set1_epi32(0x7fffffff)));
                x = _mm512_fnmadd_ps(slope, dist, x);
            }
            if (valid < 16) x = _mm512_mask_blend_ps((__mmask16)(valid <= 0 ? 0 : (1u << valid) - 1u), ninf, x);
            _mm512_storeu_ps(sh + 16 * v, x);
            mx = _mm512_max_ps(mx, x);
        }
        mx = attn__fold512(mx, R, 1);
        mold = _mm512_loadu_ps(T->m);
        mnew = _mm512_max_ps(mold, mx);
        msafe = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(mnew, ninf, _CMP_EQ_OQ), mnew, zero);
        alpha = attn__exp512(_mm512_sub_ps(mold, msafe));
        for (v = 0; v < nvec; ++v) {
            const __m512 p = attn__exp512(_mm512_sub_ps(_mm512_loadu_ps(sh + 16 * v), msafe));
            _mm512_storeu_ps(sh + 16 * v, p);
            sum = _mm512_add_ps(sum, p);
        }
        _mm512_storeu_ps(T->l, _mm512_fmadd_ps(_mm512_loadu_ps(T->l), alpha, attn__fold512(sum, R, 0)));
        _mm512_storeu_ps(T->m, mnew);
        _mm512_storeu_ps(T->alpha, alpha);
        /* P.V: R rows x 16/R column vectors of the accumulator in registers per pass; a last
           pass past the head dim reads a valid column again and stores nothing of it */
        for (c = 0; c < nv; c += CW) {
            __mmask16 mk[16];
            ptrdiff_t co[16];
            __m512 o0, o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13, o14, o15;
            for (i = 0; i < CW; ++i) {
                mk[i] = (__mmask16)(c + i < nv ? 0xffff : 0);
                co[i] = (ptrdiff_t)ATTN__MIN(c + i, nv - 1) * 16 * es;
            }
#define ATTN__DEC_OLD(i) o##i = _mm512_mul_ps(_mm512_set1_ps(T->alpha[(i) / CW]), \
                         _mm512_maskz_loadu_ps(mk[(i) % CW], T->acc + (size_t)((i) / CW) * ldo + (size_t)(c + (i) % CW) * 16));
            ATTN__X16(ATTN__DEC_OLD)
#undef ATTN__DEC_OLD
            for (j = 0; j < X->nk; ++j) {
                const char *vr = X->v[j] + vo;
                const float *pj = sh + (size_t)j * R;
                if (j < X->nn) attn__prefetch_bytes(X->vn[j] + vo + (ptrdiff_t)c * 16 * es, (size_t)(CW * 16 * es));
#define ATTN__DEC_PV(i) o##i = _mm512_fmadd_ps(_mm512_set1_ps(pj[(i) / CW]), attn__ld16_512(vr + co[(i) % CW], t), o##i);
                ATTN__X16(ATTN__DEC_PV)
#undef ATTN__DEC_PV
            }
#define ATTN__DEC_OST(i) _mm512_mask_storeu_ps(T->acc + (size_t)((i) / CW) * ldo + (size_t)(c + (i) % CW) * 16, mk[(i) % CW], o##i);
            ATTN__X16(ATTN__DEC_OST)
#undef ATTN__DEC_OST
        }
    }
}

/* One instance of the kernel per row count R (1, 2, 4, 8) and dtype, so both are
   constants inside it. */
ATTN__T512 static void attn__dec512(const attn__fwd_ctx *C, float *ws, float *S, const attn__dec_chunk *X, int R, attn_dtype t) {
#define ATTN__DEC_CASE(r) case r: \
        if (t == ATTN_F32) attn__dec512_chunk(C, ws, S, X, r, ATTN_F32); \
        else if (t == ATTN_F16) attn__dec512_chunk(C, ws, S, X, r, ATTN_F16); \
        else attn__dec512_chunk(C, ws, S, X, r, ATTN_BF16); \
        break;
    switch (R) { ATTN__DEC_CASE(1) ATTN__DEC_CASE(2) ATTN__DEC_CASE(4) default: ATTN__DEC_CASE(8) }
#undef ATTN__DEC_CASE
}
#undef ATTN__X16

/* The same kernel in 8 lanes for AVX2 (16 registers): R <= 8 rows, 8/R keys per Q.K^T pass
   (the query rows in registers for R <= 4, memory operands for R 8), R rows x 8/R column
   vectors in P.V. */
#define ATTN__X8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

ATTN__T256 static ATTN__INLINE __m256 attn__pick8(int i, __m256 x0, __m256 x1, __m256 x2, __m256 x3, __m256 x4, __m256 x5,
                                                 __m256 x6, __m256 x7) {
    switch (i) {
    case 0: return x0; case 1: return x1; case 2: return x2; case 3: return x3;
    case 4: return x4; case 5: return x5; case 6: return x6; default: return x7;
    }
}

/* Max (or sum) of the lanes of x that hold the same row (lane i: row i % R), in every lane. */
ATTN__T256 static ATTN__INLINE __m256 attn__fold256(__m256 x, int R, int is_max) {
#define ATTN__FOLD(y) x = is_max ? _mm256_max_ps(x, y) : _mm256_add_ps(x, y)
    if (R <= 4) ATTN__FOLD(_mm256_permute2f128_ps(x, x, 0x01));
    if (R <= 2) ATTN__FOLD(_mm256_permute_ps(x, 0x4e));
    if (R <= 1) ATTN__FOLD(_mm256_permute_ps(x, 0xb1));
#undef ATTN__FOLD
    return x;
}

ATTN__T256 static ATTN__INLINE void attn__dec256_chunk(const attn__fwd_ctx *C, float *ws, float *S, const attn__dec_chunk *X,
                                                       const int R, const attn_dtype t) {
    const attn__problem *P = C->P;
    const int Hk = P->k.heads, D = P->q.dim, nv = P->v.dim / 8, KG = 8 / R, CW = 8 / R, nvec = (X->nk * R + 7) / 8;
    const ptrdiff_t es = (ptrdiff_t)attn__dtype_size(t);
    const size_t ldq = C->geo.ldk, ldo = C->geo.ldo;
    const __m256 ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int h, g0, kk, d, j, c, v, i;
    for (g0 = 0; g0 < X->nk; g0 += KG) {           /* Q.K^T in address order, as attn__dec512_chunk */
        const char *kr[8];
        for (kk = 0; kk < KG; ++kk) kr[kk] = X->k[ATTN__MIN(g0 + kk, X->nk - 1)];
        for (h = 0; h < Hk; ++h) {
            const float *q = attn__decode_tile(C, ws, X->tile0 + h)->qr;
            const ptrdiff_t ho = (ptrdiff_t)h * X->khs;
            __m256 a0 = zero, a1 = zero, a2 = zero, a3 = zero, a4 = zero, a5 = zero, a6 = zero, a7 = zero;
            __m256 k0 = zero, k1 = zero, k2 = zero, k3 = zero, k4 = zero, k5 = zero, k6 = zero, k7 = zero;
            __m256 q0 = zero, q1 = zero, q2 = zero, q3 = zero;
            for (kk = 0; kk < KG && g0 + kk < X->nn; ++kk) attn__prefetch_bytes(X->kn[g0 + kk] + ho, (size_t)(D * es));
            for (d = 0; d < D; d += 8) {
                /* R <= 4: the query rows in registers, each read once per step (as memory operands
                   of the FMAs gcc read each row KG times: 10 loads per 8 FMAs at R 4, 16 at R 1);
                   R 1 takes its 8 keys as memory operands (8 + 1 + 8 registers would not fit) */
#define ATTN__DEC_LQ(i) if ((i) < R && R <= 4) { q##i = _mm256_loadu_ps(q + (size_t)(i) * ldq + d); ATTN__IN_REG(q##i); }
#define ATTN__DEC_LK(i) if ((i) < KG) { k##i = attn__ld8_256(kr[i] + ho + (ptrdiff_t)d * es, t); if (R > 1) ATTN__IN_REG(k##i); }
#define ATTN__DEC_QV(r) (R <= 4 ? attn__pick8(r, q0, q1, q2, q3, q3, q3, q3, q3) : _mm256_loadu_ps(q + (size_t)(r) * ldq + d))
#define ATTN__DEC_QK(i) a##i = _mm256_fmadd_ps(ATTN__DEC_QV((i) % R), attn__pick8((i) / R, k0, k1, k2, k3, k4, k5, k6, k7), a##i);
                ATTN__DEC_LQ(0) ATTN__DEC_LQ(1) ATTN__DEC_LQ(2) ATTN__DEC_LQ(3)
                ATTN__X8(ATTN__DEC_LK)
                ATTN__X8(ATTN__DEC_QK)
#undef ATTN__DEC_LQ
#undef ATTN__DEC_LK
#undef ATTN__DEC_QV
#undef ATTN__DEC_QK
            }
            _mm256_storeu_ps(S + (size_t)h * ATTN__DEC_NK * R + (size_t)g0 * R, attn__hsum8_256(a0, a1, a2, a3, a4, a5, a6, a7));
        }
    }
    for (h = 0; h < Hk; ++h) {
        attn__tile *T = attn__decode_tile(C, ws, X->tile0 + h);
        float *sh = S + (size_t)h * ATTN__DEC_NK * R;
        const ptrdiff_t vo = (ptrdiff_t)h * X->vhs;
        __m256 mx = ninf, sum = zero, mold, mnew, msafe, alpha, slope = zero, koff = zero;
        if (P->alibi) {                 /* lane i: row i % R's slope; key offset i / R minus that row's position */
            float sl[8], ko[8];
            for (i = 0; i < 8; ++i) { sl[i] = T->slope[i % R]; ko[i] = (float)(X->c0 + i / R - T->pos[i % R]); }
            slope = _mm256_loadu_ps(sl); koff = _mm256_loadu_ps(ko);
        }
        for (v = 0; v < nvec; ++v) {    /* online softmax over the chunk (softcap, ALiBi, mask) */
            __m256 x = _mm256_loadu_ps(sh + 8 * v);
            const int valid = X->nk * R - 8 * v;
            if (P->softcap > 0.0f)
                x = _mm256_mul_ps(_mm256_set1_ps(P->softcap), attn__tanh256(_mm256_mul_ps(x, _mm256_set1_ps(1.0f / P->softcap))));
            if (P->alibi) {
                __m256 dist = _mm256_add_ps(_mm256_set1_ps((float)(v * KG)), koff);     /* key - row position */
                dist = _mm256_and_ps(dist, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
                x = _mm256_fnmadd_ps(slope, dist, x);
            }
            if (valid < 8) x = _mm256_blendv_ps(ninf, x, _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lane)));
            _mm256_storeu_ps(sh + 8 * v, x);
            mx = _mm256_max_ps(mx, x);
        }
        mx = attn__fold256(mx, R, 1);
        mold = _mm256_loadu_ps(T->m);
        mnew = _mm256_max_ps(mold, mx);
        msafe = _mm256_blendv_ps(mnew, zero, _mm256_cmp_ps(mnew, ninf, _CMP_EQ_OQ));
        alpha = attn__exp256(_mm256_sub_ps(mold, msafe));
        for (v = 0; v < nvec; ++v) {
            const __m256 p = attn__exp256(_mm256_sub_ps(_mm256_loadu_ps(sh + 8 * v), msafe));
            _mm256_storeu_ps(sh + 8 * v, p);
            sum = _mm256_add_ps(sum, p);
        }
        _mm256_storeu_ps(T->l, _mm256_fmadd_ps(_mm256_loadu_ps(T->l), alpha, attn__fold256(sum, R, 0)));
        _mm256_storeu_ps(T->m, mnew);
        _mm256_storeu_ps(T->alpha, alpha);
        for (c = 0; c < nv; c += CW) {  /* P.V; a pass past the head dim re-reads a valid column, stores none */
            int ok[8];                  /* column vector c + i exists: plain loads and stores, since AMD */
            ptrdiff_t co[8];            /* runs vmaskmovps stores as microcode (they took most of the time) */
            __m256 o0, o1, o2, o3, o4, o5, o6, o7;
            for (i = 0; i < CW; ++i) {
                ok[i] = c + i < nv;
                co[i] = (ptrdiff_t)ATTN__MIN(c + i, nv - 1) * 8 * es;
            }
#define ATTN__DEC_OLD(i) o##i = !ok[(i) % CW] ? zero : _mm256_mul_ps(_mm256_set1_ps(T->alpha[(i) / CW]), \
                         _mm256_loadu_ps(T->acc + (size_t)((i) / CW) * ldo + (size_t)(c + (i) % CW) * 8));
            ATTN__X8(ATTN__DEC_OLD)
#undef ATTN__DEC_OLD
            for (j = 0; j < X->nk; ++j) {
                const char *vr = X->v[j] + vo;
                const float *pj = sh + (size_t)j * R;
                if (j < X->nn) attn__prefetch_bytes(X->vn[j] + vo + (ptrdiff_t)c * 8 * es, (size_t)(CW * 8 * es));
#define ATTN__DEC_PV(i) o##i = _mm256_fmadd_ps(_mm256_set1_ps(pj[(i) / CW]), attn__ld8_256(vr + co[(i) % CW], t), o##i);
                ATTN__X8(ATTN__DEC_PV)
#undef ATTN__DEC_PV
            }
#define ATTN__DEC_OST(i) if (ok[(i) % CW]) _mm256_storeu_ps(T->acc + (size_t)((i) / CW) * ldo + (size_t)(c + (i) % CW) * 8, o##i);
            ATTN__X8(ATTN__DEC_OST)
#undef ATTN__DEC_OST
        }
    }
}

ATTN__T256 static void attn__dec256(const attn__fwd_ctx *C, float *ws, float *S, const attn__dec_chunk *X, int R, attn_dtype t) {
#define ATTN__DEC_CASE(r) case r: \
        if (t == ATTN_F32) attn__dec256_chunk(C, ws, S, X, r, ATTN_F32); \
        else if (t == ATTN_F16) attn__dec256_chunk(C, ws, S, X, r, ATTN_F16); \
        else attn__dec256_chunk(C, ws, S, X, r, ATTN_BF16); \
        break;
    switch (R) { ATTN__DEC_CASE(1) ATTN__DEC_CASE(2) ATTN__DEC_CASE(4) default: ATTN__DEC_CASE(8) }
#undef ATTN__DEC_CASE
}
#undef ATTN__X8
#endif /* ATTN__X86_SIMD */

/* Whether decoding can take the fused kernels above: AVX-512 or AVX2 (the query rows of a KV
   head, q.seq x groups <= 32, in tiles of ATTN__DEC_ROWS), head dims in whole vectors, no
   per-element score inputs (bias, dilation, dropout) and no key rotation; everything else
   stages. Keys that only some of the rows see (the last q.seq - 1 under a causal mask, window
   edges) stage too. */
static int attn__dec_lanes(const attn__isa *isa) {    /* the fused kernel's vector width, 0: none */
#if defined(ATTN__X86_SIMD)
    return isa == &attn__isa_avx512 ? 16 : isa == &attn__isa_avx2 ? 8 : 0;
#else
    (void)isa;
    return 0;
#endif
}
static int attn__decode_fused(const attn__problem *P, const attn__isa *isa) {
    const int lanes = attn__dec_lanes(isa);
    return lanes && (long long)P->q.seq * P->groups <= ATTN__DEC_TILES * ATTN__DEC_ROWS && P->q.dim % lanes == 0 && P->v.dim % lanes == 0 && !P->bias &&
           P->dilation <= 1 && P->dropout_p <= 0.0f && !P->rope && P->k.dtype == P->v.dtype;
}

#if defined(ATTN__X86_SIMD)
/* Row pointers (KV head 0) of keys c0 .. c0 + n - 1 of sequence S: one attn__kv_at per page run. */
static void attn__dec_rows(const attn__problem *P, const attn__seq *S, long long c0, int n, const char **k, const char **v) {
    const ptrdiff_t kst = P->k.ss * (ptrdiff_t)P->k.esize, vst = P->v.ss * (ptrdiff_t)P->v.esize;
    int i = 0, j, run;
    while (i < n) {
        const char *kp = attn__kv_at(P, &P->k, S->tb, S->k0 + (int)(c0 + i), 0);
        const char *vp = attn__kv_at(P, &P->v, S->tb, S->k0 + (int)(c0 + i), 0);
        run = attn__kv_run(P, S->k0 + c0 + i, n - i);
        for (j = 0; j < run; ++j) { k[i + j] = kp + (ptrdiff_t)j * kst; v[i + j] = vp + (ptrdiff_t)j * vst; }
        i += run;
    }
}
#endif

/* Keys [a, b) of sequence Sq through the fused kernel, a chunk at a time; every row sees them all.
   The rows' tiles (ATTN__DEC_ROWS rows each) take each chunk in turn while it is in cache. */
static void attn__fwd_decode_fused(const attn__fwd_ctx *C, float *ws, float *S, const attn__seq *Sq, long long a, long long b) {
#if defined(ATTN__X86_SIMD)
    const attn__problem *P = C->P;
    const int n = Sq->Lq * P->groups, Hk = P->k.heads, lanes = attn__dec_lanes(C->isa);
    const int n_tiles = (n + ATTN__DEC_ROWS - 1) / ATTN__DEC_ROWS;
    int R[ATTN__DEC_TILES];                     /* each tile's rows rounded up to a power of two */
    long long c0;
    int nkc, h, i, t, nn;
    attn__dec_chunk X;
    for (t = 0; t < n_tiles; ++t)
        for (R[t] = 1; R[t] < ATTN__MIN(ATTN__DEC_ROWS, n - t * ATTN__DEC_ROWS); R[t] *= 2) {}
    {   /* keys per chunk: about ATTN__DEC_CHUNK_BYTES, a multiple of the lanes/R keys Q.K^T takes at once */
        const size_t key_bytes = (size_t)Hk * (size_t)(P->q.dim + P->v.dim) * attn__dtype_size(P->k.dtype);
        const int kg = lanes / R[0];
        const size_t chunk_bytes = lanes == 16 ? ATTN__DEC_CHUNK_BYTES : ATTN__DEC_CHUNK_BYTES_AVX2;
        nkc = (int)ATTN__MIN((size_t)ATTN__DEC_NK, chunk_bytes / key_bytes / (size_t)kg * (size_t)kg);
        nkc = ATTN__MAX(nkc, kg);
    }
    for (t = 0; t < n_tiles; ++t)               /* the kernel keeps m and l in every lane (lane i: row i % R); */
        for (h = 0; h < Hk; ++h) {              /* staged keys before these updated the tile's rows only */
            attn__tile *T = attn__decode_tile(C, ws, t * Hk + h);
            for (i = R[t]; i < lanes; ++i) { T->m[i] = T->m[i % R[t]]; T->l[i] = T->l[i % R[t]]; }
        }
    X.khs = P->k.sh * (ptrdiff_t)P->k.esize; X.vhs = P->v.sh * (ptrdiff_t)P->v.esize;
    X.nn = (int)ATTN__MIN((long long)nkc, b - a);
    if (X.nn > 0) attn__dec_rows(P, Sq, a, X.nn, X.kn, X.vn);
    for (c0 = a; c0 < b; c0 += X.nk) {          /* this chunk = the last one's next */
        X.c0 = c0; X.nk = X.nn;
        memcpy(X.k, X.kn, sizeof X.k); memcpy(X.v, X.vn, sizeof X.v);
        X.nn = (int)ATTN__MIN((long long)nkc, b - c0 - X.nk);
        if (X.nn > 0) attn__dec_rows(P, Sq, c0 + X.nk, X.nn, X.kn, X.vn);
        for (t = 0, nn = X.nn; t < n_tiles; ++t) {
            X.tile0 = t * Hk; X.nn = t == 0 ? nn : 0;   /* the first tile prefetches the next chunk */
            if (C->isa == &attn__isa_avx512) attn__dec512(C, ws, S, &X, R[t], P->k.dtype);
            else attn__dec256(C, ws, S, &X, R[t], P->k.dtype);
        }
        X.nn = nn;
    }
#else
    (void)C; (void)ws; (void)S; (void)Sq; (void)a; (void)b;
#endif
}

/* Keys [a, b) of sequence S through the stage: each chunk converted to fp32, then the tile
   kernels with every mask. */
static void attn__fwd_decode_staged(const attn__fwd_ctx *C, float *ws, float *stage, const attn__seq *S, long long a, long long b,
                                    int n_tiles) {
    const attn__problem *P = C->P;
    const int Hk = P->k.heads;
    const size_t dk = (size_t)C->decode_chunk;
    const float *vstage = stage + (size_t)Hk * dk * C->geo.ldk;
    long long c0, c1;
    int hk, nk, nk1;
    for (c0 = a; c0 < b; c0 += nk) {
        nk = attn__kv_run(P, S->k0 + c0, (int)ATTN__MIN((long long)C->decode_chunk, b - c0));
        c1 = c0 + nk;
        nk1 = c1 < b ? attn__kv_run(P, S->k0 + c1, (int)ATTN__MIN((long long)C->decode_chunk, b - c1)) : 0;
        attn__decode_stage(C, S, stage, c0, nk);
        for (hk = 0; hk < Hk; ++hk) {
            int t;
            if (nk1 > 0) attn__decode_prefetch(C, S, c1, nk1, hk, Hk);
            for (t = 0; t < n_tiles; ++t)
                attn__tile_chunk_rows(C, attn__decode_tile(C, ws, t * Hk + hk), ws, c0, nk,
                                      stage + hk * dk * C->geo.ldk, (ptrdiff_t)C->geo.ldk,
                                      vstage + hk * dk * C->geo.ldv, (ptrdiff_t)C->geo.ldv);
        }
    }
}

static void attn__fwd_decode(const attn__fwd_ctx *C, float *ws, int tb, int split) {
    const attn__problem *P = C->P;
    const int g = P->groups, Hk = P->k.heads;
    float *stage = ws + C->geo.scratch + (size_t)Hk * C->dec_tiles * C->geo.narrow_tile;
    attn__seq S;
    long long klo, khi, ranges[2][2], p0, p1;
    int hk, ri, n_ranges, v, n, t, n_tiles, rows;
    if (!attn__seq_of_row(P, tb, 0, &S)) S.Lq = 0;
    n = S.Lq * g;                                   /* rows past Lq are padding: zeros */
    if (split == 0)
        for (hk = 0; hk < Hk; ++hk)
            for (v = n; v < P->q.seq * g; ++v) attn__fwd_store(P, C->isa, tb, v / g, hk * g + v % g, NULL, 0.0f, 0.0f);
    if (n == 0) return;
    klo = (long long)split * C->split_keys; khi = ATTN__MIN((long long)S.Lk, klo + C->split_keys);
    rows = C->fused ? ATTN__DEC_ROWS : n;           /* rows per tile */
    n_tiles = (n + rows - 1) / rows;
    for (t = 0; t < n_tiles; ++t)
        for (hk = 0; hk < Hk; ++hk) {
            attn__tile *T = attn__decode_tile(C, ws, t * Hk + hk);
            attn__tile_begin(C, T, (float *)(void *)T, &S, hk, t * rows, ATTN__MIN(rows, n - t * rows));
        }
    p0 = (long long)S.Lk - S.Lq; p1 = (long long)S.Lk - 1;          /* the rows' positions */
    n_ranges = attn__key_ranges(P, p0, p1, S.Lk, ranges);
    for (ri = 0; ri < n_ranges; ++ri) {
        const long long a = ATTN__MAX(ranges[ri][0], klo), b = ATTN__MIN(ranges[ri][1], khi);
        long long fa = a, fb = b;
        if (a >= b) continue;
        if (C->fused) {         /* the keys every row sees, [fa, fb), fuse; the edges around them stage */
            int w;              /* the edges are at most Lq - 1 keys wide (positions p0..p1) */
            for (w = 0; w < S.Lq && fa < fb && !attn__chunk_full(P, p0, p1, fa, fa + 1); ++w) ++fa;
            for (w = 0; w < S.Lq && fb > fa && !attn__chunk_full(P, p0, p1, fb - 1, fb); ++w) --fb;
            if (fa < fb && !attn__chunk_full(P, p0, p1, fa, fb)) fa = fb = b;
        } else {
            fa = fb = b;
        }
        attn__fwd_decode_staged(C, ws, stage, &S, a, fa, n_tiles);
        if (fa < fb) attn__fwd_decode_fused(C, ws, stage, &S, fa, fb);
        attn__fwd_decode_staged(C, ws, stage, &S, fb, b, n_tiles);
    }
    for (t = 0; t < n_tiles; ++t)
        for (hk = 0; hk < Hk; ++hk)
            attn__tile_end(C, attn__decode_tile(C, ws, t * Hk + hk),
                           C->n_splits > 1 ? attn__partial_at(C, tb * Hk + hk, split, t * rows) : NULL);
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
    float *acc = C->ws + (size_t)thread * C->ws_floats, w[32] = { 0 }, l[32] = { 0 };   /* n_splits <= 32 (attn__fwd_plan) */
    int v, s, c;
    for (v = vr0; v < vr1; ++v) {
        attn__seq S;
        const int row = v / g;
        float lse;
        if (!attn__seq_of_row(P, tb, row, &S)) continue;       /* zeroed by split 0 */
        for (s = 0; s < C->n_splits; ++s) {
            const float *pr = attn__partial_at(C, u, s, v - vr0);
            w[s] = pr[C->partial_row - 2]; l[s] = pr[C->partial_row - 1];
        }
        lse = attn__lse_weights(C->n_splits, w, l);
        for (c = 0; c < Dv; ++c) acc[c] = 0.0f;
        for (s = 0; s < C->n_splits; ++s)
            if (w[s] != 0.0f) attn__axpy(acc, w[s], attn__partial_at(C, u, s, v - vr0), Dv);
        attn__fwd_store(P, C->isa, tb, row, hk * g + v % g, acc, lse, lse == -INFINITY ? 0.0f : 1.0f);
    }
}

/* Both passes of a planned forward: the tiles (or decode steps) over every split, then the
   logsumexp merge of the splits. The merge reads n_units x n_splits partial rows; below a
   few hundred KiB of them starting a thread costs more than the merge (about 40 us here). */
static void attn__fwd_run(const attn_desc *desc, attn__fwd_ctx *C, int batch, int n_threads) {
    const double merge_floats = (double)C->n_units * C->n_splits * C->unit_rows * (double)C->partial_row;
    int t;
    for (t = 0; t < n_threads; ++t) attn__head_cache_reset(C, C->ws + (size_t)t * C->ws_floats);
    attn__parallel_for(desc, (C->decode ? batch : C->n_units) * C->n_splits, n_threads, attn__fwd_task, C);
    if (C->n_splits > 1)
        attn__parallel_for(desc, C->n_units, merge_floats < 65536.0 ? 1 : n_threads, attn__fwd_merge_task, C);
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
    /* decoding: a step's rows of a KV head in one narrow tile, or in the fused kernels' tiles */
    C->decode = (vrows <= 16 || (vrows <= ATTN__DEC_TILES * ATTN__DEC_ROWS && attn__decode_fused(P, isa))) &&
                !P->cu_q;
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
    C->split_keys = (((long long)P->k.seq + C->n_splits - 1) / C->n_splits + ATTN__BK - 1) / ATTN__BK * ATTN__BK;
    if (!attn__mul_size(C->decode ? (size_t)P->q.batch : units, (size_t)C->n_splits, &tasks) || tasks > INT_MAX)
        return ATTN_ERR_OVERFLOW;
    C->partial_row = C->geo.ldo + 2;
    C->fused = C->decode && attn__decode_fused(P, isa);
    C->dec_tiles = C->fused ? (int)((vrows + ATTN__DEC_ROWS - 1) / ATTN__DEC_ROWS) : 1;
    if (!attn__mul_size(C->geo.narrow_tile, (size_t)P->k.heads * (size_t)C->dec_tiles, &heads_mem)) return ATTN_ERR_OVERFLOW;
    if (C->decode) {            /* the stage: decode_chunk keys of every head, K and V, fp32; fused: the scores */
        const size_t row = ((size_t)P->k.heads * (C->geo.ldk + C->geo.ldv)) * sizeof(float);
        size_t stage;
        C->decode_chunk = (int)ATTN__MAX((size_t)1, ATTN__MIN((size_t)ATTN__BK_DECODE, ATTN__DECODE_STAGE_BYTES / row));
        if (!attn__mul_size((size_t)P->k.heads, ATTN__MAX((size_t)(C->fused ? 16 * ATTN__DEC_NK : 0), (size_t)C->decode_chunk * (C->geo.ldk + C->geo.ldv)), &stage) ||
            !attn__add_size(heads_mem, stage, &heads_mem)) return ATTN_ERR_OVERFLOW;
    }
    C->ws_floats = C->geo.scratch + (C->decode ? heads_mem : C->geo.tile);
    C->ws_floats = ATTN__MAX(C->ws_floats, C->geo.ldo);          /* the merge pass's row */
    attn__fwd_copies(C);
    if (!C->decode && C->units_per_head > 1 && (C->copy_k || C->copy_v)) {   /* the head cache, where a tile of */
        const size_t rows = attn__round16(((size_t)P->k.seq + ATTN__BK - 1) / ATTN__BK * ATTN__BK);   /* the same head may follow */
        if ((double)rows * (double)(C->geo.ldk + C->geo.ldv) * sizeof(float) <= (double)ATTN__HEAD_CACHE_BYTES) {
            C->hc_off = attn__round16(C->ws_floats);
            C->hc_rows = rows;
            C->ws_floats = C->hc_off + 16 + attn__head_cache_bits(rows) + rows * (C->geo.ldk + C->geo.ldv);
        }
    }
#if defined(ATTN__BF16K)   /* 3.6: bf16 prefill on the bf16 kernels, with their own tile memory */
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

/* ATTN_SOFTMAX's forward (attn_forward, attn_workspace_size). */
static int attn__lf_classes(const attn__call *c, int D);
static attn_status attn__longformer_forward(const attn__call *c);
static attn_status attn__longformer_backward(const attn__call *c);

static attn_status attn__softmax_forward(const attn__call *c) {
    attn__problem P;
    attn__fwd_ctx C;
    size_t bytes;
    attn__ws w;
    attn_status s;
    /* A dilated window that splits into D undilated problems on every D-th row (attn__lf_classes:
       q.seq == k.seq, no global tokens, sinks, padding, ALiBi, bias or RoPE; and no dropout) runs
       as ATTN_LONGFORMER runs it, O(seq * window) instead of the element-by-element mask's
       O(seq * window * D): S 8192, D 4, window 256, causal, 1 thread took 910 ms, now 157. Its
       sub-calls are undilated, so they come back here and run the tiles below. */
    if (c->d->dilation > 1 && c->d->dropout_p == 0.0f && !c->d->longformer.dilations &&
        attn__lf_classes(c, c->d->dilation) > 1)
        return attn__longformer_forward(c);
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(c->d, &c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P)) != ATTN_OK) return s;
    P.lse = c->lse;
    if ((s = attn__fwd_plan(&P, attn__pick_isa(), &C, &bytes)) != ATTN_OK) return s;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    C.ws = (float *)(void *)w.base;
    C.partial = C.ws + C.ws_floats * (size_t)P.n_threads;
    attn__fwd_run(c->d, &C, c->q.batch, P.n_threads);
    attn__ws_release(&w);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.8 merge of partial results
   --------------------------------------------------------------------------------------- */
/* attn_merge's checks, in order (attn_cuda_merge runs them too): the arguments, out's view into
   *o, and that out's rows can be counted. */
static attn_status attn__merge_check(int n_parts, const attn_tensor *parts, const float *const *part_lse,
                                     const attn_tensor *out, attn__view *o) {
    size_t n;
    attn_status st;
    int p;
    if (n_parts < 1) return ATTN_ERR_MERGE_N_PARTS;
    if (!parts || !part_lse) return ATTN_ERR_MERGE_NULL;
    if (!out->data) return ATTN_ERR_NULL_OUT;
    for (p = 0; p < n_parts; ++p) if (!parts[p].data || !part_lse[p]) return ATTN_ERR_MERGE_NULL;
    if (!attn__dtype_ok(out->dtype)) return ATTN_ERR_DTYPE;
    for (p = 0; p < n_parts; ++p) if (!attn__dtype_ok(parts[p].dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(out)) return ATTN_ERR_OUT_SHAPE;
    for (p = 0; p < n_parts; ++p)
        if (parts[p].batch != out->batch || parts[p].seq != out->seq || parts[p].heads != out->heads || parts[p].dim != out->dim)
            return ATTN_ERR_MERGE_SHAPE;
    if (attn__tensor_bcast(out)) return ATTN_ERR_OUT_BROADCAST;
    if ((st = attn__make_view(out, o)) != ATTN_OK) return st;
    if (!attn__mul_size((size_t)out->batch, (size_t)out->heads, &n) || !attn__mul_size(n, (size_t)out->seq, &n) ||
        n > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}

ATTNDEF attn_status attn_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse,
                               attn_tensor out, float *lse) {
    attn__view o, *pv;
    float *w;
    int p, b, s, h, c;
    attn_status st;
    if ((st = attn__merge_check(n_parts, parts, part_lse, &out, &o)) != ATTN_OK) return st;
    {
        size_t bytes;
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
                float total;
                for (p = 0; p < n_parts; ++p) w[p] = part_lse[p][li];
                if ((total = attn__lse_weights(n_parts, w, NULL)) == -INFINITY) {
                    attn__store_zero_row(attn__at(&o, b, s, h), o.dtype, o.dim);
                    if (lse) lse[li] = -INFINITY;
                    continue;
                }
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
   3.9 exact attention backward (FlashAttention-2 recomputation), dropout
   --------------------------------------------------------------------------------------- */
/* Pass 1 (rows): drow_i = rowsum(dout_i * out_i) for every valid row (FlashAttention-2's D).
   Pass 2 (tasks = key split x sequence group x KV-head group): the split's keys go in groups
   of ATTN__BWD_KG blocks of 64; each block's K^T (times scale) and V^T are packed once; then
   for every query head of the KV head's group and every block of 64 query rows (loaded once
   for the whole group) and every key block of the group it can see (the forward's
   attn__key_ranges / attn__chunk_full), with lanes = keys:
       ST  = Q (scale K)^T                        qk kernel (the forward's)
       P   = exp(logits(ST) - lse)                softcap, bias, ALiBi, mask as the forward
       dPT = dO V^T                               qk kernel
       dS  = P (z dPT - drow) softcap'            z = dropout keep / (1 - p), else 1
       dV += (z P)^T dO,  dK += dS^T Q            pv kernel into the block's fp32 accumulators
       dQpart[split] += dS K                      pvt kernel into the split's fp32 rows
   dk/dv rows are written when their key block is done: every key row has exactly one owner.
   A split's dQpart rows are zeroed when a pair first touches them and flagged (rows no key of
   the split reaches are never touched, zeroed or read).
   Pass 3 (rows): dq = scale * sum of the touched dQpart rows in split order; zeros for rows and
   keys that no sequence owns. dbias: a task owns dbias[.., keys of its split] and, when the
   bias broadcasts over batch (heads), takes every sequence (KV head) of its split in order.
   Every sum has a fixed order: the bits never depend on the thread count. The number of
   splits depends on the shapes only (enough tasks to keep cores busy, fp32 partials capped).
   Workspace: per thread the packed key blocks and their dK/dV accumulators (about
   ATTN__BWD_KG * 64 * (3 D + 2 Dv) floats) and one query block; shared: drow, the dQ partials
   (n_split * |dq| fp32) and their flags. */

#define ATTN__BWD_SPLIT_TASKS 16          /* split the keys until about this many tasks */
#define ATTN__BWD_SPLIT_BYTES ((size_t)512 << 20)   /* at most this much fp32 dq partials */
#define ATTN__BWD_KG 4                    /* key blocks per sweep over the query blocks */

/* --- dropout: a counter-based hash of (seed, b, h, i, j); formula in the DROPOUT doc ------ */
static uint64_t attn__mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27; z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t attn__low32(uint32_t x) {
    x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu;
    return x ^ (x >> 16);
}
/* The per-row key (ra, rc) of query row (tensor batch tb, head h, q tensor row i). */
static void attn__dropout_row(const attn__problem *P, int tb, int h, int i, uint32_t *ra, uint32_t *rc) {
    const uint64_t idx = ((uint64_t)tb * (uint64_t)P->q.heads + (uint64_t)h) * (uint64_t)P->q.seq + (uint64_t)i;
    const uint64_t r = attn__mix64((uint64_t)P->dropout_seed + 0x9E3779B97F4A7C15ull * (1u + idx));
    *ra = (uint32_t)r; *rc = (uint32_t)(r >> 32);
}
static int attn__dropout_keep(uint32_t ra, uint32_t rc, uint32_t j, uint32_t thr) {
    return (attn__low32(attn__low32(j + ra) ^ rc) >> 8) >= thr;
}
static uint32_t attn__dropout_thr(float p) { return (uint32_t)((double)p * 16777216.0); }

/* What the element-wise stage needs for one (query block, key block) pair. Rows are query
   rows (one head, consecutive positions), lanes are keys. */
typedef struct attn__bwd_rows {
    int n, nk, nlanes;                 /* query rows, keys, lanes (nk rounded up to 16) */
    long long c0, p0;                  /* key position of lane 0, query position of row 0 */
    const float *lse, *drow;           /* [n] */
    int alibi; float slope;            /* ALiBi slope of the head */
    int mask;                          /* 0 none, 1 the lo/hi/cap rule, 2 attn__visible (dilation) */
    int32_t lo[ATTN__BQ], hi[ATTN__BQ], cap[ATTN__BQ];
    int pre;                           /* keys below pre (sinks, global) pass lo/hi */
    float softcap;
    const float *bias; ptrdiff_t bias_sq;   /* row 0's bias at lane 0, or NULL */
    float *dlogit;                     /* [n][BQ]: dLoss/dlogit before softcap' (for dbias), or NULL */
    int dropout; uint32_t thr, krow0;  /* krow0: k tensor row of lane 0 */
    float keep_scale;
    uint32_t ra[ATTN__BQ], rc[ATTN__BQ];
    const attn__problem *P;
} attn__bwd_rows;

/* Kernels the backward adds to attn__isa's. */
typedef struct attn__bwd_isa {
    /* ST [n][BQ] scores -> z P; dPT [n][BQ] dO.V -> dS (times softcap'); lanes >= nk -> 0 */
    void (*stage)(float *ST, float *dPT, const attn__bwd_rows *R);
    /* acc[r][c] += sum_k S[r][k] V[k][c] for r < nrows exactly, k < nk (S rows of stride BQ) */
    void (*pvt)(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv, float *acc, size_t ldo);
    /* forward: S [nk][BQ] (lanes = rows) times keep/(1-p), krow0 the k row of line 0 */
    void (*dropout)(float *S, int nk, int nlanes, uint32_t krow0, const uint32_t *ra, const uint32_t *rc,
                    uint32_t thr, float scale);
} attn__bwd_isa;

static void attn__bwd_stage_scalar(float *ST, float *dPT, const attn__bwd_rows *R) {
    int r, j;
    for (r = 0; r < R->n; ++r) {
        float *s = ST + (size_t)r * ATTN__BQ, *dp = dPT + (size_t)r * ATTN__BQ;
        float *dl = R->dlogit ? R->dlogit + (size_t)r * ATTN__BQ : NULL;
        const float lse = R->lse[r], drow = R->drow[r], pos = (float)(R->p0 + r - R->c0);   /* exact: relative to c0 */
        for (j = 0; j < R->nlanes; ++j) {
            const long long key = R->c0 + j;
            float x = s[j], dc = 1.0f, pr = 0.0f, ds = 0.0f;
            int vis = j < R->nk && lse != -INFINITY;
            if (vis && R->mask == 1) vis = attn__lane_ok(R->cap[r], R->lo[r], R->hi[r], R->pre, key);
            if (vis && R->mask == 2) vis = attn__visible(R->P, R->p0 + r, key);
            if (vis) {
                float d = dp[j];
                if (R->softcap > 0.0f) { const float th = tanhf(x / R->softcap); x = R->softcap * th; dc = 1.0f - th * th; }
                if (R->bias) x += R->bias[(ptrdiff_t)r * R->bias_sq + j];
                if (R->alibi) x -= R->slope * fabsf(pos - (float)j);
                pr = expf(x - lse);
                if (R->dropout) {
                    const float z = attn__dropout_keep(R->ra[r], R->rc[r], R->krow0 + (uint32_t)j, R->thr) ? R->keep_scale : 0.0f;
                    d *= z; ds = pr * (d - drow); pr *= z;
                } else {
                    ds = pr * (d - drow);
                }
            }
            if (dl) dl[j] = ds;
            s[j] = pr; dp[j] = ds * dc;
        }
    }
}

static void attn__pvt_scalar(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv, float *acc, size_t ldo) {
    int r, k, c;
    for (r = 0; r < nrows; ++r) {
        float *o = acc + (size_t)r * ldo;
        for (c = 0; c < Dv; ++c) {
            float t = o[c];
            for (k = 0; k < nk; ++k) t += S[(size_t)r * ATTN__BQ + k] * V[(ptrdiff_t)k * ldv + c];
            o[c] = t;
        }
    }
}

static void attn__dropout_scalar(float *S, int nk, int nlanes, uint32_t krow0, const uint32_t *ra, const uint32_t *rc,
                                 uint32_t thr, float scale) {
    int r, j;
    for (j = 0; j < nk; ++j)
        for (r = 0; r < nlanes; ++r) {
            float *s = S + (size_t)j * ATTN__BQ + r;
            *s = attn__dropout_keep(ra[r], rc[r], krow0 + (uint32_t)j, thr) ? *s * scale : 0.0f;
        }
}

static const attn__bwd_isa attn__bwd_isa_scalar = { attn__bwd_stage_scalar, attn__pvt_scalar, attn__dropout_scalar };

#if defined(ATTN__X86_SIMD)
ATTN__T512 static ATTN__INLINE __m512i attn__low512(__m512i x) {
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0x7FEB352Du));
    x = _mm512_xor_si512(x, _mm512_srli_epi32(x, 15));
    x = _mm512_mullo_epi32(x, _mm512_set1_epi32((int)0x846CA68Bu));
    return _mm512_xor_si512(x, _mm512_srli_epi32(x, 16));
}
ATTN__T512 static ATTN__INLINE __mmask16 attn__keep512(__m512i j, __m512i ra, __m512i rc, __m512i thr) {
    const __m512i x = attn__low512(_mm512_xor_si512(attn__low512(_mm512_add_epi32(j, ra)), rc));
    return _mm512_cmpge_epu32_mask(_mm512_srli_epi32(x, 8), thr);
}

ATTN__T512 static void attn__bwd_stage_avx512(float *ST, float *dPT, const attn__bwd_rows *R) {
    const __m512 one = _mm512_set1_ps(1.0f), zs = _mm512_set1_ps(R->keep_scale);
    const __m512 capv = _mm512_set1_ps(R->softcap), inv_cap = _mm512_set1_ps(R->softcap > 0 ? 1.0f / R->softcap : 0.0f);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i thr = _mm512_set1_epi32((int)R->thr), pre = _mm512_set1_epi32(R->pre);
    int r, j;
    if (R->mask == 2) { attn__bwd_stage_scalar(ST, dPT, R); return; }
    for (r = 0; r < R->n; ++r) {
        float *s = ST + (size_t)r * ATTN__BQ, *dp = dPT + (size_t)r * ATTN__BQ;
        float *dl = R->dlogit ? R->dlogit + (size_t)r * ATTN__BQ : NULL;
        const float *brow = R->bias ? R->bias + (ptrdiff_t)r * R->bias_sq : NULL;
        const __m512 vl = _mm512_set1_ps(R->lse[r]), vd = _mm512_set1_ps(R->drow[r]);
        const __m512 pos = _mm512_set1_ps((float)(R->p0 + r - R->c0)), slope = _mm512_set1_ps(R->slope);
        const __m512i capi = _mm512_set1_epi32(R->cap[r]), lo = _mm512_set1_epi32(R->lo[r]), hi = _mm512_set1_epi32(R->hi[r]);
        const __m512i ra = _mm512_set1_epi32((int)(R->ra[r] + R->krow0)), rc = _mm512_set1_epi32((int)R->rc[r]);
        const int dead = R->lse[r] == -INFINITY;
        for (j = 0; j < R->nlanes; j += 16) {
            const __m512i jv = _mm512_add_epi32(iota, _mm512_set1_epi32((int)R->c0 + j));
            __mmask16 vis = dead ? (__mmask16)0 : attn__mask16(R->nk - j);
            __m512 x = _mm512_load_ps(s + j), dc = one, p, d, ds;
            if (R->softcap > 0.0f) {
                const __m512 th = attn__tanh512(_mm512_mul_ps(x, inv_cap));
                x = _mm512_mul_ps(capv, th); dc = _mm512_fnmadd_ps(th, th, one);
            }
            if (brow) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(vis, brow + j));
            if (R->alibi) {
                __m512 dist = _mm512_sub_ps(pos, _mm512_cvtepi32_ps(_mm512_add_epi32(iota, _mm512_set1_epi32(j))));
                dist = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(dist), _mm512_set1_epi32(0x7fffffff)));
                x = _mm512_fnmadd_ps(slope, dist, x);
            }
            if (R->mask)
                vis &= _mm512_cmple_epi32_mask(jv, capi) &
                       (_mm512_cmplt_epi32_mask(jv, pre) | (_mm512_cmple_epi32_mask(lo, jv) & _mm512_cmple_epi32_mask(jv, hi)));
            p = _mm512_maskz_mov_ps(vis, attn__exp512(_mm512_sub_ps(x, vl)));
            d = _mm512_maskz_load_ps(vis, dp + j);
            if (R->dropout) {
                const __m512 z = _mm512_maskz_mov_ps(attn__keep512(_mm512_add_epi32(iota, _mm512_set1_epi32(j)), ra, rc, thr), zs);
                d = _mm512_mul_ps(d, z);
                ds = _mm512_mul_ps(p, _mm512_sub_ps(d, vd));
                p = _mm512_mul_ps(p, z);
            } else {
                ds = _mm512_mul_ps(p, _mm512_sub_ps(d, vd));
            }
            if (dl) _mm512_store_ps(dl + j, ds);
            _mm512_store_ps(s + j, p);
            _mm512_store_ps(dp + j, R->softcap > 0.0f ? _mm512_mul_ps(ds, dc) : ds);
        }
    }
}

/* acc rows += S rows . V: 8 rows x 32 columns (16 zmm accumulators), then single rows. */
#define ATTN__PVT_LOAD(r) o = acc + (size_t)(r0 + r) * ldo + c; a##r##0 = _mm512_maskz_loadu_ps(m0, o); a##r##1 = _mm512_maskz_loadu_ps(m1, o + 16);
#define ATTN__PVT_FMA(r) p = _mm512_set1_ps(sk[(r) * ATTN__BQ]); a##r##0 = _mm512_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm512_fmadd_ps(p, v1, a##r##1);
#define ATTN__PVT_STORE(r) o = acc + (size_t)(r0 + r) * ldo + c; _mm512_mask_storeu_ps(o, m0, a##r##0); _mm512_mask_storeu_ps(o + 16, m1, a##r##1);
ATTN__T512 static void attn__pvt_avx512(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv, float *acc, size_t ldo) {
    int r0 = 0, c, k;
    for (; r0 + 8 <= nrows; r0 += 8)
        for (c = 0; c < Dv; c += 32) {
            const __mmask16 m0 = attn__mask16(Dv - c), m1 = attn__mask16(Dv - c - 16);
            __m512 a00, a01, a10, a11, a20, a21, a30, a31, a40, a41, a50, a51, a60, a61, a70, a71, p;
            float *o;
            ATTN__PVT_LOAD(0) ATTN__PVT_LOAD(1) ATTN__PVT_LOAD(2) ATTN__PVT_LOAD(3)
            ATTN__PVT_LOAD(4) ATTN__PVT_LOAD(5) ATTN__PVT_LOAD(6) ATTN__PVT_LOAD(7)
            for (k = 0; k < nk; ++k) {
                const float *vk = V + (ptrdiff_t)k * ldv + c, *sk = S + (size_t)r0 * ATTN__BQ + k;
                const __m512 v0 = _mm512_maskz_loadu_ps(m0, vk), v1 = _mm512_maskz_loadu_ps(m1, vk + 16);
                ATTN__PVT_FMA(0) ATTN__PVT_FMA(1) ATTN__PVT_FMA(2) ATTN__PVT_FMA(3)
                ATTN__PVT_FMA(4) ATTN__PVT_FMA(5) ATTN__PVT_FMA(6) ATTN__PVT_FMA(7)
            }
            ATTN__PVT_STORE(0) ATTN__PVT_STORE(1) ATTN__PVT_STORE(2) ATTN__PVT_STORE(3)
            ATTN__PVT_STORE(4) ATTN__PVT_STORE(5) ATTN__PVT_STORE(6) ATTN__PVT_STORE(7)
        }
    for (; r0 < nrows; ++r0)
        for (c = 0; c < Dv; c += 32) {
            const __mmask16 m0 = attn__mask16(Dv - c), m1 = attn__mask16(Dv - c - 16);
            float *o = acc + (size_t)r0 * ldo + c;
            __m512 a0 = _mm512_maskz_loadu_ps(m0, o), a1 = _mm512_maskz_loadu_ps(m1, o + 16);
            for (k = 0; k < nk; ++k) {
                const float *vk = V + (ptrdiff_t)k * ldv + c;
                const __m512 p = _mm512_set1_ps(S[(size_t)r0 * ATTN__BQ + k]);
                a0 = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(m0, vk), a0);
                a1 = _mm512_fmadd_ps(p, _mm512_maskz_loadu_ps(m1, vk + 16), a1);
            }
            _mm512_mask_storeu_ps(o, m0, a0); _mm512_mask_storeu_ps(o + 16, m1, a1);
        }
}

ATTN__T512 static void attn__dropout_avx512(float *S, int nk, int nlanes, uint32_t krow0, const uint32_t *ra, const uint32_t *rc,
                                            uint32_t thr, float scale) {
    const __m512i tv = _mm512_set1_epi32((int)thr);
    const __m512 sv = _mm512_set1_ps(scale);
    int r, j;
    for (r = 0; r < nlanes; r += 16) {
        const __m512i a = _mm512_loadu_si512(ra + r), c = _mm512_loadu_si512(rc + r);
        for (j = 0; j < nk; ++j) {
            float *s = S + (size_t)j * ATTN__BQ + r;
            const __mmask16 keep = attn__keep512(_mm512_set1_epi32((int)(krow0 + (uint32_t)j)), a, c, tv);
            _mm512_store_ps(s, _mm512_maskz_mul_ps(keep, _mm512_load_ps(s), sv));
        }
    }
}

static const attn__bwd_isa attn__bwd_isa_avx512 = { attn__bwd_stage_avx512, attn__pvt_avx512, attn__dropout_avx512 };

/* --- AVX2 + FMA ------------------------------------------------------------------------- */
ATTN__T256 static ATTN__INLINE __m256i attn__low256(__m256i x) {
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x7FEB352Du));
    x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
    x = _mm256_mullo_epi32(x, _mm256_set1_epi32((int)0x846CA68Bu));
    return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}
/* all-ones lanes where kept; thr1 = thr - 1 (x >> 8 < 2^24, so the signed compare is exact) */
ATTN__T256 static ATTN__INLINE __m256 attn__keep256(__m256i j, __m256i ra, __m256i rc, __m256i thr1) {
    const __m256i x = attn__low256(_mm256_xor_si256(attn__low256(_mm256_add_epi32(j, ra)), rc));
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_srli_epi32(x, 8), thr1));
}

ATTN__T256 static void attn__bwd_stage_avx2(float *ST, float *dPT, const attn__bwd_rows *R) {
    const __m256 one = _mm256_set1_ps(1.0f), zs = _mm256_set1_ps(R->keep_scale);
    const __m256 capv = _mm256_set1_ps(R->softcap), inv_cap = _mm256_set1_ps(R->softcap > 0 ? 1.0f / R->softcap : 0.0f);
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i thr1 = _mm256_set1_epi32((int)R->thr - 1), pre = _mm256_set1_epi32(R->pre);
    int r, j;
    if (R->mask == 2) { attn__bwd_stage_scalar(ST, dPT, R); return; }
    for (r = 0; r < R->n; ++r) {
        float *s = ST + (size_t)r * ATTN__BQ, *dp = dPT + (size_t)r * ATTN__BQ;
        float *dl = R->dlogit ? R->dlogit + (size_t)r * ATTN__BQ : NULL;
        const float *brow = R->bias ? R->bias + (ptrdiff_t)r * R->bias_sq : NULL;
        const __m256 vl = _mm256_set1_ps(R->lse[r]), vd = _mm256_set1_ps(R->drow[r]);
        const __m256 pos = _mm256_set1_ps((float)(R->p0 + r - R->c0)), slope = _mm256_set1_ps(R->slope);
        /* cap and hi are INT32_MAX on unmasked blocks (then unused): +1 in 64 bits, clamped */
        const __m256i cap1 = _mm256_set1_epi32((int)ATTN__MIN((long long)R->cap[r] + 1, (long long)INT32_MAX)),
                      lo1 = _mm256_set1_epi32(R->lo[r] - 1),
                      hi1 = _mm256_set1_epi32((int)ATTN__MIN((long long)R->hi[r] + 1, (long long)INT32_MAX));
        const __m256i ra = _mm256_set1_epi32((int)(R->ra[r] + R->krow0)), rc = _mm256_set1_epi32((int)R->rc[r]);
        const int dead = R->lse[r] == -INFINITY;
        for (j = 0; j < R->nlanes; j += 8) {
            const __m256i jv = _mm256_add_epi32(iota, _mm256_set1_epi32((int)R->c0 + j));
            __m256i vis = dead ? _mm256_setzero_si256() : attn__mask8(R->nk - j);
            __m256 x = _mm256_load_ps(s + j), dc = one, p, d, ds;
            if (R->softcap > 0.0f) {
                const __m256 th = attn__tanh256(_mm256_mul_ps(x, inv_cap));
                x = _mm256_mul_ps(capv, th); dc = _mm256_fnmadd_ps(th, th, one);
            }
            if (brow) x = _mm256_add_ps(x, _mm256_maskload_ps(brow + j, vis));
            if (R->alibi) {
                const __m256 dist = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(pos, _mm256_cvtepi32_ps(_mm256_add_epi32(iota, _mm256_set1_epi32(j)))));
                x = _mm256_fnmadd_ps(slope, dist, x);
            }
            if (R->mask) {
                const __m256i win = _mm256_and_si256(_mm256_cmpgt_epi32(jv, lo1), _mm256_cmpgt_epi32(hi1, jv));
                vis = _mm256_and_si256(vis, _mm256_and_si256(_mm256_cmpgt_epi32(cap1, jv),
                                                             _mm256_or_si256(_mm256_cmpgt_epi32(pre, jv), win)));
            }
            p = _mm256_and_ps(_mm256_castsi256_ps(vis), attn__exp256(_mm256_sub_ps(x, vl)));
            d = _mm256_and_ps(_mm256_castsi256_ps(vis), _mm256_load_ps(dp + j));
            if (R->dropout) {
                const __m256 z = _mm256_and_ps(attn__keep256(_mm256_add_epi32(iota, _mm256_set1_epi32(j)), ra, rc, thr1), zs);
                d = _mm256_mul_ps(d, z);
                ds = _mm256_mul_ps(p, _mm256_sub_ps(d, vd));
                p = _mm256_mul_ps(p, z);
            } else {
                ds = _mm256_mul_ps(p, _mm256_sub_ps(d, vd));
            }
            if (dl) _mm256_store_ps(dl + j, ds);
            _mm256_store_ps(s + j, p);
            _mm256_store_ps(dp + j, R->softcap > 0.0f ? _mm256_mul_ps(ds, dc) : ds);
        }
    }
}

/* acc[r][c] += sum_k S[r][k] V[k][c] for rows < nrows exactly: blocks of 6 rows x 16 columns
   (12 accumulators, as attn__pv_avx2), then 4, then single rows; plain loads where all 16
   columns exist. Every element sums k in order, so the blocking does not change the bits. */
#define ATTN__PVTY_LOAD(r) o = acc + (size_t)(r0 + r) * ldo + c; \
    a##r##0 = full ? _mm256_loadu_ps(o) : _mm256_maskload_ps(o, m0); \
    a##r##1 = full ? _mm256_loadu_ps(o + 8) : _mm256_maskload_ps(o + 8, m1);
#define ATTN__PVTY_FMA(r) p = _mm256_broadcast_ss(sk + (r) * ATTN__BQ); \
    a##r##0 = _mm256_fmadd_ps(p, v0, a##r##0); a##r##1 = _mm256_fmadd_ps(p, v1, a##r##1);
#define ATTN__PVTY_BLOCK(ROWS) { \
    const int full = Dv - c >= 16; \
    const __m256i m0 = attn__mask8(Dv - c), m1 = attn__mask8(Dv - c - 8); \
    __m256 p, v0, v1; \
    float *o; \
    ROWS(ATTN__PVY_DECL) \
    ROWS(ATTN__PVTY_LOAD) \
    for (k = 0; k < nk; ++k) { \
        const float *vk = V + (ptrdiff_t)k * ldv + c, *sk = S + (size_t)r0 * ATTN__BQ + k; \
        if (full) { v0 = _mm256_loadu_ps(vk); v1 = _mm256_loadu_ps(vk + 8); } \
        else { v0 = _mm256_maskload_ps(vk, m0); v1 = _mm256_maskload_ps(vk + 8, m1); } \
        ROWS(ATTN__PVTY_FMA) \
    } \
    ROWS(ATTN__PVY_STORE) }
#define ATTN__PVY_ROWS1(X) X(0)
ATTN__T256 static void attn__pvt_avx2(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv, float *acc, size_t ldo) {
    int r0 = 0, c, k;
    for (; r0 + 6 <= nrows; r0 += 6)
        for (c = 0; c < Dv; c += 16) ATTN__PVTY_BLOCK(ATTN__PVY_ROWS6)
    for (; r0 + 4 <= nrows; r0 += 4)
        for (c = 0; c < Dv; c += 16) ATTN__PVTY_BLOCK(ATTN__PVY_ROWS4)
    for (; r0 < nrows; ++r0)
        for (c = 0; c < Dv; c += 16) ATTN__PVTY_BLOCK(ATTN__PVY_ROWS1)
}

ATTN__T256 static void attn__dropout_avx2(float *S, int nk, int nlanes, uint32_t krow0, const uint32_t *ra, const uint32_t *rc,
                                          uint32_t thr, float scale) {
    const __m256i t1 = _mm256_set1_epi32((int)thr - 1);
    const __m256 sv = _mm256_set1_ps(scale);
    int r, j;
    for (r = 0; r < nlanes; r += 8) {
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(ra + r)),
                      c = _mm256_loadu_si256((const __m256i *)(const void *)(rc + r));
        for (j = 0; j < nk; ++j) {
            float *s = S + (size_t)j * ATTN__BQ + r;
            const __m256 keep = attn__keep256(_mm256_set1_epi32((int)(krow0 + (uint32_t)j)), a, c, t1);
            _mm256_store_ps(s, _mm256_and_ps(keep, _mm256_mul_ps(_mm256_load_ps(s), sv)));
        }
    }
}

static const attn__bwd_isa attn__bwd_isa_avx2 = { attn__bwd_stage_avx2, attn__pvt_avx2, attn__dropout_avx2 };
#endif /* ATTN__X86_SIMD */

#if defined(ATTN__NEON)
/* --- NEON backward kernels: the AVX2 ones on 4 lanes ------------------------------------ */
static inline uint32x4_t attn__low_neon(uint32x4_t x) {   /* attn__low32 on 4 lanes */
    x = veorq_u32(x, vshrq_n_u32(x, 16)); x = vmulq_u32(x, vdupq_n_u32(0x7FEB352Du));
    x = veorq_u32(x, vshrq_n_u32(x, 15)); x = vmulq_u32(x, vdupq_n_u32(0x846CA68Bu));
    return veorq_u32(x, vshrq_n_u32(x, 16));
}
/* attn__dropout_keep on 4 lanes: all-ones where kept */
static inline uint32x4_t attn__keep_neon(uint32x4_t j, uint32x4_t ra, uint32x4_t rc, uint32x4_t thr) {
    const uint32x4_t x = attn__low_neon(veorq_u32(attn__low_neon(vaddq_u32(j, ra)), rc));
    return vcgeq_u32(vshrq_n_u32(x, 8), thr);
}

static void attn__bwd_stage_neon(float *ST, float *dPT, const attn__bwd_rows *R) {
    const float32x4_t one = vdupq_n_f32(1.0f), zs = vdupq_n_f32(R->keep_scale), capv = vdupq_n_f32(R->softcap);
    const float32x4_t inv_cap = vdupq_n_f32(R->softcap > 0 ? 1.0f / R->softcap : 0.0f);
    static const int32_t iota_s[4] = { 0, 1, 2, 3 };
    const int32x4_t iota = vld1q_s32(iota_s), pre = vdupq_n_s32(R->pre);
    const uint32x4_t thr = vdupq_n_u32(R->thr);
    int r, j;
    if (R->mask == 2) { attn__bwd_stage_scalar(ST, dPT, R); return; }
    for (r = 0; r < R->n; ++r) {
        float *s = ST + (size_t)r * ATTN__BQ, *dp = dPT + (size_t)r * ATTN__BQ;
        float *dl = R->dlogit ? R->dlogit + (size_t)r * ATTN__BQ : NULL;
        const float *brow = R->bias ? R->bias + (ptrdiff_t)r * R->bias_sq : NULL;
        const float32x4_t vl = vdupq_n_f32(R->lse[r]), vd = vdupq_n_f32(R->drow[r]);
        const float32x4_t pos = vdupq_n_f32((float)(R->p0 + r - R->c0)), slope = vdupq_n_f32(R->slope);
        const int32x4_t cap = vdupq_n_s32(R->cap[r]), lo = vdupq_n_s32(R->lo[r]), hi = vdupq_n_s32(R->hi[r]);
        const uint32x4_t ra = vdupq_n_u32(R->ra[r] + R->krow0), rc = vdupq_n_u32(R->rc[r]);
        const int dead = R->lse[r] == -INFINITY;
        for (j = 0; j < R->nlanes; j += 4) {
            const int32x4_t jl = vaddq_s32(iota, vdupq_n_s32(j)), jv = vaddq_s32(jl, vdupq_n_s32((int)R->c0));
            uint32x4_t vis = dead ? vdupq_n_u32(0) : vcltq_s32(jl, vdupq_n_s32(R->nk));
            float32x4_t x = vld1q_f32(s + j), dc = one, p, d, ds;
            if (R->softcap > 0.0f) {
                const float32x4_t th = attn__tanh_neon(vmulq_f32(x, inv_cap));
                x = vmulq_f32(capv, th); dc = vfmsq_f32(one, th, th);
            }
            if (brow) {   /* lanes past nk are not read */
                float b4[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
                int e;
                for (e = 0; e < 4 && j + e < R->nk; ++e) b4[e] = brow[j + e];
                x = vaddq_f32(x, vld1q_f32(b4));
            }
            if (R->alibi) x = vfmsq_f32(x, slope, vabsq_f32(vsubq_f32(pos, vcvtq_f32_s32(jl))));
            if (R->mask) {   /* attn__lane_ok: key <= cap and (key < pre or lo <= key <= hi) */
                const uint32x4_t win = vandq_u32(vcgeq_s32(jv, lo), vcleq_s32(jv, hi));
                vis = vandq_u32(vis, vandq_u32(vcleq_s32(jv, cap), vorrq_u32(vcltq_s32(jv, pre), win)));
            }
            p = vreinterpretq_f32_u32(vandq_u32(vis, vreinterpretq_u32_f32(attn__exp_neon(vsubq_f32(x, vl)))));
            d = vreinterpretq_f32_u32(vandq_u32(vis, vreinterpretq_u32_f32(vld1q_f32(dp + j))));
            if (R->dropout) {
                const uint32x4_t keep = attn__keep_neon(vreinterpretq_u32_s32(jl), ra, rc, thr);
                const float32x4_t z = vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(zs)));
                d = vmulq_f32(d, z);
                ds = vmulq_f32(p, vsubq_f32(d, vd));
                p = vmulq_f32(p, z);
            } else {
                ds = vmulq_f32(p, vsubq_f32(d, vd));
            }
            if (dl) vst1q_f32(dl + j, ds);
            vst1q_f32(s + j, p);
            vst1q_f32(dp + j, R->softcap > 0.0f ? vmulq_f32(ds, dc) : ds);
        }
    }
}

/* acc[r][c] += sum_k S[r][k] V[k][c]: 4 rows x 16 columns in 16 accumulators, rows < nrows only */
static void attn__pvt_neon(const float *S, int nk, int nrows, const float *V, ptrdiff_t ldv, int Dv, float *acc, size_t ldo) {
    const int dv16 = Dv & ~15;
    int r0, c, k, x, g;
    for (r0 = 0; r0 < nrows; r0 += 4) {
        const int nr = ATTN__MIN(4, nrows - r0);
        for (c = 0; c < dv16; c += 16) {
            float32x4_t a[4][4];
            for (x = 0; x < 4; ++x)
                for (g = 0; g < 4; ++g) a[x][g] = x < nr ? vld1q_f32(acc + (size_t)(r0 + x) * ldo + c + 4 * g) : vdupq_n_f32(0.0f);
            for (k = 0; k < nk; ++k) {
                const float *vk = V + (ptrdiff_t)k * ldv + c, *sk = S + (size_t)r0 * ATTN__BQ + k;
                const float32x4_t v0 = vld1q_f32(vk), v1 = vld1q_f32(vk + 4), v2 = vld1q_f32(vk + 8), v3 = vld1q_f32(vk + 12);
                for (x = 0; x < nr; ++x) {
                    const float p = sk[(size_t)x * ATTN__BQ];
                    a[x][0] = vfmaq_n_f32(a[x][0], v0, p); a[x][1] = vfmaq_n_f32(a[x][1], v1, p);
                    a[x][2] = vfmaq_n_f32(a[x][2], v2, p); a[x][3] = vfmaq_n_f32(a[x][3], v3, p);
                }
            }
            for (x = 0; x < nr; ++x) for (g = 0; g < 4; ++g) vst1q_f32(acc + (size_t)(r0 + x) * ldo + c + 4 * g, a[x][g]);
        }
        for (x = 0; x < nr; ++x) {
            float *o = acc + (size_t)(r0 + x) * ldo;
            for (c = dv16; c < Dv; ++c) {
                float t = o[c];
                for (k = 0; k < nk; ++k) t += S[(size_t)(r0 + x) * ATTN__BQ + k] * V[(ptrdiff_t)k * ldv + c];
                o[c] = t;
            }
        }
    }
}

static void attn__dropout_neon(float *S, int nk, int nlanes, uint32_t krow0, const uint32_t *ra, const uint32_t *rc,
                               uint32_t thr, float scale) {
    const uint32x4_t t = vdupq_n_u32(thr);
    const float32x4_t sv = vdupq_n_f32(scale);
    int r, j;
    for (r = 0; r < nlanes; r += 4) {
        const uint32x4_t a = vld1q_u32(ra + r), c = vld1q_u32(rc + r);
        for (j = 0; j < nk; ++j) {
            float *s = S + (size_t)j * ATTN__BQ + r;
            const uint32x4_t keep = attn__keep_neon(vdupq_n_u32(krow0 + (uint32_t)j), a, c, t);
            vst1q_f32(s, vreinterpretq_f32_u32(vandq_u32(keep, vreinterpretq_u32_f32(vmulq_f32(vld1q_f32(s), sv)))));
        }
    }
}

static const attn__bwd_isa attn__bwd_isa_neon = { attn__bwd_stage_neon, attn__pvt_neon, attn__dropout_neon };
#endif /* ATTN__NEON */

static const attn__bwd_isa *attn__pick_bwd_isa(const attn__isa *isa) {
#if defined(ATTN__X86_SIMD)
    if (isa == &attn__isa_avx512) return &attn__bwd_isa_avx512;
    if (isa == &attn__isa_avx2) return &attn__bwd_isa_avx2;
#endif
#if defined(ATTN__NEON)
    if (isa == &attn__isa_neon) return &attn__bwd_isa_neon;
#endif
    (void)isa;
    return &attn__bwd_isa_scalar;
}

/* The forward's hook (attn__tile_chunk): probabilities of the tile's rows times keep/(1-p). */
static void attn__dropout_tile(const attn__problem *P, const attn__tile *T, float *S, long long c0, int nk) {
    uint32_t ra[ATTN__BQ], rc[ATTN__BQ];
    int r;
    for (r = 0; r < T->nlanes; ++r) {
        if (r < T->n) attn__dropout_row(P, T->S.tb, T->head[r], T->qrow[r], &ra[r], &rc[r]);
        else ra[r] = rc[r] = 0;
    }
    attn__pick_bwd_isa(attn__pick_isa())->dropout(S, nk, T->nlanes, (uint32_t)(T->S.k0 + c0), ra, rc,
                                                  attn__dropout_thr(P->dropout_p), 1.0f / (1.0f - P->dropout_p));
}

/* --- the backward proper ------------------------------------------------------------------ */
typedef struct attn__bwd_ctx {
    const attn__problem *P;
    const attn__isa *isa;
    const attn__bwd_isa *bisa;
    attn__view dout, dq, dk, dv;
    const float *lse;            /* [B][Hq][Sq] the forward's logsumexp */
    float *drow;                 /* [B][Hq][Sq] rowsum(dout * out) */
    float *dqp;                  /* [n_split][B][Hq][Sq][D] fp32 partial dq (unscaled) */
    size_t dqp_split;            /* floats per split */
    unsigned char *touched;      /* [n_split][B][Hq][Sq]: that split's dQpart row was written */
    float *ws;                   /* n_threads blocks of ws_floats */
    size_t ws_floats, ldk, ldv;  /* ldk/ldv: row strides of converted rows */
    float *dbias;                /* NULL: not asked */
    int n_split;
    long long split_keys;        /* keys per split, a multiple of ATTN__BQ */
    int all_seqs, all_heads;     /* a task takes every sequence / every KV head (dbias broadcast) */
    int n_bg, n_hg;              /* sequence groups, KV-head groups */
    int q_blocks, k_blocks;      /* pass 1/3 row blocks per batch */
    uint32_t thr;
    float keep_scale;
} attn__bwd_ctx;

/* Per-thread scratch, in floats (each piece a multiple of 16 floats: stays 64-byte aligned). */
typedef struct attn__bwd_ws {
    float *kt[ATTN__BWD_KG], *vt[ATTN__BWD_KG], *kc[ATTN__BWD_KG], *dka[ATTN__BWD_KG], *dva[ATTN__BWD_KG];
    float *qc, *oc, *st, *dpt, *dl, *ones;
} attn__bwd_ws;

static size_t attn__bwd_ws_layout(const attn__bwd_ctx *C, float *base, attn__bwd_ws *W) {
    const size_t D = (size_t)C->P->q.dim, Dv = (size_t)C->P->v.dim, B = ATTN__BQ;
    float *p = base;
    int g;
    for (g = 0; g < ATTN__BWD_KG; ++g) {
        W->kt[g] = p; p += attn__round16(D) * B;
        W->vt[g] = p; p += attn__round16(Dv) * B;
        W->kc[g] = p; p += B * C->ldk;
        W->dka[g] = p; p += B * C->ldk;
        W->dva[g] = p; p += B * C->ldv;
    }
    W->qc = p; p += B * C->ldk;
    W->oc = p; p += B * C->ldv;
    W->st = p; p += B * B;
    W->dpt = p; p += B * B;
    W->dl = p; p += B * B;
    W->ones = p; p += B;
    return (size_t)(p - base);
}

/* n rows of a strided tensor as fp32 rows: in place when f32, else converted into buf. */
static const float *attn__bwd_rows_f32(const attn__isa *isa, const attn__view *t, int tb, int row0, int h, int n,
                                       float *buf, size_t ldb, ptrdiff_t *ld) {
    const char *src = (const char *)attn__at(t, tb, row0, h);
    int r;
    if (t->dtype == ATTN_F32) { *ld = t->ss; return (const float *)(const void *)src; }
    for (r = 0; r < n; ++r) isa->load(src + (ptrdiff_t)r * t->ss * (ptrdiff_t)t->esize, t->dtype, buf + (size_t)r * ldb, t->dim, 1.0f);
    *ld = (ptrdiff_t)ldb;
    return buf;
}

/* One (query block, key block) pair of head h: rows i0..i0+n-1 of sequence S. */
static void attn__bwd_pair(const attn__bwd_ctx *C, const attn__bwd_ws *W, const attn__seq *S, int h, int split,
                           int i0, int n, const float *Qr, ptrdiff_t ldq, const float *Or, ptrdiff_t ldo,
                           long long c0, int nk, int full, int kg, const float *Kr, ptrdiff_t ldkr) {
    const attn__problem *P = C->P;
    const int D = P->q.dim, Dv = P->v.dim, Hq = P->q.heads, qrow0 = S->q0 + i0;
    const long long shift = (long long)S->Lk - S->Lq;
    const size_t li = ((size_t)S->tb * Hq + h) * P->q.seq + (size_t)qrow0;
    attn__bwd_rows R;
    int r, j;
    R.n = n; R.nk = nk; R.nlanes = (int)attn__round16((size_t)nk);
    C->isa->qk(Qr, ldq, n, W->kt[kg], R.nlanes, D, W->st);
    C->isa->qk(Or, ldo, n, W->vt[kg], R.nlanes, Dv, W->dpt);
    R.c0 = c0; R.p0 = i0 + shift;
    R.lse = C->lse + li; R.drow = C->drow + li;
    R.alibi = P->alibi != NULL; R.slope = P->alibi ? P->alibi[h] : 0.0f;
    R.mask = full ? 0 : P->dilation > 1 ? 2 : 1;
    R.pre = attn__lane_pre(P->sink, P->global, S->Lk);
    if (R.mask == 1)
        for (r = 0; r < n; ++r)               /* the forward's per-row rule */
            attn__lane_rule(P->causal, P->window_left, P->window_right, P->global, R.p0 + r, S->Lk, &R.cap[r], &R.lo[r],
                            &R.hi[r]);
    else
        for (r = 0; r < n; ++r) { R.cap[r] = INT32_MAX; R.lo[r] = 0; R.hi[r] = INT32_MAX; }
    R.softcap = P->softcap;
    R.bias = NULL; R.bias_sq = 0;
    if (P->bias) {
        const int bb = P->bias_batch == 1 ? 0 : S->seq, bh = P->bias_heads == 1 ? 0 : h;
        R.bias = P->bias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh + (ptrdiff_t)qrow0 * P->bias_sq + c0;
        R.bias_sq = P->bias_sq;
    }
    R.dlogit = C->dbias ? W->dl : NULL;
    R.dropout = P->dropout_p > 0.0f; R.thr = C->thr; R.keep_scale = C->keep_scale;
    R.krow0 = (uint32_t)(S->k0 + c0);
    if (R.dropout) for (r = 0; r < n; ++r) attn__dropout_row(P, S->tb, h, qrow0 + r, &R.ra[r], &R.rc[r]);
    else for (r = 0; r < n; ++r) R.ra[r] = R.rc[r] = 0;
    R.P = P;
    {   /* first touch of these rows in this split: zero them, mark them */
        unsigned char *tf = C->touched + (size_t)split * C->dqp_split / (size_t)D + li;
        if (!tf[0]) {
            memset(C->dqp + (size_t)split * C->dqp_split + li * (size_t)D, 0, sizeof(float) * (size_t)n * (size_t)D);
            memset(tf, 1, (size_t)n);
        }
    }
    C->bisa->stage(W->st, W->dpt, &R);
    if (C->dbias) {
        const int bb = P->bias_batch == 1 ? 0 : S->seq, bh = P->bias_heads == 1 ? 0 : h;
        float *db = C->dbias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh + (ptrdiff_t)qrow0 * P->bias_sq + c0;
        for (r = 0; r < n; ++r)
            for (j = 0; j < nk; ++j) db[(ptrdiff_t)r * P->bias_sq + j] += W->dl[(size_t)r * ATTN__BQ + j];
    }
    C->isa->pv(W->st, n, nk, Or, ldo, Dv, W->ones, W->dva[kg], C->ldv);
    C->isa->pv(W->dpt, n, nk, Qr, ldq, D, W->ones, W->dka[kg], C->ldk);
    C->bisa->pvt(W->dpt, nk, n, Kr, ldkr, D, C->dqp + (size_t)split * C->dqp_split + (li * (size_t)D), (size_t)D);
}

/* KV head hk of sequence S over the keys of one split. */
static void attn__bwd_unit(const attn__bwd_ctx *C, const attn__bwd_ws *W, const attn__seq *S, int hk, int split) {
    const attn__problem *P = C->P;
    const int D = P->q.dim, Dv = P->v.dim, g = P->groups, Hq = P->q.heads;
    const long long klo = split * C->split_keys, kend = ATTN__MIN((long long)S->Lk, klo + C->split_keys);
    const long long shift = (long long)S->Lk - S->Lq;
    long long c0;
    int i, h, j, d;
    const size_t dqp_split_rows = C->dqp_split / (size_t)D;
    for (h = hk * g; h < hk * g + g; ++h)            /* no dq row of this split touched yet */
        memset(C->touched + (size_t)split * (dqp_split_rows) + ((size_t)S->tb * Hq + (size_t)h) * P->q.seq + (size_t)S->q0, 0,
               (size_t)S->Lq);
    for (c0 = klo; c0 < kend; c0 += (long long)ATTN__BQ * ATTN__BWD_KG) {
        /* ATTN__BWD_KG key blocks at once: each query block's rows are loaded once for all */
        const float *Kr[ATTN__BWD_KG];
        ptrdiff_t ldkr[ATTN__BWD_KG];
        int nk[ATTN__BWD_KG], ng = 0, kg;
        for (kg = 0; kg < ATTN__BWD_KG && c0 + (long long)kg * ATTN__BQ < kend; ++kg, ++ng) {
            const long long cb = c0 + (long long)kg * ATTN__BQ;
            const int krow = S->k0 + (int)cb;
            ptrdiff_t ldvr;
            const float *Vr;
            nk[kg] = (int)ATTN__MIN((long long)ATTN__BQ, kend - cb);
            Kr[kg] = attn__bwd_rows_f32(C->isa, &P->k, S->tb, krow, hk, nk[kg], W->kc[kg], C->ldk, &ldkr[kg]);
            Vr = attn__bwd_rows_f32(C->isa, &P->v, S->tb, krow, hk, nk[kg], W->oc, C->ldv, &ldvr);
            for (d = 0; d < D; ++d) {                 /* K^T (times scale), V^T; lanes >= nk zero */
                float *kt = W->kt[kg] + (size_t)d * ATTN__BQ;
                for (j = 0; j < nk[kg]; ++j) kt[j] = Kr[kg][(ptrdiff_t)j * ldkr[kg] + d] * P->scale;
                for (; j < ATTN__BQ; ++j) kt[j] = 0.0f;
            }
            for (d = 0; d < Dv; ++d) {
                float *vt = W->vt[kg] + (size_t)d * ATTN__BQ;
                for (j = 0; j < nk[kg]; ++j) vt[j] = Vr[(ptrdiff_t)j * ldvr + d];
                for (; j < ATTN__BQ; ++j) vt[j] = 0.0f;
            }
            memset(W->dka[kg], 0, sizeof(float) * ATTN__BQ * C->ldk);
            memset(W->dva[kg], 0, sizeof(float) * ATTN__BQ * C->ldv);
        }
        for (h = hk * g; h < hk * g + g; ++h)
            for (i = 0; i < S->Lq; i += ATTN__BQ) {
                const int n = ATTN__MIN(ATTN__BQ, S->Lq - i);
                const long long p0 = i + shift, p1 = i + n - 1 + shift;
                long long rg[2][2];
                const int nr = attn__key_ranges(P, p0, p1, S->Lk, rg);
                const float *Qr = NULL, *Or = NULL;
                ptrdiff_t ldq = 0, ldo = 0;
                for (kg = 0; kg < ng; ++kg) {
                    const long long cb = c0 + (long long)kg * ATTN__BQ;
                    int ri, seen = 0;
                    for (ri = 0; ri < nr; ++ri) seen |= rg[ri][0] < cb + nk[kg] && rg[ri][1] > cb;
                    if (!seen) continue;
                    if (!Qr) {
                        Qr = attn__bwd_rows_f32(C->isa, &P->q, S->tb, S->q0 + i, h, n, W->qc, C->ldk, &ldq);
                        Or = attn__bwd_rows_f32(C->isa, &C->dout, S->tb, S->q0 + i, h, n, W->oc, C->ldv, &ldo);
                    }
                    attn__bwd_pair(C, W, S, h, split, i, n, Qr, ldq, Or, ldo, cb, nk[kg], attn__chunk_full(P, p0, p1, cb, cb + nk[kg]),
                                   kg, Kr[kg], ldkr[kg]);
                }
            }
        for (kg = 0; kg < ng; ++kg) {
            const int krow = S->k0 + (int)(c0 + (long long)kg * ATTN__BQ);
            for (j = 0; j < nk[kg]; ++j) {
                attn__store_row(attn__at(&C->dk, S->tb, krow + j, hk), C->dk.dtype, W->dka[kg] + (size_t)j * C->ldk, D, P->scale);
                attn__store_row(attn__at(&C->dv, S->tb, krow + j, hk), C->dv.dtype, W->dva[kg] + (size_t)j * C->ldv, Dv, 1.0f);
            }
        }
    }
}

/* Pass 2 task: key split x sequence group x KV-head group; heavy (early) splits first. */
static void attn__bwd_task(void *vctx, int task, int thread) {
    const attn__bwd_ctx *C = (const attn__bwd_ctx *)vctx;
    const attn__problem *P = C->P;
    const int units = C->n_bg * C->n_hg, split = task / units, bg = (task % units) / C->n_hg, hg = task % C->n_hg;
    const int n0 = C->all_seqs ? 0 : bg, n1 = C->all_seqs ? P->n_seqs : bg + 1;
    const int h0 = C->all_heads ? 0 : hg, h1 = C->all_heads ? P->k.heads : hg + 1;
    attn__bwd_ws W;
    int n, hk, i;
    attn__bwd_ws_layout(C, C->ws + (size_t)thread * C->ws_floats, &W);
    for (i = 0; i < ATTN__BQ; ++i) W.ones[i] = 1.0f;
    if (C->dbias) {                  /* this task's dbias columns start at zero */
        const long long klo = split * C->split_keys, khi = ATTN__MIN((long long)P->k.seq, klo + C->split_keys);
        const int b0 = P->bias_batch == 1 ? 0 : n0, b1 = P->bias_batch == 1 ? 1 : n1;
        const int g = P->groups, e0 = P->bias_heads == 1 ? 0 : h0 * g, e1 = P->bias_heads == 1 ? 1 : h1 * g;
        int bb, bh, row;
        for (bb = b0; bb < b1; ++bb)
            for (bh = e0; bh < e1; ++bh)
                for (row = 0; row < P->bias_rows; ++row)     /* rows 1: the sum over queries */
                    memset(C->dbias + (ptrdiff_t)bb * P->bias_sb + (ptrdiff_t)bh * P->bias_sh + (ptrdiff_t)row * P->bias_sq + klo, 0,
                           sizeof(float) * (size_t)(khi - klo));
    }
    for (n = n0; n < n1; ++n) {
        attn__seq S;
        attn__seq_at(P, n, &S);
        for (hk = h0; hk < h1; ++hk) attn__bwd_unit(C, &W, &S, hk, split);
    }
}

/* Pass 1: drow = rowsum(dout * out) for the valid rows of one block of 64 rows. */
static void attn__bwd_drow_task(void *vctx, int task, int thread) {
    const attn__bwd_ctx *C = (const attn__bwd_ctx *)vctx;
    const attn__problem *P = C->P;
    const int tb = task / C->q_blocks, r0 = (task % C->q_blocks) * ATTN__BQ, r1 = ATTN__MIN(P->q.seq, r0 + ATTN__BQ);
    const int Dv = P->v.dim;
    float *a = C->ws + (size_t)thread * C->ws_floats, *b = a + C->ldv;
    int row, h, c;
    for (row = r0; row < r1; ++row) {
        attn__seq S;
        if (!attn__seq_of_row(P, tb, row, &S)) continue;      /* never read */
        for (h = 0; h < P->q.heads; ++h) {
            float s = 0.0f;
            C->isa->load(attn__at(&C->dout, tb, row, h), C->dout.dtype, a, Dv, 1.0f);
            C->isa->load(attn__at(&P->out, tb, row, h), P->out.dtype, b, Dv, 1.0f);
            for (c = 0; c < Dv; ++c) s += a[c] * b[c];
            C->drow[((size_t)tb * P->q.heads + h) * P->q.seq + row] = s;
        }
    }
}

/* Pass 3: dq rows of one block (sum of the splits in order, times scale); then dk/dv rows that
   no sequence owns (padding keys, keys after the last packed sequence) get zeros. */
static void attn__bwd_final_task(void *vctx, int task, int thread) {
    const attn__bwd_ctx *C = (const attn__bwd_ctx *)vctx;
    const attn__problem *P = C->P;
    const int D = P->q.dim, Hq = P->q.heads;
    int row, h, s, c;
    if (task < P->q.batch * C->q_blocks) {
        const int tb = task / C->q_blocks, r0 = (task % C->q_blocks) * ATTN__BQ, r1 = ATTN__MIN(P->q.seq, r0 + ATTN__BQ);
        float *acc = C->ws + (size_t)thread * C->ws_floats;
        for (row = r0; row < r1; ++row) {
            attn__seq S;
            const int owned = attn__seq_of_row(P, tb, row, &S);
            for (h = 0; h < Hq; ++h) {
                void *o = attn__at(&C->dq, tb, row, h);
                const float *src = C->dqp + (((size_t)tb * Hq + (size_t)h) * P->q.seq + (size_t)row) * (size_t)D;
                const unsigned char *tf = C->touched + ((size_t)tb * Hq + (size_t)h) * P->q.seq + (size_t)row;
                if (!owned) { attn__store_zero_row(o, C->dq.dtype, D); continue; }
                for (c = 0; c < D; ++c) acc[c] = 0.0f;
                for (s = 0; s < C->n_split; ++s)
                    if (tf[(size_t)s * (C->dqp_split / (size_t)D)])
                        for (c = 0; c < D; ++c) acc[c] += src[(size_t)s * C->dqp_split + (size_t)c];
                attn__store_row(o, C->dq.dtype, acc, D, P->scale);
            }
        }
    } else {
        const int t = task - P->q.batch * C->q_blocks, tb = t / C->k_blocks;
        const int k0 = (t % C->k_blocks) * ATTN__BQ, k1 = ATTN__MIN(P->k.seq, k0 + ATTN__BQ);
        const int owned_end = P->cu_k ? P->cu_k[P->n_seqs] : (P->seqlens_k ? P->seqlens_k[tb] : P->k.seq);
        for (row = ATTN__MAX(k0, owned_end); row < k1; ++row)
            for (h = 0; h < P->k.heads; ++h) {
                attn__store_zero_row(attn__at(&C->dk, tb, row, h), C->dk.dtype, D);
                attn__store_zero_row(attn__at(&C->dv, tb, row, h), C->dv.dtype, P->v.dim);
            }
    }
}

/* Decomposition and workspace size; shapes only (never the thread count). */
static attn_status attn__bwd_plan(const attn__problem *P, const attn_desc *d, attn__bwd_ctx *C, size_t *bytes) {
    size_t units, dq_floats, dq_bytes, drow_floats, per_thread, total, maxsplit;
    attn__bwd_ws W;
    long long kb;
    int want;
    memset(C, 0, sizeof *C);
    C->P = P;
    C->isa = attn__pick_isa(); C->bisa = attn__pick_bwd_isa(C->isa);
    C->ldk = attn__round16((size_t)P->q.dim); C->ldv = attn__round16((size_t)P->v.dim);
    C->all_seqs = d->dbias && P->bias && P->bias_batch == 1 && P->n_seqs > 1;
    C->all_heads = d->dbias && P->bias && P->bias_heads == 1 && P->k.heads > 1;
    C->n_bg = C->all_seqs ? 1 : P->n_seqs; C->n_hg = C->all_heads ? 1 : P->k.heads;
    units = (size_t)C->n_bg * (size_t)C->n_hg;                       /* <= batch * heads: fits */
    if (!attn__mul_size((size_t)P->q.batch * (size_t)P->q.seq, (size_t)P->q.heads, &dq_floats) ||
        !attn__mul_size(dq_floats, (size_t)P->q.dim, &dq_floats) || !attn__mul_size(dq_floats, sizeof(float), &dq_bytes))
        return ATTN_ERR_OVERFLOW;
    kb = ((long long)P->k.seq + ATTN__BQ - 1) / ATTN__BQ;
    want = units >= ATTN__BWD_SPLIT_TASKS ? 1 : (int)((ATTN__BWD_SPLIT_TASKS + units - 1) / units);
    maxsplit = dq_bytes > 0 ? ATTN__BWD_SPLIT_BYTES / dq_bytes : (size_t)want;
    C->n_split = (int)ATTN__MAX(1LL, ATTN__MIN((long long)want, ATTN__MIN(kb, (long long)ATTN__MIN(maxsplit, (size_t)INT_MAX))));
    C->split_keys = (kb + C->n_split - 1) / C->n_split * ATTN__BQ;
    C->n_split = (int)(((long long)P->k.seq + C->split_keys - 1) / C->split_keys);
    if (units * (size_t)C->n_split > (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;
    C->q_blocks = (int)(((long long)P->q.seq + ATTN__BQ - 1) / ATTN__BQ);   /* seq may be INT_MAX */
    C->k_blocks = (int)(((long long)P->k.seq + ATTN__BQ - 1) / ATTN__BQ);
    if ((size_t)P->q.batch * (size_t)C->q_blocks + (size_t)P->k.batch * (size_t)C->k_blocks > (size_t)INT_MAX)
        return ATTN_ERR_OVERFLOW;
    C->dqp_split = dq_floats;
    C->ws_floats = attn__bwd_ws_layout(C, NULL, &W);
    drow_floats = attn__round16((size_t)P->q.batch * (size_t)P->q.heads * (size_t)P->q.seq);   /* checked by validation */
    if (!attn__mul_size(C->ws_floats, (size_t)P->n_threads, &per_thread) ||
        !attn__mul_size(dq_floats, (size_t)C->n_split, &total) || !attn__add_size(total, per_thread, &total) ||
        !attn__add_size(total, drow_floats, &total) || !attn__mul_size(total, sizeof(float), &total) ||
        !attn__add_size(total, (size_t)C->n_split * (drow_floats + ATTN__ALIGN), &total) ||   /* touched flags */
        !attn__add_size(total, ATTN__ALIGN, bytes)) return ATTN_ERR_OVERFLOW;
    C->thr = attn__dropout_thr(P->dropout_p);
    C->keep_scale = 1.0f / (1.0f - P->dropout_p);
    return ATTN_OK;
}

/* ATTN_SOFTMAX's backward (attn_backward, attn_backward_workspace_size). */
static attn_status attn__softmax_backward(const attn__call *c) {
    const attn_desc *desc = c->d;
    const attn_tensor q = c->q, k = c->k, v = c->v, out = c->out, dout = c->dout, dq = c->dq, dk = c->dk, dv = c->dv;
    const float *lse = c->lse_in;
    attn__problem P;
    attn__bwd_ctx C;
    size_t bytes;
    attn__ws w;
    attn_status s;
    /* a dilated window that splits into D undilated problems runs as ATTN_LONGFORMER's backward
       runs it (see attn__softmax_forward): the element-by-element mask takes the scalar stage */
    if (desc->dilation > 1 && desc->dropout_p == 0.0f && !desc->longformer.dilations &&
        attn__lf_classes(c, desc->dilation) > 1)
        return attn__longformer_backward(c);
    memset(&P, 0, sizeof P);
    if ((s = attn__check_forward(desc, &q, &k, &v, c->bytes ? NULL : &out, &P)) != ATTN_OK) return s;
    if (c->bytes) return attn__bwd_plan(&P, desc, &C, c->bytes);
    if (!dout.data) return ATTN_ERR_BWD_NULL_DOUT;
    if (!lse) return ATTN_ERR_BWD_NULL_LSE;
    if (!dq.data) return ATTN_ERR_BWD_NULL_DQ;
    if (!dk.data) return ATTN_ERR_BWD_NULL_DK;
    if (!dv.data) return ATTN_ERR_BWD_NULL_DV;
    if (!attn__dtype_ok(dout.dtype) || !attn__dtype_ok(dq.dtype) || !attn__dtype_ok(dk.dtype) || !attn__dtype_ok(dv.dtype))
        return ATTN_ERR_DTYPE;
    if (dout.batch != out.batch || dout.seq != out.seq || dout.heads != out.heads || dout.dim != out.dim)
        return ATTN_ERR_BWD_DOUT_SHAPE;
    if (dq.batch != q.batch || dq.seq != q.seq || dq.heads != q.heads || dq.dim != q.dim) return ATTN_ERR_BWD_DQ_SHAPE;
    if (dk.batch != k.batch || dk.seq != k.seq || dk.heads != k.heads || dk.dim != k.dim) return ATTN_ERR_BWD_DK_SHAPE;
    if (dv.batch != v.batch || dv.seq != v.seq || dv.heads != v.heads || dv.dim != v.dim) return ATTN_ERR_BWD_DV_SHAPE;
    if (attn__tensor_bcast(&dq)) return ATTN_ERR_BWD_DQ_BROADCAST;
    if (attn__tensor_bcast(&dk)) return ATTN_ERR_BWD_DK_BROADCAST;
    if (attn__tensor_bcast(&dv)) return ATTN_ERR_BWD_DV_BROADCAST;
    if (desc->dbias) {
        if (!P.bias) return ATTN_ERR_BWD_DBIAS_NO_BIAS;
        if ((P.bias_batch > 1 && P.bias_sb == 0) || (P.bias_heads > 1 && P.bias_sh == 0) || (P.bias_rows > 1 && P.bias_sq == 0))
            return ATTN_ERR_BWD_DBIAS_BROADCAST;
    }
    if ((s = attn__bwd_plan(&P, desc, &C, &bytes)) != ATTN_OK) return s;
    C.lse = lse;
    if ((s = attn__make_view(&dout, &C.dout)) != ATTN_OK || (s = attn__make_view(&dq, &C.dq)) != ATTN_OK ||
        (s = attn__make_view(&dk, &C.dk)) != ATTN_OK || (s = attn__make_view(&dv, &C.dv)) != ATTN_OK) return s;
    if ((s = attn__ws_acquire(desc->workspace, desc->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    C.ws = (float *)(void *)w.base;
    C.drow = C.ws + C.ws_floats * (size_t)P.n_threads;
    C.dqp = C.drow + attn__round16((size_t)q.batch * (size_t)q.heads * (size_t)q.seq);
    C.touched = (unsigned char *)(C.dqp + C.dqp_split * (size_t)C.n_split);
    C.dbias = desc->dbias;
    attn__parallel_for(desc, q.batch * C.q_blocks, P.n_threads, attn__bwd_drow_task, &C);
    attn__parallel_for(desc, C.n_bg * C.n_hg * C.n_split, P.n_threads, attn__bwd_task, &C);
    attn__parallel_for(desc, q.batch * C.q_blocks + k.batch * C.k_blocks, P.n_threads, attn__bwd_final_task, &C);
    attn__ws_release(&w);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.10 GEMM (blocked SIMD SGEMM for the layers, caller BLAS hook)
   --------------------------------------------------------------------------------------- */

/* C[m,n] = alpha op(A) op(B) + beta C, Goto/BLIS style. C is cut into one rectangular task per
   thread; a task loops over its column blocks (nc), the k blocks (kc) and its row blocks (mc):
   it packs a kc x nc block of op(B) into NR-column panels, an mc x kc block of op(A) into
   MR-row panels, and runs the MR x NR register micro-kernel over every (panel, panel) pair.
   Each C element is summed over k in the same order whatever the task grid, thread count or
   edge masking: kc depends on k alone, each kc block is summed from 0 in registers, then
   C = alpha*acc + beta*C (first k block; C is not read when beta == 0) or C = alpha*acc + C.
   So the result is bitwise the same for every n_threads. */

#define ATTN__GEMM_KC 384    /* largest k block (tuned on Zen 5: 48 KiB L1d, 1 MiB L2) */

/* acc = A panel [kc][MR] times B panel [kc][NR]; then for r < mr, c < nr:
   C[r][c] = alpha*acc[r][c] + beta*C[r][c] when load_c, else alpha*acc[r][c]. */
typedef void (*attn__gemm_ukr)(int kc, const float *A, const float *B, float *C, ptrdiff_t ldc,
                               int mr, int nr, float alpha, float beta, int load_c);
/* dst[j*ldd + r] = src[r*lds + j] for j < nc (<= 16), r < 16: rows r >= nr (<= 16) read as 0;
   only the lanes in smask of each destination vector are written. NULL: scalar packing. */
typedef void (*attn__gemm_tr)(const float *src, ptrdiff_t lds, int nr, int nc, float *dst, ptrdiff_t ldd,
                              unsigned smask);
/* src[0..n) cut into chunks of w (<= 32) floats; chunk q goes to dst + q*ps, zero-padded to w. */
typedef void (*attn__gemm_rows)(const float *src, ptrdiff_t n, float *dst, ptrdiff_t ps, int w);
typedef struct attn__gemm_kern {
    const char *name;
    int mr, nr;          /* register tile */
    int mc, nc;          /* row block (packed A in L2), column block (packed B in L3) */
    attn__gemm_ukr ukr;
    attn__gemm_tr tr;
    attn__gemm_rows rows;
} attn__gemm_kern;

/* --- scalar (and the portable kernel other ISAs fall back to): 4 x 16 ---------------------- */
static void attn__gemm_ukr_scalar(int kc, const float *A, const float *B, float *C, ptrdiff_t ldc,
                                  int mr, int nr, float alpha, float beta, int load_c) {
    float acc[4][16];
    int p, r, c;
    memset(acc, 0, sizeof acc);
    for (p = 0; p < kc; ++p, A += 4, B += 16)
        for (r = 0; r < 4; ++r) {
            const float a = A[r];
            for (c = 0; c < 16; ++c) acc[r][c] += a * B[c];
        }
    for (r = 0; r < mr; ++r) {
        float *cr = C + (ptrdiff_t)r * ldc;
        if (load_c) for (c = 0; c < nr; ++c) cr[c] = alpha * acc[r][c] + beta * cr[c];
        else        for (c = 0; c < nr; ++c) cr[c] = alpha * acc[r][c];
    }
}
static void attn__gemm_rows_scalar(const float *src, ptrdiff_t n, float *dst, ptrdiff_t ps, int w) {
    ptrdiff_t q;
    int c;
    for (q = 0; q < n; q += w) {
        const int cnt = (int)ATTN__MIN((ptrdiff_t)w, n - q);
        float *d = dst + q / w * ps;
        for (c = 0; c < cnt; ++c) d[c] = src[q + c];
        for (; c < w; ++c) d[c] = 0.0f;
    }
}
static const attn__gemm_kern attn__gemm_scalar = { "scalar", 4, 16, 128, 2048, attn__gemm_ukr_scalar, NULL,
                                                   attn__gemm_rows_scalar };

#if defined(ATTN__X86_SIMD)
/* --- AVX-512: 14 rows x 32 columns, 28 zmm accumulators; masked stores at the edges -------- */
#define ATTN__G512_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define ATTN__G512_DECL(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = _mm512_setzero_ps();
#define ATTN__G512_FMA(r) a = _mm512_set1_ps(A[r]); \
    c##r##0 = _mm512_fmadd_ps(a, b0, c##r##0); c##r##1 = _mm512_fmadd_ps(a, b1, c##r##1);
#define ATTN__G512_PF(r) if ((r) < mr) { _mm_prefetch((const char *)(C + (ptrdiff_t)(r) * ldc), _MM_HINT_T0); \
    _mm_prefetch((const char *)(C + (ptrdiff_t)(r) * ldc + pf1), _MM_HINT_T0); }
#define ATTN__G512_STORE(r) if ((r) < mr) { \
    float *cr = C + (ptrdiff_t)(r) * ldc; \
    __m512 x0 = _mm512_mul_ps(va, c##r##0), x1 = _mm512_mul_ps(va, c##r##1); \
    if (load_c) { x0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cr), x0); \
                  x1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cr + 16), x1); } \
    _mm512_mask_storeu_ps(cr, m0, x0); _mm512_mask_storeu_ps(cr + 16, m1, x1); }
ATTN__T512 static void attn__gemm_ukr512(int kc, const float *A, const float *B, float *C, ptrdiff_t ldc,
                                         int mr, int nr, float alpha, float beta, int load_c) {
    __m512 a, b0, b1, va, vb;
    __mmask16 m0, m1;
    const int pf1 = nr > 16 ? 16 : 0;   /* the second cache line of a row, if the tile has one */
    int p;
    ATTN__G512_ROWS(ATTN__G512_DECL)
    ATTN__G512_ROWS(ATTN__G512_PF)
    for (p = 0; p < kc; ++p, A += 14, B += 32) {
        b0 = _mm512_load_ps(B); b1 = _mm512_load_ps(B + 16);
        ATTN__G512_ROWS(ATTN__G512_FMA)
    }
    va = _mm512_set1_ps(alpha); vb = _mm512_set1_ps(beta);
    m0 = (__mmask16)(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
    m1 = (__mmask16)(nr >= 32 ? 0xFFFFu : nr > 16 ? (1u << (nr - 16)) - 1u : 0u);
    ATTN__G512_ROWS(ATTN__G512_STORE)
}
/* 16 x 16 transpose in registers (unpack, unpack, two 128-bit lane shuffles) for packing */
ATTN__T512 static void attn__gemm_tr512(const float *src, ptrdiff_t lds, int nr, int nc, float *dst, ptrdiff_t ldd,
                                        unsigned smask) {
    __m512 r[16], t[16];
    const __mmask16 lm = (__mmask16)(nc >= 16 ? 0xFFFFu : (1u << nc) - 1u);
    int i;
    for (i = 0; i < 16; ++i) r[i] = i < nr ? _mm512_maskz_loadu_ps(lm, src + (ptrdiff_t)i * lds) : _mm512_setzero_ps();
    for (i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (i = 0; i < 16; i += 4) {
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (i = 0; i < 4; ++i) {   /* r[i] holds element 4L+i of rows 0-3 in lane L; r[4+i] rows 4-7, ... */
        t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
        t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
        t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
        t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
    }
    for (i = 0; i < 8; ++i) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
        r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
    }
    for (i = 0; i < nc; ++i) _mm512_mask_storeu_ps(dst + (ptrdiff_t)i * ldd, (__mmask16)smask, r[i]);
}
ATTN__T512 static void attn__gemm_rows512(const float *src, ptrdiff_t n, float *dst, ptrdiff_t ps, int w) {
    const __mmask16 s0 = (__mmask16)(w >= 16 ? 0xFFFFu : (1u << w) - 1u);
    const __mmask16 s1 = (__mmask16)(w >= 32 ? 0xFFFFu : w > 16 ? (1u << (w - 16)) - 1u : 0u);
    ptrdiff_t q;
    for (q = 0; q < n; q += w) {
        const int cnt = (int)ATTN__MIN((ptrdiff_t)w, n - q);
        float *d = dst + q / w * ps;
        const __mmask16 l0 = (__mmask16)(cnt >= 16 ? 0xFFFFu : (1u << cnt) - 1u);
        _mm512_mask_storeu_ps(d, s0, _mm512_maskz_loadu_ps(l0, src + q));
        if (w > 16) {
            const __mmask16 l1 = (__mmask16)(cnt >= 32 ? 0xFFFFu : cnt > 16 ? (1u << (cnt - 16)) - 1u : 0u);
            _mm512_mask_storeu_ps(d + 16, s1, _mm512_maskz_loadu_ps(l1, src + q + 16));
        }
    }
}
static const attn__gemm_kern attn__gemm_avx512 = { "avx512", 14, 32, 336, 4096, attn__gemm_ukr512, attn__gemm_tr512,
                                                   attn__gemm_rows512 };

/* --- AVX2 + FMA: 6 rows x 16 columns, 12 ymm accumulators -------------------------------- */
#define ATTN__G256_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ATTN__G256_DECL(r) __m256 c##r##0 = _mm256_setzero_ps(), c##r##1 = _mm256_setzero_ps();
#define ATTN__G256_FMA(r) a = _mm256_broadcast_ss(A + (r)); \
    c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0); c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1);
/* maskload/maskstore only for a partial tile: AMD runs a masked store as a microcoded
   sequence, which cost the full 6 x 16 tiles several % of the product */
#define ATTN__G256_STORE(r) if ((r) < mr) { \
    float *cr = C + (ptrdiff_t)(r) * ldc; \
    __m256 x0 = _mm256_mul_ps(va, c##r##0), x1 = _mm256_mul_ps(va, c##r##1); \
    if (nr == 16) { \
        if (load_c) { x0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), x0); x1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), x1); } \
        _mm256_storeu_ps(cr, x0); _mm256_storeu_ps(cr + 8, x1); \
    } else { \
        if (load_c) { x0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cr, m0), x0); \
                      x1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cr + 8, m1), x1); } \
        _mm256_maskstore_ps(cr, m0, x0); _mm256_maskstore_ps(cr + 8, m1, x1); } }
ATTN__T256 static void attn__gemm_ukr256(int kc, const float *A, const float *B, float *C, ptrdiff_t ldc,
                                         int mr, int nr, float alpha, float beta, int load_c) {
    __m256 a, b0, b1, va, vb;
    __m256i m0, m1;
    int p;
    ATTN__G256_ROWS(ATTN__G256_DECL)
    for (p = 0; p < kc; ++p, A += 6, B += 16) {
        b0 = _mm256_load_ps(B); b1 = _mm256_load_ps(B + 8);
        ATTN__G256_ROWS(ATTN__G256_FMA)
    }
    va = _mm256_set1_ps(alpha); vb = _mm256_set1_ps(beta);
    m0 = attn__mask8(nr); m1 = attn__mask8(nr - 8);
    ATTN__G256_ROWS(ATTN__G256_STORE)
}
/* The packing moves, vectorised: with the scalar element loops they took 8-10% of a 1024^3
   product on one core (gcc -O2 does not vectorise them), paid once per thread that packs */
ATTN__T256 static ATTN__INLINE void attn__store_prefix256(float *d, __m256 x, int w) {   /* lanes [0, w) */
    if (w == 8) {
        _mm256_storeu_ps(d, x);
    } else if (w == 6) {                        /* an A panel row (MR 6) */
        _mm_storeu_ps(d, _mm256_castps256_ps128(x));
        _mm_storel_pi((__m64 *)(void *)(d + 4), _mm256_extractf128_ps(x, 1));
    } else {
        float t[8];
        int i;
        _mm256_storeu_ps(t, x);
        for (i = 0; i < w; ++i) d[i] = t[i];
    }
}
/* the attn__gemm_tr contract: dst[c * ldd + r] = src[r * lds + c] for r < 16 (rows >= nr read as
   0), c < nc <= 16, lanes r of a dst row stored where smask (a prefix mask) has bit r */
ATTN__T256 static void attn__gemm_tr256(const float *src, ptrdiff_t lds, int nr, int nc, float *dst, ptrdiff_t ldd,
                                        unsigned smask) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int rb, cb, i;
    for (rb = 0; rb < 16; rb += 8) {
        int w = 0;
        while (w < 8 && (smask >> (rb + w) & 1u)) ++w;
        if (w == 0) continue;
        for (cb = 0; cb < nc; cb += 8) {
            const int n = ATTN__MIN(8, nc - cb);
            const __m256i lm = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
            __m256 r[8], t[8];
            for (i = 0; i < 8; ++i) {
                const float *sp = src + (ptrdiff_t)(rb + i) * lds + cb;
                r[i] = rb + i >= nr ? _mm256_setzero_ps() : n == 8 ? _mm256_loadu_ps(sp) : _mm256_maskload_ps(sp, lm);
            }
            for (i = 0; i < 8; i += 2) { t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]); t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]); }
            for (i = 0; i < 8; i += 4) {
                r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44); r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
                r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44); r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
            }
            for (i = 0; i < 4; ++i) {   /* r[i] (r[4 + i]): column i | 4 + i of rows 0-3 (4-7) -> t[c]: column c */
                t[i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x20);
                t[4 + i] = _mm256_permute2f128_ps(r[i], r[4 + i], 0x31);
            }
            for (i = 0; i < n; ++i) attn__store_prefix256(dst + (ptrdiff_t)(cb + i) * ldd + rb, t[i], w);
        }
    }
}
ATTN__T256 static void attn__gemm_rows256(const float *src, ptrdiff_t n, float *dst, ptrdiff_t ps, int w) {
    ptrdiff_t q;
    int c;
    for (q = 0; q < n; q += w) {
        const int cnt = (int)ATTN__MIN((ptrdiff_t)w, n - q);
        float *d = dst + q / w * ps;
        for (c = 0; c + 8 <= cnt; c += 8) _mm256_storeu_ps(d + c, _mm256_loadu_ps(src + q + c));
        for (; c < cnt; ++c) d[c] = src[q + c];
        for (; c < w; ++c) d[c] = 0.0f;
    }
}
static const attn__gemm_kern attn__gemm_avx2 = { "avx2", 6, 16, 192, 4096, attn__gemm_ukr256, attn__gemm_tr256,
                                                 attn__gemm_rows256 };
#endif /* ATTN__X86_SIMD */

#if defined(ATTN__NEON)
/* --- NEON: 8 rows x 12 columns, 24 of the 32 q registers accumulate; an edge tile goes
   through a full 8 x 12 copy of C so the edge and interior stores do the same arithmetic. */
#define ATTN__GNEON_ROWS(X) X(0, a0, 0) X(1, a0, 1) X(2, a0, 2) X(3, a0, 3) X(4, a1, 0) X(5, a1, 1) X(6, a1, 2) X(7, a1, 3)
#define ATTN__GNEON_DECL(r, av, l) float32x4_t c##r##0 = vdupq_n_f32(0.0f), c##r##1 = c##r##0, c##r##2 = c##r##0;
#define ATTN__GNEON_FMA(r, av, l) c##r##0 = vfmaq_laneq_f32(c##r##0, b0, av, l); \
    c##r##1 = vfmaq_laneq_f32(c##r##1, b1, av, l); c##r##2 = vfmaq_laneq_f32(c##r##2, b2, av, l);
#define ATTN__GNEON_STORE(r, av, l) { float *cr = T + (ptrdiff_t)(r) * ldt; \
    float32x4_t x0 = vmulq_f32(va, c##r##0), x1 = vmulq_f32(va, c##r##1), x2 = vmulq_f32(va, c##r##2); \
    if (load_c) { x0 = vfmaq_f32(x0, vb, vld1q_f32(cr)); x1 = vfmaq_f32(x1, vb, vld1q_f32(cr + 4)); \
                  x2 = vfmaq_f32(x2, vb, vld1q_f32(cr + 8)); } \
    vst1q_f32(cr, x0); vst1q_f32(cr + 4, x1); vst1q_f32(cr + 8, x2); }
static void attn__gemm_ukr_neon(int kc, const float *A, const float *B, float *C, ptrdiff_t ldc,
                                int mr, int nr, float alpha, float beta, int load_c) {
    const int full = mr == 8 && nr == 12;
    float tile[8 * 12];
    float *T = full ? C : tile;
    const ptrdiff_t ldt = full ? ldc : 12;
    float32x4_t a0, a1, b0, b1, b2, va, vb;
    int p, r, c;
    ATTN__GNEON_ROWS(ATTN__GNEON_DECL)
    for (p = 0; p < kc; ++p, A += 8, B += 12) {
        a0 = vld1q_f32(A); a1 = vld1q_f32(A + 4);
        b0 = vld1q_f32(B); b1 = vld1q_f32(B + 4); b2 = vld1q_f32(B + 8);
        ATTN__GNEON_ROWS(ATTN__GNEON_FMA)
    }
    if (!full && load_c)
        for (r = 0; r < 8; ++r) for (c = 0; c < 12; ++c) tile[r * 12 + c] = r < mr && c < nr ? C[(ptrdiff_t)r * ldc + c] : 0.0f;
    va = vdupq_n_f32(alpha); vb = vdupq_n_f32(beta);
    ATTN__GNEON_ROWS(ATTN__GNEON_STORE)
    if (!full)
        for (r = 0; r < mr; ++r) for (c = 0; c < nr; ++c) C[(ptrdiff_t)r * ldc + c] = tile[r * 12 + c];
}
static const attn__gemm_kern attn__gemm_neon = { "neon", 8, 12, 192, 3072, attn__gemm_ukr_neon, NULL,
                                                 attn__gemm_rows_scalar };
#endif /* ATTN__NEON */

/* The micro-kernel of the ISA attn__pick_isa chose (same cpuid dispatch as attention). */
static const attn__gemm_kern *attn__gemm_pick(void) {
    const attn__isa *isa = attn__pick_isa();
#if defined(ATTN__X86_SIMD)
    if (isa == &attn__isa_avx512) return &attn__gemm_avx512;
    if (isa == &attn__isa_avx2) return &attn__gemm_avx2;
#endif
#if defined(ATTN__NEON)
    if (isa == &attn__isa_neon) return &attn__gemm_neon;
#endif
    (void)isa;
    return &attn__gemm_scalar;
}

/* Rows [i0, i0+mb) x columns [p0, p0+kb) of op(A) as MR-row panels [kb][MR]; rows past the
   edge are 0. op(A)[i][p] is A[i*lda + p], or A[p*lda + i] when ta. */
static void attn__gemm_pack_a(const attn__gemm_kern *K, int ta, const float *A, ptrdiff_t lda, ptrdiff_t i0,
                              ptrdiff_t mb, ptrdiff_t p0, int kb, float *dst) {
    const int MR = K->mr;
    ptrdiff_t ir;
    int r, p;
    if (ta) {   /* row p of the stored A holds op(A)[i0..][p]: cut it across the panels */
        for (p = 0; p < kb; ++p) K->rows(A + (p0 + p) * lda + i0, mb, dst + (ptrdiff_t)p * MR, (ptrdiff_t)MR * kb, MR);
        return;
    }
    for (ir = 0; ir < mb; ir += MR, dst += (ptrdiff_t)MR * kb) {
        const int rows = (int)ATTN__MIN((ptrdiff_t)MR, mb - ir);
        if (!ta && K->tr) {   /* MR <= 16: 16 x 16 blocks transposed in registers */
            const float *src = A + (i0 + ir) * lda + p0;
            for (p = 0; p < kb; p += 16)
                K->tr(src + p, lda, rows, ATTN__MIN(16, kb - p), dst + (ptrdiff_t)p * MR, MR, (1u << MR) - 1u);
        } else {
            for (r = 0; r < rows; ++r) {
                const float *src = A + (i0 + ir + r) * lda + p0;
                for (p = 0; p < kb; ++p) dst[(ptrdiff_t)p * MR + r] = src[p];
            }
            for (; r < MR; ++r) for (p = 0; p < kb; ++p) dst[(ptrdiff_t)p * MR + r] = 0.0f;
        }
    }
}

/* Rows [p0, p0+kb) x columns [j0, j0+nb) of op(B) as NR-column panels [kb][NR]; columns past
   the edge are 0. op(B)[p][j] is B[p*ldb + j], or B[j*ldb + p] when tb. */
static void attn__gemm_pack_b(const attn__gemm_kern *K, int tb, const float *B, ptrdiff_t ldb, ptrdiff_t p0,
                              int kb, ptrdiff_t j0, ptrdiff_t nb, float *dst) {
    const int NR = K->nr;
    ptrdiff_t jr;
    int c, p;
    if (!tb) {   /* row p of B holds op(B)[p][j0..]: cut it across the panels */
        for (p = 0; p < kb; ++p) K->rows(B + (p0 + p) * ldb + j0, nb, dst + (ptrdiff_t)p * NR, (ptrdiff_t)NR * kb, NR);
        return;
    }
    for (jr = 0; jr < nb; jr += NR, dst += (ptrdiff_t)NR * kb) {
        const int cols = (int)ATTN__MIN((ptrdiff_t)NR, nb - jr);
        if (tb && K->tr) {   /* NR a multiple of 16: 16 x 16 blocks transposed in registers */
            for (c = 0; c < NR; c += 16) {
                const int nr = ATTN__MAX(0, ATTN__MIN(16, cols - c));
                const float *src = nr > 0 ? B + (j0 + jr + c) * ldb + p0 : B;   /* nr == 0: zeros, B unread */
                for (p = 0; p < kb; p += 16)
                    K->tr(src + (nr > 0 ? p : 0), ldb, nr, ATTN__MIN(16, kb - p), dst + (ptrdiff_t)p * NR + c, NR, 0xFFFFu);
            }
        } else {
            for (c = 0; c < cols; ++c) {
                const float *src = B + (j0 + jr + c) * ldb + p0;
                for (p = 0; p < kb; ++p) dst[(ptrdiff_t)p * NR + c] = src[p];
            }
            for (; c < NR; ++c) for (p = 0; p < kb; ++p) dst[(ptrdiff_t)p * NR + c] = 0.0f;
        }
    }
}

typedef struct attn__gemm_job {
    const attn__gemm_kern *K;
    int ta, tb;
    ptrdiff_t m, n, k, kc, mc, nc;
    float alpha, beta;
    const float *A, *B;
    float *C;
    ptrdiff_t lda, ldb, ldc;
    ptrdiff_t tn, rows_per, cols_per;   /* task t: rows (t / tn)*rows_per.., columns (t % tn)*cols_per.. */
    float *ws;                    /* per thread: packed B [kc*nc], then packed A [mc*kc] */
    size_t ws_floats;
} attn__gemm_job;

static void attn__gemm_task(void *ctx, int t, int thread) {
    const attn__gemm_job *J = (const attn__gemm_job *)ctx;
    const attn__gemm_kern *K = J->K;
    const int MR = K->mr, NR = K->nr;
    const ptrdiff_t r0 = (t / J->tn) * J->rows_per, c0 = (t % J->tn) * J->cols_per;
    const ptrdiff_t r1 = ATTN__MIN(J->m, r0 + J->rows_per), c1 = ATTN__MIN(J->n, c0 + J->cols_per);
    float *Bp = J->ws + (size_t)thread * J->ws_floats, *Ap = Bp + J->kc * J->nc;
    ptrdiff_t jc, pc, ic, jr, ir;
    for (jc = c0; jc < c1; jc += J->nc) {
        const ptrdiff_t nb = ATTN__MIN(J->nc, c1 - jc);
        for (pc = 0; pc < J->k; pc += J->kc) {
            const int kb = (int)ATTN__MIN(J->kc, J->k - pc);
            const int load_c = pc > 0 || J->beta != 0.0f;
            const float beta = pc > 0 ? 1.0f : J->beta;
            attn__gemm_pack_b(K, J->tb, J->B, J->ldb, pc, kb, jc, nb, Bp);
            for (ic = r0; ic < r1; ic += J->mc) {
                const ptrdiff_t mb = ATTN__MIN(J->mc, r1 - ic);
                attn__gemm_pack_a(K, J->ta, J->A, J->lda, ic, mb, pc, kb, Ap);
                for (jr = 0; jr < nb; jr += NR)
                    for (ir = 0; ir < mb; ir += MR)
                        K->ukr(kb, Ap + ir * kb, Bp + jr * kb, J->C + (ic + ir) * J->ldc + jc + jr, J->ldc,
                               (int)ATTN__MIN((ptrdiff_t)MR, mb - ir), (int)ATTN__MIN((ptrdiff_t)NR, nb - jr),
                               J->alpha, beta, load_c);
            }
        }
    }
}

/* x rounded up to a multiple of q (x >= 0, q >= 1, x + q fits) */
static ptrdiff_t attn__gemm_round(ptrdiff_t x, ptrdiff_t q) { return (x + q - 1) / q * q; }

/* C = beta C: the k == 0 or alpha == 0 product (A and B are not read). */
static void attn__gemm_scale_c(int m, int n, float beta, float *C, ptrdiff_t ldc) {
    int i, j;
    if (beta == 1.0f) return;
    for (i = 0; i < m; ++i) {
        float *cr = C + (ptrdiff_t)i * ldc;
        if (beta == 0.0f) for (j = 0; j < n; ++j) cr[j] = 0.0f;
        else for (j = 0; j < n; ++j) cr[j] *= beta;
    }
}

/* The product's kernel and k blocking: k blocks of (nearly) equal size, a multiple of 8,
   depending on k alone (determinism). Task grid and buffers are the caller's to set. */
static void attn__gemm_job_init(attn__gemm_job *J, int trans_a, int trans_b, int m, int n, int k, float alpha,
                                const float *A, ptrdiff_t lda, const float *B, ptrdiff_t ldb, float beta, float *C,
                                ptrdiff_t ldc) {
    ptrdiff_t nk;
    memset(J, 0, sizeof *J);
    J->K = attn__gemm_pick(); J->ta = trans_a != 0; J->tb = trans_b != 0; J->m = m; J->n = n; J->k = k;
    J->alpha = alpha; J->beta = beta; J->A = A; J->B = B; J->C = C; J->lda = lda; J->ldb = ldb; J->ldc = ldc;
    nk = (J->k + ATTN__GEMM_KC - 1) / ATTN__GEMM_KC;
    J->kc = ATTN__MIN(ATTN__GEMM_KC, attn__gemm_round((J->k + nk - 1) / nk, 8));
}

/* One task covering all of C, blocked for the caller's packing buffer (attn__sgemm_1t). */
static void attn__gemm_job_1t(attn__gemm_job *J) {
    J->rows_per = attn__gemm_round(J->m, J->K->mr);
    J->cols_per = attn__gemm_round(J->n, J->K->nr);
    J->tn = 1;
    J->mc = ATTN__MIN(J->K->mc, J->rows_per);
    J->nc = ATTN__MIN(J->K->nc, J->cols_per);
    J->ws_floats = (size_t)J->kc * (size_t)(J->nc + J->mc);
}

/* A GEMM inside a family's parallel task: it runs on the calling thread, starts no thread and
   allocates nothing; ws is the caller's packing buffer (64-byte aligned) of at least
   attn__sgemm_1t_floats(m, n, k) floats, which depends on the shape alone. Same contract and
   same kernels as attn__sgemm_par. */
static size_t attn__sgemm_1t_floats(int m, int n, int k) {
    attn__gemm_job J;
    if (m <= 0 || n <= 0 || k <= 0) return 0;
    attn__gemm_job_init(&J, 0, 0, m, n, k, 1.0f, NULL, 0, NULL, 0, 0.0f, NULL, 0);
    attn__gemm_job_1t(&J);
    return (J.ws_floats + 15) & ~(size_t)15;
}
static void attn__sgemm_1t(float *ws, int trans_a, int trans_b, int m, int n, int k, float alpha,
                                              const float *A, ptrdiff_t lda, const float *B, ptrdiff_t ldb,
                                              float beta, float *C, ptrdiff_t ldc) {
    attn__gemm_job J;
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) { attn__gemm_scale_c(m, n, beta, C, ldc); return; }
    attn__gemm_job_init(&J, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    attn__gemm_job_1t(&J);
    J.ws = ws;
    attn__gemm_task(&J, 0, 0);
}

/* No validation (attn_sgemm validates); see attn_sgemm for the contract. n_threads <= 0: all
   cores. par: the desc whose parallel hook (a caller's attn_pool) runs the tasks, or NULL for
   the built-in threads. Never fails: when the packing buffers cannot be allocated it runs on
   this thread with buffers on the stack (the same result, just slower). */
static void attn__sgemm_par(const attn_desc *par, int n_threads, int trans_a, int trans_b, int m, int n, int k, float alpha,
                        const float *A, ptrdiff_t lda, const float *B, ptrdiff_t ldb,
                        float beta, float *C, ptrdiff_t ldc) {
    const attn__gemm_kern *K;
    attn__gemm_job J;
    ptrdiff_t tm, tn;
    int T, a, n_tasks, used;
    double best = -1.0, work;
    size_t total;
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0.0f) { attn__gemm_scale_c(m, n, beta, C, ldc); return; }
    attn__gemm_job_init(&J, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    K = J.K;
    /* threads: one more per 32 MFLOP (~0.15 ms on one core: starting a thread costs tens of
       microseconds); the task grid tm x tn = T minimising the largest task's padded tile plus
       its packing (a packed float costs about 32 multiply-adds) */
    T = n_threads > 0 ? n_threads : attn__cpu_count();
    work = 2.0 * m * (double)n * k;
    if ((double)T > work / 32.0e6 + 1.0) T = (int)(work / 32.0e6) + 1;
    T = ATTN__MAX(1, ATTN__MIN(T, ATTN__MAX_THREADS));
    tm = 1; tn = T;
    for (a = 1; a <= T; ++a) {
        int b = T / a;
        ptrdiff_t rp, cp;
        double cost;
        if (a * b != T) continue;
        rp = attn__gemm_round((J.m + a - 1) / a, K->mr);
        cp = attn__gemm_round((J.n + b - 1) / b, K->nr);
        cost = (double)rp * (double)cp + 32.0 * (double)(rp + cp);
        if (best < 0.0 || cost < best) { best = cost; tm = a; tn = b; }
    }
    J.rows_per = attn__gemm_round((J.m + tm - 1) / tm, K->mr);
    J.cols_per = attn__gemm_round((J.n + tn - 1) / tn, K->nr);
    tm = (J.m + J.rows_per - 1) / J.rows_per;      /* padding may leave fewer tasks */
    tn = (J.n + J.cols_per - 1) / J.cols_per;
    J.tn = tn;
    n_tasks = (int)(tm * tn);
    used = ATTN__MIN(T, n_tasks);
    J.mc = ATTN__MIN(K->mc, J.rows_per);
    J.nc = ATTN__MIN(K->nc, J.cols_per);
    J.ws_floats = (size_t)J.kc * (size_t)(J.nc + J.mc);   /* <= 256 * (4096 + 336) */
    J.ws_floats = (J.ws_floats + 15) & ~(size_t)15;     /* every thread's block 64-byte aligned */
    if (attn__mul_size(J.ws_floats, (size_t)used * sizeof(float), &total) &&
        (J.ws = (float *)attn__alloc(total)) != NULL) {
        attn__parallel_for(par, n_tasks, used, attn__gemm_task, &J);
        attn__free(J.ws);
    } else {
        /* one MR x NR tile at a time on this thread */
        float stack[ATTN__GEMM_KC * (32 + 16) + 16];
        int t;
        J.mc = K->mr; J.nc = K->nr;
        J.ws = stack + (16 - ((uintptr_t)stack / sizeof(float)) % 16) % 16;
        J.ws_floats = 0;
        for (t = 0; t < n_tasks; ++t) attn__gemm_task(&J, t, 0);
    }
}
static void attn__sgemm(int n_threads, int trans_a, int trans_b, int m, int n, int k, float alpha,
                        const float *A, ptrdiff_t lda, const float *B, ptrdiff_t ldb,
                        float beta, float *C, ptrdiff_t ldc) {
    attn__sgemm_par(NULL, n_threads, trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Floats spanned by a rows x cols matrix with leading dimension ld >= cols (0 when empty);
   0 returned when that many bytes would overflow ptrdiff_t. */
static int attn__gemm_extent(int rows, int cols, ptrdiff_t ld, size_t *ext) {
    const size_t lim = (size_t)PTRDIFF_MAX / sizeof(float);
    *ext = 0;
    if (rows <= 0 || cols <= 0) return 1;
    if ((size_t)(rows - 1) > (lim - (size_t)cols) / (size_t)ld) return 0;
    *ext = (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
    return 1;
}
static int attn__gemm_overlap(const float *x, size_t nx, const float *y, size_t ny) {
    const uintptr_t x0 = (uintptr_t)x, y0 = (uintptr_t)y;
    return x0 < y0 + ny * sizeof(float) && y0 < x0 + nx * sizeof(float);
}

ATTNDEF attn_status attn_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
                               const float *a, ptrdiff_t lda, const float *b, ptrdiff_t ldb,
                               float beta, float *c, ptrdiff_t ldc, int n_threads) {
    const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
    const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
    size_t ea, eb, ec;
    if (m < 0) return ATTN_ERR_GEMM_M;
    if (n < 0) return ATTN_ERR_GEMM_N;
    if (k < 0) return ATTN_ERR_GEMM_K;
    if (n_threads < 0) return ATTN_ERR_N_THREADS;
    if (!isfinite(alpha)) return ATTN_ERR_GEMM_ALPHA;
    if (!isfinite(beta)) return ATTN_ERR_GEMM_BETA;
    if (lda < ATTN__MAX(1, a_cols)) return ATTN_ERR_GEMM_LDA;
    if (ldb < ATTN__MAX(1, b_cols)) return ATTN_ERR_GEMM_LDB;
    if (ldc < ATTN__MAX(1, n)) return ATTN_ERR_GEMM_LDC;
    if (!a && m > 0 && k > 0) return ATTN_ERR_GEMM_NULL_A;
    if (!b && k > 0 && n > 0) return ATTN_ERR_GEMM_NULL_B;
    if (!c && m > 0 && n > 0) return ATTN_ERR_GEMM_NULL_C;
    if (!attn__gemm_extent(a_rows, a_cols, lda, &ea)) return ATTN_ERR_GEMM_A_OVERFLOW;
    if (!attn__gemm_extent(b_rows, b_cols, ldb, &eb)) return ATTN_ERR_GEMM_B_OVERFLOW;
    if (!attn__gemm_extent(m, n, ldc, &ec)) return ATTN_ERR_GEMM_C_OVERFLOW;
    if (ec > 0 && ((ea > 0 && attn__gemm_overlap(c, ec, a, ea)) || (eb > 0 && attn__gemm_overlap(c, ec, b, eb))))
        return ATTN_ERR_GEMM_ALIAS;
    attn__sgemm(n_threads, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.11 layers: standard MHA, Optimized, Efficient, Super, Direct
   --------------------------------------------------------------------------------------- */
/* Layers run on dense fp32 [batch, seq, d_model] hidden states. The projections are GEMMs over
   all batch*seq rows (attn__layer_gemm: the caller's hook or attn__sgemm); the SDPA core is
   attn_forward with the caller's masks; the backward recomputes the forward (with lse), then
   runs attn_backward on the attention core (the Direct kinds' logit gradient is its dbias),
   and the projections' GEMMs.
   The Direct kinds run the same core with q = k = 0 (dim 1) and their logits as the bias. */
typedef struct attn__layer {
    const attn_layer_desc *d;
    const attn_layer_weights *w;
    attn_layer_kind kind;
    int B, lq, lk, dm, H, Hkv, dk, ctx, n_threads, self, direct, lmax;
    int lblk;                      /* Super: the W^A block used, min(longest key sequence, context) */
    const float *xq, *xkv;
    float dscale;                  /* DIRECT_INPUT: scale of Xq Xkv^T */
    const float *wd;               /* Direct kinds: W_D from the row of query 0, wd + a*context */
    attn_desc ad;                  /* the SDPA core: the caller's masks, our threads/workspace */
    attn_tensor tq, tk, tv, to;
    size_t attn_bytes;             /* the SDPA core's workspace */
    /* workspace offsets in floats ((size_t)-1: not used) */
    size_t f_q, f_k, f_v, f_a, f_lse, f_g, f_m, f_wa, f_da, f_dq, f_dk, f_dv, f_dg, f_dwa, floats;
    float *ws;
} attn__layer;

static const float attn__layer_zero[1] = { 0.0f };

static void attn__layer_gemm(const attn__layer *L, int ta, int tb, int m, int n, int k, float alpha,
                             const float *A, ptrdiff_t lda, const float *B, ptrdiff_t ldb,
                             float beta, float *C, ptrdiff_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (L->d->sgemm) L->d->sgemm(L->d->sgemm_user, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
    else attn__sgemm_par(&L->ad, L->n_threads, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* Desc checks shared by every layer call (sizes not involved). */
static attn_status attn__layer_check_desc(const attn_layer_desc *d) {
    int H, Hkv;
    if (!d) return ATTN_ERR_NULL_DESC;
    if ((int)d->kind < (int)ATTN_LAYER_STANDARD || (int)d->kind > (int)ATTN_LAYER_DIRECT_INPUT) return ATTN_ERR_LAYER_KIND;
    if (d->d_model < 1) return ATTN_ERR_LAYER_D_MODEL;
    H = d->heads ? d->heads : 1;
    if (d->heads < 0 || d->d_model % H != 0) return ATTN_ERR_LAYER_HEADS;
    Hkv = d->kv_heads ? d->kv_heads : H;
    if (d->kv_heads < 0 || H % Hkv != 0) return ATTN_ERR_LAYER_KV_HEADS;
    if (Hkv != H && d->kind != ATTN_LAYER_STANDARD) return ATTN_ERR_LAYER_KV_HEADS_KIND;
    if (d->kind >= ATTN_LAYER_SUPER && d->context < 1) return ATTN_ERR_LAYER_CONTEXT;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (d->sliding_alignment != 0 && d->sliding_alignment != 1) return ATTN_ERR_LAYER_SLIDING;
    if (d->kind >= ATTN_LAYER_DIRECT && (d->attn.softcap != 0.0f || d->attn.bias.data ||
                                         d->attn.cu_seqlens_q || d->attn.cu_seqlens_k)) return ATTN_ERR_LAYER_DIRECT_ATTN;
    return ATTN_OK;
}

/* n floats more in the workspace, each piece 64-byte aligned; 0 on overflow */
static int attn__layer_take(size_t *off, size_t *total, size_t n) {
    size_t r = (n + 15) & ~(size_t)15;
    if (r < n) return 0;
    *off = *total;
    return attn__add_size(*total, r, total);
}
static int attn__layer_take3(size_t *off, size_t *total, size_t a, size_t b, size_t c) {
    size_t n;
    return attn__mul_size(a, b, &n) && attn__mul_size(n, c, &n) && attn__layer_take(off, total, n);
}

/* Validates everything but the data pointers and resolves L (data pointers are placeholders). */
static attn_status attn__layer_plan(const attn_layer_desc *d, int backward, int batch, int lq, int lk, int self,
                                    attn__layer *L) {
    attn_status s;
    size_t t = 0, n, none = (size_t)-1;
    int direct, std_kv, own_v;
    memset(L, 0, sizeof *L);
    if ((s = attn__layer_check_desc(d)) != ATTN_OK) return s;
    /* the core is exact softmax: the backward's recomputed forward needs its logsumexp */
    if (d->attn.kind != ATTN_SOFTMAX) return ATTN_ERR_LAYER_ATTN_KIND;
    if (batch < 1 || lq < 1 || lk < 1) return ATTN_ERR_LAYER_SHAPE;
    if (self && lk != lq) return ATTN_ERR_LAYER_SELF_LK;
    L->d = d; L->kind = d->kind; L->B = batch; L->lq = lq; L->lk = lk; L->self = self;
    L->dm = d->d_model; L->H = d->heads ? d->heads : 1; L->Hkv = d->kv_heads ? d->kv_heads : L->H;
    L->dk = L->dm / L->H; L->ctx = d->context;
    L->direct = direct = d->kind >= ATTN_LAYER_DIRECT;
    if (direct && (lq > L->ctx || lk > L->ctx)) return ATTN_ERR_LAYER_SEQ_CONTEXT;
    /* every row count a GEMM sees must fit an int */
    if (!attn__mul_size((size_t)batch, (size_t)ATTN__MAX(lq, lk), &n) || n > (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;
    if (!attn__mul_size((size_t)batch, (size_t)L->H, &n) || n > (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;  /* backward tasks */
    L->ad = d->attn;
    L->ad.n_threads = d->n_threads; L->ad.workspace = NULL; L->ad.workspace_size = 0;
    L->dscale = d->attn.scale != 0.0f ? d->attn.scale : 1.0f / sqrtf((float)L->dm);
    if (direct) {
        L->tq = attn_tensor_dense((void *)(uintptr_t)attn__layer_zero, ATTN_F32, batch, lq, 1, 1);
        L->tq.stride_batch = L->tq.stride_seq = 0;      /* broadcast one zero */
        L->tk = L->tq; L->tk.seq = lk;
        L->tv = attn_tensor_dense((void *)(uintptr_t)attn__layer_zero, ATTN_F32, batch, lk, 1, L->dm);
        L->to = attn_tensor_dense((void *)(uintptr_t)attn__layer_zero, ATTN_F32, batch, lq, 1, L->dm);
        memset(&L->ad.bias, 0, sizeof L->ad.bias);
        L->ad.bias.data = attn__layer_zero;             /* placeholder: W_D or the logits */
        L->ad.bias.heads = 1; L->ad.bias.rows = lq;
        if (d->kind == ATTN_LAYER_DIRECT) { L->ad.bias.batch = 1; L->ad.bias.stride_q = L->ctx; }
        else {                                          /* dense [B, 1, lq, lk] */
            L->ad.bias.batch = batch; L->ad.bias.stride_q = lk;
            L->ad.bias.stride_batch = attn__stride_mul(lk, lq);
        }
    } else {
        L->tq = attn_tensor_dense((void *)(uintptr_t)attn__layer_zero, ATTN_F32, batch, lq, L->H, L->dk);
        L->tk = attn_tensor_dense((void *)(uintptr_t)attn__layer_zero, ATTN_F32, batch, lk, L->Hkv, L->dk);
        L->tv = L->tk;
        L->to = L->tq;
    }
    if ((s = attn_workspace_size(&L->ad, L->tq, L->tk, L->tv, &L->attn_bytes)) != ATTN_OK) return s;
    if (backward) {             /* the core's backward runs in the same memory after the forward */
        size_t bb;
        if ((s = attn_backward_workspace_size(&L->ad, L->tq, L->tk, L->tv, &bb)) != ATTN_OK) return s;
        L->attn_bytes = ATTN__MAX(L->attn_bytes, bb);
    }
    {   /* Super: the longest key sequence (packed: the longest segment) must fit W^A */
        int u;
        L->lmax = lk;
        if (d->attn.cu_seqlens_k) {
            L->lmax = 0;
            for (u = 0; u < d->attn.varlen_batch; ++u)
                L->lmax = ATTN__MAX(L->lmax, d->attn.cu_seqlens_k[u + 1] - d->attn.cu_seqlens_k[u]);
        }
        if (d->kind == ATTN_LAYER_SUPER && L->lmax > L->ctx && !d->sliding_alignment) return ATTN_ERR_LAYER_SEQ_CONTEXT;
        L->lblk = ATTN__MIN(L->lmax, ATTN__MAX(L->ctx, 1));
    }
    L->n_threads = attn__resolve_threads(&L->ad);
    std_kv = d->kind == ATTN_LAYER_STANDARD || d->kind == ATTN_LAYER_OPTIMIZED;
    own_v = d->kind == ATTN_LAYER_STANDARD || d->kind == ATTN_LAYER_SUPER || direct;
    L->f_q = L->f_k = L->f_v = L->f_lse = L->f_g = L->f_m = L->f_wa = none;
    L->f_da = L->f_dq = L->f_dk = L->f_dv = L->f_dg = L->f_dwa = none;
    if (!attn__layer_take3(&L->f_a, &t, (size_t)batch, (size_t)lq, (size_t)L->dm)) return ATTN_ERR_OVERFLOW;
    if (!direct && !attn__layer_take3(&L->f_q, &t, (size_t)batch, (size_t)lq, (size_t)L->dm)) return ATTN_ERR_OVERFLOW;
    if (std_kv && !attn__layer_take3(&L->f_k, &t, (size_t)batch, (size_t)lk, (size_t)L->Hkv * L->dk)) return ATTN_ERR_OVERFLOW;
    if (own_v && !attn__layer_take3(&L->f_v, &t, (size_t)batch, (size_t)lk, (size_t)L->Hkv * L->dk)) return ATTN_ERR_OVERFLOW;
    if (d->kind == ATTN_LAYER_SUPER && !attn__layer_take3(&L->f_wa, &t, (size_t)L->lblk, (size_t)L->lblk, 1)) return ATTN_ERR_OVERFLOW;
    if (d->kind == ATTN_LAYER_DIRECT_INPUT && !attn__layer_take3(&L->f_g, &t, (size_t)batch, (size_t)lq, (size_t)lk)) return ATTN_ERR_OVERFLOW;
    if (backward) {
        if (!attn__layer_take3(&L->f_lse, &t, (size_t)batch, (size_t)(direct ? 1 : L->H), (size_t)lq) ||
            !attn__layer_take3(&L->f_da, &t, (size_t)batch, (size_t)lq, (size_t)L->dm) ||
            !attn__layer_take3(&L->f_dv, &t, (size_t)batch, (size_t)lk, (size_t)L->Hkv * L->dk)) return ATTN_ERR_OVERFLOW;
        /* dq, dk of the core (Direct kinds: of its one-float zero q/k, discarded) */
        if (!attn__layer_take3(&L->f_dq, &t, (size_t)batch, (size_t)lq, direct ? 1 : (size_t)L->dm) ||
            !attn__layer_take3(&L->f_dk, &t, (size_t)batch, (size_t)lk, direct ? 1 : (size_t)L->Hkv * L->dk))
            return ATTN_ERR_OVERFLOW;
        if (d->kind == ATTN_LAYER_DIRECT_INPUT && !attn__layer_take3(&L->f_dg, &t, (size_t)batch, (size_t)lq, (size_t)lk))
            return ATTN_ERR_OVERFLOW;
        if (d->kind == ATTN_LAYER_DIRECT_INPUT && !attn__layer_take3(&L->f_m, &t, (size_t)batch, (size_t)lq, (size_t)lk))
            return ATTN_ERR_OVERFLOW;
        if (d->kind == ATTN_LAYER_SUPER && !attn__layer_take3(&L->f_dwa, &t, (size_t)L->lblk, (size_t)L->lblk, 1))
            return ATTN_ERR_OVERFLOW;
    }
    L->floats = t;
    return ATTN_OK;
}

/* Total bytes: the floats, the SDPA core's workspace, alignment slack. */
static attn_status attn__layer_bytes(const attn__layer *L, size_t *bytes) {
    size_t b;
    if (!attn__mul_size(L->floats, sizeof(float), &b) || !attn__add_size(b, L->attn_bytes, &b) ||
        !attn__add_size(b, 2 * ATTN__ALIGN, &b)) return ATTN_ERR_OVERFLOW;
    *bytes = b;
    return ATTN_OK;
}

static attn_status attn__layer_check_weights(const attn_layer_kind kind, const attn_layer_weights *w) {
    if (!w) return ATTN_ERR_LAYER_NULL_WEIGHTS;
    if (kind <= ATTN_LAYER_SUPER && !w->wq) return ATTN_ERR_LAYER_NULL_WQ;
    if ((kind == ATTN_LAYER_STANDARD || kind == ATTN_LAYER_OPTIMIZED) && !w->wk) return ATTN_ERR_LAYER_NULL_WK;
    if ((kind == ATTN_LAYER_STANDARD || kind >= ATTN_LAYER_DIRECT) && !w->wv) return ATTN_ERR_LAYER_NULL_WV;
    if (!w->wo) return ATTN_ERR_LAYER_NULL_WO;
    if (kind == ATTN_LAYER_SUPER && !w->wa) return ATTN_ERR_LAYER_NULL_WA;
    if (kind >= ATTN_LAYER_DIRECT && !w->wd) return ATTN_ERR_LAYER_NULL_WD;
    return ATTN_OK;
}

/* Workspace from desc or allocated; *owned is what to free. */
static attn_status attn__layer_workspace(attn__layer *L, void **owned) {
    size_t bytes;
    char *base;
    attn_status s;
    attn__ws w;
    *owned = NULL;
    if ((s = attn__layer_bytes(L, &bytes)) != ATTN_OK) return s;
    if ((s = attn__ws_acquire(L->d->workspace, L->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK)
        return s;
    *owned = w.owned;
    base = w.base;
    L->ws = (float *)(void *)base;
    base += L->floats * sizeof(float);
    base += (ATTN__ALIGN - (uintptr_t)base % ATTN__ALIGN) % ATTN__ALIGN;
    L->ad.workspace = base; L->ad.workspace_size = L->attn_bytes;
    return ATTN_OK;
}

static float *attn__layer_buf(const attn__layer *L, size_t off) { return off == (size_t)-1 ? NULL : L->ws + off; }

static void attn__layer_add_bias(float *Y, const float *b, size_t rows, int cols) {
    size_t r;
    int c;
    if (!b) return;
    for (r = 0; r < rows; ++r) for (c = 0; c < cols; ++c) Y[r * (size_t)cols + c] += b[c];
}
static void attn__layer_colsum(float *g, const float *Y, size_t rows, int cols) {
    size_t r;
    int c;
    if (!g) return;
    for (c = 0; c < cols; ++c) g[c] = 0.0f;
    for (r = 0; r < rows; ++r) for (c = 0; c < cols; ++c) g[c] += Y[r * (size_t)cols + c];
}

/* The key sequences of the batch: unit u -> tensor batch, first key row, valid key length. */
static int attn__layer_units(const attn__layer *L) { return L->ad.cu_seqlens_k ? L->ad.varlen_batch : L->B; }
static void attn__layer_unit(const attn__layer *L, int u, int *tb, int *k0, int *Lk) {
    if (L->ad.cu_seqlens_k) { *tb = 0; *k0 = L->ad.cu_seqlens_k[u]; *Lk = L->ad.cu_seqlens_k[u + 1] - *k0; }
    else { *tb = u; *k0 = 0; *Lk = L->ad.seqlens_k ? L->ad.seqlens_k[u] : L->lk; }
}

/* Super: WAm = the leading lblk x lblk block of W^A (upper triangle 0 under causal);
   V' = WAm[:n, :n] Xkv + b^A per key sequence (n = min(Lk, context)), then the sliding rows
   t >= context (sliding_alignment); rows outside every valid sequence 0. */
typedef struct attn__slide_ctx { const attn__layer *L; const float *X; float *Y; int t0, t1; } attn__slide_ctx;
#define ATTN__SLIDE_ROWS 32
static void attn__slide_task(void *vctx, int task, int thread) {
    const attn__slide_ctx *C = (const attn__slide_ctx *)vctx;
    const attn__layer *L = C->L;
    const int c = L->ctx, dm = L->dm, t1 = ATTN__MIN(C->t1, C->t0 + (task + 1) * ATTN__SLIDE_ROWS);
    const float *w = L->w->wa + (size_t)(c - 1) * c, b = L->w->ba ? L->w->ba[c - 1] : 0.0f;
    int t, u, f;
    (void)thread;
    for (t = C->t0 + task * ATTN__SLIDE_ROWS; t < t1; ++t) {
        float *y = C->Y + (size_t)t * dm;
        for (f = 0; f < dm; ++f) y[f] = b;
        for (u = 0; u < c; ++u) {
            const float wu = w[u], *x = C->X + (size_t)(t - c + 1 + u) * dm;
            for (f = 0; f < dm; ++f) y[f] += wu * x[f];
        }
    }
}
static void attn__layer_super_mix(const attn__layer *L, float *WAm, float *Vp) {
    const int lm = L->lblk, dm = L->dm;
    int t, s2, u;
    for (t = 0; t < lm; ++t)
        for (s2 = 0; s2 < lm; ++s2)
            WAm[(size_t)t * lm + s2] = (L->ad.causal && s2 > t) ? 0.0f : L->w->wa[(size_t)t * L->ctx + s2];
    memset(Vp, 0, sizeof(float) * (size_t)L->B * L->lk * dm);
    for (u = 0; u < attn__layer_units(L); ++u) {
        int tb, k0, Lk, n;
        size_t row;
        attn__layer_unit(L, u, &tb, &k0, &Lk);
        if (Lk <= 0) continue;
        n = ATTN__MIN(Lk, L->ctx);
        row = (size_t)tb * L->lk + (size_t)k0;
        attn__layer_gemm(L, 0, 0, n, dm, n, 1.0f, WAm, lm, L->xkv + row * dm, dm, 0.0f, Vp + row * dm, dm);
        if (L->w->ba)
            for (t = 0; t < n; ++t) for (s2 = 0; s2 < dm; ++s2) Vp[(row + (size_t)t) * dm + s2] += L->w->ba[t];
        if (Lk > L->ctx) {
            attn__slide_ctx C;
            C.L = L; C.X = L->xkv + row * dm; C.Y = Vp + row * dm; C.t0 = L->ctx; C.t1 = Lk;
            attn__parallel_for(&L->ad, (Lk - L->ctx + ATTN__SLIDE_ROWS - 1) / ATTN__SLIDE_ROWS, L->n_threads, attn__slide_task, &C);
        }
    }
}

/* DIRECT_INPUT: G[b] = dscale * Xq[b] Xkv[b]^T (into M when M != NULL, then G = M * W_D). */
static void attn__layer_direct_logits(const attn__layer *L, float *G, float *M) {
    const int lq = L->lq, lk = L->lk, dm = L->dm;
    float *dst = M ? M : G;
    int b, i, j;
    for (b = 0; b < L->B; ++b)
        attn__layer_gemm(L, 0, 1, lq, lk, dm, L->dscale, L->xq + (size_t)b * lq * dm, dm,
                         L->xkv + (size_t)b * lk * dm, dm, 0.0f, dst + (size_t)b * lq * lk, lk);
    for (b = 0; b < L->B; ++b)
        for (i = 0; i < lq; ++i)
            for (j = 0; j < lk; ++j) {
                const size_t e = ((size_t)b * lq + i) * lk + j;
                G[e] = dst[e] * L->wd[(size_t)i * L->ctx + j];
            }
}

/* The forward into the workspace: A (attention output before W^O); lse when given. */
static void attn__layer_fwd(attn__layer *L, float *lse) {
    const attn_layer_weights *w = L->w;
    const int mq = L->B * L->lq, mk = L->B * L->lk, dm = L->dm, dkv = L->Hkv * L->dk;
    float *Q = attn__layer_buf(L, L->f_q), *K = attn__layer_buf(L, L->f_k), *V = attn__layer_buf(L, L->f_v);
    float *A = attn__layer_buf(L, L->f_a);
    attn_status s;
    if (Q) { attn__layer_gemm(L, 0, 0, mq, dm, dm, 1.0f, L->xq, dm, w->wq, dm, 0.0f, Q, dm); attn__layer_add_bias(Q, w->bq, (size_t)mq, dm); }
    if (K) { attn__layer_gemm(L, 0, 0, mk, dkv, dm, 1.0f, L->xkv, dm, w->wk, dkv, 0.0f, K, dkv); attn__layer_add_bias(K, w->bk, (size_t)mk, dkv); }
    if (L->kind == ATTN_LAYER_SUPER) attn__layer_super_mix(L, attn__layer_buf(L, L->f_wa), V);
    else if (V) { attn__layer_gemm(L, 0, 0, mk, dkv, dm, 1.0f, L->xkv, dm, w->wv, dkv, 0.0f, V, dkv); attn__layer_add_bias(V, w->bv, (size_t)mk, dkv); }
    if (L->kind == ATTN_LAYER_DIRECT) L->ad.bias.data = L->wd;
    if (L->kind == ATTN_LAYER_DIRECT_INPUT) {
        float *G = attn__layer_buf(L, L->f_g);
        attn__layer_direct_logits(L, G, attn__layer_buf(L, L->f_m));
        L->ad.bias.data = G;
    }
    if (!L->direct) { L->tq.data = Q; L->tk.data = (void *)(uintptr_t)(K ? K : L->xkv); }
    L->tv.data = (void *)(uintptr_t)(V ? V : L->xkv);
    L->to.data = A;
    s = attn_forward(&L->ad, L->tq, L->tk, L->tv, L->to, lse);
    ATTN_ASSERT(s == ATTN_OK);
    (void)s;
}

ATTNDEF attn_status attn_layer_workspace_size(const attn_layer_desc *desc, int backward, int batch, int lq, int lk,
                                              size_t *bytes) {
    attn__layer L;
    attn_status s;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    if ((s = attn__layer_plan(desc, backward != 0, batch, lq, lk, 0, &L)) != ATTN_OK) return s;
    return attn__layer_bytes(&L, bytes);
}

ATTNDEF attn_status attn_layer_param_count(const attn_layer_desc *desc, size_t *count) {
    attn_status s;
    size_t d, dkv, c, n = 0;
    if (!count) return ATTN_ERR_NULL_ARG;
    if ((s = attn__layer_check_desc(desc)) != ATTN_OK) return s;
    d = (size_t)desc->d_model;
    dkv = d / (size_t)(desc->heads ? desc->heads : 1) * (size_t)(desc->kv_heads ? desc->kv_heads : (desc->heads ? desc->heads : 1));
    c = (size_t)desc->context;
    /* d <= INT_MAX and c <= INT_MAX: every product below fits 64-bit size_t; check anyway */
    if (!attn__mul_size(d, d, &n) || !attn__mul_size(c, c, &c)) return ATTN_ERR_OVERFLOW;
    switch (desc->kind) {
    case ATTN_LAYER_STANDARD:  n = 2 * (d * d + d) + 2 * (d * dkv + dkv); break;
    case ATTN_LAYER_OPTIMIZED: n = 2 * (d * d + d) + d * dkv + dkv; break;
    case ATTN_LAYER_EFFICIENT: n = 2 * (d * d + d); break;
    case ATTN_LAYER_SUPER:     n = 2 * (d * d + d) + c + (size_t)desc->context; break;
    case ATTN_LAYER_DIRECT: case ATTN_LAYER_DIRECT_INPUT:
    default:                   n = 2 * (d * d + d) + c; break;
    }
    *count = n;
    return ATTN_OK;
}

ATTNDEF attn_status attn_layer_flops(const attn_layer_desc *desc, int batch, int lq, int lk, double *flops) {
    attn__layer L;
    attn_status s;
    double B, q, k, d, dkv, f;
    if (!flops) return ATTN_ERR_NULL_ARG;
    if ((s = attn__layer_plan(desc, 0, batch, lq, lk, 0, &L)) != ATTN_OK) return s;
    B = batch; q = lq; k = lk; d = L.dm; dkv = (double)L.Hkv * L.dk;
    f = 2.0 * B * q * d * d * (L.direct ? 1.0 : 2.0);          /* W^O, and W^Q unless Direct */
    if (L.kind == ATTN_LAYER_STANDARD || L.kind == ATTN_LAYER_OPTIMIZED) f += 2.0 * B * k * d * dkv;   /* W^K */
    if (L.kind == ATTN_LAYER_STANDARD || L.direct) f += 2.0 * B * k * d * dkv;                           /* W^V */
    if (L.kind == ATTN_LAYER_SUPER) f += 2.0 * B * k * (k < L.ctx ? k : L.ctx) * d;                      /* W^A V */
    if (L.kind == ATTN_LAYER_DIRECT_INPUT) f += 2.0 * B * q * k * d;                                     /* Xq Xkv^T */
    f += 2.0 * B * q * k * d * (L.direct ? 1.0 : 2.0);       /* Q K^T (not Direct) and P V */
    *flops = f;
    return ATTN_OK;
}

ATTNDEF attn_status attn_layer_forward(const attn_layer_desc *desc, const attn_layer_weights *weights,
                                       int batch, int lq, int lk, const float *x_q, const float *x_kv,
                                       float *out) {
    attn__layer L;
    attn_status s;
    void *owned;
    const int dm = desc ? desc->d_model : 0;
    if (!desc) return ATTN_ERR_NULL_DESC;
    if (!x_q) return ATTN_ERR_LAYER_NULL_X;
    if (!out) return ATTN_ERR_LAYER_NULL_OUT;
    if ((s = attn__layer_plan(desc, 0, batch, lq, lk, x_kv == NULL, &L)) != ATTN_OK) return s;
    if ((s = attn__layer_check_weights(desc->kind, weights)) != ATTN_OK) return s;
    L.w = weights; L.xq = x_q; L.xkv = x_kv ? x_kv : x_q;
    if (L.direct) L.wd = weights->wd + (size_t)(lk > lq ? lk - lq : 0) * (size_t)L.ctx;
    if ((s = attn__layer_workspace(&L, &owned)) != ATTN_OK) return s;
    attn__layer_fwd(&L, NULL);
    attn__layer_gemm(&L, 0, 0, batch * lq, dm, dm, 1.0f, attn__layer_buf(&L, L.f_a), dm, weights->wo, dm, 0.0f, out, dm);
    attn__layer_add_bias(out, weights->bo, (size_t)batch * lq, dm);
    attn__free(owned);
    return ATTN_OK;
}

/* ---- backward ---- */

/* An input-gradient target: the first contribution overwrites, the next ones add. */
typedef struct attn__ldx { float *p; int written; } attn__ldx;

static void attn__ldx_add(attn__ldx *x, const float *src, size_t n) {
    size_t i;
    if (!x->p) return;
    if (x->written) for (i = 0; i < n; ++i) x->p[i] += src[i];
    else memcpy(x->p, src, n * sizeof(float));
    x->written = 1;
}
/* x (rows m, cols dm) += dY (m x n) W^T, W [dm, n] */
static void attn__ldx_gemm(const attn__layer *L, attn__ldx *x, int m, int n, const float *dY, const float *W) {
    if (!x->p) return;
    attn__layer_gemm(L, 0, 1, m, L->dm, n, 1.0f, dY, n, W, n, x->written ? 1.0f : 0.0f, x->p, L->dm);
    x->written = 1;
}
/* gW [dm, n] = X^T dY over m rows */
static void attn__layer_wgrad(const attn__layer *L, float *gW, const float *X, const float *dY, int m, int n) {
    if (gW) attn__layer_gemm(L, 1, 0, L->dm, n, m, 1.0f, X, L->dm, dY, n, 0.0f, gW, n);
}

ATTNDEF attn_status attn_layer_backward(const attn_layer_desc *desc, const attn_layer_weights *weights,
                                        int batch, int lq, int lk, const float *x_q, const float *x_kv,
                                        const float *dout, float *dx_q, float *dx_kv,
                                        const attn_layer_grads *grads) {
    attn__layer L;
    attn_desc bd;
    attn_tensor tdo, tdq, tdk, tdv;
    attn__ldx xq, xkv_own, *xkv;
    attn_status s;
    void *owned;
    int mq, mk, dm, dkv, b, i, j;
    float *A, *dA, *dQ, *dK, *dV, *lse;
    if (!desc) return ATTN_ERR_NULL_DESC;
    if (!x_q) return ATTN_ERR_LAYER_NULL_X;
    if (!dout) return ATTN_ERR_LAYER_NULL_DOUT;
    if (!grads) return ATTN_ERR_LAYER_NULL_GRADS;
    if (!x_kv && dx_kv) return ATTN_ERR_LAYER_DX_KV;
    if ((s = attn__layer_plan(desc, 1, batch, lq, lk, x_kv == NULL, &L)) != ATTN_OK) return s;
    if ((s = attn__layer_check_weights(desc->kind, weights)) != ATTN_OK) return s;
    L.w = weights; L.xq = x_q; L.xkv = x_kv ? x_kv : x_q;
    if (L.direct) L.wd = weights->wd + (size_t)(lk > lq ? lk - lq : 0) * (size_t)L.ctx;
    if ((s = attn__layer_workspace(&L, &owned)) != ATTN_OK) return s;
    mq = batch * lq; mk = batch * lk; dm = L.dm; dkv = L.Hkv * L.dk;
    lse = attn__layer_buf(&L, L.f_lse);
    attn__layer_fwd(&L, lse);
    A = attn__layer_buf(&L, L.f_a); dA = attn__layer_buf(&L, L.f_da);
    dQ = attn__layer_buf(&L, L.f_dq); dK = attn__layer_buf(&L, L.f_dk); dV = attn__layer_buf(&L, L.f_dv);
    /* output projection */
    attn__layer_gemm(&L, 0, 1, mq, dm, dm, 1.0f, dout, dm, weights->wo, dm, 0.0f, dA, dm);
    attn__layer_wgrad(&L, grads->wo, A, dout, mq, dm);
    attn__layer_colsum(grads->bo, dout, (size_t)mq, dm);
    /* attention core: attn_backward on the forward's tensors. The Direct kinds' logits are the
       bias (W_D, or the input-dependent logits), so their gradient is dbias: DIRECT's, summed
       over the batch, lands in grads->wd's block in place (rows ctx apart, as W_D is read) */
    bd = L.ad;
    bd.dbias = NULL;
    if (L.kind == ATTN_LAYER_DIRECT && grads->wd) {
        for (i = 0; i < L.ctx; ++i) for (j = 0; j < L.ctx; ++j) grads->wd[(size_t)i * L.ctx + j] = 0.0f;
        bd.dbias = grads->wd + (size_t)(L.wd - weights->wd);
    } else if (L.kind == ATTN_LAYER_DIRECT_INPUT) bd.dbias = attn__layer_buf(&L, L.f_dg);
    tdo = L.to; tdo.data = dA;
    tdq = attn_tensor_dense(dQ, ATTN_F32, L.tq.batch, L.tq.seq, L.tq.heads, L.tq.dim);
    tdk = attn_tensor_dense(dK, ATTN_F32, L.tk.batch, L.tk.seq, L.tk.heads, L.tk.dim);
    tdv = attn_tensor_dense(dV, ATTN_F32, L.tv.batch, L.tv.seq, L.tv.heads, L.tv.dim);
    s = attn_backward(&bd, L.tq, L.tk, L.tv, L.to, tdo, lse, tdq, tdk, tdv);
    ATTN_ASSERT(s == ATTN_OK);
    /* input projections; dx targets: self-attention sends both paths to dx_q */
    xq.p = dx_q; xq.written = 0; xkv_own.p = dx_kv; xkv_own.written = 0;
    xkv = x_kv ? &xkv_own : &xq;
    if (!L.direct) {
        attn__layer_wgrad(&L, grads->wq, L.xq, dQ, mq, dm);
        attn__layer_colsum(grads->bq, dQ, (size_t)mq, dm);
        attn__ldx_gemm(&L, &xq, mq, dm, dQ, weights->wq);
    }
    if (L.kind == ATTN_LAYER_STANDARD || L.kind == ATTN_LAYER_OPTIMIZED) {
        attn__layer_wgrad(&L, grads->wk, L.xkv, dK, mk, dkv);
        attn__layer_colsum(grads->bk, dK, (size_t)mk, dkv);
        attn__ldx_gemm(&L, xkv, mk, dkv, dK, weights->wk);
    } else if (!L.direct) attn__ldx_add(xkv, dK, (size_t)mk * dm);   /* K_i = Xkv_i */
    if (L.kind == ATTN_LAYER_STANDARD || L.direct) {
        attn__layer_wgrad(&L, grads->wv, L.xkv, dV, mk, dkv);
        attn__layer_colsum(grads->bv, dV, (size_t)mk, dkv);
        attn__ldx_gemm(&L, xkv, mk, dkv, dV, weights->wv);
    } else if (L.kind != ATTN_LAYER_SUPER) attn__ldx_add(xkv, dV, (size_t)mk * dm);   /* V_i = Xkv_i */
    else {                                  /* V' = WAm Xkv + b^A per key sequence */
        const int lm = L.lblk, c = L.ctx;
        float *WAm = attn__layer_buf(&L, L.f_wa), *dWA = attn__layer_buf(&L, L.f_dwa);
        int u;
        memset(dWA, 0, sizeof(float) * (size_t)lm * lm);
        if (grads->ba) for (i = 0; i < c; ++i) grads->ba[i] = 0.0f;
        for (u = 0; u < attn__layer_units(&L); ++u) {
            int tb, k0, Lk, n, t;
            size_t row;
            attn__layer_unit(&L, u, &tb, &k0, &Lk);
            if (Lk <= 0) continue;
            n = ATTN__MIN(Lk, c);
            row = (size_t)tb * lk + (size_t)k0;
            attn__layer_gemm(&L, 0, 1, n, n, dm, 1.0f, dV + row * dm, dm, L.xkv + row * dm, dm, 1.0f, dWA, lm);
            if (grads->ba)
                for (i = 0; i < Lk; ++i) {
                    float acc = 0.0f;
                    for (j = 0; j < dm; ++j) acc += dV[(row + (size_t)i) * dm + j];
                    grads->ba[ATTN__MIN(i, c - 1)] += acc;
                }
            if (xkv->p) attn__layer_gemm(&L, 1, 0, n, dm, n, 1.0f, WAm, lm, dV + row * dm, dm, 1.0f, xkv->p + row * dm, dm);
            for (t = c; t < Lk; ++t) {      /* sliding rows: W^A's last row over tokens t-c+1 .. t */
                const float *g = dV + (row + (size_t)t) * dm, *w = weights->wa + (size_t)(c - 1) * c;
                for (i = 0; i < c; ++i) {
                    const size_t src = row + (size_t)(t - c + 1 + i);
                    const float *x = L.xkv + src * dm;
                    float acc = 0.0f;
                    for (j = 0; j < dm; ++j) acc += g[j] * x[j];
                    dWA[(size_t)(c - 1) * lm + i] += acc;
                    if (xkv->p) for (j = 0; j < dm; ++j) xkv->p[src * dm + j] += w[i] * g[j];
                }
            }
        }
        if (grads->wa)
            for (i = 0; i < c; ++i)
                for (j = 0; j < c; ++j)
                    grads->wa[(size_t)i * c + j] = (i < lm && j < lm && !(L.ad.causal && j > i)) ? dWA[(size_t)i * lm + j] : 0.0f;
    }
    if (L.direct) {                         /* logits' gradient dG [B, lq, lk] */
        float *dG = attn__layer_buf(&L, L.f_dg), *M = attn__layer_buf(&L, L.f_m);
        const float *wd = L.wd;
        if (grads->wd && M) {
            float *gwd = grads->wd + (size_t)(L.wd - weights->wd);
            for (i = 0; i < L.ctx; ++i) for (j = 0; j < L.ctx; ++j) grads->wd[(size_t)i * L.ctx + j] = 0.0f;
            for (b = 0; b < batch; ++b)
                for (i = 0; i < lq; ++i)
                    for (j = 0; j < lk; ++j) {
                        const size_t e = ((size_t)b * lq + i) * lk + j;
                        gwd[(size_t)i * L.ctx + j] += M ? dG[e] * M[e] : dG[e];
                    }
        }
        if (M) {                            /* dM = dG * W_D; dXq = s dM Xkv, dXkv = s dM^T Xq */
            const float bq = xq.written ? 1.0f : 0.0f, bk = xkv->written ? 1.0f : 0.0f;
            for (b = 0; b < batch; ++b)
                for (i = 0; i < lq; ++i)
                    for (j = 0; j < lk; ++j) dG[((size_t)b * lq + i) * lk + j] *= wd[(size_t)i * L.ctx + j];
            if (xq.p)
                for (b = 0; b < batch; ++b)
                    attn__layer_gemm(&L, 0, 0, lq, dm, lk, L.dscale, dG + (size_t)b * lq * lk, lk,
                                     L.xkv + (size_t)b * lk * dm, dm, bq, xq.p + (size_t)b * lq * dm, dm);
            xq.written = xq.p != NULL;
            if (xkv->p)
                for (b = 0; b < batch; ++b)
                    attn__layer_gemm(&L, 1, 0, lk, dm, lq, L.dscale, dG + (size_t)b * lq * lk, lk,
                                     L.xq + (size_t)b * lq * dm, dm, x_kv ? bk : 1.0f, xkv->p + (size_t)b * lk * dm, dm);
            xkv->written = xkv->p != NULL;
        }
    }
    if (xq.p && !xq.written) memset(xq.p, 0, sizeof(float) * (size_t)mq * dm);
    if (xkv_own.p && !xkv_own.written) memset(xkv_own.p, 0, sizeof(float) * (size_t)mk * dm);
    attn__free(owned);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.12 generation: KV caches (contiguous, paged), RoPE, StreamingLLM, EL-attention
   --------------------------------------------------------------------------------------- */

/* --- RoPE ------------------------------------------------------------------------------ */
static attn_status attn__check_rope(const attn_desc *d, int dim) {
    if (d->rope != ATTN_ROPE_OFF && d->rope != ATTN_ROPE_INTERLEAVED && d->rope != ATTN_ROPE_HALF) return ATTN_ERR_ROPE_MODE;
    if (d->rope == ATTN_ROPE_OFF) return ATTN_OK;
    if (d->rope_dim < 0 || d->rope_dim > dim || d->rope_dim % 2 != 0) return ATTN_ERR_ROPE_DIM;
    if (!isfinite(d->rope_base) || d->rope_base < 0.0f) return ATTN_ERR_ROPE_BASE;
    if (!isfinite(d->rope_scaling) || d->rope_scaling < 0.0f) return ATTN_ERR_ROPE_SCALING;
    return ATTN_OK;
}
static void attn__rope_resolve(const attn_desc *d, attn__problem *P, int k_seq) {
    P->rope = d->rope;
    P->rope_dim = d->rope_dim ? d->rope_dim : P->q.dim - P->q.dim % 2;
    P->rope_base = d->rope_base != 0.0f ? (double)d->rope_base : 10000.0;
    P->rope_scaling = d->rope_scaling != 0.0f ? (double)d->rope_scaling : 1.0;
    P->rope_pos_q = d->rope_pos_q; P->rope_pos_k = d->rope_pos_k;
    P->rope_ld_k = k_seq;
}
/* cos and sin of pair i at position pos, in double, rounded once */
static void attn__rope_cs(const attn__problem *P, long long pos, int i, float *c, float *s) {
    const double th = (double)pos / P->rope_scaling * pow(P->rope_base, -2.0 * (double)i / (double)P->rope_dim);
    *c = (float)cos(th); *s = (float)sin(th);
}
static void attn__rope_row(const attn__problem *P, float *x, long long pos) {
    const int half = P->rope_dim / 2, il = P->rope == ATTN_ROPE_INTERLEAVED;
    int i;
    for (i = 0; i < half; ++i) {
        const int ia = il ? 2 * i : i, ib = il ? 2 * i + 1 : i + half;
        const float a = x[ia], b = x[ib];
        float c, s;
        attn__rope_cs(P, pos, i, &c, &s);
        x[ia] = a * c - b * s;
        x[ib] = b * c + a * s;
    }
}
/* n rows of x (stride ld) at consecutive positions pos0, pos0 + 1, ...: cos and sin exact at
   pos0, then by the angle-addition recurrence in double (error ~1e-16 per row, far below the
   fp32 rounding of the result); 4 transcendental calls per pair instead of 2 per pair per row */
static void attn__rope_rows(const attn__problem *P, float *x, size_t ld, int n, long long pos0) {
    const int half = P->rope_dim / 2, il = P->rope == ATTN_ROPE_INTERLEAVED;
    int i, j;
    for (i = 0; i < half; ++i) {
        const int ia = il ? 2 * i : i, ib = il ? 2 * i + 1 : i + half;
        const double fr = pow(P->rope_base, -2.0 * (double)i / (double)P->rope_dim), f = fr / P->rope_scaling;
        const double cd = cos(f), sd = sin(f);
        double c = cos((double)pos0 / P->rope_scaling * fr), sn = sin((double)pos0 / P->rope_scaling * fr);
        for (j = 0; j < n; ++j) {
            float *r = x + (size_t)j * ld;
            const float a = r[ia], b = r[ib], cf = (float)c, sf = (float)sn;
            const double c2 = c * cd - sn * sd;
            r[ia] = a * cf - b * sf;
            r[ib] = b * cf + a * sf;
            sn = sn * cd + c * sd; c = c2;
        }
    }
}
/* the same rotation with cos/sin read from P->rope_tab for slots pos0.. (attn_decode) */
static void attn__rope_rows_tab(const attn__problem *P, float *x, size_t ld, int n, long long pos0) {
    const int half = P->rope_dim / 2, il = P->rope == ATTN_ROPE_INTERLEAVED;
    int i, j;
    for (j = 0; j < n; ++j) {
        float *r = x + (size_t)j * ld;
        const float *t = P->rope_tab + (size_t)(pos0 + j) * (size_t)half * 2;
        for (i = 0; i < half; ++i) {
            const int ia = il ? 2 * i : i, ib = il ? 2 * i + 1 : i + half;
            const float a = r[ia], b = r[ib], cf = t[2 * i], sf = t[2 * i + 1];
            r[ia] = a * cf - b * sf;
            r[ib] = b * cf + a * sf;
        }
    }
}
/* rope_tab rows [64 t, 64 t + 64): exact at the block start, recurrence inside (as rope_rows) */
typedef struct attn__rope_tab_ctx { const attn__problem *P; float *tab; long long n; } attn__rope_tab_ctx;
static void attn__rope_tab_task(void *vc, int t, int thread) {
    const attn__rope_tab_ctx *X = (const attn__rope_tab_ctx *)vc;
    const attn__problem *P = X->P;
    const int half = P->rope_dim / 2;
    const long long p0 = (long long)t * 64, p1 = ATTN__MIN(X->n, p0 + 64);
    int i;
    long long p;
    (void)thread;
    for (i = 0; i < half; ++i) {
        const double fr = pow(P->rope_base, -2.0 * (double)i / (double)P->rope_dim), f = fr / P->rope_scaling;
        const double cd = cos(f), sd = sin(f);
        double c = cos((double)p0 / P->rope_scaling * fr), sn = sin((double)p0 / P->rope_scaling * fr);
        for (p = p0; p < p1; ++p) {
            const double c2 = c * cd - sn * sd;
            X->tab[((size_t)p * half + i) * 2] = (float)c;
            X->tab[((size_t)p * half + i) * 2 + 1] = (float)sn;
            sn = sn * cd + c * sd; c = c2;
        }
    }
}
/* elements [d0, d0 + n) of a stored row, rotated as attn__rope_row would, times mul */
static void attn__rope_load(const attn__problem *P, const void *row, attn_dtype t, int d0, int n, long long pos,
                            float *dst, float mul) {
    const int half = P->rope_dim / 2, il = P->rope == ATTN_ROPE_INTERLEAVED;
    const size_t es = attn__dtype_size(t);
    int e;
    for (e = d0; e < d0 + n; ++e) {
        float x, y, c, s, v;
        attn__load_row((const char *)row + (size_t)e * es, t, &x, 1, 1.0f);
        if (e >= P->rope_dim) { dst[e - d0] = x * mul; continue; }
        {
            const int i = il ? e / 2 : (e < half ? e : e - half);
            const int first = il ? e % 2 == 0 : e < half;
            const int partner = il ? (first ? e + 1 : e - 1) : (first ? e + half : e - half);
            attn__load_row((const char *)row + (size_t)partner * es, t, &y, 1, 1.0f);
            attn__rope_cs(P, pos, i, &c, &s);
            if (first) v = x * c - y * s;            /* a = x, b = y */
            else v = x * c + y * s;                  /* b = x, a = y */
        }
        dst[e - d0] = v * mul;
    }
}

ATTNDEF attn_status attn_rope_apply(const attn_desc *desc, attn_tensor x, const int *positions) {
    attn__problem P;
    attn_status s;
    float *buf;
    int b, t, h;
    if (!desc) return ATTN_ERR_NULL_DESC;
    if (!x.data) return ATTN_ERR_ROPE_X;
    if (!attn__dtype_ok(x.dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(&x)) return ATTN_ERR_ROPE_X_SHAPE;
    if (attn__tensor_bcast(&x)) return ATTN_ERR_ROPE_X_BROADCAST;
    if ((s = attn__check_rope(desc, x.dim)) != ATTN_OK) return s;
    memset(&P, 0, sizeof P);
    if ((s = attn__make_view(&x, &P.q)) != ATTN_OK) return s;
    if (desc->rope == ATTN_ROPE_OFF) return ATTN_OK;
    attn__rope_resolve(desc, &P, x.seq);
    if (!(buf = (float *)attn__alloc(sizeof(float) * (size_t)x.dim))) return ATTN_ERR_OUT_OF_MEMORY;
    for (b = 0; b < x.batch; ++b)
        for (t = 0; t < x.seq; ++t)
            for (h = 0; h < x.heads; ++h) {
                void *row = attn__at(&P.q, b, t, h);
                attn__load_row(row, x.dtype, buf, P.rope_dim, 1.0f);
                attn__rope_row(&P, buf, positions ? positions[(size_t)b * (size_t)x.seq + (size_t)t] : t);
                attn__store_row(row, x.dtype, buf, P.rope_dim, 1.0f);
            }
    attn__free(buf);
    return ATTN_OK;
}

/* --- KV caches -------------------------------------------------------------------------- */
typedef struct attn__cache {
    attn__view k, v;           /* the storage: [batch|n_pages, capacity|page_size, heads, dim] */
    int capacity;
} attn__cache;

/* Pages covering tokens [0, n) of sequence b all in the pool. */
static int attn__pages_ok(const attn_kv_cache *c, int b, long long n) {
    long long p, np;
    if (!c->page_size) return 1;
    np = (n + c->page_size - 1) / c->page_size;
    for (p = 0; p < np; ++p) {
        const int pg = c->block_table[(size_t)b * (size_t)c->max_pages + (size_t)p];
        if (pg < 0 || pg >= c->k.batch) return 0;
    }
    return 1;
}

static attn_status attn__check_cache(const attn_kv_cache *c, attn__cache *R) {
    attn_status s;
    int b;
    if (!c) return ATTN_ERR_KV_NULL;
    if (!c->k.data || !c->v.data) return ATTN_ERR_KV_DATA;
    if (!c->lens) return ATTN_ERR_KV_LENS;
    if (!attn__dtype_ok(c->k.dtype) || c->v.dtype != c->k.dtype) return ATTN_ERR_KV_DTYPE;
    if (!attn__shape_ok(&c->k) || !attn__shape_ok(&c->v) || c->k.batch != c->v.batch || c->k.seq != c->v.seq ||
        c->k.heads != c->v.heads) return ATTN_ERR_KV_SHAPE;
    if (attn__tensor_bcast(&c->k) || attn__tensor_bcast(&c->v)) return ATTN_ERR_KV_BROADCAST;
    if (c->batch < 1 || (c->page_size == 0 && c->batch != c->k.batch)) return ATTN_ERR_KV_BATCH;
    if (c->page_size < 0 || (c->page_size > 0 && c->page_size != c->k.seq)) return ATTN_ERR_KV_PAGE_SIZE;
    if (c->page_size) {
        size_t n;
        if (!c->block_table) return ATTN_ERR_KV_BLOCK_TABLE;
        if (c->max_pages < 1) return ATTN_ERR_KV_MAX_PAGES;
        if (!attn__mul_size((size_t)c->max_pages, (size_t)c->page_size, &n) || n > (size_t)INT_MAX ||
            !attn__mul_size((size_t)c->max_pages, (size_t)c->batch, &n) || n > (size_t)PTRDIFF_MAX / sizeof(int))
            return ATTN_ERR_OVERFLOW;
        R->capacity = c->max_pages * c->page_size;
    } else {
        R->capacity = c->k.seq;
    }
    if ((s = attn__make_view(&c->k, &R->k)) != ATTN_OK || (s = attn__make_view(&c->v, &R->v)) != ATTN_OK) return s;
    if (attn__view_self_overlap(&R->k) || attn__view_self_overlap(&R->v) ||
        attn__spans_meet(attn__view_span(&R->k), attn__view_span(&R->v))) return ATTN_ERR_KV_OVERLAP;
    if (!attn__lengths_ok(c->lens, c->batch, R->capacity)) return ATTN_ERR_KV_LEN;
    for (b = 0; b < c->batch; ++b)
        if (!attn__pages_ok(c, b, c->lens[b])) return ATTN_ERR_KV_PAGE_INDEX;
    return ATTN_OK;
}

/* Address of token t of sequence b, head h, in cache view v. */
static char *attn__cache_at(const attn_kv_cache *c, const attn__view *v, int b, int t, int h) {
    if (c->page_size) {
        const ptrdiff_t pg = c->block_table[(size_t)b * (size_t)c->max_pages + (size_t)(t / c->page_size)];
        return v->data + (ptrdiff_t)v->esize * (pg * v->sb + (ptrdiff_t)(t % c->page_size) * v->ss + (ptrdiff_t)h * v->sh);
    }
    return (char *)attn__at(v, b, t, h);
}

/* One row of n elements from src (type ts) to dst (type td): bytes when the types match. */
static void attn__copy_row(void *dst, attn_dtype td, const void *src, attn_dtype ts, int n) {
    float tmp[64];
    int d;
    if (td == ts) { memmove(dst, src, (size_t)n * attn__dtype_size(td)); return; }
    for (d = 0; d < n; d += 64) {
        const int m = ATTN__MIN(64, n - d);
        attn__load_row((const char *)src + (size_t)d * attn__dtype_size(ts), ts, tmp, m, 1.0f);
        attn__store_row((char *)dst + (size_t)d * attn__dtype_size(td), td, tmp, m, 1.0f);
    }
}

/* k_new/v_new checked against the cache; views in kn, vn. */
static attn_status attn__check_new(const attn_kv_cache *c, const attn_tensor *k, const attn_tensor *v, const int *n_new,
                                   attn__view *kn, attn__view *vn) {
    attn_status s;
    int b;
    if (!k->data || !v->data) return ATTN_ERR_KV_NEW_NULL;
    if (!attn__dtype_ok(k->dtype) || !attn__dtype_ok(v->dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(k) || !attn__shape_ok(v) || k->batch != c->batch || v->batch != c->batch || k->seq != v->seq ||
        k->heads != c->k.heads || v->heads != c->k.heads || k->dim != c->k.dim || v->dim != c->v.dim)
        return ATTN_ERR_KV_NEW_SHAPE;
    if ((s = attn__make_view(k, kn)) != ATTN_OK || (s = attn__make_view(v, vn)) != ATTN_OK) return s;
    if (n_new)
        for (b = 0; b < c->batch; ++b) if (n_new[b] < 0 || n_new[b] > k->seq) return ATTN_ERR_KV_N_NEW;
    return ATTN_OK;
}

/* Token i of the new tensors into slot t of sequence b. */
static void attn__kv_put(const attn_kv_cache *c, const attn__cache *R, const attn__view *kn, const attn__view *vn,
                         int b, int i, int t) {
    int h;
    for (h = 0; h < c->k.heads; ++h) {
        attn__copy_row(attn__cache_at(c, &R->k, b, t, h), R->k.dtype, attn__at(kn, b, i, h), kn->dtype, R->k.dim);
        attn__copy_row(attn__cache_at(c, &R->v, b, t, h), R->v.dtype, attn__at(vn, b, i, h), vn->dtype, R->v.dim);
    }
}
/* Slots [start + count, lens[b]) of sequence b move down by count. */
static void attn__kv_shift(const attn_kv_cache *c, const attn__cache *R, int b, int start, int count) {
    int t, h;
    if (count == 0) return;
    for (t = start + count; t < c->lens[b]; ++t)
        for (h = 0; h < c->k.heads; ++h) {
            memmove(attn__cache_at(c, &R->k, b, t - count, h), attn__cache_at(c, &R->k, b, t, h), R->k.esize * (size_t)R->k.dim);
            memmove(attn__cache_at(c, &R->v, b, t - count, h), attn__cache_at(c, &R->v, b, t, h), R->v.esize * (size_t)R->v.dim);
        }
    c->lens[b] -= count;
}

ATTNDEF attn_status attn_kv_append(attn_kv_cache *cache, attn_tensor k_new, attn_tensor v_new, const int *n_new) {
    attn__cache R;
    attn__view kn, vn;
    attn_status s;
    int b, i;
    if ((s = attn__check_cache(cache, &R)) != ATTN_OK) return s;
    if ((s = attn__check_new(cache, &k_new, &v_new, n_new, &kn, &vn)) != ATTN_OK) return s;
    for (b = 0; b < cache->batch; ++b) {
        const long long n = n_new ? n_new[b] : k_new.seq;
        if (cache->lens[b] + n > R.capacity) return ATTN_ERR_KV_FULL;
        if (!attn__pages_ok(cache, b, cache->lens[b] + n)) return ATTN_ERR_KV_PAGE_INDEX;
    }
    for (b = 0; b < cache->batch; ++b) {
        const int n = n_new ? n_new[b] : k_new.seq;
        for (i = 0; i < n; ++i) attn__kv_put(cache, &R, &kn, &vn, b, i, cache->lens[b] + i);
        cache->lens[b] += n;
    }
    return ATTN_OK;
}

ATTNDEF attn_status attn_kv_len(const attn_kv_cache *cache, int seq, int *len) {
    attn__cache R;
    attn_status s;
    if (!len) return ATTN_ERR_NULL_ARG;
    if ((s = attn__check_cache(cache, &R)) != ATTN_OK) return s;
    if (seq < 0 || seq >= cache->batch) return ATTN_ERR_KV_SEQ;
    *len = cache->lens[seq];
    return ATTN_OK;
}

ATTNDEF attn_status attn_kv_evict(attn_kv_cache *cache, int seq, int start, int count) {
    attn__cache R;
    attn_status s;
    if ((s = attn__check_cache(cache, &R)) != ATTN_OK) return s;
    if (seq < 0 || seq >= cache->batch) return ATTN_ERR_KV_SEQ;
    if (start < 0 || count < 0 || (long long)start + count > cache->lens[seq]) return ATTN_ERR_KV_EVICT_RANGE;
    attn__kv_shift(cache, &R, seq, start, count);
    return ATTN_OK;
}

ATTNDEF attn_status attn_kv_append_streaming(attn_kv_cache *cache, int sink, int recent,
                                             attn_tensor k_new, attn_tensor v_new, const int *n_new) {
    attn__cache R;
    attn__view kn, vn;
    attn_status s;
    int b, i;
    if ((s = attn__check_cache(cache, &R)) != ATTN_OK) return s;
    if (sink < 0 || recent < 1 || (long long)sink + recent > R.capacity) return ATTN_ERR_KV_STREAM;
    if ((s = attn__check_new(cache, &k_new, &v_new, n_new, &kn, &vn)) != ATTN_OK) return s;
    for (b = 0; b < cache->batch; ++b) {
        const long long m = (long long)cache->lens[b] + (n_new ? n_new[b] : k_new.seq);
        if (!attn__pages_ok(cache, b, ATTN__MIN(m, (long long)sink + recent))) return ATTN_ERR_KV_PAGE_INDEX;
    }
    for (b = 0; b < cache->batch; ++b) {
        /* the stream so far is slots [0, l0) then the n new tokens: M in all. Keep stream
           indices [0, sink) and [M - recent, M); the cache already holds the policy's set. */
        const int l0 = cache->lens[b], n = n_new ? n_new[b] : k_new.seq;
        const long long M = (long long)l0 + n, r0 = M - recent;
        if (M <= (long long)sink + recent) {
            for (i = 0; i < n; ++i) attn__kv_put(cache, &R, &kn, &vn, b, i, l0 + i);
            cache->lens[b] = (int)M;
            continue;
        }
        if (l0 > sink) {                                  /* old slots [sink, min(l0, r0)) go */
            const int e1 = (int)ATTN__MIN((long long)l0, r0);
            if (e1 > sink) attn__kv_shift(cache, &R, b, sink, e1 - sink);
        }
        for (i = 0; i < n; ++i)                           /* new sinks, then the new recent ones */
            if ((long long)l0 + i < sink || (long long)l0 + i >= r0) attn__kv_put(cache, &R, &kn, &vn, b, i, cache->lens[b]++);
    }
    return ATTN_OK;
}

/* --- decoding over a cache ------------------------------------------------------------- */
/* RoPE at default slot positions: one cos/sin table for slots [0, longest sequence) (P->k.seq
   after attn__decode_setup), shared by every head and chunk, after the forward workspace */
static size_t attn__decode_tab_bytes(const attn__problem *P) {
    if (!P->rope || P->rope_pos_k) return 0;
    return (size_t)P->k.seq * (size_t)(P->rope_dim / 2) * 2 * sizeof(float) + ATTN__ALIGN;
}

static attn_status attn__decode_setup(const attn_desc *d, attn_tensor *q, const attn_kv_cache *c, attn_tensor *out,
                                      attn__problem *P) {
    attn__cache R;
    attn_tensor kt, vt;
    attn_desc dd;
    attn_status s;
    int b, mx = 1;
    if (!d) return ATTN_ERR_NULL_DESC;
    if ((s = attn__check_cache(c, &R)) != ATTN_OK) return s;
    if (d->seqlens_k || d->cu_seqlens_q || d->cu_seqlens_k) return ATTN_ERR_DECODE_LENGTHS;
    dd = *d; dd.seqlens_k = c->lens;
    kt = c->k; vt = c->v;
    if (c->page_size) {   /* the logical [batch, capacity] view, for the shape checks only */
        kt.batch = vt.batch = c->batch; kt.seq = vt.seq = R.capacity;
        kt.stride_batch = 0; kt.stride_seq = R.k.ss; kt.stride_head = R.k.sh;
        vt.stride_batch = 0; vt.stride_seq = R.v.ss; vt.stride_head = R.v.sh;
    }
    if ((s = attn__check_forward(&dd, q, &kt, &vt, out, P)) != ATTN_OK) return s;
    for (b = 0; b < c->batch; ++b) mx = ATTN__MAX(mx, c->lens[b]);
    P->k = R.k; P->v = R.v;
    P->k.batch = P->v.batch = c->batch;
    P->k.seq = P->v.seq = mx;          /* the split plan follows the longest sequence */
    P->rope_ld_k = R.capacity;
    if (c->page_size) { P->page_size = c->page_size; P->block_table = c->block_table; P->max_pages = c->max_pages; }
    return ATTN_OK;
}

/* ATTN_SOFTMAX's decode (attn_decode, attn_decode_workspace_size). */
static attn_status attn__softmax_decode(const attn__call *c) {
    const attn_desc *desc = c->d;
    attn_tensor q = c->q, out = c->out;
    attn__problem P;
    attn__fwd_ctx C;
    size_t bytes, tab, total;
    attn__ws w;
    char *base;
    attn_status s;
    memset(&P, 0, sizeof P);
    if ((s = attn__decode_setup(desc, &q, c->cache, c->bytes ? NULL : &out, &P)) != ATTN_OK) return s;
    P.lse = c->lse;
    if ((s = attn__fwd_plan(&P, attn__pick_isa(), &C, &bytes)) != ATTN_OK) return s;
    tab = attn__decode_tab_bytes(&P);
    if (!attn__add_size(bytes, tab, &total)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = total; return ATTN_OK; }
    if ((s = attn__ws_acquire(desc->workspace, desc->workspace_size, total, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    base = w.base;
    if (tab) {   /* the table follows the tiles' memory (bytes - ATTN__ALIGN from the aligned base) */
        attn__rope_tab_ctx X;
        char *tb = base + (bytes - ATTN__ALIGN);
        tb += (ATTN__ALIGN - (uintptr_t)tb % ATTN__ALIGN) % ATTN__ALIGN;
        X.P = &P; X.tab = (float *)(void *)tb; X.n = P.k.seq;
        attn__parallel_for(desc, (int)((X.n + 63) / 64), P.n_threads, attn__rope_tab_task, &X);
        P.rope_tab = X.tab;
    }
    C.ws = (float *)(void *)base;
    C.partial = C.ws + C.ws_floats * (size_t)P.n_threads;
    attn__fwd_run(desc, &C, q.batch, P.n_threads);
    attn__ws_release(&w);
    return ATTN_OK;
}

/* --- EL-attention ---------------------------------------------------------------------- */
/* The projections (q, expanded queries, W^V, W^O) run on the library's SGEMM with the call's
   threads or pool; the attention over h has its own 4 x 4 register-blocked loops (below),
   which read h once for all beams and heads. */
#define ATTN__EL_BJ 16       /* rows of h per block: streamed once for every beam and head */
/* a*b + c: fused where the build targets FMA (ISO C modes never contract a*b + c, and a
   library fmaf call per element would be far slower than the two operations) */
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define ATTN__EL_FMA(a, b, c) fmaf(a, b, c)
#else
#define ATTN__EL_FMA(a, b, c) ((a) * (b) + (c))
#endif

typedef struct attn__el_ctx {
    const attn_el_desc *d;
    const attn_layer_weights *w;
    const float *x, *h;
    float *out;
    int dm, H, Hk, g, dk, nq, R, splits, split_rows;   /* nq = batch*beams queries, R = beams*heads */
    float scale;
    float *q;          /* [nq][H*dk] */
    float *eq;         /* [batch][R][dm] expanded queries, scale folded in */
    float *cst;        /* [batch][R] scale * q_i . bk_i */
    float *part;       /* [batch][splits][R][prow]: acc [dm], m, l */
    size_t prow;       /* dm + 2 rounded up to 16, plus 16: rows never 4 KiB apart */
    float *ctx;        /* [nq][H][dm] the merged, normalised P h rows */
    float *o;          /* [nq][H*dk] per-head outputs (before W^O) */
} attn__el_ctx;

/* 4 x 4 dot products of rows a0..a3 with rows b0..b3 (n each): out[4*i + j] = a_i . b_j;
   8 independent lanes per product, 16 accumulators: half a load per FMA */
static void attn__el_dot4x4(const float *const *a, const float *const *b, int n, float *out) {
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3], *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];
    float s[16][8];
    int i, e, k;
    for (k = 0; k < 16; ++k) for (e = 0; e < 8; ++e) s[k][e] = 0.0f;
    for (i = 0; i + 8 <= n; i += 8)
        for (e = 0; e < 8; ++e) {
            const float x0 = a0[i + e], x1 = a1[i + e], x2 = a2[i + e], x3 = a3[i + e];
            const float y0 = b0[i + e], y1 = b1[i + e], y2 = b2[i + e], y3 = b3[i + e];
            s[0][e] = ATTN__EL_FMA(x0, y0, s[0][e]); s[1][e] = ATTN__EL_FMA(x0, y1, s[1][e]);
            s[2][e] = ATTN__EL_FMA(x0, y2, s[2][e]); s[3][e] = ATTN__EL_FMA(x0, y3, s[3][e]);
            s[4][e] = ATTN__EL_FMA(x1, y0, s[4][e]); s[5][e] = ATTN__EL_FMA(x1, y1, s[5][e]);
            s[6][e] = ATTN__EL_FMA(x1, y2, s[6][e]); s[7][e] = ATTN__EL_FMA(x1, y3, s[7][e]);
            s[8][e] = ATTN__EL_FMA(x2, y0, s[8][e]); s[9][e] = ATTN__EL_FMA(x2, y1, s[9][e]);
            s[10][e] = ATTN__EL_FMA(x2, y2, s[10][e]); s[11][e] = ATTN__EL_FMA(x2, y3, s[11][e]);
            s[12][e] = ATTN__EL_FMA(x3, y0, s[12][e]); s[13][e] = ATTN__EL_FMA(x3, y1, s[13][e]);
            s[14][e] = ATTN__EL_FMA(x3, y2, s[14][e]); s[15][e] = ATTN__EL_FMA(x3, y3, s[15][e]);
        }
    for (k = 0; k < 16; ++k) {
        float t = 0.0f;
        for (e = 0; e < 8; ++e) t += s[k][e];
        for (e = i; e < n; ++e) t += a[k / 4][e] * b[k % 4][e];
        out[k] = t;
    }
}
/* o_i = w[16 + i] o_i + sum_j w[4*i + j] h_j for 4 rows o_i and 4 rows h_j of n: restrict, so
   the compiler vectorises without runtime overlap checks on eight streams */
static void attn__el_pv4x4(float *ATTN__RESTRICT o0, float *ATTN__RESTRICT o1, float *ATTN__RESTRICT o2,
                           float *ATTN__RESTRICT o3, const float *ATTN__RESTRICT h0, const float *ATTN__RESTRICT h1,
                           const float *ATTN__RESTRICT h2, const float *ATTN__RESTRICT h3, const float *w, int n) {
    const float a0 = w[16], a1 = w[17], a2 = w[18], a3 = w[19];
    const float p00 = w[0], p01 = w[1], p02 = w[2], p03 = w[3], p10 = w[4], p11 = w[5], p12 = w[6], p13 = w[7];
    const float p20 = w[8], p21 = w[9], p22 = w[10], p23 = w[11], p30 = w[12], p31 = w[13], p32 = w[14], p33 = w[15];
    int c;
    for (c = 0; c < n; ++c) {
        const float y0 = h0[c], y1 = h1[c], y2 = h2[c], y3 = h3[c];
        o0[c] = ATTN__EL_FMA(p03, y3, ATTN__EL_FMA(p02, y2, ATTN__EL_FMA(p01, y1, ATTN__EL_FMA(p00, y0, o0[c] * a0))));
        o1[c] = ATTN__EL_FMA(p13, y3, ATTN__EL_FMA(p12, y2, ATTN__EL_FMA(p11, y1, ATTN__EL_FMA(p10, y0, o1[c] * a1))));
        o2[c] = ATTN__EL_FMA(p23, y3, ATTN__EL_FMA(p22, y2, ATTN__EL_FMA(p21, y1, ATTN__EL_FMA(p20, y0, o2[c] * a2))));
        o3[c] = ATTN__EL_FMA(p33, y3, ATTN__EL_FMA(p32, y2, ATTN__EL_FMA(p31, y1, ATTN__EL_FMA(p30, y0, o3[c] * a3))));
    }
}
/* the same for one row o: o = a o + sum_j p[j] h_j */
static void attn__el_pv1x4(float *ATTN__RESTRICT o, const float *ATTN__RESTRICT h0, const float *ATTN__RESTRICT h1,
                           const float *ATTN__RESTRICT h2, const float *ATTN__RESTRICT h3, const float *p, float a, int n) {
    const float p0 = p[0], p1 = p[1], p2 = p[2], p3 = p[3];
    int c;
    for (c = 0; c < n; ++c) o[c] = o[c] * a + p0 * h0[c] + p1 * h1[c] + p2 * h2[c] + p3 * h3[c];
}

/* attention of every beam and head of batch entry b over one split of h's rows: online
   softmax, h read once in blocks of ATTN__EL_BJ rows for all R queries, 4 queries x 4 rows
   of h at a time */
static void attn__el_att_task(void *vc, int t, int thread) {
    const attn__el_ctx *C = (const attn__el_ctx *)vc;
    const int b = t / C->splits, sp = t % C->splits, dm = C->dm, R = C->R;
    const int Lb = C->d->src_lens ? C->d->src_lens[b] : C->d->src_len;
    const int j0 = sp * C->split_rows, j1 = ATTN__MIN(Lb, j0 + C->split_rows);
    const float *hb = C->h + (size_t)b * C->d->src_len * dm;
    const size_t prow = C->prow;
    const attn__isa *isa = attn__vec();
    float *part = C->part + ((size_t)b * C->splits + sp) * R * prow;
    int r, r0, i, j, jb, c, u;
    (void)thread;
    for (r = 0; r < R; ++r) {
        float *pr = part + (size_t)r * prow;
        for (c = 0; c < dm; ++c) pr[c] = 0.0f;
        pr[dm] = -INFINITY; pr[dm + 1] = 0.0f;
    }
    for (jb = j0; jb < j1; jb += ATTN__EL_BJ) {
        const int nb = ATTN__MIN(ATTN__EL_BJ, j1 - jb);
        for (r0 = 0; r0 < R; r0 += 4) {
            const int nr = ATTN__MIN(4, R - r0);
            const float *e[4], *hr[4];
            float *o[4], s[4][ATTN__EL_BJ], p[20], alpha[4], d16[16];
            for (i = 0; i < 4; ++i) {                     /* rows past nr repeat the last (not stored) */
                e[i] = C->eq + ((size_t)b * R + (size_t)(r0 + ATTN__MIN(i, nr - 1))) * dm;
                o[i] = part + (size_t)(r0 + ATTN__MIN(i, nr - 1)) * prow;
            }
            for (j = 0; j < nb; j += 4) {                 /* keys past nb repeat the last (masked) */
                for (u = 0; u < 4; ++u) hr[u] = hb + (size_t)(jb + ATTN__MIN(j + u, nb - 1)) * dm;
                attn__el_dot4x4(e, hr, dm, d16);
                for (i = 0; i < 4; ++i)
                    for (u = 0; u < 4 && j + u < nb; ++u) s[i][j + u] = d16[4 * i + u];
            }
            for (i = 0; i < nr; ++i) {                    /* online softmax of each row (vector layer) */
                float *pr = o[i], mx, sum;
                const float cr = C->cst[(size_t)b * R + r0 + i];
                for (j = 0; j < nb; ++j) s[i][j] += cr;
                mx = ATTN__MAX(pr[dm], isa->max(s[i], nb));
                alpha[i] = expf(pr[dm] - mx);             /* exp(-inf) = 0 on the first block */
                sum = isa->exp_sum(s[i], s[i], mx, nb);
                pr[dm] = mx; pr[dm + 1] = pr[dm + 1] * alpha[i] + sum;
            }
            for (j = 0; j < nb; j += 4) {                 /* acc = alpha acc + sum_j p_j h_j */
                for (u = 0; u < 4; ++u) hr[u] = hb + (size_t)(jb + ATTN__MIN(j + u, nb - 1)) * dm;
                for (i = 0; i < 4; ++i) {
                    for (u = 0; u < 4; ++u) p[4 * i + u] = i < nr && j + u < nb ? s[i][j + u] : 0.0f;
                    p[16 + i] = j == 0 && i < nr ? alpha[i] : 1.0f;
                }
                if (nr == 4) attn__el_pv4x4(o[0], o[1], o[2], o[3], hr[0], hr[1], hr[2], hr[3], p, dm);
                else for (i = 0; i < nr; ++i) attn__el_pv1x4(o[i], hr[0], hr[1], hr[2], hr[3], p + 4 * i, p[16 + i], dm);
            }
        }
    }
}

/* merge the splits of one (batch entry, beam x head) row into ctx, normalised */
static void attn__el_merge_task(void *vc, int t, int thread) {   /* t = (b, r) */
    const attn__el_ctx *C = (const attn__el_ctx *)vc;
    const int b = t / C->R, r = t % C->R, dm = C->dm;
    const size_t prow = C->prow;
    float f[16] = { 0 }, l[16] = { 0 }, *dst = C->ctx + ((size_t)b * C->R + r) * (size_t)dm;
    int sp, c;
    (void)thread;
    for (sp = 0; sp < C->splits; ++sp) {             /* splits past the valid rows saw nothing */
        const float *pr = C->part + (((size_t)b * C->splits + sp) * C->R + r) * prow;
        f[sp] = pr[dm]; l[sp] = pr[dm + 1];
    }
    attn__lse_weights(C->splits, f, l);              /* every src_lens[b] >= 1: split 0 saw a row */
    for (c = 0; c < dm; ++c) dst[c] = C->part[((size_t)b * C->splits * C->R + r) * prow + c] * f[0];
    for (sp = 1; sp < C->splits; ++sp) {
        const float *pr = C->part + (((size_t)b * C->splits + sp) * C->R + r) * prow, w = f[sp];
        if (w != 0.0f) for (c = 0; c < dm; ++c) dst[c] += w * pr[c];
    }
}

/* rows [m][n] = bias (or 0), before a GEMM adds into them */
static void attn__el_fill_bias(float *Cm, int m, int n, size_t ldc, const float *bias) {
    int i, j;
    for (i = 0; i < m; ++i) for (j = 0; j < n; ++j) Cm[(size_t)i * ldc + j] = bias ? bias[j] : 0.0f;
}

ATTNDEF attn_status attn_el_attention(const attn_el_desc *d, const attn_layer_weights *w,
                                      const float *x, const float *h, float *out) {
    attn__el_ctx C;
    attn_desc pd;
    size_t nq, n_q, n_eq, n_cst, n_part, n_o, total, t;
    void *mem;
    int b, r, i, nt;
    if (!d || !w || !x || !h || !out) return ATTN_ERR_EL_NULL;
    if (!w->wq || !w->wk || !w->wv || !w->wo) return ATTN_ERR_EL_WEIGHTS;
    if (d->d_model < 1 || d->heads < 1 || d->batch < 1 || d->beams < 1 || d->src_len < 1) return ATTN_ERR_EL_SHAPE;
    if (d->kv_heads < 0 || d->d_model % d->heads != 0 || d->heads % (d->kv_heads ? d->kv_heads : d->heads) != 0)
        return ATTN_ERR_EL_HEADS;
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (d->src_lens)
        for (b = 0; b < d->batch; ++b) if (d->src_lens[b] < 1 || d->src_lens[b] > d->src_len) return ATTN_ERR_EL_SRC_LENS;
    memset(&C, 0, sizeof C);
    C.d = d; C.w = w; C.x = x; C.h = h; C.out = out;
    C.dm = d->d_model; C.H = d->heads; C.Hk = d->kv_heads ? d->kv_heads : d->heads; C.g = C.H / C.Hk;
    C.dk = C.dm / C.H;
    C.scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)C.dk);
    /* h streams once per split; enough splits to feed 16 tasks, at least 64 rows each
       (so at most 16 splits: attn__el_merge_task's weights array) */
    C.splits = (int)ATTN__MAX(1LL, ATTN__MIN((16LL + d->batch - 1) / d->batch, ((long long)d->src_len + 63) / 64));
    C.split_rows = (int)(((long long)d->src_len + C.splits - 1) / C.splits);   /* 64-bit: src_len may be INT_MAX */
    C.prow = attn__round16((size_t)C.dm + 2) + 16;
    if (!attn__mul_size((size_t)d->batch, (size_t)d->beams, &nq) || nq > INT_MAX ||
        !attn__mul_size(nq, (size_t)C.H, &n_cst) || n_cst > INT_MAX ||                 /* also beams*heads */
        !attn__mul_size(n_cst, (size_t)C.dm, &n_eq) || !attn__mul_size(nq, (size_t)C.dm, &n_q) ||
        !attn__mul_size((size_t)d->src_len, (size_t)C.dm, &t) || !attn__mul_size(t, (size_t)d->batch, &t) ||
        t > (size_t)PTRDIFF_MAX / sizeof(float) ||
        !attn__mul_size(n_cst, (size_t)C.splits, &n_part) || !attn__mul_size(n_part, C.prow, &n_part) ||
        (long long)d->batch * C.splits > INT_MAX)                                     /* the task count */
        return ATTN_ERR_OVERFLOW;
    C.nq = (int)nq; C.R = d->beams * d->heads;
    n_o = n_q;
    memset(&pd, 0, sizeof pd);
    pd.parallel = d->parallel; pd.parallel_user = d->parallel_user; pd.n_threads = d->n_threads;
    nt = attn__resolve_threads(&pd);
    if (!attn__add_size(n_q, n_eq, &total) || !attn__add_size(total, n_cst, &total) || !attn__add_size(total, n_part, &total) ||
        !attn__add_size(total, n_eq, &total) ||
        !attn__add_size(total, n_o + 6 * 16, &total) || total > SIZE_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
    if (!(mem = attn__alloc(total * sizeof(float)))) return ATTN_ERR_OUT_OF_MEMORY;
    C.q = (float *)mem;
    C.eq = C.q + attn__round16(n_q);
    C.cst = C.eq + attn__round16(n_eq);
    C.part = C.cst + attn__round16(n_cst);
    C.o = C.part + attn__round16(n_part);
    C.ctx = C.o + attn__round16(n_o);
    {   /* q = x W^Q + b^Q;  per head i: eq rows (qi, i) = scale q_i (W^K_kv(i))^T, [nq][H][dm] */
        const int N = C.H * C.dk, Nk = C.Hk * C.dk;
        attn__el_fill_bias(C.q, C.nq, N, (size_t)N, w->bq);
        attn__sgemm_par(&pd, nt, 0, 0, C.nq, N, C.dm, 1.0f, x, C.dm, w->wq, N, 1.0f, C.q, N);
        for (i = 0; i < C.H; ++i)
            attn__sgemm_par(&pd, nt, 0, 1, C.nq, C.dm, C.dk, C.scale, C.q + (size_t)i * C.dk, N,
                            w->wk + (size_t)(i / C.g) * C.dk, Nk, 0.0f, C.eq + (size_t)i * C.dm, (ptrdiff_t)C.H * C.dm);
    }
    for (b = 0; b < d->batch; ++b)              /* the constant q_i . b_i^K (cancels in softmax) */
        for (r = 0; r < C.R; ++r) {
            const int qi = b * d->beams + r / C.H, hd = r % C.H, kc = (hd / C.g) * C.dk;
            float a = 0.0f;
            if (w->bk) for (i = 0; i < C.dk; ++i) a += C.q[(size_t)qi * C.H * C.dk + (size_t)hd * C.dk + i] * w->bk[kc + i];
            C.cst[(size_t)b * C.R + r] = a * C.scale;
        }
    attn__parallel_for(&pd, d->batch * C.splits, nt, attn__el_att_task, &C);
    attn__parallel_for(&pd, d->batch * C.R, nt, attn__el_merge_task, &C);
    {   /* o rows (qi, i) = ctx (qi, i) W^V_kv(i) + b^V_kv(i);  out = o W^O + b^O */
        const int N = C.H * C.dk, Nk = C.Hk * C.dk;
        for (i = 0; i < C.H; ++i) {
            const int kc = (i / C.g) * C.dk;
            attn__el_fill_bias(C.o + (size_t)i * C.dk, C.nq, C.dk, (size_t)N, w->bv ? w->bv + kc : NULL);
            attn__sgemm_par(&pd, nt, 0, 0, C.nq, C.dk, C.dm, 1.0f, C.ctx + (size_t)i * C.dm, (ptrdiff_t)C.H * C.dm,
                            w->wv + kc, Nk, 1.0f, C.o + (size_t)i * C.dk, N);
        }
        attn__el_fill_bias(out, C.nq, C.dm, (size_t)C.dm, w->bo);
        attn__sgemm_par(&pd, nt, 0, 0, C.nq, C.dm, N, 1.0f, C.o, N, w->wo, C.dm, 1.0f, out, C.dm);
    }
    attn__free(mem);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.13 sparse attention
   --------------------------------------------------------------------------------------- */

/* ---- ATTN_LONGFORMER: the exact core (3.7), once per run of heads sharing a dilation -------
   One visibility rule (attn__visible): a piece of heads [h0, h1) runs attn__softmax_forward on
   head-sliced views with attn_desc.dilation = that piece's dilation. A piece is whole KV
   groups, or lies inside one group (its query heads then share one KV head). */
static int attn__lf_dil(const attn_desc *d, int h) {
    const int D = d->longformer.dilations ? d->longformer.dilations[h] : d->dilation;
    return D > 1 ? D : 1;
}

/* The end of the piece that starts at head h0 (Hq heads, GQA groups of g). */
static int attn__lf_piece(const attn_desc *d, int Hq, int g, int h0) {
    int h1 = h0 + 1;
    while (h1 < Hq && attn__lf_dil(d, h1) == attn__lf_dil(d, h0)) ++h1;
    if (h0 % g != 0 || h1 - h0 < g) return ATTN__MIN(h1, (h0 / g + 1) * g);
    return h0 + (h1 - h0) / g * g;
}

/* Heads [h0, h0 + nh) of t (a validated tensor: no overflow). */
static attn_tensor attn__heads_view(const attn_tensor *t, int h0, int nh) {
    attn_tensor r = *t;
    r.data = (char *)t->data + (ptrdiff_t)attn__dtype_size(t->dtype) * r.stride_head * h0;
    r.heads = nh;
    return r;
}

/* The exact call of piece [h0, h1): sliced tensors, ALiBi slopes and bias; desc sd prepared. */
static void attn__lf_sub(const attn__call *c, attn_desc *sd, int h0, int h1, attn__call *sc) {
    const attn_desc *d = c->d;
    const int g = c->q.heads / c->k.heads, nh = h1 - h0, nk = nh >= g ? nh / g : 1;
    memset(sc, 0, sizeof *sc);
    sc->d = sd;
    sd->dilation = attn__lf_dil(d, h0);
    sc->q = attn__heads_view(&c->q, h0, nh);
    sc->k = attn__heads_view(&c->k, h0 / g, nk);
    sc->v = attn__heads_view(&c->v, h0 / g, nk);
    sc->out = c->bytes ? c->out : attn__heads_view(&c->out, h0, nh);
    sd->alibi_slopes = d->alibi_slopes ? d->alibi_slopes + h0 : NULL;
    if (d->bias.data && d->bias.heads != 1) {
        sd->bias.data = d->bias.data + d->bias.stride_head * h0;
        sd->bias.heads = nh;
    }
}

/* Dilated heads without global tokens, sinks, padding, ALiBi, bias or RoPE, with q.seq == k.seq:
   the queries at positions p = rho (mod D) see exactly the keys j = rho (mod D) of their window,
   so the piece splits into D undilated windowed problems on strided views of every D-th row
   (class rho), each costing seq/D * (2w+1) pairs: O(seq * window) whatever the dilation. */
static int attn__lf_classes(const attn__call *c, int D) {
    const attn_desc *d = c->d;
    if (D <= 1 || c->q.seq != c->k.seq || d->global_tokens || d->sink_tokens || d->seqlens_q || d->seqlens_k ||
        d->cu_seqlens_q || d->cu_seqlens_k || d->alibi_slopes || d->bias.data || d->rope) return 1;
    return ATTN__MIN(D, c->q.seq);
}
/* Rows rho, rho + D, ... of a sliced view (class rho of D). */
static void attn__lf_rows(attn_tensor *t, int rho, int D) {
    t->data = (char *)t->data + (ptrdiff_t)attn__dtype_size(t->dtype) * t->stride_seq * rho;
    t->seq = (t->seq - rho + D - 1) / D;
    t->stride_seq *= D;
}

/* ---- ATTN_LONGFORMER with longformer.global_mask: a direct kernel --------------------------
   One task per (sequence, query head): for each row, the keys it sees (attn__visible for the
   window and the desc's global/sink tokens, plus the masked global keys; a global row: every
   key) are gathered once, scored, soft-maxed and summed in fp32. Cost per row O((window +
   global keys) * dim), O(Lk * dim) for a global row. */
typedef struct attn__lfg_ctx {
    attn__problem P;
    const attn_desc *d;
    const unsigned char *gm;
    float *ws;
    size_t ws_floats;                  /* per thread */
} attn__lfg_ctx;

static size_t attn__lfg_ints(const attn__problem *P) {     /* floats holding Lk ints */
    return ((size_t)P->k.seq * sizeof(int) + sizeof(float) - 1) / sizeof(float);
}
static size_t attn__lfg_floats(const attn__problem *P) {   /* scores, keys, global list: Lk each; q, acc, k/v row */
    return (size_t)P->k.seq + 2 * attn__lfg_ints(P) + 2 * (size_t)P->q.dim + 2 * (size_t)P->v.dim + 16;
}

static void attn__lfg_task(void *ctx, int task, int thread) {
    const attn__lfg_ctx *C = (const attn__lfg_ctx *)ctx;
    attn__problem P = C->P;
    const int Hq = P.q.heads, h = task % Hq, hk = h / P.groups, D = P.q.dim, Dv = P.v.dim;
    float *sc = C->ws + C->ws_floats * (size_t)thread, *qr, *acc, *row;
    int *keys, *glist, ng = 0, i, j, t;
    attn__seq S;
    const unsigned char *gm;
    const attn__isa *isa = attn__pick_isa();
    long long shift;
    attn__seq_at(&P, task / Hq, &S);
    keys = (int *)(void *)(sc + P.k.seq);
    glist = (int *)(void *)(sc + P.k.seq + attn__lfg_ints(&P));
    qr = sc + P.k.seq + 2 * attn__lfg_ints(&P); acc = qr + D; row = acc + Dv;
    gm = C->gm + (size_t)S.tb * (size_t)P.k.seq;
    P.dilation = attn__lf_dil(C->d, h);
    shift = (long long)S.Lk - S.Lq;
    for (j = 0; j < S.Lk; ++j) if (gm[j]) glist[ng++] = j;
    for (i = 0; i < P.q.seq; ++i) {
        const long long p = i + shift;
        const int grow = i < S.Lq && ((p >= 0 && gm[p]) || p < P.global);   /* attn__visible's p < global */
        void *o;
        int n = 0, bad = 0;
        float m = -INFINITY, l = 0.0f;
        if (C->d->longformer.global_rows_only && !grow) continue;
        o = attn__at(&P.out, S.tb, i, h);
        if (i >= S.Lq) {
            attn__store_zero_row(o, P.out.dtype, Dv);
            if (P.lse) P.lse[((size_t)S.tb * Hq + h) * P.q.seq + i] = -INFINITY;
            continue;
        }
        if (grow) {                                          /* a global row sees every key */
            for (j = 0; j < S.Lk; ++j) if (!P.causal || j <= p) keys[n++] = j;
        } else {
            const long long Dl = P.dilation, last = P.causal ? ATTN__MIN(p, (long long)S.Lk - 1) : S.Lk - 1;
            const long long pre = ATTN__MIN((long long)ATTN__MAX(P.sink, P.global), last + 1);
            const long long lo = ATTN__MAX(P.window_left ? p - P.window_left * Dl : 0, pre);
            const long long hi = ATTN__MIN(P.window_right ? p + P.window_right * Dl : last, last);
            long long jj;
            for (jj = 0; jj < pre; ++jj) keys[n++] = (int)jj;
            for (jj = lo; jj <= hi; ++jj) if (attn__visible(&P, p, jj) || gm[jj]) keys[n++] = (int)jj;
            for (t = 0; t < ng; ++t)
                if (glist[t] >= pre && (glist[t] < lo || glist[t] > hi) && glist[t] <= last) keys[n++] = glist[t];
        }
        attn__load_row(attn__at(&P.q, S.tb, S.q0 + i, h), P.q.dtype, qr, D, P.scale);
        for (t = 0; t < n; ++t) {                            /* f32 rows are read in place */
            const void *kr = attn__at(&P.k, S.tb, S.k0 + keys[t], hk);
            float s;
            if (P.k.dtype != ATTN_F32) attn__load_row(kr, P.k.dtype, row, D, 1.0f);
            s = isa->dot(qr, P.k.dtype == ATTN_F32 ? (const float *)kr : row, D);
            if (P.softcap > 0.0f) s = P.softcap * tanhf(s / P.softcap);
            if (P.alibi) s -= P.alibi[h] * (float)(p > keys[t] ? p - keys[t] : keys[t] - p);
            sc[t] = s;
            if (s > m) m = s;
            if (s != s) bad = 1;
        }
        memset(acc, 0, sizeof(float) * (size_t)Dv);
        if (m > -INFINITY)
            for (t = 0; t < n; ++t) {
                const float w = expf(sc[t] - m);
                const void *vr = attn__at(&P.v, S.tb, S.k0 + keys[t], hk);
                if (w == 0.0f) continue;
                l += w;
                if (P.v.dtype != ATTN_F32) attn__load_row(vr, P.v.dtype, row, Dv, 1.0f);
                isa->axpy(acc, w, P.v.dtype == ATTN_F32 ? (const float *)vr : row, Dv);
            }
        if (bad) m = l = NAN;                                /* a NaN logit: NaN out and lse */
        attn__fwd_store(&P, isa, S.tb, S.q0 + i, h, acc, m, l);
    }
}

static attn_status attn__longformer_mask_forward(const attn__call *c, attn_desc *sd) {
    const attn_desc *d = c->d;
    attn__lfg_ctx C;
    attn__ws w;
    attn_status s;
    size_t bytes;
    int h, n_tasks;
    memset(&C, 0, sizeof C);
    if ((s = attn__check_forward(sd, &c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &C.P)) != ATTN_OK) return s;
    if (d->dropout_p != 0.0f) return ATTN_ERR_LONGFORMER_DROPOUT;
    if (d->longformer.dilations)
        for (h = 0; h < c->q.heads; ++h) if (d->longformer.dilations[h] < 0) return ATTN_ERR_LONGFORMER_DILATIONS;
    if (d->longformer.global_rows_only != 0 && d->longformer.global_rows_only != 1) return ATTN_ERR_LONGFORMER_GLOBAL_ROWS;
    if (d->bias.data || d->rope || d->cu_seqlens_q || d->cu_seqlens_k) return ATTN_ERR_LONGFORMER_GLOBAL_MASK;
    if (!attn__tasks((size_t)c->q.batch, (size_t)c->q.heads, 1, &n_tasks)) return ATTN_ERR_OVERFLOW;
    C.ws_floats = attn__lfg_floats(&C.P);
    C.P.n_threads = ATTN__MIN(C.P.n_threads, n_tasks);
    if (!attn__mul_size(C.ws_floats, (size_t)C.P.n_threads, &bytes) || !attn__mul_size(bytes, sizeof(float), &bytes) ||
        !attn__add_size(bytes, ATTN__ALIGN, &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    C.P.lse = c->lse;
    C.d = d;
    C.gm = d->longformer.global_mask;
    C.ws = (float *)(void *)w.base;
    attn__parallel_for(d, n_tasks, C.P.n_threads, attn__lfg_task, &C);
    attn__ws_release(&w);
    return ATTN_OK;
}

static attn_status attn__longformer_forward(const attn__call *c) {
    const attn_desc *d = c->d;
    attn_desc sd = *d;
    attn__problem P;
    attn__call sc;
    size_t sub = 0, one, stage = 0, bytes;
    attn__ws w;
    attn_status s;
    int h, h0, h1, pieces = 0, classes = 0, pass;
    const int Hq = c->q.heads, B = c->q.batch, Sq = c->q.seq;
    float *lse_stage = NULL;
    memset(&P, 0, sizeof P);
    memset(&w, 0, sizeof w);
    sd.kind = ATTN_SOFTMAX;
    if (d->kind == ATTN_LONGFORMER && d->longformer.global_mask) return attn__longformer_mask_forward(c, &sd);
    if ((s = attn__check_forward(&sd, &c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P)) != ATTN_OK) return s;
    if (d->kind == ATTN_LONGFORMER && d->longformer.global_rows_only) return ATTN_ERR_LONGFORMER_GLOBAL_ROWS;
    if (d->dropout_p != 0.0f) return ATTN_ERR_LONGFORMER_DROPOUT;
    if (d->longformer.dilations)
        for (h = 0; h < Hq; ++h) if (d->longformer.dilations[h] < 0) return ATTN_ERR_LONGFORMER_DILATIONS;
    /* pass 0 sizes (the largest sub-call's exact workspace), pass 1 runs */
    for (pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            if (classes > pieces || (pieces > 1 && B > 1)) stage = (size_t)B * Hq * Sq;   /* lse rows not one run */
            if (!attn__mul_size(stage, sizeof(float), &bytes) || !attn__add_size(bytes, sub, &bytes) ||
                !attn__add_size(bytes, ATTN__ALIGN, &bytes)) return ATTN_ERR_OVERFLOW;
            if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
            if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
            if (stage) lse_stage = (float *)(void *)(w.base + sub);
        }
        for (h0 = 0; h0 < Hq; h0 = h1) {
            const int Dh = attn__lf_dil(d, h0), nc = attn__lf_classes(c, Dh);
            int rho;
            h1 = attn__lf_piece(d, Hq, Hq / c->k.heads, h0);
            if (pass == 0) { ++pieces; classes += nc; }
            for (rho = 0; rho < nc; ++rho) {
                attn_desc qd = sd;
                int b, hh, i;
                attn__lf_sub(c, &qd, h0, h1, &sc);
                if (nc > 1) {
                    qd.dilation = 1;
                    attn__lf_rows(&sc.q, rho, Dh);
                    attn__lf_rows(&sc.k, rho, Dh);
                    attn__lf_rows(&sc.v, rho, Dh);
                    if (!c->bytes) attn__lf_rows(&sc.out, rho, Dh);
                }
                if (pass == 0) {
                    qd.workspace = NULL; qd.workspace_size = 0;
                    sc.bytes = &one;
                    if ((s = attn__softmax_forward(&sc)) != ATTN_OK) return s;
                    sub = ATTN__MAX(sub, one);
                    continue;
                }
                qd.workspace = w.base; qd.workspace_size = sub;
                sc.lse = !c->lse ? NULL : lse_stage ? lse_stage : c->lse + (size_t)h0 * Sq;
                s = attn__softmax_forward(&sc);
                ATTN_ASSERT(s == ATTN_OK);
                if (sc.lse && lse_stage) {            /* staged [B][h1-h0][sc.q.seq] rows to their places */
                    const int D = nc > 1 ? (Dh) : 1;
                    for (b = 0; b < B; ++b)
                        for (hh = 0; hh < h1 - h0; ++hh) {
                            const float *src = lse_stage + ((size_t)b * (h1 - h0) + hh) * sc.q.seq;
                            float *dst = c->lse + ((size_t)b * Hq + h0 + hh) * Sq + rho;
                            for (i = 0; i < sc.q.seq; ++i) dst[(size_t)i * D] = src[i];
                        }
                }
            }
        }
    }
    attn__ws_release(&w);
    return ATTN_OK;
}
/* attn_backward: the exact backward (3.9) on the same pieces and classes as the forward; the
   pieces are whole KV groups (required), the classes own disjoint key rows, so every dk/dv row
   is written by one call. lse rows are staged into each call's dense layout. */
static void attn__lf_rows_all(attn__call *sc, int rho, int D) {
    attn__lf_rows(&sc->q, rho, D); attn__lf_rows(&sc->k, rho, D); attn__lf_rows(&sc->v, rho, D);
    attn__lf_rows(&sc->out, rho, D); attn__lf_rows(&sc->dout, rho, D); attn__lf_rows(&sc->dq, rho, D);
    attn__lf_rows(&sc->dk, rho, D); attn__lf_rows(&sc->dv, rho, D);
}
static attn_status attn__longformer_backward(const attn__call *c) {
    const attn_desc *d = c->d;
    attn_desc sd = *d;
    attn__call fc;
    size_t sub = 0, one, stage, bytes;
    attn__ws w;
    attn_status s;
    int h, h0, h1, pass, pieces = 0, dummy = 0;
    const int Hq = c->q.heads, B = c->q.batch, Sq = c->q.seq;
    float *lse_stage = NULL;
    memset(&w, 0, sizeof w);
    sd.kind = ATTN_SOFTMAX;
    /* every check of the exact backward on the whole call: a caller workspace of 0 bytes makes
       it stop with ATTN_ERR_WORKSPACE right after them, before it writes anything */
    fc = *c; fc.d = &sd;
    if (!c->bytes) { sd.workspace = &dummy; sd.workspace_size = 0; }
    if (sd.dilation > 1) sd.dilation = 1;   /* no check depends on it; > 1 would route back here */
    s = attn__softmax_backward(&fc);
    sd.workspace = d->workspace; sd.workspace_size = d->workspace_size; sd.dilation = d->dilation;
    if (c->bytes ? s != ATTN_OK : s != ATTN_ERR_WORKSPACE) return s;
    if (d->dropout_p != 0.0f) return ATTN_ERR_LONGFORMER_DROPOUT;
    if (d->kind == ATTN_LONGFORMER && (d->longformer.global_mask || d->longformer.global_rows_only))
        return ATTN_ERR_LONGFORMER_MASK_BACKWARD;
    if (d->longformer.dilations)
        for (h = 0; h < Hq; ++h) if (d->longformer.dilations[h] < 0) return ATTN_ERR_LONGFORMER_DILATIONS;
    {
        const int g = Hq / c->k.heads;
        for (h = 0; h < Hq; ++h) if (attn__lf_dil(d, h) != attn__lf_dil(d, h / g * g)) return ATTN_ERR_LONGFORMER_BACKWARD;
        for (h = 0; h < Hq; ++h) if (attn__lf_dil(d, h) != attn__lf_dil(d, 0)) break;
        if (h < Hq && d->dbias && d->bias.heads == 1) return ATTN_ERR_LONGFORMER_BACKWARD;
    }
    stage = (size_t)B * Hq * Sq;
    for (pass = 0; pass < 2; ++pass) {
        if (pass == 1) {
            if (!attn__mul_size(stage, sizeof(float), &bytes) || !attn__add_size(bytes, sub, &bytes) ||
                !attn__add_size(bytes, ATTN__ALIGN, &bytes)) return ATTN_ERR_OVERFLOW;
            if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
            if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
            lse_stage = (float *)(void *)(w.base + sub);
        }
        for (h0 = 0; h0 < Hq; h0 = h1) {
            const int Dh = attn__lf_dil(d, h0), nc = attn__lf_classes(c, Dh);
            int rho;
            h1 = attn__lf_piece(d, Hq, Hq / c->k.heads, h0);
            if (pass == 0) ++pieces;
            for (rho = 0; rho < nc; ++rho) {
                attn_desc qd = sd;
                attn__call sc;
                const int nh = h1 - h0, nk = nh / (Hq / c->k.heads);
                int b, hh, i;
                attn__lf_sub(c, &qd, h0, h1, &sc);
                sc.dout = attn__heads_view(&c->dout, h0, nh);
                sc.dq = attn__heads_view(&c->dq, h0, nh);
                sc.dk = attn__heads_view(&c->dk, h0 / (Hq / c->k.heads), nk);
                sc.dv = attn__heads_view(&c->dv, h0 / (Hq / c->k.heads), nk);
                if (c->bytes) sc.out = attn__heads_view(&c->out, h0, nh);   /* sliced views are never read here */
                if (d->dbias && d->bias.heads != 1)
                    qd.dbias = d->dbias + (qd.bias.data - d->bias.data);        /* dbias has bias's strides */
                if (nc > 1) { qd.dilation = 1; attn__lf_rows_all(&sc, rho, Dh); }
                if (pass == 0) {
                    qd.workspace = NULL; qd.workspace_size = 0;
                    sc.bytes = &one;
                    if ((s = attn__softmax_backward(&sc)) != ATTN_OK) return s;
                    sub = ATTN__MAX(sub, one);
                    continue;
                }
                for (b = 0; b < B; ++b)                  /* lse rows into the call's dense [B][nh][rows] */
                    for (hh = 0; hh < nh; ++hh)
                        for (i = 0; i < sc.q.seq; ++i)
                            lse_stage[((size_t)b * nh + hh) * sc.q.seq + i] =
                                c->lse_in[((size_t)b * Hq + h0 + hh) * Sq + rho + (size_t)i * (nc > 1 ? Dh : 1)];
                qd.workspace = w.base; qd.workspace_size = sub;
                sc.lse_in = lse_stage;
                s = attn__softmax_backward(&sc);
                ATTN_ASSERT(s == ATTN_OK);
            }
        }
    }
    (void)pieces;
    attn__ws_release(&w);
    return ATTN_OK;
}
static const attn__mech attn__mech_longformer = { attn__longformer_forward, attn__longformer_backward, NULL, NULL, NULL };

/* ---- The block-sparse kernel: each query block of each head attends a list of key blocks ----
   The exact core's tiles (3.7: attn__tile_begin, attn__tile_chunk, attn__tile_end: their Q.K^T,
   online softmax and P.V on the ISA's kernels) run over the listed key blocks only, one tile per
   (batch, query head, query block, piece of ATTN__BQ rows), on the problem narrowed to that
   batch entry and head, so every row of a tile shares one list whatever the GQA grouping. The
   list (ascending; a block listed m times is walked m times, so its keys count m times) comes
   from the kind's callback; consecutive blocks are walked as one range. Padding: keys from
   rows_k[b] on get pad_penalty added (only chunks reaching them carry the bias), rows_q[b]
   rows are computed and the rest written 0. Each
   output row is computed by one task in a fixed order: results do not depend on the thread
   count. The problem must carry no masks (blocks are the pattern). */
typedef int (*attn__bsr_list_fn)(const void *ctx, int h, int qb, int *list, int *scratch);
typedef struct attn__bsr {
    const attn__problem *P;      /* views, scale, softcap, lse, groups, n_threads; no masks */
    int block, nqb, nkb, pieces; /* block: query rows = keys per block; pieces: tiles per block */
    attn__bsr_list_fn list;
    const void *list_ctx;
    size_t list_max;             /* most entries of a list (repeats included) */
    size_t list_ints;            /* scratch ints the callback uses beside the list */
    const int *rows_k;           /* NULL, or [batch]: keys >= rows_k[b] get the penalty */
    const float *pad_row;        /* with rows_k: k.seq zeros then k.seq penalties */
    const int *rows_q;           /* NULL, or [batch]: rows >= rows_q[b] are written 0 */
    const attn__isa *isa;
    attn__fwd_geo geo;
    float *ws;                   /* n_threads blocks of ws_floats */
    size_t ws_floats;
} attn__bsr;

/* Sizes the per-thread scratch and the workspace bytes (ATTN__ALIGN slack included). */
static attn_status attn__bsr_plan(attn__bsr *L, size_t *bytes) {
    size_t ints, n;
    L->isa = attn__pick_isa();
    L->geo = attn__fwd_geometry(L->P->q.dim, L->P->v.dim);
    L->pieces = (L->block + ATTN__BQ - 1) / ATTN__BQ;
    if (!attn__add_size(L->list_max, L->list_ints, &ints)) return ATTN_ERR_OVERFLOW;
    L->ws_floats = L->geo.scratch + L->geo.tile + attn__round16(ints);   /* int and float are 4 bytes */
    if (!attn__mul_size(L->ws_floats, (size_t)L->P->n_threads, &n) || !attn__mul_size(n, sizeof(float), &n) ||
        !attn__add_size(n, ATTN__ALIGN, bytes)) return ATTN_ERR_OVERFLOW;
    if (!attn__mul_size((size_t)L->P->q.batch * L->P->q.heads, (size_t)L->nqb * L->pieces, &n) || n > INT_MAX)
        return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}

static void attn__bsr_task(void *ctx, int task, int thread) {
    const attn__bsr *L = (const attn__bsr *)ctx;
    const attn__problem *P0 = L->P;
    const int Hq = P0->q.heads, piece = task % L->pieces, qb = task / L->pieces % L->nqb;
    const int h = task / L->pieces / L->nqb % Hq, b = task / L->pieces / L->nqb / Hq;
    float *ws = L->ws + (size_t)thread * L->ws_floats;
    int *list = (int *)(void *)(ws + L->geo.scratch + L->geo.tile);
    attn__tile *T = (attn__tile *)(void *)(ws + L->geo.scratch);
    attn__problem P = *P0;
    attn__fwd_ctx C;
    attn__seq S;
    const int r0 = qb * L->block + piece * ATTN__BQ, rows = ATTN__MIN(ATTN__BQ, (qb + 1) * L->block - r0);
    const int valid = L->rows_q ? ATTN__MAX(0, ATTN__MIN(rows, L->rows_q[b] - r0)) : rows;
    const int Lk = L->rows_k ? L->rows_k[b] : P0->k.seq;
    const float *pad = L->rows_k ? L->pad_row + (P0->k.seq - Lk) : NULL;   /* pad[j]: key j's penalty or 0 */
    int n, i, j, nk;
    P.q.data = (char *)attn__at(&P0->q, b, 0, h); P.q.batch = 1; P.q.heads = 1;
    P.out.data = (char *)attn__at(&P0->out, b, 0, h); P.out.batch = 1; P.out.heads = 1;
    P.k.data = (char *)attn__at(&P0->k, b, 0, h / P0->groups); P.k.batch = 1; P.k.heads = 1;
    P.v.data = (char *)attn__at(&P0->v, b, 0, h / P0->groups); P.v.batch = 1; P.v.heads = 1;
    P.groups = 1; P.n_seqs = 1;
    P.lse = P0->lse ? P0->lse + ((size_t)b * Hq + h) * P0->q.seq : NULL;
    P.bias_batch = 1; P.bias_heads = 1; P.bias_rows = 1; P.bias_sb = P.bias_sh = P.bias_sq = 0;
    for (i = r0 + valid; i < r0 + rows; ++i) attn__fwd_store(&P, L->isa, 0, i, 0, NULL, 0.0f, 0.0f);
    if (valid == 0) return;
    memset(&C, 0, sizeof C);
    C.P = &P; C.isa = L->isa; C.geo = L->geo;
    attn__fwd_copies(&C);
    S.tb = 0; S.seq = 0; S.q0 = 0; S.k0 = 0; S.Lq = P.q.seq; S.Lk = P.k.seq;
    n = L->list(L->list_ctx, h, qb, list, list + L->list_max);
    attn__tile_begin(&C, T, ws + L->geo.scratch, &S, 0, r0, valid);
    for (i = 0; i < n; i = j) {
        long long c0, c1;
        for (j = i + 1; j < n && list[j] == list[j - 1] + 1; ++j) {}
        c1 = (long long)(list[j - 1] + 1) * L->block;
        for (c0 = (long long)list[i] * L->block; c0 < c1; c0 += nk) {
            nk = (int)ATTN__MIN((long long)ATTN__BK, c1 - c0);
            P.bias = c0 + nk > Lk ? pad : NULL;    /* one row for every query (strides 0) */
            attn__tile_chunk(&C, T, ws, c0, nk);
        }
    }
    attn__tile_end(&C, T, NULL);
}

/* Runs the planned layout on workspace ws (aligned). */
static void attn__bsr_run(const attn_desc *d, attn__bsr *L, float *ws) {
    L->ws = ws;
    attn__parallel_for(d, L->P->q.batch * L->P->q.heads * L->nqb * L->pieces, L->P->n_threads, attn__bsr_task, L);
}

/* ---- ATTN_BIGBIRD (ITC) ----------------------------------------------------------------- */
typedef struct attn__bb {
    int nb, r, full;             /* blocks, random blocks per row, 1: every row sees everything */
    int mult;                    /* attn_bigbird_multiplicity */
    unsigned long long seed;
    const int *table;            /* [Hq][nb-2][r] or NULL (drawn) */
} attn__bb;

/* Random blocks of middle row i (1..nb-2) of head h, as attn_bigbird_random_table documents:
   writes min(r, n_out) slots to out; a: nb ints of scratch. */
static void attn__bb_row(unsigned long long seed, int nb, int r, int h, int i, int *a, int *out, int n_out) {
    int M = 0, t, c;
    for (c = 1; c <= nb - 2; ++c) if (c < i - 1 || c > i + 1) a[M++] = c;
    for (t = 0; t < ATTN__MIN(r, n_out); ++t) {
        if (t < M) {
            const uint64_t key = ((uint64_t)h * (uint64_t)(nb - 2) + (uint64_t)(i - 1)) * (uint64_t)r + (uint64_t)t;
            const uint64_t z = attn__mix64((uint64_t)seed + 0x9E3779B97F4A7C15ull * (1u + key));
            const int j = t + (int)(((z >> 32) * (uint64_t)(M - t)) >> 32), x = a[j];
            a[j] = a[t]; a[t] = x;
            out[t] = x;
        } else {
            out[t] = 0;
        }
    }
}

/* The sorted key blocks of query block i of head h, each as many times as it counts (at most
   nb + r entries). scratch: 3 nb ints. */
static int attn__bb_list(const void *ctx, int h, int i, int *list, int *scratch) {
    const attn__bb *B = (const attn__bb *)ctx;
    const int nb = B->nb, listed = B->mult != ATTN_BIGBIRD_UNION;
    int *count = scratch, *rnd = scratch + nb, n = 0, t, m;
    if (B->full || i == 0 || i == nb - 1) {
        for (t = 0; t < nb; ++t) list[t] = t;
        return nb;
    }
    memset(count, 0, sizeof(int) * (size_t)nb);
    count[0] = count[nb - 1] = count[i - 1] = count[i] = count[i + 1] = 1;
    if (B->mult == ATTN_BIGBIRD_HF_EVAL) {
        count[0] += B->r;                       /* HF's all-zero rand_attn */
    } else if (B->table) {
        const int *row = B->table + ((size_t)h * (size_t)(nb - 2) + (size_t)(i - 1)) * (size_t)B->r;
        for (t = 0; t < B->r; ++t) count[row[t]] = listed ? count[row[t]] + 1 : 1;
    } else {
        m = ATTN__MIN(B->r, nb);
        attn__bb_row(B->seed, nb, B->r, h, i, scratch + 2 * nb, rnd, m);
        for (t = 0; t < m; ++t) count[rnd[t]] = listed ? count[rnd[t]] + 1 : 1;
        if (listed) count[0] += B->r - m;       /* slots past nb hold block 0 */
    }
    for (t = 0; t < nb; ++t)
        for (m = 0; m < count[t]; ++m) list[n++] = t;
    return n;
}

/* The parameters every BigBird entry point checks. */
static attn_status attn__bb_params(const attn_bigbird_params *p, int seq, int *block, int *r) {
    *block = p->block ? p->block : 64;
    if (p->block < 0 || seq % *block != 0) return ATTN_ERR_BIGBIRD_BLOCK;
    if (p->random_blocks < 0) return ATTN_ERR_BIGBIRD_RANDOM;
    if ((p->no_random != 0 && p->no_random != 1) || (p->hf_fallback != 0 && p->hf_fallback != 1))
        return ATTN_ERR_BIGBIRD_FLAGS;
    if (p->multiplicity < ATTN_BIGBIRD_UNION || p->multiplicity > ATTN_BIGBIRD_HF_EVAL) return ATTN_ERR_BIGBIRD_MULTIPLICITY;
    *r = p->no_random ? 0 : p->random_blocks ? p->random_blocks : 3;
    return ATTN_OK;
}

/* The attn_desc fields a block-sparse kind does not take must be 0/NULL. */
static int attn__sparse_plain(const attn_desc *d) {
    return !d->window_left && !d->window_right && !d->dilation && !d->sink_tokens &&
           !d->global_tokens && !d->seqlens_q && !d->seqlens_k && !d->cu_seqlens_q && !d->cu_seqlens_k &&
           !d->varlen_batch && !d->alibi_slopes && !d->bias.data && d->dropout_p == 0.0f && !d->rope;
}

/* Validates a BigBird call into P (views, scale, softcap, threads) and B. */
static attn_status attn__bb_check(const attn__call *c, attn__problem *P, attn__bb *B, int *block) {
    const attn_desc *d = c->d;
    const attn_bigbird_params *p = &d->bigbird;
    attn_status s;
    size_t i;
    int r;
    memset(P, 0, sizeof *P);
    memset(B, 0, sizeof *B);
    if ((s = attn__check_qkv(&c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P->q, &P->k, &P->v, &P->out)) != ATTN_OK)
        return s;
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (!isfinite(d->softcap) || d->softcap < 0) return ATTN_ERR_SOFTCAP;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    {   /* padding through seqlens_q/_k is BigBird's own; every other mask is refused */
        attn_desc e = *d;
        e.seqlens_q = e.seqlens_k = NULL;
        if (!attn__sparse_plain(&e) || d->causal) return ATTN_ERR_SPARSE_MASKS;
    }
    if (c->k.seq != c->q.seq) return ATTN_ERR_SPARSE_SELF;
    for (i = 0; d->seqlens_q && i < (size_t)c->q.batch; ++i)
        if (d->seqlens_q[i] < 0 || d->seqlens_q[i] > c->q.seq) return ATTN_ERR_SEQLENS_Q;
    for (i = 0; d->seqlens_k && i < (size_t)c->q.batch; ++i)
        if (d->seqlens_k[i] < 0 || d->seqlens_k[i] > c->k.seq) return ATTN_ERR_SEQLENS_K;
    if ((s = attn__bb_params(p, c->q.seq, block, &r)) != ATTN_OK) return s;
    B->nb = c->q.seq / *block; B->r = r; B->seed = p->seed; B->mult = p->multiplicity;
    B->table = r > 0 && B->mult != ATTN_BIGBIRD_HF_EVAL ? p->random_table : NULL;
    B->full = p->hf_fallback && (long long)c->q.seq <= (5 + 2LL * r) * *block;
    if (B->table && B->nb > 2) {
        const size_t n = (size_t)c->q.heads * (size_t)(B->nb - 2) * (size_t)r;
        for (i = 0; i < n; ++i) if (B->table[i] < 0 || B->table[i] >= B->nb) return ATTN_ERR_BIGBIRD_TABLE;
    }
    P->scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)c->q.dim);
    P->softcap = d->softcap;
    P->dilation = 1;
    P->groups = c->q.heads / c->k.heads;
    P->n_seqs = c->q.batch;
    P->n_threads = attn__resolve_threads(d);
    P->lse = c->lse;
    return ATTN_OK;
}

/* HF's additive mask value for padded keys (BigBirdBlockSparseAttention's attn_mask_penalty). */
#define ATTN__BB_PAD_PENALTY (-10000.0f)

static attn_status attn__bigbird_forward(const attn__call *c) {
    attn__problem P;
    attn__bb B;
    attn__bsr L;
    size_t bytes, pad_floats, i;
    attn__ws w;
    attn_status s;
    int block;
    if ((s = attn__bb_check(c, &P, &B, &block)) != ATTN_OK) return s;
    memset(&L, 0, sizeof L);
    L.P = &P; L.block = block; L.nqb = L.nkb = B.nb;
    L.list = attn__bb_list; L.list_ctx = &B; L.list_ints = 3 * (size_t)B.nb;
    L.list_max = (size_t)B.nb + (size_t)B.r;
    L.rows_q = c->d->seqlens_q;
    if ((s = attn__bsr_plan(&L, &bytes)) != ATTN_OK) return s;
    /* padded keys: a row of n zeros then n penalties, read from n - seqlens_k[b] on */
    pad_floats = c->d->seqlens_k ? 2 * (size_t)c->q.seq : 0;
    if (!attn__add_size(bytes, pad_floats * sizeof(float), &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    if (pad_floats) {
        float *row = (float *)(void *)w.base + (size_t)P.n_threads * L.ws_floats;
        for (i = 0; i < 2 * (size_t)c->q.seq; ++i) row[i] = i < (size_t)c->q.seq ? 0.0f : ATTN__BB_PAD_PENALTY;
        L.pad_row = row; L.rows_k = c->d->seqlens_k;
    }
    attn__bsr_run(c->d, &L, (float *)(void *)w.base);
    attn__ws_release(&w);
    return ATTN_OK;
}
static const attn__mech attn__mech_bigbird = { attn__bigbird_forward, NULL, NULL, NULL, NULL };

ATTNDEF attn_status attn_bigbird_random_table(const attn_desc *desc, int heads, int seq, int *table) {
    attn_status s;
    int block, r, nb, h, i, *a;
    if (!desc || !table) return ATTN_ERR_BIGBIRD_NULL_TABLE;
    if (heads < 1 || seq < 1) return ATTN_ERR_BIGBIRD_SHAPE;
    if ((s = attn__bb_params(&desc->bigbird, seq, &block, &r)) != ATTN_OK) return s;
    nb = seq / block;
    if (nb < 3 || r == 0) return ATTN_OK;
    if (desc->bigbird.multiplicity == ATTN_BIGBIRD_HF_EVAL) {   /* HF's eval mode: all block 0 */
        memset(table, 0, sizeof(int) * (size_t)heads * (size_t)(nb - 2) * (size_t)r);
        return ATTN_OK;
    }
    if (!(a = (int *)attn__alloc(sizeof(int) * (size_t)nb))) return ATTN_ERR_OUT_OF_MEMORY;
    for (h = 0; h < heads; ++h)
        for (i = 1; i <= nb - 2; ++i)
            attn__bb_row(desc->bigbird.seed, nb, r, h, i, a, table + ((size_t)h * (size_t)(nb - 2) + (size_t)(i - 1)) * (size_t)r, r);
    attn__free(a);
    return ATTN_OK;
}

/* ---- ATTN_LSH (Reformer) ------------------------------------------------------------------
   One task per (batch, head), each on its own per-thread scratch: the head's q (scaled), k and
   v rows in fp32, every round's buckets by dot products with the rotation columns (vector
   layer), a stable counting sort per round into the sorted axis, then chunk by chunk each
   chunk's keys (its own and the previous chunk's, 2 * bucket_size) gathered into a block,
   the chunk's queries (up to ATTN__BQ at a time) transposed into lanes, their scores on the
   exact core's Q.K^T tile kernel, the HF masks and a per-lane softmax, P.V on its P.V tile
   kernel, each query's round result merged into its position across rounds by the logsumexp
   rule in sorted-axis order. */
/* One block of shared-QK attention on the exact core's tiles, for ATTN_LSH's chunks and
   ATTN_ROUTING's windows: nk keys gathered in Kc [nk][D] / Vc [nk][Dv] (positions kpos) and up
   to ATTN__BQ queries (positions qpos, rows of Q [.][D]) in lanes. A key after its query
   (causal) gets the logit `masked`, the query's own key `self`; then per query lane r: mx[r]
   (its largest logit), sum[r] = sum_j exp(s_j - mx) and O[r] = sum_j exp(s_j - mx) v_j (not
   normalised). QT [D][BQ] and S [max(BK, nk)][BQ] are 64-byte aligned scratch; O [BQ][Dv]. */
static void attn__sqk_block(const attn__isa *isa, const float *Q, int D, const int *qpos, int nq, const float *Kc,
                            const float *Vc, int Dv, const int *kpos, int nk, int causal, float masked, float self,
                            float *QT, float *S, float *O, float *mx, float *sum) {
    const int lanes = (int)attn__round16((size_t)nq);
    int e, j, u, k0;
    for (e = 0; e < D; ++e)
        for (j = 0; j < lanes; ++j) QT[(size_t)e * ATTN__BQ + j] = j < nq ? Q[(size_t)qpos[j] * D + e] : 0.0f;
    for (k0 = 0; k0 < nk; k0 += ATTN__BK)
        isa->qk(Kc + (size_t)k0 * D, D, ATTN__MIN(ATTN__BK, nk - k0), QT, lanes, D, S + (size_t)k0 * ATTN__BQ);
    for (j = 0; j < ATTN__BQ; ++j) { mx[j] = -INFINITY; sum[j] = 0.0f; }   /* sum is pv's alpha: 0 past nq */
    for (u = 0; u < nk; ++u) {             /* branch-free, so the compiler may vectorise it */
        const int ku = kpos[u], cut = causal ? ku : INT_MIN;   /* masked where cut > the query */
        float *su = S + (size_t)u * ATTN__BQ;
        for (j = 0; j < nq; ++j) {
            float x = cut > qpos[j] ? masked : su[j];
            x = ku == qpos[j] ? self : x;
            su[j] = x;
            mx[j] = mx[j] > x ? mx[j] : x;   /* NaN in x makes mx NaN: it propagates */
        }
    }
    for (u = 0; u < nk; ++u) {             /* exp(s - max) per lane on the SIMD exp, then the sums */
        float *su = S + (size_t)u * ATTN__BQ;
        for (j = 0; j < nq; ++j) su[j] -= mx[j];
        (void)isa->exp_sum(su, su, 0.0f, nq);
        for (j = 0; j < nq; ++j) sum[j] += su[j];
    }
    memset(O, 0, sizeof(float) * (size_t)ATTN__BQ * (size_t)Dv);
    isa->pv(S, nk, nq, Vc, Dv, Dv, sum /* finite: O is 0 */, O, (size_t)Dv);
}

typedef struct attn__lsh {
    const attn__problem *P;
    int n, c, nb, nh;            /* seq, bucket_size (chunk), n_buckets (all factors), n_hashes */
    int cols, nf, f[4];          /* rotation columns; the bucket factors (one when not factorised) */
    const float *rot;            /* given rotations, or NULL (drawn) */
    int layout;                  /* rot's attn_lsh_layout */
    int hf_merge;                /* weights exp(lse_r - fl32(L)) rather than normalised */
    const int *lens;             /* [batch] valid lengths, or NULL */
    unsigned long long seed;
    const attn__isa *isa;
    float *ws;
    size_t ws_floats;            /* per thread: floats (int arrays counted as floats) */
} attn__lsh;

static float attn__lsh_normal(unsigned long long seed, uint64_t idx) {
    const uint64_t z = attn__mix64((uint64_t)seed + 0x9E3779B97F4A7C15ull * (1u + idx));
    const double u1 = ((double)(z >> 32) + 0.5) / 4294967296.0, u2 = ((double)(z & 0xFFFFFFFFu) + 0.5) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2));
}

/* ATTN_LSH's resolved parameters: chunk, buckets (all factors), rounds, rotation columns and the
   factors (one, n_buckets, when not factorised). */
typedef struct attn__lsh_cfg { int c, nb, nh, cols, nf, f[4]; } attn__lsh_cfg;

static attn_status attn__lsh_params(const attn_lsh_params *p, int seq, attn__lsh_cfg *g) {
    int t;
    memset(g, 0, sizeof *g);
    g->c = p->bucket_size ? p->bucket_size : 64;
    if (p->bucket_size < 0 || seq % g->c != 0) return ATTN_ERR_LSH_BUCKET_SIZE;
    if (p->rotations_layout != ATTN_LSH_ROT_ATTN && p->rotations_layout != ATTN_LSH_ROT_HF) return ATTN_ERR_LSH_LAYOUT;
    if (p->hf_merge != 0 && p->hf_merge != 1) return ATTN_ERR_LSH_HF_MERGE;
    if (p->n_buckets && (p->n_buckets < 2 || p->n_buckets % 2 != 0)) return ATTN_ERR_LSH_BUCKETS;
    g->nf = 0; g->nb = 1; g->cols = 0;
    for (t = 0; t < 4; ++t) {            /* factors: even >= 2, then zeros; product <= 2^24 */
        const int f = p->bucket_factors[t];
        if (f == 0) continue;
        if (f < 2 || f % 2 != 0 || g->nf != t || p->n_buckets || f > (1 << 24) / g->nb) return ATTN_ERR_LSH_FACTORS;
        g->f[g->nf++] = f; g->nb *= f; g->cols += f / 2;
    }
    if (!g->nf) {
        if (p->n_buckets) g->nb = p->n_buckets;
        else {                           /* 2^floor(log2(2 (n / c))), as HF's _set_num_buckets */
            const long long t2 = 2 * (long long)(seq / g->c);
            g->nb = 2;
            while (2 * (long long)g->nb <= t2) g->nb *= 2;
        }
        g->nf = 1; g->f[0] = g->nb; g->cols = g->nb / 2;
    }
    if (p->n_hashes < 0 || (long long)(p->n_hashes ? p->n_hashes : 1) * seq > INT_MAX) return ATTN_ERR_LSH_HASHES;
    g->nh = p->n_hashes ? p->n_hashes : 1;
    return ATTN_OK;
}

/* Index of rotation element (h, round r, dim e, column j) in the caller's layout. */
static size_t attn__lsh_rot_index(int layout, int nh, int D, int cols, int h, int r, int e, int j) {
    return layout == ATTN_LSH_ROT_HF ? (((size_t)h * D + e) * nh + r) * cols + j : (((size_t)h * nh + r) * D + e) * cols + j;
}

static size_t attn__lsh_ws_floats(int n, int D, int Dv, int c, int nb, int nh) {
    /* floats: RT (= the queries' QT) [D][BQ], S [max(BK, 2c)][BQ], Q, K [n][D], V, acc [n][Dv],
       m, l, hi, lo [n], the chunk's keys Kc [2c][D] and values Vc [2c][Dv], O [BQ][Dv], mx,
       sum [BQ]; ints: order [nh*n], bucket, arg_hi, arg_lo [n], counts [nb+2], the chunk's key
       ids [2c] */
    const size_t keys = 2 * (size_t)c, srows = ATTN__MAX((size_t)ATTN__BK, keys);
    return attn__round16((size_t)D * ATTN__BQ + srows * ATTN__BQ + (size_t)n * (2 * (size_t)D + 2 * (size_t)Dv + 4) +
                         keys * ((size_t)D + (size_t)Dv) + (size_t)ATTN__BQ * ((size_t)Dv + 2) +
                         (size_t)nh * n + 3 * (size_t)n + (size_t)nb + 2 + keys);
}

static void attn__lsh_task(void *ctx, int task, int thread) {
    const attn__lsh *X = (const attn__lsh *)ctx;
    const attn__problem *P = X->P;
    const attn__isa *isa = X->isa;
    const int H = P->q.heads, b = task / H, h = task % H, n = X->n, D = P->q.dim, Dv = P->v.dim, c = X->c;
    const int cols = X->cols, N = X->nh * n, nchunks = N / c, L = X->lens ? X->lens[b] : n;
    const int keys = 2 * c;
    float *RT = X->ws + (size_t)thread * X->ws_floats, *S = RT + (size_t)D * ATTN__BQ;   /* 64-byte aligned */
    float *Q = S + (size_t)ATTN__MAX(ATTN__BK, keys) * ATTN__BQ, *K = Q + (size_t)n * D, *V = K + (size_t)n * D;
    float *acc = V + (size_t)n * Dv, *m = acc + (size_t)n * Dv, *l = m + n, *hi = l + n, *lo = hi + n;
    float *Kc = lo + n, *Vc = Kc + (size_t)keys * D, *O = Vc + (size_t)keys * Dv, *mx = O + (size_t)ATTN__BQ * Dv;
    float *sum = mx + ATTN__BQ;
    int *order = (int *)(void *)(sum + ATTN__BQ), *bucket = order + N, *arg_hi = bucket + n, *arg_lo = arg_hi + n;
    int *cnt = arg_lo + n;
    int *kid = cnt + (size_t)X->nb + 2;
    int i, j, r, u, e, ch;
    for (i = 0; i < n; ++i) {                  /* padding rows (i >= L) are never read */
        if (i < L) {
            isa->load(attn__at(&P->q, b, i, h), P->q.dtype, Q + (size_t)i * D, D, P->scale);
            isa->load(attn__at(&P->k, b, i, h), P->k.dtype, K + (size_t)i * D, D, 1.0f);
            isa->load(attn__at(&P->v, b, i, h), P->v.dtype, V + (size_t)i * Dv, Dv, 1.0f);
        }
        m[i] = -INFINITY; l[i] = 0.0f;
        memset(acc + (size_t)i * Dv, 0, sizeof(float) * (size_t)Dv);
    }
    for (r = 0; r < X->nh; ++r) {             /* buckets on the raw keys, then a stable sort */
        int t, off = 0, mult = 1;
        for (i = 0; i < n; ++i) bucket[i] = i >= L ? X->nb : 0;   /* padding: the extra bucket nb */
        for (t = 0; t < X->nf; ++t) {         /* factor t: columns [off, off + f_t/2) */
            /* x R in blocks of ATTN__BQ rotation columns x ATTN__BK keys on the exact core's Q.K^T
               kernel (RT = the block of R, [D][BQ], zero lanes past the factor's columns); running
               first max and first min per key, so the argmax of [x R, -x R] is the first maximum */
            const int fh = X->f[t] / 2;
            int c0;
            for (i = 0; i < L; ++i) { hi[i] = -INFINITY; lo[i] = INFINITY; arg_hi[i] = 0; arg_lo[i] = 0; }
            for (c0 = 0; c0 < fh; c0 += ATTN__BQ) {
                const int nl = ATTN__MIN(ATTN__BQ, fh - c0), lanes = (int)attn__round16((size_t)nl);
                int i0;
                for (e = 0; e < D; ++e)
                    for (j = 0; j < ATTN__BQ; ++j) {
                        const uint64_t idx = (((uint64_t)h * X->nh + r) * D + e) * cols + off + c0 + j;
                        RT[(size_t)e * ATTN__BQ + j] = j >= nl ? 0.0f
                            : X->rot ? X->rot[attn__lsh_rot_index(X->layout, X->nh, D, cols, h, r, e, off + c0 + j)]
                            : attn__lsh_normal(X->seed, idx);
                    }
                for (i0 = 0; i0 < L; i0 += ATTN__BK) {
                    const int nk = ATTN__MIN(ATTN__BK, L - i0);
                    isa->qk(K + (size_t)i0 * D, D, nk, RT, lanes, D, S);
                    for (i = 0; i < nk; ++i) {
                        const float *row = S + (size_t)i * ATTN__BQ;
                        for (j = 0; j < nl; ++j) {
                            if (row[j] > hi[i0 + i]) { hi[i0 + i] = row[j]; arg_hi[i0 + i] = c0 + j; }
                            if (row[j] < lo[i0 + i]) { lo[i0 + i] = row[j]; arg_lo[i0 + i] = c0 + j; }
                        }
                    }
                }
            }
            for (i = 0; i < L; ++i) bucket[i] += mult * (-lo[i] > hi[i] ? fh + arg_lo[i] : arg_hi[i]);
            off += fh; mult *= X->f[t];
        }
        memset(cnt, 0, sizeof(int) * ((size_t)X->nb + 2));   /* the pad bucket nb sorts last */
        for (i = 0; i < n; ++i) cnt[bucket[i] + 1]++;
        for (j = 0; j <= X->nb; ++j) cnt[j + 1] += cnt[j];
        for (i = 0; i < n; ++i) order[(size_t)r * n + cnt[bucket[i]]++] = i;
    }
    for (i = 0; i < L; ++i) {                  /* keys: n(k) = k / sqrt(mean(k^2) + 1e-6) */
        const float ss = isa->dot(K + (size_t)i * D, K + (size_t)i * D, D);
        isa->scal(K + (size_t)i * D, 1.0f / sqrtf(ss / (float)D + 1e-6f), D);
    }
    for (ch = 0; ch < nchunks; ++ch) {
        /* a chunk lies in one round, whose padding sorts last: its valid entries are a prefix */
        const int prev = (ch + nchunks - 1) % nchunks, *qid = order + (size_t)ch * c;
        int q0, nq = 0, nk = 0;
        while (nq < c && qid[nq] < L) ++nq;
        if (nq == 0) continue;                /* padding queries: out 0 */
        for (u = 0; u < keys; ++u) {          /* the previous chunk's valid keys, then this chunk's */
            const int id = order[(size_t)(u < c ? prev : ch) * c + u % c];
            if (id >= L) continue;            /* a padding key: logit -1e9, weight exactly 0 */
            kid[nk] = id;
            memcpy(Kc + (size_t)nk * D, K + (size_t)id * D, sizeof(float) * (size_t)D);
            memcpy(Vc + (size_t)nk * Dv, V + (size_t)id * Dv, sizeof(float) * (size_t)Dv);
            ++nk;
        }
        for (q0 = 0; q0 < nq; q0 += ATTN__BQ) {   /* queries in lanes, ATTN__BQ at a time */
            const int nl = ATTN__MIN(ATTN__BQ, nq - q0);
            attn__sqk_block(isa, Q, D, qid + q0, nl, Kc, Vc, Dv, kid, nk, P->causal, -1e9f, -1e5f, RT, S, O, mx, sum);
            for (j = 0; j < nl; ++j) {        /* merge (O_j / sum_j, lse_r) into position p */
                const int p = qid[q0 + j];
                const float lse_r = mx[j] + logf(sum[j]);
                float o_scale;
                if (lse_r > m[p]) {
                    const float a = m[p] == -INFINITY ? 0.0f : expf(m[p] - lse_r);
                    isa->scal(acc + (size_t)p * Dv, a, Dv);
                    l[p] = l[p] * a + 1.0f;
                    m[p] = lse_r;
                    o_scale = 1.0f / sum[j];
                } else {
                    const float w = expf(lse_r - m[p]);
                    l[p] += w;
                    o_scale = w / sum[j];
                }
                isa->axpy(acc + (size_t)p * Dv, o_scale, O + (size_t)j * Dv, Dv);
            }
        }
    }
    for (i = 0; i < n; ++i) {                  /* padding rows: acc 0, out 0, lse -inf */
        const float lse_i = m[i] + logf(l[i]);  /* acc = sum_r o_r exp(lse_r - m) */
        const float w = i >= L ? 0.0f : X->hf_merge ? expf(m[i] - lse_i) : 1.0f / l[i];
        isa->store(attn__at(&P->out, b, i, h), P->out.dtype, acc + (size_t)i * Dv, Dv, w);
        if (P->lse) P->lse[((size_t)b * H + h) * n + i] = i < L ? lse_i : -INFINITY;
    }
}

/* The checks the shared-QK kinds (ATTN_LSH, ATTN_ROUTING) share: the tensor contract, scale,
   causal, threads, no other mask (padding: seqlens_q/_k in range, when the kind takes them),
   self-attention with as many KV heads as query heads. */
static attn_status attn__shared_qk_check(const attn__call *c, attn__problem *P, int padding) {
    const attn_desc *d = c->d;
    attn_status s;
    if ((s = attn__check_qkv(&c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P->q, &P->k, &P->v, &P->out)) != ATTN_OK)
        return s;
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (d->causal != 0 && d->causal != 1) return ATTN_ERR_CAUSAL;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (padding) {
        attn_desc e = *d;
        e.seqlens_q = e.seqlens_k = NULL;
        if (!attn__sparse_plain(&e) || d->softcap != 0.0f) return ATTN_ERR_SPARSE_MASKS;
    } else if (!attn__sparse_plain(d) || d->softcap != 0.0f) return ATTN_ERR_SPARSE_MASKS;
    if (c->k.seq != c->q.seq) return ATTN_ERR_SPARSE_SELF;
    if (c->k.heads != c->q.heads) return ATTN_ERR_LSH_HEADS;
    if (d->seqlens_q && !attn__lengths_ok(d->seqlens_q, c->q.batch, c->q.seq)) return ATTN_ERR_SEQLENS_Q;
    if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, c->q.batch, c->k.seq)) return ATTN_ERR_SEQLENS_K;
    return ATTN_OK;
}

static attn_status attn__lsh_forward(const attn__call *c) {
    const attn_desc *d = c->d;
    attn__problem P;
    attn__lsh X;
    attn__lsh_cfg g;
    size_t bytes, nrot;
    attn__ws w;
    attn_status s;
    int tasks, nt;
    memset(&P, 0, sizeof P);
    memset(&X, 0, sizeof X);
    if ((s = attn__shared_qk_check(c, &P, 1)) != ATTN_OK) return s;
    if (d->seqlens_q && d->seqlens_k) {        /* one padding mask: equal when both are given */
        int b;
        for (b = 0; b < c->q.batch; ++b) if (d->seqlens_q[b] != d->seqlens_k[b]) return ATTN_ERR_LSH_SEQLENS;
    }
    if ((s = attn__lsh_params(&d->lsh, c->q.seq, &g)) != ATTN_OK) return s;
    if (!attn__mul_size((size_t)c->q.heads * (size_t)g.nh, (size_t)c->q.dim * (size_t)g.cols, &nrot)) return ATTN_ERR_OVERFLOW;
    X.c = g.c; X.nb = g.nb; X.nh = g.nh; X.cols = g.cols; X.nf = g.nf;
    memcpy(X.f, g.f, sizeof X.f);
    if (d->lsh.rotations) {
        size_t i;
        for (i = 0; i < nrot; ++i) if (!isfinite(d->lsh.rotations[i])) return ATTN_ERR_LSH_ROTATIONS;
    }
    P.scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)c->q.dim);
    P.causal = d->causal;
    P.lse = c->lse;
    P.n_threads = attn__resolve_threads(d);
    X.P = &P; X.n = c->q.seq; X.rot = d->lsh.rotations; X.layout = d->lsh.rotations_layout; X.seed = d->lsh.seed;
    X.hf_merge = d->lsh.hf_merge;
    X.lens = d->seqlens_k ? d->seqlens_k : d->seqlens_q; X.isa = attn__pick_isa();
    X.ws_floats = attn__lsh_ws_floats(X.n, c->q.dim, c->v.dim, X.c, X.nb, X.nh);
    if (!attn__tasks((size_t)c->q.batch, (size_t)c->q.heads, 1, &tasks)) return ATTN_ERR_OVERFLOW;
    nt = ATTN__MIN(P.n_threads, tasks);
    if (!attn__mul_size(X.ws_floats, (size_t)nt * sizeof(float), &bytes) || !attn__add_size(bytes, ATTN__ALIGN, &bytes))
        return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    X.ws = (float *)(void *)w.base;
    attn__parallel_for(d, tasks, nt, attn__lsh_task, &X);
    attn__ws_release(&w);
    return ATTN_OK;
}
static const attn__mech attn__mech_lsh = { attn__lsh_forward, NULL, NULL, NULL, NULL };

ATTNDEF attn_status attn_lsh_rotations(const attn_desc *desc, int heads, int seq, int dim, float *rotations) {
    attn_status s;
    attn__lsh_cfg g;
    int h, r, e, j;
    size_t n, idx = 0;
    if (!desc || !rotations) return ATTN_ERR_LSH_NULL;
    if (heads < 1 || seq < 1 || dim < 1) return ATTN_ERR_LSH_SHAPE;
    if ((s = attn__lsh_params(&desc->lsh, seq, &g)) != ATTN_OK) return s;
    if (!attn__mul_size((size_t)heads * (size_t)g.nh, (size_t)dim * (size_t)g.cols, &n)) return ATTN_ERR_OVERFLOW;
    for (h = 0; h < heads; ++h)              /* idx counts in ATTN_LSH_ROT_ATTN order */
        for (r = 0; r < g.nh; ++r)
            for (e = 0; e < dim; ++e)
                for (j = 0; j < g.cols; ++j, ++idx)
                    rotations[attn__lsh_rot_index(desc->lsh.rotations_layout, g.nh, dim, g.cols, h, r, e, j)] =
                        attn__lsh_normal(desc->lsh.seed, (uint64_t)idx);
    return ATTN_OK;
}

/* ---- ATTN_ROUTING (Routing Transformer) ---------------------------------------------------
   One task per (batch, head): the head's rows in fp32; the routing scores of ATTN__BQ clusters
   at a time, one vector-layer dot product per (token, cluster) (not the Q.K^T tile kernel, whose
   rounding depends on a row's place in its tile: identical rows must score identically on every
   ISA for the tie rule to hold), streamed into one heap per cluster that keeps its top w
   (O(n log w)); each window's attention on the Q.K^T and P.V tile kernels
   (keys gathered into a block, queries in lanes, as ATTN_LSH's chunks); per token the sum of
   its windows' outputs and their count. A task's sequence is one batch entry, or one packed
   segment (cu_seqlens), of L valid tokens; its padding takes no part and gets rows of 0. */
typedef struct attn__rt {
    const attn__problem *P;
    int n, nc, w, window;        /* n = q.seq, w = min(window, n) sizes the scratch */
    const int *lens, *cu;        /* valid lengths [batch] or segment offsets, or NULL */
    int units, normk, sep;       /* sequences; normalize_keys; separate_qk */
    float ceps;                  /* count_eps */
    const float *cen;
    const attn__isa *isa;
    float *ws;
    size_t ws_floats;
} attn__rt;

typedef struct attn__rt_ent { float s; int pos; } attn__rt_ent;
static int attn__rt_by_pos(const void *a, const void *b) {
    const attn__rt_ent *x = (const attn__rt_ent *)a, *y = (const attn__rt_ent *)b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
/* a ranks below b: lower score, or the same score at a later position */
static int attn__rt_worse(attn__rt_ent a, attn__rt_ent b) { return a.s < b.s || (a.s == b.s && a.pos > b.pos); }

/* Offers e to the heap of the w best entries (the worst on top); *n entries so far. */
static void attn__rt_offer(attn__rt_ent *hp, int *n, int w, attn__rt_ent e) {
    int i, c;
    if (*n < w) {
        for (i = (*n)++; i > 0 && attn__rt_worse(e, hp[(i - 1) / 2]); i = (i - 1) / 2) hp[i] = hp[(i - 1) / 2];
        hp[i] = e;
        return;
    }
    if (!attn__rt_worse(hp[0], e)) return;
    for (i = 0; (c = 2 * i + 1) < w; i = c) {
        if (c + 1 < w && attn__rt_worse(hp[c + 1], hp[c])) ++c;
        if (!attn__rt_worse(hp[c], e)) break;
        hp[i] = hp[c];
    }
    hp[i] = e;
}

/* mu / |mu| into dst (zeros for a zero row) */
static void attn__unit(const attn__isa *isa, const float *src, float *dst, int D) {
    const float nn = isa->dot(src, src, D);
    memcpy(dst, src, sizeof(float) * (size_t)D);
    isa->scal(dst, nn > 0.0f ? 1.0f / sqrtf(nn) : 0.0f, D);
}

static size_t attn__rt_ws_floats(int n, int D, int Dv, int w, int sep) {
    /* floats: RT [BQ][D] (unit centroids), S [max(BK, w)][BQ], QT [D][BQ] (aligned, first), Q, K, X [n][D], V,
       acc [n][Dv], a row [D], a window's keys Kw [w][D] and values Vw [w][Dv], O [BQ][Dv], mx,
       sum [BQ]; ints: count [n], heap sizes [BQ], a window's positions [w]; heaps [BQ][w] entries (2 each);
       separate_qk adds the unit queries [n][D], their heap sizes [BQ], the query window [w], the
       key ids [w] and the query heaps [BQ][w] */
    const size_t srows = ATTN__MAX((size_t)ATTN__BK, (size_t)w), m = sep ? 2 : 1;
    return attn__round16(2 * (size_t)D * ATTN__BQ + srows * ATTN__BQ + (size_t)n * ((2 + m) * (size_t)D + 2 * (size_t)Dv + 1) +
                         (size_t)D + (size_t)w * ((size_t)D + (size_t)Dv) + (size_t)ATTN__BQ * ((size_t)Dv + 2) +
                         m * (ATTN__BQ + (size_t)w) + (m - 1) * (size_t)w + 2 * m * (size_t)ATTN__BQ * w);
}

static void attn__rt_task(void *ctx, int task, int thread) {
    const attn__rt *R = (const attn__rt *)ctx;
    const attn__problem *P = R->P;
    const attn__isa *isa = R->isa;
    const int H = P->q.heads, u = task / H, h = task % H, D = P->q.dim, Dv = P->v.dim;
    const int b = R->cu ? 0 : u, off = R->cu ? R->cu[u] : 0;
    const int n = R->cu ? R->cu[u + 1] - off : R->lens ? R->lens[u] : R->n;     /* L: valid tokens */
    const int w = ATTN__MIN(R->window, n), pad_end = R->cu ? (u == R->units - 1 ? R->n : off + n) : R->n;
    float *RT = R->ws + (size_t)thread * R->ws_floats, *S = RT + (size_t)D * ATTN__BQ;   /* 64-byte aligned */
    float *QT = S + (size_t)ATTN__MAX(ATTN__BK, w) * ATTN__BQ, *Q = QT + (size_t)D * ATTN__BQ;
    float *K = Q + (size_t)n * D, *Xn = K + (size_t)n * D;
    float *V = Xn + (size_t)n * D, *acc = V + (size_t)n * Dv, *row = acc + (size_t)n * Dv, *Kw = row + D;
    float *Vw = Kw + (size_t)w * D, *O = Vw + (size_t)w * Dv, *mx = O + (size_t)ATTN__BQ * Dv, *sum = mx + ATTN__BQ;
    float *Xq = sum + ATTN__BQ;                       /* separate_qk: the unit queries [n][D] */
    int *cnt = (int *)(void *)(Xq + (R->sep ? (size_t)n * D : 0)), *hn = cnt + n, *wpos = hn + ATTN__BQ;
    int *hnq = wpos + w, *qwpos = hnq + (R->sep ? ATTN__BQ : 0), *kid = qwpos + (R->sep ? w : 0);
    attn__rt_ent *heaps = (attn__rt_ent *)(void *)(kid + (R->sep ? w : 0)), *qheaps = heaps + (size_t)ATTN__BQ * w;
    int i, c0, cl, s, t;
    for (i = 0; i < n; ++i) {                        /* local row i is position off + i */
        if (R->sep) {                                 /* the query's own routing row */
            isa->load(attn__at(&P->q, b, off + i, h), P->q.dtype, row, D, 1.0f);
            attn__unit(isa, row, Xq + (size_t)i * D, D);
        }
        isa->load(attn__at(&P->q, b, off + i, h), P->q.dtype, Q + (size_t)i * D, D, P->scale);
        isa->load(attn__at(&P->k, b, off + i, h), P->k.dtype, K + (size_t)i * D, D, 1.0f);
        isa->load(attn__at(&P->v, b, off + i, h), P->v.dtype, V + (size_t)i * Dv, Dv, 1.0f);
        attn__unit(isa, K + (size_t)i * D, Xn + (size_t)i * D, D);
        if (R->normk) memcpy(K + (size_t)i * D, Xn + (size_t)i * D, sizeof(float) * (size_t)D);
        memset(acc + (size_t)i * Dv, 0, sizeof(float) * (size_t)Dv);
        cnt[i] = 0;
    }
    for (c0 = 0; n > 0 && c0 < R->nc; c0 += ATTN__BQ) {      /* ATTN__BQ clusters at a time */
        const int ncb = ATTN__MIN(ATTN__BQ, R->nc - c0);
        for (cl = 0; cl < ncb; ++cl) {               /* the unit centroids, row-major in RT */
            attn__unit(isa, R->cen + ((size_t)h * R->nc + c0 + cl) * D, RT + (size_t)cl * D, D);
            hn[cl] = 0;
            if (R->sep) hnq[cl] = 0;
        }
        for (i = 0; i < n; ++i)                      /* routing scores: one dot per (token, cluster) */
            for (cl = 0; cl < ncb; ++cl) {
                attn__rt_ent en;
                en.s = isa->dot(Xn + (size_t)i * D, RT + (size_t)cl * D, D); en.pos = i;
                attn__rt_offer(heaps + (size_t)cl * w, &hn[cl], w, en);
                if (R->sep) {
                    en.s = isa->dot(Xq + (size_t)i * D, RT + (size_t)cl * D, D);
                    attn__rt_offer(qheaps + (size_t)cl * w, &hnq[cl], w, en);
                }
            }
        for (cl = 0; cl < ncb; ++cl) {               /* each window, in position order */
            attn__rt_ent *ent = heaps + (size_t)cl * w;
            const int *qw = wpos, *kw = wpos;         /* query and key positions */
            int q0;
            qsort(ent, (size_t)w, sizeof *ent, attn__rt_by_pos);
            for (t = 0; t < w; ++t) {                /* the window's keys and values in a block */
                wpos[t] = ent[t].pos;
                memcpy(Kw + (size_t)t * D, K + (size_t)ent[t].pos * D, sizeof(float) * (size_t)D);
                memcpy(Vw + (size_t)t * Dv, V + (size_t)ent[t].pos * Dv, sizeof(float) * (size_t)Dv);
            }
            if (R->sep) {   /* the queries' own window; key ids -1 - pos never equal a query's
                               position, so no key is the query's own (causal is 0 here) */
                attn__rt_ent *qe = qheaps + (size_t)cl * w;
                qsort(qe, (size_t)w, sizeof *qe, attn__rt_by_pos);
                for (t = 0; t < w; ++t) { qwpos[t] = qe[t].pos; kid[t] = -1 - wpos[t]; }
                qw = qwpos; kw = kid;
            }
            for (q0 = 0; q0 < w; q0 += ATTN__BQ) {   /* its queries in lanes, on the tile kernels */
                const int nl = ATTN__MIN(ATTN__BQ, w - q0);
                attn__sqk_block(isa, Q, D, qw + q0, nl, Kw, Vw, Dv, kw, w, P->causal, -INFINITY, -5e4f, QT, S, O, mx, sum);
                for (s = 0; s < nl; ++s) {
                    const int p = qw[q0 + s];
                    isa->axpy(acc + (size_t)p * Dv, 1.0f / sum[s], O + (size_t)s * Dv, Dv);
                    cnt[p]++;
                }
            }
        }
    }
    for (i = 0; i < n; ++i)
        isa->store(attn__at(&P->out, b, off + i, h), P->out.dtype, acc + (size_t)i * Dv, Dv,
                   cnt[i] ? 1.0f / ((float)cnt[i] + R->ceps) : 0.0f);
    memset(O, 0, sizeof(float) * (size_t)Dv);        /* padding rows (and rows past the last segment): 0 */
    for (i = off + n; i < pad_end; ++i) isa->store(attn__at(&P->out, b, i, h), P->out.dtype, O, Dv, 1.0f);
}

/* ATTN_ROUTING's padding, for the forward and attn_routing_update on a [batch, seq] input:
   lens (seqlens_k, else seqlens_q) or the packed offsets cu (cu_seqlens_k), NULL for none;
   units: the sequences. */
static attn_status attn__rt_lengths(const attn_desc *d, int batch, int seq, const int **lens, const int **cu, int *units) {
    int b;
    *lens = *cu = NULL; *units = batch;
    if (d->cu_seqlens_q || d->cu_seqlens_k) {
        if (!d->cu_seqlens_q || !d->cu_seqlens_k) return ATTN_ERR_CU_SEQLENS_PAIR;
        if (d->seqlens_q || d->seqlens_k) return ATTN_ERR_VARLEN_WITH_SEQLENS;
        if (d->varlen_batch < 1) return ATTN_ERR_VARLEN_BATCH;
        if (batch != 1) return ATTN_ERR_VARLEN_SHAPE;
        if (!attn__offsets_ok(d->cu_seqlens_q, d->varlen_batch, seq)) return ATTN_ERR_CU_SEQLENS_Q;
        if (!attn__offsets_ok(d->cu_seqlens_k, d->varlen_batch, seq)) return ATTN_ERR_CU_SEQLENS_K;
        for (b = 0; b <= d->varlen_batch; ++b) if (d->cu_seqlens_q[b] != d->cu_seqlens_k[b]) return ATTN_ERR_ROUTING_SEQLENS;
        *cu = d->cu_seqlens_k; *units = d->varlen_batch;
        return ATTN_OK;
    }
    if (d->varlen_batch != 0) return ATTN_ERR_VARLEN_BATCH;
    if (d->seqlens_q && !attn__lengths_ok(d->seqlens_q, batch, seq)) return ATTN_ERR_SEQLENS_Q;
    if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, batch, seq)) return ATTN_ERR_SEQLENS_K;
    if (d->seqlens_q && d->seqlens_k)
        for (b = 0; b < batch; ++b) if (d->seqlens_q[b] != d->seqlens_k[b]) return ATTN_ERR_ROUTING_SEQLENS;
    *lens = d->seqlens_k ? d->seqlens_k : d->seqlens_q;
    return ATTN_OK;
}

/* The checks ATTN_ROUTING's forward and attn_routing_update share: the routing parameters. */
static attn_status attn__rt_params(const attn_routing_params *p, int heads, int dim) {
    size_t n, i;
    if (!p->centroids) return ATTN_ERR_ROUTING_CENTROIDS;
    if (p->n_clusters < 1) return ATTN_ERR_ROUTING_CLUSTERS;
    if (p->window < 0) return ATTN_ERR_ROUTING_WINDOW;
    if ((p->normalize_keys != 0 && p->normalize_keys != 1) || (p->separate_qk != 0 && p->separate_qk != 1) ||
        !(p->count_eps >= 0.0f) || !isfinite(p->count_eps)) return ATTN_ERR_ROUTING_OPTIONS;
    if (!attn__mul_size((size_t)heads * (size_t)p->n_clusters, (size_t)dim, &n) || n > (size_t)PTRDIFF_MAX / sizeof(float))
        return ATTN_ERR_OVERFLOW;
    for (i = 0; i < n; ++i) if (!isfinite(p->centroids[i])) return ATTN_ERR_ROUTING_NONFINITE;
    return ATTN_OK;
}

static attn_status attn__routing_forward(const attn__call *c) {
    const attn_desc *d = c->d;
    attn__problem P;
    attn__rt R;
    size_t bytes;
    attn__ws w;
    attn_status s;
    int tasks, nt;
    attn_desc plain = *d;                   /* the shared checks see d without its padding */
    attn__call cp = *c;
    memset(&P, 0, sizeof P);
    memset(&R, 0, sizeof R);
    plain.seqlens_q = plain.seqlens_k = plain.cu_seqlens_q = plain.cu_seqlens_k = NULL; plain.varlen_batch = 0;
    cp.d = &plain;
    if ((s = attn__shared_qk_check(&cp, &P, 0)) != ATTN_OK) return s;
    if ((s = attn__rt_lengths(d, c->q.batch, c->q.seq, &R.lens, &R.cu, &R.units)) != ATTN_OK) return s;
    if ((s = attn__rt_params(&d->routing, c->q.heads, c->q.dim)) != ATTN_OK) return s;
    if (d->routing.separate_qk && d->causal) return ATTN_ERR_ROUTING_OPTIONS;
    if (c->lse) return ATTN_ERR_ROUTING_LSE;
    P.scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)c->q.dim);
    P.causal = d->causal;
    P.n_threads = attn__resolve_threads(d);
    R.P = &P; R.n = c->q.seq; R.nc = d->routing.n_clusters; R.cen = d->routing.centroids; R.isa = attn__pick_isa();
    R.window = d->routing.window ? d->routing.window : 64;
    R.w = ATTN__MIN(R.window, R.n);
    R.normk = d->routing.normalize_keys; R.ceps = d->routing.count_eps; R.sep = d->routing.separate_qk;
    R.ws_floats = attn__rt_ws_floats(R.n, c->q.dim, c->v.dim, R.w, R.sep);
    if (!attn__tasks((size_t)R.units, (size_t)c->q.heads, 1, &tasks)) return ATTN_ERR_OVERFLOW;
    nt = ATTN__MIN(P.n_threads, tasks);
    if (!attn__mul_size(R.ws_floats, (size_t)nt * sizeof(float), &bytes) || !attn__add_size(bytes, ATTN__ALIGN, &bytes))
        return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    R.ws = (float *)(void *)w.base;
    attn__parallel_for(d, tasks, nt, attn__rt_task, &R);
    attn__ws_release(&w);
    return ATTN_OK;
}
static const attn__mech attn__mech_routing = { attn__routing_forward, NULL, NULL, NULL, NULL };

ATTNDEF attn_status attn_routing_update(const attn_desc *desc, attn_tensor x, float decay, float *centroids) {
    attn__view xv;
    attn_status s;
    int C, D, H, h, b, i, c, e, best;
    double *sum, *mu;
    int *count;
    float bs, t;
    const attn__isa *isa = attn__pick_isa();
    float *xr;
    attn_routing_params prm;
    const int *lens, *cu;
    int units;
    if (!desc) return ATTN_ERR_NULL_DESC;
    prm = desc->routing; prm.centroids = centroids;
    if (!x.data) return ATTN_ERR_ROUTING_X;
    if (!attn__dtype_ok(x.dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(&x)) return ATTN_ERR_Q_SHAPE;
    if ((s = attn__make_view(&x, &xv)) != ATTN_OK) return s;
    if ((s = attn__rt_params(&prm, x.heads, x.dim)) != ATTN_OK) return s;
    if ((s = attn__rt_lengths(desc, x.batch, x.seq, &lens, &cu, &units)) != ATTN_OK) return s;
    if (!(decay >= 0.0f && decay < 1.0f)) return ATTN_ERR_ROUTING_DECAY;
    if (decay == 0.0f) decay = 0.999f;
    C = desc->routing.n_clusters; D = x.dim; H = x.heads;
    sum = (double *)attn__alloc(sizeof(double) * ((size_t)C * D + (size_t)C * D) + sizeof(int) * (size_t)C + sizeof(float) * 2 * (size_t)D);
    if (!sum) return ATTN_ERR_OUT_OF_MEMORY;
    mu = sum + (size_t)C * D;
    count = (int *)(void *)(mu + (size_t)C * D);
    xr = (float *)(void *)(count + C);
    for (h = 0; h < H; ++h) {
        float *cen = centroids + (size_t)h * C * D;
        memset(sum, 0, sizeof(double) * (size_t)C * D);
        memset(count, 0, sizeof(int) * (size_t)C);
        for (c = 0; c < C; ++c) {                  /* unit centroids, in double */
            double nn = 0;
            for (e = 0; e < D; ++e) nn += (double)cen[(size_t)c * D + e] * (double)cen[(size_t)c * D + e];
            for (e = 0; e < D; ++e) mu[(size_t)c * D + e] = nn > 0 ? (double)cen[(size_t)c * D + e] / sqrt(nn) : 0.0;
        }
        for (b = 0; b < x.batch; ++b)
            for (i = 0; i < (cu ? cu[units] : lens ? lens[b] : x.seq); ++i) {   /* the valid tokens */
                double nn = 0;
                isa->load(attn__at(&xv, b, i, h), x.dtype, xr, D, 1.0f);
                for (e = 0; e < D; ++e) nn += (double)xr[e] * (double)xr[e];
                nn = nn > 0 ? 1.0 / sqrt(nn) : 0.0;
                best = 0; bs = -INFINITY;
                for (c = 0; c < C; ++c) {
                    double dt = 0;
                    for (e = 0; e < D; ++e) dt += (double)xr[e] * nn * mu[(size_t)c * D + e];
                    t = (float)dt;
                    if (t > bs) { bs = t; best = c; }
                }
                for (e = 0; e < D; ++e) sum[(size_t)best * D + e] += (double)xr[e] * nn;
                count[best]++;
            }
        for (c = 0; c < C; ++c) {
            double nn = 0;
            if (!count[c]) continue;              /* empty cluster: keeps its centroid */
            for (e = 0; e < D; ++e) nn += sum[(size_t)c * D + e] * sum[(size_t)c * D + e];
            nn = nn > 0 ? 1.0 / sqrt(nn) : 0.0;    /* |m| = |sum| / count: m / |m| = sum / |sum| */
            for (e = 0; e < D; ++e)
                cen[(size_t)c * D + e] = (float)((double)decay * (double)cen[(size_t)c * D + e] + (1.0 - (double)decay) * sum[(size_t)c * D + e] * nn);
        }
    }
    attn__free(sum);
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.14 linear and kernel attention
   --------------------------------------------------------------------------------------- */
/* ---- ATTN_LINEAR: linear attention, phi(x) = elu(x) + 1 ----------------------------------
   One task per (sequence, KV head) carries the state (S [D][Dv], z [D]) of that head's keys
   and serves the g = Hq/Hkv query heads that read it, stacking their rows in one GEMM:
     non-causal: absorb every valid key into (S, z), then out = phi(Q) S / (phi(Q) z + eps);
     causal: query rows in chunks of ATTN__LIN_ROWS; before a chunk, absorb the keys every row
       of it sees; inside it, the dense masked product A = phi(Q) phi(K)^T over the chunk's own
       keys adds A V and A's row sums; then those keys are absorbed too.
   attn_step is the causal form with (S, z) read from and written back to the attn_state.
   Every product is a single-thread GEMM (attn__sgemm_1t) on the task's workspace slice, and
   each output row is computed by one task in one order: results do not depend on threads. */
#define ATTN__LIN_ROWS 64          /* query rows (and keys) per causal chunk */
#define ATTN__LIN_KEYS 256         /* keys per absorbing GEMM (longer k, fewer C passes) */
#define ATTN__LIN_FEW 4            /* at most this many rows (or keys): vector-layer products instead
                                      of GEMMs, whose packing dominated one-token steps (B 1, H 8,
                                      D 64, one thread: 90 -> 25 us per ATTN_LINEAR step) */

typedef struct attn__lin {
    const attn_desc *d;
    const attn__isa *isa;
    attn__view q, k, v, out;
    const int *seqlens_q, *seqlens_k;
    int causal, groups, D, Dv, n_threads, n_tasks;
    int F;                        /* features per q/k row: D (ATTN_LINEAR), 2 D (ATTN_COSFORMER) */
    int cos;                      /* ATTN_COSFORMER: [relu sin, relu cos] features, clamped denominator */
    int M;                        /* ATTN_COSFORMER: max_len; 0: max(Lq, Lk) of each sequence */
    long long pos0;               /* 0-based position of the call's first token (attn_step: state pos) */
    float eps;
    int perf;                     /* ATTN_PERFORMER: 1 softmax kernel (positive exp features), 2 ReLU kernel */
    const float *W;               /* ATTN_PERFORMER: the projection [F][D] (caller's, drawn, or the state's) */
    float pnorm, hmul;            /* ATTN_PERFORMER: d^-1/4 (ReLU: 1 unless relu_normalize) and 1 / (2 sqrt d) */
    size_t shared_floats;         /* ATTN_PERFORMER: drawn W and the draw's scratch, before the slices */
    float *state;                 /* attn_step: [B][Hkv][F*Dv + F]; NULL: per-call state */
    float *ws;                    /* n_threads slices of ws_per floats */
    size_t ws_per, gemm_floats;
} attn__lin;

/* A sequence's valid length: seqlens[b], or the tensor's length when there are none. */
static int attn__lin_len(const int *seqlens, int b, int seq) { return seqlens ? seqlens[b] : seq; }
/* An eps field: 0 = the default, ATTN_EPS_ZERO = exactly 0, else finite and > 0. */
static int attn__eps_ok(float e) { return e == ATTN_EPS_ZERO || (isfinite(e) && e >= 0.0f); }
static float attn__eps(float e, float dflt) { return e == ATTN_EPS_ZERO ? 0.0f : e != 0.0f ? e : dflt; }

/* Validates a call of any ATTN_LINEAR operation and resolves it (no workspace yet). */
static attn_status attn__lin_check(const attn__call *c, attn__op op, attn__lin *L) {
    const attn_desc *d = c->d;
    const int with_out = (op == ATTN__FORWARD || op == ATTN__STEP) && !c->bytes;
    attn_status s;
    memset(L, 0, sizeof *L);
    if ((s = attn__check_qkv(&c->q, &c->k, &c->v, with_out ? &c->out : NULL, &L->q, &L->k, &L->v, &L->out)) != ATTN_OK)
        return s;
    if (op == ATTN__FORWARD && c->lse) return ATTN_ERR_KIND_LSE;
    if ((s = attn__check_plain(d)) != ATTN_OK) return s;
    if (d->causal != 0 && d->causal != 1) return ATTN_ERR_CAUSAL;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (d->kind == ATTN_COSFORMER) {
        if (!attn__eps_ok(d->cosformer.eps)) return ATTN_ERR_COSFORMER_EPS;
        if (d->cosformer.max_len < 0) return ATTN_ERR_COSFORMER_MAX_LEN;
        if (op == ATTN__STEP && d->cosformer.max_len == 0) return ATTN_ERR_COSFORMER_STEP_M;
    } else if (d->kind == ATTN_PERFORMER) {
        const attn_performer_params *p = &d->performer;
        if (p->features < 0 || p->features > 65536) return ATTN_ERR_PERFORMER_FEATURES;
        if (!attn__eps_ok(p->eps)) return ATTN_ERR_PERFORMER_EPS;
        if (p->relu_normalize != 0 && p->relu_normalize != 1) return ATTN_ERR_PERFORMER_RELU_NORMALIZE;
        if ((p->kernel != ATTN_PERFORMER_SOFTMAX && p->kernel != ATTN_PERFORMER_RELU) ||
            (p->fixed_norms != 0 && p->fixed_norms != 1)) return ATTN_ERR_PERFORMER_OPTIONS;
        if (p->projection) {
            const size_t n = (size_t)p->features * (size_t)c->q.dim;
            size_t i;
            /* the caller's W has as many rows as the caller says: a default would read past it */
            if (p->features == 0) return ATTN_ERR_PERFORMER_PROJECTION_FEATURES;
            if (p->projection_dim != c->q.dim) return ATTN_ERR_PERFORMER_PROJECTION_DIM;
            for (i = 0; i < n; ++i)
                if (!isfinite(p->projection[i])) return ATTN_ERR_PERFORMER_PROJECTION;
        }
    } else if (!attn__eps_ok(d->linear.eps)) return ATTN_ERR_LINEAR_EPS;
    if (op == ATTN__STEP) {
        if (c->k.seq != c->q.seq) return ATTN_ERR_STEP_SEQ;
        if (d->seqlens_q || d->seqlens_k) return ATTN_ERR_STEP_LENGTHS;
    } else {
        if (d->seqlens_q && !attn__lengths_ok(d->seqlens_q, c->q.batch, c->q.seq)) return ATTN_ERR_SEQLENS_Q;
        if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, c->q.batch, c->k.seq)) return ATTN_ERR_SEQLENS_K;
        L->seqlens_q = d->seqlens_q; L->seqlens_k = d->seqlens_k;
        if (d->kind == ATTN_COSFORMER && d->cosformer.max_len && (op == ATTN__FORWARD || op == ATTN__BACKWARD)) {
            /* M must cover every position used: the valid lengths (padding has no position) */
            const int nb = d->seqlens_q || d->seqlens_k ? c->q.batch : 1;   /* without lengths every sequence is alike */
            int b;
            for (b = 0; b < nb; ++b)
                if (d->cosformer.max_len < ATTN__MAX(attn__lin_len(L->seqlens_q, b, c->q.seq), attn__lin_len(L->seqlens_k, b, c->k.seq)))
                    return ATTN_ERR_COSFORMER_MAX_LEN;
        }
    }
    L->d = d;
    L->causal = op == ATTN__STEP ? 1 : d->causal;
    L->groups = c->q.heads / c->k.heads;
    L->D = c->q.dim; L->Dv = c->v.dim;
    L->eps = attn__eps(d->linear.eps, 1e-6f);
    L->F = L->D;
    if (d->kind == ATTN_COSFORMER) {
        if (L->D > INT_MAX / 2) return ATTN_ERR_OVERFLOW;
        L->F = 2 * L->D;
        L->cos = 1;
        L->M = d->cosformer.max_len;     /* 0: per sequence, attn__lin_ang */
        L->eps = attn__eps(d->cosformer.eps, 1e-6f);
    }
    if (d->kind == ATTN_PERFORMER) {
        const attn_performer_params *p = &d->performer;
        L->F = p->features ? p->features : 256;
        L->perf = p->kernel == ATTN_PERFORMER_RELU ? 2 : 1;
        L->eps = attn__eps(p->eps, L->perf == 2 ? 1e-3f : 1e-6f);
        L->pnorm = L->perf == 2 && !p->relu_normalize ? 1.0f : (float)(1.0 / sqrt(sqrt((double)L->D)));
        L->hmul = (float)(0.5 / sqrt((double)L->D));
        L->W = p->projection;
    }
    if (!attn__tasks((size_t)c->q.batch, (size_t)c->k.heads, 1, &L->n_tasks)) return ATTN_ERR_OVERFLOW;
    L->n_threads = ATTN__MIN(attn__resolve_threads(d), L->n_tasks);
    if (d->n_threads == 0) {     /* default threads: one per ~2^20 state-update flops of the call, so a
                                    decoding step is not slower than its threads' start-up */
        const double work = (double)c->q.batch * c->k.heads * ((double)c->q.seq + c->k.seq) * L->F * L->Dv;
        const int want = work < 1048576.0 ? 1 : (work > 1048576.0 * ATTN__MAX_THREADS ? ATTN__MAX_THREADS : (int)(work / 1048576.0));
        L->n_threads = ATTN__MAX(1, ATTN__MIN(L->n_threads, want));
    }
    return ATTN_OK;
}

/* Floats of state: (S [F][Dv], z [F]) per sequence and KV head. 0 on overflow. ATTN_PERFORMER
   (perf): a header (the drawn W [F][D] and its key, ATTN__PERF_HEAD more) before them, and per
   sequence and KV head also the eps part sum_j v_j [Dv] and the reference max c. */
#define ATTN__PERF_HEAD 4
static size_t attn__lin_state_per(int F, int Dv, int perf) {
    size_t per;
    if (!attn__mul_size((size_t)F, (size_t)Dv, &per) || !attn__add_size(per, (size_t)F, &per) ||
        (perf && !attn__add_size(per, (size_t)Dv + 1, &per))) return 0;
    return per;
}
static size_t attn__lin_state_floats(int F, int perf, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v) {
    size_t per = attn__lin_state_per(F, v->dim, perf), n, head = 0;
    if (!per || !attn__mul_size(per, (size_t)q->batch * (size_t)k->heads, &n)) return 0;
    if (perf && (!attn__mul_size((size_t)F, (size_t)q->dim, &head) || !attn__add_size(n, head + ATTN__PERF_HEAD, &n)))
        return 0;
    if (n > (size_t)PTRDIFF_MAX / sizeof(float)) return 0;
    return n;
}

/* The workspace of one task: S, z (when not in a state), phi(K) and V blocks, the stacked
   phi(Q) rows, the chunk's A, numerators and denominators, a row of scratch, GEMM packing. */
static int attn__lin_plan(attn__lin *L, size_t *bytes) {
    const size_t D = (size_t)L->F, Dv = (size_t)L->Dv, R = (size_t)L->groups * ATTN__LIN_ROWS;   /* D: features */
    const int gr = (int)ATTN__MIN(R, (size_t)INT_MAX);
    size_t g1, g2, g3, g4, f = 0, t;
    g1 = attn__sgemm_1t_floats(L->F, L->Dv, ATTN__LIN_KEYS);       /* S += phi(K)^T V */
    g2 = attn__sgemm_1t_floats(gr, L->Dv, L->F);                    /* phi(Q) S */
    g3 = attn__sgemm_1t_floats(gr, ATTN__LIN_ROWS, L->F);           /* A = phi(Q) phi(K)^T */
    g4 = attn__sgemm_1t_floats(gr, L->Dv, ATTN__LIN_ROWS);          /* A V */
    L->gemm_floats = ATTN__MAX(ATTN__MAX(g1, g2), ATTN__MAX(g3, g4));
    if (L->perf) {                                                  /* U = X W^T for keys and for query rows */
        L->gemm_floats = ATTN__MAX(L->gemm_floats, attn__sgemm_1t_floats(ATTN__LIN_KEYS, L->F, L->D));
        L->gemm_floats = ATTN__MAX(L->gemm_floats, attn__sgemm_1t_floats(gr, L->F, L->D));
    }
    /* S + z (+ the eps sums), K block, V block, Q rows, A, num, den, scratch row, GEMM, and for
       ATTN_PERFORMER the raw rows X and per-key and per-row scalars: each rounded to 16 */
    {
        size_t parts[11];
        const int np = L->perf ? 11 : 9;
        int i;
        if (!attn__mul_size(D, Dv, &parts[0]) || !attn__add_size(parts[0], D + Dv + 17, &parts[0])) return 0;
        if (!attn__mul_size(D, ATTN__LIN_KEYS, &parts[1]) || !attn__mul_size(Dv, ATTN__LIN_KEYS, &parts[2])) return 0;
        if (!attn__mul_size(R, D, &parts[3]) || !attn__mul_size(R, ATTN__LIN_ROWS, &parts[4]) ||
            !attn__mul_size(R, Dv, &parts[5])) return 0;
        parts[6] = R; parts[7] = ATTN__MAX((size_t)L->D, Dv); parts[8] = L->gemm_floats;
        if (!attn__mul_size(ATTN__MAX(R, (size_t)ATTN__LIN_KEYS), (size_t)L->D, &parts[9])) return 0;
        if (!attn__mul_size(R, 4, &parts[10]) || !attn__add_size(parts[10], ATTN__LIN_KEYS + 64, &parts[10])) return 0;
        for (i = 0; i < np; ++i) {
            if (!attn__add_size(parts[i], 15, &t)) return 0;
            if (!attn__add_size(f, t & ~(size_t)15, &f)) return 0;
        }
    }
    L->ws_per = f;
    L->shared_floats = 0;
    if (L->perf && !L->W) {          /* the drawn W [F][D] and the draw's 2 D^2 doubles */
        size_t w, dd;
        if (!attn__mul_size((size_t)L->F, (size_t)L->D, &w) || !attn__mul_size((size_t)L->D, (size_t)L->D * 4 + 2, &dd) ||
            !attn__add_size(w, dd + 32, &L->shared_floats)) return 0;
        L->shared_floats &= ~(size_t)15;
    }
    if (!attn__mul_size(f, (size_t)L->n_threads, &t) || !attn__add_size(t, L->shared_floats, &t) ||
        !attn__mul_size(t, sizeof(float), bytes) ||
        !attn__add_size(*bytes, 64, bytes) || *bytes > (size_t)PTRDIFF_MAX) return 0;
    return 1;
}

static float *attn__lin_carve(float **p, size_t n) {
    float *r = *p;
    *p += (n + 15) & ~(size_t)15;
    return r;
}

/* dst = phi(src) = elu(src) + 1 for n elements of dtype t; tmp: n floats. NaN stays NaN. */
static void attn__lin_phi(const attn__isa *isa, const void *src, attn_dtype t, float *dst, float *tmp, int n) {
    (void)tmp;
    isa->load(src, t, dst, n, 1.0f);
    isa->elu1(dst, dst, NULL, n);
}

/* ATTN_COSFORMER's angle step (pi/2) / M of sequence b: M = max_len, else max(Lq, Lk) of the
   sequence's valid lengths (ZOO.md), so padding a sequence does not change its rows. */
static double attn__lin_ang(const attn__lin *L, int b) {
    int M = L->M;
    if (!M) M = ATTN__MAX(1, ATTN__MAX(attn__lin_len(L->seqlens_q, b, L->q.seq), attn__lin_len(L->seqlens_k, b, L->k.seq)));
    return 1.57079632679489661923 / (double)M;
}

/* The kind's features of one q or k row of sequence b at 0-based position pos: dst [F]; tmp: D
   floats. ATTN_LINEAR: elu + 1. ATTN_COSFORMER: [relu(x) sin a, relu(x) cos a], a = (pi/2)(pos +
   1)/M (relu keeps NaN). */
static void attn__lin_feat(const attn__lin *L, int b, const void *src, attn_dtype t, float *dst, float *tmp, long long pos);
/* The same from a loaded row x [D] (dst may not be x for ATTN_COSFORMER). */
static void attn__lin_feat_row(const attn__lin *L, int b, const float *x, float *dst, long long pos) {
    if (!L->cos) {
        L->isa->elu1(dst, x, NULL, L->D);
    } else {
        const double a = attn__lin_ang(L, b) * (double)(pos + 1);
        const float sa = (float)sin(a), ca = (float)cos(a);
        int i;
        for (i = 0; i < L->D; ++i) {
            const float r = x[i] > 0.0f ? x[i] : (x[i] <= 0.0f ? 0.0f : x[i]);
            dst[i] = r * sa;
            dst[L->D + i] = r * ca;
        }
    }
}
static void attn__lin_feat(const attn__lin *L, int b, const void *src, attn_dtype t, float *dst, float *tmp, long long pos) {
    if (!L->cos) {
        attn__lin_phi(L->isa, src, t, dst, tmp, L->D);
    } else {
        L->isa->load(src, t, tmp, L->D, 1.0f);
        attn__lin_feat_row(L, b, tmp, dst, pos);
    }
}

typedef struct attn__lin_bufs { float *S, *z, *K, *V, *Q, *A, *num, *den, *row, *gemm; } attn__lin_bufs;

/* Prefetches row s of head h of sequence b of t (when s < t->seq) into the caches: one
   (sequence, head) walk over a [seq][heads][dim] tensor has a stride the hardware prefetchers do
   not follow (see the decoding stage), so the row loaders below ask ATTN__LIN_PF rows ahead. */
#define ATTN__LIN_PF 16
static void attn__lin_prefetch(const attn__view *t, int b, int s, int h) {
#if defined(__GNUC__) || defined(__clang__)
    if (s < t->seq) {
        const char *p = (const char *)attn__at(t, b, s, h);
        const size_t n = (size_t)t->dim * t->esize;
        size_t off;
        for (off = 0; off < n; off += 64) __builtin_prefetch(p + off, 0, 3);
        __builtin_prefetch(p + n - 1, 0, 3);
    }
#else
    (void)t; (void)b; (void)s; (void)h;
#endif
}

/* Loads keys [j0, j0 + n) of (b, hk) as phi(K) and V rows into B->K, B->V. */
static void attn__lin_load_keys(const attn__lin *L, const attn__lin_bufs *B, int b, int hk, int j0, int n) {
    int j;
    for (j = 0; j < n; ++j) {
        if (n > ATTN__LIN_FEW) { attn__lin_prefetch(&L->k, b, j0 + j + ATTN__LIN_PF, hk); attn__lin_prefetch(&L->v, b, j0 + j + ATTN__LIN_PF, hk); }
        attn__lin_feat(L, b, attn__at(&L->k, b, j0 + j, hk), L->k.dtype, B->K + (size_t)j * L->F, B->row, L->pos0 + j0 + j);
        L->isa->load(attn__at(&L->v, b, j0 + j, hk), L->v.dtype, B->V + (size_t)j * L->Dv, L->Dv, 1.0f);
    }
}

/* S += phi(K)^T V and z += sum_j phi(K_j) for the n rows in B->K, B->V. */
static void attn__lin_absorb_loaded(const attn__lin *L, const attn__lin_bufs *B, int n) {
    int j;
    if (n <= ATTN__LIN_FEW) {          /* a decoding step's few keys: rank-1 updates, no GEMM packing */
        int f;
        for (j = 0; j < n; ++j)
            for (f = 0; f < L->F; ++f)
                L->isa->axpy(B->S + (size_t)f * L->Dv, B->K[(size_t)j * L->F + f], B->V + (size_t)j * L->Dv, L->Dv);
    } else {
        attn__sgemm_1t(B->gemm, 1, 0, L->F, L->Dv, n, 1.0f, B->K, L->F, B->V, L->Dv, 1.0f, B->S, L->Dv);
    }
    for (j = 0; j < n; ++j) L->isa->axpy(B->z, 1.0f, B->K + (size_t)j * L->F, L->F);
}

/* Absorbs keys [j0, j1) into (S, z), ATTN__LIN_KEYS at a time. */
static void attn__lin_absorb(const attn__lin *L, const attn__lin_bufs *B, int b, int hk, int j0, int j1) {
    while (j0 < j1) {
        const int n = ATTN__MIN(ATTN__LIN_KEYS, j1 - j0);
        attn__lin_load_keys(L, B, b, hk, j0, n);
        attn__lin_absorb_loaded(L, B, n);
        j0 += n;
    }
}

static void attn__lin_task(void *ctx, int t, int thread) {
    const attn__lin *L = (const attn__lin *)ctx;
    const attn__isa *isa = L->isa;
    const int Hkv = L->k.heads, b = t / Hkv, hk = t % Hkv, g = L->groups, D = L->F, Dv = L->Dv;   /* D: features */
    const int Lq = L->seqlens_q ? L->seqlens_q[b] : L->q.seq, Lk = L->seqlens_k ? L->seqlens_k[b] : L->k.seq;
    const long long shift = (long long)Lk - Lq;
    float *w = L->ws + (size_t)thread * L->ws_per;
    attn__lin_bufs B;
    int q0, gi, i, kdone = 0;
    B.S = attn__lin_carve(&w, (size_t)D * Dv + (size_t)D + 16);
    B.K = attn__lin_carve(&w, (size_t)D * ATTN__LIN_KEYS);
    B.V = attn__lin_carve(&w, (size_t)Dv * ATTN__LIN_KEYS);
    B.Q = attn__lin_carve(&w, (size_t)g * ATTN__LIN_ROWS * D);
    B.A = attn__lin_carve(&w, (size_t)g * ATTN__LIN_ROWS * ATTN__LIN_ROWS);
    B.num = attn__lin_carve(&w, (size_t)g * ATTN__LIN_ROWS * Dv);
    B.den = attn__lin_carve(&w, (size_t)g * ATTN__LIN_ROWS);
    B.row = attn__lin_carve(&w, (size_t)ATTN__MAX(L->D, Dv));
    B.gemm = attn__lin_carve(&w, L->gemm_floats);
    if (L->state) {
        B.S = L->state + (size_t)t * ((size_t)D * Dv + D);
    } else {
        memset(B.S, 0, ((size_t)D * Dv + D) * sizeof(float));
    }
    B.z = B.S + (size_t)D * Dv;
    if (!L->causal) attn__lin_absorb(L, &B, b, hk, 0, Lk);
    for (q0 = 0; q0 < Lq; q0 += ATTN__LIN_ROWS) {
        const int n = ATTN__MIN(ATTN__LIN_ROWS, Lq - q0), m = g * n;
        const long long pa = q0 + shift;               /* position of the chunk's first row */
        int r;
        if (L->causal) {                               /* keys every row of the chunk sees */
            const int upto = (int)ATTN__MAX(0LL, ATTN__MIN(pa, (long long)Lk));
            if (upto > kdone) { attn__lin_absorb(L, &B, b, hk, kdone, upto); kdone = upto; }
        }
        for (gi = 0; gi < g; ++gi)                     /* row gi*n + i: head hk*g + gi, query q0 + i */
            for (i = 0; i < n; ++i)
                attn__lin_feat(L, b, attn__at(&L->q, b, q0 + i, hk * g + gi), L->q.dtype, B.Q + (size_t)(gi * n + i) * D,
                               B.row, L->pos0 + q0 + i + (L->causal ? shift : 0));
        if (m <= ATTN__LIN_FEW) {     /* num = phi(Q) S row by row (decoding steps) */
            int f;
            for (r = 0; r < m; ++r) {
                float *nr = B.num + (size_t)r * Dv;
                memset(nr, 0, (size_t)Dv * sizeof(float));
                for (f = 0; f < D; ++f) isa->axpy(nr, B.Q[(size_t)r * D + f], B.S + (size_t)f * Dv, Dv);
            }
        } else {
            attn__sgemm_1t(B.gemm, 0, 0, m, Dv, D, 1.0f, B.Q, D, B.S, Dv, 0.0f, B.num, Dv);
        }
        for (r = 0; r < m; ++r) B.den[r] = isa->dot(B.Q + (size_t)r * D, B.z, D);
        if (L->causal) {                               /* the chunk's own keys, masked j <= p */
            const int kend = (int)ATTN__MAX(0LL, ATTN__MIN(pa + n, (long long)Lk)), nk = kend - kdone;
            if (nk > 0) {
                int j;
                attn__lin_load_keys(L, &B, b, hk, kdone, nk);
                if (m <= ATTN__LIN_FEW) {
                    for (r = 0; r < m; ++r)
                        for (j = 0; j < nk; ++j) B.A[(size_t)r * nk + j] = isa->dot(B.Q + (size_t)r * D, B.K + (size_t)j * D, D);
                } else {
                    attn__sgemm_1t(B.gemm, 0, 1, m, nk, D, 1.0f, B.Q, D, B.K, D, 0.0f, B.A, nk);
                }
                for (r = 0; r < m; ++r) {
                    float *a = B.A + (size_t)r * nk, sum = 0.0f;
                    const long long last = pa + r % n - kdone;          /* last visible column */
                    for (j = 0; j < nk; ++j) {
                        if (j > last) a[j] = 0.0f;
                        sum += a[j];
                    }
                    B.den[r] += sum;
                }
                if (m <= ATTN__LIN_FEW) {
                    for (r = 0; r < m; ++r)
                        for (j = 0; j < nk; ++j)
                            isa->axpy(B.num + (size_t)r * Dv, B.A[(size_t)r * nk + j], B.V + (size_t)j * Dv, Dv);
                } else {
                    attn__sgemm_1t(B.gemm, 0, 0, m, Dv, nk, 1.0f, B.A, nk, B.V, Dv, 1.0f, B.num, Dv);
                }
                attn__lin_absorb_loaded(L, &B, nk);
                kdone = kend;
            }
        }
        for (gi = 0; gi < g; ++gi)
            for (i = 0; i < n; ++i) {
                const int r2 = gi * n + i;
                isa->store(attn__at(&L->out, b, q0 + i, hk * g + gi), L->out.dtype, B.num + (size_t)r2 * Dv, Dv,
                           1.0f / (L->cos ? ATTN__MAX(B.den[r2], L->eps) : B.den[r2] + L->eps));
            }
    }
    for (gi = 0; gi < g; ++gi)                         /* padding rows */
        for (i = Lq; i < L->q.seq; ++i) attn__store_zero_row(attn__at(&L->out, b, i, hk * g + gi), L->out.dtype, Dv);
}

/* ---- ATTN_PERFORMER: FAVOR+ on the same chunked core -----------------------------------------
   The projection: Gaussians from a counter-based hash (attn__mix64, the DROPOUT mix) by
   Marsaglia's polar method with the library's own ln, orthogonal blocks by a Householder QR,
   chi row norms; all in double, rounded once to float (formula at attn_performer_draw). The
   double arithmetic is kept uncontracted (no FMA fusion), so the bits do not depend on the
   compiler's -ffp-contract or the ISA. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(__CUDACC__)   /* nvcc's front end rejects GCC optimize */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
/* ln(x) for x in (0, 1]: x = f 2^e, f in [sqrt(1/2), sqrt(2)), ln f = 2 atanh(t), t = (f-1)/(f+1),
   |t| <= 0.172, 13 terms of the series (error below 2^-60); only +, -, *, / and frexp. */
static double attn__perf_ln(double x) {
    int e, k;
    double f = frexp(x, &e), t, t2, p, r;
    if (f < 0.70710678118654752440) { f = f * 2.0; e = e - 1; }
    t = (f - 1.0) / (f + 1.0);
    t2 = t * t;
    p = 1.0 / 25.0;
    for (k = 11; k >= 0; --k) {
        r = p * t2;
        p = r + 1.0 / (double)(2 * k + 1);
    }
    r = 2.0 * t;
    r = r * p;
    p = (double)e * 0.69314718055994530942;
    return p + r;
}
/* The Gaussian number (stream, idx) of seed (attn_performer_draw's formula). */
static double attn__perf_gauss(uint64_t seed, unsigned stream, uint64_t idx) {
    int a;
    for (a = 0; a < 64; ++a) {
        const uint64_t key = (idx * 64u + (uint64_t)a) * 2u + stream;
        const uint64_t z1 = attn__mix64(seed + 0x9E3779B97F4A7C15ull * (1u + 2u * key));
        const uint64_t z2 = attn__mix64(seed + 0x9E3779B97F4A7C15ull * (2u + 2u * key));
        double v1 = ((double)(z1 >> 12) + 0.5) * (1.0 / 2251799813685248.0), v2, s, t;
        v1 = v1 - 1.0;
        v2 = ((double)(z2 >> 12) + 0.5) * (1.0 / 2251799813685248.0);
        v2 = v2 - 1.0;
        s = v1 * v1;
        t = v2 * v2;
        s = s + t;
        if (s < 1.0) {
            t = -2.0 * attn__perf_ln(s);
            t = t / s;
            return v1 * sqrt(t);
        }
    }
    return 0.0;
}
/* A [d][d] (row-major, overwritten by R) = Q R with R's diagonal > 0: Q [d][d] out. Householder
   reflections H_k zero column k below the diagonal (A <- H_k A, Q <- Q H_k, from Q = I), then
   column k of Q is negated where R[k][k] < 0 (which makes Q Gram-Schmidt's, a Haar draw). */
static void attn__perf_qr(double *A, double *Q, double *v, int d) {
    int i, j, k;
    for (i = 0; i < d; ++i)
        for (j = 0; j < d; ++j) Q[(size_t)i * d + j] = i == j ? 1.0 : 0.0;
    for (k = 0; k + 1 < d; ++k) {
        double nrm = 0.0, vn = 0.0, w, x;
        for (i = k; i < d; ++i) { x = A[(size_t)i * d + k] * A[(size_t)i * d + k]; nrm = nrm + x; }
        if (nrm == 0.0) continue;
        nrm = sqrt(nrm);
        for (i = k; i < d; ++i) v[i] = A[(size_t)i * d + k];
        v[k] = v[k] >= 0.0 ? v[k] + nrm : v[k] - nrm;
        for (i = k; i < d; ++i) { x = v[i] * v[i]; vn = vn + x; }
        vn = 2.0 / vn;
        for (j = k; j < d; ++j) {                   /* A <- (I - vn v v^T) A */
            w = 0.0;
            for (i = k; i < d; ++i) { x = v[i] * A[(size_t)i * d + j]; w = w + x; }
            w = w * vn;
            for (i = k; i < d; ++i) { x = w * v[i]; A[(size_t)i * d + j] = A[(size_t)i * d + j] - x; }
        }
        for (i = 0; i < d; ++i) {                   /* Q <- Q (I - vn v v^T) */
            double *q = Q + (size_t)i * d;
            w = 0.0;
            for (j = k; j < d; ++j) { x = q[j] * v[j]; w = w + x; }
            w = w * vn;
            for (j = k; j < d; ++j) { x = w * v[j]; q[j] = q[j] - x; }
        }
    }
    for (k = 0; k < d; ++k)
        if (A[(size_t)k * d + k] < 0.0)
            for (i = 0; i < d; ++i) Q[(size_t)i * d + k] = -Q[(size_t)i * d + k];
}
/* W [m][d] from seed; scratch: 2 d^2 + d doubles (attn_performer_draw's formula). */
static void attn__perf_draw(uint64_t seed, int m, int d, int fixed_norms, float *W, double *scratch) {
    double *A = scratch, *Q = scratch + (size_t)d * d, *v = Q + (size_t)d * d;
    const int nb = (m + d - 1) / d;
    int b, i, t;
    for (b = 0; b < nb; ++b) {
        for (i = 0; i < d; ++i)
            for (t = 0; t < d; ++t)
                A[(size_t)i * d + t] = attn__perf_gauss(seed, 0, ((uint64_t)b * (uint64_t)d + (uint64_t)i) * (uint64_t)d + (uint64_t)t);
        attn__perf_qr(A, Q, v, d);
        for (i = 0; i < d && b * d + i < m; ++i) {
            const int r = b * d + i;
            double nrm = 0.0, x;
            if (fixed_norms) {
                nrm = sqrt((double)d);
            } else {
                for (t = 0; t < d; ++t) {
                    x = attn__perf_gauss(seed, 1, (uint64_t)r * (uint64_t)d + (uint64_t)t);
                    x = x * x;
                    nrm = nrm + x;
                }
                nrm = sqrt(nrm);
            }
            for (t = 0; t < d; ++t) W[(size_t)r * d + t] = (float)(nrm * Q[(size_t)t * d + i]);
        }
    }
}
#if defined(__clang__)
#pragma STDC FP_CONTRACT DEFAULT
#elif defined(__GNUC__) && !defined(__CUDACC__)
#pragma GCC pop_options
#endif

ATTNDEF attn_status attn_performer_draw(const attn_performer_params *params, int dim, float *W) {
    size_t n;
    void *scratch;
    int m;
    if (!params || !W) return ATTN_ERR_PERFORMER_DRAW_NULL;
    if (params->features < 0 || params->features > 65536) return ATTN_ERR_PERFORMER_FEATURES;
    if (!attn__eps_ok(params->eps)) return ATTN_ERR_PERFORMER_EPS;
    if ((params->kernel != ATTN_PERFORMER_SOFTMAX && params->kernel != ATTN_PERFORMER_RELU) ||
        (params->fixed_norms != 0 && params->fixed_norms != 1)) return ATTN_ERR_PERFORMER_OPTIONS;
    if (dim < 1) return ATTN_ERR_PERFORMER_DRAW_DIM;
    m = params->features ? params->features : 256;
    if (!attn__mul_size((size_t)dim, (size_t)dim * 2 + 1, &n) || !attn__mul_size(n, sizeof(double), &n) ||
        !attn__mul_size((size_t)m, (size_t)dim, &n) || n > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_OVERFLOW;
    if (!(scratch = attn__alloc(((size_t)dim * dim * 2 + (size_t)dim) * sizeof(double)))) return ATTN_ERR_OUT_OF_MEMORY;
    attn__perf_draw((uint64_t)params->seed, m, dim, params->fixed_norms, W, (double *)scratch);
    attn__free(scratch);
    return ATTN_OK;
}

/* The kernel. Per (sequence, KV head) task, as ATTN_LINEAR's, with the state split by the
   stabiliser (softmax kernel; a_jl = u_jl - h_j, c the reference max of the absorbed keys):
       S[l] = sum_j exp(a_jl - c) v_j,  z[l] = sum_j exp(a_jl - c),  vs = sum_j v_j,  n keys
   so for a query row with features Q~_l = exp(u_l - h - s_q) + eps, sumQ = sum_l Q~_l, whose
   visible keys have max s >= c:
       num = exp(c - s) Q~ S + eps sumQ vs,   den = exp(c - s) Q~ . z + eps sumQ n
   Inside a causal chunk key j is loaded as exp(a_jl - c_j) with c_j the running max up to j,
   so the dense part is A_ij = exp(c_j - s_i) (Q~_i . K~_j) + eps sumQ_i for j <= p_i; absorbing
   keys rescales S, z by exp(c - c') and row j by exp(c_j - c'). Every exp argument is <= 0:
   no overflow, and a term underflows only where its true value is below float's range.
   ReLU kernel: K~ = relu(u) + eps plain (no split, no rescaling). */
typedef struct attn__perf_bufs {
    attn__lin_bufs B;             /* S, z, K (features), V, Q (features), A, num, den, row, gemm */
    float *vs, *c;                /* the eps part sum_j v_j [Dv], the reference max */
    float *X;                     /* raw q or k rows [max(R, KEYS)][D] */
    float *ck;                    /* loaded keys' running max [KEYS] */
    float *sq, *sumq, *fac, *e;   /* per row: s, sum of features, exp(c - s); e: exp(c_j - s) [64] */
} attn__perf_bufs;

static float attn__perf_exp(const attn__isa *isa, float x) {
    float y;
    isa->exp_sum(&y, &x, 0.0f, 1);
    return y;
}

/* U = pnorm X W^T for the n rows in X [n][D], into U [n][F] */
static void attn__perf_project(const attn__lin *L, float *gemm, int n, const float *X, float *U) {
    const int F = L->F, D = L->D;
    if (n <= ATTN__LIN_FEW) {
        int r, l;
        for (r = 0; r < n; ++r)
            for (l = 0; l < F; ++l)
                U[(size_t)r * F + l] = L->pnorm * L->isa->dot(X + (size_t)r * D, L->W + (size_t)l * D, D);
    } else {
        attn__sgemm_1t(gemm, 0, 1, n, F, D, L->pnorm, X, D, L->W, D, 0.0f, U, F);
    }
}

/* Loads keys [j0, j0 + n) of (b, hk): raw rows into X, K~ rows into B.K, V rows into B.V, running
   maxes into ck (continuing from *c when the state holds keys: has), or, with fixed (the
   backward's second pass), K~ = exp(a - fixed[j]). */
static void attn__perf_load_keys(const attn__lin *L, const attn__perf_bufs *P, int b, int hk, int j0, int n, int has,
                                 const float *fixed) {
    const attn__isa *isa = L->isa;
    const int D = L->D, F = L->F;
    float run = *P->c;
    int j, l;
    for (j = 0; j < n; ++j) {
        isa->load(attn__at(&L->k, b, j0 + j, hk), L->k.dtype, P->X + (size_t)j * D, D, 1.0f);
        isa->load(attn__at(&L->v, b, j0 + j, hk), L->v.dtype, P->B.V + (size_t)j * L->Dv, L->Dv, 1.0f);
    }
    attn__perf_project(L, P->B.gemm, n, P->X, P->B.K);
    for (j = 0; j < n; ++j) {
        float *u = P->B.K + (size_t)j * F;
        if (L->perf == 2) {
            for (l = 0; l < F; ++l) u[l] = (u[l] > 0.0f ? u[l] : (u[l] <= 0.0f ? 0.0f : u[l])) + L->eps;
        } else {
            const float *x = P->X + (size_t)j * D, h = L->hmul * isa->dot(x, x, D);
            if (fixed) {
                isa->exp_sum(u, u, fixed[j] + h, F);
                continue;
            } else {
                const float mx = isa->max(u, F);
                run = has ? (mx > run ? mx : run) : mx;
                has = 1;
                P->ck[j] = run;
                isa->exp_sum(u, u, run + h, F);
            }
        }
    }
}

/* Absorbs the n loaded keys into the state, which held cnt keys. */
static void attn__perf_absorb_loaded(const attn__lin *L, const attn__perf_bufs *P, int n, long long cnt) {
    const attn__isa *isa = L->isa;
    const int F = L->F, Dv = L->Dv;
    int j;
    if (L->perf == 1) {
        const float cn = P->ck[n - 1];
        if (cnt > 0 && *P->c != cn) {
            const float f = attn__perf_exp(isa, *P->c - cn);
            isa->scal(P->B.S, f, F * Dv);
            isa->scal(P->B.z, f, F);
        }
        for (j = 0; j < n - 1; ++j)
            if (P->ck[j] != cn) isa->scal(P->B.K + (size_t)j * F, attn__perf_exp(isa, P->ck[j] - cn), F);
        *P->c = cn;
    }
    attn__lin_absorb_loaded(L, &P->B, n);
    for (j = 0; j < n; ++j) isa->axpy(P->vs, 1.0f, P->B.V + (size_t)j * Dv, Dv);
}

/* Absorbs keys [j0, j1) ATTN__LIN_KEYS at a time; *cnt counts the state's keys; kc (or NULL)
   records each key's running max at kc[j]. */
static void attn__perf_absorb(const attn__lin *L, const attn__perf_bufs *P, int b, int hk, int j0, int j1, long long *cnt,
                              float *kc) {
    while (j0 < j1) {
        const int n = ATTN__MIN(ATTN__LIN_KEYS, j1 - j0);
        attn__perf_load_keys(L, P, b, hk, j0, n, *cnt > 0, NULL);
        if (kc && L->perf == 1) memcpy(kc + j0, P->ck, (size_t)n * sizeof(float));
        attn__perf_absorb_loaded(L, P, n, *cnt);
        *cnt += n;
        j0 += n;
    }
}

/* The chunk's query rows q0 .. q0 + n - 1 of the g heads (row gi*n + i): raw rows into XQ,
   features into B.Q, sumq, and (softmax kernel) each row's key max s (the running max at its
   last visible key: ck of the chunk's loaded keys from kdone, else the state's c) and exp(c - s). */
static void attn__perf_queries(const attn__lin *L, const attn__perf_bufs *P, int b, int hk, int q0, int n, long long pa,
                               int kdone, int Lk, long long cnt, float *XQ) {
    const attn__isa *isa = L->isa;
    const int g = L->groups, F = L->F, D = L->D, m = g * n;
    int gi, i, r, l;
    for (gi = 0; gi < g; ++gi)
        for (i = 0; i < n; ++i)
            isa->load(attn__at(&L->q, b, q0 + i, hk * g + gi), L->q.dtype, XQ + (size_t)(gi * n + i) * D, D, 1.0f);
    attn__perf_project(L, P->B.gemm, m, XQ, P->B.Q);
    for (r = 0; r < m; ++r) {
        float *u = P->B.Q + (size_t)r * F;
        const long long vis = L->causal ? ATTN__MIN(pa + r % n, (long long)Lk - 1) : (long long)Lk - 1;
        if (L->perf == 2) {
            for (l = 0; l < F; ++l) u[l] = (u[l] > 0.0f ? u[l] : (u[l] <= 0.0f ? 0.0f : u[l])) + L->eps;
            P->fac[r] = 1.0f;
            P->sumq[r] = 0.0f;
        } else {
            const float *x = XQ + (size_t)r * D, h = L->hmul * isa->dot(x, x, D);
            const float sum = isa->exp_sum(u, u, isa->max(u, F) + h, F);
            for (l = 0; l < F; ++l) u[l] += L->eps;
            P->sumq[r] = sum + (float)F * L->eps;
            P->sq[r] = L->causal && vis >= kdone ? P->ck[vis - kdone] : *P->c;
            P->fac[r] = cnt == 0 ? 0.0f : (P->sq[r] == *P->c ? 1.0f : attn__perf_exp(isa, *P->c - P->sq[r]));
        }
    }
}

static void attn__perf_task(void *ctx, int t, int thread) {
    const attn__lin *L = (const attn__lin *)ctx;
    const attn__isa *isa = L->isa;
    const int Hkv = L->k.heads, b = t / Hkv, hk = t % Hkv, g = L->groups, F = L->F, Dv = L->Dv, D = L->D;
    const int Lq = L->seqlens_q ? L->seqlens_q[b] : L->q.seq, Lk = L->seqlens_k ? L->seqlens_k[b] : L->k.seq;
    const long long shift = (long long)Lk - Lq;
    const size_t per = attn__lin_state_per(F, Dv, 1), R = (size_t)g * ATTN__LIN_ROWS;
    float *w = L->ws + (size_t)thread * L->ws_per;
    attn__perf_bufs P;
    attn__lin_bufs *B = &P.B;
    long long cnt = L->pos0;                           /* keys in the state */
    int q0, gi, i, kdone = 0;
    B->S = attn__lin_carve(&w, per + 16);
    B->K = attn__lin_carve(&w, (size_t)F * ATTN__LIN_KEYS);
    B->V = attn__lin_carve(&w, (size_t)Dv * ATTN__LIN_KEYS);
    B->Q = attn__lin_carve(&w, R * F);
    B->A = attn__lin_carve(&w, R * ATTN__LIN_ROWS);
    B->num = attn__lin_carve(&w, R * Dv);
    B->den = attn__lin_carve(&w, R);
    B->row = attn__lin_carve(&w, (size_t)ATTN__MAX(D, Dv));
    B->gemm = attn__lin_carve(&w, L->gemm_floats);
    P.X = attn__lin_carve(&w, ATTN__MAX(R, (size_t)ATTN__LIN_KEYS) * D);
    P.ck = w; P.sq = P.ck + ATTN__LIN_KEYS; P.sumq = P.sq + R; P.fac = P.sumq + R; P.e = P.fac + R;
    if (L->state) {
        B->S = L->state + (size_t)t * per;
    } else {
        memset(B->S, 0, per * sizeof(float));
    }
    B->z = B->S + (size_t)F * Dv;
    P.vs = B->z + F;
    P.c = P.vs + Dv;
    if (!L->causal) attn__perf_absorb(L, &P, b, hk, 0, Lk, &cnt, NULL);
    for (q0 = 0; q0 < Lq; q0 += ATTN__LIN_ROWS) {
        const int n = ATTN__MIN(ATTN__LIN_ROWS, Lq - q0), m = g * n;
        const long long pa = q0 + shift;               /* position of the chunk's first row */
        int r, nk = 0, j, l;
        if (L->causal) {                               /* keys every row of the chunk sees, then its own */
            const int upto = (int)ATTN__MAX(0LL, ATTN__MIN(pa, (long long)Lk));
            if (upto > kdone) { attn__perf_absorb(L, &P, b, hk, kdone, upto, &cnt, NULL); kdone = upto; }
            nk = (int)ATTN__MAX(0LL, ATTN__MIN(pa + n, (long long)Lk)) - kdone;
            if (nk > 0) attn__perf_load_keys(L, &P, b, hk, kdone, nk, cnt > 0, NULL);
        }
        attn__perf_queries(L, &P, b, hk, q0, n, pa, kdone, Lk, cnt, P.X);
        if (m <= ATTN__LIN_FEW) {                      /* num = Q~ S row by row (decoding steps) */
            for (r = 0; r < m; ++r) {
                float *nr = B->num + (size_t)r * Dv;
                memset(nr, 0, (size_t)Dv * sizeof(float));
                for (l = 0; l < F; ++l) isa->axpy(nr, B->Q[(size_t)r * F + l], B->S + (size_t)l * Dv, Dv);
            }
        } else {
            attn__sgemm_1t(B->gemm, 0, 0, m, Dv, F, 1.0f, B->Q, F, B->S, Dv, 0.0f, B->num, Dv);
        }
        for (r = 0; r < m; ++r) {
            float *nr = B->num + (size_t)r * Dv;
            B->den[r] = isa->dot(B->Q + (size_t)r * F, B->z, F);
            if (L->perf == 1) {
                if (P.fac[r] != 1.0f) { isa->scal(nr, P.fac[r], Dv); B->den[r] *= P.fac[r]; }
                isa->axpy(nr, L->eps * P.sumq[r], P.vs, Dv);
                B->den[r] += L->eps * P.sumq[r] * (float)cnt;
            }
        }
        if (nk > 0) {                                  /* the chunk's own keys, masked j <= p */
            if (m <= ATTN__LIN_FEW) {
                for (r = 0; r < m; ++r)
                    for (j = 0; j < nk; ++j) B->A[(size_t)r * nk + j] = isa->dot(B->Q + (size_t)r * F, B->K + (size_t)j * F, F);
            } else {
                attn__sgemm_1t(B->gemm, 0, 1, m, nk, F, 1.0f, B->Q, F, B->K, F, 0.0f, B->A, nk);
            }
            for (r = 0; r < m; ++r) {
                float *a = B->A + (size_t)r * nk, sum = 0.0f;
                const long long last = pa + r % n - kdone;          /* last visible column */
                if (L->perf == 1) {
                    const float ep = L->eps * P.sumq[r];
                    isa->exp_sum(P.e, P.ck, P.sq[r], nk);           /* exp(c_j - s) (<= 1 where visible) */
                    for (j = 0; j < nk; ++j) {
                        a[j] = j > last ? 0.0f : P.e[j] * a[j] + ep;
                        sum += a[j];
                    }
                } else {
                    for (j = 0; j < nk; ++j) {
                        if (j > last) a[j] = 0.0f;
                        sum += a[j];
                    }
                }
                B->den[r] += sum;
            }
            if (m <= ATTN__LIN_FEW) {
                for (r = 0; r < m; ++r)
                    for (j = 0; j < nk; ++j)
                        isa->axpy(B->num + (size_t)r * Dv, B->A[(size_t)r * nk + j], B->V + (size_t)j * Dv, Dv);
            } else {
                attn__sgemm_1t(B->gemm, 0, 0, m, Dv, nk, 1.0f, B->A, nk, B->V, Dv, 1.0f, B->num, Dv);
            }
            attn__perf_absorb_loaded(L, &P, nk, cnt);
            cnt += nk;
            kdone += nk;
        }
        for (gi = 0; gi < g; ++gi)
            for (i = 0; i < n; ++i) {
                const int r2 = gi * n + i;
                void *o = attn__at(&L->out, b, q0 + i, hk * g + gi);
                const long long vis = L->causal ? ATTN__MIN(q0 + i + shift, (long long)Lk - 1) : (long long)Lk - 1;
                if (vis < 0) attn__store_zero_row(o, L->out.dtype, Dv);       /* no visible key */
                else isa->store(o, L->out.dtype, B->num + (size_t)r2 * Dv, Dv, 1.0f / B->den[r2]);
            }
    }
    for (gi = 0; gi < g; ++gi)                         /* padding rows */
        for (i = Lq; i < L->q.seq; ++i) attn__store_zero_row(attn__at(&L->out, b, i, hk * g + gi), L->out.dtype, Dv);
}

/* ATTN_PERFORMER's W when drawn: into the workspace (forward), or cached in the state's header
   [W][valid, seed low, seed high, fixed_norms] (attn_step), drawn when the key differs. */
static void attn__perf_prepare(attn__lin *L, const attn__call *c, attn__op op, float *shared) {
    const attn_performer_params *p = &c->d->performer;
    double *scratch = (double *)(void *)(shared + (((size_t)L->F * L->D + 15) & ~(size_t)15));
    if (L->W) return;
    if (op == ATTN__STEP) {
        float *key = c->state->data + (size_t)L->F * L->D, want[ATTN__PERF_HEAD];
        const uint32_t lo = (uint32_t)p->seed, hi = (uint32_t)(p->seed >> 32);
        want[0] = 1.0f; memcpy(&want[1], &lo, 4); memcpy(&want[2], &hi, 4); want[3] = (float)p->fixed_norms;
        if (memcmp(key, want, sizeof want) != 0) {
            attn__perf_draw((uint64_t)p->seed, L->F, L->D, p->fixed_norms, c->state->data, scratch);
            memcpy(key, want, sizeof want);
        }
        L->W = c->state->data;
    } else {
        attn__perf_draw((uint64_t)p->seed, L->F, L->D, p->fixed_norms, shared, scratch);
        L->W = shared;
    }
}

/* forward, step (state given) and their workspace queries */
static attn_status attn__lin_run(const attn__call *c, attn__op op) {
    attn__lin L;
    attn__ws w;
    size_t bytes, need;
    attn_status s;
    if ((s = attn__lin_check(c, op, &L)) != ATTN_OK) return s;
    if (op == ATTN__STEP) {
        if (!(need = attn__lin_state_floats(L.F, L.perf, &c->q, &c->k, &c->v))) return ATTN_ERR_OVERFLOW;
        if ((s = attn__check_state(c, need)) != ATTN_OK) return s;
        if (L.cos && c->state->pos > (long long)c->d->cosformer.max_len - c->k.seq) return ATTN_ERR_COSFORMER_MAX_LEN;
        L.pos0 = c->state->pos;
    }
    if (!attn__lin_plan(&L, &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    L.ws = (float *)(void *)w.base + L.shared_floats;   /* ATTN__ALIGN (64-byte) aligned */
    L.isa = attn__vec();
    if (op == ATTN__STEP) L.state = c->state->data;
    if (L.perf) {
        attn__perf_prepare(&L, c, op, (float *)(void *)w.base);
        if (L.state) L.state += (size_t)L.F * L.D + ATTN__PERF_HEAD;
    }
    attn__parallel_for(c->d, L.n_tasks, L.n_threads, L.perf ? attn__perf_task : attn__lin_task, &L);
    if (op == ATTN__STEP) c->state->pos += c->q.seq;
    attn__ws_release(&w);
    return ATTN_OK;
}
static attn_status attn__linear_forward(const attn__call *c) { return attn__lin_run(c, ATTN__FORWARD); }

static attn_status attn__linear_step(const attn__call *c) { return attn__lin_run(c, ATTN__STEP); }
static attn_status attn__linear_state_size(const attn__call *c) {
    attn__lin L;
    attn_status s;
    if ((s = attn__lin_check(c, ATTN__STATE_SIZE, &L)) != ATTN_OK) return s;
    if (!(*c->bytes = attn__lin_state_floats(L.F, L.perf, &c->q, &c->k, &c->v))) return ATTN_ERR_OVERFLOW;
    return ATTN_OK;
}
/* ---- backward of ATTN_LINEAR, ATTN_COSFORMER and ATTN_PERFORMER ------------------------------
   With A_ij the (masked) weights of the forward, num_i = sum_j A_ij v_j, den_i its normaliser
   (den + eps for ATTN_LINEAR, max(den, eps) for ATTN_COSFORMER, den for ATTN_PERFORMER) and
   dO_i the output's gradient: g_i = dO_i / den_i, c_i = -(dO_i . out_i) / den_i (0 where the
   cosFormer clamp is active), dA_ij = g_i . v_j + c_i, and
       dphi(q_i) = sum_j dA_ij phi(k_j),  dphi(k_j) = sum_i dA_ij phi(q_i),  dv_j = sum_i A_ij g_i
   then dq, dk through the features. Per (sequence, KV head) task, two passes over the 64-row
   chunks, every product a GEMM:
     pass 1 (forward order): the forward's state (S, z) gives den_i, out_i, hence g_i, c_i (den_i
       and c_i kept per row); dphi(Q) = g S^T + c z^T + (the chunk's masked dA) phi(K).
     pass 2 (reverse order): a suffix state G = sum_i phi(q_i) g_i^T, h = sum_i c_i phi(q_i) over
       the later chunks' rows (which see every key of this chunk) gives dphi(K) = V G^T + h and
       dV = phi(K) G, plus the chunk's own masked dA^T phi(Q) and A^T g; then the chunk's rows
       join (G, h). The keys every row sees (non-causal: all) take (G, h) at the end.
   ATTN_PERFORMER: gradients flow through q, k and v; W is a constant, and so is every max of the
   stabiliser (the query's own row max and the visible keys' max s_i, as lucidrains' detach():
   exactly the gradient of phi with s held fixed; with eps > 0 the stabiliser's own subgradient
   would add eps-sized terms, which are left out by definition). With the split of the forward,
   phi_{s_i}(k_j) = exp(c_j - s_i) K~_j + eps (K~_j = exp(a_j - c_j), c_j the running max at j):
       dQ~_i = sum_j dA_ij (exp(c_j - s_i) K~_j + eps),  dK~_j = sum_i dA_ij exp(c_j - s_i) Q~_i,
       dv_j = sum_i A_ij g_i
   the suffix state keeps exp(R - s_i) Q~_i g_i^T and exp(R - s_i) c_i Q~_i against R, the
   smallest s of its rows (rescaled when earlier rows lower it), and sum_i sumQ_i g_i for the eps
   part of dv; every exp argument is again <= 0. Then through the features:
       dx = d^-1/4 W^T (dphi . e) - (dphi . e) x / sqrt(d)  summed,  e = exp(u - h - s)
   (ReLU kernel: dx = W^T (dphi . [u > 0]), with u > 0 read as phi > eps). */
typedef struct attn__lbw {
    attn__lin L;
    attn__view dout, dq, dk, dv;
    size_t rows_per;              /* floats of per-task row and key arrays in each slice */
    int hc, nb;                   /* attn__lnc_task: KV heads per task, rows per block */
} attn__lbw;

typedef struct attn__lbw_bufs {
    attn__perf_bufs P;
    float *G, *h, *gs;            /* the suffix state (G [F][Dv], h [F], gs [Dv]) */
    float *XQ, *Gm, *Bm, *BE, *dQ, *dK, *dV, *dX, *Qw;
    float *rden, *rc, *rs, *kc;   /* per task: rows' normaliser, c and s [g][Sq]; keys' max [Sk] */
} attn__lbw_bufs;

/* dx [D] of one ATTN_LINEAR / ATTN_COSFORMER row x [D] with features f [F] at 0-based position
   pos from the gradient t [F] of the features; dx may be x. */
static void attn__lbw_chain_row(const attn__lin *L, int b, const float *x, const float *f, const float *t, float *dx,
                                long long pos) {
    const int D = L->D;
    int d;
    if (L->cos) {
        const double a = attn__lin_ang(L, b) * (double)(pos + 1);
        const float sa = (float)sin(a), ca = (float)cos(a);
        for (d = 0; d < D; ++d) dx[d] = x[d] > 0.0f ? t[d] * sa + t[D + d] * ca : (x[d] <= 0.0f ? 0.0f : x[d]);
    } else {
        L->isa->elu1_grad(dx, x, f, t, D);
    }
}

/* dX [n][D] from dF [n][F] (overwritten) for rows X [n][D] whose features are Fe [n][F]; row r at
   position p0 + r % period (ATTN_COSFORMER); query: Fe includes the Performer eps. */
static void attn__lbw_chain(const attn__lin *L, int b, float *gemm, int n, const float *X, const float *Fe, float *dF, float *dX,
                            long long p0, int period, int query) {
    const attn__isa *isa = L->isa;
    const int F = L->F, D = L->D;
    int r;
    if (L->perf) {
        for (r = 0; r < n; ++r) {
            float *t = dF + (size_t)r * F;
            const float *f = Fe + (size_t)r * F;
            int l;
            if (L->perf == 2) {
                for (l = 0; l < F; ++l) t[l] = f[l] > L->eps ? t[l] : 0.0f;
            } else {
                const float e0 = query ? L->eps : 0.0f;
                for (l = 0; l < F; ++l) t[l] *= f[l] - e0;
            }
        }
        if (n <= ATTN__LIN_FEW) {
            int l;
            for (r = 0; r < n; ++r) {
                memset(dX + (size_t)r * D, 0, (size_t)D * sizeof(float));
                for (l = 0; l < F; ++l) isa->axpy(dX + (size_t)r * D, L->pnorm * dF[(size_t)r * F + l], L->W + (size_t)l * D, D);
            }
        } else {
            attn__sgemm_1t(gemm, 0, 0, n, D, F, L->pnorm, dF, F, L->W, D, 0.0f, dX, D);
        }
        if (L->perf == 1)
            for (r = 0; r < n; ++r) {
                float s = 0.0f;
                int l;
                for (l = 0; l < F; ++l) s += dF[(size_t)r * F + l];
                isa->axpy(dX + (size_t)r * D, -2.0f * L->hmul * s, X + (size_t)r * D, D);
            }
    } else {
        for (r = 0; r < n; ++r) attn__lbw_chain_row(L, b, X + (size_t)r * D, Fe + (size_t)r * F, dF + (size_t)r * F, dX + (size_t)r * D,
                                             p0 + r % period);
    }
}

/* Keys [j0, j0 + n) of (b, hk): raw rows into X, features into B.K, V into B.V; Performer: K~
   with running maxes recorded into kc (fixed: kc given, the second pass). */
static void attn__lbw_keys(const attn__lin *L, attn__lbw_bufs *W, int b, int hk, int j0, int n, long long cnt, int fixed) {
    int j;
    if (L->perf) {
        attn__perf_load_keys(L, &W->P, b, hk, j0, n, cnt > 0, fixed && L->perf == 1 ? W->kc + j0 : NULL);
        if (!fixed && L->perf == 1) memcpy(W->kc + j0, W->P.ck, (size_t)n * sizeof(float));
        return;
    }
    if (L->cos) {
        attn__lin_load_keys(L, &W->P.B, b, hk, j0, n);
        for (j = 0; j < n; ++j) L->isa->load(attn__at(&L->k, b, j0 + j, hk), L->k.dtype, W->P.X + (size_t)j * L->D, L->D, 1.0f);
        return;
    }
    for (j = 0; j < n; ++j) {          /* ATTN_LINEAR: each row read once, phi from the loaded row */
        float *x = W->P.X + (size_t)j * L->D;
        if (n > ATTN__LIN_FEW) { attn__lin_prefetch(&L->k, b, j0 + j + ATTN__LIN_PF, hk); attn__lin_prefetch(&L->v, b, j0 + j + ATTN__LIN_PF, hk); }
        L->isa->load(attn__at(&L->k, b, j0 + j, hk), L->k.dtype, x, L->D, 1.0f);
        L->isa->elu1(W->P.B.K + (size_t)j * L->F, x, NULL, L->D);
        L->isa->load(attn__at(&L->v, b, j0 + j, hk), L->v.dtype, W->P.B.V + (size_t)j * L->Dv, L->Dv, 1.0f);
    }
}

/* Query rows of the chunk: raw into XQ, features into B.Q (Performer: sumq, s, fac too). */
static void attn__lbw_queries(const attn__lin *L, attn__lbw_bufs *W, int b, int hk, int q0, int n, long long pa, int kdone,
                              int Lk, long long cnt) {
    const int g = L->groups, D = L->D;
    int gi, i;
    if (L->perf) { attn__perf_queries(L, &W->P, b, hk, q0, n, pa, kdone, Lk, cnt, W->XQ); return; }
    for (gi = 0; gi < g; ++gi)
        for (i = 0; i < n; ++i) {
            const int r = gi * n + i;
            const void *src = attn__at(&L->q, b, q0 + i, hk * g + gi);
            attn__lin_feat(L, b, src, L->q.dtype, W->P.B.Q + (size_t)r * L->F, W->P.B.row, L->pos0 + q0 + i + (L->causal ? pa - q0 : 0));
            L->isa->load(src, L->q.dtype, W->XQ + (size_t)r * D, D, 1.0f);
            W->P.fac[r] = 1.0f;
            W->P.sumq[r] = 0.0f;
        }
}

/* dK, dV of n loaded keys from the suffix state: dK = V G^T + h, dV = K G (Performer: times
   exp(c_j - R), plus eps gs); then the intra-chunk terms are added by the caller. */
static void attn__lbw_keys_from_state(const attn__lin *L, attn__lbw_bufs *W, int n, const float *kc, float R, int rhas) {
    const attn__isa *isa = L->isa;
    const int F = L->F, Dv = L->Dv;
    int j;
    attn__sgemm_1t(W->P.B.gemm, 0, 1, n, F, Dv, 1.0f, W->P.B.V, Dv, W->G, Dv, 0.0f, W->dK, F);
    attn__sgemm_1t(W->P.B.gemm, 0, 0, n, Dv, F, 1.0f, W->P.B.K, F, W->G, Dv, 0.0f, W->dV, Dv);
    for (j = 0; j < n; ++j) {
        float *dk = W->dK + (size_t)j * F, *dv = W->dV + (size_t)j * Dv;
        isa->axpy(dk, 1.0f, W->h, F);
        if (L->perf == 1) {
            const float f = rhas ? (kc[j] == R ? 1.0f : attn__perf_exp(isa, kc[j] - R)) : 0.0f;
            isa->scal(dk, f, F);
            isa->scal(dv, f, Dv);
            isa->axpy(dv, L->eps, W->gs, Dv);
        }
    }
}

/* Writes the n keys' dk (through the features) and dv rows from j0. */
static void attn__lbw_store_keys(const attn__lin *L, const attn__lbw *C, attn__lbw_bufs *W, int b, int hk, int j0, int n) {
    int j;
    attn__lbw_chain(L, b, W->P.B.gemm, n, W->P.X, W->P.B.K, W->dK, W->dX, j0, INT_MAX, 0);
    for (j = 0; j < n; ++j) {
        L->isa->store(attn__at(&C->dk, b, j0 + j, hk), C->dk.dtype, W->dX + (size_t)j * L->D, L->D, 1.0f);
        L->isa->store(attn__at(&C->dv, b, j0 + j, hk), C->dv.dtype, W->dV + (size_t)j * L->Dv, L->Dv, 1.0f);
    }
}

static void attn__lbw_task(void *ctx, int t, int thread) {
    const attn__lbw *C = (const attn__lbw *)ctx;
    const attn__lin *L = &C->L;
    const attn__isa *isa = L->isa;
    const int Hkv = L->k.heads, b = t / Hkv, hk = t % Hkv, g = L->groups, F = L->F, Dv = L->Dv, D = L->D;
    const int Lq = L->seqlens_q ? L->seqlens_q[b] : L->q.seq, Lk = L->seqlens_k ? L->seqlens_k[b] : L->k.seq;
    const int Sq = L->q.seq, KB = ATTN__LIN_KEYS, split = L->perf == 1;
    const long long shift = (long long)Lk - Lq;
    const size_t per = attn__lin_state_per(F, Dv, 1), R = (size_t)g * ATTN__LIN_ROWS;
    float *w = L->ws + (size_t)thread * L->ws_per, Rref = 0.0f;
    attn__lbw_bufs Wb, *W = &Wb;
    attn__perf_bufs *P = &W->P;
    attn__lin_bufs *B = &P->B;
    long long cnt = 0;
    int q0, gi, i, r, j, kdone = 0, rhas = 0, nchunks, ci, kd0;
    B->S = attn__lin_carve(&w, per + 16);
    B->K = attn__lin_carve(&w, (size_t)F * KB);
    B->V = attn__lin_carve(&w, (size_t)Dv * KB);
    B->Q = attn__lin_carve(&w, R * F);
    B->A = attn__lin_carve(&w, R * ATTN__LIN_ROWS);
    B->num = attn__lin_carve(&w, R * Dv);
    B->den = attn__lin_carve(&w, R);
    B->row = attn__lin_carve(&w, (size_t)ATTN__MAX(D, Dv));
    B->gemm = attn__lin_carve(&w, L->gemm_floats);
    P->X = attn__lin_carve(&w, (size_t)KB * D);
    P->ck = attn__lin_carve(&w, (size_t)KB);
    P->sq = attn__lin_carve(&w, R); P->sumq = attn__lin_carve(&w, R); P->fac = attn__lin_carve(&w, R);
    P->e = attn__lin_carve(&w, ATTN__LIN_ROWS);
    W->G = attn__lin_carve(&w, per + 16);
    W->XQ = attn__lin_carve(&w, R * D);
    W->Gm = attn__lin_carve(&w, R * Dv);
    W->Bm = attn__lin_carve(&w, R * ATTN__LIN_ROWS);
    W->BE = attn__lin_carve(&w, R * ATTN__LIN_ROWS);
    W->dQ = attn__lin_carve(&w, R * F);
    W->dK = attn__lin_carve(&w, (size_t)KB * F);
    W->dV = attn__lin_carve(&w, (size_t)KB * Dv);
    W->dX = attn__lin_carve(&w, ATTN__MAX(R, (size_t)KB) * D);
    W->Qw = attn__lin_carve(&w, R * F);
    W->rden = w; W->rc = W->rden + (size_t)g * Sq; W->rs = W->rc + (size_t)g * Sq; W->kc = W->rs + (size_t)g * Sq;
    memset(B->S, 0, per * sizeof(float));
    B->z = B->S + (size_t)F * Dv; P->vs = B->z + F; P->c = P->vs + Dv;
    memset(W->G, 0, per * sizeof(float));
    W->h = W->G + (size_t)F * Dv; W->gs = W->h + F;

    /* pass 1: den, g, c per row; dq */
    if (!L->causal)
        while (kdone < Lk) {
            const int n = ATTN__MIN(KB, Lk - kdone);
            attn__lbw_keys(L, W, b, hk, kdone, n, cnt, 0);
            if (L->perf) attn__perf_absorb_loaded(L, P, n, cnt); else attn__lin_absorb_loaded(L, B, n);
            cnt += n; kdone += n;
        }
    for (q0 = 0; q0 < Lq; q0 += ATTN__LIN_ROWS) {
        const int n = ATTN__MIN(ATTN__LIN_ROWS, Lq - q0), m = g * n;
        const long long pa = q0 + shift;
        int nk = 0;
        if (L->causal) {
            const int upto = (int)ATTN__MAX(0LL, ATTN__MIN(pa, (long long)Lk));
            while (kdone < upto) {
                const int nb = ATTN__MIN(KB, upto - kdone);
                attn__lbw_keys(L, W, b, hk, kdone, nb, cnt, 0);
                if (L->perf) attn__perf_absorb_loaded(L, P, nb, cnt); else attn__lin_absorb_loaded(L, B, nb);
                cnt += nb; kdone += nb;
            }
            nk = (int)ATTN__MAX(0LL, ATTN__MIN(pa + n, (long long)Lk)) - kdone;
            if (nk > 0) attn__lbw_keys(L, W, b, hk, kdone, nk, cnt, 0);
        }
        attn__lbw_queries(L, W, b, hk, q0, n, pa, kdone, Lk, cnt);
        attn__sgemm_1t(B->gemm, 0, 0, m, Dv, F, 1.0f, B->Q, F, B->S, Dv, 0.0f, B->num, Dv);
        for (r = 0; r < m; ++r) {
            float *nr = B->num + (size_t)r * Dv;
            B->den[r] = isa->dot(B->Q + (size_t)r * F, B->z, F);
            if (split) {
                if (P->fac[r] != 1.0f) { isa->scal(nr, P->fac[r], Dv); B->den[r] *= P->fac[r]; }
                isa->axpy(nr, L->eps * P->sumq[r], P->vs, Dv);
                B->den[r] += L->eps * P->sumq[r] * (float)cnt;
            }
        }
        if (nk > 0) {
            attn__sgemm_1t(B->gemm, 0, 1, m, nk, F, 1.0f, B->Q, F, B->K, F, 0.0f, B->A, nk);
            for (r = 0; r < m; ++r) {
                float *a = B->A + (size_t)r * nk, sum = 0.0f;
                const long long last = pa + r % n - kdone;
                if (split) isa->exp_sum(P->e, P->ck, P->sq[r], nk);
                for (j = 0; j < nk; ++j) {
                    a[j] = j > last ? 0.0f : (split ? P->e[j] * a[j] + L->eps * P->sumq[r] : a[j]);
                    sum += a[j];
                }
                B->den[r] += sum;
            }
            attn__sgemm_1t(B->gemm, 0, 0, m, Dv, nk, 1.0f, B->A, nk, B->V, Dv, 1.0f, B->num, Dv);
        }
        for (gi = 0; gi < g; ++gi)                      /* g = dO / den, c = -(dO . out) / den */
            for (i = 0; i < n; ++i) {
                const int r2 = gi * n + i;
                const size_t at = (size_t)gi * Sq + q0 + i;
                float *gr = W->Gm + (size_t)r2 * Dv, *nr = B->num + (size_t)r2 * Dv, den = B->den[r2], cc;
                const long long vis = L->causal ? ATTN__MIN(pa + i, (long long)Lk - 1) : (long long)Lk - 1;
                int clamped = 0;
                isa->load(attn__at(&C->dout, b, q0 + i, hk * g + gi), C->dout.dtype, gr, Dv, 1.0f);
                if (vis < 0) {
                    memset(gr, 0, (size_t)Dv * sizeof(float));
                    W->rden[at] = 0.0f; W->rc[at] = 0.0f; W->rs[at] = 0.0f;
                    continue;
                }
                if (L->cos) { clamped = !(den > L->eps); den = clamped ? L->eps : den; }
                else if (!L->perf) den += L->eps;
                isa->scal(nr, 1.0f / den, Dv);          /* out */
                cc = clamped ? 0.0f : -isa->dot(gr, nr, Dv) / den;
                isa->scal(gr, 1.0f / den, Dv);
                W->rden[at] = den; W->rc[at] = cc; W->rs[at] = split ? P->sq[r2] : 0.0f;
            }
        /* dphi(Q) = fac (g S^T + c z) [+ eps ((g . vs) + c n)] + (dA . E) phi(K) [+ eps rowsum dA] */
        attn__sgemm_1t(B->gemm, 0, 1, m, F, Dv, 1.0f, W->Gm, Dv, B->S, Dv, 0.0f, W->dQ, F);
        for (r = 0; r < m; ++r) {
            const float cc = W->rc[(size_t)(r / n) * Sq + q0 + r % n];
            float *dq = W->dQ + (size_t)r * F;
            isa->axpy(dq, cc, B->z, F);
            if (split) {
                const float add = L->eps * (isa->dot(W->Gm + (size_t)r * Dv, P->vs, Dv) + cc * (float)cnt);
                int l;
                if (P->fac[r] != 1.0f) isa->scal(dq, P->fac[r], F);
                for (l = 0; l < F; ++l) dq[l] += add;
            }
        }
        if (nk > 0) {
            attn__sgemm_1t(B->gemm, 0, 1, m, nk, Dv, 1.0f, W->Gm, Dv, B->V, Dv, 0.0f, W->Bm, nk);
            for (r = 0; r < m; ++r) {
                const float cc = W->rc[(size_t)(r / n) * Sq + q0 + r % n];
                const long long last = pa + r % n - kdone;
                float *bm = W->Bm + (size_t)r * nk, *be = W->BE + (size_t)r * nk, rs = 0.0f;
                if (split) isa->exp_sum(P->e, P->ck, P->sq[r], nk);
                for (j = 0; j < nk; ++j) {
                    bm[j] = j > last ? 0.0f : bm[j] + cc;
                    rs += bm[j];
                    be[j] = split ? (j > last ? 0.0f : bm[j] * P->e[j]) : bm[j];
                }
                if (split) {
                    float *dq = W->dQ + (size_t)r * F;
                    int l;
                    for (l = 0; l < F; ++l) dq[l] += L->eps * rs;
                }
            }
            attn__sgemm_1t(B->gemm, 0, 0, m, F, nk, 1.0f, W->BE, nk, B->K, F, 1.0f, W->dQ, F);
        }
        attn__lbw_chain(L, b, B->gemm, m, W->XQ, B->Q, W->dQ, W->dX, L->causal ? pa : q0, n, 1);
        for (gi = 0; gi < g; ++gi)
            for (i = 0; i < n; ++i)
                isa->store(attn__at(&C->dq, b, q0 + i, hk * g + gi), C->dq.dtype, W->dX + (size_t)(gi * n + i) * D, D, 1.0f);
        if (nk > 0) {
            if (L->perf) attn__perf_absorb_loaded(L, P, nk, cnt); else attn__lin_absorb_loaded(L, B, nk);
            cnt += nk; kdone += nk;
        }
    }
    for (gi = 0; gi < g; ++gi)
        for (i = Lq; i < Sq; ++i) attn__store_zero_row(attn__at(&C->dq, b, i, hk * g + gi), C->dq.dtype, D);

    /* pass 2, last chunk first: dk, dv */
    nchunks = (Lq + ATTN__LIN_ROWS - 1) / ATTN__LIN_ROWS;
    for (ci = nchunks - 1; ci >= 0; --ci) {
        const int qc = ci * ATTN__LIN_ROWS, n = ATTN__MIN(ATTN__LIN_ROWS, Lq - qc), m = g * n;
        const long long pa = qc + shift;
        const int kd = L->causal ? (int)ATTN__MAX(0LL, ATTN__MIN(pa, (long long)Lk)) : Lk;
        const int nk = L->causal ? (int)ATTN__MAX(0LL, ATTN__MIN(pa + n, (long long)Lk)) - kd : 0;
        int first = -1;
        attn__lbw_queries(L, W, b, hk, qc, n, pa, kd, Lk, 1);
        for (r = 0; r < m; ++r) {
            const size_t at = (size_t)(r / n) * Sq + qc + r % n;
            float *gr = W->Gm + (size_t)r * Dv;
            if (W->rden[at] == 0.0f) { memset(gr, 0, (size_t)Dv * sizeof(float)); P->sq[r] = 0.0f; continue; }
            isa->load(attn__at(&C->dout, b, qc + r % n, hk * g + r / n), C->dout.dtype, gr, Dv, 1.0f);
            isa->scal(gr, 1.0f / W->rden[at], Dv);
            P->sq[r] = W->rs[at];
            if (first < 0 || r % n < first % n) first = r;
        }
        if (nk > 0) {
            attn__lbw_keys(L, W, b, hk, kd, nk, 1, 1);
            attn__lbw_keys_from_state(L, W, nk, W->kc + kd, Rref, rhas);
            attn__sgemm_1t(B->gemm, 0, 1, m, nk, F, 1.0f, B->Q, F, B->K, F, 0.0f, B->A, nk);
            attn__sgemm_1t(B->gemm, 0, 1, m, nk, Dv, 1.0f, W->Gm, Dv, B->V, Dv, 0.0f, W->Bm, nk);
            for (r = 0; r < m; ++r) {
                const size_t at = (size_t)(r / n) * Sq + qc + r % n;
                const float cc = W->rc[at];
                const long long last = W->rden[at] == 0.0f ? -1 : pa + r % n - kd;
                float *a = B->A + (size_t)r * nk, *bm = W->Bm + (size_t)r * nk;
                if (split) isa->exp_sum(P->e, W->kc + kd, P->sq[r], nk);
                for (j = 0; j < nk; ++j) {
                    if (j > last) { a[j] = 0.0f; bm[j] = 0.0f; continue; }
                    a[j] = split ? P->e[j] * a[j] + L->eps * P->sumq[r] : a[j];
                    bm[j] = split ? (bm[j] + cc) * P->e[j] : bm[j] + cc;
                }
            }
            attn__sgemm_1t(B->gemm, 1, 0, nk, F, m, 1.0f, W->Bm, nk, B->Q, F, 1.0f, W->dK, F);
            attn__sgemm_1t(B->gemm, 1, 0, nk, Dv, m, 1.0f, B->A, nk, W->Gm, Dv, 1.0f, W->dV, Dv);
            attn__lbw_store_keys(L, C, W, b, hk, kd, nk);
        }
        if (first >= 0) {                               /* the chunk's rows join the suffix state */
            const float Rn = split ? P->sq[first] : 0.0f;
            if (split) {
                if (rhas && Rn < Rref) {
                    const float f = attn__perf_exp(isa, Rn - Rref);
                    isa->scal(W->G, f, F * Dv);
                    isa->scal(W->h, f, F);
                }
                if (!rhas || Rn < Rref) Rref = Rn;
                rhas = 1;
            }
            for (r = 0; r < m; ++r) {
                const size_t at = (size_t)(r / n) * Sq + qc + r % n;
                const float wr = W->rden[at] == 0.0f ? 0.0f :
                                 (split && P->sq[r] != Rref ? attn__perf_exp(isa, Rref - P->sq[r]) : 1.0f);
                float *qw = W->Qw + (size_t)r * F;
                memcpy(qw, B->Q + (size_t)r * F, (size_t)F * sizeof(float));
                isa->scal(qw, wr, F);
                isa->axpy(W->h, W->rc[at], qw, F);
                if (split && wr != 0.0f) isa->axpy(W->gs, P->sumq[r], W->Gm + (size_t)r * Dv, Dv);
            }
            attn__sgemm_1t(B->gemm, 1, 0, F, Dv, m, 1.0f, W->Qw, F, W->Gm, Dv, 1.0f, W->G, Dv);
        }
    }
    kd0 = L->causal ? (int)ATTN__MAX(0LL, ATTN__MIN(shift, (long long)Lk)) : Lk;   /* keys every row sees */
    if (Lq == 0) kd0 = Lk;
    for (j = 0; j < kd0; j += KB) {
        const int n = ATTN__MIN(KB, kd0 - j);
        attn__lbw_keys(L, W, b, hk, j, n, 1, 1);
        attn__lbw_keys_from_state(L, W, n, W->kc + j, Rref, rhas);
        attn__lbw_store_keys(L, C, W, b, hk, j, n);
    }
    for (j = Lk; j < L->k.seq; ++j) {
        attn__store_zero_row(attn__at(&C->dk, b, j, hk), C->dk.dtype, D);
        attn__store_zero_row(attn__at(&C->dv, b, j, hk), C->dv.dtype, Dv);
    }
}

/* ---- the non-causal backward of ATTN_LINEAR and ATTN_COSFORMER: no forward recomputed --------
   Every row sees every key, so the two sums KV = phi(K)^T V [F][Dv] and z = sum_j phi(k_j) are
   built once per (sequence, KV head), and with den_i = phi(q_i) . z + eps (cosFormer: max(., eps))
   and T = dO KV^T the output's gradient needs no out: dO_i . out_i = (T_i . phi(q_i)) / den_i, so
       c_i = -(T_i . phi(q_i)) / den_i^2 (0 where the cosFormer clamp is active),
       dphi(q_i) = T_i / den_i + c_i z,   dKV = sum_i phi(q_i) (dO_i / den_i)^T,   dz = sum_i c_i phi(q_i),
       dphi(k_j) = dKV v_j + dz,          dv_j = dKV^T phi(k_j).
   Three passes over blocks of nb rows: keys into (KV, z); query rows to dq and into (dKV, dz);
   keys again to dk, dv. 10 F Dv flops per (row, head), each row read once or twice.
   A task takes a run of KV heads (all of them on one thread) and stages each block of rows of
   every head it owns in address order, [row][head][dim], so a [seq][heads][dim] tensor streams
   through the hardware prefetchers instead of being walked one head at a time (a 2 KiB stride
   at H 8, D 64: the per-head walk read its rows at about 4 GB/s); gradients are staged the
   same way and written back in address order. Per head each product is a GEMM on the staged
   rows (leading dimension heads x dim), and nb depends on the shapes alone, so every head's sums
   run in one order whatever the thread count and the heads per task: bitwise the same results. */
typedef struct attn__lnc_bufs {
    float *S, *G;                 /* per head: (KV [F][Dv], z [F]), (dKV, dz), st floats apart */
    float *X, *V, *dV;            /* staged rows: raw q or k (then their gradients) [nb][heads][D], dO or v, dv */
    float *K, *T, *row, *gemm;    /* one head's features [nb][F] and their gradient [nb][F]; scratch */
} attn__lnc_bufs;

#define ATTN__LNC_STAGE 98304     /* floats of staged rows per block at full heads (384 KiB) */
static size_t attn__lnc_st(const attn__lin *L) { return ((size_t)L->F * L->Dv + L->F + 15) & ~(size_t)15; }

/* Stages rows [r0, r0 + n) of heads [h0, h0 + nh) of x into X, of y into Y (dims dx, dy). */
static void attn__lnc_stage(const attn__isa *isa, const attn__view *x, const attn__view *y, int b, int h0, int nh, int r0,
                            int n, float *X, float *Y) {
    int i, h;
    for (i = 0; i < n; ++i)
        for (h = 0; h < nh; ++h) {
            isa->load(attn__at(x, b, r0 + i, h0 + h), x->dtype, X + ((size_t)i * nh + h) * x->dim, x->dim, 1.0f);
            isa->load(attn__at(y, b, r0 + i, h0 + h), y->dtype, Y + ((size_t)i * nh + h) * y->dim, y->dim, 1.0f);
        }
}

/* Writes staged rows back (the inverse of attn__lnc_stage, y optional); rows past n up to
   `to` get 0 (the padding of a shorter sequence). */
static void attn__lnc_unstage(const attn__isa *isa, const attn__view *x, const attn__view *y, int b, int h0, int nh, int r0,
                              int n, int to, const float *X, const float *Y) {
    int i, h;
    for (i = 0; i < n; ++i)
        for (h = 0; h < nh; ++h) {
            isa->store(attn__at(x, b, r0 + i, h0 + h), x->dtype, X + ((size_t)i * nh + h) * x->dim, x->dim, 1.0f);
            if (y) isa->store(attn__at(y, b, r0 + i, h0 + h), y->dtype, Y + ((size_t)i * nh + h) * y->dim, y->dim, 1.0f);
        }
    for (i = r0 + n; i < to; ++i)
        for (h = 0; h < nh; ++h) {
            attn__store_zero_row(attn__at(x, b, i, h0 + h), x->dtype, x->dim);
            if (y) attn__store_zero_row(attn__at(y, b, i, h0 + h), y->dtype, y->dim);
        }
}

/* Features [n][F] of head h's staged rows X (nh heads a row), rows from position p0. */
static void attn__lnc_feats(const attn__lin *L, int b, const float *X, int nh, int h, int n, long long p0, float *K) {
    int i;
    for (i = 0; i < n; ++i) attn__lin_feat_row(L, b, X + ((size_t)i * nh + h) * L->D, K + (size_t)i * L->F, p0 + i);
}

static void attn__lnc_task(void *ctx, int t, int thread) {
    const attn__lbw *C = (const attn__lbw *)ctx;
    const attn__lin *L = &C->L;
    const attn__isa *isa = L->isa;
    const int Hkv = L->k.heads, nch = (Hkv + C->hc - 1) / C->hc, b = t / nch, hk0 = t % nch * C->hc;
    const int nh = ATTN__MIN(C->hc, Hkv - hk0), g = L->groups, nq = nh * g, hq0 = hk0 * g, F = L->F, Dv = L->Dv, D = L->D;
    const int Lq = L->seqlens_q ? L->seqlens_q[b] : L->q.seq, Lk = L->seqlens_k ? L->seqlens_k[b] : L->k.seq, NB = C->nb;
    const size_t st = attn__lnc_st(L), ldv = (size_t)nh * Dv, ldq = (size_t)nq * Dv;
    float *w = L->ws + (size_t)thread * L->ws_per;
    attn__lnc_bufs B;
    int r0, n, h, i;
    B.S = attn__lin_carve(&w, nh * st);
    B.G = attn__lin_carve(&w, nh * st);
    B.K = attn__lin_carve(&w, (size_t)NB * F);
    B.T = attn__lin_carve(&w, (size_t)NB * F);
    B.row = attn__lin_carve(&w, (size_t)ATTN__MAX(D, Dv));
    B.gemm = attn__lin_carve(&w, L->gemm_floats);
    B.X = attn__lin_carve(&w, (size_t)NB * ATTN__MAX(nh, nq) * D);
    B.V = attn__lin_carve(&w, (size_t)NB * ATTN__MAX(nh, nq) * Dv);
    B.dV = attn__lin_carve(&w, (size_t)NB * nh * Dv);
    memset(B.S, 0, (size_t)nh * st * sizeof(float));
    memset(B.G, 0, (size_t)nh * st * sizeof(float));

    if (Lk == 0) {                                      /* no key: out = 0, every gradient 0 */
        attn__lnc_unstage(isa, &C->dq, NULL, b, hq0, nq, 0, 0, L->q.seq, NULL, NULL);
        attn__lnc_unstage(isa, &C->dk, &C->dv, b, hk0, nh, 0, 0, L->k.seq, NULL, NULL);
        return;
    }
    for (r0 = 0; r0 < Lk; r0 += n) {                    /* KV += phi(K)^T V, z += sum phi(k) */
        n = ATTN__MIN(NB, Lk - r0);
        attn__lnc_stage(isa, &L->k, &L->v, b, hk0, nh, r0, n, B.X, B.V);
        for (h = 0; h < nh; ++h) {
            float *S = B.S + h * st;
            attn__lnc_feats(L, b, B.X, nh, h, n, L->pos0 + r0, B.K);
            attn__sgemm_1t(B.gemm, 1, 0, F, Dv, n, 1.0f, B.K, F, B.V + (size_t)h * Dv, (ptrdiff_t)ldv, 1.0f, S, Dv);
            for (i = 0; i < n; ++i) isa->axpy(S + (size_t)F * Dv, 1.0f, B.K + (size_t)i * F, F);
        }
    }

    for (r0 = 0; r0 < Lq; r0 += n) {                    /* dq; dKV, dz */
        n = ATTN__MIN(NB, Lq - r0);
        attn__lnc_stage(isa, &L->q, &C->dout, b, hq0, nq, r0, n, B.X, B.V);
        for (h = 0; h < nq; ++h) {                      /* query head hq0 + h reads KV head hk0 + h / g */
            const float *S = B.S + (size_t)(h / g) * st, *z = S + (size_t)F * Dv;
            float *G = B.G + (size_t)(h / g) * st, *gv = B.V + (size_t)h * Dv;
            attn__lnc_feats(L, b, B.X, nq, h, n, L->pos0 + r0, B.K);
            attn__sgemm_1t(B.gemm, 0, 1, n, F, Dv, 1.0f, gv, (ptrdiff_t)ldq, S, Dv, 0.0f, B.T, F);     /* T = dO KV^T */
            for (i = 0; i < n; ++i) {
                const float *fq = B.K + (size_t)i * F;
                float *tr = B.T + (size_t)i * F, *x = B.X + ((size_t)i * nq + h) * D, den = isa->dot(fq, z, F), cc;
                int clamped = 0;
                if (L->cos) { clamped = !(den > L->eps); den = clamped ? L->eps : den; }
                else den += L->eps;
                cc = clamped ? 0.0f : -(isa->dot(tr, fq, F) / den) / den;
                isa->scal(tr, 1.0f / den, F);
                isa->axpy(tr, cc, z, F);                /* dphi(q) */
                isa->scal(gv + i * ldq, 1.0f / den, Dv);
                isa->axpy(G + (size_t)F * Dv, cc, fq, F);   /* dz */
                attn__lbw_chain_row(L, b, x, fq, tr, x, r0 + i);   /* dq over the staged q row */
            }
            attn__sgemm_1t(B.gemm, 1, 0, F, Dv, n, 1.0f, B.K, F, gv, (ptrdiff_t)ldq, 1.0f, G, Dv);   /* dKV */
        }
        attn__lnc_unstage(isa, &C->dq, NULL, b, hq0, nq, r0, n, r0 + n < Lq ? 0 : L->q.seq, B.X, NULL);
    }
    if (Lq == 0) attn__lnc_unstage(isa, &C->dq, NULL, b, hq0, nq, 0, 0, L->q.seq, NULL, NULL);

    for (r0 = 0; r0 < Lk; r0 += n) {                    /* dk = chain(V dKV^T + dz), dv = phi(K) dKV */
        n = ATTN__MIN(NB, Lk - r0);
        attn__lnc_stage(isa, &L->k, &L->v, b, hk0, nh, r0, n, B.X, B.V);
        for (h = 0; h < nh; ++h) {
            const float *G = B.G + h * st;
            attn__lnc_feats(L, b, B.X, nh, h, n, L->pos0 + r0, B.K);
            attn__sgemm_1t(B.gemm, 0, 1, n, F, Dv, 1.0f, B.V + (size_t)h * Dv, (ptrdiff_t)ldv, G, Dv, 0.0f, B.T, F);
            attn__sgemm_1t(B.gemm, 0, 0, n, Dv, F, 1.0f, B.K, F, G, Dv, 0.0f, B.dV + (size_t)h * Dv, (ptrdiff_t)ldv);
            for (i = 0; i < n; ++i) {
                float *x = B.X + ((size_t)i * nh + h) * D, *tr = B.T + (size_t)i * F;
                isa->axpy(tr, 1.0f, G + (size_t)F * Dv, F);
                attn__lbw_chain_row(L, b, x, B.K + (size_t)i * F, tr, x, r0 + i);
            }
        }
        attn__lnc_unstage(isa, &C->dk, &C->dv, b, hk0, nh, r0, n, r0 + n < Lk ? 0 : L->k.seq, B.X, B.dV);
    }
}

static int attn__lbw_add(size_t *f, size_t a, size_t b) {    /* *f += roundup16(a * b) */
    size_t t;
    if (!attn__mul_size(a, b, &t) || !attn__add_size(t, 15, &t)) return 0;
    return attn__add_size(*f, t & ~(size_t)15, f);
}

/* attn_backward (and its workspace query) for the three kinds of the ATTN_LINEAR core */
static attn_status attn__linear_backward(const attn__call *c) {
    attn__lbw C;
    attn__lin *L = &C.L;
    attn__ws w;
    size_t bytes, f = 0, t;
    attn_status s;
    memset(&C, 0, sizeof C);
    if ((s = attn__lin_check(c, ATTN__BACKWARD, L)) != ATTN_OK) return s;
    if (c->lse_in) return ATTN_ERR_KIND_LSE;
    if (!c->bytes) {
        attn__view qv, kv, vv, ov;
        const attn_tensor *dq = &c->dq, *dk = &c->dk, *dv = &c->dv, *dout = &c->dout;
        if ((s = attn__check_qkv(&c->q, &c->k, &c->v, &c->out, &qv, &kv, &vv, &ov)) != ATTN_OK) return s;
        if (!dout->data) return ATTN_ERR_BWD_NULL_DOUT;
        if (!dq->data) return ATTN_ERR_BWD_NULL_DQ;
        if (!dk->data) return ATTN_ERR_BWD_NULL_DK;
        if (!dv->data) return ATTN_ERR_BWD_NULL_DV;
        if (!attn__dtype_ok(dout->dtype) || !attn__dtype_ok(dq->dtype) || !attn__dtype_ok(dk->dtype) || !attn__dtype_ok(dv->dtype))
            return ATTN_ERR_DTYPE;
        if (dout->batch != c->q.batch || dout->seq != c->q.seq || dout->heads != c->q.heads || dout->dim != c->v.dim)
            return ATTN_ERR_BWD_DOUT_SHAPE;
        if (dq->batch != c->q.batch || dq->seq != c->q.seq || dq->heads != c->q.heads || dq->dim != c->q.dim) return ATTN_ERR_BWD_DQ_SHAPE;
        if (dk->batch != c->k.batch || dk->seq != c->k.seq || dk->heads != c->k.heads || dk->dim != c->k.dim) return ATTN_ERR_BWD_DK_SHAPE;
        if (dv->batch != c->v.batch || dv->seq != c->v.seq || dv->heads != c->v.heads || dv->dim != c->v.dim) return ATTN_ERR_BWD_DV_SHAPE;
        if (attn__tensor_bcast(dq)) return ATTN_ERR_BWD_DQ_BROADCAST;
        if (attn__tensor_bcast(dk)) return ATTN_ERR_BWD_DK_BROADCAST;
        if (attn__tensor_bcast(dv)) return ATTN_ERR_BWD_DV_BROADCAST;
        if ((s = attn__make_view(dout, &C.dout)) != ATTN_OK || (s = attn__make_view(dq, &C.dq)) != ATTN_OK ||
            (s = attn__make_view(dk, &C.dk)) != ATTN_OK || (s = attn__make_view(dv, &C.dv)) != ATTN_OK) return s;
    }
    if (!attn__lin_plan(L, &bytes)) return ATTN_ERR_OVERFLOW;    /* forward GEMM shapes, W's shared floats */
    if (!L->causal && !L->perf) {                                /* attn__lnc_task */
        const int F = L->F, Dv = L->Dv, D = L->D, Hkv = c->k.heads, g = L->groups;
        /* rows per block from the shapes alone (results must not depend on the threads): the
           staged rows of every head, about ATTN__LNC_STAGE floats */
        const double per_row = (double)Hkv * ATTN__MAX((double)g * (D + Dv), (double)D + 2.0 * Dv);
        int nch, nb = per_row * 256 <= ATTN__LNC_STAGE ? 256 : (int)(ATTN__LNC_STAGE / per_row) & ~15;
        size_t hc, hq;
        C.nb = nb = ATTN__MAX(16, nb);
        /* KV heads per task: all of them on one thread; else about 2 tasks per thread */
        nch = L->n_threads <= 1 ? 1 : (int)ATTN__MIN((size_t)Hkv, ((size_t)2 * L->n_threads + c->q.batch - 1) / c->q.batch);
        C.hc = (Hkv + nch - 1) / nch;
        nch = (Hkv + C.hc - 1) / C.hc;
        if (!attn__tasks((size_t)c->q.batch, (size_t)nch, 1, &L->n_tasks)) return ATTN_ERR_OVERFLOW;
        L->n_threads = ATTN__MIN(L->n_threads, L->n_tasks);
        hc = (size_t)C.hc; hq = hc * (size_t)g;
        L->gemm_floats = ATTN__MAX(ATTN__MAX(attn__sgemm_1t_floats(F, Dv, nb), attn__sgemm_1t_floats(nb, F, Dv)),
                                   attn__sgemm_1t_floats(nb, Dv, F));
        if (!attn__mul_size(hc, attn__lnc_st(L), &t) || !attn__lbw_add(&f, t, 2) || !attn__lbw_add(&f, (size_t)nb, 2 * (size_t)F) ||
            !attn__lbw_add(&f, ATTN__MAX(D, Dv), 1) || !attn__lbw_add(&f, L->gemm_floats, 1) ||
            !attn__mul_size((size_t)nb, hq, &t) || !attn__lbw_add(&f, t, D) || !attn__lbw_add(&f, t, Dv) ||
            !attn__lbw_add(&f, (size_t)nb * hc, Dv) || !attn__add_size(f, 64, &f))
            return ATTN_ERR_OVERFLOW;
        L->ws_per = f;
        if (!attn__mul_size(f, (size_t)L->n_threads, &t) || !attn__mul_size(t, sizeof(float), &bytes) ||
            !attn__add_size(bytes, 64, &bytes) || bytes > (size_t)PTRDIFF_MAX)
            return ATTN_ERR_OVERFLOW;
    } else {
        const int F = L->F, Dv = L->Dv, D = L->D, gr = (int)ATTN__MIN((size_t)L->groups * ATTN__LIN_ROWS, (size_t)INT_MAX);
        const int KB = ATTN__LIN_KEYS, CH = ATTN__LIN_ROWS;
        const size_t R = (size_t)gr, per = attn__lin_state_per(F, Dv, 1);
        const int shapes[][3] = { { gr, F, Dv }, { gr, CH, Dv }, { gr, F, CH }, { KB, F, Dv }, { KB, Dv, F }, { CH, F, gr },
                                  { CH, Dv, gr }, { F, Dv, gr }, { gr, D, F }, { KB, D, F }, { gr, Dv, F }, { gr, CH, F },
                                  { gr, Dv, CH }, { F, Dv, KB }, { KB, F, D }, { gr, F, D } };
        size_t i, rows;
        if (!per) return ATTN_ERR_OVERFLOW;
        for (i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
            L->gemm_floats = ATTN__MAX(L->gemm_floats, attn__sgemm_1t_floats(shapes[i][0], shapes[i][1], shapes[i][2]));
        if (!attn__lbw_add(&f, per + 16, 2) || !attn__lbw_add(&f, F, KB) || !attn__lbw_add(&f, Dv, KB) ||
            !attn__lbw_add(&f, R, F) || !attn__lbw_add(&f, R, CH) || !attn__lbw_add(&f, R, Dv) || !attn__lbw_add(&f, R, 1) ||
            !attn__lbw_add(&f, ATTN__MAX(D, Dv), 1) || !attn__lbw_add(&f, L->gemm_floats, 1) || !attn__lbw_add(&f, KB, D) ||
            !attn__lbw_add(&f, KB, 1) || !attn__lbw_add(&f, R, 3) || !attn__lbw_add(&f, CH, 1) ||
            !attn__lbw_add(&f, R, D) || !attn__lbw_add(&f, R, Dv) || !attn__lbw_add(&f, R, 2 * CH) || !attn__lbw_add(&f, R, 2 * (size_t)F) ||
            !attn__lbw_add(&f, KB, F) || !attn__lbw_add(&f, KB, Dv) || !attn__lbw_add(&f, ATTN__MAX(R, (size_t)KB), D) ||
            !attn__mul_size((size_t)L->groups * 3, (size_t)c->q.seq, &rows) || !attn__add_size(rows, (size_t)c->k.seq, &rows) ||
            !attn__lbw_add(&f, rows, 1) || !attn__add_size(f, 64, &f))   /* + the carves' rounding */
            return ATTN_ERR_OVERFLOW;
        L->ws_per = f;
        if (!attn__mul_size(f, (size_t)L->n_threads, &t) || !attn__add_size(t, L->shared_floats, &t) ||
            !attn__mul_size(t, sizeof(float), &bytes) || !attn__add_size(bytes, 64, &bytes) || bytes > (size_t)PTRDIFF_MAX)
            return ATTN_ERR_OVERFLOW;
    }
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    L->ws = (float *)(void *)w.base + L->shared_floats;
    L->isa = attn__vec();
    if (L->perf) attn__perf_prepare(L, c, ATTN__BACKWARD, (float *)(void *)w.base);
    attn__parallel_for(c->d, L->n_tasks, L->n_threads, !L->causal && !L->perf ? attn__lnc_task : attn__lbw_task, &C);
    attn__ws_release(&w);
    return ATTN_OK;
}

static const attn__mech attn__mech_linear = {
    attn__linear_forward, attn__linear_backward, NULL, attn__linear_step, attn__linear_state_size
};
/* ATTN_COSFORMER: the same core with its features (attn__lin_feat) and clamped denominator */
static const attn__mech attn__mech_cosformer = {
    attn__linear_forward, attn__linear_backward, NULL, attn__linear_step, attn__linear_state_size
};

/* ATTN_PERFORMER: the same core with random features and the split, stabilised state */
static const attn__mech attn__mech_performer = {
    attn__linear_forward, attn__linear_backward, NULL, attn__linear_step, attn__linear_state_size
};

/* ---- RWKV -----------------------------------------------------------------------------------
   RWKV-4 WKV and RWKV-5/6 time mixing as scans (attn_rwkv4_*, attn_rwkv6_*; section 2 has the
   maths). Work is split into tasks whose boundaries depend only on the shapes (channel blocks
   of ATTN__RWKV4_BLOCK, or heads), each task runs the whole sequence of its channels in order,
   so every output is computed by the same operations whatever the thread count, the piece
   boundaries or forward vs step. */
#define ATTN__RWKV4_BLOCK 64

/* The attn_desc carrying only the threading fields, for attn__parallel_for. */
static void attn__rwkv_pdesc(const attn_rwkv_desc *d, attn_desc *pd) {
    memset(pd, 0, sizeof *pd);
    pd->n_threads = d->n_threads; pd->parallel = d->parallel; pd->parallel_user = d->parallel_user;
}

/* t has ref's batch, seq, heads and dim. */
static int attn__rwkv_same_shape(const attn_tensor *t, const attn_tensor *ref) {
    return t->batch == ref->batch && t->seq == ref->seq && t->heads == ref->heads && t->dim == ref->dim;
}

/* The memory rule of attn_tensor for both scans: state_out is state_in itself or apart from it
   (ATTN_ERR_RWKV_STATE_ALIAS); out's rows do not overlap, and out and state_out (st floats) meet
   no input (the views, then the C-float arrays a, b) and not each other (ATTN_ERR_RWKV_OVERLAP).
   Before any write, so a refused call leaves out and the state untouched. */
static attn_status attn__rwkv_overlap(const attn__view *const *in, int n_in, const attn__view *out, const float *a,
                                      const float *b, size_t C, const float *state_in, float *state_out, size_t st) {
    attn__ovl o;
    int i;
    attn__ovl_init(&o);
    if (!attn__ovl_state(&o, state_in, state_out, st)) return ATTN_ERR_RWKV_STATE_ALIAS;
    for (i = 0; i < n_in; ++i) attn__ovl_view(&o, 0, in[i]);
    attn__ovl_view(&o, 1, out);
    attn__ovl_mem(&o, 0, a, C, sizeof(float));
    attn__ovl_mem(&o, 0, b, C, sizeof(float));
    return attn__ovl_bad(&o) ? ATTN_ERR_RWKV_OVERLAP : ATTN_OK;
}

/* Every element of the view in [lo, hi] (NaN is not); axes with stride 0 are read once. */
static int attn__rwkv_range_ok(const attn__view *v, float lo, float hi) {
    const int nb = v->sb == 0 ? 1 : v->batch, ns = v->ss == 0 ? 1 : v->seq, nh = v->sh == 0 ? 1 : v->heads;
    int b, s, h, i;
    for (b = 0; b < nb; ++b)
        for (s = 0; s < ns; ++s)
            for (h = 0; h < nh; ++h) {
                const void *row = attn__at(v, b, s, h);
                for (i = 0; i < v->dim; ++i) {
                    const float x = v->dtype == ATTN_F32 ? ((const float *)row)[i]
                                  : v->dtype == ATTN_F16 ? attn__f16_to_f32(((const uint16_t *)row)[i])
                                                         : attn__bf16_to_f32(((const uint16_t *)row)[i]);
                    if (!(x >= lo && x <= hi)) return 0;
                }
            }
    return 1;
}

/* Tokens ahead of the current one whose rows a task prefetches: a task reads one block of
   every token's row, a walk with a stride of the row length (often a page) that the hardware
   prefetchers do not follow. */
#define ATTN__RWKV_PREFETCH 8
static void attn__rwkv_prefetch(const void *p, size_t bytes, int write) {
#if defined(__GNUC__) || defined(__clang__)
    size_t off;
    if (write) for (off = 0; off < bytes; off += 64) __builtin_prefetch((const char *)p + off, 1, 3);
    else for (off = 0; off < bytes; off += 64) __builtin_prefetch((const char *)p + off, 0, 3);
#else
    (void)p; (void)bytes; (void)write;
#endif
}

static int attn__rwkv_finite(const float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) if (!isfinite(x[i])) return 0;
    return 1;
}

/* ---- RWKV-4 ---- */
#define ATTN__RWKV_CHUNK 16     /* tokens of one block (or head) run before the task moves on */
#define ATTN__RWKV4_SUB 8       /* channel blocks a task holds at once */

/* One block's constants and running state. */
typedef struct attn__rwkv4_blk {
    float w[ATTN__RWKV4_BLOCK], u[ATTN__RWKV4_BLOCK];
    float aa[ATTN__RWKV4_BLOCK], bb[ATTN__RWKV4_BLOCK], pp[ATTN__RWKV4_BLOCK];
} attn__rwkv4_blk;

typedef struct attn__rwkv4_ctx {
    const attn__isa *isa;
    attn__view k, v, out;
    const float *time_decay, *time_first, *state_in;
    float *state_out;
    int C, nblk, groups;          /* channels, blocks per tensor head, task groups per batch entry */
} attn__rwkv4_ctx;

/* Tokens [t0, t1) of one block of n <= 64 channels (tensor head h, dims [d0, d0 + n)). The
   four exps of a token (two for the output, two for the state update) depend only on the old
   state and k, so they run as one vector-layer exp over 4n values. */
static void attn__rwkv4_tokens(const attn__rwkv4_ctx *X, attn__rwkv4_blk *B, int b, int h, int d0, int n, int t0, int t1) {
    const attn__isa *isa = X->isa;
    float kk[ATTN__RWKV4_BLOCK], vv[ATTN__RWKV4_BLOCK], y[ATTN__RWKV4_BLOCK], pn[ATTN__RWKV4_BLOCK];
    float x[4 * ATTN__RWKV4_BLOCK], e[4 * ATTN__RWKV4_BLOCK];
    float *aa = B->aa, *bb = B->bb, *pp = B->pp;
    const float *w = B->w, *u = B->u;
    int t, j;
    for (t = t0; t < t1; ++t) {
        if (t + ATTN__RWKV_CHUNK < X->k.seq) {   /* this block's row of the next chunk */
            const int tp = t + ATTN__RWKV_CHUNK;
            attn__rwkv_prefetch((const char *)attn__at(&X->k, b, tp, h) + (size_t)d0 * X->k.esize, (size_t)n * X->k.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->v, b, tp, h) + (size_t)d0 * X->v.esize, (size_t)n * X->v.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->out, b, tp, h) + (size_t)d0 * X->out.esize, (size_t)n * X->out.esize, 1);
        }
        isa->load((const char *)attn__at(&X->k, b, t, h) + (size_t)d0 * X->k.esize, X->k.dtype, kk, n, 1.0f);
        isa->load((const char *)attn__at(&X->v, b, t, h) + (size_t)d0 * X->v.esize, X->v.dtype, vv, n, 1.0f);
        for (j = 0; j < n; ++j) {
            const float ww = u[j] + kk[j], p = pp[j] > ww ? pp[j] : ww;
            const float w2 = w[j] + pp[j], p2 = w2 > kk[j] ? w2 : kk[j];
            x[j] = pp[j] - p; x[n + j] = ww - p;
            x[2 * n + j] = w2 - p2; x[3 * n + j] = kk[j] - p2;
            pn[j] = p2;
        }
        isa->exp_sum(e, x, 0.0f, 4 * n);
        for (j = 0; j < n; ++j) {
            const float e1 = e[j], e2 = e[n + j], f1 = e[2 * n + j], f2 = e[3 * n + j];
            y[j] = (e1 * aa[j] + e2 * vv[j]) / (e1 * bb[j] + e2);
            aa[j] = f1 * aa[j] + f2 * vv[j];
            bb[j] = f1 * bb[j] + f2;
            pp[j] = pn[j];
        }
        isa->store((char *)attn__at(&X->out, b, t, h) + (size_t)d0 * X->out.esize, X->out.dtype, y, n, 1.0f);
    }
}

/* Task (b, group): the group's blocks of batch entry b (block q: tensor head q / nblk, dims
   from (q % nblk) * 64), ATTN__RWKV4_SUB at a time, each over the whole sequence in chunks of
   ATTN__RWKV_CHUNK tokens, the held blocks taking turns per chunk: so the rows of a chunk are
   read while their pages are hot, instead of one block walking every page of the sequence
   (a page-sized stride the TLB and prefetchers do not keep up with). Every block runs the
   same operations in the same order whatever the grouping, so results do not depend on it. */
static void attn__rwkv4_task(void *vctx, int task, int thread) {
    const attn__rwkv4_ctx *X = (const attn__rwkv4_ctx *)vctx;
    const int D = X->k.dim, nb = X->k.heads * X->nblk, b = task / X->groups, g = task % X->groups;
    const int q0 = (int)((long long)nb * g / X->groups), q1 = (int)((long long)nb * (g + 1) / X->groups);
    const size_t C = (size_t)X->C;
    attn__rwkv4_blk blk[ATTN__RWKV4_SUB];
    int s0, q, j, t0;
    (void)thread;
    for (s0 = q0; s0 < q1; s0 += ATTN__RWKV4_SUB) {
        const int s1 = ATTN__MIN(q1, s0 + ATTN__RWKV4_SUB);
        for (q = s0; q < s1; ++q) {
            attn__rwkv4_blk *B = &blk[q - s0];
            const int h = q / X->nblk, d0 = (q % X->nblk) * ATTN__RWKV4_BLOCK, n = ATTN__MIN(ATTN__RWKV4_BLOCK, D - d0);
            const int c0 = h * D + d0;
            if (X->state_in) {
                const float *st = X->state_in + (size_t)b * 3 * C + c0;
                for (j = 0; j < n; ++j) { B->aa[j] = st[j]; B->bb[j] = st[C + j]; B->pp[j] = st[2 * C + j]; }
            } else {
                for (j = 0; j < n; ++j) { B->aa[j] = 0.0f; B->bb[j] = 0.0f; B->pp[j] = -1e38f; }
            }
            X->isa->exp_sum(B->w, X->time_decay + c0, 0.0f, n);          /* w = -exp(time_decay) */
            for (j = 0; j < n; ++j) { B->w[j] = -B->w[j]; B->u[j] = X->time_first[c0 + j]; }
        }
        for (t0 = 0; t0 < X->k.seq; t0 += ATTN__RWKV_CHUNK)
            for (q = s0; q < s1; ++q) {
                const int h = q / X->nblk, d0 = (q % X->nblk) * ATTN__RWKV4_BLOCK;
                attn__rwkv4_tokens(X, &blk[q - s0], b, h, d0, ATTN__MIN(ATTN__RWKV4_BLOCK, D - d0), t0,
                                   ATTN__MIN(X->k.seq, t0 + ATTN__RWKV_CHUNK));
            }
        if (X->state_out)
            for (q = s0; q < s1; ++q) {
                const attn__rwkv4_blk *B = &blk[q - s0];
                const int h = q / X->nblk, d0 = (q % X->nblk) * ATTN__RWKV4_BLOCK, n = ATTN__MIN(ATTN__RWKV4_BLOCK, D - d0);
                float *st = X->state_out + (size_t)b * 3 * C + (size_t)h * D + d0;
                for (j = 0; j < n; ++j) { st[j] = B->aa[j]; st[C + j] = B->bb[j]; st[2 * C + j] = B->pp[j]; }
            }
    }
}

/* Threads worth starting (attn_rwkv_desc.n_threads 0) for units x tokens of work (channels,
   or RWKV-6 state entries): one per `grain`, at least 1, at most n_threads. A one-token step
   of a small model is a few microseconds of work, less than waking a second thread costs. */
static int attn__rwkv_threads(int n_threads, size_t units, size_t tokens, size_t grain) {
    const size_t want = (units > SIZE_MAX / tokens ? SIZE_MAX : units * tokens) / grain;
    return want < 1 ? 1 : (want < (size_t)n_threads ? (int)want : n_threads);
}

/* Task groups per batch entry: about two tasks per thread in all, at most one per block. */
static int attn__rwkv_groups(int units, int batch, int n_threads) {
    const int want = (2 * n_threads + batch - 1) / batch;
    return ATTN__MAX(1, ATTN__MIN(units, want));
}

/* attn_rwkv4_forward (step 0) and attn_rwkv4_step (step 1: state is state_in and state_out). */
static attn_status attn__rwkv4_run(const attn_rwkv_desc *d, const float *time_decay, const float *time_first,
                                   const attn_tensor *k, const attn_tensor *v, const attn_tensor *out,
                                   const float *state_in, float *state_out, int step) {
    attn__rwkv4_ctx X;
    attn_desc pd;
    attn_status s;
    size_t C, st, tasks;
    int nt;
    if (!d) return ATTN_ERR_NULL_DESC;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (!k->data) return ATTN_ERR_NULL_K;
    if (!v->data) return ATTN_ERR_NULL_V;
    if (!out->data) return ATTN_ERR_NULL_OUT;
    if (!time_decay) return ATTN_ERR_RWKV_NULL_TIME_DECAY;
    if (!time_first) return ATTN_ERR_RWKV_NULL_TIME_FIRST;
    if (!attn__dtype_ok(k->dtype) || !attn__dtype_ok(v->dtype) || !attn__dtype_ok(out->dtype)) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(k)) return ATTN_ERR_K_SHAPE;
    if (!attn__rwkv_same_shape(v, k) || !attn__rwkv_same_shape(out, k)) return ATTN_ERR_RWKV_SHAPE;
    if (attn__tensor_bcast(out)) return ATTN_ERR_OUT_BROADCAST;
    if ((s = attn__make_view(k, &X.k)) != ATTN_OK || (s = attn__make_view(v, &X.v)) != ATTN_OK ||
        (s = attn__make_view(out, &X.out)) != ATTN_OK) return s;
    X.nblk = (k->dim + ATTN__RWKV4_BLOCK - 1) / ATTN__RWKV4_BLOCK;
    if (!attn__mul_size((size_t)k->heads, (size_t)k->dim, &C) || C > (size_t)INT_MAX ||
        !attn__mul_size(C, (size_t)k->batch * 3, &st) || st > (size_t)PTRDIFF_MAX / sizeof(float) ||
        (size_t)k->heads * (size_t)X.nblk > (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;
    if (step && k->seq != 1) return ATTN_ERR_RWKV_STEP_SEQ;
    if (step && !state_out) return ATTN_ERR_RWKV_NULL_STATE;
    {
        const attn__view *in[2];
        in[0] = &X.k; in[1] = &X.v;
        if ((s = attn__rwkv_overlap(in, 2, &X.out, time_decay, time_first, C, state_in, state_out, st)) != ATTN_OK) return s;
    }
    if (!attn__rwkv_finite(time_decay, C)) return ATTN_ERR_RWKV_TIME_DECAY;
    if (!attn__rwkv_finite(time_first, C)) return ATTN_ERR_RWKV_TIME_FIRST;
    X.isa = attn__vec();
    X.time_decay = time_decay; X.time_first = time_first;
    X.state_in = state_in; X.state_out = state_out; X.C = (int)C;
    attn__rwkv_pdesc(d, &pd);
    nt = d->n_threads > 0 ? attn__resolve_threads(&pd) : attn__rwkv_threads(attn__resolve_threads(&pd), st / 3, (size_t)k->seq, 16384);
    X.groups = attn__rwkv_groups(k->heads * X.nblk, k->batch, nt);
    if (!attn__mul_size((size_t)k->batch, (size_t)X.groups, &tasks) || tasks > (size_t)INT_MAX) return ATTN_ERR_OVERFLOW;
    attn__parallel_for(&pd, (int)tasks, nt, attn__rwkv4_task, &X);
    return ATTN_OK;
}

ATTNDEF attn_status attn_rwkv4_forward(const attn_rwkv_desc *desc, const float *time_decay, const float *time_first,
                                       attn_tensor k, attn_tensor v, attn_tensor out,
                                       const float *state_in, float *state_out) {
    return attn__rwkv4_run(desc, time_decay, time_first, &k, &v, &out, state_in, state_out, 0);
}

ATTNDEF attn_status attn_rwkv4_step(const attn_rwkv_desc *desc, const float *time_decay, const float *time_first,
                                    attn_tensor k, attn_tensor v, attn_tensor out, float *state) {
    return attn__rwkv4_run(desc, time_decay, time_first, &k, &v, &out, state, state, 1);
}

ATTNDEF attn_status attn_rwkv4_state_init(float *state, int batch, int channels) {
    size_t n, b, c;
    if (!state) return ATTN_ERR_RWKV_NULL_STATE;
    if (batch < 1 || channels < 1) return ATTN_ERR_RWKV_STATE_SHAPE;
    if (!attn__mul_size((size_t)batch * 3, (size_t)channels, &n) || n > (size_t)PTRDIFF_MAX / sizeof(float))
        return ATTN_ERR_OVERFLOW;
    for (b = 0; b < (size_t)batch; ++b) {
        float *s = state + b * 3 * (size_t)channels;
        for (c = 0; c < (size_t)channels; ++c) { s[c] = 0.0f; s[channels + c] = 0.0f; s[2 * (size_t)channels + c] = -1e38f; }
    }
    return ATTN_OK;
}

/* ---- RWKV-5/6 ---- */
typedef struct attn__rwkv6_ctx {
    const attn__isa *isa;
    attn__view r, k, v, w, out;
    const float *u, *state_in;
    float *state_out, *ws;
    int N, G, per_head, groups;  /* head size, heads (C / N), RWKV heads per tensor head, task groups */
    int sub;                     /* heads a task holds at once */
    size_t per_thread;           /* floats of scratch per thread */
    void (*rows)(float *S, int N, const float *r, const float *w, const float *k, const float *v, float *y);
} attn__rwkv6_ctx;

/* One token of one head, on its N x N state S (row i = key channel i):
     y += r_i S_i;  S_i = w_i S_i + k_i v      for i < N
   written once in plain C over 16-float blocks (restrict, a fixed trip count, so compilers
   vectorise it at -O2) and compiled per ISA with the x86 target attributes: one fused pass over
   S instead of three vector-layer calls per row (measured 3x faster at N = 64). No FMA
   contraction in C99 mode, and the same code path for each element whatever the call, so
   results are bitwise the same for every thread count and forward vs step. */
#define ATTN__RWKV6_ROWS_BODY                                                                     \
    int i, j, l;                                                                                  \
    for (i = 0; i < N; ++i) {                                                                     \
        float *ATTN__RESTRICT s = S + (size_t)i * N;                                              \
        const float ri = r[i], wi = w[i], ki = k[i];                                              \
        for (j = 0; j + 16 <= N; j += 16)                                                         \
            for (l = 0; l < 16; ++l) {                                                            \
                const float sv = s[j + l];                                                        \
                y[j + l] += ri * sv;                                                              \
                s[j + l] = wi * sv + ki * v[j + l];                                               \
            }                                                                                     \
        for (; j < N; ++j) {                                                                      \
            const float sv = s[j];                                                                \
            y[j] += ri * sv;                                                                      \
            s[j] = wi * sv + ki * v[j];                                                           \
        }                                                                                         \
    }
static void attn__rwkv6_rows_scalar(float *ATTN__RESTRICT S, int N, const float *r, const float *w, const float *k,
                                    const float *ATTN__RESTRICT v, float *ATTN__RESTRICT y) {
    ATTN__RWKV6_ROWS_BODY
}
#if defined(ATTN__X86_SIMD)
ATTN__T256 static void attn__rwkv6_rows_avx2(float *ATTN__RESTRICT S, int N, const float *r, const float *w, const float *k,
                                            const float *ATTN__RESTRICT v, float *ATTN__RESTRICT y) {
    ATTN__RWKV6_ROWS_BODY
}
#if !defined(ATTN_NO_AVX512)
ATTN__T512 static void attn__rwkv6_rows_avx512(float *ATTN__RESTRICT S, int N, const float *r, const float *w,
                                              const float *k, const float *ATTN__RESTRICT v, float *ATTN__RESTRICT y) {
    ATTN__RWKV6_ROWS_BODY
}
#endif
#endif
#undef ATTN__RWKV6_ROWS_BODY

/* The row kernel for the vector layer's ISA (NEON builds vectorise the plain one). */
static void (*attn__rwkv6_rows_for(const attn__isa *isa))(float *, int, const float *, const float *, const float *,
                                                         const float *, float *) {
#if defined(ATTN__X86_SIMD)
#if !defined(ATTN_NO_AVX512)
    if (isa == &attn__isa_avx512) return attn__rwkv6_rows_avx512;
#endif
    if (isa == &attn__isa_avx2) return attn__rwkv6_rows_avx2;
#endif
    (void)isa;
    return attn__rwkv6_rows_scalar;
}

/* Tokens [t0, t1) of RWKV head g (tensor head h, dims [d0, d0 + N)) of batch entry b.
   y = (sum_i r_i u_i k_i) v + sum_i r_i S_i, then the state update (attn__rwkv6_rows_*). */
static void attn__rwkv6_tokens(const attn__rwkv6_ctx *X, float *S, float *buf, int b, int g, int t0, int t1) {
    const attn__isa *isa = X->isa;
    const int N = X->N, h = g / X->per_head, d0 = (g % X->per_head) * N;
    float *rr = buf, *kk = rr + N, *vv = kk + N, *ww = vv + N, *y = ww + N;
    const float *u = X->u + (size_t)g * N;
    int t, i;
    for (t = t0; t < t1; ++t) {
        float a = 0.0f;
        if (t + ATTN__RWKV_CHUNK < X->k.seq) {   /* this head's row of the next chunk */
            const int tp = t + ATTN__RWKV_CHUNK;
            attn__rwkv_prefetch((const char *)attn__at(&X->r, b, tp, h) + (size_t)d0 * X->r.esize, (size_t)N * X->r.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->k, b, tp, h) + (size_t)d0 * X->k.esize, (size_t)N * X->k.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->v, b, tp, h) + (size_t)d0 * X->v.esize, (size_t)N * X->v.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->w, b, tp, h) + (size_t)d0 * X->w.esize, (size_t)N * X->w.esize, 0);
            attn__rwkv_prefetch((const char *)attn__at(&X->out, b, tp, h) + (size_t)d0 * X->out.esize, (size_t)N * X->out.esize, 1);
        }
        isa->load((const char *)attn__at(&X->r, b, t, h) + (size_t)d0 * X->r.esize, X->r.dtype, rr, N, 1.0f);
        isa->load((const char *)attn__at(&X->k, b, t, h) + (size_t)d0 * X->k.esize, X->k.dtype, kk, N, 1.0f);
        isa->load((const char *)attn__at(&X->v, b, t, h) + (size_t)d0 * X->v.esize, X->v.dtype, vv, N, 1.0f);
        isa->load((const char *)attn__at(&X->w, b, t, h) + (size_t)d0 * X->w.esize, X->w.dtype, ww, N, 1.0f);
        for (i = 0; i < N; ++i) a += rr[i] * u[i] * kk[i];
        for (i = 0; i < N; ++i) y[i] = a * vv[i];
        X->rows(S, N, rr, ww, kk, vv, y);
        isa->store((char *)attn__at(&X->out, b, t, h) + (size_t)d0 * X->out.esize, X->out.dtype, y, N, 1.0f);
    }
}

/* Task (b, group): the group's heads of batch entry b, X->sub at a time, in chunks of
   ATTN__RWKV_CHUNK tokens with the held heads taking turns per chunk (as RWKV-4's blocks: the
   chunk's rows are read while their pages are hot, and a head's state stays in L1 for a chunk).
   States live in state_out when given, else in the thread's scratch. */
static void attn__rwkv6_task(void *vctx, int task, int thread) {
    const attn__rwkv6_ctx *X = (const attn__rwkv6_ctx *)vctx;
    const int b = task / X->groups, grp = task % X->groups;
    const int g0 = (int)((long long)X->G * grp / X->groups), g1 = (int)((long long)X->G * (grp + 1) / X->groups);
    const size_t NN = (size_t)X->N * X->N;
    float *buf = X->ws + (size_t)thread * X->per_thread, *scratch = buf + 5 * (size_t)X->N;
    int s0, g, t0;
    for (s0 = g0; s0 < g1; s0 += X->sub) {
        const int s1 = ATTN__MIN(g1, s0 + X->sub);
        for (g = s0; g < s1; ++g) {
            const size_t off = ((size_t)b * X->G + g) * NN;
            float *S = X->state_out ? X->state_out + off : scratch + (size_t)(g - s0) * NN;
            if (!X->state_in) memset(S, 0, NN * sizeof(float));
            else if (X->state_in + off != S) memcpy(S, X->state_in + off, NN * sizeof(float));
        }
        for (t0 = 0; t0 < X->k.seq; t0 += ATTN__RWKV_CHUNK)
            for (g = s0; g < s1; ++g) {
                float *S = X->state_out ? X->state_out + ((size_t)b * X->G + g) * NN : scratch + (size_t)(g - s0) * NN;
                attn__rwkv6_tokens(X, S, buf, b, g, t0, ATTN__MIN(X->k.seq, t0 + ATTN__RWKV_CHUNK));
            }
    }
}

/* attn_rwkv6_forward (step 0), attn_rwkv6_step (step 1: state_in == state_out) and
   attn_rwkv6_workspace_size (bytes non-NULL: out, u, the states and the data are not read). */
static attn_status attn__rwkv6_run(const attn_rwkv_desc *d, const attn_tensor *r, const attn_tensor *k,
                                   const attn_tensor *v, const attn_tensor *w, const float *u, const attn_tensor *out,
                                   const float *state_in, float *state_out, int step, size_t *bytes) {
    attn__rwkv6_ctx X;
    attn_desc pd;
    attn__ws ws;
    attn_status s;
    size_t C, st, tasks, per, total;
    int nt;
    if (!d) return ATTN_ERR_NULL_DESC;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if (d->head_size < 0) return ATTN_ERR_RWKV_HEAD_SIZE;
    if (!r->data) return ATTN_ERR_RWKV_NULL_R;
    if (!k->data) return ATTN_ERR_NULL_K;
    if (!v->data) return ATTN_ERR_NULL_V;
    if (!w->data) return ATTN_ERR_RWKV_NULL_W;
    if (!bytes && !out->data) return ATTN_ERR_NULL_OUT;
    if (!bytes && !u) return ATTN_ERR_RWKV_NULL_U;
    if (!attn__dtype_ok(r->dtype) || !attn__dtype_ok(k->dtype) || !attn__dtype_ok(v->dtype) ||
        !attn__dtype_ok(w->dtype) || (!bytes && !attn__dtype_ok(out->dtype))) return ATTN_ERR_DTYPE;
    if (!attn__shape_ok(k)) return ATTN_ERR_K_SHAPE;
    if (!attn__rwkv_same_shape(r, k) || !attn__rwkv_same_shape(v, k) || !attn__rwkv_same_shape(w, k) ||
        (!bytes && !attn__rwkv_same_shape(out, k))) return ATTN_ERR_RWKV_SHAPE;
    if (!bytes && attn__tensor_bcast(out)) return ATTN_ERR_OUT_BROADCAST;
    X.N = d->head_size ? d->head_size : (k->dim % 64 == 0 ? 64 : k->dim);
    if (k->dim % X.N != 0) return ATTN_ERR_RWKV_HEAD_SIZE;
    if ((s = attn__make_view(r, &X.r)) != ATTN_OK || (s = attn__make_view(k, &X.k)) != ATTN_OK ||
        (s = attn__make_view(v, &X.v)) != ATTN_OK || (s = attn__make_view(w, &X.w)) != ATTN_OK ||
        (!bytes && (s = attn__make_view(out, &X.out)) != ATTN_OK)) return s;
    X.per_head = k->dim / X.N;
    attn__rwkv_pdesc(d, &pd);
    /* heads held at once: up to 8, with at most 32 Ki floats (128 KiB) of their states */
    X.sub = (int)ATTN__MAX(1, ATTN__MIN(8, 32768 / ((size_t)X.N * (size_t)X.N)));
    if (!attn__mul_size((size_t)k->heads, (size_t)k->dim, &C) || C > (size_t)INT_MAX ||
        !attn__mul_size(C * (size_t)k->batch, (size_t)X.N, &st) || st > (size_t)PTRDIFF_MAX / sizeof(float))
        return ATTN_ERR_OVERFLOW;
    nt = d->n_threads > 0 ? attn__resolve_threads(&pd) : attn__rwkv_threads(attn__resolve_threads(&pd), st, (size_t)k->seq, 1u << 18);
    if (!attn__mul_size((size_t)X.N * (size_t)X.N, (size_t)X.sub, &per) ||
        !attn__add_size(per, 5 * (size_t)X.N + 15, &per) ||
        !attn__mul_size(per / 16 * 16, (size_t)nt * sizeof(float), &total) ||      /* states, r, k, v, w, y */
        !attn__add_size(total, ATTN__ALIGN, &total)) return ATTN_ERR_OVERFLOW;
    per = per / 16 * 16;
    if (step && k->seq != 1) return ATTN_ERR_RWKV_STEP_SEQ;
    if (bytes) { *bytes = total; return ATTN_OK; }
    if (step && !state_out) return ATTN_ERR_RWKV_NULL_STATE;
    {
        const attn__view *in[4];
        in[0] = &X.r; in[1] = &X.k; in[2] = &X.v; in[3] = &X.w;
        if ((s = attn__rwkv_overlap(in, 4, &X.out, u, NULL, C, state_in, state_out, st)) != ATTN_OK) return s;
    }
    if (!attn__rwkv_finite(u, C)) return ATTN_ERR_RWKV_U;
    if (!attn__rwkv_range_ok(&X.w, 0.0f, 1.0f)) return ATTN_ERR_RWKV_W_RANGE;
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, total, ATTN_ERR_RWKV_WORKSPACE, &ws)) != ATTN_OK) return s;
    X.isa = attn__vec();
    X.u = u; X.state_in = state_in; X.state_out = state_out;
    X.ws = (float *)(void *)ws.base; X.per_thread = per;
    X.G = (int)(C / (size_t)X.N);
    X.rows = attn__rwkv6_rows_for(X.isa);
    X.groups = attn__rwkv_groups(X.G, k->batch, nt);
    if (!attn__mul_size((size_t)k->batch, (size_t)X.groups, &tasks) || tasks > (size_t)INT_MAX) {
        attn__ws_release(&ws);
        return ATTN_ERR_OVERFLOW;
    }
    attn__parallel_for(&pd, (int)tasks, nt, attn__rwkv6_task, &X);
    attn__ws_release(&ws);
    return ATTN_OK;
}

ATTNDEF attn_status attn_rwkv6_forward(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                       attn_tensor w, const float *u, attn_tensor out,
                                       const float *state_in, float *state_out) {
    return attn__rwkv6_run(desc, &r, &k, &v, &w, u, &out, state_in, state_out, 0, NULL);
}

ATTNDEF attn_status attn_rwkv6_step(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                    attn_tensor w, const float *u, attn_tensor out, float *state) {
    return attn__rwkv6_run(desc, &r, &k, &v, &w, u, &out, state, state, 1, NULL);
}

ATTNDEF attn_status attn_rwkv6_workspace_size(const attn_rwkv_desc *desc, attn_tensor r, attn_tensor k, attn_tensor v,
                                              attn_tensor w, size_t *bytes) {
    attn_tensor none;
    if (!bytes) return ATTN_ERR_RWKV_NULL_BYTES;
    memset(&none, 0, sizeof none);
    return attn__rwkv6_run(desc, &r, &k, &v, &w, NULL, &none, NULL, NULL, 0, bytes);
}

/* ---------------------------------------------------------------------------------------
   3.15 low-rank attention
   --------------------------------------------------------------------------------------- */
/* Both kinds end in attn_forward's exact kernel (ATTN_SOFTMAX, 3.7) on fp32 tensors they build
   in the workspace: Linformer once, on the projected keys and values; Nystromformer twice (the
   landmark queries over the keys, the queries over the landmark keys). attn__lr_core runs it on
   the caller's desc as ATTN_SOFTMAX with workspace ws (bytes non-NULL: the workspace query). */
static attn_status attn__lr_core(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out,
                                 float *lse, void *ws, size_t ws_bytes, size_t *bytes) {
    attn_desc e = *d;
    attn__call c;
    e.kind = ATTN_SOFTMAX; e.workspace = ws; e.workspace_size = ws_bytes;
    memset(&c, 0, sizeof c);
    c.d = &e; c.q = q; c.k = k; c.v = v; c.out = out; c.lse = lse; c.bytes = bytes;
    return attn__softmax_forward(&c);
}
/* The same for attn_backward's exact kernel (3.9). */
static attn_status attn__lr_core_bwd(const attn__call *src, attn_tensor k, attn_tensor v, attn_tensor dk, attn_tensor dv,
                                     void *ws, size_t ws_bytes, size_t *bytes) {
    attn_desc e = *src->d;
    attn__call c = *src;
    e.kind = ATTN_SOFTMAX; e.workspace = ws; e.workspace_size = ws_bytes;
    c.d = &e; c.k = k; c.v = v; c.dk = dk; c.dv = dv; c.bytes = bytes;
    return attn__softmax_backward(&c);
}

/* *total += rows * cols floats, rounded up to 16 floats (64 bytes); 0 on overflow */
static int attn__lr_floats(size_t *total, size_t rows, size_t cols) {
    size_t n;
    if (!attn__mul_size(rows, cols, &n) || !attn__add_size(n, 15, &n)) return 0;
    return attn__add_size(*total, n & ~(size_t)15, total);
}

/* The workspace is [our floats][the exact kernel's bytes]; *bytes gets the sum plus alignment. */
static int attn__lr_bytes(size_t floats, size_t core_bytes, size_t *bytes) {
    return attn__mul_size(floats, sizeof(float), bytes) && attn__add_size(*bytes, core_bytes, bytes) &&
           attn__add_size(*bytes, ATTN__ALIGN, bytes);
}

/* Rows of an input view (b, ., h) as an fp32 matrix with leading dimension *ld: the view itself
   when it is fp32 with a usable row stride, else converted into buf [seq][dim]. */
static int attn__lr_direct(const attn__view *x) {
    return x->dtype == ATTN_F32 && (x->seq == 1 || x->ss >= x->dim);
}
static const float *attn__lr_rows(const attn__isa *isa, const attn__view *x, int b, int h, float *buf, ptrdiff_t *ld) {
    int i;
    if (attn__lr_direct(x)) {
        *ld = x->seq == 1 ? x->dim : x->ss;
        return (const float *)attn__at(x, b, 0, h);
    }
    for (i = 0; i < x->seq; ++i) isa->load(attn__at(x, b, i, h), x->dtype, buf + (size_t)i * x->dim, x->dim, 1.0f);
    *ld = x->dim;
    return buf;
}

/* ---- Linformer ------------------------------------------------------------------------------ */
typedef struct attn__lfm_plan {
    const attn_desc *d;
    attn_desc core;                     /* *d without seqlens_k: the exact kernel's desc (every
                                           projected key is valid) */
    const int *lens;                    /* seqlens_k: keys past lens[b] are not projected */
    const attn__isa *isa;
    attn__view q, k, v, out;
    const float *e, *f;                 /* f = e when shared_kv */
    size_t e_head;                      /* floats between heads' E (0: shared across heads) */
    int kp, n, n_threads;
    size_t scratch_floats;              /* per thread: k or v rows converted to fp32 (backward: and
                                           their gradient rows) */
    size_t floats, core_bytes;
    float *kbuf, *vbuf, *scratch;       /* E K [B, kp, Hkv, D], F V [B, kp, Hkv, Dv] */
    /* backward */
    int bwd, shared_kv;
    attn__view dk, dv;
    float *de, *df;                     /* df = NULL when shared_kv (de gets both) */
    float *dkbuf, *dvbuf;               /* dL/d(E K), dL/d(F V), laid out as kbuf, vbuf */
} attn__lfm_plan;

/* The first L rows of k (which 0) or v (which 1) of batch b: L = seqlens_k[b] or k.seq. */
static attn__view attn__lfm_valid(const attn__lfm_plan *P, int b, int which) {
    attn__view x = which ? P->v : P->k;
    if (P->lens) x.seq = P->lens[b];
    return x;
}
/* E K (which 0) or F V (which 1) of batch b, KV head h: C [kp, dim] = E_h[:, :L] X [L, dim] */
static void attn__lfm_project(const attn__lfm_plan *P, int b, int h, int which, float *scratch,
                              const attn_desc *par, int nt) {
    const attn__view x = attn__lfm_valid(P, b, which);
    const int D = x.dim, H = x.heads;
    const float *E = (which ? P->f : P->e) + (size_t)h * P->e_head;
    float *C = (which ? P->vbuf : P->kbuf) + ((size_t)b * P->kp * H + h) * D;
    ptrdiff_t ld;
    const float *X = attn__lr_rows(P->isa, &x, b, h, scratch, &ld);
    attn__sgemm_par(par, nt, 0, 0, P->kp, D, x.seq, 1.0f, E, P->n, X, ld, 0.0f, C, (ptrdiff_t)H * D);
}
static void attn__lfm_task(void *ctx, int t, int thread) {
    const attn__lfm_plan *P = (const attn__lfm_plan *)ctx;
    const int bh = t >> 1;
    attn__lfm_project(P, bh / P->k.heads, bh % P->k.heads, t & 1, P->scratch + (size_t)thread * P->scratch_floats,
                      NULL, 1);
}

static attn_status attn__lfm_plan_make(const attn__call *c, attn__lfm_plan *P, int bwd) {
    const attn_desc *d = c->d;
    const attn_linformer_params *L = &d->linformer;
    attn_tensor kt, vt;
    attn_status s;
    size_t f = 0;
    memset(P, 0, sizeof *P);
    if ((s = attn__check_qkv(&c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P->q, &P->k, &P->v, &P->out)) != ATTN_OK)
        return s;
    {   /* tasks: E K and F V per (sequence, KV head), then the dE / dF heads */
        int t;
        if (!attn__tasks(2, (size_t)c->k.batch + 1, (size_t)c->k.heads, &t)) return ATTN_ERR_OVERFLOW;
    }
    if (!L->e) return ATTN_ERR_LINFORMER_NULL_E;
    if (L->shared_heads != 0 && L->shared_heads != 1) return ATTN_ERR_LINFORMER_SHARED_HEADS;
    if (L->shared_kv != 0 && L->shared_kv != 1) return ATTN_ERR_LINFORMER_SHARED_KV;
    if (!L->shared_kv && !L->f) return ATTN_ERR_LINFORMER_NULL_F;
    if (L->n < c->k.seq) return ATTN_ERR_LINFORMER_N;
    if (L->k < 1 || L->k > L->n) return ATTN_ERR_LINFORMER_K;
    if (d->causal || d->window_left || d->window_right || (d->dilation != 0 && d->dilation != 1) || d->sink_tokens ||
        d->global_tokens || d->cu_seqlens_q || d->cu_seqlens_k || d->varlen_batch ||
        d->alibi_slopes || d->bias.data || d->rope) return ATTN_ERR_LINFORMER_MASK;
    if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, c->k.batch, c->k.seq)) return ATTN_ERR_SEQLENS_K;
    P->d = d; P->isa = attn__vec();
    P->core = *d; P->core.seqlens_k = NULL; P->lens = d->seqlens_k;
    P->e = L->e; P->f = L->shared_kv ? L->e : L->f;
    P->kp = L->k; P->n = L->n;
    if (!L->shared_heads && !attn__mul_size((size_t)L->k, (size_t)L->n, &P->e_head)) return ATTN_ERR_OVERFLOW;
    /* the exact kernel on q and the projections [B, kp, Hkv, D|Dv] validates the rest of desc */
    kt = attn_tensor_dense(c->q.data, ATTN_F32, c->k.batch, L->k, c->k.heads, c->k.dim);
    vt = attn_tensor_dense(c->q.data, ATTN_F32, c->k.batch, L->k, c->k.heads, c->v.dim);
    P->bwd = bwd;
    if (!bwd) {
        if ((s = attn__lr_core(&P->core, c->q, kt, vt, c->out, c->lse, NULL, 0, &P->core_bytes)) != ATTN_OK) return s;
    } else {
        /* the user's dk, dv (the exact kernel checks dout, lse, dq and the rest when it runs, before
           it writes dq; dk, dv, de and df are written after it succeeded) */
        const attn_tensor *dk = &c->dk, *dv = &c->dv;
        attn__call cc = *c;
        cc.d = &P->core;
        if ((s = attn__lr_core_bwd(&cc, kt, vt, kt, vt, NULL, 0, &P->core_bytes)) != ATTN_OK) return s;
        if (!c->bytes) {
            if (!dk->data) return ATTN_ERR_BWD_NULL_DK;
            if (!dv->data) return ATTN_ERR_BWD_NULL_DV;
            if (!attn__dtype_ok(dk->dtype) || !attn__dtype_ok(dv->dtype)) return ATTN_ERR_DTYPE;
            if (dk->batch != c->k.batch || dk->seq != c->k.seq || dk->heads != c->k.heads || dk->dim != c->k.dim)
                return ATTN_ERR_BWD_DK_SHAPE;
            if (dv->batch != c->v.batch || dv->seq != c->v.seq || dv->heads != c->v.heads || dv->dim != c->v.dim)
                return ATTN_ERR_BWD_DV_SHAPE;
            if (attn__tensor_bcast(dk)) return ATTN_ERR_BWD_DK_BROADCAST;
            if (attn__tensor_bcast(dv)) return ATTN_ERR_BWD_DV_BROADCAST;
            if ((s = attn__make_view(dk, &P->dk)) != ATTN_OK || (s = attn__make_view(dv, &P->dv)) != ATTN_OK) return s;
        }
        P->de = L->de; P->df = L->shared_kv ? NULL : L->df; P->shared_kv = L->shared_kv;
    }
    P->n_threads = attn__resolve_threads(d);
    P->scratch_floats = (size_t)(attn__lr_direct(&P->k) && !bwd ? 0 : c->k.dim);
    if (!attn__lr_direct(&P->v) || bwd) P->scratch_floats = ATTN__MAX(P->scratch_floats, (size_t)c->v.dim);
    if (!attn__mul_size(P->scratch_floats, (size_t)c->k.seq * (bwd ? 2u : 1u), &P->scratch_floats) ||
        !attn__lr_floats(&f, (size_t)c->k.batch * (size_t)L->k, (size_t)c->k.heads * (size_t)c->k.dim) ||
        !attn__lr_floats(&f, (size_t)c->k.batch * (size_t)L->k, (size_t)c->k.heads * (size_t)c->v.dim) ||
        (bwd && !attn__lr_floats(&f, (size_t)c->k.batch * (size_t)L->k, (size_t)c->k.heads * (size_t)c->k.dim)) ||
        (bwd && !attn__lr_floats(&f, (size_t)c->k.batch * (size_t)L->k, (size_t)c->k.heads * (size_t)c->v.dim)) ||
        !attn__lr_floats(&f, P->scratch_floats, (size_t)P->n_threads)) return ATTN_ERR_OVERFLOW;
    P->floats = f;
    return ATTN_OK;
}

/* ATTN_LINFORMER's forward: E K and F V on the SGEMM, then the exact kernel on them. */
static attn_status attn__linformer_forward(const attn__call *c) {
    attn__lfm_plan P;
    attn__ws w;
    attn_status s;
    size_t bytes, kf, vf;
    int tasks, i;
    attn_tensor kt, vt;
    if ((s = attn__lfm_plan_make(c, &P, 0)) != ATTN_OK) return s;
    if (!attn__lr_bytes(P.floats, P.core_bytes, &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    kf = 0; attn__lr_floats(&kf, (size_t)c->k.batch * (size_t)P.kp, (size_t)c->k.heads * (size_t)c->k.dim);
    vf = 0; attn__lr_floats(&vf, (size_t)c->k.batch * (size_t)P.kp, (size_t)c->k.heads * (size_t)c->v.dim);
    P.kbuf = (float *)(void *)w.base; P.vbuf = P.kbuf + kf; P.scratch = P.vbuf + vf;
    tasks = 2 * c->k.batch * c->k.heads;
    if (tasks >= P.n_threads || P.n_threads == 1) {
        attn__parallel_for(c->d, tasks, P.n_threads, attn__lfm_task, &P);
    } else {            /* few heads: one projection at a time, each GEMM on every thread */
        for (i = 0; i < tasks; ++i)
            attn__lfm_project(&P, (i >> 1) / c->k.heads, (i >> 1) % c->k.heads, i & 1, P.scratch, c->d, P.n_threads);
    }
    kt = attn_tensor_dense(P.kbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->k.dim);
    vt = attn_tensor_dense(P.vbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->v.dim);
    s = attn__lr_core(&P.core, c->q, kt, vt, c->out, c->lse, (char *)w.base + P.floats * sizeof(float), P.core_bytes, NULL);
    attn__ws_release(&w);
    return s;
}

/* Backward tasks. dK_{b,h} = E_h[:, :L]^T dK'_{b,h} (and dV with F), stored in the user's
   dtype, rows L..seq-1 (padding) 0; dE_h = sum_b (sum over the heads sharing E) dK'_{b,h}
   K_{b,h}[:L]^T (+ the F V terms when E = F), summed in a fixed order (batch-major, then head),
   columns a sequence does not reach get nothing from it (columns k.seq..n-1 are 0). */
static void attn__lfm_dx(const attn__lfm_plan *P, int b, int h, int which, float *scratch, const attn_desc *par, int nt) {
    const attn__view *dx = which ? &P->dv : &P->dk;
    const int D = dx->dim, H = dx->heads, s = dx->seq, L = P->lens ? P->lens[b] : s;
    const float *E = (which ? P->f : P->e) + (size_t)h * P->e_head;
    const float *G = (which ? P->dvbuf : P->dkbuf) + ((size_t)b * P->kp * H + h) * D;
    int i;
    attn__sgemm_par(par, nt, 1, 0, L, D, P->kp, 1.0f, E, P->n, G, (ptrdiff_t)H * D, 0.0f, scratch, D);
    memset(scratch + (size_t)L * D, 0, sizeof(float) * (size_t)(s - L) * (size_t)D);
    for (i = 0; i < s; ++i) P->isa->store(attn__at(dx, b, i, h), dx->dtype, scratch + (size_t)i * D, D, 1.0f);
}
static int attn__lfm_de_tasks(const attn__lfm_plan *P) {
    return (P->e_head ? P->k.heads : 1) * ((P->de ? 1 : 0) + (P->df ? 1 : 0));
}
/* task t: dE of E-head t (with shared_kv: both terms), then dF of E-head t - (tasks of dE) */
static void attn__lfm_de(const attn__lfm_plan *P, int t, float *scratch, const attn_desc *par, int nt) {
    const int n_e = P->e_head ? P->k.heads : 1, is_f = !P->de || t >= n_e, eh = is_f && P->de ? t - n_e : t;
    const int which0 = is_f, which1 = is_f || P->shared_kv;
    float *G = (is_f ? P->df : P->de) + (size_t)eh * P->e_head;
    int which, b, h, i;
    for (i = 0; i < P->kp; ++i) memset(G + (size_t)i * P->n, 0, sizeof(float) * (size_t)P->n);
    for (which = which0; which <= which1; ++which)
        for (b = 0; b < P->k.batch; ++b) {
            const attn__view x = attn__lfm_valid(P, b, which);   /* the valid rows: L columns of G */
            const int D = x.dim, H = x.heads;
            for (h = P->e_head ? eh : 0; h < (P->e_head ? eh + 1 : H); ++h) {
                ptrdiff_t ld;
                const float *X = attn__lr_rows(P->isa, &x, b, h, scratch, &ld);
                const float *dX = (which ? P->dvbuf : P->dkbuf) + ((size_t)b * P->kp * H + h) * D;
                attn__sgemm_par(par, nt, 0, 1, P->kp, x.seq, D, 1.0f, dX, (ptrdiff_t)H * D, X, ld, 1.0f, G, P->n);
            }
        }
}
static void attn__lfm_bwd_task(void *ctx, int t, int thread) {
    const attn__lfm_plan *P = (const attn__lfm_plan *)ctx;
    float *scratch = P->scratch + (size_t)thread * P->scratch_floats;
    const int n_dx = 2 * P->k.batch * P->k.heads;
    if (t < n_dx) attn__lfm_dx(P, (t >> 1) / P->k.heads, (t >> 1) % P->k.heads, t & 1, scratch, NULL, 1);
    else attn__lfm_de(P, t - n_dx, scratch, NULL, 1);
}

/* ATTN_LINFORMER's backward: E K and F V again, the exact kernel's backward on them (dq and
   dL/d(E K), dL/d(F V)), then dk, dv and (when given) dE, dF on the SGEMM. */
static attn_status attn__linformer_backward(const attn__call *c) {
    attn__lfm_plan P;
    attn__ws w;
    attn_status s;
    size_t bytes, kf, vf;
    int tasks, i;
    attn_tensor kt, vt, dkt, dvt;
    if ((s = attn__lfm_plan_make(c, &P, 1)) != ATTN_OK) return s;
    if (!attn__lr_bytes(P.floats, P.core_bytes, &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    kf = 0; attn__lr_floats(&kf, (size_t)c->k.batch * (size_t)P.kp, (size_t)c->k.heads * (size_t)c->k.dim);
    vf = 0; attn__lr_floats(&vf, (size_t)c->k.batch * (size_t)P.kp, (size_t)c->k.heads * (size_t)c->v.dim);
    P.kbuf = (float *)(void *)w.base; P.vbuf = P.kbuf + kf; P.dkbuf = P.vbuf + vf; P.dvbuf = P.dkbuf + kf;
    P.scratch = P.dvbuf + vf;
    tasks = 2 * c->k.batch * c->k.heads;
    if (tasks >= P.n_threads || P.n_threads == 1) {
        attn__parallel_for(c->d, tasks, P.n_threads, attn__lfm_task, &P);
    } else {
        for (i = 0; i < tasks; ++i)
            attn__lfm_project(&P, (i >> 1) / c->k.heads, (i >> 1) % c->k.heads, i & 1, P.scratch, c->d, P.n_threads);
    }
    kt = attn_tensor_dense(P.kbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->k.dim);
    vt = attn_tensor_dense(P.vbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->v.dim);
    dkt = attn_tensor_dense(P.dkbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->k.dim);
    dvt = attn_tensor_dense(P.dvbuf, ATTN_F32, c->k.batch, P.kp, c->k.heads, c->v.dim);
    {
        attn__call cc = *c;
        cc.d = &P.core;
        s = attn__lr_core_bwd(&cc, kt, vt, dkt, dvt, (char *)w.base + P.floats * sizeof(float), P.core_bytes, NULL);
    }
    if (s == ATTN_OK) {
        tasks += attn__lfm_de_tasks(&P);
        if (tasks >= P.n_threads || P.n_threads == 1) {
            attn__parallel_for(c->d, tasks, P.n_threads, attn__lfm_bwd_task, &P);
        } else {
            const int n_dx = 2 * c->k.batch * c->k.heads;
            for (i = 0; i < tasks; ++i) {
                if (i < n_dx) attn__lfm_dx(&P, (i >> 1) / c->k.heads, (i >> 1) % c->k.heads, i & 1, P.scratch, c->d, P.n_threads);
                else attn__lfm_de(&P, i - n_dx, P.scratch, c->d, P.n_threads);
            }
        }
    }
    attn__ws_release(&w);
    return s;
}
static const attn__mech attn__mech_linformer = { attn__linformer_forward, attn__linformer_backward, NULL, NULL, NULL };

/* ---- Nystromformer -------------------------------------------------------------------------- */

/* Largest column sum of a [m][m] (summed in double, in row order); Z0's divisor. */
static double attn__nys_colmax(const float *a, int m) {
    double best = -(double)INFINITY;
    int i, j;
    for (j = 0; j < m; ++j) {
        double s = 0.0;
        for (i = 0; i < m; ++i) s += (double)a[(size_t)i * m + j];
        if (s > best || s != s) best = s;
    }
    return best;
}

/* Z = pinv(A) by the Nystromformer iteration; A, Z [m][m]; s: 3 m^2 floats; cmax > 0. */
static void attn__nys_pinv(const float *A, int m, int iters, double cmax, float *Z, float *s) {
    const size_t mm = (size_t)m * m;
    float *AZ = s, *T = s + mm, *U = s + 2 * mm, *Zc = Z, *tmp;
    const float inv = (float)(1.0 / cmax);
    int i, j, it;
    for (i = 0; i < m; ++i)
        for (j = 0; j < m; ++j) Z[(size_t)i * m + j] = A[(size_t)j * m + i] * inv;
    for (it = 0; it < iters; ++it) {
        attn__sgemm_par(NULL, 1, 0, 0, m, m, m, 1.0f, A, m, Zc, m, 0.0f, AZ, m);            /* AZ */
        for (i = 0; i < m; ++i) {                                                            /* T = 7I - AZ */
            for (j = 0; j < m; ++j) T[(size_t)i * m + j] = -AZ[(size_t)i * m + j];
            T[(size_t)i * m + i] += 7.0f;
        }
        attn__sgemm_par(NULL, 1, 0, 0, m, m, m, -1.0f, AZ, m, T, m, 0.0f, U, m);            /* U = 15I - AZ T */
        for (i = 0; i < m; ++i) U[(size_t)i * m + i] += 15.0f;
        attn__sgemm_par(NULL, 1, 0, 0, m, m, m, -1.0f, AZ, m, U, m, 0.0f, T, m);            /* T = 13I - AZ U */
        for (i = 0; i < m; ++i) T[(size_t)i * m + i] += 13.0f;
        attn__sgemm_par(NULL, 1, 0, 0, m, m, m, 0.25f, Zc, m, T, m, 0.0f, U, m);            /* Z T / 4 */
        tmp = Zc; Zc = U; U = tmp;
    }
    if (Zc != Z) memcpy(Z, Zc, mm * sizeof(float));
}

ATTNDEF attn_status attn_nystrom_pinv(int m, int iterations, const float *a, float *z) {
    size_t n, mm, i;
    float *s, *zs;
    double cmax;
    if (!a || !z) return ATTN_ERR_NYSTROM_PINV_NULL;
    if (m < 1) return ATTN_ERR_NYSTROM_PINV_M;
    if (iterations < 0) return ATTN_ERR_NYSTROM_ITERATIONS;
    if (!iterations) iterations = 6;
    if (!attn__mul_size((size_t)m, (size_t)m, &mm) || !attn__mul_size(mm, 4 * sizeof(float), &n) ||
        n > (size_t)PTRDIFF_MAX) return ATTN_ERR_OVERFLOW;
    {   /* [a, a + m^2) and [z, z + m^2) must not meet (z is written while a is read) */
        const uintptr_t a0 = (uintptr_t)a, z0 = (uintptr_t)z, bytes = (uintptr_t)(mm * sizeof(float));
        if (a0 < z0 + bytes && z0 < a0 + bytes) return ATTN_ERR_NYSTROM_PINV_ALIAS;
    }
    cmax = attn__nys_colmax(a, m);
    if (!(cmax > 0.0) || !isfinite(cmax)) return ATTN_ERR_NYSTROM_PINV_A;
    if (!(s = (float *)attn__alloc(n))) return ATTN_ERR_OUT_OF_MEMORY;
    zs = s + 3 * mm;                 /* the result lands in scratch first: z only gets a finite one */
    attn__nys_pinv(a, m, iterations, cmax, zs, s);
    for (i = 0; i < mm; ++i)
        if (!isfinite(zs[i])) { attn__free(s); return ATTN_ERR_NYSTROM_PINV_DIVERGED; }
    memcpy(z, zs, mm * sizeof(float));
    attn__free(s);
    return ATTN_OK;
}

#define ATTN__NYS_KC 256   /* keys per B V chunk (task): depends on nothing else, so neither does the sum */
#define ATTN__NYS_RQ 128   /* query rows per F W block (task) */
typedef struct attn__nys_plan {
    const attn_desc *d;
    const attn__isa *isa;
    attn__view q, k, v, out;
    int m, iters, lq, lk, exact, kernel, n_threads, n_chunks, n_blocks;
    int hf;                            /* ATTN_NYSTROM_PADDING_HF: the padding is read as given */
    int luc, masked, pq, pk;           /* ATTN_NYSTROM_PADDING_LUCIDRAINS: with a mask (seqlens_k);
                                          the front padding of q and of k */
    const int *lens_q, *lens_k;        /* valid lengths (NULL: full); lens_q may be seqlens_k */
    const float *conv;
    float scale;
    attn_desc core;                    /* the exact path's desc (seqlens_q = lens_q) */
    size_t scratch_floats, floats, core_bytes;
    size_t f_ql, f_w, f_part, f_stage, f_a, part_row;   /* floats of ql / kl, of w, partials, stage, a_all */
    float *ql, *kl, *w, *part, *stage, *scratch;   /* Q~, K~ (per query head) [B, m, Hq, D];
                                        W = pinv(A) B V [B, m, Hq, Dv]; part: per (b, h, key chunk)
                                        m rows of [Dv sums, max, sum]; stage [B, Sq, Hq, Dv] */
    float *a_all;                      /* ATTN_NYSTROM_PINV_BATCH: every A [B*Hq][m][m], then */
    double *cmax, gmax;                /* their column maxima [B*Hq] and the largest */
} attn__nys_plan;

/* Valid query rows / keys of sequence b (padding rows past them); the rows the landmarks and
   the conv read: all of them under Hugging Face's rule, the valid ones under the others. */
static int attn__nys_lq(const attn__nys_plan *P, int b) { return P->lens_q ? P->lens_q[b] : P->q.seq; }
static int attn__nys_lk(const attn__nys_plan *P, int b) { return P->lens_k ? P->lens_k[b] : P->k.seq; }
static int attn__nys_read(const attn__nys_plan *P, int is_k, int b) {
    return P->hf ? (is_k ? P->k.seq : P->q.seq) : (is_k ? attn__nys_lk(P, b) : attn__nys_lq(P, b));
}
/* The landmarks of q (k) of sequence b that hold a valid token, [*lo, *hi): the padding sits at
   the ends (segments wholly in the front padding, then those past the valid length); all m
   unless nystrom-attention's mask is on (the others are masked). */
static void attn__nys_valid(const attn__nys_plan *P, int is_k, int b, int *lo, int *hi) {
    const int L = is_k ? attn__nys_lk(P, b) : attn__nys_lq(P, b), l = is_k ? P->lk : P->lq, p = is_k ? P->pk : P->pq;
    if (!P->masked) { *lo = 0; *hi = P->m; return; }
    *lo = p / l;
    *hi = L > 0 ? (L + p + l - 1) / l : *lo;
}
/* softmax of row[lo, hi) (the valid landmarks), zeros elsewhere; none valid: uniform over all m
   (every entry masked, which nystrom-attention's fill value makes equal) */
static void attn__nys_softmax_range(const attn__isa *isa, float *row, int lo, int hi, int m) {
    int j;
    if (hi <= lo) { for (j = 0; j < m; ++j) row[j] = 1.0f / (float)m; return; }
    {
        const float mx = isa->max(row + lo, hi - lo), sum = isa->exp_sum(row + lo, row + lo, mx, hi - lo);
        isa->scal(row + lo, 1.0f / sum, hi - lo);
    }
    for (j = 0; j < lo; ++j) row[j] = 0.0f;
    for (j = hi; j < m; ++j) row[j] = 0.0f;
}

/* Landmarks: task t < B*Hq makes Q~ of (b, h); the rest K~ of a KV head, copied to its query heads. */
static void attn__nys_landmark_task(void *ctx, int t, int thread) {
    const attn__nys_plan *P = (const attn__nys_plan *)ctx;
    const int Hq = P->q.heads, g = Hq / P->k.heads, D = P->q.dim, is_k = t >= P->q.batch * Hq;
    const attn__view *x = is_k ? &P->k : &P->q;
    const int u = is_k ? t - P->q.batch * Hq : t, b = u / x->heads, h = u % x->heads, l = is_k ? P->lk : P->lq;
    const int hq = is_k ? h * g : h;
    float *buf = P->scratch + (size_t)thread * P->scratch_floats, *base = is_k ? P->kl : P->ql;
    const int n = attn__nys_read(P, is_k, b);   /* zero rule: the padding counts as zeros */
    const int p = is_k ? P->pk : P->pq;         /* front padding (nystrom-attention): row r at p + r */
    int j, i, r;
    for (j = 0; j < P->m; ++j) {
        float *acc = base + (((size_t)b * P->m + j) * Hq + hq) * D;
        const int r0 = ATTN__MAX(0, j * l - p), r1 = ATTN__MIN(n, (j + 1) * l - p);
        for (i = 0; i < D; ++i) acc[i] = 0.0f;
        for (r = r0; r < r1; ++r) {
            const float *row = (const float *)attn__at(x, b, r, h);
            if (x->dtype != ATTN_F32) { P->isa->load(row, x->dtype, buf, D, 1.0f); row = buf; }
            P->isa->axpy(acc, 1.0f, row, D);
        }
        /* the mean over the segment, or (nystrom-attention's mask) over its valid tokens */
        if (!P->masked) P->isa->scal(acc, 1.0f / (float)l, D);
        else if (r1 > r0) P->isa->scal(acc, 1.0f / (float)(r1 - r0), D);
        if (is_k) for (i = 1; i < g; ++i) memcpy(acc + (size_t)i * D, acc, (size_t)D * sizeof(float));
    }
}

/* Rows [r0, r1) of an input view (b, ., h) as fp32 with leading dimension *ld (converted into
   buf when not directly usable). */
static const float *attn__nys_rows(const attn__isa *isa, const attn__view *x, int b, int h, int r0, int r1, float *buf,
                                   ptrdiff_t *ld) {
    int i;
    if (attn__lr_direct(x)) {
        *ld = x->seq == 1 ? x->dim : x->ss;
        return (const float *)attn__at(x, b, r0, h);
    }
    for (i = r0; i < r1; ++i) isa->load(attn__at(x, b, i, h), x->dtype, buf + (size_t)(i - r0) * x->dim, x->dim, 1.0f);
    *ld = x->dim;
    return buf;
}

/* B V, part 1, for (b, KV head, key chunk): for each of the g query heads, S = scale Q~ K_c^T
   [m, kc], E = exp(S - rowmax), partial = E V_c [m, Dv] with its row max and row sum. */
static void attn__nys_bv_task(void *ctx, int t, int thread) {
    const attn__nys_plan *P = (const attn__nys_plan *)ctx;
    const int Hq = P->q.heads, Hk = P->k.heads, g = Hq / Hk, D = P->q.dim, Dv = P->v.dim, m = P->m;
    const int c = t % P->n_chunks, bh = t / P->n_chunks, b = bh / Hk, hk = bh % Hk;
    const int k0 = c * ATTN__NYS_KC, k1 = ATTN__MIN(attn__nys_lk(P, b), k0 + ATTN__NYS_KC), kc = k1 - k0;
    float *S = P->scratch + (size_t)thread * P->scratch_floats, *kb = S + (size_t)m * ATTN__NYS_KC;
    float *vb = kb + (size_t)ATTN__NYS_KC * D;
    ptrdiff_t ldk, ldv;
    const float *K, *V;
    int i, r;
    if (kc <= 0) {   /* every key of the chunk is padding (masked): an empty partial */
        for (i = 0; i < g; ++i) {
            float *part = P->part + (((size_t)b * Hq + hk * g + i) * P->n_chunks + c) * (size_t)m * P->part_row;
            for (r = 0; r < m; ++r) {
                memset(part + (size_t)r * P->part_row, 0, (size_t)Dv * sizeof(float));
                part[(size_t)r * P->part_row + Dv] = -INFINITY;
                part[(size_t)r * P->part_row + Dv + 1] = 0.0f;
            }
        }
        return;
    }
    K = attn__nys_rows(P->isa, &P->k, b, hk, k0, k1, kb, &ldk);
    V = attn__nys_rows(P->isa, &P->v, b, hk, k0, k1, vb, &ldv);
    for (i = 0; i < g; ++i) {
        const int h = hk * g + i;
        float *part = P->part + (((size_t)b * Hq + h) * P->n_chunks + c) * (size_t)m * P->part_row;
        attn__sgemm_par(NULL, 1, 0, 1, m, kc, D, P->scale, P->ql + ((size_t)b * m * Hq + h) * D, (ptrdiff_t)Hq * D, K, ldk,
                        0.0f, S, kc);
        for (r = 0; r < m; ++r) {
            float *row = S + (size_t)r * kc;
            const float mx = P->isa->max(row, kc);
            part[(size_t)r * P->part_row + Dv] = mx;
            part[(size_t)r * P->part_row + Dv + 1] = P->isa->exp_sum(row, row, mx, kc);
        }
        attn__sgemm_par(NULL, 1, 0, 0, m, Dv, kc, 1.0f, S, kc, V, ldv, 0.0f, part, (ptrdiff_t)P->part_row);
    }
}

/* A = softmax(scale Q~ K~^T) [m][m] of (b, query head h) */
static void attn__nys_a(const attn__nys_plan *P, int b, int h, float *A) {
    const int Hq = P->q.heads, D = P->q.dim, m = P->m;
    const size_t oq = ((size_t)b * m * Hq + h) * D;
    int i;
    int qlo, qhi, klo, khi;
    attn__nys_valid(P, 0, b, &qlo, &qhi); attn__nys_valid(P, 1, b, &klo, &khi);
    attn__sgemm_par(NULL, 1, 0, 1, m, m, D, P->scale, P->ql + oq, (ptrdiff_t)Hq * D, P->kl + oq, (ptrdiff_t)Hq * D,
                    0.0f, A, m);
    for (i = 0; i < m; ++i)   /* a masked landmark's row: uniform */
        attn__nys_softmax_range(P->isa, A + (size_t)i * m, klo, i >= qlo && i < qhi ? khi : klo, m);
}

/* ATTN_NYSTROM_PINV_BATCH's first pass: A of (b, h) = task t and its largest column sum */
static void attn__nys_a_task(void *ctx, int t, int thread) {
    attn__nys_plan *P = (attn__nys_plan *)ctx;
    float *A = P->a_all + (size_t)t * P->m * P->m;
    (void)thread;
    attn__nys_a(P, t / P->q.heads, t % P->q.heads, A);
    P->cmax[t] = attn__nys_colmax(A, P->m);
}

/* nystrom-attention's row of B for a landmark with no valid token: uniform over its m*l keys,
   of which only the valid ones have a value: row = (sum of the valid v) / (m*l) */
static void attn__nys_vsum(const attn__nys_plan *P, int b, int h, float *row) {
    const int Dv = P->v.dim, hv = h / (P->q.heads / P->k.heads), Lk = attn__nys_lk(P, b);
    float *buf = row + Dv;   /* Dv floats of scratch after the row */
    int r;
    for (r = 0; r < Lk; ++r) {
        const float *x = (const float *)attn__at(&P->v, b, r, hv);
        if (P->v.dtype != ATTN_F32) { P->isa->load(x, P->v.dtype, buf, Dv, 1.0f); x = buf; }
        P->isa->axpy(row, 1.0f, x, Dv);
    }
    P->isa->scal(row, 1.0f / (float)(P->m * P->lk), Dv);
}

/* Per (b, query head): B V from the chunks' partials (merged in chunk order), A = softmax(scale
   Q~ K~^T) (or the first pass's), Z = pinv(A), W = Z (B V). */
static void attn__nys_pinv_task(void *ctx, int t, int thread) {
    const attn__nys_plan *P = (const attn__nys_plan *)ctx;
    const int Hq = P->q.heads, Dv = P->v.dim, m = P->m, b = t / Hq, h = t % Hq;
    const size_t mm = (size_t)m * m;
    float *A = P->scratch + (size_t)thread * P->scratch_floats, *Z = A + mm, *bv = Z + 4 * mm;
    const float *part = P->part + ((size_t)b * Hq + h) * P->n_chunks * (size_t)m * P->part_row;
    const size_t ov = ((size_t)b * m * Hq + h) * Dv, cstride = (size_t)m * P->part_row;
    int i, c, qlo, qhi;
    attn__nys_valid(P, 0, b, &qlo, &qhi);
    for (i = 0; i < m; ++i) {
        float mx = -INFINITY, l = 0.0f, *row = bv + (size_t)i * Dv;
        for (c = 0; c < P->n_chunks; ++c) mx = ATTN__MAX(mx, part[c * cstride + (size_t)i * P->part_row + Dv]);
        for (c = 0; c < Dv; ++c) row[c] = 0.0f;
        if (i < qlo || i >= qhi) { attn__nys_vsum(P, b, h, row); continue; }   /* a masked landmark's uniform row */
        if (P->luc && !P->masked && P->pk) {   /* nystrom-attention's front zeros: keys of logit 0, value 0 */
            mx = ATTN__MAX(mx, 0.0f);
            l = (float)P->pk * expf(-mx);
        }
        if (mx == -INFINITY) continue;   /* no valid key (Lk = 0): B V = 0 */
        for (c = 0; c < P->n_chunks; ++c) {
            const float *pr = part + c * cstride + (size_t)i * P->part_row, wgt = expf(pr[Dv] - mx);
            l += wgt * pr[Dv + 1];
            P->isa->axpy(row, wgt, pr, Dv);
        }
        P->isa->scal(row, 1.0f / l, Dv);
    }
    if (P->a_all) A = P->a_all + (size_t)t * mm;
    else attn__nys_a(P, b, h, A);
    attn__nys_pinv(A, m, P->iters, P->a_all ? P->gmax : attn__nys_colmax(A, m), Z, Z + mm);
    attn__sgemm_par(NULL, 1, 0, 0, m, Dv, m, 1.0f, Z, m, bv, Dv, 0.0f, P->w + ov, (ptrdiff_t)Hq * Dv);
}

/* conv residual of rows [r0, r1) of (b, query head h) added to O [r1 - r0][Dv]; vb: scratch for
   V rows [r0 - kernel/2, r1 + kernel/2) converted to fp32 */
static void attn__nys_conv_rows(const attn__nys_plan *P, int b, int h, int r0, int r1, float *O, float *vb) {
    const int Hq = P->q.heads, Dv = P->v.dim, hv = h / (Hq / P->k.heads), n = attn__nys_read(P, 1, b), half = P->kernel / 2;
    const int v0 = ATTN__MAX(0, r0 - half), v1 = ATTN__MIN(n, r1 + half);
    const float *wt = P->conv + (size_t)h * P->kernel;
    ptrdiff_t ld;
    const float *V = attn__nys_rows(P->isa, &P->v, b, hv, v0, v1, vb, &ld);
    int i, j;
    for (i = r0; i < r1; ++i)
        for (j = ATTN__MAX(0, i - half); j <= i + half && j < n; ++j)
            P->isa->axpy(O + (size_t)(i - r0) * Dv, wt[j - i + half], V + (ptrdiff_t)(j - v0) * ld, Dv);
}

/* F W for a block of query rows of (b, h): S = softmax(scale Q K~^T) [rows, m], O = S W, plus
   the conv residual, stored to out. */
static void attn__nys_fw_task(void *ctx, int t, int thread) {
    const attn__nys_plan *P = (const attn__nys_plan *)ctx;
    const int Hq = P->q.heads, D = P->q.dim, Dv = P->v.dim, m = P->m;
    const int blk = t % P->n_blocks, bh = t / P->n_blocks, b = bh / Hq, h = bh % Hq;
    const int r0 = blk * ATTN__NYS_RQ, r1 = ATTN__MIN(P->q.seq, r0 + ATTN__NYS_RQ), nr = r1 - r0;
    const int nv = ATTN__MAX(0, ATTN__MIN(r1, attn__nys_lq(P, b)) - r0);   /* valid rows; padding rows get 0 */
    float *S = P->scratch + (size_t)thread * P->scratch_floats, *O = S + (size_t)ATTN__NYS_RQ * m;
    float *qb = O + (size_t)ATTN__NYS_RQ * Dv;
    const size_t oq = ((size_t)b * m * Hq + h) * D, ov = ((size_t)b * m * Hq + h) * Dv;
    int i;
    if (nv > 0) {
        ptrdiff_t ldq;
        const float *Q = attn__nys_rows(P->isa, &P->q, b, h, r0, r0 + nv, qb, &ldq);
        int klo, khi;
        attn__nys_valid(P, 1, b, &klo, &khi);
        attn__sgemm_par(NULL, 1, 0, 1, nv, m, D, P->scale, Q, ldq, P->kl + oq, (ptrdiff_t)Hq * D, 0.0f, S, m);
        for (i = 0; i < nv; ++i) attn__nys_softmax_range(P->isa, S + (size_t)i * m, klo, khi, m);
        attn__sgemm_par(NULL, 1, 0, 0, nv, Dv, m, 1.0f, S, m, P->w + ov, (ptrdiff_t)Hq * Dv, 0.0f, O, Dv);
        if (P->conv) attn__nys_conv_rows(P, b, h, r0, r0 + nv, O, qb);
    }
    memset(O + (size_t)nv * Dv, 0, (size_t)(nr - nv) * Dv * sizeof(float));
    for (i = 0; i < nr; ++i) P->isa->store(attn__at(&P->out, b, r0 + i, h), P->out.dtype, O + (size_t)i * Dv, Dv, 1.0f);
}

/* The exact path's conv residual (landmarks = n): out = stage + conv(V), per (b, query head). */
static void attn__nys_conv_task(void *ctx, int t, int thread) {
    const attn__nys_plan *P = (const attn__nys_plan *)ctx;
    const int Hq = P->q.heads, Dv = P->v.dim, b = t / Hq, h = t % Hq, n = P->q.seq, lq = attn__nys_lq(P, b);
    float *acc = P->scratch + (size_t)thread * P->scratch_floats, *vb = acc + (size_t)ATTN__NYS_RQ * Dv;
    int r0, i;
    for (r0 = 0; r0 < n; r0 += ATTN__NYS_RQ) {
        const int r1 = ATTN__MIN(n, r0 + ATTN__NYS_RQ);
        for (i = r0; i < r1; ++i)
            memcpy(acc + (size_t)(i - r0) * Dv, P->stage + (((size_t)b * n + i) * Hq + h) * Dv, (size_t)Dv * sizeof(float));
        if (lq > r0) attn__nys_conv_rows(P, b, h, r0, ATTN__MIN(r1, lq), acc, vb);   /* padding rows keep the kernel's 0 */
        for (i = r0; i < r1; ++i) P->isa->store(attn__at(&P->out, b, i, h), P->out.dtype, acc + (size_t)(i - r0) * Dv, Dv, 1.0f);
    }
}

static attn_status attn__nys_plan_make(const attn__call *c, attn__nys_plan *P) {
    const attn_desc *d = c->d;
    const attn_nystrom_params *N = &d->nystrom;
    const int B = c->q.batch, Sq = c->q.seq, Sk = c->k.seq, Hq = c->q.heads, D = c->q.dim, Dv = c->v.dim;
    attn_tensor stage;
    attn_status s;
    size_t f = 0, sc, m2, vrows;
    memset(P, 0, sizeof *P);
    if ((s = attn__check_qkv(&c->q, &c->k, &c->v, c->bytes ? NULL : &c->out, &P->q, &P->k, &P->v, &P->out)) != ATTN_OK)
        return s;
    if (N->pad != 0 && N->pad != 1) return ATTN_ERR_NYSTROM_PAD;
    if ((int)N->padding_rule != ATTN_NYSTROM_PADDING_ZERO && (int)N->padding_rule != ATTN_NYSTROM_PADDING_HF &&
        (int)N->padding_rule != ATTN_NYSTROM_PADDING_LUCIDRAINS) return ATTN_ERR_NYSTROM_PADDING_RULE;
    if ((int)N->pinv_init != ATTN_NYSTROM_PINV_PER_HEAD && (int)N->pinv_init != ATTN_NYSTROM_PINV_BATCH)
        return ATTN_ERR_NYSTROM_PINV_INIT;
    P->m = N->landmarks ? N->landmarks : 64;
    if (N->landmarks < 0 || P->m > ATTN__MIN(Sq, Sk)) return ATTN_ERR_NYSTROM_LANDMARKS;
    P->luc = N->padding_rule == ATTN_NYSTROM_PADDING_LUCIDRAINS;   /* pads at the front by itself */
    if (!N->pad && !P->luc && (Sq % P->m != 0 || Sk % P->m != 0)) return ATTN_ERR_NYSTROM_DIVIDE;
    if (N->iterations < 0) return ATTN_ERR_NYSTROM_ITERATIONS;
    if (N->conv_kernel < 0 || (N->conv_kernel != 0 && N->conv_kernel % 2 == 0)) return ATTN_ERR_NYSTROM_CONV_KERNEL;
    /* the caller's filter has as many taps as the caller says: a default would read past it */
    if (N->conv && N->conv_kernel == 0) return ATTN_ERR_NYSTROM_CONV_TAPS;
    if (N->conv && Sq != Sk) return ATTN_ERR_NYSTROM_CONV_SEQ;
    if (d->causal || d->window_left || d->window_right || (d->dilation != 0 && d->dilation != 1) || d->sink_tokens ||
        d->global_tokens || d->cu_seqlens_q || d->cu_seqlens_k || d->varlen_batch ||
        d->alibi_slopes || d->softcap != 0.0f || d->bias.data || d->dropout_p != 0.0f || d->rope)
        return ATTN_ERR_NYSTROM_MASK;
    if (c->lse) return ATTN_ERR_NYSTROM_LSE;
    if (d->seqlens_q && !attn__lengths_ok(d->seqlens_q, B, Sq)) return ATTN_ERR_SEQLENS_Q;
    if (d->seqlens_k && !attn__lengths_ok(d->seqlens_k, B, Sk)) return ATTN_ERR_SEQLENS_K;
    if (!isfinite(d->scale)) return ATTN_ERR_SCALE;
    if (d->n_threads < 0) return ATTN_ERR_N_THREADS;
    if ((int)d->bf16_kernels < ATTN_BF16_AUTO || (int)d->bf16_kernels > ATTN_BF16_FP32) return ATTN_ERR_BF16_KERNELS;
    P->d = d; P->isa = attn__vec();
    P->iters = N->iterations ? N->iterations : 6;
    P->hf = N->padding_rule == ATTN_NYSTROM_PADDING_HF;
    P->lens_k = d->seqlens_k;   /* zero rule, self-attention: one mask for queries and keys */
    P->lens_q = d->seqlens_q ? d->seqlens_q : !P->hf && Sq == Sk ? d->seqlens_k : NULL;
    P->core = *d; P->core.seqlens_q = P->lens_q;
    P->lq = (Sq + P->m - 1) / P->m; P->lk = (Sk + P->m - 1) / P->m;
    if (P->luc) { P->masked = d->seqlens_k != NULL; P->pq = P->m * P->lq - Sq; P->pk = P->m * P->lk - Sk; }
    P->exact = P->m == Sq && P->m == Sk && !P->luc;
    P->conv = N->conv; P->kernel = N->conv ? N->conv_kernel : 1;   /* no conv: the kernel is not read */
    P->n_threads = attn__resolve_threads(d);
    P->scale = d->scale != 0.0f ? d->scale : 1.0f / sqrtf((float)D);
    P->n_chunks = (Sk + ATTN__NYS_KC - 1) / ATTN__NYS_KC;
    P->n_blocks = (Sq + ATTN__NYS_RQ - 1) / ATTN__NYS_RQ;
    {   /* the task counts of attn__nystrom_forward */
        int t;
        if (!attn__tasks(2, (size_t)B, (size_t)Hq, &t) || !attn__tasks((size_t)B, (size_t)Hq, (size_t)P->n_blocks, &t) ||
            !attn__tasks((size_t)B, (size_t)c->k.heads, (size_t)P->n_chunks, &t)) return ATTN_ERR_OVERFLOW;
    }
    P->part_row = (size_t)Dv + 2;
    m2 = (size_t)P->m * (size_t)P->m;
    /* V rows a block of conv residuals reads: the block and kernel/2 either side (fp32 copies) */
    if (!attn__add_size((size_t)ATTN__NYS_RQ, (size_t)P->kernel, &vrows) || !attn__mul_size(vrows, (size_t)Dv, &vrows))
        return ATTN_ERR_OVERFLOW;
    if (P->exact) {   /* landmarks = tokens: the exact kernel (into stage when the conv follows) */
        stage = attn_tensor_dense(c->q.data, ATTN_F32, B, Sq, Hq, Dv);
        if ((s = attn__lr_core(&P->core, c->q, c->k, c->v, P->conv ? stage : c->out, NULL, NULL, 0, &P->core_bytes)) != ATTN_OK)
            return s;
        if (P->conv) {
            P->scratch_floats = (size_t)ATTN__NYS_RQ * Dv + vrows;
            if (!attn__lr_floats(&P->f_stage, (size_t)B * Sq, (size_t)Hq * Dv)) return ATTN_ERR_OVERFLOW;
        }
    } else {
        /* per thread: a q/k row (landmarks); S, K and V chunks (B V); A, Z, 3 m^2 and B V (pinv);
           S, O and q rows or V rows (F W) */
        const size_t bvs = (size_t)P->m * ATTN__NYS_KC + (size_t)ATTN__NYS_KC * ((size_t)D + Dv);
        const size_t fws = (size_t)ATTN__NYS_RQ * ((size_t)P->m + Dv) + ATTN__MAX((size_t)ATTN__NYS_RQ * D, vrows);
        if (m2 > (SIZE_MAX - (size_t)(P->m + 1) * Dv) / 8) return ATTN_ERR_OVERFLOW;
        P->scratch_floats = ATTN__MAX(ATTN__MAX((size_t)D, bvs), ATTN__MAX(5 * m2 + (size_t)P->m * Dv + Dv, fws));
        if (!attn__lr_floats(&P->f_ql, (size_t)B * P->m, (size_t)Hq * D) ||
            !attn__lr_floats(&P->f_w, (size_t)B * P->m, (size_t)Hq * Dv) ||
            !attn__mul_size((size_t)B * Hq, (size_t)P->n_chunks, &sc) || !attn__mul_size(sc, (size_t)P->m, &sc) ||
            !attn__lr_floats(&P->f_part, sc, P->part_row)) return ATTN_ERR_OVERFLOW;
        if (N->pinv_init == ATTN_NYSTROM_PINV_BATCH &&   /* every A, then B*Hq doubles (2 floats each) */
            (!attn__mul_size((size_t)B * Hq, m2, &sc) || !attn__add_size(sc, (size_t)2 * B * Hq, &sc) ||
             !attn__lr_floats(&P->f_a, sc, 1))) return ATTN_ERR_OVERFLOW;
    }
    P->scratch_floats = (P->scratch_floats + 15) & ~(size_t)15;
    if (!attn__add_size(f, P->f_ql, &f) || !attn__add_size(f, P->f_ql, &f) || !attn__add_size(f, P->f_w, &f) ||
        !attn__add_size(f, P->f_part, &f) || !attn__add_size(f, P->f_stage, &f) || !attn__add_size(f, P->f_a, &f) ||
        !attn__lr_floats(&f, P->scratch_floats, (size_t)P->n_threads)) return ATTN_ERR_OVERFLOW;
    P->floats = f;
    return ATTN_OK;
}

/* ATTN_NYSTROM's forward: landmarks; B V in key chunks (GEMMs, split softmax); per head the
   chunks' merge, A and its pseudo-inverse, W = pinv(A) B V; then F W and the conv residual in
   blocks of query rows (GEMMs). With landmarks = q.seq = k.seq: the exact kernel. */
static attn_status attn__nystrom_forward(const attn__call *c) {
    attn__nys_plan P;
    attn__ws w;
    attn_status s = ATTN_OK;
    size_t bytes;
    const int B = c->q.batch, Hq = c->q.heads, Dv = c->v.dim;
    if ((s = attn__nys_plan_make(c, &P)) != ATTN_OK) return s;
    if (!attn__lr_bytes(P.floats, P.core_bytes, &bytes)) return ATTN_ERR_OVERFLOW;
    if (c->bytes) { *c->bytes = bytes; return ATTN_OK; }
    if ((s = attn__ws_acquire(c->d->workspace, c->d->workspace_size, bytes, ATTN_ERR_WORKSPACE, &w)) != ATTN_OK) return s;
    P.ql = (float *)(void *)w.base; P.kl = P.ql + P.f_ql; P.w = P.kl + P.f_ql; P.part = P.w + P.f_w;
    P.stage = P.part + P.f_part; P.scratch = P.stage + P.f_stage;
    if (P.f_a) { P.cmax = (double *)(void *)(P.scratch + P.scratch_floats * (size_t)P.n_threads); P.a_all = (float *)(P.cmax + B * Hq); }
    if (P.exact) {
        attn_tensor dst = P.conv ? attn_tensor_dense(P.stage, ATTN_F32, B, c->q.seq, Hq, Dv) : c->out;
        s = attn__lr_core(&P.core, c->q, c->k, c->v, dst, NULL, w.base + P.floats * sizeof(float), P.core_bytes, NULL);
        if (s == ATTN_OK && P.conv) attn__parallel_for(c->d, B * Hq, P.n_threads, attn__nys_conv_task, &P);
    } else {
        attn__parallel_for(c->d, B * Hq + B * c->k.heads, P.n_threads, attn__nys_landmark_task, &P);
        attn__parallel_for(c->d, B * c->k.heads * P.n_chunks, P.n_threads, attn__nys_bv_task, &P);
        if (P.a_all) {   /* batch-global Z0: every A first, then one max (in task order: deterministic) */
            int t;
            attn__parallel_for(c->d, B * Hq, P.n_threads, attn__nys_a_task, &P);
            P.gmax = -(double)INFINITY;
            for (t = 0; t < B * Hq; ++t) if (P.cmax[t] > P.gmax || P.cmax[t] != P.cmax[t]) P.gmax = P.cmax[t];
        }
        attn__parallel_for(c->d, B * Hq, P.n_threads, attn__nys_pinv_task, &P);
        attn__parallel_for(c->d, B * Hq * P.n_blocks, P.n_threads, attn__nys_fw_task, &P);
    }
    attn__ws_release(&w);
    return s;
}
static const attn__mech attn__mech_nystrom = { attn__nystrom_forward, NULL, NULL, NULL, NULL };

/* ---------------------------------------------------------------------------------------
   3.16 state-space scans
   --------------------------------------------------------------------------------------- */

/* The scans take [batch, channels, len] views (attn_ssm_tensor) and their own desc. Every
   kernel below is written against the vector layer (attn__vec()). The selective scan's work is
   its ssm_scan op (3.5), one fused kernel per ISA: 16 channels in SIMD lanes (1 zmm, 2 ymm or
   4 NEON vectors), a tile of tokens transposed 16 x 16 in registers, softplus, D skip and the
   silu gate vectorised, and per state n the recurrence over the tile's tokens with x_n in a
   register: per state and token one 2^t (exp(dt A) with A prescaled by log2 e), one multiply
   (dt u B_n) and two FMAs (x, y). Profiled on Zen 4 (perf, one thread): the state loop is ~75%
   of the time and bound by the FMA pipes (12 vector ops per state and token); the softplus and
   gate ~20%; the transposes and staging the rest. Each (sequence, block of ATTN__SSM_W
   channels) is one task that runs its tokens in order, so results never depend on the thread
   count, and a token's arithmetic does not depend on where a tile or a piece starts. Complex
   A runs attn__ssm_cscan_task, scalar per channel.
   The backward (attn__ssm_bwd_task) runs the ssm_bwd op on the same 16-channel pieces: per
   (sequence, piece) a checkpoint pass, then 256-token chunks last first (recompute, gate,
   reverse sweep; 64 and 128 measured 15% and 10% slower: per-chunk costs). Per state and token the sweep costs 9 vector ops (3 FMAs, 6 multiplies: no
   exp, the recompute stored e^{dt A}) plus, with per-token B/C, the sum of dB and dC over the
   16 lanes: a shuffle tree per 16 tokens and state. Measured on an Intel Xeon (AVX-512, 2
   shared cores), one thread, D 1536, N 16, L 2k-16k: 3.4-3.6x the forward per channel-token,
   from 69x (scalar per channel, libm expf in three passes; bench/README.md). Complex A runs
   ssm_cbwd on the same driver (attn__ssm_bwd_task, Q = 2 floats per state): ~30 vector ops per
   state and token, 0.24x the scalar complex forward (D 256, N 16, L 2k, one thread, same Xeon).
   The conv1d's backward (attn__ssm_convb_task) and S4D's (attn__s4db_task, the recurrence's
   adjoint with the modes in rows of madd / axpy / dot) are per channel; measured 2.0-2.5x and
   6.4-7.3x their forwards (bench/README.md). */
#define ATTN__SSM_W 64          /* channels per task (4 pieces of 16 for the fused kernel) */
#define ATTN__SSM_T 256         /* tokens per tile: per-token B and C staged once per tile */
#define ATTN__SSM_CONV_T 1024   /* tokens per conv1d chunk */

ATTNDEF attn_ssm_tensor attn_ssm_tensor_dense(void *data, attn_dtype dtype, int channels, int len) {
    attn_ssm_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data; t.dtype = dtype;
    t.stride_chan = len > 0 ? len : 0;
    t.stride_batch = attn__stride_mul(t.stride_chan, channels);
    return t;
}

/* A validated view: the caller's element strides (a zero stride broadcasts). */
typedef struct attn__ssm_tv { char *p; attn_dtype dt; ptrdiff_t sb, sc; int nb, nc, nl; } attn__ssm_tv;

static attn_status attn__ssm_common(const attn_ssm_desc *d, int need_len) {
    if (!d) return ATTN_ERR_NULL_DESC;
    if (d->batch < 1 || d->dim < 1 || (need_len && d->len < 1)) return ATTN_ERR_SSM_SHAPE;
    if (d->n_threads < 0) return ATTN_ERR_SSM_N_THREADS;
    return ATTN_OK;
}

/* Checks t as [nb, nc, nl] (nl contiguous) and resolves its strides. */
static attn_status attn__ssm_view(attn_ssm_tensor t, int nb, int nc, int nl, int output, attn__ssm_tv *r) {
    size_t e, a;
    if (t.dtype != ATTN_F32 && t.dtype != ATTN_F16 && t.dtype != ATTN_BF16) return ATTN_ERR_SSM_DTYPE;
    r->p = (char *)t.data; r->dt = t.dtype; r->nb = nb; r->nc = nc; r->nl = nl;
    if (output && ((nb > 1 && t.stride_batch == 0) || (nc > 1 && t.stride_chan == 0))) return ATTN_ERR_SSM_Y_BROADCAST;
    r->sb = t.stride_batch; r->sc = t.stride_chan;
    /* the largest offset |sb| (nb-1) + |sc| (nc-1) + nl - 1, in bytes, must fit ptrdiff_t */
    if (!attn__mul_size((size_t)(r->sb < 0 ? -r->sb : r->sb), (size_t)(nb - 1), &e)) return ATTN_ERR_SSM_OVERFLOW;
    if (!attn__mul_size((size_t)(r->sc < 0 ? -r->sc : r->sc), (size_t)(nc - 1), &a) || !attn__add_size(e, a, &e) ||
        !attn__add_size(e, (size_t)nl, &e) || !attn__mul_size(e, attn__dtype_size(t.dtype), &e) ||
        e > (size_t)PTRDIFF_MAX)
        return ATTN_ERR_SSM_OVERFLOW;
    return ATTN_OK;
}
/* Lists a view made by attn__ssm_view in an overlap set (3.4) as the attn__view [nb, nc, 1, nl]
   it is, so an output's rows (channels) are checked as attn_tensor's; absent (NULL): skipped. */
static void attn__ovl_ssm(attn__ovl *o, int is_out, const attn__ssm_tv *t) {
    attn__view v;
    if (!t->p) return;
    v.data = t->p; v.dtype = t->dt; v.esize = attn__dtype_size(t->dt);
    v.batch = t->nb; v.seq = t->nc; v.heads = 1; v.dim = t->nl; v.sb = t->sb; v.ss = t->sc; v.sh = 0;
    attn__ovl_view(o, is_out, &v);
}
static void *attn__ssm_at(const attn__ssm_tv *v, int b, int c, int l) {
    return v->p + ((ptrdiff_t)b * v->sb + (ptrdiff_t)c * v->sc + l) * (ptrdiff_t)attn__dtype_size(v->dt);
}

static int attn__ssm_threads(const attn_ssm_desc *d) {
    int n = d->n_threads > 0 ? d->n_threads : attn__cpu_count();
    return ATTN__MIN(n, ATTN__MAX_THREADS);
}
/* per-thread scratch in floats, rounded to whole cache lines */
static size_t attn__ssm_round(size_t floats) { return (floats + 15) & ~(size_t)15; }

/* Workspace bytes of n_threads regions of `floats` floats each (0 on overflow). */
static size_t attn__ssm_ws_bytes(int n_threads, size_t floats) {
    size_t b;
    if (!attn__mul_size(attn__ssm_round(floats), (size_t)n_threads * sizeof(float), &b) || !attn__add_size(b, ATTN__ALIGN, &b))
        return 0;
    return b;
}

/* ---- Mamba selective scan ---- */
typedef struct attn__ssm_scan {
    const attn__isa *V;
    int B, D, L, N, G, cg, nblk, bc_const, softplus, cplx;
    const int *cu;
    int S;
    attn__ssm_tv u, dl, z, Bm, Cm, y;
    int has_z;
    const float *A, *Dk, *dbias, *sin;
    float *sout;
    float *ws;
    size_t ws_floats;
} attn__ssm_scan;

/* per-thread scratch: the kernel's 4 N x 16, the carried state ATTN__SSM_W x N, constant
   B and C, converted rows (u, delta, z, y: 16 x T each; B, C: N x T each), a zero row and a
   scratch row; the state, B and C areas are twice that (complex A) */
static size_t attn__ssm_scan_floats(int N) {
    const size_t W = ATTN__SSM_W, T = ATTN__SSM_T, R = ATTN__MAX((size_t)N, T);
    return attn__ssm_round((size_t)N * 16 * 4) + attn__ssm_round(W * N * 2) + attn__ssm_round((size_t)4 * N * W) +
           16 * T * 4 + attn__ssm_round((size_t)N * T * 4) + attn__ssm_round(R) * 2;
}

/* the rows of 16 channels [c0, c0 + 16) of v at token t0 (channels past w: `pad`); a tensor
   that is not fp32 is converted into buf ([16][ld]: nt tokens) */
static void attn__ssm_rows(const attn__isa *V, const attn__ssm_tv *v, int b, int c0, int w, int t0, int nt, float *buf,
                           int ld, const float *pad, const float **rows) {
    int c;
    for (c = 0; c < 16; ++c)
        if (c >= w) rows[c] = pad;
        else if (v->dt == ATTN_F32) rows[c] = (const float *)attn__ssm_at(v, b, c0 + c, t0);
        else {
            V->load(attn__ssm_at(v, b, c0 + c, t0), v->dt, buf + (size_t)c * ld, nt, 1.0f);
            rows[c] = buf + (size_t)c * ld;
        }
}

/* One (sequence set, channel block of ATTN__SSM_W) task: tiles of T tokens, each staged once
   (per-token B and C, converted rows) and run by the vector layer's ssm_scan on the block's
   16-channel pieces, the state carried in the workspace between tiles. */
static void attn__ssm_scan_task(void *ctx, int task, int thread) {
    const attn__ssm_scan *P = (const attn__ssm_scan *)ctx;
    const attn__isa *V = P->V;
    const int N = P->N, T = ATTN__SSM_T, R = (int)attn__ssm_round((size_t)ATTN__MAX(N, T));
    const int b = task / (P->G * P->nblk), g = (task / P->nblk) % P->G, blk = task % P->nblk;
    const int c0 = g * P->cg + blk * ATTN__SSM_W, w = ATTN__MIN(ATTN__SSM_W, P->cg - blk * ATTN__SSM_W);
    float *f = P->ws + P->ws_floats * (size_t)thread;
    float *scr = f, *xb = scr + attn__ssm_round((size_t)N * 16 * 4);
    float *bcv = xb + attn__ssm_round((size_t)ATTN__SSM_W * N * 2);       /* const B, C rows [2][W][N] */
    float *ub = bcv + attn__ssm_round((size_t)4 * N * ATTN__SSM_W), *db = ub + 16 * T, *zb = db + 16 * T, *yb = zb + 16 * T;
    float *bb = yb + 16 * T, *cb = bb + (size_t)N * T, *zero = bb + attn__ssm_round((size_t)N * T * 4), *dump = zero + R;
    attn__ssm_k k;
    int c, n, s0, seg, s_lo, s_hi;
    memset(zero, 0, sizeof(float) * (size_t)R);
    memset(&k, 0, sizeof k);
    k.N = N; k.softplus = P->softplus; k.has_z = P->has_z; k.bc_const = P->bc_const; k.scratch = scr;
    if (P->bc_const)
        for (c = 0; c < w; ++c) {
            V->load(attn__ssm_at(&P->Bm, 0, c0 + c, 0), P->Bm.dt, bcv + (size_t)c * N, N, 1.0f);
            V->load(attn__ssm_at(&P->Cm, 0, c0 + c, 0), P->Cm.dt, bcv + (size_t)(ATTN__SSM_W + c) * N, N, 1.0f);
        }
    if (P->cu) { s_lo = 0; s_hi = P->S; } else { s_lo = b; s_hi = b + 1; }
    for (seg = s_lo; seg < s_hi; ++seg) {
        const int t_beg = P->cu ? P->cu[seg] : 0, t_end = P->cu ? P->cu[seg + 1] : P->L;
        int t0;
        if (t_beg == t_end) {                          /* an empty sequence: the state passes through */
            if (P->sout)
                for (c = 0; c < w; ++c)
                    for (n = 0; n < N; ++n)
                        P->sout[((size_t)seg * P->D + c0 + c) * N + n] = P->sin ? P->sin[((size_t)seg * P->D + c0 + c) * N + n] : 0.0f;
            continue;
        }
        for (t0 = t_beg; t0 < t_end; t0 += T) {
            const int nt = ATTN__MIN(T, t_end - t0), last = t0 + nt == t_end;
            k.nt = nt;
            if (!P->bc_const) {                        /* the group's B, C rows of this tile */
                if (P->Bm.dt == ATTN_F32 && P->Cm.dt == ATTN_F32 && P->Bm.sc == P->Cm.sc) {
                    k.Bt = (const float *)attn__ssm_at(&P->Bm, b, g * N, t0);
                    k.Ct = (const float *)attn__ssm_at(&P->Cm, b, g * N, t0);
                    k.ldb = P->Bm.sc;
                } else {
                    for (n = 0; n < N; ++n) {
                        V->load(attn__ssm_at(&P->Bm, b, g * N + n, t0), P->Bm.dt, bb + (size_t)n * T, nt, 1.0f);
                        V->load(attn__ssm_at(&P->Cm, b, g * N + n, t0), P->Cm.dt, cb + (size_t)n * T, nt, 1.0f);
                    }
                    k.Bt = bb; k.Ct = cb; k.ldb = T;
                }
            }
            for (s0 = 0; s0 < w; s0 += 16) {           /* the block's 16-channel pieces */
                const int ws16 = ATTN__MIN(16, w - s0), cs = c0 + s0;
                k.w = ws16;
                attn__ssm_rows(V, &P->u, b, cs, ws16, t0, nt, ub, T, zero, k.u);
                attn__ssm_rows(V, &P->dl, b, cs, ws16, t0, nt, db, T, zero, k.dl);
                if (P->has_z) attn__ssm_rows(V, &P->z, b, cs, ws16, t0, nt, zb, T, zero, k.z);
                for (c = 0; c < 16; ++c) {
                    const int in = c < ws16;
                    float *xr = xb + (size_t)(s0 + c) * N;
                    k.A[c] = in ? P->A + (size_t)(cs + c) * N : zero;
                    k.Bc[c] = in ? bcv + (size_t)(s0 + c) * N : zero;
                    k.Cc[c] = in ? bcv + (size_t)(ATTN__SSM_W + s0 + c) * N : zero;
                    k.bias[c] = in && P->dbias ? P->dbias[cs + c] : 0.0f;
                    k.dsk[c] = in && P->Dk ? P->Dk[cs + c] : 0.0f;
                    k.xin[c] = !in ? zero : t0 != t_beg ? xr : P->sin ? P->sin + ((size_t)seg * P->D + cs + c) * N : zero;
                    k.xout[c] = !in ? dump : last && P->sout ? P->sout + ((size_t)seg * P->D + cs + c) * N : xr;
                    k.y[c] = !in ? dump : P->y.dt == ATTN_F32 ? (float *)attn__ssm_at(&P->y, b, cs + c, t0) : yb + (size_t)c * T;
                }
                V->ssm_scan(&k);
                if (P->y.dt != ATTN_F32)
                    for (c = 0; c < ws16; ++c) V->store(attn__ssm_at(&P->y, b, cs + c, t0), P->y.dt, yb + (size_t)c * T, nt, 1.0f);
            }
        }
    }
}

/* The complex-A scan (desc->a_complex) on one (sequence set, channel block) task: channel by
   channel in fp32 scalars, tiles of T tokens with the group's B, C rows staged once per tile.
   Workspace as attn__ssm_scan_task's: xb [W][2N] the carried states, bcv [2][W][2N] constant
   B, C, ub / db / zb / yb rows of T, bb / cb [N][2T]. */
static void attn__ssm_cscan_task(void *ctx, int task, int thread) {
    const attn__ssm_scan *P = (const attn__ssm_scan *)ctx;
    const attn__isa *V = P->V;
    const int N = P->N, T = ATTN__SSM_T, N2 = 2 * P->N;
    const int b = task / (P->G * P->nblk), g = (task / P->nblk) % P->G, blk = task % P->nblk;
    const int c0 = g * P->cg + blk * ATTN__SSM_W, w = ATTN__MIN(ATTN__SSM_W, P->cg - blk * ATTN__SSM_W);
    float *f = P->ws + P->ws_floats * (size_t)thread;
    float *xb = f + attn__ssm_round((size_t)N * 16 * 4);
    float *bcv = xb + attn__ssm_round((size_t)ATTN__SSM_W * N * 2);
    float *ub = bcv + attn__ssm_round((size_t)4 * N * ATTN__SSM_W), *db = ub + 16 * T, *zb = db + 16 * T, *yb = zb + 16 * T;
    float *bb = yb + 16 * T, *cb = bb + (size_t)N * 2 * T;
    int c, n, t, seg, s_lo, s_hi;
    if (P->bc_const)
        for (c = 0; c < w; ++c) {
            V->load(attn__ssm_at(&P->Bm, 0, c0 + c, 0), P->Bm.dt, bcv + (size_t)c * N2, N2, 1.0f);
            V->load(attn__ssm_at(&P->Cm, 0, c0 + c, 0), P->Cm.dt, bcv + (size_t)(ATTN__SSM_W + c) * N2, N2, 1.0f);
        }
    if (P->cu) { s_lo = 0; s_hi = P->S; } else { s_lo = b; s_hi = b + 1; }
    for (seg = s_lo; seg < s_hi; ++seg) {
        const int t_beg = P->cu ? P->cu[seg] : 0, t_end = P->cu ? P->cu[seg + 1] : P->L;
        int t0;
        for (c = 0; c < w; ++c)
            for (n = 0; n < N2; ++n) xb[(size_t)c * N2 + n] = P->sin ? P->sin[((size_t)seg * P->D + c0 + c) * N2 + n] : 0.0f;
        for (t0 = t_beg; t0 < t_end; t0 += T) {
            const int nt = ATTN__MIN(T, t_end - t0);
            if (!P->bc_const)
                for (n = 0; n < N; ++n) {
                    V->load(attn__ssm_at(&P->Bm, b, g * N + n, 2 * t0), P->Bm.dt, bb + (size_t)n * 2 * T, 2 * nt, 1.0f);
                    V->load(attn__ssm_at(&P->Cm, b, g * N + n, 2 * t0), P->Cm.dt, cb + (size_t)n * 2 * T, 2 * nt, 1.0f);
                }
            for (c = 0; c < w; ++c) {
                const int ch = c0 + c;
                const float bias = P->dbias ? P->dbias[ch] : 0.0f, dsk = P->Dk ? P->Dk[ch] : 0.0f, *A = P->A + (size_t)ch * N2;
                const float *Bv = P->bc_const ? bcv + (size_t)c * N2 : NULL, *Cv = P->bc_const ? bcv + (size_t)(ATTN__SSM_W + c) * N2 : NULL;
                float *x = xb + (size_t)c * N2;
                V->load(attn__ssm_at(&P->u, b, ch, t0), P->u.dt, ub, nt, 1.0f);
                V->load(attn__ssm_at(&P->dl, b, ch, t0), P->dl.dt, db, nt, 1.0f);
                if (P->has_z) V->load(attn__ssm_at(&P->z, b, ch, t0), P->z.dt, zb, nt, 1.0f);
                for (t = 0; t < nt; ++t) {
                    float dt = db[t] + bias, du, acc = 0.0f;
                    if (P->softplus && dt <= 20.0f) dt = log1pf(expf(dt));
                    du = dt * ub[t];
                    for (n = 0; n < N; ++n) {
                        const float mag = expf(dt * A[2 * n]), ph = dt * A[2 * n + 1];
                        const float er = mag * cosf(ph), ei = mag * sinf(ph);
                        const float br = Bv ? Bv[2 * n] : bb[(size_t)n * 2 * T + 2 * t], bi = Bv ? Bv[2 * n + 1] : bb[(size_t)n * 2 * T + 2 * t + 1];
                        const float cr = Cv ? Cv[2 * n] : cb[(size_t)n * 2 * T + 2 * t], ci = Cv ? Cv[2 * n + 1] : cb[(size_t)n * 2 * T + 2 * t + 1];
                        const float xr = er * x[2 * n] - ei * x[2 * n + 1] + du * br;
                        const float xi = er * x[2 * n + 1] + ei * x[2 * n] + du * bi;
                        x[2 * n] = xr; x[2 * n + 1] = xi;
                        acc += cr * xr - ci * xi;
                    }
                    acc = 2.0f * acc + dsk * ub[t];
                    if (P->has_z) acc *= attn__silu1(zb[t]);
                    yb[t] = acc;
                }
                V->store(attn__ssm_at(&P->y, b, ch, t0), P->y.dt, yb, nt, 1.0f);
            }
        }
        if (P->sout)
            for (c = 0; c < w; ++c)
                for (n = 0; n < N2; ++n) P->sout[((size_t)seg * P->D + c0 + c) * N2 + n] = xb[(size_t)c * N2 + n];
    }
}

/* Validates a selective scan (L tokens; step: L = 1, no cu_seqlens) into P. */
static attn_status attn__ssm_scan_check(const attn_ssm_desc *d, int step, attn_ssm_tensor u, attn_ssm_tensor delta,
                                        const float *A, attn_ssm_tensor Bm, attn_ssm_tensor Cm, attn_ssm_tensor z,
                                        attn_ssm_tensor y, attn__ssm_scan *P, size_t *ws_bytes) {
    attn_status s;
    int L, G, i;
    if ((s = attn__ssm_common(d, !step)) != ATTN_OK) return s;
    L = step ? 1 : d->len;
    if (d->d_state < 1) return ATTN_ERR_SSM_D_STATE;
    G = d->n_groups == 0 ? 1 : d->n_groups;
    if (G < 0 || d->dim % G != 0) return ATTN_ERR_SSM_GROUPS;
    if (d->bc_const != ATTN_SSM_BC_TOKEN && d->bc_const != ATTN_SSM_BC_CONST) return ATTN_ERR_SSM_BC_CONST;
    if (d->delta_softplus != 0 && d->delta_softplus != 1) return ATTN_ERR_SSM_SOFTPLUS;
    if (d->a_complex != 0 && d->a_complex != 1) return ATTN_ERR_SSM_A_COMPLEX;
    if (step && d->cu_seqlens) return ATTN_ERR_SSM_STEP_VARLEN;
    if (d->cu_seqlens) {
        if (d->varlen_batch < 1 || d->batch != 1) return ATTN_ERR_SSM_VARLEN_BATCH;
        if (d->cu_seqlens[0] != 0 || d->cu_seqlens[d->varlen_batch] != L) return ATTN_ERR_SSM_CU_SEQLENS;
        for (i = 0; i < d->varlen_batch; ++i)
            if (d->cu_seqlens[i + 1] < d->cu_seqlens[i]) return ATTN_ERR_SSM_CU_SEQLENS;
    } else if (d->varlen_batch != 0) return ATTN_ERR_SSM_VARLEN_BATCH;
    if (!u.data) return ATTN_ERR_SSM_NULL_U;
    if (!delta.data) return ATTN_ERR_SSM_NULL_DELTA;
    if (!A) return ATTN_ERR_SSM_NULL_A;
    if (!Bm.data) return ATTN_ERR_SSM_NULL_B;
    if (!Cm.data) return ATTN_ERR_SSM_NULL_C;
    if (!y.data) return ATTN_ERR_SSM_NULL_Y;
    memset(P, 0, sizeof *P);
    P->B = d->batch; P->D = d->dim; P->L = L; P->N = d->d_state; P->G = G; P->cg = d->dim / G;
    P->nblk = (int)(((long long)P->cg + ATTN__SSM_W - 1) / ATTN__SSM_W);   /* cg may be INT_MAX */
    if ((size_t)P->B * (size_t)P->G * (size_t)P->nblk > (size_t)INT_MAX / 2 ||
        (size_t)2 * P->B * (size_t)P->G * (size_t)P->N > (size_t)INT_MAX)
        return ATTN_ERR_SSM_OVERFLOW;                          /* task counts are ints */
    P->bc_const = d->bc_const; P->softplus = d->delta_softplus;
    P->cu = step ? NULL : d->cu_seqlens;
    P->S = P->cu ? d->varlen_batch : d->batch;
    if ((s = attn__ssm_view(u, P->B, P->D, L, 0, &P->u)) != ATTN_OK) return s;
    if ((s = attn__ssm_view(delta, P->B, P->D, L, 0, &P->dl)) != ATTN_OK) return s;
    if (z.data && (s = attn__ssm_view(z, P->B, P->D, L, 0, &P->z)) != ATTN_OK) return s;
    P->cplx = d->a_complex;
    if (P->cplx && L > INT_MAX / 2) return ATTN_ERR_SSM_OVERFLOW;    /* B, C rows of 2 L floats */
    if (P->bc_const) {
        attn_ssm_tensor b2 = Bm, c2 = Cm;          /* [dim, N] (complex: [dim, 2N]): one "batch" */
        const int nr = P->N * (1 + P->cplx);
        b2.stride_batch = 0; c2.stride_batch = 0;
        if ((s = attn__ssm_view(b2, 1, P->D, nr, 0, &P->Bm)) != ATTN_OK) return s;
        if ((s = attn__ssm_view(c2, 1, P->D, nr, 0, &P->Cm)) != ATTN_OK) return s;
    } else {                                       /* complex: (re, im) of token l at 2l, 2l + 1 */
        if ((s = attn__ssm_view(Bm, P->B, G * P->N, L * (1 + P->cplx), 0, &P->Bm)) != ATTN_OK) return s;
        if ((s = attn__ssm_view(Cm, P->B, G * P->N, L * (1 + P->cplx), 0, &P->Cm)) != ATTN_OK) return s;
    }
    if ((s = attn__ssm_view(y, P->B, P->D, L, 1, &P->y)) != ATTN_OK) return s;
    P->has_z = z.data != NULL;
    P->A = A;
    P->ws_floats = attn__ssm_scan_floats(P->N);
    if (!(*ws_bytes = attn__ssm_ws_bytes(attn__ssm_threads(d), P->ws_floats))) return ATTN_ERR_SSM_OVERFLOW;
    return ATTN_OK;
}

/* The memory rule for the selective scan, its step (sin == sout: the state, in place) and its
   backward (g: the gradients are the outputs, P->y holds dy, an input). Before any write. */
static attn_status attn__ssm_scan_overlap(const attn__ssm_scan *P, const float *d_skip, const float *dbias,
                                          const float *sin, float *sout, const attn_ssm_grads *g) {
    attn__ovl o;
    const size_t DN = (size_t)P->D * (size_t)P->N * (size_t)(1 + P->cplx), BDL = (size_t)P->B * P->D * (size_t)P->L;
    attn__ovl_init(&o);
    if (!attn__ovl_state(&o, sin, sout, (size_t)P->S * DN)) return ATTN_ERR_SSM_STATE_ALIAS;
    attn__ovl_ssm(&o, 0, &P->u); attn__ovl_ssm(&o, 0, &P->dl); attn__ovl_ssm(&o, 0, &P->z);
    attn__ovl_ssm(&o, 0, &P->Bm); attn__ovl_ssm(&o, 0, &P->Cm); attn__ovl_ssm(&o, !g, &P->y);
    attn__ovl_mem(&o, 0, P->A, DN, sizeof(float));
    attn__ovl_mem(&o, 0, d_skip, (size_t)P->D, sizeof(float));
    attn__ovl_mem(&o, 0, dbias, (size_t)P->D, sizeof(float));
    if (g) {                                   /* dense fp32, shapes as attn_ssm_grads documents */
        const size_t nbc = (size_t)(1 + P->cplx) * (P->bc_const ? (size_t)P->D * P->N : (size_t)P->B * P->G * (size_t)P->N * P->L);
        attn__ovl_mem(&o, 1, g->du, BDL, sizeof(float));
        attn__ovl_mem(&o, 1, g->ddelta, BDL, sizeof(float));
        if (P->has_z) attn__ovl_mem(&o, 1, g->dz, BDL, sizeof(float));
        attn__ovl_mem(&o, 1, g->dA, DN, sizeof(float));
        attn__ovl_mem(&o, 1, g->dB, nbc, sizeof(float));
        attn__ovl_mem(&o, 1, g->dC, nbc, sizeof(float));
        attn__ovl_mem(&o, 1, g->dD, (size_t)P->D, sizeof(float));
        attn__ovl_mem(&o, 1, g->ddelta_bias, (size_t)P->D, sizeof(float));
    }
    return attn__ovl_bad(&o) ? (g ? ATTN_ERR_SSM_BWD_OVERLAP : ATTN_ERR_SSM_OVERLAP) : ATTN_OK;
}

/* below this many state updates (batch x dim x d_state x len: a decoding step of a small or
   mid-sized model) a call runs on one thread: waking threads costs more than the work */
#define ATTN__SSM_SMALL (1 << 17)

static attn_status attn__ssm_scan_run(const attn_ssm_desc *d, attn__ssm_scan *P, size_t bytes) {
    attn__ws w;
    attn_desc pd;
    attn_status s;
    const int nt = (double)P->B * P->D * P->N * P->L < (double)ATTN__SSM_SMALL ? 1 : attn__ssm_threads(d);
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    memset(&pd, 0, sizeof pd);
    pd.parallel = d->parallel; pd.parallel_user = d->parallel_user;
    P->V = attn__vec();
    P->ws = (float *)(void *)w.base;
    attn__parallel_for(&pd, (P->cu ? 1 : P->B) * P->G * P->nblk, nt, P->cplx ? attn__ssm_cscan_task : attn__ssm_scan_task, P);
    attn__ws_release(&w);
    return ATTN_OK;
}

ATTNDEF attn_status attn_ssm_selective_scan(const attn_ssm_desc *desc, attn_ssm_tensor u, attn_ssm_tensor delta,
                                            const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                            const float *d_skip, attn_ssm_tensor z, const float *delta_bias,
                                            const float *state_in, attn_ssm_tensor y, float *state_out) {
    attn__ssm_scan P;
    size_t bytes;
    attn_status s = attn__ssm_scan_check(desc, 0, u, delta, A, B, C, z, y, &P, &bytes);
    if (s != ATTN_OK) return s;
    if ((s = attn__ssm_scan_overlap(&P, d_skip, delta_bias, state_in, state_out, NULL)) != ATTN_OK) return s;
    P.Dk = d_skip; P.dbias = delta_bias; P.sin = state_in; P.sout = state_out;
    return attn__ssm_scan_run(desc, &P, bytes);
}

ATTNDEF attn_status attn_ssm_selective_step(const attn_ssm_desc *desc, attn_ssm_tensor x, attn_ssm_tensor dt,
                                            const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                            const float *d_skip, attn_ssm_tensor z, const float *dt_bias,
                                            float *state, attn_ssm_tensor y) {
    attn__ssm_scan P;
    size_t bytes;
    attn_status s = attn__ssm_scan_check(desc, 1, x, dt, A, B, C, z, y, &P, &bytes);
    if (s != ATTN_OK) return s;
    if (!state) return ATTN_ERR_SSM_NULL_STATE;
    if ((s = attn__ssm_scan_overlap(&P, d_skip, dt_bias, state, state, NULL)) != ATTN_OK) return s;
    P.Dk = d_skip; P.dbias = dt_bias; P.sin = state; P.sout = state;
    return attn__ssm_scan_run(desc, &P, bytes);
}

/* ---- selective scan backward ---- */
typedef struct attn__ssm_bwd {
    attn__ssm_scan F;            /* the forward's problem (y = dy) */
    const attn_ssm_grads *g;
    float *part;                 /* token B/C: [2][G nblk][B][N][L] partial dB, dC per block */
    size_t thread_floats;
} attn__ssm_bwd;

/* per-thread scratch of the backward, in floats (Q = 2 with complex A, else 1: N becomes Q N
   floats per state): the piece's sums in double ((3 Q N + 2) x 16), the kernel's scratch, the
   checkpoints [ceil(L / BT)][Q N][16], dLoss/dx [Q N][16], the chunk's sums ((3 Q N + 2) x 16),
   constant B, C rows [2][W][Q N], converted rows (u, delta, z, dy: 16 x BT each; B, C: N x Q BT
   each), a zero row and a scratch row */
static size_t attn__ssm_bwd_floats(int N, int L, int cplx) {
    const size_t T = ATTN__SSM_BT, nck = ((size_t)L + T - 1) / T, QN = (size_t)N * (1 + (cplx != 0));
    const size_t R = ATTN__MAX(QN, T), nv = (3 * QN + 2) * 16;
    return attn__ssm_round(2 * nv) + attn__ssm_round(cplx ? attn__ssm_cbk_floats(N) : attn__ssm_bk_floats(N)) +
           attn__ssm_round(nck * QN * 16) + attn__ssm_round(QN * 16) + attn__ssm_round(nv) +
           attn__ssm_round((size_t)2 * ATTN__SSM_W * QN) + 64 * T + attn__ssm_round(QN * T * 2) + attn__ssm_round(R) * 2;
}

/* workspace bytes of the backward (0 on overflow): per-thread scratch + the dB/dC partials */
static size_t attn__ssm_bwd_bytes(const attn_ssm_desc *d, int G) {
    const int cg = d->dim / G, nblk = (int)(((long long)cg + ATTN__SSM_W - 1) / ATTN__SSM_W);   /* cg may be INT_MAX */
    const int cplx = d->a_complex == 1;
    size_t part = 0, thr, bytes;
    if ((double)d->d_state * ((double)d->len + ATTN__SSM_BT) * 16.0 * 8.0 > (double)SIZE_MAX / 4) return 0;
    if (d->bc_const == ATTN_SSM_BC_TOKEN &&
        (!attn__mul_size((size_t)2 * G * nblk, (size_t)d->batch, &part) || !attn__mul_size(part, (size_t)d->d_state, &part) ||
         !attn__mul_size(part, (size_t)d->len * (size_t)(1 + cplx), &part)))
        return 0;
    if (!attn__mul_size(attn__ssm_bwd_floats(d->d_state, d->len, cplx), (size_t)attn__ssm_threads(d), &thr) ||
        !attn__add_size(thr, part, &bytes) || bytes > (SIZE_MAX - ATTN__ALIGN) / sizeof(float))
        return 0;
    return bytes * sizeof(float) + ATTN__ALIGN;
}

/* One channel block of ATTN__SSM_W (in group g) over every sequence: per 16-channel piece and
   sequence, a checkpoint pass (ssm_bwd phase 0: the state every ATTN__SSM_BT tokens), then
   the chunks last first (phase 1: recompute, gradients, dLoss/dx carried back). The chunk sums
   of dA, constant dB / dC, dD and ddelta_bias go into per-lane doubles in a fixed order
   (sequences, then chunks backwards); per-token dB / dC are summed over the block's pieces in
   piece order into the block's partial rows. */
static void attn__ssm_bwd_task(void *ctx, int task, int thread) {
    const attn__ssm_bwd *W = (const attn__ssm_bwd *)ctx;
    const attn__ssm_scan *P = &W->F;
    const attn_ssm_grads *G = W->g;
    const attn__isa *V = P->V;
    const int N = P->N, Q = 1 + P->cplx, QN = Q * N, T = ATTN__SSM_BT, L = P->L, nck = (L + T - 1) / T;
    const int R = (int)attn__ssm_round((size_t)ATTN__MAX(QN, T));
    const int g = task / P->nblk, blk = task % P->nblk;
    const int c0 = g * P->cg + blk * ATTN__SSM_W, w = ATTN__MIN(ATTN__SSM_W, P->cg - blk * ATTN__SSM_W);
    const size_t nv = (3 * (size_t)QN + 2) * 16, N16 = (size_t)QN * 16;
    const size_t kfl = P->cplx ? attn__ssm_cbk_floats(N) : attn__ssm_bk_floats(N);
    float *f = P->ws + W->thread_floats * (size_t)thread;
    double *dd = (double *)(void *)f;
    float *ks = f + attn__ssm_round(2 * nv), *ck = ks + attn__ssm_round(kfl);
    float *grv = ck + attn__ssm_round((size_t)nck * N16), *acc = grv + attn__ssm_round(N16);
    float *bcv = acc + attn__ssm_round(nv), *stg = bcv + attn__ssm_round((size_t)2 * ATTN__SSM_W * QN);
    float *bb = stg + 64 * T, *cb = bb + (size_t)QN * T;
    float *zero = bb + attn__ssm_round((size_t)QN * T * 2), *dump = zero + R;
    void (*kern)(const attn__ssm_bk *) = P->cplx ? V->ssm_cbwd : V->ssm_bwd;
    attn__ssm_bk k;
    int c, n, s0, b, kk;
    size_t i;
    memset(zero, 0, sizeof(float) * (size_t)R);
    memset(ks, 0, sizeof(float) * kfl);
    memset(&k, 0, sizeof k);
    k.N = N; k.softplus = P->softplus; k.has_z = P->has_z; k.bc_const = P->bc_const;
    k.scratch = ks; k.gr = grv; k.acc = acc;
    if (P->bc_const)
        for (c = 0; c < w; ++c) {
            V->load(attn__ssm_at(&P->Bm, 0, c0 + c, 0), P->Bm.dt, bcv + (size_t)c * QN, QN, 1.0f);
            V->load(attn__ssm_at(&P->Cm, 0, c0 + c, 0), P->Cm.dt, bcv + (size_t)(ATTN__SSM_W + c) * QN, QN, 1.0f);
        }
    for (s0 = 0; s0 < w; s0 += 16) {                     /* the block's 16-channel pieces, in order */
        const int ws16 = ATTN__MIN(16, w - s0), cs = c0 + s0;
        for (i = 0; i < nv; ++i) dd[i] = 0.0;
        for (c = 0; c < 16; ++c) {
            const int in = c < ws16;
            k.A[c] = in ? P->A + (size_t)(cs + c) * QN : zero;
            k.Bc[c] = in ? bcv + (size_t)(s0 + c) * QN : zero;
            k.Cc[c] = in ? bcv + (size_t)(ATTN__SSM_W + s0 + c) * QN : zero;
            k.bias[c] = in && P->dbias ? P->dbias[cs + c] : 0.0f;
            k.dsk[c] = in && P->Dk ? P->Dk[cs + c] : 0.0f;
        }
        k.padd = s0 > 0;
        for (b = 0; b < P->B; ++b) {
            for (n = 0; n < QN; ++n)                     /* the state before token 0, lanes = channels */
                for (c = 0; c < 16; ++c)
                    ck[(size_t)n * 16 + c] = c < ws16 && P->sin ? P->sin[((size_t)b * P->D + cs + c) * QN + n] : 0.0f;
            for (i = 0; i < N16; ++i) grv[i] = 0.0f;
            for (kk = 0; kk < 2 * nck - 1; ++kk) {       /* checkpoints forward, then the chunks backwards */
                const int fwd = kk < nck - 1, ch = fwd ? kk : 2 * nck - 2 - kk, t0 = ch * T, nt = ATTN__MIN(T, L - t0);
                k.nt = nt; k.phase = !fwd;
                attn__ssm_rows(V, &P->u, b, cs, ws16, t0, nt, stg, T, zero, k.u);
                attn__ssm_rows(V, &P->dl, b, cs, ws16, t0, nt, stg + 16 * T, T, zero, k.dl);
                if (!P->bc_const) {                      /* complex: token j's (re, im) at 2j, 2j + 1 */
                    if (P->Bm.dt == ATTN_F32 && P->Cm.dt == ATTN_F32 && P->Bm.sc == P->Cm.sc) {
                        k.Bt = (const float *)attn__ssm_at(&P->Bm, b, g * N, Q * t0);
                        k.Ct = (const float *)attn__ssm_at(&P->Cm, b, g * N, Q * t0);
                        k.ldb = P->Bm.sc;
                    } else {
                        for (n = 0; n < N; ++n) {
                            V->load(attn__ssm_at(&P->Bm, b, g * N + n, Q * t0), P->Bm.dt, bb + (size_t)n * Q * T, Q * nt, 1.0f);
                            if (!fwd) V->load(attn__ssm_at(&P->Cm, b, g * N + n, Q * t0), P->Cm.dt, cb + (size_t)n * Q * T, Q * nt, 1.0f);
                        }
                        k.Bt = bb; k.Ct = cb; k.ldb = Q * T;
                    }
                }
                if (fwd) {
                    memcpy(ck + (size_t)(ch + 1) * N16, ck + (size_t)ch * N16, sizeof(float) * N16);
                    k.x = ck + (size_t)(ch + 1) * N16;
                    kern(&k);
                    continue;
                }
                k.x = ck + (size_t)ch * N16;
                if (P->has_z) attn__ssm_rows(V, &P->z, b, cs, ws16, t0, nt, stg + 32 * T, T, zero, k.z);
                attn__ssm_rows(V, &P->y, b, cs, ws16, t0, nt, stg + 48 * T, T, zero, k.dy);
                for (c = 0; c < 16; ++c) {
                    const size_t o = ((size_t)b * P->D + cs + c) * L + t0;
                    const int in = c < ws16;
                    k.du[c] = in && G->du ? G->du + o : dump;
                    k.ddt[c] = in && G->ddelta ? G->ddelta + o : dump;
                    k.dz[c] = in && G->dz ? G->dz + o : dump;
                }
                if (!P->bc_const) {
                    const size_t pr = (((size_t)task * P->B + b) * N) * Q * L + (size_t)Q * t0;
                    const size_t pw = (size_t)P->G * P->nblk * P->B * N * Q * L;
                    k.pB = W->part + pr;                 /* both always: the reduction skips a NULL one */
                    k.pC = W->part + pw + pr;
                    k.ldp = (ptrdiff_t)Q * L;
                }
                kern(&k);
                for (i = 0; i < nv; ++i) {            /* dA; constant dB, dC (else skipped); dD, ddelta_bias */
                    if (i == N16 && !P->bc_const) i = 3 * N16;
                    dd[i] += (double)acc[i];
                }
            }
        }
        for (c = 0; c < ws16; ++c) {
            const int chn = cs + c;
            for (n = 0; n < QN; ++n) {
                if (G->dA) G->dA[(size_t)chn * QN + n] = (float)dd[(size_t)n * 16 + c];
                if (P->bc_const && G->dB) G->dB[(size_t)chn * QN + n] = (float)dd[(size_t)(QN + n) * 16 + c];
                if (P->bc_const && G->dC) G->dC[(size_t)chn * QN + n] = (float)dd[(size_t)(2 * QN + n) * 16 + c];
            }
            if (G->dD) G->dD[chn] = (float)dd[(size_t)3 * QN * 16 + c];
            if (G->ddelta_bias) G->ddelta_bias[chn] = (float)dd[(size_t)3 * QN * 16 + 16 + c];
        }
    }
}

/* dB / dC rows of per-token B, C: the blocks' partials summed in block order */
static void attn__ssm_bwd_reduce(void *ctx, int task, int thread) {
    const attn__ssm_bwd *W = (const attn__ssm_bwd *)ctx;
    const attn__ssm_scan *P = &W->F;
    const int which = task / (P->B * P->G * P->N), rest = task % (P->B * P->G * P->N);
    const int b = rest / (P->G * P->N), g = (rest / P->N) % P->G, n = rest % P->N;
    const size_t QL = (size_t)P->L * (size_t)(1 + P->cplx);     /* complex: (re, im) per token */
    float *out = (which ? W->g->dC : W->g->dB) + (((size_t)b * P->G + g) * P->N + n) * QL;
    size_t l;
    int blk;
    (void)thread;
    if (!(which ? W->g->dC : W->g->dB)) return;
    for (blk = 0; blk < P->nblk; ++blk) {
        const float *pp = W->part + ((((size_t)which * P->G * P->nblk + (size_t)g * P->nblk + blk) * P->B + b) * P->N + n) * QL;
        if (blk == 0) memcpy(out, pp, sizeof(float) * QL);
        else for (l = 0; l < QL; ++l) out[l] += pp[l];
    }
}

ATTNDEF attn_status attn_ssm_selective_scan_backward(const attn_ssm_desc *desc, attn_ssm_tensor u, attn_ssm_tensor delta,
                                                     const float *A, attn_ssm_tensor B, attn_ssm_tensor C,
                                                     const float *d_skip, attn_ssm_tensor z, const float *delta_bias,
                                                     const float *state_in, attn_ssm_tensor dy, const attn_ssm_grads *grads) {
    attn__ssm_bwd W;
    attn__ws w;
    attn_desc pd;
    attn_status s;
    size_t bytes, thr;
    int nt;
    if (desc && desc->cu_seqlens) return ATTN_ERR_SSM_BWD_VARLEN;
    if (!dy.data) return ATTN_ERR_SSM_NULL_DY;
    if ((s = attn__ssm_scan_check(desc, 0, u, delta, A, B, C, z, dy, &W.F, &bytes)) != ATTN_OK)
        return s == ATTN_ERR_SSM_Y_BROADCAST ? ATTN_ERR_SSM_DY_BROADCAST : s;   /* dy sits in y's place */
    if (!grads) return ATTN_ERR_SSM_NULL_GRADS;
    if ((s = attn__ssm_scan_overlap(&W.F, d_skip, delta_bias, state_in, NULL, grads)) != ATTN_OK) return s;
    W.g = grads;
    W.F.Dk = d_skip; W.F.dbias = delta_bias; W.F.sin = state_in;
    nt = attn__ssm_threads(desc);
    W.thread_floats = attn__ssm_bwd_floats(W.F.N, W.F.L, W.F.cplx);
    thr = W.thread_floats * (size_t)nt;
    if (!(bytes = attn__ssm_bwd_bytes(desc, W.F.G))) return ATTN_ERR_SSM_OVERFLOW;
    if ((s = attn__ws_acquire(desc->workspace, desc->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    memset(&pd, 0, sizeof pd);
    pd.parallel = desc->parallel; pd.parallel_user = desc->parallel_user;
    W.F.ws = (float *)(void *)w.base;
    W.F.V = attn__vec();
    W.part = W.F.ws + thr;
    attn__parallel_for(&pd, W.F.G * W.F.nblk, nt, attn__ssm_bwd_task, &W);
    if (!W.F.bc_const) attn__parallel_for(&pd, 2 * W.F.B * W.F.G * W.F.N, nt, attn__ssm_bwd_reduce, &W);
    attn__ws_release(&w);
    return ATTN_OK;
}

/* ---- the causal depthwise conv1d ---- */
typedef struct attn__ssm_conv {
    const attn__isa *V;
    int B, D, L, K, act;
    attn__ssm_tv x, out;
    const float *w, *bias, *sin;
    float *sout;
    float *ws;
    size_t ws_floats;
} attn__ssm_conv;

#define ATTN__SSM_CONV_CH 16    /* channels per conv1d task */
static size_t attn__ssm_conv_floats(int K) { return attn__ssm_round((size_t)ATTN__SSM_CONV_T * 3 + (size_t)K); }

static void attn__ssm_conv_task(void *ctx, int task, int thread) {
    const attn__ssm_conv *P = (const attn__ssm_conv *)ctx;
    const attn__isa *V = P->V;
    const int K = P->K, nblk = (P->D + ATTN__SSM_CONV_CH - 1) / ATTN__SSM_CONV_CH;
    const int b = task / nblk, c0 = (task % nblk) * ATTN__SSM_CONV_CH, c1 = ATTN__MIN(P->D, c0 + ATTN__SSM_CONV_CH);
    float *xp = P->ws + P->ws_floats * (size_t)thread;   /* [K-1 history | chunk] */
    float *o = xp + ATTN__SSM_CONV_T + K, *e = o + ATTN__SSM_CONV_T;
    int c, k, t, t0;
    if (P->L == 1) {                           /* one token (the step): the block's channels at once */
        const int n = c1 - c0;
        for (c = 0; c < n; ++c) V->load(attn__ssm_at(&P->x, b, c0 + c, 0), P->x.dt, e + c, 1, 1.0f);
        for (c = 0; c < n; ++c) {
            const float *wc = P->w + (size_t)(c0 + c) * K;
            const size_t hist = ((size_t)b * P->D + c0 + c) * (size_t)(K - 1);
            float a = P->bias ? P->bias[c0 + c] : 0.0f;
            for (k = 0; k < K - 1; ++k) a += wc[k] * (P->sin ? P->sin[hist + k] : 0.0f);
            o[c] = a + wc[K - 1] * e[c];
        }
        if (P->act == ATTN_SSM_CONV_SILU) {    /* o / (1 + e^-o) */
            for (c = 0; c < n; ++c) xp[c] = -o[c];
            V->exp_sum(xp, xp, 0.0f, n);
            for (c = 0; c < n; ++c) o[c] = o[c] < ATTN__SILU_ZERO ? -0.0f : o[c] / (1.0f + xp[c]);   /* the exp clamps */
        }
        for (c = 0; c < n; ++c) {
            const size_t hist = ((size_t)b * P->D + c0 + c) * (size_t)(K - 1);
            V->store(attn__ssm_at(&P->out, b, c0 + c, 0), P->out.dt, o + c, 1, 1.0f);
            if (P->sout) {                      /* the last K-1 inputs (state_out may be state_in) */
                for (k = 0; k + 1 < K - 1; ++k) P->sout[hist + k] = P->sin ? P->sin[hist + k + 1] : 0.0f;
                if (K > 1) P->sout[hist + K - 2] = e[c];
            }
        }
        return;
    }
    for (c = c0; c < c1; ++c) {
        const float *wc = P->w + (size_t)c * K, bias = P->bias ? P->bias[c] : 0.0f;
        const size_t hist = ((size_t)b * P->D + c) * (size_t)(K - 1);
        for (k = 0; k < K - 1; ++k) xp[k] = P->sin ? P->sin[hist + k] : 0.0f;
        for (t0 = 0; t0 < P->L; t0 += ATTN__SSM_CONV_T) {
            const int nt = ATTN__MIN(ATTN__SSM_CONV_T, P->L - t0);
            V->load(attn__ssm_at(&P->x, b, c, t0), P->x.dt, xp + K - 1, nt, 1.0f);
            for (t = 0; t < nt; ++t) o[t] = bias;
            for (k = 0; k < K; ++k) V->axpy(o, wc[k], xp + k, nt);
            if (P->act == ATTN_SSM_CONV_SILU) {                  /* o / (1 + e^-o) */
                for (t = 0; t < nt; ++t) e[t] = -o[t];
                V->exp_sum(e, e, 0.0f, nt);
                for (t = 0; t < nt; ++t) o[t] = o[t] < ATTN__SILU_ZERO ? -0.0f : o[t] / (1.0f + e[t]);   /* the exp clamps */
            }
            V->store(attn__ssm_at(&P->out, b, c, t0), P->out.dt, o, nt, 1.0f);
            memmove(xp, xp + nt, sizeof(float) * (size_t)(K - 1));   /* the last K-1 inputs */
        }
        if (P->sout)
            for (k = 0; k < K - 1; ++k) P->sout[hist + k] = xp[k];
    }
}

static attn_status attn__ssm_conv_check(const attn_ssm_desc *d, int step, attn_ssm_tensor x, const float *weight,
                                        attn_ssm_tensor out, attn__ssm_conv *P, size_t *ws_bytes) {
    attn_status s;
    if ((s = attn__ssm_common(d, !step)) != ATTN_OK) return s;
    if (d->conv_kernel < 0) return ATTN_ERR_SSM_CONV_KERNEL;
    if (d->conv_act != ATTN_SSM_CONV_SILU && d->conv_act != ATTN_SSM_CONV_NONE) return ATTN_ERR_SSM_CONV_ACT;
    if (d->cu_seqlens) return ATTN_ERR_SSM_CONV_VARLEN;
    if (!x.data) return ATTN_ERR_SSM_NULL_U;
    if (!weight) return ATTN_ERR_SSM_NULL_WEIGHT;
    if (!out.data) return ATTN_ERR_SSM_NULL_Y;
    memset(P, 0, sizeof *P);
    P->B = d->batch; P->D = d->dim; P->L = step ? 1 : d->len;
    P->K = d->conv_kernel ? d->conv_kernel : 4;
    P->act = d->conv_act;
    if (P->K > (1 << 20)) return ATTN_ERR_SSM_CONV_KERNEL;
    if ((size_t)P->B * (size_t)((P->D + ATTN__SSM_CONV_CH - 1) / ATTN__SSM_CONV_CH) > (size_t)INT_MAX) return ATTN_ERR_SSM_OVERFLOW;
    if ((s = attn__ssm_view(x, P->B, P->D, P->L, 0, &P->x)) != ATTN_OK) return s;
    if ((s = attn__ssm_view(out, P->B, P->D, P->L, 1, &P->out)) != ATTN_OK) return s;
    P->w = weight;
    P->ws_floats = attn__ssm_conv_floats(P->K);
    if (!(*ws_bytes = attn__ssm_ws_bytes(attn__ssm_threads(d), P->ws_floats))) return ATTN_ERR_SSM_OVERFLOW;
    return ATTN_OK;
}

/* The memory rule for the conv1d and its step (sin == sout: the state, in place). */
static attn_status attn__ssm_conv_overlap(const attn__ssm_conv *P, const float *bias, const float *sin, float *sout) {
    attn__ovl o;
    attn__ovl_init(&o);
    if (!attn__ovl_state(&o, sin, sout, (size_t)P->B * P->D * (size_t)(P->K - 1))) return ATTN_ERR_SSM_STATE_ALIAS;
    attn__ovl_ssm(&o, 0, &P->x); attn__ovl_ssm(&o, 1, &P->out);
    attn__ovl_mem(&o, 0, P->w, (size_t)P->D * (size_t)P->K, sizeof(float));
    attn__ovl_mem(&o, 0, bias, (size_t)P->D, sizeof(float));
    return attn__ovl_bad(&o) ? ATTN_ERR_SSM_OVERLAP : ATTN_OK;
}

static attn_status attn__ssm_conv_run(const attn_ssm_desc *d, attn__ssm_conv *P, size_t bytes) {
    attn__ws w;
    attn_desc pd;
    attn_status s;
    if ((s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    memset(&pd, 0, sizeof pd);
    pd.parallel = d->parallel; pd.parallel_user = d->parallel_user;
    P->V = attn__vec();
    P->ws = (float *)(void *)w.base;
    attn__parallel_for(&pd, P->B * ((P->D + ATTN__SSM_CONV_CH - 1) / ATTN__SSM_CONV_CH),   /* small calls: 1 thread */
                       (double)P->B * P->D * P->L * P->K < (double)ATTN__SSM_SMALL ? 1 : attn__ssm_threads(d), attn__ssm_conv_task, P);
    attn__ws_release(&w);
    return ATTN_OK;
}

ATTNDEF attn_status attn_ssm_conv1d(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                    const float *bias, const float *state_in, attn_ssm_tensor out,
                                    float *state_out) {
    attn__ssm_conv P;
    size_t bytes;
    attn_status s = attn__ssm_conv_check(desc, 0, x, weight, out, &P, &bytes);
    if (s != ATTN_OK) return s;
    if ((s = attn__ssm_conv_overlap(&P, bias, state_in, state_out)) != ATTN_OK) return s;
    P.bias = bias; P.sin = state_in; P.sout = state_out;
    return attn__ssm_conv_run(desc, &P, bytes);
}

ATTNDEF attn_status attn_ssm_conv1d_step(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                         const float *bias, float *state, attn_ssm_tensor out) {
    attn__ssm_conv P;
    size_t bytes;
    attn_status s = attn__ssm_conv_check(desc, 1, x, weight, out, &P, &bytes);
    if (s != ATTN_OK) return s;
    if (!state && P.K > 1) return ATTN_ERR_SSM_NULL_STATE;
    if ((s = attn__ssm_conv_overlap(&P, bias, state, state)) != ATTN_OK) return s;
    P.bias = bias; P.sin = state; P.sout = state;
    return attn__ssm_conv_run(desc, &P, bytes);
}

/* ---- the conv1d's backward ---- */
typedef struct attn__ssm_convb {
    attn__ssm_conv F;            /* the forward's problem (out = dout) */
    float *dx, *dw, *db;
} attn__ssm_convb;

/* per-thread scratch: the inputs with their K-1 history [K-1 + T], dLoss/d(pre-activation) of
   the chunk and the K-1 tokens after it [T + K-1], the pre-activation and e^-o [T] each, the
   channel's dweight / dbias sums in double [K + 1] */
static size_t attn__ssm_convb_floats(int K) {
    return attn__ssm_round((size_t)ATTN__SSM_CONV_T * 4 + 2 * (size_t)K) + attn__ssm_round(2 * ((size_t)K + 1));
}

/* One block of ATTN__SSM_CONV_CH channels over every sequence: per channel and sequence the
   chunks last first; the chunk's pre-activation o is recomputed (the forward's arithmetic),
   go = dout silu'(o), dx[t] = sum_k w[k] go[t + K-1-k] (go of the next chunk's first K-1 tokens
   carried), dw[k] += go . x[t - (K-1) + k], dbias += sum go: per chunk in float, then into
   doubles in a fixed order (sequences, chunks backwards). */
static void attn__ssm_convb_task(void *ctx, int task, int thread) {
    const attn__ssm_convb *W = (const attn__ssm_convb *)ctx;
    const attn__ssm_conv *P = &W->F;
    const attn__isa *V = P->V;
    const int K = P->K, T = ATTN__SSM_CONV_T, L = P->L, nck = (L + T - 1) / T;
    const int c0 = task * ATTN__SSM_CONV_CH, c1 = ATTN__MIN(P->D, c0 + ATTN__SSM_CONV_CH);
    float *f = P->ws + P->ws_floats * (size_t)thread;
    float *xp = f, *go = xp + T + K, *o = go + T + K, *e = o + T;            /* xp [K-1 | chunk], go [chunk | K-1] */
    double *dd = (double *)(void *)(f + attn__ssm_round((size_t)T * 4 + 2 * (size_t)K));   /* [K] dw, [1] dbias */
    int c, b, k, t, ch;
    for (c = c0; c < c1; ++c) {
        const float *wc = P->w + (size_t)c * K, bias = P->bias ? P->bias[c] : 0.0f;
        for (k = 0; k <= K; ++k) dd[k] = 0.0;
        for (b = 0; b < P->B; ++b) {
            const size_t hist = ((size_t)b * P->D + c) * (size_t)(K - 1);
            float *dxr = W->dx ? W->dx + ((size_t)b * P->D + c) * (size_t)L : NULL;
            for (k = 0; k < K - 1; ++k) go[T + k] = 0.0f;               /* past the last token */
            for (ch = nck - 1; ch >= 0; --ch) {
                const int t0 = ch * T, nt = ATTN__MIN(T, L - t0);
                float *tail = go + nt;
                if (nt < T) memmove(tail, go + T, sizeof(float) * (size_t)(K - 1));
                for (k = 0; k < K - 1; ++k) {                           /* the K-1 inputs before t0 */
                    const int pos = t0 - (K - 1) + k;
                    if (pos >= 0) V->load(attn__ssm_at(&P->x, b, c, pos), P->x.dt, xp + k, 1, 1.0f);
                    else xp[k] = P->sin ? P->sin[hist + (size_t)(K - 1 + pos)] : 0.0f;
                }
                V->load(attn__ssm_at(&P->x, b, c, t0), P->x.dt, xp + K - 1, nt, 1.0f);
                V->load(attn__ssm_at(&P->out, b, c, t0), P->out.dt, go, nt, 1.0f);   /* dout */
                if (P->act == ATTN_SSM_CONV_SILU) {                     /* go = dout silu'(o) */
                    for (t = 0; t < nt; ++t) o[t] = bias;
                    for (k = 0; k < K; ++k) V->axpy(o, wc[k], xp + k, nt);
                    for (t = 0; t < nt; ++t) e[t] = -o[t];
                    V->exp_sum(e, e, 0.0f, nt);
                    for (t = 0; t < nt; ++t) {                          /* s (1 + o (1 - s)), s = 1 / (1 + e^-o) */
                        const float s = 1.0f / (1.0f + e[t]);
                        go[t] = o[t] < ATTN__SILU_ZERO ? 0.0f : go[t] * (s * (1.0f + o[t] * (1.0f - s)));
                    }
                }
                if (dxr) {
                    float *dr = dxr + t0;
                    for (t = 0; t < nt; ++t) dr[t] = 0.0f;
                    for (k = 0; k < K; ++k) V->axpy(dr, wc[k], go + (K - 1 - k), nt);
                }
                for (k = 0; k < K; ++k) dd[k] += (double)V->dot(go, xp + k, nt);
                { float s = 0.0f; for (t = 0; t < nt; ++t) s += go[t]; dd[K] += (double)s; }
                memmove(go + T, go, sizeof(float) * (size_t)(K - 1));  /* the carry for the chunk before */
            }
        }
        if (W->dw) for (k = 0; k < K; ++k) W->dw[(size_t)c * K + k] = (float)dd[k];
        if (W->db) W->db[c] = (float)dd[K];
    }
}

ATTNDEF attn_status attn_ssm_conv1d_backward(const attn_ssm_desc *desc, attn_ssm_tensor x, const float *weight,
                                             const float *bias, const float *state_in, attn_ssm_tensor dout,
                                             float *dx, float *dweight, float *dbias) {
    attn__ssm_convb W;
    attn__ovl o;
    attn__ws w;
    attn_desc pd;
    attn_status s;
    size_t bytes, BDL;
    if (!dout.data) return ATTN_ERR_SSM_NULL_DY;
    if ((s = attn__ssm_conv_check(desc, 0, x, weight, dout, &W.F, &bytes)) != ATTN_OK)
        return s == ATTN_ERR_SSM_Y_BROADCAST ? ATTN_ERR_SSM_DY_BROADCAST : s;   /* dout sits in out's place */
    BDL = (size_t)W.F.B * W.F.D * (size_t)W.F.L;
    attn__ovl_init(&o);
    attn__ovl_ssm(&o, 0, &W.F.x); attn__ovl_ssm(&o, 0, &W.F.out);
    attn__ovl_mem(&o, 0, weight, (size_t)W.F.D * (size_t)W.F.K, sizeof(float));
    attn__ovl_mem(&o, 0, bias, (size_t)W.F.D, sizeof(float));
    attn__ovl_mem(&o, 0, state_in, (size_t)W.F.B * W.F.D * (size_t)(W.F.K - 1), sizeof(float));
    attn__ovl_mem(&o, 1, dx, BDL, sizeof(float));
    attn__ovl_mem(&o, 1, dweight, (size_t)W.F.D * (size_t)W.F.K, sizeof(float));
    attn__ovl_mem(&o, 1, dbias, (size_t)W.F.D, sizeof(float));
    if (attn__ovl_bad(&o)) return ATTN_ERR_SSM_BWD_OVERLAP;
    W.F.ws_floats = attn__ssm_convb_floats(W.F.K);
    if (!(bytes = attn__ssm_ws_bytes(attn__ssm_threads(desc), W.F.ws_floats))) return ATTN_ERR_SSM_OVERFLOW;
    if ((s = attn__ws_acquire(desc->workspace, desc->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    W.F.bias = bias; W.F.sin = state_in;
    W.dx = dx; W.dw = dweight; W.db = dbias;
    memset(&pd, 0, sizeof pd);
    pd.parallel = desc->parallel; pd.parallel_user = desc->parallel_user;
    W.F.V = attn__vec();
    W.F.ws = (float *)(void *)w.base;
    attn__parallel_for(&pd, (W.F.D + ATTN__SSM_CONV_CH - 1) / ATTN__SSM_CONV_CH,
                       (double)BDL * W.F.K < (double)ATTN__SSM_SMALL ? 1 : attn__ssm_threads(desc), attn__ssm_convb_task, &W);
    attn__ws_release(&w);
    return ATTN_OK;
}

/* ---- S4D ---- */
#define ATTN__S4D_T 64          /* tokens per chunk: direct convolution inside, state across */

typedef struct attn__s4d {
    const attn__isa *V;
    int B, D, L, N, disc;
    const attn_s4d_params *p;
    attn__ssm_tv u, y;
    const float *sin;
    float *sout, *K;            /* K: attn_ssm_s4d_kernel's output (then u/y are unused) */
    float *ws;
    size_t ws_floats;
} attn__s4d;

static size_t attn__s4d_floats(int N) {
    const size_t T = ATTN__S4D_T;
    return attn__ssm_round(T * 4 + T * 2 * (size_t)N + 2 * (size_t)N * 3);
}

/* channel h's discretisation, in double: dA, C dB (complex, re/im arrays of N) */
static void attn__s4d_disc(const attn__s4d *P, int h, int n, double *dar, double *dai, double *cbr, double *cbi,
                           double *dbr, double *dbi) {
    const attn_s4d_params *p = P->p;
    const size_t i = (size_t)h * P->N + n;
    const double dt = exp((double)p->log_dt[h]), ar = -exp((double)p->log_a_real[i]), ai = (double)p->a_imag[i];
    const double br = p->b_re ? (double)p->b_re[i] : 1.0, bi = p->b_re ? (double)p->b_im[i] : 0.0;
    double qr, qi, den;
    if (P->disc == ATTN_SSM_ZOH) {
        const double e = exp(dt * ar);
        *dar = e * cos(dt * ai); *dai = e * sin(dt * ai);
        den = ar * ar + ai * ai;                                /* q = (dA - 1) / A */
        qr = ((*dar - 1.0) * ar + *dai * ai) / den; qi = (*dai * ar - (*dar - 1.0) * ai) / den;
    } else {
        const double mr = 1.0 - dt * ar / 2, mi = -dt * ai / 2, pr = 1.0 + dt * ar / 2, pi = dt * ai / 2;
        den = mr * mr + mi * mi;                                /* dA = (1 + dtA/2) / (1 - dtA/2) */
        *dar = (pr * mr + pi * mi) / den; *dai = (pi * mr - pr * mi) / den;
        qr = dt * mr / den; qi = -dt * mi / den;                /* q = dt / (1 - dtA/2) */
    }
    *dbr = qr * br - qi * bi; *dbi = qr * bi + qi * br;
    { const double cr = (double)p->c_re[i], ci = (double)p->c_im[i]; *cbr = cr * *dbr - ci * *dbi; *cbi = cr * *dbi + ci * *dbr; }
}

static void attn__s4d_kernel_task(void *ctx, int h, int thread) {
    const attn__s4d *P = (const attn__s4d *)ctx;
    float *K = P->K + (size_t)h * P->L;
    int n, l;
    (void)thread;
    for (l = 0; l < P->L; ++l) K[l] = 0.0f;
    for (n = 0; n < P->N; ++n) {             /* K_l += 2 Re(C dB dA^l), powers by multiplication */
        double ar, ai, cr, ci, br, bi, pr = 1.0, pi = 0.0, t;
        attn__s4d_disc(P, h, n, &ar, &ai, &cr, &ci, &br, &bi);
        for (l = 0; l < P->L; ++l) {
            K[l] += (float)(2.0 * (cr * pr - ci * pi));
            t = pr * ar - pi * ai; pi = pr * ai + pi * ar; pr = t;
        }
    }
}

static void attn__s4d_task(void *ctx, int h, int thread) {
    const attn__s4d *P = (const attn__s4d *)ctx;
    const attn__isa *V = P->V;
    const int N = P->N, T = ATTN__S4D_T, Tk = ATTN__MIN(T, P->L);
    float *f = P->ws + P->ws_floats * (size_t)thread;
    float *Kr = f, *ub = Kr + T, *yb = ub + T, *G = yb + T, *xs = G + (size_t)T * 2 * N;   /* xs [2N] */
    float *da = xs + 2 * (size_t)N, *db = da + 2 * (size_t)N;                             /* [2N] each */
    const float dsk = P->p->d_skip ? P->p->d_skip[h] : 0.0f;
    int n, l, b, k;
    /* Krev[T-1-j] = K_j (j < Tk); G[l] = (2 Re(C dA^{l+1}), -2 Im(C dA^{l+1})) per mode */
    for (l = 0; l < T; ++l) Kr[l] = 0.0f;
    for (n = 0; n < N; ++n) {
        double ar, ai, cr, ci, br, bi, pr = 1.0, pi = 0.0, qr, qi, t;
        const double c_r = (double)P->p->c_re[(size_t)h * N + n], c_i = (double)P->p->c_im[(size_t)h * N + n];
        attn__s4d_disc(P, h, n, &ar, &ai, &cr, &ci, &br, &bi);
        da[2 * n] = (float)ar; da[2 * n + 1] = (float)ai; db[2 * n] = (float)br; db[2 * n + 1] = (float)bi;
        for (l = 0; l < Tk; ++l) {
            Kr[T - 1 - l] += (float)(2.0 * (cr * pr - ci * pi));
            t = pr * ar - pi * ai; pi = pr * ai + pi * ar; pr = t;            /* now dA^{l+1} */
            qr = c_r * pr - c_i * pi; qi = c_r * pi + c_i * pr;
            G[(size_t)l * 2 * N + 2 * n] = (float)(2.0 * qr);
            G[(size_t)l * 2 * N + 2 * n + 1] = (float)(-2.0 * qi);
        }
    }
    for (b = 0; b < P->B; ++b) {
        const size_t so = ((size_t)b * P->D + h) * (size_t)N * 2;
        int t0;
        for (n = 0; n < 2 * N; ++n) xs[n] = P->sin ? P->sin[so + n] : 0.0f;
        for (t0 = 0; t0 < P->L; t0 += T) {
            const int nt = ATTN__MIN(T, P->L - t0);
            V->load(attn__ssm_at(&P->u, b, h, t0), P->u.dt, ub, nt, 1.0f);
            for (l = 0; l < nt; ++l)                 /* chunk-local convolution + carried state */
                yb[l] = V->dot(Kr + T - 1 - l, ub, l + 1) + V->dot(G + (size_t)l * 2 * N, xs, 2 * N) + dsk * ub[l];
            V->store(attn__ssm_at(&P->y, b, h, t0), P->y.dt, yb, nt, 1.0f);
            for (k = 0; k < nt; ++k)                 /* the state after the chunk: x = dA x + dB u */
                for (n = 0; n < N; ++n) {
                    const float xr = xs[2 * n], xi = xs[2 * n + 1], uk = ub[k];
                    xs[2 * n] = da[2 * n] * xr - da[2 * n + 1] * xi + db[2 * n] * uk;
                    xs[2 * n + 1] = da[2 * n] * xi + da[2 * n + 1] * xr + db[2 * n + 1] * uk;
                }
        }
        if (P->sout)
            for (n = 0; n < 2 * N; ++n) P->sout[so + n] = xs[n];
    }
}

static attn_status attn__s4d_check(const attn_ssm_desc *d, int step, int kernel, const attn_s4d_params *p, attn_ssm_tensor u,
                                   attn_ssm_tensor y, attn__s4d *P, size_t *ws_bytes) {
    attn_status s;
    if ((s = attn__ssm_common(d, !step)) != ATTN_OK) return s;
    if (d->d_state < 1) return ATTN_ERR_SSM_D_STATE;
    if (d->s4d_disc != ATTN_SSM_ZOH && d->s4d_disc != ATTN_SSM_BILINEAR) return ATTN_ERR_SSM_S4D_DISC;
    if (d->cu_seqlens) return ATTN_ERR_SSM_S4D_VARLEN;
    if (!p) return ATTN_ERR_SSM_NULL_PARAMS;
    if (!p->log_dt) return ATTN_ERR_SSM_S4D_NULL_DT;
    if (!p->log_a_real || !p->a_imag) return ATTN_ERR_SSM_S4D_NULL_A;
    if (!p->c_re || !p->c_im) return ATTN_ERR_SSM_S4D_NULL_C;
    if (!p->b_re != !p->b_im) return ATTN_ERR_SSM_S4D_B_PAIR;
    memset(P, 0, sizeof *P);
    P->B = d->batch; P->D = d->dim; P->L = step ? 1 : d->len; P->N = d->d_state; P->disc = d->s4d_disc; P->p = p;
    if (!kernel) {
        if (!u.data) return ATTN_ERR_SSM_NULL_U;
        if (!y.data) return ATTN_ERR_SSM_NULL_Y;
        if ((s = attn__ssm_view(u, P->B, P->D, P->L, 0, &P->u)) != ATTN_OK) return s;
        if ((s = attn__ssm_view(y, P->B, P->D, P->L, 1, &P->y)) != ATTN_OK) return s;
    }
    P->ws_floats = attn__s4d_floats(P->N);
    if (!(*ws_bytes = attn__ssm_ws_bytes(attn__ssm_threads(d), P->ws_floats))) return ATTN_ERR_SSM_OVERFLOW;
    return ATTN_OK;
}

/* The memory rule for S4D, its step (sin == sout: the state, in place) and its kernel (P->K
   the output, u and y absent). */
static attn_status attn__s4d_overlap(const attn__s4d *P, const float *sin, float *sout) {
    const attn_s4d_params *p = P->p;
    const size_t D = (size_t)P->D, DN = D * (size_t)P->N;
    attn__ovl o;
    attn__ovl_init(&o);
    if (!attn__ovl_state(&o, sin, sout, (size_t)P->B * DN * 2)) return ATTN_ERR_SSM_STATE_ALIAS;
    attn__ovl_ssm(&o, 0, &P->u); attn__ovl_ssm(&o, 1, &P->y);
    attn__ovl_mem(&o, 1, P->K, D * (size_t)P->L, sizeof(float));
    attn__ovl_mem(&o, 0, p->log_dt, D, sizeof(float));
    attn__ovl_mem(&o, 0, p->d_skip, D, sizeof(float));
    attn__ovl_mem(&o, 0, p->log_a_real, DN, sizeof(float));
    attn__ovl_mem(&o, 0, p->a_imag, DN, sizeof(float));
    attn__ovl_mem(&o, 0, p->b_re, DN, sizeof(float));
    attn__ovl_mem(&o, 0, p->b_im, DN, sizeof(float));
    attn__ovl_mem(&o, 0, p->c_re, DN, sizeof(float));
    attn__ovl_mem(&o, 0, p->c_im, DN, sizeof(float));
    return attn__ovl_bad(&o) ? ATTN_ERR_SSM_OVERLAP : ATTN_OK;
}

static attn_status attn__s4d_run(const attn_ssm_desc *d, attn__s4d *P, size_t bytes, attn_task_fn task) {
    attn__ws w;
    attn_desc pd;
    attn_status s;
    w.owned = NULL; w.base = NULL;
    if (task == attn__s4d_task &&
        (s = attn__ws_acquire(d->workspace, d->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    memset(&pd, 0, sizeof pd);
    pd.parallel = d->parallel; pd.parallel_user = d->parallel_user;
    P->V = attn__vec();
    P->ws = (float *)(void *)w.base;
    attn__parallel_for(&pd, P->D, attn__ssm_threads(d), task, P);
    attn__ws_release(&w);
    return ATTN_OK;
}

ATTNDEF attn_status attn_ssm_s4d_kernel(const attn_ssm_desc *desc, const attn_s4d_params *params, float *K) {
    attn__s4d P;
    attn_ssm_tensor none;
    size_t bytes, n;
    attn_status s;
    memset(&none, 0, sizeof none);
    if ((s = attn__s4d_check(desc, 0, 1, params, none, none, &P, &bytes)) != ATTN_OK) return s;
    if (!K) return ATTN_ERR_SSM_NULL_K;
    if (!attn__mul_size((size_t)P.D, (size_t)P.L, &n) || n > (size_t)PTRDIFF_MAX / sizeof(float)) return ATTN_ERR_SSM_OVERFLOW;
    P.K = K;
    if ((s = attn__s4d_overlap(&P, NULL, NULL)) != ATTN_OK) return s;
    return attn__s4d_run(desc, &P, 0, attn__s4d_kernel_task);
}

ATTNDEF attn_status attn_ssm_s4d(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                 const float *state_in, attn_ssm_tensor y, float *state_out) {
    attn__s4d P;
    size_t bytes;
    attn_status s = attn__s4d_check(desc, 0, 0, params, u, y, &P, &bytes);
    if (s != ATTN_OK) return s;
    if ((s = attn__s4d_overlap(&P, state_in, state_out)) != ATTN_OK) return s;
    P.sin = state_in; P.sout = state_out;
    return attn__s4d_run(desc, &P, bytes, attn__s4d_task);
}

ATTNDEF attn_status attn_ssm_s4d_step(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                      float *state, attn_ssm_tensor y) {
    attn__s4d P;
    size_t bytes;
    attn_status s = attn__s4d_check(desc, 1, 0, params, u, y, &P, &bytes);
    if (s != ATTN_OK) return s;
    if (!state) return ATTN_ERR_SSM_NULL_STATE;
    if ((s = attn__s4d_overlap(&P, state, state)) != ATTN_OK) return s;
    P.sin = state; P.sout = state;
    return attn__s4d_run(desc, &P, bytes, attn__s4d_task);
}

/* ---- S4D backward ---- */
#define ATTN__S4D_BT 256        /* tokens per backward chunk (the checkpoint interval) */

typedef struct attn__s4db {
    attn__s4d F;                 /* the forward's problem (y = dy) */
    const attn_s4d_grads *g;
    size_t ck_floats;            /* per-thread checkpoint floats: ceil(L / BT) 2N */
} attn__s4db;

/* per-thread scratch in floats: the sums of the parameters' gradients in double (7 N + 1), 16
   rows of N (dA re, im, -im, dB re, im, 2 C re, -2 C im, g re, im, two temporaries and five
   chunk sums), the chunk's states [BT + 1][2N], u and dy [BT] each, the checkpoints */
static size_t attn__s4db_floats(int N, int L) {
    const size_t T = ATTN__S4D_BT, nck = ((size_t)L + T - 1) / T;
    return attn__ssm_round(2 * (7 * (size_t)N + 1)) + attn__ssm_round((size_t)N) * 16 +
           attn__ssm_round((T + 1) * 2 * (size_t)N) + 2 * T + attn__ssm_round(nck * 2 * (size_t)N);
}

/* x' = dA x + dB u on split (re | im) rows of N */
static void attn__s4db_step(const attn__isa *V, const float *ar, const float *ai, const float *nai, const float *br,
                            const float *bi, int N, const float *x, float u, float *xo) {
    V->madd(xo, ar, x, u, br, N);                  /* ar xr + u br - ai xi */
    V->madd(xo, nai, x + N, 1.0f, xo, N);
    V->madd(xo + N, ar, x + N, u, bi, N);          /* ar xi + u bi + ai xr */
    V->madd(xo + N, ai, x, 1.0f, xo + N, N);
}

/* One channel over every sequence: the recurrence's adjoint (x_l = dA x_{l-1} + dB u_l,
   y_l = 2 Re(C x_l) + D u_l), the modes in the vector layer's rows. Per sequence a checkpoint
   pass (the state every BT tokens), then the chunks last first: recompute the states, then the
   tokens backwards with g = dLoss/dx_l carried:
     g += 2 dy conj(C);  dC += 2 dy conj(x_l);  d(dA) += g conj(x_{l-1});  d(dB) += u g;
     du = Re(g conj(dB)) + D dy;  g = conj(dA) g
   chunk sums in float, added into doubles in a fixed order; then the chain rule through the
   discretisation (double) to log_dt, log_a_real, a_imag, B and C. */
static void attn__s4db_task(void *ctx, int h, int thread) {
    const attn__s4db *W = (const attn__s4db *)ctx;
    const attn__s4d *P = &W->F;
    const attn_s4d_grads *G = W->g;
    const attn_s4d_params *p = P->p;
    const attn__isa *V = P->V;
    const int N = P->N, T = ATTN__S4D_BT, L = P->L, nck = (L + T - 1) / T;
    const size_t RN = attn__ssm_round((size_t)N);
    float *f = P->ws + P->ws_floats * (size_t)thread;
    double *dd = (double *)(void *)f;           /* [7][N] dA re, im, dB re, im, C re, im, -; [1] D */
    float *r0 = f + attn__ssm_round(2 * (7 * (size_t)N + 1));
    float *ar = r0, *ai = ar + RN, *nai = ai + RN, *br = nai + RN, *bi = br + RN, *c2r = bi + RN, *c2i = c2r + RN;
    float *gr = c2i + RN, *gi = gr + RN, *t1 = gi + RN, *t2 = t1 + RN;
    float *sAr = t2 + RN, *sAi = sAr + RN, *sAn = sAi + RN, *sBr = sAn + RN, *sBi = sBr + RN;
    float *xs = r0 + RN * 16, *ub = xs + attn__ssm_round((size_t)(T + 1) * 2 * N), *yb = ub + T, *ck = yb + T;
    const float dsk = p->d_skip ? p->d_skip[h] : 0.0f;
    int n, b, ch, j;
    for (n = 0; n < N; ++n) {
        double dar, dai, cbr, cbi, dbr, dbi;
        attn__s4d_disc(P, h, n, &dar, &dai, &cbr, &cbi, &dbr, &dbi);
        ar[n] = (float)dar; ai[n] = (float)dai; nai[n] = -(float)dai; br[n] = (float)dbr; bi[n] = (float)dbi;
        c2r[n] = 2.0f * p->c_re[(size_t)h * N + n]; c2i[n] = -2.0f * p->c_im[(size_t)h * N + n];
    }
    for (n = 0; n < 7 * N + 1; ++n) dd[n] = 0.0;
    for (b = 0; b < P->B; ++b) {
        const size_t so = ((size_t)b * P->D + h) * (size_t)N * 2;
        float *dur = G->du ? G->du + ((size_t)b * P->D + h) * (size_t)L : NULL;
        for (n = 0; n < N; ++n) {               /* the state before token 0: (re | im) rows */
            ck[n] = P->sin ? P->sin[so + 2 * n] : 0.0f;
            ck[N + n] = P->sin ? P->sin[so + 2 * n + 1] : 0.0f;
        }
        for (ch = 0; ch + 1 < nck; ++ch) {      /* checkpoints: the state before each chunk */
            float *x = ck + (size_t)ch * 2 * N;
            V->load(attn__ssm_at(&P->u, b, h, ch * T), P->u.dt, ub, T, 1.0f);
            memcpy(xs, x, sizeof(float) * 2 * (size_t)N);
            for (j = 0; j < T; ++j)
                attn__s4db_step(V, ar, ai, nai, br, bi, N, xs + (size_t)(j & 1) * 2 * N, ub[j], xs + (size_t)((j + 1) & 1) * 2 * N);
            memcpy(x + 2 * N, xs + (size_t)(T & 1) * 2 * N, sizeof(float) * 2 * (size_t)N);
        }
        for (n = 0; n < N; ++n) { gr[n] = 0.0f; gi[n] = 0.0f; }
        for (ch = nck - 1; ch >= 0; --ch) {
            const int t0 = ch * T, nt = ATTN__MIN(T, L - t0);
            V->load(attn__ssm_at(&P->u, b, h, t0), P->u.dt, ub, nt, 1.0f);
            V->load(attn__ssm_at(&P->y, b, h, t0), P->y.dt, yb, nt, 1.0f);
            memcpy(xs, ck + (size_t)ch * 2 * N, sizeof(float) * 2 * (size_t)N);
            for (j = 0; j < nt; ++j)            /* xs[j + 1] = x after token t0 + j */
                attn__s4db_step(V, ar, ai, nai, br, bi, N, xs + (size_t)j * 2 * N, ub[j], xs + (size_t)(j + 1) * 2 * N);
            for (n = 0; n < N; ++n) { sAr[n] = 0.0f; sAi[n] = 0.0f; sAn[n] = 0.0f; sBr[n] = 0.0f; sBi[n] = 0.0f; t1[n] = 0.0f; t2[n] = 0.0f; }
            for (j = nt - 1; j >= 0; --j) {
                const float dy = yb[j], *xp = xs + (size_t)j * 2 * N;
                V->axpy(gr, dy, c2r, N);                            /* g += 2 dy conj(C) */
                V->axpy(gi, dy, c2i, N);
                V->madd(sAr, gr, xp, 1.0f, sAr, N);                    /* d(dA) += g conj(x_{l-1}) */
                V->madd(sAr, gi, xp + N, 1.0f, sAr, N);
                V->madd(sAi, gi, xp, 1.0f, sAi, N);
                V->madd(sAn, gr, xp + N, 1.0f, sAn, N);
                V->axpy(sBr, ub[j], gr, N);                         /* d(dB) += u g */
                V->axpy(sBi, ub[j], gi, N);
                if (dur) dur[t0 + j] = V->dot(gr, br, N) + V->dot(gi, bi, N) + dsk * dy;
                V->madd(t1, ai, gi, 0.0f, gi, N);                      /* g = conj(dA) g */
                V->madd(t1, ar, gr, 1.0f, t1, N);
                V->madd(t2, nai, gr, 0.0f, gr, N);
                V->madd(gi, ar, gi, 1.0f, t2, N);
                memcpy(gr, t1, sizeof(float) * (size_t)N);
            }
            for (n = 0; n < N; ++n) {           /* dC = sum 2 dy conj(x_l): one dot per mode over the chunk */
                double cr = 0.0, ci = 0.0;
                for (j = 0; j < nt; ++j) { cr += (double)(yb[j] * xs[(size_t)(j + 1) * 2 * N + n]); ci += (double)(yb[j] * xs[(size_t)(j + 1) * 2 * N + N + n]); }
                dd[4 * N + n] += 2.0 * cr; dd[5 * N + n] -= 2.0 * ci;
                dd[n] += (double)sAr[n]; dd[N + n] += (double)sAi[n] - (double)sAn[n];
                dd[2 * N + n] += (double)sBr[n]; dd[3 * N + n] += (double)sBi[n];
            }
            dd[7 * N] += (double)V->dot(yb, ub, nt);
        }
    }
    {   /* the chain rule through the discretisation, per mode in double */
        const double dt = exp((double)p->log_dt[h]);
        double ddt = 0.0;
        for (n = 0; n < N; ++n) {
            const size_t i = (size_t)h * N + n;
            const double Ar = -exp((double)p->log_a_real[i]), Ai = (double)p->a_imag[i];
            const double Br = p->b_re ? (double)p->b_re[i] : 1.0, Bi = p->b_re ? (double)p->b_im[i] : 0.0;
            const double gar = dd[n], gai = dd[N + n], gbr = dd[2 * N + n], gbi = dd[3 * N + n];
            double gAr, gAi, gBr, gBi;
            if (P->disc == ATTN_SSM_ZOH) {
                const double e = exp(dt * Ar), Er = e * cos(dt * Ai), Ei = e * sin(dt * Ai), den = Ar * Ar + Ai * Ai;
                const double qr = ((Er - 1.0) * Ar + Ei * Ai) / den, qi = (Ei * Ar - (Er - 1.0) * Ai) / den;   /* (E - 1) / A */
                const double gqr = Br * gbr + Bi * gbi, gqi = Br * gbi - Bi * gbr;                                 /* conj(B) g_dB */
                /* dq/dA = (dt E A - (E - 1)) / A^2 = (dt E - q) / A */
                const double nr = dt * Er - qr, ni = dt * Ei - qi, pr = (nr * Ar + ni * Ai) / den, pi = (ni * Ar - nr * Ai) / den;
                const double AEr = Ar * Er - Ai * Ei, AEi = Ar * Ei + Ai * Er;
                gAr = dt * (Er * gar + Ei * gai) + (pr * gqr + pi * gqi);     /* conj(dt E) g_dA + conj(dq/dA) g_q */
                gAi = dt * (Er * gai - Ei * gar) + (pr * gqi - pi * gqr);
                ddt += (gar * AEr + gai * AEi) + (gqr * Er + gqi * Ei);       /* Re(g_dA conj(A E)) + Re(g_q conj(E)) */
                gBr = qr * gbr + qi * gbi; gBi = qr * gbi - qi * gbr;         /* conj(q) g_dB */
            } else {
                const double mr = 1.0 - dt * Ar / 2, mi = -dt * Ai / 2, den = mr * mr + mi * mi;
                const double ir = mr / den, ii = -mi / den;                  /* 1 / m */
                const double i2r = ir * ir - ii * ii, i2i = 2 * ir * ii;     /* 1 / m^2 */
                const double wr = dt * (Br * i2r - Bi * i2i) / 2, wi = dt * (Br * i2i + Bi * i2r) / 2;   /* dt B / (2 m^2) */
                const double gsr = (i2r * gar + i2i * gai) + (wr * gbr + wi * gbi);   /* conj(1/m^2) g_dA + conj(w) g_dB */
                const double gsi = (i2r * gai - i2i * gar) + (wr * gbi - wi * gbr);
                const double Bmr = Br * ir - Bi * ii, Bmi = Br * ii + Bi * ir;        /* B / m */
                gAr = dt * gsr; gAi = dt * gsi;
                ddt += (gsr * Ar + gsi * Ai) + (gbr * Bmr + gbi * Bmi);
                gBr = dt * (ir * gbr + ii * gbi); gBi = dt * (ir * gbi - ii * gbr);   /* conj(dt / m) g_dB */
            }
            if (G->dlog_a_real) G->dlog_a_real[i] = (float)(gAr * Ar);
            if (G->da_imag) G->da_imag[i] = (float)gAi;
            if (p->b_re && G->db_re) G->db_re[i] = (float)gBr;
            if (p->b_re && G->db_im) G->db_im[i] = (float)gBi;
            if (G->dc_re) G->dc_re[i] = (float)dd[4 * N + n];
            if (G->dc_im) G->dc_im[i] = (float)dd[5 * N + n];
        }
        if (G->dlog_dt) G->dlog_dt[h] = (float)(dt * ddt);
        if (G->dd_skip) G->dd_skip[h] = (float)dd[7 * N];
    }
}

ATTNDEF attn_status attn_ssm_s4d_backward(const attn_ssm_desc *desc, const attn_s4d_params *params, attn_ssm_tensor u,
                                          const float *state_in, attn_ssm_tensor dy, const attn_s4d_grads *grads) {
    attn__s4db W;
    attn__ovl o;
    attn__ws w;
    attn_desc pd;
    attn_status s;
    size_t bytes, DN;
    if (!dy.data) return ATTN_ERR_SSM_NULL_DY;
    if ((s = attn__s4d_check(desc, 0, 0, params, u, dy, &W.F, &bytes)) != ATTN_OK)
        return s == ATTN_ERR_SSM_Y_BROADCAST ? ATTN_ERR_SSM_DY_BROADCAST : s;   /* dy sits in y's place */
    if (!grads) return ATTN_ERR_SSM_NULL_GRADS;
    DN = (size_t)W.F.D * (size_t)W.F.N;
    attn__ovl_init(&o);
    attn__ovl_ssm(&o, 0, &W.F.u); attn__ovl_ssm(&o, 0, &W.F.y);
    attn__ovl_mem(&o, 0, state_in, (size_t)W.F.B * DN * 2, sizeof(float));
    attn__ovl_mem(&o, 0, params->log_dt, (size_t)W.F.D, sizeof(float));
    attn__ovl_mem(&o, 0, params->d_skip, (size_t)W.F.D, sizeof(float));
    attn__ovl_mem(&o, 0, params->log_a_real, DN, sizeof(float));
    attn__ovl_mem(&o, 0, params->a_imag, DN, sizeof(float));
    attn__ovl_mem(&o, 0, params->b_re, DN, sizeof(float));
    attn__ovl_mem(&o, 0, params->b_im, DN, sizeof(float));
    attn__ovl_mem(&o, 0, params->c_re, DN, sizeof(float));
    attn__ovl_mem(&o, 0, params->c_im, DN, sizeof(float));
    attn__ovl_mem(&o, 1, grads->du, (size_t)W.F.B * W.F.D * (size_t)W.F.L, sizeof(float));
    attn__ovl_mem(&o, 1, grads->dlog_dt, (size_t)W.F.D, sizeof(float));
    attn__ovl_mem(&o, 1, grads->dd_skip, (size_t)W.F.D, sizeof(float));
    attn__ovl_mem(&o, 1, grads->dlog_a_real, DN, sizeof(float));
    attn__ovl_mem(&o, 1, grads->da_imag, DN, sizeof(float));
    if (params->b_re) { attn__ovl_mem(&o, 1, grads->db_re, DN, sizeof(float)); attn__ovl_mem(&o, 1, grads->db_im, DN, sizeof(float)); }
    attn__ovl_mem(&o, 1, grads->dc_re, DN, sizeof(float));
    attn__ovl_mem(&o, 1, grads->dc_im, DN, sizeof(float));
    if (attn__ovl_bad(&o)) return ATTN_ERR_SSM_BWD_OVERLAP;
    if ((double)W.F.N * ((double)W.F.L + 2.0 * ATTN__S4D_BT) * 8.0 > (double)SIZE_MAX / 16) return ATTN_ERR_SSM_OVERFLOW;
    W.F.ws_floats = attn__s4db_floats(W.F.N, W.F.L);
    if (!(bytes = attn__ssm_ws_bytes(attn__ssm_threads(desc), W.F.ws_floats))) return ATTN_ERR_SSM_OVERFLOW;
    if ((s = attn__ws_acquire(desc->workspace, desc->workspace_size, bytes, ATTN_ERR_SSM_WORKSPACE, &w)) != ATTN_OK) return s;
    W.F.sin = state_in;
    W.g = grads;
    memset(&pd, 0, sizeof pd);
    pd.parallel = desc->parallel; pd.parallel_user = desc->parallel_user;
    W.F.V = attn__vec();
    W.F.ws = (float *)(void *)w.base;
    attn__parallel_for(&pd, W.F.D, attn__ssm_threads(desc), attn__s4db_task, &W);
    attn__ws_release(&w);
    return ATTN_OK;
}

ATTNDEF attn_status attn_ssm_workspace_size(const attn_ssm_desc *desc, attn_ssm_op op, size_t *bytes) {
    attn_status s;
    int K;
    size_t n;
    if (!bytes) return ATTN_ERR_SSM_NULL_RESULT;
    switch (op) {
    case ATTN_SSM_OP_SCAN: case ATTN_SSM_OP_STEP:
        if ((s = attn__ssm_common(desc, op == ATTN_SSM_OP_SCAN)) != ATTN_OK) return s;
        if (desc->d_state < 1) return ATTN_ERR_SSM_D_STATE;
        n = attn__ssm_ws_bytes(attn__ssm_threads(desc), attn__ssm_scan_floats(desc->d_state));
        break;
    case ATTN_SSM_OP_CONV: case ATTN_SSM_OP_CONV_STEP:
        if ((s = attn__ssm_common(desc, op == ATTN_SSM_OP_CONV)) != ATTN_OK) return s;
        if (desc->conv_kernel < 0 || desc->conv_kernel > (1 << 20)) return ATTN_ERR_SSM_CONV_KERNEL;
        K = desc->conv_kernel ? desc->conv_kernel : 4;
        n = attn__ssm_ws_bytes(attn__ssm_threads(desc), attn__ssm_conv_floats(K));
        break;
    case ATTN_SSM_OP_SCAN_BACKWARD:
        if ((s = attn__ssm_common(desc, 1)) != ATTN_OK) return s;
        if (desc->d_state < 1) return ATTN_ERR_SSM_D_STATE;
        K = desc->n_groups == 0 ? 1 : desc->n_groups;
        if (K < 0 || desc->dim % K != 0) return ATTN_ERR_SSM_GROUPS;
        if (desc->a_complex != 0 && desc->a_complex != 1) return ATTN_ERR_SSM_A_COMPLEX;
        n = attn__ssm_bwd_bytes(desc, K);
        break;
    case ATTN_SSM_OP_CONV_BACKWARD:
        if ((s = attn__ssm_common(desc, 1)) != ATTN_OK) return s;
        if (desc->conv_kernel < 0 || desc->conv_kernel > (1 << 20)) return ATTN_ERR_SSM_CONV_KERNEL;
        n = attn__ssm_ws_bytes(attn__ssm_threads(desc), attn__ssm_convb_floats(desc->conv_kernel ? desc->conv_kernel : 4));
        break;
    case ATTN_SSM_OP_S4D_BACKWARD:
        if ((s = attn__ssm_common(desc, 1)) != ATTN_OK) return s;
        if (desc->d_state < 1) return ATTN_ERR_SSM_D_STATE;
        if ((double)desc->d_state * ((double)desc->len + 2.0 * ATTN__S4D_BT) * 8.0 > (double)SIZE_MAX / 16) return ATTN_ERR_SSM_OVERFLOW;
        n = attn__ssm_ws_bytes(attn__ssm_threads(desc), attn__s4db_floats(desc->d_state, desc->len));
        break;
    case ATTN_SSM_OP_S4D: case ATTN_SSM_OP_S4D_STEP:
        if ((s = attn__ssm_common(desc, op == ATTN_SSM_OP_S4D)) != ATTN_OK) return s;
        if (desc->d_state < 1) return ATTN_ERR_SSM_D_STATE;
        n = attn__ssm_ws_bytes(attn__ssm_threads(desc), attn__s4d_floats(desc->d_state));
        break;
    default: return ATTN_ERR_SSM_OP;
    }
    if (!n) return ATTN_ERR_SSM_OVERFLOW;
    *bytes = n;
    return ATTN_OK;
}

/* ---------------------------------------------------------------------------------------
   3.17 the mechanism table and the public entry points that dispatch through it
   --------------------------------------------------------------------------------------- */
static const attn__mech attn__mech_softmax = {
    attn__softmax_forward, attn__softmax_backward, attn__softmax_decode, NULL, NULL
};

/* The kind's entry, or NULL for a value that is not a kind. */
static const attn__mech *attn__mech_of(attn_kind kind) {
    switch (kind) {
#define ATTN__KIND_CASE(name, value, id, text) case name: return &attn__mech_##id;
    ATTN__KIND_LIST(ATTN__KIND_CASE)
#undef ATTN__KIND_CASE
    case ATTN_KIND_END: default: return NULL;
    }
}

ATTNDEF const char *attn_kind_name(attn_kind kind) {
    switch (kind) {
#define ATTN__KIND_TEXT(name, value, id, text) case name: return text;
    ATTN__KIND_LIST(ATTN__KIND_TEXT)
#undef ATTN__KIND_TEXT
    case ATTN_KIND_END: default: return "unknown attn_kind";
    }
}

/* The memory rule of attn_tensor for every kind, before the kind's operation runs (so before
   any write): outputs' rows do not overlap, and no output's span meets an input's or another
   output's. Tensors that fail the basic checks, outputs whose shape is not the one the
   operation needs or that broadcast, are skipped: the operation reports those faults first. */
static int attn__same_shape(const attn_tensor *a, int batch, int seq, int heads, int dim) {
    return a->batch == batch && a->seq == seq && a->heads == heads && a->dim == dim && !attn__tensor_bcast(a);
}
static attn_status attn__check_overlap(attn__op op, const attn__call *c) {
    attn__ovl o;
    attn__view ov;
    attn__span sp;
    const attn_status err = op == ATTN__BACKWARD ? ATTN_ERR_BWD_OVERLAP : ATTN_ERR_OUT_OVERLAP;
    if (c->bytes || op == ATTN__STATE_SIZE) return ATTN_OK;
    attn__ovl_init(&o);
    if (op == ATTN__DECODE) {                  /* q of the cache's batch, heads and dim (the cache's own
                                                  checks, O(pages), stay in the operation) */
        if (!c->cache || !attn__shape_ok(&c->q) || c->cache->k.heads < 1 || c->q.batch != c->cache->batch ||
            c->q.dim != c->cache->k.dim || c->q.heads % c->cache->k.heads != 0)
            return ATTN_OK;
    } else {                                   /* the shared tensor contract holds */
        attn__view qv, kv, vv, xv;
        if (attn__check_qkv(&c->q, &c->k, &c->v, op != ATTN__BACKWARD ? &c->out : NULL, &qv, &kv, &vv, &xv) != ATTN_OK)
            return ATTN_OK;
        if (op == ATTN__BACKWARD &&            /* out and dout (inputs here) of the forward's shape */
            (c->out.batch != c->q.batch || c->out.seq != c->q.seq || c->out.heads != c->q.heads || c->out.dim != c->v.dim ||
             c->dout.batch != c->q.batch || c->dout.seq != c->q.seq || c->dout.heads != c->q.heads || c->dout.dim != c->v.dim))
            return ATTN_OK;
    }
    if (attn__tensor_span(&c->q, &sp, NULL)) attn__ovl_span(&o, 0, sp);
    if (op == ATTN__DECODE) {                  /* the cache's own views (pages: the whole pool) */
        if (attn__tensor_span(&c->cache->k, &sp, NULL)) attn__ovl_span(&o, 0, sp);
        if (attn__tensor_span(&c->cache->v, &sp, NULL)) attn__ovl_span(&o, 0, sp);
    } else {
        if (attn__tensor_span(&c->k, &sp, NULL)) attn__ovl_span(&o, 0, sp);
        if (attn__tensor_span(&c->v, &sp, NULL)) attn__ovl_span(&o, 0, sp);
    }
    if (op == ATTN__BACKWARD) {
        const attn_tensor *g[3], *like[3];
        int i;
        g[0] = &c->dq; g[1] = &c->dk; g[2] = &c->dv;
        if (attn__tensor_span(&c->out, &sp, NULL)) attn__ovl_span(&o, 0, sp);
        if (attn__tensor_span(&c->dout, &sp, NULL)) attn__ovl_span(&o, 0, sp);
        if (c->lse_in && attn__tensor_span(&c->q, &sp, NULL))   /* lse_in [B, Hq, Sq] floats */
            attn__ovl_mem(&o, 0, c->lse_in, (size_t)c->q.batch * (size_t)c->q.heads * (size_t)c->q.seq, sizeof(float));
        like[0] = &c->q; like[1] = &c->k; like[2] = &c->v;
        for (i = 0; i < 3; ++i)
            if (attn__same_shape(g[i], like[i]->batch, like[i]->seq, like[i]->heads, like[i]->dim) &&
                attn__tensor_span(g[i], &sp, &ov))
                attn__ovl_view(&o, 1, &ov);
    } else {
        const int dv = op == ATTN__DECODE ? c->cache->v.dim : c->v.dim;
        if (attn__same_shape(&c->out, c->q.batch, c->q.seq, c->q.heads, dv) && attn__tensor_span(&c->out, &sp, &ov))
            attn__ovl_view(&o, 1, &ov);
        if (c->lse && attn__tensor_span(&c->q, &sp, NULL))      /* lse [B, Hq, Sq] floats */
            attn__ovl_mem(&o, 1, c->lse, (size_t)c->q.batch * (size_t)c->q.heads * (size_t)c->q.seq, sizeof(float));
        if (op == ATTN__STEP && c->state)      /* the state is read and written: all its declared floats */
            attn__ovl_mem(&o, 1, c->state->data, c->state->size, sizeof(float));
    }
    return attn__ovl_bad(&o) ? err : ATTN_OK;
}

/* Runs desc->kind's operation op on the call. */
static attn_status attn__dispatch(attn__op op, attn__call *c) {
    const attn__mech *m;
    attn__op_fn fn = NULL;
    attn_status s;
    if (!c->d) return ATTN_ERR_NULL_DESC;
    if (!(m = attn__mech_of(c->d->kind))) return ATTN_ERR_KIND;
    switch (op) {
    case ATTN__FORWARD: fn = m->forward; break;
    case ATTN__BACKWARD: fn = m->backward; break;
    case ATTN__DECODE: fn = m->decode; break;
    case ATTN__STEP: fn = m->step; break;
    case ATTN__STATE_SIZE: fn = m->state_size; break;
    }
    if (!fn) return ATTN_ERR_KIND_OP;
    if ((s = attn__check_overlap(op, c)) != ATTN_OK) return s;
    return fn(c);
}

static void attn__call_init(attn__call *c, const attn_desc *desc, const attn_tensor *q, const attn_tensor *k,
                            const attn_tensor *v) {
    memset(c, 0, sizeof *c);
    c->d = desc; c->q = *q; c->k = *k; c->v = *v;
}

ATTNDEF attn_status attn_forward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                 attn_tensor out, float *lse) {
    attn__call c;
    attn__call_init(&c, desc, &q, &k, &v);
    c.out = out; c.lse = lse;
    return attn__dispatch(ATTN__FORWARD, &c);
}

ATTNDEF attn_status attn_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v, size_t *bytes) {
    attn__call c;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    attn__call_init(&c, desc, &q, &k, &v);
    c.bytes = bytes;
    return attn__dispatch(ATTN__FORWARD, &c);
}

ATTNDEF attn_status attn_backward(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                  attn_tensor out, attn_tensor dout, const float *lse,
                                  attn_tensor dq, attn_tensor dk, attn_tensor dv) {
    attn__call c;
    attn__call_init(&c, desc, &q, &k, &v);
    c.out = out; c.dout = dout; c.lse_in = lse; c.dq = dq; c.dk = dk; c.dv = dv;
    return attn__dispatch(ATTN__BACKWARD, &c);
}

ATTNDEF attn_status attn_backward_workspace_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                                 size_t *bytes) {
    attn__call c;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    attn__call_init(&c, desc, &q, &k, &v);
    c.bytes = bytes;
    return attn__dispatch(ATTN__BACKWARD, &c);
}

ATTNDEF attn_status attn_decode(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                attn_tensor out, float *lse) {
    attn__call c;
    attn__call_init(&c, desc, &q, &q, &q);
    c.out = out; c.lse = lse; c.cache = cache;
    return attn__dispatch(ATTN__DECODE, &c);
}

ATTNDEF attn_status attn_decode_workspace_size(const attn_desc *desc, attn_tensor q, const attn_kv_cache *cache,
                                               size_t *bytes) {
    attn__call c;
    if (!bytes) return ATTN_ERR_NULL_ARG;
    attn__call_init(&c, desc, &q, &q, &q);
    c.cache = cache; c.bytes = bytes;
    return attn__dispatch(ATTN__DECODE, &c);
}

ATTNDEF attn_status attn_state_size(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                    size_t *floats) {
    attn__call c;
    if (!floats) return ATTN_ERR_NULL_ARG;
    attn__call_init(&c, desc, &q, &k, &v);
    c.bytes = floats;
    return attn__dispatch(ATTN__STATE_SIZE, &c);
}

ATTNDEF attn_status attn_state_init(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                                    float *data, size_t floats, attn_state *state) {
    attn__call c;
    size_t need = 0;
    attn_status s;
    attn__call_init(&c, desc, &q, &k, &v);
    c.bytes = &need;
    if ((s = attn__dispatch(ATTN__STATE_SIZE, &c)) != ATTN_OK) return s;
    if (!state || !data) return ATTN_ERR_STATE_NULL;
    if (floats < need) return ATTN_ERR_STATE_SIZE;
    memset(data, 0, need * sizeof(float));     /* every kind's empty history is all zeros */
    state->data = data; state->size = floats; state->kind = desc->kind;
    state->batch = q.batch; state->heads = q.heads; state->dim_k = q.dim; state->dim_v = v.dim; state->heads_kv = k.heads;
    state->pos = 0; state->params = attn__state_params(desc);
    return ATTN_OK;
}

ATTNDEF attn_status attn_step(const attn_desc *desc, attn_tensor q, attn_tensor k, attn_tensor v,
                              attn_state *state, attn_tensor out) {
    attn__call c;
    attn__call_init(&c, desc, &q, &k, &v);
    c.out = out; c.state = state;
    return attn__dispatch(ATTN__STEP, &c);
}

#ifdef __cplusplus
}
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic pop
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
