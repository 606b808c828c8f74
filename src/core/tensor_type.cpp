#include "core/tensor_type.h"

#include <array>
#include <cctype>

#include "core/check.h"

namespace strata {
namespace {

struct Entry {
  TensorType type;
  TypeTraits traits;
};

// Block sizes and byte counts follow the GGUF block layouts (see quant/blocks.h).
constexpr std::array<Entry, 27> kTypes = {{
    {TensorType::F32, {"f32", 1, 4, false}},           {TensorType::F16, {"f16", 1, 2, false}},
    {TensorType::BF16, {"bf16", 1, 2, false}},         {TensorType::Q4_0, {"q4_0", 32, 18, true}},
    {TensorType::Q4_1, {"q4_1", 32, 20, true}},        {TensorType::Q5_0, {"q5_0", 32, 22, true}},
    {TensorType::Q5_1, {"q5_1", 32, 24, true}},        {TensorType::Q8_0, {"q8_0", 32, 34, true}},
    {TensorType::Q8_1, {"q8_1", 32, 36, true}},        {TensorType::Q2_K, {"q2_K", 256, 84, true}},
    {TensorType::Q3_K, {"q3_K", 256, 110, true}},      {TensorType::Q4_K, {"q4_K", 256, 144, true}},
    {TensorType::Q5_K, {"q5_K", 256, 176, true}},      {TensorType::Q6_K, {"q6_K", 256, 210, true}},
    {TensorType::Q8_K, {"q8_K", 256, 292, true}},      {TensorType::IQ2_XXS, {"iq2_xxs", 256, 66, true}},
    {TensorType::IQ2_XS, {"iq2_xs", 256, 74, true}},   {TensorType::IQ2_S, {"iq2_s", 256, 82, true}},
    {TensorType::IQ3_XXS, {"iq3_xxs", 256, 98, true}}, {TensorType::IQ3_S, {"iq3_s", 256, 110, true}},
    {TensorType::IQ1_S, {"iq1_s", 256, 50, true}},     {TensorType::IQ1_M, {"iq1_m", 256, 56, true}},
    {TensorType::IQ4_NL, {"iq4_nl", 32, 18, true}},    {TensorType::IQ4_XS, {"iq4_xs", 256, 136, true}},
    {TensorType::TQ1_0, {"tq1_0", 256, 54, true}},     {TensorType::TQ2_0, {"tq2_0", 256, 66, true}},
    {TensorType::MXFP4, {"mxfp4", 32, 17, true}},
}};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

}  // namespace

std::optional<TensorType> tensor_type_from_id(uint32_t id) {
  for (const auto& e : kTypes)
    if (static_cast<uint32_t>(e.type) == id) return e.type;
  return std::nullopt;
}

const TypeTraits& type_traits(TensorType type) {
  for (const auto& e : kTypes)
    if (e.type == type) return e.traits;
  STRATA_CHECK(false, "unknown tensor type id ", static_cast<uint32_t>(type));
}

std::optional<TensorType> tensor_type_from_name(std::string_view name) {
  for (const auto& e : kTypes)
    if (iequals(e.traits.name, name)) return e.type;
  return std::nullopt;
}

size_t row_bytes(TensorType type, int64_t n) {
  const TypeTraits& t = type_traits(type);
  STRATA_CHECK(n >= 0 && n % t.block_size == 0, "row of ", n, " elements is not a whole number of ", t.name,
               " blocks");
  return static_cast<size_t>(n / t.block_size) * t.block_bytes;
}

double bits_per_weight(TensorType type) {
  const TypeTraits& t = type_traits(type);
  return 8.0 * static_cast<double>(t.block_bytes) / static_cast<double>(t.block_size);
}

bool is_storage_type(TensorType type) {
  return type != TensorType::Q8_1 && type != TensorType::Q8_K;
}

}  // namespace strata
