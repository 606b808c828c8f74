#include "model/model_config.h"

#include <cfloat>
#include <cmath>
#include <sstream>

#include "core/check.h"

namespace strata {

namespace config_detail {

int64_t require_int(const Metadata& md, const std::string& key, int64_t lo, int64_t hi) {
  const auto v = md.get_int(key);
  if (!v) STRATA_THROW("missing metadata key '", key, "'");
  if (*v < lo || *v > hi)
    STRATA_THROW("metadata '", key, "' = ", *v, " is out of range [", lo, ", ", hi, "]");
  return *v;
}

int64_t optional_int(const Metadata& md, const std::string& key, int64_t def, int64_t lo, int64_t hi) {
  return md.contains(key) ? require_int(md, key, lo, hi) : def;
}

float optional_float(const Metadata& md, const std::string& key, double def, double lo, double hi) {
  const double v = md.double_or(key, def);
  if (!std::isfinite(v) || v < lo || v > hi)
    STRATA_THROW("metadata '", key, "' = ", v, " is out of range [", lo, ", ", hi, "]");
  return static_cast<float>(v);
}

}  // namespace config_detail

namespace {

using config_detail::optional_float;
using config_detail::optional_int;
using config_detail::require_int;

constexpr int64_t kMaxDim = int64_t{1} << 20;
// The widest attention head the CPU attention kernels take (cpu_ops.h kMaxHeadDim: the 576 of
// DeepSeek V2/V3's absorbed MLA, 512 latent + 64 rope).
constexpr int64_t kMaxAttentionHeadDim = 576;
constexpr int64_t kMaxHeadsPerKvHead = 128;  // cpu_ops.h kMaxGroup (DeepSeek V3: 128 heads on one latent)

void read_attention(const Metadata& md, ModelConfig& c) {
  const std::string& a = c.arch;
  c.n_head = require_int(md, a + ".attention.head_count", 1, 1024);
  c.n_head_kv = optional_int(md, a + ".attention.head_count_kv", c.n_head, 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    STRATA_THROW("head_count ", c.n_head, " is not a multiple of head_count_kv ", c.n_head_kv);
  if (c.n_head / c.n_head_kv > kMaxHeadsPerKvHead)
    STRATA_THROW("head_count ", c.n_head, " / head_count_kv ", c.n_head_kv, " query heads per kv head exceed the ",
                 kMaxHeadsPerKvHead, " the attention kernels take");
  if (!md.contains(a + ".attention.key_length") && c.n_embd % c.n_head != 0)
    STRATA_THROW("embedding_length ", c.n_embd, " is not a multiple of head_count ", c.n_head);
  c.head_dim = optional_int(md, a + ".attention.key_length", c.n_embd / c.n_head, 2, kMaxDim);
  c.head_dim_v = optional_int(md, a + ".attention.value_length", c.head_dim, 1, kMaxDim);
  if (!c.info->mla && c.head_dim_v != c.head_dim)
    STRATA_THROW("key_length ", c.head_dim, " != value_length ", c.head_dim_v, " is only supported with MLA");
  if (c.head_dim % 2 != 0 || c.head_dim > kMaxAttentionHeadDim)
    STRATA_THROW("attention head dimension ", c.head_dim, " unsupported (even, at most ",
                 kMaxAttentionHeadDim, ")");
  c.rms_eps = optional_float(md, a + ".attention.layer_norm_rms_epsilon", 1e-5, 1e-12, 1.0);
  c.qkv_bias = c.info->qkv_bias;
  // Query scaling: an explicit attention.scale, else gemma's query_pre_attn_scalar rule (llama.cpp
  // identifies the models that scale by n_embd / n_head by their layer count: gemma2 27B, gemma3
  // 27B), else 1/sqrt(head_dim). MLA sets its own (read_mla).
  const bool gemma27b = (a == "gemma2" && c.n_layer == 46) || (a == "gemma3" && c.n_layer == 62);
  const double scale_dim =
      gemma27b ? static_cast<double>(c.n_embd / c.n_head) : static_cast<double>(c.head_dim);
  c.attn_scale = optional_float(md, a + ".attention.scale", 1.0 / std::sqrt(scale_dim), 1e-6, 1e3);
  c.attn_softcap = optional_float(md, a + ".attn_logit_softcapping", c.info->default_attn_softcap, 0.0, 1e4);
  c.final_softcap =
      optional_float(md, a + ".final_logit_softcapping", c.info->default_final_softcap, 0.0, 1e4);
  c.embd_scale = c.info->embd_scale_sqrt ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
}

// Which layers use the sliding window: attention.sliding_window_pattern as a period (layer il
// slides iff il % period < period - 1) or as one bool per layer, else the architecture's period;
// architectures without one slide every layer (mistral).
void read_sliding_window(const Metadata& md, ModelConfig& c) {
  const std::string& a = c.arch;
  const int64_t def_window = a == "gemma2" ? 4096 : 0;  // gemma2's default (llama.cpp)
  c.sliding_window = optional_int(md, a + ".attention.sliding_window", def_window, 0, int64_t{1} << 24);
  c.swa_layers.assign(static_cast<size_t>(c.n_layer), 0);
  if (c.sliding_window == 0) return;
  const std::string key = a + ".attention.sliding_window_pattern";
  const GgufValue* pattern = md.find(key);
  if (const GgufArray* arr = pattern ? pattern->as_array() : nullptr) {
    if (arr->elem_type != GgufType::BOOL || static_cast<int64_t>(arr->size()) != c.n_layer)
      STRATA_THROW("metadata '", key, "' must be ", c.n_layer, " bools, one per layer");
    for (int64_t il = 0; il < c.n_layer; ++il)
      c.swa_layers[static_cast<size_t>(il)] = arr->values[static_cast<size_t>(il)].as_bool().value_or(false);
    return;
  }
  const int64_t def_period = c.info->default_swa_pattern;
  const int64_t period = optional_int(md, key, def_period, 0, c.n_layer + 1024);
  for (int64_t il = 0; il < c.n_layer; ++il)
    c.swa_layers[static_cast<size_t>(il)] = period == 0 ? 1 : (il % period < period - 1);
}

}  // namespace

ModelConfig ModelConfig::from_metadata(const Metadata& md) {
  ModelConfig c;
  const auto arch = md.get_string("general.architecture");
  if (!arch) STRATA_THROW("missing metadata key 'general.architecture'");
  c.arch = *arch;
  c.info = &find_arch(c.arch);
  c.name = md.string_or("general.name", "");
  const std::string& a = c.arch;
  c.n_layer = require_int(md, a + ".block_count", 1, 1024);
  c.n_embd = require_int(md, a + ".embedding_length", 1, kMaxDim);
  // MoE-only architectures may leave out the dense width; read_moe checks it where needed.
  c.n_ff = c.info->requires_experts ? optional_int(md, a + ".feed_forward_length", 0, 0, kMaxDim)
                                    : require_int(md, a + ".feed_forward_length", 1, kMaxDim);
  c.n_ctx_train = optional_int(md, a + ".context_length", 2048, 1, int64_t{1} << 24);
  read_attention(md, c);
  read_sliding_window(md, c);
  config_detail::read_rope(md, c);
  config_detail::read_moe(md, c);
  config_detail::read_mla(md, c);
  if (const auto v = md.get_int(a + ".vocab_size"))
    c.n_vocab = *v;
  else if (const GgufArray* toks = md.get_array("tokenizer.ggml.tokens"))
    c.n_vocab = static_cast<int64_t>(toks->size());
  return c;  // n_vocab is confirmed against token_embd when the weights are bound
}

std::string ModelConfig::summary() const {
  std::ostringstream ss;
  ss << arch << ": " << n_layer << " layers, n_embd " << n_embd << ", " << n_head << "/" << n_head_kv
     << " heads of " << head_dim;
  if (head_dim_v != head_dim) ss << "/" << head_dim_v;
  ss << ", ffn " << n_ff << ", vocab " << n_vocab << ", ctx " << n_ctx_train << ", rope base "
     << rope.freq_base << (rope.style == RopeStyle::NeoX ? " (neox)" : "");
  if (sliding_window) {
    int64_t n_swa = 0;
    for (uint8_t s : swa_layers) n_swa += s;
    ss << ", sliding window " << sliding_window << " on " << n_swa << "/" << n_layer << " layers";
  }
  if (moe.n_expert)
    ss << ", " << moe.n_expert << " experts (" << moe.n_expert_used << " used, ffn " << moe.n_ff_exp << ")";
  if (moe.n_ff_shexp) ss << ", shared expert ffn " << moe.n_ff_shexp;
  if (info->mla) ss << ", MLA kv_lora " << mla.kv_lora_rank << " q_lora " << mla.q_lora_rank;
  if (attn_softcap) ss << ", attn softcap " << attn_softcap;
  if (final_softcap) ss << ", final softcap " << final_softcap;
  return ss.str();
}

}  // namespace strata
