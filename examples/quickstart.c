/* quickstart.c - the smallest useful attn.h program.
   Build: cc -std=c99 -O2 -I. examples/quickstart.c -o quickstart -lm -pthread   (or: make)   */
#define ATTN_IMPLEMENTATION          /* exactly one .c file defines this before the include */
#include "attn.h"
#include <math.h>
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

    /* The same thing as a naive loop in double: softmax(q.k / sqrt(D)) over keys j <= s. */
    {
        double max_err = 0.0;
        int j, x;
        for (s = 0; s < S; ++s)
            for (h = 0; h < H; ++h) {
                double w[S], sum = 0.0, mx = -1e300;
                for (j = 0; j <= s; ++j) {
                    w[j] = 0.0;
                    for (x = 0; x < D; ++x) w[j] += (double)q[(s * H + h) * D + x] * k[(j * H + h) * D + x];
                    w[j] /= sqrt((double)D);
                    if (w[j] > mx) mx = w[j];
                }
                for (j = 0; j <= s; ++j) sum += (w[j] = exp(w[j] - mx));
                for (x = 0; x < D; ++x) {
                    double o = 0.0;
                    for (j = 0; j <= s; ++j) o += w[j] / sum * v[(j * H + h) * D + x];
                    if (fabs(o - out[(s * H + h) * D + x]) > max_err) max_err = fabs(o - out[(s * H + h) * D + x]);
                }
            }
        printf("max |attn_forward - naive loop| = %.1e %s\n", max_err, max_err < 1e-5 ? "(ok)" : "(TOO LARGE)");
        return max_err < 1e-5 ? 0 : 1;
    }
}
