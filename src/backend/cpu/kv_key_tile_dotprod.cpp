// Armv8.2 DotProd scores against interleaved key tiles (kv_key_tile_neon.h: one sdot per 4 keys
// and 4 query levels). The I8MM level runs these too.
#include "backend/cpu/kv_key_tile_neon.h"

namespace strata::cpu {

const KvKeyTileKernels& kv_key_tile_kernels_dotprod() {
  return kNeonKeyTileKernels;
}

}  // namespace strata::cpu
