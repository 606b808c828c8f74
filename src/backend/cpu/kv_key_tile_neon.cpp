// Armv8-A NEON scores against interleaved key tiles (kv_key_tile_neon.h: vmull_s8 and pairwise adds).
#include "backend/cpu/kv_key_tile_neon.h"

namespace strata::cpu {

const KvKeyTileKernels& kv_key_tile_kernels_neon() {
  return kNeonKeyTileKernels;
}

}  // namespace strata::cpu
