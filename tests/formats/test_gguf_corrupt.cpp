// Corrupt GGUF corpus, generated at test time into a temp dir: truncations of valid files at
// many offsets and one targeted corruption per hostile-input class. Each must be rejected with a
// one-line strata::Error naming the file and the problem, without any large allocation. The
// hyper-parameters of well-formed files are tests/model/test_model_config_corrupt.cpp.
#include <gtest/gtest.h>

#include <functional>

#include "alloc_tracker.h"
#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"

namespace strata {
namespace {

// A small valid GGUF built field by field, remembering where each field lives so a case can
// overwrite exactly one of them.
struct BaseImage {
  std::string bytes;
  size_t n_tensors, n_kv;
  size_t key0_len, key0_type;  // "general.architecture"
  size_t value0_len;           // its string value's length
  size_t align_type, align_value;
  size_t arr_elem_type, arr_count;                               // "tokenizer.ggml.tokens"
  size_t bool_value;                                             // "x.flag"
  size_t t0_name, t0_ndims, t0_ne0, t0_ne1, t0_type, t0_offset;  // "a": Q8_0 [32, 2]
  size_t t1_name, t1_ne0, t1_type, t1_offset;                    // "b": F32 [4]
};

BaseImage make_base() {
  BaseImage m;
  test::ByteBuilder b;
  b.u32(kGgufMagic).u32(3);
  m.n_tensors = b.size();
  b.u64(2);
  m.n_kv = b.size();
  b.u64(4);
  m.key0_len = b.size();
  b.str("general.architecture");
  m.key0_type = b.size();
  b.u32(8);
  m.value0_len = b.size();
  b.str("llama");
  b.str("general.alignment");
  m.align_type = b.size();
  b.u32(4);
  m.align_value = b.size();
  b.u32(32);
  b.str("tokenizer.ggml.tokens").u32(9);
  m.arr_elem_type = b.size();
  b.u32(8);
  m.arr_count = b.size();
  b.u64(2).str("a").str("bc");
  b.str("x.flag").u32(7);
  m.bool_value = b.size();
  b.u8(1);
  m.t0_name = b.size() + 8;
  b.str("a");
  m.t0_ndims = b.size();
  b.u32(2);
  m.t0_ne0 = b.size();
  b.u64(32);
  m.t0_ne1 = b.size();
  b.u64(2);
  m.t0_type = b.size();
  b.u32(8);
  m.t0_offset = b.size();
  b.u64(0);
  m.t1_name = b.size() + 8;
  b.str("b").u32(1);
  m.t1_ne0 = b.size();
  b.u64(4);
  m.t1_type = b.size();
  b.u32(0);
  m.t1_offset = b.size();
  b.u64(96);  // 68 bytes of "a" rounded up to the alignment
  b.pad_to(32);
  for (int i = 0; i < 68; ++i) b.u8(static_cast<uint8_t>(i));
  b.pad_to(32);
  for (int i = 0; i < 4; ++i) b.f32(static_cast<float>(i));
  m.bytes = b.buf;
  return m;
}

template <typename T>
void poke(std::string& s, size_t pos, T v) {
  std::memcpy(s.data() + pos, &v, sizeof(T));
}

struct Outcome {
  bool threw = false;
  std::string message;
  size_t largest_alloc = 0;
  size_t total_alloc = 0;
};

Outcome open_tracked(const std::string& path) {
  Outcome o;
  test::AllocTracker tracker;
  try {
    GgufFile::open(path);
  } catch (const Error& e) {
    o.threw = true;
    o.message = e.what();
  }
  o.largest_alloc = tracker.largest();
  o.total_alloc = tracker.total();
  return o;
}

// Asserts that `bytes` is rejected cleanly, with `expected` in the message.
void expect_rejected(const test::TempDir& dir, const std::string& bytes, const std::string& expected,
                     const std::string& what) {
  SCOPED_TRACE(what);
  const std::string path = dir.file("corrupt.gguf");
  test::write_bytes(path, bytes);
  const Outcome o = open_tracked(path);
  ASSERT_TRUE(o.threw) << "accepted";
  EXPECT_EQ(o.message.find('\n'), std::string::npos) << o.message;
  EXPECT_EQ(o.message.rfind(path + ": ", 0), 0u) << o.message;
  EXPECT_NE(o.message.find(expected), std::string::npos) << o.message;
  EXPECT_LT(o.largest_alloc, size_t{1} << 20) << o.message;
  EXPECT_LT(o.total_alloc, size_t{16} << 20) << o.message;
}

TEST(GgufCorrupt, AllocTrackerSeesAllocations) {
  test::AllocTracker tracker;
  auto v = std::make_unique<std::vector<char>>(size_t{3} << 20);
  EXPECT_EQ(tracker.largest(), size_t{3} << 20);
  EXPECT_GE(tracker.total(), size_t{3} << 20);
}

TEST(GgufCorrupt, BaseImageIsValid) {
  const BaseImage m = make_base();
  const auto f = GgufFile::parse(m.bytes.data(), m.bytes.size(), "base");
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[1].file_offset, 96u);
  EXPECT_EQ(static_cast<const float*>(f->tensors()[1].data)[3], 3.0f);
  EXPECT_EQ(f->metadata().get_bool("x.flag"), true);
}

TEST(GgufCorrupt, EveryTruncationOfSmallFileIsRejected) {
  test::TempDir dir;
  const BaseImage m = make_base();
  for (size_t len = 0; len < m.bytes.size(); ++len)
    expect_rejected(dir, m.bytes.substr(0, len), "", concat("truncated to ", len));
}

TEST(GgufCorrupt, TruncationsOfRealModelsAreRejected) {
  test::TempDir dir;
  for (const char* rel :
       {"models/stories260K/stories260K.gguf", "models/synth-tiny/synth-tiny-q4_k_m.gguf"}) {
    const std::string full = test::read_file(test::shared_path(rel));
    const auto f = GgufFile::parse(full.data(), full.size(), rel);
    const size_t header_end = static_cast<size_t>(f->data_offset());
    std::vector<size_t> cuts;
    for (size_t len = 0; len < header_end; len += 97) cuts.push_back(len);  // through the header
    for (size_t len = header_end; len < full.size(); len += full.size() / 50) cuts.push_back(len);  // data
    cuts.push_back(full.size() - 1);
    for (const size_t len : cuts)
      expect_rejected(dir, full.substr(0, len), "", concat(rel, " truncated to ", len));
  }
}

struct Case {
  const char* what;
  std::function<void(std::string&, const BaseImage&)> corrupt;
  const char* expected;
};

TEST(GgufCorrupt, EachHostileFieldIsRejected) {
  constexpr uint64_t kHuge = 0xffffffffffffffffull;
  const std::vector<Case> cases = {
      {"bad magic", [](auto& s, auto&) { s[0] = 'X'; }, "not a GGUF file"},
      {"version 1", [](auto& s, auto&) { poke<uint32_t>(s, 4, 1); }, "GGUF version 1 is not supported"},
      {"version 7", [](auto& s, auto&) { poke<uint32_t>(s, 4, 7); }, "unsupported GGUF version 7"},
      {"huge n_tensors", [](auto& s, auto& m) { poke<uint64_t>(s, m.n_tensors, kHuge / 2); },
       "tensor info count"},
      {"huge n_kv", [](auto& s, auto& m) { poke<uint64_t>(s, m.n_kv, kHuge); }, "metadata key/value count"},
      {"n_kv past the end", [](auto& s, auto& m) { poke<uint64_t>(s, m.n_kv, 5); }, ""},
      {"huge key length", [](auto& s, auto& m) { poke<uint64_t>(s, m.key0_len, kHuge); }, "string length"},
      {"key longer than the file", [](auto& s, auto& m) { poke<uint64_t>(s, m.key0_len, 60000); },
       "truncated file"},
      {"huge string value", [](auto& s, auto& m) { poke<uint64_t>(s, m.value0_len, kHuge - 3); },
       "truncated file"},
      {"huge array length", [](auto& s, auto& m) { poke<uint64_t>(s, m.arr_count, kHuge / 8); },
       "array element count"},
      {"array length past the end", [](auto& s, auto& m) { poke<uint64_t>(s, m.arr_count, 1000); },
       "array element"},
      {"unknown value type", [](auto& s, auto& m) { poke<uint32_t>(s, m.key0_type, 13); },
       "unknown value type 13"},
      {"unknown array element type", [](auto& s, auto& m) { poke<uint32_t>(s, m.arr_elem_type, 99); },
       "unknown array element type 99"},
      {"bool value 2", [](auto& s, auto& m) { s[m.bool_value] = 2; }, "neither 0 nor 1"},
      {"alignment 0", [](auto& s, auto& m) { poke<uint32_t>(s, m.align_value, 0); }, "general.alignment 0"},
      {"alignment 48", [](auto& s, auto& m) { poke<uint32_t>(s, m.align_value, 48); },
       "general.alignment 48"},
      {"alignment 2^31", [](auto& s, auto& m) { poke<uint32_t>(s, m.align_value, 1u << 31); },
       "general.alignment"},
      {"alignment as f32", [](auto& s, auto& m) { poke<uint32_t>(s, m.align_type, 6); }, "general.alignment"},
      {"n_dims 5", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_ndims, 5); }, "5 dimensions"},
      {"n_dims 0", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_ndims, 0); }, "0 dimensions"},
      {"negative ne", [](auto& s, auto& m) { poke<int64_t>(s, m.t0_ne1, -2); }, "dimension 1 is negative"},
      {"element count overflow",
       [](auto& s, auto& m) {
         poke<uint64_t>(s, m.t0_ne0, uint64_t{1} << 40);
         poke<uint64_t>(s, m.t0_ne1, uint64_t{1} << 40);
       },
       "element count overflows"},
      {"byte size overflow", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_ne0, uint64_t{1} << 62); },
       "size overflows"},
      {"ne[0] not a multiple of the block", [](auto& s, auto& m) { poke<uint64_t>(s, m.t0_ne0, 33); },
       "row length 33 is not a multiple of the q8_0 block size 32"},
      {"unknown tensor type", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 99); },
       "unsupported tensor type id 99"},
      {"removed tensor type", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 31); },
       "unsupported tensor type q4_0_4_4 (removed from ggml)"},
      {"integer tensor type", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 24); },
       "unsupported tensor type i8"},
      // The IQ / ternary types' super-blocks of 256 do not divide rows of 32.
      {"ne[0] not a multiple of the iq4_xs block", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 23); },
       "row length 32 is not a multiple of the iq4_xs block size 256"},
      {"ne[0] not a multiple of the iq2_xxs block",
       [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 16); },
       "row length 32 is not a multiple of the iq2_xxs block size 256"},
      {"ne[0] not a multiple of the iq1_m block", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 29); },
       "row length 32 is not a multiple of the iq1_m block size 256"},
      {"ne[0] not a multiple of the tq1_0 block", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 34); },
       "row length 32 is not a multiple of the tq1_0 block size 256"},
      {"iq4_nl data past the end",
       [](auto& s, auto& m) {
         poke<uint32_t>(s, m.t0_type, 20);
         poke<uint64_t>(s, m.t0_ne1, 1000);
       },
       "outside the file"},
      {"mxfp4 data past the end",
       [](auto& s, auto& m) {
         poke<uint32_t>(s, m.t0_type, 39);
         poke<uint64_t>(s, m.t0_ne1, 1000);
       },
       "outside the file"},
      {"activation-only type", [](auto& s, auto& m) { poke<uint32_t>(s, m.t0_type, 15); },
       "unsupported tensor type q8_K"},
      {"misaligned offset", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_offset, 100); },
       "data offset 100 is not a multiple of the alignment 32"},
      {"offset past the end", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_offset, uint64_t{1} << 40); },
       "outside the file"},
      {"offset wrapping around", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_offset, kHuge - 31); },
       "outside the file"},
      {"data past the end", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_ne0, 64); }, "outside the file"},
      {"overlapping tensors", [](auto& s, auto& m) { poke<uint64_t>(s, m.t1_offset, 64); }, "overlap"},
      {"duplicate tensor name", [](auto& s, auto& m) { s[m.t1_name] = 'a'; }, "duplicate tensor name 'a'"},
      {"control bytes in a name",
       [](auto& s, auto& m) {
         s[m.t0_name] = '\n';
         poke<uint32_t>(s, m.t0_ndims, 5);
       },
       "tensor '\\x0a': 5 dimensions"},
  };
  test::TempDir dir;
  const BaseImage m = make_base();
  for (const Case& c : cases) {
    std::string bytes = m.bytes;
    c.corrupt(bytes, m);
    expect_rejected(dir, bytes, c.expected, c.what);
  }
}

TEST(GgufCorrupt, DuplicateKeysAndLongNamesAreRejected) {
  test::TempDir dir;
  test::ByteBuilder dup;
  dup.u32(kGgufMagic).u32(3).u64(0).u64(2);
  dup.str("general.name").u32(8).str("x").str("general.name").u32(4).u32(1);
  expect_rejected(dir, dup.buf, "duplicate metadata key 'general.name'", "duplicate key");

  test::ByteBuilder long_name;
  long_name.u32(kGgufMagic).u32(3).u64(1).u64(0);
  long_name.str(std::string(65, 't')).u32(1).u64(4).u32(0).u64(0).pad_to(32).raw(std::string(16, '\0'));
  expect_rejected(dir, long_name.buf, "string length 65 exceeds the limit of 64", "tensor name of 65 bytes");

  test::ByteBuilder empty_key;
  empty_key.u32(kGgufMagic).u32(3).u64(0).u64(1).str("").u32(4).u32(1);
  expect_rejected(dir, empty_key.buf, "metadata key 0 is empty", "empty key");
}

TEST(GgufCorrupt, DeeplyNestedArraysAreRejected) {
  test::TempDir dir;
  test::ByteBuilder b;
  b.u32(kGgufMagic).u32(3).u64(0).u64(1).str("deep").u32(9);
  for (int i = 0; i < 100000; ++i) b.u32(9).u64(1);  // array of array of ... (would overflow the stack)
  b.u32(0).u64(0);
  expect_rejected(dir, b.buf, "arrays nested deeper than 8", "nesting 100000 deep");
}

TEST(GgufCorrupt, HugeGenericArrayIsBounded) {
  // 5M u8 elements as generic values would need ~240 MB of GgufValues for a 5 MB file.
  test::TempDir dir;
  test::ByteBuilder b;
  b.u32(kGgufMagic).u32(3).u64(0).u64(1).str("blob").u32(9).u32(0).u64(5u << 20);
  b.raw(std::string(5u << 20, '\1'));
  SCOPED_TRACE("5M-element u8 array");
  const std::string path = dir.file("blob.gguf");
  test::write_bytes(path, b.buf);
  const Outcome o = open_tracked(path);
  ASSERT_TRUE(o.threw);
  EXPECT_NE(o.message.find("array elements of non-vocabulary types"), std::string::npos) << o.message;
  EXPECT_LT(o.total_alloc, size_t{1} << 20);
}

TEST(GgufCorrupt, OpenModelFileReportsCorruptionToo) {
  test::TempDir dir;
  BaseImage m = make_base();
  poke<uint32_t>(m.bytes, m.t0_type, 28);
  const std::string path = dir.file("f64.gguf");
  test::write_bytes(path, m.bytes);
  try {
    open_model_file(path);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path + ": tensor 'a': unsupported tensor type f64");
  }
}

}  // namespace
}  // namespace strata
