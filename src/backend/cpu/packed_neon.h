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

#include <bit>
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

// Rows 4q..4q+3's bytes at p + 4q as 4 floats (unsigned or signed).
static inline float32x4_t u8x4_to_f32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return vcvtq_f32_u32(vmovl_u16(vget_low_u16(vmovl_u8(vcreate_u8(v)))));
}
static inline float32x4_t i8x4_to_f32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(vcreate_s8(v)))));
}

// x >> s per byte for a run-time s (0..7).
static inline uint8x16_t shr_u8(uint8x16_t x, int s) {
  return vshlq_u8(x, vdupq_n_s8(static_cast<int8_t>(-s)));
}

// Element groups (j, j + 4) of rows 4q..4q+3 of one packed block (a super-block kind: of one
// sub-block), j = 0..3 (the 4-bit layouts: low and high nibbles of chunk j; Q6_K's, Q3_K's and
// Q2_K's lo and hi are element halves 0 and 1), or groups (2j, 2j + 1) for Q8_0 (chunks 2j and
// 2j + 1), as signed values: the quant minus the zero point, or the table value.
template <Kind K>
static inline void signed_quads(const uint8_t* qs, int j, int q, int8x16_t& lo, int8x16_t& hi) {
  if constexpr (K == Kind::Q8_0) {
    const uint8x16_t flip = vdupq_n_u8(0x80);  // stored as q + 128
    lo = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qs + 64 * (2 * j) + 16 * q), flip));
    hi = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(qs + 64 * (2 * j + 1) + 16 * q), flip));
  } else if constexpr (K == Kind::Q3_K || K == Kind::Q2_K) {
    const uint8x16_t three = vdupq_n_u8(3);
    uint8x16_t l = vandq_u8(shr_u8(vld1q_u8(qs + 16 * q), 2 * j), three);
    uint8x16_t h = vandq_u8(shr_u8(vld1q_u8(qs + 64 + 16 * q), 2 * j), three);
    if constexpr (K == Kind::Q3_K) {  // third bits: bit j (half 0) and 4 + j (half 1) of hi
      const uint8x16_t third = shr_u8(vld1q_u8(qs + kQ3kHiOffset + 16 * q), j);
      l = vorrq_u8(l, vshlq_n_u8(vandq_u8(third, vdupq_n_u8(1)), 2));
      h = vorrq_u8(h, vandq_u8(vshrq_n_u8(third, 2), vdupq_n_u8(4)));
      l = vsubq_u8(l, vdupq_n_u8(4));
      h = vsubq_u8(h, vdupq_n_u8(4));
    }
    lo = vreinterpretq_s8_u8(l);
    hi = vreinterpretq_s8_u8(h);
  } else {
    const uint8x16_t p = vld1q_u8(qs + 64 * j + 16 * q);
    uint8x16_t l = vandq_u8(p, vdupq_n_u8(0x0f)), h = vshrq_n_u8(p, 4);
    if constexpr (kIqLut<K>) {
      const int8x16_t table = vld1q_s8(lut_values<K>());
      lo = vqtbl1q_s8(table, l);
      hi = vqtbl1q_s8(table, h);
    } else if constexpr (K == Kind::Q6_K) {  // high 2 bits: bits 2j..2j+1 of planes 0 and 1
      const uint8x16_t mask = vdupq_n_u8(0x30);
      const uint8x16_t p0 = shr_u8(vld1q_u8(qs + kQ6kQhOffset + 16 * q), 2 * j);
      const uint8x16_t p1 = shr_u8(vld1q_u8(qs + kQ6kQhOffset + 64 + 16 * q), 2 * j);
      l = vorrq_u8(l, vandq_u8(vshlq_n_u8(p0, 4), mask));
      h = vorrq_u8(h, vandq_u8(vshlq_n_u8(p1, 4), mask));
      lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(32));
      hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(32));
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

// Which of signed_quads' registers a pass uses: both into one sum (every kind but the
// half-scaled ones), or one element half at a time (Q6_K, Q3_K, Q2_K: a scale per half).
enum Part { kBoth, kLoHalf, kHiHalf };
template <Kind K>
constexpr Part kFirstPart = kHalfScaled<K> ? kLoHalf : kBoth;

// The kinds with a min: Q4_1, Q5_1, Q4_K, Q5_K (times the activation's s, once per block) and
// Q2_K (times d_a * the half's sum, per half).
template <Kind K>
constexpr bool kNeonMin = kHasMin<K> || K == Kind::Q2_K;

// One 32-column block b of a group: its stored block (a super-block kind's super-block),
// sub-block index and quants.
template <Kind K>
struct UnitPtr {
  const uint8_t* blk;
  int j;
  const uint8_t* qs;
};
template <Kind K>
static inline UnitPtr<K> unit_at(const uint8_t* w, int64_t b) {
  const uint8_t* blk = w + static_cast<size_t>(b / kSubBlocks<K>) * kBlockBytes<K>;
  const int j = static_cast<int>(b % kSubBlocks<K>);
  return {blk, j, blk + kQsOffset<K> + static_cast<size_t>(j) * kSubBlockBytes<K>};
}

// Rows 4q..4q+3's fp16 scales (or mins at offset 32) of one packed block.
static inline float32x4_t quad_scales(const uint8_t* blk, int q) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(blk + 8 * q))));
}

// Rows 4q..4q+3's weight scale of sub-block j (element half P of the half-scaled kinds): d, or
// d * the sub-block's (half's) integer scale.
template <Kind K, Part P>
static inline float32x4_t unit_scale(const uint8_t* blk, int j, int q) {
  const float32x4_t d = quad_scales(blk, q);
  if constexpr (kKScaleMin<K>) return vmulq_f32(d, u8x4_to_f32(blk + kQ4kScOffset + 16 * j + 4 * q));
  if constexpr (K == Kind::IQ4_XS) return vmulq_f32(d, i8x4_to_f32(blk + kIq4xsScOffset + 16 * j + 4 * q));
  if constexpr (kHalfScaled<K>) {
    const uint8_t* sc = blk + kHalfScOffset<K> + 16 * (2 * j + (P == kHiHalf)) + 4 * q;
    if constexpr (K == Kind::Q2_K) {
      uint32_t v;
      std::memcpy(&v, sc, 4);
      v &= 0x0f0f0f0fu;
      return vmulq_f32(d, u8x4_to_f32(reinterpret_cast<const uint8_t*>(&v)));
    }
    return vmulq_f32(d, i8x4_to_f32(sc));
  }
  return d;
}

// Rows 4q..4q+3's min factor (kNeonMin): Q4_1 / Q5_1 m; Q4_K / Q5_K -dmin * m of sub-block j; Q2_K
// -dmin * min of element half P.
template <Kind K, Part P>
static inline float32x4_t unit_min(const uint8_t* blk, int j, int q) {
  if constexpr (kKScaleMin<K>)
    return vmulq_f32(vnegq_f32(quad_scales(blk + kQ4kDminOffset, q)),
                     u8x4_to_f32(blk + kQ4kMOffset + 16 * j + 4 * q));
  if constexpr (K == Kind::Q2_K) {
    uint32_t v;
    std::memcpy(&v, blk + kQ2kScOffset + 16 * (2 * j + (P == kHiHalf)) + 4 * q, 4);
    v = (v >> 4) & 0x0f0f0f0fu;
    return vmulq_f32(vnegq_f32(quad_scales(blk + kQ2kDminOffset, q)),
                     u8x4_to_f32(reinterpret_cast<const uint8_t*>(&v)));
  }
  return quad_scales(blk + 32, q);
}

// The activation factor of unit_min for one token: s = fp16(d * sum) of the block (Q4_1, Q5_1,
// Q4_K, Q5_K), or d * the sum of element half P (Q2_K).
template <Kind K, Part P>
static inline float min_factor(const PackedActMeta& am) {
  if constexpr (K == Kind::Q2_K) return am.d * static_cast<float>(half_sum(am.extra, P == kHiHalf));
  return std::bit_cast<float>(am.extra);
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
