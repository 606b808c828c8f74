// A parsed and validated /v1/completions or /v1/chat/completions request: what to submit to
// the engine (one engine request per prompt) and how to shape the answer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "grammar/constraint_spec.h"
#include "server/tool_calls.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

enum class Endpoint { Completions, ChatCompletions };

// Which logprobs shape the answer carries: none, the completions' legacy
// {tokens, token_logprobs, top_logprobs, text_offset}, or chat's content[] entries.
enum class LogprobsFormat { None, Completions, Chat };

struct PromptInput {
  std::vector<int32_t> tokens;  // what the engine evaluates (BOS included when wanted)
  std::string text;             // the prompt as text (echo)
};

// How a chat request's output is read for tool calls (tools given, tool_choice not "none").
struct ToolCallMode {
  bool parse = false;  // tool calls are parsed out of the output
  ToolFamily family = ToolFamily::Generic;
  bool forced = false;  // "required" or a named function: the output is held to the call grammar
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::vector<PromptInput> prompts;  // completions: a batch; chat: exactly one
  RequestParams params;              // shared by every prompt (params.prompt stays empty)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: the prompt text precedes the generated text
  LogprobsFormat logprobs = LogprobsFormat::None;
  ToolCallMode tool_calls;

  // Choices in the answer: n per prompt, numbered prompt * n + choice.
  int32_t n_choices() const { return static_cast<int32_t>(prompts.size()) * params.n; }
};

// What validation needs to know of the served model.
struct ServedModel {
  const Tokenizer* tokenizer = nullptr;
  const ChatTemplate* chat_template = nullptr;
  std::string name;                 // the served model name (the `model` field must match it)
  int64_t max_sequence_tokens = 0;  // prompt + output of one sequence: min(model length, KV pool)
  // Compiles (and caches) structured-output constraints for this tokenizer; null: none.
  std::shared_ptr<grammar::ConstraintCache> constraints;
};

// Limits of one request, beyond the model's.
inline constexpr int32_t kMaxChoicesPerRequest = 128;  // n, and prompts * n
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 1024;

// Both throw ApiError (400 for invalid fields, 404 for an unknown model).
GenerationRequest parse_completion_request(const ChatJson& body, const ServedModel& model);
GenerationRequest parse_chat_request(const ChatJson& body, const ServedModel& model);

// The prompt of a chat request's `messages` (validated), rendered through the model's chat
// template and tokenized (also used by /tokenize).
PromptInput render_chat_prompt(const ChatJson& body, const ServedModel& model);

// Tokenizes a text prompt as both OpenAI-compatible servers do: BOS added when the vocabulary
// asks for it, special-token texts ("<|im_start|>") recognised.
std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const std::string& text);

}  // namespace strata::server
