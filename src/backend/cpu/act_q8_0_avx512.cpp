// AVX-512 versions of the 8-bit activation quantizers (act_q8_0.cpp is the reference; results
// are bit-identical).
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// Quantizes one block of 32 into out (32 bytes, any address); returns d, sets *sum.
float quantize_block(const float* x, uint8_t* out, int* sum) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
  const __m512 amax = _mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1));
  const float d = _mm512_reduce_max_ps(amax) / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, id));  // nearest even
  const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, id));
  *sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(q1));
  return d;
}

}  // namespace

void quantize_row_q8_0_avx512(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_0)) {
    int sum;
    const float d = quantize_block(x + b * kQK, out + offsetof(BlockQ8_0, qs), &sum);
    store_half(out + offsetof(BlockQ8_0, d), d);
  }
}

void quantize_row_q8_1_avx512(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK; ++b, out += sizeof(BlockQ8_1)) {
    int sum;
    const float d = quantize_block(x + b * kQK, out + offsetof(BlockQ8_1, qs), &sum);
    store_half(out + offsetof(BlockQ8_1, d), d);
    store_half(out + offsetof(BlockQ8_1, s), d * static_cast<float>(sum));
  }
}

}  // namespace strata::cpu
