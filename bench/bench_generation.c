/* bench/bench_generation.c - generation benchmarks for attn.h.

   1. Decoding over a K/V cache (attn_decode): 1 query token, KV length 4k..64k, Hq 32 / Hkv 8,
      head dim 128, f32 and f16 storage, contiguous and paged (page_size 16, shuffled block
      table). Caches are flushed before every call (bench_util.h flush_caches), so the K/V bytes
      come from memory. Reported: median time, GB/s of K+V read, % of the machine's read
      bandwidth measured at the start ("% bw") and of the flush read just before each call
      ("% bw@": the median over the calls, which follows a shared machine's drifting bandwidth),
      and the speed-up over a naive scalar decode loop (timed at 4k). Every case is checked
      against that naive loop before it is timed. attn_decode runs on an attn_pool (which also
      runs the flush, as a model's other layers would between two steps); the "threads/call"
      column times the same calls with attn's per-call threads instead (ms, % bw@).
   1b. Speculative steps: 2, 4 and 8 query tokens per call (causal among themselves) at 16k,
      against 1-token calls ("x steps": how much faster one Lq-token call is than Lq 1-token calls).
   2. The EL-attention paper's synthetic comparison on this CPU: batch x beam = 1 x 4, input
      length 64..1024, 16 heads, d_model 1024, one cross-attention layer. Per decode step:
        MHA, no cache      K = H W^K + b^K, V = H W^V + b^V recomputed every step, then attention
        MHA, cache         K/V computed once, cached per beam (fairseq's incremental state: the
                           encoder output is expanded by beam), attn_decode over it each step
        MHA, shared cache  the same, one K/V cache shared by the 4 beams (4 query tokens)
        EL-attention       attn_el_attention: no K/V at all, H shared by beams and heads
      with cache bytes per layer and the ratios beside the paper's (1.4x-5x faster than cached
      MHA on GPU; the cache 2L times smaller for cross-attention: K and V of L layers vs H once).
      EL's output is checked against the cached MHA's.

   1c. Speculative steps on small warm caches (issue 33 item 6): 2, 4, 8 tokens per call against
      1-token calls, Hkv 8 with Hq 8 or 32, D 64/128, L 512-4096, 1 thread, interleaved.

   Environment: BENCH_QUICK=1 (smaller, faster), BENCH_STEPS_ONLY=1 (only 1c, its rows appended
   to the csv), BENCH_STEPS_RUNS (1c's reps, default 15), BENCH_OUTDIR (default bench) for
   results_generation.csv (results_generation_avx2.csv when built with -DATTN_NO_AVX512).
   Numbers are medians; the machine is shared, so they are noisy. */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

/* `make bench` also runs this program built with -DATTN_NO_AVX512 (build/bench_generation_avx2):
   the AVX2 kernels on the same machine, for CPUs without AVX-512 */
#if defined(ATTN_NO_AVX512)
#define RESULTS_CSV "results_generation_avx2.csv"
#else
#define RESULTS_CSV "results_generation.csv"
#endif

static int g_ncpu, g_quick;
static double g_bw;
static FILE *g_csv;

static void csv_row(const char *section, const char *name, const char *dt, const char *layout, int L, double med, double mn,
                    double mx, double gbs, double pct, double pct_local, double ratio, double cache_mib, double err) {
    bench_csv_machine(g_csv);
    fprintf(g_csv, "%s,%s,%s,%s,%d,%d,%.4f,%.4f,%.4f,%.2f,%.2f,%.2f,%.3f,%.3f,%.2e\n", section, name, dt, layout, L, g_ncpu,
            med, mn, mx, gbs, pct, pct_local, ratio, cache_mib, err);
    fflush(g_csv);
}

/* ------------------------------------------------------------------------------------------
   1. decoding over a cache
   ------------------------------------------------------------------------------------------ */
enum { HQ = 32, HKV = 8, HD = 128, PAGE = 16 };

/* naive single-thread decode: two passes over the keys per query head */
static void naive_decode(const attn_kv_cache *c, const attn_tensor *q, float *out, float *sbuf) {
    const int L = c->lens[0], g = HQ / HKV;
    const float scale = 1.0f / sqrtf((float)HD);
    int h, j, d;
    for (h = 0; h < HQ; ++h) {
        const int hk = h / g;
        float qv[HD], mx = -INFINITY, sum = 0.0f, acc[HD];
        for (d = 0; d < HD; ++d) qv[d] = ld(q->data, q->dtype, (size_t)h * HD + d) * scale;
        for (j = 0; j < L; ++j) {
            size_t row = c->page_size ? (size_t)c->block_table[j / PAGE] * PAGE + (size_t)(j % PAGE) : (size_t)j;
            size_t off = (row * HKV + (size_t)hk) * HD;
            float s = 0.0f;
            for (d = 0; d < HD; ++d) s += qv[d] * ld(c->k.data, c->k.dtype, off + d);
            sbuf[j] = s;
            if (s > mx) mx = s;
        }
        for (d = 0; d < HD; ++d) acc[d] = 0.0f;
        for (j = 0; j < L; ++j) {
            size_t row = c->page_size ? (size_t)c->block_table[j / PAGE] * PAGE + (size_t)(j % PAGE) : (size_t)j;
            size_t off = (row * HKV + (size_t)hk) * HD;
            float p = expf(sbuf[j] - mx);
            sum += p;
            for (d = 0; d < HD; ++d) acc[d] += p * ld(c->v.data, c->v.dtype, off + d);
        }
        for (d = 0; d < HD; ++d) out[(size_t)h * HD + d] = acc[d] / sum;
    }
}

static void bench_decode(void) {
    static const int Ls_full[] = { 4096, 8192, 16384, 32768, 65536 }, Ls_quick[] = { 4096, 16384 };
    const int *Ls = g_quick ? Ls_quick : Ls_full, nL = g_quick ? 2 : 5, runs = g_quick ? 5 : 25;
    int di, lay, li, r, i;
    double naive_ms[2][2] = { { 0, 0 }, { 0, 0 } };
    printf("\n1. decode over a K/V cache: batch 1, 1 query token, Hq %d / Hkv %d, D %d, %d threads, caches flushed\n", HQ, HKV,
           HD, g_ncpu);
    printf("   %-5s %-10s %6s %10s %8s %8s %8s %7s %10s %9s %14s\n", "dtype", "cache", "L", "median ms", "GB/s", "% bw", "% bw@",
           "x naive", "K+V MiB", "max err", "threads/call");
    for (di = 0; di < 2; ++di) {
        const attn_dtype dt = di ? ATTN_F16 : ATTN_F32;
        for (lay = 0; lay < 2; ++lay)
            for (li = 0; li < nL; ++li) {
                const int L = Ls[li], npages = (L + PAGE - 1) / PAGE;
                const size_t rows = lay ? (size_t)npages * PAGE : (size_t)L, n = rows * HKV * HD, es = dtype_size(dt);
                float *tmp = (float *)xalloc(n * sizeof(float)), *ref = (float *)xalloc(sizeof(float) * HQ * HD);
                float *qf = (float *)xalloc(sizeof(float) * HQ * HD), *outf = (float *)xalloc(sizeof(float) * HQ * HD);
                float *sbuf = (float *)xalloc(sizeof(float) * (size_t)L);
                void *kb = xalloc(n * es), *vb = xalloc(n * es), *qb = xalloc((size_t)HQ * HD * es), *ob = xalloc((size_t)HQ * HD * es);
                int *table = (int *)xalloc(sizeof(int) * (size_t)npages), lens[1];
                attn_kv_cache c;
                attn_tensor q, o;
                attn_desc d;
                double t[25], t_call[25], bw[25], bw_call[25], med, mn, mx, med_call, err = 0.0, gbs;
                const double bytes = 2.0 * L * HKV * HD * (double)es;
                memset(&c, 0, sizeof c); memset(&d, 0, sizeof d);
                fill_rand(tmp, n); convert_from_f32(kb, dt, tmp, n);
                fill_rand(tmp, n); convert_from_f32(vb, dt, tmp, n);
                fill_rand(qf, (size_t)HQ * HD); convert_from_f32(qb, dt, qf, (size_t)HQ * HD);
                for (i = 0; i < npages; ++i) table[i] = i;
                for (i = npages - 1; i > 0; --i) { int j = (int)(rng_state % (uint64_t)(i + 1)), x; frand(); x = table[i]; table[i] = table[j]; table[j] = x; }
                lens[0] = L;
                c.lens = lens; c.batch = 1;
                if (lay) {
                    c.k = attn_tensor_dense(kb, dt, npages, PAGE, HKV, HD); c.v = attn_tensor_dense(vb, dt, npages, PAGE, HKV, HD);
                    c.page_size = PAGE; c.block_table = table; c.max_pages = npages;
                } else {
                    c.k = attn_tensor_dense(kb, dt, 1, L, HKV, HD); c.v = attn_tensor_dense(vb, dt, 1, L, HKV, HD);
                }
                q = attn_tensor_dense(qb, dt, 1, 1, HQ, HD);
                o = attn_tensor_dense(ob, dt, 1, 1, HQ, HD);
                d.n_threads = g_ncpu;
                d.parallel = attn_pool_parallel; d.parallel_user = g_bench_pool;
                if (attn_decode(&d, q, &c, o, NULL) != ATTN_OK) die("attn_decode failed");
                {   /* check against the naive loop (timed once at the smallest L) */
                    double t0 = now_s();
                    naive_decode(&c, &q, ref, sbuf);
                    if (li == 0) naive_ms[di][lay] = (now_s() - t0) * 1e3;
                    for (i = 0; i < HQ * HD; ++i) {
                        double e = fabs((double)ld(ob, dt, (size_t)i) - ref[i]);
                        if (e > err) err = e;
                    }
                    if (err > (dt == ATTN_F32 ? 1e-4 : 2e-3)) { printf("CHECK FAILED: max err %.3g\n", err); exit(1); }
                }
                for (r = 0; r < runs; ++r) {       /* pool and per-call threads in turn */
                    attn_desc dc = d;
                    double t0;
                    bw[r] = flush_caches();
                    t0 = now_s();
                    attn_decode(&d, q, &c, o, NULL);
                    t[r] = now_s() - t0;
                    bw_call[r] = flush_caches();
                    dc.parallel = NULL; dc.parallel_user = NULL;
                    t0 = now_s();
                    attn_decode(&dc, q, &c, o, NULL);
                    t_call[r] = now_s() - t0;
                }
                med = median_of(t, runs, &mn, &mx);
                med_call = median_of(t_call, runs, NULL, NULL);
                gbs = bytes / med * 1e-9;
                {
                    /* the naive loop at 4k scaled to this L: its time grows linearly */
                    const double nv = naive_ms[di][lay] * (double)L / Ls[0];
                    const double local = median_pct_of_flush(bytes, t, bw, runs);
                    const double local_call = median_pct_of_flush(bytes, t_call, bw_call, runs);
                    printf("   %-5s %-10s %6d %10.3f %8.2f %7.1f%% %7.1f%% %7.1f %10.1f %9.2e %8.3f ms %2.0f%%\n", dtype_name(dt),
                           lay ? "paged/16" : "contiguous", L, med * 1e3, gbs, 100.0 * gbs / g_bw, local, nv / (med * 1e3),
                           bytes / MIB, err, med_call * 1e3, local_call);
                    csv_row("decode", "attn_decode", dtype_name(dt), lay ? "paged16" : "contiguous", L, med * 1e3, mn * 1e3, mx * 1e3,
                            gbs, 100.0 * gbs / g_bw, local, nv / (med * 1e3), bytes / MIB, err);
                    csv_row("decode", "attn_decode_threads_per_call", dtype_name(dt), lay ? "paged16" : "contiguous", L,
                            med_call * 1e3, 0, 0, bytes / med_call * 1e-9, 100.0 * bytes / med_call * 1e-9 / g_bw, local_call,
                            nv / (med_call * 1e3), bytes / MIB, err);
                }
                fflush(stdout);
                free(tmp); free(ref); free(qf); free(outf); free(sbuf); free(kb); free(vb); free(qb); free(ob); free(table);
            }
    }
    printf("   (x naive: a scalar two-pass loop on 1 thread, timed at L = %d and scaled linearly)\n", Ls[0]);
}

/* 1b. Several query tokens per step (speculative decoding: the draft tokens checked in one
   call, causal among themselves), L = 16384, contiguous cache; each token's row is checked
   against the naive loop over the keys it sees. "x steps": Lq one-token calls / one Lq-token call. */
static void bench_decode_steps(void) {
    static const int lqs[] = { 1, 2, 4, 8 };
    const int L = g_quick ? 4096 : 16384, runs = g_quick ? 5 : 25;
    int di, li, r, i, t;
    printf("\n1b. speculative steps: Lq query tokens per call (causal), L %d, contiguous, Hq %d / Hkv %d, D %d, %d threads, caches flushed\n",
           L, HQ, HKV, HD, g_ncpu);
    printf("   %-5s %3s %10s %8s %8s %8s %9s\n", "dtype", "Lq", "median ms", "GB/s", "% bw@", "x steps", "max err");
    for (di = 0; di < 2; ++di) {
        const attn_dtype dt = di ? ATTN_F16 : ATTN_F32;
        const size_t n = (size_t)L * HKV * HD, es = dtype_size(dt), qn = (size_t)8 * HQ * HD;
        const double bytes = 2.0 * (double)n * (double)es;
        float *tmp = (float *)xalloc(n * sizeof(float)), *ref = (float *)xalloc(sizeof(float) * qn);
        float *qf = (float *)xalloc(sizeof(float) * qn), *sbuf = (float *)xalloc(sizeof(float) * (size_t)L);
        void *kb = xalloc(n * es), *vb = xalloc(n * es), *qb = xalloc(qn * es), *ob = xalloc(qn * es);
        double t1 = 0.0;
        int lens[1];
        attn_kv_cache c;
        memset(&c, 0, sizeof c);
        fill_rand(tmp, n); convert_from_f32(kb, dt, tmp, n);
        fill_rand(tmp, n); convert_from_f32(vb, dt, tmp, n);
        fill_rand(qf, qn); convert_from_f32(qb, dt, qf, qn);
        c.k = attn_tensor_dense(kb, dt, 1, L, HKV, HD); c.v = attn_tensor_dense(vb, dt, 1, L, HKV, HD);
        c.lens = lens; c.batch = 1;
        for (li = 0; li < 4; ++li) {
            const int Lq = lqs[li];
            const attn_tensor q = attn_tensor_dense(qb, dt, 1, Lq, HQ, HD), o = attn_tensor_dense(ob, dt, 1, Lq, HQ, HD);
            double tm[25], bw[25], med, err = 0.0;
            attn_desc d;
            memset(&d, 0, sizeof d);
            d.causal = 1; d.n_threads = g_ncpu;
            d.parallel = attn_pool_parallel; d.parallel_user = g_bench_pool;
            lens[0] = L;
            if (attn_decode(&d, q, &c, o, NULL) != ATTN_OK) die("attn_decode failed");
            for (t = 0; t < Lq; ++t) {      /* token t sees keys 0 .. L - Lq + t */
                attn_kv_cache ct = c;
                attn_tensor qt = attn_tensor_dense((char *)qb + (size_t)t * HQ * HD * es, dt, 1, 1, HQ, HD);
                int lt[1];
                lt[0] = L - Lq + 1 + t; ct.lens = lt;
                naive_decode(&ct, &qt, ref, sbuf);
                for (i = 0; i < HQ * HD; ++i) {
                    const double e = fabs((double)ld(ob, dt, (size_t)t * HQ * HD + i) - ref[i]);
                    if (e > err) err = e;
                }
            }
            if (err > (dt == ATTN_F32 ? 1e-4 : 2e-3)) { printf("CHECK FAILED: max err %.3g\n", err); exit(1); }
            for (r = 0; r < runs; ++r) {
                double t0;
                bw[r] = flush_caches();
                t0 = now_s();
                attn_decode(&d, q, &c, o, NULL);
                tm[r] = now_s() - t0;
            }
            med = median_of(tm, runs, NULL, NULL);
            if (Lq == 1) t1 = med;
            printf("   %-5s %3d %10.3f %8.2f %7.1f%% %8.2f %9.2e\n", dtype_name(dt), Lq, med * 1e3, bytes / med * 1e-9,
                   median_pct_of_flush(bytes, tm, bw, runs), Lq * t1 / med, err);
            csv_row("decode_steps", Lq == 1 ? "attn_decode_Lq1" : Lq == 2 ? "attn_decode_Lq2" : Lq == 4 ? "attn_decode_Lq4" : "attn_decode_Lq8", dtype_name(dt),
                    "contiguous", L, med * 1e3, 0, 0, bytes / med * 1e-9, 100.0 * bytes / med * 1e-9 / g_bw,
                    median_pct_of_flush(bytes, tm, bw, runs), Lq * t1 / med, bytes / MIB, err);
            fflush(stdout);
        }
        free(tmp); free(ref); free(qf); free(sbuf); free(kb); free(vb); free(qb); free(ob);
    }
    printf("   (speculative decoding checks Lq draft tokens in one call; the fused kernel runs the query rows of a KV head\n"
           "    in tiles of 8 over each chunk (AVX-512; AVX2: tiles of 4 up to 16 rows, one wide staged tile above))\n");
}

/* 1c. Speculative steps on small caches (issue 33 item 6): Hkv 8 with Hq 8 (a call of Lq tokens
   runs Lq query rows per KV head) or Hq 32 (GQA: 4 Lq rows); D 64 / 128, L 512-4096, warm (no
   flush: what the kernel's arithmetic costs), 1 thread. Each rep times Lq 1-token calls (tokens t see keys 0 .. L - Lq + t)
   and then one Lq-token call, interleaved; "x steps" = median(Lq 1-token calls) / median(one call).
   Each Lq-token call's output is checked against the 1-token calls'. */
static void bench_decode_steps_small(void) {
    enum { H8 = 8 };
    static const int lqs[] = { 2, 4, 8 }, Ds[] = { 64, 128 }, Ls[] = { 512, 1024, 4096 }, Gs[] = { 1, 4 };
    const int runs = g_quick ? 5 : (int)ATTN__MIN(64, ATTN__MAX(1, env_int("BENCH_STEPS_RUNS", 15)));
    const int ncpu = g_ncpu;
    int gi, di, dd, il, li, r, t;
    size_t i;
    g_ncpu = 1;                         /* the csv's threads column */
    printf("\n1c. speculative steps, small caches: Lq tokens per call (causal), Hkv %d, 1 thread, warm\n", H8);
    printf("   %-5s %5s %4s %5s %3s %12s %12s %8s %9s\n", "dtype", "Hq", "D", "L", "Lq", "Lq x 1 (ms)", "1 x Lq (ms)", "x steps", "max diff");
    for (gi = 0; gi < 2; ++gi)
    for (di = 0; di < 2; ++di)
        for (dd = 0; dd < 2; ++dd)
            for (il = 0; il < 3; ++il) {
                const attn_dtype dt = di ? ATTN_F16 : ATTN_F32;
                const int D = Ds[dd], L = Ls[il], HQ8 = H8 * Gs[gi];
                const size_t n = (size_t)L * H8 * D, es = dtype_size(dt), qn = (size_t)8 * HQ8 * D;
                float *tmp = (float *)xalloc(n * sizeof(float));
                void *kb = xalloc(n * es), *vb = xalloc(n * es), *qb = xalloc(qn * es), *ob = xalloc(qn * es), *o1 = xalloc(qn * es);
                int lens[1];
                attn_kv_cache c;
                attn_desc d;
                memset(&c, 0, sizeof c); memset(&d, 0, sizeof d);
                d.causal = 1; d.n_threads = 1;
                fill_rand(tmp, n); convert_from_f32(kb, dt, tmp, n);
                fill_rand(tmp, n); convert_from_f32(vb, dt, tmp, n);
                fill_rand(tmp, qn); convert_from_f32(qb, dt, tmp, qn);
                c.k = attn_tensor_dense(kb, dt, 1, L, H8, D); c.v = attn_tensor_dense(vb, dt, 1, L, H8, D);
                c.lens = lens; c.batch = 1;
                for (li = 0; li < 3; ++li) {
                    const int Lq = lqs[li];
                    const attn_tensor q = attn_tensor_dense(qb, dt, 1, Lq, HQ8, D), o = attn_tensor_dense(ob, dt, 1, Lq, HQ8, D);
                    double ts[64], tm[64], ms, mm, diff = 0.0;
                    for (r = -1; r < runs; ++r) {       /* r = -1: warm-up and the check */
                        double t0 = now_s();
                        for (t = 0; t < Lq; ++t) {
                            attn_tensor qt = attn_tensor_dense((char *)qb + (size_t)t * HQ8 * D * es, dt, 1, 1, HQ8, D);
                            attn_tensor ot = attn_tensor_dense((char *)o1 + (size_t)t * HQ8 * D * es, dt, 1, 1, HQ8, D);
                            lens[0] = L - Lq + 1 + t;
                            if (attn_decode(&d, qt, &c, ot, NULL) != ATTN_OK) die("attn_decode failed");
                        }
                        t0 = now_s() - t0;
                        lens[0] = L;
                        tm[r < 0 ? 0 : r] = now_s();
                        if (attn_decode(&d, q, &c, o, NULL) != ATTN_OK) die("attn_decode failed");
                        tm[r < 0 ? 0 : r] = now_s() - tm[r < 0 ? 0 : r];
                        ts[r < 0 ? 0 : r] = t0;
                    }
                    for (i = 0; i < (size_t)Lq * HQ8 * D; ++i) {
                        const double e = fabs((double)ld(ob, dt, i) - ld(o1, dt, i));
                        if (e > diff) diff = e;
                    }
                    if (diff > (dt == ATTN_F32 ? 1e-4 : 2e-3)) { printf("CHECK FAILED: max diff %.3g\n", diff); exit(1); }
                    ms = median_of(ts, runs, NULL, NULL); mm = median_of(tm, runs, NULL, NULL);
                    printf("   %-5s %5d %4d %5d %3d %12.4f %12.4f %8.2f %9.2e\n", dtype_name(dt), HQ8, D, L, Lq, ms * 1e3, mm * 1e3, ms / mm, diff);
                    {
                        char name[64];
                        snprintf(name, sizeof name, "attn_decode_Lq%d_D%d_Hq%d", Lq, D, HQ8);
                        csv_row("decode_steps_small", name, dtype_name(dt), "contiguous", L, mm * 1e3, 0, 0, 0, 0, 0, ms / mm,
                                2.0 * (double)n * (double)es / MIB, diff);
                    }
                    fflush(stdout);
                }
                free(tmp); free(kb); free(vb); free(qb); free(ob); free(o1);
            }
    printf("   (x steps: Lq 1-token calls / one Lq-token call, medians of %d interleaved reps; ratio column of the csv)\n", runs);
    g_ncpu = ncpu;
}

/* ------------------------------------------------------------------------------------------
   2. EL-attention vs standard MHA (one cross-attention layer, one decode step)
   ------------------------------------------------------------------------------------------ */
enum { DM = 1024, NH = 16, DK = 64, BEAM = 4 };

/* C[M][N] = A[M][K] B[K][N] + bias, threads split the columns in blocks of 64: the same loop
   as attn.h's private EL-attention GEMM (k outer, each weight row read once for all M rows),
   so the MHA baselines and EL-attention project with equal code */
#if defined(__FMA__)
#define BENCH_FMA(a, b, c) fmaf(a, b, c)
#else
#define BENCH_FMA(a, b, c) ((a) * (b) + (c))
#endif
typedef struct { int M, N, K; const float *A, *B, *bias; float *C; } gemm_job;
static void gemm_worker(void *arg, int tid, int nt) {
    const gemm_job *g = (const gemm_job *)arg;
    const int nb = (g->N + 63) / 64, b0 = nb * tid / nt, b1 = nb * (tid + 1) / nt;
    const int n0 = b0 * 64, n1 = b1 * 64 < g->N ? b1 * 64 : g->N;
    int m, k, n;
    for (m = 0; m < g->M; ++m)
        for (n = n0; n < n1; ++n) g->C[(size_t)m * g->N + n] = g->bias ? g->bias[n] : 0.0f;
    for (k = 0; k < g->K; ++k) {
        const float *b = g->B + (size_t)k * g->N;
        for (m = 0; m < g->M; ++m) {
            const float a = g->A[(size_t)m * g->K + k];
            float *c = g->C + (size_t)m * g->N;
            for (n = n0; n < n1; ++n) c[n] = BENCH_FMA(a, b[n], c[n]);
        }
    }
}
static void gemm(int M, int N, int K, const float *A, const float *B, const float *bias, float *C) {
    gemm_job g;
    g.M = M; g.N = N; g.K = K; g.A = A; g.B = B; g.bias = bias; g.C = C;
    team_run(g_ncpu, gemm_worker, &g);
}

static void bench_el(void) {
    static const int Ls_full[] = { 64, 128, 256, 512, 1024 }, Ls_quick[] = { 64, 256, 1024 };
    const int *Ls = g_quick ? Ls_quick : Ls_full, nL = g_quick ? 3 : 5, runs = g_quick ? 3 : 7;
    attn_layer_weights w;
    float *wq = (float *)xalloc(sizeof(float) * DM * DM), *wk = (float *)xalloc(sizeof(float) * DM * DM);
    float *wv = (float *)xalloc(sizeof(float) * DM * DM), *wo = (float *)xalloc(sizeof(float) * DM * DM);
    float *bq = (float *)xalloc(sizeof(float) * DM), *bk = (float *)xalloc(sizeof(float) * DM);
    float *bv = (float *)xalloc(sizeof(float) * DM), *bo = (float *)xalloc(sizeof(float) * DM);
    float *x = (float *)xalloc(sizeof(float) * BEAM * DM), *qp = (float *)xalloc(sizeof(float) * BEAM * DM);
    float *ctx = (float *)xalloc(sizeof(float) * BEAM * DM), *o_mha = (float *)xalloc(sizeof(float) * BEAM * DM);
    float *o_el = (float *)xalloc(sizeof(float) * BEAM * DM);
    int li, r;
    size_t i;
    fill_rand(wq, (size_t)DM * DM); fill_rand(wk, (size_t)DM * DM); fill_rand(wv, (size_t)DM * DM); fill_rand(wo, (size_t)DM * DM);
    for (i = 0; i < (size_t)DM * DM; ++i) { wq[i] *= 0.05f; wk[i] *= 0.05f; wv[i] *= 0.05f; wo[i] *= 0.05f; }
    fill_rand(bq, DM); fill_rand(bk, DM); fill_rand(bv, DM); fill_rand(bo, DM); fill_rand(x, (size_t)BEAM * DM);
    memset(&w, 0, sizeof w);
    w.wq = wq; w.bq = bq; w.wk = wk; w.bk = bk; w.wv = wv; w.bv = bv; w.wo = wo; w.bo = bo;
    printf("\n2. EL-attention vs MHA, one cross-attention layer, one decode step: batch x beam = 1 x %d, %d heads, "
           "d_model %d, %d threads (medians of %d steps)\n", BEAM, NH, DM, g_ncpu, runs);
    printf("   %5s | %10s %10s %10s %10s | %7s %7s %7s | %9s %9s %9s\n", "L", "MHA nocache", "MHA cache", "MHA shared",
           "EL", "EL/noc", "EL/cach", "EL/shar", "cache MiB", "shared MiB", "EL MiB");
    for (li = 0; li < nL; ++li) {
        const int L = Ls[li];
        float *h = (float *)xalloc(sizeof(float) * (size_t)L * DM);
        float *K = (float *)xalloc(sizeof(float) * (size_t)L * DM), *V = (float *)xalloc(sizeof(float) * (size_t)L * DM);
        float *Kb = (float *)xalloc(sizeof(float) * (size_t)BEAM * L * DM), *Vb = (float *)xalloc(sizeof(float) * (size_t)BEAM * L * DM);
        int lens1[1], lensb[BEAM];
        attn_kv_cache cb, cs;
        attn_desc d;
        attn_el_desc ed;
        double t_noc[8], t_c[8], t_s[8], t_el[8], m_noc, m_c, m_s, m_el, err = 0.0, mxv = 0.0, mib_c, mib_s, mib_el;
        double lo[4], hi[4];
        fill_rand(h, (size_t)L * DM);
        memset(&d, 0, sizeof d); d.n_threads = g_ncpu;
        memset(&ed, 0, sizeof ed);
        ed.d_model = DM; ed.heads = NH; ed.batch = 1; ed.beams = BEAM; ed.src_len = L; ed.n_threads = g_ncpu;
        /* the caches: K/V once (per beam copies for fairseq's layout, one shared copy) */
        gemm(L, DM, DM, h, wk, bk, K);
        gemm(L, DM, DM, h, wv, bv, V);
        for (r = 0; r < BEAM; ++r) {
            memcpy(Kb + (size_t)r * L * DM, K, sizeof(float) * (size_t)L * DM);
            memcpy(Vb + (size_t)r * L * DM, V, sizeof(float) * (size_t)L * DM);
            lensb[r] = L;
        }
        lens1[0] = L;
        memset(&cb, 0, sizeof cb); memset(&cs, 0, sizeof cs);
        cb.k = attn_tensor_dense(Kb, ATTN_F32, BEAM, L, NH, DK); cb.v = attn_tensor_dense(Vb, ATTN_F32, BEAM, L, NH, DK);
        cb.lens = lensb; cb.batch = BEAM;
        cs.k = attn_tensor_dense(K, ATTN_F32, 1, L, NH, DK); cs.v = attn_tensor_dense(V, ATTN_F32, 1, L, NH, DK);
        cs.lens = lens1; cs.batch = 1;
        for (r = 0; r < runs; ++r) {
            double t0 = now_s();
            /* MHA, no cache: K, V from H every step (once for all beams), attention, W^O */
            gemm(BEAM, DM, DM, x, wq, bq, qp);
            gemm(L, DM, DM, h, wk, bk, K);
            gemm(L, DM, DM, h, wv, bv, V);
            if (attn_forward(&d, attn_tensor_dense(qp, ATTN_F32, 1, BEAM, NH, DK), attn_tensor_dense(K, ATTN_F32, 1, L, NH, DK),
                             attn_tensor_dense(V, ATTN_F32, 1, L, NH, DK), attn_tensor_dense(ctx, ATTN_F32, 1, BEAM, NH, DK),
                             NULL) != ATTN_OK) die("attn_forward failed");
            gemm(BEAM, DM, DM, ctx, wo, bo, o_mha);
            t_noc[r] = now_s() - t0;
            t0 = now_s();       /* MHA, per-beam cache */
            gemm(BEAM, DM, DM, x, wq, bq, qp);
            if (attn_decode(&d, attn_tensor_dense(qp, ATTN_F32, BEAM, 1, NH, DK), &cb, attn_tensor_dense(ctx, ATTN_F32, BEAM, 1, NH, DK),
                            NULL) != ATTN_OK) die("attn_decode failed");
            gemm(BEAM, DM, DM, ctx, wo, bo, o_mha);
            t_c[r] = now_s() - t0;
            t0 = now_s();       /* MHA, one cache shared by the beams (4 query tokens, no mask) */
            gemm(BEAM, DM, DM, x, wq, bq, qp);
            if (attn_decode(&d, attn_tensor_dense(qp, ATTN_F32, 1, BEAM, NH, DK), &cs, attn_tensor_dense(ctx, ATTN_F32, 1, BEAM, NH, DK),
                            NULL) != ATTN_OK) die("attn_decode failed");
            gemm(BEAM, DM, DM, ctx, wo, bo, o_mha);
            t_s[r] = now_s() - t0;
            t0 = now_s();       /* EL-attention */
            if (attn_el_attention(&ed, &w, x, h, o_el) != ATTN_OK) die("attn_el_attention failed");
            t_el[r] = now_s() - t0;
        }
        for (i = 0; i < (size_t)BEAM * DM; ++i) {
            double e = fabs((double)o_el[i] - o_mha[i]);
            if (e > err) err = e;
            if (fabs(o_mha[i]) > mxv) mxv = fabs(o_mha[i]);
        }
        err /= mxv > 0 ? mxv : 1.0;
        if (err > 1e-4) { printf("CHECK FAILED: EL vs MHA rel err %.3g\n", err); exit(1); }
        m_noc = median_of(t_noc, runs, &lo[0], &hi[0]); m_c = median_of(t_c, runs, &lo[1], &hi[1]);
        m_s = median_of(t_s, runs, &lo[2], &hi[2]); m_el = median_of(t_el, runs, &lo[3], &hi[3]);
        mib_c = 2.0 * BEAM * L * DM * 4 / MIB; mib_s = 2.0 * L * DM * 4 / MIB; mib_el = (double)L * DM * 4 / MIB;
        printf("   %5d | %10.3f %10.3f %10.3f %10.3f | %6.2fx %6.2fx %6.2fx | %9.2f %9.2f %9.2f\n", L, m_noc * 1e3, m_c * 1e3,
               m_s * 1e3, m_el * 1e3, m_noc / m_el, m_c / m_el, m_s / m_el, mib_c, mib_s, mib_el);
        csv_row("el", "mha_nocache", "f32", "-", L, m_noc * 1e3, lo[0] * 1e3, hi[0] * 1e3, 0, 0, 0, m_noc / m_el, 0.0, 0.0);
        csv_row("el", "mha_cache_per_beam", "f32", "-", L, m_c * 1e3, lo[1] * 1e3, hi[1] * 1e3, 0, 0, 0, m_c / m_el, mib_c, 0.0);
        csv_row("el", "mha_cache_shared", "f32", "-", L, m_s * 1e3, lo[2] * 1e3, hi[2] * 1e3, 0, 0, 0, m_s / m_el, mib_s, 0.0);
        csv_row("el", "el_attention", "f32", "-", L, m_el * 1e3, lo[3] * 1e3, hi[3] * 1e3, 0, 0, 0, 1.0, mib_el, err);
        fflush(stdout);
        free(h); free(K); free(V); free(Kb); free(Vb);
    }
    printf("   (EL/x: time of x / time of EL (medians), > 1 means EL is faster. Cache MiB per layer: K+V per beam, K+V shared,\n"
           "    and H, which EL keeps once for all layers: an N-layer decoder's cross-attention cache is 2 N x %d\n"
           "    times smaller with EL than fairseq's per-beam cache, 2 N times smaller than a shared one.\n"
           "    Paper (GPU, fairseq): EL 1.4x-5x faster than cached MHA; cache 2L times smaller for cross-attention.)\n", BEAM);
    free(wq); free(wk); free(wv); free(wo); free(bq); free(bk); free(bv); free(bo);
    free(x); free(qp); free(ctx); free(o_mha); free(o_el);
}

int main(void) {
    size_t llc, bw_bytes;
    char cpu[256], path[512];
    const char *outdir = getenv("BENCH_OUTDIR");
    int isa;
    machine m;
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    if (!outdir || !*outdir) outdir = "bench";
    g_ncpu = online_cpus();
    llc = llc_bytes();
    cpu_model(cpu, sizeof cpu);
    isa = best_fma_isa();
    printf("attn.h generation benchmark%s: %s, %d online CPUs, LLC %.0f MiB, kernels %s\n", g_quick ? " (BENCH_QUICK)" : "", cpu,
           g_ncpu, (double)llc / MIB, attn_kernels());
    if (env_int("BENCH_STEPS_ONLY", 0)) {     /* only 1c (issue 33 item 6), its rows appended to the csv */
        snprintf(path, sizeof path, "%s/%s", outdir, RESULTS_CSV);
        if (!(g_csv = fopen(path, "a"))) die("cannot write " RESULTS_CSV);
        bench_decode_steps_small();
        if (fclose(g_csv) != 0) die("cannot write " RESULTS_CSV);
        return 0;
    }
    bw_bytes = (size_t)(g_quick ? 256 : 1024) << 20;
    if (bw_bytes < 8 * llc) bw_bytes = 8 * llc;
    measure_machine(&m, isa, g_ncpu, g_quick ? 0.05 : 0.2, bw_bytes);
    printf("machine (FMA loop: %s):\n", isa_desc[isa]);
    print_machine(&m, g_ncpu, bw_bytes);
    g_bw = m.bw;
    flush_open(g_ncpu, llc);
    snprintf(path, sizeof path, "%s/%s", outdir, RESULTS_CSV);
    if (!(g_csv = fopen(path, "w"))) die("cannot write " RESULTS_CSV);
    bench_csv_header(g_csv, "section,case,dtype,layout,L,threads,median_ms,min_ms,max_ms,gbs,pct_bw,pct_bw_local,ratio,cache_mib,check_err");
    bench_decode();
    bench_decode_steps();
    bench_decode_steps_small();
    bench_el();
    if (fclose(g_csv) != 0) die("cannot write " RESULTS_CSV);
    flush_close();
    printf("\nwrote %s\n", path);
    return 0;
}
