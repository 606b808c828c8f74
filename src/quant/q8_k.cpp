// Q8_K: the activation format of the K-quant dot products: super-blocks of 256, x = d * q with
// a float d and per-16 sums of q. Quantized exactly as llama.cpp does (q = round(-127 x / max)
// where max is the element of largest magnitude, so d is negative when max is positive);
// importance is ignored. Non-finite input is sanitized and magnitudes are clamped to 1e38 first;
// a scale whose inverse overflows a float (denormal input) is computed in double instead.
#include <cmath>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr float kMaxInput = 1e38f;

}  // namespace

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b)
    for (int j = 0; j < kQK_K; ++j) dst[b * kQK_K + j] = blocks[b].d * blocks[b].qs[j];
}

void quantize_q8_k(const float* src, void* dst, int64_t n, const float*) {
  auto* blocks = static_cast<BlockQ8_K*>(dst);  // [n / 256]
  float x[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    // Beyond 1e38, d * 127 could round past FLT_MAX: clamp so that decoding stays finite.
    for (float& v : x) v = std::fmax(-kMaxInput, std::fmin(kMaxInput, v));
    BlockQ8_K& y = blocks[b];
    float max = 0, amax = 0;
    for (int j = 0; j < kQK_K; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float iscale = -127.0f / max;
    if (amax == 0) {
      y.d = 0;
      for (int j = 0; j < kQK_K; ++j) y.qs[j] = 0;
    } else if (std::isfinite(iscale)) {
      for (int j = 0; j < kQK_K; ++j) y.qs[j] = static_cast<int8_t>(round_clamp(iscale * x[j], -128, 127));
      y.d = 1 / iscale;
    } else {
      const double iscale_wide = -127.0 / max;
      for (int j = 0; j < kQK_K; ++j)
        y.qs[j] = static_cast<int8_t>(round_clamp(iscale_wide * x[j], -128, 127));
      y.d = static_cast<float>(1 / iscale_wide);
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y.qs[g * 16 + j];
      y.bsums[g] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace strata::quant
