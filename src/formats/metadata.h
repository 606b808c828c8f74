// Key/value metadata of a model, in GGUF's type system.
//
// GGUF files carry it natively; the llama2.c and Hugging Face loaders translate their
// configs into the same keys (general.architecture, llama.block_count, tokenizer.ggml.*),
// so the model and tokenizer are configured through one path whatever the file format.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata {

// Numbering as in the GGUF specification.
enum class GgufType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};

std::string_view gguf_type_name(GgufType type);

// An array value: all elements share one GGUF type (nested arrays are allowed by the spec).
struct GgufArray;

class GgufValue {
 public:
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, std::shared_ptr<const GgufArray>, uint64_t, int64_t, double>;

  GgufValue() = default;
  template <typename T>
  GgufValue(GgufType type, T&& v) : type_(type), storage_(std::forward<T>(v)) {}

  static GgufValue of_string(std::string s) { return GgufValue(GgufType::STRING, std::move(s)); }
  static GgufValue of_u32(uint32_t v) { return GgufValue(GgufType::UINT32, v); }
  static GgufValue of_i32(int32_t v) { return GgufValue(GgufType::INT32, v); }
  static GgufValue of_u64(uint64_t v) { return GgufValue(GgufType::UINT64, v); }
  static GgufValue of_f32(float v) { return GgufValue(GgufType::FLOAT32, v); }
  static GgufValue of_bool(bool v) { return GgufValue(GgufType::BOOL, v); }
  static GgufValue of_array(GgufArray a);

  GgufType type() const { return type_; }
  const Storage& storage() const { return storage_; }

  bool is_integer() const;
  bool is_number() const;  // integer or float
  // Conversions; nullopt when the value has another type or does not fit.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  std::optional<double> as_double() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const;
  const GgufArray* as_array() const;
  // Short human-readable rendering (arrays abbreviated) for `strata info`.
  std::string to_display_string(size_t max_array_items = 8) const;

 private:
  GgufType type_ = GgufType::UINT8;
  Storage storage_;
};

struct GgufArray {
  GgufType elem_type = GgufType::UINT8;
  // Typed storage for the common large arrays (vocab), generic values otherwise.
  std::vector<std::string> strings;  // elem_type == STRING
  std::vector<float> f32;            // elem_type == FLOAT32
  std::vector<int32_t> i32;          // elem_type == INT32 (token types)
  std::vector<GgufValue> values;     // any other element type (incl. nested arrays)
  size_t size() const;
};

// Insertion-ordered key/value map (GGUF preserves order; keys are unique).
class Metadata {
 public:
  // Throws strata::Error on a duplicate key.
  void add(std::string key, GgufValue value);
  // Adds or replaces.
  void set(std::string key, GgufValue value);
  bool erase(std::string_view key);
  const GgufValue* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }

  // Typed getters. The *_or variants return the default when the key is absent and throw
  // strata::Error (naming the key) when it is present with an incompatible type.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  std::optional<double> get_double(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  const GgufArray* get_array(std::string_view key) const;
  std::string string_or(std::string_view key, std::string def) const;
  int64_t int_or(std::string_view key, int64_t def) const;
  double double_or(std::string_view key, double def) const;
  bool bool_or(std::string_view key, bool def) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace strata
