// Hugging Face directories: tinystories656k against the independent Python reference
// (tests/formats/hf_reference.py, which permutes q/k as llama.cpp's converter), and hand-made
// mistral (sharded, F16) and qwen2 (biases, BF16) directories with hand-derived expectations.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "core/check.h"
#include "core/fp16.h"
#include "format_test_util.h"
#include "formats/hf_loader.h"

namespace strata {
namespace {

using nlohmann::json;
const std::string kTiny = "models/tinystories656k";

TEST(HfLoader, TinyStoriesMatchesPythonReference) {
  const std::string dir = test::shared_path(kTiny);
  const auto r = test::run_command({"python3", test::source_dir() + "/tests/formats/hf_reference.py", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json ref = json::parse(r.out);
  const auto f = open_model_file(dir);
  ASSERT_EQ(f->format(), ModelFormat::HuggingFace);
  ASSERT_EQ(f->tensors().size(), ref.size());
  for (const TensorInfo& t : f->tensors()) {
    SCOPED_TRACE(t.name);
    ASSERT_TRUE(ref.contains(t.name));
    const json& e = ref[t.name];
    ASSERT_EQ(t.n_dims, static_cast<int>(e["ne"].size()));
    for (int d = 0; d < t.n_dims; ++d) EXPECT_EQ(t.ne[d], e["ne"][d].get<int64_t>());
    EXPECT_EQ(t.type, TensorType::F32);
    EXPECT_EQ(test::crc32(t.data, t.nbytes), e["crc32"].get<uint32_t>());
  }
  // Tied embeddings: the checkpoint stores only lm_head.weight; it becomes token_embd.
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f->tensors().front().name, "token_embd.weight");
  EXPECT_EQ(f->tensors().back().name, "output_norm.weight");
}

TEST(HfLoader, TinyStoriesMetadataFromConfig) {
  // Values of the fixture's config.json.
  const auto f = open_model_file(test::shared_path(kTiny));
  const Metadata& md = f->metadata();
  EXPECT_EQ(md.string_or("general.architecture", ""), "llama");
  EXPECT_EQ(md.get_int("llama.vocab_size"), 2048);
  EXPECT_EQ(md.get_int("llama.context_length"), 512);
  EXPECT_EQ(md.get_int("llama.embedding_length"), 128);
  EXPECT_EQ(md.get_int("llama.feed_forward_length"), 384);
  EXPECT_EQ(md.get_int("llama.block_count"), 2);
  EXPECT_EQ(md.get_int("llama.attention.head_count"), 8);
  EXPECT_EQ(md.get_int("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(md.get_int("llama.rope.dimension_count"), 16);
  EXPECT_EQ(md.get_double("llama.attention.layer_norm_rms_epsilon"), static_cast<double>(1e-6f));
  EXPECT_EQ(md.get_double("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(md.find("llama.block_count")->type(), GgufType::UINT32);
  EXPECT_FALSE(md.contains("llama.attention.key_length"));
  EXPECT_FALSE(md.contains("llama.rope.scaling.type"));
  // Tokenizer keys from tokenizer.json (add_hf_tokenizer_metadata): vocab_size 2048 tokens,
  // bos/eos 1 and 2 as in config.json.
  ASSERT_NE(md.get_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(md.get_array("tokenizer.ggml.tokens")->size(), 2048u);
  EXPECT_EQ(md.get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(md.get_int("tokenizer.ggml.eos_token_id"), 2);
}

// Rows of `n_rows` x `n_cols`, every element of row r equal to r (in fp16/bf16/f32 bits).
std::string rows_f16(int n_rows, int n_cols) {
  std::vector<uint16_t> v;
  for (int r = 0; r < n_rows; ++r)
    for (int c = 0; c < n_cols; ++c) v.push_back(f32_to_fp16(static_cast<float>(r)));
  return test::raw_values(v);
}
std::string rows_bf16(int n_rows, int n_cols) {
  std::vector<uint16_t> v;
  for (int r = 0; r < n_rows; ++r)
    for (int c = 0; c < n_cols; ++c) v.push_back(f32_to_bf16(static_cast<float>(r)));
  return test::raw_values(v);
}

// Row values of a 2-D (or 1-D: one element per row) tensor, decoded.
std::vector<float> row_values(const TensorInfo& t) {
  std::vector<float> out;
  const int64_t n_rows = t.n_dims == 1 ? t.ne[0] : t.ne[1], row = t.n_dims == 1 ? 1 : t.ne[0];
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto* p = static_cast<const uint16_t*>(t.data) + r * row;
    if (t.type == TensorType::F16)
      out.push_back(fp16_to_f32(*p));
    else if (t.type == TensorType::BF16)
      out.push_back(bf16_to_f32(*p));
    else
      out.push_back(static_cast<const float*>(t.data)[r * row]);
  }
  return out;
}

const char* kLayer = "model.layers.0.";

TEST(HfLoader, MistralShardedF16PermutesQK) {
  test::TempDir dir;
  json config = {{"architectures", {"MistralForCausalLM"}},
                 {"hidden_size", 8},
                 {"intermediate_size", 16},
                 {"num_hidden_layers", 1},
                 {"num_attention_heads", 2},
                 {"num_key_value_heads", 1},
                 {"vocab_size", 4},
                 {"max_position_embeddings", 64},
                 {"rms_norm_eps", 1e-5},
                 {"rope_theta", 1e6},
                 {"sliding_window", 32},
                 {"tie_word_embeddings", false},
                 {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}}};
  test::write_bytes(dir.file("config.json"), config.dump());
  const std::string L = kLayer;
  const std::string shard1 = test::make_safetensors({
      {"model.embed_tokens.weight", "F16", {4, 8}, rows_f16(4, 8)},
      {L + "input_layernorm.weight", "F16", {8}, rows_f16(8, 1)},
      {L + "post_attention_layernorm.weight", "F16", {8}, rows_f16(8, 1)},
      {L + "self_attn.q_proj.weight", "F16", {8, 8}, rows_f16(8, 8)},
      {L + "self_attn.k_proj.weight", "F16", {4, 8}, rows_f16(4, 8)},
      {L + "self_attn.v_proj.weight", "F16", {4, 8}, rows_f16(4, 8)},
      {L + "self_attn.o_proj.weight", "F16", {8, 8}, rows_f16(8, 8)},
      {L + "mlp.gate_proj.weight", "F16", {16, 8}, rows_f16(16, 8)},
      {L + "mlp.up_proj.weight", "F16", {16, 8}, rows_f16(16, 8)},
  });
  const std::string shard2 = test::make_safetensors({
      {L + "mlp.down_proj.weight", "F16", {8, 16}, rows_f16(8, 16)},
      {"model.norm.weight", "F16", {8}, rows_f16(8, 1)},
      {"lm_head.weight", "F16", {4, 8}, rows_f16(4, 8)},
  });
  test::write_bytes(dir.file("model-00001-of-00002.safetensors"), shard1);
  test::write_bytes(dir.file("model-00002-of-00002.safetensors"), shard2);
  json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", json::object()}};
  for (const auto* name : {"model.embed_tokens.weight", "model.layers.0.input_layernorm.weight",
                           "model.layers.0.post_attention_layernorm.weight",
                           "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                           "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                           "model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"})
    index["weight_map"][name] = "model-00001-of-00002.safetensors";
  for (const auto* name : {"model.layers.0.mlp.down_proj.weight", "model.norm.weight", "lm_head.weight"})
    index["weight_map"][name] = "model-00002-of-00002.safetensors";
  test::write_bytes(dir.file("model.safetensors.index.json"), index.dump());

  const auto f = open_model_file(dir.path());
  ASSERT_EQ(f->tensors().size(), 12u);
  const Metadata& md = f->metadata();
  EXPECT_EQ(md.string_or("general.architecture", ""), "mistral");
  EXPECT_EQ(md.get_int("mistral.attention.sliding_window"), 32);
  EXPECT_EQ(md.get_int("mistral.rope.dimension_count"), 4);
  EXPECT_EQ(md.get_double("mistral.rope.freq_base"), 1e6);
  EXPECT_EQ(md.get_string("mistral.rope.scaling.type"), "linear");
  EXPECT_EQ(md.get_double("mistral.rope.scaling.factor"), 2.0);
  EXPECT_EQ(md.get_int("mistral.context_length"), 64);

  const TensorInfo* q = f->find_tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->type, TensorType::F16);
  EXPECT_EQ(q->ne, (std::array<int64_t, 4>{8, 8, 1, 1}));
  // head_dim 4: new rows (2i+j) of a head take old rows j*2+i -> 0, 2, 1, 3.
  EXPECT_EQ(row_values(*q), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_EQ(row_values(*f->find_tensor("blk.0.attn_k.weight")), (std::vector<float>{0, 2, 1, 3}));
  EXPECT_EQ(row_values(*f->find_tensor("blk.0.attn_v.weight")), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(row_values(*f->find_tensor("blk.0.ffn_down.weight")),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->ne, (std::array<int64_t, 4>{16, 8, 1, 1}));
  ASSERT_NE(f->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f->tensors().back().name, "output.weight");
}

TEST(HfLoader, Qwen2BiasesBf16NoPermute) {
  test::TempDir dir;
  json config = {{"architectures", {"Qwen2ForCausalLM"}},
                 {"hidden_size", 8},
                 {"intermediate_size", 16},
                 {"num_hidden_layers", 1},
                 {"num_attention_heads", 2},
                 {"num_key_value_heads", 1},
                 {"vocab_size", 4},
                 {"sliding_window", 4096},
                 {"use_sliding_window", false},
                 {"tie_word_embeddings", true},
                 {"rope_scaling", nullptr}};
  test::write_bytes(dir.file("config.json"), config.dump());
  const std::string L = kLayer;
  test::write_bytes(dir.file("model.safetensors"),
                    test::make_safetensors({
                        {"model.embed_tokens.weight", "BF16", {4, 8}, rows_bf16(4, 8)},
                        {"lm_head.weight", "BF16", {4, 8}, rows_bf16(4, 8)},
                        {L + "self_attn.q_proj.weight", "BF16", {8, 8}, rows_bf16(8, 8)},
                        {L + "self_attn.q_proj.bias", "BF16", {8}, rows_bf16(8, 1)},
                        {L + "self_attn.k_proj.bias", "BF16", {4}, rows_bf16(4, 1)},
                        {L + "self_attn.rotary_emb.inv_freq", "F32", {2}, std::string(8, '\0')},
                    }));
  const auto f = open_model_file(dir.path());
  const Metadata& md = f->metadata();
  EXPECT_EQ(md.string_or("general.architecture", ""), "qwen2");
  EXPECT_FALSE(md.contains("qwen2.attention.sliding_window"));
  EXPECT_EQ(md.get_int("qwen2.context_length"), 32768);  // Qwen2Config's default
  EXPECT_EQ(f->find_tensor("output.weight"), nullptr);   // tied, lm_head dropped
  EXPECT_EQ(row_values(*f->find_tensor("blk.0.attn_q.weight")), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  const TensorInfo* qb = f->find_tensor("blk.0.attn_q.bias");
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ(qb->type, TensorType::BF16);
  EXPECT_EQ(qb->n_dims, 1);
  EXPECT_EQ(row_values(*qb), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(f->tensors().size(), 4u);  // inv_freq is skipped
}

TEST(HfLoader, LlamaBiasesArePermutedLikeWeights) {
  test::TempDir dir;
  json config = {{"architectures", {"LlamaForCausalLM"}},
                 {"hidden_size", 8},
                 {"intermediate_size", 16},
                 {"num_hidden_layers", 1},
                 {"num_attention_heads", 2},
                 {"vocab_size", 4},
                 {"head_dim", 4}};
  test::write_bytes(dir.file("config.json"), config.dump());
  std::vector<float> bias = {0, 1, 2, 3, 4, 5, 6, 7};
  test::write_bytes(
      dir.file("model.safetensors"),
      test::make_safetensors(
          {{"model.embed_tokens.weight", "F32", {4, 8}, std::string(128, '\0')},
           {std::string(kLayer) + "self_attn.q_proj.bias", "F32", {8}, test::raw_values(bias)}}));
  const auto f = open_model_file(dir.path());
  EXPECT_EQ(row_values(*f->find_tensor("blk.0.attn_q.bias")), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  EXPECT_EQ(f->metadata().get_int("llama.attention.key_length"), 4);
  EXPECT_EQ(f->metadata().get_int("llama.attention.head_count_kv"), 2);
}

TEST(HfLoader, Llama3RopeScalingKeys) {
  const Metadata md = hf_config_metadata(
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
          "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 10,
          "max_position_embeddings": 131072, "rope_theta": 500000.0,
          "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                           "original_max_position_embeddings": 8192, "rope_type": "llama3"}})",
      "cfg");
  EXPECT_EQ(md.get_string("llama.rope.scaling.type"), "llama3");
  EXPECT_EQ(md.get_double("llama.rope.scaling.factor"), 32.0);
  EXPECT_EQ(md.get_double("llama.rope.scaling.low_freq_factor"), 1.0);
  EXPECT_EQ(md.get_double("llama.rope.scaling.high_freq_factor"), 4.0);
  EXPECT_EQ(md.get_int("llama.rope.scaling.original_context_length"), 8192);
  EXPECT_EQ(md.get_double("llama.rope.freq_base"), 500000.0);
  EXPECT_EQ(md.get_int("llama.context_length"), 131072);
}

std::string config_error(const std::string& text) {
  try {
    hf_config_metadata(text, "cfg");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfLoader, RejectsBadConfigs) {
  const std::string base = R"("hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
      "num_attention_heads": 2, "vocab_size": 4)";
  EXPECT_EQ(
      config_error(R"({"architectures": ["GPT2LMHeadModel"], )" + base + "}"),
      "cfg: unsupported architecture 'GPT2LMHeadModel' (supported: LlamaForCausalLM, MistralForCausalLM, "
      "Qwen2ForCausalLM)");
  EXPECT_EQ(
      config_error(R"({"architectures": ["LlamaForCausalLM"], "rope_scaling": {"rope_type": "yarn"}, )" +
                   base + "}"),
      "cfg: unsupported rope_scaling type 'yarn' (supported: linear, llama3)");
  EXPECT_EQ(config_error(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8})"),
            "cfg: config.json lacks \"num_attention_heads\"");
  EXPECT_EQ(
      config_error(R"({"architectures": ["LlamaForCausalLM"], "num_key_value_heads": -2, )" + base + "}"),
      "cfg: config.json \"num_key_value_heads\" must be a positive integer, got -2");
  EXPECT_EQ(config_error("{not json"), "cfg: config.json is not a valid JSON object");
  EXPECT_EQ(
      config_error(R"({"architectures": ["LlamaForCausalLM"], "num_key_value_heads": 3, )" + base + "}"),
      "cfg: 2 attention heads, 3 kv heads and head_dim 4 (heads must be a multiple of kv heads, head_dim "
      "even)");
}

std::string dir_error(const std::vector<test::SafetensorsEntry>& tensors,
                      const std::string& arch = "LlamaForCausalLM") {
  test::TempDir dir;
  json config = {{"architectures", {arch}}, {"hidden_size", 8},         {"intermediate_size", 16},
                 {"num_hidden_layers", 1},  {"num_attention_heads", 2}, {"vocab_size", 4}};
  test::write_bytes(dir.file("config.json"), config.dump());
  test::write_bytes(dir.file("model.safetensors"), test::make_safetensors(tensors));
  try {
    open_model_file(dir.path());
  } catch (const Error& e) {
    const std::string msg = e.what();
    const size_t at = msg.find(dir.path());
    return at == std::string::npos ? msg : msg.substr(0, at) + "DIR" + msg.substr(at + dir.path().size());
  }
  return "";
}

TEST(HfLoader, RejectsBadTensors) {
  const std::string emb_bytes(128, '\0');
  EXPECT_EQ(
      dir_error({{"model.embed_tokens.weight", "I8", {4, 8}, std::string(32, '\0')}}),
      "DIR/model.safetensors: tensor 'model.embed_tokens.weight' has dtype I8 (supported: F32, F16, BF16)");
  EXPECT_EQ(dir_error({{"model.embed_tokens.weight", "F32", {4, 8}, emb_bytes},
                       {"model.layers.1.input_layernorm.weight", "F32", {8}, std::string(32, '\0')}}),
            "DIR/model.safetensors: unexpected tensor 'model.layers.1.input_layernorm.weight'");
  EXPECT_EQ(dir_error({{"model.embed_tokens.weight", "F32", {4, 8}, emb_bytes},
                       {"model.vision_tower.weight", "F32", {8}, std::string(32, '\0')}}),
            "DIR/model.safetensors: unexpected tensor 'model.vision_tower.weight'");
  EXPECT_EQ(dir_error({{"model.embed_tokens.weight", "F32", {4, 8}, emb_bytes},
                       {"model.layers.0.self_attn.q_proj.weight", "F32", {6, 8}, std::string(192, '\0')}}),
            "DIR/model.safetensors: tensor 'model.layers.0.self_attn.q_proj.weight' has 6 rows, expected 8 "
            "(heads x "
            "head_dim)");
  EXPECT_EQ(dir_error({{"model.norm.weight", "F32", {8}, std::string(32, '\0')}}),
            "DIR: no model.embed_tokens.weight (nor a tied lm_head.weight)");
}

TEST(HfLoader, RejectsBadShardIndex) {
  test::TempDir dir;
  test::write_bytes(dir.file("config.json"),
                    R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 8, "intermediate_size": 16,
                        "num_hidden_layers": 1, "num_attention_heads": 2, "vocab_size": 4})");
  test::write_bytes(dir.file("model.safetensors.index.json"),
                    R"({"weight_map": {"model.embed_tokens.weight": "../../etc/passwd"}})");
  try {
    open_model_file(dir.path());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), dir.file("model.safetensors.index.json") +
                                         ": tensor 'model.embed_tokens.weight' names an invalid shard file");
  }
  test::TempDir empty;
  try {
    open_model_file(empty.path());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              empty.path() + ": a directory without config.json is not a Hugging Face model");
  }
}

}  // namespace
}  // namespace strata
