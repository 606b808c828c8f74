// The kernels of an IQ or ternary type at one x86 level (dot_<type>_avx2.cpp / _avx512.cpp): the
// TR x TC register tile over Ops's block decoding (iq_tile_avx2.h) for decode and vec_dot, the
// panel (iq_panel_avx2.h) for prefill. Internal linkage, as the headers it joins.
#pragma once

#include "backend/cpu/iq_panel_avx2.h"
#include "backend/cpu/iq_tile_avx2.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/tile_dispatch.h"

namespace strata::cpu {
namespace {

// Tile: a kernel of iq_tile_run with IqTileAvx2's integers (the ternary types' TernaryTile).
template <class Ops, int TR, int TC, class Tile = IqTileAvx2<Ops>>
constexpr TypeKernels iq_type_kernels(void (*quantize_q8_k)(const float*, void*, int64_t)) {
  return {TensorType::Q8_K,           quantize_q8_k, tile_vec_dot<Tile>, dispatch_tile<Tile, TR, TC>, TR, TC,
          dispatch_panel<Ops, TR, TC>};
}

}  // namespace
}  // namespace strata::cpu
