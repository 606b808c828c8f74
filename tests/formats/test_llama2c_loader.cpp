// llama2.c checkpoints against llama.cpp's conversion of the same weights (stories260K.gguf),
// and hand-made checkpoints with a separate classifier.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/gguf_reader.h"
#include "formats/llama2c_loader.h"

namespace strata {
namespace {

const std::string kDir = "models/stories260K/";

TEST(Llama2cLoader, TensorsEqualLlamaCppConversion) {
  const auto ours = open_model_file(test::shared_path(kDir + "stories260K.bin"));
  const auto ref = GgufFile::open(test::shared_path(kDir + "stories260K.gguf"));
  EXPECT_EQ(ours->format(), ModelFormat::Llama2c);
  // The checkpoint shares its classifier with the embedding (positive vocab_size): llama.cpp's
  // converter writes output.weight as a copy, Strata leaves it out.
  EXPECT_EQ(ours->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(ours->tensors().size() + 1, ref->tensors().size());
  for (const TensorInfo& r : ref->tensors()) {
    if (r.name == "output.weight") continue;
    SCOPED_TRACE(r.name);
    const TensorInfo* t = ours->find_tensor(r.name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, r.type);
    EXPECT_EQ(t->n_dims, r.n_dims);
    EXPECT_EQ(t->ne, r.ne);
    ASSERT_EQ(t->nbytes, r.nbytes);
    EXPECT_EQ(std::memcmp(t->data, r.data, r.nbytes), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->data) % 4, 0u);
  }
}

TEST(Llama2cLoader, MetadataMatchesLlamaCppConversion) {
  const auto ours = open_model_file(test::shared_path(kDir + "stories260K.bin"));
  const auto ref = GgufFile::open(test::shared_path(kDir + "stories260K.gguf"));
  const Metadata& a = ours->metadata();
  const Metadata& b = ref->metadata();
  for (const char* key :
       {"llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
        "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
        "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
    EXPECT_EQ(a.get_int(key), b.get_int(key)) << key;
  EXPECT_EQ(a.find("llama.block_count")->type(), GgufType::UINT32);
  EXPECT_EQ(a.string_or("general.architecture", ""), "llama");
  EXPECT_EQ(a.string_or("tokenizer.ggml.model", ""), "llama");
  EXPECT_EQ(a.get_double("llama.attention.layer_norm_rms_epsilon"),
            b.get_double("llama.attention.layer_norm_rms_epsilon"));
  EXPECT_EQ(a.get_double("llama.rope.freq_base"), 10000.0);
  // seq_len of the checkpoint header (bytes 24..27 = 512); llama.cpp's converter writes its own
  // default context instead, so this one is checked against the header.
  EXPECT_EQ(a.get_int("llama.context_length"), 512);
  EXPECT_EQ(a.get_bool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(a.get_bool("tokenizer.ggml.add_eos_token"), false);

  const GgufArray* tokens = a.get_array("tokenizer.ggml.tokens");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->strings, b.get_array("tokenizer.ggml.tokens")->strings);
  EXPECT_EQ(a.get_array("tokenizer.ggml.scores")->f32, b.get_array("tokenizer.ggml.scores")->f32);
  EXPECT_EQ(a.get_array("tokenizer.ggml.token_type")->i32, b.get_array("tokenizer.ggml.token_type")->i32);
}

TEST(Llama2cLoader, ExplicitTokenizerPathAndMismatch) {
  const auto f =
      Llama2cFile::open(test::shared_path(kDir + "stories260K.bin"), test::shared_path(kDir + "tok512.bin"));
  EXPECT_EQ(f->tokenizer_path(), test::shared_path(kDir + "tok512.bin"));
  EXPECT_EQ(f->header().vocab_size, 512);
  EXPECT_EQ(f->header().seq_len, 512);
  test::TempDir dir;
  test::ByteBuilder tok;
  tok.i32(5);
  for (const char* s : {"<unk>", "a", "b"}) tok.f32(0).i32(static_cast<int32_t>(std::strlen(s))).raw(s);
  test::write_bytes(dir.file("tok3.bin"), tok.buf);
  try {
    Llama2cFile::open(test::shared_path(kDir + "stories260K.bin"), dir.file("tok3.bin"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("tok3.bin") + ": llama2.c tokenizer has 3 tokens, the model has 512");
  }
}

// A tiny checkpoint: dim 8, hidden 12, 1 layer, 2 heads, 1 kv head (head_dim 4, kv_dim 4),
// vocab 5 with a separate classifier (vocab_size -5), seq_len 3. Float i of the weights = i.
std::string tiny_checkpoint(int32_t vocab_field, size_t drop_floats = 0) {
  test::ByteBuilder b;
  for (int32_t v : {8, 12, 1, 2, 1, vocab_field, 3}) b.i32(v);
  // emb 40, att_norm 8, wq 64, wk 32, wv 32, wo 64, ffn_norm 8, w1 96, w2 96, w3 96, final 8,
  // rope 3*2*2 = 12, wcls 40 (when separate).
  const size_t n =
      40 + 8 + 64 + 32 + 32 + 64 + 8 + 96 * 3 + 8 + 12 + (vocab_field < 0 ? 40 : 0) - drop_floats;
  for (size_t i = 0; i < n; ++i) b.f32(static_cast<float>(i));
  return b.buf;
}

std::string tiny_tokenizer() {
  test::ByteBuilder b;
  b.i32(6);
  const std::pair<const char*, float> toks[] = {
      {"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}, {"<0x41>", 0}, {" hi", -1.5f}};
  for (const auto& [s, score] : toks) b.f32(score).i32(static_cast<int32_t>(std::strlen(s))).raw(s);
  return b.buf;
}

TEST(Llama2cLoader, SeparateClassifierAndTokenTypes) {
  test::TempDir dir;
  test::write_bytes(dir.file("tiny.bin"), tiny_checkpoint(-5));
  test::write_bytes(dir.file("tokenizer.bin"), tiny_tokenizer());
  const auto f = open_model_file(dir.file("tiny.bin"));
  ASSERT_EQ(f->format(), ModelFormat::Llama2c);
  EXPECT_EQ(f->tensors().size(), 3u + 9u);
  auto first = [&](const char* name) { return static_cast<const float*>(f->find_tensor(name)->data)[0]; };
  // Offsets in floats, derived by hand from the layout above.
  EXPECT_EQ(first("token_embd.weight"), 0);
  EXPECT_EQ(first("blk.0.attn_norm.weight"), 40);
  EXPECT_EQ(first("blk.0.attn_q.weight"), 48);
  EXPECT_EQ(first("blk.0.attn_k.weight"), 112);
  EXPECT_EQ(first("blk.0.attn_v.weight"), 144);
  EXPECT_EQ(first("blk.0.attn_output.weight"), 176);
  EXPECT_EQ(first("blk.0.ffn_norm.weight"), 240);
  EXPECT_EQ(first("blk.0.ffn_gate.weight"), 248);
  EXPECT_EQ(first("blk.0.ffn_down.weight"), 344);
  EXPECT_EQ(first("blk.0.ffn_up.weight"), 440);
  EXPECT_EQ(first("output_norm.weight"), 536);
  EXPECT_EQ(first("output.weight"), 556);  // after the 12 floats of rope tables
  const TensorInfo* out = f->find_tensor("output.weight");
  EXPECT_EQ(out->ne, (std::array<int64_t, 4>{8, 5, 1, 1}));
  EXPECT_EQ(static_cast<const float*>(out->data)[39], 595);
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->ne, (std::array<int64_t, 4>{8, 4, 1, 1}));
  EXPECT_EQ(f->find_tensor("blk.0.ffn_down.weight")->ne, (std::array<int64_t, 4>{12, 8, 1, 1}));
  EXPECT_EQ(f->find_tensor("output_norm.weight")->n_dims, 1);
  EXPECT_EQ(f->metadata().get_int("llama.rope.dimension_count"), 4);

  const Metadata& md = f->metadata();
  EXPECT_EQ(md.get_array("tokenizer.ggml.tokens")->strings,
            (std::vector<std::string>{"<unk>", "<s>", "</s>", "<0x41>", "\xe2\x96\x81hi"}));
  EXPECT_EQ(md.get_array("tokenizer.ggml.token_type")->i32, (std::vector<int32_t>{2, 3, 3, 6, 1}));
  EXPECT_EQ(md.get_array("tokenizer.ggml.scores")->f32, (std::vector<float>{0, 0, 0, 0, -1.5f}));
}

std::string open_error(const std::string& path) {
  try {
    open_model_file(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Llama2cLoader, RejectsBadCheckpoints) {
  test::TempDir dir;
  test::write_bytes(dir.file("tokenizer.bin"), tiny_tokenizer());
  test::write_bytes(dir.file("short.bin"), tiny_checkpoint(-5, 1));  // 28 + 4 * (596 - 1) bytes
  EXPECT_NE(open_error(dir.file("short.bin")).find("unrecognized model format"), std::string::npos);
  try {
    Llama2cFile::open(dir.file("short.bin"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("short.bin") +
                  ": llama2.c header (dim 8, 1 layers, vocab -5) does not match the file size 2408");
  }
  test::ByteBuilder v1;
  v1.u32(0x616b3432u).i32(1).raw(std::string(248, '\0'));
  test::write_bytes(dir.file("v1.bin"), v1.buf);
  auto llama2c_error = [](const std::string& path) {
    try {
      Llama2cFile::open(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(
      llama2c_error(dir.file("v1.bin")),
      dir.file("v1.bin") +
          ": llama2.c export format version 1 is not supported (only the legacy format written by export.py "
          "--version 0)");
  std::string odd_heads = tiny_checkpoint(5);
  const int32_t three = 3;
  std::memcpy(odd_heads.data() + 12, &three, 4);  // 3 heads do not divide dim 8
  test::write_bytes(dir.file("odd.bin"), odd_heads);
  EXPECT_NE(llama2c_error(dir.file("odd.bin")).find("head size must be even"), std::string::npos);

  // A valid checkpoint whose directory holds no tokenizer.
  test::TempDir lonely;
  test::write_bytes(lonely.file("m.bin"), tiny_checkpoint(5));
  EXPECT_EQ(open_error(lonely.file("m.bin")),
            lonely.file("m.bin") +
                ": no llama2.c tokenizer with 5 tokens found next to it (tokenizer.bin or "
                "tok*.bin); pass its path");
  // Shared classifier: no output.weight, and a tok*.bin is found.
  test::write_bytes(lonely.file("tok5.bin"), tiny_tokenizer());
  const auto shared = open_model_file(lonely.file("m.bin"));
  EXPECT_EQ(shared->find_tensor("output.weight"), nullptr);
  EXPECT_EQ(shared->tensors().size(), 2u + 9u);
}

}  // namespace
}  // namespace strata
