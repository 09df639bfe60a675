/* bench/bench_ssm.c - state-space scans: Mamba's selective scan (attn_ssm_selective_scan),
   its decoding step, the causal conv1d, beside exact causal attention (attn_forward,
   ATTN_SOFTMAX) at the same sequence lengths in the same run.

   Scan shapes: D = 1536, 2560, 5120 channels (Mamba 130M..2.8B inner widths: expand 2 x
   d_model 768..2560), N = 16, batch 1, per-token B and C (1 group), softplus on, silu(z) gate,
   f32 (one bf16 row). L = 1k .. 16k (64k at D = 1536 unless BENCH_QUICK): the full issue grid
   (L to 64k at every D) holds 5 GiB of tensors per call and would take minutes on its own.
   Bytes per call: u, delta, z read and y written (4 x D L x dtype size) plus B and C (2 N L x
   dtype size): the scan's compulsory traffic. % of bandwidth: each scan call alternates with a
   plain streaming read of the same bytes on the same threads (sum over a 256 MiB buffer walked
   on from call to call, so it always comes from memory); the median of the per-pair ratios is
   the headline (it holds on a shared machine whose bandwidth and cores come and go), the ratio
   to the startup's read bandwidth is printed beside it.
   Attention beside it: causal softmax, heads = D / 64 of dim 64 (so the same model width),
   q = k = v of [1, L, D/64, 64], at L = 1k .. 4k (8k outside BENCH_QUICK): its cost grows as
   L^2, the scan's as L. Fitted exponents (least squares on log t vs log L) and the crossover
   length where the scan becomes faster. Error vs exact attention: not applicable (the scan is
   a different sequence mixer, not an approximation of attention). Naive C loop: the
   sequential recurrence in plain C (expf, 1 thread) at D = 1536, L = 1k, checked against the
   library's output.
   S4D: attn_ssm_s4d at D 1536 with 32 complex modes (the paper's N = 64), L 4k and 16k.
   Step latency: attn_ssm_selective_step and attn_ssm_conv1d_step for one token at batch 1,
   threads on a persistent attn_pool.
   Env: BENCH_QUICK=1 (smaller grid, fewer repetitions), BENCH_OUTDIR (default bench).
   Writes BENCH_OUTDIR/results_ssm.csv and BENCH_OUTDIR/chart_ssm.svg. */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"
#include <math.h>

#define NS 16
static int g_quick, g_ncpu;
static char g_cpu[256];
static FILE *g_csv;
static double g_bw;

typedef struct { int D, L; double t; } pt;
static pt g_scan[32], g_att[16];
static int g_nscan, g_natt;

typedef struct {
    int D, L;
    attn_dtype dt;
    void *u, *dl, *z, *y, *Bm, *Cm;
    float *A, *Dk, *bias;
} prob;

static void prob_init(prob *p, int D, int L, attn_dtype dt) {
    const size_t n = (size_t)D * L, nb = (size_t)NS * L, es = dtype_size(dt);
    float *tmp = (float *)xalloc(sizeof(float) * (n > nb ? n : nb));
    int i;
    p->D = D; p->L = L; p->dt = dt;
    p->u = xalloc(n * es); p->dl = xalloc(n * es); p->z = xalloc(n * es); p->y = xalloc(n * es);
    p->Bm = xalloc(nb * es); p->Cm = xalloc(nb * es);
    fill_rand(tmp, n); convert_from_f32(p->u, dt, tmp, n);
    fill_rand(tmp, n); for (i = 0; i < (int)n; ++i) tmp[i] = tmp[i] - 3.0f; convert_from_f32(p->dl, dt, tmp, n);
    fill_rand(tmp, n); convert_from_f32(p->z, dt, tmp, n);
    memset(p->y, 0, n * es);
    fill_rand(tmp, nb); convert_from_f32(p->Bm, dt, tmp, nb);
    fill_rand(tmp, nb); convert_from_f32(p->Cm, dt, tmp, nb);
    p->A = (float *)xalloc(sizeof(float) * (size_t)D * NS);
    p->Dk = (float *)xalloc(sizeof(float) * (size_t)D);
    p->bias = (float *)xalloc(sizeof(float) * (size_t)D);
    for (i = 0; i < D * NS; ++i) p->A[i] = -(float)(i % NS + 1);           /* S4D-real / Mamba init */
    for (i = 0; i < D; ++i) { p->Dk[i] = 1.0f; p->bias[i] = 0.5f * frand(); }
    free(tmp);
}
static void prob_free(prob *p) {
    free(p->u); free(p->dl); free(p->z); free(p->y); free(p->Bm); free(p->Cm); free(p->A); free(p->Dk); free(p->bias);
}
/* a dense [batch][nc][nl] view */
static attn_ssm_tensor tv(void *data, attn_dtype dt, int nc, int nl) { return attn_ssm_tensor_dense(data, dt, nc, nl); }
static attn_status prob_run(const prob *p, int nt) {
    attn_ssm_desc d;
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = p->D; d.len = p->L; d.d_state = NS; d.delta_softplus = 1; d.n_threads = nt;
    return attn_ssm_selective_scan(&d, tv(p->u, p->dt, p->D, p->L), tv(p->dl, p->dt, p->D, p->L), p->A,
                                   tv(p->Bm, p->dt, NS, p->L), tv(p->Cm, p->dt, NS, p->L), p->Dk,
                                   tv(p->z, p->dt, p->D, p->L), p->bias, NULL, tv(p->y, p->dt, p->D, p->L), NULL);
}

static void csv_row(const char *what, attn_dtype dt, int D, int L, int nt, double ms, double toks, double gbs, double pct,
                    double rbw) {
    bench_csv_machine(g_csv);
    fprintf(g_csv, "%s,%s,%d,%d,%d,%d,%.4f,%.1f,%.3f,%.1f,%.3f\n", what, dtype_name(dt), D, NS, L, nt, ms, toks, gbs, pct, rbw);
}

/* A plain streaming read (sum_floats) of `bytes` on all threads through a 256 MiB buffer (far
   larger than the LLC) read cyclically: the same bytes as one scan call, timed right beside it,
   so the ratio holds on a machine whose bandwidth drifts or is shared. */
typedef struct { bw_job buf; size_t want, pos[BENCH_MAX_THREADS]; float sink[BENCH_MAX_THREADS]; } sr_job;
static sr_job g_sr;
static void sr_worker(void *arg, int tid, int nt) {   /* each thread walks on through its part */
    sr_job *j = (sr_job *)arg;
    const size_t chunk = (j->buf.n / (size_t)nt) & ~(size_t)127, lo = chunk * (size_t)tid, want = j->want / (size_t)nt;
    size_t done = 0, pos = j->pos[tid] % chunk;
    float s = 0.0f;
    while (done < want) {
        const size_t k = chunk - pos < want - done ? chunk - pos : want - done;
        s += sum_floats(j->buf.p + lo + pos, k);
        done += k;
        pos = (pos + k) % chunk;
    }
    j->pos[tid] = pos;
    j->sink[tid] = s;
}
static double stream_read(double bytes) {
    double t;
    if (!g_sr.buf.p) {
        g_sr.buf.n = ((size_t)256 << 20) / sizeof(float);
        g_sr.buf.p = (float *)xalloc(g_sr.buf.n * sizeof(float));
        g_sr.buf.init = 1;
        team_run(g_ncpu, bw_worker, &g_sr.buf);   /* first touch by the readers */
    }
    g_sr.want = (size_t)(bytes / sizeof(float));
    t = team_run(g_ncpu, sr_worker, &g_sr);
    g_sink += g_sr.sink[0];
    return t;
}

static double time_scan(const prob *p, int reps) {
    double t[16];
    int i;
    if (prob_run(p, 0) != ATTN_OK) die("scan failed");                     /* warm-up */
    for (i = 0; i < reps; ++i) {
        const double t0 = now_s();
        prob_run(p, 0);
        t[i] = now_s() - t0;
    }
    return median_of(t, reps, NULL, NULL);
}

/* scan calls alternated with streaming reads of the same bytes: medians of the scan's and the
   read's GB/s and of the ratio of each pair (the number that holds on a loaded machine) */
static void bench_scan(int D, int L, attn_dtype dt) {
    prob p;
    const double es = (double)dtype_size(dt);
    double t, bytes, gbs, rd[16], sc[16], ratio[16], rbw, pct;
    const int reps = g_quick ? 3 : (L >= 65536 ? 3 : 5);
    int i;
    prob_init(&p, D, L, dt);
    bytes = 4.0 * D * L * es + 2.0 * NS * L * es;
    if (prob_run(&p, 0) != ATTN_OK) die("scan failed");                    /* warm-up */
    stream_read(bytes);
    for (i = 0; i < reps; ++i) {
        double t0;
        rd[i] = stream_read(bytes);
        t0 = now_s();
        prob_run(&p, 0);
        sc[i] = now_s() - t0;
        ratio[i] = rd[i] / sc[i];
    }
    t = median_of(sc, reps, NULL, NULL);
    gbs = bytes / t / 1e9;
    rbw = bytes / median_of(rd, reps, NULL, NULL) / 1e9;
    pct = 100.0 * median_of(ratio, reps, NULL, NULL);
    printf("  scan   %-4s D %5d  L %6d   %9.2f ms  %10.0f tok/s  %6.2f GB/s  %5.1f%% of the read bw beside it (%.2f GB/s; "
           "%.1f%% of the startup's)  %5.2f ns/(channel token)\n",
           dtype_name(dt), D, L, t * 1e3, L / t, gbs, pct, rbw, 100.0 * gbs / g_bw, t * 1e9 / ((double)D * L));
    csv_row("scan", dt, D, L, g_ncpu, t * 1e3, L / t, gbs, pct, rbw);
    if (dt == ATTN_F32 && g_nscan < 32) { g_scan[g_nscan].D = D; g_scan[g_nscan].L = L; g_scan[g_nscan].t = t; ++g_nscan; }
    fflush(stdout);
    prob_free(&p);
}

/* exact causal attention with the same model width: heads D/64 of dim 64 */
static void bench_attention(int D, int L) {
    const int H = D / 64, reps = g_quick ? 2 : 3;
    const size_t n = (size_t)L * D;
    float *q = (float *)xalloc(n * 4), *k = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
    attn_desc d;
    double t[8], tm;
    int i;
    fill_rand(q, n); fill_rand(k, n); fill_rand(v, n);
    memset(&d, 0, sizeof d);
    d.causal = 1;
    attn_forward(&d, attn_tensor_dense(q, ATTN_F32, 1, L, H, 64), attn_tensor_dense(k, ATTN_F32, 1, L, H, 64),
                 attn_tensor_dense(v, ATTN_F32, 1, L, H, 64), attn_tensor_dense(o, ATTN_F32, 1, L, H, 64), NULL);
    for (i = 0; i < reps; ++i) {
        const double t0 = now_s();
        if (attn_forward(&d, attn_tensor_dense(q, ATTN_F32, 1, L, H, 64), attn_tensor_dense(k, ATTN_F32, 1, L, H, 64),
                         attn_tensor_dense(v, ATTN_F32, 1, L, H, 64), attn_tensor_dense(o, ATTN_F32, 1, L, H, 64), NULL) != ATTN_OK)
            die("attention failed");
        t[i] = now_s() - t0;
    }
    tm = median_of(t, reps, NULL, NULL);
    printf("  attn   f32  D %5d  L %6d   %9.2f ms  %10.0f tok/s  (causal softmax, %d heads x 64, %.1f GFLOP/s)\n", D, L, tm * 1e3,
           L / tm, H, 2.0 * 2.0 * L * (double)L * D / 2.0 / tm / 1e9);
    csv_row("exact_attention", ATTN_F32, D, L, g_ncpu, tm * 1e3, L / tm, 0.0, 0.0, 0.0);
    if (g_natt < 16) { g_att[g_natt].D = D; g_att[g_natt].L = L; g_att[g_natt].t = tm; ++g_natt; }
    fflush(stdout);
    free(q); free(k); free(v); free(o);
}

/* The selective scan's backward beside its forward, one thread, same inputs (D, N 16, per-token
   B/C, softplus, z gate, f32): reps pairs (forward call, backward call) interleaved; medians of
   each and of the per-pair ratio; ns per channel-token = time / (D L). */
static void bench_backward(int D, int L, int reps) {
    prob p;
    const size_t n = (size_t)D * L;
    float *dy = (float *)xalloc(n * 4), *du = (float *)xalloc(n * 4), *ddl = (float *)xalloc(n * 4), *dz = (float *)xalloc(n * 4);
    float *dA = (float *)xalloc(sizeof(float) * (size_t)D * NS), *dB = (float *)xalloc(sizeof(float) * (size_t)NS * L);
    float *dC = (float *)xalloc(sizeof(float) * (size_t)NS * L), *dD = (float *)xalloc(sizeof(float) * D);
    float *ddb = (float *)xalloc(sizeof(float) * D);
    double tf[64], tb[64], rt[64], mf, mb, mr;
    attn_ssm_grads g;
    attn_ssm_desc d;
    int i;
    if (reps > 64) reps = 64;
    prob_init(&p, D, L, ATTN_F32);
    fill_rand(dy, n);
    memset(&g, 0, sizeof g);
    g.du = du; g.ddelta = ddl; g.dz = dz; g.dA = dA; g.dB = dB; g.dC = dC; g.dD = dD; g.ddelta_bias = ddb;
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = D; d.len = L; d.d_state = NS; d.delta_softplus = 1; d.n_threads = 1;
    for (i = -1; i < reps; ++i) {                          /* i = -1: warm-up */
        double t0 = now_s(), t1;
        if (prob_run(&p, 1) != ATTN_OK) die("scan failed");
        t1 = now_s();
        if (attn_ssm_selective_scan_backward(&d, tv(p.u, p.dt, D, L), tv(p.dl, p.dt, D, L), p.A, tv(p.Bm, p.dt, NS, L),
                                             tv(p.Cm, p.dt, NS, L), p.Dk, tv(p.z, p.dt, D, L), p.bias, NULL, tv(dy, ATTN_F32, D, L),
                                             &g) != ATTN_OK)
            die("scan backward failed");
        if (i >= 0) { tf[i] = t1 - t0; tb[i] = now_s() - t1; rt[i] = tb[i] / tf[i]; }
    }
    mf = median_of(tf, reps, NULL, NULL); mb = median_of(tb, reps, NULL, NULL); mr = median_of(rt, reps, NULL, NULL);
    printf("  backward f32 D %5d L %5d (1 thread): forward %.2f ns, backward %.2f ns per channel-token; backward / forward %.2fx "
           "(median of %d interleaved pairs)\n", D, L, mf * 1e9 / (double)n, mb * 1e9 / (double)n, mr, reps);
    csv_row("scan_1thread", ATTN_F32, D, L, 1, mf * 1e3, L / mf, 0.0, 0.0, 0.0);
    csv_row("scan_backward_1thread", ATTN_F32, D, L, 1, mb * 1e3, L / mb, 0.0, 0.0, 0.0);
    bench_csv_machine(g_csv);
    fprintf(g_csv, "scan_backward_over_forward,f32,%d,%d,%d,1,%.3f,0,0,0,0\n", D, NS, L, mr);
    free(dy); free(du); free(ddl); free(dz); free(dA); free(dB); free(dC); free(dD); free(ddb);
    prob_free(&p);
}

/* the sequential recurrence in plain C: 1 thread */
/* The other backwards (issue #29): the complex-A scan, the conv1d + SiLU and S4D, each timed
   against its own forward on the same inputs, interleaved pairs, 1 and 2 threads. bwd 0: the
   forward alone (the complex-A forward row, BENCH_SSM_CPLX_FWD). */
typedef struct {
    int op, D, L, N, nt;         /* op 0: complex scan, 1: conv1d, 2: S4D */
    float *u, *dl, *z, *y, *dy, *B, *C, *A, *Dk, *bias, *w, *g[10];
} nb_prob;

static attn_status nb_run(nb_prob *q, int bwd) {
    attn_ssm_desc d;
    const int D = q->D, L = q->L, N = q->N;
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = D; d.len = L; d.d_state = N; d.n_threads = q->nt;
    if (q->op == 0) {
        attn_ssm_grads g;
        d.delta_softplus = 1; d.a_complex = 1;
        if (!bwd)
            return attn_ssm_selective_scan(&d, tv(q->u, ATTN_F32, D, L), tv(q->dl, ATTN_F32, D, L), q->A, tv(q->B, ATTN_F32, N, 2 * L),
                                           tv(q->C, ATTN_F32, N, 2 * L), q->Dk, tv(q->z, ATTN_F32, D, L), q->bias, NULL,
                                           tv(q->y, ATTN_F32, D, L), NULL);
        g.du = q->g[0]; g.ddelta = q->g[1]; g.dz = q->g[2]; g.dA = q->g[3]; g.dB = q->g[4]; g.dC = q->g[5]; g.dD = q->g[6];
        g.ddelta_bias = q->g[7];
        return attn_ssm_selective_scan_backward(&d, tv(q->u, ATTN_F32, D, L), tv(q->dl, ATTN_F32, D, L), q->A,
                                                tv(q->B, ATTN_F32, N, 2 * L), tv(q->C, ATTN_F32, N, 2 * L), q->Dk,
                                                tv(q->z, ATTN_F32, D, L), q->bias, NULL, tv(q->dy, ATTN_F32, D, L), &g);
    }
    if (q->op == 1) {
        d.conv_kernel = 4;
        if (!bwd) return attn_ssm_conv1d(&d, tv(q->u, ATTN_F32, D, L), q->w, q->bias, NULL, tv(q->y, ATTN_F32, D, L), NULL);
        return attn_ssm_conv1d_backward(&d, tv(q->u, ATTN_F32, D, L), q->w, q->bias, NULL, tv(q->dy, ATTN_F32, D, L),
                                        q->g[0], q->g[1], q->g[2]);
    }
    {
        attn_s4d_params p;
        attn_s4d_grads g;
        memset(&p, 0, sizeof p);
        p.log_dt = q->bias; p.log_a_real = q->A; p.a_imag = q->A + (size_t)D * N; p.c_re = q->B; p.c_im = q->C; p.d_skip = q->Dk;
        if (!bwd) return attn_ssm_s4d(&d, &p, tv(q->u, ATTN_F32, D, L), NULL, tv(q->y, ATTN_F32, D, L), NULL);
        memset(&g, 0, sizeof g);
        g.du = q->g[0]; g.dlog_dt = q->g[1]; g.dlog_a_real = q->g[2]; g.da_imag = q->g[3]; g.dc_re = q->g[4]; g.dc_im = q->g[5];
        g.dd_skip = q->g[6];
        return attn_ssm_s4d_backward(&d, &p, tv(q->u, ATTN_F32, D, L), NULL, tv(q->dy, ATTN_F32, D, L), &g);
    }
}

static void bench_backward_other(int op, int D, int L, int N, int nt, int reps, int bwd) {
    static const char *names[3] = { "complex_scan", "conv1d", "s4d" };
    const size_t n = (size_t)D * L, big = 2 * (size_t)N * L + 2 * (size_t)D * N + n;
    double tf[16], tb[16], rt[16], mf, mb, mr;
    nb_prob q;
    int i;
    char what[64];
    memset(&q, 0, sizeof q);
    q.op = op; q.D = D; q.L = L; q.N = N; q.nt = nt;
    q.u = (float *)xalloc(4 * n); q.dl = (float *)xalloc(4 * n); q.z = (float *)xalloc(4 * n); q.y = (float *)xalloc(4 * n);
    q.dy = (float *)xalloc(4 * n); q.B = (float *)xalloc(4 * big); q.C = (float *)xalloc(4 * big); q.A = (float *)xalloc(4 * big);
    q.Dk = (float *)xalloc(4 * (size_t)D); q.bias = (float *)xalloc(4 * (size_t)D); q.w = (float *)xalloc(16 * (size_t)D);
    for (i = 0; i < 10; ++i) q.g[i] = (float *)xalloc(4 * big);
    fill_rand(q.u, n); fill_rand(q.dl, n); fill_rand(q.z, n); fill_rand(q.dy, n); fill_rand(q.B, big); fill_rand(q.C, big);
    fill_rand(q.w, 4 * (size_t)D); fill_rand(q.Dk, D);
    for (i = 0; i < (int)n; ++i) q.dl[i] -= 3.0f;
    for (i = 0; i < D; ++i) q.bias[i] = op == 2 ? -3.0f - frand() : 0.5f * frand();   /* S4D: log_dt */
    for (i = 0; i < D * N; ++i) {
        if (op == 0) { q.A[2 * i] = -0.5f - (float)(i % N) * 0.1f; q.A[2 * i + 1] = 3.14159265f * (float)(i % N); }
        else { q.A[i] = -0.69f; q.A[(size_t)D * N + i] = 3.14159265f * (float)(i % N); }   /* S4D-Lin */
    }
    if (reps > 16) reps = 16;
    for (i = -1; i < reps; ++i) {
        double t0 = now_s(), t1;
        if (nb_run(&q, 0) != ATTN_OK) die("forward failed");
        t1 = now_s();
        if (bwd && nb_run(&q, 1) != ATTN_OK) die("backward failed");
        if (i >= 0) { tf[i] = t1 - t0; tb[i] = now_s() - t1; rt[i] = tb[i] / tf[i]; }
    }
    mf = median_of(tf, reps, NULL, NULL); mb = median_of(tb, reps, NULL, NULL); mr = median_of(rt, reps, NULL, NULL);
    if (!bwd) {
        printf("  %-12s D %5d L %5d N %2d (%d thread%s): forward %.2f ns per channel-token (%.1f ms)\n", names[op], D, L, N, nt,
               nt > 1 ? "s" : "", mf * 1e9 / (double)n, mf * 1e3);
        snprintf(what, sizeof what, "%s_forward", names[op]);
        bench_csv_machine(g_csv);
        fprintf(g_csv, "%s,f32,%d,%d,%d,%d,%.3f,%.0f,0,0,0\n", what, D, N, L, nt, mf * 1e3, L / mf);
    } else {
        printf("  %-12s D %5d L %5d N %2d (%d thread%s): forward %.2f ns, backward %.2f ns per channel-token; backward / forward %.2fx\n",
               names[op], D, L, N, nt, nt > 1 ? "s" : "", mf * 1e9 / (double)n, mb * 1e9 / (double)n, mr);
        snprintf(what, sizeof what, "%s_backward_over_forward", names[op]);
        bench_csv_machine(g_csv);
        fprintf(g_csv, "%s,f32,%d,%d,%d,%d,%.3f,0,0,0,0\n", what, D, N, L, nt, mr);
    }
    free(q.u); free(q.dl); free(q.z); free(q.y); free(q.dy); free(q.B); free(q.C); free(q.A); free(q.Dk); free(q.bias); free(q.w);
    for (i = 0; i < 10; ++i) free(q.g[i]);
}

static void naive_scan(const prob *p, float *y) {
    const float *u = (const float *)p->u, *dl = (const float *)p->dl, *z = (const float *)p->z;
    const float *Bm = (const float *)p->Bm, *Cm = (const float *)p->Cm;
    float x[NS];
    int c, l, n;
    for (c = 0; c < p->D; ++c) {
        for (n = 0; n < NS; ++n) x[n] = 0.0f;
        for (l = 0; l < p->L; ++l) {
            const size_t i = (size_t)c * p->L + l;
            float dt = dl[i] + p->bias[c], acc = 0.0f;
            if (dt <= 20.0f) dt = log1pf(expf(dt));
            for (n = 0; n < NS; ++n) {
                x[n] = expf(dt * p->A[c * NS + n]) * x[n] + dt * Bm[(size_t)n * p->L + l] * u[i];
                acc += Cm[(size_t)n * p->L + l] * x[n];
            }
            acc += p->Dk[c] * u[i];
            y[i] = acc * z[i] / (1.0f + expf(-z[i]));
        }
    }
}

static void bench_naive(void) {
    prob p;
    float *y;
    double t0, tn, tl, err = 0.0, mx = 1.0;
    size_t i, n;
    prob_init(&p, 1536, 1024, ATTN_F32);
    n = (size_t)p.D * p.L;
    y = (float *)xalloc(n * 4);
    t0 = now_s(); naive_scan(&p, y); tn = now_s() - t0;
    tl = time_scan(&p, 3);
    for (i = 0; i < n; ++i) { err = fabs((double)y[i] - ((float *)p.y)[i]) > err ? fabs((double)y[i] - ((float *)p.y)[i]) : err; mx = fabs(y[i]) > mx ? fabs(y[i]) : mx; }
    printf("  naive C loop (1 thread) D 1536 L 1024: %.1f ms; attn.h %.2f ms on %d threads: %.1fx faster; max |diff| %.2g (rel to max |y|)\n",
           tn * 1e3, tl * 1e3, g_ncpu, tn / tl, err / mx);
    csv_row("naive_scan_1thread", ATTN_F32, 1536, 1024, 1, tn * 1e3, 1024 / tn, 0.0, 0.0, 0.0);
    if (err / mx > 1e-3) die("the library's scan disagrees with the naive loop");
    free(y);
    prob_free(&p);
}

static void bench_steps(void) {
    static const int Ds[2] = { 1536, 5120 };
    attn_pool *pool = attn_pool_create(0, 100);
    int di;
    for (di = 0; di < 2; ++di) {
        const int D = Ds[di], reps = g_quick ? 200 : 1000, K = 4;
        float *x = (float *)xalloc(sizeof(float) * D), *dt = (float *)xalloc(sizeof(float) * D), *z = (float *)xalloc(sizeof(float) * D);
        float *y = (float *)xalloc(sizeof(float) * D), *Bm = (float *)xalloc(sizeof(float) * NS), *Cm = (float *)xalloc(sizeof(float) * NS);
        float *A = (float *)xalloc(sizeof(float) * D * NS), *st = (float *)xalloc(sizeof(float) * D * NS);
        float *w = (float *)xalloc(sizeof(float) * D * K), *cst = (float *)xalloc(sizeof(float) * D * (K - 1));
        double *t = (double *)xalloc(sizeof(double) * reps), ts = 0.0, tc = 0.0;
        attn_ssm_desc d;
        size_t bytes = 0;
        void *ws;
        int i, pass;
        fill_rand(x, D); fill_rand(dt, D); fill_rand(z, D); fill_rand(Bm, NS); fill_rand(Cm, NS); fill_rand(w, (size_t)D * K);
        memset(st, 0, sizeof(float) * D * NS); memset(cst, 0, sizeof(float) * D * (K - 1));
        for (i = 0; i < D * NS; ++i) A[i] = -(float)(i % NS + 1);
        memset(&d, 0, sizeof d);
        d.batch = 1; d.dim = D; d.d_state = NS; d.delta_softplus = 1;
        if (pool) { d.parallel = attn_pool_parallel; d.parallel_user = pool; }
        attn_ssm_workspace_size(&d, ATTN_SSM_OP_STEP, &bytes);
        ws = xalloc(bytes); d.workspace = ws; d.workspace_size = bytes;
        for (pass = 0; pass < 2; ++pass) {
            for (i = 0; i < reps; ++i) {
                const double t0 = now_s();
                if (pass == 0) {
                    if (attn_ssm_selective_step(&d, tv(x, ATTN_F32, D, 1), tv(dt, ATTN_F32, D, 1), A, tv(Bm, ATTN_F32, NS, 1),
                                                tv(Cm, ATTN_F32, NS, 1), NULL, tv(z, ATTN_F32, D, 1), NULL, st, tv(y, ATTN_F32, D, 1)) != ATTN_OK) die("step failed");
                } else if (attn_ssm_conv1d_step(&d, tv(x, ATTN_F32, D, 1), w, NULL, cst, tv(y, ATTN_F32, D, 1)) != ATTN_OK) die("conv step failed");
                t[i] = now_s() - t0;
            }
            qsort(t, (size_t)reps, sizeof(double), cmp_double);   /* median_of keeps 64 values at most */
            if (pass == 0) ts = t[reps / 2]; else tc = t[reps / 2];
        }
        printf("  step   f32  D %5d  N %d: selective_step %.1f us, conv1d_step (K 4) %.1f us (median of %d, attn_pool)\n", D, NS,
               ts * 1e6, tc * 1e6, reps);
        csv_row("selective_step", ATTN_F32, D, 1, g_ncpu, ts * 1e3, 1.0 / ts, 0.0, 0.0, 0.0);
        csv_row("conv1d_step", ATTN_F32, D, 1, g_ncpu, tc * 1e3, 1.0 / tc, 0.0, 0.0, 0.0);
        free(x); free(dt); free(z); free(y); free(Bm); free(Cm); free(A); free(st); free(w); free(cst); free(t); free(ws);
    }
    if (pool) attn_pool_destroy(pool);
}

static void bench_conv(int D, int L) {
    const size_t n = (size_t)D * L;
    float *x = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4), *w = (float *)xalloc(sizeof(float) * D * 4);
    attn_ssm_desc d;
    double t[8], tm, gbs;
    int i;
    fill_rand(x, n); fill_rand(w, (size_t)D * 4);
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = D; d.len = L;
    attn_ssm_conv1d(&d, tv(x, ATTN_F32, D, L), w, NULL, NULL, tv(o, ATTN_F32, D, L), NULL);
    for (i = 0; i < 5; ++i) {
        const double t0 = now_s();
        attn_ssm_conv1d(&d, tv(x, ATTN_F32, D, L), w, NULL, NULL, tv(o, ATTN_F32, D, L), NULL);
        t[i] = now_s() - t0;
    }
    tm = median_of(t, 5, NULL, NULL);
    gbs = 8.0 * n / tm / 1e9;
    printf("  conv1d f32  D %5d  L %6d   %9.2f ms  %10.0f tok/s  %6.2f GB/s  %5.1f%% of read bw (K 4, SiLU)\n", D, L, tm * 1e3, L / tm,
           gbs, 100.0 * gbs / g_bw);
    csv_row("conv1d", ATTN_F32, D, L, g_ncpu, tm * 1e3, L / tm, gbs, 100.0 * gbs / g_bw, g_bw);
    free(x); free(o); free(w);
}

/* S4D: chunked causal convolution (N complex modes), tokens/s and GB/s of u read + y written */
static void bench_s4d(int D, int N, int L) {
    const size_t n = (size_t)D * L, np = (size_t)D * N;
    float *u = (float *)xalloc(n * 4), *y = (float *)xalloc(n * 4), *ldt = (float *)xalloc(sizeof(float) * D);
    float *lar = (float *)xalloc(np * 4), *aim = (float *)xalloc(np * 4), *cr = (float *)xalloc(np * 4), *ci = (float *)xalloc(np * 4);
    attn_s4d_params p;
    attn_ssm_desc d;
    double t[8], tm, gbs;
    int i;
    fill_rand(u, n); fill_rand(cr, np); fill_rand(ci, np);
    for (i = 0; i < D; ++i) ldt[i] = (float)(log(1e-3) + (0.5 + 0.5 * frand()) * (log(1e-1) - log(1e-3)));
    for (i = 0; i < (int)np; ++i) { lar[i] = (float)log(0.5); aim[i] = 3.14159265f * (float)(i % N); }   /* S4D-Lin */
    memset(&p, 0, sizeof p);
    p.log_dt = ldt; p.log_a_real = lar; p.a_imag = aim; p.c_re = cr; p.c_im = ci;
    memset(&d, 0, sizeof d);
    d.batch = 1; d.dim = D; d.len = L; d.d_state = N;
    if (attn_ssm_s4d(&d, &p, tv(u, ATTN_F32, D, L), NULL, tv(y, ATTN_F32, D, L), NULL) != ATTN_OK) die("s4d failed");
    for (i = 0; i < 5; ++i) {
        const double t0 = now_s();
        attn_ssm_s4d(&d, &p, tv(u, ATTN_F32, D, L), NULL, tv(y, ATTN_F32, D, L), NULL);
        t[i] = now_s() - t0;
    }
    tm = median_of(t, 5, NULL, NULL);
    gbs = 8.0 * n / tm / 1e9;
    printf("  s4d    f32  D %5d  L %6d   %9.2f ms  %10.0f tok/s  %6.2f GB/s  %5.1f%% of read bw (%d complex modes, ZOH)\n", D, L, tm * 1e3,
           L / tm, gbs, 100.0 * gbs / g_bw, N);
    csv_row("s4d", ATTN_F32, D, L, g_ncpu, tm * 1e3, L / tm, gbs, 100.0 * gbs / g_bw, g_bw);
    free(u); free(y); free(ldt); free(lar); free(aim); free(cr); free(ci);
}

/* least-squares slope and intercept of log t against log L over the points with this D */
static int fit(const pt *p, int n, int D, double *slope, double *icpt) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int i, m = 0;
    for (i = 0; i < n; ++i)
        if (p[i].D == D) {
            const double x = log((double)p[i].L), y = log(p[i].t);
            sx += x; sy += y; sxx += x * x; sxy += x * y; ++m;
        }
    if (m < 2) return 0;
    *slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
    *icpt = (sy - *slope * sx) / m;
    return 1;
}

static void write_svg(const char *path) {
    const double W = 760, H = 460, x0 = 80, y0 = 40, pw = 600, ph = 340;
    const double lx0 = log10(512), lx1 = log10(131072);
    double ly0 = 1e9, ly1 = -1e9;
    static const char *cols[4] = { "#1f77b4", "#2ca02c", "#9467bd", "#d62728" };
    static const int Ds[3] = { 1536, 2560, 5120 };
    FILE *f = fopen(path, "w");
    int i, s;
    if (!f) die("cannot write the chart");
    for (i = 0; i < g_nscan; ++i) { ly0 = fmin(ly0, log10(g_scan[i].t * 1e3)); ly1 = fmax(ly1, log10(g_scan[i].t * 1e3)); }
    for (i = 0; i < g_natt; ++i) { ly0 = fmin(ly0, log10(g_att[i].t * 1e3)); ly1 = fmax(ly1, log10(g_att[i].t * 1e3)); }
    ly0 = floor(ly0); ly1 = ceil(ly1); if (ly1 <= ly0) ly1 = ly0 + 1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"14\">Mamba selective scan vs exact causal attention (time per call, log-log)</text>\n",
            x0);
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", x0, y0, pw, ph);
    for (i = 10; i <= 17; ++i) {
        const double x = x0 + (log10(pow(2.0, i)) - lx0) / (lx1 - lx0) * pw;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%dk</text>\n",
                x, y0, x, y0 + ph, x, y0 + ph + 16, (1 << i) / 1024);
    }
    for (i = (int)ly0; i <= (int)ly1; ++i) {
        const double y = y0 + ph - (i - ly0) / (ly1 - ly0) * ph;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g ms</text>\n",
                x0, y, x0 + pw, y, x0 - 6, y + 4, pow(10.0, i));
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">sequence length L (N = 16, f32, batch 1)</text>\n", x0 + pw / 2, y0 + ph + 34);
    for (s = 0; s < 4; ++s) {
        const pt *p = s < 3 ? g_scan : g_att;
        const int n = s < 3 ? g_nscan : g_natt, D = s < 3 ? Ds[s] : 1536;
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", cols[s]);
        for (i = 0; i < n; ++i)
            if (p[i].D == D) {
                fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x0 + (log10((double)p[i].L) - lx0) / (lx1 - lx0) * pw,
                        y0 + ph - (log10(p[i].t * 1e3) - ly0) / (ly1 - ly0) * ph);
                first = 0;
            }
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s D %d</text>\n", x0 + 10, y0 + 18 + 16 * s, cols[s],
                s < 3 ? "selective scan" : "exact causal attention", D);
    }
    bench_svg_machine(f, x0, H - 12);
    fprintf(f, "</svg>\n");
    fclose(f);
}

int main(void) {
    static const int Ls[4] = { 1024, 4096, 16384, 65536 };
    const char *outdir = getenv("BENCH_OUTDIR");
    char path[512];
    machine m;
    int isa, i, di;
    double ps, is, pa, ia;
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    g_ncpu = online_cpus();
    if (!outdir || !*outdir) outdir = "bench";
    cpu_model(g_cpu, sizeof g_cpu);
    isa = best_fma_isa();
    printf("attn.h state-space bench%s: %s, %d online CPUs, kernels %s\n", g_quick ? " (BENCH_QUICK)" : "", g_cpu, g_ncpu, attn_kernels());
    printf("machine (FMA loop: %s):\n", isa_desc[isa]);
    measure_machine(&m, isa, g_ncpu, g_quick ? 0.05 : 0.2, (size_t)256 << 20);
    print_machine(&m, g_ncpu, (size_t)256 << 20);
    g_bw = m.bw;
    snprintf(path, sizeof path, "%s/results_ssm.csv", outdir);
    if (!(g_csv = fopen(path, "w"))) die("cannot write results_ssm.csv");
    bench_csv_header(g_csv, "what,dtype,D,N,L,threads,median_ms,tokens_per_s,GB_per_s,pct_read_bw,read_GB_per_s");
    if (env_int("BENCH_SSM_BWD_OTHER", 0)) {
        int nt;
        printf("backward / forward of the complex-A scan (N 16, per-token B/C, softplus, z), conv1d (K 4, SiLU), S4D (32 modes, ZOH), median of 5:\n");
        for (nt = 1; nt <= 2; ++nt) {
            bench_backward_other(0, 256, 2048, 16, nt, 5, 1);
            bench_backward_other(1, 1536, 4096, 0, nt, 5, 1);
            bench_backward_other(2, 256, 4096, 32, nt, 5, 1);
        }
        fclose(g_csv);
        return 0;
    }
    if (env_int("BENCH_SSM_CPLX_FWD", 0)) {
        printf("complex-A selective scan forward (batch 1, N 16, per-token B/C, softplus, z; 1 thread), median of 5:\n");
        bench_backward_other(0, 256, 2048, 16, 1, 5, 0);
        bench_backward_other(0, 1536, 2048, 16, 1, 5, 0);
        fclose(g_csv);
        return 0;
    }
    if (env_int("BENCH_SSM_BWD_ONLY", 0)) {
        printf("selective scan backward (batch 1, N 16, per-token B/C, softplus, z gate):\n");
        bench_backward(1536, 2048, env_int("BENCH_SSM_BWD_REPS", 5));
        if (env_int("BENCH_SSM_BWD_LONG", 1)) { bench_backward(1536, 4096, 5); bench_backward(1536, 16384, 5); }
        fclose(g_csv);
        return 0;
    }
    printf("selective scan (batch 1, N 16, per-token B/C, softplus, z gate; all %d threads):\n", g_ncpu);
    for (di = 0; di < 3; ++di) {
        static const int Ds[3] = { 1536, 2560, 5120 };
        for (i = 0; i < 4; ++i) {
            if (Ls[i] == 65536 && (g_quick || Ds[di] != 1536)) continue;
            if (Ls[i] == 16384 && g_quick && Ds[di] != 1536) continue;
            bench_scan(Ds[di], Ls[i], ATTN_F32);
        }
    }
    bench_scan(1536, 4096, ATTN_BF16);
    printf("exact causal attention at the same width (D 1536 = 24 heads x 64):\n");
    bench_attention(1536, 1024);
    bench_attention(1536, 2048);
    bench_attention(1536, 4096);
    if (!g_quick) bench_attention(1536, 8192);
    if (fit(g_scan, g_nscan, 1536, &ps, &is) && fit(g_att, g_natt, 1536, &pa, &ia)) {
        const double cross = exp((is - ia) / (pa - ps));
        printf("fitted scaling at D 1536: scan t ~ L^%.2f, attention t ~ L^%.2f; crossover (scan faster above) L ~ %.0f\n", ps, pa,
               cross);
        bench_csv_machine(g_csv);
        fprintf(g_csv, "fit_exponent_scan,f32,1536,%d,0,%d,%.3f,0,0,0,0\n", NS, g_ncpu, ps);
        bench_csv_machine(g_csv);
        fprintf(g_csv, "fit_exponent_attention,f32,1536,%d,0,%d,%.3f,0,0,0,0\n", NS, g_ncpu, pa);
        bench_csv_machine(g_csv);
        fprintf(g_csv, "crossover_L,f32,1536,%d,%.0f,%d,0,0,0,0,0\n", NS, cross, g_ncpu);
    }
    printf("selective scan backward beside its forward (batch 1, N 16, per-token B/C, softplus, z gate; 1 thread):\n");
    bench_backward(1536, 2048, g_quick ? 5 : 7);
    bench_backward(1536, 4096, 5);
    if (!g_quick) bench_backward(1536, 16384, 5);
    printf("causal conv1d (K 4, SiLU):\n");
    bench_conv(1536, 4096);
    printf("S4D (chunked convolution, 64-token chunks):\n");
    bench_s4d(1536, 32, 4096);
    if (!g_quick) bench_s4d(1536, 32, 16384);
    printf("decoding steps (batch 1):\n");
    bench_steps();
    printf("naive C loop:\n");
    bench_naive();
    if (fclose(g_csv) != 0) die("cannot write results_ssm.csv");
    snprintf(path, sizeof path, "%s/chart_ssm.svg", outdir);
    write_svg(path);
    printf("wrote %s/results_ssm.csv and %s/chart_ssm.svg\n", outdir, outdir);
    return 0;
}
