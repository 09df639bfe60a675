/* tests/fixture.h - reads the text fixtures that the scripts under tests/fixtures/ write (run by
   hand against the upstream packages): one array per line, `name count v0 v1 ...`; lines that
   start with '#' are comments. Files are looked up in $ATTN_FIXTURES, else tests/fixtures (run
   the tests from the repository root). */
#ifndef ATTN_TEST_FIXTURE_H
#define ATTN_TEST_FIXTURE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
