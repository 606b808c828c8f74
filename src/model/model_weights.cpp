// Binding a model file's tensors to the decoder's layer weights: GGUF tensor names as llama.cpp
// writes them, every shape checked against the hyper-parameters, every tensor the architecture
// needs present (a missing or misshapen one is named in a one-line error).
#include <cmath>

#include "core/check.h"
#include "model/layer_weights.h"
#include "model/model.h"
#include "quant/quantize.h"

namespace strata {
namespace {

std::string shape_string(const TensorInfo& t) {
  std::string s;
  for (int j = 0; j < std::max(t.n_dims, 1); ++j)
    s += (j ? ", " : "") + std::to_string(t.ne[static_cast<size_t>(j)]);
  return s;
}

// Looks tensors up by name, checks them and prepares them on the backend.
class WeightBinder {
 public:
  WeightBinder(const ModelFile& f, Backend& backend, const W8A8Plan* w8a8)
      : f_(f), backend_(backend), w8a8_(w8a8) {}

  // The tensor, with its shape (GGUF ne order: innermost first) checked.
  const TensorInfo& expect(const std::string& name, std::initializer_list<int64_t> shape) const {
    const TensorInfo* t = f_.find_tensor(name);
    if (!t) STRATA_THROW("model is missing tensor '", name, "'");
    size_t i = 0;
    bool ok = t->n_dims <= static_cast<int>(shape.size());
    for (int64_t d : shape) ok = ok && t->ne[i++] == d;
    for (; i < 4; ++i) ok = ok && t->ne[i] == 1;
    if (!ok) {
      std::string want;
      for (int64_t d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
      STRATA_THROW("tensor '", name, "' has shape [", shape_string(*t), "], expected [", want, "]");
    }
    if (!is_storage_type(t->type))
      STRATA_THROW("tensor '", name, "' has unsupported type ", type_name(t->type));
    return *t;
  }
  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

  // A vector as f32 host values.
  std::vector<float> host(const std::string& name, int64_t n) const {
    const TensorInfo& t = expect(name, {n});
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, v.data(), n);
    for (float x : v)
      if (!std::isfinite(x)) STRATA_THROW("tensor '", name, "' has a non-finite value");
    return v;
  }
  // A vector (or a [rows, n] table) as f32 in backend memory.
  std::unique_ptr<BackendBuffer> vec(const std::string& name, int64_t n, int64_t rows = 1) const {
    const TensorInfo& t = rows == 1 ? expect(name, {n}) : expect(name, {n, rows});
    auto buf = backend_.alloc(static_cast<size_t>(n * rows) * sizeof(float));
    const size_t stride = row_bytes(t.type, n);
    for (int64_t r = 0; r < rows; ++r)
      dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + stride * static_cast<size_t>(r),
                     static_cast<float*>(buf->data()) + r * n, n);
    return buf;
  }
  // A backend that made its own copy no longer needs the file's pages: keep RSS ~ one copy.
  std::unique_ptr<BackendMatrix> prepared(const TensorInfo& t) const {
    auto m = w8a8_ && W8A8Plan::covers(t.name) ? backend_.prepare_w8a8_matrix(t, w8a8_absmax(t.name))
                                               : backend_.prepare_matrix(t);
    if (m->owned_bytes() > 0) f_.drop_tensor_pages(t);
    return m;
  }
  std::unique_ptr<BackendMatrix> mat(const std::string& name, int64_t n_out, int64_t n_in) const {
    return prepared(expect(name, {n_in, n_out}));
  }
  std::unique_ptr<BackendMatrixStack> stack(const std::string& name, int64_t n_out, int64_t n_in,
                                            int64_t n_mats) const {
    const TensorInfo& t = expect(name, {n_in, n_out, n_mats});
    auto s = backend_.prepare_matrix_stack(t);
    if (s->owned_bytes() > 0) f_.drop_tensor_pages(t);
    return s;
  }

 private:
  // The static activation absmax of a W8A8 matrix (0: dynamic).
  float w8a8_absmax(const std::string& name) const {
    if (!w8a8_->static_act) return 0.0f;
    const auto it = w8a8_->act_absmax.find(name);
    if (it == w8a8_->act_absmax.end() || !(it->second > 0.0f))
      STRATA_THROW("W8A8 static: the calibration statistics have no input max |x| for '", name,
                   "' (collect them with `strata calibrate` on this model)");
    return it->second;
  }

  const ModelFile& f_;
  Backend& backend_;
  const W8A8Plan* w8a8_;
};

void bind_attention(const WeightBinder& b, const ModelConfig& c, const std::string& p, AttentionWeights& w) {
  const ArchInfo& a = *c.info;
  const int64_t nq = c.n_embd_q(), nkv = c.n_embd_kv();
  if (a.attn_norm) w.norm = b.vec(p + "attn_norm.weight", c.n_embd);
  if (a.attn_post_norm) w.post_norm = b.vec(p + "post_attention_norm.weight", c.n_embd);
  if (a.mla) {
    const MlaConfig& m = c.mla;
    const int64_t q_rows = c.n_head * (m.qk_nope + m.qk_rope);
    if (m.q_lora_rank > 0) {
      w.wq_a = b.mat(p + "attn_q_a.weight", m.q_lora_rank, c.n_embd);
      w.q_a_norm = b.vec(p + "attn_q_a_norm.weight", m.q_lora_rank);
      w.wq_b = b.mat(p + "attn_q_b.weight", q_rows, m.q_lora_rank);
    } else {
      w.wq = b.mat(p + "attn_q.weight", q_rows, c.n_embd);
    }
    w.wkv_a = b.mat(p + "attn_kv_a_mqa.weight", m.kv_lora_rank + m.qk_rope, c.n_embd);
    w.kv_a_norm = b.vec(p + "attn_kv_a_norm.weight", m.kv_lora_rank);
    if (!b.has(p + "attn_k_b.weight") && b.has(p + "attn_kv_b.weight"))
      STRATA_THROW("tensor '", p, "attn_kv_b.weight' is the pre-MLA layout; Strata needs attn_k_b/attn_v_b ",
                   "(convert the model again with a current llama.cpp)");
    w.k_b = b.stack(p + "attn_k_b.weight", m.kv_lora_rank, m.qk_nope, c.n_head);
    w.v_b = b.stack(p + "attn_v_b.weight", m.v_head, m.kv_lora_rank, c.n_head);
    w.wo = b.mat(p + "attn_output.weight", c.n_embd, c.n_head * m.v_head);
    return;
  }
  if (a.fused_qkv) {
    w.wqkv = b.mat(p + "attn_qkv.weight", nq + 2 * nkv, c.n_embd);
  } else {
    w.wq = b.mat(p + "attn_q.weight", nq, c.n_embd);
    w.wk = b.mat(p + "attn_k.weight", nkv, c.n_embd);
    w.wv = b.mat(p + "attn_v.weight", nkv, c.n_embd);
  }
  w.wo = b.mat(p + "attn_output.weight", c.n_embd, nq);
  if (a.qkv_bias) {
    w.bq = b.vec(p + "attn_q.bias", nq);
    w.bk = b.vec(p + "attn_k.bias", nkv);
    w.bv = b.vec(p + "attn_v.bias", nkv);
  }
  if (a.out_bias) w.bo = b.vec(p + "attn_output.bias", c.n_embd);
  if (a.qk_norm != QkNorm::None) {
    const bool per_head = a.qk_norm == QkNorm::PerHead;
    w.q_norm = b.vec(p + "attn_q_norm.weight", per_head ? c.head_dim : nq);
    w.k_norm = b.vec(p + "attn_k_norm.weight", per_head ? c.head_dim : nkv);
  }
  if (a.attn_sinks) w.sinks = b.host(p + "attn_sinks.weight", c.n_head);
}

void bind_ffn(const WeightBinder& b, const ModelConfig& c, const std::string& p, bool moe, FfnWeights& w) {
  const ArchInfo& a = *c.info;
  if (a.ffn_norm) w.norm = b.vec(p + a.ffn_norm_tensor + ".weight", c.n_embd);
  if (a.ffn_post_norm) w.post_norm = b.vec(p + "post_ffw_norm.weight", c.n_embd);
  if (!moe) {
    if (a.fused_gate_up) {
      w.up = b.mat(p + "ffn_up.weight", 2 * c.n_ff, c.n_embd);
    } else {
      w.gate = b.mat(p + "ffn_gate.weight", c.n_ff, c.n_embd);
      w.up = b.mat(p + "ffn_up.weight", c.n_ff, c.n_embd);
    }
    w.down = b.mat(p + "ffn_down.weight", c.n_embd, c.n_ff);
    return;
  }
  const MoeConfig& m = c.moe;
  if (b.has(p + "ffn_gate_up_exps.weight"))
    STRATA_THROW("tensor '", p, "ffn_gate_up_exps.weight' (merged gate/up experts) is not supported");
  w.router = b.mat(p + "ffn_gate_inp.weight", m.n_expert, c.n_embd);
  if (b.has(p + "exp_probs_b.bias")) w.selection_bias = b.host(p + "exp_probs_b.bias", m.n_expert);
  w.gate_exps = b.stack(p + "ffn_gate_exps.weight", m.n_ff_exp, c.n_embd, m.n_expert);
  w.up_exps = b.stack(p + "ffn_up_exps.weight", m.n_ff_exp, c.n_embd, m.n_expert);
  w.down_exps = b.stack(p + "ffn_down_exps.weight", c.n_embd, m.n_ff_exp, m.n_expert);
  if (a.moe_biases) {  // gpt-oss
    w.router_bias = b.vec(p + "ffn_gate_inp.bias", m.n_expert);
    w.gate_exps_bias = b.vec(p + "ffn_gate_exps.bias", m.n_ff_exp, m.n_expert);
    w.up_exps_bias = b.vec(p + "ffn_up_exps.bias", m.n_ff_exp, m.n_expert);
    w.down_exps_bias = b.vec(p + "ffn_down_exps.bias", c.n_embd, m.n_expert);
  }
  if (m.n_ff_shexp > 0) {
    w.gate_shexp = b.mat(p + "ffn_gate_shexp.weight", m.n_ff_shexp, c.n_embd);
    w.up_shexp = b.mat(p + "ffn_up_shexp.weight", m.n_ff_shexp, c.n_embd);
    w.down_shexp = b.mat(p + "ffn_down_shexp.weight", c.n_embd, m.n_ff_shexp);
  }
}

}  // namespace

void Model::bind_weights() {
  ModelConfig& c = config_;
  const ModelFile& f = *file_;
  const WeightBinder b(f, backend_, options_.w8a8.get());
  const TensorInfo* embd = f.find_tensor("token_embd.weight");
  if (!embd) STRATA_THROW("model is missing tensor 'token_embd.weight'");
  if (c.n_vocab == 0) c.n_vocab = embd->ne[1];
  token_embd_ = &b.expect("token_embd.weight", {c.n_embd, c.n_vocab});
  if (tokenizer_->n_vocab() > c.n_vocab)
    STRATA_THROW("tokenizer has ", tokenizer_->n_vocab(), " tokens but the model only ", c.n_vocab);

  // Per-frequency rotary divisors: Llama 3.1's rope_freqs, or phi3's LongRoPE factors, long ones
  // when the context the model runs with exceeds the original one (llama.cpp's rule).
  const int64_t n_ctx = options_.n_ctx > 0 ? options_.n_ctx : c.n_ctx_train;
  const char* factors = f.find_tensor("rope_freqs.weight") ? "rope_freqs.weight"
                        : n_ctx > c.rope_orig_ctx && b.has("rope_factors_long.weight")
                            ? "rope_factors_long.weight"
                        : b.has("rope_factors_short.weight") ? "rope_factors_short.weight"
                                                             : nullptr;
  if (factors) {
    rope_freq_factors_ = b.host(factors, c.rope.n_rot / 2);
    for (float v : rope_freq_factors_)
      if (!(v > 0.0f)) STRATA_THROW("tensor '", factors, "' has a non-positive factor");
    c.rope.freq_factors = rope_freq_factors_.data();
    c.rope_swa.freq_factors = rope_freq_factors_.data();
  }

  layers_.resize(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    bind_attention(b, c, p, layers_[static_cast<size_t>(il)].attn);
    bind_ffn(b, c, p, c.is_moe_layer(il), layers_[static_cast<size_t>(il)].ffn);
  }
  output_norm_ = b.vec("output_norm.weight", c.n_embd);
  output_ = f.find_tensor("output.weight") ? b.mat("output.weight", c.n_vocab, c.n_embd)
                                           : b.prepared(*token_embd_);  // tied embeddings
  // Decode reads one embedding row per new token, in place: map the table now (after the tied
  // output's copy may have dropped its pages) instead of faulting in a page per new token.
  f.populate_tensor_pages(*token_embd_);
}

}  // namespace strata
