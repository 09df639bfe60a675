/* bench/bench_util.h - what every bench program shares: timing and medians, the machine's name
   (bench_cpu; the cpu,kernels columns that lead every results CSV row and the machine line of
   every chart), a deterministic RNG, f16/bf16 conversion, a thread team, and the machine's
   measured fp32 FMA peak and read bandwidth (the references for "% of peak" and "% of
   bandwidth"). Include it after attn.h in a bench program's single translation unit;
   everything is static. */
#ifndef ATTN_BENCH_UTIL_H
#define ATTN_BENCH_UTIL_H
#if defined(__GNUC__)   /* each bench program uses a different subset of these helpers */
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <stdint.h>
#include <pthread.h>
#include <unistd.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__)) || defined(__F16C__)
#include <immintrin.h>
#endif

#define BENCH_MAX_THREADS 256
#define MIB (1024.0 * 1024.0)

/* ------------------------------------------------------------------------------------------
   small utilities
   ------------------------------------------------------------------------------------------ */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *msg) {
    fprintf(stderr, "bench: %s\n", msg);
    exit(3);
}

static void *xalloc(size_t bytes) {
    void *p = NULL;
    size_t align = bytes >= ((size_t)64 << 20) ? ((size_t)2 << 20) : 64; /* 2 MiB: huge pages */
    if (posix_memalign(&p, align, bytes ? bytes : 64) != 0 || !p) {
        fprintf(stderr, "bench: out of memory allocating %.1f MiB\n", (double)bytes / MIB);
        exit(3);
    }
    return p;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : (x > y ? 1 : 0);
}

/* median of n values (sorts a copy); also min and max */
static double median_of(const double *v, int n, double *mn, double *mx) {
    double tmp[64], m;
    int i;
    if (n > 64) n = 64;
    for (i = 0; i < n; ++i) tmp[i] = v[i];
    qsort(tmp, (size_t)n, sizeof(double), cmp_double);
    m = (n % 2) ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
    if (mn) *mn = tmp[0];
    if (mx) *mx = tmp[n - 1];
    return m;
}

/* Decoding against the bandwidth beside it: the median over n calls of (call i's GB/s / the
   GB/s of the flush read just before it), in %. Pairing each call with its own flush cancels
   the drift of a shared machine's memory bandwidth, which a ratio of two medians does not. */
static double median_pct_of_flush(double bytes, const double *t, const double *flush_gbs, int n) {
    double r[64];
    int i;
    if (n > 64) n = 64;
    for (i = 0; i < n; ++i) r[i] = 100.0 * bytes / t[i] * 1e-9 / flush_gbs[i];
    return median_of(r, n, NULL, NULL);
}

static int env_int(const char *name, int dflt) {
    const char *s = getenv(name);
    return (s && *s) ? atoi(s) : dflt;
}

static int online_cpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > BENCH_MAX_THREADS ? BENCH_MAX_THREADS : (int)n);
}

/* largest cache of cpu0 from sysfs ("32768K"), or 32 MiB when unknown */
static size_t llc_bytes(void) {
    size_t best = 0;
    int i;
    for (i = 0; i < 16; ++i) {
        char path[128], buf[64];
        FILE *f;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *end;
            double v = strtod(buf, &end);
            size_t b = (size_t)v;
            if (*end == 'K') b = (size_t)(v * 1024.0);
            else if (*end == 'M') b = (size_t)(v * MIB);
            if (b > best) best = b;
        }
        fclose(f);
    }
    return best ? best : ((size_t)32 << 20);
}

/* The machine, named the same way by every bench (its banner, every CSV row, every chart):
   /proc/cpuinfo's "model name" plus what tells one part from another under that name. Cloud
   hosts often report just "AMD EPYC", which covers Zen 1 to Zen 5, so x86 adds "cpu family",
   "model" and "stepping" ("AMD EPYC (family 25 model 17 stepping 1)": family 25 model 17 is
   Zen 4, family 26 Zen 5); ARM, which has no model name, gives "CPU implementer", "CPU part",
   "CPU variant" and "CPU revision". The characters a quoted CSV field or SVG text would need
   escaped (" & < >) are replaced, so the string goes into both as it is. Read once. */
static int bench_cpuinfo_field(const char *line, const char *key, char *dst, size_t n) {
    size_t kl = strlen(key);
    const char *p = line + kl, *e;
    if (dst[0] || strncmp(line, key, kl) != 0) return 0;   /* the first processor's value */
    while (*p == ' ' || *p == '\t') p++;
    if (*p != ':') return 0;                                /* "model" must not match "model name" */
    p++;
    while (*p == ' ' || *p == '\t') p++;
    e = p + strlen(p);
    while (e > p && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t')) --e;
    snprintf(dst, n, "%.*s", (int)(e - p), p);
    return 1;
}
static const char *bench_cpu(void) {
    static char out[320];
    char name[128] = "", fam[32] = "", model[32] = "", step[32] = "", impl[32] = "", part[32] = "", var[32] = "",
         rev[32] = "", hw[96] = "", line[512];
    FILE *f;
    char *c;
    if (out[0]) return out;
    if ((f = fopen("/proc/cpuinfo", "r")) != NULL) {
        while (fgets(line, sizeof line, f)) {
            bench_cpuinfo_field(line, "model name", name, sizeof name);
            bench_cpuinfo_field(line, "cpu family", fam, sizeof fam);
            bench_cpuinfo_field(line, "model", model, sizeof model);
            bench_cpuinfo_field(line, "stepping", step, sizeof step);
            bench_cpuinfo_field(line, "CPU implementer", impl, sizeof impl);
            bench_cpuinfo_field(line, "CPU part", part, sizeof part);
            bench_cpuinfo_field(line, "CPU variant", var, sizeof var);
            bench_cpuinfo_field(line, "CPU revision", rev, sizeof rev);
            bench_cpuinfo_field(line, "Hardware", hw, sizeof hw);
        }
        fclose(f);
    }
    if (!name[0]) snprintf(name, sizeof name, "%s", hw[0] ? hw : (impl[0] ? "ARM CPU" : "unknown CPU"));
    if (fam[0] && model[0])
        snprintf(out, sizeof out, "%s (family %s model %s%s%s)", name, fam, model, step[0] ? " stepping " : "", step);
    else if (impl[0] && part[0])
        snprintf(out, sizeof out, "%s (implementer %s part %s variant %s revision %s)", name, impl, part,
                 var[0] ? var : "?", rev[0] ? rev : "?");
    else
        snprintf(out, sizeof out, "%s", name);
    for (c = out; *c; ++c) {
        if (*c == '"') *c = '\'';
        else if (*c == '&') *c = '+';
        else if (*c == '<') *c = '(';
        else if (*c == '>') *c = ')';
        else if ((unsigned char)*c < 32) *c = ' ';
    }
    return out;
}
static void cpu_model(char *out, size_t n) { snprintf(out, n, "%s", bench_cpu()); }

/* Every results CSV begins each row with the machine: cpu (bench_cpu(), quoted) and kernels
   (attn_kernels(): the instruction set the library's kernels use in this build, e.g. avx2 for
   an ATTN_NO_AVX512 build). bench_csv_header writes the header line ("cpu,kernels," + the
   program's own columns), bench_csv_machine the two leading fields of a row. */
static void bench_csv_header(FILE *f, const char *columns) { fprintf(f, "cpu,kernels,%s\n", columns); }
static void bench_csv_machine(FILE *f) { fprintf(f, "\"%s\",%s,", bench_cpu(), attn_kernels()); }

/* Every chart names the machine the same way: one line of SVG text at (x, y). */
static void bench_svg_machine(FILE *f, double x, double y) {
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#555\">machine: %s; kernels %s</text>\n", x, y,
            bench_cpu(), attn_kernels());
}

/* xorshift64*: uniform floats in [-1, 1) */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    uint64_t x = rng_state;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    rng_state = x;
    x *= 0x2545F4914F6CDD1Dull;
    return (float)(x >> 40) * (1.0f / 8388608.0f) - 1.0f;
}
static void fill_rand(float *p, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) p[i] = frand();
}

/* fp16 / bf16 storage (round to nearest even), independent of attn.h's internals */
static uint16_t f32_to_f16(float ff) {
    const uint32_t f32infty = 255u << 23, f16max = (127u + 16u) << 23;
    const uint32_t denorm_magic_u = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t f, sign;
    uint16_t o;
    memcpy(&f, &ff, 4);
    sign = f & 0x80000000u;
    f ^= sign;
    if (f >= f16max) {
        o = (uint16_t)((f > f32infty) ? 0x7e00 : 0x7c00);
    } else if (f < (113u << 23)) {
        float fv, dm;
        memcpy(&fv, &f, 4);
        memcpy(&dm, &denorm_magic_u, 4);
        fv += dm;
        memcpy(&f, &fv, 4);
        o = (uint16_t)(f - denorm_magic_u);
    } else {
        uint32_t mant_odd = (f >> 13) & 1u;
        f += ((uint32_t)(15 - 127) << 23) + 0xfffu;
        f += mant_odd;
        o = (uint16_t)(f >> 13);
    }
    return (uint16_t)(o | (sign >> 16));
}
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    float f;
    if (e == 0) {
        f = (float)m * (1.0f / 16777216.0f);
        return sign ? -f : f;
    }
    x = sign | (e == 31 ? (0x7f800000u | (m << 13)) : (((e + 112u) << 23) | (m << 13)));
    memcpy(&f, &x, 4);
    return f;
}
static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static float bf16_to_f32(uint16_t h) {
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static size_t dtype_size(attn_dtype dt) { return dt == ATTN_F32 ? 4 : 2; }
static const char *dtype_name(attn_dtype dt) {
    return dt == ATTN_F32 ? "f32" : (dt == ATTN_F16 ? "f16" : "bf16");
}
static float ld(const void *p, attn_dtype dt, size_t i) {
    if (dt == ATTN_F32) return ((const float *)p)[i];
    if (dt == ATTN_F16) return f16_to_f32(((const uint16_t *)p)[i]);
    return bf16_to_f32(((const uint16_t *)p)[i]);
}
/* dst (dtype dt) = src (f32), n elements */
static void convert_from_f32(void *dst, attn_dtype dt, const float *src, size_t n) {
    size_t i = 0;
    uint16_t *d = (uint16_t *)dst;
    if (dt == ATTN_F32) { memcpy(dst, src, n * 4); return; }
    if (dt == ATTN_F16) {
#if defined(__F16C__)
        for (; i < n / 8 * 8; i += 8)    /* not i + 8 <= n: gcc 12 -O3 then warns, wrongly, of overflow */
            _mm_storeu_si128((__m128i *)(d + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
        for (; i < n; ++i) d[i] = f32_to_f16(src[i]);
    } else {
        for (; i < n; ++i) d[i] = f32_to_bf16(src[i]);
    }
}

/* ------------------------------------------------------------------------------------------
   a tiny thread team: run fn on nt threads released together; wall time from release to
   the last join
   ------------------------------------------------------------------------------------------ */
typedef void (*team_fn)(void *arg, int tid, int nt);
typedef struct team_ctl {
    team_fn fn; void *arg; int nt;
    pthread_mutex_t mu; pthread_cond_t cv; int ready, go;
} team_ctl;
typedef struct team_slot { team_ctl *c; int tid; } team_slot;

static void *team_main(void *p) {
    team_slot *s = (team_slot *)p;
    team_ctl *c = s->c;
    pthread_mutex_lock(&c->mu);
    c->ready++;
    pthread_cond_broadcast(&c->cv);
    while (!c->go) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    c->fn(c->arg, s->tid, c->nt);
    return NULL;
}

static double team_run(int nt, team_fn fn, void *arg) {
    static pthread_t th[BENCH_MAX_THREADS];
    static team_slot sl[BENCH_MAX_THREADS];
    team_ctl c;
    double t0, t1;
    int i;
    if (nt < 1) nt = 1;
    if (nt > BENCH_MAX_THREADS) nt = BENCH_MAX_THREADS;
    c.fn = fn; c.arg = arg; c.nt = nt; c.ready = 0; c.go = 0;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    for (i = 1; i < nt; ++i) {
        sl[i].c = &c; sl[i].tid = i;
        if (pthread_create(&th[i], NULL, team_main, &sl[i]) != 0) die("pthread_create failed");
    }
    pthread_mutex_lock(&c.mu);
    while (c.ready < nt - 1) pthread_cond_wait(&c.cv, &c.mu);
    c.go = 1;
    pthread_cond_broadcast(&c.cv);
    pthread_mutex_unlock(&c.mu);
    t0 = now_s();
    fn(arg, 0, nt);
    for (i = 1; i < nt; ++i) pthread_join(th[i], NULL);
    t1 = now_s();
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    return t1 - t0;
}

/* ------------------------------------------------------------------------------------------
   1a. fp32 FMA peak
   ------------------------------------------------------------------------------------------ */
enum { ISA_ZMM = 0, ISA_YMM = 1, ISA_PORTABLE = 2 };
static const char *isa_desc[] = { "AVX-512 (16 independent zmm accumulators)",
                                  "AVX2+FMA (12 independent ymm accumulators)",
                                  "portable loop (64 accumulators, vectorised by the compiler; build with -march=native for the SIMD peak)" };
/* the widest FMA loop this build's kernels use (what "% of peak" is measured against): an
   ATTN_NO_AVX512 build runs the AVX2 kernels, so its peak is the ymm one */
static int best_fma_isa(void) {
#if defined(__AVX512F__) && !defined(ATTN_NO_AVX512)
    return ISA_ZMM;
#elif defined(__AVX2__) && defined(__FMA__)
    return ISA_YMM;
#else
    return ISA_PORTABLE;
#endif
}
static double isa_flops_per_iter(int isa) {
    return isa == ISA_ZMM ? 16.0 * 16 * 2 : (isa == ISA_YMM ? 12.0 * 8 * 2 : 64.0 * 2);
}

/* acc = acc * a + b with a < 1 converges to b / (1 - a) = 1: no overflow, no denormals */
#define BENCH_R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define BENCH_R16(X) BENCH_R12(X) X(12) X(13) X(14) X(15)

#if defined(__AVX512F__)
static float fma_loop_zmm(long iters) {
    const __m512 a = _mm512_set1_ps(0.9999999f), b = _mm512_set1_ps(1e-7f);
    long i;
#define DECL(n) __m512 c##n = _mm512_set1_ps(0.01f * (float)(n));
#define STEP(n) c##n = _mm512_fmadd_ps(c##n, a, b);
    BENCH_R16(DECL)
    for (i = 0; i < iters; ++i) { BENCH_R16(STEP) }
#undef DECL
#undef STEP
    c0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                       _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
    c8 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)),
                       _mm512_add_ps(_mm512_add_ps(c12, c13), _mm512_add_ps(c14, c15)));
    return _mm512_reduce_add_ps(_mm512_add_ps(c0, c8));
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
static float fma_loop_ymm(long iters) {
    const __m256 a = _mm256_set1_ps(0.9999999f), b = _mm256_set1_ps(1e-7f);
    float out[8], s = 0.0f;
    long i;
    int l;
#define DECL(n) __m256 c##n = _mm256_set1_ps(0.01f * (float)(n));
#define STEP(n) c##n = _mm256_fmadd_ps(c##n, a, b);
    BENCH_R12(DECL)
    for (i = 0; i < iters; ++i) { BENCH_R12(STEP) }
#undef DECL
#undef STEP
    c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                       _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    c8 = _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11));
    _mm256_storeu_ps(out, _mm256_add_ps(c0, c8));
    for (l = 0; l < 8; ++l) s += out[l];
    return s;
}
#endif
static float fma_loop_portable(long iters) {
    float c[64], s = 0.0f;
    const float a = 0.9999999f, b = 1e-7f;
    long i;
    int l;
    for (l = 0; l < 64; ++l) c[l] = 0.01f * (float)l;
    for (i = 0; i < iters; ++i)
        for (l = 0; l < 64; ++l)
#ifdef FP_FAST_FMAF
            c[l] = fmaf(c[l], a, b); /* a fused instruction on this target (e.g. NEON fmla) */
#else
            c[l] = c[l] * a + b;     /* no fast fma: a multiply and an add, still 2 flops */
#endif
    for (l = 0; l < 64; ++l) s += c[l];
    return s;
}

static float fma_loop(int isa, long iters) {
#if defined(__AVX512F__)
    if (isa == ISA_ZMM) return fma_loop_zmm(iters);
#endif
#if defined(__AVX2__) && defined(__FMA__)
    if (isa == ISA_YMM) return fma_loop_ymm(iters);
#endif
    (void)isa;
    return fma_loop_portable(iters);
}

typedef struct fma_job { int isa; long iters; float sink[BENCH_MAX_THREADS]; } fma_job;
static void fma_worker(void *arg, int tid, int nt) {
    fma_job *j = (fma_job *)arg;
    (void)nt;
    j->sink[tid] = fma_loop(j->isa, j->iters);
}
static volatile float g_sink;

/* GFLOP/s on nt threads, median of `runs`, each run about `secs` long; spread in % */
static double fma_peak(int isa, int nt, double secs, int runs, double *spread) {
    static fma_job job;
    double t, g[16], mn, mx, med;
    long iters = 20000;
    int r, i;
    job.isa = isa;
    for (;;) { /* calibrate on one thread */
        job.iters = iters;
        t = team_run(1, fma_worker, &job);
        if (t > 0.02 || iters > 1000000000L) break;
        iters *= 4;
    }
    job.iters = (long)((double)iters * secs / t) + 1;
    team_run(nt, fma_worker, &job); /* warm-up (clocks, thread start) */
    for (r = 0; r < runs && r < 16; ++r) {
        t = team_run(nt, fma_worker, &job);
        g[r] = isa_flops_per_iter(isa) * (double)job.iters * nt / t * 1e-9;
        for (i = 0; i < nt; ++i) g_sink += job.sink[i];
    }
    med = median_of(g, runs, &mn, &mx);
    if (spread) *spread = 100.0 * (mx - mn) / med;
    return med;
}

/* A busy machine shows as a wide spread: measure again (3 attempts at most) while the spread
   is above 10%, and keep the steadiest attempt. */
static double fma_peak_steady(int isa, int nt, double secs, double *spread, int *attempts) {
    double best = 0.0, best_sp = 1e300, sp;
    int a;
    for (a = 1; a <= 3; ++a) {
        double g = fma_peak(isa, nt, secs, 5, &sp);
        if (sp < best_sp) { best_sp = sp; best = g; }
        if (sp <= 10.0) break;
    }
    *spread = best_sp;
    *attempts = a > 3 ? 3 : a;
    return best;
}

/* ------------------------------------------------------------------------------------------
   1b. read bandwidth: multi-threaded sum over an array far larger than the LLC
   ------------------------------------------------------------------------------------------ */
static float sum_floats(const float *p, size_t n) {
    size_t i = 0;
    float s = 0.0f;
#if defined(__AVX512F__)
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_loadu_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_loadu_ps(p + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_loadu_ps(p + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_loadu_ps(p + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_loadu_ps(p + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_loadu_ps(p + i + 112));
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    s = _mm512_reduce_add_ps(a0);
#elif defined(__AVX2__)
    float out[8];
    int l;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_loadu_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_loadu_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_loadu_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_loadu_ps(p + i + 56));
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    _mm256_storeu_ps(out, a0);
    for (l = 0; l < 8; ++l) s += out[l];
#else
    float a[16] = {0};
    int l;
    for (; i + 16 <= n; i += 16)
        for (l = 0; l < 16; ++l) a[l] += p[i + l];
    for (l = 0; l < 16; ++l) s += a[l];
#endif
    for (; i < n; ++i) s += p[i];
    return s;
}

typedef struct bw_job { float *p; size_t n; int init; float sink[BENCH_MAX_THREADS]; } bw_job;
static void bw_worker(void *arg, int tid, int nt) {
    bw_job *j = (bw_job *)arg;
    size_t chunk = (j->n / (size_t)nt) & ~(size_t)127;
    size_t lo = chunk * (size_t)tid, hi = (tid == nt - 1) ? j->n : lo + chunk, i;
    if (j->init) { /* first touch by the thread that will read it */
        for (i = lo; i < hi; ++i) j->p[i] = (float)(i & 1023) * (1.0f / 1024.0f);
        j->sink[tid] = 0.0f;
    } else {
        j->sink[tid] = sum_floats(j->p + lo, hi - lo);
    }
}

/* read GB/s of a sum over `bytes` on nt threads, median of `runs`; measured again (3 attempts
   at most) while the spread is above 10%, keeping the steadiest attempt */
static double read_bandwidth(size_t bytes, int nt, int runs, double *spread, int *attempts) {
    static bw_job job;
    double g[16], t, mn, mx, med, best = 0.0, best_sp = 1e300, sp;
    int r, i, a;
    job.n = bytes / sizeof(float);
    job.p = (float *)xalloc(job.n * sizeof(float));
    job.init = 1;
    team_run(nt, bw_worker, &job);
    job.init = 0;
    team_run(nt, bw_worker, &job); /* warm-up */
    for (a = 1; a <= 3; ++a) {
        for (r = 0; r < runs && r < 16; ++r) {
            t = team_run(nt, bw_worker, &job);
            g[r] = (double)(job.n * sizeof(float)) / t * 1e-9;
            for (i = 0; i < nt; ++i) g_sink += job.sink[i];
        }
        med = median_of(g, runs, &mn, &mx);
        sp = 100.0 * (mx - mn) / med;
        if (sp < best_sp) { best_sp = sp; best = med; }
        if (sp <= 10.0) break;
    }
    free(job.p);
    *spread = best_sp;
    *attempts = a > 3 ? 3 : a;
    return best;
}

/* One measurement of the machine: both peaks and the bandwidth. */
typedef struct machine {
    double peak_1t, peak_all, bw, sp1, spn, spb;
    int att1, attn, attb;
} machine;

static void measure_machine(machine *m, int isa, int ncpu, double secs, size_t bw_bytes) {
    m->peak_1t = fma_peak_steady(isa, 1, secs, &m->sp1, &m->att1);
    if (ncpu > 1) {
        m->peak_all = fma_peak_steady(isa, ncpu, secs, &m->spn, &m->attn);
    } else {
        m->peak_all = m->peak_1t; m->spn = m->sp1; m->attn = m->att1;
    }
    m->bw = read_bandwidth(bw_bytes, ncpu, 5, &m->spb, &m->attb);
}

static void print_machine(const machine *m, int ncpu, size_t bw_bytes) {
    printf("  FMA peak, 1 thread   %9.1f GFLOP/s  (median of 5, spread %4.1f%%%s)\n", m->peak_1t, m->sp1,
           m->att1 > 1 ? ", steadiest of 3 attempts" : "");
    printf("  FMA peak, %d threads  %9.1f GFLOP/s  (median of 5, spread %4.1f%%%s)\n", ncpu, m->peak_all,
           m->spn, m->attn > 1 ? ", steadiest of 3 attempts" : "");
    printf("  read bandwidth       %9.1f GB/s     (median of 5, spread %4.1f%%%s; sum over %.0f MiB, %d threads)\n",
           m->bw, m->spb, m->attb > 1 ? ", steadiest of 3 attempts" : "", (double)bw_bytes / MIB, ncpu);
}

/* Cache flush before every decode call: a multi-threaded sum over one of two arrays of
   max(8x LLC, 256 MiB) each, taken in turn, so the array read was last touched two flushes
   ago and is itself cold. The flush is not part of the decode timing, but it is timed on its
   own: its GB/s is a bandwidth sample taken right beside the decode calls, which tracks a
   machine whose memory bandwidth drifts (a shared cloud host) better than one number. */
static bw_job g_flush[2];
static int g_flush_next;
/* Decoding benches run attn through this pool (attn_pool_parallel), and the flush runs on it
   too, the way a model's other layers would between two attention calls: so a decode call
   finds the workers awake, not asleep since the last call (waking a sleeping thread costs
   30-100 us on the shared 2-core machine, starting one 40-120 us). The flush is cut into
   FLUSH_TASKS pieces that the pool hands out as threads come free, so the threads finish it
   together, as a balanced layer's would: with one half per thread, one thread could finish
   more than the pool's 100 us spin before the other and be asleep when decoding starts.
   NULL: threads per call. */
#define FLUSH_TASKS 64
static attn_pool *g_bench_pool;
static void bw_pool_task(void *arg, int i, int thread) {
    bw_job *j = (bw_job *)arg;
    const size_t chunk = (j->n / FLUSH_TASKS) & ~(size_t)127;
    const size_t lo = chunk * (size_t)i, hi = (i == FLUSH_TASKS - 1) ? j->n : lo + chunk;
    j->sink[thread] += sum_floats(j->p + lo, hi - lo);   /* a thread runs its tasks one by one */
}
static double flush_caches(void) {
    bw_job *j = &g_flush[g_flush_next];
    double t;
    g_flush_next ^= 1;
    if (g_bench_pool) {
        const double t0 = now_s();
        attn_pool_parallel(g_bench_pool, FLUSH_TASKS, attn_pool_threads(g_bench_pool), bw_pool_task, j);
        t = now_s() - t0;
    } else {
        t = team_run(online_cpus(), bw_worker, j);
    }
    g_sink += j->sink[0];
    return (double)(j->n * sizeof(float)) / t * 1e-9;
}

/* The flush arrays (max(8x LLC, 256 MiB) each, first touched by the threads that read them)
   and the decoding pool; flush_close frees both. */
static void flush_open(int ncpu, size_t llc) {
    int i;
    for (i = 0; i < 2; ++i) {
        g_flush[i].n = (8 * llc > ((size_t)256 << 20) ? 8 * llc : ((size_t)256 << 20)) / sizeof(float);
        g_flush[i].p = (float *)xalloc(g_flush[i].n * sizeof(float));
        g_flush[i].init = 1;
        team_run(ncpu, bw_worker, &g_flush[i]);
        g_flush[i].init = 0;
    }
    g_bench_pool = attn_pool_create(ncpu, 0);
}
static void flush_close(void) {
    free(g_flush[0].p); free(g_flush[1].p);
    g_flush[0].p = g_flush[1].p = NULL;
    attn_pool_destroy(g_bench_pool);
    g_bench_pool = NULL;
}

/* ------------------------------------------------------------------------------------------
   scaling series: time vs sequence length of a mechanism beside exact attention (the linear
   family's benches): the measured points, the fitted exponent, the crossover, CSV and SVG
   ------------------------------------------------------------------------------------------ */
typedef struct bench_point {
    const char *mech;
    int causal, seq;
    double ms, lo, hi, gflops, pct;
    double err;                  /* vs exact, or vs the naive path (naive rows) */
} bench_point;
#define BENCH_MAX_POINTS 64
static bench_point bench_points[BENCH_MAX_POINTS];
static int bench_n_points;

/* median ms of reps attn_forward calls after a warm-up (three when a call takes over 2 s; the
   warm-up alone when it took over 4 s); lo/hi: the fastest and slowest, in ms */
static double bench_time_forward(attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, int reps,
                                 double *lo, double *hi) {
    double t[64], t0 = now_s(), med;
    int i;
    if (reps > 64) reps = 64;
    if (attn_forward(d, q, k, v, o, NULL) != ATTN_OK) die("attn_forward failed");
    t[0] = now_s() - t0;
    if (t[0] > 4.0) { *lo = *hi = t[0] * 1e3; return t[0] * 1e3; }
    for (i = 0; i < reps; ++i) {
        t0 = now_s();
        if (attn_forward(d, q, k, v, o, NULL) != ATTN_OK) die("attn_forward failed");
        t[i] = now_s() - t0;
        if (t[i] > 2.0 && i >= 2) { reps = i + 1; break; }
    }
    med = median_of(t, reps, lo, hi) * 1e3;
    *lo *= 1e3; *hi *= 1e3;
    return med;
}

static void bench_add_point(const char *mech, int causal, int seq, double ms, double lo, double hi, double flops,
                            double peak, double err) {
    bench_point *r;
    if (bench_n_points >= BENCH_MAX_POINTS) die("too many points");
    r = &bench_points[bench_n_points++];
    r->mech = mech; r->causal = causal; r->seq = seq; r->ms = ms; r->lo = lo; r->hi = hi;
    r->gflops = flops > 0 ? flops / (ms * 1e-3) / 1e9 : 0.0;
    r->pct = flops > 0 ? 100.0 * r->gflops / peak : 0.0;
    r->err = err;
    printf("  %-9s causal %d  L %6d  %10.3f ms  (%.3f-%.3f)  %7.1f GFLOP/s  %5.1f%% peak  diff %.2e\n", mech, causal,
           seq, ms, lo, hi, r->gflops, r->pct, err);
    fflush(stdout);
}

/* max |a - b| / max |b| */
static double bench_max_norm_diff(const float *a, const float *b, size_t n) {
    double mx = 1e-30, e = 0.0;
    size_t i;
    for (i = 0; i < n; ++i) { if (fabs(b[i]) > mx) mx = fabs(b[i]); if (fabs(a[i] - b[i]) > e) e = fabs(a[i] - b[i]); }
    return e / mx;
}

/* least-squares slope of log(ms) on log(seq) over one series' points with seq >= from */
static double bench_exponent(const char *mech, int causal, int from) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int i, n = 0;
    for (i = 0; i < bench_n_points; ++i) {
        const bench_point *r = &bench_points[i];
        double x, y;
        if (strcmp(r->mech, mech) != 0 || r->causal != causal || r->seq < from) continue;
        x = log((double)r->seq); y = log(r->ms);
        sx += x; sy += y; sxx += x * x; sxy += x * y; ++n;
    }
    return n >= 2 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : NAN;
}

static double bench_ms_of(const char *mech, int causal, int seq) {
    int i;
    for (i = 0; i < bench_n_points; ++i)
        if (strcmp(bench_points[i].mech, mech) == 0 && bench_points[i].causal == causal && bench_points[i].seq == seq)
            return bench_points[i].ms;
    return NAN;
}

/* the shortest measured length where mech beat "exact"; 0 if it never did */
static int bench_crossover(const char *mech, int causal) {
    int i;
    for (i = 0; i < bench_n_points; ++i) {
        const bench_point *r = &bench_points[i];
        if (strcmp(r->mech, mech) == 0 && r->causal == causal && r->ms < bench_ms_of("exact", causal, r->seq)) return r->seq;
    }
    return 0;
}

/* every point as CSV, the CPU model and kernel set in each row */
static void bench_write_points_csv(const char *path) {
    FILE *f = fopen(path, "w");
    int i;
    if (!f) die("cannot write the CSV");
    bench_csv_header(f, "mech,causal,seq,ms,ms_min,ms_max,gflops,pct_peak,diff");
    for (i = 0; i < bench_n_points; ++i) {
        const bench_point *r = &bench_points[i];
        bench_csv_machine(f);
        fprintf(f, "%s,%d,%d,%.4f,%.4f,%.4f,%.1f,%.1f,%.3e\n", r->mech, r->causal, r->seq, r->ms, r->lo, r->hi, r->gflops,
                r->pct, r->err);
    }
    if (fclose(f) != 0) die("cannot write the CSV");
}

/* log-log time vs length (1k .. 256k, 0.1 ms .. 100 s): mech and exact, causal (solid) and not
   (dashed), each labelled with its exponent over seq >= 4k */
static void bench_write_scaling_svg(const char *path, const char *title, const char *mech_name) {
    const double W = 720, Hh = 440, x0 = 70, y0 = 40, pw = 600, ph = 330;
    const double lx0 = log10(1024.0), lx1 = log10(262144.0), ly0 = -1.0, ly1 = 5.0;
    static const char *const colors[4] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728" };
    FILE *f = fopen(path, "w");
    int s, i, e;
    if (!f) die("cannot write the SVG");
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, Hh);
    fprintf(f, "<text x=\"%.0f\" y=\"20\" font-size=\"14\">%s (log-log)</text>\n", x0, title);
    bench_svg_machine(f, x0, 34);
    for (e = 3; e <= 5; ++e) {
        double x = x0 + pw * (e - lx0) / (lx1 - lx0);
        if (x < x0) continue;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"middle\">1e%d</text>\n", x, y0, x, y0 + ph, x, y0 + ph + 16, e);
    }
    for (e = (int)ly0; e <= (int)ly1; ++e) {
        double y = y0 + ph * (ly1 - e) / (ly1 - ly0);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "text-anchor=\"end\">%g ms</text>\n", x0, y, x0 + pw, y, x0 - 4, y + 4, pow(10.0, e));
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">sequence length (tokens)</text>\n", x0 + pw / 2, Hh - 8);
    for (s = 0; s < 4; ++s) {
        const char *mech = s < 2 ? mech_name : "exact";
        const int causal = s % 2;
        int first = 1;
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", colors[s],
                causal ? "" : " stroke-dasharray=\"6 3\"");
        for (i = 0; i < bench_n_points; ++i) {
            const bench_point *r = &bench_points[i];
            if (strcmp(r->mech, mech) != 0 || r->causal != causal) continue;
            fprintf(f, "%s%.1f,%.1f", first ? "" : " ", x0 + pw * (log10((double)r->seq) - lx0) / (lx1 - lx0),
                    y0 + ph * (ly1 - log10(r->ms)) / (ly1 - ly0));
            first = 0;
        }
        fprintf(f, "\"/>\n<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s, %s (exponent %.2f)</text>\n", x0 + 10,
                y0 + 16 + 16 * s, colors[s], mech, causal ? "causal" : "non-causal", bench_exponent(mech, causal, 4096));
    }
    fprintf(f, "</svg>\n");
    fclose(f);
}

/* ------------------------------------------------------------------------------------------
   A PyTorch peer timed in the same run (bench_isa, bench_linear): the Python (BENCH_PYTHON,
   default python3; empty: none) runs as its own process through popen, and the C side waits for
   it, so the two never share the cores. A measurement, never a dependency: no torch, no column.
   Needs popen (the program defines _POSIX_C_SOURCE before its includes).
   ------------------------------------------------------------------------------------------ */
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L
#include <sys/wait.h>
static char g_python[256], g_torch_why[1024];

/* runs `python -c code args` through popen (stderr too); the numeric lines go to out[] (at most
   max_out), the last other line to g_torch_why; returns the number of numeric lines, or -1 when
   the command failed (g_torch_why says how). code holds no single quote. */
static int python_run(const char *code, const char *args, double *out, int max_out, char *last, size_t nlast) {
    char cmd[8192], line[512];
    FILE *p;
    int n = 0, st;
    last[0] = 0;
    if ((size_t)snprintf(cmd, sizeof cmd, "'%s' -c '%s' %s 2>&1", g_python, code, args) >= sizeof cmd) {
        snprintf(g_torch_why, sizeof g_torch_why, "the command line is too long");
        return -1;
    }
    fflush(stdout);
    if (!(p = popen(cmd, "r"))) {
        snprintf(g_torch_why, sizeof g_torch_why, "popen failed");
        return -1;
    }
    while (fgets(line, sizeof line, p)) {
        char *e = line + strlen(line), *end;
        double v;
        while (e > line && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ')) *--e = 0;
        if (!line[0]) continue;
        v = strtod(line, &end);
        if (*end == 0 && end != line && n < max_out && out) out[n++] = v;
        else snprintf(last, nlast, "%s", line);
    }
    st = pclose(p);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(g_torch_why, sizeof g_torch_why, "%s exited with status %d%s%s", g_python,
                 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, last[0] ? ": " : "", last);
        return -1;
    }
    return n;
}

/* Is there a Python with torch? probe: code that prints torch.__version__ (and touches what the
   bench will call). Fills g_python; 1 yes (version in ver), 0 no (g_torch_why says why). */
static int torch_probe_ok(const char *probe, char *ver, size_t nver) {
    const char *py = getenv("BENCH_PYTHON");
    if (!py) py = "python3";
    if (!*py) { snprintf(g_torch_why, sizeof g_torch_why, "BENCH_PYTHON is empty"); return 0; }
    if (strchr(py, '\'') || strlen(py) >= sizeof g_python) {
        snprintf(g_torch_why, sizeof g_torch_why, "BENCH_PYTHON holds a single quote or is too long");
        return 0;
    }
    snprintf(g_python, sizeof g_python, "%s", py);
    if (python_run(probe, "", NULL, 0, ver, nver) < 0) return 0;
    if (!ver[0]) { snprintf(g_torch_why, sizeof g_torch_why, "%s printed no torch version", g_python); return 0; }
    return 1;
}
#endif

#endif /* ATTN_BENCH_UTIL_H */
