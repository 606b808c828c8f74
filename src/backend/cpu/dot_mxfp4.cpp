// Scalar reference kernels for MXFP4 weights against Q8_0 activations (as llama.cpp pairs them):
// sum over blocks of 2^(e - 128) * d_a * sum_j kMxfp4Values[q_j] * a_j, the inner sums in integers.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

// w: [n / 32] BlockMXFP4, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_mxfp4(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(BlockMXFP4), y += sizeof(BlockQ8_0)) {
    const uint8_t* xq = x + offsetof(BlockMXFP4, qs);
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j)
      sumi += kMxfp4Values[xq[j] & 0xF] * yq[j] + kMxfp4Values[xq[j] >> 4] * yq[j + kQK / 2];
    sum += static_cast<float>(sumi) * mxfp4_scale(x[offsetof(BlockMXFP4, e)]) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_mxfp4, scalar_gemm_tile<vec_dot_mxfp4>, 1, 1};

}  // namespace

const TypeKernels& mxfp4_kernels_scalar() {
  return kKernels;
}

}  // namespace strata::cpu
