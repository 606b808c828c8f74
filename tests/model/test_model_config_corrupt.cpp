// Well-formed GGUF files whose architecture hyper-parameters (or the tensors they point to) are
// hostile: out-of-range values are rejected at load with one line naming the key or tensor. The
// byte-level corrupt-file corpus is tests/formats/test_gguf_corrupt.cpp.
#include <gtest/gtest.h>

#include <functional>

#include "common/fixtures.h"
#include "core/check.h"
#include "formats/format_test_util.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "model/model.h"
#include "model/model_config.h"

namespace strata {
namespace {

// ---- hyper-parameters -------------------------------------------------------------------------
// A well-formed file whose architecture hyper-parameters are out of range (expert counts, lora
// ranks, window patterns, rope factors, soft-caps, ...) is rejected with one line naming the key
// or the missing piece, before any weight is touched.

struct HyperCase {
  const char* fixture;  // models/arch/FIXTURE-f16.gguf
  const char* what;
  std::function<void(Metadata&)> corrupt;
  const char* expected;
};

TEST(GgufCorrupt, HyperParametersOutOfRangeAreRejected) {
  auto u32 = [](uint32_t v) { return GgufValue::of_u32(v); };
  auto f32 = [](float v) { return GgufValue::of_f32(v); };
  const std::vector<HyperCase> cases = {
      {"qwen3moe", "no experts", [&](Metadata& m) { m.set("qwen3moe.expert_count", u32(0)); },
       "needs metadata 'qwen3moe.expert_count' > 0"},
      {"qwen3moe", "too many experts", [&](Metadata& m) { m.set("qwen3moe.expert_count", u32(1u << 20)); },
       "metadata 'qwen3moe.expert_count' = 1048576 is out of range"},
      {"qwen3moe", "more experts used than exist",
       [&](Metadata& m) { m.set("qwen3moe.expert_used_count", u32(5)); },
       "metadata 'qwen3moe.expert_used_count' = 5 is out of range [1, 4]"},
      {"qwen3moe", "no experts used", [&](Metadata& m) { m.erase("qwen3moe.expert_used_count"); },
       "missing metadata key 'qwen3moe.expert_used_count'"},
      {"llama-moe", "experts used without experts", [&](Metadata& m) { m.set("llama.expert_count", u32(0)); },
       "'llama.expert_used_count' is set but"},
      {"deepseek2", "groups that do not divide the experts",
       [&](Metadata& m) { m.set("deepseek2.expert_group_count", u32(3)); }, "cannot form 3 expert groups"},
      {"deepseek2", "groups leaving too few experts",
       [&](Metadata& m) { m.set("deepseek2.expert_group_used_count", u32(0)); },
       "leaves fewer than 2 experts"},
      {"deepseek2", "unknown gating", [&](Metadata& m) { m.set("deepseek2.expert_gating_func", u32(7)); },
       "unsupported expert gating function"},
      {"deepseek2", "negative weights scale",
       [&](Metadata& m) { m.set("deepseek2.expert_weights_scale", f32(-1)); },
       "metadata 'deepseek2.expert_weights_scale' = -1 is out of range"},
      {"deepseek2", "dense layers beyond the model",
       [&](Metadata& m) { m.set("deepseek2.leading_dense_block_count", u32(99)); },
       "metadata 'deepseek2.leading_dense_block_count' = 99 is out of range [0, 3]"},
      {"deepseek2", "zero kv lora rank",
       [&](Metadata& m) { m.set("deepseek2.attention.kv_lora_rank", u32(0)); },
       "metadata 'deepseek2.attention.kv_lora_rank' = 0 is out of range"},
      {"deepseek2", "kv lora rank against key length",
       [&](Metadata& m) { m.set("deepseek2.attention.kv_lora_rank", u32(100)); },
       "MLA needs head_count_kv 1"},
      {"deepseek2", "huge q lora rank",
       [&](Metadata& m) { m.set("deepseek2.attention.q_lora_rank", u32(1u << 30)); },
       "metadata 'deepseek2.attention.q_lora_rank' = 1073741824 is out of range"},
      {"deepseek2", "pre-MLA layout", [&](Metadata& m) { m.erase("deepseek2.attention.key_length_mla"); },
       "predates llama.cpp's MLA layout"},
      {"gemma3", "window pattern beyond any model",
       [&](Metadata& m) { m.set("gemma3.attention.sliding_window_pattern", u32(1u << 30)); },
       "metadata 'gemma3.attention.sliding_window_pattern' = 1073741824 is out of range"},
      {"gemma3", "window pattern of the wrong length",
       [&](Metadata& m) {
         GgufArray a;
         a.elem_type = GgufType::BOOL;
         a.values = {GgufValue::of_bool(true), GgufValue::of_bool(false)};
         m.set("gemma3.attention.sliding_window_pattern", GgufValue::of_array(std::move(a)));
       },
       "must be 3 bools, one per layer"},
      {"gemma2", "negative soft-cap", [&](Metadata& m) { m.set("gemma2.attn_logit_softcapping", f32(-5)); },
       "metadata 'gemma2.attn_logit_softcapping' = -5 is out of range"},
      {"gemma2", "NaN final soft-cap",
       [&](Metadata& m) { m.set("gemma2.final_logit_softcapping", f32(NAN)); },
       "metadata 'gemma2.final_logit_softcapping' = nan is out of range"},
      {"gpt-oss", "YaRN shrinking the context",
       [&](Metadata& m) { m.set("gpt-oss.rope.scaling.factor", f32(0.5f)); },
       "metadata 'gpt-oss.rope.scaling.factor' = 0.5 is out of range"},
      {"gpt-oss", "infinite YaRN factor",
       [&](Metadata& m) { m.set("gpt-oss.rope.scaling.factor", f32(INFINITY)); },
       "metadata 'gpt-oss.rope.scaling.factor' = inf is out of range"},
      {"gpt-oss", "zero beta", [&](Metadata& m) { m.set("gpt-oss.rope.scaling.yarn_beta_fast", f32(0)); },
       "metadata 'gpt-oss.rope.scaling.yarn_beta_fast' = 0 is out of range"},
      {"gpt-oss", "zero original context",
       [&](Metadata& m) { m.set("gpt-oss.rope.scaling.original_context_length", u32(0)); },
       "metadata 'gpt-oss.rope.scaling.original_context_length' = 0 is out of range"},
      {"phi3", "zero attention factor", [&](Metadata& m) { m.set("phi3.rope.scaling.attn_factor", f32(0)); },
       "metadata 'phi3.rope.scaling.attn_factor' = 0 is out of range"},
      {"phi3", "unknown rope scaling",
       [&](Metadata& m) { m.set("phi3.rope.scaling.type", GgufValue::of_string("dynamic")); },
       "unsupported rope scaling type 'dynamic'"},
      {"olmo2", "odd rope dimensions", [&](Metadata& m) { m.set("olmo2.rope.dimension_count", u32(63)); },
       "rope dimension count 63 is odd"},
      {"qwen3", "key and value widths differ",
       [&](Metadata& m) { m.set("qwen3.attention.value_length", u32(64)); },
       "key_length 128 != value_length 64 is only supported with MLA"},
      {"qwen3", "head too wide",
       [&](Metadata& m) {
         m.set("qwen3.attention.key_length", u32(1024));
         m.set("qwen3.attention.value_length", u32(1024));
       },
       "attention head dimension 1024 unsupported"},
      {"deepseek2", "too many heads on the latent",
       [&](Metadata& m) { m.set("deepseek2.attention.head_count", u32(256)); },
       "query heads per kv head exceed the 128"},
      {"qwen3", "unsupported architecture",
       [&](Metadata& m) { m.set("general.architecture", GgufValue::of_string("mamba")); },
       "unsupported architecture 'mamba' (supported: llama, mistral, qwen2, qwen3, qwen3moe, gemma2, gemma3, "
       "phi3, "
       "olmo2, deepseek2, gpt-oss)"},
  };
  for (const HyperCase& c : cases) {
    SCOPED_TRACE(std::string(c.fixture) + ": " + c.what);
    const auto f = GgufFile::open(test::shared_path(std::string("models/arch/") + c.fixture + "-f16.gguf"));
    Metadata md = f->metadata();
    ASSERT_NO_THROW(ModelConfig::from_metadata(md));  // the fixture itself is fine
    c.corrupt(md);
    try {
      ModelConfig::from_metadata(md);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    }
  }
}

// Hostile values inside the tensors a hyper-parameter points to: LongRoPE factors that are not
// positive and attention sinks that are not finite are rejected at load, naming the tensor.
TEST(GgufCorrupt, HostileRopeFactorsAndSinksAreRejected) {
  test::TempDir dir;
  auto backend = make_cpu_backend(1);
  struct TensorCase {
    const char* fixture;
    const char* tensor;
    std::vector<int64_t> ne;
    float value;
    const char* expected;
  };
  const std::vector<TensorCase> cases = {
      {"phi3",
       "rope_factors_short.weight",
       {32},
       -1.0f,
       "tensor 'rope_factors_short.weight' has a non-positive factor"},
      {"phi3",
       "rope_factors_short.weight",
       {32},
       NAN,
       "tensor 'rope_factors_short.weight' has a non-finite value"},
      {"phi3",
       "rope_factors_short.weight",
       {31},
       1.0f,
       "tensor 'rope_factors_short.weight' has shape [31], expected [32]"},
  };
  for (const TensorCase& c : cases) {
    SCOPED_TRACE(c.expected);
    const auto f = GgufFile::open(test::shared_path(std::string("models/arch/") + c.fixture + "-f16.gguf"));
    GgufWriter w;
    w.set_metadata(f->metadata());
    for (const TensorInfo& t : f->tensors())
      w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims)),
                   t.data);
    const std::vector<float> values(static_cast<size_t>(c.ne[0]), c.value);
    w.add_tensor(c.tensor, TensorType::F32, c.ne, values.data());
    const std::string path = dir.file("hostile.gguf");
    w.write(path);
    try {
      Model::load(path, *backend);
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.expected), std::string::npos) << e.what();
    }
  }
  // gpt-oss's sinks: a non-finite sink logit.
  const auto f = GgufFile::open(test::shared_path("models/arch/gpt-oss-f16.gguf"));
  GgufWriter w;
  w.set_metadata(f->metadata());
  const std::vector<float> nan_sinks(4, NAN);
  for (const TensorInfo& t : f->tensors()) {
    const void* data =
        t.name == "blk.1.attn_sinks.weight" ? static_cast<const void*>(nan_sinks.data()) : t.data;
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + std::max(1, t.n_dims)),
                 data);
  }
  const std::string path = dir.file("sinks.gguf");
  w.write(path);
  try {
    Model::load(path, *backend);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'blk.1.attn_sinks.weight' has a non-finite value"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace strata
