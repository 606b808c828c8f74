// Q8_K activation quantizer for AVX2: bit-identical to the scalar reference (act_q8_k.cpp).
//
// Same float operations per element as the scalar code (one multiply by iscale, vcvtps2dq
// rounding to nearest even), so q, d and bsums match exactly.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr int kVecs = kQK_K / 8;  // ymm registers per block

static inline __m256 abs_ps(__m256 x) {
  return _mm256_castsi256_ps(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(0x7fffffff)));
}

static inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// The first element of largest magnitude (NaN ignored); 0 when all are zero or NaN.
static inline float signed_max(const float* x) {
  __m256 vmax = _mm256_setzero_ps();
  for (int i = 0; i < kVecs; ++i) vmax = _mm256_max_ps(abs_ps(_mm256_loadu_ps(x + 8 * i)), vmax);
  const float amax = hmax(vmax);
  if (amax == 0.0f) return 0.0f;
  const __m256 target = _mm256_set1_ps(amax);
  for (int i = 0; i < kVecs; ++i) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + 8 * i)), target, _CMP_EQ_OQ));
    if (hit) return x[8 * i + __builtin_ctz(static_cast<unsigned>(hit))];
  }
  return 0.0f;  // unreachable: amax came from one of the elements
}

// 8 floats * iscale -> 8 int32, NaN -> 0.
static inline __m256i quantize8(const float* x, __m256 vscale) {
  const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x), vscale);
  return _mm256_cvtps_epi32(_mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q)));
}

}  // namespace

// x: [n] -> y: [n / 256] blocks. n is a multiple of 256 (the matmul driver checks row lengths when it
// packs a matrix; no STRATA_CHECK here: its message templates must not be instantiated for this ISA).
void quantize_row_q8_k_avx2(const float* x, void* y, int64_t n) {
  auto* out = static_cast<uint8_t*>(y);
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K, out += sizeof(BlockQ8_K)) {
    const float max = signed_max(x);
    if (!(max >= kQ8KMinAmax || max <= -kQ8KMinAmax)) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = -127.0f / max;
    const __m256 vscale = _mm256_set1_ps(iscale);
    uint8_t* qs = out + offsetof(BlockQ8_K, qs);
    int16_t bsums[kQK_K / 16];
    for (int i = 0; i < kQK_K / 32; ++i) {
      const float* xi = x + 32 * i;
      // packs interleave 128-bit lanes: dwords come out as 0,4,1,5,2,6,3,7 -> restore order.
      const __m256i p01 = _mm256_packs_epi32(quantize8(xi, vscale), quantize8(xi + 8, vscale));
      const __m256i p23 = _mm256_packs_epi32(quantize8(xi + 16, vscale), quantize8(xi + 24, vscale));
      const __m256i q = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(p01, p23),
                                                    _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * i), q);
      // Sums of 16: sums of |q + 128| over 8 bytes, pairs added, bias removed.
      const __m256i s8 = _mm256_sad_epu8(_mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80))),
                                         _mm256_setzero_si256());
      const __m256i s16 = _mm256_add_epi64(s8, _mm256_shuffle_epi32(s8, 0x4e));
      bsums[2 * i] = static_cast<int16_t>(_mm256_extract_epi32(s16, 0) - 16 * 128);
      bsums[2 * i + 1] = static_cast<int16_t>(_mm256_extract_epi32(s16, 4) - 16 * 128);
    }
    std::memcpy(out + offsetof(BlockQ8_K, bsums), bsums, sizeof(bsums));
    const float d = 1.0f / iscale;
    std::memcpy(out + offsetof(BlockQ8_K, d), &d, sizeof(d));
  }
}

}  // namespace strata::cpu
