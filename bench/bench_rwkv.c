/* bench/bench_rwkv.c - the RWKV scans (attn_rwkv4_forward, attn_rwkv6_forward and their steps)
   beside exact attention at the same lengths.

   1. Time vs sequence length, B 1, C 1024 channels (RWKV-6: 16 heads of 64; exact attention:
      causal ATTN_SOFTMAX with H 16, D 64 on the same buffers), fp32, all threads (n_threads 0) on an
      attn_pool: RWKV from 128 to 32k tokens (quick: 8k), exact attention to 16k (quick: 4k).
      Tokens/s, GB/s (RWKV-4 reads k, v and writes out: 12 bytes per channel-token; RWKV-6 reads
      r, k, v, w and writes out: 20) and % of the measured read bandwidth; GFLOP/s and % of the
      FMA peak for RWKV-6 (5 N^2 + 4 N flops per head-token: r.S, the decayed rank-1 update, the
      bonus) and exact attention (2 T^2 D H causal). The fitted scaling exponent (log-log least
      squares over T >= 2k) and the crossover length where each RWKV becomes faster. "Error vs
      exact" is not reported: RWKV is another model, not an approximation of softmax attention.
   2. The naive path: the recurrences as plain C loops (1 thread; RWKV-4 per channel with expf,
      RWKV-6 per head), checked against the library's output, and the speed-up over them.
   3. Decoding: attn_rwkv4_step / attn_rwkv6_step, one token per call, B 1 and B 8: us/token.
      GB/s counts the token's inputs and output and the state read and written (RWKV-6: 2 N
      floats per channel, 256 KiB per sequence at C 1024): at B 1 the state stays in L2, so
      that rate can exceed the DRAM read bandwidth; at B 8 (2 MiB) the step streams it.
   4. The backwards (attn_rwkv4_backward, attn_rwkv6_backward) as multiples of their forwards,
      1 and 2 threads (see bench_backward).
   Env: BENCH_QUICK=1 (shorter sweep, fewer reps), BENCH_OUTDIR (default bench),
   BENCH_RWKV_BWD_ONLY=1 (part 4 alone).
   Writes BENCH_OUTDIR/results_rwkv.csv, BENCH_OUTDIR/chart_rwkv.svg and
   BENCH_OUTDIR/results_rwkv_bwd.csv. */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-variable"   /* bench_util.h's isa_desc */
#endif
#include "bench_util.h"

#define C 1024
#define N 64
#define H (C / N)
#define MAX_ROWS 64

typedef struct {
    const char *mech;
    int batch, seq;
    double ms, lo, hi, tok_s, gbs, pct_bw, gflops, pct_peak, check;
} row;

static row rows[MAX_ROWS];
static int n_rows, g_reps;
static attn_pool *g_pool;

typedef struct {
    int which;                   /* 0 rwkv4, 1 rwkv6, 2 exact */
    attn_rwkv_desc rd;
    attn_desc ad;
    const float *td, *tf, *u;
    attn_tensor r, k, v, w, out;
} call;

static void run(const call *c) {
    attn_status s;
    if (c->which == 0) s = attn_rwkv4_forward(&c->rd, c->td, c->tf, c->k, c->v, c->out, NULL, NULL);
    else if (c->which == 1) s = attn_rwkv6_forward(&c->rd, c->r, c->k, c->v, c->w, c->u, c->out, NULL, NULL);
    else s = attn_forward(&c->ad, c->r, c->k, c->v, c->out, NULL);
    if (s != ATTN_OK) { fprintf(stderr, "bench: %s\n", attn_status_str(s)); exit(2); }
}

/* median ms of repeated calls (one warm-up): g_reps, fewer when calls are long (one over 4 s: the
   warm-up alone) */
static double time_it(const call *c, double *lo, double *hi) {
    double t[64], total = 0.0, med, t0 = now_s();
    int i, reps = g_reps;
    run(c);                                      /* warm-up; a call over 4 s is its own sample */
    t[0] = now_s() - t0;
    if (t[0] > 4.0) { *lo = *hi = t[0] * 1e3; return t[0] * 1e3; }
    for (i = 0; i < reps; ++i) {
        const double t0 = now_s();
        run(c);
        t[i] = now_s() - t0;
        total += t[i];
        if (i >= 2 && total > 6.0) { reps = i + 1; break; }
        if (i == 0 && t[0] > 6.0) { reps = 1; break; }
    }
    med = median_of(t, reps, lo, hi) * 1e3;
    *lo *= 1e3; *hi *= 1e3;
    return med;
}

static row *add(const char *mech, int batch, int seq, double ms, double lo, double hi, double tokens, double bytes,
                double flops, const machine *m) {
    row *r = &rows[n_rows++];
    memset(r, 0, sizeof *r);
    r->mech = mech; r->batch = batch; r->seq = seq; r->ms = ms; r->lo = lo; r->hi = hi;
    r->tok_s = tokens / (ms * 1e-3);
    r->gbs = bytes > 0 ? bytes / (ms * 1e-3) * 1e-9 : 0.0;
    r->pct_bw = bytes > 0 ? 100.0 * r->gbs / m->bw : 0.0;
    r->gflops = flops > 0 ? flops / (ms * 1e-3) * 1e-9 : 0.0;
    r->pct_peak = flops > 0 ? 100.0 * r->gflops / m->peak_all : 0.0;
    r->check = NAN;
    printf("  %-12s B %d  T %6d  %10.3f ms (%.3f-%.3f)  %11.0f tok/s  %6.2f GB/s %5.1f%% bw  %7.1f GFLOP/s %5.1f%% peak\n",
           mech, batch, seq, ms, lo, hi, r->tok_s, r->gbs, r->pct_bw, r->gflops, r->pct_peak);
    fflush(stdout);
    return r;
}

static double ms_of(const char *mech, int seq) {
    int i;
    for (i = 0; i < n_rows; ++i) if (strcmp(rows[i].mech, mech) == 0 && rows[i].seq == seq) return rows[i].ms;
    return NAN;
}

/* least-squares slope (and intercept) of log(ms) on log(seq), seq >= from */
static double fit(const char *mech, int from, double *icept) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, e;
    int i, n = 0;
    for (i = 0; i < n_rows; ++i) {
        double x, y;
        if (strcmp(rows[i].mech, mech) != 0 || rows[i].seq < from) continue;
        x = log((double)rows[i].seq); y = log(rows[i].ms);
        sx += x; sy += y; sxx += x * x; sxy += x * y; ++n;
    }
    if (n < 2) { if (icept) *icept = NAN; return NAN; }
    e = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    if (icept) *icept = (sy - e * sx) / n;
    return e;
}

/* the shortest measured length from which mech stays faster than exact; 0: never */
static int crossover(const char *mech) {
    int i, best = 0;
    for (i = n_rows - 1; i >= 0; --i) {
        const double e = ms_of("exact", rows[i].seq);
        if (strcmp(rows[i].mech, mech) != 0 || rows[i].batch != 1 || isnan(e)) continue;
        if (rows[i].ms < e) best = rows[i].seq; else break;
    }
    return best;
}

/* ---- the naive recurrences (plain C, one thread; dense [T][C]) ---- */
static void naive_rwkv4(const float *td, const float *tf, const float *k, const float *v, float *out, int T) {
    int c, t;
    for (c = 0; c < C; ++c) {
        const float w = -expf(td[c]), u = tf[c];
        float aa = 0.0f, bb = 0.0f, pp = -1e38f;
        for (t = 0; t < T; ++t) {
            const float kk = k[(size_t)t * C + c], vv = v[(size_t)t * C + c];
            float ww = u + kk, p = pp > ww ? pp : ww, e1 = expf(pp - p), e2 = expf(ww - p);
            out[(size_t)t * C + c] = (e1 * aa + e2 * vv) / (e1 * bb + e2);
            ww = w + pp; p = ww > kk ? ww : kk; e1 = expf(ww - p); e2 = expf(kk - p);
            aa = e1 * aa + e2 * vv; bb = e1 * bb + e2; pp = p;
        }
    }
}
static void naive_rwkv6(const float *r, const float *k, const float *v, const float *w, const float *u, float *out,
                        int T, float *S) {
    int h, t, i, j;
    for (h = 0; h < H; ++h) {
        memset(S, 0, sizeof(float) * N * N);
        for (t = 0; t < T; ++t) {
            const size_t o = (size_t)t * C + (size_t)h * N;
            for (j = 0; j < N; ++j) {
                float y = 0.0f;
                for (i = 0; i < N; ++i) y += r[o + i] * (u[h * N + i] * k[o + i] * v[o + j] + S[i * N + j]);
                out[o + j] = y;
            }
            for (i = 0; i < N; ++i)
                for (j = 0; j < N; ++j) S[i * N + j] = w[o + i] * S[i * N + j] + k[o + i] * v[o + j];
        }
    }
}

static double max_norm_diff(const float *a, const float *b, size_t n) {
    double mx = 1e-30, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) { if (fabs(b[i]) > mx) mx = fabs(b[i]); if (fabs(a[i] - b[i]) > e) e = fabs(a[i] - b[i]); }
    return e / mx;
}

static void write_svg(const char *path, int Lmax) {
    const double W = 720, Hh = 440, x0 = 70, y0 = 40, pw = 600, ph = 330;
    const double lx0 = log10(128.0), lx1 = log10((double)Lmax), ly0 = -2.0, ly1 = 5.0;
    static const char *const mechs[3] = { "rwkv4", "rwkv6", "exact" };
    static const char *const names[3] = { "RWKV-4 WKV", "RWKV-6", "exact attention (causal, H 16, D 64)" };
    static const char *const colors[3] = { "#1f77b4", "#2ca02c", "#d62728" };
    FILE *f = fopen(path, "w");
    int s, i, e;
    if (!f) die("cannot write the SVG");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">RWKV scans vs exact attention: time per call, B 1, C 1024, "
               "fp32 (log-log)</text>\n", x0);
    bench_svg_machine(f, x0, 34);
    for (e = 3; e <= 5; ++e) {
        const double x = x0 + pw * (e - lx0) / (lx1 - lx0);
        if (x < x0 || x > x0 + pw) continue;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">1e%d</text>\n", x, y0, x, y0 + ph, x, y0 + ph + 16, e);
    }
    for (e = (int)ly0; e <= (int)ly1; ++e) {
        const double y = y0 + ph * (ly1 - e) / (ly1 - ly0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%g ms</text>\n", x0, y, x0 + pw, y, x0 - 4, y + 4, pow(10.0, e));
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">sequence length (tokens)</text>\n", x0 + pw / 2, Hh - 8);
    for (s = 0; s < 3; ++s) {
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[s]);
        for (i = 0; i < n_rows; ++i) {
            const row *r = &rows[i];
            if (strcmp(r->mech, mechs[s]) != 0 || r->batch != 1) continue;
            fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x0 + pw * (log10((double)r->seq) - lx0) / (lx1 - lx0),
                    y0 + ph * (ly1 - log10(r->ms)) / (ly1 - ly0));
            first = 0;
        }
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s (exponent %.2f)</text>\n", x0 + 10, y0 + 16 + 16 * s,
                colors[s], names[s], fit(mechs[s], 2048, NULL));
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

/* 4. The backwards against their forwards: B 1, C 1024 (RWKV-6: 16 heads of 64), fp32, T 512,
   2048 and 8192 (quick: 512, 2048), n_threads 1 and 2 (built-in threads): ns per channel-token
   of each (median of 7, quick 5, after a warm-up) and backward / forward. The backward computes
   every gradient (state_in and dstate_out given). Writes BENCH_OUTDIR/results_rwkv_bwd.csv. */
static double bwd_time(int which, int bwd, const attn_rwkv_desc *d, const float *r, const float *k, const float *v,
                       const float *w, const float *td, const float *tf, const float *u, float *o, float *g, float *st,
                       int L, int reps) {
    const size_t n = (size_t)L * C;
    const attn_tensor tr = attn_tensor_dense((void *)r, ATTN_F32, 1, L, 1, C), tk = attn_tensor_dense((void *)k, ATTN_F32, 1, L, 1, C);
    const attn_tensor tv = attn_tensor_dense((void *)v, ATTN_F32, 1, L, 1, C), tw = attn_tensor_dense((void *)w, ATTN_F32, 1, L, 1, C);
    const attn_tensor to = attn_tensor_dense(o, ATTN_F32, 1, L, 1, C);
    double t[16], lo, hi;
    int i;
    for (i = -1; i < reps; ++i) {
        const double t0 = now_s();
        attn_status s;
        if (which == 0)
            s = bwd ? attn_rwkv4_backward(d, td, tf, tk, tv, to, st, st + 3 * C, attn_tensor_dense(g, ATTN_F32, 1, L, 1, C),
                                          attn_tensor_dense(g + n, ATTN_F32, 1, L, 1, C), g + 2 * n, g + 2 * n + C, g + 2 * n + 2 * C)
                    : attn_rwkv4_forward(d, td, tf, tk, tv, to, st, NULL);
        else
            s = bwd ? attn_rwkv6_backward(d, tr, tk, tv, tw, u, to, st, st + (size_t)C * N, attn_tensor_dense(g, ATTN_F32, 1, L, 1, C),
                                          attn_tensor_dense(g + n, ATTN_F32, 1, L, 1, C), attn_tensor_dense(g + 2 * n, ATTN_F32, 1, L, 1, C),
                                          attn_tensor_dense(g + 3 * n, ATTN_F32, 1, L, 1, C), g + 4 * n, g + 4 * n + C)
                    : attn_rwkv6_forward(d, tr, tk, tv, tw, u, to, st, NULL);
        if (s != ATTN_OK) { fprintf(stderr, "bench: %s\n", attn_status_str(s)); exit(2); }
        if (i >= 0) t[i] = now_s() - t0;
    }
    return median_of(t, reps, &lo, &hi) * 1e9 / ((double)L * C);
}

static void bench_backward(const char *outdir, int quick, const char *cpu) {
    const int Lmax = quick ? 2048 : 8192, reps = quick ? 5 : 7;
    const size_t nmax = (size_t)Lmax * C;
    float *r = (float *)xalloc(nmax * 4), *k = (float *)xalloc(nmax * 4), *v = (float *)xalloc(nmax * 4);
    float *w = (float *)xalloc(nmax * 4), *o = (float *)xalloc(nmax * 4), *g = (float *)xalloc((4 * nmax + 2 * C + (size_t)C * N) * 4);
    float *td = (float *)xalloc(C * 4), *tf = (float *)xalloc(C * 4), *u = (float *)xalloc(C * 4);
    float *st = (float *)xalloc((size_t)2 * C * N * 4);
    char path[512];
    FILE *f;
    int L, which, nt;
    size_t e;
    fill_rand(r, nmax); fill_rand(k, nmax); fill_rand(v, nmax); fill_rand(w, nmax); fill_rand(o, nmax);
    for (e = 0; e < nmax; ++e) w[e] = 0.9f + 0.09f * w[e];
    fill_rand(td, C); fill_rand(tf, C); fill_rand(u, C);
    fill_rand(st, (size_t)2 * C * N);
    for (e = 0; e < (size_t)C; ++e) st[C + e] = 1.0f + st[C + e] * st[C + e];          /* RWKV-4: bb > 0, pp ~ 0 */
    snprintf(path, sizeof path, "%s/results_rwkv_bwd.csv", outdir);
    f = fopen(path, "w");
    if (f) fprintf(f, "# %s\nmech,seq,threads,fwd_ns_per_ct,bwd_ns_per_ct,ratio\n", cpu);
    printf("4. backward vs forward (B 1, C %d, fp32; ns per channel-token, median of %d)\n", C, reps);
    printf("   %-6s %6s %3s %10s %10s %8s\n", "mech", "T", "thr", "forward", "backward", "bwd/fwd");
    for (which = 0; which < 2; ++which)
        for (L = 512; L <= Lmax; L *= 4)
            for (nt = 1; nt <= 2; ++nt) {
                attn_rwkv_desc d;
                double fw, bw;
                memset(&d, 0, sizeof d);
                d.n_threads = nt;
                fw = bwd_time(which, 0, &d, r, k, v, w, td, tf, u, o, g, st, L, reps);
                bw = bwd_time(which, 1, &d, r, k, v, w, td, tf, u, o, g, st, L, reps);
                printf("   %-6s %6d %3d %10.2f %10.2f %8.2f\n", which ? "rwkv6" : "rwkv4", L, nt, fw, bw, bw / fw);
                if (f) fprintf(f, "%s,%d,%d,%.3f,%.3f,%.2f\n", which ? "rwkv6" : "rwkv4", L, nt, fw, bw, bw / fw);
            }
    if (f) fclose(f);
    free(r); free(k); free(v); free(w); free(o); free(g); free(td); free(tf); free(u); free(st);
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), ncpu = online_cpus();
    const char *outdir = getenv("BENCH_OUTDIR") ? getenv("BENCH_OUTDIR") : "bench";
    const int Lmax = quick ? 8192 : 32768, Lexact = quick ? 4096 : 16384, Lnaive4 = quick ? 1024 : 4096;
    const int Lnaive6 = quick ? 256 : 1024;
    const size_t nmax = (size_t)Lmax * C;
    float *r = (float *)xalloc(nmax * 4), *k = (float *)xalloc(nmax * 4), *v = (float *)xalloc(nmax * 4);
    float *w = (float *)xalloc(nmax * 4), *o = (float *)xalloc(nmax * 4);
    float *td = (float *)xalloc(C * 4), *tf = (float *)xalloc(C * 4), *u = (float *)xalloc(C * 4);
    char cpu[256], path[512];
    machine m;
    call c;
    int L, i, which;
    size_t e;
    FILE *f;
    g_reps = quick ? 5 : 9;
    cpu_model(cpu, sizeof cpu);
    printf("bench_rwkv: %s, %d threads, kernels %s\n", cpu, ncpu, attn_kernels());
    if (env_int("BENCH_RWKV_BWD_ONLY", 0)) { bench_backward(outdir, quick, cpu); return 0; }
    measure_machine(&m, best_fma_isa(), ncpu, quick ? 0.1 : 0.25, (size_t)256 << 20);
    print_machine(&m, ncpu, (size_t)256 << 20);
    fill_rand(r, nmax); fill_rand(k, nmax); fill_rand(v, nmax); fill_rand(w, nmax);
    for (e = 0; e < nmax; ++e) w[e] = 0.9f + 0.09f * w[e];          /* decays in (0.81, 0.99) */
    fill_rand(td, C); fill_rand(tf, C); fill_rand(u, C);
    g_pool = attn_pool_create(ncpu, 0);
    memset(&c, 0, sizeof c);
    c.rd.n_threads = 0; c.rd.parallel = g_pool ? attn_pool_parallel : NULL; c.rd.parallel_user = g_pool;
    c.ad.causal = 1; c.ad.n_threads = 0; c.ad.parallel = c.rd.parallel; c.ad.parallel_user = g_pool;
    c.td = td; c.tf = tf; c.u = u;

    printf("1. time per call vs sequence length (B 1, C %d, fp32, %d threads)\n", C, ncpu);
    for (L = 128; L <= Lmax; L *= 2)
        for (which = 0; which < 3; ++which) {
            double lo, hi, ms;
            if (which == 2 && L > Lexact) continue;
            c.which = which;
            if (which < 2) {
                c.r = attn_tensor_dense(r, ATTN_F32, 1, L, 1, C); c.k = attn_tensor_dense(k, ATTN_F32, 1, L, 1, C);
                c.v = attn_tensor_dense(v, ATTN_F32, 1, L, 1, C); c.w = attn_tensor_dense(w, ATTN_F32, 1, L, 1, C);
                c.out = attn_tensor_dense(o, ATTN_F32, 1, L, 1, C);
            } else {
                c.r = attn_tensor_dense(r, ATTN_F32, 1, L, H, N); c.k = attn_tensor_dense(k, ATTN_F32, 1, L, H, N);
                c.v = attn_tensor_dense(v, ATTN_F32, 1, L, H, N); c.out = attn_tensor_dense(o, ATTN_F32, 1, L, H, N);
            }
            ms = time_it(&c, &lo, &hi);
            if (which == 0) add("rwkv4", 1, L, ms, lo, hi, L, 12.0 * L * C, 0.0, &m);
            else if (which == 1) add("rwkv6", 1, L, ms, lo, hi, L, 20.0 * L * C, (5.0 * N * N + 4.0 * N) * H * L, &m);
            else add("exact", 1, L, ms, lo, hi, L, 0.0, 2.0 * L * (double)L * N * H, &m);
        }

    printf("2. the naive recurrences (plain C, 1 thread)\n");
    {
        float *on = (float *)xalloc((size_t)Lnaive4 * C * 4), *S = (float *)xalloc(sizeof(float) * N * N);
        double t0, nms;
        row *rw;
        t0 = now_s();
        naive_rwkv4(td, tf, k, v, on, Lnaive4);
        nms = (now_s() - t0) * 1e3;
        rw = add("naive_rwkv4", 1, Lnaive4, nms, nms, nms, Lnaive4, 12.0 * Lnaive4 * C, 0.0, &m);
        c.which = 0;
        c.k = attn_tensor_dense(k, ATTN_F32, 1, Lnaive4, 1, C); c.v = attn_tensor_dense(v, ATTN_F32, 1, Lnaive4, 1, C);
        c.out = attn_tensor_dense(o, ATTN_F32, 1, Lnaive4, 1, C);
        run(&c);
        rw->check = max_norm_diff(o, on, (size_t)Lnaive4 * C);
        printf("  RWKV-4 naive vs attn.h: max-norm difference %.2e; attn.h is %.1fx faster\n", rw->check,
               nms / ms_of("rwkv4", Lnaive4));
        t0 = now_s();
        naive_rwkv6(r, k, v, w, u, on, Lnaive6, S);
        nms = (now_s() - t0) * 1e3;
        rw = add("naive_rwkv6", 1, Lnaive6, nms, nms, nms, Lnaive6, 20.0 * Lnaive6 * C, (5.0 * N * N + 4.0 * N) * H * Lnaive6, &m);
        c.which = 1;
        c.r = attn_tensor_dense(r, ATTN_F32, 1, Lnaive6, 1, C); c.k = attn_tensor_dense(k, ATTN_F32, 1, Lnaive6, 1, C);
        c.v = attn_tensor_dense(v, ATTN_F32, 1, Lnaive6, 1, C); c.w = attn_tensor_dense(w, ATTN_F32, 1, Lnaive6, 1, C);
        c.out = attn_tensor_dense(o, ATTN_F32, 1, Lnaive6, 1, C);
        run(&c);
        rw->check = max_norm_diff(o, on, (size_t)Lnaive6 * C);
        printf("  RWKV-6 naive vs attn.h: max-norm difference %.2e; attn.h is %.1fx faster\n", rw->check,
               nms / ms_of("rwkv6", Lnaive6));
        free(on); free(S);
    }

    printf("3. decoding: one token per call (C %d, state in place)\n", C);
    {
        static const int batches[2] = { 1, 8 };
        int bi, j;
        for (bi = 0; bi < 2; ++bi) {
            const int B = batches[bi];
            float *st4 = (float *)xalloc(sizeof(float) * 3 * B * C), *st6 = (float *)xalloc(sizeof(float) * B * C * N);
            attn_tensor r1 = attn_tensor_dense(r, ATTN_F32, B, 1, 1, C), k1 = attn_tensor_dense(k, ATTN_F32, B, 1, 1, C);
            attn_tensor v1 = attn_tensor_dense(v, ATTN_F32, B, 1, 1, C), w1 = attn_tensor_dense(w, ATTN_F32, B, 1, 1, C);
            attn_tensor o1 = attn_tensor_dense(o, ATTN_F32, B, 1, 1, C);
            double t[64], lo, hi, us;
            size_t wsb = 0;
            void *ws;
            attn_rwkv_desc d6 = c.rd;
            const int reps = quick ? 11 : 31, inner = 50;
            attn_rwkv4_state_init(st4, B, C);
            memset(st6, 0, sizeof(float) * B * C * N);
            attn_rwkv6_workspace_size(&d6, r1, k1, v1, w1, &wsb);
            ws = xalloc(wsb);
            d6.workspace = ws; d6.workspace_size = wsb;
            for (i = 0; i < reps; ++i) {
                const double t0 = now_s();
                for (j = 0; j < inner; ++j)
                    if (attn_rwkv4_step(&c.rd, td, tf, k1, v1, o1, st4) != ATTN_OK) die("rwkv4_step failed");
                t[i] = (now_s() - t0) / inner;
            }
            us = median_of(t, reps, &lo, &hi) * 1e6;
            add("step_rwkv4", B, 1, us * 1e-3, lo * 1e3, hi * 1e3, B, 36.0 * B * C, 0.0, &m);
            for (i = 0; i < reps; ++i) {
                const double t0 = now_s();
                for (j = 0; j < inner; ++j)
                    if (attn_rwkv6_step(&d6, r1, k1, v1, w1, u, o1, st6) != ATTN_OK) die("rwkv6_step failed");
                t[i] = (now_s() - t0) / inner;
            }
            us = median_of(t, reps, &lo, &hi) * 1e6;
            add("step_rwkv6", B, 1, us * 1e-3, lo * 1e3, hi * 1e3, B, 20.0 * B * C + 8.0 * B * C * N,
                (5.0 * N * N + 4.0 * N) * H * B, &m);
            free(st4); free(st6); free(ws);
        }
    }

    {
        double e4 = fit("rwkv4", 2048, NULL), e6 = fit("rwkv6", 2048, NULL), ee = fit("exact", 2048, NULL);
        printf("exponents (T >= 2k): rwkv4 %.2f, rwkv6 %.2f, exact %.2f\n", e4, e6, ee);
        printf("crossover (shortest length from which RWKV stays faster than exact; 128 = every length measured, "
               "0 = never): rwkv4 %d, rwkv6 %d\n", crossover("rwkv4"), crossover("rwkv6"));
    }
    snprintf(path, sizeof path, "%s/results_rwkv.csv", outdir);
    if (!(f = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(f, "mech,batch,seq,ms,ms_min,ms_max,tokens_per_s,gbs,pct_bw,gflops,pct_peak,check_diff");
    for (i = 0; i < n_rows; ++i) {
        bench_csv_machine(f);
        fprintf(f, "%s,%d,%d,%.4f,%.4f,%.4f,%.0f,%.3f,%.2f,%.2f,%.2f,%.3e\n", rows[i].mech, rows[i].batch, rows[i].seq,
                rows[i].ms, rows[i].lo, rows[i].hi, rows[i].tok_s, rows[i].gbs, rows[i].pct_bw, rows[i].gflops,
                rows[i].pct_peak, rows[i].check);
    }
    if (fclose(f) != 0) die("cannot write the CSV");
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/chart_rwkv.svg", outdir);
    write_svg(path, Lmax);
    printf("wrote %s\n", path);
    if (g_pool) attn_pool_destroy(g_pool);
    free(r); free(k); free(v); free(w); free(o); free(td); free(tf); free(u);
    bench_backward(outdir, quick, cpu);
    return 0;
}
