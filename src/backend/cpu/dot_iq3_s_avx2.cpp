// IQ3_S x Q8_K kernels for AVX2: iq_tile_avx2.h's tile over dot_iq3_s_simd.h's block decoding.
#include "backend/cpu/dot_iq3_s_simd.h"
#include "backend/cpu/iq_panel_avx2.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

using Tile = IqTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_K,
                               quantize_row_q8_k_avx2,
                               tile_vec_dot<Tile>,
                               dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,
                               kTileCols,
                               dispatch_panel<Ops, kTileRows, kTileCols>};

}  // namespace

const TypeKernels& iq3_s_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
