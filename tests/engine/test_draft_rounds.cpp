// Model drafting rounds (draft_rounds.h): where a draft stops. The adaptive cut-off compares the
// product of the drafter's top-token probabilities with the controller's break-even per draft;
// p_min compares each token's own probability; max_draft caps. A scripted executor gives the
// drafter's distribution of each round, so the expected stops are worked out by hand.
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
  Slot(int32_t max_draft, float p_min, std::vector<float> min_joint) {
    slot.tokens = &tokens;
    slot.blocks = &blocks;
    slot.sampler = &sampler;
    slot.max_draft = max_draft;
    slot.p_min = p_min;
    slot.min_joint = std::move(min_joint);
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
  EXPECT_GT(timing.seconds_per_token(), 0.0);  // every round fed one token per drafting slot
  return s.slot.draft;
}

TEST(DraftRounds, StopsWhereTheJointProbabilityFallsBelowTheBreakEven) {
  // Joint 0.9, 0.72, 0.432: the third draft is below its break-even 0.5.
  Slot s(8, 0.0f, {0.5f, 0.5f, 0.5f, 0.5f});
  int rounds = 0;
  EXPECT_EQ(draft({0.9, 0.8, 0.6, 0.99}, s, &rounds), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(s.slot.cut_unsure);
  EXPECT_EQ(rounds, 3);
}

TEST(DraftRounds, BreakEvenRisingWithTheDraftPosition) {
  // Joint 0.95, 0.9025, 0.857: above 0.5 and 0.8, below the third's 0.9.
  Slot s(8, 0.0f, {0.5f, 0.8f, 0.9f});
  EXPECT_EQ(draft({0.95, 0.95, 0.95, 0.95}, s), (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(s.slot.cut_unsure);
}

TEST(DraftRounds, WithoutCutOffsDraftsUpToMaxDraft) {
  Slot s(3, 0.0f, {});
  int rounds = 0;
  EXPECT_EQ(draft({0.3, 0.3, 0.3, 0.3}, s, &rounds), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FALSE(s.slot.cut_unsure);
  EXPECT_EQ(rounds, 3);
  // Past the end of min_joint, no cut-off either.
  Slot t(3, 0.0f, {0.2f});
  EXPECT_EQ(draft({0.3, 0.3, 0.3, 0.3}, t), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_FALSE(t.slot.cut_unsure);
}

TEST(DraftRounds, PMinCutsOnEachTokensOwnProbability) {
  // 0.9 then 0.8 < p_min 0.85: one draft; a p_min stop is not an unsure cut.
  Slot s(8, 0.85f, {});
  EXPECT_EQ(draft({0.9, 0.8, 0.99}, s), (std::vector<int32_t>{0}));
  EXPECT_FALSE(s.slot.cut_unsure);
}

TEST(DraftTiming, AveragesSecondsPerToken) {
  DraftTiming t;
  EXPECT_EQ(t.seconds_per_token(), 0.0);
  t.observe(2, 1.0);  // 0.5 s per token
  t.observe(1, 1.5);
  EXPECT_DOUBLE_EQ(t.seconds_per_token(), 1.0);
  t.observe(0, 5.0);  // nothing fed: ignored
  t.observe(1, -1.0);
  EXPECT_DOUBLE_EQ(t.seconds_per_token(), 1.0);
}

}  // namespace
}  // namespace strata
