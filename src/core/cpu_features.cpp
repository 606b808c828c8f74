#include "core/cpu_features.h"

#include <cpuid.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace strata {
namespace {

uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  if (!osxsave || !avx) return CpuFeatures{};
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_ok = (xcr0 & 0x6) == 0x6;
  const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
  if (!ymm_ok) return CpuFeatures{};
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  f.bmi2 = b & (1u << 8);
  if (zmm_ok) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vbmi = c & (1u << 1);
    f.avx512vnni = c & (1u << 11);
    unsigned a1, b1, c1, d1;
    __cpuid_count(7, 1, a1, b1, c1, d1);
    f.avx512bf16 = a1 & (1u << 5);
  }
  return f;
}

IsaLevel supported(const CpuFeatures& f) {
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2;
  // The AVX-512 kernels use VNNI, BF16 and VBMI (Ice Lake / Zen 4 and later).
  if (avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx512bf16 &&
      f.avx512vbmi)
    return IsaLevel::Avx512;
  if (avx2) return IsaLevel::Avx2;
  return IsaLevel::Scalar;
}

IsaLevel from_env(IsaLevel best) {
  const char* env = std::getenv("STRATA_ISA");
  if (!env) return best;
  IsaLevel want = best;
  if (!std::strcmp(env, "scalar"))
    want = IsaLevel::Scalar;
  else if (!std::strcmp(env, "avx2"))
    want = IsaLevel::Avx2;
  else if (!std::strcmp(env, "avx512"))
    want = IsaLevel::Avx512;
  return want < best ? want : best;
}

std::atomic<int>& level_slot() {
  static std::atomic<int> level{static_cast<int>(from_env(max_supported_isa()))};
  return level;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

IsaLevel max_supported_isa() {
  return supported(cpu_features());
}

IsaLevel isa_level() {
  return static_cast<IsaLevel>(level_slot().load(std::memory_order_relaxed));
}

void set_isa_level(IsaLevel level) {
  const IsaLevel best = max_supported_isa();
  level_slot().store(static_cast<int>(level < best ? level : best));
}

std::string isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::Scalar:
      return "scalar";
    case IsaLevel::Avx2:
      return "avx2";
    case IsaLevel::Avx512:
      return "avx512";
  }
  return "?";
}

std::string cpu_description() {
  const CpuFeatures& f = cpu_features();
  std::string s = isa_name(isa_level());
  std::string extra;
  if (f.avx512vnni) extra += "vnni ";
  if (f.avx512bf16) extra += "bf16 ";
  if (f.f16c) extra += "f16c ";
  if (!extra.empty()) s += " (cpu: " + extra.substr(0, extra.size() - 1) + ")";
  return s;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const size_t b = line.find_first_not_of(" \t", colon + 1);
    return b == std::string::npos ? "unknown cpu" : line.substr(b);
  }
  return "unknown cpu";
}

}  // namespace strata
