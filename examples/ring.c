/* ring.c - ring attention (context parallelism) over MPI, combined with attn_merge.

   A sequence too long for one process is split into P blocks, one per rank. Each rank keeps
   its block of queries and passes its block of keys/values around a ring: at step s it
   attends its queries to the K/V block it currently holds (computing a partial result and its
   log-sum-exp with attn_forward), sends that block on to the next rank and receives one from
   the previous, overlapping the transfer with the computation. After P steps every rank has
   seen every block; attn_merge combines the partial results into exact attention, with no
   rank ever holding more than two K/V blocks (Liu et al. 2023, "Ring Attention").

   Causal: rank r's queries see blocks j <= r only (block r with the causal mask, earlier
   blocks in full), so later blocks are passed on without computing.
   Rank 0 then gathers the output and checks it against one attn_forward over the whole
   sequence in one process.
   Build: mpicc -std=c99 -O2 -I. examples/ring.c -o ring -lm -pthread   (make builds it where
          mpicc exists)
   Run:   mpirun -n 4 ./ring [block length]     (exit status 1 on a mismatch) */
#define ATTN_IMPLEMENTATION
#include "attn.h"
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HQ = 8, HKV = 2, D = 64 };

/* token t's q, k, v, the same on every rank (a hash of t): no need to scatter inputs */
static float feature(unsigned t, unsigned which, unsigned i) {
    unsigned h = t * 2654435761u ^ (which * 40503u + i) * 2246822519u;
    h ^= h >> 15; h *= 2654435761u; h ^= h >> 13;
    return (float)(h & 0xffff) / 32768.0f - 1.0f;
}
static void make_block(unsigned first, int n, float *q, float *k, float *v) {
    int t, i;
    for (t = 0; t < n; ++t) {
        if (q) for (i = 0; i < HQ * D; ++i) q[(size_t)t * HQ * D + i] = feature(first + (unsigned)t, 0, (unsigned)i);
        for (i = 0; i < HKV * D; ++i) {
            k[(size_t)t * HKV * D + i] = feature(first + (unsigned)t, 1, (unsigned)i);
            v[(size_t)t * HKV * D + i] = feature(first + (unsigned)t, 2, (unsigned)i);
        }
    }
}

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    if (!p) { fprintf(stderr, "out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    return p;
}
static void check(attn_status st, const char *what) {
    if (st != ATTN_OK) { fprintf(stderr, "%s: %s\n", what, attn_status_str(st)); MPI_Abort(MPI_COMM_WORLD, 2); }
}

int main(int argc, char **argv) {
    int rank, P, Lb, s, n_parts = 0, bad = 0;
    size_t qn, kvn;
    float *q, *kv[2], *out, **parts, **lses;
    attn_tensor *tparts;
    double t0, t_comp = 0, t_total;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    Lb = argc > 1 ? atoi(argv[1]) : 256;
    if (Lb < 1) Lb = 256;
    qn = (size_t)Lb * HQ * D;
    kvn = (size_t)Lb * HKV * D;
    q = (float *)xmalloc(qn * 4);
    out = (float *)xmalloc(qn * 4);
    kv[0] = (float *)xmalloc(2 * kvn * 4);      /* k then v of one block: one message */
    kv[1] = (float *)xmalloc(2 * kvn * 4);
    parts = (float **)xmalloc((size_t)P * sizeof(float *));
    lses = (float **)xmalloc((size_t)P * sizeof(float *));
    tparts = (attn_tensor *)xmalloc((size_t)P * sizeof(attn_tensor));
    make_block((unsigned)(rank * Lb), Lb, q, kv[0], kv[0] + kvn);

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (s = 0; s < P; ++s) {
        const int j = ((rank - s) % P + P) % P;   /* the block held now came from rank j */
        float *kb = kv[s & 1], *vb = kv[s & 1] + kvn;
        MPI_Request req[2];
        if (s + 1 < P) {                         /* pass it on while computing on it */
            MPI_Irecv(kv[(s + 1) & 1], (int)(2 * kvn), MPI_FLOAT, (rank - 1 + P) % P, s, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(kv[s & 1], (int)(2 * kvn), MPI_FLOAT, (rank + 1) % P, s, MPI_COMM_WORLD, &req[1]);
        }
        if (j <= rank) {                          /* causal: later blocks are invisible */
            attn_desc d;
            const double c0 = MPI_Wtime();
            memset(&d, 0, sizeof d);
            d.causal = j == rank;                 /* the diagonal block: the causal mask */
            d.n_threads = 1;                      /* one core per rank (as one device per rank) */
            parts[n_parts] = (float *)xmalloc(qn * 4);
            lses[n_parts] = (float *)xmalloc((size_t)HQ * Lb * 4);
            tparts[n_parts] = attn_tensor_dense(parts[n_parts], ATTN_F32, 1, Lb, HQ, D);
            check(attn_forward(&d, attn_tensor_dense(q, ATTN_F32, 1, Lb, HQ, D), attn_tensor_dense(kb, ATTN_F32, 1, Lb, HKV, D),
                               attn_tensor_dense(vb, ATTN_F32, 1, Lb, HKV, D), tparts[n_parts], lses[n_parts]),
                  "attn_forward (block)");
            ++n_parts;
            t_comp += MPI_Wtime() - c0;
        }
        if (s + 1 < P) MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    /* exact attention over everything this rank's queries see: the log-sum-exp merge */
    check(attn_merge(n_parts, tparts, (const float *const *)lses, attn_tensor_dense(out, ATTN_F32, 1, Lb, HQ, D), NULL),
          "attn_merge");
    t_total = MPI_Wtime() - t0;

    {   /* rank 0: gather, and compare with one attn_forward over the whole sequence */
        const int L = P * Lb;
        float *all = rank == 0 ? (float *)xmalloc((size_t)L * HQ * D * 4) : NULL;
        double times[2] = { t_total, t_comp }, *tt = rank == 0 ? (double *)xmalloc((size_t)P * 2 * sizeof(double)) : NULL;
        MPI_Gather(out, (int)qn, MPI_FLOAT, all, (int)qn, MPI_FLOAT, 0, MPI_COMM_WORLD);
        MPI_Gather(times, 2, MPI_DOUBLE, tt, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            float *Q = (float *)xmalloc((size_t)L * HQ * D * 4), *K = (float *)xmalloc((size_t)L * HKV * D * 4);
            float *V = (float *)xmalloc((size_t)L * HKV * D * 4), *ref = (float *)xmalloc((size_t)L * HQ * D * 4);
            attn_desc d;
            double err = 0, r0;
            size_t i;
            int r;
            make_block(0, L, Q, K, V);
            memset(&d, 0, sizeof d);
            d.causal = 1;
            r0 = MPI_Wtime();
            check(attn_forward(&d, attn_tensor_dense(Q, ATTN_F32, 1, L, HQ, D), attn_tensor_dense(K, ATTN_F32, 1, L, HKV, D),
                               attn_tensor_dense(V, ATTN_F32, 1, L, HKV, D), attn_tensor_dense(ref, ATTN_F32, 1, L, HQ, D), NULL),
                  "attn_forward (whole)");
            r0 = MPI_Wtime() - r0;
            for (i = 0; i < (size_t)L * HQ * D; ++i) if (fabs((double)all[i] - ref[i]) > err) err = fabs((double)all[i] - ref[i]);
            printf("ring attention: %d ranks x %d tokens = %d, %d query heads over %d K/V heads of dim %d, causal, %s kernels\n",
                   P, Lb, L, HQ, HKV, D, attn_kernels());
            for (r = 0; r < P; ++r)
                printf("  rank %d: %d of %d blocks visible, %.2f ms (%.2f computing, the rest waiting on the ring)\n", r,
                       r + 1, P, tt[2 * r] * 1e3, tt[2 * r + 1] * 1e3);
            printf("one process, whole sequence: %.2f ms\n", r0 * 1e3);
            printf("max |ring - one process| = %.1e %s\n", err, err < 1e-5 ? "(ok)" : "(TOO LARGE)");
            bad = !(err < 1e-5);
            free(Q); free(K); free(V); free(ref); free(tt); free(all);
        }
        MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    while (n_parts > 0) { --n_parts; free(parts[n_parts]); free(lses[n_parts]); }
    free(q); free(out); free(kv[0]); free(kv[1]); free(parts); free(lses); free(tparts);
    MPI_Finalize();
    return bad;
}
