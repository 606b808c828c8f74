// AVX2 kernels for MXFP4 weights (2^(e - 128) * kMxfp4Values[q]) against Q8_0 activations; the tile is
// quant_tile_avx2.h's, this file only says how a block unpacks (a 16-entry table lookup).
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(BlockMXFP4);
  static constexpr size_t kActBytes = sizeof(BlockQ8_0);
  static constexpr size_t kActD = offsetof(BlockQ8_0, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_0, qs);
  static constexpr bool kHasMin = false;
  static float d(const uint8_t* blk) { return mxfp4_scale(blk[offsetof(BlockMXFP4, e)]); }
  static constexpr bool kSigned = true;
  // The block's 32 values in element order, as int8 (|v| <= 127).
  static __m256i weights(const uint8_t* blk) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values)));
    return _mm256_shuffle_epi8(table, nibbles_to_bytes(blk + offsetof(BlockMXFP4, qs)));
  }
};

using Tile = QuantTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_0,   quantize_row_q8_0_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& mxfp4_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
