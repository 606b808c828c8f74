// IQ2_S x Q8_K kernels for AVX-512 (the 256-bit tile with AVX-512VL encodings and 32 registers, a taller
// tile): iq_tile_avx2.h's tile over dot_iq2_s_simd.h's block decoding. GCC 12's AVX-512 intrinsic headers
// trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/dot_iq2_s_simd.h"
#include "backend/cpu/iq_panel_avx2.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

using Tile = IqTileAvx2<Ops>;
constexpr int kTileRows = 3, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_K,
                               quantize_row_q8_k_avx512,
                               tile_vec_dot<Tile>,
                               dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,
                               kTileCols,
                               dispatch_panel<Ops, kTileRows, kTileCols>};

}  // namespace

const TypeKernels& iq2_s_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
