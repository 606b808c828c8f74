// `strata run`: generate a continuation of a prompt, streamed to stdout; speeds on stderr.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/log.h"
#include "engine/offline.h"

namespace strata::cli {
namespace {

struct RunOptions {
  ModelOptions model;
  SpecOptions spec;
  std::vector<std::string> stop;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  int64_t ctx = 0;
  bool ignore_eos = false;
  SamplingParams sampling;
  uint64_t seed = 0;
  bool seed_set = false;
  KvWindowPolicy kv_window;
  KvEvictOptions kv_evict;
};

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
  // A KV window lets the sequence outgrow the context: only -n limits it.
  const int64_t n_ctx = o.kv_window.enabled()
                            ? static_cast<int64_t>(prompt.size()) + std::max(o.n_predict, 0) + 1
                        : o.ctx > 0 ? o.ctx
                                    : model.config().n_ctx_train;
  if (static_cast<int64_t>(prompt.size()) >= n_ctx)
    STRATA_THROW("prompt is ", prompt.size(), " tokens, longer than the context of ", n_ctx);
  const int64_t n_gen = std::min<int64_t>(o.n_predict, n_ctx - static_cast<int64_t>(prompt.size()));
  if (n_gen < o.n_predict) log_warn("generation limited to ", n_gen, " tokens by the context size ", n_ctx);

  EngineConfig ec = offline::single_stream_config(n_ctx);
  ec.spec = spec_config(o.spec);
  ec.kv_type = o.model.kv.resolve();
  ec.kv_window = o.kv_window;
  ec.kv_evict = o.kv_evict.resolve();
  // KV for what this run can hold, not the whole context (a 128k-context model would not fit).
  ec.kv_cache_tokens =
      std::min<int64_t>(n_ctx, static_cast<int64_t>(prompt.size()) + n_gen + ec.spec.draft_max + 1);
  if (o.kv_window.enabled())
    ec.kv_cache_tokens =
        std::min(ec.kv_cache_tokens, o.kv_window.max_held_tokens(ec.max_batched_tokens, ec.block_size));
  Engine engine(model, ec);
  RequestParams p;
  p.prompt = prompt;
  p.sampling = o.sampling;
  p.stop.max_tokens = static_cast<int32_t>(n_gen);
  if (n_gen == 0) p.prompt_logits_from = static_cast<int64_t>(prompt.size()) - 1;  // just the prompt
  p.stop.ignore_eos = o.ignore_eos;
  p.stop.stop_strings = o.stop;
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<std::chrono::steady_clock::time_point> t_first;
  int64_t n_first = 0;
  const offline::Output out = offline::generate(engine, std::move(p), [&](const EngineEvent& ev) {
    if (!t_first && !ev.tokens.empty())
      t_first = std::chrono::steady_clock::now(), n_first = static_cast<int64_t>(ev.tokens.size());
    std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
    std::fflush(stdout);
  });
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (out.finish == FinishReason::Error) STRATA_THROW("generation failed: ", out.error);
  const auto t_end = std::chrono::steady_clock::now();
  const double prompt_s = std::chrono::duration<double>((t_first ? *t_first : t_end) - t0).count();
  const double gen_s = std::chrono::duration<double>(t_end - (t_first ? *t_first : t_end)).count();
  const int64_t generated = static_cast<int64_t>(out.tokens.size());
  log_info("prompt: ", prompt.size(), " tokens in ", prompt_s * 1e3, " ms (",
           static_cast<double>(prompt.size()) / prompt_s, " tokens/s)");
  log_info("generation: ", generated, " tokens in ", (prompt_s + gen_s) * 1e3,
           " ms; after the first: ", generated - n_first, " tokens in ", gen_s * 1e3, " ms (",
           gen_s > 0 ? static_cast<double>(generated - n_first) / gen_s : 0.0, " tokens/s)");
  if (ec.kv_evict.enabled()) {
    const EngineStats st = engine.stats();
    log_info("KV eviction: ", st.kv_evicted_tokens, " tokens given back");
  }
  if (out.usage.draft_tokens > 0)
    log_info("speculative: ", out.usage.accepted_draft_tokens, " of ", out.usage.draft_tokens,
             " drafted tokens accepted (",
             100.0 * static_cast<double>(out.usage.accepted_draft_tokens) /
                 static_cast<double>(out.usage.draft_tokens),
             "%), mean acceptance length ",
             static_cast<double>(out.usage.accepted_draft_tokens + out.usage.draft_rounds) /
                 static_cast<double>(std::max<int64_t>(1, out.usage.draft_rounds)),
             " tokens per verification step");
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<RunOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  add_kv_options(cmd, o->model.kv);
  add_kv_window_options(cmd, o->kv_window);
  add_kv_evict_options(cmd, o->kv_evict);
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
  cmd.add_option("--stop,-r,--reverse-prompt", o->stop, "Stop at this text (not printed); may be repeated");
  add_spec_options(cmd, o->spec);
  cmd.callback([o, p, f] {
    if (p->count() == 0 && f->count() == 0) STRATA_THROW("a prompt is required: -p TEXT or -f FILE");
    run(*o);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "run", setup, "Generate text from a prompt");
}  // namespace strata::cli
