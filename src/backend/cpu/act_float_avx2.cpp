// AVX2 (F16C) versions of the float activation converters; bit-identical to act_float.cpp.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/simd_avx2.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

// 8 floats -> 8 bfloat16 (in the low 16 bits of each int32), rounding as f32_to_bf16.
__m256i to_bf16_bits(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i is_nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64));
  return _mm256_blendv_epi8(rounded, quiet, is_nan);
}

}  // namespace

void quantize_row_f16_avx2(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) {
    const fp16_t h = f32_to_fp16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void quantize_row_bf16_avx2(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    // packus interleaves the 128-bit lanes; the 64-bit permutation restores element order.
    const __m256i packed =
        _mm256_packus_epi32(to_bf16_bits(_mm256_loadu_ps(x + i)), to_bf16_bits(_mm256_loadu_ps(x + i + 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), _mm256_permute4x64_epi64(packed, 0xd8));
  }
  for (; i < n; ++i) {
    const bf16_t h = f32_to_bf16(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

}  // namespace strata::cpu
