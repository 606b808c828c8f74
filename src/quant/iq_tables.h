// Lookup tables and small decoding helpers of the IQ, ternary and MXFP4 types (block layouts in
// quant/blocks.h). The tables are format data from ggml's ggml-common.h (see iq_tables.cpp).
// Grid entries pack one element per byte, element 0 in the lowest byte: unsigned magnitudes for
// the IQ2/IQ3 grids, int8 values in {-1, 0, 1} for IQ1.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "core/fp16.h"

namespace strata {

extern const uint64_t kIq2xxsGrid[256];  // bytes in {8, 25, 43}
extern const uint64_t kIq2xsGrid[512];   // bytes in {8, 25, 43}
extern const uint64_t kIq2sGrid[1024];   // bytes in {8, 25, 43}
extern const uint32_t kIq3xxsGrid[256];  // bytes in {4, 12, 20, 28, 36, 44, 52, 62}
extern const uint32_t kIq3sGrid[512];    // bytes in {1, 3, 5, ..., 15}
extern const uint64_t kIq1sGrid[2048];   // int8 bytes in {-1, 0, 1}
// [d << 11 | i] bytes 8 kIq1sGrid[i] + 1 - 2 d: in {-9, -7, -1, 1, 7, 9} (x86 IQ1 kernels)
extern const std::array<uint64_t, 4096> kIq1Grid8Delta;
// The non-linear 4-bit levels of IQ4_NL / IQ4_XS (ggml's kvalues_iq4nl); also the IQ4_NL KV type's.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
extern const int8_t kMxfp4Values[16];  // E2M1 values, doubled (so that they are integers)

// IQ2_XXS / IQ2_XS / IQ3_XXS store 7 sign bits per group of 8; the eighth makes the number of
// negative elements even (ggml's ksigns_iq2xs). Bit j set: element j of the group is negative.
static inline constexpr uint8_t iq_signs_from7(uint32_t bits7) {
  const uint32_t b = bits7 & 127u;
  return static_cast<uint8_t>(b | ((__builtin_popcount(b) & 1u) << 7));
}

// MXFP4's E8M0 exponent as the scale of the doubled E2M1 values: 2^(e - 128) (ggml's
// GGML_E8M0_TO_FP32_HALF; e = 0 and 1 give the subnormals 2^-128 and 2^-127).
static inline float mxfp4_scale(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IQ4_XS: the 6-bit scale of sub-block ib (0..7), minus its bias of 32: in [-32, 31].
static inline int iq4_xs_scale(uint16_t scales_h, const uint8_t* scales_l, int ib) {
  const int low = (scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
  const int high = (scales_h >> (2 * ib)) & 3;
  return (low | (high << 4)) - 32;
}

// IQ1_M: the fp16 super-block scale, whose 4 nibbles are the top nibbles of the 4 little-endian
// u16 of scales (lowest nibble first).
static inline fp16_t iq1_m_scale(const uint8_t* scales) {
  uint16_t sc[4];
  std::memcpy(sc, scales, sizeof sc);
  return static_cast<fp16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                             (sc[3] & 0xF000));
}

// IQ1_M: the 3-bit scale of the 16 elements h (0..15) of the super-block.
static inline int iq1_m_sub_scale(const uint8_t* scales, int h) {
  uint16_t sc[4];
  std::memcpy(sc, scales, sizeof sc);
  return (sc[h / 4] >> (3 * (h % 4))) & 7;
}

// TQ1_0: trit n (0..4) of a base-3 byte, most significant first (ggml's q * 3^n, then * 3 >> 8).
static inline int tq1_trit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return (q * 3) >> 8;
}

}  // namespace strata
