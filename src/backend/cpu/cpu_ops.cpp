// Baseline (scalar reference) build of the CPU op kernels, and the ISA dispatch.
#include "backend/cpu/cpu_ops_impl.h"

namespace strata::cpu {

const OpKernels& op_kernels_scalar() { return kOpKernels; }

const OpKernels& op_kernels(IsaLevel isa) {
  switch (isa) {
    case IsaLevel::Avx512: return op_kernels_avx512();
    case IsaLevel::Avx2: return op_kernels_avx2();
    case IsaLevel::Scalar: break;
  }
  return op_kernels_scalar();
}

}  // namespace strata::cpu
