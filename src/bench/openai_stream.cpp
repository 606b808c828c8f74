#include "bench/openai_stream.h"

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace strata::bench {
namespace {

using json = nlohmann::json;

// Bounds the ITL list of one request (a hostile server could stream forever).
constexpr int64_t kMaxContentChunks = int64_t{1} << 24;

bool non_empty_string(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() && !it->get_ref<const std::string&>().empty();
}

bool choice_has_content(const json& choice, EndpointKind kind) {
  if (!choice.is_object()) return false;
  if (kind == EndpointKind::kCompletions) return non_empty_string(choice, "text");
  auto delta = choice.find("delta");
  if (delta == choice.end() || !delta->is_object()) return false;
  return non_empty_string(*delta, "content") || non_empty_string(*delta, "reasoning_content");
}

int64_t usage_field(const json& usage, const char* key) {
  auto it = usage.find(key);
  if (it == usage.end() || !it->is_number_integer() || it->get<int64_t>() < 0) return -1;
  return it->get<int64_t>();
}

std::string error_message(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    auto msg = error.find("message");
    if (msg != error.end() && msg->is_string()) return msg->get<std::string>();
  }
  return error.dump();
}

double seconds(StreamTracker::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

EndpointKind parse_endpoint_kind(std::string_view name) {
  if (name == "completions") return EndpointKind::kCompletions;
  if (name == "chat") return EndpointKind::kChat;
  STRATA_THROW("unknown endpoint '", name, "' (expected completions or chat)");
}

const char* endpoint_path(EndpointKind kind) {
  return kind == EndpointKind::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string build_request_body(const BenchRequest& request, const GenerationOptions& options) {
  json body;
  body["model"] = options.model;
  if (options.endpoint == EndpointKind::kChat) {
    body["messages"] = json::array({{{"role", "user"}, {"content", request.prompt}}});
  } else {
    body["prompt"] = request.prompt;
  }
  body["max_tokens"] = request.max_tokens;
  body["temperature"] = options.temperature;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  if (options.ignore_eos) body["ignore_eos"] = true;
  if (!options.extra_body.empty()) body.update(json::parse(options.extra_body));
  return body.dump();
}

StreamEventInfo interpret_event(const SseEvent& event, EndpointKind kind) {
  StreamEventInfo info;
  if (event.data == "[DONE]") {
    info.kind = StreamEventInfo::Kind::kDone;
    return info;
  }
  json data = json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (event.type == "error") {
    info.kind = StreamEventInfo::Kind::kError;
    info.message = data.is_object() && data.contains("error") ? error_message(data["error"]) : event.data;
    return info;
  }
  if (!data.is_object()) {
    info.kind = StreamEventInfo::Kind::kMalformed;
    info.message = "event data is not a JSON object: " + event.data.substr(0, 200);
    return info;
  }
  if (auto err = data.find("error"); err != data.end() && !err->is_null()) {
    info.kind = StreamEventInfo::Kind::kError;
    info.message = error_message(*err);
    return info;
  }
  if (auto choices = data.find("choices"); choices != data.end() && choices->is_array()) {
    for (const json& choice : *choices)
      info.has_content = info.has_content || choice_has_content(choice, kind);
  }
  if (auto usage = data.find("usage"); usage != data.end() && usage->is_object()) {
    info.completion_tokens = usage_field(*usage, "completion_tokens");
    info.prompt_tokens = usage_field(*usage, "prompt_tokens");
  }
  if (auto timings = data.find("timings"); timings != data.end() && timings->is_object()) {
    info.draft_n = usage_field(*timings, "draft_n");
    info.draft_n_accepted = usage_field(*timings, "draft_n_accepted");
  }
  return info;
}

void StreamTracker::on_event(const SseEvent& event, Clock::time_point arrival) {
  if (finished()) return;
  StreamEventInfo info = interpret_event(event, kind_);
  switch (info.kind) {
    case StreamEventInfo::Kind::kDone:
      done_ = true;
      return;
    case StreamEventInfo::Kind::kError:
      fail(kErrorStream, info.message);
      return;
    case StreamEventInfo::Kind::kMalformed:
      fail(kErrorMalformed, info.message);
      return;
    case StreamEventInfo::Kind::kChunk:
      break;
  }
  if (info.has_content) {
    if (record_.content_chunks >= kMaxContentChunks) {
      fail(kErrorMalformed, "more than 16M content chunks in one response");
      return;
    }
    if (record_.content_chunks == 0) {
      record_.ttft_s = seconds(arrival - sent_);
    } else {
      record_.itl_s.push_back(seconds(arrival - last_content_));
    }
    last_content_ = arrival;
    ++record_.content_chunks;
  }
  if (info.completion_tokens >= 0) {
    record_.output_tokens = info.completion_tokens;
    record_.output_tokens_from_usage = true;
  }
  if (info.prompt_tokens >= 0) {
    record_.input_tokens = info.prompt_tokens;
    record_.input_tokens_from_usage = true;
  }
  if (info.draft_n >= 0) record_.draft_tokens = info.draft_n;
  if (info.draft_n_accepted >= 0) record_.accepted_draft_tokens = info.draft_n_accepted;
}

void StreamTracker::fail(std::string error_class, std::string message) {
  if (!record_.error_class.empty()) return;
  record_.error_class = std::move(error_class);
  record_.error_message = std::move(message);
}

RequestRecord StreamTracker::take_record(int64_t estimated_input_tokens) {
  if (record_.error_class.empty()) {
    if (!done_) {
      fail(kErrorMalformed, "stream ended without \"data: [DONE]\"");
    } else if (record_.content_chunks == 0) {
      fail(kErrorEmpty, "stream carried no content");
    }
  }
  record_.success = record_.error_class.empty();
  if (record_.content_chunks > 0) record_.e2e_s = seconds(last_content_ - sent_);
  if (!record_.output_tokens_from_usage) record_.output_tokens = record_.content_chunks;
  if (!record_.input_tokens_from_usage) record_.input_tokens = estimated_input_tokens;
  return std::move(record_);
}

}  // namespace strata::bench
