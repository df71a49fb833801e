// Host-only check of the staged epilogue (D=64/128; no GPU): the kernel's own epi_pair_offset() and
// epi_chunk_offset() and Layout::STAGE_O/SMEM. Every 4-byte pair of a warpgroup's 64 x D tile is
// written once, read back from the right place into the right (row, 16-byte chunk), each chunk
// stored once; the 32 lanes of one 4-byte shared store hit 32 different banks; shared memory
// stays within 227 KB; head dim 256 and the 176-wide D=128 tile stage O in the V ring instead (no
// room for a buffer of its own); the TMA-store variant's box layout is checked the same way.
// Build and run (from this folder):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -x cu epilogue_map_test.cu -o /tmp/emt && /tmp/emt
#include "../../kernels/flash_attention_hopper.cu"

#include <cstdio>
#include <set>
#include <vector>

static int g_failures = 0;
#define EXPECT(cond, ...)                                                  \
  do {                                                                     \
    if (!(cond) && ++g_failures <= 20) {                                   \
      std::printf("FAIL %s: ", #cond);                                     \
      std::printf(__VA_ARGS__);                                            \
      std::printf("\n");                                                   \
    }                                                                      \
  } while (0)

static void check_map(int d) {
  const int cpr = d / 8;
  std::vector<int> element(64 * d / 2, -1);  // per 4-byte word: first logical element (row * d + col)
  for (uint32_t t = 0; t < 128; ++t) {
    const int row0 = (int)(t / 32) * 16 + (int)(t % 32) / 4, colq = 2 * (int)(t % 4);  // kernel: row0, colq
    for (int i = 0; i < cpr; ++i)
      for (int half = 0; half < 2; ++half) {
        const uint32_t off = fah::epi_pair_offset(t, i, half, d);
        EXPECT(off % 4 == 0 && off < (uint32_t)(64 * d * 2), "D=%d t=%u i=%d offset %u", d, t, i, off);
        if (off % 4 || off >= (uint32_t)(64 * d * 2)) continue;
        EXPECT(element[off / 4] < 0, "D=%d word %u written twice", d, off / 4);
        element[off / 4] = (row0 + 8 * half) * d + 8 * i + colq;
      }
  }
  for (size_t w = 0; w < element.size(); ++w) EXPECT(element[w] >= 0, "D=%d word %zu never written", d, w);
  for (int warp = 0; warp < 4; ++warp)
    for (int i = 0; i < cpr; ++i)
      for (int half = 0; half < 2; ++half) {
        std::set<uint32_t> banks;
        for (uint32_t lane = 0; lane < 32; ++lane) banks.insert(fah::epi_pair_offset(warp * 32 + lane, i, half, d) / 4 % 32);
        EXPECT(banks.size() == 32, "D=%d warp %d pair %d: %zu banks", d, warp, i, banks.size());
      }
  std::vector<int> stored(64 * cpr, 0);
  for (int j = 0; j < 64 * cpr / 128; ++j)
    for (uint32_t t = 0; t < 128; ++t) {
      int rl = -1, c = -1;
      const uint32_t off = fah::epi_chunk_offset(j * 128 + t, d, rl, c);
      EXPECT(off % 16 == 0 && rl >= 0 && rl < 64 && c >= 0 && c < cpr, "D=%d j=%d t=%u", d, j, t);
      if (off % 16 || rl < 0 || rl >= 64 || c < 0 || c >= cpr) continue;
      for (int q = 0; q < 4; ++q)
        EXPECT(element[off / 4 + q] == rl * d + 8 * c + 2 * q, "D=%d chunk (%d,%d) word %d holds %d", d, rl, c, q,
               element[off / 4 + q]);
      ++stored[rl * cpr + c];
    }
  for (size_t k = 0; k < stored.size(); ++k) EXPECT(stored[k] == 1, "D=%d chunk %zu stored %d times", d, k, stored[k]);
}

// The TMA-store layout: thread t's pair i (row r, columns 8i + 2(t%4), +1) must land where the
// copy engine's 128B-swizzled box puts it: 64-column block i/8 (8192 bytes each), row r at r*128,
// 16-byte unit (i%8) ^ (r%8); every word once; one store instruction conflict-free.
static void check_tma_map(int d) {
  const int cpr = d / 8;
  std::vector<int> hit(64 * d / 2, 0);
  for (uint32_t t = 0; t < 128; ++t) {
    const int row0 = (int)(t / 32) * 16 + (int)(t % 32) / 4, colq = 2 * (int)(t % 4);
    for (int i = 0; i < cpr; ++i)
      for (int half = 0; half < 2; ++half) {
        const int r = row0 + 8 * half, col = 8 * i + colq;
        const uint32_t want = (col / 64) * 8192 + r * 128 + ((((col % 64) / 8) ^ (r % 8)) * 16) + (col % 8) * 2;
        const uint32_t off = fah::epi_tma_offset(t, i, half);
        EXPECT(off == want, "TMA D=%d t=%u i=%d half=%d: %u, box layout says %u", d, t, i, half, off, want);
        if (off < (uint32_t)(64 * d * 2)) ++hit[off / 4];
      }
  }
  for (size_t w = 0; w < hit.size(); ++w) EXPECT(hit[w] == 1, "TMA D=%d word %zu written %d times", d, w, hit[w]);
  for (int warp = 0; warp < 4; ++warp)
    for (int i = 0; i < cpr; ++i)
      for (int half = 0; half < 2; ++half) {
        std::set<uint32_t> banks;
        for (uint32_t lane = 0; lane < 32; ++lane) banks.insert(fah::epi_tma_offset(warp * 32 + lane, i, half) / 4 % 32);
        EXPECT(banks.size() == 32, "TMA D=%d warp %d pair %d: %zu banks", d, warp, i, banks.size());
      }
}

int main() {
  check_map(64);
  check_map(128);
  check_map(256);
  check_tma_map(64);
  check_tma_map(128);
  check_tma_map(256);
  using L128 = fah::Layout<128, FAH_BN128, FAH_ST128, 2>;
  using L64a = fah::Layout<64, FAH_BN64, 3, 2>;
  using L64b = fah::Layout<64, FAH_BN64, 3, FAH_NWG64>;
  using L256 = fah::Layout<256, FAH_BN256, 2, 2>;
  EXPECT(L128::STAGE_O && L64a::STAGE_O && L64b::STAGE_O, "D<=128 layouts should stage O");
  using L128w = fah::Layout<128, 176, FAH_ST128, 2>;
  using L256s = fah::Layout<256, 64, 2, 2>;  // short causal D=256
  // No room beside the K/V ring: O is staged in the V ring, which must hold both warpgroups' rows.
  EXPECT(!L256::STAGE_O && L256::SMEM == L256::BAR_END + 1024, "D=256 has no dedicated O buffer");
  EXPECT(L256::O_IN_V == (FAH_OV != 0) && L128w::O_IN_V == (FAH_OV != 0) && !L128::O_IN_V, "O_IN_V choice");
  EXPECT(L256s::O_IN_V == (FAH_OV != 0), "O_IN_V choice (short causal D=256)");
  EXPECT(L256::O_BYTES <= 2 * L256::KV_BYTES && L128w::O_BYTES <= 2 * L128w::KV_BYTES &&
             L256s::O_BYTES <= 2 * L256s::KV_BYTES, "O fits the V ring");
  for (int smem : {L128::SMEM, L64a::SMEM, L64b::SMEM, L256::SMEM, L128w::SMEM, L256s::SMEM})
    EXPECT(smem <= 227 * 1024, "smem %d", smem);
  std::printf("epilogue_map_test: smem D128 %d, D64 %d/%d, D256 %d; %d failure(s)\n", L128::SMEM, L64a::SMEM,
              L64b::SMEM, L256::SMEM, g_failures);
  return g_failures ? 1 : 0;
}
