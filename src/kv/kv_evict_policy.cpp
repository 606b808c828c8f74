#include "kv/kv_evict_policy.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/check.h"

namespace strata {
namespace {

// The `budget` highest of scores [n] (ties: the earlier index; NaN ranks last), increasing.
std::vector<int32_t> top_budget(std::vector<float> scores, int32_t budget) {
  const auto n = static_cast<int32_t>(scores.size());
  std::vector<int32_t> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  if (budget >= n) return idx;
  for (float& s : scores)
    if (std::isnan(s)) s = -INFINITY;  // NaN would break the ordering
  auto better = [&](int32_t a, int32_t b) {
    const float sa = scores[static_cast<size_t>(a)], sb = scores[static_cast<size_t>(b)];
    return sa != sb ? sa > sb : a < b;
  };
  std::nth_element(idx.begin(), idx.begin() + budget, idx.end(), better);
  idx.resize(static_cast<size_t>(budget));
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace

const char* kv_evict_method_name(KvEvictMethod m) {
  switch (m) {
    case KvEvictMethod::SnapKv:
      return "snapkv";
    case KvEvictMethod::H2O:
      return "h2o";
    case KvEvictMethod::Recent:
      return "recent";
  }
  return "?";
}

void KvEvictPolicy::validate() const {
  if (budget < 0) STRATA_THROW("--kv-budget must be at least 0, got ", budget);
  if (budget > (1 << 24)) STRATA_THROW("--kv-budget must be at most 2^24, got ", budget);
  if (window < 1 || window > 4096) STRATA_THROW("--kv-evict-window must be in [1, 4096], got ", window);
  if (pool < 1 || pool > 63 || pool % 2 == 0)
    STRATA_THROW("--kv-evict-pool must be odd and in [1, 63], got ", pool);
}

std::vector<int32_t> snapkv_select(const float* scores, int32_t n_prefix, int32_t budget, int32_t pool) {
  STRATA_CHECK(n_prefix >= 0 && budget >= 0 && pool >= 1);
  const int32_t half = pool / 2;
  std::vector<float> pooled(static_cast<size_t>(n_prefix));
  for (int32_t j = 0; j < n_prefix; ++j) {
    float m = scores[j];
    for (int32_t d = std::max(0, j - half); d <= std::min(n_prefix - 1, j + half); ++d)
      m = std::max(m, scores[d]);
    pooled[static_cast<size_t>(j)] = m;
  }
  return top_budget(std::move(pooled), budget);
}

std::vector<int32_t> h2o_select(const float* scores, int32_t n_prefix, int32_t budget) {
  STRATA_CHECK(n_prefix >= 0 && budget >= 0);
  return top_budget(std::vector<float>(scores, scores + n_prefix), budget);
}

std::vector<int32_t> recent_select(int32_t n_prefix, int32_t budget) {
  STRATA_CHECK(n_prefix >= 0 && budget >= 0);
  std::vector<int32_t> idx(static_cast<size_t>(std::min(n_prefix, budget)));
  std::iota(idx.begin(), idx.end(), n_prefix - static_cast<int32_t>(idx.size()));
  return idx;
}

}  // namespace strata
