/* tests/test_packed.c - packed sequences (attn_desc.cu_seqlens_q/_k, batch 1) for the kinds
   that run each packed segment as its own call (ATTN_BIGBIRD, ATTN_NYSTROM, ATTN_LSH, ATTN_LINFORMER, and the linear
   kinds ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER; called from their
   backward families).
   The property: every segment's rows of out, lse, dq, dk and dv are bitwise those of the same
   segment run alone (batch 1, its own length, no padding; its backward on its own forward's out
   and lse; Nystromformer's dconv and Linformer's de, df: the segments' sum in double within 1e-6) - the alone runs are checked against double references by the kind's own tests. 3+
   segments of different lengths, GQA, f32 and f16, several thread counts, a caller workspace
   (the same bits; no allocation). Bad cu_seqlens and segments the kind cannot take give their exact status with
   out, lse, dq, dk and dv untouched (forward, backward and both workspace queries). */
#include "test.h"

/* Per-segment inputs of a kind: *e gets segment u's desc (from the packed d without cu_seqlens).
   NULL: the same desc for every segment. */
typedef void (*tp_seg_desc)(const attn_desc *d, int u, attn_desc *e);
static int tp_no_lse;   /* the kind has no logsumexp (ATTN_NYSTROM, the linear kinds): lse NULL everywhere */

/* Copies rows [s0, s0 + n) of packed x (batch 1) into alone y, or back (to_packed). */
static void tp_rows(t_owned *x, t_owned *y, int s0, int n, int to_packed) {
    const size_t row = (size_t)x->t.heads * x->t.dim * t_dt_size(x->t.dtype);
    char *p = (char *)x->buf + (size_t)s0 * row, *a = (char *)y->buf;
    if (to_packed) memcpy(p, a, row * (size_t)n); else memcpy(a, p, row * (size_t)n);
}

/* Segment rows of packed x equal alone y bitwise. */
static int tp_same(const t_owned *x, const t_owned *y, int s0, int n) {
    const size_t row = (size_t)x->t.heads * x->t.dim * t_dt_size(x->t.dtype);
    return memcmp((const char *)x->buf + (size_t)s0 * row, y->buf, row * (size_t)n) == 0;
}

/* The parameter gradients of d that a packed backward sums over its segments (Nystromformer's
   dconv, Linformer's de and df): the desc fields in *slot, their float counts in cnt. */
static int tp_pgrads(attn_desc *d, int Hq, int Hkv, float ***slot, size_t *cnt) {
    int n = 0;
    if (d->kind == ATTN_NYSTROM && d->nystrom.dconv) { slot[n] = &d->nystrom.dconv; cnt[n++] = (size_t)Hq * d->nystrom.conv_kernel; }
    if (d->kind == ATTN_LINFORMER) {
        const size_t m = (size_t)(d->linformer.shared_heads ? 1 : Hkv) * d->linformer.k * d->linformer.n;
        if (d->linformer.de) { slot[n] = &d->linformer.de; cnt[n++] = m; }
        if (d->linformer.df && !d->linformer.shared_kv) { slot[n] = &d->linformer.df; cnt[n++] = m; }
    }
    return n;
}

/* One packed call of desc d (no cu_seqlens set) over segments len[0..n-1] against each
   segment alone; bwd: the backward too. */
static void tp_case(const char *name, t_rng *rng, const attn_desc *d0, tp_seg_desc seg, const int *len, int n,
                    int Hq, int Hkv, int D, int Dv, attn_dtype dt, int bwd) {
    int cu[9], T = 0, u, h;
    attn_desc d = *d0;
    t_owned q, k, v, o, go, gq, gk, gv;
    float *lse, *dc1 = NULL, **pslot[2];
    double *dsum = NULL;
    size_t pcnt[2];
    const int np = tp_pgrads(&d, Hq, Hkv, pslot, pcnt), nconv = np ? (int)(pcnt[0] + (np > 1 ? pcnt[1] : 0)) : 0;
    attn_status s;
    char what[160];
    if (nconv) { dc1 = (float *)t_xmalloc(sizeof(float) * (size_t)nconv); dsum = (double *)t_xmalloc(sizeof(double) * (size_t)nconv); }
    for (h = 0; h < nconv; ++h) dsum[h] = 0.0;
    for (u = 0, cu[0] = 0; u < n; ++u) cu[u + 1] = cu[u] + len[u];
    T = cu[n];
    sprintf(what, "%s packed %d segs (%d, %d, %d..) H%d/%d D%d/%d %s", name, n, len[0], len[1], len[2], Hq, Hkv, D, Dv,
            t_dt_name(dt));
    q = t_owned_dense(dt, 1, T, Hq, D); k = t_owned_dense(dt, 1, T, Hkv, D); v = t_owned_dense(dt, 1, T, Hkv, Dv);
    o = t_owned_dense(ATTN_F32, 1, T, Hq, Dv); go = t_owned_dense(ATTN_F32, 1, T, Hq, Dv);
    gq = t_owned_dense(ATTN_F32, 1, T, Hq, D); gk = t_owned_dense(ATTN_F32, 1, T, Hkv, D); gv = t_owned_dense(ATTN_F32, 1, T, Hkv, Dv);
    lse = (float *)t_xmalloc(sizeof(float) * (size_t)Hq * T);
    t_fill_normal(&q.t, rng, 1.0); t_fill_normal(&k.t, rng, 1.0); t_fill_normal(&v.t, rng, 1.0); t_fill_normal(&go.t, rng, 1.0);
    d.cu_seqlens_q = d.cu_seqlens_k = cu; d.varlen_batch = n;
    d.n_threads = 1 + (int)(t_next(rng) % 3);
    s = attn_forward(&d, q.t, k.t, v.t, o.t, tp_no_lse ? NULL : lse);
    if (!T_CHECK(s == ATTN_OK, "%s: forward status %d", what, (int)s)) goto done;
    if (bwd) {
        s = attn_backward(&d, q.t, k.t, v.t, o.t, go.t, tp_no_lse ? NULL : lse, gq.t, gk.t, gv.t);
        if (!T_CHECK(s == ATTN_OK, "%s: backward status %d", what, (int)s)) goto done;
    }
    for (u = 0; u < n; ++u) if (len[u] > 0) {   /* an empty segment has no rows */
        const int L = len[u], s0 = cu[u];
        t_owned q1 = t_owned_dense(dt, 1, L, Hq, D), k1 = t_owned_dense(dt, 1, L, Hkv, D), v1 = t_owned_dense(dt, 1, L, Hkv, Dv);
        t_owned o1 = t_owned_dense(ATTN_F32, 1, L, Hq, Dv), go1 = t_owned_dense(ATTN_F32, 1, L, Hq, Dv);
        t_owned gq1 = t_owned_dense(ATTN_F32, 1, L, Hq, D), gk1 = t_owned_dense(ATTN_F32, 1, L, Hkv, D);
        t_owned gv1 = t_owned_dense(ATTN_F32, 1, L, Hkv, Dv);
        float *lse1 = (float *)t_xmalloc(sizeof(float) * (size_t)Hq * L + 1);
        attn_desc e = *d0;
        int ok;
        if (seg) seg(d0, u, &e);
        e.n_threads = d.n_threads % 3 + 1;   /* any thread count gives the same bits */
        tp_rows(&q, &q1, s0, L, 0); tp_rows(&k, &k1, s0, L, 0); tp_rows(&v, &v1, s0, L, 0); tp_rows(&go, &go1, s0, L, 0);
        if (np) {   /* this segment's parameter gradients into dc1 */
            float **es[2];
            size_t ec[2];
            tp_pgrads(&e, Hq, Hkv, es, ec);
            *es[0] = dc1;
            if (np > 1) *es[1] = dc1 + ec[0];
        }
        s = attn_forward(&e, q1.t, k1.t, v1.t, o1.t, tp_no_lse ? NULL : lse1);
        ok = s == ATTN_OK && tp_same(&o, &o1, s0, L);
        for (h = 0; ok && !tp_no_lse && h < Hq; ++h)
            ok = memcmp(lse + (size_t)h * T + s0, lse1 + (size_t)h * L, sizeof(float) * (size_t)L) == 0;
        T_CHECK(ok, "%s: segment %d (length %d) forward != alone (status %d)", what, u, L, (int)s);
        if (bwd) {
            s = attn_backward(&e, q1.t, k1.t, v1.t, o1.t, go1.t, tp_no_lse ? NULL : lse1, gq1.t, gk1.t, gv1.t);
            for (h = 0; dsum && s == ATTN_OK && h < nconv; ++h) dsum[h] += dc1[h];
            T_CHECK(s == ATTN_OK && tp_same(&gq, &gq1, s0, L), "%s: segment %d dq != alone (status %d)", what, u, (int)s);
            T_CHECK(s == ATTN_OK && tp_same(&gk, &gk1, s0, L), "%s: segment %d dk != alone", what, u);
            T_CHECK(s == ATTN_OK && tp_same(&gv, &gv1, s0, L), "%s: segment %d dv != alone", what, u);
        }
        t_owned_free(&q1); t_owned_free(&k1); t_owned_free(&v1); t_owned_free(&o1); t_owned_free(&go1);
        t_owned_free(&gq1); t_owned_free(&gk1); t_owned_free(&gv1); free(lse1);
    }
    for (h = 0; bwd && dsum && h < nconv; ++h) {   /* the parameters' gradients: the sum of the segments' */
        const double got = h < (int)pcnt[0] ? (*pslot[0])[h] : (*pslot[1])[h - (int)pcnt[0]];
        T_CHECK(fabs(got - dsum[h]) <= 1e-6 * fmax(1.0, fabs(dsum[h])), "%s: parameter gradient [%d] %.9g, segments' sum %.9g",
                what, h, got, dsum[h]);
    }
    {   /* a caller workspace: no allocation, the same bits */
        t_owned o2 = t_owned_dense(ATTN_F32, 1, T, Hq, Dv), g2 = t_owned_dense(ATTN_F32, 1, T, Hq, D);
        float *lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)Hq * T);
        size_t bytes = 0, m0;
        attn_desc e = d;
        attn_status s2;
        s = attn_workspace_size(&e, q.t, k.t, v.t, &bytes);
        e.workspace = t_xmalloc(bytes); e.workspace_size = bytes;
        m0 = t_attn_mallocs;
        if (tp_no_lse) memcpy(lse2, lse, sizeof(float) * (size_t)Hq * T);
        s2 = s == ATTN_OK ? attn_forward(&e, q.t, k.t, v.t, o2.t, tp_no_lse ? NULL : lse2) : s;
        T_CHECK(s2 == ATTN_OK && t_attn_mallocs == m0 && memcmp(o.buf, o2.buf, sizeof(float) * o.n) == 0 &&
                memcmp(lse, lse2, sizeof(float) * (size_t)Hq * T) == 0, "%s: caller workspace (status %d, %d mallocs)", what,
                (int)s2, (int)(t_attn_mallocs - m0));
        e.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&e, q.t, k.t, v.t, o2.t, tp_no_lse ? NULL : lse2) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(e.workspace);
        if (bwd) {
            t_owned gk2 = t_owned_dense(ATTN_F32, 1, T, Hkv, D), gv2 = t_owned_dense(ATTN_F32, 1, T, Hkv, Dv);
            e = d;
            s = attn_backward_workspace_size(&e, q.t, k.t, v.t, &bytes);
            e.workspace = t_xmalloc(bytes); e.workspace_size = bytes;
            m0 = t_attn_mallocs;
            T_CHECK(s == ATTN_OK && attn_backward(&e, q.t, k.t, v.t, o.t, go.t, tp_no_lse ? NULL : lse, g2.t, gk2.t, gv2.t) == ATTN_OK &&
                    t_attn_mallocs == m0 && memcmp(gq.buf, g2.buf, sizeof(float) * gq.n) == 0 &&
                    memcmp(gk.buf, gk2.buf, sizeof(float) * gk.n) == 0 && memcmp(gv.buf, gv2.buf, sizeof(float) * gv.n) == 0,
                    "%s: backward caller workspace", what);
            free(e.workspace);
            t_owned_free(&gk2); t_owned_free(&gv2);
        }
        t_owned_free(&o2); t_owned_free(&g2); free(lse2);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&go);
    t_owned_free(&gq); t_owned_free(&gk); t_owned_free(&gv); free(lse); free(dc1); free(dsum);
}

/* d with cu (n segments) gives want from attn_forward, attn_backward and both workspace
   queries, writing nothing. Tensors [B][T]. */
static void tp_expect(const char *name, const char *what, const attn_desc *d0, const int *cuq, const int *cuk, int n,
                      int B, int T, int Hq, int Hkv, int D, attn_status want) {
    t_owned q = t_owned_dense(ATTN_F32, B, T, Hq, D), k = t_owned_dense(ATTN_F32, B, T, Hkv, D), v = t_owned_dense(ATTN_F32, B, T, Hkv, D);
    t_owned o = t_owned_dense(ATTN_F32, B, T, Hq, D), go = t_owned_dense(ATTN_F32, B, T, Hq, D);
    t_owned gq = t_owned_dense(ATTN_F32, B, T, Hq, D), gk = t_owned_dense(ATTN_F32, B, T, Hkv, D), gv = t_owned_dense(ATTN_F32, B, T, Hkv, D);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * T), *lin = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * T);
    size_t bytes = 0, i;
    attn_status s1, s2, s3, s4;
    attn_desc d = *d0;
    t_rng rng = t_rng_seed(5);
    d.cu_seqlens_q = cuq; d.cu_seqlens_k = cuk; d.varlen_batch = n;
    t_fill_normal(&q.t, &rng, 1.0); t_fill_normal(&k.t, &rng, 1.0); t_fill_normal(&v.t, &rng, 1.0);
    t_fill_normal(&go.t, &rng, 1.0); t_fill_normal(&o.t, &rng, 1.0);
    for (i = 0; i < (size_t)B * Hq * T; ++i) lin[i] = 1.0f;
    t_sentinel(lse, sizeof(float) * (size_t)B * Hq * T, 0x5Au);
    t_sentinel(gq.buf, sizeof(float) * gq.n, 0x11u); t_sentinel(gk.buf, sizeof(float) * gk.n, 0x22u);
    t_sentinel(gv.buf, sizeof(float) * gv.n, 0x33u);
    {
        t_owned o2 = t_owned_dense(ATTN_F32, B, T, Hq, D);
        t_sentinel(o2.buf, sizeof(float) * o2.n, 0xC3u);
        s1 = attn_forward(&d, q.t, k.t, v.t, o2.t, tp_no_lse ? NULL : lse);
        s2 = attn_workspace_size(&d, q.t, k.t, v.t, &bytes);
        s3 = attn_backward(&d, q.t, k.t, v.t, o.t, go.t, tp_no_lse ? NULL : lin, gq.t, gk.t, gv.t);
        s4 = attn_backward_workspace_size(&d, q.t, k.t, v.t, &bytes);
        if (T_CHECK(s1 == want && s2 == want && s3 == want && s4 == want && t_sentinel_ok(o2.buf, sizeof(float) * o2.n, 0xC3u) &&
                    t_sentinel_ok(lse, sizeof(float) * (size_t)B * Hq * T, 0x5Au) && t_sentinel_ok(gq.buf, sizeof(float) * gq.n, 0x11u) &&
                    t_sentinel_ok(gk.buf, sizeof(float) * gk.n, 0x22u) && t_sentinel_ok(gv.buf, sizeof(float) * gv.n, 0x33u),
                    "%s packed %s: want %d, got %d %d %d %d (or an output written)", name, what, (int)want, (int)s1, (int)s2,
                    (int)s3, (int)s4))
            t_status_provoked[want] = 1;
        t_owned_free(&o2);
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&go);
    t_owned_free(&gq); t_owned_free(&gk); t_owned_free(&gv); free(lse); free(lin);
}

/* The cu_seqlens checks every packed kind shares, on a valid desc d over T = 96 rows whose
   segments {0, 32, 64, 96} the kind takes (2 query heads, hkv KV heads); bad: a segment length the kind refuses, with its status
   (bad_len < 0: the kind takes every length). */
static void tp_errors(const char *name, const attn_desc *d, int hkv, int bad_len, attn_status bad_status) {
    static const int good[4] = { 0, 32, 64, 96 }, down[4] = { 0, 64, 32, 96 }, shortc[4] = { 0, 32, 64, 80 };
    static const int start[4] = { 32, 32, 64, 96 }, past[4] = { 0, 32, 64, 128 };
    int bad[4];
    attn_desc e = *d;
    tp_expect(name, "not ascending (q)", d, down, good, 3, 1, 96, 2, hkv, 8, ATTN_ERR_CU_SEQLENS_Q);
    tp_expect(name, "not ascending (k)", d, good, down, 3, 1, 96, 2, hkv, 8, ATTN_ERR_CU_SEQLENS_K);
    tp_expect(name, "not starting at 0", d, start, start, 3, 1, 96, 2, hkv, 8, ATTN_ERR_CU_SEQLENS_Q);
    tp_expect(name, "past the end", d, past, past, 3, 1, 96, 2, hkv, 8, ATTN_ERR_CU_SEQLENS_Q);
    tp_expect(name, "last != total", d, shortc, shortc, 3, 1, 96, 2, hkv, 8, ATTN_ERR_VARLEN_COVER);
    tp_expect(name, "k only", d, NULL, good, 3, 1, 96, 2, hkv, 8, ATTN_ERR_CU_SEQLENS_PAIR);
    tp_expect(name, "varlen_batch 0", d, good, good, 0, 1, 96, 2, hkv, 8, ATTN_ERR_VARLEN_BATCH);
    tp_expect(name, "batch 2", d, good, good, 3, 2, 96, 2, hkv, 8, ATTN_ERR_VARLEN_SHAPE);
    e.seqlens_k = good;
    tp_expect(name, "with seqlens_k", &e, good, good, 3, 1, 96, 2, hkv, 8, ATTN_ERR_VARLEN_WITH_SEQLENS);
    if (bad_len < 0) return;
    bad[0] = 0; bad[1] = 32; bad[2] = 32 + bad_len; bad[3] = 96;   /* the last segment is fine alone */
    tp_expect(name, "a segment the kind refuses", d, bad, bad, 3, 1, 96, 2, hkv, 8, bad_status);
}

/* ---- ATTN_BIGBIRD ------------------------------------------------------------------------ */
static const int *tp_bb_tables;   /* the segments' explicit random tables, concatenated */
static const int *tp_bb_lens;
static void tp_bb_seg(const attn_desc *d, int u, attn_desc *e) {
    size_t off = 0;
    int t, blk = d->bigbird.block, r = d->bigbird.random_blocks;
    if (!d->bigbird.random_table) return;
    for (t = 0; t < u; ++t) if (tp_bb_lens[t] / blk > 2) off += (size_t)2 * (size_t)(tp_bb_lens[t] / blk - 2) * (size_t)r;
    e->bigbird.random_table = tp_bb_tables + off;
}

void t_packed_bigbird(void) {
    t_rng rng = t_rng_seed(331);
    static const int l1[4] = { 128, 48, 80, 16 }, l2[3] = { 32, 112, 64 }, l3[5] = { 64, 16, 0, 176, 48 };
    int tab[2 * 40 * 2], i;
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD; d.bigbird.block = 16; d.bigbird.random_blocks = 2;
    tp_case("bigbird seeded", &rng, &d, NULL, l1, 4, 4, 2, 16, 8, ATTN_F32, 1);
    d.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED; d.bigbird.seed = 99;
    tp_case("bigbird listed", &rng, &d, NULL, l3, 5, 2, 1, 8, 16, ATTN_F16, 1);
    d.bigbird.hf_fallback = 1;   /* full attention for the short segments only */
    tp_case("bigbird fallback", &rng, &d, NULL, l2, 3, 2, 2, 8, 8, ATTN_F32, 1);
    d.bigbird.hf_fallback = 0;
    for (i = 0; i < (int)(sizeof tab / sizeof tab[0]); ++i) tab[i] = t_irange(&rng, 0, 2);   /* valid in every segment */
    d.bigbird.random_table = tab; tp_bb_tables = tab; tp_bb_lens = l1;
    tp_case("bigbird table", &rng, &d, tp_bb_seg, l1, 4, 2, 1, 8, 8, ATTN_F32, 1);
    d.bigbird.random_table = NULL; d.bigbird.block = 32;
    tp_errors("bigbird", &d, 1, 16, ATTN_ERR_BIGBIRD_BLOCK);   /* 16 rows: not a multiple of the block */
}

/* ---- ATTN_NYSTROM ------------------------------------------------------------------------ */
void t_packed_nystrom(void) {
    t_rng rng = t_rng_seed(332);
    static const int l1[4] = { 64, 16, 40, 24 }, l2[4] = { 37, 20, 0, 51 }, l3[3] = { 8, 72, 32 };
    float conv[4 * 5], dconv[4 * 5];
    int i;
    attn_desc d;
    tp_no_lse = 1;
    for (i = 0; i < 20; ++i) conv[i] = (float)t_normal(&rng);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_NYSTROM; d.nystrom.landmarks = 8; d.nystrom.conv = conv; d.nystrom.conv_kernel = 5; d.nystrom.dconv = dconv;
    tp_case("nystrom conv", &rng, &d, NULL, l1, 4, 4, 2, 16, 8, ATTN_F32, 1);
    d.nystrom.conv = NULL; d.nystrom.conv_kernel = 0; d.nystrom.dconv = NULL;
    d.nystrom.pad = 1; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;   /* the batch-global Z0: the segment's heads */
    tp_case("nystrom pad, batch Z0", &rng, &d, NULL, l2, 4, 2, 1, 8, 16, ATTN_F16, 1);
    d.nystrom.pad = 0; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_PER_HEAD; d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_LUCIDRAINS;
    d.nystrom.landmarks = 6;   /* lucidrains' front padding, and the exact shortcut of a segment of 8 with m = 8 below */
    tp_case("nystrom lucidrains", &rng, &d, NULL, l2, 4, 2, 2, 8, 8, ATTN_F32, 1);
    d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_ZERO; d.nystrom.landmarks = 8;
    tp_case("nystrom exact segment", &rng, &d, NULL, l3, 3, 2, 1, 8, 8, ATTN_F32, 1);
    tp_errors("nystrom", &d, 1, 4, ATTN_ERR_NYSTROM_LANDMARKS);   /* 4 rows: fewer than the landmarks */
    tp_errors("nystrom", &d, 1, 12, ATTN_ERR_NYSTROM_DIVIDE);      /* 12 rows: not a multiple of them */
    tp_no_lse = 0;
}

/* ---- ATTN_LSH (shared QK: q.heads == k.heads) --------------------------------------------- */
void t_packed_lsh(void) {
    t_rng rng = t_rng_seed(333);
    static const int l1[4] = { 64, 16, 40, 24 }, l2[4] = { 32, 96, 0, 8 }, l3[3] = { 48, 8, 120 };
    float rot[2 * 2 * 16 * 4];
    int i;
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 8; d.lsh.n_hashes = 2; d.lsh.seed = 7;
    tp_case("lsh seeded, default buckets", &rng, &d, NULL, l1, 4, 2, 2, 16, 8, ATTN_F32, 1);
    d.causal = 1; d.lsh.hf_merge = 1;
    tp_case("lsh causal, hf_merge", &rng, &d, NULL, l2, 4, 3, 3, 8, 16, ATTN_F16, 1);
    d.causal = 0; d.lsh.hf_merge = 0;
    for (i = 0; i < (int)(sizeof rot / sizeof rot[0]); ++i) rot[i] = (float)t_normal(&rng);
    d.lsh.n_buckets = 8; d.lsh.rotations = rot;   /* one caller's rotations for every segment */
    tp_case("lsh rotations", &rng, &d, NULL, l3, 3, 2, 2, 16, 16, ATTN_F32, 1);
    d.lsh.rotations = NULL; d.lsh.n_buckets = 0;
    tp_errors("lsh", &d, 2, 12, ATTN_ERR_LSH_BUCKET_SIZE);   /* 12 rows: not a multiple of the chunk */
}

/* ---- ATTN_LINFORMER: each segment projects with the leading L columns of E and F ----------- */
void t_packed_linformer(void) {
    t_rng rng = t_rng_seed(334);
    static const int l1[4] = { 40, 16, 0, 33 }, l2[3] = { 7, 48, 21 };
    float E[2 * 6 * 48], F[2 * 6 * 48], dE[2 * 6 * 48], dF[2 * 6 * 48];
    int i;
    attn_desc d;
    for (i = 0; i < 2 * 6 * 48; ++i) { E[i] = (float)t_normal(&rng) * 0.2f; F[i] = (float)t_normal(&rng) * 0.2f; }
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LINFORMER; d.linformer.e = E; d.linformer.f = F; d.linformer.k = 6; d.linformer.n = 48;
    d.linformer.de = dE; d.linformer.df = dF;
    tp_case("linformer", &rng, &d, NULL, l1, 4, 4, 2, 16, 8, ATTN_F32, 1);
    d.linformer.shared_kv = 1; d.linformer.shared_heads = 1;
    tp_case("linformer shared", &rng, &d, NULL, l2, 3, 2, 1, 8, 16, ATTN_F16, 1);
    tp_errors("linformer", &d, 1, 50, ATTN_ERR_LINFORMER_N);   /* 50 rows: longer than E's 48 columns */
}

/* ---- the linear kinds: each segment its own sequence (fla's cu_seqlens) ------------------- */
void t_packed_linear(void) {
    t_rng rng = t_rng_seed(335);
    static const int l1[4] = { 70, 1, 0, 130 }, l2[3] = { 65, 64, 9 }, l3[4] = { 33, 0, 100, 2 };
    attn_desc d;
    tp_no_lse = 1;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LINEAR;
    tp_case("linear", &rng, &d, NULL, l2, 3, 4, 2, 16, 8, ATTN_F32, 1);
    d.causal = 1;   /* chunks of 64 rows: segments across a chunk edge, of one row, empty */
    tp_case("linear causal", &rng, &d, NULL, l1, 4, 4, 2, 16, 8, ATTN_F32, 1);
    tp_case("linear causal f16", &rng, &d, NULL, l3, 4, 2, 1, 8, 16, ATTN_F16, 1);
    tp_errors("linear", &d, 2, -1, ATTN_OK);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_COSFORMER;        /* default M: the segment's own length */
    tp_case("cosformer", &rng, &d, NULL, l2, 3, 2, 2, 8, 8, ATTN_F32, 1);
    d.causal = 1;
    tp_case("cosformer causal", &rng, &d, NULL, l1, 4, 4, 2, 16, 8, ATTN_F16, 1);
    tp_errors("cosformer", &d, 2, -1, ATTN_OK);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_PERFORMER; d.performer.features = 32; d.performer.seed = 7;
    tp_case("performer", &rng, &d, NULL, l3, 4, 4, 2, 16, 8, ATTN_F32, 1);
    d.causal = 1;   /* the keys' stabiliser is the segment's own */
    tp_case("performer causal", &rng, &d, NULL, l1, 4, 2, 1, 8, 16, ATTN_F32, 1);
    tp_errors("performer", &d, 1, -1, ATTN_OK);
    tp_no_lse = 0;
}
