/* tests/test_rwkv.c - RWKV scans: attn_rwkv4_* (WKV with the stable (aa, bb, pp) recurrence)
   and attn_rwkv6_* (RWKV-5/6 matrix-valued state per head), against naive double-precision
   references written here from ZOO.md's equations, sharing no code with attn.h:
     RWKV-4: the direct sums  wkv_t = (sum_{i<t} e^{(t-1-i)w + k_i} v_i + e^{u+k_t} v_t) / (same, v = 1)
             evaluated as written (normal inputs), and with a log-sum-exp shift where the
             sums overflow even in double (k ~ 1000): the library must stay finite and agree;
     RWKV-6: y_t[j] = sum_i r_t[i] (u_i k_t[i] v_t[j] + S_{t-1}[i][j]) with the state expanded as
             S_{t-1} = prod_{m<t} w_m S_0 + sum_{s<t} prod_{s<m<t} w_m k_s v_s^T (O(T^2 N^2)).
   Properties: step == forward, two pieces == one pass, thread counts 1/2/3/hook bitwise equal,
   f16/bf16 storage (mixed), strided views, RWKV-5 as a broadcast decay, head-size splits,
   workspace (no allocation), every bad argument a status with outputs untouched.
   Tolerances (max error / max(1, max |ref|)): f32 storage 1e-4 (RWKV-4: the SIMD exp is 2 ulp,
   the state accumulates T roundings); f16/bf16 out storage adds its rounding (2^-10 / 2^-7);
   RWKV-4 with keys near +-1000 adds T * 1e-4 (fp32 log-weights of size 1000 round at 6e-5). */
#include "test.h"
#include "fixture.h"

extern int t_attn_fail_mallocs;   /* tests/attn_impl.c: non-zero makes ATTN_MALLOC return NULL */

/* ---- buffers ---------------------------------------------------------------------------- */
typedef struct { attn_tensor t; void *buf; size_t n; } rk_buf;

/* [B, T, H, D] of dtype dt; pad > 0: a strided view with pad unused elements after each token */
static rk_buf rk_alloc(attn_dtype dt, int B, int T, int H, int D, int pad) {
    rk_buf r;
    memset(&r, 0, sizeof r);
    r.t.dtype = dt; r.t.batch = B; r.t.seq = T; r.t.heads = H; r.t.dim = D;
    r.t.stride_head = D;
    r.t.stride_seq = (ptrdiff_t)H * D + pad;
    r.t.stride_batch = (ptrdiff_t)T * r.t.stride_seq;
    r.n = t_extent(&r.t) + (size_t)pad;
    r.buf = t_xmalloc(r.n * t_dt_size(dt));
    t_fill_nan(r.buf, dt, r.n);          /* gaps must never be read */
    r.t.data = r.buf;
    return r;
}
static void rk_free(rk_buf *r) { free(r->buf); r->buf = NULL; }

/* tokens [t0, t0 + n) of a view, with explicit strides */
static attn_tensor rk_slice(const attn_tensor *full, int t0, int n) {
    attn_tensor s = *full;
    t_strides st = t_resolve(full);
    s.stride_batch = st.sb; s.stride_seq = st.ss; s.stride_head = st.sh;
    s.data = (char *)full->data + (ptrdiff_t)t_dt_size(full->dtype) * (ptrdiff_t)t0 * st.ss;
    s.seq = n;
    return s;
}


static double rk_tol(attn_dtype out_dt) { return 1e-4 + t_dt_rel(out_dt); }

static int rk_bytes_eq(const void *a, const void *b, size_t n) { return memcmp(a, b, n) == 0; }

/* a parallel hook that runs tasks backwards on thread 0 (order must not matter) */
static void rk_hook(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    (void)user; (void)n_threads;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, n_threads - 1);
}

/* ---- RWKV-4 reference ---------------------------------------------------------------------
   Channel c of batch b, token t (0-based within the call). With a state (aa0, bb0, pp0) the
   history weighs e^{pp0 + t w} at token t (the recurrence decays it once per token).
   shifted = 0: the direct sums as written; 1: every log-weight minus their max. */
typedef struct { double aa, bb, pp; int have; } rk4_hist;

static double rk4_ref_token(const double *k, const double *v, int t, double w, double u, const rk4_hist *H,
                            int shifted, double *num_out, double *den_out) {
    double M = -INFINITY, num = 0.0, den = 0.0;
    int i;
    if (shifted) {
        if (H->have) M = H->pp + t * w;
        for (i = 0; i < t; ++i) M = fmax(M, (t - 1 - i) * w + k[i]);
        M = fmax(M, u + k[t]);
    } else {
        M = 0.0;
    }
    if (H->have) { double e = exp(H->pp + t * w - M); num += e * H->aa; den += e * H->bb; }
    for (i = 0; i < t; ++i) { double e = exp((t - 1 - i) * w + k[i] - M); num += e * v[i]; den += e; }
    { double e = exp(u + k[t] - M); num += e * v[t]; den += e; }
    if (num_out) *num_out = num;
    if (den_out) *den_out = den;
    return num / den;
}

/* The state after T tokens in log form: log(bb e^pp) and aa / bb, from the sums (shifted). */
static void rk4_ref_state(const double *k, const double *v, int T, double w, const rk4_hist *H, double *log_den,
                          double *ratio) {
    double M = -INFINITY, num = 0.0, den = 0.0;
    int i;
    if (H->have) M = H->pp + T * w;
    for (i = 0; i < T; ++i) M = fmax(M, (T - 1 - i) * w + k[i]);
    if (H->have) { double e = exp(H->pp + T * w - M); num += e * H->aa; den += e * H->bb; }
    for (i = 0; i < T; ++i) { double e = exp((T - 1 - i) * w + k[i] - M); num += e * v[i]; den += e; }
    *log_den = M + log(den);
    *ratio = num / den;
}

typedef struct {
    int B, T, H, D, pad, big_k, with_state;
    attn_dtype dk, dv, dout;
} rk4_case;

/* Runs one case against the reference (outputs and the final state). */
static void rk4_check(const rk4_case *cs, t_rng *rng) {
    const int B = cs->B, T = cs->T, H = cs->H, D = cs->D, C = H * D;
    rk_buf k = rk_alloc(cs->dk, B, T, H, D, cs->pad), v = rk_alloc(cs->dv, B, T, H, D, cs->pad);
    rk_buf o = rk_alloc(cs->dout, B, T, H, D, cs->pad);
    float *td = (float *)t_xmalloc(sizeof(float) * C), *tf = (float *)t_xmalloc(sizeof(float) * C);
    float *st_in = (float *)t_xmalloc(sizeof(float) * 3 * B * C), *st_out = (float *)t_xmalloc(sizeof(float) * 3 * B * C);
    double *kd = (double *)t_xmalloc(sizeof(double) * B * T * C), *vd = (double *)t_xmalloc(sizeof(double) * B * T * C);
    double *od = (double *)t_xmalloc(sizeof(double) * B * T * C), *ref = (double *)t_xmalloc(sizeof(double) * B * T * C);
    double *kc = (double *)t_xmalloc(sizeof(double) * T), *vc = (double *)t_xmalloc(sizeof(double) * T);
    double err, tol, serr = 0.0, raw_overflow = 0.0;
    int b, t, c, finite = 1;
    attn_rwkv_desc d;
    attn_status s;
    memset(&d, 0, sizeof d);
    t_fill_normal(&k.t, rng, 1.0);
    t_fill_normal(&v.t, rng, 1.0);
    if (cs->big_k)   /* keys around +-1000: e^k overflows double, let alone float */
        for (b = 0; b < B; ++b) for (t = 0; t < T; ++t) for (c = 0; c < C; ++c)
            t_store(&k.t, b, t, c / D, c % D, t_round_dt((t_chance(rng, 0.5) ? 1.0 : -1.0) * (900.0 + 200.0 * t_unif(rng)), cs->dk));
    for (c = 0; c < C; ++c) { td[c] = (float)(0.7 * t_normal(rng)); tf[c] = (float)(0.7 * t_normal(rng)); }
    if (cs->with_state) {      /* a state left by a previous random sequence */
        rk_buf k0 = rk_alloc(ATTN_F32, B, 7, H, D, 0), v0 = rk_alloc(ATTN_F32, B, 7, H, D, 0), o0 = rk_alloc(ATTN_F32, B, 7, H, D, 0);
        t_fill_normal(&k0.t, rng, 1.0); t_fill_normal(&v0.t, rng, 1.0);
        s = attn_rwkv4_forward(&d, td, tf, k0.t, v0.t, o0.t, NULL, st_in);
        T_CHECK(s == ATTN_OK, "rwkv4 state prep: %s", attn_status_str(s));
        rk_free(&k0); rk_free(&v0); rk_free(&o0);
    }
    t_read(&k.t, kd); t_read(&v.t, vd);
    s = attn_rwkv4_forward(&d, td, tf, k.t, v.t, o.t, cs->with_state ? st_in : NULL, st_out);
    T_CHECK(s == ATTN_OK, "rwkv4 forward: %s", attn_status_str(s));
    t_read(&o.t, od);
    for (b = 0; b < B; ++b)
        for (c = 0; c < C; ++c) {
            const double w = -exp((double)td[c]), u = tf[c];
            rk4_hist hist;
            double ld, ratio, gl, gr;
            hist.have = cs->with_state;
            if (hist.have) { const float *sp = st_in + (size_t)b * 3 * C; hist.aa = sp[c]; hist.bb = sp[C + c]; hist.pp = sp[2 * C + c]; }
            for (t = 0; t < T; ++t) {
                kc[t] = kd[((size_t)b * T + t) * C + c];
                vc[t] = vd[((size_t)b * T + t) * C + c];
            }
            for (t = 0; t < T; ++t) {
                const size_t i = ((size_t)b * T + t) * C + c;
                double num, den;
                if (cs->big_k || cs->with_state) {
                    ref[i] = rk4_ref_token(kc, vc, t, w, u, &hist, 1, NULL, NULL);
                    if (cs->big_k) {        /* the unshifted sums really do overflow here */
                        (void)rk4_ref_token(kc, vc, t, w, u, &hist, 0, &num, &den);
                        if (!isfinite(num) || !isfinite(den)) raw_overflow += 1.0;
                    }
                } else {
                    ref[i] = rk4_ref_token(kc, vc, t, w, u, &hist, 0, NULL, NULL);
                }
                if (!isfinite(od[i])) finite = 0;
            }
            rk4_ref_state(kc, vc, T, w, &hist, &ld, &ratio);
            {
                const float *so = st_out + (size_t)b * 3 * C;
                gl = log((double)so[C + c]) + so[2 * C + c];
                gr = (double)so[c] / so[C + c];
                serr = fmax(serr, fabs(gl - ld) / fmax(1.0, fabs(ld)));
                serr = fmax(serr, fabs(gr - ratio) / fmax(1.0, fabs(ratio)));
            }
        }
    err = t_max_norm_err(ref, od, (size_t)B * T * C);
    /* keys near 1000: each fp32 log-weight (u + k, pp + w) is rounded at 2^-24 * 1024 = 6e-5,
       and pp carries one such rounding per token, so weights are exact to about T * 1e-4 */
    tol = rk_tol(cs->dout) + (cs->big_k ? T * 1e-4 : 0.0);
    T_CHECK(finite, "rwkv4 B%d T%d H%d D%d big_k %d: non-finite output", B, T, H, D, cs->big_k);
    T_CHECK(err <= tol, "rwkv4 B%d T%d H%d D%d pad %d big_k %d state %d dt %s/%s/%s: err %.3g > %.3g", B, T, H, D,
            cs->pad, cs->big_k, cs->with_state, t_dt_name(cs->dk), t_dt_name(cs->dv), t_dt_name(cs->dout), err, tol);
    T_CHECK(serr <= 1e-4 + (cs->big_k ? T * 1e-4 : 0.0), "rwkv4 B%d T%d H%d D%d big_k %d: state err %.3g", B, T, H, D, cs->big_k, serr);
    if (cs->big_k) T_CHECK(raw_overflow > 0.0, "rwkv4 big_k: the direct sums were expected to overflow");
    rk_free(&k); rk_free(&v); rk_free(&o);
    free(td); free(tf); free(st_in); free(st_out); free(kd); free(vd); free(od); free(ref); free(kc); free(vc);
}

/* step == forward, two pieces == one pass, thread counts: all bitwise */
static void rk4_properties(t_rng *rng, attn_dtype dt) {
    const int B = 2, T = 37, H = 3, D = 200, C = H * D, T1 = 21;   /* 12 blocks: sub-groups of 8 + 4; 3 chunks */
    rk_buf k = rk_alloc(dt, B, T, H, D, 5), v = rk_alloc(dt, B, T, H, D, 0);
    rk_buf o1 = rk_alloc(dt, B, T, H, D, 0), o2 = rk_alloc(dt, B, T, H, D, 0), o3 = rk_alloc(dt, B, 1, H, D, 0);
    const size_t SN = (size_t)3 * B * C, ob = o1.n * t_dt_size(dt);
    float *td = (float *)t_xmalloc(sizeof(float) * C), *tf = (float *)t_xmalloc(sizeof(float) * C);
    float *s0 = (float *)t_xmalloc(sizeof(float) * SN), *s1 = (float *)t_xmalloc(sizeof(float) * SN);
    float *s2 = (float *)t_xmalloc(sizeof(float) * SN);
    attn_rwkv_desc d;
    attn_status s;
    int t, nt, b, h, ok;
    memset(&d, 0, sizeof d);
    t_fill_normal(&k.t, rng, 2.0);
    t_fill_normal(&v.t, rng, 1.0);
    for (t = 0; t < C; ++t) { td[t] = (float)t_normal(rng); tf[t] = (float)t_normal(rng); }
    T_CHECK(attn_rwkv4_state_init(s0, B, C) == ATTN_OK, "rwkv4_state_init");
    /* one pass from an explicit empty state == from NULL */
    d.n_threads = 1;
    s = attn_rwkv4_forward(&d, td, tf, k.t, v.t, o1.t, NULL, s1);
    T_CHECK(s == ATTN_OK, "rwkv4 one pass: %s", attn_status_str(s));
    s = attn_rwkv4_forward(&d, td, tf, k.t, v.t, o2.t, s0, s2);
    T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
            "rwkv4 %s: state_init state != NULL state", t_dt_name(dt));
    /* thread counts and a hook */
    for (nt = 0; nt <= 4; ++nt) {
        memset(o2.buf, 0, ob); memset(s2, 0, SN * 4);
        d.n_threads = nt < 4 ? nt : 2;
        d.parallel = nt == 4 ? rk_hook : NULL;
        s = attn_rwkv4_forward(&d, td, tf, k.t, v.t, o2.t, NULL, s2);
        T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
                "rwkv4 %s: n_threads %d (hook %d) differs from 1 thread", t_dt_name(dt), d.n_threads, nt == 4);
    }
    d.parallel = NULL; d.n_threads = 2;
    /* two pieces (state carried, in place) == one pass */
    memset(o2.buf, 0, ob);
    s = attn_rwkv4_forward(&d, td, tf, rk_slice(&k.t, 0, T1), rk_slice(&v.t, 0, T1), rk_slice(&o2.t, 0, T1), NULL, s2);
    T_CHECK(s == ATTN_OK, "rwkv4 piece 1: %s", attn_status_str(s));
    s = attn_rwkv4_forward(&d, td, tf, rk_slice(&k.t, T1, T - T1), rk_slice(&v.t, T1, T - T1), rk_slice(&o2.t, T1, T - T1), s2, s2);
    T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
            "rwkv4 %s: two pieces != one pass", t_dt_name(dt));
    /* token by token with attn_rwkv4_step == forward */
    memcpy(s2, s0, SN * 4);
    ok = 1;
    for (t = 0; t < T; ++t) {
        s = attn_rwkv4_step(&d, td, tf, rk_slice(&k.t, t, 1), rk_slice(&v.t, t, 1), o3.t, s2);
        if (s != ATTN_OK) { ok = 0; break; }
        for (b = 0; b < B; ++b)
            for (h = 0; h < H; ++h)
                if (memcmp((char *)o3.buf + t_dt_size(dt) * (size_t)t_offset(&o3.t, b, 0, h, 0),
                           (char *)o1.buf + t_dt_size(dt) * (size_t)t_offset(&o1.t, b, t, h, 0), t_dt_size(dt) * D) != 0) ok = 0;
    }
    T_CHECK(ok && rk_bytes_eq(s1, s2, SN * 4), "rwkv4 %s: step != forward", t_dt_name(dt));
    rk_free(&k); rk_free(&v); rk_free(&o1); rk_free(&o2); rk_free(&o3);
    free(td); free(tf); free(s0); free(s1); free(s2);
}

/* ---- RWKV-6 reference -------------------------------------------------------------------- */
typedef struct {
    int B, T, H, D, head_size, pad, v5, with_state;
    attn_dtype dr, dk, dv, dw, dout;
} rk6_case;

/* decay in (0, 1): exp(-exp(x)), x ~ N(-1.5, 1) (rounded to the storage type) */
static void rk6_fill_w(const attn_tensor *w, t_rng *rng) {
    int b, t, h, d;
    for (b = 0; b < w->batch; ++b)
        for (t = 0; t < w->seq; ++t)
            for (h = 0; h < w->heads; ++h)
                for (d = 0; d < w->dim; ++d) {
                    double x = exp(-exp(-1.5 + t_normal(rng)));
                    double r = t_round_dt(x, w->dtype);
                    if (r >= 1.0) r = t_round_dt(0.99, w->dtype);
                    t_store(w, b, t, h, d, r);
                }
}

static void rk6_check(const rk6_case *cs, t_rng *rng) {
    const int B = cs->B, T = cs->T, H = cs->H, D = cs->D, C = H * D;
    const int N = cs->head_size ? cs->head_size : (D % 64 == 0 ? 64 : D), G = C / N;
    rk_buf r = rk_alloc(cs->dr, B, T, H, D, cs->pad), k = rk_alloc(cs->dk, B, T, H, D, cs->pad);
    rk_buf v = rk_alloc(cs->dv, B, T, H, D, 0), o = rk_alloc(cs->dout, B, T, H, D, cs->pad);
    rk_buf wb = rk_alloc(cs->dw, cs->v5 ? 1 : B, cs->v5 ? 1 : T, H, D, 0);
    const size_t SN = (size_t)B * C * N;
    attn_tensor w = wb.t;
    float *u = (float *)t_xmalloc(sizeof(float) * C), *st_in = (float *)t_xmalloc(sizeof(float) * SN);
    float *st_out = (float *)t_xmalloc(sizeof(float) * SN);
    const size_t NE = (size_t)B * T * C;
    double *rd = (double *)t_xmalloc(sizeof(double) * NE), *kd = (double *)t_xmalloc(sizeof(double) * NE);
    double *vd = (double *)t_xmalloc(sizeof(double) * NE), *wd = (double *)t_xmalloc(sizeof(double) * NE);
    double *od = (double *)t_xmalloc(sizeof(double) * NE), *ref = (double *)t_xmalloc(sizeof(double) * NE);
    double *sref = (double *)t_xmalloc(sizeof(double) * SN), *sgot = (double *)t_xmalloc(sizeof(double) * SN);
    double err, serr;
    size_t e;
    int b, g, t, s_, m, i, j;
    attn_rwkv_desc d;
    attn_status s;
    memset(&d, 0, sizeof d);
    d.head_size = cs->head_size;
    t_fill_normal(&r.t, rng, 1.0); t_fill_normal(&k.t, rng, 1.0); t_fill_normal(&v.t, rng, 1.0);
    rk6_fill_w(&wb.t, rng);
    /* RWKV-5: one decay row for every batch and token, as docs/guide.md gives it; with one head
       every stride is 0, which 0.2 read as dense [B, T, 1, C] past the C floats of wb */
    if (cs->v5) { w.batch = B; w.seq = T; w.stride_batch = 0; w.stride_seq = 0; w.stride_head = H == 1 ? 0 : D; }
    for (i = 0; i < C; ++i) u[i] = (float)t_normal(rng);
    for (e = 0; e < SN; ++e) st_in[e] = (float)(0.5 * t_normal(rng));
    s = attn_rwkv6_forward(&d, r.t, k.t, v.t, w, u, o.t, cs->with_state ? st_in : NULL, st_out);
    T_CHECK(s == ATTN_OK, "rwkv6 forward: %s", attn_status_str(s));
    t_read(&r.t, rd); t_read(&k.t, kd); t_read(&v.t, vd); t_read(&o.t, od);
    {   /* w through the (possibly broadcast) view, element by element */
        size_t q = 0;
        int h, dd;
        for (b = 0; b < B; ++b) for (t = 0; t < T; ++t) for (h = 0; h < H; ++h) for (dd = 0; dd < D; ++dd)
            wd[q++] = t_load(&w, b, t, h, dd);
    }
#define RK6_AT(a, bb_, tt_, cc_) (a)[((size_t)(bb_) * T + (tt_)) * C + (cc_)]
    for (b = 0; b < B; ++b)
        for (g = 0; g < G; ++g) {
            const int c0 = g * N;
            for (t = 0; t <= T; ++t) {     /* t == T: the final state */
                /* S_{t-1}[i][j] by the expanded formula */
                for (i = 0; i < N; ++i)
                    for (j = 0; j < N; ++j) {
                        double acc = 0.0, pw = 1.0;
                        for (m = 0; m < t; ++m) pw *= RK6_AT(wd, b, m, c0 + i);
                        if (cs->with_state) acc = pw * st_in[((size_t)b * G + g) * N * N + (size_t)i * N + j];
                        for (s_ = 0; s_ < t; ++s_) {
                            double p = 1.0;
                            for (m = s_ + 1; m < t; ++m) p *= RK6_AT(wd, b, m, c0 + i);
                            acc += p * RK6_AT(kd, b, s_, c0 + i) * RK6_AT(vd, b, s_, c0 + j);
                        }
                        sref[((size_t)b * G + g) * N * N + (size_t)i * N + j] = acc;
                    }
                if (t == T) break;
                for (j = 0; j < N; ++j) {
                    double y = 0.0;
                    for (i = 0; i < N; ++i)
                        y += RK6_AT(rd, b, t, c0 + i) * (u[c0 + i] * RK6_AT(kd, b, t, c0 + i) * RK6_AT(vd, b, t, c0 + j) +
                                                         sref[((size_t)b * G + g) * N * N + (size_t)i * N + j]);
                    RK6_AT(ref, b, t, c0 + j) = y;
                }
            }
        }
#undef RK6_AT
    for (e = 0; e < SN; ++e) sgot[e] = st_out[e];
    err = t_max_norm_err(ref, od, NE);
    serr = t_max_norm_err(sref, sgot, SN);
    T_CHECK(err <= rk_tol(cs->dout), "rwkv6 B%d T%d H%d D%d N%d pad %d v5 %d state %d dt %s/%s/%s/%s/%s: err %.3g > %.3g", B, T,
            H, D, N, cs->pad, cs->v5, cs->with_state, t_dt_name(cs->dr), t_dt_name(cs->dk), t_dt_name(cs->dv),
            t_dt_name(cs->dw), t_dt_name(cs->dout), err, rk_tol(cs->dout));
    T_CHECK(serr <= 1e-4, "rwkv6 B%d T%d H%d D%d N%d: state err %.3g", B, T, H, D, N, serr);
    rk_free(&r); rk_free(&k); rk_free(&v); rk_free(&o); rk_free(&wb);
    free(u); free(st_in); free(st_out); free(rd); free(kd); free(vd); free(wd); free(od); free(ref); free(sref); free(sgot);
}

static void rk6_properties(t_rng *rng, attn_dtype dt) {
    const int B = 2, T = 37, H = 2, D = 48, C = H * D, T1 = 21, N = 8;   /* 12 heads: sub-groups of 8 + 4 */
    rk_buf r = rk_alloc(dt, B, T, H, D, 3), k = rk_alloc(dt, B, T, H, D, 0), v = rk_alloc(dt, B, T, H, D, 0);
    rk_buf w = rk_alloc(dt, B, T, H, D, 0);
    rk_buf o1 = rk_alloc(dt, B, T, H, D, 0), o2 = rk_alloc(dt, B, T, H, D, 0), o3 = rk_alloc(dt, B, 1, H, D, 0);
    const size_t SN = (size_t)B * C * N, ob = o1.n * t_dt_size(dt);
    float *u = (float *)t_xmalloc(sizeof(float) * C), *s1 = (float *)t_xmalloc(sizeof(float) * SN);
    float *s2 = (float *)t_xmalloc(sizeof(float) * SN);
    size_t ws_bytes = 0, mallocs;
    void *ws;
    attn_rwkv_desc d;
    attn_status s;
    int t, nt, b, h, ok;
    memset(&d, 0, sizeof d);
    d.head_size = N;
    t_fill_normal(&r.t, rng, 1.0); t_fill_normal(&k.t, rng, 1.0); t_fill_normal(&v.t, rng, 1.0);
    rk6_fill_w(&w.t, rng);
    for (t = 0; t < C; ++t) u[t] = (float)t_normal(rng);
    d.n_threads = 1;
    s = attn_rwkv6_forward(&d, r.t, k.t, v.t, w.t, u, o1.t, NULL, s1);
    T_CHECK(s == ATTN_OK, "rwkv6 one pass: %s", attn_status_str(s));
    for (nt = 0; nt <= 4; ++nt) {
        memset(o2.buf, 0, ob); memset(s2, 0, SN * 4);
        d.n_threads = nt < 4 ? nt : 3;
        d.parallel = nt == 4 ? rk_hook : NULL;
        s = attn_rwkv6_forward(&d, r.t, k.t, v.t, w.t, u, o2.t, NULL, s2);
        T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
                "rwkv6 %s: n_threads %d (hook %d) differs from 1 thread", t_dt_name(dt), d.n_threads, nt == 4);
    }
    d.parallel = NULL; d.n_threads = 2;
    /* no state_out: the same outputs (scratch state) */
    memset(o2.buf, 0, ob);
    s = attn_rwkv6_forward(&d, r.t, k.t, v.t, w.t, u, o2.t, NULL, NULL);
    T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob), "rwkv6 %s: state_out NULL changes the output", t_dt_name(dt));
    /* caller workspace: no allocation */
    T_CHECK(attn_rwkv6_workspace_size(&d, r.t, k.t, v.t, w.t, &ws_bytes) == ATTN_OK && ws_bytes > 0, "rwkv6 workspace size");
    ws = t_xmalloc(ws_bytes);
    d.workspace = ws; d.workspace_size = ws_bytes;
    mallocs = t_attn_mallocs;
    memset(o2.buf, 0, ob);
    s = attn_rwkv6_forward(&d, r.t, k.t, v.t, w.t, u, o2.t, NULL, s2);
    T_CHECK(s == ATTN_OK && t_attn_mallocs == mallocs && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
            "rwkv6 %s: caller workspace (mallocs %lu)", t_dt_name(dt), (unsigned long)(t_attn_mallocs - mallocs));
    /* two pieces, state carried in place */
    memset(o2.buf, 0, ob);
    s = attn_rwkv6_forward(&d, rk_slice(&r.t, 0, T1), rk_slice(&k.t, 0, T1), rk_slice(&v.t, 0, T1), rk_slice(&w.t, 0, T1), u,
                           rk_slice(&o2.t, 0, T1), NULL, s2);
    T_CHECK(s == ATTN_OK, "rwkv6 piece 1: %s", attn_status_str(s));
    s = attn_rwkv6_forward(&d, rk_slice(&r.t, T1, T - T1), rk_slice(&k.t, T1, T - T1), rk_slice(&v.t, T1, T - T1),
                           rk_slice(&w.t, T1, T - T1), u, rk_slice(&o2.t, T1, T - T1), s2, s2);
    T_CHECK(s == ATTN_OK && rk_bytes_eq(o1.buf, o2.buf, ob) && rk_bytes_eq(s1, s2, SN * 4),
            "rwkv6 %s: two pieces != one pass", t_dt_name(dt));
    /* step token by token (workspace still given: steps allocate nothing) */
    memset(s2, 0, SN * 4);
    ok = 1;
    mallocs = t_attn_mallocs;
    for (t = 0; t < T; ++t) {
        s = attn_rwkv6_step(&d, rk_slice(&r.t, t, 1), rk_slice(&k.t, t, 1), rk_slice(&v.t, t, 1), rk_slice(&w.t, t, 1), u,
                            o3.t, s2);
        if (s != ATTN_OK) { ok = 0; break; }
        for (b = 0; b < B; ++b)
            for (h = 0; h < H; ++h)
                if (memcmp((char *)o3.buf + t_dt_size(dt) * (size_t)t_offset(&o3.t, b, 0, h, 0),
                           (char *)o1.buf + t_dt_size(dt) * (size_t)t_offset(&o1.t, b, t, h, 0), t_dt_size(dt) * D) != 0) ok = 0;
    }
    T_CHECK(ok && rk_bytes_eq(s1, s2, SN * 4) && t_attn_mallocs == mallocs, "rwkv6 %s: step != forward", t_dt_name(dt));
    free(ws);
    rk_free(&r); rk_free(&k); rk_free(&v); rk_free(&w); rk_free(&o1); rk_free(&o2); rk_free(&o3);
    free(u); free(s1); free(s2);
}

/* ---- errors: each status, outputs (out and state) untouched ------------------------------- */
#define RK_SENT 0x5A

typedef struct {
    rk_buf k, v, o, r, w;
    float *td, *tf, *u, *st_in, *st_out;
    size_t sn;
} rk_err_env;

static void rk_err_arm(rk_err_env *E) {
    t_sentinel(E->o.buf, E->o.n * t_dt_size(E->o.t.dtype), RK_SENT);
    t_sentinel(E->st_out, E->sn * sizeof(float), RK_SENT + 1);
}
static int rk_err_untouched(const rk_err_env *E) {
    return t_sentinel_ok(E->o.buf, E->o.n * t_dt_size(E->o.t.dtype), RK_SENT) &&
           t_sentinel_ok(E->st_out, E->sn * sizeof(float), RK_SENT + 1);
}
static void rk_expect(const rk_err_env *E, attn_status got, attn_status want, const char *what) {
    int untouched = rk_err_untouched(E);
    T_CHECK(got == want && untouched, "%s: got %s (%d), want %s (%d), outputs %s", what, attn_status_str(got), (int)got,
            attn_status_str(want), (int)want, untouched ? "untouched" : "WRITTEN");
    if (got == want && untouched) t_status_provoked[want] = 1;
}

static void rk_errors(t_rng *rng) {
    const int B = 1, T = 4, H = 2, D = 32, C = H * D;
    rk_err_env E;
    attn_rwkv_desc d;
    attn_tensor t1, t2;
    size_t bytes;
    int i;
    memset(&d, 0, sizeof d);
    E.k = rk_alloc(ATTN_F32, B, T, H, D, 0); E.v = rk_alloc(ATTN_F32, B, T, H, D, 0);
    E.o = rk_alloc(ATTN_F32, B, T, H, D, 0); E.r = rk_alloc(ATTN_F32, B, T, H, D, 0);
    E.w = rk_alloc(ATTN_F32, B, T, H, D, 0);
    t_fill_normal(&E.k.t, rng, 1.0); t_fill_normal(&E.v.t, rng, 1.0); t_fill_normal(&E.r.t, rng, 1.0);
    rk6_fill_w(&E.w.t, rng);
    E.sn = (size_t)B * C * 64;   /* >= RWKV-4's 3 B C and RWKV-6's B C N (N <= 32 here) */
    E.td = (float *)t_xmalloc(sizeof(float) * C); E.tf = (float *)t_xmalloc(sizeof(float) * C);
    E.u = (float *)t_xmalloc(sizeof(float) * C);
    E.st_in = (float *)t_xmalloc(sizeof(float) * E.sn); E.st_out = (float *)t_xmalloc(sizeof(float) * E.sn);
    for (i = 0; i < C; ++i) { E.td[i] = 0.1f; E.tf[i] = 0.2f; E.u[i] = 0.3f; }
    memset(E.st_in, 0, sizeof(float) * E.sn);

#define RK4(desc_, td_, tf_, k_, v_, o_, si_, so_, want, what) \
    do { rk_err_arm(&E); rk_expect(&E, attn_rwkv4_forward(desc_, td_, tf_, k_, v_, o_, si_, so_), want, what); } while (0)
#define RK6(desc_, r_, k_, v_, w_, u_, o_, si_, so_, want, what) \
    do { rk_err_arm(&E); rk_expect(&E, attn_rwkv6_forward(desc_, r_, k_, v_, w_, u_, o_, si_, so_), want, what); } while (0)

    /* the valid calls first (so the errors below are each one argument's fault) */
    rk_err_arm(&E);
    T_CHECK(attn_rwkv4_forward(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out) == ATTN_OK, "rwkv4 valid call");
    T_CHECK(attn_rwkv6_forward(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out) == ATTN_OK, "rwkv6 valid call");

    /* RWKV-4 */
    RK4(NULL, E.td, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_DESC, "rwkv4 desc NULL");
    d.n_threads = -1;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_N_THREADS, "rwkv4 n_threads -1");
    d.n_threads = 0;
    t1 = E.k.t; t1.data = NULL;
    RK4(&d, E.td, E.tf, t1, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_K, "rwkv4 k NULL");
    t1 = E.v.t; t1.data = NULL;
    RK4(&d, E.td, E.tf, E.k.t, t1, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_V, "rwkv4 v NULL");
    t1 = E.o.t; t1.data = NULL;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, t1, NULL, E.st_out, ATTN_ERR_NULL_OUT, "rwkv4 out NULL");
    RK4(&d, NULL, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_NULL_TIME_DECAY, "rwkv4 time_decay NULL");
    RK4(&d, E.td, NULL, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_NULL_TIME_FIRST, "rwkv4 time_first NULL");
    t1 = E.v.t; t1.dtype = (attn_dtype)7;
    RK4(&d, E.td, E.tf, E.k.t, t1, E.o.t, NULL, E.st_out, ATTN_ERR_DTYPE, "rwkv4 v dtype");
    t1 = E.k.t; t1.seq = 0; t2 = E.v.t; t2.seq = 0;
    RK4(&d, E.td, E.tf, t1, t2, E.o.t, NULL, E.st_out, ATTN_ERR_K_SHAPE, "rwkv4 k.seq 0");
    t1 = E.v.t; t1.dim = D - 1;
    RK4(&d, E.td, E.tf, E.k.t, t1, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_SHAPE, "rwkv4 v.dim");
    t1 = E.o.t; t1.seq = T - 1;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, t1, NULL, E.st_out, ATTN_ERR_RWKV_SHAPE, "rwkv4 out.seq");
    t1 = E.o.t; t1.stride_batch = (ptrdiff_t)T * H * D; t1.stride_seq = 0; t1.stride_head = D;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, t1, NULL, E.st_out, ATTN_ERR_OUT_BROADCAST, "rwkv4 out broadcast");
    t1 = E.k.t; t1.stride_seq = PTRDIFF_MAX / 2; t1.stride_head = D; t1.stride_batch = 0;
    RK4(&d, E.td, E.tf, t1, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_OVERFLOW, "rwkv4 k strides overflow");
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, E.st_out + 1, E.st_out, ATTN_ERR_RWKV_STATE_ALIAS, "rwkv4 state overlap");
    E.td[5] = NAN;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_TIME_DECAY, "rwkv4 time_decay NaN");
    E.td[5] = 0.1f; E.tf[C - 1] = INFINITY;
    RK4(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_TIME_FIRST, "rwkv4 time_first inf");
    E.tf[C - 1] = 0.2f;
    /* step */
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv4_step(&d, E.td, E.tf, E.k.t, E.v.t, E.o.t, E.st_out), ATTN_ERR_RWKV_STEP_SEQ, "rwkv4_step seq 4");
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv4_step(&d, E.td, E.tf, rk_slice(&E.k.t, 0, 1), rk_slice(&E.v.t, 0, 1), rk_slice(&E.o.t, 0, 1), NULL),
              ATTN_ERR_RWKV_NULL_STATE, "rwkv4_step state NULL");
    /* state_init */
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv4_state_init(NULL, 1, C), ATTN_ERR_RWKV_NULL_STATE, "rwkv4_state_init NULL");
    rk_expect(&E, attn_rwkv4_state_init(E.st_out, 0, C), ATTN_ERR_RWKV_STATE_SHAPE, "rwkv4_state_init batch 0");
    rk_expect(&E, attn_rwkv4_state_init(E.st_out, 1, -3), ATTN_ERR_RWKV_STATE_SHAPE, "rwkv4_state_init channels -3");
    rk_expect(&E, attn_rwkv4_state_init(E.st_out, INT_MAX, INT_MAX), ATTN_ERR_OVERFLOW, "rwkv4_state_init overflow");

    /* RWKV-6 */
    RK6(NULL, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_DESC, "rwkv6 desc NULL");
    d.n_threads = -2;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_N_THREADS, "rwkv6 n_threads -2");
    d.n_threads = 0; d.head_size = -1;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_HEAD_SIZE, "rwkv6 head_size -1");
    d.head_size = 12;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_HEAD_SIZE, "rwkv6 head_size 12 (dim 32)");
    d.head_size = 0;
    t1 = E.r.t; t1.data = NULL;
    RK6(&d, t1, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_NULL_R, "rwkv6 r NULL");
    t1 = E.k.t; t1.data = NULL;
    RK6(&d, E.r.t, t1, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_K, "rwkv6 k NULL");
    t1 = E.v.t; t1.data = NULL;
    RK6(&d, E.r.t, E.k.t, t1, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_NULL_V, "rwkv6 v NULL");
    t1 = E.w.t; t1.data = NULL;
    RK6(&d, E.r.t, E.k.t, E.v.t, t1, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_NULL_W, "rwkv6 w NULL");
    t1 = E.o.t; t1.data = NULL;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, t1, NULL, E.st_out, ATTN_ERR_NULL_OUT, "rwkv6 out NULL");
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, NULL, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_NULL_U, "rwkv6 u NULL");
    t1 = E.w.t; t1.dtype = (attn_dtype)-1;
    RK6(&d, E.r.t, E.k.t, E.v.t, t1, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_DTYPE, "rwkv6 w dtype");
    t1 = E.k.t; t1.heads = 0;
    RK6(&d, E.r.t, t1, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_K_SHAPE, "rwkv6 k.heads 0");
    t1 = E.r.t; t1.batch = 2;
    RK6(&d, t1, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_SHAPE, "rwkv6 r.batch");
    t1 = E.w.t; t1.heads = 1; t1.dim = C;
    RK6(&d, E.r.t, E.k.t, E.v.t, t1, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_SHAPE, "rwkv6 w [B,T,1,C] vs [B,T,2,32]");
    t1 = E.o.t; t1.stride_batch = 0; t1.stride_seq = 0; t1.stride_head = D;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, t1, NULL, E.st_out, ATTN_ERR_OUT_BROADCAST, "rwkv6 out broadcast");
    t1 = E.v.t; t1.stride_batch = PTRDIFF_MIN; t1.stride_seq = H * D; t1.stride_head = D;
    RK6(&d, E.r.t, E.k.t, t1, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_OVERFLOW, "rwkv6 v stride overflow");
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv6_step(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, E.st_out), ATTN_ERR_RWKV_STEP_SEQ, "rwkv6_step seq 4");
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv6_step(&d, rk_slice(&E.r.t, 0, 1), rk_slice(&E.k.t, 0, 1), rk_slice(&E.v.t, 0, 1),
                                  rk_slice(&E.w.t, 0, 1), E.u, rk_slice(&E.o.t, 0, 1), NULL),
              ATTN_ERR_RWKV_NULL_STATE, "rwkv6_step state NULL");
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, E.st_out + 3, E.st_out, ATTN_ERR_RWKV_STATE_ALIAS, "rwkv6 state overlap");
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, E.st_out, E.st_out + 3, ATTN_ERR_RWKV_STATE_ALIAS, "rwkv6 state overlap 2");
    E.u[7] = NAN;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_U, "rwkv6 u NaN");
    E.u[7] = 0.3f;
    ((float *)E.w.buf)[E.w.n - 1] = 1.5f;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_W_RANGE, "rwkv6 w 1.5 (last element)");
    ((float *)E.w.buf)[E.w.n - 1] = -0.0625f;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_W_RANGE, "rwkv6 w -1/16");
    ((float *)E.w.buf)[E.w.n - 1] = NAN;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_W_RANGE, "rwkv6 w NaN");
    ((float *)E.w.buf)[E.w.n - 1] = 1.0f;    /* 0 and 1 are allowed */
    ((float *)E.w.buf)[0] = 0.0f;
    rk_err_arm(&E);
    T_CHECK(attn_rwkv6_forward(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out) == ATTN_OK, "rwkv6 w 0 and 1 allowed");
    /* workspace: query NULL, too small, out of memory */
    rk_err_arm(&E);
    rk_expect(&E, attn_rwkv6_workspace_size(&d, E.r.t, E.k.t, E.v.t, E.w.t, NULL), ATTN_ERR_RWKV_NULL_BYTES, "rwkv6 bytes NULL");
    T_CHECK(attn_rwkv6_workspace_size(&d, E.r.t, E.k.t, E.v.t, E.w.t, &bytes) == ATTN_OK, "rwkv6 workspace query");
    t1 = E.r.t; t1.data = NULL;
    rk_expect(&E, attn_rwkv6_workspace_size(&d, t1, E.k.t, E.v.t, E.w.t, &bytes), ATTN_ERR_RWKV_NULL_R, "rwkv6 query r NULL");
    {
        void *ws = t_xmalloc(bytes);
        d.workspace = ws; d.workspace_size = bytes - 1;
        RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_RWKV_WORKSPACE, "rwkv6 workspace too small");
        d.workspace = NULL; d.workspace_size = 0;
        free(ws);
    }
    t_attn_fail_mallocs = 1;
    RK6(&d, E.r.t, E.k.t, E.v.t, E.w.t, E.u, E.o.t, NULL, E.st_out, ATTN_ERR_OUT_OF_MEMORY, "rwkv6 out of memory");
    t_attn_fail_mallocs = 0;
#undef RK4
#undef RK6
    rk_free(&E.k); rk_free(&E.v); rk_free(&E.o); rk_free(&E.r); rk_free(&E.w);
    free(E.td); free(E.tf); free(E.u); free(E.st_in); free(E.st_out);
}

/* ---- memory rule: out and state_out never meet an input, each other or their own rows -------
   Every buffer lives in one arena of values in [0, 1) (valid for every role: k, v, r, w, decay,
   bonus, state), so a refused call must leave the whole arena bytewise as it was. Before this
   rule these calls ran: rows written twice in an order set by the thread count, state_out inside
   out, out over the decay. Explicit strides throughout. */
static attn_tensor rk_view(float *p, int B, int T, int H, int D) {
    attn_tensor t = attn_tensor_dense(p, ATTN_F32, B, T, H, D);
    t.stride_head = D; t.stride_seq = (ptrdiff_t)H * D; t.stride_batch = (ptrdiff_t)T * H * D;
    return t;
}
static void rk_overlap(t_rng *rng) {
    enum { B = 1, T = 4, H = 2, D = 32, C = H * D, NT = B * T * C, NS = B * C * D, N = 5 * NT + 3 * C + 2 * NS };
    float *arena = (float *)t_xmalloc(sizeof(float) * N), *copy = (float *)t_xmalloc(sizeof(float) * N);
    float *kp = arena, *vp = kp + NT, *rp = vp + NT, *wp = rp + NT, *op = wp + NT;
    float *td = op + NT, *tf = td + C, *u = tf + C, *si = u + C, *so = si + NS;
    attn_rwkv_desc d;
    int i;
    memset(&d, 0, sizeof d);
    d.n_threads = 2;
    for (i = 0; i < N; ++i) arena[i] = (float)t_unif(rng);
    for (i = 0; i < 20; ++i) {
        attn_tensor k = rk_view(kp, B, T, H, D), v = rk_view(vp, B, T, H, D), r = rk_view(rp, B, T, H, D);
        attn_tensor w = rk_view(wp, B, T, H, D), o = rk_view(op, B, T, H, D);
        const float *a_td = td, *a_tf = tf, *a_u = u, *a_si = si;
        float *a_so = so;
        attn_status got, want = ATTN_ERR_RWKV_OVERLAP;
        const char *what = "";
        int six = i >= 10, step = 0;
        switch (i) {
        /* RWKV-4 */
        case 0: o.stride_seq = D; what = "rwkv4 out rows overlap"; break;
        case 1: a_so = op + 8; what = "rwkv4 state_out inside out"; break;
        case 2: o.data = kp; what = "rwkv4 out == k"; break;
        case 3: a_td = op + 16; what = "rwkv4 out over time_decay"; break;
        case 4: a_si = op; what = "rwkv4 out over state_in"; break;
        case 5: a_tf = so + 5; what = "rwkv4 state_out over time_first"; break;
        case 6: step = 1; a_so = op + 4; what = "rwkv4_step state inside out"; break;
        case 7: step = 1; o.data = so + 3 * C - 1; what = "rwkv4_step out over the state's last float"; break;
        case 8: o.data = vp + NT - 1; what = "rwkv4 out's first float on v's last"; break;
        case 9: a_si = so + 1; want = ATTN_ERR_RWKV_STATE_ALIAS; what = "rwkv4 state_in one float past state_out"; break;
        /* RWKV-6 */
        case 10: o.data = wp; what = "rwkv6 out == w"; break;
        case 11: a_u = op + 3; what = "rwkv6 out over u"; break;
        case 12: a_so = op + 5; a_si = NULL; what = "rwkv6 state_out inside out"; break;
        case 13: o.stride_seq = D; what = "rwkv6 out rows overlap"; break;
        case 14: o.data = rp; what = "rwkv6 out == r"; break;
        case 15: step = 1; o.data = so + 7; what = "rwkv6_step out inside the state"; break;
        case 16: a_si = op; what = "rwkv6 out over state_in"; break;
        case 17: step = 1; a_so = kp; what = "rwkv6_step state over k"; break;
        case 18: o.stride_head = 0; o.heads = 1; o.dim = C; o.data = vp; k.heads = v.heads = r.heads = w.heads = 1;
                 k.dim = v.dim = r.dim = w.dim = C; a_si = NULL; a_so = NULL; what = "rwkv6 flat [B, T, C] out == v"; break;
        case 19: a_so = si + NS - 1; want = ATTN_ERR_RWKV_STATE_ALIAS; what = "rwkv6 state_out on state_in's last float"; break;
        }
        if (step) { k.seq = v.seq = r.seq = w.seq = o.seq = 1; }
        memcpy(copy, arena, sizeof(float) * N);
        if (!six) got = step ? attn_rwkv4_step(&d, a_td, a_tf, k, v, o, a_so)
                             : attn_rwkv4_forward(&d, a_td, a_tf, k, v, o, a_si, a_so);
        else got = step ? attn_rwkv6_step(&d, r, k, v, w, a_u, o, a_so)
                        : attn_rwkv6_forward(&d, r, k, v, w, a_u, o, a_si, a_so);
        T_CHECK(got == want, "%s: got %s, want %s", what, attn_status_str(got), attn_status_str(want));
        if (T_CHECK(memcmp(copy, arena, sizeof(float) * N) == 0, "%s: memory was written", what) && got == want)
            t_status_provoked[want] = 1;
    }
    {   /* allowed: state_out == state_in (in place), inputs sharing memory with each other */
        attn_tensor k = rk_view(kp, B, T, H, D), o = rk_view(op, B, T, H, D);
        T_CHECK(attn_rwkv4_forward(&d, td, td, k, k, o, so, so) == ATTN_OK, "rwkv4: in-place state, k == v allowed");
        T_CHECK(attn_rwkv6_forward(&d, k, k, k, k, td, o, so, so) == ATTN_OK, "rwkv6: in-place state, r == k == v == w allowed");
    }
    free(arena); free(copy);
}

/* ---- gradients: attn_rwkv4_backward / attn_rwkv6_backward ---------------------------------
   Central differences (h = 1e-4) of independent double references of the forwards, written
   here from ZOO.md: RWKV-4 as the stable (aa, bb, pp) recurrence itself (the gradient of the
   final state is defined in those coordinates), RWKV-6 as the matrix recurrence. The loss is
   sum dout . out + sum dstate_out . state_out with random weights. Elements of the large
   tensors are sampled (up to 120 per gradient); [C] vectors and the states are checked whole.
   Bound: max |got - fd| / max(1, max |fd|) <= 2e-5 (measured <= 7e-7: fp32 gradients carried
   over up to 70 tokens). */
typedef struct {
    int B, T, C, N, G;                 /* N, G: RWKV-6 head size and heads */
    double *td, *tf, *k, *v, *r, *w, *u, *si, *dy, *dso;   /* [B][T][C] tensors; states [B][3][C] or [B][G][N][N] */
    int w_bcast;                       /* RWKV-6: 0 w [B][T][C]; 1 one row per batch entry [B][C]; 2 one row [C] */
} rkb_ref;

static double rk4b_loss(const rkb_ref *R) {
    const int B = R->B, T = R->T, C = R->C;
    double L = 0.0;
    int b, t, c;
    for (b = 0; b < B; ++b)
        for (c = 0; c < C; ++c) {
            const double w = -exp(R->td[c]), u = R->tf[c];
            double aa = R->si ? R->si[(size_t)b * 3 * C + c] : 0.0, bb = R->si ? R->si[((size_t)b * 3 + 1) * C + c] : 0.0;
            double pp = R->si ? R->si[((size_t)b * 3 + 2) * C + c] : -1e38;
            for (t = 0; t < T; ++t) {
                const size_t i = ((size_t)b * T + t) * C + c;
                const double kk = R->k[i], vv = R->v[i];
                double p = fmax(pp, u + kk), e1 = exp(pp - p), e2 = exp(u + kk - p);
                L += R->dy[i] * (e1 * aa + e2 * vv) / (e1 * bb + e2);
                p = fmax(pp + w, kk); e1 = exp(pp + w - p); e2 = exp(kk - p);
                aa = e1 * aa + e2 * vv; bb = e1 * bb + e2; pp = p;
            }
            if (R->dso) L += R->dso[(size_t)b * 3 * C + c] * aa + R->dso[((size_t)b * 3 + 1) * C + c] * bb +
                             R->dso[((size_t)b * 3 + 2) * C + c] * pp;
        }
    return L;
}

static double rk6b_loss(const rkb_ref *R) {
    const int B = R->B, T = R->T, C = R->C, N = R->N;
    double *S = (double *)t_xmalloc(sizeof(double) * (size_t)N * N), L = 0.0;
    int b, g, t, i, j;
    for (b = 0; b < B; ++b)
        for (g = 0; g < R->G; ++g) {
            const size_t so = ((size_t)b * R->G + g) * N * N;
            for (i = 0; i < N * N; ++i) S[i] = R->si ? R->si[so + i] : 0.0;
            for (t = 0; t < T; ++t) {
                const size_t row = ((size_t)b * T + t) * C + (size_t)g * N;
                const double *rr = R->r + row, *kk = R->k + row, *vv = R->v + row, *u = R->u + (size_t)g * N;
                const double *ww = R->w + (R->w_bcast == 2 ? 0 : R->w_bcast == 1 ? (size_t)b * C : row - (size_t)g * N) + (size_t)g * N;
                for (j = 0; j < N; ++j) {
                    double y = 0.0;
                    for (i = 0; i < N; ++i) y += rr[i] * (u[i] * kk[i] * vv[j] + S[(size_t)i * N + j]);
                    L += R->dy[row + j] * y;
                }
                for (i = 0; i < N; ++i)
                    for (j = 0; j < N; ++j) S[(size_t)i * N + j] = ww[i] * S[(size_t)i * N + j] + kk[i] * vv[j];
            }
            if (R->dso) for (i = 0; i < N * N; ++i) L += R->dso[so + i] * S[i];
        }
    free(S);
    return L;
}

/* largest |got - fd| / max(1, max |fd|) over up to 120 sampled elements of x[n] (all when n <= 120) */
static double rkb_fd(const rkb_ref *R, double (*loss)(const rkb_ref *), double *x, size_t n, const float *got, t_rng *rng) {
    const size_t m = n <= 120 ? n : 120;
    double worst = 0.0, big = 1.0;
    double *fd = (double *)t_xmalloc(sizeof(double) * m), *gv = (double *)t_xmalloc(sizeof(double) * m);
    size_t q;
    for (q = 0; q < m; ++q) {
        const size_t i = n <= 120 ? q : (size_t)t_irange(rng, 0, (int)n - 1);
        const double x0 = x[i], h = 1e-4 * fmax(1.0, fabs(x0));
        double lp, lm;
        x[i] = x0 + h; lp = loss(R);
        x[i] = x0 - h; lm = loss(R);
        x[i] = x0;
        fd[q] = (lp - lm) / (2 * h); gv[q] = got[i];
        big = fmax(big, fabs(fd[q]));
    }
    for (q = 0; q < m; ++q) {
        const double err = fabs(gv[q] - fd[q]) / big;
        if (!(err <= worst)) worst = err != err ? INFINITY : err;
    }
    free(fd); free(gv);
    return worst;
}

static float *rkb_f(const double *x, size_t n) {
    float *f = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) f[i] = (float)x[i];
    return f;
}
static double *rkb_d(size_t n, t_rng *rng, double mu, double sigma) {
    double *x = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) x[i] = (double)(float)(mu + sigma * t_normal(rng));   /* exact in fp32 */
    return x;
}

typedef struct { int B, T, H, D, with_state, with_dso; } rk4b_case;

static void rk4b_check(const rk4b_case *cs, t_rng *rng) {
    const int B = cs->B, T = cs->T, H = cs->H, D = cs->D, C = H * D;
    const size_t NE = (size_t)B * T * C, NS = (size_t)B * 3 * C;
    rkb_ref R;
    float *fk, *fv, *fdy, *ftd, *ftf, *fsi = NULL, *fdso = NULL, *dk, *dv, *dtd, *dtf, *dsi;
    attn_rwkv_desc d;
    attn_status s;
    double e[5] = { 0, 0, 0, 0, 0 };
    int i;
    memset(&R, 0, sizeof R);
    memset(&d, 0, sizeof d);
    R.B = B; R.T = T; R.C = C;
    R.k = rkb_d(NE, rng, 0.0, 1.0); R.v = rkb_d(NE, rng, 0.0, 1.0); R.dy = rkb_d(NE, rng, 0.0, 1.0);
    R.td = rkb_d((size_t)C, rng, -0.5, 1.0); R.tf = rkb_d((size_t)C, rng, 0.0, 0.7);
    fk = rkb_f(R.k, NE); fv = rkb_f(R.v, NE); fdy = rkb_f(R.dy, NE); ftd = rkb_f(R.td, (size_t)C); ftf = rkb_f(R.tf, (size_t)C);
    if (cs->with_state) {        /* a state left by 9 earlier tokens */
        float *k0 = (float *)t_xmalloc(sizeof(float) * (size_t)B * 9 * C), *o0 = (float *)t_xmalloc(sizeof(float) * (size_t)B * 9 * C);
        fsi = (float *)t_xmalloc(sizeof(float) * NS);
        for (i = 0; i < B * 9 * C; ++i) k0[i] = (float)t_normal(rng);
        s = attn_rwkv4_forward(&d, ftd, ftf, attn_tensor_dense(k0, ATTN_F32, B, 9, H, D), attn_tensor_dense(k0, ATTN_F32, B, 9, H, D),
                               attn_tensor_dense(o0, ATTN_F32, B, 9, H, D), NULL, fsi);
        T_CHECK(s == ATTN_OK, "rwkv4 bwd state prep: %s", attn_status_str(s));
        R.si = (double *)t_xmalloc(sizeof(double) * NS);
        for (i = 0; i < (int)NS; ++i) R.si[i] = fsi[i];
        free(k0); free(o0);
    }
    if (cs->with_dso) { R.dso = rkb_d(NS, rng, 0.0, 1.0); fdso = rkb_f(R.dso, NS); }
    dk = (float *)t_xmalloc(sizeof(float) * NE); dv = (float *)t_xmalloc(sizeof(float) * NE);
    dtd = (float *)t_xmalloc(sizeof(float) * C); dtf = (float *)t_xmalloc(sizeof(float) * C); dsi = (float *)t_xmalloc(sizeof(float) * NS);
    s = attn_rwkv4_backward(&d, ftd, ftf, attn_tensor_dense(fk, ATTN_F32, B, T, H, D), attn_tensor_dense(fv, ATTN_F32, B, T, H, D),
                            attn_tensor_dense(fdy, ATTN_F32, B, T, H, D), fsi, fdso, attn_tensor_dense(dk, ATTN_F32, B, T, H, D),
                            attn_tensor_dense(dv, ATTN_F32, B, T, H, D), dtd, dtf, dsi);
    if (T_CHECK(s == ATTN_OK, "rwkv4 backward: %s", attn_status_str(s))) {
        e[0] = rkb_fd(&R, rk4b_loss, R.k, NE, dk, rng);
        e[1] = rkb_fd(&R, rk4b_loss, R.v, NE, dv, rng);
        e[2] = rkb_fd(&R, rk4b_loss, R.td, (size_t)C, dtd, rng);
        e[3] = rkb_fd(&R, rk4b_loss, R.tf, (size_t)C, dtf, rng);
        if (R.si) e[4] = rkb_fd(&R, rk4b_loss, R.si, NS, dsi, rng);
        T_CHECK(e[0] <= 2e-5 && e[1] <= 2e-5 && e[2] <= 2e-5 && e[3] <= 2e-5 && e[4] <= 2e-5,
                "rwkv4 backward B%d T%d H%d D%d state %d dstate_out %d: err dk %.3g dv %.3g dtime_decay %.3g dtime_first %.3g dstate_in %.3g",
                B, T, H, D, cs->with_state, cs->with_dso, e[0], e[1], e[2], e[3], e[4]);
    }
    free(R.k); free(R.v); free(R.dy); free(R.td); free(R.tf); free(R.si); free(R.dso);
    free(fk); free(fv); free(fdy); free(ftd); free(ftf); free(fsi); free(fdso); free(dk); free(dv); free(dtd); free(dtf); free(dsi);
}

typedef struct { int B, T, H, D, N, with_state, with_dso, w_bcast; attn_dtype dt; } rk6b_case;

static void rk6b_check(const rk6b_case *cs, t_rng *rng) {
    const int B = cs->B, T = cs->T, H = cs->H, D = cs->D, C = H * D, N = cs->N, G = C / N;
    const size_t NE = (size_t)B * T * C, NS = (size_t)B * C * N;
    const size_t NW = cs->w_bcast == 2 ? (size_t)C : cs->w_bcast == 1 ? (size_t)B * C : NE;
    rkb_ref R;
    float *fr, *fk, *fv, *fw, *fu, *fdy, *fsi = NULL, *fdso = NULL, *dr, *dk, *dv, *dw, *du, *dsi;
    attn_tensor tw, tdw;
    attn_rwkv_desc d;
    attn_status s;
    double e[6] = { 0, 0, 0, 0, 0, 0 };
    size_t i;
    memset(&R, 0, sizeof R);
    memset(&d, 0, sizeof d);
    d.head_size = N;
    R.B = B; R.T = T; R.C = C; R.N = N; R.G = G; R.w_bcast = cs->w_bcast;
    R.r = rkb_d(NE, rng, 0.0, 1.0); R.k = rkb_d(NE, rng, 0.0, 1.0); R.v = rkb_d(NE, rng, 0.0, 1.0);
    R.dy = rkb_d(NE, rng, 0.0, 1.0); R.u = rkb_d((size_t)C, rng, 0.0, 1.0);
    R.w = (double *)t_xmalloc(sizeof(double) * NW);
    for (i = 0; i < NW; ++i) R.w[i] = (double)(float)(0.05 + 0.9 * t_unif(rng));   /* inside (0, 1): the FD steps stay in range */
    fr = rkb_f(R.r, NE); fk = rkb_f(R.k, NE); fv = rkb_f(R.v, NE); fdy = rkb_f(R.dy, NE); fu = rkb_f(R.u, (size_t)C); fw = rkb_f(R.w, NW);
    if (cs->with_state) { R.si = rkb_d(NS, rng, 0.0, 0.5); fsi = rkb_f(R.si, NS); }
    if (cs->with_dso) { R.dso = rkb_d(NS, rng, 0.0, 1.0); fdso = rkb_f(R.dso, NS); }
    dr = (float *)t_xmalloc(sizeof(float) * NE); dk = (float *)t_xmalloc(sizeof(float) * NE); dv = (float *)t_xmalloc(sizeof(float) * NE);
    dw = (float *)t_xmalloc(sizeof(float) * NW); du = (float *)t_xmalloc(sizeof(float) * C); dsi = (float *)t_xmalloc(sizeof(float) * NS);
    tw = attn_tensor_dense(fw, ATTN_F32, B, T, H, D);     /* the broadcast decay: zero strides, dw likewise */
    tw.stride_head = D; tw.stride_seq = cs->w_bcast ? 0 : (ptrdiff_t)C; tw.stride_batch = cs->w_bcast == 2 ? 0 : cs->w_bcast ? C : (ptrdiff_t)T * C;
    tdw = tw; tdw.data = dw;
    s = attn_rwkv6_backward(&d, attn_tensor_dense(fr, ATTN_F32, B, T, H, D), attn_tensor_dense(fk, ATTN_F32, B, T, H, D),
                            attn_tensor_dense(fv, ATTN_F32, B, T, H, D), tw, fu, attn_tensor_dense(fdy, ATTN_F32, B, T, H, D),
                            fsi, fdso, attn_tensor_dense(dr, ATTN_F32, B, T, H, D), attn_tensor_dense(dk, ATTN_F32, B, T, H, D),
                            attn_tensor_dense(dv, ATTN_F32, B, T, H, D), tdw, du, dsi);
    if (T_CHECK(s == ATTN_OK, "rwkv6 backward: %s", attn_status_str(s))) {
        e[0] = rkb_fd(&R, rk6b_loss, R.r, NE, dr, rng);
        e[1] = rkb_fd(&R, rk6b_loss, R.k, NE, dk, rng);
        e[2] = rkb_fd(&R, rk6b_loss, R.v, NE, dv, rng);
        e[3] = rkb_fd(&R, rk6b_loss, R.w, NW, dw, rng);
        e[4] = rkb_fd(&R, rk6b_loss, R.u, (size_t)C, du, rng);
        e[5] = rkb_fd(&R, rk6b_loss, R.si ? R.si : R.dy, R.si ? NS : 0, dsi, rng);
        T_CHECK(e[0] <= 2e-5 && e[1] <= 2e-5 && e[2] <= 2e-5 && e[3] <= 2e-5 && e[4] <= 2e-5 && e[5] <= 2e-5,
                "rwkv6 backward B%d T%d H%d D%d N%d state %d dstate_out %d w_bcast %d: err dr %.3g dk %.3g dv %.3g dw %.3g du %.3g dstate_in %.3g",
                B, T, H, D, N, cs->with_state, cs->with_dso, cs->w_bcast, e[0], e[1], e[2], e[3], e[4], e[5]);
    }
    free(R.r); free(R.k); free(R.v); free(R.dy); free(R.u); free(R.w); free(R.si); free(R.dso);
    free(fr); free(fk); free(fv); free(fdy); free(fu); free(fw); free(fsi); free(fdso);
    free(dr); free(dk); free(dv); free(dw); free(du); free(dsi);
}

/* Gradients bitwise the same for thread counts 1, 2, 3 and a hook running tasks backwards;
   a NULL gradient leaves the others as they were; a caller workspace allocates nothing. */
static void rkb_properties(t_rng *rng) {
    const int B = 2, T = 45, H = 2, D = 80, C = H * D, N = 16;   /* RWKV-4: 2 blocks per head; RWKV-6: 10 heads */
    const size_t NE = (size_t)B * T * C, S4 = (size_t)B * 3 * C, S6 = (size_t)B * C * N;
    float *in = (float *)t_xmalloc(sizeof(float) * (6 * NE + 3 * C + S4 + S6 + 3 * S6));
    float *k = in, *v = k + NE, *r = v + NE, *w = r + NE, *dy = w + NE, *td = dy + NE, *tf = td + C, *u = tf + C;
    float *s4 = u + C, *s6 = s4 + S4, *g4 = s6 + S6, *g6 = g4 + S6;
    float *out[2], *ws;
    size_t on = 4 * NE + 2 * C + S6, bytes, mallocs;
    attn_rwkv_desc d;
    attn_status s;
    int pass, nt, i, ok;
    for (i = 0; i < (int)NE; ++i) { k[i] = (float)t_normal(rng); v[i] = (float)t_normal(rng); r[i] = (float)t_normal(rng);
                                    w[i] = (float)(0.05 + 0.9 * t_unif(rng)); dy[i] = (float)t_normal(rng); }
    for (i = 0; i < C; ++i) { td[i] = (float)(0.7 * t_normal(rng)); tf[i] = (float)t_normal(rng); u[i] = (float)t_normal(rng); }
    for (i = 0; i < (int)S6; ++i) { s6[i] = (float)(0.5 * t_normal(rng)); g6[i] = (float)t_normal(rng); }
    for (i = 0; i < (int)S4; ++i) g4[i] = (float)t_normal(rng);
    memset(&d, 0, sizeof d);
    T_CHECK(attn_rwkv4_forward(&d, td, tf, attn_tensor_dense(k, ATTN_F32, B, 9, H, D), attn_tensor_dense(v, ATTN_F32, B, 9, H, D),
                               attn_tensor_dense(dy, ATTN_F32, B, 9, H, D), NULL, s4) == ATTN_OK, "rkb state prep");
    /* rk(...) the dense view of p */
#define RKT(p) attn_tensor_dense(p, ATTN_F32, B, T, H, D)
    for (pass = 0; pass < 2; ++pass) {          /* 0: RWKV-4, 1: RWKV-6 */
        out[0] = (float *)t_xmalloc(sizeof(float) * on); out[1] = (float *)t_xmalloc(sizeof(float) * on);
        for (nt = 0; nt <= 4; ++nt) {
            float *o = out[nt > 0], *o1 = o, *o2 = o1 + NE, *o3 = o2 + NE, *o4 = o3 + NE, *o5 = o4 + NE, *o6 = o5 + C, *o7 = o6 + C;
            memset(o, 0, sizeof(float) * on);
            d.head_size = N; d.n_threads = nt == 0 ? 1 : nt < 4 ? nt : 2; d.parallel = nt == 4 ? rk_hook : NULL;
            s = pass == 0 ? attn_rwkv4_backward(&d, td, tf, RKT(k), RKT(v), RKT(dy), s4, g4, RKT(o1), RKT(o2), o5, o6, o7)
                          : attn_rwkv6_backward(&d, RKT(r), RKT(k), RKT(v), RKT(w), u, RKT(dy), s6, g6, RKT(o1), RKT(o2), RKT(o3),
                                                RKT(o4), o5, o7);
            T_CHECK(s == ATTN_OK && (nt == 0 || memcmp(out[0], out[1], sizeof(float) * on) == 0),
                    "rwkv%d backward: n_threads %d (hook %d) differs from 1 thread", pass ? 6 : 4, d.n_threads, nt == 4);
        }
        {   /* only dk (and dstate_in): the same values */
            float *o = out[1];
            attn_tensor none;
            memset(&none, 0, sizeof none);
            memset(o, 0, sizeof(float) * on);
            d.parallel = NULL; d.n_threads = 2;
            s = pass == 0 ? attn_rwkv4_backward(&d, td, tf, RKT(k), RKT(v), RKT(dy), s4, g4, RKT(o), none, NULL, NULL, o + 4 * NE + 2 * C)
                          : attn_rwkv6_backward(&d, RKT(r), RKT(k), RKT(v), RKT(w), u, RKT(dy), s6, g6, none, RKT(o + NE), none, none,
                                                NULL, o + 4 * NE + 2 * C);
            ok = s == ATTN_OK && memcmp(out[0] + (pass ? NE : 0), o + (pass ? NE : 0), sizeof(float) * NE) == 0 &&
                 memcmp(out[0] + 4 * NE + 2 * C, o + 4 * NE + 2 * C, sizeof(float) * (pass ? S6 : S4)) == 0;
            T_CHECK(ok, "rwkv%d backward: NULL gradients change the others", pass ? 6 : 4);
            /* caller workspace: no allocation */
            s = pass == 0 ? attn_rwkv4_backward_workspace_size(&d, RKT(k), RKT(v), &bytes)
                          : attn_rwkv6_backward_workspace_size(&d, RKT(r), RKT(k), RKT(v), RKT(w), &bytes);
            T_CHECK(s == ATTN_OK && bytes > 0, "rwkv%d backward workspace query", pass ? 6 : 4);
            ws = (float *)t_xmalloc(bytes);
            d.workspace = ws; d.workspace_size = bytes;
            memset(o, 0, sizeof(float) * on);
            mallocs = t_attn_mallocs;
            s = pass == 0 ? attn_rwkv4_backward(&d, td, tf, RKT(k), RKT(v), RKT(dy), s4, g4, RKT(o), RKT(o + NE), o + 4 * NE,
                                                o + 4 * NE + C, o + 4 * NE + 2 * C)
                          : attn_rwkv6_backward(&d, RKT(r), RKT(k), RKT(v), RKT(w), u, RKT(dy), s6, g6, RKT(o), RKT(o + NE),
                                                RKT(o + 2 * NE), RKT(o + 3 * NE), o + 4 * NE, o + 4 * NE + 2 * C);
            T_CHECK(s == ATTN_OK && t_attn_mallocs == mallocs && memcmp(out[0], o, sizeof(float) * on) == 0,
                    "rwkv%d backward: caller workspace (mallocs %lu)", pass ? 6 : 4, (unsigned long)(t_attn_mallocs - mallocs));
            d.workspace = NULL; d.workspace_size = 0;
            free(ws);
        }
        free(out[0]); free(out[1]);
    }
#undef RKT
    free(in);
}

/* Every status of the backwards' own checks, gradients untouched (sentinels). */
static void rkb_errors(t_rng *rng) {
    const int B = 2, T = 5, H = 2, D = 8, C = H * D;
    const size_t NE = (size_t)B * T * C, NS = (size_t)B * C * D;      /* RWKV-6 state with N = 8 >= RWKV-4's 3 B C */
    float *in = (float *)t_xmalloc(sizeof(float) * (5 * NE + 3 * C + 2 * NS)), *gr = (float *)t_xmalloc(sizeof(float) * (4 * NE + 2 * C + NS));
    float *k = in, *v = k + NE, *r = v + NE, *w = r + NE, *dy = w + NE, *td = dy + NE, *tf = td + C, *u = tf + C, *si = u + C, *so = si + NS;
    float *g1 = gr, *g2 = g1 + NE, *g3 = g2 + NE, *g4 = g3 + NE, *gc1 = g4 + NE, *gc2 = gc1 + C, *gs = gc2 + C;
    const size_t gn = sizeof(float) * (4 * NE + 2 * C + NS);
    attn_rwkv_desc d;
    attn_tensor t1, t2;
    size_t bytes;
    int i;
    memset(&d, 0, sizeof d);
    for (i = 0; i < (int)(5 * NE + 3 * C + 2 * NS); ++i) in[i] = (float)(0.1 + 0.8 * t_unif(rng));
#define RKT(p) attn_tensor_dense(p, ATTN_F32, B, T, H, D)
#define RKB(call, want, what) do { \
        attn_status got_; int untouched_; \
        t_sentinel(gr, gn, 0x3C); got_ = (call); untouched_ = t_sentinel_ok(gr, gn, 0x3C); \
        T_CHECK(got_ == (want) && untouched_, "%s: got %s, want %s, gradients %s", what, attn_status_str(got_), \
                attn_status_str(want), untouched_ ? "untouched" : "WRITTEN"); \
        if (got_ == (want) && untouched_) t_status_provoked[want] = 1; } while (0)
#define B4(td_, k_, v_, dy_, si_, dso_, dk_, dv_, dtd_, dtf_, dsi_) attn_rwkv4_backward(&d, td_, tf, k_, v_, dy_, si_, dso_, dk_, dv_, dtd_, dtf_, dsi_)
#define B6(r_, w_, u_, dy_, si_, dso_, dr_, dk_, dw_, du_, dsi_) attn_rwkv6_backward(&d, r_, RKT(k), RKT(v), w_, u_, dy_, si_, dso_, dr_, dk_, RKT(g3), dw_, du_, dsi_)
    T_CHECK(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, gs) == ATTN_OK, "rwkv4 backward valid call");
    T_CHECK(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs) == ATTN_OK, "rwkv6 backward valid call");
    t1 = RKT(dy); t1.data = NULL;
    RKB(B4(td, RKT(k), RKT(v), t1, si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_NULL_DOUT, "rwkv4 backward dout NULL");
    RKB(B6(RKT(r), RKT(w), u, t1, si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_NULL_DOUT, "rwkv6 backward dout NULL");
    RKB(B4(NULL, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_NULL_TIME_DECAY, "rwkv4 backward time_decay NULL");
    RKB(B6(RKT(r), RKT(w), NULL, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_NULL_U, "rwkv6 backward u NULL");
    t1 = RKT(dy); t1.seq = T - 1;
    RKB(B4(td, RKT(k), RKT(v), t1, si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_SHAPE, "rwkv4 backward dout.seq");
    t1 = RKT(g1); t1.dim = D / 2;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, t1, RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_SHAPE, "rwkv6 backward dr.dim");
    t1 = RKT(g1); t1.dtype = (attn_dtype)9;
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, t1, RKT(g2), gc1, gc2, gs), ATTN_ERR_DTYPE, "rwkv4 backward dk dtype");
    /* broadcast gradients: dk/dv/dr never; dw only seq, or batch and seq */
    t1 = RKT(g2); t1.stride_seq = 0;
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), t1, gc1, gc2, gs), ATTN_ERR_RWKV_GRAD_BROADCAST, "rwkv4 backward dv stride_seq 0");
    t1 = RKT(g1); t1.stride_batch = 0;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, t1, RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_GRAD_BROADCAST, "rwkv6 backward dr stride_batch 0");
    t1 = RKT(g4); t1.stride_batch = 0;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), t1, gc1, gs), ATTN_ERR_RWKV_GRAD_BROADCAST, "rwkv6 backward dw batch-only broadcast");
    t1 = RKT(g4); t1.stride_head = 0;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), t1, gc1, gs), ATTN_ERR_RWKV_GRAD_BROADCAST, "rwkv6 backward dw stride_head 0");
    /* overlaps: gradients against inputs, each other and their own rows */
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(k), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv4 backward dk == k");
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g1), gc1, gc2, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv4 backward dk == dv");
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), td, gc2, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv4 backward dtime_decay == time_decay");
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, so + 1), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv4 backward dstate_in over dstate_out");
    t1 = RKT(g1); t1.stride_seq = D;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, t1, RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv6 backward dr rows overlap");
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(dy), gc1, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv6 backward dw == dout");
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), u, gs), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv6 backward du == u");
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, g4 + 5), ATTN_ERR_RWKV_BWD_OVERLAP, "rwkv6 backward dstate_in over dw");
    /* values */
    td[3] = INFINITY;
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_TIME_DECAY, "rwkv4 backward time_decay inf");
    td[3] = 0.5f; w[NE - 1] = 1.25f;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_W_RANGE, "rwkv6 backward w 1.25");
    w[NE - 1] = 0.5f; d.head_size = 3;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_HEAD_SIZE, "rwkv6 backward head_size 3");
    d.head_size = 0;
    /* workspace */
    RKB(attn_rwkv4_backward_workspace_size(&d, RKT(k), RKT(v), NULL), ATTN_ERR_RWKV_NULL_BYTES, "rwkv4 backward query bytes NULL");
    RKB(attn_rwkv6_backward_workspace_size(&d, RKT(r), RKT(k), RKT(v), RKT(w), NULL), ATTN_ERR_RWKV_NULL_BYTES, "rwkv6 backward query bytes NULL");
    t2 = RKT(k); t2.data = NULL;
    RKB(attn_rwkv4_backward_workspace_size(&d, t2, RKT(v), &bytes), ATTN_ERR_NULL_K, "rwkv4 backward query k NULL");
    T_CHECK(attn_rwkv6_backward_workspace_size(&d, RKT(r), RKT(k), RKT(v), RKT(w), &bytes) == ATTN_OK, "rwkv6 backward query");
    d.workspace = in; d.workspace_size = bytes - 1;
    RKB(B6(RKT(r), RKT(w), u, RKT(dy), si, so, RKT(g1), RKT(g2), RKT(g4), gc1, gs), ATTN_ERR_RWKV_WORKSPACE, "rwkv6 backward workspace too small");
    T_CHECK(attn_rwkv4_backward_workspace_size(&d, RKT(k), RKT(v), &bytes) == ATTN_OK, "rwkv4 backward query");
    d.workspace_size = bytes - 1;
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_RWKV_WORKSPACE, "rwkv4 backward workspace too small");
    d.workspace = NULL; d.workspace_size = 0;
    t_attn_fail_mallocs = 1;
    RKB(B4(td, RKT(k), RKT(v), RKT(dy), si, so, RKT(g1), RKT(g2), gc1, gc2, gs), ATTN_ERR_OUT_OF_MEMORY, "rwkv4 backward out of memory");
    t_attn_fail_mallocs = 0;
#undef B4
#undef B6
#undef RKB
#undef RKT
    free(in); free(gr);
}

/* ---- the upstream references' autograd (tests/fixtures/rwkv_bwd_ref.py) --------------------
   HF's RWKV-4 rwkv_linear_attention_cpu and fla's naive_recurrent_rwkv6 (RWKV-6, and RWKV-5
   with one broadcast decay row), each from a state with the final state's gradient: forward
   outputs, final states and every gradient within 1e-4 max(1, |ref|). */
static double *rkb_fix(const char *name, size_t n, int *ok) {
    double *p = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (!T_FIXTURE("rwkv_bwd_ref.txt", name, p, n)) { *ok = 0; memset(p, 0, sizeof(double) * n); }
    return p;
}
static float *rkb_fixf(const char *name, size_t n, int *ok) {
    double *p = rkb_fix(name, n, ok);
    float *f = rkb_f(p, n);
    free(p);
    return f;
}
static double rkb_cmp(const char *name, const float *got, size_t n, int *ok) {
    double *ref = rkb_fix(name, n, ok), worst = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) {
        const double e = fabs(got[i] - ref[i]) / fmax(1.0, fabs(ref[i]));
        if (!(e <= worst)) worst = e != e ? INFINITY : e;
    }
    free(ref);
    return worst;
}

static void rkb_fixture(void) {
    double dims[4], e = 0.0;
    int ok = 1, pass;
    attn_rwkv_desc d;
    memset(&d, 0, sizeof d);
    if (T_CHECK(T_FIXTURE("rwkv_bwd_ref.txt", "rwkv4_dims", dims, 3), "rwkv_bwd_ref.txt unreadable")) {
        const int B = (int)dims[0], T = (int)dims[1], C = (int)dims[2];
        const size_t NE = (size_t)B * T * C, NS = (size_t)B * 3 * C;
        float *td = rkb_fixf("rwkv4_time_decay", C, &ok), *tf = rkb_fixf("rwkv4_time_first", C, &ok);
        float *k = rkb_fixf("rwkv4_k", NE, &ok), *v = rkb_fixf("rwkv4_v", NE, &ok), *dy = rkb_fixf("rwkv4_dout", NE, &ok);
        float *si = rkb_fixf("rwkv4_state_in", NS, &ok), *dso = rkb_fixf("rwkv4_dstate_out", NS, &ok);
        float *o = (float *)t_xmalloc(sizeof(float) * NE), *so = (float *)t_xmalloc(sizeof(float) * NS);
        float *dk = (float *)t_xmalloc(sizeof(float) * NE), *dv = (float *)t_xmalloc(sizeof(float) * NE);
        float *dtd = (float *)t_xmalloc(sizeof(float) * C), *dtf = (float *)t_xmalloc(sizeof(float) * C), *dsi = (float *)t_xmalloc(sizeof(float) * NS);
#define RKT(p) attn_tensor_dense(p, ATTN_F32, B, T, 1, C)
        ok &= attn_rwkv4_forward(&d, td, tf, RKT(k), RKT(v), RKT(o), si, so) == ATTN_OK;
        ok &= attn_rwkv4_backward(&d, td, tf, RKT(k), RKT(v), RKT(dy), si, dso, RKT(dk), RKT(dv), dtd, dtf, dsi) == ATTN_OK;
#undef RKT
        e = fmax(e, rkb_cmp("rwkv4_out", o, NE, &ok)); e = fmax(e, rkb_cmp("rwkv4_state_out", so, NS, &ok));
        e = fmax(e, rkb_cmp("rwkv4_dk", dk, NE, &ok)); e = fmax(e, rkb_cmp("rwkv4_dv", dv, NE, &ok));
        e = fmax(e, rkb_cmp("rwkv4_dtime_decay", dtd, C, &ok)); e = fmax(e, rkb_cmp("rwkv4_dtime_first", dtf, C, &ok));
        e = fmax(e, rkb_cmp("rwkv4_dstate_in", dsi, NS, &ok));
        T_CHECK(ok && e <= 1e-4, "HF RWKV-4 autograd fixture: largest relative error %.3g (bound 1e-4)", e);
        printf("      rwkv: HF RWKV-4 autograd fixture (out, state, dk, dv, dtime_decay, dtime_first, dstate_in): largest relative error %.3g\n", e);
        free(td); free(tf); free(k); free(v); free(dy); free(si); free(dso); free(o); free(so); free(dk); free(dv); free(dtd); free(dtf); free(dsi);
    }
    for (pass = 0; pass < 2; ++pass) {      /* fla RWKV-6, then RWKV-5 (one decay row) */
        const char *p = pass ? "rwkv5" : "rwkv6";
        char nm[64];
        sprintf(nm, "%s_dims", p);
        ok = 1; e = 0.0;
        if (T_CHECK(T_FIXTURE("rwkv_bwd_ref.txt", nm, dims, 4), "rwkv_bwd_ref.txt: %s", nm)) {
            const int B = (int)dims[0], T = (int)dims[1], H = (int)dims[2], N = (int)dims[3], C = H * N;
            const size_t NE = (size_t)B * T * C, NS = (size_t)B * C * N, NW = pass ? (size_t)C : NE;
            float *in[8], *o = (float *)t_xmalloc(sizeof(float) * NE), *so = (float *)t_xmalloc(sizeof(float) * NS);
            float *g[4], *du = (float *)t_xmalloc(sizeof(float) * C), *dsi = (float *)t_xmalloc(sizeof(float) * NS);
            static const char *const names[8] = { "r", "k", "v", "w", "u", "state_in", "dout", "dstate_out" };
            static const char *const gnames[4] = { "dr", "dk", "dv", "dw" };
            const size_t sizes[8] = { NE, NE, NE, NW, (size_t)C, NS, NE, NS };
            attn_tensor w, dw;
            int i;
            for (i = 0; i < 8; ++i) { sprintf(nm, "%s_%s", p, names[i]); in[i] = rkb_fixf(nm, sizes[i], &ok); }
            for (i = 0; i < 4; ++i) g[i] = (float *)t_xmalloc(sizeof(float) * (i == 3 ? NW : NE));
            w = attn_tensor_dense(in[3], ATTN_F32, B, T, H, N);
            if (pass) { w.stride_batch = 0; w.stride_seq = 0; }          /* RWKV-5: [H, N] broadcast */
            dw = w; dw.data = g[3];
#define RKT(q) attn_tensor_dense(q, ATTN_F32, B, T, H, N)
            d.head_size = N;
            ok &= attn_rwkv6_forward(&d, RKT(in[0]), RKT(in[1]), RKT(in[2]), w, in[4], RKT(o), in[5], so) == ATTN_OK;
            ok &= attn_rwkv6_backward(&d, RKT(in[0]), RKT(in[1]), RKT(in[2]), w, in[4], RKT(in[6]), in[5], in[7], RKT(g[0]),
                                      RKT(g[1]), RKT(g[2]), dw, du, dsi) == ATTN_OK;
#undef RKT
            sprintf(nm, "%s_out", p); e = fmax(e, rkb_cmp(nm, o, NE, &ok));
            sprintf(nm, "%s_state_out", p); e = fmax(e, rkb_cmp(nm, so, NS, &ok));
            for (i = 0; i < 4; ++i) { sprintf(nm, "%s_%s", p, gnames[i]); e = fmax(e, rkb_cmp(nm, g[i], i == 3 ? NW : NE, &ok)); }
            sprintf(nm, "%s_du", p); e = fmax(e, rkb_cmp(nm, du, C, &ok));
            sprintf(nm, "%s_dstate_in", p); e = fmax(e, rkb_cmp(nm, dsi, NS, &ok));
            T_CHECK(ok && e <= 1e-4, "fla %s autograd fixture: largest relative error %.3g (bound 1e-4)", pass ? "RWKV-5" : "RWKV-6", e);
            printf("      rwkv: fla naive_recurrent_rwkv6 autograd fixture (%s: out, state, dr, dk, dv, dw, du, dstate_in): largest relative error %.3g\n",
                   pass ? "RWKV-5, broadcast w" : "RWKV-6", e);
            for (i = 0; i < 8; ++i) free(in[i]);
            for (i = 0; i < 4; ++i) free(g[i]);
            free(o); free(so); free(du); free(dsi);
        }
    }
}

void test_rwkv(void) {
    t_rng rng = t_rng_seed(0x52574B56ull);
    static const attn_dtype dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };
    int i;
    /* RWKV-4 against the direct sums (and the shifted sums where they overflow) */
    {
        static const rk4_case cases[] = {
            /* B  T   H  D    pad big state  k          v          out */
            { 1, 40, 1, 64,  0, 0, 0, ATTN_F32,  ATTN_F32,  ATTN_F32 },
            { 2, 33, 3, 40,  3, 0, 0, ATTN_F32,  ATTN_F32,  ATTN_F32 },
            { 1, 25, 1, 150, 0, 0, 1, ATTN_F32,  ATTN_F32,  ATTN_F32 },   /* blocks 64 + 64 + 22, a state */
            { 2, 20, 2, 17,  0, 0, 0, ATTN_F16,  ATTN_F16,  ATTN_F16 },
            { 1, 20, 2, 70,  2, 0, 0, ATTN_BF16, ATTN_BF16, ATTN_BF16 },
            { 1, 18, 1, 33,  0, 0, 0, ATTN_F16,  ATTN_BF16, ATTN_F32 },
            { 1, 30, 2, 24,  0, 1, 0, ATTN_F32,  ATTN_F32,  ATTN_F32 },   /* k ~ +-1000: overflowing sums */
            { 1, 16, 1, 20,  0, 1, 1, ATTN_BF16, ATTN_F16,  ATTN_F32 },
        };
        const int n = (int)(sizeof cases / sizeof cases[0]);
        for (i = 0; i < n; ++i) rk4_check(&cases[i], &rng);
        if (!T_QUICK) {     /* a random sweep */
            for (i = 0; i < 12; ++i) {
                rk4_case c;
                c.B = t_irange(&rng, 1, 3); c.T = t_irange(&rng, 1, 40); c.H = t_irange(&rng, 1, 3);
                c.D = t_irange(&rng, 1, 140); c.pad = t_irange(&rng, 0, 2); c.big_k = t_chance(&rng, 0.25);
                c.with_state = t_chance(&rng, 0.5);
                c.dk = dts[t_irange(&rng, 0, 2)]; c.dv = dts[t_irange(&rng, 0, 2)]; c.dout = dts[t_irange(&rng, 0, 2)];
                rk4_check(&c, &rng);
            }
        }
    }
    for (i = 0; i < 3; ++i) rk4_properties(&rng, dts[i]);
    /* RWKV-5/6 against the expanded sums */
    {
        static const rk6_case cases[] = {
            /* B  T   H  D   hs  pad v5 state  r          k          v          w          out */
            { 1, 12, 1, 64,  0,  0, 0, 0, ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32 },   /* N = 64 */
            { 2, 9,  2, 16,  0,  2, 0, 1, ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32 },   /* N = dim */
            { 1, 7,  1, 128, 0,  0, 1, 1, ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32,  ATTN_F32 },   /* [B,T,C]: 2 heads, v5 */
            { 1, 8,  2, 24,  8,  1, 0, 0, ATTN_F16,  ATTN_F16,  ATTN_F16,  ATTN_F16,  ATTN_F16 },
            { 2, 8,  1, 32,  16, 0, 1, 0, ATTN_BF16, ATTN_BF16, ATTN_BF16, ATTN_BF16, ATTN_BF16 },
            { 1, 10, 3, 8,   0,  0, 0, 1, ATTN_F16,  ATTN_BF16, ATTN_F32,  ATTN_F16,  ATTN_BF16 },
        };
        const int n = (int)(sizeof cases / sizeof cases[0]);
        for (i = 0; i < n; ++i) rk6_check(&cases[i], &rng);
    }
    for (i = 0; i < 3; ++i) rk6_properties(&rng, dts[i]);
    rk_errors(&rng);
    rk_overlap(&rng);
    {   /* gradients against central differences */
        static const rk4b_case c4[] = {
            /* B  T   H  D   state dso */
            { 1, 12, 1, 6,   0, 0 },
            { 2, 37, 1, 5,   1, 1 },     /* two chunks of 32 */
            { 1, 70, 2, 70,  1, 1 },     /* blocks 64 + 6 per head, three chunks */
            { 2, 33, 3, 4,   0, 1 },
        };
        static const rk6b_case c6[] = {
            /* B  T   H  D   N  state dso bcast dt */
            { 1, 10, 1, 8,   8, 0, 0, 0, ATTN_F32 },
            { 2, 37, 2, 8,   4, 1, 1, 0, ATTN_F32 },   /* 4 heads, two chunks */
            { 1, 70, 1, 32, 16, 1, 1, 0, ATTN_F32 },   /* three chunks */
            { 2, 35, 2, 6,   3, 1, 1, 2, ATTN_F32 },   /* RWKV-5: one decay row, dw summed over batch and tokens */
            { 3, 20, 1, 8,   8, 0, 1, 1, ATTN_F32 },   /* a decay row per batch entry: dw summed over tokens */
            { 1, 40, 1, 96, 48, 1, 1, 0, ATTN_F32 },   /* 2 heads of 48: three 16-lane blocks, two chunks */
        };
        for (i = 0; i < (int)(sizeof c4 / sizeof c4[0]); ++i) rk4b_check(&c4[i], &rng);
        for (i = 0; i < (int)(sizeof c6 / sizeof c6[0]); ++i) rk6b_check(&c6[i], &rng);
    }
    rkb_properties(&rng);
    rkb_errors(&rng);
    rkb_fixture();
    test_port_rwkv4_hf();            /* tests/test_ports.c */
    test_port_rwkv6_fla();
}
