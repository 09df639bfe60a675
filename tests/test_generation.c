/* tests/test_generation.c - generation: K/V caches (contiguous and paged), attn_decode, RoPE
   (utility and in-kernel), the StreamingLLM cache policy and EL-attention.

   References (all written here or in ref.h, none shares code with attn.h):
     decoding      ref_attention (ref.h, double) on the logical contiguous K/V the cache
                   should hold; keys/queries rotated by tr_rope (double) when RoPE is on
     full forward  the decode rows == the corresponding rows of a causal attn_forward over
                   the whole history (the property), same desc
     RoPE          tr_rope: the rotation written from the documented formula, in double
     StreamingLLM  tr_stream_ref: the kept stream indices [0, sink) + [total - recent, total)
     EL-attention  tr_mha: a naive double standard MHA layer (projections, per-head softmax,
                   output projection) with the same weights

   TOLERANCES
     decode, f32 out:     |out - ref| <= 2e-5 * max(1, max |ref| of the row); f16/bf16 out add
                          one rounding (2^-10 / 2^-7 of |ref|). K/V/q stored as f16/bf16 are
                          exact inputs of the reference, so the fp32 bound applies to them too.
     decode vs forward:   the same bound, forward as the reference
     thread counts:       bitwise (out and lse bytes)
     RoPE utility:        f32 1e-6 * max(1, |x|) per element; f16/bf16 one rounding more;
                          elements past rope_dim bitwise unchanged
     in-kernel vs before: f32 2e-6 (both paths round the same fp32 rotation)
     StreamingLLM:        exact (slot contents compared bitwise)
     EL-attention:        max |out - ref| <= 1e-5 * max |ref| (the fp32 bound) */
#include "test.h"
#include "ref.h"

#define G_TOL 2e-5
#define G_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---------------------------------------------------------------------------------------- */
/* Independent RoPE (double)                                                                 */
/* ---------------------------------------------------------------------------------------- */

typedef struct { int mode, rdim; double base, scaling; } tr_rope_cfg;

static tr_rope_cfg tr_cfg(const attn_desc *d, int D) {
    tr_rope_cfg c;
    c.mode = d->rope;
    c.rdim = d->rope_dim ? d->rope_dim : D - D % 2;
    c.base = d->rope_base != 0.0f ? d->rope_base : 10000.0;
    c.scaling = d->rope_scaling != 0.0f ? d->rope_scaling : 1.0;
    return c;
}
/* x[0..D) rotated in place by position pos */
static void tr_rope(const tr_rope_cfg *c, double *x, long long pos) {
    int i;
    if (c->mode == ATTN_ROPE_OFF) return;
    for (i = 0; i < c->rdim / 2; ++i) {
        const double theta = (double)pos / c->scaling / pow(c->base, (2.0 * i) / c->rdim);
        const int a = c->mode == ATTN_ROPE_INTERLEAVED ? 2 * i : i;
        const int b = c->mode == ATTN_ROPE_INTERLEAVED ? 2 * i + 1 : i + c->rdim / 2;
        const double xa = x[a], xb = x[b];
        x[a] = xa * cos(theta) - xb * sin(theta);
        x[b] = xb * cos(theta) + xa * sin(theta);
    }
}
/* a dense f32 copy of t, rows rotated: pos(b, s) from pos[b*S+s] or dflt_shift + s */
static float *tr_rotated_copy(const attn_tensor *t, const tr_rope_cfg *c, const int *pos, const int *shift) {
    float *o = (float *)t_xmalloc(sizeof(float) * (size_t)t->batch * t->seq * t->heads * t->dim);
    double *row = (double *)t_xmalloc(sizeof(double) * (size_t)t->dim);
    int b, s, h, d;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h) {
                for (d = 0; d < t->dim; ++d) row[d] = t_load(t, b, s, h, d);
                tr_rope(c, row, pos ? pos[(size_t)b * t->seq + s] : (long long)s + (shift ? shift[b] : 0));
                for (d = 0; d < t->dim; ++d)
                    o[(((size_t)b * t->seq + s) * t->heads + h) * t->dim + d] = (float)row[d];
            }
    free(row);
    return o;
}

/* ---------------------------------------------------------------------------------------- */
/* Test caches                                                                               */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    attn_kv_cache c;
    void *kb, *vb;
    size_t kn, vn;       /* elements */
    int *lens, *table;
    int cap, n_pages;
} tcache;

/* a cache for B sequences of at least cap_min tokens; page_size 0: contiguous. Storage starts
   NaN so a read of a slot never written poisons the result. */
static void tc_make(tcache *tc, attn_dtype dt, int B, int Hkv, int D, int Dv, int cap_min, int ps, int layout, t_rng *r) {
    int seqs, rows, i;
    memset(tc, 0, sizeof *tc);
    tc->lens = (int *)t_xmalloc(sizeof(int) * (size_t)B);
    for (i = 0; i < B; ++i) tc->lens[i] = 0;
    tc->c.batch = B; tc->c.lens = tc->lens;
    if (ps) {
        int mp = (cap_min + ps - 1) / ps + t_irange(r, 0, 1), *perm, p;
        if (mp < 1) mp = 1;
        tc->n_pages = B * mp + t_irange(r, 0, 3);
        perm = (int *)t_xmalloc(sizeof(int) * (size_t)tc->n_pages);
        for (p = 0; p < tc->n_pages; ++p) perm[p] = p;
        for (p = tc->n_pages - 1; p > 0; --p) { int j = t_irange(r, 0, p), t = perm[p]; perm[p] = perm[j]; perm[j] = t; }
        tc->table = (int *)t_xmalloc(sizeof(int) * (size_t)B * mp);
        for (p = 0; p < B * mp; ++p) tc->table[p] = perm[p];
        free(perm);
        tc->c.page_size = ps; tc->c.max_pages = mp; tc->c.block_table = tc->table;
        tc->cap = mp * ps; seqs = tc->n_pages; rows = ps;
    } else {
        tc->cap = cap_min + t_irange(r, 0, 3);
        if (tc->cap < 1) tc->cap = 1;
        seqs = B; rows = tc->cap;
    }
    if (layout == 1) {          /* [seqs][heads][rows][dim] */
        tc->c.k = attn_tensor_bhsd(NULL, dt, seqs, Hkv, rows, D);
        tc->c.v = attn_tensor_bhsd(NULL, dt, seqs, Hkv, rows, Dv);
    } else {
        tc->c.k = attn_tensor_dense(NULL, dt, seqs, rows, Hkv, D);
        tc->c.v = attn_tensor_dense(NULL, dt, seqs, rows, Hkv, Dv);
        if (layout == 2) {      /* padded rows */
            tc->c.k.stride_head = D + 3; tc->c.k.stride_seq = (ptrdiff_t)Hkv * (D + 3) + 1;
            tc->c.k.stride_batch = (ptrdiff_t)rows * tc->c.k.stride_seq + 5;
            tc->c.v.stride_head = Dv + 1; tc->c.v.stride_seq = (ptrdiff_t)Hkv * (Dv + 1);
            tc->c.v.stride_batch = (ptrdiff_t)rows * tc->c.v.stride_seq + 2;
        }
    }
    tc->kn = t_extent(&tc->c.k); tc->vn = t_extent(&tc->c.v);
    tc->kb = t_xmalloc(tc->kn * t_dt_size(dt)); tc->vb = t_xmalloc(tc->vn * t_dt_size(dt));
    t_fill_nan(tc->kb, dt, tc->kn); t_fill_nan(tc->vb, dt, tc->vn);
    tc->c.k.data = tc->kb; tc->c.v.data = tc->vb;
}
static void tc_free(tcache *tc) { free(tc->kb); free(tc->vb); free(tc->lens); free(tc->table); }

/* element d of token t of sequence b, head h, through the documented cache layout */
static double tc_get(const tcache *tc, int kv, int b, int t, int h, int d) {
    const attn_tensor *x = kv ? &tc->c.v : &tc->c.k;
    if (tc->c.page_size)
        return t_load(x, tc->table[(size_t)b * tc->c.max_pages + t / tc->c.page_size], t % tc->c.page_size, h, d);
    return t_load(x, b, t, h, d);
}

/* Appends history rows [lens[b], target[b]) of Kf/Vf ([B, *, Hkv, D|Dv]) in random chunks
   through attn_kv_append, from f32 or same-dtype staging tensors. */
static int tc_fill(tcache *tc, const attn_tensor *Kf, const attn_tensor *Vf, const int *target, t_rng *r) {
    const int B = tc->c.batch, Hkv = Kf->heads, D = Kf->dim, Dv = Vf->dim;
    int *n_new = (int *)t_xmalloc(sizeof(int) * (size_t)B), ok = 1;
    for (;;) {
        int b, any = 0, S = t_irange(r, 1, 9), i, h, d, use_null;
        attn_dtype sdt = t_chance(r, 0.5) ? ATTN_F32 : Kf->dtype;
        attn_tensor kn, vn;
        attn_status st;
        for (b = 0; b < B; ++b) if (tc->lens[b] < target[b]) any = 1;
        if (!any) break;
        use_null = t_chance(r, 0.2);
        for (b = 0; b < B; ++b) {
            int want = target[b] - tc->lens[b];
            n_new[b] = want < S ? want : t_irange(r, 0, S);
        }
        if (use_null) {          /* n_new NULL appends S to every sequence: only if all can */
            for (b = 0; b < B; ++b) if (target[b] - tc->lens[b] < S) use_null = 0;
            if (use_null) for (b = 0; b < B; ++b) n_new[b] = S;
        }
        kn = attn_tensor_dense(t_xmalloc((size_t)B * S * Hkv * D * t_dt_size(sdt)), sdt, B, S, Hkv, D);
        vn = attn_tensor_dense(t_xmalloc((size_t)B * S * Hkv * Dv * t_dt_size(sdt)), sdt, B, S, Hkv, Dv);
        t_fill_nan(kn.data, sdt, (size_t)B * S * Hkv * D); t_fill_nan(vn.data, sdt, (size_t)B * S * Hkv * Dv);
        for (b = 0; b < B; ++b)
            for (i = 0; i < n_new[b]; ++i)
                for (h = 0; h < Hkv; ++h) {
                    for (d = 0; d < D; ++d) t_store(&kn, b, i, h, d, t_load(Kf, b, tc->lens[b] + i, h, d));
                    for (d = 0; d < Dv; ++d) t_store(&vn, b, i, h, d, t_load(Vf, b, tc->lens[b] + i, h, d));
                }
        {
            int *before = (int *)t_xmalloc(sizeof(int) * (size_t)B);
            memcpy(before, tc->lens, sizeof(int) * (size_t)B);
            st = attn_kv_append(&tc->c, kn, vn, use_null ? NULL : n_new);
            if (!T_CHECK(st == ATTN_OK, "attn_kv_append: %s", attn_status_str(st))) ok = 0;
            for (b = 0; b < B && ok; ++b)
                if (!T_CHECK(tc->lens[b] == before[b] + n_new[b], "attn_kv_append: lens[%d] = %d, want %d", b, tc->lens[b],
                             before[b] + n_new[b])) ok = 0;
            free(before);
        }
        free(kn.data); free(vn.data);
        if (!ok) break;
    }
    free(n_new);
    return ok;
}

/* cache holds exactly Kf/Vf's first lens[b] rows (bitwise, as stored values) */
static int tc_content_ok(const tcache *tc, const attn_tensor *Kf, const attn_tensor *Vf) {
    int b, t, h, d;
    for (b = 0; b < tc->c.batch; ++b)
        for (t = 0; t < tc->lens[b]; ++t)
            for (h = 0; h < Kf->heads; ++h) {
                for (d = 0; d < Kf->dim; ++d) if (tc_get(tc, 0, b, t, h, d) != t_load(Kf, b, t, h, d)) return 0;
                for (d = 0; d < Vf->dim; ++d) if (tc_get(tc, 1, b, t, h, d) != t_load(Vf, b, t, h, d)) return 0;
            }
    return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* Comparisons                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* out row (b, i, h) against ref [B, Sq, Hq, Dv] dense doubles */
static int rows_close(const char *tag, const attn_tensor *out, const double *ref, int b, int i, int h, double tol) {
    const int Dv = out->dim, Sq = out->seq, Hq = out->heads;
    const double *rr = ref + (((size_t)b * Sq + i) * Hq + h) * Dv;
    double mx = 1.0, worst = 0.0;
    int c;
    for (c = 0; c < Dv; ++c) if (fabs(rr[c]) > mx) mx = fabs(rr[c]);
    for (c = 0; c < Dv; ++c) {
        double g = t_load(out, b, i, h, c), e = fabs(g - rr[c]), allow = tol * mx + t_dt_rel(out->dtype) * fabs(rr[c]);
        if (!(e <= allow)) { if (e != e) e = INFINITY; if (e > worst) worst = e; }
    }
    return T_CHECK(worst == 0.0, "%s: row b=%d i=%d h=%d differs by %.3g (scale %.3g)", tag, b, i, h, worst, mx);
}

static double *tensor_doubles(const attn_tensor *t) {
    double *o = (double *)t_xmalloc(sizeof(double) * (size_t)t->batch * t->seq * t->heads * t->dim);
    int b, s, h, d;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d) o[(((size_t)b * t->seq + s) * t->heads + h) * t->dim + d] = t_load(t, b, s, h, d);
    return o;
}

typedef struct { int calls; } g_hook_state;
static void g_hook(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    ((g_hook_state *)user)->calls++;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, (i * 7) % n_threads);
}

/* ---------------------------------------------------------------------------------------- */
/* Decoding over caches                                                                      */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, Hkv, g, D, Dv, Sq, ps, layout, out_dt_same, use_bias, use_seqlens_q;
    attn_dtype dt;
    int q_f32;                    /* f32 queries over an f16/bf16 cache (llama.cpp's layout) */
} dcfg;

/* One decode case: cache filled through appends, attn_decode vs the double reference and vs
   the full causal forward's rows; thread counts bitwise. */
static void decode_case(const char *tag, const dcfg *cf, attn_desc d, const int *lens, t_rng *r, int check_threads) {
    const int B = cf->B, Hkv = cf->Hkv, Hq = Hkv * cf->g, D = cf->D, Dv = cf->Dv, Sq = cf->Sq;
    int maxlen = 1, b, i, h, cap;
    tcache tc;
    attn_tensor Kf, Vf, q, out;
    double kernel_tol = 0.0;      /* extra tolerance of the bf16 tile kernels, when they run */
    double *ref, *rlse;
    float *lse, *alibi = NULL, *bias = NULL;
    int *sq = NULL, *pos_q = NULL, *pos_k = NULL, *shift;
    attn_status st;
    char ctx[256];
    for (b = 0; b < B; ++b) if (lens[b] > maxlen) maxlen = lens[b];
    tc_make(&tc, cf->dt, B, Hkv, D, Dv, maxlen, cf->ps, cf->layout, r);
    cap = tc.cap;
    snprintf(ctx, sizeof ctx, "%s [%s B%d Hkv%d g%d D%d Dv%d Sq%d ps%d cap%d causal%d wl%d sink%d cap%.0f alibi%d rope%d/%d bias%d]",
             tag, cf->q_f32 ? "q f32 over cache" : t_dt_name(cf->dt), B, Hkv, cf->g, D, Dv, Sq, cf->ps, cap, d.causal, d.window_left, d.sink_tokens,
             (double)d.softcap, d.alibi_slopes != NULL || cf->g < 0, d.rope, d.rope_dim, cf->use_bias);
    Kf = attn_tensor_dense(t_xmalloc((size_t)B * cap * Hkv * D * t_dt_size(cf->dt)), cf->dt, B, cap, Hkv, D);
    Vf = attn_tensor_dense(t_xmalloc((size_t)B * cap * Hkv * Dv * t_dt_size(cf->dt)), cf->dt, B, cap, Hkv, Dv);
    t_fill_normal(&Kf, r, 1.0); t_fill_normal(&Vf, r, 1.0);
    q = attn_tensor_dense(t_xmalloc((size_t)B * Sq * Hq * D * 4), cf->q_f32 ? ATTN_F32 : cf->dt, B, Sq, Hq, D);
    t_fill_normal(&q, r, 1.0);
    out = attn_tensor_dense(t_xmalloc((size_t)B * Sq * Hq * Dv * 4), cf->out_dt_same ? cf->dt : ATTN_F32, B, Sq, Hq, Dv);
    lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq);
    if (!tc_fill(&tc, &Kf, &Vf, lens, r)) goto done;
    T_CHECK(tc_content_ok(&tc, &Kf, &Vf), "%s: cache content after appends differs from the history", ctx);
    for (b = 0; b < B; ++b) {
        int got = -1;
        T_CHECK(attn_kv_len(&tc.c, b, &got) == ATTN_OK && got == lens[b], "%s: attn_kv_len(%d) = %d, want %d", ctx, b, got, lens[b]);
    }
    if (d.alibi_slopes) {
        alibi = (float *)t_xmalloc(sizeof(float) * (size_t)Hq);
        for (h = 0; h < Hq; ++h) alibi[h] = (float)(0.02 + 0.1 * t_unif(r));
        d.alibi_slopes = alibi;
    }
    if (cf->use_bias) {
        size_t n = (size_t)B * Hq * Sq * cap, e;
        bias = (float *)t_xmalloc(sizeof(float) * n);
        for (e = 0; e < n; ++e) bias[e] = (float)t_normal(r);
        d.bias = attn_bias_dense(bias, B, Hq, Sq, cap);
    }
    if (cf->use_seqlens_q) {
        sq = (int *)t_xmalloc(sizeof(int) * (size_t)B);
        for (b = 0; b < B; ++b) sq[b] = t_irange(r, 0, Sq);
        d.seqlens_q = sq;
    }
    if (d.rope && t_chance(r, 0.3)) {       /* explicit positions, arbitrary values */
        pos_q = (int *)t_xmalloc(sizeof(int) * (size_t)B * Sq);
        pos_k = (int *)t_xmalloc(sizeof(int) * (size_t)B * cap);
        for (i = 0; i < B * Sq; ++i) pos_q[i] = t_irange(r, -50, 5000);
        for (i = 0; i < B * cap; ++i) pos_k[i] = t_irange(r, -50, 5000);
        d.rope_pos_q = pos_q; d.rope_pos_k = pos_k;
    }
    t_sentinel(out.data, (size_t)B * Sq * Hq * Dv * 4, 0x3C);
    st = attn_decode(&d, q, &tc.c, out, lse);
    if (!T_CHECK(st == ATTN_OK, "%s: attn_decode returned %s", ctx, attn_status_str(st))) goto done;

    /* reference: ref_attention over the logical history (rotated when RoPE is on) */
    ref = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * Hq * Dv);
    rlse = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq);
    shift = (int *)t_xmalloc(sizeof(int) * (size_t)B);
    {
        attn_desc rd = d;
        attn_tensor qr = q, kr = Kf;
        float *qrot = NULL, *krot = NULL;
        rd.seqlens_k = lens; rd.rope = ATTN_ROPE_OFF;
        if (d.rope) {
            tr_rope_cfg rc = tr_cfg(&d, D);
            for (b = 0; b < B; ++b) shift[b] = lens[b] - (sq ? sq[b] : Sq);
            qrot = tr_rotated_copy(&q, &rc, pos_q, shift);
            if (pos_k) {     /* pos_k rows are [b][cap] = Kf's layout */
                krot = tr_rotated_copy(&Kf, &rc, pos_k, NULL);
            } else krot = tr_rotated_copy(&Kf, &rc, NULL, NULL);
            qr = attn_tensor_dense(qrot, ATTN_F32, B, Sq, Hq, D);
            kr = attn_tensor_dense(krot, ATTN_F32, B, cap, Hkv, D);
        }
        ref_attention(&rd, qr, kr, Vf, ref, rlse);
        /* more than 16 rows per KV head is not the decoding shape: bf16 q/k/v then run on the
           bf16 tile kernels (3.12), which round P to bf16: up to 2^-8 max|v| more (test_amx.c) */
        if (cf->dt == ATTN_BF16 && Sq * (Hq / Hkv) > 16 && !d.rope && !cf->ps) {
            double vmax = 0.0;
            int bb, ss, hh, cc;
            for (bb = 0; bb < B; ++bb) for (ss = 0; ss < cap; ++ss) for (hh = 0; hh < Hkv; ++hh)
                for (cc = 0; cc < Dv; ++cc) vmax = G_MAX(vmax, fabs(t_load(&Vf, bb, ss, hh, cc)));
            kernel_tol = ldexp(vmax, -8);
        }
        for (b = 0; b < B; ++b)
            for (i = 0; i < Sq; ++i)
                for (h = 0; h < Hq; ++h) {
                    const float l = lse[((size_t)b * Hq + h) * Sq + i];
                    const double rl = rlse[((size_t)b * Hq + h) * Sq + i];
                    rows_close(ctx, &out, ref, b, i, h, G_TOL + kernel_tol);
                    T_CHECK(rl == -INFINITY ? l == -INFINITY : fabs(l - rl) <= 1e-5 * (1.0 + fabs(rl)),
                            "%s: lse b=%d h=%d i=%d = %.8g, ref %.8g", ctx, b, h, i, (double)l, rl);
                }
        free(qrot); free(krot);
    }

    /* property: rows of the full causal forward over the whole history (no bias: its shape
       differs; no explicit query positions: the full forward's queries are other tokens) */
    if (!cf->use_bias && !pos_q) {
        attn_desc fd = d;
        attn_tensor qf = attn_tensor_dense(t_xmalloc((size_t)B * cap * Hq * D * 4), q.dtype, B, cap, Hq, D);
        attn_tensor of = attn_tensor_dense(t_xmalloc((size_t)B * cap * Hq * Dv * 4), ATTN_F32, B, cap, Hq, Dv);
        double *fo;
        int c;
        t_fill_normal(&qf, r, 1.0);
        for (b = 0; b < B; ++b)
            for (i = 0; i < (sq ? sq[b] : Sq); ++i) {
                const int row = lens[b] - (sq ? sq[b] : Sq) + i;
                if (row < 0) continue;
                for (h = 0; h < Hq; ++h) for (c = 0; c < D; ++c) t_store(&qf, b, row, h, c, t_load(&q, b, i, h, c));
            }
        fd.seqlens_q = lens; fd.seqlens_k = lens;
        fd.bf16_kernels = 2;      /* decoding runs the fp32 kernels: compare with the same numerics */
        st = attn_forward(&fd, qf, Kf, Vf, of, NULL);
        if (T_CHECK(st == ATTN_OK, "%s: full forward returned %s", ctx, attn_status_str(st))) {
            fo = tensor_doubles(&of);
            for (b = 0; b < B; ++b)
                for (i = 0; i < (sq ? sq[b] : Sq); ++i) {
                    const int row = lens[b] - (sq ? sq[b] : Sq) + i;
                    if (row < 0) continue;
                    for (h = 0; h < Hq; ++h) {
                        double mx = 1.0, worst = 0.0;
                        for (c = 0; c < Dv; ++c) {
                            const double fr = fo[(((size_t)b * cap + row) * Hq + h) * Dv + c];
                            if (fabs(fr) > mx) mx = fabs(fr);
                        }
                        for (c = 0; c < Dv; ++c) {
                            const double fr = fo[(((size_t)b * cap + row) * Hq + h) * Dv + c], g = t_load(&out, b, i, h, c);
                            const double e = fabs(g - fr), allow = (G_TOL + kernel_tol) * mx + t_dt_rel(out.dtype) * fabs(fr);
                            if (!(e <= allow)) worst = e != e ? INFINITY : G_MAX(worst, e);
                        }
                        T_CHECK(worst == 0.0, "%s: decode row b=%d i=%d h=%d != full forward row %d (err %.3g)", ctx, b, i, h,
                                row, worst);
                    }
                }
            free(fo);
        }
        free(qf.data); free(of.data);
    }

    if (check_threads) {       /* bitwise for any thread count and the hook */
        const size_t ob = (size_t)B * Sq * Hq * Dv * t_dt_size(out.dtype), lb = sizeof(float) * (size_t)B * Hq * Sq;
        void *o2 = t_xmalloc(ob);
        float *l2 = (float *)t_xmalloc(lb);
        int nts[4] = { 1, 2, 3, 7 }, k;
        g_hook_state hs;
        for (k = 0; k < 5; ++k) {
            attn_desc td = d;
            attn_tensor o = out;
            o.data = o2;
            hs.calls = 0;
            if (k < 4) td.n_threads = nts[k];
            else { td.parallel = g_hook; td.parallel_user = &hs; td.n_threads = 3; }
            st = attn_decode(&td, q, &tc.c, o, l2);
            T_CHECK(st == ATTN_OK && memcmp(o2, out.data, ob) == 0 && memcmp(l2, lse, lb) == 0,
                    "%s: n_threads %d%s not bitwise equal to the default", ctx, td.n_threads, k == 4 ? " (hook)" : "");
        }
        {   /* a caller workspace of attn_decode_workspace_size bytes: no allocation, same bits */
            size_t bytes = 0, m0;
            void *ws;
            attn_desc wd = d;
            attn_tensor o = out;
            o.data = o2;
            T_CHECK(attn_decode_workspace_size(&d, q, &tc.c, &bytes) == ATTN_OK && bytes > 0, "%s: attn_decode_workspace_size", ctx);
            ws = t_xmalloc(bytes);
            wd.workspace = ws; wd.workspace_size = bytes;
            m0 = t_attn_mallocs;
            st = attn_decode(&wd, q, &tc.c, o, l2);
            T_CHECK(st == ATTN_OK && t_attn_mallocs == m0 && memcmp(o2, out.data, ob) == 0 && memcmp(l2, lse, lb) == 0,
                    "%s: caller workspace run allocated (%d) or differs (%s)", ctx, (int)(t_attn_mallocs - m0), attn_status_str(st));
            wd.workspace_size = bytes - 1;
            st = attn_decode(&wd, q, &tc.c, o, l2);
            if (T_CHECK(st == ATTN_ERR_WORKSPACE, "%s: a workspace one byte short returned %s", ctx, attn_status_str(st)))
                t_status_provoked[ATTN_ERR_WORKSPACE] = 1;
            free(ws);
        }
        free(o2); free(l2);
    }
    free(ref); free(rlse); free(shift);
done:
    free(Kf.data); free(Vf.data); free(q.data); free(out.data); free(lse); free(alibi); free(bias); free(sq);
    free(pos_q); free(pos_k);
    tc_free(&tc);
}

static void test_decode_sweep(void) {
    static const int gs[] = { 1, 2, 3, 4, 8 }, Ds[] = { 4, 8, 16, 33, 64, 128 }, pss[] = { 1, 3, 5, 7, 16, 32 };
    t_rng r = t_rng_seed(601);
    const int n = T_QUICK ? 40 : 160;
    int idx;
    for (idx = 0; idx < n; ++idx) {
        dcfg cf;
        attn_desc d;
        int lens[4], b;
        memset(&cf, 0, sizeof cf);
        memset(&d, 0, sizeof d);
        cf.B = t_irange(&r, 1, 4); cf.Hkv = t_irange(&r, 1, 3); cf.g = t_pick(&r, gs, 5);
        cf.D = t_pick(&r, Ds, 6); cf.Dv = t_chance(&r, 0.6) ? cf.D : t_irange(&r, 1, 40);
        cf.Sq = t_chance(&r, 0.6) ? 1 : t_irange(&r, 2, 4);
        cf.dt = idx % 3 == 0 ? ATTN_F32 : idx % 3 == 1 ? ATTN_F16 : ATTN_BF16;
        cf.ps = idx % 2 ? t_pick(&r, pss, 6) : 0;
        cf.layout = t_irange(&r, 0, 2);
        cf.out_dt_same = t_chance(&r, 0.25);
        cf.q_f32 = cf.dt != ATTN_F32 && t_chance(&r, 0.4);
        cf.use_bias = t_chance(&r, 0.1);
        cf.use_seqlens_q = t_chance(&r, 0.1);
        for (b = 0; b < cf.B; ++b) lens[b] = t_chance(&r, 0.08) ? t_irange(&r, 0, 2) : t_irange(&r, 1, T_QUICK ? 90 : 300);
        d.causal = t_chance(&r, 0.6);
        if (t_chance(&r, 0.3)) d.window_left = t_irange(&r, 1, 40);
        if (t_chance(&r, 0.3)) d.sink_tokens = t_irange(&r, 1, 6);
        if (t_chance(&r, 0.2)) d.softcap = (float)(5.0 + 25.0 * t_unif(&r));
        if (t_chance(&r, 0.25)) d.alibi_slopes = (const float *)&d;          /* replaced in decode_case */
        if (t_chance(&r, 0.3)) {
            d.rope = t_chance(&r, 0.5) ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF;
            if (t_chance(&r, 0.3)) d.rope_dim = 2 * t_irange(&r, 1, cf.D / 2 > 0 ? cf.D / 2 : 1);
            if (d.rope_dim > cf.D) d.rope_dim = 0;
            if (t_chance(&r, 0.3)) d.rope_base = t_chance(&r, 0.5) ? 500.0f : 1e6f;
            if (t_chance(&r, 0.3)) d.rope_scaling = t_chance(&r, 0.5) ? 2.0f : 8.0f;
        }
        if (t_chance(&r, 0.5)) d.n_threads = t_irange(&r, 1, 4);
        decode_case("decode sweep", &cf, d, lens, &r, idx % 5 == 0);
    }
}

/* Long caches: the flash-decoding split (batch 1) bitwise across threads, == the unsplit
   computation of the same rows in a batch of 32 (no split), == the reference. */
static void test_decode_split(void) {
    t_rng r = t_rng_seed(602);
    int rep;
    for (rep = 0; rep < 2; ++rep) {
        dcfg cf;
        attn_desc d;
        int lens[1];
        memset(&cf, 0, sizeof cf); memset(&d, 0, sizeof d);
        cf.B = 1; cf.Hkv = 2; cf.g = 4; cf.D = 64; cf.Dv = 64; cf.Sq = 1;
        cf.dt = rep ? ATTN_F16 : ATTN_F32; cf.ps = rep ? 13 : 0;
        lens[0] = T_QUICK ? 1500 : 3000;
        d.causal = 1; d.sink_tokens = rep ? 4 : 0; d.window_left = rep ? 2000 : 0;
        decode_case("decode split", &cf, d, lens, &r, 1);
    }
    {   /* split (batch 1) vs unsplit (the same sequence 32 times) */
        const int L = T_QUICK ? 1200 : 2500, Hkv = 2, g = 2, D = 32, NB = 32;
        tcache one, many;
        attn_tensor Kf1, Vf1, KfN, VfN, q1, qN, o1, oN;
        int lens1[1], lensN[NB], b, h, t, c;
        attn_desc d;
        memset(&d, 0, sizeof d);
        tc_make(&one, ATTN_F32, 1, Hkv, D, D, L, 0, 0, &r);
        tc_make(&many, ATTN_F32, NB, Hkv, D, D, L, 7, 0, &r);
        Kf1 = attn_tensor_dense(t_xmalloc((size_t)one.cap * Hkv * D * 4), ATTN_F32, 1, one.cap, Hkv, D);
        Vf1 = attn_tensor_dense(t_xmalloc((size_t)one.cap * Hkv * D * 4), ATTN_F32, 1, one.cap, Hkv, D);
        KfN = attn_tensor_dense(t_xmalloc((size_t)NB * many.cap * Hkv * D * 4), ATTN_F32, NB, many.cap, Hkv, D);
        VfN = attn_tensor_dense(t_xmalloc((size_t)NB * many.cap * Hkv * D * 4), ATTN_F32, NB, many.cap, Hkv, D);
        t_fill_normal(&Kf1, &r, 1.0); t_fill_normal(&Vf1, &r, 1.0);
        for (b = 0; b < NB; ++b)
            for (t = 0; t < L; ++t)
                for (h = 0; h < Hkv; ++h)
                    for (c = 0; c < D; ++c) {
                        t_store(&KfN, b, t, h, c, t_load(&Kf1, 0, t, h, c));
                        t_store(&VfN, b, t, h, c, t_load(&Vf1, 0, t, h, c));
                    }
        lens1[0] = L;
        for (b = 0; b < NB; ++b) lensN[b] = L;
        tc_fill(&one, &Kf1, &Vf1, lens1, &r);
        tc_fill(&many, &KfN, &VfN, lensN, &r);
        q1 = attn_tensor_dense(t_xmalloc((size_t)Hkv * g * D * 4), ATTN_F32, 1, 1, Hkv * g, D);
        t_fill_normal(&q1, &r, 1.0);
        qN = attn_tensor_dense(q1.data, ATTN_F32, NB, 1, Hkv * g, D);
        qN.stride_batch = 0; qN.stride_seq = (ptrdiff_t)Hkv * g * D; qN.stride_head = D;   /* broadcast */
        o1 = attn_tensor_dense(t_xmalloc((size_t)Hkv * g * D * 4), ATTN_F32, 1, 1, Hkv * g, D);
        oN = attn_tensor_dense(t_xmalloc((size_t)NB * Hkv * g * D * 4), ATTN_F32, NB, 1, Hkv * g, D);
        T_CHECK(attn_decode(&d, q1, &one.c, o1, NULL) == ATTN_OK && attn_decode(&d, qN, &many.c, oN, NULL) == ATTN_OK,
                "split vs unsplit: attn_decode failed");
        for (b = 0; b < NB; b += 31)
            for (h = 0; h < Hkv * g; ++h) {
                double mx = 1.0, worst = 0.0;
                for (c = 0; c < D; ++c) mx = G_MAX(mx, fabs(t_load(&o1, 0, 0, h, c)));
                for (c = 0; c < D; ++c) worst = G_MAX(worst, fabs(t_load(&oN, b, 0, h, c) - t_load(&o1, 0, 0, h, c)));
                T_CHECK(worst <= G_TOL * mx, "split (batch 1) vs unsplit (batch %d, row %d) head %d: err %.3g", NB, b, h, worst);
            }
        free(Kf1.data); free(Vf1.data); free(KfN.data); free(VfN.data); free(q1.data);
        free(o1.data); free(oN.data);
        tc_free(&one); tc_free(&many);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* RoPE                                                                                      */
/* ---------------------------------------------------------------------------------------- */

static void test_rope_utility(void) {
    t_rng r = t_rng_seed(603);
    const int n = T_QUICK ? 40 : 150;
    int idx;
    for (idx = 0; idx < n; ++idx) {
        const int B = t_irange(&r, 1, 3), S = t_irange(&r, 1, 9), H = t_irange(&r, 1, 3), D = t_irange(&r, 1, 40);
        const attn_dtype dt = idx % 3 == 0 ? ATTN_F32 : idx % 3 == 1 ? ATTN_F16 : ATTN_BF16;
        attn_desc d;
        attn_tensor x = attn_tensor_dense(NULL, dt, B, S, H, D);
        int *pos = NULL, b, s, h, e, bad = 0;
        double *row = (double *)t_xmalloc(sizeof(double) * (size_t)D), mx;
        void *orig;
        size_t ext;
        tr_rope_cfg rc;
        attn_status st;
        memset(&d, 0, sizeof d);
        d.rope = idx % 7 == 6 ? ATTN_ROPE_OFF : t_chance(&r, 0.5) ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF;
        if (D >= 2 && t_chance(&r, 0.4)) d.rope_dim = 2 * t_irange(&r, 1, D / 2);
        if (t_chance(&r, 0.3)) d.rope_base = t_chance(&r, 0.5) ? 100.0f : 500000.0f;
        if (t_chance(&r, 0.3)) d.rope_scaling = t_chance(&r, 0.5) ? 4.0f : 0.5f;
        if (t_chance(&r, 0.5)) {     /* padded strides */
            x.stride_head = D + 2; x.stride_seq = (ptrdiff_t)H * (D + 2) + 3; x.stride_batch = (ptrdiff_t)S * x.stride_seq + 1;
        }
        ext = t_extent(&x);
        x.data = t_xmalloc(ext * t_dt_size(dt));
        t_fill_nan(x.data, dt, ext);
        t_fill_normal(&x, &r, 2.0);
        orig = t_xmalloc(ext * t_dt_size(dt));
        memcpy(orig, x.data, ext * t_dt_size(dt));
        if (t_chance(&r, 0.5)) {
            pos = (int *)t_xmalloc(sizeof(int) * (size_t)B * S);
            for (e = 0; e < B * S; ++e) pos[e] = t_chance(&r, 0.2) ? t_irange(&r, -1000, 0) : t_irange(&r, 0, 200000);
        }
        st = attn_rope_apply(&d, x, pos);
        T_CHECK(st == ATTN_OK, "attn_rope_apply returned %s", attn_status_str(st));
        rc = tr_cfg(&d, D);
        for (b = 0; b < B && !bad; ++b)
            for (s = 0; s < S && !bad; ++s)
                for (h = 0; h < H && !bad; ++h) {
                    attn_tensor xo = x;
                    xo.data = orig;
                    mx = 1.0;
                    for (e = 0; e < D; ++e) { row[e] = t_load(&xo, b, s, h, e); mx = G_MAX(mx, fabs(row[e])); }
                    tr_rope(&rc, row, pos ? pos[b * S + s] : s);
                    for (e = 0; e < D; ++e) {
                        const double g = t_load(&x, b, s, h, e);
                        if (d.rope == ATTN_ROPE_OFF || e >= rc.rdim) {
                            if (memcmp((char *)x.data + t_offset(&x, b, s, h, e) * t_dt_size(dt),
                                       (char *)orig + t_offset(&x, b, s, h, e) * t_dt_size(dt), t_dt_size(dt)) != 0) {
                                T_CHECK(0, "rope utility: element %d past rope_dim %d (or rope off) changed", e, rc.rdim);
                                bad = 1; break;
                            }
                        } else if (!(fabs(g - row[e]) <= 1e-6 * mx + t_dt_rel(dt) * fabs(row[e]))) {
                            T_CHECK(0, "rope utility %s mode %d rdim %d base %g scaling %g pos %d: x[%d,%d,%d,%d] = %.9g, ref %.9g",
                                    t_dt_name(dt), d.rope, rc.rdim, rc.base, rc.scaling, pos ? pos[b * S + s] : s, b, s, h, e, g, row[e]);
                            bad = 1; break;
                        }
                    }
                }
        if (!bad) T_CHECK(1, "rope utility");
        free(row); free(orig); free(x.data); free(pos);
    }
}

/* in-kernel rotation (attn_forward and attn_decode) == rotating q and k beforehand */
static void test_rope_in_kernel(void) {
    t_rng r = t_rng_seed(604);
    const int n = T_QUICK ? 12 : 40;
    int idx;
    for (idx = 0; idx < n; ++idx) {
        const int B = t_irange(&r, 1, 3), Sq = t_irange(&r, 1, 20), Sk = t_irange(&r, 1, 90), Hkv = t_irange(&r, 1, 2);
        const int Hq = Hkv * t_irange(&r, 1, 3), D = 2 * t_irange(&r, 1, 24);
        attn_desc d, d0;
        attn_tensor q, k, v, q2, k2, o1, o2;
        int *pq = NULL, *pk = NULL, *dq, b, i;
        double worst = 0.0;
        memset(&d, 0, sizeof d);
        d.rope = idx % 2 ? ATTN_ROPE_INTERLEAVED : ATTN_ROPE_HALF;
        d.causal = t_chance(&r, 0.5);
        if (t_chance(&r, 0.3)) d.rope_dim = 2 * t_irange(&r, 1, D / 2);
        if (t_chance(&r, 0.3)) d.rope_scaling = 4.0f;
        d.n_threads = t_irange(&r, 1, 3);
        q = attn_tensor_dense(t_xmalloc((size_t)B * Sq * Hq * D * 4), ATTN_F32, B, Sq, Hq, D);
        k = attn_tensor_dense(t_xmalloc((size_t)B * Sk * Hkv * D * 4), ATTN_F32, B, Sk, Hkv, D);
        v = attn_tensor_dense(t_xmalloc((size_t)B * Sk * Hkv * D * 4), ATTN_F32, B, Sk, Hkv, D);
        q2 = q; k2 = k;
        q2.data = t_xmalloc((size_t)B * Sq * Hq * D * 4); k2.data = t_xmalloc((size_t)B * Sk * Hkv * D * 4);
        o1 = attn_tensor_dense(t_xmalloc((size_t)B * Sq * Hq * D * 4), ATTN_F32, B, Sq, Hq, D);
        o2 = attn_tensor_dense(t_xmalloc((size_t)B * Sq * Hq * D * 4), ATTN_F32, B, Sq, Hq, D);
        t_fill_normal(&q, &r, 1.0); t_fill_normal(&k, &r, 1.0); t_fill_normal(&v, &r, 1.0);
        memcpy(q2.data, q.data, (size_t)B * Sq * Hq * D * 4); memcpy(k2.data, k.data, (size_t)B * Sk * Hkv * D * 4);
        dq = (int *)t_xmalloc(sizeof(int) * (size_t)B * Sq);
        if (t_chance(&r, 0.5)) {
            pq = (int *)t_xmalloc(sizeof(int) * (size_t)B * Sq); pk = (int *)t_xmalloc(sizeof(int) * (size_t)B * Sk);
            for (i = 0; i < B * Sq; ++i) pq[i] = t_irange(&r, 0, 3000);
            for (i = 0; i < B * Sk; ++i) pk[i] = t_irange(&r, 0, 3000);
            d.rope_pos_q = pq; d.rope_pos_k = pk;
        }
        for (b = 0; b < B; ++b) for (i = 0; i < Sq; ++i) dq[b * Sq + i] = pq ? pq[b * Sq + i] : i + Sk - Sq;
        T_CHECK(attn_forward(&d, q, k, v, o1, NULL) == ATTN_OK, "rope in-kernel forward failed");
        d0 = d; d0.rope = ATTN_ROPE_OFF;
        T_CHECK(attn_rope_apply(&d, q2, dq) == ATTN_OK && attn_rope_apply(&d, k2, pk) == ATTN_OK, "rope utility failed");
        T_CHECK(attn_forward(&d0, q2, k2, v, o2, NULL) == ATTN_OK, "rope beforehand forward failed");
        for (i = 0; i < B * Sq * Hq * D; ++i)
            worst = G_MAX(worst, fabs((double)((float *)o1.data)[i] - ((float *)o2.data)[i]));
        T_CHECK(worst <= 2e-6, "rope in-kernel vs beforehand (forward, mode %d, B%d Sq%d Sk%d D%d): max err %.3g", d.rope, B, Sq,
                Sk, D, worst);
        free(q.data); free(k.data); free(v.data); free(q2.data); free(k2.data); free(o1.data); free(o2.data);
        free(pq); free(pk); free(dq);
    }
    /* decode: a cache of un-rotated keys with in-kernel RoPE == a cache of keys rotated by
       their slot with a query rotated by its position, no RoPE */
    for (idx = 0; idx < (T_QUICK ? 4 : 12); ++idx) {
        const int B = t_irange(&r, 1, 3), Hkv = 2, Hq = 4, D = 32, ps = idx % 2 ? 5 : 0;
        tcache raw, rot;
        attn_tensor Kf, Kr, Vf, q, qr, o1, o2;
        int lens[3], b, i, *qpos;
        double worst = 0.0;
        attn_desc d, d0;
        memset(&d, 0, sizeof d);
        d.rope = idx % 3 ? ATTN_ROPE_HALF : ATTN_ROPE_INTERLEAVED; d.causal = 1;
        for (b = 0; b < B; ++b) lens[b] = t_irange(&r, 1, 150);
        tc_make(&raw, ATTN_F32, B, Hkv, D, D, 150, ps, 0, &r);
        tc_make(&rot, ATTN_F32, B, Hkv, D, D, 150, ps, 0, &r);
        Kf = attn_tensor_dense(t_xmalloc((size_t)B * 160 * Hkv * D * 4), ATTN_F32, B, 160, Hkv, D);
        Kr = Kf; Kr.data = t_xmalloc((size_t)B * 160 * Hkv * D * 4);
        Vf = Kf; Vf.data = t_xmalloc((size_t)B * 160 * Hkv * D * 4);
        t_fill_normal(&Kf, &r, 1.0); t_fill_normal(&Vf, &r, 1.0);
        memcpy(Kr.data, Kf.data, (size_t)B * 160 * Hkv * D * 4);
        T_CHECK(attn_rope_apply(&d, Kr, NULL) == ATTN_OK, "rope utility failed");
        tc_fill(&raw, &Kf, &Vf, lens, &r);
        tc_fill(&rot, &Kr, &Vf, lens, &r);
        q = attn_tensor_dense(t_xmalloc((size_t)B * Hq * D * 4), ATTN_F32, B, 1, Hq, D);
        qr = q; qr.data = t_xmalloc((size_t)B * Hq * D * 4);
        t_fill_normal(&q, &r, 1.0);
        memcpy(qr.data, q.data, (size_t)B * Hq * D * 4);
        qpos = (int *)t_xmalloc(sizeof(int) * (size_t)B);
        for (b = 0; b < B; ++b) qpos[b] = lens[b] - 1;
        T_CHECK(attn_rope_apply(&d, qr, qpos) == ATTN_OK, "rope utility failed");
        o1 = attn_tensor_dense(t_xmalloc((size_t)B * Hq * D * 4), ATTN_F32, B, 1, Hq, D);
        o2 = o1; o2.data = t_xmalloc((size_t)B * Hq * D * 4);
        d0 = d; d0.rope = ATTN_ROPE_OFF;
        T_CHECK(attn_decode(&d, q, &raw.c, o1, NULL) == ATTN_OK && attn_decode(&d0, qr, &rot.c, o2, NULL) == ATTN_OK,
                "rope decode failed");
        for (i = 0; i < B * Hq * D; ++i) worst = G_MAX(worst, fabs((double)((float *)o1.data)[i] - ((float *)o2.data)[i]));
        T_CHECK(worst <= 2e-6, "rope in-kernel vs beforehand (decode, ps %d): max err %.3g", ps, worst);
        free(Kf.data); free(Kr.data); free(Vf.data); free(q.data); free(qr.data); free(o1.data); free(o2.data); free(qpos);
        tc_free(&raw); tc_free(&rot);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* StreamingLLM and eviction                                                                 */
/* ---------------------------------------------------------------------------------------- */

/* deterministic token content: element d of head h of stream token t of sequence b */
static double tok_val(int kv, int b, long long t, int h, int d, attn_dtype dt) {
    uint64_t z = (uint64_t)t * 0x9E3779B97F4A7C15ull ^ (uint64_t)(b * 131 + h * 17 + d * 7 + kv * 3 + 1) * 0xBF58476D1CE4E5B9ull;
    z ^= z >> 29; z *= 0x94D049BB133111EBull; z ^= z >> 32;
    return t_round_dt(((double)(z % 2001) - 1000.0) / 400.0, dt);
}

/* the streaming-llm kept set after `total` tokens: [0, sink) + [total - recent, total) */
static int tr_stream_ref(long long total, int sink, int recent, long long *kept) {
    long long t;
    int n = 0;
    if (total <= (long long)sink + recent) { for (t = 0; t < total; ++t) kept[n++] = t; return n; }
    for (t = 0; t < sink; ++t) kept[n++] = t;
    for (t = total - recent; t < total; ++t) kept[n++] = t;
    return n;
}

static void test_streaming(void) {
    t_rng r = t_rng_seed(605);
    int rep;
    for (rep = 0; rep < (T_QUICK ? 6 : 16); ++rep) {
        const int B = t_irange(&r, 1, 3), Hkv = t_irange(&r, 1, 2), D = 2 * t_irange(&r, 1, 4), Dv = t_irange(&r, 1, 5);
        const int sink = t_irange(&r, 0, 4), recent = t_irange(&r, 1, 12), ps = rep % 2 ? t_irange(&r, 1, 5) : 0;
        const attn_dtype dt = rep % 3 == 0 ? ATTN_F32 : rep % 3 == 1 ? ATTN_F16 : ATTN_BF16;
        tcache tc;
        long long total[3] = { 0, 0, 0 }, kept[64];
        int step, b, s, h, e, ok = 1, nk = 0;
        tc_make(&tc, dt, B, Hkv, D, Dv, sink + recent + t_irange(&r, 0, 3), ps, t_irange(&r, 0, 2), &r);
        for (step = 0; step < 60 && ok; ++step) {
            const int S = t_irange(&r, 1, sink + recent + 4);
            int n_new[3], use_null = t_chance(&r, 0.15);
            attn_tensor kn = attn_tensor_dense(t_xmalloc((size_t)B * S * Hkv * D * 4), ATTN_F32, B, S, Hkv, D);
            attn_tensor vn = attn_tensor_dense(t_xmalloc((size_t)B * S * Hkv * Dv * 4), ATTN_F32, B, S, Hkv, Dv);
            attn_status st;
            for (b = 0; b < B; ++b) {
                n_new[b] = use_null ? S : t_chance(&r, 0.7) ? t_irange(&r, 0, G_MAX(1, S / 3)) : t_irange(&r, 0, S);
                for (s = 0; s < S; ++s)
                    for (h = 0; h < Hkv; ++h) {
                        for (e = 0; e < D; ++e) t_store(&kn, b, s, h, e, tok_val(0, b, total[b] + s, h, e, dt));
                        for (e = 0; e < Dv; ++e) t_store(&vn, b, s, h, e, tok_val(1, b, total[b] + s, h, e, dt));
                    }
            }
            st = attn_kv_append_streaming(&tc.c, sink, recent, kn, vn, use_null ? NULL : n_new);
            if (!T_CHECK(st == ATTN_OK, "attn_kv_append_streaming returned %s", attn_status_str(st))) ok = 0;
            for (b = 0; b < B && ok; ++b) {
                total[b] += n_new[b];
                nk = tr_stream_ref(total[b], sink, recent, kept);
                if (!T_CHECK(tc.lens[b] == nk, "streaming sink %d recent %d: after %lld tokens lens[%d] = %d, want %d", sink, recent,
                             total[b], b, tc.lens[b], nk)) { ok = 0; break; }
                for (s = 0; s < nk && ok; ++s)
                    for (h = 0; h < Hkv && ok; ++h) {
                        for (e = 0; e < D && ok; ++e)
                            if (tc_get(&tc, 0, b, s, h, e) != tok_val(0, b, kept[s], h, e, dt)) ok = 0;
                        for (e = 0; e < Dv && ok; ++e)
                            if (tc_get(&tc, 1, b, s, h, e) != tok_val(1, b, kept[s], h, e, dt)) ok = 0;
                        if (!ok) T_CHECK(0, "streaming sink %d recent %d ps %d: slot %d of seq %d should hold token %lld", sink, recent,
                                         ps, s, b, kept[s]);
                    }
            }
            free(kn.data); free(vn.data);
        }
        if (ok) T_CHECK(1, "streaming");
        /* positions by cache slot: decode with RoPE (no explicit positions) == the reference
           over the kept tokens with keys rotated by slot and the query by its slot */
        if (ok && dt == ATTN_F32) {
            const int Hq = Hkv * 2;
            attn_desc d;
            attn_tensor q = attn_tensor_dense(t_xmalloc((size_t)B * Hq * D * 4), ATTN_F32, B, 1, Hq, D);
            attn_tensor o = attn_tensor_dense(t_xmalloc((size_t)B * Hq * Dv * 4), ATTN_F32, B, 1, Hq, Dv);
            attn_tensor Kl = attn_tensor_dense(t_xmalloc((size_t)B * 64 * Hkv * D * 4), ATTN_F32, B, 64, Hkv, D);
            attn_tensor Vl = attn_tensor_dense(t_xmalloc((size_t)B * 64 * Hkv * Dv * 4), ATTN_F32, B, 64, Hkv, Dv);
            double *ref = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq);
            float *qrot, *krot;
            int shift[3];
            tr_rope_cfg rc;
            attn_desc rd;
            memset(&d, 0, sizeof d);
            d.rope = ATTN_ROPE_HALF; d.causal = 1;
            t_fill_normal(&q, &r, 1.0);
            for (b = 0; b < B; ++b) {
                nk = tr_stream_ref(total[b], sink, recent, kept);
                for (s = 0; s < 64; ++s)
                    for (h = 0; h < Hkv; ++h) {
                        for (e = 0; e < D; ++e) t_store(&Kl, b, s, h, e, s < nk ? tok_val(0, b, kept[s], h, e, dt) : 0.0);
                        for (e = 0; e < Dv; ++e) t_store(&Vl, b, s, h, e, s < nk ? tok_val(1, b, kept[s], h, e, dt) : 0.0);
                    }
                shift[b] = tc.lens[b] - 1;
            }
            T_CHECK(attn_decode(&d, q, &tc.c, o, NULL) == ATTN_OK, "streaming decode failed");
            rc = tr_cfg(&d, D);
            qrot = tr_rotated_copy(&q, &rc, NULL, shift);
            krot = tr_rotated_copy(&Kl, &rc, NULL, NULL);
            rd = d; rd.rope = ATTN_ROPE_OFF; rd.seqlens_k = tc.lens;
            ref_attention(&rd, attn_tensor_dense(qrot, ATTN_F32, B, 1, Hq, D), attn_tensor_dense(krot, ATTN_F32, B, 64, Hkv, D),
                          Vl, ref, rl);
            for (b = 0; b < B; ++b) for (h = 0; h < Hq; ++h) rows_close("streaming decode (slot positions)", &o, ref, b, 0, h, G_TOL);
            free(q.data); free(o.data); free(Kl.data); free(Vl.data); free(ref); free(rl); free(qrot); free(krot);
        }
        tc_free(&tc);
    }
}

static void test_evict(void) {
    t_rng r = t_rng_seed(606);
    int rep;
    for (rep = 0; rep < (T_QUICK ? 6 : 20); ++rep) {
        const int B = 2, Hkv = 2, D = 3, Dv = 2, ps = rep % 2 ? t_irange(&r, 1, 6) : 0;
        const attn_dtype dt = rep % 3 == 0 ? ATTN_F32 : ATTN_BF16;
        tcache tc;
        attn_tensor Kf = attn_tensor_dense(t_xmalloc((size_t)B * 80 * Hkv * D * 4), ATTN_F32, B, 80, Hkv, D);
        attn_tensor Vf = attn_tensor_dense(t_xmalloc((size_t)B * 80 * Hkv * Dv * 4), ATTN_F32, B, 80, Hkv, Dv);
        long long list[2][80];
        int lens[2] = { 0, 0 }, n[2], b, s, h, e, k, ok = 1;
        tc_make(&tc, dt, B, Hkv, D, Dv, 80, ps, t_irange(&r, 0, 2), &r);
        for (b = 0; b < B; ++b) {
            lens[b] = t_irange(&r, 0, 80); n[b] = lens[b];
            for (s = 0; s < 80; ++s) {
                list[b][s] = s;
                for (h = 0; h < Hkv; ++h) {
                    for (e = 0; e < D; ++e) t_store(&Kf, b, s, h, e, tok_val(0, b, s, h, e, dt));
                    for (e = 0; e < Dv; ++e) t_store(&Vf, b, s, h, e, tok_val(1, b, s, h, e, dt));
                }
            }
        }
        tc_fill(&tc, &Kf, &Vf, lens, &r);
        for (k = 0; k < 6 && ok; ++k) {
            const int sq = t_irange(&r, 0, B - 1), start = t_irange(&r, 0, n[sq]), count = t_irange(&r, 0, n[sq] - start);
            attn_status st = attn_kv_evict(&tc.c, sq, start, count);
            if (!T_CHECK(st == ATTN_OK, "attn_kv_evict returned %s", attn_status_str(st))) { ok = 0; break; }
            memmove(&list[sq][start], &list[sq][start + count], sizeof(long long) * (size_t)(n[sq] - start - count));
            n[sq] -= count;
            for (b = 0; b < B && ok; ++b) {
                int got = -1;
                if (!T_CHECK(attn_kv_len(&tc.c, b, &got) == ATTN_OK && got == n[b], "evict: attn_kv_len(%d) = %d, want %d", b, got, n[b])) ok = 0;
                for (s = 0; s < n[b] && ok; ++s)
                    for (h = 0; h < Hkv; ++h) {
                        for (e = 0; e < D; ++e) if (tc_get(&tc, 0, b, s, h, e) != tok_val(0, b, list[b][s], h, e, dt)) ok = 0;
                        for (e = 0; e < Dv; ++e) if (tc_get(&tc, 1, b, s, h, e) != tok_val(1, b, list[b][s], h, e, dt)) ok = 0;
                    }
                if (!ok) T_CHECK(0, "evict (ps %d): seq %d content differs after evicting [%d, %d) of seq %d", ps, b, start, start + count, sq);
            }
        }
        if (ok) T_CHECK(1, "evict");
        {
            int got = 12345;
            T_CHECK(attn_kv_len(&tc.c, -1, &got) == ATTN_ERR_KV_SEQ && attn_kv_len(&tc.c, B, &got) == ATTN_ERR_KV_SEQ &&
                    attn_kv_len(NULL, 0, &got) == ATTN_ERR_KV_NULL && attn_kv_len(&tc.c, 0, NULL) == ATTN_ERR_NULL_ARG &&
                    got == 12345, "attn_kv_len of a bad sequence, a NULL cache or a NULL len: a status, len untouched");
        }
        free(Kf.data); free(Vf.data);
        tc_free(&tc);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* EL-attention                                                                              */
/* ---------------------------------------------------------------------------------------- */

/* naive standard MHA (double): y = x W + b everywhere, per-head softmax over h's valid rows */
static void tr_mha(const attn_el_desc *d, const attn_layer_weights *w, const float *x, const float *hs, double *out) {
    const int dm = d->d_model, H = d->heads, Hk = d->kv_heads ? d->kv_heads : H, dk = dm / H, L = d->src_len;
    const double scale = d->scale != 0.0f ? d->scale : 1.0 / sqrt((double)dk);
    double *K = (double *)t_xmalloc(sizeof(double) * (size_t)L * Hk * dk), *V = (double *)t_xmalloc(sizeof(double) * (size_t)L * Hk * dk);
    double *q = (double *)t_xmalloc(sizeof(double) * (size_t)H * dk), *o = (double *)t_xmalloc(sizeof(double) * (size_t)H * dk);
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)L);
    int b, bm, j, c, t, i;
    for (b = 0; b < d->batch; ++b) {
        const int Lb = d->src_lens ? d->src_lens[b] : L;
        const float *hb = hs + (size_t)b * L * dm;
        for (j = 0; j < Lb; ++j)
            for (c = 0; c < Hk * dk; ++c) {
                double ak = w->bk ? w->bk[c] : 0.0, av = w->bv ? w->bv[c] : 0.0;
                for (t = 0; t < dm; ++t) {
                    ak += (double)hb[(size_t)j * dm + t] * w->wk[(size_t)t * Hk * dk + c];
                    av += (double)hb[(size_t)j * dm + t] * w->wv[(size_t)t * Hk * dk + c];
                }
                K[(size_t)j * Hk * dk + c] = ak; V[(size_t)j * Hk * dk + c] = av;
            }
        for (bm = 0; bm < d->beams; ++bm) {
            const float *xr = x + ((size_t)b * d->beams + bm) * dm;
            double *orow = out + ((size_t)b * d->beams + bm) * dm;
            for (c = 0; c < H * dk; ++c) {
                double a = w->bq ? w->bq[c] : 0.0;
                for (t = 0; t < dm; ++t) a += (double)xr[t] * w->wq[(size_t)t * H * dk + c];
                q[c] = a;
            }
            for (i = 0; i < H; ++i) {
                const int kh = i / (H / Hk);
                double mx = -INFINITY, sum = 0.0;
                for (j = 0; j < Lb; ++j) {
                    double a = 0.0;
                    for (t = 0; t < dk; ++t) a += q[i * dk + t] * K[(size_t)j * Hk * dk + kh * dk + t];
                    s[j] = a * scale;
                    if (s[j] > mx) mx = s[j];
                }
                for (j = 0; j < Lb; ++j) { s[j] = exp(s[j] - mx); sum += s[j]; }
                for (t = 0; t < dk; ++t) {
                    double a = 0.0;
                    for (j = 0; j < Lb; ++j) a += s[j] * V[(size_t)j * Hk * dk + kh * dk + t];
                    o[i * dk + t] = a / sum;
                }
            }
            for (c = 0; c < dm; ++c) {
                double a = w->bo ? w->bo[c] : 0.0;
                for (t = 0; t < H * dk; ++t) a += o[t] * w->wo[(size_t)t * dm + c];
                orow[c] = a;
            }
        }
    }
    free(K); free(V); free(q); free(o); free(s);
}

static float *rand_floats(size_t n, double sigma, t_rng *r) {
    float *p = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) p[i] = (float)(sigma * t_normal(r));
    return p;
}

static void test_el_attention(void) {
    t_rng r = t_rng_seed(607);
    const int n = T_QUICK ? 48 : 128;
    int idx;
    for (idx = 0; idx < n; ++idx) {
        attn_el_desc d;
        attn_layer_weights w;
        const int H = 1 + idx % 16, beams = 1 + (idx / 2) % 8, biases = idx % 2 == 0;
        int dk = t_irange(&r, 1, T_QUICK ? 4 : 8), Hk, dm, b, i;
        float *x, *hs, *out, *out2;
        double *ref, mx = 0.0, err = 0.0;
        int lens[3];
        size_t no;
        attn_status st;
        memset(&d, 0, sizeof d); memset(&w, 0, sizeof w);
        Hk = H;
        if (t_chance(&r, 0.3)) { Hk = 1; for (i = H; i >= 1; --i) if (H % i == 0 && t_chance(&r, 0.4)) { Hk = i; break; } }
        if (idx == 5) dk = 64;
        dm = H * dk;
        d.d_model = dm; d.heads = H; d.kv_heads = Hk == H && t_chance(&r, 0.5) ? 0 : Hk;
        d.batch = t_irange(&r, 1, 3); d.beams = beams; d.src_len = t_irange(&r, 1, idx % 9 == 0 ? 200 : 40);
        if (t_chance(&r, 0.3)) { for (b = 0; b < d.batch; ++b) lens[b] = t_irange(&r, 1, d.src_len); d.src_lens = lens; }
        if (t_chance(&r, 0.2)) d.scale = 0.3f;
        d.n_threads = t_irange(&r, 0, 3);
        w.wq = rand_floats((size_t)dm * H * dk, 1.0 / sqrt((double)dm), &r);
        w.wk = rand_floats((size_t)dm * Hk * dk, 1.0 / sqrt((double)dm), &r);
        w.wv = rand_floats((size_t)dm * Hk * dk, 1.0 / sqrt((double)dm), &r);
        w.wo = rand_floats((size_t)H * dk * dm, 1.0 / sqrt((double)dm), &r);
        if (biases) {
            w.bq = rand_floats((size_t)H * dk, 0.5, &r); w.bk = rand_floats((size_t)Hk * dk, 0.5, &r);
            w.bv = rand_floats((size_t)Hk * dk, 0.5, &r); w.bo = rand_floats((size_t)dm, 0.5, &r);
        }
        x = rand_floats((size_t)d.batch * beams * dm, 1.0, &r);
        hs = rand_floats((size_t)d.batch * d.src_len * dm, 1.0, &r);
        no = (size_t)d.batch * beams * dm;
        out = (float *)t_xmalloc(sizeof(float) * no); out2 = (float *)t_xmalloc(sizeof(float) * no);
        ref = (double *)t_xmalloc(sizeof(double) * no);
        st = attn_el_attention(&d, &w, x, hs, out);
        if (T_CHECK(st == ATTN_OK, "attn_el_attention returned %s", attn_status_str(st))) {
            size_t e;
            tr_mha(&d, &w, x, hs, ref);
            for (e = 0; e < no; ++e) mx = G_MAX(mx, fabs(ref[e]));
            for (e = 0; e < no; ++e) { double dd = fabs(out[e] - ref[e]); if (!(dd <= err)) err = dd != dd ? INFINITY : dd; }
            T_CHECK(err <= 1e-5 * mx, "EL-attention vs standard MHA (heads %d kv %d beams %d batch %d d_model %d src %d biases %d): "
                    "rel err %.3g", H, Hk, beams, d.batch, dm, d.src_len, biases, err / mx);
            if (idx % 8 == 0) {    /* bitwise for other thread counts and the hook */
                g_hook_state hs2;
                attn_el_desc d2 = d;
                d2.n_threads = d.n_threads == 1 ? 3 : 1;
                T_CHECK(attn_el_attention(&d2, &w, x, hs, out2) == ATTN_OK && memcmp(out, out2, sizeof(float) * no) == 0,
                        "EL-attention: n_threads %d vs %d not bitwise equal", d.n_threads, d2.n_threads);
                d2.parallel = g_hook; d2.parallel_user = &hs2; d2.n_threads = 4; hs2.calls = 0;
                T_CHECK(attn_el_attention(&d2, &w, x, hs, out2) == ATTN_OK && memcmp(out, out2, sizeof(float) * no) == 0 &&
                        hs2.calls > 0, "EL-attention: the parallel hook result is not bitwise equal");
            }
        }
        free((void *)w.wq); free((void *)w.wk); free((void *)w.wv); free((void *)w.wo);
        free((void *)w.bq); free((void *)w.bk); free((void *)w.bv); free((void *)w.bo);
        free(x); free(hs); free(out); free(out2); free(ref);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Bad input: exact status, message names the field, cache/lens/outputs untouched             */
/* ---------------------------------------------------------------------------------------- */

#define GE_SEED 0xA7u
enum { GE_CAP = 8, GE_H = 2, GE_D = 4, GE_DV = 3, GE_PS = 3, GE_PAGES = 5, GE_MP = 3 };
static float ge_k[2 * GE_CAP * GE_H * GE_D], ge_v[2 * GE_CAP * GE_H * GE_DV];
static float ge_pk[GE_PAGES * GE_PS * GE_H * GE_D], ge_pv[GE_PAGES * GE_PS * GE_H * GE_DV];
static float ge_new_k[2 * 4 * GE_H * GE_D], ge_new_v[2 * 4 * GE_H * GE_DV];
static float ge_q[2 * 1 * 4 * GE_D], ge_out[2 * 1 * 4 * GE_DV], ge_lse[2 * 4];
static int ge_lens[2], ge_table[2 * GE_MP];

static void ge_poison(void) {
    t_sentinel(ge_k, sizeof ge_k, GE_SEED); t_sentinel(ge_v, sizeof ge_v, GE_SEED + 1);
    t_sentinel(ge_pk, sizeof ge_pk, GE_SEED + 2); t_sentinel(ge_pv, sizeof ge_pv, GE_SEED + 3);
    t_sentinel(ge_out, sizeof ge_out, GE_SEED + 4); t_sentinel(ge_lse, sizeof ge_lse, GE_SEED + 5);
    ge_lens[0] = 3; ge_lens[1] = 5;
}
static int ge_untouched(void) {
    return t_sentinel_ok(ge_k, sizeof ge_k, GE_SEED) && t_sentinel_ok(ge_v, sizeof ge_v, GE_SEED + 1) &&
           t_sentinel_ok(ge_pk, sizeof ge_pk, GE_SEED + 2) && t_sentinel_ok(ge_pv, sizeof ge_pv, GE_SEED + 3) &&
           t_sentinel_ok(ge_out, sizeof ge_out, GE_SEED + 4) && t_sentinel_ok(ge_lse, sizeof ge_lse, GE_SEED + 5) &&
           ge_lens[0] == 3 && ge_lens[1] == 5;
}
static attn_kv_cache ge_contig(void) {
    attn_kv_cache c;
    memset(&c, 0, sizeof c);
    c.k = attn_tensor_dense(ge_k, ATTN_F32, 2, GE_CAP, GE_H, GE_D);
    c.v = attn_tensor_dense(ge_v, ATTN_F32, 2, GE_CAP, GE_H, GE_DV);
    c.lens = ge_lens; c.batch = 2;
    return c;
}
static attn_kv_cache ge_paged(void) {
    attn_kv_cache c;
    memset(&c, 0, sizeof c);
    c.k = attn_tensor_dense(ge_pk, ATTN_F32, GE_PAGES, GE_PS, GE_H, GE_D);
    c.v = attn_tensor_dense(ge_pv, ATTN_F32, GE_PAGES, GE_PS, GE_H, GE_DV);
    c.lens = ge_lens; c.batch = 2; c.page_size = GE_PS; c.max_pages = GE_MP; c.block_table = ge_table;
    ge_table[0] = 4; ge_table[1] = 0; ge_table[2] = -99;     /* seq 0: 3 tokens, pages 4 (0 later) */
    ge_table[3] = 1; ge_table[4] = 3; ge_table[5] = 2;       /* seq 1: 5 tokens, pages 1, 3 */
    return c;
}

/* which calls run: 1 append, 2 streaming, 4 decode, 8 evict */
static void ge_expect(const char *label, const attn_kv_cache *c, int calls, attn_desc d, attn_tensor kn, attn_tensor vn,
                      const int *n_new, attn_tensor q, attn_status want, const char *field) {
    const char *msg = attn_status_str(want);
    attn_status st;
    attn_kv_cache cc;
    int k;
    T_CHECK(strstr(msg, field) != NULL, "%s: message \"%s\" does not name \"%s\"", label, msg, field);
    for (k = 0; k < 4; ++k) {
        static const char *const names[4] = { "attn_kv_append", "attn_kv_append_streaming", "attn_decode", "attn_kv_evict" };
        attn_tensor out = attn_tensor_dense(ge_out, ATTN_F32, 2, 1, 4, GE_DV);
        if (!(calls & (1 << k))) continue;
        ge_poison();
        if (c) cc = *c;
        switch (k) {
        case 0: st = attn_kv_append(c ? &cc : NULL, kn, vn, n_new); break;
        case 1: st = attn_kv_append_streaming(c ? &cc : NULL, 1, 4, kn, vn, n_new); break;
        case 2: st = attn_decode(&d, q, c ? &cc : NULL, out, ge_lse); break;
        default: st = attn_kv_evict(c ? &cc : NULL, 1, 1, 2); break;
        }
        if (T_CHECK(st == want, "%s: %s returned %s, want %s", label, names[k], attn_status_str(st), attn_status_str(want)))
            t_status_provoked[want] = 1;
        T_CHECK(ge_untouched(), "%s: %s returned %s but wrote the cache, lens or outputs", label, names[k], attn_status_str(st));
        if (k == 2) {
            size_t bytes = 0;
            st = attn_decode_workspace_size(&d, q, c ? &cc : NULL, &bytes);
            T_CHECK(st == want, "%s: attn_decode_workspace_size returned %s, want %s", label, attn_status_str(st), attn_status_str(want));
        }
    }
}

static void test_gen_errors(void) {
    attn_desc d;
    attn_kv_cache c, p;
    attn_tensor kn = attn_tensor_dense(ge_new_k, ATTN_F32, 2, 4, GE_H, GE_D), vn = attn_tensor_dense(ge_new_v, ATTN_F32, 2, 4, GE_H, GE_DV);
    attn_tensor q = attn_tensor_dense(ge_q, ATTN_F32, 2, 1, 4, GE_D), t;
    int nn[2] = { 1, 2 }, all = 1 | 2 | 4 | 8;
    memset(&d, 0, sizeof d);
    memset(ge_new_k, 0, sizeof ge_new_k); memset(ge_new_v, 0, sizeof ge_new_v); memset(ge_q, 0, sizeof ge_q);
    c = ge_contig(); p = ge_paged();

    /* the valid calls succeed (so each fault below is the only one) */
    {
        attn_kv_cache cc = c, pc = p;
        attn_tensor out = attn_tensor_dense(ge_out, ATTN_F32, 2, 1, 4, GE_DV);
        ge_poison();
        T_CHECK(attn_decode(&d, q, &cc, out, ge_lse) == ATTN_OK, "error fixture: contiguous decode must succeed");
        T_CHECK(attn_decode(&d, q, &pc, out, ge_lse) == ATTN_OK, "error fixture: paged decode must succeed");
        T_CHECK(attn_kv_append(&pc, kn, vn, nn) == ATTN_OK && ge_lens[0] == 4 && ge_lens[1] == 7, "error fixture: paged append must succeed");
        ge_poison();
        T_CHECK(attn_kv_append_streaming(&cc, 1, 4, kn, vn, nn) == ATTN_OK && attn_kv_evict(&cc, 1, 1, 2) == ATTN_OK,
                "error fixture: streaming append and evict must succeed");
    }

    ge_expect("NULL cache", NULL, all, d, kn, vn, nn, q, ATTN_ERR_KV_NULL, "attn_kv_cache");
    { attn_kv_cache x = c; x.k.data = NULL; ge_expect("k.data NULL", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_DATA, "k.data"); }
    { attn_kv_cache x = p; x.v.data = NULL; ge_expect("v.data NULL", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_DATA, "v.data"); }
    { attn_kv_cache x = p; x.lens = NULL; ge_expect("lens NULL", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_LENS, "lens"); }
    { attn_kv_cache x = c; x.v.dtype = ATTN_F16; ge_expect("k/v dtype", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_DTYPE, "dtype"); }
    { attn_kv_cache x = c; x.k.dtype = (attn_dtype)9; x.v.dtype = (attn_dtype)9; ge_expect("bad dtype", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_DTYPE, "dtype"); }
    { attn_kv_cache x = c; x.v.seq = GE_CAP - 1; ge_expect("v.seq", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_SHAPE, "seq"); }
    { attn_kv_cache x = p; x.k.heads = 0; ge_expect("k.heads 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_SHAPE, "heads"); }
    { attn_kv_cache x = c; x.k.stride_batch = GE_CAP * GE_H * GE_D; x.k.stride_seq = 0; x.k.stride_head = GE_D;
      ge_expect("k broadcast", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_BROADCAST, "zero stride"); }
    { attn_kv_cache x = c; x.batch = 0; ge_expect("batch 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_BATCH, "batch"); }
    { attn_kv_cache x = c; x.batch = 1; ge_expect("batch != k.batch", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_BATCH, "k.batch"); }
    { attn_kv_cache x = p; x.page_size = 4; ge_expect("page_size != k.seq", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_PAGE_SIZE, "page_size"); }
    { attn_kv_cache x = c; x.page_size = -1; ge_expect("page_size < 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_PAGE_SIZE, "page_size"); }
    { attn_kv_cache x = p; x.block_table = NULL; ge_expect("NULL block table", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_BLOCK_TABLE, "block_table"); }
    { attn_kv_cache x = p; x.max_pages = 0; ge_expect("max_pages 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_MAX_PAGES, "max_pages"); }
    { attn_kv_cache x = c;
      /* lengths beyond capacity: a lens array of our own, since ge_poison resets ge_lens */
      { static int bad[2] = { 3, GE_CAP + 1 }; x.lens = bad;
        ge_expect("lens > capacity", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_LEN, "lens[b]");
        bad[1] = -1; ge_expect("lens < 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_LEN, "lens[b]");
        x = p; x.lens = bad; bad[1] = GE_MP * GE_PS + 1; ge_expect("paged lens > capacity", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_LEN, "capacity");
        bad[1] = 5; } }
    { static int tab[2 * GE_MP]; attn_kv_cache x = p; memcpy(tab, ge_table, sizeof tab); tab[4] = GE_PAGES; x.block_table = tab;
      ge_expect("page index >= n_pages", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_PAGE_INDEX, "block_table[b][p]");
      tab[4] = -1; ge_expect("page index < 0", &x, all, d, kn, vn, nn, q, ATTN_ERR_KV_PAGE_INDEX, "block_table"); }
    {   /* append into the unused page slot -99 (seq 0 grows past 3 tokens: its second page is 0,
           the third -99); appending 4 to seq 0 needs page index 1 only (ok) - use 7 tokens */
        static int tab[2 * GE_MP]; attn_kv_cache x = p; int n2[2] = { 4, 0 };
        attn_tensor kn8 = attn_tensor_dense(ge_new_k, ATTN_F32, 2, 4, GE_H, GE_D), vn8 = attn_tensor_dense(ge_new_v, ATTN_F32, 2, 4, GE_H, GE_DV);
        memcpy(tab, ge_table, sizeof tab); x.block_table = tab;
        ge_expect("append into an out-of-range page", &x, 1, d, kn8, vn8, n2, q, ATTN_ERR_KV_PAGE_INDEX, "block_table");
    }
    { attn_tensor x = kn; x.data = NULL; ge_expect("k_new NULL", &c, 1 | 2, d, x, vn, nn, q, ATTN_ERR_KV_NEW_NULL, "k_new.data"); }
    { attn_tensor x = vn; x.heads = 3; ge_expect("v_new heads", &c, 1 | 2, d, kn, x, nn, q, ATTN_ERR_KV_NEW_SHAPE, "v_new"); }
    { attn_tensor x = kn; x.dim = GE_D + 1; ge_expect("k_new dim", &p, 1 | 2, d, x, vn, nn, q, ATTN_ERR_KV_NEW_SHAPE, "k_new"); }
    { attn_tensor x = kn; x.batch = 1; ge_expect("k_new batch", &p, 1 | 2, d, x, vn, nn, q, ATTN_ERR_KV_NEW_SHAPE, "cache.batch"); }
    { int bad[2] = { -1, 0 }; ge_expect("n_new < 0", &c, 1 | 2, d, kn, vn, bad, q, ATTN_ERR_KV_N_NEW, "n_new[b]");
      bad[0] = 5; ge_expect("n_new > k_new.seq", &p, 1 | 2, d, kn, vn, bad, q, ATTN_ERR_KV_N_NEW, "k_new.seq"); }
    { attn_tensor x = kn; x.dtype = (attn_dtype)5; ge_expect("k_new dtype", &c, 1 | 2, d, x, vn, nn, q, ATTN_ERR_DTYPE, "dtype"); }
    { int big[2] = { 0, 4 }; ge_expect("append beyond capacity", &c, 1, d, kn, vn, big, q, ATTN_ERR_KV_FULL, "capacity");
      ge_expect("append beyond capacity (NULL n_new)", &c, 1, d, kn, vn, NULL, q, ATTN_ERR_KV_FULL, "capacity"); }
    {   /* evict / len */
        attn_kv_cache x = c;
        attn_status st;
        ge_poison(); st = attn_kv_evict(&x, 2, 0, 1);
        if (T_CHECK(st == ATTN_ERR_KV_SEQ && ge_untouched(), "evict seq 2: %s", attn_status_str(st))) t_status_provoked[ATTN_ERR_KV_SEQ] = 1;
        ge_poison(); st = attn_kv_evict(&x, -1, 0, 1);
        T_CHECK(st == ATTN_ERR_KV_SEQ && ge_untouched(), "evict seq -1: %s", attn_status_str(st));
        ge_poison(); st = attn_kv_evict(&x, 0, 2, 2);
        if (T_CHECK(st == ATTN_ERR_KV_EVICT_RANGE && ge_untouched(), "evict past lens: %s", attn_status_str(st)))
            t_status_provoked[ATTN_ERR_KV_EVICT_RANGE] = 1;
        ge_poison(); st = attn_kv_evict(&x, 0, -1, 1);
        T_CHECK(st == ATTN_ERR_KV_EVICT_RANGE && ge_untouched(), "evict start < 0: %s", attn_status_str(st));
        ge_poison(); st = attn_kv_evict(&x, 0, 0, -1);
        T_CHECK(st == ATTN_ERR_KV_EVICT_RANGE && ge_untouched(), "evict count < 0: %s", attn_status_str(st));
        T_CHECK(strstr(attn_status_str(ATTN_ERR_KV_SEQ), "seq") && strstr(attn_status_str(ATTN_ERR_KV_EVICT_RANGE), "start"),
                "evict messages must name seq / start");
    }
    {   /* streaming policy arguments */
        attn_kv_cache x = c;
        attn_status st;
        int sr[4][2] = { { 5, 4 }, { 0, 0 }, { -1, 3 }, { 0, GE_CAP + 1 } }, k;
        for (k = 0; k < 4; ++k) {
            ge_poison(); st = attn_kv_append_streaming(&x, sr[k][0], sr[k][1], kn, vn, nn);
            if (T_CHECK(st == ATTN_ERR_KV_STREAM && ge_untouched(), "streaming sink %d recent %d: %s", sr[k][0], sr[k][1], attn_status_str(st)))
                t_status_provoked[ATTN_ERR_KV_STREAM] = 1;
        }
        T_CHECK(strstr(attn_status_str(ATTN_ERR_KV_STREAM), "recent") != NULL, "streaming message must name recent");
    }
    /* decode-specific */
    { attn_desc x = d; x.seqlens_k = ge_lens; ge_expect("decode seqlens_k", &c, 4, x, kn, vn, nn, q, ATTN_ERR_DECODE_LENGTHS, "seqlens_k"); }
    { static int cu[3] = { 0, 1, 2 }; attn_desc x = d; x.cu_seqlens_q = cu; x.cu_seqlens_k = cu; x.varlen_batch = 2;
      ge_expect("decode cu_seqlens", &p, 4, x, kn, vn, nn, q, ATTN_ERR_DECODE_LENGTHS, "cu_seqlens"); }
    { attn_tensor x = q; x.heads = 3; ge_expect("decode q.heads % kv_heads", &c, 4, d, kn, vn, nn, x, ATTN_ERR_GQA_HEADS, "q.heads"); }
    { attn_tensor x = q; x.batch = 1; ge_expect("decode q.batch", &p, 4, d, kn, vn, nn, x, ATTN_ERR_K_BATCH, "q.batch"); }
    { attn_desc x = d; x.rope = 3; ge_expect("rope mode", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_MODE, "attn_desc.rope"); }
    { attn_desc x = d; x.rope = ATTN_ROPE_HALF; x.rope_dim = 3; ge_expect("rope_dim odd", &p, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_DIM, "rope_dim");
      x.rope_dim = GE_D + 2; ge_expect("rope_dim > dim", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_DIM, "rope_dim");
      x.rope_dim = -2; ge_expect("rope_dim < 0", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_DIM, "rope_dim"); }
    { attn_desc x = d; x.rope = ATTN_ROPE_INTERLEAVED; x.rope_base = -1.0f; ge_expect("rope_base < 0", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_BASE, "rope_base");
      x.rope_base = (float)INFINITY; ge_expect("rope_base inf", &p, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_BASE, "rope_base"); }
    { attn_desc x = d; x.rope = ATTN_ROPE_INTERLEAVED; x.rope_scaling = -2.0f; ge_expect("rope_scaling < 0", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_SCALING, "rope_scaling");
      x.rope_scaling = (float)NAN; ge_expect("rope_scaling NaN", &c, 4, x, kn, vn, nn, q, ATTN_ERR_ROPE_SCALING, "rope_scaling"); }
    {   /* attn_forward checks RoPE fields too */
        attn_desc x = d;
        attn_tensor kk = attn_tensor_dense(ge_k, ATTN_F32, 2, GE_CAP, GE_H, GE_D), vv = attn_tensor_dense(ge_v, ATTN_F32, 2, GE_CAP, GE_H, GE_DV);
        attn_tensor out = attn_tensor_dense(ge_out, ATTN_F32, 2, 1, 4, GE_DV);
        x.rope = ATTN_ROPE_HALF; x.rope_dim = 5;
        ge_poison();
        T_CHECK(attn_forward(&x, q, kk, vv, out, ge_lse) == ATTN_ERR_ROPE_DIM && ge_untouched(), "attn_forward must check rope_dim");
    }
    {   /* attn_rope_apply */
        attn_desc x = d;
        attn_status st;
        x.rope = ATTN_ROPE_HALF;
        t = attn_tensor_dense(ge_k, ATTN_F32, 2, GE_CAP, GE_H, GE_D);
        ge_poison(); st = attn_rope_apply(NULL, t, NULL);
        T_CHECK(st == ATTN_ERR_NULL_DESC && ge_untouched(), "rope_apply NULL desc: %s", attn_status_str(st));
        { attn_tensor y = t; y.data = NULL; ge_poison(); st = attn_rope_apply(&x, y, NULL);
          if (T_CHECK(st == ATTN_ERR_ROPE_X && ge_untouched(), "rope_apply x NULL: %s", attn_status_str(st))) t_status_provoked[ATTN_ERR_ROPE_X] = 1; }
        { attn_tensor y = t; y.dim = 0; ge_poison(); st = attn_rope_apply(&x, y, NULL);
          if (T_CHECK(st == ATTN_ERR_ROPE_X_SHAPE && ge_untouched(), "rope_apply dim 0: %s", attn_status_str(st))) t_status_provoked[ATTN_ERR_ROPE_X_SHAPE] = 1; }
        { attn_tensor y = t; y.stride_batch = 64; y.stride_seq = 8; y.stride_head = 0; ge_poison(); st = attn_rope_apply(&x, y, NULL);
          if (T_CHECK(st == ATTN_ERR_ROPE_X_BROADCAST && ge_untouched(), "rope_apply broadcast: %s", attn_status_str(st)))
              t_status_provoked[ATTN_ERR_ROPE_X_BROADCAST] = 1; }
        { attn_tensor y = t; y.dtype = (attn_dtype)4; ge_poison(); st = attn_rope_apply(&x, y, NULL);
          T_CHECK(st == ATTN_ERR_DTYPE && ge_untouched(), "rope_apply dtype: %s", attn_status_str(st)); }
        { attn_desc z = x; z.rope = -1; ge_poison(); st = attn_rope_apply(&z, t, NULL);
          T_CHECK(st == ATTN_ERR_ROPE_MODE && ge_untouched(), "rope_apply mode: %s", attn_status_str(st)); }
        { attn_desc z = x; z.rope_dim = 6; ge_poison(); st = attn_rope_apply(&z, t, NULL);
          T_CHECK(st == ATTN_ERR_ROPE_DIM && ge_untouched(), "rope_apply rope_dim > dim: %s", attn_status_str(st)); }
        { attn_tensor y = t; y.stride_batch = PTRDIFF_MAX / 2; y.stride_seq = 8; y.stride_head = 4; ge_poison(); st = attn_rope_apply(&x, y, NULL);
          T_CHECK(st == ATTN_ERR_OVERFLOW && ge_untouched(), "rope_apply overflow: %s", attn_status_str(st)); }
        T_CHECK(strstr(attn_status_str(ATTN_ERR_ROPE_X), "x.data") && strstr(attn_status_str(ATTN_ERR_ROPE_X_SHAPE), "x.dim") &&
                strstr(attn_status_str(ATTN_ERR_ROPE_X_BROADCAST), "zero stride"), "rope_apply messages must name the field");
    }
    {   /* EL-attention */
        static float w[16 * 16], hx[2 * 3 * 16], xo[2 * 2 * 16], xi[2 * 2 * 16];
        attn_layer_weights lw;
        attn_el_desc e, z;
        int lens[2] = { 3, 2 }, k;
        attn_status st;
        struct { const char *label; attn_status want; const char *field; } cases[16];
        int nc = 0;
        memset(&lw, 0, sizeof lw); memset(&e, 0, sizeof e);
        lw.wq = lw.wk = lw.wv = lw.wo = w;
        e.d_model = 16; e.heads = 4; e.batch = 2; e.beams = 2; e.src_len = 3; e.src_lens = lens;
        t_sentinel(xo, sizeof xo, 0x11);
        T_CHECK(attn_el_attention(&e, &lw, xi, hx, xo) == ATTN_OK, "EL error fixture must succeed");
        for (k = 0; k < 13; ++k) {
            const float *xx = xi, *hh = hx;
            const attn_layer_weights *wp = &lw;
            attn_layer_weights lw2 = lw;
            int bad_lens[2] = { 3, 2 };
            z = e;
            switch (k) {
            case 0: wp = NULL; cases[nc].want = ATTN_ERR_EL_NULL; cases[nc].field = "w"; break;
            case 1: xx = NULL; cases[nc].want = ATTN_ERR_EL_NULL; cases[nc].field = "x"; break;
            case 2: hh = NULL; cases[nc].want = ATTN_ERR_EL_NULL; cases[nc].field = "h"; break;
            case 3: lw2.wk = NULL; wp = &lw2; cases[nc].want = ATTN_ERR_EL_WEIGHTS; cases[nc].field = "w->wk"; break;
            case 4: lw2.wo = NULL; wp = &lw2; cases[nc].want = ATTN_ERR_EL_WEIGHTS; cases[nc].field = "w->wo"; break;
            case 5: z.d_model = 0; cases[nc].want = ATTN_ERR_EL_SHAPE; cases[nc].field = "d_model"; break;
            case 6: z.beams = 0; cases[nc].want = ATTN_ERR_EL_SHAPE; cases[nc].field = "beams"; break;
            case 7: z.heads = 3; cases[nc].want = ATTN_ERR_EL_HEADS; cases[nc].field = "multiple of heads"; break;
            case 8: z.kv_heads = 3; cases[nc].want = ATTN_ERR_EL_HEADS; cases[nc].field = "kv_heads"; break;
            case 9: bad_lens[1] = 0; z.src_lens = bad_lens; cases[nc].want = ATTN_ERR_EL_SRC_LENS; cases[nc].field = "src_lens[b]"; break;
            case 10: bad_lens[0] = 4; z.src_lens = bad_lens; cases[nc].want = ATTN_ERR_EL_SRC_LENS; cases[nc].field = "src_len"; break;
            case 11: z.scale = (float)NAN; cases[nc].want = ATTN_ERR_SCALE; cases[nc].field = "scale"; break;
            default: z.n_threads = -1; cases[nc].want = ATTN_ERR_N_THREADS; cases[nc].field = "n_threads"; break;
            }
            t_sentinel(xo, sizeof xo, 0x22);
            st = attn_el_attention(&z, wp, xx, hh, xo);
            if (T_CHECK(st == cases[nc].want && t_sentinel_ok(xo, sizeof xo, 0x22), "EL case %d: returned %s, want %s (or wrote out)",
                        k, attn_status_str(st), attn_status_str(cases[nc].want)))
                t_status_provoked[cases[nc].want] = 1;
            T_CHECK(strstr(attn_status_str(cases[nc].want), cases[nc].field) != NULL, "EL case %d: message does not name %s", k,
                    cases[nc].field);
        }
        st = attn_el_attention(NULL, &lw, xi, hx, xo);
        T_CHECK(st == ATTN_ERR_EL_NULL, "EL NULL desc: %s", attn_status_str(st));
        st = attn_el_attention(&e, &lw, xi, hx, NULL);
        T_CHECK(st == ATTN_ERR_EL_NULL, "EL NULL out: %s", attn_status_str(st));
        z = e; z.d_model = 1 << 30; z.heads = 1; z.src_len = 1 << 30; z.src_lens = NULL; t_sentinel(xo, sizeof xo, 0x33);
        st = attn_el_attention(&z, &lw, xi, hx, xo);
        T_CHECK((st == ATTN_ERR_OVERFLOW || st == ATTN_ERR_OUT_OF_MEMORY) && t_sentinel_ok(xo, sizeof xo, 0x33),
                "EL huge sizes: %s", attn_status_str(st));
        /* issue 16: batch and src_len at INT_MAX (the split plan's batch + 15 and src_len + 63 were
           signed overflow before the size checks: UBSan aborts the sanitizer builds) */
        z = e; z.d_model = 4; z.heads = 1; z.batch = INT_MAX; z.beams = 1; z.src_len = INT_MAX; z.src_lens = NULL;
        t_sentinel(xo, sizeof xo, 0x44);
        st = attn_el_attention(&z, &lw, xi, hx, xo);
        T_CHECK(st == ATTN_ERR_OVERFLOW && t_sentinel_ok(xo, sizeof xo, 0x44), "EL batch = src_len = INT_MAX: %s (want %s)",
                attn_status_str(st), attn_status_str(ATTN_ERR_OVERFLOW));
    }
}

/* Every speculative step shape the fused decoding kernels take: Sq 1..8 query tokens (causal
   among themselves, as speculative decoding checks draft tokens) x groups 1 and 4, so a KV head
   runs R = 1..8 rows in one tile and up to four tiles of 8 (32 rows; on AVX2 tiles of 4 up to 16
   rows and one wide staged tile above), f32, f16 and bf16, head dims 48 (the AVX2 4-row tiles'
   P.V in whole passes of 3 column vectors), 64 and 128 (a pass of 2 or 1 after them), a cache
   long enough for several chunks and a short tail; against the double reference. Then groups 4
   over a paged cache (pages cut the chunks) with every thread count bitwise equal. */
static void test_decode_rows(void) {
    static const int gs[] = { 1, 4 }, Ds[] = { 48, 64, 128 };
    static const attn_dtype dts[] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng r = t_rng_seed(633);
    int sq, gi, di, ti;
    for (ti = 0; ti < 3; ++ti)
        for (di = 0; di < 3; ++di)
            for (gi = 0; gi < 2; ++gi)
                for (sq = 1; sq <= 8; ++sq) {
                    dcfg cf;
                    attn_desc d;
                    int lens[1];
                    memset(&cf, 0, sizeof cf);
                    memset(&d, 0, sizeof d);
                    cf.B = 1; cf.Hkv = 2; cf.g = gs[gi]; cf.D = cf.Dv = Ds[di]; cf.Sq = sq;
                    cf.dt = dts[ti];
                    lens[0] = T_QUICK ? 77 : 157;
                    d.causal = 1;
                    decode_case("decode rows", &cf, d, lens, &r, 0);
                }
    for (ti = 0; ti < 2; ++ti)
        for (sq = 2; sq <= 8; sq += 2) {        /* 8, 16, 24, 32 rows per KV head */
            dcfg cf;
            attn_desc d;
            int lens[1];
            memset(&cf, 0, sizeof cf);
            memset(&d, 0, sizeof d);
            cf.B = 1; cf.Hkv = 2; cf.g = 4; cf.D = cf.Dv = 64; cf.Sq = sq; cf.ps = 16;
            cf.dt = ti ? ATTN_F16 : ATTN_F32;
            lens[0] = T_QUICK ? 77 : 157;
            d.causal = 1;
            decode_case("decode rows, paged", &cf, d, lens, &r, 1);
        }
}

void test_generation(void) {
    test_gen_errors();
    test_rope_utility();
    test_rope_in_kernel();
    test_decode_sweep();
    test_decode_rows();
    test_decode_split();
    test_streaming();
    test_evict();
    test_el_attention();
}
