// AVX2 build of the KV codecs (same source as kv_codec.cpp, vectorized for AVX2).
#include "backend/cpu/kv_codec_impl.h"

namespace strata::cpu {

const KvCodecKernels& kv_codec_kernels_avx2() {
  return kKvCodec;
}

}  // namespace strata::cpu
