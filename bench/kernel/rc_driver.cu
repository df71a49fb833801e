// Small driver for compute-sanitizer (racecheck, synccheck, memcheck) on the attention kernel: a
// few small shapes per head dim that take every code path (D=64 and D=128 with 3 and 2 consumer warpgroups,
// causal and not, key-less query tiles with causal Sq > Sk, a sequence tail, an odd count of query blocks,
// causal grouped heads), each launched twice.
// Build beside the kernel:  nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo \
//                             kernels/flash_attention_hopper.cu bench/kernel/rc_driver.cu -o rc
// Run:  compute-sanitizer --tool racecheck --racecheck-report all ./rc [D [SCALE [OFFSET]]]
// (SCALE, default 0.125: a zero or negative one runs the tiled kernels on a sign-flipped or zeroed copy of q;
// OFFSET, default 0: q, k, v and o start this many elements into their allocations, so that an OFFSET that is not
// a multiple of 8 sends them through aligned scratch copies)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

extern "C" int attention_forward(const void* q, const void* k, const void* v, void* o, float* lse, int batch,
                                 int seqlen_q, int seqlen_k, int heads_q, int heads_kv, int head_dim,
                                 float softmax_scale, int causal, void* workspace, size_t workspace_bytes,
                                 void* stream);

__global__ void fill(__nv_bfloat16* x, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    x[i] = __float2bfloat16(((h & 0xffff) / 65536.f - 0.5f) * 4.f);
  }
}

static float g_scale = 0.125f;
static int g_offset = 0;

static int run(int b, int sq, int sk, int hq, int hkv, int d, int causal) {
  const size_t nq = (size_t)b * sq * hq * d, nk = (size_t)b * sk * hkv * d;
  __nv_bfloat16 *q, *k, *v, *o;
  float* lse;
  void* ws;
  const size_t off = g_offset;
  if (cudaMalloc(&q, (nq + off) * 2) || cudaMalloc(&k, (nk + off) * 2) || cudaMalloc(&v, (nk + off) * 2) ||
      cudaMalloc(&o, (nq + off) * 2) || cudaMalloc(&lse, (size_t)b * hq * sq * 4) || cudaMalloc(&ws, 1 << 20))
    return 10;
  q += off, k += off, v += off, o += off;
  fill<<<64, 256>>>(q, nq, 1u);
  fill<<<64, 256>>>(k, nk, 2u);
  fill<<<64, 256>>>(v, nk, 3u);
  int rc = 0;
  for (int rep = 0; rep < 2 && rc == 0; ++rep)
    rc = attention_forward(q, k, v, o, lse, b, sq, sk, hq, hkv, d, g_scale, causal, ws, 1 << 20, nullptr);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d causal=%d: rc=%d %s\n", b, sq, sk, hq, hkv, d, causal, rc,
              cudaGetErrorString(e));
  cudaFree(q - off); cudaFree(k - off); cudaFree(v - off); cudaFree(o - off); cudaFree(lse); cudaFree(ws);
  return rc ? rc : (e != cudaSuccess ? 11 : 0);
}

int main(int argc, char** argv) {
  const int only = argc > 1 ? std::atoi(argv[1]) : 0;
  if (argc > 2) g_scale = std::strtof(argv[2], nullptr);
  if (argc > 3) g_offset = std::atoi(argv[3]);
  int bad = 0;
  for (int d : {64, 128, 256}) {
    if (only && d != only) continue;
    bad |= run(1, 200, 200, 2, 1, d, 0);   // two query tiles per head, sequence tail, GQA 2:1
    bad |= run(1, 200, 200, 2, 2, d, 1);   // causal (D=64: the 2-warpgroup kernel)
    bad |= run(1, 300, 100, 2, 1, d, 1);   // causal Sq > Sk: key-less query tiles
    if (d == 64) bad |= run(1, 2200, 2264, 1, 1, d, 1);  // causal past 2048 rows: the 3-warpgroup kernel
    bad |= run(1, 330, 200, 2, 1, d, 0);   // non-causal, an odd count of query blocks (multicast pairs, FAH_MC)
    if (d == 128) bad |= run(1, 300, 1600, 4, 2, d, 1);  // causal GQA 2:1 past the ping-pong kernel's keys: 3 warpgroups
    if (d == 128) bad |= run(1, 1400, 300, 2, 1, d, 0);  // non-causal from 1280 queries: 3 warpgroups, a partial tile
    if (d == 128) bad |= run(1, 200, 6200, 2, 2, d, 1);  // causal, 3 warpgroups: two warpgroups before row 0 (FAH_SHIFT)
  }
  std::printf("rc_driver: %s\n", bad ? "FAILED" : "ok");
  return bad;
}
