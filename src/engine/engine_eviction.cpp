// Score-based KV eviction in the engine (snapkv, h2o, recent: kv/kv_evict_policy.h): the
// scheduler stops a sequence's prefill at its eviction point; the chunks whose queries are
// scored (snapkv: those covering the observation window; h2o: every chunk, and with generation
// every decode step) add their attention to the sequence's accumulator; once the point is
// reached, every (layer, kv head) keeps its chosen tokens and the window, compacted into fewer
// blocks. h2o compacts again whenever a generating sequence holds budget + window + block_size
// tokens.
#include <algorithm>

#include "core/check.h"
#include "core/log.h"
#include "engine/engine_core.h"

namespace strata {
namespace {

// Re-lays the accumulator out with room for `need` slots per (layer, kv head); new slots score 0.
void grow_scores(Sequence& s, int64_t rows, int64_t need, int64_t min_keys) {
  if (need <= s.evict_keys) return;
  const int64_t keys = std::max({need, 2 * s.evict_keys, min_keys});
  std::vector<float> sc(static_cast<size_t>(rows * keys), 0.0f);
  std::vector<int32_t> pos(static_cast<size_t>(rows * keys), 0);
  for (int64_t r = 0; r < rows && s.evict_keys > 0; ++r) {
    std::copy_n(s.evict_scores.begin() + r * s.evict_keys, s.evict_keys, sc.begin() + r * keys);
    std::copy_n(s.evict_pos.begin() + r * s.evict_keys, s.evict_keys, pos.begin() + r * keys);
  }
  s.evict_scores = std::move(sc);
  s.evict_pos = std::move(pos);
  s.evict_keys = keys;
}

}  // namespace

AttentionScoreSink EngineCore::score_sink(Sequence& s, int64_t n_real) {
  AttentionScoreSink sk;
  const KvEvictPolicy& ep = config_.kv_evict;
  if (!ep.scored() || !(s.evict_pending() || s.evict_track)) return sk;
  const ModelConfig& c = model_.config();
  const int64_t rows = c.n_layer * c.n_head_kv;
  if (ep.method == KvEvictMethod::SnapKv) {
    const int64_t first = s.evict_at - ep.window;
    if (s.n_computed + n_real <= first) return sk;  // the window starts in a later chunk
    if (s.n_computed <= first || s.evict_keys != s.evict_at) {
      s.evict_scores.assign(static_cast<size_t>(rows * s.evict_at), 0.0f);
      s.evict_keys = s.evict_at;
    }
    sk.first_pos = static_cast<int32_t>(first);
    sk.end_pos = static_cast<int32_t>(s.evict_at);
  } else {
    // H2O: every real row of the chunk (cache slots [first, end)); drafts never run with it.
    const int64_t first = s.n_computed - s.kv.pos_offset, end = first + n_real;
    if (first == 0) {  // a fresh prefill, or one after a preemption
      s.evict_scores.clear();
      s.evict_pos.clear();
      s.evict_keys = 0;
    }
    grow_scores(s, rows, end, static_cast<int64_t>(ep.budget) + ep.window + kv_->block_size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = first; j < end; ++j)
        s.evict_pos[static_cast<size_t>(r * s.evict_keys + j)] = static_cast<int32_t>(j + s.kv.pos_offset);
    sk.first_pos = static_cast<int32_t>(first);
    sk.end_pos = static_cast<int32_t>(end);
  }
  sk.acc = s.evict_scores.data();
  sk.n_keys = static_cast<int32_t>(s.evict_keys);
  return sk;
}

bool EngineCore::evict_due(const Sequence& s) const {
  const KvEvictPolicy& ep = config_.kv_evict;
  return s.evict_track && s.status != SequenceStatus::Finished && s.n_computed >= s.n_prompt &&
         s.n_computed - s.kv.pos_offset >= static_cast<int64_t>(ep.budget) + ep.window + kv_->block_size();
}

// Each (layer, kv head)'s chosen slots among the first n_prefix: [n_layer * n_head_kv].
std::vector<std::vector<int32_t>> EngineCore::evict_selection(const Sequence& s, int64_t n_prefix) const {
  const KvEvictPolicy& ep = config_.kv_evict;
  const ModelConfig& c = model_.config();
  const int64_t rows = c.n_layer * c.n_head_kv;
  const auto np = static_cast<int32_t>(n_prefix);
  std::vector<std::vector<int32_t>> kept(static_cast<size_t>(rows));
  if (ep.method == KvEvictMethod::Recent) {
    std::fill(kept.begin(), kept.end(), recent_select(np, ep.budget));
    return kept;
  }
  STRATA_CHECK(s.evict_keys >= s.n_computed - s.kv.pos_offset &&
               s.evict_scores.size() == static_cast<size_t>(rows * s.evict_keys));
  for (int64_t r = 0; r < rows; ++r) {
    const float* sc = s.evict_scores.data() + r * s.evict_keys;
    kept[static_cast<size_t>(r)] = ep.method == KvEvictMethod::SnapKv
                                       ? snapkv_select(sc, np, ep.budget, ep.pool)
                                       : h2o_select(sc, np, ep.budget);
  }
  return kept;
}

void EngineCore::evict(Sequence& s) {
  const KvEvictPolicy& ep = config_.kv_evict;
  const ModelConfig& c = model_.config();
  const int64_t n_slots = s.n_computed - s.kv.pos_offset;
  const int64_t n_prefix = n_slots - ep.window;  // slots chosen among; the window after them stays
  const int64_t n_keep = static_cast<int64_t>(ep.budget) + ep.window;
  const int64_t rows = c.n_layer * c.n_head_kv;
  const int32_t bs = kv_->block_size();
  STRATA_CHECK(n_prefix > ep.budget);
  KvCompaction plan;
  if (!kv_->plan_compaction(s.kv, n_keep, plan)) {
    metrics_.kv_evictions_skipped.add(1);
    if (!s.evict_track) s.evict_scores = {};
    return;  // no room for the copies: the sequence keeps its tokens (h2o tries again next step)
  }
  const std::vector<std::vector<int32_t>> kept = evict_selection(s, n_prefix);
  auto slot = [bs](const std::vector<BlockId>& table, int64_t i) {
    return static_cast<int64_t>(table[static_cast<size_t>(i / bs)]) * bs + i % bs;
  };
  // Per layer: each head's kept tokens to slots [0, budget) (increasing, so a move never
  // overwrites a slot a later move reads), then the window, all heads.
  std::vector<std::vector<KvTokenMove>> moves(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    auto& m = moves[static_cast<size_t>(il)];
    for (int32_t g = 0; g < c.n_head_kv; ++g) {
      const std::vector<int32_t>& k = kept[static_cast<size_t>(il * c.n_head_kv + g)];
      const bool all_heads = ep.method == KvEvictMethod::Recent;  // every head keeps the same
      for (size_t d = 0; d < k.size(); ++d)
        m.push_back(
            {slot(s.kv.blocks, k[d]), slot(plan.blocks, static_cast<int64_t>(d)), all_heads ? -1 : g});
      if (all_heads) break;
    }
    for (int64_t d = ep.budget; d < n_keep; ++d)
      m.push_back({slot(s.kv.blocks, n_prefix + d - ep.budget), slot(plan.blocks, d), -1});
  }
  target_->move_kv_tokens(moves);
  // The accumulator follows its tokens (h2o, scoring on); the same in-place order as the moves.
  const bool tracked = !s.evict_pos.empty();
  KvEvictionEvent ev;
  ev.id = s.request->id;
  ev.index = s.index;
  ev.n_computed = s.n_computed;
  ev.kept.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int32_t>& k = kept[static_cast<size_t>(r)];
    auto src = [&](int64_t d) {
      return d < ep.budget ? k[static_cast<size_t>(d)] : n_prefix + d - ep.budget;
    };
    for (int64_t d = 0; d < n_keep; ++d)
      ev.kept[static_cast<size_t>(r)].push_back(static_cast<int32_t>(
          tracked ? s.evict_pos[static_cast<size_t>(r * s.evict_keys + src(d))] : src(d) + s.kv.pos_offset));
    if (!s.evict_track) continue;
    float* sc = s.evict_scores.data() + r * s.evict_keys;
    int32_t* pos = s.evict_pos.data() + r * s.evict_keys;
    for (int64_t d = 0; d < n_keep; ++d) {
      sc[d] = sc[src(d)];
      pos[d] = pos[src(d)];
    }
    std::fill(sc + n_keep, sc + s.evict_keys, 0.0f);
  }
  if (!s.evict_track) {
    s.evict_scores = {};
    s.evict_pos = {};
    s.evict_keys = 0;
  }
  const int64_t n_evicted = n_slots - n_keep;
  kv_->commit_compaction(s.kv, std::move(plan), n_evicted);
  metrics_.kv_evicted_tokens.add(static_cast<double>(n_evicted));
  log_debug("KV eviction (", kv_evict_method_name(ep.method), "): request ", s.request->id, " kept ", n_keep,
            " of ", n_slots, " cached tokens at position ", s.n_computed);
  if (config_.kv_evict_observer) config_.kv_evict_observer(ev);
}

}  // namespace strata
