// Q8_1: the activation format of the legacy offset types: blocks of 32, x = d * q, plus
// s = d * sum(q) for the offset term of the dot product. Quantized exactly as llama.cpp does
// (d = amax / 127, q = round(x / d)) so that results stay within its calibration; importance
// is ignored. Non-finite input is sanitized first, and d never overflows to inf.
#include <cmath>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_1*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = blocks[b].qs[j] * d;
  }
}

void quantize_q8_1(const float* src, void* dst, int64_t n, const float*) {
  auto* blocks = static_cast<BlockQ8_1*>(dst);  // [n / 32]
  float x[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    // A denormal d has an inverse beyond float range: scale in double then (0 * inf is NaN).
    const double id_wide = d != 0 ? 1.0 / d : 0.0;
    const bool wide = !std::isfinite(id);
    BlockQ8_1& y = blocks[b];
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      const double v = wide ? std::round(x[j] * id_wide) : std::round(x[j] * id);
      y.qs[j] = static_cast<int8_t>(std::fmax(-127.0, std::fmin(127.0, v)));
      sum += y.qs[j];
    }
    y.d = to_fp16_clamped(d);
    y.s = to_fp16_clamped(static_cast<double>(sum * d));
  }
}

}  // namespace strata::quant
