// NEON helpers of the interleaved-layout kernels (packed_gemm_{neon,dotprod,i8mm}.cpp): the
// weights of one packed block as signed bytes, one 16-byte register = 4 rows x 4 quants (a
// quarter of a 64-byte chunk, see packed_kernels.h). Internal linkage only: each including file
// gets its own copy compiled for its level (DEVELOPERS.md).
//
// Signed values: Q4_0 q - 8, Q5_0 q - 16, Q4_1 / Q5_1 q (0..31), Q8_0 q, IQ4_NL its grid value,
// so the kernels need no zero point (the activation's bias is not used) and take signed x signed
// products (sdot / smull / smmla).
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "core/fp16.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

using namespace packed;

// 16 bits -> 16 bytes, byte n = 16 where bit n is set.
static inline int8x16_t fifth_bits(const uint8_t* mask) {
  uint16_t bits;
  std::memcpy(&bits, mask, 2);
  const uint8x16_t bytes =
      vqtbl1q_u8(vreinterpretq_u8_u16(vdupq_n_u16(bits)), vcombine_u8(vdup_n_u8(0), vdup_n_u8(1)));
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t set = vtstq_u8(bytes, vld1q_u8(kBit));
  return vreinterpretq_s8_u8(vandq_u8(set, vdupq_n_u8(16)));
}

// Element groups (j, j + 4) of rows 4q..4q+3 of one packed block, j = 0..3 (the 4-bit layouts:
// low and high nibbles of chunk j), or groups (2j, 2j + 1) for Q8_0 (chunks 2j and 2j + 1), as
// signed values.
template <Kind K>
static inline void signed_quads(const uint8_t* qs, int j, int q, int8x16_t& lo, int8x16_t& hi) {
  if constexpr (K == Kind::Q8_0) {
    const uint8x16_t flip = vdupq_n_u8(0x80);  // stored as q + 128
    lo = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qs + 64 * (2 * j) + 16 * q), flip));
    hi = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qs + 64 * (2 * j + 1) + 16 * q), flip));
  } else {
    const uint8x16_t p = vld1q_u8(qs + 64 * j + 16 * q);
    const uint8x16_t l = vandq_u8(p, vdupq_n_u8(0x0f)), h = vshrq_n_u8(p, 4);
    if constexpr (K == Kind::IQ4_NL) {
      const int8x16_t table = vld1q_s8(kIq4nlValues);
      lo = vqtbl1q_s8(table, l);
      hi = vqtbl1q_s8(table, h);
    } else {
      lo = vreinterpretq_s8_u8(l);
      hi = vreinterpretq_s8_u8(h);
      if constexpr (kHasQh<K>) {  // bit 4r+i of mask g: the fifth bit of element 4g+i of row r
        lo = vorrq_s8(lo, fifth_bits(qs + 256 + 8 * j + 2 * q));
        hi = vorrq_s8(hi, fifth_bits(qs + 256 + 8 * (j + 4) + 2 * q));
      }
      if constexpr (K == Kind::Q4_0) {
        lo = vsubq_s8(lo, vdupq_n_s8(8));
        hi = vsubq_s8(hi, vdupq_n_s8(8));
      } else if constexpr (K == Kind::Q5_0) {
        lo = vsubq_s8(lo, vdupq_n_s8(16));
        hi = vsubq_s8(hi, vdupq_n_s8(16));
      }
    }
  }
}

// The activation element groups the two registers of signed_quads(j) multiply.
template <Kind K>
constexpr int lo_group(int j) {
  return K == Kind::Q8_0 ? 2 * j : j;
}
template <Kind K>
constexpr int hi_group(int j) {
  return K == Kind::Q8_0 ? 2 * j + 1 : j + 4;
}

// Rows 4q..4q+3's fp16 scales (or mins at offset 32) of one packed block.
static inline float32x4_t quad_scales(const uint8_t* blk, int q) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(blk + 8 * q))));
}

// Stores lanes of v as rows r0..r0+3 of token c (only those < n_rows).
static inline void store_quad(float32x4_t v, float* y, int r0, int n_rows) {
  if (r0 + 4 <= n_rows) {
    vst1q_f32(y + r0, v);
    return;
  }
  float tmp[4];
  vst1q_f32(tmp, v);
  for (int i = 0; r0 + i < n_rows; ++i) y[r0 + i] = tmp[i];
}

}  // namespace
}  // namespace strata::cpu
