// Runtime CPU feature detection and the ISA level the kernels dispatch on.
//
// Levels form one fallback chain per architecture; a kernel set of a level may use everything
// the levels below it use:
//   x86-64:  scalar <- avx2 <- avxvnni <- avx512
//   aarch64: scalar <- neon <- dotprod <- i8mm
// What each level requires of the CPU (all of it, else the level is unsupported):
//   avx2     AVX2 + FMA + F16C + BMI2 (the AVX2 kernels assume all four: fused multiply-adds,
//            vcvtph2ps for fp16 scales, pdep/shlx; a CPU with AVX2 but without FMA or F16C runs
//            the scalar kernels — cpu_description() names what is missing)
//   avxvnni  avx2 + AVX-VNNI (256-bit VEX vpdpbusd: Alder Lake and later clients, Sapphire Rapids,
//            Zen 5). An AVX-512 VNNI CPU without AVX-VNNI (Ice Lake, Zen 4) skips this level.
//   avx512   avx2 + AVX-512 F/BW/VL/DQ + VNNI + BF16 + VBMI (Sapphire Rapids, Zen 4)
//   neon     Advanced SIMD (every aarch64 CPU)
//   dotprod  neon + SDOT/UDOT (Armv8.2 DotProd: Graviton 2+, Ampere Altra, Apple M1+)
//   i8mm     dotprod + SMMLA/USDOT (Armv8.6 I8MM: Graviton 3+, Apple M2+)
// A level is usable when the CPU supports it; resolving a request walks down the chain to the
// first supported level, so a request never runs instructions the CPU lacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace strata {

enum class IsaLevel {
  Scalar = 0,
  Avx2 = 1,
  AvxVnni = 2,
  Avx512 = 3,
  Neon = 4,
  NeonDotprod = 5,
  NeonI8mm = 6,
  Amx = 7  // AVX-512 plus AMX tiles (AMX-INT8): above Avx512 on the x86-64 chain
};
constexpr int kIsaLevelCount = 8;

struct CpuFeatures {
  // x86-64
  bool avx2 = false, fma = false, f16c = false, bmi2 = false, avxvnni = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false;
  bool amx_int8 = false;  // AMX-TILE + AMX-INT8 present, enabled in XCR0 and granted by the OS
  // aarch64
  bool neon = false, dotprod = false, i8mm = false;
};

// What the CPU (and OS, via XGETBV / HWCAP) supports.
const CpuFeatures& cpu_features();

// The next lower level of the chain (Scalar for Scalar).
IsaLevel isa_fallback(IsaLevel level);
// True when `lower` is `level` or below it on its chain (a kernel of `lower` may run at `level`).
bool isa_includes(IsaLevel level, IsaLevel lower);
// True when the CPU can run kernels of this level.
bool isa_supported(IsaLevel level);
// The supported level a request resolves to: `level` or the first supported one below it.
IsaLevel clamp_isa(IsaLevel level);
// Every supported level, lowest (Scalar) first: the levels per-ISA tests cover.
std::vector<IsaLevel> supported_isa_levels();

// The ISA level kernels use: the best the CPU supports, lowered by the environment variable
// STRATA_ISA=scalar|avx2|avxvnni|avx512|amx|neon|dotprod|i8mm (clamped as clamp_isa: never above
// what the CPU supports; an unknown name is reported on stderr and ignored) or by
// set_isa_level().
IsaLevel isa_level();
void set_isa_level(IsaLevel level);  // clamps as clamp_isa
IsaLevel max_supported_isa();
std::string isa_name(IsaLevel level);
std::optional<IsaLevel> isa_from_name(const std::string& name);
// "avx512 (cpu: avx512 vnni bf16 avxvnni f16c)" style description for logs and `strata info`.
std::string cpu_description();
// The CPU's model name ("AMD EPYC 7551 32-Core Processor"; /proc/cpuinfo), or "unknown cpu".
std::string cpu_model_name();

}  // namespace strata
