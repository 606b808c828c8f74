// No request body, however odd, crashes the server or earns anything but a clean answer.
#include <gtest/gtest.h>

#include <random>

#include "server_fixture.h"

namespace strata::test {
namespace {

using nlohmann::json;

// Every answer is a 200 with choices or an OpenAI-shaped client error, never a 5xx.
void expect_clean_answer(const httplib::Result& res, const std::string& what) {
  ASSERT_TRUE(res) << "no answer to " << what;
  ASSERT_TRUE(res->status == 200 || res->status == 400 || res->status == 404)
      << res->status << " for " << what;
  const json j = json::parse(res->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << res->body;
  if (res->status == 200)
    EXPECT_TRUE(j.contains("choices") || j.contains("tokens") || j.contains("prompt")) << res->body;
  else
    EXPECT_TRUE(j["error"]["message"].is_string()) << res->body;
}

TEST(HostileInput, OddBodiesGetCleanAnswers) {
  LiveServer s;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/v1/completions", R"({"prompt": "\u0000\u0001", "max_tokens": 2})"},
      {"/v1/completions", R"({"prompt": "<s></s><unk> \ud83d\ude00 \u00e9t\u00e9", "max_tokens": 2})"},
      {"/v1/completions", R"({"prompt": [[]]})"},
      {"/v1/completions", R"({"prompt": [1.5]})"},
      {"/v1/completions", R"({"prompt": [2147483648]})"},
      {"/v1/completions", R"({"prompt": "x", "stop": ["\ud800"]})"},
      {"/v1/completions", R"({"prompt": "x", "temperature": 1e400})"},
      {"/v1/completions", R"({"prompt": "x", "max_tokens": -9223372036854775808})"},
      {"/v1/completions", R"({"prompt": "x", "n": 128, "max_tokens": 1})"},
      {"/v1/completions",
       R"({"prompt": "x", "logprobs": 20, "max_tokens": 3, "logit_bias": {"0": 100, "511": -100}})"},
      {"/v1/completions", R"({"prompt": {"text": "x"}})"},
      {"/v1/completions", R"({"prompt": "x", "stream_options": null, "stream": false, "max_tokens": 1})"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "{{ 7*7 }}{% for x in range(999999999) %}{% endfor %}"}],
           "max_tokens": 2})"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "assistant", "content": null,
                         "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{bad"}}]}],
           "max_tokens": 2})"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "chat_template_kwargs": {"messages": 5},
           "max_tokens": 2})"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "hi"}], "tools": [1, "x", null], "max_tokens": 2})"},
      {"/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]})"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi", "name": {"x": [1]}}],
                                   "max_tokens": 1})"},
      {"/v1/chat/completions", R"({"messages": [[{"role": "user"}]]})"},
      {"/tokenize", R"({"messages": [{"role": "tool", "content": []}]})"},
      {"/tokenize", R"({"prompt": "x", "add_special": "yes"})"},
      {"/detokenize", R"({"tokens": [[1]]})"},
      {"/detokenize", R"({"tokens": []})"},
  };
  for (const auto& [path, body] : cases)
    expect_clean_answer(s.client().Post(path, body, "application/json"), body);
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

// Random combinations of known fields with values of every type and extreme magnitude.
TEST(HostileInput, RandomFieldsAndValues) {
  LiveServer s;
  const std::vector<std::string> fields = {"max_tokens",
                                           "max_completion_tokens",
                                           "temperature",
                                           "top_p",
                                           "top_k",
                                           "min_p",
                                           "n",
                                           "stop",
                                           "seed",
                                           "presence_penalty",
                                           "frequency_penalty",
                                           "repetition_penalty",
                                           "logit_bias",
                                           "logprobs",
                                           "top_logprobs",
                                           "echo",
                                           "user",
                                           "cache_salt",
                                           "ignore_eos",
                                           "stream",
                                           "stream_options",
                                           "model",
                                           "best_of",
                                           "suffix",
                                           "stop_token_ids",
                                           "prompt",
                                           "messages",
                                           "tools",
                                           "tool_choice",
                                           "response_format"};
  const std::vector<json> values = {-1,
                                    0,
                                    1,
                                    2,
                                    3,
                                    2.5,
                                    -0.5,
                                    1e308,
                                    -1e308,
                                    128,
                                    2147483648LL,
                                    INT64_MIN,
                                    UINT64_MAX,
                                    "s",
                                    "",
                                    true,
                                    false,
                                    nullptr,
                                    json::array(),
                                    json::object(),
                                    {1, 2},
                                    {"a", ""},
                                    {{"1", 2}},
                                    {{"include_usage", true}},
                                    {{"type", "text"}},
                                    json::array({{{"role", "user"}, {"content", "hi"}}})};
  std::mt19937 rng(20241129);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::map<int, int> statuses;
  for (int i = 0; i < 300; ++i) {
    const bool chat = pick(2) == 0;
    json body =
        chat ? json{{"messages", {{{"role", "user"}, {"content", "Once"}}}}} : json{{"prompt", "Once"}};
    body["max_tokens"] = 2;
    const size_t n_fields = 1 + pick(4);
    for (size_t k = 0; k < n_fields; ++k) body[fields[pick(fields.size())]] = values[pick(values.size())];
    // Keep the work per request small: huge but valid outputs only slow the test down (null
    // means the default, which for chat is the whole context).
    if (body["max_tokens"].is_null() ||
        (body["max_tokens"].is_number() && body["max_tokens"].get<double>() > 3))
      body["max_tokens"] = 3;
    if (body.contains("max_completion_tokens") && body["max_completion_tokens"].is_number() &&
        body["max_completion_tokens"].get<double>() > 3)
      body["max_completion_tokens"] = 3;
    if (body.contains("max_completion_tokens") && body["max_completion_tokens"].is_null())
      body.erase("max_completion_tokens");
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    const httplib::Result res = s.client().Post(path, body.dump(), "application/json");
    expect_clean_answer(res, body.dump());
    if (HasFatalFailure()) return;
    ++statuses[res->status];
  }
  // Both accepted and rejected combinations were exercised (each a sizeable share of the 300;
  // the exact split moves whenever a field's validation changes).
  EXPECT_GT(statuses[200], 20);
  EXPECT_GT(statuses[400], 20);
  EXPECT_EQ(s.client().Get("/health")->status, 200);
}

}  // namespace
}  // namespace strata::test
