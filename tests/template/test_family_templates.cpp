// The chat templates of the architecture families Strata runs (Qwen3, Gemma 2, Phi-3.5, Mistral,
// DeepSeek R1), with each family's own BOS/EOS texts and the features their templates branch on:
// Qwen3's thinking switch, Gemma's refusal of system messages and its model/user roles, DeepSeek's
// stripping of earlier reasoning, Mistral's and Phi's multi-turn formats. Every prompt must equal
// what Python's Jinja2 renders with Hugging Face's settings (tests/template/hf_jinja_reference.py);
// where the template raises, the engine must raise the same message.
#include <gtest/gtest.h>

#include "common/fixtures.h"
#include "python_reference.h"
#include "template/chat_template.h"

namespace strata {
namespace {

struct Family {
  const char* file;
  const char* bos;
  const char* eos;
};

// The special-token texts of each family's tokenizer (tokenizer_config.json of the models).
const Family kFamilies[] = {
    {"Qwen-Qwen3-0.6B.jinja", "", "<|im_end|>"},
    {"google-gemma-2-2b-it.jinja", "<bos>", "<eos>"},
    {"microsoft-Phi-3.5-mini-instruct.jinja", "<s>", "<|endoftext|>"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "<s>", "</s>"},
    {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
     "<\xef\xbd\x9c"
     "begin\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
     "<\xef\xbd\x9c"
     "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>"},
};

ChatJson conversation(const std::string& name) {
  const ChatJson all = ChatJson::parse(R"({
    "chat": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
             {"role": "user", "content": "Name a colour."}],
    "system": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}],
    "reasoning": [{"role": "user", "content": "2+2?"},
                  {"role": "assistant", "content": "<think>\nadd them\n</think>\n\n4"},
                  {"role": "user", "content": "and 3+3?"}]
  })");
  return all[name];
}

TEST(FamilyTemplates, RenderAsPythonJinja2WithTheFamilysTokens) {
  std::vector<test::ReferenceCase> cases;
  struct Variant {
    const Family* family;
    std::string conversation;
    bool gen;
    ChatJson extra;
  };
  std::vector<Variant> variants;
  for (const Family& f : kFamilies)
    for (const char* conv : {"chat", "system", "reasoning"})
      for (bool gen : {false, true})
        for (const ChatJson& extra : {ChatJson::object(), ChatJson{{"enable_thinking", false}}}) {
          test::ReferenceCase c;
          c.template_source = test::read_file(test::shared_path(std::string("templates/") + f.file));
          c.now = 1721990400;
          c.context["bos_token"] = f.bos;
          c.context["eos_token"] = f.eos;
          for (auto it = extra.begin(); it != extra.end(); ++it) c.context[it.key()] = it.value();
          c.context["messages"] = conversation(conv);
          c.context["tools"] = nullptr;
          c.context["documents"] = nullptr;
          c.context["add_generation_prompt"] = gen;
          cases.push_back(std::move(c));
          variants.push_back({&f, conv, gen, extra});
        }
  const std::vector<test::ReferenceResult> expected = test::render_with_python(cases);
  int raised = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    SCOPED_TRACE(std::string(v.family->file) + " " + v.conversation + (v.gen ? " +gen" : "") + " " +
                 v.extra.dump());
    const ChatTemplate tmpl(cases[i].template_source);
    ChatTemplateOptions opt;
    opt.add_generation_prompt = v.gen;
    opt.bos_token = v.family->bos;
    opt.eos_token = v.family->eos;
    opt.extra_context = v.extra;
    opt.now_unix = 1721990400;
    const ChatJson messages = conversation(v.conversation);
    if (expected[i].ok) {
      EXPECT_EQ(tmpl.render(messages, opt), expected[i].output);
    } else {
      ASSERT_TRUE(expected[i].raised) << expected[i].error_type << ": " << expected[i].message;
      ++raised;
      try {
        tmpl.render(messages, opt);
        ADD_FAILURE() << "expected raise_exception(" << expected[i].message << ")";
      } catch (const TemplateError& e) {
        EXPECT_EQ(e.message(), expected[i].message);
      }
    }
  }
  // Gemma's template refuses the system role (its 4 system variants), the others render all.
  EXPECT_EQ(raised, 4);
}

TEST(FamilyTemplates, FamilyFeaturesShowInThePrompt) {
  // Spot checks of what the Python comparison above covers, so that a failure names the
  // feature: the markers each family puts around turns.
  ChatTemplateOptions opt;
  opt.add_generation_prompt = true;
  const auto render = [&](const char* file, const std::string& conv, const char* bos, const char* eos) {
    ChatTemplateOptions o = opt;
    o.bos_token = bos;
    o.eos_token = eos;
    return ChatTemplate(test::read_file(test::shared_path(std::string("templates/") + file)))
        .render(conversation(conv), o);
  };
  const std::string gemma = render("google-gemma-2-2b-it.jinja", "chat", "<bos>", "<eos>");
  EXPECT_EQ(gemma.rfind("<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\nHello!", 0), 0u)
      << gemma;
  const std::string phi = render("microsoft-Phi-3.5-mini-instruct.jinja", "chat", "<s>", "<|endoftext|>");
  EXPECT_NE(phi.find("<|user|>\nName a colour.<|end|>\n<|assistant|>\n"), std::string::npos) << phi;
  const std::string qwen = render("Qwen-Qwen3-0.6B.jinja", "reasoning", "", "<|im_end|>");
  EXPECT_EQ(qwen.find("add them"), std::string::npos) << "earlier reasoning is dropped: " << qwen;
  EXPECT_NE(qwen.find("<|im_start|>assistant\n"), std::string::npos);
}

}  // namespace
}  // namespace strata
