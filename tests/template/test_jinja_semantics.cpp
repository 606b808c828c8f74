// Differential tests of the Jinja engine: each snippet of semantics_cases.json (whitespace
// control, literals, operators, scoping, macros, filters, tests, methods, globals, errors) is
// rendered by the engine and by Python's Jinja2 set up as Hugging Face does; outputs must be
// identical, and a snippet that fails in Python must fail here.
#include <gtest/gtest.h>

#include <set>

#include "python_reference.h"
#include "template/chat_template.h"

namespace strata {
namespace {

constexpr int64_t kNow = 1700000000;  // 2023-11-14 22:13:20 UTC

std::vector<std::string> groups() {
  std::set<std::string> names;
  for (const auto& c : test::load_test_json("semantics_cases.json"))
    names.insert(c["group"].get<std::string>());
  return {names.begin(), names.end()};
}

class JinjaSemanticsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(JinjaSemanticsTest, MatchesPythonJinja2) {
  std::vector<ChatJson> selected;
  std::vector<test::ReferenceCase> cases;
  for (const auto& c : test::load_test_json("semantics_cases.json")) {
    if (c["group"] != GetParam()) continue;
    selected.push_back(c);
    cases.push_back({c["template"].get<std::string>(), c["context"], kNow});
  }
  ASSERT_FALSE(cases.empty());
  const std::vector<test::ReferenceResult> expected = test::render_with_python(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string name = selected[i]["name"].get<std::string>();
    SCOPED_TRACE(name + ": " + cases[i].template_source);
    std::string got;
    std::string error;
    TemplateError::Kind kind = TemplateError::Kind::Runtime;
    try {
      got = ChatTemplate(cases[i].template_source).render_context(cases[i].context, {}, kNow);
    } catch (const TemplateError& e) {
      error = e.what();
      kind = e.kind();
    }
    if (expected[i].ok) {
      EXPECT_EQ(error, "");
      EXPECT_EQ(got, expected[i].output);
    } else {
      EXPECT_NE(error, "") << "Python failed with " << expected[i].error_type << ": " << expected[i].message
                           << "; the engine rendered: " << got;
      if (expected[i].raised) {
        EXPECT_EQ(kind, TemplateError::Kind::Raised);
      }
      // Syntax errors are found when parsing, as in Python.
      if (expected[i].error_type == "TemplateSyntaxError" ||
          expected[i].error_type == "TemplateAssertionError") {
        EXPECT_EQ(kind, TemplateError::Kind::Syntax) << error;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Groups, JinjaSemanticsTest, ::testing::ValuesIn(groups()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Documented deviations from Python, checked explicitly rather than against Python.
TEST(JinjaDeviations, IntegersBeyond64BitsAreACleanError) {
  const ChatTemplate t("{{ 2 ** 63 }}");
  try {
    t.render_context(ChatJson::object());
    FAIL() << "expected an overflow error";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
    EXPECT_NE(e.message().find("overflow"), std::string::npos);
  }
}

TEST(JinjaDeviations, LargestInt64StillWorks) {
  EXPECT_EQ(ChatTemplate("{{ 2 ** 62 + (2 ** 62 - 1) }}").render_context(ChatJson::object()),
            "9223372036854775807");
}

}  // namespace
}  // namespace strata
