// The tool-call parser: each family's syntax (written out here from the templates in
// ../shared/templates) into content and calls, and streaming that agrees with one-shot parsing
// however the text is cut.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/fixtures.h"
#include "server/tool_calls.h"

namespace strata::server {
namespace {

using json = nlohmann::json;

struct Expected {
  std::string name;
  json arguments;  // compared as JSON values
};

struct Result {
  std::string content;
  std::vector<ParsedToolCall> calls;
};

// Feeds `text` in pieces cut at `cuts` and rebuilds the answer from the deltas alone, checking
// that it agrees with the parser's own accumulated view.
Result parse_in_pieces(ToolFamily family, bool forced, const std::string& text,
                       const std::vector<size_t>& cuts) {
  ToolCallParser p(family, forced);
  std::vector<ToolCallDelta> all;
  size_t at = 0;
  for (size_t cut : cuts) {
    auto d = p.push(std::string_view(text).substr(at, cut - at));
    all.insert(all.end(), d.begin(), d.end());
    at = cut;
  }
  auto d = p.push(std::string_view(text).substr(at));
  all.insert(all.end(), d.begin(), d.end());
  d = p.finish();
  all.insert(all.end(), d.begin(), d.end());
  Result r;
  for (const ToolCallDelta& x : all) {
    switch (x.kind) {
      case ToolCallDelta::Kind::Content:
        r.content += x.text;
        break;
      case ToolCallDelta::Kind::CallStart:
        EXPECT_EQ(x.index, static_cast<int32_t>(r.calls.size()));
        r.calls.push_back({x.text, ""});
        break;
      case ToolCallDelta::Kind::Arguments:
        EXPECT_EQ(x.index + 1, static_cast<int32_t>(r.calls.size())) << "arguments of an earlier call";
        r.calls.back().arguments += x.text;
        break;
    }
  }
  EXPECT_EQ(r.content, p.content());
  EXPECT_EQ(r.calls.size(), p.calls().size());
  for (size_t i = 0; i < std::min(r.calls.size(), p.calls().size()); ++i) {
    EXPECT_EQ(r.calls[i].name, p.calls()[i].name);
    EXPECT_EQ(r.calls[i].arguments, p.calls()[i].arguments);
  }
  return r;
}

// One push, every two-piece cut and byte by byte all give the expected answer.
void expect_parse(ToolFamily family, bool forced, const std::string& text, const std::string& content,
                  const std::vector<Expected>& calls) {
  std::vector<std::vector<size_t>> cutsets = {{}};
  for (size_t i = 1; i < text.size(); ++i) cutsets.push_back({i});
  std::vector<size_t> bytes;
  for (size_t i = 1; i < text.size(); ++i) bytes.push_back(i);
  cutsets.push_back(bytes);
  for (const auto& cuts : cutsets) {
    const Result r = parse_in_pieces(family, forced, text, cuts);
    const std::string where = "cut at " + (cuts.empty() ? std::string("none") : std::to_string(cuts[0])) +
                              (cuts.size() > 1 ? " (bytewise)" : "") + " of " + text;
    EXPECT_EQ(r.content, content) << where;
    ASSERT_EQ(r.calls.size(), calls.size()) << where;
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(r.calls[i].name, calls[i].name) << where;
      const json args = json::parse(r.calls[i].arguments, nullptr, false);
      EXPECT_EQ(args, calls[i].arguments) << where << ": arguments " << r.calls[i].arguments;
    }
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(ToolCalls, HermesTagsWithContentBefore) {
  expect_parse(ToolFamily::Hermes, false,
               "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
               "\"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n"
               "</tool_call>",
               "Let me look.\n",
               {{"get_weather", {{"city", "Paris"}, {"days", {1, 2}}}}, {"get_time", json::object()}});
}

TEST(ToolCalls, HermesPlainContentIsUntouched) {
  const std::string text = "Use {braces} and <tool> tags, [TOOL_CALLS] means nothing here. <tool_ca";
  expect_parse(ToolFamily::Hermes, false, text, text, {});
}

TEST(ToolCalls, ArgumentsGivenAsAJsonString) {
  expect_parse(
      ToolFamily::Hermes, false,
      "<tool_call>{\"arguments\": \"{\\\"q\\\": \\\"a \\\\\\\"b\\\\\\\"\\\"}\", \"name\": \"search\"}"
      "</tool_call>",
      "", {{"search", {{"q", "a \"b\""}}}});
}

TEST(ToolCalls, StringsWithBracesAndEscapes) {
  expect_parse(
      ToolFamily::Mistral, false,
      "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"s\": \"}]\\\"{\", \"n\": -1.5e3}}, {\"name\": "
      "\"b\", \"arguments\": {\"x\": [true, null, {\"y\": \"z\"}]}}]",
      "", {{"a", {{"s", "}]\"{"}, {"n", -1500.0}}}, {"b", {{"x", {true, nullptr, {{"y", "z"}}}}}}});
}

TEST(ToolCalls, Llama3Json) {
  expect_parse(ToolFamily::Llama3, false, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
               "", {{"get_weather", {{"city", "Oslo"}}}});
  expect_parse(
      ToolFamily::Llama3, false,
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"k\": 1}}; {\"name\": \"b\", \"parameters\": {}}",
      "", {{"a", {{"k", 1}}}, {"b", json::object()}});
  // A JSON reply that is no call stays content.
  expect_parse(ToolFamily::Llama3, false, "{\"answer\": 42}", "{\"answer\": 42}", {});
  expect_parse(ToolFamily::Llama3, false, "  The answer is 42.", "  The answer is 42.", {});
}

TEST(ToolCalls, ScalarArgumentsAndCallsWithoutArguments) {
  expect_parse(ToolFamily::Llama3, false, "{\"name\": \"now\"}", "", {{"now", json::object()}});
  expect_parse(ToolFamily::Hermes, false, "<tool_call>{\"name\": \"f\", \"arguments\": 17 }</tool_call>", "",
               {{"f", 17}});
}

TEST(ToolCalls, ForcedOutputNeedsNoMarker) {
  expect_parse(ToolFamily::Mistral, true,
               "[{\"name\": \"a\", \"arguments\": {\"x\": 1}}, {\"name\": \"b\", \"arguments\": {}}]", "",
               {{"a", {{"x", 1}}}, {"b", json::object()}});
  expect_parse(ToolFamily::Generic, true,
               "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"b\"}}\n</tool_call>", "",
               {{"f", {{"a", "b"}}}});
}

TEST(ToolCalls, GenericReadsEveryFamilysMarkers) {
  expect_parse(ToolFamily::Generic, false, "<|tool_call|>[{\"name\": \"g\", \"arguments\": {\"v\": 2}}]", "",
               {{"g", {{"v", 2}}}});
  expect_parse(ToolFamily::Generic, false, "ok [TOOL_CALLS][{\"name\": \"g\", \"arguments\": {}}]", "ok ",
               {{"g", json::object()}});
}

TEST(ToolCalls, CutOffCallKeepsItsPartialArguments) {
  ToolCallParser p(ToolFamily::Hermes, false);
  p.push("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2");
  p.finish();
  ASSERT_EQ(p.calls().size(), 1u);
  EXPECT_EQ(p.calls()[0].name, "f");
  EXPECT_EQ(p.calls()[0].arguments, "{\"a\": [1, 2");
  EXPECT_EQ(p.content(), "");
}

TEST(ToolCalls, ObjectWithoutNameIsContent) {
  ToolCallParser p(ToolFamily::Hermes, false);
  p.push("<tool_call>{\"x\": 1}</tool_call> rest");
  p.finish();
  EXPECT_TRUE(p.calls().empty());
  EXPECT_NE(p.content().find("{\"x\": 1}"), std::string::npos);
  EXPECT_NE(p.content().find("rest"), std::string::npos);
}

std::string read_template(const std::string& name) {
  std::ifstream in(test::shared_path("templates/" + name));
  EXPECT_TRUE(in) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ToolCalls, FamilyOfEachSharedTemplate) {
  const std::vector<std::pair<std::string, ToolFamily>> cases = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolFamily::Hermes},
      {"Qwen-Qwen3-0.6B.jinja", ToolFamily::Hermes},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolFamily::Hermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolFamily::Llama3},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolFamily::Llama3},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolFamily::Mistral},
      {"google-gemma-2-2b-it.jinja", ToolFamily::Generic},
      {"microsoft-Phi-3.5-mini-instruct.jinja", ToolFamily::Generic},
      {"ibm-granite-granite-3.3-2B-Instruct.jinja", ToolFamily::Generic},
  };
  for (const auto& [file, family] : cases)
    EXPECT_STREQ(tool_family_name(detect_tool_family(read_template(file))), tool_family_name(family)) << file;
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

// Malformed calls the fuzzer found (a second string after the name, a scalar then a string as
// arguments): cut anywhere, they still parse as they do in one piece.
TEST(ToolCalls, MalformedCallsStreamLikeWhole) {
  const std::vector<std::pair<ToolFamily, std::string>> cases = {
      {ToolFamily::Hermes,
       "Hi <tool_call>\n{\"name\": \"\x9a\xdd\xd3\xdd\"arguments\": ]}}\n</tool_c\"a\": all>"},
      {ToolFamily::Mistral, std::string("[{\"name\": \"a\",me \"arguments\":\x16\x12\x0e\x8a\xff\x7f") +
                                std::string("\0\0 \"\x06{", 6)},
  };
  for (const auto& [family, text] : cases) {
    for (bool forced : {false, true}) {
      const Result whole = parse_in_pieces(family, forced, text, {});
      for (size_t cut = 1; cut < text.size(); ++cut) {
        const Result r = parse_in_pieces(family, forced, text, {cut});
        EXPECT_EQ(r.content, whole.content) << cut;
        ASSERT_EQ(r.calls.size(), whole.calls.size()) << cut;
        for (size_t i = 0; i < r.calls.size(); ++i) {
          EXPECT_EQ(r.calls[i].name, whole.calls[i].name) << cut;
          EXPECT_EQ(r.calls[i].arguments, whole.calls[i].arguments) << cut;
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata::server
