/* bench/bench_amx.c - the bf16 tile kernels of attn.h 3.12 (`make build/bench_amx`; part of
   `make bench`, never of `make test`).

   Build:  cc -std=c99 -O3 -march=native -Wall -Wextra -I. bench/bench_amx.c -o build/bench_amx -lm -pthread
   Run:    ./build/bench_amx              about two minutes on a 2-core AVX-512 machine
           BENCH_QUICK=1 ./build/bench_amx   S <= 2048, a few seconds
           BENCH_OUTDIR=<dir>             where results_amx.csv goes (default: bench)
   Exit:   0 ok; 1 a bf16-kernel result left its accuracy bound; 2 attn_forward failed.

   What it measures (2 threads unless said; one warm-up, then the median of 7 runs, 5 at
   S = 4096, 3 at S = 8192, the three prefill variants of a case timed in turn so a busy
   machine slows them alike):
     peaks   fp32 FMA (bench_util.h: 16 zmm FMA chains), AVX512-BF16 (16 zmm vdpbf16ps
             chains, 64 flops each) and AMX (tdpbf16ps on 4 accumulator tiles, 16384 flops
             each) on 1 and 2 threads; the AMX loop runs only where attn_bf16_kernels() says
             "amx" (CPU, OS permission), the others where the CPU has them.
     prefill B=1, H=8, D in {64, 128}, S in {1024, 2048, 4096, 8192}, causal and not: bf16
             q/k/v on the bf16 kernels (attn_desc.bf16_kernels = 0), the same bf16 inputs on the fp32
             kernels (bf16_kernels = 2), and fp32 inputs; GFLOP/s (4 S^2 D H, causal counts the
             S(S+1)/2 unmasked pairs), % of the FMA peak and of the bf16 peak of the kernels in
             use, and the ratio bf16 kernels / fp32 inputs (issue 3 asks >= 1.5x). Every bf16
             kernel result is checked against the fp32-kernel one: |diff| <= 2^-8 max|v|.
     decode  Sq=1, Hq=32, Hkv=8, D=128, KV 16k and 64k bf16: bf16_kernels 0 vs 2, which must be the
             same path (decoding never takes the bf16 tile kernels): GB/s of K+V read. */
#define _POSIX_C_SOURCE 200809L
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wunused-function"   /* bench_util.h serves several programs */
#pragma GCC diagnostic ignored "-Wunused-variable"
#endif
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#if defined(__x86_64__) && ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define BA_X86 1
#include <immintrin.h>

/* 16 independent vdpbf16ps chains: 16 x 64 flops per iteration */
__attribute__((target("avx512f,avx512bf16"))) static float bf16_loop(long iters) {
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x33d633d6);
    __m512 c0 = _mm512_setzero_ps(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0, c8 = c0, c9 = c0,
           c10 = c0, c11 = c0, c12 = c0, c13 = c0, c14 = c0, c15 = c0;
    long i;
    for (i = 0; i < iters; ++i) {
        c0 = _mm512_dpbf16_ps(c0, a, b); c1 = _mm512_dpbf16_ps(c1, a, b); c2 = _mm512_dpbf16_ps(c2, a, b);
        c3 = _mm512_dpbf16_ps(c3, a, b); c4 = _mm512_dpbf16_ps(c4, a, b); c5 = _mm512_dpbf16_ps(c5, a, b);
        c6 = _mm512_dpbf16_ps(c6, a, b); c7 = _mm512_dpbf16_ps(c7, a, b); c8 = _mm512_dpbf16_ps(c8, a, b);
        c9 = _mm512_dpbf16_ps(c9, a, b); c10 = _mm512_dpbf16_ps(c10, a, b); c11 = _mm512_dpbf16_ps(c11, a, b);
        c12 = _mm512_dpbf16_ps(c12, a, b); c13 = _mm512_dpbf16_ps(c13, a, b); c14 = _mm512_dpbf16_ps(c14, a, b);
        c15 = _mm512_dpbf16_ps(c15, a, b);
    }
    c0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)), _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    c8 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)), _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15)));
    return _mm512_reduce_add_ps(_mm512_add_ps(c0, c8));
}

#if defined(__linux__)
/* tdpbf16ps into 4 accumulator tiles from 4 operand tiles: 4 x 16 x 16 x 32 x 2 flops per
   iteration. Palette 1, tmm0-7 16 rows x 64 bytes (as attn.h configures them). */
__attribute__((target("amx-tile,amx-bf16"))) static float amx_loop(long iters) {
    unsigned char cfg[64];
    static const unsigned short ops[4][16][32];   /* zeros: a product loop does not care */
    float out[16][16];
    long i;
    int t;
    memset(cfg, 0, sizeof cfg);
    cfg[0] = 1;
    for (t = 0; t < 8; ++t) { cfg[16 + 2 * t] = 64; cfg[48 + t] = 16; }
    _tile_loadconfig(cfg);
    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
    _tile_loadd(4, ops[0], 64); _tile_loadd(5, ops[1], 64); _tile_loadd(6, ops[2], 64); _tile_loadd(7, ops[3], 64);
    for (i = 0; i < iters; ++i) {
        _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7); _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, out, 64);
    _tile_release();
    return out[0][0];
}
#endif
#endif

enum { PK_BF16 = 0, PK_AMX = 1 };
typedef struct pk_job { int kind; long iters; float sink[BENCH_MAX_THREADS]; } pk_job;
static void pk_worker(void *arg, int tid, int nt) {
    pk_job *j = (pk_job *)arg;
    (void)nt;
#if defined(BA_X86)
#if defined(__linux__)
    if (j->kind == PK_AMX) { j->sink[tid] = amx_loop(j->iters); return; }
#endif
    j->sink[tid] = bf16_loop(j->iters);
#else
    j->sink[tid] = 0.0f; (void)j;
#endif
}
static double pk_flops(int kind) { return kind == PK_AMX ? 4.0 * 16 * 16 * 32 * 2 : 16.0 * 64; }

/* GFLOP/s of a product loop on nt threads, median of 5 runs of ~0.3 s */
static double product_peak(int kind, int nt) {
    static pk_job job;
    double t, g[5], mn, mx;
    long iters = 1000;
    int r;
    job.kind = kind;
    for (;;) {
        job.iters = iters;
        t = team_run(1, pk_worker, &job);
        if (t > 0.02 || iters > 1000000000L) break;
        iters *= 4;
    }
    job.iters = (long)((double)iters * 0.3 / t) + 1;
    team_run(nt, pk_worker, &job);
    for (r = 0; r < 5; ++r) g[r] = pk_flops(kind) * (double)job.iters * nt / team_run(nt, pk_worker, &job) * 1e-9;
    return median_of(g, 5, &mn, &mx);
}

/* median seconds of attn_forward over reps runs after one warm-up */
static double time_fwd(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, int reps) {
    double t[16], mn, mx;
    int r;
    if (attn_forward(d, q, k, v, o, NULL) != ATTN_OK) { fprintf(stderr, "attn_forward failed\n"); exit(2); }
    for (r = 0; r < reps && r < 16; ++r) {
        const double t0 = now_s();
        attn_forward(d, q, k, v, o, NULL);
        t[r] = now_s() - t0;
    }
    return median_of(t, reps, &mn, &mx);
}

/* The three prefill variants timed in turn, reps rounds (so a busy machine slows all three
   alike), after one warm-up each; median seconds of each into t[3]. */
typedef struct pf_run { attn_desc d; int bf16_kernels; attn_tensor q, k, v, o; } pf_run;
static void time_interleaved(pf_run *runs, int reps, double *t) {
    double s[3][16], mn, mx;
    int r, m;
    for (m = 0; m < 3; ++m) {
        runs[m].d.bf16_kernels = runs[m].bf16_kernels;
        if (attn_forward(&runs[m].d, runs[m].q, runs[m].k, runs[m].v, runs[m].o, NULL) != ATTN_OK) {
            fprintf(stderr, "attn_forward failed\n"); exit(2);
        }
    }
    for (r = 0; r < reps && r < 16; ++r)
        for (m = 0; m < 3; ++m) {
            const double t0 = now_s();
            attn_forward(&runs[m].d, runs[m].q, runs[m].k, runs[m].v, runs[m].o, NULL);
            s[m][r] = now_s() - t0;
        }
    for (m = 0; m < 3; ++m) t[m] = median_of(s[m], reps, &mn, &mx);
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), nt = 2;
    const char *kn = attn_bf16_kernels(), *outdir = getenv("BENCH_OUTDIR");
    static const int Ss[] = { 1024, 2048, 4096, 8192 }, Ds[] = { 64, 128 };
    double fma1, fma2, bf1 = 0, bf2 = 0, amx1 = 0, amx2 = 0, sp, kpeak;
    int att, si, di, causal, bad = 0;
    char path[512], cpu[256];
    FILE *csv;
    cpu_model(cpu, sizeof cpu);
    printf("attn.h bf16 tile kernels bench - %s, %d online CPUs\n", cpu, online_cpus());
    printf("bf16 kernels in use: %s;  fp32 kernels: %s\n", kn, attn_kernels());
#if defined(__AVX512F__)
    fma1 = fma_peak_steady(ISA_ZMM, 1, 0.3, &sp, &att); fma2 = fma_peak_steady(ISA_ZMM, nt, 0.3, &sp, &att);
#else
    fma1 = fma_peak_steady(ISA_PORTABLE, 1, 0.3, &sp, &att); fma2 = fma_peak_steady(ISA_PORTABLE, nt, 0.3, &sp, &att);
#endif
    if (strcmp(kn, "none") != 0) { bf1 = product_peak(PK_BF16, 1); bf2 = product_peak(PK_BF16, nt); }
    if (strcmp(kn, "amx") == 0) { amx1 = product_peak(PK_AMX, 1); amx2 = product_peak(PK_AMX, nt); }
    printf("peaks (GFLOP/s, 1 / %d threads): fp32 FMA %.0f / %.0f   AVX512-BF16 %s%.0f / %.0f   AMX %s%.0f / %.0f\n",
           nt, fma1, fma2, bf1 > 0 ? "" : "n/a ", bf1, bf2, amx2 > 0 ? "" : "n/a (no AMX here) ", amx1, amx2);
    kpeak = amx2 > 0 ? amx2 : bf2;
    snprintf(path, sizeof path, "%s/results_amx.csv", outdir ? outdir : "bench");
    csv = fopen(path, "w");
    if (!csv) { fprintf(stderr, "cannot write %s\n", path); return 3; }
    bench_csv_header(csv, "case,S,D,causal,threads,bf16_kernels,gflops_bf16k,gflops_bf16_fp32k,gflops_f32,pct_fma_peak,pct_bf16_peak,ratio_vs_f32,fma_peak,bf16_peak,amx_peak,max_diff_over_vmax");
    printf("\nprefill B=1 H=8, %d threads, GFLOP/s (median)\n", nt);
    printf("%6s %4s %6s | %10s %8s %8s | %12s %10s | %8s | %9s\n", "S", "D", "causal", "bf16 kern", "%FMA", "%bf16pk",
           "bf16 fp32k", "f32 in", "ratio", "diff/vmax");
    for (di = 0; di < 2; ++di)
        for (si = 0; si < 4; ++si)
            for (causal = 0; causal <= 1; ++causal) {
                const int S = Ss[si], D = Ds[di], H = 8, reps = S >= 8192 ? 3 : S >= 4096 ? 5 : 7;
                const size_t n = (size_t)S * H * D;
                float *f = (float *)xalloc(3 * n * sizeof(float)), *o = (float *)xalloc(n * sizeof(float));
                float *o2 = (float *)xalloc(n * sizeof(float)), *o3 = (float *)xalloc(n * sizeof(float));
                uint16_t *b = (uint16_t *)xalloc(3 * n * sizeof(uint16_t));
                attn_tensor qf, kf, vf, qb, kb, vb, to, to2, to3;
                attn_desc d;
                double flops, tk, tf, t32, g, vmax = 0, diff = 0;
                size_t i;
                if (quick && S > 2048) { free(f); free(o); free(o2); free(o3); free(b); continue; }
                fill_rand(f, 3 * n);
                convert_from_f32(b, ATTN_BF16, f, 3 * n);
                for (i = 0; i < 3 * n; ++i) f[i] = bf16_to_f32(b[i]);   /* the same values in both */
                qf = attn_tensor_dense(f, ATTN_F32, 1, S, H, D); kf = attn_tensor_dense(f + n, ATTN_F32, 1, S, H, D);
                vf = attn_tensor_dense(f + 2 * n, ATTN_F32, 1, S, H, D);
                qb = attn_tensor_dense(b, ATTN_BF16, 1, S, H, D); kb = attn_tensor_dense(b + n, ATTN_BF16, 1, S, H, D);
                vb = attn_tensor_dense(b + 2 * n, ATTN_BF16, 1, S, H, D);
                to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D); to2 = attn_tensor_dense(o2, ATTN_F32, 1, S, H, D);
                to3 = attn_tensor_dense(o3, ATTN_F32, 1, S, H, D);
                memset(&d, 0, sizeof d);
                d.causal = causal; d.n_threads = nt;
                {
                    pf_run runs[3];
                    double tt[3];
                    runs[0].d = d; runs[0].bf16_kernels = 0; runs[0].q = qb; runs[0].k = kb; runs[0].v = vb; runs[0].o = to;
                    runs[1].d = d; runs[1].bf16_kernels = 2; runs[1].q = qb; runs[1].k = kb; runs[1].v = vb; runs[1].o = to2;
                    runs[2].d = d; runs[2].bf16_kernels = 2; runs[2].q = qf; runs[2].k = kf; runs[2].v = vf; runs[2].o = to3;
                    time_interleaved(runs, reps, tt);
                    tk = tt[0]; tf = tt[1]; t32 = tt[2];
                }
                for (i = 0; i < n; ++i) { diff = fabs(o[i] - o2[i]) > diff ? fabs(o[i] - o2[i]) : diff; }
                for (i = 2 * n; i < 3 * n; ++i) vmax = fabs(f[i]) > vmax ? fabs(f[i]) : vmax;
                if (!(diff <= ldexp(vmax, -8))) bad = 1;
                flops = 4.0 * D * H * (causal ? (double)S * (S + 1) / 2 : (double)S * S);
                g = flops / tk * 1e-9;
                printf("%6d %4d %6d | %10.0f %7.0f%% %7.0f%% | %12.0f %10.0f | %7.2fx | %9.2e%s\n", S, D, causal, g,
                       100 * g / fma2, kpeak > 0 ? 100 * g / kpeak : 0.0, flops / tf * 1e-9, flops / t32 * 1e-9, t32 / tk,
                       diff / vmax, diff <= ldexp(vmax, -8) ? "" : "  OUT OF BOUND");
                bench_csv_machine(csv);
                fprintf(csv, "prefill,%d,%d,%d,%d,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.3f,%.1f,%.1f,%.1f,%.3e\n", S, D, causal, nt, kn, g,
                        flops / tf * 1e-9, flops / t32 * 1e-9, 100 * g / fma2, kpeak > 0 ? 100 * g / kpeak : 0.0, t32 / tk,
                        fma2, bf2, amx2, diff / vmax);
                fflush(stdout);
                free(f); free(o); free(o2); free(o3); free(b);
            }
    {   /* decode stays on the fp32 narrow path whatever bf16_kernels says */
        static const int Ls[] = { 16384, 65536 };
        int li;
        printf("\ndecode Sq=1 Hq=32 Hkv=8 D=128 bf16 K/V, %d threads, GB/s of K+V (median of 9)\n", nt);
        for (li = 0; li < (quick ? 1 : 2); ++li) {
            const int L = Ls[li], Hq = 32, Hkv = 8, D = 128;
            const size_t nkv = (size_t)L * Hkv * D;
            uint16_t *kv = (uint16_t *)xalloc(2 * nkv * sizeof(uint16_t)), *q = (uint16_t *)xalloc((size_t)Hq * D * 2);
            float *o = (float *)xalloc((size_t)Hq * D * sizeof(float)), *tmp = (float *)xalloc(2 * nkv * sizeof(float));
            attn_desc d;
            double t0, t2, bytes = 2.0 * nkv * 2;
            fill_rand(tmp, 2 * nkv); convert_from_f32(kv, ATTN_BF16, tmp, 2 * nkv);
            fill_rand(tmp, (size_t)Hq * D); convert_from_f32(q, ATTN_BF16, tmp, (size_t)Hq * D);
            memset(&d, 0, sizeof d);
            d.n_threads = nt;
            d.bf16_kernels = 0;
            t0 = time_fwd(&d, attn_tensor_dense(q, ATTN_BF16, 1, 1, Hq, D), attn_tensor_dense(kv, ATTN_BF16, 1, L, Hkv, D),
                          attn_tensor_dense(kv + nkv, ATTN_BF16, 1, L, Hkv, D), attn_tensor_dense(o, ATTN_F32, 1, 1, Hq, D), 9);
            d.bf16_kernels = 2;
            t2 = time_fwd(&d, attn_tensor_dense(q, ATTN_BF16, 1, 1, Hq, D), attn_tensor_dense(kv, ATTN_BF16, 1, L, Hkv, D),
                          attn_tensor_dense(kv + nkv, ATTN_BF16, 1, L, Hkv, D), attn_tensor_dense(o, ATTN_F32, 1, 1, Hq, D), 9);
            printf("  KV %6d: bf16_kernels=0 %.1f GB/s, bf16_kernels=2 %.1f GB/s (same path; %.1f MiB of K+V)\n", L, bytes / t0 * 1e-9,
                   bytes / t2 * 1e-9, bytes / 1048576.0);
            bench_csv_machine(csv);
            fprintf(csv, "decode,%d,%d,0,%d,%s,%.2f,%.2f,,,,%.3f,,,,\n", L, D, nt, kn, bytes / t0 * 1e-9, bytes / t2 * 1e-9, t2 / t0);
            free(kv); free(q); free(o); free(tmp);
        }
    }
    fclose(csv);
    printf("\nwrote %s%s\n", path, bad ? "; a bf16-kernel result left its accuracy bound" : "");
    return bad ? 1 : 0;
}
