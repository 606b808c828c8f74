#include "model/model_config.h"

#include <cfloat>
#include <cmath>
#include <sstream>

#include "core/check.h"

namespace strata {
namespace {

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

void read_rope(const Metadata& md, const std::string& a, ModelConfig& c) {
  RopeParams& r = c.rope;
  r.style = c.arch == "qwen2" ? RopeStyle::NeoX : RopeStyle::Interleaved;
  r.n_rot = static_cast<int>(optional_int(md, a + ".rope.dimension_count", c.head_dim, 2, c.head_dim));
  if (r.n_rot % 2 != 0) STRATA_THROW("rope dimension count ", r.n_rot, " is odd");
  // Any finite float >= 1 gives valid frequencies base^(-2i/n_rot) (llama.cpp reads the key as a
  // float with no range); embedded models (strata synth --from) use bases up to ~1e32.
  r.freq_base = optional_float(md, a + ".rope.freq_base", c.arch == "qwen2" ? 1e6 : 1e4, 1.0, FLT_MAX);
  const std::string type = md.string_or(a + ".rope.scaling.type", "none");
  if (type == "none" || type.empty()) {
    r.scaling = RopeParams::Scaling::None;
  } else if (type == "linear") {
    r.scaling = RopeParams::Scaling::Linear;
    r.factor = optional_float(md, a + ".rope.scaling.factor", 1.0, 1e-3, 1e6);
  } else if (type == "llama3") {
    r.scaling = RopeParams::Scaling::Llama3;
    r.factor = optional_float(md, a + ".rope.scaling.factor", 8.0, 1e-3, 1e6);
    r.llama3_low_freq_factor = optional_float(md, a + ".rope.scaling.low_freq_factor", 1.0, 1e-6, 1e6);
    r.llama3_high_freq_factor = optional_float(md, a + ".rope.scaling.high_freq_factor", 4.0, 1e-6, 1e6);
    if (r.llama3_high_freq_factor <= r.llama3_low_freq_factor)
      STRATA_THROW("llama3 rope scaling needs high_freq_factor > low_freq_factor");
    r.llama3_original_ctx = static_cast<int>(
        optional_int(md, a + ".rope.scaling.original_context_length", 8192, 1, int64_t{1} << 24));
  } else {
    STRATA_THROW("unsupported rope scaling type '", type, "'");
  }
}

}  // namespace

ModelConfig ModelConfig::from_metadata(const Metadata& md) {
  ModelConfig c;
  const auto arch = md.get_string("general.architecture");
  if (!arch) STRATA_THROW("missing metadata key 'general.architecture'");
  c.arch = *arch;
  if (c.arch != "llama" && c.arch != "mistral" && c.arch != "qwen2")
    STRATA_THROW("unsupported architecture '", c.arch, "' (supported: llama, mistral, qwen2)");
  c.name = md.string_or("general.name", "");
  const std::string& a = c.arch;
  constexpr int64_t kMaxDim = int64_t{1} << 20;
  c.n_layer = require_int(md, a + ".block_count", 1, 1024);
  c.n_embd = require_int(md, a + ".embedding_length", 1, kMaxDim);
  c.n_ff = require_int(md, a + ".feed_forward_length", 1, kMaxDim);
  c.n_head = require_int(md, a + ".attention.head_count", 1, 1024);
  c.n_head_kv = optional_int(md, a + ".attention.head_count_kv", c.n_head, 1, c.n_head);
  if (c.n_head % c.n_head_kv != 0)
    STRATA_THROW("head_count ", c.n_head, " is not a multiple of head_count_kv ", c.n_head_kv);
  if (!md.contains(a + ".attention.key_length") && c.n_embd % c.n_head != 0)
    STRATA_THROW("embedding_length ", c.n_embd, " is not a multiple of head_count ", c.n_head);
  c.head_dim = optional_int(md, a + ".attention.key_length", c.n_embd / c.n_head, 2, 256);
  const int64_t v_len = optional_int(md, a + ".attention.value_length", c.head_dim, 1, 256);
  if (v_len != c.head_dim) STRATA_THROW("key_length != value_length is not supported");
  if (c.head_dim % 2 != 0 || c.head_dim > 256) STRATA_THROW("head dimension ", c.head_dim, " unsupported");
  c.n_ctx_train = optional_int(md, a + ".context_length", 2048, 1, int64_t{1} << 24);
  c.rms_eps = optional_float(md, a + ".attention.layer_norm_rms_epsilon", 1e-5, 1e-12, 1.0);
  c.sliding_window = optional_int(md, a + ".attention.sliding_window", 0, 0, int64_t{1} << 24);
  c.qkv_bias = c.arch == "qwen2";
  read_rope(md, a, c);
  if (const auto v = md.get_int(a + ".vocab_size"))
    c.n_vocab = *v;
  else if (const GgufArray* toks = md.get_array("tokenizer.ggml.tokens"))
    c.n_vocab = static_cast<int64_t>(toks->size());
  return c;  // n_vocab is confirmed against token_embd when the weights are bound
}

std::string ModelConfig::summary() const {
  std::ostringstream ss;
  ss << arch << ": " << n_layer << " layers, n_embd " << n_embd << ", " << n_head << "/" << n_head_kv
     << " heads of " << head_dim << ", ffn " << n_ff << ", vocab " << n_vocab << ", ctx " << n_ctx_train
     << ", rope base " << rope.freq_base << (rope.style == RopeStyle::NeoX ? " (neox)" : "");
  if (sliding_window) ss << ", sliding window " << sliding_window;
  return ss.str();
}

}  // namespace strata
