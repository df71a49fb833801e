// Host-only model of the kernel's causal tile schedule (no GPU needed): how long the SMs sit idle at the
// end of a launch, from the real tile_coords() and heads_per_group() of kernels/flash_attention_hopper.cu
// and a cost model in KV-block units. A prediction to set beside ncu (elapsed minus SM-active cycles),
// not a measurement.
// Build and run:  nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -x cu \
//                   bench/kernel/sched_sim.cu -o /tmp/sched_sim && /tmp/sched_sim [tile_overhead_blocks]
// Model: a tile with n KV blocks takes n + overhead units (overhead: Q load wait, the first S GEMM and
// the last P V that nothing overlaps, the epilogue). CTA c starts with tile c; its producer claims the
// next tile from the global counter once it has issued its current tile's last loads, `lookahead` blocks
// before the consumers finish (the kernel: STAGES), and the claimed tile starts when the current one ends.
// Columns: the kernel's schedule; the same with the claim made only at the end of the tile (lookahead 0);
// the kernel's claim with all heads in one group (no L2 grouping: longest tiles of every head first); the
// kernel's groups with the shortest levels deferred to the end in every causal launch (FAH_DEFER = 10, 20, 30
// tenths of a wave; the kernel defers FAH_DEFER only in MHA launches of FAH_DEFER_M query blocks or more).
// What the model misses: tiles' speeds differ with the data and the SM, and deferred tiles read K/V the L2
// no longer holds. Measured (perf.md, stage 14): deferring shrinks the idle tail at every length, but at
// S <= 2k the launch got longer (the model's 1.74% -> 0.41% at S=2k came with a 1.4% longer span).
// Checks (a failure exits 1): every tile runs exactly once, and the makespan is at least the busy time
// spread over the CTAs and at least the longest tile.
#include "../../kernels/flash_attention_hopper.cu"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <queue>
#include <vector>

namespace {

int g_failures = 0;
constexpr int kSms = 132;

struct Shape {
  int b, s, hq, hkv, d;
};

// The tiles' durations in schedule order, for head dim 128 or 256 with the KV tile width attention_forward
// dispatches for causal (a copy of its rule: keep the two in step).
// defer_tenths < 0: the kernel's own rule (launch_defer, as its launch calls it).
std::vector<double> durations(const Shape& s, int heads_per_group_override, double overhead, int defer_tenths) {
  const int bm = 128, bn = s.d == 256 ? (s.s <= FAH_SK256_BN64 ? 64 : FAH_BN256) : FAH_BN128;
  const int num_m = (s.s + bm - 1) / bm, num_bh = s.b * s.hq, n_total = (s.s + bn - 1) / bn;
  const int hpg = heads_per_group_override > 0
                      ? heads_per_group_override
                      : fah::heads_per_group(num_bh, 4.0 * s.s * s.d / (s.hq / s.hkv), 1, num_m, kSms);
  const int defer = defer_tenths < 0   ? fah::launch_defer(1, 0, s.hq, s.hkv, num_bh, num_m, kSms)
                    : defer_tenths > 0 ? fah::defer_levels(num_bh, num_m, kSms, defer_tenths)
                                       : 0;
  std::vector<double> out;
  for (int t = 0; t < num_m * num_bh; ++t) {
    int b, h, m0, n_max;
    fah::tile_coords(t, num_m, hpg, num_bh, s.hq, bm, bn, n_total, 1, 0, fah::tile_shift(1, 0, num_m, bm, bn, s.s), defer,
                     b, h, m0, n_max);
    // Tile widths differ from 128 at D=256: cost in units of a 128-key block.
    out.push_back(n_max > 0 ? n_max * (double)bn / 128.0 + overhead : 0.1);
  }
  return out;
}

// The idle share of CTA time, 1 - busy / (makespan * CTAs).
double idle_share(const std::vector<double>& tiles, double lookahead) {
  const int ctas = std::min<int>(kSms, (int)tiles.size());
  // (claim time, cta): the earliest claimer takes the next tile from the counter.
  using Claim = std::pair<double, int>;
  std::priority_queue<Claim, std::vector<Claim>, std::greater<Claim>> claims;
  std::vector<double> end(ctas, 0.0);
  std::vector<int> runs(tiles.size(), 0);
  double busy = 0.0;
  auto start = [&](int cta, int t, double at) {
    ++runs[t];
    busy += tiles[t];
    end[cta] = at + tiles[t];
    claims.push({std::max(at, end[cta] - lookahead), cta});
  };
  for (int c = 0; c < ctas; ++c) start(c, c, 0.0);
  size_t next = ctas;
  while (!claims.empty()) {
    const int cta = claims.top().second;
    claims.pop();
    if (next < tiles.size()) start(cta, (int)next++, end[cta]);
  }
  const double makespan = *std::max_element(end.begin(), end.end());
  for (size_t t = 0; t < tiles.size(); ++t)
    if (runs[t] != 1) {
      ++g_failures;
      std::printf("FAIL tile %zu ran %d times\n", t, runs[t]);
    }
  const double longest = *std::max_element(tiles.begin(), tiles.end());
  if (makespan + 1e-9 < busy / ctas || makespan + 1e-9 < longest) {
    ++g_failures;
    std::printf("FAIL makespan %.1f below busy/ctas %.1f or the longest tile %.1f\n", makespan, busy / ctas,
                longest);
  }
  return 1.0 - busy / (makespan * ctas);
}

}  // namespace

int main(int argc, char** argv) {
  const double overhead = argc > 1 ? std::atof(argv[1]) : 1.0;
  const std::vector<Shape> shapes = {
      {32, 512, 16, 16, 128},  {16, 1024, 16, 16, 128}, {8, 2048, 16, 16, 128}, {4, 4096, 16, 16, 128},
      {2, 8192, 16, 16, 128},  {1, 16384, 16, 16, 128}, {1, 8192, 32, 8, 128},  {2, 4096, 64, 8, 128},
      {16, 1024, 8, 8, 256},   {4, 4096, 8, 8, 256},    {1, 16384, 8, 8, 256},  {8, 768, 16, 16, 128},
      {3, 3000, 12, 12, 128},  {1, 20000, 8, 8, 128},
  };
  std::printf("causal tile schedule, %d CTAs, tile overhead %.2f blocks: idle share of CTA time\n", kSms, overhead);
  std::printf("%-28s %10s %12s %12s %9s %9s %9s\n", "shape (B,S,Hq/Hkv,D)", "kernel", "claim@end", "one group",
              "defer10", "defer20", "defer30");
  for (const Shape& s : shapes) {
    const double kernel = idle_share(durations(s, 0, overhead, -1), 2.0);
    const double at_end = idle_share(durations(s, 0, overhead, -1), 0.0);
    const double one = idle_share(durations(s, s.b * s.hq, overhead, 0), 2.0);
    char name[64];
    std::snprintf(name, sizeof name, "B%d S%d H%d/%d D%d", s.b, s.s, s.hq, s.hkv, s.d);
    std::printf("%-28s %9.2f%% %11.2f%% %11.2f%%", name, 100 * kernel, 100 * at_end, 100 * one);
    for (int tenths : {10, 20, 30}) std::printf(" %8.2f%%", 100 * idle_share(durations(s, 0, overhead, tenths), 2.0));
    std::printf("\n");
  }
  std::printf("sched_sim: %zu shapes, %d failure(s)\n", shapes.size(), g_failures);
  return g_failures ? 1 : 0;
}
