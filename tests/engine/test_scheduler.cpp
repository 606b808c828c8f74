// The scheduler alone, driven by a simulated forward pass: token budget, chunked prefill,
// sequence limit, preemption order and the static-batching baseline.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>

#include "engine/scheduler.h"

namespace strata {
namespace {

struct Harness {
  KvCacheManager kv;
  Scheduler sched;
  std::vector<std::unique_ptr<RequestState>> requests;

  Harness(int32_t n_blocks, SchedulerConfig cfg) : kv(n_blocks, 16, false), sched(cfg, kv) {}

  Sequence* submit(int64_t n_prompt) {
    auto r = std::make_unique<RequestState>();
    auto s = std::make_unique<Sequence>();
    s->request = r.get();
    s->tokens.assign(static_cast<size_t>(n_prompt), 7);
    s->n_prompt = n_prompt;
    Sequence* seq = s.get();
    r->seqs.push_back(std::move(s));
    requests.push_back(std::move(r));
    sched.add_waiting(seq);
    return seq;
  }

  // Runs the scheduled chunks as the engine would: a sequence whose tokens are all computed
  // samples one more token.
  ScheduleOutput step() {
    ScheduleOutput out = sched.schedule();
    for (const ScheduledChunk& c : out.chunks) {
      EXPECT_EQ(c.seq->status, SequenceStatus::Running);
      EXPECT_GE(static_cast<int64_t>(c.seq->kv.blocks.size()) * 16, c.seq->n_computed + c.n_tokens);
      c.seq->n_computed += c.n_tokens;
      if (c.seq->n_uncomputed() == 0) c.seq->tokens.push_back(9);
    }
    return out;
  }

  void finish(Sequence* s) {
    sched.remove(s);
    kv.free(s->kv);
    s->status = SequenceStatus::Finished;
  }
};

int64_t tokens_of(const ScheduleOutput& out, const Sequence* s) {
  int64_t n = 0;
  for (const ScheduledChunk& c : out.chunks)
    if (c.seq == s) n += c.n_tokens;
  return n;
}

int64_t total_tokens(const ScheduleOutput& out) {
  int64_t n = 0;
  for (const ScheduledChunk& c : out.chunks) n += c.n_tokens;
  return n;
}

TEST(Scheduler, ChunkedPrefillNeverStallsRunningDecodes) {
  Harness h(1000, {.max_batched_tokens = 64, .max_num_seqs = 8});
  Sequence* a = h.submit(10);
  Sequence* b = h.submit(12);
  h.step();  // both prompts fit the budget
  Sequence* big = h.submit(1000);
  int steps = 0;
  while (big->n_generated() == 0) {
    const ScheduleOutput out = h.step();
    ++steps;
    EXPECT_EQ(tokens_of(out, a), 1) << "step " << steps;  // a decode every step
    EXPECT_EQ(tokens_of(out, b), 1) << "step " << steps;
    EXPECT_EQ(tokens_of(out, big), std::min<int64_t>(62, 1000 - 62 * (steps - 1)));
    EXPECT_LE(total_tokens(out), 64);
  }
  EXPECT_EQ(steps, (1000 + 61) / 62);
}

TEST(Scheduler, AdmitsFirstComeFirstServedUpToTheSequenceLimit) {
  Harness h(1000, {.max_batched_tokens = 100, .max_num_seqs = 4});
  std::vector<Sequence*> s;
  for (int i = 0; i < 10; ++i) s.push_back(h.submit(30));
  const ScheduleOutput out = h.step();
  // 30 + 30 + 30 + 10: the fourth gets the rest of the budget as its first chunk.
  ASSERT_EQ(out.admitted.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.admitted[static_cast<size_t>(i)], s[static_cast<size_t>(i)]);
  EXPECT_EQ(tokens_of(out, s[3]), 10);
  EXPECT_EQ(h.sched.n_waiting(), 6u);
  const ScheduleOutput next = h.step();  // running first: three decodes, then 20 prompt tokens
  EXPECT_EQ(tokens_of(next, s[0]), 1);
  EXPECT_EQ(tokens_of(next, s[3]), 20);
  EXPECT_TRUE(next.admitted.empty());  // the sequence limit holds
}

TEST(Scheduler, OutOfBlocksPreemptsTheMostRecentlyAdmitted) {
  // 10 blocks of 16; three sequences of 48 tokens fill 9; growth needs more.
  Harness h(10, {.max_batched_tokens = 512, .max_num_seqs = 8});
  Sequence* a = h.submit(48);
  Sequence* b = h.submit(48);
  Sequence* c = h.submit(48);
  h.step();
  EXPECT_EQ(h.kv.pool().n_free(), 1);
  ScheduleOutput out = h.step();  // a takes the last free block; b needs one: c is preempted
  ASSERT_EQ(out.preempted.size(), 1u);
  EXPECT_EQ(out.preempted[0], c);
  EXPECT_EQ(c->status, SequenceStatus::Waiting);
  EXPECT_EQ(c->n_computed, 0);
  EXPECT_TRUE(c->kv.blocks.empty());
  EXPECT_EQ(h.sched.waiting().front(), c);
  EXPECT_EQ(tokens_of(out, a), 1);
  EXPECT_EQ(tokens_of(out, b), 1);
  EXPECT_EQ(tokens_of(out, c), 0);
  EXPECT_TRUE(out.admitted.empty());  // no admission in a step that preempted
  EXPECT_EQ(h.kv.pool().n_free() + h.kv.pool().n_used(), h.kv.pool().n_total());
  h.finish(a);
  out = h.step();  // room again: c comes back first
  ASSERT_EQ(out.admitted.size(), 1u);
  EXPECT_EQ(out.admitted[0], c);
}

TEST(Scheduler, StaticModeAdmitsTheWholeBatchAndNothingUntilItDrains) {
  Harness h(1000, {.max_batched_tokens = 64, .max_num_seqs = 8, .static_batching = true});
  std::vector<Sequence*> s;
  for (int i = 0; i < 12; ++i) s.push_back(h.submit(40));
  ScheduleOutput out = h.step();
  EXPECT_EQ(out.admitted.size(), 8u);  // the whole batch, though only 64 prompt tokens run now
  EXPECT_EQ(total_tokens(out), 64);
  EXPECT_EQ(h.sched.n_running(), 8u);
  // Prefill the batch over the next steps, then decode; finish all but one.
  for (int i = 0; i < 20; ++i) {
    out = h.step();
    EXPECT_TRUE(out.admitted.empty());
    EXPECT_LE(total_tokens(out), 64);
  }
  for (int i = 0; i < 8; ++i) EXPECT_GT(s[static_cast<size_t>(i)]->n_generated(), 0) << i;
  for (int i = 0; i < 7; ++i) h.finish(s[static_cast<size_t>(i)]);
  out = h.step();
  EXPECT_TRUE(out.admitted.empty());  // one of the batch still runs
  EXPECT_EQ(tokens_of(out, s[7]), 1);
  h.finish(s[7]);
  out = h.step();
  EXPECT_EQ(out.admitted.size(), 4u);  // the next batch: the remaining four
}

}  // namespace
}  // namespace strata
