// AVX-512 (VNNI) kernels for MXFP4 weights (2^(e - 128) * kMxfp4Values[q]) against Q8_0 activations in
// the row layout; the tile is quant_tile_avx512.h's, this file only says how a block unpacks:
// a table lookup of the values biased by kZeroPoint, so that they are unsigned bytes for vpdpbusd.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx512.h"
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
  static constexpr int kZeroPoint = 12;
  // The block's 32 values + kZeroPoint in element order, as unsigned bytes.
  static __m256i weights_u8(const uint8_t* blk) {
    const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Values));
    const __m256i table = _mm256_broadcastsi128_si256(_mm_add_epi8(values, _mm_set1_epi8(kZeroPoint)));
    return _mm256_shuffle_epi8(table, nibbles_to_bytes(blk + offsetof(BlockMXFP4, qs)));
  }
};

using Tile = QuantTileAvx512<Ops>;
constexpr int kTileRows = 4, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_0,   quantize_row_q8_0_avx512,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& mxfp4_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
