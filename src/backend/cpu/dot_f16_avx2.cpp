// AVX2 kernels for F16 weights against F16 activations (F16C conversion, FMA); the tile is
// float_tile_avx2.h's.
#include "backend/cpu/block_access.h"
#include "backend/cpu/float_tile_avx2.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 2;
  static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float elem(const uint8_t* p, int64_t i) { return load_half(p + i * 2); }
};

using Tile = FloatTileAvx2<Ops>;
// Prefill tiles of 3 x 4: 12 accumulators, 3 converted weight vectors and one converted
// activation fill the 16 registers (whole-model pp128 / pp512 of the 1.1B shape on Zen 5: 75-84 /
// 75-81 t/s at 4 x 2, 85-89 / 85-93 at 3 x 4; float activations widened once and taken from
// memory by the FMA ran 75-82 / 79-85: they double the tile's L1 footprint). Decode streams 3
// rows side by side (tile_dispatch.h).
constexpr int kDecodeRows = 3, kTileRows = 3, kTileCols = 4;
constexpr TypeKernels kKernels{
    TensorType::F16,    quantize_row_f16_avx2,
    tile_vec_dot<Tile>, dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
    kTileRows,          kTileCols};

}  // namespace

const TypeKernels& f16_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
