// Score-based eviction end to end against an independent float64 reference (tests/kv/
// evict_reference.py, the llama formulas in plain Python): for snapkv, h2o and recent, each
// token generated after an eviction has the logits of a forward pass in which every query after
// the eviction attends to exactly the kept tokens (per layer and kv head, at their original
// positions) and the later ones; h2o's kept tokens are the heaviest by the reference's own
// accumulated attention (over all queries, each over what it could see), again at every block
// of generation; recent keeps exactly the last budget + window tokens. A positive control shows
// the reference's masking matters: without it the logits differ.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine_test_util.h"

namespace strata {
namespace {

using test::Collector;
using test::RequestResult;

constexpr int32_t kBudget = 12, kWindow = 8, kBlock = 16, kPrompt = 64, kGenerated = 40;

struct Generation {
  std::vector<TokenOutput> outputs;
  std::vector<KvEvictionEvent> events;
  std::vector<int32_t> prompt;
};

const char* kText =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
    "friends. One day, she saw a big red ball under a tree. She ran to get it, but a dog took it first. "
    "Lily was sad, but her mom said they could share.";

EngineConfig config(KvEvictMethod method) {
  EngineConfig cfg;
  cfg.block_size = kBlock;
  cfg.kv_cache_tokens = 1024;
  cfg.max_batched_tokens = 24;  // the prompt's queries are scored over several chunks
  cfg.prefix_caching = false;
  cfg.kv_type.k = cfg.kv_type.v = KvType::F32;  // the reference computes exactly
  cfg.kv_evict = {kBudget, kWindow, 3, method};
  return cfg;
}

Generation generate(KvEvictMethod method) {
  Model& m = *test::stories().model;
  Generation g;
  EngineConfig cfg = config(method);
  cfg.kv_evict_observer = [&g](const KvEvictionEvent& ev) { g.events.push_back(ev); };
  Engine e(m, cfg);
  RequestParams p = test::greedy_params(m, kText, kGenerated);
  p.stop.ignore_eos = true;
  p.top_logprobs = 20;
  EXPECT_GE(int(p.prompt.size()), kPrompt);
  p.prompt.resize(kPrompt);
  g.prompt = p.prompt;
  RequestResult r;
  e.submit(p, [&](const EngineEvent& ev) {
    for (const TokenOutput& t : ev.tokens) g.outputs.push_back(t);
    if (ev.request_done) r.done = true;
  });
  while (!r.done && e.step()) {
  }
  EXPECT_TRUE(r.done);
  EXPECT_EQ(int(g.outputs.size()), kGenerated);
  return g;
}

std::vector<int32_t> all_tokens(const Generation& g) {
  std::vector<int32_t> t = g.prompt;
  for (size_t i = 0; i + 1 < g.outputs.size(); ++i) t.push_back(g.outputs[i].token);
  return t;
}

nlohmann::json reference(const std::vector<int32_t>& tokens, const std::vector<KvEvictionEvent>& events) {
  nlohmann::json spec;
  spec["tokens"] = tokens;
  spec["events"] = nlohmann::json::array();
  for (const KvEvictionEvent& ev : events)
    spec["events"].push_back({{"from", ev.n_computed}, {"kept", ev.kept}});
  // One file per test and process: ctest runs these tests in parallel, and a shared name let one
  // test read another's spec.
  const std::string path = ::testing::TempDir() + "evict_reference_spec_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                           std::to_string(::getpid()) + ".json";
  std::ofstream(path) << spec.dump();
  const auto r = test::run_command({"python3", test::source_dir() + "/tests/kv/evict_reference.py",
                                    test::shared_path("models/stories260K/stories260K.gguf"), path});
  std::remove(path.c_str());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

// Each generated token's top-20 log-probabilities against the reference's log-softmax at the
// position that predicts it; the greedy choice is the reference's argmax (up to a near-tie).
void expect_logits_match(const Generation& g, const nlohmann::json& ref) {
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const auto& row = ref["logits"][kPrompt - 1 + i];
    std::vector<double> lg = row.get<std::vector<double>>();
    const double mx = *std::max_element(lg.begin(), lg.end());
    double z = 0;
    for (double v : lg) z += std::exp(v - mx);
    const double lse = mx + std::log(z);
    for (const TokenLogprob& t : g.outputs[i].top)
      EXPECT_NEAR(t.logprob, lg[size_t(t.token)] - lse, 2e-3) << "generated token " << i;
    EXPECT_LT(mx - lg[size_t(g.outputs[i].token)], 1e-3) << "generated token " << i;
  }
}

void expect_events_well_formed(const Generation& g) {
  const ModelConfig& c = test::stories().model->config();
  for (const KvEvictionEvent& ev : g.events) {
    ASSERT_EQ(int64_t(ev.kept.size()), c.n_layer * c.n_head_kv);
    for (const auto& k : ev.kept) {
      ASSERT_EQ(int(k.size()), kBudget + kWindow);
      EXPECT_TRUE(std::is_sorted(k.begin(), k.end()));
      EXPECT_EQ(std::set<int32_t>(k.begin(), k.end()).size(), k.size());
      for (int32_t j = 0; j < kWindow; ++j) EXPECT_EQ(k[size_t(kBudget + j)], ev.n_computed - kWindow + j);
    }
  }
}

TEST(EngineKvEvictReference, RecentKeepsTheLastTokensAndAttendsToThemOnly) {
  const Generation g = generate(KvEvictMethod::Recent);
  ASSERT_EQ(g.events.size(), 1u);  // the prompt only
  EXPECT_EQ(g.events[0].n_computed, kPrompt);
  expect_events_well_formed(g);
  for (const auto& k : g.events[0].kept)
    for (int32_t j = 0; j < kBudget + kWindow; ++j) EXPECT_EQ(k[size_t(j)], kPrompt - kBudget - kWindow + j);
  const nlohmann::json ref = reference(all_tokens(g), g.events);
  expect_logits_match(g, ref);
  // Positive control: the same tokens without the mask give other logits after the eviction.
  const nlohmann::json full = reference(all_tokens(g), {});
  double diff = 0;
  for (size_t i = kPrompt; i < ref["logits"].size(); ++i)
    for (size_t v = 0; v < ref["logits"][i].size(); ++v)
      diff = std::max(diff, std::abs(double(ref["logits"][i][v]) - double(full["logits"][i][v])));
  EXPECT_GT(diff, 0.05);
}

TEST(EngineKvEvictReference, SnapKvAttendsToExactlyItsKeptTokens) {
  const Generation g = generate(KvEvictMethod::SnapKv);
  ASSERT_EQ(g.events.size(), 1u);
  expect_events_well_formed(g);
  expect_logits_match(g, reference(all_tokens(g), g.events));
}

TEST(EngineKvEvictReference, H2OKeepsTheHeaviestHittersAtThePromptAndEveryBlockOfGeneration) {
  const Generation g = generate(KvEvictMethod::H2O);
  // The prompt's eviction leaves budget + window tokens; then one every block of generation.
  std::vector<int64_t> at;
  for (const auto& ev : g.events) at.push_back(ev.n_computed);
  std::vector<int64_t> want = {kPrompt};
  for (int64_t p = kPrompt + kBlock; p < kPrompt + kGenerated; p += kBlock) want.push_back(p);
  EXPECT_EQ(at, want);
  expect_events_well_formed(g);
  const nlohmann::json ref = reference(all_tokens(g), g.events);
  expect_logits_match(g, ref);
  // At each eviction, among the candidates (what the last query could see, less the window),
  // the kept ones carry at least the reference score of every one evicted.
  for (size_t e = 0; e < g.events.size(); ++e) {
    const KvEvictionEvent& ev = g.events[e];
    for (size_t r = 0; r < ev.kept.size(); ++r) {
      std::set<int32_t> candidates;
      if (e == 0)
        for (int32_t j = 0; j < ev.n_computed; ++j) candidates.insert(j);
      else {
        candidates.insert(g.events[e - 1].kept[r].begin(), g.events[e - 1].kept[r].end());
        for (int64_t j = g.events[e - 1].n_computed; j < ev.n_computed; ++j) candidates.insert(int32_t(j));
      }
      for (int32_t j = 0; j < kWindow; ++j) candidates.erase(int32_t(ev.n_computed - kWindow + j));
      const std::set<int32_t> heavy(ev.kept[r].begin(), ev.kept[r].begin() + kBudget);
      const std::vector<double> score = ref["scores"][e][r].get<std::vector<double>>();
      double min_kept = 1e300, max_evicted = -1e300;
      for (int32_t j : candidates) {
        ASSERT_LT(size_t(j), score.size());
        if (heavy.count(j))
          min_kept = std::min(min_kept, score[size_t(j)]);
        else
          max_evicted = std::max(max_evicted, score[size_t(j)]);
      }
      EXPECT_EQ(heavy.size(), size_t(kBudget));
      for (int32_t j : heavy)
        EXPECT_TRUE(candidates.count(j)) << "event " << e << " row " << r << " kept " << j;
      EXPECT_GE(min_kept, max_evicted - 1e-4 * std::max(1.0, max_evicted)) << "event " << e << " row " << r;
    }
  }
}

}  // namespace
}  // namespace strata
