#include <immintrin.h>

#include <cstring>

#include "core/amx_tiles.h"

namespace strata::cpu {

void amx_configure(const AmxTileConfig& cfg) {
  thread_local AmxTileConfig loaded{0};
  if (std::memcmp(&loaded, &cfg, sizeof cfg) == 0) return;
  // GCC 12 does not treat ldtilecfg as reading its operand and may drop the stores that built it.
  asm volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
  loaded = cfg;
}

}  // namespace strata::cpu
