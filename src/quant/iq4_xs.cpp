// IQ4_XS: super-blocks of 256 in 8 sub-blocks of 32, x = d * (ls - 32) * kIq4nlValues[q] with a
// 6-bit ls per sub-block. Quantizer: a level-table scale per sub-block, then the fp16 super-block
// scale and integer sub-block scales that reproduce them best (candidates around the one that
// gives the largest sub-block scale the level -32, and coarser ones), codes re-chosen at the
// final scales; an all-zero super-block scale when nothing decodes closer (IQ4's levels have no 0).
#include <cmath>
#include <initializer_list>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/iq_tables.h"
#include "quant/level_search.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kSub = 32, kNumSub = kQK_K / kSub;

struct Fit {
  fp16_t d = 0;
  int ls[kNumSub] = {};  // in [-32, 31]
  uint8_t q[kQK_K] = {};
  double err = INFINITY;
};

// Codes and error of the super-block at fp16 scale d with sub-block scales from s / d.
void try_scale(const float* x, const float* w, const double* s, double d, Fit* best) {
  Fit f;
  f.d = to_fp16_scale(d);
  const float df = fp16_to_f32(f.d);
  f.err = 0;
  for (int j = 0; j < kNumSub; ++j) {
    f.ls[j] = df != 0 ? round_clamp(s[j] / df, -32, 31) : 0;
    f.err += rtn_levels(iq4nl_levels(), x + j * kSub, w + j * kSub, kSub, df * static_cast<float>(f.ls[j]),
                        f.q + j * kSub);
  }
  if (f.err < best->err) *best = f;
}

}  // namespace

void dequantize_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_XS*>(src);  // [n / 256]
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const BlockIQ4_XS& x = blocks[b];
    const float d = fp16_to_f32(x.d);
    for (int ib = 0; ib < kNumSub; ++ib) {
      const float dl = d * static_cast<float>(iq4_xs_scale(x.scales_h, x.scales_l, ib));
      const uint8_t* qs = x.qs + 16 * ib;
      float* y = dst + b * kQK_K + ib * kSub;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIq4nlValues[qs[j] & 0xF];
        y[j + 16] = dl * kIq4nlValues[qs[j] >> 4];
      }
    }
  }
}

void quantize_iq4_xs(const float* src, void* dst, int64_t n, const float* importance) {
  auto* blocks = static_cast<BlockIQ4_XS*>(dst);  // [n / 256]
  float x[kQK_K], w[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    sanitize_block(src + b * kQK_K, x, kQK_K);
    block_weights(importance ? importance + b * kQK_K : nullptr, w, kQK_K);
    double s[kNumSub], s_max = 0;
    for (int j = 0; j < kNumSub; ++j) {
      search_level_scale(iq4nl_levels(), x + j * kSub, w + j * kSub, kSub, &s[j]);
      if (std::fabs(s[j]) > std::fabs(s_max)) s_max = s[j];
    }
    Fit best;
    if (s_max != 0) {
      for (const double top : {-32.0, 31.0})
        for (int k = -4; k <= 4; ++k) try_scale(x, w, s, s_max / top * (1.0 + 0.01 * k), &best);
      // Coarser sub-block scales keep the fp16 scale out of its subnormal range for small data
      // (and fit rows whose sub-blocks share one scale exactly).
      for (const double top : {-16.0, -8.0, -4.0, -2.0, -1.0, 1.0}) try_scale(x, w, s, s_max / top, &best);
    }
    try_scale(x, w, s, 0.0, &best);  // last: on a tie the non-zero scale stays
    BlockIQ4_XS& y = blocks[b];
    y.d = best.d;
    y.scales_h = 0;
    for (int j = 0; j < kNumSub / 2; ++j) y.scales_l[j] = 0;
    for (int j = 0; j < kNumSub; ++j) {
      const int biased = best.ls[j] + 32;
      y.scales_l[j / 2] = static_cast<uint8_t>(y.scales_l[j / 2] | ((biased & 0xF) << (4 * (j % 2))));
      y.scales_h = static_cast<uint16_t>(y.scales_h | ((biased >> 4) << (2 * j)));
      const uint8_t* q = best.q + j * kSub;
      for (int l = 0; l < 16; ++l) y.qs[16 * j + l] = static_cast<uint8_t>(q[l] | (q[l + 16] << 4));
    }
  }
}

}  // namespace strata::quant
