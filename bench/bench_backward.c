/* bench/bench_backward.c - throughput of attn_backward beside attn_forward (`make bench`
   runs it; build alone with `make build/bench_backward`).

   Run:    ./build/bench_backward                 full set (about a minute on a quiet 2-core box)
           BENCH_QUICK=1 ./build/bench_backward   a few seconds
   Knobs:  BENCH_QUICK=1, BENCH_OUTDIR=<dir> (where results_backward.csv goes; default bench)
   Exit:   0 ok; 1 a result failed its check; 2 an attn_* call returned an error; 3 no memory
           or the CSV could not be written.

   What it does
     1. Measures the fp32 FMA peak (bench_util.h: 16 independent zmm accumulators under
        AVX-512, 12 ymm under AVX2) on 1 thread and on every online CPU, at the start and at
        the end; other work on the machine only lowers it, so the higher is the reference.
     2. For each shape times attn_forward and attn_backward (one warm-up call each, then
        repetitions until 0.5 s or 7 reps, at least 3; medians) with n_threads = every CPU.
        Before timing, the warm-up's dq (some rows), dk and dv (some keys) are checked against
        a double-precision evaluation of the gradient formulas that takes lse from the forward.
     3. On small shapes it also times a naive backward (what a C programmer would write: P
        materialised per head, then dV = P^T dO, dP = dO V^T, dS = P (dP - D), dQ = dS K,
        dK = dS^T Q, one thread) and reports the speed-up ratio.
   FLOPs: forward 4*S*S*D*H*B (Q.K^T and P.V); backward 2.5x that (FlashAttention-2's count:
   Q.K^T, dO.V^T, P^T dO, dS K, dS^T Q); causal counts only the S*(S+1)/2 unmasked pairs.
   % peak is of the all-thread FMA peak. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

typedef struct brow {
    char name[48];
    attn_dtype dt;
    int B, Hq, Hkv, S, D, causal, threads, naive;
    float dropout;                       /* attn_desc.dropout_p (seed 1) */
    double fwd_ms, bwd_ms, fwd_gf, bwd_gf, fwd_pct, bwd_pct, naive_ms, speedup, err;
    int ok;
} brow;

#define MAXR 32
static brow R[MAXR];
static int nR;
static int g_quick;

static double pairs(const brow *r) { return r->causal ? (double)r->S * (r->S + 1) / 2.0 : (double)r->S * r->S; }
static double fwd_flops(const brow *r) { return 4.0 * pairs(r) * r->D * r->Hq * r->B; }

/* --- naive backward: one head at a time, P materialised (f32 inputs, dense BSHD) --------- */
static void naive_backward(int S, int H, int Hkv, int D, int causal, const float *q, const float *k, const float *v,
                           const float *dout, float *dq, float *dk, float *dv, float *P, float *dP) {
    const float scale = 1.0f / sqrtf((float)D);
    const int g = H / Hkv;
    int h, i, j, c;
    memset(dk, 0, sizeof(float) * (size_t)S * Hkv * D);
    memset(dv, 0, sizeof(float) * (size_t)S * Hkv * D);
    for (h = 0; h < H; ++h) {
        const int hk = h / g;
        for (i = 0; i < S; ++i) {                          /* P = softmax(Q K^T scale) */
            const float *qi = q + ((size_t)i * H + h) * D;
            float mx = -INFINITY, sum = 0.0f;
            for (j = 0; j < S; ++j) {
                const float *kj = k + ((size_t)j * Hkv + hk) * D;
                float s = 0.0f;
                if (causal && j > i) { P[(size_t)i * S + j] = -INFINITY; continue; }
                for (c = 0; c < D; ++c) s += qi[c] * kj[c];
                P[(size_t)i * S + j] = s * scale;
                if (s * scale > mx) mx = s * scale;
            }
            for (j = 0; j < S; ++j) { float e = expf(P[(size_t)i * S + j] - mx); P[(size_t)i * S + j] = e; sum += e; }
            for (j = 0; j < S; ++j) P[(size_t)i * S + j] /= sum;
        }
        for (i = 0; i < S; ++i) {                          /* dP = dO V^T, D, dS */
            const float *doi = dout + ((size_t)i * H + h) * D;
            float Di = 0.0f;
            for (j = 0; j < S; ++j) {
                const float *vj = v + ((size_t)j * Hkv + hk) * D;
                float s = 0.0f;
                for (c = 0; c < D; ++c) s += doi[c] * vj[c];
                dP[(size_t)i * S + j] = s;
                Di += P[(size_t)i * S + j] * s;
            }
            for (j = 0; j < S; ++j) dP[(size_t)i * S + j] = P[(size_t)i * S + j] * (dP[(size_t)i * S + j] - Di);
        }
        for (i = 0; i < S; ++i) {                          /* dQ = dS K scale */
            float *dqi = dq + ((size_t)i * H + h) * D;
            for (c = 0; c < D; ++c) dqi[c] = 0.0f;
            for (j = 0; j < S; ++j) {
                const float *kj = k + ((size_t)j * Hkv + hk) * D;
                const float s = dP[(size_t)i * S + j] * scale;
                for (c = 0; c < D; ++c) dqi[c] += s * kj[c];
            }
        }
        for (i = 0; i < S; ++i) {                          /* dK += dS^T Q scale, dV += P^T dO */
            const float *qi = q + ((size_t)i * H + h) * D, *doi = dout + ((size_t)i * H + h) * D;
            for (j = 0; j < S; ++j) {
                float *dkj = dk + ((size_t)j * Hkv + hk) * D, *dvj = dv + ((size_t)j * Hkv + hk) * D;
                const float s = dP[(size_t)i * S + j] * scale, p = P[(size_t)i * S + j];
                for (c = 0; c < D; ++c) { dkj[c] += s * qi[c]; dvj[c] += p * doi[c]; }
            }
        }
    }
}

/* attn.h's documented dropout mask (DROPOUT block), written out again here */
static uint64_t mix64(uint64_t z) {
    z ^= z >> 30; z *= 0xBF58476D1CE4E5B9ull; z ^= z >> 27; z *= 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint32_t low32(uint32_t x) { x ^= x >> 16; x *= 0x7FEB352Du; x ^= x >> 15; x *= 0x846CA68Bu; return x ^ (x >> 16); }
static double drop_z(float p, int H, int S, int h, int i, int j) {
    const uint64_t r = mix64(1ull + 0x9E3779B97F4A7C15ull * (1u + (uint64_t)h * (uint64_t)S + (uint64_t)i));
    if (p <= 0.0f) return 1.0;
    (void)H;
    return (low32(low32((uint32_t)j + (uint32_t)r) ^ (uint32_t)(r >> 32)) >> 8) >= (uint32_t)((double)p * 16777216.0)
               ? (double)(1.0f / (1.0f - p)) : 0.0;
}

/* --- check: some rows of dq, some keys of dk/dv in double, lse and out from the forward --- */
static double check(const brow *r, const float *q, const float *k, const float *v, const float *out, const float *dout,
                    const float *lse, const void *dq, const void *dk, const void *dv) {
    const int S = r->S, H = r->Hq, Hkv = r->Hkv, D = r->D, g = H / Hkv;
    const double scale = 1.0 / sqrt((double)D);
    double *Drow = (double *)xalloc(sizeof(double) * (size_t)S), err = 0.0, mx = 1.0, *ref = (double *)xalloc(sizeof(double) * 3 * (size_t)D);
    const int hs[2] = { 0, H - 1 }, idx[3] = { 0, S / 2 + 1, S - 1 };
    int hi, t, i, j, c;
    for (hi = 0; hi < 2; ++hi) {
        const int h = hs[hi], hk = h / g;
        for (i = 0; i < S; ++i) {
            double s = 0.0;
            for (c = 0; c < D; ++c) s += (double)dout[((size_t)i * H + h) * D + c] * out[((size_t)i * H + h) * D + c];
            Drow[i] = s;
        }
#define P_DP(ii, jj, P, dP) do { double s_ = 0.0, t_ = 0.0; int c_; \
        for (c_ = 0; c_ < D; ++c_) { s_ += (double)q[((size_t)(ii) * H + h) * D + c_] * k[((size_t)(jj) * Hkv + hk) * D + c_]; \
                                     t_ += (double)dout[((size_t)(ii) * H + h) * D + c_] * v[((size_t)(jj) * Hkv + hk) * D + c_]; } \
        P = (r->causal && (jj) > (ii)) ? 0.0 : exp(s_ * scale - lse[(size_t)h * S + (ii)]); \
        Z = drop_z(r->dropout, H, S, h, (ii), (jj)); dP = t_ * Z; } while (0)
        for (t = 0; t < 3; ++t) {
            double P, dP, Z;
            const int x = idx[t];
            for (c = 0; c < 3 * D; ++c) ref[c] = 0.0;
            for (j = 0; j < S; ++j) {               /* dq row x */
                P_DP(x, j, P, dP);
                for (c = 0; c < D; ++c) ref[c] += P * (dP - Drow[x]) * scale * k[((size_t)j * Hkv + hk) * D + c];
            }
            for (i = 0; i < S; ++i) {               /* this head's share of dk, dv at key x */
                P_DP(i, x, P, dP);
                for (c = 0; c < D; ++c) {
                    ref[D + c] += P * (dP - Drow[i]) * scale * q[((size_t)i * H + h) * D + c];
                    ref[2 * D + c] += P * Z * dout[((size_t)i * H + h) * D + c];
                }
            }
            for (c = 0; c < D; ++c) {
                const double a = ld(dq, r->dt, ((size_t)x * H + h) * D + c);
                if (fabs(ref[c]) > mx) mx = fabs(ref[c]);
                if (fabs(a - ref[c]) > err || a != a) err = a != a ? INFINITY : fabs(a - ref[c]);
            }
            if (g == 1)                              /* dk/dv of a KV head sum the group: MHA only */
                for (c = 0; c < D; ++c) {
                    const double a = ld(dk, r->dt, ((size_t)x * Hkv + hk) * D + c), b = ld(dv, r->dt, ((size_t)x * Hkv + hk) * D + c);
                    if (fabs(ref[D + c]) > mx) mx = fabs(ref[D + c]);
                    if (fabs(ref[2 * D + c]) > mx) mx = fabs(ref[2 * D + c]);
                    if (fabs(a - ref[D + c]) > err || a != a) err = a != a ? INFINITY : fabs(a - ref[D + c]);
                    if (fabs(b - ref[2 * D + c]) > err || b != b) err = b != b ? INFINITY : fabs(b - ref[2 * D + c]);
                }
        }
#undef P_DP
    }
    free(Drow); free(ref);
    return err / mx;
}

static double time_call(int which, const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o,
                        attn_tensor dO, float *lse, attn_tensor dq, attn_tensor dk, attn_tensor dv, int *reps) {
    double ts[16], t0, total = 0.0, mn, mx;
    int n = 0;
    while (n < 7 && (n < 3 || total < 0.5)) {
        attn_status st;
        t0 = now_s();
        st = which == 0 ? attn_forward(d, q, k, v, o, lse) : attn_backward(d, q, k, v, o, dO, lse, dq, dk, dv);
        ts[n] = now_s() - t0;
        if (st != ATTN_OK) { fprintf(stderr, "attn call failed: %s\n", attn_status_str(st)); exit(2); }
        total += ts[n++];
    }
    *reps = n;
    return median_of(ts, n, &mn, &mx);
}

static int run_row(brow *r, double peak) {
    const int S = r->S, H = r->Hq, Hkv = r->Hkv, D = r->D;
    const size_t nq = (size_t)S * H * D, nk = (size_t)S * Hkv * D, es = dtype_size(r->dt);
    float *q = (float *)xalloc(nq * 4), *k = (float *)xalloc(nk * 4), *v = (float *)xalloc(nk * 4), *dout = (float *)xalloc(nq * 4);
    float *out = (float *)xalloc(nq * 4), *lse = (float *)xalloc((size_t)H * S * 4);
    void *lq = xalloc(nq * es), *lk = xalloc(nk * es), *lv = xalloc(nk * es), *ldo = xalloc(nq * es);
    void *dq = xalloc(nq * es), *dk = xalloc(nk * es), *dv = xalloc(nk * es);
    attn_desc d;
    attn_tensor tq, tk, tv, to, tdo, tdq, tdk, tdv;
    int reps;
    size_t i;
    fill_rand(q, nq); fill_rand(k, nk); fill_rand(v, nk); fill_rand(dout, nq);
    convert_from_f32(lq, r->dt, q, nq); convert_from_f32(lk, r->dt, k, nk); convert_from_f32(lv, r->dt, v, nk);
    convert_from_f32(ldo, r->dt, dout, nq);
    for (i = 0; i < nq; ++i) { q[i] = ld(lq, r->dt, i); dout[i] = ld(ldo, r->dt, i); }   /* the values as stored */
    for (i = 0; i < nk; ++i) { k[i] = ld(lk, r->dt, i); v[i] = ld(lv, r->dt, i); }
    memset(&d, 0, sizeof d);
    d.causal = r->causal; d.n_threads = r->threads;
    d.dropout_p = r->dropout; d.dropout_seed = 1;
    tq = attn_tensor_dense(lq, r->dt, 1, S, H, D); tk = attn_tensor_dense(lk, r->dt, 1, S, Hkv, D);
    tv = attn_tensor_dense(lv, r->dt, 1, S, Hkv, D); to = attn_tensor_dense(out, ATTN_F32, 1, S, H, D);
    tdo = attn_tensor_dense(ldo, r->dt, 1, S, H, D); tdq = attn_tensor_dense(dq, r->dt, 1, S, H, D);
    tdk = attn_tensor_dense(dk, r->dt, 1, S, Hkv, D); tdv = attn_tensor_dense(dv, r->dt, 1, S, Hkv, D);
    if (attn_forward(&d, tq, tk, tv, to, lse) != ATTN_OK ||
        attn_backward(&d, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv) != ATTN_OK) { fprintf(stderr, "attn call failed\n"); exit(2); }
    r->err = check(r, q, k, v, out, dout, lse, dq, dk, dv);
    r->ok = r->err <= (r->dt == ATTN_F32 ? 1e-4 : r->dt == ATTN_F16 ? 4e-3 : 3e-2);
    r->fwd_ms = 1e3 * time_call(0, &d, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv, &reps);
    r->bwd_ms = 1e3 * time_call(1, &d, tq, tk, tv, to, tdo, lse, tdq, tdk, tdv, &reps);
    r->fwd_gf = fwd_flops(r) / r->fwd_ms * 1e-6; r->bwd_gf = 2.5 * fwd_flops(r) / r->bwd_ms * 1e-6;
    r->fwd_pct = 100.0 * r->fwd_gf / peak; r->bwd_pct = 100.0 * r->bwd_gf / peak;
    if (r->naive && r->dt == ATTN_F32) {
        float *P = (float *)xalloc((size_t)S * S * 4), *dP = (float *)xalloc((size_t)S * S * 4);
        float *nq_ = (float *)xalloc(nq * 4), *nk_ = (float *)xalloc(nk * 4), *nv_ = (float *)xalloc(nk * 4);
        double ts[5], mn, mx;
        int n;
        for (n = 0; n < 3; ++n) {
            const double t0 = now_s();
            naive_backward(S, H, Hkv, D, r->causal, q, k, v, dout, nq_, nk_, nv_, P, dP);
            ts[n] = now_s() - t0;
        }
        r->naive_ms = 1e3 * median_of(ts, 3, &mn, &mx);
        r->speedup = r->naive_ms / r->bwd_ms;
        {   /* the naive path agrees too (so the ratio compares equal work) */
            double e = 0.0, m = 1.0;
            for (i = 0; i < nq; ++i) { if (fabs(nq_[i]) > m) m = fabs(nq_[i]); if (fabs(nq_[i] - ld(dq, r->dt, i)) > e) e = fabs(nq_[i] - ld(dq, r->dt, i)); }
            if (e / m > 1e-3) { r->ok = 0; printf("  naive dq disagrees with attn_backward: %.3g\n", e / m); }
        }
        free(P); free(dP); free(nq_); free(nk_); free(nv_);
    }
    free(q); free(k); free(v); free(dout); free(out); free(lse); free(lq); free(lk); free(lv); free(ldo); free(dq); free(dk); free(dv);
    return r->ok;
}

static brow *add(const char *name, attn_dtype dt, int Hq, int Hkv, int S, int D, int causal, int threads, int naive) {
    brow *r = &R[nR++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    r->dt = dt; r->B = 1; r->Hq = Hq; r->Hkv = Hkv; r->S = S; r->D = D; r->causal = causal; r->threads = threads; r->naive = naive;
    return r;
}

/* bench_util.h helpers this program does not use (referenced so -Wall stays quiet) */
static const struct {
    void (*mm)(machine *, int, int, double, size_t);
    void (*pm)(const machine *, int, size_t);
    double (*fc)(void);
    size_t (*llc)(void);
} bench_unused = { measure_machine, print_machine, flush_caches, llc_bytes };

int main(void) {
    const char *outdir = getenv("BENCH_OUTDIR");
    char path[512], cpu[256], name[48];
    int ncpu = online_cpus(), isa, i, failed = 0, c;
    double peak0, peak1, peak, sp, t_all;
    int att;
    FILE *f;
    (void)bench_unused;
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    if (!outdir || !*outdir) outdir = "bench";
    isa = best_fma_isa();
    cpu_model(cpu, sizeof cpu);
    printf("attn.h backward benchmark%s: %s, %d online CPUs, kernels %s\n", g_quick ? " (BENCH_QUICK)" : "", cpu, ncpu, attn_kernels());
    {
        FILE *la = fopen("/proc/loadavg", "r");
        double l1 = 0.0;
        if (la) {
            if (fscanf(la, "%lf", &l1) == 1 && l1 > 0.5)
                printf("note: load average %.2f before the start: other work on this machine makes the numbers noisy\n", l1);
            fclose(la);
        }
    }
    peak0 = fma_peak_steady(isa, ncpu, g_quick ? 0.05 : 0.2, &sp, &att);
    printf("FMA peak, %d threads (start): %.1f GFLOP/s (%s, spread %.1f%%)\n", ncpu, peak0, isa_desc[isa], sp);

    for (c = 0; c < 2; ++c) {
        const int Ss[4] = { 512, 1024, 2048, 4096 }, nS = g_quick ? 2 : 4;
        int s;
        for (s = 0; s < nS; ++s) {
            snprintf(name, sizeof name, "D128_S%d_%s", Ss[s], c ? "causal" : "full");
            add(name, ATTN_F32, 8, 8, Ss[s], 128, c, ncpu, Ss[s] <= 1024);
        }
    }
    if (!g_quick) {
        add("D128_S2048_GQA8:2_causal", ATTN_F32, 8, 2, 2048, 128, 1, ncpu, 0);
        add("D64_S4096_causal", ATTN_F32, 8, 8, 4096, 64, 1, ncpu, 0);
        add("D128_S2048_causal", ATTN_BF16, 8, 8, 2048, 128, 1, ncpu, 0);
        add("D128_S2048_causal", ATTN_F16, 8, 8, 2048, 128, 1, ncpu, 0);
        add("D128_S2048_causal_dropout0.1", ATTN_F32, 8, 8, 2048, 128, 1, ncpu, 0)->dropout = 0.1f;
    }
    t_all = now_s();
    printf("\n%-26s %-5s %7s %9s %7s %6s %9s %7s %6s %8s %9s %8s %9s\n", "case", "dtype", "threads", "fwd ms", "GF/s", "%peak",
           "bwd ms", "GF/s", "%peak", "bwd/fwd", "naive ms", "speedup", "check");
    for (i = 0; i < nR; ++i) {
        brow *r = &R[i];
        if (!run_row(r, peak0)) failed = 1;
        printf("%-26s %-5s %7d %9.2f %7.1f %6.1f %9.2f %7.1f %6.1f %8.2f ", r->name, dtype_name(r->dt), r->threads, r->fwd_ms,
               r->fwd_gf, r->fwd_pct, r->bwd_ms, r->bwd_gf, r->bwd_pct, r->bwd_ms / r->fwd_ms);
        if (r->naive_ms > 0) printf("%9.1f %7.1fx", r->naive_ms, r->speedup); else printf("%9s %8s", "-", "-");
        printf(" %9.2e%s\n", r->err, r->ok ? "" : " FAILED");
        fflush(stdout);
    }
    peak1 = fma_peak_steady(isa, ncpu, g_quick ? 0.05 : 0.2, &sp, &att);
    printf("\nFMA peak, %d threads (end): %.1f GFLOP/s (spread %.1f%%); cases took %.1f s\n", ncpu, peak1, sp, now_s() - t_all);
    peak = peak0 > peak1 ? peak0 : peak1;
    if (fabs(peak0 - peak1) > 0.1 * peak) printf("note: the start and end peaks differ by more than 10%%: a noisy run\n");
    for (i = 0; i < nR; ++i) {                     /* % of the higher peak */
        R[i].fwd_pct = 100.0 * R[i].fwd_gf / peak; R[i].bwd_pct = 100.0 * R[i].bwd_gf / peak;
    }
    printf("%% of peak against %.1f GFLOP/s (the higher of start and end). Targets (issue 4, fp32 S=4096 D=128): "
           "backward >= 40%%, causal >= 35%%\n", peak);
    for (i = 0; i < nR; ++i)
        if (R[i].S == 4096 && R[i].D == 128)
            printf("  %-22s backward %.1f%% of peak, forward %.1f%%\n", R[i].name, R[i].bwd_pct, R[i].fwd_pct);
    snprintf(path, sizeof path, "%s/results_backward.csv", outdir);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return 3; }
    bench_csv_header(f, "case,dtype,B,Hq,Hkv,S,D,causal,dropout_p,threads,fwd_ms,fwd_gflops,fwd_pct_peak,bwd_ms,bwd_gflops,"
                        "bwd_pct_peak,bwd_over_fwd_time,naive_ms,speedup_vs_naive,check_rel_err,status");
    bench_csv_machine(f);
    fprintf(f, "machine_fma_peak_all,f32,,,,,,,,%d,,%.2f,100,,,,,,,,ok\n", ncpu, peak);
    for (i = 0; i < nR; ++i) {
        const brow *r = &R[i];
        bench_csv_machine(f);
        fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%d,%g,%d,%.4f,%.2f,%.2f,%.4f,%.2f,%.2f,%.3f,", r->name, dtype_name(r->dt), r->B, r->Hq,
                r->Hkv, r->S, r->D, r->causal, (double)r->dropout, r->threads, r->fwd_ms, r->fwd_gf, r->fwd_pct, r->bwd_ms, r->bwd_gf, r->bwd_pct,
                r->bwd_ms / r->fwd_ms);
        if (r->naive_ms > 0) fprintf(f, "%.3f,%.2f,", r->naive_ms, r->speedup); else fprintf(f, ",,");
        fprintf(f, "%.3e,%s\n", r->err, r->ok ? "ok" : "FAILED");
    }
    if (fclose(f) != 0) return 3;
    printf("wrote %s\n", path);
    return failed;
}
