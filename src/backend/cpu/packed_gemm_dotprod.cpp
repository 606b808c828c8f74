// Armv8.2 DotProd kernels of the interleaved layout (packed_kernels.h).
//
// A 16-byte register holds the same 4 quants of 4 rows (signed, packed_neon.h), so
// `sdot acc, w, a[lane]` adds 4 exact products to 4 rows' int32 sums for one token, the lane
// picking the token's 4 activations out of a 16-byte register that was loaded once. Per block
// the sums are scaled by d_w * d_a into float accumulators, one FMA per 4 rows and token in block
// order (batch invariant, kernels.h). Tile: 16 rows x 2 tokens (32 accumulators of 32 registers
// would not fit 3 tokens beside the weights and activations).
#include <arm_neon.h>

#include <bit>

#include "backend/cpu/packed_neon.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

constexpr int kTileTokens = 2;

// Groups lo_group(J), hi_group(J) of rows 4q..4q+3 against every token (P: only the one of
// element half P): the lane of the token's register that holds those 4 activations is a
// compile-time constant.
template <Kind K, Part P, int J, int NC>
static inline void dot_groups(int32x4_t (&acc)[NC], const uint8_t* qs, int q, const int8x16_t (&a0)[NC],
                              const int8x16_t (&a1)[NC]) {
  int8x16_t lo, hi;
  signed_quads<K>(qs, J, q, lo, hi);
  constexpr int gl = lo_group<K>(J), gh = hi_group<K>(J);
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c) {
    if constexpr (P != kHiHalf) acc[c] = vdotq_laneq_s32(acc[c], lo, gl < 4 ? a0[c] : a1[c], gl % 4);
    if constexpr (P != kLoHalf) acc[c] = vdotq_laneq_s32(acc[c], hi, gh < 4 ? a0[c] : a1[c], gh % 4);
  }
}

// accf[q][c] += the block's (element half P's) exact sums for rows 4q+i and token c, times the
// weight and activation scales, plus the min term.
template <Kind K, Part P, int NC>
static inline void block_part(float32x4_t (&accf)[4][NC], const UnitPtr<K>& u, const int8_t* aq,
                              const PackedActMeta* am) {
  int8x16_t a0[NC], a1[NC];  // elements 0..15 and 16..31 of each token
#pragma GCC unroll 2
  for (int c = 0; c < NC; ++c) a0[c] = vld1q_s8(aq + 32 * c), a1[c] = vld1q_s8(aq + 32 * c + 16);
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    int32x4_t acc[NC];
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c) acc[c] = vdupq_n_s32(0);
    dot_groups<K, P, 0, NC>(acc, u.qs, q, a0, a1);
    dot_groups<K, P, 1, NC>(acc, u.qs, q, a0, a1);
    dot_groups<K, P, 2, NC>(acc, u.qs, q, a0, a1);
    dot_groups<K, P, 3, NC>(acc, u.qs, q, a0, a1);
    const float32x4_t dw = unit_scale<K, P>(u.blk, u.j, q);
#pragma GCC unroll 2
    for (int c = 0; c < NC; ++c)
      accf[q][c] = vfmaq_f32(accf[q][c], vcvtq_f32_s32(acc[c]), vmulq_n_f32(dw, am[c].d));
    if constexpr (kNeonMin<K>) {
      const float32x4_t mw = unit_min<K, P>(u.blk, u.j, q);
#pragma GCC unroll 2
      for (int c = 0; c < NC; ++c) accf[q][c] = vfmaq_n_f32(accf[q][c], mw, min_factor<K, P>(am[c]));
    }
  }
}

template <Kind K, int NC>
void tile(const uint8_t* w, int64_t nb, const int8_t* aq, const PackedActMeta* am, float* y, size_t y_stride,
          int n_rows) {
  const int n_quads = (n_rows + 3) / 4;
  float32x4_t accf[4][NC];
  for (int q = 0; q < 4; ++q)
    for (int c = 0; c < NC; ++c) accf[q][c] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < nb; ++b, aq += kPackCols * 32, am += kPackCols) {
    const UnitPtr<K> u = unit_at<K>(w, b);
    block_part<K, kFirstPart<K>, NC>(accf, u, aq, am);
    if constexpr (kHalfScaled<K>) block_part<K, kHiHalf, NC>(accf, u, aq, am);
  }
  for (int q = 0; q < n_quads; ++q)
    for (int c = 0; c < NC; ++c) store_quad(accf[q][c], y + c * y_stride, 4 * q, n_rows);
}

template <Kind K>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y, size_t y_stride,
                  int n_rows) {
  for (int c0 = 0; c0 < nc; c0 += kTileTokens) {
    if (nc - c0 >= 2)
      tile<K, 2>(w, nb, a.qs + 32 * c0, a.meta + c0, y + c0 * y_stride, y_stride, n_rows);
    else
      tile<K, 1>(w, nb, a.qs + 32 * c0, a.meta + c0, y + c0 * y_stride, y_stride, n_rows);
  }
}

}  // namespace

void packed_gemm_dotprod(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                         float* y, size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  with_any_kind(type,
                [&](auto kind) { group_kernel<decltype(kind)::value>(w, nb, a, nc, y, y_stride, n_rows); });
}

}  // namespace strata::cpu
