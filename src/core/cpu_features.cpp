#include "core/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace strata {
namespace {

#if defined(__x86_64__)
uint64_t xgetbv0() {
  uint32_t eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

// Linux hands out the 8 KiB AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
// XFEATURE_XTILEDATA, once per process); without it the first tile instruction faults.
bool amx_permission() {
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
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
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avxvnni = a1 & (1u << 4);  // VEX-encoded vpdpbusd on ymm, no AVX-512 needed
  if (zmm_ok) {
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512vbmi = c & (1u << 1);
    f.avx512vnni = c & (1u << 11);
    f.avx512bf16 = a1 & (1u << 5);
  }
  f.amx_int8 = (d & (1u << 24)) && (d & (1u << 25)) && (xcr0 & 0x60000) == 0x60000 && amx_permission();
  return f;
}
#elif defined(__aarch64__)
CpuFeatures detect() {
  CpuFeatures f;
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  f.neon = hw & (1ul << 1);                   // HWCAP_ASIMD
  f.dotprod = f.neon && (hw & (1ul << 20));   // HWCAP_ASIMDDP
  f.i8mm = f.dotprod && (hw2 & (1ul << 13));  // HWCAP2_I8MM
  return f;
}
#else
CpuFeatures detect() {
  return CpuFeatures{};
}
#endif

bool avx2_usable(const CpuFeatures& f) {
  return f.avx2 && f.fma && f.f16c && f.bmi2;
}

bool supported(const CpuFeatures& f, IsaLevel level) {
  switch (level) {
    case IsaLevel::Scalar:
      return true;
    case IsaLevel::Avx2:
      return avx2_usable(f);
    case IsaLevel::AvxVnni:
      return avx2_usable(f) && f.avxvnni;
    case IsaLevel::Avx512:
      // The AVX-512 kernels use VNNI, BF16 and VBMI (Ice Lake / Zen 4 and later).
      return avx2_usable(f) && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni &&
             f.avx512bf16 && f.avx512vbmi;
    case IsaLevel::Amx:
      return supported(f, IsaLevel::Avx512) && f.amx_int8;
    case IsaLevel::Neon:
      return f.neon;
    case IsaLevel::NeonDotprod:
      return f.neon && f.dotprod;
    case IsaLevel::NeonI8mm:
      return f.neon && f.dotprod && f.i8mm;
  }
  return false;
}

constexpr IsaLevel kAllLevels[] = {IsaLevel::Scalar, IsaLevel::Avx2, IsaLevel::AvxVnni,
                                   IsaLevel::Avx512, IsaLevel::Amx,  IsaLevel::Neon,
                                   IsaLevel::NeonDotprod, IsaLevel::NeonI8mm};

IsaLevel best_supported() {
  // The top of each chain first.
  for (IsaLevel top : {IsaLevel::Amx, IsaLevel::NeonI8mm})
    if (IsaLevel l = clamp_isa(top); l != IsaLevel::Scalar) return l;
  return IsaLevel::Scalar;
}

IsaLevel from_env(IsaLevel best) {
  const char* env = std::getenv("STRATA_ISA");
  if (!env || !*env) return best;
  const std::optional<IsaLevel> want = isa_from_name(env);
  if (!want) {
    std::fprintf(stderr,
                 "strata: warning: STRATA_ISA=%s is not one of scalar, avx2, avxvnni, avx512, amx, neon, dotprod, "
                 "i8mm; using %s\n",
                 env, isa_name(best).c_str());
    return best;
  }
  return clamp_isa(*want);
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

IsaLevel isa_fallback(IsaLevel level) {
  switch (level) {
    case IsaLevel::Amx:
      return IsaLevel::Avx512;
    case IsaLevel::Avx512:
      return IsaLevel::AvxVnni;
    case IsaLevel::AvxVnni:
      return IsaLevel::Avx2;
    case IsaLevel::NeonI8mm:
      return IsaLevel::NeonDotprod;
    case IsaLevel::NeonDotprod:
      return IsaLevel::Neon;
    case IsaLevel::Avx2:
    case IsaLevel::Neon:
    case IsaLevel::Scalar:
      break;
  }
  return IsaLevel::Scalar;
}

bool isa_includes(IsaLevel level, IsaLevel lower) {
  for (;; level = isa_fallback(level)) {
    if (level == lower) return true;
    if (level == IsaLevel::Scalar) return false;
  }
}

bool isa_supported(IsaLevel level) {
  return supported(cpu_features(), level);
}

IsaLevel clamp_isa(IsaLevel level) {
  while (!isa_supported(level)) level = isa_fallback(level);
  return level;
}

std::vector<IsaLevel> supported_isa_levels() {
  std::vector<IsaLevel> out;
  for (IsaLevel l : kAllLevels)
    if (isa_supported(l)) out.push_back(l);
  return out;
}

IsaLevel max_supported_isa() {
  static const IsaLevel best = best_supported();
  return best;
}

IsaLevel isa_level() {
  return static_cast<IsaLevel>(level_slot().load(std::memory_order_relaxed));
}

void set_isa_level(IsaLevel level) {
  level_slot().store(static_cast<int>(clamp_isa(level)));
}

std::string isa_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::Scalar:
      return "scalar";
    case IsaLevel::Avx2:
      return "avx2";
    case IsaLevel::AvxVnni:
      return "avxvnni";
    case IsaLevel::Avx512:
      return "avx512";
    case IsaLevel::Amx:
      return "amx";
    case IsaLevel::Neon:
      return "neon";
    case IsaLevel::NeonDotprod:
      return "dotprod";
    case IsaLevel::NeonI8mm:
      return "i8mm";
  }
  return "?";
}

std::optional<IsaLevel> isa_from_name(const std::string& name) {
  for (IsaLevel l : kAllLevels)
    if (name == isa_name(l)) return l;
  return std::nullopt;
}

std::string cpu_description() {
  const CpuFeatures& f = cpu_features();
  std::string s = isa_name(isa_level());
  std::string extra;
  if (isa_supported(IsaLevel::Avx512)) extra += "avx512 ";
  if (f.avx512vnni) extra += "vnni ";
  if (f.amx_int8) extra += "amx-int8 ";
  if (f.avx512bf16) extra += "bf16 ";
  if (f.avxvnni) extra += "avxvnni ";
  if (f.avx2) extra += "avx2 ";
  if (f.fma) extra += "fma ";
  if (f.f16c) extra += "f16c ";
  if (f.neon) extra += "neon ";
  if (f.dotprod) extra += "dotprod ";
  if (f.i8mm) extra += "i8mm ";
  // AVX2 present but unusable for the AVX2 kernels: say why (they need all of FMA, F16C, BMI2).
  if (f.avx2 && !avx2_usable(f)) {
    extra += "(avx2 kernels off: missing";
    if (!f.fma) extra += " fma";
    if (!f.f16c) extra += " f16c";
    if (!f.bmi2) extra += " bmi2";
    extra += ") ";
  }
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
