// Vectorizable float approximations of exp, tanh and the logistic function, without libm calls:
// scalar forms the compiler vectorizes in each ISA build of a kernel file (fast_exp, fast_tanh,
// fast_sigmoid: element-wise ops) and the same steps as explicit vectors of the including file's
// ISA (fast_exp8/16, fast_tanh8/16: the attention softmax and soft-capping).
//
// Only `static inline` functions: each ISA translation unit gets its own copy compiled with its
// flags (see DEVELOPERS.md on ISA-specific files).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace strata::cpu {

// e^x to ~2e-7 relative error; vectorizable (no libm call): e^x = 2^n * e^r with
// n = round(x log2 e) and r = x - n ln 2 (|r| <= ln 2 / 2) computed in two steps (Cody-Waite: ln 2
// split into a part exact in float products and a correction), so the reduction keeps full
// precision for large |x|; e^r by its Taylor series to degree 7 (truncation error 0.35^8/8! ~
// 5e-9). x is clamped to the range where the result is a normal float, so masked-out scores must
// not be passed in.
static inline float fast_exp(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round(x log2 e)
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187e-6f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n
  return p * std::bit_cast<float>(bits);
}

// 1 / (1 + e^-x).
static inline float fast_sigmoid(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}

// tanh(x) through fast_exp: |x| -> (1 - e) / (1 + e) with e = exp(-2|x|), sign restored; the
// absolute error stays below ~3e-7 (the relative error of e, scaled by e <= 1). Below
// |x| = 1/16, where 1 - e cancels, the odd Taylor series keeps the relative error small too
// (series error (1/16)^7 * 17/315 ~ 2e-10). The vector forms skip that branch: soft-capping
// only needs the absolute bound.
static inline float fast_tanh(float x) {
  const float e = fast_exp(-2.0f * std::fabs(x));
  const float big = std::copysign((1.0f - e) / (1.0f + e), x);
  const float x2 = x * x;
  const float small = x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
  return (x > -0.0625f && x < 0.0625f) ? small : big;
}

#if defined(__AVX512F__)
// fast_exp of 16 lanes, step for step.
static inline __m512 fast_exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic), magic);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-6f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const auto e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

static inline __m512 fast_tanh16(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 e = fast_exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), _mm512_andnot_ps(sign, x)));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  return _mm512_or_ps(t, _mm512_and_ps(sign, x));
}
#endif

#if defined(__AVX2__)
// fast_exp of 8 lanes, step for step.
static inline __m256 fast_exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
  const __m256 magic = _mm256_set1_ps(12582912.0f);
  const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic), magic);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187e-6f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const auto e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static inline __m256 fast_tanh8(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 e = fast_exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), _mm256_andnot_ps(sign, x)));
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  return _mm256_or_ps(t, _mm256_and_ps(sign, x));
}
#endif

}  // namespace strata::cpu
