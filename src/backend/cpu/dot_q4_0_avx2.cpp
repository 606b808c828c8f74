// AVX2 kernels for Q4_0 weights (d * (q - 8), 4-bit q) against Q8_0 activations; the tile is
// quant_tile_avx2.h's, this file only says how a block unpacks.
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(BlockQ4_0);
  static constexpr size_t kActBytes = sizeof(BlockQ8_0);
  static constexpr size_t kActD = offsetof(BlockQ8_0, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_0, qs);
  static constexpr bool kHasMin = false;
  static float d(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ4_0, d)); }
  static constexpr bool kSigned = true;
  // The block's 32 quants in element order, as signed values.
  static __m256i weights(const uint8_t* blk) {
    return _mm256_sub_epi8(nibbles_to_bytes(blk + offsetof(BlockQ4_0, qs)), _mm256_set1_epi8(8));
  }
};

using Tile = QuantTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_0,   quantize_row_q8_0_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& q4_0_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
