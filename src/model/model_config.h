// Hyper-parameters of a decoder, read from GGUF-style metadata ({arch}.* keys as llama.cpp
// writes them) and validated: the architecture's table entry (arch_table.h) plus the values of
// this file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "formats/metadata.h"
#include "model/arch_table.h"

namespace strata {

// Routed experts of the MoE layers (and DeepSeek's shared experts).
struct MoeConfig {
  int64_t n_expert = 0;            // 0: dense model
  int64_t n_expert_used = 0;       // experts per token
  int64_t n_ff_exp = 0;            // hidden width of one expert
  int64_t n_ff_shexp = 0;          // hidden width of the shared-expert FFN (0: none)
  int64_t n_layer_dense_lead = 0;  // leading layers with a dense FFN instead (deepseek2)
  MoeGating gating = MoeGating::Softmax;
  bool norm_weights = false;
  float weights_scale = 1.0f;
  int64_t n_group = 1;  // expert groups (deepseek v3), of which n_group_used are eligible
  int64_t n_group_used = 1;
};

// Multi-head latent attention (deepseek2). Per head, queries have qk_nope + qk_rope dims; the
// KV cache holds one latent row per token, [kv_lora_rank normalized c_kv, qk_rope roped key],
// shared by all heads (absorbed form: attention runs as MQA of head_dim kv_lora_rank + qk_rope
// and value width kv_lora_rank, then v_b maps each head's latent output to v_head dims).
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0: queries straight from attn_q (V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope = 0;
  int64_t qk_rope = 0;
  int64_t v_head = 0;
  double yarn_log_mul = 0.0;  // DeepSeek's mscale_all_dim: YaRN's correction of the q.k scale
};

struct ModelConfig {
  std::string arch;  // general.architecture
  const ArchInfo* info = nullptr;
  std::string name;  // general.name, if any
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;    // of Q and K in the attention (MLA: kv_lora_rank + qk_rope)
  int64_t head_dim_v = 0;  // of V and the attention output (MLA: kv_lora_rank)
  int64_t n_ff = 0;        // hidden width of the dense FFN
  float rms_eps = 1e-5f;
  float attn_scale = 1.0f;          // multiplies the q.k scores
  float attn_softcap = 0.0f;        // 0: off
  float final_softcap = 0.0f;       // 0: off
  float embd_scale = 1.0f;          // multiplies the token embeddings
  int64_t sliding_window = 0;       // 0: full attention everywhere
  std::vector<uint8_t> swa_layers;  // [n_layer] 1 where the sliding window applies
  bool qkv_bias = false;
  RopeParams rope;            // full-attention layers (and all layers without a separate set)
  RopeParams rope_swa;        // sliding-window layers
  int64_t rope_orig_ctx = 0;  // context the long/short LongRoPE factors are chosen against
  MoeConfig moe;
  MlaConfig mla;

  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
  bool is_swa(int64_t il) const { return swa_layers[static_cast<size_t>(il)] != 0; }
  int64_t window(int64_t il) const { return is_swa(il) ? sliding_window : 0; }
  // The window every layer shares (mistral), 0 when some layer attends to everything (gemma2's
  // global layers): only then can blocks that fell out of the window be given back.
  int64_t common_window() const {
    for (uint8_t w : swa_layers)
      if (!w) return 0;
    return sliding_window;
  }
  const RopeParams& rope_for(int64_t il) const { return is_swa(il) ? rope_swa : rope; }
  bool is_moe_layer(int64_t il) const { return moe.n_expert > 0 && il >= moe.n_layer_dense_lead; }

  // Reads {arch}.* keys. Throws strata::Error naming the key for an unsupported architecture or
  // a parameter out of range (layer count, head counts dividing dims, expert counts, lora ranks,
  // window patterns, rope factors, ...).
  static ModelConfig from_metadata(const Metadata& md);
  // One-line summary for logs and `strata info`.
  std::string summary() const;
};

namespace config_detail {
// Shared by the readers of model_config*.cpp.
int64_t require_int(const Metadata& md, const std::string& key, int64_t lo, int64_t hi);
int64_t optional_int(const Metadata& md, const std::string& key, int64_t def, int64_t lo, int64_t hi);
float optional_float(const Metadata& md, const std::string& key, double def, double lo, double hi);
// Rotary parameters and the per-layer sliding-window sets (model_config_rope.cpp).
void read_rope(const Metadata& md, ModelConfig& c);
// Experts and latent attention (model_config_moe.cpp).
void read_moe(const Metadata& md, ModelConfig& c);
void read_mla(const Metadata& md, ModelConfig& c);
}  // namespace config_detail

}  // namespace strata
