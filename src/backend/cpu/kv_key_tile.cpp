// Scalar reference of the interleaved key tile scores (kv_key_tile.h), and the ISA dispatch.
#include <algorithm>

#include "backend/cpu/kv_key_tile_impl.h"

namespace strata::cpu {
namespace {

// Level of element e (< 32) of group g of token t, as a signed value.
int key_level(KvType type, const uint8_t* tile, int32_t n_groups, int bs, int32_t g, int t, int e) {
  if (type == KvType::Q8_0)
    return static_cast<int8_t>(tile[kv_interleaved_quants(n_groups, bs, g, e / 4, t, true) + e % 4]);
  const uint8_t b = tile[kv_interleaved_quants(n_groups, bs, g, e / 8, t, false) + e % 4];
  return ((e % 8) < 4 ? (b & 0xF) : (b >> 4)) - 8;
}

void scores(KvType type, const uint8_t* q, size_t q_stride, int n_rows, const uint8_t* tile, int32_t n_groups,
            int bs, float* s) {
  for (int r = 0; r < n_rows; ++r) {
    const uint8_t* row = q + static_cast<size_t>(r) * q_stride;
    const int8_t* levels = query_levels(row);
    for (int j = 0; j < bs; ++j) {
      float acc = 0.0f;
      for (int32_t g = 0; g < n_groups; ++g) {
        int32_t dot = 0;
        for (int e = 0; e < kQK; ++e)
          dot += key_level(type, tile, n_groups, bs, g, j, e) * levels[g * kQK + e];
        const float dk = load_half(tile + kv_interleaved_scale(bs, g, j));
        acc += static_cast<float>(dot) * (dk * query_scale(row, n_groups, g));
      }
      s[r * bs + j] = acc;
    }
  }
}

constexpr KvKeyTileKernels kKernels = {prepare_query, scores};

}  // namespace

const KvKeyTileKernels& kv_key_tile_kernels_scalar() {
  return kKernels;
}

const KvKeyTileKernels& kv_key_tile_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)  // the x86 kernels are not built on aarch64
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return kv_key_tile_kernels_avx512();
    case IsaLevel::AvxVnni:  // AVX-VNNI CPUs run the AVX2 kernels here
    case IsaLevel::Avx2:
      return kv_key_tile_kernels_avx2();
#endif
#if defined(__aarch64__)
    case IsaLevel::Neon:
      return kv_key_tile_kernels_neon();
    case IsaLevel::NeonDotprod:
    case IsaLevel::NeonI8mm:
      return kv_key_tile_kernels_dotprod();
#endif
    case IsaLevel::Scalar:
    default:
      break;
  }
  return kv_key_tile_kernels_scalar();
}

}  // namespace strata::cpu
