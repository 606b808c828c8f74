// Q3_K x Q8_K dot products, scalar reference: plain C++ following the block definition in
// quant/blocks.h element by element. It is the ground truth the AVX2 / AVX-512 kernels are
// tested against, and the kernel used when STRATA_ISA=scalar.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

// Element e (0..255): low 2 bits laid out as in Q2_K; the high bit of element
// 128 * half + 32 * j + l is bit 4 * half + j of hmask[l]. Value in [-4, 3] (hbit clear: -4).
int quant_of(const BlockQ3_K& w, int e) {
  const int half = e / 128, j = (e % 128) / 32, l = e % 32;
  const int low = (w.qs[32 * half + l] >> (2 * j)) & 3;
  const bool high = (w.hmask[l] >> (4 * half + j)) & 1;
  return high ? low : low - 4;
}

// One super-block's contribution: w . a with both dequantized.
float block_dot(const BlockQ3_K& w, const BlockQ8_K& a) {
  // x = d * scale[s] * q, sub-block s = e / 16, scale in [-32, 31].
  int8_t scales[16];
  unpack_q3_k_scales(w.scales, scales);
  int32_t sum_q = 0;
  for (int s = 0; s < kQK_K / 16; ++s) {
    int32_t dot = 0;
    for (int e = 16 * s; e < 16 * s + 16; ++e) dot += quant_of(w, e) * a.qs[e];
    sum_q += scales[s] * dot;
  }
  return a.d * (fp16_to_f32(w.d) * static_cast<float>(sum_q));
}

// w: [n / 256] Q3_K blocks, a: [n / 256] Q8_K blocks.
constexpr auto vec_dot = blockwise_vec_dot<BlockQ3_K, BlockQ8_K, kQK_K, block_dot>;

}  // namespace

const TypeKernels& q3_k_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
