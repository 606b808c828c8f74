// IQ1_M: super-blocks of 256; per group of 8 an 11-bit kIq1sGrid index (qs | 3 bits of a qh
// nibble << 8) and, in the nibble's top bit, the sign of delta; a 3-bit scale per 16 elements and
// an fp16 super-block scale spread over the scales' top nibbles (iq_tables.h):
// x = d * (2 s + 1) * (grid + delta), delta = +-1/8. Dequantization only (llama.cpp's quantizer
// needs an importance matrix).
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq1_m(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ1_M*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ1_M& x = blocks[b];
    const float d = fp16_to_f32(iq1_m_scale(x.scales));
    for (int g = 0; g < 32; ++g) {
      const int nibble = (x.qh[g / 2] >> (4 * (g % 2))) & 0xF;
      const uint64_t grid = kIq1sGrid[x.qs[g] | ((nibble & 7) << 8)];
      const float delta = nibble & 8 ? -0.125f : 0.125f;
      const float dl = d * static_cast<float>(2 * iq1_m_sub_scale(x.scales, g / 2) + 1);
      float* y = dst + b * kQK_K + 8 * g;
      for (int j = 0; j < 8; ++j)
        y[j] = dl * (static_cast<float>(static_cast<int8_t>((grid >> (8 * j)) & 0xFF)) + delta);
    }
  }
}

}  // namespace strata::quant
