/* decoding.c - token-by-token generation with a paged K/V cache, in-kernel RoPE, and the
   StreamingLLM cache policy (attention sinks + a recent window).
   Build: cc -std=c99 -O2 -I. examples/decoding.c -o decoding -lm -pthread   (or: make)   */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <stdio.h>
#include <stdlib.h>

enum { B = 2, HQ = 4, HKV = 2, D = 8, PAGE = 4, MAX_PAGES = 8, N_PAGES = B * MAX_PAGES, STEPS = 20 };

/* a stand-in for a model: the new token's q, k, v from its index */
static void fake_qkv(int t, float *q, float *k, float *v) {
    int i;
    for (i = 0; i < B * HQ * D; ++i) q[i] = (float)((t * 7 + i * 3) % 17) / 17.0f - 0.5f;
    for (i = 0; i < B * HKV * D; ++i) { k[i] = (float)((t * 5 + i) % 13) / 13.0f - 0.5f; v[i] = (float)t; }
}

static int check(attn_status st, const char *what) {
    if (st != ATTN_OK) fprintf(stderr, "%s: %s\n", what, attn_status_str(st));
    return st == ATTN_OK;
}

int main(void) {
    static float kpool[N_PAGES * PAGE * HKV * D], vpool[N_PAGES * PAGE * HKV * D];
    float q[B * HQ * D], k[B * HKV * D], v[B * HKV * D], out[B * HQ * D];
    int table[B * MAX_PAGES], lens[B] = { 0, 0 }, i, t, n = 0;
    attn_kv_cache cache = {0};
    attn_desc d = {0};

    /* a paged cache: sequence b owns pages table[b*MAX_PAGES ..], in any order in the pool */
    for (i = 0; i < B * MAX_PAGES; ++i) table[i] = (i * 5) % N_PAGES;      /* a permutation */
    cache.k = attn_tensor_dense(kpool, ATTN_F32, N_PAGES, PAGE, HKV, D);
    cache.v = attn_tensor_dense(vpool, ATTN_F32, N_PAGES, PAGE, HKV, D);
    cache.batch = B; cache.lens = lens;
    cache.page_size = PAGE; cache.block_table = table; cache.max_pages = MAX_PAGES;

    d.causal = 1;
    d.rope = ATTN_ROPE_HALF;          /* keys are cached un-rotated; q and k rotate in the kernel */

    /* 1. plain decoding: append this step's k/v, attend over everything so far (GQA 4:2) */
    for (t = 0; t < STEPS; ++t) {
        fake_qkv(t, q, k, v);
        if (!check(attn_kv_append(&cache, attn_tensor_dense(k, ATTN_F32, B, 1, HKV, D),
                                  attn_tensor_dense(v, ATTN_F32, B, 1, HKV, D), NULL), "attn_kv_append")) return 1;
        if (!check(attn_decode(&d, attn_tensor_dense(q, ATTN_F32, B, 1, HQ, D), &cache,
                               attn_tensor_dense(out, ATTN_F32, B, 1, HQ, D), NULL), "attn_decode")) return 1;
    }
    if (!check(attn_kv_len(&cache, 0, &n), "attn_kv_len")) return 1;
    printf("paged cache: %d tokens per sequence, last output (seq 0, head 0) %.4f (values are token indices)\n", n,
           (double)out[0]);

    /* a full cache says so and changes nothing */
    {
        attn_status st = attn_kv_append(&cache, attn_tensor_dense(k, ATTN_F32, B, 1, HKV, D),
                                        attn_tensor_dense(v, ATTN_F32, B, 1, HKV, D), NULL);
        for (t = 0; t < MAX_PAGES * PAGE - STEPS && st == ATTN_OK; ++t)
            st = attn_kv_append(&cache, attn_tensor_dense(k, ATTN_F32, B, 1, HKV, D),
                                attn_tensor_dense(v, ATTN_F32, B, 1, HKV, D), NULL);
        printf("appending past capacity: \"%s\", lens still %d\n", attn_status_str(st), lens[0]);
    }

    /* 2. StreamingLLM: 4 sink tokens + the 8 most recent, forever; positions are cache slots */
    lens[0] = lens[1] = 0;
    for (t = 0; t < 100; ++t) {
        fake_qkv(t, q, k, v);
        if (!check(attn_kv_append_streaming(&cache, 4, 8, attn_tensor_dense(k, ATTN_F32, B, 1, HKV, D),
                                            attn_tensor_dense(v, ATTN_F32, B, 1, HKV, D), NULL), "streaming")) return 1;
        if (!check(attn_decode(&d, attn_tensor_dense(q, ATTN_F32, B, 1, HQ, D), &cache,
                               attn_tensor_dense(out, ATTN_F32, B, 1, HQ, D), NULL), "attn_decode")) return 1;
    }
    if (!check(attn_kv_len(&cache, 0, &n), "attn_kv_len")) return 1;
    printf("streaming cache after 100 tokens: %d kept (tokens 0-3 and 92-99)\n", n);
    return 0;
}
