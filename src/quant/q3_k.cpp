// Q3_K: super-blocks of 256 in 16 sub-blocks of 16, x = d * (sc - 32) * (q - 4), q 3-bit: two
// low bits packed as Q2_K's levels, the third bit of element e in bit e / 32 of hmask[e % 32]
// (a clear bit subtracts 4). 16 scales of 6 bits in 12 bytes (see pack_q3_k_scales).
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

constexpr double kInfinity = 1e300;
constexpr SymmetricKSpec kSpec = {16, 4, 3, 32, 31, {0.0, kInfinity}};

}  // namespace

void dequantize_q3_k(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ3_K*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockQ3_K& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    int8_t sc[16];
    unpack_q3_k_scales(x.scales, sc);
    float* y = dst + b * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int half = e / 128, pair = (e % 128) / 32, l = e % 32;
      const int low = (x.qs[half * 32 + l] >> (2 * pair)) & 3;
      const int high = (x.hmask[l] >> (e / 32)) & 1;
      const float dl = d * sc[e / 16];
      y[e] = dl * (low - (high ? 0 : 4));
    }
  }
}

void quantize_q3_k(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ3_K*>(dst);  // [n / 256]
  float x[kQK_K];
  SymmetricKBlock r;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    quantize_symmetric_k(kSpec, x, importance ? importance + b * kQK_K : nullptr, &r);
    BlockQ3_K& y = blocks[b];
    y.d = r.d;
    pack_q3_k_scales(r.sc, y.scales);
    uint8_t q[kQK_K];
    for (int e = 0; e < kQK_K; ++e) q[e] = static_cast<uint8_t>(r.L[e] + 4);
    for (int l = 0; l < 32; ++l) y.hmask[l] = 0;
    for (int e = 0; e < kQK_K; ++e)
      y.hmask[e % 32] = static_cast<uint8_t>(y.hmask[e % 32] | ((q[e] >> 2) << (e / 32)));
    for (int half = 0; half < 2; ++half) {
      const uint8_t* L = q + half * 128;
      for (int l = 0; l < 32; ++l)
        y.qs[half * 32 + l] = static_cast<uint8_t>((L[l] & 3) | ((L[l + 32] & 3) << 2) |
                                                   ((L[l + 64] & 3) << 4) | ((L[l + 96] & 3) << 6));
    }
  }
}

}  // namespace strata::quant
