// Host emulation of the device primitives of the flash_attention_hopper initial kernel, so that the kernel's
// own code (the "BEGIN KERNEL" .. "END KERNEL" section of kernel.cu) runs on a CPU in CI.
//
// A block is 128 std::threads; __syncthreads is a barrier over them and each warp-wide operation (ldmatrix,
// mma, shuffle) posts the lanes' operands, meets the other 31 lanes at a barrier, and computes its lane's
// result from the fragment tables of the PTX ISA (mma.m16n8k16 bf16, ldmatrix .x4 and .x4.trans). cp.async
// copies are queued and performed at the cp.async.wait_group that guarantees them, and shared memory starts
// as NaN, so a read before the wait or of a row that should have been zero-filled shows up in the output.
// What this cannot see: timing races between warps, bank conflicts, register limits, real rounding of exp2.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __launch_bounds__(...)
using std::max;
using std::min;

// A blocking barrier (no spinning: 128 emulated threads share a few CPU cores with everything else).
class Barrier {
   public:
    explicit Barrier(int count) : count_(count) {}
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        const unsigned long generation = generation_;
        if (++arrived_ == count_) {
            arrived_ = 0;
            ++generation_;
            all_arrived_.notify_all();
        } else {
            all_arrived_.wait(lock, [&] { return generation_ != generation; });
        }
    }

   private:
    std::mutex mutex_;
    std::condition_variable all_arrived_;
    const int count_;
    int arrived_ = 0;
    unsigned long generation_ = 0;
};

struct Dim3 {
    unsigned x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx, blockIdx;
Dim3 gridDim;
unsigned char* g_smem;
Barrier* g_block_barrier;
Barrier* g_warp_barrier[4];

struct WarpExchange {
    const void* addr[32];
    float val[32];
    uint32_t a[32][4];
    uint32_t b[32][2];
};
WarpExchange g_warp[4];

inline void __syncthreads() { g_block_barrier->arrive_and_wait(); }
inline int lane_id() { return threadIdx.x % 32; }
inline int warp_id() { return threadIdx.x / 32; }
inline void warp_sync() { g_warp_barrier[warp_id()]->arrive_and_wait(); }
inline unsigned char* dynamic_shared_memory() { return g_smem; }

inline uint16_t bf16_bits(float f) {  // round to nearest even, NaN kept quiet
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
}
inline float bf16_float(uint16_t h) {
    uint32_t u = uint32_t(h) << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
inline uint32_t pack_bf16x2(float lo, float hi) { return bf16_bits(lo) | (uint32_t(bf16_bits(hi)) << 16); }
inline uint16_t element(const void* row, int i) { return static_cast<const uint16_t*>(row)[i]; }

// Matrix m is given by lanes 8m..8m+7 (one row address each); lane l receives row l/4, columns 2(l%4)+{0,1}.
inline void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
    const int w = warp_id(), l = lane_id();
    g_warp[w].addr[l] = row;
    warp_sync();
    for (int m = 0; m < 4; ++m) {
        const void* src = g_warp[w].addr[8 * m + l / 4];
        r[m] = element(src, 2 * (l % 4)) | (uint32_t(element(src, 2 * (l % 4) + 1)) << 16);
    }
    warp_sync();
}

// Transposed: lane l receives rows 2(l%4)+{0,1} of column l/4.
inline void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
    const int w = warp_id(), l = lane_id();
    g_warp[w].addr[l] = row;
    warp_sync();
    for (int m = 0; m < 4; ++m) {
        const void* r0 = g_warp[w].addr[8 * m + 2 * (l % 4)];
        const void* r1 = g_warp[w].addr[8 * m + 2 * (l % 4) + 1];
        r[m] = element(r0, l / 4) | (uint32_t(element(r1, l / 4)) << 16);
    }
    warp_sync();
}

inline float half_of(uint32_t reg, int high) { return bf16_float(uint16_t(high ? reg >> 16 : reg & 0xffffu)); }

// A[row][k] sits in lane (row%8)*4 + (k%8)/2, register (row>=8) + 2(k>=8); B[k][n] in lane 4n + (k%8)/2,
// register (k>=8); the half is k%2. D[row][col] with row = g + 8(e/2), col = 2t + e%2 for element e.
inline void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    const int w = warp_id(), l = lane_id();
    for (int i = 0; i < 4; ++i) g_warp[w].a[l][i] = a[i];
    g_warp[w].b[l][0] = b0;
    g_warp[w].b[l][1] = b1;
    warp_sync();
    float out[4];
    const int g = l / 4, t = l % 4;
    for (int e = 0; e < 4; ++e) {
        const int row = g + (e >> 1) * 8, col = 2 * t + (e & 1);
        float acc = d[e];
        for (int k = 0; k < 16; ++k) {
            const int a_lane = (row % 8) * 4 + (k % 8) / 2, a_reg = (row >= 8) + 2 * (k >= 8);
            const int b_lane = col * 4 + (k % 8) / 2, b_reg = (k >= 8);
            acc += half_of(g_warp[w].a[a_lane][a_reg], k & 1) * half_of(g_warp[w].b[b_lane][b_reg], k & 1);
        }
        out[e] = acc;
    }
    warp_sync();
    for (int e = 0; e < 4; ++e) d[e] = out[e];
}

struct PendingCopy {
    void* dst;
    const void* src;
    int bytes;
};
thread_local std::vector<std::vector<PendingCopy>> t_groups;
thread_local std::vector<PendingCopy> t_open;

inline void cp_async_16(void* dst, const void* src, int src_bytes) { t_open.push_back({dst, src, src_bytes}); }
inline void cp_async_commit() {
    t_groups.push_back(t_open);
    t_open.clear();
}
template <int kPending>
inline void cp_async_wait() {
    while (static_cast<int>(t_groups.size()) > kPending) {
        for (const PendingCopy& c : t_groups.front()) {
            if (c.bytes) {
                memcpy(c.dst, c.src, 16);
            } else {
                memset(c.dst, 0, 16);
            }
        }
        t_groups.erase(t_groups.begin());
    }
}

inline float shuffle_xor(float v, int mask) {
    const int w = warp_id(), l = lane_id();
    g_warp[w].val[l] = v;
    warp_sync();
    const float r = g_warp[w].val[l ^ mask];
    warp_sync();
    return r;
}
