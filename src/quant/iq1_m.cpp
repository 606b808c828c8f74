// IQ1_M: super-blocks of 256; per group of 8 an 11-bit kIq1sGrid index (qs | 3 bits of a qh
// nibble << 8) and, in the nibble's top bit, the sign of delta; a 3-bit scale per 16 elements and
// an fp16 super-block scale spread over the scales' top nibbles (iq_tables.h):
// x = d * (2 s + 1) * (grid + delta), delta = +-1/8.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
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

void quantize_iq1_m(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq1s, 16, 8, 2.0f, IqSigns::None, IqDelta::PerGroup};
  auto* blocks = static_cast<BlockIQ1_M*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ1_M& y = blocks[b];
    for (int g = 0; g < kQK_K / 8; ++g) {
      y.qs[g] = static_cast<uint8_t>(q.grid[g] & 0xFF);
      const int nibble = (q.grid[g] >> 8) | (q.delta_neg[g] << 3);
      if (g % 2 == 0)
        y.qh[g / 2] = static_cast<uint8_t>(nibble);
      else
        y.qh[g / 2] = static_cast<uint8_t>(y.qh[g / 2] | (nibble << 4));
    }
    // 3-bit scales, four per u16; the fp16 d's nibbles on top of the four u16.
    uint16_t sc[4] = {};
    for (int h = 0; h < 16; ++h) sc[h / 4] = static_cast<uint16_t>(sc[h / 4] | (q.l[h] << (3 * (h % 4))));
    for (int j = 0; j < 4; ++j) sc[j] = static_cast<uint16_t>(sc[j] | (((q.d >> (4 * j)) & 0xF) << 12));
    std::memcpy(y.scales, sc, sizeof sc);
  }
}

}  // namespace strata::quant
