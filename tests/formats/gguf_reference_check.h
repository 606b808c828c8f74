// Compares a GGUF file as GgufFile reads it with the independent Python parser
// tests/formats/gguf_reference.py (metadata in order and bit-exact, tensor directory, data CRCs).
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>

#include "common/fixtures.h"
#include "core/check.h"
#include "format_test_util.h"
#include "formats/gguf_reader.h"

namespace strata::test {

using nlohmann::json;

inline json python_reference(const std::string& gguf_path) {
  const auto r = run_command({"python3", source_dir() + "/tests/formats/gguf_reference.py", gguf_path});
  if (r.exit_code != 0) throw std::runtime_error("gguf_reference.py failed: " + r.err);
  return json::parse(r.out);
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline void expect_value_matches(const GgufValue& v, const json& ref, const std::string& ctx) {
  switch (v.type()) {
    case GgufType::STRING:
      EXPECT_EQ(to_hex(*v.as_string()), ref.get<std::string>()) << ctx;
      break;
    case GgufType::FLOAT32:
      EXPECT_EQ(f32_bits(std::get<float>(v.storage())), ref.get<uint32_t>()) << ctx;
      break;
    case GgufType::FLOAT64: {
      uint64_t bits;
      const double d = std::get<double>(v.storage());
      std::memcpy(&bits, &d, 8);
      EXPECT_EQ(bits, ref.get<uint64_t>()) << ctx;
      break;
    }
    case GgufType::BOOL:
      EXPECT_EQ(*v.as_bool(), ref.get<bool>()) << ctx;
      break;
    case GgufType::UINT64:
      EXPECT_EQ(*v.as_uint(), ref.get<uint64_t>()) << ctx;
      break;
    case GgufType::ARRAY: {
      const GgufArray& a = *v.as_array();
      ASSERT_EQ(static_cast<uint32_t>(a.elem_type), ref["elem_type"].get<uint32_t>()) << ctx;
      const json& items = ref["items"];
      ASSERT_EQ(a.size(), items.size()) << ctx;
      for (size_t i = 0; i < a.size(); ++i) {
        if (a.elem_type == GgufType::STRING)
          ASSERT_EQ(to_hex(a.strings[i]), items[i].get<std::string>()) << ctx << "[" << i << "]";
        else if (a.elem_type == GgufType::FLOAT32)
          ASSERT_EQ(f32_bits(a.f32[i]), items[i].get<uint32_t>()) << ctx << "[" << i << "]";
        else if (a.elem_type == GgufType::INT32)
          ASSERT_EQ(a.i32[i], items[i].get<int32_t>()) << ctx << "[" << i << "]";
        else
          expect_value_matches(a.values[i], items[i], concat(ctx, "[", i, "]"));
      }
      break;
    }
    default:
      EXPECT_EQ(*v.as_int(), ref.get<int64_t>()) << ctx;
      break;
  }
}

inline void expect_matches_reference(const std::string& path) {
  SCOPED_TRACE(path);
  const json ref = python_reference(path);
  const auto f = GgufFile::open(path);
  EXPECT_EQ(f->format(), ModelFormat::Gguf);
  EXPECT_EQ(f->version(), ref["version"].get<uint32_t>());
  EXPECT_EQ(f->alignment(), ref["alignment"].get<uint64_t>());
  EXPECT_EQ(f->data_offset(), ref["data_offset"].get<uint64_t>());

  const auto& entries = f->metadata().entries();
  ASSERT_EQ(entries.size(), ref["kv"].size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& kv = ref["kv"][i];
    ASSERT_EQ(to_hex(entries[i].first), kv[0].get<std::string>());
    ASSERT_EQ(static_cast<uint32_t>(entries[i].second.type()), kv[1].get<uint32_t>()) << entries[i].first;
    expect_value_matches(entries[i].second, kv[2], entries[i].first);
  }

  ASSERT_EQ(f->tensors().size(), ref["tensors"].size());
  for (size_t i = 0; i < f->tensors().size(); ++i) {
    const TensorInfo& t = f->tensors()[i];
    const json& r = ref["tensors"][i];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(to_hex(t.name), r["name"].get<std::string>());
    EXPECT_EQ(t.n_dims, r["n_dims"].get<int>());
    for (int d = 0; d < 4; ++d)
      EXPECT_EQ(t.ne[d], d < t.n_dims ? r["ne"][d].get<int64_t>() : 1) << "dim " << d;
    EXPECT_EQ(static_cast<uint32_t>(t.type), r["type"].get<uint32_t>());
    EXPECT_EQ(t.file_offset, r["offset"].get<uint64_t>());
    EXPECT_EQ(t.nbytes, r["nbytes"].get<uint64_t>());
    EXPECT_EQ(crc32(t.data, t.nbytes), r["crc32"].get<uint32_t>());
    EXPECT_EQ(f->find_tensor(t.name), &t);
  }
}

}  // namespace strata::test
