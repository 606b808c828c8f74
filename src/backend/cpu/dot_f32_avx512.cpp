// AVX-512 kernels for F32 weights against F32 activations; the tile is
// float_tile_avx512.h's.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/float_tile_avx512.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

struct Ops {
  static constexpr int64_t kStep = 16;
  static constexpr size_t kElemBytes = 4;
  using Mask = __mmask16;
  using Vec = __m512;
  static Vec load(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static Vec load(const uint8_t* p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  static __m512 fma(__m512 acc, Vec w, Vec a) { return _mm512_fmadd_ps(w, a, acc); }
};

using Tile = FloatTileAvx512<Ops>;
// Prefill tiles of 4 x 6 (24 of the 32 zmm accumulate; pp128 of the 1.1B shape on Zen 5 100-106
// t/s at 4 x 4, 111-113 at 4 x 6); decode streams one row at a time (tile_dispatch.h).
constexpr int kDecodeRows = 1, kTileRows = 4, kTileCols = 6;
constexpr TypeKernels kKernels{
    TensorType::F32,    quantize_row_f32,
    tile_vec_dot<Tile>, dispatch_tile_wide_decode<Tile, kDecodeRows, kTileRows, kTileCols>,
    kTileRows,          kTileCols};

}  // namespace

const TypeKernels& f32_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
