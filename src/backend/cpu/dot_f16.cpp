// Scalar reference kernels for F16 weights against F16 activations (as llama.cpp: the
// activation row is rounded to half precision, products are formed in float).
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

// Element i of a row at any address.
float element(const uint8_t* row, int64_t i) {
  fp16_t h;
  std::memcpy(&h, row + i * sizeof(fp16_t), sizeof h);
  return fp16_to_f32(h);
}

// w, a: [n] f16. Accumulates in double (every product is exact there): the reference the SIMD
// versions are measured against.
float vec_dot_f16(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(element(x, i)) * static_cast<double>(element(y, i));
  return static_cast<float>(sum);
}

constexpr TypeKernels kKernels{
    TensorType::F16, quantize_row_f16_scalar, vec_dot_f16, scalar_gemm_tile<vec_dot_f16>, 1, 1};

}  // namespace

const TypeKernels& f16_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
