// The interleaved-layout kernels by ISA level (packed_kernels.h).
#include "backend/cpu/packed_kernels.h"

namespace strata::cpu {
namespace {

constexpr PackedKernelSet kScalar{IsaLevel::Scalar, quantize_packed_act_scalar, packed_gemm_scalar, false};
#if defined(__x86_64__)
constexpr PackedKernelSet kAvx2{IsaLevel::Avx2, quantize_packed_act_avx2, packed_gemm_avx2, true};
constexpr PackedKernelSet kAvxVnni{IsaLevel::AvxVnni, quantize_packed_act_avx2, packed_gemm_avxvnni, true};
constexpr PackedKernelSet kAvx512{IsaLevel::Avx512, quantize_packed_act_avx512, packed_gemm_avx512, false};
constexpr PackedKernelSet kAmx{IsaLevel::Amx, quantize_packed_act_avx512, packed_gemm_amx, false};
#elif defined(__aarch64__)
constexpr PackedKernelSet kNeon{IsaLevel::Neon, quantize_packed_act_neon, packed_gemm_neon, false};
constexpr PackedKernelSet kDotprod{IsaLevel::NeonDotprod, quantize_packed_act_neon, packed_gemm_dotprod,
                                   false};
constexpr PackedKernelSet kI8mm{IsaLevel::NeonI8mm, quantize_packed_act_neon, packed_gemm_i8mm, false};
#endif

}  // namespace

int packed_act_mode(TensorType type, const PackedKernelSet& set) {
  if (set.superblock_act && (type == TensorType::Q4_K || type == TensorType::Q5_K)) return kPackedSuperSums;
  if (set.superblock_act && type == TensorType::Q6_K) return kPackedSuperHalfSums;
  return packed_zero_point(type);
}

const PackedKernelSet& packed_kernels(IsaLevel isa) {
  // Every level of this architecture has a set, so the clamped level is the answer.
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
