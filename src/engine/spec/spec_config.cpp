#include "engine/spec/spec_config.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace strata {
namespace {

DraftMethodSpec parse_one(const std::string& item) {
  const size_t colon = item.find(':');
  const std::string head = item.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : item.substr(colon + 1);
  auto need_arg = [&](DraftMethod m, const char* what) {
    if (arg.empty()) STRATA_THROW("speculative method '", item, "' needs ", what, " after ':'");
    return DraftMethodSpec{m, arg};
  };
  auto no_arg = [&](DraftMethod m) {
    if (colon != std::string::npos) STRATA_THROW("speculative method '", head, "' takes no argument");
    return DraftMethodSpec{m, ""};
  };
  if (head == "ngram") return no_arg(DraftMethod::Ngram);
  if (head == "suffix") return no_arg(DraftMethod::Suffix);
  if (head == "self") return need_arg(DraftMethod::SelfQuant, "a weight type (e.g. self:q4_0)");
  if (head == "skip") return need_arg(DraftMethod::SkipLayers, "layers (e.g. skip:3,5,7 or skip:auto)");
  if (head == "draft") return need_arg(DraftMethod::DraftModel, "a model file (draft:FILE)");
  STRATA_THROW("unknown speculative method '", item,
               "' (ngram, suffix, self:TYPE, skip:LAYERS|auto, draft:FILE)");
}

}  // namespace

std::string DraftMethodSpec::name() const {
  switch (method) {
    case DraftMethod::Ngram:
      return "ngram";
    case DraftMethod::Suffix:
      return "suffix";
    case DraftMethod::SelfQuant:
      return "self:" + arg;
    case DraftMethod::SkipLayers:
      return "skip:" + arg;
    case DraftMethod::DraftModel:
      return "draft:" + arg;
  }
  return "?";
}

std::vector<DraftMethodSpec> parse_spec_methods(const std::string& text) {
  std::vector<DraftMethodSpec> out;
  // skip:1,2,3 holds commas itself: a piece that is a bare number continues the previous skip list.
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    const bool number = !item.empty() && std::all_of(item.begin(), item.end(), ::isdigit);
    if (number && !out.empty() && out.back().method == DraftMethod::SkipLayers && out.back().arg != "auto") {
      out.back().arg += "," + item;
    } else {
      if (item.empty()) STRATA_THROW("empty speculative method in '", text, "'");
      out.push_back(parse_one(item));
    }
    begin = end + 1;
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = i + 1; j < out.size(); ++j)
      if (out[i].method == out[j].method)
        STRATA_THROW("speculative method '", out[i].name(), "' given twice");
  return out;
}

void validate_spec_config(const SpecConfig& c) {
  if (c.draft_max < 0 || c.draft_max > 64) STRATA_THROW("--draft-max must be in [0, 64], got ", c.draft_max);
  if (c.draft_min < 0 || c.draft_min > c.draft_max)
    STRATA_THROW("--draft-min must be in [0, draft-max], got ", c.draft_min);
  if (!std::isfinite(c.draft_p_min) || c.draft_p_min < 0.0f || c.draft_p_min > 1.0f)
    STRATA_THROW("--draft-p-min must be in [0, 1], got ", c.draft_p_min);
}

SpecOverride parse_spec_override(const nlohmann::json& j) {
  if (!j.is_object()) STRATA_THROW("'speculative' must be an object");
  SpecOverride o;
  for (auto it = j.begin(); it != j.end(); ++it) {
    // Named references, not structured bindings: C++20 lambdas may capture those, clang 14 not.
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    auto int_in = [&](int32_t lo, int32_t hi) {
      if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        STRATA_THROW("'speculative.", key, "' must be an integer in [", lo, ", ", hi, "]");
      return static_cast<int32_t>(v.get<int64_t>());
    };
    if (key == "enabled") {
      if (!v.is_boolean()) STRATA_THROW("'speculative.enabled' must be a boolean");
      o.enabled = v.get<bool>();
    } else if (key == "method" || key == "methods") {
      std::string text;
      if (v.is_string()) {
        text = v.get<std::string>();
      } else if (v.is_array()) {
        for (const auto& m : v) {
          if (!m.is_string()) STRATA_THROW("'speculative.", key, "' entries must be strings");
          text += (text.empty() ? "" : ",") + m.get<std::string>();
        }
      } else {
        STRATA_THROW("'speculative.", key, "' must be a string or a list of strings");
      }
      o.methods = parse_spec_methods(text);
    } else if (key == "draft_max" || key == "num_speculative_tokens") {
      o.draft_max = int_in(0, 64);
    } else if (key == "draft_min") {
      o.draft_min = int_in(0, 64);
    } else if (key == "draft_p_min") {
      if (!v.is_number() || !(v.get<double>() >= 0.0 && v.get<double>() <= 1.0))
        STRATA_THROW("'speculative.draft_p_min' must be a number in [0, 1]");
      o.draft_p_min = v.get<float>();
    } else {
      STRATA_THROW("unknown field 'speculative.", key, "'");
    }
  }
  return o;
}

SpecConfig resolve_spec(const SpecConfig& engine, const std::optional<SpecOverride>& request) {
  SpecConfig c = engine;
  if (!request) return c;
  const SpecOverride& o = *request;
  if (o.methods) {
    for (const DraftMethodSpec& m : *o.methods) {
      const bool cheap = m.method == DraftMethod::Ngram || m.method == DraftMethod::Suffix;
      const bool loaded = std::find(engine.methods.begin(), engine.methods.end(), m) != engine.methods.end();
      if (!cheap && !loaded)
        STRATA_THROW("speculative method '", m.name(),
                     "' is not loaded by this server (start it with --spec ", m.name(), ")");
    }
    c.methods = *o.methods;
  }
  if (o.draft_max) c.draft_max = *o.draft_max;
  if (o.draft_min) c.draft_min = *o.draft_min;
  if (o.draft_p_min) c.draft_p_min = *o.draft_p_min;
  if (o.enabled && !*o.enabled) c.methods.clear();
  if (o.enabled && *o.enabled && c.methods.empty()) c.methods = {DraftMethodSpec{DraftMethod::Ngram, ""}};
  validate_spec_config(c);
  return c;
}

}  // namespace strata
