/* tests/attn_impl.c - the one translation unit of the test binary that compiles attn.h's
   implementation. Its allocations go through a poisoning allocator: every block starts filled
   with 0xFF bytes (NaN as f32, f16 and bf16), so a kernel that reads workspace it never wrote
   fails deterministically instead of depending on what the heap held before. The calls are
   counted (t_attn_mallocs) so tests can check that a caller workspace makes attn_forward
   allocation-free. */
#include <stdlib.h>
#include <string.h>

size_t t_attn_mallocs = 0;
int t_attn_fail_mallocs = 0;   /* non-zero: every allocation fails (out-of-memory paths) */

static void *t_poison_malloc(size_t n) {
    void *p = t_attn_fail_mallocs ? NULL : malloc(n ? n : 1);
    if (p) memset(p, 0xFF, n);
    ++t_attn_mallocs;
    return p;
}

#define ATTN_MALLOC(sz) t_poison_malloc(sz)
#define ATTN_FREE(p) free(p)
#define ATTN_IMPLEMENTATION
#include "../attn.h"
