/* bench/bench_busy.c - small calls with one core busy elsewhere (issue #33, item 4).
   Exact softmax and linear attention at L 512, H 4, D 64, causal (the sizes `make run` reports),
   one thread and two threads (the default: the shared pool), interleaved call by call, medians
   of BENCH_REPS (default 61) calls. Prints the medians and the 2-thread / 1-thread ratio. Run it
   quiet and with a spin loop pinned to one CPU, e.g.
       taskset -c 1 sh -c 'while :; do :; done' & ./build/bench_busy; kill $!
   A two-thread call should then cost about its one-thread time (not a scheduler time slice). */
#define ATTN_IMPLEMENTATION
#include "../attn.h"
#include "bench_util.h"

#define L 512
#define H 4
#define D 64
#define MAX_REPS 1001

static float *buf[4];

static void call(attn_kind kind, int n_threads) {
    attn_desc d;
    attn_tensor t[4];
    int i;
    memset(&d, 0, sizeof d);
    d.kind = kind; d.causal = 1; d.n_threads = n_threads;
    for (i = 0; i < 4; ++i) t[i] = attn_tensor_dense(buf[i], ATTN_F32, 1, L, H, D);
    if (attn_forward(&d, t[0], t[1], t[2], t[3], NULL) != ATTN_OK) die("attn_forward failed");
}

int main(void) {
    static const attn_kind kinds[2] = { ATTN_SOFTMAX, ATTN_LINEAR };
    static const char *names[2] = { "softmax", "linear" };
    static double t[2][2][MAX_REPS];
    int reps = env_int("BENCH_REPS", 61), r, k, m;
    if (reps > MAX_REPS) reps = MAX_REPS;
    if (reps < 3) reps = 3;
    for (k = 0; k < 4; ++k) { buf[k] = (float *)xalloc((size_t)L * H * D * sizeof(float)); fill_rand(buf[k], (size_t)L * H * D); }
    for (k = 0; k < 2; ++k) for (m = 0; m < 2; ++m) { call(kinds[k], m + 1); call(kinds[k], m + 1); }   /* warm */
    for (r = 0; r < reps; ++r)
        for (k = 0; k < 2; ++k)
            for (m = 0; m < 2; ++m) {
                double t0 = now_s();
                call(kinds[k], m + 1);
                t[k][m][r] = now_s() - t0;
            }
    printf("CPU: %s, kernels %s, L %d H %d D %d causal, medians of %d calls (us)\n", bench_cpu(), attn_kernels(), L, H, D, reps);
    for (k = 0; k < 2; ++k) {
        double med[2];
        for (m = 0; m < 2; ++m) { qsort(t[k][m], (size_t)reps, sizeof(double), cmp_double); med[m] = t[k][m][reps / 2] * 1e6; }
        printf("  %-8s 1 thread %8.1f  2 threads %8.1f  ratio 2/1 %.2f\n", names[k], med[0], med[1], med[1] / med[0]);
    }
    for (k = 0; k < 4; ++k) free(buf[k]);
    return 0;
}
