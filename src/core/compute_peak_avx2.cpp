// AVX2 peak loops (compute_peak_kernels.h).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "core/compute_peak_kernels.h"

namespace strata::peak {

// Without VNNI the int8 kernels multiply with vpmaddubsw and add the int16 pairs in int16 before
// widening (packed_gemm_avx2.cpp): the multiply is the bound, so the loop is that pair.
int64_t int8_chains_avx2(int64_t iters) {
  __m256i acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_set1_epi16(static_cast<short>(i));
  __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) {
      // Opaque operands for every product: else the identical products would be computed once.
      __asm__ volatile("" : "+x"(a), "+x"(b));
      acc[i] = _mm256_add_epi16(acc[i], _mm256_maddubs_epi16(a, b));
    }
  }
  __m256i s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = _mm256_add_epi16(s, acc[i]);
  return _mm256_extract_epi16(s, 0) + _mm256_extract_epi16(s, 15);
}

float f32_chains_avx2(int64_t iters) {
  __m256 acc[kPeakChains];
  for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it) {
    for (int i = 0; i < kPeakChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    __asm__ volatile("" : "+x"(a), "+x"(b));
  }
  __m256 s = acc[0];
  for (int i = 1; i < kPeakChains; ++i) s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);
}

}  // namespace strata::peak
