#include "engine/spec/draft_rounds.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/check.h"

namespace strata {
namespace {

// Probability of the most likely token under softmax(logits) (for the p_min cut-off).
float top_probability(const float* logits, int32_t n) {
  const float mx = *std::max_element(logits, logits + n);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - mx));
  return static_cast<float>(1.0 / sum);
}

// Picks the next draft token of `s` from its draft logits row; false when drafting stops.
bool pick(DraftSlot& s, const float* row, int32_t n_vocab, std::vector<uint8_t>& mask, TokenDistribution& q) {
  const uint8_t* allowed = nullptr;
  if (s.constraint) {
    std::fill(mask.begin(), mask.end(), uint8_t{1});
    s.constraint->mask(mask.data());
    allowed = mask.data();
  }
  s.sampler->distribution(row, allowed, q);
  const bool greedy = q.tokens.size() == 1;
  const float top =
      greedy ? top_probability(row, n_vocab) : *std::max_element(q.probs.begin(), q.probs.end());
  if (top < s.p_min) return false;
  const int64_t ahead = static_cast<int64_t>(s.draft.size());
  const int32_t d = greedy ? q.tokens[0] : q.draw(s.sampler->uniform(RandomStream::Draft, ahead));
  if (s.constraint && !s.constraint->accept(d)) return false;
  s.draft.push_back(d);
  if (!greedy) s.q.push_back(q);
  return true;
}

}  // namespace

void DraftTiming::observe(int64_t n_seqs, double seconds) {
  if (n_seqs <= 0 || !(seconds > 0.0) || !std::isfinite(seconds)) return;
  if (!warm_) {
    warm_ = true;
    return;
  }
  if (rounds_.empty()) {
    rounds_.set_samples({{n_seqs, seconds}});
    return;
  }
  // A round far slower than the estimate (the machine was busy) counts as 3x it: a drafter
  // priced out by one slow round would never be asked again, so never measured again.
  rounds_.observe(n_seqs, std::min(seconds, 3.0 * rounds_.seconds(n_seqs)));
}

std::vector<int64_t> run_draft_rounds(const DraftRoundsInput& in, std::span<DraftSlot* const> slots,
                                      const std::vector<int64_t>& start) {
  STRATA_CHECK(start.size() == slots.size());
  std::vector<int64_t> fed(slots.size(), 0);
  std::vector<uint8_t> active(slots.size(), 0);
  std::vector<int32_t> row_of(slots.size(), -1);
  ForwardBatch batch;
  batch.skip_layers = in.skip_layers;
  int64_t budget = in.max_catch_up;
  // Round 0: catch up (capped; a sequence that cannot finish its catch-up drafts nothing now).
  for (size_t i = 0; i < slots.size(); ++i) {
    const auto& t = *slots[i]->tokens;
    const int64_t end = static_cast<int64_t>(t.size());
    const int64_t n = std::min(end - start[i], std::max<int64_t>(budget, 1));
    if (n <= 0) continue;
    budget -= n;
    const bool complete = start[i] + n == end;
    const bool drafts = complete && slots[i]->max_draft > 0;
    const auto seq = static_cast<int32_t>(batch.block_tables.size());
    batch.block_tables.push_back(slots[i]->blocks);
    for (int64_t p = start[i]; p < start[i] + n; ++p)
      batch.add(t[static_cast<size_t>(p)], static_cast<int32_t>(p), seq, drafts && p + 1 == end);
    fed[i] = n;
    active[i] = drafts;
  }
  std::vector<uint8_t> mask(static_cast<size_t>(in.n_vocab), 1);
  TokenDistribution q;
  std::vector<int32_t> accepted_in_constraint(slots.size(), 0);
  while (batch.n_tokens() > 0) {
    const int64_t n_drafting = std::count(active.begin(), active.end(), uint8_t{1});
    const auto t0 = std::chrono::steady_clock::now();
    const float* logits = in.executor->execute({}, batch);
    if (in.timing && n_drafting == batch.n_tokens())
      in.timing->observe(n_drafting,
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    int64_t row = 0;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!active[i]) continue;
      DraftSlot& s = *slots[i];
      const bool ok = pick(s, logits + row++ * in.n_vocab, in.n_vocab, mask, q);
      if (ok && s.constraint) ++accepted_in_constraint[i];
      active[i] = ok && static_cast<int32_t>(s.draft.size()) < s.max_draft;
    }
    // The next round feeds each drafting sequence its newest draft.
    batch.clear();
    batch.skip_layers = in.skip_layers;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!active[i]) continue;
      DraftSlot& s = *slots[i];
      const auto seq = static_cast<int32_t>(batch.block_tables.size());
      batch.block_tables.push_back(s.blocks);
      const int64_t pos = static_cast<int64_t>(s.tokens->size()) + static_cast<int64_t>(s.draft.size()) - 1;
      batch.add(s.draft.back(), static_cast<int32_t>(pos), seq, true);
      ++fed[i];
    }
  }
  // Drafts were only tentatively accepted by the constraints: the engine accepts what verifies.
  for (size_t i = 0; i < slots.size(); ++i)
    if (accepted_in_constraint[i] > 0) slots[i]->constraint->rollback(accepted_in_constraint[i]);
  return fed;
}

}  // namespace strata
