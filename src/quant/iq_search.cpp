#include "quant/iq_search.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/scale_search.h"

namespace strata::quant {
namespace {

constexpr int kN = kQK_K;
constexpr float kDelta = 0.125f;  // IQ1's offset magnitude

struct Ctx {
  const IqSpec& spec;
  const IqLattice& lat;
  float t[kN];  // [256] targets in units of max|x|: signed magnitudes (sign already split off)
  float w[kN];  // [256] error weights
};

// The grid points of one sub-block at a fixed scale, and the sums the error needs.
struct SubFit {
  double tv = 0, v2 = 0;  // sum(w t v), sum(w v^2) with v = grid + delta
  uint16_t grid[8] = {};  // [sub_size / dim]
  uint8_t dneg[4] = {};   // [sub_size / 8] delta sign per group of 8 (IQ1)
};

double fit_error(double tt, const SubFit& f, double s) {
  return tt - 2.0 * s * f.tv + s * s * f.v2;
}

// Every group's weighted-nearest grid point to t / s. dneg_fixed: the delta sign of a
// PerSubBlock delta (PerGroup deltas try both signs per group).
void fit_at(const Ctx& c, int sub, double s, int dneg_fixed, SubFit* f) {
  const int dim = c.lat.dim, n = c.spec.sub_size, n_groups = n / dim;
  const float inv = static_cast<float>(1.0 / s);
  const int n_delta = c.spec.delta == IqDelta::PerGroup ? 2 : 1;
  const float* t = c.t + sub * n;  // [n]
  const float* w = c.w + sub * n;  // [n]
  // Per delta sign tried: the targets in level units and each group's nearest point.
  float u[2][32];
  int k[2][8];
  float e[2][8];
  for (int di = 0; di < n_delta; ++di) {
    const int neg = c.spec.delta == IqDelta::PerGroup ? di : dneg_fixed;
    const float delta = c.spec.delta == IqDelta::None ? 0.0f : (neg ? -kDelta : kDelta);
    for (int i = 0; i < n; ++i) u[di][i] = t[i] * inv - delta;
    nearest_grid_points(c.lat, n_groups, u[di], w, k[di], e[di]);
  }
  f->tv = f->v2 = 0;
  for (int g = 0; g < n_groups; ++g) {
    // The first delta sign unless the second is strictly better.
    const int di = n_delta == 2 && e[1][g] < e[0][g] ? 1 : 0;
    const int best_neg = c.spec.delta == IqDelta::PerGroup ? di : dneg_fixed;
    const int best_k = k[di][g];
    f->grid[g] = static_cast<uint16_t>(best_k);
    if (dim == 8) f->dneg[g] = static_cast<uint8_t>(best_neg);
    const float delta = c.spec.delta == IqDelta::None ? 0.0f : (best_neg ? -kDelta : kDelta);
    const float* v = c.lat.grid_value.data() + static_cast<size_t>(best_k) * dim;
    for (int j = 0; j < dim; ++j) {
      const double vj = static_cast<double>(v[j]) + delta;
      f->tv += static_cast<double>(w[g * dim + j]) * t[g * dim + j] * vj;
      f->v2 += static_cast<double>(w[g * dim + j]) * vj * vj;
    }
  }
}

struct SubResult {
  double s = 0;    // least-squares scale in units of max|x| (0: nothing to fit)
  double tt = 0;   // sum(w t^2), the error at scale 0
  double err = 0;  // error at s
  int dneg = 0;    // delta sign (PerSubBlock)
};

// Step 2: the best continuous scale of one sub-block.
SubResult search_sub(const Ctx& c, int sub) {
  const int n = c.spec.sub_size;
  SubResult r;
  double amax = 0;
  for (int i = sub * n; i < (sub + 1) * n; ++i) {
    r.tt += static_cast<double>(c.w[i]) * c.t[i] * c.t[i];
    amax = std::max(amax, static_cast<double>(std::fabs(c.t[i])));
  }
  r.err = r.tt;
  if (amax == 0 || r.tt == 0) return r;
  const double vmax = c.lat.max_level() + (c.spec.delta == IqDelta::None ? 0.0 : kDelta);
  const int n_dneg = c.spec.delta == IqDelta::PerSubBlock ? 2 : 1;
  SubFit f;
  auto consider = [&](double s, int dneg) {
    fit_at(c, sub, s, dneg, &f);
    if (f.v2 <= 0 || f.tv <= 0) return false;
    const double ls = f.tv / f.v2;
    const double e = fit_error(r.tt, f, ls);
    if (e >= r.err) return false;
    r.s = ls, r.err = e, r.dneg = dneg;
    return true;
  };
  for (int dneg = 0; dneg < n_dneg; ++dneg)
    for (int k = 0; k <= 18; ++k) consider(amax * (0.3 + 0.05 * k) / vmax, dneg);
  for (int it = 0; it < 3 && r.s > 0; ++it)
    if (!consider(r.s, r.dneg)) break;
  return r;
}

// Step 1: signs and targets.
void split_signs(Ctx& c, const float* x, IqBlock* out) {
  for (int g8 = 0; g8 < kN / 8; ++g8) {
    const float* xg = x + 8 * g8;
    float* t = c.t + 8 * g8;
    if (c.spec.signs == IqSigns::None) {
      for (int j = 0; j < 8; ++j) t[j] = xg[j];
      continue;
    }
    unsigned bits = 0;
    for (int j = 0; j < 8; ++j) {
      t[j] = std::fabs(xg[j]);
      if (xg[j] < 0) bits |= 1u << j;
    }
    if (c.spec.signs == IqSigns::Parity7 && (__builtin_popcount(bits) & 1)) {
      int jmin = 0;
      for (int j = 1; j < 8; ++j)
        if (c.w[8 * g8 + j] * t[j] * t[j] < c.w[8 * g8 + jmin] * t[jmin] * t[jmin]) jmin = j;
      bits ^= 1u << jmin;
      t[jmin] = -t[jmin];
    }
    out->sign[g8] = static_cast<uint8_t>(bits);
  }
}

// Stores a sub-block's fit into the block.
void store_fit(const Ctx& c, int sub, const SubFit& f, IqBlock* b) {
  const int dim = c.lat.dim, n = c.spec.sub_size;
  for (int g = 0; g < n / dim; ++g) b->grid[sub * n / dim + g] = f.grid[g];
  if (dim == 8)
    for (int g = 0; g < n / 8; ++g) b->delta_neg[sub * n / 8 + g] = f.dneg[g];
}

// Step 3 for one candidate fp16 scale: the best l per sub-block; returns the total error (or a
// value >= limit once it is clear the candidate loses).
double try_super_scale(const Ctx& c, const SubResult* subs, double dn, double limit, IqBlock* b) {
  const int n_sub = kN / c.spec.sub_size, ltop = c.spec.n_scale_levels - 1;
  const int n_dneg = c.spec.delta == IqDelta::PerSubBlock ? 2 : 1;
  double total = 0;
  SubFit f, best_f;
  for (int j = 0; j < n_sub; ++j) {
    const SubResult& r = subs[j];
    const int lc = round_clamp(r.s / (dn * c.spec.scale_mul) - 0.5, 0, ltop);
    double best = -1;
    for (int l = std::max(0, lc - 1); l <= std::min(ltop, lc + 1); ++l) {
      const double s = dn * c.spec.scale_mul * (l + 0.5);
      for (int dneg = 0; dneg < n_dneg; ++dneg) {
        fit_at(c, j, s, dneg, &f);
        const double e = fit_error(r.tt, f, s);
        if (best < 0 || e < best) best = e, best_f = f, b->l[j] = static_cast<uint8_t>(l);
      }
    }
    store_fit(c, j, best_f, b);
    total += best;
    if (total >= limit) return total;
  }
  return total;
}

void weights_of(const float* x, const float* importance, float* w) {
  block_weights(importance, w, kN);
  // Relative importance is all that matters: scaled to a maximum of 1, huge values cannot
  // overflow the sums.
  float w_max = 0;
  for (int i = 0; i < kN; ++i) w_max = std::max(w_max, w[i]);
  for (int i = 0; i < kN; ++i) w[i] /= w_max;
  double sum2 = 0;
  for (int i = 0; i < kN; ++i) sum2 += static_cast<double>(x[i]) * x[i];
  const double sigma2 = 2.0 * sum2 / kN;
  for (int i = 0; i < kN; ++i)
    w[i] *= static_cast<float>(std::sqrt(sigma2 + static_cast<double>(x[i]) * x[i]));
}

}  // namespace

void iq_quantize_block(const IqSpec& spec, const float* xin, const float* importance, IqBlock* out) {
  *out = IqBlock{};
  float x[kN];
  sanitize_block(xin, x, kN);
  double amax = 0;
  for (float v : x) amax = std::max(amax, static_cast<double>(std::fabs(v)));
  if (amax == 0) return;
  for (float& v : x) v = static_cast<float>(v / amax);
  Ctx c{spec, iq_lattice(spec.grid), {}, {}};
  weights_of(x, importance, c.w);
  split_signs(c, x, out);

  const int n_sub = kN / spec.sub_size;
  SubResult subs[16];
  double s_max = 0, zero_err = 0;
  for (int j = 0; j < n_sub; ++j) {
    subs[j] = search_sub(c, j);
    s_max = std::max(s_max, subs[j].s);
    zero_err += subs[j].tt;
  }
  double best = INFINITY;
  if (s_max > 0) {
    const double d0 = s_max / (spec.scale_mul * (spec.n_scale_levels - 0.5));
    IqBlock cand = *out;
    for (int k = -4; k <= 2; ++k) {
      cand.d = to_fp16_scale(d0 * (1.0 + 0.05 * k) * amax);
      const double dn = fp16_to_f32(cand.d) / amax;
      if (!(dn > 0)) continue;
      const double e = try_super_scale(c, subs, dn, best, &cand);
      if (e < best) best = e, *out = cand;
    }
  }
  // d = 0 decodes every element as 0: for blocks below any fp16 scale. Last, so that a tie (a
  // block far beyond the fp16 range, whose error the largest scale barely lowers) keeps d != 0.
  if (zero_err < best) {
    const IqBlock signs_only = *out;
    *out = IqBlock{};
    std::memcpy(out->sign, signs_only.sign, sizeof out->sign);
  }
}

}  // namespace strata::quant
