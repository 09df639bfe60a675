/* tests/test_bigbird.c - ATTN_BIGBIRD's Hugging Face conventions (called from test_sparse):
   padding through seqlens_q/_k and attn_desc.bigbird.multiplicity, against a double reference
   that transcribes HF's BigBirdBlockSparseAttention part by part (query blocks 0, 1, 2..nb-3,
   nb-2, nb-1, each with the blocks HF concatenates and the mask HF gives each: to_mask for the
   global and (rows 1, nb-2) window keys, from x to for the middle rows' band and every random
   key, -10000 where the mask is 0, the row times from_mask), written from modeling_big_bird.py
   without looking at attn.h's block lists; ATTN_BIGBIRD_UNION keeps each block's first listing.
   Then HF's own numbers: tests/fixtures/bigbird_hf.txt, written by tests/fixtures/bigbird_hf.py.

   TOLERANCES (as test_sparse.c; q/k/v rounded to their dtype before the reference reads them):
     out: |out - ref| <= 2e-5 max(1, max |ref| of the row) + rel(out dtype) |ref|
     lse: |lse - ref| <= 2e-5 max(1, |ref|); padded query rows: out exactly 0, lse exactly -inf
     valid rows of a sequence with seqlens_k 0 (every key padded: HF's -10000 leaves a softmax
     over logits near -1e4, where fp32 keeps 2^-10): out within 3e-3 max(1, max |ref|)
     fixture: |out - HF| <= 2e-5 max(1, |HF|) (q/k/v projected here in double from HF's weights)
   Properties: each sequence's valid rows are bitwise those of the same sequence run alone at the
   same padded length with other padding contents (independent of the batch and of the
   padding); HF_EVAL == HF_LISTED with an all-zero table (bitwise), and attn_bigbird_random_table
   gives that table; thread counts and a caller workspace give bitwise equal results; every new
   status with outputs untouched. */
#include "test.h"
#include "fixture.h"

#define BBH_TOL 2e-5
#define BBH_TOL_ALL_PADDED 3e-3   /* rows whose every key is padded: logits near -1e4, ulp 2^-10 */
#define BBH_PENALTY (-10000.0)   /* HF's attn_mask_penalty */


/* ---- the reference: HF's five parts in double ------------------------------------------- */
typedef struct {
    int blk, r, mult;            /* mult: attn_bigbird_multiplicity */
    const int *table;            /* [Hq][nb-2][r]; unused (all zero) for HF_EVAL */
    const int *lq, *lk;          /* valid lengths or NULL (all valid) */
    double scale;
} bbh_ref;

/* Appends key block kb (mask kind: 0 to_mask, 1 from x to) unless UNION has listed it. */
static void bbh_add(const bbh_ref *R, int kb, int kind, int *blocks, int *kinds, int *n) {
    int t;
    if (R->mult == ATTN_BIGBIRD_UNION)
        for (t = 0; t < *n; ++t) if (blocks[t] == kb) return;
    blocks[*n] = kb; kinds[*n] = kind; ++*n;
}

/* out [B][S][Hq][Dv], lse [B][Hq][S] */
static void bbh_reference(const bbh_ref *R, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v,
                          double *out, double *lse) {
    const int B = q->batch, S = q->seq, Hq = q->heads, g = Hq / k->heads, D = q->dim, Dv = v->dim;
    const int blk = R->blk, nb = S / blk, r = R->r;
    int *blocks = (int *)t_xmalloc(sizeof(int) * (size_t)(nb + r + 4)), *kinds = (int *)t_xmalloc(sizeof(int) * (size_t)(nb + r + 4));
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)(nb + r + 4) * blk);
    int b, h, i, j, d, t, n, e;
    for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h)
            for (i = 0; i < S; ++i) {
                const int qi = i / blk, from = !R->lq || i < R->lq[b];
                const int *rnd = R->table ? R->table + ((size_t)h * (nb - 2) + (qi - 1)) * r : NULL;
                double *orow = out + (((size_t)b * S + i) * Hq + h) * Dv, m = -INFINITY, l = 0.0;
                n = 0;
                if (qi == 0 || qi == nb - 1) {                   /* q[0], q[-1]: every key, to_mask */
                    for (t = 0; t < nb; ++t) bbh_add(R, t, 0, blocks, kinds, &n);
                } else if (qi == 1 || qi == nb - 2) {            /* q[1]: k[0..2], k[-1]; q[-2]: k[0], k[-3..-1] */
                    const int first[2][4] = { { 0, 1, 2, nb - 1 }, { 0, nb - 3, nb - 2, nb - 1 } };
                    for (t = 0; t < 4; ++t) bbh_add(R, first[qi == 1 ? 0 : 1][t], 0, blocks, kinds, &n);
                    for (t = 0; t < r; ++t) bbh_add(R, rnd && R->mult != ATTN_BIGBIRD_HF_EVAL ? rnd[t] : 0, 1, blocks, kinds, &n);
                } else {                                         /* q[2:-2]: k[0], band, random, k[-1] */
                    bbh_add(R, 0, 0, blocks, kinds, &n);
                    for (t = -1; t <= 1; ++t) bbh_add(R, qi + t, 1, blocks, kinds, &n);
                    for (t = 0; t < r; ++t) bbh_add(R, rnd && R->mult != ATTN_BIGBIRD_HF_EVAL ? rnd[t] : 0, 1, blocks, kinds, &n);
                    bbh_add(R, nb - 1, 0, blocks, kinds, &n);
                }
                for (t = 0; t < n; ++t)
                    for (e = 0; e < blk; ++e) {
                        const int kj = blocks[t] * blk + e, to = !R->lk || kj < R->lk[b];
                        const int mask = kinds[t] == 0 ? to : from && to;
                        double x = 0.0;
                        for (d = 0; d < D; ++d) x += t_load(q, b, i, h, d) * t_load(k, b, kj, h / g, d);
                        x = x * R->scale + (1.0 - mask) * BBH_PENALTY;
                        s[(size_t)t * blk + e] = x;
                        if (x > m) m = x;
                    }
                for (d = 0; d < Dv; ++d) orow[d] = 0.0;
                for (t = 0; t < n; ++t)
                    for (e = 0; e < blk; ++e) {
                        const double p = exp(s[(size_t)t * blk + e] - m);
                        l += p;
                        for (d = 0; d < Dv; ++d) orow[d] += p * t_load(v, b, blocks[t] * blk + e, h / g, d);
                    }
                for (d = 0; d < Dv; ++d) orow[d] = from ? orow[d] / l : 0.0;   /* * from_mask */
                lse[((size_t)b * Hq + h) * S + i] = from ? m + log(l) : -INFINITY;
            }
    free(blocks); free(kinds); free(s);
    (void)j;
}

/* Compares out/lse with the reference; padded query rows must be exactly 0 / -inf. */
static int bbh_compare(const char *what, const attn_tensor *out, const float *lse, const double *ro, const double *rl,
                       const double *tol) {
    const int B = out->batch, S = out->seq, H = out->heads, Dv = out->dim;
    const double rel = t_dt_rel(out->dtype);
    double worst = 0.0;
    int b, s, h, d, ok = 1;
    for (b = 0; b < B; ++b)
        for (s = 0; s < S; ++s)
            for (h = 0; h < H; ++h) {
                const double *r = ro + (((size_t)b * S + s) * H + h) * Dv, L = rl[((size_t)b * H + h) * S + s];
                double mx = 1.0;
                for (d = 0; d < Dv; ++d) if (fabs(r[d]) > mx) mx = fabs(r[d]);
                for (d = 0; d < Dv; ++d) {
                    const double got = t_load(out, b, s, h, d), e = fabs(got - r[d]);
                    const double bound = L == -INFINITY ? 0.0 : tol[b] * mx + rel * fabs(r[d]);
                    if (!(e <= bound)) { ok = 0; if (!(e <= worst)) worst = e; }
                }
                if (lse) {
                    const double got = lse[((size_t)b * H + h) * S + s];
                    if (L == -INFINITY) { if (got != -INFINITY) ok = 0; }
                    else if (!(fabs(got - L) <= BBH_TOL * (fabs(L) > 1 ? fabs(L) : 1))) ok = 0;
                }
            }
    T_CHECK(ok, "%s: out/lse differ from HF's semantics (worst |error| %.3g)", what, worst);
    return ok;
}

/* One padded batch against the reference, plus the bitwise properties. */
static void bbh_case(t_rng *rng, int B, int nb, int blk, int Hq, int Hkv, int D, int Dv, attn_dtype dt, int r,
                     int mult, int seeded, int same_lengths) {
    const int S = nb * blk, rows = nb - 2;
    const size_t tn = (size_t)Hq * rows * (size_t)(r ? r : 1);
    t_owned q = t_owned_dense(dt, B, S, Hq, D), k = t_owned_dense(dt, B, S, Hkv, D), v = t_owned_dense(dt, B, S, Hkv, Dv);
    t_owned o = t_owned_dense(ATTN_F32, B, S, Hq, Dv), o2 = t_owned_dense(ATTN_F32, B, S, Hq, Dv);
    int *table = (int *)t_xmalloc(sizeof(int) * tn), *lq = (int *)t_xmalloc(sizeof(int) * B), *lk = (int *)t_xmalloc(sizeof(int) * B);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S), *lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S);
    double tolb[8], *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * S * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * S);
    attn_desc d;
    bbh_ref R;
    char what[200];
    attn_status s;
    size_t i;
    int b;
    t_fill_normal(&q.t, rng, 1.0); t_fill_normal(&k.t, rng, 1.0); t_fill_normal(&v.t, rng, 1.0);
    for (b = 0; b < B; ++b) {   /* full, empty, inside a block, at a block edge */
        const int pick = t_irange(rng, 0, 5);
        lq[b] = pick == 0 ? S : pick == 1 ? 0 : pick == 2 ? t_irange(rng, 1, blk) * t_irange(rng, 1, nb) : t_irange(rng, 1, S);
        lk[b] = same_lengths ? lq[b] : t_irange(rng, 0, S);
    }
    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD;
    d.bigbird.block = blk; d.bigbird.random_blocks = r; d.bigbird.no_random = r == 0;
    d.bigbird.multiplicity = mult; d.bigbird.seed = t_next(rng);
    d.seqlens_q = lq; d.seqlens_k = lk;
    d.n_threads = 1 + (int)(t_next(rng) % 3);
    if (seeded) {
        T_CHECK(attn_bigbird_random_table(&d, Hq, S, table) == ATTN_OK, "bigbird hf: drawn table");
    } else {
        for (i = 0; i < tn; ++i) table[i] = t_irange(rng, 0, nb - 1);   /* repeats window/global blocks too */
        d.bigbird.random_table = table;
    }
    memset(&R, 0, sizeof R);
    R.blk = blk; R.r = r; R.mult = mult; R.table = table; R.lq = lq; R.lk = lk; R.scale = 1.0 / sqrt((double)D);
    bbh_reference(&R, &q.t, &k.t, &v.t, ro, rl);
    s = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    sprintf(what, "bigbird hf B%d S%d b%d H%d/%d D%d/%d %s r%d mult%d seeded%d lengths %d/%d..", B, S, blk, Hq, Hkv, D, Dv,
            t_dt_name(dt), r, mult, seeded, lq[0], lk[0]);
    if (!T_CHECK(s == ATTN_OK, "%s: status %d", what, (int)s)) goto done;
    for (b = 0; b < B; ++b) tolb[b] = lk[b] == 0 && lq[b] > 0 ? BBH_TOL_ALL_PADDED : BBH_TOL;
    bbh_compare(what, &o.t, lse, ro, rl, tolb);
    /* alone, at the same padded length, other padding contents: bitwise (not where seqlens_k is 0
       and rows are valid: every key is padded, and HF's -10000 then leaves a plain softmax over them) */
    for (b = 0; b < B; ++b) if (lk[b] > 0 || lq[b] == 0) {
        t_owned q1 = t_owned_dense(dt, 1, S, Hq, D), k1 = t_owned_dense(dt, 1, S, Hkv, D), v1 = t_owned_dense(dt, 1, S, Hkv, Dv);
        t_owned o1 = t_owned_dense(ATTN_F32, 1, S, Hq, Dv);
        float *lse1 = (float *)t_xmalloc(sizeof(float) * (size_t)Hq * S);
        const size_t es = t_dt_size(dt);
        attn_desc e = d;
        int row, ok;
        t_fill_normal(&q1.t, rng, 2.0); t_fill_normal(&k1.t, rng, 2.0); t_fill_normal(&v1.t, rng, 2.0);
        for (row = 0; row < S; ++row) {
            if (row < lq[b]) memcpy((char *)q1.buf + (size_t)row * Hq * D * es, (char *)q.buf + ((size_t)b * S + row) * Hq * D * es, (size_t)Hq * D * es);
            if (row < lk[b]) {
                memcpy((char *)k1.buf + (size_t)row * Hkv * D * es, (char *)k.buf + ((size_t)b * S + row) * Hkv * D * es, (size_t)Hkv * D * es);
                memcpy((char *)v1.buf + (size_t)row * Hkv * Dv * es, (char *)v.buf + ((size_t)b * S + row) * Hkv * Dv * es, (size_t)Hkv * Dv * es);
            }
        }
        e.seqlens_q = lq + b; e.seqlens_k = lk + b;
        e.n_threads = d.n_threads % 3 + 1;
        s = attn_forward(&e, q1.t, k1.t, v1.t, o1.t, lse1);
        ok = s == ATTN_OK && memcmp(o1.buf, (float *)o.buf + (size_t)b * S * Hq * Dv, sizeof(float) * (size_t)S * Hq * Dv) == 0;
        for (row = 0; ok && row < Hq; ++row)
            ok = memcmp(lse1 + (size_t)row * S, lse + ((size_t)b * Hq + row) * S, sizeof(float) * (size_t)lq[b]) == 0;
        T_CHECK(ok, "%s: sequence %d alone (other padding, threads %d) differs", what, b, e.n_threads);
        t_owned_free(&q1); t_owned_free(&k1); t_owned_free(&v1); t_owned_free(&o1); free(lse1);
    }
    if (mult == ATTN_BIGBIRD_HF_EVAL && r > 0) {   /* == HF_LISTED with HF's all-zero rand_attn, bitwise */
        attn_desc e = d;
        int *t2 = (int *)t_xmalloc(sizeof(int) * tn);
        for (i = 0; i < tn; ++i) t2[i] = 7;
        T_CHECK(attn_bigbird_random_table(&d, Hq, S, t2) == ATTN_OK, "%s: eval table", what);
        for (i = 0; i < tn && t2[i] == 0; ++i) {}
        T_CHECK(i == tn, "%s: the eval table is not all zeros", what);
        e.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED; e.bigbird.random_table = t2;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sizeof(float) * o.n) == 0 &&
                memcmp(lse, lse2, sizeof(float) * (size_t)B * Hq * S) == 0, "%s: HF_EVAL != HF_LISTED with zeros", what);
        free(t2);
    }
    {   /* caller workspace (the padding row included), allocation-free, bitwise */
        size_t bytes = 0, m0;
        attn_desc e = d;
        void *ws;
        T_CHECK(attn_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e.workspace = ws; e.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0 && memcmp(o.buf, o2.buf, sizeof(float) * o.n) == 0, "%s: caller workspace", what);
        e.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&e, q.t, k.t, v.t, o2.t, NULL) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(ws);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(table); free(lq); free(lk); free(lse); free(lse2); free(ro); free(rl);
}

/* ---- statuses: exact code, outputs untouched --------------------------------------------- */
static void bbh_expect(const char *what, const attn_desc *d, const attn_tensor *q, const attn_tensor *k,
                       const attn_tensor *v, t_owned *o, attn_status want) {
    float lse[1024];
    size_t bytes = 0;
    attn_status s, sw;
    t_sentinel(o->buf, o->n * sizeof(float), 0xC3u);
    t_sentinel(lse, sizeof lse, 0x5Au);
    s = attn_forward(d, *q, *k, *v, o->t, lse);
    sw = attn_workspace_size(d, *q, *k, *v, &bytes);
    if (T_CHECK(s == want && sw == want && t_sentinel_ok(o->buf, o->n * sizeof(float), 0xC3u) &&
                t_sentinel_ok(lse, sizeof lse, 0x5Au), "bigbird %s: want %d, got %d / %d", what, (int)want, (int)s, (int)sw))
        t_status_provoked[want] = 1;
}

static void bbh_errors(void) {
    t_owned q = t_owned_dense(ATTN_F32, 2, 64, 2, 8), k = t_owned_dense(ATTN_F32, 2, 64, 2, 8),
               v = t_owned_dense(ATTN_F32, 2, 64, 2, 8), o = t_owned_dense(ATTN_F32, 2, 64, 2, 8);
    int lq[2] = { 64, 10 }, lk[2] = { 64, 10 }, cu[3] = { 0, 30, 64 }, tbl[16];
    attn_desc d, e;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD; d.bigbird.block = 16; d.bigbird.random_blocks = 1;
    d.seqlens_q = lq; d.seqlens_k = lk;
    e = d; e.bigbird.multiplicity = 3;
    bbh_expect("multiplicity 3", &e, &q.t, &k.t, &v.t, &o, ATTN_ERR_BIGBIRD_MULTIPLICITY);
    e = d; e.bigbird.multiplicity = -1;
    bbh_expect("multiplicity -1", &e, &q.t, &k.t, &v.t, &o, ATTN_ERR_BIGBIRD_MULTIPLICITY);
    T_CHECK(attn_bigbird_random_table(&e, 2, 64, tbl) == ATTN_ERR_BIGBIRD_MULTIPLICITY, "bigbird table: multiplicity");
    lq[1] = 65;
    bbh_expect("seqlens_q > seq", &d, &q.t, &k.t, &v.t, &o, ATTN_ERR_SEQLENS_Q);
    lq[1] = -1;
    bbh_expect("seqlens_q < 0", &d, &q.t, &k.t, &v.t, &o, ATTN_ERR_SEQLENS_Q);
    lq[1] = 10; lk[1] = 65;
    bbh_expect("seqlens_k > seq", &d, &q.t, &k.t, &v.t, &o, ATTN_ERR_SEQLENS_K);
    lk[1] = -3;
    bbh_expect("seqlens_k < 0", &d, &q.t, &k.t, &v.t, &o, ATTN_ERR_SEQLENS_K);
    lk[1] = 10;
    e = d; e.seqlens_q = e.seqlens_k = NULL; e.cu_seqlens_q = e.cu_seqlens_k = cu; e.varlen_batch = 2;
    bbh_expect("cu_seqlens with batch 2", &e, &q.t, &k.t, &v.t, &o, ATTN_ERR_VARLEN_SHAPE);   /* packing: test_packed.c */
    e = d; e.bigbird.multiplicity = ATTN_BIGBIRD_HF_EVAL; e.bigbird.random_table = tbl;
    tbl[0] = 99;                  /* HF_EVAL does not read the table */
    T_CHECK(attn_forward(&e, q.t, k.t, v.t, o.t, NULL) == ATTN_OK, "bigbird: HF_EVAL read random_table");
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o);
}

/* ---- HF's own outputs: tests/fixtures/bigbird_hf.txt ------------------------------------- */

/* The port docs/porting.md describes: q/k/v from HF's weights ([B, S, heads * head_dim] as
   attn_tensor_dense [B][S][H][D]), one attn_forward per mode. */
static void bbh_fixture(void) {
    const char *path = "bigbird_hf.txt";
    double cfg[7], lens[8], *w[3] = { NULL, NULL, NULL }, *bias[3] = { NULL, NULL, NULL }, *x = NULL, *ref[2] = { NULL, NULL }, *tab = NULL;
    int B, S, HID, H, Dh, blk, r, ok, mode, b, i, j, c, lengths[8], *table = NULL;
    t_owned qkv[3], o;
    attn_desc d;
    if (!T_CHECK(T_FIXTURE(path, "config", cfg, 7), "bigbird fixture: cannot read tests/fixtures/%s (run from the repository "
                 "root or set ATTN_FIXTURES)", path)) return;
    B = (int)cfg[0]; S = (int)cfg[1]; HID = (int)cfg[2]; H = (int)cfg[3]; Dh = (int)cfg[4]; blk = (int)cfg[5]; r = (int)cfg[6];
    ok = B >= 1 && B <= 8 && S >= 1 && HID == H * Dh && HID <= 256 && S <= 4096 && blk >= 1 && S % blk == 0 && r >= 1 &&
         T_FIXTURE(path, "lengths", lens, (size_t)B);
    if (!T_CHECK(ok, "bigbird fixture: bad header in %s", path)) return;
    for (c = 0; c < 3; ++c) {
        static const char *const wn[3] = { "wq", "wk", "wv" }, *const bn[3] = { "bq", "bk", "bv" };
        w[c] = (double *)t_xmalloc(sizeof(double) * HID * HID); bias[c] = (double *)t_xmalloc(sizeof(double) * HID);
        ok = ok && T_FIXTURE(path, wn[c], w[c], (size_t)HID * HID) && T_FIXTURE(path, bn[c], bias[c], (size_t)HID);
    }
    x = (double *)t_xmalloc(sizeof(double) * B * S * HID);
    ref[0] = (double *)t_xmalloc(sizeof(double) * B * S * HID); ref[1] = (double *)t_xmalloc(sizeof(double) * B * S * HID);
    tab = (double *)t_xmalloc(sizeof(double) * H * (S / blk - 2) * r); table = (int *)t_xmalloc(sizeof(int) * H * (S / blk - 2) * r);
    ok = ok && T_FIXTURE(path, "x", x, (size_t)B * S * HID) && T_FIXTURE(path, "eval_out", ref[0], (size_t)B * S * HID) &&
         T_FIXTURE(path, "train_table", tab, (size_t)H * (S / blk - 2) * r) && T_FIXTURE(path, "train_out", ref[1], (size_t)B * S * HID);
    if (!T_CHECK(ok, "bigbird fixture: truncated or malformed %s", path)) goto done;
    for (b = 0; b < B; ++b) lengths[b] = (int)lens[b];
    for (i = 0; i < H * (S / blk - 2) * r; ++i) table[i] = (int)tab[i];
    /* HF's nn.Linear: y = x W^T + b, [B, S, hidden] == [B][S][heads][head_dim] */
    for (c = 0; c < 3; ++c) {
        qkv[c] = t_owned_dense(ATTN_F32, B, S, H, Dh);
        for (i = 0; i < B * S; ++i)
            for (j = 0; j < HID; ++j) {
                double y = bias[c][j];
                int e;
                for (e = 0; e < HID; ++e) y += x[(size_t)i * HID + e] * w[c][(size_t)j * HID + e];
                ((float *)qkv[c].buf)[(size_t)i * HID + j] = (float)y;
            }
    }
    o = t_owned_dense(ATTN_F32, B, S, H, Dh);
    for (mode = 0; mode < 2; ++mode) {   /* 0: eval mode, 1: the training draw */
        double worst = 0.0;
        attn_status s;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_BIGBIRD;
        d.bigbird.block = blk; d.bigbird.random_blocks = r;          /* scale 0: 1/sqrt(head_dim), as HF */
        d.seqlens_q = lengths; d.seqlens_k = lengths;                /* HF's attention_mask row sums */
        if (mode == 0) d.bigbird.multiplicity = ATTN_BIGBIRD_HF_EVAL;
        else { d.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED; d.bigbird.random_table = table; }
        s = attn_forward(&d, qkv[0].t, qkv[1].t, qkv[2].t, o.t, NULL);
        ok = s == ATTN_OK;
        for (i = 0; ok && i < B * S * HID; ++i) {
            const double e = fabs(((float *)o.buf)[i] - ref[mode][i]);
            if (!(e <= BBH_TOL * (fabs(ref[mode][i]) > 1 ? fabs(ref[mode][i]) : 1))) ok = 0;
            if (!(e <= worst)) worst = e;
        }
        T_CHECK(ok, "bigbird fixture (%s): attn.h differs from HF (status %d, worst |error| %.3g)", mode ? "train" : "eval", (int)s, worst);
    }
    for (c = 0; c < 3; ++c) t_owned_free(&qkv[c]);
    t_owned_free(&o);
done:
    for (c = 0; c < 3; ++c) { free(w[c]); free(bias[c]); }
    free(x); free(ref[0]); free(ref[1]); free(tab); free(table);
}

void test_bigbird_hf(void) {
    t_rng rng = t_rng_seed(28);
    int it, n = T_QUICK ? 8 : 30;
    bbh_errors();
    bbh_fixture();
    bbh_case(&rng, 3, 8, 16, 2, 2, 16, 16, ATTN_F32, 3, ATTN_BIGBIRD_HF_EVAL, 0, 1);
    bbh_case(&rng, 2, 10, 16, 4, 2, 8, 24, ATTN_F32, 2, ATTN_BIGBIRD_HF_LISTED, 0, 1);
    bbh_case(&rng, 2, 6, 70, 2, 1, 16, 16, ATTN_F16, 1, ATTN_BIGBIRD_HF_LISTED, 1, 0);   /* block > ATTN__BQ */
    bbh_case(&rng, 3, 5, 8, 2, 2, 8, 8, ATTN_F32, 2, ATTN_BIGBIRD_UNION, 0, 1);
    bbh_case(&rng, 2, 4, 16, 1, 1, 8, 8, ATTN_BF16, 3, ATTN_BIGBIRD_HF_EVAL, 0, 0);
    for (it = 0; it < n; ++it) {
        static const int blks[6] = { 4, 8, 16, 24, 64, 70 };
        static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
        const int Hkv = t_irange(&rng, 1, 2), Hq = Hkv * t_irange(&rng, 1, 2);
        bbh_case(&rng, t_irange(&rng, 1, 3), t_irange(&rng, 4, 9), t_pick(&rng, blks, 6), Hq, Hkv, t_irange(&rng, 1, 24),
                 t_irange(&rng, 1, 24), dts[t_irange(&rng, 0, 2) * t_chance(&rng, 0.3)], t_irange(&rng, 0, 4),
                 t_irange(&rng, 0, 2), t_chance(&rng, 0.3), t_chance(&rng, 0.7));
    }
}
