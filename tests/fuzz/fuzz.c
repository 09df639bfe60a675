/* tests/fuzz/fuzz.c - fuzz targets for every public entry point of attn.h (issue 16).

   Each target turns a byte string into one call (or a short sequence of calls) with random,
   often invalid arguments, and checks what every call must keep:
     - the status is a known code; guard bytes around every buffer are intact (no write, and
       under ASan no read, outside a tensor);
     - on error, every output (and a KV cache with its lens) is byte for byte untouched;
     - on success with finite inputs, no NaN appears in an output;
     - on small valid shapes, agreement with the double references of tests/ref.h (forward,
       decode, merge), a naive loop (sgemm), the standard layer (EL-attention), or exact
       properties (thread counts bitwise equal, RoPE preserves norms, the pool runs every task once).
   Targets: forward backward merge decode layers el sgemm rope pool kinds (every attn_kind of
   ATTN__KIND_LIST, so each family's kinds are fuzzed as they land).

   Two builds of this one file:
     plain driver (default): `fuzz [-n N] [-t SECONDS] [-c CORPUS_DIR] [-s SEED] TARGET...|all`
       runs the files in CORPUS_DIR/TARGET/ first (the fixed seed corpus in tests/fuzz/corpus), then N random
       inputs (seeded, reproducible) or as many as fit in SECONDS; prints executions per target.
     libFuzzer (clang -fsanitize=fuzzer -DFUZZ_LIBFUZZER -DFUZZ_TARGET=forward): one binary per
       target, LLVMFuzzerTestOneInput; `make fuzz` runs each for a bounded time.
   A failed check prints the target and what broke, then aborts (the driver first prints the
   input's seed or file so it can be replayed). */
#include "../test.h"
#include "../ref.h"
#include <time.h>

/* tests/test.h's counters (the test binary defines them in main.c) */
int t_passed = 0, t_failed = 0, t_printed = 0;
int t_status_provoked[ATTN_STATUS_END];
/* t_attn_mallocs: tests/attn_impl.c (the implementation unit, with its poisoning allocator) */

/* ---- input bytes -------------------------------------------------------------------------- */
typedef struct { const uint8_t *p; size_t n, i; } fz;
static unsigned fz_u8(fz *f) { return f->i < f->n ? f->p[f->i++] : 0u; }
static unsigned fz_u16(fz *f) { unsigned a = fz_u8(f); return a | (fz_u8(f) << 8); }
static int fz_int(fz *f, int lo, int hi) { return lo + (int)(fz_u16(f) % (unsigned)(hi - lo + 1)); }
static int fz_chance(fz *f, unsigned in256) { return fz_u8(f) < in256; }
static attn_dtype fz_dtype(fz *f) { unsigned u = fz_u8(f) % 16u; return u < 8 ? ATTN_F32 : u < 12 ? ATTN_F16 : u < 15 ? ATTN_BF16 : (attn_dtype)7; }

static const char *g_target = "?";
static char g_where[2100] = "";
static long g_valid;              /* inputs whose main call returned ATTN_OK (checked against a reference) */   /* the input being run: corpus file or seed and iteration (replay) */
#define FZ_CHECK(cond, ...) do { if (!(cond)) { printf("FUZZ FAIL [%s %s] %s:%d: ", g_target, g_where, __FILE__, __LINE__); \
    printf(__VA_ARGS__); printf("\n"); fflush(stdout); abort(); } } while (0)

/* every attn_kind of ATTN__KIND_LIST (each family's kinds as they land) */
#define FZ_KIND_VALUE(name, value, id, text) value,
static const int g_kinds[] = { ATTN__KIND_LIST(FZ_KIND_VALUE) };
#define N_KINDS ((int)(sizeof g_kinds / sizeof g_kinds[0]))

static int known_status(attn_status s) {
    return (int)s >= 0 && (int)s < (int)ATTN_STATUS_END && attn_status_str(s) != NULL &&
           strstr(attn_status_str(s), "unknown") == NULL;
}

/* -H (cross-ISA mode): an FNV-1a hash of what must not depend on the kernel set: every
   status, the tie rule's windows, the documented bit-exact draws. Builds with other kernels
   (ATTN_NO_AVX512, ATTN_NO_SIMD) must print the same hash per target (make fuzz-isa). */
static unsigned long long g_hash;
static void fz_hash(const void *p, size_t n) {
    const unsigned char *c = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; ++i) { g_hash ^= c[i]; g_hash *= 1099511628211ull; }
}
static void fz_hash_int(int x) { fz_hash(&x, sizeof x); }
/* the status of a checked call: known, and part of the hash */
#define FZ_STATUS(st, ...) do { FZ_CHECK(known_status(st), __VA_ARGS__); fz_hash_int((int)(st)); } while (0)

/* ---- guarded buffers ---------------------------------------------------------------------- */
#define GUARD 64
typedef struct { unsigned char *base; size_t bytes; int after; } gbuf;
static gbuf g_bufs[64];
static int g_nbufs;
static void *gb_alloc_(size_t bytes, int after) {
    unsigned char *b = (unsigned char *)t_xmalloc(bytes + (after ? 2 : 1) * GUARD);
    size_t i;
    for (i = 0; i < GUARD; ++i) { b[i] = (unsigned char)(0xA5 ^ i); if (after) b[GUARD + bytes + i] = (unsigned char)(0x5A ^ i); }
    FZ_CHECK(g_nbufs < 64, "too many buffers");
    g_bufs[g_nbufs].base = b; g_bufs[g_nbufs].bytes = bytes; g_bufs[g_nbufs].after = after; ++g_nbufs;
    return b + GUARD;
}
static void *gb_alloc(size_t bytes) { return gb_alloc_(bytes, 1); }
/* exact: the buffer ends where the allocation ends, so under ASan a read one byte past the
   caller's documented extent faults (issue 27: reads past a broadcast row, W, a filter) */
static void *gx_alloc(size_t bytes) { return gb_alloc_(bytes, 0); }
static void gb_check_free(void) {
    int k;
    size_t i;
    for (k = 0; k < g_nbufs; ++k) {
        const unsigned char *b = g_bufs[k].base;
        for (i = 0; i < GUARD; ++i) {
            FZ_CHECK(b[i] == (unsigned char)(0xA5 ^ i), "guard byte before buffer %d overwritten", k);
            FZ_CHECK(!g_bufs[k].after || b[GUARD + g_bufs[k].bytes + i] == (unsigned char)(0x5A ^ i), "guard byte after buffer %d overwritten", k);
        }
        free(g_bufs[k].base);
    }
    g_nbufs = 0;
}
static void *gb_dup(const void *p, size_t bytes) { void *c = t_xmalloc(bytes); memcpy(c, p, bytes); return c; }

static int dt_ok(attn_dtype d) { return d == ATTN_F32 || d == ATTN_F16 || d == ATTN_BF16; }

/* A tensor of random layout (dense, padded strides, BHSD; inputs: sometimes stride-0 batch) in
   its own guarded buffer, filled with N(0,1) values (outputs: sentinel bytes). */
static attn_tensor fz_tensor(fz *f, t_rng *r, attn_dtype dt, int B, int S, int H, int D, int is_out, size_t *bytes_out) {
    attn_tensor t;
    size_t n, bytes;
    int lay = (int)(fz_u8(f) % 4u), pad = (int)(fz_u8(f) % 3u);
    memset(&t, 0, sizeof t);
    t.dtype = dt; t.batch = B; t.seq = S; t.heads = H; t.dim = D;
    if (lay == 1) { t.stride_head = D + pad; t.stride_seq = (ptrdiff_t)H * (D + pad) + pad; t.stride_batch = (ptrdiff_t)S * t.stride_seq + pad; }
    else if (lay == 2) { t.stride_seq = D + pad; t.stride_head = (ptrdiff_t)S * (D + pad); t.stride_batch = (ptrdiff_t)H * t.stride_head; }
    else if (lay == 3 && !is_out && B > 1) { t.stride_batch = 0; t.stride_seq = (ptrdiff_t)H * D; t.stride_head = D; }
    else if (lay == 3 && !is_out && pad == 2) { /* every stride 0: one row broadcast (never "dense") */ }
    else {                                         /* dense, through the constructor (saturating) */
        attn_tensor dn = attn_tensor_dense(NULL, dt, B, S, H, D);
        t.stride_head = dn.stride_head; t.stride_seq = dn.stride_seq; t.stride_batch = dn.stride_batch;
    }
    if (!dt_ok(dt) || D < 1 || S < 1 || H < 1 || B < 1) n = 16;
    else n = t_extent(&t);
    bytes = n * 4;   /* room for any dtype */
    t.data = gb_alloc(bytes);
    if (is_out) t_sentinel(t.data, bytes, 0xC7);
    else {
        size_t i;
        if (dt_ok(dt)) {
            t_fill_nan(t.data, dt, n);
            if (D >= 1 && S >= 1 && H >= 1 && B >= 1) t_fill_normal(&t, r, 1.0);
        } else for (i = 0; i < bytes; ++i) ((unsigned char *)t.data)[i] = 0;
    }
    if (bytes_out) *bytes_out = bytes;
    return t;
}

#define FZMAX(a, b) ((a) > (b) ? (a) : (b))
static int has_nan(const attn_tensor *t) {
    int b, s, h, d;
    for (b = 0; b < t->batch; ++b) for (s = 0; s < t->seq; ++s) for (h = 0; h < t->heads; ++h)
        for (d = 0; d < t->dim; ++d) { const double x = t_load(t, b, s, h, d); if (x != x) return 1; }
    return 0;
}
static double dt_tol(attn_dtype dt) { return dt == ATTN_F16 ? 2e-3 : dt == ATTN_BF16 ? 1.6e-2 : 0.0; }

/* random masks and options for attn_desc (sometimes out of range: the call must refuse them) */
static void fz_desc(fz *f, attn_desc *d, int B, int Sq, int Sk, int Hq, int *lens_q, int *lens_k, float *slopes, int valid_only) {
    memset(d, 0, sizeof *d);
    d->causal = fz_chance(f, 100);
    if (fz_chance(f, 80)) d->window_left = fz_int(f, 0, Sk + 2);
    if (fz_chance(f, 50)) d->window_right = fz_int(f, 0, Sk + 2);
    if (fz_chance(f, 30)) d->dilation = fz_int(f, 0, 4);
    if (fz_chance(f, 30)) d->sink_tokens = fz_int(f, 0, 4);
    if (fz_chance(f, 20)) d->global_tokens = fz_int(f, 0, 3);
    if (fz_chance(f, 60)) d->scale = (float)fz_int(f, -200, 200) / 100.0f;
    if (fz_chance(f, 30)) d->softcap = (float)fz_int(f, 1, 3000) / 100.0f;
    if (fz_chance(f, 40)) { int h; for (h = 0; h < Hq; ++h) slopes[h] = (float)fz_int(f, -100, 100) / 100.0f; d->alibi_slopes = slopes; }
    if (fz_chance(f, 50)) { int b; for (b = 0; b < B; ++b) lens_k[b] = fz_int(f, 0, Sk); d->seqlens_k = lens_k; }
    if (fz_chance(f, 30)) { int b; for (b = 0; b < B; ++b) lens_q[b] = fz_int(f, 0, Sq); d->seqlens_q = lens_q; }
    d->n_threads = fz_int(f, 0, 3);
    if (!valid_only && fz_chance(f, 40)) {         /* one field out of range */
        switch (fz_u8(f) % 9u) {
        case 0: d->causal = 2; break;
        case 1: d->window_left = -1; break;
        case 2: d->scale = (float)NAN; break;
        case 3: d->softcap = -1.0f; break;
        case 4: d->n_threads = -3; break;
        case 5: if (d->seqlens_k) lens_k[0] = Sk + 1; else d->dilation = -2; break;
        case 6: d->kind = (attn_kind)97; break;
        case 7: d->sink_tokens = -1; break;
        default: if (d->alibi_slopes) slopes[0] = (float)INFINITY; else d->global_tokens = -5; break;
        }
    }
}

/* ---- forward ------------------------------------------------------------------------------ */
static void fz_check_ref(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, const float *lse);

static void target_forward(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int B = fz_int(f, 1, 3), Hkv = fz_int(f, 1, 3), g = fz_int(f, 1, 3), Hq = Hkv * g;
    const int big = fz_chance(f, 20), Sq = fz_int(f, 1, big ? 80 : 12), Sk = fz_int(f, 1, big ? 140 : 20);
    const int D = fz_int(f, 1, 24), Dv = fz_int(f, 1, 24);
    const attn_dtype qt = fz_dtype(f), kt = fz_dtype(f), ot = fz_dtype(f);
    int lens_q[3], lens_k[3], shape_bad = fz_chance(f, 15) ? 1 + (int)(fz_u8(f) % 3u) : 0;
    float slopes[9], *lse = NULL, *bias = NULL;
    attn_desc d;
    attn_tensor q, k, v, o;
    size_t ob, lb = (size_t)B * Hq * Sq * sizeof(float);
    attn_status st;
    fz_desc(f, &d, B, Sq, Sk, Hq, lens_q, lens_k, slopes, 0);
    q = fz_tensor(f, &r, qt, B, Sq, Hq, D, 0, NULL);
    k = fz_tensor(f, &r, kt, B, Sk, Hkv, D, 0, NULL);
    v = fz_tensor(f, &r, kt, B, Sk, Hkv, Dv, 0, NULL);
    o = fz_tensor(f, &r, ot, B, Sq, Hq, Dv, 1, &ob);
    if (shape_bad == 1) o.seq += 1;
    else if (shape_bad == 2) k.dim += 1;
    else if (shape_bad == 3 && Sq > 1) { o.stride_seq = 0; o.stride_head = Dv; o.stride_batch = (ptrdiff_t)Hq * Dv; }
    if (fz_chance(f, 200)) { lse = (float *)gb_alloc(lb); t_sentinel(lse, lb, 0x3C); }
    if (fz_chance(f, 40)) {                        /* dense bias [B|1, H|1, Sq|1, Sk] with some -inf */
        const int bb = fz_chance(f, 128) ? B : 1, bh = fz_chance(f, 128) ? Hq : 1, br = fz_chance(f, 128) ? Sq : 1;
        size_t i, nb = (size_t)bb * bh * br * Sk;
        bias = (float *)gb_alloc(nb * sizeof(float));     /* guarded: a read past its end faults */
        for (i = 0; i < nb; ++i) bias[i] = t_chance(&r, 0.1) ? -INFINITY : (float)t_normal(&r);
        d.bias = attn_bias_dense(bias, bb, bh, br, Sk);
        if (fz_chance(f, 64)) d.bias.stride_batch = d.bias.stride_head = d.bias.stride_q = 0;  /* one broadcast row */
    }
    st = attn_forward(&d, q, k, v, o, lse);
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "out written on error %s", attn_status_str(st));
        FZ_CHECK(!lse || t_sentinel_ok(lse, lb, 0x3C), "lse written on error %s", attn_status_str(st));
    } else fz_check_ref(&d, q, k, v, o, lse);
}

/* ---- backward: guards, untouched on error, finite, bitwise equal for 1 and 3 threads -------- */
static void target_backward(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int B = fz_int(f, 1, 2), Hkv = fz_int(f, 1, 2), g = fz_int(f, 1, 2), Hq = Hkv * g;
    const int Sq = fz_int(f, 1, 40), Sk = fz_int(f, 1, 70), D = fz_int(f, 1, 20), Dv = fz_int(f, 1, 20);
    const attn_dtype qt = fz_dtype(f), kt = fz_dtype(f);
    int lens_q[3], lens_k[3];
    float slopes[4], *lse = (float *)gb_alloc((size_t)B * Hq * Sq * sizeof(float));
    attn_desc d;
    attn_tensor q, k, v, o, dout, dq, dk, dv;
    size_t bq, bk, bv;
    attn_status st;
    fz_desc(f, &d, B, Sq, Sk, Hq, lens_q, lens_k, slopes, 0);
    if (fz_chance(f, 40)) { d.dropout_p = (float)fz_int(f, 0, 99) / 100.0f; d.dropout_seed = fz_u16(f); }
    q = fz_tensor(f, &r, qt, B, Sq, Hq, D, 0, NULL);
    k = fz_tensor(f, &r, kt, B, Sk, Hkv, D, 0, NULL);
    v = fz_tensor(f, &r, kt, B, Sk, Hkv, Dv, 0, NULL);
    o = fz_tensor(f, &r, ATTN_F32, B, Sq, Hq, Dv, 1, NULL);
    dout = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, Dv, 0, NULL);
    dq = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, D, 1, &bq);
    dk = fz_tensor(f, &r, fz_dtype(f), B, Sk, Hkv, D, 1, &bk);
    dv = fz_tensor(f, &r, fz_dtype(f), B, Sk, Hkv, Dv, 1, &bv);
    if (attn_forward(&d, q, k, v, o, lse) != ATTN_OK) { d.dropout_p = 0.0f; memset(&d, 0, sizeof d); attn_forward(&d, q, k, v, o, lse); }
    if (!dt_ok(dout.dtype) || dout.batch < 1) return;
    t_sentinel(dq.data, bq, 0xC7); t_sentinel(dk.data, bk, 0xC7); t_sentinel(dv.data, bv, 0xC7);
    st = attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv);
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(dq.data, bq, 0xC7) && t_sentinel_ok(dk.data, bk, 0xC7) && t_sentinel_ok(dv.data, bv, 0xC7),
                 "a gradient written on error %s", attn_status_str(st));
    } else {
        void *c1 = gb_dup(dq.data, bq), *c2 = gb_dup(dk.data, bk), *c3 = gb_dup(dv.data, bv);
        FZ_CHECK(!has_nan(&dq) && !has_nan(&dk) && !has_nan(&dv), "NaN gradient from finite inputs");
        d.n_threads = d.n_threads == 1 ? 3 : 1;
        FZ_CHECK(attn_backward(&d, q, k, v, o, dout, lse, dq, dk, dv) == ATTN_OK, "second backward failed");
        FZ_CHECK(memcmp(c1, dq.data, bq) == 0 && memcmp(c2, dk.data, bk) == 0 && memcmp(c3, dv.data, bv) == 0,
                 "backward differs between thread counts");
        free(c1); free(c2); free(c3);
    }
}

/* ---- merge: against ref_merge; in place (out = parts[0]) ---------------------------------- */
static void target_merge(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int n = fz_int(f, 0, 4), B = fz_int(f, 1, 2), S = fz_int(f, 1, 6), H = fz_int(f, 1, 3), Dv = fz_int(f, 1, 20);
    attn_tensor parts[4], o;
    const float *pl[4];
    float *lse = NULL;
    size_t ob, lb = (size_t)B * H * S * sizeof(float);
    int p, inplace = n > 0 && fz_chance(f, 50);
    attn_status st;
    for (p = 0; p < n; ++p) {
        float *l = (float *)gb_alloc(lb);
        size_t i;
        parts[p] = fz_tensor(f, &r, fz_dtype(f), B, S, H, Dv, 0, NULL);
        if (fz_chance(f, 10)) parts[p].dim += 1;
        for (i = 0; i < lb / sizeof(float); ++i) l[i] = t_chance(&r, 0.2) ? -INFINITY : (float)(3.0 * t_normal(&r));
        pl[p] = l;
    }
    o = fz_tensor(f, &r, fz_dtype(f), B, S, H, Dv, 1, &ob);
    if (inplace && dt_ok(parts[0].dtype)) o = parts[0];
    if (fz_chance(f, 200)) { lse = (float *)gb_alloc(lb); t_sentinel(lse, lb, 0x3C); }
    {
        double *ro = NULL, *rl = NULL;
        void *snap = inplace ? NULL : gb_dup(o.data, ob);
        if (n > 0 && dt_ok(parts[0].dtype)) {
            int ok = 1;
            for (p = 0; p < n; ++p) ok &= dt_ok(parts[p].dtype) && parts[p].dim == Dv;
            if (ok) {
                ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * S * H * Dv); rl = (double *)t_xmalloc(lb * 2);
                ref_merge(n, parts, pl, ro, rl);
            }
        }
        st = attn_merge(n, n ? parts : NULL, n ? pl : NULL, o, lse);
        FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
        if (st != ATTN_OK) {
            FZ_CHECK(inplace || memcmp(snap, o.data, ob) == 0, "out written on error %s", attn_status_str(st));
            FZ_CHECK(!lse || t_sentinel_ok(lse, lb, 0x3C), "lse written on error");
        } else if (ro) {
            int b, s, h, c;
            const double tol = 2e-5 + dt_tol(o.dtype);
            FZ_CHECK(!has_nan(&o), "NaN from finite parts");
            for (b = 0; b < B; ++b) for (s = 0; s < S; ++s) for (h = 0; h < H; ++h) for (c = 0; c < Dv; ++c) {
                const double want = ro[(((size_t)b * S + s) * H + h) * Dv + c], got = t_load(&o, b, s, h, c);
                FZ_CHECK(fabs(got - want) <= tol * (1.0 + fabs(want)) * 4.0, "merge out %.9g, reference %.9g", got, want);
            }
        }
        free(ro); free(rl); free(snap);
    }
}

/* ---- decode and the cache helpers --------------------------------------------------------- */
static void target_decode(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int B = fz_int(f, 1, 3), Hkv = fz_int(f, 1, 2), g = fz_int(f, 1, 3), Hq = Hkv * g, D = fz_int(f, 1, 20), Dv = fz_int(f, 1, 20);
    const int paged = fz_chance(f, 128), ps = paged ? fz_int(f, 1, 8) : 0, maxp = fz_int(f, 1, 5);
    const int n_pages = paged ? fz_int(f, 1, B * maxp + 2) : B, seq = paged ? ps : fz_int(f, 1, 40);
    const attn_dtype ct = fz_dtype(f);
    int *lens = (int *)gb_alloc(sizeof(int) * 3), *table = (int *)gb_alloc(sizeof(int) * 3 * 5), op, i;
    attn_kv_cache c;
    size_t kb, vb;
    memset(&c, 0, sizeof c);
    c.k = fz_tensor(f, &r, ct, n_pages, seq, Hkv, D, 1, &kb);
    c.v = fz_tensor(f, &r, ct, n_pages, seq, Hkv, Dv, 1, &vb);
    if (dt_ok(ct)) { t_fill_normal(&c.k, &r, 1.0); t_fill_normal(&c.v, &r, 1.0); }
    c.lens = lens; c.batch = B; c.page_size = ps; c.block_table = paged ? table : NULL; c.max_pages = maxp;
    for (i = 0; i < 3 * 5; ++i) table[i] = fz_chance(f, 8) ? fz_int(f, -2, n_pages + 2) : fz_int(f, 0, n_pages - 1);
    for (i = 0; i < 3; ++i) lens[i] = 0;
    for (op = 0; op < 6; ++op) {
        const int what = (int)(fz_u8(f) % 5u), S = fz_int(f, 1, 6);
        void *sk = gb_dup(c.k.data, kb), *sv = gb_dup(c.v.data, vb);
        int sl[3], n_new[3];
        attn_status st;
        memcpy(sl, lens, sizeof sl);
        for (i = 0; i < B; ++i) n_new[i] = fz_int(f, 0, S + (fz_chance(f, 10) ? 1 : 0));
        if (what <= 1) {
            attn_tensor kn = fz_tensor(f, &r, fz_dtype(f), B, S, Hkv, D, 0, NULL), vn = fz_tensor(f, &r, fz_dtype(f), B, S, Hkv, Dv, 0, NULL);
            st = what == 0 ? attn_kv_append(&c, kn, vn, fz_chance(f, 128) ? n_new : NULL)
                           : attn_kv_append_streaming(&c, fz_int(f, -1, 3), fz_int(f, 0, 8), kn, vn, fz_chance(f, 128) ? n_new : NULL);
        } else if (what == 2) {
            st = attn_kv_evict(&c, fz_int(f, -1, B), fz_int(f, -1, 4), fz_int(f, -1, 4));
        } else if (what == 4) {                    /* ATTN_LSH's decode (HF's cached step): often bad fields, buckets */
            const int Sq = fz_int(f, 1, 3), nh = fz_int(f, 0, 3), cap = paged ? ps * maxp : seq;
            int *bk = (int *)gb_alloc(sizeof(int) * (size_t)B * cap * Hq * 3), sq[3];
            float *lse = (float *)gb_alloc((size_t)B * Hq * Sq * sizeof(float));
            attn_desc d;
            attn_tensor q = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, D, 0, NULL), o;
            size_t ob;
            memset(&d, 0, sizeof d);
            d.kind = ATTN_LSH; d.lsh.bucket_size = fz_int(f, -1, 5); d.lsh.n_hashes = nh; d.lsh.n_buckets = 2 * fz_int(f, 0, 3);
            d.lsh.chunks_before = fz_int(f, -2, 3); d.lsh.chunks_after = fz_int(f, -1, 2); d.lsh.hf_merge = fz_int(f, 0, 2);
            d.causal = fz_int(f, 0, 1); d.n_threads = fz_int(f, 0, 3); d.softcap = fz_chance(f, 16) ? 1.0f : 0.0f;
            for (i = 0; i < B * cap * Hq * 3; ++i) bk[i] = fz_chance(f, 4) ? fz_int(f, -1, 40) : fz_int(f, 0, 4);
            for (i = 0; i < 3; ++i) sq[i] = fz_int(f, 0, Sq + 1);
            d.lsh.buckets = fz_chance(f, 200) ? bk : NULL;
            d.seqlens_q = fz_chance(f, 40) ? sq : NULL;
            o = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, Dv, 1, &ob);
            st = attn_decode(&d, q, &c, o, lse);
            FZ_STATUS(st, "lsh decode: unknown status %d", (int)st); g_valid += st == ATTN_OK;
            if (st != ATTN_OK) FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "lsh decode wrote out on error %s", attn_status_str(st));
            else FZ_CHECK(!has_nan(&o), "lsh decode NaN from finite inputs");
            free(sk); free(sv);
            continue;
        } else {                                   /* decode vs attn_forward's reference on the gathered cache */
            const int Sq = fz_int(f, 1, 3);
            int lq[3], lk[3];
            float slopes[6], *lse = (float *)gb_alloc((size_t)B * Hq * Sq * sizeof(float));
            attn_desc d;
            attn_tensor q = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, D, 0, NULL), o;
            size_t ob;
            fz_desc(f, &d, B, Sq, 8, Hq, lq, lk, slopes, 0);
            d.seqlens_k = NULL;
            o = fz_tensor(f, &r, fz_dtype(f), B, Sq, Hq, Dv, 1, &ob);
            st = attn_decode(&d, q, &c, o, lse);
            FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
            if (st != ATTN_OK) FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "decode wrote out on error %s", attn_status_str(st));
            else {
                int mx = 1, b, s, h, cc, t;
                attn_tensor gk, gv;
                double *ro, *rl;
                for (b = 0; b < B; ++b) mx = FZMAX(mx, lens[b]);
                gk = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * mx * Hkv * D), ATTN_F32, B, mx, Hkv, D);
                gv = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * mx * Hkv * Dv), ATTN_F32, B, mx, Hkv, Dv);
                for (b = 0; b < B; ++b) for (t = 0; t < mx; ++t) for (h = 0; h < Hkv; ++h) {
                    const int pg = paged ? (t < lens[b] ? table[b * maxp + t / ps] : 0) : b, row = paged ? t % ps : t;
                    for (cc = 0; cc < D; ++cc) t_store(&gk, b, t, h, cc, t < lens[b] ? t_load(&c.k, pg, row, h, cc) : 0.0);
                    for (cc = 0; cc < Dv; ++cc) t_store(&gv, b, t, h, cc, t < lens[b] ? t_load(&c.v, pg, row, h, cc) : 0.0);
                }
                for (b = 0; b < B; ++b) lk[b] = lens[b];
                d.seqlens_k = lk;
                ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * Hq * Dv); rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq);
                ref_attention(&d, q, gk, gv, ro, rl);
                FZ_CHECK(!has_nan(&o), "decode NaN from finite inputs");
                for (b = 0; b < B; ++b) for (s = 0; s < Sq; ++s) for (h = 0; h < Hq; ++h) {
                    double m = 1.0;
                    for (cc = 0; cc < Dv; ++cc) m = FZMAX(m, fabs(ro[(((size_t)b * Sq + s) * Hq + h) * Dv + cc]));
                    for (cc = 0; cc < Dv; ++cc) {
                        const double want = ro[(((size_t)b * Sq + s) * Hq + h) * Dv + cc], got = t_load(&o, b, s, h, cc);
                        FZ_CHECK(fabs(got - want) <= (2e-4 + dt_tol(o.dtype)) * m, "decode out %.9g, reference %.9g", got, want);
                    }
                }
                free(gk.data); free(gv.data); free(ro); free(rl);
            }
            free(sk); free(sv);
            continue;
        }
        FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
        if (st != ATTN_OK)
            FZ_CHECK(memcmp(sk, c.k.data, kb) == 0 && memcmp(sv, c.v.data, vb) == 0 && memcmp(sl, lens, sizeof sl) == 0,
                     "cache op %d changed the cache or lens on error %s", what, attn_status_str(st));
        free(sk); free(sv);
    }
}

/* ---- layers: guards, untouched on error, finite, bitwise equal for 1 and 2 threads --------- */
static float *fz_floats(t_rng *r, size_t n, double sigma) {
    float *p = (float *)gb_alloc(n * sizeof(float));
    size_t i;
    for (i = 0; i < n; ++i) p[i] = (float)(sigma * t_normal(r));
    return p;
}
static void target_layers(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    attn_layer_desc d;
    attn_layer_weights w;
    const int heads = fz_int(f, 1, 4), dk = fz_int(f, 1, 6), dm = heads * dk, B = fz_int(f, 1, 2);
    const int lq = fz_int(f, 1, 9), self = fz_chance(f, 128), lk = self ? lq : fz_int(f, 1, 9), ctx = fz_int(f, 1, 10);
    const size_t nw = (size_t)dm * dm;
    float *xq, *xkv, *out;
    size_t ob = (size_t)B * lq * dm * sizeof(float);
    attn_status st;
    int cuq[5], cuk[5];
    memset(&d, 0, sizeof d); memset(&w, 0, sizeof w);
    d.kind = (attn_layer_kind)fz_int(f, 0, 6);
    d.d_model = fz_chance(f, 8) ? 0 : dm; d.heads = heads; d.context = ctx;
    d.kv_heads = d.kind == ATTN_LAYER_STANDARD && fz_chance(f, 80) ? 1 : 0;
    d.attn.causal = fz_chance(f, 100);
    if (fz_chance(f, 40)) d.attn.kind = (attn_kind)g_kinds[fz_u8(f) % N_KINDS];   /* any kind: Direct refuses all but softmax */
    if (d.attn.kind == ATTN_LINFORMER) { d.attn.linformer.k = fz_int(f, 0, 3); d.attn.linformer.n = 9; d.attn.linformer.shared_kv = fz_chance(f, 64); }
    if (d.attn.kind == ATTN_NYSTROM) { d.attn.nystrom.landmarks = 1; d.attn.nystrom.conv_kernel = fz_chance(f, 128) ? 3 : 0; }
    d.n_threads = fz_int(f, 0, 2);
    if (d.attn.kind == ATTN_BIGBIRD) d.attn.bigbird.block = fz_int(f, 1, 2);
    if (d.attn.kind == ATTN_LSH) d.attn.lsh.bucket_size = fz_int(f, 1, 2);
    if (fz_chance(f, 48)) {   /* packed sequences: cut points drawn (usually ascending, ending at the rows), batch as drawn */
        const int n = fz_int(f, 1, 4), sorted = !fz_chance(f, 24), cover = !fz_chance(f, 24);
        int u, v, t;
        cuq[0] = cuk[0] = 0;
        for (u = 1; u <= n; ++u) { cuq[u] = fz_int(f, 0, lq); cuk[u] = self ? cuq[u] : fz_int(f, 0, lk); }
        if (cover) { cuq[n] = lq; cuk[n] = lk; }
        for (u = 1; sorted && u <= n; ++u)
            for (v = u + 1; v <= n; ++v) {
                if (cuq[v] < cuq[u]) { t = cuq[u]; cuq[u] = cuq[v]; cuq[v] = t; }
                if (cuk[v] < cuk[u]) { t = cuk[u]; cuk[u] = cuk[v]; cuk[v] = t; }
            }
        d.attn.cu_seqlens_q = cuq; d.attn.cu_seqlens_k = cuk; d.attn.varlen_batch = n;
    }
    w.wq = fz_floats(&r, nw, 0.3); w.wk = fz_floats(&r, nw, 0.3); w.wv = fz_floats(&r, nw, 0.3); w.wo = fz_floats(&r, nw, 0.3);
    if (fz_chance(f, 128)) { w.bq = fz_floats(&r, (size_t)dm, 0.1); w.bk = fz_floats(&r, (size_t)dm, 0.1); w.bv = fz_floats(&r, (size_t)dm, 0.1); w.bo = fz_floats(&r, (size_t)dm, 0.1); }
    w.wa = fz_floats(&r, (size_t)ctx * ctx, 0.3); w.ba = fz_floats(&r, (size_t)ctx, 0.1); w.wd = fz_floats(&r, (size_t)ctx * ctx, 0.3);
    w.e = fz_floats(&r, (size_t)heads * 3 * 9, 0.3); w.f = fz_chance(f, 20) ? NULL : fz_floats(&r, (size_t)heads * 3 * 9, 0.3);
    w.conv = fz_floats(&r, (size_t)heads * 3, 0.3);
    if (fz_chance(f, 10)) w.wo = NULL;
    xq = fz_floats(&r, (size_t)B * lq * dm, 1.0); xkv = self ? NULL : fz_floats(&r, (size_t)B * lk * dm, 1.0);
    out = (float *)gb_alloc(ob); t_sentinel(out, ob, 0xC7);
    if (fz_chance(f, 80)) {                        /* the backward and the workspace query: a status for every attn.kind, never an abort */
        const size_t gb = nw * sizeof(float);
        float *dout = fz_floats(&r, (size_t)B * lq * dm, 1.0), *dxq = (float *)gb_alloc(ob), *dxkv = self ? NULL : (float *)gb_alloc((size_t)B * lk * dm * sizeof(float));
        attn_layer_grads g;
        size_t wsb = 0;
        memset(&g, 0, sizeof g);
        g.wq = (float *)gb_alloc(gb); g.wo = (float *)gb_alloc(gb);
        t_sentinel(dxq, ob, 0xC5); t_sentinel(g.wq, gb, 0xC5); t_sentinel(g.wo, gb, 0xC5);
        if (dxkv) t_sentinel(dxkv, (size_t)B * lk * dm * sizeof(float), 0xC5);
        st = attn_layer_backward(&d, &w, B, lq, lk, xq, xkv, dout, dxq, dxkv, &g);
        FZ_STATUS(st, "layer backward: unknown status %d", (int)st);
        FZ_CHECK(st != ATTN_OK || d.attn.kind == ATTN_SOFTMAX || d.kind < ATTN_LAYER_DIRECT, "layer backward accepted attn.kind %s in a Direct layer", attn_kind_name(d.attn.kind));
        if (st != ATTN_OK)
            FZ_CHECK(t_sentinel_ok(dxq, ob, 0xC5) && t_sentinel_ok(g.wq, gb, 0xC5) && t_sentinel_ok(g.wo, gb, 0xC5) &&
                     (!dxkv || t_sentinel_ok(dxkv, (size_t)B * lk * dm * sizeof(float), 0xC5)), "layer gradient written on error %s", attn_status_str(st));
        else {
            size_t i;
            for (i = 0; i < ob / sizeof(float); ++i) FZ_CHECK(dxq[i] == dxq[i], "layer backward NaN from finite inputs");
        }
        st = attn_layer_workspace_size(&d, fz_chance(f, 128), B, lq, lk, &wsb);
        FZ_STATUS(st, "layer workspace: unknown status %d", (int)st);
        FZ_CHECK(st != ATTN_OK || d.attn.kind == ATTN_SOFTMAX || d.kind < ATTN_LAYER_DIRECT, "layer workspace query accepted attn.kind %s in a Direct layer", attn_kind_name(d.attn.kind));
    }
    st = attn_layer_forward(&d, &w, B, lq, lk, xq, xkv, out);
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    FZ_CHECK(st != ATTN_OK || d.attn.kind == ATTN_SOFTMAX || d.kind < ATTN_LAYER_DIRECT, "layer forward accepted attn.kind %s in a Direct layer", attn_kind_name(d.attn.kind));
    if (st != ATTN_OK) FZ_CHECK(t_sentinel_ok(out, ob, 0xC7), "layer out written on error %s", attn_status_str(st));
    else {
        float *c1 = (float *)gb_dup(out, ob);
        size_t i;
        for (i = 0; i < ob / sizeof(float); ++i) FZ_CHECK(out[i] == out[i], "layer NaN from finite inputs");
        d.n_threads = d.n_threads == 1 ? 2 : 1;
        FZ_CHECK(attn_layer_forward(&d, &w, B, lq, lk, xq, xkv, out) == ATTN_OK, "second layer call failed");
        FZ_CHECK(memcmp(c1, out, ob) == 0, "layer output differs between thread counts");
        free(c1);
    }
}

/* ---- EL-attention == the standard layer (the paper's lossless claim) ----------------------- */
static void target_el(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    attn_el_desc e;
    attn_layer_desc ld;
    attn_layer_weights w;
    const int heads = fz_int(f, 1, 4), dk = fz_int(f, 1, 6), dm = heads * dk, B = fz_int(f, 1, 3), beams = fz_int(f, 1, 3);
    const int L = fz_int(f, 1, 90);
    const size_t nw = (size_t)dm * dm, ob = (size_t)B * beams * dm * sizeof(float);
    int lens[3], i;
    float *x, *h, *out, *ref;
    attn_status st;
    memset(&e, 0, sizeof e); memset(&w, 0, sizeof w);
    e.d_model = dm; e.heads = heads; e.batch = B; e.beams = beams; e.src_len = L; e.n_threads = fz_int(f, 0, 3);
    if (fz_chance(f, 60)) { for (i = 0; i < B; ++i) lens[i] = fz_int(f, 0, L + 1); e.src_lens = lens; }
    if (fz_chance(f, 20)) e.heads = heads + 1;
    if (fz_chance(f, 10)) { e.batch = fz_chance(f, 128) ? INT_MAX : -1; e.src_len = INT_MAX; e.src_lens = NULL; }   /* sizes past size_t: refused before any allocation */
    w.wq = fz_floats(&r, nw, 0.3); w.wk = fz_floats(&r, nw, 0.3); w.wv = fz_floats(&r, nw, 0.3); w.wo = fz_floats(&r, nw, 0.3);
    if (fz_chance(f, 128)) { w.bq = fz_floats(&r, (size_t)dm, 0.1); w.bk = fz_floats(&r, (size_t)dm, 0.1); w.bv = fz_floats(&r, (size_t)dm, 0.1); w.bo = fz_floats(&r, (size_t)dm, 0.1); }
    x = fz_floats(&r, (size_t)B * beams * dm, 1.0); h = fz_floats(&r, (size_t)B * L * dm, 1.0);
    out = (float *)gb_alloc(ob); t_sentinel(out, ob, 0xC7);
    st = attn_el_attention(&e, &w, x, h, out);
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) { FZ_CHECK(t_sentinel_ok(out, ob, 0xC7), "EL out written on error %s", attn_status_str(st)); return; }
    memset(&ld, 0, sizeof ld);
    ld.d_model = dm; ld.heads = e.heads;
    if (e.src_lens) ld.attn.seqlens_k = lens;
    ref = (float *)gb_alloc(ob);
    FZ_CHECK(attn_layer_forward(&ld, &w, B, beams, L, x, h, ref) == ATTN_OK, "reference layer call failed");
    for (i = 0; i < (int)(ob / sizeof(float)); ++i)
        FZ_CHECK(fabs((double)out[i] - ref[i]) <= 1e-4 * (1.0 + fabs((double)ref[i])), "EL out[%d] = %.9g, standard layer %.9g (heads %d dm %d B %d beams %d L %d lens %s)", i, (double)out[i],
                 (double)ref[i], heads, dm, B, beams, L, e.src_lens ? "given" : "NULL");
}

/* ---- sgemm against a double loop ----------------------------------------------------------- */
static void target_sgemm(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int m = fz_int(f, 0, 40), n = fz_int(f, 0, 40), k = fz_int(f, 0, 40), ta = fz_chance(f, 128), tb = fz_chance(f, 128);
    const int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    const ptrdiff_t lda = FZMAX(1, ac) + fz_int(f, fz_chance(f, 10) ? -2 : 0, 3), ldb = FZMAX(1, bc) + fz_int(f, fz_chance(f, 10) ? -2 : 0, 3);
    const ptrdiff_t ldc = FZMAX(1, n) + fz_int(f, fz_chance(f, 10) ? -2 : 0, 3);
    const float alpha = (float)fz_int(f, -300, 300) / 100.0f, beta = fz_chance(f, 8) ? (float)NAN : (float)fz_int(f, -2, 2) / 2.0f;
    const size_t na = (size_t)FZMAX(1, ar) * (size_t)FZMAX(1, lda), nb = (size_t)FZMAX(1, br) * (size_t)FZMAX(1, ldb), nc = (size_t)FZMAX(1, m) * (size_t)FZMAX(1, ldc);
    float *a = fz_floats(&r, na, 1.0), *b = fz_floats(&r, nb, 1.0), *c = fz_floats(&r, nc, 1.0), *c0 = (float *)gb_dup(c, nc * sizeof(float));
    const int alias = fz_chance(f, 10);
    attn_status st = attn_sgemm(ta, tb, m, n, k, alpha, a, lda, alias ? c : b, ldb, beta, c, ldc, fz_int(f, 0, 3));
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) FZ_CHECK(memcmp(c0, c, nc * sizeof(float)) == 0, "c written on error %s", attn_status_str(st));
    else {
        int i, j, p;
        FZ_CHECK(!alias || m == 0 || n == 0 || k == 0, "aliased c accepted");
        for (i = 0; i < m; ++i) for (j = 0; j < n; ++j) {
            double s = 0.0, sa = 0.0, want;
            for (p = 0; p < k; ++p) {
                const double x = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p], y = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
                s += x * y; sa += fabs(x * y);
            }
            want = alpha * s + (beta != 0.0f ? beta * c0[(size_t)i * ldc + j] : 0.0);
            FZ_CHECK(fabs(c[(size_t)i * ldc + j] - want) <= 1e-5 * (fabs(alpha) * sa + fabs(beta * c0[(size_t)i * ldc + j]) + 1e-30) + 1e-30,
                     "sgemm c[%d][%d] = %.9g, reference %.9g", i, j, (double)c[(size_t)i * ldc + j], want);
        }
        for (i = 0; i < m; ++i) for (j = n; j < ldc; ++j) FZ_CHECK(memcmp(&c[(size_t)i * ldc + j], &c0[(size_t)i * ldc + j], 4) == 0, "sgemm wrote past n");
    }
    free(c0);
}

/* ---- RoPE: rotations keep each row's norm; untouched on error ------------------------------ */
static void target_rope(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int B = fz_int(f, 1, 2), S = fz_int(f, 1, 8), H = fz_int(f, 1, 3), D = fz_int(f, 1, 24);
    attn_desc d;
    attn_tensor x = fz_tensor(f, &r, fz_dtype(f), B, S, H, D, 0, NULL);
    int *pos = NULL, i;
    void *snap;
    size_t bytes;
    attn_status st;
    memset(&d, 0, sizeof d);
    d.rope = fz_int(f, 0, 3);
    d.rope_dim = fz_chance(f, 128) ? fz_int(f, -1, D + 1) : 0;
    if (fz_chance(f, 100)) d.rope_base = (float)fz_int(f, -1, 20000);
    if (fz_chance(f, 60)) d.rope_scaling = (float)fz_int(f, -1, 8) / 2.0f;
    if (fz_chance(f, 128)) { pos = (int *)gb_alloc(sizeof(int) * (size_t)B * S); for (i = 0; i < B * S; ++i) pos[i] = fz_int(f, 0, 5000); }
    if (!dt_ok(x.dtype)) { st = attn_rope_apply(&d, x, pos); FZ_CHECK(st != ATTN_OK, "bad dtype accepted"); return; }
    bytes = t_extent(&x) * t_dt_size(x.dtype);
    snap = gb_dup(x.data, bytes);
    st = attn_rope_apply(&d, x, pos);
    FZ_STATUS(st, "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) FZ_CHECK(memcmp(snap, x.data, bytes) == 0, "x written on error %s", attn_status_str(st));
    else {
        attn_tensor x0 = x;
        int b, s, h, c;
        x0.data = snap;
        for (b = 0; b < B; ++b) for (s = 0; s < S; ++s) for (h = 0; h < H; ++h) {
            double n0 = 0.0, n1 = 0.0;
            for (c = 0; c < D; ++c) { const double a = t_load(&x0, b, s, h, c), y = t_load(&x, b, s, h, c); n0 += a * a; n1 += y * y; FZ_CHECK(y == y, "RoPE NaN"); }
            FZ_CHECK(fabs(sqrt(n1) - sqrt(n0)) <= (1e-5 + 2.0 * dt_tol(x.dtype)) * (1.0 + sqrt(n0)), "RoPE changed a row's norm: %g -> %g", sqrt(n0), sqrt(n1));
        }
    }
    free(snap);
}

/* ---- the pool: every task exactly once; attn_forward through it == 1 thread, bitwise -------- */
static void pool_task(void *ctx, int i, int thread) { (void)thread; ((int *)ctx)[i] += 1; }
static void target_pool(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int nt = fz_int(f, 0, 4), tasks = fz_int(f, 0, 300), req = fz_int(f, 0, 6);
    attn_pool *pool = attn_pool_create(nt, fz_int(f, 0, 50));
    int *cnt = (int *)gb_alloc(sizeof(int) * (size_t)(tasks + 1)), i;
    for (i = 0; i <= tasks; ++i) cnt[i] = 0;
    attn_pool_parallel(pool, tasks, req, pool_task, cnt);
    for (i = 0; i < tasks; ++i) FZ_CHECK(cnt[i] == 1, "pool ran task %d %d times", i, cnt[i]);
    FZ_CHECK(cnt[tasks] == 0, "pool ran a task past n_tasks");
    {
        const int B = fz_int(f, 1, 2), S = fz_int(f, 1, 70), H = fz_int(f, 1, 3), D = fz_int(f, 1, 20);
        attn_desc d;
        attn_tensor q = fz_tensor(f, &r, ATTN_F32, B, S, H, D, 0, NULL), k = fz_tensor(f, &r, ATTN_F32, B, S, H, D, 0, NULL);
        attn_tensor o1 = fz_tensor(f, &r, ATTN_F32, B, S, H, D, 1, NULL), o2 = o1;
        size_t ob = t_extent(&o1) * 4;
        o2.data = gb_alloc(ob);
        memset(o1.data, 0, ob); memset(o2.data, 0, ob);
        memset(&d, 0, sizeof d);
        d.causal = fz_chance(f, 128); d.n_threads = 1;
        FZ_CHECK(attn_forward(&d, q, k, k, o1, NULL) == ATTN_OK, "pool reference forward");
        d.parallel = attn_pool_parallel; d.parallel_user = pool; d.n_threads = req;
        FZ_CHECK(attn_forward(&d, q, k, k, o2, NULL) == ATTN_OK, "forward on the pool");
        FZ_CHECK(memcmp(o1.data, o2.data, ob) == 0, "forward on the pool differs from 1 thread");
        ++g_valid;
    }
    attn_pool_destroy(pool);
}

/* ---- every attn_kind (ATTN__KIND_LIST: each family's kinds as they land), default parameters:
   guards, untouched on error, no NaN from finite inputs, bitwise equal for 1 and 3 threads ---- */
static void fz_kind_backward(fz *f, t_rng *r, attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, float *lse);
static void target_kinds(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const int B = fz_int(f, 1, 2), Hkv = fz_int(f, 1, 2), g = fz_int(f, 1, 2), Hq = Hkv * g;
    const int Sq = fz_int(f, 1, 40), Sk = fz_chance(f, 60) ? Sq : fz_int(f, 1, 70), D = fz_int(f, 1, 20), Dv = fz_int(f, 1, 20);
    const attn_dtype qt = fz_dtype(f), kt = fz_dtype(f), ot = fz_dtype(f);
    int lens_q[3], lens_k[3];
    float slopes[4], *lse = NULL;
    attn_desc d;
    attn_tensor q, k, v, o;
    size_t ob, lb = (size_t)B * Hq * Sq * sizeof(float);
    attn_status st;
    int projected_rows = -1;                        /* features / conv_kernel of a caller's array (-1: none) */
    fz_desc(f, &d, B, Sq, Sk, Hq, lens_q, lens_k, slopes, 0);
    if (fz_chance(f, 160)) {                        /* most calls plain: kinds refuse masks they lack */
        const int kind = d.kind;
        memset(&d, 0, sizeof d);
        d.kind = (attn_kind)kind; d.causal = fz_chance(f, 128); d.n_threads = fz_int(f, 0, 3);
    }
    if ((int)d.kind != 97) d.kind = (attn_kind)g_kinds[fz_u8(f) % N_KINDS];
    if (d.kind == ATTN_BIGBIRD && fz_chance(f, 160)) {    /* blocks that divide Sq: padding (seqlens_q/_k) and every multiplicity run */
        d.bigbird.block = fz_chance(f, 128) ? 1 : Sq;
        d.bigbird.random_blocks = fz_int(f, 0, 3); d.bigbird.multiplicity = fz_int(f, 0, 3);   /* 3: refused */
        if (fz_chance(f, 128)) {
            int b;
            for (b = 0; b < B; ++b) { lens_k[b] = fz_int(f, 0, Sk); lens_q[b] = fz_chance(f, 128) && lens_k[b] <= Sq ? lens_k[b] : fz_int(f, 0, Sq); }
            d.seqlens_q = lens_q; d.seqlens_k = lens_k;
        }
    }
    if (d.kind == ATTN_PERFORMER && fz_chance(f, 128)) {   /* a caller's W of exactly `features` rows; features 0 must be refused (issue 27 item 3) */
        const int m = fz_chance(f, 60) ? 0 : fz_int(f, 1, 12), rows = m ? m : fz_int(f, 1, 12);
        float *W = (float *)gx_alloc(sizeof(float) * (size_t)rows * D);
        int i;
        for (i = 0; i < rows * D; ++i) W[i] = (float)t_normal(&r);
        d.performer.projection = W; d.performer.projection_dim = D; d.performer.features = m;
        projected_rows = m;
    }
    if (d.kind == ATTN_PERFORMER && fz_chance(f, 64)) {    /* issue 28: relu_normalize (2 is refused), an exact 0 eps (softmax kernel) */
        d.performer.relu_normalize = fz_int(f, 0, 2);
        if (d.performer.kernel == ATTN_PERFORMER_SOFTMAX && fz_chance(f, 128)) d.performer.eps = ATTN_EPS_ZERO;
    }
    if (d.kind == ATTN_LONGFORMER && fz_chance(f, 128)) {  /* issue 28: per-token global positions, exactly [B][Sk] bytes */
        unsigned char *gm = (unsigned char *)gx_alloc((size_t)B * Sk);
        int i;
        for (i = 0; i < B * Sk; ++i) gm[i] = (unsigned char)(fz_chance(f, 40) ? fz_u8(f) | 1 : 0);
        d.longformer.global_mask = gm;
        if (fz_chance(f, 20)) d.longformer.global_rows_only = 2;      /* refused: out stays whole */
    }
    if (d.kind == ATTN_NYSTROM && fz_chance(f, 160)) {     /* a filter of exactly conv_kernel taps per head; 0 taps must be refused (item 4) */
        const int kt = fz_chance(f, 60) ? 0 : 2 * fz_int(f, 0, 8) + 1, taps = kt ? kt : 2 * fz_int(f, 0, 8) + 1;
        float *cv = (float *)gx_alloc(sizeof(float) * (size_t)Hq * taps);
        int i;
        for (i = 0; i < Hq * taps; ++i) cv[i] = (float)t_normal(&r) * 0.3f;
        d.nystrom.conv = cv; d.nystrom.conv_kernel = kt; d.nystrom.pad = 1; d.nystrom.landmarks = fz_int(f, 1, FZMAX(1, Sq < Sk ? Sq : Sk));
        projected_rows = kt;
    }
    if (d.kind == ATTN_NYSTROM && fz_chance(f, 128)) {     /* padding and Z0 rules (#28), out-of-range values included */
        d.nystrom.padding_rule = (attn_nystrom_padding)fz_int(f, -1, 3);
        d.nystrom.pinv_init = (attn_nystrom_pinv_init)fz_int(f, -1, 2);
        if (!d.nystrom.landmarks) { d.nystrom.landmarks = fz_int(f, 1, FZMAX(1, Sq < Sk ? Sq : Sk)); d.nystrom.pad = 1; }
    }
    if (d.kind == ATTN_LSH && fz_chance(f, 160)) {        /* chunks that divide Sq, rounds, HF's merge (2: refused); then the backward */
        d.lsh.bucket_size = fz_chance(f, 128) ? 1 : Sq; d.lsh.n_hashes = fz_int(f, 0, 3); d.lsh.hf_merge = fz_int(f, 0, 2);
        d.lsh.chunks_before = fz_int(f, -2, 3); d.lsh.chunks_after = fz_int(f, -2, 2);   /* -2, past the chunks: refused */
    }
    q = fz_tensor(f, &r, qt, B, Sq, Hq, D, 0, NULL);
    k = fz_tensor(f, &r, kt, B, Sk, Hkv, D, 0, NULL);
    v = fz_tensor(f, &r, kt, B, Sk, Hkv, Dv, 0, NULL);
    o = fz_tensor(f, &r, ot, B, Sq, Hq, Dv, 1, &ob);
    if ((d.kind == ATTN_BIGBIRD || d.kind == ATTN_NYSTROM || d.kind == ATTN_LSH || d.kind == ATTN_LINFORMER ||
         d.kind == ATTN_LINEAR || d.kind == ATTN_COSFORMER || d.kind == ATTN_PERFORMER) && fz_chance(f, 96)) {   /* packed segments (#28): cuts anywhere, ends mostly at seq */
        const int n = fz_int(f, 1, 3);
        int *cq = (int *)gx_alloc(sizeof(int) * 4), *ck = (int *)gx_alloc(sizeof(int) * 4), u;
        cq[0] = ck[0] = 0;
        for (u = 1; u <= n; ++u) {
            cq[u] = fz_chance(f, 40) ? fz_int(f, 0, Sq) : FZMAX(cq[u - 1], fz_int(f, 0, Sq));
            ck[u] = fz_chance(f, 200) && cq[u] <= Sk ? cq[u] : fz_int(f, 0, Sk);
        }
        if (fz_chance(f, 200)) { cq[n] = Sq; ck[n] = Sk; }
        d.seqlens_q = d.seqlens_k = NULL;
        d.cu_seqlens_q = fz_chance(f, 8) ? NULL : cq; d.cu_seqlens_k = ck; d.varlen_batch = fz_chance(f, 8) ? 0 : n;
    }
    if (fz_chance(f, 128) || d.kind == ATTN_LSH || d.kind == ATTN_BIGBIRD || d.kind == ATTN_SOFTMAX || d.kind == ATTN_LONGFORMER)
        { lse = (float *)gb_alloc(lb); t_sentinel(lse, lb, 0x3C); }   /* the backward needs the forward's lse */
    st = attn_forward(&d, q, k, v, o, lse);
    FZ_STATUS(st, "kind %d: unknown status %d", (int)d.kind, (int)st); g_valid += st == ATTN_OK;
    FZ_CHECK(st != ATTN_OK || projected_rows != 0, "kind %s accepted a caller's array without its length (features / conv_kernel 0)", attn_kind_name(d.kind));
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "kind %d: out written on error %s", (int)d.kind, attn_status_str(st));
        FZ_CHECK(!lse || t_sentinel_ok(lse, lb, 0x3C), "kind %d: lse written on error %s", (int)d.kind, attn_status_str(st));
    } else {
        void *c1 = gb_dup(o.data, ob);
        FZ_CHECK(!has_nan(&o), "kind %d (%s): NaN in out from finite inputs", (int)d.kind, attn_kind_name(d.kind));
        d.n_threads = d.n_threads == 1 ? 3 : 1;
        FZ_CHECK(attn_forward(&d, q, k, v, o, lse) == ATTN_OK, "kind %d: second call failed", (int)d.kind);
        FZ_CHECK(memcmp(c1, o.data, ob) == 0, "kind %d (%s): out differs between 1 and 3 threads", (int)d.kind, attn_kind_name(d.kind));
        free(c1);
    }
    if (st == ATTN_OK) fz_kind_backward(f, &r, &d, q, k, v, o, lse);
}

/* The backward of the call target_kinds just ran (every kind has one since issue 29), on the
   same inputs and desc: a status with every gradient (Nystromformer's conv taps too) untouched,
   or finite gradients bitwise equal for 1 and 3 threads. lse is the forward's (NULL for kinds
   without one). */
static void fz_kind_backward(fz *f, t_rng *r, attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, float *lse) {
    const int B = q.batch, Sq = q.seq, Hq = q.heads, Sk = k.seq, Hkv = k.heads, D = q.dim, Dv = v.dim;
    size_t bq, bk, bv, bc = sizeof(float) * (size_t)Hq * (size_t)FZMAX(1, d->nystrom.conv_kernel);
    attn_tensor dout = fz_tensor(f, r, fz_dtype(f), B, Sq, Hq, Dv, 0, NULL);
    attn_tensor dq = fz_tensor(f, r, fz_dtype(f), B, Sq, Hq, D, 1, &bq), dk = fz_tensor(f, r, fz_dtype(f), B, Sk, Hkv, D, 1, &bk);
    attn_tensor dv = fz_tensor(f, r, fz_dtype(f), B, Sk, Hkv, Dv, 1, &bv);
    float *dconv = (float *)gb_alloc(bc);
    const char *name = attn_kind_name(d->kind);
    attn_status st;
    t_sentinel(dq.data, bq, 0xC7); t_sentinel(dk.data, bk, 0xC7); t_sentinel(dv.data, bv, 0xC7); t_sentinel(dconv, bc, 0xC7);
    if (d->kind == ATTN_NYSTROM && fz_chance(f, 160)) d->nystrom.dconv = dconv;   /* without conv: refused */
    st = attn_backward(d, q, k, v, o, dout, lse, dq, dk, dv);
    FZ_STATUS(st, "%s backward: unknown status %d", name, (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(dq.data, bq, 0xC7) && t_sentinel_ok(dk.data, bk, 0xC7) && t_sentinel_ok(dv.data, bv, 0xC7) &&
                 t_sentinel_ok(dconv, bc, 0xC7), "%s backward: an output written on error %s", name, attn_status_str(st));
    } else {
        void *c1 = gb_dup(dq.data, bq), *c2 = gb_dup(dk.data, bk), *c3 = gb_dup(dv.data, bv), *c4 = gb_dup(dconv, bc);
        FZ_CHECK(!has_nan(&dq) && !has_nan(&dk) && !has_nan(&dv), "%s backward: NaN gradient from finite inputs", name);
        d->n_threads = d->n_threads == 1 ? 3 : 1;
        FZ_CHECK(attn_backward(d, q, k, v, o, dout, lse, dq, dk, dv) == ATTN_OK, "%s backward: second call failed", name);
        FZ_CHECK(memcmp(c1, dq.data, bq) == 0 && memcmp(c2, dk.data, bk) == 0 && memcmp(c3, dv.data, bv) == 0 &&
                 memcmp(c4, dconv, bc) == 0, "%s backward: gradients differ between 1 and 3 threads", name);
        free(c1); free(c2); free(c3); free(c4);
    }
}

/* ==== issue 27: every defect class of #27 as a fuzz target ===================================
   views    broadcast views in exact buffers (a read past the documented extent faults under
            ASan): attn_forward with q/k/v broadcasts and an attn_bias of rows 1 | q.seq with
            zero strides (every stride 0: the key-padding row, #27 item 1) against ref.h;
            RWKV-5/6 with flat [B, T, C] tensors and the per-channel decay w as one broadcast row
            (every stride 0, item 2) and RWKV-4, against double references
   sizes    size queries (workspace, backward workspace, state, decode, layer, RWKV, SSM) with
            dimensions whose products pass INT_MAX: never ATTN_OK when q.batch * q.heads > INT_MAX
            (item 5); they allocate nothing, so the dimensions can be real
   overlap  every writing call of the recurrent families (attn_step, RWKV-4/5/6 forward and step,
            the selective scan, its step and backward, conv1d and its step, S4D, its step and
            kernel) and attn_forward, with every buffer carved from one arena at random offsets:
            refused = the arena is byte-identical; accepted = an independent span computation
            says no output met an input or another output (state_in == state_out exactly
            aside), no output row overlaps another, and no byte outside the outputs changed
            (items 6, 7)
   props    SiLU / gate of huge negative inputs is 0 through conv1d and the scan (item 10);
            cosFormer padded == unpadded on the valid rows (item 9); ATTN_ROUTING with identical
            key rows: the windows are the lowest positions (item 8); attn_performer_draw and
            attn_lsh_rotations bits (hashed for -H)
   kinds (extended) Performer with a caller's W of exactly `features` rows (features 0: must be
            refused, item 3), Nystrom with a filter of exactly conv_kernel taps (0: refused,
            item 4) and with any padding_rule / pinv_init (#28), then its backward (#29); layers (extended) attn.kind of every kind through forward, backward and
            the workspace query: a status, never an abort (item 11). Item 8's ISA dependence
            also shows as a hash difference between builds (make fuzz-isa). */


/* 1 + the largest element offset of a view with non-negative strides (computed here, not by
   the library: the caller's documented extent) */
static size_t fz_span(const attn_tensor *t) {
    return (size_t)((ptrdiff_t)(t->batch - 1) * t->stride_batch + (ptrdiff_t)(t->seq - 1) * t->stride_seq +
                    (ptrdiff_t)(t->heads - 1) * t->stride_head + t->dim);
}
/* strides: 0 dense, 1 BHSD (constructors), 2 padded, 3 batch / 4 seq / 5 head broadcast,
   6 every stride 0 (one row for every position: never "dense") */
static void fz_layout(attn_tensor *t, int lay, int pad) {
    attn_tensor dn;
    if (lay == 1) dn = attn_tensor_bhsd(NULL, t->dtype, t->batch, t->heads, t->seq, t->dim);
    else dn = attn_tensor_dense(NULL, t->dtype, t->batch, t->seq, t->heads, t->dim);
    if (lay == 2) {
        dn.stride_head = t->dim + pad; dn.stride_seq = (ptrdiff_t)t->heads * dn.stride_head + pad;
        dn.stride_batch = (ptrdiff_t)t->seq * dn.stride_seq + pad;
    }
    t->stride_batch = dn.stride_batch; t->stride_seq = dn.stride_seq; t->stride_head = dn.stride_head;
    if (lay == 3 || lay == 6) t->stride_batch = 0;
    if (lay == 4 || lay == 6) t->stride_seq = 0;
    if (lay == 5 || lay == 6) t->stride_head = 0;
}
static void fz_fill_unif(const attn_tensor *t, t_rng *r, double lo, double hi) {
    int b, s, h, c;
    for (b = 0; b < t->batch; ++b) for (s = 0; s < t->seq; ++s) for (h = 0; h < t->heads; ++h)
        for (c = 0; c < t->dim; ++c) t_store(t, b, s, h, c, lo + (hi - lo) * t_unif(r));
}
/* a view in a buffer of exactly its extent (inputs: any layout, broadcasts included, filled
   N(0,1) or uniform [0, 1) with unif; outputs: dense or padded, sentinel bytes) */
static attn_tensor fz_xview(fz *f, t_rng *r, attn_dtype dt, int B, int S, int H, int D, int is_out, int unif, size_t *bytes) {
    attn_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt; t.batch = B; t.seq = S; t.heads = H; t.dim = D;
    fz_layout(&t, is_out ? (int)(fz_u8(f) % 3u) : (int)(fz_u8(f) % 7u), (int)(fz_u8(f) % 3u));
    *bytes = fz_span(&t) * t_dt_size(dt);
    t.data = gx_alloc(*bytes);
    if (is_out) t_sentinel(t.data, *bytes, 0xC7);
    else if (unif) fz_fill_unif(&t, r, 0.0, 1.0);
    else t_fill_normal(&t, r, 1.0);
    return t;
}
static attn_dtype fz_dt3(fz *f) { unsigned u = fz_u8(f) % 8u; return u < 5 ? ATTN_F32 : u < 7 ? ATTN_F16 : ATTN_BF16; }

/* out against ref_attention (the forward target's comparison) */
static void fz_check_ref(const attn_desc *d, attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor o, const float *lse) {
    const int B = q.batch, Sq = q.seq, Hq = q.heads, Dv = v.dim;
    double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq);
    const double tol = 2e-4 + dt_tol(o.dtype) + (k.dtype == ATTN_BF16 && q.dtype == ATTN_BF16 ? 8e-3 : 0.0);
    int b, s, h, c;
    FZ_CHECK(!has_nan(&o), "NaN in out from finite inputs");
    ref_attention(d, q, k, v, ro, rl);
    for (b = 0; b < B; ++b) for (s = 0; s < Sq; ++s) for (h = 0; h < Hq; ++h) {
        double mx = 1.0;
        const size_t li = ((size_t)b * Hq + h) * Sq + s;
        for (c = 0; c < Dv; ++c) mx = FZMAX(mx, fabs(ro[(((size_t)b * Sq + s) * Hq + h) * Dv + c]));
        for (c = 0; c < Dv; ++c) {
            const double want = ro[(((size_t)b * Sq + s) * Hq + h) * Dv + c], got = t_load(&o, b, s, h, c);
            FZ_CHECK(fabs(got - want) <= tol * mx, "out[%d,%d,%d,%d] = %.9g, reference %.9g (tol %g)", b, s, h, c, got, want, tol * mx);
        }
        if (lse) {
            FZ_CHECK(lse[li] == lse[li], "NaN lse");
            FZ_CHECK(rl[li] == -INFINITY ? lse[li] == -INFINITY : fabs(lse[li] - rl[li]) <= 2e-4 * (1.0 + fabs(rl[li])) + (q.dtype == ATTN_BF16 && k.dtype == ATTN_BF16 ? 1e-2 : 0.0),
                     "lse[%d,%d,%d] = %.9g, reference %.9g", b, h, s, (double)lse[li], rl[li]);
        }
    }
    free(ro); free(rl);
}

/* ---- views --------------------------------------------------------------------------------- */
/* attn_bias [B|1, H|1, rows 1|Sq, Sk] in exactly its extent: each axis of extent > 1 dense or
   broadcast (stride 0); an axis of extent 1 gets the stride that would step just past the
   buffer (never read, the docs say) */
static attn_bias fz_xbias(fz *f, t_rng *r, int B, int Hq, int Sq, int Sk) {
    attn_bias bs;
    const int bb = fz_chance(f, 100) ? B : 1, bh = fz_chance(f, 100) ? Hq : 1, br = fz_chance(f, 150) ? 1 : Sq;
    ptrdiff_t n = Sk, sq = 0, sh = 0, sb = 0;
    float *p;
    ptrdiff_t i;
    if (br > 1 && !fz_chance(f, 60)) { sq = n; n *= br; }
    if (bh > 1 && !fz_chance(f, 60)) { sh = n; n *= bh; }
    if (bb > 1 && !fz_chance(f, 60)) { sb = n; n *= bb; }
    if (br == 1) sq = n;
    if (bh == 1) sh = n;
    if (bb == 1) sb = n;
    p = (float *)gx_alloc((size_t)n * sizeof(float));
    for (i = 0; i < n; ++i) p[i] = t_chance(r, 0.1) ? -INFINITY : (float)t_normal(r);
    memset(&bs, 0, sizeof bs);
    bs.data = p; bs.batch = bb; bs.heads = bh; bs.rows = br;
    bs.stride_batch = sb; bs.stride_head = sh; bs.stride_q = sq;
    return bs;
}

static void fz_views_attention(fz *f, t_rng *r) {
    const int B = fz_int(f, 1, 3), Hkv = fz_int(f, 1, 2), g = fz_int(f, 1, 2), Hq = Hkv * g;
    const int Sq = fz_int(f, 1, fz_chance(f, 40) ? 70 : 9), Sk = fz_int(f, 1, fz_chance(f, 40) ? 90 : 12), D = fz_int(f, 1, 20), Dv = fz_int(f, 1, 20);
    int lens_q[3], lens_k[3];
    float slopes[4], *lse = NULL;
    size_t bq, bk, bv, ob, lb = (size_t)B * Hq * Sq * sizeof(float);
    attn_desc d;
    attn_tensor q, k, v, o;
    attn_status st;
    fz_desc(f, &d, B, Sq, Sk, Hq, lens_q, lens_k, slopes, 1);
    if (fz_chance(f, 200)) d.bias = fz_xbias(f, r, B, Hq, Sq, Sk);
    q = fz_xview(f, r, fz_dt3(f), B, Sq, Hq, D, 0, 0, &bq);
    k = fz_xview(f, r, fz_dt3(f), B, Sk, Hkv, D, 0, 0, &bk);
    v = fz_xview(f, r, k.dtype, B, Sk, Hkv, Dv, 0, 0, &bv);
    o = fz_xview(f, r, fz_dt3(f), B, Sq, Hq, Dv, 1, 0, &ob);
    if (fz_chance(f, 128)) { lse = (float *)gx_alloc(lb); t_sentinel(lse, lb, 0x3C); }
    st = attn_forward(&d, q, k, v, o, lse);
    FZ_STATUS(st, "views: unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "views: out written on error %s", attn_status_str(st));
        FZ_CHECK(st != ATTN_ERR_BIAS_ROWS && st != ATTN_ERR_BIAS_BATCH && st != ATTN_ERR_BIAS_HEADS, "views: a documented bias refused: %s", attn_status_str(st));
    } else fz_check_ref(&d, q, k, v, o, lse);
}

/* channel c of a [B, T, H, D] view (c = h D + d) */
static double fz_ch(const attn_tensor *t, int b, int s, int c) { return t_load(t, b, s, c / t->dim, c % t->dim); }

static void fz_views_rwkv(fz *f, t_rng *r) {
    const int v4 = fz_chance(f, 80), B = fz_int(f, 1, 2), T = fz_int(f, 1, 6), flat = fz_chance(f, 128);
    const int H = flat ? 1 : fz_int(f, 1, 3), D = fz_int(f, 1, 8), C = H * D, hs = fz_chance(f, 128) ? D : 0;
    const int N = hs ? hs : D % 64 == 0 ? 64 : D, G = C / N;
    const attn_dtype dt = fz_dt3(f);
    size_t br, bk, bv, bw, ob, sb = (size_t)B * (v4 ? 3u * (size_t)C : (size_t)G * N * N) * sizeof(float);
    attn_rwkv_desc d;
    attn_tensor rr, k, v, w, o;
    float *u, *u2, *sin = NULL, *sout = NULL;
    double *S;
    int b, t, c, i, j, gi;
    attn_status st;
    memset(&d, 0, sizeof d); memset(&w, 0, sizeof w);
    d.head_size = hs; d.n_threads = fz_int(f, 0, 3);
    rr = fz_xview(f, r, dt, B, T, H, D, 0, 0, &br);
    k = fz_xview(f, r, fz_dt3(f), B, T, H, D, 0, 0, &bk);
    v = fz_xview(f, r, fz_dt3(f), B, T, H, D, 0, 0, &bv);
    o = fz_xview(f, r, fz_dt3(f), B, T, H, D, 1, 0, &ob);
    if (!v4) {
        w.dtype = fz_dt3(f); w.batch = B; w.seq = T; w.heads = H; w.dim = D;
        if (fz_chance(f, 160)) {                   /* RWKV-5: one decay per channel, docs/guide.md's recipe */
            w.stride_batch = 0; w.stride_seq = 0; w.stride_head = H > 1 ? D : 0;
            bw = (size_t)C * t_dt_size(w.dtype);
            w.data = gx_alloc(bw);
            fz_fill_unif(&w, r, 0.0, 1.0);
        } else w = fz_xview(f, r, w.dtype, B, T, H, D, 0, 1, &bw);
    }
    u = (float *)gx_alloc((size_t)C * sizeof(float)); u2 = (float *)gx_alloc((size_t)C * sizeof(float));
    for (c = 0; c < C; ++c) { u[c] = (float)t_normal(r); u2[c] = (float)t_normal(r); }
    if (fz_chance(f, 128)) {
        sin = (float *)gx_alloc(sb);
        for (i = 0; i < (int)(sb / sizeof(float)); ++i) sin[i] = v4 && i / C % 3 == 1 ? (float)(0.5 + t_unif(r)) : (float)t_normal(r);
    }
    if (fz_chance(f, 128)) { sout = fz_chance(f, 64) && sin ? sin : (float *)gx_alloc(sb); if (sout != sin) t_sentinel(sout, sb, 0x3D); }
    S = (double *)t_xmalloc(sb / sizeof(float) * sizeof(double));
    for (i = 0; i < (int)(sb / sizeof(float)); ++i) S[i] = sin ? sin[i] : v4 && i / C % 3 == 2 ? -1e38 : 0.0;
    st = v4 ? attn_rwkv4_forward(&d, u, u2, k, v, o, sin, sout) : attn_rwkv6_forward(&d, rr, k, v, w, u, o, sin, sout);
    FZ_STATUS(st, "rwkv: unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7) && (!sout || sout == sin || t_sentinel_ok(sout, sb, 0x3D)), "rwkv: written on error %s", attn_status_str(st));
        free(S);
        return;
    }
    for (b = 0; b < B; ++b) for (t = 0; t < T; ++t) {
        if (v4) for (c = 0; c < C; ++c) {          /* the documented stable recurrence, in double */
            double *aa = &S[((size_t)b * 3 + 0) * C + c], *bb = &S[((size_t)b * 3 + 1) * C + c], *pp = &S[((size_t)b * 3 + 2) * C + c];
            const double ww = -exp((double)u[c]), uu = u2[c], kk = fz_ch(&k, b, t, c), vv = fz_ch(&v, b, t, c);
            double p = FZMAX(*pp, uu + kk), e1 = exp(*pp - p), e2 = exp(uu + kk - p), want = (e1 * *aa + e2 * vv) / (e1 * *bb + e2), got = fz_ch(&o, b, t, c);
            FZ_CHECK(fabs(got - want) <= (1e-4 + dt_tol(o.dtype)) * (1.0 + fabs(want)) + 2e-4 * FZMAX(fabs(*aa), 1.0) / FZMAX(fabs(*bb), 1e-3) * 1e-2,
                     "rwkv4 out[%d,%d,c%d] = %.9g, reference %.9g", b, t, c, got, want);
            p = FZMAX(*pp + ww, kk); e1 = exp(*pp + ww - p); e2 = exp(kk - p);
            *aa = e1 * *aa + e2 * vv; *bb = e1 * *bb + e2; *pp = p;
        } else for (gi = 0; gi < G; ++gi) {
            double *Sg = &S[((size_t)b * G + gi) * N * N];
            for (j = 0; j < N; ++j) {
                double y = 0.0, mag = 0.0, got;
                for (i = 0; i < N; ++i) {
                    const int ci = gi * N + i;
                    const double term = fz_ch(&rr, b, t, ci) * (u[ci] * fz_ch(&k, b, t, ci) * fz_ch(&v, b, t, gi * N + j) + Sg[i * N + j]);
                    y += term; mag += fabs(term);
                }
                got = fz_ch(&o, b, t, gi * N + j);
                FZ_CHECK(fabs(got - y) <= (2e-5 + dt_tol(o.dtype)) * (1.0 + mag), "rwkv6 out[%d,%d,c%d] = %.9g, reference %.9g (head size %d)", b, t, gi * N + j, got, y, N);
            }
            for (i = 0; i < N; ++i) for (j = 0; j < N; ++j)
                Sg[i * N + j] = fz_ch(&w, b, t, gi * N + i) * Sg[i * N + j] + fz_ch(&k, b, t, gi * N + i) * fz_ch(&v, b, t, gi * N + j);
        }
    }
    if (sout) for (i = 0; i < (int)(sb / sizeof(float)); ++i)
        FZ_CHECK(fabs(sout[i] - S[i]) <= 1e-4 * (1.0 + fabs(S[i])), "rwkv%d state_out[%d] = %.9g, reference %.9g", v4 ? 4 : 6, i, (double)sout[i], S[i]);
    free(S);
}

static void target_views(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    if (fz_chance(f, 128)) fz_views_attention(f, &r); else fz_views_rwkv(f, &r);
}

/* ---- sizes: size queries with products past INT_MAX (they allocate nothing) ---------------- */
static int fz_big(fz *f) {
    static const int big[] = { 1, 2, 3, 46340, 46341, 65535, 65536, 65537, 1 << 20, 1 << 21 };   /* products past INT_MAX; not INT_MAX itself: some validations loop over batch or seq */
    return fz_chance(f, 100) ? fz_int(f, 1, 4) : big[fz_u8(f) % (sizeof big / sizeof big[0])];
}
static void target_sizes(fz *f) {
    static float zeros[4096];                      /* per-head arrays of valid kinds: read, never written */
    static char dummy[16];                         /* tensor data: a size query reads no element */
    const int B = fz_big(f), Hkv = fz_big(f), g = Hkv <= INT_MAX / 2 && fz_chance(f, 60) ? 2 : 1, Hq = Hkv * g;
    const int S = fz_int(f, 1, 4), D = fz_int(f, 1, 4), Dv = fz_int(f, 1, 4);
    const int over = (long long)B * Hq > INT_MAX;
    attn_desc d;
    attn_tensor q, k, v;
    size_t bytes = 0;
    attn_status st;
    int which;
    memset(&d, 0, sizeof d);
    d.kind = (attn_kind)g_kinds[fz_u8(f) % N_KINDS];
    d.causal = fz_chance(f, 60);
    q = attn_tensor_dense(dummy, ATTN_F32, B, S, Hq, D);
    k = attn_tensor_dense(dummy, ATTN_F32, B, S, Hkv, D);
    v = attn_tensor_dense(dummy, ATTN_F32, B, S, Hkv, Dv);
    switch (d.kind) {                              /* parameters each kind needs to reach its task count */
    case ATTN_BIGBIRD: d.bigbird.block = 1; d.bigbird.no_random = 1; d.causal = 0; break;
    case ATTN_LSH: d.lsh.bucket_size = S; d.lsh.n_hashes = 1; k = q; v = attn_tensor_dense(dummy, ATTN_F32, B, S, Hq, Dv); break;
    case ATTN_ROUTING: k = q; v = attn_tensor_dense(dummy, ATTN_F32, B, S, Hq, Dv); d.routing.n_clusters = 1; d.routing.window = S;
        if ((size_t)Hq * D <= sizeof zeros / sizeof zeros[0]) d.routing.centroids = zeros;
        break;
    case ATTN_PERFORMER: d.performer.features = fz_int(f, 1, 4); break;
    case ATTN_COSFORMER: if (fz_chance(f, 128)) d.cosformer.max_len = S; break;
    case ATTN_LINFORMER: d.linformer.e = zeros; d.linformer.shared_heads = 1; d.linformer.shared_kv = 1; d.linformer.k = 1; d.linformer.n = S; d.causal = 0; break;
    case ATTN_NYSTROM: d.nystrom.landmarks = S; d.causal = 0; break;
    default: break;
    }
    which = (int)(fz_u8(f) % 6u);
    if (which == 0) st = attn_workspace_size(&d, q, k, v, &bytes);
    else if (which == 1) st = attn_backward_workspace_size(&d, q, k, v, &bytes);
    else if (which == 2) {
        st = attn_state_size(&d, q, k, v, &bytes);
        FZ_STATUS(st, "sizes: unknown status %d", (int)st);
        if (st == ATTN_OK) FZ_CHECK((double)bytes >= (double)B * Hkv, "sizes: %s state of %zu floats for q.batch %d x k.heads %d", attn_kind_name(d.kind), bytes, B, Hkv);
    } else if (which == 3 && d.kind == ATTN_SOFTMAX) {
        attn_kv_cache c;
        static int lens[4];
        memset(&c, 0, sizeof c);
        c.k = attn_tensor_dense(dummy, ATTN_F32, B, S, Hkv, D); c.v = attn_tensor_dense(dummy, ATTN_F32, B, S, Hkv, Dv);
        c.batch = B; c.lens = B <= 4 ? lens : NULL;
        st = attn_decode_workspace_size(&d, q, &c, &bytes);
        if (B > 4) { FZ_STATUS(st, "sizes: unknown status %d", (int)st); return; }   /* lens must hold batch entries */
    } else if (which == 4) {                       /* a layer: batch x lq and batch x heads */
        attn_layer_desc ld;
        memset(&ld, 0, sizeof ld);
        ld.d_model = D * (Hq <= 64 ? Hq : 1); ld.heads = Hq <= 64 ? Hq : 1;
        st = attn_layer_workspace_size(&ld, fz_chance(f, 128), B, Hkv, Hkv, &bytes);
        FZ_STATUS(st, "sizes: unknown status %d", (int)st);
        FZ_CHECK(st != ATTN_OK || (long long)B * Hkv <= INT_MAX, "sizes: layer workspace ATTN_OK (%zu bytes) with batch %d x lq %d > INT_MAX", bytes, B, Hkv);
        return;
    } else {                                       /* the scans: RWKV-5/6 and the SSM */
        if (fz_chance(f, 128)) {
            attn_rwkv_desc rd;
            attn_tensor t = attn_tensor_dense(dummy, ATTN_F32, B, S, Hkv, D);
            memset(&rd, 0, sizeof rd);
            st = attn_rwkv6_workspace_size(&rd, t, t, t, t, &bytes);
        } else {
            attn_ssm_desc sd;
            memset(&sd, 0, sizeof sd);
            sd.batch = B; sd.dim = Hkv; sd.len = S; sd.d_state = D;
            st = attn_ssm_workspace_size(&sd, (attn_ssm_op)fz_int(f, 0, 8), &bytes);
        }
        FZ_STATUS(st, "sizes: unknown status %d", (int)st);
        return;
    }
    if (which != 2) FZ_STATUS(st, "sizes: unknown status %d", (int)st);
    g_valid += st == ATTN_OK;
    FZ_CHECK(!over || st != ATTN_OK, "sizes: %s %s returned ATTN_OK (%zu) with q.batch %d x q.heads %d > INT_MAX",
             attn_kind_name(d.kind), which == 0 ? "attn_workspace_size" : which == 1 ? "attn_backward_workspace_size" : which == 2 ? "attn_state_size" : "attn_decode_workspace_size",
             bytes, B, Hq);
}

/* ---- overlap: every buffer of a call carved from one arena ---------------------------------- */
#define OV_FLOATS 4096
typedef struct { size_t lo, hi; int out; int pair; const char *name; } ov_span;   /* bytes [lo, hi) of the arena */
typedef struct {
    fz *f;
    float *arena;                  /* OV_FLOATS floats */
    size_t cursor;                 /* next free float (sequential placement) */
    int scatter;                   /* 0: every region disjoint; else random offsets, shared starts */
    ov_span sp[32];
    int n;
    attn_tensor rows[8];           /* output views whose rows must not overlap */
    int n_rows;
} ov_ctx;
/* place `floats` floats: after the previous region, or (scatter) anywhere, or where an earlier
   region starts */
static float *ov_place(ov_ctx *c, size_t floats, int is_out, const char *name) {
    size_t at;
    const unsigned u = fz_u8(c->f);
    FZ_CHECK(floats <= OV_FLOATS / 4 && c->n < 32, "overlap: region too large");
    if (c->scatter && u < 80) at = (size_t)fz_u16(c->f) % (OV_FLOATS - floats + 1);
    else if (c->scatter && u < 120 && c->n > 0) at = c->sp[fz_u8(c->f) % (unsigned)c->n].lo / sizeof(float);
    else { at = c->cursor + (size_t)(fz_u8(c->f) % 4u); if (at + floats > OV_FLOATS) at = 0; }
    if (at + floats > OV_FLOATS) at = OV_FLOATS - floats;
    if (at + floats > c->cursor) c->cursor = at + floats;
    c->sp[c->n].lo = at * sizeof(float); c->sp[c->n].hi = (at + floats) * sizeof(float);
    c->sp[c->n].out = is_out; c->sp[c->n].pair = -1; c->sp[c->n].name = name;
    ++c->n;
    return c->arena + at;
}
/* the span of a view: the bytes from its lowest to its highest addressable element */
static void ov_set_view(ov_ctx *c, int i, const void *data, size_t elems, size_t es) {
    const size_t lo = (size_t)((const unsigned char *)data - (const unsigned char *)c->arena);
    c->sp[i].lo = lo; c->sp[i].hi = lo + elems * es;
}
/* a [B, S, H, D] view in the arena: inputs any layout (broadcasts too), outputs dense or padded,
   sometimes with rows that overlap (stride_seq < dim: must be refused) */
static attn_tensor ov_view(ov_ctx *c, attn_dtype dt, int B, int S, int H, int D, int is_out, const char *name) {
    attn_tensor t;
    size_t elems;
    memset(&t, 0, sizeof t);
    t.dtype = dt; t.batch = B; t.seq = S; t.heads = H; t.dim = D;
    fz_layout(&t, is_out ? (int)(fz_u8(c->f) % 3u) : (int)(fz_u8(c->f) % 7u), (int)(fz_u8(c->f) % 3u));
    if (is_out && fz_chance(c->f, 12)) t.stride_seq = fz_int(c->f, 1, FZMAX(1, D));   /* overlapping rows */
    elems = fz_span(&t);
    t.data = ov_place(c, (elems * t_dt_size(dt) + 3) / 4, is_out, name);
    ov_set_view(c, c->n - 1, t.data, elems, t_dt_size(dt));
    if (is_out && c->n_rows < 8) c->rows[c->n_rows++] = t;
    return t;
}
static float *ov_arr(ov_ctx *c, size_t n, int is_out, const char *name) { return ov_place(c, n ? n : 1, is_out, name); }
/* an SSM [batch, chan, len] view (len contiguous): inputs may broadcast a batch or channel */
static attn_ssm_tensor ov_ssm(ov_ctx *c, int Bn, int Ch, int L, int is_out, const char *name) {
    attn_ssm_tensor t;
    const unsigned lay = fz_u8(c->f) % 4u;
    const int pad = (int)(fz_u8(c->f) % 3u);
    size_t elems;
    t.dtype = is_out ? ATTN_F32 : fz_dt3(c->f);
    t.stride_chan = L + pad; t.stride_batch = (ptrdiff_t)Ch * t.stride_chan;
    if (!is_out && lay == 1) t.stride_batch = 0;
    if (!is_out && lay == 2) t.stride_chan = 0, t.stride_batch = is_out ? 0 : L;
    if (!is_out && lay == 3) t.stride_batch = t.stride_chan = 0;
    if (is_out && fz_chance(c->f, 12)) t.stride_chan = fz_int(c->f, 0, L);        /* overlapping rows */
    elems = (size_t)((ptrdiff_t)(Bn - 1) * t.stride_batch + (ptrdiff_t)(Ch - 1) * t.stride_chan + L);
    t.data = ov_place(c, (elems * t_dt_size(t.dtype) + 3) / 4, is_out, name);
    ov_set_view(c, c->n - 1, t.data, elems, t_dt_size(t.dtype));
    if (is_out && c->n_rows < 8) {                 /* as an attn_tensor [Bn, Ch, 1, L] for the row check */
        attn_tensor a;
        memset(&a, 0, sizeof a);
        a.data = t.data; a.dtype = t.dtype; a.batch = Bn; a.seq = Ch; a.heads = 1; a.dim = L;
        a.stride_batch = t.stride_batch; a.stride_seq = t.stride_chan; a.stride_head = L;
        c->rows[c->n_rows++] = a;
    }
    return t;
}
/* after the call: refused = arena untouched; accepted = the memory rule held */
static void ov_verify(ov_ctx *c, const float *snap, attn_status st, const char *call) {
    int i, j, n;
    size_t x;
    unsigned char *in_out;
    FZ_STATUS(st, "%s: unknown status %d", call, (int)st);
    if (st != ATTN_OK) {
        FZ_CHECK(memcmp(snap, c->arena, OV_FLOATS * sizeof(float)) == 0, "%s: refused (%s) but the arena changed", call, attn_status_str(st));
        return;
    }
    ++g_valid;
    for (i = 0; i < c->n; ++i) if (c->sp[i].out) for (j = 0; j < c->n; ++j) {
        if (j == i || (j < i && c->sp[j].out)) continue;
        if (c->sp[i].lo == c->sp[j].lo && c->sp[i].hi == c->sp[j].hi && (c->sp[i].pair == j || c->sp[j].pair == i)) continue;   /* state_out == state_in: in place */
        FZ_CHECK(c->sp[i].hi <= c->sp[j].lo || c->sp[j].hi <= c->sp[i].lo,
                 "%s accepted with output %s [%zu, %zu) meeting %s %s [%zu, %zu)", call, c->sp[i].name, c->sp[i].lo, c->sp[i].hi,
                 c->sp[j].out ? "output" : "input", c->sp[j].name, c->sp[j].lo, c->sp[j].hi);
    }
    for (n = 0; n < c->n_rows; ++n) {              /* each element of an output: one address */
        const attn_tensor *t = &c->rows[n];
        const size_t es = t_dt_size(t->dtype);
        unsigned char *seen = (unsigned char *)calloc(OV_FLOATS * sizeof(float), 1);
        int b, s, h, d;
        for (b = 0; b < t->batch; ++b) for (s = 0; s < t->seq; ++s) for (h = 0; h < t->heads; ++h) for (d = 0; d < t->dim; ++d) {
            const size_t off = (size_t)((const unsigned char *)t->data - (const unsigned char *)c->arena) +
                               (size_t)((ptrdiff_t)b * t->stride_batch + (ptrdiff_t)s * t->stride_seq + (ptrdiff_t)h * t->stride_head + d) * es;
            FZ_CHECK(!seen[off], "%s accepted an output whose rows overlap (element [%d,%d,%d,%d])", call, b, s, h, d);
            seen[off] = 1;
        }
        free(seen);
    }
    in_out = (unsigned char *)calloc(OV_FLOATS * sizeof(float), 1);   /* nothing written outside the outputs */
    for (i = 0; i < c->n; ++i) if (c->sp[i].out) memset(in_out + c->sp[i].lo, 1, c->sp[i].hi - c->sp[i].lo);
    for (x = 0; x < OV_FLOATS * sizeof(float); ++x)
        FZ_CHECK(in_out[x] || ((const unsigned char *)snap)[x] == ((const unsigned char *)c->arena)[x], "%s wrote byte %zu outside its outputs", call, x);
    free(in_out);
}

static void target_overlap(fz *f) {
    float *arena = (float *)gx_alloc(OV_FLOATS * sizeof(float)), *snap;
    ov_ctx c;
    const int op = (int)(fz_u8(f) % 18u), B = fz_int(f, 1, 2), T = fz_int(f, 1, 4), H = fz_int(f, 1, 2), D = fz_int(f, 1, 4);
    const char *call = "?";
    attn_status st = ATTN_OK;
    t_rng r = t_rng_seed(fz_u16(f));
    size_t i;
    memset(&c, 0, sizeof c);
    c.f = f; c.arena = arena; c.scatter = !fz_chance(f, 100);
    for (i = 0; i < OV_FLOATS * 2; ++i) {          /* halfwords 0x38xx: finite and in [0, 1] as f32, f16 and bf16 */
        const uint16_t hw = (uint16_t)(0x3800u | (t_next(&r) >> 56));
        memcpy((unsigned char *)arena + 2 * i, &hw, 2);
    }
    snap = (float *)t_xmalloc(OV_FLOATS * sizeof(float));
    if (op <= 1) {                                 /* attn_step (0) or attn_forward (1) of a linear kind */
        static const attn_kind lk[] = { ATTN_LINEAR, ATTN_COSFORMER, ATTN_PERFORMER, ATTN_SOFTMAX };
        attn_desc d;
        attn_tensor q, k, v, o, q0;
        attn_state s;
        size_t need = 0;
        memset(&d, 0, sizeof d); memset(&s, 0, sizeof s);
        d.kind = lk[fz_u8(f) % (op == 0 ? 3u : 4u)];
        d.causal = op == 0 || fz_chance(f, 128); d.n_threads = fz_int(f, 0, 3);
        d.cosformer.max_len = 64; d.performer.features = fz_int(f, 1, 6);
        q = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "q");
        k = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "k");
        v = ov_view(&c, k.dtype, B, T, H, D, 0, "v");
        q0 = q; q0.seq = 1;
        if (op == 0) {
            if (attn_state_size(&d, q0, k, v, &need) != ATTN_OK || need > OV_FLOATS / 4) { free(snap); return; }
            s.data = ov_arr(&c, need, 1, "state");
        }
        o = ov_view(&c, fz_dt3(f), B, T, H, D, 1, "out");
        if (op == 0) {
            if (attn_state_init(&d, q0, k, v, s.data, need, &s) != ATTN_OK) { free(snap); return; }
            memcpy(snap, arena, OV_FLOATS * sizeof(float));
            st = attn_step(&d, q, k, v, &s, o); call = "attn_step";
        } else {
            memcpy(snap, arena, OV_FLOATS * sizeof(float));
            st = attn_forward(&d, q, k, v, o, NULL); call = "attn_forward";
        }
    } else if (op <= 5) {                          /* RWKV-4 / RWKV-5/6, forward and step */
        const int v4 = op <= 3, step = op == 3 || op == 5, Tn = step ? 1 : T, C = H * D;
        const size_t sf = (size_t)B * (v4 ? 3u * (size_t)C : (size_t)C * D);   /* head size = D */
        attn_rwkv_desc d;
        attn_tensor r, k, v, w, o;
        float *a1, *a2 = NULL, *sin = NULL, *sout = NULL;
        memset(&d, 0, sizeof d); memset(&r, 0, sizeof r); memset(&w, 0, sizeof w);
        d.head_size = D; d.n_threads = fz_int(f, 0, 3);
        if (!v4) r = ov_view(&c, fz_dt3(f), B, Tn, H, D, 0, "r");
        k = ov_view(&c, fz_dt3(f), B, Tn, H, D, 0, "k");
        v = ov_view(&c, fz_dt3(f), B, Tn, H, D, 0, "v");
        if (!v4) w = ov_view(&c, fz_dt3(f), B, Tn, H, D, 0, "w");
        a1 = ov_arr(&c, (size_t)C, 0, v4 ? "time_decay" : "u");
        if (v4) a2 = ov_arr(&c, (size_t)C, 0, "time_first");
        if (step) sin = sout = ov_arr(&c, sf, 1, "state");
        else {
            if (fz_chance(f, 160)) sin = ov_arr(&c, sf, 0, "state_in");
            if (fz_chance(f, 160)) {
                if (sin && fz_chance(f, 80)) { sout = sin; c.sp[c.n - 1].out = 1; }   /* in place: the state is then an output */
                else { sout = ov_arr(&c, sf, 1, "state_out"); if (sin) c.sp[c.n - 1].pair = c.n - 2; }
            }
        }
        o = ov_view(&c, fz_dt3(f), B, Tn, H, D, 1, "out");
        memcpy(snap, arena, OV_FLOATS * sizeof(float));
        if (v4) st = step ? attn_rwkv4_step(&d, a1, a2, k, v, o, sout) : attn_rwkv4_forward(&d, a1, a2, k, v, o, sin, sout);
        else st = step ? attn_rwkv6_step(&d, r, k, v, w, a1, o, sout) : attn_rwkv6_forward(&d, r, k, v, w, a1, o, sin, sout);
        call = v4 ? (step ? "attn_rwkv4_step" : "attn_rwkv4_forward") : (step ? "attn_rwkv6_step" : "attn_rwkv6_forward");
    } else if (op >= 16) {                         /* 16 attn_rwkv4_backward, 17 attn_rwkv6_backward */
        const int v4 = op == 16, C = H * D;
        const size_t sf = (size_t)B * (v4 ? 3u * (size_t)C : (size_t)C * D);   /* head size = D */
        attn_rwkv_desc d;
        attn_tensor r, k, v, w, dy, dr, dk, dv, dw;
        float *a1, *a2 = NULL, *sin = NULL, *dsout = NULL, *g1 = NULL, *g2 = NULL, *dsin = NULL;
        memset(&d, 0, sizeof d); memset(&r, 0, sizeof r); memset(&w, 0, sizeof w);
        memset(&dr, 0, sizeof dr); memset(&dk, 0, sizeof dk); memset(&dv, 0, sizeof dv); memset(&dw, 0, sizeof dw);
        d.head_size = D; d.n_threads = fz_int(f, 0, 3);
        if (!v4) r = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "r");
        k = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "k");
        v = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "v");
        if (!v4) w = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "w");
        a1 = ov_arr(&c, (size_t)C, 0, v4 ? "time_decay" : "u");
        if (v4) a2 = ov_arr(&c, (size_t)C, 0, "time_first");
        dy = ov_view(&c, fz_dt3(f), B, T, H, D, 0, "dout");
        if (fz_chance(f, 160)) sin = ov_arr(&c, sf, 0, "state_in");
        if (fz_chance(f, 160)) dsout = ov_arr(&c, sf, 0, "dstate_out");
        if (!v4 && fz_chance(f, 160)) dr = ov_view(&c, fz_dt3(f), B, T, H, D, 1, "dr");
        if (fz_chance(f, 200)) dk = ov_view(&c, fz_dt3(f), B, T, H, D, 1, "dk");
        if (fz_chance(f, 200)) dv = ov_view(&c, fz_dt3(f), B, T, H, D, 1, "dv");
        if (!v4 && fz_chance(f, 160)) dw = ov_view(&c, fz_dt3(f), B, T, H, D, 1, "dw");
        if (fz_chance(f, 160)) g1 = ov_arr(&c, (size_t)C, 1, v4 ? "dtime_decay" : "du");
        if (v4 && fz_chance(f, 160)) g2 = ov_arr(&c, (size_t)C, 1, "dtime_first");
        if (fz_chance(f, 128)) dsin = ov_arr(&c, sf, 1, "dstate_in");
        memcpy(snap, arena, OV_FLOATS * sizeof(float));
        st = v4 ? attn_rwkv4_backward(&d, a1, a2, k, v, dy, sin, dsout, dk, dv, g1, g2, dsin)
                : attn_rwkv6_backward(&d, r, k, v, w, a1, dy, sin, dsout, dr, dk, dv, dw, g1, dsin);
        call = v4 ? "attn_rwkv4_backward" : "attn_rwkv6_backward";
    } else {                                       /* the state-space calls */
        const int N = fz_int(f, 1, 3), K = fz_int(f, 2, 4), L = op == 7 || op == 9 || op == 12 ? 1 : T;
        attn_ssm_desc d;
        attn_ssm_tensor u, dl, Bm, Cm, z, y;
        const float *A, *dsk = NULL, *dbias = NULL;
        float *sin = NULL, *sout = NULL;
        memset(&d, 0, sizeof d); memset(&z, 0, sizeof z);
        d.batch = B; d.dim = D; d.len = L; d.d_state = N; d.conv_kernel = K; d.n_threads = fz_int(f, 0, 3);
        d.conv_act = fz_chance(f, 128) ? ATTN_SSM_CONV_NONE : ATTN_SSM_CONV_SILU;
        if (op <= 8) {                             /* 6 scan, 7 step, 8 scan backward */
            u = ov_ssm(&c, B, D, L, 0, "u");
            dl = ov_ssm(&c, B, D, L, 0, "delta");
            A = ov_arr(&c, (size_t)D * N, 0, "A");
            Bm = ov_ssm(&c, B, N, L, 0, "B");
            Cm = ov_ssm(&c, B, N, L, 0, "C");
            if (fz_chance(f, 128)) dsk = ov_arr(&c, (size_t)D, 0, "d_skip");
            if (fz_chance(f, 128)) z = ov_ssm(&c, B, D, L, 0, "z");
            if (fz_chance(f, 128)) dbias = ov_arr(&c, (size_t)D, 0, "delta_bias");
            if (op == 7) sin = sout = ov_arr(&c, (size_t)B * D * N, 1, "state");
            else {
                if (fz_chance(f, 128)) sin = ov_arr(&c, (size_t)B * D * N, 0, "state_in");
                if (op == 6 && fz_chance(f, 128)) {
                    if (sin && fz_chance(f, 80)) { sout = sin; c.sp[c.n - 1].out = 1; }
                    else { sout = ov_arr(&c, (size_t)B * D * N, 1, "state_out"); if (sin) c.sp[c.n - 1].pair = c.n - 2; }
                }
            }
            if (op == 8) {
                attn_ssm_tensor dy = ov_ssm(&c, B, D, L, 0, "dy");
                attn_ssm_grads g;
                memset(&g, 0, sizeof g);
                g.du = ov_arr(&c, (size_t)B * D * L, 1, "du");
                if (fz_chance(f, 128)) g.ddelta = ov_arr(&c, (size_t)B * D * L, 1, "ddelta");
                if (z.data && fz_chance(f, 128)) g.dz = ov_arr(&c, (size_t)B * D * L, 1, "dz");
                if (fz_chance(f, 128)) g.dA = ov_arr(&c, (size_t)D * N, 1, "dA");
                if (fz_chance(f, 128)) g.dB = ov_arr(&c, (size_t)B * N * L, 1, "dB");
                if (fz_chance(f, 128)) g.dC = ov_arr(&c, (size_t)B * N * L, 1, "dC");
                if (fz_chance(f, 128)) g.dD = ov_arr(&c, (size_t)D, 1, "dD");
                if (fz_chance(f, 128)) g.ddelta_bias = ov_arr(&c, (size_t)D, 1, "ddelta_bias");
                memcpy(snap, arena, OV_FLOATS * sizeof(float));
                st = attn_ssm_selective_scan_backward(&d, u, dl, A, Bm, Cm, dsk, z, dbias, sin, dy, &g);
                call = "attn_ssm_selective_scan_backward";
            } else {
                y = ov_ssm(&c, B, D, L, 1, "y");
                memcpy(snap, arena, OV_FLOATS * sizeof(float));
                if (op == 6) { st = attn_ssm_selective_scan(&d, u, dl, A, Bm, Cm, dsk, z, dbias, sin, y, sout); call = "attn_ssm_selective_scan"; }
                else { st = attn_ssm_selective_step(&d, u, dl, A, Bm, Cm, dsk, z, dbias, sout, y); call = "attn_ssm_selective_step"; }
            }
        } else if (op <= 10 || op == 14) {        /* 9 conv1d step, 10 conv1d, 14 its backward */
            const float *wt, *bias = NULL;
            u = ov_ssm(&c, B, D, L, 0, "x");
            wt = ov_arr(&c, (size_t)D * K, 0, "weight");
            if (fz_chance(f, 128)) bias = ov_arr(&c, (size_t)D, 0, "bias");
            if (op == 9) sin = sout = ov_arr(&c, (size_t)B * D * (K - 1), 1, "state");
            else {
                if (fz_chance(f, 128)) sin = ov_arr(&c, (size_t)B * D * (K - 1), 0, "state_in");
                if (op == 10 && fz_chance(f, 128)) {
                    if (sin && fz_chance(f, 80)) { sout = sin; c.sp[c.n - 1].out = 1; }
                    else { sout = ov_arr(&c, (size_t)B * D * (K - 1), 1, "state_out"); if (sin) c.sp[c.n - 1].pair = c.n - 2; }
                }
            }
            if (op == 14) {
                attn_ssm_tensor dout = ov_ssm(&c, B, D, L, 0, "dout");
                float *dx = ov_arr(&c, (size_t)B * D * L, 1, "dx"), *dw = NULL, *db = NULL;
                if (fz_chance(f, 128)) dw = ov_arr(&c, (size_t)D * K, 1, "dweight");
                if (fz_chance(f, 128)) db = ov_arr(&c, (size_t)D, 1, "dbias");
                memcpy(snap, arena, OV_FLOATS * sizeof(float));
                st = attn_ssm_conv1d_backward(&d, u, wt, bias, sin, dout, dx, dw, db);
                call = "attn_ssm_conv1d_backward";
                ov_verify(&c, snap, st, call);
                free(snap);
                return;
            }
            y = ov_ssm(&c, B, D, L, 1, "out");
            memcpy(snap, arena, OV_FLOATS * sizeof(float));
            if (op == 9) { st = attn_ssm_conv1d_step(&d, u, wt, bias, sout, y); call = "attn_ssm_conv1d_step"; }
            else { st = attn_ssm_conv1d(&d, u, wt, bias, sin, y, sout); call = "attn_ssm_conv1d"; }
        } else {                                   /* 11 S4D, 12 its step, 13 its kernel, 15 its backward */
            attn_s4d_params p;
            const size_t dn = (size_t)D * N, sf = (size_t)B * D * N * 2;
            memset(&p, 0, sizeof p);
            p.log_dt = ov_arr(&c, (size_t)D, 0, "log_dt");
            p.log_a_real = ov_arr(&c, dn, 0, "log_a_real"); p.a_imag = ov_arr(&c, dn, 0, "a_imag");
            if (fz_chance(f, 128)) { p.b_re = ov_arr(&c, dn, 0, "b_re"); p.b_im = ov_arr(&c, dn, 0, "b_im"); }
            p.c_re = ov_arr(&c, dn, 0, "c_re"); p.c_im = ov_arr(&c, dn, 0, "c_im");
            if (fz_chance(f, 128)) p.d_skip = ov_arr(&c, (size_t)D, 0, "d_skip");
            if (op == 13) {
                float *K_ = ov_arr(&c, (size_t)D * L, 1, "K");
                memcpy(snap, arena, OV_FLOATS * sizeof(float));
                st = attn_ssm_s4d_kernel(&d, &p, K_); call = "attn_ssm_s4d_kernel";
            } else {
                u = ov_ssm(&c, B, D, L, 0, "u");
                if (op == 12) sin = sout = ov_arr(&c, sf, 1, "state");
                else {
                    if (fz_chance(f, 128)) sin = ov_arr(&c, sf, 0, "state_in");
                    if (op == 11 && fz_chance(f, 128)) {
                        if (sin && fz_chance(f, 80)) { sout = sin; c.sp[c.n - 1].out = 1; }
                        else { sout = ov_arr(&c, sf, 1, "state_out"); if (sin) c.sp[c.n - 1].pair = c.n - 2; }
                    }
                }
                if (op == 15) {
                    attn_ssm_tensor dy = ov_ssm(&c, B, D, L, 0, "dy");
                    attn_s4d_grads g;
                    memset(&g, 0, sizeof g);
                    g.du = ov_arr(&c, (size_t)B * D * L, 1, "du");
                    if (fz_chance(f, 128)) g.dlog_dt = ov_arr(&c, (size_t)D, 1, "dlog_dt");
                    if (fz_chance(f, 128)) g.dlog_a_real = ov_arr(&c, dn, 1, "dlog_a_real");
                    if (fz_chance(f, 128)) g.da_imag = ov_arr(&c, dn, 1, "da_imag");
                    if (p.b_re && fz_chance(f, 128)) { g.db_re = ov_arr(&c, dn, 1, "db_re"); g.db_im = ov_arr(&c, dn, 1, "db_im"); }
                    if (fz_chance(f, 128)) g.dc_re = ov_arr(&c, dn, 1, "dc_re");
                    if (fz_chance(f, 128)) g.dc_im = ov_arr(&c, dn, 1, "dc_im");
                    if (fz_chance(f, 128)) g.dd_skip = ov_arr(&c, (size_t)D, 1, "dd_skip");
                    memcpy(snap, arena, OV_FLOATS * sizeof(float));
                    st = attn_ssm_s4d_backward(&d, &p, u, sin, dy, &g);
                    call = "attn_ssm_s4d_backward";
                    ov_verify(&c, snap, st, call);
                    free(snap);
                    return;
                }
                y = ov_ssm(&c, B, D, L, 1, "y");
                memcpy(snap, arena, OV_FLOATS * sizeof(float));
                if (op == 12) { st = attn_ssm_s4d_step(&d, &p, u, sout, y); call = "attn_ssm_s4d_step"; }
                else { st = attn_ssm_s4d(&d, &p, u, sin, y, sout); call = "attn_ssm_s4d"; }
            }
        }
    }
    ov_verify(&c, snap, st, call);
    free(snap);
}

/* ---- props: exact properties of #27 items 8, 9, 10 ------------------------------------------- */
/* SiLU / the gate of a huge negative input is 0 (item 10): conv1d with SiLU on all-negative
   pre-activations <= -1e3, and the selective scan with z <= -4e3 (|result| <= 1e-30, the
   underflow bound tests/test_ssm.c uses) */
static void fz_props_silu(fz *f, t_rng *r) {
    const int B = fz_int(f, 1, 2), D = fz_int(f, 1, 40), L = fz_int(f, 1, 9), K = fz_int(f, 1, 4), scan = fz_chance(f, 100);
    const size_t n = (size_t)B * D * L;
    attn_ssm_desc d;
    attn_ssm_tensor x, y;
    float *xs = (float *)gx_alloc(n * sizeof(float)), *ys = (float *)gx_alloc(n * sizeof(float)), *w;
    size_t i;
    attn_status st;
    memset(&d, 0, sizeof d);
    d.batch = B; d.dim = D; d.len = L; d.conv_kernel = K; d.d_state = fz_int(f, 1, 4); d.n_threads = fz_int(f, 0, 3);
    for (i = 0; i < n; ++i) xs[i] = -4.0f * (float)pow(10.0, 3.0 + 34.0 * t_unif(r)) * (float)(1.0 + t_unif(r));   /* -4e3 .. -8e37 */
    x = attn_ssm_tensor_dense(xs, ATTN_F32, D, L); y = attn_ssm_tensor_dense(ys, ATTN_F32, D, L);
    if (!scan) {                                   /* weights in [0.25, 0.75] per tap: every pre-activation in [-2.4e38, -1e3] */
        w = (float *)gx_alloc((size_t)D * K * sizeof(float));
        for (i = 0; i < (size_t)D * K; ++i) w[i] = (float)(0.25 + 0.5 * t_unif(r));
        st = attn_ssm_conv1d(&d, x, w, NULL, NULL, y, NULL);
        FZ_STATUS(st, "props silu: unknown status %d", (int)st);
        FZ_CHECK(st == ATTN_OK, "props: conv1d refused %s", attn_status_str(st));
        for (i = 0; i < n; ++i) FZ_CHECK(fabs(ys[i]) <= 1e-30f, "props: conv1d (batch %d, dim %d, len %d, K %d, %d threads) SiLU at channel %d, token %d = %.9g, not 0",
                                   B, D, L, K, d.n_threads, (int)(i / L % D), (int)(i % L), (double)ys[i]);
    } else {                                       /* y = (C.x + D u) * silu(z), z huge negative */
        const int N = d.d_state;
        float *u = (float *)gx_alloc(n * sizeof(float)), *dl = (float *)gx_alloc(n * sizeof(float)), *A = (float *)gx_alloc((size_t)D * N * sizeof(float));
        float *bc = (float *)gx_alloc((size_t)B * N * L * sizeof(float));
        attn_ssm_tensor tu = attn_ssm_tensor_dense(u, ATTN_F32, D, L), tdl = attn_ssm_tensor_dense(dl, ATTN_F32, D, L), tbc = attn_ssm_tensor_dense(bc, ATTN_F32, N, L);
        for (i = 0; i < n; ++i) { u[i] = (float)t_normal(r); dl[i] = (float)t_unif(r); }
        for (i = 0; i < (size_t)D * N; ++i) A[i] = -(float)(0.1 + t_unif(r));
        for (i = 0; i < (size_t)B * N * L; ++i) bc[i] = (float)t_normal(r);
        st = attn_ssm_selective_scan(&d, tu, tdl, A, tbc, tbc, NULL, x, NULL, NULL, y, NULL);
        FZ_STATUS(st, "props gate: unknown status %d", (int)st);
        FZ_CHECK(st == ATTN_OK, "props: selective scan refused %s", attn_status_str(st));
        for (i = 0; i < n; ++i) FZ_CHECK(fabs(ys[i]) <= 1e-30f, "props: scan gate silu(z = %.3g) gave y = %.9g, not 0", (double)xs[i], (double)ys[i]);
    }
    ++g_valid;
}

/* cosFormer: padding a sequence (seqlens) does not change its valid rows (item 9) */
static void fz_props_cosformer(fz *f, t_rng *r) {
    const int B = fz_int(f, 1, 2), H = fz_int(f, 1, 2), D = fz_int(f, 1, 8), Dv = fz_int(f, 1, 8);
    const int Sq = fz_int(f, 1, 12), Sk = fz_chance(f, 128) ? Sq : fz_int(f, 1, 12), causal = fz_chance(f, 128);
    int lq[2], lk[2], b, s, h, c;
    attn_desc d;
    attn_tensor q = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * Sq * H * D), ATTN_F32, B, Sq, H, D);
    attn_tensor k = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * Sk * H * D), ATTN_F32, B, Sk, H, D);
    attn_tensor v = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * Sk * H * Dv), ATTN_F32, B, Sk, H, Dv);
    attn_tensor o = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)B * Sq * H * Dv), ATTN_F32, B, Sq, H, Dv);
    attn_status st;
    t_fill_normal(&q, r, 1.0); t_fill_normal(&k, r, 1.0); t_fill_normal(&v, r, 1.0);
    memset(&d, 0, sizeof d);
    d.kind = ATTN_COSFORMER; d.causal = causal; d.n_threads = fz_int(f, 0, 2);
    for (b = 0; b < B; ++b) { lq[b] = fz_int(f, 1, Sq); lk[b] = fz_chance(f, 128) ? lq[b] * Sk / Sq : fz_int(f, 1, Sk); if (lk[b] < 1) lk[b] = 1; }
    d.seqlens_q = lq; d.seqlens_k = lk;
    st = attn_forward(&d, q, k, v, o, NULL);
    FZ_STATUS(st, "props cosformer: unknown status %d", (int)st);
    if (st == ATTN_OK) for (b = 0; b < B; ++b) {   /* each sequence alone, unpadded */
        attn_desc d1 = d;
        attn_tensor q1 = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)lq[b] * H * D), ATTN_F32, 1, lq[b], H, D);
        attn_tensor k1 = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)lk[b] * H * D), ATTN_F32, 1, lk[b], H, D);
        attn_tensor v1 = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)lk[b] * H * Dv), ATTN_F32, 1, lk[b], H, Dv);
        attn_tensor o1 = attn_tensor_dense(t_xmalloc(sizeof(float) * (size_t)lq[b] * H * Dv), ATTN_F32, 1, lq[b], H, Dv);
        d1.seqlens_q = d1.seqlens_k = NULL;
        for (s = 0; s < lq[b]; ++s) for (h = 0; h < H; ++h) for (c = 0; c < D; ++c) t_store(&q1, 0, s, h, c, t_load(&q, b, s, h, c));
        for (s = 0; s < lk[b]; ++s) for (h = 0; h < H; ++h) {
            for (c = 0; c < D; ++c) t_store(&k1, 0, s, h, c, t_load(&k, b, s, h, c));
            for (c = 0; c < Dv; ++c) t_store(&v1, 0, s, h, c, t_load(&v, b, s, h, c));
        }
        st = attn_forward(&d1, q1, k1, v1, o1, NULL);
        FZ_CHECK(st == ATTN_OK, "props cosformer: the unpadded call refused %s", attn_status_str(st));
        for (s = 0; s < lq[b]; ++s) for (h = 0; h < H; ++h) for (c = 0; c < Dv; ++c) {
            const double a = t_load(&o, b, s, h, c), e = t_load(&o1, 0, s, h, c);
            FZ_CHECK(fabs(a - e) <= 1e-5 * (1.0 + fabs(e)), "props: cosFormer padded row differs: seq %d (valid %d/%d of %d/%d) out[%d,%d,%d] = %.9g, unpadded %.9g",
                     b, lq[b], lk[b], Sq, Sk, s, h, c, a, e);
        }
        free(q1.data); free(k1.data); free(v1.data); free(o1.data);
        ++g_valid;
    }
    free(q.data); free(k.data); free(v.data); free(o.data);
}

/* ATTN_ROUTING with identical key rows: every score ties, so every window is the w lowest
   positions (item 8): rows >= w get 0, rows < w do not; the rows' zero pattern is hashed */
static void fz_props_routing(fz *f, t_rng *r) {
    const int B = fz_int(f, 1, 2), H = fz_int(f, 1, 2), D = fz_int(f, 1, 16), n = fz_int(f, 1, fz_chance(f, 128) ? 200 : 20);
    const int w = fz_int(f, 1, n), nc = fz_int(f, 1, 3);
    float *cent = (float *)gx_alloc(sizeof(float) * (size_t)H * nc * D), *kr = (float *)gx_alloc(sizeof(float) * (size_t)H * D);
    attn_desc d;
    attn_tensor q = attn_tensor_dense(gx_alloc(sizeof(float) * (size_t)B * n * H * D), ATTN_F32, B, n, H, D), k, v, o;
    size_t i;
    int b, s, h, c;
    attn_status st;
    for (i = 0; i < (size_t)H * nc * D; ++i) cent[i] = (float)t_normal(r);
    for (i = 0; i < (size_t)H * D; ++i) kr[i] = (float)t_normal(r);
    kr[0] = 1.0f + (float)fabs(kr[0]);                /* a nonzero row */
    k = q; k.data = kr; k.stride_batch = 0; k.stride_seq = 0; k.stride_head = D;   /* one key row per head for every position */
    v = attn_tensor_dense(gx_alloc(sizeof(float) * (size_t)B * n * H * D), ATTN_F32, B, n, H, D);
    o = attn_tensor_dense(gx_alloc(sizeof(float) * (size_t)B * n * H * D), ATTN_F32, B, n, H, D);
    t_fill_normal(&q, r, 1.0); t_fill_normal(&v, r, 1.0);
    for (b = 0; b < B; ++b) for (s = 0; s < n; ++s) for (h = 0; h < H; ++h) t_store(&v, b, s, h, 0, 1.0 + t_unif(r));   /* no zero mean */
    memset(&d, 0, sizeof d);
    d.kind = ATTN_ROUTING; d.causal = fz_chance(f, 128); d.n_threads = fz_int(f, 0, 3);
    d.routing.centroids = cent; d.routing.n_clusters = nc; d.routing.window = w;
    st = attn_forward(&d, q, k, v, o, NULL);
    FZ_STATUS(st, "props routing: unknown status %d", (int)st);
    FZ_CHECK(st == ATTN_OK, "props: routing refused %s", attn_status_str(st));
    for (b = 0; b < B; ++b) for (s = 0; s < n; ++s) for (h = 0; h < H; ++h) {
        int nz = 0;
        for (c = 0; c < D; ++c) nz |= t_load(&o, b, s, h, c) != 0.0;
        fz_hash_int(nz);
        FZ_CHECK(nz == (s < w), "props: routing with identical keys (n %d, window %d, %d clusters, %s): row %d of head %d is %s (ties: the lowest positions first)",
                 n, w, nc, attn_kernels(), s, h, nz ? "in a window" : "in no window");
    }
    ++g_valid;
}

/* the documented bit-exact draws: the same bits on every ISA (hashed) */
static void fz_props_draws(fz *f) {
    attn_performer_params p;
    attn_desc d;
    const int dim = fz_int(f, 1, 12), m = fz_int(f, 1, 20), heads = fz_int(f, 1, 2), seq = 2 * fz_int(f, 1, 6);
    float *W = (float *)gx_alloc(sizeof(float) * (size_t)m * dim), *R;
    attn_status st;
    memset(&p, 0, sizeof p);
    p.features = m; p.fixed_norms = fz_chance(f, 128); p.seed = fz_u16(f);
    st = attn_performer_draw(&p, dim, W);
    FZ_STATUS(st, "performer_draw: unknown status %d", (int)st);
    if (st == ATTN_OK) fz_hash(W, sizeof(float) * (size_t)m * dim);
    memset(&d, 0, sizeof d);
    d.lsh.bucket_size = 2; d.lsh.n_buckets = 2 * fz_int(f, 1, 3); d.lsh.n_hashes = fz_int(f, 1, 2); d.lsh.seed = fz_u16(f);
    R = (float *)gx_alloc(sizeof(float) * (size_t)heads * d.lsh.n_hashes * dim * (d.lsh.n_buckets / 2));
    st = attn_lsh_rotations(&d, heads, seq, dim, R);
    FZ_STATUS(st, "lsh_rotations: unknown status %d", (int)st);
    if (st == ATTN_OK) fz_hash(R, sizeof(float) * (size_t)heads * d.lsh.n_hashes * dim * (d.lsh.n_buckets / 2));
    g_valid += 2;
}

static void target_props(fz *f) {
    t_rng r = t_rng_seed(fz_u16(f));
    const unsigned which = fz_u8(f) % 4u;
    if (which == 0) fz_props_silu(f, &r);
    else if (which == 1) fz_props_cosformer(f, &r);
    else if (which == 2) fz_props_routing(f, &r);
    else fz_props_draws(f);
}

/* ---- dispatch ------------------------------------------------------------------------------ */
typedef void (*fz_fn)(fz *);
static const struct { const char *name; fz_fn fn; } g_targets[] = {
    { "forward", target_forward }, { "backward", target_backward }, { "merge", target_merge }, { "decode", target_decode },
    { "layers", target_layers }, { "el", target_el }, { "sgemm", target_sgemm }, { "rope", target_rope }, { "pool", target_pool },
    { "kinds", target_kinds }, { "views", target_views }, { "sizes", target_sizes }, { "overlap", target_overlap },
    { "props", target_props }
};
#define N_TARGETS ((int)(sizeof g_targets / sizeof g_targets[0]))

static void run_one(int t, const uint8_t *data, size_t size) {
    fz f;
    f.p = data; f.n = size; f.i = 0;
    g_target = g_targets[t].name;
    g_targets[t].fn(&f);
    gb_check_free();
}

#ifdef FUZZ_LIBFUZZER
#define FZ_STR2(x) #x
#define FZ_STR(x) FZ_STR2(x)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int t = -1;
    if (t < 0) { for (t = 0; t < N_TARGETS && strcmp(g_targets[t].name, FZ_STR(FUZZ_TARGET)) != 0; ++t) {} if (t == N_TARGETS) abort(); }
    run_one(t, data, size);
    return 0;
}
#else
#include <dirent.h>
static double fz_now(void) { return (double)clock() / CLOCKS_PER_SEC; }
int main(int argc, char **argv) {
    long n_iter = 200;
    double secs = 0.0;
    const char *corpus = NULL;
    unsigned long long seed = 16;
    int i, t, any = 0, sel[N_TARGETS] = { 0 }, hash_mode = 0;
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n_iter = atol(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) corpus = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "-H")) hash_mode = 1;
        else if (!strcmp(argv[i], "all")) { for (t = 0; t < N_TARGETS; ++t) sel[t] = 1; any = 1; }
        else {
            for (t = 0; t < N_TARGETS && strcmp(argv[i], g_targets[t].name) != 0; ++t) {}
            if (t == N_TARGETS) { fprintf(stderr, "fuzz: unknown target %s\n", argv[i]); return 2; }
            sel[t] = 1; any = 1;
        }
    }
    if (!any) for (t = 0; t < N_TARGETS; ++t) sel[t] = 1;
    for (t = 0; t < N_TARGETS; ++t) {
        long execs = 0, files = 0, it;
        uint8_t buf[4096];
        double t0 = fz_now();
        if (!sel[t]) continue;
        g_valid = 0;
        g_hash = 1469598103934665603ull;           /* FNV-1a offset basis */
        if (corpus) {                              /* the fixed seed corpus first */
            char path[1024];
            DIR *dir;
            struct dirent *de;
            snprintf(path, sizeof path, "%s/%s", corpus, g_targets[t].name);
            if ((dir = opendir(path)) != NULL) {
                while ((de = readdir(dir)) != NULL) {
                    char file[2048];
                    FILE *fp;
                    size_t n;
                    if (de->d_name[0] == '.') continue;
                    snprintf(file, sizeof file, "%s/%s", path, de->d_name);
                    if (!(fp = fopen(file, "rb"))) continue;
                    n = fread(buf, 1, sizeof buf, fp);
                    fclose(fp);
                    snprintf(g_where, sizeof g_where, "file %s", file);
                    run_one(t, buf, n);
                    ++execs; ++files;
                }
                closedir(dir);
            }
        }
        for (it = 0; secs > 0.0 ? fz_now() - t0 < secs : it < n_iter; ++it) {   /* then seeded random inputs */
            t_rng r = t_rng_seed(seed * 1000003ull + (unsigned long long)t * 7919ull + (unsigned long long)it);
            size_t n = 64 + (size_t)(t_next(&r) % 448u), j;
            for (j = 0; j < n; ++j) buf[j] = (uint8_t)(t_next(&r) >> 56);
            snprintf(g_where, sizeof g_where, "-s %llu iteration %ld", seed, it);
            run_one(t, buf, n);
            ++execs;
        }
        if (hash_mode) printf("hash %-9s %016llx (%ld executions, seed %llu)\n", g_targets[t].name, g_hash, execs, seed);
        else printf("fuzz %-9s %7ld executions (%ld corpus files, seed %llu, %ld calls returned ATTN_OK) in %.1f s cpu: ok\n",
                    g_targets[t].name, execs, files, seed, g_valid, fz_now() - t0);
        fflush(stdout);
    }
    return 0;
}
#endif
