// `strata kld`: KL divergence (base ‖ model), top-1 agreement and the perplexity of both over a
// text file. The base is a model (--base) run alongside, or a base run saved earlier
// (--save-base FILE, then --base-logits FILE; format in eval/base_logits_file.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/log.h"
#include "eval/base_logits_file.h"
#include "eval/kld.h"
#include "eval/progress_meter.h"
#include "eval/vocab_fingerprint.h"
#include "eval/window_runner.h"

namespace strata::cli {
namespace {

struct KldOptions {
  ModelOptions model;  // -m: the model under test
  std::string base;
  std::string base_tokenizer;
  std::string text_file;
  std::string save_base;
  std::string base_logits;
  int64_t ctx = 512;
  int64_t stride = 0;
  int64_t chunks = 0;
  std::string base_kv_type = "f16";
  bool json = false;
  KvWindowPolicy kv_window;  // of the judged model
  KvEvictOptions kv_evict;   // of the judged model
  // Which of the window options were given on the command line.
  bool ctx_set = false, stride_set = false, chunks_set = false;
};

std::unique_ptr<Model> load_one(const std::string& path, const std::string& tokenizer, Backend& backend) {
  ModelLoadOptions mo;
  mo.tokenizer_path = tokenizer;
  std::unique_ptr<Model> m = Model::load(path, backend, mo);
  log_info("loaded ", path, ": ", m->config().summary());
  return m;
}

nlohmann::json result_json(const eval::KldResult& r, bool with_model) {
  nlohmann::json j = {{"n_tokens", r.n_tokens}, {"n_windows", r.n_windows},
                      {"n_ctx", r.n_ctx},       {"stride", r.stride},
                      {"ppl_base", r.ppl_base}, {"ppl_base_stderr", r.ppl_base_stderr}};
  if (!with_model) return j;
  j.update({{"kld_mean", r.kld_mean},
            {"kld_stderr", r.kld_stderr},
            {"kld_min", r.kld_min},
            {"kld_median", r.kld_median},
            {"kld_p90", r.kld_p90},
            {"kld_p95", r.kld_p95},
            {"kld_p99", r.kld_p99},
            {"kld_max", r.kld_max},
            {"top1_agreement", r.top1_agreement},
            {"top1_agreement_stderr", r.top1_agreement_stderr},
            {"ppl_model", r.ppl_model},
            {"ppl_model_stderr", r.ppl_model_stderr},
            {"delta_ppl", r.delta_ppl},
            {"delta_ppl_stderr", r.delta_ppl_stderr},
            {"ln_ppl_ratio", r.ln_ppl_ratio},
            {"ln_ppl_ratio_stderr", r.ln_ppl_ratio_stderr}});
  return j;
}

std::string result_text(const eval::KldResult& r, bool with_model) {
  char buf[1536];
  const long long n = r.n_tokens, w = r.n_windows, c = r.n_ctx, s = r.stride;
  if (!with_model) {
    std::snprintf(
        buf, sizeof buf,
        "base run over %lld tokens (%lld windows of %lld, stride %lld)\nPPL base        : %.4f ± %.5f\n", n,
        w, c, s, r.ppl_base, r.ppl_base_stderr);
    return buf;
  }
  std::snprintf(buf, sizeof buf,
                "KL divergence (base ‖ model) over %lld tokens (%lld windows of %lld, stride %lld)\n"
                "mean KLD        : %.6f ± %.6f\n"
                "median KLD      : %.6f\n"
                "p90 / p95 / p99 : %.6f / %.6f / %.6f\n"
                "min / max KLD   : %.6f / %.6f\n"
                "top-1 agreement : %.3f ± %.3f %%\n"
                "PPL base        : %.4f ± %.5f\n"
                "PPL model       : %.4f ± %.5f\n"
                "ΔPPL            : %.5f ± %.5f (model - base)\n"
                "ln(PPL ratio)   : %.6f ± %.6f\n",
                n, w, c, s, r.kld_mean, r.kld_stderr, r.kld_median, r.kld_p90, r.kld_p95, r.kld_p99,
                r.kld_min, r.kld_max, r.top1_agreement, r.top1_agreement_stderr, r.ppl_base,
                r.ppl_base_stderr, r.ppl_model, r.ppl_model_stderr, r.delta_ppl, r.delta_ppl_stderr,
                r.ln_ppl_ratio, r.ln_ppl_ratio_stderr);
  return buf;
}

void print_result(const eval::KldResult& r, bool with_model, bool json) {
  const std::string out = json ? result_json(r, with_model).dump() + "\n" : result_text(r, with_model);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

void check_options(const KldOptions& o) {
  o.model.kv.resolve();
  parse_kv_type(o.base_kv_type);
  if (o.base.empty() == o.base_logits.empty())
    STRATA_THROW("give exactly one of --base MODEL or --base-logits FILE");
  if (!o.base_logits.empty() && parse_kv_type(o.base_kv_type) != KvType::F16)
    STRATA_THROW("--base-kv-type applies to a live --base run only");
  if (!o.base_logits.empty() && !o.save_base.empty())
    STRATA_THROW("--save-base needs --base (a saved base run is already saved)");
  if (o.model.model.empty() && o.save_base.empty())
    STRATA_THROW("give the model to judge with -m MODEL (or only save the base run with --save-base FILE)");
  if (!o.base.empty() && o.text_file.empty()) STRATA_THROW("give the text with -f FILE");
}

// A saved run fixes the text and the windows: options given anyway must agree with it.
void check_saved_run(const KldOptions& o, const eval::BaseLogitsReader& reader, const Model& model) {
  const eval::BaseLogitsHeader& h = reader.header();
  if (o.ctx_set && o.ctx != h.n_ctx)
    STRATA_THROW("--ctx ", o.ctx, " differs from the saved base run's ", h.n_ctx);
  if (o.stride_set && o.stride != h.stride)
    STRATA_THROW("--stride ", o.stride, " differs from the saved base run's ", h.stride);
  if (o.chunks_set && o.chunks != 0 && o.chunks != h.n_windows)
    STRATA_THROW("--chunks ", o.chunks, " differs from the saved base run's ", h.n_windows, " windows");
  const Tokenizer& tok = model.tokenizer();
  if (tok.n_vocab() != h.n_vocab || eval::vocab_fingerprint(tok) != h.vocab_fingerprint)
    STRATA_THROW("the model's vocabulary differs from the saved base run's");
  if (eval::window_bos(tok) != h.bos) STRATA_THROW("the model's BOS token differs from the saved base run's");
  if (!o.text_file.empty() && eval::tokenize_eval_text(tok, read_text_file(o.text_file)) != h.tokens)
    STRATA_THROW(o.text_file, " is not the text the saved base run was computed on");
}

void run_saved(const KldOptions& o, Backend& backend) {
  const eval::BaseLogitsReader reader(o.base_logits);
  std::unique_ptr<Model> model = load_model_on(o.model, backend, {});
  log_info("loaded ", o.model.model, ": ", model->config().summary());
  check_saved_run(o, reader, *model);
  eval::FileBaseSource source(reader);
  eval::WindowRunner runner(*model, reader.plan().n_ctx, o.model.kv.resolve(), o.kv_window,
                            o.kv_evict.resolve());
  eval::ProgressMeter meter(eval::stderr_is_terminal(), "kld");
  const eval::KldResult r =
      eval::evaluate_kld(source, &runner, reader.header().tokens, reader.plan(), reader.header().bos, nullptr,
                         [&](const eval::EvalProgress& p) { meter.update(p); });
  meter.finish();
  print_result(r, true, o.json);
}

void run_live(const KldOptions& o, Backend& backend) {
  const std::string text = read_text_file(o.text_file);
  std::unique_ptr<Model> base = load_one(o.base, o.base_tokenizer, backend);
  std::unique_ptr<Model> model;
  if (!o.model.model.empty()) {
    model = load_model_on(o.model, backend, {});
    log_info("loaded ", o.model.model, ": ", model->config().summary());
    eval::check_same_vocab(base->tokenizer(), model->tokenizer());
  }
  const Tokenizer& tok = base->tokenizer();
  const std::vector<int32_t> tokens = eval::tokenize_eval_text(tok, text);
  const eval::WindowPlan plan =
      eval::plan_windows(static_cast<int64_t>(tokens.size()), {o.ctx, o.stride, o.chunks});
  if (plan.n_ctx > base->config().n_ctx_train)
    log_warn("--ctx ", plan.n_ctx, " exceeds the base model's training context of ",
             base->config().n_ctx_train);
  log_info("kld: ", tokens.size(), " tokens, ", plan.windows.size(), " windows of ", plan.n_ctx, ", stride ",
           plan.stride, ", ", plan.n_scored(), " tokens scored");
  std::unique_ptr<eval::BaseLogitsWriter> writer;
  if (!o.save_base.empty()) {
    eval::BaseLogitsHeader h;
    h.n_vocab = tok.n_vocab();
    h.n_ctx = plan.n_ctx;
    h.stride = plan.stride;
    h.n_windows = static_cast<int64_t>(plan.windows.size());
    h.vocab_fingerprint = eval::vocab_fingerprint(tok);
    h.bos = eval::window_bos(tok);
    h.tokens = tokens;
    writer = std::make_unique<eval::BaseLogitsWriter>(o.save_base, h);
  }
  const KvType base_kv = parse_kv_type(o.base_kv_type);
  eval::ModelBaseSource source(*base, plan.n_ctx, KvCacheType{base_kv, base_kv, true});
  std::unique_ptr<eval::WindowRunner> runner;
  if (model)
    runner = std::make_unique<eval::WindowRunner>(*model, plan.n_ctx, o.model.kv.resolve(), o.kv_window,
                                                  o.kv_evict.resolve());
  eval::ProgressMeter meter(eval::stderr_is_terminal(), "kld");
  const eval::KldResult r =
      eval::evaluate_kld(source, runner.get(), tokens, plan, eval::window_bos(tok), writer.get(),
                         [&](const eval::EvalProgress& p) { meter.update(p); });
  meter.finish();
  if (writer) {
    writer->finish();
    log_info("saved the base run to ", o.save_base);
  }
  print_result(r, model != nullptr, o.json);
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<KldOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  cmd.get_option("--model")->required(false)->description("Model to judge against the base");
  cmd.add_option("--base", o->base, "Base model (the reference distribution), e.g. the F32/F16 original");
  cmd.add_option("--base-tokenizer", o->base_tokenizer, "llama2.c tokenizer .bin for a .bin base checkpoint");
  cmd.add_option("-f,--file", o->text_file, "Text file to evaluate");
  cmd.add_option("--save-base", o->save_base, "Also save the base run to FILE for later --base-logits runs");
  cmd.add_option("--base-logits", o->base_logits, "Use a base run saved with --save-base instead of --base");
  cmd.add_option("-c,--ctx", o->ctx, "Tokens per window (default 512)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 24))
      ->each([o](const std::string&) { o->ctx_set = true; });
  cmd.add_option("--stride", o->stride, "Window start step (default: --ctx); see `strata perplexity --help`")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->each([o](const std::string&) { o->stride_set = true; });
  cmd.add_option("--chunks", o->chunks, "Evaluate at most this many windows (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->each([o](const std::string&) { o->chunks_set = true; });
  add_kv_options(cmd, o->model.kv);  // the judged model's cache
  add_kv_window_options(cmd, o->kv_window);
  add_kv_evict_options(cmd, o->kv_evict);
  cmd.add_option("--base-kv-type", o->base_kv_type,
                 "KV cache element type of the base (K and V): f16 (default)");
  cmd.add_flag("--json", o->json,
               "Print one JSON object {kld_mean, kld_stderr, kld_p99, top1_agreement, ...}");
  cmd.callback([o] {
    check_options(*o);
    std::unique_ptr<Backend> backend = make_cpu_backend(o->model.threads);
    if (!o->base_logits.empty())
      run_saved(*o, *backend);
    else
      run_live(*o, *backend);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "kld", setup, "KL divergence of a model from a base model over a text file");

}  // namespace strata::cli
