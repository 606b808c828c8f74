#include "model/forward_scratch.h"

#include <algorithm>

namespace strata {

std::unique_ptr<ForwardScratch> ForwardScratch::create(Backend& backend, const ModelConfig& c, int64_t cap) {
  auto s = std::make_unique<ForwardScratch>();
  s->cap = cap;
  auto buf = [&](int64_t width, size_t elem = sizeof(float)) {
    return backend.alloc(static_cast<size_t>(cap * std::max<int64_t>(width, 0)) * elem);
  };
  const MlaConfig& m = c.mla;
  const int64_t q_width = c.info->mla ? c.n_head * (m.qk_nope + m.qk_rope) : c.n_embd_q();
  const int64_t ffn_width =
      std::max({c.n_ff * (c.info->fused_gate_up ? 2 : 1), c.moe.n_ff_shexp, int64_t{1}});
  const int64_t k_used = c.moe.n_expert_used;
  s->x = buf(c.n_embd);
  s->h = buf(c.n_embd);
  s->o = buf(c.n_embd);
  s->q = buf(q_width);
  s->k = buf(c.n_embd_kv());
  s->v = buf(c.n_embd_kv());
  s->qkv = buf(c.info->fused_qkv ? c.n_embd_q() + 2 * c.n_embd_kv() : 0);
  s->attn = buf(c.n_head * std::max(c.head_dim, c.head_dim_v));
  s->gate = buf(ffn_width);
  s->up = buf(ffn_width);
  s->router_logits = buf(c.moe.n_expert);
  s->expert_ids = buf(k_used, sizeof(int32_t));
  s->expert_w = buf(k_used);
  s->exp_gate = buf(k_used * c.moe.n_ff_exp);
  s->exp_up = buf(k_used * c.moe.n_ff_exp);
  s->exp_down = buf(k_used * c.n_embd);
  if (c.info->mla) {
    s->q_a = buf(m.q_lora_rank);
    s->q_abs = buf(c.n_head * c.head_dim);
    s->part = buf(c.n_head * std::max(m.qk_rope, m.kv_lora_rank));
    s->v_heads = buf(c.n_head * m.v_head);
    s->head_ids = buf(c.n_head, sizeof(int32_t));
    int32_t* ids = ip(s->head_ids);
    for (int64_t t = 0; t < cap; ++t)
      for (int64_t h = 0; h < c.n_head; ++h) ids[t * c.n_head + h] = static_cast<int32_t>(h);
  }
  s->slots.resize(static_cast<size_t>(cap));
  return s;
}

}  // namespace strata
