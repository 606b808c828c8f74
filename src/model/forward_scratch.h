// Activations of one micro-batch of up to `cap` tokens, sized for a model's config: every
// block's intermediate buffers in backend memory, allocated once and reused by every layer.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace strata {

struct ForwardScratch {
  int64_t cap = 0;
  std::unique_ptr<BackendBuffer> x;     // [cap, n_embd] the residual stream
  std::unique_ptr<BackendBuffer> h;     // [cap, n_embd] normalized block input
  std::unique_ptr<BackendBuffer> o;     // [cap, n_embd] block output
  std::unique_ptr<BackendBuffer> q;     // [cap, n_head * head_dim] (MLA: [cap, n_head, nope + rope])
  std::unique_ptr<BackendBuffer> k;     // [cap, n_head_kv * head_dim] (MLA: the latent row)
  std::unique_ptr<BackendBuffer> v;     // [cap, n_head_kv * head_dim]
  std::unique_ptr<BackendBuffer> qkv;   // [cap, n_embd_q + 2 n_embd_kv] (fused qkv only)
  std::unique_ptr<BackendBuffer> attn;  // [cap, n_head * max(head_dim, head_dim_v)]
  std::unique_ptr<BackendBuffer> gate;  // [cap, ffn width] (fused gate/up: [cap, 2 n_ff])
  std::unique_ptr<BackendBuffer> up;    // [cap, ffn width]
  // MoE
  std::unique_ptr<BackendBuffer> router_logits;  // [cap, n_expert]
  std::unique_ptr<BackendBuffer> expert_ids;     // int32 [cap, n_expert_used]
  std::unique_ptr<BackendBuffer> expert_w;       // [cap, n_expert_used]
  std::unique_ptr<BackendBuffer> exp_gate;       // [cap, n_expert_used, n_ff_exp]
  std::unique_ptr<BackendBuffer> exp_up;         // [cap, n_expert_used, n_ff_exp]
  std::unique_ptr<BackendBuffer> exp_down;       // [cap, n_expert_used, n_embd]
  // MLA
  std::unique_ptr<BackendBuffer> q_a;       // [cap, q_lora]
  std::unique_ptr<BackendBuffer> q_abs;     // [cap, n_head, head_dim] absorbed queries
  std::unique_ptr<BackendBuffer> part;      // [cap, n_head, max(rope, kv_lora)] one part of a split row
  std::unique_ptr<BackendBuffer> v_heads;   // [cap, n_head * v_head]
  std::unique_ptr<BackendBuffer> head_ids;  // int32 [cap, n_head]: 0, 1, ..., n_head - 1 per token
  std::vector<int64_t> slots;               // [cap] KV slot of each token
  // Attention sinks (kv/kv_window_policy.h), allocated on first use.
  std::unique_ptr<BackendBuffer> q_sink;  // [cap, n_head * head_dim] queries rotated for the sinks
  std::vector<int32_t> sink_pos;          // [cap] the position q_sink is rotated at

  static std::unique_ptr<ForwardScratch> create(Backend& backend, const ModelConfig& c, int64_t cap);
};

inline float* fp(const std::unique_ptr<BackendBuffer>& b) {
  return static_cast<float*>(b->data());
}
inline int32_t* ip(const std::unique_ptr<BackendBuffer>& b) {
  return static_cast<int32_t*>(b->data());
}

}  // namespace strata
