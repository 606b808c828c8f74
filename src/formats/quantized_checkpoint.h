// GPTQ and AWQ checkpoints: Hugging Face directories whose config.json has a
// "quantization_config" (AutoGPTQ / GPTQModel: quant_method "gptq"; AutoAWQ: "awq"), where each
// quantized Linear `X` is stored as X.qweight / X.qzeros / X.scales (/ X.g_idx) instead of
// X.weight. Each one is turned into one GGUF matrix [n_out rows, n_in] on load.
//
// Packed layouts (int32 words, little-endian; `pack` = 32 / bits values per word, value k of a
// word in bits [k*bits, (k+1)*bits)):
//   GPTQ  qweight [n_in / pack, n_out]        packed along the input dimension
//         qzeros  [n_groups, n_out / pack]    packed along the output dimension
//         scales  [n_groups, n_out] F16
//         g_idx   [n_in] I32                  group of each input (optional without desc_act:
//                                             then input i is in group i / group_size)
//         checkpoint_format "gptq" (the default, AutoGPTQ's historical convention) stores
//         zero - 1; "gptq_v2" stores the zero itself. bits 4 or 8.
//   AWQ   qweight [n_in, n_out / 8]           packed along the output dimension, output
//                                             column 8c + j in value kAwqPosition[j] of word c
//         qzeros  [n_groups, n_out / 8]       same packing
//         scales  [n_groups, n_out] F16
//         version "gemm" only (GEMV and the exllama/marlin/ipex repackings are other layouts);
//         bits 4; group i / group_size.
// Value: w[o][i] = scale[g][o] * (q[o][i] - zero[g][o]) with g the group of input i.
//
// GGUF type of the result, chosen from the data (blocks of 32 inputs of one output row):
//   every block inside one group, 4-bit, all zeros 8   -> Q4_0: d = scale, q as stored. Exact.
//   every block inside one group, 4-bit, other zeros   -> Q4_1: d = scale, m = f16(-scale*zero).
//       Exact up to the f16 rounding of m (|error| <= |scale*zero| * 2^-11 per element); when
//       a value (so possibly m) would not fit F16, the F32 fallback below instead.
//   every block inside one group, 8-bit, all zeros 128 -> Q8_0: d = scale, q - 128. Exact.
//   otherwise (act-order g_idx whose groups are not runs of 32 inputs, 8-bit asymmetric, n_in
//       not a multiple of 32)                          -> F16 of the value (one rounding), or
//       F32 where a value does not fit F16.
// Q4_0/Q4_1/Q8_0 keep the checkpoint's size; the fallback is 4x (8-bit: 2x) larger.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/tensor_type.h"
#include "formats/safetensors.h"

namespace strata {

struct QuantizedCheckpointConfig {
  enum class Method { Gptq, Awq };
  Method method = Method::Gptq;
  int bits = 4;
  int64_t group_size = 128;            // -1: one group spans all inputs
  bool stored_zero_minus_one = false;  // GPTQ checkpoint_format "gptq": stored value = zero - 1
  bool desc_act = false;               // GPTQ act-order: g_idx is required
};

// The config.json's "quantization_config", or nullopt when there is none. Throws strata::Error
// naming the field and its value for a method or variant that is not supported.
std::optional<QuantizedCheckpointConfig> parse_quantization_config(const std::string& config_json,
                                                                   const std::string& name);

// The tensors of one quantized Linear; g_idx may be null.
struct PackedLinear {
  const SafetensorsTensor* qweight = nullptr;
  const SafetensorsTensor* qzeros = nullptr;
  const SafetensorsTensor* scales = nullptr;
  const SafetensorsTensor* g_idx = nullptr;
};

struct UnpackedLinear {
  TensorType type = TensorType::F32;
  int64_t n_in = 0, n_out = 0;  // the matrix is [n_out, n_in]: ne = {n_in, n_out}
  uint8_t* data = nullptr;      // n_out rows of row_bytes(type, n_in)
  size_t nbytes = 0;
};

// Validates the tensors against the config (dtypes, shapes, group size, g_idx range) and writes
// the matrix into a buffer from `alloc(nbytes)`. Throws strata::Error starting with `label`.
UnpackedLinear unpack_quantized_linear(const QuantizedCheckpointConfig& config, const PackedLinear& packed,
                                       const std::string& label,
                                       const std::function<uint8_t*(size_t)>& alloc);

}  // namespace strata
