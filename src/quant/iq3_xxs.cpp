// IQ3_XXS: super-blocks of 256; qs[0..63] index kIq3xxsGrid (4 magnitudes each); per sub-block of
// 32 a u32 (qs[64 + 4 ib]) of 4 x 7 sign bits and the 4-bit scale on top:
// x = d * (0.5 + s) * 0.5 * grid * sign.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
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

void quantize_iq3_xxs(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq3xxs, 32, 16, 0.5f, IqSigns::Parity7, IqDelta::None};
  auto* blocks = static_cast<BlockIQ3_XXS*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ3_XXS& y = blocks[b];
    y.d = q.d;
    for (int i = 0; i < kQK_K / 4; ++i) y.qs[i] = static_cast<uint8_t>(q.grid[i]);
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t aux = static_cast<uint32_t>(q.l[ib]) << 28;
      for (int l = 0; l < 4; ++l) aux |= static_cast<uint32_t>(q.sign[4 * ib + l] & 127) << (7 * l);
      std::memcpy(y.qs + kQK_K / 4 + 4 * ib, &aux, 4);
    }
  }
}

}  // namespace strata::quant
