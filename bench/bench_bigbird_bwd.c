/* bench/bench_bigbird_bwd.c - ATTN_BIGBIRD's attn_backward beside its attn_forward (`make bench`
   runs it; build alone with `make build/bench_bigbird_bwd`).

   Shapes: batch 1, H 4 heads (GQA 4/2 in one row), D = Dv = 64, fp32, block 64, 3 random
   blocks, seq 1024..8192; ATTN_BIGBIRD_UNION (the default) and HF_EVAL (block 0 walked 1 + r
   times, HF's eval mode), and one padded row (seqlens 3/4 of seq, HF's -10000 on the rest).
   For each shape and n_threads 1 and 2: forward and backward interleaved, one warm-up each, then
   BENCH_REPS (default 7) of each; medians; the ratio backward / forward. GFLOP/s count 4 D per
   visible (query, key) pair for the forward and 10 D for the backward (FlashAttention-2's five
   products, which attn.h's one-pass backward runs). % of the measured all-thread FMA peak
   (bench_util.h).
   Env: BENCH_QUICK=1 (seq up to 4096, 5 reps), BENCH_REPS, BENCH_OUTDIR (default bench).
   Writes BENCH_OUTDIR/results_bigbird_bwd.csv. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define D 64
#define BLK 64
#define R 3

/* (query, key) pairs walked: the seeded draw never repeats a window or global block, so UNION
   and HF_EVAL (block 0 walked r more times) both walk the window, global and r more blocks */
static double pairs_of(int S, int H, const int *lens) {
    const int nb = S / BLK, Lq = lens ? lens[0] : S;
    double p = 0.0;
    int i;
    for (i = 0; i < nb && i * BLK < Lq; ++i) {
        const int rows = (i + 1) * BLK <= Lq ? BLK : Lq - i * BLK;
        const int blocks = i == 0 || i == nb - 1 ? nb : 5 - (i - 1 == 0) - (i + 1 == nb - 1) + R;
        p += (double)rows * blocks * BLK;
    }
    return p * H;
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), reps = env_int("BENCH_REPS", quick ? 5 : 7);
    static const int lens_all[4] = { 1024, 2048, 4096, 8192 };
    const int n_len = quick ? 3 : 4, isa = best_fma_isa();
    const char *outdir = getenv("BENCH_OUTDIR");
    char path[512];
    double peak1, peak2, sp;
    int att, li, row, nt;
    FILE *csv;
    snprintf(path, sizeof path, "%s/results_bigbird_bwd.csv", outdir && *outdir ? outdir : "bench");
    printf("bench_bigbird_bwd: %s, kernels %s\n", bench_cpu(), attn_kernels());
    peak1 = fma_peak_steady(isa, 1, 0.2, &sp, &att);
    peak2 = fma_peak_steady(isa, 2, 0.2, &sp, &att);
    printf("FMA peak: 1 thread %.1f GFLOP/s, 2 threads %.1f GFLOP/s\n", peak1, peak2);
    if (!(csv = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(csv, "seq,heads,kv_heads,mode,padded,threads,fwd_ms,bwd_ms,ratio,bwd_gflops,bwd_pct_peak");
    printf("%6s %5s %-9s %3s %2s %10s %10s %6s %9s %6s\n", "seq", "H/Hkv", "mode", "pad", "nt", "fwd ms", "bwd ms", "ratio",
           "bwd GF/s", "%peak");
    for (li = 0; li < n_len; ++li)
        for (row = 0; row < 4; ++row) {
            const int S = lens_all[li], Hq = 4, Hkv = row == 3 ? 2 : 4, pad = row == 2;
            const int mult = row == 1 ? ATTN_BIGBIRD_HF_EVAL : ATTN_BIGBIRD_UNION;
            const size_t nq = (size_t)S * Hq * D, nk = (size_t)S * Hkv * D;
            float *q = (float *)xalloc(nq * 4), *k = (float *)xalloc(nk * 4), *v = (float *)xalloc(nk * 4);
            float *o = (float *)xalloc(nq * 4), *dout = (float *)xalloc(nq * 4), *lse = (float *)xalloc((size_t)Hq * S * 4);
            float *dq = (float *)xalloc(nq * 4), *dk = (float *)xalloc(nk * 4), *dv = (float *)xalloc(nk * 4);
            int lens[1];
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, Hq, D), tk = attn_tensor_dense(k, ATTN_F32, 1, S, Hkv, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, S, Hkv, D), to = attn_tensor_dense(o, ATTN_F32, 1, S, Hq, D);
            attn_tensor tdo = attn_tensor_dense(dout, ATTN_F32, 1, S, Hq, D), tdq = attn_tensor_dense(dq, ATTN_F32, 1, S, Hq, D);
            attn_tensor tdk = attn_tensor_dense(dk, ATTN_F32, 1, S, Hkv, D), tdv = attn_tensor_dense(dv, ATTN_F32, 1, S, Hkv, D);
            fill_rand(q, nq); fill_rand(k, nk); fill_rand(v, nk); fill_rand(dout, nq);
            lens[0] = S / 4 * 3;
            for (nt = 1; nt <= 2; ++nt) {
                attn_desc d;
                double tf[64], tb[64], mf, mb, flops;
                int i;
                memset(&d, 0, sizeof d);
                d.kind = ATTN_BIGBIRD; d.bigbird.block = BLK; d.bigbird.random_blocks = R; d.bigbird.seed = 1;
                d.bigbird.multiplicity = mult; d.n_threads = nt;
                if (pad) d.seqlens_q = d.seqlens_k = lens;
                if (attn_forward(&d, tq, tk, tv, to, lse) != ATTN_OK ||
                    attn_backward(&d, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv) != ATTN_OK) {
                    fprintf(stderr, "bench_bigbird_bwd: an attn_* call failed\n");
                    return 2;
                }
                for (i = 0; i < reps && i < 64; ++i) {
                    double t0 = now_s();
                    attn_forward(&d, tq, tk, tv, to, lse);
                    tf[i] = now_s() - t0;
                    t0 = now_s();
                    attn_backward(&d, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv);
                    tb[i] = now_s() - t0;
                }
                mf = median_of(tf, reps, NULL, NULL); mb = median_of(tb, reps, NULL, NULL);
                flops = 10.0 * D * pairs_of(S, Hq, pad ? lens : NULL);
                printf("%6d %2d/%-2d %-9s %3d %2d %10.2f %10.2f %6.2f %9.1f %5.1f%%\n", S, Hq, Hkv,
                       mult == ATTN_BIGBIRD_UNION ? "union" : "hf_eval", pad, nt, mf * 1e3, mb * 1e3, mb / mf, flops / mb * 1e-9,
                       100.0 * flops / mb * 1e-9 / (nt == 1 ? peak1 : peak2));
                bench_csv_machine(csv);
                fprintf(csv, "%d,%d,%d,%s,%d,%d,%.3f,%.3f,%.3f,%.2f,%.1f\n", S, Hq, Hkv, mult == ATTN_BIGBIRD_UNION ? "union" : "hf_eval",
                        pad, nt, mf * 1e3, mb * 1e3, mb / mf, flops / mb * 1e-9, 100.0 * flops / mb * 1e-9 / (nt == 1 ? peak1 : peak2));
                fflush(stdout);
            }
            free(q); free(k); free(v); free(o); free(dout); free(lse); free(dq); free(dk); free(dv);
        }
    fclose(csv);
    printf("wrote %s\n", path);
    return 0;
}
