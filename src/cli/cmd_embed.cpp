// `strata embed`: embeddings of prompts through the engine (llama.cpp's llama-embedding), one line
// per input on stdout, its values separated by spaces. Every input is one engine embedding
// request, all batched together.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "engine/embedding.h"
#include "engine/engine.h"

namespace strata::cli {
namespace {

struct EmbedOptions {
  ModelOptions model;
  std::vector<std::string> prompts;  // -p, repeatable
  std::string file;                  // -f: one input per line
  std::string pooling;               // empty: the model's, else mean
  int32_t embd_normalize = 2;
};

std::vector<std::string> inputs_of(const EmbedOptions& o) {
  std::vector<std::string> inputs = o.prompts;
  if (!o.file.empty()) {
    std::ifstream in(o.file);
    if (!in) STRATA_THROW(o.file, ": cannot open");
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) inputs.push_back(line);
  }
  if (inputs.empty()) STRATA_THROW("nothing to embed: give -p TEXT or -f FILE");
  return inputs;
}

void run(const EmbedOptions& o) {
  const std::vector<std::string> inputs = inputs_of(o);
  LoadedModel lm = load_model(o.model);
  Model& model = *lm.model;
  const Pooling pooling = resolve_pooling(o.pooling.empty() ? Pooling::None : parse_pooling(o.pooling),
                                          model.file().metadata(), model.config().arch);
  EngineConfig cfg;
  int64_t longest = 0;
  std::vector<std::vector<int32_t>> tokens;
  for (const std::string& text : inputs) {
    tokens.push_back(model.tokenizer().encode(text, /*add_special=*/true, /*parse_special=*/true));
    longest = std::max<int64_t>(longest, static_cast<int64_t>(tokens.back().size()));
  }
  cfg.kv_cache_tokens = std::max<int64_t>(longest, 4 * int64_t{cfg.max_batched_tokens});
  std::vector<std::vector<float>> out(inputs.size());  // outlive the engine and its callbacks
  std::vector<std::string> errors(inputs.size());
  Engine engine(model, cfg);
  for (size_t i = 0; i < inputs.size(); ++i) {
    RequestParams p;
    p.prompt = tokens[i];
    p.pooling = pooling;
    p.stop.max_tokens = 0;
    engine.submit(std::move(p), [&, i](const EngineEvent& ev) {
      if (ev.finish == FinishReason::Error || ev.finish == FinishReason::Abort) errors[i] = ev.error;
      if (ev.request_done) out[i] = ev.embedding;
    });
  }
  engine.run_until_idle();
  std::string text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!errors[i].empty() || out[i].empty())
      STRATA_THROW("input ", i, ": ", errors[i].empty() ? "failed" : errors[i]);
    normalize_embedding(out[i], o.embd_normalize);
    for (size_t k = 0; k < out[i].size(); ++k) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, out[i][k]);
      if (k) text += ' ';
      text.append(buf, r.ptr);
    }
    text += '\n';
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<EmbedOptions>();
  add_model_options(cmd, o->model);
  cmd.add_option("-p,--prompt", o->prompts, "Text to embed (repeatable)");
  cmd.add_option("-f,--file", o->file, "File with one text to embed per line");
  cmd.add_option("--pooling", o->pooling, "mean, cls or last (default: the GGUF's pooling_type, else mean)")
      ->check(CLI::IsMember({"mean", "cls", "last"}));
  cmd.add_option("--embd-normalize", o->embd_normalize,
                 "-1 none, 0 max-abs to int16 range, 1 taxicab, 2 Euclidean, >2 p-norm")
      ->check(CLI::Range(-1, 1 << 20))
      ->capture_default_str();
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "embed", setup, "Embeddings of prompts (pooled final hidden states)");

}  // namespace strata::cli
