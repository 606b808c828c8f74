// Bad input to the CLI: one clear error line on stderr, a non-zero exit, nothing on stdout.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

std::string stories() {
  return test::shared_path("models/stories260K/stories260K.gguf");
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("strata_cli_errors_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

// Lines that report an error (informational log lines, e.g. "loaded model", may precede it).
int count_error_lines(const std::string& s) {
  int n = 0;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    const std::string line = s.substr(start, end - start);
    if (line.find("error") != std::string::npos || line.find("Error") != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

void expect_clean_failure(const std::vector<std::string>& args, const std::string& needle) {
  std::vector<std::string> argv = {test::strata_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = test::run_command(argv);
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  EXPECT_NE(r.exit_code, 0) << cmd;
  EXPECT_LT(r.exit_code, 128) << cmd << " died from a signal\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << cmd << " wrote to stdout: " << r.out;
  EXPECT_EQ(count_error_lines(r.err), 1) << cmd << "\n" << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << cmd << "\n" << r.err;
}

TEST(CliErrors, KvEvictFlags) {
  const std::string m = stories();
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-budget", "8"},
                       "--kv-budget needs --kv-evict snapkv, h2o or recent");
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-evict", "snapkv"}, "needs --kv-budget");
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-evict", "streaming", "--kv-budget", "8"},
                       "unknown --kv-evict method 'streaming' (use none, snapkv, h2o or recent)");
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-evict", "h2o"}, "--kv-evict h2o needs --kv-budget");
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-evict", "recent", "--kv-budget", "0"},
                       "--kv-evict recent needs --kv-budget");
  expect_clean_failure(
      {"run", "-m", m, "-p", "x", "--kv-evict", "h2o", "--kv-budget", "8", "--kv-evict-pool", "3"},
      "--kv-evict-pool applies to --kv-evict snapkv only, not h2o");
  expect_clean_failure({"run", "-m", m, "-p", "x", "--kv-evict-pool", "3"},
                       "--kv-evict-pool needs --kv-evict snapkv");
  expect_clean_failure(
      {"run", "-m", m, "-p", "x", "--kv-evict", "recent", "--kv-budget", "8", "--kv-evict-window", "5000"},
      "--kv-evict-window must be in [1, 4096]");
  expect_clean_failure(
      {"run", "-m", m, "-p", "x", "--kv-evict", "h2o", "--kv-budget", "8", "--spec", "ngram"},
      "--kv-evict h2o (which evicts during generation) does not combine with speculative");
  expect_clean_failure(
      {"perplexity", "-m", m, "-f", m, "--kv-evict", "snapkv", "--kv-budget", "8", "--kv-evict-window", "0"},
      "--kv-evict-window");
  expect_clean_failure(
      {"run", "-m", m, "-p", "x", "--kv-evict", "snapkv", "--kv-budget", "8", "--kv-evict-pool", "4"},
      "--kv-evict-pool");
  expect_clean_failure(
      {"run", "-m", m, "-p", "x", "--kv-evict", "snapkv", "--kv-budget", "8", "--kv-window", "64"},
      "--kv-evict does not combine with --kv-window");
}

TEST(CliErrors, MissingFile) {
  expect_clean_failure({"run", "-m", "/nonexistent/model.gguf", "-p", "x"}, "error");
}

TEST(CliErrors, NotAModel) {
  const fs::path p = temp_dir() / "notes.txt";
  std::ofstream(p) << "this is not a model\n";
  expect_clean_failure({"run", "-m", p.string(), "-p", "x"}, "error");
  expect_clean_failure({"info", "-m", p.string()}, "error");
}

TEST(CliErrors, TruncatedGguf) {
  const std::string bytes = test::read_file(stories());
  for (size_t len : {size_t{3}, size_t{24}, size_t{1000}, bytes.size() / 2, bytes.size() - 1}) {
    const fs::path p = temp_dir() / ("trunc_" + std::to_string(len) + ".gguf");
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(len));
    expect_clean_failure({"run", "-m", p.string(), "-p", "x"}, "error");
    expect_clean_failure({"info", "-m", p.string()}, "error");
  }
}

TEST(CliErrors, UnsupportedArchitecture) {
  auto src = GgufFile::open(stories());
  Metadata md = src->metadata();
  md.set("general.architecture", GgufValue::of_string("falcon"));
  GgufWriter w;
  w.set_metadata(md);
  for (const TensorInfo& t : src->tensors())
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims)),
                 t.data);
  const fs::path p = temp_dir() / "falcon.gguf";
  w.write(p.string());
  expect_clean_failure({"run", "-m", p.string(), "-p", "x"}, "unsupported architecture");
}

TEST(CliErrors, PromptLongerThanContext) {
  expect_clean_failure({"run", "-m", stories(), "-c", "4", "-p", "Once upon a time there was a dog"},
                       "context");
}

TEST(CliErrors, InvalidFlags) {
  expect_clean_failure({"run", "-m", stories(), "-p", "x", "--temp", "-1"}, "temperature");
  expect_clean_failure({"run", "-m", stories(), "-p", "x", "--top-p", "1.5"}, "top_p");
  expect_clean_failure({"run", "-m", stories()}, "prompt");
  expect_clean_failure({"logits", "-m", stories(), "--tokens", "1,x"}, "token id");
  expect_clean_failure({"logits", "-m", stories(), "--tokens", "1,99999"}, "vocabulary");
  expect_clean_failure({"synth", "--preset", "nope", "-o", (temp_dir() / "x.gguf").string()},
                       "unknown preset");
}

TEST(CliErrors, SynthFromAModelThatDoesNotFit) {
  const std::string out = (temp_dir() / "embedded.gguf").string();
  expect_clean_failure({"synth", "--preset", "synth-tiny", "--from", stories(), "-o", out},
                       "layer count (5)");
  expect_clean_failure({"synth", "--preset", "qwen2-0.5b", "--from", stories(), "-o", out},
                       "same architecture");
  expect_clean_failure({"synth", "--preset", "tinyllama-1.1b", "--from", "/nonexistent/model", "-o", out},
                       "error");
  expect_clean_failure({"synth", "--preset", "tinyllama-1.1b", "--tokenizer", "tok.bin", "-o", out},
                       "--from");
  EXPECT_FALSE(fs::exists(out));
  expect_clean_failure(
      {"synth", "--preset", "synth-tiny", "--vocab", test::shared_path("vocab/ggml-vocab-gpt-2.gguf"), "-o",
       (temp_dir() / "x.gguf").string()},
      "must hold 512 tokens");
}

}  // namespace
}  // namespace strata
