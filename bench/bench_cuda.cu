/* bench/bench_cuda.cu - attn_cuda_forward (f16 tensor cores) against a cuBLAS baseline (two
   batched GEMMs, fp32 accumulation, and a row softmax kernel in between: the unfused
   S = Q K^T -> softmax -> P V that frameworks run without a fused kernel), on the same GPU and
   the same inputs. B = 1, H = 16, D = 128, f16, BHSD; non-causal and causal (the baseline
   computes the full S for causal as well, with the mask in its softmax). Medians of 10 runs
   (cudaEvent), TFLOP/s counted as 4 S^2 D H (halved for causal), the max |difference| of the
   two outputs, and bench/results_cuda.csv. cuDNN's fused attention (its graph API) is not
   wired in yet. Built by make bench-cuda (nvcc, -lcublas); needs a GPU to run. */
#define ATTN_CUDA_IMPLEMENTATION
#include "attn_cuda.cuh"
#include <cublas_v2.h>
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

int main(void) {
    const int H = 16, D = 128, lens[] = { 512, 1024, 2048, 4096 };
    cudaDeviceProp prop;
    cublasHandle_t hb;
    FILE *csv = fopen("bench/results_cuda.csv", "w");
    CK(cudaGetDeviceProperties(&prop, 0));
    CB(cublasCreate(&hb));
    printf("GPU: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
    printf("%6s %6s | %12s %9s | %12s %9s | %7s | %9s\n", "S", "causal", "attn_cuda ms", "TFLOP/s", "cuBLAS ms", "TFLOP/s",
           "speedup", "max|diff|");
    if (csv) fprintf(csv, "gpu,S,H,D,causal,attn_cuda_ms,attn_cuda_tflops,cublas_ms,cublas_tflops,max_abs_diff\n");
    for (int li = 0; li < 4; ++li) {
        const int S = lens[li];
        const size_t n = (size_t)H * S * D;
        std::vector<__half> hq(n);
        __half *q, *k, *v, *o1, *o2, *P;
        float *Sm;
        for (size_t i = 0; i < n; ++i) hq[i] = __float2half((float)((i * 2654435761u) % 1000) / 500.0f - 1.0f);
        CK(cudaMalloc(&q, n * 2)); CK(cudaMalloc(&k, n * 2)); CK(cudaMalloc(&v, n * 2));
        CK(cudaMalloc(&o1, n * 2)); CK(cudaMalloc(&o2, n * 2));
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
            std::vector<__half> r1(n), r2(n);
            CK(cudaMemcpy(r1.data(), o1, n * 2, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(r2.data(), o2, n * 2, cudaMemcpyDeviceToHost));
            double diff = 0;
            for (size_t i = 0; i < n; ++i) diff = fmax(diff, fabs((double)__half2float(r1[i]) - __half2float(r2[i])));
            const double flop = 4.0 * S * S * D * H * (causal ? 0.5 : 1.0), m1 = median(t1), m2 = median(t2);
            printf("%6d %6d | %12.3f %9.1f | %12.3f %9.1f | %6.2fx | %9.2e\n", S, causal, m1, flop / m1 * 1e-9, m2,
                   flop / m2 * 1e-9, m2 / m1, diff);
            if (csv) fprintf(csv, "\"%s\",%d,%d,%d,%d,%.4f,%.2f,%.4f,%.2f,%.3e\n", prop.name, S, H, D, causal, m1, flop / m1 * 1e-9,
                             m2, flop / m2 * 1e-9, diff);
            cudaEventDestroy(a); cudaEventDestroy(b);
        }
        cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o1); cudaFree(o2); cudaFree(Sm); cudaFree(P);
    }
    if (csv) fclose(csv);
    cublasDestroy(hb);
    return 0;
}
