// The 4- and 5-bit packed types' weight registers on AVX-512 (packed_kernels.h's layout): chunk k
// of a packed block widened into the unsigned bytes of elements 4k..4k+3 (low nibbles) and
// 16+4k..16+4k+3 (high nibbles) of its 16 rows. Shared by the AVX-512 kernel, which feeds them to
// vpdpbusd, and the AMX kernel, which stores them as a B tile. Include only from files compiled
// with the AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "backend/cpu/packed_kind.h"
#include "quant/iq_tables.h"

namespace strata::cpu::packed {

static inline __mmask64 load_mask64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return _cvtu64_mask64(v);
}

// qs: the block's quants (after its scales); k = 0..3.
template <Kind K>
static inline void widen_chunk(const uint8_t* qs, int k, __m512i& lo, __m512i& hi) {
  const __m512i m4 = _mm512_set1_epi8(0x0f);
  const __m512i p = _mm512_loadu_si512(qs + 64 * k);
  lo = _mm512_and_si512(p, m4);
  hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
  if constexpr (kIqLut<K>) {  // nibble -> table value + 128, per 128-bit lane
    const __m512i table = _mm512_broadcast_i32x4(_mm_add_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(lut_values<K>())), _mm_set1_epi8(-128)));
    lo = _mm512_shuffle_epi8(table, lo);
    hi = _mm512_shuffle_epi8(table, hi);
  }
  if constexpr (kHasQh<K>) {
    const __m512i b16 = _mm512_set1_epi8(16);
    lo = _mm512_mask_add_epi8(lo, load_mask64(qs + 256 + 8 * k), lo, b16);
    hi = _mm512_mask_add_epi8(hi, load_mask64(qs + 256 + 8 * (k + 4)), hi, b16);
  }
}

}  // namespace strata::cpu::packed
