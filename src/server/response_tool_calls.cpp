// The tool-call side of ResponseWriter: the choice's text re-read for calls, OpenAI's
// message.tool_calls and streaming delta.tool_calls.
#include <algorithm>
#include <atomic>
#include <random>

#include "server/response_writer.h"

namespace strata::server {
namespace {

// Special tokens that are part of a family's call syntax: the engine's text drops special
// tokens, so these are put back (everything else special stays out, as in plain content).
bool is_call_marker(const std::string& s) {
  return s == "<tool_call>" || s == "</tool_call>" || s == "[TOOL_CALLS]" || s == "<|python_tag|>" ||
         s == "<|tool_call|>";
}

// Call ids: Mistral's templates insist on 9 letters or digits; others get OpenAI's "call_..."
// form. Random, so that ids of different requests never collide in one conversation.
std::string make_call_id(ToolFamily family) {
  static constexpr char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }());
  const bool mistral = family == ToolFamily::Mistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id.push_back(kAlnum[rng() % (sizeof kAlnum - 1)]);
  return id;
}

}  // namespace

std::vector<ToolCallDelta> ResponseWriter::tool_deltas(ToolState& t, const EngineEvent& ev) const {
  const StopConditions& stop = req_.params.stop;
  std::string text;
  for (const TokenOutput& out : ev.tokens) {
    if (t.stop.stopped()) break;
    const int32_t id = out.token;
    if (tok_.is_eog(id) ||
        std::find(stop.stop_token_ids.begin(), stop.stop_token_ids.end(), id) != stop.stop_token_ids.end())
      continue;  // the end of generation is no text (as in the engine)
    const std::string special = tok_.token_to_piece(id, /*render_special=*/true);
    if (tok_.token_to_piece(id).empty() && is_call_marker(special)) {
      text += t.stop.push(t.detok.finish() + special);
      continue;
    }
    text += t.stop.push(t.detok.push(id));
  }
  if (ev.finish != FinishReason::None && !t.stop.stopped()) {
    text += t.stop.push(t.detok.finish());
    text += t.stop.flush();
  }
  std::vector<ToolCallDelta> deltas = t.parser.push(text);
  if (ev.finish != FinishReason::None) {
    std::vector<ToolCallDelta> rest = t.parser.finish();
    deltas.insert(deltas.end(), std::make_move_iterator(rest.begin()), std::make_move_iterator(rest.end()));
  }
  for (const ToolCallDelta& d : deltas)
    if (d.kind == ToolCallDelta::Kind::CallStart) t.ids.push_back(make_call_id(req_.tool_calls.family));
  return deltas;
}

ChatJson ResponseWriter::tool_message(const Choice& c) const {
  const ToolState& t = *c.tools;
  const std::vector<ParsedToolCall>& calls = t.parser.calls();
  ChatJson m = {{"role", "assistant"}};
  // OpenAI: content is null when the reply is only calls.
  m["content"] =
      calls.empty() || !t.parser.content().empty() ? ChatJson(t.parser.content()) : ChatJson(nullptr);
  m["refusal"] = nullptr;
  if (!calls.empty()) {
    ChatJson list = ChatJson::array();
    for (size_t i = 0; i < calls.size(); ++i)
      list.push_back({{"id", t.ids[i]},
                      {"type", "function"},
                      {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
    m["tool_calls"] = std::move(list);
  }
  return m;
}

ChatJson ResponseWriter::tool_delta_json(const ToolState& t, const ToolCallDelta& d) const {
  switch (d.kind) {
    case ToolCallDelta::Kind::Content:
      return {{"content", d.text}};
    case ToolCallDelta::Kind::CallStart:
      return {{"tool_calls", ChatJson::array({{{"index", d.index},
                                               {"id", t.ids[static_cast<size_t>(d.index)]},
                                               {"type", "function"},
                                               {"function", {{"name", d.text}, {"arguments", ""}}}}})}};
    case ToolCallDelta::Kind::Arguments:
      return {{"tool_calls", ChatJson::array({{{"index", d.index}, {"function", {{"arguments", d.text}}}}})}};
  }
  return ChatJson::object();
}

}  // namespace strata::server
