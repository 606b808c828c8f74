// Validation and parsing of /v1/completions and /v1/chat/completions bodies.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "server/api_error.h"
#include "server/generation_request.h"
#include "server/json_fields.h"
#include "server_fixture.h"

namespace strata::server {
namespace {

using test::stories_served;
using test::stories_tokenizer;

ChatJson body(const std::string& text) {
  return ChatJson::parse(text);
}

GenerationRequest completion(const std::string& text) {
  return parse_completion_request(body(text), stories_served());
}
GenerationRequest chat(const std::string& text) {
  return parse_chat_request(body(text), stories_served());
}

// The ApiError a parse throws (status 0 when it throws none).
template <typename Fn>
ApiError error_of(Fn fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "no error", "");
}

TEST(CompletionRequest, TextPromptsTokenizeLikeLlamaCpp) {
  // llama.cpp's tokens for each reference prompt (BOS added, as its server does).
  for (const auto& ref : test::stories_references()) {
    const GenerationRequest r = completion(ChatJson{{"prompt", ref.prompt}}.dump());
    ASSERT_EQ(r.prompts.size(), 1u);
    EXPECT_EQ(r.prompts[0].tokens, ref.tokens) << ref.prompt;
    EXPECT_EQ(r.prompts[0].text, ref.prompt);
  }
}

TEST(CompletionRequest, Defaults) {
  const GenerationRequest r = completion(R"({"prompt": "Once upon a time"})");
  EXPECT_EQ(r.endpoint, Endpoint::Completions);
  EXPECT_EQ(r.params.n, 1);
  EXPECT_EQ(r.params.stop.max_tokens, 16);  // OpenAI's default for completions
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 1.0f);
  EXPECT_EQ(r.params.sampling.top_k, 0);
  EXPECT_FALSE(r.params.sampling.seed.has_value());
  EXPECT_EQ(r.params.top_logprobs, -1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.echo);
  EXPECT_EQ(r.logprobs, LogprobsFormat::None);
  EXPECT_TRUE(r.params.stop.stop_strings.empty());
  EXPECT_FALSE(r.params.stop.ignore_eos);
}

TEST(CompletionRequest, TokenPromptsPassThroughAndDecodeForEcho) {
  const GenerationRequest r = completion(R"({"prompt": [1, 403, 407, 261, 378], "echo": true})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].tokens, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(r.prompts[0].text, "Once upon a time");  // the reference prompt of these ids
  EXPECT_TRUE(r.echo);
}

TEST(CompletionRequest, BatchesOfPrompts) {
  const GenerationRequest a = completion(R"({"prompt": ["Once upon a time", "The little dog"], "n": 3})");
  ASSERT_EQ(a.prompts.size(), 2u);
  EXPECT_EQ(a.prompts[1].tokens, (std::vector<int32_t>{1, 291, 376, 400, 428}));
  EXPECT_EQ(a.n_choices(), 6);
  const GenerationRequest b = completion(R"({"prompt": [[1, 403], [1, 291, 376]]})");
  ASSERT_EQ(b.prompts.size(), 2u);
  EXPECT_EQ(b.prompts[1].tokens, (std::vector<int32_t>{1, 291, 376}));
}

TEST(CompletionRequest, SamplingFieldsAreMapped) {
  const GenerationRequest r = completion(R"({
    "prompt": "x", "max_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": -1, "min_p": 0.1,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.2, "seed": 42,
    "logit_bias": {"13": -100, "400": 2.5}, "stop": "\n", "stop_token_ids": [2], "ignore_eos": true,
    "cache_salt": "tenant-a", "user": "u1", "logprobs": 3, "stream": true,
    "stream_options": {"include_usage": true}, "unknown_field": {"is": "ignored"}})");
  EXPECT_EQ(r.params.stop.max_tokens, 7);
  EXPECT_TRUE(r.params.sampling.greedy());
  EXPECT_FLOAT_EQ(r.params.sampling.top_p, 0.5f);
  EXPECT_EQ(r.params.sampling.top_k, 0);  // -1 is vLLM's "off"
  EXPECT_FLOAT_EQ(r.params.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.params.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.params.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.params.sampling.repetition_penalty, 1.2f);
  EXPECT_EQ(r.params.sampling.seed, std::optional<uint64_t>(42));
  EXPECT_EQ(r.params.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{13, -100.0f}, {400, 2.5f}}));
  EXPECT_EQ(r.params.stop.stop_strings, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(r.params.stop.stop_token_ids, (std::vector<int32_t>{2}));
  EXPECT_TRUE(r.params.stop.ignore_eos);
  EXPECT_EQ(r.params.cache_salt, "tenant-a");
  EXPECT_EQ(r.logprobs, LogprobsFormat::Completions);
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
}

TEST(CompletionRequest, MaxCompletionTokensWinsAndIntegralFloatsAreIntegers) {
  EXPECT_EQ(
      completion(R"({"prompt": "x", "max_tokens": 5, "max_completion_tokens": 9})").params.stop.max_tokens,
      9);
  EXPECT_EQ(completion(R"({"prompt": "x", "max_tokens": 12.0})").params.stop.max_tokens, 12);
  EXPECT_EQ(completion(R"({"prompt": "x", "stop": ["a", "bc"]})").params.stop.stop_strings,
            (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(completion(R"({"prompt": "x", "seed": -1})").params.sampling.seed,
            std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(completion(R"({"prompt": "x", "temperature": null, "n": null})").params.n, 1);  // null = absent
}

struct BadField {
  const char* json;   // the request body
  const char* param;  // the field the error must name
  int status = 400;
};

// Test names show the field (not the struct's bytes).
void PrintTo(const BadField& b, std::ostream* os) {
  *os << (*b.param ? b.param : "no field") << " " << b.status;
}

class CompletionValidation : public ::testing::TestWithParam<BadField> {};

TEST_P(CompletionValidation, RejectsWithTheFieldNamed) {
  const BadField& c = GetParam();
  const ApiError e = error_of([&] { completion(c.json); });
  EXPECT_EQ(e.status(), c.status) << c.json;
  EXPECT_EQ(e.param(), c.param) << c.json << " -> " << e.what();
  EXPECT_EQ(e.type(), "invalid_request_error");
  EXPECT_FALSE(std::string(e.what()).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, CompletionValidation,
    ::testing::Values(
        BadField{R"({})", "prompt"}, BadField{R"({"prompt": 5})", "prompt"},
        BadField{R"({"prompt": []})", "prompt"}, BadField{R"({"prompt": ["a", 5]})", "prompt[1]"},
        BadField{R"({"prompt": [1, "a"]})", "prompt[1]"}, BadField{R"({"prompt": [1, 512]})", "prompt[1]"},
        BadField{R"({"prompt": [-1]})", "prompt[0]"},
        BadField{R"({"prompt": [[1], [2, 9999]]})", "prompt[1][1]"},
        BadField{R"({"prompt": "x", "temperature": -0.1})", "temperature"},
        BadField{R"({"prompt": "x", "temperature": 100.5})", "temperature"},
        BadField{R"({"prompt": "x", "temperature": "hot"})", "temperature"},
        BadField{R"({"prompt": "x", "top_p": 0})", "top_p"},
        BadField{R"({"prompt": "x", "top_p": 1.01})", "top_p"},
        BadField{R"({"prompt": "x", "top_k": -2})", "top_k"},
        BadField{R"({"prompt": "x", "top_k": 2.5})", "top_k"},
        BadField{R"({"prompt": "x", "min_p": 1.5})", "min_p"},
        BadField{R"({"prompt": "x", "presence_penalty": 2.5})", "presence_penalty"},
        BadField{R"({"prompt": "x", "frequency_penalty": -2.01})", "frequency_penalty"},
        BadField{R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
        BadField{R"({"prompt": "x", "repetition_penalty": 10.5})", "repetition_penalty"},
        BadField{R"({"prompt": "x", "n": 0})", "n"}, BadField{R"({"prompt": "x", "n": 129})", "n"},
        BadField{R"({"prompt": "x", "n": true})", "n"}, BadField{R"({"prompt": ["a", "b"], "n": 65})", "n"},
        BadField{R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
        BadField{R"({"prompt": "x", "max_tokens": -3})", "max_tokens"},
        BadField{R"({"prompt": "x", "max_tokens": 1e12})", "max_tokens"},
        BadField{R"({"prompt": "x", "max_tokens": 600})", "max_tokens"},
        BadField{R"({"prompt": "x", "max_completion_tokens": "10"})", "max_completion_tokens"},
        BadField{R"({"prompt": "x", "seed": 1.5})", "seed"},
        BadField{R"({"prompt": "x", "seed": "42"})", "seed"},
        BadField{R"({"prompt": "x", "seed": 18446744073709551615})", "seed"},
        BadField{R"({"prompt": "x", "logprobs": 21})", "logprobs"},
        BadField{R"({"prompt": "x", "logprobs": -1})", "logprobs"},
        BadField{R"({"prompt": "x", "logprobs": 2, "echo": true})", "logprobs"},
        BadField{R"({"prompt": "x", "logit_bias": {"512": 1}})", "logit_bias"},
        BadField{R"({"prompt": "x", "logit_bias": {"7": 101}})", "logit_bias"},
        BadField{R"({"prompt": "x", "logit_bias": {"seven": 1}})", "logit_bias"},
        BadField{R"({"prompt": "x", "logit_bias": {"7": "1"}})", "logit_bias"},
        BadField{R"({"prompt": "x", "logit_bias": [7]})", "logit_bias"},
        BadField{R"({"prompt": "x", "stop": 5})", "stop"},
        BadField{R"({"prompt": "x", "stop": [1]})", "stop[0]"},
        BadField{R"({"prompt": "x", "stop": ["a", ""]})", "stop[1]"},
        BadField{
            R"({"prompt": "x", "stop": ["1","2","3","4","5","6","7","8","9","10","11","12","13","14","15","16","17"]})",
            "stop"},
        BadField{R"({"prompt": "x", "stop_token_ids": [600]})", "stop_token_ids[0]"},
        BadField{R"({"prompt": "x", "stream": "yes"})", "stream"},
        BadField{R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
        BadField{R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})",
                 "stream_options.include_usage"},
        BadField{R"({"prompt": "x", "echo": 1})", "echo"}, BadField{R"({"prompt": "x", "user": 5})", "user"},
        BadField{R"({"prompt": "x", "cache_salt": ""})", "cache_salt"},
        BadField{R"({"prompt": "x", "ignore_eos": "no"})", "ignore_eos"},
        BadField{R"({"prompt": "x", "best_of": 2})", "best_of"},
        BadField{R"({"prompt": "x", "suffix": "end"})", "suffix"},
        BadField{R"({"prompt": "x", "model": 7})", "model"},
        BadField{R"({"prompt": "x", "model": "gpt-4"})", "", 404}));

TEST(CompletionRequest, PromptPlusOutputMustFitTheSequenceLimit) {
  const ServedModel small = stories_served(/*max_sequence_tokens=*/10);
  // "Once upon a time" is 5 tokens: 5 + 5 fits exactly, 5 + 6 does not.
  EXPECT_EQ(parse_completion_request(body(R"({"prompt": "Once upon a time", "max_tokens": 5})"), small)
                .params.stop.max_tokens,
            5);
  EXPECT_EQ(error_of([&] {
              parse_completion_request(body(R"({"prompt": "Once upon a time", "max_tokens": 6})"), small);
            }).status(),
            400);
  // Without max_tokens the default (16) shrinks to what is left.
  EXPECT_EQ(parse_completion_request(body(R"({"prompt": "Once upon a time"})"), small).params.stop.max_tokens,
            5);
  // A prompt that fills the limit leaves no room at all.
  EXPECT_EQ(error_of([&] {
              parse_completion_request(body(R"({"prompt": [1,2,3,4,5,6,7,8,9,10]})"), small);
            }).param(),
            "prompt");
}

TEST(ChatRequest, RendersChatMlAndAddsBos) {
  const GenerationRequest r = chat(R"({"messages": [{"role": "system", "content": "Be brief."},
                                                    {"role": "user", "content": [{"type": "text", "text": "Hi"}]}]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(
      r.prompts[0].text,
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  const Tokenizer& tok = stories_tokenizer();
  std::vector<int32_t> expected = {tok.bos()};
  const auto rest = tok.encode(r.prompts[0].text, false, true);
  expected.insert(expected.end(), rest.begin(), rest.end());
  EXPECT_EQ(r.prompts[0].tokens, expected);
  EXPECT_EQ(r.endpoint, Endpoint::ChatCompletions);
  // Chat's default output limit is what the sequence limit leaves after the prompt.
  EXPECT_EQ(r.params.stop.max_tokens, 512 - static_cast<int32_t>(expected.size()));
}

TEST(ChatRequest, LogprobsAndGenerationPromptSwitch) {
  const GenerationRequest r =
      chat(R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 3})");
  EXPECT_EQ(r.logprobs, LogprobsFormat::Chat);
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_EQ(
      chat(R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": false})").params.top_logprobs,
      -1);
  const GenerationRequest no_gen =
      chat(R"({"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false})");
  EXPECT_EQ(no_gen.prompts[0].text, "<|im_start|>user\nHi<|im_end|>\n");
}

class ChatValidation : public ::testing::TestWithParam<BadField> {};

TEST_P(ChatValidation, RejectsWithTheFieldNamed) {
  const BadField& c = GetParam();
  const ApiError e = error_of([&] { chat(c.json); });
  EXPECT_EQ(e.status(), c.status) << c.json;
  EXPECT_EQ(e.param(), c.param) << c.json << " -> " << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, ChatValidation,
    ::testing::Values(
        BadField{R"({})", "messages"}, BadField{R"({"messages": []})", "messages"},
        BadField{R"({"messages": "hi"})", "messages"}, BadField{R"({"messages": [5]})", "messages[0]"},
        BadField{R"({"messages": [{"content": "hi"}]})", "messages[0].role"},
        BadField{R"({"messages": [{"role": "wizard", "content": "hi"}]})", "messages[0].role"},
        BadField{R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
        BadField{R"({"messages": [{"role": "user"}]})", "messages[0].content"},
        BadField{
            R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "image_url"}]}]})",
            "messages[1].content[0].type"},
        BadField{R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})",
                 "messages[0].content[0].text"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2})", "top_logprobs"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": true, "top_logprobs": 21})",
                 "top_logprobs"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "logprobs": 1})", "logprobs"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "tools": {}})", "tools"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "tool_choice": "required"})",
                 "tool_choice"},
        BadField{
            R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}})",
            "response_format"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0})",
                 "max_completion_tokens"},
        BadField{R"({"messages": [{"role": "user", "content": "hi"}], "temperature": 101})", "temperature"}));

TEST(ChatRequest, AssistantTurnMayOmitContent) {
  const GenerationRequest r = chat(R"({"messages": [{"role": "user", "content": "Hi"},
                                                    {"role": "assistant", "content": null},
                                                    {"role": "user", "content": "Again"}]})");
  EXPECT_NE(r.prompts[0].text.find("<|im_start|>assistant\n<|im_end|>"), std::string::npos);
}

TEST(JsonBody, RejectsMalformedAndHostileBodies) {
  EXPECT_EQ(error_of([] { parse_json_body("{\"prompt\": "); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_json_body("[1, 2]"); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_json_body(""); }).status(), 400);
  EXPECT_EQ(error_of([] { parse_json_body(std::string(1000000, '[')); }).status(), 400);
  // 64 levels are fine, 65 are not; brackets inside strings do not count.
  std::string deep = "{\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  EXPECT_NO_THROW(parse_json_body(deep));
  deep = "{\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_EQ(error_of([&] { parse_json_body(deep); }).status(), 400);
  EXPECT_NO_THROW(parse_json_body("{\"a\": \"" + std::string(100, '[') + "\\\"\"}"));
}

TEST(JsonFields, IntegerAndNumberRanges) {
  const ChatJson j = body(R"({"a": 3, "b": 3.5, "c": 18446744073709551615, "d": "s", "e": null, "f": true})");
  const JsonFields f(j);
  EXPECT_EQ(f.integer("a", 0, 3), 3);
  EXPECT_EQ(error_of([&] { f.integer("a", 4, 9); }).code(), "invalid_value");
  EXPECT_EQ(error_of([&] { f.integer("b", 0, 9); }).code(), "invalid_type");
  EXPECT_EQ(error_of([&] { f.integer("c", 0, INT64_MAX); }).code(), "invalid_value");
  EXPECT_EQ(error_of([&] { f.integer("d", 0, 9); }).code(), "invalid_type");
  EXPECT_EQ(error_of([&] { f.integer("f", 0, 9); }).code(), "invalid_type");  // booleans are not numbers
  EXPECT_FALSE(f.integer("e", 0, 9).has_value());
  EXPECT_FALSE(f.integer("missing", 0, 9).has_value());
  EXPECT_DOUBLE_EQ(*f.number("b", 0, 3.5), 3.5);
  EXPECT_EQ(error_of([&] { f.number("b", 3.5, 9, /*lo_open=*/true); }).code(), "invalid_value");
  EXPECT_EQ(error_of([&] { f.string("a", 10); }).code(), "invalid_type");
  EXPECT_EQ(error_of([&] { f.string("d", 0); }).code(), "invalid_value");
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

// The model's own template (Mistral's writes the BOS text itself): the prompt is what Python's
// Jinja2 renders with the variables Hugging Face passes, and BOS is not doubled.
TEST(ChatRequest, ModelTemplateMatchesJinja2AndBosIsNotDoubled) {
  const std::string path = test::shared_path("templates/mistralai-Mistral-Nemo-Instruct-2407.jinja");
  const ChatTemplate tmpl(test::read_file(path));
  ServedModel model = stories_served();
  model.chat_template = &tmpl;
  const std::string messages =
      R"([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"},
                                    {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Story?"}])";
  const GenerationRequest r = parse_chat_request(body(R"({"messages": )" + messages + "}"), model);
  const std::string script =
      "import jinja2, json, sys\n"
      "def fail(m):\n    raise Exception(m)\n"
      "env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)\n"
      "env.globals['raise_exception'] = fail\n"
      "t = env.from_string(open(sys.argv[1]).read())\n"
      "sys.stdout.write(t.render(messages=json.loads(sys.argv[2]), bos_token='<s>', eos_token='</s>',\n"
      "                          add_generation_prompt=True, tools=None, documents=None))\n";
  const test::CommandResult py =
      test::run_command({"python3", "-c", "import jinja2.sandbox\n" + script, path, messages});
  ASSERT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(r.prompts[0].text, py.out);
  ASSERT_EQ(r.prompts[0].text.rfind("<s>", 0), 0u);
  const Tokenizer& tok = stories_tokenizer();
  ASSERT_GE(r.prompts[0].tokens.size(), 2u);
  EXPECT_EQ(r.prompts[0].tokens[0], tok.bos());
  EXPECT_NE(r.prompts[0].tokens[1], tok.bos());
}

}  // namespace
}  // namespace strata::server
