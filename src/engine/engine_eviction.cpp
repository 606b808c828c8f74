// Score-based KV eviction in the engine (SnapKV, kv/kv_evict_policy.h): the scheduler stops a
// sequence's prefill at its eviction point; the chunks covering the observation window score
// their queries into the sequence's accumulator; once the point is reached, every (layer, kv
// head) keeps its best-scored tokens and the window, compacted into fewer blocks.
#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "engine/engine_core.h"

namespace strata {

AttentionScoreSink EngineCore::score_sink(Sequence& s, int64_t n_real) {
  AttentionScoreSink sk;
  if (!s.evict_pending()) return sk;
  const int64_t first = s.evict_at - config_.kv_evict.window;
  if (s.n_computed + n_real <= first) return sk;  // the window starts in a later chunk
  const ModelConfig& c = model_.config();
  const size_t n = static_cast<size_t>(c.n_layer * c.n_head_kv * s.evict_at);
  if (s.n_computed <= first || s.evict_scores.size() != n) s.evict_scores.assign(n, 0.0f);
  sk.acc = s.evict_scores.data();
  sk.n_keys = static_cast<int32_t>(s.evict_at);
  sk.first_pos = static_cast<int32_t>(first);
  sk.end_pos = static_cast<int32_t>(s.evict_at);
  return sk;
}

void EngineCore::evict(Sequence& s) {
  const KvEvictPolicy& ep = config_.kv_evict;
  const ModelConfig& c = model_.config();
  const int64_t n_prefix = s.evict_at - ep.window;  // tokens scored; the window after them stays
  const int64_t n_keep = ep.budget + (s.n_computed - n_prefix);
  const int32_t bs = kv_->block_size();
  std::vector<float> scores = std::move(s.evict_scores);
  s.evict_scores = {};
  STRATA_CHECK(n_prefix > ep.budget &&
               scores.size() == static_cast<size_t>(c.n_layer * c.n_head_kv * s.evict_at));
  KvCompaction plan;
  if (!kv_->plan_compaction(s.kv, n_keep, plan)) {
    metrics_.kv_evictions_skipped.add(1);
    return;  // no room for the copies: the sequence keeps its whole prompt
  }
  auto slot = [bs](const std::vector<BlockId>& table, int64_t i) {
    return static_cast<int64_t>(table[static_cast<size_t>(i / bs)]) * bs + i % bs;
  };
  // Per layer: each head's kept prompt tokens to slots [0, budget) (increasing, so a move never
  // overwrites a slot a later move reads), then the window and anything after it, all heads.
  std::vector<std::vector<KvTokenMove>> moves(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    auto& m = moves[static_cast<size_t>(il)];
    for (int32_t g = 0; g < c.n_head_kv; ++g) {
      const float* sc = scores.data() + (il * c.n_head_kv + g) * s.evict_at;
      const std::vector<int32_t> kept = snapkv_select(sc, static_cast<int32_t>(n_prefix), ep.budget, ep.pool);
      for (size_t d = 0; d < kept.size(); ++d)
        m.push_back({slot(s.kv.blocks, kept[d]), slot(plan.blocks, static_cast<int64_t>(d)), g});
    }
    for (int64_t d = ep.budget; d < n_keep; ++d)
      m.push_back({slot(s.kv.blocks, n_prefix + d - ep.budget), slot(plan.blocks, d), -1});
  }
  target_->move_kv_tokens(moves);
  const int64_t n_evicted = n_prefix - ep.budget;
  kv_->commit_compaction(s.kv, std::move(plan), n_evicted);
  metrics_.kv_evicted_tokens.add(static_cast<double>(n_evicted));
  log_debug("KV eviction: request ", s.request->id, " kept ", n_keep, " of ", s.n_computed, " tokens");
}

}  // namespace strata
