// AVX-512 versions of the float activation converters; bit-identical to act_float.cpp.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {
namespace {

// 16 floats -> 16 bfloat16, rounding as f32_to_bf16 (vcvtneps2bf16 would flush denormals).
__m256i to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                   _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_or_epi32(r, is_nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(64));
  return _mm512_cvtepi32_epi16(r);
}

__mmask16 tail_mask(int64_t left) {
  return static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
}

}  // namespace

void quantize_row_f16_avx512(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(out + 2 * i, m, h);
  }
}

void quantize_row_bf16_avx512(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    _mm256_mask_storeu_epi16(out + 2 * i, m, to_bf16(_mm512_maskz_loadu_ps(m, x + i)));
  }
}

}  // namespace strata::cpu
