// Structured output speed with a real 32k vocabulary (llama SPM, ../shared/vocab): compiling a
// constraint with all its token masks (the latency before the first mask of a new schema),
// one mask per generated token along a typical output, and the sampler with and without a
// constraint on 32k logits. One core. Schemas from tests/grammar/data/schemas.json.
// Run: bench_grammar [--benchmark_format=json]; STRATA_SHARED overrides the fixtures path.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>

#include "formats/model_file.h"
#include "grammar/constraint_spec.h"
#include "grammar/grammar_matcher.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using grammar::ConstraintKind;
using grammar::ConstraintSpec;

std::string shared_dir() {
  const char* env = std::getenv("STRATA_SHARED");
  return env && *env ? env : STRATA_SHARED_DIR;
}

const std::shared_ptr<const grammar::TokenVocab>& vocab() {
  static const auto v = grammar::TokenVocab::from_tokenizer(*Tokenizer::from_metadata(
      open_model_file(shared_dir() + "/vocab/ggml-vocab-llama-spm.gguf", "")->metadata()));
  return v;
}

ConstraintSpec suite_schema(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/grammar/data/schemas.json");
  std::stringstream ss;
  ss << in.rdbuf();
  for (const auto& entry : nlohmann::ordered_json::parse(ss.str())) {
    if (entry["name"] == name) {
      ConstraintSpec spec;
      spec.kind = ConstraintKind::JsonSchema;
      spec.schema = entry["schema"];
      return spec;
    }
  }
  throw std::runtime_error("no schema " + name);
}

ConstraintSpec json_object() {
  ConstraintSpec spec;
  spec.kind = ConstraintKind::JsonObject;
  return spec;
}

// tool_choice "required" over two tools (the "person" and "tool_arguments" schemas of the
// suite as parameters), Hermes framing, parallel calls: what the server compiles.
ConstraintSpec tool_calls() {
  ConstraintSpec spec;
  spec.kind = ConstraintKind::ToolCalls;
  spec.schema = {{"call_begin", "<tool_call>\n"},
                 {"call_end", "\n</tool_call>"},
                 {"separator", "\n"},
                 {"parallel", true}};
  spec.schema["tools"] = {{{"name", "person"}, {"parameters", suite_schema("person").schema}},
                          {{"name", "lookup"}, {"parameters", suite_schema("tool_arguments").schema}}};
  return spec;
}

// Compile + every token mask: what a request with a new schema waits for before its first
// mask (which then is a cache lookup).
void BM_Compile(benchmark::State& state, ConstraintSpec spec) {
  const auto v = vocab();
  int64_t states = 0, work = 0, computed = 0;
  for (auto _ : state) {
    const auto f = grammar::compile_constraint(spec, v);
    auto m = f->make();
    std::vector<uint8_t> allowed(static_cast<size_t>(v->n_vocab()), 1);
    m->mask(allowed.data());
    benchmark::DoNotOptimize(allowed.data());
    states = f->compiled().grammar().n_states();
    work = f->compiled().masks().work();
    computed = f->compiled().masks().n_computed();
  }
  state.counters["states"] = static_cast<double>(states);
  state.counters["trie_steps"] = static_cast<double>(work);
  state.counters["masks_computed"] = static_cast<double>(computed);  // the others are shared
}

// A plausible output: JSON text written for the schema, cut into tokens by greedy longest
// match over the vocabulary's pieces (each accepted into a matcher to check it fits).
std::vector<int32_t> tokens_of(const grammar::GrammarConstraintFactory& f, const std::string& text) {
  const grammar::TokenVocab& v = f.compiled().vocab();
  auto m = f.make();
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos < text.size()) {
    int32_t best = -1;
    size_t best_len = 0;
    for (int32_t t = 0; t < v.n_vocab(); ++t) {
      const std::string_view p = v.piece(t);
      if (p.size() > best_len && text.compare(pos, p.size(), p) == 0) best = t, best_len = p.size();
    }
    if (best < 0 || !m->accept(best)) throw std::runtime_error("text does not fit the constraint");
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

// One mask per token along an output, then the token accepted: per-token cost of a stream.
void BM_MaskPerToken(benchmark::State& state, ConstraintSpec spec, std::string text) {
  const auto v = vocab();
  const auto f = grammar::compile_constraint(spec, v);
  std::vector<int32_t> tokens;
  try {
    tokens = tokens_of(*f, text);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  std::vector<uint8_t> allowed(static_cast<size_t>(v->n_vocab()));
  int64_t checked = 0, masks = 0;
  for (auto _ : state) {
    auto m = f->make();
    auto& gm = static_cast<grammar::GrammarMatcher&>(*m);
    for (int32_t t : tokens) {
      std::fill(allowed.begin(), allowed.end(), 1);
      m->mask(allowed.data());
      checked += gm.last_mask_stats().checked;
      ++masks;
      m->accept(t);
    }
    benchmark::DoNotOptimize(allowed.data());
  }
  state.SetItemsProcessed(masks);  // items_per_second: masks (= tokens) per second
  state.counters["tokens"] = static_cast<double>(tokens.size());
  state.counters["checked_per_mask"] =
      static_cast<double>(checked) / static_cast<double>(std::max<int64_t>(masks, 1));
}

// The sampler on 32k logits (temperature 1; top-k off, which sorts the whole vocabulary, or
// 40), unconstrained and with a constraint inside a JSON string (its widest state).
void BM_Sample(benchmark::State& state, bool constrained, int32_t top_k) {
  const auto v = vocab();
  const int32_t n = v->n_vocab();
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> logits(static_cast<size_t>(n));
  for (float& l : logits) l = normal(rng);
  SamplingParams sp;
  sp.temperature = 1.0f;
  sp.top_k = top_k;
  sp.seed = 1;
  Sampler sampler(sp, n);
  const auto f = grammar::compile_constraint(json_object(), v);
  auto m = f->make();
  static_cast<grammar::GrammarMatcher&>(*m).accept_bytes("{\"name\": \"abc");
  // What the engine does per token: the constraint's mask (when constrained), then sampling.
  std::vector<uint8_t> mask(static_cast<size_t>(n));
  for (auto _ : state) {
    const uint8_t* allowed = nullptr;
    if (constrained) {
      std::fill(mask.begin(), mask.end(), uint8_t{1});
      m->mask(mask.data());
      allowed = mask.data();
    }
    benchmark::DoNotOptimize(sampler.sample(logits.data(), allowed));
  }
}

const char* kPersonText = R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"})";
const char* kInvoiceText =
    R"({"number": "INV-0042", "date": "2024-03-15", "lines": [{"sku": "123e4567-e89b-12d3-a456-426614174000", "qty": 2, "price": 19.99}, {"sku": "0f8fad5b-d9cb-469f-a165-70867728950e", "qty": 1, "price": 5}], "paid": true})";
const char* kObjectText =
    R"({"title": "The Hobbit", "year": 1937, "tags": ["fantasy", "classic"], "rating": 4.8, "author": {"name": "J. R. R. Tolkien", "alive": false}})";

BENCHMARK_CAPTURE(BM_Compile, json_object, json_object())->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, person, suite_schema("person"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, tool_arguments, suite_schema("tool_arguments"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, invoice, suite_schema("invoice"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, event_log, suite_schema("event_log"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, nested, suite_schema("nested"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Compile, tool_calls, tool_calls())->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MaskPerToken, person, suite_schema("person"), kPersonText)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaskPerToken, invoice, suite_schema("invoice"), kInvoiceText)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaskPerToken, json_object, json_object(), kObjectText)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, unconstrained, false, 0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, constrained, true, 0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, unconstrained_top_k40, false, 40)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, constrained_top_k40, true, 40)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
