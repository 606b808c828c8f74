#include "quant/scale_search.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"

namespace strata::quant {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One step of the exact scale search: at inverse scale s, element i moves one level further from
// 0. Packed as (float bits of s) << 32 | i: s > 0, so integer order is the order of s, and
// sorting plain integers is several times faster than sorting structs through a comparator.
using Event = uint64_t;
inline Event make_event(double s, int i) {
  return (static_cast<uint64_t>(f32_to_bits(static_cast<float>(s))) << 32) | static_cast<uint32_t>(i);
}
inline int event_element(Event e) {
  return static_cast<int>(e & 0xffffffffu);
}

// Level magnitude of |x| at inverse scale s when levels stop at lim (events at s' <= s applied).
inline int level_at(double s, double ax, int lim) {
  const double v = s * ax + 0.5;
  return v >= lim ? lim : static_cast<int>(v);
}

}  // namespace

void sanitize_block(const float* x, float* out, int n) {
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    if (std::isnan(v))
      out[i] = 0.0f;
    else if (std::isinf(v))
      out[i] = v > 0 ? FLT_MAX : -FLT_MAX;
    else
      out[i] = v;
  }
}

void block_weights(const float* importance, float* w, int n) {
  bool any = false;
  if (importance) {
    for (int i = 0; i < n; ++i) {
      const float v = importance[i];
      w[i] = (std::isfinite(v) && v > 0) ? v : 0.0f;
      any = any || w[i] > 0;
    }
  }
  if (!any)
    for (int i = 0; i < n; ++i) w[i] = 1.0f;
}

fp16_t to_fp16_clamped(double v) {
  constexpr double kMaxHalf = 65504.0;
  if (!(v == v)) return 0;
  if (v >= kMaxHalf) return 0x7bff;
  if (v <= -kMaxHalf) return 0xfbff;
  return f32_to_fp16(static_cast<float>(v));
}

fp16_t to_fp16_scale(double v) {
  const fp16_t h = to_fp16_clamped(v);
  if ((h & 0x7fff) == 0 && v != 0 && v == v) return v > 0 ? 0x0001 : 0x8001;
  return h;
}

double search_positive_scale(const float* x, const float* w, int n, int neg, int pos, SearchWindow window,
                             int* L, double* err) {
  STRATA_CHECK(n > 0 && n <= kMaxSearchElements && neg >= 0 && pos >= 0);
  double amax = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
    sxx += static_cast<double>(w[i]) * x[i] * x[i];
  }
  const double s_lo = amax > 0 ? window.t_lo / amax : 0;
  const double s_hi = amax > 0 ? window.t_hi / amax : 0;

  // Start at s_lo with every element at its level there, then list the level changes up to s_hi.
  // Elements of zero weight cannot change the error and get their level at the end.
  int a[kMaxSearchElements], k_end[kMaxSearchElements];
  double sxl = 0, sll = 0;
  size_t n_events = 0;
  for (int i = 0; i < n; ++i) {
    const double ax = std::fabs(static_cast<double>(x[i]));
    const int lim = x[i] > 0 ? pos : neg;
    const bool active = ax > 0 && lim > 0 && w[i] > 0;
    a[i] = active ? level_at(s_lo, ax, lim) : 0;
    k_end[i] = active ? level_at(s_hi, ax, lim) : 0;
    sxl += static_cast<double>(w[i]) * ax * a[i];
    sll += static_cast<double>(w[i]) * a[i] * a[i];
    n_events += static_cast<size_t>(k_end[i] - a[i]);
  }
  thread_local std::vector<Event> events;
  events.resize(n_events);
  Event* ev = events.data();
  for (int i = 0; i < n; ++i) {
    if (k_end[i] == a[i]) continue;
    const double inv_ax = 1.0 / std::fabs(static_cast<double>(x[i]));
    for (int k = a[i]; k < k_end[i]; ++k) *ev++ = make_event((k + 0.5) * inv_ax, i);
  }
  // Events closer than float precision may swap: every level vector visited is still a valid
  // quantization with an exactly computed error, so the search stays sound.
  std::sort(events.begin(), events.end());

  // Any level vector is a valid quantization; its least-squares scale leaves sxx - sxl^2/sll.
  double best = sll > 0 ? sxl * sxl / sll : -1;
  int best_event = -1;
  int level[kMaxSearchElements];
  std::copy(a, a + n, level);
  for (size_t e = 0; e < n_events; ++e) {
    const int i = event_element(events[e]);
    const double wi = w[i];
    sxl += wi * std::fabs(static_cast<double>(x[i]));
    sll += wi * (2.0 * level[i] + 1.0);
    ++level[i];
    if (sxl * sxl > best * sll) {
      best = sxl * sxl / sll;
      best_event = static_cast<int>(e);
    }
  }
  if (best < 0) {  // nothing of positive weight is non-zero
    std::fill(L, L + n, 0);
    if (err) *err = sxx;
    return 0;
  }
  for (int e = 0; e <= best_event; ++e) ++a[event_element(events[e])];
  double bxl = 0, bll = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = x[i] < 0 ? -a[i] : a[i];
    bxl += static_cast<double>(w[i]) * x[i] * L[i];
    bll += static_cast<double>(w[i]) * L[i] * L[i];
  }
  const double d = bxl / bll;
  for (int i = 0; i < n; ++i)
    if (!(w[i] > 0)) L[i] = round_clamp(x[i] / d, -neg, pos);
  if (err) *err = std::max(0.0, sxx - best);
  return d;
}

double search_signed_scale(const float* x, const float* w, int n, int neg, int pos, SearchWindow window,
                           int* L, double* err) {
  // The largest element of non-zero weight gets the side with more levels: a negative scale d
  // with levels L in [-neg, pos] is the positive scale -d with levels -L in [-pos, neg]. (Trying
  // both orientations changes the error by less than 1e-4 relative on Gaussian blocks.)
  float xmax = 0;
  for (int i = 0; i < n; ++i)
    if (w[i] > 0 && std::fabs(x[i]) > std::fabs(xmax)) xmax = x[i];
  const bool flip = (xmax > 0) == (neg > pos);
  if (!flip) return search_positive_scale(x, w, n, neg, pos, window, L, err);
  const double d = search_positive_scale(x, w, n, pos, neg, window, L, err);
  for (int i = 0; i < n; ++i) L[i] = -L[i];
  return -d;
}

double rtn_symmetric(const float* x, const float* w, int n, int neg, int pos, float d, int* L) {
  double e = 0;
  const double inv = d != 0 ? 1.0 / d : 0.0;
  for (int i = 0; i < n; ++i) {
    L[i] = d != 0 ? round_clamp(x[i] * inv, -neg, pos) : 0;
    const double diff = static_cast<double>(x[i]) - static_cast<double>(d * static_cast<float>(L[i]));
    e += w[i] * diff * diff;
  }
  return e;
}

double lsq_scale(const float* x, const float* w, int n, const int* L) {
  double sxl = 0, sll = 0;
  for (int i = 0; i < n; ++i) {
    sxl += static_cast<double>(w[i]) * x[i] * L[i];
    sll += static_cast<double>(w[i]) * L[i] * L[i];
  }
  return sll > 0 ? sxl / sll : 0;
}

void lsq_affine(const float* x, const float* w, int n, const int* L, bool nonpositive_offset,
                AffineFit* fit) {
  double sw = 0, sl = 0, sll = 0, sx = 0, sxl = 0;
  for (int i = 0; i < n; ++i) {
    const double wi = w[i];
    sw += wi;
    sl += wi * L[i];
    sll += wi * L[i] * L[i];
    sx += wi * x[i];
    sxl += wi * x[i] * L[i];
  }
  const double det = sw * sll - sl * sl;
  if (!(det > 1e-12 * sw * sll)) return;  // all levels (almost) equal: scale undetermined
  double scale = (sw * sxl - sx * sl) / det;
  double offset = (sll * sx - sl * sxl) / det;
  if (nonpositive_offset && offset > 0) {
    offset = 0;
    scale = sxl / sll;
  }
  fit->scale = scale;
  fit->offset = offset;
}

namespace {

double affine_error(const float* x, const float* w, int n, double scale, double offset, const int* L) {
  double e = 0;
  for (int i = 0; i < n; ++i) {
    const double diff = x[i] - (scale * L[i] + offset);
    e += w[i] * diff * diff;
  }
  return e;
}

// Re-levels L for (scale, offset); returns true when some level changed.
bool relevel_affine(const float* x, int n, int nmax, double scale, double offset, int* L) {
  bool changed = false;
  const double inv = 1.0 / scale;
  for (int i = 0; i < n; ++i) {
    const int l = round_clamp((x[i] - offset) * inv, 0, nmax);
    changed = changed || l != L[i];
    L[i] = l;
  }
  return changed;
}

// Starting points of the affine search: the level given to the block's range, around nmax.
constexpr double kAffineStarts[] = {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5};
constexpr int kAffineIterations = 4;

}  // namespace

AffineFit search_affine(const float* x, const float* w, int n, int nmax, bool nonpositive_offset, int* L) {
  STRATA_CHECK(n > 0 && n <= kMaxSearchElements && nmax > 0);
  double mn = x[0], mx = x[0];
  for (int i = 1; i < n; ++i) {
    mn = std::min(mn, static_cast<double>(x[i]));
    mx = std::max(mx, static_cast<double>(x[i]));
  }
  if (nonpositive_offset && mn > 0) mn = 0;
  AffineFit best;
  if (mx == mn) {  // constant block: the offset alone is exact
    std::fill(L, L + n, 0);
    best.offset = mn;
    return best;
  }
  best.err = kInf;
  const double range = mx - mn;
  int cur[kMaxSearchElements];
  // Wider level ranges have a wider basin of good scales: spread the starts with them.
  const double spread = std::max(1.0, nmax / 15.0);
  for (double start : kAffineStarts) {
    AffineFit f;
    f.scale = range / (nmax + spread * start);
    f.offset = mn;
    relevel_affine(x, n, nmax, f.scale, f.offset, cur);
    for (int it = 0; it < kAffineIterations; ++it) {
      AffineFit next = f;
      lsq_affine(x, w, n, cur, nonpositive_offset, &next);
      if (!(next.scale > 0)) break;
      f = next;
      if (!relevel_affine(x, n, nmax, f.scale, f.offset, cur)) break;
    }
    f.err = affine_error(x, w, n, f.scale, f.offset, cur);
    if (f.err < best.err) {
      best = f;
      std::copy(cur, cur + n, L);
    }
  }
  return best;
}

double rtn_affine(const float* x, const float* w, int n, int nmax, float scale, float offset, int* L) {
  // The K-quant searches spend most of their time here: four partial sums break the dependency
  // chain of the accumulation.
  double e[4] = {0, 0, 0, 0};
  const double inv = scale != 0 ? 1.0 / scale : 0.0;
  const int top = scale != 0 ? nmax : 0;
  for (int i = 0; i < n; ++i) {
    L[i] = round_clamp((static_cast<double>(x[i]) - offset) * inv, 0, top);
    const float xhat = scale * static_cast<float>(L[i]) + offset;
    const double diff = static_cast<double>(x[i]) - xhat;
    e[i & 3] += w[i] * diff * diff;
  }
  return (e[0] + e[1]) + (e[2] + e[3]);
}

fp16_t finalize_symmetric(const float* x, const float* w, int n, int neg, int pos, double d, int* L) {
  int cur[kMaxSearchElements];
  double best_err = kInf;
  fp16_t best_d = 0;
  for (int it = 0; it < 3; ++it) {
    const fp16_t h = to_fp16_scale(d);
    const double e = rtn_symmetric(x, w, n, neg, pos, fp16_to_f32(h), cur);
    if (!(e < best_err)) break;
    best_err = e;
    best_d = h;
    std::copy(cur, cur + n, L);
    const double refit = lsq_scale(x, w, n, cur);
    if (refit == 0 || to_fp16_scale(refit) == h) break;
    d = refit;
  }
  return best_d;
}

void finalize_affine(const float* x, const float* w, int n, int nmax, AffineFit fit, fp16_t* d, fp16_t* m,
                     int* L) {
  int cur[kMaxSearchElements];
  double best_err = kInf;
  for (int it = 0; it < 3; ++it) {
    const fp16_t hd = to_fp16_scale(std::max(0.0, fit.scale));
    const fp16_t hm = to_fp16_clamped(fit.offset);
    const double e = rtn_affine(x, w, n, nmax, fp16_to_f32(hd), fp16_to_f32(hm), cur);
    if (!(e < best_err)) break;
    best_err = e;
    *d = hd;
    *m = hm;
    std::copy(cur, cur + n, L);
    AffineFit next = fit;
    lsq_affine(x, w, n, cur, false, &next);
    if (!(next.scale > 0) || (to_fp16_scale(next.scale) == hd && to_fp16_clamped(next.offset) == hm)) break;
    fit = next;
  }
}

}  // namespace strata::quant
