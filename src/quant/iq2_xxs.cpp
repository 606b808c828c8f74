// IQ2_XXS: super-blocks of 256, 8 sub-blocks of 32 in 8 bytes each: 4 grid indices (kIq2xxsGrid,
// 8 magnitudes each) and a u32 of 4 x 7 sign bits with the 4-bit scale s on top:
// x = d * (0.5 + s) * 0.25 * grid * sign.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
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

void quantize_iq2_xxs(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq2xxs, 32, 16, 0.25f, IqSigns::Parity7, IqDelta::None};
  auto* blocks = static_cast<BlockIQ2_XXS*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ2_XXS& y = blocks[b];
    y.d = q.d;
    uint8_t bytes[2 * kQK_K / 8];  // the u16 qs as bytes: per sub-block 4 indices, then a u32
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t aux = static_cast<uint32_t>(q.l[ib]) << 28;
      for (int l = 0; l < 4; ++l) {
        bytes[8 * ib + l] = static_cast<uint8_t>(q.grid[4 * ib + l]);
        aux |= static_cast<uint32_t>(q.sign[4 * ib + l] & 127) << (7 * l);
      }
      std::memcpy(bytes + 8 * ib + 4, &aux, 4);
    }
    std::memcpy(y.qs, bytes, sizeof bytes);
  }
}

}  // namespace strata::quant
