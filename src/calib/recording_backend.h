// A Backend decorator that watches the inputs of every weight matrix while the engine runs a
// model over calibration text: it forwards every call to the wrapped backend unchanged and, for
// matmul(), records the input rows x [n_tokens, n_in] into the statistics of the prepared
// matrix (named by its TensorInfo); for matmul_stack(), the rows routed to each matrix of the
// stack into that matrix's slice (per-expert statistics, as llama-imatrix collects for
// MUL_MAT_ID). The decoder is not touched: calibration is the ordinary engine running on this
// backend.
//
// Matrices that read the same input (consecutive matmuls on the same x with no other op in
// between: q/k/v, gate/up) share one Gram matrix; expert slices each have their own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "calib/activation_stats.h"
#include "core/thread_pool.h"

namespace strata::calib {

class RecordingBackend final : public Backend {
 public:
  // `inner` must outlive this backend; n_threads: the pool that accumulates Gram matrices.
  RecordingBackend(Backend& inner, int n_threads);

  // Recording on or off (off: a plain pass-through).
  void set_recording(bool on) { recording_ = on; }
  // Matrices whose Gram matrix is accumulated (default: none).
  void set_gram_filter(std::function<bool(const std::string&)> filter) { gram_filter_ = std::move(filter); }
  // Rows routed to expert `expert` of a matrix holding n_experts: x [n_rows, n_in]. matmul_stack
  // calls it with the rows of each matrix of the stack.
  void record_expert(const std::string& tensor, int expert, int n_experts, int64_t n_in, const float* x,
                     int64_t n_rows);

  StatsMap& stats() { return stats_; }
  const StatsMap& stats() const { return stats_; }
  // Bytes held by Gram matrices.
  size_t gram_bytes() const;
  // Drops every Gram matrix (statistics stay).
  void clear_grams();

  // Backend
  std::string name() const override { return inner_.name() + " (recording)"; }
  int n_threads() const override { return inner_.n_threads(); }
  std::unique_ptr<BackendBuffer> alloc(size_t bytes) override { return inner_.alloc(bytes); }
  std::unique_ptr<BackendMatrix> prepare_matrix(const TensorInfo& t) override;
  void get_rows(const TensorInfo& table, const int32_t* ids, int64_t n_ids, float* out) override;
  void matmul(const BackendMatrix& w, const float* x, float* y, int64_t n_tokens) override;
  void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, float eps) override;
  void add_bias(float* y, const float* b, int64_t n_rows, int64_t n) override;
  void add(float* y, const float* x, int64_t n) override;
  void swiglu(const float* gate, const float* up, float* out, int64_t n) override;
  void rope(float* x, const int32_t* pos, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
            const RopeParams& p) override;
  void store_kv(const KvLayerView& kv, const float* k, const float* v, const AttentionBatch& batch) override;
  void copy_kv_block(const KvLayerView& kv, int32_t src, int32_t dst) override;
  void attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch, const AttentionParams& p,
                 float* out) override;
  // Stacks (MoE experts, MLA's per-head k_b / v_b) are recorded per matrix: each matrix's
  // statistics count only the rows routed to it (llama-imatrix's per-expert counts of
  // MUL_MAT_ID). The other ops of the newer architectures pass through (each is "another op":
  // inputs after it are not shared).
  std::unique_ptr<BackendMatrixStack> prepare_matrix_stack(const TensorInfo& t) override;
  void glu(GluKind kind, const float* gate, const float* up, int64_t in_stride, float* out, int64_t n_rows,
           int64_t n) override {
    tick();
    inner_.glu(kind, gate, up, in_stride, out, n_rows, n);
  }
  void softcap(float* x, int64_t n, float cap) override {
    tick();
    inner_.softcap(x, n, cap);
  }
  void scale(float* x, int64_t n, float s) override {
    tick();
    inner_.scale(x, n, s);
  }
  void copy_rows(const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t n_rows,
                 int64_t n) override {
    tick();
    inner_.copy_rows(src, src_stride, dst, dst_stride, n_rows, n);
  }
  void moe_route(const float* logits, int64_t n_tokens, const MoeRouting& r, int32_t* ids,
                 float* weights) override {
    tick();
    inner_.moe_route(logits, n_tokens, r, ids, weights);
  }
  void matmul_stack(const BackendMatrixStack& w, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                    const float* x, SlotLayout x_layout, float* y, SlotLayout y_layout) override;
  void add_stack_bias(float* y, const float* bias, const int32_t* ids, int64_t n_tokens, int64_t n_slots,
                      int64_t n) override {
    tick();
    inner_.add_stack_bias(y, bias, ids, n_tokens, n_slots, n);
  }
  void weighted_sum(const float* y, const float* weights, int64_t n_tokens, int64_t n_slots, int64_t n,
                    float* out) override {
    tick();
    inner_.weighted_sum(y, weights, n_tokens, n_slots, n, out);
  }

 private:
  // Any op but matmul may write memory a later matmul reads: inputs are only shared across
  // matmuls with no other op in between.
  void tick() { ++generation_; }
  void record(const std::string& tensor, int64_t n_in, const float* x, int64_t n_tokens);
  // Gathers the rows x(t, s) routed to each matrix of a stack and records them per matrix.
  void record_stack(const std::string& tensor, int64_t n_mats, int64_t n_in, const int32_t* ids,
                    int64_t n_tokens, int64_t n_slots, const float* x, SlotLayout x_layout);

  Backend& inner_;
  ThreadPool pool_;
  bool recording_ = true;
  std::function<bool(const std::string&)> gram_filter_;
  StatsMap stats_;
  // The previous matmul's input, to detect matrices reading the same activations.
  const float* last_x_ = nullptr;
  int64_t last_rows_ = -1, last_n_in_ = -1;
  uint64_t last_generation_ = 0, generation_ = 1;
  std::string leader_;
  std::vector<float> gathered_;  // [rows routed to one matrix, n_in] (record_stack)
};

}  // namespace strata::calib
