/* tests/test_linear.c - ATTN_LINEAR (linear attention, phi(x) = elu(x) + 1) against a naive
   double-precision reference written from the definition (Katharopoulos et al. 2020, as in
   shared/ZOO.md): out_i = sum_j w_ij v_j / (sum_j w_ij + eps), w_ij = phi(q_i) . phi(k_j) over
   the visible keys, evaluated pair by pair in O(n^2) (the library never forms w_ij outside a
   chunk). Properties: the recurrent form (attn_step, any piece sizes) equals the causal
   parallel form, thread counts give bitwise equal results, a caller workspace makes the call
   allocation-free, NaN inputs propagate, and every status is provoked with outputs untouched. */
#include "test.h"

static double ref_phi(double x) { return x > 0.0 ? x + 1.0 : exp(x); }

/* out [B, Sq, Hq, Dv] in double; seqlens NULL = full length */
static void ref_linear(const attn_tensor *q, const attn_tensor *k, const attn_tensor *v, int causal, double eps,
                       const int *seqlens_q, const int *seqlens_k, double *out) {
    const int g = q->heads / k->heads;
    int b, h, i, j, d;
    double *pq = (double *)t_xmalloc(sizeof(double) * (size_t)q->dim);
    double *acc = (double *)t_xmalloc(sizeof(double) * (size_t)v->dim);
    for (b = 0; b < q->batch; ++b) {
        const int Lq = seqlens_q ? seqlens_q[b] : q->seq, Lk = seqlens_k ? seqlens_k[b] : k->seq;
        for (i = 0; i < q->seq; ++i)
            for (h = 0; h < q->heads; ++h) {
                double *o = out + (((size_t)b * q->seq + i) * q->heads + h) * v->dim;
                double den = 0.0;
                for (d = 0; d < v->dim; ++d) { acc[d] = 0.0; o[d] = 0.0; }
                if (i >= Lq) continue;
                for (d = 0; d < q->dim; ++d) pq[d] = ref_phi(t_load(q, b, i, h, d));
                for (j = 0; j < Lk; ++j) {
                    double wgt = 0.0;
                    if (causal && (long long)j > (long long)i + Lk - Lq) break;
                    for (d = 0; d < q->dim; ++d) wgt += pq[d] * ref_phi(t_load(k, b, j, h / g, d));
                    den += wgt;
                    for (d = 0; d < v->dim; ++d) acc[d] += wgt * t_load(v, b, j, h / g, d);
                }
                for (d = 0; d < v->dim; ++d) o[d] = acc[d] / (den + eps);
            }
    }
    free(pq);
    free(acc);
}

typedef struct {
    int B, Sq, Sk, Hq, Hkv, D, Dv;
    attn_dtype tq, tkv, to;
} lin_shape;

typedef struct {
    void *q, *k, *v, *out;
    attn_tensor tq, tk, tv, to;
} lin_bufs;

static void lin_alloc(lin_bufs *m, const lin_shape *s, t_rng *r) {
    m->q = t_xmalloc((size_t)s->B * s->Sq * s->Hq * s->D * t_dt_size(s->tq));
    m->k = t_xmalloc((size_t)s->B * s->Sk * s->Hkv * s->D * t_dt_size(s->tkv));
    m->v = t_xmalloc((size_t)s->B * s->Sk * s->Hkv * s->Dv * t_dt_size(s->tkv));
    m->out = t_xmalloc((size_t)s->B * s->Sq * s->Hq * s->Dv * t_dt_size(s->to));
    m->tq = attn_tensor_dense(m->q, s->tq, s->B, s->Sq, s->Hq, s->D);
    m->tk = attn_tensor_dense(m->k, s->tkv, s->B, s->Sk, s->Hkv, s->D);
    m->tv = attn_tensor_dense(m->v, s->tkv, s->B, s->Sk, s->Hkv, s->Dv);
    m->to = attn_tensor_dense(m->out, s->to, s->B, s->Sq, s->Hq, s->Dv);
    t_fill_normal(&m->tq, r, 1.0);
    t_fill_normal(&m->tk, r, 1.0);
    t_fill_normal(&m->tv, r, 1.0);
}
static void lin_free(lin_bufs *m) { free(m->q); free(m->k); free(m->v); free(m->out); }


/* f32 accumulation of up to a few hundred terms; one output rounding for f16/bf16 */
static double lin_tol(attn_dtype out) { return 2e-5 + 1.5 * t_dt_rel(out); }

static double g_lin_worst = 0.0;

static void test_linear_sweep(void) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    const int n_cases = T_QUICK ? 30 : 150;
    t_rng r = t_rng_seed(2020);
    int c;
    for (c = 0; c < n_cases; ++c) {
        lin_shape s;
        lin_bufs m;
        attn_desc d;
        int lq[4], lk[4], b, use_len, th;
        double *ref, *got, err;
        size_t n;
        attn_status st;
        memset(&d, 0, sizeof d);
        s.B = t_irange(&r, 1, 3); s.Hkv = t_irange(&r, 1, 3); s.Hq = s.Hkv * t_irange(&r, 1, 3);
        s.Sq = t_chance(&r, 0.3) ? t_irange(&r, 1, 4) : t_irange(&r, 1, 150);
        s.Sk = t_chance(&r, 0.5) ? s.Sq : t_irange(&r, 1, 300);
        s.D = t_pick(&r, (const int[]){ 1, 3, 16, 17, 32, 64, 70 }, 7);
        s.Dv = t_pick(&r, (const int[]){ 1, 5, 16, 31, 64 }, 5);
        s.tq = dts[t_irange(&r, 0, 2)]; s.tkv = dts[t_irange(&r, 0, 2)]; s.to = dts[t_irange(&r, 0, 2)];
        if (c < 20) s.tq = s.tkv = s.to = ATTN_F32;
        lin_alloc(&m, &s, &r);
        d.kind = ATTN_LINEAR;
        d.causal = t_irange(&r, 0, 1);
        if (t_chance(&r, 0.3)) d.linear.eps = (float)(t_chance(&r, 0.5) ? 1e-3 : 0.5);
        use_len = t_chance(&r, 0.3);
        for (b = 0; b < s.B; ++b) { lq[b] = t_irange(&r, 0, s.Sq); lk[b] = t_irange(&r, 0, s.Sk); }
        if (use_len) { d.seqlens_q = lq; d.seqlens_k = lk; }
        th = t_irange(&r, 1, 3);
        d.n_threads = th;
        n = (size_t)s.B * s.Sq * s.Hq * s.Dv;
        ref = (double *)t_xmalloc(n * sizeof(double));
        got = (double *)t_xmalloc(n * sizeof(double));
        ref_linear(&m.tq, &m.tk, &m.tv, d.causal, d.linear.eps != 0.0f ? d.linear.eps : 1e-6,
                   use_len ? lq : NULL, use_len ? lk : NULL, ref);
        t_fill_nan(m.out, s.to, n);
        st = attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL);
        if (T_CHECK(st == ATTN_OK, "linear sweep #%d: %s", c, attn_status_str(st))) {
            t_read(&m.to, got);
            err = t_max_norm_err(ref, got, n);
            if (err > g_lin_worst) g_lin_worst = err;
            T_CHECK(err <= lin_tol(s.to),
                    "linear sweep #%d: err %.3g > %.3g (B%d Sq%d Sk%d Hq%d Hkv%d D%d Dv%d causal%d len%d q %s kv %s out %s)", c,
                    err, lin_tol(s.to), s.B, s.Sq, s.Sk, s.Hq, s.Hkv, s.D, s.Dv, d.causal, use_len, t_dt_name(s.tq),
                    t_dt_name(s.tkv), t_dt_name(s.to));
        }
        free(ref);
        free(got);
        lin_free(&m);
    }
}

/* 1, 2 and 3 threads, and a caller workspace: bitwise the same output */
static void test_linear_threads(void) {
    lin_shape s = { 2, 130, 130, 4, 2, 48, 40, ATTN_F32, ATTN_F16, ATTN_F32 };
    lin_bufs m;
    t_rng r = t_rng_seed(7);
    attn_desc d;
    size_t n = (size_t)2 * 130 * 4 * 40, bytes = 0, mallocs;
    float *first = (float *)t_xmalloc(n * sizeof(float));
    void *ws;
    int th, causal;
    lin_alloc(&m, &s, &r);
    for (causal = 0; causal <= 1; ++causal) {
        for (th = 1; th <= 3; ++th) {
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LINEAR; d.causal = causal; d.n_threads = th;
            T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "linear threads %d", th);
            if (th == 1) memcpy(first, m.out, n * sizeof(float));
            else T_CHECK(memcmp(first, m.out, n * sizeof(float)) == 0, "linear causal %d: %d threads differ from 1", causal, th);
        }
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINEAR; d.causal = causal; d.n_threads = 2;
        T_CHECK(attn_workspace_size(&d, m.tq, m.tk, m.tv, &bytes) == ATTN_OK && bytes > 0, "linear workspace size");
        ws = t_xmalloc(bytes);
        d.workspace = ws; d.workspace_size = bytes;
        memset(m.out, 0, n * sizeof(float));
        mallocs = t_attn_mallocs;
        T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "linear with a workspace");
        T_CHECK(t_attn_mallocs == mallocs, "linear with a caller workspace allocated %lu times",
                (unsigned long)(t_attn_mallocs - mallocs));
        T_CHECK(memcmp(first, m.out, n * sizeof(float)) == 0, "linear: the caller workspace changed the result");
        free(ws);
    }
    free(first);
    lin_free(&m);
}

/* attn_step over pieces of random sizes (1 token, several, more than a chunk) == the causal
   parallel form over the whole sequence; state.pos counts the tokens. */
static void test_linear_step(void) {
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    t_rng r = t_rng_seed(99);
    int c;
    for (c = 0; c < (T_QUICK ? 4 : 12); ++c) {
        lin_shape s;
        lin_bufs m;
        attn_desc d;
        attn_state st;
        size_t floats = 0, n;
        float *sbuf;
        double *ref, *got;
        int t0, ok = 1;
        s.B = t_irange(&r, 1, 2); s.Hkv = t_irange(&r, 1, 2); s.Hq = s.Hkv * t_irange(&r, 1, 2);
        s.Sq = s.Sk = t_irange(&r, 1, 200);
        s.D = t_pick(&r, (const int[]){ 4, 16, 33 }, 3); s.Dv = t_pick(&r, (const int[]){ 8, 19 }, 2);
        s.tq = dts[c % 3]; s.tkv = dts[(c / 3) % 3]; s.to = ATTN_F32;
        lin_alloc(&m, &s, &r);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINEAR; d.causal = 1; d.n_threads = t_irange(&r, 1, 2);
        n = (size_t)s.B * s.Sq * s.Hq * s.Dv;
        ref = (double *)t_xmalloc(n * sizeof(double));
        got = (double *)t_xmalloc(n * sizeof(double));
        ref_linear(&m.tq, &m.tk, &m.tv, 1, 1e-6, NULL, NULL, ref);
        T_CHECK(attn_state_size(&d, m.tq, m.tk, m.tv, &floats) == ATTN_OK &&
                floats == (size_t)s.B * s.Hkv * ((size_t)s.D * s.Dv + s.D), "linear state size %lu", (unsigned long)floats);
        sbuf = (float *)t_xmalloc((floats + 3) * sizeof(float));
        t_fill_nan(sbuf, ATTN_F32, floats + 3);
        T_CHECK(attn_state_init(&d, m.tq, m.tk, m.tv, sbuf, floats + 3, &st) == ATTN_OK && st.pos == 0, "linear state init");
        for (t0 = 0; t0 < s.Sq && ok;) {
            const int want_len = t_chance(&r, 0.5) ? 1 : t_irange(&r, 1, 90);
            const int len = want_len < s.Sq - t0 ? want_len : s.Sq - t0;
            const attn_tensor q = t_seq_view(m.tq, t0, len), k = t_seq_view(m.tk, t0, len);
            const attn_tensor v = t_seq_view(m.tv, t0, len), o = t_seq_view(m.to, t0, len);
            ok = T_CHECK(attn_step(&d, q, k, v, &st, o) == ATTN_OK, "linear step at %d (+%d)", t0, len);
            t0 += len;
        }
        T_CHECK(st.pos == s.Sq, "linear state pos %lld after %d tokens", st.pos, s.Sq);
        T_CHECK(isnan(sbuf[floats]) && isnan(sbuf[floats + 2]), "linear step wrote past the state's floats");
        t_read(&m.to, got);
        T_CHECK(t_max_norm_err(ref, got, n) <= lin_tol(s.to), "linear step case %d: err %.3g (Sq %d, q %s, kv %s)", c,
                t_max_norm_err(ref, got, n), s.Sq, t_dt_name(s.tq), t_dt_name(s.tkv));
        free(sbuf);
        free(ref);
        free(got);
        lin_free(&m);
    }
}

/* NaN in one query row gives NaN in that row only; a row that sees no key gives zeros. */
static void test_linear_edges(void) {
    lin_shape s = { 1, 6, 3, 1, 1, 8, 4, ATTN_F32, ATTN_F32, ATTN_F32 };
    lin_bufs m;
    t_rng r = t_rng_seed(5);
    attn_desc d;
    float *o;
    int i, j, nan_rows = 0, other_nan = 0, zero_rows = 1;
    lin_alloc(&m, &s, &r);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LINEAR; d.causal = 1;   /* Sq 6 over Sk 3: rows 0-2 sit before key 0 */
    ((float *)m.q)[5 * 8 + 2] = NAN;
    T_CHECK(attn_forward(&d, m.tq, m.tk, m.tv, m.to, NULL) == ATTN_OK, "linear edges");
    o = (float *)m.out;
    for (i = 0; i < 6; ++i)
        for (j = 0; j < 4; ++j) {
            if (i == 5) nan_rows += isnan(o[i * 4 + j]) != 0;
            else other_nan += isnan(o[i * 4 + j]) != 0;
            if (i < 3 && o[i * 4 + j] != 0.0f) zero_rows = 0;
        }
    T_CHECK(nan_rows == 4 && other_nan == 0, "linear: NaN in q row 5 gave %d NaN in that row, %d elsewhere", nan_rows, other_nan);
    T_CHECK(zero_rows, "linear: causal rows that see no key must be 0");
    lin_free(&m);
}

static int lin_expect(attn_status got, attn_status want, const char *what) { return t_expect_status(got, want, "linear", what); }

/* every error: the specific status, the output (and state) untouched */
static void test_linear_errors(void) {
    float q[2 * 3 * 2 * 4], k[2 * 3 * 1 * 4], v[2 * 3 * 1 * 5], out[2 * 3 * 2 * 5], sbuf[64], lse[12];
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 2, 3, 2, 4), tk = attn_tensor_dense(k, ATTN_F32, 2, 3, 1, 4);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 2, 3, 1, 5), to = attn_tensor_dense(out, ATTN_F32, 2, 3, 2, 5);
    attn_desc d, base;
    attn_state st, good;
    const int bad_len[2] = { 1, 4 }, len[2] = { 1, 2 };
    size_t floats = 0;
    int i;
    memset(q, 0, sizeof q); memset(k, 0, sizeof k); memset(v, 0, sizeof v);
    memset(&base, 0, sizeof base);
    base.kind = ATTN_LINEAR;
    T_CHECK(attn_state_size(&base, tq, tk, tv, &floats) == ATTN_OK && floats == 2 * (4 * 5 + 4), "linear state floats");
    T_CHECK(attn_state_init(&base, tq, tk, tv, sbuf, 64, &good) == ATTN_OK, "linear state init");
    for (i = 0; i < 41; ++i) {
        attn_tensor a = tq, b = tk, c = tv, o = to;
        attn_status want = ATTN_OK, got;
        const char *what = "";
        int step = 0;
        float *lp = NULL;
        d = base; st = good;
        switch (i) {
        case 0: d.scale = 0.5f; want = ATTN_ERR_KIND_OPTION; what = "scale"; break;
        case 1: d.window_left = 2; want = ATTN_ERR_KIND_OPTION; what = "window_left"; break;
        case 2: d.window_right = 2; want = ATTN_ERR_KIND_OPTION; what = "window_right"; break;
        case 3: d.dilation = 2; want = ATTN_ERR_KIND_OPTION; what = "dilation"; break;
        case 4: d.sink_tokens = 1; want = ATTN_ERR_KIND_OPTION; what = "sink_tokens"; break;
        case 5: d.global_tokens = 1; want = ATTN_ERR_KIND_OPTION; what = "global_tokens"; break;
        case 6: d.alibi_slopes = lse; want = ATTN_ERR_KIND_OPTION; what = "alibi"; break;
        case 7: d.softcap = 5.0f; want = ATTN_ERR_KIND_OPTION; what = "softcap"; break;
        case 8: d.bias.data = lse; d.bias.batch = d.bias.heads = 1; want = ATTN_ERR_KIND_OPTION; what = "bias"; break;
        case 9: d.dropout_p = 0.1f; want = ATTN_ERR_KIND_OPTION; what = "dropout"; break;
        case 10: d.rope = ATTN_ROPE_HALF; want = ATTN_ERR_KIND_OPTION; what = "rope"; break;
        case 11: d.bf16_kernels = 1; want = ATTN_ERR_KIND_OPTION; what = "bf16_kernels"; break;
        case 12: step = 1; d.cu_seqlens_q = d.cu_seqlens_k = len; d.varlen_batch = 1; want = ATTN_ERR_KIND_OPTION; what = "step cu_seqlens (packed: attn_forward/attn_backward only, test_packed.c)"; break;
        case 13: d.dbias = lse; want = ATTN_ERR_KIND_OPTION; what = "dbias"; break;
        case 14: lp = lse; want = ATTN_ERR_KIND_LSE; what = "lse"; break;
        case 15: d.linear.eps = -1e-3f; want = ATTN_ERR_LINEAR_EPS; what = "eps < 0"; break;
        case 16: d.linear.eps = INFINITY; want = ATTN_ERR_LINEAR_EPS; what = "eps inf"; break;
        case 17: d.linear.eps = NAN; want = ATTN_ERR_LINEAR_EPS; what = "eps nan"; break;
        case 18: d.causal = 2; want = ATTN_ERR_CAUSAL; what = "causal"; break;
        case 19: d.n_threads = -1; want = ATTN_ERR_N_THREADS; what = "n_threads"; break;
        case 20: d.seqlens_q = bad_len; want = ATTN_ERR_SEQLENS_Q; what = "seqlens_q"; break;
        case 21: d.seqlens_k = bad_len; want = ATTN_ERR_SEQLENS_K; what = "seqlens_k"; break;
        case 22: b.heads = 3; want = ATTN_ERR_V_HEADS; what = "k heads"; break;
        case 23: o.dim = 4; want = ATTN_ERR_OUT_SHAPE; what = "out dim"; break;
        case 24: d.workspace = sbuf; d.workspace_size = 8; want = ATTN_ERR_WORKSPACE; what = "workspace"; break;
        /* attn_step */
        case 25: step = 1; b.seq = c.seq = 2; want = ATTN_ERR_STEP_SEQ; what = "step k.seq"; break;
        case 26: step = 1; d.seqlens_q = len; want = ATTN_ERR_STEP_LENGTHS; what = "step seqlens_q"; break;
        case 27: step = 1; st.data = NULL; want = ATTN_ERR_STATE_NULL; what = "step state data"; break;
        case 28: step = 2; want = ATTN_ERR_STATE_NULL; what = "step state NULL"; break;
        case 29: step = 1; st.size = floats - 1; want = ATTN_ERR_STATE_SIZE; what = "step state size"; break;
        case 30: step = 1; st.kind = ATTN_SOFTMAX; want = ATTN_ERR_STATE_MISMATCH; what = "state kind"; break;
        case 31: step = 1; st.batch = 1; want = ATTN_ERR_STATE_MISMATCH; what = "state batch"; break;
        case 32: step = 1; st.dim_v = 4; want = ATTN_ERR_STATE_MISMATCH; what = "state dim_v"; break;
        case 33: step = 1; st.heads_kv = 2; want = ATTN_ERR_STATE_MISMATCH; what = "state heads_kv"; break;
        case 34: step = 1; st.heads = 1; want = ATTN_ERR_STATE_MISMATCH; what = "state heads"; break;
        case 35: step = 1; d.linear.eps = -2.0f; want = ATTN_ERR_LINEAR_EPS; what = "step eps"; break;
        case 36: step = 1; d.window_left = 1; want = ATTN_ERR_KIND_OPTION; what = "step window"; break;
        case 37: step = 3; want = ATTN_ERR_STATE_SIZE; what = "state_init floats"; break;
        case 38: step = 4; want = ATTN_ERR_STATE_NULL; what = "state_init data"; break;
        case 39: step = 5; want = ATTN_ERR_BWD_OVERLAP; what = "backward into q, k, v"; break;
        /* issue 27: a negative pos was reported as ATTN_ERR_STATE_SIZE */
        case 40: step = 1; st.pos = -1; want = ATTN_ERR_STATE_POS; what = "step state pos < 0"; break;
        }
        t_sentinel(out, sizeof out, 11);
        t_sentinel(sbuf, sizeof sbuf, 13);
        if (step == 0) got = attn_forward(&d, a, b, c, o, lp);
        else if (step == 1) got = attn_step(&d, a, b, c, &st, o);
        else if (step == 2) got = attn_step(&d, a, b, c, NULL, o);
        else if (step == 3) got = attn_state_init(&d, a, b, c, sbuf, floats - 1, &st);
        else if (step == 4) got = attn_state_init(&d, a, b, c, NULL, floats, &st);
        else got = attn_backward(&d, a, b, c, o, o, lse, a, b, c);
        lin_expect(got, want, what);
        T_CHECK(t_sentinel_ok(out, sizeof out, 11) && t_sentinel_ok(sbuf, sizeof sbuf, 13),
                "linear %s: an output or the state was written", what);
    }
    d = base;
    T_CHECK(attn_decode(&d, tq, NULL, to, NULL) == ATTN_ERR_KIND_OP, "linear has no attn_decode");
}

/* attn_step keeps attn_forward's memory rule (attn_tensor): out must not meet q, k, v or the
   state's memory, and out's rows must not overlap; each refused with ATTN_ERR_OUT_OVERLAP before
   anything (out, the state, the inputs out overlaps) is written. One arena holds every buffer,
   so "untouched" is the whole arena bytewise. Explicit strides throughout. */
static attn_tensor lin_view(float *p, int B, int S, int H, int D) {
    attn_tensor t = attn_tensor_dense(p, ATTN_F32, B, S, H, D);
    t.stride_head = D; t.stride_seq = (ptrdiff_t)H * D; t.stride_batch = (ptrdiff_t)S * H * D;
    return t;
}
static void test_linear_step_overlap(void) {
    enum { B = 2, S = 3, H = 2, D = 4, NQ = B * S * H * D, NS = 512, N = 4 * NQ + NS };
    static const attn_kind kinds[2] = { ATTN_LINEAR, ATTN_PERFORMER };
    float *arena = (float *)t_xmalloc(sizeof(float) * N), *copy = (float *)t_xmalloc(sizeof(float) * N);
    float *qp = arena, *kp = arena + NQ, *vp = arena + 2 * NQ, *op = arena + 3 * NQ, *sp = arena + 4 * NQ;
    t_rng r = t_rng_seed(0x51E9);
    int kind, i;
    for (i = 0; i < N; ++i) arena[i] = (float)t_normal(&r);
    for (kind = 0; kind < 2; ++kind)
        for (i = 0; i < 6; ++i) {
            attn_tensor q = lin_view(qp, B, S, H, D), k = lin_view(kp, B, S, H, D), v = lin_view(vp, B, S, H, D);
            attn_tensor o = lin_view(op, B, S, H, D);
            attn_desc d;
            attn_state st;
            size_t floats = 0;
            attn_status got;
            const char *what = "";
            memset(&d, 0, sizeof d);
            d.kind = kinds[kind]; d.performer.features = 8;
            if (!T_CHECK(attn_state_size(&d, q, k, v, &floats) == ATTN_OK && floats <= NS, "step overlap: state floats %lu",
                         (unsigned long)floats) ||
                !T_CHECK(attn_state_init(&d, q, k, v, sp, floats, &st) == ATTN_OK, "step overlap: state init"))
                break;
            switch (i) {
            case 0: o.data = sp + floats / 2; what = "out inside the state"; break;
            case 1: o.data = qp; what = "out == q"; break;
            case 2: o.data = vp + 1; what = "out over v"; break;
            case 3: o.stride_seq = D; what = "out rows overlap (seq stride = one head's row)"; break;
            case 4: o.data = sp + floats - 1; what = "out's first element on the state's last"; break;
            case 5: o.stride_head = 0; o.heads = 1; o.data = kp + S * H * D + (S - 1) * H * D; q.heads = k.heads = v.heads = 1;
                    what = "out over k's last row (one head)"; break;
            }
            if (i == 5 && !T_CHECK(attn_state_init(&d, q, k, v, sp, floats, &st) == ATTN_OK, "step overlap: state init (1 head)"))
                break;
            memcpy(copy, arena, sizeof(float) * N);
            got = attn_step(&d, q, k, v, &st, o);
            t_expect_status(got, ATTN_ERR_OUT_OVERLAP, kind ? "performer step" : "linear step", what);
            T_CHECK(memcmp(copy, arena, sizeof(float) * N) == 0 && st.pos == 0, "%s step %s: memory was written",
                    kind ? "performer" : "linear", what);
        }
    {   /* the valid call beside them: out, q, k, v and the state apart */
        attn_desc d;
        attn_state st;
        size_t floats = 0;
        attn_tensor q = lin_view(qp, B, S, H, D), k = lin_view(kp, B, S, H, D), v = lin_view(vp, B, S, H, D);
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINEAR;
        T_CHECK(attn_state_size(&d, q, k, v, &floats) == ATTN_OK && attn_state_init(&d, q, k, v, sp, floats, &st) == ATTN_OK &&
                attn_step(&d, q, k, v, &st, lin_view(op, B, S, H, D)) == ATTN_OK && st.pos == S, "linear step: the valid call");
    }
    free(arena); free(copy);
}

/* Issue 27 item 5: q.batch * k.heads > INT_MAX wrapped the int task count, so the size queries
   (which allocate nothing) answered ATTN_OK with a few bytes and a real call left most of out
   unwritten. B 65536, H 65537, S = D = 1: every query of every linear kind is ATTN_ERR_OVERFLOW
   with the result untouched; B 32767 (B H just under INT_MAX) is still served. */
static void test_linear_task_overflow(void) {
    static const attn_kind kinds[3] = { ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER };
    uint16_t dummy[4] = { 0, 0, 0, 0 };
    attn_tensor t = attn_tensor_dense(dummy, ATTN_BF16, 65536, 1, 65537, 1);
    attn_tensor ok = attn_tensor_dense(dummy, ATTN_BF16, 32767, 1, 65537, 1);
    int i, op;
    for (i = 0; i < 3; ++i) {
        attn_desc d;
        memset(&d, 0, sizeof d);
        d.kind = kinds[i];
        if (d.kind == ATTN_PERFORMER) d.performer.features = 4;
        for (op = 0; op < 3; ++op) {
            static const char *names[3] = { "workspace size", "backward workspace size", "state size" };
            size_t n = 77;
            attn_status s = op == 0 ? attn_workspace_size(&d, t, t, t, &n)
                          : op == 1 ? attn_backward_workspace_size(&d, t, t, t, &n) : attn_state_size(&d, t, t, t, &n);
            char what[96];
            snprintf(what, sizeof what, "%s %s, B 65536 x H 65537", attn_kind_name(d.kind), names[op]);
            t_expect_status(s, ATTN_ERR_OVERFLOW, "linear", what);
            T_CHECK(n == 77, "linear %s: the size was written", what);
        }
        {
            size_t n = 0;
            const attn_status s = attn_workspace_size(&d, ok, ok, ok, &n);
            /* a 32-bit size_t cannot hold the bytes of 2^31 tasks: there the honest answer is overflow */
            T_CHECK((s == ATTN_OK && n > 0) || (sizeof(size_t) < 8 && s == ATTN_ERR_OVERFLOW),
                    "%s workspace size at B H = 2^31 - 32769: %s", attn_kind_name(d.kind), attn_status_str(s));
        }
    }
}

void test_linear(void) {
    test_linear_sweep();
    test_linear_threads();
    test_linear_step();
    test_linear_edges();
    test_linear_errors();
    test_linear_step_overlap();
    test_linear_task_overflow();
    printf("      linear: largest passing f32/f16/bf16 out error %.3g (tolerance %.3g for f32 out)\n", g_lin_worst,
           lin_tol(ATTN_F32));
}
