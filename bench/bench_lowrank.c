/* bench/bench_lowrank.c - low-rank attention: Linformer (ATTN_LINFORMER, k = 256, E = F shared
   across heads: the segment-mean pooling matrix, row i averaging tokens [i n/k, (i+1) n/k), a
   fixed stand-in for a trained projection that approximates attention; its values do not change
   the time) and Nystromformer (ATTN_NYSTROM, 64 landmarks,
   6 pseudo-inverse iterations, no conv) beside exact attention (attn_forward, ATTN_SOFTMAX)
   in the same run: time vs sequence length 1k..64k (median of several calls), fitted scaling
   exponent, crossover length, error vs exact attention at each length, GFLOP/s (counted flops
   below) and % of the measured FMA peak, and the ratio against naive C loops (1 thread) at 1k
   that also check the output.

   Shape: batch 1, 4 heads, head dim 64, fp32, self-attention, all cores. q, k, v ~ U(-1, 1).
   Exact attention is measured up to BENCH_EXACT_MAX (default 32768; BENCH_QUICK: 8192); beyond
   it its time is extrapolated from the fitted n^p and marked so (no error column there).
   Counted flops (2 per multiply-add, per head): exact 4 n^2 d; Linformer 4 k n d (E K, F V) +
   4 n k d (attention); Nystrom 8 n m d (B V and F W) + 2 m^2 d (A) + 6 x 8 m^3 (pinv) + 2 m^2 d (W).
   Then Linformer's backward beside linformer 0.2.3's autograd (issue 33 item 1; run_linformer_peer:
   S 4096, H 8, D 64, k 256, 1 thread, rounds interleaved with one Python process each as
   bench_linear's part 5; BENCH_PYTHON picks the Python, no torch/linformer: no column).
   Env: BENCH_QUICK=1 (1k..16k, fewer reps), BENCH_OUTDIR (default bench), BENCH_ONLY=linformer-peer
   (that part alone), BENCH_ROUNDS (its rounds, 5-15, default 7).
   Writes BENCH_OUTDIR/results_lowrank.csv, BENCH_OUTDIR/chart_lowrank.svg and
   BENCH_OUTDIR/results_linformer_peer.csv. */
#define _POSIX_C_SOURCE 200809L   /* popen, for the PyTorch peer */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 4
#define D 64
#define KP 256
#define M 64
#define MAX_N 8
enum { EXACT = 0, LIN = 1, NYS = 2, N_MECH = 3 };
static const char *const mech_name[N_MECH] = { "exact", "linformer", "nystrom" };
static const char *const mech_color[N_MECH] = { "#1f77b4", "#d62728", "#2ca02c" };

typedef struct {
    int n, measured;
    double ms, lo, hi, gflops, pct, err;
} point;
static point pts[N_MECH][MAX_N];
static int n_lens;

static double flops_of(int mech, double n) {
    if (mech == EXACT) return H * 4.0 * n * n * D;
    if (mech == LIN) return H * (4.0 * KP * n * D + 4.0 * n * KP * D);
    return H * (8.0 * n * M * D + 4.0 * M * M * D + 48.0 * M * M * M);
}

/* time one call configuration: median of reps (reps from a first timed call) */
static double time_call(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, int quick,
                        double *lo, double *hi) {
    double t[7], t0;
    int reps, i;
    t0 = now_s();
    if (attn_forward(d, q, k, v, o, NULL) != ATTN_OK) die("attn_forward failed");
    t[0] = now_s() - t0;
    reps = t[0] > 2.0 ? 1 : (t[0] > 0.3 || quick ? 3 : 7);
    for (i = 1; i < reps; ++i) {
        t0 = now_s();
        attn_forward(d, q, k, v, o, NULL);
        t[i] = now_s() - t0;
    }
    return median_of(t, reps, lo, hi);
}

static double max_norm_err(const float *ref, const float *got, size_t n) {
    double mx = 1.0, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    for (i = 0; i < n; ++i) if (fabs((double)got[i] - ref[i]) > e) e = fabs((double)got[i] - ref[i]);
    return e / mx;
}

/* least-squares slope of log t vs log n over the measured points */
static double fit_exponent(int mech, double *logc) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, c;
    int i, k = 0;
    for (i = 0; i < n_lens; ++i) {
        double x, y;
        if (!pts[mech][i].measured) continue;
        x = log((double)pts[mech][i].n); y = log(pts[mech][i].ms);
        sx += x; sy += y; sxx += x * x; sxy += x * y; ++k;
    }
    if (k < 2) { *logc = 0; return NAN; }
    c = (k * sxy - sx * sy) / (k * sxx - sx * sx);
    *logc = (sy - c * sx) / k;
    return c;
}

/* ---- naive C loops (1 thread, float), head by head, for the ratio and an output check ---- */
static void naive_attn(const float *Q, const float *K, const float *V, int nq, int nk, int ldq, int ldk, float *O, int ldo,
                       float *s) {
    const float sc = 1.0f / sqrtf((float)D);
    int i, j, c;
    for (i = 0; i < nq; ++i) {
        float mx = -INFINITY, sum = 0.0f;
        for (j = 0; j < nk; ++j) {
            float a = 0.0f;
            for (c = 0; c < D; ++c) a += Q[(size_t)i * ldq + c] * K[(size_t)j * ldk + c];
            s[j] = a * sc; if (s[j] > mx) mx = s[j];
        }
        for (j = 0; j < nk; ++j) { s[j] = expf(s[j] - mx); sum += s[j]; }
        for (c = 0; c < D; ++c) {
            float a = 0.0f;
            for (j = 0; j < nk; ++j) a += s[j] * V[(size_t)j * ldk + c];
            O[(size_t)i * ldo + c] = a / sum;
        }
    }
}
static void naive_mm(const float *A, int lda, const float *B, int ldb, float *C, int ldc, int m, int k, int n) {
    int i, j, p;
    for (i = 0; i < m; ++i) {
        for (j = 0; j < n; ++j) C[(size_t)i * ldc + j] = 0.0f;
        for (p = 0; p < k; ++p) {
            const float a = A[(size_t)i * lda + p];
            for (j = 0; j < n; ++j) C[(size_t)i * ldc + j] += a * B[(size_t)p * ldb + j];
        }
    }
}
static void naive_linformer(const float *q, const float *k, const float *v, const float *E, const float *F, int n, float *o) {
    float *Kp = (float *)xalloc(sizeof(float) * KP * D), *Vp = (float *)xalloc(sizeof(float) * KP * D);
    float *s = (float *)xalloc(sizeof(float) * KP);
    int h;
    for (h = 0; h < H; ++h) {
        naive_mm(E, n, k + h * D, H * D, Kp, D, KP, n, D);
        naive_mm(F, n, v + h * D, H * D, Vp, D, KP, n, D);
        naive_attn(q + h * D, Kp, Vp, n, KP, H * D, D, o + h * D, H * D, s);
    }
    free(Kp); free(Vp); free(s);
}
static void naive_nystrom(const float *q, const float *k, const float *v, int n, float *o) {
    const int l = n / M;
    const float sc = 1.0f / sqrtf((float)D);
    float *ql = (float *)xalloc(sizeof(float) * M * D), *kl = (float *)xalloc(sizeof(float) * M * D);
    float *A = (float *)xalloc(sizeof(float) * M * M), *Z = (float *)xalloc(sizeof(float) * M * M);
    float *AZ = (float *)xalloc(sizeof(float) * M * M), *T = (float *)xalloc(sizeof(float) * M * M);
    float *U = (float *)xalloc(sizeof(float) * M * M), *bv = (float *)xalloc(sizeof(float) * M * D);
    float *w = (float *)xalloc(sizeof(float) * M * D), *s = (float *)xalloc(sizeof(float) * (size_t)n);
    int h, i, j, c, it;
    for (h = 0; h < H; ++h) {
        float cmax = 0.0f;
        for (j = 0; j < M; ++j)
            for (c = 0; c < D; ++c) {
                float a = 0.0f, b = 0.0f;
                for (i = j * l; i < (j + 1) * l; ++i) { a += q[(size_t)i * H * D + h * D + c]; b += k[(size_t)i * H * D + h * D + c]; }
                ql[j * D + c] = a / l; kl[j * D + c] = b / l;
            }
        naive_attn(ql, k + h * D, v + h * D, M, n, D, H * D, bv, D, s);
        for (i = 0; i < M; ++i) {
            float mx = -INFINITY, sum = 0.0f;
            for (j = 0; j < M; ++j) {
                float a = 0.0f;
                for (c = 0; c < D; ++c) a += ql[i * D + c] * kl[j * D + c];
                A[i * M + j] = a * sc; if (A[i * M + j] > mx) mx = A[i * M + j];
            }
            for (j = 0; j < M; ++j) { A[i * M + j] = expf(A[i * M + j] - mx); sum += A[i * M + j]; }
            for (j = 0; j < M; ++j) A[i * M + j] /= sum;
        }
        for (j = 0; j < M; ++j) { float cs = 0.0f; for (i = 0; i < M; ++i) cs += A[i * M + j]; if (cs > cmax) cmax = cs; }
        for (i = 0; i < M; ++i) for (j = 0; j < M; ++j) Z[i * M + j] = A[j * M + i] / cmax;
        for (it = 0; it < 6; ++it) {
            naive_mm(A, M, Z, M, AZ, M, M, M, M);
            for (i = 0; i < M * M; ++i) T[i] = -AZ[i];
            for (i = 0; i < M; ++i) T[i * M + i] += 7.0f;
            naive_mm(AZ, M, T, M, U, M, M, M, M);
            for (i = 0; i < M * M; ++i) U[i] = -U[i];
            for (i = 0; i < M; ++i) U[i * M + i] += 15.0f;
            naive_mm(AZ, M, U, M, T, M, M, M, M);
            for (i = 0; i < M * M; ++i) T[i] = -T[i];
            for (i = 0; i < M; ++i) T[i * M + i] += 13.0f;
            naive_mm(Z, M, T, M, U, M, M, M, M);
            for (i = 0; i < M * M; ++i) Z[i] = 0.25f * U[i];
        }
        naive_mm(Z, M, bv, D, w, D, M, M, D);
        naive_attn(q + h * D, kl, w, n, M, H * D, D, o + h * D, H * D, s);
    }
    free(ql); free(kl); free(A); free(Z); free(AZ); free(T); free(U); free(bv); free(w); free(s);
}

static int write_svg(const char *path, double pk) {
    const double W = 900, Hh = 560, L = 80, R = 640, T = 60, Bt = 490;
    const double xlo = 9.8, xhi = 16.2;
    double ylo = 1e30, yhi = 0;
    FILE *f = fopen(path, "w");
    int m, i;
    if (!f) return 0;
    for (m = 0; m < N_MECH; ++m)
        for (i = 0; i < n_lens; ++i) {
            if (pts[m][i].ms < ylo) ylo = pts[m][i].ms;
            if (pts[m][i].ms > yhi) yhi = pts[m][i].ms;
        }
    ylo = floor(log10(ylo)); yhi = ceil(log10(yhi));
    if (yhi <= ylo) yhi = ylo + 1;
#define SX(n) (L + (log2((double)(n)) - xlo) / (xhi - xlo) * (R - L))
#define SY(ms) (Bt - (log10(ms) - ylo) / (yhi - ylo) * (Bt - T))
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"13\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, Hh, W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"28\" font-size=\"16\">attn.h low-rank attention: forward time vs sequence length (B 1, H %d, d %d, fp32)</text>\n", L, H, D);
    bench_svg_machine(f, L, 42);
    fprintf(f, "<text x=\"%.0f\" y=\"55\" font-size=\"11\" fill=\"#555\">FMA peak %.0f GFLOP/s; hollow = extrapolated</text>\n", L, pk);
    for (i = (int)ylo; i <= (int)yhi; ++i) {
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, R, SY(pow(10, i)), SY(pow(10, i)));
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g ms</text>\n", L - 6, SY(pow(10, i)) + 4, pow(10, i));
    }
    for (i = 0; i < n_lens; ++i)
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%dk</text>\n", SX(pts[0][i].n), Bt + 20, pts[0][i].n / 1024);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">sequence length n (log scale)</text>\n", (L + R) / 2, Bt + 42);
    for (m = 0; m < N_MECH; ++m) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", mech_color[m]);
        for (i = 0; i < n_lens; ++i) fprintf(f, "%.1f,%.1f ", SX(pts[m][i].n), SY(pts[m][i].ms));
        fprintf(f, "\"/>\n");
        for (i = 0; i < n_lens; ++i)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" stroke=\"%s\"/>\n", SX(pts[m][i].n), SY(pts[m][i].ms),
                    pts[m][i].measured ? mech_color[m] : "white", mech_color[m]);
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"4\" fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n", R + 20,
                T + 20 + 22 * m, mech_color[m], R + 40, T + 26 + 22 * m,
                m == EXACT ? "exact (attn_forward)" : m == LIN ? "Linformer k=256" : "Nystromformer m=64");
    }
#undef SX
#undef SY
    fprintf(f, "</svg>\n");
    fclose(f);
    return 1;
}

/* ---- Linformer's backward beside linformer's autograd, one thread (issue 33 item 1) -------- */
static const char lfm_torch_probe[] = "import torch, linformer; print(torch.__version__)";
/* linformer 0.2.3's LinformerSelfAttention with its four nn.Linear layers replaced by
   nn.Identity (attn.h takes q, k, v already projected and returns the heads' outputs), E and F
   held fixed (attn_backward here computes dq, dk, dv): self-attention, so one x is q, k and v and
   its gradient sums the three, the same products. */
static const char lfm_torch_snippet[] =
    "import sys, time, torch\n"
    "from linformer import LinformerSelfAttention\n"
    "torch.manual_seed(0)\n"
    "for a in sys.argv[1:]:\n"
    "    S, H, D, K, t = map(int, a.split(\",\"))\n"
    "    torch.set_num_threads(t)\n"
    "    m = LinformerSelfAttention(dim=H * D, seq_len=S, k=K, heads=H, dim_head=D, one_kv_head=False, share_kv=False)\n"
    "    m.to_q = m.to_k = m.to_v = m.to_out = torch.nn.Identity()\n"
    "    m.proj_k.requires_grad_(False); m.proj_v.requires_grad_(False)\n"
    "    x = (torch.rand(1, S, H * D) * 2 - 1).requires_grad_()\n"
    "    g = torch.rand(1, S, H * D) * 2 - 1\n"
    "    for it in range(2):\n"
    "        x.grad = None\n"
    "        t0 = time.perf_counter()\n"
    "        o = m(x)\n"
    "        t1 = time.perf_counter()\n"
    "        o.backward(g)\n"
    "        t2 = time.perf_counter()\n"
    "    print(t1 - t0, flush=True)\n"
    "    print(t2 - t1, flush=True)\n";

/* S 4096, H 8, D 64, k 256 (E and F [k][n], shared across heads, not shared between k and v),
   1 thread; each round: attn.h's forward and backward, then one Python process times the same
   case (torch.set_num_threads(1), one warm-up); medians over the rounds. attn.h's forward keeps
   E K and F V in linformer.proj for its backward, as autograd keeps torch's (row `linformer`);
   each round also times the calls without proj (row `linformer-noproj`: the backward projects
   k, v again). */
static void run_linformer_peer(const char *outdir) {
    enum { PH = 8, PS = 4096, MAXR = 15 };
    const int rounds = ATTN__MAX(5, ATTN__MIN(env_int("BENCH_ROUNDS", 7), MAXR));
    const size_t n = (size_t)PS * PH * D;
    float *q = (float *)xalloc(n * 4), *k = (float *)xalloc(n * 4), *v = (float *)xalloc(n * 4), *o = (float *)xalloc(n * 4);
    float *dO = (float *)xalloc(n * 4), *g3 = (float *)xalloc(3 * n * 4), *lse = (float *)xalloc((size_t)PS * PH * 4);
    float *E = (float *)xalloc((size_t)2 * KP * PS * 4), *proj = (float *)xalloc((size_t)2 * KP * PH * D * 4);
    double ta[4][MAXR], tt[2][MAXR], med[6], lo, hi;
    char ver[128], args[64], last[256], path[512];
    attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, PS, PH, D), tk = attn_tensor_dense(k, ATTN_F32, 1, PS, PH, D);
    attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, PS, PH, D), to = attn_tensor_dense(o, ATTN_F32, 1, PS, PH, D);
    attn_tensor tdo = attn_tensor_dense(dO, ATTN_F32, 1, PS, PH, D), gq = attn_tensor_dense(g3, ATTN_F32, 1, PS, PH, D);
    attn_tensor gk = attn_tensor_dense(g3 + n, ATTN_F32, 1, PS, PH, D), gv = attn_tensor_dense(g3 + 2 * n, ATTN_F32, 1, PS, PH, D);
    attn_desc d, dn;
    int torch_on, r, j;
    FILE *f;
    fill_rand(q, n); fill_rand(k, n); fill_rand(v, n); fill_rand(dO, n); fill_rand(E, (size_t)2 * KP * PS);
    for (j = 0; j < 2 * KP * PS; ++j) E[j] *= 0.02f;
    memset(&d, 0, sizeof d);
    d.kind = ATTN_LINFORMER; d.linformer.e = E; d.linformer.f = E + (size_t)KP * PS; d.linformer.k = KP; d.linformer.n = PS;
    d.linformer.shared_heads = 1; d.n_threads = 1; d.linformer.proj = proj;
    dn = d; dn.linformer.proj = NULL;
    torch_on = torch_probe_ok(lfm_torch_probe, ver, sizeof ver);
    printf("== linformer-peer: ATTN_LINFORMER (k %d, E, F shared across heads), B 1, S %d, H %d, D %d, fp32, 1 thread, %d interleaved rounds\n",
           KP, PS, PH, D, rounds);
    if (torch_on) printf("  PyTorch %s (%s): autograd of linformer's LinformerSelfAttention, projections as identity\n", ver, g_python);
    else printf("  PyTorch column skipped: %s\n", g_torch_why);
    snprintf(args, sizeof args, " %d,%d,%d,%d,1", PS, PH, D, KP);
    if (attn_forward(&d, tq, tk, tv, to, lse) != ATTN_OK || attn_backward(&d, tq, tk, tv, to, tdo, lse, gq, gk, gv) != ATTN_OK)
        die("linformer-peer warm-up failed");
    for (r = 0; r < rounds; ++r) {
        double t0 = now_s();
        if (attn_forward(&d, tq, tk, tv, to, lse) != ATTN_OK) die("attn_forward failed");
        ta[0][r] = now_s() - t0;
        t0 = now_s();
        if (attn_backward(&d, tq, tk, tv, to, tdo, lse, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
        ta[1][r] = now_s() - t0;
        t0 = now_s();
        if (attn_forward(&dn, tq, tk, tv, to, lse) != ATTN_OK) die("attn_forward failed");
        ta[2][r] = now_s() - t0;
        t0 = now_s();
        if (attn_backward(&dn, tq, tk, tv, to, tdo, lse, gq, gk, gv) != ATTN_OK) die("attn_backward failed");
        ta[3][r] = now_s() - t0;
        if (torch_on) {
            double t[2];
            if (python_run(lfm_torch_snippet, args, t, 2, last, sizeof last) != 2) {
                printf("  PyTorch column dropped: %s\n", last[0] ? last : g_torch_why);
                torch_on = 0;
            } else {
                tt[0][r] = t[0]; tt[1][r] = t[1];
            }
        }
    }
    for (j = 0; j < 2; ++j) {
        med[j] = median_of(ta[j], rounds, &lo, &hi) * 1e3;
        med[2 + j] = torch_on ? median_of(tt[j], rounds, &lo, &hi) * 1e3 : NAN;
        med[4 + j] = median_of(ta[2 + j], rounds, &lo, &hi) * 1e3;
    }
    for (j = 0; j < 2; ++j) {   /* j 0: with proj (med 0, 1), 1: without (med 4, 5) */
        const double af = med[4 * j], ab = med[4 * j + 1];
        printf("  attn.h %-7s forward %8.2f ms, backward %8.2f ms (%.2fx its forward)", j ? "noproj" : "proj", af, ab, ab / af);
        if (torch_on)
            printf("; torch forward %8.2f ms, backward %8.2f ms: attn.h %.2fx / %.2fx", med[2], med[3], med[2] / af, med[3] / ab);
        printf("\n");
    }
    snprintf(path, sizeof path, "%s/results_linformer_peer.csv", outdir);
    if (!(f = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(f, "case,seq,heads,dim,k,threads,rounds,attn_fwd_ms,attn_bwd_ms,torch_fwd_ms,torch_bwd_ms,fwd_speedup,"
                        "bwd_speedup,attn_bwd_over_fwd,torch_version");
    bench_csv_machine(f);
    for (j = 0; j < 2; ++j) {
        const double af = med[4 * j], ab = med[4 * j + 1];
        if (j) bench_csv_machine(f);
        fprintf(f, "%s,%d,%d,%d,%d,1,%d,%.3f,%.3f,", j ? "linformer-noproj" : "linformer", PS, PH, D, KP, rounds, af, ab);
        if (torch_on)
            fprintf(f, "%.3f,%.3f,%.3f,%.3f,%.3f,%s\n", med[2], med[3], med[2] / af, med[3] / ab, ab / af, ver);
        else
            fprintf(f, ",,,,%.3f,\n", ab / af);
    }
    if (fclose(f) != 0) die("cannot write the CSV");
    printf("wrote %s\n", path);
    free(q); free(k); free(v); free(o); free(dO); free(g3); free(lse); free(E); free(proj);
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0) != 0, exact_max = env_int("BENCH_EXACT_MAX", quick ? 8192 : 32768);
    const int max_n = quick ? 16384 : 65536;
    const char *outdir = getenv("BENCH_OUTDIR");
    char cpu[256], path[512];
    int ncpu = online_cpus(), isa, i, m, n;
    machine mc;
    double expo[N_MECH], logc[N_MECH], t_start = now_s();
    float *q, *k, *v, *ox, *o, *E;
    FILE *f;
    if (!outdir || !*outdir) outdir = "bench";
    if (getenv("BENCH_ONLY") && !strcmp(getenv("BENCH_ONLY"), "linformer-peer")) { run_linformer_peer(outdir); return 0; }
    cpu_model(cpu, sizeof cpu);
    isa = best_fma_isa();
    printf("attn.h low-rank benchmark%s: %s, %d online CPUs, kernels %s\n", quick ? " (BENCH_QUICK)" : "", cpu, ncpu, attn_kernels());
    printf("machine (FMA loop: %s):\n", isa_desc[isa]);
    measure_machine(&mc, isa, ncpu, quick ? 0.05 : 0.2, (size_t)64 << 20);
    print_machine(&mc, ncpu, (size_t)64 << 20);
    printf("B 1, H %d, d %d, fp32, q k v ~ U(-1,1); Linformer k %d (E = F = segment-mean pooling, shared across heads); Nystrom m %d, 6 iterations\n",
           H, D, KP, M);
    q = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); k = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    v = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D); ox = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    o = (float *)xalloc(sizeof(float) * (size_t)max_n * H * D);
    E = (float *)xalloc(sizeof(float) * (size_t)KP * max_n);
    fill_rand(q, (size_t)max_n * H * D); fill_rand(k, (size_t)max_n * H * D); fill_rand(v, (size_t)max_n * H * D);
    printf("%7s %-10s %10s %10s %10s %9s %7s %10s\n", "n", "mechanism", "median ms", "min", "max", "GFLOP/s", "% peak", "err vs exact");
    for (n = 1024, n_lens = 0; n <= max_n; n *= 2, ++n_lens) {
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, n, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, n, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, n, H, D);
        attn_tensor tox = attn_tensor_dense(ox, ATTN_F32, 1, n, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, n, H, D);
        attn_desc d;
        for (i = 0; i < KP * n; ++i) E[i] = (i % n) / (n / KP) == i / n ? (float)KP / n : 0.0f;   /* pooling */
        for (m = 0; m < N_MECH; ++m) {
            point *p = &pts[m][n_lens];
            memset(&d, 0, sizeof d);
            p->n = n; p->err = NAN; p->measured = 1;
            if (m == EXACT && n > exact_max) { p->measured = 0; continue; }
            if (m == LIN) {
                d.kind = ATTN_LINFORMER; d.linformer.e = E; d.linformer.k = KP; d.linformer.n = n;
                d.linformer.shared_heads = 1; d.linformer.shared_kv = 1;
            } else if (m == NYS) {
                d.kind = ATTN_NYSTROM; d.nystrom.landmarks = M;
            }
            p->ms = 1e3 * time_call(&d, tq, tk, tv, m == EXACT ? tox : to, quick, &p->lo, &p->hi);
            p->lo *= 1e3; p->hi *= 1e3;
            if (m != EXACT && pts[EXACT][n_lens].measured) p->err = max_norm_err(ox, o, (size_t)n * H * D);
            p->gflops = flops_of(m, n) / (p->ms * 1e-3) * 1e-9;
            p->pct = 100.0 * p->gflops / mc.peak_all;
            printf("%7d %-10s %10.2f %10.2f %10.2f %9.1f %6.1f%% ", n, mech_name[m], p->ms, p->lo, p->hi, p->gflops, p->pct);
            if (p->err == p->err) printf("%10.3g\n", p->err); else printf("%10s\n", "-");
            fflush(stdout);
        }
    }
    for (m = 0; m < N_MECH; ++m) expo[m] = fit_exponent(m, &logc[m]);
    for (i = 0; i < n_lens; ++i)
        if (!pts[EXACT][i].measured) {   /* extrapolated from the fit */
            pts[EXACT][i].ms = exp(logc[EXACT] + expo[EXACT] * log((double)pts[EXACT][i].n));
            pts[EXACT][i].lo = pts[EXACT][i].hi = pts[EXACT][i].ms;
            pts[EXACT][i].gflops = pts[EXACT][i].pct = NAN;
        }
    printf("fitted scaling exponent (t ~ n^p over measured lengths): exact %.2f, linformer %.2f, nystrom %.2f\n", expo[EXACT], expo[LIN], expo[NYS]);
    for (m = LIN; m <= NYS; ++m) {
        int c = -1;
        for (i = 0; i < n_lens; ++i) if (pts[m][i].ms < pts[EXACT][i].ms) { c = i; break; }
        if (c < 0) printf("crossover %s: slower than exact at every length up to %d\n", mech_name[m], pts[m][n_lens - 1].n);
        else if (c == 0) printf("crossover %s: faster than exact already at n = %d (%.1fx)\n", mech_name[m], pts[m][0].n, pts[EXACT][0].ms / pts[m][0].ms);
        else {   /* log-linear interpolation between the two lengths */
            const double a0 = log(pts[EXACT][c - 1].ms / pts[m][c - 1].ms), a1 = log(pts[EXACT][c].ms / pts[m][c].ms);
            printf("crossover %s: about n = %.0f (between %d and %d)\n", mech_name[m],
                   pts[m][c - 1].n * pow(2.0, a0 / (a0 - a1)), pts[m][c - 1].n, pts[m][c].n);
        }
        printf("speed-up over exact at n = %d: %s %.1fx%s\n", pts[m][n_lens - 1].n, mech_name[m],
               pts[EXACT][n_lens - 1].ms / pts[m][n_lens - 1].ms, pts[EXACT][n_lens - 1].measured ? "" : " (exact extrapolated)");
    }
    {   /* naive C loops at 1k, 1 thread: ratio and output check */
        const int nn = 1024;
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, nn, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, nn, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, nn, H, D), to = attn_tensor_dense(o, ATTN_F32, 1, nn, H, D);
        float *E2 = (float *)xalloc(sizeof(float) * KP * nn), *F2 = (float *)xalloc(sizeof(float) * KP * nn);
        attn_desc d;
        double t0, tn, tl, e1;
        fill_rand(E2, (size_t)KP * nn); fill_rand(F2, (size_t)KP * nn);   /* random E, F: checks both are read */
        for (i = 0; i < KP * nn; ++i) { E2[i] *= 0.01f; F2[i] *= 0.01f; }
        t0 = now_s(); naive_linformer(q, k, v, E2, F2, nn, ox); tn = now_s() - t0;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_LINFORMER; d.linformer.e = E2; d.linformer.f = F2; d.linformer.k = KP; d.linformer.n = nn; d.linformer.shared_heads = 1;
        d.n_threads = 1;
        tl = time_call(&d, tq, tk, tv, to, 1, &t0, &t0);
        e1 = max_norm_err(ox, o, (size_t)nn * H * D);
        printf("naive C loops, n 1024, 1 thread: linformer %.1f ms vs attn.h 1 thread %.2f ms (%.1fx), outputs agree to %.2g\n", tn * 1e3, tl * 1e3, tn / tl, e1);
        if (e1 > 1e-4) die("linformer disagrees with the naive loops");
        t0 = now_s(); naive_nystrom(q, k, v, nn, ox); tn = now_s() - t0;
        memset(&d, 0, sizeof d);
        d.kind = ATTN_NYSTROM; d.nystrom.landmarks = M; d.n_threads = 1;
        tl = time_call(&d, tq, tk, tv, to, 1, &t0, &t0);
        e1 = max_norm_err(ox, o, (size_t)nn * H * D);
        printf("naive C loops, n 1024, 1 thread: nystrom %.1f ms vs attn.h 1 thread %.2f ms (%.1fx), outputs agree to %.2g\n", tn * 1e3, tl * 1e3, tn / tl, e1);
        if (e1 > 1e-3) die("nystrom disagrees with the naive loops");
        free(E2); free(F2);
    }
    snprintf(path, sizeof path, "%s/results_lowrank.csv", outdir);
    f = fopen(path, "w");
    if (!f) die("cannot write results_lowrank.csv");
    bench_csv_header(f, "mechanism,batch,heads,dim,n,param,median_ms,min_ms,max_ms,gflops,pct_peak,peak_gflops,err_vs_exact,measured,exponent");
    for (m = 0; m < N_MECH; ++m)
        for (i = 0; i < n_lens; ++i) {
            bench_csv_machine(f);
            fprintf(f, "%s,1,%d,%d,%d,%s,%.4f,%.4f,%.4f,%.2f,%.2f,%.1f,%.4g,%d,%.3f\n", mech_name[m], H, D, pts[m][i].n,
                    m == LIN ? "k=256" : m == NYS ? "m=64" : "-", pts[m][i].ms, pts[m][i].lo, pts[m][i].hi, pts[m][i].gflops,
                    pts[m][i].pct, mc.peak_all, pts[m][i].err, pts[m][i].measured, expo[m]);
        }
    if (fclose(f) != 0) die("cannot write results_lowrank.csv");
    snprintf(path, sizeof path, "%s/chart_lowrank.svg", outdir);
    if (!write_svg(path, mc.peak_all)) die("cannot write chart_lowrank.svg");
    printf("wrote %s/results_lowrank.csv and %s/chart_lowrank.svg (%.0f s)\n", outdir, outdir, now_s() - t_start);
    free(q); free(k); free(v); free(ox); free(o); free(E);
    run_linformer_peer(outdir);
    return 0;
}
