/* tests/test_ssm.c - state-space scans: Mamba's selective scan (attn_ssm_selective_scan), its
   one-token step (attn_ssm_selective_step), the causal depthwise conv1d and its step.

   References (written here from ZOO.md's "State space" definitions, in double, sharing no code
   with attn.h):
     sr_scan   the sequential selective_scan_ref recurrence: delta += delta_bias, softplus
               (threshold 20), x = exp(delta A) x + delta B u, y = C.x + D u, y *= silu(z),
               state reset at every packed sequence start, last state returned
     sr_conv   out[c][t] = bias[c] + sum_k w[c][k] x[c][t-(K-1)+k] (history before t = 0), SiLU
     cr_scan   the same with complex A (selective_scan_ref with A.is_complex()): complex x,
               B, C given as (re, im) pairs (per token: "(L two)"), y = 2 Re(sum_n C_n x_n) + D u

   TOLERANCES (inputs stored as f16/bf16 are exact inputs of the reference)
     scan y:        max |y - ref| <= 2e-4 * max(1, max |ref|), plus one rounding of the y dtype
                    (2^-10 f16, 2^-7 bf16); state_out 2e-4 * max(1, max |ref state|)
     conv out:      1e-5 relative, plus one rounding of the out dtype
     properties:    thread counts 1/2/3 and the parallel hook bitwise; two pieces with the
                    carried state == one pass bitwise (x86: the same per-token operations; NEON
                    within 1e-6); L steps == one scan within 1e-6; packed varlen == separate
                    calls bitwise; complex A: y and states as the real scan's tolerances, 3
                    threads and L steps bitwise equal to one scan
     decay:         the kernel's exp(dt A) (a degree-5 2^r, 9.2e-8 fit error, ~1.5 ulp) compounded
                    over 300 tokens: state relative error <= 3e-7 per token (a 4e-5 exp error
                    fails it; the y tolerance above does not widen) */
#include "test.h"

#define SR_TOL 2e-4
#define SR_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---------------------------------------------------------------------------------------- */
/* Views: [batch, chans, len] with optional padding (own addressing, from the documented layout) */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    attn_ssm_tensor t;
    int nb, nc, nl;
    size_t elems;                 /* buffer size in elements */
} sv;

static ptrdiff_t sv_off(const sv *v, int b, int c, int l) {
    ptrdiff_t sb = v->t.stride_batch, sc = v->t.stride_chan;
    return (ptrdiff_t)b * sb + (ptrdiff_t)c * sc + l;
}
/* padded: strides larger than dense (gaps filled with NaN that must never be read) */
static sv sv_make(attn_dtype dt, int nb, int nc, int nl, int padded) {
    sv v;
    memset(&v, 0, sizeof v);
    v.nb = nb; v.nc = nc; v.nl = nl; v.t.dtype = dt;
    if (padded) { v.t.stride_chan = nl + 3; v.t.stride_batch = (ptrdiff_t)nc * (nl + 3) + 5; }
    else { v.t.stride_chan = nl; v.t.stride_batch = (ptrdiff_t)nc * nl; }
    v.elems = (size_t)sv_off(&v, nb - 1, nc - 1, nl - 1) + 1;
    v.t.data = t_xmalloc(v.elems * t_dt_size(dt));
    t_fill_nan(v.t.data, dt, v.elems);
    return v;
}
static double sv_get(const sv *v, int b, int c, int l) { return t_load_at(v->t.data, v->t.dtype, sv_off(v, b, c, l)); }
static void sv_set(const sv *v, int b, int c, int l, double x) { t_store_at(v->t.data, v->t.dtype, sv_off(v, b, c, l), x); }
static void sv_free(sv *v) { free(v->t.data); v->t.data = NULL; }
static size_t sv_bytes(const sv *v) { return v->elems * t_dt_size(v->t.dtype); }

/* ---------------------------------------------------------------------------------------- */
/* A selective-scan problem and its double reference                                         */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, D, L, N, G, bc_const, softplus, S;
    int *cu;                      /* [S+1] or NULL */
    sv u, dl, z, Bm, Cm, y;
    int has_z;
    float *A, *Dk, *dbias, *sin;  /* Dk, dbias, sin may be NULL */
} sp;

static void sp_init(sp *p, t_rng *r, int B, int D, int L, int N, int G, int bc_const, int softplus,
                    attn_dtype dt, attn_dtype ydt, int padded, int has_z, int has_dk, int has_sin, int nseg) {
    int b, c, l, n, s;
    memset(p, 0, sizeof *p);
    p->B = B; p->D = D; p->L = L; p->N = N; p->G = G; p->bc_const = bc_const; p->softplus = softplus;
    p->S = nseg ? nseg : B;
    if (nseg) {                   /* random segment lengths summing to L, some empty */
        p->cu = (int *)t_xmalloc(sizeof(int) * (size_t)(nseg + 1));
        p->cu[0] = 0; p->cu[nseg] = L;
        for (s = 1; s < nseg; ++s) p->cu[s] = t_irange(r, 0, L);
        for (s = 1; s < nseg; ++s) {      /* sort */
            int k = s;
            while (k > 1 && p->cu[k - 1] > p->cu[k]) { int tmp = p->cu[k]; p->cu[k] = p->cu[k - 1]; p->cu[k - 1] = tmp; --k; }
        }
    }
    p->u = sv_make(dt, B, D, L, padded);
    p->dl = sv_make(dt, B, D, L, padded);
    p->y = sv_make(ydt, B, D, L, padded);
    p->has_z = has_z;
    if (has_z) p->z = sv_make(dt, B, D, L, padded);
    if (bc_const) {
        p->Bm = sv_make(dt, 1, D, N, 0); p->Cm = sv_make(dt, 1, D, N, 0);
        for (c = 0; c < D; ++c)
            for (n = 0; n < N; ++n) { sv_set(&p->Bm, 0, c, n, t_normal(r)); sv_set(&p->Cm, 0, c, n, t_normal(r)); }
    } else {
        p->Bm = sv_make(dt, B, G * N, L, padded); p->Cm = sv_make(dt, B, G * N, L, padded);
        for (b = 0; b < B; ++b)
            for (c = 0; c < G * N; ++c)
                for (l = 0; l < L; ++l) { sv_set(&p->Bm, b, c, l, t_normal(r)); sv_set(&p->Cm, b, c, l, t_normal(r)); }
    }
    for (b = 0; b < B; ++b)
        for (c = 0; c < D; ++c)
            for (l = 0; l < L; ++l) {
                sv_set(&p->u, b, c, l, t_normal(r));
                /* softplus: raw delta around -3 (dt ~ 0.05); else dt in [0.001, 0.2] */
                sv_set(&p->dl, b, c, l, !softplus ? 0.001 + 0.2 * t_unif(r)
                                      : t_chance(r, 0.05) ? 25.0 * t_unif(r) : -3.0 + t_normal(r));
                if (has_z) sv_set(&p->z, b, c, l, 2.0 * t_normal(r));
            }
    p->A = (float *)t_xmalloc(sizeof(float) * (size_t)D * N);
    for (c = 0; c < D; ++c)
        for (n = 0; n < N; ++n) p->A[(size_t)c * N + n] = -(float)(n + 1) * (float)(0.5 + t_unif(r));
    if (has_dk) {
        p->Dk = (float *)t_xmalloc(sizeof(float) * (size_t)D);
        p->dbias = (float *)t_xmalloc(sizeof(float) * (size_t)D);
        for (c = 0; c < D; ++c) { p->Dk[c] = (float)t_normal(r); p->dbias[c] = (float)(softplus ? 0.5 * t_normal(r) : 0.01 * t_unif(r)); }
    }
    if (has_sin) {
        p->sin = (float *)t_xmalloc(sizeof(float) * (size_t)p->S * D * N);
        for (s = 0; s < p->S * D * N; ++s) p->sin[s] = (float)t_normal(r);
    }
}
static void sp_free(sp *p) {
    sv_free(&p->u); sv_free(&p->dl); sv_free(&p->y); sv_free(&p->Bm); sv_free(&p->Cm);
    if (p->has_z) sv_free(&p->z);
    free(p->A); free(p->Dk); free(p->dbias); free(p->sin); free(p->cu);
}
static attn_ssm_desc sp_desc(const sp *p) {
    attn_ssm_desc d;
    memset(&d, 0, sizeof d);
    d.batch = p->B; d.dim = p->D; d.len = p->L; d.d_state = p->N;
    d.n_groups = p->G == 1 && (p->D & 1) ? 0 : p->G;   /* 0 = default 1 */
    d.bc_const = p->bc_const; d.delta_softplus = p->softplus;
    d.cu_seqlens = p->cu; d.varlen_batch = p->cu ? p->S : 0;
    return d;
}
static attn_ssm_tensor sp_z(const sp *p) {
    attn_ssm_tensor z;
    if (p->has_z) return p->z.t;
    memset(&z, 0, sizeof z);
    return z;
}
static attn_status sp_run(const sp *p, const attn_ssm_desc *d, float *sout) {
    return attn_ssm_selective_scan(d, p->u.t, p->dl.t, p->A, p->Bm.t, p->Cm.t, p->Dk, sp_z(p), p->dbias, p->sin,
                                   p->y.t, sout);
}

/* The sequential double reference: y [B][D][L] and state [S][D][N]. */
static void sr_scan(const sp *p, double *y, double *st) {
    const int N = p->N, cg = p->D / p->G;
    int b, c, l, n, s;
    double *x = (double *)t_xmalloc(sizeof(double) * (size_t)N);
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c) {
            const int g = c / cg;
            const int s_lo = p->cu ? 0 : b, s_hi = p->cu ? p->S : b + 1;
            for (s = s_lo; s < s_hi; ++s) {
                const int l0 = p->cu ? p->cu[s] : 0, l1 = p->cu ? p->cu[s + 1] : p->L;
                for (n = 0; n < N; ++n) x[n] = p->sin ? p->sin[((size_t)s * p->D + c) * N + n] : 0.0;
                for (l = l0; l < l1; ++l) {
                    const double uv = sv_get(&p->u, b, c, l);
                    double dt = sv_get(&p->dl, b, c, l) + (p->dbias ? p->dbias[c] : 0.0), acc = 0.0;
                    if (p->softplus && dt <= 20.0) dt = log1p(exp(dt));
                    for (n = 0; n < N; ++n) {
                        const double bn = p->bc_const ? sv_get(&p->Bm, 0, c, n) : sv_get(&p->Bm, b, g * N + n, l);
                        const double cn = p->bc_const ? sv_get(&p->Cm, 0, c, n) : sv_get(&p->Cm, b, g * N + n, l);
                        x[n] = exp(dt * p->A[(size_t)c * N + n]) * x[n] + dt * bn * uv;
                        acc += cn * x[n];
                    }
                    acc += (p->Dk ? p->Dk[c] : 0.0) * uv;
                    if (p->has_z) { const double zv = sv_get(&p->z, b, c, l); acc *= zv / (1.0 + exp(-zv)); }
                    y[((size_t)b * p->D + c) * p->L + l] = acc;
                }
                for (n = 0; n < N; ++n) st[((size_t)s * p->D + c) * N + n] = x[n];
            }
        }
    free(x);
}

/* y of p as doubles, [B][D][L] */
static void sp_get_y(const sp *p, double *y) {
    int b, c, l;
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c)
            for (l = 0; l < p->L; ++l) y[((size_t)b * p->D + c) * p->L + l] = sv_get(&p->y, b, c, l);
}

static const attn_dtype sr_dts[3] = { ATTN_F32, ATTN_F16, ATTN_BF16 };

static void test_scan_ref(void) {
    t_rng r = t_rng_seed(2001);
    const int n_cases = T_QUICK ? 14 : 60;
    int i;
    for (i = 0; i < n_cases; ++i) {
        static const int Ds[] = { 1, 3, 8, 64, 70, 130 }, Ls[] = { 1, 5, 32, 33, 77 }, Ns[] = { 1, 4, 16 };
        const int D = t_pick(&r, Ds, 6), L = t_pick(&r, Ls, 5), N = t_pick(&r, Ns, 3);
        const int G = (D % 2 == 0 && t_chance(&r, 0.5)) ? 2 : 1;
        const int bc_const = t_chance(&r, 0.3), softplus = t_chance(&r, 0.5);
        const attn_dtype dt = sr_dts[t_irange(&r, 0, 2)], ydt = sr_dts[t_irange(&r, 0, 2)];
        const int nseg = t_chance(&r, 0.25) ? t_irange(&r, 1, 4) : 0;
        const int B = nseg ? 1 : t_irange(&r, 1, 3);
        sp p;
        attn_ssm_desc d;
        double *yr, *yg, *sr, *sg, ys = 0.0, ss = 0.0, tol;
        float *sout;
        size_t ny, ns, k;
        attn_status s;
        sp_init(&p, &r, B, D, L, N, G, bc_const, softplus, dt, ydt, t_chance(&r, 0.5), t_chance(&r, 0.7),
                t_chance(&r, 0.7), t_chance(&r, 0.5), nseg);
        d = sp_desc(&p);
        d.n_threads = t_irange(&r, 1, 3);
        ny = (size_t)B * D * L; ns = (size_t)p.S * D * N;
        yr = (double *)t_xmalloc(sizeof(double) * ny); yg = (double *)t_xmalloc(sizeof(double) * ny);
        sr = (double *)t_xmalloc(sizeof(double) * ns); sg = (double *)t_xmalloc(sizeof(double) * ns);
        sout = (float *)t_xmalloc(sizeof(float) * ns);
        s = sp_run(&p, &d, sout);
        T_CHECK(s == ATTN_OK, "scan case %d: %s", i, attn_status_str(s));
        sr_scan(&p, yr, sr);
        sp_get_y(&p, yg);
        for (k = 0; k < ns; ++k) sg[k] = sout[k];
        for (k = 0; k < ny; ++k) ys = SR_MAX(ys, fabs(yr[k]));
        tol = SR_TOL + 2.0 * t_dt_rel(ydt);
        T_CHECK(t_max_norm_err(yr, yg, ny) <= tol, "scan case %d (B%d D%d L%d N%d G%d const%d sp%d %s->%s seg%d): y err %g > %g",
                i, B, D, L, N, G, bc_const, softplus, t_dt_name(dt), t_dt_name(ydt), nseg, t_max_norm_err(yr, yg, ny), tol);
        for (k = 0; k < ns; ++k) ss = SR_MAX(ss, fabs(sr[k]));
        T_CHECK(t_max_norm_err(sr, sg, ns) <= SR_TOL, "scan case %d: state err %g", i, t_max_norm_err(sr, sg, ns));
        (void)ys; (void)ss;
        free(yr); free(yg); free(sr); free(sg); free(sout);
        sp_free(&p);
    }
}

/* A big-ish f32 problem for the properties. */
static void sp_std(sp *p, t_rng *r, int B, int D, int L, int softplus, int bc_const, attn_dtype dt) {
    sp_init(p, r, B, D, L, 16, D % 4 == 0 ? 4 : 1, bc_const, softplus, dt, dt, 0, 1, 1, 1, 0);
}

static void t_count_par(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    int i;
    (void)n_threads;
    ++*(int *)user;
    for (i = n_tasks - 1; i >= 0; --i) task(ctx, i, 0);   /* reverse order, one thread */
}

static void test_scan_threads(void) {
    t_rng r = t_rng_seed(2002);
    sp p;
    attn_ssm_desc d;
    int nt, calls = 0, bc;
    for (bc = 0; bc < 2; ++bc) {
        size_t yb, sb;
        unsigned char *y1, *s1;
        float *st;
        sp_std(&p, &r, 2, 200, 70, 1, bc, ATTN_BF16);
        d = sp_desc(&p);
        yb = sv_bytes(&p.y); sb = sizeof(float) * (size_t)p.S * p.D * p.N;
        y1 = (unsigned char *)t_xmalloc(yb); s1 = (unsigned char *)t_xmalloc(sb); st = (float *)t_xmalloc(sb);
        for (nt = 1; nt <= 4; ++nt) {
            attn_status s;
            d.n_threads = nt == 4 ? 2 : nt;
            d.parallel = nt == 4 ? t_count_par : NULL; d.parallel_user = nt == 4 ? &calls : NULL;
            s = sp_run(&p, &d, st);
            T_CHECK(s == ATTN_OK, "threads %d: %s", nt, attn_status_str(s));
            if (nt == 1) { memcpy(y1, p.y.t.data, yb); memcpy(s1, st, sb); }
            else T_CHECK(memcmp(y1, p.y.t.data, yb) == 0 && memcmp(s1, st, sb) == 0,
                         "bc_const %d: %s differs from 1 thread (bitwise)", bc, nt == 4 ? "parallel hook" : "threads");
        }
        T_CHECK(calls > 0, "the parallel hook was not used");
        free(y1); free(s1); free(st);
        sp_free(&p);
    }
}

static int sr_neon(void) { return strcmp(attn_kernels(), "neon") == 0; }

/* two pieces [0, L1) and [L1, L) with the carried state == one pass */
static void test_scan_pieces(void) {
    t_rng r = t_rng_seed(2003);
    int it;
    for (it = 0; it < 4; ++it) {
        sp p;
        attn_ssm_desc d;
        const int L = it < 2 ? 70 : 45, L1 = it == 0 ? 32 : it == 1 ? 1 : t_irange(&r, 2, 44);
        size_t ns, yb;
        float *st_full, *st_mid, *st2;
        unsigned char *yfull;
        attn_ssm_tensor u, dl, z, Bm, Cm, y;
        attn_status s;
        double *a, *b2, err;
        size_t k;
        sp_init(&p, &r, 2, 72, L, 16, 2, it == 3, 1, it == 2 ? ATTN_F16 : ATTN_F32, ATTN_F32, 1, 1, 1, 1, 0);
        d = sp_desc(&p);
        ns = (size_t)p.S * p.D * p.N; yb = sv_bytes(&p.y);
        st_full = (float *)t_xmalloc(sizeof(float) * ns); st_mid = (float *)t_xmalloc(sizeof(float) * ns);
        st2 = (float *)t_xmalloc(sizeof(float) * ns);
        yfull = (unsigned char *)t_xmalloc(yb);
        s = sp_run(&p, &d, st_full);
        T_CHECK(s == ATTN_OK, "pieces: full %s", attn_status_str(s));
        memcpy(yfull, p.y.t.data, yb);
        t_fill_nan(p.y.t.data, p.y.t.dtype, p.y.elems);
        /* piece 1: the first L1 tokens (views keep the full tensors' strides) */
        d.len = L1;
        s = sp_run(&p, &d, st_mid);
        T_CHECK(s == ATTN_OK, "pieces: first %s", attn_status_str(s));
        /* piece 2: offset views, state_in = st_mid */
        u = p.u.t; dl = p.dl.t; z = p.z.t; Bm = p.Bm.t; Cm = p.Cm.t; y = p.y.t;
        u.data = (char *)u.data + (size_t)L1 * t_dt_size(u.dtype);
        dl.data = (char *)dl.data + (size_t)L1 * t_dt_size(dl.dtype);
        z.data = (char *)z.data + (size_t)L1 * t_dt_size(z.dtype);
        y.data = (char *)y.data + (size_t)L1 * t_dt_size(y.dtype);
        if (!p.bc_const) {
            Bm.data = (char *)Bm.data + (size_t)L1 * t_dt_size(Bm.dtype);
            Cm.data = (char *)Cm.data + (size_t)L1 * t_dt_size(Cm.dtype);
        }
        d.len = L - L1;
        s = attn_ssm_selective_scan(&d, u, dl, p.A, Bm, Cm, p.Dk, z, p.dbias, st_mid, y, st2);
        T_CHECK(s == ATTN_OK, "pieces: second %s", attn_status_str(s));
        a = (double *)t_xmalloc(sizeof(double) * (size_t)p.B * p.D * L); b2 = (double *)t_xmalloc(sizeof(double) * (size_t)p.B * p.D * L);
        sp_get_y(&p, b2);
        memcpy(p.y.t.data, yfull, yb);
        sp_get_y(&p, a);
        err = t_max_norm_err(a, b2, (size_t)p.B * p.D * L);
        if (sr_neon()) T_CHECK(err <= 1e-6, "pieces L1=%d: err %g", L1, err);
        else T_CHECK(err == 0.0, "pieces L1=%d (bc_const %d): y differs from one pass (err %g)", L1, p.bc_const, err);
        for (k = 0; k < ns; ++k)
            if (st2[k] != st_full[k] && !(sr_neon() && fabs(st2[k] - st_full[k]) <= 1e-6 * SR_MAX(1.0, fabs(st_full[k])))) break;
        T_CHECK(k == ns, "pieces L1=%d: final state differs at %d", L1, (int)k);
        free(a); free(b2); free(st_full); free(st_mid); free(st2); free(yfull);
        sp_free(&p);
    }
}

/* L calls of the step == one scan; the step's x/dt/z/y are [B, D, 1] views into the full tensors */
static void test_scan_steps(void) {
    t_rng r = t_rng_seed(2004);
    int it;
    for (it = 0; it < 2; ++it) {
        sp p;
        attn_ssm_desc d;
        const int L = 19;
        float *st_full, *st;
        double *a, *b2, err;
        size_t ns, ny, k;
        int l;
        attn_status s = ATTN_OK;
        sp_init(&p, &r, 3, 40, L, 16, 2, it, 1, it ? ATTN_BF16 : ATTN_F32, ATTN_F32, 1, 1, 1, 1, 0);
        d = sp_desc(&p);
        ns = (size_t)p.S * p.D * p.N; ny = (size_t)p.B * p.D * L;
        st_full = (float *)t_xmalloc(sizeof(float) * ns); st = (float *)t_xmalloc(sizeof(float) * ns);
        a = (double *)t_xmalloc(sizeof(double) * ny); b2 = (double *)t_xmalloc(sizeof(double) * ny);
        T_CHECK(sp_run(&p, &d, st_full) == ATTN_OK, "steps: scan");
        sp_get_y(&p, a);
        memcpy(st, p.sin, sizeof(float) * ns);
        d.len = 0;                                      /* ignored by the step */
        for (l = 0; l < L && s == ATTN_OK; ++l) {
            attn_ssm_tensor u = p.u.t, dl = p.dl.t, z = p.z.t, Bm = p.Bm.t, Cm = p.Cm.t, y = p.y.t;
            u.data = (char *)u.data + (size_t)l * t_dt_size(u.dtype);
            dl.data = (char *)dl.data + (size_t)l * t_dt_size(dl.dtype);
            z.data = (char *)z.data + (size_t)l * t_dt_size(z.dtype);
            y.data = (char *)y.data + (size_t)l * t_dt_size(y.dtype);
            if (!p.bc_const) {
                Bm.data = (char *)Bm.data + (size_t)l * t_dt_size(Bm.dtype);
                Cm.data = (char *)Cm.data + (size_t)l * t_dt_size(Cm.dtype);
            }
            s = attn_ssm_selective_step(&d, u, dl, p.A, Bm, Cm, p.Dk, z, p.dbias, st, y);
        }
        T_CHECK(s == ATTN_OK, "steps: %s", attn_status_str(s));
        sp_get_y(&p, b2);
        err = t_max_norm_err(a, b2, ny);
        T_CHECK(err <= 1e-6, "L steps vs one scan (bc_const %d): err %g", it, err);
        for (k = 0; k < ns; ++k) if (fabs(st[k] - st_full[k]) > 1e-6 * SR_MAX(1.0, fabs(st_full[k]))) break;
        T_CHECK(k == ns, "L steps: final state differs at %d", (int)k);
        free(st_full); free(st); free(a); free(b2);
        sp_free(&p);
    }
}

/* packed sequences == each sequence run as its own batch-1 call with its own state_in */
static void test_scan_varlen(void) {
    t_rng r = t_rng_seed(2005);
    sp p;
    attn_ssm_desc d;
    float *st;
    int sq, ok = 1;
    size_t ns;
    sp_init(&p, &r, 1, 66, 90, 16, 3, 0, 1, ATTN_F32, ATTN_F32, 0, 1, 1, 1, 4);
    p.cu[1] = p.cu[2];                           /* force an empty sequence */
    d = sp_desc(&p);
    ns = (size_t)p.S * p.D * p.N;
    st = (float *)t_xmalloc(sizeof(float) * ns);
    T_CHECK(sp_run(&p, &d, st) == ATTN_OK, "varlen: packed");
    for (sq = 0; sq < p.S; ++sq) {
        const int l0 = p.cu[sq], n = p.cu[sq + 1] - l0;
        attn_ssm_desc e = d;
        attn_ssm_tensor u = p.u.t, dl = p.dl.t, z = p.z.t, Bm = p.Bm.t, Cm = p.Cm.t, y;
        float *st1 = (float *)t_xmalloc(sizeof(float) * (size_t)p.D * p.N);
        float *y1 = (float *)t_xmalloc(sizeof(float) * (size_t)p.D * (n ? n : 1));
        int c, l;
        size_t k;
        if (n == 0) {                            /* an empty sequence: state passes through */
            for (k = 0; k < (size_t)p.D * p.N; ++k) if (st[(size_t)sq * p.D * p.N + k] != p.sin[(size_t)sq * p.D * p.N + k]) ok = 0;
            free(st1); free(y1);
            continue;
        }
        e.cu_seqlens = NULL; e.varlen_batch = 0; e.len = n;
        u.data = (char *)u.data + (size_t)l0 * 4; dl.data = (char *)dl.data + (size_t)l0 * 4;
        z.data = (char *)z.data + (size_t)l0 * 4; Bm.data = (char *)Bm.data + (size_t)l0 * 4;
        Cm.data = (char *)Cm.data + (size_t)l0 * 4;
        u.stride_chan = dl.stride_chan = z.stride_chan = Bm.stride_chan = Cm.stride_chan = p.L;
        u.stride_batch = dl.stride_batch = z.stride_batch = Bm.stride_batch = Cm.stride_batch = 1;
        y = attn_ssm_tensor_dense(y1, ATTN_F32, p.D, n);
        T_CHECK(attn_ssm_selective_scan(&e, u, dl, p.A, Bm, Cm, p.Dk, z, p.dbias, p.sin + (size_t)sq * p.D * p.N, y, st1) == ATTN_OK,
                "varlen: sequence %d alone", sq);
        for (c = 0; c < p.D; ++c)
            for (l = 0; l < n; ++l) if (y1[(size_t)c * n + l] != (float)sv_get(&p.y, 0, c, l0 + l)) ok = 0;
        for (k = 0; k < (size_t)p.D * p.N; ++k) if (st1[k] != st[(size_t)sq * p.D * p.N + k]) ok = 0;
        free(st1); free(y1);
    }
    T_CHECK(ok, "varlen: packed sequences differ from separate calls (bitwise)");
    free(st);
    sp_free(&p);
}

/* workspace: the query's size makes the call allocation-free; one byte less is refused */
static void test_scan_workspace(void) {
    t_rng r = t_rng_seed(2006);
    sp p;
    attn_ssm_desc d;
    size_t bytes = 0, m0, yb;
    void *ws;
    unsigned char *y1;
    attn_status s;
    sp_std(&p, &r, 1, 64, 40, 0, 0, ATTN_F32);
    d = sp_desc(&p);
    d.n_threads = 2;
    yb = sv_bytes(&p.y);
    T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_SCAN, &bytes) == ATTN_OK && bytes > 0, "scan workspace query");
    ws = t_xmalloc(bytes);
    d.workspace = ws; d.workspace_size = bytes;
    m0 = t_attn_mallocs;
    s = sp_run(&p, &d, NULL);
    T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "scan with a workspace: %s, %d allocations", attn_status_str(s), (int)(t_attn_mallocs - m0));
    y1 = (unsigned char *)t_xmalloc(yb);
    memcpy(y1, p.y.t.data, yb);
    d.workspace = NULL; d.workspace_size = 0;
    T_CHECK(sp_run(&p, &d, NULL) == ATTN_OK && memcmp(y1, p.y.t.data, yb) == 0, "workspace vs allocated: bitwise");
    t_sentinel(p.y.t.data, yb, 11);
    d.workspace = ws; d.workspace_size = bytes - 1;
    s = sp_run(&p, &d, NULL);
    T_CHECK(s == ATTN_ERR_SSM_WORKSPACE && t_sentinel_ok(p.y.t.data, yb, 11), "small workspace: %s", attn_status_str(s));
    if (s == ATTN_ERR_SSM_WORKSPACE && t_sentinel_ok(p.y.t.data, yb, 11)) t_status_provoked[ATTN_ERR_SSM_WORKSPACE] = 1;
    free(ws); free(y1);
    sp_free(&p);
}

/* ---------------------------------------------------------------------------------------- */
/* Causal conv1d                                                                              */
/* ---------------------------------------------------------------------------------------- */

static void sr_conv(const sv *x, int B, int D, int L, int K, const float *w, const float *bias, const float *sin,
                    int silu, double *out, double *sout) {
    int b, c, t, k;
    for (b = 0; b < B; ++b)
        for (c = 0; c < D; ++c) {
            for (t = 0; t < L; ++t) {
                double a = bias ? bias[c] : 0.0;
                for (k = 0; k < K; ++k) {
                    const int pos = t - (K - 1) + k;
                    double xv = 0.0;
                    if (pos >= 0) xv = sv_get(x, b, c, pos);
                    else if (sin) xv = sin[((size_t)b * D + c) * (K - 1) + (K - 1 + pos)];
                    a += w[(size_t)c * K + k] * xv;
                }
                if (silu) a = a / (1.0 + exp(-a));
                out[((size_t)b * D + c) * L + t] = a;
            }
            for (k = 0; k < K - 1; ++k) {          /* the last K-1 inputs */
                const int pos = L - (K - 1) + k;
                sout[((size_t)b * D + c) * (K - 1) + k] =
                    pos >= 0 ? sv_get(x, b, c, pos) : (sin ? sin[((size_t)b * D + c) * (K - 1) + (K - 1 + pos)] : 0.0);
            }
        }
}

static void test_conv(void) {
    t_rng r = t_rng_seed(2007);
    const int n_cases = T_QUICK ? 8 : 30;
    int i;
    for (i = 0; i < n_cases; ++i) {
        static const int Ks[] = { 0, 1, 2, 4, 5 }, Ls[] = { 1, 2, 3, 17, 1100 };
        const int B = t_irange(&r, 1, 2), D = t_irange(&r, 1, 40), L = t_pick(&r, Ls, 5), K0 = t_pick(&r, Ks, 5);
        const int K = K0 ? K0 : 4, silu = t_chance(&r, 0.7), has_sin = t_chance(&r, 0.6), has_bias = t_chance(&r, 0.6);
        const attn_dtype dt = sr_dts[t_irange(&r, 0, 2)], odt = sr_dts[t_irange(&r, 0, 2)];
        sv x = sv_make(dt, B, D, L, t_chance(&r, 0.5)), o = sv_make(odt, B, D, L, t_chance(&r, 0.5));
        const size_t nh = (size_t)B * D * (K - 1) + 1, no = (size_t)B * D * L;
        float *w = (float *)t_xmalloc(sizeof(float) * (size_t)D * K), *bias = (float *)t_xmalloc(sizeof(float) * (size_t)D);
        float *sin = (float *)t_xmalloc(sizeof(float) * nh), *sout = (float *)t_xmalloc(sizeof(float) * nh);
        double *ref = (double *)t_xmalloc(sizeof(double) * no), *got = (double *)t_xmalloc(sizeof(double) * no);
        double *sref = (double *)t_xmalloc(sizeof(double) * nh), *sgot = (double *)t_xmalloc(sizeof(double) * nh), tol;
        attn_ssm_desc d;
        attn_status s;
        int b, c, t;
        size_t k;
        for (b = 0; b < B; ++b) for (c = 0; c < D; ++c) for (t = 0; t < L; ++t) sv_set(&x, b, c, t, t_normal(&r));
        for (k = 0; k < (size_t)D * K; ++k) w[k] = (float)(0.5 * t_normal(&r));
        for (k = 0; k < (size_t)D; ++k) bias[k] = (float)t_normal(&r);
        for (k = 0; k < nh; ++k) sin[k] = (float)t_normal(&r);
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.conv_kernel = K0; d.conv_act = silu ? ATTN_SSM_CONV_SILU : ATTN_SSM_CONV_NONE;
        d.n_threads = t_irange(&r, 1, 3);
        s = attn_ssm_conv1d(&d, x.t, w, has_bias ? bias : NULL, has_sin ? sin : NULL, o.t, sout);
        T_CHECK(s == ATTN_OK, "conv case %d: %s", i, attn_status_str(s));
        sr_conv(&x, B, D, L, K, w, has_bias ? bias : NULL, has_sin ? sin : NULL, silu, ref, sref);
        for (b = 0; b < B; ++b) for (c = 0; c < D; ++c) for (t = 0; t < L; ++t) got[((size_t)b * D + c) * L + t] = sv_get(&o, b, c, t);
        for (k = 0; k < nh - 1; ++k) sgot[k] = sout[k];
        tol = 1e-5 + 2.0 * t_dt_rel(odt);
        T_CHECK(t_max_norm_err(ref, got, no) <= tol, "conv case %d (B%d D%d L%d K%d silu%d %s->%s): err %g", i, B, D, L, K, silu,
                t_dt_name(dt), t_dt_name(odt), t_max_norm_err(ref, got, no));
        T_CHECK(t_max_norm_err(sref, sgot, nh - 1) == 0.0, "conv case %d: state_out differs", i);
        /* L steps == one pass (f32 out) */
        if (L <= 17) {
            float *st = (float *)t_xmalloc(sizeof(float) * nh);
            int ok = 1;
            memcpy(st, sin, sizeof(float) * nh);
            if (!has_sin) memset(st, 0, sizeof(float) * nh);
            for (t = 0; t < L; ++t) {
                attn_ssm_tensor xs = x.t, os = o.t;
                xs.data = (char *)xs.data + (size_t)t * t_dt_size(dt);
                os.data = (char *)os.data + (size_t)t * t_dt_size(odt);
                if (x.t.stride_batch == 0 && x.t.stride_chan == 0) { xs.stride_chan = L; xs.stride_batch = (ptrdiff_t)D * L; }
                if (o.t.stride_batch == 0 && o.t.stride_chan == 0) { os.stride_chan = L; os.stride_batch = (ptrdiff_t)D * L; }
                if (attn_ssm_conv1d_step(&d, xs, w, has_bias ? bias : NULL, st, os) != ATTN_OK) ok = 0;
            }
            for (b = 0; b < B; ++b) for (c = 0; c < D; ++c) for (t = 0; t < L; ++t)
                if (fabs(sv_get(&o, b, c, t) - got[((size_t)b * D + c) * L + t]) > 1e-6 * SR_MAX(1.0, fabs(got[((size_t)b * D + c) * L + t]))) ok = 0;
            for (k = 0; k < nh - 1; ++k) if (st[k] != sout[k]) ok = 0;
            T_CHECK(ok, "conv case %d: L steps differ from one pass", i);
            free(st);
        }
        sv_free(&x); sv_free(&o);
        free(w); free(bias); free(sin); free(sout); free(ref); free(got); free(sref); free(sgot);
    }
}

/* conv: thread counts bitwise, two pieces == one pass */
static void test_conv_props(void) {
    t_rng r = t_rng_seed(2008);
    const int B = 2, D = 50, L = 2100, K = 4, L1 = 1030;
    sv x = sv_make(ATTN_F32, B, D, L, 0), o = sv_make(ATTN_F32, B, D, L, 0);
    float *w = (float *)t_xmalloc(sizeof(float) * D * K), *sa = (float *)t_xmalloc(sizeof(float) * B * D * (K - 1));
    float *sb = (float *)t_xmalloc(sizeof(float) * B * D * (K - 1));
    unsigned char *o1 = (unsigned char *)t_xmalloc(sv_bytes(&o));
    attn_ssm_desc d;
    attn_ssm_tensor x2, o2;
    int b, c, t, nt;
    for (b = 0; b < B; ++b) for (c = 0; c < D; ++c) for (t = 0; t < L; ++t) sv_set(&x, b, c, t, t_normal(&r));
    for (t = 0; t < D * K; ++t) w[t] = (float)t_normal(&r);
    memset(&d, 0, sizeof d);
    d.batch = B; d.dim = D; d.len = L;
    for (nt = 1; nt <= 3; ++nt) {
        d.n_threads = nt;
        T_CHECK(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, o.t, sa) == ATTN_OK, "conv threads %d", nt);
        if (nt == 1) memcpy(o1, o.t.data, sv_bytes(&o));
        else T_CHECK(memcmp(o1, o.t.data, sv_bytes(&o)) == 0, "conv: %d threads differ from 1 (bitwise)", nt);
    }
    t_fill_nan(o.t.data, ATTN_F32, o.elems);
    d.len = L1;
    x2 = x.t; o2 = o.t;
    x2.stride_chan = o2.stride_chan = L; x2.stride_batch = o2.stride_batch = (ptrdiff_t)D * L;
    T_CHECK(attn_ssm_conv1d(&d, x2, w, NULL, NULL, o2, sb) == ATTN_OK, "conv piece 1");
    x2.data = (float *)x2.data + L1; o2.data = (float *)o2.data + L1;
    d.len = L - L1;
    T_CHECK(attn_ssm_conv1d(&d, x2, w, NULL, sb, o2, sb) == ATTN_OK, "conv piece 2 (state in place)");
    if (sr_neon()) {   /* NEON: the chunk edges take another summation order (as the scan's pieces) */
        const float *a1 = (const float *)(const void *)o1, *a2 = (const float *)o.t.data;
        size_t e, bad = 0;
        for (e = 0; e < o.elems; ++e) if (!(fabs(a1[e] - a2[e]) <= 1e-6 * SR_MAX(1.0, fabs(a1[e])))) ++bad;
        T_CHECK(bad == 0 && memcmp(sa, sb, sizeof(float) * B * D * (K - 1)) == 0,
                "conv: two pieces differ from one pass by more than 1e-6 (%lu elements)", (unsigned long)bad);
    } else
        T_CHECK(memcmp(o1, o.t.data, sv_bytes(&o)) == 0 && memcmp(sa, sb, sizeof(float) * B * D * (K - 1)) == 0,
                "conv: two pieces differ from one pass (bitwise)");
    sv_free(&x); sv_free(&o); free(w); free(sa); free(sb); free(o1);
}

/* ---------------------------------------------------------------------------------------- */
/* Error paths: the exact status, y / state_out / out untouched                              */
/* ---------------------------------------------------------------------------------------- */

static sp g_ep;                   /* the valid problem every error case perturbs */
static float *g_est;              /* state_out (scan) / state (step) */
static size_t g_est_bytes;

static void sr_expect(attn_status got, attn_status want, const char *what) {
    const int untouched = t_sentinel_ok(g_ep.y.t.data, sv_bytes(&g_ep.y), 7) && t_sentinel_ok(g_est, g_est_bytes, 9);
    T_CHECK(got == want && untouched, "%s: got %s (%d), want %s (%d)%s", what, attn_status_str(got), (int)got,
            attn_status_str(want), (int)want, untouched ? "" : ", outputs written");
    if (got == want && untouched) t_status_provoked[want] = 1;
    t_sentinel(g_ep.y.t.data, sv_bytes(&g_ep.y), 7);
    t_sentinel(g_est, g_est_bytes, 9);
}

typedef struct {
    attn_ssm_desc d;
    attn_ssm_tensor u, dl, Bm, Cm, z, y;
    const float *A;
} sr_args;
static sr_args sr_valid(void) {
    sr_args a;
    a.d = sp_desc(&g_ep); a.u = g_ep.u.t; a.dl = g_ep.dl.t; a.Bm = g_ep.Bm.t; a.Cm = g_ep.Cm.t; a.z = g_ep.z.t; a.y = g_ep.y.t;
    a.A = g_ep.A;
    return a;
}
static attn_status sr_call(const sr_args *a) {
    return attn_ssm_selective_scan(&a->d, a->u, a->dl, a->A, a->Bm, a->Cm, g_ep.Dk, a->z, g_ep.dbias, g_ep.sin, a->y, g_est);
}
static attn_status sr_call_step(const sr_args *a) {
    return attn_ssm_selective_step(&a->d, a->u, a->dl, a->A, a->Bm, a->Cm, g_ep.Dk, a->z, g_ep.dbias, g_est, a->y);
}

static void test_scan_errors(void) {
    t_rng r = t_rng_seed(2009);
    sr_args a;
    int cu_bad[3] = { 0, 5, 3 }, cu_ok[3] = { 0, 2, 4 };
    size_t bytes;
    /* B 1, D 4, L 4, N 2, G 2 */
    sp_init(&g_ep, &r, 1, 4, 4, 2, 2, 0, 1, ATTN_F32, ATTN_F32, 0, 1, 1, 1, 0);
    g_est_bytes = sizeof(float) * 4 * 2 * 2;
    g_est = (float *)t_xmalloc(g_est_bytes);
    t_sentinel(g_ep.y.t.data, sv_bytes(&g_ep.y), 7);
    t_sentinel(g_est, g_est_bytes, 9);
    a = sr_valid();
    sr_expect(attn_ssm_selective_scan(NULL, a.u, a.dl, a.A, a.Bm, a.Cm, NULL, a.z, NULL, NULL, a.y, g_est), ATTN_ERR_NULL_DESC, "NULL desc");
    a = sr_valid(); a.d.len = 0; sr_expect(sr_call(&a), ATTN_ERR_SSM_SHAPE, "len 0");
    a = sr_valid(); a.d.dim = -1; sr_expect(sr_call(&a), ATTN_ERR_SSM_SHAPE, "dim -1");
    a = sr_valid(); a.d.batch = 0; sr_expect(sr_call_step(&a), ATTN_ERR_SSM_SHAPE, "step batch 0");
    a = sr_valid(); a.d.d_state = 0; sr_expect(sr_call(&a), ATTN_ERR_SSM_D_STATE, "N = 0");
    a = sr_valid(); a.d.n_groups = 3; sr_expect(sr_call(&a), ATTN_ERR_SSM_GROUPS, "G not dividing D");
    a = sr_valid(); a.d.n_groups = -2; sr_expect(sr_call(&a), ATTN_ERR_SSM_GROUPS, "G < 0");
    a = sr_valid(); a.d.bc_const = 2; sr_expect(sr_call(&a), ATTN_ERR_SSM_BC_CONST, "bc_const 2");
    a = sr_valid(); a.d.delta_softplus = -1; sr_expect(sr_call(&a), ATTN_ERR_SSM_SOFTPLUS, "softplus -1");
    a = sr_valid(); a.d.a_complex = 2; sr_expect(sr_call(&a), ATTN_ERR_SSM_A_COMPLEX, "a_complex 2");
    a = sr_valid(); a.d.a_complex = -1; sr_expect(sr_call_step(&a), ATTN_ERR_SSM_A_COMPLEX, "step a_complex -1");
    a = sr_valid(); a.d.n_threads = -1; sr_expect(sr_call(&a), ATTN_ERR_SSM_N_THREADS, "n_threads -1");
    a = sr_valid(); a.d.varlen_batch = 2; sr_expect(sr_call(&a), ATTN_ERR_SSM_VARLEN_BATCH, "varlen_batch without cu_seqlens");
    a = sr_valid(); a.d.cu_seqlens = cu_ok; a.d.varlen_batch = 0; sr_expect(sr_call(&a), ATTN_ERR_SSM_VARLEN_BATCH, "cu_seqlens, varlen_batch 0");
    a = sr_valid(); a.d.cu_seqlens = cu_bad; a.d.varlen_batch = 2; sr_expect(sr_call(&a), ATTN_ERR_SSM_CU_SEQLENS, "cu_seqlens decreasing");
    a = sr_valid(); a.d.cu_seqlens = cu_ok; a.d.varlen_batch = 1; sr_expect(sr_call(&a), ATTN_ERR_SSM_CU_SEQLENS, "cu_seqlens not ending at len");
    a = sr_valid(); a.d.cu_seqlens = cu_ok; a.d.varlen_batch = 2; sr_expect(sr_call_step(&a), ATTN_ERR_SSM_STEP_VARLEN, "step with cu_seqlens");
    a = sr_valid(); a.u.data = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_U, "NULL u");
    a = sr_valid(); a.dl.data = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_DELTA, "NULL delta");
    a = sr_valid(); a.A = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_A, "NULL A");
    a = sr_valid(); a.Bm.data = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_B, "NULL B");
    a = sr_valid(); a.Cm.data = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_C, "NULL C");
    a = sr_valid(); a.y.data = NULL; sr_expect(sr_call(&a), ATTN_ERR_SSM_NULL_Y, "NULL y");
    a = sr_valid(); a.dl.dtype = (attn_dtype)7; sr_expect(sr_call(&a), ATTN_ERR_SSM_DTYPE, "delta dtype 7");
    a = sr_valid(); a.z.dtype = (attn_dtype)-1; sr_expect(sr_call(&a), ATTN_ERR_SSM_DTYPE, "z dtype -1");
    a = sr_valid(); a.u.stride_chan = PTRDIFF_MAX / 2; a.u.stride_batch = 1; sr_expect(sr_call(&a), ATTN_ERR_SSM_OVERFLOW, "u stride overflow");
    a = sr_valid(); a.y.stride_chan = 0; a.y.stride_batch = 16; sr_expect(sr_call(&a), ATTN_ERR_SSM_Y_BROADCAST, "y broadcast over channels");
    a = sr_valid();
    sr_expect(attn_ssm_selective_step(&a.d, a.u, a.dl, a.A, a.Bm, a.Cm, NULL, a.z, NULL, NULL, a.y), ATTN_ERR_SSM_NULL_STATE, "step NULL state");
    a = sr_valid();
    sr_expect(attn_ssm_workspace_size(&a.d, ATTN_SSM_OP_SCAN, NULL), ATTN_ERR_SSM_NULL_RESULT, "workspace_size NULL bytes");
    sr_expect(attn_ssm_workspace_size(&a.d, (attn_ssm_op)99, &bytes), ATTN_ERR_SSM_OP, "workspace_size op 99");
    sp_free(&g_ep);
    free(g_est);
}

/* The decay alone, tight: B = 0, state_in = 1, so state_out[n] = prod_l exp(dt_l A_n) =
   exp(A_n sum_l dt_l); the kernel's exp (about 1.5 ulp) may lose 3e-7 relative per token. */
static void test_scan_decay(void) {
    t_rng r = t_rng_seed(2012);
    const int D = 40, L = 300, N = 16;
    float *u = (float *)t_xmalloc(sizeof(float) * D * L), *dl = (float *)t_xmalloc(sizeof(float) * D * L);
    float *y = (float *)t_xmalloc(sizeof(float) * D * L), *A = (float *)t_xmalloc(sizeof(float) * D * N);
    float *Bm = (float *)t_xmalloc(sizeof(float) * D * N), *Cm = (float *)t_xmalloc(sizeof(float) * D * N);
    float *sin = (float *)t_xmalloc(sizeof(float) * D * N), *sout = (float *)t_xmalloc(sizeof(float) * D * N);
    attn_ssm_desc d;
    attn_ssm_tensor tu, tdl, tb, tc, ty, none;
    double worst = 0.0;
    int c, l, n;
    for (c = 0; c < D * L; ++c) { u[c] = (float)t_normal(&r); dl[c] = (float)(0.001 + 0.3 * t_unif(&r)); }
    for (c = 0; c < D * N; ++c) { A[c] = -(float)((c % N + 1) * (0.02 + t_unif(&r))); Bm[c] = 0.0f; Cm[c] = 1.0f; sin[c] = 1.0f; }
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = D; d.len = L; d.d_state = N; d.bc_const = ATTN_SSM_BC_CONST;
    memset(&none, 0, sizeof none);
    tu = attn_ssm_tensor_dense(u, ATTN_F32, D, L); tdl = attn_ssm_tensor_dense(dl, ATTN_F32, D, L);
    ty = attn_ssm_tensor_dense(y, ATTN_F32, D, L);
    tb = attn_ssm_tensor_dense(Bm, ATTN_F32, D, N); tc = attn_ssm_tensor_dense(Cm, ATTN_F32, D, N);
    T_CHECK(attn_ssm_selective_scan(&d, tu, tdl, A, tb, tc, NULL, none, NULL, sin, ty, sout) == ATTN_OK, "decay: scan");
    for (c = 0; c < D; ++c) {
        double sdt = 0.0;
        for (l = 0; l < L; ++l) sdt += dl[(size_t)c * L + l];
        for (n = 0; n < N; ++n) {
            const double ref = exp(A[(size_t)c * N + n] * sdt), e = fabs(sout[(size_t)c * N + n] / ref - 1.0);
            if (ref > 1e-30 && e > worst) worst = e;
        }
    }
    T_CHECK(worst <= 3e-7 * L, "decay: state relative error %g after %d tokens (> %g)", worst, L, 3e-7 * L);
    free(u); free(dl); free(y); free(A); free(Bm); free(Cm); free(sin); free(sout);
}

/* ---------------------------------------------------------------------------------------- */
/* Complex A (attn_ssm_desc.a_complex): selective_scan_ref with A.is_complex()                 */
/* ---------------------------------------------------------------------------------------- */

/* The reference's definition, in double: complex x, A [D][N][2], B / C per token [B][G N][2L]
   ((re, im) of token l at 2l, 2l + 1) or constant [D][2N]; x = exp(dt A) x + dt u B,
   y = 2 Re(sum_n C_n x_n) + D u, then the silu(z) gate; states [S][D][N][2]. */
typedef struct {
    int B, D, L, N, G, bc_const, softplus, S, has_z;
    int *cu;
    sv u, dl, z, Bm, Cm, y;
    float *A, *Dk, *dbias, *sin;
} cp;

static void cp_init(cp *p, t_rng *r, int B, int D, int L, int N, int G, int bc_const, int softplus, attn_dtype dt,
                    attn_dtype ydt, int padded, int nseg) {
    int b, c, l, s;
    memset(p, 0, sizeof *p);
    p->B = B; p->D = D; p->L = L; p->N = N; p->G = G; p->bc_const = bc_const; p->softplus = softplus;
    p->S = nseg ? nseg : B; p->has_z = t_chance(r, 0.7);
    if (nseg) {
        p->cu = (int *)t_xmalloc(sizeof(int) * (size_t)(nseg + 1));
        p->cu[0] = 0; p->cu[nseg] = L;
        for (s = 1; s < nseg; ++s) p->cu[s] = t_irange(r, 0, L);
        for (s = 1; s < nseg; ++s) {
            int k = s;
            while (k > 1 && p->cu[k - 1] > p->cu[k]) { int tmp = p->cu[k]; p->cu[k] = p->cu[k - 1]; p->cu[k - 1] = tmp; --k; }
        }
    }
    p->u = sv_make(dt, B, D, L, padded); p->dl = sv_make(dt, B, D, L, padded); p->y = sv_make(ydt, B, D, L, padded);
    p->z = sv_make(dt, B, D, L, padded);
    if (bc_const) { p->Bm = sv_make(dt, 1, D, 2 * N, 0); p->Cm = sv_make(dt, 1, D, 2 * N, 0); }
    else { p->Bm = sv_make(dt, B, G * N, 2 * L, padded); p->Cm = sv_make(dt, B, G * N, 2 * L, padded); }
    for (b = 0; b < (bc_const ? 1 : B); ++b)
        for (c = 0; c < (bc_const ? D : G * N); ++c)
            for (l = 0; l < (bc_const ? 2 * N : 2 * L); ++l) { sv_set(&p->Bm, b, c, l, t_normal(r)); sv_set(&p->Cm, b, c, l, t_normal(r)); }
    for (b = 0; b < B; ++b)
        for (c = 0; c < D; ++c)
            for (l = 0; l < L; ++l) {
                sv_set(&p->u, b, c, l, t_normal(r));
                sv_set(&p->dl, b, c, l, !softplus ? 0.001 + 0.2 * t_unif(r) : t_chance(r, 0.05) ? 25.0 * t_unif(r) : -3.0 + t_normal(r));
                sv_set(&p->z, b, c, l, 2.0 * t_normal(r));
            }
    p->A = (float *)t_xmalloc(sizeof(float) * (size_t)D * N * 2);
    for (c = 0; c < D * N; ++c) {
        p->A[2 * c] = -(float)(0.5 + t_unif(r));                 /* S4D-Lin-like: -1/2 + i pi n, jittered */
        p->A[2 * c + 1] = (float)(3.14159265 * (c % N) + t_normal(r));
    }
    p->Dk = (float *)t_xmalloc(sizeof(float) * (size_t)D); p->dbias = (float *)t_xmalloc(sizeof(float) * (size_t)D);
    for (c = 0; c < D; ++c) { p->Dk[c] = (float)t_normal(r); p->dbias[c] = (float)(softplus ? 0.5 * t_normal(r) : 0.01 * t_unif(r)); }
    p->sin = (float *)t_xmalloc(sizeof(float) * (size_t)p->S * D * N * 2);
    for (s = 0; s < p->S * D * N * 2; ++s) p->sin[s] = (float)t_normal(r);
}
static void cp_free(cp *p) {
    sv_free(&p->u); sv_free(&p->dl); sv_free(&p->y); sv_free(&p->z); sv_free(&p->Bm); sv_free(&p->Cm);
    free(p->A); free(p->Dk); free(p->dbias); free(p->sin); free(p->cu);
}
static attn_ssm_desc cp_desc(const cp *p) {
    attn_ssm_desc d;
    memset(&d, 0, sizeof d);
    d.batch = p->B; d.dim = p->D; d.len = p->L; d.d_state = p->N; d.n_groups = p->G; d.bc_const = p->bc_const;
    d.delta_softplus = p->softplus; d.cu_seqlens = p->cu; d.varlen_batch = p->cu ? p->S : 0; d.a_complex = 1;
    return d;
}
static attn_ssm_tensor cp_z(const cp *p) {
    attn_ssm_tensor z;
    if (p->has_z) return p->z.t;
    memset(&z, 0, sizeof z);
    return z;
}

static void cr_scan(const cp *p, double *y, double *st) {
    const int N = p->N, cg = p->D / p->G;
    double *x = (double *)t_xmalloc(sizeof(double) * 2 * (size_t)N);
    int b, c, l, n, s;
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c) {
            const int g = c / cg, s_lo = p->cu ? 0 : b, s_hi = p->cu ? p->S : b + 1;
            for (s = s_lo; s < s_hi; ++s) {
                const int l0 = p->cu ? p->cu[s] : 0, l1 = p->cu ? p->cu[s + 1] : p->L;
                for (n = 0; n < 2 * N; ++n) x[n] = p->sin[((size_t)s * p->D + c) * N * 2 + n];
                for (l = l0; l < l1; ++l) {
                    const double uv = sv_get(&p->u, b, c, l);
                    double dt = sv_get(&p->dl, b, c, l) + p->dbias[c], re = 0.0;
                    if (p->softplus && dt <= 20.0) dt = log1p(exp(dt));
                    for (n = 0; n < N; ++n) {
                        const double ar = p->A[((size_t)c * N + n) * 2], ai = p->A[((size_t)c * N + n) * 2 + 1];
                        const double er = exp(dt * ar) * cos(dt * ai), ei = exp(dt * ar) * sin(dt * ai);
                        const double br = p->bc_const ? sv_get(&p->Bm, 0, c, 2 * n) : sv_get(&p->Bm, b, g * N + n, 2 * l);
                        const double bi = p->bc_const ? sv_get(&p->Bm, 0, c, 2 * n + 1) : sv_get(&p->Bm, b, g * N + n, 2 * l + 1);
                        const double cr = p->bc_const ? sv_get(&p->Cm, 0, c, 2 * n) : sv_get(&p->Cm, b, g * N + n, 2 * l);
                        const double ci = p->bc_const ? sv_get(&p->Cm, 0, c, 2 * n + 1) : sv_get(&p->Cm, b, g * N + n, 2 * l + 1);
                        const double xr = er * x[2 * n] - ei * x[2 * n + 1] + dt * uv * br;
                        const double xi = er * x[2 * n + 1] + ei * x[2 * n] + dt * uv * bi;
                        x[2 * n] = xr; x[2 * n + 1] = xi;
                        re += cr * xr - ci * xi;                  /* Re(C x): no conjugate */
                    }
                    re = 2.0 * re + p->Dk[c] * uv;
                    if (p->has_z) { const double zv = sv_get(&p->z, b, c, l); re *= zv / (1.0 + exp(-zv)); }
                    y[((size_t)b * p->D + c) * p->L + l] = re;
                }
                for (n = 0; n < 2 * N; ++n) st[((size_t)s * p->D + c) * N * 2 + n] = x[n];
            }
        }
    free(x);
}

static void test_scan_complex(void) {
    t_rng r = t_rng_seed(2011);
    const int n_cases = T_QUICK ? 8 : 24;
    int i;
    for (i = 0; i < n_cases; ++i) {
        static const int Ds[] = { 1, 5, 16, 40, 70 }, Ls[] = { 1, 7, 33, 300 }, Ns[] = { 1, 3, 8 };
        const int D = t_pick(&r, Ds, 5), L = t_pick(&r, Ls, 4), N0 = t_pick(&r, Ns, 3);
        const int N = i == 0 ? 130 : N0;     /* case 0: a state row (2N floats) longer than a token tile (256) */
        const int G = (D % 2 == 0 && t_chance(&r, 0.5)) ? 2 : 1, bc_const = t_chance(&r, 0.3), softplus = t_chance(&r, 0.5);
        const attn_dtype dt = sr_dts[t_irange(&r, 0, 2)], ydt = sr_dts[t_irange(&r, 0, 2)];
        const int nseg = t_chance(&r, 0.25) ? t_irange(&r, 1, 4) : 0, B = nseg ? 1 : t_irange(&r, 1, 2);
        cp p;
        attn_ssm_desc d;
        double *yr, *yg, *sr, *sg;
        float *sout, *st;
        unsigned char *y1;
        size_t ny, ns, k;
        attn_status s;
        int b, c, l;
        cp_init(&p, &r, B, D, L, N, G, bc_const, softplus, dt, ydt, t_chance(&r, 0.5), nseg);
        d = cp_desc(&p);
        d.n_threads = 1;
        ny = (size_t)B * D * L; ns = (size_t)p.S * D * N * 2;
        yr = (double *)t_xmalloc(sizeof(double) * ny); yg = (double *)t_xmalloc(sizeof(double) * ny);
        sr = (double *)t_xmalloc(sizeof(double) * ns); sg = (double *)t_xmalloc(sizeof(double) * ns);
        sout = (float *)t_xmalloc(sizeof(float) * ns); st = (float *)t_xmalloc(sizeof(float) * ns);
        s = attn_ssm_selective_scan(&d, p.u.t, p.dl.t, p.A, p.Bm.t, p.Cm.t, p.Dk, cp_z(&p), p.dbias, p.sin, p.y.t, sout);
        T_CHECK(s == ATTN_OK, "complex case %d: %s", i, attn_status_str(s));
        cr_scan(&p, yr, sr);
        for (b = 0; b < B; ++b) for (c = 0; c < D; ++c) for (l = 0; l < L; ++l) yg[((size_t)b * D + c) * L + l] = sv_get(&p.y, b, c, l);
        for (k = 0; k < ns; ++k) sg[k] = sout[k];
        T_CHECK(t_max_norm_err(yr, yg, ny) <= SR_TOL + 2.0 * t_dt_rel(ydt),
                "complex case %d (B%d D%d L%d N%d G%d const%d sp%d %s->%s seg%d): y err %g", i, B, D, L, N, G, bc_const, softplus,
                t_dt_name(dt), t_dt_name(ydt), nseg, t_max_norm_err(yr, yg, ny));
        T_CHECK(t_max_norm_err(sr, sg, ns) <= SR_TOL, "complex case %d: state err %g", i, t_max_norm_err(sr, sg, ns));
        /* 3 threads: bitwise the same */
        y1 = (unsigned char *)t_xmalloc(sv_bytes(&p.y));
        memcpy(y1, p.y.t.data, sv_bytes(&p.y));
        d.n_threads = 3;
        s = attn_ssm_selective_scan(&d, p.u.t, p.dl.t, p.A, p.Bm.t, p.Cm.t, p.Dk, cp_z(&p), p.dbias, p.sin, p.y.t, st);
        T_CHECK(s == ATTN_OK && memcmp(y1, p.y.t.data, sv_bytes(&p.y)) == 0 && memcmp(st, sout, sizeof(float) * ns) == 0,
                "complex case %d: 3 threads differ from 1 (bitwise)", i);
        /* L steps == one scan, bitwise (the step's views: token l of the full tensors) */
        if (!nseg && L <= 40) {
            attn_ssm_desc e = d;
            int ok = 1;
            memcpy(st, p.sin, sizeof(float) * ns);
            t_fill_nan(p.y.t.data, p.y.t.dtype, p.y.elems);
            e.len = 0;
            for (l = 0; l < L && ok; ++l) {
                attn_ssm_tensor u = p.u.t, dl = p.dl.t, z = cp_z(&p), Bm = p.Bm.t, Cm = p.Cm.t, y = p.y.t;
                const size_t es = t_dt_size(dt);
                if (u.stride_batch == 0 && u.stride_chan == 0) {     /* dense: explicit strides of the full tensors */
                    u.stride_chan = dl.stride_chan = y.stride_chan = L; u.stride_batch = dl.stride_batch = y.stride_batch = (ptrdiff_t)D * L;
                    if (z.data) { z.stride_chan = L; z.stride_batch = (ptrdiff_t)D * L; }
                    if (!bc_const) { Bm.stride_chan = Cm.stride_chan = 2 * L; Bm.stride_batch = Cm.stride_batch = (ptrdiff_t)G * N * 2 * L; }
                }
                u.data = (char *)u.data + (size_t)l * es; dl.data = (char *)dl.data + (size_t)l * es;
                if (z.data) z.data = (char *)z.data + (size_t)l * es;
                y.data = (char *)y.data + (size_t)l * t_dt_size(ydt);
                if (!bc_const) { Bm.data = (char *)Bm.data + (size_t)2 * l * es; Cm.data = (char *)Cm.data + (size_t)2 * l * es; }
                if (attn_ssm_selective_step(&e, u, dl, p.A, Bm, Cm, p.Dk, z, p.dbias, st, y) != ATTN_OK) ok = 0;
            }
            T_CHECK(ok && memcmp(y1, p.y.t.data, sv_bytes(&p.y)) == 0 && memcmp(st, sout, sizeof(float) * ns) == 0,
                    "complex case %d: L steps differ from one scan (bitwise)", i);
        }
        free(yr); free(yg); free(sr); free(sg); free(sout); free(st); free(y1);
        cp_free(&p);
    }
}

static void test_conv_errors(void) {
    t_rng r = t_rng_seed(2010);
    attn_ssm_desc d;
    sv x, o;
    float w[12], st[6];
    int k;
    sp_init(&g_ep, &r, 1, 2, 3, 1, 1, 0, 0, ATTN_F32, ATTN_F32, 0, 0, 0, 0, 0);   /* y is the sentinel out */
    x = sv_make(ATTN_F32, 1, 2, 3, 0);
    o = g_ep.y;
    for (k = 0; k < 12; ++k) w[k] = 0.1f * (float)k;
    for (k = 0; k < 6; ++k) ((float *)x.t.data)[k] = (float)k;
    g_est = st; g_est_bytes = sizeof st;
    t_sentinel(o.t.data, sv_bytes(&o), 7); t_sentinel(st, sizeof st, 9);
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = 2; d.len = 3;
    sr_expect(attn_ssm_conv1d(NULL, x.t, w, NULL, NULL, o.t, st), ATTN_ERR_NULL_DESC, "conv NULL desc");
    d.conv_kernel = -1; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, o.t, st), ATTN_ERR_SSM_CONV_KERNEL, "conv_kernel -1");
    d.conv_kernel = 0; d.conv_act = 2; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, o.t, st), ATTN_ERR_SSM_CONV_ACT, "conv_act 2");
    d.conv_act = 0; d.cu_seqlens = &k; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, o.t, st), ATTN_ERR_SSM_CONV_VARLEN, "conv cu_seqlens");
    d.cu_seqlens = NULL;
    sr_expect(attn_ssm_conv1d(&d, x.t, NULL, NULL, NULL, o.t, st), ATTN_ERR_SSM_NULL_WEIGHT, "conv NULL weight");
    {
        attn_ssm_tensor bad = x.t;
        bad.data = NULL; sr_expect(attn_ssm_conv1d(&d, bad, w, NULL, NULL, o.t, st), ATTN_ERR_SSM_NULL_U, "conv NULL x");
        bad = o.t; bad.data = NULL; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, bad, st), ATTN_ERR_SSM_NULL_Y, "conv NULL out");
        bad = o.t; bad.dtype = (attn_dtype)3; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, bad, st), ATTN_ERR_SSM_DTYPE, "conv out dtype 3");
    }
    d.len = 0; sr_expect(attn_ssm_conv1d(&d, x.t, w, NULL, NULL, o.t, st), ATTN_ERR_SSM_SHAPE, "conv len 0");
    sr_expect(attn_ssm_conv1d_step(&d, x.t, w, NULL, NULL, o.t), ATTN_ERR_SSM_NULL_STATE, "conv step NULL state");
    sv_free(&x);
    sp_free(&g_ep);
}

/* ---------------------------------------------------------------------------------------- */
/* S4D                                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int D, N;
    float *log_dt, *lar, *aim, *br, *bi, *cr, *ci, *dk;
    attn_s4d_params p;
} s4p;

static void s4_init(s4p *s, t_rng *r, int D, int N, int has_b, int has_d) {
    int h, n;
    memset(s, 0, sizeof *s);
    s->D = D; s->N = N;
    s->log_dt = (float *)t_xmalloc(sizeof(float) * D); s->dk = (float *)t_xmalloc(sizeof(float) * D);
    s->lar = (float *)t_xmalloc(sizeof(float) * D * N); s->aim = (float *)t_xmalloc(sizeof(float) * D * N);
    s->br = (float *)t_xmalloc(sizeof(float) * D * N); s->bi = (float *)t_xmalloc(sizeof(float) * D * N);
    s->cr = (float *)t_xmalloc(sizeof(float) * D * N); s->ci = (float *)t_xmalloc(sizeof(float) * D * N);
    for (h = 0; h < D; ++h) {
        s->log_dt[h] = (float)(log(1e-3) + t_unif(r) * (log(1e-1) - log(1e-3)));   /* ZOO: U[log 1e-3, log 1e-1] */
        s->dk[h] = (float)t_normal(r);
        for (n = 0; n < N; ++n) {                 /* S4D-Lin: A = -0.5 + i pi n (jittered) */
            s->lar[h * N + n] = (float)log(0.5 * (0.5 + t_unif(r)));
            s->aim[h * N + n] = (float)(3.14159265358979 * n * (0.9 + 0.2 * t_unif(r)));
            s->br[h * N + n] = (float)t_normal(r); s->bi[h * N + n] = (float)t_normal(r);
            s->cr[h * N + n] = (float)(0.5 * t_normal(r)); s->ci[h * N + n] = (float)(0.5 * t_normal(r));
        }
    }
    s->p.log_dt = s->log_dt; s->p.log_a_real = s->lar; s->p.a_imag = s->aim;
    s->p.b_re = has_b ? s->br : NULL; s->p.b_im = has_b ? s->bi : NULL;
    s->p.c_re = s->cr; s->p.c_im = s->ci; s->p.d_skip = has_d ? s->dk : NULL;
}
static void s4_free(s4p *s) {
    free(s->log_dt); free(s->dk); free(s->lar); free(s->aim); free(s->br); free(s->bi); free(s->cr); free(s->ci);
}

/* ZOO's discretisation in double: dA, dB for channel h, mode n */
static void s4_ref_disc(const s4p *s, int disc, int h, int n, double *ar_, double *ai_, double *br_, double *bi_) {
    const double dt = exp((double)s->log_dt[h]), ar = -exp((double)s->lar[h * s->N + n]), ai = s->aim[h * s->N + n];
    const double Br = s->p.b_re ? s->br[h * s->N + n] : 1.0, Bi = s->p.b_re ? s->bi[h * s->N + n] : 0.0;
    double qr, qi;
    if (disc == ATTN_SSM_ZOH) {   /* dA = e^{dt A}; dB = (dA - 1) / A B */
        const double er = exp(dt * ar) * cos(dt * ai), ei = exp(dt * ar) * sin(dt * ai), m = ar * ar + ai * ai;
        *ar_ = er; *ai_ = ei;
        qr = ((er - 1) * ar + ei * ai) / m; qi = (ei * ar - (er - 1) * ai) / m;
    } else {                      /* dA = (1 + dtA/2)/(1 - dtA/2); dB = dt B / (1 - dtA/2) */
        const double nr = 1 + dt * ar / 2, ni = dt * ai / 2, dr = 1 - dt * ar / 2, di = -dt * ai / 2, m = dr * dr + di * di;
        *ar_ = (nr * dr + ni * di) / m; *ai_ = (ni * dr - nr * di) / m;
        qr = dt * dr / m; qi = -dt * di / m;
    }
    *br_ = qr * Br - qi * Bi; *bi_ = qr * Bi + qi * Br;
}

/* the recurrence in double: y [B][D][L], final state [B][D][N][2] */
static void s4_ref(const s4p *s, int disc, const sv *u, int B, int L, const float *sin, double *y, double *st) {
    int b, h, n, l;
    for (b = 0; b < B; ++b)
        for (h = 0; h < s->D; ++h) {
            for (n = 0; n < s->N; ++n) {
                double ar, ai, br, bi;
                double xr = sin ? sin[(((size_t)b * s->D + h) * s->N + n) * 2] : 0.0;
                double xi = sin ? sin[(((size_t)b * s->D + h) * s->N + n) * 2 + 1] : 0.0;
                const double cr = s->cr[h * s->N + n], ci = s->ci[h * s->N + n];
                s4_ref_disc(s, disc, h, n, &ar, &ai, &br, &bi);
                for (l = 0; l < L; ++l) {
                    const double uv = sv_get(u, b, h, l), tr = ar * xr - ai * xi + br * uv;
                    xi = ar * xi + ai * xr + bi * uv; xr = tr;
                    if (n == 0) y[((size_t)b * s->D + h) * L + l] = s->p.d_skip ? s->dk[h] * uv : 0.0;
                    y[((size_t)b * s->D + h) * L + l] += 2.0 * (cr * xr - ci * xi);
                }
                st[(((size_t)b * s->D + h) * s->N + n) * 2] = xr; st[(((size_t)b * s->D + h) * s->N + n) * 2 + 1] = xi;
            }
        }
}

static void test_s4d(void) {
    t_rng r = t_rng_seed(2011);
    const int n_cases = T_QUICK ? 8 : 30;
    int i;
    for (i = 0; i < n_cases; ++i) {
        static const int Ls[] = { 1, 5, 64, 65, 200, 700 };
        const int B = t_irange(&r, 1, 2), D = t_irange(&r, 1, 12), N = t_irange(&r, 1, 32), L = t_pick(&r, Ls, 6);
        const int disc = t_irange(&r, 0, 1), has_sin = t_chance(&r, 0.5);
        const attn_dtype dt = sr_dts[t_irange(&r, 0, 2)], ydt = sr_dts[t_irange(&r, 0, 2)];
        s4p s;
        sv u = sv_make(dt, B, D, L, t_chance(&r, 0.5)), y = sv_make(ydt, B, D, L, t_chance(&r, 0.5));
        const size_t ns = (size_t)B * D * N * 2, ny = (size_t)B * D * L;
        float *x0 = (float *)t_xmalloc(sizeof(float) * ns), *sout = (float *)t_xmalloc(sizeof(float) * ns);
        float *K = (float *)t_xmalloc(sizeof(float) * D * L);
        double *yr = (double *)t_xmalloc(sizeof(double) * ny), *yg = (double *)t_xmalloc(sizeof(double) * ny);
        double *sr = (double *)t_xmalloc(sizeof(double) * ns), *sg = (double *)t_xmalloc(sizeof(double) * ns);
        double *kr = (double *)t_xmalloc(sizeof(double) * D * L), *kg = (double *)t_xmalloc(sizeof(double) * D * L);
        attn_ssm_desc d;
        attn_status st;
        int b, h, l, n;
        size_t k;
        s4_init(&s, &r, D, N, t_chance(&r, 0.5), t_chance(&r, 0.7));
        for (b = 0; b < B; ++b) for (h = 0; h < D; ++h) for (l = 0; l < L; ++l) sv_set(&u, b, h, l, t_normal(&r));
        for (k = 0; k < ns; ++k) x0[k] = (float)t_normal(&r);
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.s4d_disc = disc; d.n_threads = t_irange(&r, 1, 3);
        st = attn_ssm_s4d(&d, &s.p, u.t, has_sin ? x0 : NULL, y.t, sout);
        T_CHECK(st == ATTN_OK, "s4d case %d: %s", i, attn_status_str(st));
        s4_ref(&s, disc, &u, B, L, has_sin ? x0 : NULL, yr, sr);
        for (b = 0; b < B; ++b) for (h = 0; h < D; ++h) for (l = 0; l < L; ++l) yg[((size_t)b * D + h) * L + l] = sv_get(&y, b, h, l);
        for (k = 0; k < ns; ++k) sg[k] = sout[k];
        T_CHECK(t_max_norm_err(yr, yg, ny) <= 1e-4 + 2.0 * t_dt_rel(ydt),
                "s4d case %d (B%d D%d N%d L%d %s %s->%s): convolution vs recurrence err %g", i, B, D, N, L,
                disc ? "bilinear" : "zoh", t_dt_name(dt), t_dt_name(ydt), t_max_norm_err(yr, yg, ny));
        T_CHECK(t_max_norm_err(sr, sg, ns) <= 1e-4, "s4d case %d: state err %g", i, t_max_norm_err(sr, sg, ns));
        /* the kernel: K_l = 2 Re sum_n C_n dB_n dA_n^l, dA^l in polar form (|dA|^l, l arg dA) */
        T_CHECK(attn_ssm_s4d_kernel(&d, &s.p, K) == ATTN_OK, "s4d kernel case %d", i);
        for (h = 0; h < D; ++h)
            for (l = 0; l < L; ++l) {
                double acc = 0.0;
                for (n = 0; n < N; ++n) {
                    double ar, ai, br, bi, mag, ang, pr, pi;
                    const double cr = s.cr[h * N + n], ci = s.ci[h * N + n];
                    s4_ref_disc(&s, disc, h, n, &ar, &ai, &br, &bi);
                    mag = pow(sqrt(ar * ar + ai * ai), l); ang = l * atan2(ai, ar);
                    pr = mag * cos(ang); pi = mag * sin(ang);
                    acc += 2.0 * ((cr * br - ci * bi) * pr - (cr * bi + ci * br) * pi);
                }
                kr[(size_t)h * L + l] = acc; kg[(size_t)h * L + l] = K[(size_t)h * L + l];
            }
        T_CHECK(t_max_norm_err(kr, kg, (size_t)D * L) <= 1e-5, "s4d kernel case %d: err %g", i, t_max_norm_err(kr, kg, (size_t)D * L));
        sv_free(&u); sv_free(&y);
        free(x0); free(sout); free(K); free(yr); free(yg); free(sr); free(sg); free(kr); free(kg);
        s4_free(&s);
    }
}

/* S4D properties: L steps == the convolution, two pieces == one pass, thread counts bitwise */
static void test_s4d_props(void) {
    t_rng r = t_rng_seed(2012);
    const int B = 2, D = 9, N = 24, L = 150, L1 = 77;
    s4p s;
    sv u = sv_make(ATTN_F32, B, D, L, 0), y = sv_make(ATTN_F32, B, D, L, 0);
    const size_t ns = (size_t)B * D * N * 2, ny = (size_t)B * D * L;
    float *st = (float *)t_xmalloc(sizeof(float) * ns), *s1 = (float *)t_xmalloc(sizeof(float) * ns);
    float *y1 = (float *)t_xmalloc(sizeof(float) * ny);
    double *a = (double *)t_xmalloc(sizeof(double) * ny), *g = (double *)t_xmalloc(sizeof(double) * ny);
    attn_ssm_desc d;
    attn_ssm_tensor ut, yt;
    int b, h, l, nt, disc;
    size_t k;
    s4_init(&s, &r, D, N, 1, 1);
    for (b = 0; b < B; ++b) for (h = 0; h < D; ++h) for (l = 0; l < L; ++l) sv_set(&u, b, h, l, t_normal(&r));
    for (disc = 0; disc < 2; ++disc) {
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.s4d_disc = disc;
        for (nt = 1; nt <= 3; ++nt) {
            d.n_threads = nt;
            T_CHECK(attn_ssm_s4d(&d, &s.p, u.t, NULL, y.t, st) == ATTN_OK, "s4d threads %d", nt);
            if (nt == 1) { memcpy(y1, y.t.data, sizeof(float) * ny); memcpy(s1, st, sizeof(float) * ns); }
            else T_CHECK(memcmp(y1, y.t.data, sizeof(float) * ny) == 0 && memcmp(s1, st, sizeof(float) * ns) == 0,
                         "s4d: %d threads differ from 1 (bitwise)", nt);
        }
        for (k = 0; k < ny; ++k) a[k] = y1[k];
        /* L steps */
        memset(st, 0, sizeof(float) * ns);
        for (l = 0; l < L; ++l) {
            ut = u.t; yt = y.t;
            ut.stride_chan = yt.stride_chan = L; ut.stride_batch = yt.stride_batch = (ptrdiff_t)D * L;
            ut.data = (float *)ut.data + l; yt.data = (float *)yt.data + l;
            if (attn_ssm_s4d_step(&d, &s.p, ut, st, yt) != ATTN_OK) break;
        }
        T_CHECK(l == L, "s4d step failed");
        for (k = 0; k < ny; ++k) g[k] = ((float *)y.t.data)[k];
        T_CHECK(t_max_norm_err(a, g, ny) <= 1e-5, "s4d (disc %d): L steps vs convolution err %g", disc, t_max_norm_err(a, g, ny));
        for (k = 0; k < ns; ++k) if (fabs(st[k] - s1[k]) > 1e-5 * SR_MAX(1.0, fabs(s1[k]))) break;
        T_CHECK(k == ns, "s4d: L steps final state differs");
        /* two pieces */
        ut = u.t; yt = y.t;
        ut.stride_chan = yt.stride_chan = L; ut.stride_batch = yt.stride_batch = (ptrdiff_t)D * L;
        d.len = L1;
        T_CHECK(attn_ssm_s4d(&d, &s.p, ut, NULL, yt, st) == ATTN_OK, "s4d piece 1");
        ut.data = (float *)ut.data + L1; yt.data = (float *)yt.data + L1; d.len = L - L1;
        T_CHECK(attn_ssm_s4d(&d, &s.p, ut, st, yt, st) == ATTN_OK, "s4d piece 2");
        for (k = 0; k < ny; ++k) g[k] = ((float *)y.t.data)[k];
        T_CHECK(t_max_norm_err(a, g, ny) <= 1e-5, "s4d (disc %d): two pieces vs one pass err %g", disc, t_max_norm_err(a, g, ny));
        for (k = 0; k < ns; ++k) if (fabs(st[k] - s1[k]) > 1e-5 * SR_MAX(1.0, fabs(s1[k]))) break;
        T_CHECK(k == ns, "s4d: two pieces final state differs");
    }
    sv_free(&u); sv_free(&y); free(st); free(s1); free(y1); free(a); free(g);
    s4_free(&s);
}

static void test_s4d_errors(void) {
    t_rng r = t_rng_seed(2013);
    s4p s;
    attn_s4d_params p;
    attn_ssm_desc d;
    sv u;
    float K[8];
    int cu[2] = { 0, 4 };
    size_t bytes;
    s4_init(&s, &r, 2, 3, 1, 1);
    sp_init(&g_ep, &r, 1, 2, 4, 1, 1, 0, 0, ATTN_F32, ATTN_F32, 0, 0, 0, 0, 0);   /* y: the sentinel out */
    u = sv_make(ATTN_F32, 1, 2, 4, 0);
    memset(u.t.data, 0, sv_bytes(&u));
    g_est_bytes = sizeof(float) * 2 * 3 * 2;
    g_est = (float *)t_xmalloc(g_est_bytes);
    t_sentinel(g_ep.y.t.data, sv_bytes(&g_ep.y), 7); t_sentinel(g_est, g_est_bytes, 9);
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = 2; d.len = 4; d.d_state = 3;
    T_CHECK(attn_ssm_s4d(&d, &s.p, u.t, NULL, g_ep.y.t, g_est) == ATTN_OK, "s4d errors: the valid call");
    t_sentinel(g_ep.y.t.data, sv_bytes(&g_ep.y), 7); t_sentinel(g_est, g_est_bytes, 9);
    sr_expect(attn_ssm_s4d(NULL, &s.p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_NULL_DESC, "s4d NULL desc");
    sr_expect(attn_ssm_s4d(&d, NULL, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_NULL_PARAMS, "s4d NULL params");
    p = s.p; p.log_dt = NULL; sr_expect(attn_ssm_s4d(&d, &p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_NULL_DT, "s4d NULL log_dt");
    p = s.p; p.a_imag = NULL; sr_expect(attn_ssm_s4d(&d, &p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_NULL_A, "s4d NULL a_imag");
    p = s.p; p.c_re = NULL; sr_expect(attn_ssm_s4d(&d, &p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_NULL_C, "s4d NULL c_re");
    p = s.p; p.b_im = NULL; sr_expect(attn_ssm_s4d(&d, &p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_B_PAIR, "s4d b_re without b_im");
    d.s4d_disc = 2; sr_expect(attn_ssm_s4d(&d, &s.p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_DISC, "s4d_disc 2");
    d.s4d_disc = 0; d.cu_seqlens = cu; d.varlen_batch = 1;
    sr_expect(attn_ssm_s4d(&d, &s.p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_S4D_VARLEN, "s4d cu_seqlens");
    d.cu_seqlens = NULL; d.varlen_batch = 0; d.d_state = 0;
    sr_expect(attn_ssm_s4d(&d, &s.p, u.t, NULL, g_ep.y.t, g_est), ATTN_ERR_SSM_D_STATE, "s4d N = 0");
    d.d_state = 3;
    sr_expect(attn_ssm_s4d_step(&d, &s.p, u.t, NULL, g_ep.y.t), ATTN_ERR_SSM_NULL_STATE, "s4d step NULL state");
    t_sentinel(K, sizeof K, 3);
    d.len = 4;
    T_CHECK(attn_ssm_s4d_kernel(&d, &s.p, NULL) == ATTN_ERR_SSM_NULL_K, "s4d kernel NULL K");
    t_status_provoked[ATTN_ERR_SSM_NULL_K] = 1;       /* nothing to leave untouched: K is the output */
    d.s4d_disc = 5;
    T_CHECK(attn_ssm_s4d_kernel(&d, &s.p, K) == ATTN_ERR_SSM_S4D_DISC && t_sentinel_ok(K, sizeof K, 3), "s4d kernel bad disc: K untouched");
    d.s4d_disc = 0;
    T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_S4D, &bytes) == ATTN_OK && bytes > 0, "s4d workspace query");
    sv_free(&u); sp_free(&g_ep); free(g_est); s4_free(&s);
}

/* ---------------------------------------------------------------------------------------- */
/* Selective-scan backward: finite differences of a double forward                           */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, D, L, N, G, bc_const, softplus, has_z;
    double *u, *dl, *z, *A, *Bm, *Cm, *Dk, *bias, *dy, *sin;   /* dense, as the library's */
} bwp;

/* sum_{b,c,l} dy * y, the forward evaluated in double */
static double bw_loss(const bwp *p) {
    const int N = p->N, cg = p->D / p->G;
    double loss = 0.0, x[64];
    int b, c, l, n;
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c) {
            const int g = c / cg;
            for (n = 0; n < N; ++n) x[n] = p->sin[((size_t)b * p->D + c) * N + n];
            for (l = 0; l < p->L; ++l) {
                const size_t o = ((size_t)b * p->D + c) * p->L + l;
                double dt = p->dl[o] + p->bias[c], y = p->Dk[c] * p->u[o];
                if (p->softplus && dt <= 20.0) dt = log1p(exp(dt));
                for (n = 0; n < N; ++n) {
                    const double bn = p->bc_const ? p->Bm[c * N + n] : p->Bm[(((size_t)b * p->G + g) * N + n) * p->L + l];
                    const double cn = p->bc_const ? p->Cm[c * N + n] : p->Cm[(((size_t)b * p->G + g) * N + n) * p->L + l];
                    x[n] = exp(dt * p->A[c * N + n]) * x[n] + dt * bn * p->u[o];
                    y += cn * x[n];
                }
                if (p->has_z) y *= p->z[o] / (1.0 + exp(-p->z[o]));
                loss += p->dy[o] * y;
            }
        }
    return loss;
}

static double *bw_vec(t_rng *r, size_t n, double mu, double sd) {
    double *v = (double *)t_xmalloc(sizeof(double) * n);
    size_t i;
    for (i = 0; i < n; ++i) v[i] = (float)(mu + sd * t_normal(r));   /* f32-representable */
    return v;
}
static float *bw_f32(const double *v, size_t n) {
    float *f = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) f[i] = (float)v[i];
    return f;
}

/* FD check of one gradient array: up to 24 sampled entries, central differences, eps 1e-5 */
static void bw_fd(bwp *p, double *param, size_t n, const float *grad, const char *name, t_rng *r, int cfg) {
    double gmax = 1e-3, err = 0.0;
    size_t k, i;
    for (i = 0; i < n; ++i) gmax = SR_MAX(gmax, fabs(grad[i]));
    for (k = 0; k < 24 && k < n; ++k) {
        const size_t j = n <= 24 ? k : (size_t)t_irange(r, 0, (int)n - 1);
        const double keep = param[j], eps = 1e-5 * SR_MAX(1.0, fabs(keep));
        double lp, lm, fd;
        param[j] = keep + eps; lp = bw_loss(p);
        param[j] = keep - eps; lm = bw_loss(p);
        param[j] = keep;
        fd = (lp - lm) / (2 * eps);
        err = SR_MAX(err, fabs(fd - grad[j]));
    }
    T_CHECK(err <= 2e-3 * gmax, "backward config %d: %s vs finite differences: err %g (max |grad| %g)", cfg, name, err, gmax);
}

static void test_scan_backward(void) {
    t_rng r = t_rng_seed(2014);
    int cfg;
    /* cfg 0-3: 6 channels, N 3 (cfg 3: 2 chunks of the 256-token checkpoints); 4: 168 channels
       in 2 groups (per group blocks of 64 and 20: pieces of 16 x 5 and 4), N 16, 2 chunks; 5:
       constant B/C with the gate over 3 chunks, N 5 */
    for (cfg = 0; cfg < 6; ++cfg) {
        bwp p;
        const int B = cfg == 5 ? 1 : 2, D = cfg == 4 ? 168 : cfg == 5 ? 40 : 6, N = cfg == 4 ? 16 : cfg == 5 ? 5 : 3;
        const int L = cfg == 3 || cfg == 4 ? 300 : cfg == 5 ? 600 : 37;
        size_t nx, nbc;
        attn_ssm_desc d;
        attn_ssm_grads gr;
        attn_ssm_tensor tu, tdl, tz, tb, tc, tdy;
        float *fu, *fdl, *fz, *fA, *fB, *fC, *fD, *fbias, *fdy, *fsin;
        float *g_u, *g_dl, *g_z, *g_A, *g_B, *g_C, *g_D, *g_bias;
        attn_status s;
        memset(&p, 0, sizeof p);
        p.B = B; p.D = D; p.L = L; p.N = N; p.G = cfg == 1 || cfg == 4 ? 2 : 1; p.bc_const = cfg == 2 || cfg == 5;
        p.softplus = cfg != 1; p.has_z = cfg != 2;
        nx = (size_t)B * D * L; nbc = p.bc_const ? (size_t)D * N : (size_t)B * p.G * N * L;
        p.u = bw_vec(&r, nx, 0.0, 1.0); p.z = bw_vec(&r, nx, 0.0, 1.5); p.dy = bw_vec(&r, nx, 0.0, 1.0);
        p.dl = bw_vec(&r, nx, p.softplus ? -2.0 : 0.1, p.softplus ? 1.0 : 0.03);
        p.A = bw_vec(&r, (size_t)D * N, -1.0, 0.3); p.Bm = bw_vec(&r, nbc, 0.0, 1.0); p.Cm = bw_vec(&r, nbc, 0.0, 1.0);
        p.Dk = bw_vec(&r, D, 0.0, 1.0); p.bias = bw_vec(&r, D, 0.0, 0.2); p.sin = bw_vec(&r, (size_t)B * D * N, 0.0, 1.0);
        fu = bw_f32(p.u, nx); fdl = bw_f32(p.dl, nx); fz = bw_f32(p.z, nx); fdy = bw_f32(p.dy, nx);
        fA = bw_f32(p.A, (size_t)D * N); fB = bw_f32(p.Bm, nbc); fC = bw_f32(p.Cm, nbc); fD = bw_f32(p.Dk, D);
        fbias = bw_f32(p.bias, D); fsin = bw_f32(p.sin, (size_t)B * D * N);
        g_u = (float *)t_xmalloc(4 * nx); g_dl = (float *)t_xmalloc(4 * nx); g_z = (float *)t_xmalloc(4 * nx);
        g_A = (float *)t_xmalloc(4 * (size_t)D * N); g_B = (float *)t_xmalloc(4 * nbc); g_C = (float *)t_xmalloc(4 * nbc);
        g_D = (float *)t_xmalloc(4 * (size_t)D); g_bias = (float *)t_xmalloc(4 * (size_t)D);
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.n_groups = p.G; d.bc_const = p.bc_const;
        d.delta_softplus = p.softplus; d.n_threads = 1 + cfg % 3;
        tu = attn_ssm_tensor_dense(fu, ATTN_F32, D, L);
        tdl = attn_ssm_tensor_dense(fdl, ATTN_F32, D, L);
        tz = attn_ssm_tensor_dense(p.has_z ? fz : NULL, ATTN_F32, D, L);
        tdy = attn_ssm_tensor_dense(fdy, ATTN_F32, D, L);
        tb = p.bc_const ? attn_ssm_tensor_dense(fB, ATTN_F32, D, N) : attn_ssm_tensor_dense(fB, ATTN_F32, p.G * N, L);
        tc = p.bc_const ? attn_ssm_tensor_dense(fC, ATTN_F32, D, N) : attn_ssm_tensor_dense(fC, ATTN_F32, p.G * N, L);
        gr.du = g_u; gr.ddelta = g_dl; gr.dz = g_z; gr.dA = g_A; gr.dB = g_B; gr.dC = g_C; gr.dD = g_D; gr.ddelta_bias = g_bias;
        s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &gr);
        T_CHECK(s == ATTN_OK, "backward config %d: %s", cfg, attn_status_str(s));
        bw_fd(&p, p.u, nx, g_u, "du", &r, cfg);
        bw_fd(&p, p.dl, nx, g_dl, "ddelta", &r, cfg);
        if (p.has_z) bw_fd(&p, p.z, nx, g_z, "dz", &r, cfg);
        bw_fd(&p, p.A, (size_t)D * N, g_A, "dA", &r, cfg);
        bw_fd(&p, p.Bm, nbc, g_B, "dB", &r, cfg);
        bw_fd(&p, p.Cm, nbc, g_C, "dC", &r, cfg);
        bw_fd(&p, p.Dk, D, g_D, "dD", &r, cfg);
        bw_fd(&p, p.bias, D, g_bias, "ddelta_bias", &r, cfg);
        {   /* thread counts and the workspace query: bitwise */
            float *h_u = (float *)t_xmalloc(4 * nx), *h_B = (float *)t_xmalloc(4 * nbc), *h_A = (float *)t_xmalloc(4 * (size_t)D * N);
            attn_ssm_grads g2 = gr;
            size_t bytes = 0, m0;
            void *ws;
            float *h_dl = (float *)t_xmalloc(4 * nx), *h_z = (float *)t_xmalloc(4 * nx), *h_C = (float *)t_xmalloc(4 * nbc);
            float *h_D = (float *)t_xmalloc(4 * (size_t)D), *h_bias = (float *)t_xmalloc(4 * (size_t)D);
            g2.du = h_u; g2.dB = h_B; g2.dA = h_A; g2.ddelta = h_dl; g2.dz = h_z; g2.dC = h_C; g2.dD = h_D; g2.ddelta_bias = h_bias;
            d.n_threads = d.n_threads % 3 + 1;                /* another count */
            T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_SCAN_BACKWARD, &bytes) == ATTN_OK, "backward workspace query");
            ws = t_xmalloc(bytes); d.workspace = ws; d.workspace_size = bytes;
            m0 = t_attn_mallocs;
            T_CHECK(attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2) == ATTN_OK &&
                    t_attn_mallocs == m0, "backward with the queried workspace: allocation-free");
            T_CHECK(memcmp(h_u, g_u, 4 * nx) == 0 && memcmp(h_B, g_B, 4 * nbc) == 0 && memcmp(h_A, g_A, 4 * (size_t)D * N) == 0 &&
                    memcmp(h_dl, g_dl, 4 * nx) == 0 && (!p.has_z || memcmp(h_z, g_z, 4 * nx) == 0) &&
                    memcmp(h_C, g_C, 4 * nbc) == 0 && memcmp(h_D, g_D, 4 * (size_t)D) == 0 &&
                    memcmp(h_bias, g_bias, 4 * (size_t)D) == 0,
                    "backward config %d: thread counts differ (bitwise)", cfg);
            if (cfg == 0) {                                   /* error paths, gradients untouched */
                t_sentinel(h_u, 4 * nx, 5);
                d.workspace_size = bytes - 1;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2);
                T_CHECK(s == ATTN_ERR_SSM_WORKSPACE && t_sentinel_ok(h_u, 4 * nx, 5), "backward small workspace");
                d.workspace = NULL; d.workspace_size = 0;
                tdy.data = NULL;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2);
                if (T_CHECK(s == ATTN_ERR_SSM_NULL_DY && t_sentinel_ok(h_u, 4 * nx, 5), "backward NULL dy")) t_status_provoked[s] = 1;
                tdy.data = fdy;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, NULL);
                if (T_CHECK(s == ATTN_ERR_SSM_NULL_GRADS && t_sentinel_ok(h_u, 4 * nx, 5), "backward NULL grads")) t_status_provoked[s] = 1;
                {   /* issue 27: a broadcast dy was reported as y's fault */
                    attn_ssm_tensor bdy = tdy;
                    bdy.stride_batch = L; bdy.stride_chan = 0;
                    s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, bdy, &g2);
                    if (T_CHECK(s == ATTN_ERR_SSM_DY_BROADCAST && t_sentinel_ok(h_u, 4 * nx, 5), "backward dy broadcast: %s",
                                attn_status_str(s))) t_status_provoked[s] = 1;
                }
                d.cu_seqlens = &cfg; d.varlen_batch = 1;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2);
                if (T_CHECK(s == ATTN_ERR_SSM_BWD_VARLEN && t_sentinel_ok(h_u, 4 * nx, 5), "backward cu_seqlens")) t_status_provoked[s] = 1;
                d.cu_seqlens = NULL; d.varlen_batch = 0; d.a_complex = 2;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2);
                T_CHECK(s == ATTN_ERR_SSM_A_COMPLEX && t_sentinel_ok(h_u, 4 * nx, 5), "backward a_complex 2");
                d.a_complex = 0; d.n_groups = 4;
                s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &g2);
                T_CHECK(s == ATTN_ERR_SSM_GROUPS && t_sentinel_ok(h_u, 4 * nx, 5), "backward G not dividing D");
            }
            free(h_u); free(h_B); free(h_A); free(h_dl); free(h_z); free(h_C); free(h_D); free(h_bias); free(ws);
        }
        free(p.u); free(p.z); free(p.dy); free(p.dl); free(p.A); free(p.Bm); free(p.Cm); free(p.Dk); free(p.bias); free(p.sin);
        free(fu); free(fdl); free(fz); free(fdy); free(fA); free(fB); free(fC); free(fD); free(fbias); free(fsin);
        free(g_u); free(g_dl); free(g_z); free(g_A); free(g_B); free(g_C); free(g_D); free(g_bias);
    }
}

/* f16 / bf16 storage of u, delta, z, B, C and dy: the backward equals, bit for bit, the f32
   backward on the same (exactly converted) values, at another thread count */
static void test_scan_backward_dtypes(void) {
    t_rng r = t_rng_seed(2033);
    const int B = 2, D = 40, N = 16, L = 300, G = 2;
    const size_t nx = (size_t)B * D * L, nbc = (size_t)B * G * N * L, ns[6] = { nx, nx, nx, nbc, nbc, nx };
    static const double mu[6] = { 0.0, -2.0, 0.0, 0.0, 0.0, 0.0 }, sd[6] = { 1.0, 1.0, 1.5, 1.0, 1.0, 1.0 };
    int it, i;
    for (it = 0; it < 2; ++it) {
        const attn_dtype dt = it ? ATTN_BF16 : ATTN_F16;
        float *f[6], *A = (float *)t_xmalloc(4 * (size_t)D * N), *Dk = (float *)t_xmalloc(4 * (size_t)D);
        float *bias = (float *)t_xmalloc(4 * (size_t)D), *sin = (float *)t_xmalloc(4 * (size_t)B * D * N), *gb[2][8];
        uint16_t *h[6];
        attn_ssm_grads g[2];
        attn_ssm_desc d;
        int run, ok = 1;
        size_t j;
        for (i = 0; i < 6; ++i) {
            f[i] = (float *)t_xmalloc(4 * ns[i]); h[i] = (uint16_t *)t_xmalloc(2 * ns[i]);
            for (j = 0; j < ns[i]; ++j) {
                f[i][j] = (float)t_round_dt(mu[i] + sd[i] * t_normal(&r), dt);
                h[i][j] = dt == ATTN_F16 ? t_f32_to_f16(f[i][j]) : t_f32_to_bf16(f[i][j]);
            }
        }
        for (j = 0; j < (size_t)D * N; ++j) A[j] = (float)(-1.0 + 0.3 * t_normal(&r));
        for (j = 0; j < (size_t)D; ++j) { Dk[j] = (float)t_normal(&r); bias[j] = (float)(0.2 * t_normal(&r)); }
        for (j = 0; j < (size_t)B * D * N; ++j) sin[j] = (float)t_normal(&r);
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.n_groups = G; d.delta_softplus = 1;
        for (run = 0; run < 2; ++run) {
            const attn_dtype st = run ? dt : ATTN_F32;
            void *p[6];
            for (i = 0; i < 8; ++i) gb[run][i] = (float *)t_xmalloc(4 * (i < 3 ? nx : i < 6 ? (i == 3 ? (size_t)D * N : nbc) : (size_t)D));
            for (i = 0; i < 6; ++i) p[i] = run ? (void *)h[i] : (void *)f[i];
            memset(&g[run], 0, sizeof g[run]);
            g[run].du = gb[run][0]; g[run].ddelta = gb[run][1]; g[run].dz = gb[run][2]; g[run].dA = gb[run][3];
            g[run].dB = gb[run][4]; g[run].dC = gb[run][5]; g[run].dD = gb[run][6]; g[run].ddelta_bias = gb[run][7];
            d.n_threads = run ? 2 : 1;
            T_CHECK(attn_ssm_selective_scan_backward(&d, attn_ssm_tensor_dense(p[0], st, D, L), attn_ssm_tensor_dense(p[1], st, D, L), A,
                                                     attn_ssm_tensor_dense(p[3], st, G * N, L), attn_ssm_tensor_dense(p[4], st, G * N, L),
                                                     Dk, attn_ssm_tensor_dense(p[2], st, D, L), bias, sin,
                                                     attn_ssm_tensor_dense(p[5], st, D, L), &g[run]) == ATTN_OK,
                    "backward %s storage: call", t_dt_name(st));
        }
        for (i = 0; i < 8; ++i)
            ok &= memcmp(gb[0][i], gb[1][i], 4 * (i < 3 ? nx : i < 6 ? (i == 3 ? (size_t)D * N : nbc) : (size_t)D)) == 0;
        T_CHECK(ok, "backward %s storage == f32 on the same values (bitwise, 1 vs 2 threads)", t_dt_name(dt));
        for (i = 0; i < 6; ++i) { free(f[i]); free(h[i]); }
        for (i = 0; i < 8; ++i) { free(gb[0][i]); free(gb[1][i]); }
        free(A); free(Dk); free(bias); free(sin);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* Memory rule: every output (y / out, state_out, K, the gradients) apart from every input,    */
/* the other outputs and its own rows; state_out == state_in exactly is the documented         */
/* in-place update, a partial overlap is ATTN_ERR_SSM_STATE_ALIAS.                             */
/* ---------------------------------------------------------------------------------------- */

/* [nb, nc, nl] with explicit dense strides (never zero strides meaning dense) */
static attn_ssm_tensor so_view(float *p, int nb, int nc, int nl) {
    attn_ssm_tensor t;
    (void)nb;                     /* the batch stride does not depend on it */
    memset(&t, 0, sizeof t);
    t.data = p; t.dtype = ATTN_F32; t.stride_chan = nl; t.stride_batch = (ptrdiff_t)nc * nl;
    return t;
}

typedef struct {                  /* every buffer of every call, carved from one arena */
    float *u, *dl, *z, *y, *Bm, *Cm, *A, *Dk, *db, *sin, *sout;          /* scan: 16 x4, 8 x2, 8, 4 x2, 8 x2 */
    float *w, *bias, *cin, *cout;                                       /* conv: 16, 4, 12 x2 */
    float *ldt, *lar, *aim, *br, *bi, *cr, *ci, *s4in, *s4out, *K;      /* s4d: 4, 8 x6, 16 x2, 16 */
    float *du, *ddl, *dz, *dA, *dB, *dC, *dD, *ddb, *dy;                /* backward: 16 x3, 8 x3, 4 x2, 16 */
} so_bufs;

static void test_ssm_overlap(void) {
    enum { B = 1, D = 4, L = 4, N = 2, K = 4, NA = 1024 };
    float *arena = (float *)t_xmalloc(sizeof(float) * NA), *copy = (float *)t_xmalloc(sizeof(float) * NA);
    t_rng r = t_rng_seed(0x55A1);
    so_bufs base, a;
    attn_ssm_desc d;
    float *p = arena;
    int i;
    for (i = 0; i < NA; ++i) arena[i] = (float)t_unif(&r);       /* valid in every role */
#define SO_TAKE(f, n) (base.f = p, p += (n))
    SO_TAKE(u, 16); SO_TAKE(dl, 16); SO_TAKE(z, 16); SO_TAKE(y, 16); SO_TAKE(Bm, 8); SO_TAKE(Cm, 8); SO_TAKE(A, 8);
    SO_TAKE(Dk, 4); SO_TAKE(db, 4); SO_TAKE(sin, 8); SO_TAKE(sout, 8);
    SO_TAKE(w, 16); SO_TAKE(bias, 4); SO_TAKE(cin, 12); SO_TAKE(cout, 12);
    SO_TAKE(ldt, 4); SO_TAKE(lar, 8); SO_TAKE(aim, 8); SO_TAKE(br, 8); SO_TAKE(bi, 8); SO_TAKE(cr, 8); SO_TAKE(ci, 8);
    SO_TAKE(s4in, 16); SO_TAKE(s4out, 16); SO_TAKE(K, 16);
    SO_TAKE(du, 16); SO_TAKE(ddl, 16); SO_TAKE(dz, 16); SO_TAKE(dA, 8); SO_TAKE(dB, 8); SO_TAKE(dC, 8); SO_TAKE(dD, 4);
    SO_TAKE(ddb, 4); SO_TAKE(dy, 16);
#undef SO_TAKE
    T_CHECK(p <= arena + NA, "ssm overlap: arena too small");
    memset(&d, 0, sizeof d);
    d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.conv_kernel = K; d.n_threads = 2;
    for (i = 0; i <= 26; ++i) {
        attn_ssm_tensor yv, ov;
        attn_s4d_params sp4;
        attn_ssm_grads g;
        attn_status got = ATTN_OK, want = ATTN_ERR_SSM_OVERLAP;
        const char *what = "";
        int call = 0;                  /* 0 scan, 1 step, 2 conv, 3 conv step, 4 s4d, 5 s4d step, 6 s4d kernel, 7 backward */
        a = base;
        yv = so_view(a.y, B, D, L);
        switch (i) {
        case 0: yv.stride_chan = 1; what = "scan y rows overlap (chan stride 1 < len)"; break;
        case 1: a.sout = a.y + 2; what = "scan state_out inside y"; break;
        case 2: a.y = a.u; what = "scan y == u"; break;
        case 3: a.A = a.y + 4; what = "scan y over A"; break;
        case 4: a.sin = a.sout + 1; want = ATTN_ERR_SSM_STATE_ALIAS; what = "scan state_in one float past state_out"; break;
        case 5: a.Dk = a.y + 15; what = "scan y's last float on d_skip"; break;
        case 6: a.sout = a.Bm + 4; what = "scan state_out over B"; break;
        case 7: call = 1; a.sout = a.y + 1; what = "step state inside y"; break;
        case 8: call = 1; a.y = a.z; what = "step y == z"; break;
        case 9: call = 2; a.y = a.u; what = "conv out == x"; break;
        case 10: call = 2; a.cout = a.y + 3; what = "conv state_out inside out"; break;
        case 11: call = 2; a.w = a.y + 8; what = "conv out over weight"; break;
        case 12: call = 2; a.cin = a.cout + 11; want = ATTN_ERR_SSM_STATE_ALIAS; what = "conv state_in on state_out's last float"; break;
        case 13: call = 3; a.cout = a.y + 1; what = "conv step state inside out"; break;
        case 14: call = 2; yv.stride_chan = 2; what = "conv out rows overlap"; break;
        case 15: call = 4; a.y = a.u; what = "s4d y == u"; break;
        case 16: call = 4; a.ldt = a.y + 2; what = "s4d y over log_dt"; break;
        case 17: call = 4; a.s4out = a.s4in + 3; want = ATTN_ERR_SSM_STATE_ALIAS; what = "s4d state_out inside state_in"; break;
        case 18: call = 5; a.s4out = a.y + 2; what = "s4d step state inside y"; break;
        case 19: call = 4; a.s4out = a.ci + 2; a.s4in = NULL; what = "s4d state_out over c_im"; break;
        case 20: call = 6; a.K = a.cr + 1; what = "s4d kernel K over c_re"; break;
        case 21: call = 7; want = ATTN_ERR_SSM_BWD_OVERLAP; a.du = a.u; what = "backward du == u"; break;
        case 22: call = 7; want = ATTN_ERR_SSM_BWD_OVERLAP; a.dB = a.dA + 1; what = "backward dB over dA"; break;
        case 23: call = 7; want = ATTN_ERR_SSM_BWD_OVERLAP; a.dz = a.dy + 8; what = "backward dz over dy"; break;
        case 24: call = 7; want = ATTN_ERR_SSM_BWD_OVERLAP; a.ddl = a.sin; what = "backward ddelta over state_in"; break;
        case 25: call = 7; want = ATTN_ERR_SSM_BWD_OVERLAP; a.ddb = a.dD; what = "backward ddelta_bias == dD"; break;
        case 26: call = 4; yv.stride_chan = 3; what = "s4d y rows overlap"; break;
        }
        yv.data = a.y;                                                         /* cases may move y */
        if (call == 1 || call == 3 || call == 5) yv.stride_chan = 1;          /* [B, D, 1] */
        ov = yv;
        sp4.log_dt = a.ldt; sp4.log_a_real = a.lar; sp4.a_imag = a.aim; sp4.b_re = a.br; sp4.b_im = a.bi;
        sp4.c_re = a.cr; sp4.c_im = a.ci; sp4.d_skip = a.Dk;
        g.du = a.du; g.ddelta = a.ddl; g.dz = a.dz; g.dA = a.dA; g.dB = a.dB; g.dC = a.dC; g.dD = a.dD; g.ddelta_bias = a.ddb;
        memcpy(copy, arena, sizeof(float) * NA);
        switch (call) {
        case 0: got = attn_ssm_selective_scan(&d, so_view(a.u, B, D, L), so_view(a.dl, B, D, L), a.A, so_view(a.Bm, B, N, L),
                                              so_view(a.Cm, B, N, L), a.Dk, so_view(a.z, B, D, L), a.db, a.sin, yv, a.sout); break;
        case 1: got = attn_ssm_selective_step(&d, so_view(a.u, B, D, 1), so_view(a.dl, B, D, 1), a.A, so_view(a.Bm, B, N, 1),
                                              so_view(a.Cm, B, N, 1), a.Dk, so_view(a.z, B, D, 1), a.db, a.sout, yv); break;
        case 2: got = attn_ssm_conv1d(&d, so_view(a.u, B, D, L), a.w, a.bias, a.cin, ov, a.cout); break;
        case 3: got = attn_ssm_conv1d_step(&d, so_view(a.u, B, D, 1), a.w, a.bias, a.cout, ov); break;
        case 4: got = attn_ssm_s4d(&d, &sp4, so_view(a.u, B, D, L), a.s4in, yv, a.s4out); break;
        case 5: got = attn_ssm_s4d_step(&d, &sp4, so_view(a.u, B, D, 1), a.s4out, yv); break;
        case 6: got = attn_ssm_s4d_kernel(&d, &sp4, a.K); break;
        case 7: got = attn_ssm_selective_scan_backward(&d, so_view(a.u, B, D, L), so_view(a.dl, B, D, L), a.A,
                                                       so_view(a.Bm, B, N, L), so_view(a.Cm, B, N, L), a.Dk,
                                                       so_view(a.z, B, D, L), a.db, a.sin, so_view(a.dy, B, D, L), &g); break;
        }
        T_CHECK(got == want, "ssm %s: got %s, want %s", what, attn_status_str(got), attn_status_str(want));
        if (T_CHECK(memcmp(copy, arena, sizeof(float) * NA) == 0, "ssm %s: memory was written", what) && got == want)
            t_status_provoked[want] = 1;
    }
    {   /* allowed: the in-place state (state_out == state_in), inputs sharing memory */
        const attn_ssm_tensor y = so_view(base.y, B, D, L), u = so_view(base.u, B, D, L);
        attn_s4d_params sp4;
        attn_ssm_grads g;
        sp4.log_dt = base.ldt; sp4.log_a_real = base.lar; sp4.a_imag = base.aim; sp4.b_re = base.br; sp4.b_im = base.bi;
        sp4.c_re = base.cr; sp4.c_im = base.ci; sp4.d_skip = base.Dk;
        T_CHECK(attn_ssm_selective_scan(&d, u, u, base.A, so_view(base.Bm, B, N, L), so_view(base.Bm, B, N, L), base.Dk, u,
                                        base.Dk, base.sout, y, base.sout) == ATTN_OK, "ssm scan: in-place state, u == delta == z allowed");
        T_CHECK(attn_ssm_conv1d(&d, u, base.w, base.w, base.cout, y, base.cout) == ATTN_OK, "ssm conv: in-place state allowed");
        T_CHECK(attn_ssm_s4d(&d, &sp4, u, base.s4out, y, base.s4out) == ATTN_OK, "ssm s4d: in-place state allowed");
        g.du = base.du; g.ddelta = base.ddl; g.dz = base.dz; g.dA = base.dA; g.dB = base.dB; g.dC = base.dC; g.dD = base.dD;
        g.ddelta_bias = base.ddb;
        T_CHECK(attn_ssm_selective_scan_backward(&d, u, so_view(base.dl, B, D, L), base.A, so_view(base.Bm, B, N, L),
                                                 so_view(base.Cm, B, N, L), base.Dk, so_view(base.z, B, D, L), base.db, base.sin,
                                                 y, &g) == ATTN_OK, "ssm backward: the valid call (dy == y's memory, an input)");
    }
    free(arena); free(copy);
}

/* Issue 27 item 10: SiLU at extreme inputs, in conv1d (chunked and one-token step) and the scan's
   z gate, on whatever vector layer this build has. The vector exp clamped its argument, so
   SiLU(-1e30) came out -3.7e-9, SiLU(-3e38) -1.10 (conv1d) and the gate -3.53. The gate of a
   huge negative input is 0 (x sigmoid(x) -> -0), of a huge positive one x itself. 16 channels x
   16 tokens so every SIMD lane and the tails see every value. */
static double silu_ref(double x) {
    if (x != x) return x;
    if (x < -700.0) return 0.0;            /* includes -inf: the limit */
    if (x > 700.0) return x;
    return x / (1.0 + exp(-x));
}
static void test_silu_extremes(void) {
    static const float vals[16] = { -3e38f, -1e30f, -1e6f, -200.0f, -89.0f, -87.0f, -20.0f, -1.0f,
                                    0.0f, 1.0f, 20.0f, 100.0f, 1e30f, 3e38f, -INFINITY, INFINITY };
    enum { D = 16, L = 16 };
    float x[D * L], out[D * L], zero[D * L], one[D * L], dsk[D], A[D], w[D], st[D];
    attn_ssm_tensor tx = { 0 }, to = { 0 }, tz = { 0 }, tzero = { 0 }, tone = { 0 };
    attn_ssm_desc d;
    int c, t, bad = 0, op;
    double worst = 0.0;
    for (c = 0; c < D; ++c) {
        for (t = 0; t < L; ++t) { x[c * L + t] = vals[(c + t) % 16]; zero[c * L + t] = 0.0f; one[c * L + t] = 1.0f; }
        dsk[c] = 1.0f; A[c] = -1.0f; w[c] = 1.0f; st[c] = 0.0f;
    }
    tx.data = x; to.data = out; tz.data = x; tzero.data = zero; tone.data = one;
    tx.dtype = to.dtype = tz.dtype = tzero.dtype = tone.dtype = ATTN_F32;
    tx.stride_batch = to.stride_batch = tz.stride_batch = tzero.stride_batch = tone.stride_batch = D * L;
    tx.stride_chan = to.stride_chan = tz.stride_chan = tzero.stride_chan = tone.stride_chan = L;
    for (op = 0; op < 3; ++op) {     /* 0: conv1d (K 1: out = silu(x)); 1: its one-token step; 2: the scan's z gate */
        attn_status s = ATTN_OK;
        memset(&d, 0, sizeof d);
        d.batch = 1; d.dim = D; d.len = L; d.d_state = 1; d.conv_kernel = 1; d.conv_act = ATTN_SSM_CONV_SILU; d.n_threads = 1;
        for (c = 0; c < D * L; ++c) out[c] = 12345.0f;
        if (op == 0) s = attn_ssm_conv1d(&d, tx, w, NULL, NULL, to, NULL);
        else if (op == 1)
            for (t = 0; t < L && s == ATTN_OK; ++t) {
                attn_ssm_tensor xs = tx, os = to;
                xs.data = x + t; os.data = out + t;
                s = attn_ssm_conv1d_step(&d, xs, w, NULL, st, os);
            }
        else   /* u = 1, delta = 0, B = C = 0, D = 1: y = silu(z) */
            s = attn_ssm_selective_scan(&d, tone, tzero, A, tzero, tzero, dsk, tz, NULL, NULL, to, NULL);
        T_CHECK(s == ATTN_OK, "silu extremes op %d: %s", op, attn_status_str(s));
        for (c = 0; c < D * L; ++c) {
            const double want = silu_ref((double)x[c]), got = out[c];
            double err;
            if (isinf(want)) err = got == want ? 0.0 : 1.0;
            else if (fabs(want) < 1e-30) err = fabs(got) < 1e-30 ? 0.0 : 1.0;   /* an underflowed gate is 0 */
            else if (isnan(got)) err = 1.0;
            else err = fabs(got - want) / (fabs(want) > 1.0 ? fabs(want) : 1.0);
            if (err > worst) worst = err;
            if (err > 1e-6 && bad++ < 4)
                T_CHECK(0, "silu extremes op %d: silu(%g) = %g, want %g", op, (double)x[c], got, want);
        }
    }
    T_CHECK(bad == 0, "silu extremes: %d wrong values (worst relative error %.3g)", bad, worst);
}

void test_ssm(void) {
    test_scan_ref();
    test_scan_threads();
    test_scan_pieces();
    test_scan_steps();
    test_scan_varlen();
    test_scan_workspace();
    test_conv();
    test_conv_props();
    test_scan_errors();
    test_scan_complex();
    test_scan_decay();
    test_conv_errors();
    test_s4d();
    test_s4d_props();
    test_s4d_errors();
    test_scan_backward();
    test_scan_backward_dtypes();
    test_ssm_bwd();                  /* tests/test_ssm_bwd.c */
    test_ssm_overlap();
    test_silu_extremes();
    test_port_mamba_hf();            /* tests/test_ports.c */
}
