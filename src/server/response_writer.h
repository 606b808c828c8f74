// OpenAI's response objects for one generation request: the whole answer (non-streaming) or
// its SSE chunks (streaming), with usage and logprobs in the endpoint's format.
//
// Completions: {"id": "cmpl-...", "object": "text_completion", "created", "model",
//   "choices": [{"index", "text", "logprobs": null | {tokens, token_logprobs, top_logprobs,
//   text_offset}, "finish_reason"}], "usage"}; stream chunks have the same shape.
// Chat: {"id": "chatcmpl-...", "object": "chat.completion", ..., "choices": [{"index",
//   "message": {"role", "content"}, "logprobs": null | {"content": [{token, logprob, bytes,
//   top_logprobs}]}, "finish_reason"}], "usage"}; chunks are "chat.completion.chunk" with a
//   "delta" instead of "message", the role in the first one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/stop_matcher.h"
#include "server/generation_request.h"
#include "server/tool_calls.h"

namespace strata::server {

class ResponseWriter {
 public:
  ResponseWriter(const GenerationRequest& req, const Tokenizer& tok, std::string model_name);

  // Non-streaming: record an event of choice `index`, then render the whole answer.
  void add(int32_t index, const EngineEvent& ev);
  std::string body(const Usage& usage) const;

  // Streaming: the JSON of each SSE `data:` line.
  // Chunks sent before any token: chat's role delta per choice, completions' echoed prompt.
  std::vector<std::string> opening_chunks() const;
  // The chunks for an event (none when it carries nothing to send); with tool calls an event
  // may need several (content, a call's start, its arguments).
  std::vector<std::string> chunks(int32_t index, const EngineEvent& ev);
  // The final usage chunk (stream_options.include_usage): empty choices.
  std::string usage_chunk(const Usage& usage) const;

  const std::string& id() const { return id_; }

 private:
  // A choice whose output is parsed for tool calls: its own detokenizer (the markers of some
  // families are special tokens, which the engine's text leaves out) and stop matcher.
  struct ToolState {
    ToolState(const Tokenizer& tok, const ToolCallMode& mode, const std::vector<std::string>& stops)
        : parser(mode.family, mode.forced), detok(tok, /*after_bos=*/false), stop(stops) {}
    ToolCallParser parser;
    StreamingDetokenizer detok;
    StopMatcher stop;
    std::vector<std::string> ids;  // [calls] the OpenAI id of each call
  };

  struct Choice {
    std::string text;
    std::unique_ptr<ToolState> tools;  // null: plain content
    FinishReason finish = FinishReason::None;
    ChatJson logprobs;       // accumulated, in the endpoint's format (null when not asked for)
    int64_t text_chars = 0;  // code points of the choice's text so far (legacy text_offset)
  };

  ChatJson envelope(bool chunk) const;
  // The logprobs of one event's tokens; advances text_chars (legacy text_offset).
  ChatJson logprobs_of(int64_t& text_chars, const std::vector<TokenOutput>& tokens) const;
  void append_logprobs(Choice& choice, const ChatJson& part) const;
  ChatJson usage_json(const Usage& usage) const;
  static void add_timings(ChatJson& j, const Usage& usage);
  // The event's text as the tool parser reads it, and the parser's updates; ids assigned.
  std::vector<ToolCallDelta> tool_deltas(ToolState& t, const EngineEvent& ev) const;
  ChatJson tool_message(const Choice& c) const;
  ChatJson tool_delta_json(const ToolState& t, const ToolCallDelta& d) const;

  const GenerationRequest& req_;
  const Tokenizer& tok_;
  std::string model_name_;
  std::string id_;
  int64_t created_;
  std::vector<Choice> choices_;
};

// OpenAI's finish_reason string ("stop", "length"), null for unfinished.
ChatJson finish_reason_json(FinishReason r);
// A JSON value as one line; invalid UTF-8 from partial tokens becomes U+FFFD.
std::string dump_json(const ChatJson& j);
// Unicode code points in UTF-8 text (continuation bytes are not counted).
int64_t count_code_points(const std::string& s);

}  // namespace strata::server
