// Model drafting rounds (draft_rounds.h): where a draft stops (p_min compares each token's own
// probability, max_draft caps) and the timing of the rounds that price a draft token. A
// scripted executor gives the drafter's distribution of each round, so the expected stops are
// worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/spec/draft_rounds.h"
#include "sampling/sampler.h"

namespace strata {
namespace {

constexpr int32_t kVocab = 4;

// Round r: every row's top token is r % kVocab with probability top[r], the rest share the remainder.
class ScriptedExecutor final : public Executor {
 public:
  explicit ScriptedExecutor(std::vector<double> top) : top_(std::move(top)) {}
  const ModelConfig& config() const override { return config_; }
  size_t kv_bytes_per_block() const override { return 0; }
  const float* execute(const std::vector<BlockCopy>&, const ForwardBatch& batch) override {
    const double p = top_.at(static_cast<size_t>(rounds_));
    const int32_t best = rounds_ % kVocab;
    logits_.clear();
    for (int64_t t = 0; t < batch.n_tokens(); ++t) {
      if (!batch.want_logits[static_cast<size_t>(t)]) continue;
      for (int32_t v = 0; v < kVocab; ++v)
        logits_.push_back(static_cast<float>(std::log(v == best ? p : (1.0 - p) / (kVocab - 1))));
    }
    ++rounds_;
    return logits_.data();
  }
  const float* hidden() const override { return nullptr; }
  int rounds() const { return rounds_; }

 private:
  std::vector<double> top_;
  ModelConfig config_;
  std::vector<float> logits_;
  int rounds_ = 0;
};

SamplingParams greedy() {
  SamplingParams sp;
  sp.temperature = 0.0f;
  return sp;
}

struct Slot {
  std::vector<int32_t> tokens{1, 2, 3};
  std::vector<BlockId> blocks{0};
  Sampler sampler{greedy(), kVocab};
  DraftSlot slot;
  Slot(int32_t max_draft, float p_min) {
    slot.tokens = &tokens;
    slot.blocks = &blocks;
    slot.sampler = &sampler;
    slot.max_draft = max_draft;
    slot.p_min = p_min;
  }
};

std::vector<int32_t> draft(std::vector<double> top, Slot& s, int* rounds = nullptr) {
  ScriptedExecutor ex(std::move(top));
  DraftRoundsInput in;
  in.executor = &ex;
  in.n_vocab = kVocab;
  DraftTiming timing;
  in.timing = &timing;
  DraftSlot* p = &s.slot;
  run_draft_rounds(in, {&p, 1}, {static_cast<int64_t>(s.tokens.size()) - 1});
  if (rounds) *rounds = ex.rounds();
  // Every round fed one token of the one drafting slot: all but the warm-up round are timed.
  if (ex.rounds() > 1) {
    EXPECT_GT(timing.round_seconds(1), 0.0);
  }
  return s.slot.draft;
}

TEST(DraftRounds, WithoutPMinDraftsUpToMaxDraft) {
  Slot s(3, 0.0f);
  int rounds = 0;
  EXPECT_EQ(draft({0.3, 0.3, 0.3, 0.3}, s, &rounds), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(rounds, 3);
}

TEST(DraftRounds, PMinCutsOnEachTokensOwnProbability) {
  // 0.9 then 0.8 < p_min 0.85: one draft, after two rounds.
  Slot s(8, 0.85f);
  int rounds = 0;
  EXPECT_EQ(draft({0.9, 0.8, 0.99}, s, &rounds), (std::vector<int32_t>{0}));
  EXPECT_EQ(rounds, 2);
}

TEST(DraftTiming, EstimatesARoundBySizeAfterAWarmUpRound) {
  DraftTiming t;
  EXPECT_EQ(t.round_seconds(1), 0.0);
  t.observe(1, 9.0);  // the warm-up: not counted
  EXPECT_EQ(t.round_seconds(1), 0.0);
  t.observe(4, 0.2);  // a round of 4 sequences
  // One size seen: rounds up to it cost as much (a memory-bound draft reads its weights once
  // per round), larger ones proportionally more.
  EXPECT_DOUBLE_EQ(t.round_seconds(1), 0.2);
  EXPECT_DOUBLE_EQ(t.round_seconds(4), 0.2);
  EXPECT_DOUBLE_EQ(t.round_seconds(8), 0.4);
  t.observe(1, 0.14);  // a new size class
  EXPECT_DOUBLE_EQ(t.round_seconds(1), 0.14);
  EXPECT_DOUBLE_EQ(t.round_seconds(2), 0.14 + 0.06 / 3.0);
  t.observe(0, 5.0);  // nothing fed: ignored
  t.observe(1, -1.0);
  EXPECT_DOUBLE_EQ(t.round_seconds(1), 0.14);
  // A round 100x slower counts as 3x the estimate, with a slow round's weight 0.1.
  t.observe(1, 14.0);
  EXPECT_DOUBLE_EQ(t.round_seconds(1), 0.9 * 0.14 + 0.1 * 0.42);
}

}  // namespace
}  // namespace strata
