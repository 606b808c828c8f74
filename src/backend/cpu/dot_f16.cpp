// Scalar reference kernels for F16 weights against F16 activations (as llama.cpp: the
// activation row is rounded to half precision, products are formed in float).
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

constexpr auto vec_dot_f16 = half_vec_dot<fp16_t, fp16_to_f32>;

constexpr TypeKernels kKernels{
    TensorType::F16, quantize_row_f16_scalar, vec_dot_f16, scalar_gemm_tile<vec_dot_f16>, 1, 1};

}  // namespace

const TypeKernels& f16_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
