// Scalar reference kernels for IQ4_NL weights against Q8_0 activations:
// sum over blocks of d_w * d_a * sum_j kIq4nlValues[q_j] * a_j, the inner sums in integers.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

// w: [n / 32] BlockIQ4_NL, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockIQ4_NL), y += sizeof(BlockQ8_0)) {
    const uint8_t* xq = x + offsetof(BlockIQ4_NL, qs);
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j)
      sumi += kIq4nlValues[xq[j] & 0xF] * yq[j] + kIq4nlValues[xq[j] >> 4] * yq[j + kQK / 2];
    sum += static_cast<float>(sumi) * load_half(x + offsetof(BlockIQ4_NL, d)) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_iq4_nl, scalar_gemm_tile<vec_dot_iq4_nl>, 1, 1};

}  // namespace

const TypeKernels& iq4_nl_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
