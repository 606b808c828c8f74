// AVX2 kernels for F32 weights against F32 activations; the tile is float_tile_avx2.h's.
#include "backend/cpu/block_access.h"
#include "backend/cpu/float_tile_avx2.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 4;
  static __m256 load8(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float elem(const uint8_t* p, int64_t i) { return load_f32(p + i * 4); }
};

using Tile = FloatTileAvx2<Ops>;
// Prefill tiles of 3 x 4 (12 accumulators, 3 weight vectors, one activation: the 16 registers;
// pp128 of the 1.1B shape on Zen 5 60-62 t/s at 4 x 2, 79-80 at 3 x 4); decode streams 3 rows
// side by side (tile_dispatch.h).
constexpr int kDecodeRows = 3, kTileRows = 3, kTileCols = 4;
constexpr TypeKernels kKernels{
    TensorType::F32,    quantize_row_f32,
    tile_vec_dot<Tile>, dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
    kTileRows,          kTileCols};

}  // namespace

const TypeKernels& f32_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
