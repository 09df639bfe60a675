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

static int known_status(attn_status s) {
    return (int)s >= 0 && (int)s < (int)ATTN_STATUS_END && attn_status_str(s) != NULL &&
           strstr(attn_status_str(s), "unknown") == NULL;
}

/* ---- guarded buffers ---------------------------------------------------------------------- */
#define GUARD 64
typedef struct { unsigned char *base; size_t bytes; } gbuf;
static gbuf g_bufs[64];
static int g_nbufs;
static void *gb_alloc(size_t bytes) {
    unsigned char *b = (unsigned char *)t_xmalloc(bytes + 2 * GUARD);
    size_t i;
    for (i = 0; i < GUARD; ++i) { b[i] = (unsigned char)(0xA5 ^ i); b[GUARD + bytes + i] = (unsigned char)(0x5A ^ i); }
    FZ_CHECK(g_nbufs < 64, "too many buffers");
    g_bufs[g_nbufs].base = b; g_bufs[g_nbufs].bytes = bytes; ++g_nbufs;
    return b + GUARD;
}
static void gb_check_free(void) {
    int k;
    size_t i;
    for (k = 0; k < g_nbufs; ++k) {
        const unsigned char *b = g_bufs[k].base;
        for (i = 0; i < GUARD; ++i) {
            FZ_CHECK(b[i] == (unsigned char)(0xA5 ^ i), "guard byte before buffer %d overwritten", k);
            FZ_CHECK(b[GUARD + g_bufs[k].bytes + i] == (unsigned char)(0x5A ^ i), "guard byte after buffer %d overwritten", k);
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
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
    if (st != ATTN_OK) {
        FZ_CHECK(t_sentinel_ok(o.data, ob, 0xC7), "out written on error %s", attn_status_str(st));
        FZ_CHECK(!lse || t_sentinel_ok(lse, lb, 0x3C), "lse written on error %s", attn_status_str(st));
    } else {
        double *ro = (double *)t_xmalloc(sizeof(double) * (size_t)B * Sq * Hq * Dv), *rl = (double *)t_xmalloc(sizeof(double) * (size_t)B * Hq * Sq);
        const double tol = 2e-4 + dt_tol(ot) + (kt == ATTN_BF16 && qt == ATTN_BF16 ? 8e-3 : 0.0);
        int b, s, h, c;
        FZ_CHECK(!has_nan(&o), "NaN in out from finite inputs");
        ref_attention(&d, q, k, v, ro, rl);
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
                FZ_CHECK(rl[li] == -INFINITY ? lse[li] == -INFINITY : fabs(lse[li] - rl[li]) <= 2e-4 * (1.0 + fabs(rl[li])) + (qt == ATTN_BF16 && kt == ATTN_BF16 ? 1e-2 : 0.0),
                         "lse[%d,%d,%d] = %.9g, reference %.9g", b, h, s, (double)lse[li], rl[li]);
            }
        }
        free(ro); free(rl);
    }
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
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
        FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
        const int what = (int)(fz_u8(f) % 4u), S = fz_int(f, 1, 6);
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
            FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
        FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
    memset(&d, 0, sizeof d); memset(&w, 0, sizeof w);
    d.kind = (attn_layer_kind)fz_int(f, 0, 6);
    d.d_model = fz_chance(f, 8) ? 0 : dm; d.heads = heads; d.context = ctx;
    d.kv_heads = d.kind == ATTN_LAYER_STANDARD && fz_chance(f, 80) ? 1 : 0;
    d.attn.causal = fz_chance(f, 100);
    d.n_threads = fz_int(f, 0, 2);
    w.wq = fz_floats(&r, nw, 0.3); w.wk = fz_floats(&r, nw, 0.3); w.wv = fz_floats(&r, nw, 0.3); w.wo = fz_floats(&r, nw, 0.3);
    if (fz_chance(f, 128)) { w.bq = fz_floats(&r, (size_t)dm, 0.1); w.bk = fz_floats(&r, (size_t)dm, 0.1); w.bv = fz_floats(&r, (size_t)dm, 0.1); w.bo = fz_floats(&r, (size_t)dm, 0.1); }
    w.wa = fz_floats(&r, (size_t)ctx * ctx, 0.3); w.ba = fz_floats(&r, (size_t)ctx, 0.1); w.wd = fz_floats(&r, (size_t)ctx * ctx, 0.3);
    if (fz_chance(f, 10)) w.wo = NULL;
    xq = fz_floats(&r, (size_t)B * lq * dm, 1.0); xkv = self ? NULL : fz_floats(&r, (size_t)B * lk * dm, 1.0);
    out = (float *)gb_alloc(ob); t_sentinel(out, ob, 0xC7);
    st = attn_layer_forward(&d, &w, B, lq, lk, xq, xkv, out);
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
    FZ_CHECK(known_status(st), "unknown status %d", (int)st); g_valid += st == ATTN_OK;
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
#define FZ_KIND_VALUE(name, value, id, text) value,
static void target_kinds(fz *f) {
    static const int kinds[] = { ATTN__KIND_LIST(FZ_KIND_VALUE) };
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
    fz_desc(f, &d, B, Sq, Sk, Hq, lens_q, lens_k, slopes, 0);
    if (fz_chance(f, 160)) {                        /* most calls plain: kinds refuse masks they lack */
        const int kind = d.kind;
        memset(&d, 0, sizeof d);
        d.kind = (attn_kind)kind; d.causal = fz_chance(f, 128); d.n_threads = fz_int(f, 0, 3);
    }
    if ((int)d.kind != 97) d.kind = (attn_kind)kinds[fz_u8(f) % (sizeof kinds / sizeof kinds[0])];
    q = fz_tensor(f, &r, qt, B, Sq, Hq, D, 0, NULL);
    k = fz_tensor(f, &r, kt, B, Sk, Hkv, D, 0, NULL);
    v = fz_tensor(f, &r, kt, B, Sk, Hkv, Dv, 0, NULL);
    o = fz_tensor(f, &r, ot, B, Sq, Hq, Dv, 1, &ob);
    if (fz_chance(f, 128)) { lse = (float *)gb_alloc(lb); t_sentinel(lse, lb, 0x3C); }
    st = attn_forward(&d, q, k, v, o, lse);
    FZ_CHECK(known_status(st), "kind %d: unknown status %d", (int)d.kind, (int)st); g_valid += st == ATTN_OK;
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
}

/* ---- dispatch ------------------------------------------------------------------------------ */
typedef void (*fz_fn)(fz *);
static const struct { const char *name; fz_fn fn; } g_targets[] = {
    { "forward", target_forward }, { "backward", target_backward }, { "merge", target_merge }, { "decode", target_decode },
    { "layers", target_layers }, { "el", target_el }, { "sgemm", target_sgemm }, { "rope", target_rope }, { "pool", target_pool },
    { "kinds", target_kinds }
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
    int i, t, any = 0, sel[N_TARGETS] = { 0 };
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) n_iter = atol(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) secs = atof(argv[++i]);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) corpus = argv[++i];
        else if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
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
        printf("fuzz %-9s %7ld executions (%ld corpus files, seed %llu, %ld calls returned ATTN_OK) in %.1f s cpu: ok\n",
               g_targets[t].name, execs, files, seed, g_valid, fz_now() - t0);
        fflush(stdout);
    }
    return 0;
}
#endif
