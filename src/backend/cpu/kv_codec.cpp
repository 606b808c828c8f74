// Baseline (scalar reference) build of the KV codecs, and the ISA dispatch.
#include "backend/cpu/kv_codec_impl.h"

namespace strata::cpu {

const KvCodecKernels& kv_codec_kernels_scalar() {
  return kKvCodec;
}

const KvCodecKernels& kv_codec_kernels(IsaLevel isa) {
  switch (std::min(isa, max_supported_isa())) {
    case IsaLevel::Avx512:
      return kv_codec_kernels_avx512();
    case IsaLevel::Avx2:
      return kv_codec_kernels_avx2();
    case IsaLevel::Scalar:
      break;
  }
  return kv_codec_kernels_scalar();
}

}  // namespace strata::cpu
