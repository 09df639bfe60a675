/* tests/fixture.h - reads the small text fixtures that the tests/fixtures scripts write from reference
   implementations (HF transformers, performer-pytorch, routing-transformer, linformer, ...): '#'
   comment lines, then per array "name count" followed by count numbers. make test needs no
   Python: the text files are committed. Two readers (merged from two branches; to be made one):
   T_FIXTURE(file, name, dst, n) finds an array by name, with paths relative to this header's
   directory (tests/, through __FILE__); t_fix_open / t_fix_next read the arrays in order, from
   $ATTN_FIXTURES or tests/fixtures (run from the repository root). */
#ifndef ATTN_TESTS_FIXTURE_H
#define ATTN_TESTS_FIXTURE_H
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "tests/fixtures/<file>" beside the file that includes this (any __FILE__ under tests/) */
T_UNUSED static void t_fixture_path(const char *src_file, const char *file, char *path, size_t n) {
    const char *slash = strrchr(src_file, '/');
    const size_t dir = slash ? (size_t)(slash - src_file + 1) : 0;
    if (dir + strlen("fixtures/") + strlen(file) + 1 > n) { path[0] = '\0'; return; }
    memcpy(path, src_file, dir);
    strcpy(path + dir, "fixtures/");
    strcat(path, file);
}

/* Array `name` of fixture `file` into dst (exactly n values). Returns 1 on success. */
T_UNUSED static int t_fixture_read(const char *src_file, const char *file, const char *name, double *dst, size_t n) {
    char path[1024], tok[256];
    FILE *f;
    int found = 0;
    t_fixture_path(src_file, file, path, sizeof path);
    if (!(f = fopen(path, "r"))) return 0;
    while (!found && fscanf(f, "%255s", tok) == 1) {
        unsigned long cnt;
        size_t i;
        if (tok[0] == '#') { int ch; while ((ch = fgetc(f)) != EOF && ch != '\n') {} continue; }
        if (fscanf(f, "%lu", &cnt) != 1) break;
        if (strcmp(tok, name) == 0) {
            if (cnt != n) break;
            for (i = 0; i < n; ++i) if (fscanf(f, "%lf", &dst[i]) != 1) break;
            found = i == n;
            break;
        }
        for (i = 0; i < cnt; ++i) { double x; if (fscanf(f, "%lf", &x) != 1) break; }
    }
    fclose(f);
    return found;
}
#define T_FIXTURE(file, name, dst, n) t_fixture_read(__FILE__, (file), (name), (dst), (n))

typedef struct { FILE *f; char path[600]; } t_fix;

T_UNUSED static int t_fix_open(t_fix *x, const char *file) {
    const char *dir = getenv("ATTN_FIXTURES");
    sprintf(x->path, "%.400s/%.150s", dir && *dir ? dir : "tests/fixtures", file);
    x->f = fopen(x->path, "r");
    return x->f != NULL;
}
T_UNUSED static void t_fix_close(t_fix *x) { if (x->f) fclose(x->f); x->f = NULL; }

/* The next array, which must be called name (comment lines skipped): count in *n, values in a
   malloc'd array (free it); NULL when the file ends, the name differs or a number is missing. */
T_UNUSED static double *t_fix_next(t_fix *x, const char *name, size_t *n) {
    char word[64];
    unsigned long cnt;
    size_t i;
    double *v;
    int c;
    for (;;) {
        while ((c = fgetc(x->f)) == '\n' || c == ' ') {}
        if (c == EOF) return NULL;
        if (c != '#') { ungetc(c, x->f); break; }
        while ((c = fgetc(x->f)) != '\n' && c != EOF) {}
    }
    if (fscanf(x->f, "%63s %lu", word, &cnt) != 2 || strcmp(word, name) != 0) return NULL;
    v = (double *)malloc(sizeof(double) * (cnt ? cnt : 1));
    if (!v) return NULL;
    for (i = 0; i < cnt; ++i)
        if (fscanf(x->f, "%lf", &v[i]) != 1) { free(v); return NULL; }
    *n = cnt;
    return v;
}
#endif
