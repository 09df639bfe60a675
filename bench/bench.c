/* bench/bench.c - throughput harness for attn.h (`make bench`; never part of `make test`).

   Build:  cc -std=c99 -O3 -march=native -Wall -Wextra -I. bench/bench.c -o build/bench -lm -pthread
   Run:    ./build/bench                  full set, under a minute on a 2-core AVX-512 machine
                                          with the SIMD kernels; capped at 10 minutes anyway
           BENCH_QUICK=1 ./build/bench    reduced set, a few seconds
   Knobs:  BENCH_QUICK=1       reduced case list, shorter peak/bandwidth runs
           BENCH_BUDGET=<s>    wall-clock budget (default 540 full, 50 quick): a prefill/naive
                               case whose estimated cost (from the rate of the cases already
                               run) would overrun it is skipped and marked so
           BENCH_OUTDIR=<dir>  where results.csv and chart.svg go (default: bench)
   Exit:   0 ok; 1 a case failed its correctness check; 2 attn_forward returned an error;
           3 out of memory or an output file could not be written.

   What it does
     1. Measures this machine: the fp32 FMA peak (an FMA loop with 16 independent zmm
        accumulators under AVX-512, 12 ymm under AVX2+FMA, a compiler-vectorised loop
        otherwise) on 1 thread and on every online CPU, 2 flops per lane per FMA, median of 5;
        and the read bandwidth (a multi-threaded sum over max(1 GiB, 8x LLC)), median of 5. A
        median whose runs spread by more than 10% is measured again (3 attempts, the steadiest
        kept). Both are measured at the start and again at the end; other work on the machine
        only ever lowers them, so the higher of the two is the reference for % peak and % bw,
        and a disagreement of more than 10% is reported as a noisy run.
     2. Times attn_forward (CLOCK_MONOTONIC; one warm-up call, then repetitions until 0.5 s or
        7 reps (25 for decode), at least 3; median, min and max reported) on prefill and
        decode shapes, and a naive attention written below (what a C programmer would write)
        on the small prefill shapes for the speed-up ratio. Every case's warm-up output is
        checked against a double-precision reference on a few rows first: a broken kernel is
        reported, not timed, and makes the exit status non-zero.
     3. Writes an aligned table to stdout, <outdir>/results.csv and <outdir>/chart.svg.

   FLOPs: 4*Sq*Sk*D*H*B (2 for Q.K^T, 2 for P.V); causal counts only the unmasked pairs
   (S*(S+1)/2 when Sq == Sk). % peak is of the all-thread FMA peak, or of the 1-thread peak
   for 1-thread rows. Decode GB/s counts the K and V bytes of one call. Before every decode
   call the caches are flushed (see flush_caches), so even the small KV caches are read from
   memory, as they are in a model where other layers' caches run in between. Decoding runs on
   an attn_pool (desc.parallel = attn_pool_parallel), which also runs the flush: a decode
   loop keeps its threads, and per-call threads would add 40-120 us to every call here. */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

/* ------------------------------------------------------------------------------------------
   2. cases
   ------------------------------------------------------------------------------------------ */
enum { K_DECODE = 0, K_PREFILL = 1, K_NAIVE = 2 };
enum { ST_PENDING = 0, ST_OK, ST_SKIPPED, ST_FAILED };

typedef struct bench_row {
    char name[48];
    int kind;
    attn_dtype dt;
    int B, Hq, Hkv, Sq, Sk, D, causal, threads; /* threads: 0 = all (attn_desc.n_threads = 0) */
    int status, reps;
    double med_ms, min_ms, max_ms;
    double gflops, pct_peak, gbs, pct_bw, speedup, kv_mib, check_err;
    double bw_local, pct_bw_local; /* decode: bandwidth of the flush reads between its calls */
} bench_row;

#define MAX_ROWS 128
static bench_row rows[MAX_ROWS];
static int n_rows;

static int g_ncpu;
static double g_peak_1t, g_peak_all, g_bw;

static bench_row *add_row(int kind, attn_dtype dt, int B, int Hq, int Hkv, int Sq, int Sk, int D,
                          int causal, int threads) {
    bench_row *r;
    if (n_rows >= MAX_ROWS) die("too many cases");
    r = &rows[n_rows++];
    memset(r, 0, sizeof *r);
    r->kind = kind; r->dt = dt; r->B = B; r->Hq = Hq; r->Hkv = Hkv; r->Sq = Sq; r->Sk = Sk;
    r->D = D; r->causal = causal; r->threads = threads;
    r->gflops = r->pct_peak = r->gbs = r->pct_bw = r->speedup = r->kv_mib = r->check_err = NAN;
    r->bw_local = r->pct_bw_local = NAN;
    r->med_ms = r->min_ms = r->max_ms = NAN;
    if (kind == K_DECODE && B > 1)
        snprintf(r->name, sizeof r->name, "decode_kv%dk_B%d", Sk / 1024, B);
    else if (kind == K_DECODE)
        snprintf(r->name, sizeof r->name, "decode_kv%dk", Sk / 1024);
    else
        snprintf(r->name, sizeof r->name, "%s_D%d_S%d_%s%s", kind == K_NAIVE ? "naive" : "prefill",
                 D, Sq, causal ? "causal" : "full", (kind == K_PREFILL && threads == 1) ? "_1t" : "");
    return r;
}

/* unmasked (query, key) pairs; causal is bottom-right aligned */
static double attn_pairs(const bench_row *r) {
    double pairs = 0.0;
    int i;
    if (!r->causal) return (double)r->Sq * r->Sk;
    for (i = 0; i < r->Sq; ++i) {
        long n = (long)i + r->Sk - r->Sq + 1;
        if (n > r->Sk) n = r->Sk;
        if (n > 0) pairs += (double)n;
    }
    return pairs;
}
static double attn_flops(const bench_row *r) {
    return 4.0 * (double)r->D * r->Hq * r->B * attn_pairs(r);
}
static double kv_bytes(const bench_row *r) {
    return 2.0 * (double)r->B * r->Sk * r->Hkv * r->D * (double)dtype_size(r->dt);
}

/* naive attention, what a C programmer writes: for each (b, h, i) the score row, softmax,
   weighted sum, in float, one thread. Dense [B, S, H, D] layout, GQA, bottom-right causal. */
static void naive_attention(int B, int Sq, int Sk, int Hq, int Hkv, int D, int causal,
                            const float *q, const float *k, const float *v, float *out,
                            float *scores) {
    const float scale = 1.0f / sqrtf((float)D);
    int b, h, i, j, d;
    for (b = 0; b < B; ++b)
        for (h = 0; h < Hq; ++h) {
            int kh = h / (Hq / Hkv);
            for (i = 0; i < Sq; ++i) {
                const float *qi = q + (((size_t)b * Sq + i) * Hq + h) * D;
                float *o = out + (((size_t)b * Sq + i) * Hq + h) * D;
                int n = causal ? i + Sk - Sq + 1 : Sk;
                float m = -INFINITY, sum = 0.0f;
                if (n > Sk) n = Sk;
                for (d = 0; d < D; ++d) o[d] = 0.0f;
                if (n <= 0) continue;
                for (j = 0; j < n; ++j) {
                    const float *kj = k + (((size_t)b * Sk + j) * Hkv + kh) * D;
                    float s = 0.0f;
                    for (d = 0; d < D; ++d) s += qi[d] * kj[d];
                    s *= scale;
                    scores[j] = s;
                    if (s > m) m = s;
                }
                for (j = 0; j < n; ++j) {
                    scores[j] = expf(scores[j] - m);
                    sum += scores[j];
                }
                for (j = 0; j < n; ++j) {
                    const float *vj = v + (((size_t)b * Sk + j) * Hkv + kh) * D;
                    float p = scores[j] / sum;
                    for (d = 0; d < D; ++d) o[d] += p * vj[d];
                }
            }
        }
}

/* Check one output row against a double-precision reference computed from the same stored
   inputs. Returns max |out - ref| / max_d(sum_j p_j |v_jd|) over the row; *ok = 0 when an
   element exceeds tol_acc * mag_d + tol_out * |ref_d| (or is not finite). */
static double check_row(const bench_row *r, const void *q, const void *k, const void *v,
                        const void *o, attn_dtype out_dt, int b, int i, int h, int *ok) {
    const int D = r->D, Sk = r->Sk, kh = h / (r->Hq / r->Hkv);
    const double scale = 1.0 / sqrt((double)D);
    const double tol_acc = r->dt == ATTN_F32 ? 2e-4 : (r->dt == ATTN_F16 ? 2e-3 : 1e-2);
    const double tol_out = out_dt == ATTN_F32 ? 0.0 : (out_dt == ATTN_F16 ? 1.0 / 1024 : 1.0 / 256);
    double acc[512], mag[512], m = -INFINITY, sum = 0.0, worst = 0.0, magmax = 0.0;
    double *s;
    size_t qoff = (((size_t)b * r->Sq + i) * r->Hq + h) * D;
    long n = r->causal ? (long)i + Sk - r->Sq + 1 : Sk;
    long j;
    int d;
    if (n > Sk) n = Sk;
    if (D > 512) die("check_row: D > 512");
    for (d = 0; d < D; ++d) acc[d] = mag[d] = 0.0;
    s = (double *)malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!s) die("out of memory");
    for (j = 0; j < n; ++j) {
        size_t koff = (((size_t)b * Sk + (size_t)j) * r->Hkv + kh) * D;
        double dot = 0.0;
        for (d = 0; d < D; ++d) dot += (double)ld(q, r->dt, qoff + d) * (double)ld(k, r->dt, koff + d);
        s[j] = dot * scale;
        if (s[j] > m) m = s[j];
    }
    for (j = 0; j < n; ++j) {
        size_t voff = (((size_t)b * Sk + (size_t)j) * r->Hkv + kh) * D;
        double p = exp(s[j] - m);
        sum += p;
        for (d = 0; d < D; ++d) {
            double vv = (double)ld(v, r->dt, voff + d);
            acc[d] += p * vv;
            mag[d] += p * fabs(vv);
        }
    }
    free(s);
    for (d = 0; d < D; ++d) {
        if (n > 0) { acc[d] /= sum; mag[d] /= sum; }
        if (mag[d] > magmax) magmax = mag[d];
    }
    for (d = 0; d < D; ++d) {
        double got = (double)ld(o, out_dt, qoff + d), err = fabs(got - acc[d]);
        double allowed = tol_acc * (mag[d] > 0 ? mag[d] : 1e-30) + tol_out * fabs(acc[d]) + 1e-30;
        if (!(err <= allowed)) *ok = 0;
        if (!(err <= worst)) worst = err; /* NaN propagates */
    }
    return worst / (magmax > 0 ? magmax : 1.0);
}

/* rows checked per case: a few queries (first, a third in, last) for the first and last head
   (prefill), or four heads (decode), in the first and last batch */
static int check_case(bench_row *r, const void *q, const void *k, const void *v, const void *o,
                      attn_dtype out_dt) {
    int qi[3], hs[4], nq, nh, a, c, bi, ok = 1;
    int bs[2];
    double worst = 0.0;
    if (r->kind == K_DECODE) {
        qi[0] = 0; nq = 1;
        hs[0] = 0; hs[1] = r->Hq / 3; hs[2] = (2 * r->Hq) / 3 + 1; hs[3] = r->Hq - 1; nh = 4;
    } else {
        qi[0] = 0; qi[1] = r->Sq / 3; qi[2] = r->Sq - 1; nq = 3;
        hs[0] = 0; hs[1] = r->Hq - 1; nh = 2;
    }
    bs[0] = 0; bs[1] = r->B - 1;
    for (bi = 0; bi < (r->B > 1 ? 2 : 1); ++bi)
        for (a = 0; a < nq; ++a)
            for (c = 0; c < nh; ++c) {
                double e = check_row(r, q, k, v, o, out_dt, bs[bi], qi[a], hs[c], &ok);
                if (!(e <= worst)) worst = e;
            }
    r->check_err = worst;
    return ok;
}

/* --- timing ---------------------------------------------------------------------------- */
typedef struct run_ctx {
    const bench_row *r;
    attn_desc desc;
    attn_tensor q, k, v, o;
    const float *qf, *kf, *vf; /* naive */
    float *of, *scores;
} run_ctx;

static void call_case(run_ctx *c) {
    if (c->r->kind == K_NAIVE) {
        naive_attention(c->r->B, c->r->Sq, c->r->Sk, c->r->Hq, c->r->Hkv, c->r->D, c->r->causal,
                        c->qf, c->kf, c->vf, c->of, c->scores);
    } else {
        attn_status s = attn_forward(&c->desc, c->q, c->k, c->v, c->o, NULL);
        if (s != ATTN_OK) {
            fprintf(stderr, "bench: attn_forward failed on %s (%s): %s\n", c->r->name,
                    dtype_name(c->r->dt), attn_status_str(s));
            exit(2);
        }
    }
}

static int g_quick;
static double g_t_start, g_budget;
static const double MIN_TIME = 0.5;
static const int MIN_REPS = 3, MAX_REPS = 7, MAX_REPS_DECODE = 25;

/* timed reps (the caller has made the warm-up call and checked its output) */
static void time_case(bench_row *r, run_ctx *c, int flush) {
    double t[64], bw[64], t0, total = 0.0;
    int n = 0;
    for (;;) {
        if (flush) bw[n] = flush_caches();
        t0 = now_s();
        call_case(c);
        t[n] = now_s() - t0;
        total += t[n];
        ++n;
        if (n >= (flush ? MAX_REPS_DECODE : MAX_REPS) || (n >= MIN_REPS && total >= MIN_TIME)) break;
    }
    r->reps = n;
    if (flush) {
        r->bw_local = median_of(bw, n, NULL, NULL);
        r->pct_bw_local = median_pct_of_flush(kv_bytes(r), t, bw, n);
    }
    r->med_ms = 1e3 * median_of(t, n, &r->min_ms, &r->max_ms);
    r->min_ms *= 1e3;
    r->max_ms *= 1e3;
}

/* Estimated GFLOP/s of a case from those already measured (same series first), 0 if none */
static double estimate_rate(const bench_row *r) {
    int pass, i;
    for (pass = 0; pass < 4; ++pass)
        for (i = n_rows - 1; i >= 0; --i) {
            const bench_row *o = &rows[i];
            if (o->status != ST_OK || o == r) continue;
            if ((o->kind == K_NAIVE) != (r->kind == K_NAIVE)) continue;
            if (pass <= 2 && (o->kind != r->kind || o->threads != r->threads)) continue;
            if (pass <= 1 && (o->D != r->D || o->causal != r->causal)) continue;
            if (pass == 0 && o->dt != r->dt) continue;
            return o->gflops;
        }
    return 0.0;
}

/* true when the case fits in what is left of the budget */
static int fits_budget(const bench_row *r) {
    double rate = estimate_rate(r), call, reps, cost;
    if (rate <= 0.0) return 1;
    call = attn_flops(r) / (rate * 1e9) * 1.15;
    reps = ceil(MIN_TIME / call);
    if (reps < MIN_REPS) reps = MIN_REPS;
    if (reps > MAX_REPS) reps = MAX_REPS;
    cost = call * (1.0 + reps);
    return (now_s() - g_t_start) + cost <= g_budget;
}

static void finish_row(bench_row *r) {
    r->gflops = attn_flops(r) / (r->med_ms * 1e-3) * 1e-9;
    if (r->kind == K_DECODE) {
        r->kv_mib = kv_bytes(r) / MIB;
        r->gbs = kv_bytes(r) / (r->med_ms * 1e-3) * 1e-9;
    }
}

/* % of peak and of bandwidth, once the machine numbers are final */
static void set_percentages(bench_row *r) {
    if (r->status != ST_OK) return;
    r->pct_peak = 100.0 * r->gflops / (r->threads == 1 ? g_peak_1t : g_peak_all);
    if (r->kind == K_DECODE) {
        r->pct_bw = 100.0 * r->gbs / g_bw;
    }
}

static int g_failed;

static void progress(const bench_row *r, int idx, int total) {
    if (r->status == ST_OK && r->kind == K_DECODE)
        fprintf(stderr, "[%2d/%2d] %-26s %-4s %10.3f ms  %8.1f GB/s\n", idx, total, r->name,
                dtype_name(r->dt), r->med_ms, r->gbs);
    else if (r->status == ST_OK)
        fprintf(stderr, "[%2d/%2d] %-26s %-4s %10.3f ms  %8.1f GFLOP/s\n", idx, total, r->name,
                dtype_name(r->dt), r->med_ms, r->gflops);
    else
        fprintf(stderr, "[%2d/%2d] %-26s %-4s %s\n", idx, total, r->name, dtype_name(r->dt),
                r->status == ST_SKIPPED ? "skipped (time budget)" : "FAILED the check, not timed");
}

/* --- prefill data: f32 masters (dense prefixes serve every S and D), converted copies -- */
static float *pq, *pk, *pv, *pout, *naive_out, *naive_scores;
static void *lq, *lk, *lv;
static attn_dtype l_dt = ATTN_F32;
static size_t l_n;

static void run_prefill(bench_row *r) {
    run_ctx c;
    size_t n = (size_t)r->Sq * r->Hq * r->D;
    const void *q = pq, *k = pk, *v = pv;
    memset(&c, 0, sizeof c);
    c.r = r;
    if (r->kind == K_NAIVE) {
        c.qf = pq; c.kf = pk; c.vf = pv; c.of = naive_out; c.scores = naive_scores;
    } else {
        if (r->dt != ATTN_F32) {
            if (l_dt != r->dt || l_n != n) {
                convert_from_f32(lq, r->dt, pq, n);
                convert_from_f32(lk, r->dt, pk, n);
                convert_from_f32(lv, r->dt, pv, n);
                l_dt = r->dt; l_n = n;
            }
            q = lq; k = lk; v = lv;
        }
        c.desc.causal = r->causal;
        c.desc.n_threads = r->threads;
        c.q = attn_tensor_dense((void *)q, r->dt, r->B, r->Sq, r->Hq, r->D);
        c.k = attn_tensor_dense((void *)k, r->dt, r->B, r->Sk, r->Hkv, r->D);
        c.v = attn_tensor_dense((void *)v, r->dt, r->B, r->Sk, r->Hkv, r->D);
        c.o = attn_tensor_dense(pout, r->dt, r->B, r->Sq, r->Hq, r->D);
    }
    /* warm-up + check */
    call_case(&c);
    if (!check_case(r, q, k, v, r->kind == K_NAIVE ? (void *)naive_out : (void *)pout,
                    r->kind == K_NAIVE ? ATTN_F32 : r->dt)) {
        r->status = ST_FAILED;
        g_failed++;
        return;
    }
    time_case(r, &c, 0);
    r->status = ST_OK;
    finish_row(r);
}

/* --- decode data --------------------------------------------------------------------- */
static float *dk, *dv, *dq, *dout; /* f32 masters: [Bmax, Lmax, 8, 128] */
static void *dlk, *dlv;            /* converted copies for B = 1, Lmax */
static attn_dtype dl_dt = ATTN_F32;

static void run_decode(bench_row *r, size_t lmax_elems) {
    run_ctx c;
    const void *k = dk, *v = dv;
    memset(&c, 0, sizeof c);
    c.r = r;
    if (r->dt != ATTN_F32) {
        if (r->B != 1) die("decode: f16/bf16 cases use B = 1");
        if (dl_dt != r->dt) {
            convert_from_f32(dlk, r->dt, dk, lmax_elems);
            convert_from_f32(dlv, r->dt, dv, lmax_elems);
            dl_dt = r->dt;
        }
        k = dlk; v = dlv;
    }
    /* q is tiny: store it in the case dtype in the first bytes of a spare buffer */
    {
        static void *qbuf;
        size_t nq = (size_t)r->B * r->Hq * r->D;
        if (!qbuf) qbuf = xalloc((size_t)16 * 32 * 128 * 4);
        convert_from_f32(qbuf, r->dt, dq, nq);
        c.q = attn_tensor_dense(qbuf, r->dt, r->B, 1, r->Hq, r->D);
    }
    c.desc.n_threads = r->threads;
    c.desc.parallel = g_bench_pool ? attn_pool_parallel : NULL;
    c.desc.parallel_user = g_bench_pool;
    c.k = attn_tensor_dense((void *)k, r->dt, r->B, r->Sk, r->Hkv, r->D);
    c.v = attn_tensor_dense((void *)v, r->dt, r->B, r->Sk, r->Hkv, r->D);
    c.o = attn_tensor_dense(dout, r->dt, r->B, 1, r->Hq, r->D);
    flush_caches();
    call_case(&c);
    if (!check_case(r, c.q.data, k, v, dout, r->dt)) {
        r->status = ST_FAILED;
        g_failed++;
        return;
    }
    time_case(r, &c, 1);
    r->status = ST_OK;
    finish_row(r);
}

/* ------------------------------------------------------------------------------------------
   3. output: table, CSV, SVG
   ------------------------------------------------------------------------------------------ */
static int row_order(const void *a, const void *b) {
    const bench_row *x = *(const bench_row *const *)a, *y = *(const bench_row *const *)b;
#define CMP(f) if (x->f != y->f) return x->f < y->f ? -1 : 1;
    CMP(kind)
    if (x->threads != y->threads) return x->threads == 0 ? -1 : 1; /* all threads first */
    CMP(dt) CMP(D) CMP(causal) CMP(B) CMP(Sk)
#undef CMP
    return 0;
}

static void fmt_num(char *buf, size_t n, double v, const char *fmt) {
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, fmt, v);
}

static void print_table(bench_row **ord, int n) {
    int i, last_kind = -1;
    for (i = 0; i < n; ++i) {
        const bench_row *r = ord[i];
        char ms[32], sp[32], gf[32], pp[32], gb[32], pb[32], bl[32], pl[32], su[32], ck[32];
        if (r->kind != last_kind) {
            if (r->kind == K_DECODE)
                printf("\n-- decode: Sq=1, Hq=32, Hkv=8, D=128 (attn_forward; caches flushed before every call)\n"
                       "%-20s %-4s %2s %6s %7s %3s %11s %7s %7s %6s %8s %6s %8s %8s %8s\n", "case", "dtype", "B",
                       "Sk", "KV MiB", "thr", "median ms", "spread", "GB/s", "%bw", "bw@case", "%bw@", "GFLOP/s",
                       "%peak", "check");
            else
                printf("\n-- %s\n%-26s %-4s %2s %3s %3s %5s %6s %4s %6s %3s %11s %7s %8s %6s %8s %8s\n",
                       r->kind == K_PREFILL ? "prefill: B=1, H=8 (attn_forward)"
                                            : "naive attention (bench.c, 1 thread, float)",
                       "case", "dtype", "B", "Hq", "Hkv", "Sq", "Sk", "D", "causal", "thr", "median ms", "spread",
                       "GFLOP/s", "%peak", "x naive", "check");
            last_kind = r->kind;
        }
        fmt_num(ms, sizeof ms, r->med_ms, r->med_ms < 10 ? "%.3f" : (r->med_ms < 1000 ? "%.2f" : "%.1f"));
        if (r->status == ST_OK) snprintf(sp, sizeof sp, "%5.1f%%", 100.0 * (r->max_ms - r->min_ms) / r->med_ms);
        else snprintf(sp, sizeof sp, "-");
        fmt_num(gf, sizeof gf, r->gflops, "%.1f");
        fmt_num(pp, sizeof pp, r->pct_peak, "%.1f");
        fmt_num(gb, sizeof gb, r->gbs, "%.1f");
        fmt_num(pb, sizeof pb, r->pct_bw, "%.1f");
        fmt_num(bl, sizeof bl, r->bw_local, "%.1f");
        fmt_num(pl, sizeof pl, r->pct_bw_local, "%.1f");
        fmt_num(su, sizeof su, r->speedup, "%.1fx");
        if (r->status == ST_SKIPPED) snprintf(ck, sizeof ck, "skipped");
        else if (r->status == ST_FAILED) snprintf(ck, sizeof ck, "FAIL %.1e", r->check_err);
        else fmt_num(ck, sizeof ck, r->check_err, "%.1e");
        if (r->kind == K_DECODE)
            printf("%-20s %-4s %2d %6d %7.0f %3d %11s %7s %7s %6s %8s %6s %8s %8s %8s\n", r->name,
                   dtype_name(r->dt), r->B, r->Sk, kv_bytes(r) / MIB, r->threads ? r->threads : g_ncpu, ms, sp,
                   gb, pb, bl, pl, gf, pp, ck);
        else
            printf("%-26s %-4s %2d %3d %3d %5d %6d %4d %6s %3d %11s %7s %8s %6s %8s %8s\n", r->name,
                   dtype_name(r->dt), r->B, r->Hq, r->Hkv, r->Sq, r->Sk, r->D, r->causal ? "yes" : "no",
                   r->threads ? r->threads : g_ncpu, ms, sp, gf, pp, su, ck);
    }
}

static void csv_num(FILE *f, double v, const char *fmt) {
    fputc(',', f);
    if (!isnan(v)) fprintf(f, fmt, v);
}

static int write_csv(const char *path, bench_row **ord, int n) {
    FILE *f = fopen(path, "w");
    int i;
    if (!f) return 0;
    bench_csv_header(f, "case,dtype,B,Hq,Hkv,Sq,Sk,D,causal,threads,median_ms,gflops,pct_peak,gbs,pct_bw,"
                        "speedup_vs_naive,min_ms,max_ms,reps,kv_mib,bw_local_gbs,pct_bw_local,check_rel_err,status");
    /* the machine measurements, as rows of their own */
    bench_csv_machine(f);
    fprintf(f, "machine_fma_peak_1t,f32,,,,,,,,1,,%.2f,100,,,,,,5,,,,,ok\n", g_peak_1t);
    bench_csv_machine(f);
    fprintf(f, "machine_fma_peak_all,f32,,,,,,,,%d,,%.2f,100,,,,,,5,,,,,ok\n", g_ncpu, g_peak_all);
    bench_csv_machine(f);
    fprintf(f, "machine_read_bw,f32,,,,,,,,%d,,,,%.2f,100,,,,5,,,,,ok\n", g_ncpu, g_bw);
    for (i = 0; i < n; ++i) {
        const bench_row *r = ord[i];
        bench_csv_machine(f);
        fprintf(f, "%s,%s,%d,%d,%d,%d,%d,%d,%d,%d", r->name, dtype_name(r->dt), r->B, r->Hq, r->Hkv,
                r->Sq, r->Sk, r->D, r->causal, r->threads ? r->threads : g_ncpu);
        csv_num(f, r->med_ms, "%.4f");
        csv_num(f, r->gflops, "%.2f");
        csv_num(f, r->pct_peak, "%.2f");
        csv_num(f, r->gbs, "%.2f");
        csv_num(f, r->pct_bw, "%.2f");
        csv_num(f, r->speedup, "%.2f");
        csv_num(f, r->min_ms, "%.4f");
        csv_num(f, r->max_ms, "%.4f");
        fprintf(f, ",%d", r->reps);
        csv_num(f, r->kv_mib, "%.1f");
        csv_num(f, r->bw_local, "%.2f");
        csv_num(f, r->pct_bw_local, "%.2f");
        csv_num(f, r->check_err, "%.2e");
        fprintf(f, ",%s\n", r->status == ST_OK ? "ok" : (r->status == ST_SKIPPED ? "skipped" : "check_failed"));
    }
    return fclose(f) == 0;
}

typedef struct series {
    int kind; attn_dtype dt; int D, causal, threads;
    const char *color, *label;
} series;

static double nice_step(double range, int ticks) {
    double raw = range / ticks, p = pow(10.0, floor(log10(raw))), m = raw / p;
    return p * (m <= 1.0 ? 1.0 : (m <= 2.0 ? 2.0 : (m <= 2.5 ? 2.5 : (m <= 5.0 ? 5.0 : 10.0))));
}

static int write_svg(const char *path) {
    static const series ser[] = {
        { K_PREFILL, ATTN_F32,  64, 0, 0, "#1f77b4", "f32 D=64" },
        { K_PREFILL, ATTN_F32,  64, 1, 0, "#1f77b4", "f32 D=64 causal" },
        { K_PREFILL, ATTN_F32, 128, 0, 0, "#d62728", "f32 D=128" },
        { K_PREFILL, ATTN_F32, 128, 1, 0, "#d62728", "f32 D=128 causal" },
        { K_PREFILL, ATTN_F16, 128, 0, 0, "#2ca02c", "f16 D=128" },
        { K_PREFILL, ATTN_F16, 128, 1, 0, "#2ca02c", "f16 D=128 causal" },
        { K_PREFILL, ATTN_BF16, 128, 0, 0, "#9467bd", "bf16 D=128" },
        { K_PREFILL, ATTN_BF16, 128, 1, 0, "#9467bd", "bf16 D=128 causal" },
        { K_PREFILL, ATTN_F32, 128, 0, 1, "#ff7f0e", "f32 D=128, 1 thread" },
        { K_NAIVE, ATTN_F32,  64, 0, 1, "#7f7f7f", "naive f32 D=64" },
        { K_NAIVE, ATTN_F32,  64, 1, 1, "#7f7f7f", "naive f32 D=64 causal" },
        { K_NAIVE, ATTN_F32, 128, 0, 1, "#bcbd22", "naive f32 D=128" },
        { K_NAIVE, ATTN_F32, 128, 1, 1, "#bcbd22", "naive f32 D=128 causal" },
    };
    const int n_ser = (int)(sizeof ser / sizeof ser[0]);
    const double W = 1000, H = 620, L = 80, R = 690, T = 78, Bt = 540;
    const double xlo = 8.7, xhi = 13.3; /* log2 S */
    const char *halo = " stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\"";
    double ymax = g_peak_all, step, y, pct;
    FILE *f;
    int i, s, legend_n = 0;
    for (i = 0; i < n_rows; ++i)
        if (rows[i].kind != K_DECODE && rows[i].status == ST_OK && rows[i].gflops > ymax) ymax = rows[i].gflops;
    step = nice_step(ymax * 1.08, 8);
    ymax = ceil(ymax * 1.08 / step) * step;
    f = fopen(path, "w");
    if (!f) return 0;
#define X(S) (L + (log2((double)(S)) - xlo) / (xhi - xlo) * (R - L))
#define Y(G) (Bt - (G) / ymax * (Bt - T))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
               "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n", W, H, W, H);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", W, H);
    fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"18\" font-weight=\"bold\">attn.h prefill throughput: "
               "GFLOP/s vs sequence length (B=1, H=8)</text>\n", L);
    bench_svg_machine(f, L, 46);
    fprintf(f, "<text x=\"%.0f\" y=\"64\" font-size=\"12\" fill=\"#444\">%d threads (1-thread and naive series: "
               "1 thread). FLOPs = 4*S*S*D*H; causal counts unmasked pairs only.</text>\n", L, g_ncpu);
    /* grid and y ticks */
    for (y = 0; y <= ymax + 1e-9; y += step) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", L, Y(y), R, Y(y));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 8, Y(y) + 4, y);
    }
    for (s = 512; s <= 8192; s *= 2) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", X(s), T, X(s), Bt);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", X(s), Bt, X(s), Bt + 6);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n", X(s), Bt + 22, s);
    }
    /* right axis: % of the all-thread peak */
    for (pct = 0; pct <= 100.0 + 1e-9 && g_peak_all > 0; pct += 25.0) {
        double yy = Y(g_peak_all * pct / 100.0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#000\"/>\n", R, yy, R + 5, yy);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.0f%%</text>\n", R + 8, yy + 4, pct);
    }
    fprintf(f, "<text transform=\"translate(%.1f,%.1f) rotate(90)\" text-anchor=\"middle\" fill=\"#444\">"
               "%% of measured %d-thread FMA peak</text>\n", R + 52, (T + Bt) / 2, g_ncpu);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#000\"/>\n",
            L, T, R - L, Bt - T);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">sequence length S (log2 scale)</text>\n",
            (L + R) / 2, Bt + 46);
    fprintf(f, "<text transform=\"translate(24,%.1f) rotate(-90)\" text-anchor=\"middle\">GFLOP/s</text>\n",
            (T + Bt) / 2);
    /* peak lines */
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-width=\"2\" "
               "stroke-dasharray=\"8,4\"/>\n", L, Y(g_peak_all), R, Y(g_peak_all));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\"%s>measured fp32 FMA peak, %d threads: %.1f GFLOP/s</text>\n",
            L + 8, Y(g_peak_all) - 6, halo, g_ncpu, g_peak_all);
    if (g_ncpu > 1) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-width=\"1\" "
                   "stroke-dasharray=\"2,3\"/>\n", L, Y(g_peak_1t), R, Y(g_peak_1t));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\" text-anchor=\"end\"%s>measured FMA peak, "
                   "1 thread: %.1f GFLOP/s</text>\n", R - 8, Y(g_peak_1t) + 16, halo, g_peak_1t);
    }
    /* series */
    for (i = 0; i < n_ser; ++i) {
        const series *se = &ser[i];
        const bench_row *pts[16];
        int np = 0, j, a, b;
        for (j = 0; j < n_rows && np < 16; ++j) {
            const bench_row *r = &rows[j];
            if (r->status != ST_OK || r->kind != se->kind || r->dt != se->dt || r->D != se->D ||
                r->causal != se->causal || (se->kind == K_PREFILL && r->threads != se->threads))
                continue;
            pts[np++] = r;
        }
        if (!np) continue;
        for (a = 1; a < np; ++a) /* sort by S */
            for (b = a; b > 0 && pts[b - 1]->Sq > pts[b]->Sq; --b) {
                const bench_row *t = pts[b]; pts[b] = pts[b - 1]; pts[b - 1] = t;
            }
        fprintf(f, "<g>\n");
        if (np > 1) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", se->color,
                    se->causal ? " stroke-dasharray=\"6,4\"" : "");
            for (j = 0; j < np; ++j) fprintf(f, "%.1f,%.1f ", X(pts[j]->Sq), Y(pts[j]->gflops));
            fprintf(f, "\"/>\n");
        }
        for (j = 0; j < np; ++j) {
            if (se->threads == 1 && se->kind == K_PREFILL)
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\" "
                           "transform=\"rotate(45 %.1f %.1f)\"><title>%s S=%d: %.1f GFLOP/s</title></rect>\n",
                        X(pts[j]->Sq) - 4.5, Y(pts[j]->gflops) - 4.5, se->color, X(pts[j]->Sq),
                        Y(pts[j]->gflops), se->label, pts[j]->Sq, pts[j]->gflops);
            else
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\">"
                           "<title>%s S=%d: %.1f GFLOP/s</title></circle>\n",
                        X(pts[j]->Sq), Y(pts[j]->gflops), se->causal ? "white" : se->color, se->color,
                        se->label, pts[j]->Sq, pts[j]->gflops);
        }
        fprintf(f, "</g>\n");
        { /* legend entry */
            double lx = R + 75, ly = T + 8 + 22.0 * legend_n;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                    lx, ly, lx + 30, ly, se->color, se->causal ? " stroke-dasharray=\"6,4\"" : "");
            if (se->threads == 1 && se->kind == K_PREFILL)
                fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\" "
                           "transform=\"rotate(45 %.1f %.1f)\"/>\n", lx + 10.5, ly - 4.5, se->color, lx + 15, ly);
            else
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                        lx + 15, ly, se->causal ? "white" : se->color, se->color);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", lx + 38, ly + 4, se->label);
            legend_n++;
        }
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#666\">solid: non-causal, dashed/hollow: causal</text>\n",
            R + 75, T + 8 + 22.0 * legend_n + 4);
    fprintf(f, "</svg>\n");
#undef X
#undef Y
    return fclose(f) == 0;
}

/* ------------------------------------------------------------------------------------------
   main
   ------------------------------------------------------------------------------------------ */
int main(void) {
    static const int S_full[] = { 512, 1024, 2048, 4096, 8192 }, S_quick[] = { 512, 1024 };
    static const int L_full[] = { 4096, 8192, 16384, 32768, 65536 }, L_quick[] = { 4096, 16384 };
    const int *Ss, *Ls;
    int nS, nL, i, si, Smax, Lmax, Bbig, s1t, n_ok = 0, n_skip = 0;
    size_t llc, bw_bytes, pmax, dmax;
    double t_end;
    char cpu[256], path[512];
    const char *outdir = getenv("BENCH_OUTDIR");
    bench_row *ord[MAX_ROWS];
    int isa;
    machine m0, m1;
    double peak_secs;

    g_t_start = now_s();
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    g_budget = (double)env_int("BENCH_BUDGET", g_quick ? 50 : 540);
    if (!outdir || !*outdir) outdir = "bench";
    g_ncpu = online_cpus();
    llc = llc_bytes();
    cpu_model(cpu, sizeof cpu);
    isa = best_fma_isa();
    Ss = g_quick ? S_quick : S_full; nS = g_quick ? 2 : 5;
    Ls = g_quick ? L_quick : L_full; nL = g_quick ? 2 : 5;
    Smax = Ss[nS - 1];
    Lmax = Ls[nL - 1];
    Bbig = g_quick ? 1 : 2;     /* full: decode f32 B=2 at Lmax = 64k is 1 GiB of K+V */
    s1t = g_quick ? 1024 : 4096; /* the 1-thread case */

    printf("attn.h benchmark%s: %s, %d online CPUs, LLC %.0f MiB\n", g_quick ? " (BENCH_QUICK)" : "", cpu,
           g_ncpu, (double)llc / MIB);

    /* 1. machine peaks */
    {
        FILE *la = fopen("/proc/loadavg", "r");
        double l1 = 0.0;
        if (la) {
            if (fscanf(la, "%lf", &l1) == 1 && l1 > 0.5)
                printf("note: load average %.2f before the start: other work on this machine makes "
                       "the numbers below noisy\n", l1);
            fclose(la);
        }
    }
    bw_bytes = (size_t)(g_quick ? 256 : 1024) << 20;
    if (bw_bytes < 8 * llc) bw_bytes = 8 * llc;
    peak_secs = g_quick ? 0.05 : 0.2;
    printf("machine, at the start (FMA loop: %s):\n", isa_desc[isa]);
    measure_machine(&m0, isa, g_ncpu, peak_secs, bw_bytes);
    print_machine(&m0, g_ncpu, bw_bytes);
#if defined(__AVX512F__) && defined(__FMA__)
    printf("  (for reference: 256-bit ymm FMA, 1 thread: %.1f GFLOP/s)\n",
           fma_peak(ISA_YMM, 1, peak_secs, 5, NULL));
#endif
    g_peak_1t = m0.peak_1t; g_peak_all = m0.peak_all; g_bw = m0.bw;
    fflush(stdout);

    flush_open(g_ncpu, llc);     /* flush arrays and the pool for decode */

    /* 2. the case list, in execution order: decode first (cheap, fixed cost), then prefill in
       rounds of increasing S over every series, so a tight budget trims the largest S of every
       series rather than whole series. */
    for (i = 0; i < nL; ++i) add_row(K_DECODE, ATTN_F32, 1, 32, 8, 1, Ls[i], 128, 0, 0);
    if (!g_quick) add_row(K_DECODE, ATTN_F32, Bbig, 32, 8, 1, Lmax, 128, 0, 0);
    for (i = 0; i < nL; ++i) add_row(K_DECODE, ATTN_F16, 1, 32, 8, 1, Ls[i], 128, 0, 0);
    for (i = 0; i < nL; ++i) add_row(K_DECODE, ATTN_BF16, 1, 32, 8, 1, Ls[i], 128, 0, 0);
    for (si = 0; si < nS; ++si) {
        int S = Ss[si], D, c;
        for (D = 64; D <= 128; D *= 2)
            for (c = 0; c <= 1; ++c) add_row(K_PREFILL, ATTN_F32, 1, 8, 8, S, S, D, c, 0);
        if (S == 1024 || S == 4096)
            for (c = 0; c <= 1; ++c) {
                add_row(K_PREFILL, ATTN_F16, 1, 8, 8, S, S, 128, c, 0);
                add_row(K_PREFILL, ATTN_BF16, 1, 8, 8, S, S, 128, c, 0);
            }
        if (S == s1t) add_row(K_PREFILL, ATTN_F32, 1, 8, 8, S, S, 128, 0, 1);
        if (S <= (g_quick ? 512 : 1024))
            for (D = 64; D <= 128; D *= 2)
                for (c = 0; c <= 1; ++c) add_row(K_NAIVE, ATTN_F32, 1, 8, 8, S, S, D, c, 1);
    }

    /* data */
    pmax = (size_t)Smax * 8 * 128;
    pq = (float *)xalloc(pmax * 4); pk = (float *)xalloc(pmax * 4); pv = (float *)xalloc(pmax * 4);
    pout = (float *)xalloc(pmax * 4);
    fill_rand(pq, pmax); fill_rand(pk, pmax); fill_rand(pv, pmax);
    {
        size_t lp = (size_t)4096 * 8 * 128 * 2;
        lq = xalloc(lp); lk = xalloc(lp); lv = xalloc(lp);
    }
    naive_out = (float *)xalloc((size_t)1024 * 8 * 128 * 4);
    naive_scores = (float *)xalloc((size_t)8192 * 4);
    dmax = (size_t)Bbig * Lmax * 8 * 128;
    dk = (float *)xalloc(dmax * 4); dv = (float *)xalloc(dmax * 4);
    dq = (float *)xalloc((size_t)Bbig * 32 * 128 * 4); dout = (float *)xalloc((size_t)Bbig * 32 * 128 * 4);
    fill_rand(dk, dmax); fill_rand(dv, dmax); fill_rand(dq, (size_t)Bbig * 32 * 128);
    dlk = xalloc((size_t)Lmax * 8 * 128 * 2); dlv = xalloc((size_t)Lmax * 8 * 128 * 2);
    printf("decode: K+V footprints from %.0f MiB to %.0f MiB; caches flushed before every call by "
           "reading %.0f MiB\n  (two such arrays in turn); those reads are timed too and give each "
           "case a local bandwidth (bw@case)\n",
           2.0 * Ls[0] * 8 * 128 * 2 / MIB, 2.0 * dmax * 4 / MIB, (double)g_flush[0].n * 4 / MIB);
    fflush(stdout);

    for (i = 0; i < n_rows; ++i) {
        bench_row *r = &rows[i];
        if (r->kind != K_DECODE && !fits_budget(r)) {
            r->status = ST_SKIPPED;
        } else if (r->kind == K_DECODE) {
            run_decode(r, (size_t)Lmax * 8 * 128);
        } else {
            run_prefill(r);
        }
        progress(r, i + 1, n_rows);
    }

    /* speed-up vs naive for matching shapes */
    for (i = 0; i < n_rows; ++i) {
        bench_row *r = &rows[i];
        int j;
        if (r->kind != K_PREFILL || r->status != ST_OK || r->threads != 0) continue;
        for (j = 0; j < n_rows; ++j) {
            const bench_row *nv = &rows[j];
            if (nv->kind == K_NAIVE && nv->status == ST_OK && nv->dt == r->dt && nv->D == r->D &&
                nv->Sq == r->Sq && nv->causal == r->causal)
                r->speedup = nv->med_ms / r->med_ms;
        }
    }

    /* the machine again: other work on the machine only ever lowers a measurement, so the
       higher of the two medians is the reference for % peak and % bw */
    free(dk); free(dv); dk = dv = NULL;
    flush_close();
    printf("machine, at the end:\n");
    measure_machine(&m1, isa, g_ncpu, peak_secs, bw_bytes);
    print_machine(&m1, g_ncpu, bw_bytes);
    g_peak_1t = m1.peak_1t > m0.peak_1t ? m1.peak_1t : m0.peak_1t;
    g_peak_all = m1.peak_all > m0.peak_all ? m1.peak_all : m0.peak_all;
    g_bw = m1.bw > m0.bw ? m1.bw : m0.bw;
    printf("reference (higher of start and end): FMA peak %.1f GFLOP/s (1 thread), %.1f GFLOP/s "
           "(%d threads); read bandwidth %.1f GB/s\n", g_peak_1t, g_peak_all, g_ncpu, g_bw);
    if (fabs(m1.peak_all - m0.peak_all) > 0.1 * g_peak_all || fabs(m1.bw - m0.bw) > 0.1 * g_bw)
        printf("note: start and end differ by more than 10%%: other work ran on this machine "
               "during the run; treat the numbers as noisy\n");
    if (g_ncpu > 1 && g_peak_all < 0.6 * g_ncpu * g_peak_1t)
        printf("note: the %d-thread peak is only %.2fx the 1-thread peak: SMT siblings, or other "
               "work holding cores\n", g_ncpu, g_peak_all / g_peak_1t);
    for (i = 0; i < n_rows; ++i) set_percentages(&rows[i]);

    /* 3. output */
    for (i = 0; i < n_rows; ++i) {
        ord[i] = &rows[i];
        n_ok += rows[i].status == ST_OK;
        n_skip += rows[i].status == ST_SKIPPED;
    }
    qsort(ord, (size_t)n_rows, sizeof ord[0], row_order);
    print_table(ord, n_rows);
    printf("\n%%peak: of the %d-thread FMA peak (%.1f GFLOP/s), or of the 1-thread peak (%.1f) for "
           "1-thread rows. spread: (max - min) / median of the reps.\n"
           "%%bw: of the reference read bandwidth (%.1f GB/s); bw@case: median GB/s of the cache-flush "
           "reads between that case's calls; %%bw@: median over the calls of (the call's GB/s / the "
           "flush read just before it).\n"
           "x naive: naive time / attn.h time (naive: 1 thread; attn.h: %d threads).\n"
           "check: max |out - ref| / max_d sum_j p_j |v_jd| over the checked rows (double-precision "
           "reference from the same stored inputs).\n", g_ncpu, g_peak_all, g_peak_1t, g_bw, g_ncpu);

    snprintf(path, sizeof path, "%s/results.csv", outdir);
    if (!write_csv(path, ord, n_rows)) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/chart.svg", outdir);
    if (!write_svg(path)) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    printf("wrote %s\n", path);

    t_end = now_s();
    printf("%d cases: %d timed, %d skipped (time budget %.0f s), %d failed the check; wall time %.1f s\n",
           n_rows, n_ok, n_skip, g_budget, g_failed, t_end - g_t_start);
    free(pq); free(pk); free(pv); free(pout); free(lq); free(lk); free(lv);
    free(naive_out); free(naive_scores); free(dk); free(dv); free(dq); free(dout); free(dlk); free(dlv);
    if (g_failed) {
        fprintf(stderr, "bench: %d case(s) FAILED the correctness check\n", g_failed);
        return 1;
    }
    return 0;
}
