// IQ2_XXS: super-blocks of 256, 8 sub-blocks of 32 in 8 bytes each: 4 grid indices (kIq2xxsGrid,
// 8 magnitudes each) and a u32 of 4 x 7 sign bits with the 4-bit scale s on top:
// x = d * (0.5 + s) * 0.25 * grid * sign. Dequantization only: llama.cpp's quantizer for it needs
// an importance matrix (not implemented).
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq2_xxs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ2_XXS*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float* y = dst + b * kQK_K;
    for (int ib = 0; ib < 8; ++ib, y += 32) {
      uint8_t idx[4];
      uint32_t signs;
      std::memcpy(idx, blocks[b].qs + 4 * ib, 4);
      std::memcpy(&signs, blocks[b].qs + 4 * ib + 2, 4);
      const float db = d * (0.5f + static_cast<float>(signs >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l) {
        const uint64_t grid = kIq2xxsGrid[idx[l]];
        const uint8_t s = iq_signs_from7(signs >> (7 * l));
        for (int j = 0; j < 8; ++j)
          y[8 * l + j] = db * static_cast<float>((grid >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.0f : 1.0f);
      }
    }
  }
}

}  // namespace strata::quant
