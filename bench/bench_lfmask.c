/* bench/bench_lfmask.c - ATTN_LONGFORMER with longformer.global_mask (Hugging Face's per-token
   global_attention_mask) beside the same number of global_tokens (issue 28): forward and
   attn_backward times, and backward / forward (`make build/bench_lfmask`; bench/README.md,
   "Issue 28: Longformer global mask on tiles").

   Shape: batch 1, S 4096, H 12, D = Dv = 64, fp32, window 256 each side (HF attention_window
   512), g global positions (g = 1: HF's CLS token; g = 64):
     tokens   global_tokens = g (the first g positions)
     mask0    global_mask marking the first g positions (the same pattern as tokens)
     spread   global_mask marking g positions spread evenly (i * S / g)
   n_threads 1 and 2; one warm-up, then BENCH_REPS (default 5) rounds, each a forward and a
   backward of every case in turn (a loaded machine slows all three alike); medians (min..max),
   each case's median over the tokens case's, and backward / forward. A build without the
   mask backward prints "-".
   Env: BENCH_REPS, BENCH_S. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 12
#define D 64
#define W 256

int main(void) {
    const int S = env_int("BENCH_S", 4096), reps = env_int("BENCH_REPS", 5);
    const int gs[2] = { 1, 64 }, threads[2] = { 1, 2 };
    const size_t n = (size_t)S * H * D;
    float *q = (float *)xalloc(4 * n), *k = (float *)xalloc(4 * n), *v = (float *)xalloc(4 * n), *o = (float *)xalloc(4 * n);
    float *dout = (float *)xalloc(4 * n), *dq = (float *)xalloc(4 * n), *dk = (float *)xalloc(4 * n), *dv = (float *)xalloc(4 * n);
    float *lse = (float *)xalloc(4 * (size_t)H * S);
    unsigned char *mask = (unsigned char *)xalloc(3 * (size_t)S);
    double *tf = (double *)xalloc(3 * sizeof(double) * (size_t)reps), *tb = (double *)xalloc(3 * sizeof(double) * (size_t)reps);
    static const char *const cases[3] = { "tokens", "mask0", "spread" };
    int gi, ti, c, r, i;
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, S, H, D);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D);
    attn_tensor tdo = attn_tensor_dense(dout, ATTN_F32, 1, S, H, D), tdq = attn_tensor_dense(dq, ATTN_F32, 1, S, H, D);
    attn_tensor tdk = attn_tensor_dense(dk, ATTN_F32, 1, S, H, D), tdv = attn_tensor_dense(dv, ATTN_F32, 1, S, H, D);
    fill_rand(q, n); fill_rand(k, n); fill_rand(v, n); fill_rand(dout, n);
    printf("# %s; S %d H %d D %d window %d each side, fp32, batch 1; medians of %d (min..max), seconds\n",
           bench_cpu(), S, H, D, W, reps);
    printf("%-3s %-7s %-2s %-22s %-6s %-22s %-6s %s\n", "g", "case", "th", "forward", "/tokens", "backward", "/tokens", "bwd/fwd");
    for (gi = 0; gi < 2; ++gi)
        for (ti = 0; ti < 2; ++ti) {
            attn_desc d[3];
            unsigned char *m[3];
            double mf[3], mb[3], lo[3], hi[3], lob[3], hib[3];
            int has_bwd[3];
            for (c = 0; c < 3; ++c) {           /* the three cases, then their calls interleaved */
                memset(&d[c], 0, sizeof d[c]);
                d[c].kind = ATTN_LONGFORMER; d[c].window_left = d[c].window_right = W; d[c].n_threads = threads[ti];
                m[c] = mask + (size_t)c * S;
                memset(m[c], 0, (size_t)S);
                if (c == 0) d[c].global_tokens = gs[gi];
                else {
                    for (i = 0; i < gs[gi]; ++i) m[c][c == 1 ? (size_t)i : (size_t)i * S / gs[gi]] = 1;
                    d[c].longformer.global_mask = m[c];
                }
                if (attn_forward(&d[c], tq, tk, tv, to, lse) != ATTN_OK) die("forward");
                has_bwd[c] = attn_backward(&d[c], tq, tk, tv, to, tdo, lse, tdq, tdk, tdv) == ATTN_OK;
            }
            for (r = 0; r < reps; ++r)
                for (c = 0; c < 3; ++c) {
                    double t0 = now_s();
                    attn_forward(&d[c], tq, tk, tv, to, lse);
                    tf[c * reps + r] = now_s() - t0;
                    if (has_bwd[c]) {
                        t0 = now_s();
                        attn_backward(&d[c], tq, tk, tv, to, tdo, lse, tdq, tdk, tdv);
                        tb[c * reps + r] = now_s() - t0;
                    }
                }
            for (c = 0; c < 3; ++c) {
                mf[c] = median_of(tf + c * reps, reps, &lo[c], &hi[c]);
                mb[c] = has_bwd[c] ? median_of(tb + c * reps, reps, &lob[c], &hib[c]) : 0.0;
                if (has_bwd[c])
                    printf("%-3d %-7s %-2d %.3f (%.3f..%.3f)  %.2f   %.3f (%.3f..%.3f)  %.2f   %.2f\n", gs[gi], cases[c], threads[ti],
                           mf[c], lo[c], hi[c], mf[c] / mf[0], mb[c], lob[c], hib[c], has_bwd[0] ? mb[c] / mb[0] : 0.0, mb[c] / mf[c]);
                else
                    printf("%-3d %-7s %-2d %.3f (%.3f..%.3f)  %.2f   -\n", gs[gi], cases[c], threads[ti], mf[c], lo[c], hi[c], mf[c] / mf[0]);
            }
            fflush(stdout);
        }
    return 0;
}
