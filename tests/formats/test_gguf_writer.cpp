// GgufWriter: byte-identical rewrites of files made by llama.cpp, round trips of every value
// type through GgufFile and the independent Python parser, streaming fills and failure cleanup.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"
#include "gguf_reference_check.h"

namespace strata {
namespace {

// Writes every key and tensor of `src` with the writer (tensor data by pointer into the map).
void rewrite(const GgufFile& src, const std::string& out) {
  GgufWriter w;
  w.set_metadata(src.metadata());
  for (const TensorInfo& t : src.tensors())
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), t.data);
  w.write(out);
}

TEST(GgufWriter, RewritesLlamaCppFilesByteForByte) {
  // llama.cpp lays files out the same way (keys and tensors in order, data aligned to
  // general.alignment or 32, zero padding), so a faithful writer reproduces them exactly.
  test::TempDir dir;
  for (const char* rel : {"models/stories260K/stories260K.gguf", "models/synth-tiny/synth-tiny-q4_k_m.gguf",
                          "models/synth-tiny/synth-tiny-q8_0.gguf", "models/synth-tiny/synth-tiny-bf16.gguf",
                          "vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-llama-spm.gguf"}) {
    SCOPED_TRACE(rel);
    const std::string path = test::shared_path(rel);
    const auto src = GgufFile::open(path);
    const std::string out = dir.file("rewrite.gguf");
    rewrite(*src, out);
    const std::string a = test::read_file(path), b = test::read_file(out);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_TRUE(a == b);
  }
}

Metadata all_types_metadata() {
  Metadata md;
  md.add("general.architecture", GgufValue::of_string("llama"));
  md.add("t.u8", GgufValue(GgufType::UINT8, uint8_t{255}));
  md.add("t.i8", GgufValue(GgufType::INT8, int8_t{-128}));
  md.add("t.u16", GgufValue(GgufType::UINT16, uint16_t{65535}));
  md.add("t.i16", GgufValue(GgufType::INT16, int16_t{-32768}));
  md.add("t.u32", GgufValue::of_u32(4294967295u));
  md.add("t.i32", GgufValue::of_i32(-7));
  md.add("t.f32", GgufValue::of_f32(-1e-5f));
  md.add("t.bool", GgufValue::of_bool(false));
  md.add("t.str", GgufValue::of_string(std::string("line\nbreak\0nul", 14)));
  md.add("t.u64", GgufValue::of_u64(~uint64_t{0}));
  md.add("t.i64", GgufValue(GgufType::INT64, int64_t{-1} << 62));
  md.add("t.f64", GgufValue(GgufType::FLOAT64, 3.141592653589793));
  GgufArray strings{GgufType::STRING, {"<unk>", "", "\xe2\x96\x81the"}, {}, {}, {}};
  md.add("t.arr.str", GgufValue::of_array(strings));
  GgufArray floats{GgufType::FLOAT32, {}, {0.f, -0.f, 1e30f}, {}, {}};
  md.add("t.arr.f32", GgufValue::of_array(floats));
  GgufArray ints{GgufType::INT32, {}, {}, {1, 2, 3, -4}, {}};
  md.add("t.arr.i32", GgufValue::of_array(ints));
  GgufArray bools{GgufType::BOOL, {}, {}, {}, {GgufValue::of_bool(true), GgufValue::of_bool(false)}};
  md.add("t.arr.bool", GgufValue::of_array(bools));
  GgufArray inner{GgufType::UINT64, {}, {}, {}, {GgufValue::of_u64(1), GgufValue::of_u64(2)}};
  GgufArray outer{
      GgufType::ARRAY,
      {},
      {},
      {},
      {GgufValue::of_array(inner), GgufValue::of_array(GgufArray{GgufType::STRING, {"a"}, {}, {}, {}})}};
  md.add("t.arr.nested", GgufValue::of_array(outer));
  md.add("t.arr.empty", GgufValue::of_array(GgufArray{GgufType::UINT8, {}, {}, {}, {}}));
  return md;
}

bool same_value(const GgufValue& a, const GgufValue& b);

bool same_array(const GgufArray& a, const GgufArray& b) {
  if (a.elem_type != b.elem_type || a.size() != b.size()) return false;
  if (a.strings != b.strings || a.i32 != b.i32) return false;
  for (size_t i = 0; i < a.f32.size(); ++i)
    if (test::f32_bits(a.f32[i]) != test::f32_bits(b.f32[i])) return false;
  for (size_t i = 0; i < a.values.size(); ++i)
    if (!same_value(a.values[i], b.values[i])) return false;
  return true;
}

bool same_value(const GgufValue& a, const GgufValue& b) {
  if (a.type() != b.type()) return false;
  if (a.type() == GgufType::ARRAY) return same_array(*a.as_array(), *b.as_array());
  return a.storage() == b.storage();
}

TEST(GgufWriter, RoundTripsEveryValueTypeAndTensorSource) {
  test::TempDir dir;
  GgufWriter w;
  w.set_metadata(all_types_metadata());
  std::vector<float> f32(3 * 5);
  for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<float>(i) - 7.25f;
  w.add_tensor("a.f32", TensorType::F32, {5, 3}, f32.data());
  w.add_tensor("b.q4_0", TensorType::Q4_0, {64, 2}, [](void* dst, size_t n) {
    ASSERT_EQ(n, 2u * 2u * 18u);
    for (size_t i = 0; i < n; ++i) static_cast<uint8_t*>(dst)[i] = static_cast<uint8_t>(i * 7 + 1);
  });
  w.add_tensor("c.norm", TensorType::F32, {1}, f32.data() + 3);
  w.add_tensor("d.q6_k", TensorType::Q6_K, {256, 1, 2, 1},
               [](void* dst, size_t n) { std::memset(dst, 0xab, n); });
  const std::string path = dir.file("all.gguf");
  std::vector<size_t> progress;
  w.write(path, [&](size_t i) { progress.push_back(i); });
  EXPECT_EQ(progress, (std::vector<size_t>{0, 1, 2, 3}));

  const auto f = GgufFile::open(path);
  EXPECT_EQ(f->version(), 3u);
  const Metadata ref = all_types_metadata();
  ASSERT_EQ(f->metadata().size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_EQ(f->metadata().entries()[i].first, ref.entries()[i].first);
    EXPECT_TRUE(same_value(f->metadata().entries()[i].second, ref.entries()[i].second))
        << ref.entries()[i].first;
  }
  ASSERT_EQ(f->tensors().size(), 4u);
  const TensorInfo& a = f->tensors()[0];
  EXPECT_EQ(a.n_dims, 2);
  EXPECT_EQ(a.ne, (std::array<int64_t, 4>{5, 3, 1, 1}));
  EXPECT_EQ(std::memcmp(a.data, f32.data(), 60), 0);
  const TensorInfo& b = f->tensors()[1];
  EXPECT_EQ(b.type, TensorType::Q4_0);
  EXPECT_EQ(b.nbytes, 72u);
  EXPECT_EQ(static_cast<const uint8_t*>(b.data)[71], static_cast<uint8_t>(71 * 7 + 1));
  EXPECT_EQ(*static_cast<const float*>(f->tensors()[2].data), f32[3]);
  const TensorInfo& d = f->tensors()[3];
  EXPECT_EQ(d.n_dims, 4);
  EXPECT_EQ(d.nbytes, 2u * 210u);
  for (const TensorInfo& t : f->tensors()) EXPECT_EQ(t.file_offset % 32, 0u) << t.name;
  // And the independent parser reads the same file the same way.
  test::expect_matches_reference(path);
}

TEST(GgufWriter, HonoursGeneralAlignment) {
  test::TempDir dir;
  GgufWriter w;
  w.metadata().add("general.alignment", GgufValue::of_u32(256));
  const std::vector<float> x(3, 1.0f);
  w.add_tensor("x", TensorType::F32, {3}, x.data());
  w.add_tensor("y", TensorType::F32, {3}, x.data());
  const std::string path = dir.file("aligned.gguf");
  w.write(path);
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset() % 256, 0u);
  EXPECT_EQ(f->tensors()[1].file_offset, 256u);
  EXPECT_EQ(std::filesystem::file_size(path), f->data_offset() + 512);
  test::expect_matches_reference(path);
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  const float x[64] = {};
  w.add_tensor("x", TensorType::F32, {4}, x);
  EXPECT_EQ(error_of([&] { w.add_tensor("x", TensorType::F32, {4}, x); }), "duplicate tensor name 'x'");
  EXPECT_EQ(error_of([&] {
              w.add_tensor("q", TensorType::Q4_K, {32, 2}, x);
            }),
            "tensor 'q': row length 32 is not a multiple of the q4_K block size 256");
  EXPECT_EQ(error_of([&] { w.add_tensor("n", TensorType::F32, {-1}, x); }),
            "tensor 'n': negative dimension -1");
  EXPECT_EQ(error_of([&] {
              w.add_tensor("five", TensorType::F32, {1, 1, 1, 1, 1}, x);
            }),
            "tensor 'five': 5 dimensions (must be 1 to 4)");
  EXPECT_EQ(error_of([&] {
              w.add_tensor("big", TensorType::F32, {int64_t{1} << 40, int64_t{1} << 40}, x);
            }),
            "tensor 'big': size overflows");
  EXPECT_EQ(error_of([&] { w.add_tensor("k", TensorType::Q8_K, {256}, x); }),
            "tensor 'k': type q8_K cannot be stored");
  EXPECT_EQ(error_of([&] { w.add_tensor(std::string(65, 'n'), TensorType::F32, {1}, x); }).substr(0, 12),
            "tensor name ");
  EXPECT_EQ(w.tensor_count(), 1u);
}

TEST(GgufWriter, FailedWriteLeavesNoFile) {
  test::TempDir dir;
  const std::string path = dir.file("partial.gguf");
  GgufWriter w;
  w.add_tensor("ok", TensorType::F32, {4}, [](void* dst, size_t n) { std::memset(dst, 0, n); });
  w.add_tensor("boom", TensorType::F32, {4}, [](void*, size_t) { throw Error("source tensor unreadable"); });
  EXPECT_EQ(error_of([&] { w.write(path); }), "source tensor unreadable");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // neither the target nor a temporary

  GgufWriter bad_align;
  bad_align.metadata().add("general.alignment", GgufValue::of_u32(48));
  EXPECT_EQ(error_of([&] { bad_align.write(path); }),
            "general.alignment 48 is not a power of two up to 2^30");
  EXPECT_NE(error_of([&] { GgufWriter().write(dir.file("no/such/dir.gguf")); }).find("no/such/dir.gguf"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(GgufWriter, ReplacesAnExistingFileAtomically) {
  test::TempDir dir;
  const std::string path = dir.file("m.gguf");
  test::write_bytes(path, "old content");
  GgufWriter w;
  w.metadata().add("general.name", GgufValue::of_string("new"));
  w.write(path);
  EXPECT_EQ(GgufFile::open(path)->metadata().string_or("general.name", ""), "new");
}

}  // namespace
}  // namespace strata
