#include "quant/ternary_search.h"

#include <cmath>

#include "quant/blocks.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

// Error of the levels round(x / d) clamped to [-1, 1] at the decoded scale d, levels into t.
double ternary_error(const float* x, const float* w, float d, int8_t* t) {
  double err = 0;
  for (int i = 0; i < kQK_K; ++i) {
    t[i] = static_cast<int8_t>(d != 0 ? round_clamp(x[i] / d, -1, 1) : 0);
    const double e = static_cast<double>(x[i]) - static_cast<double>(static_cast<float>(t[i]) * d);
    err += w[i] * e * e;
  }
  return err;
}

}  // namespace

fp16_t quantize_ternary(const float* src, const float* importance, int8_t* t) {
  float x[kQK_K], w[kQK_K];
  sanitize_block(src, x, kQK_K);
  block_weights(importance, w, kQK_K);
  float amax = 0;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  if (amax == 0) {
    for (int i = 0; i < kQK_K; ++i) t[i] = 0;
    return 0;
  }
  int8_t cand[kQK_K];
  double best = INFINITY;
  fp16_t best_d = 0;
  for (int k = 0; k <= 8; ++k) {
    ternary_error(x, w, amax * (1.0f - k / 12.0f), cand);
    double sxt = 0, stt = 0;
    for (int i = 0; i < kQK_K; ++i)
      sxt += static_cast<double>(w[i]) * x[i] * cand[i], stt += w[i] * std::fabs(cand[i]);
    if (stt == 0) continue;
    const fp16_t d = to_fp16_scale(sxt / stt);
    const double err = ternary_error(x, w, fp16_to_f32(d), cand);
    if (err < best) best = err, best_d = d;
  }
  ternary_error(x, w, fp16_to_f32(best_d), t);
  return best_d;
}

}  // namespace strata::quant
