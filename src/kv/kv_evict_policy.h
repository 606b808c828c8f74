// Score-based KV eviction for long prompts, three ways of choosing what a sequence keeps once
// its prompt is longer than budget + window tokens. In each, the last `window` prompt tokens
// stay, and `budget` earlier ones are chosen:
//
// - snapkv (Li et al. 2024, "SnapKV: LLM Knows What You are Looking for Before Generation"):
//   each earlier prompt token is scored, per layer and kv head, by the attention the last
//   `window` prompt queries (the observation window) give it — softmax probabilities summed
//   over those queries and over the query heads of the kv head's group — smoothed with a 1-D
//   max pool of `pool` tokens (so a kept token brings its neighbours); the `budget` best stay.
// - h2o (Zhang et al. 2023, "H2O: Heavy-Hitter Oracle for Efficient Generative Inference of Large
//   Language Models"): the score is the attention accumulated over ALL queries seen so far (every
//   prefill chunk's, not a window's), unnormalised, per layer and kv head; the `budget` heaviest
//   tokens (the heavy hitters) stay with the `window` most recent. H2O then keeps evicting during
//   generation: decode queries add to the same scores, and whenever the sequence holds budget +
//   window + block_size tokens, each layer and kv head again keeps its budget heaviest and the
//   window most recent. Where this deviates from the paper: (1) the paper splits one cache budget
//   equally between heavy and recent tokens; here the two are the flags --kv-budget (heavy) and
//   --kv-evict-window (recent), so --kv-evict-window N --kv-budget N is the paper's split;
//   (2) the paper evicts one token per decode step; here a block's worth at once, every
//   block_size steps, so the cache is compacted a whole block at a time (between compactions it
//   holds up to block_size - 1 tokens more than budget + window); (3) the paper scores per query
//   head; with grouped-query attention a kv head's score sums its group's query heads (the K/V
//   a group shares can only be kept or dropped together); (4) the prompt's heavy hitters are
//   chosen at once from its accumulated scores (the paper's implementation does the same at
//   prefill), and a token's score keeps the attention it got before it became a candidate.
// - recent: no scores; the last budget + window prompt tokens stay (the baseline the scored
//   policies are measured against).
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
#include <string>
#include <vector>

namespace strata {

enum class KvEvictMethod { SnapKv, H2O, Recent };
const char* kv_evict_method_name(KvEvictMethod m);

struct KvEvictPolicy {
  int32_t budget = 0;   // prompt tokens kept before the window; 0: eviction off
  int32_t window = 32;  // the last prompt tokens, always kept (snapkv: the observation window)
  int32_t pool = 7;     // snapkv: max-pool kernel over the scores (odd; 1: none)
  KvEvictMethod method = KvEvictMethod::SnapKv;

  bool enabled() const { return budget > 0; }
  bool operator==(const KvEvictPolicy&) const = default;
  // Throws strata::Error for values out of range (flag names in the messages).
  void validate() const;
  // Whether a prompt of n_prompt tokens is long enough to evict anything.
  bool applies(int64_t n_prompt) const {
    return enabled() && n_prompt > static_cast<int64_t>(budget) + window;
  }
  // Whether the attention of queries is scored (snapkv: the window's; h2o: every query's).
  bool scored() const { return enabled() && method != KvEvictMethod::Recent; }
  // H2O: eviction goes on during generation.
  bool during_generation() const { return enabled() && method == KvEvictMethod::H2O; }
};

// SnapKV's selection for one (layer, kv head): scores [n_prefix] (the observation window's
// summed attention to each token before the window), max-pooled over `pool` neighbours (the
// window clipped at the ends), then the `budget` highest (ties: the earlier token), returned in
// increasing order. budget >= n_prefix keeps everything.
std::vector<int32_t> snapkv_select(const float* scores, int32_t n_prefix, int32_t budget, int32_t pool);

// H2O's heavy hitters for one (layer, kv head): the `budget` highest of scores [n_prefix] (the
// attention accumulated by every query so far; ties: the earlier token; NaN ranks last), in
// increasing order. budget >= n_prefix keeps everything.
std::vector<int32_t> h2o_select(const float* scores, int32_t n_prefix, int32_t budget);

// The recent baseline: the last `budget` of n_prefix tokens, [max(0, n_prefix - budget), n_prefix).
std::vector<int32_t> recent_select(int32_t n_prefix, int32_t budget);

}  // namespace strata
