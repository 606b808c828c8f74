// The IQ and ternary types' kernels for base NEON (vmull_s8 / vpadal): iq_tile_neon.h's.
#include "backend/cpu/iq_tile_neon.h"
#include "backend/cpu/kernel_decls.h"

namespace strata::cpu {

STRATA_IQ_NEON_GETTERS(neon)

}  // namespace strata::cpu
