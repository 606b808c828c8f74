// Every chat template in ../shared/templates, rendered for a set of conversations (system +
// user, multi-turn, unicode, reasoning, a tool-call round trip), with and without the
// generation prompt, with and without tool definitions, with and without enable_thinking=false:
// the prompt must equal what Python's Jinja2 renders with Hugging Face's settings
// (tests/template/hf_jinja_reference.py). Where Python fails, the engine must fail too, and
// where the template itself raised, with the same message.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fixtures.h"
#include "python_reference.h"
#include "template/chat_template.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kNow = 1721990400;  // 2024-07-26 10:40 UTC, for strftime_now

std::vector<std::string> template_files() {
  std::vector<std::string> names;
  const fs::path dir = test::shared_path("templates");
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().extension() == ".jinja") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct Variant {
  std::string conversation;
  bool add_generation_prompt;
  bool with_tools;
  bool thinking_off;

  std::string describe() const {
    return conversation + (add_generation_prompt ? " +gen" : "") + (with_tools ? " +tools" : "") +
           (thinking_off ? " +enable_thinking=false" : "");
  }
};

class HfTemplateTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTemplateTest, MatchesPythonJinja2) {
  const std::string source = test::read_file(test::shared_path("templates/" + GetParam()));
  const ChatJson conversations = test::load_test_json("conversations.json");
  const ChatJson tools = test::load_test_json("tools.json");
  const ChatTemplate tmpl(source);

  std::vector<Variant> variants;
  std::vector<test::ReferenceCase> cases;
  for (auto it = conversations.begin(); it != conversations.end(); ++it) {
    for (int bits = 0; bits < 8; ++bits) {
      const Variant v{it.key(), (bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
      test::ReferenceCase c;
      c.template_source = source;
      c.now = kNow;
      // The variables transformers' apply_chat_template passes.
      c.context["bos_token"] = "<s>";
      c.context["eos_token"] = "</s>";
      if (v.thinking_off) c.context["enable_thinking"] = false;
      c.context["messages"] = it.value();
      c.context["tools"] = v.with_tools ? tools : ChatJson(nullptr);
      c.context["documents"] = nullptr;
      c.context["add_generation_prompt"] = v.add_generation_prompt;
      variants.push_back(v);
      cases.push_back(std::move(c));
    }
  }
  const std::vector<test::ReferenceResult> expected = test::render_with_python(cases);

  int rendered = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    SCOPED_TRACE(GetParam() + ": " + v.describe());
    ChatTemplateOptions opt;
    opt.add_generation_prompt = v.add_generation_prompt;
    opt.tools = v.with_tools ? tools : ChatJson(nullptr);
    opt.bos_token = "<s>";
    opt.eos_token = "</s>";
    opt.now_unix = kNow;
    if (v.thinking_off) opt.extra_context["enable_thinking"] = false;
    const ChatJson& messages = conversations[v.conversation];
    if (expected[i].ok) {
      std::string got;
      ASSERT_NO_THROW(got = tmpl.render(messages, opt));
      EXPECT_EQ(got, expected[i].output);
      ++rendered;
    } else if (expected[i].raised) {
      try {
        tmpl.render(messages, opt);
        ADD_FAILURE() << "expected raise_exception(" << expected[i].message << ")";
      } catch (const TemplateError& e) {
        EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
        EXPECT_EQ(e.message(), expected[i].message);
      }
    } else {
      EXPECT_THROW(tmpl.render(messages, opt), Error)
          << "Python failed: " << expected[i].error_type << ": " << expected[i].message;
    }
  }
  // Each template renders a good part of the conversations (some refuse e.g. system messages).
  EXPECT_GE(rendered, static_cast<int>(variants.size()) / 3) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(SharedTemplates, HfTemplateTest, ::testing::ValuesIn(template_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param.substr(0, info.param.size() - 6))
                             name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

TEST(HfTemplateFixtures, AllElevenTemplatesArePresent) {
  // The issue requires every file of ../shared/templates to render; make sure they were found.
  EXPECT_EQ(template_files().size(), 11u);
}

}  // namespace
}  // namespace strata
