// Hugging Face model directories (config.json + model.safetensors or a sharded
// model.safetensors.index.json), translated to GGUF tensor names and metadata keys.
//
// Architectures: LlamaForCausalLM -> "llama", MistralForCausalLM -> "mistral",
// Qwen2ForCausalLM -> "qwen2". Keys written (ARCH = the architecture name):
//   general.architecture, general.name
//   ARCH.vocab_size, ARCH.context_length (max_position_embeddings), ARCH.embedding_length
//   (hidden_size), ARCH.feed_forward_length (intermediate_size), ARCH.block_count,
//   ARCH.attention.head_count, ARCH.attention.head_count_kv (num_key_value_heads, default
//   head_count), ARCH.attention.layer_norm_rms_epsilon (rms_norm_eps), ARCH.rope.freq_base
//   (rope_theta, default 10000), ARCH.rope.dimension_count (head_dim),
//   ARCH.attention.key_length / value_length (only when config.head_dim is set),
//   mistral.attention.sliding_window (config.sliding_window, when set).
//   rope_scaling {"rope_type"/"type": "linear", "factor"}:
//     ARCH.rope.scaling.type = "linear", ARCH.rope.scaling.factor
//   rope_scaling {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
//                 original_max_position_embeddings}:
//     ARCH.rope.scaling.type = "llama3", ARCH.rope.scaling.factor,
//     ARCH.rope.scaling.low_freq_factor, ARCH.rope.scaling.high_freq_factor,
//     ARCH.rope.scaling.original_context_length
//   Other rope_scaling types are rejected (they would silently change the model's output).
//
// Tensors: F32, F16 and BF16 stay in their type and are used in place from the maps (copied
// only when misaligned). llama and mistral q_proj/k_proj rows (and biases) are permuted from
// HF's rotate-half order to GGUF's interleaved pairs, as llama.cpp's converter does: within
// each head of head_dim rows, new row 2*i+j is old row j*(head_dim/2)+i. qwen2 uses NeoX rope
// on the HF layout, so it is not permuted. With tie_word_embeddings there is no output.weight
// (a checkpoint holding only lm_head.weight provides token_embd.weight from it).
//
// GPTQ/AWQ checkpoints (a "quantization_config" in config.json): each packed Linear becomes one
// Q4_0 / Q4_1 / Q8_0 (F16 / F32 where the grid has no exact GGUF type) matrix, see
// formats/quantized_checkpoint.h.
//
// Tokenizer keys come from add_hf_tokenizer_metadata (formats/hf_tokenizer.h) when the
// directory has a tokenizer.json.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "formats/model_file.h"
#include "formats/quantized_checkpoint.h"
#include "formats/safetensors.h"

namespace strata {

class HfModelFile : public ModelFile {
 public:
  // Throws strata::Error naming the directory or file and the problem.
  static std::unique_ptr<HfModelFile> open(const std::string& dir);

 private:
  HfModelFile() = default;
  std::vector<std::pair<std::string, size_t>> open_shards(const std::string& dir);
  void load_tensors(const std::string& dir, bool tied, bool permute_qk);
  TensorInfo packed_linear_tensor(const std::string& prefix, const std::map<std::string, size_t>& shard_of,
                                  const std::string& label);

  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::optional<QuantizedCheckpointConfig> quant_;  // GPTQ/AWQ checkpoints (formats/quantized_checkpoint.h)
};

// True when `path` is a directory holding config.json.
bool is_hf_model_dir(const std::string& path);

// Translates a config.json text into the GGUF keys above (no tokenizer keys); `name` is used
// for general.name when the config has no _name_or_path and in error messages.
Metadata hf_config_metadata(const std::string& config_json, const std::string& name);

}  // namespace strata
