// The grammar of forced tool calls: exactly the framed calls of the given tools, each with
// arguments valid against its own schema; one call unless parallel.
#include <gtest/gtest.h>

#include "grammar/limits.h"
#include "grammar/tool_call_grammar.h"
#include "grammar_test_util.h"

namespace strata::test {
namespace {

using Json = nlohmann::ordered_json;

Json tools() {
  return Json::parse(R"([
    {"name": "add", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
      "required": ["a"], "additionalProperties": false}},
    {"name": "say", "parameters": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}},
      "required": ["text"], "additionalProperties": false}},
    {"name": "now"}])");
}

grammar::Grammar compile(Json spec) {
  spec["tools"] = tools();
  return grammar::compile_grammar(grammar::tool_call_grammar(spec));
}

TEST(ToolCallGrammar, HermesFramingOneCall) {
  const auto g =
      compile({{"call_begin", "<tool_call>\n"}, {"call_end", "\n</tool_call>"}, {"separator", "\n"}});
  EXPECT_TRUE(full_match(g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 5}}\n</tool_call>"));
  EXPECT_TRUE(
      full_match(g, "<tool_call>\n{\"name\": \"say\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>"));
  EXPECT_TRUE(full_match(g, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"any\": [1]}}\n</tool_call>"));
  // Each tool's arguments follow its own schema, not another's.
  EXPECT_FALSE(
      full_match(g, "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"text\": \"hi\"}}\n</tool_call>"));
  EXPECT_FALSE(
      full_match(g, "<tool_call>\n{\"name\": \"say\", \"arguments\": {\"text\": \"long\"}}\n</tool_call>"));
  EXPECT_FALSE(full_match(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  // Not parallel: a second call is not allowed.
  EXPECT_FALSE(full_match(g,
                          "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                          "{\"name\": \"now\", \"arguments\": {}}\n</tool_call>"));
}

TEST(ToolCallGrammar, MistralListParallel) {
  const auto g = compile({{"list_begin", "["}, {"separator", ", "}, {"list_end", "]"}, {"parallel", true}});
  EXPECT_TRUE(full_match(g, "[{\"name\": \"add\", \"arguments\": {\"a\": -1}}]"));
  EXPECT_TRUE(full_match(
      g, "[{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"now\", \"arguments\": {}}]"));
  EXPECT_FALSE(full_match(g, "[]"));
  EXPECT_FALSE(full_match(g, "{\"name\": \"add\", \"arguments\": {\"a\": 1}}"));
}

TEST(ToolCallGrammar, Llama3ParametersKey) {
  const auto g = compile({{"args_key", "parameters"}, {"separator", "; "}});
  EXPECT_TRUE(full_match(g, "{\"name\": \"add\", \"parameters\": {\"a\": 7}}"));
  EXPECT_FALSE(full_match(g, "{\"name\": \"add\", \"arguments\": {\"a\": 7}}"));
}

TEST(ToolCallGrammar, InvalidSpecsAreErrors) {
  EXPECT_THROW(grammar::tool_call_grammar(Json::object()), grammar::GrammarError);
  EXPECT_THROW(grammar::tool_call_grammar({{"tools", Json::array()}}), grammar::GrammarError);
  EXPECT_THROW(grammar::tool_call_grammar({{"tools", {{{"name", 3}}}}}), grammar::GrammarError);
  EXPECT_THROW(grammar::tool_call_grammar({{"tools", tools()}, {"parallel", "yes"}}), grammar::GrammarError);
  EXPECT_THROW(grammar::tool_call_grammar(
                   {{"tools", {{{"name", "f"}, {"parameters", {{"type", "object"}, {"not", {}}}}}}}}),
               grammar::GrammarError);
}

}  // namespace
}  // namespace strata::test
