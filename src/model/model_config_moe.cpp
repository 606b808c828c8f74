// Hyper-parameters of the mixture-of-experts layers and of multi-head latent attention.
#include <cmath>

#include "core/check.h"
#include "model/model_config.h"

namespace strata::config_detail {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxExperts = 1024;  // cpu/moe_routing.cpp routes at most this many

MoeGating gating_from_metadata(const Metadata& md, const std::string& a, MoeGating def) {
  // llama.cpp's llama_expert_gating_func_type: 0 none (the architecture's default), 1 softmax,
  // 2 sigmoid, 3 softmax of the chosen logits.
  const std::string key = a + ".expert_gating_func";
  const auto v = md.get_int(key);
  if (!v || *v == 0) return def;
  switch (*v) {
    case 1:
      return MoeGating::Softmax;
    case 2:
      return MoeGating::Sigmoid;
    case 3:
      return MoeGating::SoftmaxWeight;
  }
  STRATA_THROW("metadata '", key, "' = ", *v,
               ": unsupported expert gating function (supported: 1 softmax, 2 sigmoid, ",
               "3 softmax over the chosen experts)");
}

}  // namespace

void read_moe(const Metadata& md, ModelConfig& c) {
  const std::string& a = c.arch;
  MoeConfig& m = c.moe;
  m.n_expert = optional_int(md, a + ".expert_count", 0, 0, kMaxExperts);
  if (m.n_expert == 0) {
    if (c.info->requires_experts)
      STRATA_THROW("architecture '", a, "' needs metadata '", a,
                   ".expert_count' > 0 (its FFN layers are experts)");
    if (optional_int(md, a + ".expert_used_count", 0, 0, kMaxExperts) != 0)
      STRATA_THROW("metadata '", a, ".expert_used_count' is set but the model has no experts");
    return;
  }
  m.n_expert_used = require_int(md, a + ".expert_used_count", 1, m.n_expert);
  // Expert width: qwen3moe falls back to feed_forward_length / experts used, llama (Mixtral)
  // to feed_forward_length; deepseek2 and gpt-oss always store it (llama.cpp).
  const std::string ff_key = a + ".expert_feed_forward_length";
  if (a == "qwen3moe" && !md.contains(ff_key) && c.n_ff > 0)
    m.n_ff_exp = c.n_ff / m.n_expert_used;
  else if ((a == "llama" || a == "mistral") && !md.contains(ff_key))
    m.n_ff_exp = c.n_ff;
  else
    m.n_ff_exp = require_int(md, ff_key, 1, kMaxDim);
  if (m.n_ff_exp < 1) STRATA_THROW("expert feed-forward length ", m.n_ff_exp, " is not positive");
  m.n_layer_dense_lead = optional_int(md, a + ".leading_dense_block_count", 0, 0, c.n_layer);
  if (m.n_layer_dense_lead > 0 && c.n_ff < 1)
    STRATA_THROW("metadata '", a, ".feed_forward_length' is needed for the ", m.n_layer_dense_lead,
                 " leading dense layers");
  const int64_t n_shared = optional_int(md, a + ".expert_shared_count", 0, 0, 64);
  m.n_ff_shexp =
      optional_int(md, a + ".expert_shared_feed_forward_length", n_shared * m.n_ff_exp, 0, kMaxDim);
  m.gating = gating_from_metadata(md, a, c.info->default_gating);
  const std::string norm_key = a + ".expert_weights_norm";
  m.norm_weights = md.contains(norm_key) ? md.get_bool(norm_key).value_or(c.info->default_norm_weights)
                                         : c.info->default_norm_weights;
  // 0 means "no scaling" in llama.cpp's files.
  m.weights_scale = optional_float(md, a + ".expert_weights_scale", 1.0, 0.0, 1e3);
  if (m.weights_scale == 0.0f) m.weights_scale = 1.0f;
  m.n_group = std::max<int64_t>(1, optional_int(md, a + ".expert_group_count", 1, 0, m.n_expert));
  m.n_group_used = optional_int(md, a + ".expert_group_used_count", m.n_group, 0, m.n_group);
  if (m.n_group > 1) {
    if (m.n_expert % m.n_group != 0 || m.n_expert / m.n_group < 2)
      STRATA_THROW("expert_count ", m.n_expert, " cannot form ", m.n_group, " expert groups of at least 2");
    if (m.n_group_used < 1 || m.n_group_used * (m.n_expert / m.n_group) < m.n_expert_used)
      STRATA_THROW("expert_group_used_count ", m.n_group_used, " leaves fewer than ", m.n_expert_used,
                   " experts to choose from");
  } else {
    m.n_group_used = 1;
  }
}

void read_mla(const Metadata& md, ModelConfig& c) {
  if (!c.info->mla) return;
  const std::string& a = c.arch;
  MlaConfig& m = c.mla;
  m.q_lora_rank = optional_int(md, a + ".attention.q_lora_rank", 0, 0, kMaxDim);
  m.kv_lora_rank = require_int(md, a + ".attention.kv_lora_rank", 1, kMaxDim);
  m.qk_rope = c.rope.n_rot;
  if (!md.contains(a + ".attention.key_length_mla"))
    STRATA_THROW("metadata '", a, ".attention.key_length_mla' is missing: this ", a,
                 " file predates llama.cpp's MLA layout (attn_k_b/attn_v_b); convert it again");
  const int64_t k_mla = require_int(md, a + ".attention.key_length_mla", m.qk_rope + 1, kMaxDim);
  m.qk_nope = k_mla - m.qk_rope;
  m.v_head = require_int(md, a + ".attention.value_length_mla", 1, kMaxDim);
  // The absorbed form is MQA over the latent: one kv head of kv_lora_rank + rope dims.
  if (c.n_head_kv != 1 || c.head_dim != m.kv_lora_rank + m.qk_rope || c.head_dim_v != m.kv_lora_rank)
    STRATA_THROW("MLA needs head_count_kv 1, key_length kv_lora_rank + rope dims (",
                 m.kv_lora_rank + m.qk_rope, ") and value_length kv_lora_rank (", m.kv_lora_rank,
                 "); the file has ", c.n_head_kv, ", ", c.head_dim, " and ", c.head_dim_v);
  // q.k scale 1/sqrt(qk_nope + qk_rope), with YaRN's magnitude correction squared (DeepSeek V2
  // modeling: softmax_scale * mscale^2; llama.cpp's deepseek2 graph).
  const double log_scale = c.rope.scaling == RopeParams::Scaling::Yarn ? std::log(c.rope.factor) : 0.0;
  const double mscale = c.rope.attn_factor * (1.0 + 0.1 * m.yarn_log_mul * log_scale);
  c.attn_scale = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(k_mla)));
}

}  // namespace strata::config_detail
