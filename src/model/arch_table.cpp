#include "model/arch_table.h"

#include "core/check.h"

namespace strata {
namespace {

// One entry per architecture: only what differs from the ArchInfo defaults.
std::vector<ArchInfo> make_table() {
  std::vector<ArchInfo> t;
  ArchInfo a;

  a = ArchInfo{"llama"};  // Llama 1-3, Mixtral (experts optional)
  a.rope_style = RopeStyle::Interleaved;
  a.default_norm_weights = true;
  t.push_back(a);

  a = ArchInfo{"mistral"};
  a.rope_style = RopeStyle::Interleaved;
  a.default_norm_weights = true;
  t.push_back(a);

  a = ArchInfo{"qwen2"};
  a.default_rope_base = 1e6;
  a.qkv_bias = true;
  t.push_back(a);

  a = ArchInfo{"qwen3"};
  a.default_rope_base = 1e6;
  a.qk_norm = QkNorm::PerHead;
  t.push_back(a);

  a = ArchInfo{"qwen3moe"};
  a.default_rope_base = 1e6;
  a.qk_norm = QkNorm::PerHead;
  a.requires_experts = true;
  a.default_norm_weights = true;
  t.push_back(a);

  a = ArchInfo{"gemma2"};
  a.ffn_act = GluKind::GeluTanh;
  a.attn_post_norm = true;
  a.ffn_post_norm = true;
  a.embd_scale_sqrt = true;
  a.default_swa_pattern = 2;
  a.default_attn_softcap = 50.0f;
  a.default_final_softcap = 30.0f;
  t.push_back(a);

  a = ArchInfo{"gemma3"};
  a.ffn_act = GluKind::GeluTanh;
  a.attn_post_norm = true;
  a.ffn_post_norm = true;
  a.qk_norm = QkNorm::PerHead;
  a.embd_scale_sqrt = true;
  a.default_swa_pattern = 6;
  a.swa_rope_unscaled = true;
  a.default_swa_rope_base = 10000.0;
  t.push_back(a);

  a = ArchInfo{"phi3"};
  a.fused_qkv = true;
  a.fused_gate_up = true;
  t.push_back(a);

  a = ArchInfo{"olmo2"};
  a.attn_norm = false;
  a.attn_post_norm = true;
  a.ffn_norm = false;
  a.ffn_post_norm = true;
  a.qk_norm = QkNorm::Whole;
  a.default_swa_pattern = 4;  // olmo3, when the file has a sliding window
  a.swa_rope_unscaled = true;
  t.push_back(a);

  a = ArchInfo{"deepseek2"};
  a.rope_style = RopeStyle::Interleaved;
  a.mla = true;
  a.requires_experts = true;
  t.push_back(a);

  a = ArchInfo{"gpt-oss"};
  a.ffn_act = GluKind::SwigluOai;
  a.ffn_norm_tensor = "post_attention_norm";
  a.qkv_bias = true;
  a.out_bias = true;
  a.attn_sinks = true;
  a.moe_biases = true;
  a.default_swa_pattern = 2;
  a.requires_experts = true;
  a.default_gating = MoeGating::SoftmaxWeight;
  t.push_back(a);
  return t;
}

const std::vector<ArchInfo>& table() {
  static const std::vector<ArchInfo> t = make_table();
  return t;
}

}  // namespace

std::string supported_arch_names() {
  std::string names;
  for (const ArchInfo& a : table()) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

const ArchInfo& find_arch(const std::string& arch) {
  for (const ArchInfo& a : table())
    if (arch == a.name) return a;
  STRATA_THROW("unsupported architecture '", arch, "' (supported: ", supported_arch_names(), ")");
}

}  // namespace strata
