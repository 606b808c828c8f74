// AVX2 versions of the 8-bit activation quantizers (act_q8_0.cpp is the reference; results are
// bit-identical: same amax, same d, same x * (1/d) rounded to nearest even).
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/simd_avx2.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// Quantizes one block of 32 into out (32 bytes, any address); returns d, sets *sum.
float quantize_block(const float* x, uint8_t* out, int* sum) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
  const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
  const __m256 amax = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1)),
                                    _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
  const float d = hmax_f32x8(amax) / 127.0f;
  const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id));  // MXCSR default: nearest even
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
  *sum = hsum_i32x8(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
  // The packs work per 128-bit lane: dword k of the result holds 4 bytes of vector (k % 4),
  // half (k / 4); the permutation restores element order.
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  const __m256i ordered = _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
  return d;
}

}  // namespace

void quantize_row_q8_0_avx2(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_0)) {
    int sum;
    const float d = quantize_block(x + b * kQK, out + offsetof(BlockQ8_0, qs), &sum);
    store_half(out + offsetof(BlockQ8_0, d), d);
  }
}

void quantize_row_q8_1_avx2(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_1)) {
    int sum;
    const float d = quantize_block(x + b * kQK, out + offsetof(BlockQ8_1, qs), &sum);
    store_half(out + offsetof(BlockQ8_1, d), d);
    store_half(out + offsetof(BlockQ8_1, s), d * static_cast<float>(sum));
  }
}

}  // namespace strata::cpu
