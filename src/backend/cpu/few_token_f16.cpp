#include "backend/cpu/few_token_f16.h"

#include "backend/cpu/kernels.h"

namespace strata::cpu {

const FewTokenF16Kernels* few_token_f16_kernels(IsaLevel level) {
#if defined(__x86_64__)
  // The level the F16 tile itself runs at: the few-token kernel reproduces that tile's sums.
  switch (resolved_isa(TensorType::F16, level)) {
    case IsaLevel::Amx:  // the F16 tile of the AMX level is the AVX-512 one
    case IsaLevel::Avx512:
      return &few_token_f16_kernels_avx512();
    case IsaLevel::Avx2:
      return &few_token_f16_kernels_avx2();
    default:
      return nullptr;
  }
#elif defined(__aarch64__)
  // Every aarch64 level's F16 tile is the NEON one.
  switch (resolved_isa(TensorType::F16, level)) {
    case IsaLevel::Neon:
      return &few_token_f16_kernels_neon();
    default:
      return nullptr;
  }
#else
  (void)level;
  return nullptr;
#endif
}

}  // namespace strata::cpu
