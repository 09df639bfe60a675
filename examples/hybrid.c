/* hybrid.c - a hybrid stack: sliding-window layers with a global layer every fourth.

   Long-context models (Mistral, Gemma 2/3, Longformer-style stacks) mix cheap local layers,
   where each token sees only the last W tokens, with a few global layers that see everything.
   A window layer costs O(n W) instead of O(n^2), but information then travels only W tokens
   per layer: through 8 window layers a token reaches 8 (W - 1) positions back, no further. One
   global layer in four restores the whole context at a quarter of the quadratic cost.

   This program builds an 8-layer causal stack of attn_layer_forward calls (standard MHA,
   x <- x + layer(x)) in two versions, all-window and hybrid (layers 4 and 8 global), and shows
     1. the time of a window layer, a global layer and both stacks,
     2. the receptive field: change token 0 and see whether the last token's output moves
        (exactly 0 through the all-window stack, not 0 through the hybrid one; both checked).
   Build: cc -std=c99 -O2 -I. examples/hybrid.c -o hybrid -lm -pthread   (or: make)
   Options: `hybrid quick`: 512 tokens instead of 4096. Exit status 1 if a check fails. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LAYERS = 8, DM = 128, HEADS = 4, WINDOW = 64, GLOBAL_EVERY = 4 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *g_w[LAYERS];   /* per layer: wq, wk, wv, wo, each DM x DM */

/* runs the stack on x [L, DM] in place; hybrid = 1: every GLOBAL_EVERY-th layer is global.
   Adds each layer's time to t_layer[0] (window) or t_layer[1] (global) */
static void stack(float *x, float *tmp, int L, int hybrid, double t_layer[2]) {
    int l, i;
    for (l = 0; l < LAYERS; ++l) {
        const int global = hybrid && (l + 1) % GLOBAL_EVERY == 0;
        attn_layer_desc d;
        attn_layer_weights w;
        attn_status st;
        double t0;
        memset(&d, 0, sizeof d);
        memset(&w, 0, sizeof w);
        d.d_model = DM; d.heads = HEADS;
        d.attn.causal = 1;
        if (!global) d.attn.window_left = WINDOW - 1;     /* token t sees t-63 .. t */
        w.wq = g_w[l]; w.wk = g_w[l] + DM * DM; w.wv = g_w[l] + 2 * DM * DM; w.wo = g_w[l] + 3 * DM * DM;
        t0 = now_s();
        st = attn_layer_forward(&d, &w, 1, L, L, x, NULL, tmp);
        if (t_layer) t_layer[global] += now_s() - t0;
        if (st != ATTN_OK) { fprintf(stderr, "layer %d: %s\n", l, attn_status_str(st)); exit(2); }
        for (i = 0; i < L * DM; ++i) x[i] += tmp[i];     /* the residual connection */
    }
}

int main(int argc, char **argv) {
    const int L = argc > 1 && strcmp(argv[1], "quick") == 0 ? 512 : 4096;
    float *x0 = (float *)malloc((size_t)L * DM * 4), *x = (float *)malloc((size_t)L * DM * 4);
    float *tmp = (float *)malloc((size_t)L * DM * 4), last[2][2][DM];
    double t_win[2] = { 0, 0 }, t_hyb[2] = { 0, 0 }, ts_win = 0, ts_hyb = 0, moved[2];
    unsigned s = 7;
    int l, i, h, p, ok = 1;
    if (!x0 || !x || !tmp) { fprintf(stderr, "out of memory\n"); return 2; }
    for (l = 0; l < LAYERS; ++l) {
        g_w[l] = (float *)malloc((size_t)4 * DM * DM * 4);
        if (!g_w[l]) { fprintf(stderr, "out of memory\n"); return 2; }
        for (i = 0; i < 4 * DM * DM; ++i) {
            s = s * 1103515245u + 12345u;
            g_w[l][i] = ((float)((s >> 8) & 0xffff) / 32768.0f - 1.0f) * 0.15f;
        }
    }
    for (i = 0; i < L * DM; ++i) { s = s * 1103515245u + 12345u; x0[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f; }

    printf("%d causal layers, d_model %d, %d heads, window %d, %d tokens, %s kernels\n", LAYERS, DM, HEADS, WINDOW, L,
           attn_kernels());
    printf("hybrid: layers %d and %d global, the others sliding-window\n\n", GLOBAL_EVERY, 2 * GLOBAL_EVERY);
    memcpy(x, x0, (size_t)L * DM * 4);
    stack(x, tmp, L, 1, NULL);                            /* warm-up (threads, caches), untimed */
    /* p = 0: the input as is; p = 1: token 0 changed. h = 0: all-window, h = 1: hybrid */
    for (p = 0; p < 2; ++p)
        for (h = 0; h < 2; ++h) {
            double t0;
            memcpy(x, x0, (size_t)L * DM * 4);
            if (p) for (i = 0; i < DM; ++i) x[i] += 1.0f;
            t0 = now_s();
            stack(x, tmp, L, h, p ? NULL : h ? t_hyb : t_win);
            if (!p) { if (h) ts_hyb = now_s() - t0; else ts_win = now_s() - t0; }
            memcpy(last[p][h], x + (size_t)(L - 1) * DM, DM * 4);
        }
    printf("1. time (ms)\n");
    printf("   window layer   %8.2f   (mean of %d)\n", t_win[0] / LAYERS * 1e3, LAYERS);
    printf("   global layer   %8.2f   (mean of %d)  %.1fx a window layer\n", t_hyb[1] / (LAYERS / GLOBAL_EVERY) * 1e3,
           LAYERS / GLOBAL_EVERY, (t_hyb[1] / (LAYERS / GLOBAL_EVERY)) / (t_win[0] / LAYERS));
    printf("   all-window stack %6.2f, hybrid stack %.2f (an all-global stack: about %.2f)\n\n", ts_win * 1e3, ts_hyb * 1e3,
           t_hyb[1] / (LAYERS / GLOBAL_EVERY) * LAYERS * 1e3);
    for (h = 0; h < 2; ++h) {
        moved[h] = 0;
        for (i = 0; i < DM; ++i) if (fabs((double)last[1][h][i] - last[0][h][i]) > moved[h]) moved[h] = fabs((double)last[1][h][i] - last[0][h][i]);
    }
    printf("2. change token 0, look at token %d's output (max change)\n", L - 1);
    printf("   all-window stack: %.1e  (%d layers x %d tokens back = %d < %d: out of reach) %s\n", moved[0], LAYERS,
           WINDOW - 1, LAYERS * (WINDOW - 1), L - 1, moved[0] == 0 ? "ok" : "FAIL");
    printf("   hybrid stack:     %.1e  (the global layers carry it) %s\n", moved[1], moved[1] > 1e-6 ? "ok" : "FAIL");
    ok = moved[0] == 0 && moved[1] > 1e-6;
    for (l = 0; l < LAYERS; ++l) free(g_w[l]);
    free(x0); free(x); free(tmp);
    return ok ? 0 : 1;
}
