// Q8_K activation quantizer for AVX-512: bit-identical to the scalar reference (act_q8_k.cpp).
//
// The same float operations are done in the same order per element (one multiply by iscale,
// round to nearest even by vcvtps2dq under the default MXCSR mode), so every q, d and bsum
// matches exactly; the first element of largest magnitude is found with a compare mask.
#include <immintrin.h>

// GCC 12's AVX-512 headers self-initialise their "undefined" vectors, which -Wall reports as
// uninitialised once inlined; the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr int kVecs = kQK_K / 16;  // zmm registers per block

// Bit-pattern |x| (clears the sign) so that NaN stays NaN and max ignores it like the scalar.
static inline __m512 abs_ps(__m512 x) {
  return _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

// The first element of largest magnitude (NaN ignored); 0 when all are zero or NaN.
static inline float signed_max(const float* x) {
  __m512 vmax = _mm512_setzero_ps();
  for (int i = 0; i < kVecs; ++i) vmax = _mm512_max_ps(abs_ps(_mm512_loadu_ps(x + 16 * i)), vmax);
  const float amax = _mm512_reduce_max_ps(vmax);
  if (amax == 0.0f) return 0.0f;
  const __m512 target = _mm512_set1_ps(amax);
  for (int i = 0; i < kVecs; ++i) {
    const __mmask16 hit = _mm512_cmp_ps_mask(abs_ps(_mm512_loadu_ps(x + 16 * i)), target, _CMP_EQ_OQ);
    if (hit) return x[16 * i + __builtin_ctz(hit)];
  }
  return 0.0f;  // unreachable: amax came from one of the elements
}

// 64 int8 quants -> 4 bsums (sums of 16), via sums of |q + 128| over 8 bytes.
static inline __m128i group_sums(__m512i q) {
  const __m512i biased = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  const __m512i s8 = _mm512_sad_epu8(biased, _mm512_setzero_si512());  // [8] u64: sums of 8
  const __m512i s16 =
      _mm512_add_epi64(s8, _mm512_shuffle_epi32(s8, _MM_PERM_BADC));              // even lanes: sums of 16
  const __m512i packed = _mm512_maskz_compress_epi64(0x55, s16);                  // lanes 0..3
  return _mm_sub_epi16(_mm512_cvtepi64_epi16(packed), _mm_set1_epi16(16 * 128));  // int16 x4 (low 64 bits)
}

}  // namespace

// x: [n] -> y: [n / 256] blocks. n is a multiple of 256 (the matmul driver checks row lengths when it
// packs a matrix; no STRATA_CHECK here: its message templates must not be instantiated for this ISA).
void quantize_row_q8_k_avx512(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K, out += sizeof(BlockQ8_K)) {
    const float max = signed_max(x);
    if (!(max >= kQ8KMinAmax || max <= -kQ8KMinAmax)) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    const __m512 vscale = _mm512_set1_ps(iscale);
    uint8_t* qs = out + offsetof(BlockQ8_K, qs);
    for (int i = 0; i < kVecs; ++i) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * i), vscale);
      const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);  // NaN lanes -> 0
      const __m512i q = _mm512_maskz_cvtps_epi32(ordered, v);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * i), _mm512_cvtsepi32_epi8(q));
    }
    uint8_t* bsums = out + offsetof(BlockQ8_K, bsums);
    for (int i = 0; i < 4; ++i) {
      const __m128i sums = group_sums(_mm512_loadu_si512(qs + 64 * i));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(bsums + 8 * i), sums);
    }
    const float d = 1.0f / iscale;
    std::memcpy(out + offsetof(BlockQ8_K, d), &d, sizeof(d));
  }
}

}  // namespace strata::cpu
