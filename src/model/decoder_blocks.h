// The blocks of the one decoder layer (model.cpp runs them in the order the architecture's
// table entry says): attention (grouped-query or multi-head latent), and the FFN (dense or
// mixture of experts). Each reads its input rows and writes [n, n_embd] to `out`; the residual
// adds and the norms around the blocks are the layer's.
#pragma once

#include "backend/backend.h"
#include "kv/kv_window_policy.h"
#include "model/forward_scratch.h"
#include "model/layer_weights.h"
#include "model/model_config.h"
#include "model/op_profile.h"

namespace strata {

struct BlockContext {
  Backend& backend;
  const ModelConfig& c;
  ForwardScratch& s;
  OpTimer& timed;
  int64_t n;                          // tokens of the micro-batch
  const AttentionBatch& ab;           // their positions, sequences and KV slots
  const KvWindowPolicy& kv_window;    // attention sinks and window (kv/kv_window_policy.h)
  const int32_t* rope_pos = nullptr;  // [n] rotary positions (ab.pos unless eviction shifted them)
  // Per sequence of ab, for layer il's scores at acc + il * n_head_kv * n_keys; empty: none.
  const std::vector<AttentionScoreSink>* score_sinks = nullptr;
};

// Grouped-query attention with the architecture's biases, q/k norms, rotary set of layer il,
// sliding window, soft-cap and sinks (attention_block.cpp).
void attention_block(BlockContext& ctx, const AttentionWeights& w, int64_t il, const KvLayerView& kv,
                     const float* in /* [n, n_embd] */, float* out /* [n, n_embd] */);

// Multi-head latent attention, absorbed form: the cache holds each token's latent row, queries
// are mapped into the latent space through k_b, outputs out of it through v_b (mla_block.cpp).
void mla_block(BlockContext& ctx, const AttentionWeights& w, const KvLayerView& kv,
               const float* in /* [n, n_embd] */, float* out /* [n, n_embd] */);

// Dense gated FFN: out = down(act(gate(in)) * up(in)) (ffn_block.cpp). gate == null: `up`
// holds gate then up (phi3's fused tensor).
void ffn_block(BlockContext& ctx, const BackendMatrix* gate, const BackendMatrix& up,
               const BackendMatrix& down, const float* in /* [n, n_embd] */, float* out /* [n, n_embd] */);

// Routed experts (plus the shared experts where the layer has them) (moe_block.cpp).
void moe_block(BlockContext& ctx, const FfnWeights& w, const float* in /* [n, n_embd] */,
               float* out /* [n, n_embd] */);

}  // namespace strata
