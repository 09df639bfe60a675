/* tests/test_cosformer.c - ATTN_COSFORMER against its quadratic form, evaluated naively in
   double from ZOO.md (sharing no code with attn.h):
     w_ij = relu(q_i) . relu(k_j) cos(pi/2 (p_i - p_j) / M),  out_i = sum_j w_ij v_j / max(sum_j w_ij, eps)
   over the visible keys (all valid keys; causal: j <= i + Lk - Lq), positions 1-based (key j at
   j + 1, query i at i + 1, plus Lk - Lq under causal), M = max_len or max(Lq, Lk), the valid
   lengths of each sequence (padding does not move M).
   Properties: causal and not, GQA, Lq != Lk, seqlens, f16/bf16 storage, thread counts bitwise
   equal, attn_step token by token and in pieces == the causal forward with the same M, and
   every cosFormer status with outputs untouched.
   Tolerance (max error / max(1, max |ref|)): 1e-4 + 1.5 x the out dtype's rounding. */
#include "test.h"

typedef struct {
    int B, Hq, Hkv, Lq, Lk, D, Dv, causal, max_len, seqlens;
    attn_dtype dq, dkv, dout;
    float eps;                   /* 0: the default 1e-6 */
} cf_case;

typedef struct { attn_tensor q, k, v, out; } cf_bufs;

static attn_tensor cf_tensor(attn_dtype dt, int B, int S, int H, int D) {
    attn_tensor t = attn_tensor_dense(NULL, dt, B, S, H, D);
    size_t n = t_extent(&t);
    t.data = t_xmalloc(n * t_dt_size(dt));
    t_fill_nan(t.data, dt, n);
    return t;
}
static size_t cf_bytes(const attn_tensor *t) { return t_extent(t) * t_dt_size(t->dtype); }

/* out[b][i][h][e] in double */
static void cf_ref(const cf_case *c, const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, const int *lq,
                   const int *lk, double eps, double *ref) {
    const int g = c->Hq / c->Hkv;
    int b, h, i, j, d, e;
    double *acc = (double *)t_xmalloc(sizeof(double) * c->Dv);
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->Hq; ++h) {
            const int Lq = lq ? lq[b] : c->Lq, Lk = lk ? lk[b] : c->Lk, hk = h / g;
            const int M = c->max_len ? c->max_len : (Lq > Lk ? Lq : Lk);   /* per sequence, valid lengths */
            for (i = 0; i < c->Lq; ++i) {
                double den = 0.0;
                const double pi_ = (double)i + 1.0 + (c->causal ? (double)(Lk - Lq) : 0.0);
                for (e = 0; e < c->Dv; ++e) acc[e] = 0.0;
                if (i < Lq)
                    for (j = 0; j < Lk; ++j) {
                        double dot = 0.0, w;
                        if (c->causal && j > i + Lk - Lq) continue;
                        for (d = 0; d < c->D; ++d) {
                            const double a = t_load(q, b, i, h, d), bb = t_load(k, b, j, hk, d);
                            dot += (a > 0 ? a : 0) * (bb > 0 ? bb : 0);
                        }
                        w = dot * cos(1.57079632679489661923 * (pi_ - (j + 1.0)) / M);
                        den += w;
                        for (e = 0; e < c->Dv; ++e) acc[e] += w * t_load(v, b, j, hk, e);
                    }
                for (e = 0; e < c->Dv; ++e)
                    ref[(((size_t)b * c->Lq + i) * c->Hq + h) * c->Dv + e] = i < Lq ? acc[e] / (den > eps ? den : eps) : 0.0;
            }
        }
    free(acc);
}


static double cf_tol(attn_dtype out) { return 1e-4 + 1.5 * t_dt_rel(out); }

static void cf_check(const cf_case *c, t_rng *rng) {
    attn_tensor q = cf_tensor(c->dq, c->B, c->Lq, c->Hq, c->D), k = cf_tensor(c->dkv, c->B, c->Lk, c->Hkv, c->D);
    attn_tensor v = cf_tensor(c->dkv, c->B, c->Lk, c->Hkv, c->Dv), o = cf_tensor(c->dout, c->B, c->Lq, c->Hq, c->Dv);
    const size_t n = (size_t)c->B * c->Lq * c->Hq * c->Dv;
    double *ref = (double *)t_xmalloc(sizeof(double) * n), *got = (double *)t_xmalloc(sizeof(double) * n), err;
    int lq[4], lk[4], b;
    attn_desc d;
    attn_status s;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_COSFORMER; d.causal = c->causal; d.cosformer.max_len = c->max_len; d.cosformer.eps = c->eps;
    t_fill_normal(&q, rng, 1.0); t_fill_normal(&k, rng, 1.0); t_fill_normal(&v, rng, 1.0);
    if (c->seqlens) {
        for (b = 0; b < c->B; ++b) { lq[b] = t_irange(rng, 0, c->Lq); lk[b] = t_irange(rng, 0, c->Lk); }
        if (c->causal) for (b = 0; b < c->B; ++b) if (lk[b] < lq[b]) lk[b] = lq[b] <= c->Lk ? lq[b] : c->Lk;
        d.seqlens_q = lq; d.seqlens_k = lk;
    }
    s = attn_forward(&d, q, k, v, o, NULL);
    T_CHECK(s == ATTN_OK, "cosformer forward: %s", attn_status_str(s));
    cf_ref(c, &q, &k, &v, c->seqlens ? lq : NULL, c->seqlens ? lk : NULL, c->eps != 0.0f ? (double)c->eps : 1e-6, ref);
    t_read(&o, got);
    err = t_max_norm_err(ref, got, n);
    T_CHECK(err <= cf_tol(c->dout), "cosformer B%d Hq%d Hkv%d Lq%d Lk%d D%d Dv%d causal %d M %d seqlens %d %s/%s/%s: err %.3g > %.3g",
            c->B, c->Hq, c->Hkv, c->Lq, c->Lk, c->D, c->Dv, c->causal, c->max_len, c->seqlens, t_dt_name(c->dq),
            t_dt_name(c->dkv), t_dt_name(c->dout), err, cf_tol(c->dout));
    free(q.data); free(k.data); free(v.data); free(o.data); free(ref); free(got);
}

/* thread counts bitwise; attn_step token by token and in pieces == causal forward */
static void cf_properties(t_rng *rng, attn_dtype dt) {
    const int B = 2, Hq = 4, Hkv = 2, L = 150, D = 16, Dv = 8, M = 200;
    attn_tensor q = cf_tensor(dt, B, L, Hq, D), k = cf_tensor(dt, B, L, Hkv, D), v = cf_tensor(dt, B, L, Hkv, Dv);
    attn_tensor o1 = cf_tensor(dt, B, L, Hq, Dv), o2 = cf_tensor(dt, B, L, Hq, Dv);
    const size_t n = (size_t)B * L * Hq * Dv;
    double *a = (double *)t_xmalloc(sizeof(double) * n), *b2 = (double *)t_xmalloc(sizeof(double) * n), err;
    attn_desc d;
    attn_state st;
    size_t floats = 0;
    float *sb;
    int nt, t0, piece, ok;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_COSFORMER; d.causal = 1; d.cosformer.max_len = M; d.n_threads = 1;
    t_fill_normal(&q, rng, 1.0); t_fill_normal(&k, rng, 1.0); t_fill_normal(&v, rng, 1.0);
    T_CHECK(attn_forward(&d, q, k, v, o1, NULL) == ATTN_OK, "cosformer properties forward");
    for (nt = 2; nt <= 3; ++nt) {
        memset(o2.data, 0, cf_bytes(&o2));
        d.n_threads = nt;
        T_CHECK(attn_forward(&d, q, k, v, o2, NULL) == ATTN_OK && memcmp(o1.data, o2.data, cf_bytes(&o1)) == 0,
                "cosformer %s: n_threads %d differs from 1 thread", t_dt_name(dt), nt);
    }
    t_read(&o1, a);
    T_CHECK(attn_state_size(&d, q, k, v, &floats) == ATTN_OK && floats == (size_t)B * Hkv * (2 * D * Dv + 2 * D),
            "cosformer state size %lu", (unsigned long)floats);
    sb = (float *)t_xmalloc(sizeof(float) * floats);
    for (piece = 1; piece <= 2; ++piece) {           /* 1: one token per call; 2: pieces of 1..70 tokens */
        T_CHECK(attn_state_init(&d, q, k, v, sb, floats, &st) == ATTN_OK, "cosformer state init");
        ok = 1;
        for (t0 = 0; t0 < L && ok;) {
            const int len = piece == 1 ? 1 : (L - t0 < 70 ? t_irange(rng, 1, L - t0) : t_irange(rng, 1, 70));
            attn_tensor qs = q, ks = k, vs = v, os = o2;
            t_strides sq = t_resolve(&q), sk = t_resolve(&k), sv = t_resolve(&v), so = t_resolve(&o2);
            qs.stride_batch = sq.sb; qs.stride_seq = sq.ss; qs.stride_head = sq.sh; qs.seq = len;
            ks.stride_batch = sk.sb; ks.stride_seq = sk.ss; ks.stride_head = sk.sh; ks.seq = len;
            vs.stride_batch = sv.sb; vs.stride_seq = sv.ss; vs.stride_head = sv.sh; vs.seq = len;
            os.stride_batch = so.sb; os.stride_seq = so.ss; os.stride_head = so.sh; os.seq = len;
            qs.data = (char *)q.data + t_dt_size(dt) * (size_t)t0 * (size_t)sq.ss;
            ks.data = (char *)k.data + t_dt_size(dt) * (size_t)t0 * (size_t)sk.ss;
            vs.data = (char *)v.data + t_dt_size(dt) * (size_t)t0 * (size_t)sv.ss;
            os.data = (char *)o2.data + t_dt_size(dt) * (size_t)t0 * (size_t)so.ss;
            if (attn_step(&d, qs, ks, vs, &st, os) != ATTN_OK) ok = 0;
            t0 += len;
        }
        T_CHECK(ok && st.pos == L, "cosformer step calls (piece mode %d)", piece);
        t_read(&o2, b2);
        err = t_max_norm_err(a, b2, n);
        T_CHECK(err <= 2e-5 + 1.5 * t_dt_rel(dt), "cosformer %s: attn_step (piece mode %d) vs causal forward: %.3g",
                t_dt_name(dt), piece, err);
    }
    {   /* a state made for max_len M refuses another M (its positions would mean other angles) */
        attn_desc d2 = d;
        attn_state s2;
        T_CHECK(attn_state_init(&d, q, k, v, sb, floats, &s2) == ATTN_OK, "cosformer state init (max_len check)");
        d2.cosformer.max_len = M + 1;
        t_sentinel(o2.data, cf_bytes(&o2), 9);
        T_CHECK(attn_step(&d2, q, k, v, &s2, o2) == ATTN_ERR_STATE_MISMATCH && s2.pos == 0 &&
                t_sentinel_ok(o2.data, cf_bytes(&o2), 9), "cosformer: a state of max_len %d used with %d", M, M + 1);
    }
    free(sb); free(q.data); free(k.data); free(v.data); free(o1.data); free(o2.data); free(a); free(b2);
}

/* Issue 27 item 9: the default M is max(valid Lq, valid Lk) (ZOO.md, the header), so the same
   tokens give the same rows whatever the padding: 4 (or 3 query) tokens alone == the same tokens
   padded to 8 with seqlens, causal and not; padding rows are 0. */
static void cf_padding(t_rng *rng) {
    const int H = 2, D = 8, Dv = 4, P = 8;
    int causal, cross;
    for (causal = 0; causal <= 1; ++causal)
        for (cross = 0; cross <= 1; ++cross) {
            const int Lq = cross ? 3 : 4, Lk = 4;
            attn_tensor q = cf_tensor(ATTN_F32, 1, Lq, H, D), k = cf_tensor(ATTN_F32, 1, Lk, H, D), v = cf_tensor(ATTN_F32, 1, Lk, H, Dv);
            attn_tensor o = cf_tensor(ATTN_F32, 1, Lq, H, Dv);
            attn_tensor qp = cf_tensor(ATTN_F32, 2, P, H, D), kp = cf_tensor(ATTN_F32, 2, P, H, D), vp = cf_tensor(ATTN_F32, 2, P, H, Dv);
            attn_tensor op = cf_tensor(ATTN_F32, 2, P, H, Dv);
            const int lq[2] = { Lq, 2 }, lk[2] = { Lk, 3 };   /* batch 1: shorter still */
            double err = 0.0, pad = 0.0;
            attn_desc d;
            attn_status s1, s2;
            int i, h, e;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_COSFORMER; d.causal = causal;
            t_fill_normal(&qp, rng, 1.0); t_fill_normal(&kp, rng, 1.0); t_fill_normal(&vp, rng, 1.0);
            for (i = 0; i < Lq; ++i) for (h = 0; h < H; ++h) for (e = 0; e < D; ++e) t_store(&q, 0, i, h, e, t_load(&qp, 0, i, h, e));
            for (i = 0; i < Lk; ++i) for (h = 0; h < H; ++h) {
                for (e = 0; e < D; ++e) t_store(&k, 0, i, h, e, t_load(&kp, 0, i, h, e));
                for (e = 0; e < Dv; ++e) t_store(&v, 0, i, h, e, t_load(&vp, 0, i, h, e));
            }
            s1 = attn_forward(&d, q, k, v, o, NULL);
            d.seqlens_q = lq; d.seqlens_k = lk;
            s2 = attn_forward(&d, qp, kp, vp, op, NULL);
            for (i = 0; i < P; ++i) for (h = 0; h < H; ++h) for (e = 0; e < Dv; ++e) {
                const double x = t_load(&op, 0, i, h, e);
                if (i < Lq) { const double y = t_load(&o, 0, i, h, e); if (fabs(x - y) > err) err = fabs(x - y); }
                else if (fabs(x) > pad) pad = fabs(x);
            }
            T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && err <= 1e-6 && pad == 0.0,
                    "cosformer causal %d, %d query x %d key tokens padded to %d: %s / %s, valid rows differ by %.3g, padding rows %.3g",
                    causal, Lq, Lk, P, attn_status_str(s1), attn_status_str(s2), err, pad);
            {   /* max_len need only cover the valid positions */
                d.cosformer.max_len = Lk;
                s2 = attn_forward(&d, qp, kp, vp, op, NULL);
                d.seqlens_q = d.seqlens_k = NULL;
                s1 = attn_forward(&d, q, k, v, o, NULL);
                err = 0.0;
                for (i = 0; i < Lq; ++i) for (h = 0; h < H; ++h) for (e = 0; e < Dv; ++e) {
                    const double x = t_load(&op, 0, i, h, e), y = t_load(&o, 0, i, h, e);
                    if (fabs(x - y) > err) err = fabs(x - y);
                }
                T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && err <= 1e-6, "cosformer causal %d, max_len %d over tokens padded to %d: %s / %s, %.3g",
                        causal, Lk, P, attn_status_str(s1), attn_status_str(s2), err);
            }
            free(q.data); free(k.data); free(v.data); free(o.data); free(qp.data); free(kp.data); free(vp.data); free(op.data);
        }
}

static void cf_expect(attn_status got, attn_status want, const attn_tensor *o, const char *what) {
    const int untouched = t_sentinel_ok(o->data, cf_bytes(o), 0x33);
    T_CHECK(got == want && untouched, "%s: got %s, want %s, out %s", what, attn_status_str(got), attn_status_str(want),
            untouched ? "untouched" : "WRITTEN");
    if (got == want && untouched) t_status_provoked[want] = 1;
}

static void cf_errors(t_rng *rng) {
    const int L = 10, D = 8;
    attn_tensor q = cf_tensor(ATTN_F32, 1, L, 2, D), k = cf_tensor(ATTN_F32, 1, L, 2, D), v = cf_tensor(ATTN_F32, 1, L, 2, D);
    attn_tensor o = cf_tensor(ATTN_F32, 1, L, 2, D), q1 = q, k1 = k, v1 = v, o1 = o;
    attn_desc d;
    attn_state st;
    size_t floats = 0;
    float *sb, lse[20];
    memset(&d, 0, sizeof d);
    d.kind = ATTN_COSFORMER;
    t_fill_normal(&q, rng, 1.0); t_fill_normal(&k, rng, 1.0); t_fill_normal(&v, rng, 1.0);
#define CF(call, want, what) do { t_sentinel(o.data, cf_bytes(&o), 0x33); cf_expect(call, want, &o, what); } while (0)
    d.cosformer.eps = NAN;
    CF(attn_forward(&d, q, k, v, o, NULL), ATTN_ERR_COSFORMER_EPS, "cosformer eps NaN");
    d.cosformer.eps = -1e-3f;
    CF(attn_forward(&d, q, k, v, o, NULL), ATTN_ERR_COSFORMER_EPS, "cosformer eps < 0");
    d.cosformer.eps = 0.0f; d.cosformer.max_len = -1;
    CF(attn_forward(&d, q, k, v, o, NULL), ATTN_ERR_COSFORMER_MAX_LEN, "cosformer max_len -1");
    d.cosformer.max_len = L - 1;
    CF(attn_forward(&d, q, k, v, o, NULL), ATTN_ERR_COSFORMER_MAX_LEN, "cosformer max_len < seq");
    d.cosformer.max_len = 0;
    CF(attn_forward(&d, q, k, v, o, lse), ATTN_ERR_KIND_LSE, "cosformer lse");
    d.scale = 0.5f;
    CF(attn_forward(&d, q, k, v, o, NULL), ATTN_ERR_KIND_OPTION, "cosformer scale");
    d.scale = 0.0f;
    /* steps: M must be fixed, and the positions must stay within it */
    T_CHECK(attn_state_size(&d, q, k, v, &floats) == ATTN_OK, "cosformer state size");
    sb = (float *)t_xmalloc(sizeof(float) * floats);
    T_CHECK(attn_state_init(&d, q, k, v, sb, floats, &st) == ATTN_OK, "cosformer state init");
    q1.seq = k1.seq = v1.seq = o1.seq = 1;
    t_sentinel(o.data, cf_bytes(&o), 0x33);
    cf_expect(attn_step(&d, q1, k1, v1, &st, o1), ATTN_ERR_COSFORMER_STEP_M, &o, "cosformer step without max_len");
    d.cosformer.max_len = 3;
    T_CHECK(attn_state_init(&d, q, k, v, sb, floats, &st) == ATTN_OK, "cosformer state init M 3");
    q1.seq = k1.seq = v1.seq = o1.seq = 3;
    T_CHECK(attn_step(&d, q1, k1, v1, &st, o1) == ATTN_OK && st.pos == 3, "cosformer 3 steps within M 3");
    q1.seq = k1.seq = v1.seq = o1.seq = 1;
    {
        float keep[4];
        memcpy(keep, sb, sizeof keep);
        t_sentinel(o.data, cf_bytes(&o), 0x33);
        cf_expect(attn_step(&d, q1, k1, v1, &st, o1), ATTN_ERR_COSFORMER_MAX_LEN, &o, "cosformer step past M");
        T_CHECK(st.pos == 3 && memcmp(keep, sb, sizeof keep) == 0, "cosformer step past M: state untouched");
    }
#undef CF
    free(sb); free(q.data); free(k.data); free(v.data); free(o.data);
}

void test_cosformer(void) {
    t_rng rng = t_rng_seed(0xC05F0A3Eull);
    static const cf_case cases[] = {
        /* B Hq Hkv Lq  Lk   D   Dv causal M   seqlens  q          k/v        out        eps */
        { 1, 1, 1, 20,  20,  8,  8,  0, 0,   0, ATTN_F32,  ATTN_F32,  ATTN_F32,  0.0f },
        { 2, 4, 2, 70,  70,  16, 12, 1, 0,   0, ATTN_F32,  ATTN_F32,  ATTN_F32,  0.0f },   /* two causal chunks, GQA */
        { 1, 2, 2, 33,  90,  8,  8,  1, 0,   0, ATTN_F32,  ATTN_F32,  ATTN_F32,  0.0f },   /* bottom-right */
        { 1, 2, 1, 90,  33,  8,  8,  0, 120, 0, ATTN_F32,  ATTN_F32,  ATTN_F32,  0.0f },   /* Lq > Lk, M given */
        { 3, 2, 2, 40,  50,  8,  16, 1, 0,   1, ATTN_F32,  ATTN_F32,  ATTN_F32,  0.0f },   /* seqlens */
        { 2, 2, 2, 30,  30,  12, 8,  0, 0,   1, ATTN_F16,  ATTN_F16,  ATTN_F16,  0.0f },
        { 1, 3, 1, 65,  65,  8,  8,  1, 400, 0, ATTN_BF16, ATTN_BF16, ATTN_BF16, 0.0f },
        { 1, 2, 2, 17,  17,  8,  8,  1, 0,   0, ATTN_F32,  ATTN_BF16, ATTN_F16,  0.0f },
        { 1, 2, 2, 24,  24,  8,  8,  1, 0,   0, ATTN_F32,  ATTN_F32,  ATTN_F32, 30.0f },   /* the clamp binds */
    };
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); ++i) cf_check(&cases[i], &rng);
    for (i = 0; i < 3; ++i) cf_properties(&rng, dts[i]);
    cf_errors(&rng);
    cf_padding(&rng);
}
