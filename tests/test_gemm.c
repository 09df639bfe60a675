/* tests/test_gemm.c - attn_sgemm against a naive double-precision GEMM written here: every
   transpose combination, awkward sizes, alpha/beta combinations (beta = 0 with NaN in C),
   leading dimensions larger than needed (the gaps must stay untouched), m/n/k = 0, alpha = 0
   (a and b not read), bitwise equality for every thread count and for the allocation-free
   fallback, the attn_sgemm_fn hook type, and every error status with its outputs untouched.

   Tolerance (fp32 accumulation): |got - ref| <= 2 (k + 2) u (|alpha| sum_p |a_ip b_pj| +
   |beta c_ij|) + 1e-30, u = 2^-24: twice the classic gamma_{k+2} bound of a dot product, so a
   lost or repeated term (an error near |a b| >> k u |a||b|) cannot pass. */
#include "test.h"

extern int t_attn_fail_mallocs;   /* tests/attn_impl.c: non-zero makes ATTN_MALLOC return NULL */

static double g_worst = 0.0;   /* largest error / tolerance over the passing checks */

/* stored A: [m,k] (row length k) or, with ta, [k,m]; element op(A)[i][p] */
static double ref_a(const float *A, ptrdiff_t lda, int ta, int i, int p) {
    return ta ? A[(ptrdiff_t)p * lda + i] : A[(ptrdiff_t)i * lda + p];
}
static double ref_b(const float *B, ptrdiff_t ldb, int tb, int p, int j) {
    return tb ? B[(ptrdiff_t)j * ldb + p] : B[(ptrdiff_t)p * ldb + j];
}

/* fills buffers, runs attn_sgemm, checks every element and that the ld gaps are untouched */
typedef struct gcase {
    int ta, tb, m, n, k, pad_a, pad_b, pad_c, threads;
    float alpha, beta;
} gcase;

static void run_case(const gcase *g, t_rng *r, const char *label) {
    const int ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
    const int br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
    const ptrdiff_t lda = (ac > 0 ? ac : 1) + g->pad_a, ldb = (bc > 0 ? bc : 1) + g->pad_b;
    const ptrdiff_t ldc = (g->n > 0 ? g->n : 1) + g->pad_c;
    const size_t na = (size_t)(ar > 0 ? ar : 1) * (size_t)lda, nb = (size_t)(br > 0 ? br : 1) * (size_t)ldb;
    const size_t nc = (size_t)(g->m > 0 ? g->m : 1) * (size_t)ldc;
    float *A = (float *)t_xmalloc(na * sizeof(float)), *B = (float *)t_xmalloc(nb * sizeof(float));
    float *C = (float *)t_xmalloc(nc * sizeof(float)), *C0 = (float *)t_xmalloc(nc * sizeof(float));
    size_t x;
    int i, j, p, bad = 0, gaps = 1;
    double worst = 0.0;
    attn_status st;
    /* gaps hold NaN: reading one would poison the result */
    for (x = 0; x < na; ++x) A[x] = (x % (size_t)lda) < (size_t)ac ? (float)t_normal(r) : (float)NAN;
    for (x = 0; x < nb; ++x) B[x] = (x % (size_t)ldb) < (size_t)bc ? (float)t_normal(r) : (float)NAN;
    for (x = 0; x < nc; ++x) C0[x] = g->beta == 0.0f || (x % (size_t)ldc) >= (size_t)g->n ? (float)NAN : (float)t_normal(r);
    memcpy(C, C0, nc * sizeof(float));
    st = attn_sgemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, A, lda, B, ldb, g->beta, C, ldc, g->threads);
    if (!T_CHECK(st == ATTN_OK, "%s: attn_sgemm returned %s", label, attn_status_str(st))) goto done;
    for (i = 0; i < g->m; ++i) {
        for (j = 0; j < g->n; ++j) {
            double s = 0.0, abs_s = 0.0, ref, tol, got = C[(ptrdiff_t)i * ldc + j], e;
            const double c0 = C0[(ptrdiff_t)i * ldc + j];
            for (p = 0; p < g->k; ++p) {
                const double t = ref_a(A, lda, g->ta, i, p) * ref_b(B, ldb, g->tb, p, j);
                s += t; abs_s += fabs(t);
            }
            ref = (double)g->alpha * s + (g->beta != 0.0f ? (double)g->beta * c0 : 0.0);
            tol = 2.0 * (g->k + 2) * ldexp(1.0, -24) *
                  (fabs((double)g->alpha) * abs_s + (g->beta != 0.0f ? fabs((double)g->beta * c0) : 0.0)) + 1e-30;
            e = fabs(got - ref);
            if (!(e <= tol)) {
                if (bad++ < 3) T_CHECK(0, "%s: C[%d][%d] = %.9g, reference %.9g (tolerance %.3g)", label, i, j, got, ref, tol);
            } else if (e / tol > worst) worst = e / tol;
        }
        for (j = g->n; j < (int)ldc; ++j)
            if (memcmp(&C[(ptrdiff_t)i * ldc + j], &C0[(ptrdiff_t)i * ldc + j], sizeof(float)) != 0) gaps = 0;
    }
    T_CHECK(bad == 0, "%s: %d elements outside the tolerance", label, bad);
    T_CHECK(gaps, "%s: the gaps of c between n and ldc were written", label);
    if (bad == 0 && worst > g_worst) g_worst = worst;
done:
    free(A); free(B); free(C); free(C0);
}

static void describe(char *buf, size_t n, const char *what, const gcase *g) {
    snprintf(buf, n, "%s ta=%d tb=%d m=%d n=%d k=%d alpha=%g beta=%g pads=%d,%d,%d threads=%d", what, g->ta, g->tb,
             g->m, g->n, g->k, (double)g->alpha, (double)g->beta, g->pad_a, g->pad_b, g->pad_c, g->threads);
}

/* square awkward sizes and a few very unequal shapes, all four transposes */
static void test_shapes(void) {
    static const int sizes[] = { 1, 2, 3, 7, 17, 31, 33, 63, 65, 127, 129, 257 };
    static const int big[][3] = { { 1000, 33, 65 }, { 17, 1000, 31 }, { 63, 65, 1000 }, { 1, 1001, 300 },
                                  { 999, 1, 513 }, { 300, 300, 1 }, { 14, 32, 256 }, { 28, 64, 512 } };
    t_rng r = t_rng_seed(501);
    char label[200];
    int s, t, c;
    for (t = 0; t < 4; ++t) {
        for (s = 0; s < (int)(sizeof sizes / sizeof sizes[0]); ++s) {
            gcase g;
            memset(&g, 0, sizeof g);
            g.ta = t & 1; g.tb = t >> 1; g.m = g.n = g.k = sizes[s]; g.alpha = 1.0f; g.beta = 0.0f;
            if (T_QUICK && sizes[s] > 129) continue;
            describe(label, sizeof label, "square", &g);
            run_case(&g, &r, label);
        }
        for (c = 0; c < (int)(sizeof big / sizeof big[0]); ++c) {
            gcase g;
            memset(&g, 0, sizeof g);
            g.ta = t & 1; g.tb = t >> 1; g.m = big[c][0]; g.n = big[c][1]; g.k = big[c][2];
            g.alpha = 0.75f; g.beta = -1.25f; g.pad_a = 3; g.pad_b = 1; g.pad_c = 5;
            if (T_QUICK && c < 3) continue;
            describe(label, sizeof label, "shape", &g);
            run_case(&g, &r, label);
        }
    }
    /* multi-threaded task grids (rows split, columns split, both) against the reference */
    for (c = 0; c < (T_QUICK ? 1 : 3); ++c) {
        static const int mt[][4] = { { 600, 400, 500, 3 }, { 40, 2000, 500, 2 }, { 700, 300, 400, 4 } };
        gcase g;
        memset(&g, 0, sizeof g);
        g.ta = c & 1; g.tb = c == 1; g.m = mt[c][0]; g.n = mt[c][1]; g.k = mt[c][2]; g.threads = mt[c][3];
        g.alpha = 1.5f; g.beta = 0.5f; g.pad_c = 2;
        describe(label, sizeof label, "threads", &g);
        run_case(&g, &r, label);
    }
}

/* random sizes, transposes, alpha/beta, padding and thread counts */
static void test_sweep(void) {
    static const int sizes[] = { 1, 2, 3, 5, 7, 13, 14, 15, 16, 17, 29, 31, 32, 33, 47, 63, 64, 65, 100, 127, 129, 257, 300 };
    static const float alphas[] = { 1.0f, -1.0f, 0.5f, 2.5f, -0.3f };
    static const float betas[] = { 0.0f, 1.0f, -1.0f, 0.25f, 3.0f };
    t_rng r = t_rng_seed(502);
    char label[200];
    int it, n_it = T_QUICK ? 40 : 400;
    for (it = 0; it < n_it; ++it) {
        gcase g;
        const int ns = (int)(sizeof sizes / sizeof sizes[0]);
        g.ta = t_irange(&r, 0, 1) ? 7 : 0;   /* any non-zero value means transpose */
        g.tb = t_irange(&r, 0, 1) ? -1 : 0;
        g.m = t_pick(&r, sizes, ns); g.n = t_pick(&r, sizes, ns); g.k = t_pick(&r, sizes, ns);
        g.alpha = alphas[t_irange(&r, 0, 4)]; g.beta = betas[t_irange(&r, 0, 4)];
        g.pad_a = t_chance(&r, 0.5) ? t_irange(&r, 1, 20) : 0;
        g.pad_b = t_chance(&r, 0.5) ? t_irange(&r, 1, 20) : 0;
        g.pad_c = t_chance(&r, 0.5) ? t_irange(&r, 1, 20) : 0;
        g.threads = t_irange(&r, 0, 4);
        describe(label, sizeof label, "sweep", &g);
        run_case(&g, &r, label);
    }
}

/* m, n or k = 0, alpha = 0: C = beta*C exactly, a and b never read (NaN there) */
static void test_degenerate(void) {
    float A[64], B[64], C[64], want[64];
    int i, t;
    attn_status st;
    for (i = 0; i < 64; ++i) { A[i] = (float)NAN; B[i] = (float)NAN; C[i] = (float)(i - 20); }
    /* k = 0 and alpha = 0, for beta 0 (C NaN: overwritten by 0), 1 and -2 */
    for (t = 0; t < 6; ++t) {
        const float beta = t % 3 == 0 ? 0.0f : t % 3 == 1 ? 1.0f : -2.0f;
        const int k = t < 3 ? 0 : 5;
        const float alpha = t < 3 ? 1.0f : 0.0f;
        for (i = 0; i < 64; ++i) {
            C[i] = beta == 0.0f ? (float)NAN : (float)(i - 20);
            want[i] = beta == 0.0f ? 0.0f : beta * (float)(i - 20);
        }
        /* C is [6][ldc = 10]: columns 7..9 are gaps that must keep their values */
        for (i = 0; i < 64; ++i) if (i >= 60 || i % 10 >= 7) want[i] = C[i];
        st = attn_sgemm(t & 1, 0, 6, 7, k, alpha, A, t & 1 ? 6 : (k > 0 ? k : 1), B, 7, beta, C, 10, 2);
        T_CHECK(st == ATTN_OK, "k=%d alpha=%g beta=%g: attn_sgemm returned %s", k, (double)alpha, (double)beta, attn_status_str(st));
        T_CHECK(memcmp(C, want, sizeof C) == 0, "k=%d alpha=%g beta=%g: C is not exactly beta*C", k, (double)alpha, (double)beta);
    }
    /* m = 0 or n = 0: nothing is read or written; NULL is fine for an empty matrix */
    t_sentinel(C, sizeof C, 9);
    st = attn_sgemm(0, 0, 0, 5, 5, 1.0f, NULL, 5, B, 5, 0.0f, NULL, 5, 0);
    T_CHECK(st == ATTN_OK && t_sentinel_ok(C, sizeof C, 9), "m = 0 with NULL a and c: %s", attn_status_str(st));
    st = attn_sgemm(0, 0, 5, 0, 5, 1.0f, A, 5, NULL, 1, 0.0f, NULL, 1, 0);
    T_CHECK(st == ATTN_OK, "n = 0 with NULL b and c: %s", attn_status_str(st));
    st = attn_sgemm(0, 0, 3, 4, 0, 1.0f, NULL, 1, NULL, 4, 0.0f, C, 4, 0);
    T_CHECK(st == ATTN_OK, "k = 0 with NULL a and b: %s", attn_status_str(st));
    for (i = 0; i < 12; ++i) T_CHECK(C[i] == 0.0f, "k = 0, beta = 0: C[%d] = %g, want 0", i, (double)C[i]);
    T_CHECK(t_sentinel_ok(C + 12, sizeof C - 12 * sizeof(float), (unsigned char)(9 + 12 * 4 * 37)),
            "k = 0: wrote past c's last element");
}

/* the result is bitwise the same for every thread count, and for the allocation-free fallback */
static void test_threads(void) {
    /* big enough that up to 7 threads engage (attn_sgemm starts one per 32 MFLOP) */
    static const int shapes[][5] = { { 600, 400, 500, 0, 0 }, { 2000, 60, 400, 1, 0 }, { 40, 2000, 500, 0, 1 },
                                     { 257, 129, 600, 1, 1 }, { 64, 64, 64, 0, 1 } };
    static const int threads[] = { 1, 2, 3, 0, 4, 7 };
    t_rng r = t_rng_seed(503);
    int s, t;
    for (s = 0; s < (int)(sizeof shapes / sizeof shapes[0]); ++s) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2], ta = shapes[s][3], tb = shapes[s][4];
        float *A = (float *)t_xmalloc((size_t)m * k * sizeof(float)), *B = (float *)t_xmalloc((size_t)k * n * sizeof(float));
        float *C1 = (float *)t_xmalloc((size_t)m * n * sizeof(float)), *Ct = (float *)t_xmalloc((size_t)m * n * sizeof(float));
        float *Cs = (float *)t_xmalloc((size_t)m * n * sizeof(float));
        size_t x;
        attn_status st;
        for (x = 0; x < (size_t)m * k; ++x) A[x] = (float)t_normal(&r);
        for (x = 0; x < (size_t)k * n; ++x) B[x] = (float)t_normal(&r);
        for (x = 0; x < (size_t)m * n; ++x) Cs[x] = (float)t_normal(&r);
        memcpy(C1, Cs, (size_t)m * n * sizeof(float));
        st = attn_sgemm(ta, tb, m, n, k, 0.5f, A, ta ? m : k, B, tb ? k : n, 0.75f, C1, n, 1);
        T_CHECK(st == ATTN_OK, "threads: %s", attn_status_str(st));
        for (t = 1; t < (int)(sizeof threads / sizeof threads[0]); ++t) {
            memcpy(Ct, Cs, (size_t)m * n * sizeof(float));
            st = attn_sgemm(ta, tb, m, n, k, 0.5f, A, ta ? m : k, B, tb ? k : n, 0.75f, Ct, n, threads[t]);
            T_CHECK(st == ATTN_OK && memcmp(C1, Ct, (size_t)m * n * sizeof(float)) == 0,
                    "m=%d n=%d k=%d: %d threads differ from 1 thread (bitwise)", m, n, k, threads[t]);
        }
        /* packing buffers cannot be allocated: the on-stack fallback gives the same bits */
        memcpy(Ct, Cs, (size_t)m * n * sizeof(float));
        t_attn_fail_mallocs = 1;
        st = attn_sgemm(ta, tb, m, n, k, 0.5f, A, ta ? m : k, B, tb ? k : n, 0.75f, Ct, n, 2);
        t_attn_fail_mallocs = 0;
        T_CHECK(st == ATTN_OK && memcmp(C1, Ct, (size_t)m * n * sizeof(float)) == 0,
                "m=%d n=%d k=%d: the allocation-free fallback differs from the blocked result", m, n, k);
        free(A); free(B); free(C1); free(Ct); free(Cs);
    }
}

/* attn_sgemm_fn: a caller's GEMM behind the hook type computes the same product */
typedef struct { int calls; } hook_user;
static void hook_gemm(void *user, int ta, int tb, int m, int n, int k, float alpha, const float *a, ptrdiff_t lda,
                      const float *b, ptrdiff_t ldb, float beta, float *c, ptrdiff_t ldc) {
    ((hook_user *)user)->calls++;
    attn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, 1);
}
static void test_hook_type(void) {
    const float A[6] = { 1, 2, 3, 4, 5, 6 }, B[6] = { 1, 0, -1, 2, 0.5f, 1 };
    float C[4] = { 0, 0, 0, 0 };
    hook_user u = { 0 };
    attn_sgemm_fn fn = hook_gemm;
    /* [2,3] x [3,2]: rows (1,2,3), (4,5,6) times columns (1,-1,0.5), (0,2,1) */
    fn(&u, 0, 0, 2, 2, 3, 1.0f, A, 3, B, 2, 0.0f, C, 2);
    T_CHECK(u.calls == 1 && C[0] == 0.5f && C[1] == 7.0f && C[2] == 2.0f && C[3] == 16.0f,
            "attn_sgemm_fn hook: C = %g %g %g %g, want 0.5 7 2 16", (double)C[0], (double)C[1], (double)C[2], (double)C[3]);
}

/* every status, from a valid base call that changes one thing; c (and its neighbours) untouched */
typedef struct ecase {
    int ta, tb, m, n, k, threads;
    float alpha, beta;
    const float *a, *b;
    float *c;
    ptrdiff_t lda, ldb, ldc;
} ecase;

static float e_buf[4096];   /* a, b, c carved from one buffer so overlap can be provoked */
#define E_A (e_buf)
#define E_B (e_buf + 1024)
#define E_C (e_buf + 2048)

static ecase ebase(void) {
    ecase e;
    e.ta = 0; e.tb = 1; e.m = 5; e.n = 6; e.k = 7; e.threads = 2; e.alpha = 1.0f; e.beta = 0.5f;
    e.a = E_A; e.b = E_B; e.c = E_C; e.lda = 7; e.ldb = 9; e.ldc = 6;
    return e;
}

static void expect(const char *label, const ecase *e, attn_status want, const char *field) {
    const char *msg = attn_status_str(want);
    attn_status st;
    int i;
    for (i = 0; i < 4096; ++i) e_buf[i] = (float)(i % 13) - 6.0f;
    t_sentinel(E_C, 1024 * sizeof(float), 77);
    st = attn_sgemm(e->ta, e->tb, e->m, e->n, e->k, e->alpha, e->a, e->lda, e->b, e->ldb, e->beta, e->c, e->ldc, e->threads);
    if (T_CHECK(st == want, "%s: attn_sgemm returned \"%s\", want \"%s\"", label, attn_status_str(st), msg))
        t_status_provoked[want] = 1;
    T_CHECK(want == ATTN_OK || t_sentinel_ok(E_C, 1024 * sizeof(float), 77), "%s: c was written on error", label);
    if (want != ATTN_OK)
        T_CHECK(strstr(msg, "attn_sgemm") != NULL && strstr(msg, field) != NULL, "message \"%s\" does not name \"%s\"", msg, field);
    for (i = 0; i < 2048; ++i)   /* the spans of a (35 floats) and b (52 floats) */
        if ((i < 35 || (i >= 1024 && i < 1024 + 52)) && e_buf[i] != (float)(i % 13) - 6.0f) {
            T_CHECK(0, "%s: a or b was written", label);
            break;
        }
}

static void test_errors(void) {
    ecase e;
    const ptrdiff_t huge = PTRDIFF_MAX / 8;
    e = ebase(); expect("valid base", &e, ATTN_OK, "");
    e = ebase(); e.m = -1; expect("m < 0", &e, ATTN_ERR_GEMM_M, "m must");
    e = ebase(); e.n = -3; expect("n < 0", &e, ATTN_ERR_GEMM_N, "n must");
    e = ebase(); e.k = INT_MIN; expect("k < 0", &e, ATTN_ERR_GEMM_K, "k must");
    e = ebase(); e.threads = -1; expect("n_threads < 0", &e, ATTN_ERR_N_THREADS, "n_threads");
    e = ebase(); e.alpha = (float)NAN; expect("alpha NaN", &e, ATTN_ERR_GEMM_ALPHA, "alpha");
    e = ebase(); e.alpha = (float)INFINITY; expect("alpha inf", &e, ATTN_ERR_GEMM_ALPHA, "alpha");
    e = ebase(); e.beta = (float)-INFINITY; expect("beta -inf", &e, ATTN_ERR_GEMM_BETA, "beta");
    e = ebase(); e.lda = 6; expect("lda < k", &e, ATTN_ERR_GEMM_LDA, "lda");
    e = ebase(); e.ta = 1; e.lda = 4; expect("lda < m (trans_a)", &e, ATTN_ERR_GEMM_LDA, "lda");
    e = ebase(); e.m = 0; e.lda = 0; expect("lda 0 with m = 0", &e, ATTN_ERR_GEMM_LDA, "lda");
    e = ebase(); e.ldb = 6; expect("ldb < k (trans_b)", &e, ATTN_ERR_GEMM_LDB, "ldb");
    e = ebase(); e.tb = 0; e.ldb = 5; expect("ldb < n", &e, ATTN_ERR_GEMM_LDB, "ldb");
    e = ebase(); e.ldc = 5; expect("ldc < n", &e, ATTN_ERR_GEMM_LDC, "ldc");
    e = ebase(); e.ldc = -6; expect("ldc negative", &e, ATTN_ERR_GEMM_LDC, "ldc");
    e = ebase(); e.a = NULL; expect("a NULL", &e, ATTN_ERR_GEMM_NULL_A, "a is NULL");
    e = ebase(); e.b = NULL; expect("b NULL", &e, ATTN_ERR_GEMM_NULL_B, "b is NULL");
    e = ebase(); e.c = NULL; expect("c NULL", &e, ATTN_ERR_GEMM_NULL_C, "c is NULL");
    e = ebase(); e.lda = huge; expect("a extent overflows", &e, ATTN_ERR_GEMM_A_OVERFLOW, "lda");
    e = ebase(); e.ldb = huge; expect("b extent overflows", &e, ATTN_ERR_GEMM_B_OVERFLOW, "ldb");
    e = ebase(); e.ldc = huge; expect("c extent overflows", &e, ATTN_ERR_GEMM_C_OVERFLOW, "ldc");
    e = ebase(); e.c = (float *)E_A + 30; expect("c overlaps a", &e, ATTN_ERR_GEMM_ALIAS, "overlaps");
    e = ebase(); e.c = (float *)E_B - 10; expect("c overlaps b", &e, ATTN_ERR_GEMM_ALIAS, "overlaps");
    e = ebase(); e.c = (float *)E_B - 30; expect("c ends right before b", &e, ATTN_OK, "");
}

void test_gemm(void) {
    test_errors();
    test_degenerate();
    test_hook_type();
    test_shapes();
    test_sweep();
    test_threads();
    printf("      gemm: kernels %s; largest passing error is %.3f of its tolerance\n", attn_kernels(), g_worst);
}
