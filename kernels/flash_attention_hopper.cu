// FlashAttention forward for Hopper (sm_90a): one file, no CUTLASS/CuTe/cuBLAS/cuDNN.
//
// Persistent kernel, one CTA per SM; a CTA works on 64*NWG-row query tiles of one (batch, head):
//   warpgroup 0      : producer. One thread takes tiles from a global atomic counter (heaviest
//                      first, heads grouped so their K/V stay in L2), publishes each tile decoded
//                      (batch, head, first row, KV blocks) in shared memory and issues TMA loads
//                      (cp.async.bulk.tensor.4d, 128B swizzle) of Q and of K/V tiles into a
//                      STAGES-deep ring, completing on mbarriers
//                      (D = 256: block it+1's K before block it's V, the consumers' order).
//   warpgroups 1..NWG: consumers, 64 query rows each. S = Q K^T with wgmma (both operands in
//                      shared memory; descriptors are a base plus each k-step's constant offset,
//                      one integer add per wgmma), online softmax in registers (exp2, scale folded
//                      in, O only rescaled when a row max grows by more than 2^8), P converted to bf16 in
//                      registers and O += P V with wgmma's register-A form, V read MN-major
//                      (transposed B). The next tile's S GEMM is issued before this tile's P V GEMM
//                      so that softmax overlaps the tensor cores (intra-warpgroup overlap).
//                      O is staged in shared memory (a buffer of its own for D <= 128, the freed V
//                      ring for D = 256) and leaves by TMA stores (D >= 128, one thread, waited
//                      for only before the buffer is reused) or 16-byte stores (D = 64).
// Non-causal D=64 and D=256 run in 2-CTA clusters that take pairs of query blocks of one head: each CTA
// loads half of every K/V block into both CTAs' rings (TMA multicast), halving the K/V traffic (FAH_MC).
// KV tiles are visited from the last to the first, so the tiles that need masking (sequence tail,
// causal diagonal) come first and the rest run without mask arithmetic. Rows past the sequence end
// are zero-filled by the copy engine and never stored.
// Layout contract (issue 3): q [B,Sq,Hq,D], k/v [B,Sk,Hkv,D], o [B,Sq,Hq,D] bf16 contiguous;
// lse fp32 [B,Hq,Sq]; causal aligned bottom-right; fully masked rows give o = 0, lse = -inf.
// Host side (attention_forward): the task's refusal codes; a scale <= 0 or a q/k/v/o pointer off 16 bytes runs the
// tiled kernels on copies in stream-ordered scratch (staged_forward); Sk = 0, or no scratch to be had, takes the
// plain kernel. Each launch draws its tiles from its own counter pair (g_sched), so launches may overlap on streams.
// The FAH_* macros select tile shapes; their defaults are the measured best (docs/perf.md).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include <math.h>
#include <atomic>

#ifndef FAH_PP64  // 1: the two consumer warpgroups take turns issuing GEMMs (FA3's ping-pong)
#define FAH_PP64 0
#endif
#ifndef FAH_PP128
#define FAH_PP128 0
#endif
#ifndef FAH_PP128C  // the same, causal D=128
#define FAH_PP128C 0
#endif
#ifndef FAH_PP128C_SK  // causal D=128 with at most this many keys: ping-pong turns whatever FAH_PP128C says
#define FAH_PP128C_SK 1536
#endif
#ifndef FAH_LAZY64  // 1: skip the row max on blocks where no P can exceed 2^8 (softmax_fast), D=64 (stage 11)
#define FAH_LAZY64 1
#endif
#ifndef FAH_LAZY128
#define FAH_LAZY128 1
#endif
#ifndef FAH_LAZY256
#define FAH_LAZY256 0
#endif
#ifndef FAH_LZ_CAUSAL  // 1: softmax_fast in the causal kernels too (CM = 1); 2: in those without ping-pong turns
#define FAH_LZ_CAUSAL 2   // (2: +1.2 to +4.1% on causal D=128 from 2k keys; 1 loses 1-3% in the ping-pong kernels)
#endif
#ifndef FAH_LZ_EXACT  // 1: a block whose softmax_fast failed takes the exact row max (not the 2^8-lazy one)
#define FAH_LZ_EXACT 1
#endif
#ifndef FAH_LAZY64_2WG  // 0: not in the 2-warpgroup D=64 kernel (short causal; +0.7% at S=1k, stage 11)
#define FAH_LAZY64_2WG 0
#endif
#ifndef FAH_LZ_GQA  // 1: causal D=128 with grouped K/V heads runs the CM = 3 kernel (softmax_fast)
#define FAH_LZ_GQA 1
#endif
#ifndef FAH_ONEGROUP_SK_C  // causal with at most this many keys: all heads in one scheduling group
#define FAH_ONEGROUP_SK_C 0
#endif
#ifndef FAH_SPLIT  // non-causal D=128: the last wave's tiles split in up to this many KV ranges (1: never)
#define FAH_SPLIT 1
#endif
#ifndef FAH_SPLIT_OVH  // a split piece's fixed cost in tenths of a KV block (Q load, pipeline fill, partials)
#define FAH_SPLIT_OVH 15
#endif
#ifndef FAH_PROBE  // 1: each CTA records its start, its producer's end and its consumers' end (diagnosis)
#define FAH_PROBE 0
#endif
#ifndef FAH_KAHEAD_D  // head dims from this one up: the producer loads block it+1's K before block it's V
#define FAH_KAHEAD_D 256
#endif
#ifndef FAH_RR64  // 1: the three consumer warpgroups of the D=64 kernel take turns (round robin)
#define FAH_RR64 0
#endif
#ifndef FAH_ST128  // pipeline stages for head dim 128
#define FAH_ST128 2
#endif
#ifndef FAH_BN128  // KV tile width for head dim 128
#define FAH_BN128 128
#endif
#ifndef FAH_NWG64  // consumer warpgroups (64 query rows each) for head dim 64
#define FAH_NWG64 3
#endif
#ifndef FAH_SQ64_2WG  // causal D=64 up to this query length uses 2 consumer warpgroups instead
#define FAH_SQ64_2WG 2048
#endif
#ifndef FAH_BN64
#define FAH_BN64 128
#endif
#ifndef FAH_BN256  // KV tile width for head dim 256
#define FAH_BN256 80
#endif
#ifndef FAH_SK256_BN64  // causal D=256 with at most this many keys uses 64-wide KV tiles
#define FAH_SK256_BN64 1024
#endif
#ifndef FAH_PP256
#define FAH_PP256 0
#endif
#ifndef FAH_PP256C  // 1: ping-pong turns in the causal D=256 kernels only (+1.1 to +1.4% at S=1k, perf.md stage 8)
#define FAH_PP256C 1
#endif
#ifndef FAH_BN128NC  // KV tile width for head dim 128 without a causal mask (FA3 uses 176)
#define FAH_BN128NC 128
#endif
#ifndef FAH_NC3_SQ  // non-causal D=128 with at least this many queries: 3 consumer warpgroups (192-row tiles; 0: never)
#define FAH_NC3_SQ 1280  // (H100, stage 31: +3 to +4% from 2k queries, -3.5% at 1k: 2 of 18 warpgroups rowless)
#endif
#ifndef FAH_C3_SK  // causal D=128 with at least this many keys: 3 consumer warpgroups (0: never)
#define FAH_C3_SK 1537  // (H100, stage 32, with FAH_SHIFT: +1 to +3% at 4k-16k keys, +0.5% at 2k, +2-6% at 2.8k-3k)
#endif
#ifndef FAH_BN128_3  // KV tile width of the 3-warpgroup D=128 kernels (160 registers a consumer thread)
#define FAH_BN128_3 64
#endif
#ifndef FAH_ST128_3  // its K/V stages (stage 31: 2 -3%, 3 0%, 4 +0.6% over all D=128 rows against 2 warpgroups)
#define FAH_ST128_3 4
#endif
#ifndef FAH_SHIFT  // 1: causal query tiles end on the last row, so a partial tile is the first (lightest), not the last
#define FAH_SHIFT 1  // (H100, stage 32: with FAH_C3_SK 1537, +0.6% over the 26, +1.6% over the odd shapes)
#endif
#ifndef FAH_TMA_ST  // 1: the staged O leaves through TMA stores (one thread, asynchronous), D >= 128
#define FAH_TMA_ST 1
#endif
// L2 prefetch of the next tile by the producer as soon as its id is known: 0 none, 1 its Q, 2 its
// Q and first K/V block. Measured (perf.md, stage 2): level 2 gained 3-4% at D=64 and lost 1-7%
// at D=128/256, level 1 lost 0.2% at D=128/256 (cause not measured; a guess: the prefetches queue
// ahead of the current tile's loads in the copy engine).
#ifndef FAH_PREFETCH64
#define FAH_PREFETCH64 2
#endif
#ifndef FAH_PREFETCH
#define FAH_PREFETCH 0
#endif
#ifndef FAH_L2_MB  // L2 budget (MB) for the K/V of one group of heads scheduled together (non-causal)
#define FAH_L2_MB 8
#endif
#ifndef FAH_GROUP_FILL  // 1: head groups sized so that they are about equal (see heads_per_group)
#define FAH_GROUP_FILL 1
#endif
#ifndef FAH_TAIL  // causal: the last head group holds at least this many tenths of the SM count in tiles
#define FAH_TAIL 15
#endif
#ifndef FAH_L2_MB_C  // the same, causal
#define FAH_L2_MB_C 24
#endif
#ifndef FAH_OV  // 1: where no shared memory is left for a dedicated O buffer, stage O in the V ring
#define FAH_OV 1
#endif
// K/V multicast in 2-CTA clusters, by kernel (bits): 1 non-causal D=128, 2 non-causal D=256, 4 non-causal D=64
// (pairs of query blocks), 8 causal D=128 with grouped heads (pairs of heads). On: 2 and 4 (+2.0% on D=256 S=1k
// and 4k, +0.5-1.3% on D=64); 1 and 8 lose 0.4-3% and 3-12%, more with deeper rings (perf.md, stages 13-14).
#ifndef FAH_MC
#define FAH_MC 6
#endif
#ifndef FAH_MC_ST64  // multicast kernels' ring depth and KV tile width (a release now crosses to the peer CTA)
#define FAH_MC_ST64 3
#endif
#ifndef FAH_MC_ST128
#define FAH_MC_ST128 FAH_ST128
#endif
#ifndef FAH_MC_BN128
#define FAH_MC_BN128 FAH_BN128NC
#endif
#ifndef FAH_DEFER  // causal: the shortest query-block levels of every head, about this many tenths of an SM-wave
#define FAH_DEFER 20  // of tiles, run after all the head groups, longest first across heads (0: off; see defer_levels)
#endif
#ifndef FAH_DEFER_M  // ... in MHA launches of at least this many query blocks (short ones lost up to 8%, stage 14)
#define FAH_DEFER_M 32
#endif
// A causal tile's first (diagonal) KV block, per consumer warpgroup, where its rows cannot see all of it (a warp vote
// decides, so that ptxas keeps the wgmma pipeline; perf.md stage 16):
#ifndef FAH_HD  // 1: causal D=128, rows that see only the block's first half: its S GEMM with N = BN/2 (the columns
#define FAH_HD 1  // past it keep stale values, which the mask sets)
#endif
#ifndef FAH_HPV64  // 1: the 3-warpgroup D=64 kernel, the same rows: the block's P V with half the k-steps (the other
#define FAH_HPV64 1  // half's P are masked to zero). Lost at D=128 (one warpgroup, a quarter block: -0.7 to -4%) and in the
#endif           // 2-warpgroup D=64 kernel (-1.2%)
#ifndef FAH_HS  // 1: with FAH_HPV64, that block's softmax and P conversion cover its first half only
#define FAH_HS 1
#endif
#ifndef FAH_HZ  // 1: causal D=256, a warpgroup whose rows see no key of the tile's first KV block skips that block
#define FAH_HZ 1  // (its S GEMM, softmax and P V): with 64- and 80-wide blocks the first one is often past the first 64 rows
#endif
#ifndef FAH_XT128  // 1: cross-tile overlap at D=128 (Q double-buffered; the next tile's first S GEMM runs
#define FAH_XT128 0   // under this tile's epilogue), in the kernels without ping-pong turns
#endif
#ifndef FAH_XT64  // the same at D=64
#define FAH_XT64 1
#endif

namespace fah {

// A width as a type, so that one lambda issues wgmmas of either width (their N is a template argument).
template <int N>
struct Cols {
  static constexpr int value = N;
};

// ---------------------------------------------------------------- PTX wrappers
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Cluster (FAH_MC): arrive on the barrier at this offset in CTA `cta` of the cluster, with the default semantics
// (release, CTA scope) as CUTLASS's cluster pipelines release a stage: at cluster scope the release compiled to
// MEMBAR.ALL.GPU and an L1 invalidate inside the loop and halved the speed (stage 13). The producer's wait on
// such a barrier acquires at cluster scope (outside the consumers' loop).
__device__ __forceinline__ void mbar_arrive_remote(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ void mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred P1;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// Every thread of both CTAs; also a barrier inside the CTA.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred P1;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@!P1 bra WAIT_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar,
                                            int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar) : "memory");
}
// The same box written at this offset in every CTA of `mask`, each CTA's barrier at `bar` told its bytes.
__device__ __forceinline__ void tma_load_4d_mc(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1,
                                               int c2, int c3, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(dst), "l"(reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(bar), "h"(mask) : "memory");
}
// Bulk tensor store of one 64-column box from shared memory (same 4-D map form as the loads); rows
// past the sequence end are clipped by the copy engine.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          reinterpret_cast<uint64_t>(map)), "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void tma_prefetch_4d(const CUtensorMap* map, int c0, int c1, int c2, int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];\n" ::"l"(
                   reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3) : "memory");
}
__device__ __forceinline__ void st_shared_v4(uint32_t addr, int a, int b, int c, int d) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void st_shared(uint32_t addr, int v) {
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_shared(uint32_t addr) {
  int v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ uint4 ld_shared_v4(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void st_global_v4(void* ptr, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(ptr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// Pins registers across an async wgmma so the compiler neither reads them early nor reuses them.
template <int N>
__device__ __forceinline__ void fence_regs(float* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_regs_u(uint32_t* r) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i])::"memory");
}
// Named barriers 1 and 2 gate consumer warpgroups 1 and 2 (barrier 0 is __syncthreads); 3 + cw
// syncs consumer warpgroup cw alone (epilogue); 6 syncs all consumer warpgroups before O is staged
// in the V ring.
__device__ __forceinline__ void named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory");
}
// Named barrier with an OR reduction: true on every thread iff some of the n threads passed true.
__device__ __forceinline__ bool named_any(int id, int n, bool v) {
  uint32_t r;
  asm volatile(
      "{\n .reg .pred p, q;\n setp.ne.u32 p, %1, 0;\n bar.red.or.pred q, %2, %3, p;\n selp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"((uint32_t)v), "r"(id), "r"(n)
      : "memory");
  return r != 0;
}
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&v);
}
// Shared-memory matrix descriptor, 128-byte swizzle. K-major operands use sbo = 1024 (8 rows of
// 128 B); the MN-major V operand also uses lbo = distance between its 64-column blocks.
// The whole descriptor of one address: the reference the split form below is checked against
// (bench/kernel/desc_test.cu); the kernel uses the split form.
__host__ __device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= (uint64_t)((saddr & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo >> 4) & 0x3FFF) << 16;
  d |= (uint64_t)((sbo >> 4) & 0x3FFF) << 32;
  d |= (uint64_t)1 << 62;
  return d;
}
// Split form: the low word (start address, leading byte offset) of a base address, to which a
// k-step adds its constant offset / 16 (addresses stay below 2^18, so the 14-bit field cannot
// carry into the next), and the constant high word (stride byte offset, 128-byte swizzle). One
// integer add per wgmma instead of recomputing the whole descriptor (perf.md, stage 4).
__host__ __device__ __forceinline__ uint32_t desc_lo(uint32_t saddr, uint32_t lbo) {
  return ((saddr & 0x3FFFF) >> 4) | (((lbo >> 4) & 0x3FFF) << 16);
}
__host__ __device__ constexpr uint32_t desc_hi(uint32_t sbo) { return ((sbo >> 4) & 0x3FFF) | (1u << 30); }
__host__ __device__ __forceinline__ uint64_t desc_at(uint32_t lo, uint32_t byte_off, uint32_t hi) {
  return ((uint64_t)hi << 32) | (uint64_t)(lo + (byte_off >> 4));
}

// ---------------------------------------------------------------- wgmma (generated: m64nNk16, bf16 in, f32 accumulate)
template <int N> __device__ __forceinline__ void wgmma_ss(float* d, uint64_t da, uint64_t db, int scale_d);
template <int N> __device__ __forceinline__ void wgmma_rs(float* d, const uint32_t* a, uint64_t db, int scale_d);
template <> __device__ __forceinline__ void wgmma_ss<64>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<80>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n80k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39}, %40, %41, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<96>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n96k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}, %48, %49, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<112>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %58, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n112k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55}, %56, %57, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<128>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<176>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, %88, %89, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_ss<192>(float* d, uint64_t da, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, %96, %97, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
      : "l"(da), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_rs<64>(float* d, const uint32_t* a, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_rs<128>(float* d, const uint32_t* a, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

template <> __device__ __forceinline__ void wgmma_rs<256>(float* d, const uint32_t* a, uint64_t db, int scale_d) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}


// ---------------------------------------------------------------- kernel
struct Params {
  __nv_bfloat16* o;
  float* lse;
  unsigned int* sched;  // [0]: tiles handed out beyond the first wave, [1]: CTAs finished
  int batch, seqlen_q, seqlen_k, heads_q, group;  // group = heads_q / heads_kv
  int causal, num_m_blocks, heads_per_group;
  float scale, scale_log2;
  // Split tail (FAH_SPLIT): tiles from full_tiles on are each cut into split_k KV ranges ("pieces",
  // scheduled after the whole tiles); every piece leaves its unnormalised O, row max and row sum in
  // part, and the last of a tile's pieces to finish (split_cnt) combines them and writes O and LSE.
  int full_tiles, split_k;
  float4* part;
  unsigned int* split_cnt;
#if FAH_DEFER
  int defer;  // query-block levels run last (tile_coords)
#endif
#if FAH_SHIFT
  int shift;  // tile_shift: query tiles start this many rows before row 0
#endif
};

// A CTA has one producer warpgroup and NWG consumer warpgroups of 64 query rows each.
// QB Q buffers (2: cross-tile overlap, the second with its own barriers and tile slot after the first's).
template <int D, int BN, int STAGES, int NWG, int QB = 1>
struct Layout {
  static constexpr int BM = 64 * NWG;
  static constexpr int Q_BYTES = BM * D * 2;  // one Q buffer
  static constexpr int KV_BYTES = BN * D * 2;  // one K (or V) stage
  static constexpr int BAR_OFF = QB * Q_BYTES + 2 * STAGES * KV_BYTES;
  // + 16-byte tile slot, O-free barrier (8 + 8 padding), a second 16-byte slot and a flag (split tail);
  // QB = 2: the second Q buffer's full and empty barriers and its 16-byte tile slot
  static constexpr int BAR_END = BAR_OFF + 8 * (5 + 4 * STAGES) + 40 + (QB == 2 ? 32 : 0);
  // O is staged per warpgroup (64 rows x D, 16-byte chunks XOR-swizzled by row) so that it leaves
  // in full 16-byte stores; only where it fits next to Q and the K/V ring (not head dim 256).
  static constexpr int O_OFF = (BAR_END + 1023) & ~1023;
  static constexpr int O_BYTES = BM * D * 2;
  static constexpr bool STAGE_O = D <= 128 && O_OFF + O_BYTES + 1024 <= 227 * 1024;
  // Otherwise (head dim 256, or a wide KV tile) O is staged in the V ring once every consumer
  // warpgroup has finished its last P V; the producer loads the next tile's first V only after the
  // O-free barrier says the ring has been read back.
  static constexpr bool O_IN_V = !STAGE_O && FAH_OV && O_BYTES <= STAGES * KV_BYTES;
  static constexpr int SMEM = (STAGE_O ? O_OFF + O_BYTES : BAR_END) + 1024;  // + alignment slack
};
// The split tail (FAH_SPLIT) is for non-causal D=128 with two warpgroups and O staged apart (no O-in-V
// hand-off to keep); the kernel and the host both ask this.
template <int D, int BN, int STAGES, int NWG, int CM>
constexpr bool kSplitTail = FAH_SPLIT > 1 && CM == 0 && D == 128 && NWG == 2 && Layout<D, BN, STAGES, NWG>::STAGE_O;
// Cross-tile overlap (FAH_XT128, FAH_XT64): a consumer warpgroup issues the next tile's first S GEMM
// right after this tile's last P V GEMM and writes this tile's O while it runs; the next tile's Q is then
// already in its own buffer. Not with ping-pong turns (a GEMM outside the turn order), the split tail or
// O staged in the V ring (its hand-off to the producer assumes one tile in flight).
template <int D, int BN, int STAGES, int NWG, bool PINGPONG, int CM>
constexpr bool kCrossTile = (D == 128 ? FAH_XT128 : D == 64 ? FAH_XT64 : 0) != 0 && !PINGPONG &&
                            !kSplitTail<D, BN, STAGES, NWG, CM> && Layout<D, BN, STAGES, NWG, 2>::STAGE_O;

// Keys at or past a row's limit (lim0 for the thread's first row, lim1 for its second) get -inf.
template <int BN>
__device__ __forceinline__ void mask_tile(float* s, int col_base, int lim0, int lim1) {
#pragma unroll
  for (int i = 0; i < BN / 8; ++i) {
    const int c = col_base + 8 * i;
    if (c >= lim0) s[4 * i + 0] = -INFINITY;
    if (c + 1 >= lim0) s[4 * i + 1] = -INFINITY;
    if (c >= lim1) s[4 * i + 2] = -INFINITY;
    if (c + 1 >= lim1) s[4 * i + 3] = -INFINITY;
  }
}
// P = 2^(S * sl2 - ms) in place, ms0 / ms1 the two rows' max in log2 units; the thread's partial row
// sums go to sum0, sum1.
template <int BN>
__device__ __forceinline__ void exp_tile(float* s, float ms0, float ms1, float sl2, float& sum0, float& sum1) {
  sum0 = 0.f;
  sum1 = 0.f;
#pragma unroll
  for (int i = 0; i < BN / 8; ++i) {
    s[4 * i + 0] = ex2(fmaf(s[4 * i + 0], sl2, -ms0));
    s[4 * i + 1] = ex2(fmaf(s[4 * i + 1], sl2, -ms0));
    s[4 * i + 2] = ex2(fmaf(s[4 * i + 2], sl2, -ms1));
    s[4 * i + 3] = ex2(fmaf(s[4 * i + 3], sl2, -ms1));
    sum0 += s[4 * i + 0] + s[4 * i + 1];
    sum1 += s[4 * i + 2] + s[4 * i + 3];
  }
}

// Online-softmax step on one S tile held in registers (this thread: rows r0 and r0+8, BN/4 cols
// each). Masks when MASK and turns S into unnormalised P in place. The running max only moves when
// some row of the warp grew by more than 2^8 (log2 units): P may then reach 256, exact after the
// final division by l, and most tiles skip the O rescale. Returns whether O must be rescaled by
// (sc0, sc1) (warp-uniform).
template <int BN, bool MASK>
__device__ __forceinline__ bool softmax_tile(float* s, float& m0, float& m1, float& l0, float& l1,
                                             float& sc0, float& sc1, int col_base, int lim0, int lim1,
                                             float sl2, float grow_log2 = 8.f) {
  if (MASK) mask_tile<BN>(s, col_base, lim0, lim1);
  float mx0 = s[0], mx1 = s[2];
#pragma unroll
  for (int i = 0; i < BN / 8; ++i) {
    mx0 = fmaxf(mx0, fmaxf(s[4 * i + 0], s[4 * i + 1]));
    mx1 = fmaxf(mx1, fmaxf(s[4 * i + 2], s[4 * i + 3]));
  }
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 1));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 1));
  mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffff, mx0, 2));
  mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffff, mx1, 2));
  // -inf - -inf is NaN and compares false: a row with nothing allowed yet keeps max -inf.
  const bool grow = __any_sync(0xffffffff, (mx0 - m0) * sl2 > grow_log2 || (mx1 - m1) * sl2 > grow_log2);
  if (grow) {
    const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
    // With max -inf use 0 as reference so exp2 gives 0, not NaN.
    sc0 = ex2(m0 * sl2 - (n0 == -INFINITY ? 0.f : n0 * sl2));
    sc1 = ex2(m1 * sl2 - (n1 == -INFINITY ? 0.f : n1 * sl2));
    m0 = n0;
    m1 = n1;
  }
  const float ms0 = (m0 == -INFINITY) ? 0.f : m0 * sl2;
  const float ms1 = (m1 == -INFINITY) ? 0.f : m1 * sl2;
  float sum0, sum1;
  exp_tile<BN>(s, ms0, ms1, sl2, sum0, sum1);
  // Per-thread partial row sums; reduced across the quad at the end.
  l0 = grow ? fmaf(l0, sc0, sum0) : l0 + sum0;
  l1 = grow ? fmaf(l1, sc1, sum1) : l1 + sum1;
  return grow;
}

// The softmax of one S tile without the row max, for rows whose running max is finite: P is taken
// against the running max as it stands. Every P is at most its thread's partial row sum, so where
// all sums are <= 2^8 no row max grew by more than 2^8 (log2 units) and softmax_tile would have
// left the max and O alone and produced these very P and sums. Returns this thread's "not so" (a sum
// above 2^8, or inf/NaN); the caller then recomputes S and takes softmax_tile. Sums go to t0, t1,
// to be added to l only once the whole warpgroup agreed.
template <int BN, bool MASK>
__device__ __forceinline__ bool softmax_fast(float* s, float m0, float m1, float& t0, float& t1, int col_base,
                                             int lim0, int lim1, float sl2) {
  if (MASK) mask_tile<BN>(s, col_base, lim0, lim1);
  exp_tile<BN>(s, m0 * sl2, m1 * sl2, sl2, t0, t1);
  return !(t0 <= 256.f && t1 <= 256.f);
}

// Tile t -> (batch b, query head h, first query row m0, KV blocks n_max). The producer and the
// consumers both call this, so they agree on n_max, which is 0 for a causal tile whose rows all
// lie above the bottom-right diagonal (Sq > Sk): such a tile loads nothing and only writes
// o = 0, lse = -inf. __host__ so that tests/host programs can check the arithmetic on the CPU.
// defer > 0: query blocks 0..defer-1 of every head leave the groups and run after them, level by level from
// the longest, heads fastest, so that a launch ends on its shortest tiles whatever the groups (a literal 0
// compiles to the groups alone).
__host__ __device__ __forceinline__ void tile_coords(int t, int num_m_blocks, int heads_per_group, int num_bh,
                                                     int heads_q, int bm, int bn, int n_total, int causal, int off,
                                                     int shift, int defer, int& b, int& h, int& m0, int& n_max) {
  const int grouped_m = num_m_blocks - defer;  // query-block levels inside the groups
  const int grouped = num_bh * grouped_m;
  if (defer > 0 && t >= grouped) {
    const int r = t - grouped;
    const int bh = r % num_bh;
    b = bh / heads_q;
    h = bh % heads_q;
    m0 = (defer - 1 - r / num_bh) * bm - shift;
  } else {
    const int tiles_per_group = heads_per_group * grouped_m;
    const int g = t / tiles_per_group;
    const int r = t - g * tiles_per_group;
    const int bh0 = g * heads_per_group;
    const int cur = min(heads_per_group, num_bh - bh0);
    const int bh = bh0 + r % cur;
    b = bh / heads_q;
    h = bh % heads_q;
    m0 = (num_m_blocks - 1 - r / cur) * bm - shift;
  }
  n_max = n_total;
  if (causal) {
    const int lim = m0 + bm + off;  // keys visible to the tile's last row: j < lim
    n_max = lim <= 0 ? 0 : min(n_total, (lim + bn - 1) / bn);
  }
}

// Multicast pairs (FAH_MC): unit u's tile for CTA `rank` of its cluster. MC = 1: query-block pairs (num_m_blocks
// counts pairs; the second block of an odd last pair lies past the end); MC = 2: head pairs (num_bh and
// heads_s count pairs); MC = 0: tile u (rank 0). Both ranks get the same batch, K/V head and KV range.
__host__ __device__ __forceinline__ void unit_coords(int u, int mc, int rank, int num_m_blocks, int heads_per_group,
                                                     int num_bh, int heads_s, int bm, int bn, int n_total, int causal,
                                                     int off, int shift, int defer, int& b, int& h, int& m0, int& n_max) {
  tile_coords(u, num_m_blocks, heads_per_group, num_bh, heads_s, mc == 1 ? 2 * bm : bm, bn, n_total, causal, off,
              shift, defer, b, h, m0, n_max);
  if (mc == 1) m0 += rank * bm;
  if (mc == 2) h = 2 * h + rank;
}

// Causal launches (FAH_SHIFT, not query-block pairs): the query tiles are laid from the last row up, so the rows a
// partial tile lacks lie before row 0, in the tile with the fewest visible keys; the loads zero-fill them and the
// stores skip them. Without it the partial tile is the last one, which visits every key block. The shift is a whole
// number of KV tiles (bn), so that tile edges stay where the diagonal crosses key-block edges: a shift off the key
// blocks cost the 128-row kernels 2-6% on short causal shapes (stage 31, call 4), and their shift is now always 0.
__host__ __device__ __forceinline__ int tile_shift(int causal, int mc, int num_m_blocks, int bm, int bn,
                                                   int seqlen_q) {
  return FAH_SHIFT && causal && mc != 1 ? (num_m_blocks * bm - seqlen_q) / bn * bn : 0;
}

// Split tail: piece q of k of a tile with n KV blocks covers blocks [lo, hi); the k pieces cover
// [0, n) once, each non-empty when k <= n (split_pieces never picks k > n).
__host__ __device__ __forceinline__ void piece_range(int n, int q, int k, int& lo, int& hi) {
  lo = (int)((int64_t)n * q / k);
  hi = (int)((int64_t)n * (q + 1) / k);
}

// A tile's first KV block that needs the mask: the blocks from it up hold keys at or past seqlen_k or,
// causal, past the diagonal of the tile's first row, which sees the keys j < diag (= m0 + off + 1). The
// same as the two bounds (n + 1) * bn > seqlen_k || (causal && (n + 1) * bn > diag) for every n >= 0; a
// negative diag gives a result <= 0 (division truncates toward zero). tile_math_test checks the equality.
__host__ __device__ __forceinline__ int first_masked_block(int seqlen_k, int diag, int causal, int bn) {
  const int a = seqlen_k / bn, b = diag / bn;
  return causal && b < a ? b : a;
}

// Staged epilogue (head dims <= 128): byte offsets inside one warpgroup's O buffer (64 rows of
// 2*D bytes). epi_pair_offset: consumer thread t's bf16 pair i (columns 8i + 2(t%4), +1 of its
// row (t/32)*16 + (t%32)/4, plus 8 for half 1), as the wgmma accumulator holds it.
// epi_chunk_offset: the 16-byte chunk idx = j*128 + t that thread t reads back in step j (row rl,
// columns 8c..8c+7). Chunk c of row r lives at chunk c ^ (r & 7), so the 8 rows of one 4-byte
// store fall on 32 different banks. __host__ so that a host program can check the maps.
__host__ __device__ __forceinline__ uint32_t epi_pair_offset(uint32_t t, int i, int half, int d) {
  const uint32_t row = (t >> 5) * 16 + ((t & 31) >> 2) + 8 * half;  // (row & 7) == ((t >> 2) & 7)
  return row * d * 2 + ((i ^ ((t >> 2) & 7)) << 4) + (t & 3) * 4;
}
// TMA-store epilogue: the box layout of the loads (per 64-column block: 64 rows of 128 bytes, the
// 16-byte unit u of row r at u ^ (r & 7)), so the 8 rows of one 4-byte store again hit 32 banks.
__host__ __device__ __forceinline__ uint32_t epi_tma_offset(uint32_t t, int i, int half) {
  const uint32_t row = (t >> 5) * 16 + ((t & 31) >> 2) + 8 * half;
  return (uint32_t)(i >> 3) * 8192 + row * 128 + (((i & 7) ^ ((t >> 2) & 7)) << 4) + (t & 3) * 4;
}
__host__ __device__ __forceinline__ uint32_t epi_chunk_offset(uint32_t idx, int d, int& rl, int& c) {
  rl = (int)(idx / (d / 8));
  c = (int)(idx % (d / 8));
  return rl * d * 2 + ((c ^ (rl & 7)) << 4);
}

#if FAH_PROBE
// Per CTA: {start, producer done, consumers done (max), tiles | KV blocks << 32}, %globaltimer ns.
__device__ unsigned long long g_probe[4 * 1024];
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t));
  return t;
}
#endif

// Split tail, after a piece's last P V: leave this thread's unnormalised O, row maxima and partial
// row sums in the piece's slot of p.part, count the piece on its tile (one thread, after a fence and
// the consumers' barrier 11), and return whether this CTA finished the tile's last piece. If so, the
// other pieces' partials have been merged into o/m/l (each rescaled to the larger max, as the online
// softmax would) and the caller writes O and LSE as for a whole tile; otherwise it writes nothing.
template <int D, int NWG>
__device__ __forceinline__ bool split_combine(const Params& p, float* o, float& mA, float& mB, float& lA, float& lB,
                                              int sj, int sq, int cw, int t128, uint32_t flag, float sl2) {
  constexpr int NV = D / 8 + 1;  // float4s per thread: O, then {mA, mB, lA, lB}; [piece][wg][NV][128]
  auto piece = [&](int q) { return p.part + ((size_t)(sj * p.split_k + q) * NWG + cw) * NV * 128 + t128; };
  float4* mine = piece(sq);
#pragma unroll
  for (int i = 0; i < D / 8; ++i) __stcg(mine + i * 128, make_float4(o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]));
  __stcg(mine + (D / 8) * 128, make_float4(mA, mB, lA, lB));
  __threadfence();  // visible GPU-wide before the tile's counter moves
  named_sync(11, 128 * NWG);
  if (cw == 0 && t128 == 0) {
    const unsigned int old = atomicAdd(&p.split_cnt[sj], 1u);
    __threadfence();  // the other pieces' partials, counted before this add, are read after it
    const int last = old == (unsigned int)p.split_k - 1u;
    if (last) atomicExch(&p.split_cnt[sj], 0u);  // every piece has counted: zero for the next launch
    st_shared(flag, last);
  }
  named_sync(11, 128 * NWG);
  if (!ld_shared(flag)) return false;
  __threadfence();
  for (int q = 0; q < p.split_k; ++q) {
    if (q == sq) continue;
    const float4* src = piece(q);
    const float4 ml = __ldcg(src + (D / 8) * 128);
    const float nA = fmaxf(mA, ml.x), nB = fmaxf(mB, ml.y);
    // A max of -inf (no visible key) weighs 0, never exp2(-inf - -inf).
    const float a0 = mA == -INFINITY ? 0.f : ex2((mA - nA) * sl2), a1 = ml.x == -INFINITY ? 0.f : ex2((ml.x - nA) * sl2);
    const float b0 = mB == -INFINITY ? 0.f : ex2((mB - nB) * sl2), b1 = ml.y == -INFINITY ? 0.f : ex2((ml.y - nB) * sl2);
#pragma unroll
    for (int i = 0; i < D / 8; ++i) {
      const float4 v = __ldcg(src + i * 128);
      o[4 * i + 0] = o[4 * i + 0] * a0 + v.x * a1;
      o[4 * i + 1] = o[4 * i + 1] * a0 + v.y * a1;
      o[4 * i + 2] = o[4 * i + 2] * b0 + v.z * b1;
      o[4 * i + 3] = o[4 * i + 3] * b0 + v.w * b1;
    }
    lA = lA * a0 + ml.z * a1;
    lB = lB * b0 + ml.w * b1;
    mA = nA;
    mB = nB;
  }
  return true;
}

// CM: 0 no causal mask, 1 causal, 2 either (read from Params), 3 causal with softmax_fast whatever
// FAH_LZ_CAUSAL says (the GQA kernel, FAH_LZ_GQA). A fixed CM gives ptxas one kind of
// loop to schedule: +0.5% at D=128 and D=256; at D=64 the split measured -0.5 to -1%, so D=64
// keeps CM = 2 (perf.md, stage 6).
// MC (FAH_MC): launched in clusters of 2 CTAs that take their tiles in pairs sharing one K/V range, each CTA
// loading half of every K/V block into both CTAs' rings (TMA multicast). MC = 1: query blocks 2j and 2j+1 of
// one head (non-causal only: both walk every key; an odd last block is paired with one past the end, whose rows
// are zero-filled and never stored); MC = 2: heads 2j and 2j+1, one K/V head (the host asks for an even group).
// A ring stage is released to both producers (either may write into this CTA's ring); the schedule is static
// (both CTAs of a cluster must see the same sequence of pairs).
template <int D, int BN, int STAGES, int NWG, bool PINGPONG, int CM, int MC = 0>
__global__ void __launch_bounds__(128 * (NWG + 1), 1)
    fa_fwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                  const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmO,
                  const Params p) {
  constexpr bool XT = kCrossTile<D, BN, STAGES, NWG, PINGPONG, CM>;
  constexpr bool HPV = FAH_HPV64 && D == 64 && NWG == 3 && BN == 128 && CM != 0 && MC == 0;
  constexpr bool HS = FAH_HS && HPV;
  constexpr bool HD = FAH_HD && D == 128 && BN == 128 && CM != 0 && MC == 0 && !XT;
  constexpr bool HZ = FAH_HZ && D == 256 && CM != 0 && MC == 0 && !XT;
  constexpr bool PEEL = HPV || HZ;  // the first block's P V runs in a pass of its own (see the loop)
  using L = Layout<D, BN, STAGES, NWG, XT ? 2 : 1>;
  constexpr int kBM = L::BM;
  constexpr int DC = D / 64;  // 64-column (128-byte) blocks per row
  // Turn-taking barriers: consumer warpgroup k waits on sched_bar(k) before issuing its GEMMs.
  auto sched_bar = [](int k) { return (NWG == 2 ? 1 : 7) + k; };
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t sQ = (raw + 1023) & ~1023u;  // 128B-swizzle atoms need 1024-byte alignment
  const uint32_t sK = sQ + (XT ? 2 : 1) * L::Q_BYTES;
  const uint32_t sV = sK + STAGES * L::KV_BYTES;
  const uint32_t bar = sQ + L::BAR_OFF;
  const uint32_t barQ = bar, barQEmpty = bar + 8;
  auto barFullK = [&](int s) { return bar + 16 + 8 * s; };
  auto barFullV = [&](int s) { return bar + 16 + 8 * (STAGES + s); };
  auto barEmptyK = [&](int s) { return bar + 16 + 8 * (2 * STAGES + s); };
  auto barEmptyV = [&](int s) { return bar + 16 + 8 * (3 * STAGES + s); };
  // Producer -> consumers: the current tile as {batch, head, first row, KV blocks}, batch -1 to stop
  // (decoded once by the producer: the divisions cost the consumers ~5% at S=512).
  const uint32_t tile_slot = bar + 16 + 8 * 4 * STAGES;
  const uint32_t barOFree = tile_slot + 16;  // O_IN_V: the consumers have read O back out of the V ring
  const uint32_t tile_slot2 = tile_slot + 32;  // SPLIT: {first KV block past the range, tile j or -1, piece, 0}
  const uint32_t split_flag = tile_slot + 48;  // SPLIT: 1 when this CTA finished the last piece of its tile
  constexpr bool SPLIT = kSplitTail<D, BN, STAGES, NWG, CM>;
  // Q buffer qb's full and empty barriers and tile slot (XT: tile i uses buffer i % 2).
  auto qfull = [&](int qb) { return qb ? tile_slot + 64 : barQ; };
  auto qempty = [&](int qb) { return qb ? tile_slot + 72 : barQEmpty; };
  auto qslot = [&](int qb) { return qb ? tile_slot + 80 : tile_slot; };

  static_assert(MC == 0 || (!kSplitTail<D, BN, STAGES, NWG, CM> && (MC == 2 || (CM != 1 && CM != 3))),
                "multicast pairs need equal K/V ranges");
  // Scheduling space: MC = 2 counts head pairs, MC = 1 query-block pairs (p.num_m_blocks is then the pairs'
  // count); a unit is a tile pair for MC.
  const int heads_s = MC == 2 ? p.heads_q / 2 : p.heads_q;
  const int num_bh = p.batch * heads_s;
  const int num_tiles = p.num_m_blocks * num_bh;
  const uint32_t rank = MC ? cluster_rank() : 0u;
  // Work units: the whole tiles, then split_k pieces of each remaining tile.
  const int num_units = SPLIT ? p.full_tiles + (num_tiles - p.full_tiles) * p.split_k : num_tiles;
  const int off = p.seqlen_k - p.seqlen_q;  // bottom-right causal alignment
  const int causal = CM == 2 ? p.causal : CM != 0;
  const int n_total = (p.seqlen_k + BN - 1) / BN;
  // Persistent schedule over tiles t: heads are taken in groups whose K/V fit in L2
  // (p.heads_per_group batch*head entries), and inside a group the query blocks go from the last
  // (heaviest when causal) to the first, heads fastest, so CTAs running together share K/V in L2.
#if FAH_DEFER
  // Only the kernels that long MHA causal launches run (attention_forward); the others keep their code, and
  // ignoring p.defer only changes the order, never what is computed.
  constexpr bool kDefer = (CM == 1 || CM == 2) && !MC && !(D == 128 && PINGPONG) && !(D == 256 && BN == 64) &&
                          !(D == 64 && NWG == 2);
  const int defer = kDefer ? p.defer : 0;
#else
  constexpr int defer = 0;
#endif
#if FAH_SHIFT
  // Not where O leaves from the V ring (D = 256): its hand-off to the producer has no path for rows before 0; not in
  // the kernels only non-causal launches run (CM = 0), whose shift is 0.
  constexpr bool kShift = !L::O_IN_V && CM != 0;
  const int shift = kShift ? p.shift : 0;
#else
  constexpr bool kShift = false;
  constexpr int shift = 0;
#endif
  auto tile_info = [&](int t, int& b, int& h, int& m0, int& n_max) {
    unit_coords(t, MC, (int)rank, p.num_m_blocks, p.heads_per_group, num_bh, heads_s, kBM, BN, n_total, causal, off,
                shift, defer, b, h, m0, n_max);
  };

  const int tid = threadIdx.x;
  const int wg = tid / 128;
  if (tid == 0) {
    mbar_init(barQ, 1);
    // Consumers release a K/V stage once per warpgroup (one thread, after its wgmma wait: the
    // warpgroup's MMA has then finished reading shared memory). Q and the tile slot are released
    // once per warp, after that warp's own read of the slot, so that the slot is never rewritten
    // before every warp has read it (an ordering the memory model, and racecheck, can see).
    mbar_init(barQEmpty, 4 * NWG);
    mbar_init(barOFree, MC ? 2 * NWG : NWG);
    if (XT) {
      mbar_init(qfull(1), 1);
      mbar_init(qempty(1), 4 * NWG);
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(barFullK(s), 1);
      mbar_init(barFullV(s), 1);
      mbar_init(barEmptyK(s), MC ? 2 * NWG : NWG);
      mbar_init(barEmptyV(s), MC ? 2 * NWG : NWG);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#if FAH_PROBE
    g_probe[4 * blockIdx.x + 0] = globaltimer();
    g_probe[4 * blockIdx.x + 2] = 0ull;
#endif
  }
  if (MC) cluster_sync();  // the peer's barriers are initialised before anything lands in them
  else __syncthreads();

  if (wg == 0) {
    // Register split: the producer needs few; head dim 256 needs 240 per consumer thread for O.
    // (NWG == 3: 512 threads at 128 each = 32 + 3 x 160.)
    if (D == 256 || BN > 128) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
    else asm volatile("setmaxnreg.dec.sync.aligned.u32 32;\n");
    if (tid == 0) {
      // Dynamic schedule: the first tile is blockIdx.x, later ones come from a global counter, so
      // CTAs that drew light (causal) tiles take more of them. Each tile id is published in
      // shared memory and released by the arrive on barQ (with the Q copy, or alone when the tile
      // has no visible keys); -1 tells the consumers to stop.
      int kv_it = 0, q_it = 0, kt = 0;  // kt: tiles with keys issued so far
      int tile = MC ? blockIdx.x / 2 : blockIdx.x;  // MC: the cluster's index
      int b = 0, h = 0, m0 = 0, n_max = 0;
      int n_top = 0, sj = -1, sq = 0;  // SPLIT: the KV range's end, the split tile and the piece
      // Unit u -> its tile's coordinates and KV range [n_top - n_max, n_top) (n_max blocks).
      auto unit_info = [&](int u) {
        if (!SPLIT) {
          tile_info(u, b, h, m0, n_max);
          n_top = n_max;
          return;
        }
        sj = -1;
        sq = 0;
        if (u >= p.full_tiles) {
          const int v = u - p.full_tiles;
          sj = v / p.split_k;
          sq = v - sj * p.split_k;
          tile_info(p.full_tiles + sj, b, h, m0, n_max);
          int lo;
          piece_range(n_max, sq, p.split_k, lo, n_top);
          n_max = n_top - lo;
        } else {
          tile_info(u, b, h, m0, n_max);
          n_top = n_max;
        }
      };
      if (tile < num_units) unit_info(tile);
      while (true) {
        const int qb = XT ? q_it & 1 : 0;
        mbar_wait(qempty(qb), ((XT ? q_it >> 1 : q_it) & 1) ^ 1);
        ++q_it;
        if (tile >= num_units) {
          st_shared_v4(qslot(qb), -1, 0, 0, 0);
          mbar_arrive(qfull(qb));
          break;
        }
        st_shared_v4(qslot(qb), b, h, m0, n_max);
        if (SPLIT) st_shared_v4(tile_slot2, n_top, sj, sq, 0);
        if (n_max <= 0) {
          mbar_arrive(qfull(qb));
        } else {
          mbar_expect_tx(qfull(qb), L::Q_BYTES);
#pragma unroll
          for (int c = 0; c < DC; ++c)
            tma_load_4d(sQ + qb * L::Q_BYTES + c * kBM * 128, &tmQ, qfull(qb), c * 64, h, m0, b);
        }
        const int hkv = h / p.group;
        // One K or V block into a ring stage (MC: this CTA's half of the rows, into both CTAs; the maps' boxes
        // are BN / 2 rows then, and each CTA's full barrier expects the whole block).
        auto load_block = [&](uint32_t dst, const CUtensorMap* map, uint32_t full, int it) {
          const int row = (n_top - 1 - it) * BN + (MC ? (int)rank * (BN / 2) : 0);
          const uint32_t half = MC ? rank * (BN / 2) * 128 : 0u;
#pragma unroll
          for (int c = 0; c < DC; ++c) {
            if (MC) tma_load_4d_mc(dst + c * BN * 128 + half, map, full, c * 64, hkv, row, b, (uint16_t)3);
            else tma_load_4d(dst + c * BN * 128, map, full, c * 64, hkv, row, b);
          }
        };
        auto wait_free = [&](uint32_t bar, uint32_t parity) {
          if (MC) mbar_wait_cluster(bar, parity);
          else mbar_wait(bar, parity);
        };
        // Block it's K and V go to stage (kv_it + it) % STAGES.
        auto load_k = [&](int it) {
          const int g = kv_it + it, s = g % STAGES;
          wait_free(barEmptyK(s), ((g / STAGES) & 1) ^ 1);
          mbar_expect_tx(barFullK(s), L::KV_BYTES);
          load_block(sK + s * L::KV_BYTES, &tmK, barFullK(s), it);
        };
        auto load_v = [&](int it) {
          const int g = kv_it + it, s = g % STAGES;
          wait_free(barEmptyV(s), ((g / STAGES) & 1) ^ 1);
          if (L::O_IN_V && it == 0 && kt > 0) wait_free(barOFree, (kt - 1) & 1);
          mbar_expect_tx(barFullV(s), L::KV_BYTES);
          load_block(sV + s * L::KV_BYTES, &tmV, barFullV(s), it);
        };
        if (D >= FAH_KAHEAD_D) {
          // In the consumers' order: block it+1's K (its S GEMM comes first) before block it's V.
          if (n_max > 0) load_k(0);
          for (int it = 0; it < n_max; ++it) {
            if (it + 1 < n_max) load_k(it + 1);
            load_v(it);
          }
        } else {
          for (int it = 0; it < n_max; ++it) {
            load_k(it);
            load_v(it);
          }
        }
        kv_it += n_max;
        kt += n_max > 0;
        tile = MC ? tile + (int)gridDim.x / 2 : (int)gridDim.x + (int)atomicAdd(&p.sched[0], 1u);
        if (tile < num_units) {
          unit_info(tile);
          // Q is loaded only once this tile's Q is released; warm L2 with it (and the first K/V
          // block) now, so that the load then comes from L2 and not HBM.
          constexpr int PF = D == 64 ? FAH_PREFETCH64 : FAH_PREFETCH;
          if (PF > 0 && n_max > 0) {
#pragma unroll
            for (int c = 0; c < DC; ++c) {
              tma_prefetch_4d(&tmQ, c * 64, h, m0, b);
              if (PF > 1) {
                tma_prefetch_4d(&tmK, c * 64, h / p.group, (n_top - 1) * BN, b);
                tma_prefetch_4d(&tmV, c * 64, h / p.group, (n_top - 1) * BN, b);
              }
            }
          }
        }
      }
#if FAH_PROBE
      g_probe[4 * blockIdx.x + 1] = globaltimer();
      g_probe[4 * blockIdx.x + 3] = (unsigned long long)(q_it - 1) | ((unsigned long long)kv_it << 32);
#endif
      // The last CTA to finish resets the counters for the next launch on this stream.
      __threadfence();
      if (!MC && atomicAdd(&p.sched[1], 1u) == gridDim.x - 1) {
        atomicExch(&p.sched[0], 0u);
        atomicExch(&p.sched[1], 0u);
      }
    }
    // MC: the producer exits like the others (an exited thread counts as arrived at a cluster barrier); the
    // consumers' cluster barrier at the end keeps this CTA's shared memory alive until the peer's last
    // arrive. (Waiting there instead measured the same, stage 13 call 2.)
    return;
  }

  if (NWG == 3) asm volatile("setmaxnreg.inc.sync.aligned.u32 160;\n");
  else if (D == 256 || BN > 128) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
  else asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
  const int cw = wg - 1;
  const int t128 = tid % 128, warp = t128 / 32, lane = t128 % 32;
  const int colq = 2 * (lane % 4);
  const float sl2 = p.scale_log2;
  int kv_it = 0, q_it = 0;
  // The 3-warpgroup D=64 kernel measured 2-4% slower with TMA stores (docs/perf.md, stage 2).
  constexpr bool TMA_ST = FAH_TMA_ST && D >= 128 && (L::STAGE_O || L::O_IN_V);
  constexpr bool LAZY = (D == 64 ? FAH_LAZY64 && (FAH_LAZY64_2WG || NWG != 2)
                                 : D == 128 ? FAH_LAZY128 : FAH_LAZY256) != 0 &&
                        (CM != 1 || FAH_LZ_CAUSAL == 1 || (FAH_LZ_CAUSAL == 2 && !PINGPONG));
  // A ring stage or the O-free barrier released (MC: to both CTAs' producers, which both write this ring).
  auto release = [&](uint32_t b) {
    mbar_arrive(b);
    if (MC) mbar_arrive_remote(b, rank ^ 1u);
  };
  bool store_pending = false;  // thread 0 of the warpgroup: a TMA store of O still reads sO
  // Called once the next tile's first GEMM is under way (or it has none): the previous tile's O
  // store has then had time to read sO; for O_IN_V the producer may now load V over it.
  auto finish_store = [&]() {
    if (TMA_ST && t128 == 0 && store_pending) {
      bulk_wait_read();
      if (L::O_IN_V) release(barOFree);
      store_pending = false;
    }
  };


  float s[BN / 2];
  uint32_t pf[BN / 4];
  // S = Q K^T over the first N key columns of the block (N = BN, or BN / 2 for HD, whose columns past it keep stale
  // values that the diagonal mask sets: they are past every row's limit).
  auto gemm_s_at = [&](uint32_t q_base, uint32_t k_base, auto n_cols) {
    wgmma_fence();
    const uint32_t qlo = desc_lo(q_base + cw * 64 * 128, 16), klo = desc_lo(k_base, 16);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint64_t da = desc_at(qlo, (kk / 4) * kBM * 128 + (kk % 4) * 32, desc_hi(1024));
      const uint64_t db = desc_at(klo, (kk / 4) * BN * 128 + (kk % 4) * 32, desc_hi(1024));
      wgmma_ss<decltype(n_cols)::value>(s, da, db, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
  };
  using FullWidth = Cols<BN>;
  auto gemm_s = [&](int st, uint32_t q_base) { gemm_s_at(q_base, sK + st * L::KV_BYTES, FullWidth{}); };
  // XT: read tile q_next's slot and issue its first S GEMM (K block kv_next) into s. A tile without
  // keys, or the stop signal, gets the same GEMM on its own Q buffer as both operands (nothing writes
  // that buffer before the warpgroup releases it, after a wait): its result is never read, but a GEMM
  // issued on one branch only made ptxas serialise the loop's wgmmas (C7515) and wait at the join.
  uint4 ti_next = make_uint4(0u, 0u, 0u, 0u);
  auto advance = [&](int q_next, int kv_next) {
    const int qb = q_next & 1;
    mbar_wait(qfull(qb), (q_next >> 1) & 1);
    ti_next = ld_shared_v4(qslot(qb));
    const bool keys = (int)ti_next.x >= 0 && (int)ti_next.w > 0;
    const int st = kv_next % STAGES;
    if (keys) mbar_wait(barFullK(st), (kv_next / STAGES) & 1);
    const uint32_t q_base = sQ + qb * L::Q_BYTES;
    gemm_s_at(q_base, keys ? sK + st * L::KV_BYTES : q_base, FullWidth{});
  };
  if (XT) advance(0, 0);

  while (true) {
    const int qb = XT ? q_it & 1 : 0;
    const uint32_t sQc = sQ + qb * L::Q_BYTES;  // this tile's Q
    uint4 ti = ti_next;
    if (!XT) {
      mbar_wait(barQ, q_it & 1);
      ti = ld_shared_v4(tile_slot);
    }
    const int b = (int)ti.x, h = (int)ti.y, m0 = (int)ti.z, n_max = (int)ti.w;
    if (b < 0) break;
    // SPLIT: this unit's KV range is [n_top - n_max, n_top); sj >= 0 for a piece of split tile sj.
    const uint4 ti2 = SPLIT ? ld_shared_v4(tile_slot2) : make_uint4(0u, 0xffffffffu, 0u, 0u);
    const int n_top = SPLIT ? (int)ti2.x : n_max, sj = (int)ti2.y, sq = (int)ti2.z;
    if (n_max <= 0) {
      finish_store();
      if (XT) wgmma_wait<0>();  // advance's stand-in GEMM has read this tile's Q buffer
      // Nothing loaded for this tile: each warp releases the slot as soon as all its lanes have
      // read it (the barrier completes only when every warp of every consumer warpgroup did, so
      // the producer cannot publish the next tile over a slot a lagging warp has yet to read).
      __syncwarp();
      if (lane == 0) mbar_arrive(qempty(qb));
    }
    const int row0 = m0 + cw * 64 + warp * 16 + lane / 4;  // this thread's rows: row0, row0 + 8
    const int row1 = row0 + 8;

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.f, lB = 0.f;

    if (n_max > 0) {
      const int lim0 = causal ? min(p.seqlen_k, row0 + off + 1) : p.seqlen_k;
      const int lim1 = causal ? min(p.seqlen_k, row1 + off + 1) : p.seqlen_k;
      // HPV: this warpgroup's rows all see keys < (n_top - 1) * BN + BN / 2 only, so the P of the first
      // block (the diagonal one) are zero in its second half: that block's P V takes half the k-steps.
      // (A vote, so that ptxas sees a warp-uniform branch: a divergent one around a wgmma serialises them all.)
      const bool half_pv = (HPV || HD) && __all_sync(0xffffffffu, causal && m0 + cw * 64 + 64 + off <= (n_top - 1) * BN + BN / 2);
      // HZ: this warpgroup's rows see no key of the first block: no S GEMM, softmax or P V for it (an empty commit group
      // stands in for the P V, so that the wait after it still counts one group), but every barrier as before.
      const bool skip0 = HZ && __all_sync(0xffffffffu, causal && m0 + cw * 64 + 64 + off <= (n_top - 1) * BN);
      auto gemm_pv_k = [&](int st, int ksteps) {
        wgmma_fence();
        const uint32_t vlo = desc_lo(sV + st * L::KV_BYTES, BN * 128);
#pragma unroll
        for (int kk = 0; kk < ksteps; ++kk) {
          const uint64_t db = desc_at(vlo, kk * 2048, desc_hi(1024));
          wgmma_rs<D>(o, &pf[4 * kk], db, 1);
        }
        wgmma_commit();
      };
      // HPV: each path one whole commit group (split in two, the wait after it took the first half along, and the
      // softmax that follows no longer ran under it).
      auto gemm_pv = [&](int st, bool half = false, bool none = false) {
        if (HZ && none) gemm_pv_k(st, 0);
        else if (HPV && half) gemm_pv_k(st, BN / 32);
        else gemm_pv_k(st, BN / 16);
      };
      // Block n takes the mask if it holds keys at or past seqlen_k or, causal, past the diagonal of the
      // tile's first row (which sees keys j < m0 + off + 1): the blocks from n_mask up (first_masked_block,
      // checked against the two bounds on the CPU by tile_math_test). The test has three spellings because ptxas schedules each kernel's
      // loop differently around them, and each kernel keeps the one measured fastest for it (perf.md
      // stage 8): one compare in the row-max-skip kernels (they ask twice per block), the two bounds
      // through this lambda in the others, and inline at D=64 (softmax below).
      const int n_mask = first_masked_block(p.seqlen_k, m0 + off + 1, causal, BN);
      auto need_mask = [&](int n) {
        return LAZY ? n >= n_mask : (n * BN + BN > p.seqlen_k) || (causal && n * BN + BN - 1 > m0 + off);
      };
      auto softmax = [&](int n, float& sc0, float& sc1, float grow_log2 = 8.f) -> bool {
        // need_mask(n), spelled out at D=64 (see need_mask)
        const bool masked = D == 64 ? (n * BN + BN > p.seqlen_k) || (causal && n * BN + BN - 1 > m0 + off) : need_mask(n);
        if (masked)
          return softmax_tile<BN, true>(s, mA, mB, lA, lB, sc0, sc1, n * BN + colq, lim0, lim1, sl2, grow_log2);
        return softmax_tile<BN, false>(s, mA, mB, lA, lB, sc0, sc1, n * BN + colq, lim0, lim1, sl2, grow_log2);
      };
      auto convert_p = [&]() {
#pragma unroll
        for (int j = 0; j < BN / 4; ++j) pf[j] = pack_bf16(s[2 * j], s[2 * j + 1]);
      };
      // Ping-pong: warpgroup cw issues its GEMMs between named_sync(sched_bar(cw)) and an arrive on
      // the next one's barrier, so one warpgroup's softmax runs while the other's GEMMs use the tensor
      // cores. Per tile both barriers see as many arrives as syncs.
      auto turn_begin = [&]() { if (PINGPONG) named_sync(sched_bar(cw), 256); };
      auto turn_end = [&]() { if (PINGPONG) named_arrive(sched_bar((cw + 1) % NWG), 256); };
      if (PINGPONG && cw == NWG - 1) named_arrive(sched_bar(0), 256);  // warpgroup 1 goes first
      // LAZY: every row of the warpgroup has a finite running max (it stays so for the tile), so the
      // blocks between the first and the last may try softmax_fast.
      bool fin = false;

      {
        const int st = kv_it % STAGES;
        if (!XT) {  // XT: issued under the previous tile's epilogue (advance)
          mbar_wait(barFullK(st), (kv_it / STAGES) & 1);
          turn_begin();
          // HD: each path waits for its own GEMM, so that no pipeline stage spans the join (ptxas would
          // otherwise see the stale columns as non-wgmma definitions of an accumulator in flight, C7515).
          if (HD && half_pv) {
            gemm_s_at(sQc, sK + st * L::KV_BYTES, Cols<HD ? BN / 2 : BN>{});
            turn_end();
            finish_store();
            wgmma_wait<0>();
            fence_regs<BN / 2>(s);
          } else if (HZ && skip0) {
            turn_end();
            finish_store();
          } else {
            gemm_s(st, sQc);
            turn_end();
            finish_store();
            wgmma_wait<0>();
            fence_regs<BN / 2>(s);
          }
        } else {
          wgmma_wait<0>();
          fence_regs<BN / 2>(s);
        }
        if (t128 == 0) release(barEmptyK(st));
        // A one-block tile's only S GEMM has completed: Q may be overwritten (see the loop).
        if (n_max == 1) {
          __syncwarp();
          if (lane == 0) mbar_arrive(qempty(qb));
        }
        float sc0, sc1;
        // O is still zero: nothing to rescale
        if (HZ && skip0) {
          // nothing seen yet: the running max stays -inf and the row sums 0
        } else if (HS && half_pv) {  // P in the block's second half is zero, and the P V reads only the first half
          softmax_tile<BN / 2, true>(s, mA, mB, lA, lB, sc0, sc1, (n_top - 1) * BN + colq, lim0, lim1, sl2);
#pragma unroll
          for (int j = 0; j < BN / 8; ++j) pf[j] = pack_bf16(s[2 * j], s[2 * j + 1]);
        } else {
          softmax(n_top - 1, sc0, sc1);
          convert_p();
        }
        if (LAZY) fin = !named_any(3 + cw, 128, mA == -INFINITY || mB == -INFINITY);
      }
      // Blocks 1 .. n_max - 1: S of block it, P V of block it - 1. HPV: pass 0 runs block 1 alone, the diagonal block's
      // P V halved where half_pv says; unrolled, it is a copy of the loop of its own, so the loop proper keeps one commit
      // group per GEMM (a runtime choice of k-steps inside it measured -4% on every causal row, stage 16).
      int it = 1;
#pragma unroll
      for (int pass = PEEL ? 0 : 1; pass < 2; ++pass) {
        const bool half = HPV && pass == 0 && half_pv;
        const bool none = HZ && pass == 0 && skip0;
        const int it_end = PEEL && pass == 0 ? min(n_max, 2) : n_max;
        for (; it < it_end; ++it) {
          const int n = n_top - 1 - it;
          const int g = kv_it + it;
          const int st = g % STAGES, pst = (g - 1) % STAGES;
          mbar_wait(barFullK(st), (g / STAGES) & 1);
          turn_begin();
          gemm_s(st, sQc);
          // The previous block's V is waited for only now: the S GEMM goes as soon as its K is in
          // (FA3's order; +0.7% geomean over waiting for both first, perf.md stage 4).
          mbar_wait(barFullV(pst), ((g - 1) / STAGES) & 1);
          gemm_pv(pst, HPV && half, HZ && none);
          turn_end();
          wgmma_wait<1>();
          fence_regs<BN / 2>(s);
          float sc0 = 1.f, sc1 = 1.f;
          bool grow = false;
          // softmax_fast on the blocks between the first and the last, once every row's max is finite.
          // The decision is the warpgroup's (a wgmma may follow); K stays held until it is made, so
          // that S can be recomputed, and the last block (which releases Q) never tries: trying it and
          // releasing Q after the decision measured -1.2% (perf.md, stage 11).
          const bool try_fast = LAZY && fin && it < n_max - 1;
          if (try_fast) {
            float t0, t1;
            const bool bad = need_mask(n) ? softmax_fast<BN, true>(s, mA, mB, t0, t1, n * BN + colq, lim0, lim1, sl2)
                                       : softmax_fast<BN, false>(s, mA, mB, t0, t1, n * BN + colq, lim0, lim1, sl2);
            if (!named_any(3 + cw, 128, bad)) {
              lA += t0;
              lB += t1;
            } else {
              gemm_s(st, sQc);  // S again (its P was taken against a max that moved too far)
              wgmma_wait<0>();
              fence_regs<BN / 2>(s);
              // The exact max here: with the lazy one a row whose max came from few keys (the causal diagonal
              // block) keeps failing softmax_fast block after block (a sum over 2^8 of P each under 2^8).
              grow = softmax(n, sc0, sc1, FAH_LZ_EXACT ? 0.f : 8.f);
            }
            if (t128 == 0) release(barEmptyK(st));
          } else {
            if (t128 == 0) release(barEmptyK(st));
            // The last S GEMM of the tile has completed (as for the K stage above): release Q now, not
            // after this block's softmax, so that the next tile's Q load starts one softmax earlier.
            if (it == n_max - 1) {
              __syncwarp();
              if (lane == 0) mbar_arrive(qempty(qb));
            }
            grow = softmax(n, sc0, sc1);
            if (LAZY && !fin) fin = !named_any(3 + cw, 128, mA == -INFINITY || mB == -INFINITY);
          }
          wgmma_wait<0>();
          fence_regs<D / 2>(o);
          fence_regs_u<BN / 4>(pf);
          if (t128 == 0) release(barEmptyV(pst));
          if (grow) {
#pragma unroll
            for (int i = 0; i < D / 8; ++i) {
            o[4 * i + 0] *= sc0;
            o[4 * i + 1] *= sc0;
            o[4 * i + 2] *= sc1;
            o[4 * i + 3] *= sc1;
            }
          }
          convert_p();
        }
      }
      {
        const int g = kv_it + n_max - 1, lst = g % STAGES;
        mbar_wait(barFullV(lst), (g / STAGES) & 1);
        turn_begin();
        gemm_pv(lst, HPV && n_max == 1 && half_pv, HZ && n_max == 1 && skip0);
        turn_end();
        if (PINGPONG && cw == 0) named_sync(sched_bar(0), 256);  // consume the last warpgroup's last arrive
        if (XT) {
          advance(q_it + 1, kv_it + n_max);
          wgmma_wait<1>();  // this tile's P V; the next tile's S GEMM may still run
        } else {
          wgmma_wait<0>();
        }
        fence_regs<D / 2>(o);
        fence_regs_u<BN / 4>(pf);
        if (t128 == 0) release(barEmptyV(lst));
      }
      kv_it += n_max;
    }
    if (XT && n_max <= 0) advance(q_it + 1, kv_it);
    ++q_it;
    if (SPLIT && sj >= 0 && !split_combine<D, NWG>(p, o, mA, mB, lA, lB, sj, sq, cw, t128, split_flag, sl2)) continue;

    // Epilogue: finish the row sums across the quad, normalise, write O and LSE.
    lA += __shfl_xor_sync(0xffffffff, lA, 1);
    lA += __shfl_xor_sync(0xffffffff, lA, 2);
    lB += __shfl_xor_sync(0xffffffff, lB, 1);
    lB += __shfl_xor_sync(0xffffffff, lB, 2);
    const float invA = lA > 0.f ? rcp_approx(lA) : 0.f;
    const float invB = lB > 0.f ? rcp_approx(lB) : 0.f;
    // ln-sum-exp = (max * scale * log2 e + log2 l) * ln 2, with the fast log2 (rel. error ~2^-22).
    const float lseA = lA > 0.f ? (mA * sl2 + lg2_approx(lA)) * 0.6931471805599453f : -INFINITY;
    const float lseB = lB > 0.f ? (mB * sl2 + lg2_approx(lB)) * 0.6931471805599453f : -INFINITY;
    const int row_stride = p.heads_q * D;
    if (L::STAGE_O || (L::O_IN_V && n_max > 0)) {
      // Through shared memory: each thread writes its 4-byte pairs (chunk i of row r goes to chunk
      // i ^ (r & 7): the 8 rows of one store hit 32 different banks), then the warpgroup reads
      // whole 16-byte chunks back and each warp stores two full rows per instruction.
      constexpr int CPR = D / 8;  // 16-byte chunks per row
      // The thread index goes through an opaque move so that the addresses below are computed
      // here, not hoisted out of the tile loop (where they cost registers and spilled).
      uint32_t tt;  // unsigned: the divisions and remainders below are shifts and masks
      asm volatile("mov.b32 %0, %1;\n" : "=r"(tt) : "r"(t128));
      const uint32_t sO = (L::STAGE_O ? sQ + L::O_OFF : sV) + cw * 64 * D * 2;
      if (L::O_IN_V) {
        named_sync(6, 128 * NWG);  // every consumer warpgroup's last P V has finished reading the V ring
      } else {
        if (XT) finish_store();   // the previous tile's TMA store has read sO (issued a tile ago)
        named_sync(3 + cw, 128);  // every warp has read the previous tile's O out of sO
      }
      if (TMA_ST) {
#pragma unroll
        for (int i = 0; i < CPR; ++i) {
          st_shared(sO + epi_tma_offset(tt, i, 0), (int)pack_bf16(o[4 * i + 0] * invA, o[4 * i + 1] * invA));
          st_shared(sO + epi_tma_offset(tt, i, 1), (int)pack_bf16(o[4 * i + 2] * invB, o[4 * i + 3] * invB));
        }
        fence_proxy_async();      // these generic writes, before the copy engine reads them
        named_sync(3 + cw, 128);  // sO holds the warpgroup's 64 rows
        const int r0 = m0 + cw * 64;  // before row 0 only in a shifted first tile (FAH_SHIFT)
        if (t128 == 0 && (!kShift || r0 >= 0)) {
#pragma unroll
          for (int c = 0; c < DC; ++c) tma_store_4d(&tmO, sO + c * 8192, c * 64, h, r0, b);
          bulk_commit();
          store_pending = true;
        }
        if (kShift && r0 < 0) {
          // A TMA store whose box starts before row 0 stops the kernel (an illegal instruction, seen on the H200):
          // the warpgroup writes its rows from 0 itself, 16 bytes a thread, out of the same box layout.
#pragma unroll
          for (int j = 0; j < 64 * (D / 8) / 128; ++j) {
            const int idx = j * 128 + tt, rl = idx / (D / 8), c = idx % (D / 8);
            if ((unsigned)(r0 + rl) < (unsigned)p.seqlen_q)
              st_global_v4(p.o + ((int64_t)b * p.seqlen_q + r0 + rl) * row_stride + (int64_t)h * D + c * 8,
                           ld_shared_v4(sO + (c >> 3) * 8192 + rl * 128 + (((c & 7) ^ (rl & 7)) << 4)));
          }
        }
      }
#pragma unroll
      for (int i = 0; i < CPR && !TMA_ST; ++i) {
        st_shared(sO + epi_pair_offset(tt, i, 0, D), (int)pack_bf16(o[4 * i + 0] * invA, o[4 * i + 1] * invA));
        st_shared(sO + epi_pair_offset(tt, i, 1, D), (int)pack_bf16(o[4 * i + 2] * invB, o[4 * i + 3] * invB));
      }
      if (!TMA_ST) named_sync(3 + cw, 128);  // sO holds the warpgroup's 64 rows
#pragma unroll
      for (int j = 0; j < 64 * CPR / 128 && !TMA_ST; ++j) {
        int rl, c;
        const uint4 v = ld_shared_v4(sO + epi_chunk_offset(j * 128 + tt, D, rl, c));
        const int g = m0 + cw * 64 + rl;
        if ((unsigned)g < (unsigned)p.seqlen_q)  // FAH_SHIFT: rows before 0 too
          st_global_v4(p.o + ((int64_t)b * p.seqlen_q + g) * row_stride + (int64_t)h * D + c * 8, v);
      }
      if (L::O_IN_V && !TMA_ST) {
        // The copy engine will write the next tile's V here: order these generic accesses before
        // it, then let the producer go (one arrive per warpgroup, after all its reads).
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        named_sync(3 + cw, 128);
        if (t128 == 0) release(barOFree);
      }
      if ((lane & 3) == 0) {
        if ((unsigned)row0 < (unsigned)p.seqlen_q)
          p.lse[((int64_t)b * p.heads_q + h) * p.seqlen_q + row0] = lseA;
        if ((unsigned)row1 < (unsigned)p.seqlen_q)
          p.lse[((int64_t)b * p.heads_q + h) * p.seqlen_q + row1] = lseB;
      }
      continue;
    }
    if ((unsigned)row0 < (unsigned)p.seqlen_q) {
      __nv_bfloat16* op = p.o + ((int64_t)b * p.seqlen_q + row0) * row_stride + (int64_t)h * D + colq;
#pragma unroll
      for (int i = 0; i < D / 8; ++i)
        *reinterpret_cast<uint32_t*>(op + 8 * i) = pack_bf16(o[4 * i + 0] * invA, o[4 * i + 1] * invA);
      if ((lane & 3) == 0)
        p.lse[((int64_t)b * p.heads_q + h) * p.seqlen_q + row0] = lseA;
    }
    if ((unsigned)row1 < (unsigned)p.seqlen_q) {
      __nv_bfloat16* op = p.o + ((int64_t)b * p.seqlen_q + row1) * row_stride + (int64_t)h * D + colq;
#pragma unroll
      for (int i = 0; i < D / 8; ++i)
        *reinterpret_cast<uint32_t*>(op + 8 * i) = pack_bf16(o[4 * i + 2] * invB, o[4 * i + 3] * invB);
      if ((lane & 3) == 0)
        p.lse[((int64_t)b * p.heads_q + h) * p.seqlen_q + row1] = lseB;
    }
  }
  if (XT) wgmma_wait<0>();  // the stand-in GEMM issued for the stop signal
  if (TMA_ST && t128 == 0 && store_pending) bulk_wait_all();  // shared memory must outlive the last store
  if (MC) cluster_sync();
#if FAH_PROBE
  if (t128 == 0) atomicMax(&g_probe[4 * blockIdx.x + 2], globaltimer());
#endif
}

// ---------------------------------------------------------------- host side
typedef CUresult (*EncodeTiledFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                                  const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                                  CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static EncodeTiledFn encode_fn() {
  static EncodeTiledFn fn = nullptr;
  if (!fn) {
    void* ptr = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &ptr, 12000, cudaEnableDefault, &q) ==
            cudaSuccess && q == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<EncodeTiledFn>(ptr);
  }
  return fn;
}

// 4-D map over [B, S, H, D] (innermost first: D, H, S, B); one box = rows x 64 columns of one head,
// so rows past S inside a batch are zero-filled by the copy engine.
static bool make_map(CUtensorMap* map, const void* ptr, int d, int heads, int seqlen, int batch, int rows) {
  EncodeTiledFn enc = encode_fn();
  if (!enc) return false;
  cuuint64_t dims[4] = {(cuuint64_t)d, (cuuint64_t)heads, (cuuint64_t)seqlen, (cuuint64_t)batch};
  cuuint64_t strides[3] = {(cuuint64_t)d * 2, (cuuint64_t)heads * d * 2, (cuuint64_t)seqlen * heads * d * 2};
  cuuint32_t box[4] = {64, 1, (cuuint32_t)rows, 1};
  cuuint32_t es[4] = {1, 1, 1, 1};
  return enc(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(ptr), dims, strides, box, es,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The dynamic schedule's two counters (tiles handed out beyond the first wave, CTAs finished) belong to one launch:
// a launch running beside another one (on another stream) must not draw tiles from its counter. So each launch takes
// the next of kSchedSlots pairs in turn, and the last CTA of a launch zeroes its pair. A pair comes round again
// kSchedSlots launches later, when the launch that had it is long finished unless that many launches were queued
// behind it on other streams. (The split tail's buffers below, FAH_SPLIT > 1, off, are still one per module.)
constexpr int kSchedSlots = 65536;
__device__ unsigned int g_sched[kSchedSlots][2];  // zero-initialised, and zero between launches
static std::atomic<unsigned int> g_sched_next{0u};

constexpr int kSplitTiles = 256, kSplitPieces = 400;  // the partial buffer's capacity (split tail)
#if FAH_SPLIT > 1
__device__ float4 g_part[(size_t)kSplitPieces * 2 * (128 / 8 + 1) * 128];  // 27.9 MB: D=128, 2 warpgroups
__device__ unsigned int g_split_cnt[kSplitTiles];  // zero between launches (each tile's last piece resets it)
#endif

// Split tail: T tiles on C CTAs leave a last wave of T mod C tiles, and the other SMs idle for a whole
// tile (non-causal D=128 at the 26 configurations: 2048 tiles on 132 SMs, 15.5 tiles of work per CTA
// done in 16; per-CTA exit times put the idle at 2.7% of the launch, perf.md stage 7). Cut into k KV
// ranges, those tiles take ceil(rest*k/C) waves of n/k blocks plus a piece's fixed cost; halves cannot
// help when rest > C/2 (2048/132: 31.03 halves per CTA, still 16 tiles). Returns the k (1: no split)
// with the shortest modelled tail, within the partial buffer's capacity.
[[maybe_unused]] static int split_pieces(int64_t tiles, int ctas, int n_blocks) {
  if (FAH_SPLIT <= 1 || tiles <= ctas || tiles % ctas == 0) return 1;
  const int rest = (int)(tiles % ctas);
  int best = 1;
  double best_blocks = n_blocks;
  for (int k = 2; k <= FAH_SPLIT && k <= n_blocks; ++k) {
    const int waves = (rest * k + ctas - 1) / ctas;
    const double blocks = waves * ((n_blocks + k - 1) / k + FAH_SPLIT_OVH / 10.0);
    if (blocks < best_blocks) {
      best_blocks = blocks;
      best = k;
    }
  }
  if (rest > kSplitTiles || rest * best > kSplitPieces) return 1;
  return best;
}

// Per-device facts are kept per device (a process may call on several): up to kDevices of them, for the device the
// runtime calls current, which attention_forward reads once per call and passes down. A device past that asks again
// on every call.
constexpr int kDevices = 64;
static int current_device() {
  int dev = 0;
  return cudaGetDevice(&dev) == cudaSuccess && dev >= 0 ? dev : 0;
}

static int num_sms(int dev) {
  static int known[kDevices] = {};
  if (dev < kDevices && known[dev] > 0) return known[dev];
  int n = 0;
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
  if (dev < kDevices) known[dev] = n;
  return n;
}

// Heads per scheduling group. Tiles run group after group (heaviest first inside a group), so:
// - a group's K/V (2 * Sk * D * 2 bytes per kv head, shared by `group` query heads) should fit an
//   L2 budget, so that the tiles running together hit in L2;
// - the groups should be about equal, and for causal the last one big enough (FAH_TAIL tenths of
//   the SM count in tiles) that its heavy tiles do not start when the others are all but done: a
//   last group of 1 to 4 heads left SMs idle at the end and cost 3-9% (perf.md, stage 3).
// Among the sizes from the budget's fit down to half of it whose last group is big enough, the one
// with the fullest groups wins (ties: the larger); when none is, the smallest size above that is.
static int heads_per_group(int num_bh, double kv_bytes_per_qhead, int causal, int num_m_blocks, int sms) {
  const double fit_d = (causal ? FAH_L2_MB_C : FAH_L2_MB) * 1024.0 * 1024 / kv_bytes_per_qhead;
  const int fit = fit_d < 1.0 ? 1 : (fit_d > num_bh ? num_bh : (int)fit_d);
  if (!FAH_GROUP_FILL) return fit;
  const int need = (causal ? FAH_TAIL * sms + 10 * num_m_blocks - 1 : 0) / (10 * num_m_blocks);
  const int lo = need < 1 ? 1 : (need > num_bh ? num_bh : need);
  auto last_ok = [&](int h) { return num_bh - (num_bh - 1) / h * h >= lo; };
  int best = 0;
  double best_fill = 0.0;
  for (int h = fit; h >= 1 && 2 * h >= fit; --h) {
    if (h < lo || !last_ok(h)) continue;
    const int groups = (num_bh + h - 1) / h;
    const double fill = (double)num_bh / ((double)groups * h);
    if (fill > best_fill + 1e-9) {
      best_fill = fill;
      best = h;
    }
  }
  if (best > 0) return best;
  for (int h = lo > fit ? lo : fit; h < num_bh; ++h)
    if (last_ok(h)) return h;
  return num_bh;
}

// Causal (FAH_DEFER): how many of the shortest query-block levels run after the head groups: enough for about
// `tenths` tenths of an SM-wave of tiles, at most half the levels (the rest keeps the groups' L2 reuse).
__host__ __device__ inline int defer_levels(int num_bh, int num_m_blocks, int sms, int tenths) {
  const int want = (tenths * sms + 10 * num_bh - 1) / (10 * num_bh);
  return min(want, num_m_blocks / 2);
}
// The levels a launch defers: FAH_DEFER's share in MHA causal launches of FAH_DEFER_M query blocks or more (MC
// kernels walk a static pair schedule and never defer). sched_sim models the same rule through this function.
__host__ __device__ inline int launch_defer(int causal, int mc, int hq, int hkv, int num_bh, int num_m_blocks,
                                            int sms) {
  return causal && !mc && hq == hkv && num_m_blocks >= FAH_DEFER_M
             ? defer_levels(num_bh, num_m_blocks, sms, FAH_DEFER) : 0;
}

// A launch of `grid` CTAs of `threads` in clusters of 2 (attr must outlive the configuration).
static cudaLaunchConfig_t pair_config(int grid, int threads, int smem_bytes, cudaStream_t stream,
                                      cudaLaunchAttribute& attr) {
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = 2;
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid, 1, 1);
  cfg.blockDim = dim3(threads, 1, 1);
  cfg.dynamicSmemBytes = smem_bytes;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cfg;
}

// MC kernels: how many 2-CTA clusters fit on the device at once; 0 if the query fails.
template <int D, int BN, int STAGES, int NWG, bool PINGPONG, int CM, int MC>
static int max_clusters(int smem_bytes, int dev) {
  static int known[kDevices];
  static bool asked[kDevices] = {};
  if (dev < kDevices && asked[dev]) return known[dev];
  cudaLaunchAttribute attr;
  const cudaLaunchConfig_t cfg = pair_config(2 * num_sms(dev), 128 * (NWG + 1), smem_bytes, nullptr, attr);
  int c = 0;
  const int n =
      cudaOccupancyMaxActiveClusters(&c, fa_fwd_kernel<D, BN, STAGES, NWG, PINGPONG, CM, MC>, &cfg) == cudaSuccess ? c
                                                                                                                 : 0;
  if (dev < kDevices) known[dev] = n, asked[dev] = true;
  return n;
}

template <int D, int BN, int STAGES, int NWG, bool PINGPONG, int CM = 2, int MC = 0>
static int launch(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int sq, int sk,
                  int hq, int hkv, float scale, int causal, cudaStream_t stream, int dev) {
  using L = Layout<D, BN, STAGES, NWG, kCrossTile<D, BN, STAGES, NWG, PINGPONG, CM> ? 2 : 1>;
  constexpr int kBM = L::BM;
  CUtensorMap mq, mk, mv, mo;
  if (!make_map(&mq, q, D, hq, sq, batch, kBM) || !make_map(&mk, k, D, hkv, sk, batch, MC ? BN / 2 : BN) ||
      !make_map(&mv, v, D, hkv, sk, batch, MC ? BN / 2 : BN) || !make_map(&mo, o, D, hq, sq, batch, 64))
    return 7;
  static bool attr_set[kDevices] = {};  // the attribute holds for the device it was set on
  if (dev >= kDevices || !attr_set[dev]) {
    if (cudaFuncSetAttribute(fa_fwd_kernel<D, BN, STAGES, NWG, PINGPONG, CM, MC>,
                             cudaFuncAttributeMaxDynamicSharedMemorySize, L::SMEM) != cudaSuccess)
      return 7;
    if (dev < kDevices) attr_set[dev] = true;
  }
  // MC: the schedule counts pairs (of query blocks, MC = 1; of heads, MC = 2) on the clusters that fit.
  const int clusters = MC ? max_clusters<D, BN, STAGES, NWG, PINGPONG, CM, MC>(L::SMEM, dev) : 0;
  if (MC && clusters < 1) return 7;
  const int sms = MC ? clusters : num_sms(dev);
  Params p;
  p.o = static_cast<__nv_bfloat16*>(o);
  p.lse = lse;
  if (cudaGetSymbolAddress(reinterpret_cast<void**>(&p.sched), g_sched) != cudaSuccess) return 7;
  p.sched += 2 * (g_sched_next.fetch_add(1u, std::memory_order_relaxed) % kSchedSlots);
  p.batch = batch;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.heads_q = hq;
  p.group = hq / hkv;
  p.causal = causal ? 1 : 0;
  const int m_blocks = (sq + kBM - 1) / kBM;
  p.num_m_blocks = MC == 1 ? (m_blocks + 1) / 2 : m_blocks;
  const int units_bh = MC == 2 ? batch * hq / 2 : batch * hq;  // MC = 2: head pairs
  const double unit_kv_bytes = 4.0 * sk * D / (hq / hkv) * (MC == 2 ? 2 : 1);
  p.heads_per_group = causal && sk <= FAH_ONEGROUP_SK_C
                          ? units_bh
                          : heads_per_group(units_bh, unit_kv_bytes, causal, p.num_m_blocks, sms);
#if FAH_DEFER
  p.defer = launch_defer(causal, MC, hq, hkv, units_bh, p.num_m_blocks, sms);
#endif
#if FAH_SHIFT
  p.shift = tile_shift(causal, MC, p.num_m_blocks, MC == 1 ? 2 * kBM : kBM, BN, sq);
#endif
  p.scale = scale;
  p.scale_log2 = scale * 1.4426950408889634f;
  const int64_t tiles = (int64_t)units_bh * p.num_m_blocks;  // MC: tile pairs
  const int grid = (int)(tiles < sms ? tiles : sms) * (MC ? 2 : 1);
  p.full_tiles = (int)tiles;
  p.split_k = 1;
  p.part = nullptr;
  p.split_cnt = nullptr;
#if FAH_SPLIT > 1
  if (kSplitTail<D, BN, STAGES, NWG, CM>) {
    const int k = split_pieces(tiles, grid, (sk + BN - 1) / BN);
    if (k > 1) {
      if (cudaGetSymbolAddress(reinterpret_cast<void**>(&p.part), g_part) != cudaSuccess ||
          cudaGetSymbolAddress(reinterpret_cast<void**>(&p.split_cnt), g_split_cnt) != cudaSuccess)
        return 7;
      p.full_tiles = (int)(tiles - tiles % grid);
      p.split_k = k;
    }
  }
#endif
  if (MC) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = pair_config(grid, 128 * (NWG + 1), L::SMEM, stream, attr);
    return cudaLaunchKernelEx(&cfg, fa_fwd_kernel<D, BN, STAGES, NWG, PINGPONG, CM, MC>, mq, mk, mv, mo, p) ==
                   cudaSuccess
               ? 0
               : 7;
  }
  fa_fwd_kernel<D, BN, STAGES, NWG, PINGPONG, CM><<<grid, 128 * (NWG + 1), L::SMEM, stream>>>(mq, mk, mv, mo, p);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}

// Sk = 0 (every row fully masked), and a call the tiled path below cannot take without the scratch it needs (see
// staged_forward): one block per query row, fp32 throughout, no tensor cores, two passes over the keys. Correct,
// not fast: every key row is read once per query row.
__global__ void __launch_bounds__(128) plain_fwd_kernel(const __nv_bfloat16* __restrict__ q,
                                                        const __nv_bfloat16* __restrict__ k,
                                                        const __nv_bfloat16* __restrict__ v,
                                                        __nv_bfloat16* __restrict__ o, float* __restrict__ lse, int sq,
                                                        int sk, int hq, int hkv, int d, float scale, int causal) {
  __shared__ float qs[256], ps[128], red_m[4], red_l[4];
  const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, t = threadIdx.x;
  const int64_t kv_row = (int64_t)hkv * d;  // elements from one key to the next
  const int64_t kv_head = (int64_t)b * sk * kv_row + (int64_t)(h / (hq / hkv)) * d;  // this query head's kv head
  const __nv_bfloat16* kb = k + kv_head;
  const __nv_bfloat16* vb = v + kv_head;
  const int64_t row = ((int64_t)b * sq + i) * hq + h;  // q and o row of this block
  for (int c = t; c < d; c += 128) qs[c] = __bfloat162float(q[row * d + c]);
  __syncthreads();
  const int last = causal ? min(sk - 1, i + sk - sq) : sk - 1;  // keys 0..last are allowed (bottom-right)
  auto score = [&](int j) {
    const __nv_bfloat16* kr = kb + j * kv_row;
    float acc = 0.f;
    for (int c = 0; c < d; ++c) acc = fmaf(qs[c], __bfloat162float(kr[c]), acc);
    return acc * scale;
  };
  float m = -INFINITY, l = 0.f;  // this thread's running max and sum of exp(score - m) over its keys
  for (int j = t; j <= last; j += 128) {
    const float x = score(j);
    if (x > m) {
      l = l * __expf(m - x) + 1.f;
      m = x;
    } else {
      l += __expf(x - m);
    }
  }
  for (int off = 16; off > 0; off >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffff, m, off), l2 = __shfl_xor_sync(0xffffffff, l, off);
    const float mm = fmaxf(m, m2);
    l = (m == -INFINITY ? 0.f : l * __expf(m - mm)) + (m2 == -INFINITY ? 0.f : l2 * __expf(m2 - mm));
    m = mm;
  }
  if ((t & 31) == 0) red_m[t >> 5] = m, red_l[t >> 5] = l;
  __syncthreads();
  m = fmaxf(fmaxf(red_m[0], red_m[1]), fmaxf(red_m[2], red_m[3]));
  l = 0.f;
  for (int w = 0; w < 4; ++w) l += red_m[w] == -INFINITY ? 0.f : red_l[w] * __expf(red_m[w] - m);
  float acc0 = 0.f, acc1 = 0.f;  // o columns t and t + 128
  for (int base = 0; base <= last; base += 128) {
    __syncthreads();  // the previous chunk's weights are read
    ps[t] = base + t <= last ? __expf(score(base + t) - m) : 0.f;
    __syncthreads();
    const int n = min(128, last - base + 1);
    for (int jj = 0; jj < n; ++jj) {
      const __nv_bfloat16* vr = vb + (int64_t)(base + jj) * kv_row;
      if (t < d) acc0 = fmaf(ps[jj], __bfloat162float(vr[t]), acc0);
      if (t + 128 < d) acc1 = fmaf(ps[jj], __bfloat162float(vr[t + 128]), acc1);
    }
  }
  const float inv = l > 0.f ? 1.f / l : 0.f;
  if (t < d) o[row * d + t] = __float2bfloat16(acc0 * inv);
  if (t + 128 < d) o[row * d + t + 128] = __float2bfloat16(acc1 * inv);
  if (t == 0) lse[((int64_t)b * hq + h) * sq + i] = l > 0.f ? m + logf(l) : -INFINITY;
}

static int plain_launch(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int sq, int sk,
                        int hq, int hkv, int d, float scale, int causal, cudaStream_t stream) {
  if (batch > 65535 || hq > 65535) return 6;  // grid y and z
  plain_fwd_kernel<<<dim3(sq, hq, batch), 128, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k), static_cast<const __nv_bfloat16*>(v),
      static_cast<__nv_bfloat16*>(o), lse, sq, sk, hq, hkv, d, scale, causal);
  return cudaGetLastError() == cudaSuccess ? 0 : 7;
}


// The tiled kernels for a positive softmax_scale on device `dev`. q, k, v and o must be 16-byte aligned (TMA): the
// callers make sure (attention_forward sends any other call to staged_forward), and a tensor map refused for a
// misaligned address would return 7. 6 for more query tiles than the int tile counter holds.
static int tiled_forward(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                         int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim, float softmax_scale,
                         int causal, cudaStream_t s, int dev) {
  if ((int64_t)batch * heads_q * ((seqlen_q + 63) / 64) > 0x7fffffff) return 6;
  switch (head_dim) {
    case 64:
      // Short causal D=64: 128-row tiles (2 consumer warpgroups) balance the triangle better than
      // 192-row ones (perf.md: 0.93x vs 0.80x FA3 at S=1k causal); longer ones are exp-bound and
      // gain from the third warpgroup.
      if (causal && seqlen_q <= FAH_SQ64_2WG)
        return launch<64, FAH_BN64, 3, 2, FAH_PP64 != 0>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#if FAH_MC & 4
      if (!causal)
        return launch<64, FAH_BN64, FAH_MC_ST64, FAH_NWG64, FAH_NWG64 == 2 ? FAH_PP64 != 0 : FAH_RR64 != 0, 2, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
      return launch<64, FAH_BN64, 3, FAH_NWG64, FAH_NWG64 == 2 ? FAH_PP64 != 0 : FAH_RR64 != 0>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
    case 128:
#if FAH_MC & 1
      if (!causal)
        return launch<128, FAH_MC_BN128, FAH_MC_ST128, 2, FAH_PP128, 0, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
#if FAH_NC3_SQ > 0
      if (!causal && seqlen_q >= FAH_NC3_SQ)
        return launch<128, FAH_BN128_3, FAH_ST128_3, 3, false, 0>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
      if (!causal)
        return launch<128, FAH_BN128NC, FAH_ST128, 2, FAH_PP128, 0>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#if FAH_PP128C_SK > 0
      if (seqlen_k <= FAH_PP128C_SK)
        return launch<128, FAH_BN128, FAH_ST128, 2, true, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
#if FAH_C3_SK > 0
      if (seqlen_k >= FAH_C3_SK && heads_q != heads_kv)
        return launch<128, FAH_BN128_3, FAH_ST128_3, 3, false, 3>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
      if (seqlen_k >= FAH_C3_SK)
        return launch<128, FAH_BN128_3, FAH_ST128_3, 3, false, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
#if FAH_LZ_GQA
#if FAH_MC & 8
      if (heads_q != heads_kv && (heads_q / heads_kv) % 2 == 0)
        return launch<128, FAH_BN128, FAH_ST128, 2, FAH_PP128C, 3, 2>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
      if (heads_q != heads_kv)
        return launch<128, FAH_BN128, FAH_ST128, 2, FAH_PP128C, 3>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
#endif
      return launch<128, FAH_BN128, FAH_ST128, 2, FAH_PP128C, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
    case 256:
      // Short causal D=256: 64-wide KV tiles waste less of the masked diagonal (perf.md, stage 2:
      // 0.96x FA3 at S=1k causal against 0.92x with 80; 80 stays faster everywhere else measured).
      if (causal && seqlen_k <= FAH_SK256_BN64)
        return launch<256, 64, 2, 2, FAH_PP256 || FAH_PP256C, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
      if (causal)
        return launch<256, FAH_BN256, 2, 2, FAH_PP256 || FAH_PP256C, 1>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
      return launch<256, FAH_BN256, 2, 2, FAH_PP256, 0, (FAH_MC & 2) ? 1 : 0>(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, softmax_scale, causal, s, dev);
    default: return 3;
  }
}

// Four 32-bit words (eight bf16) with keep / flip applied to both halves of each: one 16-byte store's worth.
__device__ __forceinline__ uint4 masked_words(const uint32_t* w, uint32_t keep2, uint32_t flip2) {
  return make_uint4((w[0] & keep2) ^ flip2, (w[1] & keep2) ^ flip2, (w[2] & keep2) ^ flip2, (w[3] & keep2) ^ flip2);
}

// Calls the tiled kernels cannot take as given go through stream-ordered scratch (the task's 1 MiB workspace holds
// too little), copied by bf16_copy_kernel:
// - a scale <= 0: softmax(s q.k) = softmax(|s| (-q).k) for s < 0, and for s = 0 every allowed key weighs the same, as
//   it does for q = 0 at any positive scale; lse is the same too, since |s| (-q).k = s q.k. The tiled kernels take the
//   running max over raw scores (right for a positive scale only), so they run on a sign-flipped or zeroed copy of q,
//   both exact in bf16;
// - a q, k, v or o pointer off 16 bytes (TMA's alignment): that tensor is copied in (q, k, v) or out (o).
// Without the scratch the plain kernel computes the call.
//
// bf16_copy_kernel has two forms, each with every thread's loads issued before its stores (one element in flight a
// thread copied at ~2.5 TB/s, perf.md stage 23); n is a multiple of 64, and at least one side is 16-byte aligned (the
// scratch).
// - dst 16-byte aligned (every copy in): eight elements a thread, one 16-byte store, and one 16-byte load or eight
//   2-byte ones, as src allows;
// - dst off 16 bytes (o copied out): the p elements before dst's first 16-byte boundary and the 8 - p after its last
//   one apart, and in between one 16-byte store a thread of eight elements src holds p elements in, read as 4-byte
//   words (one more word, funnel-shifted, for an odd p). Every warp's stores are then whole aligned sectors: 2-byte
//   stores left the L2 merging partial ones (ncu, stage 23: L2 79% busy, DRAM 45%, 2.5 TB/s).
__global__ void bf16_copy_kernel(const unsigned short* __restrict__ src, unsigned short* __restrict__ dst, int64_t n,
                                 unsigned short keep, unsigned short flip) {
  const int64_t stride = (int64_t)gridDim.x * blockDim.x, first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t keep2 = keep * 0x10001u, flip2 = flip * 0x10001u;  // both halves of a 32-bit word
  if ((uintptr_t)dst & 15) {
    const int p = (int)((16 - ((uintptr_t)dst & 15)) & 15) / 2;  // 1..7: elements before dst's first boundary
    const int64_t chunks = (n - p) / 8;                              // then 8 - p elements after the last chunk
    if (first < 8) {
      const int64_t e = first < p ? first : p + 8 * chunks + (first - p);
      dst[e] = (src[e] & keep) ^ flip;
    }
    uint4* d16 = reinterpret_cast<uint4*>(dst + p);
    const uint32_t* s32 = reinterpret_cast<const uint32_t*>(src + (p & ~1));  // 4-byte aligned: src is 16
    for (int64_t c = first; c < chunks; c += stride) {
      uint32_t w[5];
#pragma unroll
      for (int j = 0; j < 4; ++j) w[j] = s32[4 * c + j];
      w[4] = (p & 1) ? s32[4 * c + 4] : 0u;  // in bounds: src holds 8 - p >= 1 elements past the last chunk
      if (p & 1) {
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = __funnelshift_r(w[j], w[j + 1], 16);
      }
      d16[c] = masked_words(w, keep2, flip2);
    }
    return;
  }
  const bool src16 = ((uintptr_t)src & 15) == 0;
  for (int64_t c = first; c < n / 8; c += stride) {
    uint32_t w[4];
    if (src16) {
      const uint4 x = reinterpret_cast<const uint4*>(src)[c];
      w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) w[j] = src[8 * c + 2 * j] | (uint32_t)src[8 * c + 2 * j + 1] << 16;
    }
    reinterpret_cast<uint4*>(dst)[c] = masked_words(w, keep2, flip2);
  }
}

static bool bf16_copy(const void* src, void* dst, int64_t n, unsigned short keep, unsigned short flip,
                      cudaStream_t s, int dev) {
  bf16_copy_kernel<<<4 * num_sms(dev), 256, 0, s>>>(static_cast<const unsigned short*>(src),
                                                  static_cast<unsigned short*>(dst), n, keep, flip);
  return cudaGetLastError() == cudaSuccess;
}

static bool off16(const void* p) { return ((uintptr_t)p & 15) != 0; }

static int staged_forward(const void* q, const void* k, const void* v, void* o, float* lse, int batch, int sq, int sk,
                          int hq, int hkv, int d, float scale, int causal, cudaStream_t s, int dev) {
  const bool positive = scale > 0.f, negative = scale < 0.f;  // neither: zero (-0.0 too)
  const int64_t nq = (int64_t)batch * sq * hq * d, nkv = (int64_t)batch * sk * hkv * d;  // multiples of 64
  const bool cq = !positive || off16(q), ck = off16(k), cv = off16(v), co = off16(o);
  const int64_t elems = (cq ? nq : 0) + (ck ? nkv : 0) + (cv ? nkv : 0) + (co ? nq : 0);
  unsigned short* scratch = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void**>(&scratch), (size_t)elems * 2, s) != cudaSuccess) {
    (void)cudaGetLastError();  // a failed allocation is not this call's error: the plain kernel takes it
    return plain_launch(q, k, v, o, lse, batch, sq, sk, hq, hkv, d, scale, causal, s);
  }
  unsigned short* next = scratch;  // each part a multiple of 128 bytes, so every part stays 16-byte aligned
  auto part = [&](bool used, int64_t n) { unsigned short* at = used ? next : nullptr; next += used ? n : 0; return at; };
  unsigned short *tq = part(cq, nq), *tk = part(ck, nkv), *tv = part(cv, nkv), *to = part(co, nq);
  bool ok = (!cq || bf16_copy(q, tq, nq, positive || negative ? 0xffff : 0, negative ? 0x8000 : 0, s, dev)) &&
            (!ck || bf16_copy(k, tk, nkv, 0xffff, 0, s, dev)) && (!cv || bf16_copy(v, tv, nkv, 0xffff, 0, s, dev));
  ok = ok && tiled_forward(cq ? tq : q, ck ? tk : k, cv ? tv : v, co ? static_cast<void*>(to) : o, lse, batch, sq, sk,
                           hq, hkv, d, positive ? scale : negative ? -scale : 1.f, causal, s, dev) == 0;
  ok = ok && (!co || bf16_copy(to, o, nq, 0xffff, 0, s, dev));
  ok = cudaFreeAsync(scratch, s) == cudaSuccess && ok;
  return ok ? 0 : plain_launch(q, k, v, o, lse, batch, sq, sk, hq, hkv, d, scale, causal, s);
}
}  // namespace fah

extern "C" int attention_forward(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                 int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim,
                                 float softmax_scale, int causal, void* workspace, size_t workspace_bytes,
                                 void* stream) {
  (void)workspace;
  (void)workspace_bytes;
  // The task's codes, in the initial kernel's order (a batch or head count above 65535 is no error here).
  if (!q || !k || !v || !o || !lse) return 1;
  if (batch < 0 || seqlen_q < 0 || seqlen_k < 0 || heads_q <= 0 || heads_kv <= 0 || heads_q % heads_kv) return 2;
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) return 3;
  if (!isfinite(softmax_scale * 1.4426950408889634f)) return 4;  // not finite in the exp2 domain
  if ((((uintptr_t)q | (uintptr_t)k | (uintptr_t)v | (uintptr_t)o) & 1) || ((uintptr_t)lse & 3)) return 5;
  if (batch == 0 || seqlen_q == 0) return 0;  // nothing to compute
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (seqlen_k == 0)  // every row fully masked: o = 0, lse = -inf, which the plain kernel writes
    return fah::plain_launch(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, softmax_scale,
                             causal, s);
  const int dev = fah::current_device();
  if (!(softmax_scale > 0.f) || fah::off16(q) || fah::off16(k) || fah::off16(v) || fah::off16(o))
    return fah::staged_forward(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim,
                               softmax_scale, causal, s, dev);
  return fah::tiled_forward(q, k, v, o, lse, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, softmax_scale,
                            causal, s, dev);
}

#if FAH_PROBE
// Copies the last launch's per-CTA records (4 per CTA, see g_probe) into host memory; 0 on success.
extern "C" int fah_probe_read(unsigned long long* dst, int n) {
  if (n < 0 || n > 4 * 1024) return 1;
  return cudaMemcpyFromSymbol(dst, fah::g_probe, sizeof(unsigned long long) * n) == cudaSuccess ? 0 : 1;
}
#endif
