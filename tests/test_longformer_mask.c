/* tests/test_longformer_mask.c - ATTN_LONGFORMER with per-token global positions
   (attn_desc.longformer.global_mask, .global_rows_only; Hugging Face's global_attention_mask)
   against a double-precision reference written from the rule in attn.h's comment:
       key j visible from position p = i + Lk - Lq  iff  j < Lk, (!causal || j <= p) and
       (|p - j| in the dilated window || mask[b][j] || mask[b][p] || j < G || p < G || j < sinks)
   padding rows (i >= Lq) 0 and lse -inf.
   TOLERANCES: out |got - ref| <= 2e-5 max(1, max|ref| of the row) + rel(out dtype) |ref|;
   lse 2e-5 max(1, |ref|) (q/k/v are rounded to their dtype before the reference reads them).
   Properties: valid rows do not depend on the padding's contents (NaN there, mask bits set
   there) nor on the other sequences of the batch (bitwise: each sequence alone); a mask of the
   first G positions == global_tokens = G; global_rows_only writes exactly the global rows
   (others bitwise untouched) and equals the full call there (bitwise); thread counts bitwise.
   The Hugging Face fixture (tests/fixtures/longformer_hf.py): one local call + one
   global_rows_only call into the same out reproduce LongformerSelfAttention within 2e-5.
   attn_backward (lm_backward, lm_hf_bwd_fixture): finite differences of the double reference,
   and HF's autograd gradients (tests/fixtures/longformer_hf_bwd.py) within 1e-4 relative.
   Errors: 326-328 with outputs untouched. */
#include "test.h"
#include "fixture.h"

typedef struct {
    int B, Sq, Sk, Hq, Hkv, D, Dv, wl, wr, G, sinks, causal;
    const int *dil, *lq, *lk;       /* [Hq] or NULL; [B] or NULL */
    const unsigned char *mask;      /* [B][Sk] */
    double softcap;
    const float *alibi;
} lm_case;

static int lm_visible(const lm_case *c, int b, int h, int i, int j) {
    const int Lq = c->lq ? c->lq[b] : c->Sq, Lk = c->lk ? c->lk[b] : c->Sk, p = i + Lk - Lq;
    const int D = c->dil && c->dil[h] > 1 ? c->dil[h] : 1;
    const unsigned char *m = c->mask + (size_t)b * c->Sk;
    int t;
    if (i >= Lq || j >= Lk) return 0;
    if (c->causal && j > p) return 0;
    if (m[j] || j < c->G || j < c->sinks || p < c->G || (p >= 0 && m[p])) return 1;
    for (t = -(c->wl ? c->wl : c->Sk + c->Sq); t <= (c->wr ? c->wr : c->Sk + c->Sq); ++t)
        if (p + D * t == j) return 1;
    return 0;
}

/* out [B][Sq][Hq][Dv], lse [B][Hq][Sq] */
static void lm_ref(const lm_case *c, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, double *out, double *lse) {
    const int g = c->Hq / c->Hkv;
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)c->Sk);
    int b, h, i, j, e;
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h)
            for (i = 0; i < c->Sq; ++i) {
                const int Lk = c->lk ? c->lk[b] : c->Sk, Lq = c->lq ? c->lq[b] : c->Sq, p = i + Lk - Lq;
                double m = -INFINITY, l = 0.0, *o = out + (((size_t)b * c->Sq + i) * c->Hq + h) * c->Dv;
                for (e = 0; e < c->Dv; ++e) o[e] = 0.0;
                for (j = 0; j < c->Sk; ++j) {
                    double x = 0.0;
                    s[j] = -INFINITY;
                    if (!lm_visible(c, b, h, i, j)) continue;
                    for (e = 0; e < c->D; ++e) x += t_load(q, b, i, h, e) * t_load(k, b, j, h / g, e);
                    x /= sqrt((double)c->D);
                    if (c->softcap > 0) x = c->softcap * tanh(x / c->softcap);
                    if (c->alibi) x -= c->alibi[h] * fabs((double)p - j);
                    s[j] = x;
                    if (x > m) m = x;
                }
                lse[((size_t)b * c->Hq + h) * c->Sq + i] = -INFINITY;
                if (m == -INFINITY) continue;
                for (j = 0; j < c->Sk; ++j) {
                    double w;
                    if (s[j] == -INFINITY) continue;
                    w = exp(s[j] - m);
                    l += w;
                    for (e = 0; e < c->Dv; ++e) o[e] += w * t_load(v, b, j, h / g, e);
                }
                for (e = 0; e < c->Dv; ++e) o[e] /= l;
                lse[((size_t)b * c->Hq + h) * c->Sq + i] = m + log(l);
            }
    free(s);
}

/* rows (b, i, h) with valid(b, i): out within tolerance of ref, lse too */
static double lm_err(const attn_tensor *out, const float *lse, const double *ro, const double *rl, int lse_too) {
    const int B = out->batch, S = out->seq, H = out->heads, Dv = out->dim;
    double worst = 0.0;
    int b, i, h, e;
    for (b = 0; b < B; ++b)
        for (i = 0; i < S; ++i)
            for (h = 0; h < H; ++h) {
                const double *r = ro + (((size_t)b * S + i) * H + h) * Dv;
                double mx = 1.0;
                for (e = 0; e < Dv; ++e) if (fabs(r[e]) > mx) mx = fabs(r[e]);
                for (e = 0; e < Dv; ++e) {
                    const double got = t_load(out, b, i, h, e);
                    const double x = fabs(got - r[e]) / (2e-5 * mx + t_dt_rel(out->dtype) * fabs(r[e]));
                    if (!(x <= worst)) worst = x != x ? INFINITY : x;
                }
                if (lse_too) {
                    const double L = rl[((size_t)b * H + h) * S + i], got = lse[((size_t)b * H + h) * S + i];
                    if (L == -INFINITY) { if (got != -INFINITY) worst = INFINITY; }
                    else { const double x = fabs(got - L) / (2e-5 * (fabs(L) > 1 ? fabs(L) : 1)); if (!(x <= worst)) worst = x != x ? INFINITY : x; }
                }
            }
    return worst;   /* <= 1: within tolerance */
}

static attn_tensor lm_tensor(attn_dtype t, int B, int S, int H, int D, void **buf) {
    const size_t n = (size_t)B * S * H * D * t_dt_size(t);
    *buf = t_xmalloc(n);
    memset(*buf, 0, n);
    return attn_tensor_dense(*buf, t, B, S, H, D);
}

static void lm_sweep(void) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    const int n_cases = T_QUICK ? 30 : 80;
    t_rng r = t_rng_seed(2828);
    int c;
    for (c = 0; c < n_cases; ++c) {
        lm_case L;
        void *bq, *bk, *bv, *bo, *bo2;
        attn_tensor q, k, v, o, o2;
        attn_desc d;
        attn_dtype tq, tkv;
        int dil[6], lq[3], lk[3], b, h, j, i, pad = t_chance(&r, 0.6);
        unsigned char *mask;
        float *lse, *lse2, alibi[6];
        double *ro, *rl, err, dens;
        size_t no;
        attn_status s;
        memset(&L, 0, sizeof L);
        L.B = t_irange(&r, 1, 3); L.Hkv = t_irange(&r, 1, 2); L.Hq = L.Hkv * t_irange(&r, 1, 3);
        L.Sk = t_irange(&r, 1, 90); L.Sq = pad || t_chance(&r, 0.6) ? L.Sk : t_irange(&r, 1, 90);
        L.D = t_pick(&r, (const int[]){ 1, 8, 16, 33 }, 4); L.Dv = t_pick(&r, (const int[]){ 1, 8, 20 }, 3);
        L.wl = t_irange(&r, 0, 6); L.wr = t_chance(&r, 0.8) ? L.wl : t_irange(&r, 0, 6);
        L.G = t_chance(&r, 0.2) ? t_irange(&r, 1, 3) : 0;
        L.sinks = t_chance(&r, 0.15) ? t_irange(&r, 1, 2) : 0;
        L.causal = t_chance(&r, 0.25);
        if (t_chance(&r, 0.3)) { for (h = 0; h < L.Hq; ++h) dil[h] = t_irange(&r, 0, 3); L.dil = dil; }
        if (t_chance(&r, 0.15)) L.softcap = 4.0;
        if (t_chance(&r, 0.15)) { for (h = 0; h < L.Hq; ++h) alibi[h] = 0.1f * (float)(h + 1); L.alibi = alibi; }
        tq = c < 20 ? ATTN_F32 : dts[t_irange(&r, 0, 2)]; tkv = c < 20 ? ATTN_F32 : dts[t_irange(&r, 0, 2)];
        q = lm_tensor(tq, L.B, L.Sq, L.Hq, L.D, &bq); k = lm_tensor(tkv, L.B, L.Sk, L.Hkv, L.D, &bk);
        v = lm_tensor(tkv, L.B, L.Sk, L.Hkv, L.Dv, &bv);
        o = lm_tensor(ATTN_F32, L.B, L.Sq, L.Hq, L.Dv, &bo); o2 = lm_tensor(ATTN_F32, L.B, L.Sq, L.Hq, L.Dv, &bo2);
        t_fill_normal(&q, &r, 1.0); t_fill_normal(&k, &r, 1.0); t_fill_normal(&v, &r, 1.0);
        mask = (unsigned char *)t_xmalloc((size_t)L.B * L.Sk);
        dens = t_pick(&r, (const int[]){ 0, 5, 30 }, 3) / 100.0;
        for (j = 0; j < L.B * L.Sk; ++j) mask[j] = (unsigned char)(t_chance(&r, dens) ? t_irange(&r, 1, 255) : 0);
        if (pad) {
            for (b = 0; b < L.B; ++b) { lk[b] = t_irange(&r, 0, L.Sk); lq[b] = lk[b]; }
            L.lq = lq; L.lk = lk;
        }
        L.mask = mask;
        no = (size_t)L.B * L.Sq * L.Hq * L.Dv;
        ro = (double *)t_xmalloc(sizeof(double) * no);
        rl = (double *)t_xmalloc(sizeof(double) * (size_t)L.B * L.Hq * L.Sq);
        lse = (float *)t_xmalloc(sizeof(float) * (size_t)L.B * L.Hq * L.Sq);
        lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)L.B * L.Hq * L.Sq);
        lm_ref(&L, &q, &k, &v, ro, rl);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LONGFORMER; d.window_left = L.wl; d.window_right = L.wr; d.global_tokens = L.G;
        d.sink_tokens = L.sinks; d.causal = L.causal; d.longformer.dilations = L.dil;
        d.softcap = (float)L.softcap; d.alibi_slopes = L.alibi;
        d.seqlens_q = L.lq; d.seqlens_k = L.lk;
        d.longformer.global_mask = mask;
        d.bf16_kernels = ATTN_BF16_FP32;            /* bf16 q/k: the fp32 kernels (the bound is fp32's) */
        d.n_threads = t_irange(&r, 1, 3);
        t_fill_nan(bo, ATTN_F32, no);
        s = attn_forward(&d, q, k, v, o, lse);
        if (T_CHECK(s == ATTN_OK, "longformer mask #%d: %s", c, attn_status_str(s))) {
            err = lm_err(&o, lse, ro, rl, 1);
            T_CHECK(err <= 1.0, "longformer mask #%d: error %.3g x the bound (B%d Sq%d Sk%d H%d/%d D%d/%d w%d/%d G%d sinks%d "
                    "causal%d dil%d cap%d alibi%d pad%d dens%.2f %s/%s)", c, err, L.B, L.Sq, L.Sk, L.Hq, L.Hkv, L.D, L.Dv,
                    L.wl, L.wr, L.G, L.sinks, L.causal, L.dil != NULL, L.softcap > 0, L.alibi != NULL, pad, dens,
                    t_dt_name(tq), t_dt_name(tkv));
        }
        {   /* another thread count: bitwise */
            attn_desc d2 = d;
            d2.n_threads = d.n_threads % 3 + 1;
            s = attn_forward(&d2, q, k, v, o2, lse2);
            T_CHECK(s == ATTN_OK && memcmp(bo, bo2, no * 4) == 0 && memcmp(lse, lse2, sizeof(float) * (size_t)L.B * L.Hq * L.Sq) == 0,
                    "longformer mask #%d: threads %d vs %d differ", c, d.n_threads, d2.n_threads);
        }
        {   /* global_rows_only: the global rows as the full call wrote them (bitwise), the rest untouched */
            attn_desc d2 = d;
            const size_t nl = (size_t)L.B * L.Hq * L.Sq;
            float *keep = (float *)t_xmalloc(no * 4), *keepl = (float *)t_xmalloc(nl * 4);
            int ok = 1, rows = 0;
            d2.longformer.global_rows_only = 1;
            t_sentinel(bo2, no * 4, 0x3Cu); t_sentinel(lse2, nl * 4, 0x3Du);
            memcpy(keep, bo2, no * 4); memcpy(keepl, lse2, nl * 4);
            s = attn_forward(&d2, q, k, v, o2, lse2);
            for (b = 0; b < L.B; ++b)
                for (i = 0; i < L.Sq; ++i) {
                    const int Lq = pad ? lq[b] : L.Sq, Lk = pad ? lk[b] : L.Sk, p = i + Lk - Lq;
                    const int grow = i < Lq && ((p >= 0 && mask[(size_t)b * L.Sk + p]) || p < L.G);
                    const float *want = grow ? (const float *)bo : keep, *wantl = grow ? lse : keepl;
                    rows += grow;
                    for (h = 0; h < L.Hq; ++h) {
                        const size_t off = (((size_t)b * L.Sq + i) * L.Hq + h) * L.Dv, lo = ((size_t)b * L.Hq + h) * L.Sq + i;
                        ok &= memcmp(want + off, (float *)bo2 + off, 4 * (size_t)L.Dv) == 0 && memcmp(wantl + lo, lse2 + lo, 4) == 0;
                    }
                }
            T_CHECK(s == ATTN_OK && ok, "longformer mask #%d: global_rows_only (%d global rows) differs from the full call "
                    "on global rows or wrote another row", c, rows);
            free(keep); free(keepl);
        }
        free(bq); free(bk); free(bv); free(bo); free(bo2); free(mask); free(ro); free(rl); free(lse); free(lse2);
    }
}


/* ---- attn_backward with a global_mask ----------------------------------------------------
   Against central finite differences (step 1e-4) of a double reference of the forward (the rule
   above; loss = sum over the call's rows of dout . out): per-sequence global masks of different
   counts, padding, GQA, odd lengths, dilations, sinks, global_tokens, softcap, global_rows_only.
   TOLERANCE: |got - fd| <= 2e-4 max(1, max |fd| of the tensor) (fp32 gradients; the step's
   truncation error is ~1e-8). Properties: bitwise equal for another thread count and with a
   caller workspace of exactly attn_backward_workspace_size bytes (one byte less:
   ATTN_ERR_WORKSPACE, outputs untouched); padded rows of dq, dk, dv are 0. */
static int lm_grow(const lm_case *c, int b, int i) {
    const int Lq = c->lq ? c->lq[b] : c->Sq, Lk = c->lk ? c->lk[b] : c->Sk, p = i + Lk - Lq;
    return i < Lq && ((p >= 0 && c->mask[(size_t)b * c->Sk + p]) || p < c->G);
}

/* sum over the rows the call writes of dout . out; arrays dense [B][S][H][D] */
static double lm_loss(const lm_case *c, const double *q, const double *k, const double *v, const double *dout, int rows_only) {
    const int g = c->Hq / c->Hkv;
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)c->Sk), L = 0.0;
    int b, h, i, j, e;
    for (b = 0; b < c->B; ++b)
        for (i = 0; i < c->Sq; ++i)
            for (h = 0; h < c->Hq; ++h) {
                const double *qr = q + (((size_t)b * c->Sq + i) * c->Hq + h) * c->D;
                const double *dr = dout + (((size_t)b * c->Sq + i) * c->Hq + h) * c->Dv;
                double m = -INFINITY, l = 0.0, acc = 0.0;
                if (rows_only && !lm_grow(c, b, i)) continue;
                for (j = 0; j < c->Sk; ++j) {
                    const double *kr = k + (((size_t)b * c->Sk + j) * c->Hkv + h / g) * c->D;
                    double x = 0.0;
                    s[j] = -INFINITY;
                    if (!lm_visible(c, b, h, i, j)) continue;
                    for (e = 0; e < c->D; ++e) x += qr[e] * kr[e];
                    x /= sqrt((double)c->D);
                    if (c->softcap > 0) x = c->softcap * tanh(x / c->softcap);
                    s[j] = x;
                    if (x > m) m = x;
                }
                if (m == -INFINITY) continue;
                for (j = 0; j < c->Sk; ++j) {
                    const double *vr = v + (((size_t)b * c->Sk + j) * c->Hkv + h / g) * c->Dv;
                    double w, dv = 0.0;
                    if (s[j] == -INFINITY) continue;
                    w = exp(s[j] - m);
                    l += w;
                    for (e = 0; e < c->Dv; ++e) dv += dr[e] * vr[e];
                    acc += w * dv;
                }
                L += acc / l;
            }
    free(s);
    return L;
}

/* max over x's elements of |got - fd| / (2e-4 max(1, max |fd|)) */
static double lm_fd_err(const lm_case *c, double *x, size_t n, const attn_tensor *grad, double *const arrs[4], int rows_only) {
    double *fd = (double *)t_xmalloc(sizeof(double) * n), *got = (double *)t_xmalloc(sizeof(double) * n), mx = 1.0, worst = 0.0;
    const double hstep = 1e-4;
    size_t i;
    for (i = 0; i < n; ++i) {
        const double x0 = x[i];
        double lp, lm;
        x[i] = x0 + hstep; lp = lm_loss(c, arrs[0], arrs[1], arrs[2], arrs[3], rows_only);
        x[i] = x0 - hstep; lm = lm_loss(c, arrs[0], arrs[1], arrs[2], arrs[3], rows_only);
        x[i] = x0;
        fd[i] = (lp - lm) / (2 * hstep);
        if (fabs(fd[i]) > mx) mx = fabs(fd[i]);
    }
    t_read(grad, got);
    for (i = 0; i < n; ++i) {
        const double e = fabs(got[i] - fd[i]) / (2e-4 * mx);
        if (!(e <= worst)) worst = e != e ? INFINITY : e;
    }
    free(fd); free(got);
    return worst;
}

static void lm_backward(void) {
    const int n_cases = T_QUICK ? 6 : 14;
    t_rng r = t_rng_seed(3328);
    int cs;
    for (cs = 0; cs < n_cases; ++cs) {
        lm_case L;
        attn_desc d;
        int dil[6], lq[3], lk[3], b, h, i, j, rows_only = cs % 4 == 3;
        unsigned char *mask;
        size_t nq, nk, nv, no, nl, bytes = 0;
        float *bq, *bk, *bv, *bo, *bdo, *lse, *g1[3], *g2[3];
        double *dq_, *dk_, *dv_, *ddo, err[3];
        attn_tensor q, k, v, o, dout, G1[3], G2[3];
        attn_status s;
        memset(&L, 0, sizeof L);
        L.B = t_irange(&r, 1, 3); L.Hkv = t_irange(&r, 1, 2); L.Hq = L.Hkv * t_irange(&r, 1, 2);
        L.Sk = L.Sq = 2 * t_irange(&r, 3, 9) + 1;           /* odd lengths */
        L.D = t_pick(&r, (const int[]){ 3, 8, 5 }, 3); L.Dv = t_pick(&r, (const int[]){ 4, 7 }, 2);
        L.wl = t_irange(&r, 1, 3); L.wr = t_chance(&r, 0.7) ? L.wl : t_irange(&r, 0, 3);
        L.G = t_chance(&r, 0.2) ? 1 : 0;
        L.sinks = t_chance(&r, 0.2) ? 2 : 0;
        if (t_chance(&r, 0.3)) { for (h = 0; h < L.Hq; ++h) dil[h] = 1 + (h / (L.Hq / L.Hkv)) % 2; L.dil = dil; }
        if (t_chance(&r, 0.25)) L.softcap = 3.0;
        for (b = 0; b < L.B; ++b) { lk[b] = b == 0 ? L.Sk : t_irange(&r, 1, L.Sk); lq[b] = lk[b]; }
        L.lq = lq; L.lk = lk;
        mask = (unsigned char *)t_xmalloc((size_t)L.B * L.Sk);
        for (b = 0; b < L.B; ++b)                          /* b global positions in sequence b (+ noise past its end) */
            for (j = 0; j < L.Sk; ++j) mask[(size_t)b * L.Sk + j] = (unsigned char)(j >= lk[b] ? t_chance(&r, 0.5) : t_chance(&r, 0.08 * (b + 1)));
        L.mask = mask;
        nq = (size_t)L.B * L.Sq * L.Hq * L.D; nk = (size_t)L.B * L.Sk * L.Hkv * L.D; nv = (size_t)L.B * L.Sk * L.Hkv * L.Dv;
        no = (size_t)L.B * L.Sq * L.Hq * L.Dv; nl = (size_t)L.B * L.Hq * L.Sq;
        bq = (float *)t_xmalloc(4 * nq); bk = (float *)t_xmalloc(4 * nk); bv = (float *)t_xmalloc(4 * nv);
        bo = (float *)t_xmalloc(4 * no); bdo = (float *)t_xmalloc(4 * no); lse = (float *)t_xmalloc(4 * nl);
        q = attn_tensor_dense(bq, ATTN_F32, L.B, L.Sq, L.Hq, L.D); k = attn_tensor_dense(bk, ATTN_F32, L.B, L.Sk, L.Hkv, L.D);
        v = attn_tensor_dense(bv, ATTN_F32, L.B, L.Sk, L.Hkv, L.Dv); o = attn_tensor_dense(bo, ATTN_F32, L.B, L.Sq, L.Hq, L.Dv);
        dout = attn_tensor_dense(bdo, ATTN_F32, L.B, L.Sq, L.Hq, L.Dv);
        t_fill_normal(&q, &r, 1.0); t_fill_normal(&k, &r, 1.0); t_fill_normal(&v, &r, 1.0); t_fill_normal(&dout, &r, 1.0);
        for (i = 0; i < 3; ++i) {
            const size_t n = i == 0 ? nq : i == 1 ? nk : nv;
            g1[i] = (float *)t_xmalloc(4 * n); g2[i] = (float *)t_xmalloc(4 * n);
            t_sentinel(g1[i], 4 * n, 0x51u); t_sentinel(g2[i], 4 * n, 0x52u);
            G1[i] = i == 0 ? attn_tensor_dense(g1[i], ATTN_F32, L.B, L.Sq, L.Hq, L.D) : attn_tensor_dense(g1[i], ATTN_F32, L.B, L.Sk, L.Hkv, i == 1 ? L.D : L.Dv);
            G2[i] = G1[i]; G2[i].data = g2[i];
        }
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LONGFORMER; d.window_left = L.wl; d.window_right = L.wr; d.global_tokens = L.G; d.sink_tokens = L.sinks;
        d.longformer.dilations = L.dil; d.softcap = (float)L.softcap; d.seqlens_q = lq; d.seqlens_k = lk;
        d.longformer.global_mask = mask; d.longformer.global_rows_only = rows_only; d.n_threads = 1;
        memset(bo, 0, 4 * no); memset(lse, 0, 4 * nl);
        s = attn_forward(&d, q, k, v, o, lse);
        if (T_CHECK(s == ATTN_OK, "longformer mask backward #%d: forward %s", cs, attn_status_str(s))) {
            s = attn_backward(&d, q, k, v, o, dout, lse, G1[0], G1[1], G1[2]);
            T_CHECK(s == ATTN_OK, "longformer mask backward #%d: %s", cs, attn_status_str(s));
        }
        if (s == ATTN_OK) {
            double *arrs[4];
            dq_ = (double *)t_xmalloc(8 * nq); dk_ = (double *)t_xmalloc(8 * nk); dv_ = (double *)t_xmalloc(8 * nv);
            ddo = (double *)t_xmalloc(8 * no);
            t_read(&q, dq_); t_read(&k, dk_); t_read(&v, dv_); t_read(&dout, ddo);
            arrs[0] = dq_; arrs[1] = dk_; arrs[2] = dv_; arrs[3] = ddo;
            err[0] = lm_fd_err(&L, dq_, nq, &G1[0], arrs, rows_only);
            err[1] = lm_fd_err(&L, dk_, nk, &G1[1], arrs, rows_only);
            err[2] = lm_fd_err(&L, dv_, nv, &G1[2], arrs, rows_only);
            T_CHECK(err[0] <= 1 && err[1] <= 1 && err[2] <= 1, "longformer mask backward #%d: dq/dk/dv %.3g/%.3g/%.3g x the "
                    "bound (B%d S%d H%d/%d D%d/%d w%d/%d G%d sinks%d dil%d cap%d rows_only%d)", cs, err[0], err[1], err[2],
                    L.B, L.Sq, L.Hq, L.Hkv, L.D, L.Dv, L.wl, L.wr, L.G, L.sinks, L.dil != NULL, L.softcap > 0, rows_only);
            free(dq_); free(dk_); free(dv_); free(ddo);
            {   /* padded rows 0 */
                int ok = 1, e;
                for (b = 0; b < L.B; ++b)
                    for (i = lq[b]; i < L.Sq; ++i)
                        for (h = 0; h < L.Hq; ++h)
                            for (e = 0; e < L.D; ++e) ok &= g1[0][(((size_t)b * L.Sq + i) * L.Hq + h) * L.D + e] == 0.0f;
                for (b = 0; b < L.B; ++b)
                    for (i = lk[b]; i < L.Sk; ++i)
                        for (h = 0; h < L.Hkv; ++h) {
                            for (e = 0; e < L.D; ++e) ok &= g1[1][(((size_t)b * L.Sk + i) * L.Hkv + h) * L.D + e] == 0.0f;
                            for (e = 0; e < L.Dv; ++e) ok &= g1[2][(((size_t)b * L.Sk + i) * L.Hkv + h) * L.Dv + e] == 0.0f;
                        }
                T_CHECK(ok, "longformer mask backward #%d: a padded row's gradient is not 0", cs);
            }
            {   /* 3 threads and a caller workspace of the queried size: bitwise; one byte less: refused */
                attn_desc d2 = d;
                void *ws;
                int same = 1;
                d2.n_threads = 3;
                T_CHECK(attn_backward_workspace_size(&d2, q, k, v, &bytes) == ATTN_OK && bytes > 0, "longformer mask backward: size");
                ws = t_xmalloc(bytes);
                d2.workspace = ws; d2.workspace_size = bytes - 1;
                s = attn_backward(&d2, q, k, v, o, dout, lse, G2[0], G2[1], G2[2]);
                T_CHECK(s == ATTN_ERR_WORKSPACE && t_sentinel_ok(g2[0], 4 * nq, 0x52u) && t_sentinel_ok(g2[1], 4 * nk, 0x52u),
                        "longformer mask backward #%d: a workspace one byte short: %s or outputs written", cs, attn_status_str(s));
                d2.workspace_size = bytes;
                s = attn_backward(&d2, q, k, v, o, dout, lse, G2[0], G2[1], G2[2]);
                same = s == ATTN_OK && memcmp(g1[0], g2[0], 4 * nq) == 0 && memcmp(g1[1], g2[1], 4 * nk) == 0 && memcmp(g1[2], g2[2], 4 * nv) == 0;
                T_CHECK(same, "longformer mask backward #%d: 3 threads / caller workspace differ (%s)", cs, attn_status_str(s));
                free(ws);
            }
        }
        for (i = 0; i < 3; ++i) { free(g1[i]); free(g2[i]); }
        free(bq); free(bk); free(bv); free(bo); free(bdo); free(lse); free(mask);
    }
}


/* Valid rows depend neither on the padding (NaN there, mask bits there) nor on the other
   sequences: each sequence alone, its padding poisoned, gives the same rows bitwise. The first
   G positions marked == global_tokens = G; an all-zero mask == no mask (other kernels: within
   tolerance). */
static void lm_properties(void) {
    enum { B = 3, S = 40, H = 2, D = 8 };
    static float q[B * S * H * D], k[B * S * H * D], v[B * S * H * D], o[B * S * H * D], o1[S * H * D];
    static float q1[S * H * D], k1[S * H * D], v1[S * H * D], o2[B * S * H * D];
    unsigned char mask[B * S], m1[S];
    int lens[B] = { 40, 23, 9 }, b, i, j, ok = 1;
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, B, S, H, D), tk = attn_tensor_dense(k, ATTN_F32, B, S, H, D);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, B, S, H, D), to = attn_tensor_dense(o, ATTN_F32, B, S, H, D);
    attn_tensor to2 = attn_tensor_dense(o2, ATTN_F32, B, S, H, D);
    attn_desc d;
    t_rng r = t_rng_seed(77);
    double e1, e2, ref[B * S * H * D], got[B * S * H * D];
    t_fill_normal(&tq, &r, 1.0); t_fill_normal(&tk, &r, 1.0); t_fill_normal(&tv, &r, 1.0);
    for (j = 0; j < B * S; ++j) mask[j] = (unsigned char)t_chance(&r, 0.12);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LONGFORMER; d.window_left = d.window_right = 3;
    d.seqlens_q = d.seqlens_k = lens; d.longformer.global_mask = mask;
    T_CHECK(attn_forward(&d, tq, tk, tv, to, NULL) == ATTN_OK, "longformer mask properties: call");
    for (b = 0; b < B; ++b) {
        attn_desc d1 = d;
        const size_t row = (size_t)H * D;
        memcpy(q1, q + b * S * row, sizeof q1); memcpy(k1, k + b * S * row, sizeof k1); memcpy(v1, v + b * S * row, sizeof v1);
        memcpy(m1, mask + b * S, S);
        for (i = lens[b]; i < S; ++i) {
            for (j = 0; j < (int)row; ++j) q1[i * row + j] = k1[i * row + j] = v1[i * row + j] = NAN;
            m1[i] = 1;
        }
        d1.seqlens_q = d1.seqlens_k = &lens[b]; d1.longformer.global_mask = m1;
        T_CHECK(attn_forward(&d1, attn_tensor_dense(q1, ATTN_F32, 1, S, H, D), attn_tensor_dense(k1, ATTN_F32, 1, S, H, D),
                             attn_tensor_dense(v1, ATTN_F32, 1, S, H, D), attn_tensor_dense(o1, ATTN_F32, 1, S, H, D), NULL) == ATTN_OK,
                "longformer mask properties: sequence %d alone", b);
        ok &= memcmp(o1, o + b * S * row, sizeof o1) == 0;
    }
    T_CHECK(ok, "longformer mask: a sequence's rows depend on the padding or on the other sequences");
    /* the first 2 positions marked == global_tokens 2 (both runs masked: the same kernel) */
    {
        attn_desc dg = d;
        unsigned char mg[B * S], mz[B * S];
        memset(mg, 0, sizeof mg); memset(mz, 0, sizeof mz);
        for (b = 0; b < B; ++b) mg[b * S] = mg[b * S + 1] = 1;
        dg.longformer.global_mask = mg;
        T_CHECK(attn_forward(&dg, tq, tk, tv, to, NULL) == ATTN_OK, "mask first 2");
        dg.longformer.global_mask = mz; dg.global_tokens = 2;
        T_CHECK(attn_forward(&dg, tq, tk, tv, to2, NULL) == ATTN_OK, "global_tokens 2, zero mask");
        t_read(&to, ref); t_read(&to2, got);
        e1 = t_max_norm_err(ref, got, (size_t)B * S * H * D);
        dg.longformer.global_mask = NULL;                   /* the tiled exact kernels */
        T_CHECK(attn_forward(&dg, tq, tk, tv, to2, NULL) == ATTN_OK, "global_tokens 2, no mask");
        t_read(&to2, got);
        e2 = t_max_norm_err(ref, got, (size_t)B * S * H * D);
        T_CHECK(e1 <= 2e-6 && e2 <= 2e-6, "longformer mask of the first 2 positions vs global_tokens 2: %.3g (zero mask), "
                "%.3g (no mask)", e1, e2);
    }
}

static void lm_errors(void) {
    enum { B = 1, S = 8, H = 2, D = 4 };
    float q[B * S * H * D], o[B * S * H * D], lse[B * H * S], bias[S], dq[B * S * H * D], dk[B * S * H * D], dv[B * S * H * D];
    unsigned char mask[B * S];
    int cu[2] = { 0, S }, i;
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, B, S, H, D), to = attn_tensor_dense(o, ATTN_F32, B, S, H, D);
    attn_tensor tdq = attn_tensor_dense(dq, ATTN_F32, B, S, H, D), tdk = attn_tensor_dense(dk, ATTN_F32, B, S, H, D);
    attn_tensor tdv = attn_tensor_dense(dv, ATTN_F32, B, S, H, D);
    attn_desc base, d;
    memset(q, 0, sizeof q); memset(mask, 0, sizeof mask); memset(bias, 0, sizeof bias); mask[3] = 1;
    memset(&base, 0, sizeof base);
    base.kind = ATTN_LONGFORMER; base.window_left = base.window_right = 1; base.longformer.global_mask = mask;
    for (i = 0; i < 7; ++i) {
        attn_status want = ATTN_OK, got;
        const char *what = "";
        d = base;
        switch (i) {
        case 0: d.bias = attn_bias_dense(bias, 1, 1, 1, S); want = ATTN_ERR_LONGFORMER_GLOBAL_MASK; what = "mask + bias"; break;
        case 1: d.rope = ATTN_ROPE_HALF; want = ATTN_ERR_LONGFORMER_GLOBAL_MASK; what = "mask + rope"; break;
        case 2: d.cu_seqlens_q = d.cu_seqlens_k = cu; d.varlen_batch = 1; want = ATTN_ERR_LONGFORMER_GLOBAL_MASK; what = "mask + cu_seqlens"; break;
        case 3: d.longformer.global_rows_only = 2; want = ATTN_ERR_LONGFORMER_GLOBAL_ROWS; what = "global_rows_only 2"; break;
        case 4: d.longformer.global_mask = NULL; d.longformer.global_rows_only = 1; want = ATTN_ERR_LONGFORMER_GLOBAL_ROWS;
                what = "global_rows_only without a mask"; break;
        case 5: d.causal = 1; want = ATTN_ERR_LONGFORMER_MASK_BACKWARD; what = "backward with a mask and causal"; break;
        case 6: d.dropout_p = 0.1f; want = ATTN_ERR_LONGFORMER_DROPOUT; what = "mask + dropout"; break;
        }
        t_sentinel(o, sizeof o, 11); t_sentinel(lse, sizeof lse, 12); t_sentinel(dq, sizeof dq, 13);
        if (i == 5) {
            for (i = 0; i < B * H * S; ++i) lse[i] = 0.0f;
            got = attn_backward(&d, tq, tq, tq, tq, tq, lse, tdq, tdk, tdv);
            i = 5;
            t_sentinel(lse, sizeof lse, 12);
        } else got = attn_forward(&d, tq, tq, tq, to, lse);
        t_expect_status(got, want, "longformer mask", what);
        T_CHECK(t_sentinel_ok(o, sizeof o, 11) && t_sentinel_ok(lse, sizeof lse, 12) && t_sentinel_ok(dq, sizeof dq, 13),
                "longformer mask %s: an output was written", what);
        if (i != 5) {
            size_t bytes = 7;
            T_CHECK(attn_workspace_size(&d, tq, tq, tq, &bytes) == want && bytes == 7, "longformer mask %s: size query", what);
        }
    }
}

/* Hugging Face LongformerSelfAttention (tests/fixtures/longformer_hf.py): the local call and the
   global call of docs/porting.md into one out. */
static void lm_hf_fixture(void) {
    const char *F = "longformer_hf.txt";
    double dims[5], lens_d[2], *buf[7], *gm_d, err = 0.0;
    static const char *names[7] = { "query", "key", "value", "query_global", "key_global", "value_global", "out" };
    float *t[7], *out;
    unsigned char *gm;
    int B, S, H, Dh, w, lens[2], a, ok = 1;
    size_t n, i;
    attn_desc d;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 5), "HF Longformer fixture: %s unreadable", F)) return;
    B = (int)dims[0]; S = (int)dims[1]; H = (int)dims[2]; Dh = (int)dims[3]; w = (int)dims[4];
    n = (size_t)B * S * H * Dh;
    if (!T_CHECK(B == 2 && T_FIXTURE(F, "lengths", lens_d, 2), "HF Longformer fixture: lengths")) return;
    lens[0] = (int)lens_d[0]; lens[1] = (int)lens_d[1];
    gm_d = (double *)t_xmalloc(sizeof(double) * (size_t)B * S);
    gm = (unsigned char *)t_xmalloc((size_t)B * S);
    ok &= T_FIXTURE(F, "global_mask", gm_d, (size_t)B * S);
    for (i = 0; i < (size_t)B * S; ++i) gm[i] = gm_d[i] != 0.0;
    for (a = 0; a < 7; ++a) {
        buf[a] = (double *)t_xmalloc(sizeof(double) * n);
        t[a] = (float *)t_xmalloc(sizeof(float) * n);
        ok &= T_FIXTURE(F, names[a], buf[a], n);
        for (i = 0; i < n; ++i) t[a][i] = (float)buf[a][i];
    }
    out = (float *)t_xmalloc(sizeof(float) * n);
    if (T_CHECK(ok, "HF Longformer fixture: arrays")) {
#define LM_T(x) attn_tensor_dense((x), ATTN_F32, B, S, H, Dh)
        memset(&d, 0, sizeof d);                        /* the local call: the window + global keys */
        d.kind = ATTN_LONGFORMER;
        d.window_left = d.window_right = w;             /* attention_window / 2 */
        d.seqlens_q = d.seqlens_k = lens;               /* padded keys masked, padded rows 0 */
        d.longformer.global_mask = gm;                  /* global_attention_mask */
        T_CHECK(attn_forward(&d, LM_T(t[0]), LM_T(t[1]), LM_T(t[2]), LM_T(out), NULL) == ATTN_OK, "HF Longformer local call");
        d.longformer.global_rows_only = 1;              /* the global call: global rows, all keys */
        T_CHECK(attn_forward(&d, LM_T(t[3]), LM_T(t[4]), LM_T(t[5]), LM_T(out), NULL) == ATTN_OK, "HF Longformer global call");
#undef LM_T
        for (i = 0; i < n; ++i) err = fmax(err, fabs(out[i] - buf[6][i]));
        T_CHECK(err <= 2e-5, "HF Longformer fixture: max |attn.h - HF| = %.3g > 2e-5", err);
        printf("      longformer: HF LongformerSelfAttention fixture max |diff| %.3g\n", err);
    }
    for (a = 0; a < 7; ++a) { free(buf[a]); free(t[a]); }
    free(out); free(gm); free(gm_d);
}

/* Hugging Face LongformerSelfAttention's gradients (tests/fixtures/longformer_hf_bwd.py, torch
   autograd): the recipe's two calls forward (local into out, lse1; global_rows_only into out,
   lse2), then attn_backward of each: the local call with dout's global rows zeroed (HF replaces
   those rows of the local attention), the global call with dout. Within 1e-4 of each gradient
   tensor's largest |value| (a relative bound). */
static void lm_hf_bwd_fixture(void) {
    const char *F = "longformer_hf_bwd.txt";
    static const char *names[14] = { "query", "key", "value", "query_global", "key_global", "value_global", "out", "dout",
                                     "dquery", "dkey", "dvalue", "dquery_global", "dkey_global", "dvalue_global" };
    double dims[5], lens_d[3], *buf[14], *gm_d, worst = 0.0;
    float *t[14], *out, *lse1, *lse2, *dout0, *g[6];
    unsigned char *gm;
    int B, S, H, Dh, w, lens[3], a, ok = 1, b, i;
    size_t n, e;
    attn_desc d;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 5), "HF Longformer backward fixture: %s unreadable", F)) return;
    B = (int)dims[0]; S = (int)dims[1]; H = (int)dims[2]; Dh = (int)dims[3]; w = (int)dims[4];
    n = (size_t)B * S * H * Dh;
    if (!T_CHECK(B == 3 && T_FIXTURE(F, "lengths", lens_d, 3), "HF Longformer backward fixture: lengths")) return;
    for (b = 0; b < B; ++b) lens[b] = (int)lens_d[b];
    gm_d = (double *)t_xmalloc(sizeof(double) * (size_t)B * S);
    gm = (unsigned char *)t_xmalloc((size_t)B * S);
    ok &= T_FIXTURE(F, "global_mask", gm_d, (size_t)B * S);
    for (e = 0; e < (size_t)B * S; ++e) gm[e] = gm_d[e] != 0.0;
    for (a = 0; a < 14; ++a) {
        buf[a] = (double *)t_xmalloc(sizeof(double) * n);
        t[a] = (float *)t_xmalloc(sizeof(float) * n);
        ok &= T_FIXTURE(F, names[a], buf[a], n);
        for (e = 0; e < n; ++e) t[a][e] = (float)buf[a][e];
    }
    out = (float *)t_xmalloc(sizeof(float) * n); dout0 = (float *)t_xmalloc(sizeof(float) * n);
    lse1 = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * S); lse2 = (float *)t_xmalloc(sizeof(float) * (size_t)B * H * S);
    for (a = 0; a < 6; ++a) g[a] = (float *)t_xmalloc(sizeof(float) * n);
    if (T_CHECK(ok, "HF Longformer backward fixture: arrays")) {
#define LM_T(x) attn_tensor_dense((x), ATTN_F32, B, S, H, Dh)
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LONGFORMER; d.window_left = d.window_right = w;
        d.seqlens_q = d.seqlens_k = lens; d.longformer.global_mask = gm;
        ok &= attn_forward(&d, LM_T(t[0]), LM_T(t[1]), LM_T(t[2]), LM_T(out), lse1) == ATTN_OK;
        memcpy(dout0, t[7], sizeof(float) * n);     /* the local call's dout: global rows 0 */
        for (b = 0; b < B; ++b)
            for (i = 0; i < S; ++i)
                if (gm[(size_t)b * S + i]) memset(dout0 + ((size_t)b * S + i) * H * Dh, 0, sizeof(float) * (size_t)H * Dh);
        ok &= attn_backward(&d, LM_T(t[0]), LM_T(t[1]), LM_T(t[2]), LM_T(out), LM_T(dout0), lse1, LM_T(g[0]), LM_T(g[1]), LM_T(g[2])) == ATTN_OK;
        d.longformer.global_rows_only = 1;
        ok &= attn_forward(&d, LM_T(t[3]), LM_T(t[4]), LM_T(t[5]), LM_T(out), lse2) == ATTN_OK;
        ok &= attn_backward(&d, LM_T(t[3]), LM_T(t[4]), LM_T(t[5]), LM_T(out), LM_T(t[7]), lse2, LM_T(g[3]), LM_T(g[4]), LM_T(g[5])) == ATTN_OK;
#undef LM_T
        T_CHECK(ok, "HF Longformer backward fixture: calls");
        for (e = 0; e < n; ++e) worst = fmax(worst, fabs(out[e] - buf[6][e]));
        T_CHECK(worst <= 2e-5, "HF Longformer backward fixture: forward max |diff| %.3g", worst);
        for (a = 0; a < 6; ++a) {
            double mx = 0.0, err = 0.0;
            for (e = 0; e < n; ++e) mx = fmax(mx, fabs(buf[8 + a][e]));
            for (e = 0; e < n; ++e) err = fmax(err, fabs(g[a][e] - buf[8 + a][e]));
            T_CHECK(err <= 1e-4 * mx, "HF Longformer backward fixture: %s max |diff| %.3g > 1e-4 x %.3g", names[8 + a], err, mx);
            worst = fmax(worst, err / mx);
        }
        printf("      longformer: HF LongformerSelfAttention gradients fixture max relative |diff| %.3g\n", worst);
    }
    for (a = 0; a < 14; ++a) { free(buf[a]); free(t[a]); }
    for (a = 0; a < 6; ++a) free(g[a]);
    free(out); free(dout0); free(lse1); free(lse2); free(gm); free(gm_d);
}

void test_longformer_mask(void) {
    lm_sweep();
    lm_backward();
    lm_properties();
    lm_errors();
    lm_hf_fixture();
    lm_hf_bwd_fixture();
}
