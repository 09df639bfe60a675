/* bench/bench_cosformer.c - ATTN_COSFORMER (ReLU features re-weighted by cos(pi/2 (i-j)/M),
   computed on ATTN_LINEAR's chunked core with 2 D features) against exact attention. The same
   layout as bench_linear.c:
   1. Time vs sequence length (B 1, H 8, D = Dv = 64, so 128 features; fp32, all threads on an
      attn_pool), causal and not: cosFormer from 1k to 128k tokens, exact attention
      (ATTN_SOFTMAX, the same q/k/v) up to 16k; the fitted scaling exponents, the crossover
      length, GFLOP/s and % of the measured FMA peak of the chunked kernel, and the max-norm
      difference between the two outputs (cosFormer is another mechanism, not an approximation).
   2. The naive path: the causal recurrence in plain C (1 thread), checked against the
      library's output, and the library's speed-up over it.
   3. Decoding: attn_step with one token per call (B 1, H 8, D 64, M fixed): microseconds per token.
   Env: BENCH_QUICK=1 (lengths to 16k, fewer reps), BENCH_OUTDIR (default bench).
   Writes BENCH_OUTDIR/results_cosformer.csv and BENCH_OUTDIR/chart_cosformer.svg. */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-variable"   /* bench_util.h's isa_desc */
#endif
#include "bench_util.h"

#define H 8
#define D 64
#define F (2 * D)              /* cosFormer features per row */
#define CHUNK 64                 /* ATTN__LIN_ROWS: the intra-chunk product is counted whole */
#define MAX_ROWS 32

typedef struct {
    const char *mech;
    int causal, seq;
    double ms, lo, hi, gflops, pct;
    double err;                  /* vs exact (cosformer rows) or vs the naive recurrence (naive rows) */
} row;

static row rows[MAX_ROWS];
static int n_rows;
static attn_pool *g_pool;
static int g_reps;

static double time_call(attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, double *lo,
                        double *hi) {
    double t[64], t0 = now_s();
    int i, reps = g_reps;
    attn_forward(d, q, k, v, o, NULL);                     /* warm-up (and first-touch) */
    t[0] = now_s() - t0;
    if (t[0] > 4.0) { *lo = *hi = t[0] * 1e3; return t[0] * 1e3; }   /* a call over 4 s: its own sample */
    for (i = 0; i < reps; ++i) {
        double t0 = now_s();
        if (attn_forward(d, q, k, v, o, NULL) != ATTN_OK) die("attn_forward failed");
        t[i] = now_s() - t0;
        if (t[i] > 2.0 && i >= 2) { reps = i + 1; break; }  /* long calls: three are enough */
    }
    {
        const double med = median_of(t, reps, lo, hi) * 1e3;
        *lo *= 1e3; *hi *= 1e3;
        return med;
    }
}

/* executed flops of the chunked kernel (ATTN__LIN_ROWS-row chunks, whole-chunk products) */
static double linear_flops(int causal, int L) {
    double per = 2.0 * F * D + 2.0 * F * D + 2.0 * F;       /* absorb + phi(Q) S + den */
    if (causal) per += 2.0 * CHUNK * F + 2.0 * CHUNK * D;    /* A = phi(Q) phi(K)^T, A V */
    return per * L * H;
}

static double max_norm_diff(const float *a, const float *b, size_t n) {
    double mx = 1e-30, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) { if (fabs(b[i]) > mx) mx = fabs(b[i]); if (fabs(a[i] - b[i]) > e) e = fabs(a[i] - b[i]); }
    return e / mx;
}

/* the naive path: causal recurrence, S += phi(k) v^T, out = phi(q) S / max(phi(q) z, eps),
   phi(x) = [relu(x) sin a_t, relu(x) cos a_t], a_t = (pi/2) (t + 1) / M with M = L */
static void naive_causal(const float *q, const float *k, const float *v, float *out, int L, float *S, float *z) {
    int h, t, i, j;
    float pq[F], pk[F];
    for (h = 0; h < H; ++h) {
        memset(S, 0, sizeof(float) * F * D);
        memset(z, 0, sizeof(float) * F);
        for (t = 0; t < L; ++t) {
            const float *qt = q + ((size_t)t * H + h) * D, *kt = k + ((size_t)t * H + h) * D, *vt = v + ((size_t)t * H + h) * D;
            float *ot = out + ((size_t)t * H + h) * D, den = 0.0f;
            const float sa = (float)sin(1.57079632679489661923 * (t + 1.0) / L), ca = (float)cos(1.57079632679489661923 * (t + 1.0) / L);
            for (i = 0; i < D; ++i) {
                const float rq = qt[i] > 0 ? qt[i] : 0.0f, rk = kt[i] > 0 ? kt[i] : 0.0f;
                pq[i] = rq * sa; pq[D + i] = rq * ca; pk[i] = rk * sa; pk[D + i] = rk * ca;
            }
            for (i = 0; i < F; ++i) {
                z[i] += pk[i];
                for (j = 0; j < D; ++j) S[i * D + j] += pk[i] * vt[j];
            }
            for (j = 0; j < D; ++j) ot[j] = 0.0f;
            for (i = 0; i < F; ++i) {
                den += pq[i] * z[i];
                for (j = 0; j < D; ++j) ot[j] += pq[i] * S[i * D + j];
            }
            for (j = 0; j < D; ++j) ot[j] /= den > 1e-6f ? den : 1e-6f;
        }
    }
}

static void add(const char *mech, int causal, int seq, double ms, double lo, double hi, double flops, double peak,
                double err) {
    row *r = &rows[n_rows++];
    r->mech = mech; r->causal = causal; r->seq = seq; r->ms = ms; r->lo = lo; r->hi = hi;
    r->gflops = flops > 0 ? flops / (ms * 1e-3) / 1e9 : 0.0;
    r->pct = flops > 0 ? 100.0 * r->gflops / peak : 0.0;
    r->err = err;
    printf("  %-8s causal %d  L %6d  %10.3f ms  (%.3f-%.3f)  %7.1f GFLOP/s  %5.1f%% peak  diff %.2e\n", mech, causal,
           seq, ms, lo, hi, r->gflops, r->pct, err);
    fflush(stdout);
}

/* least-squares slope of log(ms) on log(seq) over the rows of one series, seq >= from */
static double exponent(const char *mech, int causal, int from) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int i, n = 0;
    for (i = 0; i < n_rows; ++i) {
        const row *r = &rows[i];
        double x, y;
        if (strcmp(r->mech, mech) != 0 || r->causal != causal || r->seq < from) continue;
        x = log((double)r->seq); y = log(r->ms);
        sx += x; sy += y; sxx += x * x; sxy += x * y; ++n;
    }
    return n >= 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : NAN;
}

static double ms_of(const char *mech, int causal, int seq) {
    int i;
    for (i = 0; i < n_rows; ++i)
        if (strcmp(rows[i].mech, mech) == 0 && rows[i].causal == causal && rows[i].seq == seq) return rows[i].ms;
    return NAN;
}

/* the shortest measured length where cosFormer beat exact; 0 if it never did */
static int crossover(int causal) {
    int i;
    for (i = 0; i < n_rows; ++i) {
        const row *r = &rows[i];
        if (strcmp(r->mech, "cosformer") == 0 && r->causal == causal && r->ms < ms_of("exact", causal, r->seq)) return r->seq;
    }
    return 0;
}

static void write_svg(const char *path, const char *cpu) {
    const double W = 720, Hh = 440, x0 = 70, y0 = 40, pw = 600, ph = 330;
    const double lx0 = log10(1024.0), lx1 = log10(262144.0), ly0 = -1.0, ly1 = 5.0;   /* 0.1 ms .. 100 s */
    static const char *const colors[4] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728" };
    FILE *f = fopen(path, "w");
    int s, i, e;
    if (!f) die("cannot write the SVG");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">cosFormer vs exact attention: time per call, "
               "B 1, H 8, D 64, fp32</text>\n<text x=\"%.0f\" y=\"34\" fill=\"#555\">%s, %s kernels, log-log</text>\n",
            x0, x0, cpu, attn_kernels());
    for (e = 3; e <= 5; ++e) {                                   /* x grid: 1k, 10k, 100k */
        double x = x0 + pw * (e - lx0) / (lx1 - lx0);
        if (x < x0) continue;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">1e%d</text>\n", x, y0, x, y0 + ph, x, y0 + ph + 16, e);
    }
    for (e = (int)ly0; e <= (int)ly1; ++e) {                     /* y grid: decades of ms */
        double y = y0 + ph * (ly1 - e) / (ly1 - ly0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%g ms</text>\n", x0, y, x0 + pw, y, x0 - 4, y + 4, pow(10.0, e));
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">sequence length (tokens)</text>\n", x0 + pw / 2, Hh - 8);
    for (s = 0; s < 4; ++s) {
        const char *mech = s < 2 ? "cosformer" : "exact";
        const int causal = s % 2;
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colors[s],
                causal ? "" : " stroke-dasharray=\"6 3\"");
        for (i = 0; i < n_rows; ++i) {
            const row *r = &rows[i];
            if (strcmp(r->mech, mech) != 0 || r->causal != causal) continue;
            fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x0 + pw * (log10((double)r->seq) - lx0) / (lx1 - lx0),
                    y0 + ph * (ly1 - log10(r->ms)) / (ly1 - ly0));
            first = 0;
        }
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s, %s (exponent %.2f)</text>\n", x0 + 10,
                y0 + 16 + 16 * s, colors[s], mech, causal ? "causal" : "non-causal", exponent(mech, causal, 4096));
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), ncpu = online_cpus();
    const char *outdir = getenv("BENCH_OUTDIR") ? getenv("BENCH_OUTDIR") : "bench";
    const int Lmax = quick ? 16384 : 131072, Lexact = quick ? 4096 : 16384, Lnaive = quick ? 2048 : 4096;
    char cpu[256], path[512];
    machine m;
    size_t nmax = (size_t)Lmax * H * D;
    float *q = (float *)xalloc(nmax * 4), *k = (float *)xalloc(nmax * 4), *v = (float *)xalloc(nmax * 4);
    float *o = (float *)xalloc(nmax * 4), *oe = (float *)xalloc((size_t)Lexact * H * D * 4);
    int L, causal, i;
    FILE *f;
    g_reps = quick ? 5 : 11;
    cpu_model(cpu, sizeof cpu);
    printf("bench_cosformer: %s, %d threads, kernels %s\n", cpu, ncpu, attn_kernels());
    measure_machine(&m, best_fma_isa(), ncpu, quick ? 0.1 : 0.25, (size_t)256 << 20);
    print_machine(&m, ncpu, (size_t)256 << 20);
    fill_rand(q, nmax); fill_rand(k, nmax); fill_rand(v, nmax);
    g_pool = attn_pool_create(ncpu, 0);

    printf("1. time per call vs sequence length (B 1, H 8, D 64, fp32, %d threads)\n", ncpu);
    for (L = 1024; L <= Lmax; L *= 2)
        for (causal = 0; causal <= 1; ++causal) {
            attn_desc d;
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, L, H, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, L, H, D);
            double lo, hi, ms, ems = 0, elo = 0, ehi = 0, diff = NAN;
            memset(&d, 0, sizeof d);
            d.causal = causal; d.n_threads = ncpu;
            d.parallel = g_pool ? attn_pool_parallel : NULL; d.parallel_user = g_pool;
            if (L <= Lexact) {
                attn_tensor te = attn_tensor_dense(oe, ATTN_F32, 1, L, H, D);
                d.kind = ATTN_SOFTMAX;
                ems = time_call(&d, tq, tk, tv, te, &elo, &ehi);
            }
            d.kind = ATTN_COSFORMER;
            ms = time_call(&d, tq, tk, tv, to, &lo, &hi);
            if (L <= Lexact) diff = max_norm_diff(o, oe, (size_t)L * H * D);
            add("cosformer", causal, L, ms, lo, hi, linear_flops(causal, L), m.peak_all, diff);
            if (L <= Lexact)
                add("exact", causal, L, ems, elo, ehi, (causal ? 2.0 : 4.0) * L * (double)L * D * H, m.peak_all, 0.0);
        }

    printf("2. the naive recurrence (plain C, 1 thread), causal, L %d\n", Lnaive);
    {
        float *S = (float *)xalloc(sizeof(float) * F * D), *z = (float *)xalloc(sizeof(float) * F);
        float *on = (float *)xalloc((size_t)Lnaive * H * D * 4);
        double t0 = now_s(), nms;
        naive_causal(q, k, v, on, Lnaive, S, z);
        nms = (now_s() - t0) * 1e3;
        add("naive", 1, Lnaive, nms, nms, nms, 4.0 * F * D * (double)Lnaive * H, m.peak_1t, 0.0);
        {
            attn_desc d;
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, Lnaive, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, Lnaive, H, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, Lnaive, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, Lnaive, H, D);
            memset(&d, 0, sizeof d);
            d.kind = ATTN_COSFORMER; d.causal = 1;
            attn_forward(&d, tq, tk, tv, to, NULL);
            rows[n_rows - 1].err = max_norm_diff(o, on, (size_t)Lnaive * H * D);
            printf("  naive vs attn.h: max-norm difference %.2e; attn.h is %.1fx faster\n", rows[n_rows - 1].err,
                   nms / ms_of("cosformer", 1, Lnaive));
        }
        free(S); free(z); free(on);
    }

    printf("3. decoding: attn_step, one token per call (B 1, H 8, D 64, M 1048576)\n");
    {
        attn_desc d;
        attn_state st;
        size_t floats = 0;
        float *sbuf;
        double t[64], lo, hi, us;
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, 1, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, 1, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, 1, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, 1, H, D);
        int reps = 51, j;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_COSFORMER; d.causal = 1; d.n_threads = ncpu; d.cosformer.max_len = 1 << 20;
        d.parallel = g_pool ? attn_pool_parallel : NULL; d.parallel_user = g_pool;
        attn_state_size(&d, tq, tk, tv, &floats);
        sbuf = (float *)xalloc(floats * 4);
        attn_state_init(&d, tq, tk, tv, sbuf, floats, &st);
        for (i = 0; i < reps; ++i) {
            double t0 = now_s();
            for (j = 0; j < 100; ++j) attn_step(&d, tq, tk, tv, &st, to);
            t[i] = (now_s() - t0) / 100.0;
        }
        us = median_of(t, reps, &lo, &hi) * 1e6;
        printf("  %.2f us per token (%.0f tokens/s; %.2f-%.2f), state %.0f KiB\n", us, 1e6 / us, lo * 1e6, hi * 1e6,
               floats * 4.0 / 1024);
        add("step", 1, 1, us * 1e-3, lo * 1e3, hi * 1e3, (4.0 * F * D + 2.0 * F) * H, m.peak_all, 0.0);
        free(sbuf);
    }

    for (causal = 0; causal <= 1; ++causal)
        printf("%s: exponent cosformer %.2f (L >= 4k), exact %.2f; crossover: cosformer faster from L = %d\n",
               causal ? "causal" : "non-causal", exponent("cosformer", causal, 4096), exponent("exact", causal, 4096),
               crossover(causal));
    snprintf(path, sizeof path, "%s/results_cosformer.csv", outdir);
    if (!(f = fopen(path, "w"))) die("cannot write the CSV");
    fprintf(f, "cpu,kernels,mech,causal,seq,ms,ms_min,ms_max,gflops,pct_peak,diff\n");
    for (i = 0; i < n_rows; ++i)
        fprintf(f, "\"%s\",%s,%s,%d,%d,%.4f,%.4f,%.4f,%.1f,%.1f,%.3e\n", cpu, attn_kernels(), rows[i].mech, rows[i].causal,
                rows[i].seq, rows[i].ms, rows[i].lo, rows[i].hi, rows[i].gflops, rows[i].pct, rows[i].err);
    fclose(f);
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/chart_cosformer.svg", outdir);
    write_svg(path, cpu);
    printf("wrote %s\n", path);
    if (g_pool) attn_pool_destroy(g_pool);
    free(q); free(k); free(v); free(o); free(oe);
    return 0;
}
