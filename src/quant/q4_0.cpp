// Q4_0: blocks of 32, x = d * (q - 8) with q 4-bit. Quantizer: exact scale search of either sign.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

// Levels L = q - 8 span [-8, 7]. The window covers the top levels and a little clipping.
constexpr int kNeg = 8, kPos = 7;
constexpr SearchWindow kWindow = {3.0, 9.0};

}  // namespace

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_0*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const BlockQ4_0& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = ((x.qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = ((x.qs[j] >> 4) - 8) * d;
    }
  }
}

void quantize_q4_0(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ4_0*>(dst);  // [n / 32]
  float x[kQK], w[kQK];
  int L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    const double d = search_signed_scale(x, w, kQK, kNeg, kPos, kWindow, L);
    BlockQ4_0& y = blocks[b];
    y.d = finalize_symmetric(x, w, kQK, kNeg, kPos, d, L);
    for (int j = 0; j < kQK / 2; ++j)
      y.qs[j] = static_cast<uint8_t>((L[j] + 8) | ((L[j + kQK / 2] + 8) << 4));
  }
}

}  // namespace strata::quant
