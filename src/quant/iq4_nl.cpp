// IQ4_NL: blocks of 32, x = d * kIq4nlValues[q] (non-linear 4-bit levels), q in Q4_0's nibble
// order. Quantizer: level-table scale search (level_search.h), then the fp16 scale refined.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"
#include "quant/level_search.h"
#include "quant/scale_search.h"

namespace strata::quant {

void dequantize_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_NL*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    float* y = dst + b * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * kIq4nlValues[blocks[b].qs[j] & 0xF];
      y[j + kQK / 2] = d * kIq4nlValues[blocks[b].qs[j] >> 4];
    }
  }
}

void quantize_iq4_nl(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockIQ4_NL*>(dst);  // [n / 32]
  const LevelTable& t = iq4nl_levels();
  float x[kQK], w[kQK];
  uint8_t q[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    double d = 0;
    search_level_scale(t, x, w, kQK, &d);
    blocks[b].d = finalize_level_block(t, x, w, kQK, d, q);
    for (int j = 0; j < kQK / 2; ++j) blocks[b].qs[j] = static_cast<uint8_t>(q[j] | (q[j + kQK / 2] << 4));
  }
}

}  // namespace strata::quant
