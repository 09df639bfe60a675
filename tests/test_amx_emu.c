/* tests/test_amx_emu.c - the AMX branch of attn.h's bf16 tile kernels (3.12) on a software
   tile file, so its layouts (VNNI pairs, transposed P, strides, 2 x 2 tile blocking, padding)
   are checked against the reference on every CPU with AVX512-BF16, AMX or not.
   This translation unit compiles its own private copy of the implementation (ATTN_STATIC)
   with ATTN__AMX_EMULATE: detection then reports AMX wherever AVX512-BF16 is present, and
   the ATTN__TILE_* operations below stand in for ldtilecfg/tileloadd/tdpbf16ps/tilestored/
   tilezero/tilerelease, with the configuration attn.h loads (palette 1, tmm0-7 = 16 rows x 64
   bytes). Each kernel function owns its tile file (ATTN__TILE_FILE), so a kernel that relied
   on tile contents left by another call would fail here. tdpbf16ps is emulated as documented:
   C[m][n] += sum_k A[m][2k] B[k][2n] + A[m][2k+1] B[k][2n+1], bf16 inputs, fp32 sums.
   Then the whole test_amx suite (tests/test_amx.c) runs on this copy as family "amx-emu". */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct t_emu_tiles { unsigned char t[8][16][64]; } t_emu_tiles;

static float t_emu_bf16(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] << 16 | (uint32_t)p[1] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void t_emu_load(t_emu_tiles *f, int t, const void *base, long stride) {
    int i;
    for (i = 0; i < 16; ++i) memcpy(f->t[t][i], (const unsigned char *)base + (ptrdiff_t)i * stride, 64);
}
static void t_emu_store(t_emu_tiles *f, int t, void *base, long stride) {
    int i;
    for (i = 0; i < 16; ++i) memcpy((unsigned char *)base + (ptrdiff_t)i * stride, f->t[t][i], 64);
}
static void t_emu_dp(t_emu_tiles *f, int c, int a, int b) {
    int m, n, k;
    for (m = 0; m < 16; ++m)
        for (n = 0; n < 16; ++n) {
            float acc;
            memcpy(&acc, &f->t[c][m][4 * n], 4);
            for (k = 0; k < 16; ++k)
                acc += t_emu_bf16(&f->t[a][m][4 * k]) * t_emu_bf16(&f->t[b][k][4 * n]) +
                       t_emu_bf16(&f->t[a][m][4 * k + 2]) * t_emu_bf16(&f->t[b][k][4 * n + 2]);
            memcpy(&f->t[c][m][4 * n], &acc, 4);
        }
}
/* The configuration every kernel assumes; anything else makes the emulated tiles unusable. */
static int t_emu_cfg_ok(const unsigned char *cfg) {
    int i, ok = cfg[0] == 1 && cfg[1] == 0;
    for (i = 0; i < 8; ++i) ok &= cfg[16 + 2 * i] == 64 && cfg[17 + 2 * i] == 0 && cfg[48 + i] == 16;
    for (i = 8; i < 16; ++i) ok &= cfg[16 + 2 * i] == 0 && cfg[17 + 2 * i] == 0 && cfg[48 + i] == 0;
    return ok;
}

#define ATTN__AMX_EMULATE 1
#define ATTN__TILE_FILE t_emu_tiles attn__tf;
#define ATTN__TILE_CFG(cfg) ((void)(cfg))   /* its contents are checked once, below */
#define ATTN__TILE_RELEASE() ((void)0)
#define ATTN__TILE_ZERO(tt) memset(attn__tf.t[tt], 0, sizeof attn__tf.t[tt])
#define ATTN__TILE_LOAD(tt, base, stride) t_emu_load(&attn__tf, tt, base, stride)
#define ATTN__TILE_STORE(tt, base, stride) t_emu_store(&attn__tf, tt, base, stride)
#define ATTN__TILE_DP(c, a, b) t_emu_dp(&attn__tf, c, a, b)
#define ATTN_STATIC
#define ATTN_IMPLEMENTATION
#include "attn.h"

#define test_amx t_amx_suite_emu
#include "test_amx.c"
#undef test_amx

void test_amx_emu(void) {
#if defined(ATTN__AMX)
    attn__amx_cfg cfg;
    unsigned char bytes[64];
    T_CHECK(sizeof cfg == 64, "amx-emu: the tile configuration is %u bytes, ldtilecfg reads 64", (unsigned)sizeof cfg);
    attn__amx_config(&cfg);
    memcpy(bytes, &cfg, 64);
    T_CHECK(t_emu_cfg_ok(bytes), "amx-emu: attn__amx_config is not palette 1 with tmm0-7 = 16 rows x 64 bytes");
    t_amx_suite_emu();
#else
    /* No AMX branch in this build (not x86-64 with AVX512-BF16 kernels): the copy above is the
       same code family "amx" already ran, so running the suite again would check nothing new. */
    printf("amx-emu: no AMX kernels compiled in this build, nothing to emulate\n");
#endif
}
