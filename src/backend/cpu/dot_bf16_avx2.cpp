// AVX2 kernels for BF16 weights against BF16 activations (widened to float, FMA); the tile is
// float_tile_avx2.h's.
#include <cstring>

#include "backend/cpu/float_tile_avx2.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kElemBytes = 2;
  static __m256 load8(const uint8_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float elem(const uint8_t* p, int64_t i) {
    bf16_t h;
    std::memcpy(&h, p + i * 2, 2);
    return bf16_to_f32(h);
  }
};

using Tile = FloatTileAvx2<Ops>;
// Prefill tiles of 3 x 4 (12 accumulators, 3 weight vectors, one widened activation: the 16
// registers; pp128 of the 1.1B shape on Zen 5 59-60 t/s at 4 x 2, 66-73 at 3 x 4); decode streams
// 3 rows side by side (tile_dispatch.h).
constexpr int kDecodeRows = 3, kTileRows = 3, kTileCols = 4;
constexpr TypeKernels kKernels{
    TensorType::BF16,   quantize_row_bf16_avx2,
    tile_vec_dot<Tile>, dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
    kTileRows,          kTileCols};

}  // namespace

const TypeKernels& bf16_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
