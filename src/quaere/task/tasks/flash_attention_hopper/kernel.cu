// Initial kernel of the flash_attention_hopper task: attention forward, bf16 in and out, fp32 accumulation.
//
// Plain and correct on purpose, not tuned. One thread block computes BM = 64 query rows of one (batch, head);
// each of its 4 warps owns 16 rows. The block walks the keys in tiles of BN rows: K and V tiles are copied to
// shared memory with cp.async, double buffered (tile j+1 is in flight while tile j is used). Per tile a warp
// computes S = Q K^T with mma.sync m16n8k16 (bf16 in, fp32 out), scales S into the log2 domain, masks it,
// updates the running row max and row sum (online softmax), rescales its O accumulator and adds P V, P being
// the probabilities rounded to bf16 straight from the S registers. At the end O is divided by the row sum and
// written as bf16; lse = ln(sum) + max, or -inf (and O = 0) for a row that no key may attend.
//
// Layouts: q, o [B, Sq, Hq, D]; k, v [B, Sk, Hkv, D]; lse [B, Hq, Sq]; query head h reads kv head
// h / (Hq / Hkv). Causal masks are aligned bottom-right: row i may attend key j when j <= i + (Sk - Sq).
//
// Shared memory rows are padded by 8 elements (16 bytes), so the 8 rows one ldmatrix phase reads start in 8
// different 16-byte bank groups (no bank conflicts) while every row stays 16-byte aligned for cp.async.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

// ===== BEGIN DEVICE PRIMITIVES (the only inline PTX; each states the fragment layout it produces) =====

__device__ __forceinline__ uint32_t shared_address(const void* pointer) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

__device__ __forceinline__ unsigned char* dynamic_shared_memory() {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    return shared_bytes;
}

// Four 8x8 b16 matrices; lanes 8m..8m+7 give the row addresses of matrix m, and register m of lane l holds
// row l/4, columns 2(l%4) and 2(l%4)+1 of matrix m.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// The same, transposed: register m of lane l holds rows 2(l%4) and 2(l%4)+1 of column l/4 of matrix m.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// d += a (16x16, row major) * b (16x8, column major); bf16 inputs, fp32 accumulators. With g = lane/4 and
// t = lane%4: d[0], d[1] are row g, columns 2t, 2t+1; d[2], d[3] are row g+8, the same columns.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Copies 16 bytes global -> shared asynchronously; with src_bytes = 0 it writes 16 zero bytes instead.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
                 "r"(src_bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ float shuffle_xor(float value, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, value, lane_mask);
}

// Two floats rounded to bf16 and packed, `low` in the low half (the lower column index).
__device__ __forceinline__ uint32_t pack_bf16x2(float low, float high) {
    __nv_bfloat162 pair = __floats2bfloat162_rn(low, high);
    return *reinterpret_cast<uint32_t*>(&pair);
}

__device__ __forceinline__ uint16_t bf16_bits(float value) {
    __nv_bfloat16 rounded = __float2bfloat16_rn(value);
    return *reinterpret_cast<uint16_t*>(&rounded);
}

// ===== END DEVICE PRIMITIVES =====

// ===== BEGIN KERNEL =====

struct AttentionParams {
    const uint16_t* q;  // bf16 bits
    const uint16_t* k;
    const uint16_t* v;
    uint16_t* o;
    float* lse;
    int seqlen_q;
    int seqlen_k;
    int heads_q;
    int heads_kv;
    int group;         // heads_q / heads_kv: query heads sharing one kv head
    float scale_log2;  // softmax_scale * log2(e): scores go straight to the exp2 domain
    int causal;
    int inputs_16b_aligned;  // q, k, v start on 16 bytes: cp.async may be used
    int output_4b_aligned;   // o starts on 4 bytes: two bf16 can be stored at once
};

constexpr int kThreads = 128;  // 4 warps, 16 query rows each
constexpr int kBlockM = 64;
constexpr float kLn2 = 0.69314718055994530942f;
constexpr float kLog2e = 1.44269504088896340736f;

// Copies rows [0, kRows) of a [rows, D] tile (global row stride `row_stride` elements) into shared memory
// (row stride D + 8); rows at or past `valid_rows` are zero-filled, so padded keys contribute P * 0 = 0 and
// never a NaN read from stale shared memory.
template <int D, int kRows>
__device__ __forceinline__ void load_tile(uint16_t* shared, const uint16_t* global, long row_stride,
                                          int valid_rows, bool use_cp_async) {
    constexpr int kChunks = D / 8;  // 16-byte chunks per row
    constexpr int kTotal = kRows * kChunks;
#pragma unroll
    for (int i = 0; i < (kTotal + kThreads - 1) / kThreads; ++i) {
        const int c = i * kThreads + threadIdx.x;
        if (kTotal % kThreads != 0 && c >= kTotal) break;
        const int row = c / kChunks;
        const int col = (c % kChunks) * 8;
        uint16_t* dst = shared + row * (D + 8) + col;
        const bool valid = row < valid_rows;
        const uint16_t* src = valid ? global + row * row_stride + col : global;
        if (use_cp_async) {
            cp_async_16(dst, src, valid ? 16 : 0);
        } else {  // inputs not 16-byte aligned: plain element copies, made visible by the next __syncthreads
#pragma unroll
            for (int e = 0; e < 8; ++e) dst[e] = valid ? src[e] : uint16_t(0);
        }
    }
}

template <int D, int kBlockN>
__global__ void __launch_bounds__(kThreads) attention_forward_kernel(const AttentionParams p) {
    constexpr int kStride = D + 8;
    uint16_t* sQ = reinterpret_cast<uint16_t*>(dynamic_shared_memory());
    uint16_t* sK = sQ + kBlockM * kStride;  // two stages of kBlockN rows
    uint16_t* sV = sK + 2 * kBlockN * kStride;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int g = lane / 4;  // fragment row (and row + 8)
    const int t = lane % 4;  // fragment column pair
    const int m_block = gridDim.x - 1 - blockIdx.x;  // causal: the blocks with the most keys start first
    const int head = blockIdx.y;
    const int batch = blockIdx.z;
    const int kv_head = head / p.group;
    const int m0 = m_block * kBlockM;
    const int Sq = p.seqlen_q;
    const int Sk = p.seqlen_k;
    const int causal_offset = Sk - Sq;  // row i may attend keys j <= i + causal_offset

    // Keys this block needs: all of them, or (causal) up to the last one its last valid row may attend.
    int kv_end = Sk;
    if (p.causal) kv_end = max(0, min(Sk, min(m0 + kBlockM, Sq) + causal_offset));
    const int n_tiles = (kv_end + kBlockN - 1) / kBlockN;

    const long q_row_stride = static_cast<long>(p.heads_q) * D;
    const long kv_row_stride = static_cast<long>(p.heads_kv) * D;
    const uint16_t* gQ = p.q + (static_cast<long>(batch) * Sq + m0) * q_row_stride + static_cast<long>(head) * D;
    const long kv_base = static_cast<long>(batch) * Sk * kv_row_stride + static_cast<long>(kv_head) * D;
    const uint16_t* gK = p.k + kv_base;
    const uint16_t* gV = p.v + kv_base;
    const bool use_cp_async = p.inputs_16b_aligned != 0;

    float o_acc[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; ++i) o_acc[i][0] = o_acc[i][1] = o_acc[i][2] = o_acc[i][3] = 0.f;
    float row_max[2] = {-INFINITY, -INFINITY};  // running max of the scaled scores (log2 domain)
    float row_sum[2] = {0.f, 0.f};              // this thread's share of the running sum of exp2(s - max)

    if (n_tiles > 0) {
        load_tile<D, kBlockM>(sQ, gQ, q_row_stride, Sq - m0, use_cp_async);
        load_tile<D, kBlockN>(sK, gK, kv_row_stride, Sk, use_cp_async);
        load_tile<D, kBlockN>(sV, gV, kv_row_stride, Sk, use_cp_async);
        cp_async_commit();
    }

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1;
        if (j + 1 < n_tiles) {
            const int next = (j + 1) * kBlockN;
            const long offset = static_cast<long>(next) * kv_row_stride;
            load_tile<D, kBlockN>(sK + (stage ^ 1) * kBlockN * kStride, gK + offset, kv_row_stride, Sk - next,
                                  use_cp_async);
            load_tile<D, kBlockN>(sV + (stage ^ 1) * kBlockN * kStride, gV + offset, kv_row_stride, Sk - next,
                                  use_cp_async);
            cp_async_commit();
            cp_async_wait<1>();  // tile j (and Q) landed; tile j+1 may still be in flight
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();

        // S = Q K^T for this warp's 16 rows and the kBlockN keys of the tile.
        const uint16_t* sKj = sK + stage * kBlockN * kStride;
        float s[kBlockN / 8][4];
#pragma unroll
        for (int i = 0; i < kBlockN / 8; ++i) s[i][0] = s[i][1] = s[i][2] = s[i][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t a[4];
            ldmatrix_x4(a, sQ + (warp * 16 + (lane & 15)) * kStride + kk * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int nn = 0; nn < kBlockN / 16; ++nn) {
                uint32_t b[4];  // b[0], b[1]: keys nn*16 + 0..7; b[2], b[3]: keys nn*16 + 8..15
                ldmatrix_x4(b, sKj + (nn * 16 + (lane & 7) + ((lane >> 4) << 3)) * kStride + kk * 16 +
                                   ((lane >> 3) & 1) * 8);
                mma_bf16_16816(s[2 * nn], a, b[0], b[1]);
                mma_bf16_16816(s[2 * nn + 1], a, b[2], b[3]);
            }
        }

        // Scale into the log2 domain; mask keys past Sk and, when causal, keys after the row's diagonal.
        const int j0 = j * kBlockN;
        const bool need_mask = (j0 + kBlockN > Sk) || (p.causal && j0 + kBlockN - 1 > m0 + causal_offset);
#pragma unroll
        for (int nt = 0; nt < kBlockN / 8; ++nt) {
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                float x = s[nt][e] * p.scale_log2;
                if (need_mask) {
                    const int row = m0 + warp * 16 + g + (e >> 1) * 8;
                    const int col = j0 + nt * 8 + 2 * t + (e & 1);
                    if (col >= Sk || (p.causal && col > row + causal_offset)) x = -INFINITY;
                }
                s[nt][e] = x;
            }
        }

        // Online softmax: new row max (over the 4 lanes sharing a row), rescale factor, probabilities.
#pragma unroll
        for (int r = 0; r < 2; ++r) {
            float tile_max = row_max[r];
#pragma unroll
            for (int nt = 0; nt < kBlockN / 8; ++nt) tile_max = fmaxf(tile_max, fmaxf(s[nt][2 * r], s[nt][2 * r + 1]));
            tile_max = fmaxf(tile_max, shuffle_xor(tile_max, 1));
            tile_max = fmaxf(tile_max, shuffle_xor(tile_max, 2));
            // A row with no allowed key so far keeps max = -inf; subtracting 0 then gives exp2(-inf) = 0
            // everywhere instead of exp2(-inf - -inf) = NaN.
            const float base = tile_max == -INFINITY ? 0.f : tile_max;
            const float alpha = exp2f(row_max[r] - base);
            row_max[r] = tile_max;
            float sum = 0.f;
#pragma unroll
            for (int nt = 0; nt < kBlockN / 8; ++nt) {
                s[nt][2 * r] = exp2f(s[nt][2 * r] - base);
                s[nt][2 * r + 1] = exp2f(s[nt][2 * r + 1] - base);
                sum += s[nt][2 * r] + s[nt][2 * r + 1];
            }
            row_sum[r] = row_sum[r] * alpha + sum;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt) {
                o_acc[dt][2 * r] *= alpha;
                o_acc[dt][2 * r + 1] *= alpha;
            }
        }

        // O += P V. The S accumulators of key tiles 2kc and 2kc+1 are exactly the A fragment of keys
        // kc*16 .. kc*16+15, so P goes from registers to the tensor cores without shared memory.
        const uint16_t* sVj = sV + stage * kBlockN * kStride;
#pragma unroll
        for (int kc = 0; kc < kBlockN / 16; ++kc) {
            uint32_t a[4];
            a[0] = pack_bf16x2(s[2 * kc][0], s[2 * kc][1]);
            a[1] = pack_bf16x2(s[2 * kc][2], s[2 * kc][3]);
            a[2] = pack_bf16x2(s[2 * kc + 1][0], s[2 * kc + 1][1]);
            a[3] = pack_bf16x2(s[2 * kc + 1][2], s[2 * kc + 1][3]);
#pragma unroll
            for (int dn = 0; dn < D / 16; ++dn) {
                uint32_t b[4];  // b[0], b[1]: dims dn*16 + 0..7; b[2], b[3]: dims dn*16 + 8..15
                ldmatrix_x4_trans(b, sVj + (kc * 16 + (lane & 15)) * kStride + dn * 16 + (lane >> 4) * 8);
                mma_bf16_16816(o_acc[2 * dn], a, b[0], b[1]);
                mma_bf16_16816(o_acc[2 * dn + 1], a, b[2], b[3]);
            }
        }
        __syncthreads();  // every warp is done with this stage before the next iteration refills it
    }

    // Epilogue: full row sums, normalize, write O (bf16) and lse (natural log, softmax_scale applied).
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        float sum = row_sum[r];
        sum += shuffle_xor(sum, 1);
        sum += shuffle_xor(sum, 2);
        const float inv = sum > 0.f ? 1.f / sum : 0.f;  // a fully masked row has sum 0 and O = 0
        const int row = m0 + warp * 16 + g + r * 8;
        if (row < Sq) {
            uint16_t* o_row = p.o + ((static_cast<long>(batch) * Sq + row) * p.heads_q + head) * D;
#pragma unroll
            for (int dt = 0; dt < D / 8; ++dt) {
                const int col = dt * 8 + 2 * t;
                const float x0 = o_acc[dt][2 * r] * inv;
                const float x1 = o_acc[dt][2 * r + 1] * inv;
                if (p.output_4b_aligned) {
                    *reinterpret_cast<uint32_t*>(o_row + col) = pack_bf16x2(x0, x1);
                } else {
                    o_row[col] = bf16_bits(x0);
                    o_row[col + 1] = bf16_bits(x1);
                }
            }
            if (t == 0) {
                p.lse[(static_cast<long>(batch) * p.heads_q + head) * Sq + row] =
                    sum > 0.f ? (row_max[r] + log2f(sum)) * kLn2 : -INFINITY;
            }
        }
    }
}

// Kernel parameters from validated ABI arguments (plain C++: the CPU emulation of the tests calls it too).
inline AttentionParams make_attention_params(const void* q, const void* k, const void* v, void* o, float* lse,
                                             int seqlen_q, int seqlen_k, int heads_q, int heads_kv,
                                             float softmax_scale, int causal) {
    const uintptr_t inputs =
        reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k) | reinterpret_cast<uintptr_t>(v);
    AttentionParams p;
    p.q = static_cast<const uint16_t*>(q);
    p.k = static_cast<const uint16_t*>(k);
    p.v = static_cast<const uint16_t*>(v);
    p.o = static_cast<uint16_t*>(o);
    p.lse = lse;
    p.seqlen_q = seqlen_q;
    p.seqlen_k = seqlen_k;
    p.heads_q = heads_q;
    p.heads_kv = heads_kv;
    p.group = heads_q / heads_kv;
    p.scale_log2 = softmax_scale * kLog2e;
    p.causal = causal != 0;
    p.inputs_16b_aligned = (inputs & 15) == 0;
    p.output_4b_aligned = (reinterpret_cast<uintptr_t>(o) & 3) == 0;
    return p;
}

// ===== END KERNEL =====

namespace {

// Status codes of attention_forward (0 = success).
enum Status : int {
    kOk = 0,
    kNullPointer = 1,       // q, k, v, o or lse is null
    kBadShape = 2,          // a negative size, heads <= 0, or heads_q not a multiple of heads_kv
    kBadHeadDim = 3,        // head_dim not 64, 128 or 256
    kBadScale = 4,          // softmax_scale is NaN, infinite, or so large that scale * log2(e) overflows
    kMisaligned = 5,        // a bf16 pointer not on 2 bytes, or lse not on 4 bytes
    kTooLarge = 6,          // batch or heads_q above the grid limit (65535)
    kCudaError = 7,         // the launch failed (see cudaGetLastError)
};

template <int D, int kBlockN>
int launch(const AttentionParams& p, int batch, cudaStream_t stream) {
    constexpr size_t kSmemBytes = static_cast<size_t>(kBlockM + 4 * kBlockN) * (D + 8) * sizeof(uint16_t);
    auto kernel = attention_forward_kernel<D, kBlockN>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(kSmemBytes)) !=
        cudaSuccess) {
        return kCudaError;
    }
    const dim3 grid((p.seqlen_q + kBlockM - 1) / kBlockM, p.heads_q, batch);
    kernel<<<grid, kThreads, kSmemBytes, stream>>>(p);
    return cudaGetLastError() == cudaSuccess ? kOk : kCudaError;
}

}  // namespace

// q: bf16 [B, Sq, Hq, D], k and v: bf16 [B, Sk, Hkv, D], o: bf16 [B, Sq, Hq, D], all contiguous;
// lse: fp32 [B, Hq, Sq], lse[b,h,i] = ln(sum over allowed j of exp(softmax_scale * q_i . k_j));
// Hq % Hkv == 0 (MHA, GQA, MQA); causal masks are aligned bottom-right when Sq != Sk, and a fully
// masked row gives o = 0 and lse = -inf; workspace: scratch memory of workspace_bytes, contents
// undefined on entry (unused here). Returns 0 on success, a nonzero Status for unsupported arguments.
extern "C" int attention_forward(const void* q, const void* k, const void* v, void* o, float* lse,
                                 int batch, int seqlen_q, int seqlen_k, int heads_q, int heads_kv,
                                 int head_dim, float softmax_scale, int causal,
                                 void* workspace, size_t workspace_bytes, void* stream) {
    (void)workspace;
    (void)workspace_bytes;
    if (!q || !k || !v || !o || !lse) return kNullPointer;
    if (batch < 0 || seqlen_q < 0 || seqlen_k < 0 || heads_q <= 0 || heads_kv <= 0) return kBadShape;
    if (heads_q % heads_kv != 0) return kBadShape;
    if (head_dim != 64 && head_dim != 128 && head_dim != 256) return kBadHeadDim;
    if (!isfinite(softmax_scale * kLog2e)) return kBadScale;
    if (batch > 65535 || heads_q > 65535) return kTooLarge;
    const uintptr_t any_bf16 = reinterpret_cast<uintptr_t>(q) | reinterpret_cast<uintptr_t>(k) |
                               reinterpret_cast<uintptr_t>(v) | reinterpret_cast<uintptr_t>(o);
    if ((any_bf16 & 1) || (reinterpret_cast<uintptr_t>(lse) & 3)) return kMisaligned;
    if (batch == 0 || seqlen_q == 0) return kOk;  // nothing to compute

    const AttentionParams p =
        make_attention_params(q, k, v, o, lse, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal);
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (head_dim) {
        case 64: return launch<64, 64>(p, batch, s);
        case 128: return launch<128, 64>(p, batch, s);
        // D = 256: fewer keys per tile, since the O accumulator alone takes 128 registers per thread.
        default: return launch<256, 32>(p, batch, s);
    }
}
