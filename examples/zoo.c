/* examples/zoo.c - `make run`: a tour of every mechanism attn.h has, on the same inputs.

   Inputs look like a model's rather than white noise: token features follow a slowly drifting
   random walk (neighbouring tokens are alike), each head's q and v are fixed random projections
   of them and k nearly the same projection as q, so q_i . k_j follows how alike tokens i and j
   are: attention is peaked and mostly local, as in trained models.
   For each mechanism and length it prints the time of one call (median of 3, all cores), the
   scratch memory it asks for (its workspace query), the error against exact softmax attention
   on the same q, k, v (max |out - exact| / max |exact|, and the mean over all elements), its
   cost class and a one-line verdict; then writes zoo.svg (time vs length, error vs length).
   The state-space and RWKV scans take other inputs (they are not attention), so they show
   time only. Options: `zoo quick` runs the two short lengths only; `zoo check` (make test) runs
   the shortest length, then checks each mechanism against its bound (the table at the end of
   main) and exits 1 if one is out of it. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime, also under -std=c99 without threads */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define H 4
#define D 64
#define MAX_LENS 3
static const int lens_all[MAX_LENS] = { 512, 2048, 8192 };

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static unsigned long long rng = 0x9E3779B97F4A7C15ull;
static double gauss(void) {             /* Box-Muller on a 64-bit LCG: fine for a demo */
    double u1, u2;
    rng = rng * 6364136223846793005ull + 1442695040888963407ull; u1 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    rng = rng * 6364136223846793005ull + 1442695040888963407ull; u2 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* q, k, v [L, H, D] from a drifting random walk of token features through fixed projections */
static void make_inputs(int L, float *q, float *k, float *v) {
    static float W[3][H][D][D];
    static int have_w = 0;
    float x[D];
    int t, h, i, j, m;
    if (!have_w) {
        for (m = 0; m < 3; ++m)
            for (h = 0; h < H; ++h)
                for (i = 0; i < D; ++i)
                    for (j = 0; j < D; ++j)       /* W_k = W_q + noise: q_i . k_j tracks x_i . x_j */
                        W[m][h][i][j] = m == 1 ? W[0][h][i][j] + (float)(0.3 * gauss() / sqrt((double)D))
                                               : (float)(gauss() / sqrt((double)D));
        have_w = 1;
    }
    for (i = 0; i < D; ++i) x[i] = (float)gauss();
    for (t = 0; t < L; ++t) {
        for (i = 0; i < D; ++i) x[i] = 0.95f * x[i] + 0.31f * (float)gauss();
        for (m = 0; m < 3; ++m) {
            float *dst = (m == 0 ? q : m == 1 ? k : v) + (size_t)t * H * D;
            for (h = 0; h < H; ++h)
                for (j = 0; j < D; ++j) {
                    float s = 0.0f;
                    for (i = 0; i < D; ++i) s += x[i] * W[m][h][i][j];
                    dst[h * D + j] = s;
                }
        }
    }
}

typedef struct {
    const char *name, *family, *cost;
    int is_scan;
    double ms[MAX_LENS], err_max[MAX_LENS], err_mean[MAX_LENS], mem_mib[MAX_LENS];
    int ok[MAX_LENS];
} mech;

enum { M_EXACT, M_WINDOW, M_LONGFORMER, M_BIGBIRD, M_LSH, M_LINEAR, M_LINFORMER, M_NYSTROM, M_MAMBA, M_RWKV, N_MECH };
static mech zoo[N_MECH] = {
    { "exact softmax", "exact", "O(n^2 d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "sliding window 2x128", "exact", "O(n w d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "Longformer", "sparse", "O(n w d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "BigBird", "sparse", "O(n b (5+r) d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "Reformer LSH", "sparse", "O(n c h d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "linear (elu+1)", "linear", "O(n d^2)", 0, {0}, {0}, {0}, {0}, {0} },
    { "Linformer k=256", "low-rank", "O(n k d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "Nystromformer m=64", "low-rank", "O(n m d)", 0, {0}, {0}, {0}, {0}, {0} },
    { "Mamba scan N=16", "state space", "O(n D N)", 1, {0}, {0}, {0}, {0}, {0} },
    { "RWKV-4 WKV", "linear (RNN)", "O(n D)", 1, {0}, {0}, {0}, {0}, {0} },
};

static int g_dil[H] = { 1, 1, 2, 4 };

/* The committed results of `make zoo-train` (examples/train.c --zoo, examples/zoo_train.csv):
   each tour mechanism's row there (its configuration is train.c's, e.g. a window of 16 tokens,
   not the tour's 2x128), mean quality over seeds per task. The tasks, not random inputs, say
   what a mechanism keeps: accuracy on recall, copying, induction and ListOps, validation loss
   on the sonnets. */
#define N_TASKS 5
static const char *const task_name[N_TASKS] = { "mqar", "selcopy", "induction", "listops", "sonnets" };
static const char *const train_name[N_MECH] = { "standard", "window", "longformer", "bigbird", "lsh", "linear",
                                                "linformer", "nystrom", "mamba", "rwkv" };
static double task_q[N_MECH][N_TASKS];
static int task_n[N_MECH][N_TASKS];

/* reads the csv (mechanism,task,seed,status,...,quality at column 10); returns the rows used */
static int load_task_results(const char *path) {
    FILE *f = fopen(path, "r");
    char line[1024];
    int used = 0;
    if (!f) return 0;
    while (fgets(line, sizeof line, f)) {
        char *field[11], *p = line;
        int n = 0, m, t;
        while (n < 11 && p) { field[n++] = p; if ((p = strchr(p, ',')) != NULL) *p++ = '\0'; }
        if (n < 11 || strcmp(field[3], "trained") != 0) continue;
        for (m = 0; m < N_MECH && strcmp(field[0], train_name[m]) != 0; ++m) {}
        for (t = 0; t < N_TASKS && strcmp(field[1], task_name[t]) != 0; ++t) {}
        if (m == N_MECH || t == N_TASKS) continue;
        task_q[m][t] += atof(field[9]);
        task_n[m][t] += 1;
        ++used;
    }
    fclose(f);
    return used;
}

/* mean quality of mechanism m on task t, or -1 when the csv has none */
static double task_mean(int m, int t) { return task_n[m][t] ? task_q[m][t] / task_n[m][t] : -1; }

/* The desc of mechanism m at length L (E, F: Linformer's projections). */
static attn_desc desc_of(int m, int L, const float *E) {
    attn_desc d;
    memset(&d, 0, sizeof d);
    switch (m) {
    case M_EXACT: d.kind = ATTN_SOFTMAX; break;
    case M_WINDOW: d.kind = ATTN_SOFTMAX; d.window_left = d.window_right = 128; break;
    case M_LONGFORMER:
        d.kind = ATTN_LONGFORMER; d.window_left = d.window_right = 128; d.global_tokens = 16;
        d.longformer.dilations = g_dil;
        break;
    case M_BIGBIRD: d.kind = ATTN_BIGBIRD; d.bigbird.block = 64; d.bigbird.random_blocks = 3; d.bigbird.seed = 1; break;
    case M_LSH: d.kind = ATTN_LSH; d.lsh.bucket_size = 64; d.lsh.n_hashes = 2; d.lsh.seed = 1; break;
    case M_LINEAR: d.kind = ATTN_LINEAR; break;
    case M_LINFORMER:
        d.kind = ATTN_LINFORMER; d.linformer.e = E; d.linformer.shared_heads = 1; d.linformer.shared_kv = 1;
        d.linformer.k = 256; d.linformer.n = L;
        break;
    case M_NYSTROM: d.kind = ATTN_NYSTROM; d.nystrom.landmarks = 64; break;
    }
    return d;
}

static void errors(const float *o, const float *r, size_t n, double *emax, double *emean) {
    double mx = 0, sum_e = 0, sum_r = 0, m = 0;
    size_t i;
    for (i = 0; i < n; ++i) {
        const double e = fabs((double)o[i] - r[i]);
        if (fabs(r[i]) > mx) mx = fabs(r[i]);
        if (e > m || e != e) m = e;
        sum_e += e; sum_r += fabs(r[i]);
    }
    *emax = m / mx; *emean = sum_e / sum_r;
}

static double time_it(int m, attn_desc *d, attn_tensor tq, attn_tensor tk, attn_tensor tv, attn_tensor to, int *ok) {
    double t[3], best;
    int i;
    attn_status s = attn_forward(d, tq, tk, tv, to, NULL);
    if (s != ATTN_OK) {
        fprintf(stderr, "\n%s: %s\n", zoo[m].name, attn_status_str(s));
        *ok = 0;
        return 0.0;
    }
    for (i = 0; i < 3; ++i) {
        double t0 = now_s();
        attn_forward(d, tq, tk, tv, to, NULL);
        t[i] = now_s() - t0;
    }
    best = t[0] < t[1] ? (t[1] < t[2] ? t[1] : (t[0] < t[2] ? t[2] : t[0])) : (t[0] < t[2] ? t[0] : (t[1] < t[2] ? t[2] : t[1]));
    *ok = 1;
    return best * 1e3;                  /* the median of three */
}

/* the scans on inputs of the same size: D_ch = H * D channels, L tokens */
static double time_scan(int m, int L, float *buf, int *ok) {   /* buf: 3 L H D floats */
    const int C = H * D;
    double t[3], best;
    int i;
    attn_status s = ATTN_OK;
    for (i = -1; i < 3 && s == ATTN_OK; ++i) {
        double t0 = now_s();
        if (m == M_MAMBA) {
            static float A[H * D * 16], Bc[H * D * 16], Cc[H * D * 16];
            attn_ssm_desc sd;
            attn_ssm_tensor u, dl, B, Cm, z, y;
            int j;
            for (j = 0; j < C * 16; ++j) { A[j] = -(float)(1 + j % 16); Bc[j] = 0.1f; Cc[j] = 0.1f; }
            memset(&sd, 0, sizeof sd);
            sd.batch = 1; sd.dim = C; sd.len = L; sd.d_state = 16; sd.bc_const = ATTN_SSM_BC_CONST; sd.delta_softplus = 1;
            u = attn_ssm_tensor_dense(buf, ATTN_F32, C, L);
            dl = attn_ssm_tensor_dense(buf + (size_t)C * L, ATTN_F32, C, L);
            y = attn_ssm_tensor_dense(buf + 2 * (size_t)C * L, ATTN_F32, C, L);
            B = attn_ssm_tensor_dense(Bc, ATTN_F32, C, 16); Cm = attn_ssm_tensor_dense(Cc, ATTN_F32, C, 16);
            memset(&z, 0, sizeof z);
            s = attn_ssm_selective_scan(&sd, u, dl, A, B, Cm, NULL, z, NULL, NULL, y, NULL);
        } else {
            static float decay[H * D], first[H * D];
            attn_rwkv_desc rd;
            int j;
            for (j = 0; j < C; ++j) { decay[j] = -1.0f + 0.01f * (float)j / C; first[j] = 0.5f; }
            memset(&rd, 0, sizeof rd);
            s = attn_rwkv4_forward(&rd, decay, first, attn_tensor_dense(buf, ATTN_F32, 1, L, 1, C),
                                   attn_tensor_dense(buf + (size_t)C * L, ATTN_F32, 1, L, 1, C),
                                   attn_tensor_dense(buf + 2 * (size_t)C * L, ATTN_F32, 1, L, 1, C), NULL, NULL);
        }
        if (i >= 0) t[i] = now_s() - t0;
    }
    if (s != ATTN_OK) { fprintf(stderr, "\n%s: %s\n", zoo[m].name, attn_status_str(s)); *ok = 0; return 0.0; }
    best = t[0] < t[1] ? (t[1] < t[2] ? t[1] : (t[0] < t[2] ? t[2] : t[0])) : (t[0] < t[2] ? t[0] : (t[1] < t[2] ? t[2] : t[1]));
    *ok = 1;
    return best * 1e3;
}

static void write_svg(const char *path, int n_lens, const int *lens) {
    static const char *const col[N_MECH] = { "#000000", "#7f7f7f", "#1f77b4", "#17becf", "#9467bd", "#ff7f0e",
                                             "#2ca02c", "#98df8a", "#d62728", "#e377c2" };
    const double W = 960, Hh = 420, pw = 340, ph = 300, x0[2] = { 70, 540 }, y0 = 50;
    const double lx0 = log10(400.0), lx1 = log10(10000.0);
    FILE *f = fopen(path, "w");
    int p, m, i, e;
    if (!f) { fprintf(stderr, "cannot write %s\n", path); return; }
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"70\" y=\"20\" font-size=\"14\">attn.h zoo: B 1, H %d, D %d, fp32, kernels %s</text>\n", H, D,
            attn_kernels());
    for (p = 0; p < 2; ++p) {           /* panel 0: ms, 0.01 .. 10^4; panel 1: error, 1e-7 .. 10 */
        const double ly0 = p == 0 ? -2.0 : -7.0, ly1 = p == 0 ? 4.0 : 1.0;
        fprintf(f, "<text x=\"%.0f\" y=\"40\">%s</text>\n", x0[p], p == 0 ? "time per call (ms), log-log" :
                "max error vs exact attention, log-log");
        for (e = (int)ly0; e <= (int)ly1; ++e) {
            const double y = y0 + ph * (ly1 - e) / (ly1 - ly0);
            fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%.0f\" y=\"%.1f\" "
                       "text-anchor=\"end\">1e%d</text>\n", x0[p], y, x0[p] + pw, y, x0[p] - 3, y + 4, e);
        }
        for (i = 0; i < n_lens; ++i) {
            const double x = x0[p] + pw * (log10((double)lens[i]) - lx0) / (lx1 - lx0);
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%d</text>\n", x, y0 + ph + 14, lens[i]);
        }
        for (m = 0; m < N_MECH; ++m) {
            int first = 1;
            if (p == 1 && (zoo[m].is_scan || m == M_EXACT || m == M_LSH)) continue;
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col[m]);
            for (i = 0; i < n_lens; ++i) {
                const double val = p == 0 ? zoo[m].ms[i] : zoo[m].err_max[i];
                double ly;
                if (!zoo[m].ok[i] || !(val > 0)) continue;
                ly = log10(val);
                if (ly < ly0) ly = ly0;
                fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x0[p] + pw * (log10((double)lens[i]) - lx0) / (lx1 - lx0),
                        y0 + ph * (ly1 - ly) / (ly1 - ly0));
                first = 0;
            }
            fprintf(f, "\"/>\n");
        }
    }
    for (m = 0; m < N_MECH; ++m)
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", 70 + 180.0 * (m % 5), Hh - 40 + 14.0 * (m / 5),
                col[m], zoo[m].name);
    fprintf(f, "</svg>\n");
    fclose(f);
}

/* ---- zoo check: each mechanism against what it must equal ------------------------------- */

/* naive double-precision masked softmax attention of q [L,H,D] over k, v: key j is visible from
   query i when |i - j| <= win * dil[h] and (i - j) % dil[h] == 0 (win 0: every key), or either
   is one of the first n_global tokens (attn.h's mask semantics, non-causal). Max |out - ref| /
   max |ref|. */
static double naive_err(int L, const float *q, const float *k, const float *v, const float *out, int win,
                        const int *dil, int n_global) {
    double *w = (double *)malloc((size_t)L * sizeof(double)), err = 0, mx = 0;
    int i, j, h, x;
    if (!w) return 1e30;
    for (h = 0; h < H; ++h)
        for (i = 0; i < L; ++i) {
            double m = -1e300, sum = 0;
            for (j = 0; j < L; ++j) {
                const int t = i > j ? i - j : j - i, dl = dil ? dil[h] : 1;
                w[j] = -1e300;
                if (win && !(t <= win * dl && t % dl == 0) && j >= n_global && i >= n_global) continue;
                w[j] = 0;
                for (x = 0; x < D; ++x) w[j] += (double)q[((size_t)i * H + h) * D + x] * k[((size_t)j * H + h) * D + x];
                w[j] /= sqrt((double)D);
                if (w[j] > m) m = w[j];
            }
            for (j = 0; j < L; ++j) sum += (w[j] = w[j] > -1e299 ? exp(w[j] - m) : 0.0);
            for (x = 0; x < D; ++x) {
                double o = 0;
                for (j = 0; j < L; ++j) if (w[j] != 0.0) o += w[j] / sum * v[((size_t)j * H + h) * D + x];
                if (fabs(o - out[((size_t)i * H + h) * D + x]) > err) err = fabs(o - out[((size_t)i * H + h) * D + x]);
                if (fabs(o) > mx) mx = fabs(o);
            }
        }
    free(w);
    return err / mx;
}

/* Each mechanism's bound at L (the shortest length): the exact-pattern ones against the naive
   reference above; Linformer and Nystromformer in their degenerate settings, where the papers'
   maths gives exact attention (E = F = identity; one landmark per token); BigBird (block 64,
   3 random blocks) within 1e-2 mean error of exact attention at 512 tokens, where its pattern
   covers most blocks; the others (another mechanism, not an approximation of softmax: linear,
   LSH, the scans) must run and give finite output. Returns the number out of bound. */
static int run_checks(int L, const float *q, const float *k, const float *v, const float *ref, float *out) {
    attn_tensor tq = attn_tensor_dense((void *)q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense((void *)k, ATTN_F32, 1, L, H, D);
    attn_tensor tv = attn_tensor_dense((void *)v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(out, ATTN_F32, 1, L, H, D);
    float *E = (float *)calloc((size_t)L * L, 4);
    int m, bad = 0, i;
    printf("\nchecks at L = %d: each mechanism against its bound\n", L);
    if (!E) return 1;
    for (i = 0; i < L; ++i) E[(size_t)i * L + i] = 1.0f;
    for (m = 0; m < N_MECH; ++m) {
        attn_desc d = desc_of(m, L, E);
        const char *what = "";
        double err = 0, bound = 0, em = 0;
        attn_status st = ATTN_OK;
        size_t n = (size_t)L * H * D, j;
        int finite = 1;
        if (zoo[m].is_scan) { printf("  %-22s %-52s %s\n", zoo[m].name, "a scan, not attention: timed only", zoo[m].ok[0] ? "ran" : "FAILED"); bad += !zoo[m].ok[0]; continue; }
        if (m == M_LINFORMER) d.linformer.k = L;            /* E = F = I: exact attention */
        if (m == M_NYSTROM) { d.nystrom.landmarks = L; d.nystrom.iterations = 30; }   /* one landmark per token */
        st = attn_forward(&d, m == M_LSH ? tk : tq, tk, tv, to, NULL);
        if (st != ATTN_OK) { printf("  %-22s %s: FAILED\n", zoo[m].name, attn_status_str(st)); ++bad; continue; }
        for (j = 0; j < n; ++j) if (!(out[j] == out[j]) || fabs(out[j]) > 1e30) finite = 0;
        switch (m) {
        case M_EXACT: what = "vs naive double loop"; bound = 1e-5; err = naive_err(L, q, k, v, out, 0, NULL, 0); break;
        case M_WINDOW: what = "vs naive loop, same window"; bound = 1e-5; err = naive_err(L, q, k, v, out, 128, NULL, 0); break;
        case M_LONGFORMER: what = "vs naive loop, same window/dilation/global"; bound = 1e-5;
            err = naive_err(L, q, k, v, out, 128, g_dil, 16); break;
        case M_LINFORMER: what = "E = F = I (k = n) vs exact"; bound = 1e-5; errors(out, ref, n, &err, &em); break;
        case M_NYSTROM: what = "m = n: the documented exact shortcut"; bound = 1e-3; errors(out, ref, n, &err, &em); break;
        case M_BIGBIRD: what = "mean error vs exact"; bound = 1e-2; errors(out, ref, n, &em, &err); break;
        default: what = "not an approximation: finite output"; bound = -1; break;
        }
        if (bound < 0) { printf("  %-22s %-52s %s\n", zoo[m].name, what, finite ? "ok" : "FAIL"); bad += !finite; continue; }
        printf("  %-22s %-42s %7.1e <= %.0e %s\n", zoo[m].name, what, err, bound, err <= bound && finite ? "ok" : "FAIL");
        bad += !(err <= bound && finite);
    }
    free(E);
    printf("%d mechanism(s) out of bound\n", bad);
    return bad;
}

int main(int argc, char **argv) {
    const int check = argc > 1 && strcmp(argv[1], "check") == 0;
    const int quick = argc > 1 && strcmp(argv[1], "quick") == 0, n_lens = check ? 1 : quick ? 2 : MAX_LENS;
    const int Lmax = lens_all[n_lens - 1];
    const size_t nmax = (size_t)Lmax * H * D;
    float *q = (float *)malloc(nmax * 4), *k = (float *)malloc(nmax * 4), *v = (float *)malloc(nmax * 4);
    float *ref = (float *)malloc(nmax * 4), *out = (float *)malloc(nmax * 4);
    float *E = (float *)malloc((size_t)256 * Lmax * 4), *scan = (float *)calloc(3 * nmax, 4);   /* u, delta, y */
    int li, m, i, have_tasks;
    if (!q || !k || !v || !ref || !out || !E || !scan) { fprintf(stderr, "out of memory\n"); return 1; }
    for (i = 0; i < 256 * Lmax; ++i) E[i] = (float)(gauss() / sqrt(256.0));   /* JL projection */
    printf("attn.h zoo tour: B 1, H %d heads, D %d, fp32, non-causal, %s kernels, all cores\n", H, D, attn_kernels());
    for (li = 0; li < n_lens; ++li) {
        const int L = lens_all[li];
        attn_tensor tq = attn_tensor_dense(q, ATTN_F32, 1, L, H, D), tk = attn_tensor_dense(k, ATTN_F32, 1, L, H, D);
        attn_tensor tv = attn_tensor_dense(v, ATTN_F32, 1, L, H, D), to = attn_tensor_dense(out, ATTN_F32, 1, L, H, D);
        make_inputs(L, q, k, v);
        for (m = 0; m < N_MECH; ++m) {
            mech *z = &zoo[m];
            fprintf(stderr, "\r  L %5d: %-22s", L, z->name);
            if (z->is_scan) {
                z->ms[li] = time_scan(m, L, scan, &z->ok[li]);
                continue;
            } else {
                attn_desc d = desc_of(m, L, E);
                size_t bytes = 0;
                attn_tensor qq = m == M_LSH ? tk : tq;          /* Reformer shares QK */
                if (attn_workspace_size(&d, qq, tk, tv, &bytes) == ATTN_OK) z->mem_mib[li] = bytes / 1048576.0;
                z->ms[li] = time_it(m, &d, qq, tk, tv, to, &z->ok[li]);
                if (m == M_EXACT) memcpy(ref, out, (size_t)L * H * D * 4);
                else if (z->ok[li]) errors(out, ref, (size_t)L * H * D, &z->err_max[li], &z->err_mean[li]);
            }
        }
    }
    fprintf(stderr, "\r%60s\r", "");
    printf("\n%-22s %-12s %-15s", "mechanism", "family", "cost");
    for (li = 0; li < n_lens; ++li) printf("  L=%-5d ms  err max/mean ", lens_all[li]);
    printf(" scratch@%d\n", Lmax);
    for (m = 0; m < N_MECH; ++m) {
        const mech *z = &zoo[m];
        printf("%-22s %-12s %-15s", z->name, z->family, z->cost);
        for (li = 0; li < n_lens; ++li) {
            if (!z->ok[li]) { printf("  %-26s", "failed"); continue; }
            if (m == M_EXACT) printf("  %9.2f  %-15s", z->ms[li], "reference");
            else if (z->is_scan || m == M_LSH) printf("  %9.2f  %-15s", z->ms[li], "n/a");
            else printf("  %9.2f  %6.0e/%-7.0e", z->ms[li], z->err_max[li], z->err_mean[li]);
        }
        printf(" %6.1f MiB\n", z->mem_mib[n_lens - 1]);
    }
    have_tasks = load_task_results("examples/zoo_train.csv") > 0;
    printf("\nverdicts at L = %d (time relative to exact softmax on the same inputs):\n", Lmax);
    for (m = 1; m < N_MECH; ++m) {
        const mech *z = &zoo[m], *x = &zoo[M_EXACT];
        const int l = n_lens - 1;
        if (!z->ok[l]) continue;
        printf("  %-22s %6.1fx faster; ", z->name, x->ms[l] / z->ms[l]);
        if (task_mean(m, 0) >= 0 && task_mean(M_EXACT, 0) > 0)
            printf("trained on recall (mqar) it keeps %.0f%% of exact's accuracy; ", 100 * task_mean(m, 0) / task_mean(M_EXACT, 0));
        if (z->is_scan) printf("a different layer (not attention): no error to compare\n");
        else if (m == M_LSH) printf("shared-QK hashing, self masked: not comparable to exact attention on separate q, k\n");
        else if (m == M_WINDOW || m == M_LONGFORMER) printf("exact inside its pattern; mean error %.0e from what it skips\n", z->err_mean[l]);
        else if (z->err_mean[l] < 0.05) printf("close to exact (mean error %.0e)\n", z->err_mean[l]);
        else printf("another mechanism, not an approximation of softmax here (mean error %.0e)\n", z->err_mean[l]);
    }
    if (have_tasks) {
        printf("\non tasks (examples/zoo_train.csv, committed by make zoo-train: 2-layer models trained from scratch "
               "with each mechanism as the mixer, mean over seeds; accuracy, sonnets: validation loss; %% = of exact's):\n");
        printf("%-22s", "mechanism");
        for (i = 0; i < N_TASKS; ++i) printf(" %14s", task_name[i]);
        printf("   time vs exact at L = %d\n", Lmax);
        for (m = 0; m < N_MECH; ++m) {
            printf("%-22s", zoo[m].name);
            for (i = 0; i < N_TASKS; ++i) {
                const double q = task_mean(m, i), q0 = task_mean(M_EXACT, i);
                if (q < 0) printf(" %14s", "-");
                else if (i == N_TASKS - 1 || m == M_EXACT || q0 <= 0) printf(" %14.3f", q);
                else printf("  %5.3f (%3.0f%%)", q, 100 * q / q0);
            }
            if (zoo[m].ok[n_lens - 1] && zoo[M_EXACT].ok[n_lens - 1]) printf("   %.1fx faster", zoo[M_EXACT].ms[n_lens - 1] / zoo[m].ms[n_lens - 1]);
            printf("\n");
        }
    } else printf("\n(no examples/zoo_train.csv: run the tour from the repository root to see the trained results)\n");
    if (check) {
        const int bad = run_checks(lens_all[0], q, k, v, ref, out);
        free(q); free(k); free(v); free(ref); free(out); free(E); free(scan);
        return bad ? 1 : 0;
    }
    write_svg("zoo.svg", n_lens, lens_all);
    printf("wrote zoo.svg\n");
    free(q); free(k); free(v); free(ref); free(out); free(E); free(scan);
    return 0;
}
