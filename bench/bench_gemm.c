/* bench/bench_gemm.c - attn_sgemm throughput (`make build/bench_gemm`; never part of `make test`).

   Run:    ./build/bench_gemm                full set, about a minute on a 2-core AVX-512 machine
           BENCH_QUICK=1 ./build/bench_gemm  reduced set
   Knobs:  BENCH_OUTDIR=<dir>  where results_gemm.csv goes (default: bench)
   Exit:   0 ok; 1 a case failed its correctness check; 2 attn_sgemm returned an error;
           3 out of memory or the CSV could not be written.

   What it does
     1. Measures the fp32 FMA peak (bench_util.h: 16 zmm accumulators under AVX-512) on 1 thread
        and on every online CPU, at the start and at the end; other work only lowers a
        measurement, so the higher one is the reference for % of peak.
     2. Times attn_sgemm (one warm-up call, then repetitions until 0.5 s or 7 reps, at least 3;
        median, min, max) at square 512..4096 and at the layers' shapes: the projections of
        4 x 1024 tokens at d_model 768 (forward X W, and the backward's dX = dY W^T and
        dW = X^T dY), the 768 -> 3072 MLP-sized projection of 1024 tokens, and the small layer
        (256 tokens, d_model 128). FLOPs = 2mnk. % peak is of the peak on the same number of
        threads. Every case's warm-up output is checked on a few rows against a double
        reference first.
     3. Times a naive triple loop (what a C programmer would write: one dot product per
        element, B walked by column) on the small shapes, 1 thread, for the speed-up ratio.
     4. Writes a table to stdout and <outdir>/results_gemm.csv. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

typedef struct grow {
    char name[40];
    int ta, tb, m, n, k, threads, naive;   /* naive: the naive loop, 1 thread */
    int reps;
    double med_ms, min_ms, max_ms, gflops, pct_peak, speedup, check_err;
} grow;

#define MAX_ROWS 64
static grow rows[MAX_ROWS];
static int n_rows;

static grow *add(const char *name, int ta, int tb, int m, int n, int k, int threads, int naive) {
    grow *r = &rows[n_rows++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->ta = ta; r->tb = tb; r->m = m; r->n = n; r->k = k; r->threads = threads; r->naive = naive;
    return r;
}

/* C = op(A) op(B), one dot product per element */
static void naive_gemm(int ta, int tb, int m, int n, int k, const float *A, int lda, const float *B, int ldb, float *C, int ldc) {
    int i, j, p;
    for (i = 0; i < m; ++i)
        for (j = 0; j < n; ++j) {
            float s = 0.0f;
            for (p = 0; p < k; ++p)
                s += (ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p]) * (tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j]);
            C[(size_t)i * ldc + j] = s;
        }
}

/* max relative error over a few rows against a double reference */
static double check(const grow *r, const float *A, const float *B, const float *C) {
    const int lda = r->ta ? r->m : r->k, ldb = r->tb ? r->k : r->n;
    double worst = 0.0;
    int t, j, p;
    for (t = 0; t < 4; ++t) {
        const int i = (int)(((long long)t * 7919) % r->m);
        for (j = 0; j < r->n; ++j) {
            double s = 0.0, as = 0.0;
            for (p = 0; p < r->k; ++p) {
                const double x = (double)(r->ta ? A[(size_t)p * lda + i] : A[(size_t)i * lda + p]) *
                                 (double)(r->tb ? B[(size_t)j * ldb + p] : B[(size_t)p * ldb + j]);
                s += x; as += fabs(x);
            }
            as = fabs(C[(size_t)i * r->n + j] - s) / (as > 0 ? as : 1.0);
            if (!(as <= worst)) worst = as != as ? INFINITY : as;
        }
    }
    return worst;
}

static int run_row(grow *r) {
    const int lda = r->ta ? r->m : r->k, ldb = r->tb ? r->k : r->n;
    float *A = (float *)xalloc((size_t)r->m * r->k * sizeof(float));
    float *B = (float *)xalloc((size_t)r->k * r->n * sizeof(float));
    float *C = (float *)xalloc((size_t)r->m * r->n * sizeof(float));
    double t[64], t0, total = 0.0, flops = 2.0 * r->m * (double)r->n * r->k;
    int rep, rc = 0;
    fill_rand(A, (size_t)r->m * r->k);
    fill_rand(B, (size_t)r->k * r->n);
    for (rep = 0; rep < 64; ++rep) {
        t0 = now_s();
        if (r->naive) naive_gemm(r->ta, r->tb, r->m, r->n, r->k, A, lda, B, ldb, C, r->n);
        else if (attn_sgemm(r->ta, r->tb, r->m, r->n, r->k, 1.0f, A, lda, B, ldb, 0.0f, C, r->n, r->threads) != ATTN_OK) {
            rc = 2; break;
        }
        t0 = now_s() - t0;
        if (rep == 0) {   /* the warm-up: checked, not timed */
            r->check_err = check(r, A, B, C);
            if (!(r->check_err < 1e-5)) { rc = 1; break; }
            continue;
        }
        t[rep - 1] = t0; total += t0;
        if (rep >= 3 && (total > 0.5 || rep >= 7)) break;
    }
    if (rc == 0) {
        r->reps = rep;
        r->med_ms = 1e3 * median_of(t, rep, &r->min_ms, &r->max_ms);
        r->min_ms *= 1e3; r->max_ms *= 1e3;
        r->gflops = flops / (r->med_ms * 1e-3) * 1e-9;
    }
    free(A); free(B); free(C);
    return rc;
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0) != 0, ncpu = online_cpus();
    const char *outdir = getenv("BENCH_OUTDIR");
    double p1a, p1b, pna, pnb, sp, peak1, peakn;
    int att, i, j, rc = 0, isa;
    char cpu[256], path[512];
    FILE *f;
    if (!outdir || !*outdir) outdir = "bench";
    isa = best_fma_isa();
    cpu_model(cpu, sizeof cpu);
    printf("attn_sgemm bench: %s, %d CPUs, kernels %s\n", cpu, ncpu, attn_kernels());
    p1a = fma_peak_steady(isa, 1, quick ? 0.1 : 0.3, &sp, &att);
    pna = ncpu > 1 ? fma_peak_steady(isa, ncpu, quick ? 0.1 : 0.3, &sp, &att) : p1a;

    add("square 512", 0, 0, 512, 512, 512, 0, 0);
    add("square 1024", 0, 0, 1024, 1024, 1024, 0, 0);
    add("square 2048", 0, 0, 2048, 2048, 2048, 0, 0);
    if (!quick) add("square 4096", 0, 0, 4096, 4096, 4096, 0, 0);
    add("square 2048 1t", 0, 0, 2048, 2048, 2048, 1, 0);
    add("X W 4096x768x768", 0, 0, 4096, 768, 768, 0, 0);
    add("dY W^T 4096x768x768", 0, 1, 4096, 768, 768, 0, 0);
    add("X^T dY 768x768x4096", 1, 0, 768, 768, 4096, 0, 0);
    add("X W 1024x3072x768", 0, 0, 1024, 3072, 768, 0, 0);
    add("X W 256x128x128", 0, 0, 256, 128, 128, 0, 0);
    add("X W 256x128x128 1t", 0, 0, 256, 128, 128, 1, 0);
    add("square 512 1t", 0, 0, 512, 512, 512, 1, 0);
    add("naive 256x128x128", 0, 0, 256, 128, 128, 1, 1);
    add("naive 512", 0, 0, 512, 512, 512, 1, 1);

    for (i = 0; i < n_rows; ++i) {
        int s = run_row(&rows[i]);
        if (s) {
            fprintf(stderr, "bench_gemm: %s %s\n", rows[i].name, s == 1 ? "failed its check" : "attn_sgemm error");
            if (s > rc) rc = s;
        }
    }
    p1b = fma_peak_steady(isa, 1, quick ? 0.1 : 0.3, &sp, &att);
    pnb = ncpu > 1 ? fma_peak_steady(isa, ncpu, quick ? 0.1 : 0.3, &sp, &att) : p1b;
    peak1 = p1a > p1b ? p1a : p1b;
    peakn = pna > pnb ? pna : pnb;
    printf("FMA peak: 1 thread %.1f / %.1f GFLOP/s, %d threads %.1f / %.1f GFLOP/s (start / end; the higher is used)\n",
           p1a, p1b, ncpu, pna, pnb);
    if (fabs(p1a - p1b) > 0.1 * peak1 || fabs(pna - pnb) > 0.1 * peakn)
        printf("note: start and end peaks differ by more than 10%%: other work ran on this machine\n");
    for (i = 0; i < n_rows; ++i) {
        grow *r = &rows[i];
        r->pct_peak = 100.0 * r->gflops / (r->threads == 1 ? peak1 : peakn);
        if (r->naive)
            for (j = 0; j < n_rows; ++j)
                if (!rows[j].naive && rows[j].threads == 0 && rows[j].m == r->m && rows[j].n == r->n &&
                    rows[j].k == r->k && rows[j].ta == r->ta && rows[j].tb == r->tb && r->med_ms > 0)
                    rows[j].speedup = r->med_ms / rows[j].med_ms;
    }
    printf("%-22s %2s %2s %5s %5s %5s %3s %10s %10s %9s %8s %8s %5s\n", "case", "ta", "tb", "m", "n", "k", "thr",
           "median ms", "GFLOP/s", "% peak", "min ms", "max ms", "x naive");
    for (i = 0; i < n_rows; ++i) {
        const grow *r = &rows[i];
        printf("%-22s %2d %2d %5d %5d %5d %3d %10.3f %10.1f %8.1f%% %8.3f %8.3f", r->name, r->ta, r->tb, r->m, r->n, r->k,
               r->threads ? r->threads : ncpu, r->med_ms, r->gflops, r->pct_peak, r->min_ms, r->max_ms);
        if (r->speedup > 0) printf(" %7.1fx", r->speedup);
        printf("\n");
    }
    snprintf(path, sizeof path, "%s/results_gemm.csv", outdir);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "bench_gemm: cannot write %s\n", path); return 3; }
    bench_csv_header(f, "case,ta,tb,m,n,k,threads,median_ms,min_ms,max_ms,reps,gflops,pct_peak,speedup_vs_naive,check_err");
    bench_csv_machine(f);
    fprintf(f, "machine_fma_peak_1t,,,,,,1,,,,,%.2f,100,,\n", peak1);
    bench_csv_machine(f);
    fprintf(f, "machine_fma_peak_all,,,,,,%d,,,,,%.2f,100,,\n", ncpu, peakn);
    for (i = 0; i < n_rows; ++i) {
        const grow *r = &rows[i];
        bench_csv_machine(f);
        fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%.4f,%.4f,%.4f,%d,%.2f,%.2f,", r->name, r->ta, r->tb, r->m, r->n, r->k,
                r->threads ? r->threads : ncpu, r->med_ms, r->min_ms, r->max_ms, r->reps, r->gflops, r->pct_peak);
        if (r->speedup > 0) fprintf(f, "%.2f", r->speedup);
        fprintf(f, ",%.2e\n", r->check_err);
    }
    if (fclose(f) != 0) return 3;
    printf("wrote %s\n", path);
    return rc;
}
