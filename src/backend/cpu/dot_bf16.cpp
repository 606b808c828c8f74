// Scalar reference kernels for BF16 weights against BF16 activations.
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

constexpr auto vec_dot_bf16 = half_vec_dot<bf16_t, bf16_to_f32>;

constexpr TypeKernels kKernels{
    TensorType::BF16, quantize_row_bf16_scalar, vec_dot_bf16, scalar_gemm_tile<vec_dot_bf16>, 1, 1};

}  // namespace

const TypeKernels& bf16_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
