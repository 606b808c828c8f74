// Scalar reference kernels for Q4_1 weights against Q8_1 activations:
// sum over blocks of d_w * d_a * sum_j q_j * a_j + m_w * s_a, where s_a = d_a * sum_j a_j.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// w: [n / 32] BlockQ4_1, a: [n / 32] BlockQ8_1, at any address.
float vec_dot_q4_1(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockQ4_1), y += sizeof(BlockQ8_1)) {
    const uint8_t* xq = x + offsetof(BlockQ4_1, qs);
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_1, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) sumi += (xq[j] & 0x0f) * yq[j] + (xq[j] >> 4) * yq[j + kQK / 2];
    sum += load_half(x + offsetof(BlockQ4_1, d)) * load_half(y + offsetof(BlockQ8_1, d)) *
               static_cast<float>(sumi) +
           load_half(x + offsetof(BlockQ4_1, m)) * load_half(y + offsetof(BlockQ8_1, s));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_1, quantize_row_q8_1_scalar, vec_dot_q4_1, scalar_gemm_tile<vec_dot_q4_1>, 1, 1};

}  // namespace

const TypeKernels& q4_1_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
