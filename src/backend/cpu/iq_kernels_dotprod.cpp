// The IQ and ternary types' kernels for NEON with +dotprod (sdot): iq_tile_neon.h's.
#include "backend/cpu/iq_tile_neon.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {

STRATA_IQ_NEON_GETTERS(dotprod)

}  // namespace strata::cpu
