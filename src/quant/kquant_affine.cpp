// Offset K-quant search (Q2_K, Q4_K, Q5_K).
//
// 1. Each sub-block gets its best continuous (scale, min) by a multi-start least-squares fit.
// 2. The super-block scales d and dmin are chosen two ways: llama.cpp's max / scale_max and an
//    exact search that quantizes the vector of sub-block scales (mins) with the least error,
//    weighted by how much each sub-block's error grows with a scale (min) error.
// 3. For a (d, dmin) pair, each sub-block picks its integer (sc, m) around the continuous fit by
//    trying the neighbours with round-to-nearest levels, plus a least-squares step.
// 4. (d, dmin) are refit by least squares over the whole super-block for the chosen integers;
//    kept while the total error drops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "quant/kquant_search.h"

namespace strata::quant {
namespace {

struct SubFit {
  double scale = 0;  // >= 0
  double min = 0;    // >= 0, subtracted
};

struct Choice {
  double err = std::numeric_limits<double>::infinity();
  int sc = 0, m = 0;
  int L[32] = {};
};

double eval_choice(const float* x, const float* w, int n, int nmax, float d, float dmin, int sc, int m,
                   int* L) {
  const float scale = d * static_cast<float>(sc);
  const float offset = -(dmin * static_cast<float>(m));
  return rtn_affine(x, w, n, nmax, scale, offset, L);
}

// Best integer (sc, m) of one sub-block for the super-block scales (d, dmin).
void choose_sub(const AffineKSpec& spec, const float* x, const float* w, float d, float dmin,
                const SubFit& fit, Choice* best) {
  const int n = spec.sub_size;
  const int c0 = d > 0 ? round_clamp(fit.scale / d, 0, spec.scale_max) : 0;
  const int m0 = dmin > 0 ? round_clamp(fit.min / dmin, 0, spec.scale_max) : 0;
  int L[32];
  best->err = std::numeric_limits<double>::infinity();
  auto consider = [&](int c, int m) {
    if (c < 0 || c > spec.scale_max || m < 0 || m > spec.scale_max) return;
    const double e = eval_choice(x, w, n, spec.nmax, d, dmin, c, m, L);
    if (e < best->err) {
      best->err = e;
      best->sc = c;
      best->m = m;
      std::copy(L, L + n, best->L);
    }
  };
  for (int c = std::max(0, c0 - 1); c <= c0 + 1; ++c) {
    if (d == 0 && c != 0) break;
    for (int m = std::max(0, m0 - 1); m <= m0 + 1; ++m) {
      if (dmin == 0 && m != 0) break;
      consider(c, m);
    }
  }
  // One least-squares step from the best levels may point outside the neighbourhood.
  AffineFit refit{fit.scale, -fit.min, 0};
  lsq_affine(x, w, n, best->L, true, &refit);
  const int c1 = d > 0 ? round_clamp(refit.scale / d, 0, spec.scale_max) : 0;
  const int m1 = dmin > 0 ? round_clamp(-refit.offset / dmin, 0, spec.scale_max) : 0;
  if (std::abs(c1 - c0) > 1 || std::abs(m1 - m0) > 1) consider(c1, m1);
}

double choose_all(const AffineKSpec& spec, const float* x, const float* w, float d, float dmin,
                  const SubFit* fits, Choice* choices) {
  const int n_sub = kQK_K / spec.sub_size;
  double total = 0;
  for (int j = 0; j < n_sub; ++j) {
    choose_sub(spec, x + j * spec.sub_size, w + j * spec.sub_size, d, dmin, fits[j], &choices[j]);
    total += choices[j].err;
  }
  return total;
}

// Least-squares (d, dmin) for fixed integers: x ~ d * (sc L) - dmin * m. False if singular.
bool refit_super(const AffineKSpec& spec, const float* x, const float* w, const Choice* choices, double* d,
                 double* dmin) {
  double suu = 0, svv = 0, suv = 0, sxu = 0, sxv = 0;
  const int n_sub = kQK_K / spec.sub_size;
  for (int j = 0; j < n_sub; ++j) {
    for (int i = 0; i < spec.sub_size; ++i) {
      const int k = j * spec.sub_size + i;
      const double u = static_cast<double>(choices[j].sc) * choices[j].L[i];
      const double v = -static_cast<double>(choices[j].m);
      suu += w[k] * u * u;
      svv += w[k] * v * v;
      suv += w[k] * u * v;
      sxu += w[k] * x[k] * u;
      sxv += w[k] * x[k] * v;
    }
  }
  const double det = suu * svv - suv * suv;
  if (det > 1e-12 * suu * svv) {
    *d = (sxu * svv - sxv * suv) / det;
    *dmin = (suu * sxv - suv * sxu) / det;
  } else {
    *d = suu > 0 ? sxu / suu : 0;
    *dmin = svv > 0 ? sxv / svv : 0;
  }
  // Both super-block scales are stored non-negative: a negative one is pinned at 0 and the
  // other refit alone.
  if (*d < 0) {
    *d = 0;
    *dmin = svv > 0 ? std::max(0.0, sxv / svv) : 0;
  }
  if (*dmin < 0) {
    *dmin = 0;
    *d = suu > 0 ? std::max(0.0, sxu / suu) : 0;
  }
  return suu > 0 || svv > 0;
}

// Super-block scale quantizing `values` ([n_sub], >= 0) onto [0, scale_max] with least weighted
// error; 0 when all values are 0.
double quantize_scales(const double* values, const float* sens, int n_sub, int scale_max) {
  float v[kMaxSubBlocks];
  for (int j = 0; j < n_sub; ++j) v[j] = static_cast<float>(values[j]);
  int L[kMaxSubBlocks];
  const SearchWindow window = {0.6 * scale_max, scale_max + 1.0};
  return search_positive_scale(v, sens, n_sub, 0, scale_max, window, L);
}

}  // namespace

void quantize_affine_k(const AffineKSpec& spec, const float* x, const float* importance, AffineKBlock* out) {
  const int n_sub = kQK_K / spec.sub_size;
  float w[kQK_K];
  SubFit fits[kMaxSubBlocks];
  float sens_scale[kMaxSubBlocks], sens_min[kMaxSubBlocks];
  double scales[kMaxSubBlocks], mins[kMaxSubBlocks];
  double max_scale = 0, max_min = 0;
  for (int j = 0; j < n_sub; ++j) {
    const int o = j * spec.sub_size;
    block_weights(importance ? importance + o : nullptr, w + o, spec.sub_size);
    int L[32];
    const AffineFit f = search_affine(x + o, w + o, spec.sub_size, spec.nmax, true, L);
    fits[j] = {f.scale, -f.offset};
    scales[j] = fits[j].scale;
    mins[j] = fits[j].min;
    double sll = 0, sw = 0;
    for (int i = 0; i < spec.sub_size; ++i) {
      sll += static_cast<double>(w[o + i]) * L[i] * L[i];
      sw += w[o + i];
    }
    sens_scale[j] = static_cast<float>(sll);
    sens_min[j] = static_cast<float>(sw);
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }

  Choice best[kMaxSubBlocks], trial[kMaxSubBlocks];
  double best_err = std::numeric_limits<double>::infinity();
  fp16_t best_d = 0, best_dmin = 0;
  auto try_pair = [&](double d, double dmin) {
    const fp16_t hd = to_fp16_scale(d), hm = to_fp16_scale(dmin);
    const double e = choose_all(spec, x, w, fp16_to_f32(hd), fp16_to_f32(hm), fits, trial);
    if (e < best_err) {
      best_err = e;
      best_d = hd;
      best_dmin = hm;
      std::copy(trial, trial + n_sub, best);
      return true;
    }
    return false;
  };
  try_pair(max_scale / spec.scale_max, max_min / spec.scale_max);
  try_pair(quantize_scales(scales, sens_scale, n_sub, spec.scale_max),
           quantize_scales(mins, sens_min, n_sub, spec.scale_max));
  for (int it = 0; it < 3; ++it) {
    double d = 0, dmin = 0;
    if (!refit_super(spec, x, w, best, &d, &dmin)) break;
    if (to_fp16_scale(d) == best_d && to_fp16_scale(dmin) == best_dmin) break;
    if (!try_pair(d, dmin)) break;
  }

  out->d = best_d;
  out->dmin = best_dmin;
  for (int j = 0; j < n_sub; ++j) {
    out->sc[j] = static_cast<uint8_t>(best[j].sc);
    out->m[j] = static_cast<uint8_t>(best[j].m);
    for (int i = 0; i < spec.sub_size; ++i)
      out->L[j * spec.sub_size + i] = static_cast<uint8_t>(best[j].L[i]);
  }
}

}  // namespace strata::quant
