// AVX-512 peak loops (compute_peak_kernels.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC 12 on _mm512_reduce_add_*
#include <immintrin.h>

#include "core/compute_peak_kernels.h"

namespace strata::peak {

int64_t int8_chains_avx512(int64_t iters) {
  __m512i acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_epi32(i);
  __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));  // keeps the operands opaque to the optimizer
  }
  __m512i s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = _mm512_add_epi32(s, acc[i]);
  // Lanes summed as unsigned: the sums wrap (only their dependence on the loop matters), and
  // _mm512_reduce_add_epi32 adds in signed C arithmetic, where wrapping is undefined.
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, s);
  uint32_t total = 0;
  for (uint32_t v : lanes) total += v;
  return static_cast<int32_t>(total);
}

float f32_chains_avx512(int64_t iters) {
  __m512 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(a), "+v"(b));
  }
  __m512 s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

}  // namespace strata::peak
