// AVX512 build of the CPU op kernels (same source as cpu_ops.cpp, vectorized for AVX512).
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/cpu_ops_impl.h"

namespace strata::cpu {

const OpKernels& op_kernels_avx512() {
  return kOpKernels;
}

}  // namespace strata::cpu
