// AVX2 kernels for IQ4_NL keys against Q8_0 queries; the tile is quant_tile_avx2.h's, this file
// only says how a block unpacks: the nibbles index the 16-entry grid with one pshufb.
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kv_key_dot.h"
#include "backend/cpu/quant_tile_avx2.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(KvBlockIQ4NL);
  static constexpr size_t kActBytes = sizeof(BlockQ8_0);
  static constexpr size_t kActD = offsetof(BlockQ8_0, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_0, qs);
  static constexpr size_t kActS = 0;
  static constexpr bool kHasMin = false;
  static float d(const uint8_t* blk) { return load_half(blk + offsetof(KvBlockIQ4NL, d)); }
  static constexpr bool kSigned = true;
  // The block's 32 grid values in element order, as signed bytes.
  static __m256i weights(const uint8_t* blk) {
    const __m128i grid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kKvIQ4NLValues));
    return _mm256_shuffle_epi8(_mm256_set_m128i(grid, grid),
                               nibbles_to_bytes(blk + offsetof(KvBlockIQ4NL, qs)));
  }
};

using Tile = QuantTileAvx2<Ops>;
constexpr int kTileRows = 2, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_0,   quantize_row_q8_0_avx2,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& kv_iq4_nl_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
