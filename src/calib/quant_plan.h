// Which type each tensor of a model is quantized to: llama-quantize's names and rules.
//
// A TYPE is one of llama.cpp's file types (llama_ftype): the pure types (F32, F16, BF16, Q4_0,
// Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, MXFP4_MOE) and the mixtures Q2_K, Q2_K_S,
// Q3_K_S/M/L, Q4_K_S/M, Q5_K_S/M, Q6_K, IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ3_XXS, IQ3_XS, IQ3_S,
// IQ3_M, IQ1_S, IQ1_M, with llama.cpp's aliases Q3_K = Q3_K_M, Q4_K = Q4_K_M,
// Q5_K = Q5_K_M (and MXFP4 = MXFP4_MOE), or COPY (every tensor kept as it is).
// For each quantizable tensor (2-D or more, name ending in "weight", not a norm, not
// ffn_gate_inp, ...) the order of precedence is llama_tensor_get_type's:
//  1. --token-embedding-type / --output-tensor-type for token_embd / output;
//  2. the first --tensor-type PATTERN=TYPE whose regex matches the name (std::regex_search);
//  3. unless --pure, the mixture rules of the file type (more bits for output, attn_v, ffn_down
//     in chosen layers, ...), counted in llama.cpp's order (tensor names sorted as strings);
//  4. the fallback for rows that do not split into the type's blocks (quant/quantize.h).
// Tensors that are not quantized keep their type, except 1-D tensors, which become F32.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor_type.h"
#include "formats/model_file.h"

namespace strata::calib {

struct FileTypePreset {
  std::string name;   // llama.cpp's spelling, e.g. "Q4_K_M"
  uint32_t ftype;     // llama_ftype, written as general.file_type
  TensorType base;    // the default tensor type
  bool mixture;       // has mixture rules (the K-quant presets)
  bool copy = false;  // COPY
};

// Case-insensitive; nullptr when unknown. Also accepts llama.cpp's numbers ("15").
const FileTypePreset* find_file_type(std::string_view name);
// The names for help texts: "Q4_0 Q4_1 ... COPY".
std::string file_type_names();

struct TensorTypeOverride {
  std::string pattern;  // as given, lower-cased (llama.cpp lower-cases it)
  std::regex regex;
  TensorType type;
};
// "PATTERN=TYPE"; throws strata::Error for a malformed option or unknown type.
TensorTypeOverride parse_tensor_type_override(const std::string& option);

struct PlanOptions {
  const FileTypePreset* preset = nullptr;
  bool pure = false;
  bool has_imatrix = false;
  std::optional<TensorType> output_type;
  std::optional<TensorType> token_embedding_type;
  std::vector<TensorTypeOverride> overrides;
};

struct TensorPlan {
  TensorType type = TensorType::F32;    // the type it is stored as
  bool quantized = false;               // converted by the quantizer (else copied / made F32)
  bool fell_back = false;               // its rows did not fit the chosen type
  TensorType wanted = TensorType::F32;  // the type chosen before the fallback
};

// One entry per tensor of `f`, in file order. Throws strata::Error for a target type Strata
// cannot quantize to, and, as llama.cpp does, for Q2_K_S and for tensors that would be IQ2_XXS,
// IQ2_XS, IQ2_S, IQ1_S or IQ1_M (IQ1_M: other than token_embd / output) without an imatrix.
std::vector<TensorPlan> plan_tensor_types(const ModelFile& f, const PlanOptions& options);

// The general.file_type to write.
uint32_t planned_file_type(const ModelFile& f, const PlanOptions& options);

}  // namespace strata::calib
