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

   Usage: build/bench_peers [rounds [family ...]]   (run from the repository root; default 5
   rounds; naming families runs only those and writes no CSV: the CSV is one complete run) */
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

/* The rows below share one shape where the peer allows: B 1, S 4096, H 4, D 64, q/k/v/out
   [B][S][H][D] (the peers get [B, S, H*D] or their [B, H, S, D] view of the same memory). */
enum { PB = 1, PS = 4096, PH = 4, PD = 64 };
#define PN ((size_t)PB * PS * PH * PD)
#define PT(p) attn_tensor_dense(p, ATTN_F32, PB, PS, PH, PD)

/* q, k (k NULL: shared QK), v, dout random, the rest zero: the buffers every attention row needs */
static void qkv_setup(float **q, float **k, float **v, float **dout, float **o, float **dq, float **dk, float **dv) {
    *q = buf(PN, -1.0, 1.0); *v = buf(PN, -1.0, 1.0); *dout = buf(PN, -1.0, 1.0);
    if (k) *k = buf(PN, -1.0, 1.0);
    *o = buf(PN, 0, 0); *dq = buf(PN, 0, 0); *dk = buf(PN, 0, 0); *dv = buf(PN, 0, 0);
}

/* ---- BigBird vs HF BigBirdBlockSparseAttention.bigbird_block_sparse_attention: block 64, 3
   random blocks, q/k/v fed directly (tests/fixtures/bigbird_bwd_hf.py). HF runs in training
   mode (in eval its rand_attn is all zeros) with its random draw replaced by the table drawn
   here (per head and middle block row, 3 distinct blocks outside the row's window and the
   global blocks), which attn.h reads as ATTN_BIGBIRD_HF_LISTED --------------------------- */
static void bigbird(int what, FILE *f, char *dims) {
    enum { BLK = 64, R = 3, NB = PS / BLK, NT = PH * (NB - 2) * R };
    static float *q, *k, *v, *dout, *o, *dq, *dk, *dv, *lse;
    static int table[NT];
    static attn_desc d;
    if (what == SETUP) {
        float tf[NT];
        int h, i, j, t;
        qkv_setup(&q, &k, &v, &dout, &o, &dq, &dk, &dv);
        lse = buf((size_t)PB * PH * PS, 0, 0);
        for (h = 0; h < PH; ++h)
            for (i = 1; i <= NB - 2; ++i) {
                int *row = table + ((size_t)h * (NB - 2) + (i - 1)) * R;
                for (j = 0; j < R; ++j) {
                    int dup;
                    do {   /* a middle block, not in the window, not drawn yet for this row */
                        row[j] = 1 + (int)((NB - 2) * 0.5 * (frand() + 1.0));
                        if (row[j] > NB - 2) row[j] = NB - 2;
                        dup = row[j] >= i - 1 && row[j] <= i + 1;
                        for (t = 0; t < j; ++t) dup |= row[t] == row[j];
                    } while (dup);
                }
            }
        for (i = 0; i < NT; ++i) tf[i] = (float)table[i];
        d.kind = ATTN_BIGBIRD; d.n_threads = 1;   /* scale 0: 1/sqrt(64), as HF */
        d.bigbird.block = BLK; d.bigbird.random_blocks = R;
        d.bigbird.multiplicity = ATTN_BIGBIRD_HF_LISTED; d.bigbird.random_table = table;
        sprintf(dims, "%d %d %d %d %d %d", PB, PS, PH, PD, BLK, R);
        bigbird(FWD, f, dims); bigbird(BWD, f, dims);
        put(f, q, PN); put(f, k, PN); put(f, v, PN); put(f, tf, NT); put(f, dout, PN); put(f, o, PN); put(f, dq, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(q), PT(k), PT(v), PT(o), lse), "bigbird forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(q), PT(k), PT(v), PT(o), PT(dout), lse, PT(dq), PT(dk), PT(dv)), "bigbird backward");
    } else {
        free(q); free(k); free(v); free(dout); free(o); free(dq); free(dk); free(dv); free(lse);
    }
}

/* ---- Longformer vs HF LongformerSelfAttention: attention_window 512 (one-sided 256), 4 global
   tokens (positions 0, 1024, 2048, 3072); its six Linear projections replaced by the given
   tensors (tests/fixtures/longformer_hf_bwd.py). attn.h: docs/porting.md's two calls, forward
   and backward (dout with the global rows zeroed for the local call); the gradient compared is
   the local query's --------------------------------------------------------------------- */
static void longformer(int what, FILE *f, char *dims) {
    enum { W = 256, NG = 4 };
    static float *q, *k, *v, *qg, *kg, *vg, *dout, *doutl, *o, *dq, *dk, *dv, *dqg, *dkg, *dvg, *lse1, *lse2;
    static unsigned char gmask[PB * PS];
    static attn_desc d;
    if (what == SETUP) {
        int g, i;
        qkv_setup(&q, &k, &v, &dout, &o, &dq, &dk, &dv);
        qg = buf(PN, -1.0, 1.0); kg = buf(PN, -1.0, 1.0); vg = buf(PN, -1.0, 1.0);
        dqg = buf(PN, 0, 0); dkg = buf(PN, 0, 0); dvg = buf(PN, 0, 0); doutl = buf(PN, 0, 0);
        lse1 = buf((size_t)PB * PH * PS, 0, 0); lse2 = buf((size_t)PB * PH * PS, 0, 0);
        memcpy(doutl, dout, sizeof(float) * PN);
        for (g = 0; g < NG; ++g) {
            gmask[g * PS / NG] = 1;
            for (i = 0; i < PH * PD; ++i) doutl[(size_t)g * PS / NG * PH * PD + i] = 0.0f;
        }
        d.kind = ATTN_LONGFORMER; d.n_threads = 1; d.window_left = d.window_right = W;
        d.longformer.global_mask = gmask;
        sprintf(dims, "%d %d %d %d %d %d", PB, PS, PH, PD, W, NG);
        longformer(FWD, f, dims); longformer(BWD, f, dims);
        put(f, q, PN); put(f, k, PN); put(f, v, PN); put(f, qg, PN); put(f, kg, PN); put(f, vg, PN); put(f, dout, PN);
        put(f, o, PN); put(f, dq, PN);
    } else if (what == FWD) {
        d.longformer.global_rows_only = 0;
        check(attn_forward(&d, PT(q), PT(k), PT(v), PT(o), lse1), "longformer forward (local)");
        d.longformer.global_rows_only = 1;
        check(attn_forward(&d, PT(qg), PT(kg), PT(vg), PT(o), lse2), "longformer forward (global rows)");
    } else if (what == BWD) {
        d.longformer.global_rows_only = 0;
        check(attn_backward(&d, PT(q), PT(k), PT(v), PT(o), PT(doutl), lse1, PT(dq), PT(dk), PT(dv)),
              "longformer backward (local)");
        d.longformer.global_rows_only = 1;
        check(attn_backward(&d, PT(qg), PT(kg), PT(vg), PT(o), PT(dout), lse2, PT(dqg), PT(dkg), PT(dvg)),
              "longformer backward (global rows)");
    } else {
        free(q); free(k); free(v); free(qg); free(kg); free(vg); free(dout); free(doutl); free(o); free(dq); free(dk);
        free(dv); free(dqg); free(dkg); free(dvg); free(lse1); free(lse2);
    }
}

/* ---- Reformer LSH vs HF LSHSelfAttention (eval, encoder): chunk 64, 64 buckets, 2 hashes,
   shared QK, query_key/value replaced by the given tensors (tests/fixtures/reformer_hf_grad.py).
   The random rotations [H][D][hashes][32] are drawn here and HF gets them in place of its
   torch.randn draw in _hash_vectors, so both hash alike; hf_merge 1 (HF's round weights).
   The gradient compared is the shared qk's: attn.h's dq + dk ------------------------------ */
static void lsh(int what, FILE *f, char *dims) {
    enum { CH = 64, NH = 2, NBK = 64, NR = PH * PD * NH * (NBK / 2) };
    static float *qk, *v, *dout, *o, *dq, *dk, *dv, *lse, *rot;
    static attn_desc d;
    if (what == SETUP) {
        size_t i;
        qkv_setup(&qk, NULL, &v, &dout, &o, &dq, &dk, &dv);
        rot = buf(NR, -1.0, 1.0); lse = buf((size_t)PB * PH * PS, 0, 0);
        d.kind = ATTN_LSH; d.n_threads = 1;
        d.lsh.bucket_size = CH; d.lsh.n_buckets = NBK; d.lsh.n_hashes = NH; d.lsh.rotations = rot;
        d.lsh.rotations_layout = ATTN_LSH_ROT_HF; d.lsh.hf_merge = 1;
        sprintf(dims, "%d %d %d %d %d %d %d", PB, PS, PH, PD, CH, NH, NBK);
        lsh(FWD, f, dims); lsh(BWD, f, dims);
        for (i = 0; i < PN; ++i) dk[i] += dq[i];   /* the shared query_key's gradient */
        put(f, qk, PN); put(f, v, PN); put(f, rot, NR); put(f, dout, PN); put(f, o, PN); put(f, dk, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(qk), PT(qk), PT(v), PT(o), lse), "lsh forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(qk), PT(qk), PT(v), PT(o), PT(dout), lse, PT(dq), PT(dk), PT(dv)), "lsh backward");
    } else {
        free(qk); free(v); free(dout); free(o); free(dq); free(dk); free(dv); free(lse); free(rot);
    }
}

/* ---- Performer vs performer-pytorch FastAttention (softmax kernel, non-causal, 256 features):
   the projection drawn here (attn_performer_draw) and copied into FastAttention's
   projection_matrix; eps 1e-4, softmax_kernel's (tests/fixtures/performer_pytorch_bwd.py) --- */
static void performer(int what, FILE *f, char *dims) {
    enum { M = 256 };
    static float *q, *k, *v, *dout, *o, *dq, *dk, *dv, *w;
    static attn_desc d;
    if (what == SETUP) {
        qkv_setup(&q, &k, &v, &dout, &o, &dq, &dk, &dv);
        w = buf((size_t)M * PD, 0, 0);
        d.kind = ATTN_PERFORMER; d.n_threads = 1;
        d.performer.features = M; d.performer.seed = 33;
        check(attn_performer_draw(&d.performer, PD, w), "performer draw");
        d.performer.projection = w; d.performer.projection_dim = PD; d.performer.eps = 1e-4f;
        sprintf(dims, "%d %d %d %d %d", PB, PS, PH, PD, M);
        performer(FWD, f, dims); performer(BWD, f, dims);
        put(f, q, PN); put(f, k, PN); put(f, v, PN); put(f, w, (size_t)M * PD); put(f, dout, PN); put(f, o, PN);
        put(f, dq, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(q), PT(k), PT(v), PT(o), NULL), "performer forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(q), PT(k), PT(v), PT(o), PT(dout), NULL, PT(dq), PT(dk), PT(dv)), "performer backward");
    } else {
        free(q); free(k); free(v); free(dout); free(o); free(dq); free(dk); free(dv); free(w);
    }
}

/* ---- Routing vs routing-transformer's KmeansAttention (SelfAttention's global heads, eval,
   shared_qk, window 64, 64 clusters = S / window): the centroids (unit rows) drawn here and
   copied into its Kmeans buffer (tests/fixtures/routing_transformer_bwd.py). The gradient
   compared is the shared qk's: attn.h's dq + dk ------------------------------------------- */
static void routing(int what, FILE *f, char *dims) {
    enum { WIN = 64, NC = PS / WIN };
    static float *qk, *v, *dout, *o, *dq, *dk, *dv, *means;
    static attn_desc d;
    if (what == SETUP) {
        size_t i, j;
        qkv_setup(&qk, NULL, &v, &dout, &o, &dq, &dk, &dv);
        means = buf((size_t)PH * NC * PD, -1.0, 1.0);
        for (i = 0; i < (size_t)PH * NC; ++i) {   /* unit rows, as Kmeans keeps them */
            double s = 0;
            for (j = 0; j < PD; ++j) s += (double)means[i * PD + j] * means[i * PD + j];
            for (j = 0; j < PD; ++j) means[i * PD + j] = (float)(means[i * PD + j] / sqrt(s));
        }
        d.kind = ATTN_ROUTING; d.n_threads = 1;
        d.routing.centroids = means; d.routing.n_clusters = NC; d.routing.window = WIN;
        d.routing.normalize_keys = 1; d.routing.count_eps = 1e-5f;
        sprintf(dims, "%d %d %d %d %d", PB, PS, PH, PD, WIN);
        routing(FWD, f, dims); routing(BWD, f, dims);
        for (i = 0; i < PN; ++i) dk[i] += dq[i];   /* the shared q = k tensor's gradient */
        put(f, qk, PN); put(f, v, PN); put(f, means, (size_t)PH * NC * PD); put(f, dout, PN); put(f, o, PN); put(f, dk, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(qk), PT(qk), PT(v), PT(o), NULL), "routing forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(qk), PT(qk), PT(v), PT(o), PT(dout), NULL, PT(dq), PT(dk), PT(dv)), "routing backward");
    } else {
        free(qk); free(v); free(dout); free(o); free(dq); free(dk); free(dv); free(means);
    }
}

/* ---- Nystromformer vs lucidrains' nystrom-attention NystromAttention: 256 landmarks (its
   default), residual conv 33, 6 iterations, no mask (S divisible: no front padding); to_qkv
   returns the given q, k, v and to_out is dropped (tests/fixtures/nystrom_attention_lucidrains_bwd.py) */
static void nystrom_lucidrains(int what, FILE *f, char *dims) {
    enum { M = 256, KC = 33 };
    static float *q, *k, *v, *dout, *o, *dq, *dk, *dv, *conv, *dconv;
    static attn_desc d;
    if (what == SETUP) {
        qkv_setup(&q, &k, &v, &dout, &o, &dq, &dk, &dv);
        conv = buf((size_t)PH * KC, -0.2, 0.2); dconv = buf((size_t)PH * KC, 0, 0);
        d.kind = ATTN_NYSTROM; d.n_threads = 1;
        d.nystrom.landmarks = M; d.nystrom.conv = conv; d.nystrom.conv_kernel = KC; d.nystrom.dconv = dconv;
        d.nystrom.padding_rule = ATTN_NYSTROM_PADDING_LUCIDRAINS; d.nystrom.pinv_init = ATTN_NYSTROM_PINV_BATCH;
        sprintf(dims, "%d %d %d %d %d %d", PB, PS, PH, PD, M, KC);
        nystrom_lucidrains(FWD, f, dims); nystrom_lucidrains(BWD, f, dims);
        put(f, q, PN); put(f, k, PN); put(f, v, PN); put(f, conv, (size_t)PH * KC); put(f, dout, PN); put(f, o, PN);
        put(f, dq, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(q), PT(k), PT(v), PT(o), NULL), "nystrom-attention forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(q), PT(k), PT(v), PT(o), PT(dout), NULL, PT(dq), PT(dk), PT(dv)),
              "nystrom-attention backward");
    } else {
        free(q); free(k); free(v); free(dout); free(o); free(dq); free(dk); free(dv); free(conv); free(dconv);
    }
}

/* ---- Linear attention (elu+1, non-causal) vs the fast-transformers LinearAttention einsums
   under torch autograd (bench_linear part 5's peer); eps 1e-6 both sides --------------------- */
static void linear(int what, FILE *f, char *dims) {
    static float *q, *k, *v, *dout, *o, *dq, *dk, *dv;
    static attn_desc d;
    if (what == SETUP) {
        qkv_setup(&q, &k, &v, &dout, &o, &dq, &dk, &dv);
        d.kind = ATTN_LINEAR; d.n_threads = 1;
        sprintf(dims, "%d %d %d %d", PB, PS, PH, PD);
        linear(FWD, f, dims); linear(BWD, f, dims);
        put(f, q, PN); put(f, k, PN); put(f, v, PN); put(f, dout, PN); put(f, o, PN); put(f, dq, PN);
    } else if (what == FWD) {
        check(attn_forward(&d, PT(q), PT(k), PT(v), PT(o), NULL), "linear forward");
    } else if (what == BWD) {
        check(attn_backward(&d, PT(q), PT(k), PT(v), PT(o), PT(dout), NULL, PT(dq), PT(dk), PT(dv)), "linear backward");
    } else {
        free(q); free(k); free(v); free(dout); free(o); free(dq); free(dk); free(dv);
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
    { "bigbird", "HF BigBirdBlockSparseAttention", "B 1 S 4096 H 4 D 64 block 64 r 3", bigbird },
    { "longformer", "HF LongformerSelfAttention", "B 1 S 4096 H 4 D 64 w 256+256 4 global", longformer },
    { "lsh", "HF LSHSelfAttention", "B 1 S 4096 H 4 D 64 chunk 64 nb 64 2 hashes", lsh },
    { "performer", "performer-pytorch FastAttention", "B 1 S 4096 H 4 D 64 m 256", performer },
    { "routing", "routing-transformer KmeansAttention", "B 1 S 4096 H 4 D 64 window 64", routing },
    { "nystrom_lr", "nystrom-attention NystromAttention", "B 1 S 4096 H 4 D 64 m 256 conv 33", nystrom_lucidrains },
    { "linear", "fast-transformers einsums (autograd)", "B 1 S 4096 H 4 D 64 elu+1", linear },
};

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const int nf = (int)(sizeof families / sizeof families[0]);
    char ver[512], dims[128], args[512], last[512];
    int fi, r, torch_on;
    FILE *csv = NULL;
    if (rounds < 1 || rounds > 64) die("rounds: 1..64");
    printf("bench_peers: attn.h vs PyTorch peers, one thread, %d interleaved rounds, medians\n", rounds);
    printf("  machine: %s; kernels %s\n", bench_cpu(), attn_kernels());
    torch_on = torch_probe_ok("import torch; print(torch.__version__)", ver, sizeof ver);
    if (!torch_on) { printf("  no peers: %s\n", g_torch_why); return 0; }
    printf("  PyTorch %s (%s)\n", ver, g_python);
    if (argc <= 2 && !(csv = fopen("bench/results_peers.csv", "w"))) die("cannot write bench/results_peers.csv");
    if (csv) bench_csv_header(csv, "family,peer,shape,threads,rounds,attn_fwd_ms,attn_bwd_ms,peer_fwd_ms,peer_bwd_ms,"
                          "fwd_ratio,bwd_ratio,max_diff_out,max_diff_grad,peer_versions");
    for (fi = 0; fi < nf; ++fi) {
        double ta[2][64], tp[2][64], res[4] = { 0 }, m[4];
        FILE *f;
        int ok = 1, a;
        for (a = 2; a < argc && strcmp(argv[a], families[fi].name) != 0; ++a) {}
        if (argc > 2 && a == argc) continue;   /* not named */
        if (!(f = fopen(PEER_FILE, "wb"))) die("cannot write " PEER_FILE " (run from the repository root after make)");
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
                printf("  %-10s %s: skipped: %s\n", families[fi].name, families[fi].peer, last[0] ? last : g_torch_why);
                ok = 0;
                break;
            }
            tp[0][r] = res[0] * 1e-3; tp[1][r] = res[1] * 1e-3;
        }
        families[fi].run(FREE, NULL, dims);
        if (!ok) continue;
        m[0] = median_of(ta[0], rounds, NULL, NULL) * 1e3; m[1] = median_of(ta[1], rounds, NULL, NULL) * 1e3;
        m[2] = median_of(tp[0], rounds, NULL, NULL) * 1e3; m[3] = median_of(tp[1], rounds, NULL, NULL) * 1e3;
        printf("  %-10s %-36s %-24s attn.h fwd %9.2f ms bwd %9.2f ms | peer fwd %9.2f ms bwd %9.2f ms | "
               "peer/attn.h %6.1fx fwd %6.1fx bwd | max diff out %.2e grad %.2e | %s\n",
               families[fi].name, families[fi].peer, families[fi].shape, m[0], m[1], m[2], m[3], m[2] / m[0],
               m[3] / m[1], res[2], res[3], last);
        if (!csv) continue;
        bench_csv_machine(csv);
        fprintf(csv, "%s,\"%s\",\"%s\",1,%d,%.3f,%.3f,%.3f,%.3f,%.2f,%.2f,%.3e,%.3e,\"%s\"\n", families[fi].name,
                families[fi].peer, families[fi].shape, rounds, m[0], m[1], m[2], m[3], m[2] / m[0], m[3] / m[1],
                res[2], res[3], strncmp(last, "versions: ", 10) == 0 ? last + 10 : last);
        fflush(csv);
    }
    if (csv && fclose(csv) != 0) die("cannot write bench/results_peers.csv");
    remove(PEER_FILE);
    return 0;
}
