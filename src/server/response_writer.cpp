#include "server/response_writer.h"

#include <atomic>
#include <cmath>
#include <ctime>
#include <random>

#include "core/check.h"

namespace strata::server {
namespace {

// Unique, unguessable response ids: a per-process random base plus a counter.
std::string make_id(const char* prefix) {
  static const uint64_t base = [] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }();
  static std::atomic<uint64_t> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(counter.fetch_add(1) & 0xffffffffULL));
  return buf;
}

// -inf (a token the logit bias excluded) is not JSON: OpenAI reports -9999 in its place.
double finite_logprob(float lp) {
  return std::isfinite(lp) ? static_cast<double>(lp) : -9999.0;
}

ChatJson byte_list(const std::string& s) {
  ChatJson bytes = ChatJson::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

ChatJson finish_reason_json(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::None:
      return nullptr;
    case FinishReason::Abort:
      return "abort";
    case FinishReason::Error:
      return "error";
  }
  return nullptr;
}

std::string dump_json(const ChatJson& j) {
  return j.dump(-1, ' ', false, ChatJson::error_handler_t::replace);
}

int64_t count_code_points(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

ResponseWriter::ResponseWriter(const GenerationRequest& req, const Tokenizer& tok, std::string model_name)
    : req_(req),
      tok_(tok),
      model_name_(std::move(model_name)),
      id_(make_id(req.endpoint == Endpoint::ChatCompletions ? "chatcmpl-" : "cmpl-")),
      created_(static_cast<int64_t>(std::time(nullptr))),
      choices_(static_cast<size_t>(req.n_choices())) {
  for (size_t i = 0; i < choices_.size(); ++i) {
    if (req.echo) {
      const std::string& prompt = req.prompts[i / static_cast<size_t>(req.params.n)].text;
      choices_[i].text = prompt;
      choices_[i].text_chars = count_code_points(prompt);
    }
    if (req.tool_calls.parse)
      choices_[i].tools = std::make_unique<ToolState>(tok, req.tool_calls, req.params.stop.stop_strings);
  }
}

ChatJson ResponseWriter::envelope(bool chunk) const {
  const bool chat = req_.endpoint == Endpoint::ChatCompletions;
  ChatJson j;
  j["id"] = id_;
  j["object"] = chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  j["created"] = created_;
  j["model"] = model_name_;
  j["choices"] = ChatJson::array();
  return j;
}

// The logprobs of `tokens` (one event's) in the endpoint's format; advances text_chars.
ChatJson ResponseWriter::logprobs_of(int64_t& text_chars, const std::vector<TokenOutput>& tokens) const {
  if (req_.logprobs == LogprobsFormat::Chat) {
    ChatJson content = ChatJson::array();
    for (const TokenOutput& t : tokens) {
      const std::string piece = tok_.token_to_piece(t.token, /*render_special=*/true);
      ChatJson top = ChatJson::array();
      for (const TokenLogprob& alt : t.top) {
        const std::string alt_piece = tok_.token_to_piece(alt.token, true);
        top.push_back({{"token", alt_piece},
                       {"logprob", finite_logprob(alt.logprob)},
                       {"bytes", byte_list(alt_piece)}});
      }
      content.push_back({{"token", piece},
                         {"logprob", finite_logprob(t.logprob)},
                         {"bytes", byte_list(piece)},
                         {"top_logprobs", std::move(top)}});
    }
    return {{"content", std::move(content)}, {"refusal", nullptr}};
  }
  ChatJson lp = {{"tokens", ChatJson::array()},
                 {"token_logprobs", ChatJson::array()},
                 {"top_logprobs", ChatJson::array()},
                 {"text_offset", ChatJson::array()}};
  for (const TokenOutput& t : tokens) {
    const std::string piece = tok_.token_to_piece(t.token, true);
    ChatJson top = ChatJson::object();
    for (const TokenLogprob& alt : t.top)
      top[tok_.token_to_piece(alt.token, true)] = finite_logprob(alt.logprob);
    lp["tokens"].push_back(piece);
    lp["token_logprobs"].push_back(finite_logprob(t.logprob));
    lp["top_logprobs"].push_back(std::move(top));
    lp["text_offset"].push_back(text_chars);
    text_chars += count_code_points(piece);
  }
  return lp;
}

void ResponseWriter::append_logprobs(Choice& choice, const ChatJson& part) const {
  if (choice.logprobs.is_null()) {
    choice.logprobs = part;
    return;
  }
  for (auto& [key, value] : choice.logprobs.items())
    if (value.is_array())
      for (const ChatJson& item : part[key]) value.push_back(item);
}

void ResponseWriter::add(int32_t index, const EngineEvent& ev) {
  STRATA_CHECK(index >= 0 && static_cast<size_t>(index) < choices_.size());
  Choice& c = choices_[static_cast<size_t>(index)];
  c.text += ev.text;
  if (c.tools) tool_deltas(*c.tools, ev);
  if (ev.finish != FinishReason::None) c.finish = ev.finish;
  if (req_.logprobs != LogprobsFormat::None && !ev.tokens.empty())
    append_logprobs(c, logprobs_of(c.text_chars, ev.tokens));
}

// llama-server's per-response `timings` extra: speculative draft counts, when there were drafts.
void ResponseWriter::add_timings(ChatJson& j, const Usage& u) {
  if (u.draft_tokens > 0)
    j["timings"] = {{"draft_n", u.draft_tokens}, {"draft_n_accepted", u.accepted_draft_tokens}};
}

ChatJson ResponseWriter::usage_json(const Usage& u) const {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_prompt_tokens}}}};
}

std::string ResponseWriter::body(const Usage& usage) const {
  ChatJson j = envelope(false);
  const bool chat = req_.endpoint == Endpoint::ChatCompletions;
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    ChatJson choice;
    choice["index"] = static_cast<int64_t>(i);
    if (chat && c.tools)
      choice["message"] = tool_message(c);
    else if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}};
    else
      choice["text"] = c.text;
    if (req_.logprobs == LogprobsFormat::None) {
      choice["logprobs"] = nullptr;
    } else if (c.logprobs.is_null()) {  // no token generated
      int64_t unused = 0;
      choice["logprobs"] = logprobs_of(unused, {});
    } else {
      choice["logprobs"] = c.logprobs;
    }
    choice["finish_reason"] = finish_reason_json(c.finish);
    if (c.tools && c.finish == FinishReason::Stop && !c.tools->parser.calls().empty())
      choice["finish_reason"] = "tool_calls";
    j["choices"].push_back(std::move(choice));
  }
  j["usage"] = usage_json(usage);
  add_timings(j, usage);
  return dump_json(j);
}

std::vector<std::string> ResponseWriter::opening_chunks() const {
  std::vector<std::string> out;
  const bool chat = req_.endpoint == Endpoint::ChatCompletions;
  if (!chat && !req_.echo) return out;
  for (size_t i = 0; i < choices_.size(); ++i) {
    ChatJson j = envelope(true);
    ChatJson choice;
    choice["index"] = static_cast<int64_t>(i);
    if (chat)
      choice["delta"] = {{"role", "assistant"}, {"content", ""}};
    else
      choice["text"] = choices_[i].text;  // the echoed prompt
    choice["logprobs"] = nullptr;
    choice["finish_reason"] = nullptr;
    j["choices"].push_back(std::move(choice));
    if (req_.include_usage) j["usage"] = nullptr;
    out.push_back(dump_json(j));
  }
  return out;
}

std::vector<std::string> ResponseWriter::chunks(int32_t index, const EngineEvent& ev) {
  STRATA_CHECK(index >= 0 && static_cast<size_t>(index) < choices_.size());
  Choice& c = choices_[static_cast<size_t>(index)];
  const bool want_logprobs = req_.logprobs != LogprobsFormat::None && !ev.tokens.empty();
  // The delta objects this event sends (tool mode: one per parser update).
  std::vector<ChatJson> deltas;
  if (c.tools) {
    for (const ToolCallDelta& d : tool_deltas(*c.tools, ev)) deltas.push_back(tool_delta_json(*c.tools, d));
  } else if (!ev.text.empty()) {
    deltas.push_back({{"content", ev.text}});
  }
  if (deltas.empty() && ev.finish == FinishReason::None && !want_logprobs) return {};
  if (deltas.empty()) deltas.push_back(ChatJson::object());
  std::vector<std::string> out;
  const ChatJson logprobs = want_logprobs ? logprobs_of(c.text_chars, ev.tokens) : ChatJson(nullptr);
  for (size_t k = 0; k < deltas.size(); ++k) {
    const bool last = k + 1 == deltas.size();
    ChatJson j = envelope(true);
    ChatJson choice;
    choice["index"] = index;
    if (req_.endpoint == Endpoint::ChatCompletions)
      choice["delta"] = std::move(deltas[k]);
    else
      choice["text"] = ev.text;
    choice["logprobs"] = last ? logprobs : ChatJson(nullptr);
    choice["finish_reason"] = last ? finish_reason_json(ev.finish) : ChatJson(nullptr);
    if (last && c.tools && ev.finish == FinishReason::Stop && !c.tools->parser.calls().empty())
      choice["finish_reason"] = "tool_calls";
    j["choices"].push_back(std::move(choice));
    if (req_.include_usage) j["usage"] = nullptr;
    out.push_back(dump_json(j));
  }
  return out;
}

std::string ResponseWriter::usage_chunk(const Usage& usage) const {
  ChatJson j = envelope(true);
  j["usage"] = usage_json(usage);
  add_timings(j, usage);
  return dump_json(j);
}

}  // namespace strata::server
