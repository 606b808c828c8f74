// Safetensors reader: the tinystories656k checkpoint (facts from its header, read by Python's
// json module in the fixture notes) and a corrupt corpus generated at test time.
#include <gtest/gtest.h>

#include "alloc_tracker.h"
#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/safetensors.h"

namespace strata {
namespace {

TEST(Safetensors, ReadsTinyStoriesCheckpoint) {
  const auto f = SafetensorsFile::open(test::shared_path("models/tinystories656k/model.safetensors"));
  // 2 layers x 9 tensors + lm_head + final norm (embed_tokens is an alias of lm_head).
  EXPECT_EQ(f->tensors().size(), 20u);
  const SafetensorsTensor* head = f->find("lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->dtype, "F32");
  EXPECT_EQ(head->shape, (std::vector<int64_t>{2048, 128}));
  EXPECT_EQ(head->nbytes, 2048u * 128u * 4u);
  const SafetensorsTensor* down = f->find("model.layers.1.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->shape, (std::vector<int64_t>{128, 384}));
  EXPECT_EQ(f->metadata().at("format"), "pt");
  EXPECT_EQ(f->metadata().at("model.embed_tokens.weight"), "lm_head.weight");
  EXPECT_EQ(f->find("model.embed_tokens.weight"), nullptr);
  // data_offsets [0, 1048576] of lm_head start right after the 2160-byte header.
  const std::string raw = test::read_file(test::shared_path("models/tinystories656k/model.safetensors"));
  EXPECT_EQ(std::memcmp(head->data, raw.data() + 8 + 2160, head->nbytes), 0);
}

std::string image(const std::string& header_json, size_t data_bytes) {
  test::ByteBuilder b;
  b.u64(header_json.size()).raw(header_json).raw(std::string(data_bytes, '\0'));
  return b.buf;
}

void expect_rejected(const std::string& bytes, const std::string& expected, const std::string& what) {
  SCOPED_TRACE(what);
  test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  test::write_bytes(path, bytes);
  std::string msg;
  test::AllocTracker tracker;
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    msg = e.what();
  }
  const size_t largest = tracker.largest();
  ASSERT_FALSE(msg.empty()) << "accepted";
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find(expected), std::string::npos) << msg;
  EXPECT_LT(largest, size_t{1} << 20) << msg;
}

TEST(Safetensors, CorruptCorpusIsRejected) {
  const std::string t = R"("w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]})";
  ASSERT_NO_THROW(SafetensorsFile::parse(image("{" + t + "}", 24).data(), 8 + 2 + t.size() + 24, "ok"));

  test::ByteBuilder huge_len;
  huge_len.u64(~uint64_t{0}).raw("{}");
  expect_rejected(huge_len.buf, "header length", "header length 2^64-1");
  test::ByteBuilder long_len;
  long_len.u64(1000).raw("{}");
  expect_rejected(long_len.buf, "header length 1000 exceeds", "header longer than the file");
  expect_rejected("abc", "too small", "3-byte file");
  expect_rejected(image("{\"w\": ", 0), "not a valid JSON object", "invalid JSON");
  expect_rejected(image("[1, 2]", 0), "not a valid JSON object", "JSON array");
  expect_rejected(image(R"({"w": {"dtype": "Q4", "shape": [2], "data_offsets": [0, 2]}})", 2),
                  "unknown dtype 'Q4'", "unknown dtype");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20]}})", 24),
                  "20 data bytes for a F32 shape of 24 bytes", "shape/size mismatch");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", 8), "not a range",
                  "reversed range");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 4), "not a range",
                  "range past the end");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", 8),
                  "shape entry", "negative dimension");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 8]}})", 8),
                  "shape entry", "fractional dimension");
  expect_rejected(
      image(R"({"w": {"dtype": "F32", "shape": [1099511627776, 1099511627776], "data_offsets": [0, 8]}})", 8),
      "size overflows", "shape overflow");
  expect_rejected(image(R"({"w": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                            "v": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}})",
                        12),
                  "overlap", "overlapping ranges");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": ["0", "8"]}})", 8),
                  "not a range", "string offsets");
  expect_rejected(image(R"({"w": {"dtype": "F32", "shape": [2]}})", 8), "needs dtype, shape and data_offsets",
                  "missing offsets");
  expect_rejected(image(R"({"w": 5})", 0), "needs dtype, shape and data_offsets", "entry not an object");
  expect_rejected(image(R"({"__metadata__": {"format": 1}})", 0),
                  "__metadata__ value of 'format' is not a string", "metadata value not a string");
  expect_rejected(image(std::string(100000, '[') + std::string(100000, ']'), 0), "nests deeper",
                  "deep nesting");
}

TEST(Safetensors, TruncationsOfRealCheckpointAreRejected) {
  const std::string full = test::read_file(test::shared_path("models/tinystories656k/model.safetensors"));
  for (size_t len = 0; len < 2200; len += 37)
    expect_rejected(full.substr(0, len), "", concat("truncated to ", len));
  for (size_t len = 2200; len < full.size(); len += full.size() / 20)
    expect_rejected(full.substr(0, len), "", concat("truncated to ", len));
}

}  // namespace
}  // namespace strata
