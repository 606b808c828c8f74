#include "backend/cpu/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/check.h"

namespace strata::cpu {
namespace {

// Softmax over n values (max subtracted first), in double for a reference-grade sum.
void softmax(const float* x, int n, float* out) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += out[i] = std::exp(x[i] - mx);
  for (int i = 0; i < n; ++i) out[i] = static_cast<float>(out[i] / sum);
}

// Indices of the k largest of score[0..n), best first; equal scores keep index order.
void top_k(const float* score, int n, int k, int32_t* out) {
  int32_t idx[1024];
  std::iota(idx, idx + n, 0);
  std::partial_sort(idx, idx + k, idx + n, [&](int32_t a, int32_t b) {
    return score[a] > score[b] || (score[a] == score[b] && a < b);
  });
  std::copy(idx, idx + k, out);
}

}  // namespace

void route_token(const float* logits, const MoeRouting& r, int32_t* ids, float* weights) {
  const int n = r.n_experts, k = r.n_used;
  STRATA_CHECK(n > 0 && n <= 1024 && k > 0 && k <= n, "bad MoE routing ", k, " of ", n);
  STRATA_CHECK(r.n_groups >= 1 && n % r.n_groups == 0 && r.n_groups_used >= 1 &&
               r.n_groups_used <= r.n_groups);
  float probs[1024], select[1024];
  switch (r.gating) {
    case MoeGating::Softmax:
      softmax(logits, n, probs);
      break;
    case MoeGating::Sigmoid:
      for (int i = 0; i < n; ++i) probs[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double{logits[i]})));
      break;
    case MoeGating::SoftmaxWeight:
      std::copy(logits, logits + n, probs);
      break;
  }
  for (int i = 0; i < n; ++i) select[i] = probs[i] + (r.selection_bias ? r.selection_bias[i] : 0.0f);
  if (r.n_groups > 1) {
    // A group's score is the sum of its two best experts; experts outside the best
    // n_groups_used groups cannot be chosen.
    const int per = n / r.n_groups;
    STRATA_CHECK(per >= 2, "expert groups need at least 2 experts each");
    float group_score[1024];
    for (int g = 0; g < r.n_groups; ++g) {
      int32_t best[2];
      top_k(select + g * per, per, 2, best);
      group_score[g] = select[g * per + best[0]] + select[g * per + best[1]];
    }
    int32_t keep[1024];
    top_k(group_score, r.n_groups, r.n_groups_used, keep);
    std::vector<bool> kept(static_cast<size_t>(r.n_groups), false);
    for (int i = 0; i < r.n_groups_used; ++i) kept[static_cast<size_t>(keep[i])] = true;
    for (int g = 0; g < r.n_groups; ++g)
      if (!kept[static_cast<size_t>(g)])
        std::fill(select + g * per, select + (g + 1) * per, -std::numeric_limits<float>::infinity());
  }
  top_k(select, n, k, ids);
  for (int i = 0; i < k; ++i) weights[i] = probs[ids[i]];
  if (r.gating == MoeGating::SoftmaxWeight) softmax(weights, k, weights);
  if (r.norm_weights) {
    double sum = 0.0;
    for (int i = 0; i < k; ++i) sum += weights[i];
    // As llama.cpp: the sum is clamped to the smallest normal f16 so that it never divides by 0.
    const double denom = std::max(sum, 6.103515625e-5);
    for (int i = 0; i < k; ++i) weights[i] = static_cast<float>(weights[i] / denom);
  }
  if (r.weights_scale != 1.0f)
    for (int i = 0; i < k; ++i) weights[i] *= r.weights_scale;
}

}  // namespace strata::cpu
