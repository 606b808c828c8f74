// Q2_K: super-blocks of 256 in 16 sub-blocks of 16, x = d * sc * q - dmin * m, q 2-bit,
// sc and m 4-bit (scales[j] = sc | m << 4). Levels: within each half of 128, byte l of its 32
// holds elements l, l + 32, l + 64, l + 96 in bit pairs 0-1, 2-3, 4-5, 6-7.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

constexpr AffineKSpec kSpec = {16, 3, 15};

}  // namespace

void dequantize_q2_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ2_K& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    const float dmin = fp16_to_f32(x.dmin);
    float* y = dst + b * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
      const int q = (x.qs[half * 32 + l] >> (2 * pair)) & 3;
      const uint8_t sc = x.scales[e / 16];
      const float dl = d * (sc & 0xF);
      const float ml = dmin * (sc >> 4);
      y[e] = dl * q - ml;
    }
  }
}

void quantize_q2_k(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ2_K*>(dst);  // [n / 256]
  float x[kQK_K];
  AffineKBlock r;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    quantize_affine_k(kSpec, x, importance ? importance + b * kQK_K : nullptr, &r);
    BlockQ2_K& y = blocks[b];
    y.d = r.d;
    y.dmin = r.dmin;
    for (int j = 0; j < kQK_K / 16; ++j) y.scales[j] = static_cast<uint8_t>(r.sc[j] | (r.m[j] << 4));
    for (int half = 0; half < 2; ++half) {
      const uint8_t* L = r.L + half * 128;
      for (int l = 0; l < 32; ++l)
        y.qs[half * 32 + l] =
            static_cast<uint8_t>(L[l] | (L[l + 32] << 2) | (L[l + 64] << 4) | (L[l + 96] << 6));
    }
  }
}

}  // namespace strata::quant
