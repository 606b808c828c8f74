// Runtime CPU feature detection and the ISA level the kernels dispatch on.
#pragma once

#include <string>

namespace strata {

enum class IsaLevel { Scalar = 0, Avx2 = 1, Avx512 = 2 };

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false;
};

// What the CPU (and OS, via XGETBV) supports.
const CpuFeatures& cpu_features();

// The ISA level kernels use: the best the CPU supports, lowered by the environment variable
// STRATA_ISA=scalar|avx2|avx512 (never raised above what the CPU supports) or by set_isa_level().
IsaLevel isa_level();
void set_isa_level(IsaLevel level);  // clamps to the supported level
IsaLevel max_supported_isa();
std::string isa_name(IsaLevel level);
// "avx512 (vnni, bf16)" style description for logs and `strata info`.
std::string cpu_description();
// The CPU's model name ("AMD EPYC 7551 32-Core Processor"; /proc/cpuinfo), or "unknown cpu".
std::string cpu_model_name();

}  // namespace strata
