// AVX-VNNI peak loop (compute_peak_kernels.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/compute_peak_kernels.h"

namespace strata::peak {

int64_t int8_chains_avxvnni(int64_t iters) {
  __m256i acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_set1_epi32(i);
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], a, b);
    __asm__ volatile("" : "+x"(a), "+x"(b));  // keeps the operands opaque to the optimizer
  }
  __m256i s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = _mm256_add_epi32(s, acc[i]);
  return _mm256_extract_epi32(s, 0) + _mm256_extract_epi32(s, 7);
}

}  // namespace strata::peak
