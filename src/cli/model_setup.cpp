#include "cli/model_setup.h"

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "calib/imatrix_file.h"
#include "calib/smoothquant.h"
#include "core/check.h"
#include "core/log.h"

namespace strata::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o, bool with_threads) {
  cmd.add_option("-m,--model", o.model,
                 "Model: GGUF file, llama2.c .bin checkpoint or Hugging Face directory")
      ->required();
  cmd.add_option("--tokenizer", o.tokenizer, "llama2.c tokenizer .bin (for a .bin checkpoint)");
  if (with_threads)
    cmd.add_option("-t,--threads", o.threads, "Compute threads (0: all cores)")->check(CLI::Range(0, 1024));
}

void add_w8a8_options(CLI::App& cmd, W8A8Options& o) {
  cmd.add_option(
         "--w8a8", o.mode,
         "Load the decoder-layer matrices as W8A8 (int8 weights, per-output-channel scales, int8 "
         "activations; Strata-only, made at load from F32/F16/BF16/Q8_0): dynamic (per-token activation "
         "scales) or static (per-tensor scales from --w8a8-stats)")
      ->check(CLI::IsMember({"dynamic", "static"}));
  cmd.add_option("--w8a8-stats", o.stats,
                 "Calibration statistics from `strata calibrate` (per-column max |x|) for --w8a8 static and "
                 "--smoothquant");
  cmd.add_flag(
      "--smoothquant", o.smooth,
      "With --w8a8: SmoothQuant, migrate activation outliers into the weights (folded into attn_norm "
      "-> q,k,v and ffn_norm -> gate,up)");
  cmd.add_option("--smooth-alpha", o.alpha, "SmoothQuant migration strength (default 0.5)")
      ->check(CLI::Range(0.0, 1.0));
}

std::unique_ptr<Model> load_model_on(const ModelOptions& o, Backend& backend, ModelLoadOptions mo) {
  mo.tokenizer_path = o.tokenizer;
  const W8A8Options& q = o.w8a8;
  if (q.mode.empty()) {
    if (q.smooth || !q.stats.empty()) STRATA_THROW("--smoothquant and --w8a8-stats need --w8a8");
    return Model::load(o.model, backend, mo);
  }
  const bool is_static = q.mode == "static";
  if ((is_static || q.smooth) && q.stats.empty())
    STRATA_THROW("--w8a8 static and --smoothquant need --w8a8-stats FILE (from `strata calibrate`)");
  auto plan = std::make_shared<W8A8Plan>();
  plan->static_act = is_static;
  std::unique_ptr<ModelFile> file = open_model_file(o.model, o.tokenizer);
  if (!q.stats.empty()) {
    const calib::CalibrationFile stats = calib::read_calibration_file(q.stats);
    calib::W8A8Calibration c = calib::calibrate_w8a8(std::move(file), stats.stats,
                                                     q.smooth ? std::optional<float>(q.alpha) : std::nullopt);
    for (const std::string& line : c.log) log_info("smoothquant: ", line);
    file = std::move(c.file);
    plan->act_absmax = std::move(c.act_absmax);
  }
  log_info("w8a8: decoder-layer matrices as W8A8, ", q.mode, " activation scales",
           q.smooth ? ", SmoothQuant alpha " + std::to_string(q.alpha) : std::string());
  mo.w8a8 = std::move(plan);
  return Model::load(std::move(file), backend, mo);
}

void add_kv_options(CLI::App& cmd, KvOptions& o) {
  const std::string types = " (" + kv_type_names() + ")";
  cmd.add_option("--kv-type", o.both, "KV cache element type of K and V, default f16" + types);
  // -ctk / -ctv (llama.cpp's spellings) are expanded to these names in main.cpp.
  cmd.add_option("--cache-type-k", o.k, "(-ctk) KV cache element type of K (overrides --kv-type)" + types);
  cmd.add_option("--cache-type-v", o.v, "(-ctv) KV cache element type of V (overrides --kv-type)" + types);
  cmd.add_flag("--no-kv-rotation", o.no_rotation,
               "Store quantized K without the Hadamard rotation of K and Q (on by default for the per-token "
               "quantized K types q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl; KIVI K is never rotated)");
}

void add_kv_window_options(CLI::App& cmd, KvWindowPolicy& p) {
  cmd.add_option(
      "--kv-window", p.window,
      "Keep only the last W tokens of each sequence in the KV cache (plus --kv-sinks): every query "
      "attends to exactly those, blocks in between are freed, so sequences can outgrow the context "
      "(0: off, the default; at least one KV block)");
  cmd.add_option(
      "--kv-sinks", p.sinks,
      "With --kv-window: also keep the first N tokens (StreamingLLM's attention sinks), seen at their "
      "position within the cache (default 0: a plain sliding window)");
}

void add_kv_evict_options(CLI::App& cmd, KvEvictOptions& o) {
  cmd.add_option("--kv-evict", o.method,
                 "KV eviction of long prompts: none (the default); snapkv: after the prefill, each layer and "
                 "KV head keeps the --kv-budget prompt tokens the last --kv-evict-window prompt queries "
                 "attend to most, and the window; h2o: the --kv-budget tokens with the most attention "
                 "accumulated over all queries (heavy hitters) and the --kv-evict-window most recent, "
                 "again every KV block during generation; recent: the last --kv-budget + "
                 "--kv-evict-window prompt tokens (no scores). The other blocks are freed");
  cmd.add_option("--kv-budget", o.policy.budget,
                 "With --kv-evict: tokens kept per sequence besides the window (prompts of at most "
                 "budget + window tokens are left whole)");
  cmd.add_option("--kv-evict-window", o.policy.window,
                 "With --kv-evict: the last tokens, always kept (snapkv: the observation window whose "
                 "queries score the others; h2o: the recent tokens) (default 32)");
  cmd.add_option("--kv-evict-pool", o.pool,
                 "With --kv-evict snapkv: max-pool kernel over the scores, odd (default 7; 1: none)");
}

KvEvictPolicy KvEvictOptions::resolve() const {
  KvEvictPolicy p = policy;
  if (method == "none") {
    if (p.budget != 0) STRATA_THROW("--kv-budget needs --kv-evict snapkv, h2o or recent");
    if (pool) STRATA_THROW("--kv-evict-pool needs --kv-evict snapkv");
    return {};
  }
  if (method == "snapkv")
    p.method = KvEvictMethod::SnapKv;
  else if (method == "h2o")
    p.method = KvEvictMethod::H2O;
  else if (method == "recent")
    p.method = KvEvictMethod::Recent;
  else
    STRATA_THROW("unknown --kv-evict method '", method, "' (use none, snapkv, h2o or recent)");
  if (p.budget < 1) STRATA_THROW("--kv-evict ", method, " needs --kv-budget N (N >= 1 tokens)");
  if (pool && p.method != KvEvictMethod::SnapKv)
    STRATA_THROW("--kv-evict-pool applies to --kv-evict snapkv only, not ", method);
  if (pool) p.pool = *pool;
  p.validate();
  return p;
}

KvType parse_kv_type(const std::string& name) {
  const std::optional<KvType> t = kv_type_from_name(name);
  if (!t) STRATA_THROW("unknown KV cache type '", name, "' (use one of ", kv_type_names(), ")");
  return *t;
}

KvCacheType KvOptions::resolve() const {
  KvCacheType t;
  t.k = parse_kv_type(k.empty() ? both : k);
  t.v = parse_kv_type(v.empty() ? both : v);
  t.rotate_k = !no_rotation;
  return t;
}

LoadedModel load_model(const ModelOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  LoadedModel lm;
  lm.backend = make_cpu_backend(o.threads);
  lm.model = load_model_on(o, *lm.backend, {});
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log_info("loaded ", o.model, " in ", static_cast<int>(ms), " ms: ", lm.model->config().summary());
  log_info("backend ", lm.backend->name(), ", ", lm.backend->n_threads(), " threads");
  return lm;
}

void add_spec_options(CLI::App& cmd, SpecOptions& o) {
  cmd.add_option(
      "--spec", o.methods,
      "Speculative decoding: ngram, suffix, self:TYPE (the model re-quantized, e.g. self:q4_0), "
      "skip:LAYERS|auto (layer-skipping self-draft), draft:FILE (a draft model); several are tried "
      "in order, e.g. ngram,draft:small.gguf");
  cmd.add_option("--draft-max,--draft,--draft-n", o.draft_max, "Most drafted tokens per step (default 16)")
      ->check(CLI::Range(0, 64));
  cmd.add_option("--draft-min", o.draft_min, "Fewest drafted tokens worth verifying (default 0)")
      ->check(CLI::Range(0, 64));
  cmd.add_option("--draft-p-min", o.draft_p_min,
                 "Model drafters stop when their most likely token is less likely than this (default 0: "
                 "the adaptive draft length, from the acceptance and the measured step and draft costs, "
                 "decides)")
      ->check(CLI::Range(0.0, 1.0));
  cmd.add_flag("--spec-fixed", o.fixed,
               "Always draft --draft-max tokens (default: lengths adapt to acceptance and step cost)");
  cmd.add_option("--spec-calibration-file", o.calibration_file,
                 "Text that skip:auto calibrates on (default: the first prompt)");
}

SpecConfig spec_config(const SpecOptions& o) {
  SpecConfig c;
  if (!o.methods.empty()) c.methods = parse_spec_methods(o.methods);
  c.draft_max = o.draft_max;
  c.draft_min = o.draft_min;
  c.draft_p_min = o.draft_p_min;
  c.adaptive = !o.fixed;
  if (!o.calibration_file.empty()) c.calibration_text = read_text_file(o.calibration_file);
  validate_spec_config(c);
  return c;
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) STRATA_THROW(path, ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) STRATA_THROW(path, ": read error");
  return ss.str();
}

}  // namespace strata::cli
