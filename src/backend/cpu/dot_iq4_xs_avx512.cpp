// IQ4_XS x Q8_K kernels for AVX-512 (the 256-bit pair tile of dot_iq4_xs_simd.h with AVX-512VL encodings,
// vpdpwssd and 32 registers, a taller tile). GCC 12's AVX-512 intrinsic headers
// trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/dot_iq4_xs_simd.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

using Tile = Iq4XsTile;
constexpr int kTileRows = 3, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_K,   quantize_row_q8_k_avx512,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& iq4_xs_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
