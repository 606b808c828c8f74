// Scalar reference kernels for IQ4_NL keys against Q8_0 queries: sum over blocks of
// d_k * d_q * sum_j kKvIQ4NLValues[q_j] * a_j, integer inner sums; and the key-kernel lookup.
#include <cstddef>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kv_key_dot.h"
#include "backend/cpu/scalar_tile.h"
#include "core/check.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// w: [n / 32] KvBlockIQ4NL, a: [n / 32] BlockQ8_0, at any address.
float vec_dot_iq4_nl(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const uint8_t*>(w);
  const auto* y = static_cast<const uint8_t*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b, x += sizeof(KvBlockIQ4NL), y += sizeof(BlockQ8_0)) {
    const uint8_t* xq = x + offsetof(KvBlockIQ4NL, qs);
    const auto* yq = reinterpret_cast<const int8_t*>(y + offsetof(BlockQ8_0, qs));
    int sumi = 0;
    for (int j = 0; j < kQK / 2; ++j)
      sumi += kKvIQ4NLValues[xq[j] & 0x0f] * yq[j] + kKvIQ4NLValues[xq[j] >> 4] * yq[j + kQK / 2];
    sum += static_cast<float>(sumi) * load_half(x + offsetof(KvBlockIQ4NL, d)) *
           load_half(y + offsetof(BlockQ8_0, d));
  }
  return sum;
}

constexpr TypeKernels kKernels{
    TensorType::Q8_0, quantize_row_q8_0_scalar, vec_dot_iq4_nl, scalar_gemm_tile<vec_dot_iq4_nl>, 1, 1};

}  // namespace

const TypeKernels& kv_iq4_nl_kernels_scalar() {
  return kKernels;
}

const TypeKernels& kv_key_kernels(KvType type, IsaLevel isa) {
  switch (type) {
    case KvType::Q8_0:
      return type_kernels(TensorType::Q8_0, isa);
    case KvType::Q4_0:
      return type_kernels(TensorType::Q4_0, isa);
    case KvType::Q4_1:
      return type_kernels(TensorType::Q4_1, isa);
    case KvType::Q5_0:
      return type_kernels(TensorType::Q5_0, isa);
    case KvType::Q5_1:
      return type_kernels(TensorType::Q5_1, isa);
    case KvType::IQ4_NL:
      switch (clamp_isa(isa)) {
        case IsaLevel::Avx512:
          return kv_iq4_nl_kernels_avx512();
        case IsaLevel::AvxVnni:  // AVX-VNNI CPUs run the AVX2 kernels here
        case IsaLevel::Avx2:
          return kv_iq4_nl_kernels_avx2();
        case IsaLevel::Scalar:
        default:  // the scalar reference (aarch64 levels included)
          break;
      }
      return kv_iq4_nl_kernels_scalar();
    default:
      break;
  }
  STRATA_CHECK(false, "no integer key kernels for KV type ", kv_type_name(type));
}

}  // namespace strata::cpu
