// Q8_0: blocks of 32, x = d * q with q int8. Levels are kept in [-127, 127] (as llama.cpp's
// files) so that kernels may negate them freely. Quantizer: exact scale search near amax / 127.
#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kLimit = 127;
constexpr SearchWindow kWindow = {112.0, 128.0};

}  // namespace

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);  // [n / 32]
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = fp16_to_f32(blocks[b].d);
    for (int j = 0; j < kQK; ++j) dst[b * kQK + j] = blocks[b].qs[j] * d;
  }
}

void quantize_q8_0(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockQ8_0*>(dst);  // [n / 32]
  float x[kQK], w[kQK];
  int L[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    sanitize_block(src + b * kQK, x, kQK);
    block_weights(importance ? importance + b * kQK : nullptr, w, kQK);
    const double d = search_signed_scale(x, w, kQK, kLimit, kLimit, kWindow, L);
    blocks[b].d = finalize_symmetric(x, w, kQK, kLimit, kLimit, d, L);
    for (int j = 0; j < kQK; ++j) blocks[b].qs[j] = static_cast<int8_t>(L[j]);
  }
}

}  // namespace strata::quant
