// Armv8-A NEON scores against interleaved key tiles (kv_key_tile_neon.h: vmull_s8 and pairwise adds).
#include "backend/cpu/kv_key_tile_neon.h"

namespace strata::cpu {
namespace {

constexpr KvKeyTileKernels kKernels = {prepare_query, neon_scores};

}  // namespace

const KvKeyTileKernels& kv_key_tile_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
