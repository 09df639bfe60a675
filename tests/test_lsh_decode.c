/* tests/test_lsh_decode.c - ATTN_LSH's attn_decode (HF's Reformer generation with use_cache:
   the cached step's bucket selection) and attn_lsh_buckets, against an independent double
   reference written from modeling_reformer.py (LSHSelfAttention.forward with
   past_buckets_states, _get_relevant_hid_states_and_buckets, _expand_to_indices_in_relevant_chunk,
   _attend with use_cache, the round merge), plus the fixture made by
   tests/fixtures/reformer_hf_decode.py (HF's own prefill and steps), reproduced through
   attn_forward, attn_lsh_buckets and attn_decode with documented fields only. */
#include "test.h"

#define LD_TOL 2e-5

/* ---- the reference --------------------------------------------------------------------------
   One query at position t of a sequence whose cache holds k, v rows 0..t (dense double
   [cap][H][D|Dv], this sequence only), head h. With buckets (bk [cap][H][nh], HF's values):
   per round r, torch's _stable_argsort of the values of 0..t (argsort of value * (t+1) + position,
   here a qsort of (value, position) pairs); the query's sorted index p (its row in bucket_idx,
   the largest position); the window start ((p // c) - cb) * c, (cb + 1 + ca) * c indices each
   % (t + 1) (Python's modulo: non-negative); the keys at those sorted indices; logits
   scale q . k / sqrt(mean(k^2) + 1e-6), the query's own position -1e5; logsumexp and softmax.
   Without buckets: one softmax over 0..t with the same self logit. Rounds merged: exactly,
   or (hfm) each lse_r and their logsumexp rounded to fp32 as HF computes them, weights
   exp(lse_r - L). */
typedef struct { int value, pos; } ld_ent;
static int ld_cmp(const void *a, const void *b) {
    const ld_ent *x = (const ld_ent *)a, *y = (const ld_ent *)b;
    if (x->value != y->value) return x->value < y->value ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void ld_ref_query(const double *q, const double *K, const double *V, const int *bk, int H, int D, int Dv, int h, int t,
                         int nh, int c, int cb, int ca, double scale, int hfm, double *out, double *lse) {
    const int rounds = bk ? nh : 1, n = t + 1, W = bk ? (cb + 1 + ca) * c : n;
    ld_ent *ax = (ld_ent *)t_xmalloc(sizeof(ld_ent) * (size_t)n);
    double *o = (double *)t_xmalloc(sizeof(double) * (size_t)rounds * Dv), *lr = (double *)t_xmalloc(sizeof(double) * rounds);
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)W);
    int *kid = (int *)t_xmalloc(sizeof(int) * (size_t)W);
    double L = -INFINITY, mx;
    int r, u, j, e;
    for (r = 0; r < rounds; ++r) {
        double sum = 0;
        if (!bk) for (u = 0; u < W; ++u) kid[u] = u;
        else {
            int p = -1;
            long long start;
            for (j = 0; j < n; ++j) { ax[j].value = bk[((size_t)j * H + h) * nh + r]; ax[j].pos = j; }
            qsort(ax, (size_t)n, sizeof *ax, ld_cmp);
            for (j = 0; j < n; ++j) if (ax[j].pos == t) p = j;
            start = ((long long)(p / c) - cb) * c;
            for (u = 0; u < W; ++u) kid[u] = ax[(((start + u) % n) + n) % n].pos;
        }
        mx = -INFINITY;
        for (u = 0; u < W; ++u) {
            const double *k = K + ((size_t)kid[u] * H + h) * D;
            double ss = 0, dot = 0;
            for (e = 0; e < D; ++e) { ss += k[e] * k[e]; dot += q[e] * k[e]; }
            s[u] = kid[u] == t ? -1e5 : scale * dot / sqrt(ss / D + 1e-6);
            if (s[u] > mx) mx = s[u];
        }
        for (e = 0; e < Dv; ++e) o[(size_t)r * Dv + e] = 0;
        for (u = 0; u < W; ++u) {
            const double w = exp(s[u] - mx), *v = V + ((size_t)kid[u] * H + h) * Dv;
            sum += w;
            for (e = 0; e < Dv; ++e) o[(size_t)r * Dv + e] += w * v[e];
        }
        for (e = 0; e < Dv; ++e) o[(size_t)r * Dv + e] /= sum;
        lr[r] = mx + log(sum);
        if (hfm) lr[r] = (float)lr[r];
    }
    mx = -INFINITY;
    for (r = 0; r < rounds; ++r) if (lr[r] > mx) mx = lr[r];
    for (L = 0, r = 0; r < rounds; ++r) L += exp(lr[r] - mx);
    L = mx + log(L);
    if (hfm) L = (float)L;
    for (e = 0; e < Dv; ++e) out[e] = 0;
    for (r = 0; r < rounds; ++r)
        for (e = 0; e < Dv; ++e) out[e] += o[(size_t)r * Dv + e] * exp(lr[r] - L);
    *lse = L;
    free(ax); free(o); free(lr); free(s); free(kid);
}

/* A problem: a contiguous cache k, v [B][cap][H][D|Dv] (any dtype), q [B][Sq][H][D], lens,
   buckets [B][cap][H][nh] or NULL, seqlens_q or NULL. Reference out [B][Sq][H][Dv], lse [B][H][Sq]. */
static void ld_ref(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const int *lens, const int *sq,
                   const int *bk, int nh, int c, int cb, int ca, double scale, int hfm, double *out, double *lse) {
    const int B = q->batch, Sq = q->seq, H = q->heads, D = q->dim, Dv = v->dim, cap = k->seq;
    double *qd = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * H * D);
    double *kd = (double *)t_xmalloc(sizeof(double) * (size_t)B * cap * H * D), *vd = (double *)t_xmalloc(sizeof(double) * (size_t)B * cap * H * Dv);
    int b, i, h, e;
    t_read(q, qd); t_read(k, kd); t_read(v, vd);
    for (b = 0; b < B; ++b)
        for (i = 0; i < Sq; ++i)
            for (h = 0; h < H; ++h) {
                const int nq = sq ? sq[b] : Sq;
                double *o = out + (((size_t)b * Sq + i) * H + h) * Dv, *l = lse + ((size_t)b * H + h) * Sq + i;
                if (i >= nq) { for (e = 0; e < Dv; ++e) o[e] = 0; *l = -INFINITY; continue; }
                ld_ref_query(qd + (((size_t)b * Sq + i) * H + h) * D, kd + (size_t)b * cap * H * D, vd + (size_t)b * cap * H * Dv,
                             bk ? bk + (size_t)b * cap * H * nh : NULL, H, D, Dv, h, lens[b] - nq + i, nh, c, cb, ca, scale, hfm, o, l);
            }
    free(qd); free(kd); free(vd);
}

/* max |got - ref| relative to max(1, |ref|), out and lse; padding rows exactly 0 / -inf */
static double ld_err(const attn_tensor *out, const float *lse, const double *ro, const double *rl, const int *sq, int *pad_ok) {
    const int B = out->batch, Sq = out->seq, H = out->heads, Dv = out->dim;
    double worst = 0;
    int b, i, h, e;
    *pad_ok = 1;
    for (b = 0; b < B; ++b)
        for (i = 0; i < Sq; ++i)
            for (h = 0; h < H; ++h) {
                const int pad = sq && i >= sq[b];
                const double L = rl[((size_t)b * H + h) * Sq + i], gl = lse[((size_t)b * H + h) * Sq + i];
                for (e = 0; e < Dv; ++e) {
                    const double want = ro[(((size_t)b * Sq + i) * H + h) * Dv + e], got = t_load(out, b, i, h, e);
                    const double err = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
                    if (pad) { if (got != 0.0) *pad_ok = 0; continue; }
                    if (!(err <= worst)) worst = err;
                }
                if (pad) { if (gl != -INFINITY) *pad_ok = 0; continue; }
                if (!(fabs(gl - L) / (fabs(L) > 1 ? fabs(L) : 1) <= worst)) worst = fabs(gl - L) / (fabs(L) > 1 ? fabs(L) : 1);
            }
    return worst;
}

/* A contiguous cache of B sequences, capacity cap (q, k, v as given tensors). */
static attn_kv_cache ld_cache(attn_tensor k, attn_tensor v, int *lens) {
    attn_kv_cache C;
    memset(&C, 0, sizeof C);
    C.k = k; C.v = v; C.lens = lens; C.batch = k.batch;
    return C;
}

/* ---- random problems against the reference, and properties ------------------------------- */
static void ld_case(t_rng *r, int B, int H, int D, int Dv, attn_dtype kvt, attn_dtype qt, int cap, int Sq, int nh, int nb,
                    const int *fac, int nfac, int c, int cb, int ca, int with_bk, int with_sq, int hfm, int narrow) {
    t_owned q = t_owned_dense(qt, B, Sq, H, D), k = t_owned_dense(kvt, B, cap, H, D), v = t_owned_dense(kvt, B, cap, H, Dv);
    t_owned o = t_owned_dense(ATTN_F32, B, Sq, H, Dv), o1 = t_owned_dense(ATTN_F32, B, Sq, H, Dv);
    int *lens = (int *)t_xmalloc(sizeof(int) * B), *sq = (int *)t_xmalloc(sizeof(int) * B), *bk = NULL;
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * Sq), *lse1 = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * Sq);
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * H * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * H * Sq);
    int b, i, nball = nb, range, pad_ok, ok;
    double err;
    attn_desc d;
    attn_kv_cache C;
    attn_status s;
    for (i = 0; i < nfac; ++i) nball = i ? nball * fac[i] : fac[0];
    range = nh * (nball + 1);
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    for (b = 0; b < B; ++b) {
        sq[b] = with_sq ? t_irange(r, 0, Sq) : Sq;
        lens[b] = t_irange(r, sq[b] > 0 ? sq[b] : 0, cap);
        if (lens[b] == 0 && Sq > 0 && !with_sq) lens[b] = Sq;
    }
    if (with_bk) {   /* HF's values; narrow: few distinct ones (long runs of ties) */
        bk = (int *)t_xmalloc(sizeof(int) * (size_t)B * cap * H * nh);
        for (i = 0; i < B * cap * H * nh; ++i) bk[i] = t_irange(r, 0, narrow ? (range < 3 ? range - 1 : 2) : range - 1);
    }
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = c; d.lsh.n_hashes = nh; d.lsh.hf_merge = hfm; d.causal = t_chance(r, 0.5);
    if (nfac) for (i = 0; i < nfac; ++i) d.lsh.bucket_factors[i] = fac[i];
    else d.lsh.n_buckets = nb;
    d.lsh.chunks_before = cb ? cb : ATTN_LSH_CHUNKS_ZERO; d.lsh.chunks_after = ca;
    d.lsh.buckets = bk; d.seqlens_q = with_sq ? sq : NULL;
    d.n_threads = t_irange(r, 1, 3);
    C = ld_cache(k.t, v.t, lens);
    s = attn_decode(&d, q.t, &C, o.t, lse);
    ld_ref(&q.t, &k.t, &v.t, lens, with_sq ? sq : NULL, bk, nh, c, cb, ca, 1.0 / sqrt((double)D), hfm, ro, rl);
    err = ld_err(&o.t, lse, ro, rl, with_sq ? sq : NULL, &pad_ok);
    ok = T_CHECK(s == ATTN_OK && pad_ok && err <= LD_TOL,
                 "lsh decode B %d H %d D %d Dv %d %s/%s cap %d Sq %d nh %d nb %d nfac %d c %d cb %d ca %d bk %d sq %d hfm %d: "
                 "max rel error %.3g vs the reference (status %s, padding rows %s)", B, H, D, Dv, t_dt_name(kvt), t_dt_name(qt), cap,
                 Sq, nh, nb, nfac, c, cb, ca, with_bk, with_sq, hfm, err, attn_status_str(s), pad_ok ? "ok" : "written");
    if (ok && !with_sq) {   /* Sq queries == Sq one-token steps (lens shortened), bitwise; threads too */
        int j, same = 1, e, h;
        int *l1 = (int *)t_xmalloc(sizeof(int) * B);
        attn_desc d1 = d;
        d1.n_threads = 1;
        for (j = 0; j < Sq; ++j) {
            attn_tensor qj = t_seq_view(q.t, j, 1), oj = t_seq_view(o1.t, j, 1);
            float *l = (float *)t_xmalloc(sizeof(float) * (size_t)B * H);
            for (b = 0; b < B; ++b) l1[b] = lens[b] - Sq + j + 1;
            C.lens = l1;
            if (attn_decode(&d1, qj, &C, oj, l) != ATTN_OK) same = 0;
            for (b = 0; b < B; ++b)
                for (h = 0; h < H; ++h) if (memcmp(&l[b * H + h], &lse[((size_t)b * H + h) * Sq + j], sizeof(float))) same = 0;
            free(l);
        }
        C.lens = lens;
        for (b = 0; b < B; ++b)
            for (i = 0; i < Sq; ++i)
                for (h = 0; h < H; ++h)
                    for (e = 0; e < Dv; ++e) if (t_load(&o.t, b, i, h, e) != t_load(&o1.t, b, i, h, e)) same = 0;
        T_CHECK(same, "lsh decode: %d queries must be bitwise %d one-token steps (and independent of n_threads)", Sq, Sq);
        free(l1);
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o1);
    free(lens); free(sq); free(bk); free(lse); free(lse1); free(ro); free(rl);
}

/* A paged cache (shuffled pages) gives bitwise the contiguous cache's result. */
static void ld_paged(t_rng *r) {
    const int B = 2, H = 2, D = 8, Dv = 6, ps = 4, mp = 5, cap = ps * mp, nh = 2, nb = 4;
    t_owned q = t_owned_dense(ATTN_F32, B, 1, H, D), k = t_owned_dense(ATTN_F16, B, cap, H, D), v = t_owned_dense(ATTN_F16, B, cap, H, Dv);
    t_owned pk = t_owned_dense(ATTN_F16, B * mp, ps, H, D), pv = t_owned_dense(ATTN_F16, B * mp, ps, H, Dv);
    t_owned o = t_owned_dense(ATTN_F32, B, 1, H, Dv), o2 = t_owned_dense(ATTN_F32, B, 1, H, Dv);
    int lens[2] = { 17, 9 }, table[2 * 5], bk[2 * 20 * 2 * 2], i, b, t, h, e;
    attn_desc d;
    attn_kv_cache C, P;
    for (i = 0; i < B * mp; ++i) table[i] = (i * 7 + 3) % (B * mp);   /* a permutation of the pool */
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    for (b = 0; b < B; ++b)
        for (t = 0; t < cap; ++t)
            for (h = 0; h < H; ++h) {
                const int pg = table[b * mp + t / ps];
                for (e = 0; e < D; ++e) t_store(&pk.t, pg, t % ps, h, e, t_load(&k.t, b, t, h, e));
                for (e = 0; e < Dv; ++e) t_store(&pv.t, pg, t % ps, h, e, t_load(&v.t, b, t, h, e));
            }
    for (i = 0; i < (int)(sizeof bk / sizeof bk[0]); ++i) bk[i] = t_irange(r, 0, nh * (nb + 1) - 1);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 2; d.lsh.n_hashes = nh; d.lsh.n_buckets = nb; d.lsh.buckets = bk;
    C = ld_cache(k.t, v.t, lens);
    memset(&P, 0, sizeof P);
    P.k = pk.t; P.v = pv.t; P.lens = lens; P.batch = B; P.page_size = ps; P.block_table = table; P.max_pages = mp;
    T_CHECK(attn_decode(&d, q.t, &C, o.t, NULL) == ATTN_OK && attn_decode(&d, q.t, &P, o2.t, NULL) == ATTN_OK &&
            memcmp(o.buf, o2.buf, o.n * 4) == 0, "lsh decode: a paged cache must give bitwise the contiguous cache's result");
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&pk); t_owned_free(&pv); t_owned_free(&o); t_owned_free(&o2);
}

/* attn_lsh_buckets against a double hash of the same rows (near ties skipped): the first
   maximum of [x R, -x R] per factor, R as attn_lsh_rotations draws it (or given in HF's layout),
   padding rows the pad bucket. */
static void ld_buckets_case(t_rng *r, int B, int S, int H, int D, attn_dtype dt, int nh, int nb, const int *fac, int nfac,
                            int given, int pad) {
    t_owned k = t_owned_dense(dt, B, S, H, D);
    int *got = (int *)t_xmalloc(sizeof(int) * (size_t)B * S * H * nh), lens[4], f1[1], *fs = nfac ? (int *)fac : f1;
    int nf = nfac ? nfac : 1, cols = 0, nball = 1, i, b, t, h, rr, ok = 1, checked = 0;
    float *R;
    attn_desc d;
    attn_status s;
    f1[0] = nb;
    for (i = 0; i < nf; ++i) { cols += fs[i] / 2; nball *= fs[i]; }
    R = (float *)t_xmalloc(sizeof(float) * (size_t)H * nh * D * cols);
    t_fill_normal(&k.t, r, 1.0);
    for (b = 0; b < B; ++b) lens[b] = pad ? t_irange(r, 0, S) : S;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.n_hashes = nh; d.lsh.seed = 99; d.lsh.bucket_size = 1;
    if (nfac) for (i = 0; i < nfac; ++i) d.lsh.bucket_factors[i] = fac[i];
    else d.lsh.n_buckets = nb;
    d.lsh.rotations_layout = given ? ATTN_LSH_ROT_HF : ATTN_LSH_ROT_ATTN;
    if (pad) d.seqlens_k = lens;
    if (!T_CHECK(attn_lsh_rotations(&d, H, S, D, R) == ATTN_OK, "lsh buckets: attn_lsh_rotations")) { free(R); free(got); t_owned_free(&k); return; }
    if (given) d.lsh.rotations = R;
    s = attn_lsh_buckets(&d, k.t, got);
    for (b = 0; b < B; ++b)
        for (t = 0; t < S; ++t)
            for (h = 0; h < H; ++h)
                for (rr = 0; rr < nh; ++rr) {
                    const int g = got[(((size_t)b * S + t) * H + h) * nh + rr];
                    int want = 0, mult = 1, off = 0, ft, j, e, tie = 0;
                    if (t >= lens[b]) { if (g != nball) ok = 0; continue; }
                    for (ft = 0; ft < nf; ++ft) {
                        const int fh = fs[ft] / 2;
                        double best = -INFINITY, second = -INFINITY;
                        int arg = 0;
                        for (j = 0; j < 2 * fh; ++j) {
                            double y = 0;
                            for (e = 0; e < D; ++e) {
                                const size_t ix = given ? (((size_t)h * D + e) * nh + rr) * cols + off + j % fh
                                                        : (((size_t)h * nh + rr) * D + e) * cols + off + j % fh;
                                y += t_load(&k.t, b, t, h, e) * R[ix];
                            }
                            if (j >= fh) y = -y;
                            if (y > best) { second = best; best = y; arg = j; }
                            else if (y > second) second = y;
                        }
                        if (best - second < 1e-4) tie = 1;
                        want += mult * arg; mult *= fs[ft]; off += fh;
                    }
                    if (tie) continue;
                    ++checked;
                    if (g != want) ok = 0;
                }
    T_CHECK(s == ATTN_OK && ok && checked > 0, "lsh buckets B %d S %d H %d D %d %s nh %d nb %d nfac %d given %d pad %d: "
            "attn_lsh_buckets differs from the double hash (status %s, %d rows checked)", B, S, H, D, t_dt_name(dt), nh, nb, nfac,
            given, pad, attn_status_str(s), checked);
    free(R); free(got); t_owned_free(&k);
}

/* ---- HF's own outputs (tests/fixtures/reformer_hf_decode.txt) ------------------------------- */
static int ld_read_floats(FILE *f, const char *name, float *x, size_t n) {
    char tag[32];
    size_t i;
    if (fscanf(f, "%31s", tag) != 1 || strcmp(tag, name) != 0) return 0;
    for (i = 0; i < n; ++i) if (fscanf(f, "%f", &x[i]) != 1) return 0;
    return 1;
}
static int ld_read_ints(FILE *f, const char *name, int *x, size_t n) {
    char tag[32];
    size_t i;
    if (fscanf(f, "%31s", tag) != 1 || strcmp(tag, name) != 0) return 0;
    for (i = 0; i < n; ++i) if (fscanf(f, "%d", &x[i]) != 1) return 0;
    return 1;
}

/* max |a - b| over n floats of row-major arrays with the given strides (in floats) */
static double ld_maxdiff(const float *a, const float *b, size_t n) {
    double m = 0;
    size_t i;
    for (i = 0; i < n; ++i) if (!(fabs((double)a[i] - b[i]) <= m)) m = fabs((double)a[i] - b[i]);
    return m;
}

static void ld_fixture(void) {
    const char *path = "tests/fixtures/reformer_hf_decode.txt";
    FILE *f = fopen(path, "r");
    char line[512];
    int ncases = 0, cs;
    if (!T_CHECK(f != NULL, "lsh decode fixture: cannot open %s (run the tests from the repository root)", path)) return;
    while (fgets(line, sizeof line, f) && line[0] == '#') {}
    if (!T_CHECK(sscanf(line, "cases %d", &ncases) == 1 && ncases > 0, "lsh decode fixture: bad header")) { fclose(f); return; }
    for (cs = 0; cs < ncases; ++cs) {
        char tag[32], name[32];
        int H, D, c, nh, nb, nfac, fac[4] = { 0, 0, 0, 0 }, cb, ca, P, Pp, S, i, j, h, r, cols = 0, ok, T, HD;
        float *rot, *qk, *v, *pout, *sout, *o, *lse;
        int *slsh, *hfb, *raw, *plain, lens, plen;
        double e_pre = 0, e_raw = 0, e_plain = 0, e_ref = 0;
        int bucket_ok = 1, n_self = 0;
        double e_self = 0;
        attn_desc d, dd;
        attn_status s;
        ok = fscanf(f, "%31s %31s %d %d %d %d %d %d", tag, name, &H, &D, &c, &nh, &nb, &nfac) == 8 && !strcmp(tag, "case") &&
             H > 0 && H <= 16 && D > 0 && D <= 64 && c > 0 && c <= 64 && nh > 0 && nh <= 8 && nb >= 2 && nb <= 1024 &&
             nfac >= 0 && nfac <= 4;
        for (i = 0; i < nfac && ok; ++i) ok = fscanf(f, "%d", &fac[i]) == 1 && fac[i] >= 2 && fac[i] <= 1024;
        ok = ok && fscanf(f, "%d %d %d %d %d", &cb, &ca, &P, &Pp, &S) == 5 && cb >= 0 && cb <= 8 && ca >= 0 && ca <= 8 &&
             P > 0 && P <= Pp && Pp <= 256 && S > 0 && S <= 64;
        if (!T_CHECK(ok, "lsh decode fixture: bad case line")) break;
        if (nfac) for (i = 0; i < nfac; ++i) cols += fac[i] / 2;
        else cols = nb / 2;
        T = P + S; HD = H * D;
        rot = (float *)t_xmalloc(sizeof(float) * (size_t)H * D * nh * cols);
        qk = (float *)t_xmalloc(sizeof(float) * (size_t)(Pp + S) * HD); v = (float *)t_xmalloc(sizeof(float) * (size_t)(Pp + S) * HD);
        pout = (float *)t_xmalloc(sizeof(float) * (size_t)P * HD); sout = (float *)t_xmalloc(sizeof(float) * (size_t)S * HD);
        o = (float *)t_xmalloc(sizeof(float) * (size_t)Pp * HD); lse = (float *)t_xmalloc(sizeof(float) * (size_t)H * Pp);
        slsh = (int *)t_xmalloc(sizeof(int) * (size_t)S); hfb = (int *)t_xmalloc(sizeof(int) * (size_t)H * nh * T);
        raw = (int *)t_xmalloc(sizeof(int) * (size_t)T * H * nh); plain = (int *)t_xmalloc(sizeof(int) * (size_t)T * H * nh);
        ok = ld_read_floats(f, "rot", rot, (size_t)H * D * nh * cols) && ld_read_floats(f, "qk", qk, (size_t)(Pp + S) * HD) &&
             ld_read_floats(f, "v", v, (size_t)(Pp + S) * HD) && ld_read_floats(f, "pout", pout, (size_t)P * HD) &&
             ld_read_floats(f, "sout", sout, (size_t)S * HD) && ld_read_ints(f, "slsh", slsh, (size_t)S) &&
             ld_read_ints(f, "buckets", hfb, (size_t)H * nh * T);
        if (T_CHECK(ok, "lsh decode fixture %s: truncated", name)) {
            /* the cache, as a C port keeps it: every token's QK row and v row ([T][H][D]: the prompt's
               unpadded rows, then one per step), HF's buckets [T][H][nh] (transposed from [H][nh][T]) */
            float *kc = (float *)t_xmalloc(sizeof(float) * (size_t)T * HD), *vc = (float *)t_xmalloc(sizeof(float) * (size_t)T * HD);
            attn_tensor kt = attn_tensor_dense(kc, ATTN_F32, 1, T, H, D), vt = attn_tensor_dense(vc, ATTN_F32, 1, T, H, D);
            attn_kv_cache C;
            memcpy(kc, qk, sizeof(float) * (size_t)P * HD); memcpy(kc + (size_t)P * HD, qk + (size_t)Pp * HD, sizeof(float) * (size_t)S * HD);
            memcpy(vc, v, sizeof(float) * (size_t)P * HD); memcpy(vc + (size_t)P * HD, v + (size_t)Pp * HD, sizeof(float) * (size_t)S * HD);
            for (j = 0; j < T; ++j)
                for (h = 0; h < H; ++h)
                    for (r = 0; r < nh; ++r) raw[((size_t)j * H + h) * nh + r] = hfb[((size_t)h * nh + r) * T + j];
            /* the prefill: attn_forward as the forward fixture's recipe (a prompt of at most one
               chunk: HF attends fully, which is one chunk of bucket_size = the prompt) */
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LSH; d.causal = 1; d.lsh.n_hashes = nh; d.lsh.rotations = rot; d.lsh.rotations_layout = ATTN_LSH_ROT_HF;
            d.lsh.hf_merge = 1; d.lsh.chunks_before = cb ? cb : ATTN_LSH_CHUNKS_ZERO; d.lsh.chunks_after = ca;
            if (nfac) for (i = 0; i < nfac; ++i) d.lsh.bucket_factors[i] = fac[i];
            else d.lsh.n_buckets = nb;
            dd = d;
            plen = P;
            if (P <= c) { dd.lsh.bucket_size = Pp; dd.lsh.n_hashes = 1; dd.lsh.chunks_before = ATTN_LSH_CHUNKS_ZERO; dd.lsh.rotations = NULL; }
            else { dd.lsh.bucket_size = c; dd.seqlens_k = &plen; }
            s = attn_forward(&dd, attn_tensor_dense(qk, ATTN_F32, 1, Pp, H, D), attn_tensor_dense(qk, ATTN_F32, 1, Pp, H, D),
                             attn_tensor_dense(v, ATTN_F32, 1, Pp, H, D), attn_tensor_dense(o, ATTN_F32, 1, Pp, H, D), lse);
            /* rows that see only themselves in every round (lse near -1e5: a causal sequence's first
               token, and any token whose windows hold no earlier one) take HF's fp32 round weights
               exp(lse_r - fl32(L)) at L ~ -1e5, where fp32's spacing is 2^-7: HF's own rounding of
               lse_r and L decides them to ~0.4% (ATTN_LSH's hf_merge); the rest to LD_TOL */
            if (s != ATTN_OK) e_pre = 1e30;
            for (i = 0; s == ATTN_OK && i < P; ++i)
                for (h = 0; h < H; ++h) {
                    const int self_only = lse[(size_t)h * Pp + i] < -5e4f;
                    const double dif = ld_maxdiff(o + ((size_t)i * H + h) * D, pout + ((size_t)i * H + h) * D, (size_t)D);
                    double vmax = 0;
                    for (r = 0; r < D; ++r) if (fabs(v[((size_t)i * H + h) * D + r]) > vmax) vmax = fabs(v[((size_t)i * H + h) * D + r]);
                    if (self_only) { n_self++; if (!(dif <= 5e-3 * vmax)) e_pre = 1e30; if (dif > e_self) e_self = dif; }
                    else if (!(dif <= e_pre)) e_pre = dif;
                }
            /* attn_lsh_buckets on every token (the prefill's, then the steps') against HF's values
               less their round offsets r * nb or r * (nb + 1) */
            d.lsh.bucket_size = c;
            if (attn_lsh_buckets(&d, kt, plain) != ATTN_OK) bucket_ok = 0;
            for (i = 0; i < T * H * nh; ++i) {
                const int rr = i % nh, w = raw[i];
                if (w - rr * nb != plain[i] && w - rr * (nb + 1) != plain[i]) bucket_ok = 0;
            }
            /* the steps: attn_decode with HF's buckets as they are (NULL while HF's cache held none),
               then with attn_lsh_buckets' values */
            for (j = 0; j < S; ++j) {
                const attn_tensor qj = attn_tensor_dense(qk + (size_t)(Pp + j) * HD, ATTN_F32, 1, 1, H, D);
                const attn_tensor oj = attn_tensor_dense(o, ATTN_F32, 1, 1, H, D);
                double ro[64 * 64], rl[64];
                lens = P + j + 1;
                C = ld_cache(kt, vt, &lens);
                d.lsh.buckets = slsh[j] ? raw : NULL;
                s = attn_decode(&d, qj, &C, oj, lse);
                if (s != ATTN_OK) { e_raw = 1e30; break; }
                if (!(ld_maxdiff(o, sout + (size_t)j * HD, (size_t)HD) <= e_raw)) e_raw = ld_maxdiff(o, sout + (size_t)j * HD, (size_t)HD);
                ld_ref(&qj, &kt, &vt, &lens, NULL, d.lsh.buckets, nh, c, cb, ca, 1.0 / sqrt((double)D), 1, ro, rl);
                for (i = 0; i < HD; ++i) if (!(fabs(ro[i] - sout[(size_t)j * HD + i]) <= e_ref)) e_ref = fabs(ro[i] - sout[(size_t)j * HD + i]);
                d.lsh.buckets = slsh[j] ? plain : NULL;
                s = attn_decode(&d, qj, &C, oj, lse);
                if (s != ATTN_OK) { e_plain = 1e30; break; }
                if (!(ld_maxdiff(o, sout + (size_t)j * HD, (size_t)HD) <= e_plain)) e_plain = ld_maxdiff(o, sout + (size_t)j * HD, (size_t)HD);
            }
            T_CHECK(e_pre <= LD_TOL, "lsh decode fixture %s: the prefill through attn_forward vs HF: max |error| %.3g", name, e_pre);
            T_CHECK(bucket_ok, "lsh decode fixture %s: attn_lsh_buckets must give HF's buckets less the round offsets", name);
            T_CHECK(e_raw <= LD_TOL && e_ref <= LD_TOL, "lsh decode fixture %s: the steps through attn_decode (HF's buckets) vs HF: "
                    "max |error| %.3g (reference vs HF %.3g)", name, e_raw, e_ref);
            /* HF's offsets agree within a round except in the "offsets" case (see the script) */
            if (strcmp(name, "offsets") != 0)
                T_CHECK(e_plain <= LD_TOL, "lsh decode fixture %s: the steps with attn_lsh_buckets' values vs HF: max |error| %.3g", name, e_plain);
            if (getenv("ATTN_TEST_VERBOSE"))
                printf("lsh decode fixture %s: prefill %.3g (%d rows that see only themselves: %.3g), steps (HF's buckets) %.3g, steps (attn_lsh_buckets) %.3g, "
                       "reference %.3g\n", name, e_pre, n_self, e_self, e_raw, e_plain, e_ref);
            free(kc); free(vc);
        }
        free(rot); free(qk); free(v); free(pout); free(sout); free(o); free(lse); free(slsh); free(hfb); free(raw); free(plain);
        if (!ok) break;
    }
    fclose(f);
}

/* ---- HF's fp16 path (tests/fixtures/reformer_hf_fp16.txt) ------------------------------------
   attn.h on HF's fp16 values (ATTN_F16 q/k/v, HF's fp16 rotations) with its fp32 masks and
   arithmetic and hf_merge: within fp16's rounding of HF's fp16 output on every row that sees
   another token, while a row that sees only itself in every round (lse near -1e5) gets v_i
   (to hf_merge's 0.4%), where HF's fp16 weights exp(lse_r - fl16(L)) at L ~ -1e3 (fp16's
   spacing 0.5 there) do not sum to 1 (docs/porting.md, Reformer, fp16). */
static void ld_fp16_fixture(void) {
    const char *path = "tests/fixtures/reformer_hf_fp16.txt";
    FILE *f = fopen(path, "r");
    char line[512];
    int ncases = 0, cs;
    if (!T_CHECK(f != NULL, "lsh fp16 fixture: cannot open %s (run the tests from the repository root)", path)) return;
    while (fgets(line, sizeof line, f) && line[0] == '#') {}
    if (!T_CHECK(sscanf(line, "cases %d", &ncases) == 1 && ncases > 0, "lsh fp16 fixture: bad header")) { fclose(f); return; }
    for (cs = 0; cs < ncases; ++cs) {
        char tag[32], name[32];
        int B, n, H, D, c, nh, nb, causal, b, i, h, e, ok, lens[8], n_self = 0;
        size_t cnt, x;
        float *qk, *v, *rot, *hf, *o, *lse;
        uint16_t *q16, *v16;
        double err = 0, self_err = 0, ratio_lo = 1e30, ratio_hi = -1e30, omax = 0;
        attn_desc d;
        attn_status s;
        ok = fscanf(f, "%31s %31s %d %d %d %d %d %d %d %d", tag, name, &B, &n, &H, &D, &c, &nh, &nb, &causal) == 10 &&
             !strcmp(tag, "case") && B > 0 && B <= 8 && n > 0 && n <= 256 && H > 0 && H <= 8 && D > 0 && D <= 64 && c > 0 &&
             nh > 0 && nh <= 8 && nb >= 2 && nb <= 256 && ld_read_ints(f, "lens", lens, (size_t)B);
        if (!T_CHECK(ok, "lsh fp16 fixture: bad case line")) break;
        cnt = (size_t)B * n * H * D;
        qk = (float *)t_xmalloc(sizeof(float) * cnt); v = (float *)t_xmalloc(sizeof(float) * cnt);
        hf = (float *)t_xmalloc(sizeof(float) * cnt); o = (float *)t_xmalloc(sizeof(float) * cnt);
        rot = (float *)t_xmalloc(sizeof(float) * (size_t)H * D * nh * (nb / 2));
        lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * n);
        q16 = (uint16_t *)t_xmalloc(sizeof(uint16_t) * cnt); v16 = (uint16_t *)t_xmalloc(sizeof(uint16_t) * cnt);
        ok = ld_read_floats(f, "qk", qk, cnt) && ld_read_floats(f, "v", v, cnt) &&
             ld_read_floats(f, "rot", rot, (size_t)H * D * nh * (nb / 2)) && ld_read_floats(f, "out", hf, cnt);
        if (T_CHECK(ok, "lsh fp16 fixture %s: truncated", name)) {
            for (x = 0; x < cnt; ++x) { q16[x] = t_f32_to_f16(qk[x]); v16[x] = t_f32_to_f16(v[x]); }
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LSH; d.causal = causal; d.lsh.bucket_size = c; d.lsh.n_hashes = nh; d.lsh.n_buckets = nb;
            d.lsh.rotations = rot; d.lsh.rotations_layout = ATTN_LSH_ROT_HF; d.lsh.hf_merge = 1; d.seqlens_k = lens;
            s = attn_forward(&d, attn_tensor_dense(q16, ATTN_F16, B, n, H, D), attn_tensor_dense(q16, ATTN_F16, B, n, H, D),
                             attn_tensor_dense(v16, ATTN_F16, B, n, H, D), attn_tensor_dense(o, ATTN_F32, B, n, H, D), lse);
            for (b = 0; s == ATTN_OK && b < B; ++b)
                for (i = 0; i < lens[b]; ++i)
                    for (h = 0; h < H; ++h) {
                        const size_t r0 = (((size_t)b * n + i) * H + h) * D;
                        const int self_only = lse[((size_t)b * H + h) * n + i] < -5e4f;
                        n_self += self_only;
                        for (e = 0; e < D; ++e) {
                            if (fabs(hf[r0 + e]) > omax) omax = fabs(hf[r0 + e]);
                            if (!self_only) { if (!(fabs(o[r0 + e] - hf[r0 + e]) <= err)) err = fabs(o[r0 + e] - hf[r0 + e]); continue; }
                            {   /* relative to max(1, |v_i|): hf_merge's fp32 weights are within 0.4% */
                                const double rel = fabs(o[r0 + e] - v[r0 + e]) / (fabs(v[r0 + e]) > 1 ? fabs(v[r0 + e]) : 1);
                                if (!(rel <= self_err)) self_err = rel;
                            }
                            if (fabs(v[r0 + e]) > 0.05) {
                                const double ratio = hf[r0 + e] / v[r0 + e];
                                if (ratio < ratio_lo) ratio_lo = ratio;
                                if (ratio > ratio_hi) ratio_hi = ratio;
                            }
                        }
                    }
            T_CHECK(s == ATTN_OK && err <= 4e-3 && self_err <= 5e-3, "lsh fp16 fixture %s: attn.h (f16 tensors) vs HF's fp16: "
                    "max |error| %.3g on rows that see another token (fp16's rounding), |attn.h - v_i| %.3g (relative) on rows that see only "
                    "themselves (status %s)", name, err, self_err, attn_status_str(s));
            if (getenv("ATTN_TEST_VERBOSE"))
                printf("lsh fp16 fixture %s: rows that see another token: max |attn.h - HF fp16| %.3g (max |out| %.3g); %d rows "
                       "see only themselves: |attn.h - v_i| / max(1, |v_i|) %.3g, HF fp16 / v_i in [%.4g, %.4g]\n", name, err, omax, n_self,
                       self_err, n_self ? ratio_lo : 1.0, n_self ? ratio_hi : 1.0);
        }
        free(qk); free(v); free(hf); free(o); free(rot); free(lse); free(q16); free(v16);
        if (!ok) break;
    }
    fclose(f);
}

/* ---- bad input: a specific status, nothing written ---------------------------------------- */
static void ld_statuses(void) {
    const int H = 2, D = 4, cap = 8;
    t_owned q = t_owned_dense(ATTN_F32, 2, 2, H, D), k = t_owned_dense(ATTN_F32, 2, cap, H, D), o = t_owned_dense(ATTN_F32, 2, 2, H, D);
    t_owned v = t_owned_dense(ATTN_F32, 2, cap, H, D), k1 = t_owned_dense(ATTN_F32, 2, cap, 1, D), v1 = t_owned_dense(ATTN_F32, 2, cap, 1, D);
    int lens[2] = { 5, 8 }, short_lens[2] = { 5, 1 }, bk[2 * 8 * 2 * 2], sq_bad[2] = { 1, 3 }, out_b[4], i;
    float lse[8];
    attn_desc d, e;
    attn_kv_cache C;
    t_rng r = t_rng_seed(345);
    t_fill_normal(&q.t, &r, 1.0); t_fill_normal(&k.t, &r, 1.0);
    for (i = 0; i < (int)(sizeof bk / sizeof bk[0]); ++i) bk[i] = i % 10;   /* n_hashes 2, n_buckets 4: values < 10 */
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 2; d.lsh.n_hashes = 2; d.lsh.n_buckets = 4; d.lsh.buckets = bk;
    t_fill_normal(&v.t, &r, 1.0);
    C = ld_cache(k.t, v.t, lens);
#define LD_EXPECT(desc, cache, want, what)                                                                           \
    do {                                                                                                           \
        t_sentinel(o.buf, o.n * 4, 9); t_sentinel(lse, sizeof lse, 3);                                             \
        if (t_expect_status(attn_decode(&(desc), q.t, &(cache), o.t, lse), want, "lsh decode", what))               \
            T_CHECK(t_sentinel_ok(o.buf, o.n * 4, 9) && t_sentinel_ok(lse, sizeof lse, 3), "lsh decode %s: out was written", what); \
    } while (0)
    T_CHECK(attn_decode(&d, q.t, &C, o.t, lse) == ATTN_OK, "lsh decode: the valid call of the status checks");
    bk[((size_t)1 * cap + 7) * H * 2 + 3] = 10;   /* sequence 1, token 7 (< lens 8), head 1, round 1 */
    LD_EXPECT(d, C, ATTN_ERR_LSH_DECODE_BUCKETS, "a bucket value past n_hashes * (n_buckets + 1)");
    bk[((size_t)1 * cap + 7) * H * 2 + 3] = -1;
    LD_EXPECT(d, C, ATTN_ERR_LSH_DECODE_BUCKETS, "a negative bucket value");
    bk[((size_t)0 * cap + 6) * H * 2 + 3] = 99;   /* past sequence 0's length: not read */
    bk[((size_t)1 * cap + 7) * H * 2 + 3] = 9;
    T_CHECK(attn_decode(&d, q.t, &C, o.t, lse) == ATTN_OK, "lsh decode: a bucket value past the length must not be read");
    e = d; e.lsh.n_buckets = 0;
    LD_EXPECT(e, C, ATTN_ERR_LSH_DECODE_COUNT, "n_buckets unset");
    e = d; e.lsh.buckets = NULL; e.lsh.n_buckets = 0;
    LD_EXPECT(e, C, ATTN_ERR_LSH_DECODE_COUNT, "n_buckets unset without buckets");
    C.lens = short_lens;
    LD_EXPECT(d, C, ATTN_ERR_LSH_DECODE_LENS, "lens below the queries");
    C.lens = lens;
    e = d; e.seqlens_q = sq_bad;
    LD_EXPECT(e, C, ATTN_ERR_SEQLENS_Q, "seqlens_q past q.seq");
    e = d; e.window_left = 2;
    LD_EXPECT(e, C, ATTN_ERR_SPARSE_MASKS, "window_left");
    e = d; e.softcap = 5.0f;
    LD_EXPECT(e, C, ATTN_ERR_SPARSE_MASKS, "softcap");
    e = d; e.seqlens_k = lens;
    LD_EXPECT(e, C, ATTN_ERR_DECODE_LENGTHS, "seqlens_k");
    e = d; e.lsh.hf_merge = 2;
    LD_EXPECT(e, C, ATTN_ERR_LSH_HF_MERGE, "hf_merge 2");
    e = d; e.lsh.chunks_before = -2;
    LD_EXPECT(e, C, ATTN_ERR_LSH_CHUNKS, "chunks_before -2");
    {
        attn_kv_cache C1 = ld_cache(k1.t, v1.t, lens);
        LD_EXPECT(d, C1, ATTN_ERR_LSH_HEADS, "fewer cache heads than query heads");
    }
#undef LD_EXPECT
    {   /* attn_lsh_buckets */
        for (i = 0; i < 4; ++i) out_b[i] = -7;
        e = d; e.lsh.n_buckets = 0;   /* default for seq 8 with bucket_size 2 is fine; seq 3 is not */
        t_expect_status(attn_lsh_buckets(&e, t_seq_view(k.t, 0, 3), out_b), ATTN_ERR_LSH_BUCKET_SIZE, "lsh", "attn_lsh_buckets default n_buckets, seq 3");
        t_expect_status(attn_lsh_buckets(NULL, k.t, out_b), ATTN_ERR_LSH_NULL, "lsh", "attn_lsh_buckets NULL desc");
        t_expect_status(attn_lsh_buckets(&d, k.t, NULL), ATTN_ERR_LSH_NULL, "lsh", "attn_lsh_buckets NULL buckets");
        e = d; e.seqlens_k = sq_bad; sq_bad[1] = 9;
        t_expect_status(attn_lsh_buckets(&e, k.t, out_b), ATTN_ERR_SEQLENS_K, "lsh", "attn_lsh_buckets seqlens_k past seq");
        e = d; e.lsh.hf_merge = 5;
        t_expect_status(attn_lsh_buckets(&e, k.t, out_b), ATTN_ERR_LSH_HF_MERGE, "lsh", "attn_lsh_buckets hf_merge 5");
        {
            attn_tensor z = k.t;
            z.heads = 0;
            t_expect_status(attn_lsh_buckets(&d, z, out_b), ATTN_ERR_LSH_SHAPE, "lsh", "attn_lsh_buckets heads 0");
        }
        T_CHECK(out_b[0] == -7 && out_b[3] == -7, "lsh: attn_lsh_buckets wrote on error");
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&k1); t_owned_free(&v1);
}

void t_lsh_decode(void) {
    t_rng r = t_rng_seed(3450);
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    static const int f24[2] = { 2, 4 }, f242[3] = { 2, 4, 2 };
    int it, iters = T_QUICK ? 8 : 40;
    ld_fixture();
    ld_fp16_fixture();
    ld_statuses();
    ld_paged(&r);
    /* shapes: HF's (one query, raw values with round offsets), no buckets, several queries,
       windows wider than the cache (duplicates), chunks after, factorised counts, ties */
    ld_case(&r, 1, 2, 8, 8, ATTN_F32, ATTN_F32, 24, 1, 2, 8, NULL, 0, 4, 1, 0, 1, 0, 1, 0);
    ld_case(&r, 2, 2, 8, 8, ATTN_F32, ATTN_F32, 24, 1, 2, 8, NULL, 0, 4, 1, 0, 0, 0, 1, 0);
    ld_case(&r, 2, 3, 8, 5, ATTN_F32, ATTN_F32, 40, 3, 3, 0, f24, 2, 4, 2, 1, 1, 0, 0, 0);
    ld_case(&r, 3, 1, 4, 4, ATTN_F32, ATTN_F32, 5, 2, 2, 4, NULL, 0, 4, 1, 1, 1, 1, 1, 0);
    ld_case(&r, 2, 2, 6, 6, ATTN_F32, ATTN_F32, 33, 2, 1, 0, f242, 3, 3, 1, 0, 1, 0, 1, 1);
    ld_case(&r, 2, 2, 16, 16, ATTN_F16, ATTN_F32, 70, 1, 4, 16, NULL, 0, 8, 1, 0, 1, 0, 0, 1);
    for (it = 0; it < iters; ++it) {
        const int nh = t_irange(&r, 1, 4), nfac = t_chance(&r, 0.25) ? t_irange(&r, 2, 3) : 0, Sq = t_irange(&r, 1, 3);
        int fac[3];
        fac[0] = 2 * t_irange(&r, 1, 3); fac[1] = 2 * t_irange(&r, 1, 3); fac[2] = 2;
        ld_case(&r, t_irange(&r, 1, 3), t_irange(&r, 1, 3), t_irange(&r, 2, 20), t_irange(&r, 1, 20), dts[t_irange(&r, 0, 2)],
                dts[t_irange(&r, 0, 2)], t_irange(&r, Sq, 48), Sq, nh, nfac ? 0 : 2 * t_irange(&r, 1, 8), fac, nfac,
                t_irange(&r, 1, 8), t_irange(&r, 0, 3), t_irange(&r, 0, 2), t_chance(&r, 0.8), t_chance(&r, 0.3),
                t_chance(&r, 0.5), t_chance(&r, 0.3));
    }
    {
        static const int f44[2] = { 4, 4 };
        ld_buckets_case(&r, 2, 12, 2, 8, ATTN_F32, 2, 8, NULL, 0, 0, 0);
        ld_buckets_case(&r, 2, 12, 2, 8, ATTN_F16, 3, 6, NULL, 0, 1, 1);
        ld_buckets_case(&r, 3, 7, 1, 5, ATTN_BF16, 1, 0, f44, 2, 1, 1);
        ld_buckets_case(&r, 1, 16, 2, 16, ATTN_F32, 2, 0, f242, 3, 0, 1);
        ld_buckets_case(&r, 1, 9, 1, 8, ATTN_F32, 1, 80, NULL, 0, 0, 0);   /* 40 columns: two lane blocks' worth */
    }
}
