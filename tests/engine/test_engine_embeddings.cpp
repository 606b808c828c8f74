// Embedding requests through the engine against llama.cpp's logits (../shared/reference).
//
// Logits are linear in the final hidden state (logits_t = W_out . h_t, no final soft-capping in
// these models), so W_out applied to the pooled vector must equal the same pooling of
// llama.cpp's logits: the mean over positions (mean), the first position (cls), the last (last).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "common/fixtures.h"
#include "engine/embedding.h"
#include "engine/engine.h"
#include "engine_test_util.h"
#include "formats/metadata.h"
#include "model/model.h"
#include "quant/quantize.h"

namespace strata::test {
namespace {

struct RefPrompt {
  std::vector<int32_t> tokens;
  std::vector<std::vector<double>> logits;  // [n_tokens][n_vocab]
};

std::vector<RefPrompt> load_reference(const std::string& file) {
  std::ifstream in(shared_path(file));
  std::vector<RefPrompt> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line);
    out.push_back(
        {j["tokens"].get<std::vector<int32_t>>(), j["logits"].get<std::vector<std::vector<double>>>()});
  }
  return out;
}

// The output matrix as float: [n_vocab, n_embd] (the token embeddings when tied).
std::vector<float> output_matrix(const Model& m) {
  const TensorInfo* t = m.file().find_tensor("output.weight");
  if (!t) t = m.file().find_tensor("token_embd.weight");
  STRATA_CHECK(t != nullptr);
  std::vector<float> w(static_cast<size_t>(t->n_elements()));
  const int64_t rows = t->n_elements() / t->ne[0];
  const size_t rb = row_bytes(t->type, t->ne[0]);
  for (int64_t r = 0; r < rows; ++r)
    dequantize_row(t->type, static_cast<const uint8_t*>(t->data) + r * rb, w.data() + r * t->ne[0], t->ne[0]);
  return w;
}

// ||W e - ref|| / ||ref|| in double.
double projected_error(const std::vector<float>& w, const std::vector<float>& e,
                       const std::vector<double>& ref) {
  const size_t n_embd = e.size();
  double num = 0.0, den = 0.0;
  for (size_t v = 0; v < ref.size(); ++v) {
    double l = 0.0;
    for (size_t i = 0; i < n_embd; ++i) l += static_cast<double>(w[v * n_embd + i]) * e[i];
    num += (l - ref[v]) * (l - ref[v]);
    den += ref[v] * ref[v];
  }
  return std::sqrt(num / den);
}

std::vector<double> pooled_reference(const RefPrompt& p, Pooling pooling) {
  if (pooling == Pooling::Cls) return p.logits.front();
  if (pooling == Pooling::Last) return p.logits.back();
  std::vector<double> mean(p.logits.front().size(), 0.0);
  for (const auto& row : p.logits)
    for (size_t v = 0; v < row.size(); ++v) mean[v] += row[v] / static_cast<double>(p.logits.size());
  return mean;
}

struct EmbedResult {
  std::vector<float> embedding;
  FinishReason finish = FinishReason::None;
  Usage usage;
};

EventCallback collect(EmbedResult* r) {
  return [r](const EngineEvent& ev) {
    if (ev.finish != FinishReason::None) r->finish = ev.finish;
    if (ev.request_done) {
      r->embedding = ev.embedding;
      r->usage = ev.usage;
    }
  };
}

RequestParams embed_params(const std::vector<int32_t>& tokens, Pooling pooling) {
  RequestParams p;
  p.prompt = tokens;
  p.pooling = pooling;
  p.stop.max_tokens = 0;
  return p;
}

// Embeds every input in one engine, all submitted before the first step (one batch).
std::vector<EmbedResult> embed_all(Model& m, const std::vector<std::vector<int32_t>>& inputs, Pooling pooling,
                                   EngineConfig cfg = {}) {
  if (cfg.kv_cache_tokens == 0) cfg.kv_cache_tokens = 4096;
  Engine e(m, cfg);
  std::vector<EmbedResult> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) e.submit(embed_params(inputs[i], pooling), collect(&out[i]));
  e.run_until_idle();
  return out;
}

struct ModelCase {
  const char* model;
  const char* reference;
};

class EmbeddingReference : public ::testing::TestWithParam<ModelCase> {};

// 2e-3: the project's limit for float models against llama.cpp (test_reference_logits.cpp).
TEST_P(EmbeddingReference, PooledHiddenStatesProjectToLlamaCppLogits) {
  auto backend = make_cpu_backend(1);
  auto model = Model::load(shared_path(GetParam().model), *backend);
  ASSERT_EQ(model->config().final_softcap, 0.0f);
  const auto ref = load_reference(GetParam().reference);
  ASSERT_FALSE(ref.empty());
  const std::vector<float> w = output_matrix(*model);
  std::vector<std::vector<int32_t>> inputs;
  for (const RefPrompt& p : ref) inputs.push_back(p.tokens);
  EngineConfig cfg;
  cfg.max_batched_tokens = 7;  // chunked prefill, several requests per step
  for (Pooling pooling : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
    const auto results = embed_all(*model, inputs, pooling, cfg);
    double worst = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(results[i].finish, FinishReason::Stop);
      ASSERT_EQ(results[i].embedding.size(), static_cast<size_t>(model->config().n_embd));
      EXPECT_EQ(results[i].usage.prompt_tokens, static_cast<int64_t>(ref[i].tokens.size()));
      EXPECT_EQ(results[i].usage.completion_tokens, 0);
      worst = std::max(worst, projected_error(w, results[i].embedding, pooled_reference(ref[i], pooling)));
    }
    std::printf("%-40s %-4s worst relative L2 %.3e\n", GetParam().model, pooling_name(pooling), worst);
    EXPECT_LE(worst, 2e-3) << pooling_name(pooling);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, EmbeddingReference,
    ::testing::Values(ModelCase{"models/stories260K/stories260K.gguf", "reference/stories260K.jsonl"},
                      ModelCase{"models/synth-tiny/synth-tiny-f32.gguf", "reference/synth-tiny-f32.jsonl"},
                      ModelCase{"models/arch/qwen3-f16.gguf", "reference/arch/qwen3-f16.jsonl"},
                      ModelCase{"models/arch/llama-moe-f16.gguf", "reference/arch/llama-moe-f16.jsonl"}),
    [](const auto& info) {
      std::string n = info.param.reference;
      n = n.substr(n.find_last_of('/') + 1);
      n = n.substr(0, n.find('.'));
      for (char& c : n)
        if (c == '-') c = '_';
      return n;
    });

std::vector<std::vector<int32_t>> stories_inputs() {
  std::vector<std::vector<int32_t>> inputs;
  for (const RefPrompt& p : load_reference("reference/stories260K.jsonl")) inputs.push_back(p.tokens);
  return inputs;
}

// ||a - b|| / ||b||.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    den += double{b[i]} * b[i];
  }
  return std::sqrt(num / den);
}

// Positions computed in another chunking read their earlier K/V from the F16 cache rather than
// from the same pass, so results agree to F16 rounding, not bit for bit.
constexpr double kChunkingTolerance = 1e-4;

// A batch of N inputs gives what N requests alone give (batch rows are independent).
TEST(EngineEmbeddings, BatchEqualsSingleRequests) {
  Model& m = *stories().model;
  const auto inputs = stories_inputs();
  EngineConfig cfg;
  cfg.max_batched_tokens = 5;
  const auto batched = embed_all(m, inputs, Pooling::Mean, cfg);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto alone = embed_all(m, {inputs[i]}, Pooling::Mean);
    EXPECT_LE(rel_diff(batched[i].embedding, alone[0].embedding), kChunkingTolerance) << i;
  }
}

// A prefix published by a generation request is not reused: mean pooling needs every
// position's hidden state, so an embedding request never reads the prefix cache.
TEST(EngineEmbeddings, PrefixCacheHitsAreNotUsed) {
  Model& m = *stories().model;
  const auto inputs = stories_inputs();
  const auto fresh = embed_all(m, {inputs[0]}, Pooling::Mean);
  EngineConfig cfg;
  cfg.kv_cache_tokens = 4096;
  cfg.block_size = 4;
  Engine e(m, cfg);
  RequestParams gen;
  gen.prompt = inputs[0];
  gen.sampling.temperature = 0.0f;
  gen.stop.max_tokens = 4;
  e.submit(gen, [](const EngineEvent&) {});
  e.run_until_idle();
  EmbedResult r;
  e.submit(embed_params(inputs[0], Pooling::Mean), collect(&r));
  e.run_until_idle();
  EXPECT_EQ(r.usage.cached_prompt_tokens, 0);
  EXPECT_LE(rel_diff(r.embedding, fresh[0].embedding), 1e-6);
  // A generation request after it does hit the blocks it published.
  RequestResult after;
  Collector c;
  e.submit(gen, c.callback(&after));
  e.run_until_idle();
  EXPECT_GT(after.usage.cached_prompt_tokens, 0);
}

// Requests preempted midway are recomputed and each position counts once: a generation request
// that grows in a small KV pool preempts the embedding requests admitted after it.
TEST(EngineEmbeddings, PreemptedRequestsPoolEveryPositionOnce) {
  Model& m = *stories().model;
  auto inputs = stories_inputs();
  EngineConfig cfg;
  cfg.block_size = 2;
  cfg.max_batched_tokens = 6;
  cfg.kv_cache_tokens = 24;
  cfg.prefix_caching = false;
  Engine e(m, cfg);
  RequestResult gen;
  Collector c;
  e.submit(greedy_params(m, "Once upon a time", 16), c.callback(&gen));
  std::vector<EmbedResult> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    e.submit(embed_params(inputs[i], Pooling::Mean), collect(&out[i]));
  e.run_until_idle();
  EXPECT_GT(e.stats().preemptions, 0);
  EXPECT_TRUE(gen.done);
  for (size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(out[i].finish, FinishReason::Stop) << i;
    const auto alone = embed_all(m, {inputs[i]}, Pooling::Mean);
    EXPECT_LE(rel_diff(out[i].embedding, alone[0].embedding), kChunkingTolerance) << i;
  }
  EXPECT_EQ(e.stats().kv_blocks_used, 0);  // every block freed at the end
}

// Embedding and generation requests share a batch; the generation is unaffected.
TEST(EngineEmbeddings, MixedWithGenerationLeavesTheGenerationUnchanged) {
  Model& m = *stories().model;
  const auto inputs = stories_inputs();
  EngineConfig cfg;
  cfg.kv_cache_tokens = 4096;
  cfg.max_batched_tokens = 6;
  auto run_gen = [&](bool with_embeddings) {
    Engine e(m, cfg);
    RequestResult g;
    Collector c;
    e.submit(greedy_params(m, "Once upon a time", 24), c.callback(&g));
    std::vector<EmbedResult> out(inputs.size());
    if (with_embeddings)
      for (size_t i = 0; i < inputs.size(); ++i)
        e.submit(embed_params(inputs[i], Pooling::Last), collect(&out[i]));
    e.run_until_idle();
    for (const auto& r : out)
      if (with_embeddings) {
        EXPECT_EQ(r.finish, FinishReason::Stop);
      }
    return g.choices[0].tokens;
  };
  EXPECT_EQ(run_gen(true), run_gen(false));
}

TEST(EngineEmbeddings, InvalidEmbeddingRequestsAreRejected) {
  Model& m = *stories().model;
  EngineConfig cfg;
  cfg.kv_cache_tokens = 1024;
  cfg.max_model_len = 512;
  Engine e(m, cfg);
  RequestParams p = embed_params({1, 2, 3}, Pooling::Mean);
  p.n = 2;
  EXPECT_THROW(e.submit(p, [](const EngineEvent&) {}), Error);
  p = embed_params({1, 2, 3}, Pooling::Mean);
  p.stop.max_tokens = 4;
  EXPECT_THROW(e.submit(p, [](const EngineEvent&) {}), Error);
  p = embed_params(std::vector<int32_t>(600, 5), Pooling::Mean);  // beyond the model length
  EXPECT_THROW(e.submit(p, [](const EngineEvent&) {}), Error);
}

// llama.cpp's --embd-normalize, from the definitions: p-norms, max-abs scaled to 32760.
TEST(EmbeddingNormalize, MatchesTheDefinitions) {
  auto norm = [](std::vector<float> v, int32_t p) {
    normalize_embedding(v, p);
    return v;
  };
  EXPECT_EQ(norm({3, -4}, -1), (std::vector<float>{3, -4}));
  const auto l2 = norm({3, -4}, 2);
  EXPECT_FLOAT_EQ(l2[0], 0.6f);
  EXPECT_FLOAT_EQ(l2[1], -0.8f);
  const auto l1 = norm({3, -4}, 1);
  EXPECT_FLOAT_EQ(l1[0], 3.0f / 7.0f);
  EXPECT_FLOAT_EQ(l1[1], -4.0f / 7.0f);
  const auto mx = norm({3, -4}, 0);
  EXPECT_FLOAT_EQ(mx[0], 3.0f * 32760.0f / 4.0f);
  EXPECT_FLOAT_EQ(mx[1], -32760.0f);
  const auto l3 = norm({3, -4}, 3);
  const double n3 = std::cbrt(27.0 + 64.0);
  EXPECT_FLOAT_EQ(l3[0], static_cast<float>(3.0 / n3));
  EXPECT_FLOAT_EQ(l3[1], static_cast<float>(-4.0 / n3));
  EXPECT_EQ(norm({0, 0}, 2), (std::vector<float>{0, 0}));
  EXPECT_THROW(norm({1}, -2), Error);
}

// Normalized engine output has unit norm.
TEST(EmbeddingNormalize, EngineOutputGetsUnitNorm) {
  Model& m = *stories().model;
  for (auto& r : embed_all(m, stories_inputs(), Pooling::Mean)) {
    normalize_embedding(r.embedding, 2);
    double s = 0.0;
    for (float x : r.embedding) s += double{x} * x;
    EXPECT_NEAR(std::sqrt(s), 1.0, 1e-6);
  }
}

TEST(EmbeddingPooling, NamesAndModelMetadata) {
  EXPECT_EQ(parse_pooling("mean"), Pooling::Mean);
  EXPECT_EQ(parse_pooling("cls"), Pooling::Cls);
  EXPECT_EQ(parse_pooling("last"), Pooling::Last);
  EXPECT_THROW(parse_pooling("none"), Error);
  Metadata md;
  EXPECT_FALSE(model_pooling(md, "llama"));
  md.add("llama.pooling_type", GgufValue::of_u32(3));
  EXPECT_EQ(model_pooling(md, "llama"), Pooling::Last);
  md.set("llama.pooling_type", GgufValue::of_u32(4));  // rank: no embedding per input
  EXPECT_FALSE(model_pooling(md, "llama"));
}

}  // namespace
}  // namespace strata::test
