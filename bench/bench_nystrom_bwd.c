/* bench/bench_nystrom_bwd.c - attn_backward for ATTN_NYSTROM: its time as a multiple of the
   forward's (issue #29), B 1, H 4, D 64, fp32, 64 landmarks, 6 iterations, with and without the
   conv residual (33 taps, dconv computed), 1 and 2 threads, n 1k to 8k; forward and backward
   alternate, median of 7 each (BENCH_QUICK: 5, n up to 4k). Prints a table and writes
   bench/results_nystrom_bwd.csv (BENCH_OUTDIR overrides the directory). */
#define ATTN_IMPLEMENTATION
#include "../attn.h"
#include "bench_util.h"

#define H 4
#define D 64
#define M 64
#define K 33

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0) != 0, reps = quick ? 5 : 7, max_n = quick ? 4096 : 8192;
    const char *outdir = getenv("BENCH_OUTDIR");
    char path[512];
    float *q, *k, *v, *o, *dout, *dq, *dk, *dv, conv[H * K], dconv[H * K];
    int n, th, cv, r, i;
    FILE *f;
    if (!outdir || !*outdir) outdir = "bench";
    printf("attn.h Nystromformer backward / forward: %s, kernels %s; B 1, H %d, D %d, m %d, 6 iterations, fp32, median of %d\n",
           bench_cpu(), attn_kernels(), H, D, M, reps);
    q = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); k = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    v = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); o = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    dout = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); dq = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    dk = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); dv = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    fill_rand(q, (size_t)max_n * H * D); fill_rand(k, (size_t)max_n * H * D); fill_rand(v, (size_t)max_n * H * D);
    fill_rand(dout, (size_t)max_n * H * D);
    for (i = 0; i < H * K; ++i) conv[i] = 0.01f * (float)((i * 37) % 17 - 8);
    snprintf(path, sizeof path, "%s/results_nystrom_bwd.csv", outdir);
    if (!(f = fopen(path, "w"))) die("cannot write the CSV");
    fprintf(f, "cpu,kernels,n,threads,conv,forward_ms,backward_ms,ratio\n");
    printf("%6s %7s %4s %12s %12s %8s\n", "n", "threads", "conv", "forward ms", "backward ms", "bwd/fwd");
    for (n = 1024; n <= max_n; n *= 2)
        for (th = 1; th <= 2; ++th)
            for (cv = 0; cv <= 1; ++cv) {
                const attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, n, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, n, H, D);
                const attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, n, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, n, H, D);
                const attn_tensor tdo = attn_tensor_dense(dout, ATTN_F32, 1, n, H, D);
                const attn_tensor tdq = attn_tensor_dense(dq, ATTN_F32, 1, n, H, D), tdk = attn_tensor_dense(dk, ATTN_F32, 1, n, H, D);
                const attn_tensor tdv = attn_tensor_dense(dv, ATTN_F32, 1, n, H, D);
                double tf[16], tb[16], mf, mb, lo, hi;
                size_t wf = 0, wb = 0;
                void *ws;
                attn_desc d;
                memset(&d, 0, sizeof d);
                d.kind = ATTN_NYSTROM; d.nystrom.landmarks = M; d.n_threads = th;
                if (cv) { d.nystrom.conv = conv; d.nystrom.conv_kernel = K; d.nystrom.dconv = dconv; }
                if (attn_workspace_size(&d, tq, tk, tv, &wf) != ATTN_OK || attn_backward_workspace_size(&d, tq, tk, tv, &wb) != ATTN_OK)
                    die("workspace query");
                ws = xalloc(wf > wb ? wf : wb);   /* the caller's workspace: no allocation timed */
                d.workspace = ws; d.workspace_size = wf > wb ? wf : wb;
                for (r = -1; r < reps; ++r) {   /* r = -1: warm-up */
                    double t0 = now_s(), t1;
                    if (attn_forward(&d, tq, tk, tv, to, NULL) != ATTN_OK) die("forward");
                    t1 = now_s();
                    if (attn_backward(&d, tq, tk, tv, to, tdo, NULL, tdq, tdk, tdv) != ATTN_OK) die("backward");
                    if (r >= 0) { tf[r] = t1 - t0; tb[r] = now_s() - t1; }
                }
                mf = median_of(tf, reps, &lo, &hi); mb = median_of(tb, reps, &lo, &hi);
                printf("%6d %7d %4s %12.2f %12.2f %8.2f\n", n, th, cv ? "33" : "-", 1e3 * mf, 1e3 * mb, mb / mf);
                bench_csv_machine(f);
                fprintf(f, "%d,%d,%d,%.4f,%.4f,%.3f\n", n, th, cv ? K : 0, 1e3 * mf, 1e3 * mb, mb / mf);
                fflush(stdout);
                free(ws);
            }
    fclose(f);
    free(q); free(k); free(v); free(o); free(dout); free(dq); free(dk); free(dv);
    return 0;
}
