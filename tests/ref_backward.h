/* tests/ref_backward.h - naive double-precision reference for attn_backward (and for
   attn_forward with dropout), written from the SEMANTICS and DROPOUT blocks of attn.h
   (section 1) only. Per (sequence, head, query row) it materialises the row of P in double,
   then applies the textbook softmax-attention chain rule:
     x_ij = scale q_i.k_j,  t_ij = c tanh(x_ij / c) (softcap c > 0, else x_ij),
     l_ij = t_ij + bias_ij - slope_h |p_i - j|,  P_ij = exp(l_ij - lse_i) over visible j,
     z_ij = keep_ij / (1 - p) (dropout; else 1),  out_i = sum_j P_ij z_ij v_j,
     dP_ij = z_ij dout_i.v_j,  dl_ij = P_ij (dP_ij - sum_k P_ik dP_ik),  dbias_ij = dl_ij,
     dx_ij = dl_ij dt/dx,  dq_i += scale dx_ij k_j,  dk_j += scale dx_ij q_i,  dv_j += P_ij z_ij dout_i.
   Inputs and outputs are dense double arrays so finite differences can perturb them:
     q [B][Sq][Hq][D]  k [B][Sk][Hkv][D]  v [B][Sk][Hkv][Dv]  dout, out [B][Sq][Hq][Dv]
     bias, dbias [Bb][Hb][Sq][Sk] (or NULL)  lse [B][Hq][Sq]
   ostore (or NULL): the out the caller hands attn_backward, as stored; when given, the row term
   sum_k P_ik dP_ik is taken as dout_i . ostore_i (equal in exact arithmetic; FlashAttention-2
   and attn_backward use the stored out, so a rounded out shifts it by its rounding).
   Nothing here calls or shares code with attn.h's implementation. */
#ifndef ATTN_TESTS_REF_BACKWARD_H
#define ATTN_TESTS_REF_BACKWARD_H

#include "test.h"
#include "ref.h"

/* The dropout mask, re-implemented from attn.h's DROPOUT block. */
T_UNUSED static uint64_t rb_mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27; z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
T_UNUSED static uint32_t rb_low32(uint32_t x) {
    x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu;
    return x ^ (x >> 16);
}
/* keep_ij for tensor batch b, query head h, q tensor row i, k tensor row j */
T_UNUSED static int rb_keep(unsigned long long seed, float p, int Hq, int q_seq, int b, int h, int i, int j) {
    const uint64_t r = rb_mix64((uint64_t)seed + 0x9E3779B97F4A7C15ull * (1u + ((uint64_t)b * (uint64_t)Hq + (uint64_t)h) *
                                                                                  (uint64_t)q_seq + (uint64_t)i));
    const uint32_t x = rb_low32(rb_low32((uint32_t)j + (uint32_t)r) ^ (uint32_t)(r >> 32));
    return (x >> 8) >= (uint32_t)((double)p * 16777216.0);
}

typedef struct {
    int B, Sq, Sk, Hq, Hkv, D, Dv;   /* tensor shapes (varlen: B = 1, Sq/Sk = packed totals) */
    int Bb, Hb;                      /* bias batch/heads (when bias != NULL) */
} rb_dims;

/* out/lse (the forward, with dropout) and every gradient; any output pointer may be NULL. */
T_UNUSED static void ref_backward(const attn_desc *d, const rb_dims *z, const double *q, const double *k, const double *v,
                                  const double *dout, const double *bias, const double *ostore, double *out, double *lse, double *dq,
                                  double *dk, double *dv, double *dbias) {
    const int B = z->B, Sq = z->Sq, Sk = z->Sk, Hq = z->Hq, Hkv = z->Hkv, D = z->D, Dv = z->Dv, g = Hq / Hkv;
    const int varlen = d->cu_seqlens_q != NULL, n_units = varlen ? d->varlen_batch : B;
    const double scale = d->scale != 0.0f ? (double)d->scale : 1.0 / sqrt((double)D);
    const double zs = (double)(1.0f / (1.0f - d->dropout_p));
    double *l = (double *)t_xmalloc(sizeof(double) * (size_t)Sk), *dt = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
    double *P = (double *)t_xmalloc(sizeof(double) * (size_t)Sk), *Z = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
    double *dP = (double *)t_xmalloc(sizeof(double) * (size_t)Sk);
    int u, h, i, j, c;
    size_t n;
#define RB_Q(b, s, hh) (q + (((size_t)(b) * Sq + (size_t)(s)) * Hq + (size_t)(hh)) * D)
#define RB_K(b, s, hh) (((size_t)(b) * Sk + (size_t)(s)) * Hkv + (size_t)(hh))
#define RB_O(b, s, hh) ((((size_t)(b) * Sq + (size_t)(s)) * Hq + (size_t)(hh)) * Dv)
#define RB_BIAS(bb, hh, i_, j_) ((((size_t)(bb) * z->Hb + (size_t)(hh)) * Sq + (size_t)(i_)) * Sk + (size_t)(j_))
    if (out) for (n = 0; n < (size_t)B * Sq * Hq * Dv; ++n) out[n] = 0.0;
    if (lse) for (n = 0; n < (size_t)B * Hq * Sq; ++n) lse[n] = -INFINITY;
    if (dq) for (n = 0; n < (size_t)B * Sq * Hq * D; ++n) dq[n] = 0.0;
    if (dk) for (n = 0; n < (size_t)B * Sk * Hkv * D; ++n) dk[n] = 0.0;
    if (dv) for (n = 0; n < (size_t)B * Sk * Hkv * Dv; ++n) dv[n] = 0.0;
    if (dbias) for (n = 0; n < (size_t)z->Bb * z->Hb * Sq * Sk; ++n) dbias[n] = 0.0;
    for (u = 0; u < n_units; ++u) {
        int b, q0, k0, Lq, Lk;
        if (varlen) {
            b = 0; q0 = d->cu_seqlens_q[u]; Lq = d->cu_seqlens_q[u + 1] - q0;
            k0 = d->cu_seqlens_k[u]; Lk = d->cu_seqlens_k[u + 1] - k0;
        } else {
            b = u; q0 = 0; k0 = 0;
            Lq = d->seqlens_q ? d->seqlens_q[u] : Sq;
            Lk = d->seqlens_k ? d->seqlens_k[u] : Sk;
        }
        for (h = 0; h < Hq; ++h) {
            const int hk = h / g, bb = z->Bb == 1 ? 0 : b, bh = z->Hb == 1 ? 0 : h;
            for (i = 0; i < Lq; ++i) {
                const long long p = (long long)i + Lk - Lq;
                const double *qi = RB_Q(b, q0 + i, h), *doi = dout + RB_O(b, q0 + i, h);
                double mx = -INFINITY, sum = 0.0, L, Drow = 0.0;
                for (j = 0; j < Lk; ++j) {
                    const double *kj = k + RB_K(b, k0 + j, hk) * D;
                    double x = 0.0;
                    l[j] = -INFINITY; dt[j] = 1.0;
                    if (!ref_visible(d, i, j, Lq, Lk)) continue;
                    for (c = 0; c < D; ++c) x += qi[c] * kj[c];
                    x *= scale;
                    if (d->softcap > 0.0f) {
                        const double th = tanh(x / (double)d->softcap);
                        x = (double)d->softcap * th; dt[j] = 1.0 - th * th;
                    }
                    if (bias) x += bias[RB_BIAS(bb, bh, q0 + i, k0 + j)];
                    if (d->alibi_slopes) x -= (double)d->alibi_slopes[h] * (double)llabs(p - j);
                    l[j] = x;
                    if (x > mx) mx = x;
                }
                if (mx == -INFINITY) continue;            /* nothing visible: 0, -inf, no gradient */
                for (j = 0; j < Lk; ++j) if (l[j] != -INFINITY) sum += exp(l[j] - mx);
                L = mx + log(sum);
                if (lse) lse[((size_t)b * Hq + h) * Sq + (size_t)(q0 + i)] = L;
                for (j = 0; j < Lk; ++j) {
                    const double *vj = v + RB_K(b, k0 + j, hk) * Dv;
                    double x = 0.0;
                    P[j] = l[j] == -INFINITY ? 0.0 : exp(l[j] - L);
                    Z[j] = d->dropout_p > 0.0f ? (rb_keep(d->dropout_seed, d->dropout_p, Hq, Sq, b, h, q0 + i, k0 + j) ? zs : 0.0) : 1.0;
                    if (out) for (c = 0; c < Dv; ++c) out[RB_O(b, q0 + i, h) + c] += P[j] * Z[j] * vj[c];
                    for (c = 0; c < Dv; ++c) x += doi[c] * vj[c];
                    dP[j] = Z[j] * x;
                    Drow += P[j] * dP[j];
                }
                if (ostore) for (Drow = 0.0, c = 0; c < Dv; ++c) Drow += doi[c] * ostore[RB_O(b, q0 + i, h) + c];
                for (j = 0; j < Lk; ++j) {
                    const double dl = P[j] * (dP[j] - Drow), dx = dl * dt[j] * scale;
                    const size_t kr = RB_K(b, k0 + j, hk);
                    if (P[j] == 0.0) continue;
                    if (dbias) dbias[RB_BIAS(bb, bh, q0 + i, k0 + j)] += dl;
                    if (dq) for (c = 0; c < D; ++c) dq[(((size_t)b * Sq + (size_t)(q0 + i)) * Hq + (size_t)h) * D + c] += dx * k[kr * D + c];
                    if (dk) for (c = 0; c < D; ++c) dk[kr * D + c] += dx * qi[c];
                    if (dv) for (c = 0; c < Dv; ++c) dv[kr * Dv + c] += P[j] * Z[j] * doi[c];
                }
            }
        }
    }
#undef RB_Q
#undef RB_K
#undef RB_O
#undef RB_BIAS
    free(l); free(dt); free(P); free(Z); free(dP);
}

#endif /* ATTN_TESTS_REF_BACKWARD_H */
