// OpenAI response shapes: whole answers, stream chunks, usage and both logprobs formats.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/response_writer.h"
#include "server_fixture.h"

namespace strata::server {
namespace {

using nlohmann::json;
using test::stories_tokenizer;

GenerationRequest request(Endpoint endpoint, int32_t n) {
  GenerationRequest r;
  r.endpoint = endpoint;
  r.params.n = n;
  r.prompts.push_back({{1, 403, 407, 261, 378}, "Once upon a time"});
  return r;
}

EngineEvent event(int32_t index, std::string text, FinishReason finish = FinishReason::None,
                  std::vector<TokenOutput> tokens = {}) {
  EngineEvent ev;
  ev.index = index;
  ev.text = std::move(text);
  ev.finish = finish;
  ev.tokens = std::move(tokens);
  return ev;
}

int32_t token_id(const std::string& vocab_text) {
  const int32_t id = stories_tokenizer().find_token(vocab_text);
  EXPECT_GE(id, 0) << vocab_text;
  return id;
}

TEST(ResponseWriter, CompletionBodyCollectsChoicesInOrder) {
  const GenerationRequest req = request(Endpoint::Completions, 2);
  ResponseWriter w(req, stories_tokenizer(), "stories");
  w.add(0, event(0, " there"));
  w.add(1, event(1, " was", FinishReason::Length));
  w.add(0, event(0, " a", FinishReason::Stop));
  const json j = json::parse(w.body(Usage{5, 3, 2}));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "stories");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0], json::parse(R"({"index": 0, "text": " there a", "logprobs": null,
                                             "finish_reason": "stop"})"));
  EXPECT_EQ(j["choices"][1], json::parse(R"({"index": 1, "text": " was", "logprobs": null,
                                             "finish_reason": "length"})"));
  EXPECT_EQ(j["usage"], json::parse(R"({"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                                        "prompt_tokens_details": {"cached_tokens": 2}})"));
}

TEST(ResponseWriter, EchoPrependsThePrompt) {
  GenerationRequest req = request(Endpoint::Completions, 1);
  req.echo = true;
  ResponseWriter w(req, stories_tokenizer(), "stories");
  w.add(0, event(0, ", there", FinishReason::Length));
  EXPECT_EQ(json::parse(w.body({}))["choices"][0]["text"], "Once upon a time, there");
  req.stream = true;
  ResponseWriter s(req, stories_tokenizer(), "stories");
  const auto opening = s.opening_chunks();
  ASSERT_EQ(opening.size(), 1u);
  EXPECT_EQ(json::parse(opening[0])["choices"][0]["text"], "Once upon a time");
}

TEST(ResponseWriter, ChatBodyHasAssistantMessage) {
  const GenerationRequest req = request(Endpoint::ChatCompletions, 1);
  ResponseWriter w(req, stories_tokenizer(), "stories");
  w.add(0, event(0, "Hello"));
  w.add(0, event(0, " you", FinishReason::Stop));
  const json j = json::parse(w.body(Usage{7, 2, 0}));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["choices"][0], json::parse(R"({"index": 0, "finish_reason": "stop", "logprobs": null,
      "message": {"role": "assistant", "content": "Hello you", "refusal": null}})"));
  EXPECT_EQ(j["usage"]["total_tokens"], 9);
}

TEST(ResponseWriter, ChatStreamChunks) {
  GenerationRequest req = request(Endpoint::ChatCompletions, 2);
  req.stream = true;
  req.include_usage = true;
  ResponseWriter w(req, stories_tokenizer(), "stories");
  const auto opening = w.opening_chunks();
  ASSERT_EQ(opening.size(), 2u);  // the role, once per choice
  for (int i = 0; i < 2; ++i) {
    const json c = json::parse(opening[static_cast<size_t>(i)]);
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    EXPECT_EQ(c["id"], w.id());
    EXPECT_TRUE(c["usage"].is_null() && c.contains("usage"));
    EXPECT_EQ(c["choices"], json::parse(R"([{"index": )" + std::to_string(i) +
                                        R"(, "delta": {"role": "assistant", "content": ""}, "logprobs": null,
                                            "finish_reason": null}])"));
  }
  const json text = json::parse(w.chunks(1, event(1, "Hi")).at(0));
  EXPECT_EQ(text["choices"], json::parse(R"([{"index": 1, "delta": {"content": "Hi"}, "logprobs": null,
                                              "finish_reason": null}])"));
  EXPECT_TRUE(w.chunks(0, event(0, "")).empty());  // nothing to say (e.g. text held back by a stop string)
  const json last = json::parse(w.chunks(0, event(0, "", FinishReason::Length)).at(0));
  EXPECT_EQ(last["choices"], json::parse(R"([{"index": 0, "delta": {}, "logprobs": null,
                                              "finish_reason": "length"}])"));
  const json usage = json::parse(w.usage_chunk(Usage{4, 6, 0}));
  EXPECT_EQ(usage["choices"], json::array());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  EXPECT_EQ(usage["usage"]["total_tokens"], 10);
}

TEST(ResponseWriter, CompletionStreamChunkWithoutUsageField) {
  GenerationRequest req = request(Endpoint::Completions, 1);
  req.stream = true;
  ResponseWriter w(req, stories_tokenizer(), "stories");
  EXPECT_TRUE(w.opening_chunks().empty());  // no echo: nothing before the first token
  const json c = json::parse(w.chunks(0, event(0, " upon", FinishReason::Stop)).at(0));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_FALSE(c.contains("usage"));
  EXPECT_EQ(c["choices"],
            json::parse(R"([{"index": 0, "text": " upon", "logprobs": null, "finish_reason": "stop"}])"));
}

TEST(ResponseWriter, LegacyLogprobs) {
  GenerationRequest req = request(Endpoint::Completions, 1);
  req.logprobs = LogprobsFormat::Completions;
  const int32_t was = token_id("\xE2\x96\x81was");  // "▁was": the piece is " was"
  const int32_t a = token_id(
      "\xE2\x96\x81"
      "a");
  ResponseWriter w(req, stories_tokenizer(), "stories");
  w.add(0,
        event(0, " was", FinishReason::None, {TokenOutput{was, -0.5f, {{was, -0.5f}, {a, -1.25f}}, " was"}}));
  w.add(0, event(0, " a", FinishReason::Length, {TokenOutput{a, -INFINITY, {}, " a"}}));
  const json lp = json::parse(w.body({}))["choices"][0]["logprobs"];
  EXPECT_EQ(lp, json::parse(R"({"tokens": [" was", " a"], "token_logprobs": [-0.5, -9999.0],
                                "top_logprobs": [{" was": -0.5, " a": -1.25}, {}], "text_offset": [0, 4]})"));
}

TEST(ResponseWriter, ChatLogprobsWithBytes) {
  GenerationRequest req = request(Endpoint::ChatCompletions, 1);
  req.logprobs = LogprobsFormat::Chat;
  req.stream = true;
  const int32_t was = token_id("\xE2\x96\x81was");
  ResponseWriter w(req, stories_tokenizer(), "stories");
  const json c = json::parse(
      w.chunks(0, event(0, " was", FinishReason::None, {TokenOutput{was, -0.25f, {{was, -0.25f}}, " was"}}))
          .at(0));
  EXPECT_EQ(c["choices"][0]["logprobs"], json::parse(R"({"content": [{"token": " was", "logprob": -0.25,
      "bytes": [32, 119, 97, 115], "top_logprobs": [{"token": " was", "logprob": -0.25, "bytes": [32, 119, 97, 115]}]}],
      "refusal": null})"));
}

TEST(ResponseWriter, PartialUtf8BecomesReplacementCharacter) {
  GenerationRequest req = request(Endpoint::Completions, 1);
  ResponseWriter w(req, stories_tokenizer(), "stories");
  w.add(0, event(0, std::string("ok\xE2\x96", 4), FinishReason::Stop));  // cut inside "▁"
  EXPECT_EQ(json::parse(w.body({}))["choices"][0]["text"], "ok\xEF\xBF\xBD");
}

TEST(ResponseWriter, CountsCodePoints) {
  EXPECT_EQ(count_code_points(""), 0);
  EXPECT_EQ(count_code_points("abc"), 3);
  EXPECT_EQ(count_code_points("\xC3\xA9t\xC3\xA9"), 3);  // "été"
  EXPECT_EQ(count_code_points("\xF0\x9F\x98\x80!"), 2);  // emoji + "!"
}

}  // namespace
}  // namespace strata::server
