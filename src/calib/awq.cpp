#include "calib/awq.h"

#include <algorithm>
#include <cmath>

#include "calib/output_error.h"
#include "core/check.h"
#include "core/thread_pool.h"
#include "quant/quantize.h"

namespace strata::calib {
namespace {

constexpr int kClipSteps = 10;  // ratios 1 - i / 20 for i < 10

template <typename Fn>
void for_rows(ThreadPool* pool, int64_t n, const Fn& fn) {
  if (pool && pool->size() > 1 && n > 1)
    pool->parallel_for(n, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) fn(i);
    });
  else
    for (int64_t i = 0; i < n; ++i) fn(i);
}

// The loss of quantizing every sampled row of the matrices at channel scales s.
double scaled_loss(const std::vector<const WeightMatrix*>& mats,
                   const std::vector<std::vector<int64_t>>& rows, const InputStats& in,
                   const std::vector<float>& s, ThreadPool* pool) {
  const int64_t n = in.n;
  std::vector<float> imp(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    imp[static_cast<size_t>(i)] =
        in.msq[static_cast<size_t>(i)] / (s[static_cast<size_t>(i)] * s[static_cast<size_t>(i)]);
  double total = 0;
  for (size_t m = 0; m < mats.size(); ++m) {
    const WeightMatrix& w = *mats[m];
    const auto R = static_cast<int64_t>(rows[m].size());
    std::vector<float> D(static_cast<size_t>(R * n));
    const size_t rb = row_bytes(w.type, n);
    for_rows(pool, R, [&](int64_t k) {
      std::vector<float> scaled(static_cast<size_t>(n)), deq(static_cast<size_t>(n));
      std::vector<uint8_t> q(rb);
      const float* src = w.row(rows[m][static_cast<size_t>(k)]);
      for (int64_t i = 0; i < n; ++i) scaled[static_cast<size_t>(i)] = src[i] * s[static_cast<size_t>(i)];
      quantize_row(w.type, scaled.data(), q.data(), n, imp.data());
      dequantize_row(w.type, q.data(), deq.data(), n);
      for (int64_t i = 0; i < n; ++i)
        D[static_cast<size_t>(k * n + i)] = deq[static_cast<size_t>(i)] / s[static_cast<size_t>(i)] - src[i];
    });
    total += quadratic_error(D.data(), R, in, pool);
  }
  return total;
}

}  // namespace

std::vector<float> expand_scales(const std::vector<float>& s, const std::vector<int32_t>& group, int64_t n) {
  if (group.empty()) return s;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = s[static_cast<size_t>(group[static_cast<size_t>(i)])];
  return out;
}

AwqScales awq_search_scales(const std::vector<const WeightMatrix*>& mats, const InputStats& in,
                            const std::vector<int32_t>& group, int64_t n_groups, const AwqOptions& o,
                            ThreadPool* pool) {
  const int64_t n = in.n;
  STRATA_CHECK(!mats.empty() && (group.empty() ? n_groups == n : static_cast<int64_t>(group.size()) == n));
  for (const WeightMatrix* m : mats) STRATA_CHECK(m->n_in == n);
  // Mean |x| per scale group.
  std::vector<double> a(static_cast<size_t>(n_groups), 0.0), cnt(static_cast<size_t>(n_groups), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const size_t g =
        group.empty() ? static_cast<size_t>(i) : static_cast<size_t>(group[static_cast<size_t>(i)]);
    a[g] += in.mean_abs[static_cast<size_t>(i)];
    cnt[g] += 1;
  }
  for (size_t g = 0; g < a.size(); ++g) a[g] = cnt[g] > 0 ? a[g] / cnt[g] : 0.0;
  std::vector<std::vector<int64_t>> rows;
  for (const WeightMatrix* m : mats) rows.push_back(sample_rows(m->n_out, o.max_rows));

  AwqScales best;
  best.s.assign(static_cast<size_t>(n_groups), 1.0f);
  best.loss = best.loss_plain =
      scaled_loss(mats, rows, in, std::vector<float>(static_cast<size_t>(n), 1.0f), pool);
  std::vector<float> s(static_cast<size_t>(n_groups));
  for (int step = 1; step < o.n_grid; ++step) {
    const double alpha = static_cast<double>(step) / o.n_grid;
    double lo = INFINITY, hi = 0;
    for (size_t g = 0; g < a.size(); ++g) {
      if (!(a[g] > 0)) continue;
      const double v = std::max(std::pow(a[g], alpha), 1e-4);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (!(hi > 0)) break;  // nothing was excited
    const double norm = std::sqrt(lo * hi);
    for (size_t g = 0; g < a.size(); ++g)
      s[g] = a[g] > 0 ? static_cast<float>(std::max(std::pow(a[g], alpha), 1e-4) / norm) : 1.0f;
    const double loss = scaled_loss(mats, rows, in, expand_scales(s, group, n), pool);
    if (loss < best.loss) {
      best.loss = loss;
      best.alpha = alpha;
      best.s = s;
    }
  }
  return best;
}

void awq_clip_quantize(const WeightMatrix& m, const InputStats& in, void* out, ThreadPool* pool) {
  const int64_t n = m.n_in, B = type_traits(m.type).block_size;
  STRATA_CHECK(in.n == n && n % B == 0);
  const int64_t n_blocks = n / B;
  const size_t block_bytes = type_traits(m.type).block_bytes, rb = row_bytes(m.type, n);
  // The diagonal blocks of H: [n_blocks, B, B] (or the diagonal).
  std::vector<float> hbb;
  if (in.has_gram()) {
    hbb.resize(static_cast<size_t>(n_blocks * B * B));
    for (int64_t b = 0; b < n_blocks; ++b)
      for (int64_t i = 0; i < B; ++i)
        for (int64_t j = 0; j < B; ++j)
          hbb[static_cast<size_t>((b * B + i) * B + j)] =
              in.gram[static_cast<size_t>((b * B + i) * n + b * B + j)];
  }
  auto block_error = [&](int64_t b, const float* d) {
    double e = 0;
    if (hbb.empty()) {
      for (int64_t i = 0; i < B; ++i)
        e += in.msq[static_cast<size_t>(b * B + i)] * static_cast<double>(d[i]) * d[i];
      return e;
    }
    const float* h = hbb.data() + b * B * B;
    for (int64_t i = 0; i < B; ++i) {
      double t = 0;
      for (int64_t j = 0; j < B; ++j) t += static_cast<double>(h[i * B + j]) * d[j];
      e += t * d[i];
    }
    return e;
  };
  auto* dst = static_cast<uint8_t*>(out);
  for_rows(pool, m.n_out, [&](int64_t r) {
    std::vector<float> clamped(static_cast<size_t>(B)), deq(static_cast<size_t>(B)),
        d(static_cast<size_t>(B));
    std::vector<uint8_t> cand(block_bytes);
    const float* w = m.row(r);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const float* v = w + b * B;
      float amax = 0;
      for (int64_t i = 0; i < B; ++i) amax = std::max(amax, std::fabs(v[i]));
      uint8_t* best = dst + static_cast<size_t>(r) * rb + static_cast<size_t>(b) * block_bytes;
      double best_err = INFINITY;
      for (int step = 0; step < kClipSteps; ++step) {
        const float lim = amax * (1.0f - static_cast<float>(step) / 20.0f);
        for (int64_t i = 0; i < B; ++i) clamped[static_cast<size_t>(i)] = std::clamp(v[i], -lim, lim);
        quantize_row(m.type, clamped.data(), cand.data(), B, in.msq.data() + b * B);
        dequantize_row(m.type, cand.data(), deq.data(), B);
        for (int64_t i = 0; i < B; ++i) d[static_cast<size_t>(i)] = deq[static_cast<size_t>(i)] - v[i];
        const double e = block_error(b, d.data());
        if (e < best_err) {
          best_err = e;
          std::copy(cand.begin(), cand.end(), best);
        }
        if (amax == 0) break;
      }
    }
  });
}

std::vector<float> dequantize_matrix(TensorType type, const void* data, int64_t n_out, int64_t n_in) {
  std::vector<float> out(static_cast<size_t>(n_out * n_in));
  const size_t rb = row_bytes(type, n_in);
  for (int64_t r = 0; r < n_out; ++r)
    dequantize_row(type, static_cast<const uint8_t*>(data) + static_cast<size_t>(r) * rb,
                   out.data() + r * n_in, n_in);
  return out;
}

}  // namespace strata::calib
