// IQ4_XS x Q8_K kernels for AVX2 (vpmaddubsw / vpmaddwd, no VNNI): dot_iq4_xs_simd.h's pair tile.
#include "backend/cpu/dot_iq4_xs_simd.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

using Tile = Iq4XsTile;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_K,   quantize_row_q8_k_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& iq4_xs_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
