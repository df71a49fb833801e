// Host-only checks of the kernel's tile arithmetic (no GPU needed): the real tile_coords() and
// heads_per_group() of kernels/flash_attention_hopper.cu against brute force, for the shapes that
// once hung or left rows unwritten (causal Sq > Sk: key-less query tiles) and a sweep around them.
// Build and run:  nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -x cu \
//                   bench/kernel/tile_math_test.cu -o /tmp/tile_math_test && /tmp/tile_math_test
// Checks per shape and head dim (tile sizes as attention_forward dispatches them):
//   1. tiles 0..num_tiles-1 map one-to-one onto (batch, head, query block): none skipped;
//   2. n_max = number of KV blocks holding a key visible to some valid row of the tile (0 allowed);
//   3. every visible key lies in a visited block and the unmasked fast path is only taken for blocks
//      whose keys are all visible to every row of the tile; the one-compare test (first_masked_block)
//      agrees with the two bounds on every visited block;
//   4. the epilogue's thread -> row map writes every row of the tile exactly once;
//   5. the dynamic scheduler (first tile = blockIdx, then gridDim + atomic counter) hands out every
//      tile exactly once under random interleavings, and the counters are zero after the launch.
//   6. causal: the last head group holds at least FAH_TAIL tenths of 132 SMs in tiles (or all tiles).
//   8. multicast pairs (FAH_MC, unit_coords): MC = 1 on non-causal shapes, MC = 2 where the K/V group is even;
//      the two CTAs of a unit get one batch, one K/V head and one KV range, and the units cover every tile
//      once (MC = 1: an odd last query block's partner lies past the sequence end).
//   9. FAH_DEFER: with the shortest query-block levels deferred, checks 1-3 still hold, and the deferred tiles
//      come after every grouped one, their levels non-increasing.
#include "../../kernels/flash_attention_hopper.cu"

#include <cstdio>
#include <random>
#include <vector>

namespace {

int g_failures = 0;
long g_keyless_tiles = 0;  // key-less tiles seen: the sweep must exercise them

#define EXPECT(cond, ...)                       \
  do {                                          \
    if (!(cond)) {                              \
      if (++g_failures <= 20) {                 \
        std::printf("FAIL %s: ", #cond);        \
        std::printf(__VA_ARGS__);               \
        std::printf("\n");                      \
      }                                         \
    }                                           \
  } while (0)

struct Shape {
  int batch, sq, sk, hq, hkv, causal;
};

struct Tiles {
  int bm, bn, nwg;
};

// The tiling attention_forward dispatches to for this head dim and shape.
Tiles tiles_for(int d, const Shape& s) {
  if (d == 64) {
    if (s.causal && s.sq <= FAH_SQ64_2WG) return {128, FAH_BN64, 2};
    return {64 * FAH_NWG64, FAH_BN64, FAH_NWG64};
  }
  if (d == 128) {  // attention_forward's order: ping-pong causal first, then the 3-warpgroup kernels' thresholds
    if (!s.causal && FAH_NC3_SQ > 0 && s.sq >= FAH_NC3_SQ) return {192, FAH_BN128_3, 3};
    if (s.causal && s.sk > FAH_PP128C_SK && FAH_C3_SK > 0 && s.sk >= FAH_C3_SK) return {192, FAH_BN128_3, 3};
    return {128, s.causal ? FAH_BN128 : FAH_BN128NC, 2};
  }
  if (s.causal && s.sk <= FAH_SK256_BN64) return {128, 64, 2};
  return {128, FAH_BN256, 2};
}

// Visible keys of query row i: j < visible(i) (bottom-right causal alignment).
int visible(const Shape& s, int i) {
  if (!s.causal) return s.sk;
  const int v = i + s.sk - s.sq + 1;
  return v < 0 ? 0 : (v > s.sk ? s.sk : v);
}

void check_schedule(int num_tiles, int grid, std::mt19937& rng, const char* tag) {
  unsigned sched[2] = {0u, 0u};
  for (int launch = 0; launch < 2; ++launch) {  // two launches: the reset must leave zeros
    std::vector<int> taken(num_tiles, 0), next(grid);
    std::vector<bool> done(grid, false);
    for (int c = 0; c < grid; ++c) next[c] = c;
    int live = grid;
    while (live > 0) {
      const int c = (int)(rng() % grid);
      if (done[c]) continue;
      if (next[c] < num_tiles) {
        ++taken[next[c]];
        next[c] = grid + (int)(sched[0]++);
      } else {
        done[c] = true;
        --live;
        if (sched[1]++ == (unsigned)grid - 1) sched[0] = sched[1] = 0u;
      }
    }
    for (int t = 0; t < num_tiles; ++t) EXPECT(taken[t] == 1, "%s launch %d tile %d taken %d times", tag, launch, t, taken[t]);
    EXPECT(sched[0] == 0u && sched[1] == 0u, "%s counters not reset after launch %d", tag, launch);
  }
}

void check_shape(const Shape& s, int d, std::mt19937& rng) {
  const Tiles tl = tiles_for(d, s);
  char tag[160];
  std::snprintf(tag, sizeof tag, "B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d causal=%d", s.batch, s.sq, s.sk, s.hq,
                s.hkv, d, s.causal);
  const int num_m_blocks = (s.sq + tl.bm - 1) / tl.bm;
  const int num_bh = s.batch * s.hq;
  const int num_tiles = num_m_blocks * num_bh;
  const int n_total = (s.sk + tl.bn - 1) / tl.bn;
  const int off = s.sk - s.sq;
  const int shift = fah::tile_shift(s.causal, 0, num_m_blocks, tl.bm, tl.bn, s.sq);  // FAH_SHIFT: rows before 0
  const int spare = num_m_blocks * tl.bm - s.sq;  // rows the tiles hold past the query count
  EXPECT(shift >= 0 && shift <= spare && shift % tl.bn == 0 && (!s.causal || !FAH_SHIFT || spare - shift < tl.bn),
         "%s shift %d", tag, shift);
  const int hpg = fah::heads_per_group(num_bh, 4.0 * s.sk * d / (s.hq / s.hkv), s.causal, num_m_blocks, 132);
  EXPECT(hpg >= 1 && hpg <= num_bh, "%s heads_per_group %d", tag, hpg);
  // Causal: the last head group holds at least FAH_TAIL tenths of the SM count in tiles (or is all
  // of them), so that its heavy tiles do not start when the other SMs are nearly done.
  const int last_heads = num_bh - (num_bh - 1) / hpg * hpg;
  const long long want_tail = std::min<long long>((long long)num_bh * num_m_blocks, (FAH_TAIL * 132 + 9) / 10);
  EXPECT(!s.causal || (long long)last_heads * num_m_blocks >= want_tail, "%s last group %d heads x %d blocks < %lld",
         tag, last_heads, num_m_blocks, want_tail);
  int keyless_tiles = 0;
  // defer: 0 (the groups alone), 1, half the levels (defer_levels' cap) and two SM-waves' worth at 132 SMs.
  for (int defer : {0, 1, num_m_blocks / 2, fah::defer_levels(num_bh, num_m_blocks, 132, 20)}) {
    std::vector<int> seen((size_t)num_tiles, 0);
    int last_deferred_level = defer;
    for (int t = 0; t < num_tiles; ++t) {
      int b, h, m0, n_max;
      fah::tile_coords(t, num_m_blocks, hpg, num_bh, s.hq, tl.bm, tl.bn, n_total, s.causal, off, shift, defer, b, h,
                       m0, n_max);
      const int level = (m0 + shift) / tl.bm;
      if (t >= num_bh * (num_m_blocks - defer)) {  // 9. the deferred levels run last, from the longest
        EXPECT(level < defer && level <= last_deferred_level, "%s defer %d: tile %d level %d after level %d", tag,
               defer, t, level, last_deferred_level);
        last_deferred_level = level;
      } else {
        EXPECT(level >= defer, "%s defer %d: grouped tile %d has a deferred level (m0=%d)", tag, defer, t, m0);
      }
      // A tile holds at least one valid row; only the first may start before row 0.
      const bool in_range = b >= 0 && b < s.batch && h >= 0 && h < s.hq && m0 + tl.bm > 0 && m0 < s.sq &&
                            (m0 + shift) % tl.bm == 0 && (m0 >= 0 || level == 0);
      EXPECT(in_range, "%s tile %d -> b=%d h=%d m0=%d", tag, t, b, h, m0);
      if (!in_range) continue;
      ++seen[((size_t)b * s.hq + h) * num_m_blocks + level];
      const int rows_begin = m0 > 0 ? m0 : 0;
      const int rows_end = m0 + tl.bm < s.sq ? m0 + tl.bm : s.sq;
      int want = 0;
      for (int i = rows_begin; i < rows_end; ++i) {
        const int nb = (visible(s, i) + tl.bn - 1) / tl.bn;
        want = nb > want ? nb : want;
      }
      EXPECT(n_max == want, "%s tile %d (m0=%d) n_max %d, want %d", tag, t, m0, n_max, want);
      keyless_tiles += n_max == 0;
      // The kernel's per-row limit and its mask-free fast path (kernel: softmax lambda).
      for (int n = 0; n < n_max; ++n) {
        const bool need_mask = (n * tl.bn + tl.bn > s.sk) || (s.causal && n * tl.bn + tl.bn - 1 > m0 + off);
        const int n_mask = fah::first_masked_block(s.sk, m0 + off + 1, s.causal, tl.bn);
        EXPECT((n >= n_mask) == need_mask, "%s tile m0=%d block %d: n_mask %d disagrees with the two bounds", tag, m0,
               n, n_mask);
        for (int i = rows_begin; i < rows_end && !need_mask; ++i)
          EXPECT(visible(s, i) >= n * tl.bn + tl.bn, "%s row %d block %d unmasked but not all visible", tag, i, n);
      }
      for (int i = rows_begin; i < rows_end; ++i) {
        const int lim = s.causal ? (s.sk < i + off + 1 ? s.sk : i + off + 1) : s.sk;
        EXPECT((lim < 0 ? 0 : lim) == visible(s, i), "%s row %d lim %d", tag, i, lim);
        EXPECT(visible(s, i) <= n_max * tl.bn, "%s row %d sees keys beyond the visited blocks", tag, i);
      }
    }
    for (size_t i = 0; i < seen.size(); ++i)
      EXPECT(seen[i] == 1, "%s defer %d: (b,h,block) %zu covered %d times", tag, defer, i, seen[i]);
  }
  // Epilogue rows: cw * 64 + warp * 16 + lane / 4 and that + 8.
  std::vector<int> rows(tl.bm, 0);
  for (int cw = 0; cw < tl.nwg; ++cw)
    for (int warp = 0; warp < 4; ++warp)
      for (int lane = 0; lane < 32; lane += 4) {
        ++rows[cw * 64 + warp * 16 + lane / 4];
        ++rows[cw * 64 + warp * 16 + lane / 4 + 8];
      }
  for (int r = 0; r < tl.bm; ++r) EXPECT(rows[r] == 1, "%s epilogue row %d written %d times", tag, r, rows[r]);
  const int grid = num_tiles < 132 ? num_tiles : 132;
  check_schedule(num_tiles, grid, rng, tag);
  g_keyless_tiles += keyless_tiles;
}

// 8. Units 0..units-1 of multicast mode mc, for a few head-group sizes (coverage must not depend on it).
void check_pairs(const Shape& s, int d, int mc) {
  const Tiles tl = tiles_for(d, s);
  char tag[160];
  std::snprintf(tag, sizeof tag, "MC=%d B=%d Sq=%d Sk=%d Hq=%d Hkv=%d D=%d causal=%d", mc, s.batch, s.sq, s.sk, s.hq,
                s.hkv, d, s.causal);
  const int m_blocks = (s.sq + tl.bm - 1) / tl.bm;
  const int unit_m = mc == 1 ? (m_blocks + 1) / 2 : m_blocks;
  const int heads_s = mc == 2 ? s.hq / 2 : s.hq, num_bh = s.batch * heads_s;
  const int n_total = (s.sk + tl.bn - 1) / tl.bn, off = s.sk - s.sq, group = s.hq / s.hkv;
  const int sh = fah::tile_shift(s.causal, mc, m_blocks, tl.bm, tl.bn, s.sq);
  for (int hpg : {1, 3, num_bh}) {
    std::vector<int> seen((size_t)s.batch * s.hq * m_blocks, 0);
    for (int u = 0; u < unit_m * num_bh; ++u) {
      int b[2], h[2], m0[2], n_max[2];
      for (int r = 0; r < 2; ++r)
        fah::unit_coords(u, mc, r, unit_m, hpg, num_bh, heads_s, tl.bm, tl.bn, n_total, s.causal, off, sh, 0, b[r],
                         h[r], m0[r], n_max[r]);
      EXPECT(b[0] == b[1] && h[0] / group == h[1] / group && n_max[0] == n_max[1], "%s unit %d: ranks differ", tag, u);
      for (int r = 0; r < 2; ++r) {
        const bool past = mc == 1 && r == 1 && m0[r] >= s.sq;  // the odd last block's partner
        EXPECT(past ? m0[0] + tl.bm >= s.sq : (b[r] >= 0 && b[r] < s.batch && h[r] >= 0 && h[r] < s.hq &&
                                               m0[r] + tl.bm > 0 && m0[r] < s.sq && (m0[r] + sh) % tl.bm == 0),
               "%s unit %d rank %d -> b=%d h=%d m0=%d", tag, u, r, b[r], h[r], m0[r]);
        if (!past) ++seen[((size_t)b[r] * s.hq + h[r]) * m_blocks + (m0[r] + sh) / tl.bm];
      }
    }
    for (size_t i = 0; i < seen.size(); ++i) EXPECT(seen[i] == 1, "%s hpg %d tile %zu covered %d times", tag, hpg, i, seen[i]);
  }
}

}  // namespace

// 7. split tail: the pieces of a tile cover its KV blocks once, none empty, for every k split_pieces
// may pick (k <= n); and split_pieces' choice for the non-causal D=128 configurations (2048 tiles on
// 132 CTAs) is a real split whose modelled tail beats the unsplit one, or no split where no k helps.
void check_split() {
  for (int n = 1; n <= 300; ++n)
    for (int k = 1; k <= n && k <= 8; ++k) {
      int next = 0;
      for (int q = 0; q < k; ++q) {
        int lo, hi;
        fah::piece_range(n, q, k, lo, hi);
        EXPECT(lo == next && hi > lo && hi <= n, "n=%d k=%d piece %d: [%d, %d)", n, k, q, lo, hi);
        next = hi;
      }
      EXPECT(next == n, "n=%d k=%d: pieces end at %d", n, k, next);
    }
  EXPECT(fah::split_pieces(132, 132, 32) == 1 && fah::split_pieces(264, 132, 32) == 1 &&
             fah::split_pieces(100, 132, 32) == 1,
         "no split when the tiles fill whole waves or one partial wave");
  for (int n : {4, 8, 16, 32, 64, 128}) {
    const int k = fah::split_pieces(2048, 132, n);
    EXPECT(k >= 1 && k <= (FAH_SPLIT > 1 ? FAH_SPLIT : 1) && k <= n, "2048 tiles, %d blocks: k=%d", n, k);
    std::printf("split_pieces(2048 tiles, 132 CTAs, %d blocks) = %d\n", n, k);
  }
  if (FAH_SPLIT >= 3) EXPECT(fah::split_pieces(2048, 132, 32) == 3, "S=4k non-causal D=128 should split in 3");
}

int main() {
  check_split();
  std::vector<Shape> shapes = {
      {6, 2047, 129, 12, 3, 1},    {7, 2047, 129, 16, 2, 1},  {1, 16384, 4097, 4, 1, 1}, {1, 1, 1, 2, 2, 1},
      {1, 1, 1000, 2, 2, 1},       {1, 1000, 1, 2, 1, 1},     {1, 1000, 1, 2, 1, 0},     {1, 16384, 129, 4, 1, 1},
      {1, 16384, 129, 4, 1, 0},    {3, 200, 257, 8, 8, 1},    {2, 513, 1500, 4, 2, 1},   {1, 2047, 2047, 2, 2, 1},
      {1, 129, 127, 4, 1, 1},      {8, 65, 63, 8, 1, 1},      {1, 1, 16384, 8, 1, 1},    {2, 16384, 16384, 16, 16, 1},
      {2, 6200, 6200, 2, 2, 1},    {1, 1400, 300, 2, 1, 0},
  };
  for (int sq : {129, 2047, 4097})
    for (int sk : {1, 7, 129, 1000})
      for (int b = 1; b <= 3; ++b) shapes.push_back({b, sq, sk, 4 * b, b, 1});
  std::mt19937 rng(1234);
  for (const Shape& s : shapes)
    for (int d : {64, 128, 256}) check_shape(s, d, rng);
  // 8. multicast pairs, on the sweep made non-causal (MC = 1) and on its shapes with an even K/V group (MC = 2)
  for (Shape s : shapes)
    for (int d : {64, 128, 256}) {
      if ((s.hq / s.hkv) % 2 == 0) check_pairs(s, d, 2);
      s.causal = 0;
      check_pairs(s, d, 1);
    }
  EXPECT(g_keyless_tiles > 0, "the sweep has no key-less tile");
  std::printf("tile_math_test: %zu shapes x 3 head dims, %ld key-less tiles, %d failure(s)\n", shapes.size(),
              g_keyless_tiles, g_failures);
  return g_failures ? 1 : 0;
}
