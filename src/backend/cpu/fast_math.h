// Vectorizable float approximations of exp, tanh and the logistic function for the element-wise
// kernels: plain arithmetic and bit casts only (no libm calls), so the compiler vectorizes the
// loops that use them for each ISA build of a kernel file.
//
// Only `static inline` functions: each ISA translation unit gets its own copy compiled with its
// flags (see DEVELOPERS.md on ISA-specific files).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

namespace strata::cpu {

// e^x to ~2e-7 relative error: e^x = 2^n * e^r with n = round(x log2 e) and r = x - n ln 2
// (|r| <= ln 2 / 2) computed in two steps (Cody-Waite: ln 2 split into a part exact in float
// products and a correction), so the reduction keeps full precision for large |x|; e^r by its
// Taylor series to degree 7 (truncation error 0.35^8/8! ~ 5e-9). x is clamped to the range
// whose result is a normal float.
static inline float exp_approx(float x) {
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
static inline float sigmoid_approx(float x) {
  return 1.0f / (1.0f + exp_approx(-x));
}

// tanh(x) to ~3e-7 absolute error: 1 - 2 / (e^2x + 1), and its odd Taylor series below
// |x| = 1/16, where the subtraction would cancel (series error (1/16)^7 * 17/315 ~ 2e-10).
static inline float tanh_approx(float x) {
  const float big = 1.0f - 2.0f / (exp_approx(2.0f * x) + 1.0f);
  const float x2 = x * x;
  const float small = x * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
  return (x > -0.0625f && x < 0.0625f) ? small : big;
}

}  // namespace strata::cpu
