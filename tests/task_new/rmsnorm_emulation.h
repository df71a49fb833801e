// Host emulation of the CUDA primitives the rmsnorm_hopper initial kernel uses, so that the kernel's own
// code (its "BEGIN KERNEL" .. "END KERNEL" section) runs on a CPU in CI: a block is 256 std::threads,
// __syncthreads a barrier over them, __shared__ one instance per (sequentially run) block, bf16 the 16
// high bits of a float rounded to nearest even. What this cannot see: races between warps, real timing.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#define __global__
#define __launch_bounds__(...)
#define __restrict__
#define __shared__ static

struct Dim3 {
    unsigned x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx, blockIdx;
Dim3 gridDim;
std::barrier<>* block_barrier = nullptr;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }

struct __nv_bfloat16 {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 value) {
    const uint32_t word = static_cast<uint32_t>(value.bits) << 16;
    float result;
    std::memcpy(&result, &word, sizeof result);
    return result;
}
inline __nv_bfloat16 __float2bfloat16(float value) {
    uint32_t word;
    std::memcpy(&word, &value, sizeof word);
    if (std::isnan(value)) return {static_cast<uint16_t>((word >> 16) | 0x40)};
    word += 0x7FFF + ((word >> 16) & 1);  // round to nearest, ties to even
    return {static_cast<uint16_t>(word >> 16)};
}
inline float rsqrtf(float value) { return 1.0f / std::sqrt(value); }
