/* tests/test_ports.c - the scan references ported through attn.h as docs/porting.md says, on
   fixtures written by running them (tests/fixtures/mamba_hf.py, rwkv4_hf.py, rwkv6_fla.py):
     Hugging Face MambaMixer: a left-padded prefill (HF's mask zeroes the padded rows before
       in_proj and after the conv; so does the caller here), then one decoding token started
       from HF's cache, whose K-column conv state maps to attn.h's K-1 columns (drop column 0).
       Outputs and both caches within 2e-5 max(1, |ref|).
     Hugging Face RWKV-4 (RwkvSelfAttention's WKV): time_decay as HF stores it, HF's state
       slots 2..4 as attn.h's aa, bb, pp; then the rwkv package's convention (time_decay loaded
       as -exp(param)) converted back with log(-w). Within 2e-5 max(1, |ref|).
     fla RWKV-6 (rwkv6_fla.py, naive_recurrent_rwkv6): fla's log decay exponentiated, r times fla's
       default scale K^-1/2, initial and final state; then the backward against fla's autograd
       (q.grad = dr * scale, log-w grad = dw * decay). Within 2e-5 max(1, |ref|).
   The caller's GEMMs (projections) run in double here. Called by test_ssm() and test_rwkv(). */
#include "test.h"
#include "fixture.h"

static double tp_err(const float *got, const double *ref, size_t n) {
    double worst = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) {
        const double e = fabs(got[i] - ref[i]) / (fabs(ref[i]) > 1.0 ? fabs(ref[i]) : 1.0);
        if (!(e <= worst)) worst = e != e ? INFINITY : e;
    }
    return worst;
}

static double *tp_read(const char *file, const char *name, size_t n, int *ok) {
    double *p = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (!T_FIXTURE(file, name, p, n)) { *ok = 0; memset(p, 0, sizeof(double) * n); }
    return p;
}

/* ---- Hugging Face Mamba ---------------------------------------------------------------- */
/* One mixer pass over T tokens (T = L prefill, or 1 step from the given states). h [B][T][H];
   out [B][T][H]; conv_state [B][D][K-1], ssm_state [B][D][N] in/out. */
typedef struct { int B, H, D, N, K, R; const double *in_proj, *conv_w, *conv_b, *x_proj, *dt_w, *dt_b, *A_log, *Dsk, *out_proj; } tp_mamba;

static int tp_mamba_run(const tp_mamba *m, const double *h, const double *mask, int T, int step, float *conv_state,
                        float *ssm_state, double *out) {
    const int B = m->B, H = m->H, D = m->D, N = m->N, K = m->K, R = m->R;
    float *xz = (float *)t_xmalloc(sizeof(float) * (size_t)B * 2 * D * T), *xc = (float *)t_xmalloc(sizeof(float) * (size_t)B * D * T);
    float *dl = (float *)t_xmalloc(sizeof(float) * (size_t)B * D * T), *Bt = (float *)t_xmalloc(sizeof(float) * (size_t)B * N * T);
    float *Ct = (float *)t_xmalloc(sizeof(float) * (size_t)B * N * T), *y = (float *)t_xmalloc(sizeof(float) * (size_t)B * D * T);
    float *w = (float *)t_xmalloc(sizeof(float) * (size_t)D * K), *cb = (float *)t_xmalloc(sizeof(float) * (size_t)D);
    float *A = (float *)t_xmalloc(sizeof(float) * (size_t)D * N), *Ds = (float *)t_xmalloc(sizeof(float) * (size_t)D);
    float *dtb = (float *)t_xmalloc(sizeof(float) * (size_t)D);
    double *dlow = (double *)t_xmalloc(sizeof(double) * (size_t)R);
    attn_ssm_desc sd;
    attn_ssm_tensor x, z, xct, dt, Bv, Cv, yv;
    int b, t, c, k, n, r, ok = 1;
    for (c = 0; c < D * K; ++c) w[c] = (float)m->conv_w[c];          /* [D][1][K] == [D][K] */
    for (c = 0; c < D; ++c) { cb[c] = (float)m->conv_b[c]; Ds[c] = (float)m->Dsk[c]; dtb[c] = (float)m->dt_b[c]; }
    for (c = 0; c < D * N; ++c) A[c] = (float)-exp(m->A_log[c]);        /* A = -exp(A_log) */
    for (b = 0; b < B; ++b)                                             /* in_proj of the masked rows */
        for (t = 0; t < T; ++t)
            for (c = 0; c < 2 * D; ++c) {
                double a = 0.0;
                for (k = 0; k < H; ++k) a += m->in_proj[(size_t)c * H + k] * h[((size_t)b * T + t) * H + k] * mask[b * T + t];
                xz[((size_t)b * 2 * D + c) * T + t] = (float)a;
            }
    memset(&sd, 0, sizeof sd);
    sd.batch = B; sd.dim = D; sd.len = T; sd.d_state = N; sd.conv_kernel = K; sd.delta_softplus = 1;
    x.data = xz; x.dtype = ATTN_F32; x.stride_batch = 2 * (ptrdiff_t)D * T; x.stride_chan = T;   /* first half */
    z = x; z.data = xz + (size_t)D * T;                                                        /* the gate */
    xct = attn_ssm_tensor_dense(xc, ATTN_F32, D, T);
    ok &= (step ? attn_ssm_conv1d_step(&sd, x, w, cb, conv_state, xct)
                : attn_ssm_conv1d(&sd, x, w, cb, NULL, xct, conv_state)) == ATTN_OK;
    for (b = 0; b < B; ++b)
        for (t = 0; t < T; ++t) {
            for (c = 0; c < D; ++c) xc[((size_t)b * D + c) * T + t] *= (float)mask[b * T + t];   /* HF's second mask */
            for (r = 0; r < R + 2 * N; ++r) {                          /* x_proj -> dt_low, B, C */
                double a = 0.0;
                for (c = 0; c < D; ++c) a += m->x_proj[(size_t)r * D + c] * xc[((size_t)b * D + c) * T + t];
                if (r < R) dlow[r] = (float)a;
                else if (r < R + N) Bt[((size_t)b * N + r - R) * T + t] = (float)a;
                else Ct[((size_t)b * N + r - R - N) * T + t] = (float)a;
            }
            for (c = 0; c < D; ++c) {                                  /* dt_proj.weight @ dt_low */
                double a = 0.0;
                for (r = 0; r < R; ++r) a += m->dt_w[(size_t)c * R + r] * dlow[r];
                dl[((size_t)b * D + c) * T + t] = (float)a;
            }
        }
    dt = attn_ssm_tensor_dense(dl, ATTN_F32, D, T);
    Bv = attn_ssm_tensor_dense(Bt, ATTN_F32, N, T); Cv = attn_ssm_tensor_dense(Ct, ATTN_F32, N, T);
    yv = attn_ssm_tensor_dense(y, ATTN_F32, D, T);
    ok &= (step ? attn_ssm_selective_step(&sd, xct, dt, A, Bv, Cv, Ds, z, dtb, ssm_state, yv)
                : attn_ssm_selective_scan(&sd, xct, dt, A, Bv, Cv, Ds, z, dtb, NULL, yv, ssm_state)) == ATTN_OK;
    for (b = 0; b < B; ++b)                                             /* out_proj */
        for (t = 0; t < T; ++t)
            for (k = 0; k < H; ++k) {
                double a = 0.0;
                for (c = 0; c < D; ++c) a += m->out_proj[(size_t)k * D + c] * y[((size_t)b * D + c) * T + t];
                out[((size_t)b * T + t) * H + k] = a;
            }
    (void)n;
    free(xz); free(xc); free(dl); free(Bt); free(Ct); free(y); free(w); free(cb); free(A); free(Ds); free(dtb); free(dlow);
    return ok;
}

void test_port_mamba_hf(void) {
    const char *F = "mamba_hf.txt";
    double dims[7], *am, *h0, *y0, *cs0, *ss0, *h1, *y1, *cs1, *ss1, *out0, *out1, *ones;
    float *conv, *ssm, *got;
    tp_mamba m;
    int B, L, ok = 1, b, c, k;
    size_t i;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 7), "HF Mamba fixture: %s unreadable", F)) return;
    B = m.B = (int)dims[0]; L = (int)dims[1]; m.H = (int)dims[2]; m.D = (int)dims[3]; m.N = (int)dims[4];
    m.K = (int)dims[5]; m.R = (int)dims[6];
    am = tp_read(F, "attention_mask", (size_t)B * L, &ok);
    m.in_proj = tp_read(F, "in_proj", (size_t)2 * m.D * m.H, &ok);
    m.conv_w = tp_read(F, "conv_w", (size_t)m.D * m.K, &ok); m.conv_b = tp_read(F, "conv_b", (size_t)m.D, &ok);
    m.x_proj = tp_read(F, "x_proj", (size_t)(m.R + 2 * m.N) * m.D, &ok);
    m.dt_w = tp_read(F, "dt_w", (size_t)m.D * m.R, &ok); m.dt_b = tp_read(F, "dt_b", (size_t)m.D, &ok);
    m.A_log = tp_read(F, "A_log", (size_t)m.D * m.N, &ok); m.Dsk = tp_read(F, "D", (size_t)m.D, &ok);
    m.out_proj = tp_read(F, "out_proj", (size_t)m.H * m.D, &ok);
    h0 = tp_read(F, "h0", (size_t)B * L * m.H, &ok); y0 = tp_read(F, "y0", (size_t)B * L * m.H, &ok);
    cs0 = tp_read(F, "conv_state0", (size_t)B * m.D * m.K, &ok); ss0 = tp_read(F, "ssm_state0", (size_t)B * m.D * m.N, &ok);
    h1 = tp_read(F, "h1", (size_t)B * m.H, &ok); y1 = tp_read(F, "y1", (size_t)B * m.H, &ok);
    cs1 = tp_read(F, "conv_state1", (size_t)B * m.D * m.K, &ok); ss1 = tp_read(F, "ssm_state1", (size_t)B * m.D * m.N, &ok);
    out0 = (double *)t_xmalloc(sizeof(double) * (size_t)B * L * m.H); out1 = (double *)t_xmalloc(sizeof(double) * (size_t)B * m.H);
    ones = (double *)t_xmalloc(sizeof(double) * (size_t)B);
    for (b = 0; b < B; ++b) ones[b] = 1.0;
    conv = (float *)t_xmalloc(sizeof(float) * (size_t)B * m.D * (m.K - 1)); ssm = (float *)t_xmalloc(sizeof(float) * (size_t)B * m.D * m.N);
    got = (float *)t_xmalloc(sizeof(float) * (size_t)B * L * m.H);
    if (T_CHECK(ok, "HF Mamba fixture: arrays")) {
        double e_out, e_conv = 0.0, e_ssm, e_out1, e_conv1 = 0.0, e_ssm1;
        ok = tp_mamba_run(&m, h0, am, L, 0, conv, ssm, out0);
        for (i = 0; i < (size_t)B * L * m.H; ++i) got[i] = (float)out0[i];
        e_out = tp_err(got, y0, (size_t)B * L * m.H);
        for (b = 0; b < B; ++b)                     /* attn.h's K-1 columns == HF's columns 1..K-1 */
            for (c = 0; c < m.D; ++c)
                for (k = 0; k < m.K - 1; ++k)
                    e_conv = fmax(e_conv, fabs(conv[((size_t)b * m.D + c) * (m.K - 1) + k] - cs0[((size_t)b * m.D + c) * m.K + k + 1]));
        e_ssm = tp_err(ssm, ss0, (size_t)B * m.D * m.N);
        /* the step starts from HF's own cache, mapped as docs/porting.md says */
        for (b = 0; b < B; ++b) {
            for (c = 0; c < m.D; ++c)
                for (k = 0; k < m.K - 1; ++k)
                    conv[((size_t)b * m.D + c) * (m.K - 1) + k] = (float)cs0[((size_t)b * m.D + c) * m.K + k + 1];
        }
        for (i = 0; i < (size_t)B * m.D * m.N; ++i) ssm[i] = (float)ss0[i];
        ok &= tp_mamba_run(&m, h1, ones, 1, 1, conv, ssm, out1);
        for (i = 0; i < (size_t)B * m.H; ++i) got[i] = (float)out1[i];
        e_out1 = tp_err(got, y1, (size_t)B * m.H);
        /* after the step: the newest column is HF's last one; the older ones are the prefill's
           state shifted by one (transformers 5.24's torch path writes the new input into all K
           columns of its cache after a one-token step, so only its last column is compared) */
        for (b = 0; b < B; ++b)
            for (c = 0; c < m.D; ++c)
                for (k = 0; k < m.K - 1; ++k) {
                    const double want = k == m.K - 2 ? cs1[((size_t)b * m.D + c) * m.K + m.K - 1] : cs0[((size_t)b * m.D + c) * m.K + k + 2];
                    e_conv1 = fmax(e_conv1, fabs(conv[((size_t)b * m.D + c) * (m.K - 1) + k] - want));
                }
        e_ssm1 = tp_err(ssm, ss1, (size_t)B * m.D * m.N);
        T_CHECK(ok && e_out <= 2e-5 && e_conv <= 2e-5 && e_ssm <= 2e-5 && e_out1 <= 2e-5 && e_conv1 <= 2e-5 && e_ssm1 <= 2e-5,
                "HF Mamba fixture: prefill out %.3g conv %.3g ssm %.3g, step out %.3g conv %.3g ssm %.3g (bound 2e-5)",
                e_out, e_conv, e_ssm, e_out1, e_conv1, e_ssm1);
        printf("      ssm: HF MambaMixer fixture (left-padded prefill + a step from HF's cache): largest relative error %.3g\n",
               fmax(fmax(fmax(e_out, e_conv), fmax(e_ssm, e_out1)), fmax(e_conv1, e_ssm1)));
    }
    free(am); free((void *)m.in_proj); free((void *)m.conv_w); free((void *)m.conv_b); free((void *)m.x_proj);
    free((void *)m.dt_w); free((void *)m.dt_b); free((void *)m.A_log); free((void *)m.Dsk); free((void *)m.out_proj);
    free(h0); free(y0); free(cs0); free(ss0); free(h1); free(y1); free(cs1); free(ss1); free(out0); free(out1); free(ones);
    free(conv); free(ssm); free(got);
}

/* ---- Hugging Face RWKV-4 WKV, and the rwkv package's stored decay ------------------------ */
void test_port_rwkv4_hf(void) {
    const char *F = "rwkv4_hf.txt";
    double dims[4], *td, *tf, *k, *v, *out, *s1, *s2;
    float *ftd, *ftf, *fk, *fv, *fo, *st, *wpkg;
    int B, T1, T2, T, C, ok = 1, pass, c;
    size_t n, i;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 4), "HF RWKV-4 fixture: %s unreadable", F)) return;
    B = (int)dims[0]; T1 = (int)dims[1]; T2 = (int)dims[2]; C = (int)dims[3]; T = T1 + T2;
    n = (size_t)B * T * C;
    td = tp_read(F, "time_decay", (size_t)C, &ok); tf = tp_read(F, "time_first", (size_t)C, &ok);
    k = tp_read(F, "k", n, &ok); v = tp_read(F, "v", n, &ok); out = tp_read(F, "out", n, &ok);
    s1 = tp_read(F, "state1", (size_t)B * 3 * C, &ok); s2 = tp_read(F, "state2", (size_t)B * 3 * C, &ok);
    ftd = (float *)t_xmalloc(sizeof(float) * (size_t)C); ftf = (float *)t_xmalloc(sizeof(float) * (size_t)C);
    wpkg = (float *)t_xmalloc(sizeof(float) * (size_t)C);
    fk = (float *)t_xmalloc(sizeof(float) * n); fv = (float *)t_xmalloc(sizeof(float) * n); fo = (float *)t_xmalloc(sizeof(float) * n);
    st = (float *)t_xmalloc(sizeof(float) * (size_t)B * 3 * C);
    if (T_CHECK(ok, "HF RWKV-4 fixture: arrays")) {
        for (i = 0; i < n; ++i) { fk[i] = (float)k[i]; fv[i] = (float)v[i]; }
        for (c = 0; c < C; ++c) { ftf[c] = (float)tf[c]; wpkg[c] = (float)-exp(td[c]); }   /* rwkv package: -exp(param) */
        for (pass = 0; pass < 2; ++pass) {          /* 0: HF's raw time_decay; 1: log(-w) of the rwkv package's w */
            attn_rwkv_desc rd;
            double e_out, e_s1, e_s2;
            memset(&rd, 0, sizeof rd);
            for (c = 0; c < C; ++c) ftd[c] = pass ? logf(-wpkg[c]) : (float)td[c];
            ok = attn_rwkv4_forward(&rd, ftd, ftf, t_seq_view(attn_tensor_dense(fk, ATTN_F32, B, T, 1, C), 0, T1),
                                    t_seq_view(attn_tensor_dense(fv, ATTN_F32, B, T, 1, C), 0, T1),
                                    t_seq_view(attn_tensor_dense(fo, ATTN_F32, B, T, 1, C), 0, T1), NULL, st) == ATTN_OK;
            e_s1 = tp_err(st, s1, (size_t)B * 3 * C);
            ok &= attn_rwkv4_forward(&rd, ftd, ftf, t_seq_view(attn_tensor_dense(fk, ATTN_F32, B, T, 1, C), T1, T2),
                                     t_seq_view(attn_tensor_dense(fv, ATTN_F32, B, T, 1, C), T1, T2),
                                     t_seq_view(attn_tensor_dense(fo, ATTN_F32, B, T, 1, C), T1, T2), st, st) == ATTN_OK;
            e_s2 = tp_err(st, s2, (size_t)B * 3 * C);
            e_out = tp_err(fo, out, n);
            T_CHECK(ok && e_out <= 2e-5 && e_s1 <= 2e-5 && e_s2 <= 2e-5,
                    "HF RWKV-4 fixture (%s): out %.3g, state after piece 1 %.3g, after piece 2 %.3g (bound 2e-5)",
                    pass ? "rwkv package decay" : "HF time_decay", e_out, e_s1, e_s2);
            if (pass) printf("      rwkv: HF RWKV-4 WKV fixture (two pieces, state carried): largest relative error %.3g\n",
                             fmax(e_out, fmax(e_s1, e_s2)));
        }
    }
    free(td); free(tf); free(k); free(v); free(out); free(s1); free(s2);
    free(ftd); free(ftf); free(wpkg); free(fk); free(fv); free(fo); free(st);
}

/* ---- fla RWKV-6 (naive_recurrent_rwkv6, default scale, log decay) and its autograd --------- */
void test_port_rwkv6_fla(void) {
    const char *F = "rwkv6_fla.txt";
    double dims[5], *r, *k, *v, *w, *u, *h0, *o, *ht, *dO, *dht, *gr, *gk, *gv, *gw, *gu, *gh0;
    float *fr, *fk, *fv, *fw, *fu, *fh0, *fo, *fht, *fdo, *fdht, *dr, *dk, *dv, *dw, *du, *dh0;
    int B, T, H, K, ok = 1;
    size_t n, ns, i;
    if (!T_CHECK(T_FIXTURE(F, "dims", dims, 5), "fla RWKV-6 fixture: %s unreadable", F)) return;
    B = (int)dims[0]; T = (int)dims[1]; H = (int)dims[2]; K = (int)dims[3];
    if (!T_CHECK((int)dims[4] == K, "fla RWKV-6 fixture: V %g != K %d", dims[4], K)) return;
    n = (size_t)B * T * H * K; ns = (size_t)B * H * K * K;
    r = tp_read(F, "r", n, &ok); k = tp_read(F, "k", n, &ok); v = tp_read(F, "v", n, &ok); w = tp_read(F, "w", n, &ok);
    u = tp_read(F, "u", (size_t)H * K, &ok); h0 = tp_read(F, "h0", ns, &ok); o = tp_read(F, "o", n, &ok);
    ht = tp_read(F, "ht", ns, &ok); dO = tp_read(F, "do", n, &ok); dht = tp_read(F, "dht", ns, &ok);
    gr = tp_read(F, "dr", n, &ok); gk = tp_read(F, "dk", n, &ok); gv = tp_read(F, "dv", n, &ok);
    gw = tp_read(F, "dw", n, &ok); gu = tp_read(F, "du", (size_t)H * K, &ok); gh0 = tp_read(F, "dh0", ns, &ok);
    fr = (float *)t_xmalloc(sizeof(float) * n); fk = (float *)t_xmalloc(sizeof(float) * n);
    fv = (float *)t_xmalloc(sizeof(float) * n); fw = (float *)t_xmalloc(sizeof(float) * n);
    fo = (float *)t_xmalloc(sizeof(float) * n); fdo = (float *)t_xmalloc(sizeof(float) * n);
    dr = (float *)t_xmalloc(sizeof(float) * n); dk = (float *)t_xmalloc(sizeof(float) * n);
    dv = (float *)t_xmalloc(sizeof(float) * n); dw = (float *)t_xmalloc(sizeof(float) * n);
    fu = (float *)t_xmalloc(sizeof(float) * (size_t)H * K); du = (float *)t_xmalloc(sizeof(float) * (size_t)H * K);
    fh0 = (float *)t_xmalloc(sizeof(float) * ns); fht = (float *)t_xmalloc(sizeof(float) * ns);
    fdht = (float *)t_xmalloc(sizeof(float) * ns); dh0 = (float *)t_xmalloc(sizeof(float) * ns);
    if (T_CHECK(ok, "fla RWKV-6 fixture: arrays")) {
        const float scale = 1.0f / sqrtf((float)K);     /* fla's scale=None */
        attn_rwkv_desc rd;
        double e_o, e_ht, e_dr, e_dk, e_dv, e_dw, e_du, e_dh0;
        attn_tensor R, Kt, Vt, W;
        memset(&rd, 0, sizeof rd);
        rd.head_size = K;
        /* docs/porting.md's worked call: decay = exp(fla's log decay), r times fla's default scale */
        for (i = 0; i < n; ++i) {
            fr[i] = (float)r[i] * scale; fk[i] = (float)k[i]; fv[i] = (float)v[i]; fw[i] = expf((float)w[i]);
            fdo[i] = (float)dO[i];
        }
        for (i = 0; i < (size_t)H * K; ++i) fu[i] = (float)u[i];                 /* [H, K] == [C] */
        for (i = 0; i < ns; ++i) { fh0[i] = (float)h0[i]; fdht[i] = (float)dht[i]; }   /* [B, H, K, V] == [B][H][N][N] */
        R = attn_tensor_dense(fr, ATTN_F32, B, T, H, K); Kt = attn_tensor_dense(fk, ATTN_F32, B, T, H, K);
        Vt = attn_tensor_dense(fv, ATTN_F32, B, T, H, K); W = attn_tensor_dense(fw, ATTN_F32, B, T, H, K);
        ok = attn_rwkv6_forward(&rd, R, Kt, Vt, W, fu, attn_tensor_dense(fo, ATTN_F32, B, T, H, K), fh0, fht) == ATTN_OK;
        e_o = tp_err(fo, o, n); e_ht = tp_err(fht, ht, ns);
        /* the gradients: fla's q.grad is dr times the scale, its (log) w.grad is dw times the decay */
        ok &= attn_rwkv6_backward(&rd, R, Kt, Vt, W, fu, attn_tensor_dense(fdo, ATTN_F32, B, T, H, K), fh0, fdht,
                                  attn_tensor_dense(dr, ATTN_F32, B, T, H, K), attn_tensor_dense(dk, ATTN_F32, B, T, H, K),
                                  attn_tensor_dense(dv, ATTN_F32, B, T, H, K), attn_tensor_dense(dw, ATTN_F32, B, T, H, K),
                                  du, dh0) == ATTN_OK;
        for (i = 0; i < n; ++i) { dr[i] *= scale; dw[i] *= fw[i]; }
        e_dr = tp_err(dr, gr, n); e_dk = tp_err(dk, gk, n); e_dv = tp_err(dv, gv, n); e_dw = tp_err(dw, gw, n);
        e_du = tp_err(du, gu, (size_t)H * K); e_dh0 = tp_err(dh0, gh0, ns);
        T_CHECK(ok && e_o <= 2e-5 && e_ht <= 2e-5, "fla RWKV-6 fixture: out %.3g, final state %.3g (bound 2e-5)", e_o, e_ht);
        T_CHECK(ok && e_dr <= 2e-5 && e_dk <= 2e-5 && e_dv <= 2e-5 && e_dw <= 2e-5 && e_du <= 2e-5 && e_dh0 <= 2e-5,
                "fla RWKV-6 fixture gradients: dq %.3g dk %.3g dv %.3g dw(log) %.3g du %.3g dh0 %.3g (bound 2e-5)",
                e_dr, e_dk, e_dv, e_dw, e_du, e_dh0);
        printf("      rwkv: fla RWKV-6 fixture (default scale, log decay, h0 -> ht): out %.3g state %.3g, gradients %.3g\n",
               e_o, e_ht, fmax(fmax(fmax(e_dr, e_dk), fmax(e_dv, e_dw)), fmax(e_du, e_dh0)));
    }
    free(r); free(k); free(v); free(w); free(u); free(h0); free(o); free(ht); free(dO); free(dht);
    free(gr); free(gk); free(gv); free(gw); free(gu); free(gh0);
    free(fr); free(fk); free(fv); free(fw); free(fu); free(fh0); free(fo); free(fht); free(fdo); free(fdht);
    free(dr); free(dk); free(dv); free(dw); free(du); free(dh0);
}
