// `strata run`: generate a continuation of a prompt, streamed to stdout; speeds on stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/log.h"
#include "engine/session.h"
#include "sampling/sampler.h"

namespace strata::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  int64_t ctx = 0;
  bool ignore_eos = false;
  SamplingParams sampling;
  uint64_t seed = 0;
  bool seed_set = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run(RunOptions& o) {
  if (!o.prompt_file.empty()) o.prompt = read_text_file(o.prompt_file);
  if (o.seed_set) o.sampling.seed = o.seed;
  LoadedModel lm = load_model(o.model);
  Model& model = *lm.model;
  const Tokenizer& tok = model.tokenizer();
  o.sampling.validate(static_cast<int32_t>(model.config().n_vocab));

  std::vector<int32_t> prompt = tok.encode(o.prompt, /*add_special=*/true, /*parse_special=*/false);
  if (prompt.empty()) {
    if (tok.bos() < 0) STRATA_THROW("empty prompt and the model has no BOS token");
    prompt.push_back(tok.bos());
  }
  const int64_t n_ctx = o.ctx > 0 ? o.ctx : model.config().n_ctx_train;
  if (static_cast<int64_t>(prompt.size()) >= n_ctx)
    STRATA_THROW("prompt is ", prompt.size(), " tokens, longer than the context of ", n_ctx);
  const int64_t n_gen = std::min<int64_t>(o.n_predict, n_ctx - static_cast<int64_t>(prompt.size()));
  if (n_gen < o.n_predict) log_warn("generation limited to ", n_gen, " tokens by the context size ", n_ctx);

  Session session(model, n_ctx, o.model.kv.resolve());
  Sampler sampler(o.sampling, static_cast<int32_t>(model.config().n_vocab));
  sampler.set_prompt(prompt);
  const bool after_bos = prompt.size() == 1 && prompt[0] == tok.bos();
  StreamingDetokenizer detok(tok, after_bos);

  auto t0 = std::chrono::steady_clock::now();
  const std::vector<float>* logits = &session.eval(prompt);
  const double prompt_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  int64_t generated = 0;
  while (generated < n_gen) {
    const int32_t next = sampler.sample(logits->data());
    ++generated;
    if (!o.ignore_eos && tok.is_eog(next)) break;
    sampler.accept(next);
    const std::string text = detok.push(next);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (generated == n_gen) break;
    logits = &session.eval({next});
  }
  const std::string rest = detok.finish();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  const double gen_s = seconds_since(t0);
  log_info("prompt: ", prompt.size(), " tokens in ", prompt_s * 1e3, " ms (",
           static_cast<double>(prompt.size()) / prompt_s, " tokens/s)");
  log_info("generation: ", generated, " tokens in ", gen_s * 1e3, " ms (", static_cast<double>(generated) / gen_s,
           " tokens/s)");
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<RunOptions>();
  add_model_options(cmd, o->model);
  add_kv_options(cmd, o->model.kv);
  auto* p = cmd.add_option("-p,--prompt", o->prompt, "Prompt text ('' = BOS only)");
  auto* f = cmd.add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  p->excludes(f);
  cmd.add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->check(CLI::Range(0, 1 << 24));
  cmd.add_option("-c,--ctx", o->ctx, "Context size (default: the model's training context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd.add_option("--temp", o->sampling.temperature, "Temperature (0 = greedy)");
  cmd.add_option("--top-k", o->sampling.top_k, "Top-k (0 = off)");
  cmd.add_option("--top-p", o->sampling.top_p, "Top-p (1 = off)");
  cmd.add_option("--min-p", o->sampling.min_p, "Min-p (0 = off)");
  cmd.add_option("--repeat-penalty", o->sampling.repetition_penalty, "Repetition penalty (1 = off)");
  cmd.add_option("--frequency-penalty", o->sampling.frequency_penalty, "Frequency penalty");
  cmd.add_option("--presence-penalty", o->sampling.presence_penalty, "Presence penalty");
  cmd.add_option("--seed", o->seed, "Random seed (same seed, same output)")->each([o](const std::string&) {
    o->seed_set = true;
  });
  cmd.add_flag("--ignore-eos", o->ignore_eos, "Keep generating after end-of-generation tokens");
  cmd.callback([o, p, f] {
    if (p->count() == 0 && f->count() == 0) STRATA_THROW("a prompt is required: -p TEXT or -f FILE");
    run(*o);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "run", setup, "Generate text from a prompt");
}  // namespace strata::cli
