/* layers.c - the structural attention layers side by side (attn_layer_forward).

   "Cost-Effective Attention Mechanisms for Low Resource Settings" proposes cheaper layers than
   standard multi-head attention: Optimized drops W^V (values are the input's head slice),
   Efficient also drops W^K, Super adds one small learned l x l alignment of the values that all
   heads share; the Direct kinds learn the attention map itself. This program
     1. reproduces the paper's parameter-count table (attn_layer_param_count) and checks it,
     2. times one forward of each layer on the same input (median of 5, all cores).
   Build: cc -std=c99 -O2 -I. examples/layers.c -o layers -lm -pthread   (or: make)
   Options: `layers quick` times a small shape only. Exit status 1 if a count differs. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *const names[] = { "Standard", "Optimized", "Efficient", "Super", "Direct", "Direct (input)" };

int main(int argc, char **argv) {
    /* the paper's tables: Standard / Optimized / Efficient / Super parameters at (d_m, l) */
    static const struct { int dm, l; long paper[4]; } table[] = {
        { 128, 64, { 66048, 49536, 33024, 37184 } },
        { 32, 32, { 4224, 3168, 2112, 3168 } },
        { 256, 256, { 263168, 197376, 131584, 197376 } },
    };
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    int row, k, bad = 0;

    printf("1. parameters per layer (biases included), attn_layer_param_count vs the paper's table\n\n");
    printf("%-10s %-5s", "d_model", "l");
    for (k = 0; k < 6; ++k) printf(" %15s", names[k]);
    printf("\n");
    for (row = 0; row < 3; ++row) {
        printf("%-10d %-5d", table[row].dm, table[row].l);
        for (k = 0; k < 6; ++k) {
            attn_layer_desc d;
            size_t n = 0;
            memset(&d, 0, sizeof d);
            d.kind = (attn_layer_kind)k; d.d_model = table[row].dm; d.heads = 4; d.context = table[row].l;
            if (attn_layer_param_count(&d, &n) != ATTN_OK) return 1;
            if (k < 4 && (long)n != table[row].paper[k]) {
                printf(" %8zu(paper %ld!)", n, table[row].paper[k]);
                bad = 1;
            } else printf(" %15zu", n);
        }
        printf("\n");
    }
    printf("%s\n\n", bad ? "MISMATCH with the paper's table" : "Standard .. Super: equal to the paper's table "
                                                                  "(Direct kinds: 2 d^2 + 2 d + l^2, not in it)");

    /* 2. time per layer: one batch of sequences through each layer, the same input and weights */
    {
        const int B = quick ? 4 : 8, L = quick ? 64 : 256, dm = quick ? 64 : 256, H = 4;
        const size_t nx = (size_t)B * L * dm, nw = (size_t)dm * dm;
        float *x = (float *)malloc(nx * 4), *out = (float *)malloc(nx * 4), *w = (float *)malloc(4 * nw * 4);
        float *wa = (float *)malloc((size_t)L * L * 4), *b = (float *)calloc((size_t)(dm > L ? dm : L), 4);
        unsigned s = 1;
        size_t i;
        double t_std = 0;
        if (!x || !out || !w || !wa || !b) { fprintf(stderr, "out of memory\n"); return 1; }
        for (i = 0; i < nx; ++i) { s = s * 1103515245u + 12345u; x[i] = (float)((s >> 9) & 0xffff) / 65536.0f - 0.5f; }
        for (i = 0; i < 4 * nw; ++i) { s = s * 1103515245u + 12345u; w[i] = ((float)((s >> 9) & 0xffff) / 65536.0f - 0.5f) / 8; }
        for (i = 0; i < (size_t)L * L; ++i) wa[i] = (i % (L + 1) == 0) ? 1.0f : 0.001f;
        printf("2. forward time, %d sequences of %d tokens, d_model %d, %d heads, causal, %s kernels, all cores\n\n",
               B, L, dm, H, attn_kernels());
        printf("%-15s %10s %12s %10s %14s\n", "layer", "params", "ms (median)", "GFLOP/s", "speed vs Std");
        for (k = 0; k < 6; ++k) {
            attn_layer_desc d;
            attn_layer_weights lw;
            double t[5], tmp, fl = 0;
            size_t n = 0;
            int r, a, c;
            memset(&d, 0, sizeof d);
            memset(&lw, 0, sizeof lw);
            d.kind = (attn_layer_kind)k; d.d_model = dm; d.heads = H; d.context = L; d.attn.causal = 1;
            lw.wq = w; lw.wk = w + nw; lw.wv = w + 2 * nw; lw.wo = w + 3 * nw;
            lw.bq = lw.bk = lw.bv = lw.bo = b;
            lw.wa = wa; lw.ba = b; lw.wd = wa;
            for (r = -1; r < 5; ++r) {            /* one warm-up call, then 5 timed */
                const double t0 = now_s();
                const attn_status st = attn_layer_forward(&d, &lw, B, L, L, x, NULL, out);
                if (st != ATTN_OK) { fprintf(stderr, "%s: %s\n", names[k], attn_status_str(st)); return 1; }
                if (r >= 0) t[r] = now_s() - t0;
            }
            for (a = 0; a < 5; ++a)               /* sort the five times */
                for (c = a + 1; c < 5; ++c) if (t[c] < t[a]) { tmp = t[a]; t[a] = t[c]; t[c] = tmp; }
            attn_layer_param_count(&d, &n);
            attn_layer_flops(&d, B, L, L, &fl);
            if (k == 0) t_std = t[2];
            printf("%-15s %10zu %12.3f %10.1f %13.2fx\n", names[k], n, t[2] * 1e3, fl / t[2] * 1e-9, t_std / t[2]);
        }
        free(x); free(out); free(w); free(wa); free(b);
    }
    return bad;
}
