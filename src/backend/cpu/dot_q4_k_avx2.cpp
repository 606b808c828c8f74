// Q4_K x Q8_K dot products for AVX2 (+FMA, F16C).//
// Per super-block and 32-element chunk: the quants are widened to unsigned bytes in element
// order, vpmaddubsw multiplies them with the int8 activations into int16 pair sums and vpmaddwd
// with the sub-block scale into exact int32 sums. Once per super-block the sums are scaled by
// d_w * d_a in float; the min term -dmin * m * sum(a) comes from the activation's bsums.
// gemm_tile keeps R x C accumulators in registers so each unpacked weight
// chunk is used C times and each activation chunk R times.
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kquant_q4_k_avx2.h"

namespace strata::cpu {

namespace {

#include "backend/cpu/kquant_tile_avx2.inc"

}  // namespace

const TypeKernels& q4_k_kernels_avx2() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx2,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
