// IQ3_XXS: super-blocks of 256; qs[0..63] index kIq3xxsGrid (4 magnitudes each); per sub-block of
// 32 a u32 (qs[64 + 4 ib]) of 4 x 7 sign bits and the 4-bit scale on top:
// x = d * (0.5 + s) * 0.5 * grid * sign. Dequantization only (llama.cpp's quantizer needs an
// importance matrix).
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq3_xxs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ3_XXS*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ3_XXS& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t aux;
      std::memcpy(&aux, x.qs + kQK_K / 4 + 4 * ib, 4);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l) {
        const uint8_t s = iq_signs_from7(aux >> (7 * l));
        const uint32_t g1 = kIq3xxsGrid[x.qs[8 * ib + 2 * l]], g2 = kIq3xxsGrid[x.qs[8 * ib + 2 * l + 1]];
        float* y = dst + b * kQK_K + 32 * ib + 8 * l;
        for (int j = 0; j < 4; ++j) {
          y[j] = db * static_cast<float>((g1 >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.0f : 1.0f);
          y[j + 4] = db * static_cast<float>((g2 >> (8 * j)) & 0xFF) * ((s >> (j + 4)) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

}  // namespace strata::quant
