// Token-level access to the KV cache tiles for score-based eviction (kv/kv_evict_policy.h):
// reading one cached key back as f32, moving one token between slots, and the attention
// probabilities of observation queries over a sequence's keys. Every tile order of kv_layout.h
// except KIVI's per-channel keys (a token cannot leave a block quantized over all its tokens).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/kv_codec.h"

namespace strata::cpu {

// Whether the layer's K and V types allow token moves and key reads (not KIVI, not staged).
bool kv_tokens_addressable(const KvLayerView& kv);

// Key of token t in block `block`, kv head g -> y: [padded_dim] f32, as stored (rotated when
// kv.rotate_k).
void load_key(const KvLayerView& kv, const KvCodecKernels& codec, int64_t block, int32_t g, int32_t t,
              float* y);

// K and V of kv head g: slot src -> slot dst (the bytes as stored, nothing re-quantized).
void move_token(const KvLayerView& kv, int32_t g, int64_t src, int64_t dst);

// Attention probabilities of n_q queries of one sequence (q: [n_q] rows of q_stride floats, the
// group's query heads next to each other, head_dim each; rotated like the keys when kv.rotate_k
// is on, which this does) over its keys at positions 0..pos[i], added summed over the group's
// heads to acc: [n_keys]. sinks: the group's learned sink logits (gpt-oss) or null.
struct ScoreJob {
  const float* q = nullptr;
  int64_t q_stride = 0;
  const int32_t* pos = nullptr;  // [n_q]
  int32_t n_q = 0;
  int32_t group = 1;
  int32_t kv_head = 0;
  const int32_t* block_table = nullptr;
  float scale = 1.0f;
  float softcap = 0.0f;
  const float* sinks = nullptr;  // [group] or null
  float* acc = nullptr;          // [n_keys]
  int32_t n_keys = 0;
};
void attention_scores_head(const ScoreJob& job, const KvLayerView& kv, const KvCodecKernels& codec);

}  // namespace strata::cpu
