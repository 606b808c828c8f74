// The scalar reference W8A8 kernel and the kernel set of each ISA level (w8a8_kernels.h).
#include "backend/cpu/w8a8_kernels.h"

namespace strata::cpu {

void w8a8_gemm_scalar(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                      float* y, size_t y_stride, int n_rows) {
  for (int c = 0; c < nc; ++c) {
    const int8_t* aq = a.qs + static_cast<size_t>(c) * a.stride;
    for (int r = 0; r < n_rows; ++r) {
      int32_t dot = 0;
      for (int64_t k = 0; k < kp; ++k)
        dot += (static_cast<int32_t>(w[(k / 4) * 64 + r * 4 + k % 4]) - 128) * aq[k];
      y[static_cast<size_t>(c) * y_stride + static_cast<size_t>(r)] =
          static_cast<float>(dot) * (a.scale[c] * w_scale[r]);
    }
  }
}

namespace {
constexpr W8A8KernelSet kScalar{IsaLevel::Scalar, w8a8_gemm_scalar, w8a8_quantize_act_scalar};
#if defined(__x86_64__)
constexpr W8A8KernelSet kAvx2{IsaLevel::Avx2, w8a8_gemm_avx2, w8a8_quantize_act_avx2};
constexpr W8A8KernelSet kAvxVnni{IsaLevel::AvxVnni, w8a8_gemm_avxvnni, w8a8_quantize_act_avx2};
constexpr W8A8KernelSet kAvx512{IsaLevel::Avx512, w8a8_gemm_avx512, w8a8_quantize_act_avx512};
constexpr W8A8KernelSet kAmx{IsaLevel::Amx, w8a8_gemm_amx, w8a8_quantize_act_avx512};
#elif defined(__aarch64__)
constexpr W8A8KernelSet kNeon{IsaLevel::Neon, w8a8_gemm_neon, w8a8_quantize_act_neon};
constexpr W8A8KernelSet kDotprod{IsaLevel::NeonDotprod, w8a8_gemm_dotprod, w8a8_quantize_act_neon};
constexpr W8A8KernelSet kI8mm{IsaLevel::NeonI8mm, w8a8_gemm_i8mm, w8a8_quantize_act_neon};
#endif
}  // namespace

const W8A8KernelSet& w8a8_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)
    case IsaLevel::Amx:
      return kAmx;
    case IsaLevel::Avx512:
      return kAvx512;
    case IsaLevel::AvxVnni:
      return kAvxVnni;
    case IsaLevel::Avx2:
      return kAvx2;
#elif defined(__aarch64__)
    case IsaLevel::NeonI8mm:
      return kI8mm;
    case IsaLevel::NeonDotprod:
      return kDotprod;
    case IsaLevel::Neon:
      return kNeon;
#endif
    default:
      break;
  }
  return kScalar;
}

}  // namespace strata::cpu
