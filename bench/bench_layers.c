/* bench/bench_layers.c - attention layer forward (attn_layer_forward) at the shapes of
   "Cost-Effective Attention Mechanisms for Low Resource Settings": Standard, Optimized,
   Efficient, Super (and the Direct kinds), GFLOP/s (attn_layer_flops) and % of the measured FMA
   peak, the share of the time spent in the projection GEMMs (timed through the sgemm hook),
   the speed-up over Standard side by side with the paper's claims, and the ratio vs a naive
   layer (plain loops, 1 thread) that also checks the output.

   Shapes: d_m 768, h 12, l 1024, batch 1 and d_m 128, h 4, l 64, batch 32 (the paper's
   configurations; batch chosen so both do comparable work per call), self-attention, no mask,
   context = l (Super's W^A and Direct's W_D are l x l).
   Env: BENCH_QUICK=1 (fewer reps, no naive run at the big shape), BENCH_OUTDIR (default bench).
   Writes BENCH_OUTDIR/results_layers.csv. */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

typedef struct { int dm, h, l, B; } shape;
static const shape shapes[] = { { 768, 12, 1024, 1 }, { 128, 4, 64, 32 } };
#define N_SHAPES 2
static const char *const kind_names[6] = { "standard", "optimized", "efficient", "super", "direct", "direct_input" };
/* the paper's claimed inference speed-up over Standard, as text */
static const char *const claims[6] = { "-", "2.5-7.5%", "5-15%", "n/a", "n/a", "n/a" };

static int g_quick, g_ncpu;

/* the timing hook: attn__sgemm (built in), with the time spent counted */
typedef struct { double secs; long calls; } gemm_clock;
static void timed_sgemm(void *user, int ta, int tb, int m, int n, int k, float alpha, const float *a, ptrdiff_t lda,
                        const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    gemm_clock *g = (gemm_clock *)user;
    double t0 = now_s();
    attn__sgemm(g_ncpu, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    g->secs += now_s() - t0;
    g->calls++;
}

/* ---- the naive layer: plain loops, one thread, float accumulation ---- */
static void nv_proj(const float *X, int m, int k, const float *W, const float *b, int n, float *Y) {
    int i, j, p;
    for (i = 0; i < m; ++i) {
        float *y = Y + (size_t)i * n;
        for (j = 0; j < n; ++j) y[j] = b ? b[j] : 0.0f;
        for (p = 0; p < k; ++p) {
            const float x = X[(size_t)i * k + p], *w = W + (size_t)p * n;
            for (j = 0; j < n; ++j) y[j] += x * w[j];
        }
    }
}
static void naive_layer(int kind, const shape *s, const attn_layer_weights *w, const float *x, float *out,
                        float *Q, float *K, float *V, float *A, float *sc) {
    const int l = s->l, dm = s->dm, H = kind >= ATTN_LAYER_DIRECT ? 1 : s->h, dk = dm / H;
    int b, h, i, j, e;
    for (b = 0; b < s->B; ++b) {
        const float *X = x + (size_t)b * l * dm;
        if (kind <= ATTN_LAYER_SUPER) nv_proj(X, l, dm, w->wq, w->bq, dm, Q);
        if (kind <= ATTN_LAYER_OPTIMIZED) nv_proj(X, l, dm, w->wk, w->bk, dm, K);
        else memcpy(K, X, sizeof(float) * (size_t)l * dm);
        if (kind == ATTN_LAYER_STANDARD || kind >= ATTN_LAYER_DIRECT) nv_proj(X, l, dm, w->wv, w->bv, dm, V);
        else if (kind == ATTN_LAYER_SUPER) nv_proj(w->wa, l, l, X, NULL, dm, V);    /* W^A stride = l = context */
        else memcpy(V, X, sizeof(float) * (size_t)l * dm);
        if (kind == ATTN_LAYER_SUPER && w->ba)
            for (i = 0; i < l; ++i) for (e = 0; e < dm; ++e) V[(size_t)i * dm + e] += w->ba[i];
        for (h = 0; h < H; ++h)
            for (i = 0; i < l; ++i) {
                float mx = -INFINITY, sum = 0.0f;
                for (j = 0; j < l; ++j) {
                    float t = 0.0f;
                    if (kind <= ATTN_LAYER_SUPER) {
                        for (e = 0; e < dk; ++e) t += Q[(size_t)i * dm + h * dk + e] * K[(size_t)j * dm + h * dk + e];
                        t /= sqrtf((float)dk);
                    } else if (kind == ATTN_LAYER_DIRECT) t = w->wd[(size_t)i * l + j];
                    else {
                        for (e = 0; e < dm; ++e) t += X[(size_t)i * dm + e] * X[(size_t)j * dm + e];
                        t *= w->wd[(size_t)i * l + j] / sqrtf((float)dm);
                    }
                    sc[j] = t; if (t > mx) mx = t;
                }
                for (j = 0; j < l; ++j) { sc[j] = expf(sc[j] - mx); sum += sc[j]; }
                for (e = 0; e < dk; ++e) A[(size_t)i * dm + h * dk + e] = 0.0f;
                for (j = 0; j < l; ++j) {
                    const float p = sc[j] / sum;
                    for (e = 0; e < dk; ++e) A[(size_t)i * dm + h * dk + e] += p * V[(size_t)j * dm + h * dk + e];
                }
            }
        nv_proj(A, l, dm, w->wo, w->bo, dm, out + (size_t)b * l * dm);
    }
}

typedef struct {
    int shape, kind;
    double med_ms, spread, gflops, pct_peak, gemm_share, faster_pct, naive_ms, x_naive, err, bwd_ms;
    int reps, checked;
} row;

int main(void) {
    row rows[N_SHAPES * 6];
    int n_rows = 0, si, k, i, isa, failed = 0;
    machine m0, m1;
    double peak, peak_secs, t_start = now_s();
    char cpu[256], path[512];
    const char *outdir = getenv("BENCH_OUTDIR");
    FILE *f;
    g_quick = env_int("BENCH_QUICK", 0) != 0;
    g_ncpu = online_cpus();
    if (!outdir || !*outdir) outdir = "bench";
    cpu_model(cpu, sizeof cpu);
    isa = best_fma_isa();
    printf("attn.h layer benchmark%s: %s, %d online CPUs, kernels %s\n", g_quick ? " (BENCH_QUICK)" : "", cpu, g_ncpu,
           attn_kernels());
    peak_secs = g_quick ? 0.05 : 0.2;
    printf("machine, at the start (FMA loop: %s):\n", isa_desc[isa]);
    measure_machine(&m0, isa, g_ncpu, peak_secs, (size_t)64 << 20);
    print_machine(&m0, g_ncpu, (size_t)64 << 20);
    fflush(stdout);

    for (si = 0; si < N_SHAPES; ++si) {
        const shape *s = &shapes[si];
        const size_t nx = (size_t)s->B * s->l * s->dm, nw = (size_t)s->dm * s->dm, nc = (size_t)s->l * s->l;
        float *x = (float *)xalloc(nx * 4), *out = (float *)xalloc(nx * 4), *ref = (float *)xalloc(nx * 4);
        float *wq = (float *)xalloc(nw * 4), *wk = (float *)xalloc(nw * 4), *wv = (float *)xalloc(nw * 4);
        float *wo = (float *)xalloc(nw * 4), *bias = (float *)xalloc((size_t)s->dm * 4);
        float *wa = (float *)xalloc(nc * 4), *ba = (float *)xalloc((size_t)s->l * 4), *wd = (float *)xalloc(nc * 4);
        const size_t nl = (size_t)s->l * s->dm;
        float *Q = (float *)xalloc(nl * 4), *K = (float *)xalloc(nl * 4), *V = (float *)xalloc(nl * 4);
        float *A = (float *)xalloc(nl * 4), *sc = (float *)xalloc((size_t)s->l * 4);
        attn_layer_weights w;
        fill_rand(x, nx); fill_rand(wq, nw); fill_rand(wk, nw); fill_rand(wv, nw); fill_rand(wo, nw);
        fill_rand(bias, (size_t)s->dm); fill_rand(wa, nc); fill_rand(ba, (size_t)s->l); fill_rand(wd, nc);
        for (i = 0; i < (int)nw; ++i) { wq[i] *= 0.05f; wk[i] *= 0.05f; wv[i] *= 0.05f; wo[i] *= 0.05f; }
        for (i = 0; i < (int)nc; ++i) wa[i] *= 1.0f / (float)s->l;
        memset(&w, 0, sizeof w);
        w.wq = wq; w.bq = bias; w.wk = wk; w.bk = bias; w.wv = wv; w.bv = bias; w.wo = wo; w.bo = bias;
        w.wa = wa; w.ba = ba; w.wd = wd;
        printf("\nshape d_m %d, h %d, l %d, batch %d (self-attention, no mask, %d threads)\n", s->dm, s->h, s->l, s->B, g_ncpu);
        {
            attn_layer_desc d[6];
            void *ws[6];
            double ts[6][64], flops[6], t_all = 0.0, t0, mn, mx;
            row *r0 = &rows[n_rows];
            int rounds, min_rounds = g_quick ? 3 : 7;
            for (k = 0; k < 6; ++k) {
                size_t wsb = 0;
                memset(&d[k], 0, sizeof d[k]);
                memset(&rows[n_rows + k], 0, sizeof(row));
                rows[n_rows + k].shape = si; rows[n_rows + k].kind = k;
                d[k].kind = (attn_layer_kind)k; d[k].d_model = s->dm; d[k].heads = s->h; d[k].context = s->l;
                if (attn_layer_flops(&d[k], s->B, s->l, s->l, &flops[k]) != ATTN_OK ||
                    attn_layer_workspace_size(&d[k], 0, s->B, s->l, s->l, &wsb) != ATTN_OK) die("bad layer desc");
                ws[k] = xalloc(wsb);
                d[k].workspace = ws[k]; d[k].workspace_size = wsb;
                if (attn_layer_forward(&d[k], &w, s->B, s->l, s->l, x, NULL, out) != ATTN_OK) die("forward failed");  /* warm-up */
            }
            /* interleaved rounds (every kind once per round), so drifting load on a shared
               machine hits every kind alike: at least min_rounds and 6 s in all (at most 64) */
            for (rounds = 0; rounds < 64 && (rounds < min_rounds || t_all < (g_quick ? 2.0 : 6.0)); ++rounds)
                for (k = 0; k < 6; ++k) {
                    t0 = now_s();
                    attn_layer_forward(&d[k], &w, s->B, s->l, s->l, x, NULL, out);
                    ts[k][rounds] = now_s() - t0;
                    t_all += ts[k][rounds];
                }
            for (k = 0; k < 6; ++k) {
                row *r = &rows[n_rows + k];
                gemm_clock gc;
                double share[3];
                int rep;
                r->reps = rounds;
                r->med_ms = 1e3 * median_of(ts[k], rounds, &mn, &mx);
                r->spread = 100.0 * (mx - mn) / (r->med_ms * 1e-3);
                r->gflops = flops[k] / (r->med_ms * 1e-3) * 1e-9;
                r->faster_pct = 100.0 * (r0->med_ms / r->med_ms - 1.0);
                /* GEMM share: the same call with the projections routed through a timing hook */
                gc.secs = 0.0; gc.calls = 0;
                d[k].sgemm = timed_sgemm; d[k].sgemm_user = &gc;
                for (rep = 0; rep < 3; ++rep) {
                    double tg = gc.secs;
                    t0 = now_s();
                    attn_layer_forward(&d[k], &w, s->B, s->l, s->l, x, NULL, out);
                    share[rep] = (gc.secs - tg) / (now_s() - t0);
                }
                r->gemm_share = 100.0 * median_of(share, 3, &mn, &mx);
                d[k].sgemm = NULL; d[k].sgemm_user = NULL;
                {   /* backward (every gradient): median of 3, 1 call at the big shape in quick mode */
                    const int nb = (g_quick && si == 0) ? 1 : 3;
                    float *gx = (float *)xalloc(nx * 4), *gw = (float *)xalloc((nw > nc ? nw : nc) * 4 * 4);
                    attn_layer_grads G;
                    attn_layer_desc db = d[k];
                    double tb[3];
                    G.wq = gw; G.wk = gw + nw; G.wv = gw + 2 * nw; G.wo = gw + 3 * nw;
                    G.bq = G.bk = G.bv = G.bo = (float *)xalloc((size_t)s->dm * 4);
                    G.wa = G.wd = gw; G.ba = (float *)xalloc((size_t)s->l * 4);
                    if (nc > nw) { G.wq = G.wk = G.wv = G.wo = gw; }
                    db.workspace = NULL; db.workspace_size = 0;
                    for (rep = 0; rep < nb; ++rep) {
                        t0 = now_s();
                        if (attn_layer_backward(&db, &w, s->B, s->l, s->l, x, NULL, out, gx, NULL, &G) != ATTN_OK) die("backward failed");
                        tb[rep] = now_s() - t0;
                    }
                    r->bwd_ms = 1e3 * median_of(tb, nb, &mn, &mx);
                    free(gx); free(gw); free(G.bq); free(G.ba);
                }
                /* naive layer: time and check (skipped at the big shape in quick mode) */
                if (!(g_quick && si == 0)) {
                    double err = 0.0, mref = 1.0;
                    size_t e;
                    t0 = now_s();
                    naive_layer(k, s, &w, x, ref, Q, K, V, A, sc);
                    r->naive_ms = 1e3 * (now_s() - t0);
                    r->x_naive = r->naive_ms / r->med_ms;
                    attn_layer_forward(&d[k], &w, s->B, s->l, s->l, x, NULL, out);
                    for (e = 0; e < nx; ++e) { if (fabs(ref[e]) > mref) mref = fabs(ref[e]); if (fabs(out[e] - ref[e]) > err) err = fabs(out[e] - ref[e]); }
                    r->err = err / mref; r->checked = 1;
                    if (!(r->err <= 1e-4)) { failed++; printf("  CHECK FAILED: %s max rel err %.3g\n", kind_names[k], r->err); }
                }
                printf("  %-13s %9.2f ms (median of %2d, spread %5.1f%%)  %7.1f GFLOP/s  gemm %4.1f%% of time  vs standard %+6.1f%% (paper %s)",
                       kind_names[k], r->med_ms, r->reps, r->spread, r->gflops, r->gemm_share, r->faster_pct, claims[k]);
                if (r->checked) printf("  naive %.0f ms (x%.1f), err %.1e", r->naive_ms, r->x_naive, r->err);
                printf("  backward %.1f ms", r->bwd_ms);
                printf("\n");
                fflush(stdout);
                free(ws[k]);
            }
            n_rows += 6;
        }
        free(x); free(out); free(ref); free(wq); free(wk); free(wv); free(wo); free(bias); free(wa); free(ba); free(wd);
        free(Q); free(K); free(V); free(A); free(sc);
    }

    printf("\nmachine, at the end:\n");
    measure_machine(&m1, isa, g_ncpu, peak_secs, (size_t)64 << 20);
    print_machine(&m1, g_ncpu, (size_t)64 << 20);
    peak = m1.peak_all > m0.peak_all ? m1.peak_all : m0.peak_all;
    printf("reference peak (higher of start and end): %.1f GFLOP/s on %d threads\n", peak, g_ncpu);
    for (i = 0; i < n_rows; ++i) rows[i].pct_peak = 100.0 * rows[i].gflops / peak;

    printf("\n%-22s %-13s %10s %9s %7s %7s %12s %10s %9s %10s\n", "shape", "kind", "median ms", "GFLOP/s", "%peak",
           "gemm%", "vs standard", "paper", "x naive", "bwd ms");
    for (i = 0; i < n_rows; ++i) {
        const row *r = &rows[i];
        const shape *s = &shapes[r->shape];
        char sh[64], xn[32];
        snprintf(sh, sizeof sh, "dm%d h%d l%d B%d", s->dm, s->h, s->l, s->B);
        if (r->checked) snprintf(xn, sizeof xn, "%.1f", r->x_naive); else snprintf(xn, sizeof xn, "-");
        printf("%-22s %-13s %10.2f %9.1f %6.1f%% %6.1f%% %+11.1f%% %10s %9s %10.1f\n", sh, kind_names[r->kind], r->med_ms,
               r->gflops, r->pct_peak, r->gemm_share, r->faster_pct, claims[r->kind], xn, r->bwd_ms);
    }
    printf("\nGFLOP/s: attn_layer_flops (projections, W^A mix, attention matmuls; dense) / median time.\n"
           "%%peak: of the %d-thread FMA peak. gemm%%: time inside the projection GEMMs (timed through the\n"
           "sgemm hook calling the built-in attn__sgemm). vs standard: t_standard / t_kind - 1 (positive =\n"
           "faster), the paper's claim beside it. x naive: plain-loop 1-thread layer time / attn.h time.\n"
           "bwd ms: attn_layer_backward with every gradient (recomputes the forward), median of 3.\n", g_ncpu);

    snprintf(path, sizeof path, "%s/results_layers.csv", outdir);
    f = fopen(path, "w");
    if (!f) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    bench_csv_header(f, "d_model,heads,l,batch,kind,threads,median_ms,spread_pct,reps,gflops,pct_peak,gemm_share_pct,"
                        "faster_than_standard_pct,paper_claim,naive_ms,x_naive,check_err,backward_ms");
    for (i = 0; i < n_rows; ++i) {
        const row *r = &rows[i];
        const shape *s = &shapes[r->shape];
        bench_csv_machine(f);
        fprintf(f, "%d,%d,%d,%d,%s,%d,%.4f,%.2f,%d,%.2f,%.2f,%.1f,%.2f,%s,%.2f,%.2f,%.3g,%.2f\n", s->dm, s->h, s->l,
                s->B, kind_names[r->kind], g_ncpu, r->med_ms, r->spread, r->reps, r->gflops, r->pct_peak, r->gemm_share,
                r->faster_pct, claims[r->kind], r->naive_ms, r->x_naive, r->err, r->bwd_ms);
    }
    if (fclose(f) != 0) { fprintf(stderr, "bench: cannot write %s\n", path); return 3; }
    printf("wrote %s; wall time %.1f s\n", path, now_s() - t_start);
    if (failed) { fprintf(stderr, "bench: %d case(s) FAILED the check\n", failed); return 1; }
    return 0;
}
