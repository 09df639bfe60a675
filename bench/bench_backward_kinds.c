/* bench/bench_backward_kinds.c - every attention kind's attn_backward as a multiple of its own
   attn_forward (issue 29 item 5): the same inputs, B 1, H 4, D = Dv = 64, fp32, seq S (default
   2048; BENCH_SEQ), each kind's usual parameters (below), forward and backward calls alternating
   in one process after a warm-up pair, medians of BENCH_REPS (default 5) calls, on 1 and 2
   threads. The families' own benches (bench_backward, bench_sparse, bench_lowrank, bench_linear,
   bench_bigbird_bwd, bench_routing_bwd, bench_nystrom_bwd) sweep lengths; this one puts every kind
   in one table of one run. Prints the table and writes bench/results_backward_kinds.csv. */
#define ATTN_IMPLEMENTATION
#include "../attn.h"
#include "bench_util.h"

#define H 4
#define D 64

typedef struct kind_case { const char *name; attn_kind kind; int causal, has_lse, saved; } kind_case;   /* saved: nystrom.saved */
static const kind_case cases[] = {
    { "softmax (exact)", ATTN_SOFTMAX, 0, 1, 0 },
    { "softmax (exact), causal", ATTN_SOFTMAX, 1, 1, 0 },
    { "Longformer (w 256 + 1 global)", ATTN_LONGFORMER, 0, 1, 0 },
    { "BigBird (block 64, r 3)", ATTN_BIGBIRD, 0, 1, 0 },
    { "Reformer LSH (bucket 64, 2 rounds)", ATTN_LSH, 0, 1, 0 },
    { "Routing (S/64 clusters, w 64), causal", ATTN_ROUTING, 1, 0, 0 },
    { "linear (elu+1)", ATTN_LINEAR, 0, 0, 0 },
    { "linear (elu+1), causal", ATTN_LINEAR, 1, 0, 0 },
    { "cosFormer", ATTN_COSFORMER, 0, 0, 0 },
    { "cosFormer, causal", ATTN_COSFORMER, 1, 0, 0 },
    { "Performer (m 256)", ATTN_PERFORMER, 0, 0, 0 },
    { "Linformer (k 256)", ATTN_LINFORMER, 0, 1, 0 },
    { "Nystromformer (m 64)", ATTN_NYSTROM, 0, 0, 0 },
    { "Nystromformer (m 64), saved B, F, B V", ATTN_NYSTROM, 0, 0, 1 },
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

int main(void) {
    const int S = env_int("BENCH_SEQ", 2048), reps = ATTN__MAX(3, ATTN__MIN(env_int("BENCH_REPS", 5), 31));
    const size_t n = (size_t)S * H * D;
    float *q = (float *)xalloc(n * 4), *k = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
    float *dout = (float *)xalloc(n * 4), *dq = (float *)xalloc(n * 4), *dk = (float *)xalloc(n * 4), *dv = (float *)xalloc(n * 4);
    float *lse = (float *)xalloc((size_t)S * H * 4), *cent = (float *)xalloc((size_t)H * (S / 64 + 1) * D * 4);
    float *ef = (float *)xalloc((size_t)H * 256 * S * 4);
    const size_t saved_bytes = sizeof(float) * (size_t)H * 64 * (2 * (size_t)S + D);
    float *saved = (float *)xalloc(saved_bytes);
    const char *only = getenv("BENCH_ONLY");   /* a substring of the kind names: those rows only, no CSV */
    FILE *csv = only && *only ? NULL : fopen("bench/results_backward_kinds.csv", "w");
    int c, t, r;
    fill_rand(q, n); fill_rand(k, n); fill_rand(v, n); fill_rand(dout, n);
    fill_rand(cent, (size_t)H * (S / 64 + 1) * D);
    fill_rand(ef, (size_t)H * 256 * S);
    { size_t i; for (i = 0; i < (size_t)H * 256 * S; ++i) ef[i] *= 0.05f; }
    printf("CPU: %s, kernels %s; B 1, H %d, D %d, S %d, fp32; medians of %d\n", bench_cpu(), attn_kernels(), H, D, S, reps);
    printf("%-40s %12s %12s %8s %12s %12s %8s\n", "kind", "fwd 1t ms", "bwd 1t ms", "bwd/fwd", "fwd 2t ms", "bwd 2t ms", "bwd/fwd");
    if (csv) bench_csv_header(csv, "kind,seq,threads,forward_ms,backward_ms,ratio");
    for (c = 0; c < N_CASES; ++c) {
        const kind_case *kc = &cases[c];
        double res[2][2];
        if (only && *only && !strstr(kc->name, only)) continue;
        for (t = 1; t <= 2; ++t) {
            attn_desc d;
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, S, H, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D);
            attn_tensor tdo = attn_tensor_dense(dout, ATTN_F32, 1, S, H, D), tdq = attn_tensor_dense(dq, ATTN_F32, 1, S, H, D);
            attn_tensor tdk = attn_tensor_dense(dk, ATTN_F32, 1, S, H, D), tdv = attn_tensor_dense(dv, ATTN_F32, 1, S, H, D);
            float *l = kc->has_lse ? lse : NULL;
            double tf[31], tb[31];
            memset(&d, 0, sizeof d);
            d.kind = kc->kind; d.causal = kc->causal; d.n_threads = t;
            switch (kc->kind) {
            case ATTN_LONGFORMER: d.window_left = d.window_right = 128; d.global_tokens = 1; break;
            case ATTN_BIGBIRD: d.bigbird.block = 64; d.bigbird.random_blocks = 3; d.bigbird.seed = 1; break;
            case ATTN_LSH: d.lsh.bucket_size = 64; d.lsh.n_hashes = 2; d.lsh.seed = 1; break;
            case ATTN_ROUTING: d.routing.centroids = cent; d.routing.n_clusters = S / 64; d.routing.window = 64; break;
            case ATTN_PERFORMER: d.performer.features = 256; d.performer.seed = 1; break;
            case ATTN_LINFORMER: d.linformer.e = ef; d.linformer.f = ef; d.linformer.k = 256; d.linformer.n = S; break;
            case ATTN_NYSTROM:
                d.nystrom.landmarks = 64;
                if (kc->saved) { d.nystrom.saved = saved; d.nystrom.saved_size = saved_bytes; }   /* training: the forward's B, F, B V */
                break;
            default: break;
            }
            if (attn_forward(&d, tq, tk, tv, to, l) != ATTN_OK) { printf("%s: forward failed\n", kc->name); exit(1); }
            if (attn_backward(&d, tq, tk, tv, to, tdo, l, tdq, tdk, tdv) != ATTN_OK) { printf("%s: backward failed\n", kc->name); exit(1); }
            for (r = 0; r < reps; ++r) {
                double t0 = now_s();
                attn_forward(&d, tq, tk, tv, to, l);
                tf[r] = now_s() - t0;
                t0 = now_s();
                attn_backward(&d, tq, tk, tv, to, tdo, l, tdq, tdk, tdv);
                tb[r] = now_s() - t0;
            }
            res[t - 1][0] = median_of(tf, reps, NULL, NULL) * 1e3;
            res[t - 1][1] = median_of(tb, reps, NULL, NULL) * 1e3;
            if (csv) {
                bench_csv_machine(csv);
                fprintf(csv, "\"%s\",%d,%d,%.3f,%.3f,%.3f\n", kc->name, S, t, res[t - 1][0], res[t - 1][1], res[t - 1][1] / res[t - 1][0]);
            }
        }
        printf("%-40s %12.2f %12.2f %7.2fx %12.2f %12.2f %7.2fx\n", kc->name, res[0][0], res[0][1], res[0][1] / res[0][0],
               res[1][0], res[1][1], res[1][1] / res[1][0]);
    }
    if (csv) fclose(csv);
    return 0;
}
