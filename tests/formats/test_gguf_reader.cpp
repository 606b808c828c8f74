// GgufFile against an independent Python parser (tests/formats/gguf_reference.py) on every GGUF
// fixture made by llama.cpp, and against hand-made images with known contents.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/gguf_reader.h"
#include "gguf_reference_check.h"

namespace strata {
namespace {

using nlohmann::json;
using test::ByteBuilder;
using test::expect_matches_reference;

TEST(GgufReader, Stories260KMatchesPythonReference) {
  expect_matches_reference(test::shared_path("models/stories260K/stories260K.gguf"));
}

TEST(GgufReader, Stories260KHasTheDocumentedShape) {
  // Facts from the fixture's documentation: dim 64, 5 layers, 8/4 heads, ffn 172, vocab 512,
  // F32, tied embeddings (llama.cpp's llama2.c converter still writes output.weight, as a copy).
  const auto f = GgufFile::open(test::shared_path("models/stories260K/stories260K.gguf"));
  const Metadata& md = f->metadata();
  EXPECT_EQ(md.string_or("general.architecture", ""), "llama");
  EXPECT_EQ(md.int_or("llama.embedding_length", 0), 64);
  EXPECT_EQ(md.int_or("llama.block_count", 0), 5);
  EXPECT_EQ(md.int_or("llama.attention.head_count", 0), 8);
  EXPECT_EQ(md.int_or("llama.attention.head_count_kv", 0), 4);
  EXPECT_EQ(md.int_or("llama.feed_forward_length", 0), 172);
  ASSERT_NE(md.get_array("tokenizer.ggml.tokens"), nullptr);
  EXPECT_EQ(md.get_array("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(f->tensors().size(), 3u + 5u * 9u);
  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  const TensorInfo* out = f->find_tensor("output.weight");
  ASSERT_NE(emb, nullptr);
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(out->nbytes, emb->nbytes);
  EXPECT_EQ(std::memcmp(out->data, emb->data, emb->nbytes), 0);
  EXPECT_EQ(emb->type, TensorType::F32);
  EXPECT_EQ(emb->ne[0], 64);
  EXPECT_EQ(emb->ne[1], 512);
  const TensorInfo* down = f->find_tensor("blk.4.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->ne[0], 172);
  EXPECT_EQ(down->ne[1], 64);
  // Zero-copy: data points into the file's mapping, in file order.
  EXPECT_EQ(static_cast<const uint8_t*>(emb->data) - static_cast<const uint8_t*>(f->tensors()[0].data),
            static_cast<ptrdiff_t>(emb->file_offset - f->tensors()[0].file_offset));
}

TEST(GgufReader, SynthTinyAllTypesMatchPythonReference) {
  for (const char* type : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k_s",
                           "q4_k_s", "q4_k_m", "q5_k_s", "q6_k"})
    expect_matches_reference(test::shared_path(concat("models/synth-tiny/synth-tiny-", type, ".gguf")));
}

TEST(GgufReader, VocabOnlyFilesOpenAndMatchPythonReference) {
  for (const char* name : {"deepseek-llm", "falcon", "gpt-2", "llama-spm", "mpt", "phi-3", "starcoder"}) {
    const std::string path = test::shared_path(concat("vocab/ggml-vocab-", name, ".gguf"));
    expect_matches_reference(path);
    EXPECT_TRUE(GgufFile::open(path)->tensors().empty());
  }
}

TEST(GgufReader, OpenModelFileDetectsGguf) {
  const auto f = open_model_file(test::shared_path("models/synth-tiny/synth-tiny-q4_k_m.gguf"));
  EXPECT_EQ(f->format(), ModelFormat::Gguf);
  EXPECT_NE(dynamic_cast<GgufFile*>(f.get()), nullptr);
}

// A v2 image with one key of every type (incl. a nested array), alignment 64 and two tensors.
std::string handmade_image(uint32_t version) {
  ByteBuilder b;
  b.u32(kGgufMagic).u32(version).u64(2).u64(17);
  b.str("k.u8").u32(0).u8(200);
  b.str("k.i8").u32(1).put<int8_t>(-100);
  b.str("k.u16").u32(2).put<uint16_t>(60000);
  b.str("k.i16").u32(3).put<int16_t>(-30000);
  b.str("k.u32").u32(4).u32(4000000000u);
  b.str("k.i32").u32(5).i32(-2000000000);
  b.str("k.f32").u32(6).f32(1.5f);
  b.str("k.bool").u32(7).u8(1);
  b.str("k.str").u32(8).str(std::string("a\0b", 3));
  b.str("k.u64").u32(10).u64(18000000000000000000ull);
  b.str("k.i64").u32(11).put<int64_t>(-9000000000000000000ll);
  b.str("k.f64").u32(12).put<double>(-0.25);
  b.str("k.arr_str").u32(9).u32(8).u64(2).str("x").str("");
  b.str("k.arr_f32").u32(9).u32(6).u64(3).f32(1).f32(-2).f32(0.5f);
  b.str("k.arr_nested").u32(9).u32(9).u64(2).u32(2).u64(2).put<uint16_t>(7).put<uint16_t>(8).u32(2).u64(0);
  b.str("k.arr_empty_i32").u32(9).u32(5).u64(0);
  b.str("general.alignment").u32(4).u32(64);
  b.str("w").u32(2).u64(4).u64(2).u32(0).u64(0);
  b.str("q").u32(1).u64(32).u32(8).u64(64);
  b.pad_to(64);
  for (int i = 0; i < 8; ++i) b.f32(static_cast<float>(i) * 0.5f);
  b.pad_to(64);
  b.put<uint16_t>(0x3c00);  // Q8_0 block: scale 1.0 (f16) then 32 int8
  for (int i = 0; i < 32; ++i) b.put<int8_t>(static_cast<int8_t>(i - 16));
  return b.buf;
}

TEST(GgufReader, HandmadeImageAllValueTypes) {
  for (uint32_t version : {2u, 3u}) {
    const std::string img = handmade_image(version);
    const auto f = GgufFile::parse(img.data(), img.size(), "handmade.gguf");
    EXPECT_EQ(f->version(), version);
    const Metadata& md = f->metadata();
    ASSERT_EQ(md.size(), 17u);
    EXPECT_EQ(md.entries()[0].first, "k.u8");
    EXPECT_EQ(md.find("k.u8")->type(), GgufType::UINT8);
    EXPECT_EQ(md.get_int("k.u8"), 200);
    EXPECT_EQ(md.get_int("k.i8"), -100);
    EXPECT_EQ(md.get_int("k.u16"), 60000);
    EXPECT_EQ(md.get_int("k.i16"), -30000);
    EXPECT_EQ(md.get_int("k.u32"), 4000000000ll);
    EXPECT_EQ(md.get_int("k.i32"), -2000000000);
    EXPECT_EQ(md.get_double("k.f32"), 1.5);
    EXPECT_EQ(md.get_bool("k.bool"), true);
    EXPECT_EQ(md.get_string("k.str"), std::string("a\0b", 3));
    EXPECT_EQ(md.find("k.u64")->as_uint(), 18000000000000000000ull);
    EXPECT_EQ(md.get_int("k.i64"), -9000000000000000000ll);
    EXPECT_EQ(md.get_double("k.f64"), -0.25);
    const GgufArray* s = md.get_array("k.arr_str");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->strings, (std::vector<std::string>{"x", ""}));
    EXPECT_EQ(md.get_array("k.arr_f32")->f32, (std::vector<float>{1, -2, 0.5f}));
    const GgufArray* nested = md.get_array("k.arr_nested");
    ASSERT_EQ(nested->elem_type, GgufType::ARRAY);
    ASSERT_EQ(nested->size(), 2u);
    const GgufArray* inner0 = nested->values[0].as_array();
    ASSERT_EQ(inner0->elem_type, GgufType::UINT16);
    ASSERT_EQ(inner0->size(), 2u);
    EXPECT_EQ(inner0->values[1].as_int(), 8);
    EXPECT_EQ(nested->values[1].as_array()->size(), 0u);
    EXPECT_EQ(md.get_array("k.arr_empty_i32")->elem_type, GgufType::INT32);
    EXPECT_EQ(md.get_array("k.arr_empty_i32")->size(), 0u);

    EXPECT_EQ(f->alignment(), 64u);
    ASSERT_EQ(f->tensors().size(), 2u);
    const TensorInfo& w = f->tensors()[0];
    EXPECT_EQ(w.name, "w");
    EXPECT_EQ(w.n_dims, 2);
    EXPECT_EQ(w.ne, (std::array<int64_t, 4>{4, 2, 1, 1}));
    EXPECT_EQ(w.nbytes, 32u);
    const size_t data_start = img.size() - 64 - 34;
    EXPECT_EQ(f->data_offset(), data_start);
    EXPECT_EQ(static_cast<const char*>(w.data), img.data() + data_start);
    EXPECT_EQ(static_cast<const float*>(w.data)[7], 3.5f);
    const TensorInfo& q = f->tensors()[1];
    EXPECT_EQ(q.type, TensorType::Q8_0);
    EXPECT_EQ(q.nbytes, 34u);
    EXPECT_EQ(q.file_offset, 64u);
    EXPECT_EQ(static_cast<const int8_t*>(q.data)[2], -16);
  }
}

std::string parse_error(const std::string& img) {
  try {
    GgufFile::parse(img.data(), img.size(), "bad.gguf");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufReader, RejectsOtherVersionsAndFormats) {
  ByteBuilder v1;
  v1.u32(kGgufMagic).u32(1).u32(0).u32(0);
  EXPECT_EQ(parse_error(v1.buf),
            "bad.gguf: GGUF version 1 is not supported (re-convert the model with a current llama.cpp)");
  ByteBuilder v4;
  v4.u32(kGgufMagic).u32(4).u64(0).u64(0);
  EXPECT_EQ(parse_error(v4.buf), "bad.gguf: unsupported GGUF version 4");
  ByteBuilder be;
  be.u32(kGgufMagic).u32(0x03000000u).u64(0).u64(0);
  EXPECT_EQ(parse_error(be.buf), "bad.gguf: big-endian GGUF files are not supported");
  EXPECT_EQ(parse_error("GGML and more"), "bad.gguf: not a GGUF file (bad magic)");
  EXPECT_EQ(parse_error("GG"), "bad.gguf: not a GGUF file (2 bytes)");
}

TEST(GgufReader, HeaderOnlyFileIsValid) {
  ByteBuilder b;
  b.u32(kGgufMagic).u32(3).u64(0).u64(0);
  const auto f = GgufFile::parse(b.buf.data(), b.size(), "empty.gguf");
  EXPECT_EQ(f->metadata().size(), 0u);
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufReader, UnsupportedTensorTypeIsNamed) {
  ByteBuilder b;
  b.u32(kGgufMagic).u32(3).u64(1).u64(0);
  b.str("blk.0.attn_q.weight").u32(2).u64(256).u64(4).u32(28).u64(0);  // 28 = F64
  b.pad_to(32).raw(std::string(8192, '\0'));
  EXPECT_EQ(parse_error(b.buf), "bad.gguf: tensor 'blk.0.attn_q.weight': unsupported tensor type f64");
}

TEST(GgufReader, OpenReportsMissingFile) {
  try {
    GgufFile::open("/nonexistent/model.gguf");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.gguf"), std::string::npos);
  }
}

}  // namespace
}  // namespace strata
