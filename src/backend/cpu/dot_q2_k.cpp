// Q2_K x Q8_K dot products, scalar reference: plain C++ following the block definition in
// quant/blocks.h element by element. It is the ground truth the AVX2 / AVX-512 kernels are
// tested against, and the kernel used when STRATA_ISA=scalar.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

// Element e (0..255): 128-element halves each use 32 bytes of qs; within a half, element
// 32 * j + l sits in bits 2j..2j+1 of byte l. Value in [0, 3].
int quant_of(const BlockQ2_K& w, int e) {
  const int half = e / 128, j = (e % 128) / 32, l = e % 32;
  return (w.qs[32 * half + l] >> (2 * j)) & 3;
}

// One super-block's contribution: w . a with both dequantized.
float block_dot(const BlockQ2_K& w, const BlockQ8_K& a) {
  // x = d * (scales[s] & 0xF) * q - dmin * (scales[s] >> 4), sub-block s = e / 16.
  int32_t sum_q = 0;  // sum over sub-blocks of scale * (q . a_q)
  int32_t sum_m = 0;  // sum over sub-blocks of min * (sum of a_q)
  for (int s = 0; s < kQK_K / 16; ++s) {
    int32_t dot = 0, asum = 0;
    for (int e = 16 * s; e < 16 * s + 16; ++e) {
      dot += quant_of(w, e) * a.qs[e];
      asum += a.qs[e];
    }
    sum_q += (w.scales[s] & 0xF) * dot;
    sum_m += (w.scales[s] >> 4) * asum;
  }
  return a.d *
         (fp16_to_f32(w.d) * static_cast<float>(sum_q) - fp16_to_f32(w.dmin) * static_cast<float>(sum_m));
}

// w: [n / 256] Q2_K blocks, a: [n / 256] Q8_K blocks.
constexpr auto vec_dot = blockwise_vec_dot<BlockQ2_K, BlockQ8_K, kQK_K, block_dot>;

}  // namespace

const TypeKernels& q2_k_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
