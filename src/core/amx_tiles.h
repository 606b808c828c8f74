// AMX tile configuration shared by the AMX kernels (backend/cpu packed_gemm_amx.cpp,
// w8a8_gemm_amx.cpp) and the tdpbusd peak probe (compute_peak_amx.cpp).
//
// The configuration is per thread (ldtilecfg) and one thread may run both kernels, so each
// thread remembers the last configuration it loaded and reloads only when a call needs another.
// cpu_features.cpp requests the tile state from the OS once per process.
#pragma once

#include <cstdint>

namespace strata::cpu {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of each tile
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

// Loads cfg unless it is this thread's current configuration. One definition
// (amx_tiles_amx.cpp) so that every AMX kernel shares the thread's record of it.
void amx_configure(const AmxTileConfig& cfg);

}  // namespace strata::cpu
