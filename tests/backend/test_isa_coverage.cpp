// Which ISA levels the kernel tests covered on this machine. The per-ISA test cases skip the
// levels the CPU lacks, so a green run says nothing about them: every run of test_backend prints
// one line naming the levels tested (and `make test` shows it after ctest's summary).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/cpu_features.h"

namespace strata {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "unknown CPU";
}

// This architecture's chain of kernel levels, lowest first.
#if defined(__aarch64__)
constexpr IsaLevel kChain[] = {IsaLevel::Scalar, IsaLevel::Neon, IsaLevel::NeonDotprod, IsaLevel::NeonI8mm};
#else
constexpr IsaLevel kChain[] = {IsaLevel::Scalar, IsaLevel::Avx2, IsaLevel::AvxVnni, IsaLevel::Avx512,
                               IsaLevel::Amx};
#endif

std::string isa_coverage_line() {
  std::string tested, untested;
  for (IsaLevel level : kChain) {
    std::string& list = isa_supported(level) ? tested : untested;
    list += ' ';
    list += isa_name(level);
  }
  std::string line = "ISA levels tested:" + tested;
  if (!untested.empty()) line += "; NOT tested (the CPU lacks them):" + untested;
  return line + " [CPU: " + cpu_model_name() + "; " + cpu_description() + "]";
}

class IsaCoverageReport : public ::testing::Environment {
 public:
  void SetUp() override { std::printf("%s\n", isa_coverage_line().c_str()); }
};
const auto* const kReport = ::testing::AddGlobalTestEnvironment(new IsaCoverageReport);

// The levels reported as tested are exactly the ones the kernels can be switched to here, and a
// level the CPU lacks is never used (it is clamped down), so its test cases must skip.
TEST(IsaCoverage, EveryReportedLevelCanBeSelected) {
  const IsaLevel before = isa_level();
  for (IsaLevel level : kChain) {
    set_isa_level(level);
    EXPECT_EQ(isa_level(), clamp_isa(level)) << isa_name(level);
    EXPECT_TRUE(isa_supported(isa_level())) << isa_name(level);
  }
  set_isa_level(before);
  const std::string line = isa_coverage_line();
  EXPECT_NE(line.find("ISA levels tested: scalar"), std::string::npos) << line;
  EXPECT_EQ(line.find("avx512") < line.find("NOT tested"), isa_supported(IsaLevel::Avx512)) << line;
}

}  // namespace
}  // namespace strata
