// The table of per-type kernels by ISA level (see kernels.h for the registration contract).
#include "backend/cpu/kernel_decls.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

using Getter = const TypeKernels& (*)();

// Getters of the other architecture's kernel files are not compiled (cmake/StrataLayer.cmake):
// their entries are nullptr there.
#if defined(__x86_64__)
#define X86(getter) getter
#define ARM(getter) nullptr
#elif defined(__aarch64__)
#define X86(getter) nullptr
#define ARM(getter) getter
#else
#define X86(getter) nullptr
#define ARM(getter) nullptr
#endif

// The getters of one weight type by level (nullptr: none at that level).
struct Levels {
  Getter scalar = nullptr, avx2 = nullptr, avxvnni = nullptr, avx512 = nullptr;
  Getter neon = nullptr, dotprod = nullptr, i8mm = nullptr;
  Getter at(IsaLevel l) const {
    switch (l) {
      case IsaLevel::Scalar:
        return scalar;
      case IsaLevel::Avx2:
        return avx2;
      case IsaLevel::AvxVnni:
        return avxvnni;
      case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
      case IsaLevel::Avx512:
        return avx512;
      case IsaLevel::Neon:
        return neon;
      case IsaLevel::NeonDotprod:
        return dotprod;
      case IsaLevel::NeonI8mm:
        return i8mm;
    }
    return nullptr;
  }
};

struct Entry {
  TensorType type;
  Levels by_isa;
};

// One line per weight type. A missing level falls back along the ISA chain (cpu_features.h).
const Entry kEntries[] = {
    {TensorType::F32,
     {.scalar = f32_kernels_scalar,
      .avx2 = X86(f32_kernels_avx2),
      .avx512 = X86(f32_kernels_avx512),
      .neon = ARM(f32_kernels_neon)}},
    {TensorType::F16,
     {.scalar = f16_kernels_scalar,
      .avx2 = X86(f16_kernels_avx2),
      .avx512 = X86(f16_kernels_avx512),
      .neon = ARM(f16_kernels_neon)}},
    {TensorType::BF16,
     {.scalar = bf16_kernels_scalar,
      .avx2 = X86(bf16_kernels_avx2),
      .avx512 = X86(bf16_kernels_avx512),
      .neon = ARM(bf16_kernels_neon)}},
    {TensorType::Q4_0,
     {.scalar = q4_0_kernels_scalar, .avx2 = X86(q4_0_kernels_avx2), .avx512 = X86(q4_0_kernels_avx512)}},
    {TensorType::Q4_1,
     {.scalar = q4_1_kernels_scalar, .avx2 = X86(q4_1_kernels_avx2), .avx512 = X86(q4_1_kernels_avx512)}},
    {TensorType::Q5_0,
     {.scalar = q5_0_kernels_scalar, .avx2 = X86(q5_0_kernels_avx2), .avx512 = X86(q5_0_kernels_avx512)}},
    {TensorType::Q5_1,
     {.scalar = q5_1_kernels_scalar, .avx2 = X86(q5_1_kernels_avx2), .avx512 = X86(q5_1_kernels_avx512)}},
    {TensorType::Q8_0,
     {.scalar = q8_0_kernels_scalar, .avx2 = X86(q8_0_kernels_avx2), .avx512 = X86(q8_0_kernels_avx512)}},
    {TensorType::Q2_K,
     {.scalar = q2_k_kernels_scalar, .avx2 = X86(q2_k_kernels_avx2), .avx512 = X86(q2_k_kernels_avx512)}},
    {TensorType::Q3_K,
     {.scalar = q3_k_kernels_scalar, .avx2 = X86(q3_k_kernels_avx2), .avx512 = X86(q3_k_kernels_avx512)}},
    {TensorType::Q4_K,
     {.scalar = q4_k_kernels_scalar,
      .avx2 = X86(q4_k_kernels_avx2),
      .avxvnni = X86(q4_k_kernels_avxvnni),
      .avx512 = X86(q4_k_kernels_avx512)}},
    {TensorType::Q5_K,
     {.scalar = q5_k_kernels_scalar,
      .avx2 = X86(q5_k_kernels_avx2),
      .avxvnni = X86(q5_k_kernels_avxvnni),
      .avx512 = X86(q5_k_kernels_avx512)}},
    {TensorType::Q6_K,
     {.scalar = q6_k_kernels_scalar,
      .avx2 = X86(q6_k_kernels_avx2),
      .avxvnni = X86(q6_k_kernels_avxvnni),
      .avx512 = X86(q6_k_kernels_avx512)}},
    {TensorType::IQ4_NL,
     {.scalar = iq4_nl_kernels_scalar,
      .avx2 = X86(iq4_nl_kernels_avx2),
      .avx512 = X86(iq4_nl_kernels_avx512)}},
    {TensorType::IQ4_XS,
     {.scalar = iq4_xs_kernels_scalar,
      .avx2 = X86(iq4_xs_kernels_avx2),
      .avxvnni = X86(iq4_xs_kernels_avxvnni),
      .avx512 = X86(iq4_xs_kernels_avx512)}},
    {TensorType::MXFP4,
     {.scalar = mxfp4_kernels_scalar, .avx2 = X86(mxfp4_kernels_avx2), .avx512 = X86(mxfp4_kernels_avx512)}},
    {TensorType::TQ1_0,
     {.scalar = tq1_0_kernels_scalar,
      .avx2 = X86(tq1_0_kernels_avx2),
      .avx512 = X86(tq1_0_kernels_avx512),
      .neon = ARM(tq1_0_kernels_neon),
      .dotprod = ARM(tq1_0_kernels_dotprod)}},
    {TensorType::TQ2_0,
     {.scalar = tq2_0_kernels_scalar,
      .avx2 = X86(tq2_0_kernels_avx2),
      .avx512 = X86(tq2_0_kernels_avx512),
      .neon = ARM(tq2_0_kernels_neon),
      .dotprod = ARM(tq2_0_kernels_dotprod)}},
    {TensorType::IQ2_XXS,
     {.scalar = iq2_xxs_kernels_scalar,
      .avx2 = X86(iq2_xxs_kernels_avx2),
      .avx512 = X86(iq2_xxs_kernels_avx512),
      .neon = ARM(iq2_xxs_kernels_neon),
      .dotprod = ARM(iq2_xxs_kernels_dotprod)}},
    {TensorType::IQ2_XS,
     {.scalar = iq2_xs_kernels_scalar,
      .avx2 = X86(iq2_xs_kernels_avx2),
      .avx512 = X86(iq2_xs_kernels_avx512),
      .neon = ARM(iq2_xs_kernels_neon),
      .dotprod = ARM(iq2_xs_kernels_dotprod)}},
    {TensorType::IQ2_S,
     {.scalar = iq2_s_kernels_scalar,
      .avx2 = X86(iq2_s_kernels_avx2),
      .avx512 = X86(iq2_s_kernels_avx512),
      .neon = ARM(iq2_s_kernels_neon),
      .dotprod = ARM(iq2_s_kernels_dotprod)}},
    {TensorType::IQ3_XXS,
     {.scalar = iq3_xxs_kernels_scalar,
      .avx2 = X86(iq3_xxs_kernels_avx2),
      .avx512 = X86(iq3_xxs_kernels_avx512),
      .neon = ARM(iq3_xxs_kernels_neon),
      .dotprod = ARM(iq3_xxs_kernels_dotprod)}},
    {TensorType::IQ3_S,
     {.scalar = iq3_s_kernels_scalar,
      .avx2 = X86(iq3_s_kernels_avx2),
      .avx512 = X86(iq3_s_kernels_avx512),
      .neon = ARM(iq3_s_kernels_neon),
      .dotprod = ARM(iq3_s_kernels_dotprod)}},
    {TensorType::IQ1_S,
     {.scalar = iq1_s_kernels_scalar,
      .avx2 = X86(iq1_s_kernels_avx2),
      .avx512 = X86(iq1_s_kernels_avx512),
      .neon = ARM(iq1_s_kernels_neon),
      .dotprod = ARM(iq1_s_kernels_dotprod)}},
    {TensorType::IQ1_M,
     {.scalar = iq1_m_kernels_scalar,
      .avx2 = X86(iq1_m_kernels_avx2),
      .avx512 = X86(iq1_m_kernels_avx512),
      .neon = ARM(iq1_m_kernels_neon),
      .dotprod = ARM(iq1_m_kernels_dotprod)}},
};

const Entry* find_entry(TensorType type) {
  for (const Entry& e : kEntries)
    if (e.type == type) return &e;
  return nullptr;
}

// The level used for `type` when `isa` is asked for: never one the CPU lacks (a getter compiled
// for a wider ISA must not even be called), then down the chain to the first listed one.
IsaLevel resolve(const Entry& e, IsaLevel isa) {
  IsaLevel level = clamp_isa(isa);
  while (level != IsaLevel::Scalar && (e.by_isa.at(level) == nullptr || !isa_supported(level)))
    level = isa_fallback(level);
  return level;
}

}  // namespace

bool has_type_kernels(TensorType weight_type) {
  const Entry* e = find_entry(weight_type);
  return e != nullptr && e->by_isa.scalar != nullptr;
}

IsaLevel resolved_isa(TensorType weight_type, IsaLevel isa) {
  const Entry* e = find_entry(weight_type);
  STRATA_CHECK(e != nullptr, "no CPU kernels for type ", type_name(weight_type));
  return resolve(*e, isa);
}

const TypeKernels& type_kernels(TensorType weight_type, IsaLevel isa) {
  const Entry* e = find_entry(weight_type);
  STRATA_CHECK(e != nullptr && e->by_isa.scalar != nullptr, "no CPU kernels for type ",
               type_name(weight_type));
  return e->by_isa.at(resolve(*e, isa))();
}

}  // namespace strata::cpu
