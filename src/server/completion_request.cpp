// /v1/completions: the prompt forms the openai client can send, echo, legacy logprobs.
#include "server/api_error.h"
#include "server/common_fields.h"
#include "server/generation_request.h"
#include "server/structured_output.h"

namespace strata::server {
namespace {

constexpr int32_t kMaxLegacyLogprobs = 20;  // OpenAI allows 5, vLLM 20

std::vector<int32_t> token_prompt(const ChatJson& ids, const std::string& name, int32_t n_vocab) {
  std::vector<int32_t> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    tokens.push_back(
        static_cast<int32_t>(json_integer(ids[i], name + "[" + std::to_string(i) + "]", 0, n_vocab - 1)));
  return tokens;
}

PromptInput text_input(const Tokenizer& tok, const std::string& text) {
  return {tokenize_prompt(tok, text), text};
}

PromptInput token_input(const Tokenizer& tok, std::vector<int32_t> tokens) {
  std::string text = tok.decode(tokens);
  return {std::move(tokens), std::move(text)};
}

// prompt: "text" | ["text", ...] | [id, ...] | [[id, ...], ...]; a list of several prompts
// is a batch answered with n choices per prompt.
std::vector<PromptInput> parse_prompts(const JsonFields& f, const Tokenizer& tok) {
  const ChatJson* p = f.get("prompt");
  if (!p) throw invalid_value("prompt", "'prompt' is required.");
  const int32_t n_vocab = tok.n_vocab();
  if (p->is_string()) return {text_input(tok, p->get_ref<const std::string&>())};
  if (!p->is_array())
    throw invalid_type("prompt",
                       std::string("'prompt' must be a string, an array of strings, an array of token "
                                   "ids or an array of token-id arrays, got ") +
                           json_type_phrase(*p) + ".");
  if (p->empty()) throw invalid_value("prompt", "'prompt' must not be an empty array.");
  if (p->size() > static_cast<size_t>(kMaxChoicesPerRequest))
    throw invalid_value("prompt",
                        "A batch may hold at most " + std::to_string(kMaxChoicesPerRequest) + " prompts.");
  const ChatJson& first = p->front();
  if (first.is_number()) return {token_input(tok, token_prompt(*p, "prompt", n_vocab))};
  std::vector<PromptInput> prompts;
  for (size_t i = 0; i < p->size(); ++i) {
    const ChatJson& item = (*p)[i];
    const std::string name = "prompt[" + std::to_string(i) + "]";
    if (first.is_string() && item.is_string()) {
      prompts.push_back(text_input(tok, item.get_ref<const std::string&>()));
    } else if (first.is_array() && item.is_array()) {
      prompts.push_back(token_input(tok, token_prompt(item, name, n_vocab)));
    } else {
      throw invalid_type(name,
                         "'prompt' must not mix types: every element must be a string, or every element an "
                         "array of token ids.");
    }
  }
  return prompts;
}

}  // namespace

GenerationRequest parse_completion_request(const ChatJson& body, const ServedModel& model) {
  const JsonFields f(body);
  GenerationRequest req;
  req.endpoint = Endpoint::Completions;
  const std::optional<int32_t> max_tokens = parse_common_fields(f, model, req);
  req.prompts = parse_prompts(f, *model.tokenizer);
  req.echo = f.boolean("echo").value_or(false);
  if (const auto suffix = f.string("suffix", 1 << 20); suffix && !suffix->empty())
    throw invalid_value("suffix", "'suffix' (insertion) is not supported by this model.");
  if (const auto k = f.integer("logprobs", 0, kMaxLegacyLogprobs)) {
    // Echo with logprobs asks for the prompt tokens' logprobs, which the engine does not compute.
    if (req.echo) throw invalid_value("logprobs", "'logprobs' together with 'echo' is not supported.");
    req.logprobs = LogprobsFormat::Completions;
    req.params.top_logprobs = static_cast<int32_t>(*k);
  }
  resolve_output_limit(req, model, max_tokens, /*default_fills_context=*/false);
  parse_structured_output(f, model, req);  // last: compiling is the costly part
  return req;
}

std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const std::string& text) {
  return tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
}

}  // namespace strata::server
