// AVX2 W8A8 activation quantization (w8a8_kernels.h): 32 floats per step, narrowed to bytes with
// two rounds of signed saturating packs (the values are already in [-127, 127]) and a lane
// permute; the last < 32 elements run the scalar formula (w8a8_quant_one), which is the same.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

// max_k |x[k]|: vmaxps returns its second operand when the first is NaN, as std::max(acc, NaN)
// returns acc.
static inline float abs_max(const float* x, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    m0 = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + k), abs_mask), m0);
    m1 = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + k + 8), abs_mask), m1);
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(m0, m1));
  float r = 0.0f;
  for (float v : lanes) r = r > v ? r : v;
  for (; k < n; ++k) r = std::max(r, std::fabs(x[k]));
  return r;
}

// 8 quants of x * id: clamp (vmaxps(NaN, -127) is -127, as in w8a8_quant_one), then
// vcvtps2dq's round to nearest even.
static inline __m256i quant8(const float* x, __m256 id) {
  const __m256 v = _mm256_min_ps(
      _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x), id), _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(v);
}

}  // namespace

float w8a8_quantize_act_avx2(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                             int32_t* sum) {
  const float amax = static_absmax > 0.0f ? static_absmax : abs_max(x, n_in);
  const float d = amax / 127.0f;
  const float idf = d > 0.0f ? 1.0f / d : 0.0f;
  const __m256 id = _mm256_set1_ps(idf);
  __m256i s = _mm256_setzero_si256();
  int64_t k = 0;
  for (; k + 32 <= n_in; k += 32) {
    const __m256i v0 = quant8(x + k, id), v1 = quant8(x + k + 8, id);
    const __m256i v2 = quant8(x + k + 16, id), v3 = quant8(x + k + 24, id);
    s = _mm256_add_epi32(s, _mm256_add_epi32(_mm256_add_epi32(v0, v1), _mm256_add_epi32(v2, v3)));
    // packs work within 128-bit lanes: bytes come out as 32-bit groups 0 2 4 6 1 3 5 7.
    const __m256i b = _mm256_packs_epi16(_mm256_packs_epi32(v0, v1), _mm256_packs_epi32(v2, v3));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + k),
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  int32_t total = 0;
  for (int32_t v : lanes) total += v;  // |sum| <= 127 * kW8A8MaxK: no overflow
  for (; k < n_in; ++k) {
    const int v = w8a8_quant_one(x[k] * idf);
    q[k] = static_cast<int8_t>(v);
    total += v;
  }
  if (kp > n_in) std::memset(q + n_in, 0, static_cast<size_t>(kp - n_in));
  *sum = total;
  return d;
}

}  // namespace strata::cpu
