// AVX2 kernels for Q4_1 weights (d * q + m, 4-bit q) against Q8_1 activations; the tile is
// quant_tile_avx2.h's, this file only says how a block unpacks.
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(BlockQ4_1);
  static constexpr size_t kActBytes = sizeof(BlockQ8_1);
  static constexpr size_t kActD = offsetof(BlockQ8_1, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_1, qs);
  static constexpr size_t kActS = offsetof(BlockQ8_1, s);
  static constexpr bool kHasMin = true;
  static float d(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ4_1, d)); }
  static float m(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ4_1, m)); }
  static constexpr bool kSigned = false;
  // The block's 32 quants in element order.
  static __m256i weights(const uint8_t* blk) { return nibbles_to_bytes(blk + offsetof(BlockQ4_1, qs)); }
};

using Tile = QuantTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_1,   quantize_row_q8_1_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& q4_1_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
