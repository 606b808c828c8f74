// IQ1_S: super-blocks of 256; per group of 8 an 11-bit kIq1sGrid index (qs | 3 bits of qh << 8,
// grid values in {-1, 0, 1}); per 32, qh bits 12..14: scale s, bit 15: the sign of delta:
// x = d * (2 s + 1) * (grid + delta), delta = +-1/8. Dequantization only (llama.cpp's quantizer
// needs an importance matrix).
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq1_s(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ1_S*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ1_S& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t qh = x.qh[ib];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = qh & 0x8000 ? -0.125f : 0.125f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIq1sGrid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        float* y = dst + b * kQK_K + 32 * ib + 8 * l;
        for (int j = 0; j < 8; ++j)
          y[j] = dl * (static_cast<float>(static_cast<int8_t>((grid >> (8 * j)) & 0xFF)) + delta);
      }
    }
  }
}

}  // namespace strata::quant
