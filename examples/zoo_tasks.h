/* zoo_tasks.h - the synthetic tasks of `train --zoo` (examples/train.c), generated from a seed.

   Each generator writes one sequence of T tokens and its targets; a target of -1 means "no
   loss at this position". Every task is posed so that the input never holds an answer at or
   after the position that must predict it: a causal model and a bidirectional one (BigBird,
   Linformer, Nystromformer) see the same problem and neither can copy the answer from the
   future. Tokens are small integers, 0 is the filler / padding token of every task.

     mqar       multi-query associative recall (Zoology, Arora et al. 2023): P key-value pairs
                (distinct keys), then filler with each of the P keys asked once, in random order
                at random positions; the target at a query is its key's value.
                vocabulary: 0 filler, keys 1..n_keys, values n_keys+1..n_keys+n_vals.
     selcopy    selective copying (Mamba, Gu & Dao 2023): n_data data tokens scattered at random
                positions in filler, a marker, then n_data blank tokens whose targets are the
                data tokens in order. vocabulary: 0 filler, 1 marker, 2 blank, data 3..3+n_colors-1.
     induction  induction heads (Mamba's form): random tokens, a trigger token placed once at a
                random position p < T-2 and again at the last position; the target at the last
                position is the token after the first trigger. vocabulary: 0 unused, 1 trigger,
                2..V-1 random tokens. Evaluated past the training length.
     listops    ListOps-style (Long Range Arena, Tay et al. 2020): a nested expression of MAX, MIN,
                MED (the lower median) and SM (sum mod 10) over digits, left-padded with filler,
                then '=' whose target is its value's digit token (10 classes). vocabulary: 0 filler,
                digits 1..10 (value = token - 1), MAX 11, MIN 12, MED 13, SM 14, ']' 15, '=' 16.

   The random source is splitmix64 on a caller's state, so a seed gives the same samples on every
   platform. Header-only, no allocation. */
#ifndef ZOO_TASKS_H
#define ZOO_TASKS_H

static unsigned long long zt_next(unsigned long long *s) {
    unsigned long long z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* uniform in [0, n), n >= 1 */
static int zt_below(unsigned long long *s, int n) { return (int)((zt_next(s) >> 33) % (unsigned long long)n); }

/* a random permutation of 0..n-1 in p (Fisher-Yates) */
static void zt_perm(unsigned long long *s, int n, int *p) {
    int i;
    for (i = 0; i < n; ++i) p[i] = i;
    for (i = n - 1; i > 0; --i) {
        const int j = zt_below(s, i + 1), t = p[i];
        p[i] = p[j]; p[j] = t;
    }
}

/* mqar: needs 3 pairs <= T, pairs <= n_keys <= 512; vocabulary 1 + n_keys + n_vals */
static void zt_mqar(unsigned long long *s, int T, int pairs, int n_keys, int n_vals, int *tok, int *tgt) {
    int perm[512], slots[4096], val[512], i;
    for (i = 0; i < T; ++i) { tok[i] = 0; tgt[i] = -1; }
    zt_perm(s, n_keys, perm);                       /* keys: the first `pairs` of a permutation */
    for (i = 0; i < pairs; ++i) {
        val[i] = zt_below(s, n_vals);
        tok[2 * i] = 1 + perm[i];
        tok[2 * i + 1] = 1 + n_keys + val[i];
    }
    zt_perm(s, T - 2 * pairs, slots);               /* query i at the i-th chosen free position */
    for (i = 0; i < pairs; ++i) {
        const int q = zt_below(s, pairs - i) + i, at = 2 * pairs + slots[i];
        int t = perm[q], tv = val[q];                /* a not yet asked pair: swap it to slot i */
        perm[q] = perm[i]; val[q] = val[i]; perm[i] = t; val[i] = tv;
        tok[at] = 1 + t;
        tgt[at] = 1 + n_keys + tv;
    }
}

/* selcopy: needs 2 n_data + 1 <= T <= 4096; vocabulary 3 + n_colors */
static void zt_selcopy(unsigned long long *s, int T, int n_data, int n_colors, int *tok, int *tgt) {
    int slots[4096], chosen[4096], i, j = 0;
    const int region = T - n_data - 1;              /* data + filler, then the marker, then blanks */
    for (i = 0; i < T; ++i) { tok[i] = 0; tgt[i] = -1; chosen[i] = 0; }
    zt_perm(s, region, slots);
    for (i = 0; i < n_data; ++i) chosen[slots[i]] = 1;
    for (i = 0; i < region; ++i)
        if (chosen[i]) {
            tok[i] = 3 + zt_below(s, n_colors);
            tgt[region + 1 + j++] = tok[i];
        }
    tok[region] = 1;
    for (i = region + 1; i < T; ++i) tok[i] = 2;
}

/* induction: needs T >= 4, V >= 4 */
static void zt_induction(unsigned long long *s, int T, int V, int *tok, int *tgt) {
    const int p = zt_below(s, T - 3);               /* first trigger at p, its answer at p + 1 */
    int i;
    for (i = 0; i < T; ++i) { tok[i] = 2 + zt_below(s, V - 2); tgt[i] = -1; }
    tok[p] = 1;
    tok[T - 1] = 1;
    tgt[T - 1] = tok[p + 1];
}

/* listops */
enum { ZT_LO_MAX = 11, ZT_LO_MIN, ZT_LO_MED, ZT_LO_SM, ZT_LO_CLOSE, ZT_LO_EQ, ZT_LO_V };

/* writes one expression at out[*n..]: a digit, or (depth > 0, half the time) an operator with
   2..max_args arguments; returns its value, or -1 when it would pass cap tokens */
static int zt_lo_expr(unsigned long long *s, int depth, int max_args, int *out, int *n, int cap) {
    int vals[16], k, i, r = 0;
    if (depth == 0 || zt_below(s, 2) == 0) {
        const int d = zt_below(s, 10);
        if (*n >= cap) return -1;
        out[(*n)++] = 1 + d;
        return d;
    }
    if (*n >= cap) return -1;
    const int op = ZT_LO_MAX + zt_below(s, 4);
    out[(*n)++] = op;
    k = 2 + zt_below(s, max_args - 1);
    for (i = 0; i < k; ++i)
        if ((vals[i] = zt_lo_expr(s, depth - 1, max_args, out, n, cap)) < 0) return -1;
    if (*n >= cap) return -1;
    out[(*n)++] = ZT_LO_CLOSE;
    if (op == ZT_LO_SM) { for (i = 0; i < k; ++i) r += vals[i]; return r % 10; }
    if (op == ZT_LO_MED) {                          /* sort, take the lower middle */
        int a, b;
        for (a = 1; a < k; ++a) for (b = a; b > 0 && vals[b - 1] > vals[b]; --b) { int t = vals[b]; vals[b] = vals[b - 1]; vals[b - 1] = t; }
        return vals[(k - 1) / 2];
    }
    r = vals[0];
    for (i = 1; i < k; ++i) r = op == ZT_LO_MAX ? (vals[i] > r ? vals[i] : r) : (vals[i] < r ? vals[i] : r);
    return r;
}

/* listops: an expression of depth <= max_depth (the root always an operator), max_args <= 16
   arguments per operator, left-padded to T - 1 tokens, then '='; T <= 4096 */
static void zt_listops(unsigned long long *s, int T, int max_depth, int max_args, int *tok, int *tgt) {
    int buf[4096], n, v, i;
    do {                                            /* redraw until the root is an operator that fits */
        n = 0;
        v = zt_lo_expr(s, max_depth, max_args, buf, &n, T - 1);
    } while (v < 0 || buf[0] < ZT_LO_MAX);
    for (i = 0; i < T; ++i) { tok[i] = 0; tgt[i] = -1; }
    for (i = 0; i < n; ++i) tok[T - 1 - n + i] = buf[i];
    tok[T - 1] = ZT_LO_EQ;
    tgt[T - 1] = 1 + v;
}

#endif
