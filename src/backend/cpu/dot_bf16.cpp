// Scalar reference kernels for BF16 weights against BF16 activations.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

// Element i of a row at any address.
float element(const uint8_t* row, int64_t i) {
  bf16_t h;
  std::memcpy(&h, row + i * sizeof(bf16_t), sizeof h);
  return bf16_to_f32(h);
}

// w, a: [n] bf16. Accumulates in double (every product is exact there): the reference the SIMD
// versions are measured against.
float vec_dot_bf16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(element(x, i)) * static_cast<double>(element(y, i));
  return static_cast<float>(sum);
}

constexpr TypeKernels kKernels{
    TensorType::BF16, quantize_row_bf16_scalar, vec_dot_bf16, scalar_gemm_tile<vec_dot_bf16>, 1, 1};

}  // namespace

const TypeKernels& bf16_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
