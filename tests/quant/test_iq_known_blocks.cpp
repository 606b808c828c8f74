// Dequantization of hand-built IQ, ternary and MXFP4 blocks. Every expected value is derived here
// from ggml's block definitions (formula next to each case) and the published grid entries the
// block uses, written out literally; none comes from the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/blocks.h"
#include "quant/quantize.h"

namespace strata {
namespace {

constexpr fp16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfTwo = 0x4000;
const int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
const int kFp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

template <typename Block>
std::vector<float> decode(TensorType type, const Block& b) {
  const int64_t n = type_traits(type).block_size;
  std::vector<float> y(static_cast<size_t>(n));
  dequantize_row(type, &b, y.data(), n);
  return y;
}

// Byte j of a published grid entry, as unsigned magnitude or (IQ1) int8.
int byte_of(uint64_t entry, int j, bool is_signed = false) {
  const int b = static_cast<int>((entry >> (8 * j)) & 0xFF);
  return is_signed ? static_cast<int8_t>(b) : b;
}

TEST(IqKnownBlocks, IQ4_NL) {
  // x[j] = d * kv[low nibble of qs[j]], x[j + 16] = d * kv[high nibble].
  BlockIQ4_NL b{};
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(TensorType::IQ4_NL, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIq4nl[j]) << j;
    EXPECT_EQ(y[j + 16], 0.5f * kIq4nl[15 - j]) << j;
  }
}

TEST(IqKnownBlocks, IQ4_XS) {
  // x = d * (ls - 32) * kv[q]; ls of sub-block ib: low nibble of scales_l[ib / 2] (nibble ib % 2),
  // high 2 bits at scales_h bits 2 ib. Sub-block 0: ls 33, 1: ls 0, 2..6: ls 32, 7: ls 63.
  BlockIQ4_XS b{};
  b.d = kHalfHalf;
  b.scales_l[0] = 0x01;  // ls0 & 15 = 1, ls1 & 15 = 0
  b.scales_l[3] = 0xF0;  // ls6 & 15 = 0, ls7 & 15 = 15
  b.scales_h = static_cast<uint16_t>((2 << 0) | (0 << 2) | (3u << 14));
  for (int ib = 2; ib <= 6; ++ib) b.scales_h = static_cast<uint16_t>(b.scales_h | (2 << (2 * ib)));
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(TensorType::IQ4_XS, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * kIq4nl[j]) << j;
    EXPECT_EQ(y[16 + j], 0.5f * kIq4nl[15 - j]) << j;
  }
  for (int e = 32; e < 64; ++e) EXPECT_EQ(y[e], 0.5f * -32 * -127) << e;  // all q = 0: kv -127
  for (int e = 64; e < 224; ++e) EXPECT_EQ(y[e], 0.0f) << e;
  for (int e = 224; e < 256; ++e) EXPECT_EQ(y[e], 0.5f * 31 * -127) << e;
}

TEST(IqKnownBlocks, MXFP4) {
  // x = 2^(e - 128) * fp4[q] (ggml's E8M0 "half" scale): e = 129 gives 2.
  BlockMXFP4 b{};
  b.e = 129;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = decode(TensorType::MXFP4, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 2.0f * kFp4[j]) << j;
    EXPECT_EQ(y[16 + j], 2.0f * kFp4[15 - j]) << j;
  }
  b.e = 0;  // the subnormal end: 2^-128
  y = decode(TensorType::MXFP4, b);
  EXPECT_EQ(y[7], 12.0f * std::ldexp(1.0f, -128));
  EXPECT_EQ(y[16 + 2], -6.0f * std::ldexp(1.0f, -128));  // high nibble 15 - 2 = 13: fp4 -6
}

TEST(IqKnownBlocks, TQ2_0) {
  // x[128 c + 32 l + m] = d * (((qs[32 c + m] >> 2 l) & 3) - 1).
  BlockTQ2_0 b{};
  b.d = kHalfHalf;
  for (int m = 0; m < 64; ++m)
    b.qs[m] = static_cast<uint8_t>((m % 3) | (((m + 1) % 3) << 2) | (((m + 2) % 4) << 4) | (3 << 6));
  const auto y = decode(TensorType::TQ2_0, b);
  for (int c = 0; c < 2; ++c)
    for (int m = 0; m < 32; ++m) {
      const int mm = 32 * c + m;
      const int q[4] = {mm % 3, (mm + 1) % 3, (mm + 2) % 4, 3};
      for (int l = 0; l < 4; ++l)
        EXPECT_EQ(y[128 * c + 32 * l + m], 0.5f * (q[l] - 1)) << c << " " << l << " " << m;
    }
}

TEST(IqKnownBlocks, TQ1_0) {
  // Trits t in {0, 1, 2}, x = d * (t - 1). A byte of k trits (k = 5, or 4 for qh with a trailing
  // zero trit) is ceil(256 * v / 243), v = sum_n t_n 3^(4 - n). Elements: qs[m] trit n ->
  // 32 n + m; qs[32 + m] trit n -> 160 + 16 n + m; qh[j] trit n -> 240 + 4 n + j.
  int t[256];
  for (int e = 0; e < 256; ++e) t[e] = (e * 7 + e / 5) % 3;
  auto encode = [](const int* trits, int k) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = 3 * v + (n < k ? trits[n] : 0);
    return static_cast<uint8_t>((256 * v + 242) / 243);
  };
  BlockTQ1_0 b{};
  b.d = kHalfTwo;
  int tr[5];
  for (int m = 0; m < 32; ++m) {
    for (int n = 0; n < 5; ++n) tr[n] = t[32 * n + m];
    b.qs[m] = encode(tr, 5);
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 5; ++n) tr[n] = t[160 + 16 * n + m];
    b.qs[32 + m] = encode(tr, 5);
  }
  for (int j = 0; j < 4; ++j) {
    for (int n = 0; n < 4; ++n) tr[n] = t[240 + 4 * n + j];
    b.qh[j] = encode(tr, 4);
  }
  const auto y = decode(TensorType::TQ1_0, b);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 2.0f * (t[e] - 1)) << e;
}

TEST(IqKnownBlocks, IQ2_XXS) {
  // Sub-block ib: bytes 8 ib..8 ib+3 index iq2xxs_grid, u32 at 8 ib + 4: 4 x 7 sign bits (the
  // eighth makes the count of negatives even) and s in bits 28..31; x = d (0.5 + s) / 4 grid sign.
  const uint64_t g0 = 0x0808080808080808ull, g1 = 0x080808080808082bull, g2 = 0x0808080808081919ull,
                 g255 = 0x2b2b2b1908081908ull;  // iq2xxs_grid[0], [1], [2], [255]
  BlockIQ2_XXS b{};
  b.d = kHalfOne;
  const uint8_t idx[4] = {1, 0, 255, 2};
  // group 0: elements 0, 1 negative (even); group 1: element 0 (odd: element 7 too); group 2:
  // none; group 3: elements 0..6 (odd: all eight). s = 5.
  const uint32_t aux = 0x3u | (0x1u << 7) | (0x0u << 14) | (0x7Fu << 21) | (5u << 28);
  std::memcpy(b.qs, idx, 4);
  std::memcpy(b.qs + 2, &aux, 4);
  const auto y = decode(TensorType::IQ2_XXS, b);
  const float db = 1.0f * (0.5f + 5) * 0.25f;
  const uint64_t grids[4] = {g1, g0, g255, g2};
  const uint8_t neg[4] = {0x03, 0x81, 0x00, 0xFF};
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(y[8 * l + j], db * byte_of(grids[l], j) * ((neg[l] >> j) & 1 ? -1.0f : 1.0f))
          << l << " " << j;
  for (int e = 32; e < 256; ++e) EXPECT_EQ(y[e], 0.125f * 8) << e;  // index 0, s = 0
}

TEST(IqKnownBlocks, IQ2_XS) {
  // qs[g] = 9-bit iq2xs_grid index | 7 sign bits << 9; scale nibble per 16 elements:
  // x = d (0.5 + s) / 4 grid sign.
  const uint64_t g511 = 0x2b2b2b2b2b2b2b2bull, g7 = 0x080808080819192bull, g0 = 0x0808080808080808ull;
  BlockIQ2_XS b{};
  b.d = kHalfHalf;
  b.qs[0] = static_cast<uint16_t>(511 | (0x55 << 9));  // elements 0, 2, 4, 6 negative (even)
  b.qs[2] = 7;
  b.scales[0] = 0x31;  // s = 1 for elements 0..15, 3 for 16..31
  const auto y = decode(TensorType::IQ2_XS, b);
  const float lo = 0.5f * (0.5f + 1) * 0.25f, hi = 0.5f * (0.5f + 3) * 0.25f;
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(y[j], lo * byte_of(g511, j) * (j % 2 == 0 ? -1.0f : 1.0f)) << j;
    EXPECT_EQ(y[8 + j], lo * byte_of(g0, j)) << j;
    EXPECT_EQ(y[16 + j], hi * byte_of(g7, j)) << j;
  }
}

TEST(IqKnownBlocks, IQ2_S) {
  // Index of group g: qs[g] | ((qh[g / 4] << (8 - 2 (g % 4))) & 0x300); signs: qs[32 + g].
  const uint64_t g1023 = 0x2b2b2b2b2b2b2b2bull, g1022 = 0x2b2b2b2b2b082b08ull;
  BlockIQ2_S b{};
  b.d = kHalfOne;
  b.qs[0] = 0xFF;
  b.qs[1] = 0xFE;
  b.qh[0] = 0x0F;  // high bits 3 for groups 0 and 1
  b.qs[32] = 0x81;
  const auto y = decode(TensorType::IQ2_S, b);
  const float db = 0.5f * 0.25f;  // s = 0
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(y[j], db * byte_of(g1023, j) * (j == 0 || j == 7 ? -1.0f : 1.0f)) << j;
    EXPECT_EQ(y[8 + j], db * byte_of(g1022, j)) << j;
  }
}

TEST(IqKnownBlocks, IQ3_XXS) {
  // qs[0..63]: iq3xxs_grid indices of 4 elements; u32 at qs[64 + 4 ib]: 4 x 7 sign bits, s on top:
  // x = d (0.5 + s) / 2 grid sign.
  const uint32_t g1 = 0x04040414u, g255 = 0x3e341c04u;
  BlockIQ3_XXS b{};
  b.d = kHalfTwo;
  b.qs[0] = 1;
  b.qs[1] = 255;
  const uint32_t aux = 0x1u | (1u << 28);  // element 0 negative (odd: element 7 too), s = 1
  std::memcpy(b.qs + 64, &aux, 4);
  const auto y = decode(TensorType::IQ3_XXS, b);
  const float db = 2.0f * (0.5f + 1) * 0.5f;
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(y[j], db * byte_of(g1, j) * (j == 0 ? -1.0f : 1.0f)) << j;
    EXPECT_EQ(y[4 + j], db * byte_of(g255, j) * (j == 3 ? -1.0f : 1.0f)) << j;
  }
}

TEST(IqKnownBlocks, IQ3_S) {
  // Entry i of sub-block ib: iq3s_grid[qs[8 ib + i] | bit i of qh[ib] << 8]; signs[4 ib + l] for
  // elements 8 l..8 l+7; x = d (1 + 2 s) grid sign, s a nibble of scales per sub-block.
  const uint32_t g511 = 0x0f0f0101u, g1 = 0x01010103u;
  BlockIQ3_S b{};
  b.d = kHalfOne;
  b.qs[0] = 0xFF;
  b.qs[1] = 1;
  b.qh[0] = 0x01;
  b.signs[0] = 0x10;
  b.scales[0] = 0x02;
  const auto y = decode(TensorType::IQ3_S, b);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(y[j], 5.0f * byte_of(g511, j)) << j;
    EXPECT_EQ(y[4 + j], 5.0f * byte_of(g1, j) * (j == 0 ? -1.0f : 1.0f)) << j;
  }
}

TEST(IqKnownBlocks, IQ1_S) {
  // Group l of sub-block ib: iq1s_grid[qs[4 ib + l] | ((qh[ib] >> 3 l) & 7) << 8]; qh bits 12..14:
  // s, bit 15: delta = -1/8 (else +1/8); x = d (2 s + 1) (grid + delta).
  const uint64_t g2047 = 0x0101010101010101ull, g2046 = 0x01010101010101ffull, g0 = 0xffffffffffffffffull;
  BlockIQ1_S b{};
  b.d = kHalfOne;
  b.qs[0] = 0xFF;
  b.qs[1] = 0xFE;
  b.qh[0] = static_cast<uint16_t>(7 | (7 << 3) | (3 << 12) | 0x8000);
  const auto y = decode(TensorType::IQ1_S, b);
  const uint64_t grids[4] = {g2047, g2046, g0, g0};
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 8; ++j)
      EXPECT_EQ(y[8 * l + j], 7.0f * (byte_of(grids[l], j, true) - 0.125f)) << l << j;
}

TEST(IqKnownBlocks, IQ1_M) {
  // The fp16 scale 0x3C00 (1.0) sits in the top nibbles of the 4 u16 of scales, lowest nibble
  // first; scale of element half h: bits 3 (h % 4) of u16 h / 4. Group g: iq1s_grid[qs[g] |
  // (nibble g of qh & 7) << 8], nibble bit 3: delta = -1/8. x = d (2 s + 1) (grid + delta).
  const uint64_t g2047 = 0x0101010101010101ull, g2046 = 0x01010101010101ffull, g0 = 0xffffffffffffffffull;
  BlockIQ1_M b{};
  const uint16_t sc[4] = {static_cast<uint16_t>(2 | (1 << 3)), 0, 0xC000, 0x3000};
  std::memcpy(b.scales, sc, 8);
  b.qs[0] = 0xFF;
  b.qs[1] = 0xFE;
  b.qh[0] = 0xF7;  // group 0: high bits 7, delta +; group 1: high bits 7, delta -
  const auto y = decode(TensorType::IQ1_M, b);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(y[j], 5.0f * (byte_of(g2047, j, true) + 0.125f)) << j;
    EXPECT_EQ(y[8 + j], 5.0f * (byte_of(g2046, j, true) - 0.125f)) << j;
    EXPECT_EQ(y[16 + j], 3.0f * (byte_of(g0, j, true) + 0.125f)) << j;  // s = 1 for elements 16..31
  }
}

}  // namespace
}  // namespace strata
