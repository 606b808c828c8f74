// A ragged batch for one forward pass: tokens from many sequences, each with its position and
// sequence, and whether its logits are wanted. Prefill, decode and a mix are the same thing.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "kv/block_pool.h"
#include "kv/kv_window_policy.h"

namespace strata {

struct ForwardBatch {
  std::vector<int32_t> tokens;       // [n_tokens]
  std::vector<int32_t> pos;          // [n_tokens] position within its sequence
  std::vector<int32_t> seq;          // [n_tokens] index into block_tables
  std::vector<uint8_t> want_logits;  // [n_tokens]
  // [n_tokens] 1: the token's final hidden state (after the final norm, before the output
  // projection) is returned (embedding requests pool them); independent of want_logits.
  std::vector<uint8_t> want_hidden;
  // Per sequence: its KV blocks in position order, covering every position in the batch.
  // Tokens of one sequence appear in increasing position order; all earlier positions of the
  // sequence are already in the cache (or earlier in this batch).
  std::vector<const std::vector<BlockId>*> block_tables;
  // Layers to skip (a layer-skipping self-draft): [n_layer] 1 = skipped, or null for none. A
  // skipped layer leaves the residual unchanged and writes no K/V.
  const std::vector<uint8_t>* skip_layers = nullptr;
  // Attention sinks and window of every sequence in the batch (off by default).
  KvWindowPolicy kv_window;
  // Score-based eviction (kv/kv_evict_policy.h): `pos` are cache positions (the slot in the
  // block table), and the rotary position of each token is rope_pos: [n_tokens], or empty when
  // they are the same (no sequence of the batch evicted anything).
  std::vector<int32_t> rope_pos;
  // Per sequence (as block_tables), or empty: where its observation queries' attention goes,
  // [n_layer, n_head_kv, n_keys] floats (acc null: not scored).
  std::vector<AttentionScoreSink> score_sinks;

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_outputs() const;
  int64_t n_hidden_outputs() const;
  void add(int32_t token, int32_t position, int32_t seq_index, bool logits, bool hidden = false);
  void clear();
};

}  // namespace strata
