// `strata perplexity` and `strata kld` end to end: their --json numbers against a direct
// computation from `strata logits`, and the properties the metrics must have (KLD of a model
// against itself is 0, Q4_0 diverges more than Q8_0, greedy text is predicted with certainty).
#include "eval_cli_util.h"

namespace strata::test {
namespace {

// Written for these tests (public domain).
const char* const kShortText =
    "Once upon a time, a small dog named Max found a red ball in the garden. He ran to his friend "
    "Sue and they played all day. When the sun went down, they sat under a big tree and smiled.";

std::string data_text() {
  return source_dir() + "/data/stories260K-sampled.txt";
}

void expect_rel_near(double got, double want, double rel, const char* what) {
  EXPECT_NEAR(got, want, rel * std::max(std::abs(want), 1e-12)) << what;
}

// Runs a command that must fail with one clean line on stderr containing `message`.
void expect_clean_error(std::vector<std::string> args, const std::string& message) {
  args.insert(args.begin(), strata_binary());
  const CommandResult r = run_command(args);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  const size_t first_error = r.err.find("error");
  ASSERT_NE(first_error, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n', first_error), r.err.size() - 1) << "more than one error line: " << r.err;
}

using PerplexityCli = EvalCliTest;
using KldCli = EvalCliTest;

void check_perplexity_against_logits(const std::string& text_file, const std::string& text, int ctx,
                                     int stride) {
  const std::vector<int32_t> tokens = tokenize_with_logits_cmd(stories260k(), text);
  ASSERT_GT(tokens.size(), 3u * ctx);
  const std::vector<ScoredRow> rows = scored_rows(stories260k(), tokens, ctx, stride, tokens[0]);
  std::vector<double> nll;
  int top1 = 0;
  for (const ScoredRow& r : rows) {
    nll.push_back(-log_probs(r.logits)[r.target]);
    top1 += argmax_of(r.logits) == static_cast<size_t>(r.target);
  }
  const MeanAndError e = mean_and_error(nll);
  const nlohmann::json j = run_json({"perplexity", "-m", stories260k(), "-f", text_file, "--ctx",
                                     std::to_string(ctx), "--stride", std::to_string(stride), "--json"});
  EXPECT_EQ(j["n_tokens"].get<int64_t>(), static_cast<int64_t>(rows.size()));
  expect_rel_near(j["ppl"].get<double>(), std::exp(e.mean), 1e-5, "ppl");
  expect_rel_near(j["ppl_stderr"].get<double>(), std::exp(e.mean) * e.stderr_of_mean, 1e-4, "ppl_stderr");
  expect_rel_near(j["nll_mean"].get<double>(), e.mean, 1e-5, "nll_mean");
  EXPECT_NEAR(j["top1_accuracy"].get<double>(), 100.0 * top1 / rows.size(), 1e-9);
}

TEST_F(PerplexityCli, MatchesDirectComputationFromLogits) {
  check_perplexity_against_logits(write_text("short.txt", kShortText), kShortText, 16, 16);
}

TEST_F(PerplexityCli, StridedWindowsMatchDirectComputationFromLogits) {
  check_perplexity_against_logits(write_text("short.txt", kShortText), kShortText, 16, 5);
}

// One window over the whole greedy text: every scored token then has exactly the context it was
// generated from, so it must be the model's argmax, and the perplexity is the lowest any text
// can have at those positions.
// The newline both generators print after the text is not part of the generation: drop it.
nlohmann::json greedy_perplexity(const std::string& file, std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  std::ofstream(file, std::ios::binary) << text;
  const size_t n = tokenize_with_logits_cmd(stories260k(), text).size();
  return run_json({"perplexity", "-m", stories260k(), "-f", file, "--ctx", std::to_string(n), "--json"});
}

TEST_F(PerplexityCli, GreedyTextIsPredictedWithCertainty) {
  const CommandResult gen = run_command(
      {strata_binary(), "run", "-m", stories260k(), "-p", "", "--temp", "0", "-n", "300", "-t", "2"});
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  const nlohmann::json own = greedy_perplexity(path("greedy.txt"), gen.out);
  EXPECT_GE(own["n_tokens"].get<int64_t>(), 140);
  EXPECT_EQ(own["top1_accuracy"].get<double>(), 100.0);
  EXPECT_GE(own["ppl"].get<double>(), 1.0);
  EXPECT_LT(own["ppl"].get<double>(), 2.0);
  // llama2.c's greedy continuation by the same model (an independent fixture).
  const std::string ref_file = shared_path("reference/stories260K-llama2c-greedy200.txt");
  const nlohmann::json ref = greedy_perplexity(path("llama2c.txt"), read_file(ref_file));
  EXPECT_EQ(ref["top1_accuracy"].get<double>(), 100.0);
  EXPECT_LT(ref["ppl"].get<double>(), 2.0);
  // A text sampled at temperature 1 is far less predictable.
  const nlohmann::json sampled = run_json(
      {"perplexity", "-m", stories260k(), "-f", data_text(), "--ctx", "256", "--chunks", "4", "--json"});
  EXPECT_GT(sampled["ppl"].get<double>(), 2.0 * own["ppl"].get<double>());
  EXPECT_LT(sampled["top1_accuracy"].get<double>(), 80.0);
}

TEST_F(PerplexityCli, TextAndJsonOutputs) {
  const std::string file = write_text("short.txt", kShortText);
  const CommandResult r =
      run_command({strata_binary(), "perplexity", "-m", stories260k(), "-f", file, "--ctx", "16", "-t", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("Final estimate: PPL = ", 0), 0u) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "progress bar drawn into a pipe";
  const nlohmann::json j = run_json({"perplexity", "-m", stories260k(), "-f", file, "--ctx", "16", "--json"});
  for (const char* key : {"ppl", "ppl_stderr", "n_tokens"}) EXPECT_TRUE(j.contains(key)) << key;
}

void check_kld_against_logits(const std::string& text_file, const std::string& text, const std::string& base,
                              const std::string& model, int ctx) {
  const std::vector<int32_t> tokens = tokenize_with_logits_cmd(base, text);
  const std::vector<ScoredRow> b = scored_rows(base, tokens, ctx, ctx, tokens[0]);
  const std::vector<ScoredRow> m = scored_rows(model, tokens, ctx, ctx, tokens[0]);
  ASSERT_EQ(b.size(), m.size());
  std::vector<double> kld, nll_b, nll_m;
  int agree = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const std::vector<double> lb = log_probs(b[i].logits), lm = log_probs(m[i].logits);
    long double kl = 0;
    for (size_t t = 0; t < lb.size(); ++t) kl += std::exp(static_cast<long double>(lb[t])) * (lb[t] - lm[t]);
    kld.push_back(static_cast<double>(kl));
    nll_b.push_back(-lb[b[i].target]);
    nll_m.push_back(-lm[m[i].target]);
    agree += argmax_of(b[i].logits) == argmax_of(m[i].logits);
  }
  const MeanAndError k = mean_and_error(kld), eb = mean_and_error(nll_b), em = mean_and_error(nll_m);
  const nlohmann::json j =
      run_json({"kld", "--base", base, "-m", model, "-f", text_file, "--ctx", std::to_string(ctx), "--json"});
  EXPECT_EQ(j["n_tokens"].get<int64_t>(), static_cast<int64_t>(kld.size()));
  expect_rel_near(j["kld_mean"].get<double>(), k.mean, 1e-4, "kld_mean");
  expect_rel_near(j["kld_stderr"].get<double>(), k.stderr_of_mean, 1e-3, "kld_stderr");
  expect_rel_near(j["kld_p99"].get<double>(), numpy_percentile(kld, 0.99), 1e-4, "kld_p99");
  expect_rel_near(j["kld_median"].get<double>(), numpy_percentile(kld, 0.5), 1e-4, "kld_median");
  expect_rel_near(j["kld_max"].get<double>(), *std::max_element(kld.begin(), kld.end()), 1e-4, "kld_max");
  EXPECT_NEAR(j["top1_agreement"].get<double>(), 100.0 * agree / kld.size(), 1e-9);
  expect_rel_near(j["ppl_base"].get<double>(), std::exp(eb.mean), 1e-5, "ppl_base");
  expect_rel_near(j["ppl_model"].get<double>(), std::exp(em.mean), 1e-5, "ppl_model");
  expect_rel_near(j["delta_ppl"].get<double>(), std::exp(em.mean) - std::exp(eb.mean), 1e-3, "delta_ppl");
}

TEST_F(KldCli, MatchesDirectComputationFromLogits) {
  check_kld_against_logits(write_text("short.txt", kShortText), kShortText, synth_tiny("f32"),
                           synth_tiny("q4_0"), 16);
}

TEST_F(KldCli, ModelAgainstItselfIsZero) {
  const nlohmann::json j = run_json({"kld", "--base", stories260k(), "-m", stories260k(), "-f", data_text(),
                                     "--ctx", "64", "--chunks", "6", "--json"});
  EXPECT_EQ(j["n_tokens"].get<int64_t>(), 6 * 31);
  EXPECT_EQ(j["kld_mean"].get<double>(), 0.0);
  EXPECT_EQ(j["kld_max"].get<double>(), 0.0);
  EXPECT_EQ(j["top1_agreement"].get<double>(), 100.0);
  EXPECT_EQ(j["ppl_base"].get<double>(), j["ppl_model"].get<double>());
  EXPECT_EQ(j["delta_ppl"].get<double>(), 0.0);
}

TEST_F(KldCli, KvCacheTypeIsJudgedLikeWeights) {
  const std::vector<std::string> common = {"kld",         "--base",   stories260k(), "-m",
                                           stories260k(), "-f",       data_text(),   "--ctx",
                                           "128",         "--chunks", "4",           "--json"};
  auto with = [&](const std::string& base_kv, const std::string& kv) {
    std::vector<std::string> args = common;
    args.insert(args.end(), {"--base-kv-type", base_kv, "--kv-type", kv});
    return run_json(args);
  };
  // Identical caches: identical distributions.
  EXPECT_EQ(with("f32", "f32")["kld_mean"].get<double>(), 0.0);
  // An F16 cache rounds K and V to 11 significant bits: a small, non-zero divergence.
  const nlohmann::json f16 = with("f32", "f16");
  EXPECT_GT(f16["kld_mean"].get<double>(), 0.0);
  EXPECT_LT(f16["kld_mean"].get<double>(), 1e-4);
  EXPECT_GT(f16["top1_agreement"].get<double>(), 99.0);
  expect_clean_error(
      {"kld", "--base", stories260k(), "-m", stories260k(), "-f", data_text(), "--kv-type", "q4_k"},
      "unknown KV cache type 'q4_k'");
  expect_clean_error({"kld", "--base", stories260k(), "-m", stories260k(), "-f", data_text(), "-ctv", "int8"},
                     "unknown KV cache type 'int8'");
}

// Quantized caches (set with llama.cpp's -ctk / -ctv): the divergence from the F32 cache orders by
// precision, and the Hadamard rotation of 4-bit keys helps (stories260K's 8-wide heads have outlier
// channels: measured mean KLD 0.37 rotated, 0.84 plain over 20 windows of 128).
TEST_F(KldCli, QuantizedKvCachesDivergeByTheirPrecision) {
  auto kld = [&](std::vector<std::string> kv) {
    std::vector<std::string> args = {"kld", "--base",         stories260k(), "-m",    stories260k(),
                                     "-f",  data_text(),      "--ctx",       "128",   "--chunks",
                                     "6",   "--base-kv-type", "f32",         "--json"};
    args.insert(args.end(), kv.begin(), kv.end());
    return run_json(args)["kld_mean"].get<double>();
  };
  const double f16 = kld({"--kv-type", "f16"}), q8 = kld({"-ctk", "q8_0", "-ctv", "q8_0"});
  const double q4 = kld({"-ctk", "q4_0", "-ctv", "q8_0"}),
               q4_plain = kld({"-ctk", "q4_0", "-ctv", "q8_0", "--no-kv-rotation"});
  EXPECT_LT(f16, q8);
  EXPECT_LT(q8, 0.01);
  EXPECT_LT(q8, q4);
  EXPECT_LT(q4, 0.75 * q4_plain);
  // KIVI: 4-bit keys per channel beat 4-bit keys per token here; 2 bits are worse than 4.
  const double kivi4 = kld({"--cache-type-k", "kivi4", "--cache-type-v", "q8_0"});
  EXPECT_LT(kivi4, q4);
  EXPECT_LT(kivi4, kld({"--kv-type", "kivi2"}));
}

TEST_F(KldCli, SavedBaseRunGivesTheSameNumbersAndQ4DivergesMoreThanQ8) {
  const std::string base = path("synth-f32.kld");
  const std::vector<std::string> window = {"-f", data_text(), "--ctx", "64", "--chunks", "10"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), window.begin(), window.end());
    args.push_back("--json");
    return run_json(args);
  };
  const nlohmann::json live_q8 =
      with({"kld", "--base", synth_tiny("f32"), "-m", synth_tiny("q8_0"), "--save-base", base, "--json"});
  ASSERT_TRUE(std::filesystem::exists(base));
  const nlohmann::json q8 = run_json({"kld", "--base-logits", base, "-m", synth_tiny("q8_0"), "--json"});
  const nlohmann::json q4 = run_json({"kld", "--base-logits", base, "-m", synth_tiny("q4_0"), "--json"});
  // The saved run reproduces the live one: same tokens, exact NLL and argmax, log-probs within
  // 3.1e-4 nats (a second-order effect on the KLD).
  EXPECT_EQ(q8["n_tokens"], live_q8["n_tokens"]);
  EXPECT_EQ(q8["top1_agreement"], live_q8["top1_agreement"]);
  expect_rel_near(q8["ppl_base"].get<double>(), live_q8["ppl_base"].get<double>(), 1e-6, "ppl_base");
  expect_rel_near(q8["ppl_model"].get<double>(), live_q8["ppl_model"].get<double>(), 1e-12, "ppl_model");
  expect_rel_near(q8["kld_mean"].get<double>(), live_q8["kld_mean"].get<double>(), 1e-3, "kld_mean");
  // Fewer bits, more divergence.
  EXPECT_GT(q4["kld_mean"].get<double>(), 3.0 * q8["kld_mean"].get<double>());
  EXPECT_GT(q4["kld_p99"].get<double>(), q8["kld_p99"].get<double>());
  EXPECT_LE(q4["top1_agreement"].get<double>(), q8["top1_agreement"].get<double>());
  EXPECT_GT(q8["kld_mean"].get<double>(), 0.0);
  for (const char* key :
       {"kld_mean", "kld_stderr", "kld_p99", "top1_agreement", "ppl_base", "ppl_model", "n_tokens"})
    EXPECT_TRUE(q4.contains(key)) << key;
}

TEST_F(KldCli, OnlySavingTheBaseRunReportsItsPerplexity) {
  const nlohmann::json saved = run_json({"kld", "--base", stories260k(), "-f", data_text(), "--ctx", "64",
                                         "--chunks", "3", "--save-base", path("b.kld"), "--json"});
  const nlohmann::json ppl = run_json(
      {"perplexity", "-m", stories260k(), "-f", data_text(), "--ctx", "64", "--chunks", "3", "--json"});
  EXPECT_EQ(saved["n_tokens"], ppl["n_tokens"]);
  EXPECT_DOUBLE_EQ(saved["ppl_base"].get<double>(), ppl["ppl"].get<double>());
  EXPECT_FALSE(saved.contains("kld_mean"));
}

TEST_F(KldCli, BadInputsAreCleanErrors) {
  const std::string text = data_text(), short_text = write_text("short.txt", "Hi.");
  const std::string hf = shared_path("models/tinystories656k");
  expect_clean_error({"perplexity", "-m", stories260k(), "-f", path("missing.txt")}, "cannot open");
  expect_clean_error({"perplexity", "-m", stories260k(), "-f", short_text, "--ctx", "64"},
                     "fewer than one window");
  expect_clean_error({"perplexity", "-m", stories260k(), "-f", write_text("empty.txt", "")}, "empty");
  expect_clean_error({"kld", "--base", stories260k(), "-m", hf, "-f", text}, "different vocabularies");
  expect_clean_error({"kld", "-m", stories260k(), "-f", text}, "--base");
  expect_clean_error({"kld", "--base", stories260k(), "-f", text}, "-m MODEL");
  expect_clean_error({"kld", "--base", stories260k(), "-m", stories260k()}, "-f FILE");
  expect_clean_error(
      {"kld", "--base-logits", write_text("junk.kld", std::string(100, 'x')), "-m", stories260k()},
      "not a Strata base logits file");
  expect_clean_error({"kld", "--base-logits", path("none.kld"), "-m", stories260k()}, "cannot open");

  const std::string base = path("base.kld");
  run_json({"kld", "--base", stories260k(), "-f", text, "--ctx", "32", "--chunks", "2", "--save-base", base,
            "--json"});
  ASSERT_TRUE(std::filesystem::exists(base));
  EXPECT_FALSE(std::filesystem::exists(base + ".partial"));
  expect_clean_error({"kld", "--base-logits", base, "--base", stories260k(), "-m", stories260k()},
                     "exactly one");
  expect_clean_error({"kld", "--base-logits", base, "-m", stories260k(), "--save-base", path("x.kld")},
                     "--save-base");
  expect_clean_error({"kld", "--base-logits", base, "-m", hf}, "vocabulary differs");
  expect_clean_error({"kld", "--base-logits", base, "-m", stories260k(), "--ctx", "64"}, "--ctx 64 differs");
  expect_clean_error(
      {"kld", "--base-logits", base, "-m", stories260k(), "-f", write_text("other.txt", kShortText)},
      "is not the text");
  // The same run with the right text and options is accepted.
  const nlohmann::json ok =
      run_json({"kld", "--base-logits", base, "-m", stories260k(), "-f", text, "--ctx", "32", "--json"});
  // The model is the base itself: only the storage rounding of the base log-probs remains,
  // a second-order effect (KL of two distributions 3e-4 nats apart is ~1e-8).
  EXPECT_GE(ok["kld_mean"].get<double>(), 0.0);
  EXPECT_LT(ok["kld_max"].get<double>(), 1e-6);
  EXPECT_EQ(ok["top1_agreement"].get<double>(), 100.0);
}

}  // namespace
}  // namespace strata::test
