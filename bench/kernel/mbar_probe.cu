// Control experiment for racecheck: does it see the ordering an mbarrier gives? Each kernel hands a
// shared word from one warp to another and back, ordered only by the named mechanism, in the two
// directions the attention kernel's tile slot uses (write -> arrive -> wait -> read, and
// read -> arrive -> wait -> overwrite). Correct by the PTX memory model in every case (arrive has
// release, try_wait acquire semantics at CTA scope); a racecheck report on mode 0 or 1 is therefore
// a report the tool makes for a correct program; likewise for mode 2; mode 3 is the reference.
// (Run on 2026-12-01 with modes 2 and 3 sharing their code, docs/perf.md: modes 0-2 reported.)
//   mode 0: mbarrier, one thread (lane 0) arrives after its warp's reads (__syncwarp first)
//   mode 1: mbarrier, every reading thread arrives (count 32)
//   mode 2: named barriers, bar.arrive on the signalling side and bar.sync on the waiting side
//   mode 3: named barriers, bar.sync on both sides (a rendezvous)
// Build (from this folder): nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a mbar_probe.cu -o mbar_probe
// Run:   compute-sanitizer --tool racecheck --racecheck-report all ./mbar_probe
// The kernel's own mbarrier wrappers (fah::mbar_init / mbar_arrive / mbar_wait, smem_u32), so that
// the probe exercises exactly the instructions of the tile-slot hand-over.
#include "../../kernels/flash_attention_hopper.cu"

#include <cstdio>

using fah::mbar_arrive;
using fah::mbar_init;
using fah::mbar_wait;
using fah::smem_u32;

__global__ void probe(int mode, int rounds, int* out) {
  __shared__ unsigned long long full, empty;
  __shared__ volatile int slot;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    mbar_init(smem_u32(&full), 1);
    mbar_init(smem_u32(&empty), mode == 1 ? 32 : 1);
    slot = -1;
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    if (warp == 0) {  // producer: lane 0 writes the slot once the reader released it
      // Modes 2 and 3 have code of their own so that racecheck's reports (by PC) tell them apart.
      if (mode == 2) {
        if (r > 0) asm volatile("bar.sync 1, 64;\n" ::: "memory");  // reader done with r - 1
        if (lane == 0) slot = r;
        asm volatile("bar.arrive 2, 64;\n" ::: "memory");
      } else if (mode == 3) {
        if (r > 0) asm volatile("bar.sync 3, 64;\n" ::: "memory");
        if (lane == 0) slot = r;
        asm volatile("bar.sync 4, 64;\n" ::: "memory");
      } else if (lane == 0) {
        if (r > 0) mbar_wait(smem_u32(&empty), (r - 1) & 1);
        slot = r;
        mbar_arrive(smem_u32(&full));
      }
    } else if (warp == 1) {  // consumer: every lane reads the slot, then releases it
      if (mode == 2) {
        asm volatile("bar.sync 2, 64;\n" ::: "memory");
        acc += slot;
        if (r + 1 < rounds) asm volatile("bar.arrive 1, 64;\n" ::: "memory");
      } else if (mode == 3) {
        asm volatile("bar.sync 4, 64;\n" ::: "memory");
        acc += slot;
        if (r + 1 < rounds) asm volatile("bar.sync 3, 64;\n" ::: "memory");
      } else {
        mbar_wait(smem_u32(&full), r & 1);
        acc += slot;
        if (mode == 1) {
          mbar_arrive(smem_u32(&empty));
        } else {
          __syncwarp();
          if (lane == 0) mbar_arrive(smem_u32(&empty));
        }
      }
    }
  }
  if (warp == 1) out[lane] = acc;
}

int main() {
  int* out;
  cudaMalloc(&out, 32 * sizeof(int));
  int bad = 0;
  for (int mode = 0; mode < 4; ++mode) {
    probe<<<1, 64>>>(mode, 4, out);
    int h[32];
    const cudaError_t e = cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
    const bool ok = e == cudaSuccess && h[0] == 0 + 1 + 2 + 3 && h[31] == h[0];
    std::printf("mode %d (%s): %s\n", mode, mode == 0   ? "mbarrier, lane 0 arrives"
                : mode == 1 ? "mbarrier, 32 arrivals"
                : mode == 2 ? "named barriers, arrive -> sync"
                            : "named barriers, sync <-> sync",
                ok ? "ok" : "WRONG");
    bad |= !ok;
  }
  return bad;
}
