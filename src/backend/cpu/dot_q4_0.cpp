// Scalar reference kernels for Q4_0 weights against Q8_0 activations:
// sum over blocks of d_w * d_a * sum_j (q_j - 8) * a_j, integer inner sums as llama.cpp.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// w: [n / 32] BlockQ4_0, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_q4_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockQ4_0), y += sizeof(BlockQ8_0)) {
    const uint8_t* xq = x + offsetof(BlockQ4_0, qs);
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = (xq[j] & 0x0f) - 8;
      const int hi = (xq[j] >> 4) - 8;
      sumi += lo * yq[j] + hi * yq[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * load_half(x + offsetof(BlockQ4_0, d)) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_q4_0, scalar_gemm_tile<vec_dot_q4_0>, 1, 1};

}  // namespace

const TypeKernels& q4_0_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
