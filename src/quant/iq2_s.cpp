// IQ2_S: super-blocks of 256; per group of 8 a 10-bit kIq2sGrid index (qs | 2 bits of qh) and 8
// explicit sign bits (qs[32 + g]); a 4-bit scale per 16: x = d * (0.5 + s) * 0.25 * grid * sign.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq2_s(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ2_S*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ2_S& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    const uint8_t* signs = x.qs + kQK_K / 8;
    for (int ib = 0; ib < 8; ++ib) {
      const float db[2] = {d * (0.5f + static_cast<float>(x.scales[ib] & 0xF)) * 0.25f,
                           d * (0.5f + static_cast<float>(x.scales[ib] >> 4)) * 0.25f};
      for (int l = 0; l < 4; ++l) {
        const int g = 4 * ib + l;
        const uint64_t grid = kIq2sGrid[x.qs[g] | ((x.qh[ib] << (8 - 2 * l)) & 0x300)];
        float* y = dst + b * kQK_K + 8 * g;
        for (int j = 0; j < 8; ++j)
          y[j] =
              db[l / 2] * static_cast<float>((grid >> (8 * j)) & 0xFF) * ((signs[g] >> j) & 1 ? -1.0f : 1.0f);
      }
    }
  }
}

void quantize_iq2_s(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq2s, 16, 16, 0.25f, IqSigns::Explicit8, IqDelta::None};
  auto* blocks = static_cast<BlockIQ2_S*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ2_S& y = blocks[b];
    y.d = q.d;
    for (int ib = 0; ib < 8; ++ib) {
      y.qh[ib] = 0;
      y.scales[ib] = static_cast<uint8_t>(q.l[2 * ib] | (q.l[2 * ib + 1] << 4));
    }
    for (int g = 0; g < kQK_K / 8; ++g) {
      y.qs[g] = static_cast<uint8_t>(q.grid[g] & 0xFF);
      y.qh[g / 4] = static_cast<uint8_t>(y.qh[g / 4] | ((q.grid[g] >> 8) << (2 * (g % 4))));
      y.qs[kQK_K / 8 + g] = q.sign[g];
    }
  }
}

}  // namespace strata::quant
