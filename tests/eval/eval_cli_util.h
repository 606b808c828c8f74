// Helpers of the `strata perplexity` / `strata kld` CLI tests: running the binary, and a
// reference computation of the metrics from `strata logits` JSON written independently of
// src/eval (plain sums in long double, llama-perplexity's formulas).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fixtures.h"

namespace strata::test {

inline std::string stories260k() {
  return shared_path("models/stories260K/stories260K.gguf");
}
inline std::string synth_tiny(const std::string& type) {
  return shared_path("models/synth-tiny/synth-tiny-" + type + ".gguf");
}

// Runs `strata ARGS... -t 2` and parses stdout as one JSON object; fails the test otherwise.
inline nlohmann::json run_json(std::vector<std::string> args) {
  args.insert(args.begin(), strata_binary());
  args.insert(args.end(), {"-t", "2"});
  const CommandResult r = run_command(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

// Token ids of `text` as the model's tokenizer gives them (BOS first when it adds one).
inline std::vector<int32_t> tokenize_with_logits_cmd(const std::string& model, const std::string& text) {
  return run_json({"logits", "-m", model, "-p", text})["tokens"].get<std::vector<int32_t>>();
}

// Logits rows [n_tokens][n_vocab] of `strata logits --tokens`.
inline std::vector<std::vector<double>> logits_of(const std::string& model, const std::vector<int32_t>& ids) {
  std::string list;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) list += ',';
    list += std::to_string(ids[i]);
  }
  const nlohmann::json j = run_json({"logits", "-m", model, "--tokens", list});
  std::vector<std::vector<double>> rows;
  for (const auto& row : j["logits"]) {
    rows.emplace_back();
    for (const auto& v : row) rows.back().push_back(v.is_null() ? NAN : v.get<double>());
  }
  return rows;
}

inline std::vector<double> log_probs(const std::vector<double>& logits) {
  long double m = -INFINITY, s = 0;
  for (double v : logits) m = std::max<long double>(m, v);
  for (double v : logits) s += std::exp(static_cast<long double>(v) - m);
  std::vector<double> out;
  for (double v : logits) out.push_back(static_cast<double>(v - m - std::log(s)));
  return out;
}

// One scored position: the logits row and the token it should predict.
struct ScoredRow {
  std::vector<double> logits;
  int32_t target;
};

// The scored rows of every window, computed the way llama-perplexity describes it: windows of
// ctx tokens every `stride` tokens, first token replaced by BOS, and the predictions of the last
// min(stride, ctx - 1 - ctx/2) rows scored.
inline std::vector<ScoredRow> scored_rows(const std::string& model, const std::vector<int32_t>& text, int ctx,
                                          int stride, int32_t bos) {
  std::vector<ScoredRow> out;
  const int n_score = std::min(ctx - 1 - ctx / 2, stride);
  for (size_t start = 0; start + ctx <= text.size(); start += stride) {
    std::vector<int32_t> window(text.begin() + start, text.begin() + start + ctx);
    window[0] = bos;
    const auto rows = logits_of(model, window);
    for (int j = ctx - 1 - n_score; j < ctx - 1; ++j) out.push_back({rows[j], text[start + j + 1]});
  }
  return out;
}

struct MeanAndError {
  double mean, stderr_of_mean;
};
// sqrt((E[x^2] - E[x]^2) / (n - 1)), as llama-perplexity computes it.
inline MeanAndError mean_and_error(const std::vector<double>& x) {
  long double s = 0, s2 = 0;
  for (double v : x) {
    s += v;
    s2 += static_cast<long double>(v) * v;
  }
  const long double n = x.size(), mean = s / n;
  return {static_cast<double>(mean), static_cast<double>(std::sqrt((s2 / n - mean * mean) / (n - 1)))};
}

// numpy.percentile(x, 100 * q) with the default linear interpolation.
inline double numpy_percentile(std::vector<double> x, double q) {
  std::sort(x.begin(), x.end());
  const double pos = q * (x.size() - 1);
  const size_t lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (x[hi] - x[lo]) * (pos - lo);
}

inline size_t argmax_of(const std::vector<double>& v) {
  return static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// A temporary folder removed with the fixture.
class EvalCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("strata-eval-cli-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_text(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

  std::filesystem::path dir_;
};

}  // namespace strata::test
