// The scalar gemm_tile: the definition of a tile in terms of vec_dot, shared by the scalar
// reference kernels (dot_<type>.cpp). Internal linkage so that no ISA-specific translation unit
// can ever share a copy with these baseline ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::cpu {
namespace {

using VecDotFn = float (*)(int64_t n, const void* w, const void* a);

// out[c * out_stride + r] = Dot(n, w + r * w_stride, a + c * a_stride) for r < nr, c < nc.
template <VecDotFn Dot>
void scalar_gemm_tile(int64_t n, int nr, int nc, const void* w, size_t w_stride, const void* a,
                      size_t a_stride, float* out, size_t out_stride) {
  const auto* wb = static_cast<const uint8_t*>(w);
  const auto* ab = static_cast<const uint8_t*>(a);
  for (int c = 0; c < nc; ++c)
    for (int r = 0; r < nr; ++r) out[c * out_stride + r] = Dot(n, wb + r * w_stride, ab + c * a_stride);
}

// w, a: [n] 16-bit floats (F16 or BF16) at any address. Accumulates in double (every product is
// exact there): the reference the SIMD versions of the half-precision types are measured against.
template <class Half, float (*ToF32)(Half)>
float half_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    Half hx, hy;
    std::memcpy(&hx, x + i * sizeof(Half), sizeof hx);
    std::memcpy(&hy, y + i * sizeof(Half), sizeof hy);
    sum += static_cast<double>(ToF32(hx)) * static_cast<double>(ToF32(hy));
  }
  return static_cast<float>(sum);
}

// Sum over the n / QK block pairs of BlockDot(w block, a block): the vec_dot of the K-quant
// reference kernels. Blocks are copied out first, so rows may sit at any address.
template <class WBlock, class ABlock, int64_t QK, float (*BlockDot)(const WBlock&, const ABlock&)>
float blockwise_vec_dot(int64_t n, const void* w, const void* a) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / QK; ++i) {
    WBlock wb;
    ABlock ab;
    std::memcpy(&wb, wp + i * sizeof(wb), sizeof(wb));
    std::memcpy(&ab, ap + i * sizeof(ab), sizeof(ab));
    sum += BlockDot(wb, ab);
  }
  return sum;
}

}  // namespace
}  // namespace strata::cpu
