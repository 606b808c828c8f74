// IQ2_XS: super-blocks of 256; per group of 8 a u16 of a 9-bit kIq2xsGrid index and 7 sign bits
// (the eighth by parity); a 4-bit scale per 16 elements: x = d * (0.5 + s) * 0.25 * grid * sign.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq2_xs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ2_XS*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ2_XS& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    for (int ib = 0; ib < 8; ++ib) {
      const float db[2] = {d * (0.5f + static_cast<float>(x.scales[ib] & 0xF)) * 0.25f,
                           d * (0.5f + static_cast<float>(x.scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l) {
        const uint16_t q = x.qs[4 * ib + l];
        const uint64_t grid = kIq2xsGrid[q & 511];
        const uint8_t s = iq_signs_from7(q >> 9);
        float* y = dst + b * kQK_K + 32 * ib + 8 * l;
        for (int j = 0; j < 8; ++j)
          y[j] = db[l / 2] * static_cast<float>((grid >> (8 * j)) & 0xFF) * ((s >> j) & 1 ? -1.0f : 1.0f);
      }
    }
  }
}

void quantize_iq2_xs(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq2xs, 16, 16, 0.25f, IqSigns::Parity7, IqDelta::None};
  auto* blocks = static_cast<BlockIQ2_XS*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ2_XS& y = blocks[b];
    y.d = q.d;
    for (int g = 0; g < kQK_K / 8; ++g) y.qs[g] = static_cast<uint16_t>(q.grid[g] | ((q.sign[g] & 127) << 9));
    for (int ib = 0; ib < 8; ++ib) y.scales[ib] = static_cast<uint8_t>(q.l[2 * ib] | (q.l[2 * ib + 1] << 4));
  }
}

}  // namespace strata::quant
