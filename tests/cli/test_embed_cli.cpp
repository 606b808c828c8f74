// `strata embed` against llama.cpp's logits: with --pooling last and no normalization,
// W_out . embedding is llama.cpp's last-position logits of the prompt.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backend/backend.h"
#include "common/fixtures.h"
#include "formats/model_file.h"
#include "quant/quantize.h"

namespace strata {
namespace {

std::string stories() {
  return test::shared_path("models/stories260K/stories260K.gguf");
}

std::vector<std::vector<double>> parse_lines(const std::string& out) {
  std::vector<std::vector<double>> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<double> row;
    double v;
    while (ls >> v) row.push_back(v);
    rows.push_back(std::move(row));
  }
  return rows;
}

TEST(EmbedCli, LastPoolingProjectsToLlamaCppLogits) {
  std::vector<std::string> prompts;
  std::vector<std::vector<double>> last_logits;
  std::ifstream ref(test::shared_path("reference/stories260K.jsonl"));
  std::string line;
  while (std::getline(ref, line)) {
    const auto j = nlohmann::json::parse(line);
    prompts.push_back(j["prompt"]);
    last_logits.push_back(j["logits"].back().get<std::vector<double>>());
  }
  std::vector<std::string> argv = {test::strata_binary(), "embed", "-m",        stories(),
                                   "--threads",           "1",     "--pooling", "last",
                                   "--embd-normalize",    "-1"};
  for (const std::string& p : prompts) {
    argv.push_back("-p");
    argv.push_back(p);
  }
  const auto r = test::run_command(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = parse_lines(r.out);
  ASSERT_EQ(rows.size(), prompts.size());
  const auto file = open_model_file(stories());
  const TensorInfo* t = file->find_tensor("output.weight");
  if (!t) t = file->find_tensor("token_embd.weight");
  ASSERT_NE(t, nullptr);
  const int64_t n_embd = t->ne[0], n_vocab = t->n_elements() / n_embd;
  std::vector<float> w(static_cast<size_t>(t->n_elements()));
  for (int64_t v = 0; v < n_vocab; ++v)
    dequantize_row(t->type, static_cast<const uint8_t*>(t->data) + v * row_bytes(t->type, n_embd),
                   w.data() + v * n_embd, n_embd);
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(static_cast<int64_t>(rows[i].size()), n_embd);
    double num = 0.0, den = 0.0;
    for (int64_t v = 0; v < n_vocab; ++v) {
      double l = 0.0;
      for (int64_t k = 0; k < n_embd; ++k)
        l += w[static_cast<size_t>(v * n_embd + k)] * rows[i][static_cast<size_t>(k)];
      const double d = l - last_logits[i][static_cast<size_t>(v)];
      num += d * d;
      den += last_logits[i][static_cast<size_t>(v)] * last_logits[i][static_cast<size_t>(v)];
    }
    EXPECT_LE(std::sqrt(num / den), 2e-3) << prompts[i];
  }
}

TEST(EmbedCli, DefaultOutputIsUnitNormAndNoInputIsAnError) {
  const auto r =
      test::run_command({test::strata_binary(), "embed", "-m", stories(), "--threads", "1", "-p", "Once"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = parse_lines(r.out);
  ASSERT_EQ(rows.size(), 1u);
  double s = 0.0;
  for (double x : rows[0]) s += x * x;
  EXPECT_NEAR(std::sqrt(s), 1.0, 1e-5);
  const auto bad = test::run_command({test::strata_binary(), "embed", "-m", stories()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(bad.out.empty());
  EXPECT_NE(bad.err.find("nothing to embed"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace strata
