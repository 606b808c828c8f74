// TQ1_0: ternary super-blocks of 256, x = d * (t - 1), 5 trits per byte (3^5 = 243 <= 256) in
// qs and 4 per byte in qh (layout in quant/blocks.h). A byte stores the trits t_0..t_4 (t_0 most
// significant) as ceil(256 * sum t_n 3^(4 - n) / 243), which iq_tables.h's tq1_trit inverts
// exactly. Quantizer: quant/ternary_search.h.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"
#include "quant/ternary_search.h"

namespace strata::quant {
namespace {

// Trits t: [k] in {0, 1, 2}, k <= 5, most significant first, padded to 5 with zeros.
uint8_t pack_trits(const int* t, int k) {
  int v = 0;
  for (int n = 0; n < 5; ++n) v = 3 * v + (n < k ? t[n] : 0);
  return static_cast<uint8_t>((v * 256 + 242) / 243);
}

}  // namespace

void dequantize_tq1_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockTQ1_0*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockTQ1_0& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    float* y = dst + b * kQK_K;
    for (int t = 0; t < 5; ++t)
      for (int m = 0; m < 32; ++m) y[32 * t + m] = static_cast<float>(tq1_trit(x.qs[m], t) - 1) * d;
    for (int t = 0; t < 5; ++t)
      for (int m = 0; m < 16; ++m)
        y[160 + 16 * t + m] = static_cast<float>(tq1_trit(x.qs[32 + m], t) - 1) * d;
    for (int t = 0; t < 4; ++t)
      for (int j = 0; j < 4; ++j) y[240 + 4 * t + j] = static_cast<float>(tq1_trit(x.qh[j], t) - 1) * d;
  }
}

void quantize_tq1_0(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockTQ1_0*>(dst);  // [n / 256]
  int8_t l[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    BlockTQ1_0& y = blocks[b];
    y.d = quantize_ternary(src + b * kQK_K, importance ? importance + b * kQK_K : nullptr, l);
    int t[5];
    for (int m = 0; m < 32; ++m) {
      for (int k = 0; k < 5; ++k) t[k] = l[32 * k + m] + 1;
      y.qs[m] = pack_trits(t, 5);
    }
    for (int m = 0; m < 16; ++m) {
      for (int k = 0; k < 5; ++k) t[k] = l[160 + 16 * k + m] + 1;
      y.qs[32 + m] = pack_trits(t, 5);
    }
    for (int j = 0; j < 4; ++j) {
      for (int k = 0; k < 4; ++k) t[k] = l[240 + 4 * k + j] + 1;
      y.qh[j] = pack_trits(t, 4);
    }
  }
}

}  // namespace strata::quant
