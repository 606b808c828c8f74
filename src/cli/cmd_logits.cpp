// `strata logits`: the logits at every position of a prompt, as JSON on stdout.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "engine/offline.h"

namespace strata::cli {
namespace {

struct LogitsOptions {
  ModelOptions model;
  std::string prompt;
  std::string tokens;
};

std::vector<int32_t> parse_id_list(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b == std::string::npos) STRATA_THROW("empty token id in '", text, "'");
    const std::string s = item.substr(b, e - b + 1);
    int32_t v = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) STRATA_THROW("invalid token id '", s, "'");
    ids.push_back(v);
  }
  return ids;
}

void append_float(std::string& out, float v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ptr);
}

void run(const LogitsOptions& o, bool from_prompt) {
  LoadedModel lm = load_model(o.model);
  Model& model = *lm.model;
  const std::vector<int32_t> ids =
      from_prompt ? model.tokenizer().encode(o.prompt, /*add_special=*/true, /*parse_special=*/false)
                  : parse_id_list(o.tokens);
  if (ids.empty()) STRATA_THROW("no tokens to evaluate");
  const std::vector<float> logits = offline::all_logits(model, ids);
  const size_t n_vocab = static_cast<size_t>(model.config().n_vocab);
  std::string out = "{\"tokens\":[";
  for (size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  out += "],\"logits\":[";
  for (size_t t = 0; t < ids.size(); ++t) {
    out += t ? ",[" : "[";
    for (size_t j = 0; j < n_vocab; ++j) {
      if (j) out += ',';
      append_float(out, logits[t * n_vocab + j]);
    }
    out += ']';
  }
  out += "]}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<LogitsOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  auto* p = cmd.add_option("-p,--prompt", o->prompt, "Prompt text (BOS added when the model says so)");
  auto* t = cmd.add_option("--tokens", o->tokens, "Comma-separated token ids, used as given");
  p->excludes(t);
  cmd.callback([o, p, t] {
    if (p->count() == 0 && t->count() == 0) STRATA_THROW("give -p TEXT or --tokens 1,2,3");
    run(*o, p->count() > 0);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "logits", setup, "Print the logits of every prompt position as JSON");

}  // namespace strata::cli
