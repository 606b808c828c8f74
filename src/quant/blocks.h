// Quantized block layouts, byte-for-byte as stored in GGUF files made by llama.cpp.
//
// Element i of a block is reconstructed as described next to each struct. Sizes are
// asserted so that a layout change can never silently break file compatibility.
#pragma once

#include <cstdint>

#include "core/fp16.h"

namespace strata {

constexpr int kQK = 32;    // elements per block of the legacy formats
constexpr int kQK_K = 256;  // elements per super-block of the K-quants
constexpr int kKScaleBytes = 12;

// x[i] = d * (q[i] - 8), q 4-bit: qs[j] low nibble = element j, high nibble = element j+16.
struct BlockQ4_0 {
  fp16_t d;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// x[i] = d * q[i] + m, same nibble order as Q4_0.
struct BlockQ4_1 {
  fp16_t d;
  fp16_t m;
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x[i] = d * (q[i] - 16), q 5-bit: low 4 bits as Q4_0, bit 4 of element j in bit j of qh (LE u32).
struct BlockQ5_0 {
  fp16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x[i] = d * q[i] + m, 5-bit q packed as Q5_0.
struct BlockQ5_1 {
  fp16_t d;
  fp16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x[i] = d * qs[i].
struct BlockQ8_0 {
  fp16_t d;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Activation format: x[i] = d * qs[i], s = d * sum(qs).
struct BlockQ8_1 {
  fp16_t d;
  fp16_t s;
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_1) == 36);

// 16 sub-blocks of 16: x = d * (scales[j] & 0xF) * q - dmin * (scales[j] >> 4), q 2-bit.
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  fp16_t d;
  fp16_t dmin;
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 sub-blocks of 16: x = d * (scale6[j] - 32) * (q - 4 * !hbit), q 2 low bits + hmask bit.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[kKScaleBytes];  // 16 packed 6-bit scales
  fp16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110);

// 8 sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], 6-bit sc/m packed in scales, q 4-bit.
struct BlockQ4_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// As Q4_K with a fifth bit per element in qh.
struct BlockQ5_K {
  fp16_t d;
  fp16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16: x = d * scales[j] * (q - 32), q 6-bit = 4 low bits (ql) + 2 high (qh).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  fp16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210);

// Activation format for K-quant dot products: x = d * qs, bsums[j] = sum of qs in group j of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace strata
