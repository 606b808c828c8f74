// The decoder on the current architectures against llama.cpp: small random-weight models of
// qwen3, qwen3moe, gemma2, gemma3, phi3, Mixtral-style llama, deepseek2 (V3 and V2-Lite style),
// gpt-oss and olmo2 in F16, Q8_0 and Q4_K_M (../shared/models/arch), with llama.cpp's logits at
// every prompt position and its 32 greedy tokens (../shared/reference/arch).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "common/fixtures.h"
#include "engine/session.h"
#include "model/model.h"
#include "routing_probe.h"

namespace strata {
namespace {

struct RefCase {
  std::string prompt;
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
  std::vector<int32_t> greedy;
  std::string greedy_bytes;  // the continuation's raw bytes (greedy_text_hex; may be invalid UTF-8)
};

std::vector<RefCase> load_reference(const std::string& name) {
  std::ifstream in(test::shared_path("reference/arch/" + name + ".jsonl"));
  std::vector<RefCase> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    const std::string hex = j["greedy_text_hex"];
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
      bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    out.push_back({j["prompt"], j["tokens"], j["logits"], j["greedy"], bytes});
  }
  return out;
}

struct ArchCase {
  std::string model;  // ARCH-TYPE
  double rel_l2;      // the limits: 2e-3 for F16, 3e-2 for quantized types
  // A routing decision closer than this to going the other way is a near-tie: llama.cpp may
  // route that token differently. 1e-3 as the greedy rule for F16; the quantized
  // references run with 8-bit activations and differ from an exact computation ~10x more
  // (README of ../shared), and so do their router scores.
  double route_tie;
};

std::vector<ArchCase> arch_cases() {
  std::vector<ArchCase> cases;
  for (const char* arch : {"qwen3", "qwen3moe", "gemma2", "gemma3", "phi3", "llama-moe", "deepseek2",
                           "deepseek2-lite", "gpt-oss", "olmo2"})
    for (const char* type : {"f16", "q8_0", "q4_k_m"})
      cases.push_back({std::string(arch) + "-" + type, std::string(type) == "f16" ? 2e-3 : 3e-2,
                       std::string(type) == "f16" ? 1e-3 : 1e-2});
  return cases;
}

std::unique_ptr<Model> load_model(Backend& backend, const std::string& name) {
  return Model::load(test::shared_path("models/arch/" + name + ".gguf"), backend);
}

class ArchReference : public ::testing::TestWithParam<ArchCase> {};

// Relative L2 error of the logits at every prompt position, worst prompt of the model. A
// position whose own error exceeds the limit is excused when a routing near-tie happened at it or
// before it (a token routed differently changes its own output and, through attention, later
// ones); at most a quarter of the positions may be excused.
TEST_P(ArchReference, LogitsMatchLlamaCpp) {
  const ArchCase& c = GetParam();
  auto probe = std::make_unique<test::RoutingProbe>(make_cpu_backend(1));
  test::RoutingProbe& routing = *probe;
  std::unique_ptr<Backend> backend = std::move(probe);
  auto model = load_model(*backend, c.model);
  const auto cases = load_reference(c.model);
  ASSERT_FALSE(cases.empty());
  const size_t n_vocab = static_cast<size_t>(model->config().n_vocab);
  double worst = 0.0;
  size_t excused = 0, total = 0;
  for (const RefCase& rc : cases) {
    EXPECT_EQ(model->tokenizer().encode(rc.prompt, true, false), rc.tokens) << rc.prompt;
    Session session(*model, static_cast<int64_t>(rc.tokens.size()));
    routing.clear();
    const auto& logits = session.eval(rc.tokens, /*all_logits=*/true);
    ASSERT_EQ(rc.logits.size(), rc.tokens.size());
    const std::vector<double>& margins = routing.token_margins();
    bool tie_seen = false;
    double num = 0.0, den = 0.0;
    for (size_t t = 0; t < rc.tokens.size(); ++t) {
      ASSERT_EQ(rc.logits[t].size(), n_vocab);
      double pn = 0.0, pd = 0.0;
      for (size_t j = 0; j < n_vocab; ++j) {
        const double d = static_cast<double>(logits[t * n_vocab + j]) - rc.logits[t][j];
        pn += d * d;
        pd += static_cast<double>(rc.logits[t][j]) * rc.logits[t][j];
      }
      tie_seen = tie_seen || (t < margins.size() && margins[t] < c.route_tie);
      if (tie_seen && std::sqrt(pn / pd) > c.rel_l2) {
        ++excused;
        std::printf("%s '%s': position %zu (error %.1e) excused by a routing near-tie\n", c.model.c_str(),
                    rc.prompt.c_str(), t, std::sqrt(pn / pd));
        continue;
      }
      num += pn;
      den += pd;
    }
    worst = std::max(worst, std::sqrt(num / den));
    total += rc.tokens.size();
  }
  std::printf("%-22s worst relative L2 %.3e (limit %.1e), %zu of %zu positions excused\n", c.model.c_str(),
              worst, c.rel_l2, excused, total);
  EXPECT_LE(worst, c.rel_l2);
  EXPECT_LE(excused * 4, total) << "too many routing near-ties to judge the model";
}

// Greedy continuations equal llama.cpp's 32 tokens per prompt. A divergence is accepted only at
// a near-tie, and the rest of that prompt's continuation is then not compared: the two
// candidates' logits closer than the logits comparison's own noise (2 x its relative limit x the
// RMS of the step's logits; judged on our logits, as the reference has none past the prompt),
// or a routing near-tie earlier in the sequence.
//
// The 1e-3 is tighter than the reference itself: on these models llama.cpp's F16 logits
// are 1.0-1.2e-3 (relative L2) from an exact float64 forward pass (measured with an independent
// Python implementation of qwen3 and gemma3), Strata's 0.7-0.9e-3, so gaps of a few 1e-3 are
// within the noise of both; the quantized references differ by 1-3%.
TEST_P(ArchReference, GreedyTokensMatchLlamaCpp) {
  const ArchCase& c = GetParam();
  auto probe = std::make_unique<test::RoutingProbe>(make_cpu_backend(1));
  test::RoutingProbe& routing = *probe;
  std::unique_ptr<Backend> backend = std::move(probe);
  auto model = load_model(*backend, c.model);
  const int64_t n_vocab = model->config().n_vocab;
  for (const RefCase& rc : load_reference(c.model)) {
    ASSERT_EQ(rc.greedy.size(), 32u);
    Session session(*model, static_cast<int64_t>(rc.tokens.size() + rc.greedy.size()));
    double route_margin = std::numeric_limits<double>::infinity();
    auto step = [&](const std::vector<int32_t>& tokens) {
      routing.clear();
      const std::vector<float>* l = &session.eval(tokens);
      for (double m : routing.token_margins()) route_margin = std::min(route_margin, m);
      return l;
    };
    const std::vector<float>* logits = step(rc.tokens);
    size_t i = 0;
    for (; i < rc.greedy.size(); ++i) {
      const float* l = logits->data();
      const int32_t best = static_cast<int32_t>(std::max_element(l, l + n_vocab) - l);
      if (best != rc.greedy[i]) {
        const float gap = l[best] - l[rc.greedy[i]];
        double ss = 0.0;
        for (int64_t j = 0; j < n_vocab; ++j) ss += static_cast<double>(l[j]) * l[j];
        const double tie = 2.0 * c.rel_l2 * std::sqrt(ss / static_cast<double>(n_vocab));
        EXPECT_TRUE(gap < tie || route_margin < c.route_tie)
            << rc.prompt << ": diverged at step " << i << " without a near-tie (logit gap " << gap
            << ", tie below " << tie << ", smallest routing margin " << route_margin << ")";
        std::printf(
            "%s '%s': near-tie at step %zu (logit gap %.2e, routing margin %.1e), rest not compared\n",
            c.model.c_str(), rc.prompt.c_str(), i, static_cast<double>(gap), route_margin);
        break;
      }
      logits = step({best});
    }
    if (i == rc.greedy.size()) {
      std::string text;
      for (int32_t id : rc.greedy) text += model->tokenizer().token_to_piece(id);
      EXPECT_EQ(text, rc.greedy_bytes) << rc.prompt;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, ArchReference, ::testing::ValuesIn(arch_cases()),
                         [](const auto& info) {
                           std::string n = info.param.model;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
