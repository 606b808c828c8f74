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
#include "kv/kv_storage.h"
#include "model/forward_batch.h"
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

int32_t argmax_row(const float* row, int64_t n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
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

// Prefill of n random tokens from an empty cache, one batch; returns tokens/s per repetition.
std::vector<double> bench_pp(Model& m, Session& s, int n, int reps, Rng& rng) {
  std::vector<double> tps;
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (auto& t : tokens)
      t = static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(m.config().n_vocab));
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
      token = argmax_row(logits.data(), static_cast<int64_t>(logits.size()));
    }
    const double dt = seconds_since(t0);
    if (r >= 0) tps.push_back(n / dt);
  }
  return tps;
}

// Batched decode like llama-batched-bench: n_seq sequences, each prefilled with n_prompt random
// tokens in one ragged batch, then n_gen steps that each decode one token of every sequence.
// Returns {prefill tokens/s, aggregate decode tokens/s}; adds the decode steps' op times to tg_profile.
std::pair<double, double> bench_batched(Model& m, const KvCacheType& kv_type, int n_seq, int n_prompt,
                                        int n_gen, Rng& rng, OpProfile& tg_profile) {
  const KvGeometry g = m.kv_geometry(kv_type);
  const int32_t per_seq = static_cast<int32_t>((n_prompt + n_gen + g.block_size - 1) / g.block_size);
  KvStorage kv(m.backend(), g, per_seq * n_seq);
  std::vector<std::vector<BlockId>> tables(static_cast<size_t>(n_seq));  // sequence s owns a block range
  for (int s = 0; s < n_seq; ++s)
    for (int32_t b = 0; b < per_seq; ++b) tables[static_cast<size_t>(s)].push_back(s * per_seq + b);
  const int64_t n_vocab = m.config().n_vocab;
  auto random_token = [&] { return static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n_vocab)); };
  ForwardBatch batch;
  std::vector<float> logits(static_cast<size_t>(n_seq) * static_cast<size_t>(n_vocab));  // [n_seq, n_vocab]
  std::vector<int32_t> next(static_cast<size_t>(n_seq));
  auto start_batch = [&] {
    batch.clear();
    for (const auto& t : tables) batch.block_tables.push_back(&t);
  };
  double pp_tps = 0.0;
  if (n_prompt > 0) {
    start_batch();
    for (int s = 0; s < n_seq; ++s)
      for (int i = 0; i < n_prompt; ++i) batch.add(random_token(), i, s, i + 1 == n_prompt);
    const auto t0 = std::chrono::steady_clock::now();
    m.forward(batch, kv, logits.data());
    pp_tps = static_cast<double>(n_seq) * n_prompt / seconds_since(t0);
    for (int s = 0; s < n_seq; ++s)
      next[static_cast<size_t>(s)] = argmax_row(&logits[static_cast<size_t>(s) * n_vocab], n_vocab);
  } else {
    for (auto& t : next) t = random_token();
  }
  const OpProfile before = m.profile();
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < n_gen; ++step) {
    start_batch();
    for (int s = 0; s < n_seq; ++s) batch.add(next[static_cast<size_t>(s)], n_prompt + step, s, true);
    m.forward(batch, kv, logits.data());
    for (int s = 0; s < n_seq; ++s)
      next[static_cast<size_t>(s)] = argmax_row(&logits[static_cast<size_t>(s) * n_vocab], n_vocab);
  }
  const double tg_tps = n_gen > 0 ? static_cast<double>(n_seq) * n_gen / seconds_since(t0) : 0.0;
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
    bench_batched(m, o.model.kv.resolve(), n_seq, std::min(o.n_prompt, 16), std::min(o.n_gen, 4), rng, prof);
    prof = OpProfile{};
    std::vector<double> pp, tg;
    for (int r = 0; r < o.reps; ++r) {
      const auto [p, t] = bench_batched(m, o.model.kv.resolve(), n_seq, o.n_prompt, o.n_gen, rng, prof);
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
  out["kv_type"] = type_name(o.model.kv.resolve());
  out["weight_bytes"] = m.weight_bytes();
  out["reps"] = o.reps;
  if (!o.parallel.empty()) return run_parallel(o, lm, out);
  Session session(m, std::max<int64_t>(std::max(o.n_prompt, o.n_gen), 1), o.model.kv.resolve());
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
}

void setup(CLI::App& cmd) {
  auto o = std::make_shared<BenchOptions>();
  add_model_options(cmd, o->model);
  add_kv_options(cmd, o->model.kv);
  // -m is validated in the callback: `bench serve` (a child command) needs no model.
  cmd.get_option("--model")->required(false);
  cmd.add_option("-p,--n-prompt", o->n_prompt, "Prompt tokens per prefill test (0: skip)")
      ->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-n,--n-gen", o->n_gen, "Tokens per decode test (0: skip)")->check(CLI::Range(0, 1 << 20));
  cmd.add_option("-r,--repetitions", o->reps, "Repetitions of each test")->check(CLI::Range(1, 1000));
  cmd.add_option("--seed", o->seed, "Seed of the random prompt tokens");
  cmd.add_flag("--json", o->json, "Print one JSON object instead of a table");
  cmd.add_flag("--no-bandwidth", o->no_bandwidth, "Skip measuring the machine's memory bandwidth");
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
