// AVX-512 (VNNI) kernels for Q5_0 weights (d * (q - 16), 5-bit q) against Q8_0 activations in
// the row layout; the tile is quant_tile_avx512.h's, this file only says how a block unpacks.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <cstddef>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/quant_tile_avx512.h"
#include "backend/cpu/tile_dispatch.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr size_t kWeightBytes = sizeof(BlockQ5_0);
  static constexpr size_t kActBytes = sizeof(BlockQ8_0);
  static constexpr size_t kActD = offsetof(BlockQ8_0, d);
  static constexpr size_t kActQs = offsetof(BlockQ8_0, qs);
  static constexpr bool kHasMin = false;
  static float d(const uint8_t* blk) { return load_half(blk + offsetof(BlockQ5_0, d)); }
  static constexpr int kZeroPoint = 16;
  // The block's 32 quants in element order as unsigned bytes (value = d * (u - kZeroPoint)).
  static __m256i weights_u8(const uint8_t* blk) {
    const __m256i nib = nibbles_to_bytes(blk + offsetof(BlockQ5_0, qs));
    return _mm256_mask_add_epi8(nib, _cvtu32_mask32(load_u32(blk + offsetof(BlockQ5_0, qh))), nib,
                                _mm256_set1_epi8(16));
  }
};

using Tile = QuantTileAvx512<Ops>;
constexpr int kTileRows = 4, kTileCols = 4;
constexpr TypeKernels kKernels{TensorType::Q8_0,   quantize_row_q8_0_avx512,
                               tile_vec_dot<Tile>, dispatch_tile<Tile, kTileRows, kTileCols>,
                               kTileRows,          kTileCols};

}  // namespace

const TypeKernels& q5_0_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
