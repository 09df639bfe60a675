/* tests/ref.h - naive double-precision references for exact attention and attn_merge,
   written from the SEMANTICS block of attn.h (section 1) and the attn_desc/attn_bias docs
   (section 2) only. Materialises the score row of every (batch, head, query), applies the
   documented transforms in the documented order, and soft-maxes in double.

   Outputs are dense doubles:
     out [B, Sq, Hq, Dv]  (B, Sq: q.batch, q.seq)       lse [B, Hq, Sq]
   Rows with no visible key, padding rows and packed rows outside every segment: 0 and -inf. */
#ifndef ATTN_TESTS_REF_H
#define ATTN_TESTS_REF_H

#include "test.h"

/* Visibility of key j from query i, straight from the SEMANTICS block. All arithmetic is
   64-bit so huge windows or dilations cannot overflow here. */
T_UNUSED static int ref_visible(const attn_desc *d, long long i, long long j, long long Lq, long long Lk) {
    long long p = i + Lk - Lq;
    long long D = d->dilation > 1 ? d->dilation : 1;
    long long t = p - j;
    int local;
    if (!(j < Lk)) return 0;
    if (d->causal && !(j <= p)) return 0;
    local = (t % D == 0) &&
            (d->window_left == 0 || t <= (long long)d->window_left * D) &&
            (d->window_right == 0 || -t <= (long long)d->window_right * D);
    return local || j < d->sink_tokens || j < d->global_tokens || p < d->global_tokens;
}

/* bias[b][h][i][j] through attn_bias's documented broadcast and strides */
T_UNUSED static double ref_bias(const attn_bias *bs, int Sq, int Sk, int b, int h, int i, int j) {
    /* an axis of extent 1 is read at index 0; strides are taken as given (0 broadcasts) */
    int bb = bs->batch == 1 ? 0 : b, hh = bs->heads == 1 ? 0 : h, ii = bs->rows == 1 ? 0 : i;
    (void)Sq; (void)Sk;
    return bs->data[(ptrdiff_t)bb * bs->stride_batch + (ptrdiff_t)hh * bs->stride_head + (ptrdiff_t)ii * bs->stride_q + j];
}

/* The exact-attention reference. Arguments must be valid (the tests only call it then). */
T_UNUSED static void ref_attention(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v,
                          double *out, double *lse) {
    const int B = q.batch, Sq = q.seq, Hq = q.heads, D = q.dim, Dv = v.dim;
    const int Hkv = k.heads, group = Hq / Hkv;
    const int varlen = d->cu_seqlens_q != NULL;
    const int n_units = varlen ? d->varlen_batch : B;
    const double scale = d->scale != 0.0f ? (double)d->scale : 1.0 / sqrt((double)D);
    double *s = (double *)t_xmalloc(sizeof(double) * (size_t)(k.seq > 0 ? k.seq : 1));
    double *qrow = (double *)t_xmalloc(sizeof(double) * (size_t)D);
    double *kd = (double *)t_xmalloc(sizeof(double) * (size_t)k.seq * (size_t)D);
    double *vd = (double *)t_xmalloc(sizeof(double) * (size_t)k.seq * (size_t)Dv);
    double *acc = (double *)t_xmalloc(sizeof(double) * (size_t)Dv);
    int u, h, i, j, c;
    size_t n;

    for (n = 0; n < (size_t)B * Sq * Hq * Dv; ++n) out[n] = 0.0;
    for (n = 0; n < (size_t)B * Hq * Sq; ++n) lse[n] = -INFINITY;

    for (u = 0; u < n_units; ++u) {
        int b, q0, k0, Lq, Lk;
        if (varlen) {
            b = 0;
            q0 = d->cu_seqlens_q[u]; Lq = d->cu_seqlens_q[u + 1] - q0;
            k0 = d->cu_seqlens_k[u]; Lk = d->cu_seqlens_k[u + 1] - k0;
        } else {
            b = u; q0 = 0; k0 = 0;
            Lq = d->seqlens_q ? d->seqlens_q[u] : Sq;
            Lk = d->seqlens_k ? d->seqlens_k[u] : k.seq;
        }
        for (h = 0; h < Hq; ++h) {
            const int hk = h / group;
            if (h % group == 0)             /* (re)load this KV head's keys and values */
                for (j = 0; j < Lk; ++j) {
                    for (c = 0; c < D; ++c) kd[(size_t)j * D + c] = t_load(&k, b, k0 + j, hk, c);
                    for (c = 0; c < Dv; ++c) vd[(size_t)j * Dv + c] = t_load(&v, b, k0 + j, hk, c);
                }
            for (i = 0; i < Lq; ++i) {
                const long long p = (long long)i + Lk - Lq;
                double mx = -INFINITY, sum = 0.0;
                int any = 0;
                for (c = 0; c < D; ++c) qrow[c] = t_load(&q, b, q0 + i, h, c);
                for (j = 0; j < Lk; ++j) {
                    double x = 0.0;
                    const double *kr = kd + (size_t)j * D;
                    if (!ref_visible(d, i, j, Lq, Lk)) { s[j] = -INFINITY; continue; }
                    for (c = 0; c < D; ++c) x += qrow[c] * kr[c];
                    x *= scale;
                    if (d->softcap > 0.0f) x = (double)d->softcap * tanh(x / (double)d->softcap);
                    if (d->bias.data) x += ref_bias(&d->bias, Sq, k.seq, b, h, i, j);
                    if (d->alibi_slopes) x -= (double)d->alibi_slopes[h] * (double)llabs(p - j);
                    s[j] = x;
                    any = 1;
                    if (x > mx) mx = x;
                }
                /* no visible key, or every visible logit is -inf (e.g. a -inf bias): 0, -inf */
                if (!any || mx == -INFINITY) continue;
                for (c = 0; c < Dv; ++c) acc[c] = 0.0;
                for (j = 0; j < Lk; ++j) {
                    const double *vr = vd + (size_t)j * Dv;
                    double w;
                    if (s[j] == -INFINITY) continue;
                    w = exp(s[j] - mx);
                    sum += w;
                    for (c = 0; c < Dv; ++c) acc[c] += w * vr[c];
                }
                lse[((size_t)b * Hq + h) * Sq + (size_t)(q0 + i)] = mx + log(sum);
                for (c = 0; c < Dv; ++c)
                    out[(((size_t)b * Sq + (size_t)(q0 + i)) * Hq + h) * Dv + c] = acc[c] / sum;
            }
        }
    }
    free(s); free(qrow); free(kd); free(vd); free(acc);
}

/* attn_merge reference: out = sum_p part_p exp(lse_p - L), L = log sum_p exp(lse_p).
   out dense [B, S, H, Dv], lse dense [B, H, S]. */
T_UNUSED static void ref_merge(int n_parts, const attn_tensor *parts, const float *const *part_lse,
                      double *out, double *lse) {
    const int B = parts[0].batch, S = parts[0].seq, H = parts[0].heads, Dv = parts[0].dim;
    int b, s, h, c, p;
    for (b = 0; b < B; ++b)
        for (h = 0; h < H; ++h)
            for (s = 0; s < S; ++s) {
                size_t li = ((size_t)b * H + h) * S + s;
                double mx = -INFINITY, sum = 0.0, L;
                for (p = 0; p < n_parts; ++p)
                    if ((double)part_lse[p][li] > mx) mx = part_lse[p][li];
                if (mx == -INFINITY) {
                    lse[li] = -INFINITY;
                    for (c = 0; c < Dv; ++c) out[(((size_t)b * S + s) * H + h) * Dv + c] = 0.0;
                    continue;
                }
                for (p = 0; p < n_parts; ++p) sum += exp((double)part_lse[p][li] - mx);
                L = mx + log(sum);
                lse[li] = L;
                for (c = 0; c < Dv; ++c) {
                    double acc = 0.0;
                    for (p = 0; p < n_parts; ++p)
                        if (part_lse[p][li] != -INFINITY)
                            acc += t_load(&parts[p], b, s, h, c) * exp((double)part_lse[p][li] - L);
                    out[(((size_t)b * S + s) * H + h) * Dv + c] = acc;
                }
            }
}

#endif /* ATTN_TESTS_REF_H */
