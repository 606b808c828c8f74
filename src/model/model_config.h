// Hyper-parameters of a Llama-family decoder, read from GGUF-style metadata and validated.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "formats/metadata.h"

namespace strata {

struct ModelConfig {
  std::string arch;  // "llama", "mistral" or "qwen2"
  std::string name;  // general.name, if any
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  int64_t n_ff = 0;
  float rms_eps = 1e-5f;
  int64_t sliding_window = 0;  // 0 = full attention
  bool qkv_bias = false;       // qwen2
  RopeParams rope;

  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }

  // Reads {arch}.* keys. Throws strata::Error for an unsupported architecture or parameters out
  // of range (layer count, head counts dividing dims, head_count_kv dividing head_count, ...).
  static ModelConfig from_metadata(const Metadata& md);
  // One-line summary for logs and `strata info`.
  std::string summary() const;
};

}  // namespace strata
