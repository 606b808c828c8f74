// `strata perplexity`: perplexity of a model over a text file, llama-perplexity style (windows of
// --ctx tokens starting every --stride tokens, BOS first, second half scored; see
// eval/eval_windows.h). The result goes to stdout (text or --json), progress to stderr.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/log.h"
#include "eval/perplexity.h"
#include "eval/progress_meter.h"
#include "eval/window_runner.h"

namespace strata::cli {
namespace {

struct PerplexityOptions {
  ModelOptions model;
  std::string text_file;
  int64_t ctx = 512;
  int64_t stride = 0;
  int64_t chunks = 0;
  bool json = false;
  KvWindowPolicy kv_window;
  KvEvictOptions kv_evict;
};

void print_result(const eval::PerplexityResult& r, bool json) {
  std::string out;
  if (json) {
    const nlohmann::json j = {{"ppl", r.ppl},
                              {"ppl_stderr", r.ppl_stderr},
                              {"n_tokens", r.n_tokens},
                              {"nll_mean", r.nll_mean},
                              {"nll_stderr", r.nll_stderr},
                              {"top1_accuracy", r.top1_accuracy},
                              {"n_windows", r.n_windows},
                              {"n_ctx", r.n_ctx},
                              {"stride", r.stride},
                              {"n_text_tokens", r.n_text_tokens}};
    out = j.dump() + "\n";
  } else {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "Final estimate: PPL = %.4f +/- %.5f\n"
                  "scored tokens  : %lld of %lld (%lld windows of %lld, stride %lld)\n"
                  "mean NLL       : %.5f +/- %.5f nats/token\n"
                  "top-1 accuracy : %.2f %%\n",
                  r.ppl, r.ppl_stderr, static_cast<long long>(r.n_tokens),
                  static_cast<long long>(r.n_text_tokens), static_cast<long long>(r.n_windows),
                  static_cast<long long>(r.n_ctx), static_cast<long long>(r.stride), r.nll_mean, r.nll_stderr,
                  r.top1_accuracy);
    out = buf;
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

void run(const PerplexityOptions& o) {
  const KvCacheType kv_type = o.model.kv.resolve();
  const KvEvictPolicy kv_evict = o.kv_evict.resolve();
  const std::string text = read_text_file(o.text_file);
  LoadedModel lm = load_model(o.model);
  Model& model = *lm.model;
  const std::vector<int32_t> tokens = eval::tokenize_eval_text(model.tokenizer(), text);
  // With a KV window the text is one stream (that is what the window is for), scored after the
  // warm-up a chunked run at --ctx (sinks + window) skips.
  const bool stream = o.kv_window.enabled();
  if (stream) o.kv_window.validate(16);
  const eval::WindowPlan plan =
      stream ? eval::plan_stream(static_cast<int64_t>(tokens.size()),
                                 (o.kv_window.sinks + o.kv_window.window) / 2)
             : eval::plan_windows(static_cast<int64_t>(tokens.size()), {o.ctx, o.stride, o.chunks});
  if (!stream && plan.n_ctx > model.config().n_ctx_train)
    log_warn("--ctx ", plan.n_ctx, " exceeds the model's training context of ", model.config().n_ctx_train);
  log_info("perplexity: ", tokens.size(), " tokens, ", plan.windows.size(), " windows of ", plan.n_ctx,
           ", stride ", plan.stride, ", ", plan.n_scored(), " tokens scored");
  eval::ProgressMeter meter(eval::stderr_is_terminal(), "perplexity");
  const eval::PerplexityResult r = eval::evaluate_perplexity(
      model, tokens, plan, kv_type, [&](const eval::EvalProgress& p) { meter.update(p); }, o.kv_window,
      kv_evict);
  meter.finish();
  print_result(r, o.json);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<PerplexityOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  cmd.add_option("-f,--file", o->text_file, "Text file to evaluate")->required();
  cmd.add_option("-c,--ctx", o->ctx, "Tokens per window (default 512)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 24));
  cmd.add_option("--stride", o->stride,
                 "Window start step (default: --ctx, non-overlapping). Each window scores its last "
                 "min(stride, ctx - 1 - ctx/2) predictions")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  cmd.add_option("--chunks", o->chunks, "Evaluate at most this many windows (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  add_kv_options(cmd, o->model.kv);
  add_kv_window_options(cmd, o->kv_window);
  add_kv_evict_options(cmd, o->kv_evict);
  cmd.add_flag("--json", o->json, "Print one JSON object {ppl, ppl_stderr, n_tokens, ...}");
  cmd.callback([o] { run(*o); });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "perplexity", setup, "Perplexity of a model over a text file");

}  // namespace strata::cli
