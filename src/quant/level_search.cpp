#include "quant/level_search.h"

#include <cmath>
#include <initializer_list>

#include "quant/iq_tables.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

LevelTable make_table(const int8_t* values, int count) {
  LevelTable t;
  for (int c = 0; c < count; ++c) {
    bool dup = false;  // MXFP4 has two zeros: keep the first code
    for (int i = 0; i < t.n; ++i) dup = dup || t.value[i] == values[c];
    if (dup) continue;
    int i = t.n++;
    for (; i > 0 && t.value[i - 1] > values[c]; --i) {
      t.value[i] = t.value[i - 1];
      t.code[i] = t.code[i - 1];
    }
    t.value[i] = values[c];
    t.code[i] = static_cast<uint8_t>(c);
  }
  return t;
}

// Least-squares d for the levels given by idx; 0 when they are all zero.
double lsq(const LevelTable& t, const float* x, const float* w, int n, const int* idx) {
  double sxq = 0, sqq = 0;
  for (int i = 0; i < n; ++i) {
    const double q = t.value[idx[i]];
    sxq += static_cast<double>(w[i]) * x[i] * q;
    sqq += static_cast<double>(w[i]) * q * q;
  }
  return sqq > 0 ? sxq / sqq : 0.0;
}

double error_at(const LevelTable& t, const float* x, const float* w, int n, double d, int* idx) {
  double err = 0;
  const double id = d != 0 ? 1.0 / d : 0.0;
  for (int i = 0; i < n; ++i) {
    idx[i] = nearest_level(t, static_cast<float>(x[i] * id));
    const double e = x[i] - d * t.value[idx[i]];
    err += w[i] * e * e;
  }
  return err;
}

}  // namespace

const LevelTable& iq4nl_levels() {
  static const LevelTable t = make_table(kIq4nlValues, 16);
  return t;
}

const LevelTable& mxfp4_levels() {
  static const LevelTable t = make_table(kMxfp4Values, 16);
  return t;
}

int nearest_level(const LevelTable& t, float v) {
  if (!(v > t.value[0])) return 0;  // also NaN
  if (v >= t.value[t.n - 1]) return t.n - 1;
  int lo = 0, hi = t.n - 1;  // value[lo] < v < value[hi]
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (t.value[mid] <= v ? lo : hi) = mid;
  }
  return v - t.value[lo] <= t.value[hi] - v ? lo : hi;
}

double rtn_levels(const LevelTable& t, const float* x, const float* w, int n, float d, uint8_t* codes) {
  double err = 0;
  const int zero = nearest_level(t, 0.0f);
  for (int i = 0; i < n; ++i) {
    const int k = d != 0 ? nearest_level(t, x[i] / d) : zero;
    codes[i] = t.code[k];
    const double e = static_cast<double>(x[i]) - static_cast<double>(d * t.value[k]);
    err += w[i] * e * e;
  }
  return err;
}

double search_level_scale(const LevelTable& t, const float* x, const float* w, int n, double* d) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) amax = std::fabs(x[i]), max = x[i];
  *d = 0;
  if (amax == 0) return 0;
  int idx[256];
  double best = INFINITY;
  // The largest element lands at 1.05 .. 0.7 times either end of the table (a little clipping of
  // it lets the others use finer levels), then each candidate is refitted by least squares.
  for (const double end : {static_cast<double>(t.lowest()), static_cast<double>(t.highest())})
    for (int s = -2; s <= 12; ++s) {
      error_at(t, x, w, n, max / (end * (1.0 - 0.025 * s)), idx);
      const double refit = lsq(t, x, w, n, idx);
      if (refit == 0) continue;
      const double err = error_at(t, x, w, n, refit, idx);
      if (err < best) best = err, *d = refit;
    }
  return best;
}

fp16_t finalize_level_block(const LevelTable& t, const float* x, const float* w, int n, double d,
                            uint8_t* codes) {
  fp16_t best = to_fp16_scale(d);
  double err = rtn_levels(t, x, w, n, fp16_to_f32(best), codes);
  double sxq = 0, sqq = 0;
  for (int i = 0; i < n; ++i) {
    double q = 0;
    for (int k = 0; k < t.n; ++k)
      if (t.code[k] == codes[i]) q = t.value[k];
    sxq += static_cast<double>(w[i]) * x[i] * q;
    sqq += static_cast<double>(w[i]) * q * q;
  }
  if (sqq > 0) {
    uint8_t alt[256];
    const fp16_t refit = to_fp16_scale(sxq / sqq);
    if (rtn_levels(t, x, w, n, fp16_to_f32(refit), alt) < err) {
      best = refit;
      for (int i = 0; i < n; ++i) codes[i] = alt[i];
    }
  }
  // The levels have no exact 0 (IQ4's): a block too small for the scale is better decoded as 0.
  double zero_err = 0;
  for (int i = 0; i < n; ++i) zero_err += static_cast<double>(w[i]) * x[i] * x[i];
  if (d == 0 || zero_err < err) {
    rtn_levels(t, x, w, n, 0.0f, codes);
    return 0;
  }
  return best;
}

}  // namespace strata::quant
