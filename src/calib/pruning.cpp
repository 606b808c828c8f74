#include "calib/pruning.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "core/check.h"

namespace strata::calib {

const char* prune_method_name(PruneMethod m) {
  switch (m) {
    case PruneMethod::Magnitude:
      return "magnitude";
    case PruneMethod::Wanda:
      return "wanda";
    case PruneMethod::SparseGpt:
      return "sparsegpt";
  }
  return "?";
}

PruneMethod parse_prune_method(const std::string& name) {
  if (name == "magnitude") return PruneMethod::Magnitude;
  if (name == "wanda") return PruneMethod::Wanda;
  if (name == "sparsegpt") return PruneMethod::SparseGpt;
  STRATA_THROW("unknown pruning method '", name, "' (use magnitude, wanda or sparsegpt)");
}

std::string SparsityPattern::describe() const {
  if (structured()) return std::to_string(n) + ":" + std::to_string(m);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", sparsity * 100);
  return buf;
}

SparsityPattern unstructured_pattern(double s) {
  if (!(s > 0 && s < 1)) STRATA_THROW("--sparsity must be in (0, 1), got ", s);
  SparsityPattern p;
  p.sparsity = s;
  return p;
}

SparsityPattern parse_nm_pattern(const std::string& text) {
  const size_t colon = text.find(':');
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 4 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      STRATA_THROW("bad --pattern '", text, "': expected N:M, e.g. 2:4");
    return std::stoi(s);
  };
  if (colon == std::string::npos) STRATA_THROW("bad --pattern '", text, "': expected N:M, e.g. 2:4");
  SparsityPattern p;
  p.n = number(text.substr(0, colon));
  p.m = number(text.substr(colon + 1));
  if (p.n <= 0 || p.m > 256 || p.n >= p.m)
    STRATA_THROW("bad --pattern '", text, "': need 0 < N < M <= 256 (N of every M weights are zeroed)");
  return p;
}

int64_t pruned_per_row(const SparsityPattern& p, int64_t n_in) {
  if (p.structured()) return n_in / p.m * p.n;
  return std::llround(p.sparsity * static_cast<double>(n_in));
}

void check_pattern_fits(const SparsityPattern& p, int64_t n_in, const std::string& tensor) {
  if (p.structured() && n_in % p.m != 0)
    STRATA_THROW(tensor, ": rows of ", n_in, " inputs do not split into groups of ", p.m, " for ",
                 p.describe());
}

namespace {

// Marks the k lowest of score[0, len) (ties: lower index first) in pruned[0, len).
void mark_lowest(const float* score, int64_t len, int64_t k, uint8_t* pruned, std::vector<int32_t>& idx) {
  idx.resize(static_cast<size_t>(len));
  std::iota(idx.begin(), idx.end(), 0);
  std::fill(pruned, pruned + len, uint8_t{0});
  if (k <= 0) return;
  auto less = [score](int32_t a, int32_t b) {
    return score[a] < score[b] || (score[a] == score[b] && a < b);
  };
  if (k < len) std::nth_element(idx.begin(), idx.begin() + k, idx.end(), less);
  for (int64_t i = 0; i < std::min(k, len); ++i) pruned[idx[static_cast<size_t>(i)]] = 1;
}

}  // namespace

void select_row_mask(const float* score, int64_t n_out, int64_t n_in, const SparsityPattern& p,
                     uint8_t* pruned) {
  check_pattern_fits(p, n_in, "matrix");
  std::vector<int32_t> idx;
  for (int64_t r = 0; r < n_out; ++r) {
    const float* s = score + r * n_in;
    uint8_t* mk = pruned + r * n_in;
    if (!p.structured()) {
      mark_lowest(s, n_in, pruned_per_row(p, n_in), mk, idx);
      continue;
    }
    for (int64_t g = 0; g < n_in; g += p.m) mark_lowest(s + g, p.m, p.n, mk + g, idx);
  }
}

void prune_scores(const float* w, int64_t n_out, int64_t n_in, const float* col_norm, float* score) {
  for (int64_t r = 0; r < n_out; ++r)
    for (int64_t c = 0; c < n_in; ++c) {
      const float a = std::fabs(w[r * n_in + c]);
      score[r * n_in + c] = col_norm ? a * col_norm[c] : a;
    }
}

void prune_by_score(float* w, int64_t n_out, int64_t n_in, const float* col_norm, const SparsityPattern& p,
                    uint8_t* pruned) {
  std::vector<float> score(static_cast<size_t>(n_out * n_in));
  prune_scores(w, n_out, n_in, col_norm, score.data());
  select_row_mask(score.data(), n_out, n_in, p, pruned);
  for (int64_t i = 0; i < n_out * n_in; ++i)
    if (pruned[i]) w[i] = 0.0f;
}

}  // namespace strata::calib
