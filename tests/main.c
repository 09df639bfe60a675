/* tests/main.c - runs every test family; the last line printed is "N passed, N failed" and the
   exit status is non-zero when any check failed. Add a family: write tests/test_<family>.c with
   a void test_<family>(void), declare it in tests/test.h and call it below (before
   test_status_coverage, which must stay last). This file does not define ATTN_IMPLEMENTATION:
   tests/attn_impl.c is the one implementation translation unit. */
#include "test.h"
#include <time.h>

int t_passed = 0, t_failed = 0, t_printed = 0;
int t_status_provoked[ATTN_STATUS_END];

/* ATTN_TEST_ONLY=name (environment) runs just that family; status coverage is then skipped,
   since the other families provoke most codes. For working on one family; make test runs all. */
static const char *only;

static void run_family(const char *name, void (*fn)(void)) {
    int p0 = t_passed, f0 = t_failed;
    clock_t t0;
    if (only && strcmp(only, name) != 0) return;
    t0 = clock();
    t_printed = 0;
    fn();
    printf("%s %-10s %d checks, %d failed (%.1f s cpu)\n", t_failed == f0 ? "ok  " : "FAIL", name,
           (t_passed - p0) + (t_failed - f0), t_failed - f0, (double)(clock() - t0) / CLOCKS_PER_SEC);
    fflush(stdout);
}

int main(void) {
    only = getenv("ATTN_TEST_ONLY");
    if (only && !*only) only = NULL;
    run_family("exact", test_exact);
    run_family("kernels", test_kernels);
    /* backward */
    run_family("backward", test_backward);
    /* gemm */
    run_family("gemm", test_gemm);
    /* layers */
    run_family("layers", test_layers);
    /* generation */
    run_family("generation", test_generation);
    /* amx */
    run_family("amx", test_amx);
    run_family("amx-emu", test_amx_emu);
    /* sparse */
    run_family("sparse", test_sparse);
    run_family("lsh", test_lsh_hf);   /* ATTN_LSH with HF's padding, layout and bucket rule */
    run_family("bigbird-bwd", test_bigbird_bwd);
    run_family("routing-bwd", test_routing_bwd);   /* attn_backward of ATTN_ROUTING */

    /* linear */
    run_family("linear", test_linear);
    run_family("rwkv", test_rwkv);
    run_family("cosformer", test_cosformer);
    run_family("performer", test_performer);
    run_family("linear-bwd", test_linear_bwd);

    /* low-rank */
    run_family("low-rank", test_lowrank);
    run_family("nystrom-bwd", test_nystrom_bwd);

    /* state space */
    run_family("ssm", test_ssm);

    /* cuda (emulated) */

    /* fuzz */

    if (!only) run_family("status", test_status_coverage);   /* keep last: every code was provoked */
    printf("%d passed, %d failed\n", t_passed, t_failed);
    return t_failed != 0;
}
