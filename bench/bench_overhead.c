/* bench/bench_overhead.c - what a small call pays beyond its arithmetic (issue #33, items 3-4).
   Each case is timed at several sizes that differ only in the work (decode: the cache length L;
   GEMM: the inner dimension k), warm, medians of many calls, and a least-squares line
   t(size) = overhead + slope * size is fitted through the medians: the intercept is what every
   call pays before its first multiply-add (threads, allocation, planning, first touch). Each
   case runs three ways, interleaved call by call: one thread; two threads with nothing plugged
   in (the library's default); two threads on a caller's attn_pool (the floor a persistent team
   gives). Small whole calls (exact softmax and linear attention at L 512, H 4, D 64, the sizes
   `make run` reports) are timed the same three ways.
   BENCH_REPS (default 201) calls per point. Prints a table and writes bench/results_overhead.csv. */
#define ATTN_IMPLEMENTATION
#include "../attn.h"
#include "bench_util.h"

#define MAX_REPS 401
enum { MODE_ONE, MODE_DEFAULT, MODE_PER_CALL, MODE_POOL, N_MODES };
static const char *mode_name[N_MODES] = { "1 thread", "2 thr default", "2 thr per-call", "2 thr attn_pool" };

/* The library's behaviour before the shared pool (and with ATTN_NO_SHARED_POOL): a parallel hook
   that starts the call's threads and joins them, so both run in one process, interleaved. */
typedef struct per_call_job { attn_task_fn task; void *ctx; int n_tasks, next, thread; pthread_mutex_t lock; } per_call_job;
typedef struct per_call_worker { per_call_job *job; int thread; } per_call_worker;
static void per_call_run(per_call_job *j, int thread) {
    for (;;) {
        int i;
        pthread_mutex_lock(&j->lock); i = j->next++; pthread_mutex_unlock(&j->lock);
        if (i >= j->n_tasks) return;
        j->task(j->ctx, i, thread);
    }
}
static void *per_call_main(void *arg) { per_call_worker *w = (per_call_worker *)arg; per_call_run(w->job, w->thread); return NULL; }
static void per_call_parallel(void *user, int n_tasks, int n_threads, attn_task_fn task, void *ctx) {
    per_call_job job;
    per_call_worker w[BENCH_MAX_THREADS];
    pthread_t th[BENCH_MAX_THREADS];
    int i, started = 1;
    (void)user;
    if (n_threads > n_tasks) n_threads = n_tasks;
    job.task = task; job.ctx = ctx; job.n_tasks = n_tasks; job.next = 0;
    pthread_mutex_init(&job.lock, NULL);
    for (i = 1; i < n_threads; ++i) {
        w[i].job = &job; w[i].thread = i;
        if (pthread_create(&th[i], NULL, per_call_main, &w[i]) != 0) break;
        ++started;
    }
    per_call_run(&job, 0);
    for (i = 1; i < started; ++i) pthread_join(th[i], NULL);
    pthread_mutex_destroy(&job.lock);
}

typedef struct bench_case {
    const char *name;
    void (*setup)(struct bench_case *c, int size);
    void (*call)(struct bench_case *c, const attn_desc *d);
    int sizes[8], n_sizes, n_fit;  /* the line is fitted through the first n_fit sizes */
    int gemm_n;                   /* GEMM cases: n (m = n) */
    const char *size_name;
    void *mem[8];
    int size;
} bench_case;

/* ---- decode: 1 token, Hq = Hkv = 8, D 64, f32, over L cached tokens ---- */
#define DEC_H 8
#define DEC_D 64
static void decode_setup(bench_case *c, int L) {
    size_t n = (size_t)L * DEC_H * DEC_D;
    int i;
    for (i = 0; i < 4; ++i) { free(c->mem[i]); c->mem[i] = NULL; }
    c->mem[0] = xalloc(n * sizeof(float)); c->mem[1] = xalloc(n * sizeof(float));
    c->mem[2] = xalloc(DEC_H * DEC_D * sizeof(float)); c->mem[3] = xalloc(DEC_H * DEC_D * sizeof(float));
    fill_rand((float *)c->mem[0], n); fill_rand((float *)c->mem[1], n); fill_rand((float *)c->mem[2], DEC_H * DEC_D);
    c->size = L;
}
static void decode_call(bench_case *c, const attn_desc *d) {
    attn_kv_cache kv;
    int lens[1];
    memset(&kv, 0, sizeof kv);
    lens[0] = c->size;
    kv.batch = 1; kv.lens = lens;
    kv.k = attn_tensor_dense(c->mem[0], ATTN_F32, 1, c->size, DEC_H, DEC_D);
    kv.v = attn_tensor_dense(c->mem[1], ATTN_F32, 1, c->size, DEC_H, DEC_D);
    if (attn_decode(d, attn_tensor_dense(c->mem[2], ATTN_F32, 1, 1, DEC_H, DEC_D), &kv,
                    attn_tensor_dense(c->mem[3], ATTN_F32, 1, 1, DEC_H, DEC_D), NULL) != ATTN_OK)
        die("attn_decode failed");
}

/* ---- GEMM: n x n x k (64: one thread's work; 256: two threads from k 256) ---- */
static int g_gemm_n;
static void gemm_setup(bench_case *c, int k) {
    const size_t n = (size_t)g_gemm_n;
    int i;
    for (i = 0; i < 3; ++i) { free(c->mem[i]); c->mem[i] = NULL; }
    c->mem[0] = xalloc(n * k * sizeof(float)); c->mem[1] = xalloc((size_t)k * n * sizeof(float));
    c->mem[2] = xalloc(n * n * sizeof(float));
    fill_rand((float *)c->mem[0], n * k); fill_rand((float *)c->mem[1], n * k);
    c->size = k;
}
static void gemm_call(bench_case *c, const attn_desc *d) {
    /* attn_sgemm has no desc: n_threads only (the per-call and attn_pool modes do not apply) */
    if (attn_sgemm(0, 0, g_gemm_n, g_gemm_n, c->size, 1.0f, (const float *)c->mem[0], c->size, (const float *)c->mem[1],
                   g_gemm_n, 0.0f, (float *)c->mem[2], g_gemm_n, d->n_threads) != ATTN_OK)
        die("attn_sgemm failed");
}

/* ---- whole small calls: L 512, H 4, D 64 prefill, exact softmax (causal) and linear ---- */
#define SMALL_L 512
#define SMALL_H 4
#define SMALL_D 64
static void small_setup(bench_case *c, int unused) {
    size_t n = (size_t)SMALL_L * SMALL_H * SMALL_D;
    int i;
    (void)unused;
    if (c->mem[0]) return;
    for (i = 0; i < 4; ++i) { c->mem[i] = xalloc(n * sizeof(float)); fill_rand((float *)c->mem[i], n); }
    c->size = SMALL_L;
}
static void small_call_kind(bench_case *c, const attn_desc *d0, attn_kind kind) {
    attn_desc d = *d0;
    attn_tensor t[4];
    int i;
    for (i = 0; i < 4; ++i) t[i] = attn_tensor_dense(c->mem[i], ATTN_F32, 1, SMALL_L, SMALL_H, SMALL_D);
    d.kind = kind; d.causal = 1;
    if (attn_forward(&d, t[0], t[1], t[2], t[3], NULL) != ATTN_OK) die("attn_forward failed");
}
static void small_softmax_call(bench_case *c, const attn_desc *d) { small_call_kind(c, d, ATTN_SOFTMAX); }
static void small_linear_call(bench_case *c, const attn_desc *d) { small_call_kind(c, d, ATTN_LINEAR); }

static attn_pool *g_pool;

/* median time of each (size, mode), calls interleaved mode by mode */
static void time_case(bench_case *c, int reps, double med[8][N_MODES]) {
    static double t[N_MODES][MAX_REPS];
    int s, r, m;
    for (s = 0; s < c->n_sizes; ++s) {
        attn_desc d[N_MODES];
        c->setup(c, c->sizes[s]);
        for (m = 0; m < N_MODES; ++m) {
            memset(&d[m], 0, sizeof d[m]);
            d[m].n_threads = m == MODE_ONE ? 1 : 2;
            if (m == MODE_POOL) { d[m].parallel = attn_pool_parallel; d[m].parallel_user = g_pool; }
            if (m == MODE_PER_CALL) d[m].parallel = per_call_parallel;
        }
        for (m = 0; m < N_MODES; ++m) { c->call(c, &d[m]); c->call(c, &d[m]); }   /* warm */
        for (r = 0; r < reps; ++r)
            for (m = 0; m < N_MODES; ++m) {
                double t0 = now_s();
                c->call(c, &d[m]);
                t[m][r] = now_s() - t0;
            }
        for (m = 0; m < N_MODES; ++m) {
            qsort(t[m], (size_t)reps, sizeof(double), cmp_double);
            med[s][m] = t[m][reps / 2];
        }
    }
}

/* least squares t = a + b x */
static void fit_line(const int *x, const double *y, int n, double *a, double *b) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int i;
    for (i = 0; i < n; ++i) { sx += x[i]; sy += y[i]; sxx += (double)x[i] * x[i]; sxy += (double)x[i] * y[i]; }
    *b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    *a = (sy - *b * sx) / n;
}

int main(void) {
    enum { N_CASES = 5 };
    bench_case cases[N_CASES];
    int reps = env_int("BENCH_REPS", 201), ci, s, m;
    FILE *csv = fopen("bench/results_overhead.csv", "w");
    if (reps > MAX_REPS) reps = MAX_REPS;
    if (reps < 3) reps = 3;
    g_pool = attn_pool_create(2, 0);
    if (!g_pool) die("attn_pool_create failed");
    memset(cases, 0, sizeof cases);
    cases[0].name = "attn_decode, 1 token, Hq = Hkv = 8, D 64, f32 (line through L <= 256: in cache)";
    cases[0].setup = decode_setup; cases[0].call = decode_call; cases[0].size_name = "L";
    { static const int Ls[] = { 32, 64, 128, 256, 512, 2048 }; memcpy(cases[0].sizes, Ls, sizeof Ls); cases[0].n_sizes = 6; cases[0].n_fit = 4; }
    cases[1].name = "attn_sgemm 64 x 64 x k (one thread's work)"; cases[1].gemm_n = 64;
    cases[1].setup = gemm_setup; cases[1].call = gemm_call; cases[1].size_name = "k";
    { static const int ks[] = { 32, 64, 128, 256 }; memcpy(cases[1].sizes, ks, sizeof ks); cases[1].n_sizes = 4; cases[1].n_fit = 4; }
    cases[2] = cases[1];
    cases[2].name = "attn_sgemm 256 x 256 x k (two threads from k 256)"; cases[2].gemm_n = 256;
    { static const int ks[] = { 256, 512, 1024 }; memcpy(cases[2].sizes, ks, sizeof ks); cases[2].n_sizes = 3; cases[2].n_fit = 3; }
    cases[3].name = "attn_forward softmax, causal, L 512, H 4, D 64"; cases[3].setup = small_setup;
    cases[3].call = small_softmax_call; cases[3].size_name = "L"; cases[3].sizes[0] = SMALL_L; cases[3].n_sizes = 1;
    cases[4] = cases[3];
    cases[4].name = "attn_forward linear (elu+1), causal, L 512, H 4, D 64"; cases[4].call = small_linear_call;

    printf("CPU: %s, kernels %s, %d calls per point (medians, us)\n", bench_cpu(), attn_kernels(), reps);
    if (csv) bench_csv_header(csv, "case,size,mode,median_us,intercept_us,slope_us_per_unit");
    for (ci = 0; ci < N_CASES; ++ci) {
        bench_case *c = &cases[ci];
        double med[8][N_MODES];
        g_gemm_n = c->gemm_n;
        time_case(c, reps, med);
        printf("\n%s\n", c->name);
        for (m = 0; m < N_MODES; ++m) {
            double a = 0.0, b = 0.0, y[8];
            if (c->gemm_n && (m == MODE_POOL || m == MODE_PER_CALL)) continue;
            for (s = 0; s < c->n_sizes; ++s) y[s] = med[s][m] * 1e6;
            if (c->n_fit > 1) fit_line(c->sizes, y, c->n_fit, &a, &b);
            printf("  %-16s", mode_name[m]);
            for (s = 0; s < c->n_sizes; ++s) printf(" %s %d: %8.2f", c->size_name, c->sizes[s], y[s]);
            if (c->n_fit > 1) printf("  | per call %6.2f + %.4f per %s", a, b, c->size_name);
            printf("\n");
            if (csv)
                for (s = 0; s < c->n_sizes; ++s) {
                    bench_csv_machine(csv);
                    fprintf(csv, "\"%s\",%d,%s,%.3f,%.3f,%.5f\n", c->name, c->sizes[s], mode_name[m], y[s], a, b);
                }
        }
        for (s = 0; s < 4; ++s) { free(c->mem[s]); c->mem[s] = NULL; }
        if (ci == 3) cases[4].mem[0] = NULL;    /* cases[4] copied cases[3]'s (then NULL) pointers */
    }
    if (csv) fclose(csv);
    attn_pool_destroy(g_pool);
    return 0;
}
