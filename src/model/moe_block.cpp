// Mixture of experts: the router picks n_expert_used experts per token, every chosen expert runs
// its gated FFN on the tokens that chose it (grouped, so each expert's weights are read once per
// micro-batch), the outputs are combined with the routing weights, and the shared experts, where
// the layer has them, are added.
#include "model/decoder_blocks.h"

namespace strata {

void moe_block(BlockContext& ctx, const FfnWeights& w, const float* in, float* out) {
  Backend& be = ctx.backend;
  const ModelConfig& c = ctx.c;
  ForwardScratch& s = ctx.s;
  const int64_t n = ctx.n, k = c.moe.n_expert_used, ff = c.moe.n_ff_exp, n_embd = c.n_embd;
  float* logits = fp(s.router_logits);
  int32_t* ids = ip(s.expert_ids);
  float* weights = fp(s.expert_w);
  ctx.timed(OpProfile::Moe, [&] {
    be.matmul(*w.router, in, logits, n);
    if (w.router_bias) be.add_bias(logits, fp(w.router_bias), n, c.moe.n_expert);
    MoeRouting r;
    r.n_experts = static_cast<int32_t>(c.moe.n_expert);
    r.n_used = static_cast<int32_t>(k);
    r.gating = c.moe.gating;
    r.norm_weights = c.moe.norm_weights;
    r.weights_scale = c.moe.weights_scale;
    r.selection_bias = w.selection_bias.empty() ? nullptr : w.selection_bias.data();
    r.n_groups = static_cast<int32_t>(c.moe.n_group);
    r.n_groups_used = static_cast<int32_t>(c.moe.n_group_used);
    be.moe_route(logits, n, r, ids, weights);
  });
  float* g = fp(s.exp_gate);
  float* u = fp(s.exp_up);
  float* d = fp(s.exp_down);
  ctx.timed(OpProfile::Moe, [&] {
    // gate and up read the token's row for each of its slots; down reads each slot's own row.
    const SlotLayout x_tok{n_embd, 0}, hid{k * ff, ff}, emb{k * n_embd, n_embd};
    be.matmul_stack(*w.gate_exps, ids, n, k, in, x_tok, g, hid);
    be.matmul_stack(*w.up_exps, ids, n, k, in, x_tok, u, hid);
    if (w.gate_exps_bias) {
      be.add_stack_bias(g, fp(w.gate_exps_bias), ids, n, k, ff);
      be.add_stack_bias(u, fp(w.up_exps_bias), ids, n, k, ff);
    }
    be.glu(c.info->ffn_act, g, u, ff, g, n * k, ff);
    be.matmul_stack(*w.down_exps, ids, n, k, g, hid, d, emb);
    if (w.down_exps_bias) be.add_stack_bias(d, fp(w.down_exps_bias), ids, n, k, n_embd);
    be.weighted_sum(d, weights, n, k, n_embd, out);
  });
  if (w.up_shexp) {
    float* shared = fp(s.exp_down);  // free again: the routed outputs are combined into `out`
    ffn_block(ctx, w.gate_shexp.get(), *w.up_shexp, *w.down_shexp, in, shared);
    ctx.timed(OpProfile::Elementwise, [&] { be.add(out, shared, n * n_embd); });
  }
}

}  // namespace strata
