// Host-only check of the wgmma descriptors (no GPU): for every operand the kernel instantiations
// address (Q per consumer warpgroup, K and V per pipeline stage) and every k-step offset they add,
// the split form the kernel issues, desc_at(desc_lo(base), offset, desc_hi(sbo)), equals the whole
// descriptor of base + offset, make_desc(). The split form is only right while the 14-bit address
// field cannot carry, so this runs over every 1024-byte-aligned position of the tile in the
// shared window that leaves the layout inside 256 KB (the kernel's shared memory is < 228 KB).
// Build and run (from this folder):
//   nvcc -std=c++17 -gencode arch=compute_90a,code=sm_90a -x cu desc_test.cu -o /tmp/dt && /tmp/dt
#include "../../kernels/flash_attention_hopper.cu"

#include <cstdio>

static int g_failures = 0;
static long g_checked = 0;

static void expect_same(uint32_t base, uint32_t off, uint32_t lbo, const char* what, int d, int bn) {
  const uint64_t split = fah::desc_at(fah::desc_lo(base, lbo), off, fah::desc_hi(1024));
  const uint64_t whole = fah::make_desc(base + off, lbo, 1024);
  ++g_checked;
  if (split != whole && ++g_failures <= 20)
    std::printf("FAIL %s D=%d BN=%d base=%u offset=%u: split %llx, whole %llx\n", what, d, bn, base, off,
                (unsigned long long)split, (unsigned long long)whole);
}

// The offsets gemm_s and gemm_pv add, for one Layout, with the tile's Q at sq.
template <int D, int BN, int STAGES, int NWG>
static void check_layout(uint32_t sq) {
  using L = fah::Layout<D, BN, STAGES, NWG>;
  const uint32_t sk = sq + L::Q_BYTES, sv = sk + STAGES * L::KV_BYTES;
  for (int cw = 0; cw < NWG; ++cw)
    for (int kk = 0; kk < D / 16; ++kk)
      expect_same(sq + cw * 64 * 128, (kk / 4) * L::BM * 128 + (kk % 4) * 32, 16, "Q", D, BN);
  for (int st = 0; st < STAGES; ++st) {
    for (int kk = 0; kk < D / 16; ++kk)
      expect_same(sk + st * L::KV_BYTES, (kk / 4) * BN * 128 + (kk % 4) * 32, 16, "K", D, BN);
    for (int kk = 0; kk < BN / 16; ++kk) expect_same(sv + st * L::KV_BYTES, kk * 2048, BN * 128, "V", D, BN);
  }
}

template <int D, int BN, int STAGES, int NWG>
static void check_all_positions() {
  using L = fah::Layout<D, BN, STAGES, NWG>;
  for (uint32_t sq = 0; sq + L::SMEM <= 256u * 1024; sq += 1024) check_layout<D, BN, STAGES, NWG>(sq);
}

int main() {
  // The instantiations attention_forward dispatches to (defaults), and the measured alternatives.
  check_all_positions<64, FAH_BN64, 3, 3>();
  check_all_positions<64, FAH_BN64, 3, 2>();
  check_all_positions<128, FAH_BN128, FAH_ST128, 2>();
  check_all_positions<128, 176, 2, 2>();
  check_all_positions<256, FAH_BN256, 2, 2>();
  check_all_positions<256, 64, 2, 2>();
  // A carry out of the address field must be caught: the split form of an address at 256 KB.
  const uint64_t wrapped = fah::desc_at(fah::desc_lo(255u * 1024, 16), 2048, fah::desc_hi(1024));
  const bool caught = wrapped != fah::make_desc(257u * 1024, 16, 1024);
  std::printf("%ld descriptors checked, %d failure(s); a carry past 256 KB %s\n", g_checked, g_failures,
              caught ? "is detected" : "IS NOT DETECTED");
  if (!caught) ++g_failures;
  std::printf("desc_test: %d failure(s)\n", g_failures);
  return g_failures == 0 ? 0 : 1;
}
