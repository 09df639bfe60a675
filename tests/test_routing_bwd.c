/* tests/test_routing_bwd.c - attn_backward for ATTN_ROUTING (Routing Transformer) against central
   finite differences of a double-precision forward written here from shared/ZOO.md and attn.h's
   ATTN_ROUTING comment (sharing no code with attn.h or tests/test_sparse.c), for the loss
   sum(dout . out) with a random dout:
     x_i = k_i / |k_i|, mu_c = centroid / |centroid|; window W_c: the w = min(window, L) tokens with
     the largest x_i . mu_c (ties: lower position), in position order (separate_qk: the query
     window by q_i / |q_i|); s_ij = scale q_i . k'_j (k' = k, or x with normalize_keys), causal:
     j > i hidden, the query's own key -5e4 (not with separate_qk); o_c(i) = softmax(s) v;
     out_i = sum_c o_c(i) / (count_i + count_eps), 0 in no window.
   The routing is piecewise constant, so the differences see the same windows as long as no
   window boundary is within 1e-4 of a tie (inputs are redrawn otherwise; the step is 1e-5).
   Every coordinate of q, k and v for the small cases (padding rows included: their gradient is
   0), a sample for the large; max |err| / max(1, max |grad|) <= 2e-4. A shared QK tensor (the
   same buffer as q and k) is checked as one: dq + dk against the differences of the tied input.
   Also: threads 1/2/3 bitwise, the workspace query and a caller workspace, padded rows exactly
   0, packed sequences, f16/bf16 storage, the statuses with outputs untouched, and the gradients
   of lucidrains' routing-transformer 1.6.1 under torch autograd within 1e-4
   (tests/fixtures/routing_transformer_bwd.py writes the fixture). */
#include "test.h"
#include "fixture.h"

typedef struct {
    int B, n, H, D, Dv, nc, window, causal, normk, sep;
    double ceps;
    const int *lens;              /* [B] valid lengths (seqlens_k), or NULL */
    const int *cu; int segs;      /* packed sequences (B 1): offsets [segs + 1], or NULL */
    const float *cen;             /* [H][nc][D] */
} rb_case;

/* The sequence holding row i of batch b: [*off, *off + *L); 0 when i is padding. */
static int rb_unit(const rb_case *c, int b, int i, int *off, int *L) {
    int u;
    if (c->cu) {
        for (u = 0; u < c->segs; ++u)
            if (i >= c->cu[u] && i < c->cu[u + 1]) { *off = c->cu[u]; *L = c->cu[u + 1] - c->cu[u]; return 1; }
        return 0;
    }
    *off = 0; *L = c->lens ? c->lens[b] : c->n;
    return i < *L;
}

typedef struct { double s; int pos; } rb_ent;
static int rb_by_score(const void *a, const void *b) {
    const rb_ent *x = (const rb_ent *)a, *y = (const rb_ent *)b;
    if (x->s != y->s) return x->s > y->s ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}
static int rb_by_pos(const void *a, const void *b) {
    const rb_ent *x = (const rb_ent *)a, *y = (const rb_ent *)b;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

#define RB_AT(x, i, e, dim) ((x)[(((size_t)b * c->n + (size_t)(i)) * c->H + h) * (dim) + (e)])

/* The w best positions of [off, off + L) for unit centroid mu by the unit rows of x, by position;
   *ok = 0 on a near tie at the boundary. */
static void rb_window(const rb_case *c, const double *x, int b, int h, int off, int L, int w, const double *mu, int *win,
                      int *ok, rb_ent *ent) {
    int i, e;
    for (i = 0; i < L; ++i) {
        double nn = 0, s = 0;
        for (e = 0; e < c->D; ++e) nn += RB_AT(x, off + i, e, c->D) * RB_AT(x, off + i, e, c->D);
        for (e = 0; e < c->D; ++e) s += (nn > 0 ? RB_AT(x, off + i, e, c->D) / sqrt(nn) : 0) * mu[e];
        ent[i].s = s; ent[i].pos = off + i;
    }
    qsort(ent, (size_t)L, sizeof *ent, rb_by_score);
    if (w < L && ent[w - 1].s - ent[w].s < 1e-4) *ok = 0;
    qsort(ent, (size_t)w, sizeof *ent, rb_by_pos);
    for (i = 0; i < w; ++i) win[i] = ent[i].pos;
}

/* sum over the rows of sequence [off, off + L) of batch b, head h of dout . out (out into o when
   given, [B][n][H][Dv]); q, k, v, dout dense doubles. */
static double rb_loss(const rb_case *c, const double *q, const double *k, const double *v, const double *dout, int b, int h,
                      int off, int L, double *o, int *ok) {
    const int D = c->D, Dv = c->Dv, w = (c->window ? c->window : 64) < L ? (c->window ? c->window : 64) : L;
    const double scale = 1.0 / sqrt((double)D);
    int *kw = (int *)t_xmalloc(sizeof(int) * (size_t)(w + 1)), *qw = (int *)t_xmalloc(sizeof(int) * (size_t)(w + 1));
    int *cnt = (int *)t_xmalloc(sizeof(int) * (size_t)(L + 1));
    rb_ent *ent = (rb_ent *)t_xmalloc(sizeof(rb_ent) * (size_t)(L + 1));
    double *acc = (double *)t_xmalloc(sizeof(double) * (size_t)(L + 1) * Dv), *s = (double *)t_xmalloc(sizeof(double) * (size_t)(w + 1));
    double *mu = (double *)t_xmalloc(sizeof(double) * (size_t)D), *kp = (double *)t_xmalloc(sizeof(double) * (size_t)D);
    double loss = 0;
    int cl, a, j, e, i;
    for (i = 0; i < L; ++i) cnt[i] = 0;
    for (i = 0; i < L * Dv; ++i) acc[i] = 0;
    for (cl = 0; cl < c->nc && L > 0; ++cl) {
        double nn = 0;
        const float *m = c->cen + ((size_t)h * c->nc + cl) * D;
        for (e = 0; e < D; ++e) nn += (double)m[e] * m[e];
        for (e = 0; e < D; ++e) mu[e] = nn > 0 ? m[e] / sqrt(nn) : 0;
        rb_window(c, k, b, h, off, L, w, mu, kw, ok, ent);
        if (c->sep) rb_window(c, q, b, h, off, L, w, mu, qw, ok, ent);
        else memcpy(qw, kw, sizeof(int) * (size_t)w);
        for (a = 0; a < w; ++a) {
            const int p = qw[a];
            double mx = -INFINITY, l = 0;
            for (j = 0; j < w; ++j) {
                const int kj = kw[j];
                double x = 0, kn = 0;
                if (c->causal && kj > p) { s[j] = -INFINITY; continue; }
                if (kj == p && !c->sep) { s[j] = -5e4; if (s[j] > mx) mx = s[j]; continue; }
                for (e = 0; e < D; ++e) kn += RB_AT(k, kj, e, D) * RB_AT(k, kj, e, D);
                for (e = 0; e < D; ++e) kp[e] = c->normk ? (kn > 0 ? RB_AT(k, kj, e, D) / sqrt(kn) : 0) : RB_AT(k, kj, e, D);
                for (e = 0; e < D; ++e) x += RB_AT(q, p, e, D) * kp[e];
                s[j] = x * scale;
                if (s[j] > mx) mx = s[j];
            }
            for (j = 0; j < w; ++j) { s[j] = s[j] - mx > -800 ? exp(s[j] - mx) : 0.0; l += s[j]; }
            for (j = 0; j < w; ++j)
                if (s[j] > 0)
                    for (e = 0; e < Dv; ++e) acc[(size_t)(p - off) * Dv + e] += s[j] / l * RB_AT(v, kw[j], e, Dv);
            cnt[p - off]++;
        }
    }
    for (i = 0; i < L; ++i)
        for (e = 0; e < Dv; ++e) {
            const double y = cnt[i] ? acc[(size_t)i * Dv + e] / (cnt[i] + c->ceps) : 0;
            loss += y * RB_AT(dout, off + i, e, Dv);
            if (o) RB_AT(o, off + i, e, Dv) = y;
        }
    free(kw); free(qw); free(cnt); free(ent); free(acc); free(s); free(mu); free(kp);
    return loss;
}

/* The whole output (padding rows 0); returns 0 on a near tie anywhere. */
static int rb_forward(const rb_case *c, const double *q, const double *k, const double *v, const double *dout, double *o) {
    int b, h, i, ok = 1, off, L;
    memset(o, 0, sizeof(double) * (size_t)c->B * c->n * c->H * c->Dv);
    for (b = 0; b < c->B; ++b)
        for (h = 0; h < c->H; ++h)
            for (i = 0; i < c->n; ++i)   /* each sequence once: at its first row */
                if (rb_unit(c, b, i, &off, &L) && i == off) rb_loss(c, q, k, v, dout, b, h, off, L, o, &ok);
    return ok;
}

/* d loss / d x[b][i][h][e] by central differences (x is q, k or v; tied: q and k together) */
static double rb_fd(const rb_case *c, double *q, double *k, double *v, const double *dout, double *x, double *x2, int dim,
                    int b, int i, int h, int e) {
    const double step = 1e-5;
    const size_t at = (((size_t)b * c->n + i) * c->H + h) * dim + e;
    const double x0 = x[at];
    double lp, lm;
    int off, L, ok = 1;
    if (!rb_unit(c, b, i, &off, &L)) return 0.0;
    x[at] = x0 + step; if (x2) x2[at] = x0 + step;
    lp = rb_loss(c, q, k, v, dout, b, h, off, L, NULL, &ok);
    x[at] = x0 - step; if (x2) x2[at] = x0 - step;
    lm = rb_loss(c, q, k, v, dout, b, h, off, L, NULL, &ok);
    x[at] = x0; if (x2) x2[at] = x0;
    return (lp - lm) / (2 * step);
}

/* got (a tensor) against finite differences at every coordinate (stride 1) or a sample */
static void rb_check_grad(const rb_case *c, const char *what, const char *name, const attn_tensor *got, const attn_tensor *got2,
                          double *q, double *k, double *v, const double *dout, double *x, double *x2, int dim, int every) {
    double mx = 1.0, err = 0.0;
    int b, i, h, e, idx = 0;
    for (b = 0; b < c->B; ++b)
        for (i = 0; i < c->n; ++i)
            for (h = 0; h < c->H; ++h)
                for (e = 0; e < dim; ++e, ++idx) {
                    double g, fd;
                    if (idx % every) continue;
                    g = t_load(got, b, i, h, e) + (got2 ? t_load(got2, b, i, h, e) : 0.0);
                    fd = rb_fd(c, q, k, v, dout, x, x2, dim, b, i, h, e);
                    if (fabs(fd) > mx) mx = fabs(fd);
                    if (!(fabs(g - fd) <= err)) err = g != g ? INFINITY : fabs(g - fd);
                }
    T_CHECK(err / mx <= 2e-4, "%s: %s against finite differences: max err %.3g (max |grad| %.3g)", what, name, err, mx);
}

/* padded rows (no sequence holds them) of a gradient are exactly 0 */
static int rb_padding_zero(const rb_case *c, const attn_tensor *g) {
    int b, i, h, e, off, L;
    for (b = 0; b < c->B; ++b)
        for (i = 0; i < c->n; ++i)
            if (!rb_unit(c, b, i, &off, &L))
                for (h = 0; h < g->heads; ++h)
                    for (e = 0; e < g->dim; ++e) if (t_load(g, b, i, h, e) != 0.0) return 0;
    return 1;
}

static void rb_desc(const rb_case *c, attn_desc *d) {
    memset(d, 0, sizeof *d);
    d->kind = ATTN_ROUTING; d->causal = c->causal;
    d->routing.centroids = c->cen; d->routing.n_clusters = c->nc; d->routing.window = c->window;
    d->routing.normalize_keys = c->normk; d->routing.count_eps = (float)c->ceps; d->routing.separate_qk = c->sep;
    if (c->cu) { d->cu_seqlens_q = d->cu_seqlens_k = c->cu; d->varlen_batch = c->segs; }
    else d->seqlens_k = c->lens;
}

/* One case: shared puts one tensor in as q and k; every: finite-difference stride */
static void rb_run(t_rng *r, rb_case *c, int shared, attn_dtype dt, int every) {
    const int B = c->B, n = c->n, H = c->H, D = c->D, Dv = c->Dv;
    const size_t nq = (size_t)B * n * H * D, nv = (size_t)B * n * H * Dv;
    t_owned q = t_owned_dense(dt, B, n, H, D), k = t_owned_dense(dt, B, n, H, D), v = t_owned_dense(dt, B, n, H, Dv);
    t_owned dout = t_owned_dense(dt, B, n, H, Dv), out = t_owned_dense(ATTN_F32, B, n, H, Dv);
    t_owned dq[3], dk[3], dv[3];
    float *cen = (float *)t_xmalloc(sizeof(float) * (size_t)H * c->nc * D);
    double *qd = (double *)t_xmalloc(sizeof(double) * nq), *kd = (double *)t_xmalloc(sizeof(double) * nq);
    double *vd = (double *)t_xmalloc(sizeof(double) * nv), *od = (double *)t_xmalloc(sizeof(double) * nv);
    double *gd = (double *)t_xmalloc(sizeof(double) * nv), *got = (double *)t_xmalloc(sizeof(double) * nv);
    const attn_tensor *kt = shared ? &q.t : &k.t;
    attn_desc d;
    char what[200];
    int tries = 0, t, b, i, off, L;
    for (t = 0; t < 3; ++t) {
        dq[t] = t_owned_dense(ATTN_F32, B, n, H, D); dk[t] = t_owned_dense(ATTN_F32, B, n, H, D);
        dv[t] = t_owned_dense(ATTN_F32, B, n, H, Dv);
        t_fill_nan(dq[t].buf, ATTN_F32, dq[t].n); t_fill_nan(dk[t].buf, ATTN_F32, dk[t].n); t_fill_nan(dv[t].buf, ATTN_F32, dv[t].n);
    }
    c->cen = cen;
    rb_desc(c, &d);
    sprintf(what, "routing bwd B%d n%d H%d D%d/%d nc%d w%d causal%d normk%d eps%g sep%d shared%d %s%s", B, n, H, D, Dv, c->nc,
            c->window, c->causal, c->normk, c->ceps, c->sep, shared, t_dt_name(dt), c->cu ? " packed" : c->lens ? " padded" : "");
    do {
        for (i = 0; i < H * c->nc * D; ++i) cen[i] = (float)t_normal(r);
        t_fill_normal(&q.t, r, 1.0); t_fill_normal(&k.t, r, 1.0); t_fill_normal(&v.t, r, 1.0); t_fill_normal(&dout.t, r, 1.0);
        for (b = 0; b < B; ++b)              /* padding: large garbage, which must change nothing */
            for (i = 0; i < n; ++i)
                if (!rb_unit(c, b, i, &off, &L)) {
                    int h, e;
                    for (h = 0; h < H; ++h) {
                        for (e = 0; e < D; ++e) { t_store(&q.t, b, i, h, e, 100 * t_normal(r)); t_store(&k.t, b, i, h, e, 100 * t_normal(r)); }
                        for (e = 0; e < Dv; ++e) t_store(&v.t, b, i, h, e, 100 * t_normal(r));
                    }
                }
        t_read(&q.t, qd); t_read(kt, kd); t_read(&v.t, vd); t_read(&dout.t, gd);
    } while (!rb_forward(c, qd, kd, vd, gd, od) && ++tries < 20);
    if (!T_CHECK(tries < 20, "%s: no inputs without near ties", what)) goto done;
    {   /* the forward (the backward's out argument), against the reference */
        attn_status s = attn_forward(&d, q.t, *kt, v.t, out.t, NULL);
        if (!T_CHECK(s == ATTN_OK, "%s: forward status %s", what, attn_status_str(s))) goto done;
        t_read(&out.t, got);
        T_CHECK(t_max_norm_err(od, got, nv) <= 1e-5, "%s: forward against the reference", what);
    }
    for (t = 0; t < 3; ++t) {               /* threads 1, 2, 3: the same bits */
        attn_status s;
        d.n_threads = t + 1;
        s = attn_backward(&d, q.t, *kt, v.t, out.t, dout.t, NULL, dq[t].t, dk[t].t, dv[t].t);
        if (!T_CHECK(s == ATTN_OK, "%s: backward status %s (threads %d)", what, attn_status_str(s), t + 1)) goto done;
    }
    T_CHECK(memcmp(dq[0].buf, dq[1].buf, nq * 4) == 0 && memcmp(dq[0].buf, dq[2].buf, nq * 4) == 0 &&
            memcmp(dk[0].buf, dk[1].buf, nq * 4) == 0 && memcmp(dk[0].buf, dk[2].buf, nq * 4) == 0 &&
            memcmp(dv[0].buf, dv[1].buf, nv * 4) == 0 && memcmp(dv[0].buf, dv[2].buf, nv * 4) == 0,
            "%s: threads 1, 2, 3 must give the same bits", what);
    T_CHECK(rb_padding_zero(c, &dq[0].t) && rb_padding_zero(c, &dk[0].t) && rb_padding_zero(c, &dv[0].t),
            "%s: padded rows of dq, dk, dv must be 0", what);
    {   /* the workspace query and a caller workspace: no allocation, the same bits; one byte short */
        size_t bytes = 0, m0;
        void *ws;
        attn_desc e = d;
        e.n_threads = 2;
        T_CHECK(attn_backward_workspace_size(&e, q.t, *kt, v.t, &bytes) == ATTN_OK && bytes > 0, "%s: workspace query", what);
        ws = t_xmalloc(bytes);
        e.workspace = ws; e.workspace_size = bytes;
        t_fill_nan(dq[1].buf, ATTN_F32, dq[1].n);
        m0 = t_attn_mallocs;
        T_CHECK(attn_backward(&e, q.t, *kt, v.t, out.t, dout.t, NULL, dq[1].t, dk[1].t, dv[1].t) == ATTN_OK &&
                t_attn_mallocs == m0 && memcmp(dq[0].buf, dq[1].buf, nq * 4) == 0, "%s: caller workspace", what);
        e.workspace_size = bytes - 1;
        T_CHECK(attn_backward(&e, q.t, *kt, v.t, out.t, dout.t, NULL, dq[1].t, dk[1].t, dv[1].t) == ATTN_ERR_WORKSPACE,
                "%s: a short workspace", what);
        free(ws);
    }
    if (shared) {                           /* one tensor: dq + dk against the tied differences */
        rb_check_grad(c, what, "dq + dk", &dq[0].t, &dk[0].t, qd, kd, vd, gd, qd, kd, D, every);
    } else {
        rb_check_grad(c, what, "dq", &dq[0].t, NULL, qd, kd, vd, gd, qd, NULL, D, every);
        rb_check_grad(c, what, "dk", &dk[0].t, NULL, qd, kd, vd, gd, kd, NULL, D, every);
    }
    rb_check_grad(c, what, "dv", &dv[0].t, NULL, qd, kd, vd, gd, vd, NULL, Dv, every);
done:
    for (t = 0; t < 3; ++t) { t_owned_free(&dq[t]); t_owned_free(&dk[t]); t_owned_free(&dv[t]); }
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&dout); t_owned_free(&out);
    free(cen); free(qd); free(kd); free(vd); free(od); free(gd); free(got);
}

static rb_case rb_make(int B, int n, int H, int D, int Dv, int nc, int window, int causal, int normk, double ceps, int sep) {
    rb_case c;
    memset(&c, 0, sizeof c);
    c.B = B; c.n = n; c.H = H; c.D = D; c.Dv = Dv; c.nc = nc; c.window = window;
    c.causal = causal; c.normk = normk; c.ceps = ceps; c.sep = sep;
    return c;
}

static void rb_cases(void) {
    t_rng r = t_rng_seed(2901);
    static const int lens2[2] = { 37, 20 }, lens3[3] = { 29, 1, 16 }, cu[4] = { 0, 15, 33, 40 }, lens_big[2] = { 150, 97 }, lens_many[2] = { 90, 131 };
    rb_case c;
    c = rb_make(2, 37, 2, 8, 12, 4, 11, 0, 0, 0.0, 0);           /* plain, odd lengths, q != k */
    rb_run(&r, &c, 0, ATTN_F32, 1);
    c = rb_make(2, 37, 2, 8, 12, 4, 11, 1, 0, 0.0, 0);           /* causal, padding */
    c.lens = lens2;
    rb_run(&r, &c, 0, ATTN_F32, 1);
    c = rb_make(2, 37, 2, 8, 8, 4, 9, 1, 1, 1e-5, 0);            /* routing-transformer's shared QK: one tensor */
    c.lens = lens2;
    rb_run(&r, &c, 1, ATTN_F32, 1);
    c = rb_make(3, 29, 1, 8, 8, 3, 7, 0, 1, 1e-5, 0);            /* a sequence of 1 (only itself: -5e4) */
    c.lens = lens3;
    rb_run(&r, &c, 1, ATTN_F32, 1);
    c = rb_make(2, 37, 2, 8, 12, 5, 10, 0, 0, 1e-5, 1);          /* separate_qk, padding */
    c.lens = lens2;
    rb_run(&r, &c, 0, ATTN_F32, 1);
    c = rb_make(1, 45, 2, 8, 8, 3, 8, 1, 1, 0.0, 0);             /* packed sequences, rows past the last 0 */
    c.cu = cu; c.segs = 3;
    rb_run(&r, &c, 0, ATTN_F32, 1);
    c = rb_make(1, 37, 3, 8, 8, 4, 11, 1, 1, 1e-5, 0);           /* 3 heads: 2 threads stage them as 2 + 1 */
    rb_run(&r, &c, 1, ATTN_F32, 1);
    c = rb_make(2, 23, 2, 8, 8, 3, 0, 0, 0, 0.0, 0);             /* window 0 (64) > n: one window of all */
    rb_run(&r, &c, 0, ATTN_F16, 1);
    c = rb_make(2, 150, 1, 8, 8, 3, 80, 1, 1, 1e-5, 0);          /* two key blocks a window, padding */
    c.lens = lens_big;
    rb_run(&r, &c, 0, ATTN_BF16, T_QUICK ? 97 : 31);
    c = rb_make(1, 150, 1, 8, 4, 2, 130, 0, 0, 0.0, 1);          /* separate_qk, three blocks */
    rb_run(&r, &c, 0, ATTN_F32, T_QUICK ? 97 : 31);
    c = rb_make(1, 140, 1, 4, 4, 70, 3, 1, 1, 1e-5, 0);          /* more clusters than one routing batch (64) */
    rb_run(&r, &c, 1, ATTN_F32, T_QUICK ? 29 : 7);
    c = rb_make(2, 131, 1, 4, 4, 67, 2, 0, 0, 0.0, 1);
    c.lens = lens_many;
    rb_run(&r, &c, 0, ATTN_F32, T_QUICK ? 29 : 7);
}

/* Bad input: a specific status and dq, dk, dv untouched. */
static void rb_errors(void) {
    t_owned q = t_owned_dense(ATTN_F32, 2, 8, 2, 4), k = t_owned_dense(ATTN_F32, 2, 8, 2, 4), v = t_owned_dense(ATTN_F32, 2, 8, 2, 4);
    t_owned o = t_owned_dense(ATTN_F32, 2, 8, 2, 4), go = t_owned_dense(ATTN_F32, 2, 8, 2, 4);
    t_owned dq = t_owned_dense(ATTN_F32, 2, 8, 2, 4), dk = t_owned_dense(ATTN_F32, 2, 8, 2, 4), dv = t_owned_dense(ATTN_F32, 2, 8, 2, 4);
    t_owned k1 = t_owned_dense(ATTN_F32, 2, 8, 1, 4), v1 = t_owned_dense(ATTN_F32, 2, 8, 1, 4), bad = t_owned_dense(ATTN_F32, 2, 7, 2, 4);
    float cen[2 * 3 * 4], lse[2 * 2 * 8], dbias[4];
    static const int lens_bad[2] = { 8, 9 }, lq[2] = { 8, 5 }, lk[2] = { 8, 6 };
    attn_tensor none, bc;
    attn_desc d, e;
    t_rng r = t_rng_seed(7);
    int i;
    for (i = 0; i < 24; ++i) cen[i] = (float)t_normal(&r);
    memset(lse, 0, sizeof lse);
    t_fill_normal(&q.t, &r, 1); t_fill_normal(&k.t, &r, 1); t_fill_normal(&v.t, &r, 1); t_fill_normal(&go.t, &r, 1);
    memset(&d, 0, sizeof d);
    memset(&none, 0, sizeof none);
    d.kind = ATTN_ROUTING; d.routing.centroids = cen; d.routing.n_clusters = 3; d.routing.window = 4;
    T_CHECK(attn_forward(&d, q.t, k.t, v.t, o.t, NULL) == ATTN_OK, "routing bwd errors: forward");
    t_sentinel(dq.buf, dq.n * 4, 1); t_sentinel(dk.buf, dk.n * 4, 2); t_sentinel(dv.buf, dv.n * 4, 3);
#define RB_EXPECT(desc, qq, kk, vv, oo, gg, ll, a, b_, c_, want, label) \
    t_expect_status(attn_backward(desc, qq, kk, vv, oo, gg, ll, a, b_, c_), want, "routing bwd", label)
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, lse, dq.t, dk.t, dv.t, ATTN_ERR_ROUTING_LSE, "lse given");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, none, NULL, dq.t, dk.t, dv.t, ATTN_ERR_BWD_NULL_DOUT, "dout NULL");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, none, dk.t, dv.t, ATTN_ERR_BWD_NULL_DQ, "dq NULL");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, none, dv.t, ATTN_ERR_BWD_NULL_DK, "dk NULL");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, none, ATTN_ERR_BWD_NULL_DV, "dv NULL");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, bad.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_BWD_DOUT_SHAPE, "dout shape");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, bad.t, dk.t, dv.t, ATTN_ERR_BWD_DQ_SHAPE, "dq shape");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, bad.t, dv.t, ATTN_ERR_BWD_DK_SHAPE, "dk shape");
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, bad.t, ATTN_ERR_BWD_DV_SHAPE, "dv shape");
    bc = dk.t; bc.stride_seq = 0;
    RB_EXPECT(&d, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, bc, dv.t, ATTN_ERR_BWD_DK_BROADCAST, "dk broadcast");
    RB_EXPECT(&d, q.t, k.t, v.t, none, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_NULL_OUT, "out NULL");
    RB_EXPECT(&d, q.t, k1.t, v1.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_LSH_HEADS, "k.heads != q.heads (no GQA)");
    RB_EXPECT(&d, q.t, q.t, v.t, o.t, go.t, NULL, q.t, dk.t, dv.t, ATTN_ERR_BWD_OVERLAP, "dq is q");
    e = d; e.dbias = dbias;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_BWD_DBIAS_NO_BIAS, "dbias");
    e = d; e.routing.separate_qk = 1; e.causal = 1;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_ROUTING_OPTIONS, "separate_qk with causal");
    e = d; e.routing.centroids = NULL;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_ROUTING_CENTROIDS, "centroids NULL");
    e = d; e.seqlens_k = lens_bad;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_SEQLENS_K, "seqlens_k > seq");
    e = d; e.seqlens_q = lq; e.seqlens_k = lk;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_ROUTING_SEQLENS, "seqlens_q != seqlens_k");
    e = d; e.softcap = 1.0f;
    RB_EXPECT(&e, q.t, k.t, v.t, o.t, go.t, NULL, dq.t, dk.t, dv.t, ATTN_ERR_SPARSE_MASKS, "softcap");
    {
        size_t bytes = 0;
        T_CHECK(attn_backward_workspace_size(&d, q.t, k.t, v.t, NULL) == ATTN_ERR_NULL_ARG &&
                attn_backward_workspace_size(&d, q.t, k1.t, v1.t, &bytes) == ATTN_ERR_LSH_HEADS,
                "routing bwd errors: workspace query statuses");
    }
#undef RB_EXPECT
    T_CHECK(t_sentinel_ok(dq.buf, dq.n * 4, 1) && t_sentinel_ok(dk.buf, dk.n * 4, 2) && t_sentinel_ok(dv.buf, dv.n * 4, 3),
            "routing bwd errors: a failed call wrote dq, dk or dv");
    t_owned_free(&q); t_owned_free(&k); t_owned_free(&v); t_owned_free(&o); t_owned_free(&go);
    t_owned_free(&dq); t_owned_free(&dk); t_owned_free(&dv); t_owned_free(&k1); t_owned_free(&v1); t_owned_free(&bad);
}

/* max |got - ref| / max |ref| (relative to the largest reference value) */
static double rb_rel(const double *ref, const float *got, size_t n) {
    double mx = 0, err = 0;
    size_t i;
    for (i = 0; i < n; ++i) if (fabs(ref[i]) > mx) mx = fabs(ref[i]);
    for (i = 0; i < n; ++i) if (!(fabs(got[i] - ref[i]) <= err)) err = got[i] != got[i] ? INFINITY : fabs(got[i] - ref[i]);
    return mx > 0 ? err / mx : err;
}

/* routing-transformer 1.6.1's KmeansAttention under torch autograd (fixture): routing.normalize_keys
   = shared_qk, separate_qk = !shared_qk, count_eps 1e-5 (its scatter_mean), the default scale. */
/* array `name` of configuration cfg of routing_transformer_bwd.txt (n values), malloc'd, or NULL */
static double *rb_fix(const char *name, int cfg, size_t n) {
    double *p = (double *)t_xmalloc(sizeof(double) * (n ? n : 1));
    if (!T_FIXTURE_NTH("routing_transformer_bwd.txt", name, cfg, p, n)) { free(p); return NULL; }
    return p;
}

static void rb_fixture(void) {
    double c8[8];
    int cfg = 0;
    if (!T_CHECK(T_FIXTURE("routing_transformer_bwd.txt", "config", c8, 8), "routing bwd fixture: cannot read "
                 "tests/fixtures/routing_transformer_bwd.txt (run from the repository root or set ATTN_FIXTURES)")) return;
    for (;;) {
        size_t i;
        double *cf = rb_fix("config", cfg, 8), *ln, *a[10];
        static const char *names[10] = { "q", "k", "v", "means", "dout", "out", "dq", "dk", "dv", "dqk" };
        int causal, B, T, H, DH, NC, W, shared, ok = 1, j;
        if (!cf) break;
        causal = (int)cf[0]; B = (int)cf[1]; T = (int)cf[2]; H = (int)cf[3]; DH = (int)cf[4]; NC = (int)cf[5]; W = (int)cf[6];
        shared = (int)cf[7];
        ln = rb_fix("lens", cfg, (size_t)B);
        /* shared_qk=False configurations have no dqk: the k-th dqk is the k-th shared configuration's */
        for (j = 0; j < 10; ++j) a[j] = NULL;
        for (j = 0; j < 9; ++j) a[j] = rb_fix(names[j], cfg, j == 3 ? (size_t)H * NC * DH : (size_t)B * T * H * DH);
        for (j = 0; j < 9; ++j) ok &= a[j] != NULL;
        if (shared) {
            int k, nth = 0;
            for (k = 0; k < cfg; ++k) {   /* the shared configurations before this one */
                double c8[8];
                nth += T_FIXTURE_NTH("routing_transformer_bwd.txt", "config", k, c8, 8) && c8[7] != 0;
            }
            ok &= (a[9] = rb_fix("dqk", nth, (size_t)B * T * H * DH)) != NULL;
        }
        if (T_CHECK(ok && ln, "routing bwd fixture: malformed tests/fixtures/routing_transformer_bwd.txt (config %d)", cfg)) {
            const size_t nx = (size_t)B * T * H * DH;
            float *buf = (float *)t_xmalloc(sizeof(float) * nx * 9), *cen = (float *)t_xmalloc(sizeof(float) * (size_t)H * NC * DH);
            int lens[8];
            attn_desc d;
            attn_tensor t[8];
            attn_status s1, s2;
            double e[5];
            for (j = 0; j < B && j < 8; ++j) lens[j] = (int)ln[j];
            for (i = 0; i < (size_t)H * NC * DH; ++i) cen[i] = (float)a[3][i];
            for (j = 0; j < 8; ++j) {        /* q k v dout out dq dk dv */
                const int src = j < 3 ? j : j + 1;
                t[j] = attn_tensor_dense(buf + (size_t)j * nx, ATTN_F32, B, T, H, DH);
                for (i = 0; i < nx; ++i) buf[(size_t)j * nx + i] = j < 4 ? (float)a[src][i] : (float)NAN;
            }
            memset(&d, 0, sizeof d);
            d.kind = ATTN_ROUTING; d.causal = causal; d.seqlens_k = lens;
            d.routing.centroids = cen; d.routing.n_clusters = NC; d.routing.window = W;
            d.routing.normalize_keys = shared; d.routing.separate_qk = !shared; d.routing.count_eps = 1e-5f;
            s1 = attn_forward(&d, t[0], t[1], t[2], t[4], NULL);
            s2 = attn_backward(&d, t[0], t[1], t[2], t[4], t[3], NULL, t[5], t[6], t[7]);
            e[0] = rb_rel(a[5], buf + 4 * nx, nx);
            e[1] = rb_rel(a[6], buf + 5 * nx, nx);
            e[2] = rb_rel(a[7], buf + 6 * nx, nx);
            e[3] = rb_rel(a[8], buf + 7 * nx, nx);
            e[4] = 0;
            if (shared) {                    /* the one shared tensor: dq + dk */
                for (i = 0; i < nx; ++i) buf[8 * nx + i] = buf[5 * nx + i] + buf[6 * nx + i];
                e[4] = rb_rel(a[9], buf + 8 * nx, nx);
            }
            T_CHECK(s1 == ATTN_OK && s2 == ATTN_OK && e[0] <= 1e-5 && e[1] <= 1e-4 && e[2] <= 1e-4 && e[3] <= 1e-4 && e[4] <= 1e-4,
                    "routing-transformer bwd fixture (causal %d, shared_qk %d, window %d): %s / %s, relative errors out %.3g "
                    "dq %.3g dk %.3g dv %.3g dqk %.3g", causal, shared, W, attn_status_str(s1), attn_status_str(s2), e[0], e[1],
                    e[2], e[3], e[4]);
            printf("     routing-transformer autograd fixture causal %d shared_qk %d window %d: relative error out %.2g, dq %.2g, "
                   "dk %.2g, dv %.2g%s", causal, shared, W, e[0], e[1], e[2], e[3], shared ? "" : "\n");
            if (shared) printf(", dq + dk %.2g\n", e[4]);
            free(buf); free(cen);
        }
        free(cf); free(ln);
        for (j = 0; j < 10; ++j) free(a[j]);
        ++cfg;
    }
    T_CHECK(cfg == 4, "routing bwd fixture: %d configurations, want 4", cfg);
}

void test_routing_bwd(void) {
    rb_cases();
    rb_errors();
    rb_fixture();
}
