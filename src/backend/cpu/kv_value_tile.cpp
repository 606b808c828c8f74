// Scalar reference of the integer Q8_0 V accumulation (kv_value_tile.h), and the ISA dispatch.
#include <algorithm>
#include <cmath>

#include "backend/cpu/kv_value_tile_impl.h"

namespace strata::cpu {
namespace {

// u: [32] the u8 weights of one row and group; returns their scale su (0: the group adds nothing).
float quantize_weights(const float* pr, const float* dg, int bs, uint8_t* u) {
  float w[32], wmax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    w[j] = j < bs ? pr[j] * dg[j] : 0.0f;
    wmax = std::max(wmax, w[j]);
  }
  if (!(wmax >= kMinWeight)) {
    std::fill(u, u + 32, uint8_t{0});
    return 0.0f;
  }
  const float inv = 255.0f / wmax;
  for (int j = 0; j < 32; ++j)
    u[j] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, std::nearbyint(w[j] * inv))));
  return wmax / 255.0f;
}

bool accumulate_q8_0(float* const* acc, int n_rows, const float* p, int bs, const uint8_t* v,
                     size_t row_bytes, int hd_v, int first, int last, const float* corr) {
  const int n_groups = (hd_v + 31) / 32;
  float d[kMaxValueGroups * 32];
  if (!load_value_scales(v, row_bytes, n_groups, bs, first, last, d)) return false;
  for (int r = 0; r < n_rows; ++r) {
    float* a = acc[r];
    for (int g = 0; g < n_groups; ++g) {
      uint8_t u[32];
      const float su = quantize_weights(p + r * bs, d + g * 32, bs, u);
      for (int e = 32 * g; e < std::min(hd_v, 32 * g + 32); ++e) {
        int32_t dot = 0;
        for (int j = first; j <= last; ++j) {
          const auto* q = reinterpret_cast<const int8_t*>(v + static_cast<size_t>(j) * row_bytes +
                                                          static_cast<size_t>(g) * kQ8GroupBytes + 2);
          dot += static_cast<int32_t>(u[j]) * q[e - 32 * g];
        }
        a[e] = a[e] * corr[r] + su * static_cast<float>(dot);
      }
    }
  }
  return true;
}

constexpr KvValueTileKernels kKernels = {accumulate_q8_0};
constexpr KvValueTileKernels kNone = {nullptr};

}  // namespace

const KvValueTileKernels& kv_value_tile_kernels_scalar() {
  return kKernels;
}

const KvValueTileKernels& kv_value_tile_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)  // the x86 kernels are not built on aarch64
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return kv_value_tile_kernels_avx512();
    case IsaLevel::AvxVnni:
      return kv_value_tile_kernels_avxvnni();
    case IsaLevel::Avx2:  // no integer V kernel (kv_value_tile_avxvnni.cpp says why): the driver
      return kNone;       // dequantizes V
#endif
    case IsaLevel::Scalar:
    default:  // aarch64 levels: the float path (the scalar reference is for the tests)
      break;
  }
  return clamp_isa(isa) == IsaLevel::Scalar ? kKernels : kNone;
}

}  // namespace strata::cpu
