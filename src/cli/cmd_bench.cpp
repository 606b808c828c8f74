// `strata bench`: prompt-processing (pp) and decode (tg) speed of a model, like llama-bench,
// plus the fraction of the machine's memory bandwidth the decode achieves.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/compute_peak.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "core/memory_bandwidth.h"
#include "core/thread_pool.h"
#include "engine/offline.h"
#include "sampling/rng.h"

namespace strata::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  SpecOptions spec;
  std::string prompt_file;  // decode test: continue this text instead of one random token
  int n_prompt = 512;
  int n_gen = 128;
  int reps = 3;
  bool json = false;
  bool no_bandwidth = false;
  bool profile = false;
  uint64_t seed = 1;
  std::vector<int> parallel;  // batched-decode test: sequences decoding together (empty: off)
};

struct Stat {
  double mean = 0.0, std = 0.0;
};

Stat stats_of(const std::vector<double>& v) {
  Stat s;
  if (v.empty()) return s;
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  if (v.size() > 1) {
    for (double x : v) s.std += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(s.std / static_cast<double>(v.size() - 1));
  }
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The weight type holding most of the model's matrix bytes ("q4_0" for a Q4_0 model).
std::string dominant_type(const ModelFile& f) {
  std::map<std::string, size_t> bytes;
  for (const TensorInfo& t : f.tensors())
    if (t.n_dims >= 2) bytes[std::string(type_name(t.type))] += t.nbytes;
  std::string best;
  size_t most = 0;
  for (const auto& [name, b] : bytes)
    if (b > most) most = b, best = name;
  return best;
}

// The kernel set each weight type of the file runs ("q4_0 interleaved avx2"), by bytes.
std::vector<std::string> kernel_sets(const ModelFile& f) {
  std::map<TensorType, size_t> bytes;
  for (const TensorInfo& t : f.tensors())
    if (t.n_dims >= 2 && cpu::has_type_kernels(t.type)) bytes[t.type] += t.nbytes;
  std::vector<std::pair<size_t, TensorType>> by_size;
  for (const auto& [type, b] : bytes) by_size.push_back({b, type});
  std::sort(by_size.rbegin(), by_size.rend());
  std::vector<std::string> out;
  for (const auto& [b, type] : by_size) out.push_back(cpu::matmul_kernel_description(type));
  return out;
}

// Multiply-adds x 2 per token of the layers' weight matrices (the token embedding is a lookup;
// the output matrix runs for one token of a prefill): the work a prefill token costs there.
double layer_matmul_ops_per_token(const ModelFile& f) {
  double ops = 0.0;
  for (const TensorInfo& t : f.tensors())
    if (t.n_dims == 2 && t.name.rfind("blk.", 0) == 0) ops += 2.0 * static_cast<double>(t.n_elements());
  return ops;
}

// {"<op>": {"seconds", "share"}} for every op category: where the forward time went.
nlohmann::json profile_json(const OpProfile& prof) {
  double total = 0.0;
  for (int op = 0; op < OpProfile::kNumOps; ++op) total += prof.seconds[op];
  nlohmann::json p;
  for (int op = 0; op < OpProfile::kNumOps; ++op)
    p[OpProfile::name(op)] = {{"seconds", prof.seconds[op]},
                              {"share", total > 0 ? prof.seconds[op] / total : 0.0}};
  return p;
}

void print_profile(const std::string& label, const nlohmann::json& profile) {
  std::printf("%s:", label.c_str());
  for (const auto& [op, v] : profile.items())
    std::printf(" %s %.1f%%", op.c_str(), 100.0 * v["share"].get<double>());
  std::printf("\n");
}

std::vector<int32_t> random_tokens(Rng& rng, int64_t n, int64_t n_vocab) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n_vocab));
  return t;
}

// Prefill of n random tokens from an empty cache, one step; returns tokens/s per repetition.
std::vector<double> bench_pp(Engine& engine, int n, int reps, Rng& rng) {
  std::vector<double> tps;
  const int64_t n_vocab = engine.model().config().n_vocab;
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    std::vector<int32_t> tokens = random_tokens(rng, n, n_vocab);
    const auto t0 = std::chrono::steady_clock::now();
    offline::score(engine, tokens, n - 1, [](int64_t, int64_t, const float*) {});
    const double dt = seconds_since(t0);
    if (r >= 0) tps.push_back(n / dt);
  }
  return tps;
}

struct DecodeRun {
  std::vector<double> tps;  // per repetition
  Usage usage;              // summed (speculative counts)
};

// Decode of n tokens (greedy, ignoring EOS) after `prompt` (a random token when empty), timed
// from the first forward pass of the prompt; returns tokens/s per repetition.
DecodeRun bench_tg(Engine& engine, const std::vector<int32_t>& prompt, int n, int reps, Rng& rng) {
  DecodeRun out;
  const int64_t n_vocab = engine.model().config().n_vocab;
  for (int r = -1; r < reps; ++r) {
    RequestParams p;
    p.prompt = prompt.empty() ? random_tokens(rng, 1, n_vocab) : prompt;
    p.sampling.temperature = 0.0f;
    p.stop.max_tokens = r < 0 ? std::min(n, 8) : n;
    p.stop.ignore_eos = true;
    std::optional<std::chrono::steady_clock::time_point> t_first;
    const auto t0 = std::chrono::steady_clock::now();
    const offline::Output o = offline::generate(engine, std::move(p), [&](const EngineEvent& ev) {
      if (!t_first && !ev.tokens.empty()) t_first = std::chrono::steady_clock::now();
    });
    // With a real prompt the prefill is not decode: time from the first token, count the rest.
    const bool from_first = !prompt.empty() && t_first;
    const double dt = seconds_since(from_first ? *t_first : t0);
    const double n_timed = static_cast<double>(o.tokens.size()) - (from_first ? 1.0 : 0.0);
    if (r >= 0) {
      out.tps.push_back(n_timed / dt);
      out.usage.draft_tokens += o.usage.draft_tokens;
      out.usage.accepted_draft_tokens += o.usage.accepted_draft_tokens;
      out.usage.draft_rounds += o.usage.draft_rounds;
    }
  }
  return out;
}

// Batched decode like llama-batched-bench: n_seq requests of n_prompt random tokens each,
// prefilled together, then n_gen decode steps of every sequence. Returns {prefill tokens/s,
// aggregate decode tokens/s}; adds the decode steps' op times to tg_profile.
std::pair<double, double> bench_batched(Model& m, const SpecConfig& spec, const KvCacheType& kv_type,
                                        int n_seq, int n_prompt, int n_gen, Rng& rng, OpProfile& tg_profile) {
  EngineConfig ec;
  ec.kv_type = kv_type;
  ec.max_num_seqs = n_seq;
  ec.max_batched_tokens = std::clamp(n_seq * std::max(n_prompt, 1), 512, 4096);
  ec.kv_cache_tokens = static_cast<int64_t>(n_seq) * (n_prompt + n_gen + 2 + spec.draft_max + 16);
  ec.max_model_len = n_prompt + n_gen + 2;
  ec.prefix_caching = false;
  ec.spec = spec;
  Engine engine(m, ec);
  int64_t emitted = 0;
  std::vector<uint8_t> started(static_cast<size_t>(n_seq), 0);
  int n_started = 0;
  for (int s = 0; s < n_seq; ++s) {
    RequestParams p;
    p.prompt = random_tokens(rng, std::max(n_prompt, 1), m.config().n_vocab);
    p.sampling.temperature = 0.0f;
    p.stop.max_tokens = n_gen + 1;  // the prefill's token, then n_gen decodes
    p.stop.ignore_eos = true;
    engine.submit(std::move(p), [&, s](const EngineEvent& ev) {
      emitted += static_cast<int64_t>(ev.tokens.size());
      if (!ev.tokens.empty() && !started[static_cast<size_t>(s)])
        started[static_cast<size_t>(s)] = 1, ++n_started;
    });
  }
  // Prefill steps until every sequence has its first token, then the decode steps.
  auto t0 = std::chrono::steady_clock::now();
  while (n_started < n_seq && engine.step()) {
  }
  const double pp_tps = static_cast<double>(n_seq) * std::max(n_prompt, 1) / seconds_since(t0);
  const int64_t after_prefill = emitted;
  const OpProfile before = m.profile();
  t0 = std::chrono::steady_clock::now();
  engine.run_until_idle();
  const double dt = seconds_since(t0);
  const double tg_tps = n_gen > 0 ? static_cast<double>(emitted - after_prefill) / dt : 0.0;
  for (int op = 0; op < OpProfile::kNumOps; ++op)
    tg_profile.seconds[op] += m.profile().seconds[op] - before.seconds[op];
  return {pp_tps, tg_tps};
}

// `--parallel B1,B2,...`: the batched tests instead of the single-stream ones.
void run_parallel(const BenchOptions& o, LoadedModel& lm, nlohmann::json& out) {
  Model& m = *lm.model;
  Rng rng(o.seed);
  m.set_profiling(o.profile);
  out["parallel"] = nlohmann::json::array();
  if (!o.json)
    std::printf(
        "| threads | sequences | pp tokens/seq | tg tokens/seq | pp t/s | tg t/s (all sequences) |\n"
        "|---|---|---|---|---|---|\n");
  for (int n_seq : o.parallel) {
    OpProfile prof;
    const SpecConfig spec = spec_config(o.spec);
    bench_batched(m, spec, o.model.kv.resolve(), n_seq, std::min(o.n_prompt, 16), std::min(o.n_gen, 4), rng,
                  prof);  // warm-up
    prof = OpProfile{};
    std::vector<double> pp, tg;
    for (int r = 0; r < o.reps; ++r) {
      const auto [p, t] = bench_batched(m, spec, o.model.kv.resolve(), n_seq, o.n_prompt, o.n_gen, rng, prof);
      pp.push_back(p), tg.push_back(t);
    }
    const Stat sp = stats_of(pp), st = stats_of(tg);
    nlohmann::json row = {{"n_seq", n_seq},
                          {"pp", {{"n_tokens", o.n_prompt}, {"tps_mean", sp.mean}, {"tps_std", sp.std}}},
                          {"tg", {{"n_tokens", o.n_gen}, {"tps_mean", st.mean}, {"tps_std", st.std}}}};
    if (!o.json)
      std::printf("| %d | %d | %d | %d | %.2f ± %.2f | %.2f ± %.2f |\n", lm.backend->n_threads(), n_seq,
                  o.n_prompt, o.n_gen, sp.mean, sp.std, st.mean, st.std);
    if (o.profile) {
      row["tg"]["profile"] = profile_json(prof);
      if (!o.json)
        print_profile("  " + std::to_string(n_seq) + " sequences, decode time by op", row["tg"]["profile"]);
    }
    out["parallel"].push_back(row);
  }
  m.set_profiling(false);
  if (o.json) std::printf("%s\n", out.dump().c_str());
}

void run(const BenchOptions& o) {
  LoadedModel lm = load_model(o.model);
  Model& m = *lm.model;
  nlohmann::json out;
  out["model"] = o.model.model;
  out["type"] = dominant_type(m.file());
  out["threads"] = lm.backend->n_threads();
  out["isa"] = isa_name(isa_level());
  out["cpu"] = cpu_model_name();
  out["cpu_features"] = cpu_description();
  out["kv_type"] = type_name(o.model.kv.resolve());
  out["kernels"] = kernel_sets(m.file());
  out["weight_bytes"] = m.weight_bytes();
  out["reps"] = o.reps;
  if (!o.parallel.empty()) return run_parallel(o, lm, out);
  std::vector<int32_t> prompt;
  if (!o.prompt_file.empty())
    prompt =
        m.tokenizer().encode(read_text_file(o.prompt_file), /*add_special=*/true, /*parse_special=*/false);
  const int64_t n_ctx =
      std::max<int64_t>(std::max<int64_t>(o.n_prompt, static_cast<int64_t>(prompt.size()) + o.n_gen + 1), 2);
  EngineConfig ec = offline::single_stream_config(n_ctx, std::max(512, o.n_prompt));
  ec.spec = spec_config(o.spec);
  ec.kv_cache_tokens = n_ctx + ec.spec.draft_max + 1;
  ec.kv_type = o.model.kv.resolve();
  Engine engine(m, ec);
  Rng rng(o.seed);
  Stat pp, tg;
  // Share of forward time per op category, over all repetitions of a test.
  auto take_profile = [&]() {
    nlohmann::json p = profile_json(m.profile());
    m.reset_profile();
    return p;
  };
  m.set_profiling(o.profile);
  if (o.n_prompt > 0) {
    pp = stats_of(bench_pp(engine, o.n_prompt, o.reps, rng));
    out["pp"] = {{"n_tokens", o.n_prompt}, {"tps_mean", pp.mean}, {"tps_std", pp.std}};
    if (o.profile) out["pp"]["profile"] = take_profile();
  }
  if (o.n_gen > 0) {
    const DecodeRun d = bench_tg(engine, prompt, o.n_gen, o.reps, rng);
    tg = stats_of(d.tps);
    out["tg"] = {{"n_tokens", o.n_gen}, {"tps_mean", tg.mean}, {"tps_std", tg.std}};
    if (d.usage.draft_tokens > 0) {
      // Acceptance rate, and tokens per verification round = 1 + accepted drafts per round.
      const double rate =
          static_cast<double>(d.usage.accepted_draft_tokens) / static_cast<double>(d.usage.draft_tokens);
      const double mean_len = static_cast<double>(d.usage.accepted_draft_tokens + d.usage.draft_rounds) /
                              static_cast<double>(std::max<int64_t>(1, d.usage.draft_rounds));
      const EngineMetrics& em = engine.metrics();
      const double step = em.step_seconds.value();
      out["tg"]["spec"] = {
          {"draft_tokens", d.usage.draft_tokens},
          {"accepted_tokens", d.usage.accepted_draft_tokens},
          {"rounds", d.usage.draft_rounds},
          {"acceptance_rate", rate},
          {"mean_acceptance_length", mean_len},
          // Step time of the whole run (prefill tests included): drafting before
          // the forward pass, the target's forward pass, and the rest (verification).
          {"time_share",
           {{"draft", em.draft_seconds.value() / step},
            {"target_forward", em.forward_seconds.value() / step},
            {"verify_and_emit", (step - em.draft_seconds.value() - em.forward_seconds.value()) / step}}}};
      log_info("speculative: ", d.usage.accepted_draft_tokens, " of ", d.usage.draft_tokens,
               " drafted tokens accepted (", 100.0 * rate, "%), mean acceptance length ", mean_len,
               " tokens per verification step");
    }
    if (o.profile) out["tg"]["profile"] = take_profile();
  }
  m.set_profiling(false);
  double machine_bw = 0.0;
  if (o.n_gen > 0 && !o.no_bandwidth) {
    ThreadPool pool(lm.backend->n_threads());
    machine_bw = measure_read_bandwidth(pool).bytes_per_second;
    const double decode_bw = static_cast<double>(m.weight_bytes()) * tg.mean;
    out["bandwidth"] = {{"machine_gbps", machine_bw / 1e9},
                        {"decode_gbps", decode_bw / 1e9},
                        {"fraction", decode_bw / machine_bw},
                        {"roofline_tps", machine_bw / static_cast<double>(m.weight_bytes())}};
  }
  if (o.n_prompt > 0 && !o.no_bandwidth) {
    ThreadPool pool(lm.backend->n_threads());
    const ComputePeak peak = measure_compute_peak(pool, isa_level());
    const double pp_ops = layer_matmul_ops_per_token(m.file()) * pp.mean;
    if (peak.int8_ops_per_second > 0.0 || peak.f32_flops > 0.0)
      out["peak"] = {{"level", isa_name(peak.level)},      {"int8_gops", peak.int8_ops_per_second / 1e9},
                     {"int8_instruction", peak.int8_what}, {"f32_gflops", peak.f32_flops / 1e9},
                     {"f32_instruction", peak.f32_what},   {"prefill_layer_gops", pp_ops / 1e9}};
    if (peak.int8_ops_per_second > 0.0 && out.contains("peak"))
      out["peak"]["prefill_int8_fraction"] = pp_ops / peak.int8_ops_per_second;
  }
  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
    return;
  }
  std::printf("cpu: %s, kernels %s\n", out["cpu"].get<std::string>().c_str(),
              out["cpu_features"].get<std::string>().c_str());
  std::string sets;
  for (const auto& k : out["kernels"]) sets += (sets.empty() ? "" : ", ") + k.get<std::string>();
  std::printf("matmul kernels: %s\n", sets.c_str());
  std::printf("| model | type | size | threads | test | t/s |\n|---|---|---|---|---|---|\n");
  const double gib = static_cast<double>(m.weight_bytes()) / (1 << 30);
  auto row = [&](const char* test, int n, const Stat& s) {
    std::printf("| %s | %s | %.2f GiB | %d | %s%d | %.2f ± %.2f |\n",
                m.config().name.empty() ? m.config().arch.c_str() : m.config().name.c_str(),
                out["type"].get<std::string>().c_str(), gib, lm.backend->n_threads(), test, n, s.mean, s.std);
  };
  if (o.n_prompt > 0) row("pp", o.n_prompt, pp);
  if (o.n_gen > 0) row("tg", o.n_gen, tg);
  for (const char* test : {"pp", "tg"}) {
    if (!out.contains(test) || !out[test].contains("profile")) continue;
    print_profile(std::string(test) + " time by op", out[test]["profile"]);
  }
  if (out.contains("bandwidth"))
    std::printf("decode reads %.1f GB/s of the machine's %.1f GB/s (%.0f%% of the roofline, %.1f t/s max)\n",
                out["bandwidth"]["decode_gbps"].get<double>(), machine_bw / 1e9,
                100.0 * out["bandwidth"]["fraction"].get<double>(),
                out["bandwidth"]["roofline_tps"].get<double>());
  if (out.contains("peak")) {
    const nlohmann::json& p = out["peak"];
    std::printf("peaks (%s, %d threads): int8 %.0f GOP/s (%s), f32 %.0f GFLOP/s (%s)",
                p["level"].get<std::string>().c_str(), lm.backend->n_threads(), p["int8_gops"].get<double>(),
                p["int8_instruction"].get<std::string>().c_str(), p["f32_gflops"].get<double>(),
                p["f32_instruction"].get<std::string>().c_str());
    if (p.contains("prefill_int8_fraction"))
      std::printf("; prefill's layer matmuls %.0f GOP/s = %.0f%% of the int8 peak",
                  p["prefill_layer_gops"].get<double>(), 100.0 * p["prefill_int8_fraction"].get<double>());
    std::printf("\n");
  }
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<BenchOptions>();
  add_model_options(cmd, o->model);
  add_w8a8_options(cmd, o->model.w8a8);
  add_kv_options(cmd, o->model.kv);
  // -m is validated in the callback: `bench serve` (a child command) needs no model.
  cmd.get_option("--model")->required(false);
  cmd.add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens per prefill test (0: skip)")
      ->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-n,--n-gen", o->n_gen, "Tokens per decode test (0: skip)")->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-r,--repetitions", o->reps, "Repetitions of each test")->check(CLI::Range(1, 1000));
  cmd.add_option("--seed", o->seed, "Seed of the random prompt tokens");
  cmd.add_flag("--json", o->json, "Print one JSON object instead of a table");
  cmd.add_option("-f,--prompt-file", o->prompt_file,
                 "Decode test: continue this text (its prefill is not timed) instead of one random token");
  add_spec_options(cmd, o->spec);
  cmd.add_flag("--no-bandwidth", o->no_bandwidth,
               "Skip measuring the machine's memory bandwidth and compute peaks");
  cmd.add_flag("--profile", o->profile, "Also report the share of forward time per op category");
  cmd.add_option(
         "--parallel", o->parallel,
         "Batched decode instead (like llama-batched-bench -npl): for each count, that many sequences "
         "are prefilled with -p tokens each, then decode -n tokens together; reports aggregate t/s")
      ->delimiter(',')
      ->check(CLI::Range(1, 1024));
  cmd.require_subcommand(0, 1);
  cmd.callback([o, &cmd] {
    if (!cmd.get_subcommands().empty()) return;  // `bench serve` ran instead
    if (o->model.model.empty()) STRATA_THROW("--model is required");
    run(*o);
  });
}

}  // namespace

STRATA_REGISTER_COMMAND("", "bench", setup, "Measure prefill and decode speed of a model (like llama-bench)");

}  // namespace strata::cli
