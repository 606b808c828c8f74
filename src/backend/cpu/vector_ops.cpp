// Baseline (scalar reference) build of the element-wise kernels, and the ISA dispatch.
#include "backend/cpu/vector_ops_impl.h"

namespace strata::cpu {

const VectorKernels& vector_kernels_scalar() {
  return kVectorKernels;
}

const VectorKernels& vector_kernels(IsaLevel isa) {
  switch (isa) {
    case IsaLevel::Avx512:
      return vector_kernels_avx512();
    case IsaLevel::Avx2:
      return vector_kernels_avx2();
    case IsaLevel::Scalar:
      break;
  }
  return vector_kernels_scalar();
}

}  // namespace strata::cpu
