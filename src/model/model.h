// The config-driven Llama-family decoder (llama, mistral, qwen2) over a paged KV cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/model_file.h"
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
#include "model/model_config.h"
#include "tokenizer/tokenizer.h"

namespace strata {

// Where forward time goes, by op category (filled only while profiling is on).
struct OpProfile {
  enum Op { Embed, Norm, Matmul, Rope, Attention, Elementwise, Output, kNumOps };
  double seconds[kNumOps] = {};
  int64_t calls[kNumOps] = {};
  static const char* name(int op);
};

struct ModelLoadOptions {
  std::string tokenizer_path;  // llama2.c tokenizer .bin for a .bin checkpoint
  int64_t max_batch_tokens = 512;  // micro-batch size: larger batches are run in pieces
};

class Model {
 public:
  // Opens the file (any format open_model_file accepts), validates config and tensor shapes,
  // builds the tokenizer and prepares the weights on `backend` (which must outlive the model).
  static std::unique_ptr<Model> load(const std::string& path, Backend& backend,
                                     const ModelLoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const ModelFile& file() const { return *file_; }
  Backend& backend() const { return backend_; }
  // Geometry of the KV cache this model needs.
  KvGeometry kv_geometry(const KvCacheType& kv_type = {}, int32_t block_size = 16) const;
  // Bytes of weights read per decoded token (all matrices once).
  size_t weight_bytes() const;

  // Runs the batch, writing K/V of every token into `kv` and the logits of the tokens with
  // want_logits, in batch order, to logits: [batch.n_outputs(), n_vocab].
  void forward(const ForwardBatch& batch, const KvStorage& kv, float* logits);

  // Times every op of forward() by category (costs a clock read per op).
  void set_profiling(bool on) { profiling_ = on; }
  const OpProfile& profile() const { return profile_; }
  void reset_profile() { profile_ = OpProfile{}; }

 private:
  struct Layer;
  struct Scratch;
  Model(std::unique_ptr<ModelFile> file, Backend& backend, const ModelLoadOptions& options);
  void bind_weights();
  void forward_micro_batch(const ForwardBatch& batch, int64_t begin, int64_t end, const KvStorage& kv,
                           float* logits);
  void run_layer(const Layer& layer, int64_t n, const KvLayerView& kv, const AttentionBatch& ab);

  std::unique_ptr<ModelFile> file_;
  Backend& backend_;
  ModelLoadOptions options_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
  const TensorInfo* token_embd_ = nullptr;  // [n_vocab, n_embd] any type, read by get_rows
  std::unique_ptr<BackendMatrix> output_;   // [n_vocab, n_embd]
  std::unique_ptr<BackendBuffer> output_norm_;  // [n_embd] f32
  std::vector<float> rope_freq_factors_;        // [n_rot / 2] or empty
  std::vector<Layer> layers_;
  std::unique_ptr<Scratch> scratch_;
  bool profiling_ = false;
  OpProfile profile_;

  template <typename F>
  void timed(OpProfile::Op op, F&& f);
};

}  // namespace strata
