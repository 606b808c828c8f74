// ChatTemplate's own behaviour around the engine: message preprocessing (content parts, tool
// call arguments), the ChatML fallback, variables, errors with their kind and line, and
// concurrent renders.
#include <gtest/gtest.h>

#include <thread>

#include "common/fixtures.h"
#include "python_reference.h"
#include "template/chat_template.h"

namespace strata {
namespace {

std::string shared_template(const std::string& name) {
  return test::read_file(test::shared_path("templates/" + name));
}

// The context transformers would get for `messages`.
ChatJson hf_context(const ChatJson& messages, bool add_generation_prompt) {
  ChatJson c = ChatJson::object();
  c["bos_token"] = "";
  c["eos_token"] = "";
  c["messages"] = messages;
  c["tools"] = nullptr;
  c["documents"] = nullptr;
  c["add_generation_prompt"] = add_generation_prompt;
  return c;
}

std::string python_render(const std::string& source, const ChatJson& context) {
  const auto r = test::render_with_python({{source, context, std::nullopt}});
  EXPECT_TRUE(r[0].ok) << r[0].error_type << ": " << r[0].message;
  return r[0].output;
}

TEST(ChatMlFallback, RendersTheDocumentedFormat) {
  const ChatTemplate t = make_chat_template(std::nullopt, "test-model");
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  const ChatJson messages = ChatJson::parse(R"([{"role": "system", "content": "Be nice."},
                                               {"role": "user", "content": "Hi"}])");
  EXPECT_EQ(
      t.render(messages, opt),
      "<|im_start|>system\nBe nice.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  opt.add_generation_prompt = false;
  EXPECT_EQ(t.render(messages, opt),
            "<|im_start|>system\nBe nice.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatMlFallback, EmptyModelTemplateFallsBackAndAModelTemplateIsUsed) {
  const ChatJson messages = ChatJson::parse(R"([{"role": "user", "content": "Hi"}])");
  EXPECT_EQ(make_chat_template(std::string(), "m").render(messages), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(make_chat_template(std::string("[{{ messages[0].content }}]"), "m").render(messages), "[Hi]");
}

TEST(ChatMlFallback, MatchesPythonOnToolAndPartsMessages) {
  // The default must also survive messages without text content.
  const ChatJson messages = ChatJson::parse(R"([{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": null, "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
      {"role": "tool", "content": "42"},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}])");
  ChatTemplateOptions opt;
  opt.content_parts = ChatTemplateOptions::ContentParts::Keep;
  opt.add_generation_prompt = true;
  EXPECT_EQ(ChatTemplate(chatml_template_source()).render(messages, opt),
            python_render(chatml_template_source(), hf_context(messages, true)));
}

TEST(ContentParts, TextPartsAreJoinedWithNewlines) {
  const ChatTemplate t(shared_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  const ChatJson parts = ChatJson::parse(R"([{"role": "user", "content": [{"type": "text", "text": "first"},
                                                                          {"type": "text", "text": "second"}]}])");
  const ChatJson flat = ChatJson::parse(R"([{"role": "user", "content": "first\nsecond"}])");
  EXPECT_EQ(t.render(parts), python_render(t.source(), hf_context(flat, false)));
}

TEST(ContentParts, NonTextPartsAreRejected) {
  const ChatTemplate t(chatml_template_source());
  const ChatJson image =
      ChatJson::parse(R"([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])");
  EXPECT_THROW(t.render(image), Error);
  ChatTemplateOptions keep;
  keep.content_parts = ChatTemplateOptions::ContentParts::Keep;
  EXPECT_EQ(t.render(image, keep), "<|im_start|>user\n<|im_end|>\n");
}

ChatJson tool_call_conversation(const ChatJson& arguments) {
  ChatJson m = ChatJson::parse(R"([{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": null,
       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": null}}]},
      {"role": "tool", "content": "sunny"}])");
  m[1]["tool_calls"][0]["function"]["arguments"] = arguments;
  return m;
}

TEST(ToolCallArguments, JsonStringsBecomeObjectsForTemplatesThatSerializeThem) {
  // OpenAI clients send arguments as a JSON string; Qwen2.5 applies tojson to them.
  const ChatTemplate t(shared_template("Qwen-Qwen2.5-7B-Instruct.jinja"));
  const ChatJson as_string = tool_call_conversation(R"({"city": "Paris", "days": 2})");
  const ChatJson as_object = tool_call_conversation(ChatJson::parse(R"({"city": "Paris", "days": 2})"));
  EXPECT_EQ(t.render(as_string), python_render(t.source(), hf_context(as_object, false)));
  ChatTemplateOptions given;
  given.tool_call_arguments = ChatTemplateOptions::ToolCallArguments::AsGiven;
  EXPECT_EQ(t.render(as_string, given), python_render(t.source(), hf_context(as_string, false)));
}

TEST(ToolCallArguments, TemplatesThatConcatenateThemGetTheString) {
  // DeepSeek-R1's template does '...' + arguments: with an object it fails, so Auto retries.
  const ChatTemplate t(shared_template("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja"));
  const ChatJson as_string = tool_call_conversation(R"({"city": "Paris"})");
  EXPECT_EQ(t.render(as_string), python_render(t.source(), hf_context(as_string, false)));
  ChatTemplateOptions strict;
  strict.tool_call_arguments = ChatTemplateOptions::ToolCallArguments::Object;
  EXPECT_THROW(t.render(as_string, strict), TemplateError);
}

TEST(ToolCallArguments, ObjectModeRejectsInvalidJson) {
  const ChatTemplate t(chatml_template_source());
  ChatTemplateOptions strict;
  strict.tool_call_arguments = ChatTemplateOptions::ToolCallArguments::Object;
  EXPECT_THROW(t.render(tool_call_conversation("{not json"), strict), Error);
  // Auto keeps a non-JSON string as it is.
  EXPECT_NO_THROW(t.render(tool_call_conversation("{not json")));
}

TEST(Variables, BosEosExtraContextAndClock) {
  const ChatTemplate t(
      "{{ bos_token }}|{{ eos_token }}|{{ enable_thinking }}|{{ tools }}|{{ documents }}|{{ "
      "add_generation_prompt }}|"
      "{{ strftime_now('%Y-%m-%d %H:%M') }}");
  ChatTemplateOptions opt;
  opt.bos_token = "<s>";
  opt.eos_token = "</s>";
  opt.extra_context["enable_thinking"] = false;
  opt.now_unix = 86400 + 3600 + 120;  // 1970-01-02 01:02 UTC
  EXPECT_EQ(t.render(ChatJson::array(), opt), "<s>|</s>|False|None|None|False|1970-01-02 01:02");
}

TEST(Variables, ToolsArePassedThroughInOrder) {
  const ChatTemplate t("{{ tools|tojson }}");
  ChatTemplateOptions opt;
  opt.tools = ChatJson::parse(R"([{"z": 1, "a": {"y": 2, "b": 3}}])");
  EXPECT_EQ(t.render(ChatJson::array(), opt), R"([{"z": 1, "a": {"y": 2, "b": 3}}])");
}

TEST(Validation, MalformedRequestsAreErrors) {
  const ChatTemplate t(chatml_template_source());
  EXPECT_THROW(t.render(ChatJson::object()), Error);
  EXPECT_THROW(t.render(ChatJson::parse(R"([{"content": "no role"}])")), Error);
  EXPECT_THROW(t.render(ChatJson::parse(R"(["not an object"])")), Error);
  ChatTemplateOptions bad_tools;
  bad_tools.tools = ChatJson::object();
  EXPECT_THROW(t.render(ChatJson::array(), bad_tools), Error);
  ChatTemplateOptions bad_extra;
  bad_extra.extra_context = ChatJson::array();
  EXPECT_THROW(t.render(ChatJson::array(), bad_extra), Error);
}

TEST(Errors, SyntaxErrorsCarryTheirLine) {
  try {
    ChatTemplate("line one\nline two\n{% if x %}\nunclosed");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
    EXPECT_EQ(e.line(), 4);  // reported where the template ended without {% endif %}
    EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos);
  }
  try {
    ChatTemplate("a\n{{ 1 + }}");
    FAIL() << "expected a syntax error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.line(), 2);
  }
}

TEST(Errors, RuntimeErrorsAndRaisedExceptionsCarryTheirLine) {
  const ChatTemplate t("a\nb\n{{ 'x' + 1 }}");
  try {
    t.render_context(ChatJson::object());
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
    EXPECT_EQ(e.line(), 3);
  }
  const ChatTemplate r("{% if true %}\n  {{ raise_exception('Roles must alternate') }}\n{% endif %}");
  try {
    r.render_context(ChatJson::object());
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
    EXPECT_EQ(e.message(), "Roles must alternate");
    EXPECT_EQ(e.line(), 2);
  }
}

TEST(Concurrency, OneTemplateRendersFromManyThreads) {
  const ChatTemplate t(shared_template("meta-llama-Llama-3.1-8B-Instruct.jinja"));
  const ChatJson conversations = test::load_test_json("conversations.json");
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  opt.tools = test::load_test_json("tools.json");
  const std::string expected = t.render(conversations["tool_round_trip"], opt);
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 50; ++i)
        mismatches[k] += t.render(conversations["tool_round_trip"], opt) != expected;
    });
  }
  for (auto& th : threads) th.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(Copy, CopiesAndMovesRenderTheSame) {
  ChatTemplate a("{{ messages|length }}");
  ChatTemplate b = a;
  ChatTemplate c = std::move(a);
  EXPECT_EQ(b.render(ChatJson::parse(R"([{"role": "user"}])")), "1");
  EXPECT_EQ(c.render(ChatJson::parse(R"([{"role": "user"}, {"role": "user"}])")), "2");
  EXPECT_EQ(b.source(), "{{ messages|length }}");
}

}  // namespace
}  // namespace strata
