/* bench/bench_isa.c - the same work on each instruction set, as a share of that instruction
   set's own FMA peak (issue 15: AVX2 machines should get AVX-512's share of their peak).

   `make bench` builds it twice and runs both: build/bench_isa (the best kernels this CPU has)
   and build/bench_isa_avx2 (-DATTN_NO_AVX512: the AVX2 + FMA kernels on the same machine).
   Run:    ./build/bench_isa                 about a minute on a 2-core machine
           BENCH_QUICK=1 ./build/bench_isa   fewer repetitions
   Knobs:  BENCH_OUTDIR=<dir>  where results_isa.csv goes (default: bench); rows are appended
           per kernel set, so both builds land in one file (delete it for a fresh table)
   Exit:   0 ok; 2 a call returned an error; 3 out of memory or the CSV could not be written.

   What it does
     1. Measures the fp32 FMA peak of the vector width the kernels use (16 zmm accumulators for
        AVX-512, 12 ymm for AVX2) on 1 thread and on every online CPU.
     2. Times, with medians of interleaved repetitions: exact-attention prefill (fp32, H 8,
        S 2048, D 64 and 128, q/k/v in [B,H,S,D] and in [B,S,H,D], K/V stored f32, f16, bf16),
        the backward (S 1024, D 128) and attn_sgemm (1024^3), on 1 thread and on all threads.
        FLOPs: prefill 4 S^2 D H, backward 10 S^2 D H (recompute QK^T, dP, dV, dK, dQ), GEMM 2n^3.
     3. Prints GFLOP/s and % of the peak on the same number of threads; appends the rows to
        <outdir>/results_isa.csv with the CPU model and kernel set in each row. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 8
#define MAX_CASES 32

typedef struct icase {
    char name[48];
    int kind;            /* 0 prefill, 1 backward, 2 sgemm */
    int S, D, bshd, threads;
    attn_dtype kv;
    double flops, t[64];
} icase;

static icase cases[MAX_CASES];
static int n_cases;

static void add(const char *name, int kind, int S, int D, int bshd, attn_dtype kv, int threads) {
    icase *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->kind = kind; c->S = S; c->D = D; c->bshd = bshd; c->kv = kv; c->threads = threads;
    c->flops = kind == 0 ? 4.0 * S * (double)S * D * H : kind == 1 ? 10.0 * S * (double)S * D * H
                                                                  : 2.0 * S * (double)S * S;
}

static attn_tensor view(void *p, attn_dtype dt, int S, int D, int bshd) {
    return bshd ? attn_tensor_dense(p, dt, 1, S, H, D) : attn_tensor_bhsd(p, dt, 1, H, S, D);
}

/* One timed call of case c; buffers hold at least S*H*Dmax floats each. */
static double run(const icase *c, float **f, uint16_t **h, uint16_t **b, float *lse) {
    attn_desc d;
    double t0;
    attn_status s;
    memset(&d, 0, sizeof d);
    d.n_threads = c->threads;
    t0 = now_s();
    if (c->kind == 2) {
        s = attn_sgemm(0, 0, c->S, c->S, c->S, 1.0f, f[0], c->S, f[1], c->S, 0.0f, f[2], c->S, c->threads);
    } else {
        const void *kp = c->kv == ATTN_F32 ? (void *)f[1] : c->kv == ATTN_F16 ? (void *)h[0] : (void *)b[0];
        const void *vp = c->kv == ATTN_F32 ? (void *)f[2] : c->kv == ATTN_F16 ? (void *)h[1] : (void *)b[1];
        attn_tensor q = view(f[0], ATTN_F32, c->S, c->D, c->bshd), k = view((void *)kp, c->kv, c->S, c->D, c->bshd);
        attn_tensor v = view((void *)vp, c->kv, c->S, c->D, c->bshd), o = view(f[3], ATTN_F32, c->S, c->D, c->bshd);
        if (c->kind == 0) {
            s = attn_forward(&d, q, k, v, o, NULL);
        } else {
            attn_tensor dout = view(f[4], ATTN_F32, c->S, c->D, c->bshd), dq = view(f[5], ATTN_F32, c->S, c->D, c->bshd);
            attn_tensor dk = view(f[6], ATTN_F32, c->S, c->D, c->bshd), dv = view(f[7], ATTN_F32, c->S, c->D, c->bshd);
            s = attn_forward(&d, q, k, v, o, lse);
            t0 = now_s();
            if (s == ATTN_OK) s = attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv);
        }
    }
    if (s != ATTN_OK) {
        fprintf(stderr, "bench_isa: %s: %s\n", c->name, attn_status_str(s));
        exit(2);
    }
    return now_s() - t0;
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), reps = quick ? 3 : 7;
    const int ncpu = online_cpus();
    const int isa = best_fma_isa();
    const size_t n = (size_t)2048 * H * 128 > (size_t)1024 * 1024 ? (size_t)2048 * H * 128 : (size_t)1024 * 1024;
    const char *outdir = getenv("BENCH_OUTDIR");
    char cpu[128], path[512];
    float *f[8], *lse;
    uint16_t *h[2], *b[2];
    double peak[2], sp;
    int att, i, r, j;
    FILE *csv;
    cpu_model(cpu, sizeof cpu);
    printf("bench_isa: %s, %d CPUs used, kernels %s, FMA loop %s\n", cpu, ncpu, attn_kernels(), isa_desc[isa]);
    peak[0] = fma_peak_steady(isa, 1, 0.2, &sp, &att);
    peak[1] = ncpu > 1 ? fma_peak_steady(isa, ncpu, 0.2, &sp, &att) : peak[0];
    printf("  FMA peak: %.1f GFLOP/s on 1 thread, %.1f on %d\n", peak[0], peak[1], ncpu);
    for (i = 0; i < 8; ++i) { f[i] = (float *)xalloc(n * sizeof(float)); fill_rand(f[i], n); }
    for (i = 0; i < 2; ++i) {
        h[i] = (uint16_t *)xalloc(n * 2); b[i] = (uint16_t *)xalloc(n * 2);
        convert_from_f32(h[i], ATTN_F16, f[1 + i], n); convert_from_f32(b[i], ATTN_BF16, f[1 + i], n);
    }
    lse = (float *)xalloc(sizeof(float) * 2048 * H);
    for (j = 0; j < (ncpu > 1 ? 2 : 1); ++j) {
        const int t = j ? ncpu : 1;
        add("prefill D128 [B,H,S,D] f32", 0, 2048, 128, 0, ATTN_F32, t);
        add("prefill D128 [B,S,H,D] f32", 0, 2048, 128, 1, ATTN_F32, t);
        add("prefill D64 [B,H,S,D] f32", 0, 2048, 64, 0, ATTN_F32, t);
        add("prefill D64 [B,S,H,D] f32", 0, 2048, 64, 1, ATTN_F32, t);
        add("prefill D128 [B,H,S,D] K/V f16", 0, 2048, 128, 0, ATTN_F16, t);
        add("prefill D128 [B,H,S,D] K/V bf16", 0, 2048, 128, 0, ATTN_BF16, t);
        add("backward D128 S1024 [B,S,H,D]", 1, 1024, 128, 1, ATTN_F32, t);
        add("sgemm 1024^3", 2, 1024, 0, 0, ATTN_F32, t);
    }
    for (i = 0; i < n_cases; ++i) (void)run(&cases[i], f, h, b, lse);   /* warm-up */
    for (r = 0; r < reps; ++r)                                            /* interleaved */
        for (i = 0; i < n_cases; ++i) cases[i].t[r] = run(&cases[i], f, h, b, lse);
    if (!outdir) outdir = "bench";
    snprintf(path, sizeof path, "%s/results_isa.csv", outdir);
    {
        FILE *probe = fopen(path, "r");
        csv = fopen(path, "a");
        if (!csv) die("cannot write results_isa.csv");
        if (!probe) fprintf(csv, "cpu,kernels,case,threads,median_ms,min_ms,max_ms,gflops,peak_gflops,pct_peak\n");
        else fclose(probe);
    }
    printf("\n  %-34s %7s %10s %10s %8s\n", "case", "threads", "median ms", "GFLOP/s", "% peak");
    for (i = 0; i < n_cases; ++i) {
        const icase *c = &cases[i];
        double mn, mx, med = median_of(c->t, reps, &mn, &mx);
        const double g = c->flops / med * 1e-9, pk = peak[c->threads > 1 ? 1 : 0];
        printf("  %-34s %7d %10.2f %10.1f %7.0f%%\n", c->name, c->threads, med * 1e3, g, 100.0 * g / pk);
        fprintf(csv, "\"%s\",%s,\"%s\",%d,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f\n", cpu, attn_kernels(), c->name, c->threads,
                med * 1e3, mn * 1e3, mx * 1e3, g, pk, 100.0 * g / pk);
    }
    if (fclose(csv) != 0) die("cannot write results_isa.csv");
    printf("  rows appended to %s\n", path);
    for (i = 0; i < 8; ++i) free(f[i]);
    for (i = 0; i < 2; ++i) { free(h[i]); free(b[i]); }
    free(lse);
    return 0;
}
