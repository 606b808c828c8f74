// StreamingLLM's attention sinks with a sliding window (Xiao et al. 2023, "Efficient Streaming
// Language Models with Attention Sinks"), as a KV cache policy: every query attends to the first
// `sinks` tokens of its sequence and to the last `window` tokens up to itself, exactly that many
// tokens, and the blocks holding only tokens in between are given back, so a sequence can grow
// far beyond the model's context with a cache of about (sinks + window) tokens.
//
// Positions are the paper's positions within the cache: a query sees its window keys at their
// true distance and the sinks as if they sat right before the window, sink i at distance
// sinks + window - 1 - i (once the window is full). Rotary embeddings only see distances, so
// nothing stored is ever re-rotated: keys keep the rotation they were stored with (any -ctk type,
// Hadamard-rotated or not, and shared prefix-cache blocks are never written), and the query is
// rotated twice, at its own position for the window and at min(pos, sinks + window - 1) for the
// sinks (attention_block.cpp, AttentionParams::q_sink).
#pragma once

#include <cstdint>

namespace strata {

struct KvWindowPolicy {
  int32_t sinks = 0;   // first tokens of the sequence that stay visible (0: a plain window)
  int32_t window = 0;  // last tokens visible to each query, itself included; 0: policy off

  bool enabled() const { return window > 0; }
  bool operator==(const KvWindowPolicy&) const = default;

  // Throws strata::Error for values that make no sense with blocks of block_size tokens:
  // negative values, sinks without a window, a window smaller than one block.
  void validate(int32_t block_size) const;

  // The position where the sinks' query rotation stops: a query at pos is rotated at
  // min(pos, sink_rotation_cap()) for the sink keys.
  int32_t sink_rotation_cap() const { return sinks + window - 1; }

  // Leading blocks that hold sink tokens (never given back).
  int32_t sink_blocks(int32_t block_size) const { return (sinks + block_size - 1) / block_size; }

  // The first position the query at next_pos (and every later one) still sees after the sinks.
  int64_t first_window_pos(int64_t next_pos) const { return next_pos + 1 - window; }

  // The most tokens' worth of blocks one sequence holds while computing chunks of up to
  // max_chunk tokens: the sink blocks, the window and the chunk, plus a partial block each side.
  int64_t max_held_tokens(int64_t max_chunk, int32_t block_size) const {
    return static_cast<int64_t>(sink_blocks(block_size)) * block_size + window + max_chunk + 2 * block_size;
  }
};

// The window and sinks of one layer under the policy: a layer with its own sliding window
// narrower than the policy's keeps it, without sinks; every other layer gets the policy's.
struct LayerWindow {
  int32_t window = 0;  // 0: full causal attention
  int32_t sinks = 0;
};
LayerWindow layer_window(const KvWindowPolicy& policy, int64_t model_window);

}  // namespace strata
