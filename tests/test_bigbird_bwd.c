/* tests/test_bigbird_bwd.c - attn_backward for ATTN_BIGBIRD (family "bigbird-bwd") against a
   double-precision forward written here from attn.h's BigBird comment / shared/ZOO.md (sharing no
   code with attn.h), for the loss sum(dO . out) with a random dO. Query block i of head h sees
   key block kb c(h, i, kb) times:
     i global (0, nb-1) or hf_fallback's full attention: every block once
     otherwise {0, nb-1, i-1, i, i+1} once each, then per random entry t < r
       (table[h][i-1][t]; block 0 under HF_EVAL): UNION adds it to the set, HF_LISTED and
       HF_EVAL add one more copy
   logit = softcap(scale q.k) - 10000 (key >= seqlens_k[b]),  out_i = sum c e^logit v / sum c e^logit,
   rows i >= seqlens_q[b] are 0 (and get dq 0). The gradient is checked twice: every coordinate
   against the pair-by-pair analytic gradient of that forward (bbw_grad), and some coordinates
   by central differences of the forward itself (step 1e-5, exact to ~1e-9 in double; every
   coordinate for the smallest cases), which checks the analytic one too.
   TOLERANCE: max |err| / max(1, max |grad|) <= 2e-4 (fp32 GEMMs over O(100) terms; f16/bf16
   gradients add 1.5x their rounding); a sequence whose keys are all padded (seqlens_k 0, valid
   rows) sees logits near -1e4 where fp32 keeps 2^-10: 5e-3 there.
   Properties: bitwise equal gradients for n_threads 1/2/3 and a caller workspace (no
   allocation), and for n_threads 1 and 4 on a shape whose dq partials pass 2 and 3 take in two
   chunks of (batch, KV head) units at 1 thread, one at 4 (attn.h's ATTN__BBW_CHUNK_BYTES); HF_EVAL == HF_LISTED with an all-zero table and a drawn table (seed) == the
   same table passed explicitly (bitwise); padded query rows' dq exactly 0; the backward
   statuses with the gradients untouched.
   Then Hugging Face's numbers: tests/fixtures/bigbird_bwd_hf.txt (torch autograd through
   BigBirdBlockSparseAttention.bigbird_block_sparse_attention, eval mode and a recorded training
   draw; written by tests/fixtures/bigbird_bwd_hf.py): out, dq, dk, dv within 1e-4 relative. */
#include "test.h"
#include "fixture.h"

#define BBW_TOL 2e-4
#define BBW_TOL_ALL_PADDED 5e-3

typedef struct {
    int B, S, Hq, Hkv, D, Dv, blk, r, mult, full;
    const int *table;            /* [Hq][nb-2][r] */
    const int *lq, *lk;          /* NULL: all valid */
    double scale, softcap;
} bbw_case;

/* c(h, i, kb) for every kb of query block i */
static void bbw_counts(const bbw_case *c, int h, int i, int *cnt) {
    const int nb = c->S / c->blk;
    int t;
    for (t = 0; t < nb; ++t) cnt[t] = c->full || i == 0 || i == nb - 1;
    if (c->full || i == 0 || i == nb - 1) return;
    cnt[0] = cnt[nb - 1] = cnt[i - 1] = cnt[i] = cnt[i + 1] = 1;
    for (t = 0; t < c->r; ++t) {
        const int x = c->mult == ATTN_BIGBIRD_HF_EVAL ? 0 : c->table[((size_t)h * (nb - 2) + (i - 1)) * c->r + t];
        cnt[x] = c->mult == ATTN_BIGBIRD_UNION ? 1 : cnt[x] + 1;
    }
}

/* Row (b, h, i): weights w[j] = c e^(logit - max) / sum, the raw scores s[j] (before softcap) */
static void bbw_row(const bbw_case *c, const double *q, const double *k, int b, int h, int i, int *cnt, double *w, double *s) {
    const int nb = c->S / c->blk, g = c->Hq / c->Hkv, Lk = c->lk ? c->lk[b] : c->S;
    const double *qi = q + (((size_t)b * c->S + i) * c->Hq + h) * c->D;
    double m = -HUGE_VAL, l = 0.0;
    int j, d;
    bbw_counts(c, h, i / c->blk, cnt);
    for (j = 0; j < c->S; ++j) {
        const double *kj = k + (((size_t)b * c->S + j) * c->Hkv + h / g) * c->D;
        double x = 0.0;
        w[j] = -HUGE_VAL;
        if (!cnt[j / c->blk]) continue;
        for (d = 0; d < c->D; ++d) x += qi[d] * kj[d];
        s[j] = x * c->scale;
        x = c->softcap > 0 ? c->softcap * tanh(s[j] / c->softcap) : s[j];
        w[j] = x + (j >= Lk ? -10000.0 : 0.0);
        if (w[j] > m) m = w[j];
    }
    for (j = 0; j < c->S; ++j) {
        w[j] = cnt[j / c->blk] ? cnt[j / c->blk] * exp(w[j] - m) : 0.0;
        l += w[j];
    }
    for (j = 0; j < c->S; ++j) w[j] /= l;
    (void)nb;
}

static double bbw_loss(const bbw_case *c, const double *q, const double *k, const double *v, const double *dO,
                       int *cnt, double *w, double *s) {
    const int g = c->Hq / c->Hkv;
    double loss = 0.0;
    int b, h, i, j, e;
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h)
            for (i = 0; i < (c->lq ? c->lq[b] : c->S); ++i) {
                const double *o = dO + (((size_t)b * c->S + i) * c->Hq + h) * c->Dv;
                bbw_row(c, q, k, b, h, i, cnt, w, s);
                for (j = 0; j < c->S; ++j) {
                    const double *vj = v + (((size_t)b * c->S + j) * c->Hkv + h / g) * c->Dv;
                    double x = 0.0;
                    if (w[j] == 0.0) continue;
                    for (e = 0; e < c->Dv; ++e) x += o[e] * vj[e];
                    loss += w[j] * x;
                }
            }
    return loss;
}

/* dq, dk, dv (zeroed here) of sum(dO . out), pair by pair */
static void bbw_grad(const bbw_case *c, const double *q, const double *k, const double *v, const double *dO,
                     double *dq, double *dk, double *dv) {
    const int g = c->Hq / c->Hkv, S = c->S;
    int *cnt = (int *)t_xmalloc(sizeof(int) * (size_t)S);
    double *w = (double *)t_xmalloc(sizeof(double) * (size_t)S), *s = (double *)t_xmalloc(sizeof(double) * (size_t)S);
    double *dp = (double *)t_xmalloc(sizeof(double) * (size_t)S);
    int b, h, i, j, e;
    memset(dq, 0, sizeof(double) * (size_t)c->B * S * c->Hq * c->D);
    memset(dk, 0, sizeof(double) * (size_t)c->B * S * c->Hkv * c->D);
    memset(dv, 0, sizeof(double) * (size_t)c->B * S * c->Hkv * c->Dv);
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h)
            for (i = 0; i < (c->lq ? c->lq[b] : S); ++i) {
                const size_t qi = ((size_t)b * S + i) * c->Hq + h;
                double drow = 0.0;
                bbw_row(c, q, k, b, h, i, cnt, w, s);
                for (j = 0; j < S; ++j) {
                    const size_t kj = ((size_t)b * S + j) * c->Hkv + h / g;
                    dp[j] = 0.0;
                    if (w[j] == 0.0) continue;
                    for (e = 0; e < c->Dv; ++e) {
                        dp[j] += dO[qi * c->Dv + e] * v[kj * c->Dv + e];
                        dv[kj * c->Dv + e] += w[j] * dO[qi * c->Dv + e];
                    }
                    drow += w[j] * dp[j];
                }
                for (j = 0; j < S; ++j) {
                    const size_t kj = ((size_t)b * S + j) * c->Hkv + h / g;
                    double ds;
                    if (w[j] == 0.0) continue;
                    ds = w[j] * (dp[j] - drow) * c->scale;
                    if (c->softcap > 0) { const double th = tanh(s[j] / c->softcap); ds *= 1.0 - th * th; }
                    for (e = 0; e < c->D; ++e) {
                        dq[qi * c->D + e] += ds * k[kj * c->D + e];
                        dk[kj * c->D + e] += ds * q[qi * c->D + e];
                    }
                }
            }
    free(cnt); free(w); free(s); free(dp);
}

static double *bbw_read(const attn_tensor *t) {
    double *x = (double *)t_xmalloc(sizeof(double) * t_extent(t));
    t_read(t, x);
    return x;
}

static void bbw_desc(const bbw_case *c, attn_desc *d, unsigned long long seed, int threads) {
    memset(d, 0, sizeof *d);
    d->kind = ATTN_BIGBIRD;
    d->bigbird.block = c->blk; d->bigbird.random_blocks = c->r; d->bigbird.no_random = c->r == 0;
    d->bigbird.multiplicity = c->mult; d->bigbird.seed = seed; d->bigbird.hf_fallback = c->full;
    d->seqlens_q = c->lq; d->seqlens_k = c->lk;
    d->n_threads = threads;
}

static double g_bbw_worst = 0.0;

/* One case: forward + backward against the analytic gradient (every coordinate) and central
   differences (n_fd coordinates per tensor; -1: all). */
static void bbw_run(t_rng *rng, int B, int nb, int blk, int Hq, int Hkv, int D, int Dv, int r, int mult, int seeded,
                    int fallback, attn_dtype tin, attn_dtype tgrad, int n_fd) {
    const int S = nb * blk, rows = nb > 2 ? nb - 2 : 0;
    const size_t tn = (size_t)Hq * rows * (size_t)(r ? r : 1) + 1;
    t_owned q = t_owned_dense(tin, B, S, Hq, D), k = t_owned_dense(tin, B, S, Hkv, D), v = t_owned_dense(tin, B, S, Hkv, Dv);
    t_owned dO = t_owned_dense(tin, B, S, Hq, Dv), o = t_owned_dense(ATTN_F32, B, S, Hq, Dv);
    t_owned g[3];
    int *table = (int *)t_xmalloc(sizeof(int) * tn), lq[4], lk[4], b, which, cnt_full;
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S);
    double *qd, *kd, *vd, *od, *ref[3], *lib[3], err = 0.0, ferr = 0.0, gmax = 1.0, tol = BBW_TOL;
    attn_desc d;
    bbw_case c;
    char what[256];
    attn_status st;
    size_t i;
    g[0] = t_owned_dense(tgrad, B, S, Hq, D); g[1] = t_owned_dense(tgrad, B, S, Hkv, D); g[2] = t_owned_dense(tgrad, B, S, Hkv, Dv);
    t_fill_normal(&q.t, rng, 1.0); t_fill_normal(&k.t, rng, 1.0); t_fill_normal(&v.t, rng, 1.0); t_fill_normal(&dO.t, rng, 1.0);
    memset(&c, 0, sizeof c);
    c.B = B; c.S = S; c.Hq = Hq; c.Hkv = Hkv; c.D = D; c.Dv = Dv; c.blk = blk; c.r = r; c.mult = mult;
    c.full = fallback && S <= (5 + 2 * r) * blk;
    for (b = 0; b < B; ++b) {   /* full, empty, inside a block, at a block edge */
        const int pick = t_irange(rng, 0, 4);
        lq[b] = pick == 0 ? S : pick == 1 ? 0 : pick == 2 ? t_irange(rng, 1, blk) * t_irange(rng, 1, nb) : t_irange(rng, 1, S);
        lk[b] = t_chance(rng, 0.7) ? lq[b] : t_irange(rng, 0, S);
    }
    if (t_chance(rng, 0.8)) { c.lq = lq; c.lk = lk; }
    bbw_desc(&c, &d, t_next(rng), t_irange(rng, 1, 3));
    if (t_chance(rng, 0.3)) d.scale = (float)(0.1 + t_unif(rng));
    if (t_chance(rng, 0.25)) d.softcap = (float)(1.0 + 3.0 * t_unif(rng));
    c.scale = d.scale != 0.0f ? d.scale : 1.0 / sqrt((double)D); c.softcap = d.softcap;
    if (seeded) {
        T_CHECK(attn_bigbird_random_table(&d, Hq, S, table) == ATTN_OK, "bigbird-bwd: drawn table");
    } else {
        for (i = 0; i < tn; ++i) table[i] = t_irange(rng, 0, nb - 1);   /* repeats window/global blocks too */
        d.bigbird.random_table = table;
    }
    c.table = table;
    sprintf(what, "bigbird-bwd B%d S%d b%d H%d/%d D%d/%d r%d mult%d seeded%d full%d %s/%s scale %g cap %g threads %d pad %d",
            B, S, blk, Hq, Hkv, D, Dv, r, mult, seeded, c.full, t_dt_name(tin), t_dt_name(tgrad), c.scale, c.softcap, d.n_threads,
            c.lq != NULL);
    if (!T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, lse) == ATTN_OK, "%s: forward", what)) goto done;
    for (which = 0; which < 3; ++which) t_fill_nan(g[which].buf, tgrad, g[which].n);
    st = attn_backward(&d, q.t, k.t, v.t, o.t, dO.t, lse, g[0].t, g[1].t, g[2].t);
    if (!T_CHECK(st == ATTN_OK, "%s: %s", what, attn_status_str(st))) goto done;
    qd = bbw_read(&q.t); kd = bbw_read(&k.t); vd = bbw_read(&v.t); od = bbw_read(&dO.t);
    for (which = 0; which < 3; ++which) {
        lib[which] = bbw_read(&g[which].t);
        ref[which] = (double *)t_xmalloc(sizeof(double) * g[which].n);
    }
    bbw_grad(&c, qd, kd, vd, od, ref[0], ref[1], ref[2]);
    for (which = 0; which < 3; ++which)
        for (i = 0; i < g[which].n; ++i) gmax = fmax(gmax, fabs(ref[which][i]));
    for (which = 0; which < 3; ++which)
        for (i = 0; i < g[which].n; ++i) err = fmax(err, fabs(ref[which][i] - lib[which][i]));
    err /= gmax;
    {   /* padded query rows: dq exactly 0 */
        int s, ok = 1;
        for (b = 0; b < B; ++b)
            for (s = c.lq ? c.lq[b] : S; s < S; ++s)
                for (i = 0; i < (size_t)Hq * D; ++i) ok &= lib[0][((size_t)b * S + s) * Hq * D + i] == 0.0;
        T_CHECK(ok, "%s: padded query rows' dq not 0", what);
    }
    cnt_full = 0;
    for (b = 0; b < B; ++b) cnt_full |= c.lk && c.lk[b] == 0 && c.lq[b] > 0;
    if (cnt_full) tol = BBW_TOL_ALL_PADDED;
    if (tgrad != ATTN_F32) tol += 1.5 * t_dt_rel(tgrad);
    if (n_fd) {
        int *cnt = (int *)t_xmalloc(sizeof(int) * (size_t)S);
        double *w = (double *)t_xmalloc(sizeof(double) * (size_t)S), *s = (double *)t_xmalloc(sizeof(double) * (size_t)S);
        double *base[3];
        base[0] = qd; base[1] = kd; base[2] = vd;
        for (which = 0; which < 3; ++which) {
            const int n = n_fd < 0 ? (int)g[which].n : n_fd;
            int p;
            for (p = 0; p < n; ++p) {
                const size_t at = n_fd < 0 ? (size_t)p : (size_t)t_irange(rng, 0, (int)g[which].n - 1);
                const double x0 = base[which][at], hstep = 1e-5;
                double lp, lm, fd;
                base[which][at] = x0 + hstep; lp = bbw_loss(&c, qd, kd, vd, od, cnt, w, s);
                base[which][at] = x0 - hstep; lm = bbw_loss(&c, qd, kd, vd, od, cnt, w, s);
                base[which][at] = x0;
                fd = (lp - lm) / (2.0 * hstep);
                ferr = fmax(ferr, fabs(fd - lib[which][at]));
                T_CHECK(fabs(fd - ref[which][at]) <= 1e-6 * fmax(1.0, fabs(fd)),
                        "%s: the analytic reference disagrees with finite differences (grad %d at %lu: %.9g vs %.9g)", what,
                        which, (unsigned long)at, ref[which][at], fd);
            }
        }
        ferr /= gmax;
        free(cnt); free(w); free(s);
    }
    if (tgrad == ATTN_F32 && !cnt_full && err <= tol && ferr <= tol) g_bbw_worst = fmax(g_bbw_worst, fmax(err, ferr));
    T_CHECK(err <= tol && ferr <= tol, "%s: gradient error %.3g (finite differences %.3g), tolerance %.3g", what, err, ferr, tol);
    free(qd); free(kd); free(vd); free(od);
    for (which = 0; which < 3; ++which) { free(lib[which]); free(ref[which]); }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&dO); t_owned_free(&o);
    for (which = 0; which < 3; ++which) t_owned_free(&g[which]);
    free(table); free(lse);
}

static void bbw_sweep(void) {
    static const int blks[8] = { 1, 3, 4, 8, 16, 24, 64, 70 };
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng rng = t_rng_seed(2929);
    int it, n = T_QUICK ? 12 : 40;
    /* fixed corners first: odd block counts, GQA, every mode, blocks of several pieces */
    bbw_run(&rng, 2, 5, 4, 2, 1, 5, 3, 2, ATTN_BIGBIRD_UNION, 0, 0, ATTN_F32, ATTN_F32, -1);
    bbw_run(&rng, 2, 7, 3, 3, 1, 4, 6, 3, ATTN_BIGBIRD_HF_LISTED, 0, 0, ATTN_F32, ATTN_F32, 24);
    bbw_run(&rng, 2, 9, 4, 2, 2, 8, 8, 2, ATTN_BIGBIRD_HF_EVAL, 0, 0, ATTN_F32, ATTN_F32, 24);
    bbw_run(&rng, 1, 3, 70, 2, 1, 16, 8, 1, ATTN_BIGBIRD_HF_LISTED, 1, 0, ATTN_F32, ATTN_F32, 8);   /* 2 pieces a block */
    bbw_run(&rng, 2, 6, 8, 4, 2, 8, 8, 3, ATTN_BIGBIRD_UNION, 1, 0, ATTN_F32, ATTN_F32, 16);
    bbw_run(&rng, 2, 4, 128, 4, 2, 16, 8, 1, ATTN_BIGBIRD_HF_LISTED, 1, 0, ATTN_F32, ATTN_F32, 0); /* K^T, V^T packed once, 2 pieces */
    bbw_run(&rng, 2, 4, 8, 2, 1, 8, 8, 2, ATTN_BIGBIRD_HF_LISTED, 0, 1, ATTN_F32, ATTN_F32, 16);   /* hf_fallback */
    bbw_run(&rng, 1, 1, 16, 2, 2, 4, 4, 3, ATTN_BIGBIRD_UNION, 0, 0, ATTN_F32, ATTN_F32, -1);     /* one block */
    bbw_run(&rng, 2, 2, 8, 1, 1, 4, 4, 3, ATTN_BIGBIRD_HF_EVAL, 0, 0, ATTN_F32, ATTN_F32, -1);    /* two blocks */
    bbw_run(&rng, 2, 5, 64, 4, 2, 32, 24, 2, ATTN_BIGBIRD_HF_EVAL, 0, 0, ATTN_F16, ATTN_BF16, 0);
    for (it = 0; it < n; ++it) {
        const int Hkv = t_irange(&rng, 1, 2), Hq = Hkv * t_irange(&rng, 1, 3), blk = t_pick(&rng, blks, 8);
        const int nb = t_irange(&rng, 1, blk >= 64 ? 5 : 9), small = nb * blk <= 64;
        const attn_dtype tin = it < n / 2 ? ATTN_F32 : dts[t_irange(&rng, 0, 2)];
        const attn_dtype tgrad = it < n / 2 ? ATTN_F32 : dts[t_irange(&rng, 0, 2)];
        bbw_run(&rng, t_irange(&rng, 1, 3), nb, blk, Hq, Hkv, t_irange(&rng, 1, 20), t_irange(&rng, 1, 20), t_irange(&rng, 0, 4),
                t_irange(&rng, 0, 2), t_chance(&rng, 0.3), t_chance(&rng, 0.2), tin, tgrad, small ? 8 : 0);
    }
}

/* Bitwise: n_threads 1/2/3, a caller workspace; HF_EVAL == HF_LISTED with zeros; the seeded
   table == the same table passed. Also the short workspace. */
static void bbw_props(void) {
    t_rng rng = t_rng_seed(77);
    const int B = 2, nb = 7, blk = 32, S = nb * blk, Hq = 4, Hkv = 2, D = 16, Dv = 12, r = 2;
    t_owned q = t_owned_dense(ATTN_F32, B, S, Hq, D), k = t_owned_dense(ATTN_F32, B, S, Hkv, D), v = t_owned_dense(ATTN_F32, B, S, Hkv, Dv);
    t_owned dO = t_owned_dense(ATTN_F32, B, S, Hq, Dv), o = t_owned_dense(ATTN_F32, B, S, Hq, Dv);
    t_owned g[3], first[3];
    int lq[2] = { 200, 150 }, lk[2] = { 200, 150 }, *table = (int *)t_xmalloc(sizeof(int) * Hq * (nb - 2) * r), mode, th, w;
    float *lse = (float *)t_xmalloc(sizeof(float) * B * Hq * S);
    attn_desc d;
    g[0] = t_owned_dense(ATTN_F32, B, S, Hq, D); g[1] = t_owned_dense(ATTN_F32, B, S, Hkv, D); g[2] = t_owned_dense(ATTN_F32, B, S, Hkv, Dv);
    for (w = 0; w < 3; ++w) first[w] = t_owned_dense(ATTN_F32, g[w].t.batch, g[w].t.seq, g[w].t.heads, g[w].t.dim);
    t_fill_normal(&q.t, &rng, 1.0); t_fill_normal(&k.t, &rng, 1.0); t_fill_normal(&v.t, &rng, 1.0); t_fill_normal(&dO.t, &rng, 1.0);
    for (mode = 0; mode < 3; ++mode) {   /* 0 seeded LISTED, 1 explicit table, 2 HF_EVAL */
        memset(&d, 0, sizeof d);
        d.kind = ATTN_BIGBIRD; d.bigbird.block = blk; d.bigbird.random_blocks = r; d.bigbird.seed = 4242;
        d.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED;
        d.seqlens_q = lq; d.seqlens_k = lk;
        T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, lse) == ATTN_OK, "bigbird-bwd props: forward");
        for (th = 1; th <= 4; ++th) {
            attn_desc e = d;
            size_t bytes = 0, m0;
            void *ws = NULL;
            e.n_threads = th == 4 ? 2 : th;
            if (mode == 0 && th == 1) {   /* the drawn table, explicitly: same bits from mode 1 on */
                T_CHECK(attn_bigbird_random_table(&d, Hq, S, table) == ATTN_OK, "bigbird-bwd props: table");
            }
            if (mode == 1) e.bigbird.random_table = table;
            if (mode == 2) {              /* HF_EVAL vs HF_LISTED with zeros: compare with run 1 of this mode */
                if (th == 1) { int i; for (i = 0; i < Hq * (nb - 2) * r; ++i) table[i] = 0; }
                e.bigbird.multiplicity = th == 1 ? ATTN_BIGBIRD_HF_EVAL : ATTN_BIGBIRD_HF_LISTED;
                e.bigbird.random_table = table;
            }
            if (th == 4) {
                T_CHECK(attn_backward_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "bigbird-bwd workspace size");
                ws = t_xmalloc(bytes);
                e.workspace = ws; e.workspace_size = bytes - 1;
                for (w = 0; w < 3; ++w) t_sentinel(g[w].buf, g[w].n * 4, (unsigned char)(40 + w));
                T_CHECK(attn_backward(&e, q.t, k.t, v.t, o.t, dO.t, lse, g[0].t, g[1].t, g[2].t) == ATTN_ERR_WORKSPACE &&
                        t_sentinel_ok(g[0].buf, g[0].n * 4, 40) && t_sentinel_ok(g[1].buf, g[1].n * 4, 41) &&
                        t_sentinel_ok(g[2].buf, g[2].n * 4, 42), "bigbird-bwd: a short workspace");
                e.workspace_size = bytes;
            }
            m0 = t_attn_mallocs;
            T_CHECK(attn_backward(&e, q.t, k.t, v.t, o.t, dO.t, lse, g[0].t, g[1].t, g[2].t) == ATTN_OK, "bigbird-bwd props mode %d run %d", mode, th);
            if (th == 4) T_CHECK(t_attn_mallocs == m0, "bigbird-bwd with a caller workspace allocated");
            free(ws);
            for (w = 0; w < 3; ++w) {
                if (mode == 0 && th == 1) memcpy(first[w].buf, g[w].buf, g[w].n * 4);
                else if (mode == 2 && th == 1) memcpy(first[w].buf, g[w].buf, g[w].n * 4);
                else T_CHECK(memcmp(first[w].buf, g[w].buf, g[w].n * 4) == 0, "bigbird-bwd props: mode %d run %d differs (grad %d)",
                             mode, th, w);
            }
        }
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&dO); t_owned_free(&o);
    for (w = 0; w < 3; ++w) { t_owned_free(&g[w]); t_owned_free(&first[w]); }
    free(table); free(lse);
}

/* Chunks: B 2, Hq 4 / Hkv 2, D 128, S 512, block 64: a unit's partials (2 heads x 64 pairs x
   64 x 128 floats) are 4 MiB, so attn.h's 8 MiB chunks hold max(n_threads, 2) of the 4 units:
   two chunks at 1 thread, one at 4. Against the double reference (bbw_run: 1-3 threads, two
   chunks), then bitwise 1 thread == 4 threads. */
static void bbw_chunked(void) {
    t_rng rng = t_rng_seed(4343);
    const int B = 2, S = 512, Hq = 4, Hkv = 2, D = 128, Dv = 24;
    t_owned q = t_owned_dense(ATTN_F32, B, S, Hq, D), k = t_owned_dense(ATTN_F32, B, S, Hkv, D), v = t_owned_dense(ATTN_F32, B, S, Hkv, Dv);
    t_owned dO = t_owned_dense(ATTN_F32, B, S, Hq, Dv), o = t_owned_dense(ATTN_F32, B, S, Hq, Dv), g[2][3];
    float *lse = (float *)t_xmalloc(sizeof(float) * B * Hq * S);
    int lens[2] = { 512, 300 }, run, w, same = 1;
    attn_desc d;
    bbw_run(&rng, B, S / 64, 64, Hq, Hkv, D, Dv, 3, ATTN_BIGBIRD_HF_LISTED, 1, 0, ATTN_F32, ATTN_F32, 0);
    t_fill_normal(&q.t, &rng, 1.0); t_fill_normal(&k.t, &rng, 1.0); t_fill_normal(&v.t, &rng, 1.0); t_fill_normal(&dO.t, &rng, 1.0);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD; d.bigbird.block = 64; d.bigbird.random_blocks = 3; d.bigbird.seed = 9;
    d.seqlens_q = d.seqlens_k = lens;
    T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, lse) == ATTN_OK, "bigbird-bwd chunks: forward");
    for (run = 0; run < 2; ++run) {
        g[run][0] = t_owned_dense(ATTN_F32, B, S, Hq, D); g[run][1] = t_owned_dense(ATTN_F32, B, S, Hkv, D);
        g[run][2] = t_owned_dense(ATTN_F32, B, S, Hkv, Dv);
        d.n_threads = run ? 4 : 1;
        T_CHECK(attn_backward(&d, q.t, k.t, v.t, o.t, dO.t, lse, g[run][0].t, g[run][1].t, g[run][2].t) == ATTN_OK,
                "bigbird-bwd chunks: backward, %d threads", d.n_threads);
    }
    for (w = 0; w < 3; ++w) same &= memcmp(g[0][w].buf, g[1][w].buf, g[0][w].n * 4) == 0;
    T_CHECK(same, "bigbird-bwd chunks: two chunks (1 thread) and one (4 threads) differ");
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&dO); t_owned_free(&o);
    for (run = 0; run < 2; ++run) for (w = 0; w < 3; ++w) t_owned_free(&g[run][w]);
    free(lse);
}

/* The backward statuses: exact code, gradients untouched. */
static void bbw_errors(void) {
    t_owned q = t_owned_dense(ATTN_F32, 2, 64, 2, 8), k = t_owned_dense(ATTN_F32, 2, 64, 1, 8), v = t_owned_dense(ATTN_F32, 2, 64, 1, 8);
    t_owned o = t_owned_dense(ATTN_F32, 2, 64, 2, 8), dO = t_owned_dense(ATTN_F32, 2, 64, 2, 8);
    t_owned g[3];
    float lse[2 * 2 * 64];
    int lq[2] = { 64, 10 }, i, w;
    g[0] = t_owned_dense(ATTN_F32, 2, 64, 2, 8); g[1] = t_owned_dense(ATTN_F32, 2, 64, 1, 8); g[2] = t_owned_dense(ATTN_F32, 2, 64, 1, 8);
    memset(q.buf, 0, q.n * 4); memset(k.buf, 0, k.n * 4); memset(v.buf, 0, v.n * 4); memset(o.buf, 0, o.n * 4);
    memset(dO.buf, 0, dO.n * 4); memset(lse, 0, sizeof lse);
    for (i = 0; i < 17; ++i) {
        attn_desc d;
        attn_tensor a = dO.t, gq = g[0].t, gk = g[1].t, gv = g[2].t, ot = o.t, kt = k.t;
        const float *lp = lse;
        attn_status want = ATTN_OK, got;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_BIGBIRD; d.bigbird.block = 16; d.bigbird.random_blocks = 1; d.seqlens_q = d.seqlens_k = lq;
        switch (i) {
        case 0: a.data = NULL; want = ATTN_ERR_BWD_NULL_DOUT; break;
        case 1: gq.data = NULL; want = ATTN_ERR_BWD_NULL_DQ; break;
        case 2: gk.data = NULL; want = ATTN_ERR_BWD_NULL_DK; break;
        case 3: gv.data = NULL; want = ATTN_ERR_BWD_NULL_DV; break;
        case 4: lp = NULL; want = ATTN_ERR_BWD_NULL_LSE; break;
        case 5: a.seq = 32; want = ATTN_ERR_BWD_DOUT_SHAPE; break;
        case 6: gq.dim = 4; want = ATTN_ERR_BWD_DQ_SHAPE; break;
        case 7: gk.heads = 2; want = ATTN_ERR_BWD_DK_SHAPE; break;
        case 8: gv.seq = 32; want = ATTN_ERR_BWD_DV_SHAPE; break;
        case 9: gq.stride_seq = 0; want = ATTN_ERR_BWD_DQ_BROADCAST; break;
        case 10: gk.stride_batch = 0; want = ATTN_ERR_BWD_DK_BROADCAST; break;
        case 11: gv.stride_head = 0; gv.heads = 1; gv.stride_seq = 0; want = ATTN_ERR_BWD_DV_BROADCAST; break;
        case 12: d.bigbird.multiplicity = 5; want = ATTN_ERR_BIGBIRD_MULTIPLICITY; break;
        case 13: d.causal = 1; want = ATTN_ERR_SPARSE_MASKS; break;
        case 14: ot.data = NULL; want = ATTN_ERR_NULL_OUT; break;
        case 15: d.workspace = lse; d.workspace_size = 16; want = ATTN_ERR_WORKSPACE; break;
        case 16: kt.seq = 32; want = ATTN_ERR_SPARSE_SELF; break;
        }
        for (w = 0; w < 3; ++w) t_sentinel(g[w].buf, g[w].n * 4, (unsigned char)(50 + w));
        got = attn_backward(&d, q.t, kt, kt.seq == 32 ? t_seq_view(v.t, 0, 32) : v.t, ot, a, lp, gq, gk, gv);
        if (T_CHECK(got == want, "bigbird-bwd error %d: got %s, want %s", i, attn_status_str(got), attn_status_str(want)))
            t_status_provoked[want] = 1;
        T_CHECK(t_sentinel_ok(g[0].buf, g[0].n * 4, 50) && t_sentinel_ok(g[1].buf, g[1].n * 4, 51) &&
                t_sentinel_ok(g[2].buf, g[2].n * 4, 52), "bigbird-bwd error %d: a gradient was written", i);
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&dO);
    for (w = 0; w < 3; ++w) t_owned_free(&g[w]);
}

/* HF's autograd: tests/fixtures/bigbird_bwd_hf.txt, its arrays in file order */
#define BBW_FIX_N 16
static void bbw_fixture(void) {
    static const char *const names[BBW_FIX_N] = { "config", "lengths", "q", "k", "v", "dout",
        "eval_table", "eval_out", "eval_dq", "eval_dk", "eval_dv", "train_table", "train_out", "train_dq", "train_dk", "train_dv" };
    double *a[BBW_FIX_N];
    size_t cnt[BBW_FIX_N], n = 0, e;
    int B = 0, S = 0, H = 0, Dh = 0, blk = 1, r = 0, ok, mode, i, w, lengths[2], *table = NULL;
    t_owned t[4], o, g[3];
    memset(a, 0, sizeof a);
    cnt[0] = 6;
    a[0] = (double *)t_xmalloc(sizeof(double) * 6);
    ok = T_FIXTURE("bigbird_bwd_hf.txt", names[0], a[0], 6);
    if (ok) {   /* the config gives every other array's count */
        B = (int)a[0][0]; S = (int)a[0][1]; H = (int)a[0][2]; Dh = (int)a[0][3]; blk = (int)a[0][4]; r = (int)a[0][5];
        n = (size_t)B * S * H * Dh;
        ok = B >= 1 && B <= 2 && blk >= 1 && S >= 3 * blk && S <= 1024 && S % blk == 0 && H >= 1 && H <= 8 &&
             Dh >= 1 && Dh <= 64 && r >= 1;
        for (i = 1; ok && i < BBW_FIX_N; ++i) {
            cnt[i] = i == 1 ? (size_t)B : i == 6 || i == 11 ? (size_t)H * (S / blk - 2) * r : n;
            a[i] = (double *)t_xmalloc(sizeof(double) * cnt[i]);
            ok = T_FIXTURE("bigbird_bwd_hf.txt", names[i], a[i], cnt[i]);
        }
    }
    if (!T_CHECK(ok, "bigbird-bwd fixture: cannot read tests/fixtures/bigbird_bwd_hf.txt (run from the repository root or set "
                 "ATTN_FIXTURES)")) goto done;
    for (i = 0; i < B; ++i) lengths[i] = (int)a[1][i];
    for (i = 0; i < 4; ++i) {
        t[i] = t_owned_dense(ATTN_F32, B, S, H, Dh);
        for (e = 0; e < n; ++e) ((float *)t[i].buf)[e] = (float)a[2 + i][e];
    }
    o = t_owned_dense(ATTN_F32, B, S, H, Dh);
    for (w = 0; w < 3; ++w) g[w] = t_owned_dense(ATTN_F32, B, S, H, Dh);
    table = (int *)t_xmalloc(sizeof(int) * cnt[6]);
    for (mode = 0; mode < 2; ++mode) {   /* 0: eval (HF's all-zero rand_attn), 1: the recorded training draw */
        const double *const *ref = (const double *const *)a + 7 + 5 * mode;   /* out, dq, dk, dv */
        float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * S);
        double worst[4] = { 0, 0, 0, 0 };
        attn_desc d;
        attn_status s1, s2;
        int p;
        for (e = 0; e < cnt[6]; ++e) table[e] = (int)a[6 + 5 * mode][e];
        memset(&d, 0, sizeof d);
        d.kind = ATTN_BIGBIRD; d.bigbird.block = blk; d.bigbird.random_blocks = r;   /* scale 0: 1/sqrt(head_dim), as HF */
        d.seqlens_q = lengths; d.seqlens_k = lengths;                               /* HF's attention_mask row sums */
        if (mode == 0) d.bigbird.multiplicity = ATTN_BIGBIRD_HF_EVAL;
        else { d.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED; d.bigbird.random_table = table; }
        s1 = attn_forward(&d, t[0].t, t[1].t, t[2].t, o.t, lse);
        s2 = attn_backward(&d, t[0].t, t[1].t, t[2].t, o.t, t[3].t, lse, g[0].t, g[1].t, g[2].t);
        ok = s1 == ATTN_OK && s2 == ATTN_OK;
        for (p = 0; ok && p < 4; ++p) {
            const float *got = p == 0 ? (const float *)o.buf : (const float *)g[p - 1].buf;
            for (e = 0; e < n; ++e) {
                const double err = fabs(got[e] - ref[p][e]);
                if (!(err <= 1e-4 * fmax(1.0, fabs(ref[p][e])))) ok = 0;
                if (!(err <= worst[p])) worst[p] = err;
            }
        }
        if (T_CHECK(ok, "bigbird-bwd fixture (%s): attn.h differs from HF autograd (status %d/%d; worst |error| out %.3g dq %.3g dk %.3g dv %.3g)",
                    mode ? "train" : "eval", (int)s1, (int)s2, worst[0], worst[1], worst[2], worst[3]))
            printf("      bigbird-bwd fixture (%s): worst |error| against HF out %.2g, dq %.2g, dk %.2g, dv %.2g (tolerance 1e-4 max(1, |HF|))\n",
                   mode ? "train" : "eval", worst[0], worst[1], worst[2], worst[3]);
        free(lse);
    }
    for (i = 0; i < 4; ++i) t_owned_free(&t[i]);
    t_owned_free(&o);
    for (w = 0; w < 3; ++w) t_owned_free(&g[w]);
done:
    for (i = 0; i < BBW_FIX_N; ++i) free(a[i]);
    free(table);
}

void test_bigbird_bwd(void) {
    bbw_errors();
    bbw_fixture();
    bbw_props();
    bbw_chunked();
    bbw_sweep();
    t_packed_bigbird();
    printf("      bigbird-bwd: largest passing fp32 gradient error %.3g (tolerance %.0e)\n", g_bbw_worst, BBW_TOL);
}
