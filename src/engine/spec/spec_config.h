// What speculative decoding runs: a chain of draft methods tried in order (the first that
// proposes something for a sequence wins), draft lengths and the drafter's confidence cut-off.
// Engine-wide from `--spec`, `--draft-max`, `--draft-min`, `--draft-p-min`; per request from the
// JSON body's "speculative" object (parse_spec_override).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace strata {

enum class DraftMethod {
  Ngram,       // prompt lookup: continue an earlier occurrence of the last n tokens
  Suffix,      // suffix structure over the request plus a bounded cross-request cache
  SelfQuant,   // the target re-quantized at load to a low-bit type (QSpec-style)
  SkipLayers,  // the target with some layers skipped (SWIFT-style), sharing its KV cache
  DraftModel,  // a separate draft model file with the same vocabulary
};

struct DraftMethodSpec {
  DraftMethod method = DraftMethod::Ngram;
  std::string arg;           // SelfQuant: type name; SkipLayers: "auto" or a layer list; DraftModel: file
  std::string name() const;  // as written on the command line: "ngram", "self:q4_0", ...
  bool operator==(const DraftMethodSpec&) const = default;
};

struct SpecConfig {
  std::vector<DraftMethodSpec> methods;  // empty: speculation off
  int32_t draft_max = 16;                // most drafted tokens per sequence and step
  int32_t draft_min = 0;                 // a proposal shorter than this is dropped
  // Model drafters stop when their top token is less likely than this. 0 (not llama.cpp's 0.75):
  // a self-draft agrees with the target far more often than its own top probability says (78%
  // accepted at p_min 0 on the benchmark's 1.1B model, nothing proposed at 0.75), and the
  // adaptive controller already sizes drafts by the measured acceptance and costs.
  float draft_p_min = 0.0f;
  bool adaptive = true;          // draft lengths chosen by acceptance and step cost
  std::string calibration_text;  // skip:auto: calibrate on this text (empty: first prompt)

  bool enabled() const { return !methods.empty() && draft_max > 0; }
};

// Per-request override; unset fields keep the engine's values.
struct SpecOverride {
  std::optional<bool> enabled;
  std::optional<std::vector<DraftMethodSpec>> methods;  // a subset of the engine's, or ngram/suffix
  std::optional<int32_t> draft_max, draft_min;
  std::optional<float> draft_p_min;
};

// "ngram", "suffix", "self:TYPE", "skip:LAYERS" (comma list of layer numbers, or "auto"),
// "draft:FILE"; several joined by ','. Throws strata::Error naming the bad method.
std::vector<DraftMethodSpec> parse_spec_methods(const std::string& text);
void validate_spec_config(const SpecConfig& c);

// The "speculative" object of a request body: {"enabled", "method" (string or list),
// "draft_max" / "num_speculative_tokens", "draft_min", "draft_p_min"}. Unknown fields or
// values out of range throw strata::Error (a 400).
SpecOverride parse_spec_override(const nlohmann::json& j);

// The configuration a request runs with: the engine's, overridden. Throws strata::Error when the
// override asks for a model drafter the engine did not load.
SpecConfig resolve_spec(const SpecConfig& engine, const std::optional<SpecOverride>& request);

}  // namespace strata
