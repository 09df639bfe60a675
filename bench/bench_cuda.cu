/* bench/bench_cuda.cu - attn_cuda_forward (f16 tensor cores) against a cuBLAS baseline (two
   batched GEMMs, fp32 accumulation, and a row softmax kernel in between: the unfused
   S = Q K^T -> softmax -> P V that frameworks run without a fused kernel) and, where the
   machine has it, cuDNN's fused attention, on the same GPU and the same inputs. B = 1, H = 16,
   D = 128, f16, BHSD; non-causal and causal (the baseline computes the full S for causal as
   well, with the mask in its softmax). Medians of 10 runs (cudaEvent), TFLOP/s counted as
   4 S^2 D H (halved for causal), the max |difference| of the outputs from attn_cuda's, and
   bench/results_cuda.csv. Then f32 q, k, v: attn_cuda's fp32 CUDA-core kernel against the same
   call with attn_desc.allow_tf32 (the TF32 tensor-core kernel), with the max |difference| of the
   two (bench/results_cuda_tf32.csv). Built by make bench-cuda (nvcc, -lcublas); needs a GPU to run.

   cuDNN: its C backend graph API (cudnn_graph.h, no cudnn_frontend), the library opened at run
   time with dlopen so the bench neither links nor needs it. The graph is cuDNN >= 9.13's single
   SDPA forward operation (CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: Q, K, V, O as [B, H, S, D]
   with strides, a by-value fp32 scale), planned on the first engine config of the heuristics
   (mode A, then fallback) that finalizes. That operation has no causal attribute in cuDNN 9.19's
   headers (a causal mask needs the composite matmul/softmax graph or 9.20's band-mask subgraph),
   so causal rows are not compared. No library, an older cuDNN, no handle (no device) or no
   engine for the graph: the reason is printed once and the cuDNN columns stay empty. */
#define ATTN_CUDA_IMPLEMENTATION
#include "attn_cuda.cuh"
#include <cublas_v2.h>
#include <cudnn_graph.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t e_ = (x); if (e_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "%s: cuBLAS %d\n", #x, (int)e_); exit(1); } } while (0)

/* row softmax of S [rows][n] (fp32, times scale; causal: bottom-right mask) into P (f16) */
__global__ void softmax_rows(const float *S, __half *P, int rows, int n, int sq, float scale, int causal) {
    const int row = blockIdx.x, lane = threadIdx.x;
    if (row >= rows) return;
    const float *s = S + (size_t)row * n;
    __half *p = P + (size_t)row * n;
    const int i = row % sq, lim = causal ? i + n - sq : n - 1;
    __shared__ float red[32];
    float mx = -INFINITY, sum = 0.0f;
    for (int j = lane; j < n; j += blockDim.x) if (j <= lim) mx = fmaxf(mx, s[j] * scale);
    for (int o = 16; o; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if ((lane & 31) == 0) red[lane >> 5] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < (int)blockDim.x / 32; ++w) mx = fmaxf(mx, red[w]);
    __syncthreads();
    for (int j = lane; j < n; j += blockDim.x) if (j <= lim) sum += __expf(s[j] * scale - mx);
    for (int o = 16; o; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if ((lane & 31) == 0) red[lane >> 5] = sum;
    __syncthreads();
    sum = 0.0f;
    for (int w = 0; w < (int)blockDim.x / 32; ++w) sum += red[w];
    for (int j = lane; j < n; j += blockDim.x) p[j] = __float2half(j <= lim ? __expf(s[j] * scale - mx) / sum : 0.0f);
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

/* ---- cuDNN's fused attention through the backend graph API ------------------------------------ */
struct cudnn_api {                /* libcudnn, opened at run time, and one handle */
    void *lib;
    decltype(&cudnnGetVersion) GetVersion;
    decltype(&cudnnGetErrorString) GetErrorString;
    decltype(&cudnnCreate) Create;
    decltype(&cudnnDestroy) Destroy;
    decltype(&cudnnBackendCreateDescriptor) CreateDescriptor;
    decltype(&cudnnBackendDestroyDescriptor) DestroyDescriptor;
    decltype(&cudnnBackendSetAttribute) SetAttribute;
    decltype(&cudnnBackendGetAttribute) GetAttribute;
    decltype(&cudnnBackendFinalize) Finalize;
    decltype(&cudnnBackendExecute) Execute;
    cudnnHandle_t handle;
    char why[256];                /* why cuDNN is not compared ("" while it is) */
};
#define CUDNN_MAX_DESC 64
struct cudnn_sdpa {               /* one shape's plan and every descriptor it was built from */
    cudnnBackendDescriptor_t d[CUDNN_MAX_DESC];
    int n;
    cudnnBackendDescriptor_t plan, pack;
    void *ws;
    float scale;                  /* the by-value scale the variant pack points to */
};
enum { CUDNN_UID_Q = 1, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_SCALE };

/* a failed cuDNN call: its step and status into c->why, and return 0 */
#define CUDNN_TRY(c, call, what)                                                                        \
    do {                                                                                                \
        const cudnnStatus_t st_ = (call);                                                               \
        if (st_ != CUDNN_STATUS_SUCCESS) {                                                              \
            snprintf((c)->why, sizeof (c)->why, "%s: %s", what, (c)->GetErrorString(st_));              \
            return 0;                                                                                   \
        }                                                                                               \
    } while (0)

/* dlopen libcudnn, resolve the functions, check the version, create the handle; 0 (and why) if not */
static int cudnn_open(cudnn_api *c) {
    memset(c, 0, sizeof *c);
    if (!(c->lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL)) && !(c->lib = dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL))) {
        snprintf(c->why, sizeof c->why, "libcudnn.so.9 not found (%s)", dlerror());
        return 0;
    }
#define CUDNN_SYM(field, name)                                                                          \
    if (!(c->field = reinterpret_cast<decltype(c->field)>(dlsym(c->lib, name)))) {                      \
        snprintf(c->why, sizeof c->why, "libcudnn has no %s", name);                                    \
        return 0;                                                                                       \
    }
    CUDNN_SYM(GetVersion, "cudnnGetVersion") CUDNN_SYM(GetErrorString, "cudnnGetErrorString")
    CUDNN_SYM(Create, "cudnnCreate") CUDNN_SYM(Destroy, "cudnnDestroy")
    CUDNN_SYM(CreateDescriptor, "cudnnBackendCreateDescriptor") CUDNN_SYM(DestroyDescriptor, "cudnnBackendDestroyDescriptor")
    CUDNN_SYM(SetAttribute, "cudnnBackendSetAttribute") CUDNN_SYM(GetAttribute, "cudnnBackendGetAttribute")
    CUDNN_SYM(Finalize, "cudnnBackendFinalize") CUDNN_SYM(Execute, "cudnnBackendExecute")
#undef CUDNN_SYM
    if (c->GetVersion() < 91300) {
        snprintf(c->why, sizeof c->why, "cuDNN %zu: the SDPA forward operation needs 9.13 or newer", c->GetVersion());
        return 0;
    }
    CUDNN_TRY(c, c->Create(&c->handle), "cudnnCreate");
    return 1;
}
static void cudnn_close(cudnn_api *c) {
    if (c->handle) c->Destroy(c->handle);
    if (c->lib) dlclose(c->lib);
    c->handle = NULL; c->lib = NULL;
}
/* a new descriptor, kept in g for cudnn_sdpa_free; NULL (and why) if none */
static cudnnBackendDescriptor_t cudnn_new(cudnn_api *c, cudnn_sdpa *g, cudnnBackendDescriptorType_t t) {
    cudnnBackendDescriptor_t d = NULL;
    cudnnStatus_t st = CUDNN_STATUS_ALLOC_FAILED;
    if (g->n < CUDNN_MAX_DESC && (st = c->CreateDescriptor(t, &d)) == CUDNN_STATUS_SUCCESS) return g->d[g->n++] = d;
    snprintf(c->why, sizeof c->why, "descriptor %d: %s", (int)t, c->GetErrorString(st));
    return NULL;
}
static void cudnn_sdpa_free(cudnn_api *c, cudnn_sdpa *g) {
    while (g->n > 0) c->DestroyDescriptor(g->d[--g->n]);
    if (g->ws) cudaFree(g->ws);
    memset(g, 0, sizeof *g);
}
/* a finalized 4-D tensor descriptor (uid, dtype, dims, strides; by_value: a host scalar) */
static int cudnn_tensor(cudnn_api *c, cudnn_sdpa *g, int64_t uid, cudnnDataType_t t, const int64_t dims[4],
                        const int64_t strides[4], bool by_value, cudnnBackendDescriptor_t *out) {
    const int64_t align = 16;
    const bool virt = false;
    cudnnBackendDescriptor_t d = cudnn_new(c, g, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (!d) return 0;
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t), "tensor data type");
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims), "tensor dims");
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides), "tensor strides");
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid), "tensor uid");
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align), "tensor alignment");
    CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt), "tensor virtual");
    if (by_value) CUDNN_TRY(c, c->SetAttribute(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value), "tensor by value");
    CUDNN_TRY(c, c->Finalize(d), "tensor");
    *out = d;
    return 1;
}
/* The SDPA forward operation over f16 BHSD [1, H, S, D] q, k, v, o and a by-value scale. */
static int cudnn_sdpa_op(cudnn_api *c, cudnn_sdpa *g, int H, int S, int D, cudnnBackendDescriptor_t *op) {
    const int64_t dims[4] = { 1, H, S, D }, strides[4] = { (int64_t)H * S * D, (int64_t)S * D, D, 1 }, one[4] = { 1, 1, 1, 1 };
    cudnnBackendDescriptor_t q, k, v, o, sc;
    if (!cudnn_tensor(c, g, CUDNN_UID_Q, CUDNN_DATA_HALF, dims, strides, false, &q) ||
        !cudnn_tensor(c, g, CUDNN_UID_K, CUDNN_DATA_HALF, dims, strides, false, &k) ||
        !cudnn_tensor(c, g, CUDNN_UID_V, CUDNN_DATA_HALF, dims, strides, false, &v) ||
        !cudnn_tensor(c, g, CUDNN_UID_O, CUDNN_DATA_HALF, dims, strides, false, &o) ||
        !cudnn_tensor(c, g, CUDNN_UID_SCALE, CUDNN_DATA_FLOAT, one, one, true, &sc) ||
        !(*op = cudnn_new(c, g, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR)))
        return 0;
    CUDNN_TRY(c, c->SetAttribute(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q), "sdpa q");
    CUDNN_TRY(c, c->SetAttribute(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k), "sdpa k");
    CUDNN_TRY(c, c->SetAttribute(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v), "sdpa v");
    CUDNN_TRY(c, c->SetAttribute(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o), "sdpa o");
    CUDNN_TRY(c, c->SetAttribute(*op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sc), "sdpa scale");
    CUDNN_TRY(c, c->Finalize(*op), "SDPA forward operation");
    return 1;
}
/* operation graph -> heuristics (mode A, then fallback) -> the first engine config whose execution
   plan finalizes -> its workspace -> the variant pack of q, k, v, o and the scale */
static int cudnn_sdpa_plan(cudnn_api *c, cudnn_sdpa *g, int H, int S, int D, float scale, void *q, void *k, void *v, void *o) {
    const cudnnBackendHeurMode_t modes[2] = { CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK };
    cudnnBackendDescriptor_t op, graph;
    int m;
    memset(g, 0, sizeof *g);
    if (!cudnn_sdpa_op(c, g, H, S, D, &op) || !(graph = cudnn_new(c, g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR))) return 0;
    CUDNN_TRY(c, c->SetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op), "graph ops");
    CUDNN_TRY(c, c->SetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle), "graph handle");
    CUDNN_TRY(c, c->Finalize(graph), "operation graph");
    for (m = 0; m < 2 && !g->plan; ++m) {
        const char *mode = m ? "fallback heuristics" : "heuristics A";
        cudnnBackendDescriptor_t heur = cudnn_new(c, g, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR), cfg[8];
        cudnnStatus_t st;
        int64_t ncfg = 0;
        int i;
        if (!heur) return 0;
        CUDNN_TRY(c, c->SetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph),
                  "heuristics graph");
        CUDNN_TRY(c, c->SetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &modes[m]), "heuristics mode");
        if ((st = c->Finalize(heur)) != CUDNN_STATUS_SUCCESS) {
            snprintf(c->why, sizeof c->why, "%s: %s", mode, c->GetErrorString(st));
            continue;
        }
        for (i = 0; i < 8; ++i) if (!(cfg[i] = cudnn_new(c, g, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR))) return 0;
        CUDNN_TRY(c, c->GetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 8, &ncfg, cfg),
                  "heuristics results");
        snprintf(c->why, sizeof c->why, "%s: no engine config", mode);
        for (i = 0; i < (int)ncfg && i < 8; ++i) {
            cudnnBackendDescriptor_t plan = cudnn_new(c, g, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
            if (!plan) return 0;
            CUDNN_TRY(c, c->SetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->handle), "plan handle");
            CUDNN_TRY(c, c->SetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg[i]),
                      "plan config");
            if ((st = c->Finalize(plan)) == CUDNN_STATUS_SUCCESS) { g->plan = plan; break; }
            snprintf(c->why, sizeof c->why, "%s: no execution plan of %d engine configs finalizes (last: %s)", mode, (int)ncfg,
                     c->GetErrorString(st));
        }
    }
    if (!g->plan) return 0;
    {
        int64_t ws = 0, n = 0, uids[5] = { CUDNN_UID_Q, CUDNN_UID_K, CUDNN_UID_V, CUDNN_UID_O, CUDNN_UID_SCALE };
        void *ptrs[5] = { q, k, v, o, &g->scale };
        CUDNN_TRY(c, c->GetAttribute(g->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws), "plan workspace");
        if (ws > 0 && cudaMalloc(&g->ws, (size_t)ws) != cudaSuccess) {
            snprintf(c->why, sizeof c->why, "cudaMalloc of the %lld-byte workspace", (long long)ws);
            return 0;
        }
        g->scale = scale;
        if (!(g->pack = cudnn_new(c, g, CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR))) return 0;
        CUDNN_TRY(c, c->SetAttribute(g->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 5, uids), "pack uids");
        CUDNN_TRY(c, c->SetAttribute(g->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 5, ptrs), "pack pointers");
        CUDNN_TRY(c, c->SetAttribute(g->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &g->ws), "pack workspace");
        CUDNN_TRY(c, c->Finalize(g->pack), "variant pack");
    }
    c->why[0] = 0;
    return 1;
}

/* f32 inputs: allow_tf32 = 0 (fp32 FMA on CUDA cores) against allow_tf32 = 1 (TF32 tensor cores) */
static void bench_tf32(const cudaDeviceProp &prop, const int *lens, int nlens, int H, int D) {
    FILE *csv = fopen("bench/results_cuda_tf32.csv", "w");
    printf("\nf32 q, k, v (H = %d, D = %d, BHSD): the fp32 kernel against allow_tf32\n", H, D);
    printf("%6s %6s | %12s %9s | %12s %9s %7s | %9s\n", "S", "causal", "fp32 ms", "TFLOP/s", "TF32 ms", "TFLOP/s", "speedup",
           "max|diff|");
    if (csv) fprintf(csv, "gpu,S,H,D,causal,fp32_ms,fp32_tflops,tf32_ms,tf32_tflops,max_abs_diff\n");
    for (int li = 0; li < nlens; ++li) {
        const int S = lens[li];
        const size_t n = (size_t)H * S * D;
        std::vector<float> hx(n), r[2];
        float *q, *k, *v, *o[2];
        for (size_t i = 0; i < n; ++i) hx[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        CK(cudaMalloc(&q, n * 4)); CK(cudaMalloc(&k, n * 4)); CK(cudaMalloc(&v, n * 4));
        CK(cudaMalloc(&o[0], n * 4)); CK(cudaMalloc(&o[1], n * 4));
        CK(cudaMemcpy(q, hx.data(), n * 4, cudaMemcpyHostToDevice));
        std::rotate(hx.begin(), hx.begin() + 7, hx.end());      /* k, v: the same values shifted, as in the f16 table */
        CK(cudaMemcpy(k, hx.data(), n * 4, cudaMemcpyHostToDevice));
        std::rotate(hx.begin(), hx.begin() + 3, hx.end());
        CK(cudaMemcpy(v, hx.data(), n * 4, cudaMemcpyHostToDevice));
        for (int causal = 0; causal < 2; ++causal) {
            attn_tensor tq = attn_tensor_bhsd(q, ATTN_F32, 1, H, S, D), tk = attn_tensor_bhsd(k, ATTN_F32, 1, H, S, D),
                        tv = attn_tensor_bhsd(v, ATTN_F32, 1, H, S, D);
            cudaEvent_t a, b;
            float med[2];
            CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
            for (int tf32 = 0; tf32 < 2; ++tf32) {
                attn_desc d = {};
                std::vector<float> t;
                d.causal = causal; d.allow_tf32 = tf32;
                for (int rep = 0; rep < 11; ++rep) {
                    float ms;
                    CK(cudaEventRecord(a));
                    attn_status s = attn_cuda_forward(&d, tq, tk, tv, attn_tensor_bhsd(o[tf32], ATTN_F32, 1, H, S, D), NULL, 0);
                    CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                    if (s != ATTN_OK) { fprintf(stderr, "attn_cuda_forward (f32, allow_tf32 %d): %s\n", tf32, attn_status_str(s)); exit(1); }
                    CK(cudaEventElapsedTime(&ms, a, b));
                    if (rep) t.push_back(ms);
                }
                med[tf32] = median(t);
                r[tf32].resize(n);
                CK(cudaMemcpy(r[tf32].data(), o[tf32], n * 4, cudaMemcpyDeviceToHost));
            }
            double diff = 0;
            for (size_t i = 0; i < n; ++i) diff = fmax(diff, fabs((double)r[0][i] - r[1][i]));
            const double flop = 4.0 * S * S * D * H * (causal ? 0.5 : 1.0);
            printf("%6d %6d | %12.3f %9.1f | %12.3f %9.1f %6.2fx | %9.2e\n", S, causal, med[0], flop / med[0] * 1e-9, med[1],
                   flop / med[1] * 1e-9, med[0] / med[1], diff);
            if (csv) fprintf(csv, "\"%s\",%d,%d,%d,%d,%.4f,%.2f,%.4f,%.2f,%.3e\n", prop.name, S, H, D, causal, med[0],
                             flop / med[0] * 1e-9, med[1], flop / med[1] * 1e-9, diff);
            cudaEventDestroy(a); cudaEventDestroy(b);
        }
        cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o[0]); cudaFree(o[1]);
    }
    if (csv) fclose(csv);
}

int main(void) {
    const int H = 16, D = 128, lens[] = { 512, 1024, 2048, 4096 };
    cudaDeviceProp prop;
    cublasHandle_t hb;
    FILE *csv = fopen("bench/results_cuda.csv", "w");
    cudnn_api cd;
    int have_cudnn;
    CK(cudaGetDeviceProperties(&prop, 0));
    CB(cublasCreate(&hb));
    printf("GPU: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    if ((have_cudnn = cudnn_open(&cd))) printf("cuDNN %zu: fused attention via the SDPA forward operation (non-causal rows)\n", cd.GetVersion());
    else printf("cuDNN: not compared (%s)\n", cd.why);
    printf("%6s %6s | %12s %9s | %12s %9s %7s %9s | %12s %9s %7s %9s\n", "S", "causal", "attn_cuda ms", "TFLOP/s", "cuBLAS ms",
           "TFLOP/s", "speedup", "max|diff|", "cuDNN ms", "TFLOP/s", "speedup", "max|diff|");
    if (csv)
        fprintf(csv, "gpu,S,H,D,causal,attn_cuda_ms,attn_cuda_tflops,cublas_ms,cublas_tflops,max_abs_diff,cudnn_ms,cudnn_tflops,"
                     "cudnn_max_abs_diff\n");
    for (int li = 0; li < 4; ++li) {
        const int S = lens[li];
        const size_t n = (size_t)H * S * D;
        std::vector<__half> hq(n);
        __half *q, *k, *v, *o1, *o2, *o3, *P;
        float *Sm;
        for (size_t i = 0; i < n; ++i) hq[i] = __float2half((float)((i * 2654435761u) % 1000) / 500.0f - 1.0f);
        CK(cudaMalloc(&q, n * 2)); CK(cudaMalloc(&k, n * 2)); CK(cudaMalloc(&v, n * 2));
        CK(cudaMalloc(&o1, n * 2)); CK(cudaMalloc(&o2, n * 2)); CK(cudaMalloc(&o3, n * 2));
        CK(cudaMalloc(&Sm, (size_t)H * S * S * 4)); CK(cudaMalloc(&P, (size_t)H * S * S * 2));
        CK(cudaMemcpy(q, hq.data(), n * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(k, hq.data() + 7, (n - 7) * 2, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(v, hq.data() + 3, (n - 3) * 2, cudaMemcpyHostToDevice));
        for (int causal = 0; causal < 2; ++causal) {
            attn_desc d = {};
            d.causal = causal;
            const float scale = 1.0f / sqrtf((float)D), one = 1.0f, zero = 0.0f;
            attn_tensor tq = attn_tensor_bhsd(q, ATTN_F16, 1, H, S, D), tk = attn_tensor_bhsd(k, ATTN_F16, 1, H, S, D),
                        tv = attn_tensor_bhsd(v, ATTN_F16, 1, H, S, D), to = attn_tensor_bhsd(o1, ATTN_F16, 1, H, S, D);
            cudaEvent_t a, b;
            std::vector<float> t1, t2;
            CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
            for (int rep = 0; rep < 11; ++rep) {
                float ms;
                CK(cudaEventRecord(a));
                attn_status s = attn_cuda_forward(&d, tq, tk, tv, to, NULL, 0);
                CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                if (s != ATTN_OK) { fprintf(stderr, "attn_cuda_forward: %s\n", attn_status_str(s)); return 1; }
                CK(cudaEventElapsedTime(&ms, a, b));
                if (rep) t1.push_back(ms);
                CK(cudaEventRecord(a));
                CB(cublasGemmStridedBatchedEx(hb, CUBLAS_OP_T, CUBLAS_OP_N, S, S, D, &one, k, CUDA_R_16F, D, (long long)S * D, q,
                                              CUDA_R_16F, D, (long long)S * D, &zero, Sm, CUDA_R_32F, S, (long long)S * S, H,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                softmax_rows<<<H * S, 256>>>(Sm, P, H * S, S, S, scale, causal);
                CB(cublasGemmStridedBatchedEx(hb, CUBLAS_OP_N, CUBLAS_OP_N, D, S, S, &one, v, CUDA_R_16F, D, (long long)S * D, P,
                                              CUDA_R_16F, S, (long long)S * S, &zero, o2, CUDA_R_16F, D, (long long)S * D, H,
                                              CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
                CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                CK(cudaEventElapsedTime(&ms, a, b));
                if (rep) t2.push_back(ms);
            }
            /* cuDNN's fused attention (non-causal: see the header) */
            std::vector<float> t3;
            if (have_cudnn && !causal) {
                cudnn_sdpa g;
                if (cudnn_sdpa_plan(&cd, &g, H, S, D, scale, q, k, v, o3)) {
                    for (int rep = 0; rep < 11; ++rep) {
                        float ms;
                        CK(cudaEventRecord(a));
                        const cudnnStatus_t st = cd.Execute(cd.handle, g.plan, g.pack);
                        CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
                        if (st != CUDNN_STATUS_SUCCESS) {
                            printf("cuDNN, S = %d: execute: %s\n", S, cd.GetErrorString(st));
                            t3.clear();
                            break;
                        }
                        CK(cudaEventElapsedTime(&ms, a, b));
                        if (rep) t3.push_back(ms);
                    }
                } else printf("cuDNN, S = %d: not compared (%s)\n", S, cd.why);
                cudnn_sdpa_free(&cd, &g);
            }
            std::vector<__half> r1(n), r2(n), r3(t3.empty() ? 0 : n);
            CK(cudaMemcpy(r1.data(), o1, n * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(r2.data(), o2, n * 2, cudaMemcpyDeviceToHost));
            if (!t3.empty()) CK(cudaMemcpy(r3.data(), o3, n * 2, cudaMemcpyDeviceToHost));
            double diff = 0, diff3 = 0;
            for (size_t i = 0; i < n; ++i) diff = fmax(diff, fabs((double)__half2float(r1[i]) - __half2float(r2[i])));
            for (size_t i = 0; i < r3.size(); ++i) diff3 = fmax(diff3, fabs((double)__half2float(r1[i]) - __half2float(r3[i])));
            const double flop = 4.0 * S * S * D * H * (causal ? 0.5 : 1.0), m1 = median(t1), m2 = median(t2);
            printf("%6d %6d | %12.3f %9.1f | %12.3f %9.1f %6.2fx %9.2e", S, causal, m1, flop / m1 * 1e-9, m2, flop / m2 * 1e-9,
                   m2 / m1, diff);
            if (t3.empty()) printf(" | %12s %9s %7s %9s\n", "-", "-", "-", "-");
            else {
                const double m3 = median(t3);
                printf(" | %12.3f %9.1f %6.2fx %9.2e\n", m3, flop / m3 * 1e-9, m3 / m1, diff3);
            }
            if (csv) {
                fprintf(csv, "\"%s\",%d,%d,%d,%d,%.4f,%.2f,%.4f,%.2f,%.3e,", prop.name, S, H, D, causal, m1, flop / m1 * 1e-9, m2,
                        flop / m2 * 1e-9, diff);
                if (t3.empty()) fprintf(csv, ",,\n");
                else fprintf(csv, "%.4f,%.2f,%.3e\n", median(t3), flop / median(t3) * 1e-9, diff3);
            }
            cudaEventDestroy(a); cudaEventDestroy(b);
        }
        cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o1); cudaFree(o2); cudaFree(o3); cudaFree(Sm); cudaFree(P);
    }
    if (csv) fclose(csv);
    cublasDestroy(hb);
    cudnn_close(&cd);
    bench_tf32(prop, lens, 4, H, D);
    return 0;
}
