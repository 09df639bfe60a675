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
T_UNUSED static double bw2_rel(const float *a, const double *b, size_t n) {
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

void test_ssm_bwd(void) {
    test_conv_backward();
}
