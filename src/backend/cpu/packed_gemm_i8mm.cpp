// Armv8.6 I8MM kernels of the interleaved layout (packed_kernels.h).
//
// smmla multiplies a 2 x 8 int8 matrix by an 8 x 2 one into a 2 x 2 int32 tile: 32 exact
// products per instruction, twice sdot's. The packed chunks hold 4 quants per row, so the 2 x 8
// weight operand of rows (r, r + 1) is zipped from two chunks' 4-row registers (elements
// 4g..4g+3 and 4g+4..4g+7, packed_neon.h); the 8 x 2 activation operand is 8 consecutive
// activations of two tokens (a missing second token is zeros and its results are dropped, so a
// token's sums never depend on its neighbour). Accumulator lanes: (r, c), (r, c+1), (r+1, c),
// (r+1, c+1). Per block the sums are scaled by d_w * d_a in float, one FMA per lane in block
// order (batch invariant, kernels.h). Tile: 16 rows x 2 tokens (8 + 8 accumulators).
#include <arm_neon.h>

#include <bit>

#include "backend/cpu/packed_neon.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

// The 2 x 8 weight operands of the 8 row pairs for element groups (g, g + 1): from the signed
// 4-row registers x (group g) and y (group g + 1) of each quad.
static inline void zip_pairs(int8x16_t x, int8x16_t y, int8x16_t& rows01, int8x16_t& rows23) {
  const int32x4_t xi = vreinterpretq_s32_s8(x), yi = vreinterpretq_s32_s8(y);
  rows01 = vreinterpretq_s8_s32(vzip1q_s32(xi, yi));
  rows23 = vreinterpretq_s8_s32(vzip2q_s32(xi, yi));
}

// acc[p] += the exact 2 x 2 products of row pair p with the token pair over one block (P: only
// its element half P). a0 / a1: the two tokens' 32 quants (a1 == nullptr: no second token).
template <Kind K, Part P>
static inline void block_mmla(int32x4_t (&acc)[8], const uint8_t* qs, const int8_t* a0, const int8_t* a1) {
  int8x16_t act[4];  // element octets 8m..8m+7 of both tokens
  for (int m = 0; m < 4; ++m)
    act[m] = vcombine_s8(vld1_s8(a0 + 8 * m), a1 ? vld1_s8(a1 + 8 * m) : vdup_n_s8(0));
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    // Groups (2m, 2m+1) as consecutive signed registers: for the 4-bit layouts chunks (j, j+1)
    // give groups j, j+1 (low nibbles) and j+4, j+5 (high nibbles), as the element halves of the
    // half-scaled kinds do; for Q8_0 chunk pair (2m, 2m+1) is groups 2m, 2m+1 directly.
#pragma GCC unroll 2
    for (int j = 0; j < 4; j += 2) {
      int8x16_t lo0, hi0, lo1, hi1;
      signed_quads<K>(qs, j, q, lo0, hi0);
      signed_quads<K>(qs, j + 1, q, lo1, hi1);
      int8x16_t p01, p23;
      if constexpr (K == Kind::Q8_0) {
        // lo_j / hi_j are groups 2j, 2j+1: octet j; lo_{j+1} / hi_{j+1} octet j + 1.
        zip_pairs(lo0, hi0, p01, p23);
        acc[2 * q] = vmmlaq_s32(acc[2 * q], p01, act[j]);
        acc[2 * q + 1] = vmmlaq_s32(acc[2 * q + 1], p23, act[j]);
        zip_pairs(lo1, hi1, p01, p23);
        acc[2 * q] = vmmlaq_s32(acc[2 * q], p01, act[j + 1]);
        acc[2 * q + 1] = vmmlaq_s32(acc[2 * q + 1], p23, act[j + 1]);
      } else {
        if constexpr (P != kHiHalf) {
          zip_pairs(lo0, lo1, p01, p23);  // groups j, j+1: octet j / 2
          acc[2 * q] = vmmlaq_s32(acc[2 * q], p01, act[j / 2]);
          acc[2 * q + 1] = vmmlaq_s32(acc[2 * q + 1], p23, act[j / 2]);
        }
        if constexpr (P != kLoHalf) {
          zip_pairs(hi0, hi1, p01, p23);  // groups j+4, j+5: octet 2 + j / 2
          acc[2 * q] = vmmlaq_s32(acc[2 * q], p01, act[2 + j / 2]);
          acc[2 * q + 1] = vmmlaq_s32(acc[2 * q + 1], p23, act[2 + j / 2]);
        }
      }
    }
  }
}

// Row factors f (rows 4q..4q+3) in the lane order of row pairs 2q and 2q + 1 times tokens
// (t0, t1): (r, c), (r, c+1), (r+1, c), (r+1, c+1).
static inline void pair_lanes(float32x4_t f, float32x4_t toks, float32x4_t& p0, float32x4_t& p1) {
  p0 = vmulq_f32(vzip1q_f32(f, f), toks);
  p1 = vmulq_f32(vzip2q_f32(f, f), toks);
}

// accf[p] += the block's (element half P's) sums scaled by d_w * d_a, plus the min term.
template <Kind K, Part P>
static inline void block_part(float32x4_t (&accf)[8], const UnitPtr<K>& u, const int8_t* aq,
                              const PackedActMeta* am, bool two) {
  int32x4_t acc[8];
  for (int p = 0; p < 8; ++p) acc[p] = vdupq_n_s32(0);
  block_mmla<K, P>(acc, u.qs, aq, two ? aq + 32 : nullptr);
  const float32x4_t da = {am[0].d, two ? am[1].d : 0.0f, am[0].d, two ? am[1].d : 0.0f};
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    float32x4_t s0, s1;
    pair_lanes(unit_scale<K, P>(u.blk, u.j, q), da, s0, s1);
    accf[2 * q] = vfmaq_f32(accf[2 * q], vcvtq_f32_s32(acc[2 * q]), s0);
    accf[2 * q + 1] = vfmaq_f32(accf[2 * q + 1], vcvtq_f32_s32(acc[2 * q + 1]), s1);
    if constexpr (kNeonMin<K>) {
      const float m0 = min_factor<K, P>(am[0]), m1 = two ? min_factor<K, P>(am[1]) : 0.0f;
      const float32x4_t ma = {m0, m1, m0, m1}, mw = unit_min<K, P>(u.blk, u.j, q);
      const float32x4_t w0 = vzip1q_f32(mw, mw), w1 = vzip2q_f32(mw, mw);
      accf[2 * q] = vfmaq_f32(accf[2 * q], w0, ma);
      accf[2 * q + 1] = vfmaq_f32(accf[2 * q + 1], w1, ma);
    }
  }
}

template <Kind K>
void tile(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, bool two, float* y,
          size_t y_stride, int n_rows) {
  float32x4_t accf[8];
  for (int p = 0; p < 8; ++p) accf[p] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b, aq += kPackCols * 32, am += kPackCols) {
    const UnitPtr<K> u = unit_at<K>(w, b);
    block_part<K, kFirstPart<K>>(accf, u, aq, am, two);
    if constexpr (kHalfScaled<K>) block_part<K, kHiHalf>(accf, u, aq, am, two);
  }
  for (int p = 0; p < 8; ++p) {
    float v[4];
    vst1q_f32(v, accf[p]);
    for (int i = 0; i < 2; ++i) {
      const int r = 2 * p + i;
      if (r >= n_rows) break;
      y[r] = v[2 * i];
      if (two) y[y_stride + r] = v[2 * i + 1];
    }
  }
}

template <Kind K>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                  int n_rows) {
  for (int c0 = 0; c0 < nc; c0 += 2)
    tile<K>(w, nb, a.qs + 32 * c0, a.meta + c0, nc - c0 >= 2, y + c0 * y_stride, y_stride, n_rows);
}

}  // namespace

void packed_gemm_i8mm(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                      size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  with_any_kind(type,
                [&](auto kind) { group_kernel<decltype(kind)::value>(w, nb, a, nc, y, y_stride, n_rows); });
}

}  // namespace strata::cpu
