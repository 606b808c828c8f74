// Baseline (scalar reference) build of the element-wise kernels, and the ISA dispatch.
#include "backend/cpu/vector_ops_impl.h"

namespace strata::cpu {

const VectorKernels& vector_kernels_scalar() {
  return kVectorKernels;
}

const VectorKernels& vector_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)  // the x86 kernels are not built on aarch64
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return vector_kernels_avx512();
    case IsaLevel::AvxVnni:  // AVX-VNNI CPUs run the AVX2 kernels here
    case IsaLevel::Avx2:
      return vector_kernels_avx2();
#endif
    case IsaLevel::Scalar:
    default:  // the scalar reference (aarch64 levels included)
      break;
  }
  return vector_kernels_scalar();
}

}  // namespace strata::cpu
