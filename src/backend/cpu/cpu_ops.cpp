// Baseline (scalar reference) build of the CPU op kernels, and the ISA dispatch.
#include "backend/cpu/cpu_ops_impl.h"

namespace strata::cpu {

const OpKernels& op_kernels_scalar() {
  return kOpKernels;
}

// The op kernels have no integer dot products, so the AVX-VNNI level runs the AVX2 build; on
// aarch64 the baseline build (NEON is part of armv8-a, the compiler vectorizes with it) serves
// every level.
const OpKernels& op_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return op_kernels_avx512();
    case IsaLevel::AvxVnni:
    case IsaLevel::Avx2:
      return op_kernels_avx2();
#endif
    default:
      break;
  }
  return op_kernels_scalar();
}

}  // namespace strata::cpu
