// IQ3_S: super-blocks of 256; per 4 elements a 9-bit kIq3sGrid index (qs[i] | bit i % 8 of
// qh[i / 8] << 8), per 8 elements 8 sign bits, per 32 a 4-bit scale: x = d * (1 + 2 s) * grid *
// sign.
// Quantizer: quant/iq_search.h (signs split off, weighted nearest grid points, sub-block and
// super-block scale searches); this file packs its result.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_search.h"
#include "quant/iq_tables.h"

namespace strata::quant {

void dequantize_iq3_s(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ3_S*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ3_S& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    for (int ib = 0; ib < 8; ++ib) {
      const int s = (x.scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
      const float db = d * static_cast<float>(1 + 2 * s);
      for (int l = 0; l < 4; ++l) {
        const int i = 8 * ib + 2 * l;  // index of the first of the group's two grid entries
        const uint32_t g1 = kIq3sGrid[x.qs[i] | ((x.qh[ib] << (8 - 2 * l)) & 256)];
        const uint32_t g2 = kIq3sGrid[x.qs[i + 1] | ((x.qh[ib] << (7 - 2 * l)) & 256)];
        const uint8_t sg = x.signs[4 * ib + l];
        float* y = dst + b * kQK_K + 32 * ib + 8 * l;
        for (int j = 0; j < 4; ++j) {
          y[j] = db * static_cast<float>((g1 >> (8 * j)) & 0xFF) * ((sg >> j) & 1 ? -1.0f : 1.0f);
          y[j + 4] = db * static_cast<float>((g2 >> (8 * j)) & 0xFF) * ((sg >> (j + 4)) & 1 ? -1.0f : 1.0f);
        }
      }
    }
  }
}

void quantize_iq3_s(const float* src, void* dst, int64_t n, const float* importance) {
  static constexpr IqSpec kSpec{IqGrid::Iq3s, 32, 16, 2.0f, IqSigns::Explicit8, IqDelta::None};
  auto* blocks = static_cast<BlockIQ3_S*>(dst);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    IqBlock q;
    iq_quantize_block(kSpec, src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, &q);
    BlockIQ3_S& y = blocks[b];
    y.d = q.d;
    for (int ib = 0; ib < 8; ++ib) y.qh[ib] = 0;
    for (int i = 0; i < kQK_K / 4; ++i) {
      y.qs[i] = static_cast<uint8_t>(q.grid[i] & 0xFF);
      y.qh[i / 8] = static_cast<uint8_t>(y.qh[i / 8] | ((q.grid[i] >> 8) << (i % 8)));
    }
    for (int g = 0; g < kQK_K / 8; ++g) y.signs[g] = q.sign[g];
    for (int j = 0; j < 4; ++j) y.scales[j] = static_cast<uint8_t>(q.l[2 * j] | (q.l[2 * j + 1] << 4));
  }
}

}  // namespace strata::quant
