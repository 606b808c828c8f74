// TQ1_0 x Q8_K kernels for AVX-512 (the 256-bit tile with AVX-512VL encodings and 32 registers, a taller
// tile): iq_tile_avx2.h's tile over dot_tq1_0_simd.h's block decoding. GCC 12's AVX-512 intrinsic headers
// trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/dot_tq1_0_simd.h"
#include "backend/cpu/iq_type_kernels_x86.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {
namespace {

constexpr TypeKernels kKernels = iq_type_kernels<Ops, 3, 4, TernaryTile<Ops>>(quantize_row_q8_k_avx512);

}  // namespace

const TypeKernels& tq1_0_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
