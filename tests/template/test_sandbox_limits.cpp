// The sandbox: hostile templates (as a malicious GGUF could carry) end in a clean
// TemplateError naming the limit they hit, never a crash, hang or runaway allocation; and there
// is no way to reach files, the environment or Python internals.
#include <gtest/gtest.h>

#include <random>

#include "common/fixtures.h"
#include "python_reference.h"
#include "template/chat_template.h"

namespace strata {
namespace {

// Default limits, except a wall-time limit loose enough that a slow (sanitized, loaded)
// machine still hits the limit under test first.
TemplateLimits relaxed() {
  TemplateLimits l;
  l.max_time_ms = 120000;
  return l;
}

// Renders `source`, expecting a LimitExceeded error whose message contains `what`.
void expect_limit(const std::string& source, const std::string& what,
                  const TemplateLimits& limits = relaxed(), const ChatJson& context = ChatJson::object()) {
  SCOPED_TRACE(source.substr(0, 200));
  try {
    const std::string out = ChatTemplate(source).render_context(context, limits);
    ADD_FAILURE() << "rendered " << out.size() << " bytes instead of hitting the " << what << " limit";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::LimitExceeded) << e.what();
    EXPECT_NE(e.message().find(what), std::string::npos) << e.what();
  }
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

TEST(SandboxLimits, InfiniteMacroRecursion) {
  expect_limit("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}", "call depth");
  expect_limit(
      "{% macro m() %}{{ caller() }}{% endmacro %}{% macro r() %}{% call m() %}{{ r() }}{% endcall %}"
      "{% endmacro %}{{ r() }}",
      "call depth");
  expect_limit("{% for i in [[1]] recursive %}{{ loop([[1]]) }}{% endfor %}", "call depth");
}

TEST(SandboxLimits, RealTemplateWithSelfRecursiveToolSchema) {
  // Hermes' json_to_python_type recurses forever on a union containing "null": each character
  // of "null" is itself iterable. Python dies with RecursionError; we stop cleanly.
  const ChatTemplate t(
      test::read_file(test::shared_path("templates/NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja")));
  ChatTemplateOptions opt;
  opt.tools = ChatJson::parse(R"([{"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"x": {"type": ["string", "null"], "description": "x"}}}}}])");
  try {
    t.render(ChatJson::parse(R"([{"role": "user", "content": "hi"}])"), opt);
    FAIL() << "expected the call depth limit";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::LimitExceeded);
  }
}

TEST(SandboxLimits, LoopIterations) {
  expect_limit("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
               "loop iterations");
  TemplateLimits small = relaxed();
  small.max_loop_iterations = 1000;
  expect_limit("{% for i in range(1001) %}{% endfor %}", "loop iterations", small);
  EXPECT_NO_THROW(
      ChatTemplate("{% for i in range(1000) %}{% endfor %}").render_context(ChatJson::object(), small));
}

TEST(SandboxLimits, OutputSize) {
  TemplateLimits small = relaxed();
  small.max_output_bytes = 1 << 16;
  expect_limit("{% for i in range(100000) %}{{ 'xxxxxxxx' }}{% endfor %}", "output", small);
  // Exactly at the limit is fine.
  EXPECT_EQ(ChatTemplate("{{ 'x' * 65536 }}").render_context(ChatJson::object(), small).size(), 65536u);
}

TEST(SandboxLimits, HugeStringsAreRefusedBeforeAllocation) {
  expect_limit("{{ 'x' * 1000000000000 }}", "bytes");
  expect_limit("{{ 'x'.center(10000000000) }}", "bytes");
  expect_limit("{{ '%999999999d' % 1 }}", "bytes");
  expect_limit("{{ [1]|tojson(indent=1000000000) }}", "bytes");
  expect_limit("{{ ('ab' * 10000000)|replace('a', 'aaaa') }}", "bytes");
}

TEST(SandboxLimits, HugeContainers) {
  expect_limit("{{ [1] * 1000000000 }}", "items");
  expect_limit("{{ ('a,' * 10000000).split(',')|length }}", "items");
  expect_limit("{{ ('a' * 30000000)|list|length }}", "items");
}

TEST(SandboxLimits, DeepValues) {
  expect_limit(
      "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}",
      "nesting");
  // A deeply nested JSON variable is refused on the way in.
  const ChatJson deep = ChatJson::parse(repeat("[", 2000) + repeat("]", 2000));
  ChatJson context = ChatJson::object();
  context["x"] = deep;
  expect_limit("{{ x|length }}", "nested", relaxed(), context);
}

TEST(SandboxLimits, NamespacesCannotFormCycles) {
  try {
    ChatTemplate("{% set ns = namespace(x=1) %}{% set ns.me = ns %}").render_context(ChatJson::object());
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
    EXPECT_NE(e.message().find("plain data"), std::string::npos);
  }
}

TEST(SandboxLimits, AllocationBudget) {
  TemplateLimits small = relaxed();
  small.max_alloc_bytes = 1 << 20;
  expect_limit("{% for i in range(1000) %}{% set s = 'x' * 10000 %}{% endfor %}", "memory", small);
}

TEST(SandboxLimits, WallTime) {
  TemplateLimits quick;
  quick.max_time_ms = 100;
  quick.max_loop_iterations = int64_t{1} << 50;  // so that only the clock can stop it
  expect_limit(
      "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100000) %}"
      "{% endfor %}{% endfor %}{% endfor %}",
      "time", quick);
}

TEST(SandboxLimits, ParserNestingAndSourceSize) {
  for (const std::string& source :
       {"{{ " + repeat("(", 1000) + "1" + repeat(")", 1000) + " }}",
        repeat("{% if true %}", 1000) + repeat("{% endif %}", 1000), "{{ " + repeat("not ", 5000) + "x }}",
        "{{ " + repeat("-", 5000) + "1 }}", "{% set x = " + repeat("[", 2000) + repeat("]", 2000) + " %}"}) {
    try {
      ChatTemplate t(source);
      FAIL() << "parsed " << source.substr(0, 40);
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
      EXPECT_NE(e.message().find("nesting"), std::string::npos) << e.what();
    }
  }
  TemplateParseLimits tiny;
  tiny.max_source_bytes = 10;
  EXPECT_THROW(ChatTemplate("{{ 'more than ten bytes' }}", tiny), TemplateError);
}

TEST(Sandbox, NoFilesystemOrTemplateLoading) {
  for (const char* source :
       {"{% include 'x' %}", "{% import 'x' as y %}", "{% from 'x' import y %}", "{% extends 'base' %}"}) {
    try {
      ChatTemplate t(source);
      FAIL() << source;
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
      EXPECT_NE(e.message().find("not supported"), std::string::npos);
    }
  }
}

TEST(Sandbox, NoEnvironmentOrInternalsAccess) {
  // Nothing beyond the documented globals exists, and Python internals are unreachable.
  EXPECT_EQ(
      ChatTemplate("{{ os is defined }}{{ environ is defined }}{{ self is defined }}{{ config is defined }}"
                   "{{ lipsum is defined }}{{ getenv is defined }}")
          .render_context(ChatJson::object()),
      "FalseFalseFalseFalseFalseFalse");
  EXPECT_EQ(ChatTemplate("[{{ ''.__class__ }}][{{ range.__globals__ }}][{{ x.__dict__ }}]")
                .render_context(ChatJson{{"x", ChatJson::object()}}),
            "[][][]");
  EXPECT_THROW(ChatTemplate("{{ ''.__class__.__mro__ }}").render_context(ChatJson::object()), TemplateError);
  EXPECT_THROW(ChatTemplate("{{ [].append(1) }}").render_context(ChatJson::object()), TemplateError);
}

TEST(Sandbox, RandomMutationsOfRealTemplatesNeverCrash) {
  // Byte flips, truncations and splices of the shared templates: each result must either
  // render or fail with a strata::Error, under tight limits.
  std::vector<std::string> sources;
  for (const char* name :
       {"Qwen-Qwen3-0.6B.jinja", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
        "mistralai-Mistral-Nemo-Instruct-2407.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"})
    sources.push_back(test::read_file(test::shared_path(std::string("templates/") + name)));
  const ChatJson messages = test::load_test_json("conversations.json")["tool_round_trip"];
  ChatTemplateOptions opt;
  opt.tools = test::load_test_json("tools.json");
  // Iterations and output bound every render, so the outcome never depends on the clock.
  opt.limits.max_time_ms = 60000;
  opt.limits.max_loop_iterations = 20000;
  opt.limits.max_output_bytes = 1 << 20;
  std::mt19937 rng(1234);
  const std::string alphabet = "{}%#-+()[]|.,:'\"~=<>! \nabcdefghijklmnopqrstuvwxyz0123456789_";
  int rendered = 0, failed = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    std::string s = sources[rng() % sources.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 4) {
        case 0:
          s[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          s.erase(pos, 1 + rng() % 8);
          break;
        case 2:
          s.insert(pos, sources[rng() % sources.size()].substr(rng() % 1000, rng() % 40));
          break;
        default:
          s.resize(pos);
          break;
      }
    }
    try {
      ChatTemplate t(s);
      t.render(messages, opt);
      ++rendered;
    } catch (const Error&) {
      ++failed;
    }
  }
  EXPECT_EQ(rendered + failed, 1500);
  EXPECT_GT(rendered, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace strata
