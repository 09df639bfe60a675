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
           build/train --compare [--kinds a,b,..] [--out PREFIX]
                                    every kind (or those listed) for the same budget over 3 seeds
                                    (make train-compare): a table, PREFIX.csv and PREFIX.svg
                                    (default examples/train_compare) */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- configuration ------------------------------------------------------------------------ */

typedef struct {
    int kind;                  /* index into kinds[] */
    int layers, d, heads, ctx, batch, steps, eval_every, eval_batches, sample, seed, quiet;
    float lr, wd;
    const char *csv, *data;
    const char *compare_kinds, *out;   /* --compare: comma-separated kinds (NULL: all), file prefix */
} config;

typedef struct {
    const char *name;
    attn_layer_kind layer;
    int window, sinks;         /* window: tokens a query sees (itself included); 0 = all */
} kind_info;

static const kind_info kinds[] = {
    { "standard", ATTN_LAYER_STANDARD, 0, 0 },   { "optimized", ATTN_LAYER_OPTIMIZED, 0, 0 },
    { "efficient", ATTN_LAYER_EFFICIENT, 0, 0 }, { "super", ATTN_LAYER_SUPER, 0, 0 },
    { "direct", ATTN_LAYER_DIRECT, 0, 0 },       { "window", ATTN_LAYER_STANDARD, 16, 0 },
    { "sinks", ATTN_LAYER_STANDARD, 16, 4 },
};
#define N_KINDS ((int)(sizeof kinds / sizeof kinds[0]))

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

static void die(const char *what, attn_status st) {
    fprintf(stderr, "%s: %s\n", what, attn_status_str(st));
    exit(2);
}

/* C = op(A) op(B) (+ C when acc): row-major, through the library's GEMM */
static void mm(int ta, int tb, int m, int n, int k, const float *A, const float *B, float *C, int acc) {
    attn_status st = attn_sgemm(ta, tb, m, n, k, 1.0f, A, ta ? m : k, B, tb ? k : n, acc ? 1.0f : 0.0f, C, n, 0);
    if (st != ATTN_OK) die("attn_sgemm", st);
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

/* mean cross-entropy of softmax(logits) against targets; dlogits (if not NULL) = dL/dlogits */
static double cross_entropy(int n, int V, const float *logits, const int *targets, float *dlogits) {
    double total = 0;
    int i, j;
    for (i = 0; i < n; ++i) {
        const float *l = logits + (size_t)i * V;
        float mx = l[0];
        double s = 0;
        for (j = 1; j < V; ++j) if (l[j] > mx) mx = l[j];
        for (j = 0; j < V; ++j) s += exp((double)(l[j] - mx));
        total += log(s) + mx - l[targets[i]];
        if (dlogits)
            for (j = 0; j < V; ++j)
                dlogits[(size_t)i * V + j] = (float)((exp((double)(l[j] - mx)) / s - (j == targets[i])) / n);
    }
    return total / n;
}

/* ---- the model: parameters live in one array (weights P, gradients G, Adam moments M, S) ---- */

#define NONE ((size_t)-1)
typedef struct {
    size_t ln1g, ln1b, wq, bq, wk, bk, wv, bv, wo, bo, wa, ba, wd, ln2g, ln2b, w1, b1, w2, b2;
} layer_params;

typedef struct {
    config c;
    int V, T, d, f, L;
    attn_layer_desc ad;
    size_t n_params, tok, pos, lnfg, lnfb, wout, bout;
    layer_params lp[16];
    float *P, *G, *M, *S;
    unsigned char *decay;      /* per parameter: 1 = weight decay (matrices) */
    /* activations of one step, N = batch * T rows */
    float *x, *ln1, *mean1, *rstd1, *att, *xm, *ln2, *mean2, *rstd2, *pre, *act, *lnf, *meanf, *rstdf, *logits;
    float *dx, *dxm, *dtmp, *dpre, *dlogits, *dlnf;
    int *tokens, *targets;
} model;

static size_t take(model *m, size_t n) {
    const size_t off = m->n_params;
    m->n_params += n;
    return off;
}

/* size the parameter array: every field of a layer this kind reads, NONE for the others */
static void model_layout(model *m) {
    const attn_layer_kind k = kinds[m->c.kind].layer;
    const int d = m->d, f = m->f, V = m->V, T = m->T;
    int l;
    m->n_params = 0;
    m->tok = take(m, (size_t)V * d);
    m->pos = take(m, (size_t)T * d);
    for (l = 0; l < m->L; ++l) {
        layer_params *p = &m->lp[l];
        p->ln1g = take(m, d); p->ln1b = take(m, d);
        p->wq = p->bq = p->wk = p->bk = p->wv = p->bv = p->wa = p->ba = p->wd = NONE;
        if (k != ATTN_LAYER_DIRECT) { p->wq = take(m, (size_t)d * d); p->bq = take(m, d); }
        if (k == ATTN_LAYER_STANDARD || k == ATTN_LAYER_OPTIMIZED) { p->wk = take(m, (size_t)d * d); p->bk = take(m, d); }
        if (k == ATTN_LAYER_STANDARD || k == ATTN_LAYER_DIRECT) { p->wv = take(m, (size_t)d * d); p->bv = take(m, d); }
        p->wo = take(m, (size_t)d * d); p->bo = take(m, d);
        if (k == ATTN_LAYER_SUPER) { p->wa = take(m, (size_t)T * T); p->ba = take(m, T); }
        if (k == ATTN_LAYER_DIRECT) p->wd = take(m, (size_t)T * T);
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

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) { fprintf(stderr, "out of memory\n"); exit(2); }
    return p;
}

static void model_init(model *m, const config *c, int V) {
    const size_t N = (size_t)c->batch * c->ctx;
    unsigned long long rng = 0x5EEDull + 7919ull * (unsigned long long)c->seed;
    const float s_in = 1.0f / sqrtf((float)c->d), s_res = s_in / sqrtf(2.0f * (float)c->layers);
    int l, t;
    memset(m, 0, sizeof *m);
    m->c = *c; m->V = V; m->T = c->ctx; m->d = c->d; m->f = 4 * c->d; m->L = c->layers;
    m->ad.kind = kinds[c->kind].layer;
    m->ad.d_model = c->d; m->ad.heads = c->heads; m->ad.context = c->ctx;
    m->ad.attn.causal = 1;
    if (kinds[c->kind].window) m->ad.attn.window_left = kinds[c->kind].window - 1;
    m->ad.attn.sink_tokens = kinds[c->kind].sinks;
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
        fill(m->P + p->wo, (size_t)m->d * m->d, s_res, 0, &rng);
        /* Super's alignment W^A starts as the identity (Super = Efficient at step 0);
           Direct's map W_D starts at zero (uniform attention over the causal prefix) */
        if (p->wa != NONE) for (t = 0; t < m->T; ++t) m->P[p->wa + (size_t)t * m->T + t] = 1.0f;
        fill(m->P + p->w1, (size_t)m->d * m->f, s_in, 0, &rng);
        fill(m->P + p->w2, (size_t)m->f * m->d, s_res / 2, 0, &rng);
        mark_decay(m, p->wq, (size_t)m->d * m->d); mark_decay(m, p->wk, (size_t)m->d * m->d);
        mark_decay(m, p->wv, (size_t)m->d * m->d); mark_decay(m, p->wo, (size_t)m->d * m->d);
        mark_decay(m, p->wa, (size_t)m->T * m->T); mark_decay(m, p->wd, (size_t)m->T * m->T);
        mark_decay(m, p->w1, (size_t)m->d * m->f); mark_decay(m, p->w2, (size_t)m->d * m->f);
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
}

static void model_free(model *m) {
    free(m->P); free(m->G); free(m->M); free(m->S); free(m->decay);
    free(m->x); free(m->ln1); free(m->att); free(m->xm); free(m->ln2); free(m->mean1); free(m->rstd1);
    free(m->mean2); free(m->rstd2); free(m->pre); free(m->act); free(m->lnf); free(m->meanf); free(m->rstdf);
    free(m->logits); free(m->dlogits); free(m->dx); free(m->dxm); free(m->dtmp); free(m->dlnf); free(m->dpre);
    free(m->tokens); free(m->targets);
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
        const attn_layer_weights w = layer_weights(m, l);
        float *x = m->x + l * Nd, *xn = m->x + (l + 1) * Nd, *xm = m->xm + l * Nd, *att = m->att + l * Nd;
        attn_status st;
        layernorm_fwd((int)N, d, x, P + p->ln1g, P + p->ln1b, m->ln1 + l * Nd, m->mean1 + l * N, m->rstd1 + l * N);
        st = attn_layer_forward(&m->ad, &w, B, T, T, m->ln1 + l * Nd, NULL, att);
        if (st != ATTN_OK) die("attn_layer_forward", st);
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

/* Backward of the last forward (with loss): fills m->G */
static void backward(model *m, int B, int T) {
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
        const attn_layer_weights w = layer_weights(m, l);
        const attn_layer_grads g = layer_grads(m, l);
        attn_status st;
        /* x_{l+1} = xm + mlp(ln2(xm)): dx flows to xm directly and through the MLP */
        mlp_bwd((int)N, d, f, m->ln2 + l * Nd, P + p->w1, P + p->w2, m->pre + l * N * f, m->act + l * N * f, m->dx,
                m->dtmp, G + p->w1, G + p->b1, G + p->w2, G + p->b2, m->dpre);
        memcpy(m->dxm, m->dx, Nd * 4);
        layernorm_bwd((int)N, d, m->xm + l * Nd, P + p->ln2g, m->mean2 + l * N, m->rstd2 + l * N, m->dtmp, m->dxm,
                      G + p->ln2g, G + p->ln2b);
        /* xm = x + attn(ln1(x)): the library's layer backward gives d ln1 and the weight grads */
        st = attn_layer_backward(&m->ad, &w, B, T, T, m->ln1 + l * Nd, NULL, m->dxm, m->dtmp, NULL, &g);
        if (st != ATTN_OK) die("attn_layer_backward", st);
        memcpy(m->dx, m->dxm, Nd * 4);
        layernorm_bwd((int)N, d, m->x + l * Nd, P + p->ln1g, m->mean1 + l * N, m->rstd1 + l * N, m->dtmp, m->dx,
                      G + p->ln1g, G + p->ln1b);
    }
    for (i = 0; i < N; ++i)
        for (j = 0; j < d; ++j) {
            G[m->tok + (size_t)m->tokens[i] * d + j] += m->dx[i * d + j];
            G[m->pos + (i % T) * d + j] += m->dx[i * d + j];
        }
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
    if (attn_layer_param_count(&m.ad, &r.attn_params) != ATTN_OK) r.attn_params = 0;
    if (!c->quiet)
        printf("attention %s: %d layers, d %d, %d heads, context %d, batch %d: %zu parameters (%zu per attention layer)\n",
               kinds[c->kind].name, c->layers, c->d, c->heads, c->ctx, c->batch, m.n_params, r.attn_params);
    if (c->csv && !(csv = fopen(c->csv, "w"))) fprintf(stderr, "cannot write %s\n", c->csv);
    if (csv) fprintf(csv, "step,train_loss,val_loss,tokens_per_s,seconds\n");
    for (step = 0; step < c->steps; ++step) {
        double vl = -1;
        get_batch(&m, cp, c->batch, 0, cp->n_train, &rng);
        loss = forward(&m, c->batch, m.T, 1);
        backward(&m, c->batch, m.T);
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
static void check_close(const char *what, double analytic, double numeric) {
    const double err = fabs(analytic - numeric), tol = 2e-3 + 2e-2 * fabs(numeric);
    ++g_checked;
    if (!(err <= tol)) {
        ++g_fails;
        printf("  FAIL %-28s analytic %+.6e numeric %+.6e\n", what, analytic, numeric);
    }
}

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
       every attention kind: 2 layers, d 16, 2 heads, context 8, batch 2; 40 parameters each */
    for (k = 0; k < N_KINDS; ++k) {
        config c;
        model m;
        unsigned long long r2 = 7;
        const int before = g_checked;
        memset(&c, 0, sizeof c);
        c.kind = k; c.layers = 2; c.d = 16; c.heads = 2; c.ctx = 8; c.batch = 2; c.seed = 3; c.wd = 0;
        eps = 1e-3f;
        model_init(&m, &c, cp->V);
        for (i = 0; i < (int)m.n_params; ++i) m.P[i] += 0.05f * gauss(&r2);   /* off the symmetric start */
        get_batch(&m, cp, c.batch, 0, cp->n_train, &r2);
        forward(&m, c.batch, c.ctx, 1);
        backward(&m, c.batch, c.ctx);
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
        printf("whole model, attention %-9s: %d parameters checked\n", kinds[k].name, g_checked - before);
        model_free(&m);
    }
    printf("%d gradients checked, %d outside tolerance (|a - n| <= 2e-3 + 2e-2 |n|)\n", g_checked, g_fails);
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
    for (k = 0; k < N_KINDS; ++k) {
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

/* ---- main ------------------------------------------------------------------------------------ */

static int find_kind(const char *s) {
    int k;
    for (k = 0; k < N_KINDS; ++k) if (strcmp(s, kinds[k].name) == 0) return k;
    return -1;
}

int main(int argc, char **argv) {
    config c;
    corpus cp;
    int i, mode = 0, ok = 1;   /* mode: 0 train, 1 check, 2 test, 3 compare */
    memset(&c, 0, sizeof c);
    c.kind = 0; c.layers = 2; c.d = 64; c.heads = 4; c.ctx = 64; c.batch = 16; c.steps = 600; c.eval_every = 100;
    c.eval_batches = 8; c.sample = 400; c.seed = 1; c.lr = 3e-3f; c.wd = 0.05f; c.csv = "train_loss.csv";
    c.data = "examples/data/sonnets.txt"; c.out = "examples/train_compare";
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--check") == 0) mode = 1;
        else if (strcmp(a, "--test") == 0) mode = 2;
        else if (strcmp(a, "--compare") == 0) mode = 3;
        else if (!v) { fprintf(stderr, "%s: missing value (see the comment at the top of examples/train.c)\n", a); return 2; }
        else {
            ++i;
            if (strcmp(a, "--attn") == 0) {
                if ((c.kind = find_kind(v)) < 0) {
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
            else { fprintf(stderr, "unknown option %s\n", a); return 2; }
        }
    }
    if (c.layers < 1 || c.layers > 16 || c.d < 1 || c.heads < 1 || c.d % c.heads || c.ctx < 2 || c.batch < 1 ||
        c.steps < 1 || c.eval_every < 1 || !(c.lr > 0)) {
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
        for (k = 0; k < N_KINDS; ++k) {
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
