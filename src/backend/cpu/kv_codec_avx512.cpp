// AVX-512 build of the KV codecs (same source as kv_codec.cpp, vectorized for AVX-512).
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/kv_codec_impl.h"

namespace strata::cpu {

const KvCodecKernels& kv_codec_kernels_avx512() {
  return kKvCodec;
}

}  // namespace strata::cpu
