// The per-block scales and mins of the interleaved layout (packed_kernels.h) on 256-bit
// registers, for the AVX2 and AVX-VNNI kernels. Static inline (see DEVELOPERS.md): each including
// file gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/packed_kind.h"

namespace strata::cpu::packed {

// Scale and min of 8 rows (half h) of block j of a stored block: fp16 d and m of the legacy
// kinds; Q4_K and Q5_K form d * sc and -dmin * m of their sub-block j, IQ4_XS d * sc.
static inline __m256 u8x8_to_ps(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
static inline __m256 i8x8_to_ps(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}
static inline __m256 half_to_ps(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
template <Kind K>
static inline __m256 scale_of(const uint8_t* w, int j, int h) {
  if constexpr (kKScaleMin<K>)
    return _mm256_mul_ps(half_to_ps(w + 16 * h), u8x8_to_ps(w + kQ4kScOffset + 16 * j + 8 * h));
  if constexpr (K == Kind::IQ4_XS)
    return _mm256_mul_ps(half_to_ps(w + 16 * h), i8x8_to_ps(w + kIq4xsScOffset + 16 * j + 8 * h));
  return half_to_ps(w + 16 * h);
}
template <Kind K>
static inline __m256 min_of(const uint8_t* w, int j, int h) {
  if constexpr (kKScaleMin<K>)
    return _mm256_mul_ps(_mm256_sub_ps(_mm256_setzero_ps(), half_to_ps(w + kQ4kDminOffset + 16 * h)),
                         u8x8_to_ps(w + kQ4kMOffset + 16 * j + 8 * h));
  return half_to_ps(w + 32 + 16 * h);
}

}  // namespace strata::cpu::packed
