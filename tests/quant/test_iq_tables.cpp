// The IQ grids and value tables reproduced from ggml-common.h (quant/iq_tables.cpp): their
// structure as the format defines it, so that a transcription error shows. Every grid lists
// distinct lattice points of the format's levels in strictly increasing order (as ggml builds
// them from sorted indices), and a few entries are checked against the published values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "quant/iq_tables.h"

namespace strata {
namespace {

// Checks count entries of bytes_per_entry bytes: every byte in `levels`, entries strictly
// increasing when compared as digits from the most significant byte (signed for IQ1).
template <typename T>
void expect_grid(const T* grid, int count, int bytes_per_entry, const std::set<int>& levels, bool is_signed) {
  auto key = [&](T v) {
    uint64_t k = 0;
    for (int b = bytes_per_entry - 1; b >= 0; --b) {
      const int byte = static_cast<int>((static_cast<uint64_t>(v) >> (8 * b)) & 0xFF);
      k = k * 256 + static_cast<uint64_t>(is_signed ? (byte ^ 0x80) : byte);
    }
    return k;
  };
  for (int i = 0; i < count; ++i) {
    for (int b = 0; b < bytes_per_entry; ++b) {
      int byte = static_cast<int>((static_cast<uint64_t>(grid[i]) >> (8 * b)) & 0xFF);
      if (is_signed) byte = static_cast<int8_t>(byte);
      ASSERT_TRUE(levels.count(byte)) << "entry " << i << " byte " << b;
    }
    if (i > 0) {
      ASSERT_LT(key(grid[i - 1]), key(grid[i])) << "entry " << i;
    }
  }
}

TEST(IqTables, GridsHoldSortedDistinctLatticePoints) {
  expect_grid(kIq2xxsGrid, 256, 8, {8, 25, 43}, false);
  expect_grid(kIq2xsGrid, 512, 8, {8, 25, 43}, false);
  expect_grid(kIq2sGrid, 1024, 8, {8, 25, 43}, false);
  expect_grid(kIq3xxsGrid, 256, 4, {4, 12, 20, 28, 36, 44, 52, 62}, false);
  expect_grid(kIq3sGrid, 512, 4, {1, 3, 5, 7, 9, 11, 13, 15}, false);
  expect_grid(kIq1sGrid, 2048, 8, {-1, 0, 1}, true);
}

TEST(IqTables, PublishedEntries) {
  // First, second and last rows of ggml-common.h's tables.
  EXPECT_EQ(kIq2xxsGrid[1], 0x080808080808082bull);
  EXPECT_EQ(kIq2xxsGrid[255], 0x2b2b2b1908081908ull);
  EXPECT_EQ(kIq2xsGrid[7], 0x080808080819192bull);
  EXPECT_EQ(kIq2xsGrid[511], 0x2b2b2b2b2b2b2b2bull);
  EXPECT_EQ(kIq2sGrid[1022], 0x2b2b2b2b2b082b08ull);
  EXPECT_EQ(kIq3xxsGrid[5], 0x04040c3eu);
  EXPECT_EQ(kIq3xxsGrid[255], 0x3e341c04u);
  EXPECT_EQ(kIq3sGrid[511], 0x0f0f0101u);
  EXPECT_EQ(kIq1sGrid[1], 0xffffffffffffff01ull);
  EXPECT_EQ(kIq1sGrid[2047], 0x0101010101010101ull);
  const int8_t iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  const int8_t fp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(kIq4nlValues[i], iq4nl[i]) << i;
  for (int i = 0; i < 16; ++i) EXPECT_EQ(kMxfp4Values[i], fp4[i]) << i;
}

// kIq1Grid8Delta, the x86 IQ1 kernels' grid: every byte of kIq1sGrid times 8 plus or minus 1, as a signed
// byte.
TEST(IqTables, Iq1GridTimes8WithDelta) {
  for (int d = 0; d < 2; ++d)
    for (int i = 0; i < 2048; ++i)
      for (int b = 0; b < 8; ++b) {
        const auto g = static_cast<int8_t>((kIq1sGrid[i] >> (8 * b)) & 0xFF);
        const auto w =
            static_cast<int8_t>((kIq1Grid8Delta[static_cast<size_t>(d << 11 | i)] >> (8 * b)) & 0xFF);
        ASSERT_EQ(w, 8 * g + (d ? -1 : 1)) << "delta " << d << " entry " << i << " byte " << b;
      }
}

TEST(IqTables, SignsAndScalesHelpers) {
  // ggml's ksigns_iq2xs starts 0, 129, 130, 3, 132, 5, 6, 135 and ends 252, 125, 126, 255.
  const uint8_t head[8] = {0, 129, 130, 3, 132, 5, 6, 135}, tail[4] = {252, 125, 126, 255};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(iq_signs_from7(static_cast<uint32_t>(i)), head[i]) << i;
  for (int i = 0; i < 4; ++i) EXPECT_EQ(iq_signs_from7(static_cast<uint32_t>(124 + i)), tail[i]) << i;
  EXPECT_EQ(mxfp4_scale(127), 0.5f);
  EXPECT_EQ(mxfp4_scale(128), 1.0f);
  EXPECT_EQ(mxfp4_scale(0), std::ldexp(1.0f, -128));
  EXPECT_EQ(mxfp4_scale(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(mxfp4_scale(2), std::ldexp(1.0f, -126));
  EXPECT_EQ(mxfp4_scale(254), std::ldexp(1.0f, 126));
}

}  // namespace
}  // namespace strata
