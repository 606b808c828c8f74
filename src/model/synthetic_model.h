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
  std::string arch;  // any architecture of model/arch_table.h
  int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx;
  float rope_base;
  int64_t sliding_window;  // mistral, gemma2/3, gpt-oss
  // The newer architectures' shapes (0: not used); see synthetic_arch.cpp.
  int64_t head_dim = 0;  // attention.key_length when it is not n_embd / n_head (qwen3, gemma)
  int64_t n_expert = 0, n_expert_used = 0, n_ff_exp = 0;
  int64_t n_expert_shared = 0, n_dense_lead = 0;                          // deepseek2
  int64_t n_group = 0, n_group_used = 0;                                  // deepseek2 (V3) expert groups
  int64_t q_lora = 0, kv_lora = 0, qk_nope = 0, qk_rope = 0, v_head = 0;  // deepseek2 MLA
};

const std::vector<SynthPreset>& synth_presets();
// Throws strata::Error listing the known names when `name` is unknown.
const SynthPreset& find_synth_preset(const std::string& name);

// A SentencePiece-style vocabulary of n_vocab tokens (<unk>, <s>, </s>, the 256 byte tokens,
// then letters, "▁"-words and letter n-grams) as tokenizer.ggml.* metadata: any text
// tokenizes (byte fallback) and common English merges into multi-letter pieces.
void add_synthetic_vocab(Metadata& md, int64_t n_vocab);

// Deterministic N(0, sigma) values for row `row` of tensor number `tensor`: [n], the same whatever
// the threading (each row has its own generator).
void fill_gaussian_row(float* out, int64_t n, uint64_t seed, uint64_t tensor, int64_t row, float sigma);

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

// True for presets of the newer architectures (synthetic_arch.cpp writes them: every tensor the
// decoder binds for that architecture, named and shaped as llama.cpp writes them).
bool is_arch_preset(const SynthPreset& preset);
void write_arch_synthetic_model(const SynthPreset& preset, const SynthOptions& options,
                                const std::string& path, const std::function<void(size_t, size_t)>& progress);

}  // namespace strata
