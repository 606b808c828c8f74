// Element types of tensors, numbered exactly as in GGUF (ggml_type), with their block geometry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class TensorType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,  // activation-only format (not stored in model files by Strata)
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,  // activation-only format for the K-quant dot products
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct TypeTraits {
  std::string_view name;  // GGUF spelling, e.g. "q4_K"
  int64_t block_size;     // elements per block (1 for float types)
  size_t block_bytes;     // bytes per block
  bool quantized;
};

// Traits of a type Strata supports; nullopt for any other ggml type id (I8, F64, removed types, ...).
std::optional<TensorType> tensor_type_from_id(uint32_t id);
const TypeTraits& type_traits(TensorType type);
inline std::string_view type_name(TensorType type) {
  return type_traits(type).name;
}
// Case-insensitive parse of "q4_0", "Q4_K", "f16", "bf16"...; nullopt if unknown.
std::optional<TensorType> tensor_type_from_name(std::string_view name);
// Bytes of a row of n elements; n must be a multiple of block_size (checked).
size_t row_bytes(TensorType type, int64_t n);
// Bits per weight including scales (e.g. 4.5 for Q4_0).
double bits_per_weight(TensorType type);
// True for types that may appear in a model file Strata reads or writes.
bool is_storage_type(TensorType type);

}  // namespace strata
