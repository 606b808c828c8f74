#include "formats/gguf_reader.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "core/check.h"
#include "formats/text_escape.h"

namespace strata {
namespace {

// Arrays nest at most this deep (the spec allows nesting; real files use none). Bounds recursion.
constexpr int kMaxArrayDepth = 8;
// Keys and tensor names: the spec limits keys to 65535 bytes and tensor names to 64.
constexpr uint64_t kMaxKeyLength = 65535;
constexpr uint64_t kMaxTensorNameLength = 64;
// Elements of arrays kept as generic GgufValues (~48 bytes each) over the whole file. Vocab arrays
// (strings, f32, i32) have compact storage and are not counted. Keeps memory proportional to the
// file even for a file made of one huge u8 array.
constexpr uint64_t kMaxGenericArrayElements = uint64_t{1} << 22;
// Smallest encodings, used to bound counts by the bytes that remain before allocating.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;                  // key len, 1-byte key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;  // name len+1, n_dims, ne[0], type, off

// Sequential little-endian reader over an untrusted buffer; every read is bounds-checked and
// failures name the file and the offset.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    STRATA_THROW(name_, ": ", args...);
  }

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  void need(uint64_t n, std::string_view what) const {
    if (n > remaining())
      fail("truncated file: ", what, " needs ", n, " bytes at offset ", pos_, ", only ", remaining(),
           " left");
  }
  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string read_string(std::string_view what, uint64_t max_len) {
    const auto len = read<uint64_t>(what);
    if (len > max_len) fail(what, ": string length ", len, " exceeds the limit of ", max_len);
    need(len, what);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return s;
  }
  // Fails unless `count` items of at least `min_bytes` each can fit in the rest of the file.
  void check_count(uint64_t count, uint64_t min_bytes, std::string_view what) const {
    if (count > remaining() / min_bytes)
      fail(what, " count ", count, " cannot fit in the ", remaining(), " bytes left at offset ", pos_);
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

bool valid_value_type(uint32_t t) {
  return t <= static_cast<uint32_t>(GgufType::FLOAT64);
}

// Bytes a value of this type needs at least (strings: the length; arrays: type + count).
uint64_t min_value_bytes(GgufType t) {
  switch (t) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::BOOL:
      return 1;
    case GgufType::UINT16:
    case GgufType::INT16:
      return 2;
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::FLOAT32:
      return 4;
    case GgufType::STRING:
    case GgufType::UINT64:
    case GgufType::INT64:
    case GgufType::FLOAT64:
      return 8;
    case GgufType::ARRAY:
      return 12;
  }
  return 1;
}

class MetadataParser {
 public:
  explicit MetadataParser(Cursor& cur) : cur_(cur) {}

  GgufValue read_value(GgufType type, const std::string& key, int depth) {
    switch (type) {
      case GgufType::UINT8:
        return {type, cur_.read<uint8_t>(key)};
      case GgufType::INT8:
        return {type, cur_.read<int8_t>(key)};
      case GgufType::UINT16:
        return {type, cur_.read<uint16_t>(key)};
      case GgufType::INT16:
        return {type, cur_.read<int16_t>(key)};
      case GgufType::UINT32:
        return {type, cur_.read<uint32_t>(key)};
      case GgufType::INT32:
        return {type, cur_.read<int32_t>(key)};
      case GgufType::FLOAT32:
        return {type, cur_.read<float>(key)};
      case GgufType::UINT64:
        return {type, cur_.read<uint64_t>(key)};
      case GgufType::INT64:
        return {type, cur_.read<int64_t>(key)};
      case GgufType::FLOAT64:
        return {type, cur_.read<double>(key)};
      case GgufType::BOOL: {
        const auto b = cur_.read<uint8_t>(key);
        if (b > 1) cur_.fail("metadata key '", key, "': bool value ", int{b}, " is neither 0 nor 1");
        return {type, b == 1};
      }
      case GgufType::STRING:
        return GgufValue::of_string(cur_.read_string(key, UINT64_MAX));
      case GgufType::ARRAY:
        return GgufValue::of_array(read_array(key, depth + 1));
    }
    cur_.fail("metadata key '", key, "': unknown value type ", static_cast<uint32_t>(type));
  }

 private:
  GgufArray read_array(const std::string& key, int depth) {
    if (depth > kMaxArrayDepth)
      cur_.fail("metadata key '", key, "': arrays nested deeper than ", kMaxArrayDepth);
    const auto elem_id = cur_.read<uint32_t>(key);
    if (!valid_value_type(elem_id))
      cur_.fail("metadata key '", key, "': unknown array element type ", elem_id);
    const auto elem = static_cast<GgufType>(elem_id);
    const auto count = cur_.read<uint64_t>(key);
    cur_.check_count(count, min_value_bytes(elem), concat("metadata key '", key, "': array element"));
    GgufArray a;
    a.elem_type = elem;
    const auto n = static_cast<size_t>(count);
    if (elem == GgufType::STRING) {
      a.strings.reserve(n);
      for (size_t i = 0; i < n; ++i) a.strings.push_back(cur_.read_string(key, UINT64_MAX));
    } else if (elem == GgufType::FLOAT32) {
      a.f32.resize(n);
      for (size_t i = 0; i < n; ++i) a.f32[i] = cur_.read<float>(key);
    } else if (elem == GgufType::INT32) {
      a.i32.resize(n);
      for (size_t i = 0; i < n; ++i) a.i32[i] = cur_.read<int32_t>(key);
    } else {
      generic_elements_ += count;
      if (generic_elements_ > kMaxGenericArrayElements)
        cur_.fail("metadata key '", key, "': more than ", kMaxGenericArrayElements,
                  " array elements of non-vocabulary types in the file");
      a.values.reserve(n);
      for (size_t i = 0; i < n; ++i) a.values.push_back(read_value(elem, key, depth));
    }
    return a;
  }

  Cursor& cur_;
  uint64_t generic_elements_ = 0;
};

bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

// Bytes of a tensor, or nullopt-like failure through `cur` on overflow or a partial block.
uint64_t tensor_nbytes(const Cursor& cur, const std::string& name, TensorType type,
                       const std::array<int64_t, 4>& ne) {
  const TypeTraits& t = type_traits(type);
  if (ne[0] % t.block_size != 0)
    cur.fail("tensor '", name, "': row length ", ne[0], " is not a multiple of the ", t.name, " block size ",
             t.block_size);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(ne[0] / t.block_size), t.block_bytes, &bytes))
    cur.fail("tensor '", name, "': size overflows");
  for (int d = 1; d < kGgufMaxDims; ++d)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(ne[d]), &bytes))
      cur.fail("tensor '", name, "': size overflows");
  return bytes;
}

TensorInfo read_tensor_info(Cursor& cur, size_t index) {
  TensorInfo t;
  const std::string what = concat("tensor ", index);
  t.name = cur.read_string(what + " name", kMaxTensorNameLength);
  const std::string label = concat("tensor '", escape_for_message(t.name), "'");
  const auto n_dims = cur.read<uint32_t>(label);
  if (n_dims < 1 || n_dims > kGgufMaxDims)
    cur.fail(label, ": ", n_dims, " dimensions (must be 1 to ", kGgufMaxDims, ")");
  t.n_dims = static_cast<int>(n_dims);
  int64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const auto v = cur.read<uint64_t>(label);
    if (v > static_cast<uint64_t>(INT64_MAX)) cur.fail(label, ": dimension ", d, " is negative");
    t.ne[d] = static_cast<int64_t>(v);
    if (__builtin_mul_overflow(n_elements, t.ne[d], &n_elements))
      cur.fail(label, ": element count overflows");
  }
  const auto type_id = cur.read<uint32_t>(label);
  const auto type = tensor_type_from_id(type_id);
  if (!type || !is_storage_type(*type))
    cur.fail(label, ": unsupported tensor type ", ggml_type_display_name(type_id));
  t.type = *type;
  t.file_offset = cur.read<uint64_t>(label);
  t.nbytes = tensor_nbytes(cur, label, t.type, t.ne);
  return t;
}

}  // namespace

std::string ggml_type_display_name(uint32_t id) {
  if (const auto t = tensor_type_from_id(id)) return std::string(type_name(*t));
  // ggml type ids Strata does not implement (numbering of ggml.h).
  switch (id) {
    case 4:
      return "q4_2 (removed from ggml)";
    case 5:
      return "q4_3 (removed from ggml)";
    case 16:
      return "iq2_xxs";
    case 17:
      return "iq2_xs";
    case 18:
      return "iq3_xxs";
    case 19:
      return "iq1_s";
    case 20:
      return "iq4_nl";
    case 21:
      return "iq3_s";
    case 22:
      return "iq2_s";
    case 23:
      return "iq4_xs";
    case 24:
      return "i8";
    case 25:
      return "i16";
    case 26:
      return "i32";
    case 27:
      return "i64";
    case 28:
      return "f64";
    case 29:
      return "iq1_m";
    case 31:
      return "q4_0_4_4 (removed from ggml)";
    case 32:
      return "q4_0_4_8 (removed from ggml)";
    case 33:
      return "q4_0_8_8 (removed from ggml)";
    case 34:
      return "tq1_0";
    case 35:
      return "tq2_0";
    case 39:
      return "mxfp4";
    default:
      return concat("id ", id);
  }
}

bool has_gguf_magic(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  uint32_t magic = 0;
  const bool ok = std::fread(&magic, 4, 1, f) == 1;
  std::fclose(f);
  return ok && magic == kGgufMagic;
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->map_ = MappedFile(path);
  f->path_ = path;
  f->parse_image(f->map_.data(), f->map_.size());
  return f;
}

std::unique_ptr<GgufFile> GgufFile::parse(const void* data, size_t size, const std::string& name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = name;
  f->parse_image(static_cast<const uint8_t*>(data), size);
  return f;
}

void GgufFile::parse_image(const uint8_t* data, size_t size) {
  format_ = ModelFormat::Gguf;
  Cursor cur(data, size, path_);
  if (size < 4) cur.fail("not a GGUF file (", size, " bytes)");
  if (cur.read<uint32_t>("magic") != kGgufMagic) cur.fail("not a GGUF file (bad magic)");
  version_ = cur.read<uint32_t>("version");
  if (version_ == 1)
    cur.fail("GGUF version 1 is not supported (re-convert the model with a current llama.cpp)");
  if (version_ == 0x02000000u || version_ == 0x03000000u) cur.fail("big-endian GGUF files are not supported");
  if (version_ != 2 && version_ != 3) cur.fail("unsupported GGUF version ", version_);
  const auto n_tensors = cur.read<uint64_t>("tensor count");
  const auto n_kv = cur.read<uint64_t>("metadata count");
  cur.check_count(n_kv, kMinKvBytes, "metadata key/value");

  MetadataParser values(cur);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = cur.read_string(concat("metadata key ", i), kMaxKeyLength);
    if (key.empty()) cur.fail("metadata key ", i, " is empty");
    const std::string label = escape_for_message(key);
    if (metadata_.contains(key)) cur.fail("duplicate metadata key '", label, "'");
    const auto type_id = cur.read<uint32_t>(label);
    if (!valid_value_type(type_id)) cur.fail("metadata key '", label, "': unknown value type ", type_id);
    GgufValue v = values.read_value(static_cast<GgufType>(type_id), label, 0);
    metadata_.add(std::move(key), std::move(v));
  }

  if (const GgufValue* a = metadata_.find("general.alignment")) {
    const auto v = a->as_uint();
    if (!v || !is_power_of_two(*v) || *v > (uint64_t{1} << 30))
      cur.fail("general.alignment ", a->to_display_string(), " is not a power of two up to 2^30");
    alignment_ = *v;
  }

  cur.check_count(n_tensors, kMinTensorInfoBytes, "tensor info");
  tensors_.reserve(static_cast<size_t>(n_tensors));
  std::unordered_set<std::string> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    tensors_.push_back(read_tensor_info(cur, static_cast<size_t>(i)));
    if (!names.insert(tensors_.back().name).second)
      cur.fail("duplicate tensor name '", escape_for_message(tensors_.back().name), "'");
  }

  // The data section starts at the next multiple of the alignment (a vocab-only file may end
  // before it: it has no data).
  data_offset_ = (cur.pos() + alignment_ - 1) / alignment_ * alignment_;
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(tensors_.size());
  for (TensorInfo& t : tensors_) {
    const std::string label = escape_for_message(t.name);
    if (t.file_offset % alignment_ != 0)
      cur.fail("tensor '", label, "': data offset ", t.file_offset, " is not a multiple of the alignment ",
               alignment_);
    uint64_t end = 0;
    if (__builtin_add_overflow(data_offset_, t.file_offset, &end) ||
        __builtin_add_overflow(end, t.nbytes, &end) || end > size)
      cur.fail("tensor '", label, "': data [", t.file_offset, ", +", t.nbytes, ") lies outside the file (",
               size, " bytes, data section at ", data_offset_, ")");
    t.data = data + data_offset_ + t.file_offset;
    by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->file_offset < b->file_offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorInfo& prev = *by_offset[i - 1];
    if (prev.file_offset + prev.nbytes > by_offset[i]->file_offset)
      cur.fail("tensors '", escape_for_message(prev.name), "' and '", escape_for_message(by_offset[i]->name),
               "' overlap");
  }
}

}  // namespace strata
