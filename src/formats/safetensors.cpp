#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "formats/text_escape.h"

namespace strata {
namespace {

// The reference implementation refuses headers above 100 MB as well.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

using nlohmann::json;

// Deepest bracket nesting outside JSON strings. A valid header nests 3 deep (object, tensor,
// shape); checking before parsing keeps a hostile "[[[[..." from building millions of nodes.
int json_nesting_depth(const char* p, size_t n) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

uint64_t as_u64(const json& j, bool& ok) {
  if (!j.is_number_unsigned()) {
    ok = false;
    return 0;
  }
  return j.get<uint64_t>();
}

}  // namespace

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t, std::less<>> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->map_ = MappedFile(path);
  f->path_ = path;
  f->parse_image(f->map_.data(), f->map_.size());
  return f;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::parse(const void* data, size_t size,
                                                        const std::string& name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = name;
  f->parse_image(static_cast<const uint8_t*>(data), size);
  return f;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::parse_image(const uint8_t* data, size_t size) {
  if (size < 8) STRATA_THROW(path_, ": too small for a safetensors file (", size, " bytes)");
  uint64_t header_len;
  std::memcpy(&header_len, data, 8);
  if (header_len > size - 8 || header_len > kMaxHeaderBytes)
    STRATA_THROW(path_, ": safetensors header length ", header_len, " exceeds the file (", size,
                 " bytes) or the 100 MB limit");
  const auto* begin = reinterpret_cast<const char*>(data + 8);
  if (json_nesting_depth(begin, header_len) > 4)
    STRATA_THROW(path_, ": safetensors header nests deeper than a tensor index can");
  const json header = json::parse(begin, begin + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    STRATA_THROW(path_, ": safetensors header is not a valid JSON object");
  const uint8_t* body = data + 8 + header_len;
  const uint64_t body_size = size - 8 - header_len;

  for (const auto& [name, info] : header.items()) {
    const std::string label = escape_for_message(name);
    if (name == "__metadata__") {
      if (!info.is_object()) STRATA_THROW(path_, ": safetensors __metadata__ is not an object");
      for (const auto& [k, v] : info.items()) {
        if (!v.is_string())
          STRATA_THROW(path_, ": safetensors __metadata__ value of '", escape_for_message(k),
                       "' is not a string");
        metadata_[k] = v.get<std::string>();
      }
      continue;
    }
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") ||
        !info.contains("data_offsets") || !info["dtype"].is_string() || !info["shape"].is_array() ||
        !info["data_offsets"].is_array() || info["data_offsets"].size() != 2)
      STRATA_THROW(path_, ": tensor '", label, "' needs dtype, shape and data_offsets [begin, end]");
    SafetensorsTensor t;
    t.name = name;
    t.dtype = info["dtype"].get<std::string>();
    const size_t elem = safetensors_dtype_size(t.dtype);
    if (elem == 0)
      STRATA_THROW(path_, ": tensor '", label, "' has unknown dtype '", escape_for_message(t.dtype), "'");
    bool ok = true;
    uint64_t bytes = elem;
    for (const json& d : info["shape"]) {
      const uint64_t v = as_u64(d, ok);
      if (!ok || v > static_cast<uint64_t>(INT64_MAX))
        STRATA_THROW(path_, ": tensor '", label, "' has a shape entry that is not a non-negative integer");
      if (__builtin_mul_overflow(bytes, v, &bytes))
        STRATA_THROW(path_, ": tensor '", label, "': size overflows");
      t.shape.push_back(static_cast<int64_t>(v));
    }
    const uint64_t start = as_u64(info["data_offsets"][0], ok), end = as_u64(info["data_offsets"][1], ok);
    if (!ok || start > end || end > body_size)
      STRATA_THROW(path_, ": tensor '", label, "': data_offsets [", info["data_offsets"][0].dump(), ", ",
                   info["data_offsets"][1].dump(), "] are not a range inside the ", body_size, " data bytes");
    if (end - start != bytes)
      STRATA_THROW(path_, ": tensor '", label, "': ", end - start, " data bytes for a ", t.dtype,
                   " shape of ", bytes, " bytes");
    t.data = body + start;
    t.nbytes = static_cast<size_t>(bytes);
    index_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  std::vector<const SafetensorsTensor*> order;
  for (const auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->data < b->data; });
  for (size_t i = 1; i < order.size(); ++i)
    if (order[i - 1]->data + order[i - 1]->nbytes > order[i]->data)
      STRATA_THROW(path_, ": tensors '", escape_for_message(order[i - 1]->name), "' and '",
                   escape_for_message(order[i]->name), "' overlap");
}

}  // namespace strata
