// `strata bench`: stdout is exactly one JSON object with the keys the issue names.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/cpu/kernels.h"
#include "common/fixtures.h"
#include "core/cpu_features.h"

namespace strata {
namespace {

nlohmann::json run_bench(const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {test::strata_binary(),
                                   "bench",
                                   "-m",
                                   test::shared_path("models/stories260K/stories260K.gguf"),
                                   "--json",
                                   "-t",
                                   "1"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const auto r = test::run_command(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);  // throws (fails the test) unless stdout is one JSON value
}

TEST(BenchCli, SingleStreamJsonHasPpTgAndBandwidth) {
  const auto j = run_bench({"-p", "32", "-n", "16", "-r", "2"});
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["type"], "f32");
  for (const char* test : {"pp", "tg"}) {
    ASSERT_TRUE(j.contains(test)) << j.dump();
    EXPECT_GT(j[test]["tps_mean"].get<double>(), 0.0);
    EXPECT_GE(j[test]["tps_std"].get<double>(), 0.0);
  }
  EXPECT_EQ(j["pp"]["n_tokens"], 32);
  EXPECT_EQ(j["tg"]["n_tokens"], 16);
  EXPECT_GT(j["bandwidth"]["machine_gbps"].get<double>(), 0.0);
  EXPECT_GT(j["bandwidth"]["fraction"].get<double>(), 0.0);
  // The kernel set that ran (the child inherits STRATA_ISA, so its level is this process's): an
  // F32 model's matrices use the row kernels of the level F32 resolves to.
  EXPECT_EQ(j["isa"], isa_name(isa_level()));
  ASSERT_EQ(j["kernels"].size(), 1u) << j.dump();
  EXPECT_EQ(j["kernels"][0], std::string(type_name(TensorType::F32)) + " rows " +
                                 isa_name(cpu::resolved_isa(TensorType::F32, isa_level())));
  if (isa_level() == IsaLevel::Scalar) {
    EXPECT_FALSE(j.contains("peak")) << "the scalar level has no peak kernels";
  } else {
    ASSERT_TRUE(j.contains("peak")) << j.dump();
    EXPECT_EQ(j["peak"]["level"], isa_name(isa_level()));
    EXPECT_GT(j["peak"]["f32_gflops"].get<double>(), 0.0);
    EXPECT_GT(j["peak"]["prefill_layer_gops"].get<double>(), 0.0);
  }
}

TEST(BenchCli, ParallelDecodeReportsEachSequenceCount) {
  const auto j = run_bench({"--parallel", "1,3", "-p", "8", "-n", "4", "-r", "1", "--profile"});
  ASSERT_EQ(j["parallel"].size(), 2u) << j.dump();
  EXPECT_EQ(j["parallel"][0]["n_seq"], 1);
  EXPECT_EQ(j["parallel"][1]["n_seq"], 3);
  for (const auto& row : j["parallel"]) {
    EXPECT_EQ(row["pp"]["n_tokens"], 8);
    EXPECT_EQ(row["tg"]["n_tokens"], 4);
    EXPECT_GT(row["tg"]["tps_mean"].get<double>(), 0.0);
    double share = 0.0;
    for (const auto& [op, v] : row["tg"]["profile"].items()) share += v["share"].get<double>();
    EXPECT_NEAR(share, 1.0, 1e-9);
  }
}

TEST(BenchCli, ParallelRejectsZeroSequences) {
  const auto r =
      test::run_command({test::strata_binary(), "bench", "-m",
                         test::shared_path("models/stories260K/stories260K.gguf"), "--parallel", "0"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
}

}  // namespace
}  // namespace strata
