// `strata bench`: prompt-processing (pp) and decode (tg) speed of a model, like llama-bench,
// plus the fraction of the machine's memory bandwidth the decode achieves.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_setup.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/log.h"
#include "core/memory_bandwidth.h"
#include "core/thread_pool.h"
#include "engine/session.h"
#include "sampling/rng.h"

namespace strata::cli {
namespace {

struct BenchOptions {
  ModelOptions model;
  int n_prompt = 512;
  int n_gen = 128;
  int reps = 3;
  bool json = false;
  bool no_bandwidth = false;
  bool profile = false;
  uint64_t seed = 1;
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

// Prefill of n random tokens from an empty cache, one batch; returns tokens/s per repetition.
std::vector<double> bench_pp(Model& m, Session& s, int n, int reps, Rng& rng) {
  std::vector<double> tps;
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (auto& t : tokens) t = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(m.config().n_vocab));
    s.reset();
    const auto t0 = std::chrono::steady_clock::now();
    s.eval(tokens);
    const double dt = seconds_since(t0);
    if (r >= 0) tps.push_back(n / dt);
  }
  return tps;
}

// Decode of n tokens one at a time from an empty cache; returns tokens/s per repetition.
std::vector<double> bench_tg(Model& m, Session& s, int n, int reps, Rng& rng) {
  std::vector<double> tps;
  for (int r = -1; r < reps; ++r) {
    s.reset();
    int32_t token = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(m.config().n_vocab));
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < (r < 0 ? std::min(n, 8) : n); ++i) {
      const auto& logits = s.eval({token});
      token = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
    const double dt = seconds_since(t0);
    if (r >= 0) tps.push_back(n / dt);
  }
  return tps;
}

void run(const BenchOptions& o) {
  LoadedModel lm = load_model(o.model);
  Model& m = *lm.model;
  const int64_t n_ctx = std::max<int64_t>(std::max(o.n_prompt, o.n_gen), 1);
  Session session(m, n_ctx);
  Rng rng(o.seed);
  nlohmann::json out;
  out["model"] = o.model.model;
  out["type"] = dominant_type(m.file());
  out["threads"] = lm.backend->n_threads();
  out["isa"] = isa_name(isa_level());
  out["weight_bytes"] = m.weight_bytes();
  out["reps"] = o.reps;
  Stat pp, tg;
  // Share of forward time per op category, over all repetitions of a test.
  auto take_profile = [&]() {
    nlohmann::json p;
    const OpProfile& prof = m.profile();
    double total = 0.0;
    for (int op = 0; op < OpProfile::kNumOps; ++op) total += prof.seconds[op];
    for (int op = 0; op < OpProfile::kNumOps; ++op)
      p[OpProfile::name(op)] = {{"seconds", prof.seconds[op]}, {"share", total > 0 ? prof.seconds[op] / total : 0.0}};
    m.reset_profile();
    return p;
  };
  m.set_profiling(o.profile);
  if (o.n_prompt > 0) {
    pp = stats_of(bench_pp(m, session, o.n_prompt, o.reps, rng));
    out["pp"] = {{"n_tokens", o.n_prompt}, {"tps_mean", pp.mean}, {"tps_std", pp.std}};
    if (o.profile) out["pp"]["profile"] = take_profile();
  }
  if (o.n_gen > 0) {
    tg = stats_of(bench_tg(m, session, o.n_gen, o.reps, rng));
    out["tg"] = {{"n_tokens", o.n_gen}, {"tps_mean", tg.mean}, {"tps_std", tg.std}};
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
  if (o.json) {
    std::printf("%s\n", out.dump().c_str());
    return;
  }
  std::printf("| model | type | size | threads | test | t/s |\n|---|---|---|---|---|---|\n");
  const double gib = static_cast<double>(m.weight_bytes()) / (1 << 30);
  auto row = [&](const char* test, int n, const Stat& s) {
    std::printf("| %s | %s | %.2f GiB | %d | %s%d | %.2f ± %.2f |\n", m.config().name.empty() ? m.config().arch.c_str()
                                                                                      : m.config().name.c_str(),
                out["type"].get<std::string>().c_str(), gib, lm.backend->n_threads(), test, n, s.mean, s.std);
  };
  if (o.n_prompt > 0) row("pp", o.n_prompt, pp);
  if (o.n_gen > 0) row("tg", o.n_gen, tg);
  for (const char* test : {"pp", "tg"}) {
    if (!out.contains(test) || !out[test].contains("profile")) continue;
    std::printf("%s time by op:", test);
    for (const auto& [op, v] : out[test]["profile"].items())
      std::printf(" %s %.1f%%", op.c_str(), 100.0 * v["share"].get<double>());
    std::printf("\n");
  }
  if (out.contains("bandwidth"))
    std::printf("decode reads %.1f GB/s of the machine's %.1f GB/s (%.0f%% of the roofline, %.1f t/s max)\n",
                out["bandwidth"]["decode_gbps"].get<double>(), machine_bw / 1e9,
                100.0 * out["bandwidth"]["fraction"].get<double>(), out["bandwidth"]["roofline_tps"].get<double>());
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<BenchOptions>();
  add_model_options(cmd, o->model);
  // -m is validated in the callback: `bench serve` (a child command) needs no model.
  cmd.get_option("--model")->required(false);
  cmd.add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens per prefill test (0: skip)")->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-n,--n-gen", o->n_gen, "Tokens per decode test (0: skip)")->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-r,--repetitions", o->reps, "Repetitions of each test")->check(CLI::Range(1, 1000));
  cmd.add_option("--seed", o->seed, "Seed of the random prompt tokens");
  cmd.add_flag("--json", o->json, "Print one JSON object instead of a table");
  cmd.add_flag("--no-bandwidth", o->no_bandwidth, "Skip measuring the machine's memory bandwidth");
  cmd.add_flag("--profile", o->profile, "Also report the share of forward time per op category");
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
