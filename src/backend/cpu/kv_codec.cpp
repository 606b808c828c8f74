// Baseline (scalar reference) build of the KV codecs, and the ISA dispatch.
#include "backend/cpu/kv_codec_impl.h"

namespace strata::cpu {

const KvCodecKernels& kv_codec_kernels_scalar() {
  return kKvCodec;
}

const KvCodecKernels& kv_codec_kernels(IsaLevel isa) {
  switch (clamp_isa(isa)) {
#if defined(__x86_64__)  // the x86 kernels are not built on aarch64
    case IsaLevel::Amx:  // AMX tiles serve the packed and W8A8 GEMMs only
    case IsaLevel::Avx512:
      return kv_codec_kernels_avx512();
    case IsaLevel::AvxVnni:  // AVX-VNNI CPUs run the AVX2 kernels here
    case IsaLevel::Avx2:
      return kv_codec_kernels_avx2();
#endif
    case IsaLevel::Scalar:
    default:  // the scalar reference (aarch64 levels included)
      break;
  }
  return kv_codec_kernels_scalar();
}

}  // namespace strata::cpu
