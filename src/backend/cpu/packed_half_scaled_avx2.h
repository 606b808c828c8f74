// The quants of the half-scaled super-block kinds (Q6_K, Q3_K, Q2_K; packed_kernels.h) on 256-bit
// registers, for the AVX2 and AVX-VNNI kernels. Static inline (see DEVELOPERS.md): each including
// file gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"

namespace strata::cpu::packed {

// Chunk C of element half HH (0: elements 4C..4C+3, 1: 16 + 4C..) of the 8 rows of row half h as
// unsigned quants: Q6_K's u = low | high << 4 (0..63, the high bits are bits 2C..2C+1 of plane
// HH); Q3_K's u = low2 | third << 2 (0..7: bits 2C..2C+1 of lo plane HH, bit 4 HH + C of hi);
// Q2_K's u = low2 (0..3). qs: the sub-block's quants.
template <Kind K, int C, int HH>
static inline __m256i half_quants(const uint8_t* qs, int h) {
  if constexpr (K == Kind::Q6_K) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * C + 32 * h));
    const __m256i low = HH == 0 ? _mm256_and_si256(p, m4) : _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
    const __m256i plane =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kQ6kQhOffset + 64 * HH + 32 * h));
    __m256i high;  // bits 2C..2C+1 moved to bits 4..5
    if constexpr (C <= 2)
      high = _mm256_slli_epi16(plane, 4 - 2 * C);
    else
      high = _mm256_srli_epi16(plane, 2);
    return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
  } else {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * HH + 32 * h));
    const __m256i u = _mm256_and_si256(_mm256_srli_epi16(lo, 2 * C), _mm256_set1_epi8(3));
    if constexpr (K == Kind::Q2_K) return u;
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kQ3kHiOffset + 32 * h));
    constexpr int kShift = 4 * HH + C - 2;  // bit 4 HH + C moved to bit 2
    __m256i third;
    if constexpr (kShift >= 0)
      third = _mm256_srli_epi16(hi, kShift);
    else
      third = _mm256_slli_epi16(hi, -kShift);
    return _mm256_or_si256(u, _mm256_and_si256(third, _mm256_set1_epi8(4)));
  }
}

// The float factors of half HH of sub-block j for the 8 rows of row half h: d * sc (Q6_K, Q3_K:
// signed sc; Q2_K: its 4-bit scale) and Q2_K's -dmin * min.
template <Kind K, int HH>
static inline void half_factors(const uint8_t* w, int j, int h, __m256& dw, __m256& mw) {
  const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16 * h)));
  const __m128i sc8 =
      _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + kHalfScOffset<K> + 16 * (2 * j + HH) + 8 * h));
  if constexpr (K == Kind::Q2_K) {
    const __m256i sc = _mm256_cvtepu8_epi32(sc8);
    const __m256 dmin =
        _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + kQ2kDminOffset + 16 * h)));
    dw = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(0x0f))));
    mw =
        _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), dmin), _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4)));
  } else {
    dw = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc8)));
  }
}

}  // namespace strata::cpu::packed
