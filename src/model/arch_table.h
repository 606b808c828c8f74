// The architectures the one decoder runs, as a table of what differs between them: which norms
// and where, the activation, the rotary style, biases, q/k norms, soft-caps, embedding scaling,
// fused tensors, sliding-window patterns, MoE routing defaults and MLA. GGUF metadata keys and
// tensor names are llama.cpp's (llama-arch.cpp, gguf-py/gguf/constants.py).
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"

namespace strata {

enum class QkNorm {
  None,
  PerHead,  // RMSNorm of each head, weights [head_dim] (qwen3, gemma3)
  Whole,    // RMSNorm of all of Q (and of all of K), weights [n_embd_q] / [n_embd_kv] (olmo2)
};

struct ArchInfo {
  const char* name;  // general.architecture
  RopeStyle rope_style = RopeStyle::NeoX;
  double default_rope_base = 10000.0;
  GluKind ffn_act = GluKind::Silu;
  // Norms around the blocks. The FFN's input norm is `ffn_norm_tensor` (gpt-oss names it
  // post_attention_norm, where gemma/olmo2 use that name for the norm after attention).
  bool attn_norm = true;
  bool attn_post_norm = false;  // post_attention_norm: on the attention output, before the residual add
  bool ffn_norm = true;
  const char* ffn_norm_tensor = "ffn_norm";
  bool ffn_post_norm = false;  // post_ffw_norm
  QkNorm qk_norm = QkNorm::None;
  bool qkv_bias = false;         // attn_q/k/v.bias (qwen2, gpt-oss)
  bool out_bias = false;         // attn_output.bias (gpt-oss)
  bool fused_qkv = false;        // attn_qkv (phi3)
  bool fused_gate_up = false;    // ffn_up holds gate then up (phi3)
  bool embd_scale_sqrt = false;  // token embeddings times sqrt(n_embd) (gemma)
  bool attn_sinks = false;       // attn_sinks.weight (gpt-oss)
  bool moe_biases = false;       // ffn_gate_inp.bias and ffn_{gate,up,down}_exps.bias (gpt-oss)
  // Sliding-window layers: 0 when only attention.sliding_window applies to all layers;
  // else layer il slides iff il % pattern < pattern - 1 (llama.cpp's set_swa_pattern), with
  // attention.sliding_window_pattern overriding the period.
  int default_swa_pattern = 0;
  // Rotary settings of the sliding-window layers: gemma3 and olmo2 rotate them without the
  // model's scaling (and gemma3 with base 10000, or rope.freq_base_swa).
  bool swa_rope_unscaled = false;
  double default_swa_rope_base = 0.0;  // 0: the model's base
  float default_attn_softcap = 0.0f;   // gemma2: 50
  float default_final_softcap = 0.0f;  // gemma2: 30
  // MoE: whether a file must have experts, the router's gating and normalisation when the
  // metadata does not say (llama.cpp's per-architecture choices).
  bool requires_experts = false;
  MoeGating default_gating = MoeGating::Softmax;
  bool default_norm_weights = false;
  bool mla = false;  // deepseek2: multi-head latent attention, leading dense layers, shared experts
};

// The table entry of `arch`; throws strata::Error naming the supported ones otherwise.
const ArchInfo& find_arch(const std::string& arch);
// Names of all supported architectures, comma-separated.
std::string supported_arch_names();

}  // namespace strata
