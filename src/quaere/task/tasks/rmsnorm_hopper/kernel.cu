// RMSNorm forward, bf16, row-major: y[r, c] = x[r, c] * rsqrt(mean_c(x[r, c]^2) + eps) * weight[c].
// The initial kernel of quaere's rmsnorm_hopper task: plain and correct, not fast. One block of 256 threads
// per row (rows beyond the grid are taken in turn), scalar bf16 loads, the sum of squares in fp32 reduced
// through shared memory, x read twice. Every output is rounded once, from fp32.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 65536;

enum Status : int { kOk = 0, kNullPointer = 1, kBadShape = 2, kBadEps = 3, kLaunchFailed = 4 };

// ===== BEGIN KERNEL =====
__global__ void __launch_bounds__(kThreads)
rmsnorm_rows(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
             __nv_bfloat16* __restrict__ y, int rows, int cols, float eps) {
    __shared__ float partial[kThreads];
    for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
        const __nv_bfloat16* in = x + row * cols;
        __nv_bfloat16* out = y + row * cols;
        float sum = 0.0f;
        for (int c = threadIdx.x; c < cols; c += kThreads) {
            const float v = __bfloat162float(in[c]);
            sum += v * v;
        }
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int stride = kThreads / 2; stride > 0; stride >>= 1) {
            if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
            __syncthreads();
        }
        const float inv_rms = rsqrtf(partial[0] / static_cast<float>(cols) + eps);
        for (int c = threadIdx.x; c < cols; c += kThreads) {
            out[c] = __float2bfloat16(__bfloat162float(in[c]) * inv_rms * __bfloat162float(weight[c]));
        }
        __syncthreads();  // every thread has read partial[0] before the next row overwrites it
    }
}
// ===== END KERNEL =====

}  // namespace

// x: bf16 [rows, cols], weight: bf16 [cols], y: bf16 [rows, cols], all contiguous. Returns 0 on success,
// a nonzero Status for arguments it does not support (nothing is written then).
extern "C" int rmsnorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y, int rows,
                               int cols, float eps, cudaStream_t stream) {
    if (!x || !weight || !y) return kNullPointer;
    if (rows < 0 || cols <= 0) return kBadShape;
    if (!std::isfinite(eps) || eps < 0.0f) return kBadEps;
    if (rows == 0) return kOk;
    const int blocks = rows < kMaxBlocks ? rows : kMaxBlocks;
    rmsnorm_rows<<<blocks, kThreads, 0, stream>>>(x, weight, y, rows, cols, eps);
    return cudaGetLastError() == cudaSuccess ? kOk : kLaunchFailed;
}
