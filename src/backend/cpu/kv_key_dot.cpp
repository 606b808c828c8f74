// The key-kernel lookup of kv_key_dot.h: every block-quantized K type is a GGUF block layout, so
// its key dots are the matmul's kernels of that type.
#include "backend/cpu/kv_key_dot.h"

#include "core/check.h"

namespace strata::cpu {

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
      return type_kernels(TensorType::IQ4_NL, isa);
    default:
      break;
  }
  STRATA_CHECK(false, "no integer key kernels for KV type ", kv_type_name(type));
}

}  // namespace strata::cpu
