// Baseline Armv8-A NEON kernels of the interleaved layout (packed_kernels.h), for cores without
// DotProd (Cortex-A72 class), and the NEON activation quantizer every aarch64 level uses.
//
// A 16-byte register holds the same 4 quants of 4 rows (signed, packed_neon.h). The token's 4
// activations are duplicated into every 32-bit lane, smull / smull2 form the 16 exact int16
// products (|w| <= 128, |a| <= 127) and sadalp adds their pairs into int32 lanes: acc_lo holds
// rows 0-1, acc_hi rows 2-3, two lanes per row, folded by one addp at the end of the block. Per
// block the sums are scaled by d_w * d_a into float accumulators (one FMA per 4 rows and token,
// in block order: batch invariant, kernels.h). Tile: 16 rows x 1 token, so that 4 x 2 integer
// and 4 float accumulators leave room for the weights.
#include <arm_neon.h>

#include <bit>
#include <cmath>

#include "backend/cpu/packed_neon.h"
#include "core/check.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

// acc_lo / acc_hi += the 16 products of w (4 rows x 4 quants) with the token's 4 activations.
static inline void dot4(int32x4_t& acc_lo, int32x4_t& acc_hi, int8x16_t w, int8x16_t a4) {
  acc_lo = vpadalq_s16(acc_lo, vmull_s8(vget_low_s8(w), vget_low_s8(a4)));
  acc_hi = vpadalq_s16(acc_hi, vmull_high_s8(w, a4));
}

// The activations of element group g of one token in every 32-bit lane.
static inline int8x16_t group4(const int8_t* aq, int g) {
  int32_t v;
  std::memcpy(&v, aq + 4 * g, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// accf[q] += the block's (element half P's) exact sums for rows 4q..4q+3, times the weight and
// activation scales, plus the min term. a: the token's 8 element groups.
template <Kind K, Part P>
static inline void block_part(float32x4_t (&accf)[4], const UnitPtr<K>& u, const int8x16_t (&a)[8],
                              const PackedActMeta* am) {
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    int32x4_t lo_rows = vdupq_n_s32(0), hi_rows = vdupq_n_s32(0);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      int8x16_t lo, hi;
      signed_quads<K>(u.qs, j, q, lo, hi);
      if constexpr (P != kHiHalf) dot4(lo_rows, hi_rows, lo, a[lo_group<K>(j)]);
      if constexpr (P != kLoHalf) dot4(lo_rows, hi_rows, hi, a[hi_group<K>(j)]);
    }
    const int32x4_t sums = vpaddq_s32(lo_rows, hi_rows);  // rows 4q..4q+3
    accf[q] = vfmaq_f32(accf[q], vcvtq_f32_s32(sums), vmulq_n_f32(unit_scale<K, P>(u.blk, u.j, q), am->d));
    if constexpr (kNeonMin<K>)
      accf[q] = vfmaq_n_f32(accf[q], unit_min<K, P>(u.blk, u.j, q), min_factor<K, P>(*am));
  }
}

template <Kind K>
void tile(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, float* y, int n_rows) {
  float32x4_t accf[4];
  for (int q = 0; q < 4; ++q) accf[q] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b, aq += kPackCols * 32, am += kPackCols) {
    int8x16_t a[8];
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) a[g] = group4(aq, g);
    const UnitPtr<K> u = unit_at<K>(w, b);
    block_part<K, kFirstPart<K>>(accf, u, a, am);
    if constexpr (kHalfScaled<K>) block_part<K, kHiHalf>(accf, u, a, am);
  }
  for (int q = 0; 4 * q < n_rows; ++q) store_quad(accf[q], y, 4 * q, n_rows);
}

template <Kind K>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                  int n_rows) {
  for (int c = 0; c < nc; ++c) tile<K>(w, nb, a.qs + 32 * c, a.meta + c, y + c * y_stride, n_rows);
}

}  // namespace

void packed_gemm_neon(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  with_any_kind(type,
                [&](auto kind) { group_kernel<decltype(kind)::value>(w, nb, a, nc, y, y_stride, n_rows); });
}

// Bit-identical to quantize_packed_act_scalar: same amax, d, x * (1 / d) rounded to nearest even
// (fcvtns), fp16 rounding of d and s.
void quantize_packed_act_neon(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                              size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride) {
  STRATA_CHECK(!is_super_act_mode(zero_point), "no super-block activations at this level");
  for (int64_t b = 0; b < n_blocks; ++b, x += 32) {
    float32x4_t v[8];
    float32x4_t amax = vdupq_n_f32(0.0f);
    for (int i = 0; i < 8; ++i) {
      v[i] = vld1q_f32(x + 4 * i);
      amax = vmaxnmq_f32(amax, vabsq_f32(v[i]));  // maxnm ignores NaN as fmax does
    }
    const float d = vmaxnmvq_f32(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int32x4_t sum[2] = {vdupq_n_s32(0), vdupq_n_s32(0)};  // elements 0..15, 16..31
    int16x8_t h[4];
    for (int i = 0; i < 4; ++i) {
      const int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(v[2 * i], id));
      const int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(v[2 * i + 1], id));
      sum[i / 2] = vaddq_s32(sum[i / 2], vaddq_s32(q0, q1));
      h[i] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
    }
    int8_t* out = qs + static_cast<size_t>(b) * qs_block_stride;
    vst1q_s8(out, vcombine_s8(vmovn_s16(h[0]), vmovn_s16(h[1])));
    vst1q_s8(out + 16, vcombine_s8(vmovn_s16(h[2]), vmovn_s16(h[3])));
    const int s_lo = vaddvq_s32(sum[0]), s_hi = vaddvq_s32(sum[1]), s = s_lo + s_hi;
    PackedActMeta& m = meta[static_cast<size_t>(b) * meta_block_stride];
    m.d = fp16_to_f32(f32_to_fp16(d));
    m.extra = zero_point == kPackedHalfSums ? pack_half_sums(s_lo, s_hi)
              : zero_point != 0             ? -zero_point * s
                                : std::bit_cast<int32_t>(fp16_to_f32(f32_to_fp16(d * static_cast<float>(s))));
  }
}

}  // namespace strata::cpu
