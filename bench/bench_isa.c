/* bench/bench_isa.c - the same work on each instruction set, as a share of that instruction
   set's own FMA peak (issue 15: AVX2 machines should get AVX-512's share of their peak).

   `make bench` builds it twice and runs both: build/bench_isa (the best kernels this CPU has)
   and build/bench_isa_avx2 (-DATTN_NO_AVX512: the AVX2 + FMA kernels on the same machine).
   Run:    ./build/bench_isa                 about a minute on a 2-core machine (with the PyTorch
                                             column, a Python start per repetition round more)
           BENCH_QUICK=1 ./build/bench_isa   fewer repetitions
   Knobs:  BENCH_OUTDIR=<dir>  where results_isa.csv goes (default: bench); rows are appended
           per kernel set, so both builds land in one file (delete it for a fresh table; a
           file with other columns, from an older bench_isa, is written afresh)
           BENCH_PYTHON=<python>  the Python whose torch times the PyTorch column (default
                               python3; empty: no PyTorch column). Without torch the column is
                               skipped with one line saying why, and the rest runs as before.
   Exit:   0 ok; 2 a call returned an error; 3 out of memory or the CSV could not be written.

   What it does
     1. Measures the fp32 FMA peak of the vector width the kernels use (16 zmm accumulators for
        AVX-512, 12 ymm for AVX2) on 1 thread and on every online CPU.
     2. Times, with medians of interleaved repetitions: exact-attention prefill (fp32, H 8,
        S 2048, D 64 and 128, q/k/v in [B,H,S,D] and in [B,S,H,D], K/V stored f32, f16, bf16;
        causal at D 128), the backward (S 1024, D 128) and attn_sgemm (512^3, 1024^3, 2048^3), on
        1 thread and on all threads. FLOPs: prefill 4 S^2 D H (causal: the S (S + 1) / 2 visible
        pairs), backward 10 S^2 D H (recompute QK^T, dP, dV, dK, dQ), GEMM 2n^3.
     3. When a Python with torch is found (BENCH_PYTHON), times PyTorch's CPU
        torch.nn.functional.scaled_dot_product_attention on each f32 prefill case (same shape,
        layout, dtype, scale, thread count through torch.set_num_threads) in the same run: after
        each round of attn.h's repetitions, one Python process (the snippet below, sent through
        popen) runs every such case once after a warm-up call and prints one time per line, so
        the two libraries alternate round by round and get the same number of repetitions.
        GFLOP/s from the same FLOP count and the median; printed beside attn.h with the ratio
        attn.h / torch. A measurement, never a dependency: no torch, no column.
     4. Prints GFLOP/s and % of the peak on the same number of threads; appends the rows to
        <outdir>/results_isa.csv with the machine (bench_csv_machine: CPU and kernel set) first
        in each row and torch_gflops last (empty where there is no PyTorch figure). */
#define _POSIX_C_SOURCE 200809L
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define H 8
#define MAX_CASES 32

typedef struct icase {
    char name[48];
    int kind;            /* 0 prefill, 1 backward, 2 sgemm */
    int S, D, bshd, threads, causal;
    attn_dtype kv;
    int torch;           /* f32 prefill: PyTorch times the same case */
    double flops, t[64], tt[64];   /* attn.h's and PyTorch's time per repetition */
} icase;

static icase cases[MAX_CASES];
static int n_cases;

static void add(const char *name, int kind, int S, int D, int bshd, attn_dtype kv, int threads) {
    icase *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    c->kind = kind; c->S = S; c->D = D; c->bshd = bshd; c->kv = kv; c->threads = threads;
    c->torch = kind == 0 && kv == ATTN_F32;
    c->flops = kind == 0 ? 4.0 * S * (double)S * D * H : kind == 1 ? 10.0 * S * (double)S * D * H
                                                                  : 2.0 * S * (double)S * S;
}
/* causal prefill: the work of the S (S + 1) / 2 visible pairs */
static void add_causal(const char *name, int S, int D, int threads) {
    add(name, 0, S, D, 0, ATTN_F32, threads);
    cases[n_cases - 1].causal = 1;
    cases[n_cases - 1].flops = 4.0 * (S * (double)(S + 1) / 2.0) * D * H;
}

static attn_tensor view(void *p, attn_dtype dt, int S, int D, int bshd) {
    return bshd ? attn_tensor_dense(p, dt, 1, S, H, D) : attn_tensor_bhsd(p, dt, 1, H, S, D);
}

/* One timed call of case c; buffers hold at least S*H*Dmax floats each. */
static double run(const icase *c, float **f, uint16_t **h, uint16_t **b, float *lse) {
    attn_desc d;
    double t0;
    attn_status s;
    memset(&d, 0, sizeof d);
    d.n_threads = c->threads;
    d.causal = c->causal;
    t0 = now_s();
    if (c->kind == 2) {
        s = attn_sgemm(0, 0, c->S, c->S, c->S, 1.0f, f[0], c->S, f[1], c->S, 0.0f, f[2], c->S, c->threads);
    } else {
        const void *kp = c->kv == ATTN_F32 ? (void *)f[1] : c->kv == ATTN_F16 ? (void *)h[0] : (void *)b[0];
        const void *vp = c->kv == ATTN_F32 ? (void *)f[2] : c->kv == ATTN_F16 ? (void *)h[1] : (void *)b[1];
        attn_tensor q = view(f[0], ATTN_F32, c->S, c->D, c->bshd), k = view((void *)kp, c->kv, c->S, c->D, c->bshd);
        attn_tensor v = view((void *)vp, c->kv, c->S, c->D, c->bshd), o = view(f[3], ATTN_F32, c->S, c->D, c->bshd);
        if (c->kind == 0) {
            s = attn_forward(&d, q, k, v, o, NULL);
        } else {
            attn_tensor dout = view(f[4], ATTN_F32, c->S, c->D, c->bshd), dq = view(f[5], ATTN_F32, c->S, c->D, c->bshd);
            attn_tensor dk = view(f[6], ATTN_F32, c->S, c->D, c->bshd), dv = view(f[7], ATTN_F32, c->S, c->D, c->bshd);
            s = attn_forward(&d, q, k, v, o, lse);
            t0 = now_s();
            if (s == ATTN_OK) s = attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv);
        }
    }
    if (s != ATTN_OK) {
        fprintf(stderr, "bench_isa: %s: %s\n", c->name, attn_status_str(s));
        exit(2);
    }
    return now_s() - t0;
}

/* ------------------------------------------------------------------------------------------
   PyTorch beside attn.h (issue 15: faster than PyTorch's CPU scaled_dot_product_attention on
   the same machine in the same run). The Python runs as its own process through popen, one
   process per round, and attn.h's runs wait for it to exit, so the two never share the cores.
   Each argument is one case, "S,H,D,bshd,threads,causal"; the snippet prints one time in seconds per
   line, in argument order. [B,S,H,D] is the same strided view attn.h reads (a [1,S,H,D] tensor
   transposed to [1,H,S,D]); fp32, no mask, scale 1/sqrt(D): the function attn.h computes. The
   snippet holds no single quote (it travels inside one on the shell's command line).
   ------------------------------------------------------------------------------------------ */
static const char torch_probe[] =
    "import torch, torch.nn.functional as F; F.scaled_dot_product_attention; print(torch.__version__)";
static const char torch_snippet[] =
    "import sys, time, torch\n"
    "import torch.nn.functional as F\n"
    "torch.manual_seed(0)\n"
    "for a in sys.argv[1:]:\n"
    "    S, H, D, bshd, t, c = map(int, a.split(\",\"))\n"
    "    torch.set_num_threads(t)\n"
    "    x = [torch.rand((1, S, H, D) if bshd else (1, H, S, D)) * 2 - 1 for _ in range(3)]\n"
    "    if bshd:\n"
    "        x = [y.transpose(1, 2) for y in x]\n"
    "    with torch.inference_mode():\n"
    "        F.scaled_dot_product_attention(*x, is_causal=bool(c))\n"
    "        t0 = time.perf_counter()\n"
    "        F.scaled_dot_product_attention(*x, is_causal=bool(c))\n"
    "        t1 = time.perf_counter()\n"
    "    print(t1 - t0, flush=True)\n";

/* One round: every PyTorch case once, times into c->tt[r]. 0 when the run failed. */
static int torch_round(int r) {
    char args[1024], last[256];
    double t[MAX_CASES];
    int i, n = 0, len = 0, got;
    for (i = 0; i < n_cases; ++i)
        if (cases[i].torch) {
            len += snprintf(args + len, sizeof args - (size_t)len, " %d,%d,%d,%d,%d,%d", cases[i].S, H, cases[i].D, cases[i].bshd,
                            cases[i].threads, cases[i].causal);
            if ((size_t)len >= sizeof args) { snprintf(g_torch_why, sizeof g_torch_why, "too many cases"); return 0; }
            ++n;
        }
    got = python_run(torch_snippet, args, t, MAX_CASES, last, sizeof last);
    if (got < 0) return 0;
    if (got != n) {
        snprintf(g_torch_why, sizeof g_torch_why, "%d times for %d cases%s%s", got, n, last[0] ? "; last line: " : "", last);
        return 0;
    }
    for (i = 0, n = 0; i < n_cases; ++i)
        if (cases[i].torch) {
            if (!(t[n] > 0.0)) { snprintf(g_torch_why, sizeof g_torch_why, "a time of %g s", t[n]); return 0; }
            cases[i].tt[r] = t[n++];
        }
    return 1;
}

int main(void) {
    const int quick = env_int("BENCH_QUICK", 0), reps = quick ? 3 : 7;
    const int ncpu = online_cpus();
    const int isa = best_fma_isa();
    const size_t n = (size_t)2048 * 2048;   /* floats per buffer: S 2048 x H 8 x D 128, or a 2048^2 GEMM operand */
    const char *outdir = getenv("BENCH_OUTDIR");
    char cpu[256], path[512];
    float *f[8], *lse;
    uint16_t *h[2], *b[2];
    double peak[2], sp;
    int att, i, r, j, torch_on, same;
    char torch_ver[128];
    FILE *csv;
    cpu_model(cpu, sizeof cpu);
    printf("bench_isa: %s, %d CPUs used, kernels %s, FMA loop %s\n", cpu, ncpu, attn_kernels(), isa_desc[isa]);
    peak[0] = fma_peak_steady(isa, 1, 0.2, &sp, &att);
    peak[1] = ncpu > 1 ? fma_peak_steady(isa, ncpu, 0.2, &sp, &att) : peak[0];
    printf("  FMA peak: %.1f GFLOP/s on 1 thread, %.1f on %d\n", peak[0], peak[1], ncpu);
    for (i = 0; i < 8; ++i) { f[i] = (float *)xalloc(n * sizeof(float)); fill_rand(f[i], n); }
    for (i = 0; i < 2; ++i) {
        h[i] = (uint16_t *)xalloc(n * 2); b[i] = (uint16_t *)xalloc(n * 2);
        convert_from_f32(h[i], ATTN_F16, f[1 + i], n); convert_from_f32(b[i], ATTN_BF16, f[1 + i], n);
    }
    lse = (float *)xalloc(sizeof(float) * 2048 * H);
    for (j = 0; j < (ncpu > 1 ? 2 : 1); ++j) {
        const int t = j ? ncpu : 1;
        add("prefill D128 [B,H,S,D] f32", 0, 2048, 128, 0, ATTN_F32, t);
        add("prefill D128 [B,S,H,D] f32", 0, 2048, 128, 1, ATTN_F32, t);
        add("prefill D64 [B,H,S,D] f32", 0, 2048, 64, 0, ATTN_F32, t);
        add("prefill D64 [B,S,H,D] f32", 0, 2048, 64, 1, ATTN_F32, t);
        add("prefill D128 [B,H,S,D] K/V f16", 0, 2048, 128, 0, ATTN_F16, t);
        add("prefill D128 [B,H,S,D] K/V bf16", 0, 2048, 128, 0, ATTN_BF16, t);
        add("backward D128 S1024 [B,S,H,D]", 1, 1024, 128, 1, ATTN_F32, t);
        add_causal("prefill D128 [B,H,S,D] f32 causal", 2048, 128, t);
        add("sgemm 512^3", 2, 512, 0, 0, ATTN_F32, t);
        add("sgemm 1024^3", 2, 1024, 0, 0, ATTN_F32, t);
        add("sgemm 2048^3", 2, 2048, 0, 0, ATTN_F32, t);
    }
    torch_on = torch_probe_ok(torch_probe, torch_ver, sizeof torch_ver);
    if (torch_on)
        printf("  PyTorch column: torch %s (%s; BENCH_PYTHON), F.scaled_dot_product_attention on the f32 prefill cases,\n"
               "  one Python process after each round of attn.h's repetitions\n", torch_ver, g_python);
    else
        printf("  PyTorch column skipped: %s\n", g_torch_why);
    fflush(stdout);
    for (i = 0; i < n_cases; ++i) (void)run(&cases[i], f, h, b, lse);   /* warm-up */
    for (r = 0; r < reps; ++r) {                                          /* interleaved */
        for (i = 0; i < n_cases; ++i) cases[i].t[r] = run(&cases[i], f, h, b, lse);
        if (torch_on && !torch_round(r)) {
            torch_on = 0;
            printf("  PyTorch column skipped: round %d of %d failed: %s\n", r + 1, reps, g_torch_why);
        }
    }
    if (!outdir) outdir = "bench";
    snprintf(path, sizeof path, "%s/results_isa.csv", outdir);
    {   /* append below the same header; a file from an older bench_isa (other columns) starts afresh */
        static const char cols[] = "case,threads,median_ms,min_ms,max_ms,gflops,peak_gflops,pct_peak,torch_gflops";
        char want[256], first[256] = "";
        FILE *probe = fopen(path, "r");
        snprintf(want, sizeof want, "cpu,kernels,%s\n", cols);
        if (probe) {
            if (!fgets(first, sizeof first, probe)) first[0] = 0;
            fclose(probe);
        }
        same = probe && strcmp(first, want) == 0;
        if (probe && !same) printf("  %s has other columns (an older bench_isa's): written afresh\n", path);
        csv = fopen(path, same ? "a" : "w");
        if (!csv) die("cannot write results_isa.csv");
        if (!same) bench_csv_header(csv, cols);
    }
    printf("\n  %-34s %7s %10s %10s %8s", "case", "threads", "median ms", "GFLOP/s", "% peak");
    if (torch_on) printf(" %14s %13s", "torch GFLOP/s", "attn.h/torch");
    printf("\n");
    for (i = 0; i < n_cases; ++i) {
        const icase *c = &cases[i];
        double mn, mx, med = median_of(c->t, reps, &mn, &mx);
        const double g = c->flops / med * 1e-9, pk = peak[c->threads > 1 ? 1 : 0];
        const double tg = torch_on && c->torch ? c->flops / median_of(c->tt, reps, NULL, NULL) * 1e-9 : 0.0;
        printf("  %-34s %7d %10.2f %10.1f %7.0f%%", c->name, c->threads, med * 1e3, g, 100.0 * g / pk);
        if (tg > 0) printf(" %14.1f %12.2fx", tg, g / tg);
        else if (torch_on) printf(" %14s %13s", "-", "-");
        printf("\n");
        bench_csv_machine(csv);
        fprintf(csv, "\"%s\",%d,%.3f,%.3f,%.3f,%.1f,%.1f,%.1f,", c->name, c->threads, med * 1e3, mn * 1e3, mx * 1e3, g, pk,
                100.0 * g / pk);
        if (tg > 0) fprintf(csv, "%.1f", tg);
        fprintf(csv, "\n");
    }
    if (fclose(csv) != 0) die("cannot write results_isa.csv");
    printf("  rows %s %s\n", same ? "appended to" : "written to", path);
    for (i = 0; i < 8; ++i) free(f[i]);
    for (i = 0; i < 2; ++i) { free(h[i]); free(b[i]); }
    free(lse);
    return 0;
}
