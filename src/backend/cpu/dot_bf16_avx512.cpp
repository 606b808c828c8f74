// AVX-512 kernels for BF16 weights against BF16 activations (vdpbf16ps: 32 products per instruction); the
// tile is float_tile_avx512.h's. GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own
// _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/float_tile_avx512.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr int64_t kStep = 32;
  static constexpr size_t kElemBytes = 2;
  using Mask = __mmask32;
  using Vec = __m512i;
  static Vec load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static Vec load(const uint8_t* p, Mask m) { return _mm512_maskz_loadu_epi16(m, p); }
  static __m512 fma(__m512 acc, Vec w, Vec a) { return _mm512_dpbf16_ps(acc, (__m512bh)w, (__m512bh)a); }
};

using Tile = FloatTileAvx512<Ops>;
// Prefill tiles of 4 x 6 (24 of the 32 zmm accumulate; pp128 of the 1.1B shape on Zen 5 231-236
// t/s at 4 x 4, 247-253 at 4 x 6, alternating); decode streams one row at a time (tile_dispatch.h).
constexpr int kDecodeRows = 1, kTileRows = 4, kTileCols = 6;
constexpr TypeKernels kKernels{
    TensorType::BF16,   quantize_row_bf16_avx512,
    tile_vec_dot<Tile>, dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
    kTileRows,          kTileCols};

}  // namespace

const TypeKernels& bf16_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
