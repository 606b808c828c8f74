// Score-based KV eviction for long prompts, SnapKV's way (Li et al. 2024, "SnapKV: LLM Knows What
// You are Looking for Before Generation"): after the prefill of a prompt longer than budget +
// window tokens, each earlier prompt token is scored, per layer and kv head, by the attention the
// last `window` prompt queries (the observation window) give it — softmax probabilities summed
// over those queries and over the query heads of the kv head's group — smoothed with a 1-D max
// pool of `pool` tokens (so a kept token brings its neighbours), and the `budget` best are kept
// with the whole observation window; the rest of the prompt's keys and values are given back.
//
// Each (layer, kv head) keeps its own tokens, the same number of them, so the kept tokens are
// compacted into ceil((budget + window + generated) / block_size) blocks of one block table:
// cache slot i of head g holds head g's i-th kept token. Keys are stored rotated at their
// original positions and are never re-rotated; new tokens continue at the original positions
// (position p >= the prompt length is at cache slot p - evicted), so a query sees each kept key
// at its true distance. Blocks shared with another sequence or published in the prefix cache are
// never written: compaction writes into the sequence's private blocks in place and into fresh
// blocks instead of the shared ones, whose reference it then drops.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

struct KvEvictPolicy {
  int32_t budget = 0;   // prompt tokens kept before the observation window; 0: eviction off
  int32_t window = 32;  // observation window: the last prompt queries, always kept
  int32_t pool = 7;     // max-pool kernel over the scores (odd; 1: none)

  bool enabled() const { return budget > 0; }
  bool operator==(const KvEvictPolicy&) const = default;
  // Throws strata::Error for values out of range (flag names in the messages).
  void validate() const;
  // Whether a prompt of n_prompt tokens is long enough to evict anything.
  bool applies(int64_t n_prompt) const {
    return enabled() && n_prompt > static_cast<int64_t>(budget) + window;
  }
};

// SnapKV's selection for one (layer, kv head): scores [n_prefix] (the observation window's
// summed attention to each token before the window), max-pooled over `pool` neighbours (the
// window clipped at the ends), then the `budget` highest (ties: the earlier token), returned in
// increasing order. budget >= n_prefix keeps everything.
std::vector<int32_t> snapkv_select(const float* scores, int32_t n_prefix, int32_t budget, int32_t pool);

}  // namespace strata
