// AMX-INT8 peak loop (compute_peak_kernels.h): kAmxChains independent accumulator tiles, each
// taking one `tdpbusd` per round from the same A and B tiles (no loads in the loop). The tile
// configuration goes through amx_configure (amx_tiles.h), the thread's one record of what is
// loaded, so the kernels that run after the probe on this thread reload theirs.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "core/amx_tiles.h"
#include "core/compute_peak_kernels.h"

namespace strata::peak {

static_assert(kAmxChains == 6, "the loop below names tiles 0..5 (C), 6 (A) and 7 (B)");

int64_t int8_chains_amx(int64_t iters) {
  cpu::AmxTileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;  // every tile 16 x 64 bytes
  cpu::amx_configure(cfg);
  alignas(64) uint8_t a[16 * 64];
  alignas(64) int8_t b[16 * 64];
  std::memset(a, 3, sizeof a);
  std::memset(b, 5, sizeof b);
  _tile_loadd(6, a, 64);
  _tile_loadd(7, b, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (int64_t it = 0; it < iters; ++it) {
    // tdpbusd: u8 (A) x s8 (B), as vpdpbusd. One round is kPeakChains = 2 * kAmxChains products.
    _tile_dpbusd(0, 6, 7);
    _tile_dpbusd(1, 6, 7);
    _tile_dpbusd(2, 6, 7);
    _tile_dpbusd(3, 6, 7);
    _tile_dpbusd(4, 6, 7);
    _tile_dpbusd(5, 6, 7);
    _tile_dpbusd(0, 6, 7);
    _tile_dpbusd(1, 6, 7);
    _tile_dpbusd(2, 6, 7);
    _tile_dpbusd(3, 6, 7);
    _tile_dpbusd(4, 6, 7);
    _tile_dpbusd(5, 6, 7);
  }
  // Element [0][0] of every accumulator, summed as unsigned (the sums wrap for long runs; only
  // their dependence on the loop matters).
  alignas(64) int32_t c[16 * 16];
  uint32_t total = 0;
#define STRATA_PEAK_ADD_TILE(T) \
  _tile_stored(T, c, 64);       \
  total += static_cast<uint32_t>(c[0]);
  STRATA_PEAK_ADD_TILE(0)
  STRATA_PEAK_ADD_TILE(1)
  STRATA_PEAK_ADD_TILE(2)
  STRATA_PEAK_ADD_TILE(3)
  STRATA_PEAK_ADD_TILE(4)
  STRATA_PEAK_ADD_TILE(5)
#undef STRATA_PEAK_ADD_TILE
  return static_cast<int32_t>(total);
}

}  // namespace strata::peak
