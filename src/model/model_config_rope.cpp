// Rotary-embedding hyper-parameters: base, scaling (linear, llama3, YaRN, LongRoPE's attention
// factor) and the separate set of the sliding-window layers.
#include <cfloat>
#include <cmath>

#include "core/check.h"
#include "model/model_config.h"

namespace strata::config_detail {
namespace {

// YaRN's attention-magnitude correction for a context extended by `scale` (Peng et al. 2023,
// sqrt(1/t) = 0.1 ln(s) + 1), with DeepSeek's multiplier m on the logarithm.
double yarn_mscale(double scale, double m) {
  return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0;
}

void read_yarn(const Metadata& md, const std::string& a, ModelConfig& c, double attn_factor_meta) {
  RopeParams& r = c.rope;
  r.scaling = RopeParams::Scaling::Yarn;
  r.factor = optional_float(md, a + ".rope.scaling.factor", 1.0, 1.0, 1e6);
  r.yarn_original_ctx = static_cast<int>(c.rope_orig_ctx);
  r.yarn_beta_fast = optional_float(md, a + ".rope.scaling.yarn_beta_fast", 32.0, 1e-3, 1e4);
  r.yarn_beta_slow = optional_float(md, a + ".rope.scaling.yarn_beta_slow", 1.0, 1e-3, 1e4);
  r.yarn_ext_factor = optional_float(md, a + ".rope.scaling.yarn_ext_factor", 1.0, 0.0, 1.0);
  // Only deepseek2 reads the logarithm multiplier (llama.cpp), which its converter stores
  // multiplied by 0.1.
  double log_mul = 0.0;
  if (c.info->mla)
    log_mul = optional_float(md, a + ".rope.scaling.yarn_log_multiplier", 0.0, 0.0, 10.0) / 0.1;
  c.mla.yarn_log_mul = log_mul;
  // The cos/sin magnitude, as llama.cpp derives it (llama-context.cpp: the mscale ratio of
  // transformers' modeling_rope_utils, with DeepSeek V2's mscale == mscale_all_dim special case).
  double mscale = 1.0;
  if (r.yarn_ext_factor != 0.0f) {
    if (log_mul != 0.0) {
      const double m = (c.info->mla && log_mul != 1.0) ? log_mul : 1.0;
      mscale = yarn_mscale(r.factor, m) / yarn_mscale(r.factor, log_mul);
    } else {
      mscale = yarn_mscale(r.factor, 1.0);
    }
  }
  r.attn_factor = static_cast<float>(attn_factor_meta * mscale);
}

}  // namespace

void read_rope(const Metadata& md, ModelConfig& c) {
  const std::string& a = c.arch;
  RopeParams& r = c.rope;
  r.style = c.info->rope_style;
  r.n_rot = static_cast<int>(optional_int(md, a + ".rope.dimension_count", c.head_dim, 2, c.head_dim));
  if (r.n_rot % 2 != 0) STRATA_THROW("rope dimension count ", r.n_rot, " is odd");
  // Any finite float >= 1 gives valid frequencies base^(-2i/n_rot) (llama.cpp reads the key as a
  // float with no range); embedded models (strata synth --from) use bases up to ~1e32.
  r.freq_base = optional_float(md, a + ".rope.freq_base", c.info->default_rope_base, 1.0, FLT_MAX);
  c.rope_orig_ctx =
      optional_int(md, a + ".rope.scaling.original_context_length", c.n_ctx_train, 1, int64_t{1} << 24);
  const double attn_factor_meta = optional_float(md, a + ".rope.scaling.attn_factor", 1.0, 1e-3, 100.0);
  r.attn_factor = static_cast<float>(attn_factor_meta);
  const bool has_factor = md.contains(a + ".rope.scaling.factor") || md.contains(a + ".rope.scale_linear");
  const std::string factor_key =
      md.contains(a + ".rope.scaling.factor") ? a + ".rope.scaling.factor" : a + ".rope.scale_linear";
  // As llama.cpp: a factor without a type is linear scaling.
  const std::string type = md.string_or(a + ".rope.scaling.type", has_factor ? "linear" : "none");
  if (type == "none" || type.empty() || type == "longrope") {
    // LongRoPE (phi3): rope_factors_long/short tensors and the attention factor; no position scaling.
    r.scaling = RopeParams::Scaling::None;
  } else if (type == "linear") {
    r.scaling = RopeParams::Scaling::Linear;
    r.factor = optional_float(md, factor_key, 1.0, 1e-3, 1e6);
  } else if (type == "llama3") {
    r.scaling = RopeParams::Scaling::Llama3;
    r.factor = optional_float(md, a + ".rope.scaling.factor", 8.0, 1e-3, 1e6);
    r.llama3_low_freq_factor = optional_float(md, a + ".rope.scaling.low_freq_factor", 1.0, 1e-6, 1e6);
    r.llama3_high_freq_factor = optional_float(md, a + ".rope.scaling.high_freq_factor", 4.0, 1e-6, 1e6);
    if (r.llama3_high_freq_factor <= r.llama3_low_freq_factor)
      STRATA_THROW("llama3 rope scaling needs high_freq_factor > low_freq_factor");
    r.llama3_original_ctx = static_cast<int>(
        optional_int(md, a + ".rope.scaling.original_context_length", 8192, 1, int64_t{1} << 24));
  } else if (type == "yarn") {
    read_yarn(md, a, c, attn_factor_meta);
  } else {
    STRATA_THROW("unsupported rope scaling type '", type,
                 "' (supported: none, linear, llama3, yarn, longrope)");
  }

  // Sliding-window layers: the same rotation unless the architecture rotates them unscaled
  // (gemma3 with its own base, olmo3), and rope.freq_base_swa when the file has it.
  RopeParams& s = c.rope_swa;
  s = r;
  if (c.info->swa_rope_unscaled) {
    s.scaling = RopeParams::Scaling::None;
    s.factor = 1.0f;
    s.attn_factor = 1.0f;
    if (c.info->default_swa_rope_base > 0.0) s.freq_base = static_cast<float>(c.info->default_swa_rope_base);
  }
  s.freq_base = optional_float(md, a + ".rope.freq_base_swa", s.freq_base, 1.0, FLT_MAX);
}

}  // namespace strata::config_detail
