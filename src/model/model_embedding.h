// A small real model embedded into a large shape (`strata synth --preset P --from SMALL`): the
// written GGUF computes exactly the small model's function (same tokenizer and vocabulary, same
// logits) while its matrices have the large shape, so it costs what a model of that size costs.
// The layout and its derivation are in model/embedding_layout.h/.cpp.
//
// The file is a plain llama/mistral/qwen2 GGUF with only the standard keys: the compensations live
// in the weights, the RMSNorm epsilon and the rope base. When the small model has tied embeddings
// (no output.weight), the large file is tied too: its output matrix would be token_embd with the
// same zero padding columns, so tying keeps the function and the quantized output identical to the
// small model's.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "formats/model_file.h"
#include "model/synthetic_model.h"

namespace strata {

// Type of a large matrix of n_in_large columns. With a small counterpart (n_in_small > 0) it is
// the type quantizing the small model to `wanted` gives that matrix (strata quantize's fallback
// for rows that do not split into `wanted`'s blocks), so the real corner is quantized as the
// small model's; matrices of padding layers get `wanted` (or its fallback for n_in_large).
TensorType embedded_matrix_type(TensorType wanted, int64_t n_in_small, int64_t n_in_large);

// Writes `small` embedded into `preset` as a GGUF (temp file + rename), tensor by tensor: memory
// stays near one large tensor in F32. Matrices are options.type (see embedded_matrix_type), 1-D
// tensors F32. Random values (padding rows) come from options.seed. `progress` (may be empty) is
// called after each tensor with (done, total). Throws strata::Error with a one-line message when
// the small model does not fit the preset (see plan_embedding) or lacks a tensor.
void write_embedded_model(const SynthPreset& preset, const ModelFile& small, const SynthOptions& options,
                          const std::string& path, const std::function<void(size_t, size_t)>& progress);

}  // namespace strata
