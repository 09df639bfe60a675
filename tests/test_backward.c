/* tests/test_backward.c - attn_backward (exact attention gradients), attention dropout in
   attn_forward and attn_backward, attn_backward_workspace_size.

   The reference is tests/ref_backward.h (double precision, materialised P rows, its own
   re-implementation of the documented dropout hash); the reference itself is checked against
   central finite differences of its own forward, in double, on small shapes for every mask
   family (fd_checks), so library == reference == the true gradient.

   TOLERANCES (q/k/v/dout stored as f16/bf16 are rounded before the reference reads them):
     dq, dk, dv, dbias:  max |got - ref| <= (TOL_GRAD + r(grad dtype)) * max(1, max |ref|) over the
                         whole tensor; r(f32) = 0, r(f16) = 2^-10, r(bf16) = 2^-7. attn_backward
                         takes rowsum(dout * out) from the out it is given (FlashAttention-2's D):
                         with out stored as f16/bf16 the reference does the same (ostore)
     forward with dropout: out as test_exact (TOL_OUT per row max), lse unchanged by dropout
     finite differences (double): |ref - fd| <= 1e-6 * max(1, max |ref|)
   Properties: GQA == MHA with repeated K/V heads (dk, dv summed per group) and MQA == stride-0
   K/V; dropout_p = 0 == no dropout (bitwise, any seed); dropout reaches the forward (different
   seeds differ, keep rate ~ 1 - p); bitwise identical results for any n_threads, the parallel
   hook and a caller workspace; a second call overwrites (does not accumulate).
   Error paths: every attn_backward status code, exact code, message names the field, outputs
   (dq, dk, dv, dbias) untouched. */
#include "test.h"
#include "ref.h"
#include "ref_backward.h"

#define TOL_GRAD 1e-4
#define TOL_FWD 1e-5
#define TOL_FD 1e-6

/* ---------------------------------------------------------------------------------------- */
/* Tensors                                                                                   */
/* ---------------------------------------------------------------------------------------- */

enum { BL_DENSE, BL_BHSD, BL_PADDED, BL_SEQMAJOR, BL_COUNT, BL_BCAST_HEADS = BL_COUNT };
#define B_OUT_SEED 0x3Cu

typedef struct { attn_tensor t; void *buf; size_t n; int is_out; } bt;

static bt bt_new(attn_dtype dt, int B, int S, int H, int D, int layout, t_rng *r, int is_out) {
    bt x;
    attn_tensor t;
    memset(&x, 0, sizeof x);
    memset(&t, 0, sizeof t);
    t.dtype = dt; t.batch = B; t.seq = S; t.heads = H; t.dim = D;
    if (layout == BL_DENSE) { t.stride_head = D; t.stride_seq = (ptrdiff_t)H * D; t.stride_batch = (ptrdiff_t)S * H * D; }
    else if (layout == BL_BHSD) { t.stride_head = (ptrdiff_t)S * D; t.stride_seq = D; t.stride_batch = (ptrdiff_t)H * S * D; }
    else if (layout == BL_PADDED) {
        t.stride_head = D + t_irange(r, 1, 3); t.stride_seq = H * t.stride_head + t_irange(r, 0, 2);
        t.stride_batch = S * t.stride_seq + t_irange(r, 0, 3);
    } else if (layout == BL_SEQMAJOR) { t.stride_head = D; t.stride_batch = (ptrdiff_t)H * D; t.stride_seq = (ptrdiff_t)B * H * D; }
    else if (layout == BL_BCAST_HEADS) {     /* inputs only: every head reads head 0 */
        t.stride_head = 0; t.stride_seq = D + t_irange(r, 0, 2); t.stride_batch = S * t.stride_seq + 1;
    }
    x.n = t_extent(&t);
    x.buf = t_xmalloc(x.n * t_dt_size(dt));
    x.is_out = is_out;
    if (is_out) t_sentinel(x.buf, x.n * t_dt_size(dt), B_OUT_SEED);
    else t_fill_nan(x.buf, dt, x.n);
    x.t = t; x.t.data = x.buf;
    return x;
}
static void bt_free(bt *x) { free(x->buf); x->buf = NULL; }

static int bt_gaps_ok(const bt *x) { return t_gaps_ok(&x->t, x->buf, x->n, B_OUT_SEED); }

/* dense double copy [B][S][H][D] of a view */
static double *bt_dense(const attn_tensor *t) {
    double *a = (double *)t_xmalloc(sizeof(double) * (size_t)t->batch * t->seq * t->heads * t->dim);
    t_read(t, a);
    return a;
}
static size_t bt_count(const attn_tensor *t) { return (size_t)t->batch * t->seq * t->heads * t->dim; }

/* the bias as a dense double [Bb][Hb][Sq][Sk] */
static double *bias_dense(const attn_bias *bs, int Sq, int Sk) {
    double *a = (double *)t_xmalloc(sizeof(double) * (size_t)bs->batch * bs->heads * Sq * Sk);
    int b, h, i, j;
    size_t n = 0;
    for (b = 0; b < bs->batch; ++b)
        for (h = 0; h < bs->heads; ++h)
            for (i = 0; i < Sq; ++i)
                for (j = 0; j < Sk; ++j) a[n++] = ref_bias(bs, Sq, Sk, b, h, i, j);
    return a;
}
/* dbias written by the library (bias's shape and strides) as dense double */
static double *dbias_dense(const attn_bias *bs, const float *db, int Sq, int Sk) {
    attn_bias t = *bs;
    t.data = db;
    return bias_dense(&t, Sq, Sk);
}

/* ---------------------------------------------------------------------------------------- */
/* One checked forward + backward                                                            */
/* ---------------------------------------------------------------------------------------- */

static double g_worst = 0.0;
static char g_worst_tag[200];

static char g_ctx[600];
static const char *ctx_str(const char *tag, const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                           const attn_tensor *v, attn_dtype odt, attn_dtype gdt) {
    snprintf(g_ctx, sizeof g_ctx,
             "%s: q[%d,%d,%d,%d] k[%d,%d,%d,%d] Dv=%d %s out %s grads %s | causal=%d wl=%d wr=%d dil=%d sink=%d glob=%d "
             "softcap=%g scale=%g alibi=%d bias=%d(%dx%d) dbias=%d sql=%d skl=%d varlen=%d drop=%g seed=%llu thr=%d",
             tag, q->batch, q->seq, q->heads, q->dim, k->batch, k->seq, k->heads, k->dim, v->dim, t_dt_name(q->dtype),
             t_dt_name(odt), t_dt_name(gdt), d->causal, d->window_left, d->window_right, d->dilation, d->sink_tokens,
             d->global_tokens, (double)d->softcap, (double)d->scale, d->alibi_slopes != NULL, d->bias.data != NULL,
             d->bias.batch, d->bias.heads, d->dbias != NULL, d->seqlens_q != NULL, d->seqlens_k != NULL, d->varlen_batch,
             (double)d->dropout_p, d->dropout_seed, d->n_threads);
    return g_ctx;
}

static int cmp_grad(const char *name, const char *ctx, const double *ref, const double *got, size_t n, double tol) {
    const double e = t_max_norm_err(ref, got, n);
    if (tol > 0 && e / tol > g_worst && e <= tol) { g_worst = e / tol; snprintf(g_worst_tag, sizeof g_worst_tag, "%s %.150s", name, ctx); }
    return T_CHECK(e <= tol, "%s: %s error %.3g > tol %.3g", ctx, name, e, tol);
}

/* Runs attn_forward then attn_backward (fresh, sentinel-filled outputs) and checks out (with
   dropout), dq, dk, dv, dbias against the reference. Layouts: lq/lk/lv/lo/ld for q,k,v,out/dout
   and lg for the gradients. */
typedef struct {
    attn_dtype dt, odt, gdt;
    int q_own; attn_dtype qdt;     /* q_own: q has its own dtype qdt (mixed with K/V's dt) */
    int B, Sq, Sk, Hq, Hkv, D, Dv;
    int lq, lk, lv, lo, lg;
    int ldo;                /* dout's layout when not lo's (0: lo's) */
} bcase;

static void run_case(const char *tag, const attn_desc *d0, const bcase *c, t_rng *r) {
    attn_desc d = *d0;
    /* the forward on the fp32 kernels: the bf16 tile kernels round P to bf16 (test_amx.c holds
       them to their own tolerance), this reference checks out and the gradients to fp32 accuracy */
    d.bf16_kernels = 2;
    bt q = bt_new(c->q_own ? c->qdt : c->dt, c->B, c->Sq, c->Hq, c->D, c->lq, r, 0), k = bt_new(c->dt, c->B, c->Sk, c->Hkv, c->D, c->lk, r, 0);
    bt v = bt_new(c->dt, c->B, c->Sk, c->Hkv, c->Dv, c->lv, r, 0);
    bt out = bt_new(c->odt, c->B, c->Sq, c->Hq, c->Dv, c->lo, r, 1);
    bt dout = bt_new(c->odt, c->B, c->Sq, c->Hq, c->Dv, c->ldo ? c->ldo : c->lo, r, 0);
    bt dq = bt_new(c->gdt, c->B, c->Sq, c->Hq, c->D, c->lg, r, 1), dk = bt_new(c->gdt, c->B, c->Sk, c->Hkv, c->D, c->lg, r, 1);
    bt dv = bt_new(c->gdt, c->B, c->Sk, c->Hkv, c->Dv, c->lg, r, 1);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)c->B * c->Hq * c->Sq);
    float *db = NULL;
    size_t dbn = 0;
    double *Q, *K, *V, *DO, *OS, *BIAS = NULL, *rout, *rlse, *rdq, *rdk, *rdv, *rdb = NULL, *got;
    rb_dims z;
    attn_status st;
    const char *ctx = ctx_str(tag, &d, &q.t, &k.t, &v.t, c->odt, c->gdt);
    const double tol = TOL_GRAD + t_dt_rel(c->gdt);
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0); t_fill_normal(&dout.t, r, 1.0);
    if (d.dbias) {   /* the caller asks: a buffer with bias's extent, sentinel-filled */
        dbn = t_bias_extent(&d.bias, c->Sk);
        db = (float *)t_xmalloc(dbn * sizeof(float));
        t_sentinel(db, dbn * sizeof(float), B_OUT_SEED);
        d.dbias = db;
    }
    st = attn_forward(&d, q.t, k.t, v.t, out.t, lse);
    if (!T_CHECK(st == ATTN_OK, "%s: attn_forward returned %s", ctx, attn_status_str(st))) goto done;
    st = attn_backward(&d, q.t, k.t, v.t, out.t, dout.t, lse, dq.t, dk.t, dv.t);
    if (!T_CHECK(st == ATTN_OK, "%s: attn_backward returned %s", ctx, attn_status_str(st))) goto done;
    z.B = c->B; z.Sq = c->Sq; z.Sk = c->Sk; z.Hq = c->Hq; z.Hkv = c->Hkv; z.D = c->D; z.Dv = c->Dv;
    z.Bb = d.bias.data ? d.bias.batch : 1; z.Hb = d.bias.data ? d.bias.heads : 1;
    Q = bt_dense(&q.t); K = bt_dense(&k.t); V = bt_dense(&v.t); DO = bt_dense(&dout.t);
    if (d.bias.data) BIAS = bias_dense(&d.bias, c->Sq, c->Sk);
    rout = (double *)t_xmalloc(sizeof(double) * bt_count(&out.t));
    rlse = (double *)t_xmalloc(sizeof(double) * (size_t)c->B * c->Hq * c->Sq);
    rdq = (double *)t_xmalloc(sizeof(double) * bt_count(&dq.t));
    rdk = (double *)t_xmalloc(sizeof(double) * bt_count(&dk.t));
    rdv = (double *)t_xmalloc(sizeof(double) * bt_count(&dv.t));
    if (db) rdb = (double *)t_xmalloc(sizeof(double) * (size_t)z.Bb * z.Hb * c->Sq * c->Sk);
    OS = c->odt == ATTN_F32 ? NULL : bt_dense(&out.t);       /* rounded out: its rowsum term as stored */
    ref_backward(&d, &z, Q, K, V, DO, BIAS, OS, rout, rlse, rdq, rdk, rdv, rdb);
    if (rdb && d.bias.rows == 1) {       /* one row shared by every query: its gradient is the sum */
        size_t bh, i, j, S = (size_t)c->Sq, K2 = (size_t)c->Sk;
        for (bh = 0; bh < (size_t)z.Bb * z.Hb; ++bh)
            for (j = 0; j < K2; ++j) {
                double sum = 0;
                for (i = 0; i < S; ++i) sum += rdb[(bh * S + i) * K2 + j];
                for (i = 0; i < S; ++i) rdb[(bh * S + i) * K2 + j] = sum;
            }
    }
    if (d.dropout_p > 0.0f) {            /* the forward applied the documented mask */
        got = bt_dense(&out.t);
        cmp_grad("out (dropout forward)", ctx, rout, got, bt_count(&out.t), TOL_FWD * 4 + t_dt_rel(c->odt));
        free(got);
    }
    got = bt_dense(&dq.t); cmp_grad("dq", ctx, rdq, got, bt_count(&dq.t), tol); free(got);
    got = bt_dense(&dk.t); cmp_grad("dk", ctx, rdk, got, bt_count(&dk.t), tol); free(got);
    got = bt_dense(&dv.t); cmp_grad("dv", ctx, rdv, got, bt_count(&dv.t), tol); free(got);
    if (db) {
        got = dbias_dense(&d.bias, db, c->Sq, c->Sk);
        cmp_grad("dbias", ctx, rdb, got, (size_t)z.Bb * z.Hb * c->Sq * c->Sk, TOL_GRAD);
        free(got);
    }
    T_CHECK(bt_gaps_ok(&dq) && bt_gaps_ok(&dk) && bt_gaps_ok(&dv), "%s: a gradient write landed outside its view", ctx);
    free(Q); free(K); free(V); free(DO); free(OS); free(BIAS); free(rout); free(rlse); free(rdq); free(rdk); free(rdv); free(rdb);
done:
    bt_free(&q); bt_free(&k); bt_free(&v); bt_free(&out); bt_free(&dout); bt_free(&dq); bt_free(&dk); bt_free(&dv);
    free(lse); free(db);
}

/* ---------------------------------------------------------------------------------------- */
/* Randomised sweep                                                                          */
/* ---------------------------------------------------------------------------------------- */

static attn_dtype pick_dt(t_rng *r, double p32) {
    double u = t_unif(r);
    return u < p32 ? ATTN_F32 : u < p32 + (1 - p32) / 2 ? ATTN_F16 : ATTN_BF16;
}

static void sweep_case(int idx, t_rng *r) {
    static const int seqs[9] = { 1, 2, 3, 17, 63, 65, 127, 129, 300 };
    static const int dims[9] = { 1, 3, 8, 32, 64, 80, 96, 128, 256 };
    static const int ratios[3] = { 1, 2, 3 };
    const double cap = T_QUICK ? 1.2e6 : 6e6;
    const int pair = (idx * 7) % 81;                 /* idx 0..80 covers every (Sq, D) pair */
    bcase c;
    attn_desc d;
    float *bias = NULL, *alibi = NULL;
    int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL;
    int ksi, ratio, varlen;
    char tag[48];
    memset(&c, 0, sizeof c);
    c.Sq = seqs[pair % 9]; c.D = dims[pair / 9];
    ksi = t_chance(r, 0.4) ? pair % 9 : t_irange(r, 0, 8);
    c.Sk = seqs[ksi];
    c.Dv = t_chance(r, 0.7) ? c.D : dims[t_irange(r, 0, 8)];
    ratio = t_pick(r, ratios, 3); c.Hkv = t_irange(r, 1, 2); c.B = t_irange(r, 1, 3);
    varlen = t_chance(r, 0.15);
    if (varlen) c.B = 1;
    while ((double)c.B * c.Hkv * ratio * c.Sq * c.Sk * (c.D + c.Dv) > cap) {
        if (c.B > 1) --c.B;
        else if (c.Hkv > 1) --c.Hkv;
        else if (ratio > 1) --ratio;
        else if (ksi > 0) c.Sk = seqs[--ksi];
        else break;
    }
    c.Hq = c.Hkv * ratio;
    c.dt = pick_dt(r, 0.5); c.odt = pick_dt(r, 0.8); c.gdt = pick_dt(r, 0.6);
    if (t_chance(r, 0.2)) { c.q_own = 1; c.qdt = pick_dt(r, 0.5); }
    c.lq = t_irange(r, 0, BL_COUNT - 1); c.lk = t_irange(r, 0, BL_COUNT - 1); c.lv = t_irange(r, 0, BL_COUNT - 1);
    c.lo = t_irange(r, 0, BL_COUNT - 1); c.lg = t_irange(r, 0, BL_COUNT - 1);
    if (t_chance(r, 0.1)) c.ldo = BL_BCAST_HEADS;
    memset(&d, 0, sizeof d);
    d.causal = t_chance(r, 0.5);
    if (t_chance(r, 0.3)) d.window_left = t_chance(r, 0.8) ? t_irange(r, 1, c.Sk / 2 + 2) : c.Sk + t_irange(r, 0, 5);
    if (t_chance(r, 0.2)) d.window_right = t_irange(r, 1, c.Sk / 2 + 2);
    if (t_chance(r, 0.15)) d.dilation = t_irange(r, 0, 4);
    if (t_chance(r, 0.15)) d.sink_tokens = t_irange(r, 1, 4);
    if (t_chance(r, 0.1)) d.global_tokens = t_irange(r, 1, 3);
    if (t_chance(r, 0.15)) d.softcap = t_chance(r, 0.5) ? 5.0f : t_chance(r, 0.5) ? 1.0f : 30.0f;
    if (t_chance(r, 0.2)) d.scale = (float)((t_chance(r, 0.2) ? -1 : 1) * (0.3 + 1.5 * t_unif(r)) / sqrt((double)c.D));
    if (t_chance(r, 0.2)) d.alibi_slopes = alibi = t_make_alibi(c.Hq, r);
    if (t_chance(r, 0.25)) { d.dropout_p = t_chance(r, 0.5) ? 0.1f : t_chance(r, 0.5) ? 0.5f : 0.9f; d.dropout_seed = t_next(r); }
    d.n_threads = t_irange(r, 0, 3);
    if (varlen) {
        d.varlen_batch = t_irange(r, 1, 4);
        d.cu_seqlens_q = cuq = t_make_cu(d.varlen_batch, c.Sq, t_chance(r, 0.7), r);
        d.cu_seqlens_k = cuk = t_make_cu(d.varlen_batch, c.Sk, t_chance(r, 0.7), r);
    } else {
        if (t_chance(r, 0.15)) d.seqlens_q = sql = t_make_seqlens(c.B, c.Sq, r);
        if (t_chance(r, 0.2)) d.seqlens_k = skl = t_make_seqlens(c.B, c.Sk, r);
        if (t_chance(r, 0.3)) {
            const int mode = t_irange(r, 0, 3);       /* 3: one row for every query (dbias sums) */
            bias = t_make_bias(&d.bias, c.B, c.Hq, c.Sq, c.Sk, mode, r, NULL);
            if (t_chance(r, 0.6) && !(d.bias.batch > 1 && d.bias.stride_batch == 0 && mode == 2) &&
                !(d.bias.heads > 1 && d.bias.stride_head == 0 && mode == 2))
                d.dbias = (float *)1;             /* run_case allocates it */
        }
    }
    t_tame_alibi(alibi, c.Hq, d.causal, c.Sq > c.Sk ? c.Sq : c.Sk);
    snprintf(tag, sizeof tag, "sweep #%d", idx);
    run_case(tag, &d, &c, r);
    free(bias); free(alibi); free(sql); free(skl); free(cuq); free(cuk);
}

static void test_sweep(void) {
    t_rng r = t_rng_seed(41);
    int i, n = T_QUICK ? 81 : 243;
    for (i = 0; i < n; ++i) sweep_case(i, &r);
}

/* ---------------------------------------------------------------------------------------- */
/* Every mask family at fixed shapes (library vs reference), and finite differences          */
/* ---------------------------------------------------------------------------------------- */

#define N_FAM 18
static const char *family(int f, attn_desc *d, int B, int Hq, int Sq, int Sk, t_rng *r, float **bias, float **alibi,
                          int **sql, int **skl, int **cuq, int **cuk) {
    switch (f) {
    case 0: return "none";
    case 1: d->causal = 1; return "causal";
    case 2: d->window_left = 3; d->window_right = 2; return "window both";
    case 3: d->causal = 1; d->window_left = 4; return "sliding window";
    case 4: d->dilation = 2; d->window_left = 2; d->window_right = 2; return "dilated window";
    case 5: d->causal = 1; d->window_left = 2; d->sink_tokens = 2; return "sinks + window";
    case 6: d->global_tokens = 2; d->window_left = 1; d->window_right = 1; return "global (Longformer)";
    case 7: d->softcap = 1.5f; return "softcap";
    case 8: d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->causal = 1; return "alibi + causal";
    case 9: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 0, r, NULL); d->dbias = (float *)1; return "bias + dbias";
    case 10: *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 3, r, NULL); d->bias.batch = 1; d->bias.heads = 1;
             d->dbias = (float *)1; return "one bias row for every batch, head and query + dbias";
    case 11: d->seqlens_q = *sql = t_make_seqlens(B, Sq, r); d->seqlens_k = *skl = t_make_seqlens(B, Sk, r); d->causal = 1;
             return "seqlens + causal";
    case 12: d->varlen_batch = 3; d->cu_seqlens_q = *cuq = t_make_cu(3, Sq, 0, r); d->cu_seqlens_k = *cuk = t_make_cu(3, Sk, 1, r);
             d->causal = 1; return "varlen + causal";
    case 13: d->dropout_p = 0.3f; d->dropout_seed = 77; return "dropout";
    case 14: d->dropout_p = 0.5f; d->dropout_seed = 5; d->causal = 1; d->softcap = 2.0f;
             *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 0, r, NULL); d->dbias = (float *)1; return "dropout + softcap + bias";
    case 15: d->scale = -0.4f; d->window_right = 2; return "negative scale + window_right";
    case 16: d->causal = 1; d->window_left = 3; d->sink_tokens = 1; d->global_tokens = 1; d->dilation = 2;
             d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->softcap = 3.0f;
             *bias = t_make_bias(&d->bias, B, Hq, Sq, Sk, 1, r, NULL); d->dbias = (float *)1;
             d->seqlens_q = *sql = t_make_seqlens(B, Sq, r); d->seqlens_k = *skl = t_make_seqlens(B, Sk, r); return "everything";
    default: d->varlen_batch = 2; d->cu_seqlens_q = *cuq = t_make_cu(2, Sq, 1, r); d->cu_seqlens_k = *cuk = t_make_cu(2, Sk, 0, r);
             d->window_left = 2; d->alibi_slopes = *alibi = t_make_alibi(Hq, r); d->softcap = 4.0f; d->dropout_p = 0.2f;
             d->dropout_seed = 9; return "varlen + window + alibi + softcap + dropout";
    }
}

static void test_families(void) {
    t_rng r = t_rng_seed(43);
    static const int shapes[3][2] = { { 37, 70 }, { 70, 37 }, { 66, 66 } };
    int f, sh, rep;
    for (f = 0; f < N_FAM; ++f)
        for (sh = 0; sh < 3; ++sh)
            for (rep = 0; rep < 2; ++rep) {
                bcase c;
                attn_desc d;
                float *bias = NULL, *alibi = NULL;
                int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL;
                const char *name;
                char tag[160];
                const int varlen = f == 12 || f == N_FAM - 1;
                memset(&c, 0, sizeof c);
                c.B = varlen ? 1 : 2; c.Sq = shapes[sh][0]; c.Sk = shapes[sh][1]; c.Hq = 4; c.Hkv = 2; c.D = 16; c.Dv = 12;
                c.dt = rep == 0 ? ATTN_F32 : ATTN_BF16; c.odt = ATTN_F32; c.gdt = rep == 0 ? ATTN_F32 : ATTN_F16;
                c.lq = rep ? BL_BHSD : BL_DENSE; c.lk = rep ? BL_PADDED : BL_DENSE; c.lv = BL_DENSE; c.lo = BL_DENSE;
                c.lg = rep ? BL_PADDED : BL_DENSE;
                memset(&d, 0, sizeof d);
                name = family(f, &d, c.B, c.Hq, c.Sq, c.Sk, &r, &bias, &alibi, &sql, &skl, &cuq, &cuk);
                d.n_threads = rep + 1;
                t_tame_alibi(alibi, c.Hq, d.causal, 70);
                snprintf(tag, sizeof tag, "family '%s' Sq=%d Sk=%d", name, c.Sq, c.Sk);
                run_case(tag, &d, &c, &r);
                free(bias); free(alibi); free(sql); free(skl); free(cuq); free(cuk);
            }
}

/* Long sequences with many heads: few key splits, so several key blocks share one sweep over
   the query blocks (the sweep mostly gives one key block per split). */
static void test_long(void) {
    t_rng r = t_rng_seed(67);
    int cfg;
    for (cfg = 0; cfg < 6; ++cfg) {
        bcase c;
        attn_desc d;
        float *bias = NULL;
        char tag[64];
        memset(&c, 0, sizeof c);
        memset(&d, 0, sizeof d);
        c.B = 1; c.Hq = 16; c.Hkv = cfg == 3 ? 4 : 16; c.Sq = T_QUICK ? 300 : 600; c.Sk = cfg == 1 ? c.Sq + 77 : c.Sq;
        c.D = 32; c.Dv = cfg == 2 ? 24 : 32;
        c.dt = cfg == 2 ? ATTN_F16 : ATTN_F32; c.odt = ATTN_F32; c.gdt = ATTN_F32;
        c.lq = BL_DENSE; c.lk = BL_DENSE; c.lv = BL_DENSE; c.lo = BL_DENSE; c.lg = BL_DENSE;
        d.n_threads = 2;
        if (cfg == 0) d.causal = 1;
        if (cfg == 1) { d.window_left = 150; d.window_right = 40; d.sink_tokens = 3; }
        if (cfg == 2) { d.causal = 1; d.dropout_p = 0.15f; d.dropout_seed = 11; d.softcap = 6.0f; }
        if (cfg == 3) { d.causal = 1; bias = t_make_bias(&d.bias, c.B, c.Hq, c.Sq, c.Sk, 0, &r, NULL); d.dbias = (float *)1; }
        /* Longformer's global rows and keys far outside the window: the pairs that shrink to the
           global rows alone (dQ partials at 300 keys, direct dq at 250) and to the global keys */
        if (cfg == 4) { c.Hq = 4; c.Hkv = 2; d.window_left = 30; d.window_right = 10; d.global_tokens = 3; }
        if (cfg == 5) {
            c.Hq = 4; c.Hkv = 4; c.Sq = c.Sk = 250; d.causal = 1; d.window_left = 40; d.global_tokens = 1;
            bias = t_make_bias(&d.bias, c.B, c.Hq, c.Sq, c.Sk, 0, &r, NULL); d.dbias = (float *)1;
        }
        snprintf(tag, sizeof tag, "long cfg %d", cfg);
        run_case(tag, &d, &c, &r);
        free(bias);
    }
}

/* Loss = sum(out * dout) of the reference forward; central differences against the reference
   gradients, every input element, in double. */
static double fd_loss(const attn_desc *d, const rb_dims *z, const double *q, const double *k, const double *v,
                      const double *dout, const double *bias, double *out) {
    size_t n, no = (size_t)z->B * z->Sq * z->Hq * z->Dv;
    double s = 0.0;
    ref_backward(d, z, q, k, v, dout, bias, NULL, out, NULL, NULL, NULL, NULL, NULL);
    for (n = 0; n < no; ++n) s += out[n] * dout[n];
    return s;
}
static void fd_one(const char *name, const char *what, const attn_desc *d, const rb_dims *z, double *q, double *k,
                   double *v, const double *dout, double *bias, double *x, size_t nx, const double *grad, double *out) {
    const double h = 1e-6;
    double *fd = (double *)t_xmalloc(sizeof(double) * (nx ? nx : 1));
    size_t i;
    for (i = 0; i < nx; ++i) {
        const double x0 = x[i];
        double lp, lm;
        x[i] = x0 + h; lp = fd_loss(d, z, q, k, v, dout, bias, out);
        x[i] = x0 - h; lm = fd_loss(d, z, q, k, v, dout, bias, out);
        x[i] = x0;
        fd[i] = (lp - lm) / (2 * h);
    }
    {
        const double e = t_max_norm_err(fd, grad, nx);
        T_CHECK(e <= TOL_FD, "finite differences '%s': d%s of the reference differs from central differences by %.3g", name, what, e);
    }
    free(fd);
}

static void fd_checks(void) {
    t_rng r = t_rng_seed(47);
    int f;
    for (f = 0; f < N_FAM; ++f) {
        const int varlen = f == 12 || f == N_FAM - 1;
        rb_dims z;
        attn_desc d;
        float *bias = NULL, *alibi = NULL;
        int *sql = NULL, *skl = NULL, *cuq = NULL, *cuk = NULL;
        double *q, *k, *v, *dout, *out, *bd = NULL, *dq, *dk, *dv, *dbias = NULL;
        size_t nq, nk, nv, no, nb = 0, i;
        const char *name;
        z.B = varlen ? 1 : 2; z.Sq = 7; z.Sk = 9; z.Hq = 4; z.Hkv = 2; z.D = 3; z.Dv = 2;
        if (f % 3 == 1) { z.Sq = 9; z.Sk = 6; }
        memset(&d, 0, sizeof d);
        name = family(f, &d, z.B, z.Hq, z.Sq, z.Sk, &r, &bias, &alibi, &sql, &skl, &cuq, &cuk);
        z.Bb = bias ? d.bias.batch : 1; z.Hb = bias ? d.bias.heads : 1;
        nq = (size_t)z.B * z.Sq * z.Hq * z.D; nk = (size_t)z.B * z.Sk * z.Hkv * z.D; nv = (size_t)z.B * z.Sk * z.Hkv * z.Dv;
        no = (size_t)z.B * z.Sq * z.Hq * z.Dv;
        q = (double *)t_xmalloc(sizeof(double) * nq); k = (double *)t_xmalloc(sizeof(double) * nk);
        v = (double *)t_xmalloc(sizeof(double) * nv); dout = (double *)t_xmalloc(sizeof(double) * no);
        out = (double *)t_xmalloc(sizeof(double) * no);
        dq = (double *)t_xmalloc(sizeof(double) * nq); dk = (double *)t_xmalloc(sizeof(double) * nk);
        dv = (double *)t_xmalloc(sizeof(double) * nv);
        for (i = 0; i < nq; ++i) q[i] = t_normal(&r);
        for (i = 0; i < nk; ++i) k[i] = t_normal(&r);
        for (i = 0; i < nv; ++i) v[i] = t_normal(&r);
        for (i = 0; i < no; ++i) dout[i] = t_normal(&r);
        if (bias) {
            bd = bias_dense(&d.bias, z.Sq, z.Sk);
            nb = (size_t)z.Bb * z.Hb * z.Sq * z.Sk;
            dbias = (double *)t_xmalloc(sizeof(double) * nb);
        }
        ref_backward(&d, &z, q, k, v, dout, bd, NULL, out, NULL, dq, dk, dv, dbias);
        fd_one(name, "q", &d, &z, q, k, v, dout, bd, q, nq, dq, out);
        fd_one(name, "k", &d, &z, q, k, v, dout, bd, k, nk, dk, out);
        fd_one(name, "v", &d, &z, q, k, v, dout, bd, v, nv, dv, out);
        if (bias) fd_one(name, "bias", &d, &z, q, k, v, dout, bd, bd, nb, dbias, out);
        free(q); free(k); free(v); free(dout); free(out); free(dq); free(dk); free(dv); free(bd); free(dbias);
        free(bias); free(alibi); free(sql); free(skl); free(cuq); free(cuk);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Properties                                                                                */
/* ---------------------------------------------------------------------------------------- */

/* dense f32 forward + backward with everything the caller owns */
typedef struct {
    int B, Sq, Sk, Hq, Hkv, D, Dv;
    float *q, *k, *v, *out, *dout, *lse, *dq, *dk, *dv;
} fb;
static void fb_init(fb *x, int B, int Sq, int Sk, int Hq, int Hkv, int D, int Dv, t_rng *r) {
    size_t i, nq = (size_t)B * Sq * Hq * D, nk = (size_t)B * Sk * Hkv * D, nv = (size_t)B * Sk * Hkv * Dv, no = (size_t)B * Sq * Hq * Dv;
    x->B = B; x->Sq = Sq; x->Sk = Sk; x->Hq = Hq; x->Hkv = Hkv; x->D = D; x->Dv = Dv;
    x->q = (float *)t_xmalloc(nq * 4); x->k = (float *)t_xmalloc(nk * 4); x->v = (float *)t_xmalloc(nv * 4);
    x->out = (float *)t_xmalloc(no * 4); x->dout = (float *)t_xmalloc(no * 4); x->lse = (float *)t_xmalloc((size_t)B * Hq * Sq * 4);
    x->dq = (float *)t_xmalloc(nq * 4); x->dk = (float *)t_xmalloc(nk * 4); x->dv = (float *)t_xmalloc(nv * 4);
    for (i = 0; i < nq; ++i) x->q[i] = (float)t_normal(r);
    for (i = 0; i < nk; ++i) x->k[i] = (float)t_normal(r);
    for (i = 0; i < nv; ++i) x->v[i] = (float)t_normal(r);
    for (i = 0; i < no; ++i) x->dout[i] = (float)t_normal(r);
}
static void fb_free(fb *x) {
    free(x->q); free(x->k); free(x->v); free(x->out); free(x->dout); free(x->lse); free(x->dq); free(x->dk); free(x->dv);
}
static attn_status fb_fwd(fb *x, const attn_desc *d) {
    return attn_forward(d, attn_tensor_dense(x->q, ATTN_F32, x->B, x->Sq, x->Hq, x->D), attn_tensor_dense(x->k, ATTN_F32, x->B, x->Sk, x->Hkv, x->D),
                        attn_tensor_dense(x->v, ATTN_F32, x->B, x->Sk, x->Hkv, x->Dv), attn_tensor_dense(x->out, ATTN_F32, x->B, x->Sq, x->Hq, x->Dv), x->lse);
}
static attn_status fb_bwd(fb *x, const attn_desc *d) {
    return attn_backward(d, attn_tensor_dense(x->q, ATTN_F32, x->B, x->Sq, x->Hq, x->D), attn_tensor_dense(x->k, ATTN_F32, x->B, x->Sk, x->Hkv, x->D),
                         attn_tensor_dense(x->v, ATTN_F32, x->B, x->Sk, x->Hkv, x->Dv), attn_tensor_dense(x->out, ATTN_F32, x->B, x->Sq, x->Hq, x->Dv),
                         attn_tensor_dense(x->dout, ATTN_F32, x->B, x->Sq, x->Hq, x->Dv), x->lse,
                         attn_tensor_dense(x->dq, ATTN_F32, x->B, x->Sq, x->Hq, x->D), attn_tensor_dense(x->dk, ATTN_F32, x->B, x->Sk, x->Hkv, x->D),
                         attn_tensor_dense(x->dv, ATTN_F32, x->B, x->Sk, x->Hkv, x->Dv));
}
static double f_err(const float *ref, const float *got, size_t n) {
    double mx = 1.0, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    for (i = 0; i < n; ++i) { double x = fabs((double)got[i] - ref[i]); if (!(x <= e)) e = x != x ? INFINITY : x; }
    return e / mx;
}

/* GQA == MHA with K/V heads repeated (h uses KV head h / g), dk/dv summed over each group */
static void prop_gqa(void) {
    t_rng r = t_rng_seed(53);
    int cfg;
    for (cfg = 0; cfg < 3; ++cfg) {
        const int B = 2, Sq = 50, Sk = 70, Hkv = 2, g = cfg == 2 ? 4 : 3, Hq = Hkv * g, D = 16, Dv = 8;
        fb a, m;
        attn_desc d;
        int b, s, h, c;
        size_t nk;
        float *sk, *sv;
        memset(&d, 0, sizeof d);
        d.causal = cfg != 1; d.window_left = cfg == 1 ? 9 : 0;
        if (cfg == 2) { d.dropout_p = 0.25f; d.dropout_seed = 1234; d.softcap = 3.0f; }
        fb_init(&a, B, Sq, Sk, Hq, Hkv, D, Dv, &r);
        fb_init(&m, B, Sq, Sk, Hq, Hq, D, Dv, &r);
        memcpy(m.q, a.q, sizeof(float) * (size_t)B * Sq * Hq * D);
        memcpy(m.dout, a.dout, sizeof(float) * (size_t)B * Sq * Hq * Dv);
        for (b = 0; b < B; ++b)
            for (s = 0; s < Sk; ++s)
                for (h = 0; h < Hq; ++h) {
                    for (c = 0; c < D; ++c) m.k[(((size_t)b * Sk + s) * Hq + h) * D + c] = a.k[(((size_t)b * Sk + s) * Hkv + h / g) * D + c];
                    for (c = 0; c < Dv; ++c) m.v[(((size_t)b * Sk + s) * Hq + h) * Dv + c] = a.v[(((size_t)b * Sk + s) * Hkv + h / g) * Dv + c];
                }
        T_CHECK(fb_fwd(&a, &d) == ATTN_OK && fb_bwd(&a, &d) == ATTN_OK && fb_fwd(&m, &d) == ATTN_OK && fb_bwd(&m, &d) == ATTN_OK,
                "prop_gqa cfg %d: calls must succeed", cfg);
        nk = (size_t)B * Sk * Hkv * D;
        sk = (float *)calloc(nk, sizeof(float)); sv = (float *)calloc((size_t)B * Sk * Hkv * Dv, sizeof(float));
        for (b = 0; b < B; ++b)
            for (s = 0; s < Sk; ++s)
                for (h = 0; h < Hq; ++h) {
                    for (c = 0; c < D; ++c) sk[(((size_t)b * Sk + s) * Hkv + h / g) * D + c] += m.dk[(((size_t)b * Sk + s) * Hq + h) * D + c];
                    for (c = 0; c < Dv; ++c) sv[(((size_t)b * Sk + s) * Hkv + h / g) * Dv + c] += m.dv[(((size_t)b * Sk + s) * Hq + h) * Dv + c];
                }
        T_CHECK(f_err(m.dq, a.dq, (size_t)B * Sq * Hq * D) <= TOL_GRAD, "prop_gqa cfg %d: dq differs from MHA's by %.3g", cfg,
                f_err(m.dq, a.dq, (size_t)B * Sq * Hq * D));
        T_CHECK(f_err(sk, a.dk, nk) <= TOL_GRAD, "prop_gqa cfg %d: dk differs from MHA's group sum by %.3g", cfg, f_err(sk, a.dk, nk));
        T_CHECK(f_err(sv, a.dv, (size_t)B * Sk * Hkv * Dv) <= TOL_GRAD, "prop_gqa cfg %d: dv differs from MHA's group sum by %.3g", cfg,
                f_err(sv, a.dv, (size_t)B * Sk * Hkv * Dv));
        free(sk); free(sv); fb_free(&a); fb_free(&m);
    }
}

/* dropout_p = 0 is no dropout whatever the seed (bitwise); seeds change the forward; the keep
   rate of the documented hash is 1 - p */
static void prop_dropout(void) {
    t_rng r = t_rng_seed(59);
    fb a;
    attn_desc d;
    size_t no = 0, nq, nk, nv;
    float *o0, *q0, *k0, *v0;
    int b, h, i, j, kept = 0, total = 0;
    fb_init(&a, 2, 40, 60, 4, 2, 16, 16, &r);
    no = (size_t)2 * 40 * 4 * 16; nq = no; nk = (size_t)2 * 60 * 2 * 16; nv = nk;
    o0 = (float *)t_xmalloc(no * 4); q0 = (float *)t_xmalloc(nq * 4); k0 = (float *)t_xmalloc(nk * 4); v0 = (float *)t_xmalloc(nv * 4);
    memset(&d, 0, sizeof d);
    d.causal = 1;
    fb_fwd(&a, &d); fb_bwd(&a, &d);
    memcpy(o0, a.out, no * 4); memcpy(q0, a.dq, nq * 4); memcpy(k0, a.dk, nk * 4); memcpy(v0, a.dv, nv * 4);
    d.dropout_seed = 987654321ull;
    fb_fwd(&a, &d); fb_bwd(&a, &d);
    T_CHECK(memcmp(o0, a.out, no * 4) == 0 && memcmp(q0, a.dq, nq * 4) == 0 && memcmp(k0, a.dk, nk * 4) == 0 &&
            memcmp(v0, a.dv, nv * 4) == 0, "dropout_p = 0 with a seed must equal no dropout bitwise");
    d.dropout_p = 0.4f; d.dropout_seed = 1;
    fb_fwd(&a, &d);
    T_CHECK(memcmp(o0, a.out, no * 4) != 0, "dropout_p = 0.4 must change the forward output");
    memcpy(o0, a.out, no * 4);
    d.dropout_seed = 2;
    fb_fwd(&a, &d);
    T_CHECK(memcmp(o0, a.out, no * 4) != 0, "another dropout_seed must give another mask");
    for (b = 0; b < 2; ++b)
        for (h = 0; h < 4; ++h)
            for (i = 0; i < 40; ++i)
                for (j = 0; j < 60; ++j) { kept += rb_keep(5, 0.4f, 4, 40, b, h, i, j); ++total; }
    T_CHECK(fabs((double)kept / total - 0.6) < 0.02, "documented dropout hash keeps %.4f of the elements at p = 0.4", (double)kept / total);
    free(o0); free(q0); free(k0); free(v0); fb_free(&a);
}

typedef struct { int calls; } bhook;
static void rev_hook(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    ((bhook *)user)->calls++;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, i % (n_threads > 0 ? n_threads : 1));
}

/* bitwise identical dq/dk/dv/dbias for any n_threads, the parallel hook, a caller workspace;
   a second call overwrites */
static void prop_determinism(void) {
    t_rng r = t_rng_seed(61);
    const int B = 2, Sq = 130, Sk = 200, Hq = 4, Hkv = 2, D = 24, Dv = 20;
    fb a;
    attn_desc d;
    attn_bias bs;
    float *bias = t_make_bias(&bs, B, Hq, Sq, Sk, 1, &r, NULL), *db, *db0;
    const size_t nq = (size_t)B * Sq * Hq * D, nk = (size_t)B * Sk * Hkv * D, nv = (size_t)B * Sk * Hkv * Dv;
    size_t dbn = t_bias_extent(&bs, Sk);
    float *q0 = (float *)t_xmalloc(nq * 4), *k0 = (float *)t_xmalloc(nk * 4), *v0 = (float *)t_xmalloc(nv * 4);
    int cfg;
    fb_init(&a, B, Sq, Sk, Hq, Hkv, D, Dv, &r);
    db = (float *)t_xmalloc(dbn * 4); db0 = (float *)t_xmalloc(dbn * 4);
    memset(&d, 0, sizeof d);
    d.causal = 1; d.window_left = 100; d.sink_tokens = 2; d.softcap = 8.0f; d.bias = bs; d.dbias = db;
    d.dropout_p = 0.1f; d.dropout_seed = 42; d.n_threads = 1;
    memset(db, 0x7F, dbn * 4);            /* the gaps of its padded strides must stay as they are */
    T_CHECK(fb_fwd(&a, &d) == ATTN_OK && fb_bwd(&a, &d) == ATTN_OK, "determinism base call must succeed");
    memcpy(q0, a.dq, nq * 4); memcpy(k0, a.dk, nk * 4); memcpy(v0, a.dv, nv * 4); memcpy(db0, db, dbn * 4);
    for (cfg = 0; cfg < 7; ++cfg) {
        bhook hk = { 0 };
        void *ws = NULL;
        attn_desc e = d;
        size_t before = t_attn_mallocs;
        memset(a.dq, 0x7F, nq * 4); memset(a.dk, 0x7F, nk * 4); memset(a.dv, 0x7F, nv * 4); memset(db, 0x7F, dbn * 4);
        if (cfg < 4) e.n_threads = cfg + 2;                           /* 2..5 */
        else if (cfg == 4) { e.parallel = rev_hook; e.parallel_user = &hk; e.n_threads = 3; }
        else if (cfg == 5) {
            size_t bytes = 0;
            attn_status st = attn_backward_workspace_size(&e, attn_tensor_dense(a.q, ATTN_F32, B, Sq, Hq, D),
                                                          attn_tensor_dense(a.k, ATTN_F32, B, Sk, Hkv, D), attn_tensor_dense(a.v, ATTN_F32, B, Sk, Hkv, Dv), &bytes);
            T_CHECK(st == ATTN_OK && bytes > 0, "attn_backward_workspace_size returned %s", attn_status_str(st));
            ws = t_xmalloc(bytes); e.workspace = ws; e.workspace_size = bytes;
            before = t_attn_mallocs;
        } else { e.n_threads = 2; fb_bwd(&a, &e); }                   /* cfg 6: second call over the first */
        T_CHECK(fb_bwd(&a, &e) == ATTN_OK, "determinism cfg %d must succeed", cfg);
        T_CHECK(memcmp(q0, a.dq, nq * 4) == 0 && memcmp(k0, a.dk, nk * 4) == 0 && memcmp(v0, a.dv, nv * 4) == 0 &&
                memcmp(db0, db, dbn * 4) == 0, "determinism cfg %d (threads %d, hook %d, workspace %d, repeat %d): not bitwise "
                "equal to n_threads = 1", cfg, e.n_threads, cfg == 4, cfg == 5, cfg == 6);
        if (cfg == 4) T_CHECK(hk.calls >= 1, "the parallel hook was never called");
        if (cfg == 5) T_CHECK(t_attn_mallocs == before, "attn_backward allocated despite a caller workspace");
        free(ws);
    }
    free(q0); free(k0); free(v0); free(db); free(db0); free(bias); fb_free(&a);
}

/* ---------------------------------------------------------------------------------------- */
/* Error paths                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* q [2,5,4,8], k [2,7,2,8], v [2,7,2,6], out/dout [2,5,4,6], lse [2,4,5], bias [2,4,5,7] */
enum { EB_Q = 320, EB_K = 224, EB_V = 168, EB_O = 240, EB_L = 40, EB_B = 280 };
static float *eb_q, *eb_k, *eb_v, *eb_out, *eb_dout, *eb_lse, *eb_dq, *eb_dk, *eb_dv, *eb_bias, *eb_db;

typedef struct {
    attn_desc d;
    int null_desc;
    attn_tensor q, k, v, out, dout, dq, dk, dv;
    const float *lse;
} bcall;

static bcall eb_base(void) {
    bcall e;
    memset(&e, 0, sizeof e);
    e.q = attn_tensor_dense(eb_q, ATTN_F32, 2, 5, 4, 8);
    e.k = attn_tensor_dense(eb_k, ATTN_F32, 2, 7, 2, 8);
    e.v = attn_tensor_dense(eb_v, ATTN_F32, 2, 7, 2, 6);
    e.out = attn_tensor_dense(eb_out, ATTN_F32, 2, 5, 4, 6);
    e.dout = attn_tensor_dense(eb_dout, ATTN_F32, 2, 5, 4, 6);
    e.dq = attn_tensor_dense(eb_dq, ATTN_F32, 2, 5, 4, 8);
    e.dk = attn_tensor_dense(eb_dk, ATTN_F32, 2, 7, 2, 8);
    e.dv = attn_tensor_dense(eb_dv, ATTN_F32, 2, 7, 2, 6);
    e.lse = eb_lse;
    e.d.causal = 1; e.d.softcap = 10.0f; e.d.dropout_p = 0.2f; e.d.dropout_seed = 3; e.d.n_threads = 2;
    e.d.bias = attn_bias_dense(eb_bias, 2, 4, 5, 7); e.d.dbias = eb_db;
    return e;
}

static attn_status eb_call(const bcall *e) {
    return attn_backward(e->null_desc ? NULL : &e->d, e->q, e->k, e->v, e->out, e->dout, e->lse, e->dq, e->dk, e->dv);
}

/* ws: attn_backward_workspace_size (no out/dout/grads) must return the same code */
static void expect_berr(const char *label, const bcall *e, attn_status want, const char *field, int ws) {
    const char *msg = attn_status_str(want);
    attn_status st;
    t_sentinel(eb_dq, EB_Q * 4, 0x11); t_sentinel(eb_dk, EB_K * 4, 0x22); t_sentinel(eb_dv, EB_V * 4, 0x33);
    t_sentinel(eb_db, EB_B * 4, 0x44);
    st = eb_call(e);
    if (T_CHECK(st == want, "%s: attn_backward returned \"%s\", want \"%s\"", label, attn_status_str(st), msg))
        t_status_provoked[want] = 1;
    T_CHECK(msg && strstr(msg, field) != NULL, "message \"%s\" does not name \"%s\"", msg ? msg : "(null)", field);
    T_CHECK(t_sentinel_ok(eb_dq, EB_Q * 4, 0x11) && t_sentinel_ok(eb_dk, EB_K * 4, 0x22) && t_sentinel_ok(eb_dv, EB_V * 4, 0x33) &&
            t_sentinel_ok(eb_db, EB_B * 4, 0x44), "%s: attn_backward failed but wrote dq, dk, dv or dbias", label);
    if (ws) {
        size_t bytes = 77;
        st = attn_backward_workspace_size(e->null_desc ? NULL : &e->d, e->q, e->k, e->v, &bytes);
        T_CHECK(st == want, "%s: attn_backward_workspace_size returned \"%s\", want \"%s\"", label, attn_status_str(st), msg);
    }
}

static void test_errors(void) {
    static float dummy[4];
    int i;
    eb_q = (float *)t_xmalloc(EB_Q * 4); eb_k = (float *)t_xmalloc(EB_K * 4); eb_v = (float *)t_xmalloc(EB_V * 4);
    eb_out = (float *)t_xmalloc(EB_O * 4); eb_dout = (float *)t_xmalloc(EB_O * 4); eb_lse = (float *)t_xmalloc(EB_L * 4);
    eb_dq = (float *)t_xmalloc(EB_Q * 4); eb_dk = (float *)t_xmalloc(EB_K * 4); eb_dv = (float *)t_xmalloc(EB_V * 4);
    eb_bias = (float *)t_xmalloc(EB_B * 4); eb_db = (float *)t_xmalloc(EB_B * 4);
    for (i = 0; i < EB_Q; ++i) eb_q[i] = (float)((i * 7) % 13) * 0.1f;
    for (i = 0; i < EB_K; ++i) eb_k[i] = (float)((i * 5) % 11) * 0.1f;
    for (i = 0; i < EB_V; ++i) eb_v[i] = (float)((i * 3) % 7) * 0.1f;
    for (i = 0; i < EB_O; ++i) eb_dout[i] = (float)((i * 3) % 5) * 0.2f;
    for (i = 0; i < EB_B; ++i) eb_bias[i] = (float)(i % 3) * 0.5f;
    {
        bcall e = eb_base();
        attn_status s1 = attn_forward(&e.d, e.q, e.k, e.v, e.out, eb_lse), s2 = eb_call(&e);
        T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK, "error-test base must be valid: %s / %s", attn_status_str(s1), attn_status_str(s2));
    }
#define EB_CASE(label, want, field, ws, mutate) do { bcall e = eb_base(); mutate; expect_berr(label, &e, want, field, ws); } while (0)
    EB_CASE("dropout_p -0.1", ATTN_ERR_DROPOUT, "dropout_p", 1, e.d.dropout_p = -0.1f);
    EB_CASE("dropout_p 1", ATTN_ERR_DROPOUT, "dropout_p", 1, e.d.dropout_p = 1.0f);
    EB_CASE("dropout_p NaN", ATTN_ERR_DROPOUT, "dropout_p", 1, e.d.dropout_p = (float)NAN);
    EB_CASE("desc NULL", ATTN_ERR_NULL_DESC, "desc", 1, e.null_desc = 1);
    EB_CASE("q.data NULL", ATTN_ERR_NULL_Q, "q.data", 1, e.q.data = NULL);
    EB_CASE("out.data NULL", ATTN_ERR_NULL_OUT, "out.data", 0, e.out.data = NULL);
    EB_CASE("out.dim 8", ATTN_ERR_OUT_SHAPE, "out", 0, e.out.dim = 8);
    EB_CASE("causal 3", ATTN_ERR_CAUSAL, "causal", 1, e.d.causal = 3);
    EB_CASE("dout.data NULL", ATTN_ERR_BWD_NULL_DOUT, "dout.data", 0, e.dout.data = NULL);
    EB_CASE("lse NULL", ATTN_ERR_BWD_NULL_LSE, "lse", 0, e.lse = NULL);
    EB_CASE("dq.data NULL", ATTN_ERR_BWD_NULL_DQ, "dq.data", 0, e.dq.data = NULL);
    EB_CASE("dk.data NULL", ATTN_ERR_BWD_NULL_DK, "dk.data", 0, e.dk.data = NULL);
    EB_CASE("dv.data NULL", ATTN_ERR_BWD_NULL_DV, "dv.data", 0, e.dv.data = NULL);
    EB_CASE("dout.dtype 9", ATTN_ERR_DTYPE, "dtype", 0, e.dout.dtype = (attn_dtype)9);
    EB_CASE("dq.dtype -1", ATTN_ERR_DTYPE, "dtype", 0, e.dq.dtype = (attn_dtype)-1);
    EB_CASE("dv.dtype 3", ATTN_ERR_DTYPE, "dtype", 0, e.dv.dtype = (attn_dtype)3);
    EB_CASE("dout.seq 4", ATTN_ERR_BWD_DOUT_SHAPE, "dout", 0, e.dout.seq = 4);
    EB_CASE("dout.dim 8", ATTN_ERR_BWD_DOUT_SHAPE, "dout", 0, e.dout.dim = 8);
    EB_CASE("dq.dim 6", ATTN_ERR_BWD_DQ_SHAPE, "dq", 0, e.dq.dim = 6);
    EB_CASE("dq.heads 2", ATTN_ERR_BWD_DQ_SHAPE, "dq", 0, e.dq.heads = 2);
    EB_CASE("dk.seq 6", ATTN_ERR_BWD_DK_SHAPE, "dk", 0, e.dk.seq = 6);
    EB_CASE("dk.heads 4", ATTN_ERR_BWD_DK_SHAPE, "dk", 0, e.dk.heads = 4);
    EB_CASE("dv.dim 8", ATTN_ERR_BWD_DV_SHAPE, "dv", 0, e.dv.dim = 8);
    EB_CASE("dv.batch 1", ATTN_ERR_BWD_DV_SHAPE, "dv", 0, e.dv.batch = 1);
    EB_CASE("dq.stride_head 0", ATTN_ERR_BWD_DQ_BROADCAST, "dq", 0, (e.dq.stride_batch = 160, e.dq.stride_seq = 32, e.dq.stride_head = 0));
    EB_CASE("dk.stride_seq 0", ATTN_ERR_BWD_DK_BROADCAST, "dk", 0, (e.dk.stride_batch = 112, e.dk.stride_seq = 0, e.dk.stride_head = 8));
    EB_CASE("dv.stride_batch 0", ATTN_ERR_BWD_DV_BROADCAST, "dv", 0, (e.dv.stride_batch = 0, e.dv.stride_seq = 12, e.dv.stride_head = 6));
    EB_CASE("dbias without bias", ATTN_ERR_BWD_DBIAS_NO_BIAS, "dbias", 0, e.d.bias.data = NULL);
    EB_CASE("dbias with bias.stride_head 0", ATTN_ERR_BWD_DBIAS_BROADCAST, "dbias", 0,
            (e.d.bias.stride_batch = 35, e.d.bias.stride_head = 0, e.d.bias.stride_q = 7));
    EB_CASE("dbias with bias.stride_q 0", ATTN_ERR_BWD_DBIAS_BROADCAST, "dbias", 0,
            (e.d.bias.stride_batch = 140, e.d.bias.stride_head = 35, e.d.bias.stride_q = 0));
    EB_CASE("dq.stride_batch PTRDIFF_MAX", ATTN_ERR_OVERFLOW, "overflow", 0,
            (e.dq.stride_batch = PTRDIFF_MAX, e.dq.stride_seq = 32, e.dq.stride_head = 8));
    EB_CASE("dout.stride_seq PTRDIFF_MAX/2", ATTN_ERR_OVERFLOW, "overflow", 0,
            (e.dout.stride_batch = 1, e.dout.stride_seq = PTRDIFF_MAX / 2, e.dout.stride_head = 6));
    EB_CASE("workspace 16 bytes", ATTN_ERR_WORKSPACE, "workspace", 0, (e.d.workspace = dummy, e.d.workspace_size = 16));
#undef EB_CASE
    {   /* the forward validates dropout_p too, and attn_backward_workspace_size its bytes */
        bcall e = eb_base();
        size_t bytes;
        attn_status st;
        e.d.dropout_p = 2.0f;
        t_sentinel(eb_out, EB_O * 4, 0x55);
        st = attn_forward(&e.d, e.q, e.k, e.v, e.out, eb_lse);
        if (T_CHECK(st == ATTN_ERR_DROPOUT, "attn_forward with dropout_p 2 returned %s", attn_status_str(st)))
            t_status_provoked[ATTN_ERR_DROPOUT] = 1;
        T_CHECK(t_sentinel_ok(eb_out, EB_O * 4, 0x55), "attn_forward wrote out for a bad dropout_p");
        e = eb_base();
        st = attn_backward_workspace_size(&e.d, e.q, e.k, e.v, NULL);
        if (T_CHECK(st == ATTN_ERR_NULL_ARG, "attn_backward_workspace_size(bytes NULL) returned %s", attn_status_str(st)))
            t_status_provoked[ATTN_ERR_NULL_ARG] = 1;
        st = attn_backward_workspace_size(&e.d, e.q, e.k, e.v, &bytes);
        T_CHECK(st == ATTN_OK && bytes > 0, "attn_backward_workspace_size on the base returned %s", attn_status_str(st));
    }
    free(eb_q); free(eb_k); free(eb_v); free(eb_out); free(eb_dout); free(eb_lse); free(eb_dq); free(eb_dk); free(eb_dv);
    free(eb_bias); free(eb_db);
}

/* Random valid and invalid arguments; every buffer holds exactly what its own declared shape
   needs (one element when the shape is invalid), so an access outside what the call may touch
   hits ASan in the sanitizer build. No crash for any input; a refused call writes nothing. */
typedef struct { attn_tensor t; void *buf; size_t bytes; } fz;
static fz fz_new(t_rng *r, attn_dtype dt, int B, int S, int H, int D) {
    fz x;
    memset(&x, 0, sizeof x);
    x.t.dtype = dt; x.t.batch = B; x.t.seq = S; x.t.heads = H; x.t.dim = D;
    if (B >= 1 && S >= 1 && H >= 1 && D >= 1 && t_chance(r, 0.3)) {
        x.t.stride_head = D + t_irange(r, 0, 2); x.t.stride_seq = H * x.t.stride_head + t_irange(r, 0, 2);
        x.t.stride_batch = S * x.t.stride_seq + t_irange(r, 0, 2);
    } else if (B >= 1 && S >= 1 && H >= 1 && D >= 1) {
        x.t.stride_head = D; x.t.stride_seq = (ptrdiff_t)H * D; x.t.stride_batch = (ptrdiff_t)S * H * D;
    }
    x.bytes = (B >= 1 && S >= 1 && H >= 1 && D >= 1) ? t_extent(&x.t) * t_dt_size(dt == ATTN_F32 || dt == ATTN_F16 || dt == ATTN_BF16 ? dt : ATTN_F32) : 4;
    x.buf = t_xmalloc(x.bytes);
    memset(x.buf, 0, x.bytes);
    x.t.data = x.buf;
    return x;
}
static int fz_dim(t_rng *r, int v) { return t_chance(r, 0.06) ? t_irange(r, -1, 0) : t_chance(r, 0.04) ? v + 1 : v; }

static void fuzz_backward(void) {
    t_rng r = t_rng_seed(71);
    int it, n = T_QUICK ? 150 : 500, ok = 0;
    for (it = 0; it < n; ++it) {
        const int B = t_irange(&r, 1, 2), Sq = t_irange(&r, 1, 9), Sk = t_irange(&r, 1, 9), Hkv = t_irange(&r, 1, 2);
        const int Hq = Hkv * t_irange(&r, 1, 2), D = t_irange(&r, 1, 9), Dv = t_irange(&r, 1, 9);
        const attn_dtype dt = pick_dt(&r, 0.5), bad = (attn_dtype)(t_chance(&r, 0.03) ? 7 : 0);
        fz q = fz_new(&r, dt, fz_dim(&r, B), fz_dim(&r, Sq), Hq, D), k = fz_new(&r, dt, B, fz_dim(&r, Sk), Hkv, fz_dim(&r, D));
        fz v = fz_new(&r, dt, B, Sk, fz_dim(&r, Hkv), Dv), o = fz_new(&r, pick_dt(&r, 0.7), B, Sq, Hq, fz_dim(&r, Dv));
        fz dO = fz_new(&r, bad ? bad : pick_dt(&r, 0.7), B, fz_dim(&r, Sq), Hq, Dv);
        fz dq = fz_new(&r, pick_dt(&r, 0.7), B, Sq, fz_dim(&r, Hq), D), dk = fz_new(&r, pick_dt(&r, 0.7), B, Sk, Hkv, fz_dim(&r, D));
        fz dv = fz_new(&r, pick_dt(&r, 0.7), fz_dim(&r, B), Sk, Hkv, Dv);
        float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq), *bias = NULL, *db = NULL;
        int sql[2], skl[2], cuq[3], cuk[3];
        unsigned char *copy[4];
        attn_desc d;
        attn_status st;
        int i;
        memset(&d, 0, sizeof d);
        for (i = 0; i < B * Hq * Sq; ++i) lse[i] = (float)(t_normal(&r) + 2.0);
        d.causal = t_chance(&r, 0.5) ? 1 : t_chance(&r, 0.05) ? 2 : 0;
        if (t_chance(&r, 0.3)) d.window_left = t_irange(&r, -1, 4);
        if (t_chance(&r, 0.2)) d.dilation = t_irange(&r, 0, 3);
        if (t_chance(&r, 0.2)) d.sink_tokens = t_irange(&r, 0, 3);
        if (t_chance(&r, 0.2)) d.softcap = t_chance(&r, 0.9) ? 3.0f : -1.0f;
        if (t_chance(&r, 0.3)) d.dropout_p = t_chance(&r, 0.85) ? 0.3f : t_chance(&r, 0.5) ? 1.0f : -0.2f;
        d.dropout_seed = t_next(&r);
        d.n_threads = t_irange(&r, 0, 3);
        if (t_chance(&r, 0.15)) { for (i = 0; i < 2; ++i) { sql[i] = t_irange(&r, -1, Sq + 1); skl[i] = t_irange(&r, 0, Sk); } d.seqlens_q = sql; d.seqlens_k = skl; }
        else if (t_chance(&r, 0.12)) {
            cuq[0] = 0; cuq[1] = t_irange(&r, 0, Sq); cuq[2] = t_irange(&r, cuq[1] - 1, Sq + 1);
            cuk[0] = 0; cuk[1] = t_irange(&r, 0, Sk); cuk[2] = Sk;
            d.cu_seqlens_q = cuq; d.cu_seqlens_k = cuk; d.varlen_batch = 2;
        } else if (t_chance(&r, 0.3)) {
            const int bb = t_chance(&r, 0.5) ? 1 : B, bh = t_chance(&r, 0.5) ? 1 : Hq;
            bias = (float *)t_xmalloc(sizeof(float) * (size_t)bb * bh * Sq * Sk);
            for (i = 0; i < bb * bh * Sq * Sk; ++i) bias[i] = (float)t_normal(&r);
            d.bias = attn_bias_dense(bias, t_chance(&r, 0.9) ? bb : 3, bh, Sq, Sk);
            if (t_chance(&r, 0.6)) { db = (float *)t_xmalloc(sizeof(float) * (size_t)bb * bh * Sq * Sk); d.dbias = db; }
        }
        copy[0] = (unsigned char *)t_xmalloc(dq.bytes); memcpy(copy[0], dq.buf, dq.bytes);
        copy[1] = (unsigned char *)t_xmalloc(dk.bytes); memcpy(copy[1], dk.buf, dk.bytes);
        copy[2] = (unsigned char *)t_xmalloc(dv.bytes); memcpy(copy[2], dv.buf, dv.bytes);
        copy[3] = NULL;
        if (db) { t_sentinel(db, sizeof(float) * (size_t)d.bias.heads * Sq * Sk * (d.bias.batch == 3 ? 1 : d.bias.batch), 0x66); }
        st = attn_backward(&d, q.t, k.t, v.t, o.t, dO.t, lse, dq.t, dk.t, dv.t);
        if (st == ATTN_OK) ++ok;
        else
            T_CHECK(memcmp(copy[0], dq.buf, dq.bytes) == 0 && memcmp(copy[1], dk.buf, dk.bytes) == 0 &&
                    memcmp(copy[2], dv.buf, dv.bytes) == 0 &&
                    (!db || t_sentinel_ok(db, sizeof(float) * (size_t)d.bias.heads * Sq * Sk * (d.bias.batch == 3 ? 1 : d.bias.batch), 0x66)),
                    "fuzz #%d: attn_backward returned %s but wrote a gradient", it, attn_status_str(st));
        free(copy[0]); free(copy[1]); free(copy[2]);
        free(q.buf); free(k.buf); free(v.buf); free(o.buf); free(dO.buf); free(dq.buf); free(dk.buf); free(dv.buf);
        free(lse); free(bias); free(db);
    }
    T_CHECK(ok > n / 10 && ok < n - n / 10, "fuzz: %d of %d calls valid; the mix should hold both kinds", ok, n);
}

/* ---------------------------------------------------------------------------------------- */

void test_backward(void) {
    test_errors();
    fd_checks();
    test_families();
    test_long();
    test_sweep();
    prop_gqa();
    prop_dropout();
    prop_determinism();
    fuzz_backward();
    printf("      backward: largest passing gradient error is %.2f of its tolerance (%s)\n", g_worst, g_worst_tag);
}
