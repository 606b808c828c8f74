// The one config-driven decoder over a paged KV cache: every architecture of arch_table.h (the
// Llama family, qwen3/qwen3moe, gemma2/3, phi3, olmo2, deepseek2, gpt-oss) is this layer loop
// with the blocks and norms its table entry and hyper-parameters select.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/model_file.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "model/op_profile.h"
#include "model/w8a8_plan.h"
#include "tokenizer/tokenizer.h"

namespace strata {

struct ForwardScratch;
struct LayerWeights;

struct ModelLoadOptions {
  std::string tokenizer_path;  // llama2.c tokenizer .bin for a .bin checkpoint
  // Context the model will run with (0: its training context); chooses phi3's long or short
  // LongRoPE factors as llama.cpp does (long when it exceeds the original context).
  int64_t n_ctx = 0;
  // Decoder-layer matrices to load as W8A8 (w8a8_plan.h); null: every weight keeps its type.
  std::shared_ptr<const W8A8Plan> w8a8;
};

class Model {
 public:
  // Opens the file (any format open_model_file accepts), validates config and tensor shapes,
  // builds the tokenizer and prepares the weights on `backend` (which must outlive the model).
  static std::unique_ptr<Model> load(const std::string& path, Backend& backend,
                                     const ModelLoadOptions& options = {});
  // The same from a file already opened (or made in memory).
  static std::unique_ptr<Model> load(std::unique_ptr<ModelFile> file, Backend& backend,
                                     const ModelLoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const ModelLoadOptions& load_options() const { return options_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelFile& file() const { return *file_; }
  Backend& backend() const { return backend_; }
  // Geometry of the KV cache this model needs.
  KvGeometry kv_geometry(const KvCacheType& kv_type = {}, int32_t block_size = 16) const;
  // Bytes of weights read per decoded token (all matrices once; for MoE layers only the
  // n_expert_used experts a token runs, plus the shared ones).
  size_t weight_bytes() const;
  // Bytes of all weight matrices, every expert included.
  size_t total_weight_bytes() const;

  // Runs the batch as one pass, writing K/V of every token into `kv` and the logits of the tokens
  // with want_logits, in batch order, to logits: [batch.n_outputs(), n_vocab]. The scratch grows
  // to the largest batch seen (about 4 * (5 * n_embd + 2 * n_embd_kv + 2 * n_ff) bytes per token),
  // so the caller bounds the batch: the engine by its token budget (drafters by their draft length).
  // The final hidden states (after the final norm, before the output matrix) of the tokens with
  // want_hidden go to hidden, in batch order: [batch.n_hidden_outputs(), n_embd] (null when none).
  void forward(const ForwardBatch& batch, const KvStorage& kv, float* logits, float* hidden = nullptr);

  // Times every op of forward() by category (costs a clock read per op).
  void set_profiling(bool on) { profiling_ = on; }
  const OpProfile& profile() const { return profile_; }
  void reset_profile() { profile_ = OpProfile{}; }

 private:
  Model(std::unique_ptr<ModelFile> file, Backend& backend, const ModelLoadOptions& options);
  void bind_weights();  // model_weights.cpp
  void run_layer(int64_t il, int64_t n, const KvLayerView& kv, const AttentionBatch& ab,
                 const ForwardBatch& batch);

  std::unique_ptr<ModelFile> file_;
  Backend& backend_;
  ModelLoadOptions options_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  const TensorInfo* token_embd_ = nullptr;      // [n_vocab, n_embd] any type, read by get_rows
  std::unique_ptr<BackendMatrix> output_;       // [n_vocab, n_embd]
  std::unique_ptr<BackendBuffer> output_norm_;  // [n_embd] f32
  std::vector<float> rope_freq_factors_;        // [n_rot / 2] or empty (rope_freqs / LongRoPE factors)
  std::vector<LayerWeights> layers_;
  std::unique_ptr<ForwardScratch> scratch_;
  bool profiling_ = false;
  OpProfile profile_;
};

}  // namespace strata
