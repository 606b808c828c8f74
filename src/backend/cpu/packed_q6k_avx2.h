// Q6_K's interleaved quants (packed_kernels.h) on 256-bit registers, for the AVX2 and AVX-VNNI
// kernels. Static inline (see DEVELOPERS.md): each including file gets its own copy compiled for
// its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"

namespace strata::cpu::packed {

// Chunk K of element half hh (0: elements 4K..4K+3, 1: 16 + 4K..) of the 8 rows of row half h
// as unsigned quants u = low | high << 4 (0..63): the high bits are bits 2K..2K+1 of plane hh.
// qs: the sub-block's quants.
template <int K>
static inline __m256i q6k_quants(const uint8_t* qs, int h, int hh) {
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 64 * K + 32 * h));
  const __m256i low = hh == 0 ? _mm256_and_si256(p, m4) : _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
  const __m256i plane =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + kQ6kQhOffset + 64 * hh + 32 * h));
  __m256i high;  // bits 2K..2K+1 moved to bits 4..5
  if constexpr (K == 0) high = _mm256_slli_epi16(plane, 4);
  if constexpr (K == 1) high = _mm256_slli_epi16(plane, 2);
  if constexpr (K == 2) high = plane;
  if constexpr (K == 3) high = _mm256_srli_epi16(plane, 2);
  return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
}

}  // namespace strata::cpu::packed
