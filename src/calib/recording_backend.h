// A Backend decorator that watches the inputs of every weight matrix while the engine runs a
// model over calibration text: it forwards every call to the wrapped backend unchanged and, for
// matmul(), records the input rows x [n_tokens, n_in] into the statistics of the prepared
// matrix (named by its TensorInfo). The decoder is not touched: calibration is the ordinary
// engine running on this backend.
//
// Matrices that read the same input (consecutive matmuls on the same x with no other op in
// between: q/k/v, gate/up) share one Gram matrix. A grouped expert matmul (MoE) records its rows
// per expert through record_expert().
#pragma once

#include <functional>
#include <memory>
#include <string>

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
  // Rows routed to expert `expert` of a matrix holding n_experts: x [n_rows, n_in].
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

 private:
  // Any op but matmul may write memory a later matmul reads: inputs are only shared across
  // matmuls with no other op in between.
  void tick() { ++generation_; }
  void record(const std::string& tensor, int64_t n_in, const float* x, int64_t n_tokens);

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
};

}  // namespace strata::calib
