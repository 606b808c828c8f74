// The 12-byte 6-bit (scale, min) format of Q4_K and Q5_K, unpacked with SSE/AVX2 integer ops for
// their AVX2 and AVX-512 dot products. Static inline (see DEVELOPERS.md): each including file
// gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace strata::cpu {

// 12 bytes of 6-bit (scale, min) pairs (see blocks.h) -> bytes sc[0..7], m[0..7]. Reads 16 bytes:
// the block continues after the scales.
static inline __m128i unpack_scale_min(const uint8_t* p) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));  // dwords s0 s1 s2 (junk)
  // sc[0..3] = s0 & 63, sc[4..7] = (s2 & 15) | (s0 >> 6) << 4, m[0..3] = s1 & 63,
  // m[4..7] = (s2 >> 4) | (s1 >> 6) << 4, per byte.
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, 0x98), _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, 0x50), _mm_setr_epi32(0, 2, 0, 2)),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

}  // namespace strata::cpu
