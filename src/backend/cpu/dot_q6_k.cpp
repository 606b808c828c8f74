// Q6_K x Q8_K dot products, scalar reference: plain C++ following the block definition in
// quant/blocks.h element by element. It is the ground truth the AVX2 / AVX-512 kernels are
// tested against, and the kernel used when STRATA_ISA=scalar.
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/scalar_tile.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

// Element e (0..255): per 128-element half, ql holds 64 bytes and qh 32. Quarter g (32
// elements) of a half takes its low nibble from ql[32 * (g & 1) + l] (low nibble for g < 2,
// high for g >= 2) and its top 2 bits from bits 2g..2g+1 of qh[l]. Value in [-32, 31].
int quant_of(const BlockQ6_K& w, int e) {
  const int half = e / 128, g = (e % 128) / 32, l = e % 32;
  const uint8_t byte = w.ql[64 * half + 32 * (g & 1) + l];
  const int low = g < 2 ? (byte & 0xF) : (byte >> 4);
  const int high = (w.qh[32 * half + l] >> (2 * g)) & 3;
  return (low | (high << 4)) - 32;
}

// One super-block's contribution: w . a with both dequantized.
float block_dot(const BlockQ6_K& w, const BlockQ8_K& a) {
  // x = d * scales[s] * q, sub-block s = e / 16.
  int32_t sum_q = 0;
  for (int s = 0; s < kQK_K / 16; ++s) {
    int32_t dot = 0;
    for (int e = 16 * s; e < 16 * s + 16; ++e) dot += quant_of(w, e) * a.qs[e];
    sum_q += w.scales[s] * dot;
  }
  return a.d * (fp16_to_f32(w.d) * static_cast<float>(sum_q));
}

// w: [n / 256] Q6_K blocks, a: [n / 256] Q8_K blocks.
constexpr auto vec_dot = blockwise_vec_dot<BlockQ6_K, BlockQ8_K, kQK_K, block_dot>;

}  // namespace

const TypeKernels& q6_k_kernels_scalar() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_scalar,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = scalar_gemm_tile<vec_dot>,
                                       .tile_rows = 1,
                                       .tile_cols = 1};
  return kernels;
}

}  // namespace strata::cpu
