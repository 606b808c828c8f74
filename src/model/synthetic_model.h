// Random-weight models of real shapes (for benchmarks on realistic sizes without the weights).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor_type.h"
#include "formats/metadata.h"

namespace strata {

struct SynthPreset {
  std::string name;
  std::string arch;  // llama, mistral, qwen2
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
  float rope_base;
  int64_t sliding_window;  // mistral only
};

const std::vector<SynthPreset>& synth_presets();
// Throws strata::Error listing the known names when `name` is unknown.
const SynthPreset& find_synth_preset(const std::string& name);

// A SentencePiece-style vocabulary of n_vocab tokens (<unk>, <s>, </s>, the 256 byte tokens,
// then letters, "▁"-words and letter n-grams) as tokenizer.ggml.* metadata: any text
// tokenizes (byte fallback) and common English merges into multi-letter pieces.
void add_synthetic_vocab(Metadata& md, int64_t n_vocab);

struct SynthOptions {
  TensorType type = TensorType::F16;  // type of every 2-D weight matrix
  uint64_t seed = 42;
  int n_threads = 0;
  // A GGUF whose tokenizer.* metadata replaces the synthetic vocabulary (a real tokenizer for
  // a random-weight model); it must have as many tokens as the preset. Empty: synthetic.
  std::string vocab_path;
};

// Writes the model as a GGUF file, tensor by tensor (never holding the whole model).
// `progress` (may be empty) is called after each tensor with (done, total).
void write_synthetic_model(const SynthPreset& preset, const SynthOptions& options, const std::string& path,
                           const std::function<void(size_t, size_t)>& progress);

}  // namespace strata
