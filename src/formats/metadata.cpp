#include "formats/metadata.h"

#include <limits>
#include <sstream>

#include "core/check.h"

namespace strata {

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::UINT8: return "u8";
    case GgufType::INT8: return "i8";
    case GgufType::UINT16: return "u16";
    case GgufType::INT16: return "i16";
    case GgufType::UINT32: return "u32";
    case GgufType::INT32: return "i32";
    case GgufType::FLOAT32: return "f32";
    case GgufType::BOOL: return "bool";
    case GgufType::STRING: return "str";
    case GgufType::ARRAY: return "arr";
    case GgufType::UINT64: return "u64";
    case GgufType::INT64: return "i64";
    case GgufType::FLOAT64: return "f64";
  }
  return "?";
}

GgufValue GgufValue::of_array(GgufArray a) {
  return GgufValue(GgufType::ARRAY, std::make_shared<const GgufArray>(std::move(a)));
}

size_t GgufArray::size() const {
  switch (elem_type) {
    case GgufType::STRING: return strings.size();
    case GgufType::FLOAT32: return f32.size();
    case GgufType::INT32: return i32.size();
    default: return values.size();
  }
}

bool GgufValue::is_integer() const {
  switch (type_) {
    case GgufType::UINT8:
    case GgufType::INT8:
    case GgufType::UINT16:
    case GgufType::INT16:
    case GgufType::UINT32:
    case GgufType::INT32:
    case GgufType::UINT64:
    case GgufType::INT64: return true;
    default: return false;
  }
}

bool GgufValue::is_number() const {
  return is_integer() || type_ == GgufType::FLOAT32 || type_ == GgufType::FLOAT64;
}

std::optional<int64_t> GgufValue::as_int() const {
  if (!is_integer()) return std::nullopt;
  if (type_ == GgufType::UINT64) {
    const uint64_t v = std::get<uint64_t>(storage_);
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<int64_t>(v);
        return std::nullopt;
      },
      storage_);
}

std::optional<uint64_t> GgufValue::as_uint() const {
  if (type_ == GgufType::UINT64) return std::get<uint64_t>(storage_);
  const auto v = as_int();
  if (!v || *v < 0) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

std::optional<double> GgufValue::as_double() const {
  if (type_ == GgufType::FLOAT32) return std::get<float>(storage_);
  if (type_ == GgufType::FLOAT64) return std::get<double>(storage_);
  if (type_ == GgufType::UINT64) return static_cast<double>(std::get<uint64_t>(storage_));
  if (const auto v = as_int()) return static_cast<double>(*v);
  return std::nullopt;
}

std::optional<bool> GgufValue::as_bool() const {
  if (type_ == GgufType::BOOL) return std::get<bool>(storage_);
  return std::nullopt;
}

const std::string* GgufValue::as_string() const {
  return type_ == GgufType::STRING ? &std::get<std::string>(storage_) : nullptr;
}

const GgufArray* GgufValue::as_array() const {
  return type_ == GgufType::ARRAY ? std::get<std::shared_ptr<const GgufArray>>(storage_).get() : nullptr;
}

std::string GgufValue::to_display_string(size_t max_items) const {
  std::ostringstream ss;
  if (const auto* s = as_string()) {
    if (s->size() > 60) ss << '"' << s->substr(0, 57) << "...\"";
    else ss << '"' << *s << '"';
  } else if (const auto* a = as_array()) {
    ss << "[" << gguf_type_name(a->elem_type) << " x " << a->size();
    if (a->size() <= max_items) {
      ss << ":";
      for (size_t i = 0; i < a->size(); ++i) {
        ss << " ";
        if (a->elem_type == GgufType::STRING) ss << '"' << a->strings[i] << '"';
        else if (a->elem_type == GgufType::FLOAT32) ss << a->f32[i];
        else if (a->elem_type == GgufType::INT32) ss << a->i32[i];
        else ss << a->values[i].to_display_string(max_items);
      }
    }
    ss << "]";
  } else if (const auto b = as_bool()) {
    ss << (*b ? "true" : "false");
  } else if (const auto i = as_int()) {
    ss << *i;
  } else if (const auto u = as_uint()) {
    ss << *u;
  } else if (const auto d = as_double()) {
    ss << *d;
  }
  return ss.str();
}

void Metadata::add(std::string key, GgufValue value) {
  if (index_.count(key)) STRATA_THROW("duplicate metadata key '", key, "'");
  index_.emplace(key, entries_.size());
  entries_.emplace_back(std::move(key), std::move(value));
}

void Metadata::set(std::string key, GgufValue value) {
  if (auto it = index_.find(key); it != index_.end()) {
    entries_[it->second].second = std::move(value);
    return;
  }
  add(std::move(key), std::move(value));
}

bool Metadata::erase(std::string_view key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  return true;
}

const GgufValue* Metadata::find(std::string_view key) const {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

std::optional<std::string> Metadata::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto* s = v->as_string()) return *s;
  STRATA_THROW("metadata key '", key, "' has type ", gguf_type_name(v->type()), ", expected a string");
}

std::optional<int64_t> Metadata::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto i = v->as_int()) return i;
  STRATA_THROW("metadata key '", key, "' has type ", gguf_type_name(v->type()),
               ", expected an integer that fits in 64 bits");
}

std::optional<double> Metadata::get_double(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto d = v->as_double()) return d;
  STRATA_THROW("metadata key '", key, "' has type ", gguf_type_name(v->type()), ", expected a number");
}

std::optional<bool> Metadata::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (const auto b = v->as_bool()) return b;
  STRATA_THROW("metadata key '", key, "' has type ", gguf_type_name(v->type()), ", expected a bool");
}

const GgufArray* Metadata::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return nullptr;
  if (const auto* a = v->as_array()) return a;
  STRATA_THROW("metadata key '", key, "' has type ", gguf_type_name(v->type()), ", expected an array");
}

std::string Metadata::string_or(std::string_view key, std::string def) const {
  auto v = get_string(key);
  return v ? *v : def;
}
int64_t Metadata::int_or(std::string_view key, int64_t def) const { return get_int(key).value_or(def); }
double Metadata::double_or(std::string_view key, double def) const { return get_double(key).value_or(def); }
bool Metadata::bool_or(std::string_view key, bool def) const { return get_bool(key).value_or(def); }

}  // namespace strata
