/* bench/bench_sparse.c - sparse attention kinds beside exact attention on the same machine in
   the same run: time vs sequence length (1k..64k), fitted scaling exponent, crossover length,
   difference from exact attention, effective GFLOP/s (4 * D per visible (query, key) pair) and %
   of the measured FMA peak, and a naive C loop (1 thread) that also checks the result.

   Shape: batch 1, H = 4 heads, D = Dv = 64, f32, self-attention, all cores.
     exact       ATTN_SOFTMAX, no mask (run up to 16k: 64k would take minutes per call here)
     lf256       ATTN_LONGFORMER, window 256 each side (HF attention_window 512), 1 global token
     lf512       ATTN_LONGFORMER, window 512 each side
     lf_dil      ATTN_LONGFORMER, window 256 each side, per-head dilations {1, 2, 4, 8}
     bigbird     ATTN_BIGBIRD, block 64, 3 random blocks (seeded)
     lsh         ATTN_LSH, bucket 64, n_buckets 64 (fixed, so the hashing stays O(seq)), 2 rounds,
                 shared QK (q passed as k)
     routing     ATTN_ROUTING, window 64, n_clusters = seq / 64 (every token in one window on
                 average; the routing scores cost O(seq^2 / 64 * D): the paper's sqrt(n) clusters
                 with w = sqrt(n) is the O(n^1.5) setting), shared QK
   Each time is the median of 3..15 calls (about 2 s per cell, at least 3). A full run takes about
   4 minutes on a loaded 2-core machine (exact attention at 16k: ~13 s a call).
   Backward part (after the sweep): attn_backward beside attn_forward (with lse) of the kinds
   that have one (lsh), seq 1k / 4k / 16k (quick: up to 4k), 1 and 2 threads, the two calls
   alternated, 7 each, medians; backward / forward ratio and the backward's GFLOP/s counted as
   the work it does per visible pair: 12 * D (the lse pass's Q.K^T again when n_hashes > 1, then
   Q.K^T, dout.V^T, P^T dout, dS^T q, dS K); every gradient checked finite.
   Env: BENCH_QUICK=1 (lengths up to 16k, exact up to 8k, fewer repetitions), BENCH_OUTDIR
   (default bench), BENCH_SPARSE_BWD_ONLY=1 (the backward part alone), BENCH_SHARE_ONLY=1 (issue 33 item 5: exact, LSH
   and Routing alternated at BENCH_SEQ (4096), 1 and 2 threads, BENCH_REPS (9) calls each, their
   GFLOP/s and share of peak against exact's, counting every product and the pairs alone; no CSV). Writes
   BENCH_OUTDIR/results_sparse.csv and BENCH_OUTDIR/chart_sparse.svg (the sweep) and
   BENCH_OUTDIR/results_sparse_backward.csv (the backward part). */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 4
#define D 64
#define N_LEN 7
#define N_MECH 7
static const int lens[N_LEN] = { 1024, 2048, 4096, 8192, 16384, 32768, 65536 };
static const char *const names[N_MECH] = { "exact", "lf256", "lf512", "lf_dil", "bigbird", "lsh", "routing" };
static const char *const colors[N_MECH] = { "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2" };
static float *g_centroids;
static const int dils[H] = { 1, 2, 4, 8 };

typedef struct {
    double ms, spread, pairs, gflops, pct, err;
    int reps, ran;
} cell;
static cell cells[N_MECH][N_LEN];
static int g_quick, g_ncpu;

static void make_desc(int m, int S, attn_desc *d) {
    memset(d, 0, sizeof *d);
    if (m == 0) return;
    if (m <= 3) {
        d->kind = ATTN_LONGFORMER;
        d->window_left = d->window_right = m == 2 ? 512 : 256;
        d->global_tokens = m == 3 ? 0 : 1;
        if (m == 3) d->longformer.dilations = dils;
        return;
    }
    if (m == 6) {
        d->kind = ATTN_ROUTING;
        d->routing.centroids = g_centroids; d->routing.n_clusters = S / 64; d->routing.window = 64;
        return;
    }
    if (m == 5) {
        d->kind = ATTN_LSH;
        d->lsh.n_buckets = 64; d->lsh.n_hashes = 2; d->lsh.seed = 1;
        return;
    }
    d->kind = ATTN_BIGBIRD;
    d->bigbird.seed = 1;
}

/* visible (query, key) pairs of one head h, counted from the pattern's definition */
static double pairs_of(int m, int S, int h, const int *table) {
    double n = 0;
    int i;
    if (m == 0) return (double)S * S;
    if (m == 6) return (double)S * 64 + (double)S * (S / 64) / 2.0;   /* windows of 64 x 64, plus routing
                                                                     (S x S/64 dots of 2D flops = half a pair) */
    if (m == 5) return 2.0 * S * 128 + 32.0 * S;   /* 2 rounds x 2 chunks of 64 keys, plus the hashing (2 rounds
                                                     x 32 rotation columns x 2D flops) counted as 4D-flop pairs */
    if (m <= 3) {
        const int w = m == 2 ? 512 : 256, Dl = m == 3 ? dils[h] : 1, G = m == 3 ? 0 : 1;
        for (i = 0; i < S; ++i) {
            long long lo = i - (long long)w * Dl, hi = i + (long long)w * Dl, c;
            if (i < G) { n += S; continue; }
            if (lo < 0) lo = i % Dl;
            if (hi > S - 1) hi = S - 1;
            c = (hi - lo) / Dl + 1;                         /* keys lo, lo + Dl, ..., <= hi */
            n += (double)c + (G > 0 && lo > 0 ? 1 : 0);   /* + the global key 0 when outside */
        }
        return n;
    }
    {
        const int b = 64, nb = S / b;
        int r, t, seen[1024];
        for (r = 0; r < nb; ++r) {
            int c = 0;
            if (r == 0 || r == nb - 1) { n += (double)nb * b * b; continue; }
            memset(seen, 0, sizeof(int) * (size_t)nb);
            seen[0] = seen[nb - 1] = seen[r - 1] = seen[r] = seen[r + 1] = 1;
            for (t = 0; t < 3; ++t) seen[table[((size_t)h * (nb - 2) + (r - 1)) * 3 + t]] = 1;
            for (t = 0; t < nb; ++t) c += seen[t];
            n += (double)c * b * b;
        }
        return n;
    }
}

/* naive Longformer (window 256, global token 0) / BigBird rows: plain loops, 1 thread, fp32 */
static void naive(int m, int S, const float *q, const float *k, const float *v, float *out, const int *table) {
    const float sc = 1.0f / sqrtf((float)D);
    float *s = (float *)xalloc(sizeof(float) * (size_t)S);
    char *vis = (char *)xalloc((size_t)S);
    int h, i, j, e;
    for (h = 0; h < H; ++h)
        for (i = 0; i < S; ++i) {
            float mx = -INFINITY, sum = 0.0f, *o = out + ((size_t)i * H + h) * D;
            for (j = 0; j < S; ++j) {
                if (m == 1) vis[j] = (char)(i == 0 || j == 0 || (j >= i - 256 && j <= i + 256));
                else {
                    const int qi = i / 64, kj = j / 64, nb = S / 64;
                    int t;
                    vis[j] = (char)(qi == 0 || qi == nb - 1 || kj == 0 || kj == nb - 1 || (kj >= qi - 1 && kj <= qi + 1));
                    if (!vis[j]) for (t = 0; t < 3; ++t) if (table[((size_t)h * (nb - 2) + (qi - 1)) * 3 + t] == kj) vis[j] = 1;
                }
                if (!vis[j]) continue;
                s[j] = 0.0f;
                for (e = 0; e < D; ++e) s[j] += q[((size_t)i * H + h) * D + e] * k[((size_t)j * H + h) * D + e];
                s[j] *= sc;
                if (s[j] > mx) mx = s[j];
            }
            for (e = 0; e < D; ++e) o[e] = 0.0f;
            for (j = 0; j < S; ++j) {
                float p;
                if (!vis[j]) continue;
                p = expf(s[j] - mx); sum += p;
                for (e = 0; e < D; ++e) o[e] += p * v[((size_t)j * H + h) * D + e];
            }
            for (e = 0; e < D; ++e) o[e] /= sum;
        }
    free(s); free(vis);
}

static double max_rel_diff(const float *a, const float *ref, size_t n) {
    double mref = 1.0, err = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(ref[i]) > mref) mref = fabs(ref[i]);
    for (i = 0; i < n; ++i) if (fabs(a[i] - ref[i]) > err) err = fabs(a[i] - ref[i]);
    return err / mref;
}

/* least-squares slope of log t vs log S over the lengths that ran */
static double exponent(int m) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int i, n = 0;
    for (i = 0; i < N_LEN; ++i)
        if (cells[m][i].ran) {
            const double x = log((double)lens[i]), y = log(cells[m][i].ms);
            sx += x; sy += y; sxx += x * x; sxy += x * y; ++n;
        }
    return n < 2 ? NAN : (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

static void write_svg(const char *path, double peak) {
    const double W = 900, Hh = 560, L = 80, R = 860, T = 70, B = 490;
    const double xlo = 10, xhi = 16;
    double ylo = 1e9, yhi = -1e9, y;
    FILE *f = fopen(path, "w");
    int m, i;
    if (!f) { fprintf(stderr, "bench: cannot write %s\n", path); return; }
    for (m = 0; m < N_MECH; ++m)
        for (i = 0; i < N_LEN; ++i)
            if (cells[m][i].ran) {
                const double l = log10(cells[m][i].ms);
                if (l < ylo) ylo = l;
                if (l > yhi) yhi = l;
            }
    ylo = floor(ylo); yhi = ceil(yhi);
    if (yhi <= ylo) yhi = ylo + 1;
#define SX(S) (L + (log2((double)(S)) - xlo) / (xhi - xlo) * (R - L))
#define SY(lm) (B - ((lm) - ylo) / (yhi - ylo) * (B - T))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
               "height=\"%.0f\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"26\" font-size=\"17\" font-weight=\"bold\">attn.h sparse attention: forward time vs "
               "sequence length (B=1, H=%d, D=%d, f32)</text>\n", L, H, D);
    bench_svg_machine(f, L, 44);
    fprintf(f, "<text x=\"%.0f\" y=\"60\" font-size=\"12\" fill=\"#444\">%d threads, FMA peak %.0f GFLOP/s; "
               "log-log axes; medians</text>\n", L, g_ncpu, peak);
    for (y = ylo; y <= yhi + 1e-9; y += 1) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", L, SY(y), R, SY(y));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g ms</text>\n", L - 6, SY(y) + 4, pow(10, y));
    }
    for (i = 0; i < N_LEN; ++i) {
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n", SX(lens[i]), T, SX(lens[i]), B);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%dk</text>\n", SX(lens[i]), B + 18, lens[i] / 1024);
    }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"#000\"/>\n", L, T, R - L, B - T);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">sequence length (log2 scale)</text>\n", (L + R) / 2, B + 40);
    for (m = 0; m < N_MECH; ++m) {
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colors[m]);
        for (i = 0; i < N_LEN; ++i)
            if (cells[m][i].ran) { fprintf(f, "%s%.1f,%.1f", first ? "" : " ", SX(lens[i]), SY(log10(cells[m][i].ms))); first = 0; }
        fprintf(f, "\"/>\n");
        for (i = 0; i < N_LEN; ++i)
            if (cells[m][i].ran)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", SX(lens[i]), SY(log10(cells[m][i].ms)), colors[m]);
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s "
                   "(slope %.2f)</text>\n", L + 12, T + 14 + 18.0 * m, colors[m], L + 32, T + 20 + 18.0 * m, names[m], exponent(m));
    }
    fprintf(f, "</svg>\n");
    fclose(f);
#undef SX
#undef SY
}

/* attn_backward / attn_forward of ATTN_LSH (make_desc's settings, shared QK), 1 and 2 threads */
static int backward_part(const char *outdir, const machine *m0) {
    static const int blens[3] = { 1024, 4096, 16384 }, kinds[1] = { 5 };
    char path[512];
    FILE *f;
    int li, ki, th, failed = 0;
    snprintf(path, sizeof path, "%s/results_sparse_backward.csv", outdir);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    bench_csv_header(f, "kind,seq,heads,dim,threads,forward_ms,backward_ms,backward_over_forward,backward_gflops,pct_peak");
    printf("\nbackward (attn_backward beside attn_forward with lse; 7 calls each, alternated, medians)\n");
    printf("%-8s %6s %7s %11s %12s %8s %9s %7s\n", "kind", "seq", "threads", "forward ms", "backward ms", "ratio",
           "GFLOP/s", "%peak");
    for (ki = 0; ki < 1; ++ki)
        for (li = 0; li < 3 && (!g_quick || blens[li] <= 4096); ++li) {
            const int m = kinds[ki], S = blens[li];
            const size_t n = (size_t)S * H * D;
            float *q = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
            float *dout = (float *)xalloc(n * 4), *g = (float *)xalloc(3 * n * 4), *lse = (float *)xalloc(sizeof(float) * S * H);
            attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D);
            attn_tensor to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D), tdo = attn_tensor_dense(dout, ATTN_F32, 1, S, H, D);
            attn_tensor gq = attn_tensor_dense(g, ATTN_F32, 1, S, H, D), gk = attn_tensor_dense(g + n, ATTN_F32, 1, S, H, D);
            attn_tensor gv = attn_tensor_dense(g + 2 * n, ATTN_F32, 1, S, H, D);
            fill_rand(q, n); fill_rand(v, n); fill_rand(dout, n);
            for (th = 1; th <= 2; ++th) {
                attn_desc d;
                double tf[7], tb[7], mn, mx, fms, bms, gf, pairs = 0;
                size_t i;
                int r, h;
                make_desc(m, S, &d);
                d.n_threads = th;
                if (attn_forward(&d, tq, tq, tv, to, lse) != ATTN_OK ||
                    attn_backward(&d, tq, tq, tv, to, tdo, lse, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
                for (r = 0; r < 7; ++r) {
                    double t0 = now_s();
                    if (attn_forward(&d, tq, tq, tv, to, lse) != ATTN_OK) die("attn_forward failed");
                    tf[r] = now_s() - t0;
                    t0 = now_s();
                    if (attn_backward(&d, tq, tq, tv, to, tdo, lse, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
                    tb[r] = now_s() - t0;
                }
                for (i = 0; i < 3 * n; ++i) if (!isfinite(g[i])) { failed++; break; }
                fms = 1e3 * median_of(tf, 7, &mn, &mx);
                bms = 1e3 * median_of(tb, 7, &mn, &mx);
                for (h = 0; h < H; ++h) pairs += 2.0 * S * 128;   /* 2 rounds x 2 chunks of 64 keys */
                gf = 12.0 * D * pairs / (bms * 1e-3) * 1e-9;
                printf("%-8s %6d %7d %11.2f %12.2f %7.2fx %9.1f %6.1f%%%s\n", names[m], S, th, fms, bms, bms / fms, gf,
                       100.0 * gf / (th == 1 ? m0->peak_1t : m0->peak_all), i < 3 * n ? "  NON-FINITE GRADIENT" : "");
                fflush(stdout);
                bench_csv_machine(f);
                fprintf(f, "%s,%d,%d,%d,%d,%.4f,%.4f,%.3f,%.2f,%.2f\n", names[m], S, H, D, th, fms, bms, bms / fms, gf,
                        100.0 * gf / (th == 1 ? m0->peak_1t : m0->peak_all));
            }
            free(q); free(v); free(o); free(dout); free(g); free(lse);
        }
    if (fclose(f) != 0) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    printf("(%%peak of the FMA peak of as many threads; a 1-thread row against the 1-thread peak)\nwrote %s\n", path);
    if (failed) { fprintf(stderr, "bench: %d backward check(s) FAILED\n", failed); return 1; }
    return 0;
}

/* Issue 33 item 5: LSH's and Routing's share of the machine's peak beside exact attention's, S 4096,
   1 and 2 threads, the three kinds alternated call by call (so drifting load hits all three alike),
   medians. Share = the kind's % of peak / exact's; the peak cancels, so it is the ratio of the two
   GFLOP/s. Two counts: "share/exact" counts every product the mechanism runs, as the main table's
   GFLOP/s (pairs_of) always has and as the item's 13-26% baseline was measured: 4 D flops per
   (query, key) pair (exact S^2, LSH 2 rounds x 128 keys per query, Routing 64 keys per query) plus
   LSH's hashing (2 rounds x 32 rotation columns x 2 D a token) and Routing's routing scores
   (clusters x 2 D a token); "attn only" counts the pairs alone. */
static int share_part(const machine *m0) {
    const int S = env_int("BENCH_SEQ", 4096), reps = env_int("BENCH_REPS", 9), kinds[3] = { 0, 5, 6 };
    const size_t n = (size_t)S * H * D;
    float *q = (float *)xalloc(n * 4), *k = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, S, H, D),
                tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D);
    int th, r, j;
    if (S < 256 || S > 65536 || S % 64 || reps < 1 || reps > 64) die("BENCH_SEQ must be a multiple of 64 in 256..65536, BENCH_REPS 1..64");
    fill_rand(q, n); fill_rand(k, n); fill_rand(v, n);
    printf("\nshare of peak (issue 33 item 5): S %d, H %d, D %d, f32, %d calls each alternated, medians\n", S, H, D, reps);
    printf("%-8s %7s %10s %9s %7s %12s %9s\n", "kind", "threads", "median ms", "GFLOP/s", "%peak", "share/exact",
           "attn only");
    for (th = 1; th <= (g_ncpu < 2 ? 1 : 2); ++th) {
        double t[3][64], ms[3], gf[3], ga[3], mn, mx;
        attn_desc d[3];
        for (j = 0; j < 3; ++j) {
            make_desc(kinds[j], S, &d[j]);
            d[j].n_threads = th;
            if (attn_forward(&d[j], tq, j ? tq : tk, tv, to, NULL) != ATTN_OK) die("attn_forward failed");
        }
        for (r = 0; r < reps; ++r)
            for (j = 0; j < 3; ++j) {
                const double t0 = now_s();
                if (attn_forward(&d[j], tq, j ? tq : tk, tv, to, NULL) != ATTN_OK) die("attn_forward failed");
                t[j][r] = now_s() - t0;
            }
        for (j = 0; j < 3; ++j) {   /* gf: every product (pairs plus hashing / routing scores); ga: pairs only */
            const double pairs = (double)H * S * (j == 0 ? S : j == 1 ? 256 : 64);
            const double extra = j == 1 ? 2.0 * 32 * 2.0 * D * H * S : j == 2 ? 2.0 * D * H * (double)S * d[j].routing.n_clusters : 0.0;
            ms[j] = median_of(t[j], reps, &mn, &mx) * 1e3;
            ga[j] = 4.0 * D * pairs / (ms[j] * 1e6);
            gf[j] = ga[j] + extra / (ms[j] * 1e6);
        }
        for (j = 0; j < 3; ++j)
            printf("%-8s %7d %10.2f %9.1f %7.1f %12.3f %9.3f\n", names[kinds[j]], th, ms[j], gf[j],
                   100.0 * gf[j] / (th == 1 ? m0->peak_1t : m0->peak_all), gf[j] / gf[0], ga[j] / ga[0]);
    }
    free(q); free(k); free(v); free(o);
    return 0;
}

int main(void) {
    char cpu[256], path[512];
    const char *outdir = getenv("BENCH_OUTDIR");
    machine m0;
    double peak, t_start = now_s();
    int isa, m, li, failed = 0, max_len, max_exact;
    FILE *f;
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    g_ncpu = online_cpus();
    if (!outdir || !*outdir) outdir = "bench";
    max_len = g_quick ? 16384 : 65536;
    max_exact = g_quick ? 8192 : 16384;
    g_centroids = (float *)xalloc(sizeof(float) * (size_t)H * (65536 / 64) * D);
    fill_rand(g_centroids, (size_t)H * (65536 / 64) * D);
    cpu_model(cpu, sizeof cpu);
    isa = best_fma_isa();
    printf("attn.h sparse benchmark%s: %s, %d online CPUs, kernels %s\n", g_quick ? " (BENCH_QUICK)" : "", cpu, g_ncpu,
           attn_kernels());
    printf("machine (FMA loop: %s):\n", isa_desc[isa]);
    measure_machine(&m0, isa, g_ncpu, g_quick ? 0.05 : 0.2, (size_t)64 << 20);
    print_machine(&m0, g_ncpu, (size_t)64 << 20);
    peak = m0.peak_all;
    if (env_int("BENCH_SPARSE_BWD_ONLY", 0)) return backward_part(outdir, &m0);
    if (env_int("BENCH_SHARE_ONLY", 0)) return share_part(&m0);
    printf("\n%-8s %6s %10s %8s %9s %7s %10s %12s\n", "kind", "seq", "median ms", "spread", "GFLOP/s", "%peak",
           "vs exact", "diff/exact");
    for (li = 0; li < N_LEN && lens[li] <= max_len; ++li) {
        const int S = lens[li], nb = S / 64;
        const size_t n = (size_t)S * H * D;
        float *q = (float *)xalloc(n * 4), *k = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4);
        float *ex = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
        int *table = (int *)xalloc(sizeof(int) * (size_t)H * (nb > 2 ? nb - 2 : 1) * 3);
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, S, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, S, H, D),
                    tv = attn_tensor_dense(v, ATTN_F32, 1, S, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, S, H, D);
        fill_rand(q, n); fill_rand(k, n); fill_rand(v, n);
        for (m = 0; m < N_MECH; ++m) {
            cell *c = &cells[m][li];
            attn_desc d;
            double t[16], mn, mx, budget;
            int r, h;
            if (m == 0 && S > max_exact) continue;
            make_desc(m, S, &d);
            if (m == 4) attn_bigbird_random_table(&d, H, S, table);
            /* warm-up (not timed), except for calls long enough to warm up by themselves */
            if (m != 0 || S < 8192)
                if (attn_forward(&d, tq, m >= 5 ? tq : tk, tv, to, NULL) != ATTN_OK) die("attn_forward failed");
            budget = g_quick ? 0.5 : 2.0;
            for (r = 0; r < 15; ++r) {
                const double t0 = now_s();
                if (attn_forward(&d, tq, m >= 5 ? tq : tk, tv, to, NULL) != ATTN_OK) die("attn_forward failed");
                t[r] = now_s() - t0;
                budget -= t[r];
                if (r >= 2 && budget < 0) { ++r; break; }
            }
            c->reps = r;
            c->ms = 1e3 * median_of(t, r, &mn, &mx);
            c->spread = 100.0 * (mx - mn) / (c->ms * 1e-3);
            for (c->pairs = 0, h = 0; h < H; ++h) c->pairs += pairs_of(m, S, h, table);
            c->gflops = 4.0 * D * c->pairs / (c->ms * 1e-3) * 1e-9;
            c->pct = 100.0 * c->gflops / peak;
            c->ran = 1;
            if (m == 0) memcpy(ex, o, n * 4);
            c->err = cells[0][li].ran ? max_rel_diff(o, ex, n) : NAN;
            printf("%-8s %6d %10.2f %7.1f%% %9.1f %6.1f%% %9.1fx %12.3g\n", names[m], S, c->ms, c->spread, c->gflops, c->pct,
                   cells[0][li].ran ? cells[0][li].ms / c->ms : NAN, c->err);
            fflush(stdout);
            if ((m == 1 || m == 4) && S == 4096) {   /* the naive loop: time and check */
                float *nv = (float *)xalloc(n * 4);
                double t0 = now_s(), tn, e;
                naive(m, S, q, k, v, nv, table);
                tn = now_s() - t0;
                e = max_rel_diff(o, nv, n);
                printf("         naive C loop (1 thread) %.0f ms: attn.h x%.1f faster, max rel diff %.2g%s\n", 1e3 * tn,
                       1e3 * tn / c->ms, e, e <= 1e-4 ? "" : "  CHECK FAILED");
                if (!(e <= 1e-4)) failed++;
                free(nv);
            }
        }
        free(q); free(k); free(v); free(ex); free(o); free(table);
    }
    printf("\n%-8s %10s %14s %16s\n", "kind", "exponent", "crossover", "x exact @16k");
    for (m = 0; m < N_MECH; ++m) {
        int cross = -1;
        for (li = 0; li < N_LEN; ++li)
            if (cells[0][li].ran && cells[m][li].ran && cells[m][li].ms < cells[0][li].ms) { cross = lens[li]; break; }
        printf("%-8s %10.2f %14s %15.1fx\n", names[m], exponent(m),
               m == 0 ? "-" : cross < 0 ? "none measured" : cross == lens[0] ? "<= 1024" : (snprintf(path, sizeof path, "%d", cross), path),
               cells[0][4].ran && cells[m][4].ran ? cells[0][4].ms / cells[m][4].ms : NAN);
    }
    printf("\nGFLOP/s: 4*D per visible (query, key) pair, counted from each pattern / median time; %%peak of the\n"
           "%d-thread FMA peak. exponent: least-squares slope of log time vs log seq. crossover: first measured\n"
           "length where the kind beats exact attention. diff/exact: max |out - exact| / max |exact| (the\n"
           "sparse kinds are different functions: this is how far they are from full attention on random data).\n", g_ncpu);
    snprintf(path, sizeof path, "%s/results_sparse.csv", outdir);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    bench_csv_header(f, "kind,seq,heads,dim,threads,median_ms,spread_pct,reps,pairs,gflops,pct_peak,x_vs_exact,diff_vs_exact,exponent");
    for (m = 0; m < N_MECH; ++m)
        for (li = 0; li < N_LEN; ++li) {
            const cell *c = &cells[m][li];
            if (!c->ran) continue;
            bench_csv_machine(f);
            fprintf(f, "%s,%d,%d,%d,%d,%.4f,%.2f,%d,%.0f,%.2f,%.2f,%.3f,%.3g,%.3f\n", names[m], lens[li], H, D, g_ncpu,
                    c->ms, c->spread, c->reps, c->pairs, c->gflops, c->pct, cells[0][li].ran ? cells[0][li].ms / c->ms : NAN,
                    c->err, exponent(m));
        }
    if (fclose(f) != 0) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    snprintf(path, sizeof path, "%s/chart_sparse.svg", outdir);
    write_svg(path, peak);
    printf("wrote %s/results_sparse.csv and %s; wall time %.1f s\n", outdir, path, now_s() - t_start);
    if (failed) { fprintf(stderr, "bench: %d check(s) FAILED\n", failed); return 1; }
    return backward_part(outdir, &m0);
}
