/* quickstart.c - the smallest useful attn.h program.
   Build: cc -std=c99 -O2 -I. examples/quickstart.c -o quickstart -lm -pthread   (or: make)   */
#define ATTN_IMPLEMENTATION          /* exactly one .c file defines this before the include */
#include "attn.h"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    /* One sequence of 6 tokens, 2 heads of dimension 4: q, k, v are [batch, seq, heads, dim]. */
    enum { B = 1, S = 6, H = 2, D = 4 };
    float q[B * S * H * D], k[B * S * H * D], v[B * S * H * D], out[B * S * H * D];
    float lse[B * H * S];                    /* optional: log-sum-exp of each score row */
    int i, s, h;
    for (i = 0; i < B * S * H * D; ++i) {
        q[i] = (float)((i * 7) % 11) / 11.0f - 0.5f;
        k[i] = (float)((i * 5) % 13) / 13.0f - 0.5f;
        v[i] = (float)(i / (H * D));         /* value = the token's own index, easy to read */
    }

    {
        attn_desc desc = {0};                /* zero = plain softmax attention, scale 1/sqrt(D) */
        attn_status st;
        desc.causal = 1;                     /* token t sees tokens 0..t only */
        st = attn_forward(&desc,
                          attn_tensor_dense(q, ATTN_F32, B, S, H, D),
                          attn_tensor_dense(k, ATTN_F32, B, S, H, D),
                          attn_tensor_dense(v, ATTN_F32, B, S, H, D),
                          attn_tensor_dense(out, ATTN_F32, B, S, H, D), lse);
        if (st != ATTN_OK) {                 /* every failure says exactly which field is wrong */
            fprintf(stderr, "attn_forward: %s\n", attn_status_str(st));
            return 1;
        }
    }

    /* Each output row is a softmax-weighted mix of value rows; with v = token index the
       output is the average position a token attends to: causal keeps it <= the token's own. */
    for (s = 0; s < S; ++s)
        for (h = 0; h < H; ++h) {
            const float *o = out + (s * H + h) * D;
            printf("token %d head %d: mean attended position %.3f  lse %.4f\n",
                   s, h, o[0], lse[h * S + s]);
        }
    return 0;
}
