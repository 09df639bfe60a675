/* bench/bench_peers.c - each family against its PyTorch reference implementation, forward and
   backward, one thread, rounds interleaved (issue #33's "every figure with its peer").

   For each row of the family table: attn.h's forward and its backward (the op alone, n_threads
   1) on fixed inputs, then bench/peers_torch.py runs the reference on the very same inputs (a
   float32 file written here) in its own process through popen, so the two never share the
   cores; >= 5 such rounds, medians, ratio = peer ms / attn.h ms. Each row also prints max
   |attn.h - peer| of the output and of one gradient (the loss is sum(out * dout) on both
   sides), so a mismatch of conventions shows. BENCH_PYTHON picks the Python (default python3;
   empty: no peers, one line says why); a missing package skips just its row, with the reason.
   Writes bench/results_peers.csv (the machine and the peer versions in every row).

   Usage: build/bench_peers [rounds]     (run from the repository root; default 5 rounds)
   BENCH_PEERS_ONLY=<name> runs that row alone and writes build/results_peers_<name>.csv instead
   (the committed CSV keeps the complete run). */
#define _POSIX_C_SOURCE 200809L   /* popen, for the PyTorch peer */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include "bench_util.h"

#define PEER_FILE "build/bench_peers_inputs.bin"
#define PEER_CODE "import runpy, sys; sys.argv[0] = \"bench/peers_torch.py\"; runpy.run_path(sys.argv[0], run_name=\"__main__\")"

enum { SETUP, FWD, BWD, FREE };

static float *buf(size_t n, double lo, double hi) {   /* uniform in [lo, hi) */
    float *p = (float *)xalloc(sizeof(float) * n);
    size_t i;
    for (i = 0; i < n; ++i) p[i] = (float)(lo + (hi - lo) * 0.5 * (frand() + 1.0));
    return p;
}
static void put(FILE *f, const float *p, size_t n) {
    if (fwrite(p, sizeof(float), n, f) != n) die("cannot write " PEER_FILE);
}
static void check(attn_status s, const char *what) {
    if (s != ATTN_OK) { fprintf(stderr, "bench: %s: %s\n", what, attn_status_str(s)); exit(3); }
}

/* ---- RWKV-4 WKV vs Hugging Face rwkv_linear_attention_cpu: B 1, T 512, C 1024 ------------ */
static void rwkv4(int what, FILE *f, char *dims) {
    enum { B = 1, T = 512, C = 1024 };
    static float *td, *tf, *k, *v, *dout, *out, *dk, *dv, *dtd, *dtf;
    static attn_rwkv_desc rd;
    const size_t n = (size_t)B * T * C;
    attn_tensor K = attn_tensor_dense(k, ATTN_F32, B, T, 1, C), V = attn_tensor_dense(v, ATTN_F32, B, T, 1, C);
    if (what == SETUP) {
        td = buf(C, -1.0, 1.0); tf = buf(C, -1.0, 1.0); k = buf(n, -2.0, 2.0); v = buf(n, -1.0, 1.0);
        dout = buf(n, -1.0, 1.0); out = buf(n, 0, 0); dk = buf(n, 0, 0); dv = buf(n, 0, 0); dtd = buf(C, 0, 0);
        dtf = buf(C, 0, 0);
        rd.n_threads = 1;
        sprintf(dims, "%d %d %d", B, T, C);
        rwkv4(FWD, f, dims); rwkv4(BWD, f, dims);
        put(f, td, C); put(f, tf, C); put(f, k, n); put(f, v, n); put(f, dout, n); put(f, out, n); put(f, dk, n);
    } else if (what == FWD) {
        check(attn_rwkv4_forward(&rd, td, tf, K, V, attn_tensor_dense(out, ATTN_F32, B, T, 1, C), NULL, NULL), "rwkv4 forward");
    } else if (what == BWD) {
        check(attn_rwkv4_backward(&rd, td, tf, K, V, attn_tensor_dense(dout, ATTN_F32, B, T, 1, C), NULL, NULL,
                                  attn_tensor_dense(dk, ATTN_F32, B, T, 1, C), attn_tensor_dense(dv, ATTN_F32, B, T, 1, C),
                                  dtd, dtf, NULL), "rwkv4 backward");
    } else {
        free(td); free(tf); free(k); free(v); free(dout); free(out); free(dk); free(dv); free(dtd); free(dtf);
    }
}

/* ---- Mamba's selective scan vs Hugging Face MambaMixer.slow_forward's scan: B 1, D 1536,
   L 256, N 16 (per-token B and C, delta_bias + softplus, D skip, SiLU gate) ---------------- */
static void mamba(int what, FILE *f, char *dims) {
    enum { B = 1, D = 1536, L = 256, N = 16 };
    static float *u, *delta, *A, *Bm, *Cm, *Dk, *z, *dbias, *dy, *y;
    static float *du, *ddelta, *dz, *dA, *dB, *dC, *dD, *ddb;
    static attn_ssm_desc sd;
    static attn_ssm_grads g;
    const size_t n = (size_t)B * D * L, nbc = (size_t)B * N * L;
    attn_ssm_tensor U = attn_ssm_tensor_dense(u, ATTN_F32, D, L), DL = attn_ssm_tensor_dense(delta, ATTN_F32, D, L);
    attn_ssm_tensor BT = attn_ssm_tensor_dense(Bm, ATTN_F32, N, L), CT = attn_ssm_tensor_dense(Cm, ATTN_F32, N, L);
    attn_ssm_tensor Z = attn_ssm_tensor_dense(z, ATTN_F32, D, L);
    if (what == SETUP) {
        u = buf(n, -1.0, 1.0); delta = buf(n, -3.0, 0.0); A = buf((size_t)D * N, -1.5, -0.5); Bm = buf(nbc, -1.0, 1.0);
        Cm = buf(nbc, -1.0, 1.0); Dk = buf(D, -1.0, 1.0); z = buf(n, -1.0, 1.0); dbias = buf(D, -1.0, 0.0);
        dy = buf(n, -1.0, 1.0); y = buf(n, 0, 0);
        g.du = du = buf(n, 0, 0); g.ddelta = ddelta = buf(n, 0, 0); g.dz = dz = buf(n, 0, 0);
        g.dA = dA = buf((size_t)D * N, 0, 0); g.dB = dB = buf(nbc, 0, 0); g.dC = dC = buf(nbc, 0, 0);
        g.dD = dD = buf(D, 0, 0); g.ddelta_bias = ddb = buf(D, 0, 0);
        sd.batch = B; sd.dim = D; sd.len = L; sd.d_state = N; sd.n_groups = 1; sd.delta_softplus = 1; sd.n_threads = 1;
        sprintf(dims, "%d %d %d %d", B, D, L, N);
        mamba(FWD, f, dims); mamba(BWD, f, dims);
        put(f, u, n); put(f, delta, n); put(f, A, (size_t)D * N); put(f, Bm, nbc); put(f, Cm, nbc); put(f, Dk, D);
        put(f, z, n); put(f, dbias, D); put(f, dy, n); put(f, y, n); put(f, du, n);
    } else if (what == FWD) {
        check(attn_ssm_selective_scan(&sd, U, DL, A, BT, CT, Dk, Z, dbias, NULL, attn_ssm_tensor_dense(y, ATTN_F32, D, L),
                                      NULL), "mamba forward");
    } else if (what == BWD) {
        check(attn_ssm_selective_scan_backward(&sd, U, DL, A, BT, CT, Dk, Z, dbias, NULL,
                                               attn_ssm_tensor_dense(dy, ATTN_F32, D, L), &g), "mamba backward");
    } else {
        free(u); free(delta); free(A); free(Bm); free(Cm); free(Dk); free(z); free(dbias); free(dy); free(y);
        free(du); free(ddelta); free(dz); free(dA); free(dB); free(dC); free(dD); free(ddb);
    }
}

/* ---- RWKV-6 vs fla's naive_recurrent_rwkv6: B 1, T 256, H 8, K 64; fla's log decay
   exponentiated and r times fla's default scale K^-1/2 (docs/porting.md); the dr written for
   the comparison is attn.h's times that scale (fla's leaf is the unscaled r) ---------------- */
static void rwkv6(int what, FILE *f, char *dims) {
    enum { B = 1, T = 256, H = 8, K = 64 };
    static float *r, *rs, *k, *v, *lw, *w, *u, *dout, *o, *dr, *dk, *dv, *dw, *du;
    static attn_rwkv_desc rd;
    const size_t n = (size_t)B * T * H * K;
    const float scale = 0.125f;   /* 64^-1/2 */
    attn_tensor R = attn_tensor_dense(rs, ATTN_F32, B, T, H, K), Kt = attn_tensor_dense(k, ATTN_F32, B, T, H, K);
    attn_tensor Vt = attn_tensor_dense(v, ATTN_F32, B, T, H, K), W = attn_tensor_dense(w, ATTN_F32, B, T, H, K);
    size_t i;
    if (what == SETUP) {
        r = buf(n, -1.0, 1.0); rs = buf(n, 0, 0); k = buf(n, -1.0, 1.0); v = buf(n, -1.0, 1.0);
        lw = buf(n, -1.0, -0.01); w = buf(n, 0, 0); u = buf((size_t)H * K, -0.5, 0.5); dout = buf(n, -1.0, 1.0);
        o = buf(n, 0, 0); dr = buf(n, 0, 0); dk = buf(n, 0, 0); dv = buf(n, 0, 0); dw = buf(n, 0, 0);
        du = buf((size_t)H * K, 0, 0);
        for (i = 0; i < n; ++i) { rs[i] = r[i] * scale; w[i] = expf(lw[i]); }
        rd.head_size = K; rd.n_threads = 1;
        sprintf(dims, "%d %d %d %d", B, T, H, K);
        rwkv6(FWD, f, dims); rwkv6(BWD, f, dims);
        for (i = 0; i < n; ++i) dk[i] = dr[i] * scale;   /* fla's r.grad, in dk's buffer for the write */
        put(f, r, n); put(f, k, n); put(f, v, n); put(f, lw, n); put(f, u, (size_t)H * K); put(f, dout, n);
        put(f, o, n); put(f, dk, n);
    } else if (what == FWD) {
        check(attn_rwkv6_forward(&rd, R, Kt, Vt, W, u, attn_tensor_dense(o, ATTN_F32, B, T, H, K), NULL, NULL),
              "rwkv6 forward");
    } else if (what == BWD) {
        check(attn_rwkv6_backward(&rd, R, Kt, Vt, W, u, attn_tensor_dense(dout, ATTN_F32, B, T, H, K), NULL, NULL,
                                  attn_tensor_dense(dr, ATTN_F32, B, T, H, K), attn_tensor_dense(dk, ATTN_F32, B, T, H, K),
                                  attn_tensor_dense(dv, ATTN_F32, B, T, H, K), attn_tensor_dense(dw, ATTN_F32, B, T, H, K),
                                  du, NULL), "rwkv6 backward");
    } else {
        free(r); free(rs); free(k); free(v); free(lw); free(w); free(u); free(dout); free(o); free(dr); free(dk);
        free(dv); free(dw); free(du);
    }
}

/* ---- Nystromformer vs Hugging Face NystromformerSelfAttention: B 1, S 2048, H 4, D 64, 64
   landmarks, HF's defaults (conv 65, Z0 over the batch, 6 iterations), no mask; HF's q/k/v
   Linear layers replaced by the tensors themselves (tests/fixtures/nystromformer_hf_bwd.py) -- */
static void nystrom(int what, FILE *f, char *dims) {
    enum { B = 1, S = 2048, H = 4, D = 64, M = 64, KC = 65 };
    static float *q, *k, *v, *conv, *dout, *o, *dq, *dk, *dv, *dconv;
    static attn_desc d;
    const size_t n = (size_t)B * S * H * D;
    attn_tensor Q = attn_tensor_dense(q, ATTN_F32, B, S, H, D), Kt = attn_tensor_dense(k, ATTN_F32, B, S, H, D);
    attn_tensor Vt = attn_tensor_dense(v, ATTN_F32, B, S, H, D), O = attn_tensor_dense(o, ATTN_F32, B, S, H, D);
    if (what == SETUP) {
        q = buf(n, -1.0, 1.0); k = buf(n, -1.0, 1.0); v = buf(n, -1.0, 1.0); conv = buf((size_t)H * KC, -0.1, 0.1);
        dout = buf(n, -1.0, 1.0); o = buf(n, 0, 0); dq = buf(n, 0, 0); dk = buf(n, 0, 0); dv = buf(n, 0, 0);
        dconv = buf((size_t)H * KC, 0, 0);
        d.kind = ATTN_NYSTROM; d.n_threads = 1;
        d.nystrom.landmarks = M; d.nystrom.conv = conv; d.nystrom.conv_kernel = KC; d.nystrom.dconv = dconv;
        d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_HF; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;
        sprintf(dims, "%d %d %d %d %d %d", B, S, H, D, M, KC);
        nystrom(FWD, f, dims); nystrom(BWD, f, dims);
        put(f, q, n); put(f, k, n); put(f, v, n); put(f, conv, (size_t)H * KC); put(f, dout, n); put(f, o, n); put(f, dq, n);
    } else if (what == FWD) {
        check(attn_forward(&d, Q, Kt, Vt, O, NULL), "nystrom forward");
    } else if (what == BWD) {
        check(attn_backward(&d, Q, Kt, Vt, O, attn_tensor_dense(dout, ATTN_F32, B, S, H, D), NULL,
                            attn_tensor_dense(dq, ATTN_F32, B, S, H, D), attn_tensor_dense(dk, ATTN_F32, B, S, H, D),
                            attn_tensor_dense(dv, ATTN_F32, B, S, H, D)), "nystrom backward");
    } else {
        free(q); free(k); free(v); free(conv); free(dout); free(o); free(dq); free(dk); free(dv); free(dconv);
    }
}

/* the families with a PyTorch peer: name (peers_torch.py's key), the peer, the shape used */
static const struct {
    const char *name, *peer, *shape;
    void (*run)(int what, FILE *f, char *dims);
} families[] = {
    { "rwkv4", "HF rwkv_linear_attention_cpu", "B 1 T 512 C 1024", rwkv4 },
    { "mamba", "HF MambaMixer slow_forward scan", "B 1 D 1536 L 256 N 16", mamba },
    { "rwkv6", "fla naive_recurrent_rwkv6", "B 1 T 256 H 8 K 64", rwkv6 },
    { "nystrom", "HF NystromformerSelfAttention", "B 1 S 2048 H 4 D 64 m 64", nystrom },
};

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const int nf = (int)(sizeof families / sizeof families[0]);
    const char *only = getenv("BENCH_PEERS_ONLY");
    char ver[512], dims[128], args[512], last[512], path[256];
    int fi, r, torch_on;
    FILE *csv;
    if (rounds < 1 || rounds > 64) die("rounds: 1..64");
    printf("bench_peers: attn.h vs PyTorch peers, one thread, %d interleaved rounds, medians\n", rounds);
    printf("  machine: %s; kernels %s\n", bench_cpu(), attn_kernels());
    torch_on = torch_probe_ok("import torch; print(torch.__version__)", ver, sizeof ver);
    if (!torch_on) { printf("  no peers: %s\n", g_torch_why); return 0; }
    printf("  PyTorch %s (%s)\n", ver, g_python);
    if (only && *only) snprintf(path, sizeof path, "build/results_peers_%s.csv", only);
    else snprintf(path, sizeof path, "bench/results_peers.csv");
    if (!(csv = fopen(path, "w"))) die("cannot write the CSV");
    bench_csv_header(csv, "family,peer,shape,threads,rounds,attn_fwd_ms,attn_bwd_ms,peer_fwd_ms,peer_bwd_ms,"
                          "fwd_ratio,bwd_ratio,max_diff_out,max_diff_grad,peer_versions");
    for (fi = 0; fi < nf; ++fi) {
        double ta[2][64], tp[2][64], res[4] = { 0 }, m[4];
        FILE *f = fopen(PEER_FILE, "wb");
        int ok = 1;
        if (only && *only && strcmp(only, families[fi].name) != 0) { if (f) fclose(f); continue; }
        if (!f) die("cannot write " PEER_FILE " (run from the repository root after make)");
        families[fi].run(SETUP, f, dims);   /* also one warm-up forward and backward */
        if (fclose(f) != 0) die("cannot write " PEER_FILE);
        snprintf(args, sizeof args, "%s %s %s", families[fi].name, PEER_FILE, dims);
        for (r = 0; r < rounds && ok; ++r) {
            double t0 = now_s();
            families[fi].run(FWD, NULL, dims);
            ta[0][r] = now_s() - t0;
            t0 = now_s();
            families[fi].run(BWD, NULL, dims);
            ta[1][r] = now_s() - t0;
            if (python_run(PEER_CODE, args, res, 4, last, sizeof last) != 4) {
                printf("  %-6s %s: skipped: %s\n", families[fi].name, families[fi].peer, last[0] ? last : g_torch_why);
                ok = 0;
                break;
            }
            tp[0][r] = res[0] * 1e-3; tp[1][r] = res[1] * 1e-3;
        }
        families[fi].run(FREE, NULL, dims);
        if (!ok) continue;
        m[0] = median_of(ta[0], rounds, NULL, NULL) * 1e3; m[1] = median_of(ta[1], rounds, NULL, NULL) * 1e3;
        m[2] = median_of(tp[0], rounds, NULL, NULL) * 1e3; m[3] = median_of(tp[1], rounds, NULL, NULL) * 1e3;
        printf("  %-6s %-32s %-24s attn.h fwd %9.2f ms bwd %9.2f ms | peer fwd %9.2f ms bwd %9.2f ms | "
               "peer/attn.h %6.1fx fwd %6.1fx bwd | max diff out %.2e grad %.2e | %s\n",
               families[fi].name, families[fi].peer, families[fi].shape, m[0], m[1], m[2], m[3], m[2] / m[0],
               m[3] / m[1], res[2], res[3], last);
        bench_csv_machine(csv);
        fprintf(csv, "%s,\"%s\",\"%s\",1,%d,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.3e,%.3e,\"%s\"\n", families[fi].name,
                families[fi].peer, families[fi].shape, rounds, m[0], m[1], m[2], m[3], m[2] / m[0], m[3] / m[1],
                res[2], res[3], strncmp(last, "versions: ", 10) == 0 ? last + 10 : last);
        fflush(csv);
    }
    if (fclose(csv) != 0) die("cannot write the CSV");
    remove(PEER_FILE);
    return 0;
}
