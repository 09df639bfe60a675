/* beams.c - EL-attention for beam search: cross-attention without a K/V cache.

   In an encoder-decoder, every decoding step of every beam attends to the encoder's hidden
   states h. The usual way projects h into per-head keys and values once (K = h W^K, V = h W^V)
   and keeps them: a cache of 2 x src_len x d_model floats per sentence (per beam, if the beams
   are expanded as separate batch rows, as many implementations do). EL-attention (Yan et al.
   2021) instead moves W^K onto the query and W^V after the softmax, so all beams and heads read
   h itself: no cache, and h is streamed once for all of them (attn_el_attention).

   This program runs one decoding step of 4 beams for 2 source sentences both ways, checks that
   they agree, and prints the memory each needs and their times.
   Build: cc -std=c99 -O2 -I. examples/beams.c -o beams -lm -pthread   (or: make)
   Options: `beams quick` uses a smaller model. Exit status 1 if the two differ. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static unsigned g_rng = 12345u;
static float rnd(float scale) {   /* uniform in [-scale, scale) */
    g_rng = g_rng * 1103515245u + 12345u;
    return scale * ((float)((g_rng >> 8) & 0xffff) / 32768.0f - 1.0f);
}

static void die(attn_status st, const char *what) {
    if (st != ATTN_OK) { fprintf(stderr, "%s: %s\n", what, attn_status_str(st)); exit(2); }
}

/* Y[m, n] = X[m, k] W[k, n] + b[n] */
static void proj(const float *X, int m, int k, const float *W, const float *b, int n, float *Y) {
    int i, j;
    die(attn_sgemm(0, 0, m, n, k, 1.0f, X, k, W, n, 0.0f, Y, n, 0), "attn_sgemm");
    for (i = 0; i < m; ++i)
        for (j = 0; j < n; ++j) Y[(size_t)i * n + j] += b[j];
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const int B = 2, beams = 4, src = quick ? 128 : 1024, dm = quick ? 128 : 512, H = 8, dk = dm / H, reps = quick ? 3 : 10;
    const size_t nw = (size_t)dm * dm, nh = (size_t)B * src * dm, nx = (size_t)B * beams * dm;
    float *W = (float *)malloc(4 * nw * 4), *bias = (float *)malloc(4 * (size_t)dm * 4);
    float *h = (float *)malloc(nh * 4), *x = (float *)malloc(nx * 4);
    float *K = (float *)malloc(nh * 4), *V = (float *)malloc(nh * 4), *Q = (float *)malloc(nx * 4);
    float *O = (float *)malloc(nx * 4), *out_plain = (float *)malloc(nx * 4), *out_el = (float *)malloc(nx * 4);
    attn_layer_weights w;
    attn_el_desc el;
    attn_desc ad;
    double t0, t_proj = 0, t_plain = 0, t_el = 0, err = 0, mx = 0;
    size_t i;
    int r;
    if (!W || !bias || !h || !x || !K || !V || !Q || !O || !out_plain || !out_el) { fprintf(stderr, "out of memory\n"); return 2; }
    for (i = 0; i < 4 * nw; ++i) W[i] = rnd(1.0f / sqrtf((float)dm) * 1.7f);
    for (i = 0; i < 4 * (size_t)dm; ++i) bias[i] = rnd(0.1f);
    for (i = 0; i < nh; ++i) h[i] = rnd(1.0f);
    for (i = 0; i < nx; ++i) x[i] = rnd(1.0f);
    memset(&w, 0, sizeof w);
    w.wq = W; w.wk = W + nw; w.wv = W + 2 * nw; w.wo = W + 3 * nw;
    w.bq = bias; w.bk = bias + dm; w.bv = bias + 2 * dm; w.bo = bias + 3 * dm;

    for (r = 0; r < reps; ++r) {
        /* the usual way: K, V of each sentence once (the cache), then per step Q, attention, W^O */
        t0 = now_s();
        proj(h, B * src, dm, w.wk, w.bk, dm, K);
        proj(h, B * src, dm, w.wv, w.bv, dm, V);
        t_proj += now_s() - t0;
        t0 = now_s();
        proj(x, B * beams, dm, w.wq, w.bq, dm, Q);
        memset(&ad, 0, sizeof ad);             /* the beams are the queries: q [B, beams, H, dk] */
        die(attn_forward(&ad, attn_tensor_dense(Q, ATTN_F32, B, beams, H, dk), attn_tensor_dense(K, ATTN_F32, B, src, H, dk),
                         attn_tensor_dense(V, ATTN_F32, B, src, H, dk), attn_tensor_dense(O, ATTN_F32, B, beams, H, dk), NULL),
            "attn_forward");
        proj(O, B * beams, dm, w.wo, w.bo, dm, out_plain);
        t_plain += now_s() - t0;

        /* EL-attention: one call, straight from h, nothing kept between steps */
        t0 = now_s();
        memset(&el, 0, sizeof el);
        el.d_model = dm; el.heads = H; el.batch = B; el.beams = beams; el.src_len = src;
        die(attn_el_attention(&el, &w, x, h, out_el), "attn_el_attention");
        t_el += now_s() - t0;
    }
    for (i = 0; i < nx; ++i) {
        if (fabs((double)out_el[i] - out_plain[i]) > err) err = fabs((double)out_el[i] - out_plain[i]);
        if (fabs((double)out_plain[i]) > mx) mx = fabs((double)out_plain[i]);
    }
    printf("one decoding step: %d sentences x %d beams, source length %d, d_model %d, %d heads, %s kernels\n\n", B, beams,
           src, dm, H, attn_kernels());
    printf("%-34s %14s %16s\n", "", "extra memory", "ms per step");
    printf("%-34s %10.2f MiB %16.3f   (+ %.3f ms once, to build the cache)\n", "K/V cache + attn_forward",
           2.0 * nh * 4 / 1048576, t_plain / reps * 1e3, t_proj / reps * 1e3);
    printf("%-34s %10.2f MiB %16.3f\n", "   the same with the cache per beam", 2.0 * nh * beams * 4 / 1048576, t_plain / reps * 1e3);
    printf("%-34s %10.2f MiB %16.3f\n", "EL-attention (attn_el_attention)", 0.0, t_el / reps * 1e3);
    printf("\nmax |EL - plain| = %.1e (relative to max |out| %.2f: %.1e) %s\n", err, mx, err / mx,
           err / mx < 1e-5 ? "(ok: the same attention)" : "(TOO LARGE)");
    free(W); free(bias); free(h); free(x); free(K); free(V); free(Q); free(O); free(out_plain); free(out_el);
    return err / mx < 1e-5 ? 0 : 1;
}
