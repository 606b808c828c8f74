// `strata template`: renders a chat template for a conversation and prints the prompt.
//
//   strata template (--template FILE | -m MODEL) --messages FILE.json [--add-generation-prompt]
//                   [--tools FILE.json] [--bos-token S] [--eos-token S] [--var NAME=JSON]...
//
// The template comes from --template, else from the model's tokenizer.chat_template (ChatML
// when it has none). BOS/EOS default to the model's tokens. The messages file holds the
// OpenAI-style array, or a request object with "messages" (and "tools").
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "core/check.h"
#include "formats/model_file.h"
#include "template/chat_template.h"

namespace strata::cli {
namespace {

struct TemplateCmdOptions {
  std::string template_file;
  std::string model;
  std::string tokenizer;
  std::string messages_file;
  std::string tools_file;
  bool add_generation_prompt = false;
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  std::vector<std::string> vars;
  std::optional<int64_t> now;
  bool keep_content_parts = false;
};

std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) STRATA_THROW("cannot open ", what, " file '", path, "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatJson parse_json(const std::string& text, const std::string& where) {
  ChatJson j = ChatJson::parse(text, nullptr, false);
  if (j.is_discarded()) STRATA_THROW(where, " is not valid JSON");
  return j;
}

// The text of the token whose id is stored under `id_key`, if any.
std::optional<std::string> token_text(const Metadata& md, const char* id_key) {
  const auto id = md.get_int(id_key);
  const GgufArray* tokens = md.get_array("tokenizer.ggml.tokens");
  if (!id || !tokens || *id < 0 || static_cast<size_t>(*id) >= tokens->strings.size()) return std::nullopt;
  return tokens->strings[static_cast<size_t>(*id)];
}

void run(const TemplateCmdOptions& o) {
  if (o.template_file.empty() && o.model.empty()) STRATA_THROW("give --template FILE or -m MODEL");
  ChatTemplateOptions opt;
  std::optional<std::string> model_template;
  if (!o.model.empty()) {
    const auto file = open_model_file(o.model, o.tokenizer);
    const Metadata& md = file->metadata();
    model_template = md.get_string("tokenizer.chat_template");
    opt.bos_token = token_text(md, "tokenizer.ggml.bos_token_id").value_or("");
    opt.eos_token = token_text(md, "tokenizer.ggml.eos_token_id").value_or("");
  }
  const ChatTemplate tmpl = o.template_file.empty()
                                ? make_chat_template(model_template, o.model)
                                : ChatTemplate(read_text_file(o.template_file, "template"));
  if (o.bos_token) opt.bos_token = *o.bos_token;
  if (o.eos_token) opt.eos_token = *o.eos_token;
  opt.add_generation_prompt = o.add_generation_prompt;
  opt.now_unix = o.now;
  if (o.keep_content_parts) opt.content_parts = ChatTemplateOptions::ContentParts::Keep;

  ChatJson messages = parse_json(read_text_file(o.messages_file, "messages"), o.messages_file);
  if (messages.is_object()) {
    if (messages.contains("tools")) opt.tools = messages["tools"];
    if (!messages.contains("messages"))
      STRATA_THROW(o.messages_file, ": object without a \"messages\" array");
    messages = ChatJson(messages["messages"]);
  }
  if (!o.tools_file.empty()) opt.tools = parse_json(read_text_file(o.tools_file, "tools"), o.tools_file);
  for (const std::string& var : o.vars) {
    const size_t eq = var.find('=');
    if (eq == std::string::npos || eq == 0) STRATA_THROW("--var expects NAME=JSON, got '", var, "'");
    opt.extra_context[var.substr(0, eq)] = parse_json(var.substr(eq + 1), "--var " + var.substr(0, eq));
  }
  const std::string prompt = tmpl.render(messages, opt);
  std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  std::fflush(stdout);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<TemplateCmdOptions>();
  cmd.add_option("--template", o->template_file, "Jinja chat template file");
  cmd.add_option(
      "-m,--model", o->model,
      "Model whose tokenizer.chat_template (and BOS/EOS tokens) to use: GGUF, llama2.c .bin or HF directory");
  cmd.add_option("--tokenizer", o->tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  cmd.add_option("--messages", o->messages_file,
                 "JSON file: the messages array, or an object with \"messages\"")
      ->required();
  cmd.add_flag("--add-generation-prompt", o->add_generation_prompt, "End with the assistant turn's opening");
  cmd.add_option("--tools", o->tools_file, "JSON file with the array of tool definitions");
  cmd.add_option("--bos-token", o->bos_token, "BOS token text (default: the model's)");
  cmd.add_option("--eos-token", o->eos_token, "EOS token text (default: the model's)");
  cmd.add_option("--var", o->vars,
                 "Extra template variable NAME=JSON, e.g. enable_thinking=false (repeatable)");
  cmd.add_option("--now", o->now,
                 "strftime_now's time as Unix seconds, rendered in UTC (default: local time now)");
  cmd.add_flag("--keep-content-parts", o->keep_content_parts,
               "Pass content part arrays to the template as they are (default: join their text)");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "template", setup,
                        "Render a chat template for a conversation (prints the prompt)");

}  // namespace strata::cli
