#include "template/value.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

// Hard stop for the recursive printers and comparisons; the interpreter keeps real values far
// below it (containers are depth-checked when built, namespaces cannot hold objects).
constexpr int kMaxRecursion = 4096;

[[noreturn]] void throw_undefined(const Value& v) {
  throw Error(v.undefined_message());
}

}  // namespace

const Value ArgBinder::kUndefined;

// ---- DictData ------------------------------------------------------------------------------

const Value* DictData::find(std::string_view key) const {
  const auto it = string_index_.find(key);
  return it == string_index_.end() ? nullptr : &items_[it->second].second;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  const auto it = other_index_.find(hash_key(key));
  return it == other_index_.end() ? nullptr : &items_[it->second].second;
}

void DictData::set(Value key, Value value) {
  if (!is_hashable(key)) STRATA_THROW("unhashable type: '", type_name(key), "'");
  depth = std::max<uint32_t>(depth, value.depth() + 1);
  has_objects = has_objects || value.has_objects();
  if (key.is_string()) {
    const auto it = string_index_.find(std::string_view(key.as_string()));
    if (it != string_index_.end()) {
      items_[it->second].second = std::move(value);
      return;
    }
    string_index_.emplace(key.as_string(), items_.size());
  } else {
    const auto [it, inserted] = other_index_.emplace(hash_key(key), items_.size());
    if (!inserted) {
      items_[it->second].second = std::move(value);
      return;
    }
  }
  items_.emplace_back(std::move(key), std::move(value));
}

// ---- Value ---------------------------------------------------------------------------------

Value Value::undefined(std::string message) {
  return Value(Raw{}, UndefinedV{std::make_shared<const std::string>(std::move(message))});
}

Value Value::list(std::vector<Value> items, bool is_tuple) {
  auto data = std::make_shared<ListData>();
  data->is_tuple = is_tuple;
  for (const Value& item : items) {
    data->depth = std::max<uint32_t>(data->depth, item.depth() + 1);
    data->has_objects = data->has_objects || item.has_objects();
  }
  data->items = std::move(items);
  return Value(Raw{}, ListPtr(std::move(data)));
}

Value Value::dict(DictData d) {
  return Value(Raw{}, DictPtr(std::make_shared<const DictData>(std::move(d))));
}

double Value::to_double() const {
  switch (kind()) {
    case Kind::Bool:
      return as_bool() ? 1.0 : 0.0;
    case Kind::Int:
      return static_cast<double>(as_int());
    default:
      return as_float();
  }
}

const std::string& Value::undefined_message() const {
  static const std::string kDefault = "value is undefined";
  const auto& msg = std::get<UndefinedV>(v_).message;
  return msg && !msg->empty() ? *msg : kDefault;
}

uint32_t Value::depth() const {
  switch (kind()) {
    case Kind::List:
      return as_list().depth;
    case Kind::Dict:
      return as_dict().depth;
    case Kind::Object:
      return 1;
    default:
      return 0;
  }
}

bool Value::has_objects() const {
  switch (kind()) {
    case Kind::List:
      return as_list().has_objects;
    case Kind::Dict:
      return as_dict().has_objects;
    case Kind::Object:
      return true;
    default:
      return false;
  }
}

// ---- ArgBinder -----------------------------------------------------------------------------

ArgBinder::ArgBinder(std::string_view func, const CallArgs& args,
                     std::initializer_list<std::string_view> params, size_t skip_positional)
    : bound_(params.size(), nullptr) {
  const std::vector<std::string_view> names(params);
  if (args.args.size() > skip_positional + names.size())
    STRATA_THROW(func, "() takes at most ", names.size(), " argument(s) (",
                 args.args.size() - skip_positional, " given)");
  for (size_t i = skip_positional; i < args.args.size(); ++i) bound_[i - skip_positional] = &args.args[i];
  for (const auto& [key, value] : args.kwargs) {
    const auto it = std::find(names.begin(), names.end(), key);
    if (it == names.end()) STRATA_THROW(func, "() got an unexpected keyword argument '", key, "'");
    const size_t idx = static_cast<size_t>(it - names.begin());
    if (bound_[idx]) STRATA_THROW(func, "() got multiple values for argument '", key, "'");
    bound_[idx] = &value;
  }
}

// ---- Object --------------------------------------------------------------------------------

Value Object::get_attr(std::string_view name) {
  return Value::undefined(concat("'", type_name(), " object' has no attribute '", name, "'"));
}

Value Object::call(Interpreter&, CallArgs&) {
  STRATA_THROW("'", type_name(), "' object is not callable");
}

std::string Object::repr() const {
  return concat("<", type_name(), " object>");
}

// ---- str() / repr() ------------------------------------------------------------------------

namespace {

class BoundedWriter {
 public:
  explicit BoundedWriter(size_t max_bytes) : max_(max_bytes) {}
  void append(std::string_view s) {
    if (out_.size() + s.size() > max_) STRATA_THROW("string value exceeds the limit of ", max_, " bytes");
    out_.append(s);
  }
  std::string take() { return std::move(out_); }

 private:
  size_t max_;
  std::string out_;
};

void write_repr(BoundedWriter& w, const Value& v, int depth);

void write_scalar(BoundedWriter& w, const Value& v, bool repr) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      w.append(repr ? "Undefined" : "");
      break;
    case Value::Kind::None:
      w.append("None");
      break;
    case Value::Kind::Bool:
      w.append(v.as_bool() ? "True" : "False");
      break;
    case Value::Kind::Int:
      w.append(std::to_string(v.as_int()));
      break;
    case Value::Kind::Float:
      w.append(py_float_repr(v.as_float()));
      break;
    case Value::Kind::String:
      if (repr)
        w.append(py_str_repr(v.as_string()));
      else
        w.append(v.as_string());
      break;
    default:
      STRATA_CHECK(false, "not a scalar");
  }
}

void write_repr(BoundedWriter& w, const Value& v, int depth) {
  if (depth > kMaxRecursion) STRATA_THROW("value nested too deeply to print");
  switch (v.kind()) {
    case Value::Kind::List: {
      const ListData& l = v.as_list();
      w.append(l.is_tuple ? "(" : "[");
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) w.append(", ");
        write_repr(w, l.items[i], depth + 1);
      }
      if (l.is_tuple && l.items.size() == 1) w.append(",");
      w.append(l.is_tuple ? ")" : "]");
      break;
    }
    case Value::Kind::Dict: {
      w.append("{");
      bool first = true;
      for (const auto& [k, val] : v.as_dict().items()) {
        if (!first) w.append(", ");
        first = false;
        write_repr(w, k, depth + 1);
        w.append(": ");
        write_repr(w, val, depth + 1);
      }
      w.append("}");
      break;
    }
    case Value::Kind::Object:
      w.append(v.as_object().repr());
      break;
    default:
      write_scalar(w, v, /*repr=*/true);
  }
}

}  // namespace

std::string to_str(const Value& v, size_t max_bytes) {
  BoundedWriter w(max_bytes);
  switch (v.kind()) {
    case Value::Kind::List:
    case Value::Kind::Dict:
    case Value::Kind::Object:
      write_repr(w, v, 0);
      break;
    default:
      write_scalar(w, v, /*repr=*/false);
  }
  return w.take();
}

std::string to_repr(const Value& v, size_t max_bytes) {
  BoundedWriter w(max_bytes);
  write_repr(w, v, 0);
  return w.take();
}

// ---- truthiness, equality, ordering --------------------------------------------------------

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return false;
    case Value::Kind::Bool:
      return v.as_bool();
    case Value::Kind::Int:
      return v.as_int() != 0;
    case Value::Kind::Float:
      return v.as_float() != 0.0;
    case Value::Kind::String:
      return !v.as_string().empty();
    case Value::Kind::List:
      return !v.as_list().items.empty();
    case Value::Kind::Dict:
      return v.as_dict().size() != 0;
    case Value::Kind::Object:
      return true;
  }
  return false;
}

namespace {

bool equal_rec(const Value& a, const Value& b, int depth) {
  if (depth > kMaxRecursion) STRATA_THROW("values nested too deeply to compare");
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    return a.to_int() == b.to_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None:
      return true;
    case Value::Kind::String:
      return a.string_ptr() == b.string_ptr() || a.as_string() == b.as_string();
    case Value::Kind::List: {
      const ListData &x = a.as_list(), &y = b.as_list();
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equal_rec(x.items[i], y.items[i], depth + 1)) return false;
      return true;
    }
    case Value::Kind::Dict: {
      const DictData &x = a.as_dict(), &y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items()) {
        const Value* other = y.find(k);
        if (!other || !equal_rec(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Value::Kind::Object:
      return a.object_ptr() == b.object_ptr();
    default:
      return false;
  }
}

int compare_rec(const Value& a, const Value& b, std::string_view op, int depth) {
  if (depth > kMaxRecursion) STRATA_THROW("values nested too deeply to compare");
  if (a.is_undefined()) throw_undefined(a);
  if (b.is_undefined()) throw_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.to_double(), y = b.to_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.to_int(), y = b.to_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto &x = a.as_list().items, &y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal_rec(x[i], y[i], depth + 1)) continue;
      return compare_rec(x[i], y[i], op, depth + 1);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  STRATA_THROW("'", op, "' not supported between instances of '", type_name(a), "' and '", type_name(b), "'");
}

}  // namespace

bool py_equal(const Value& a, const Value& b) {
  return equal_rec(a, b, 0);
}

int py_compare(const Value& a, const Value& b, std::string_view op) {
  return compare_rec(a, b, op, 0);
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
      return "Undefined";
    case Value::Kind::None:
      return "NoneType";
    case Value::Kind::Bool:
      return "bool";
    case Value::Kind::Int:
      return "int";
    case Value::Kind::Float:
      return "float";
    case Value::Kind::String:
      return "str";
    case Value::Kind::List:
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::Dict:
      return "dict";
    case Value::Kind::Object:
      return v.as_object().type_name();
  }
  return "?";
}

bool is_hashable(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Dict:
      return false;
    case Value::Kind::List:
      if (!v.is_tuple()) return false;
      for (const Value& item : v.as_list().items)
        if (!is_hashable(item)) return false;
      return true;
    default:
      return true;
  }
}

namespace {

std::string tagged(char tag, std::string_view body) {
  std::string key(1, tag);
  key.append(body);
  return key;
}

}  // namespace

std::string hash_key(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::None:
      return "N";
    case Value::Kind::Bool:
    case Value::Kind::Int:
      return tagged('i', std::to_string(v.to_int()));
    case Value::Kind::Float: {
      const double d = v.as_float();
      if (d == std::trunc(d) && std::fabs(d) < 9.2e18)
        return tagged('i', std::to_string(static_cast<int64_t>(d)));
      return tagged('f', py_float_repr(d));
    }
    case Value::Kind::String: {
      std::string key = tagged('s', std::to_string(v.as_string().size()));
      key.push_back(':');
      key.append(v.as_string());
      return key;
    }
    case Value::Kind::List: {
      std::string key = "t(";
      for (const Value& item : v.as_list().items) {
        key.append(hash_key(item));
        key.push_back(',');
      }
      key.push_back(')');
      return key;
    }
    case Value::Kind::Undefined:
      return "U";
    default:
      STRATA_THROW("unhashable type: '", type_name(v), "'");
  }
}

// ---- JSON ----------------------------------------------------------------------------------

namespace {

Value from_json_rec(const Json& j, uint32_t depth, uint32_t max_depth) {
  if (depth > max_depth) STRATA_THROW("JSON value nested deeper than ", max_depth, " levels");
  switch (j.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case Json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) STRATA_THROW("JSON integer ", u, " is too large");
      return Value::integer(static_cast<int64_t>(u));
    }
    case Json::value_t::number_float:
      return Value::number(j.get<double>());
    case Json::value_t::string:
      return Value::string(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const Json& e : j) items.push_back(from_json_rec(e, depth + 1, max_depth));
      return Value::list(std::move(items));
    }
    case Json::value_t::object: {
      DictData d;
      for (auto it = j.begin(); it != j.end(); ++it)
        d.set(Value::string(it.key()), from_json_rec(it.value(), depth + 1, max_depth));
      return Value::dict(std::move(d));
    }
    default:
      STRATA_THROW("unsupported JSON value type");
  }
}

}  // namespace

Value from_json(const Json& j, uint32_t max_depth) {
  return from_json_rec(j, 1, max_depth);
}

}  // namespace strata::jinja
