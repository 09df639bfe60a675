/* train.c - a small character-level transformer trained from scratch in C.

   The attention layers are attn.h's (attn_layer_forward / attn_layer_backward); everything
   else is written here in plain C: token + position embeddings, pre-norm residual blocks
   (layer norm -> attention, layer norm -> GELU MLP), a final layer norm, the output projection,
   cross-entropy and AdamW. The matrix products go through attn_sgemm (the library's GEMM).
   The text is examples/data/sonnets.txt (Shakespeare's sonnets, public domain): the first 90%
   trains, the last 10% measures validation loss.

   The attention of every layer is chosen on the command line (--attn):
     standard   multi-head attention, Q K V projections           4 d^2 + 4 d parameters
     optimized  V = the input (no W_V)                              3 d^2 + 3 d
     efficient  K = V = the input (no W_K, W_V)                      2 d^2 + 2 d
     super      efficient + a learned c x c alignment of the values 2 d^2 + 2 d + c^2 + c
     direct     one learned c x c attention map, no Q and K         2 d^2 + 2 d + c^2
     window     standard, each token sees only the last 16 tokens
     sinks      window + the first 4 tokens always visible (StreamingLLM's attention sinks)
   (the layer kinds are documented with attn_layer_kind in attn.h; c = the context length).

   Usage:  build/train [--attn KIND] [--steps N] [--layers L] [--d D] [--heads H] [--ctx T]
                       [--batch B] [--lr LR] [--seed S] [--eval-every N] [--csv FILE]
                       [--sample N] [--data FILE]
           build/train --check      gradients of layer norm, MLP, cross-entropy and the whole
                                    model against finite differences (nonzero exit on failure)
           build/train --test       every attention kind, a tiny model, 30 steps: nonzero exit
                                    unless each one's loss falls
           build/train --tasks-check the synthetic tasks of examples/zoo_tasks.h (recall, selective
                                    copying, induction, ListOps) against independent checkers
           build/train --compare [--kinds a,b,..] [--out PREFIX]
                                    every kind (or those listed) for the same budget over 3 seeds
                                    (make train-compare): a table, PREFIX.csv and PREFIX.svg
                                    (default examples/train_compare)
           build/train --zoo [--quick] [--kinds a,b,..] [--tasks t,..] [--threads N] [--jobs N] [--out PREFIX]
                                    the zoo on tasks (make zoo-train; --quick in make test): every
                                    mechanism below as the token mixer of the same model, trained on
                                    each task of examples/zoo_tasks.h (mqar, selcopy, induction,
                                    listops) and on the sonnets; a table of quality (mean +- sd over
                                    seeds, paired against softmax), parameters, train / prefill /
                                    generation tokens/s and memory; PREFIX.md, .csv, .svg (default
                                    examples/zoo_train; --quick: build/zoo_train_quick). Exit 1 when a
                                    trained mechanism's loss does not fall on mqar.

   The zoo's other mechanisms (--zoo; --attn takes the causal ones): Q K V projections written
   here around attn_forward / attn_backward of the kind (kind_desc has their settings)
     longformer  a window of 8 keys back, dilation 1 or 2 by head, the first token global
     bigbird     blocks of 8, 1 random block (bidirectional: BigBird has no causal form)
     lsh         Reformer LSH, buckets of 8, 1 hash round (shared QK: one projection)
     routing     4 clusters, windows of 16 (shared QK; centroids by attn_routing_update each step)
     linear      elu + 1 features            cosformer    ReLU features, cos re-weighting
     performer   FAVOR+, 2 d_head fixed random features (seed 1)
     linformer   E, F [heads][c/4][c] trained with attn_backward's dE, dF (bidirectional)
     nystrom     8 landmarks (bidirectional)
   and three recurrent blocks written here around attn.h's scans and their exact backwards
   (E = 2 d, per layer; all causal):
     mamba  Mamba's block (Gu & Dao 2023; HF MambaMixer's slow path): in_proj d -> 2E (x, gate
            z; no bias), causal depthwise conv1d of 4 taps + SiLU on x (attn_ssm_conv1d), x_proj
            E -> R + 2N (R = ceil(d/16) for delta, B, C; no bias), dt_proj R -> E with bias
            (softplus inside the scan), attn_ssm_selective_scan with A = -exp(A_log) (A_log =
            log(1..N), S4D-real), D skip (1), y * SiLU(z), out_proj E -> d (no bias). N = 16.
            Init as HF: dt_proj's bias = softplus^-1(dt), dt log-uniform in [1e-3, 0.1].
     rwkv   RWKV-6 time mixing (Peng et al. 2024) on attn_rwkv6_forward, head size d / heads:
            token shift with a learned mix per channel and stream (x + (x_{t-1} - x) mu), r, k,
            v, g projections (no bias), the data-dependent decay w = exp(-exp(td + tanh(x_w A)
            B)) (a rank d/4 LoRA), bonus u, group norm per head (ln_x, eps 1e-5 where RWKV-6
            uses 6.4e-4), times SiLU(g), output projection. Not included: RWKV-6's data-
            dependent token-shift mix (the ddlerp LoRA; the mix here is static, RWKV-5's) and the
            channel-mixing half (the model's MLP stands in for it).
     s4d    S4D's block (Gu et al. 2022, s4d.py): per channel a diagonal LTI SSM of 16 complex
            modes, N = 32 (attn_ssm_s4d, ZOH, S4D-Lin init A = -0.5 + i pi n, B = 1 folded into
            C, dt log-uniform in [1e-3, 0.1]), D skip, GELU, output projection d -> 2d + GLU.
            The same filter for every input: the contrast with Mamba's selective scan.
   A kind whose attn_backward returns ATTN_ERR_KIND_OP is reported as "no backward yet" and
   trains by itself once the library has its backward. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "zoo_tasks.h"
#if !defined(_WIN32)
#include <sys/wait.h>   /* --zoo --jobs: forked workers */
#include <unistd.h>
#endif

/* ---- configuration ------------------------------------------------------------------------ */

typedef struct {
    int kind;                  /* index into kinds[] */
    int layers, d, heads, ctx, batch, steps, eval_every, eval_batches, sample, seed, quiet;
    int threads;               /* 0: all cores */
    int jobs;                  /* --zoo: worker processes */
    float lr, wd;
    const char *csv, *data;
    const char *compare_kinds, *out;   /* --compare, --zoo: comma-separated kinds (NULL: all), file prefix */
    const char *zoo_tasks;             /* --zoo: comma-separated tasks (NULL: all) */
} config;

/* How a kind's token mixer is built:
     P_LAYER  attn_layer_forward / _backward (the layer kinds; softmax with masks)
     P_KIND   Q K V projections written here around attn_forward / attn_backward of an attn_kind
              (shared-QK kinds project once and pass the result as q and k)
     P_BLOCK  a recurrent block written here around attn.h's scans (block: which one) */
enum { P_LAYER, P_KIND, P_BLOCK };
enum { B_MAMBA = 1, B_RWKV, B_S4D };

typedef struct {
    const char *name;
    int path;
    attn_layer_kind layer;
    int window, sinks;         /* window: tokens a query sees (itself included); 0 = all */
    attn_kind akind;           /* P_KIND: the mechanism */
    int causal;                /* 0: the kind has no causal form; runs bidirectionally */
    int block;                 /* P_BLOCK: B_MAMBA, B_RWKV or B_S4D */
} kind_info;

/* The first N_LAYER_KINDS are train.c's original kinds (--test, --compare); the rest are the
   zoo's other mechanisms (--zoo, --attn, --check). */
static const kind_info kinds[] = {
    { "standard", P_LAYER, ATTN_LAYER_STANDARD, 0, 0, ATTN_SOFTMAX, 1, 0 },
    { "optimized", P_LAYER, ATTN_LAYER_OPTIMIZED, 0, 0, ATTN_SOFTMAX, 1, 0 },
    { "efficient", P_LAYER, ATTN_LAYER_EFFICIENT, 0, 0, ATTN_SOFTMAX, 1, 0 },
    { "super", P_LAYER, ATTN_LAYER_SUPER, 0, 0, ATTN_SOFTMAX, 1, 0 },
    { "direct", P_LAYER, ATTN_LAYER_DIRECT, 0, 0, ATTN_SOFTMAX, 1, 0 },
    { "window", P_LAYER, ATTN_LAYER_STANDARD, 16, 0, ATTN_SOFTMAX, 1, 0 },
    { "sinks", P_LAYER, ATTN_LAYER_STANDARD, 16, 4, ATTN_SOFTMAX, 1, 0 },
    { "longformer", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_LONGFORMER, 1, 0 },
    { "bigbird", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_BIGBIRD, 0, 0 },
    { "lsh", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_LSH, 1, 0 },
    { "routing", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_ROUTING, 1, 0 },
    { "linear", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_LINEAR, 1, 0 },
    { "cosformer", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_COSFORMER, 1, 0 },
    { "performer", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_PERFORMER, 1, 0 },
    { "linformer", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_LINFORMER, 0, 0 },
    { "nystrom", P_KIND, ATTN_LAYER_STANDARD, 0, 0, ATTN_NYSTROM, 0, 0 },
    { "mamba", P_BLOCK, ATTN_LAYER_STANDARD, 0, 0, ATTN_SOFTMAX, 1, B_MAMBA },
    { "rwkv", P_BLOCK, ATTN_LAYER_STANDARD, 0, 0, ATTN_SOFTMAX, 1, B_RWKV },
    { "s4d", P_BLOCK, ATTN_LAYER_STANDARD, 0, 0, ATTN_SOFTMAX, 1, B_S4D },
};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))
#define N_LAYER_KINDS 7
#define SHARED_QK(ak) ((ak) == ATTN_LSH || (ak) == ATTN_ROUTING)   /* one projection for q and k */
#define HAS_LSE(ak) ((ak) == ATTN_LONGFORMER || (ak) == ATTN_BIGBIRD || (ak) == ATTN_LSH || (ak) == ATTN_LINFORMER)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* splitmix64: a small, good generator; one stream for weights, one for batches */
static unsigned long long next_u64(unsigned long long *s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double uniform(unsigned long long *s) { return ((next_u64(s) >> 11) + 0.5) / 9007199254740992.0; }
static float gauss(unsigned long long *s) {
    return (float)(sqrt(-2.0 * log(uniform(s))) * cos(6.283185307179586 * uniform(s)));
}

static int g_threads;   /* attn_sgemm's threads (0: all cores) */

static void die(const char *what, attn_status st) {
    fprintf(stderr, "%s: %s\n", what, attn_status_str(st));
    exit(2);
}

/* C = op(A) op(B) (+ C when acc): row-major, through the library's GEMM; mm_ld with explicit
   leading dimensions (a block of columns of a wider matrix) */
static void mm_ld(int ta, int tb, int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C,
                  int ldc, int acc) {
    attn_status st = attn_sgemm(ta, tb, m, n, k, 1.0f, A, lda, B, ldb, acc ? 1.0f : 0.0f, C, ldc, g_threads);
    if (st != ATTN_OK) die("attn_sgemm", st);
}
static void mm(int ta, int tb, int m, int n, int k, const float *A, const float *B, float *C, int acc) {
    mm_ld(ta, tb, m, n, k, A, ta ? m : k, B, tb ? k : n, C, n, acc);
}

/* ---- the pieces written here: layer norm, GELU MLP, cross-entropy --------------------------- */

/* y = (x - mean) / sqrt(var + 1e-5) * g + b over each row of d; keeps mean and 1/std */
static void layernorm_fwd(int n, int d, const float *x, const float *g, const float *b, float *y, float *mean,
                          float *rstd) {
    int i, j;
    for (i = 0; i < n; ++i) {
        const float *xi = x + (size_t)i * d;
        double m = 0, v = 0;
        float r;
        for (j = 0; j < d; ++j) m += xi[j];
        m /= d;
        for (j = 0; j < d; ++j) v += (xi[j] - m) * (xi[j] - m);
        r = (float)(1.0 / sqrt(v / d + 1e-5));
        for (j = 0; j < d; ++j) y[(size_t)i * d + j] = (float)(xi[j] - m) * r * g[j] + b[j];
        mean[i] = (float)m; rstd[i] = r;
    }
}

/* dx += dL/dx, dg += dL/dg, db += dL/db given dy = dL/dy */
static void layernorm_bwd(int n, int d, const float *x, const float *g, const float *mean, const float *rstd,
                          const float *dy, float *dx, float *dg, float *db) {
    int i, j;
    for (i = 0; i < n; ++i) {
        const float *xi = x + (size_t)i * d, *dyi = dy + (size_t)i * d;
        double s1 = 0, s2 = 0;   /* mean of dxhat and of dxhat * xhat */
        for (j = 0; j < d; ++j) {
            const float xh = (xi[j] - mean[i]) * rstd[i], dxh = dyi[j] * g[j];
            s1 += dxh; s2 += dxh * xh;
            dg[j] += dyi[j] * xh; db[j] += dyi[j];
        }
        s1 /= d; s2 /= d;
        for (j = 0; j < d; ++j) {
            const float xh = (xi[j] - mean[i]) * rstd[i], dxh = dyi[j] * g[j];
            dx[(size_t)i * d + j] += rstd[i] * (float)(dxh - s1 - xh * s2);
        }
    }
}

#define GELU_C 0.7978845608028654f   /* sqrt(2/pi): the tanh form of GELU */
static float gelu(float x) { return 0.5f * x * (1.0f + tanhf(GELU_C * (x + 0.044715f * x * x * x))); }
static float gelu_grad(float x) {
    const float t = tanhf(GELU_C * (x + 0.044715f * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_C * (1.0f + 3.0f * 0.044715f * x * x);
}

/* MLP: pre = x W1 + b1 [n, f], act = gelu(pre), y = act W2 + b2 [n, d] */
static void mlp_fwd(int n, int d, int f, const float *x, const float *W1, const float *b1, const float *W2,
                    const float *b2, float *pre, float *act, float *y) {
    size_t i;
    int j;
    mm(0, 0, n, f, d, x, W1, pre, 0);
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < f; ++j) {
            pre[i * f + j] += b1[j];
            act[i * f + j] = gelu(pre[i * f + j]);
        }
    mm(0, 0, n, d, f, act, W2, y, 0);
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < d; ++j) y[i * d + j] += b2[j];
}

/* given dy: dx (overwritten), dW1, db1, dW2, db2 (accumulated); dpre: [n, f] scratch */
static void mlp_bwd(int n, int d, int f, const float *x, const float *W1, const float *W2, const float *pre,
                    const float *act, const float *dy, float *dx, float *dW1, float *db1, float *dW2, float *db2,
                    float *dpre) {
    size_t i;
    int j;
    mm(1, 0, f, d, n, act, dy, dW2, 1);              /* dW2 += act^T dy */
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < d; ++j) db2[j] += dy[i * d + j];
    mm(0, 1, n, f, d, dy, W2, dpre, 0);              /* dact = dy W2^T */
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < f; ++j) {
            dpre[i * f + j] *= gelu_grad(pre[i * f + j]);
            db1[j] += dpre[i * f + j];
        }
    mm(1, 0, d, f, n, x, dpre, dW1, 1);              /* dW1 += x^T dpre */
    mm(0, 1, n, d, f, dpre, W1, dx, 0);              /* dx = dpre W1^T */
}

/* mean cross-entropy of softmax(logits) against targets over the rows with a target (>= 0; the
   zoo's tasks mark the rest -1); dlogits (if not NULL) = dL/dlogits, 0 on rows without one */
static double cross_entropy(int n, int V, const float *logits, const int *targets, float *dlogits) {
    double total = 0;
    int i, j, n_t = 0;
    for (i = 0; i < n; ++i) n_t += targets[i] >= 0;
    for (i = 0; i < n; ++i) {
        const float *l = logits + (size_t)i * V;
        float mx = l[0];
        double s = 0;
        if (targets[i] < 0) {
            if (dlogits) memset(dlogits + (size_t)i * V, 0, (size_t)V * sizeof(float));
            continue;
        }
        for (j = 1; j < V; ++j) if (l[j] > mx) mx = l[j];
        for (j = 0; j < V; ++j) s += exp((double)(l[j] - mx));
        total += log(s) + mx - l[targets[i]];
        if (dlogits)
            for (j = 0; j < V; ++j)
                dlogits[(size_t)i * V + j] = (float)((exp((double)(l[j] - mx)) / s - (j == targets[i])) / n_t);
    }
    return n_t ? total / n_t : 0.0;
}

/* ---- the model: parameters live in one array (weights P, gradients G, Adam moments M, S) ---- */

#define NONE ((size_t)-1)
typedef struct {
    size_t ln1g, ln1b, wq, bq, wk, bk, wv, bv, wo, bo, wa, ba, wd, e, f, ln2g, ln2b, w1, b1, w2, b2;
    size_t blk[16], blk_n[16];   /* P_BLOCK: its parameter groups (the MB_, RW_, S4_ names), sizes */
} layer_params;

typedef struct {
    config c;
    int V, T, d, f, L;
    attn_layer_desc ad;        /* P_LAYER */
    attn_desc kd;              /* P_KIND: the mechanism's call (per-layer pointers set per call) */
    int dil[64];               /* Longformer's dilation per head */
    int lin_k;                 /* Linformer's projected length */
    size_t n_params, attn_params, bytes, tok, pos, lnfg, lnfb, wout, bout;
    layer_params lp[16];
    float *P, *G, *M, *S;
    unsigned char *decay;      /* per parameter: 1 = weight decay (matrices) */
    /* activations of one step, N = batch * T rows */
    float *x, *ln1, *mean1, *rstd1, *att, *xm, *ln2, *mean2, *rstd2, *pre, *act, *lnf, *meanf, *rstdf, *logits;
    float *dx, *dxm, *dtmp, *dpre, *dlogits, *dlnf;
    int *tokens, *targets;
    /* P_KIND: per layer q, k, v, the attention output o [N, d], lse [B, H, T]; Routing's
       centroids [H][clusters][d/H]; the backward's dq, dk, dv, do [N, d] */
    float *q, *k, *v, *o, *lse, *cent, *dq, *dk, *dv, *dO;
    /* P_BLOCK: per layer the activations its backward reads (bc_layer floats each, carved by
       the block's *_view), and the backward's scratch (bs) */
    float *bc, *bs;
    size_t bc_layer;
} model;

static size_t take(model *m, size_t n) {
    const size_t off = m->n_params;
    m->n_params += n;
    return off;
}

/* The P_KIND mechanism's settings, scaled to the context c = m->T: a block of b = 8 tokens at
   c >= 64 (c/4 below) is BigBird's block, LSH's bucket and Nystromformer's landmark count;
   Longformer: a window of b keys back, dilation 1 or 2 by head, the first token global;
   Routing: 4 clusters, windows of 2b; Performer: 2 d_head features; Linformer: k = c/4. The
   random parts (BigBird's table, LSH's rotations, Performer's features) are fixed by seed 1. */
static void kind_desc(model *m) {
    attn_desc *a = &m->kd;
    const int c = m->T, b = c >= 64 ? 8 : (c / 4 > 1 ? c / 4 : 1);
    int h;
    memset(a, 0, sizeof *a);
    a->kind = kinds[m->c.kind].akind;
    a->causal = kinds[m->c.kind].causal;
    a->n_threads = m->c.threads;
    switch (a->kind) {
    case ATTN_LONGFORMER:
        a->window_left = b; a->global_tokens = 1;
        for (h = 0; h < m->c.heads && h < 64; ++h) m->dil[h] = 1 + h % 2;
        a->longformer.dilations = m->dil;
        break;
    case ATTN_BIGBIRD: a->bigbird.block = b; a->bigbird.random_blocks = 1; a->bigbird.seed = 1; break;
    case ATTN_LSH: a->lsh.bucket_size = b; a->lsh.n_hashes = 1; a->lsh.seed = 1; break;
    case ATTN_ROUTING: a->routing.n_clusters = 4; a->routing.window = 2 * b; break;
    case ATTN_PERFORMER: a->performer.features = 2 * (m->c.d / m->c.heads); a->performer.seed = 1; break;
    case ATTN_LINFORMER: a->linformer.k = m->lin_k; a->linformer.n = c; break;
    case ATTN_NYSTROM: a->nystrom.landmarks = b; break;
    default: break;
    }
}

/* ---- the recurrent blocks (P_BLOCK): parameter groups, buffers ------------------------------ */

#define MB_NS 16   /* Mamba's state size N per channel */
#define S4_MODES 16  /* S4D's complex modes per channel: the paper's N = 32 (s4d.py's default 64 halved
                        at this scale: 32 modes cost S4D a third of its speed for no gain here) */
enum { MB_IN, MB_CONVW, MB_CONVB, MB_XPROJ, MB_DTW, MB_DTB, MB_ALOG, MB_D, MB_OUT, MB_N };
enum { RW_MU, RW_WR, RW_WK, RW_WV, RW_WG, RW_WO, RW_TD, RW_DA, RW_DB, RW_U, RW_GNG, RW_GNB, RW_N };
enum { S4_LOGDT, S4_LOGA, S4_AIM, S4_CRE, S4_CIM, S4_D, S4_WO, S4_BO, S4_N };
static const char *const blk_names[][16] = {
    { "" },
    { "in_proj", "conv1d w", "conv1d b", "x_proj", "dt_proj w", "dt_proj b", "A_log", "D", "out_proj" },
    { "token-shift mu", "W_r", "W_k", "W_v", "W_g", "W_o", "time_decay", "decay lora A", "decay lora B", "bonus u",
      "ln_x g", "ln_x b" },
    { "log_dt", "log_A_real", "A_imag", "C re", "C im", "D", "W_out (GLU)", "b_out (GLU)" } };

/* Mamba's sizes from d: E = 2 d channels, R = ceil(d / 16) (delta's rank), 4 conv taps; RWKV's
   decay LoRA rank d / 4 */
#define MB_E(m) (2 * (m)->d)
#define MB_R(m) (((m)->d + 15) / 16)
#define RW_RL(m) ((m)->d / 4 > 0 ? (m)->d / 4 : 1)

static int block_groups(const model *m, size_t *n) {   /* the block's parameter group sizes */
    const size_t d = (size_t)m->d, E = (size_t)MB_E(m), R = (size_t)MB_R(m), RL = (size_t)RW_RL(m);
    switch (kinds[m->c.kind].block) {
    case B_MAMBA: {
        const size_t g[MB_N] = { d * 2 * E, E * 4, E, E * (R + 2 * MB_NS), R * E, E, E * MB_NS, E, E * d };
        memcpy(n, g, sizeof g);
        return MB_N;
    }
    case B_RWKV: {
        const size_t g[RW_N] = { 5 * d, d * d, d * d, d * d, d * d, d * d, d, d * RL, RL * d, d, d, d };
        memcpy(n, g, sizeof g);
        return RW_N;
    }
    default: {
        const size_t g[S4_N] = { d, d * S4_MODES, d * S4_MODES, d * S4_MODES, d * S4_MODES, d, d * 2 * d, 2 * d };
        memcpy(n, g, sizeof g);
        return S4_N;
    }
    }
}

static void block_layout(model *m, layer_params *p) {
    int i, n = block_groups(m, p->blk_n);
    for (i = 0; i < n; ++i) p->blk[i] = take(m, p->blk_n[i]);
    for (; i < 16; ++i) { p->blk[i] = NONE; p->blk_n[i] = 0; }
}

/* size the parameter array: every field of a layer this kind reads, NONE for the others */
static void model_layout(model *m) {
    const kind_info *ki = &kinds[m->c.kind];
    const attn_layer_kind k = ki->layer;
    const int d = m->d, f = m->f, V = m->V, T = m->T, shared = ki->path == P_KIND && SHARED_QK(ki->akind);
    int l;
    m->n_params = 0;
    m->tok = take(m, (size_t)V * d);
    m->pos = take(m, (size_t)T * d);
    for (l = 0; l < m->L; ++l) {
        layer_params *p = &m->lp[l];
        const size_t before = m->n_params;
        p->ln1g = take(m, d); p->ln1b = take(m, d);
        p->wq = p->bq = p->wk = p->bk = p->wv = p->bv = p->wa = p->ba = p->wd = p->e = p->f = NONE;
        p->wo = p->bo = NONE;
        if (ki->path == P_BLOCK) block_layout(m, p);
        else {
            if (k != ATTN_LAYER_DIRECT) { p->wq = take(m, (size_t)d * d); p->bq = take(m, d); }
            if ((k == ATTN_LAYER_STANDARD || k == ATTN_LAYER_OPTIMIZED) && !shared) { p->wk = take(m, (size_t)d * d); p->bk = take(m, d); }
            if (k == ATTN_LAYER_STANDARD || k == ATTN_LAYER_DIRECT) { p->wv = take(m, (size_t)d * d); p->bv = take(m, d); }
            p->wo = take(m, (size_t)d * d); p->bo = take(m, d);
        }
        if (k == ATTN_LAYER_SUPER) { p->wa = take(m, (size_t)T * T); p->ba = take(m, T); }
        if (k == ATTN_LAYER_DIRECT) p->wd = take(m, (size_t)T * T);
        if (ki->path == P_KIND && ki->akind == ATTN_LINFORMER) {   /* E, F [heads][k][T]: trained */
            p->e = take(m, (size_t)m->c.heads * m->lin_k * T);
            p->f = take(m, (size_t)m->c.heads * m->lin_k * T);
        }
        if (l == 0) m->attn_params = m->n_params - before - 2 * (size_t)d;   /* less the layer norm */
        p->ln2g = take(m, d); p->ln2b = take(m, d);
        p->w1 = take(m, (size_t)d * f); p->b1 = take(m, f);
        p->w2 = take(m, (size_t)f * d); p->b2 = take(m, d);
    }
    m->lnfg = take(m, d); m->lnfb = take(m, d);
    m->wout = take(m, (size_t)d * V); m->bout = take(m, V);
}

static void fill(float *p, size_t n, float std, float mean, unsigned long long *rng) {
    size_t i;
    for (i = 0; i < n; ++i) p[i] = mean + (std > 0 ? std * gauss(rng) : 0.0f);
}
static void mark_decay(model *m, size_t off, size_t n) { if (off != NONE) memset(m->decay + off, 1, n); }

static size_t g_alloc;   /* bytes xcalloc has handed out (the zoo's memory column) */
static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    g_alloc += n * size;
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    return p;
}

/* The P_BLOCK buffers for N rows: the slots of the cache (a layer's activations the backward
   reads: MC_, RC_, SC_) and of the backward's scratch (MS_, RS_, SS_). With c, sets c[slot] in
   the cache at base_c and c[16 + slot] in m->bs. Returns the cache's floats (per layer); the
   scratch's floats in *scratch. */
enum { MC_XZ, MC_XT, MC_XC, MC_XCR, MC_DBC, MC_DELTA, MC_BT, MC_CT, MC_ZT, MC_YT, MC_YR, MC_A, MC_N };
enum { MS_ROWS, MS_DY, MS_DU, MS_DDELTA, MS_DZ, MS_DB, MS_DC, MS_DA, MS_DDBC, MS_DXCR, MS_DXC, MS_DXT, MS_DXZ, MS_N };
enum { RC_XS, RC_R, RC_K, RC_V, RC_W, RC_WRAW, RC_TH, RC_GPRE, RC_Y, RC_GN, RC_MEAN, RC_RSTD, RC_GATED, RC_N };
enum { RS_DGATED, RS_DGN, RS_DGPRE, RS_DY, RS_DR, RS_DK, RS_DV, RS_DW, RS_DTH, RS_DXS, RS_N };
enum { SC_UT, SC_YT, SC_YR, SC_ACT, SC_H, SC_N };
enum { SS_DH, SS_DACT, SS_DYT, SS_DUT, SS_N };
static size_t block_view(const model *m, float *base_c, size_t N, float **c, size_t *scratch) {
    const size_t d = (size_t)m->d, E = (size_t)MB_E(m), R = (size_t)MB_R(m), RL = (size_t)RW_RL(m), H = (size_t)m->c.heads;
    size_t cs[16], ss[16], tot = 0;
    int nc, ns, i;
    switch (kinds[m->c.kind].block) {
    case B_MAMBA: {
        const size_t a[MC_N] = { N * 2 * E, N * E, N * E, N * E, N * (R + 2 * MB_NS), N * E, N * MB_NS, N * MB_NS,
                                 N * E, N * E, N * E, E * MB_NS };
        const size_t b[MS_N] = { N * E, N * E, N * E, N * E, N * E, N * MB_NS, N * MB_NS, E * MB_NS,
                                 N * (R + 2 * MB_NS), N * E, N * E, N * E, N * 2 * E };
        memcpy(cs, a, sizeof a); memcpy(ss, b, sizeof b); nc = MC_N; ns = MS_N;
        break;
    }
    case B_RWKV: {
        const size_t a[RC_N] = { 5 * N * d, N * d, N * d, N * d, N * d, N * d, N * RL, N * d, N * d, N * d, N * H, N * H, N * d };
        const size_t b[RS_N] = { N * d, N * d, N * d, N * d, N * d, N * d, N * d, N * d, N * RL, 5 * N * d };
        memcpy(cs, a, sizeof a); memcpy(ss, b, sizeof b); nc = RC_N; ns = RS_N;
        break;
    }
    default: {
        const size_t a[SC_N] = { N * d, N * d, N * d, N * d, N * 2 * d };
        const size_t b[SS_N] = { N * 2 * d, N * d, N * d, N * d };
        memcpy(cs, a, sizeof a); memcpy(ss, b, sizeof b); nc = SC_N; ns = SS_N;
        break;
    }
    }
    for (i = 0; i < nc; ++i) { if (c) c[i] = base_c + tot; tot += cs[i]; }
    *scratch = 0;
    for (i = 0; i < ns; ++i) { if (c) c[16 + i] = m->bs + *scratch; *scratch += ss[i]; }
    return tot;
}

/* layer l's slots: c[0..15] its cache, c[16..] the scratch */
static void block_bufs(const model *m, int l, float **c) {
    size_t scratch;
    block_view(m, m->bc + (size_t)l * m->bc_layer, (size_t)m->c.batch * m->c.ctx, c, &scratch);
}

/* inits: Mamba as HF's MambaMixer (dt_proj's weight U(+-R^-1/2), its bias softplus^-1 of dt
   log-uniform in [1e-3, 0.1], A_log = log(1..N), D = 1, conv1d U(+-1/2) as torch's default for
   4 taps); RWKV-6's (mu, decay speeds, bonus as the reference's ratios by layer); S4D-Lin's */
static void block_init(model *m, int l, float s_in, float s_res, unsigned long long *rng) {
    const layer_params *p = &m->lp[l];
    float *P = m->P;
    const int d = m->d, L = m->L;
    int i, j, g;
    switch (kinds[m->c.kind].block) {
    case B_MAMBA: {
        const int E = MB_E(m), R = MB_R(m);
        fill(P + p->blk[MB_IN], p->blk_n[MB_IN], s_in, 0, rng);
        for (i = 0; i < E * 4; ++i) P[p->blk[MB_CONVW] + i] = (float)(uniform(rng) - 0.5);
        for (i = 0; i < E; ++i) P[p->blk[MB_CONVB] + i] = (float)(uniform(rng) - 0.5);
        fill(P + p->blk[MB_XPROJ], p->blk_n[MB_XPROJ], 1.0f / sqrtf((float)E), 0, rng);
        for (i = 0; i < R * E; ++i) P[p->blk[MB_DTW] + i] = (float)((2 * uniform(rng) - 1) / sqrt((double)R));
        for (i = 0; i < E; ++i) {
            double dt = exp(log(1e-3) + uniform(rng) * (log(0.1) - log(1e-3)));
            if (dt < 1e-4) dt = 1e-4;
            P[p->blk[MB_DTB] + i] = (float)(dt + log(-expm1(-dt)));   /* softplus^-1 */
            P[p->blk[MB_D] + i] = 1.0f;
            for (j = 0; j < MB_NS; ++j) P[p->blk[MB_ALOG] + i * MB_NS + j] = logf((float)(j + 1));
        }
        fill(P + p->blk[MB_OUT], p->blk_n[MB_OUT], s_res * sqrtf((float)d / (float)E), 0, rng);
        break;
    }
    case B_RWKV: {
        const double r01 = L > 1 ? (double)l / (L - 1) : 0, r10 = 1.0 - (double)l / L;
        for (i = 0; i < d; ++i) {
            const double ddd = (double)i / d, pw = pow(ddd, r10), ph = pow(ddd, 0.5 * r10);
            const double mu[5] = { 1 - ph, 1 - pw, 1 - (pw + 0.3 * r01), 1 - pw, 1 - ph };   /* r k v w g */
            for (g = 0; g < 5; ++g) P[p->blk[RW_MU] + g * d + i] = (float)mu[g];
            P[p->blk[RW_TD] + i] = (float)(-6 + 5 * pow((double)i / (d > 1 ? d - 1 : 1), 0.7 + 1.3 * r01));
            P[p->blk[RW_U] + i] = (float)(r01 * (1 - (double)i / (d > 1 ? d - 1 : 1)) + ((i + 1) % 3 - 1) * 0.1);
            P[p->blk[RW_GNG] + i] = 1.0f;
        }
        for (g = RW_WR; g <= RW_WG; ++g) fill(P + p->blk[g], p->blk_n[g], s_in, 0, rng);
        fill(P + p->blk[RW_WO], p->blk_n[RW_WO], s_res, 0, rng);
        /* the decay LoRA: A = 0, B = U(+-0.01) (the reference's time_decay_w1, _w2) */
        for (i = 0; i < (int)p->blk_n[RW_DB]; ++i) P[p->blk[RW_DB] + i] = (float)(0.02 * uniform(rng) - 0.01);
        break;
    }
    default:
        for (i = 0; i < d; ++i) {
            P[p->blk[S4_LOGDT] + i] = (float)(log(1e-3) + uniform(rng) * (log(0.1) - log(1e-3)));
            P[p->blk[S4_D] + i] = gauss(rng);
            for (j = 0; j < S4_MODES; ++j) {
                P[p->blk[S4_LOGA] + i * S4_MODES + j] = logf(0.5f);
                P[p->blk[S4_AIM] + i * S4_MODES + j] = 3.14159265f * (float)j;
                P[p->blk[S4_CRE] + i * S4_MODES + j] = 0.70710678f * gauss(rng);
                P[p->blk[S4_CIM] + i * S4_MODES + j] = 0.70710678f * gauss(rng);
            }
        }
        fill(P + p->blk[S4_WO], p->blk_n[S4_WO], s_res, 0, rng);
        break;
    }
    /* weight decay on the matrices only (not on mu, decays, A, dt, C, D, norms, biases) */
    if (kinds[m->c.kind].block == B_MAMBA)
        for (g = 0; g < MB_N; ++g) { if (g == MB_IN || g == MB_XPROJ || g == MB_DTW || g == MB_OUT) mark_decay(m, p->blk[g], p->blk_n[g]); }
    else if (kinds[m->c.kind].block == B_RWKV)
        for (g = RW_WR; g <= RW_DB; ++g) { if (g != RW_TD) mark_decay(m, p->blk[g], p->blk_n[g]); }
    else mark_decay(m, p->blk[S4_WO], p->blk_n[S4_WO]);
}

static void model_init(model *m, const config *c, int V) {
    const size_t N = (size_t)c->batch * c->ctx;
    unsigned long long rng = 0x5EEDull + 7919ull * (unsigned long long)c->seed;
    const float s_in = 1.0f / sqrtf((float)c->d), s_res = s_in / sqrtf(2.0f * (float)c->layers);
    const kind_info *ki = &kinds[c->kind];
    const size_t alloc0 = g_alloc;
    int l, t;
    memset(m, 0, sizeof *m);
    m->c = *c; m->V = V; m->T = c->ctx; m->d = c->d; m->f = 4 * c->d; m->L = c->layers;
    m->ad.kind = ki->layer;
    m->ad.d_model = c->d; m->ad.heads = c->heads; m->ad.context = c->ctx; m->ad.n_threads = c->threads;
    m->ad.attn.causal = 1;
    if (ki->window) m->ad.attn.window_left = ki->window - 1;
    m->ad.attn.sink_tokens = ki->sinks;
    m->lin_k = c->ctx / 4 > 0 ? c->ctx / 4 : 1;
    if (ki->path == P_KIND) kind_desc(m);
    model_layout(m);
    m->P = (float *)xcalloc(m->n_params, 4); m->G = (float *)xcalloc(m->n_params, 4);
    m->M = (float *)xcalloc(m->n_params, 4); m->S = (float *)xcalloc(m->n_params, 4);
    m->decay = (unsigned char *)xcalloc(m->n_params, 1);
    /* embeddings N(0, 0.02^2); projections N(0, 1/fan_in), the ones into the residual stream
       scaled down by sqrt(2 layers) (GPT-2's rule); norms g = 1, b = 0; biases 0 */
    fill(m->P + m->tok, (size_t)V * m->d, 0.02f, 0, &rng);
    fill(m->P + m->pos, (size_t)m->T * m->d, 0.02f, 0, &rng);
    for (l = 0; l < m->L; ++l) {
        const layer_params *p = &m->lp[l];
        fill(m->P + p->ln1g, m->d, 0, 1, &rng); fill(m->P + p->ln2g, m->d, 0, 1, &rng);
        if (p->wq != NONE) fill(m->P + p->wq, (size_t)m->d * m->d, s_in, 0, &rng);
        if (p->wk != NONE) fill(m->P + p->wk, (size_t)m->d * m->d, s_in, 0, &rng);
        if (p->wv != NONE) fill(m->P + p->wv, (size_t)m->d * m->d, s_in, 0, &rng);
        if (p->wo != NONE) fill(m->P + p->wo, (size_t)m->d * m->d, s_res, 0, &rng);
        if (ki->path == P_BLOCK) block_init(m, l, s_in, s_res, &rng);
        /* Super's alignment W^A starts as the identity (Super = Efficient at step 0);
           Direct's map W_D starts at zero (uniform attention over the causal prefix) */
        if (p->wa != NONE) for (t = 0; t < m->T; ++t) m->P[p->wa + (size_t)t * m->T + t] = 1.0f;
        fill(m->P + p->w1, (size_t)m->d * m->f, s_in, 0, &rng);
        fill(m->P + p->w2, (size_t)m->f * m->d, s_res / 2, 0, &rng);
        mark_decay(m, p->wq, (size_t)m->d * m->d); mark_decay(m, p->wk, (size_t)m->d * m->d);
        mark_decay(m, p->wv, (size_t)m->d * m->d); mark_decay(m, p->wo, (size_t)m->d * m->d);
        mark_decay(m, p->wa, (size_t)m->T * m->T); mark_decay(m, p->wd, (size_t)m->T * m->T);
        mark_decay(m, p->w1, (size_t)m->d * m->f); mark_decay(m, p->w2, (size_t)m->d * m->f);
        if (p->e != NONE) {   /* Linformer's E, F: N(0, 1/T), so E K keeps K's scale */
            const size_t n = (size_t)c->heads * m->lin_k * m->T;
            fill(m->P + p->e, n, 1.0f / sqrtf((float)m->T), 0, &rng); fill(m->P + p->f, n, 1.0f / sqrtf((float)m->T), 0, &rng);
            mark_decay(m, p->e, n); mark_decay(m, p->f, n);
        }
    }
    fill(m->P + m->lnfg, m->d, 0, 1, &rng);
    fill(m->P + m->wout, (size_t)m->d * V, s_in, 0, &rng);
    mark_decay(m, m->wout, (size_t)m->d * V);
    /* activations */
    m->x = (float *)xcalloc((m->L + 1) * N * m->d, 4);
    m->ln1 = (float *)xcalloc(m->L * N * m->d, 4); m->att = (float *)xcalloc(m->L * N * m->d, 4);
    m->xm = (float *)xcalloc(m->L * N * m->d, 4); m->ln2 = (float *)xcalloc(m->L * N * m->d, 4);
    m->mean1 = (float *)xcalloc(m->L * N, 4); m->rstd1 = (float *)xcalloc(m->L * N, 4);
    m->mean2 = (float *)xcalloc(m->L * N, 4); m->rstd2 = (float *)xcalloc(m->L * N, 4);
    m->pre = (float *)xcalloc(m->L * N * m->f, 4); m->act = (float *)xcalloc(m->L * N * m->f, 4);
    m->lnf = (float *)xcalloc(N * m->d, 4); m->meanf = (float *)xcalloc(N, 4); m->rstdf = (float *)xcalloc(N, 4);
    m->logits = (float *)xcalloc(N * V, 4); m->dlogits = (float *)xcalloc(N * V, 4);
    m->dx = (float *)xcalloc(N * m->d, 4); m->dxm = (float *)xcalloc(N * m->d, 4);
    m->dtmp = (float *)xcalloc(N * m->d, 4); m->dlnf = (float *)xcalloc(N * m->d, 4);
    m->dpre = (float *)xcalloc(N * m->f, 4);
    m->tokens = (int *)xcalloc(N, sizeof(int)); m->targets = (int *)xcalloc(N, sizeof(int));
    if (ki->path == P_KIND) {
        const size_t LNd = (size_t)m->L * N * m->d;
        const int dh = m->d / c->heads, nc = m->kd.routing.n_clusters;
        m->q = (float *)xcalloc(LNd, 4); m->k = (float *)xcalloc(LNd, 4); m->v = (float *)xcalloc(LNd, 4);
        m->o = (float *)xcalloc(LNd, 4); m->lse = (float *)xcalloc((size_t)m->L * N * c->heads, 4);
        m->dq = (float *)xcalloc(N * m->d, 4); m->dk = (float *)xcalloc(N * m->d, 4);
        m->dv = (float *)xcalloc(N * m->d, 4); m->dO = (float *)xcalloc(N * m->d, 4);
        m->cent = (float *)xcalloc((size_t)m->L * c->heads * (nc ? nc : 1) * dh, 4);
        fill(m->cent, (size_t)m->L * c->heads * (nc ? nc : 1) * dh, 1.0f, 0, &rng);
    }
    if (ki->path == P_BLOCK) {
        size_t scratch;
        m->bc_layer = block_view(m, NULL, N, NULL, &scratch);
        m->bc = (float *)xcalloc(m->L * m->bc_layer, 4);
        m->bs = (float *)xcalloc(scratch, 4);
    }
    m->bytes = g_alloc - alloc0;
}

static void model_free(model *m) {
    free(m->P); free(m->G); free(m->M); free(m->S); free(m->decay);
    free(m->x); free(m->ln1); free(m->att); free(m->xm); free(m->ln2); free(m->mean1); free(m->rstd1);
    free(m->mean2); free(m->rstd2); free(m->pre); free(m->act); free(m->lnf); free(m->meanf); free(m->rstdf);
    free(m->logits); free(m->dlogits); free(m->dx); free(m->dxm); free(m->dtmp); free(m->dlnf); free(m->dpre);
    free(m->tokens); free(m->targets);
    free(m->q); free(m->k); free(m->v); free(m->o); free(m->lse); free(m->cent);
    free(m->dq); free(m->dk); free(m->dv); free(m->dO); free(m->bc); free(m->bs);
}

#define PTR(base, off) ((off) == NONE ? NULL : (base) + (off))
static attn_layer_weights layer_weights(const model *m, int l) {
    const layer_params *p = &m->lp[l];
    attn_layer_weights w;
    memset(&w, 0, sizeof w);
    w.wq = PTR(m->P, p->wq); w.bq = PTR(m->P, p->bq); w.wk = PTR(m->P, p->wk); w.bk = PTR(m->P, p->bk);
    w.wv = PTR(m->P, p->wv); w.bv = PTR(m->P, p->bv); w.wo = PTR(m->P, p->wo); w.bo = PTR(m->P, p->bo);
    w.wa = PTR(m->P, p->wa); w.ba = PTR(m->P, p->ba); w.wd = PTR(m->P, p->wd);
    return w;
}
static attn_layer_grads layer_grads(const model *m, int l) {
    const layer_params *p = &m->lp[l];
    attn_layer_grads g;
    memset(&g, 0, sizeof g);
    g.wq = PTR(m->G, p->wq); g.bq = PTR(m->G, p->bq); g.wk = PTR(m->G, p->wk); g.bk = PTR(m->G, p->bk);
    g.wv = PTR(m->G, p->wv); g.bv = PTR(m->G, p->bv); g.wo = PTR(m->G, p->wo); g.bo = PTR(m->G, p->bo);
    g.wa = PTR(m->G, p->wa); g.ba = PTR(m->G, p->ba); g.wd = PTR(m->G, p->wd);
    return g;
}

/* y[n, d] = x W (+ y when acc) + b */
static void proj(int n, int d, const float *x, const float *W, const float *b, float *y) {
    size_t i;
    int j;
    mm(0, 0, n, d, d, x, W, y, 0);
    for (i = 0; i < (size_t)n; ++i)
        for (j = 0; j < d; ++j) y[i * d + j] += b[j];
}

/* the P_KIND call's desc for layer l: its Routing centroids, Linformer E and F (and, in the
   backward, where dE and dF go) */
static attn_desc layer_desc(const model *m, int l, int with_grads) {
    attn_desc a = m->kd;
    const layer_params *p = &m->lp[l];
    a.routing.centroids = m->cent + (size_t)l * m->c.heads * a.routing.n_clusters * (m->d / m->c.heads);
    if (p->e != NONE) {
        a.linformer.e = m->P + p->e; a.linformer.f = m->P + p->f;
        if (with_grads) { a.linformer.de = m->G + p->e; a.linformer.df = m->G + p->f; }
    }
    return a;
}

/* ---- the recurrent blocks' forward and backward ---------------------------------------------- */

/* [B, T, C] rows (row stride ld) <-> the scans' [B, C, T] */
static void to_chan(int B, int T, int C, const float *src, int ld, float *dst) {
    int b, t, c;
    for (b = 0; b < B; ++b)
        for (t = 0; t < T; ++t)
            for (c = 0; c < C; ++c) dst[((size_t)b * C + c) * T + t] = src[((size_t)b * T + t) * ld + c];
}
static void to_rows(int B, int T, int C, const float *src, float *dst, int ld) {
    int b, t, c;
    for (b = 0; b < B; ++b)
        for (t = 0; t < T; ++t)
            for (c = 0; c < C; ++c) dst[((size_t)b * T + t) * ld + c] = src[((size_t)b * C + c) * T + t];
}
static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }
static float siluf(float x) { return x * sigmoidf(x); }
static float silu_grad(float x) { const float s = sigmoidf(x); return s * (1.0f + x * (1.0f - s)); }

static attn_ssm_desc ssm_desc(const model *m, int B, int T, int dim, int d_state) {
    attn_ssm_desc s;
    memset(&s, 0, sizeof s);
    s.batch = B; s.dim = dim; s.len = T; s.d_state = d_state; s.n_threads = m->c.threads;
    s.delta_softplus = 1; s.conv_kernel = 4; s.conv_act = ATTN_SSM_CONV_SILU;
    return s;
}
#define ST(p, C) attn_ssm_tensor_dense(p, ATTN_F32, C, T)

static attn_status mamba_fwd(model *m, int l, int B, int T, const float *x, float *att) {
    const int d = m->d, E = MB_E(m), R = MB_R(m), W = R + 2 * MB_NS, N = B * T;
    const layer_params *p = &m->lp[l];
    const float *P = m->P;
    const attn_ssm_desc sd = ssm_desc(m, B, T, E, MB_NS);
    float *c[32];
    attn_status st;
    int i;
    block_bufs(m, l, c);
    mm(0, 0, N, 2 * E, d, x, P + p->blk[MB_IN], c[MC_XZ], 0);               /* [x | z] */
    to_chan(B, T, E, c[MC_XZ], 2 * E, c[MC_XT]);
    to_chan(B, T, E, c[MC_XZ] + E, 2 * E, c[MC_ZT]);
    st = attn_ssm_conv1d(&sd, ST(c[MC_XT], E), P + p->blk[MB_CONVW], P + p->blk[MB_CONVB], NULL, ST(c[MC_XC], E), NULL);
    if (st != ATTN_OK) return st;
    to_rows(B, T, E, c[MC_XC], c[MC_XCR], E);
    mm(0, 0, N, W, E, c[MC_XCR], P + p->blk[MB_XPROJ], c[MC_DBC], 0);          /* [dt low rank | B | C] */
    mm_ld(0, 0, N, E, R, c[MC_DBC], W, P + p->blk[MB_DTW], E, c[16 + MS_ROWS], E, 0);
    to_chan(B, T, E, c[16 + MS_ROWS], E, c[MC_DELTA]);                           /* dt_proj's bias: in the scan */
    to_chan(B, T, MB_NS, c[MC_DBC] + R, W, c[MC_BT]);
    to_chan(B, T, MB_NS, c[MC_DBC] + R + MB_NS, W, c[MC_CT]);
    for (i = 0; i < E * MB_NS; ++i) c[MC_A][i] = -expf(P[p->blk[MB_ALOG] + i]);
    st = attn_ssm_selective_scan(&sd, ST(c[MC_XC], E), ST(c[MC_DELTA], E), c[MC_A], ST(c[MC_BT], MB_NS),
                                 ST(c[MC_CT], MB_NS), P + p->blk[MB_D], ST(c[MC_ZT], E), P + p->blk[MB_DTB], NULL,
                                 ST(c[MC_YT], E), NULL);
    if (st != ATTN_OK) return st;
    to_rows(B, T, E, c[MC_YT], c[MC_YR], E);
    mm(0, 0, N, d, E, c[MC_YR], P + p->blk[MB_OUT], att, 0);
    return ATTN_OK;
}

static attn_status mamba_bwd(model *m, int l, int B, int T, const float *x, const float *datt, float *dx) {
    const int d = m->d, E = MB_E(m), R = MB_R(m), W = R + 2 * MB_NS, N = B * T;
    const layer_params *p = &m->lp[l];
    const float *P = m->P;
    float *G = m->G, *c[32], *rows;
    const attn_ssm_desc sd = ssm_desc(m, B, T, E, MB_NS);
    attn_ssm_grads g;
    attn_status st;
    int i;
    block_bufs(m, l, c);
    rows = c[16 + MS_ROWS];
    mm(1, 0, E, d, N, c[MC_YR], datt, G + p->blk[MB_OUT], 1);
    mm(0, 1, N, E, d, datt, P + p->blk[MB_OUT], rows, 0);
    to_chan(B, T, E, rows, E, c[16 + MS_DY]);
    memset(&g, 0, sizeof g);
    g.du = c[16 + MS_DU]; g.ddelta = c[16 + MS_DDELTA]; g.dz = c[16 + MS_DZ]; g.dA = c[16 + MS_DA];
    g.dB = c[16 + MS_DB]; g.dC = c[16 + MS_DC]; g.dD = G + p->blk[MB_D]; g.ddelta_bias = G + p->blk[MB_DTB];
    st = attn_ssm_selective_scan_backward(&sd, ST(c[MC_XC], E), ST(c[MC_DELTA], E), c[MC_A], ST(c[MC_BT], MB_NS),
                                          ST(c[MC_CT], MB_NS), P + p->blk[MB_D], ST(c[MC_ZT], E), P + p->blk[MB_DTB],
                                          NULL, ST(c[16 + MS_DY], E), &g);
    if (st != ATTN_OK) return st;
    for (i = 0; i < E * MB_NS; ++i) G[p->blk[MB_ALOG] + i] += c[16 + MS_DA][i] * c[MC_A][i];   /* A = -exp(A_log) */
    /* delta = dt_low dt_proj: dt_proj's weight and d dt_low, then d [dt_low | B | C] */
    to_rows(B, T, E, c[16 + MS_DDELTA], rows, E);
    mm_ld(1, 0, R, E, N, c[MC_DBC], W, rows, E, G + p->blk[MB_DTW], E, 1);
    mm_ld(0, 1, N, R, E, rows, E, P + p->blk[MB_DTW], E, c[16 + MS_DDBC], W, 0);
    to_rows(B, T, MB_NS, c[16 + MS_DB], c[16 + MS_DDBC] + R, W);
    to_rows(B, T, MB_NS, c[16 + MS_DC], c[16 + MS_DDBC] + R + MB_NS, W);
    mm(1, 0, E, W, N, c[MC_XCR], c[16 + MS_DDBC], G + p->blk[MB_XPROJ], 1);
    /* the conv's output feeds the scan (u) and x_proj */
    to_rows(B, T, E, c[16 + MS_DU], c[16 + MS_DXCR], E);
    mm(0, 1, N, E, W, c[16 + MS_DDBC], P + p->blk[MB_XPROJ], c[16 + MS_DXCR], 1);
    to_chan(B, T, E, c[16 + MS_DXCR], E, c[16 + MS_DXC]);
    st = attn_ssm_conv1d_backward(&sd, ST(c[MC_XT], E), P + p->blk[MB_CONVW], P + p->blk[MB_CONVB], NULL,
                                  ST(c[16 + MS_DXC], E), c[16 + MS_DXT], G + p->blk[MB_CONVW], G + p->blk[MB_CONVB]);
    if (st != ATTN_OK) return st;
    to_rows(B, T, E, c[16 + MS_DXT], c[16 + MS_DXZ], 2 * E);
    to_rows(B, T, E, c[16 + MS_DZ], c[16 + MS_DXZ] + E, 2 * E);
    mm(1, 0, d, 2 * E, N, x, c[16 + MS_DXZ], G + p->blk[MB_IN], 1);
    mm(0, 1, N, d, 2 * E, c[16 + MS_DXZ], P + p->blk[MB_IN], dx, 0);
    return ATTN_OK;
}

/* RWKV's streams in the token shift's mix, in RW_MU's order */
enum { S_R, S_K, S_V, S_W, S_G };

static attn_status rwkv_fwd(model *m, int l, int B, int T, const float *x, float *att) {
    const int d = m->d, H = m->c.heads, hs = d / H, RL = RW_RL(m), N = B * T;
    const layer_params *p = &m->lp[l];
    const float *P = m->P, *mu = P + p->blk[RW_MU];
    float *c[32], *xs;
    attn_rwkv_desc rd;
    attn_status st;
    size_t i;
    int j, s, h;
    block_bufs(m, l, c);
    xs = c[RC_XS];
    for (i = 0; i < (size_t)N; ++i)   /* x_s = x + (x_{t-1} - x) mu_s (x_{-1} = 0) */
        for (j = 0; j < d; ++j) {
            const float xi = x[i * d + j], xx = (i % T ? x[(i - 1) * d + j] : 0.0f) - xi;
            for (s = 0; s < 5; ++s) xs[(s * (size_t)N + i) * d + j] = xi + xx * mu[s * d + j];
        }
    mm(0, 0, N, d, d, xs + S_R * (size_t)N * d, P + p->blk[RW_WR], c[RC_R], 0);
    mm(0, 0, N, d, d, xs + S_K * (size_t)N * d, P + p->blk[RW_WK], c[RC_K], 0);
    mm(0, 0, N, d, d, xs + S_V * (size_t)N * d, P + p->blk[RW_WV], c[RC_V], 0);
    mm(0, 0, N, d, d, xs + S_G * (size_t)N * d, P + p->blk[RW_WG], c[RC_GPRE], 0);
    mm(0, 0, N, RL, d, xs + S_W * (size_t)N * d, P + p->blk[RW_DA], c[RC_TH], 0);
    for (i = 0; i < (size_t)N * RL; ++i) c[RC_TH][i] = tanhf(c[RC_TH][i]);
    mm(0, 0, N, d, RL, c[RC_TH], P + p->blk[RW_DB], c[RC_WRAW], 0);
    for (i = 0; i < (size_t)N; ++i)   /* w = exp(-exp(time_decay + lora)) in (0, 1] */
        for (j = 0; j < d; ++j) {
            float *wr = c[RC_WRAW] + i * d + j;
            *wr += P[p->blk[RW_TD] + j];
            c[RC_W][i * d + j] = expf(-expf(*wr));
        }
    memset(&rd, 0, sizeof rd);
    rd.head_size = hs; rd.n_threads = m->c.threads;
#define RT(ptr) attn_tensor_dense(ptr, ATTN_F32, B, T, 1, d)
    st = attn_rwkv6_forward(&rd, RT(c[RC_R]), RT(c[RC_K]), RT(c[RC_V]), RT(c[RC_W]), P + p->blk[RW_U], RT(c[RC_Y]),
                            NULL, NULL);
    if (st != ATTN_OK) return st;
    for (i = 0; i < (size_t)N; ++i)   /* ln_x: a group norm per head, then the SiLU gate */
        for (h = 0; h < H; ++h)
            layernorm_fwd(1, hs, c[RC_Y] + i * d + h * hs, P + p->blk[RW_GNG] + h * hs, P + p->blk[RW_GNB] + h * hs,
                          c[RC_GN] + i * d + h * hs, c[RC_MEAN] + i * H + h, c[RC_RSTD] + i * H + h);
    for (i = 0; i < (size_t)N * d; ++i) c[RC_GATED][i] = c[RC_GN][i] * siluf(c[RC_GPRE][i]);
    mm(0, 0, N, d, d, c[RC_GATED], P + p->blk[RW_WO], att, 0);
    return ATTN_OK;
}

static attn_status rwkv_bwd(model *m, int l, int B, int T, const float *x, const float *datt, float *dx) {
    const int d = m->d, H = m->c.heads, hs = d / H, RL = RW_RL(m), N = B * T;
    const size_t Nd = (size_t)N * d;
    const layer_params *p = &m->lp[l];
    const float *P = m->P, *mu = P + p->blk[RW_MU];
    float *G = m->G, *c[32], *xs, *dxs, *dw, *dth;
    /* the stream each projection reads, its weights and its output's gradient slot */
    const int str[4] = { S_R, S_K, S_V, S_G }, wm[4] = { RW_WR, RW_WK, RW_WV, RW_WG }, dsl[4] = { RS_DR, RS_DK, RS_DV, RS_DGPRE };
    attn_rwkv_desc rd;
    attn_status st;
    size_t i;
    int j, s, h;
    block_bufs(m, l, c);
    xs = c[RC_XS]; dxs = c[16 + RS_DXS]; dw = c[16 + RS_DW]; dth = c[16 + RS_DTH];
    mm(1, 0, d, d, N, c[RC_GATED], datt, G + p->blk[RW_WO], 1);
    mm(0, 1, N, d, d, datt, P + p->blk[RW_WO], c[16 + RS_DGATED], 0);
    for (i = 0; i < Nd; ++i) {
        const float dg = c[16 + RS_DGATED][i], gp = c[RC_GPRE][i];
        c[16 + RS_DGN][i] = dg * siluf(gp);
        c[16 + RS_DGPRE][i] = dg * c[RC_GN][i] * silu_grad(gp);
    }
    memset(c[16 + RS_DY], 0, Nd * 4);
    for (i = 0; i < (size_t)N; ++i)
        for (h = 0; h < H; ++h)
            layernorm_bwd(1, hs, c[RC_Y] + i * d + h * hs, P + p->blk[RW_GNG] + h * hs, c[RC_MEAN] + i * H + h,
                          c[RC_RSTD] + i * H + h, c[16 + RS_DGN] + i * d + h * hs, c[16 + RS_DY] + i * d + h * hs,
                          G + p->blk[RW_GNG] + h * hs, G + p->blk[RW_GNB] + h * hs);
    memset(&rd, 0, sizeof rd);
    rd.head_size = hs; rd.n_threads = m->c.threads;
    st = attn_rwkv6_backward(&rd, RT(c[RC_R]), RT(c[RC_K]), RT(c[RC_V]), RT(c[RC_W]), P + p->blk[RW_U], RT(c[16 + RS_DY]),
                             NULL, NULL, RT(c[16 + RS_DR]), RT(c[16 + RS_DK]), RT(c[16 + RS_DV]), RT(dw),
                             G + p->blk[RW_U], NULL);
    if (st != ATTN_OK) return st;
    /* w = exp(-exp(wraw)): dwraw = -dw w exp(wraw); wraw = time_decay + tanh(x_w A) B */
    for (i = 0; i < Nd; ++i) {
        dw[i] *= -c[RC_W][i] * expf(c[RC_WRAW][i]);
        G[p->blk[RW_TD] + i % d] += dw[i];
    }
    mm(1, 0, RL, d, N, c[RC_TH], dw, G + p->blk[RW_DB], 1);
    mm(0, 1, N, RL, d, dw, P + p->blk[RW_DB], dth, 0);
    for (i = 0; i < (size_t)N * RL; ++i) dth[i] *= 1.0f - c[RC_TH][i] * c[RC_TH][i];
    mm(1, 0, d, RL, N, xs + S_W * Nd, dth, G + p->blk[RW_DA], 1);
    mm(0, 1, N, d, RL, dth, P + p->blk[RW_DA], dxs + S_W * Nd, 0);
    for (j = 0; j < 4; ++j) {   /* r, k, v, g = x_s W */
        mm(1, 0, d, d, N, xs + str[j] * Nd, c[16 + dsl[j]], G + p->blk[wm[j]], 1);
        mm(0, 1, N, d, d, c[16 + dsl[j]], P + p->blk[wm[j]], dxs + str[j] * Nd, 0);
    }
    /* the token shift: x_s = x (1 - mu_s) + x_{t-1} mu_s */
    for (i = 0; i < (size_t)N; ++i)
        for (j = 0; j < d; ++j) {
            const float xi = x[i * d + j], prev = i % T ? x[(i - 1) * d + j] : 0.0f;
            float acc = 0;
            for (s = 0; s < 5; ++s) {
                const float g = dxs[s * Nd + i * d + j], u = mu[s * d + j];
                acc += g * (1.0f - u);
                G[p->blk[RW_MU] + s * d + j] += g * (prev - xi);
                if (i % T) dx[(i - 1) * d + j] += g * u;
            }
            dx[i * d + j] = acc;   /* row i + 1 adds its share after this (rows ascend) */
        }
    return ATTN_OK;
}

static attn_s4d_params s4d_params(const model *m, const layer_params *p) {
    attn_s4d_params q;
    memset(&q, 0, sizeof q);
    q.log_dt = m->P + p->blk[S4_LOGDT]; q.log_a_real = m->P + p->blk[S4_LOGA]; q.a_imag = m->P + p->blk[S4_AIM];
    q.c_re = m->P + p->blk[S4_CRE]; q.c_im = m->P + p->blk[S4_CIM]; q.d_skip = m->P + p->blk[S4_D];
    return q;
}

static attn_status s4d_fwd(model *m, int l, int B, int T, const float *x, float *att) {
    const int d = m->d, N = B * T;
    const layer_params *p = &m->lp[l];
    const attn_ssm_desc sd = ssm_desc(m, B, T, d, S4_MODES);
    const attn_s4d_params q = s4d_params(m, p);
    float *c[32];
    attn_status st;
    size_t i;
    int j;
    block_bufs(m, l, c);
    to_chan(B, T, d, x, d, c[SC_UT]);
    if ((st = attn_ssm_s4d(&sd, &q, ST(c[SC_UT], d), NULL, ST(c[SC_YT], d), NULL)) != ATTN_OK) return st;
    to_rows(B, T, d, c[SC_YT], c[SC_YR], d);
    for (i = 0; i < (size_t)N * d; ++i) c[SC_ACT][i] = gelu(c[SC_YR][i]);
    mm(0, 0, N, 2 * d, d, c[SC_ACT], m->P + p->blk[S4_WO], c[SC_H], 0);   /* [a | b] */
    for (i = 0; i < (size_t)N; ++i)
        for (j = 0; j < d; ++j) {   /* GLU: a sigmoid(b) */
            float *h = c[SC_H] + i * 2 * d;
            h[j] += m->P[p->blk[S4_BO] + j]; h[d + j] += m->P[p->blk[S4_BO] + d + j];
            att[i * d + j] = h[j] * sigmoidf(h[d + j]);
        }
    return ATTN_OK;
}

static attn_status s4d_bwd(model *m, int l, int B, int T, const float *datt, float *dx) {
    const int d = m->d, N = B * T;
    const layer_params *p = &m->lp[l];
    const attn_ssm_desc sd = ssm_desc(m, B, T, d, S4_MODES);
    const attn_s4d_params q = s4d_params(m, p);
    float *G = m->G, *c[32], *dh;
    attn_s4d_grads g;
    attn_status st;
    size_t i;
    int j;
    block_bufs(m, l, c);
    dh = c[16 + SS_DH];
    for (i = 0; i < (size_t)N; ++i)
        for (j = 0; j < d; ++j) {
            const float a = c[SC_H][i * 2 * d + j], sg = sigmoidf(c[SC_H][i * 2 * d + d + j]), dy = datt[i * d + j];
            dh[i * 2 * d + j] = dy * sg;
            dh[i * 2 * d + d + j] = dy * a * sg * (1.0f - sg);
            G[p->blk[S4_BO] + j] += dh[i * 2 * d + j]; G[p->blk[S4_BO] + d + j] += dh[i * 2 * d + d + j];
        }
    mm(1, 0, d, 2 * d, N, c[SC_ACT], dh, G + p->blk[S4_WO], 1);
    mm(0, 1, N, d, 2 * d, dh, m->P + p->blk[S4_WO], c[16 + SS_DACT], 0);
    for (i = 0; i < (size_t)N * d; ++i) c[16 + SS_DACT][i] *= gelu_grad(c[SC_YR][i]);
    to_chan(B, T, d, c[16 + SS_DACT], d, c[16 + SS_DYT]);
    memset(&g, 0, sizeof g);
    g.du = c[16 + SS_DUT]; g.dlog_dt = G + p->blk[S4_LOGDT]; g.dlog_a_real = G + p->blk[S4_LOGA];
    g.da_imag = G + p->blk[S4_AIM]; g.dc_re = G + p->blk[S4_CRE]; g.dc_im = G + p->blk[S4_CIM]; g.dd_skip = G + p->blk[S4_D];
    if ((st = attn_ssm_s4d_backward(&sd, &q, ST(c[SC_UT], d), NULL, ST(c[16 + SS_DYT], d), &g)) != ATTN_OK) return st;
    to_rows(B, T, d, c[16 + SS_DUT], dx, d);
    return ATTN_OK;
}
/* the largest workspace the block's scan calls ask for (the zoo's memory column) */
static size_t block_workspace(const model *m, int B, int T) {
    const int b = kinds[m->c.kind].block, d = m->d;
    size_t ws = 0, w;
    int i;
    if (b == B_RWKV) {
        attn_rwkv_desc rd;
        memset(&rd, 0, sizeof rd);
        rd.head_size = m->d / m->c.heads;
        if (attn_rwkv6_workspace_size(&rd, RT(m->bc), RT(m->bc), RT(m->bc), RT(m->bc), &w) == ATTN_OK) ws = w;
        if (attn_rwkv6_backward_workspace_size(&rd, RT(m->bc), RT(m->bc), RT(m->bc), RT(m->bc), &w) == ATTN_OK && w > ws) ws = w;
    } else {
        const attn_ssm_op mb[4] = { ATTN_SSM_OP_CONV, ATTN_SSM_OP_SCAN, ATTN_SSM_OP_SCAN_BACKWARD, ATTN_SSM_OP_CONV_BACKWARD };
        const attn_ssm_op s4[2] = { ATTN_SSM_OP_S4D, ATTN_SSM_OP_S4D_BACKWARD };
        const attn_ssm_desc sd = b == B_MAMBA ? ssm_desc(m, B, T, MB_E(m), MB_NS) : ssm_desc(m, B, T, m->d, S4_MODES);
        for (i = 0; i < (b == B_MAMBA ? 4 : 2); ++i)
            if (attn_ssm_workspace_size(&sd, b == B_MAMBA ? mb[i] : s4[i], &w) == ATTN_OK && w > ws) ws = w;
    }
    return ws;
}
#undef RT
#undef ST

/* the token mixer of layer l on its normed input m->ln1: att = mixer(ln1) [B*T, d] */
static attn_status mixer_fwd(model *m, int l, int B, int T, float *att) {
    const int d = m->d, H = m->c.heads;
    const size_t N = (size_t)B * T, Nd = N * d;
    const layer_params *p = &m->lp[l];
    const float *P = m->P, *x = m->ln1 + l * Nd;
    float *q = m->q + l * Nd, *k = m->k + l * Nd, *v = m->v + l * Nd, *o = m->o + l * Nd;
    attn_desc a;
    attn_status st;
    if (kinds[m->c.kind].path == P_LAYER) {
        const attn_layer_weights w = layer_weights(m, l);
        return attn_layer_forward(&m->ad, &w, B, T, T, x, NULL, att);
    }
    if (kinds[m->c.kind].path == P_BLOCK) {
        const int b = kinds[m->c.kind].block;
        return b == B_MAMBA ? mamba_fwd(m, l, B, T, x, att) : b == B_RWKV ? rwkv_fwd(m, l, B, T, x, att) : s4d_fwd(m, l, B, T, x, att);
    }
    a = layer_desc(m, l, 0);
    proj((int)N, d, x, P + p->wq, P + p->bq, q);
    if (p->wk != NONE) proj((int)N, d, x, P + p->wk, P + p->bk, k);
    else k = q;                                                   /* shared QK */
    proj((int)N, d, x, P + p->wv, P + p->bv, v);
    st = attn_forward(&a, attn_tensor_dense(q, ATTN_F32, B, T, H, d / H), attn_tensor_dense(k, ATTN_F32, B, T, H, d / H),
                      attn_tensor_dense(v, ATTN_F32, B, T, H, d / H), attn_tensor_dense(o, ATTN_F32, B, T, H, d / H),
                      HAS_LSE(a.kind) ? m->lse + l * N * H : NULL);
    if (st != ATTN_OK) return st;
    proj((int)N, d, o, P + p->wo, P + p->bo, att);
    return ATTN_OK;
}

/* its backward: dx = d ln1 (overwritten) and the layer's weight gradients, from datt */
static attn_status mixer_bwd(model *m, int l, int B, int T, const float *datt, float *dx) {
    const int d = m->d, H = m->c.heads;
    const size_t N = (size_t)B * T, Nd = N * d;
    const layer_params *p = &m->lp[l];
    const float *P = m->P, *x = m->ln1 + l * Nd;
    float *G = m->G, *q = m->q + l * Nd, *k = p->wk != NONE ? m->k + l * Nd : q, *v = m->v + l * Nd, *o = m->o + l * Nd;
    attn_desc a;
    attn_status st;
    size_t i;
    int j;
    if (kinds[m->c.kind].path == P_LAYER) {
        const attn_layer_weights w = layer_weights(m, l);
        const attn_layer_grads g = layer_grads(m, l);
        return attn_layer_backward(&m->ad, &w, B, T, T, x, NULL, datt, dx, NULL, &g);
    }
    if (kinds[m->c.kind].path == P_BLOCK) {
        const int b = kinds[m->c.kind].block;
        return b == B_MAMBA ? mamba_bwd(m, l, B, T, x, datt, dx) : b == B_RWKV ? rwkv_bwd(m, l, B, T, x, datt, dx)
                            : s4d_bwd(m, l, B, T, datt, dx);
    }
    a = layer_desc(m, l, 1);
    mm(1, 0, d, d, (int)N, o, datt, G + p->wo, 1);
    for (i = 0; i < N; ++i) for (j = 0; j < d; ++j) G[p->bo + j] += datt[i * d + j];
    mm(0, 1, (int)N, d, d, datt, P + p->wo, m->dO, 0);           /* d o = datt Wo^T */
#define TD(ptr) attn_tensor_dense(ptr, ATTN_F32, B, T, H, d / H)
    st = attn_backward(&a, TD(q), TD(k), TD(v), TD(o), TD(m->dO), HAS_LSE(a.kind) ? m->lse + l * N * H : NULL,
                       TD(m->dq), TD(m->dk), TD(m->dv));
#undef TD
    if (st != ATTN_OK) return st;
    if (p->wk == NONE) for (i = 0; i < Nd; ++i) m->dq[i] += m->dk[i];   /* shared QK: both uses */
    mm(1, 0, d, d, (int)N, x, m->dq, G + p->wq, 1);
    mm(0, 1, (int)N, d, d, m->dq, P + p->wq, dx, 0);
    if (p->wk != NONE) {
        mm(1, 0, d, d, (int)N, x, m->dk, G + p->wk, 1);
        mm(0, 1, (int)N, d, d, m->dk, P + p->wk, dx, 1);
    }
    mm(1, 0, d, d, (int)N, x, m->dv, G + p->wv, 1);
    mm(0, 1, (int)N, d, d, m->dv, P + p->wv, dx, 1);
    for (i = 0; i < N; ++i)
        for (j = 0; j < d; ++j) {
            G[p->bq + j] += m->dq[i * d + j]; G[p->bv + j] += m->dv[i * d + j];
            if (p->wk != NONE) G[p->bk + j] += m->dk[i * d + j];
        }
    return ATTN_OK;
}

/* Forward over B sequences of T tokens (T <= context); returns the mean loss when targets are
   given (m->targets), else 0. Keeps every activation the backward needs. */
static double forward(model *m, int B, int T, int with_loss) {
    const int d = m->d, f = m->f;
    const size_t N = (size_t)B * T, Nd = N * d;
    const float *P = m->P;
    size_t i;
    int l, j;
    for (i = 0; i < N; ++i)
        for (j = 0; j < d; ++j)
            m->x[i * d + j] = P[m->tok + (size_t)m->tokens[i] * d + j] + P[m->pos + (i % T) * d + j];
    for (l = 0; l < m->L; ++l) {
        const layer_params *p = &m->lp[l];
        float *x = m->x + l * Nd, *xn = m->x + (l + 1) * Nd, *xm = m->xm + l * Nd, *att = m->att + l * Nd;
        attn_status st;
        layernorm_fwd((int)N, d, x, P + p->ln1g, P + p->ln1b, m->ln1 + l * Nd, m->mean1 + l * N, m->rstd1 + l * N);
        st = mixer_fwd(m, l, B, T, att);
        if (st != ATTN_OK) die("the attention forward", st);
        for (i = 0; i < Nd; ++i) xm[i] = x[i] + att[i];
        layernorm_fwd((int)N, d, xm, P + p->ln2g, P + p->ln2b, m->ln2 + l * Nd, m->mean2 + l * N, m->rstd2 + l * N);
        mlp_fwd((int)N, d, f, m->ln2 + l * Nd, P + p->w1, P + p->b1, P + p->w2, P + p->b2, m->pre + l * N * f,
                m->act + l * N * f, xn);
        for (i = 0; i < Nd; ++i) xn[i] += xm[i];
    }
    layernorm_fwd((int)N, d, m->x + m->L * Nd, P + m->lnfg, P + m->lnfb, m->lnf, m->meanf, m->rstdf);
    mm(0, 0, (int)N, m->V, d, m->lnf, P + m->wout, m->logits, 0);
    for (i = 0; i < N; ++i)
        for (j = 0; j < m->V; ++j) m->logits[i * m->V + j] += P[m->bout + j];
    return with_loss ? cross_entropy((int)N, m->V, m->logits, m->targets, m->dlogits) : 0.0;
}

/* Backward of the last forward (with loss): fills m->G. Returns the attention backward's status
   (ATTN_ERR_KIND_OP: the kind has no backward yet). */
static attn_status backward(model *m, int B, int T) {
    const int d = m->d, f = m->f, V = m->V;
    const size_t N = (size_t)B * T, Nd = N * d;
    const float *P = m->P;
    float *G = m->G;
    size_t i;
    int l, j;
    memset(G, 0, m->n_params * 4);
    mm(1, 0, d, V, (int)N, m->lnf, m->dlogits, G + m->wout, 1);
    for (i = 0; i < N; ++i)
        for (j = 0; j < V; ++j) G[m->bout + j] += m->dlogits[i * V + j];
    mm(0, 1, (int)N, d, V, m->dlogits, P + m->wout, m->dlnf, 0);
    memset(m->dx, 0, Nd * 4);
    layernorm_bwd((int)N, d, m->x + m->L * Nd, P + m->lnfg, m->meanf, m->rstdf, m->dlnf, m->dx, G + m->lnfg, G + m->lnfb);
    for (l = m->L - 1; l >= 0; --l) {
        const layer_params *p = &m->lp[l];
        attn_status st;
        /* x_{l+1} = xm + mlp(ln2(xm)): dx flows to xm directly and through the MLP */
        mlp_bwd((int)N, d, f, m->ln2 + l * Nd, P + p->w1, P + p->w2, m->pre + l * N * f, m->act + l * N * f, m->dx,
                m->dtmp, G + p->w1, G + p->b1, G + p->w2, G + p->b2, m->dpre);
        memcpy(m->dxm, m->dx, Nd * 4);
        layernorm_bwd((int)N, d, m->xm + l * Nd, P + p->ln2g, m->mean2 + l * N, m->rstd2 + l * N, m->dtmp, m->dxm,
                      G + p->ln2g, G + p->ln2b);
        /* xm = x + attn(ln1(x)): the library's layer backward gives d ln1 and the weight grads */
        st = mixer_bwd(m, l, B, T, m->dxm, m->dtmp);
        if (st != ATTN_OK) return st;
        memcpy(m->dx, m->dxm, Nd * 4);
        layernorm_bwd((int)N, d, m->x + l * Nd, P + p->ln1g, m->mean1 + l * N, m->rstd1 + l * N, m->dtmp, m->dx,
                      G + p->ln1g, G + p->ln1b);
    }
    for (i = 0; i < N; ++i)
        for (j = 0; j < d; ++j) {
            G[m->tok + (size_t)m->tokens[i] * d + j] += m->dx[i * d + j];
            G[m->pos + (i % T) * d + j] += m->dx[i * d + j];
        }
    return ATTN_OK;
}

/* AdamW (decoupled weight decay on the matrices), gradient norm clipped to 1 */
static void adamw(model *m, int step, float lr) {
    const float b1 = 0.9f, b2 = 0.99f, eps = 1e-8f;
    const float c1 = 1.0f - powf(b1, (float)step), c2 = 1.0f - powf(b2, (float)step);
    double norm = 0;
    float clip;
    size_t i;
    for (i = 0; i < m->n_params; ++i) norm += (double)m->G[i] * m->G[i];
    norm = sqrt(norm);
    clip = norm > 1.0 ? (float)(1.0 / norm) : 1.0f;
    for (i = 0; i < m->n_params; ++i) {
        const float g = m->G[i] * clip;
        m->M[i] = b1 * m->M[i] + (1 - b1) * g;
        m->S[i] = b2 * m->S[i] + (1 - b2) * g * g;
        if (m->decay[i]) m->P[i] -= lr * m->c.wd * m->P[i];
        m->P[i] -= lr * (m->M[i] / c1) / (sqrtf(m->S[i] / c2) + eps);
    }
}

/* ---- data ------------------------------------------------------------------------------------ */

typedef struct {
    char chars[256];
    int V, n, n_train;
    unsigned char *ids;
} corpus;

static int load_corpus(const char *path, corpus *cp) {
    FILE *f = fopen(path, "rb");
    int present[256] = {0}, map[256], c, i, n = 0, cap = 1 << 16;
    unsigned char *raw;
    if (!f) { fprintf(stderr, "cannot open %s (run from the repository root, or pass --data)\n", path); return 0; }
    raw = (unsigned char *)xcalloc((size_t)cap, 1);
    while ((c = fgetc(f)) != EOF) {
        if (n == cap) {
            unsigned char *r = (unsigned char *)realloc(raw, (size_t)cap * 2);
            if (!r) { fprintf(stderr, "out of memory\n"); exit(2); }
            raw = r; cap *= 2;
        }
        raw[n++] = (unsigned char)c;
        present[c] = 1;
    }
    fclose(f);
    cp->V = 0;
    for (c = 0; c < 256; ++c)
        if (present[c]) { map[c] = cp->V; cp->chars[cp->V++] = (char)c; }
    for (i = 0; i < n; ++i) raw[i] = (unsigned char)map[raw[i]];
    cp->ids = raw; cp->n = n; cp->n_train = n - n / 10;
    return n > 1000;
}

/* B windows of T+1 characters from [lo, hi): inputs and next-character targets */
static void get_batch(model *m, const corpus *cp, int B, int lo, int hi, unsigned long long *rng) {
    const int T = m->T;
    int b, t;
    for (b = 0; b < B; ++b) {
        const int start = lo + (int)(uniform(rng) * (double)(hi - lo - T - 1));
        for (t = 0; t < T; ++t) {
            m->tokens[b * T + t] = cp->ids[start + t];
            m->targets[b * T + t] = cp->ids[start + t + 1];
        }
    }
}

/* validation loss: the same eval_batches batches (a fixed seed) every time */
static double val_loss(model *m, const corpus *cp) {
    unsigned long long rng = 12345;
    double s = 0;
    int i;
    for (i = 0; i < m->c.eval_batches; ++i) {
        get_batch(m, cp, m->c.batch, cp->n_train, cp->n, &rng);
        s += forward(m, m->c.batch, m->T, 1);
    }
    return s / m->c.eval_batches;
}

/* sample n characters (temperature 0.8) after a newline, each from a forward over the last T */
static void sample_text(model *m, const corpus *cp, int n, unsigned long long *rng) {
    int *ctx = (int *)xcalloc((size_t)n + 1, sizeof(int)), len = 1, i, j;
    for (j = 0; j < cp->V; ++j) if (cp->chars[j] == '\n') ctx[0] = j;
    for (i = 0; i < n; ++i) {
        const int T = len < m->T ? len : m->T;
        const float *l;
        double s = 0, r, mx = -1e30;
        for (j = 0; j < T; ++j) m->tokens[j] = ctx[len - T + j];
        forward(m, 1, T, 0);
        l = m->logits + (size_t)(T - 1) * m->V;
        for (j = 0; j < m->V; ++j) if (l[j] > mx) mx = l[j];
        for (j = 0; j < m->V; ++j) s += exp((l[j] - mx) / 0.8);
        r = uniform(rng) * s;
        for (j = 0; j < m->V - 1; ++j) { r -= exp((l[j] - mx) / 0.8); if (r <= 0) break; }
        ctx[len++] = j;
        putchar(cp->chars[j]);
    }
    putchar('\n');
    free(ctx);
}

/* ---- one training run ------------------------------------------------------------------------ */

typedef struct {
    double first_loss, last_loss, final_val, secs, tok_per_s;
    int n_val;
    double val[256];
    int val_step[256];
    size_t attn_params, params;
} run_result;

static float lr_at(const config *c, int step) {   /* warmup 10% then cosine to 10% */
    const int warm = c->steps / 10 > 0 ? c->steps / 10 : 1;
    if (step < warm) return c->lr * (float)(step + 1) / (float)warm;
    return c->lr * (0.1f + 0.45f * (1.0f + cosf(3.14159265f * (float)(step - warm) / (float)(c->steps - warm))));
}

static run_result train(const config *c, const corpus *cp, int print_sample) {
    model m;
    run_result r;
    unsigned long long rng = 0xDA7Aull + 104729ull * (unsigned long long)c->seed;
    FILE *csv = NULL;
    double t0 = now_s(), tl = t0, loss = 0, first3 = 0, last3 = 0;
    int step, tok_since = 0;
    memset(&r, 0, sizeof r);
    model_init(&m, c, cp->V);
    r.params = m.n_params;
    r.attn_params = m.attn_params;
    if (!c->quiet)
        printf("attention %s: %d layers, d %d, %d heads, context %d, batch %d: %zu parameters (%zu per attention layer)\n",
               kinds[c->kind].name, c->layers, c->d, c->heads, c->ctx, c->batch, m.n_params, r.attn_params);
    if (c->csv && !(csv = fopen(c->csv, "w"))) fprintf(stderr, "cannot write %s\n", c->csv);
    if (csv) fprintf(csv, "step,train_loss,val_loss,tokens_per_s,seconds\n");
    for (step = 0; step < c->steps; ++step) {
        double vl = -1;
        get_batch(&m, cp, c->batch, 0, cp->n_train, &rng);
        loss = forward(&m, c->batch, m.T, 1);
        { const attn_status st = backward(&m, c->batch, m.T); if (st != ATTN_OK) die("the attention backward", st); }
        adamw(&m, step + 1, lr_at(c, step));
        tok_since += c->batch * m.T;
        if (step < 3) first3 += loss / 3;
        if (step >= c->steps - 3) last3 += loss / 3;
        if ((step + 1) % c->eval_every == 0 || step + 1 == c->steps) {
            const double now = now_s(), tps = tok_since / (now - tl);
            vl = val_loss(&m, cp);
            if (r.n_val < 256) { r.val[r.n_val] = vl; r.val_step[r.n_val++] = step + 1; }
            if (!c->quiet)
                printf("step %5d  loss %.3f  val %.3f  %6.0f tokens/s  %5.1f s\n", step + 1, loss, vl, tps, now - t0);
            tl = now_s(); tok_since = 0;
        } else if (!c->quiet && (step + 1) % 10 == 0) {   /* progress on stderr, overwritten */
            fprintf(stderr, "step %5d  loss %.3f  %6.0f tokens/s\r", step + 1, loss, tok_since / (now_s() - tl));
        }
        if (csv) {
            fprintf(csv, "%d,%.5f,", step + 1, loss);
            if (vl >= 0) fprintf(csv, "%.5f", vl);
            fprintf(csv, ",%.0f,%.3f\n", (double)(step + 1) * c->batch * m.T / (now_s() - t0), now_s() - t0);
        }
    }
    r.secs = now_s() - t0;
    r.tok_per_s = (double)c->steps * c->batch * m.T / r.secs;
    r.first_loss = first3; r.last_loss = last3;
    r.final_val = r.n_val ? r.val[r.n_val - 1] : 0;
    if (csv) { fclose(csv); if (!c->quiet) printf("wrote %s\n", c->csv); }
    if (print_sample && c->sample > 0) {
        printf("--- sample (%d characters, temperature 0.8) ---\n", c->sample);
        sample_text(&m, cp, c->sample, &rng);
    }
    model_free(&m);
    return r;
}

/* ---- --check: gradients against central finite differences ----------------------------------- */

static int g_fails, g_checked;
static double g_maxerr;   /* the largest |analytic - numeric| since it was last reset */
static void check_tol(const char *what, double analytic, double numeric, double atol) {
    const double err = fabs(analytic - numeric), tol = atol + 2e-2 * fabs(numeric);
    ++g_checked;
    if (err > g_maxerr) g_maxerr = err;
    if (!(err <= tol)) {
        ++g_fails;
        printf("  FAIL %-28s analytic %+.6e numeric %+.6e\n", what, analytic, numeric);
    }
}
static void check_close(const char *what, double analytic, double numeric) { check_tol(what, analytic, numeric, 2e-3); }

/* loss = sum(w * y) of a layer's output y: its gradient dL/dy is w */
static double dot_w(const float *y, const float *w, size_t n) {
    double s = 0;
    size_t i;
    for (i = 0; i < n; ++i) s += (double)y[i] * w[i];
    return s;
}

static double ln_loss(int n, int d, const float *x, const float *g, const float *b, const float *w) {
    float y[64], mean[8], rstd[8];
    layernorm_fwd(n, d, x, g, b, y, mean, rstd);
    return dot_w(y, w, (size_t)n * d);
}
static double mlp_loss(int n, int d, int f, const float *x, const float *W1, const float *b1, const float *W2,
                       const float *b2, const float *w) {
    float pre[256], act[256], y[64];
    mlp_fwd(n, d, f, x, W1, b1, W2, b2, pre, act, y);
    return dot_w(y, w, (size_t)n * d);
}

/* central difference of loss() in p[i] */
#define NUMERIC(p, i, expr, out) do { const float s_ = (p)[i]; double lp_, lm_; \
    (p)[i] = s_ + eps; lp_ = (expr); (p)[i] = s_ - eps; lm_ = (expr); (p)[i] = s_; \
    (out) = (lp_ - lm_) / (2.0 * eps); } while (0)
/* the five-point stencil (error O(h^4) against O(h^2)), so a longer step h keeps the loss's
   float rounding small next to small gradients */
#define NUMERIC4(p, i, h, expr, out) do { const float s_ = (p)[i]; double v_[4]; int q_; \
    for (q_ = 0; q_ < 4; ++q_) { (p)[i] = s_ + (float)((q_ < 2 ? 1 : -1) * (q_ % 2 ? 2 : 1)) * (h); v_[q_] = (expr); } \
    (p)[i] = s_; (out) = (8.0 * (v_[0] - v_[2]) - (v_[1] - v_[3])) / (12.0 * (h)); } while (0)

static int run_check(const corpus *cp) {
    unsigned long long rng = 99;
    float eps = 1e-2f;   /* components; the whole model below uses 1e-3 (larger curvature) */
    int i, k;
    g_fails = g_checked = 0;
    { /* layer norm: 8 rows of 8 */
        enum { n = 8, d = 8 };
        float x[n * d], g[d], b[d], w[n * d], y[n * d], mean[n], rstd[n], dx[n * d] = {0}, dg[d] = {0}, db[d] = {0};
        double num;
        for (i = 0; i < n * d; ++i) { x[i] = 2 * gauss(&rng) + 0.5f; w[i] = gauss(&rng); }
        for (i = 0; i < d; ++i) { g[i] = 1 + 0.3f * gauss(&rng); b[i] = 0.3f * gauss(&rng); }
        layernorm_fwd(n, d, x, g, b, y, mean, rstd);
        layernorm_bwd(n, d, x, g, mean, rstd, w, dx, dg, db);
        for (i = 0; i < n * d; ++i) { NUMERIC(x, i, ln_loss(n, d, x, g, b, w), num); check_close("layernorm dx", dx[i], num); }
        for (i = 0; i < d; ++i) { NUMERIC(g, i, ln_loss(n, d, x, g, b, w), num); check_close("layernorm dg", dg[i], num); }
        for (i = 0; i < d; ++i) { NUMERIC(b, i, ln_loss(n, d, x, g, b, w), num); check_close("layernorm db", db[i], num); }
        printf("layer norm: %d gradients checked\n", g_checked);
    }
    { /* MLP: 4 rows, d 8, hidden 32 */
        enum { n = 4, d = 8, f = 32 };
        float x[n * d], W1[d * f], b1[f], W2[f * d], b2[d], w[n * d], pre[n * f], act[n * f], y[n * d], dpre[n * f];
        float dx[n * d], dW1[d * f] = {0}, db1[f] = {0}, dW2[f * d] = {0}, db2[d] = {0};
        double num;
        const int before = g_checked;
        for (i = 0; i < n * d; ++i) { x[i] = gauss(&rng); w[i] = gauss(&rng); }
        for (i = 0; i < d * f; ++i) { W1[i] = 0.4f * gauss(&rng); W2[i] = 0.4f * gauss(&rng); }
        for (i = 0; i < f; ++i) b1[i] = 0.3f * gauss(&rng);
        for (i = 0; i < d; ++i) b2[i] = 0.3f * gauss(&rng);
        mlp_fwd(n, d, f, x, W1, b1, W2, b2, pre, act, y);
        mlp_bwd(n, d, f, x, W1, W2, pre, act, w, dx, dW1, db1, dW2, db2, dpre);
#define MLPL mlp_loss(n, d, f, x, W1, b1, W2, b2, w)
        for (i = 0; i < n * d; ++i) { NUMERIC(x, i, MLPL, num); check_close("mlp dx", dx[i], num); }
        for (i = 0; i < d * f; ++i) { NUMERIC(W1, i, MLPL, num); check_close("mlp dW1", dW1[i], num); }
        for (i = 0; i < f; ++i) { NUMERIC(b1, i, MLPL, num); check_close("mlp db1", db1[i], num); }
        for (i = 0; i < f * d; ++i) { NUMERIC(W2, i, MLPL, num); check_close("mlp dW2", dW2[i], num); }
        for (i = 0; i < d; ++i) { NUMERIC(b2, i, MLPL, num); check_close("mlp db2", db2[i], num); }
#undef MLPL
        printf("MLP (GELU): %d gradients checked\n", g_checked - before);
    }
    { /* cross-entropy: 6 rows over 10 classes */
        enum { n = 6, V = 10 };
        float l[n * V], dl[n * V];
        int t[n];
        double num;
        const int before = g_checked;
        for (i = 0; i < n * V; ++i) l[i] = 2 * gauss(&rng);
        for (i = 0; i < n; ++i) t[i] = (i * 7) % V;
        cross_entropy(n, V, l, t, dl);
        for (i = 0; i < n * V; ++i) { NUMERIC(l, i, cross_entropy(n, V, l, t, NULL), num); check_close("cross-entropy", dl[i], num); }
        printf("cross-entropy: %d gradients checked\n", g_checked - before);
    }
    /* the whole model (embeddings, norms, MLPs, the library's attention layers, the output) for
       every attention kind: 2 layers, d 16, 2 heads, context 8, batch 2; 40 parameters each, and
       for the recurrent blocks 3 entries of each parameter group in both layers (five-point
       differences, absolute tolerance 2e-4: some groups' gradients are about 1e-3) */
    for (k = 0; k < N_KINDS; ++k) {
        config c;
        model m;
        unsigned long long r2 = 7;
        const int before = g_checked;
        attn_status st;
        if (kinds[k].path == P_KIND && SHARED_QK(kinds[k].akind)) {   /* hashing / top-w windows: steps */
            printf("whole model, attention %-9s: not checked (piecewise constant in q: finite differences jump)\n", kinds[k].name);
            continue;
        }
        g_maxerr = 0;
        memset(&c, 0, sizeof c);
        c.kind = k; c.layers = 2; c.d = 16; c.heads = 2; c.ctx = 8; c.batch = 2; c.seed = 3; c.wd = 0;
        /* cosFormer's ReLU features and small denominators curve fast: a shorter step (1e-3 misses
           by up to 25%; 3e-4 and 1e-4 agree with the analytic gradient); so does RWKV's group norm
           over 8 channels (1e-3 misses by 0.4%, 3e-4 by 0.04%: the O(eps^2) of curvature) */
        eps = (kinds[k].path == P_KIND && kinds[k].akind == ATTN_COSFORMER) || kinds[k].block == B_RWKV ? 3e-4f : 1e-3f;
        model_init(&m, &c, cp->V);
        for (i = 0; i < (int)m.n_params; ++i) m.P[i] += 0.05f * gauss(&r2);   /* off the symmetric start */
        for (i = 0; i < c.layers && kinds[k].block == B_MAMBA; ++i) {   /* Mamba's steps dt of 0.3 to 1, */
            const layer_params *p = &m.lp[i];                                /* so that A, B, C matter */
            size_t j;
            for (j = 0; j < p->blk_n[MB_DTB]; ++j) m.P[p->blk[MB_DTB] + j] = 0.5f * gauss(&r2);
        }
        get_batch(&m, cp, c.batch, 0, cp->n_train, &r2);
        forward(&m, c.batch, c.ctx, 1);
        if ((st = backward(&m, c.batch, c.ctx)) != ATTN_OK) {
            printf("whole model, attention %-9s: %s\n", kinds[k].name,
                   st == ATTN_ERR_KIND_OP ? "no backward yet (attn_backward: ATTN_ERR_KIND_OP)" : attn_status_str(st));
            if (st != ATTN_ERR_KIND_OP) ++g_fails;
            model_free(&m);
            continue;
        }
        for (i = 0; i < 40; ++i) {
            /* the parameters with the largest gradients among a random sample, plus random ones */
            size_t best = (size_t)(uniform(&r2) * (double)m.n_params), j;
            double num;
            if (i % 2 == 0)
                for (j = 0; j < 64; ++j) {
                    const size_t cand = (size_t)(uniform(&r2) * (double)m.n_params);
                    if (fabsf(m.G[cand]) > fabsf(m.G[best])) best = cand;
                }
            NUMERIC(m.P, best, forward(&m, c.batch, c.ctx, 1), num);
            check_close(kinds[k].name, m.G[best], num);
        }
        if (kinds[k].path == P_BLOCK) {   /* every parameter group of the block, in both layers: */
            int l, g;                      /* its largest gradient and two random entries */
            for (l = 0; l < c.layers; ++l)
                for (g = 0; g < 16 && m.lp[l].blk_n[g]; ++g) {
                    const size_t off = m.lp[l].blk[g], n = m.lp[l].blk_n[g];
                    size_t j, at[3];
                    char what[64];
                    at[0] = off;
                    for (j = 0; j < n; ++j) if (fabsf(m.G[off + j]) > fabsf(m.G[at[0]])) at[0] = off + j;
                    at[1] = off + (size_t)(uniform(&r2) * (double)n); at[2] = off + (size_t)(uniform(&r2) * (double)n);
                    snprintf(what, sizeof what, "%s %s", kinds[k].name, blk_names[kinds[k].block][g]);
                    for (j = 0; j < 3; ++j) {
                        double num;
                        NUMERIC4(m.P, at[j], 4e-3f, forward(&m, c.batch, c.ctx, 1), num);
                        check_tol(what, m.G[at[j]], num, 2e-4);   /* some groups' gradients are ~1e-3 */
                    }
                }
        }
        printf("whole model, attention %-9s: %d parameters checked, max |a - n| %.2e\n", kinds[k].name,
               g_checked - before, g_maxerr);
        model_free(&m);
    }
    printf("%d gradients checked, %d outside tolerance (|a - n| <= 2e-3 + 2e-2 |n|; the blocks' groups: 2e-4 + 2e-2 |n|)\n", g_checked, g_fails);
    return g_fails == 0;
}

/* ---- --compare: every kind, the same budget, 3 seeds ------------------------------------------ */

static void write_compare_svg(const char *path, run_result res[][8], const int *sel, int n_kinds, int n_seeds,
                              const config *c) {
    static const char *const col[] = { "#000000", "#1f77b4", "#ff7f0e", "#d62728", "#9467bd", "#2ca02c", "#8c564b" };
    const double W = 760, Hh = 460, x0 = 70, y0 = 50, pw = 480, ph = 340;
    double lo = 1e9, hi = -1e9;
    FILE *f = fopen(path, "w");
    int k, s, i;
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return; }
    for (k = 0; k < n_kinds; ++k)
        for (s = 0; s < n_seeds; ++s)
            for (i = 0; i < res[k][s].n_val; ++i) {
                if (res[k][s].val[i] < lo) lo = res[k][s].val[i];
                if (res[k][s].val[i] > hi) hi = res[k][s].val[i];
            }
    lo = floor(lo * 10) / 10; hi = ceil(hi * 10) / 10;
    if (hi > lo + 1.5) hi = lo + 1.5;   /* the first evaluations sit far above; clip them */
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">validation loss vs step: %d layers, d %d, %d heads, "
               "context %d, batch %d, %d seeds (mean; thin: each seed)</text>\n", x0, c->layers, c->d, c->heads,
            c->ctx, c->batch, n_seeds);
    for (i = 0; i <= 5; ++i) {
        const double v = lo + (hi - lo) * i / 5, y = y0 + ph * (1 - (double)i / 5);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%.0f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%.2f</text>\n", x0, y, x0 + pw, y, x0 - 4, y + 4, v);
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", x0 + pw * i / 5, y0 + ph + 14,
                c->steps * i / 5);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">step</text>\n", x0 + pw / 2, y0 + ph + 30);
#define PX(st) (x0 + pw * (double)(st) / c->steps)
#define PY(v) (y0 + ph * (1 - ((v) > hi ? 1.0 : ((v) - lo) / (hi - lo))))
    for (k = 0; k < n_kinds; ++k) {
        for (s = 0; s <= n_seeds; ++s) {     /* s == n_seeds: the mean */
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" %s points=\"", col[sel[k] % 7],
                    s == n_seeds ? "2" : "0.6", s == n_seeds ? "" : "stroke-opacity=\"0.5\"");
            for (i = 0; i < res[k][0].n_val; ++i) {
                double v = 0;
                int q;
                if (s < n_seeds) v = res[k][s].val[i];
                else { for (q = 0; q < n_seeds; ++q) v += res[k][q].val[i]; v /= n_seeds; }
                fprintf(f, "%s%.1f,%.1f", i ? " " : "", PX(res[k][0].val_step[i]), PY(v));
            }
            fprintf(f, "\"/>\n");
        }
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", x0 + pw + 20, y0 + 16.0 * k + 10, col[sel[k] % 7],
                kinds[sel[k]].name);
    }
#undef PX
#undef PY
    fprintf(f, "</svg>\n");
    fclose(f);
}

/* Every kind (or --kinds a,b,c) for the same steps and batches over n_seeds seeds. Seed s gives
   every kind the same training batches, so "vs standard" is the paired difference of final
   validation losses (kind minus standard, seed by seed): mean +- sd over the seeds. */
static int run_compare(config c, const corpus *cp, int n_seeds) {
    static run_result res[N_KINDS][8];
    char path[512];
    int sel[N_KINDS], n_sel = 0, k, s, i, std_at = -1;
    FILE *csv;
    double t0 = now_s();
    for (k = 0; k < N_LAYER_KINDS; ++k) {
        const char *p = c.compare_kinds;
        const size_t len = strlen(kinds[k].name);
        int want = p == NULL;
        while (p && *p) {
            if (strncmp(p, kinds[k].name, len) == 0 && (p[len] == ',' || p[len] == '\0')) want = 1;
            p = strchr(p, ',');
            if (p) ++p;
        }
        if (want) { if (k == 0) std_at = n_sel; sel[n_sel++] = k; }
    }
    if (n_sel == 0) { fprintf(stderr, "--kinds: no known kind in '%s'\n", c.compare_kinds); return 1; }
    c.quiet = 1; c.csv = NULL;
    printf("train-compare: %d kinds x %d seeds, %d steps each (batch %d x %d tokens), %d layers, d %d, %d heads, %s kernels\n",
           n_sel, n_seeds, c.steps, c.batch, c.ctx, c.layers, c.d, c.heads, attn_kernels());
    for (k = 0; k < n_sel; ++k)
        for (s = 0; s < n_seeds; ++s) {
            c.kind = sel[k]; c.seed = s + 1;
            fprintf(stderr, "\r  %-10s seed %d  (%.0f s so far)   ", kinds[sel[k]].name, s + 1, now_s() - t0);
            res[k][s] = train(&c, cp, 0);
        }
    fprintf(stderr, "\r%60s\r", "");
    printf("\n| attention | params / attn layer | model params | final val loss (mean +- sd) | min .. max | vs standard (paired) | s / run |\n");
    printf("|---|---|---|---|---|---|---|\n");
    snprintf(path, sizeof path, "%s.csv", c.out);
    csv = fopen(path, "w");
    if (csv) fprintf(csv, "kind,seed,attn_params,model_params,step,val_loss\n");
    for (k = 0; k < n_sel; ++k) {
        double mean = 0, var = 0, mn = 1e9, mx = -1e9, secs = 0, dmean = 0, dvar = 0;
        for (s = 0; s < n_seeds; ++s) {
            const double v = res[k][s].final_val;
            mean += v / n_seeds; secs += res[k][s].secs / n_seeds;
            if (std_at >= 0) dmean += (v - res[std_at][s].final_val) / n_seeds;
            if (v < mn) mn = v;
            if (v > mx) mx = v;
            if (csv)
                for (i = 0; i < res[k][s].n_val; ++i)
                    fprintf(csv, "%s,%d,%zu,%zu,%d,%.5f\n", kinds[sel[k]].name, s + 1, res[k][s].attn_params,
                            res[k][s].params, res[k][s].val_step[i], res[k][s].val[i]);
        }
        for (s = 0; s < n_seeds; ++s) {
            const double dv = std_at >= 0 ? res[k][s].final_val - res[std_at][s].final_val - dmean : 0;
            var += (res[k][s].final_val - mean) * (res[k][s].final_val - mean);
            dvar += dv * dv;
        }
        printf("| %s | %zu | %zu | %.3f +- %.3f | %.3f .. %.3f | ", kinds[sel[k]].name, res[k][0].attn_params,
               res[k][0].params, mean, sqrt(var / (n_seeds > 1 ? n_seeds - 1 : 1)), mn, mx);
        if (std_at >= 0 && k != std_at) printf("%+.3f +- %.3f", dmean, sqrt(dvar / (n_seeds > 1 ? n_seeds - 1 : 1)));
        else printf("-");
        printf(" | %.1f |\n", secs);
    }
    if (csv) fclose(csv);
    snprintf(path, sizeof path, "%s.svg", c.out);
    write_compare_svg(path, res, sel, n_sel, n_seeds, &c);
    printf("\nwrote %s.csv and %s.svg (%.0f s in all)\n", c.out, c.out, now_s() - t0);
    return 0;
}


/* ---- --tasks-check: the zoo's task generators (zoo_tasks.h) against checkers written here ---- */

static int t_fail;
#define TCHECK(cond, ...) do { if (!(cond)) { if (t_fail++ < 10) { printf("  FAIL " __VA_ARGS__); printf("\n"); } } } while (0)

/* ListOps, read back by a recursive-descent parser written independently of the generator:
   returns the value of the expression at tok[*at] (advancing *at), -1 on a syntax error */
static int lo_parse(const int *tok, int n, int *at, int depth, int *max_depth) {
    int vals[64], k = 0, op, i, r;
    if (*at >= n) return -1;
    if (tok[*at] >= 1 && tok[*at] <= 10) return tok[(*at)++] - 1;
    if (tok[*at] < ZT_LO_MAX || tok[*at] > ZT_LO_SM) return -1;
    op = tok[(*at)++];
    if (depth + 1 > *max_depth) *max_depth = depth + 1;
    while (*at < n && tok[*at] != ZT_LO_CLOSE) {
        if (k == 64 || (vals[k++] = lo_parse(tok, n, at, depth + 1, max_depth)) < 0) return -1;
    }
    if (*at >= n || k < 2) return -1;
    ++*at;                                          /* the ']' */
    r = vals[0];
    if (op == ZT_LO_SM) { r = 0; for (i = 0; i < k; ++i) r = (r + vals[i]) % 10; }
    else if (op == ZT_LO_MED) {                     /* the lower median: the value with (k-1)/2 below it */
        for (i = 0; i < k; ++i) {
            int below = 0, equal = 0, j;
            for (j = 0; j < k; ++j) { below += vals[j] < vals[i]; equal += vals[j] == vals[i]; }
            if (below <= (k - 1) / 2 && (k - 1) / 2 < below + equal) r = vals[i];
        }
    } else
        for (i = 1; i < k; ++i) r = op == ZT_LO_MAX ? (vals[i] > r ? vals[i] : r) : (vals[i] < r ? vals[i] : r);
    return r;
}

/* Samples of every task from many seeds: each one's invariants (the answer is where the task says
   it is and nowhere after it), determinism (a seed gives the same sample), and the spread of the
   answers. Nonzero exit on failure (examples/check.sh runs it). */
static int run_tasks_check(void) {
    enum { N = 2000, T = 96 };
    static int tok[N][T], tgt[N][T], tok2[T], tgt2[T];
    int i, t, s, classes[11] = {0}, answer_after[4] = {0};
    t_fail = 0;
    for (s = 0; s < N; ++s) {                       /* mqar: 12 pairs of 40 keys, 24 values */
        const int P = 12, NK = 40, NV = 24;
        unsigned long long r = 1000 + s, r2 = 1000 + s;
        int asked[64] = {0}, n_q = 0, seen_key[64] = {0};
        zt_mqar(&r, T, P, NK, NV, tok[s], tgt[s]);
        zt_mqar(&r2, T, P, NK, NV, tok2, tgt2);
        TCHECK(memcmp(tok[s], tok2, sizeof tok2) == 0 && memcmp(tgt[s], tgt2, sizeof tgt2) == 0, "mqar seed %d: not deterministic", s);
        for (i = 0; i < P; ++i) {
            const int k = tok[s][2 * i], v = tok[s][2 * i + 1];
            TCHECK(k >= 1 && k <= NK && !seen_key[k], "mqar seed %d: pair %d key %d (a key, distinct)", s, i, k);
            TCHECK(v > NK && v <= NK + NV, "mqar seed %d: pair %d value %d", s, i, v);
            TCHECK(tgt[s][2 * i] < 0 && tgt[s][2 * i + 1] < 0, "mqar seed %d: a target inside the pairs", s);
            if (k >= 1 && k <= NK) seen_key[k] = 1;
        }
        for (t = 2 * P; t < T; ++t) {
            if (tgt[s][t] < 0) { TCHECK(tok[s][t] == 0, "mqar seed %d: position %d neither filler nor query", s, t); continue; }
            ++n_q;
            TCHECK(tok[s][t] >= 1 && tok[s][t] <= NK && seen_key[tok[s][t]] && !asked[tok[s][t]], "mqar seed %d: query %d", s, t);
            for (i = 0; i < P; ++i)     /* the value stored with the queried key */
                if (tok[s][2 * i] == tok[s][t]) TCHECK(tgt[s][t] == tok[s][2 * i + 1], "mqar seed %d: query at %d wants %d, stored %d", s, t, tgt[s][t], tok[s][2 * i + 1]);
            for (i = t; i < T; ++i) answer_after[0] += tok[s][i] == tgt[s][t] && i > t;
            if (tok[s][t] >= 1 && tok[s][t] <= NK) asked[tok[s][t]] = 1;
        }
        TCHECK(n_q == P, "mqar seed %d: %d queries, want %d", s, n_q, P);
    }
    TCHECK(memcmp(tok[0], tok[1], sizeof tok[0]) != 0, "mqar: seeds 0 and 1 give the same sample");
    for (s = 0; s < N; ++s) {                       /* selective copying: 10 data tokens of 6 colours */
        const int ND = 10, NC = 6;
        unsigned long long r = 5000 + s;
        int data[16], nd = 0;
        zt_selcopy(&r, T, ND, NC, tok[s], tgt[s]);
        for (t = 0; t < T - ND - 1; ++t) {
            TCHECK(tgt[s][t] < 0, "selcopy seed %d: a target before the marker", s);
            TCHECK(tok[s][t] == 0 || (tok[s][t] >= 3 && tok[s][t] < 3 + NC), "selcopy seed %d: token %d at %d", s, tok[s][t], t);
            if (tok[s][t] >= 3 && nd < 16) data[nd++] = tok[s][t];
        }
        TCHECK(nd == ND, "selcopy seed %d: %d data tokens, want %d", s, nd, ND);
        TCHECK(tok[s][T - ND - 1] == 1 && tgt[s][T - ND - 1] < 0, "selcopy seed %d: no marker", s);
        for (i = 0; i < ND && i < nd; ++i)
            TCHECK(tok[s][T - ND + i] == 2 && tgt[s][T - ND + i] == data[i], "selcopy seed %d: blank %d", s, i);
    }
    for (s = 0; s < N; ++s) {                       /* induction: 20 tokens */
        const int V = 20;
        unsigned long long r = 9000 + s;
        int first = -1, n_trig = 0, n_tgt = 0;
        zt_induction(&r, T, V, tok[s], tgt[s]);
        for (t = 0; t < T; ++t) {
            TCHECK(tok[s][t] >= 1 && tok[s][t] < V, "induction seed %d: token %d", s, tok[s][t]);
            if (tok[s][t] == 1) { ++n_trig; if (first < 0) first = t; }
            n_tgt += tgt[s][t] >= 0;
        }
        TCHECK(n_trig == 2 && tok[s][T - 1] == 1 && first < T - 2, "induction seed %d: triggers", s);
        TCHECK(n_tgt == 1 && first >= 0 && tgt[s][T - 1] == tok[s][first + 1], "induction seed %d: target", s);
    }
    for (s = 0; s < N; ++s) {                       /* listops: depth <= 4, <= 5 arguments */
        unsigned long long r = 13000 + s;
        int at = 0, md = 0, v, n_tgt = 0;
        zt_listops(&r, T, 4, 5, tok[s], tgt[s]);
        while (at < T - 1 && tok[s][at] == 0) ++at;
        v = lo_parse(tok[s], T - 1, &at, 0, &md);
        for (t = 0; t < T; ++t) n_tgt += tgt[s][t] >= 0;
        TCHECK(v >= 0 && at == T - 1, "listops seed %d: does not parse to position T-1 (%d)", s, at);
        TCHECK(md >= 1 && md <= 4, "listops seed %d: depth %d", s, md);
        TCHECK(tok[s][T - 1] == ZT_LO_EQ && n_tgt == 1 && tgt[s][T - 1] == 1 + v, "listops seed %d: target %d, parsed %d", s, tgt[s][T - 1], v);
        if (v >= 0 && v < 10) classes[v]++;
    }
    printf("listops answers 0..9 over %d samples:", N);
    for (i = 0; i < 10; ++i) { printf(" %d", classes[i]); TCHECK(classes[i] > N / 100, "listops: answer %d drawn %d times", i, classes[i]); }
    printf("\nmqar: %d answers also appear after their query (filler only there: must be 0)\n", answer_after[0]);
    TCHECK(answer_after[0] == 0, "mqar: an answer after its query");
    printf("tasks: %d samples each of mqar, selcopy, induction, listops checked, %d failures\n", N, t_fail);
    return t_fail == 0;
}


static int find_kind(const char *s) {
    int k;
    for (k = 0; k < N_KINDS; ++k) if (strcmp(s, kinds[k].name) == 0) return k;
    return -1;
}

/* is name in the comma-separated list (NULL: every name is)? */
static int in_list(const char *list, const char *name) {
    const size_t len = strlen(name);
    if (!list) return 1;
    while (*list) {
        if (strncmp(list, name, len) == 0 && (list[len] == ',' || list[len] == '\0')) return 1;
        if (!(list = strchr(list, ','))) break;
        ++list;
    }
    return 0;
}

/* ---- --zoo: every mechanism as the token mixer of the same model, on the tasks -------------- */

enum { T_MQAR, T_SELCOPY, T_INDUCTION, T_LISTOPS, T_SONNETS, N_TASKS };
typedef struct {
    const char *name;
    int T, T_eval, V;          /* training length, evaluation length (induction: 2 T), vocabulary */
    int a, b, c;               /* mqar: pairs, keys, values; selcopy: data, colours; induction: -;
                                  listops: depth, arguments */
} zoo_task;

typedef struct {
    int quick, seeds;
    zoo_task task[N_TASKS];
} zoo_scale;

/* the two scales: --quick (make test) and the full one (make zoo-train) */
static zoo_scale zoo_scale_of(int quick, int V_sonnets) {
    zoo_scale z;
    memset(&z, 0, sizeof z);
    z.quick = quick;
    z.seeds = quick ? 1 : 3;
    if (quick) {
        const zoo_task t[N_TASKS] = {
            { "mqar", 64, 64, 1 + 16 + 16, 8, 16, 16 },   { "selcopy", 64, 64, 3 + 8, 8, 8, 0 },
            { "induction", 64, 128, 16, 0, 0, 0 },         { "listops", 64, 64, ZT_LO_V, 3, 4, 0 },
            { "sonnets", 64, 64, V_sonnets, 0, 0, 0 } };
        memcpy(z.task, t, sizeof t);
    } else {
        const zoo_task t[N_TASKS] = {
            { "mqar", 64, 64, 1 + 16 + 16, 8, 16, 16 },    { "selcopy", 256, 256, 3 + 8, 16, 8, 0 },
            { "induction", 64, 128, 16, 0, 0, 0 },         { "listops", 128, 128, ZT_LO_V, 4, 5, 0 },
            { "sonnets", 64, 64, V_sonnets, 0, 0, 0 } };
        memcpy(z.task, t, sizeof t);
    }
    return z;
}

/* B sequences of T tokens of task id into m->tokens / m->targets */
static void task_batch(const zoo_task *t, int id, model *m, const corpus *cp, int B, int T, int valid,
                       unsigned long long *rng) {
    int b;
    if (id == T_SONNETS) { get_batch(m, cp, B, valid ? cp->n_train : 0, valid ? cp->n : cp->n_train, rng); return; }
    for (b = 0; b < B; ++b) {
        int *tok = m->tokens + (size_t)b * T, *tgt = m->targets + (size_t)b * T;
        if (id == T_MQAR) zt_mqar(rng, T, t->a, t->b, t->c, tok, tgt);
        else if (id == T_SELCOPY) zt_selcopy(rng, T, t->a, t->b, tok, tgt);
        else if (id == T_INDUCTION) zt_induction(rng, T, t->V, tok, tgt);
        else zt_listops(rng, T, t->a, t->b, tok, tgt);
    }
}

enum { Z_TRAINED, Z_NO_BACKWARD, Z_NOT_CAUSAL, Z_NOT_RUN };
typedef struct {
    int status;
    double first_loss, last_loss, quality, quality_2x;   /* accuracy (sonnets: validation loss) */
    double train_tps, prefill_tps, gen_tps, secs;
    size_t params, attn_params, bytes;
} zoo_result;

/* accuracy at the targets (sonnets: the mean loss) over eval_batches fixed batches of length T;
   *fwd_s gets the forwards' time */
static double zoo_eval(model *m, const zoo_task *t, int id, const corpus *cp, int T, double *fwd_s) {
    unsigned long long rng = 777;
    double loss = 0, t0;
    long right = 0, total = 0;
    size_t i;
    int e, j;
    *fwd_s = 0;
    for (e = 0; e < m->c.eval_batches; ++e) {
        task_batch(t, id, m, cp, m->c.batch, T, 1, &rng);
        t0 = now_s();
        loss += forward(m, m->c.batch, T, 1);
        *fwd_s += now_s() - t0;
        for (i = 0; i < (size_t)m->c.batch * T; ++i) {
            const float *l = m->logits + i * m->V;
            int best = 0;
            if (m->targets[i] < 0) continue;
            for (j = 1; j < m->V; ++j) if (l[j] > l[best]) best = j;
            right += best == m->targets[i];
            ++total;
        }
    }
    return id == T_SONNETS ? loss / m->c.eval_batches : (double)right / (double)(total ? total : 1);
}

/* one mechanism on one task from one seed: train, then measure */
static zoo_result zoo_run(config c, int kind, const zoo_task *t, int id, const corpus *cp, int seed) {
    zoo_result r;
    model m;
    unsigned long long rng = 0xDA7Aull + 104729ull * (unsigned long long)seed + 7919ull * (unsigned long long)id;
    const int B = c.batch, T = t->T;
    double t0, fwd_s;
    size_t ws = 0, ws2 = 0;
    int step;
    memset(&r, 0, sizeof r);
    if (id == T_SONNETS && !kinds[kind].causal) { r.status = Z_NOT_CAUSAL; return r; }
    c.kind = kind; c.seed = seed; c.ctx = t->T_eval;
    model_init(&m, &c, t->V);
    r.params = m.n_params; r.attn_params = m.attn_params;
    if (kinds[kind].path == P_LAYER) attn_layer_workspace_size(&m.ad, 1, B, T, T, &ws);
    else if (kinds[kind].path == P_BLOCK) ws = block_workspace(&m, B, T);
    else {   /* the larger of the forward's and the backward's workspace queries */
        const attn_desc a = layer_desc(&m, 0, 1);
        const int H = c.heads, dh = c.d / c.heads;
        const attn_tensor x = attn_tensor_dense(m.q, ATTN_F32, B, T, H, dh);
        if (attn_workspace_size(&a, x, x, x, &ws) != ATTN_OK) ws = 0;
        if (attn_backward_workspace_size(&a, x, x, x, &ws2) == ATTN_OK && ws2 > ws) ws = ws2;
    }
    r.bytes = m.bytes + ws;
    t0 = now_s();
    for (step = 0; step < c.steps; ++step) {
        attn_status st;
        double loss;
        task_batch(t, id, &m, cp, B, T, 0, &rng);
        loss = forward(&m, B, T, 1);
        if ((st = backward(&m, B, T)) != ATTN_OK) {
            if (st != ATTN_ERR_KIND_OP) die("the attention backward", st);
            r.status = Z_NO_BACKWARD;
            model_free(&m);
            return r;
        }
        adamw(&m, step + 1, lr_at(&c, step));
        if (kinds[kind].path == P_KIND && m.kd.kind == ATTN_ROUTING) {   /* k-means on the shared QK */
            int l;
            for (l = 0; l < m.L; ++l) {
                const attn_desc a = layer_desc(&m, l, 0);
                const attn_status su = attn_routing_update(&a, attn_tensor_dense(m.q + (size_t)l * B * T * m.d, ATTN_F32, B, T,
                                                           c.heads, c.d / c.heads), 0.9f, (float *)a.routing.centroids);
                if (su != ATTN_OK) die("attn_routing_update", su);
            }
        }
        if (step < 3) r.first_loss += loss / 3;
        if (step >= c.steps - 5) r.last_loss += loss / 5;
    }
    r.secs = now_s() - t0;
    r.train_tps = (double)c.steps * B * T / r.secs;
    r.quality = zoo_eval(&m, t, id, cp, T, &fwd_s);
    r.prefill_tps = (double)c.eval_batches * B * T / fwd_s;
    if (t->T_eval != T) r.quality_2x = zoo_eval(&m, t, id, cp, t->T_eval, &fwd_s);
    if (id == T_SONNETS) {   /* generation: each new token re-runs the window (train.c keeps no cache) */
        int i;
        t0 = now_s();
        for (i = 0; i < 16; ++i) forward(&m, 1, T, 0);
        r.gen_tps = 16 / (now_s() - t0);
    }
    model_free(&m);
    return r;
}

/* the CPU's name (Linux: /proc/cpuinfo's "model name"), for the results file */
static void cpu_name(char *buf, size_t n) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    snprintf(buf, n, "unknown CPU");
    while (f && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(buf, n, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = '\0';
            break;
        }
    }
    if (f) fclose(f);
}

/* the zoo's rows, in the issue's order */
static const char *const zoo_order[] = { "standard", "window", "sinks", "longformer", "bigbird", "lsh", "routing",
    "linear", "cosformer", "performer", "linformer", "nystrom", "optimized", "efficient", "super", "direct",
    "mamba", "rwkv", "s4d" };
#define N_ZOO ((int)(sizeof zoo_order / sizeof zoo_order[0]))
#define ZOO_SEEDS 8

static void mean_sd(const double *x, int n, double *mean, double *sd) {
    double m = 0, v = 0;
    int i;
    for (i = 0; i < n; ++i) m += x[i] / n;
    for (i = 0; i < n; ++i) v += (x[i] - m) * (x[i] - m);
    *mean = m; *sd = n > 1 ? sqrt(v / (n - 1)) : 0;
}

static const char *zoo_label(int k) {   /* the table's name of a mechanism */
    static const char *const label[][2] = { { "standard", "softmax (standard)" }, { "window", "window 16" },
        { "sinks", "window 16 + 4 sinks" }, { "optimized", "optimized layer" }, { "efficient", "efficient layer" },
        { "super", "super layer" }, { "direct", "direct layer" } };
    size_t i;
    for (i = 0; i < sizeof label / sizeof label[0]; ++i) if (strcmp(kinds[k].name, label[i][0]) == 0) return label[i][1];
    return kinds[k].name;
}

/* quality against train tokens/s, one panel per task, one point per trained mechanism */
static void write_zoo_svg(const char *path, zoo_result res[][N_TASKS][ZOO_SEEDS], const int *kid, int n_rows,
                          int n_seeds, const zoo_scale *z) {
    const double pw = 300, ph = 220, gap = 70;
    FILE *f = fopen(path, "w");
    int id, k, s;
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return; }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"9\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", 3 * (pw + gap) + 20, 2 * (ph + gap) + 40);
    fprintf(f, "<text x=\"20\" y=\"20\" font-size=\"13\">train --zoo%s: quality against training speed "
               "(mean of %d seeds; x: train tokens/s, log)</text>\n", z->quick ? " --quick" : "", n_seeds);
    for (id = 0; id < N_TASKS; ++id) {
        const double x0 = 60 + (id % 3) * (pw + gap), y0 = 50 + (id / 3) * (ph + gap);
        double lo = 1e30, hi = 0, qlo = 1e30, qhi = -1e30;   /* speed and quality ranges */
        int i;
        for (k = 0; k < n_rows; ++k) {
            double tps = 0;
            if (res[k][id][0].status != Z_TRAINED) continue;
            for (s = 0; s < n_seeds; ++s) {
                tps += res[k][id][s].train_tps / n_seeds;
                if (res[k][id][s].quality < qlo) qlo = res[k][id][s].quality;
                if (res[k][id][s].quality > qhi) qhi = res[k][id][s].quality;
            }
            if (tps < lo) lo = tps;
            if (tps > hi) hi = tps;
        }
        if (hi <= 0) continue;
        lo = log10(lo) - 0.1; hi = log10(hi) + 0.1;
        if (id == T_SONNETS) { qlo = floor(qlo * 10) / 10; qhi = ceil(qhi * 10) / 10 + 0.05; }
        else { qlo = 0; qhi = 1; }   /* accuracy */
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#999\"/>\n", x0, y0, pw, ph);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%s: %s (T %d)</text>\n", x0, y0 - 6, z->task[id].name,
                id == T_SONNETS ? "validation loss, lower is better" : id == T_INDUCTION ? "accuracy at T" : "accuracy", z->task[id].T);
        for (i = 0; i <= 4; ++i) {
            const double v = qlo + (qhi - qlo) * i / 4, y = y0 + ph * (1 - i / 4.0);
            fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n", x0 - 3, y + 3, v);
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", x0 + pw * i / 4, y0 + ph + 12,
                    pow(10, lo + (hi - lo) * i / 4));
        }
        for (k = 0; k < n_rows; ++k) {
            double tps = 0, q = 0, x, y;
            if (res[k][id][0].status != Z_TRAINED) continue;
            for (s = 0; s < n_seeds; ++s) { tps += res[k][id][s].train_tps / n_seeds; q += res[k][id][s].quality / n_seeds; }
            x = x0 + pw * (log10(tps) - lo) / (hi - lo);
            y = y0 + ph * (1 - (q - qlo) / (qhi - qlo));
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n", x, y,
                    kinds[kid[k]].path == P_LAYER ? "#1f77b4" : "#d62728", x + 4, y + 3, kinds[kid[k]].name);
        }
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

/* a row's status for the table: the first run that says something about the mechanism */
static int zoo_row_status(zoo_result r[][ZOO_SEEDS], int n_seeds) {
    int id, s;
    for (id = 0; id < N_TASKS; ++id)
        for (s = 0; s < n_seeds; ++s)
            if (r[id][s].status == Z_NO_BACKWARD) return r[id][s].status;
    return r[0][0].status;
}

/* prints "mean +- sd" of quality over the seeds, or why there is none */
static void zoo_cell(FILE *f, zoo_result *r, int n_seeds, int second) {
    double x[ZOO_SEEDS], mean, sd;
    int s;
    if (r[0].status == Z_NO_BACKWARD) { fprintf(f, " no backward yet |"); return; }
    if (r[0].status == Z_NOT_CAUSAL) { fprintf(f, " n/a (no causal form) |"); return; }
    if (r[0].status == Z_NOT_RUN) { fprintf(f, " - |"); return; }
    for (s = 0; s < n_seeds; ++s) x[s] = second ? r[s].quality_2x : r[s].quality;
    mean_sd(x, n_seeds, &mean, &sd);
    fprintf(f, " %.3f +- %.3f |", mean, sd);
}

/* Runs every (mechanism, task, seed) of the zoo into res. With --jobs N (POSIX) the runs are
   dealt round-robin to N forked processes, each one thread, which send their results back
   through a pipe: the runs are independent and seeded, so the results are the same as one
   process's, only the tokens/s columns share the machine. */
static void zoo_run_all(config c, const int *kid, int n_rows, const zoo_scale *z, const corpus *cp,
                        zoo_result res[][N_TASKS][ZOO_SEEDS], double t0) {
    const int n_seeds = z->seeds, n_runs = n_rows * N_TASKS * n_seeds;
    int i, jobs = c.jobs < 1 ? 1 : c.jobs;
#if defined(_WIN32)
    jobs = 1;
#endif
    for (i = 0; i < n_runs; ++i) {   /* the runs a filter leaves out */
        const int k = i / (N_TASKS * n_seeds), id = i / n_seeds % N_TASKS, s = i % n_seeds;
        memset(&res[k][id][s], 0, sizeof res[k][id][s]);
        if (!in_list(c.zoo_tasks, z->task[id].name)) res[k][id][s].status = Z_NOT_RUN;
    }
    if (jobs == 1) {
        for (i = 0; i < n_runs; ++i) {
            const int k = i / (N_TASKS * n_seeds), id = i / n_seeds % N_TASKS, s = i % n_seeds;
            if (res[k][id][s].status == Z_NOT_RUN) continue;
            fprintf(stderr, "\r  %-10s %-9s seed %d  (%.0f s so far)   ", kinds[kid[k]].name, z->task[id].name, s + 1, now_s() - t0);
            res[k][id][s] = zoo_run(c, kid[k], &z->task[id], id, cp, s + 1);
        }
        return;
    }
#if !defined(_WIN32)
    {
        int fd[2], j, got = 0;
        struct { int i; zoo_result r; } msg;
        if (pipe(fd) != 0) { perror("pipe"); exit(1); }
        fflush(stdout); fflush(stderr);
        for (j = 0; j < jobs; ++j) {
            const pid_t pid = fork();
            if (pid < 0) { perror("fork"); exit(1); }
            if (pid == 0) {   /* worker j: runs j, j + jobs, ... */
                close(fd[0]);
                for (i = j; i < n_runs; i += jobs) {
                    const int k = i / (N_TASKS * n_seeds), id = i / n_seeds % N_TASKS, s = i % n_seeds;
                    if (res[k][id][s].status == Z_NOT_RUN) continue;
                    msg.i = i;
                    msg.r = zoo_run(c, kid[k], &z->task[id], id, cp, s + 1);
                    if (write(fd[1], &msg, sizeof msg) != (ssize_t)sizeof msg) _exit(1);   /* < PIPE_BUF: atomic */
                }
                _exit(0);
            }
        }
        close(fd[1]);
        while (read(fd[0], &msg, sizeof msg) == (ssize_t)sizeof msg) {
            const int k = msg.i / (N_TASKS * n_seeds), id = msg.i / n_seeds % N_TASKS, s = msg.i % n_seeds;
            res[k][id][s] = msg.r;
            fprintf(stderr, "\r  %d of %d runs (%.0f s so far)   ", ++got, n_runs, now_s() - t0);
        }
        close(fd[0]);
        for (j = 0; j < jobs; ++j) {
            int st = 0;
            if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) { fprintf(stderr, "a --jobs worker failed\n"); exit(1); }
        }
    }
#endif
}

/* The zoo: every mechanism x every task x seeds. Writes PREFIX.md, .csv, .svg. Returns 0, or 1
   when a trained mechanism's training loss did not fall on mqar (last 5 steps' mean above 90%
   of the first 3 steps'): every mechanism should at least learn which tokens answer there. */
static int run_zoo(config c, const corpus *cp, int quick, const char *prefix) {
    static zoo_result res[N_ZOO][N_TASKS][ZOO_SEEDS];
    const zoo_scale z = zoo_scale_of(quick, cp->V);
    const int n_seeds = z.seeds;
    int kid[N_ZOO], k, id, s, bad = 0, pass;
    char path[512];
    FILE *out[2], *csv;
    double t0 = now_s();
    int n_rows = 0;
    for (k = 0; k < N_ZOO; ++k)
        if (in_list(c.compare_kinds, zoo_order[k])) kid[n_rows++] = find_kind(zoo_order[k]);
    if (n_rows == 0) { fprintf(stderr, "--kinds: no zoo mechanism in '%s'\n", c.compare_kinds); return 1; }
    g_threads = c.threads;
    printf("train --zoo%s: %d mechanisms x %d tasks x %d seed%s; %d layers, d %d, %d heads, batch %d, %d steps, "
           "lr %g, %d thread%s, %s kernels\n", quick ? " --quick" : "", n_rows, N_TASKS, n_seeds, n_seeds > 1 ? "s" : "",
           c.layers, c.d, c.heads, c.batch, c.steps, (double)c.lr, c.threads, c.threads == 1 ? "" : "s (0: all cores)",
           attn_kernels());
    zoo_run_all(c, kid, n_rows, &z, cp, res, t0);
    for (k = 0; k < n_rows; ++k) {
        res[k][0][0].status = zoo_row_status(res[k], n_seeds);
        for (id = 0; id < N_TASKS; ++id)   /* no backward: the whole row says so */
            if (res[k][0][0].status == Z_NO_BACKWARD)
                for (s = 0; s < n_seeds; ++s) res[k][id][s].status = res[k][0][0].status;
        fprintf(stderr, "\r%70s\r", "");
        if (res[k][0][0].status == Z_NO_BACKWARD)
            printf("%-4s %-10s %s\n", "-", kinds[kid[k]].name, "no backward yet (attn_backward returns ATTN_ERR_KIND_OP)");
        for (id = 0; id < N_TASKS; ++id) {   /* every trained run's loss: printed; mqar's must fall */
            const zoo_result *r = &res[k][id][0];
            const int fell = r->last_loss < 0.9 * r->first_loss;
            if (r->status != Z_TRAINED) continue;
            printf("%-4s %-10s %-9s loss %.3f -> %.3f, quality %.3f, %.0f train tokens/s\n",
                   id != T_MQAR ? "" : fell ? "ok" : "FAIL", kinds[kid[k]].name, z.task[id].name, r->first_loss,
                   r->last_loss, r->quality, r->train_tps);
            if (id == T_MQAR) bad += !fell;
        }
    }
    snprintf(path, sizeof path, "%s.csv", prefix);
    if ((csv = fopen(path, "w"))) {
        fprintf(csv, "mechanism,task,seed,status,causal,params,attn_params,first_loss,last_loss,quality,quality_2x,"
                     "train_tokens_per_s,prefill_tokens_per_s,gen_tokens_per_s,bytes,seconds\n");
        for (k = 0; k < n_rows; ++k)
            for (id = 0; id < N_TASKS; ++id)
                for (s = 0; s < n_seeds; ++s) {
                    const zoo_result *r = &res[k][id][s];
                    static const char *const st[] = { "trained", "no backward yet", "no causal form", "not run" };
                    if (r->status == Z_NOT_RUN) continue;
                    fprintf(csv, "%s,%s,%d,%s,%d,%zu,%zu,%.5f,%.5f,%.5f,%.5f,%.0f,%.0f,%.1f,%zu,%.2f\n", kinds[kid[k]].name,
                            z.task[id].name, s + 1, st[r->status], kinds[kid[k]].causal, r->params, r->attn_params,
                            r->first_loss, r->last_loss, r->quality, r->quality_2x, r->train_tps, r->prefill_tps,
                            r->gen_tps, r->bytes, r->secs);
                }
        fclose(csv);
    }
    snprintf(path, sizeof path, "%s.md", prefix);
    out[0] = stdout; out[1] = fopen(path, "w");
    for (pass = 0; pass < 2; ++pass) {
        FILE *f = out[pass];
        if (!f) continue;
        if (pass == 1) {
            char cpu[256];
            cpu_name(cpu, sizeof cpu);
            fprintf(f, "# train --zoo%s results (examples/train.c)\n\n", quick ? " --quick" : "");
            fprintf(f, "Machine: %s, %s kernels, %d thread(s) (0: all cores).\n\n", cpu, attn_kernels(), c.threads);
            fprintf(f, "Every mechanism as the token mixer of the same model: token + position embeddings, %d pre-norm "
                       "blocks (layer norm, mixer, residual; layer norm, GELU MLP %d, residual), d %d, %d heads, AdamW "
                       "(lr %g, warmup 10%%, cosine to 10%%, weight decay %g), %d steps of %d sequences, seeds 1-%d, one thread per run, %d run(s) at a time "
                       "(a seed gives every mechanism the same batches: the paired column is mechanism - softmax, seed "
                       "by seed). Causal where the mechanism has a causal form; BigBird, Linformer and Nystromformer run "
                       "bidirectionally (every task's answer lies before it, so they cannot see it; the sonnets LM "
                       "would leak, so they skip it). %.0f s in all.\n\n",
                    c.layers, 4 * c.d, c.d, c.heads, (double)c.lr, (double)c.wd, c.steps, c.batch, n_seeds, c.jobs < 1 ? 1 : c.jobs,
                    now_s() - t0);
            fprintf(f, "Tasks (examples/zoo_tasks.h): mqar %d pairs of %d keys / %d values at T %d; selcopy %d data tokens "
                       "of %d colours at T %d; induction at T %d (vocabulary %d), evaluated at T and %d; listops depth <= %d, "
                       "<= %d arguments, T %d; sonnets: next character, T %d. Quality: accuracy at the answer positions "
                       "(%d fixed batches), sonnets: validation loss (nats/char).\n\n",
                    z.task[0].a, z.task[0].b, z.task[0].c, z.task[0].T, z.task[1].a, z.task[1].b, z.task[1].T,
                    z.task[2].T, z.task[2].V, z.task[2].T_eval, z.task[3].a, z.task[3].b, z.task[3].T, z.task[4].T,
                    c.eval_batches);
        }
        fprintf(f, "\n| mechanism | form | params / mixer | mqar | selcopy | induction (T) | induction (2T) | listops | sonnets loss | train tok/s | prefill tok/s | gen tok/s | memory MiB |\n");
        fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (k = 0; k < n_rows; ++k) {
            int ref = 0;   /* speed and memory: mqar, or the first task that ran */
            const zoo_result *m0, *so = &res[k][T_SONNETS][0];
            double tps = 0, pre = 0, gen = 0;
            while (ref < N_TASKS - 1 && res[k][ref][0].status != Z_TRAINED) ++ref;
            m0 = &res[k][ref][0];
            fprintf(f, "| %s | %s |", zoo_label(kid[k]), kinds[kid[k]].path == P_BLOCK ? "recurrent" : kinds[kid[k]].causal ? "causal" : "bidir.");
            if (res[k][0][0].status == Z_NO_BACKWARD) {
                fprintf(f, " - | %s |||||| - | - | - | - |\n", "no backward yet (attn_backward: ATTN_ERR_KIND_OP)");
                continue;
            }
            fprintf(f, " %zu |", m0->attn_params);
            zoo_cell(f, res[k][T_MQAR], n_seeds, 0); zoo_cell(f, res[k][T_SELCOPY], n_seeds, 0);
            zoo_cell(f, res[k][T_INDUCTION], n_seeds, 0); zoo_cell(f, res[k][T_INDUCTION], n_seeds, 1);
            zoo_cell(f, res[k][T_LISTOPS], n_seeds, 0); zoo_cell(f, res[k][T_SONNETS], n_seeds, 0);
            for (s = 0; s < n_seeds; ++s) {
                tps += res[k][ref][s].train_tps / n_seeds; pre += res[k][ref][s].prefill_tps / n_seeds;
                gen += so->status == Z_TRAINED ? res[k][T_SONNETS][s].gen_tps / n_seeds : 0;
            }
            fprintf(f, " %.0f | %.0f | ", tps, pre);
            if (gen > 0) fprintf(f, "%.0f", gen); else fprintf(f, "-");
            fprintf(f, " | %.1f |\n", (double)m0->bytes / 1048576.0);
        }
        if (n_seeds > 1 && kid[0] == find_kind("standard")) {   /* paired against softmax */
            fprintf(f, "\nPaired against softmax (mechanism - softmax per seed, mean +- sd; accuracy, sonnets: loss):\n\n");
            fprintf(f, "| mechanism | mqar | selcopy | induction (T) | induction (2T) | listops | sonnets loss |\n|---|---|---|---|---|---|---|\n");
            for (k = 1; k < n_rows; ++k) {
                if (res[k][0][0].status == Z_NO_BACKWARD) continue;
                fprintf(f, "| %s |", zoo_label(kid[k]));
                for (id = 0; id <= N_TASKS; ++id) {
                    const int tid = id <= T_INDUCTION ? id : id - 1, second = id == T_INDUCTION + 1;
                    double x[ZOO_SEEDS], mean, sd;
                    if (res[k][tid][0].status != Z_TRAINED || res[0][tid][0].status != Z_TRAINED) { fprintf(f, " - |"); continue; }
                    for (s = 0; s < n_seeds; ++s)
                        x[s] = second ? res[k][tid][s].quality_2x - res[0][tid][s].quality_2x : res[k][tid][s].quality - res[0][tid][s].quality;
                    mean_sd(x, n_seeds, &mean, &sd);
                    fprintf(f, " %+.3f +- %.3f |", mean, sd);
                }
                fprintf(f, "\n");
            }
        }
        if (pass == 1)
            fprintf(f, "\nColumns: params / mixer = the token mixer's parameters in one layer (projections, biases, and "
                       "the kind's own: Super's W^A, Direct's W_D, Linformer's E and F; the recurrent blocks' conv, SSM, decay and "
                       "norm parameters); train tok/s and prefill tok/s (the "
                       "evaluation's forwards) on mqar; gen tok/s: sonnets, one token per forward over the window (no "
                       "cache); memory: what the run allocates (parameters, gradients, Adam moments, the activations of a "
                       "step) plus the larger of the mechanism's forward and backward workspace queries, on mqar.\n");
    }
    if (out[1]) fclose(out[1]);
    snprintf(path, sizeof path, "%s.svg", prefix);
    write_zoo_svg(path, res, kid, n_rows, n_seeds, &z);
    printf("\nwrote %s.md, .csv and .svg (%.0f s in all); %d trained mechanism(s) whose mqar loss did not fall\n", prefix,
           now_s() - t0, bad);
    return bad ? 1 : 0;
}

/* ---- main ------------------------------------------------------------------------------------ */


int main(int argc, char **argv) {
    config c;
    corpus cp;
    int i, mode = 0, ok = 1, quick = 0;   /* mode: 0 train, 1 check, 2 test, 3 compare, 4 zoo */
    memset(&c, 0, sizeof c);
    c.kind = 0; c.layers = 2; c.d = 64; c.heads = 4; c.ctx = 64; c.batch = 16; c.steps = 600; c.eval_every = 100;
    c.eval_batches = 8; c.sample = 400; c.seed = 1; c.lr = 3e-3f; c.wd = 0.05f; c.csv = "train_loss.csv";
    c.data = "examples/data/sonnets.txt"; c.out = "examples/train_compare";
    for (i = 1; i < argc; ++i) {   /* --zoo's own defaults, which the options below may still change */
        if (strcmp(argv[i], "--zoo") == 0) mode = 4;
        if (strcmp(argv[i], "--quick") == 0) quick = 1;
    }
    if (mode == 4) {
        c.layers = 2; c.threads = 1; c.lr = 3e-3f;
        if (quick) { c.d = 32; c.heads = 2; c.batch = 8; c.steps = 40; c.eval_batches = 4; c.out = "build/zoo_train_quick"; }
        else { c.d = 32; c.heads = 2; c.batch = 8; c.steps = 400; c.eval_batches = 16; c.out = "examples/zoo_train"; }
    }
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check") == 0) mode = 1;
        else if (strcmp(a, "--test") == 0) mode = 2;
        else if (strcmp(a, "--compare") == 0) mode = 3;
        else if (strcmp(a, "--tasks-check") == 0) return run_tasks_check() ? 0 : 1;
        else if (strcmp(a, "--zoo") == 0 || strcmp(a, "--quick") == 0) continue;
        else if (!v) { fprintf(stderr, "%s: missing value (see the comment at the top of examples/train.c)\n", a); return 2; }
        else {
            ++i;
            if (strcmp(a, "--attn") == 0) {
                if ((c.kind = find_kind(v)) >= 0 && !kinds[c.kind].causal) {
                    fprintf(stderr, "%s: %s\n", v, "no causal form: it would see the next character (it runs in --zoo's tasks)");
                    return 2;
                }
                if (c.kind < 0) {
                    int k;
                    fprintf(stderr, "unknown attention '%s'; one of:", v);
                    for (k = 0; k < N_KINDS; ++k) fprintf(stderr, " %s", kinds[k].name);
                    fprintf(stderr, "\n");
                    return 2;
                }
            } else if (strcmp(a, "--steps") == 0) c.steps = atoi(v);
            else if (strcmp(a, "--layers") == 0) c.layers = atoi(v);
            else if (strcmp(a, "--d") == 0) c.d = atoi(v);
            else if (strcmp(a, "--heads") == 0) c.heads = atoi(v);
            else if (strcmp(a, "--ctx") == 0) c.ctx = atoi(v);
            else if (strcmp(a, "--batch") == 0) c.batch = atoi(v);
            else if (strcmp(a, "--lr") == 0) c.lr = (float)atof(v);
            else if (strcmp(a, "--seed") == 0) c.seed = atoi(v);
            else if (strcmp(a, "--eval-every") == 0) c.eval_every = atoi(v);
            else if (strcmp(a, "--csv") == 0) c.csv = v;
            else if (strcmp(a, "--sample") == 0) c.sample = atoi(v);
            else if (strcmp(a, "--data") == 0) c.data = v;
            else if (strcmp(a, "--kinds") == 0) c.compare_kinds = v;
            else if (strcmp(a, "--out") == 0) c.out = v;
            else if (strcmp(a, "--threads") == 0) c.threads = atoi(v);
            else if (strcmp(a, "--jobs") == 0) c.jobs = atoi(v);
            else if (strcmp(a, "--tasks") == 0) c.zoo_tasks = v;
            else { fprintf(stderr, "unknown option %s\n", a); return 2; }
        }
    }
    if (c.layers < 1 || c.layers > 16 || c.d < 1 || c.heads < 1 || c.d % c.heads || c.ctx < 2 || c.batch < 1 ||
        c.steps < 1 || c.eval_every < 1 || !(c.lr > 0) || c.threads < 0 || c.jobs < 0 || c.jobs > 64) {
        fprintf(stderr, "bad sizes: layers 1..16, heads dividing d, ctx >= 2, steps, batch, eval-every >= 1, lr > 0\n");
        return 2;
    }
    if (!load_corpus(c.data, &cp)) return 2;
    if (mode == 1) ok = run_check(&cp);
    else if (mode == 2) {
        /* a tiny model, 30 steps, every kind: the mean loss of the last 3 steps must be below
           90% of the first 3 (ln(vocabulary) at the start) */
        int k;
        c.layers = 1; c.d = 32; c.heads = 2; c.ctx = 32; c.batch = 4; c.steps = 30; c.eval_every = 30;
        c.eval_batches = 2; c.quiet = 1; c.csv = NULL; c.lr = 1e-2f;
        for (k = 0; k < N_LAYER_KINDS; ++k) {
            run_result r;
            int fell;
            c.kind = k;
            r = train(&c, &cp, 0);
            fell = r.last_loss < 0.9 * r.first_loss;
            printf("%-4s %-10s loss %.3f -> %.3f over 30 steps (val %.3f), %.0f tokens/s\n", fell ? "ok" : "FAIL",
                   kinds[k].name, r.first_loss, r.last_loss, r.final_val, r.tok_per_s);
            ok &= fell;
        }
    } else if (mode == 3) {
        ok = run_compare(c, &cp, 3) == 0;
    } else if (mode == 4) {
        ok = run_zoo(c, &cp, quick, c.out) == 0;
    } else {
        config run = c;
        run_result r;
        printf("%d characters (%d train, %d validation), vocabulary %d, %s kernels\n", cp.n, cp.n_train,
               cp.n - cp.n_train, cp.V, attn_kernels());
        r = train(&run, &cp, 1);
        printf("final validation loss %.3f (%.2f bits/char) after %d steps, %.0f tokens/s\n", r.final_val,
               r.final_val / log(2.0), c.steps, r.tok_per_s);
    }
    free(cp.ids);
    return ok ? 0 : 1;
}
