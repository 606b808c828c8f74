// `strata bench serve` end to end: the binary against the in-process fake server.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/fake_server.h"
#include "common/fixtures.h"
#include "fake_scenarios.h"

namespace strata::bench {
namespace {

namespace fs = std::filesystem;

// The binary under test (built before the tests: test_bench depends on it).
std::string strata_cli() {
  return test::strata_binary();
}

class CliBenchServe : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(strata_cli())) << strata_cli() << " is not built";
    dir_ = fs::temp_directory_path() / ("strata_cli_bench_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

TEST_F(CliBenchServe, HelpStatesTheDefinitions) {
  const auto help = test::run_command({strata_cli(), "bench", "serve", "--help"});
  for (const char* text :
       {"--request-rate", "--sweep-concurrency", "TPOT", "(E2E - TTFT) / (output_tokens - 1)",
        "token-weighted", "request-weighted", "numpy"})
    EXPECT_NE(help.out.find(text), std::string::npos) << text;
}

TEST_F(CliBenchServe, SingleRunWritesTableAndJson) {
  FakeOpenAiServer server(test_support::prompt_scenarios());
  const fs::path json_path = dir_ / "out.json";
  const auto r = test::run_command({strata_cli(), "bench", "serve", "--url", server.url(), "--num-prompts",
                                    "5", "--input-len", "8", "--output-len", "4", "--slo-ttft", "1000",
                                    "--json", json_path.string(), "--detailed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Successful requests:"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos);  // no progress bar when stderr is a pipe
  const auto j = nlohmann::json::parse(test::read_file(json_path.string()));
  EXPECT_EQ(j["completed"], 5);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_output_tokens"], 20);
  EXPECT_EQ(j["total_input_tokens"], 40);
  EXPECT_EQ(j["input_tokens_source"], "server_usage");
  EXPECT_EQ(j["model"], "fake-model");
  for (const char* key :
       {"duration_s", "request_throughput", "input_throughput", "output_throughput", "goodput"})
    EXPECT_TRUE(j[key].is_number()) << key;
  for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"})
    for (const char* stat : {"mean", "median", "p90", "p99"})
      EXPECT_TRUE(j[key][stat].is_number()) << key << stat;
  EXPECT_EQ(j["requests"].size(), 5u);
  EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 20 / j["duration_s"].get<double>());
}

TEST_F(CliBenchServe, SweepWritesTableAndPlot) {
  FakeOpenAiServer server(test_support::prompt_scenarios());
  const fs::path plot = dir_ / "sweep.svg", json_path = dir_ / "sweep.json";
  const auto r = test::run_command({strata_cli(),
                                    "bench",
                                    "serve",
                                    "--url",
                                    server.url(),
                                    "--model",
                                    "m",
                                    "--endpoint",
                                    "chat",
                                    "--num-prompts",
                                    "4",
                                    "--input-len",
                                    "4",
                                    "--output-len",
                                    "3",
                                    "--sweep-concurrency",
                                    "1,2",
                                    "--plot",
                                    plot.string(),
                                    "--json",
                                    json_path.string(),
                                    "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("conc"), std::string::npos);
  EXPECT_NE(test::read_file(plot.string()).find("<svg"), std::string::npos);
  const auto j = nlohmann::json::parse(test::read_file(json_path.string()));
  ASSERT_EQ(j["sweep"].size(), 2u);
  EXPECT_EQ(j["sweep"][0]["max_concurrency"], 1);
  EXPECT_EQ(j["sweep"][1]["max_concurrency"], 2);
  EXPECT_EQ(j["sweep"][1]["completed"], 4);
  EXPECT_EQ(j["config"]["endpoint"], "chat");
}

TEST_F(CliBenchServe, BadFlagsGiveOneLineErrors) {
  const std::vector<std::vector<std::string>> cases = {
      {"--url", "https://x:1"},
      {"--url", "http://127.0.0.1:1", "--request-rate", "fast"},
      {"--url", "http://127.0.0.1:1", "--endpoint", "embeddings"},
      {"--url", "http://127.0.0.1:1", "--plot", "x.svg"},
      {"--url", "http://127.0.0.1:1", "--dataset", "/nonexistent.jsonl", "--model", "m"},
      {"--url", "http://127.0.0.1:1", "--model", "m", "--extra-body", "[1, 2]"},
      {"--url", "http://127.0.0.1:1", "--model", "m", "--extra-body", "{oops"}};
  for (const auto& extra : cases) {
    std::vector<std::string> argv = {strata_cli(), "bench", "serve"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    const auto r = test::run_command(argv);
    EXPECT_EQ(r.exit_code, 1) << extra.back();
    EXPECT_EQ(r.err.rfind("strata: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST_F(CliBenchServe, AllRequestsFailingExitsNonZero) {
  FakeOpenAiServer server(test_support::prompt_scenarios());
  const fs::path data = dir_ / "prompts.jsonl";
  std::ofstream(data) << "{\"prompt\": \"status=503\"}\n";
  const auto r = test::run_command({strata_cli(), "bench", "serve", "--url", server.url(), "--model", "m",
                                    "--dataset", data.string(), "--num-prompts", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("http_503:"), std::string::npos) << r.out;
}

TEST_F(CliBenchServe, CalibrationReportsTheClientsError) {
  const auto r =
      test::run_command({strata_cli(), "bench", "serve", "--calibrate", "--sweep-concurrency", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("itl_set"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("asap"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Send schedule: 200 requests at 100 req/s"), std::string::npos) << r.out;
}

TEST_F(CliBenchServe, ProgressBarOnlyOnATerminal) {
  FakeOpenAiServer server(test_support::prompt_scenarios());
  // `script` runs the command on a pseudo-terminal, so stderr is a TTY there.
  std::string cmd = "'";
  cmd += strata_cli();
  cmd += "' bench serve --model m --num-prompts 30 --input-len 3 --output-len 20 --max-concurrency 2 --url ";
  cmd += server.url();
  const auto tty = test::run_command({"script", "-qefc", cmd, "/dev/null"});
  ASSERT_EQ(tty.exit_code, 0) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("in flight"), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find("30/30"), std::string::npos) << tty.out;
  const auto quiet = test::run_command({"script", "-qefc", cmd + " --quiet", "/dev/null"});
  ASSERT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.out.find("in flight"), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find("Successful requests:"), std::string::npos);
}

}  // namespace
}  // namespace strata::bench
