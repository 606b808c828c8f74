// AVX2 build of the CPU op kernels (same source as cpu_ops.cpp, vectorized for AVX2).
#include "backend/cpu/cpu_ops_impl.h"

namespace strata::cpu {

const OpKernels& op_kernels_avx2() { return kOpKernels; }

}  // namespace strata::cpu
