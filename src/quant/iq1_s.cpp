// IQ1_S: super-blocks of 256; per group of 8 an 11-bit kIq1sGrid index (qs | 3 bits of qh << 8,
// grid values in {-1, 0, 1}); per 32, qh bits 12..14: scale s, bit 15: the sign of delta:
// x = d * (2 s + 1) * (grid + delta), delta = +-1/8.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
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

void quantize_iq1_s(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq1s, 32, 8, 2.0f, IqSigns::None, IqDelta::PerSubBlock};
  auto* blocks = static_cast<BlockIQ1_S*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ1_S& y = blocks[b];
    y.d = q.d;
    for (int ib = 0; ib < 8; ++ib) {
      uint32_t qh =
          (static_cast<uint32_t>(q.l[ib]) << 12) | (static_cast<uint32_t>(q.delta_neg[4 * ib]) << 15);
      for (int l = 0; l < 4; ++l) {
        y.qs[4 * ib + l] = static_cast<uint8_t>(q.grid[4 * ib + l] & 0xFF);
        qh |= static_cast<uint32_t>(q.grid[4 * ib + l] >> 8) << (3 * l);
      }
      y.qh[ib] = static_cast<uint16_t>(qh);
    }
  }
}

}  // namespace strata::quant
