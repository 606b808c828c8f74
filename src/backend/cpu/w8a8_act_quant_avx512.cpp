// AVX-512 W8A8 activation quantization (w8a8_kernels.h): 16 floats per step, the tail under a
// mask (masked-off lanes load as 0, which neither raises the max nor adds to the sum). Quants are
// packed with vpmovsdb (the values are already in [-127, 127], so it only narrows).
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {
namespace {

static inline __mmask16 tail_mask(int64_t n) {
  return static_cast<__mmask16>((1u << n) - 1);
}

// max_k |x[k]|: vmaxps returns its second operand when the first is NaN, as std::max(acc, NaN)
// returns acc.
static inline float abs_max(const float* x, int64_t n) {
  __m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= n; k += 32) {
    m0 = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + k)), m0);
    m1 = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + k + 16)), m1);
  }
  for (; k < n; k += 16) {
    const __mmask16 m = n - k >= 16 ? static_cast<__mmask16>(0xFFFF) : tail_mask(n - k);
    m0 = _mm512_max_ps(_mm512_abs_ps(_mm512_maskz_loadu_ps(m, x + k)), m0);
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, _mm512_max_ps(m0, m1));
  float r = 0.0f;
  for (float v : lanes) r = r > v ? r : v;
  return r;
}

// 16 quants of x * id: clamp (vmaxps(NaN, -127) is -127, as in w8a8_quant_one), then
// vcvtps2dq's round to nearest even.
static inline __m512i quant16(__m512 x, __m512 id) {
  const __m512 v =
      _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(x, id), _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtps_epi32(v);
}

}  // namespace

float w8a8_quantize_act_avx512(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                               int32_t* sum) {
  const float amax = static_absmax > 0.0f ? static_absmax : abs_max(x, n_in);
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
  __m512i s = _mm512_setzero_si512();
  int64_t k = 0;
  for (; k + 16 <= n_in; k += 16) {
    const __m512i v = quant16(_mm512_loadu_ps(x + k), id);
    s = _mm512_add_epi32(s, v);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + k), _mm512_cvtsepi32_epi8(v));
  }
  if (k < n_in) {
    const __mmask16 m = tail_mask(n_in - k);
    const __m512i v = _mm512_maskz_mov_epi32(m, quant16(_mm512_maskz_loadu_ps(m, x + k), id));
    s = _mm512_add_epi32(s, v);
    _mm512_mask_cvtsepi32_storeu_epi8(q + k, m, v);
    k = n_in;
  }
  if (kp > k) std::memset(q + k, 0, static_cast<size_t>(kp - k));
  *sum = _mm512_reduce_add_epi32(s);  // |sum| <= 127 * kW8A8MaxK: no overflow
  return d;
}

}  // namespace strata::cpu
