// Scalar reference kernels for F32 weights against F32 activations.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

// Element i of a row at any address.
float element(const uint8_t* row, int64_t i) {
  float v;
  std::memcpy(&v, row + i * sizeof(float), sizeof v);
  return v;
}

// w, a: [n] f32. Accumulates in double (every product is exact there): the reference the SIMD
// versions are measured against.
float vec_dot_f32(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(element(x, i)) * static_cast<double>(element(y, i));
  return static_cast<float>(sum);
}

constexpr TypeKernels kKernels{
    TensorType::F32, quantize_row_f32, vec_dot_f32, scalar_gemm_tile<vec_dot_f32>, 1, 1};

}  // namespace

const TypeKernels& f32_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
