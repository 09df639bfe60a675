/* bench/bench_linear.c - the linear family's attn_kinds against exact attention:
   ATTN_LINEAR (elu+1 features, D = Dv = 128), ATTN_COSFORMER (ReLU features re-weighted by
   cos(pi/2 (i - j)/M): 2 D features, D = Dv = 64) and ATTN_PERFORMER (FAVOR+, m = 256 positive
   random features, D = Dv = 64), all on the chunked ATTN_LINEAR core.
   For each:
   1. Time vs sequence length (B 1, H 8, fp32, all threads on an attn_pool), causal and not,
      from 1k tokens up, beside exact attention (ATTN_SOFTMAX, the same q/k/v) up to 16k; the
      fitted scaling exponents (log-log least squares), the crossover length, GFLOP/s and % of
      the measured FMA peak of the chunked kernel, and the max-norm difference between the two
      outputs (linear and cosFormer are other mechanisms, not approximations: it says how far
      apart they are; Performer approximates exact softmax attention: it is its error).
   2. The naive path: the token-by-token recurrence in plain C (1 thread), checked against the
      library's output, and the library's speed-up over it.
   3. Decoding: attn_step with one token per call: microseconds per token.
   4. attn_backward (dq, dk, dv; two chunked passes) at 4k and 16k tokens: time, its ratio to the
      forward and GFLOP/s of the GEMM work it executes.
   5. ATTN_LINEAR (elu+1) beside plain PyTorch autograd, one thread, B 1, H 8, D 64, S 1k/4k/16k,
      non-causal and causal: forward and backward (dq, dk, dv from dout) ms, GFLOP/s (the
      non-causal count for both) and the ratios, rounds interleaved in the same run (each round:
      attn.h's forward and backward on every case, then one Python process times the same cases:
      the fast-transformers LinearAttention einsums (non-causal) and fla's pure-torch chunked
      reference naive_chunk_linear_attn on elu+1 features (causal; fla's own kernels need
      triton), torch.set_num_threads(1), one warm-up, then forward and out.backward(dout) timed
      apart).
      Medians over the rounds; BENCH_PYTHON picks the Python (as bench_isa; no torch: no column).
      Writes BENCH_OUTDIR/results_linear_peer.csv.
   Env: BENCH_QUICK=1 (shorter lengths, fewer reps), BENCH_OUTDIR (default bench), BENCH_ONLY=name
   (one of linear, cosformer, performer, linear-peer: part 5 alone).
   Writes BENCH_OUTDIR/results_<name>.csv and BENCH_OUTDIR/chart_<name>.svg for each. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 8
#define CHUNK 64                 /* ATTN__LIN_ROWS: the intra-chunk product is counted whole */
#define MAX_F 256
#define N_CFG 3

typedef struct {
    const char *name, *title;
    attn_kind kind;
    int D, F;                    /* head dim (= Dv), features per row */
    int cos;                     /* cosFormer features and denominator clamp */
    int perf;                    /* Performer: F = m random features of a d-dim projection */
    int lmax, lmax_quick;
} lin_cfg;

static const lin_cfg g_cfgs[N_CFG] = {
    { "linear", "Linear attention (elu+1) vs exact attention: time per call, B 1, H 8, D 128, fp32", ATTN_LINEAR,
      128, 128, 0, 0, 262144, 32768 },
    { "cosformer", "cosFormer vs exact attention: time per call, B 1, H 8, D 64, fp32", ATTN_COSFORMER, 64, 128, 1, 0,
      131072, 16384 },
    { "performer", "Performer FAVOR+ (m 256) vs exact attention: time per call, B 1, H 8, D 64, fp32", ATTN_PERFORMER,
      64, 256, 0, 1, 131072, 16384 },
};
static float g_W[MAX_F * 128];   /* Performer's projection (attn_performer_draw, default params) */

static attn_pool *g_pool;
static int g_reps, g_quick, g_ncpu;

/* executed flops of the chunked kernel (ATTN__LIN_ROWS-row chunks, whole-chunk products) */
static double chunk_flops(const lin_cfg *c, int causal, int L) {
    const double D = c->D, F = c->F;
    double per = 2.0 * F * D + 2.0 * F * D + 2.0 * F;          /* absorb + phi(Q) S + den */
    if (causal) per += 2.0 * CHUNK * F + 2.0 * CHUNK * D;       /* A = phi(Q) phi(K)^T, A V */
    if (c->perf) per += 2.0 * 2.0 * D * F;                      /* the projections u = W x of q and k */
    return per * L * H;
}

/* the naive path: the causal recurrence S += phi(k) v^T, out = phi(q) S / den, with
   linear: phi(x) = elu(x) + 1, den = phi(q) z + 1e-6;
   cosFormer: phi(x) = [relu(x) sin a_t, relu(x) cos a_t], a_t = (pi/2)(t + 1)/M, M = L,
   den = max(phi(q) z, 1e-6) */
/* Performer: the split state of attn.h's ATTN_PERFORMER doc, token by token: u = W x / d^1/4,
   h = |x|^2 / (2 sqrt d); a key rescales (S, z) to the new running max c, adds exp(u - h - c) v^T
   and v to (S, vs); the query reads (q~ S + eps sum(q~) vs) / (q~ z + eps sum(q~) n),
   q~ = exp(u - h - max u) + eps. */
static void naive_performer(const lin_cfg *c, const float *q, const float *k, const float *v, float *out, int L, float *S,
                            float *z) {
    const int D = c->D, F = c->F;
    const float dn = 1.0f / sqrtf(sqrtf((float)D)), hm = 0.5f / sqrtf((float)D), eps = 1e-6f;
    int h, t, i, j;
    float u[MAX_F], vs[128];
    for (h = 0; h < H; ++h) {
        float cmax = 0.0f;
        memset(S, 0, sizeof(float) * F * D);
        memset(z, 0, sizeof(float) * F);
        memset(vs, 0, sizeof vs);
        for (t = 0; t < L; ++t) {
            const float *qt = q + ((size_t)t * H + h) * D, *kt = k + ((size_t)t * H + h) * D, *vt = v + ((size_t)t * H + h) * D;
            float *ot = out + ((size_t)t * H + h) * D, den = 0.0f, hh = 0.0f, mx = -INFINITY, sq = 0.0f;
            for (j = 0; j < D; ++j) hh += kt[j] * kt[j];
            for (i = 0; i < F; ++i) {
                u[i] = 0.0f;
                for (j = 0; j < D; ++j) u[i] += g_W[i * D + j] * kt[j];
                u[i] *= dn;
                if (u[i] > mx) mx = u[i];
            }
            if (t > 0 && mx > cmax) {
                const float f = expf(cmax - mx);
                for (i = 0; i < F * D; ++i) S[i] *= f;
                for (i = 0; i < F; ++i) z[i] *= f;
            }
            if (t == 0 || mx > cmax) cmax = mx;
            for (i = 0; i < F; ++i) {
                const float kf = expf(u[i] - hm * hh - cmax);
                z[i] += kf;
                for (j = 0; j < D; ++j) S[i * D + j] += kf * vt[j];
            }
            for (j = 0; j < D; ++j) vs[j] += vt[j];
            hh = 0.0f; mx = -INFINITY;
            for (j = 0; j < D; ++j) hh += qt[j] * qt[j];
            for (i = 0; i < F; ++i) {
                u[i] = 0.0f;
                for (j = 0; j < D; ++j) u[i] += g_W[i * D + j] * qt[j];
                u[i] *= dn;
                if (u[i] > mx) mx = u[i];
            }
            for (i = 0; i < F; ++i) { u[i] = expf(u[i] - hm * hh - mx) + eps; sq += u[i]; }
            for (j = 0; j < D; ++j) ot[j] = eps * sq * vs[j];
            den = eps * sq * (float)(t + 1);
            for (i = 0; i < F; ++i) {
                den += u[i] * z[i];
                for (j = 0; j < D; ++j) ot[j] += u[i] * S[i * D + j];
            }
            for (j = 0; j < D; ++j) ot[j] /= den;
        }
    }
}

static void naive_causal(const lin_cfg *c, const float *q, const float *k, const float *v, float *out, int L, float *S,
                         float *z) {
    const int D = c->D, F = c->F;
    int h, t, i, j;
    float pq[MAX_F], pk[MAX_F];
    if (c->perf) { naive_performer(c, q, k, v, out, L, S, z); return; }
    for (h = 0; h < H; ++h) {
        memset(S, 0, sizeof(float) * F * D);
        memset(z, 0, sizeof(float) * F);
        for (t = 0; t < L; ++t) {
            const float *qt = q + ((size_t)t * H + h) * D, *kt = k + ((size_t)t * H + h) * D, *vt = v + ((size_t)t * H + h) * D;
            float *ot = out + ((size_t)t * H + h) * D, den = 0.0f;
            if (c->cos) {
                const float sa = (float)sin(1.57079632679489661923 * (t + 1.0) / L);
                const float ca = (float)cos(1.57079632679489661923 * (t + 1.0) / L);
                for (i = 0; i < D; ++i) {
                    const float rq = qt[i] > 0 ? qt[i] : 0.0f, rk = kt[i] > 0 ? kt[i] : 0.0f;
                    pq[i] = rq * sa; pq[D + i] = rq * ca; pk[i] = rk * sa; pk[D + i] = rk * ca;
                }
            } else {
                for (i = 0; i < D; ++i) {
                    pq[i] = qt[i] > 0 ? qt[i] + 1.0f : expf(qt[i]);
                    pk[i] = kt[i] > 0 ? kt[i] + 1.0f : expf(kt[i]);
                }
            }
            for (i = 0; i < F; ++i) {
                z[i] += pk[i];
                for (j = 0; j < D; ++j) S[i * D + j] += pk[i] * vt[j];
            }
            for (j = 0; j < D; ++j) ot[j] = 0.0f;
            for (i = 0; i < F; ++i) {
                den += pq[i] * z[i];
                for (j = 0; j < D; ++j) ot[j] += pq[i] * S[i * D + j];
            }
            den = c->cos ? (den > 1e-6f ? den : 1e-6f) : den + 1e-6f;
            for (j = 0; j < D; ++j) ot[j] /= den;
        }
    }
}

/* every call runs on the pool; cosFormer's decoding fixes M up front */
static attn_desc desc_of(attn_kind kind, int causal, int decoding) {
    attn_desc d;
    memset(&d, 0, sizeof d);
    d.kind = kind; d.causal = causal; d.n_threads = g_ncpu;
    d.parallel = g_pool ? attn_pool_parallel : NULL; d.parallel_user = g_pool;
    if (kind == ATTN_COSFORMER && decoding) d.cosformer.max_len = 1 << 20;
    return d;
}

static void run(const lin_cfg *c, const machine *m, const char *outdir, float *q, float *k, float *v,
                float *o, float *oe) {
    const int D = c->D, Lmax = g_quick ? c->lmax_quick : c->lmax, Lexact = g_quick ? 4096 : 16384;
    const int Lnaive = g_quick ? 2048 : 4096;
    char path[512];
    int L, causal, i;
    bench_n_points = 0;
    printf("== %s: 1. time per call vs sequence length (B 1, H %d, D %d, fp32, %d threads)\n", c->name, H, D, g_ncpu);
    for (L = 1024; L <= Lmax; L *= 2)
        for (causal = 0; causal <= 1; ++causal) {
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, L, H, D);
            attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, L, H, D);
            double lo, hi, ms, ems = 0, elo = 0, ehi = 0, diff = NAN;
            attn_desc d;
            if (L <= Lexact) {
                d = desc_of(ATTN_SOFTMAX, causal, 0);
                ems = bench_time_forward(&d, tq, tk, tv, attn_tensor_dense(oe, ATTN_F32, 1, L, H, D), g_reps, &elo, &ehi);
            }
            d = desc_of(c->kind, causal, 0);
            ms = bench_time_forward(&d, tq, tk, tv, to, g_reps, &lo, &hi);
            if (L <= Lexact) diff = bench_max_norm_diff(o, oe, (size_t)L * H * D);
            if (L <= Lexact && c->perf) {       /* an estimate of exact attention: its RMS error */
                double se = 0.0, sr = 0.0;
                size_t e;
                for (e = 0; e < (size_t)L * H * D; ++e) { se += (double)(o[e] - oe[e]) * (o[e] - oe[e]); sr += (double)oe[e] * oe[e]; }
                printf("  performer causal %d L %6d: RMS error vs exact %.3g (exact output RMS %.3g)\n", causal, L,
                       sqrt(se / ((double)L * H * D)), sqrt(sr / ((double)L * H * D)));
            }
            bench_add_point(c->name, causal, L, ms, lo, hi, chunk_flops(c, causal, L), m->peak_all, diff);
            if (L <= Lexact)
                bench_add_point("exact", causal, L, ems, elo, ehi, (causal ? 2.0 : 4.0) * L * (double)L * D * H, m->peak_all, 0.0);
        }

    printf("== %s: 2. the naive recurrence (plain C, 1 thread), causal, L %d\n", c->name, Lnaive);
    {
        float *S = (float *)xalloc(sizeof(float) * c->F * D), *z = (float *)xalloc(sizeof(float) * c->F);
        float *on = (float *)xalloc((size_t)Lnaive * H * D * 4);
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, Lnaive, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, Lnaive, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, Lnaive, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, Lnaive, H, D);
        attn_desc d = desc_of(c->kind, 1, 0);
        double t0 = now_s(), nms;
        naive_causal(c, q, k, v, on, Lnaive, S, z);
        nms = (now_s() - t0) * 1e3;
        bench_add_point("naive", 1, Lnaive, nms, nms, nms, (c->perf ? 8.0 : 4.0) * c->F * D * (double)Lnaive * H, m->peak_1t, 0.0);
        attn_forward(&d, tq, tk, tv, to, NULL);
        bench_points[bench_n_points - 1].err = bench_max_norm_diff(o, on, (size_t)Lnaive * H * D);
        printf("  naive vs attn.h: max-norm difference %.2e; attn.h is %.1fx faster\n", bench_points[bench_n_points - 1].err,
               nms / bench_ms_of(c->name, 1, Lnaive));
        free(S); free(z); free(on);
    }

    printf("== %s: 3. decoding: attn_step, one token per call (B 1, H %d, D %d)\n", c->name, H, D);
    {
        attn_desc d = desc_of(c->kind, 1, 1);
        attn_state st;
        size_t floats = 0;
        float *sbuf;
        double t[64], lo, hi, us;
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, 1, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, 1, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, 1, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, 1, H, D);
        int reps = 51, j;
        if (attn_state_size(&d, tq, tk, tv, &floats) != ATTN_OK) die("attn_state_size failed");
        sbuf = (float *)xalloc(floats * 4);
        if (attn_state_init(&d, tq, tk, tv, sbuf, floats, &st) != ATTN_OK) die("attn_state_init failed");
        for (i = 0; i < reps; ++i) {
            double t0 = now_s();
            for (j = 0; j < 100; ++j) attn_step(&d, tq, tk, tv, &st, to);
            t[i] = (now_s() - t0) / 100.0;
        }
        us = median_of(t, reps, &lo, &hi) * 1e6;
        printf("  %.2f us per token (%.0f tokens/s; %.2f-%.2f), state %.0f KiB\n", us, 1e6 / us, lo * 1e6, hi * 1e6,
               floats * 4.0 / 1024);
        bench_add_point("step", 1, 1, us * 1e-3, lo * 1e3, hi * 1e3,
                        ((c->perf ? 8.0 : 4.0) * c->F * D + 2.0 * c->F) * H, m->peak_all, 0.0);
        free(sbuf);
    }

    printf("== %s: 4. backward: attn_backward (B 1, H %d, D %d, fp32, %d threads)\n", c->name, H, D, g_ncpu);
    {
        const int Lb[2] = { 4096, 16384 };
        int li;
        float *dO = (float *)xalloc((size_t)16384 * H * D * 4), *g3 = (float *)xalloc((size_t)3 * 16384 * H * D * 4);
        fill_rand(dO, (size_t)16384 * H * D);
        for (li = 0; li < (g_quick ? 1 : 2); ++li)
            for (causal = 0; causal <= 1; ++causal) {
                const int L = Lb[li];
                attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, L, H, D);
                attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, L, H, D);
                attn_tensor tdo = attn_tensor_dense(dO, ATTN_F32, 1, L, H, D);
                attn_tensor gq = attn_tensor_dense(g3, ATTN_F32, 1, L, H, D);
                attn_tensor gk = attn_tensor_dense(g3 + (size_t)16384 * H * D, ATTN_F32, 1, L, H, D);
                attn_tensor gv = attn_tensor_dense(g3 + (size_t)2 * 16384 * H * D, ATTN_F32, 1, L, H, D);
                attn_desc d = desc_of(c->kind, causal, 0);
                const double F = c->F, Dd = D;
                const double per = 12.0 * F * Dd + (causal ? 8.0 * CHUNK * (F + Dd) : 0.0) + (c->perf ? 12.0 * Dd * F : 0.0);
                double t[16], lo, hi, ms, fms = bench_ms_of(c->name, causal, L);
                int reps = g_quick ? 3 : 5;
                for (i = 0; i < reps; ++i) {
                    double t0 = now_s();
                    if (attn_backward(&d, tq, tk, tv, to, tdo, NULL, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
                    t[i] = now_s() - t0;
                }
                ms = median_of(t, reps, &lo, &hi) * 1e3;
                bench_add_point("backward", causal, L, ms, lo * 1e3, hi * 1e3, per * L * H, m->peak_all, 0.0);
                if (fms > 0) printf("  backward / forward time at L %d, %s: %.2f\n", L, causal ? "causal" : "non-causal", ms / fms);
            }
        free(dO); free(g3);
    }

    for (causal = 0; causal <= 1; ++causal)
        printf("%s, %s: exponent %.2f (L >= 4k), exact %.2f; crossover: faster than exact from L = %d\n", c->name,
               causal ? "causal" : "non-causal", bench_exponent(c->name, causal, 4096), bench_exponent("exact", causal, 4096),
               bench_crossover(c->name, causal));
    snprintf(path, sizeof path, "%s/results_%s.csv", outdir, c->name);
    bench_write_points_csv(path);
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/chart_%s.svg", outdir, c->name);
    bench_write_scaling_svg(path, c->title, c->name);
    printf("wrote %s\n", path);
}

/* ---- 5. ATTN_LINEAR against plain PyTorch autograd, one thread ---------------------------- */
static const char lin_torch_probe[] = "import torch; torch.einsum; print(torch.__version__)";
static const char lin_torch_snippet[] =
    "import sys, time, torch\n"
    "import torch.nn.functional as F\n"
    "torch.manual_seed(0)\n"
    "def fwd(q, k, v):\n"
    "    Q = F.elu(q) + 1\n"
    "    K = F.elu(k) + 1\n"
    "    KV = torch.einsum(\"nshd,nshm->nhmd\", K, v)\n"
    "    Z = 1 / (torch.einsum(\"nlhd,nhd->nlh\", Q, K.sum(dim=1)) + 1e-6)\n"
    "    return torch.einsum(\"nlhd,nhmd,nlh->nlhm\", Q, KV, Z)\n"
    "def fwd_causal(q, k, v):\n"
    "    from fla.ops.linear_attn.naive import naive_chunk_linear_attn\n"
    "    return naive_chunk_linear_attn(F.elu(q) + 1, F.elu(k) + 1, v, scale=1.0, normalize=True)\n"
    "for a in sys.argv[1:]:\n"
    "    S, H, D, t, causal = map(int, a.split(\",\"))\n"
    "    torch.set_num_threads(t)\n"
    "    x = [(torch.rand(1, S, H, D) * 2 - 1).requires_grad_() for _ in range(3)]\n"
    "    g = torch.rand(1, S, H, D) * 2 - 1\n"
    "    for it in range(2):\n"
    "        for y in x:\n"
    "            y.grad = None\n"
    "        t0 = time.perf_counter()\n"
    "        o = (fwd_causal if causal else fwd)(*x)\n"
    "        t1 = time.perf_counter()\n"
    "        o.backward(g)\n"
    "        t2 = time.perf_counter()\n"
    "    print(t1 - t0, flush=True)\n"
    "    print(t2 - t1, flush=True)\n";

static void run_peer(const char *outdir, const float *q, const float *k, const float *v, float *o) {
    enum { NS = 3, NC = 2 * NS, MAXR = 15 };   /* case c: length Ls[c / 2], causal c % 2 */
    static const int Ls[NS] = { 1024, 4096, 16384 };
    const int D = 64, rounds = g_quick ? 3 : 7, ns = g_quick ? 2 : NS, nc = 2 * ns;
    double ta[NC][2][MAXR], tt[NC][2][MAXR], med[NC][4];
    char ver[128], args[512], last[256], path[512];
    float *dO = (float *)xalloc((size_t)16384 * H * D * 4), *g3 = (float *)xalloc((size_t)3 * 16384 * H * D * 4);
    int torch_on, r, i, j, len = 0;
    FILE *f;
    fill_rand(dO, (size_t)16384 * H * D);
    torch_on = torch_probe_ok(lin_torch_probe, ver, sizeof ver);
    printf("== linear-peer: 5. ATTN_LINEAR (elu+1) non-causal and causal, B 1, H %d, D %d, fp32, 1 thread, %d interleaved rounds\n", H, D,
           rounds);
    if (torch_on)
        printf("  PyTorch %s (%s): plain autograd of the fast-transformers LinearAttention einsums (non-causal) and of fla's\n"
               "  pure-torch chunked reference naive_chunk_linear_attn (causal, chunk 64, normalize=True)\n", ver, g_python);
    else printf("  PyTorch column skipped: %s\n", g_torch_why);
    for (i = 0; i < nc; ++i) len += snprintf(args + len, sizeof args - (size_t)len, " %d,%d,%d,1,%d", Ls[i / 2], H, D, i % 2);
    for (r = 0; r < rounds; ++r) {
        for (i = 0; i < nc; ++i) {
            const int L = Ls[i / 2];
            attn_tensor tq = attn_tensor_dense((void *)q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense((void *)k, ATTN_F32, 1, L, H, D);
            attn_tensor tv = attn_tensor_dense((void *)v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, L, H, D);
            attn_tensor tdo = attn_tensor_dense(dO, ATTN_F32, 1, L, H, D), gq = attn_tensor_dense(g3, ATTN_F32, 1, L, H, D);
            attn_tensor gk = attn_tensor_dense(g3 + (size_t)16384 * H * D, ATTN_F32, 1, L, H, D);
            attn_tensor gv = attn_tensor_dense(g3 + (size_t)2 * 16384 * H * D, ATTN_F32, 1, L, H, D);
            attn_desc d;
            double t0;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LINEAR; d.n_threads = 1; d.causal = i % 2;
            if (r == 0 && (attn_forward(&d, tq, tk, tv, to, NULL) != ATTN_OK ||
                           attn_backward(&d, tq, tk, tv, to, tdo, NULL, gq, gk, gv) != ATTN_OK)) die("linear-peer warm-up failed");
            t0 = now_s();
            if (attn_forward(&d, tq, tk, tv, to, NULL) != ATTN_OK) die("attn_forward failed");
            ta[i][0][r] = now_s() - t0;
            t0 = now_s();
            if (attn_backward(&d, tq, tk, tv, to, tdo, NULL, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
            ta[i][1][r] = now_s() - t0;
        }
        if (torch_on) {
            double t[2 * NC];
            if (python_run(lin_torch_snippet, args, t, 2 * NC, last, sizeof last) != 2 * nc) {
                printf("  PyTorch column dropped: %s\n", last[0] ? last : g_torch_why);
                torch_on = 0;
            } else {
                for (i = 0; i < nc; ++i) { tt[i][0][r] = t[2 * i]; tt[i][1][r] = t[2 * i + 1]; }
            }
        }
    }
    snprintf(path, sizeof path, "%s/results_linear_peer.csv", outdir);
    if (!(f = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(f, "case,seq,heads,dim,threads,rounds,attn_fwd_ms,attn_bwd_ms,attn_fwd_gflops,attn_bwd_gflops,"
                        "torch_fwd_ms,torch_bwd_ms,fwd_speedup,bwd_speedup,attn_bwd_over_fwd,torch_version");
    for (i = 0; i < nc; ++i) {
        const double L = Ls[i / 2], ff = 4.0 * L * H * D * D, fb = 10.0 * L * H * D * D;   /* GEMM flops: 2 (fwd), 5 (bwd) products */
        double lo, hi;
        for (j = 0; j < 2; ++j) {
            med[i][j] = median_of(ta[i][j], rounds, &lo, &hi) * 1e3;
            med[i][2 + j] = torch_on ? median_of(tt[i][j], rounds, &lo, &hi) * 1e3 : NAN;
        }
        printf("  S %5d %-10s: attn.h forward %8.2f ms (%5.1f GFLOP/s), backward %8.2f ms (%5.1f GFLOP/s, %.2fx its forward)", Ls[i / 2],
               i % 2 ? "causal" : "non-causal", med[i][0], ff / med[i][0] * 1e-6, med[i][1], fb / med[i][1] * 1e-6, med[i][1] / med[i][0]);
        if (torch_on)
            printf("; torch forward %8.2f ms, backward %8.2f ms: attn.h %.2fx / %.2fx", med[i][2], med[i][3], med[i][2] / med[i][0],
                   med[i][3] / med[i][1]);
        printf("\n");
        bench_csv_machine(f);
        fprintf(f, "%s,%d,%d,%d,1,%d,%.3f,%.3f,%.1f,%.1f,", i % 2 ? "linear-causal" : "linear-noncausal", Ls[i / 2], H, D, rounds, med[i][0], med[i][1],
                ff / med[i][0] * 1e-6, fb / med[i][1] * 1e-6);
        if (torch_on)
            fprintf(f, "%.3f,%.3f,%.3f,%.3f,%.3f,%s\n", med[i][2], med[i][3], med[i][2] / med[i][0], med[i][3] / med[i][1],
                    med[i][1] / med[i][0], ver);
        else
            fprintf(f, ",,,,%.3f,\n", med[i][1] / med[i][0]);
    }
    if (fclose(f) != 0) die("cannot write the CSV");
    printf("wrote %s\n", path);
    free(dO); free(g3);
}

int main(void) {
    const char *outdir = getenv("BENCH_OUTDIR") ? getenv("BENCH_OUTDIR") : "bench";
    size_t nmax = 0;
    char cpu[256];
    machine m;
    float *q, *k, *v, *o, *oe;
    int i;
    g_quick = env_int("BENCH_QUICK", 0);
    g_ncpu = online_cpus();
    g_reps = g_quick ? 5 : 11;
    for (i = 0; i < N_CFG; ++i) {
        const size_t n = (size_t)(g_quick ? g_cfgs[i].lmax_quick : g_cfgs[i].lmax) * H * g_cfgs[i].D;
        if (n > nmax) nmax = n;
    }
    q = (float *)xalloc(nmax * 4); k = (float *)xalloc(nmax * 4); v = (float *)xalloc(nmax * 4);
    o = (float *)xalloc(nmax * 4); oe = (float *)xalloc((size_t)16384 * H * 128 * 4);
    cpu_model(cpu, sizeof cpu);
    printf("bench_linear: %s, %d threads, kernels %s\n", cpu, g_ncpu, attn_kernels());
    measure_machine(&m, best_fma_isa(), g_ncpu, g_quick ? 0.1 : 0.25, (size_t)256 << 20);
    print_machine(&m, g_ncpu, (size_t)256 << 20);
    fill_rand(q, nmax); fill_rand(k, nmax); fill_rand(v, nmax);
    g_pool = attn_pool_create(g_ncpu, 0);
    {
        attn_performer_params pp;
        memset(&pp, 0, sizeof pp);
        if (attn_performer_draw(&pp, 64, g_W) != ATTN_OK) die("attn_performer_draw failed");
    }
    for (i = 0; i < N_CFG; ++i) {
        const char *only = getenv("BENCH_ONLY");      /* e.g. BENCH_ONLY=performer */
        if (!only || !strcmp(only, g_cfgs[i].name)) run(&g_cfgs[i], &m, outdir, q, k, v, o, oe);
    }
    if (!getenv("BENCH_ONLY") || !strcmp(getenv("BENCH_ONLY"), "linear-peer") || !strcmp(getenv("BENCH_ONLY"), "linear"))
        run_peer(outdir, q, k, v, o);
    if (g_pool) attn_pool_destroy(g_pool);
    free(q); free(k); free(v); free(o); free(oe);
    return 0;
}
