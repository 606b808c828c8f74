// Scalar reference kernels for Q8_0 weights against Q8_0 activations:
// sum over blocks of d_w * d_a * sum_j q_j * a_j.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// w, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockQ8_0), y += sizeof(BlockQ8_0)) {
    const auto* xq = reinterpret_cast<const int8_t*>(x + offsetof(BlockQ8_0, qs));
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK; ++j) sumi += xq[j] * yq[j];
    sum += static_cast<float>(sumi) * load_half(x + offsetof(BlockQ8_0, d)) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_q8_0, scalar_gemm_tile<vec_dot_q8_0>, 1, 1};

}  // namespace

const TypeKernels& q8_0_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
