// The interleaved-layout kernels by ISA level (packed_kernels.h).
#include "backend/cpu/packed_kernels.h"

namespace strata::cpu {
namespace {

// Activation modes (PackedKernelSet::act_mode): one scale per 32-column block everywhere but at
// AVX2 (the K-quants and IQ4_XS per super-block) and AVX-VNNI (Q4_K, Q5_K). An AVX-VNNI Q6_K on
// super-block scales (vpmulld of each half's vpdpbusd sums) measured no faster than its per-32
// tiles on Zen 5 (219-228 against 228-232 t/s pp512, within the host's noise), so it was left out.
int per_block_act(TensorType type) {
  return packed_zero_point(type);
}
int avx2_act(TensorType type) {
  if (type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::IQ4_XS)
    return kPackedSuperSums;
  if (type == TensorType::Q6_K || type == TensorType::Q3_K || type == TensorType::Q2_K)
    return kPackedSuperHalfSums;
  return packed_zero_point(type);
}
int avxvnni_act(TensorType type) {
  if (type == TensorType::Q4_K || type == TensorType::Q5_K) return kPackedSuperSums;
  return packed_zero_point(type);
}

constexpr PackedKernelSet kScalar{IsaLevel::Scalar, quantize_packed_act_scalar, packed_gemm_scalar,
                                  per_block_act};
#if defined(__x86_64__)
constexpr PackedKernelSet kAvx2{IsaLevel::Avx2, quantize_packed_act_avx2, packed_gemm_avx2, avx2_act};
constexpr PackedKernelSet kAvxVnni{IsaLevel::AvxVnni, quantize_packed_act_avx2, packed_gemm_avxvnni,
                                   avxvnni_act};
constexpr PackedKernelSet kAvx512{IsaLevel::Avx512, quantize_packed_act_avx512, packed_gemm_avx512,
                                  per_block_act};
constexpr PackedKernelSet kAmx{IsaLevel::Amx, quantize_packed_act_avx512, packed_gemm_amx, per_block_act};
#elif defined(__aarch64__)
constexpr PackedKernelSet kNeon{IsaLevel::Neon, quantize_packed_act_neon, packed_gemm_neon, per_block_act};
constexpr PackedKernelSet kDotprod{IsaLevel::NeonDotprod, quantize_packed_act_neon, packed_gemm_dotprod,
                                   per_block_act};
constexpr PackedKernelSet kI8mm{IsaLevel::NeonI8mm, quantize_packed_act_neon, packed_gemm_i8mm,
                                per_block_act};
#endif

}  // namespace

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
