// /v1/embeddings: the input forms the openai client sends, encoding_format, dimensions.
#include "server/embedding_request.h"

#include "server/api_error.h"
#include "server/common_fields.h"
#include "server/json_fields.h"

namespace strata::server {
namespace {

constexpr size_t kMaxInputBytes = 4u << 20;  // one text input (the body limit bounds them all)

std::vector<int32_t> token_input(const ChatJson& ids, const std::string& name, int32_t n_vocab) {
  if (ids.empty()) throw invalid_value("input", "'" + name + "' must not be an empty array of token ids.");
  std::vector<int32_t> tokens;
  tokens.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    tokens.push_back(
        static_cast<int32_t>(json_integer(ids[i], name + "[" + std::to_string(i) + "]", 0, n_vocab - 1)));
  return tokens;
}

std::vector<int32_t> text_input(const ChatJson& text, const std::string& name, const Tokenizer& tok) {
  const std::string& s = json_string(text, name, kMaxInputBytes);
  if (s.empty()) throw invalid_value("input", "'" + name + "' must not be an empty string.");
  return tokenize_prompt(tok, s);
}

std::vector<std::vector<int32_t>> parse_inputs(const JsonFields& f, const Tokenizer& tok) {
  const ChatJson* in = f.get("input");
  if (!in) throw invalid_value("input", "'input' is required.");
  const int32_t n_vocab = tok.n_vocab();
  if (in->is_string()) return {text_input(*in, "input", tok)};
  if (!in->is_array())
    throw invalid_type("input",
                       std::string("'input' must be a string, an array of strings, an array of token ids or "
                                   "an array of token-id arrays, got ") +
                           json_type_phrase(*in) + ".");
  if (in->empty()) throw invalid_value("input", "'input' must not be an empty array.");
  if (in->size() > kMaxEmbeddingInputs)
    throw invalid_value("input",
                        "'input' may hold at most " + std::to_string(kMaxEmbeddingInputs) + " items.");
  const ChatJson& first = in->front();
  if (first.is_number()) return {token_input(*in, "input", n_vocab)};
  std::vector<std::vector<int32_t>> inputs;
  for (size_t i = 0; i < in->size(); ++i) {
    const ChatJson& item = (*in)[i];
    const std::string name = "input[" + std::to_string(i) + "]";
    if (first.is_string() && item.is_string())
      inputs.push_back(text_input(item, name, tok));
    else if (first.is_array() && item.is_array())
      inputs.push_back(token_input(item, name, n_vocab));
    else
      throw invalid_type("input",
                         "'" + name +
                             "': 'input' must not mix types: every element must be a string, or every "
                             "element an array of token ids.");
  }
  return inputs;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const ChatJson& body, const ServedModel& model, int64_t n_embd) {
  const JsonFields f(body);
  parse_model(f, model);
  EmbeddingRequest req;
  const std::string format = f.string("encoding_format", 64).value_or("float");
  if (format == "base64")
    req.base64 = true;
  else if (format != "float")
    throw invalid_value("encoding_format",
                        "'encoding_format' must be \"float\" or \"base64\", got \"" + format + "\".");
  // Only models trained for it (Matryoshka) can shorten their embeddings; these cannot.
  if (const auto dims = f.integer("dimensions", 1, INT32_MAX); dims && *dims != n_embd)
    throw invalid_value("dimensions", "This model's embeddings have " + std::to_string(n_embd) +
                                          " dimensions and cannot be shortened; 'dimensions' must be " +
                                          std::to_string(n_embd) + " or absent.");
  req.inputs = parse_inputs(f, *model.tokenizer);
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const auto n = static_cast<int64_t>(req.inputs[i].size());
    if (n > model.max_sequence_tokens)
      throw invalid_value("input", "This model's maximum context length is " +
                                       std::to_string(model.max_sequence_tokens) + " tokens, but input " +
                                       std::to_string(i) + " has " + std::to_string(n) + " tokens.");
  }
  return req;
}

}  // namespace strata::server
