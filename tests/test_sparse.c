/* tests/test_sparse.c - sparse attention kinds (ATTN_LONGFORMER, ATTN_BIGBIRD) against naive
   double-precision references that build each pattern from ZOO.md ("Sparse" and "Exact
   attention and its masks") on their own, then apply a masked softmax in double.

   TOLERANCES (q/k/v are rounded to their storage dtype before the reference reads them, so the
   reference computes on exactly the stored values):
     out:  |out - ref| <= TOL * max(1, max |ref| of the row) + rel(out dtype) * |ref|
           TOL = 2e-5 (fp32 kernels); bf16 q/k/v on the exact core's bf16 tiles (Longformer,
           where the CPU has them) round P to bf16: TOL = 2^-8 (the documented 2^-9 max|v|
           with margin, |v| <= 5 here)
     lse:  |lse - ref| <= 2e-5 * max(1, |ref|)
     rows that see no key: out exactly 0, lse exactly -inf
   Properties: one dilation for every head == ATTN_SOFTMAX with that dilation (bitwise);
   per-head pieces == one ATTN_SOFTMAX call per head (bitwise); BigBird with enough random
   blocks or the HF fallback == full attention; a seeded BigBird == the same table passed
   explicitly (bitwise); duplicate/window/global entries in the table change nothing (set
   union, bitwise); thread counts 1, 2, 3 and a caller workspace give bitwise equal results;
   the drawn table equals an independent implementation of the documented formula; every
   sparse status with outputs untouched. */
#include "test.h"
#include "fixture.h"

extern size_t t_attn_mallocs;

#define TOL_OUT 2e-5
#define TOL_LSE 2e-5

/* ---- tensors with their own dense buffers ------------------------------------------------ */
typedef t_owned sp_tensor;

static sp_tensor sp_make(attn_dtype dt, int B, int S, int H, int D, int bhsd) {
    sp_tensor x = t_owned_dense(dt, B, S, H, D);
    if (bhsd) x.t = attn_tensor_bhsd(x.buf, dt, B, H, S, D);
    return x;
}
static size_t sp_bytes(const sp_tensor *x) { return x->n * t_dt_size(x->t.dtype); }

/* ---- the reference: masked softmax in double over vis(b, h, i, j) ------------------------ */
typedef int (*sp_vis_fn)(const void *ctx, int b, int h, int i, int j);

typedef struct {
    double scale, softcap;
    const float *alibi;          /* [Hq] or NULL: - slope |p - j| */
    const float *bias;           /* dense [B][Hq][Sq][Sk] or NULL */
} sp_opts;

/* out [B][Sq][Hq][Dv], lse [B][Hq][Sq] */
static void sp_ref(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const sp_opts *o,
                   sp_vis_fn vis, const void *ctx, double *out, double *lse) {
    const int B = q->batch, Sq = q->seq, Sk = k->seq, Hq = q->heads, g = Hq / k->heads, D = q->dim, Dv = v->dim;
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
    int b, h, i, j, d;
    for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h)
            for (i = 0; i < Sq; ++i) {
                double m = -INFINITY, l = 0.0;
                double *orow = out + (((size_t)b * Sq + i) * Hq + h) * Dv;
                for (j = 0; j < Sk; ++j) {
                    double x = 0.0;
                    s[j] = -INFINITY;
                    if (!vis(ctx, b, h, i, j)) continue;
                    for (d = 0; d < D; ++d) x += t_load(q, b, i, h, d) * t_load(k, b, j, h / g, d);
                    x *= o->scale;
                    if (o->softcap > 0) x = o->softcap * tanh(x / o->softcap);
                    if (o->bias) x += o->bias[(((size_t)b * Hq + h) * Sq + i) * Sk + j];
                    if (o->alibi) x -= o->alibi[h] * fabs((double)(i + Sk - Sq) - j);
                    s[j] = x;
                    if (x > m) m = x;
                }
                for (d = 0; d < Dv; ++d) orow[d] = 0.0;
                if (m == -INFINITY) { lse[((size_t)b * Hq + h) * Sq + i] = -INFINITY; continue; }
                for (j = 0; j < Sk; ++j) {
                    double p;
                    if (s[j] == -INFINITY) continue;
                    p = exp(s[j] - m);
                    l += p;
                    for (d = 0; d < Dv; ++d) orow[d] += p * t_load(v, b, j, h / g, d);
                }
                for (d = 0; d < Dv; ++d) orow[d] /= l;
                lse[((size_t)b * Hq + h) * Sq + i] = m + log(l);
            }
    free(s);
}

/* Compares out/lse with the reference; returns 1 if within tolerance. */
static int sp_compare(const char *what, const attn_tensor *out, const float *lse, const double *ro, const double *rl,
                      double tol) {
    const int B = out->batch, S = out->seq, H = out->heads, Dv = out->dim;
    const double rel = t_dt_rel(out->dtype);
    double worst = 0.0;
    int b, s, h, d, ok = 1;
    for (b = 0; b < B; ++b)
        for (s = 0; s < S; ++s)
            for (h = 0; h < H; ++h) {
                const double *r = ro + (((size_t)b * S + s) * H + h) * Dv;
                double mx = 1.0;
                for (d = 0; d < Dv; ++d) if (fabs(r[d]) > mx) mx = fabs(r[d]);
                for (d = 0; d < Dv; ++d) {
                    const double got = t_load(out, b, s, h, d), e = fabs(got - r[d]);
                    const double bound = tol * mx + rel * fabs(r[d]);
                    if (!(e <= bound)) { ok = 0; if (e / bound > worst || e != e) worst = e != e ? INFINITY : e / bound; }
                }
                if (lse) {
                    const double L = rl[((size_t)b * H + h) * S + s], got = lse[((size_t)b * H + h) * S + s];
                    if (L == -INFINITY) { if (got != -INFINITY) ok = 0; }
                    else if (!(fabs(got - L) <= TOL_LSE * (fabs(L) > 1 ? fabs(L) : 1))) ok = 0;
                }
            }
    T_CHECK(ok, "%s: out/lse differ from the reference (worst error %.3g x the bound)", what, worst);
    return ok;
}

/* ---- Longformer reference: ZOO's keys p + D_h (k - w), k = 0..2w, plus global tokens ------- */
typedef struct {
    int Sq, Sk, wl, wr, G, causal;
    const int *dil;              /* [Hq] */
    const int *seqlens_k;        /* [B] or NULL */
} lf_ref;

static int lf_vis(const void *ctx, int b, int h, int i, int j) {
    const lf_ref *L = (const lf_ref *)ctx;
    const int Lk = L->seqlens_k ? L->seqlens_k[b] : L->Sk, p = i + L->Sk - L->Sq;
    const int D = L->dil[h] > 1 ? L->dil[h] : 1;
    int t;
    if (j >= Lk || (L->seqlens_k && i >= Lk)) return 0;  /* padding keys and rows */
    if (L->causal && j > p) return 0;                    /* autoregressive form */
    if (j < L->G || p < L->G) return 1;                  /* global tokens, both ways */
    /* the dilated window, listed (attn_desc: a window side of 0 is unbounded) */
    for (t = -(L->wl ? L->wl : L->Sk + L->Sq); t <= (L->wr ? L->wr : L->Sk + L->Sq); ++t)
        if (p + D * t == j) return 1;
    return 0;
}

static attn_dtype sp_dtypes[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };

/* One random Longformer case against the reference, plus the bitwise properties. */
static void lf_case(t_rng *r, int B, int Sq, int Sk, int Hq, int Hkv, int D, int Dv, attn_dtype kvt, attn_dtype qt,
                    int wl, int wr, int G, int causal, int mode, int use_lse, int extras) {
    sp_tensor q = sp_make(qt, B, Sq, Hq, D, mode == 1), k = sp_make(kvt, B, Sk, Hkv, D, 0),
              v = sp_make(kvt, B, Sk, Hkv, Dv, mode == 1), o = sp_make(qt, B, Sq, Hq, Dv, 0),
              o2 = sp_make(qt, B, Sq, Hq, Dv, 0);
    int *dil = (int *)t_xmalloc(sizeof(int) * (size_t)Hq), *slk = NULL, h, b;
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq), *lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * Sq);
    float *alibi = NULL, *bias = NULL;
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq);
    attn_desc d;
    sp_opts opt;
    lf_ref L;
    char what[160];
    attn_status s;
    double tol = TOL_OUT;
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    for (h = 0; h < Hq; ++h)   /* mode 2: one dilation; mode 3: up to beyond the sequence */
        dil[h] = mode == 2 ? 3 : mode == 3 ? t_irange(r, 0, 2 * Sq) : t_irange(r, 0, 4);
    memset(&d, 0, sizeof d);
    memset(&opt, 0, sizeof opt);
    d.kind = ATTN_LONGFORMER;
    d.window_left = wl; d.window_right = wr; d.global_tokens = G; d.causal = causal;
    d.longformer.dilations = dil;
    d.n_threads = 1 + (int)(t_next(r) % 3);
    opt.scale = 1.0 / sqrt((double)D);
    if (extras & 1) {                                    /* ALiBi, per head */
        alibi = (float *)t_xmalloc(sizeof(float) * (size_t)Hq);
        for (h = 0; h < Hq; ++h) alibi[h] = (float)(0.05 * (h + 1));
        d.alibi_slopes = alibi; opt.alibi = alibi;
    }
    if (extras & 2) {                                    /* a per-head bias */
        size_t n = (size_t)B * Hq * Sq * Sk, i;
        bias = (float *)t_xmalloc(sizeof(float) * n);
        for (i = 0; i < n; ++i) bias[i] = (float)(0.5 * t_normal(r));
        d.bias = attn_bias_dense(bias, B, Hq, Sq, Sk);
        opt.bias = bias;
    }
    if ((extras & 4) && Sq == Sk) {                      /* padding (self-attention lengths) */
        slk = (int *)t_xmalloc(sizeof(int) * (size_t)B);
        for (b = 0; b < B; ++b) slk[b] = t_irange(r, 1, Sk);
        d.seqlens_k = slk; d.seqlens_q = slk;
    }
    if (extras & 8) { d.softcap = 5.0f; opt.softcap = 5.0; }
    L.Sq = Sq; L.Sk = Sk; L.wl = wl; L.wr = wr; L.G = G; L.causal = causal; L.dil = dil; L.seqlens_k = slk;
    sp_ref(&q.t, &k.t, &v.t, &opt, lf_vis, &L, ro, rl);
    s = attn_forward(&d, q.t, k.t, v.t, o.t, use_lse ? lse : NULL);
    sprintf(what, "longformer B%d Sq%d Sk%d H%d/%d D%d/%d %s/%s w%d/%d G%d c%d m%d x%d", B, Sq, Sk, Hq, Hkv, D, Dv,
            t_dt_name(qt), t_dt_name(kvt), wl, wr, G, causal, mode, extras);
    if (!T_CHECK(s == ATTN_OK, "%s: status %d", what, (int)s)) goto done;
    if (kvt == ATTN_BF16 && qt == ATTN_BF16) tol = 1.0 / 256.0;
    sp_compare(what, &o.t, use_lse ? lse : NULL, ro, rl, tol);
    {   /* thread count and caller workspace: bitwise */
        size_t bytes = 0, m0;
        void *ws;
        attn_desc d2 = d;
        d2.n_threads = d.n_threads % 3 + 1;
        T_CHECK(attn_workspace_size(&d2, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        d2.workspace = ws; d2.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_forward(&d2, q.t, k.t, v.t, o2.t, use_lse ? lse2 : NULL);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "%s: caller workspace must make the call allocation-free", what);
        T_CHECK(memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0 && (!use_lse || memcmp(lse, lse2, sizeof(float) * (size_t)B * Hq * Sq) == 0),
                "%s: threads %d vs %d differ", what, d.n_threads, d2.n_threads);
        d2.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&d2, q.t, k.t, v.t, o2.t, NULL) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(ws);
    }
    if (mode == 2) {   /* one dilation for all heads == ATTN_SOFTMAX with it (bitwise unless
                          the dilated window ran as D strided problems: then within tolerance) */
        attn_desc e = d;
        const int split = Sq == Sk && !G && !(extras & 7);
        e.kind = ATTN_SOFTMAX; e.dilation = 3; e.longformer.dilations = NULL;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, use_lse ? lse2 : NULL);
        if (split) {
            size_t i, nn = o.n;
            double *a = (double *)t_xmalloc(sizeof(double) * nn), *bb = (double *)t_xmalloc(sizeof(double) * nn);
            for (i = 0; i < nn; ++i) { a[i] = t_load_at(o.buf, qt, (ptrdiff_t)i); bb[i] = t_load_at(o2.buf, qt, (ptrdiff_t)i); }
            T_CHECK(s == ATTN_OK && t_max_norm_err(bb, a, nn) <= 1e-5 + 2 * t_dt_rel(qt) * (qt == ATTN_BF16 || kvt == ATTN_BF16 ? 8 : 1),
                    "%s: equal dilations must equal ATTN_SOFTMAX", what);
            free(a); free(bb);
        } else
            T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0 &&
                    (!use_lse || memcmp(lse, lse2, sizeof(float) * (size_t)B * Hq * Sq) == 0),
                    "%s: equal dilations must equal ATTN_SOFTMAX bitwise", what);
        e = d; e.longformer.dilations = NULL; e.dilation = 3;   /* NULL array: desc.dilation */
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, NULL);
        T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0, "%s: dilations NULL uses desc.dilation", what);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(dil); free(slk); free(lse); free(lse2); free(alibi); free(bias); free(ro); free(rl);
}

static void test_longformer(void) {
    t_rng r = t_rng_seed(17);
    int it, n = T_QUICK ? 8 : 40;
    /* fixed cases: GQA pieces (whole groups, inside groups), batch > 1 with lse staging */
    lf_case(&r, 2, 96, 96, 4, 2, 16, 16, ATTN_F32, ATTN_F32, 4, 4, 0, 0, 0, 1, 0);
    lf_case(&r, 2, 96, 96, 6, 2, 24, 8, ATTN_F32, ATTN_F32, 5, 3, 2, 0, 1, 1, 3);
    lf_case(&r, 1, 130, 130, 4, 4, 16, 16, ATTN_F32, ATTN_F32, 8, 8, 1, 1, 0, 1, 4);
    lf_case(&r, 3, 70, 70, 4, 1, 16, 16, ATTN_F32, ATTN_F32, 6, 6, 0, 0, 2, 1, 0);
    lf_case(&r, 2, 50, 80, 4, 2, 16, 16, ATTN_F32, ATTN_F32, 4, 2, 3, 1, 0, 1, 8);
    /* dilated heads as D strided problems: causal, softcap, GQA, batch 2 with lse, D > seq */
    lf_case(&r, 2, 100, 100, 4, 2, 16, 16, ATTN_F32, ATTN_F32, 5, 5, 0, 1, 0, 1, 8);
    lf_case(&r, 2, 77, 77, 6, 3, 16, 16, ATTN_F32, ATTN_F32, 3, 6, 0, 0, 0, 1, 0);
    lf_case(&r, 1, 20, 20, 4, 2, 8, 8, ATTN_F16, ATTN_F32, 2, 2, 0, 1, 3, 1, 0);
    lf_case(&r, 2, 33, 33, 3, 1, 8, 8, ATTN_F32, ATTN_F32, 1, 0, 0, 0, 3, 1, 0);
    for (it = 0; it < n; ++it) {
        const int Hkv = t_irange(&r, 1, 3), Hq = Hkv * t_irange(&r, 1, 3), Sk = t_irange(&r, 1, 150);
        const int Sq = t_chance(&r, 0.7) ? Sk : t_irange(&r, 1, 150);
        int a[12];   /* drawn in order (argument evaluation order is unspecified) */
        a[0] = t_irange(&r, 1, 2); a[1] = t_irange(&r, 1, 40); a[2] = t_irange(&r, 1, 40); a[3] = t_irange(&r, 0, 2);
        a[4] = t_irange(&r, 0, 2); a[5] = t_irange(&r, 1, 12); a[6] = t_irange(&r, 0, 12);
        a[7] = t_chance(&r, 0.3) ? t_irange(&r, 1, 4) : 0; a[8] = t_chance(&r, 0.3); a[9] = t_irange(&r, 0, 3);
        a[10] = t_chance(&r, 0.8); a[11] = t_irange(&r, 0, 15);
        lf_case(&r, a[0], Sq, Sk, Hq, Hkv, a[1], a[2], sp_dtypes[a[3]], sp_dtypes[a[4]], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
    }
}

/* ---- Longformer backward: the gradients of the masked softmax in double ----------------- */
static double lf_bwd_err(const double *ref, const attn_tensor *t) {
    double mx = 1, err = 0;
    int b, s, h, d;
    size_t n = 0;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d, ++n) if (fabs(ref[n]) > mx) mx = fabs(ref[n]);
    n = 0;
    for (b = 0; b < t->batch; ++b)
        for (s = 0; s < t->seq; ++s)
            for (h = 0; h < t->heads; ++h)
                for (d = 0; d < t->dim; ++d, ++n) {
                    const double e = fabs(t_load(t, b, s, h, d) - ref[n]);
                    if (!(e <= err)) err = e != e ? INFINITY : e;
                }
    return err / mx;
}

static void lf_bwd_case(t_rng *r, int B, int S, int Hq, int Hkv, int D, int Dv, int w, int G, int causal, int mode, int alibi_on) {
    sp_tensor q = sp_make(ATTN_F32, B, S, Hq, D, 0), k = sp_make(ATTN_F32, B, S, Hkv, D, 0), v = sp_make(ATTN_F32, B, S, Hkv, Dv, 0),
              o = sp_make(ATTN_F32, B, S, Hq, Dv, 0), dout = sp_make(ATTN_F32, B, S, Hq, Dv, 0),
              dq = sp_make(ATTN_F32, B, S, Hq, D, 0), dk = sp_make(ATTN_F32, B, S, Hkv, D, 0), dv = sp_make(ATTN_F32, B, S, Hkv, Dv, 0),
              dq2 = sp_make(ATTN_F32, B, S, Hq, D, 0), dk2 = sp_make(ATTN_F32, B, S, Hkv, D, 0), dv2 = sp_make(ATTN_F32, B, S, Hkv, Dv, 0);
    const int g = Hq / Hkv;
    int *dil = (int *)t_xmalloc(sizeof(int) * (size_t)Hq), h, b, i, j, e;
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S), alibi[16];
    double *rdq = (double *)t_xmalloc(sizeof(double) * q.n), *rdk = (double *)t_xmalloc(sizeof(double) * k.n);
    double *rdv = (double *)t_xmalloc(sizeof(double) * v.n), *P = (double *)t_xmalloc(sizeof(double) * (size_t)S);
    const double scale = 1.0 / sqrt((double)D);
    attn_desc d;
    lf_ref L;
    attn_status st;
    char what[128];
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0); t_fill_normal(&dout.t, r, 1.0);
    for (h = 0; h < Hq; ++h) dil[h] = h % g == 0 ? (mode == 1 ? 2 : t_irange(r, 0, 5)) : dil[h - 1];   /* one per KV group */
    for (h = 0; h < Hq; ++h) alibi[h] = (float)(0.1 * (h + 1));
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LONGFORMER; d.window_left = d.window_right = w; d.global_tokens = G; d.causal = causal;
    d.longformer.dilations = dil; d.n_threads = 1 + (int)(t_next(r) % 3);
    if (alibi_on) d.alibi_slopes = alibi;
    sprintf(what, "longformer backward B%d S%d H%d/%d D%d/%d w%d G%d c%d m%d a%d", B, S, Hq, Hkv, D, Dv, w, G, causal, mode, alibi_on);
    L.Sq = S; L.Sk = S; L.wl = w; L.wr = w; L.G = G; L.causal = causal; L.dil = dil; L.seqlens_k = NULL;
    memset(rdq, 0, sizeof(double) * q.n); memset(rdk, 0, sizeof(double) * k.n); memset(rdv, 0, sizeof(double) * v.n);
    for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h)
            for (i = 0; i < S; ++i) {
                double mx = -INFINITY, l = 0, Di = 0, o_i[64];
                for (j = 0; j < S; ++j) {
                    double x = 0;
                    P[j] = -INFINITY;
                    if (!lf_vis(&L, b, h, i, j)) continue;
                    for (e = 0; e < D; ++e) x += t_load(&q.t, b, i, h, e) * t_load(&k.t, b, j, h / g, e);
                    x = x * scale - (alibi_on ? alibi[h] * fabs((double)i - j) : 0.0);
                    P[j] = x; if (x > mx) mx = x;
                }
                if (mx == -INFINITY) continue;
                for (j = 0; j < S; ++j) if (P[j] > -INFINITY) l += exp(P[j] - mx);
                for (e = 0; e < Dv; ++e) o_i[e] = 0;
                for (j = 0; j < S; ++j) {
                    if (P[j] == -INFINITY) { P[j] = 0; continue; }
                    P[j] = exp(P[j] - mx) / l;
                    for (e = 0; e < Dv; ++e) o_i[e] += P[j] * t_load(&v.t, b, j, h / g, e);
                }
                for (e = 0; e < Dv; ++e) Di += t_load(&dout.t, b, i, h, e) * o_i[e];
                for (j = 0; j < S; ++j) {
                    double dp = 0, ds;
                    if (P[j] == 0) continue;
                    for (e = 0; e < Dv; ++e) {
                        dp += t_load(&dout.t, b, i, h, e) * t_load(&v.t, b, j, h / g, e);
                        rdv[(((size_t)b * S + j) * Hkv + h / g) * Dv + e] += P[j] * t_load(&dout.t, b, i, h, e);
                    }
                    ds = P[j] * (dp - Di) * scale;
                    for (e = 0; e < D; ++e) {
                        rdq[(((size_t)b * S + i) * Hq + h) * D + e] += ds * t_load(&k.t, b, j, h / g, e);
                        rdk[(((size_t)b * S + j) * Hkv + h / g) * D + e] += ds * t_load(&q.t, b, i, h, e);
                    }
                }
            }
    st = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    if (st == ATTN_OK) st = attn_backward(&d, q.t, k.t, v.t, o.t, dout.t, lse, dq.t, dk.t, dv.t);
    if (!T_CHECK(st == ATTN_OK, "%s: status %d", what, (int)st)) goto done;
    T_CHECK(lf_bwd_err(rdq, &dq.t) <= 1e-4 && lf_bwd_err(rdk, &dk.t) <= 1e-4 && lf_bwd_err(rdv, &dv.t) <= 1e-4,
            "%s: gradients differ from the reference (dq %.2g, dk %.2g, dv %.2g)", what, lf_bwd_err(rdq, &dq.t),
            lf_bwd_err(rdk, &dk.t), lf_bwd_err(rdv, &dv.t));
    {   /* other thread count with a caller workspace: bitwise, allocation-free */
        attn_desc e2 = d;
        size_t bytes = 0, m0;
        void *ws;
        e2.n_threads = d.n_threads % 3 + 1;
        T_CHECK(attn_backward_workspace_size(&e2, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e2.workspace = ws; e2.workspace_size = bytes;
        m0 = t_attn_mallocs;
        st = attn_backward(&e2, q.t, k.t, v.t, o.t, dout.t, lse, dq2.t, dk2.t, dv2.t);
        T_CHECK(st == ATTN_OK && t_attn_mallocs == m0 && memcmp(dq.buf, dq2.buf, sp_bytes(&dq)) == 0 &&
                memcmp(dk.buf, dk2.buf, sp_bytes(&dk)) == 0 && memcmp(dv.buf, dv2.buf, sp_bytes(&dv)) == 0,
                "%s: threads %d vs %d / caller workspace", what, d.n_threads, e2.n_threads);
        free(ws);
    }
    if (g > 1) {   /* two dilations inside one KV group: a clear status, nothing written */
        dil[1] = dil[0] + 1;
        t_sentinel(dq2.buf, sp_bytes(&dq2), 0x21u); t_sentinel(dk2.buf, sp_bytes(&dk2), 0x22u); t_sentinel(dv2.buf, sp_bytes(&dv2), 0x23u);
        st = attn_backward(&d, q.t, k.t, v.t, o.t, dout.t, lse, dq2.t, dk2.t, dv2.t);
        if (T_CHECK(st == ATTN_ERR_LONGFORMER_BACKWARD && t_sentinel_ok(dq2.buf, sp_bytes(&dq2), 0x21u) &&
                    t_sentinel_ok(dk2.buf, sp_bytes(&dk2), 0x22u) && t_sentinel_ok(dv2.buf, sp_bytes(&dv2), 0x23u),
                    "%s: split group must give ATTN_ERR_LONGFORMER_BACKWARD, got %d", what, (int)st))
            t_status_provoked[ATTN_ERR_LONGFORMER_BACKWARD] = 1;
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&dout); t_owned_free(&dq); t_owned_free(&dk); t_owned_free(&dv);
    t_owned_free(&dq2); t_owned_free(&dk2); t_owned_free(&dv2);
    free(dil); free(lse); free(rdq); free(rdk); free(rdv); free(P);
}

static void test_longformer_backward(void) {
    t_rng r = t_rng_seed(41);
    lf_bwd_case(&r, 2, 60, 4, 2, 16, 12, 4, 0, 0, 0, 0);     /* per-group dilations, D strided problems */
    lf_bwd_case(&r, 1, 70, 4, 4, 8, 8, 5, 0, 1, 0, 0);       /* causal */
    lf_bwd_case(&r, 2, 50, 4, 2, 8, 8, 3, 2, 0, 0, 1);       /* global tokens and ALiBi: masked per element */
    lf_bwd_case(&r, 1, 40, 6, 2, 8, 16, 3, 0, 1, 1, 0);      /* one dilation: one call */
    lf_bwd_case(&r, 2, 33, 2, 1, 8, 8, 20, 0, 0, 0, 0);
}

/* ---- BigBird reference: the block pattern of ZOO.md from the table ----------------------- */
typedef struct { int b, nb, r, full; const int *table; } bb_ref;

static int bb_vis(const void *ctx, int bt, int h, int i, int j) {
    const bb_ref *R = (const bb_ref *)ctx;
    const int qi = i / R->b, kj = j / R->b, nb = R->nb;
    int t;
    (void)bt;
    if (R->full) return 1;
    if (qi == 0 || qi == nb - 1) return 1;               /* global rows */
    if (kj == 0 || kj == nb - 1) return 1;               /* global columns */
    if (kj >= qi - 1 && kj <= qi + 1) return 1;          /* window of 3 blocks */
    for (t = 0; t < R->r; ++t)                           /* random blocks (set union) */
        if (R->table[((size_t)h * (nb - 2) + (qi - 1)) * R->r + t] == kj) return 1;
    return 0;
}

/* The documented draw, written again here: splitmix64's finaliser, partial Fisher-Yates. */
static uint64_t bb_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static void bb_table_ref(unsigned long long seed, int H, int nb, int r, int *table) {
    int *a = (int *)t_xmalloc(sizeof(int) * (size_t)(nb > 0 ? nb : 1));
    int h, i, t, c, M;
    for (h = 0; h < H; ++h)
        for (i = 1; i <= nb - 2; ++i) {
            int *row = table + ((size_t)h * (nb - 2) + (i - 1)) * r;
            M = 0;
            for (c = 1; c <= nb - 2; ++c) if (c != i - 1 && c != i && c != i + 1) a[M++] = c;
            for (t = 0; t < r; ++t) {
                if (t >= M) { row[t] = 0; continue; }
                {
                    const uint64_t key = ((uint64_t)h * (uint64_t)(nb - 2) + (uint64_t)(i - 1)) * (uint64_t)r + (uint64_t)t;
                    const uint64_t z = bb_mix(seed + 0x9E3779B97F4A7C15ull * (key + 1));
                    const int j = t + (int)(((z >> 32) * (uint64_t)(M - t)) >> 32), x = a[j];
                    a[j] = a[t]; a[t] = x; row[t] = x;
                }
            }
        }
    free(a);
}

static void bb_case(t_rng *r, int B, int S, int Hq, int Hkv, int D, int Dv, attn_dtype kvt, attn_dtype qt, int blk,
                    int rnd, int seeded, int use_lse, int softcap) {
    sp_tensor q = sp_make(qt, B, S, Hq, D, 0), k = sp_make(kvt, B, S, Hkv, D, t_chance(r, 0.3)),
              v = sp_make(kvt, B, S, Hkv, Dv, 0), o = sp_make(qt, B, S, Hq, Dv, 0), o2 = sp_make(qt, B, S, Hq, Dv, 0);
    const int b = blk ? blk : 64, nb = S / b, rows = nb > 2 ? nb - 2 : 0;
    const size_t tn = (size_t)Hq * rows * (size_t)(rnd ? rnd : 1) + 1;
    int *table = (int *)t_xmalloc(sizeof(int) * tn), *t2 = (int *)t_xmalloc(sizeof(int) * tn);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S), *lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)B * Hq * S);
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * S * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * S);
    attn_desc d;
    sp_opts opt;
    bb_ref R;
    char what[160];
    attn_status s;
    size_t i;
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    memset(&d, 0, sizeof d); memset(&opt, 0, sizeof opt);
    d.kind = ATTN_BIGBIRD;
    d.bigbird.block = blk; d.bigbird.random_blocks = rnd; d.bigbird.no_random = rnd == 0;
    d.bigbird.seed = t_next(r);
    d.n_threads = 1 + (int)(t_next(r) % 3);
    if (softcap) { d.softcap = 4.0f; opt.softcap = 4.0; }
    opt.scale = 1.0 / sqrt((double)D);
    if (seeded) bb_table_ref(d.bigbird.seed, Hq, nb, rnd, table);
    else for (i = 0; i < tn; ++i) table[i] = t_irange(r, 0, nb - 1);
    if (!seeded) d.bigbird.random_table = table;
    R.b = b; R.nb = nb; R.r = rnd; R.full = 0; R.table = table;
    sp_ref(&q.t, &k.t, &v.t, &opt, bb_vis, &R, ro, rl);
    s = attn_forward(&d, q.t, k.t, v.t, o.t, use_lse ? lse : NULL);
    sprintf(what, "bigbird B%d S%d H%d/%d D%d/%d %s/%s b%d r%d seeded%d", B, S, Hq, Hkv, D, Dv, t_dt_name(qt),
            t_dt_name(kvt), b, rnd, seeded);
    if (!T_CHECK(s == ATTN_OK, "%s: status %d", what, (int)s)) goto done;
    sp_compare(what, &o.t, use_lse ? lse : NULL, ro, rl, TOL_OUT);
    if (seeded && rnd > 0) {   /* the library's table == ours; seeded == explicit, bitwise */
        attn_desc e = d;
        for (i = 0; i < tn; ++i) t2[i] = -7;
        T_CHECK(attn_bigbird_random_table(&d, Hq, S, t2) == ATTN_OK &&
                memcmp(t2, table, sizeof(int) * (size_t)Hq * rows * rnd) == 0, "%s: drawn table differs from the formula", what);
        e.bigbird.random_table = table; e.n_threads = d.n_threads % 3 + 1;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, use_lse ? lse2 : NULL);
        T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0 &&
                (!use_lse || memcmp(lse, lse2, sizeof(float) * (size_t)B * Hq * S) == 0),
                "%s: seeded and explicit table (threads %d vs %d) differ", what, d.n_threads, e.n_threads);
    }
    if (!seeded && rnd > 0 && rows > 0) {   /* set union: a table whose slots repeat window/global blocks */
        attn_desc e = d;
        int h, ii, t;
        for (h = 0; h < Hq; ++h)
            for (ii = 0; ii < rows; ++ii)
                for (t = 0; t < rnd; ++t) {
                    const size_t at = ((size_t)h * rows + ii) * rnd + t;
                    const int qi = ii + 1, pick = t_irange(r, 0, 3);
                    t2[at] = t == 0 ? table[at] : pick == 0 ? 0 : pick == 1 ? nb - 1 : pick == 2 ? qi : table[at - 1];
                }
        /* the reference set of t2 is a subset of table's only where table holds them: rebuild */
        R.table = t2;
        sp_ref(&q.t, &k.t, &v.t, &opt, bb_vis, &R, ro, rl);
        e.bigbird.random_table = t2;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, use_lse ? lse2 : NULL);
        T_CHECK(s == ATTN_OK, "%s: duplicate table status", what);
        if (s == ATTN_OK) sp_compare("bigbird duplicates", &o2.t, use_lse ? lse2 : NULL, ro, rl, TOL_OUT);
    }
    {   /* workspace query, caller workspace allocation-free, bitwise */
        size_t bytes = 0, m0;
        attn_desc e = d;
        void *ws;
        e.n_threads = d.n_threads % 3 + 1;
        T_CHECK(attn_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e.workspace = ws; e.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, use_lse ? lse2 : NULL);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0 && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0,
                "%s: caller workspace / threads %d vs %d", what, d.n_threads, e.n_threads);
        e.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&e, q.t, k.t, v.t, o2.t, NULL) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(ws);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(table); free(t2); free(lse); free(lse2); free(ro); free(rl);
}

/* BigBird that must equal full attention: r covering every block, and HF's fallback. */
static void bb_full(t_rng *r, int S, int blk, int rnd, int fallback) {
    sp_tensor q = sp_make(ATTN_F32, 2, S, 4, 16, 0), k = sp_make(ATTN_F32, 2, S, 2, 16, 0),
              v = sp_make(ATTN_F32, 2, S, 2, 16, 0), o = sp_make(ATTN_F32, 2, S, 4, 16, 0),
              o2 = sp_make(ATTN_F32, 2, S, 4, 16, 0);
    float lse[2 * 4 * 512], lse2[2 * 4 * 512];
    attn_desc d, e;
    attn_status s1, s2;
    int i, ok = 1;
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD; d.bigbird.block = blk; d.bigbird.random_blocks = rnd; d.bigbird.hf_fallback = fallback;
    d.bigbird.seed = 99;
    memset(&e, 0, sizeof e);
    s1 = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    s2 = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
    for (i = 0; i < (int)o.n; ++i) if (!(fabs(((float *)o.buf)[i] - ((float *)o2.buf)[i]) <= 1e-5)) ok = 0;
    for (i = 0; i < 2 * 4 * S; ++i) if (!(fabs(lse[i] - lse2[i]) <= 1e-5 * (1 + fabs(lse2[i])))) ok = 0;
    T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && ok, "bigbird S%d b%d r%d fallback%d must equal full attention", S, blk, rnd, fallback);
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
}

static void test_bigbird(void) {
    t_rng r = t_rng_seed(11);
    int it, n = T_QUICK ? 6 : 30;
    bb_case(&r, 1, 512, 2, 2, 32, 32, ATTN_F32, ATTN_F32, 0, 0, 1, 1, 0);      /* defaults: b 64, r 3 */
    bb_case(&r, 2, 640, 4, 2, 16, 24, ATTN_F32, ATTN_F32, 64, 2, 1, 1, 0);
    bb_case(&r, 1, 160, 4, 1, 16, 16, ATTN_F32, ATTN_F32, 16, 3, 0, 1, 1);      /* explicit table, MQA */
    bb_case(&r, 2, 300, 2, 2, 8, 8, ATTN_F16, ATTN_F32, 100, 1, 1, 1, 0);       /* block > ATTN__BQ */
    bb_case(&r, 1, 96, 2, 1, 16, 16, ATTN_BF16, ATTN_BF16, 8, 2, 0, 1, 0);
    bb_case(&r, 1, 40, 3, 3, 5, 7, ATTN_F32, ATTN_F16, 20, 1, 1, 1, 0);         /* nb = 2: all global */
    for (it = 0; it < n; ++it) {
        static const int blks[6] = { 4, 8, 16, 24, 64, 70 };
        const int blk = t_pick(&r, blks, 6), nb = t_irange(&r, 1, 12);
        const int Hkv = t_irange(&r, 1, 2), Hq = Hkv * t_irange(&r, 1, 3);
        int a[9];
        a[0] = t_irange(&r, 1, 2); a[1] = t_irange(&r, 1, 40); a[2] = t_irange(&r, 1, 40); a[3] = t_irange(&r, 0, 2);
        a[4] = t_irange(&r, 0, 2); a[5] = t_irange(&r, 0, 4); a[6] = t_chance(&r, 0.5); a[7] = t_chance(&r, 0.8);
        a[8] = t_chance(&r, 0.2);
        bb_case(&r, a[0], blk * nb, Hq, Hkv, a[1], a[2], sp_dtypes[a[3]], sp_dtypes[a[4]], blk, a[5], a[6], a[7], a[8]);
    }
    bb_full(&r, 256, 16, 16, 0);        /* r >= every candidate: full */
    bb_full(&r, 512, 64, 3, 1);         /* n = 512 <= (5 + 6) 64: HF falls back to full */
    bb_full(&r, 128, 32, 0, 0);         /* nb = 4: window + global cover everything */
}

/* ---- Reformer LSH reference: ZOO's hashing, sort, chunks, masks and round merge ------------ */
static double lsh_normal_ref(unsigned long long seed, uint64_t idx) {
    const uint64_t z = bb_mix(seed + 0x9E3779B97F4A7C15ull * (idx + 1));
    const double u1 = ((double)(z >> 32) + 0.5) / 4294967296.0, u2 = ((double)(z & 0xFFFFFFFFu) + 0.5) / 4294967296.0;
    return (double)(float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925286766559 * u2));
}

typedef struct { int bucket, pos; } lsh_ent;
static int lsh_cmp(const void *a, const void *b) {
    const lsh_ent *x = (const lsh_ent *)a, *y = (const lsh_ent *)b;
    if (x->bucket != y->bucket) return x->bucket < y->bucket ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Returns 0 if some bucket argmax is a near tie (the caller draws new inputs). */
static int lsh_ref(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const float *R, int c, int nb, int nh,
                   int causal, double scale, double *out, double *lse) {
    const int B = q->batch, n = q->seq, H = q->heads, D = q->dim, Dv = v->dim, half = nb / 2, N = nh * n, nch = N / c;
    lsh_ent *ax = (lsh_ent *)t_xmalloc(sizeof(lsh_ent) * (size_t)N);
    double *o = (double *)t_xmalloc(sizeof(double) * (size_t)N * Dv), *lr = (double *)t_xmalloc(sizeof(double) * (size_t)N);
    double *s = (double *)t_xmalloc(sizeof(double) * 2 * (size_t)c), *kn = (double *)t_xmalloc(sizeof(double) * (size_t)n * D);
    int b, h, r, i, j, e, t, u, ok = 1;
    for (b = 0; b < B && ok; ++b)
        for (h = 0; h < H && ok; ++h) {
            for (j = 0; j < n; ++j) {                    /* keys: RMS-normalised */
                double ms = 0;
                for (e = 0; e < D; ++e) ms += t_load(k, b, j, h, e) * t_load(k, b, j, h, e);
                ms = 1.0 / sqrt(ms / D + 1e-6);
                for (e = 0; e < D; ++e) kn[(size_t)j * D + e] = t_load(k, b, j, h, e) * ms;
            }
            for (r = 0; r < nh; ++r) {
                for (i = 0; i < n; ++i) {
                    double best = -INFINITY, second = -INFINITY;
                    int arg = -1, cc;
                    for (cc = 0; cc < nb; ++cc) {
                        double y = 0;
                        for (e = 0; e < D; ++e)
                            y += t_load(k, b, i, h, e) * R[(((size_t)h * nh + r) * D + e) * half + cc % half];
                        if (cc >= half) y = -y;
                        if (y > best) { second = best; best = y; arg = cc; }
                        else if (y > second) second = y;
                    }
                    if (best - second < 1e-3) ok = 0;
                    ax[(size_t)r * n + i].bucket = arg; ax[(size_t)r * n + i].pos = i;
                }
                qsort(ax + (size_t)r * n, (size_t)n, sizeof(lsh_ent), lsh_cmp);
            }
            for (t = 0; t < N; ++t) {                    /* every sorted entry as a query */
                const int ch = t / c, prev = (ch + nch - 1) % nch, p = ax[t].pos;
                double mx = -INFINITY, l = 0;
                for (u = 0; u < 2 * c; ++u) {
                    const int jj = ax[(u < c ? prev : ch) * c + u % c].pos;
                    double x = 0;
                    for (e = 0; e < D; ++e) x += t_load(q, b, p, h, e) * kn[(size_t)jj * D + e];
                    x *= scale;
                    if (causal && jj > p) x = -1e9;
                    if (jj == p) x = -1e5;
                    s[u] = x;
                    if (x > mx) mx = x;
                }
                for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] = 0;
                for (u = 0; u < 2 * c; ++u) {
                    const int jj = ax[(u < c ? prev : ch) * c + u % c].pos;
                    const double w = exp(s[u] - mx);
                    l += w;
                    for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] += w * t_load(v, b, jj, h, e);
                }
                for (e = 0; e < Dv; ++e) o[(size_t)t * Dv + e] /= l;
                lr[t] = mx + log(l);
            }
            for (i = 0; i < n; ++i) {                    /* rounds merged by their logsumexp */
                double M = -INFINITY, L = 0, *orow = out + (((size_t)b * n + i) * H + h) * Dv;
                for (t = 0; t < N; ++t) if (ax[t].pos == i && lr[t] > M) M = lr[t];
                for (t = 0; t < N; ++t) if (ax[t].pos == i) L += exp(lr[t] - M);
                L = M + log(L);
                for (e = 0; e < Dv; ++e) orow[e] = 0;
                for (t = 0; t < N; ++t)
                    if (ax[t].pos == i)
                        for (e = 0; e < Dv; ++e) orow[e] += o[(size_t)t * Dv + e] * exp(lr[t] - L);
                lse[((size_t)b * H + h) * n + i] = L;
            }
        }
    free(ax); free(o); free(lr); free(s); free(kn);
    return ok;
}

/* the default n_buckets: 2^floor(log2(2 * chunks)), HF's _set_num_buckets */
static int lsh_default_buckets(int chunks) {
    int nb = 2;
    while (2 * nb <= 2 * chunks) nb *= 2;
    return nb;
}

static void lsh_case(t_rng *r, int B, int n, int H, int D, int Dv, attn_dtype kvt, attn_dtype qt, int c, int nb, int nh,
                     int causal, int seeded, int shared) {
    sp_tensor q = sp_make(qt, B, n, H, D, 0), k = sp_make(kvt, B, n, H, D, 0), v = sp_make(kvt, B, n, H, Dv, 0),
              o = sp_make(qt, B, n, H, Dv, 0), o2 = sp_make(qt, B, n, H, Dv, 0);
    const int nbd = nb ? nb : lsh_default_buckets(n / (c ? c : 64));
    const int nhd = nh ? nh : 1;
    const size_t nrot = (size_t)H * nhd * D * (nbd / 2);
    float *R = (float *)t_xmalloc(sizeof(float) * nrot), *R2 = (float *)t_xmalloc(sizeof(float) * nrot);
    float *lse = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * n), *lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * n);
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * n * H * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * H * n);
    attn_desc d;
    attn_status s;
    char what[160];
    size_t i;
    int tries = 0;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.causal = causal;
    d.lsh.bucket_size = c; d.lsh.n_buckets = nb; d.lsh.n_hashes = nh; d.lsh.seed = t_next(r);
    d.n_threads = 1 + (int)(t_next(r) % 3);
    for (i = 0; i < nrot; ++i) R[i] = seeded ? (float)lsh_normal_ref(d.lsh.seed, (uint64_t)i) : (float)t_normal(r);
    if (!seeded) d.lsh.rotations = R;
    sprintf(what, "lsh B%d n%d H%d D%d/%d %s/%s c%d nb%d nh%d causal%d seeded%d shared%d", B, n, H, D, Dv, t_dt_name(qt),
            t_dt_name(kvt), c, nbd, nhd, causal, seeded, shared);
    do {   /* inputs whose bucket argmaxes are not near ties (fp32 vs double could differ there) */
        t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
        if (shared && qt == kvt) memcpy(q.buf, k.buf, sp_bytes(&k));
        else t_fill_normal(&q.t, r, 1.0);
    } while (!lsh_ref(&q.t, &k.t, &v.t, R, c ? c : 64, nbd, nhd, causal, 1.0 / sqrt((double)D), ro, rl) && ++tries < 20);
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    s = attn_forward(&d, q.t, k.t, v.t, o.t, lse);
    if (!T_CHECK(s == ATTN_OK, "%s: status %d", what, (int)s)) goto done;
    sp_compare(what, &o.t, lse, ro, rl, TOL_OUT);
    if (seeded) {   /* the library's rotations == the formula; seeded == explicit, bitwise */
        attn_desc e = d;
        T_CHECK(attn_lsh_rotations(&d, H, n, D, R2) == ATTN_OK && memcmp(R, R2, sizeof(float) * nrot) == 0,
                "%s: drawn rotations differ from the formula", what);
        e.lsh.rotations = R2;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0 && memcmp(lse, lse2, sizeof(float) * (size_t)B * H * n) == 0,
                "%s: seeded and explicit rotations differ", what);
    }
    {   /* thread count and caller workspace: bitwise, allocation-free */
        size_t bytes = 0, m0;
        attn_desc e = d;
        void *ws;
        e.n_threads = d.n_threads % 3 + 1;
        T_CHECK(attn_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e.workspace = ws; e.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, lse2);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0 && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0 &&
                memcmp(lse, lse2, sizeof(float) * (size_t)B * H * n) == 0, "%s: caller workspace / threads %d vs %d", what,
                d.n_threads, e.n_threads);
        e.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&e, q.t, k.t, v.t, o2.t, NULL) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(ws);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(R); free(R2); free(lse); free(lse2); free(ro); free(rl);
}

/* One chunk holding everything: full attention without the diagonal (each key seen twice, as
   chunk 0's previous chunk is itself): lse is exact attention's plus log 2. */
static void lsh_one_chunk(t_rng *r, int n, attn_dtype dt) {
    sp_tensor q = sp_make(dt, 2, n, 2, 16, 0), v = sp_make(dt, 2, n, 2, 16, 0), o = sp_make(dt, 2, n, 2, 16, 0),
              o2 = sp_make(dt, 2, n, 2, 16, 0);
    float *bias = (float *)t_xmalloc(sizeof(float) * (size_t)n * n), lse[2 * 2 * 64], lse2[2 * 2 * 64];
    attn_desc d, e;
    int i, ok = 1;
    attn_status s1, s2;
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    memset(&d, 0, sizeof d); memset(&e, 0, sizeof e);
    d.kind = ATTN_LSH; d.lsh.bucket_size = n; d.lsh.seed = 5;
    for (i = 0; i < n * n; ++i) bias[i] = i % (n + 1) == 0 ? -INFINITY : 0.0f;
    e.bias = attn_bias_dense(bias, 1, 1, n, n);
    s1 = attn_forward(&d, q.t, q.t, v.t, o.t, lse);
    /* exact attention on the same normalised keys: k_j / sqrt(mean(k_j^2) + 1e-6), scale 1/sqrt(D) */
    {
        sp_tensor kn = sp_make(ATTN_F32, 2, n, 2, 16, 0);
        int b, j, h, x;
        for (b = 0; b < 2; ++b)
            for (j = 0; j < n; ++j)
                for (h = 0; h < 2; ++h) {
                    double ms = 0;
                    for (x = 0; x < 16; ++x) ms += t_load(&q.t, b, j, h, x) * t_load(&q.t, b, j, h, x);
                    for (x = 0; x < 16; ++x) t_store(&kn.t, b, j, h, x, t_load(&q.t, b, j, h, x) / sqrt(ms / 16 + 1e-6));
                }
        s2 = attn_forward(&e, q.t, kn.t, v.t, o2.t, lse2);
        t_owned_free(&kn);
    }
    for (i = 0; i < (int)o.n; ++i)
        if (!(fabs(t_load_at(o.buf, dt, i) - t_load_at(o2.buf, dt, i)) <= 2e-5 + 2 * t_dt_rel(dt))) ok = 0;
    for (i = 0; i < 2 * 2 * n; ++i) if (!(fabs(lse[i] - (lse2[i] + log(2.0))) <= 2e-5 * (1 + fabs(lse2[i])))) ok = 0;
    T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && ok, "lsh one chunk (n %d, %s) must equal full attention without the diagonal",
            n, t_dt_name(dt));
    t_owned_free(&q); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2); free(bias);
}

static void test_lsh(void) {
    t_rng r = t_rng_seed(23);
    int it, n = T_QUICK ? 6 : 30;
    lsh_case(&r, 1, 256, 2, 32, 32, ATTN_F32, ATTN_F32, 0, 0, 0, 0, 1, 1);     /* defaults: c 64, nb 8, 1 round */
    lsh_case(&r, 2, 96, 2, 16, 16, ATTN_F32, ATTN_F32, 8, 4, 3, 1, 1, 1);      /* causal, 3 rounds */
    lsh_case(&r, 1, 64, 3, 8, 12, ATTN_F16, ATTN_F16, 16, 6, 2, 0, 0, 1);
    lsh_case(&r, 2, 48, 1, 16, 8, ATTN_BF16, ATTN_F32, 4, 2, 4, 1, 1, 0);      /* separate q */
    for (it = 0; it < n; ++it) {
        static const int cs[4] = { 4, 8, 16, 32 };
        const int c = t_pick(&r, cs, 4), nch = t_irange(&r, 1, 6);
        int a[11];
        a[0] = t_irange(&r, 1, 2); a[1] = t_irange(&r, 1, 3); a[2] = t_irange(&r, 2, 24); a[3] = t_irange(&r, 1, 24);
        a[4] = t_irange(&r, 0, 2); a[5] = t_irange(&r, 0, 2); a[6] = t_chance(&r, 0.5) ? 0 : 2 * t_irange(&r, 1, 5);
        a[7] = t_irange(&r, 0, 4); a[8] = t_chance(&r, 0.5); a[9] = t_chance(&r, 0.5); a[10] = t_chance(&r, 0.7);
        lsh_case(&r, a[0], c * nch, a[1], a[2], a[3], sp_dtypes[a[4]], sp_dtypes[a[5]], c, a[6], a[7], a[8], a[9], a[10]);
    }
    lsh_one_chunk(&r, 32, ATTN_F32);
    lsh_one_chunk(&r, 64, ATTN_F32);
    lsh_case(&r, 1, 192, 2, 16, 24, ATTN_F32, ATTN_F32, 96, 2, 2, 1, 1, 1);   /* c > 64: queries in two lane blocks */
}

/* ---- Routing Transformer reference: ZOO's routing, top-w windows, means ------------------- */
typedef struct { double s; int pos; } rt_ent;
static int rt_cmp_score(const void *a, const void *b) {
    const rt_ent *x = (const rt_ent *)a, *y = (const rt_ent *)b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
static int rt_cmp_pos(const void *a, const void *b) {
    const rt_ent *x = (const rt_ent *)a, *y = (const rt_ent *)b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* Returns 0 when a window boundary is a near tie (the caller draws new inputs). normk: attend with
   the unit keys; ceps: added to each token's window count; sep: queries routed by their own unit
   rows, no self logit (routing.normalize_keys, .count_eps, .separate_qk). */
static int rt_ref(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const float *cen, int nc, int w,
                  int causal, double scale, int normk, double ceps, int sep, double *out) {
    const int B = q->batch, n = q->seq, H = q->heads, D = q->dim, Dv = v->dim;
    rt_ent *ent = (rt_ent *)t_xmalloc(sizeof(rt_ent) * (size_t)n), *qent = (rt_ent *)t_xmalloc(sizeof(rt_ent) * (size_t)n);
    double *xn = (double *)t_xmalloc(sizeof(double) * (size_t)n * D), *mu = (double *)t_xmalloc(sizeof(double) * (size_t)D);
    double *acc = (double *)t_xmalloc(sizeof(double) * (size_t)n * Dv), *s = (double *)t_xmalloc(sizeof(double) * (size_t)w);
    int *cnt = (int *)t_xmalloc(sizeof(int) * (size_t)n);
    int b, h, c, i, j, e, a, ok = 1;
    for (b = 0; b < B; ++b)
        for (h = 0; h < H; ++h) {
            for (i = 0; i < n; ++i) {
                double nn = 0;
                for (e = 0; e < D; ++e) nn += t_load(k, b, i, h, e) * t_load(k, b, i, h, e);
                for (e = 0; e < D; ++e) xn[(size_t)i * D + e] = nn > 0 ? t_load(k, b, i, h, e) / sqrt(nn) : 0;
                cnt[i] = 0;
                for (e = 0; e < Dv; ++e) acc[(size_t)i * Dv + e] = 0;
            }
            for (c = 0; c < nc; ++c) {
                double nn = 0;
                const float *m = cen + ((size_t)h * nc + c) * D;
                for (e = 0; e < D; ++e) nn += (double)m[e] * m[e];
                for (e = 0; e < D; ++e) mu[e] = nn > 0 ? m[e] / sqrt(nn) : 0;
                for (i = 0; i < n; ++i) {
                    ent[i].s = 0; ent[i].pos = i;
                    for (e = 0; e < D; ++e) ent[i].s += xn[(size_t)i * D + e] * mu[e];
                }
                qsort(ent, (size_t)n, sizeof *ent, rt_cmp_score);
                if (w < n && ent[w - 1].s - ent[w].s < 1e-4) ok = 0;
                qsort(ent, (size_t)w, sizeof *ent, rt_cmp_pos);
                for (i = 0; i < n; ++i) {   /* the query window: the key window, or the unit queries' own */
                    double nq = 0;
                    qent[i] = ent[i];
                    if (!sep) continue;
                    for (e = 0; e < D; ++e) nq += t_load(q, b, i, h, e) * t_load(q, b, i, h, e);
                    qent[i].s = 0; qent[i].pos = i;
                    for (e = 0; e < D; ++e) qent[i].s += (nq > 0 ? t_load(q, b, i, h, e) / sqrt(nq) : 0) * mu[e];
                }
                if (sep) {
                    qsort(qent, (size_t)n, sizeof *qent, rt_cmp_score);
                    if (w < n && qent[w - 1].s - qent[w].s < 1e-4) ok = 0;
                    qsort(qent, (size_t)w, sizeof *qent, rt_cmp_pos);
                }
                for (a = 0; a < w; ++a) {
                    const int p = qent[a].pos;
                    double mx = -INFINITY, l = 0;
                    for (j = 0; j < w; ++j) {
                        const int kj = ent[j].pos;
                        double x = 0;
                        if (causal && kj > p) { s[j] = -INFINITY; continue; }
                        if (kj == p && !sep) x = -5e4;
                        else {
                            for (e = 0; e < D; ++e)
                                x += t_load(q, b, p, h, e) * (normk ? xn[(size_t)kj * D + e] : t_load(k, b, kj, h, e));
                            x *= scale;
                        }
                        s[j] = x;
                        if (x > mx) mx = x;
                    }
                    for (j = 0; j < w; ++j) if (s[j] > -INFINITY) l += exp(s[j] - mx);
                    for (j = 0; j < w; ++j)
                        if (s[j] > -INFINITY)
                            for (e = 0; e < Dv; ++e) acc[(size_t)p * Dv + e] += exp(s[j] - mx) / l * t_load(v, b, ent[j].pos, h, e);
                    cnt[p]++;
                }
            }
            for (i = 0; i < n; ++i)
                for (e = 0; e < Dv; ++e)
                    out[(((size_t)b * n + i) * H + h) * Dv + e] = cnt[i] ? acc[(size_t)i * Dv + e] / (cnt[i] + ceps) : 0;
        }
    free(ent); free(qent); free(xn); free(mu); free(acc); free(s); free(cnt);
    return ok;
}

static void rt_case(t_rng *r, int B, int n, int H, int D, int Dv, attn_dtype kvt, attn_dtype qt, int nc, int win, int causal,
                    int shared) {
    sp_tensor q = sp_make(qt, B, n, H, D, 0), k = sp_make(kvt, B, n, H, D, t_chance(r, 0.3)), v = sp_make(kvt, B, n, H, Dv, 0),
              o = sp_make(qt, B, n, H, Dv, 0), o2 = sp_make(qt, B, n, H, Dv, 0);
    const int w = (win ? win : 64) < n ? (win ? win : 64) : n;
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)H * nc * D);
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * n * H * Dv);
    attn_desc d;
    attn_status s;
    char what[160];
    size_t i;
    int tries = 0;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_ROUTING; d.causal = causal;
    d.routing.centroids = cen; d.routing.n_clusters = nc; d.routing.window = win;
    d.n_threads = 1 + (int)(t_next(r) % 3);
    sprintf(what, "routing B%d n%d H%d D%d/%d %s/%s nc%d w%d causal%d shared%d", B, n, H, D, Dv, t_dt_name(qt), t_dt_name(kvt),
            nc, w, causal, shared);
    do {
        for (i = 0; i < (size_t)H * nc * D; ++i) cen[i] = (float)t_normal(r);
        t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
        if (shared && qt == kvt && k.t.stride_seq == q.t.stride_seq) memcpy(q.buf, k.buf, sp_bytes(&k));   /* same layout */
        else t_fill_normal(&q.t, r, 1.0);
    } while (!rt_ref(&q.t, &k.t, &v.t, cen, nc, w, causal, 1.0 / sqrt((double)D), 0, 0.0, 0, ro) && ++tries < 20);
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    s = attn_forward(&d, q.t, k.t, v.t, o.t, NULL);
    if (!T_CHECK(s == ATTN_OK, "%s: status %d", what, (int)s)) goto done;
    sp_compare(what, &o.t, NULL, ro, NULL, TOL_OUT);
    {
        size_t bytes = 0, m0;
        attn_desc e = d;
        void *ws;
        e.n_threads = d.n_threads % 3 + 1;
        T_CHECK(attn_workspace_size(&e, q.t, k.t, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e.workspace = ws; e.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_forward(&e, q.t, k.t, v.t, o2.t, NULL);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0 && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0,
                "%s: caller workspace / threads %d vs %d", what, d.n_threads, e.n_threads);
        e.workspace_size = bytes - 1;
        T_CHECK(attn_forward(&e, q.t, k.t, v.t, o2.t, NULL) == ATTN_ERR_WORKSPACE, "%s: short workspace", what);
        free(ws);
    }
    if (shared && qt == kvt && k.t.stride_seq == q.t.stride_seq) {   /* k passed as q too: the queries read from the keys' rows */
        s = attn_forward(&d, k.t, k.t, v.t, o2.t, NULL);
        T_CHECK(s == ATTN_OK && memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0, "%s: k passed as q must equal its copy", what);
    }
done:
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2);
    free(cen); free(ro);
}

/* One cluster whose window holds every token: full attention without the diagonal. */
static void rt_one_cluster(t_rng *r, int n) {
    sp_tensor q = sp_make(ATTN_F32, 2, n, 2, 16, 0), v = sp_make(ATTN_F32, 2, n, 2, 16, 0), o = sp_make(ATTN_F32, 2, n, 2, 16, 0),
              o2 = sp_make(ATTN_F32, 2, n, 2, 16, 0);
    float *bias = (float *)t_xmalloc(sizeof(float) * (size_t)n * n), cen[2 * 16];
    attn_desc d, e;
    attn_status s1, s2;
    int i, ok = 1;
    t_fill_normal(&q.t, r, 1.0); t_fill_normal(&v.t, r, 1.0);
    for (i = 0; i < 32; ++i) cen[i] = (float)t_normal(r);
    memset(&d, 0, sizeof d); memset(&e, 0, sizeof e);
    d.kind = ATTN_ROUTING; d.routing.centroids = cen; d.routing.n_clusters = 1; d.routing.window = n + 5;
    for (i = 0; i < n * n; ++i) bias[i] = i % (n + 1) == 0 ? -INFINITY : 0.0f;
    e.bias = attn_bias_dense(bias, 1, 1, n, n);
    s1 = attn_forward(&d, q.t, q.t, v.t, o.t, NULL);
    s2 = attn_forward(&e, q.t, q.t, v.t, o2.t, NULL);
    for (i = 0; i < (int)o.n; ++i) if (!(fabs(((float *)o.buf)[i] - ((float *)o2.buf)[i]) <= 2e-5)) ok = 0;
    T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && ok, "routing: one cluster holding all %d tokens must equal full attention without the diagonal", n);
    t_owned_free(&q); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2); free(bias);
}

/* Self-attention of q (shared QK) routed by `cen` (nc clusters, window w), one head: the first
   row whose "has an output" (any nonzero value) disagrees with in[row], or -1; *s gets the status. */
static int rt_window_first_bad(sp_tensor *q, sp_tensor *v, sp_tensor *o, float *cen, int nc, int w, const int *in, attn_status *s) {
    const float *of = (const float *)o->buf;
    const int n = q->t.seq, D = q->t.dim;
    attn_desc d;
    int i, j;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_ROUTING; d.routing.centroids = cen; d.routing.n_clusters = nc; d.routing.window = w;
    *s = attn_forward(&d, q->t, q->t, v->t, o->t, NULL);
    for (i = 0; i < n; ++i) {
        int nonzero = 0;
        for (j = 0; j < D; ++j) nonzero |= of[(size_t)i * D + j] != 0.0f;
        if (nonzero != in[i]) return i;
    }
    return -1;
}

/* The tie rule "ties: the lower position first" with every key row identical: each cluster's
   window is positions [0, w), whatever the ISA (the scores of identical rows must be computed
   identically, not with the row's place in a SIMD tile), so exactly rows [0, w) get an output. */
static void rt_ties(t_rng *r, int n, int D, int nc, int w) {
    sp_tensor q = sp_make(ATTN_F32, 1, n, 1, D, 1), v = sp_make(ATTN_F32, 1, n, 1, D, 1), o = sp_make(ATTN_F32, 1, n, 1, D, 1);
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)nc * D), *row = (float *)t_xmalloc(sizeof(float) * (size_t)D);
    float *qf = (float *)q.buf;
    int *in = (int *)t_xmalloc(sizeof(int) * (size_t)n);
    attn_status s;
    int i, j, first_bad;
    for (j = 0; j < D; ++j) row[j] = (float)t_normal(r);
    for (i = 0; i < n; ++i) { memcpy(qf + (size_t)i * D, row, sizeof(float) * (size_t)D); in[i] = i < w; }
    for (i = 0; i < nc * D; ++i) cen[i] = (float)t_normal(r);
    t_fill_normal(&v.t, r, 1.0);
    first_bad = rt_window_first_bad(&q, &v, &o, cen, nc, w, in, &s);
    T_CHECK(s == ATTN_OK && first_bad < 0, "routing ties (%s, n %d, D %d, %d clusters, w %d): the window must be positions "
            "[0, %d), row %d disagrees", attn_kernels(), n, D, nc, w, w, first_bad);
    t_owned_free(&q); t_owned_free(&v); t_owned_free(&o); free(cen); free(row); free(in);
}

/* Ties between groups: every key row is one of three rows (drawn at random per token), so each
   cluster ranks three groups of tied tokens. Reference, in double: per cluster the tokens sorted
   by their group's score (descending), ties by position, the first w taken; a row gets an output
   exactly when some cluster's window holds it. Exercises the routing's filter (a token equal to
   a full heap's worst score must not enter) across tile rows and token blocks. */
static void rt_ties_groups(t_rng *r, int n, int D, int nc, int w) {
    sp_tensor q = sp_make(ATTN_F32, 1, n, 1, D, 1), v = sp_make(ATTN_F32, 1, n, 1, D, 1), o = sp_make(ATTN_F32, 1, n, 1, D, 1);
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)nc * D), rows[3][64];
    float *qf = (float *)q.buf;
    int *grp = (int *)t_xmalloc(sizeof(int) * (size_t)n), *in = (int *)t_xmalloc(sizeof(int) * (size_t)n);
    rt_ent *ent = (rt_ent *)t_xmalloc(sizeof(rt_ent) * (size_t)n);
    attn_status s;
    int i, j, c, g, tries = 0, first_bad, ok;
    do {   /* redraw until no two groups' scores are near a tie for any cluster */
        double sc[3];
        ok = 1;
        for (g = 0; g < 3; ++g) for (j = 0; j < D; ++j) rows[g][j] = (float)t_normal(r);
        for (i = 0; i < nc * D; ++i) cen[i] = (float)t_normal(r);
        for (c = 0; c < nc; ++c) {
            for (g = 0; g < 3; ++g) {
                double nr = 0, nm = 0, dt = 0;
                for (j = 0; j < D; ++j) {
                    nr += (double)rows[g][j] * rows[g][j]; nm += (double)cen[c * D + j] * cen[c * D + j];
                    dt += (double)rows[g][j] * cen[c * D + j];
                }
                sc[g] = dt / sqrt(nr * nm);
            }
            if (fabs(sc[0] - sc[1]) < 1e-4 || fabs(sc[0] - sc[2]) < 1e-4 || fabs(sc[1] - sc[2]) < 1e-4) ok = 0;
        }
    } while (!ok && ++tries < 20);
    for (i = 0; i < n; ++i) {
        grp[i] = (int)(t_next(r) % 3);
        memcpy(qf + (size_t)i * D, rows[grp[i]], sizeof(float) * (size_t)D);
        in[i] = 0;
    }
    for (c = 0; c < nc; ++c) {
        for (i = 0; i < n; ++i) {
            double nr = 0, nm = 0, dt = 0;
            for (j = 0; j < D; ++j) {
                nr += (double)qf[(size_t)i * D + j] * qf[(size_t)i * D + j]; nm += (double)cen[c * D + j] * cen[c * D + j];
                dt += (double)qf[(size_t)i * D + j] * cen[c * D + j];
            }
            ent[i].s = dt / sqrt(nr * nm); ent[i].pos = i;
        }
        qsort(ent, (size_t)n, sizeof *ent, rt_cmp_score);
        for (i = 0; i < w && i < n; ++i) in[ent[i].pos] = 1;
    }
    t_fill_normal(&v.t, r, 1.0);
    first_bad = rt_window_first_bad(&q, &v, &o, cen, nc, w, in, &s);
    T_CHECK(tries < 20 && s == ATTN_OK && first_bad < 0, "routing group ties (%s, n %d, D %d, %d clusters, w %d): row %d's "
            "window membership disagrees with the reference", attn_kernels(), n, D, nc, w, first_bad);
    t_owned_free(&q); t_owned_free(&v); t_owned_free(&o); free(cen); free(grp); free(in); free(ent);
}

#define RT_MIN(a, b) ((a) < (b) ? (a) : (b))
/* The batch entry b of x as a batch-1 tensor of its first L rows. */
static attn_tensor rt_seq(const attn_tensor *x, int b, int L) {
    attn_tensor t = *x;
    t.data = (char *)x->data + (size_t)t_offset(x, b, 0, 0, 0) * t_dt_size(x->dtype);
    t.batch = 1; t.seq = L;
    return t;
}

/* Padding (seqlens_k, seqlens_q or both) and packing (cu_seqlens): each sequence's rows equal the
   double reference run on that sequence alone at its length (padded tokens in no window), padded
   rows are exactly 0, and the rows are bitwise those of the sequence run alone, of the same batch
   with NaN in the padding, and of the sequences packed by cu_seqlens. */
static void rt_padded_case(t_rng *r, int B, int n, int H, int D, int Dv, attn_dtype dt, int nc, int win, int causal,
                           int normk, float ceps, int which, int sep) {
    sp_tensor q = sp_make(dt, B, n, H, D, 0), v = sp_make(dt, B, n, H, Dv, 0), o = sp_make(ATTN_F32, B, n, H, Dv, 0),
              o2 = sp_make(ATTN_F32, B, n, H, Dv, 0), pq = sp_make(dt, 1, B * n + 3, H, D, 0),
              pv = sp_make(dt, 1, B * n + 3, H, Dv, 0), po = sp_make(ATTN_F32, 1, B * n + 3, H, Dv, 0),
              k = sp_make(dt, B, n, H, D, 0), pk_ = sp_make(dt, 1, B * n + 3, H, D, 0);
    const attn_tensor *kt = sep ? &k.t : &q.t, *pkt = sep ? &pk_.t : &pq.t;   /* shared QK: k is q */
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)H * nc * D);
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)n * H * Dv), worst = 0;
    int *lens = (int *)t_xmalloc(sizeof(int) * (size_t)B), cu[9];
    attn_desc d;
    attn_status s;
    char what[200];
    int b, i, h, e, tries = 0, ok = 1, zero = 1, same = 1, nanok = 1, packed = 1;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_ROUTING; d.causal = causal; d.n_threads = t_irange(r, 1, 3);
    d.routing.centroids = cen; d.routing.n_clusters = nc; d.routing.window = win;
    d.routing.normalize_keys = normk; d.routing.count_eps = ceps; d.routing.separate_qk = sep;
    if (which != 1) d.seqlens_k = lens;
    if (which != 0) d.seqlens_q = lens;
    sprintf(what, "routing padded B%d n%d H%d D%d/%d %s nc%d w%d causal%d normk%d eps%g sep%d seqlens%s", B, n, H, D, Dv,
            t_dt_name(dt), nc, win, causal, normk, (double)ceps, sep, which == 0 ? "_k" : which == 1 ? "_q" : "_q/_k");
    for (b = 0; b < B; ++b) lens[b] = b == 0 ? n : t_irange(r, 0, n);
    for (;;) {   /* inputs without near ties at any sequence's window boundary */
        int good = 1;
        for (i = 0; i < H * nc * D; ++i) cen[i] = (float)t_normal(r);
        t_fill_normal(&q.t, r, 1.0); t_fill_normal(&v.t, r, 1.0); t_fill_normal(&k.t, r, 1.0);
        for (b = 0; b < B && good; ++b) {
            const attn_tensor qs = rt_seq(&q.t, b, lens[b]), vs = rt_seq(&v.t, b, lens[b]), ks = rt_seq(kt, b, lens[b]);
            const int w = RT_MIN(win ? win : 64, lens[b]);
            if (lens[b]) good = rt_ref(&qs, &ks, &vs, cen, nc, w, causal, 1.0 / sqrt((double)D), normk, ceps, sep, ro);
        }
        if (good || ++tries == 20) break;
    }
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    s = attn_forward(&d, q.t, *kt, v.t, o.t, NULL);
    if (!T_CHECK(s == ATTN_OK, "%s: status %s", what, attn_status_str(s))) goto done;
    for (b = 0; b < B; ++b) {
        const attn_tensor qs = rt_seq(&q.t, b, lens[b]), vs = rt_seq(&v.t, b, lens[b]), os = rt_seq(&o2.t, b, lens[b]);
        const attn_tensor ks = rt_seq(kt, b, lens[b]);
        attn_desc a = d;
        if (!lens[b]) goto rows;
        rt_ref(&qs, &ks, &vs, cen, nc, RT_MIN(win ? win : 64, lens[b]), causal, 1.0 / sqrt((double)D), normk, ceps, sep, ro);
        a.seqlens_q = a.seqlens_k = NULL;    /* the sequence alone */
        ok &= attn_forward(&a, qs, ks, vs, os, NULL) == ATTN_OK;
    rows:
        for (i = 0; i < n; ++i)
            for (h = 0; h < H; ++h)
                for (e = 0; e < Dv; ++e) {
                    const double got = t_load(&o.t, b, i, h, e);
                    if (i >= lens[b]) { zero &= got == 0.0; continue; }
                    {
                        const double want = ro[((size_t)i * H + h) * Dv + e];
                        const double err = fabs(got - want) / (1.0 + fabs(want));
                        if (!(err <= worst)) worst = err != err ? INFINITY : err;
                        same &= got == t_load(&o2.t, b, i, h, e);
                    }
                }
    }
    {   /* NaN in every padded q/k/v row: the valid rows do not move */
        for (b = 0; b < B; ++b)
            for (i = lens[b]; i < n; ++i)
                for (h = 0; h < H; ++h) {
                    for (e = 0; e < D; ++e) { t_store(&q.t, b, i, h, e, NAN); t_store(&k.t, b, i, h, e, NAN); }
                    for (e = 0; e < Dv; ++e) t_store(&v.t, b, i, h, e, NAN);
                }
        ok &= attn_forward(&d, q.t, *kt, v.t, o2.t, NULL) == ATTN_OK;
        nanok = memcmp(o.buf, o2.buf, sp_bytes(&o)) == 0;
    }
    if (B <= 8) {   /* packed: the valid rows back to back, 3 rows past the last segment */
        attn_desc pk = d;
        cu[0] = 0;
        for (b = 0; b < B; ++b) {
            cu[b + 1] = cu[b] + lens[b];
            for (i = 0; i < lens[b]; ++i)
                for (h = 0; h < H; ++h) {
                    for (e = 0; e < D; ++e) {
                        t_store(&pq.t, 0, cu[b] + i, h, e, t_load(&q.t, b, i, h, e));
                        t_store(&pk_.t, 0, cu[b] + i, h, e, t_load(&k.t, b, i, h, e));
                    }
                    for (e = 0; e < Dv; ++e) t_store(&pv.t, 0, cu[b] + i, h, e, t_load(&v.t, b, i, h, e));
                }
        }
        pq.t.seq = pv.t.seq = po.t.seq = pk_.t.seq = cu[B] + 3;
        t_sentinel(po.buf, sp_bytes(&po), 0xA5u);
        pk.seqlens_q = pk.seqlens_k = NULL; pk.cu_seqlens_q = pk.cu_seqlens_k = cu; pk.varlen_batch = B;
        ok &= attn_forward(&pk, pq.t, *pkt, pv.t, po.t, NULL) == ATTN_OK;
        for (b = 0; b < B; ++b)
            for (i = 0; i < lens[b]; ++i)
                for (h = 0; h < H; ++h)
                    for (e = 0; e < Dv; ++e) packed &= t_load(&po.t, 0, cu[b] + i, h, e) == t_load(&o.t, b, i, h, e);
        for (i = cu[B]; i < cu[B] + 3; ++i)
            for (h = 0; h < H; ++h)
                for (e = 0; e < Dv; ++e) packed &= t_load(&po.t, 0, i, h, e) == 0.0;
    }
    T_CHECK(ok && worst <= TOL_OUT, "%s: status %d, max error %.3g against each sequence alone", what, ok, worst);
    T_CHECK(zero, "%s: padded rows must be 0", what);
    T_CHECK(same, "%s: rows must equal (bitwise) the sequence run alone at its length", what);
    T_CHECK(nanok, "%s: NaN in the padding changed the valid rows", what);
    T_CHECK(packed, "%s: cu_seqlens (packed) must equal the padded batch bitwise, rows past the last segment 0", what);
done:
    t_owned_free(&q); t_owned_free(&v); t_owned_free(&o); t_owned_free(&o2); t_owned_free(&pq); t_owned_free(&pv); t_owned_free(&po); t_owned_free(&k); t_owned_free(&pk_);
    free(cen); free(ro); free(lens);
}

/* attn_routing_update against the ZOO rule in double. */
static void rt_update_case(t_rng *r, int B, int n, int H, int D, int nc, attn_dtype dt, float decay, const int *lens) {
    sp_tensor x = sp_make(dt, B, n, H, D, 0);
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)H * nc * D), *c0 = (float *)t_xmalloc(sizeof(float) * (size_t)H * nc * D);
    double *sum = (double *)t_xmalloc(sizeof(double) * (size_t)nc * D), worst = 0;
    int *cnt = (int *)t_xmalloc(sizeof(int) * (size_t)nc), h, b, i, c, e;
    attn_desc d;
    const double dec = decay == 0.0f ? (double)0.999f : (double)decay;
    t_fill_normal(&x.t, r, 1.0);
    for (i = 0; i < H * nc * D; ++i) c0[i] = cen[i] = (float)t_normal(r);
    if (nc > 1) for (e = 0; e < D; ++e) c0[D + e] = cen[D + e] = cen[e];   /* cluster 1 = cluster 0 of head 0: the
                                                                           first maximum never picks it, it stays */
    memset(&d, 0, sizeof d);
    d.routing.n_clusters = nc;
    d.seqlens_k = lens;     /* padding: the ATTN_ROUTING forward's desc; padded tokens skipped */
    T_CHECK(attn_routing_update(&d, x.t, decay, cen) == ATTN_OK, "routing update: status");
    for (h = 0; h < H; ++h) {
        memset(sum, 0, sizeof(double) * (size_t)nc * D);
        memset(cnt, 0, sizeof(int) * (size_t)nc);
        for (b = 0; b < B; ++b)
            for (i = 0; i < (lens ? lens[b] : n); ++i) {
                double nx = 0, best = -INFINITY;
                int arg = 0;
                for (e = 0; e < D; ++e) nx += t_load(&x.t, b, i, h, e) * t_load(&x.t, b, i, h, e);
                nx = sqrt(nx);
                for (c = 0; c < nc; ++c) {
                    const float *m = c0 + ((size_t)h * nc + c) * D;
                    double nm = 0, dt = 0;
                    for (e = 0; e < D; ++e) nm += (double)m[e] * m[e];
                    for (e = 0; e < D; ++e) dt += t_load(&x.t, b, i, h, e) / nx * (nm > 0 ? m[e] / sqrt(nm) : 0);
                    if (dt > best) { best = dt; arg = c; }
                }
                for (e = 0; e < D; ++e) sum[(size_t)arg * D + e] += t_load(&x.t, b, i, h, e) / nx;
                cnt[arg]++;
            }
        for (c = 0; c < nc; ++c) {
            double nm = 0;
            for (e = 0; e < D; ++e) nm += (sum[(size_t)c * D + e] / (cnt[c] ? cnt[c] : 1)) * (sum[(size_t)c * D + e] / (cnt[c] ? cnt[c] : 1));
            for (e = 0; e < D; ++e) {
                const double old = c0[((size_t)h * nc + c) * D + e];
                const double want = cnt[c] ? dec * old + (1 - dec) * (sum[(size_t)c * D + e] / cnt[c]) / sqrt(nm) : old;
                const double got = cen[((size_t)h * nc + c) * D + e];
                if (fabs(got - want) > worst) worst = fabs(got - want);
            }
        }
    }
    T_CHECK(worst <= 1e-6, "routing update B%d n%d H%d D%d nc%d %s decay %g%s: max error %.3g", B, n, H, D, nc, t_dt_name(dt),
            (double)decay, lens ? " padded" : "", worst);
    t_owned_free(&x); free(cen); free(c0); free(sum); free(cnt);
}

/* doubles to a new float array */
static float *rt_floats(const double *x, size_t n) {
    float *f = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) f[i] = (float)x[i];
    return f;
}

/* routing-transformer 1.6.1 (tests/fixtures/routing_transformer_ref.py writes the fixture): its
   SelfAttention (global heads, shared_qk) on a padded batch, each sequence run alone, reproduced
   through attn.h as docs/porting.md shows: q = k = the shared QK projection, centroids =
   Kmeans.means, window = window_size, causal, routing.normalize_keys = 1, routing.count_eps =
   1e-5, seqlens_q/_k = the valid lengths. Within 2e-5, padding rows 0. Printed beside it: how far
   the reference's own input_mask (padded tokens kept in the windows) is from that. */
/* array `name` of configuration cfg of routing_transformer.txt (n values), malloc'd, or NULL */
static double *rt_fix(const char *name, int cfg, size_t n) {
    double *p = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (!T_FIXTURE_NTH("routing_transformer.txt", name, cfg, p, n)) { free(p); return NULL; }
    return p;
}

static void rt_fixture(void) {
    double c8[8];
    int cfg;
    if (!T_CHECK(T_FIXTURE("routing_transformer.txt", "config", c8, 8), "routing fixture: cannot read "
                 "tests/fixtures/routing_transformer.txt (run from the repository root or set ATTN_FIXTURES)")) return;
    for (cfg = 0; cfg < 3; ++cfg) {
        size_t nq = 0, nk, nv, nm = 0, no, i;
        double *c = rt_fix("config", cfg, 8), *l = NULL, *qk = NULL, *kk = NULL, *v = NULL, *m = NULL, *out = NULL, *om = NULL;
        double err = 0, ref_pad = 0;
        if (c) {   /* config: causal B T H dh n_clusters window shared_qk */
            nq = (size_t)c[1] * (size_t)c[2] * (size_t)c[3] * (size_t)c[4]; nm = (size_t)c[3] * (size_t)c[5] * (size_t)c[4];
            l = rt_fix("lens", cfg, (size_t)c[1]); qk = rt_fix("qk", cfg, nq); kk = rt_fix("k", cfg, nq); v = rt_fix("v", cfg, nq);
            m = rt_fix("means", cfg, nm); out = rt_fix("out", cfg, nq); om = rt_fix("out_masked", cfg, nq);
        }
        nk = nv = no = nq;
        if (T_CHECK(c && l && qk && kk && v && m && out && om, "routing fixture: malformed tests/fixtures/routing_transformer.txt "
                    "(config %d)", cfg)) {
            const int causal = (int)c[0], B = (int)c[1], T = (int)c[2], H = (int)c[3], DH = (int)c[4], NC = (int)c[5], W = (int)c[6];
            const int shared = (int)c[7];
            float *qf = rt_floats(qk, nq), *kf = rt_floats(kk, nk), *vf = rt_floats(v, nv), *cen = rt_floats(m, nm);
            float *of = (float *)t_xmalloc(sizeof(float) * no);
            int lens[8], b, t;
            attn_desc d;
            attn_status st;
            for (b = 0; b < B && b < 8; ++b) lens[b] = (int)l[b];
            memset(&d, 0, sizeof d);
            d.kind = ATTN_ROUTING; d.causal = causal;
            d.routing.centroids = cen; d.routing.n_clusters = NC; d.routing.window = W;
            d.routing.normalize_keys = shared; d.routing.separate_qk = !shared; d.routing.count_eps = 1e-5f;
            d.seqlens_q = d.seqlens_k = lens;
            st = attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, T, H, DH), attn_tensor_dense(kf, ATTN_F32, B, T, H, DH),
                              attn_tensor_dense(vf, ATTN_F32, B, T, H, DH), attn_tensor_dense(of, ATTN_F32, B, T, H, DH), NULL);
            for (i = 0; i < no; ++i) if (!(fabs(of[i] - out[i]) <= err)) err = of[i] != of[i] ? INFINITY : fabs(of[i] - out[i]);
            for (b = 0; b < B; ++b)
                for (t = 0; t < lens[b]; ++t)
                    for (i = 0; i < (size_t)H * DH; ++i) {
                        const size_t at = ((size_t)b * T + t) * H * DH + i;
                        if (fabs(om[at] - out[at]) > ref_pad) ref_pad = fabs(om[at] - out[at]);
                    }
            T_CHECK(st == ATTN_OK && err <= 2e-5, "routing-transformer fixture (causal %d, shared_qk %d): %s, max |attn.h - reference| %.3g",
                    causal, shared, attn_status_str(st), err);
            printf("     routing-transformer fixture causal %d shared_qk %d: max |attn.h - reference| %.2g; the reference's input_mask "
                   "(padding kept in the windows) moves valid rows by up to %.2g\n", causal, shared, err, ref_pad);
            if (shared) {   /* without each convention field, for the porting table */
                double e0[2] = { 0, 0 };
                int k;
                for (k = 0; k < 2; ++k) {
                    d.routing.normalize_keys = k; d.routing.count_eps = 0.0f;
                    st = attn_forward(&d, attn_tensor_dense(qf, ATTN_F32, B, T, H, DH), attn_tensor_dense(qf, ATTN_F32, B, T, H, DH),
                                      attn_tensor_dense(vf, ATTN_F32, B, T, H, DH), attn_tensor_dense(of, ATTN_F32, B, T, H, DH), NULL);
                    for (i = 0; i < no; ++i) if (fabs(of[i] - out[i]) > e0[k]) e0[k] = fabs(of[i] - out[i]);
                }
                T_CHECK(st == ATTN_OK && e0[0] > 1e-3, "routing-transformer fixture: the keys' normalisation must matter");
                printf("     (normalize_keys 0: %.2g; normalize_keys 1 and count_eps 0: %.2g)\n", e0[0], e0[1]);
            }
            free(qf); free(kf); free(vf); free(cen); free(of);
        }
        free(c); free(l); free(qk); free(kk); free(v); free(m); free(out); free(om);
    }
}

/* routing-transformer 1.6.1's k-means step (tests/fixtures/routing_transformer_update.py): one
   train-mode forward on a padded batch with input_mask, then Kmeans.update(), from raw means of
   unequal lengths. attn_routing_update with routing.update_rule = 1, decay = the layer's
   ema_decay, x = to_q(x) (shared_qk) or each batch entry's rows of q then k (shared_qk=False, as
   the reference clusters cat(q, k)), padding included, reproduces the means within 2e-5.
   Printed beside it: how far attn.h's own rule (0) is from the reference on the same step. */
static void rt_update_fixture(void) {
    const char *F = "routing_transformer_update.txt";
    int s;
    for (s = 0; s < 2; ++s) {
        char nm[32];
        double cfg[7], lens[3], *q = NULL, *k = NULL, *m0 = NULL, *m1 = NULL;
        int ok;
        sprintf(nm, "s%d_config", s);
        if (!T_CHECK(T_FIXTURE(F, nm, cfg, 7), "routing update fixture: %s unreadable", F)) return;
        {
            const int B = (int)cfg[0], T = (int)cfg[1], H = (int)cfg[2], DH = (int)cfg[3], NC = (int)cfg[4], shared = (int)cfg[6];
            const float decay = (float)cfg[5];
            const size_t nx = (size_t)B * T * H * DH, nm_ = (size_t)H * NC * DH, row = (size_t)H * DH;
            const int T2 = shared ? T : 2 * T;   /* x: q's rows, then (separate q, k) k's rows */
            float *x = (float *)t_xmalloc(sizeof(float) * (size_t)B * T2 * row), *cen = (float *)t_xmalloc(sizeof(float) * nm_);
            int b, rule, lensi[3];
            size_t i;
            double err[2] = { 0, 0 };
            q = (double *)t_xmalloc(sizeof(double) * nx); k = (double *)t_xmalloc(sizeof(double) * nx);
            m0 = (double *)t_xmalloc(sizeof(double) * nm_); m1 = (double *)t_xmalloc(sizeof(double) * nm_);
            sprintf(nm, "s%d_lens", s); ok = B == 3 && T_FIXTURE(F, nm, lens, 3);
            sprintf(nm, "s%d_q", s); ok = ok && T_FIXTURE(F, nm, q, nx);
            sprintf(nm, "s%d_k", s); ok = ok && (shared || T_FIXTURE(F, nm, k, nx));
            sprintf(nm, "s%d_means0", s); ok = ok && T_FIXTURE(F, nm, m0, nm_);
            sprintf(nm, "s%d_means1", s); ok = ok && T_FIXTURE(F, nm, m1, nm_);
            if (T_CHECK(ok, "routing update fixture: arrays of config %d", s)) {
                for (b = 0; b < B; ++b) {
                    lensi[b] = (int)lens[b];
                    for (i = 0; i < (size_t)T * row; ++i) {
                        x[(size_t)b * T2 * row + i] = (float)q[(size_t)b * T * row + i];
                        if (!shared) x[((size_t)b * T2 + T) * row + i] = (float)k[(size_t)b * T * row + i];
                    }
                }
                for (rule = 1; rule >= 0; --rule) {
                    attn_desc d;
                    memset(&d, 0, sizeof d);
                    d.kind = ATTN_ROUTING;
                    d.routing.n_clusters = NC; d.routing.update_rule = rule;
                    if (shared) d.seqlens_q = d.seqlens_k = lensi;   /* the forward's desc: rule 1 ignores the padding */
                    for (i = 0; i < nm_; ++i) cen[i] = (float)m0[i];
                    ok = attn_routing_update(&d, attn_tensor_dense(x, ATTN_F32, B, T2, H, DH), decay, cen) == ATTN_OK;
                    for (i = 0; i < nm_; ++i) err[rule] = fmax(err[rule], fabs(cen[i] - m1[i]));
                    if (rule) T_CHECK(ok && err[1] <= 2e-5, "routing-transformer update fixture (shared_qk %d): update_rule 1 %.3g (bound 2e-5)",
                                      shared, err[1]);
                }
                T_CHECK(err[0] > 1e-3, "routing update fixture (shared_qk %d): the rule must matter (%.3g)", shared, err[0]);
                printf("     routing-transformer Kmeans step (shared_qk %d, padded): update_rule 1 max |attn.h - reference| %.2g; "
                       "update_rule 0 %.2g\n", shared, err[1], err[0]);
            }
            free(x); free(cen);
        }
        free(q); free(k); free(m0); free(m1);
    }
}

static void test_routing(void) {
    t_rng r = t_rng_seed(31);
    int it, n = T_QUICK ? 6 : 30;
    rt_case(&r, 1, 256, 2, 32, 32, ATTN_F32, ATTN_F32, 4, 0, 0, 1);          /* default window 64 */
    rt_case(&r, 2, 100, 2, 16, 16, ATTN_F32, ATTN_F32, 10, 10, 1, 1);        /* causal, sqrt(n) clusters */
    rt_case(&r, 1, 50, 3, 8, 12, ATTN_F16, ATTN_BF16, 3, 8, 0, 0);           /* separate q */
    rt_case(&r, 1, 7, 1, 4, 4, ATTN_F32, ATTN_F32, 2, 20, 1, 1);             /* window > n */
    rt_case(&r, 1, 150, 2, 8, 8, ATTN_F32, ATTN_F32, 70, 8, 1, 1);          /* clusters in 2 blocks of 64 */
    for (it = 0; it < n; ++it) {
        int a[11];
        a[0] = t_irange(&r, 1, 2); a[1] = t_irange(&r, 1, 120); a[2] = t_irange(&r, 1, 3); a[3] = t_irange(&r, 2, 24);
        a[4] = t_irange(&r, 1, 24); a[5] = t_irange(&r, 0, 2); a[6] = t_irange(&r, 0, 2); a[7] = t_irange(&r, 1, 8);
        a[8] = t_irange(&r, 0, 40); a[9] = t_chance(&r, 0.5); a[10] = t_chance(&r, 0.7);
        rt_case(&r, a[0], a[1], a[2], a[3], a[4], sp_dtypes[a[5]], sp_dtypes[a[6]], a[7], a[8], a[9], a[10]);
    }
    rt_one_cluster(&r, 40);
    rt_one_cluster(&r, 64);
    rt_ties(&r, 128, 16, 1, 8);
    rt_ties(&r, 200, 33, 3, 20);
    rt_ties(&r, 70, 64, 70, 5);
    rt_ties(&r, 130, 32, 2, 64);
    rt_ties_groups(&r, 300, 16, 5, 40);
    rt_ties_groups(&r, 200, 64, 70, 30);   /* clusters in 2 blocks */
    rt_ties_groups(&r, 97, 33, 3, 7);
    rt_update_case(&r, 2, 50, 2, 8, 5, ATTN_F32, 0.0f, NULL);
    rt_update_case(&r, 1, 30, 3, 16, 1, ATTN_F16, 0.5f, NULL);
    rt_update_case(&r, 1, 200, 1, 4, 16, ATTN_BF16, 0.9f, NULL);
    {
        static const int lens3[3] = { 50, 17, 0 };
        rt_update_case(&r, 3, 50, 2, 8, 5, ATTN_F32, 0.5f, lens3);
    }
    {   /* packed (cu_seqlens): the tokens of the segments, the rest skipped, as seqlens_k = cu[U] */
        static const int cu[3] = { 0, 20, 35 }, len[1] = { 35 };
        sp_tensor x = sp_make(ATTN_F32, 1, 40, 2, 8, 0);
        float c1[2 * 4 * 8], c2[2 * 4 * 8];
        attn_desc d;
        for (it = 0; it < 2 * 4 * 8; ++it) c1[it] = c2[it] = (float)t_normal(&r);
        t_fill_normal(&x.t, &r, 1.0);
        memset(&d, 0, sizeof d);
        d.routing.n_clusters = 4;
        d.cu_seqlens_q = d.cu_seqlens_k = cu; d.varlen_batch = 2;
        T_CHECK(attn_routing_update(&d, x.t, 0.5f, c1) == ATTN_OK, "routing update packed: status");
        d.cu_seqlens_q = d.cu_seqlens_k = NULL; d.varlen_batch = 0; d.seqlens_k = len;
        T_CHECK(attn_routing_update(&d, x.t, 0.5f, c2) == ATTN_OK && memcmp(c1, c2, sizeof c1) == 0,
                "routing update packed: must equal seqlens_k = the segments' end");
        t_owned_free(&x);
    }
    rt_fixture();
    rt_update_fixture();
    rt_padded_case(&r, 3, 100, 2, 16, 16, ATTN_F32, 10, 16, 0, 0, 0.0f, 0, 0);
    rt_padded_case(&r, 4, 64, 2, 8, 12, ATTN_F32, 4, 0, 1, 1, 1e-5f, 2, 0);      /* routing-transformer's convention */
    rt_padded_case(&r, 2, 40, 1, 8, 8, ATTN_F16, 3, 8, 1, 0, 0.5f, 1, 0);
    rt_padded_case(&r, 3, 80, 2, 8, 8, ATTN_F32, 5, 12, 0, 0, 1e-5f, 2, 1);      /* separate_qk (shared_qk=False) */
    for (it = 0; it < n / 2; ++it)
        rt_padded_case(&r, t_irange(&r, 1, 5), t_irange(&r, 1, 90), t_irange(&r, 1, 3), t_irange(&r, 2, 20), t_irange(&r, 1, 20),
                       ATTN_F32, t_irange(&r, 1, 8), t_irange(&r, 0, 40), t_chance(&r, 0.5), t_chance(&r, 0.5),
                       t_chance(&r, 0.5) ? 0.3f : 0.0f, t_irange(&r, 0, 2), 0);
    for (it = 0; it < n / 3; ++it)   /* separate_qk: non-causal */
        rt_padded_case(&r, t_irange(&r, 1, 4), t_irange(&r, 1, 90), t_irange(&r, 1, 3), t_irange(&r, 2, 20), t_irange(&r, 1, 20),
                       ATTN_F32, t_irange(&r, 1, 8), t_irange(&r, 0, 40), 0, t_chance(&r, 0.5), 0.0f, t_irange(&r, 0, 2), 1);
}

/* ---- statuses: exact code, outputs untouched --------------------------------------------- */
static void sp_expect(const char *what, const attn_desc *d, sp_tensor *q, sp_tensor *k, sp_tensor *v, sp_tensor *o,
                      attn_status want) {
    float lse[4096];
    size_t bytes = 12345;
    attn_status s, sw;
    t_sentinel(o->buf, sp_bytes(o), 0xC3u);
    t_sentinel(lse, sizeof lse, 0x5Au);
    s = attn_forward(d, q->t, k->t, v->t, o->t, lse);
    sw = attn_workspace_size(d, q->t, k->t, v->t, &bytes);
    if (T_CHECK(s == want && t_sentinel_ok(o->buf, sp_bytes(o), 0xC3u) && t_sentinel_ok(lse, sizeof lse, 0x5Au),
                "%s: want %d (%s), got %d", what, (int)want, attn_status_str(want), (int)s))
        t_status_provoked[want] = 1;
    /* the query has no buffers: a workspace too small or an lse given cannot fail it */
    T_CHECK(sw == want || ((want == ATTN_ERR_WORKSPACE || want == ATTN_ERR_ROUTING_LSE) && sw == ATTN_OK),
            "%s: workspace query gave %d", what, (int)sw);
    T_CHECK(strlen(attn_status_str(want)) > 10 && strstr(attn_status_str(want), "unknown") == NULL, "%s: message", what);
}

static void test_sparse_errors(void) {
    sp_tensor q = sp_make(ATTN_F32, 1, 128, 4, 8, 0), k = sp_make(ATTN_F32, 1, 128, 2, 8, 0),
              v = sp_make(ATTN_F32, 1, 128, 2, 8, 0), o = sp_make(ATTN_F32, 1, 128, 4, 8, 0),
              k2 = sp_make(ATTN_F32, 1, 64, 2, 8, 0), v2 = sp_make(ATTN_F32, 1, 64, 2, 8, 0);
    int dil[4] = { 1, 2, -1, 0 }, table[4 * 6 * 2], tbl[8], i;
    attn_desc d, e;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LONGFORMER; d.window_left = d.window_right = 4; d.longformer.dilations = dil;
    sp_expect("longformer dilations < 0", &d, &q, &k, &v, &o, ATTN_ERR_LONGFORMER_DILATIONS);
    dil[2] = 2;
    e = d; e.dropout_p = 0.1f;
    sp_expect("longformer dropout", &e, &q, &k, &v, &o, ATTN_ERR_LONGFORMER_DROPOUT);
    e = d; e.window_left = -1;
    sp_expect("longformer window", &e, &q, &k, &v, &o, ATTN_ERR_WINDOW_LEFT);
    e = d; e.workspace = tbl; e.workspace_size = 4;
    sp_expect("longformer workspace", &e, &q, &k, &v, &o, ATTN_ERR_WORKSPACE);

    memset(&d, 0, sizeof d);
    d.kind = ATTN_BIGBIRD; d.bigbird.block = 16; d.bigbird.random_blocks = 2;
    for (i = 0; i < 4 * 6 * 2; ++i) table[i] = i % 8;
    d.bigbird.random_table = table;
    e = d; e.causal = 1;
    sp_expect("bigbird causal", &e, &q, &k, &v, &o, ATTN_ERR_SPARSE_MASKS);
    e = d; e.window_left = 3;
    sp_expect("bigbird window", &e, &q, &k, &v, &o, ATTN_ERR_SPARSE_MASKS);
    e = d; e.rope = ATTN_ROPE_HALF;
    sp_expect("bigbird rope", &e, &q, &k, &v, &o, ATTN_ERR_SPARSE_MASKS);
    sp_expect("bigbird k.seq", &d, &q, &k2, &v2, &o, ATTN_ERR_SPARSE_SELF);
    e = d; e.bigbird.block = 48;
    sp_expect("bigbird block not dividing", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_BLOCK);
    e = d; e.bigbird.block = -16;
    sp_expect("bigbird block < 0", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_BLOCK);
    e = d; e.bigbird.block = 0;          /* default 64 divides 128: fine; 0 with seq 96 is not */
    e.bigbird.random_blocks = -1;
    sp_expect("bigbird random < 0", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_RANDOM);
    e = d; e.bigbird.no_random = 2;
    sp_expect("bigbird no_random", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_FLAGS);
    e = d; e.bigbird.hf_fallback = -1;
    sp_expect("bigbird hf_fallback", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_FLAGS);
    e = d; table[4 * 6 * 2 - 1] = 8;
    sp_expect("bigbird table entry >= nb", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_TABLE);
    table[4 * 6 * 2 - 1] = -1;
    sp_expect("bigbird table entry < 0", &e, &q, &k, &v, &o, ATTN_ERR_BIGBIRD_TABLE);
    table[4 * 6 * 2 - 1] = 7;
    e = d; e.scale = (float)INFINITY;
    sp_expect("bigbird scale", &e, &q, &k, &v, &o, ATTN_ERR_SCALE);
    e = d; e.workspace = tbl; e.workspace_size = 4;
    sp_expect("bigbird workspace", &e, &q, &k, &v, &o, ATTN_ERR_WORKSPACE);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LSH; d.lsh.bucket_size = 16;
    sp_expect("lsh k.heads", &d, &q, &k, &v, &o, ATTN_ERR_LSH_HEADS);
    sp_expect("lsh k.seq", &d, &q, &k2, &v2, &o, ATTN_ERR_SPARSE_SELF);
    {
        sp_tensor k4 = sp_make(ATTN_F32, 1, 128, 4, 8, 0), v4 = sp_make(ATTN_F32, 1, 128, 4, 8, 0);
        float rot[4 * 8 * 4];
        e = d; e.softcap = 1.0f;
        sp_expect("lsh softcap", &e, &q, &k4, &v4, &o, ATTN_ERR_SPARSE_MASKS);
        e = d; e.window_left = 2;
        sp_expect("lsh window", &e, &q, &k4, &v4, &o, ATTN_ERR_SPARSE_MASKS);
        e = d; e.causal = 2;
        sp_expect("lsh causal 2", &e, &q, &k4, &v4, &o, ATTN_ERR_CAUSAL);
        e = d; e.lsh.bucket_size = 48;
        sp_expect("lsh bucket_size not dividing", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_BUCKET_SIZE);
        e = d; e.lsh.bucket_size = -1;
        sp_expect("lsh bucket_size < 0", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_BUCKET_SIZE);
        e = d; e.lsh.n_buckets = 3;
        sp_expect("lsh odd n_buckets", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_BUCKETS);
        e = d; e.lsh.n_buckets = -2;
        sp_expect("lsh n_buckets < 0", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_BUCKETS);
        e = d; e.lsh.n_hashes = -1;
        sp_expect("lsh n_hashes < 0", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_HASHES);
        e = d; e.lsh.n_hashes = INT_MAX / 64;
        sp_expect("lsh n_hashes * seq overflows", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_HASHES);
        for (i = 0; i < 4 * 8 * 4; ++i) rot[i] = 1.0f;
        rot[77] = (float)NAN;
        e = d; e.lsh.n_buckets = 8; e.lsh.rotations = rot;
        sp_expect("lsh NaN rotation", &e, &q, &k4, &v4, &o, ATTN_ERR_LSH_ROTATIONS);
        T_CHECK(attn_lsh_rotations(NULL, 1, 64, 8, rot) == ATTN_ERR_LSH_NULL && attn_lsh_rotations(&d, 1, 64, 8, NULL) == ATTN_ERR_LSH_NULL,
                "rotations: NULL");
        t_status_provoked[ATTN_ERR_LSH_NULL] = 1;
        T_CHECK(attn_lsh_rotations(&d, 0, 64, 8, rot) == ATTN_ERR_LSH_SHAPE && attn_lsh_rotations(&d, 1, 64, 0, rot) == ATTN_ERR_LSH_SHAPE,
                "rotations: shape");
        t_status_provoked[ATTN_ERR_LSH_SHAPE] = 1;
        T_CHECK(attn_lsh_rotations(&d, 1, 60, 8, rot) == ATTN_ERR_LSH_BUCKET_SIZE && rot[0] == 1.0f, "rotations: bucket size");
        t_owned_free(&k4); t_owned_free(&v4);
    }
    {   /* ATTN_ROUTING and attn_routing_update */
        sp_tensor k4 = sp_make(ATTN_F32, 1, 128, 4, 8, 0), v4 = sp_make(ATTN_F32, 1, 128, 4, 8, 0);
        float cen[4 * 3 * 8], c2[4 * 3 * 8];
        for (i = 0; i < 4 * 3 * 8; ++i) c2[i] = cen[i] = 0.5f;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_ROUTING; d.routing.centroids = cen; d.routing.n_clusters = 3;
        sp_expect("routing k.heads", &d, &q, &k, &v, &o, ATTN_ERR_LSH_HEADS);
        e = d; e.routing.centroids = NULL;
        sp_expect("routing centroids NULL", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_CENTROIDS);
        e = d; e.routing.n_clusters = 0;
        sp_expect("routing n_clusters 0", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_CLUSTERS);
        e = d; e.routing.window = -1;
        sp_expect("routing window < 0", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_WINDOW);
        e = d; e.softcap = 2.0f;
        sp_expect("routing softcap", &e, &q, &k4, &v4, &o, ATTN_ERR_SPARSE_MASKS);
        sp_expect("routing lse", &d, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_LSE);
        cen[50] = (float)INFINITY;
        sp_expect("routing centroid inf", &d, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_NONFINITE);
        cen[50] = 0.5f;
        {   /* padding and the reference-convention fields */
            static const int l1[1] = { 100 }, l2[1] = { 99 }, lbad[1] = { 129 }, cu1[3] = { 0, 60, 128 }, cu2[3] = { 0, 61, 128 };
            e = d; e.seqlens_q = l1; e.seqlens_k = l2;
            sp_expect("routing seqlens_q != seqlens_k", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_SEQLENS);
            e = d; e.seqlens_k = lbad;
            sp_expect("routing seqlens_k > seq", &e, &q, &k4, &v4, &o, ATTN_ERR_SEQLENS_K);
            e = d; e.seqlens_q = lbad;
            sp_expect("routing seqlens_q > seq", &e, &q, &k4, &v4, &o, ATTN_ERR_SEQLENS_Q);
            e = d; e.cu_seqlens_q = cu1; e.cu_seqlens_k = cu2; e.varlen_batch = 2;
            sp_expect("routing cu_seqlens_q != _k", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_SEQLENS);
            e = d; e.cu_seqlens_k = cu1; e.varlen_batch = 2;
            sp_expect("routing cu_seqlens_k alone", &e, &q, &k4, &v4, &o, ATTN_ERR_CU_SEQLENS_PAIR);
            e = d; e.cu_seqlens_q = e.cu_seqlens_k = cu1; e.varlen_batch = 0;
            sp_expect("routing varlen_batch 0", &e, &q, &k4, &v4, &o, ATTN_ERR_VARLEN_BATCH);
            e = d; e.cu_seqlens_q = e.cu_seqlens_k = cu1; e.varlen_batch = 2; e.seqlens_k = l1;
            sp_expect("routing cu_seqlens with seqlens", &e, &q, &k4, &v4, &o, ATTN_ERR_VARLEN_WITH_SEQLENS);
            e = d; e.routing.normalize_keys = 2;
            sp_expect("routing normalize_keys 2", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            e = d; e.routing.count_eps = -1e-5f;
            sp_expect("routing count_eps < 0", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            e = d; e.routing.count_eps = (float)NAN;
            sp_expect("routing count_eps NaN", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            e = d; e.routing.separate_qk = 2;
            sp_expect("routing separate_qk 2", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            e = d; e.routing.separate_qk = 1; e.causal = 1;
            sp_expect("routing separate_qk causal", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            e = d; e.routing.update_rule = 2;
            sp_expect("routing update_rule 2", &e, &q, &k4, &v4, &o, ATTN_ERR_ROUTING_OPTIONS);
            T_CHECK(attn_routing_update(&e, k4.t, 0.0f, c2) == ATTN_ERR_ROUTING_OPTIONS, "routing update: update_rule 2");
            e = d; e.seqlens_q = l1; e.seqlens_k = l2;
            T_CHECK(attn_routing_update(&e, k4.t, 0.0f, c2) == ATTN_ERR_ROUTING_SEQLENS, "routing update: seqlens_q != _k");
            e = d; e.seqlens_k = lbad;
            T_CHECK(attn_routing_update(&e, k4.t, 0.0f, c2) == ATTN_ERR_SEQLENS_K, "routing update: seqlens_k > seq");
        }
        T_CHECK(attn_routing_update(&d, k4.t, 1.0f, c2) == ATTN_ERR_ROUTING_DECAY &&
                attn_routing_update(&d, k4.t, -0.5f, c2) == ATTN_ERR_ROUTING_DECAY &&
                attn_routing_update(&d, k4.t, (float)NAN, c2) == ATTN_ERR_ROUTING_DECAY, "routing update: decay");
        t_status_provoked[ATTN_ERR_ROUTING_DECAY] = 1;
        {
            attn_tensor xn = k4.t;
            xn.data = NULL;
            T_CHECK(attn_routing_update(&d, xn, 0.0f, c2) == ATTN_ERR_ROUTING_X, "routing update: x NULL");
            t_status_provoked[ATTN_ERR_ROUTING_X] = 1;
        }
        T_CHECK(attn_routing_update(&d, k4.t, 0.0f, NULL) == ATTN_ERR_ROUTING_CENTROIDS &&
                attn_routing_update(NULL, k4.t, 0.0f, c2) == ATTN_ERR_NULL_DESC, "routing update: NULL");
        for (i = 0; i < 4 * 3 * 8; ++i) if (c2[i] != 0.5f) break;
        T_CHECK(i == 4 * 3 * 8, "routing update: a failed call wrote the centroids");
        t_owned_free(&k4); t_owned_free(&v4);
    }
    {   /* attn_bigbird_random_table */
        for (i = 0; i < 8; ++i) tbl[i] = 1000 + i;
        T_CHECK(attn_bigbird_random_table(NULL, 1, 64, tbl) == ATTN_ERR_BIGBIRD_NULL_TABLE &&
                attn_bigbird_random_table(&d, 1, 64, NULL) == ATTN_ERR_BIGBIRD_NULL_TABLE, "table: NULL");
        t_status_provoked[ATTN_ERR_BIGBIRD_NULL_TABLE] = 1;
        T_CHECK(attn_bigbird_random_table(&d, 0, 64, tbl) == ATTN_ERR_BIGBIRD_SHAPE &&
                attn_bigbird_random_table(&d, 1, 0, tbl) == ATTN_ERR_BIGBIRD_SHAPE, "table: shape");
        t_status_provoked[ATTN_ERR_BIGBIRD_SHAPE] = 1;
        T_CHECK(attn_bigbird_random_table(&d, 1, 60, tbl) == ATTN_ERR_BIGBIRD_BLOCK, "table: block");
        for (i = 0; i < 8; ++i) if (tbl[i] != 1000 + i) break;
        T_CHECK(i == 8, "table: a failed call wrote the table");
    }
    {   /* the sparse kinds have a backward (test_longformer_backward, test_bigbird_bwd.c, test_lsh.c,
           test_routing_bwd.c) but no recurrent state: attn_state_size is ATTN_ERR_KIND_OP, nothing written */
        static const attn_kind kinds[4] = { ATTN_LONGFORMER, ATTN_BIGBIRD, ATTN_LSH, ATTN_ROUTING };
        for (i = 0; i < 4; ++i) {
            size_t n = 77;
            memset(&d, 0, sizeof d);
            d.kind = kinds[i];
            T_CHECK(attn_state_size(&d, q.t, k.t, v.t, &n) == ATTN_ERR_KIND_OP && n == 77,
                    "%s: attn_state_size must be ATTN_ERR_KIND_OP, nothing written", attn_kind_name(kinds[i]));
            T_CHECK(strstr(attn_kind_name(kinds[i]), "unknown") == NULL, "kind name");
        }
    }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&k2); t_owned_free(&v2);
}

/* Issue 27 item 5: q.batch * q.heads > INT_MAX wrapped LSH's and Routing's int task count (the
   size query answered ATTN_OK); every sparse kind now answers ATTN_ERR_OVERFLOW through the one
   checked product, the result untouched. B 65536, H 65537, S = D = 1; queries allocate nothing. */
static void test_sparse_task_overflow(void) {
    static const attn_kind kinds[4] = { ATTN_LSH, ATTN_ROUTING, ATTN_BIGBIRD, ATTN_LONGFORMER };
    uint16_t dummy[4] = { 0, 0, 0, 0 };
    float *cen = (float *)calloc(65537, sizeof(float));
    attn_tensor t = attn_tensor_dense(dummy, ATTN_BF16, 65536, 1, 65537, 1);
    int i;
    if (!cen) { T_CHECK(0, "sparse task overflow: out of memory"); return; }
    for (i = 0; i < 4; ++i) {
        attn_desc d;
        size_t n = 77;
        attn_status s;
        char what[96];
        memset(&d, 0, sizeof d);
        d.kind = kinds[i];
        d.lsh.bucket_size = 1;
        d.routing.centroids = cen; d.routing.n_clusters = 1;
        d.bigbird.block = 1; d.bigbird.no_random = 1;
        s = attn_workspace_size(&d, t, t, t, &n);
        snprintf(what, sizeof what, "%s workspace size, B 65536 x H 65537", attn_kind_name(d.kind));
        t_expect_status(s, ATTN_ERR_OVERFLOW, "sparse", what);
        T_CHECK(n == 77, "sparse %s: the size was written", what);
    }
    free(cen);
}

void test_sparse(void) {
    test_sparse_errors();
    test_sparse_task_overflow();
    test_longformer();
    test_longformer_backward();
    test_longformer_mask();          /* tests/test_longformer_mask.c */
    test_bigbird();
    test_bigbird_hf();
    test_lsh();
    test_routing();
}
