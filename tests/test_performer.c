/* tests/test_performer.c - ATTN_PERFORMER (FAVOR+) against a naive double-precision reference
   written from shared/ZOO.md, sharing no code with attn.h: x' = d^-1/4 x, u = W x',
   h = |x|^2 / (2 sqrt d), phi(q)_l = exp(u_l - h - max_l u_l) + eps, phi(k_j)_l = exp(u_jl - h_j - s) + eps
   with s the max of u over the keys VISIBLE to the query row (all valid keys; causal: j <= i + Lk - Lq),
   w_ij = phi(q_i) . phi(k_j), out_i = sum_j w_ij v_j / sum_j w_ij, O(n^2) pair by pair (the common
   m^-1/2 cancels). ReLU kernel: phi(x) = relu(c x W^T) + eps, c = 1 or d^-1/4 (relu_normalize). The projection W is checked separately
   against this file's own RNG (the counter hash, Marsaglia's polar method with libm's log, a
   modified Gram-Schmidt QR) and against constants (bitwise: the same in every ISA build).
   Properties: GQA, Lq != Lk, seqlens, f16/bf16 storage, causal == the non-causal result on the
   prefix, attn_step in pieces == causal parallel, threads 1/2/3 bitwise, orthogonality, the
   error against exact softmax attention falling as m grows, and every status with outputs
   untouched. Tolerance: max |err| / max(1, max |ref|) <= 2e-5 + 1.5 x the out dtype's rounding
   (fp32 features: exp of arguments up to ~20 in magnitude, rounded to 6e-8 relative, summed
   over up to 256 features and 300 keys). */
#include "test.h"
#include "fixture.h"

/* ---- the projection, independently ---- */
static uint64_t pf_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static double pf_gauss(uint64_t seed, unsigned stream, uint64_t idx) {
    int a;
    for (a = 0; a < 64; ++a) {
        const uint64_t key = (idx * 64 + (uint64_t)a) * 2 + stream;
        const double v1 = ldexp((double)(pf_mix(seed + 0x9E3779B97F4A7C15ull * (2 * key + 1)) >> 12) + 0.5, -51) - 1.0;
        const double v2 = ldexp((double)(pf_mix(seed + 0x9E3779B97F4A7C15ull * (2 * key + 2)) >> 12) + 0.5, -51) - 1.0;
        const double s = v1 * v1 + v2 * v2;
        if (s < 1.0) return v1 * sqrt(-2.0 * log(s) / s);
    }
    return 0.0;
}
/* W [m][d] in double: per block the modified Gram-Schmidt orthonormalisation of G's columns */
static void pf_draw_ref(uint64_t seed, int m, int d, int fixed, double *W) {
    double *G = (double *)t_xmalloc(sizeof(double) * (size_t)d * d);
    int b, i, t, c;
    for (b = 0; b * d < m; ++b) {
        for (i = 0; i < d; ++i)
            for (t = 0; t < d; ++t) G[i * d + t] = pf_gauss(seed, 0, ((uint64_t)b * d + i) * d + t);
        for (c = 0; c < d; ++c) {          /* column c of G: orthogonalise against the earlier ones */
            double nrm = 0.0;
            int c2;
            for (c2 = 0; c2 < c; ++c2) {
                double dot = 0.0;
                for (i = 0; i < d; ++i) dot += G[i * d + c2] * G[i * d + c];
                for (i = 0; i < d; ++i) G[i * d + c] -= dot * G[i * d + c2];
            }
            for (i = 0; i < d; ++i) nrm += G[i * d + c] * G[i * d + c];
            for (i = 0; i < d; ++i) G[i * d + c] /= sqrt(nrm);
        }
        for (i = 0; i < d && b * d + i < m; ++i) {
            const int r = b * d + i;
            double nrm = 0.0;
            for (t = 0; t < d; ++t) { const double x = pf_gauss(seed, 1, (uint64_t)r * d + t); nrm += x * x; }
            nrm = fixed ? sqrt((double)d) : sqrt(nrm);
            for (t = 0; t < d; ++t) W[(size_t)r * d + t] = nrm * G[t * d + i];
        }
    }
    free(G);
}

static void test_performer_draw(void) {
    static const int ms[4] = { 20, 7, 64, 100 }, ds[4] = { 8, 16, 32, 48 };
    /* attn_performer_draw({features 20, seed 12345}, 8): W[0], W[9], W[77], W[159] (float bits) */
    static const uint32_t want[4] = { 0xBF052118u, 0x3EECCD2Au, 0xBF322C58u, 0xBF8FF1F0u };
    attn_performer_params p;
    int c;
    for (c = 0; c < 8; ++c) {
        const int m = ms[c % 4], d = ds[c % 4], fixed = c / 4;
        float *W = (float *)t_xmalloc(sizeof(float) * (size_t)m * d);
        double *R = (double *)t_xmalloc(sizeof(double) * (size_t)m * d), err = 0.0, orth = 0.0;
        int i, j, t;
        memset(&p, 0, sizeof p);
        p.features = m; p.seed = 1000u + (unsigned)c * 77u; p.fixed_norms = fixed;
        T_CHECK(attn_performer_draw(&p, d, W) == ATTN_OK, "performer draw");
        pf_draw_ref(p.seed, m, d, fixed, R);
        for (i = 0; i < m * d; ++i) err = fmax(err, fabs(W[i] - R[i]) / sqrt((double)d));
        T_CHECK(err < 1e-5, "performer draw m %d d %d fixed %d: W differs from the reference by %.3g", m, d, fixed, err);
        if (fixed)   /* W W^T = d I within each block of d rows */
            for (i = 0; i < m; ++i)
                for (j = i - i % d; j < m && j < i - i % d + d; ++j) {
                    double s = 0.0;
                    for (t = 0; t < d; ++t) s += (double)W[i * d + t] * W[j * d + t];
                    orth = fmax(orth, fabs(s / d - (i == j ? 1.0 : 0.0)));
                }
        T_CHECK(orth < 1e-5, "performer draw: W W^T / d off the identity by %.3g within a block", orth);
        free(W);
        free(R);
    }
    {   /* the same bits in every build (scalar, AVX2, AVX-512, NEON; any compiler) */
        float W[20 * 8];
        memset(&p, 0, sizeof p);
        p.features = 20; p.seed = 12345;
        attn_performer_draw(&p, 8, W);
        T_CHECK(t_f32_bits(W[0]) == want[0] && t_f32_bits(W[9]) == want[1] && t_f32_bits(W[77]) == want[2] &&
                t_f32_bits(W[159]) == want[3], "performer draw: W differs from the recorded bits");
    }
}

/* ---- the forward, naively ---- */
/* relu: 0 the softmax kernel, 1 the ReLU kernel, 2 the ReLU kernel with relu_normalize (x d^-1/4) */
static void pf_feat(const double *x, const float *W, int m, int D, int relu, double s_key, int is_key, double eps, double *u) {
    const double dn = relu == 1 ? 1.0 : pow((double)D, -0.25);
    double h = 0.0, mx = -HUGE_VAL;
    int l, t;
    for (t = 0; t < D; ++t) h += x[t] * x[t];
    h /= 2.0 * sqrt((double)D);
    for (l = 0; l < m; ++l) {
        u[l] = 0.0;
        for (t = 0; t < D; ++t) u[l] += W[(size_t)l * D + t] * dn * x[t];
        if (u[l] > mx) mx = u[l];
    }
    for (l = 0; l < m; ++l) u[l] = relu ? (u[l] > 0 ? u[l] : 0.0) + eps : exp(u[l] - h - (is_key ? s_key : mx)) + eps;
}
static double pf_umax(const double *x, const float *W, int m, int D) {
    double mx = -HUGE_VAL;
    int l, t;
    for (l = 0; l < m; ++l) {
        double u = 0.0;
        for (t = 0; t < D; ++t) u += W[(size_t)l * D + t] * pow((double)D, -0.25) * x[t];
        if (u > mx) mx = u;
    }
    return mx;
}

typedef struct { int B, Sq, Sk, Hq, Hkv, D, Dv, m, causal, relu; double eps; attn_dtype tq, tkv, to; } pf_shape;
typedef struct { void *q, *k, *v, *out; attn_tensor tq, tk, tv, to; } pf_bufs;

static void pf_alloc(pf_bufs *m, const pf_shape *s, t_rng *r, double sigma) {
    m->q = t_xmalloc((size_t)s->B * s->Sq * s->Hq * s->D * t_dt_size(s->tq));
    m->k = t_xmalloc((size_t)s->B * s->Sk * s->Hkv * s->D * t_dt_size(s->tkv));
    m->v = t_xmalloc((size_t)s->B * s->Sk * s->Hkv * s->Dv * t_dt_size(s->tkv));
    m->out = t_xmalloc((size_t)s->B * s->Sq * s->Hq * s->Dv * t_dt_size(s->to));
    m->tq = attn_tensor_dense(m->q, s->tq, s->B, s->Sq, s->Hq, s->D);
    m->tk = attn_tensor_dense(m->k, s->tkv, s->B, s->Sk, s->Hkv, s->D);
    m->tv = attn_tensor_dense(m->v, s->tkv, s->B, s->Sk, s->Hkv, s->Dv);
    m->to = attn_tensor_dense(m->out, s->to, s->B, s->Sq, s->Hq, s->Dv);
    t_fill_normal(&m->tq, r, sigma);
    t_fill_normal(&m->tk, r, sigma);
    t_fill_normal(&m->tv, r, 1.0);
}
static void pf_free(pf_bufs *m) { free(m->q); free(m->k); free(m->v); free(m->out); }

/* out [B, Sq, Hq, Dv] in double; W [m][D] */
static void pf_ref(const pf_shape *s, const pf_bufs *m, const float *W, const int *lq, const int *lk, double *out) {
    const int g = s->Hq / s->Hkv;
    double *x = (double *)t_xmalloc(sizeof(double) * s->D), *pq = (double *)t_xmalloc(sizeof(double) * s->m);
    double *pk = (double *)t_xmalloc(sizeof(double) * s->m), *acc = (double *)t_xmalloc(sizeof(double) * s->Dv);
    double *umax = (double *)t_xmalloc(sizeof(double) * (s->Sk + 1));
    int b, h, i, j, d, l;
    for (b = 0; b < s->B; ++b)
        for (h = 0; h < s->Hq; ++h) {
            const int Lq = lq ? lq[b] : s->Sq, Lk = lk ? lk[b] : s->Sk;
            for (j = 0; j < Lk; ++j) {
                for (d = 0; d < s->D; ++d) x[d] = t_load(&m->tk, b, j, h / g, d);
                umax[j] = pf_umax(x, W, s->m, s->D);
            }
            for (i = 0; i < s->Sq; ++i) {
                double *o = out + (((size_t)b * s->Sq + i) * s->Hq + h) * s->Dv, den = 0.0, smax = -HUGE_VAL;
                const long long last = s->causal ? (long long)i + Lk - Lq : (long long)Lk - 1;
                for (d = 0; d < s->Dv; ++d) { acc[d] = 0.0; o[d] = 0.0; }
                if (i >= Lq || last < 0) continue;
                for (j = 0; j < Lk && j <= last; ++j) smax = fmax(smax, umax[j]);     /* s: the visible keys */
                for (d = 0; d < s->D; ++d) x[d] = t_load(&m->tq, b, i, h, d);
                pf_feat(x, W, s->m, s->D, s->relu, 0.0, 0, s->eps, pq);
                for (j = 0; j < Lk && j <= last; ++j) {
                    double wgt = 0.0;
                    for (d = 0; d < s->D; ++d) x[d] = t_load(&m->tk, b, j, h / g, d);
                    pf_feat(x, W, s->m, s->D, s->relu, smax, 1, s->eps, pk);
                    for (l = 0; l < s->m; ++l) wgt += pq[l] * pk[l];
                    den += wgt;
                    for (d = 0; d < s->Dv; ++d) acc[d] += wgt * t_load(&m->tv, b, j, h / g, d);
                }
                for (d = 0; d < s->Dv; ++d) o[d] = acc[d] / den;
            }
        }
    free(x); free(pq); free(pk); free(acc); free(umax);
}

static double pf_tol(attn_dtype out) { return 2e-5 + 1.5 * t_dt_rel(out); }
static double g_pf_worst = 0.0;

static void pf_desc(attn_desc *d, const pf_shape *s, unsigned long long seed) {
    memset(d, 0, sizeof *d);
    d->kind = ATTN_PERFORMER;
    d->causal = s->causal;
    d->performer.features = s->m == 256 ? 0 : s->m;
    d->performer.kernel = s->relu ? ATTN_PERFORMER_RELU : ATTN_PERFORMER_SOFTMAX;
    d->performer.relu_normalize = s->relu == 2;
    d->performer.eps = s->eps == (s->relu ? 1e-3 : 1e-6) ? 0.0f : s->eps == 0.0 ? ATTN_EPS_ZERO : (float)s->eps;
    d->performer.seed = seed;
}

static void test_performer_sweep(void) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    const int n_cases = T_QUICK ? 16 : 60;
    t_rng r = t_rng_seed(2021);
    int c;
    for (c = 0; c < n_cases; ++c) {
        pf_shape s;
        pf_bufs m;
        attn_desc d;
        int lq[3], lk[3], b, use_len, own;
        double *ref, *got, err;
        float *W;
        size_t n;
        attn_status st;
        s.B = t_irange(&r, 1, 2); s.Hkv = t_irange(&r, 1, 2); s.Hq = s.Hkv * t_irange(&r, 1, 3);
        s.Sq = t_chance(&r, 0.3) ? t_irange(&r, 1, 4) : t_irange(&r, 1, 150);
        s.Sk = t_chance(&r, 0.5) ? s.Sq : t_irange(&r, 1, 200);
        s.D = t_pick(&r, (const int[]){ 1, 4, 16, 17, 32 }, 5);
        s.Dv = t_pick(&r, (const int[]){ 1, 5, 16, 31 }, 4);
        s.m = t_pick(&r, (const int[]){ 1, 7, 16, 40, 256 }, 5);
        s.causal = t_irange(&r, 0, 1);
        s.relu = t_chance(&r, 0.25) ? t_irange(&r, 1, 2) : 0;
        s.eps = s.relu ? 1e-3 : 1e-6;
        if (t_chance(&r, 0.3)) s.eps = t_chance(&r, 0.5) ? 1e-3 : 0.1;
        if (!s.relu && t_chance(&r, 0.15)) s.eps = 0.0;         /* ATTN_EPS_ZERO: an exact 0 */
        s.tq = dts[t_irange(&r, 0, 2)]; s.tkv = dts[t_irange(&r, 0, 2)]; s.to = dts[t_irange(&r, 0, 2)];
        if (c < 16) s.tq = s.tkv = s.to = ATTN_F32;
        pf_alloc(&m, &s, &r, 1.0);
        pf_desc(&d, &s, (unsigned long long)c * 31u);
        use_len = t_chance(&r, 0.3);
        for (b = 0; b < s.B; ++b) { lq[b] = t_irange(&r, 0, s.Sq); lk[b] = t_irange(&r, 0, s.Sk); }
        if (use_len) { d.seqlens_q = lq; d.seqlens_k = lk; }
        d.n_threads = t_irange(&r, 1, 3);
        W = (float *)t_xmalloc(sizeof(float) * (size_t)s.m * s.D);
        T_CHECK(attn_performer_draw(&d.performer, s.D, W) == ATTN_OK, "performer draw");
        own = t_chance(&r, 0.3);
        if (own) {       /* the caller's projection: the same W, so the same reference */
            d.performer.projection = W; d.performer.projection_dim = s.D; d.performer.seed = 999;
            d.performer.features = s.m;          /* a caller's W: its rows are always given */
        }
        n = (size_t)s.B * s.Sq * s.Hq * s.Dv;
        ref = (double *)t_xmalloc(n * sizeof(double));
        got = (double *)t_xmalloc(n * sizeof(double));
        pf_ref(&s, &m, W, use_len ? lq : NULL, use_len ? lk : NULL, ref);
        t_fill_nan(m.out, s.to, n);
        st = attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL);
        if (T_CHECK(st == ATTN_OK, "performer sweep #%d: %s", c, attn_status_str(st))) {
            t_read(&m.to, got);
            err = t_max_norm_err(ref, got, n);
            if (err > g_pf_worst && s.to == ATTN_F32) g_pf_worst = err;
            T_CHECK(err <= pf_tol(s.to),
                    "performer sweep #%d: err %.3g > %.3g (B%d Sq%d Sk%d Hq%d Hkv%d D%d Dv%d m%d causal%d relu%d eps %g len%d own%d q %s kv %s out %s)",
                    c, err, pf_tol(s.to), s.B, s.Sq, s.Sk, s.Hq, s.Hkv, s.D, s.Dv, s.m, s.causal, s.relu, s.eps, use_len,
                    own, t_dt_name(s.tq), t_dt_name(s.tkv), t_dt_name(s.to));
        }
        free(W); free(ref); free(got);
        pf_free(&m);
    }
}

/* causal row i == the non-causal forward over keys [0, i + Lk - Lq]: the stabiliser is the max over
   the visible keys, so the prefix result is the same function (up to rounding) */
static void test_performer_prefix(void) {
    pf_shape s = { 1, 90, 100, 2, 1, 16, 8, 64, 1, 0, 1e-3, ATTN_F32, ATTN_F32, ATTN_F32 };
    pf_bufs m;
    t_rng r = t_rng_seed(31);
    attn_desc d;
    int i, e, worst_i = -1;
    double worst = 0.0;
    float *full;
    pf_alloc(&m, &s, &r, 1.5);
    pf_desc(&d, &s, 7);
    T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer prefix: causal");
    full = (float *)t_xmalloc(sizeof(float) * 90 * 2 * 8);
    memcpy(full, m.out, sizeof(float) * 90 * 2 * 8);
    d.causal = 0;
    for (i = 0; i < 90; i += 7) {
        attn_tensor q = m.tq, k = m.tk, v = m.tv, o = m.to;
        float row[2 * 8];
        q.data = (float *)m.q + (size_t)i * 2 * 16; q.seq = 1;
        k.seq = v.seq = i + 10 + 1;
        o.data = row; o.seq = 1;
        T_CHECK(attn_forward(&d, q, k, v, o, NULL) == ATTN_OK, "performer prefix: non-causal");
        for (e = 0; e < 16; ++e) {
            const double x = fabs((double)row[e] - full[(size_t)i * 16 + e]);
            if (x > worst) { worst = x; worst_i = i; }
        }
    }
    T_CHECK(worst < 1e-5, "performer: causal row %d differs from the non-causal prefix result by %.3g", worst_i, worst);
    free(full);
    pf_free(&m);
}

/* 1, 2 and 3 threads and a caller workspace: bitwise the same output */
static void test_performer_threads(void) {
    pf_shape s = { 2, 130, 130, 4, 2, 32, 24, 96, 0, 0, 1e-6, ATTN_F32, ATTN_F16, ATTN_F32 };
    pf_bufs m;
    t_rng r = t_rng_seed(8);
    attn_desc d;
    size_t n = (size_t)2 * 130 * 4 * 24, bytes = 0, mallocs;
    float *first = (float *)t_xmalloc(n * sizeof(float));
    void *ws;
    int th, causal;
    pf_alloc(&m, &s, &r, 1.0);
    for (causal = 0; causal <= 1; ++causal) {
        s.causal = causal;
        for (th = 1; th <= 3; ++th) {
            pf_desc(&d, &s, 5);
            d.n_threads = th;
            T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer threads %d", th);
            if (th == 1) memcpy(first, m.out, n * sizeof(float));
            else T_CHECK(memcmp(first, m.out, n * sizeof(float)) == 0, "performer causal %d: %d threads differ from 1", causal, th);
        }
        pf_desc(&d, &s, 5);
        d.n_threads = 2;
        T_CHECK(attn_workspace_size(&d, m.tq, m.tk, m.tv, &bytes) == ATTN_OK && bytes > 0, "performer workspace size");
        ws = t_xmalloc(bytes);
        d.workspace = ws; d.workspace_size = bytes;
        memset(m.out, 0, n * sizeof(float));
        mallocs = t_attn_mallocs;
        T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer with a workspace");
        T_CHECK(t_attn_mallocs == mallocs, "performer with a caller workspace allocated");
        T_CHECK(memcmp(first, m.out, n * sizeof(float)) == 0, "performer: the caller workspace changed the result");
        free(ws);
    }
    free(first);
    pf_free(&m);
}

/* attn_step over pieces of random sizes (1 token, a few, more than a chunk; the state carried
   between them, W drawn once into it) == the causal parallel form == the reference */
static void test_performer_step(void) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng r = t_rng_seed(77);
    int c;
    for (c = 0; c < (T_QUICK ? 3 : 8); ++c) {
        pf_shape s;
        pf_bufs m;
        attn_desc d;
        attn_state st;
        size_t floats = 0, n;
        float *sbuf, *W;
        double *ref, *got, *par;
        int t0, ok = 1;
        s.B = t_irange(&r, 1, 2); s.Hkv = t_irange(&r, 1, 2); s.Hq = s.Hkv * t_irange(&r, 1, 2);
        s.Sq = s.Sk = t_irange(&r, 1, 200);
        s.D = t_pick(&r, (const int[]){ 4, 16, 33 }, 3); s.Dv = t_pick(&r, (const int[]){ 8, 19 }, 2);
        s.m = t_pick(&r, (const int[]){ 16, 50 }, 2); s.causal = 1; s.relu = c == 2; s.eps = s.relu ? 1e-3 : 1e-6;
        s.tq = dts[c % 3]; s.tkv = dts[(c / 3) % 3]; s.to = ATTN_F32;
        pf_alloc(&m, &s, &r, 1.0);
        pf_desc(&d, &s, 100u + (unsigned)c);
        d.n_threads = t_irange(&r, 1, 2);
        n = (size_t)s.B * s.Sq * s.Hq * s.Dv;
        ref = (double *)t_xmalloc(n * sizeof(double));
        got = (double *)t_xmalloc(n * sizeof(double));
        par = (double *)t_xmalloc(n * sizeof(double));
        W = (float *)t_xmalloc(sizeof(float) * (size_t)s.m * s.D);
        attn_performer_draw(&d.performer, s.D, W);
        pf_ref(&s, &m, W, NULL, NULL, ref);
        T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer step: parallel");
        t_read(&m.to, par);
        T_CHECK(attn_state_size(&d, m.tq, m.tk, m.tv, &floats) == ATTN_OK &&
                floats == (size_t)s.m * s.D + 4 + (size_t)s.B * s.Hkv * ((size_t)s.m * s.Dv + s.m + s.Dv + 1),
                "performer state size %lu", (unsigned long)floats);
        sbuf = (float *)t_xmalloc((floats + 3) * sizeof(float));
        t_fill_nan(sbuf, ATTN_F32, floats + 3);
        T_CHECK(attn_state_init(&d, m.tq, m.tk, m.tv, sbuf, floats + 3, &st) == ATTN_OK && st.pos == 0, "performer state init");
        t_fill_nan(m.out, s.to, n);
        for (t0 = 0; t0 < s.Sq && ok;) {
            const int want_len = t_chance(&r, 0.5) ? 1 : t_irange(&r, 1, 90);
            const int len = want_len < s.Sq - t0 ? want_len : s.Sq - t0;
            const attn_tensor q = t_seq_view(m.tq, t0, len), k = t_seq_view(m.tk, t0, len);
            const attn_tensor v = t_seq_view(m.tv, t0, len), o = t_seq_view(m.to, t0, len);
            ok = T_CHECK(attn_step(&d, q, k, v, &st, o) == ATTN_OK, "performer step at %d (+%d)", t0, len);
            t0 += len;
        }
        T_CHECK(st.pos == s.Sq, "performer state pos %lld after %d tokens", st.pos, s.Sq);
        T_CHECK(isnan(sbuf[floats]) && isnan(sbuf[floats + 2]), "performer step wrote past the state's floats");
        T_CHECK(memcmp(sbuf, W, sizeof(float) * (size_t)s.m * s.D) == 0, "performer: the state's cached W is not the drawn one");
        t_read(&m.to, got);
        T_CHECK(t_max_norm_err(ref, got, n) <= pf_tol(s.to), "performer step case %d: err %.3g vs the reference", c,
                t_max_norm_err(ref, got, n));
        T_CHECK(t_max_norm_err(par, got, n) <= 2e-5, "performer step case %d: err %.3g vs the parallel form", c,
                t_max_norm_err(par, got, n));
        if (c == 0) {      /* the state caches W per (seed, fixed_norms): a new seed redraws it */
            attn_tensor q = m.tq, k = m.tk, v = m.tv, o = m.to;
            q.seq = k.seq = v.seq = o.seq = 1;
            d.performer.seed += 1; d.performer.fixed_norms = 1;
            T_CHECK(attn_step(&d, q, k, v, &st, o) == ATTN_OK, "performer step with a new seed");
            attn_performer_draw(&d.performer, s.D, W);
            T_CHECK(memcmp(sbuf, W, sizeof(float) * (size_t)s.m * s.D) == 0, "performer: a new seed did not redraw the state's W");
        }
        free(sbuf); free(W); free(ref); free(got); free(par);
        pf_free(&m);
    }
}

/* FAVOR+ estimates softmax attention without bias in the numerator and denominator, with Monte
   Carlo error ~ 1/sqrt(m): from m = 64 to 1024 (16x the features) the error should fall about 4x.
   Asserted: mean error over 4 seeds at m = 1024 < 0.6 x the one at m = 64 (a 40% margin covers the
   seed-to-seed spread of a 4-sample mean and the ratio estimator's O(1/m) bias), and m = 256 below
   m = 16. Inputs at sigma 0.5 (logits of order 1, as in a trained model). */
static void test_performer_converges(void) {
    static const int ms[4] = { 16, 64, 256, 1024 };
    pf_shape s = { 1, 48, 64, 1, 1, 16, 8, 16, 0, 0, 1e-6, ATTN_F32, ATTN_F32, ATTN_F32 };
    pf_bufs m;
    t_rng r = t_rng_seed(4242);
    double exact[48 * 8], got[48 * 8], err[4] = { 0, 0, 0, 0 };
    attn_desc d;
    int a, i, j, e, seed;
    pf_alloc(&m, &s, &r, 0.5);
    for (i = 0; i < 48; ++i) {          /* exact softmax attention, scale 1/sqrt(d), in double */
        double w[64], mx = -HUGE_VAL, den = 0.0;
        for (j = 0; j < 64; ++j) {
            w[j] = 0.0;
            for (e = 0; e < 16; ++e) w[j] += t_load(&m.tq, 0, i, 0, e) * t_load(&m.tk, 0, j, 0, e) / 4.0;
            mx = fmax(mx, w[j]);
        }
        for (j = 0; j < 64; ++j) { w[j] = exp(w[j] - mx); den += w[j]; }
        for (e = 0; e < 8; ++e) {
            exact[i * 8 + e] = 0.0;
            for (j = 0; j < 64; ++j) exact[i * 8 + e] += w[j] * t_load(&m.tv, 0, j, 0, e) / den;
        }
    }
    for (a = 0; a < 4; ++a)
        for (seed = 0; seed < 4; ++seed) {
            double se = 0.0;
            s.m = ms[a];
            pf_desc(&d, &s, 5000u + (unsigned)seed);
            T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer m %d", ms[a]);
            t_read(&m.to, got);
            for (i = 0; i < 48 * 8; ++i) se += (got[i] - exact[i]) * (got[i] - exact[i]);
            err[a] += sqrt(se / (48 * 8)) / 4.0;
        }
    printf("      performer: RMS error vs exact softmax attention, m = 16/64/256/1024: %.4f %.4f %.4f %.4f\n", err[0],
           err[1], err[2], err[3]);
    T_CHECK(err[3] < 0.6 * err[1], "performer: error at m = 1024 (%.4g) not below 0.6 x m = 64 (%.4g)", err[3], err[1]);
    T_CHECK(err[2] < err[0], "performer: error at m = 256 (%.4g) not below m = 16 (%.4g)", err[2], err[0]);
    T_CHECK(err[3] < 0.05, "performer: error at m = 1024 is %.4g", err[3]);
    pf_free(&m);
}

static int pf_expect(attn_status got, attn_status want, const char *what) { return t_expect_status(got, want, "performer", what); }

static void test_performer_errors(void) {
    float q[2 * 3 * 2 * 4], k[2 * 3 * 1 * 4], v[2 * 3 * 1 * 5], out[2 * 3 * 2 * 5], sbuf[400], lse[12], W[8 * 4], Wd[8 * 4];
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 2, 3, 2, 4), tk = attn_tensor_dense(k, ATTN_F32, 2, 3, 1, 4);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 2, 3, 1, 5), to = attn_tensor_dense(out, ATTN_F32, 2, 3, 2, 5);
    attn_desc d, base;
    attn_state st, good;
    attn_performer_params pp;
    size_t floats = 0;
    int i;
    memset(q, 0, sizeof q); memset(k, 0, sizeof k); memset(v, 0, sizeof v);
    memset(&base, 0, sizeof base);
    base.kind = ATTN_PERFORMER;
    base.performer.features = 8;
    T_CHECK(attn_state_size(&base, tq, tk, tv, &floats) == ATTN_OK && floats == 8 * 4 + 4 + 2 * (8 * 5 + 8 + 5 + 1),
            "performer state floats %lu", (unsigned long)floats);
    T_CHECK(attn_state_init(&base, tq, tk, tv, sbuf, floats, &good) == ATTN_OK, "performer state init");
    for (i = 0; i < (int)(sizeof W / sizeof W[0]); ++i) W[i] = 0.25f;
    for (i = 0; i < 33; ++i) {
        attn_status want = ATTN_OK, got;
        const char *what = "";
        int op = 0;
        float *lp = NULL;
        attn_tensor o = to;
        d = base; st = good;
        memset(&pp, 0, sizeof pp);
        memcpy(Wd, W, sizeof W);
        switch (i) {
        case 0: d.performer.features = -1; want = ATTN_ERR_PERFORMER_FEATURES; what = "features < 0"; break;
        case 1: d.performer.features = 65537; want = ATTN_ERR_PERFORMER_FEATURES; what = "features > 65536"; break;
        case 2: d.performer.eps = -1e-6f; want = ATTN_ERR_PERFORMER_EPS; what = "eps < 0"; break;
        case 3: d.performer.eps = NAN; want = ATTN_ERR_PERFORMER_EPS; what = "eps nan"; break;
        case 4: d.performer.kernel = 2; want = ATTN_ERR_PERFORMER_OPTIONS; what = "kernel"; break;
        case 5: d.performer.fixed_norms = -1; want = ATTN_ERR_PERFORMER_OPTIONS; what = "fixed_norms"; break;
        case 6: d.performer.projection = W; d.performer.projection_dim = 5; want = ATTN_ERR_PERFORMER_PROJECTION_DIM; what = "projection_dim"; break;
        case 7: d.performer.projection = W; want = ATTN_ERR_PERFORMER_PROJECTION_DIM; what = "projection_dim 0"; break;
        case 8: Wd[31] = INFINITY; d.performer.projection = Wd; d.performer.projection_dim = 4; want = ATTN_ERR_PERFORMER_PROJECTION; what = "projection inf"; break;
        case 9: lp = lse; want = ATTN_ERR_KIND_LSE; what = "lse"; break;
        case 10: d.scale = 0.5f; want = ATTN_ERR_KIND_OPTION; what = "scale"; break;
        case 11: d.linear.eps = -1.0f; want = ATTN_OK; what = "linear.eps is not read"; break;
        case 12: op = 1; d.performer.features = -3; want = ATTN_ERR_PERFORMER_FEATURES; what = "step features"; break;
        case 13: op = 1; st.data = NULL; want = ATTN_ERR_STATE_NULL; what = "step state data"; break;
        case 14: op = 2; want = ATTN_ERR_STATE_NULL; what = "step state NULL"; break;
        case 15: op = 1; st.size = floats - 1; want = ATTN_ERR_STATE_SIZE; what = "step state size"; break;
        case 16: op = 1; d.performer.features = 9; want = ATTN_ERR_STATE_MISMATCH; what = "step state of 8 features used with 9"; break;
        case 17: op = 1; st.kind = ATTN_LINEAR; want = ATTN_ERR_STATE_MISMATCH; what = "state kind"; break;
        case 18: op = 3; want = ATTN_ERR_PERFORMER_DRAW_NULL; what = "draw params NULL"; break;
        case 19: op = 4; want = ATTN_ERR_PERFORMER_DRAW_NULL; what = "draw W NULL"; break;
        case 20: op = 5; pp.features = 8; want = ATTN_ERR_PERFORMER_DRAW_DIM; what = "draw dim 0"; break;
        case 21: op = 6; pp.features = -8; want = ATTN_ERR_PERFORMER_FEATURES; what = "draw features"; break;
        case 22: op = 6; pp.features = 8; pp.fixed_norms = 3; want = ATTN_ERR_PERFORMER_OPTIONS; what = "draw fixed_norms"; break;
        case 23: op = 6; pp.features = 8; pp.eps = -INFINITY; want = ATTN_ERR_PERFORMER_EPS; what = "draw eps"; break;
        case 24: o.dim = 4; want = ATTN_ERR_OUT_SHAPE; what = "out dim"; break;
        case 25: op = 7; want = ATTN_ERR_KIND_OP; what = "decode"; break;
        case 26: op = 1; d.performer.features = 7; want = ATTN_ERR_STATE_MISMATCH; what = "step state of 8 features used with 7"; break;
        case 27: op = 1; d.performer.kernel = ATTN_PERFORMER_RELU; want = ATTN_ERR_STATE_MISMATCH; what = "step state of the softmax kernel used with ReLU"; break;
        /* issue 27 item 3: a caller's W of 8 rows with features 0 read 256 rows (a default) */
        case 28: d.performer.features = 0; d.performer.projection = W; d.performer.projection_dim = 4;
                 want = ATTN_ERR_PERFORMER_PROJECTION_FEATURES; what = "projection with features 0"; break;
        case 30: d.performer.relu_normalize = 2; want = ATTN_ERR_PERFORMER_RELU_NORMALIZE; what = "relu_normalize 2"; break;
        case 31: d.performer.eps = ATTN_EPS_ZERO; want = ATTN_OK; what = "eps ATTN_EPS_ZERO"; break;
        case 32: d.performer.eps = -2.0f; want = ATTN_ERR_PERFORMER_EPS; what = "eps -2 (only ATTN_EPS_ZERO is negative)"; break;
        case 29: op = 8; d.performer.features = 0; d.performer.projection = W; d.performer.projection_dim = 4;
                 want = ATTN_ERR_PERFORMER_PROJECTION_FEATURES; what = "state size: projection with features 0"; break;
        }
        t_sentinel(out, sizeof out, 21);
        t_sentinel(sbuf, sizeof sbuf, 23);
        t_sentinel(Wd + 0, 4, 25);
        if (op == 0) got = attn_forward(&d, tq, tk, tv, o, lp);
        else if (op == 1) got = attn_step(&d, tq, tk, tv, &st, o);
        else if (op == 2) got = attn_step(&d, tq, tk, tv, NULL, o);
        else if (op == 3) got = attn_performer_draw(NULL, 4, Wd);
        else if (op == 4) got = attn_performer_draw(&pp, 4, NULL);
        else if (op == 5) got = attn_performer_draw(&pp, 0, Wd);
        else if (op == 6) got = attn_performer_draw(&pp, 4, Wd);
        else if (op == 8) { size_t n = 12345; got = attn_state_size(&d, tq, tk, tv, &n); T_CHECK(n == 12345, "performer %s: size written", what); }
        else got = attn_decode(&d, tq, NULL, o, NULL);
        if (want == ATTN_OK) { T_CHECK(got == ATTN_OK, "performer %s: %s", what, attn_status_str(got)); continue; }
        pf_expect(got, want, what);
        T_CHECK(t_sentinel_ok(out, sizeof out, 21) && t_sentinel_ok(sbuf, sizeof sbuf, 23) && t_sentinel_ok(Wd, 4, 25),
                "performer %s: an output, the state or W was written", what);
    }
}

/* performer-pytorch's FastAttention (tests/fixtures/performer_pytorch_ref.py), non-causal, on a padded
   batch, through the documented recipe (docs/porting.md): its W as projection, eps 1e-4 (softmax
   kernel) / relu_normalize 1 (ReLU kernel), v zeroed at padded positions and NO seqlens_k (its mask
   only zeroes v: padded keys stay in the normaliser and in the key max). All rows within 2e-5.
   Also measured: how far attn.h's own padding (seqlens_q/_k) is from it on the valid rows. */
static void test_performer_pytorch_fixture(void) {
    const char *F = "performer_pytorch_ref.txt";
    double dims[5], lens_d[2], *q = NULL, *k = NULL, *v = NULL, *W = NULL, *ref = NULL;
    float *fq = NULL, *fk = NULL, *fv = NULL, *fW = NULL, *out = NULL;
    int B, N, H, D, M, lens[2], kern;
    size_t n, i;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 5) && T_FIXTURE(F, "lengths", lens_d, 2), "performer-pytorch fixture: %s unreadable", F))
        return;
    B = (int)dims[0]; N = (int)dims[1]; H = (int)dims[2]; D = (int)dims[3]; M = (int)dims[4];
    lens[0] = (int)lens_d[0]; lens[1] = (int)lens_d[1];
    n = (size_t)B * N * H * D;
    q = (double *)t_xmalloc(n * sizeof(double)); k = (double *)t_xmalloc(n * sizeof(double));
    v = (double *)t_xmalloc(n * sizeof(double)); ref = (double *)t_xmalloc(n * sizeof(double));
    W = (double *)t_xmalloc((size_t)M * D * sizeof(double));
    fq = (float *)t_xmalloc(n * 4); fk = (float *)t_xmalloc(n * 4); fv = (float *)t_xmalloc(n * 4);
    out = (float *)t_xmalloc(n * 4); fW = (float *)t_xmalloc((size_t)M * D * 4);
    if (T_CHECK(B == 2 && T_FIXTURE(F, "q", q, n) && T_FIXTURE(F, "k", k, n) && T_FIXTURE(F, "v", v, n),
                "performer-pytorch fixture: q, k, v")) {
        for (i = 0; i < n; ++i) {
            const int b = (int)(i / ((size_t)N * H * D)), j = (int)(i / ((size_t)H * D) % (size_t)N);
            fq[i] = (float)q[i]; fk[i] = (float)k[i];
            fv[i] = j < lens[b] ? (float)v[i] : 0.0f;      /* performer-pytorch: v.masked_fill_(~mask, 0) */
        }
        for (kern = 0; kern < 2; ++kern) {
            attn_desc d;
            double err = 0.0, pad_err = 0.0;
            attn_tensor tq = attn_tensor_dense(fq, ATTN_F32, B, N, H, D), tk = attn_tensor_dense(fk, ATTN_F32, B, N, H, D);
            attn_tensor tv = attn_tensor_dense(fv, ATTN_F32, B, N, H, D), to = attn_tensor_dense(out, ATTN_F32, B, N, H, D);
            if (!T_CHECK(T_FIXTURE(F, kern ? "w_relu" : "w_softmax", W, (size_t)M * D) &&
                         T_FIXTURE(F, kern ? "out_relu" : "out_softmax", ref, n), "performer-pytorch fixture: W, out")) continue;
            for (i = 0; i < (size_t)M * D; ++i) fW[i] = (float)W[i];
            memset(&d, 0, sizeof d);
            d.kind = ATTN_PERFORMER;
            d.performer.projection = fW; d.performer.features = M; d.performer.projection_dim = D;
            if (kern) { d.performer.kernel = ATTN_PERFORMER_RELU; d.performer.relu_normalize = 1; }  /* eps 1e-3: the default */
            else d.performer.eps = 1e-4f;                  /* softmax_kernel's eps */
            if (!T_CHECK(attn_forward(&d, tq, tk, tv, to, NULL) == ATTN_OK, "performer-pytorch fixture: call")) continue;
            for (i = 0; i < n; ++i) err = fmax(err, fabs(out[i] - ref[i]));
            T_CHECK(err <= 2e-5, "performer-pytorch fixture (%s kernel): max |attn.h - reference| %.3g > 2e-5",
                    kern ? "ReLU" : "softmax", err);
            d.seqlens_q = d.seqlens_k = lens;              /* attn.h's padding: padded keys excluded */
            if (T_CHECK(attn_forward(&d, tq, tk, tv, to, NULL) == ATTN_OK, "performer-pytorch fixture: seqlens call"))
                for (i = 0; i < n; ++i) {
                    const int b = (int)(i / ((size_t)N * H * D)), j = (int)(i / ((size_t)H * D) % (size_t)N);
                    if (j < lens[b]) pad_err = fmax(pad_err, fabs(out[i] - ref[i]));
                }
            {   /* attn.h's own defaults (eps 1e-6; ReLU without d^-1/4) against the reference */
                double def_err = 0.0;
                d.seqlens_q = d.seqlens_k = NULL;
                if (kern) d.performer.relu_normalize = 0; else d.performer.eps = 0.0f;
                if (T_CHECK(attn_forward(&d, tq, tk, tv, to, NULL) == ATTN_OK, "performer-pytorch fixture: defaults call"))
                    for (i = 0; i < n; ++i) def_err = fmax(def_err, fabs(out[i] - ref[i]));
                printf("      performer: performer-pytorch fixture (%s kernel) max |diff| %.3g; with seqlens_q/_k instead "
                       "(padded keys excluded) the valid rows move by %.3g; with attn.h's %s: %.3g\n", kern ? "ReLU" : "softmax",
                       err, pad_err, kern ? "relu_normalize 0" : "default eps 1e-6", def_err);
            }
        }
    }
    free(q); free(k); free(v); free(W); free(ref); free(fq); free(fk); free(fv); free(fW); free(out);
}

/* torch autograd through performer-pytorch's FastAttention (tests/fixtures/performer_pytorch_bwd.py),
   the same recipe as above (its W, eps 1e-4 / relu_normalize 1, v zeroed at padded rows, no
   seqlens): attn_backward's dq, dk, dv (of the masked v) within 1e-4 of each gradient's largest
   magnitude, both kernels. */
static void test_performer_pytorch_grad_fixture(void) {
    const char *F = "performer_pytorch_bwd.txt";
    static const char *const gname[3] = { "dq", "dk", "dv" };
    double dims[5], *buf[4], *ref = NULL, *W = NULL;
    float *f32[4], *out = NULL, *g[3], *fW = NULL;
    size_t n, i;
    int B, N, H, D, M, kern, a;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 5), "performer-pytorch gradient fixture: %s unreadable", F)) return;
    B = (int)dims[0]; N = (int)dims[1]; H = (int)dims[2]; D = (int)dims[3]; M = (int)dims[4];
    n = (size_t)B * N * H * D;
    for (a = 0; a < 4; ++a) { buf[a] = (double *)t_xmalloc(n * sizeof(double)); f32[a] = (float *)t_xmalloc(n * 4); }
    for (a = 0; a < 3; ++a) g[a] = (float *)t_xmalloc(n * 4);
    ref = (double *)t_xmalloc(n * sizeof(double)); out = (float *)t_xmalloc(n * 4);
    W = (double *)t_xmalloc((size_t)M * D * sizeof(double)); fW = (float *)t_xmalloc((size_t)M * D * 4);
    if (T_CHECK(T_FIXTURE(F, "q", buf[0], n) && T_FIXTURE(F, "k", buf[1], n) && T_FIXTURE(F, "v", buf[2], n) &&
                T_FIXTURE(F, "dout", buf[3], n), "performer-pytorch gradient fixture: q, k, v, dout")) {
        for (a = 0; a < 4; ++a) for (i = 0; i < n; ++i) f32[a][i] = (float)buf[a][i];   /* v is already masked */
        for (kern = 0; kern < 2; ++kern) {
            const char *kn = kern ? "relu" : "softmax";
            char name[32];
            attn_desc d;
            attn_tensor t[4], tg[3], to = attn_tensor_dense(out, ATTN_F32, B, N, H, D);
            double worst = 0.0;
            for (a = 0; a < 4; ++a) t[a] = attn_tensor_dense(f32[a], ATTN_F32, B, N, H, D);
            for (a = 0; a < 3; ++a) tg[a] = attn_tensor_dense(g[a], ATTN_F32, B, N, H, D);
            snprintf(name, sizeof name, "w_%s", kn);
            if (!T_CHECK(T_FIXTURE(F, name, W, (size_t)M * D), "performer-pytorch gradient fixture: %s", name)) continue;
            for (i = 0; i < (size_t)M * D; ++i) fW[i] = (float)W[i];
            memset(&d, 0, sizeof d);
            d.kind = ATTN_PERFORMER;
            d.performer.projection = fW; d.performer.features = M; d.performer.projection_dim = D;
            if (kern) { d.performer.kernel = ATTN_PERFORMER_RELU; d.performer.relu_normalize = 1; }
            else d.performer.eps = 1e-4f;
            if (!T_CHECK(attn_forward(&d, t[0], t[1], t[2], to, NULL) == ATTN_OK &&
                         attn_backward(&d, t[0], t[1], t[2], to, t[3], NULL, tg[0], tg[1], tg[2]) == ATTN_OK,
                         "performer-pytorch gradient fixture (%s): calls", kn)) continue;
            for (a = 0; a < 3; ++a) {
                double mx = 0.0, err = 0.0;
                snprintf(name, sizeof name, "%s_%s", gname[a], kn);
                if (!T_CHECK(T_FIXTURE(F, name, ref, n), "performer-pytorch gradient fixture: %s", name)) continue;
                for (i = 0; i < n; ++i) { mx = fmax(mx, fabs(ref[i])); err = fmax(err, fabs(g[a][i] - ref[i])); }
                err /= fmax(mx, 1e-30);
                worst = fmax(worst, err);
                T_CHECK(err <= 1e-4, "performer-pytorch gradient fixture (%s kernel): %s off by %.3g of its largest value",
                        kn, gname[a], err);
            }
            printf("      performer: performer-pytorch autograd (%s kernel): dq, dk, dv within %.3g of each largest value\n", kn, worst);
        }
    }
    for (a = 0; a < 4; ++a) { free(buf[a]); free(f32[a]); }
    for (a = 0; a < 3; ++a) free(g[a]);
    free(ref); free(out); free(W); free(fW);
}

/* Regression (fuzz kinds -s 16 iteration 26433): the causal backward with every query row of a
   sequence padded (seqlens_q[b] = 0). Pass 1 then absorbed none of b's keys, so the key pass
   rebuilt their features from running maxes never written (here the test allocator's NaN
   poison): dk, dv came out NaN from finite inputs. The fuzz input's shape (Sq 6, Sk 5, Hq 2,
   Hkv 1, D = Dv = 15, default features, causal) and its k and v rows (bf16 values, one row
   broadcast over the sequence) in sequence 0; sequence 1 random with 4 valid rows of 6. Checks:
   sequence 0's gradients exactly 0 (the loss never reads it) and every gradient finite, with the
   fuzz's desc (default eps); then with eps ATTN_EPS_ZERO, where the stabilisers cancel exactly so
   pf_ref is the very function the library differentiates, every 5th coordinate of q, k, v
   against central finite differences of sum(dO . pf_ref): max |err| / max(1, max |grad|) <= 2e-4. */
static double pf_loss(const pf_shape *s, const pf_bufs *m, const float *W, const int *lq, const int *lk, const attn_tensor *dout,
                      double *out) {
    double L = 0.0;
    int b, i, h, d;
    pf_ref(s, m, W, lq, lk, out);
    for (b = 0; b < s->B; ++b) for (i = 0; i < s->Sq; ++i) for (h = 0; h < s->Hq; ++h) for (d = 0; d < s->Dv; ++d)
        L += t_load(dout, b, i, h, d) * out[(((size_t)b * s->Sq + i) * s->Hq + h) * s->Dv + d];
    return L;
}
static void test_performer_bwd_empty_queries(void) {
    static const float k0[15] = { 2.328125f, -0.241210938f, -0.5703125f, 0.625f, 0.112792969f, -0.72265625f, 1.046875f, -0.129882812f,
                                  0.5390625f, 1.125f, -0.5390625f, -1.8359375f, 0.0546875f, 0.765625f, -1.4765625f };
    static const float v0[15] = { -0.68359375f, -1.4140625f, 1.28125f, -0.765625f, 0.0869140625f, -0.97265625f, 1.6953125f, -1.0390625f,
                                  -0.3671875f, 0.3359375f, -1.859375f, 0.294921875f, -0.58203125f, 0.251953125f, 0.53515625f };
    pf_shape s = { 2, 6, 5, 2, 1, 15, 15, 256, 1, 0, 1e-6, ATTN_F32, ATTN_F32, ATTN_F32 };
    int lq[2] = { 0, 4 }, j, d, pass, a;
    t_rng r = t_rng_seed(26433);
    pf_bufs m;
    attn_desc desc;
    const size_t nq = (size_t)2 * 6 * 2 * 15, nk = (size_t)2 * 5 * 15;
    float *buf[4], *W = (float *)t_xmalloc(sizeof(float) * 256 * 15);
    attn_tensor dout, g[3];
    double *out = (double *)t_xmalloc(sizeof(double) * nq);
    pf_alloc(&m, &s, &r, 1.0);
    for (j = 0; j < 5; ++j) for (d = 0; d < 15; ++d) { t_store(&m.tk, 0, j, 0, d, k0[d]); t_store(&m.tv, 0, j, 0, d, v0[d]); }
    for (a = 0; a < 4; ++a) buf[a] = (float *)t_xmalloc(sizeof(float) * (a == 0 || a == 1 ? nq : nk));
    dout = attn_tensor_dense(buf[0], ATTN_F32, 2, 6, 2, 15);
    g[0] = attn_tensor_dense(buf[1], ATTN_F32, 2, 6, 2, 15);
    g[1] = attn_tensor_dense(buf[2], ATTN_F32, 2, 5, 1, 15);
    g[2] = attn_tensor_dense(buf[3], ATTN_F32, 2, 5, 1, 15);
    t_fill_normal(&dout, &r, 1.0);
    for (pass = 0; pass < 2; ++pass) {           /* 0: the fuzz's desc; 1: eps exactly 0, against finite differences */
        const attn_tensor *in[3] = { &m.tq, &m.tk, &m.tv };
        double worst = 0.0, gmax = 0.0;
        int zero = 1, finite = 1, t, b, h;
        s.eps = pass ? 0.0 : 1e-6;
        pf_desc(&desc, &s, 0);
        desc.seqlens_q = lq;
        if (pass == 1) T_CHECK(attn_performer_draw(&desc.performer, 15, W) == ATTN_OK, "performer draw");
        T_CHECK(attn_forward(&desc, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "performer empty queries: forward");
        for (a = 1; a < 4; ++a) t_fill_nan(buf[a], ATTN_F32, a == 1 ? nq : nk);
        if (!T_CHECK(attn_backward(&desc, m.tq, m.tk, m.tv, m.to, dout, NULL, g[0], g[1], g[2]) == ATTN_OK,
                     "performer empty queries: backward")) break;
        for (t = 0; t < 3; ++t)
            for (b = 0; b < 2; ++b) for (j = 0; j < g[t].seq; ++j) for (h = 0; h < g[t].heads; ++h) for (d = 0; d < 15; ++d) {
                const double x = t_load(&g[t], b, j, h, d);
                finite &= isfinite(x) != 0;
                if (b == 0) zero &= x == 0.0;
            }
        T_CHECK(finite && zero, "performer backward, causal, seqlens_q 0 (eps %g): gradients %s", s.eps,
                !finite ? "not finite" : "of the empty sequence not 0");
        if (pass == 0) continue;
        for (t = 0; t < 3; ++t) {                /* every 5th coordinate of q, k, v (both sequences) */
            const attn_tensor *x = in[t];
            const int n = x->batch * x->seq * x->heads * x->dim;
            int c;
            for (c = 0; c < n; c += 5) {
                const int dd = c % 15, hh = c / 15 % x->heads, jj = c / 15 / x->heads % x->seq, bb = c / 15 / x->heads / x->seq;
                const double x0 = t_load(x, bb, jj, hh, dd), lib = t_load(&g[t], bb, jj, hh, dd);
                double lp, lm, xp, xm;
                t_store(x, bb, jj, hh, dd, x0 + 1e-3); xp = t_load(x, bb, jj, hh, dd); lp = pf_loss(&s, &m, W, lq, NULL, &dout, out);
                t_store(x, bb, jj, hh, dd, x0 - 1e-3); xm = t_load(x, bb, jj, hh, dd); lm = pf_loss(&s, &m, W, lq, NULL, &dout, out);
                t_store(x, bb, jj, hh, dd, x0);
                lp = fabs(lib - (lp - lm) / (xp - xm));
                if (!(lp <= worst)) worst = lp;       /* a NaN sticks */
                gmax = fmax(gmax, fabs(lib));
            }
        }
        T_CHECK(worst / fmax(1.0, gmax) <= 2e-4, "performer backward, causal, seqlens_q {0, 4}: max |err| %.3g vs finite differences (max |grad| %.3g)",
                worst, gmax);
    }
    for (a = 0; a < 4; ++a) free(buf[a]);
    free(W); free(out);
    pf_free(&m);
}

void test_performer(void) {
    test_performer_pytorch_fixture();
    test_performer_pytorch_grad_fixture();
    test_performer_draw();
    test_performer_sweep();
    test_performer_prefix();
    test_performer_threads();
    test_performer_step();
    test_performer_converges();
    test_performer_errors();
    test_performer_bwd_empty_queries();
    t_performer_bwd_out();
    printf("      performer: largest passing f32-out error %.3g (tolerance %.3g)\n", g_pf_worst,
           pf_tol(ATTN_F32));
}
