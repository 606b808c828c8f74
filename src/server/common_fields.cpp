#include "server/common_fields.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "engine/spec/spec_config.h"
#include "server/api_error.h"

namespace strata::server {
namespace {

constexpr size_t kMaxSmallStringBytes = 1024;  // user, cache_salt, model

}  // namespace

void parse_model(const JsonFields& f, const ServedModel& model) {
  // OpenAI requires `model`; like vLLM, an absent one means the served model, and another
  // name is a 404 (as OpenAI answers for a model that does not exist).
  const auto name = f.string("model", kMaxSmallStringBytes);
  if (name && *name != model.name)
    throw not_found("The model '" + *name + "' does not exist; this server serves '" + model.name + "'.",
                    "model_not_found");
}

namespace {

void parse_choices(const JsonFields& f, GenerationRequest& req) {
  req.params.n = static_cast<int32_t>(f.integer("n", 1, kMaxChoicesPerRequest).value_or(1));
  // best_of (legacy completions) picks the best of several by logprob; only best_of == n,
  // where it changes nothing, is accepted.
  if (const auto best_of = f.integer("best_of", 1, kMaxChoicesPerRequest);
      best_of && *best_of != req.params.n)
    throw invalid_value("best_of", "'best_of' different from 'n' is not supported.");
}

void parse_sampling(const JsonFields& f, const ServedModel& model, SamplingParams& s) {
  s.temperature = static_cast<float>(f.number("temperature", 0.0, 100.0).value_or(1.0));
  s.top_p = static_cast<float>(f.number("top_p", 0.0, 1.0, /*lo_open=*/true).value_or(1.0));
  // top_k: vLLM uses -1 (and 0) for "off"; values above the vocabulary size change nothing.
  const int64_t top_k = f.integer("top_k", -1, INT32_MAX).value_or(0);
  s.top_k = top_k < 0 ? 0 : static_cast<int32_t>(std::min<int64_t>(top_k, model.tokenizer->n_vocab()));
  s.min_p = static_cast<float>(f.number("min_p", 0.0, 1.0).value_or(0.0));
  s.presence_penalty = static_cast<float>(f.number("presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty = static_cast<float>(f.number("frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.repetition_penalty =
      static_cast<float>(f.number("repetition_penalty", 0.0, 10.0, /*lo_open=*/true).value_or(1.0));
  if (const auto seed = f.integer("seed", INT64_MIN, INT64_MAX)) s.seed = static_cast<uint64_t>(*seed);
}

int32_t parse_token_id(std::string_view key, int32_t n_vocab) {
  int64_t id = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  if (ec != std::errc() || end != key.data() + key.size() || id < 0 || id >= n_vocab)
    throw invalid_value("logit_bias", "'logit_bias' keys must be token ids in [0, " +
                                          std::to_string(n_vocab - 1) + "], got \"" +
                                          std::string(key.substr(0, 40)) + "\".");
  return static_cast<int32_t>(id);
}

void parse_logit_bias(const JsonFields& f, int32_t n_vocab, SamplingParams& s) {
  const ChatJson* bias = f.get("logit_bias");
  if (!bias) return;
  if (!bias->is_object())
    throw invalid_type("logit_bias",
                       std::string("'logit_bias' must be an object mapping token ids to numbers, got ") +
                           json_type_phrase(*bias) + ".");
  for (const auto& [key, value] : bias->items()) {
    const int32_t id = parse_token_id(key, n_vocab);
    const double b = json_number(value, "logit_bias", -100.0, 100.0);
    s.logit_bias.emplace_back(id, static_cast<float>(b));
  }
}

void parse_stop(const JsonFields& f, int32_t n_vocab, StopConditions& stop) {
  if (const ChatJson* v = f.get("stop")) {
    auto add = [&](const ChatJson& s, const std::string& name) {
      const std::string& text = json_string(s, name, kMaxStopStringBytes);
      if (text.empty()) throw invalid_value(name, "'" + name + "' must not be an empty string.");
      stop.stop_strings.push_back(text);
    };
    if (v->is_string()) {
      add(*v, "stop");
    } else if (v->is_array()) {
      if (v->size() > kMaxStopStrings)
        throw invalid_value("stop",
                            "'stop' may hold at most " + std::to_string(kMaxStopStrings) + " strings.");
      for (size_t i = 0; i < v->size(); ++i) add((*v)[i], "stop[" + std::to_string(i) + "]");
    } else {
      throw invalid_type("stop", std::string("'stop' must be a string or an array of strings, got ") +
                                     json_type_phrase(*v) + ".");
    }
  }
  if (const ChatJson* ids = f.get("stop_token_ids")) {  // vLLM's extension
    if (!ids->is_array() || ids->size() > 64)
      throw invalid_type("stop_token_ids", "'stop_token_ids' must be an array of at most 64 token ids.");
    for (size_t i = 0; i < ids->size(); ++i)
      stop.stop_token_ids.push_back(static_cast<int32_t>(
          json_integer((*ids)[i], "stop_token_ids[" + std::to_string(i) + "]", 0, n_vocab - 1)));
  }
  stop.ignore_eos = f.boolean("ignore_eos").value_or(false);
}

void parse_streaming(const JsonFields& f, GenerationRequest& req) {
  req.stream = f.boolean("stream").value_or(false);
  const ChatJson* opts = f.get("stream_options");
  if (!opts) return;
  if (!opts->is_object())
    throw invalid_type("stream_options", std::string("'stream_options' must be an object, got ") +
                                             json_type_phrase(*opts) + ".");
  if (!req.stream)
    throw invalid_value("stream_options", "'stream_options' is only allowed when 'stream' is true.");
  auto it = opts->find("include_usage");
  if (it != opts->end() && !it->is_null()) {
    if (!it->is_boolean())
      throw invalid_type("stream_options.include_usage", "'stream_options.include_usage' must be a boolean.");
    req.include_usage = it->get<bool>();
  }
}

}  // namespace

std::optional<int32_t> parse_common_fields(const JsonFields& f, const ServedModel& model,
                                           GenerationRequest& req) {
  parse_model(f, model);
  parse_choices(f, req);
  const int32_t n_vocab = model.tokenizer->n_vocab();
  parse_sampling(f, model, req.params.sampling);
  parse_logit_bias(f, n_vocab, req.params.sampling);
  parse_stop(f, n_vocab, req.params.stop);
  parse_streaming(f, req);
  f.string("user", kMaxSmallStringBytes);  // accepted and ignored (type-checked)
  if (const auto salt = f.string("cache_salt", kMaxSmallStringBytes)) {
    if (salt->empty()) throw invalid_value("cache_salt", "'cache_salt' must not be empty.");
    req.params.cache_salt = *salt;
  }
  if (const ChatJson* spec = f.get("speculative")) {  // Strata's extension: per-request speculation
    try {
      req.params.speculative = parse_spec_override(nlohmann::json::parse(spec->dump()));
    } catch (const Error& e) {
      throw invalid_value("speculative", e.what());
    }
  }
  // max_completion_tokens is the newer name; when both are given it wins, as in OpenAI.
  std::optional<int64_t> max_tokens = f.integer("max_completion_tokens", 1, INT32_MAX);
  if (!max_tokens) max_tokens = f.integer("max_tokens", 1, INT32_MAX);
  if (!max_tokens) return std::nullopt;
  return static_cast<int32_t>(*max_tokens);
}

void resolve_output_limit(GenerationRequest& req, const ServedModel& model, std::optional<int32_t> max_tokens,
                          bool default_fills_context) {
  if (req.n_choices() > kMaxChoicesPerRequest)
    throw invalid_value("n", "A request may ask for at most " + std::to_string(kMaxChoicesPerRequest) +
                                 " choices (prompts x n), got " + std::to_string(req.n_choices()) + ".");
  const int64_t limit = model.max_sequence_tokens;
  int64_t longest = 0;
  for (const PromptInput& p : req.prompts) {
    if (p.tokens.empty()) throw invalid_value("prompt", "The prompt is empty (it has no tokens).");
    longest = std::max<int64_t>(longest, static_cast<int64_t>(p.tokens.size()));
  }
  if (longest >= limit)
    throw invalid_value(req.endpoint == Endpoint::ChatCompletions ? "messages" : "prompt",
                        "The prompt has " + std::to_string(longest) + " tokens; this server's limit is " +
                            std::to_string(limit) + " tokens for prompt and output together.");
  const int64_t output = max_tokens              ? *max_tokens
                         : default_fills_context ? limit - longest
                                                 : std::min<int64_t>(16, limit - longest);
  if (longest + output > limit)
    throw invalid_value(max_tokens ? "max_tokens" : "prompt",
                        "The prompt (" + std::to_string(longest) + " tokens) plus the requested output (" +
                            std::to_string(output) + " tokens) exceeds this server's limit of " +
                            std::to_string(limit) + " tokens.");
  req.params.stop.max_tokens = static_cast<int32_t>(output);
}

}  // namespace strata::server
