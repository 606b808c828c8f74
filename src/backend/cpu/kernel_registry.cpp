// The table of per-type kernels by ISA level (see kernels.h for the registration contract).
#include <array>

#include "backend/cpu/kernel_decls.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

using Getter = const TypeKernels& (*)();

struct Entry {
  TensorType type;
  std::array<Getter, 3> by_isa;  // indexed by IsaLevel: scalar, avx2, avx512 (nullptr: none)
};

// One line per weight type; nullptr for a level without kernels, which falls back to the best
// lower one.
const Entry kEntries[] = {
    {TensorType::F32, {f32_kernels_scalar, f32_kernels_avx2, f32_kernels_avx512}},
    {TensorType::F16, {f16_kernels_scalar, f16_kernels_avx2, f16_kernels_avx512}},
    {TensorType::BF16, {bf16_kernels_scalar, bf16_kernels_avx2, bf16_kernels_avx512}},
    {TensorType::Q4_0, {q4_0_kernels_scalar, q4_0_kernels_avx2, q4_0_kernels_avx512}},
    {TensorType::Q4_1, {q4_1_kernels_scalar, q4_1_kernels_avx2, q4_1_kernels_avx512}},
    {TensorType::Q5_0, {q5_0_kernels_scalar, q5_0_kernels_avx2, q5_0_kernels_avx512}},
    {TensorType::Q5_1, {q5_1_kernels_scalar, q5_1_kernels_avx2, q5_1_kernels_avx512}},
    {TensorType::Q8_0, {q8_0_kernels_scalar, q8_0_kernels_avx2, q8_0_kernels_avx512}},
    {TensorType::Q2_K, {q2_k_kernels_scalar, q2_k_kernels_avx2, q2_k_kernels_avx512}},
    {TensorType::Q3_K, {q3_k_kernels_scalar, q3_k_kernels_avx2, q3_k_kernels_avx512}},
    {TensorType::Q4_K, {q4_k_kernels_scalar, q4_k_kernels_avx2, q4_k_kernels_avx512}},
    {TensorType::Q5_K, {q5_k_kernels_scalar, q5_k_kernels_avx2, q5_k_kernels_avx512}},
    {TensorType::Q6_K, {q6_k_kernels_scalar, q6_k_kernels_avx2, q6_k_kernels_avx512}},
    {TensorType::IQ4_NL, {iq4_nl_kernels_scalar, iq4_nl_kernels_avx2, iq4_nl_kernels_avx512}},
    {TensorType::IQ4_XS, {iq4_xs_kernels_scalar, iq4_xs_kernels_avx2, iq4_xs_kernels_avx512}},
    {TensorType::MXFP4, {mxfp4_kernels_scalar, mxfp4_kernels_avx2, mxfp4_kernels_avx512}},
    {TensorType::TQ1_0, {tq1_0_kernels_scalar, tq1_0_kernels_avx2, tq1_0_kernels_avx512}},
    {TensorType::TQ2_0, {tq2_0_kernels_scalar, tq2_0_kernels_avx2, tq2_0_kernels_avx512}},
    {TensorType::IQ2_XXS, {iq2_xxs_kernels_scalar, iq2_xxs_kernels_avx2, iq2_xxs_kernels_avx512}},
    {TensorType::IQ2_XS, {iq2_xs_kernels_scalar, iq2_xs_kernels_avx2, iq2_xs_kernels_avx512}},
    {TensorType::IQ2_S, {iq2_s_kernels_scalar, iq2_s_kernels_avx2, iq2_s_kernels_avx512}},
    {TensorType::IQ3_XXS, {iq3_xxs_kernels_scalar, iq3_xxs_kernels_avx2, iq3_xxs_kernels_avx512}},
    {TensorType::IQ3_S, {iq3_s_kernels_scalar, iq3_s_kernels_avx2, iq3_s_kernels_avx512}},
    {TensorType::IQ1_S, {iq1_s_kernels_scalar, iq1_s_kernels_avx2, iq1_s_kernels_avx512}},
    {TensorType::IQ1_M, {iq1_m_kernels_scalar, iq1_m_kernels_avx2, iq1_m_kernels_avx512}},
};

const Entry* find_entry(TensorType type) {
  for (const Entry& e : kEntries)
    if (e.type == type) return &e;
  return nullptr;
}

// The level used for `type` when `isa` is asked for: never above what the CPU supports (a
// getter compiled for a wider ISA must not even be called), then down to the best listed one.
int resolve(const Entry& e, IsaLevel isa) {
  const IsaLevel best = max_supported_isa();
  int level = static_cast<int>(isa < best ? isa : best);
  while (level > 0 && e.by_isa[static_cast<size_t>(level)] == nullptr) --level;
  return level;
}

}  // namespace

bool has_type_kernels(TensorType weight_type) {
  const Entry* e = find_entry(weight_type);
  return e != nullptr && e->by_isa[0] != nullptr;
}

IsaLevel resolved_isa(TensorType weight_type, IsaLevel isa) {
  const Entry* e = find_entry(weight_type);
  STRATA_CHECK(e != nullptr, "no CPU kernels for type ", type_name(weight_type));
  return static_cast<IsaLevel>(resolve(*e, isa));
}

const TypeKernels& type_kernels(TensorType weight_type, IsaLevel isa) {
  const Entry* e = find_entry(weight_type);
  STRATA_CHECK(e != nullptr && e->by_isa[0] != nullptr, "no CPU kernels for type ", type_name(weight_type));
  return e->by_isa[static_cast<size_t>(resolve(*e, isa))]();
}

}  // namespace strata::cpu
