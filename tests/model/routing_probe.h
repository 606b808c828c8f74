// A Backend that forwards every op to another one and measures, for every MoE routing decision,
// how close it was to going the other way: the gap between the last chosen and the first
// unchosen expert's selection score, and between the last kept and first dropped expert group.
//
// Two correct implementations differ in their router scores by rounding (by ~1% of the logits
// with 8-bit activations, as llama.cpp quantizes them), so at a near-tie they may route a token to
// different experts; the reference tests use these margins to tell such a flip from a bug. The
// margins are computed here in double from the router logits, independently of the kernel.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/backend.h"

namespace strata::test {

class RoutingProbe final : public Backend {
 public:
  explicit RoutingProbe(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  // Smallest routing margin of each token of the forward passes since the last clear(), over all
  // layers, in the order of the tokens of each moe_route call (one call per MoE layer: entries
  // repeat per layer and are min-reduced by token index within a pass).
  const std::vector<double>& token_margins() const { return margins_; }
  void clear() { margins_.clear(); }

  std::string name() const override { return inner_->name(); }
  int n_threads() const override { return inner_->n_threads(); }
  std::unique_ptr<BackendBuffer> alloc(size_t bytes) override { return inner_->alloc(bytes); }
  std::unique_ptr<BackendMatrix> prepare_matrix(const TensorInfo& t) override {
    return inner_->prepare_matrix(t);
  }
  std::unique_ptr<BackendMatrixStack> prepare_matrix_stack(const TensorInfo& t) override {
    return inner_->prepare_matrix_stack(t);
  }
  void get_rows(const TensorInfo& table, const int32_t* ids, int64_t n_ids, float* out) override {
    inner_->get_rows(table, ids, n_ids, out);
  }
  void matmul(const BackendMatrix& w, const float* x, float* y, int64_t n_tokens) override {
    inner_->matmul(w, x, y, n_tokens);
  }
  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override {
    inner_->rms_norm(x, w, y, n_rows, n, eps);
  }
  void add_bias(float* y, const float* b, int64_t n_rows, int64_t n) override {
    inner_->add_bias(y, b, n_rows, n);
  }
  void add(float* y, const float* x, int64_t n) override { inner_->add(y, x, n); }
  void swiglu(const float* gate, const float* up, float* out, int64_t n) override {
    inner_->swiglu(gate, up, out, n);
  }
  void glu(GluKind kind, const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_rows,
           int64_t n) override {
    inner_->glu(kind, gate, up, in_stride, out, n_rows, n);
  }
  void softcap(float* x, int64_t n, float cap) override { inner_->softcap(x, n, cap); }
  void scale(float* x, int64_t n, float s) override { inner_->scale(x, n, s); }
  void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t n_rows,
                 int64_t n) override {
    inner_->copy_rows(src, src_stride, dst, dst_stride, n_rows, n);
  }
  void moe_route(const float* logits, int64_t n_tokens, const MoeRouting& r, int32_t* ids,
                 float* weights) override {
    inner_->moe_route(logits, n_tokens, r, ids, weights);
    if (margins_.size() < static_cast<size_t>(n_tokens))
      margins_.resize(static_cast<size_t>(n_tokens), std::numeric_limits<double>::infinity());
    for (int64_t t = 0; t < n_tokens; ++t)
      margins_[static_cast<size_t>(t)] =
          std::min(margins_[static_cast<size_t>(t)], margin(logits + t * r.n_experts, r));
  }
  void matmul_stack(const BackendMatrixStack& w, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                    const float* x, SlotLayout xl, float* y, SlotLayout yl) override {
    inner_->matmul_stack(w, ids, n_tokens, n_slots, x, xl, y, yl);
  }
  void add_stack_bias(float* y, const float* bias, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                      int64_t n) override {
    inner_->add_stack_bias(y, bias, ids, n_tokens, n_slots, n);
  }
  void weighted_sum(const float* y, const float* w, int64_t n_tokens, int64_t n_slots, int64_t n,
                    float* out) override {
    inner_->weighted_sum(y, w, n_tokens, n_slots, n, out);
  }
  void rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
            const RopeParams& p) override {
    inner_->rope(x, pos, n_tokens, n_heads, head_dim, p);
  }
  void store_kv(const KvLayerView& kv, const float* k, const float* v, const AttentionBatch& batch) override {
    inner_->store_kv(kv, k, v, batch);
  }
  void copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) override {
    inner_->copy_kv_block(kv, src, dst);
  }
  void attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch, const AttentionParams& p,
                 float* out) override {
    inner_->attention(q, kv, batch, p, out);
  }

 private:
  // The gap at the k-th choice of a descending list of scores (infinite when nothing is left out).
  static double gap_at(std::vector<double> s, size_t k) {
    if (k >= s.size()) return std::numeric_limits<double>::infinity();
    std::sort(s.rbegin(), s.rend());
    return s[k - 1] - s[k];
  }

  static double margin(const float* logits, const MoeRouting& r) {
    const int n = r.n_experts;
    std::vector<double> s(logits, logits + n);
    // Margins are in probability units for every gating, so that one tie threshold means the
    // same for all: gpt-oss (SoftmaxWeight) selects by logit and only weights by a softmax, but a
    // gap of raw logits is ~1/p times larger than the same gap in probabilities, and its
    // quantized model's logit gaps move by ~0.06 between two of Strata's own ISA levels.
    // Softmax is monotonic, so the selection order is the logits'.
    if (r.gating == MoeGating::Softmax || r.gating == MoeGating::SoftmaxWeight) {
      const double mx = *std::max_element(s.begin(), s.end());
      double sum = 0;
      for (double& v : s) sum += v = std::exp(v - mx);
      for (double& v : s) v /= sum;
    } else if (r.gating == MoeGating::Sigmoid) {
      for (double& v : s) v = 1.0 / (1.0 + std::exp(-v));
    }
    if (r.selection_bias)
      for (int i = 0; i < n; ++i) s[static_cast<size_t>(i)] += r.selection_bias[i];
    double m = std::numeric_limits<double>::infinity();
    if (r.n_groups > 1) {
      const int per = n / r.n_groups;
      std::vector<double> group(static_cast<size_t>(r.n_groups));
      std::vector<std::pair<double, int>> ranked;
      for (int g = 0; g < r.n_groups; ++g) {
        std::vector<double> v(s.begin() + g * per, s.begin() + (g + 1) * per);
        std::sort(v.rbegin(), v.rend());
        ranked.push_back({v[0] + v[1], g});
      }
      std::vector<double> scores;
      for (auto& [score, g] : ranked) scores.push_back(score);
      m = gap_at(scores, static_cast<size_t>(r.n_groups_used));
      std::sort(ranked.rbegin(), ranked.rend());
      std::vector<bool> kept(static_cast<size_t>(r.n_groups), false);
      for (int i = 0; i < r.n_groups_used; ++i)
        kept[static_cast<size_t>(ranked[static_cast<size_t>(i)].second)] = true;
      std::vector<double> eligible;
      for (int i = 0; i < n; ++i)
        if (kept[static_cast<size_t>(i / per)]) eligible.push_back(s[static_cast<size_t>(i)]);
      s = eligible;
    }
    return std::min(m, gap_at(s, static_cast<size_t>(r.n_used)));
  }

  std::unique_ptr<Backend> inner_;
  std::vector<double> margins_;
};

}  // namespace strata::test
