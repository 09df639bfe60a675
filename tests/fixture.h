/* tests/fixture.h - reads the small text fixtures that the tests/fixtures scripts write from reference
   implementations (HF transformers, performer-pytorch, routing-transformer, linformer, ...): '#'
   comment lines, then per array "name count" followed by count numbers. make test needs no
   Python: the text files are committed. One reader:
     T_FIXTURE(file, name, dst, n)         the first array called name, exactly n values, into dst
     T_FIXTURE_NTH(file, name, k, dst, n)  the k-th (from 0), for files that repeat a block per case
   Both return 1 on success, 0 when the file, the array or a number is missing or the count is
   not n. Files are tests/fixtures/<file> beside the including source (through __FILE__; run from
   the repository root), or $ATTN_FIXTURES/<file> when that is set. */
#ifndef ATTN_TESTS_FIXTURE_H
#define ATTN_TESTS_FIXTURE_H
#include "test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "$ATTN_FIXTURES/<file>", or "tests/fixtures/<file>" beside src_file (any __FILE__ under tests/) */
T_UNUSED static void t_fixture_path(const char *src_file, const char *file, char *path, size_t n) {
    const char *env = getenv("ATTN_FIXTURES"), *slash = strrchr(src_file, '/');
    const size_t dir = slash ? (size_t)(slash - src_file + 1) : 0;
    path[0] = '\0';
    if (env && *env) {
        if (strlen(env) + 1 + strlen(file) + 1 <= n) { strcpy(path, env); strcat(path, "/"); strcat(path, file); }
        return;
    }
    if (dir + strlen("fixtures/") + strlen(file) + 1 > n) return;
    memcpy(path, src_file, dir);
    strcpy(path + dir, "fixtures/");
    strcat(path, file);
}

/* The k-th array called `name` of fixture `file` into dst (exactly n values). Returns 1 on success. */
T_UNUSED static int t_fixture_read(const char *src_file, const char *file, const char *name, int k, double *dst, size_t n) {
    char path[1024], tok[256];
    FILE *f;
    int found = 0;
    t_fixture_path(src_file, file, path, sizeof path);
    if (!path[0] || !(f = fopen(path, "r"))) return 0;
    while (!found && fscanf(f, "%255s", tok) == 1) {
        unsigned long cnt;
        size_t i;
        if (tok[0] == '#') { int ch; while ((ch = fgetc(f)) != EOF && ch != '\n') {} continue; }
        if (fscanf(f, "%lu", &cnt) != 1) break;
        if (strcmp(tok, name) == 0 && k-- == 0) {
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
#define T_FIXTURE(file, name, dst, n) t_fixture_read(__FILE__, (file), (name), 0, (dst), (n))
#define T_FIXTURE_NTH(file, name, k, dst, n) t_fixture_read(__FILE__, (file), (name), (k), (dst), (n))
#endif
