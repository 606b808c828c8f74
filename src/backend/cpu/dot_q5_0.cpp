// Scalar reference kernels for Q5_0 weights against Q8_0 activations:
// sum over blocks of d_w * d_a * sum_j (q_j - 16) * a_j with 5-bit q (nibble + bit j of qh).
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// w: [n / 32] BlockQ5_0, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_q5_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockQ5_0), y += sizeof(BlockQ8_0)) {
    const uint8_t* xq = x + offsetof(BlockQ5_0, qs);
    const uint32_t qh = load_u32(x + offsetof(BlockQ5_0, qh));
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = static_cast<int>((xq[j] & 0x0fu) | (((qh >> j) & 1u) << 4)) - 16;
      const int hi = static_cast<int>((xq[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4)) - 16;
      sumi += lo * yq[j] + hi * yq[j + kQK / 2];
    }
    sum += static_cast<float>(sumi) * load_half(x + offsetof(BlockQ5_0, d)) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_q5_0, scalar_gemm_tile<vec_dot_q5_0>, 1, 1};

}  // namespace

const TypeKernels& q5_0_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
