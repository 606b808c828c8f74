// TQ2_0: ternary super-blocks of 256, x = d * (q - 1) with q in {0, 1, 2} stored in 2 bits:
// element 128 c + 32 l + m in bits 2l of qs[32 c + m]. Quantizer: quant/ternary_search.h.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/ternary_search.h"

namespace strata::quant {

void dequantize_tq2_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockTQ2_0*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float* y = dst + b * kQK_K;
    for (int c = 0; c < 2; ++c)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 32; ++m)
          y[128 * c + 32 * l + m] = static_cast<float>(((blocks[b].qs[32 * c + m] >> (2 * l)) & 3) - 1) * d;
  }
}

void quantize_tq2_0(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockTQ2_0*>(dst);  // [n / 256]
  int8_t t[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    BlockTQ2_0& y = blocks[b];
    y.d = quantize_ternary(src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, t);
    for (int c = 0; c < 2; ++c)
      for (int m = 0; m < 32; ++m) {
        int byte = 0;
        for (int l = 0; l < 4; ++l) byte |= (t[128 * c + 32 * l + m] + 1) << (2 * l);
        y.qs[32 * c + m] = static_cast<uint8_t>(byte);
      }
  }
}

}  // namespace strata::quant
