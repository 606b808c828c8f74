// The per-block scales and mins of the interleaved layout (packed_kernels.h) on 256-bit
// registers, for the AVX2 and AVX-VNNI kernels. Static inline (see DEVELOPERS.md): each including
// file gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <bit>
#include <cstddef>
#include <cstdint>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu::packed {

// Scale and min of 8 rows (half h) of block j of a stored block: fp16 d and m of the legacy
// kinds, IQ4_XS's d * sc of its sub-block j. (Q4_K and Q5_K scale per super-block:
// k_super_epilogue.)
static inline __m256 i8x8_to_ps(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
static inline __m256 half_to_ps(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <Kind K>
static inline __m256 scale_of(const uint8_t* w, int j, int h) {
  static_assert(!kKScaleMin<K>);
  if constexpr (K == Kind::IQ4_XS)
    return _mm256_mul_ps(half_to_ps(w + 16 * h), i8x8_to_ps(w + kIq4xsScOffset + 16 * j + 8 * h));
  return half_to_ps(w + 16 * h);
}
template <Kind K>
static inline __m256 min_of(const uint8_t* w, [[maybe_unused]] int j, int h) {
  static_assert(!kKScaleMin<K>);
  return half_to_ps(w + 32 + 16 * h);
}

template <int NH, int NC>
static inline void set_zero(__m256i (&acc)[NH][NC]) {
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c) acc[h][c] = _mm256_setzero_si256();
}

// y[c * y_stride + r] = accf[h][c] for the rows of halves h0..h0+NH-1 below n_rows.
template <int NH, int NC>
static inline void store_tile(const __m256 (&accf)[NH][NC], int h0, float* y, size_t y_stride, int n_rows) {
#pragma GCC unroll 2
  for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      store_rows8(y + c * y_stride + 8 * (h0 + h), accf[h][c], n_rows - 8 * (h0 + h));
}

// Block j's exact integer sums acc[c] of row half h for NC tokens (am: token 0's meta), scaled
// into accf in block order: d_w * d_a, then m_w * s_a for the kinds with a min (Q8_1's s).
template <Kind K, int NC>
static inline void scale_block(__m256 (&accf)[NC], const __m256i (&acc)[NC], const uint8_t* w, int j, int h,
                               const PackedActMeta* am) {
  const __m256 dw = scale_of<K>(w, j, h);
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    const __m256 scale = _mm256_mul_ps(dw, _mm256_set1_ps(am[c].d));
    accf[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[c]), scale, accf[c]);
  }
  if constexpr (kHasMin<K>) {
    const __m256 mw = min_of<K>(w, j, h);
#pragma GCC unroll 4
    for (int c = 0; c < NC; ++c)
      accf[c] = _mm256_fmadd_ps(mw, _mm256_set1_ps(std::bit_cast<float>(am[c].extra)), accf[c]);
  }
}

// The rows' mins of sub-blocks 2p and 2p + 1 (half h) of a Q4_K / Q5_K super-block as int16
// pairs: lane r holds m[2p][r] and m[2p + 1][r], the vpmaddwd partner of the activation's pair
// sums (kPackedSuperSums).
static inline __m256i min_pairs(const uint8_t* w, int p, int h) {
  const __m128i m0 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kQ4kMOffset + 32 * p + 8 * h));
  const __m128i m1 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kQ4kMOffset + 32 * p + 16 + 8 * h));
  return _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m0, m1));
}

// The end of a super-block (stored at w) for row half h and NC tokens with super-block
// activations (am: token 0's meta of sub-block 0): acc[c], an exact integer sum over its 256
// columns, scaled once by d * d_a.
template <int NC>
static inline void super_scale(__m256 (&accf)[NC], const __m256i (&acc)[NC], const uint8_t* w, int h,
                               const PackedActMeta* am) {
  const __m256 d = half_to_ps(w + 16 * h);
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c)
    accf[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc[c]), _mm256_mul_ps(d, _mm256_set1_ps(am[c].d)), accf[c]);
}

// The end of a Q4_K / Q5_K super-block (stored at w) for half h and NC tokens with
// kPackedSuperSums activations (am: token 0's meta of sub-block 0): acc[c] holds the exact
// sum over the sub-blocks of sc * (u . a); the mins' sum of m * sum(a) is formed here (vpmaddwd
// of min_pairs by the pair sums), and both are scaled once, by d * d_a and -dmin * d_a.
template <int NC>
static inline void k_super_epilogue(__m256 (&accf)[NC], const __m256i (&acc)[NC], const uint8_t* w, int h,
                                    const PackedActMeta* am) {
  super_scale<NC>(accf, acc, w, h, am);
  const __m256i m0 = min_pairs(w, 0, h), m1 = min_pairs(w, 1, h);
  const __m256i m2 = min_pairs(w, 2, h), m3 = min_pairs(w, 3, h);
  const __m256 mdmin = _mm256_sub_ps(_mm256_setzero_ps(), half_to_ps(w + kQ4kDminOffset + 16 * h));
#pragma GCC unroll 4
  for (int c = 0; c < NC; ++c) {
    const PackedActMeta* m = am + c;  // sub-block 2p's meta at m[2p * kPackCols]
    const __m256i s01 = _mm256_add_epi32(_mm256_madd_epi16(m0, _mm256_set1_epi32(m[0].extra)),
                                         _mm256_madd_epi16(m1, _mm256_set1_epi32(m[2 * kPackCols].extra)));
    const __m256i s23 = _mm256_add_epi32(_mm256_madd_epi16(m2, _mm256_set1_epi32(m[4 * kPackCols].extra)),
                                         _mm256_madd_epi16(m3, _mm256_set1_epi32(m[6 * kPackCols].extra)));
    accf[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(s01, s23)),
                              _mm256_mul_ps(mdmin, _mm256_set1_ps(m[0].d)), accf[c]);
  }
}

}  // namespace strata::cpu::packed
