// The prepared weights of one decoder layer, every block's tensors (null where the
// architecture or the layer has none). Names in comments are the GGUF tensor names
// (blk.N. prefix omitted).
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"

namespace strata {

struct AttentionWeights {
  std::unique_ptr<BackendBuffer> norm;        // attn_norm [n_embd]
  std::unique_ptr<BackendBuffer> post_norm;   // post_attention_norm [n_embd] (gemma2/3, olmo2)
  std::unique_ptr<BackendMatrix> wq;          // attn_q [n_embd_q, n_embd]
  std::unique_ptr<BackendMatrix> wk, wv;      // attn_k, attn_v [n_embd_kv, n_embd]
  std::unique_ptr<BackendMatrix> wqkv;        // attn_qkv [n_embd_q + 2 n_embd_kv, n_embd] (phi3)
  std::unique_ptr<BackendMatrix> wo;          // attn_output [n_embd, n_head * head_dim_v]
  std::unique_ptr<BackendBuffer> bq, bk, bv;  // attn_q/k/v.bias [n_embd_q], [n_embd_kv] x2
  std::unique_ptr<BackendBuffer> bo;          // attn_output.bias [n_embd] (gpt-oss)
  std::unique_ptr<BackendBuffer> q_norm;      // attn_q_norm [head_dim] or [n_embd_q] (olmo2)
  std::unique_ptr<BackendBuffer> k_norm;      // attn_k_norm [head_dim] or [n_embd_kv] (olmo2)
  std::vector<float> sinks;                   // attn_sinks [n_head] host (gpt-oss), or empty
  // MLA (deepseek2)
  std::unique_ptr<BackendMatrix> wq_a;       // attn_q_a [q_lora, n_embd]
  std::unique_ptr<BackendBuffer> q_a_norm;   // attn_q_a_norm [q_lora]
  std::unique_ptr<BackendMatrix> wq_b;       // attn_q_b [n_head * (nope + rope), q_lora]
  std::unique_ptr<BackendMatrix> wkv_a;      // attn_kv_a_mqa [kv_lora + rope, n_embd]
  std::unique_ptr<BackendBuffer> kv_a_norm;  // attn_kv_a_norm [kv_lora]
  std::unique_ptr<BackendMatrixStack> k_b;   // attn_k_b [n_head][kv_lora, nope]
  std::unique_ptr<BackendMatrixStack> v_b;   // attn_v_b [n_head][v_head, kv_lora]
};

struct FfnWeights {
  std::unique_ptr<BackendBuffer> norm;       // ffn_norm (gpt-oss: post_attention_norm) [n_embd]
  std::unique_ptr<BackendBuffer> post_norm;  // post_ffw_norm [n_embd]
  // Dense FFN (also the dense leading layers of deepseek2).
  std::unique_ptr<BackendMatrix> gate, up;  // ffn_gate, ffn_up [n_ff, n_embd]; phi3: ffn_up [2 n_ff, n_embd]
  std::unique_ptr<BackendMatrix> down;      // ffn_down [n_embd, n_ff]
  // Routed experts.
  std::unique_ptr<BackendMatrix> router;          // ffn_gate_inp [n_expert, n_embd]
  std::unique_ptr<BackendBuffer> router_bias;     // ffn_gate_inp.bias [n_expert] (gpt-oss)
  std::vector<float> selection_bias;              // exp_probs_b.bias [n_expert] host (deepseek v3)
  std::unique_ptr<BackendMatrixStack> gate_exps;  // ffn_gate_exps [n_expert][n_ff_exp, n_embd]
  std::unique_ptr<BackendMatrixStack> up_exps;    // ffn_up_exps [n_expert][n_ff_exp, n_embd]
  std::unique_ptr<BackendMatrixStack> down_exps;  // ffn_down_exps [n_expert][n_embd, n_ff_exp]
  std::unique_ptr<BackendBuffer> gate_exps_bias;  // ffn_gate_exps.bias [n_expert, n_ff_exp] (gpt-oss)
  std::unique_ptr<BackendBuffer> up_exps_bias;    // ffn_up_exps.bias [n_expert, n_ff_exp]
  std::unique_ptr<BackendBuffer> down_exps_bias;  // ffn_down_exps.bias [n_expert, n_embd]
  // Shared experts: one dense FFN of width n_ff_shexp beside the routed ones (deepseek2).
  std::unique_ptr<BackendMatrix> gate_shexp, up_shexp;  // ffn_gate_shexp, ffn_up_shexp [n_ff_shexp, n_embd]
  std::unique_ptr<BackendMatrix> down_shexp;            // ffn_down_shexp [n_embd, n_ff_shexp]
};

struct LayerWeights {
  AttentionWeights attn;
  FfnWeights ffn;
};

}  // namespace strata
