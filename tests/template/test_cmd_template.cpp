// `strata template`: the CLI prints exactly the prompt Python's Jinja2 (HF settings) renders,
// takes the template from a file or a model's metadata, falls back to ChatML with a log line,
// and reports errors as one clean line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/fixtures.h"
#include "python_reference.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class CmdTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata_cmd_template_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  static test::CommandResult strata(std::vector<std::string> args) {
    args.insert(args.begin(), {test::strata_binary(), "template"});
    return test::run_command(args);
  }

  static std::string python(const std::string& source, const Json& context) {
    const auto r = test::render_with_python({{source, context, std::nullopt}});
    EXPECT_TRUE(r[0].ok) << r[0].message;
    return r[0].output;
  }

  static Json context(const Json& messages, const Json& tools, bool gen, const std::string& bos,
                      const std::string& eos) {
    return Json{{"bos_token", bos}, {"eos_token", eos},     {"messages", messages},
                {"tools", tools},   {"documents", nullptr}, {"add_generation_prompt", gen}};
  }

  fs::path dir_;
};

TEST_F(CmdTemplateTest, TemplateFileWithToolsMatchesPython) {
  const std::string tmpl = test::shared_path("templates/Qwen-Qwen2.5-7B-Instruct.jinja");
  const Json messages = test::load_test_json("conversations.json")["tool_round_trip"];
  const Json tools = test::load_test_json("tools.json");
  const std::string messages_file = write("messages.json", messages.dump());
  const std::string tools_file = write("tools.json", tools.dump());
  const auto r = strata({"--template", tmpl, "--messages", messages_file, "--tools", tools_file,
                         "--add-generation-prompt", "--bos-token", "<s>", "--eos-token", "</s>"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, python(test::read_file(tmpl), context(messages, tools, true, "<s>", "</s>")));
}

TEST_F(CmdTemplateTest, RequestObjectAndExtraVariables) {
  // A request body ({"messages", "tools"}) works as the messages file; --var adds variables.
  const std::string tmpl = test::shared_path("templates/Qwen-Qwen3-0.6B.jinja");
  const Json messages = test::load_test_json("conversations.json")["reasoning"];
  const Json tools = test::load_test_json("tools.json");
  const std::string request =
      write("request.json", Json{{"model", "x"}, {"messages", messages}, {"tools", tools}}.dump());
  const auto r = strata({"--template", tmpl, "--messages", request, "--add-generation-prompt", "--var",
                         "enable_thinking=false"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json ctx = context(messages, tools, true, "", "");
  ctx["enable_thinking"] = false;
  EXPECT_EQ(r.out, python(test::read_file(tmpl), ctx));
}

TEST_F(CmdTemplateTest, ModelWithoutTemplateFallsBackToChatMl) {
  const std::string messages = write("m.json", R"([{"role": "user", "content": "Hi"}])");
  const auto r = strata({"-m", test::shared_path("models/stories260K/stories260K.gguf"), "--messages",
                         messages, "--add-generation-prompt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_NE(r.err.find("ChatML"), std::string::npos) << r.err;
}

TEST_F(CmdTemplateTest, HuggingFaceDirectoryTemplateAndSpecialTokens) {
  // A copy of the HF fixture with a chat template in tokenizer_config.json: -m must use it, with
  // the model's BOS/EOS texts.
  const fs::path src = test::shared_path("models/tinystories656k");
  const fs::path model = dir_ / "model";
  fs::create_directories(model);
  for (const auto& e : fs::directory_iterator(src)) fs::copy_file(e.path(), model / e.path().filename());
  const std::string source =
      "{{ bos_token }}{% for m in messages %}[{{ m.role|upper }}] {{ m.content }}{{ eos_token }}\n{% endfor "
      "%}";
  Json config = Json::parse(test::read_file((src / "tokenizer_config.json").string()));
  const std::string bos = config["bos_token"], eos = config["eos_token"];
  config["chat_template"] = source;
  fs::remove(model / "tokenizer_config.json");
  write("model/tokenizer_config.json", config.dump());
  const Json messages = Json::parse(R"([{"role": "user", "content": "Once upon a time"}])");
  const auto r = strata({"-m", model.string(), "--messages", write("m.json", messages.dump())});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, python(source, context(messages, nullptr, false, bos, eos)));
}

TEST_F(CmdTemplateTest, ErrorsAreOneCleanLine) {
  const std::string messages = write("m.json", R"([{"role": "user", "content": "Hi"}])");
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  const std::string bad_template = write("bad.jinja", "ok\n{% for x in %}");
  const std::string raising = write("raise.jinja", "{{ raise_exception('no system role') }}");
  const std::vector<Case> cases = {
      {{"--template", (dir_ / "missing.jinja").string(), "--messages", messages}, "cannot open"},
      {{"--template", bad_template, "--messages", messages}, "line 2"},
      {{"--template", raising, "--messages", messages}, "no system role"},
      {{"--template", raising, "--messages", write("bad.json", "[{")}, "not valid JSON"},
      {{"--messages", messages}, "--template"},
  };
  for (const Case& c : cases) {
    const auto r = strata(c.args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("strata: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace strata
