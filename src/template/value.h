// Runtime values of the Jinja engine, with Python semantics.
//
// Chat templates are written against Python objects (HF renders them with Python's Jinja2),
// so values reproduce Python's behaviour: None vs undefined, truthiness, int/float formatting,
// str()/repr(), ==/< across types, dict insertion order. Lists and dicts are immutable once
// built (HF uses ImmutableSandboxedEnvironment, which forbids append/update/...), so they are
// shared by pointer. The only mutable values are Objects (namespace(), loop, joiner, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace strata::jinja {

// JSON as the engine reads it: ordered, because Python dicts keep insertion order and
// `tojson` output must list keys in the order the request gave them.
using Json = nlohmann::ordered_json;

class Value;
class Object;
class Interpreter;

struct ListData;
class DictData;

class Value {
 public:
  enum class Kind : uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

  Value() : v_(UndefinedV{}) {}
  // An undefined value; `message` is the error raised when it is used where that is an error.
  static Value undefined(std::string message);
  static Value none() { return Value(Raw{}, NoneV{}); }
  static Value boolean(bool b) { return Value(Raw{}, b); }
  static Value integer(int64_t i) { return Value(Raw{}, i); }
  static Value number(double d) { return Value(Raw{}, d); }
  static Value string(std::string s) {
    return Value(Raw{}, std::make_shared<const std::string>(std::move(s)));
  }
  static Value string(std::shared_ptr<const std::string> s) { return Value(Raw{}, std::move(s)); }
  // Computes depth/has_objects; limits are the caller's business (see Interpreter::new_list).
  static Value list(std::vector<Value> items, bool is_tuple = false);
  static Value dict(DictData d);
  static Value object(std::shared_ptr<Object> o) { return Value(Raw{}, std::move(o)); }

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  // bool, int or float (Python's bool is an int).
  bool is_number() const { return kind() == Kind::Bool || kind() == Kind::Int || kind() == Kind::Float; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }  // list or tuple
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_object() const { return kind() == Kind::Object; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  // For is_number(): the value as int64 (bool -> 0/1) or double.
  int64_t to_int() const { return is_bool() ? as_bool() : as_int(); }
  double to_double() const;
  const std::string& as_string() const { return *std::get<StrPtr>(v_); }
  const std::shared_ptr<const std::string>& string_ptr() const { return std::get<StrPtr>(v_); }
  const ListData& as_list() const;
  const std::shared_ptr<const ListData>& list_ptr() const { return std::get<ListPtr>(v_); }
  const DictData& as_dict() const;
  Object& as_object() const { return *std::get<ObjPtr>(v_); }
  const std::shared_ptr<Object>& object_ptr() const { return std::get<ObjPtr>(v_); }
  const std::string& undefined_message() const;

  // Container nesting depth (0 for scalars; objects count as 1).
  uint32_t depth() const;
  // True for Objects and containers holding one.
  bool has_objects() const;

 private:
  struct UndefinedV {
    std::shared_ptr<const std::string> message;
  };
  struct NoneV {};
  using StrPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using ObjPtr = std::shared_ptr<Object>;
  using Storage = std::variant<UndefinedV, NoneV, bool, int64_t, double, StrPtr, ListPtr, DictPtr, ObjPtr>;

  struct Raw {};
  Value(Raw, Storage v) : v_(std::move(v)) {}

  Storage v_;
};

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;        // nesting depth of containers, this one included
  bool has_objects = false;  // some element (recursively) is an Object
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

// Insertion-ordered dict. Keys must be hashable in Python's sense (no lists/dicts/objects).
// Lookups are hashed for every key type (string keys without any conversion).
class DictData {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // d[key] = value. Throws strata::Error for unhashable keys.
  void set(Value key, Value value);
  const std::vector<std::pair<Value, Value>>& items() const { return items_; }
  size_t size() const { return items_.size(); }

  uint32_t depth = 1;
  bool has_objects = false;

 private:
  std::vector<std::pair<Value, Value>> items_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> string_index_;
  std::unordered_map<std::string, size_t> other_index_;  // by hash_key()
};

inline const ListData& Value::as_list() const {
  return *std::get<ListPtr>(v_);
}
inline const DictData& Value::as_dict() const {
  return *std::get<DictPtr>(v_);
}
inline bool Value::is_tuple() const {
  return is_list() && as_list().is_tuple;
}

// Arguments of a call: positional then keyword, as written.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
};

// Binds CallArgs to a Python signature `name(p0, p1, ...)`: positional first, then keywords.
// Throws strata::Error (TypeError wording) on surplus, duplicate or unknown arguments.
class ArgBinder {
 public:
  ArgBinder(std::string_view func, const CallArgs& args, std::initializer_list<std::string_view> params,
            size_t skip_positional = 0);
  bool has(size_t i) const { return bound_[i] != nullptr; }
  // The argument, or `def` when not given.
  const Value& get(size_t i, const Value& def = kUndefined) const { return bound_[i] ? *bound_[i] : def; }

 private:
  static const Value kUndefined;
  std::vector<const Value*> bound_;
};

// Mutable or callable runtime objects: namespace(), loop, macros, builtin functions, ...
class Object {
 public:
  virtual ~Object() = default;
  // Python type name for messages ("Namespace", "Macro", "builtin_function_or_method").
  virtual std::string type_name() const = 0;
  virtual Value get_attr(std::string_view name);
  virtual bool callable() const { return false; }
  virtual Value call(Interpreter& in, CallArgs& args);
  virtual std::string repr() const;
  // Iterable objects (generators) hand out their remaining items, consuming them.
  virtual bool iterable() const { return false; }
  virtual std::vector<Value> take_items() { return {}; }
};

// str(v) / repr(v), throwing strata::Error when the text would exceed max_bytes.
std::string to_str(const Value& v, size_t max_bytes);
std::string to_repr(const Value& v, size_t max_bytes);
// Python truthiness (undefined is false).
bool truthy(const Value& v);
// Python ==; undefined equals only undefined.
bool py_equal(const Value& a, const Value& b);
// Three-way Python ordering (<); throws strata::Error (TypeError) when the types do not order.
int py_compare(const Value& a, const Value& b, std::string_view op);
// Python type name: 'str', 'int', 'NoneType', 'list', 'tuple', 'dict', ...
std::string type_name(const Value& v);
bool is_hashable(const Value& v);
// For a hashable non-string value: a string equal for exactly the values Python treats as the
// same dict key (1, 1.0 and True share one).
std::string hash_key(const Value& v);

// Converts JSON to values; throws strata::Error when nesting exceeds max_depth or an
// integer does not fit in int64.
Value from_json(const Json& j, uint32_t max_depth);

}  // namespace strata::jinja
