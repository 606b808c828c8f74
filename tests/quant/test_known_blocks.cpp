// Dequantization of hand-built blocks: every expected value below is derived by hand from the
// GGUF block definitions (see the comment on each case), not produced by the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "quant/blocks.h"
#include "quant/quantize.h"

namespace strata {
namespace {

// fp16 bit patterns used below.
constexpr fp16_t kHalfZero = 0x0000, kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400,
                 kHalfEighth = 0x3000, kHalfTwo = 0x4000, kHalfMinusOne = 0xBC00;

template <typename Block>
std::vector<float> decode(TensorType type, const Block& b, int n) {
  std::vector<float> y(n);
  dequantize_row(type, &b, y.data(), n);
  return y;
}

TEST(KnownBlocks, FloatTypes) {
  const fp16_t h[] = {0x3C00, 0xC000, 0x7BFF, 0x0001, 0x7C00, 0x8000, 0x3555};
  std::vector<float> y(7);
  dequantize_row(TensorType::F16, h, y.data(), 7);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 65504.0f);
  EXPECT_EQ(y[3], std::ldexp(1.0f, -24));  // smallest subnormal half
  EXPECT_EQ(y[4], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(y[5]) && y[5] == 0.0f);
  EXPECT_EQ(y[6], 0.333251953125f);  // 2^-2 * (1 + 341/1024)

  const bf16_t b[] = {0x3F80, 0xC049, 0x0001};
  dequantize_row(TensorType::BF16, b, y.data(), 3);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.140625f);              // -(1 + 73/128) * 2
  EXPECT_EQ(y[2], std::ldexp(1.0f, -133));  // float bits 0x00010000

  const float f[] = {1.5f, -0.0f, 3e-42f};
  dequantize_row(TensorType::F32, f, y.data(), 3);
  EXPECT_EQ(std::memcmp(f, y.data(), sizeof f), 0);
}

TEST(KnownBlocks, Q4_0) {
  // x[j] = d * (low nibble - 8), x[j + 16] = d * (high nibble - 8).
  BlockQ4_0 b{};
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = decode(TensorType::Q4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (j - 8) * 0.5f) << j;
    EXPECT_EQ(y[j + 16], (7 - j) * 0.5f) << j;
  }
}

TEST(KnownBlocks, Q4_1) {
  // x = d * q + m with d = 0.25, m = -1.
  BlockQ4_1 b{};
  b.d = kHalfQuarter;
  b.m = kHalfMinusOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>((15 - j) | (j << 4));
  const auto y = decode(TensorType::Q4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], (15 - j) * 0.25f - 1.0f) << j;
    EXPECT_EQ(y[j + 16], j * 0.25f - 1.0f) << j;
  }
}

TEST(KnownBlocks, Q5_0) {
  // Bit 4 of element j is bit j of the little-endian u32 qh.
  BlockQ5_0 b{};
  b.d = kHalfOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (j << 4));
  const uint8_t qh_high_half[4] = {0x00, 0x00, 0xFF, 0xFF};  // elements 16..31
  std::memcpy(b.qh, qh_high_half, 4);
  auto y = decode(TensorType::Q5_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j - 16.0f) << j;
    EXPECT_EQ(y[j + 16], static_cast<float>(j)) << j;
  }
  const uint8_t qh_odd_low[4] = {0xAA, 0xAA, 0x00, 0x00};  // odd elements below 16
  std::memcpy(b.qh, qh_odd_low, 4);
  y = decode(TensorType::Q5_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], j + (j % 2 ? 16.0f : 0.0f) - 16.0f) << j;
    EXPECT_EQ(y[j + 16], j - 16.0f) << j;
  }
}

TEST(KnownBlocks, Q5_1) {
  // x = d * q + m, d = 0.5, m = 2; qh bit 0 (element 0) and bit 31 (element 31) set.
  BlockQ5_1 b{};
  b.d = kHalfHalf;
  b.m = kHalfTwo;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(15 - j);
  const uint8_t qh[4] = {0x01, 0x00, 0x00, 0x80};
  std::memcpy(b.qh, qh, 4);
  const auto y = decode(TensorType::Q5_1, b, 32);
  EXPECT_EQ(y[0], 17.5f);  // (15 + 16) * 0.5 + 2
  for (int j = 1; j < 16; ++j) EXPECT_EQ(y[j], (15 - j) * 0.5f + 2.0f) << j;
  for (int j = 16; j < 31; ++j) EXPECT_EQ(y[j], 2.0f) << j;
  EXPECT_EQ(y[31], 10.0f);  // 16 * 0.5 + 2
}

TEST(KnownBlocks, Q8_0AndQ8_1) {
  BlockQ8_0 b{};
  b.d = kHalfEighth;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(8 * j - 128);
  auto y = decode(TensorType::Q8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], j - 16.0f) << j;

  BlockQ8_1 c{};
  c.d = kHalfQuarter;
  c.s = 0x1234;  // the block sum does not enter the values
  for (int j = 0; j < 32; ++j) c.qs[j] = static_cast<int8_t>(31 - 2 * j);
  y = decode(TensorType::Q8_1, c, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], (31 - 2 * j) * 0.25f) << j;
}

TEST(KnownBlocks, Q8_K) {
  BlockQ8_K b{};
  b.d = -0.5f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(j - 128);
  const auto y = decode(TensorType::Q8_K, b, 256);
  for (int j = 0; j < 256; ++j) EXPECT_EQ(y[j], -0.5f * (j - 128)) << j;
}

TEST(KnownBlocks, Q2_K) {
  // Bit pair p of byte l (of each half's 32 bytes) is element 32 p + l of that half.
  BlockQ2_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfZero;
  std::memset(b.scales, 0x01, sizeof b.scales);  // sc = 1, m = 0
  std::memset(b.qs, 0xE4, sizeof b.qs);          // pairs 0, 1, 2, 3
  auto y = decode(TensorType::Q2_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], static_cast<float>((e % 128) / 32)) << e;

  // Sub-block j: sc = j, m = 15 - j, d = 0.5, dmin = 1, every q = 1: x = 0.5 j - (15 - j).
  b.d = kHalfHalf;
  b.dmin = kHalfOne;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::memset(b.qs, 0x55, sizeof b.qs);
  y = decode(TensorType::Q2_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], 1.5f * (e / 16) - 15.0f) << e;

  // qs[i] = i: element e reads byte 32 * (e / 128) + e % 32, bit pair (e % 128) / 32.
  b.d = kHalfOne;
  b.dmin = kHalfZero;
  std::memset(b.scales, 0x01, sizeof b.scales);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i);
  y = decode(TensorType::Q2_K, b, 256);
  const std::pair<int, float> spots[] = {{0, 0},   {5, 1},   {37, 1},  {70, 0},
                                         {130, 2}, {163, 0}, {223, 3}, {255, 0}};
  for (auto [e, v] : spots) EXPECT_EQ(y[e], v) << e;
}

TEST(KnownBlocks, Q3_K) {
  // All 16 scales +1 (biased 33 = 0b10'0001): low nibbles 1, top bits 0b10 in every field.
  BlockQ3_K b{};
  b.d = kHalfOne;
  std::memset(b.scales, 0x11, 8);
  std::memset(b.scales + 8, 0xAA, 4);
  std::memset(b.qs, 0xE4, sizeof b.qs);
  std::memset(b.hmask, 0xFF, sizeof b.hmask);  // high bit set: no -4
  auto y = decode(TensorType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], static_cast<float>((e % 128) / 32)) << e;
  std::memset(b.hmask, 0x00, sizeof b.hmask);
  y = decode(TensorType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], (e % 128) / 32 - 4.0f) << e;

  // hmask[l] = 1 << (l % 8): element e keeps its high bit iff (e % 32) % 8 == e / 32.
  for (int l = 0; l < 32; ++l) b.hmask[l] = static_cast<uint8_t>(1 << (l % 8));
  y = decode(TensorType::Q3_K, b, 256);
  const std::pair<int, float> spots[] = {{0, 0}, {1, -4}, {33, 1}, {34, -3}, {226, -1}, {231, 3}};
  for (auto [e, v] : spots) EXPECT_EQ(y[e], v) << e;

  // Scales j - 8 (biased j + 24): bytes 0-7 hold low nibbles of j and j + 8, bytes 8-11 the top
  // bits (1 for j < 8, 2 for j >= 8) at shifts 0, 2, 4, 6 -> 0b10'10'01'01.
  const uint8_t scales[12] = {0x08, 0x19, 0x2A, 0x3B, 0x4C, 0x5D, 0x6E, 0x7F, 0xA5, 0xA5, 0xA5, 0xA5};
  std::memcpy(b.scales, scales, 12);
  std::memset(b.hmask, 0xFF, sizeof b.hmask);
  std::memset(b.qs, 0x55, sizeof b.qs);  // every q = 1
  y = decode(TensorType::Q3_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], e / 16 - 8.0f) << e;
}

TEST(KnownBlocks, Q4_K) {
  // sc_j = j + 1, m_j = 2 j (all below 16: no top bits). Bytes 0-3: sc_0..3, 4-7: m_0..3,
  // 8-11: sc_j | m_j << 4 for j = 4..7. q: low nibble 1 (even sub-blocks), high nibble 3 (odd).
  BlockQ4_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  const uint8_t scales[12] = {1, 2, 3, 4, 0, 2, 4, 6, 0x85, 0xA6, 0xC7, 0xE8};
  std::memcpy(b.scales, scales, 12);
  std::memset(b.qs, 0x31, sizeof b.qs);
  auto y = decode(TensorType::Q4_K, b, 256);
  const float expected[8] = {1, 5, 1, 9, 1, 13, 1, 17};  // (j + 1) q - j
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], expected[e / 32]) << e;

  // Top bits: sc_4 = 53 (low 5 in byte 8, top 3 in bits 6-7 of byte 0), m_7 = 42 (low 0xA in
  // the high nibble of byte 11, top 2 in bits 6-7 of byte 7); all other scales and mins 0.
  const uint8_t high[12] = {0xC0, 0, 0, 0, 0, 0, 0, 0x80, 0x05, 0, 0, 0xA0};
  std::memcpy(b.scales, high, 12);
  b.dmin = kHalfOne;
  std::memset(b.qs, 0x11, sizeof b.qs);
  y = decode(TensorType::Q4_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], e / 32 == 4 ? 53.0f : e / 32 == 7 ? -42.0f : 0.0f) << e;
}

TEST(KnownBlocks, Q5_K) {
  // Every sc = 1, m = 0. The fifth bit of sub-block j's elements is bit j of qh[e % 32].
  BlockQ5_K b{};
  b.d = kHalfOne;
  b.dmin = kHalfZero;
  const uint8_t scales[12] = {1, 1, 1, 1, 0, 0, 0, 0, 0x01, 0x01, 0x01, 0x01};
  std::memcpy(b.scales, scales, 12);
  std::memset(b.qh, 0xA5, sizeof b.qh);  // sub-blocks 0, 2, 5, 7
  auto y = decode(TensorType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], (j == 0 || j == 2 || j == 5 || j == 7) ? 16.0f : 0.0f) << e;
  }
  std::memset(b.qh, 0, sizeof b.qh);
  std::memset(b.qs, 0xF7, sizeof b.qs);  // low nibble 7 (even sub-blocks), high 15 (odd)
  y = decode(TensorType::Q5_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], (e / 32) % 2 ? 15.0f : 7.0f) << e;
}

TEST(KnownBlocks, Q6_K) {
  // q = 0 everywhere -> x = d * sc_j * (0 - 32) with d = 0.5, sc_j = j - 8.
  BlockQ6_K b{};
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j - 8);
  auto y = decode(TensorType::Q6_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], -16.0f * (e / 16 - 8)) << e;

  // ql = 0x21 (low nibble 1 for k < 2, high nibble 2 for k >= 2), qh fields k = 0, 1, 2, 3.
  b.d = kHalfOne;
  std::memset(b.scales, 1, sizeof b.scales);
  std::memset(b.ql, 0x21, sizeof b.ql);
  std::memset(b.qh, 0xE4, sizeof b.qh);
  y = decode(TensorType::Q6_K, b, 256);
  const float by_k[4] = {-31, -15, 2, 18};  // q = 1, 17, 34, 50
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], by_k[(e % 128) / 32]) << e;

  // ql[i] = i, qh = 0: element (half h, k, l) reads ql[64 h + l + 32 (k % 2)], low nibble for
  // k < 2, high nibble for k >= 2.
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i);
  std::memset(b.qh, 0, sizeof b.qh);
  y = decode(TensorType::Q6_K, b, 256);
  const std::pair<int, float> low_spots[] = {{0, -32},   {5, -27},   {37, -27},  {70, -32},
                                             {127, -29}, {145, -31}, {255, -25}, {212, -27}};
  for (auto [e, v] : low_spots) EXPECT_EQ(y[e], v) << e;

  // ql = 0, qh[i] = i: element (h, k, l) takes bits 2k..2k+1 of qh[32 h + l] as q's top bits.
  std::memset(b.ql, 0, sizeof b.ql);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i);
  y = decode(TensorType::Q6_K, b, 256);
  const std::pair<int, float> high_spots[] = {{3, 16}, {35, -32}, {173, 16}, {255, -32}, {223, 16}};
  for (auto [e, v] : high_spots) EXPECT_EQ(y[e], v) << e;
}

TEST(KnownBlocks, ScalePackingHelpersRoundTrip) {
  // Every (sc, m) pair value reaches its slot and nothing else: pack one non-zero pair at a time.
  for (int j = 0; j < 8; ++j) {
    for (int v : {1, 15, 16, 33, 63}) {
      uint8_t sc[8] = {}, m[8] = {}, packed[12];
      sc[j] = static_cast<uint8_t>(v);
      m[7 - j] = static_cast<uint8_t>(63 - v);
      pack_k4_scale_min(sc, m, packed);
      for (int k = 0; k < 8; ++k) {
        uint8_t s_out, m_out;
        unpack_k4_scale_min(packed, k, &s_out, &m_out);
        EXPECT_EQ(s_out, sc[k]) << j << " " << v << " " << k;
        EXPECT_EQ(m_out, m[k]) << j << " " << v << " " << k;
      }
    }
  }
  for (int j = 0; j < 16; ++j) {
    for (int v : {-32, -1, 0, 15, 31}) {
      int8_t sc[16];
      for (int k = 0; k < 16; ++k) sc[k] = static_cast<int8_t>(k == j ? v : -(k % 32));
      uint8_t packed[12];
      pack_q3_k_scales(sc, packed);
      int8_t out[16];
      unpack_q3_k_scales(packed, out);
      for (int k = 0; k < 16; ++k) EXPECT_EQ(out[k], sc[k]) << j << " " << v << " " << k;
    }
  }
}

}  // namespace
}  // namespace strata
