// Q4_1: blocks of 32, x = d * q + m with q 4-bit (nibble order as Q4_0). Quantizer: multi-start
// least-squares fit of scale and offset, then fp16 rounding with re-levelling.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kNmax = 15;

}  // namespace

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_1*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const BlockQ4_1& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    const float m = fp16_to_f32(x.m);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = (x.qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = (x.qs[j] >> 4) * d + m;
    }
  }
}

void quantize_q4_1(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ4_1*>(dst);  // [n / 32]
  float x[kQK], w[kQK];
  int L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    const AffineFit fit = search_affine(x, w, kQK, kNmax, false, L);
    BlockQ4_1& y = blocks[b];
    finalize_affine(x, w, kQK, kNmax, fit, &y.d, &y.m, L);
    for (int j = 0; j < kQK / 2; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
  }
}

}  // namespace strata::quant
