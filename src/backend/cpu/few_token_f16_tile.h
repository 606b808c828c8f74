// Pieces every per-ISA few-token F16 file (few_token_f16_<isa>.cpp) shares. Internal linkage:
// each including file gets its own copy compiled for its ISA (DEVELOPERS.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/cpu/block_access.h"
#include "backend/cpu/few_token_f16.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

// FewTokenF16Kernels::gemm over a register tile of compile-time shape TR x TC (tile_dispatch.h:
// column chunks of at most TC, so any nc works); the activations' stride in floats becomes bytes.
template <class Tile, int TR, int TC>
void few_token_gemm(int64_t n, int nr, int nc, const void* w, size_t ws, const float* a, size_t as,
                    float* out, size_t os) {
  dispatch_tile<Tile, TR, TC>(n, nr, nc, w, ws, a, as * sizeof(float), out, os);
}

}  // namespace
}  // namespace strata::cpu
