// Random-weight GGUF files of the newer architectures (qwen3, qwen3moe, gemma2/3, phi3, Mixtral-style
// llama, deepseek2, gpt-oss, olmo2) for benchmarks at real sizes: the metadata llama.cpp's
// converters write for each, validated by ModelConfig, and every tensor the decoder binds, with
// llama.cpp's names and shapes. Norm weights are 1, everything else N(0, 0.02).
#include <cmath>

#include "core/check.h"
#include "core/thread_pool.h"
#include "formats/gguf_writer.h"
#include "model/model_config.h"
#include "model/synthetic_model.h"
#include "quant/quantize.h"

namespace strata {
namespace {

Metadata arch_metadata(const SynthPreset& p, TensorType type) {
  Metadata md;
  const std::string& a = p.arch;
  auto u32 = [&](const std::string& key, int64_t v) {
    md.set(a + "." + key, GgufValue::of_u32(static_cast<uint32_t>(v)));
  };
  auto f32 = [&](const std::string& key, float v) { md.set(a + "." + key, GgufValue::of_f32(v)); };
  md.set("general.architecture", GgufValue::of_string(a));
  md.set("general.name", GgufValue::of_string("strata-synth-" + p.name));
  u32("context_length", p.n_ctx);
  u32("embedding_length", p.n_embd);
  if (p.n_ff > 0) u32("feed_forward_length", p.n_ff);
  u32("block_count", p.n_layer);
  u32("attention.head_count", p.n_head);
  u32("attention.head_count_kv", p.n_head_kv);
  f32("attention.layer_norm_rms_epsilon", 1e-6f);
  f32("rope.freq_base", p.rope_base);
  const int64_t head_dim = p.head_dim > 0 ? p.head_dim : p.n_embd / p.n_head;
  if (p.head_dim > 0) {
    u32("attention.key_length", p.head_dim);
    u32("attention.value_length", p.head_dim);
  }
  u32("rope.dimension_count", p.arch == "deepseek2" ? p.qk_rope : head_dim);
  if (p.sliding_window > 0) u32("attention.sliding_window", p.sliding_window);
  if (a == "gemma2") {
    f32("attn_logit_softcapping", 50.0f);
    f32("final_logit_softcapping", 30.0f);
  }
  if (a == "gemma3") {
    md.set(a + ".rope.scaling.type", GgufValue::of_string("linear"));
    f32("rope.scaling.factor", 8.0f);
  }
  if (a == "gpt-oss") {  // gpt-oss-20b's YaRN: 32 x its 4096 original context
    md.set(a + ".rope.scaling.type", GgufValue::of_string("yarn"));
    f32("rope.scaling.factor", 32.0f);
    u32("rope.scaling.original_context_length", 4096);
  }
  if (p.n_expert > 0) {
    u32("expert_count", p.n_expert);
    u32("expert_used_count", p.n_expert_used);
    u32("expert_feed_forward_length", p.n_ff_exp);
  }
  if (a == "deepseek2") {
    u32("leading_dense_block_count", p.n_dense_lead);
    u32("expert_shared_count", p.n_expert_shared);
    u32("expert_group_count", p.n_group);
    u32("expert_group_used_count", p.n_group_used);
    u32("expert_gating_func", 2);  // sigmoid
    md.set(a + ".expert_weights_norm", GgufValue::of_bool(true));
    f32("expert_weights_scale", 2.5f);
    u32("attention.q_lora_rank", p.q_lora);
    u32("attention.kv_lora_rank", p.kv_lora);
    // The absorbed (MQA) geometry llama.cpp's converter writes, and the per-head MLA sizes.
    u32("attention.head_count_kv", 1);
    u32("attention.key_length", p.kv_lora + p.qk_rope);
    u32("attention.value_length", p.kv_lora);
    u32("attention.key_length_mla", p.qk_nope + p.qk_rope);
    u32("attention.value_length_mla", p.v_head);
  }
  u32("vocab_size", p.n_vocab);
  md.set("general.file_type", GgufValue::of_u32(static_cast<uint32_t>(type)));
  add_synthetic_vocab(md, p.n_vocab);
  return md;
}

// Adds tensors to a writer: norms of ones, gaussian matrices (stacks of them for experts and MLA's
// per-head projections) quantized to the wanted type where the rows allow it, small biases.
class TensorAdder {
 public:
  TensorAdder(GgufWriter& w, const SynthOptions& o, ThreadPool& pool) : w_(w), o_(o), pool_(pool) {}

  void ones(const std::string& name, int64_t n) {
    w_.add_tensor(name, TensorType::F32, {n}, [n](void* dst, size_t) {
      std::fill(static_cast<float*>(dst), static_cast<float*>(dst) + n, 1.0f);
    });
  }
  // [rows, n] f32 values N(0, sigma) (biases, sinks; the router stays f32 as llama.cpp leaves it).
  void f32(const std::string& name, int64_t n, int64_t rows = 1, float sigma = 0.02f) {
    const uint64_t id = next_++;
    const std::vector<int64_t> ne = rows == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, rows};
    w_.add_tensor(name, TensorType::F32, ne, [=, this](void* dst, size_t) {
      for (int64_t r = 0; r < rows; ++r)
        fill_gaussian_row(static_cast<float*>(dst) + r * n, n, o_.seed, id, r, sigma);
    });
  }
  // n_mats matrices [n_out, n_in] back to back (n_mats 1: a plain matrix).
  void matrix(const std::string& name, int64_t n_out, int64_t n_in, int64_t n_mats = 1) {
    const TensorType type = fallback_type(o_.type, n_in);
    const uint64_t id = next_++;
    const std::vector<int64_t> ne =
        n_mats == 1 ? std::vector<int64_t>{n_in, n_out} : std::vector<int64_t>{n_in, n_out, n_mats};
    w_.add_tensor(name, type, ne, [=, this](void* dst, size_t) {
      const int64_t rows = n_out * n_mats;
      std::vector<float> buf(static_cast<size_t>(n_in * std::min<int64_t>(rows, 4096)));
      const size_t stride = row_bytes(type, n_in);
      for (int64_t r0 = 0; r0 < rows; r0 += 4096) {  // a bounded slice of rows at a time
        const int64_t nr = std::min<int64_t>(4096, rows - r0);
        pool_.parallel_for(nr, 64, [&](int64_t b, int64_t e, int) {
          for (int64_t r = b; r < e; ++r)
            fill_gaussian_row(buf.data() + r * n_in, n_in, o_.seed, id, r0 + r, 0.02f);
        });
        quantize_rows(type, buf.data(), static_cast<uint8_t*>(dst) + stride * static_cast<size_t>(r0), nr,
                      n_in, nullptr, &pool_);
      }
    });
  }

 private:
  GgufWriter& w_;
  const SynthOptions& o_;
  ThreadPool& pool_;
  uint64_t next_ = 0;
};

void add_attention(TensorAdder& t, const ModelConfig& c, const std::string& b) {
  const ArchInfo& a = *c.info;
  if (a.attn_norm) t.ones(b + "attn_norm.weight", c.n_embd);
  if (a.attn_post_norm) t.ones(b + "post_attention_norm.weight", c.n_embd);
  if (a.mla) {
    const MlaConfig& m = c.mla;
    const int64_t q_rows = c.n_head * (m.qk_nope + m.qk_rope);
    if (m.q_lora_rank > 0) {
      t.matrix(b + "attn_q_a.weight", m.q_lora_rank, c.n_embd);
      t.ones(b + "attn_q_a_norm.weight", m.q_lora_rank);
      t.matrix(b + "attn_q_b.weight", q_rows, m.q_lora_rank);
    } else {
      t.matrix(b + "attn_q.weight", q_rows, c.n_embd);
    }
    t.matrix(b + "attn_kv_a_mqa.weight", m.kv_lora_rank + m.qk_rope, c.n_embd);
    t.ones(b + "attn_kv_a_norm.weight", m.kv_lora_rank);
    t.matrix(b + "attn_k_b.weight", m.kv_lora_rank, m.qk_nope, c.n_head);
    t.matrix(b + "attn_v_b.weight", m.v_head, m.kv_lora_rank, c.n_head);
    t.matrix(b + "attn_output.weight", c.n_embd, c.n_head * m.v_head);
    return;
  }
  const int64_t nq = c.n_embd_q(), nkv = c.n_embd_kv();
  if (a.fused_qkv) {
    t.matrix(b + "attn_qkv.weight", nq + 2 * nkv, c.n_embd);
  } else {
    t.matrix(b + "attn_q.weight", nq, c.n_embd);
    t.matrix(b + "attn_k.weight", nkv, c.n_embd);
    t.matrix(b + "attn_v.weight", nkv, c.n_embd);
  }
  t.matrix(b + "attn_output.weight", c.n_embd, nq);
  if (a.qkv_bias) {
    t.f32(b + "attn_q.bias", nq);
    t.f32(b + "attn_k.bias", nkv);
    t.f32(b + "attn_v.bias", nkv);
  }
  if (a.out_bias) t.f32(b + "attn_output.bias", c.n_embd);
  if (a.qk_norm != QkNorm::None) {
    const bool per_head = a.qk_norm == QkNorm::PerHead;
    t.ones(b + "attn_q_norm.weight", per_head ? c.head_dim : nq);
    t.ones(b + "attn_k_norm.weight", per_head ? c.head_dim : nkv);
  }
  if (a.attn_sinks) t.f32(b + "attn_sinks.weight", c.n_head, 1, 1.0f);
}

void add_ffn(TensorAdder& t, const ModelConfig& c, const std::string& b, bool moe) {
  const ArchInfo& a = *c.info;
  if (a.ffn_norm) t.ones(b + a.ffn_norm_tensor + ".weight", c.n_embd);
  if (a.ffn_post_norm) t.ones(b + "post_ffw_norm.weight", c.n_embd);
  if (!moe) {
    if (!a.fused_gate_up) t.matrix(b + "ffn_gate.weight", c.n_ff, c.n_embd);
    t.matrix(b + "ffn_up.weight", c.n_ff * (a.fused_gate_up ? 2 : 1), c.n_embd);
    t.matrix(b + "ffn_down.weight", c.n_embd, c.n_ff);
    return;
  }
  const MoeConfig& m = c.moe;
  t.f32(b + "ffn_gate_inp.weight", c.n_embd, m.n_expert);
  if (a.moe_biases) t.f32(b + "ffn_gate_inp.bias", m.n_expert);
  t.matrix(b + "ffn_gate_exps.weight", m.n_ff_exp, c.n_embd, m.n_expert);
  t.matrix(b + "ffn_up_exps.weight", m.n_ff_exp, c.n_embd, m.n_expert);
  t.matrix(b + "ffn_down_exps.weight", c.n_embd, m.n_ff_exp, m.n_expert);
  if (a.moe_biases) {  // gpt-oss: biases on the router and every expert
    t.f32(b + "ffn_gate_exps.bias", m.n_ff_exp, m.n_expert);
    t.f32(b + "ffn_up_exps.bias", m.n_ff_exp, m.n_expert);
    t.f32(b + "ffn_down_exps.bias", c.n_embd, m.n_expert);
  }
  if (m.gating == MoeGating::Sigmoid) t.f32(b + "exp_probs_b.bias", m.n_expert);
  if (m.n_ff_shexp > 0) {
    t.matrix(b + "ffn_gate_shexp.weight", m.n_ff_shexp, c.n_embd);
    t.matrix(b + "ffn_up_shexp.weight", m.n_ff_shexp, c.n_embd);
    t.matrix(b + "ffn_down_shexp.weight", c.n_embd, m.n_ff_shexp);
  }
}

}  // namespace

bool is_arch_preset(const SynthPreset& p) {
  return p.n_expert > 0 || (p.arch != "llama" && p.arch != "mistral" && p.arch != "qwen2");
}

void write_arch_synthetic_model(const SynthPreset& p, const SynthOptions& o, const std::string& path,
                                const std::function<void(size_t, size_t)>& progress) {
  GgufWriter w;
  w.set_metadata(arch_metadata(p, o.type));
  const ModelConfig c = ModelConfig::from_metadata(w.metadata());  // the preset is a valid model
  ThreadPool pool(o.n_threads);
  TensorAdder t(w, o, pool);
  t.matrix("token_embd.weight", p.n_vocab, p.n_embd);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    add_attention(t, c, b);
    add_ffn(t, c, b, c.is_moe_layer(il));
  }
  t.ones("output_norm.weight", p.n_embd);
  t.matrix("output.weight", p.n_vocab, p.n_embd);
  const size_t total = w.tensor_count();
  w.write(path, [&](size_t i) {
    if (progress) progress(i + 1, total);
  });
}

}  // namespace strata
