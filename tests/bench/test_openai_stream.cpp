// The OpenAI stream protocol: request bodies, event meanings, and the per-request record built
// from events at chosen (hand-set) times.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "bench/openai_stream.h"
#include "bench/stream_client.h"
#include "core/check.h"

namespace strata::bench {
namespace {

using json = nlohmann::json;
using Clock = StreamTracker::Clock;

TEST(OpenAiStream, CompletionsRequestBody) {
  GenerationOptions gen;
  gen.model = "m1";
  const json body = json::parse(build_request_body({"the of", 2, 17}, gen));
  EXPECT_EQ(body["model"], "m1");
  EXPECT_EQ(body["prompt"], "the of");
  EXPECT_EQ(body["max_tokens"], 17);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(body.contains("ignore_eos"));  // an extension: only when asked for
  EXPECT_FALSE(body.contains("messages"));
}

TEST(OpenAiStream, ChatRequestBodyWithIgnoreEos) {
  GenerationOptions gen;
  gen.model = "m2";
  gen.endpoint = EndpointKind::kChat;
  gen.ignore_eos = true;
  gen.temperature = 0.5;
  const json body = json::parse(build_request_body({"hi there", 2, 3}, gen));
  EXPECT_EQ(body["messages"], json::parse(R"([{"role":"user","content":"hi there"}])"));
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_FALSE(body.contains("prompt"));
}

TEST(OpenAiStream, ExtraBodyIsMergedIntoEveryRequest) {
  GenerationOptions gen;
  gen.model = "m3";
  gen.extra_body = R"({"response_format": {"type": "json_object"}, "temperature": 0.25})";
  const json body = json::parse(build_request_body({"x", 1, 5}, gen));
  EXPECT_EQ(body["response_format"]["type"], "json_object");
  EXPECT_EQ(body["temperature"], 0.25);  // the extra body wins
  EXPECT_EQ(body["max_tokens"], 5);
}

TEST(OpenAiStream, InterpretEvents) {
  using Kind = StreamEventInfo::Kind;
  const auto ev = [](std::string data, std::string type = "") {
    return SseEvent{std::move(type), std::move(data)};
  };
  EXPECT_EQ(interpret_event(ev("[DONE]"), EndpointKind::kCompletions).kind, Kind::kDone);
  EXPECT_TRUE(interpret_event(ev(R"({"choices":[{"text":"x"}]})"), EndpointKind::kCompletions).has_content);
  EXPECT_FALSE(interpret_event(ev(R"({"choices":[{"text":""}]})"), EndpointKind::kCompletions).has_content);
  EXPECT_FALSE(
      interpret_event(ev(R"({"choices":[{"text":null,"finish_reason":"stop"}]})"), EndpointKind::kCompletions)
          .has_content);
  // Chat: a role-only chunk is not a token; content and reasoning_content are.
  EXPECT_FALSE(
      interpret_event(ev(R"({"choices":[{"delta":{"role":"assistant","content":""}}]})"), EndpointKind::kChat)
          .has_content);
  EXPECT_TRUE(
      interpret_event(ev(R"({"choices":[{"delta":{"content":"a"}}]})"), EndpointKind::kChat).has_content);
  EXPECT_TRUE(interpret_event(ev(R"({"choices":[{"delta":{"reasoning_content":"r"}}]})"), EndpointKind::kChat)
                  .has_content);
  // A chat chunk read as completions has no "text".
  EXPECT_FALSE(interpret_event(ev(R"({"choices":[{"delta":{"content":"a"}}]})"), EndpointKind::kCompletions)
                   .has_content);
  const auto usage = interpret_event(
      ev(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5}})"), EndpointKind::kChat);
  EXPECT_EQ(usage.prompt_tokens, 12);
  EXPECT_EQ(usage.completion_tokens, 5);
  EXPECT_EQ(interpret_event(ev(R"({"choices":[],"usage":null})"), EndpointKind::kChat).completion_tokens, -1);
  const auto err = interpret_event(ev(R"({"error":{"message":"boom"}})"), EndpointKind::kChat);
  EXPECT_EQ(err.kind, Kind::kError);
  EXPECT_EQ(err.message, "boom");
  EXPECT_EQ(interpret_event(ev("whatever", "error"), EndpointKind::kChat).kind, Kind::kError);
  EXPECT_EQ(interpret_event(ev("{\"choices\": ["), EndpointKind::kChat).kind, Kind::kMalformed);
  EXPECT_EQ(interpret_event(ev("[1,2]"), EndpointKind::kChat).kind, Kind::kMalformed);
}

SseEvent text_event(const char* text) {
  return {"", json{{"choices", json::array({json{{"text", text}}})}}.dump()};
}

TEST(StreamTracker, TimesFromHandSetArrivals) {
  const Clock::time_point t0 = Clock::now();
  const auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  StreamTracker tracker(EndpointKind::kCompletions, t0);
  tracker.on_event(text_event(""), at(5));  // empty text: not the first token
  tracker.on_event(text_event("a"), at(40));
  tracker.on_event(text_event("b"), at(50));
  tracker.on_event(text_event("c"), at(75));
  tracker.on_event({"", R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}})"}, at(80));
  EXPECT_FALSE(tracker.finished());
  tracker.on_event({"", "[DONE]"}, at(81));
  EXPECT_TRUE(tracker.finished());
  const RequestRecord r = tracker.take_record(100);
  EXPECT_TRUE(r.success);
  EXPECT_NEAR(r.ttft_s, 0.040, 1e-9);
  EXPECT_NEAR(r.e2e_s, 0.075, 1e-9);  // the last content chunk, not [DONE]
  ASSERT_EQ(r.itl_s.size(), 2u);
  EXPECT_NEAR(r.itl_s[0], 0.010, 1e-9);
  EXPECT_NEAR(r.itl_s[1], 0.025, 1e-9);
  EXPECT_EQ(r.content_chunks, 3);
  EXPECT_EQ(r.output_tokens, 4);  // usage wins over the chunk count
  EXPECT_TRUE(r.output_tokens_from_usage);
  EXPECT_EQ(r.input_tokens, 9);
}

TEST(StreamTracker, WithoutUsageCountsChunksAndUsesTheEstimate) {
  const Clock::time_point t0 = Clock::now();
  StreamTracker tracker(EndpointKind::kCompletions, t0);
  tracker.on_event(text_event("a"), t0);
  tracker.on_event(text_event("b"), t0);
  tracker.on_event({"", "[DONE]"}, t0);
  const RequestRecord r = tracker.take_record(33);
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_FALSE(r.output_tokens_from_usage);
  EXPECT_EQ(r.input_tokens, 33);
  EXPECT_FALSE(r.input_tokens_from_usage);
}

TEST(StreamTracker, FailureClasses) {
  const Clock::time_point t0 = Clock::now();
  {
    StreamTracker t(EndpointKind::kCompletions, t0);
    t.on_event(text_event("a"), t0);
    EXPECT_EQ(t.take_record(0).error_class, kErrorMalformed);  // no [DONE]
  }
  {
    StreamTracker t(EndpointKind::kCompletions, t0);
    t.on_event({"", "[DONE]"}, t0);
    EXPECT_EQ(t.take_record(0).error_class, kErrorEmpty);
  }
  {
    StreamTracker t(EndpointKind::kCompletions, t0);
    t.on_event(text_event("a"), t0);
    t.on_event({"", R"({"error":"overloaded"})"}, t0);
    EXPECT_TRUE(t.finished());
    const RequestRecord r = t.take_record(0);
    EXPECT_EQ(r.error_class, kErrorStream);
    EXPECT_EQ(r.error_message, "overloaded");
    EXPECT_FALSE(r.success);
  }
  {
    StreamTracker t(EndpointKind::kCompletions, t0);
    t.on_event({"", "not json"}, t0);
    EXPECT_EQ(t.take_record(0).error_class, kErrorMalformed);
  }
}

TEST(Url, Parse) {
  HttpTarget t = parse_http_url("http://127.0.0.1:8080");
  EXPECT_EQ(t.host, "127.0.0.1");
  EXPECT_EQ(t.port, 8080);
  EXPECT_EQ(t.base_path, "");
  t = parse_http_url("http://example.com/v1/");
  EXPECT_EQ(t.port, 80);
  EXPECT_EQ(t.base_path, "/v1");
  EXPECT_EQ(request_path(t, "/v1/completions"), "/v1/completions");  // no doubled /v1
  t = parse_http_url("http://[::1]:9000/proxy");
  EXPECT_EQ(t.host, "::1");
  EXPECT_EQ(t.port, 9000);
  EXPECT_EQ(request_path(t, "/v1/chat/completions"), "/proxy/v1/chat/completions");
  for (const char* bad : {"https://x:1", "x:1", "http://", "http://:80", "http://h:0", "http://h:99999",
                          "http://h:12a", "http://[::1", "http://h:"}) {
    EXPECT_THROW(parse_http_url(bad), Error) << bad;
  }
}

TEST(Endpoint, Names) {
  EXPECT_EQ(parse_endpoint_kind("chat"), EndpointKind::kChat);
  EXPECT_EQ(std::string(endpoint_path(parse_endpoint_kind("completions"))), "/v1/completions");
  EXPECT_THROW(parse_endpoint_kind("embeddings"), Error);
}

}  // namespace
}  // namespace strata::bench
