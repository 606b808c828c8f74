// AVX2 kernels for Q5_1 weights (d * q + m, 5-bit q) against Q8_1 activations; the tile is
// quant_tile_avx2.h's, this file only says how a block unpacks.
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(BlockQ5_1);
  static constexpr size_t kActBytes = sizeof(BlockQ8_1);
  static constexpr size_t kActD = offsetof(BlockQ8_1, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_1, qs);
  static constexpr size_t kActS = offsetof(BlockQ8_1, s);
  static constexpr bool kHasMin = true;
  static float d(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ5_1, d)); }
  static float m(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ5_1, m)); }
  static constexpr bool kSigned = false;
  // The block's 32 quants in element order.
  static __m256i weights(const uint8_t* blk) {
    const __m256i high =
        _mm256_and_si256(bits_to_bytes(load_u32(blk + offsetof(BlockQ5_1, qh))), _mm256_set1_epi8(16));
    return _mm256_or_si256(nibbles_to_bytes(blk + offsetof(BlockQ5_1, qs)), high);
  }
};

using Tile = QuantTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_1,   quantize_row_q8_1_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& q5_1_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
