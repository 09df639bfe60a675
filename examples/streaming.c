/* streaming.c - StreamingLLM: decode an endless token stream in constant memory.

   A model that decodes with a full K/V cache needs memory that grows with every token.
   StreamingLLM (Xiao et al. 2023) keeps only the first few tokens (the "attention sinks" that
   softmax dumps its spare weight on) and a window of recent ones. attn_kv_append_streaming does
   that cache policy; attn_decode attends over what is kept, with RoPE applied in the kernel at
   cache-slot positions (keys are stored un-rotated, so evicting the middle needs no re-rotation).

   This program streams tokens through a fixed 256-slot cache (4 sinks + 252 recent), prints the
   cache size and the decode speed as the stream grows, and checks a few steps against
   attn_forward over exactly the tokens the policy should have kept (rebuilt from scratch).
   Build: cc -std=c99 -O2 -I. examples/streaming.c -o streaming -lm -pthread   (or: make)
   Options: `streaming quick` streams 3000 tokens instead of 50000. Exit status 1 on a mismatch. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { HQ = 8, HKV = 2, D = 64, SINK = 4, RECENT = 252, CAP = SINK + RECENT };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* a stand-in for the model: token t's q, k, v, reproducible from t alone (a hash) */
static float feature(unsigned t, unsigned which, unsigned i) {
    unsigned h = t * 2654435761u ^ (which * 40503u + i) * 2246822519u;
    h ^= h >> 15; h *= 2654435761u; h ^= h >> 13;
    return (float)(h & 0xffff) / 32768.0f - 1.0f;
}
static void token_qkv(unsigned t, float *q, float *k, float *v) {
    int i;
    for (i = 0; i < HQ * D; ++i) q[i] = feature(t, 0, (unsigned)i);
    for (i = 0; i < HKV * D; ++i) { k[i] = feature(t, 1, (unsigned)i); v[i] = feature(t, 2, (unsigned)i); }
}

static int ok(attn_status st, const char *what) {
    if (st != ATTN_OK) fprintf(stderr, "%s: %s\n", what, attn_status_str(st));
    return st == ATTN_OK;
}

/* token t's output computed from scratch: attn_forward over the tokens StreamingLLM keeps
   (0..SINK-1 and the RECENT newest), at their cache slots; returns max |out - decoded| */
static double check_against_forward(unsigned t, const float *decoded) {
    static float kk[CAP * HKV * D], vv[CAP * HKV * D], q[HQ * D], ref[HQ * D], dummy[HQ * D];
    unsigned src;
    int n = 0, pos_q, i;
    double err = 0;
    attn_desc d;
    for (src = 0; src <= t; ++src) {
        if (src >= SINK && src + RECENT <= t) continue;          /* evicted from the middle */
        token_qkv(src, dummy, kk + (size_t)n * HKV * D, vv + (size_t)n * HKV * D);
        ++n;
    }
    token_qkv(t, q, dummy, dummy + HKV * D);
    pos_q = n - 1;                                              /* the query sits in the last slot */
    memset(&d, 0, sizeof d);
    d.rope = ATTN_ROPE_HALF;
    d.rope_pos_q = &pos_q;                                      /* keys: slots 0..n-1 (the default) */
    if (!ok(attn_forward(&d, attn_tensor_dense(q, ATTN_F32, 1, 1, HQ, D), attn_tensor_dense(kk, ATTN_F32, 1, n, HKV, D),
                         attn_tensor_dense(vv, ATTN_F32, 1, n, HKV, D), attn_tensor_dense(ref, ATTN_F32, 1, 1, HQ, D),
                         NULL), "attn_forward")) return 1e30;
    for (i = 0; i < HQ * D; ++i) if (fabs((double)ref[i] - decoded[i]) > err) err = fabs((double)ref[i] - decoded[i]);
    return err;
}

int main(int argc, char **argv) {
    static float kcache[CAP * HKV * D], vcache[CAP * HKV * D];
    float q[HQ * D], k[HKV * D], v[HKV * D], out[HQ * D];
    const unsigned total = argc > 1 && strcmp(argv[1], "quick") == 0 ? 3000 : 50000;
    const unsigned report = total / 10;
    int len = 0;
    unsigned t;
    double t_last = now_s(), worst = 0;
    attn_kv_cache cache;
    attn_desc d;

    memset(&cache, 0, sizeof cache);            /* a contiguous cache of CAP slots */
    cache.k = attn_tensor_dense(kcache, ATTN_F32, 1, CAP, HKV, D);
    cache.v = attn_tensor_dense(vcache, ATTN_F32, 1, CAP, HKV, D);
    cache.batch = 1; cache.lens = &len;
    memset(&d, 0, sizeof d);
    d.causal = 1;
    d.rope = ATTN_ROPE_HALF;                    /* rotate q and k by their cache slot, in the kernel */

    printf("StreamingLLM: %d sink tokens + %d recent, %d query heads over %d K/V heads of dim %d, %s kernels\n",
           SINK, RECENT, HQ, HKV, D, attn_kernels());
    printf("%10s %12s %14s %22s %14s\n", "tokens in", "kept", "cache memory", "a full cache would be", "us / token");
    for (t = 0; t < total; ++t) {
        token_qkv(t, q, k, v);
        if (!ok(attn_kv_append_streaming(&cache, SINK, RECENT, attn_tensor_dense(k, ATTN_F32, 1, 1, HKV, D),
                                         attn_tensor_dense(v, ATTN_F32, 1, 1, HKV, D), NULL), "append")) return 1;
        if (!ok(attn_decode(&d, attn_tensor_dense(q, ATTN_F32, 1, 1, HQ, D), &cache,
                            attn_tensor_dense(out, ATTN_F32, 1, 1, HQ, D), NULL), "attn_decode")) return 1;
        /* check a few steps: early (cache filling), right after the first eviction, and late */
        if (t == 10 || t == CAP || t == CAP + 1 || t == total / 2 || t == total - 1) {
            const double e = check_against_forward(t, out);
            if (e > worst) worst = e;
        }
        if ((t + 1) % report == 0) {
            const double now = now_s();
            printf("%10u %12d %10.0f KiB %18.1f MiB %14.1f\n", t + 1, len, 2.0 * CAP * HKV * D * 4 / 1024,
                   2.0 * (t + 1) * HKV * D * 4 / 1048576, (now - t_last) / report * 1e6);
            t_last = now_s();
        }
    }
    printf("memory stayed at %d slots; decode vs attn_forward on the kept tokens: max error %.1e %s\n", CAP, worst,
           worst < 1e-5 ? "(ok)" : "(TOO LARGE)");
    return worst < 1e-5 ? 0 : 1;
}
