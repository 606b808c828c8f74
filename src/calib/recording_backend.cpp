#include "calib/recording_backend.h"

#include <algorithm>

#include "core/check.h"
#include "formats/model_file.h"

namespace strata::calib {
namespace {

// A prepared matrix of the wrapped backend plus the name its statistics are kept under.
class RecordedMatrix final : public BackendMatrix {
 public:
  RecordedMatrix(std::string name, std::unique_ptr<BackendMatrix> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}
  TensorType type() const override { return inner_->type(); }
  int64_t n_in() const override { return inner_->n_in(); }
  int64_t n_out() const override { return inner_->n_out(); }
  size_t weight_bytes() const override { return inner_->weight_bytes(); }
  size_t owned_bytes() const override { return inner_->owned_bytes(); }
  const std::string& name() const { return name_; }
  const BackendMatrix& inner() const { return *inner_; }

 private:
  std::string name_;
  std::unique_ptr<BackendMatrix> inner_;
};

// The same for a stack of matrices.
class RecordedStack final : public BackendMatrixStack {
 public:
  RecordedStack(std::string name, std::unique_ptr<BackendMatrixStack> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}
  TensorType type() const override { return inner_->type(); }
  int64_t n_mats() const override { return inner_->n_mats(); }
  int64_t n_in() const override { return inner_->n_in(); }
  int64_t n_out() const override { return inner_->n_out(); }
  size_t matrix_bytes() const override { return inner_->matrix_bytes(); }
  size_t owned_bytes() const override { return inner_->owned_bytes(); }
  const std::string& name() const { return name_; }
  const BackendMatrixStack& inner() const { return *inner_; }

 private:
  std::string name_;
  std::unique_ptr<BackendMatrixStack> inner_;
};

}  // namespace

RecordingBackend::RecordingBackend(Backend& inner, int n_threads) : inner_(inner), pool_(n_threads) {}

std::unique_ptr<BackendMatrix> RecordingBackend::prepare_matrix(const TensorInfo& t) {
  return std::make_unique<RecordedMatrix>(t.name, inner_.prepare_matrix(t));
}

std::unique_ptr<BackendMatrixStack> RecordingBackend::prepare_matrix_stack(const TensorInfo& t) {
  return std::make_unique<RecordedStack>(t.name, inner_.prepare_matrix_stack(t));
}

void RecordingBackend::matmul_stack(const BackendMatrixStack& w, const int32_t* ids, int64_t n_tokens,
                                    int64_t n_slots, const float* x, SlotLayout x_layout, float* y,
                                    SlotLayout y_layout) {
  const auto& m = static_cast<const RecordedStack&>(w);
  tick();
  if (recording_ && n_tokens > 0 && n_slots > 0)
    record_stack(m.name(), m.n_mats(), m.n_in(), ids, n_tokens, n_slots, x, x_layout);
  inner_.matmul_stack(m.inner(), ids, n_tokens, n_slots, x, x_layout, y, y_layout);
}

void RecordingBackend::record_stack(const std::string& tensor, int64_t n_mats, int64_t n_in,
                                    const int32_t* ids, int64_t n_tokens, int64_t n_slots, const float* x,
                                    SlotLayout x_layout) {
  STRATA_CHECK(n_mats > 0 && n_mats <= (int64_t{1} << 20));
  // Rows per matrix, in token order (a stable order keeps the sums reproducible).
  std::vector<int64_t> first(static_cast<size_t>(n_mats + 1), 0);
  for (int64_t i = 0; i < n_tokens * n_slots; ++i) {
    const int32_t e = ids[i];
    STRATA_CHECK(e >= 0 && e < n_mats, "expert id ", e, " of ", tensor, " out of range");
    ++first[static_cast<size_t>(e + 1)];
  }
  for (int64_t e = 0; e < n_mats; ++e) first[static_cast<size_t>(e + 1)] += first[static_cast<size_t>(e)];
  std::vector<int64_t> order(static_cast<size_t>(n_tokens * n_slots));
  std::vector<int64_t> next(first.begin(), first.end() - 1);
  for (int64_t i = 0; i < n_tokens * n_slots; ++i)
    order[static_cast<size_t>(next[static_cast<size_t>(ids[i])]++)] = i;
  for (int64_t e = 0; e < n_mats; ++e) {
    const int64_t b = first[static_cast<size_t>(e)], rows = first[static_cast<size_t>(e + 1)] - b;
    if (rows == 0) continue;
    gathered_.resize(static_cast<size_t>(rows * n_in));
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = order[static_cast<size_t>(b + r)];
      const float* src = x + (i / n_slots) * x_layout.token_stride + (i % n_slots) * x_layout.slot_stride;
      std::copy(src, src + n_in, gathered_.data() + r * n_in);
    }
    record_expert(tensor, static_cast<int>(e), static_cast<int>(n_mats), n_in, gathered_.data(), rows);
  }
}

void RecordingBackend::matmul(const BackendMatrix& w, const float* x, float* y, int64_t n_tokens) {
  const auto& m = static_cast<const RecordedMatrix&>(w);
  if (recording_ && n_tokens > 0) record(m.name(), m.n_in(), x, n_tokens);
  inner_.matmul(m.inner(), x, y, n_tokens);
}

void RecordingBackend::record(const std::string& tensor, int64_t n_in, const float* x, int64_t n_tokens) {
  const bool shared =
      x == last_x_ && n_tokens == last_rows_ && n_in == last_n_in_ && generation_ == last_generation_;
  if (!shared) leader_ = tensor;
  last_x_ = x;
  last_rows_ = n_tokens;
  last_n_in_ = n_in;
  last_generation_ = generation_;

  auto [it, inserted] = stats_.try_emplace(tensor, n_in, 1);
  TensorStats& s = it->second;
  STRATA_CHECK(s.n_in == n_in && s.n_mat == 1, "matrix ", tensor, " changed shape during calibration");
  s.accumulate(0, x, n_tokens);
  if (!gram_filter_ || !gram_filter_(tensor)) return;
  if (leader_ != tensor) {
    const TensorStats& lead = stats_.at(leader_);
    if (lead.gram[0]) {  // reads the leader's input: one Gram matrix for both
      if (!s.gram[0]) {
        s.gram[0] = lead.gram[0];
        s.gram_leader = leader_;
      }
      STRATA_CHECK(s.gram[0] == lead.gram[0], "matrix ", tensor, " changed the input it shares");
      return;
    }
  }
  STRATA_CHECK(s.gram_leader.empty(), "matrix ", tensor, " stopped sharing its input");
  if (!s.gram[0]) s.gram[0] = std::make_shared<GramMatrix>(n_in);
  s.gram[0]->accumulate(x, n_tokens, &pool_);
}

void RecordingBackend::record_expert(const std::string& tensor, int expert, int n_experts, int64_t n_in,
                                     const float* x, int64_t n_rows) {
  STRATA_CHECK(n_experts > 0 && expert >= 0 && expert < n_experts);
  tick();  // expert inputs are gathered rows: never shared with the previous matmul
  if (!recording_ || n_rows <= 0) return;
  auto [it, inserted] = stats_.try_emplace(tensor, n_in, n_experts);
  TensorStats& s = it->second;
  STRATA_CHECK(s.n_in == n_in && s.n_mat == n_experts, "matrix ", tensor,
               " changed shape during calibration");
  s.accumulate(expert, x, n_rows);
  if (!gram_filter_ || !gram_filter_(tensor)) return;
  auto& g = s.gram[static_cast<size_t>(expert)];
  if (!g) g = std::make_shared<GramMatrix>(n_in);
  g->accumulate(x, n_rows, &pool_);
}

size_t RecordingBackend::gram_bytes() const {
  size_t total = 0;
  for (const auto& [name, s] : stats_)
    if (s.gram_leader.empty())
      for (const auto& g : s.gram)
        if (g) total += g->bytes();
  return total;
}

void RecordingBackend::clear_grams() {
  for (auto& [name, s] : stats_) {
    for (auto& g : s.gram) g.reset();
    s.gram_leader.clear();
  }
  last_x_ = nullptr;
}

void RecordingBackend::get_rows(const TensorInfo& table, const int32_t* ids, int64_t n_ids, float* out) {
  tick();
  inner_.get_rows(table, ids, n_ids, out);
}

void RecordingBackend::rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n,
                                float eps) {
  tick();
  inner_.rms_norm(x, w, y, n_rows, n, eps);
}

void RecordingBackend::add_bias(float* y, const float* b, int64_t n_rows, int64_t n) {
  tick();
  inner_.add_bias(y, b, n_rows, n);
}

void RecordingBackend::add(float* y, const float* x, int64_t n) {
  tick();
  inner_.add(y, x, n);
}

void RecordingBackend::swiglu(const float* gate, const float* up, float* out, int64_t n) {
  tick();
  inner_.swiglu(gate, up, out, n);
}

void RecordingBackend::rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
                            const RopeParams& p) {
  tick();
  inner_.rope(x, pos, n_tokens, n_heads, head_dim, p);
}

void RecordingBackend::store_kv(const KvLayerView& kv, const float* k, const float* v,
                                const AttentionBatch& batch) {
  tick();
  inner_.store_kv(kv, k, v, batch);
}

void RecordingBackend::copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) {
  tick();
  inner_.copy_kv_block(kv, src, dst);
}

void RecordingBackend::attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                                 const AttentionParams& p, float* out) {
  tick();
  inner_.attention(q, kv, batch, p, out);
}

}  // namespace strata::calib
