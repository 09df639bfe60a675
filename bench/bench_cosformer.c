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

static attn_pool *g_pool;
static int g_reps;

/* executed flops of the chunked kernel (ATTN__LIN_ROWS-row chunks, whole-chunk products) */
static double linear_flops(int causal, int L) {
    double per = 2.0 * F * D + 2.0 * F * D + 2.0 * F;       /* absorb + phi(Q) S + den */
    if (causal) per += 2.0 * CHUNK * F + 2.0 * CHUNK * D;    /* A = phi(Q) phi(K)^T, A V */
    return per * L * H;
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
                ems = bench_time_forward(&d, tq, tk, tv, te, g_reps, &elo, &ehi);
            }
            d.kind = ATTN_COSFORMER;
            ms = bench_time_forward(&d, tq, tk, tv, to, g_reps, &lo, &hi);
            if (L <= Lexact) diff = bench_max_norm_diff(o, oe, (size_t)L * H * D);
            bench_add_point("cosformer", causal, L, ms, lo, hi, linear_flops(causal, L), m.peak_all, diff);
            if (L <= Lexact)
                bench_add_point("exact", causal, L, ems, elo, ehi, (causal ? 2.0 : 4.0) * L * (double)L * D * H, m.peak_all, 0.0);
        }

    printf("2. the naive recurrence (plain C, 1 thread), causal, L %d\n", Lnaive);
    {
        float *S = (float *)xalloc(sizeof(float) * F * D), *z = (float *)xalloc(sizeof(float) * F);
        float *on = (float *)xalloc((size_t)Lnaive * H * D * 4);
        double t0 = now_s(), nms;
        naive_causal(q, k, v, on, Lnaive, S, z);
        nms = (now_s() - t0) * 1e3;
        bench_add_point("naive", 1, Lnaive, nms, nms, nms, 4.0 * F * D * (double)Lnaive * H, m.peak_1t, 0.0);
        {
            attn_desc d;
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, Lnaive, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, Lnaive, H, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, Lnaive, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, Lnaive, H, D);
            memset(&d, 0, sizeof d);
            d.kind = ATTN_COSFORMER; d.causal = 1;
            attn_forward(&d, tq, tk, tv, to, NULL);
            bench_points[bench_n_points - 1].err = bench_max_norm_diff(o, on, (size_t)Lnaive * H * D);
            printf("  naive vs attn.h: max-norm difference %.2e; attn.h is %.1fx faster\n", bench_points[bench_n_points - 1].err,
                   nms / bench_ms_of("cosformer", 1, Lnaive));
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
        bench_add_point("step", 1, 1, us * 1e-3, lo * 1e3, hi * 1e3, (4.0 * F * D + 2.0 * F) * H, m.peak_all, 0.0);
        free(sbuf);
    }

    for (causal = 0; causal <= 1; ++causal)
        printf("%s: exponent cosformer %.2f (L >= 4k), exact %.2f; crossover: cosformer faster from L = %d\n",
               causal ? "causal" : "non-causal", bench_exponent("cosformer", causal, 4096), bench_exponent("exact", causal, 4096),
               bench_crossover("cosformer", causal));
    snprintf(path, sizeof path, "%s/results_cosformer.csv", outdir);
    bench_write_points_csv(path, cpu);
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/chart_cosformer.svg", outdir);
    bench_write_scaling_svg(path, "cosFormer vs exact attention: time per call, B 1, H 8, D 64, fp32", cpu, "cosformer");
    printf("wrote %s\n", path);
    if (g_pool) attn_pool_destroy(g_pool);
    free(q); free(k); free(v); free(o); free(oe);
    return 0;
}
