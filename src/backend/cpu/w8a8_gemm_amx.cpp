// AMX W8A8 kernel (w8a8_kernels.h). The group layout [kp / 4, 16, 4] is AMX's B operand: 16
// consecutive 64-byte rows of it are K = 64 for the group's 16 rows. The tokens' quants are the A
// operand (one row per token, the token stride apart). With one scale per output channel the
// whole row accumulates in the tile (two accumulator tiles over alternate K chunks, so that
// consecutive `tdpbsud` do not wait on each other); the epilogue is the AVX-512 kernel's:
// subtract the weights' bias (128 * sum(a)), multiply by a_scale * w_scale. Integer sums are
// exact, so every output is bit-identical to the scalar reference.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "backend/cpu/w8a8_kernels.h"
#include "core/amx_tiles.h"

namespace strata::cpu {
namespace {

constexpr int64_t kChunk = 64;  // K per tile product

// Tiles 0/1: C, int32 [nc, 16]; 2/3: A [nc, 64]; 4/5: B [16, 64]; 6/7: the K tail's A and B.
void configure_tiles(int nc, int64_t tail) {
  AmxTileConfig cfg;
  for (int t : {0, 1, 2, 3}) cfg.rows[t] = static_cast<uint8_t>(nc), cfg.colsb[t] = 64;
  for (int t : {4, 5}) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  if (tail > 0) {
    cfg.rows[6] = static_cast<uint8_t>(nc);
    cfg.colsb[6] = static_cast<uint16_t>(tail);
    cfg.rows[7] = static_cast<uint8_t>(tail / 4);
    cfg.colsb[7] = 64;
  }
  amx_configure(cfg);
}

}  // namespace

void w8a8_gemm_amx(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc, float* y,
                   size_t y_stride, int n_rows) {
  if (nc <= 0 || n_rows <= 0) return;
  const int64_t tail = kp % kChunk, full = kp - tail;
  configure_tiles(nc, tail);
  const int8_t* aq = a.qs;
  const size_t as = a.stride;
  _tile_zero(0);
  _tile_zero(1);
  int64_t k = 0;
  for (; k + 2 * kChunk <= full; k += 2 * kChunk) {
    _tile_loadd(2, aq + k, as);
    _tile_loadd(4, w + k * 16, 64);
    _tile_loadd(3, aq + k + kChunk, as);
    _tile_loadd(5, w + (k + kChunk) * 16, 64);
    _tile_dpbsud(0, 2, 4);
    _tile_dpbsud(1, 3, 5);
  }
  if (k < full) {
    _tile_loadd(2, aq + k, as);
    _tile_loadd(4, w + k * 16, 64);
    _tile_dpbsud(0, 2, 4);
    k += kChunk;
  }
  if (tail > 0) {
    _tile_loadd(6, aq + k, as);
    _tile_loadd(7, w + k * 16, 64);
    _tile_dpbsud(1, 6, 7);
  }
  alignas(64) int32_t s0[kW8A8Cols][16], s1[kW8A8Cols][16];
  _tile_stored(0, s0, 64);
  _tile_stored(1, s1, 64);
  const __m512 ws = _mm512_loadu_ps(w_scale);
  const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int c = 0; c < nc; ++c) {
    __m512i dot = _mm512_add_epi32(_mm512_load_si512(s0[c]), _mm512_load_si512(s1[c]));
    dot = _mm512_sub_epi32(dot, _mm512_set1_epi32(128 * a.sum[c]));
    const __m512 s = _mm512_mul_ps(_mm512_set1_ps(a.scale[c]), ws);
    _mm512_mask_storeu_ps(y + static_cast<size_t>(c) * y_stride, rows,
                          _mm512_mul_ps(_mm512_cvtepi32_ps(dot), s));
  }
}

}  // namespace strata::cpu
