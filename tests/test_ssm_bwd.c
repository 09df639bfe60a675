/* tests/test_ssm_bwd.c - gradients of the state-space pieces (family ssm, called by test_ssm):
   attn_ssm_conv1d_backward, attn_ssm_s4d_backward and the complex-A
   attn_ssm_selective_scan_backward.

   References (double, written here from the documented maths, sharing no code with attn.h):
   each forward as a loss sum(dy * y); every gradient is checked against central finite
   differences of that loss (eps 1e-5 relative), up to 24 sampled entries per array, within
   2e-3 of the array's largest gradient. Properties: thread counts 1/2/3 bitwise, the queried
   workspace allocation-free, bad input (a specific status, gradients untouched). Fixtures
   (tests/fixtures/ssm_bwd_torch.py, torch autograd): HF Mamba's slow-path conv1d + SiLU, the
   S4D paper's S4DKernel + FFT convolution, mamba_ssm's selective_scan_ref with complex A;
   outputs and gradients within 1e-4 relative to the largest entry. */
#include "test.h"
#include "fixture.h"

#define BW_MAX(a, b) ((a) > (b) ? (a) : (b))

static double *bw2_vec(t_rng *r, size_t n, double mu, double sd) {
    double *v = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) v[i] = (float)(mu + sd * t_normal(r));   /* f32-representable */
    return v;
}
static float *bw2_f32(const double *v, size_t n) {
    float *f = (float *)t_xmalloc(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; ++i) f[i] = (float)v[i];
    return f;
}

/* central differences of loss() against grad (n entries of param): up to 24 sampled entries */
typedef double (*bw2_loss_fn)(const void *p);
static void bw2_fd(const void *p, bw2_loss_fn loss, double *param, size_t n, const float *grad, const char *what,
                   const char *name, t_rng *r) {
    double gmax = 1e-3, err = 0.0;
    size_t k, i;
    for (i = 0; i < n; ++i) gmax = BW_MAX(gmax, fabs(grad[i]));
    for (k = 0; k < 24 && k < n; ++k) {
        const size_t j = n <= 24 ? k : (size_t)t_irange(r, 0, (int)n - 1);
        const double keep = param[j], eps = 1e-5 * BW_MAX(1.0, fabs(keep));
        double lp, lm, fd;
        param[j] = keep + eps; lp = loss(p);
        param[j] = keep - eps; lm = loss(p);
        param[j] = keep;
        fd = (lp - lm) / (2 * eps);
        err = BW_MAX(err, fabs(fd - grad[j]));
    }
    T_CHECK(err <= 2e-3 * gmax, "%s: %s vs finite differences: err %g (max |grad| %g)", what, name, err, gmax);
}

/* max |a - b| / max(1e-6, max |b|) over n values */
static double bw2_rel(const float *a, const double *b, size_t n) {
    double m = 1e-6, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) m = BW_MAX(m, fabs(b[i]));
    for (i = 0; i < n; ++i) e = BW_MAX(e, fabs((double)a[i] - b[i]));
    return e / m;
}

/* ---------------------------------------------------------------------------------------- */
/* conv1d                                                                                     */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, D, L, K, silu, has_bias, has_sin;
    double *x, *w, *bias, *sin, *dy;         /* dense [B][D][L], [D][K], [D], [B][D][K-1] */
} cvb;

static double cvb_loss(const void *pv) {
    const cvb *p = (const cvb *)pv;
    double loss = 0.0;
    int b, c, t, k;
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c)
            for (t = 0; t < p->L; ++t) {
                double a = p->bias[c];                  /* zeros for a NULL bias */
                for (k = 0; k < p->K; ++k) {
                    const int pos = t - (p->K - 1) + k;
                    const double xv = pos >= 0 ? p->x[((size_t)b * p->D + c) * p->L + pos]
                                    : p->has_sin ? p->sin[((size_t)b * p->D + c) * (p->K - 1) + (p->K - 1 + pos)] : 0.0;
                    a += p->w[(size_t)c * p->K + k] * xv;
                }
                if (p->silu) a = a / (1.0 + exp(-a));
                loss += p->dy[((size_t)b * p->D + c) * p->L + t] * a;
            }
    return loss;
}

static void test_conv_backward(void) {
    t_rng r = t_rng_seed(2901);
    int cfg;
    /* cfg 0: K 4, silu, bias, state; 1: K 1, no act; 2: K 5, L 2100 (3 chunks of 1024) on 40
       channels, silu; 3: K 3 > L 2, bf16 x and dout */
    for (cfg = 0; cfg < 4; ++cfg) {
        cvb p;
        const int B = cfg == 2 ? 1 : 2, D = cfg == 2 ? 40 : 5, L = cfg == 2 ? 2100 : cfg == 3 ? 2 : 19;
        const int K = cfg == 1 ? 1 : cfg == 2 ? 5 : cfg == 3 ? 3 : 4;
        const attn_dtype dt = cfg == 3 ? ATTN_BF16 : ATTN_F32;
        const size_t nx = (size_t)B * D * L, nw = (size_t)D * K, nh = (size_t)B * D * (K - 1) + 1;
        char what[64];
        float *fx, *fw, *fb, *fs, *fdy, *gx, *gw, *gb, *hx, *hw, *hb;
        void *sx, *sdy;
        attn_ssm_desc d;
        attn_ssm_tensor tx, tdy;
        attn_status s;
        size_t i, bytes = 0, m0;
        void *ws;
        sprintf(what, "conv1d backward cfg %d", cfg);
        memset(&p, 0, sizeof p);
        p.B = B; p.D = D; p.L = L; p.K = K; p.silu = cfg != 1; p.has_bias = cfg != 2; p.has_sin = cfg != 1;
        p.x = bw2_vec(&r, nx, 0.0, 1.0); p.w = bw2_vec(&r, nw, 0.0, 0.5); p.bias = bw2_vec(&r, D, 0.0, 0.5);
        p.sin = bw2_vec(&r, nh, 0.0, 1.0); p.dy = bw2_vec(&r, nx, 0.0, 1.0);
        if (!p.has_bias) for (i = 0; i < (size_t)D; ++i) p.bias[i] = 0.0;
        if (dt == ATTN_BF16)                      /* exact bf16 values */
            for (i = 0; i < nx; ++i) { p.x[i] = t_round_dt(p.x[i], dt); p.dy[i] = t_round_dt(p.dy[i], dt); }
        fx = bw2_f32(p.x, nx); fw = bw2_f32(p.w, nw); fb = bw2_f32(p.bias, D); fs = bw2_f32(p.sin, nh); fdy = bw2_f32(p.dy, nx);
        sx = t_xmalloc(nx * t_dt_size(dt)); sdy = t_xmalloc(nx * t_dt_size(dt));
        for (i = 0; i < nx; ++i) { t_store_at(sx, dt, (ptrdiff_t)i, p.x[i]); t_store_at(sdy, dt, (ptrdiff_t)i, p.dy[i]); }
        gx = (float *)t_xmalloc(4 * nx); gw = (float *)t_xmalloc(4 * nw); gb = (float *)t_xmalloc(4 * (size_t)D);
        hx = (float *)t_xmalloc(4 * nx); hw = (float *)t_xmalloc(4 * nw); hb = (float *)t_xmalloc(4 * (size_t)D);
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.conv_kernel = K; d.conv_act = p.silu ? ATTN_SSM_CONV_SILU : ATTN_SSM_CONV_NONE;
        d.n_threads = 1;
        tx = attn_ssm_tensor_dense(sx, dt, D, L); tdy = attn_ssm_tensor_dense(sdy, dt, D, L);
        s = attn_ssm_conv1d_backward(&d, tx, fw, p.has_bias ? fb : NULL, p.has_sin ? fs : NULL, tdy, gx, gw, gb);
        T_CHECK(s == ATTN_OK, "%s: %s", what, attn_status_str(s));
        bw2_fd(&p, cvb_loss, p.x, nx, gx, what, "dx", &r);
        bw2_fd(&p, cvb_loss, p.w, nw, gw, what, "dweight", &r);
        bw2_fd(&p, cvb_loss, p.bias, D, gb, what, "dbias", &r);
        /* other thread counts, the queried workspace: bitwise, allocation-free */
        d.n_threads = 2 + cfg % 2;
        T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_CONV_BACKWARD, &bytes) == ATTN_OK, "%s: workspace query", what);
        ws = t_xmalloc(bytes); d.workspace = ws; d.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_ssm_conv1d_backward(&d, tx, fw, p.has_bias ? fb : NULL, p.has_sin ? fs : NULL, tdy, hx, hw, hb);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "%s: with the queried workspace: %s", what, attn_status_str(s));
        T_CHECK(memcmp(hx, gx, 4 * nx) == 0 && memcmp(hw, gw, 4 * nw) == 0 && memcmp(hb, gb, 4 * (size_t)D) == 0,
                "%s: thread counts differ (bitwise)", what);
        /* NULL gradients are skipped; the others unchanged */
        memset(hw, 0, 4 * nw);
        s = attn_ssm_conv1d_backward(&d, tx, fw, p.has_bias ? fb : NULL, p.has_sin ? fs : NULL, tdy, NULL, hw, NULL);
        T_CHECK(s == ATTN_OK && memcmp(hw, gw, 4 * nw) == 0, "%s: dweight alone", what);
        if (cfg == 0) {                           /* bad input: a specific status, gradients untouched */
            attn_ssm_tensor bad = tdy;
            t_sentinel(hx, 4 * nx, 7);
            d.workspace_size = bytes - 1;
            s = attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, hx, hw, hb);
            T_CHECK(s == ATTN_ERR_SSM_WORKSPACE && t_sentinel_ok(hx, 4 * nx, 7), "%s: small workspace", what);
            d.workspace = NULL; d.workspace_size = 0;
            bad.data = NULL;
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, bad, hx, hw, hb), ATTN_ERR_SSM_NULL_DY, what, "NULL dout");
            bad = tdy; bad.stride_chan = 0;
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, bad, hx, hw, hb), ATTN_ERR_SSM_DY_BROADCAST, what, "dout broadcast");
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, NULL, fb, fs, tdy, hx, hw, hb), ATTN_ERR_SSM_NULL_WEIGHT, what, "NULL weight");
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, (float *)sdy, hw, hb), ATTN_ERR_SSM_BWD_OVERLAP, what, "dx == dout");
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, hx, hx + 3, hb), ATTN_ERR_SSM_BWD_OVERLAP, what, "dweight in dx");
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, hx, hw, fb), ATTN_ERR_SSM_BWD_OVERLAP, what, "dbias == bias");
            d.cu_seqlens = &cfg; d.varlen_batch = 1;
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, hx, hw, hb), ATTN_ERR_SSM_CONV_VARLEN, what, "cu_seqlens");
            d.cu_seqlens = NULL; d.varlen_batch = 0; d.conv_act = 7;
            t_expect_status(attn_ssm_conv1d_backward(&d, tx, fw, fb, fs, tdy, hx, hw, hb), ATTN_ERR_SSM_CONV_ACT, what, "bad act");
            d.conv_act = 0;
            T_CHECK(t_sentinel_ok(hx, 4 * nx, 7), "%s: dx touched by a failed call", what);
        }
        free(p.x); free(p.w); free(p.bias); free(p.sin); free(p.dy); free(fx); free(fw); free(fb); free(fs); free(fdy);
        free(sx); free(sdy); free(gx); free(gw); free(gb); free(hx); free(hw); free(hb); free(ws);
    }
}

/* ---------------------------------------------------------------------------------------- */
/* S4D                                                                                        */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, D, L, N, disc, has_b, has_sin;
    double *log_dt, *lar, *aim, *bre, *bim, *cre, *cim, *dsk;   /* [D], [D N] x 6, [D] */
    double *u, *sin, *dy;                                      /* [B D L], [B D N 2], [B D L] */
} s4b;

/* the recurrence x = dA x + dB u, y = 2 Re(C x) + D u, discretised from the documented
   formulas (ZOH: dA = e^{dt A}, dB = (dA - 1) / A B; bilinear: (1 + dt A/2) / (1 - dt A/2),
   dt B / (1 - dt A/2)), in double */
static double s4b_loss(const void *pv) {
    const s4b *p = (const s4b *)pv;
    double loss = 0.0;
    int b, h, n, l;
    for (h = 0; h < p->D; ++h)
        for (n = 0; n < p->N; ++n) {
            const size_t i = (size_t)h * p->N + n;
            const double dt = exp(p->log_dt[h]), Ar = -exp(p->lar[i]), Ai = p->aim[i];
            const double Br = p->has_b ? p->bre[i] : 1.0, Bi = p->has_b ? p->bim[i] : 0.0;
            double dAr, dAi, qr, qi, dBr, dBi;
            if (p->disc == ATTN_SSM_ZOH) {
                const double den = Ar * Ar + Ai * Ai;
                dAr = exp(dt * Ar) * cos(dt * Ai); dAi = exp(dt * Ar) * sin(dt * Ai);
                qr = ((dAr - 1) * Ar + dAi * Ai) / den; qi = (dAi * Ar - (dAr - 1) * Ai) / den;
            } else {
                const double mr = 1 - dt * Ar / 2, mi = -dt * Ai / 2, pr = 1 + dt * Ar / 2, pi = dt * Ai / 2, den = mr * mr + mi * mi;
                dAr = (pr * mr + pi * mi) / den; dAi = (pi * mr - pr * mi) / den;
                qr = dt * mr / den; qi = -dt * mi / den;
            }
            dBr = qr * Br - qi * Bi; dBi = qr * Bi + qi * Br;
            for (b = 0; b < p->B; ++b) {
                const size_t so = (((size_t)b * p->D + h) * p->N + n) * 2, o = ((size_t)b * p->D + h) * p->L;
                double xr = p->has_sin ? p->sin[so] : 0.0, xi = p->has_sin ? p->sin[so + 1] : 0.0, t;
                for (l = 0; l < p->L; ++l) {
                    t = dAr * xr - dAi * xi + dBr * p->u[o + l];
                    xi = dAr * xi + dAi * xr + dBi * p->u[o + l];
                    xr = t;
                    loss += p->dy[o + l] * 2.0 * (p->cre[i] * xr - p->cim[i] * xi);
                }
            }
        }
    for (b = 0; b < p->B; ++b)
        for (h = 0; h < p->D; ++h)
            for (l = 0; l < p->L; ++l) loss += p->dy[((size_t)b * p->D + h) * p->L + l] * p->dsk[h] * p->u[((size_t)b * p->D + h) * p->L + l];
    return loss;
}

static void test_s4d_backward(void) {
    t_rng r = t_rng_seed(2902);
    int cfg;
    /* cfg 0: ZOH, B = 1, state_in, L 23; 1: bilinear with B; 2: ZOH with B, L 600 (3 chunks of
       the 256-token checkpoints), 3 channels; 3: bilinear, no state, f16 u and dy; 4: ZOH with B,
       21 channels (two pieces of the kernel's 16 lanes, the second 5 wide: one per thread), L 300 */
    for (cfg = 0; cfg < 5; ++cfg) {
        s4b p;
        const int B = cfg == 2 ? 1 : 2, D = cfg == 2 ? 3 : cfg == 4 ? 21 : 4, N = cfg == 2 ? 5 : cfg == 4 ? 4 : 3;
        const int L = cfg == 2 ? 600 : cfg == 4 ? 300 : 23;
        const attn_dtype dt = cfg == 3 ? ATTN_F16 : ATTN_F32;
        const size_t nx = (size_t)B * D * L, dn = (size_t)D * N, ns = (size_t)B * D * N * 2;
        char what[64];
        float *f_dt, *f_lar, *f_aim, *f_bre, *f_bim, *f_cre, *f_cim, *f_dsk, *f_sin;
        float *g[9], *h[9];
        size_t gn[9], i, bytes = 0, m0;
        void *su, *sdy, *ws;
        attn_s4d_params prm;
        attn_s4d_grads gr, hr;
        attn_ssm_desc d;
        attn_ssm_tensor tu, tdy;
        attn_status s;
        int k;
        sprintf(what, "s4d backward cfg %d", cfg);
        memset(&p, 0, sizeof p);
        p.B = B; p.D = D; p.L = L; p.N = N; p.disc = cfg % 2 ? ATTN_SSM_BILINEAR : ATTN_SSM_ZOH;
        p.has_b = cfg != 0; p.has_sin = cfg != 3;
        p.log_dt = bw2_vec(&r, D, -2.5, 0.5); p.lar = bw2_vec(&r, dn, -0.7, 0.3); p.aim = bw2_vec(&r, dn, 0.0, 3.0);
        p.bre = bw2_vec(&r, dn, 1.0, 0.3); p.bim = bw2_vec(&r, dn, 0.0, 0.3);
        p.cre = bw2_vec(&r, dn, 0.0, 0.7); p.cim = bw2_vec(&r, dn, 0.0, 0.7); p.dsk = bw2_vec(&r, D, 0.0, 1.0);
        p.u = bw2_vec(&r, nx, 0.0, 1.0); p.sin = bw2_vec(&r, ns, 0.0, 1.0); p.dy = bw2_vec(&r, nx, 0.0, 1.0);
        if (dt == ATTN_F16)
            for (i = 0; i < nx; ++i) { p.u[i] = t_round_dt(p.u[i], dt); p.dy[i] = t_round_dt(p.dy[i], dt); }
        f_dt = bw2_f32(p.log_dt, D); f_lar = bw2_f32(p.lar, dn); f_aim = bw2_f32(p.aim, dn); f_bre = bw2_f32(p.bre, dn);
        f_bim = bw2_f32(p.bim, dn); f_cre = bw2_f32(p.cre, dn); f_cim = bw2_f32(p.cim, dn); f_dsk = bw2_f32(p.dsk, D);
        f_sin = bw2_f32(p.sin, ns);
        su = t_xmalloc(nx * t_dt_size(dt)); sdy = t_xmalloc(nx * t_dt_size(dt));
        for (i = 0; i < nx; ++i) { t_store_at(su, dt, (ptrdiff_t)i, p.u[i]); t_store_at(sdy, dt, (ptrdiff_t)i, p.dy[i]); }
        memset(&prm, 0, sizeof prm);
        prm.log_dt = f_dt; prm.log_a_real = f_lar; prm.a_imag = f_aim; prm.c_re = f_cre; prm.c_im = f_cim; prm.d_skip = f_dsk;
        if (p.has_b) { prm.b_re = f_bre; prm.b_im = f_bim; }
        gn[0] = nx; gn[1] = D; gn[2] = dn; gn[3] = dn; gn[4] = dn; gn[5] = dn; gn[6] = dn; gn[7] = dn; gn[8] = D;
        for (k = 0; k < 9; ++k) { g[k] = (float *)t_xmalloc(4 * gn[k]); h[k] = (float *)t_xmalloc(4 * gn[k]); }
        gr.du = g[0]; gr.dlog_dt = g[1]; gr.dlog_a_real = g[2]; gr.da_imag = g[3]; gr.db_re = g[4]; gr.db_im = g[5];
        gr.dc_re = g[6]; gr.dc_im = g[7]; gr.dd_skip = g[8];
        hr.du = h[0]; hr.dlog_dt = h[1]; hr.dlog_a_real = h[2]; hr.da_imag = h[3]; hr.db_re = h[4]; hr.db_im = h[5];
        hr.dc_re = h[6]; hr.dc_im = h[7]; hr.dd_skip = h[8];
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.s4d_disc = p.disc; d.n_threads = 1;
        tu = attn_ssm_tensor_dense(su, dt, D, L); tdy = attn_ssm_tensor_dense(sdy, dt, D, L);
        s = attn_ssm_s4d_backward(&d, &prm, tu, p.has_sin ? f_sin : NULL, tdy, &gr);
        T_CHECK(s == ATTN_OK, "%s: %s", what, attn_status_str(s));
        bw2_fd(&p, s4b_loss, p.u, nx, g[0], what, "du", &r);
        bw2_fd(&p, s4b_loss, p.log_dt, D, g[1], what, "dlog_dt", &r);
        bw2_fd(&p, s4b_loss, p.lar, dn, g[2], what, "dlog_a_real", &r);
        bw2_fd(&p, s4b_loss, p.aim, dn, g[3], what, "da_imag", &r);
        if (p.has_b) { bw2_fd(&p, s4b_loss, p.bre, dn, g[4], what, "db_re", &r); bw2_fd(&p, s4b_loss, p.bim, dn, g[5], what, "db_im", &r); }
        bw2_fd(&p, s4b_loss, p.cre, dn, g[6], what, "dc_re", &r);
        bw2_fd(&p, s4b_loss, p.cim, dn, g[7], what, "dc_im", &r);
        bw2_fd(&p, s4b_loss, p.dsk, D, g[8], what, "dd_skip", &r);
        /* another thread count with the queried workspace: bitwise, allocation-free */
        d.n_threads = 2 + cfg % 2;
        T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_S4D_BACKWARD, &bytes) == ATTN_OK, "%s: workspace query", what);
        ws = t_xmalloc(bytes); d.workspace = ws; d.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_ssm_s4d_backward(&d, &prm, tu, p.has_sin ? f_sin : NULL, tdy, &hr);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "%s: with the queried workspace: %s", what, attn_status_str(s));
        for (k = 0; k < 9; ++k)
            if ((k != 4 && k != 5) || p.has_b)
                T_CHECK(memcmp(g[k], h[k], 4 * gn[k]) == 0, "%s: gradient %d differs across thread counts (bitwise)", what, k);
        if (cfg == 0) {                           /* bad input: a specific status, gradients untouched */
            attn_ssm_tensor bad = tdy;
            attn_s4d_grads og = hr;
            t_sentinel(h[0], 4 * nx, 9);
            d.workspace_size = bytes - 1;
            s = attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &hr);
            T_CHECK(s == ATTN_ERR_SSM_WORKSPACE && t_sentinel_ok(h[0], 4 * nx, 9), "%s: small workspace", what);
            d.workspace = NULL; d.workspace_size = 0;
            bad.data = NULL;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, bad, &hr), ATTN_ERR_SSM_NULL_DY, what, "NULL dy");
            bad = tdy; bad.stride_batch = 0;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, bad, &hr), ATTN_ERR_SSM_DY_BROADCAST, what, "dy broadcast");
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, NULL), ATTN_ERR_SSM_NULL_GRADS, what, "NULL grads");
            t_expect_status(attn_ssm_s4d_backward(&d, NULL, tu, f_sin, tdy, &hr), ATTN_ERR_SSM_NULL_PARAMS, what, "NULL params");
            og.dc_re = f_cre;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &og), ATTN_ERR_SSM_BWD_OVERLAP, what, "dc_re == c_re");
            og = hr; og.da_imag = h[0] + 5;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &og), ATTN_ERR_SSM_BWD_OVERLAP, what, "da_imag in du");
            og = hr; og.du = (float *)su;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &og), ATTN_ERR_SSM_BWD_OVERLAP, what, "du == u");
            d.s4d_disc = 9;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &hr), ATTN_ERR_SSM_S4D_DISC, what, "bad disc");
            d.s4d_disc = 0; d.cu_seqlens = &cfg; d.varlen_batch = 1;
            t_expect_status(attn_ssm_s4d_backward(&d, &prm, tu, f_sin, tdy, &hr), ATTN_ERR_SSM_S4D_VARLEN, what, "cu_seqlens");
            d.cu_seqlens = NULL; d.varlen_batch = 0;
            T_CHECK(t_sentinel_ok(h[0], 4 * nx, 9), "%s: du touched by a failed call", what);
        }
        free(p.log_dt); free(p.lar); free(p.aim); free(p.bre); free(p.bim); free(p.cre); free(p.cim); free(p.dsk);
        free(p.u); free(p.sin); free(p.dy);
        free(f_dt); free(f_lar); free(f_aim); free(f_bre); free(f_bim); free(f_cre); free(f_cim); free(f_dsk); free(f_sin);
        free(su); free(sdy); free(ws);
        for (k = 0; k < 9; ++k) { free(g[k]); free(h[k]); }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* complex-A selective scan                                                                   */
/* ---------------------------------------------------------------------------------------- */

typedef struct {
    int B, D, L, N, G, bc_const, softplus, has_z;
    double *u, *dl, *z, *A, *Bm, *Cm, *Dk, *bias, *dy, *sin;   /* dense, complex as (re, im) pairs */
} csb;

/* selective_scan_ref with complex A, B, C (as attn.h documents it), in double:
   x = exp(dt A) x + dt u B, y = (2 Re(sum_n C_n x_n) + D u) silu(z) */
static double csb_loss(const void *pv) {
    const csb *p = (const csb *)pv;
    const int N = p->N, cg = p->D / p->G;
    double loss = 0.0, xr[16], xi[16];
    int b, c, l, n;
    for (b = 0; b < p->B; ++b)
        for (c = 0; c < p->D; ++c) {
            const int g = c / cg;
            for (n = 0; n < N; ++n) {
                xr[n] = p->sin[(((size_t)b * p->D + c) * N + n) * 2];
                xi[n] = p->sin[(((size_t)b * p->D + c) * N + n) * 2 + 1];
            }
            for (l = 0; l < p->L; ++l) {
                const size_t o = ((size_t)b * p->D + c) * p->L + l;
                double dt = p->dl[o] + p->bias[c], acc = 0.0, y;
                if (p->softplus && dt <= 20.0) dt = log1p(exp(dt));
                for (n = 0; n < N; ++n) {
                    const size_t bo = p->bc_const ? ((size_t)c * N + n) * 2 : (((size_t)b * p->G + g) * N + n) * 2 * (size_t)p->L + 2 * (size_t)l;
                    const double ar = p->A[((size_t)c * N + n) * 2], ai = p->A[((size_t)c * N + n) * 2 + 1];
                    const double er = exp(dt * ar) * cos(dt * ai), ei = exp(dt * ar) * sin(dt * ai);
                    const double nr = er * xr[n] - ei * xi[n] + dt * p->u[o] * p->Bm[bo];
                    xi[n] = er * xi[n] + ei * xr[n] + dt * p->u[o] * p->Bm[bo + 1];
                    xr[n] = nr;
                    acc += p->Cm[bo] * xr[n] - p->Cm[bo + 1] * xi[n];
                }
                y = 2.0 * acc + p->Dk[c] * p->u[o];
                if (p->has_z) y *= p->z[o] / (1.0 + exp(-p->z[o]));
                loss += p->dy[o] * y;
            }
        }
    return loss;
}

static void test_complex_backward(void) {
    t_rng r = t_rng_seed(2903);
    int cfg;
    /* cfg 0: per-token B/C, softplus, gate, 6 channels, N 3, L 37; 1: 40 channels in 2 groups
       (pieces of 16 and 4), N 4, L 300 (2 chunks of the 256-token checkpoints), no softplus;
       2: constant B/C, no gate, L 37; 3: per-token B/C stored bf16 (u, delta, z, dy f16) */
    for (cfg = 0; cfg < 4; ++cfg) {
        csb p;
        const int B = cfg == 1 ? 1 : 2, D = cfg == 1 ? 40 : 6, N = cfg == 1 ? 4 : 3, L = cfg == 1 ? 300 : 37;
        const attn_dtype xdt = cfg == 3 ? ATTN_F16 : ATTN_F32, bdt = cfg == 3 ? ATTN_BF16 : ATTN_F32;
        size_t nx, nbc, na, nst, i;
        char what[64];
        attn_ssm_desc d;
        attn_ssm_grads gr, hr;
        attn_ssm_tensor tu, tdl, tz, tb, tc, tdy;
        void *su, *sdl, *sz, *sdy, *sB, *sC, *ws;
        float *fA, *fD, *fbias, *fsin, *g[8], *h[8];
        size_t gn[8], bytes = 0, m0;
        attn_status s;
        int k;
        sprintf(what, "complex backward cfg %d", cfg);
        memset(&p, 0, sizeof p);
        p.B = B; p.D = D; p.L = L; p.N = N; p.G = cfg == 1 ? 2 : 1; p.bc_const = cfg == 2;
        p.softplus = cfg != 1; p.has_z = cfg != 2;
        nx = (size_t)B * D * L; na = (size_t)D * N * 2; nst = (size_t)B * D * N * 2;
        nbc = p.bc_const ? (size_t)D * N * 2 : (size_t)B * p.G * N * 2 * L;
        p.u = bw2_vec(&r, nx, 0.0, 1.0); p.z = bw2_vec(&r, nx, 0.0, 1.5); p.dy = bw2_vec(&r, nx, 0.0, 1.0);
        p.dl = bw2_vec(&r, nx, p.softplus ? -2.0 : 0.1, p.softplus ? 1.0 : 0.03);
        p.A = bw2_vec(&r, na, 0.0, 1.0);
        for (i = 0; i < na; i += 2) { p.A[i] = -0.5 - fabs(p.A[i]); p.A[i + 1] *= 3.0; }   /* Re A < 0, phases up to ~10 */
        p.Bm = bw2_vec(&r, nbc, 0.0, 1.0); p.Cm = bw2_vec(&r, nbc, 0.0, 1.0);
        p.Dk = bw2_vec(&r, D, 0.0, 1.0); p.bias = bw2_vec(&r, D, 0.0, 0.2); p.sin = bw2_vec(&r, nst, 0.0, 1.0);
        if (!p.softplus) for (i = 0; i < (size_t)D; ++i) p.bias[i] = fabs(p.bias[i]);   /* dt > 0: a decaying state */
        for (i = 0; i < nx; ++i) {
            p.u[i] = t_round_dt(p.u[i], xdt); p.dl[i] = t_round_dt(p.dl[i], xdt);
            p.z[i] = t_round_dt(p.z[i], xdt); p.dy[i] = t_round_dt(p.dy[i], xdt);
        }
        for (i = 0; i < nbc; ++i) { p.Bm[i] = t_round_dt(p.Bm[i], bdt); p.Cm[i] = t_round_dt(p.Cm[i], bdt); }
        su = t_xmalloc(nx * 4); sdl = t_xmalloc(nx * 4); sz = t_xmalloc(nx * 4); sdy = t_xmalloc(nx * 4);
        sB = t_xmalloc(nbc * 4); sC = t_xmalloc(nbc * 4);
        for (i = 0; i < nx; ++i) {
            t_store_at(su, xdt, (ptrdiff_t)i, p.u[i]); t_store_at(sdl, xdt, (ptrdiff_t)i, p.dl[i]);
            t_store_at(sz, xdt, (ptrdiff_t)i, p.z[i]); t_store_at(sdy, xdt, (ptrdiff_t)i, p.dy[i]);
        }
        for (i = 0; i < nbc; ++i) { t_store_at(sB, bdt, (ptrdiff_t)i, p.Bm[i]); t_store_at(sC, bdt, (ptrdiff_t)i, p.Cm[i]); }
        fA = bw2_f32(p.A, na); fD = bw2_f32(p.Dk, D); fbias = bw2_f32(p.bias, D); fsin = bw2_f32(p.sin, nst);
        gn[0] = nx; gn[1] = nx; gn[2] = nx; gn[3] = na; gn[4] = nbc; gn[5] = nbc; gn[6] = D; gn[7] = D;
        for (k = 0; k < 8; ++k) { g[k] = (float *)t_xmalloc(4 * gn[k]); h[k] = (float *)t_xmalloc(4 * gn[k]); }
        gr.du = g[0]; gr.ddelta = g[1]; gr.dz = g[2]; gr.dA = g[3]; gr.dB = g[4]; gr.dC = g[5]; gr.dD = g[6]; gr.ddelta_bias = g[7];
        hr.du = h[0]; hr.ddelta = h[1]; hr.dz = h[2]; hr.dA = h[3]; hr.dB = h[4]; hr.dC = h[5]; hr.dD = h[6]; hr.ddelta_bias = h[7];
        memset(&d, 0, sizeof d);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.n_groups = p.G; d.bc_const = p.bc_const;
        d.delta_softplus = p.softplus; d.a_complex = 1; d.n_threads = 1;
        tu = attn_ssm_tensor_dense(su, xdt, D, L); tdl = attn_ssm_tensor_dense(sdl, xdt, D, L);
        tz = attn_ssm_tensor_dense(p.has_z ? sz : NULL, xdt, D, L); tdy = attn_ssm_tensor_dense(sdy, xdt, D, L);
        tb = p.bc_const ? attn_ssm_tensor_dense(sB, bdt, D, 2 * N) : attn_ssm_tensor_dense(sB, bdt, p.G * N, 2 * L);
        tc = p.bc_const ? attn_ssm_tensor_dense(sC, bdt, D, 2 * N) : attn_ssm_tensor_dense(sC, bdt, p.G * N, 2 * L);
        s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &gr);
        T_CHECK(s == ATTN_OK, "%s: %s", what, attn_status_str(s));
        bw2_fd(&p, csb_loss, p.u, nx, g[0], what, "du", &r);
        bw2_fd(&p, csb_loss, p.dl, nx, g[1], what, "ddelta", &r);
        if (p.has_z) bw2_fd(&p, csb_loss, p.z, nx, g[2], what, "dz", &r);
        bw2_fd(&p, csb_loss, p.A, na, g[3], what, "dA", &r);
        bw2_fd(&p, csb_loss, p.Bm, nbc, g[4], what, "dB", &r);
        bw2_fd(&p, csb_loss, p.Cm, nbc, g[5], what, "dC", &r);
        bw2_fd(&p, csb_loss, p.Dk, D, g[6], what, "dD", &r);
        bw2_fd(&p, csb_loss, p.bias, D, g[7], what, "ddelta_bias", &r);
        d.n_threads = 2 + cfg % 2;               /* another thread count, the queried workspace */
        T_CHECK(attn_ssm_workspace_size(&d, ATTN_SSM_OP_SCAN_BACKWARD, &bytes) == ATTN_OK, "%s: workspace query", what);
        ws = t_xmalloc(bytes); d.workspace = ws; d.workspace_size = bytes;
        m0 = t_attn_mallocs;
        s = attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &hr);
        T_CHECK(s == ATTN_OK && t_attn_mallocs == m0, "%s: with the queried workspace: %s", what, attn_status_str(s));
        for (k = 0; k < 8; ++k)
            if (k != 2 || p.has_z) T_CHECK(memcmp(g[k], h[k], 4 * gn[k]) == 0, "%s: gradient %d differs across thread counts", what, k);
        if (cfg == 0) {                          /* a real-sized dB over the complex one's end: overlap */
            attn_ssm_grads og = hr;
            d.workspace = NULL; d.workspace_size = 0;
            t_sentinel(h[0], 4 * nx, 3);
            og.dC = h[4] + nbc / 2;
            t_expect_status(attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &og),
                            ATTN_ERR_SSM_BWD_OVERLAP, what, "dC in the second half of dB");
            d.cu_seqlens = &cfg; d.varlen_batch = 1;
            t_expect_status(attn_ssm_selective_scan_backward(&d, tu, tdl, fA, tb, tc, fD, tz, fbias, fsin, tdy, &hr),
                            ATTN_ERR_SSM_BWD_VARLEN, what, "cu_seqlens");
            d.cu_seqlens = NULL; d.varlen_batch = 0;
            T_CHECK(t_sentinel_ok(h[0], 4 * nx, 3), "%s: du touched by a failed call", what);
        }
        free(p.u); free(p.z); free(p.dy); free(p.dl); free(p.A); free(p.Bm); free(p.Cm); free(p.Dk); free(p.bias); free(p.sin);
        free(su); free(sdl); free(sz); free(sdy); free(sB); free(sC); free(ws); free(fA); free(fD); free(fbias); free(fsin);
        for (k = 0; k < 8; ++k) { free(g[k]); free(h[k]); }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* torch autograd fixtures (tests/fixtures/ssm_bwd_torch.py)                                  */
/* ---------------------------------------------------------------------------------------- */

#define FX_TOL 1e-4

/* the fixture's array `name`, which must hold n values (NULL and a failed check otherwise) */
static double *fx_next(const char *name, size_t n) {
    double *v = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (T_FIXTURE("ssm_bwd_torch.txt", name, v, n)) return v;
    T_CHECK(0, "ssm_bwd_torch.txt: array %s missing or not %lu values", name, (unsigned long)n);
    free(v);
    return NULL;
}
static float *fx_f32(const double *v, size_t n) { return bw2_f32(v, n); }

static double fx_worst;
static void fx_cmp(const char *what, const float *got, const double *want, size_t n) {
    const double e = bw2_rel(got, want, n);
    if (e > fx_worst) fx_worst = e;
    T_CHECK(e <= FX_TOL, "torch fixture %s: relative error %.3g", what, e);
}

static void test_bwd_fixtures(void) {
    double *dims, *a[18];
    int i, cx, ok = 1;
    {   /* HF MambaMixer conv1d + SiLU */
        int B, D, K, L;
        size_t nx, nw;
        float *x, *w, *bias, *dy, *o, *dx, *dw, *db;
        attn_ssm_desc d;
        if (!(dims = fx_next("conv_dims", 4))) return;
        B = (int)dims[0]; D = (int)dims[1]; K = (int)dims[2]; L = (int)dims[3]; free(dims);
        nx = (size_t)B * D * L; nw = (size_t)D * K;
        a[0] = fx_next("conv_x", nx); a[1] = fx_next("conv_w", nw); a[2] = fx_next("conv_b", D);
        a[3] = fx_next("conv_dy", nx); a[4] = fx_next("conv_out", nx); a[5] = fx_next("conv_dx", nx);
        a[6] = fx_next("conv_dw", nw); a[7] = fx_next("conv_db", D);
        for (i = 0; i < 8; ++i) ok &= a[i] != NULL;
        if (ok) {
            x = fx_f32(a[0], nx); w = fx_f32(a[1], nw); bias = fx_f32(a[2], D); dy = fx_f32(a[3], nx);
            o = (float *)t_xmalloc(4 * nx); dx = (float *)t_xmalloc(4 * nx); dw = (float *)t_xmalloc(4 * nw); db = (float *)t_xmalloc(4 * (size_t)D);
            memset(&d, 0, sizeof d);
            d.batch = B; d.dim = D; d.len = L; d.conv_kernel = K; d.conv_act = ATTN_SSM_CONV_SILU;
            T_CHECK(attn_ssm_conv1d(&d, attn_ssm_tensor_dense(x, ATTN_F32, D, L), w, bias, NULL,
                                    attn_ssm_tensor_dense(o, ATTN_F32, D, L), NULL) == ATTN_OK &&
                    attn_ssm_conv1d_backward(&d, attn_ssm_tensor_dense(x, ATTN_F32, D, L), w, bias, NULL,
                                             attn_ssm_tensor_dense(dy, ATTN_F32, D, L), dx, dw, db) == ATTN_OK, "fixture conv calls");
            fx_cmp("conv out", o, a[4], nx); fx_cmp("conv dx", dx, a[5], nx);
            fx_cmp("conv dweight", dw, a[6], nw); fx_cmp("conv dbias", db, a[7], D);
            free(x); free(w); free(bias); free(dy); free(o); free(dx); free(dw); free(db);
        }
        for (i = 0; i < 8; ++i) free(a[i]);
    }
    if (ok) {   /* S4DKernel + FFT convolution */
        int B, H, N, L, h, n;
        size_t nx, hn;
        float *u, *ldt, *cre, *cim, *lar, *aim, *Dk, *dy, *y, *g[7];
        attn_s4d_params prm;
        attn_s4d_grads gr;
        attn_ssm_desc d;
        if (!(dims = fx_next("s4d_dims", 4))) return;
        B = (int)dims[0]; H = (int)dims[1]; N = (int)dims[2]; L = (int)dims[3]; free(dims);
        nx = (size_t)B * H * L; hn = (size_t)H * N;
        a[0] = fx_next("s4d_u", nx); a[1] = fx_next("s4d_log_dt", H); a[2] = fx_next("s4d_C", 2 * hn);
        a[3] = fx_next("s4d_log_A_real", hn); a[4] = fx_next("s4d_A_imag", hn); a[5] = fx_next("s4d_D", H);
        a[6] = fx_next("s4d_dy", nx); a[7] = fx_next("s4d_y", nx); a[8] = fx_next("s4d_du", nx);
        a[9] = fx_next("s4d_dlog_dt", H); a[10] = fx_next("s4d_dC", 2 * hn); a[11] = fx_next("s4d_dlog_A_real", hn);
        a[12] = fx_next("s4d_dA_imag", hn); a[13] = fx_next("s4d_dD", H);
        for (i = 0; i < 14; ++i) ok &= a[i] != NULL;
        if (ok) {
            double *wre = (double *)t_xmalloc(8 * hn), *wim = (double *)t_xmalloc(8 * hn);
            u = fx_f32(a[0], nx); ldt = fx_f32(a[1], H); lar = fx_f32(a[3], hn); aim = fx_f32(a[4], hn); Dk = fx_f32(a[5], H);
            dy = fx_f32(a[6], nx); y = (float *)t_xmalloc(4 * nx);
            cre = (float *)t_xmalloc(4 * hn); cim = (float *)t_xmalloc(4 * hn);
            for (h = 0; h < H; ++h) for (n = 0; n < N; ++n) {     /* view_as_real's (re, im) pairs */
                cre[h * N + n] = (float)a[2][2 * (h * N + n)]; cim[h * N + n] = (float)a[2][2 * (h * N + n) + 1];
                wre[h * N + n] = a[10][2 * (h * N + n)]; wim[h * N + n] = a[10][2 * (h * N + n) + 1];
            }
            g[0] = (float *)t_xmalloc(4 * nx);
            for (i = 1; i < 7; ++i) g[i] = (float *)t_xmalloc(4 * hn);
            memset(&prm, 0, sizeof prm);
            prm.log_dt = ldt; prm.log_a_real = lar; prm.a_imag = aim; prm.c_re = cre; prm.c_im = cim; prm.d_skip = Dk;
            memset(&gr, 0, sizeof gr);
            gr.du = g[0]; gr.dlog_dt = g[1]; gr.dc_re = g[2]; gr.dc_im = g[3]; gr.dlog_a_real = g[4]; gr.da_imag = g[5]; gr.dd_skip = g[6];
            memset(&d, 0, sizeof d);
            d.batch = B; d.dim = H; d.len = L; d.d_state = N; d.s4d_disc = ATTN_SSM_ZOH;
            T_CHECK(attn_ssm_s4d(&d, &prm, attn_ssm_tensor_dense(u, ATTN_F32, H, L), NULL, attn_ssm_tensor_dense(y, ATTN_F32, H, L), NULL) == ATTN_OK &&
                    attn_ssm_s4d_backward(&d, &prm, attn_ssm_tensor_dense(u, ATTN_F32, H, L), NULL,
                                          attn_ssm_tensor_dense(dy, ATTN_F32, H, L), &gr) == ATTN_OK, "fixture s4d calls");
            fx_cmp("s4d y", y, a[7], nx); fx_cmp("s4d du", g[0], a[8], nx); fx_cmp("s4d dlog_dt", g[1], a[9], H);
            fx_cmp("s4d dC re", g[2], wre, hn); fx_cmp("s4d dC im", g[3], wim, hn);
            fx_cmp("s4d dlog_A_real", g[4], a[11], hn); fx_cmp("s4d dA_imag", g[5], a[12], hn); fx_cmp("s4d dD", g[6], a[13], H);
            free(u); free(ldt); free(lar); free(aim); free(Dk); free(dy); free(y); free(cre); free(cim); free(wre); free(wim);
            for (i = 0; i < 7; ++i) free(g[i]);
        }
        for (i = 0; i < 14; ++i) free(a[i]);
    }
    for (cx = 1; cx >= 0 && ok; --cx) {   /* selective_scan_ref: complex A ("mamba"), then real A ("mreal": HF's slow path) */
        static const char *in_suffix[9] = { "u", "delta", "A", "B", "C", "D", "z", "delta_bias", "dy" };
        static const char *g_suffix[8] = { "du", "ddelta", "dA", "dB", "dC", "dD", "dz", "ddelta_bias" };
        const char *pre = cx ? "mamba" : "mreal";
        char nm[40];
        int B, D, N, L, G;
        size_t nx, na, nbc, ns[9];
        float *f[9], *y, *g[8];
        attn_ssm_grads gr;
        attn_ssm_desc d;
        attn_ssm_tensor tu, tdl, tb, tc, tz;
        snprintf(nm, sizeof nm, "%s_dims", pre);
        if (!(dims = fx_next(nm, 5))) return;
        B = (int)dims[0]; D = (int)dims[1]; N = (int)dims[2]; L = (int)dims[3]; G = (int)dims[4]; free(dims);
        nx = (size_t)B * D * L; na = (size_t)D * N * (cx ? 2 : 1); nbc = (size_t)B * G * N * (cx ? 2 : 1) * L;
        ns[0] = nx; ns[1] = nx; ns[2] = na; ns[3] = nbc; ns[4] = nbc; ns[5] = D; ns[6] = nx; ns[7] = D; ns[8] = nx;
        memset(a, 0, sizeof a);
        for (i = 0; i < 9; ++i) { snprintf(nm, sizeof nm, "%s_%s", pre, in_suffix[i]); ok &= (a[i] = fx_next(nm, ns[i])) != NULL; }
        snprintf(nm, sizeof nm, "%s_y", pre);
        ok &= (a[9] = fx_next(nm, nx)) != NULL;
        for (i = 0; i < 8; ++i) { snprintf(nm, sizeof nm, "%s_%s", pre, g_suffix[i]); ok &= (a[10 + i] = fx_next(nm, i == 6 ? nx : ns[i])) != NULL; }
        if (ok) {
            const int bl = cx ? 2 * L : L;
            for (i = 0; i < 9; ++i) f[i] = fx_f32(a[i], ns[i]);
            y = (float *)t_xmalloc(4 * nx);
            for (i = 0; i < 8; ++i) g[i] = (float *)t_xmalloc(4 * (i == 6 ? nx : ns[i]));
            gr.du = g[0]; gr.ddelta = g[1]; gr.dA = g[2]; gr.dB = g[3]; gr.dC = g[4]; gr.dD = g[5]; gr.dz = g[6]; gr.ddelta_bias = g[7];
            memset(&d, 0, sizeof d);
            d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.n_groups = G; d.delta_softplus = 1; d.a_complex = cx;
            tu = attn_ssm_tensor_dense(f[0], ATTN_F32, D, L); tdl = attn_ssm_tensor_dense(f[1], ATTN_F32, D, L);
            tb = attn_ssm_tensor_dense(f[3], ATTN_F32, G * N, bl); tc = attn_ssm_tensor_dense(f[4], ATTN_F32, G * N, bl);
            tz = attn_ssm_tensor_dense(f[6], ATTN_F32, D, L);
            T_CHECK(attn_ssm_selective_scan(&d, tu, tdl, f[2], tb, tc, f[5], tz, f[7], NULL, attn_ssm_tensor_dense(y, ATTN_F32, D, L), NULL) == ATTN_OK &&
                    attn_ssm_selective_scan_backward(&d, tu, tdl, f[2], tb, tc, f[5], tz, f[7], NULL,
                                                     attn_ssm_tensor_dense(f[8], ATTN_F32, D, L), &gr) == ATTN_OK, "fixture %s calls", pre);
            snprintf(nm, sizeof nm, "%s y", pre);
            fx_cmp(nm, y, a[9], nx);
            for (i = 0; i < 8; ++i) { snprintf(nm, sizeof nm, "%s %s", pre, g_suffix[i]); fx_cmp(nm, g[i], a[10 + i], i == 6 ? nx : ns[i]); }
            for (i = 0; i < 9; ++i) free(f[i]);
            for (i = 0; i < 8; ++i) free(g[i]);
            free(y);
        }
        for (i = 0; i < 18; ++i) free(a[i]);
    }
    if (ok) printf("      ssm: torch autograd fixtures (conv1d + SiLU, S4D, complex- and real-A scan; outputs and gradients): largest relative error %.3g\n", fx_worst);
}

void test_ssm_bwd(void) {
    test_conv_backward();
    test_s4d_backward();
    test_complex_backward();
    test_bwd_fixtures();
}
