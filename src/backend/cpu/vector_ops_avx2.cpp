// AVX2 build of the element-wise kernels (same source as vector_ops.cpp, vectorized for AVX2).
#include "backend/cpu/vector_ops_impl.h"

namespace strata::cpu {

const VectorKernels& vector_kernels_avx2() {
  return kVectorKernels;
}

}  // namespace strata::cpu
