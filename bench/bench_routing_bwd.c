/* bench/bench_routing_bwd.c - ATTN_ROUTING's attn_backward as a multiple of its attn_forward
   (`make bench` runs it; build alone with `make build/bench_routing_bwd`).

   Shape: batch 1, H 4, D = Dv = 64, f32, shared QK (q passed as k), window 64, n_clusters =
   S / 64 (as bench_sparse's routing row), causal 0 and 1, S 1024 / 4096 / 8192, on 1 thread and
   on 2. Each time is the median of at least 5 calls (repetitions until 0.5 s, at most 15) after
   one warm-up call; forward and backward alternate in the same loop, so both see the same load.
   GFLOP/s: the windows' attention (every window w x w pairs: 4 D flops a pair forward, 10 D
   backward: Q.K^T, dO.V^T, P^T dO, dS^T Q, dS K; causal counts the same, as the kernels compute
   every pair) plus the routing scores (S x clusters dots of 2 D flops, in both), against the
   measured FMA peak of the same thread count (bench_util.h).
   Env: BENCH_QUICK=1 (S up to 4096), BENCH_OUTDIR (default bench): writes
   BENCH_OUTDIR/results_routing_bwd.csv. Exit 2 when an attn_* call fails. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 4
#define D 64
#define W 64

int main(void) {
    static const int lens[3] = { 1024, 4096, 8192 };
    const int quick = env_int("BENCH_QUICK", 0), nlen = quick ? 2 : 3;
    const char *outdir = getenv("BENCH_OUTDIR");
    char path[512];
    double peak[3] = { 0, 0, 0 };
    FILE *csv;
    int li, causal, nt;
    snprintf(path, sizeof path, "%s/results_routing_bwd.csv", outdir && *outdir ? outdir : "bench");
    if (!(csv = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(csv, "S,H,D,window,clusters,causal,threads,fwd_ms,bwd_ms,bwd_over_fwd,fwd_gflops,bwd_gflops,fwd_pct_peak,bwd_pct_peak");
    for (nt = 1; nt <= 2; ++nt) {
        double sp;
        int att;
        peak[nt] = fma_peak_steady(best_fma_isa(), nt, 0.2, &sp, &att);
    }
    printf("ATTN_ROUTING backward vs forward: %s, kernels %s; FMA peak %.0f GFLOP/s (1 thread), %.0f (2)\n", bench_cpu(),
           attn_kernels(), peak[1], peak[2]);
    printf("%6s %6s %7s %3s %10s %10s %8s %9s %9s %7s %7s\n", "S", "causal", "clusters", "thr", "fwd ms", "bwd ms", "bwd/fwd",
           "fwd GF/s", "bwd GF/s", "fwd %pk", "bwd %pk");
    for (li = 0; li < nlen; ++li) {
        const int S = lens[li], nc = S / W;
        const size_t nx = (size_t)S * H * D;
        float *q = (float *)xalloc(sizeof(float) * nx), *v = (float *)xalloc(sizeof(float) * nx);
        float *o = (float *)xalloc(sizeof(float) * nx), *go = (float *)xalloc(sizeof(float) * nx);
        float *dq = (float *)xalloc(sizeof(float) * nx), *dk = (float *)xalloc(sizeof(float) * nx);
        float *dv = (float *)xalloc(sizeof(float) * nx), *cen = (float *)xalloc(sizeof(float) * (size_t)H * nc * D);
        const double fl_route = (double)H * S * nc * 2.0 * D, fl_pairs = (double)H * S * W * D;
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D);
        attn_tensor to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D), tgo = attn_tensor_dense(go, ATTN_F32, 1, S, H, D);
        attn_tensor tdq = attn_tensor_dense(dq, ATTN_F32, 1, S, H, D), tdk = attn_tensor_dense(dk, ATTN_F32, 1, S, H, D);
        attn_tensor tdv = attn_tensor_dense(dv, ATTN_F32, 1, S, H, D);
        fill_rand(q, nx); fill_rand(v, nx); fill_rand(go, nx); fill_rand(cen, (size_t)H * nc * D);
        for (causal = 0; causal <= 1; ++causal)
            for (nt = 1; nt <= 2; ++nt) {
                attn_desc d;
                double tf[15], tb[15], t0, tsum = 0, fmed, bmed, mn, mx, fgf, bgf;
                int r = 0;
                memset(&d, 0, sizeof d);
                d.kind = ATTN_ROUTING; d.causal = causal; d.n_threads = nt;
                d.routing.centroids = cen; d.routing.n_clusters = nc; d.routing.window = W;
                if (attn_forward(&d, tq, tq, tv, to, NULL) != ATTN_OK ||
                    attn_backward(&d, tq, tq, tv, to, tgo, NULL, tdq, tdk, tdv) != ATTN_OK) {
                    fprintf(stderr, "attn_forward / attn_backward failed\n");
                    return 2;
                }
                while (r < 15 && (r < 5 || tsum < 0.5)) {
                    t0 = now_s();
                    attn_forward(&d, tq, tq, tv, to, NULL);
                    tf[r] = now_s() - t0;
                    t0 = now_s();
                    attn_backward(&d, tq, tq, tv, to, tgo, NULL, tdq, tdk, tdv);
                    tb[r] = now_s() - t0;
                    tsum += tf[r] + tb[r];
                    ++r;
                }
                fmed = median_of(tf, r, &mn, &mx);
                bmed = median_of(tb, r, &mn, &mx);
                fgf = (fl_pairs * 4.0 + fl_route) / fmed * 1e-9;
                bgf = (fl_pairs * 10.0 + fl_route) / bmed * 1e-9;
                printf("%6d %6d %7d %3d %10.2f %10.2f %8.2f %9.1f %9.1f %6.1f%% %6.1f%%\n", S, causal, nc, nt, fmed * 1e3, bmed * 1e3,
                       bmed / fmed, fgf, bgf, 100.0 * fgf / peak[nt], 100.0 * bgf / peak[nt]);
                bench_csv_machine(csv);
                fprintf(csv, "%d,%d,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.2f,%.2f,%.2f,%.2f\n", S, H, D, W, nc, causal, nt, fmed * 1e3,
                        bmed * 1e3, bmed / fmed, fgf, bgf, 100.0 * fgf / peak[nt], 100.0 * bgf / peak[nt]);
                fflush(stdout);
            }
        free(q); free(v); free(o); free(go); free(dq); free(dk); free(dv); free(cen);
    }
    fclose(csv);
    printf("wrote %s\n", path);
    return 0;
}
