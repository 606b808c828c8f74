// Symmetric K-quant search (Q3_K, Q6_K).
//
// 1. Each sub-block gets its best continuous signed scale by the exact scale search (levels in
//    [-neg, pos], so the sign of the scale picks which side gets the extra level).
// 2. The super-block scale d is chosen two ways: llama.cpp's (the largest sub-block scale maps to
//    -sc_neg) and an exact search quantizing the vector of sub-block scales with the least error,
//    weighted by how much each sub-block's error grows with a scale error.
// 3. For a given d each sub-block picks its integer scale among the neighbours of the continuous
//    one with round-to-nearest levels, plus one least-squares step.
// 4. d is refit by least squares over the super-block for the chosen integers; kept while the
//    total error drops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

struct Choice {
  double err = std::numeric_limits<double>::infinity();
  int sc = 0;
  int L[16] = {};
};

void choose_sub(const SymmetricKSpec& spec, const float* x, const float* w, float d, double scale,
                Choice* best) {
  const int n = spec.sub_size;
  const int c0 = d != 0 ? round_clamp(scale / d, -spec.sc_neg, spec.sc_pos) : 0;
  int L[16];
  best->err = std::numeric_limits<double>::infinity();
  auto consider = [&](int c) {
    if (c < -spec.sc_neg || c > spec.sc_pos) return;
    const double e = rtn_symmetric(x, w, n, spec.neg, spec.pos, d * static_cast<float>(c), L);
    if (e < best->err) {
      best->err = e;
      best->sc = c;
      std::copy(L, L + n, best->L);
    }
  };
  for (int c = c0 - 1; c <= c0 + 1; ++c) {
    if (d == 0 && c != 0) continue;
    consider(c);
  }
  if (d == 0) return;
  // One least-squares step from the best levels may point outside the neighbourhood.
  const int c1 = round_clamp(lsq_scale(x, w, n, best->L) / d, -spec.sc_neg, spec.sc_pos);
  if (std::abs(c1 - c0) > 1) consider(c1);
}

double choose_all(const SymmetricKSpec& spec, const float* x, const float* w, float d, const double* scales,
                  Choice* choices) {
  const int n_sub = kQK_K / spec.sub_size;
  double total = 0;
  for (int j = 0; j < n_sub; ++j) {
    choose_sub(spec, x + j * spec.sub_size, w + j * spec.sub_size, d, scales[j], &choices[j]);
    total += choices[j].err;
  }
  return total;
}

// Least-squares d for fixed integers: x ~ d * (sc L).
double refit_super(const SymmetricKSpec& spec, const float* x, const float* w, const Choice* choices) {
  double sxu = 0, suu = 0;
  const int n_sub = kQK_K / spec.sub_size;
  for (int j = 0; j < n_sub; ++j) {
    for (int i = 0; i < spec.sub_size; ++i) {
      const int k = j * spec.sub_size + i;
      const double u = static_cast<double>(choices[j].sc) * choices[j].L[i];
      sxu += w[k] * x[k] * u;
      suu += w[k] * u * u;
    }
  }
  return suu > 0 ? sxu / suu : 0;
}

}  // namespace

void quantize_symmetric_k(const SymmetricKSpec& spec, const float* x, const float* importance,
                          SymmetricKBlock* out) {
  const int n_sub = kQK_K / spec.sub_size;
  float w[kQK_K];
  double scales[kMaxSubBlocks];
  float scale_values[kMaxSubBlocks], sens[kMaxSubBlocks];
  double max_scale = 0;
  for (int j = 0; j < n_sub; ++j) {
    const int o = j * spec.sub_size;
    block_weights(importance ? importance + o : nullptr, w + o, spec.sub_size);
    int L[16];
    scales[j] = search_signed_scale(x + o, w + o, spec.sub_size, spec.neg, spec.pos, spec.sub_window, L);
    scale_values[j] = static_cast<float>(scales[j]);
    double sll = 0;
    for (int i = 0; i < spec.sub_size; ++i) sll += static_cast<double>(w[o + i]) * L[i] * L[i];
    sens[j] = static_cast<float>(sll);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }

  Choice best[kMaxSubBlocks], trial[kMaxSubBlocks];
  double best_err = std::numeric_limits<double>::infinity();
  fp16_t best_d = 0;
  auto try_d = [&](double d) {
    const fp16_t h = to_fp16_scale(d);
    const double e = choose_all(spec, x, w, fp16_to_f32(h), scales, trial);
    if (e < best_err) {
      best_err = e;
      best_d = h;
      std::copy(trial, trial + n_sub, best);
      return true;
    }
    return false;
  };
  try_d(-max_scale / spec.sc_neg);
  int L[kMaxSubBlocks];
  const double lo = std::min(spec.sc_neg, spec.sc_pos);
  const SearchWindow window = {0.6 * lo, lo + 1.0};
  try_d(search_signed_scale(scale_values, sens, n_sub, spec.sc_neg, spec.sc_pos, window, L));
  for (int it = 0; it < 3; ++it) {
    const double d = refit_super(spec, x, w, best);
    if (d == 0 || to_fp16_scale(d) == best_d) break;
    if (!try_d(d)) break;
  }

  out->d = best_d;
  for (int j = 0; j < n_sub; ++j) {
    out->sc[j] = static_cast<int8_t>(best[j].sc);
    for (int i = 0; i < spec.sub_size; ++i) out->L[j * spec.sub_size + i] = static_cast<int8_t>(best[j].L[i]);
  }
}

}  // namespace strata::quant
