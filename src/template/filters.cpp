// Jinja2's builtin filters and tests, with HF's `tojson` (json.dumps, ensure_ascii=False).
// Filters that return generators in Python (map, select, items, ...) return IteratorObjects,
// which share the generator's quirks: always truthy, no len(), consumed once.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_map>
#include <unordered_set>

#include "template/builtin_args.h"
#include "template/builtins.h"
#include "template/json_dumps.h"
#include "template/operators.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

using Items = std::vector<Value>;

// ---- helpers -------------------------------------------------------------------------------

// Jinja's attribute paths: "a.b.0" looks up a, then b, then item 0.
std::vector<Value> attribute_parts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  std::string_view s = attribute.as_string();
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view part =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    const bool digits =
        !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && part.size() < 18)
      parts.push_back(Value::integer(std::strtoll(std::string(part).c_str(), nullptr, 10)));
    else
      parts.push_back(Value::string(std::string(part)));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return parts;
}

Value lookup_path(Interpreter& in, Value item, const std::vector<Value>& parts, const Value* default_value) {
  for (const Value& part : parts) {
    item = in.get_item(item, part);
    if (default_value && item.is_undefined()) item = *default_value;
  }
  return item;
}

Value lowered(const Value& v) {
  return v.is_string() ? Value::string(py_lower(v.as_string())) : v;
}

// Key function of sort/min/max/unique: attribute lookup, optionally case-folded.
struct KeyFn {
  std::vector<std::vector<Value>> paths;  // several for "a,b" in sort
  bool case_sensitive;
  bool multi;

  Value operator()(Interpreter& in, const Value& item) const {
    if (!multi) {
      const Value v = lookup_path(in, item, paths[0], nullptr);
      return case_sensitive ? v : lowered(v);
    }
    std::vector<Value> keys;
    for (const auto& p : paths) {
      const Value v = lookup_path(in, item, p, nullptr);
      keys.push_back(case_sensitive ? v : lowered(v));
    }
    return Value::list(std::move(keys));
  }
};

KeyFn make_key(const Value& attribute, bool case_sensitive, bool multi) {
  KeyFn k{{}, case_sensitive, multi};
  if (multi && attribute.is_string()) {
    std::string_view s = attribute.as_string();
    size_t start = 0;
    while (true) {
      const size_t comma = s.find(',', start);
      k.paths.push_back(attribute_parts(Value::string(std::string(s.substr(start, comma - start)))));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
  } else {
    k.paths.push_back(attribute_parts(attribute));
  }
  return k;
}

// Python's sorted(): stable, and reverse keeps equal elements in their original order.
void sort_by_key(Interpreter& in, Items& items, const KeyFn& key, bool reverse) {
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (const Value& item : items) keyed.emplace_back(key(in, item), item);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? py_compare(b.first, a.first, "<") < 0 : py_compare(a.first, b.first, "<") < 0;
  });
  for (size_t i = 0; i < items.size(); ++i) items[i] = std::move(keyed[i].second);
}

Items items_of(Interpreter& in, const Value& v) {
  return *in.iterate(v);
}

// ---- filters -------------------------------------------------------------------------------

Value f_abs(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder("abs", a, {});
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.to_int();
    if (i == INT64_MIN) STRATA_THROW("integer overflow");
    return Value::integer(i < 0 ? -i : i);
  }
  if (v.is_undefined()) throw Error(v.undefined_message());
  STRATA_THROW("bad operand type for abs(): '", type_name(v), "'");
}

Value f_attr(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("attr", a, {"name"});
  const std::string& name = string_arg(b.get(0), "attr()");
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (v.is_object()) return v.as_object().get_attr(name);
  if (std::optional<Value> attr = python_attribute(in, v, name)) return *attr;
  return Value::undefined(concat("'", type_name(v), " object' has no attribute '", name, "'"));
}

Value f_batch(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("batch", a, {"linecount", "fill_with"});
  const int64_t n = int_arg(b.get(0), "batch()");
  if (n <= 0) STRATA_THROW("batch() linecount must be positive");
  const Items items = items_of(in, v);
  Items batches, current;
  for (const Value& item : items) {
    current.push_back(item);
    if (static_cast<int64_t>(current.size()) == n)
      batches.push_back(in.new_list(std::move(current))), current.clear();
  }
  if (!current.empty()) {
    if (b.has(1) && !b.get(1).is_none())
      while (static_cast<int64_t>(current.size()) < n) current.push_back(b.get(1));
    batches.push_back(in.new_list(std::move(current)));
  }
  return in.new_iterator(std::move(batches), "generator");
}

Value f_capitalize(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("capitalize", a, {});
  return in.new_string(py_capitalize(soft_str(in, v)));
}

std::string pad_center(Interpreter& in, const std::string& s, int64_t width, std::string_view fill) {
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return s;
  in.check_string_size(static_cast<size_t>(width) * fill.size());
  const int64_t marg = width - len;
  const int64_t left = marg / 2 + (marg & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("center", a, {"width"});
  const int64_t width = b.has(0) ? int_arg(b.get(0), "center()") : 80;
  return in.new_string(pad_center(in, soft_str(in, v), width, " "));
}

Value f_length(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder("length", a, {});
  switch (v.kind()) {
    case Value::Kind::String:
      return Value::integer(static_cast<int64_t>(utf8_length(v.as_string())));
    case Value::Kind::List:
      return Value::integer(static_cast<int64_t>(v.as_list().items.size()));
    case Value::Kind::Dict:
      return Value::integer(static_cast<int64_t>(v.as_dict().size()));
    case Value::Kind::Undefined:
      return Value::integer(0);
    default:
      STRATA_THROW("object of type '", type_name(v), "' has no len()");
  }
}

Value f_default(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder b("default", a, {"default_value", "boolean"});
  if (v.is_undefined() || (truthy(b.get(1)) && !truthy(v))) return b.has(0) ? b.get(0) : Value::string("");
  return v;
}

Value f_dictsort(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("dictsort", a, {"case_sensitive", "by", "reverse"});
  if (!v.is_dict()) STRATA_THROW("dictsort() requires a mapping, not ", type_name(v));
  const std::string by = b.has(1) ? string_arg(b.get(1), "dictsort()") : "key";
  if (by != "key" && by != "value") STRATA_THROW("You can only sort by either \"key\" or \"value\"");
  const bool case_sensitive = truthy(b.get(0));
  Items pairs;
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [k, val] : v.as_dict().items()) {
    const Value& sort_on = by == "key" ? k : val;
    keyed.emplace_back(case_sensitive ? sort_on : lowered(sort_on), in.new_list({k, val}, true));
  }
  const bool reverse = truthy(b.get(2));
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_compare(y.first, x.first, "<") < 0 : py_compare(x.first, y.first, "<") < 0;
  });
  for (auto& kv : keyed) pairs.push_back(std::move(kv.second));
  return in.new_list(std::move(pairs));
}

Value f_escape(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("escape", a, {});
  std::string out;
  for (char c : soft_str(in, v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return in.new_string(std::move(out));
}

Value f_first(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("first", a, {});
  const auto items = in.iterate(v);
  return items->empty() ? Value::undefined("No first item, sequence was empty.") : items->front();
}

Value f_last(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("last", a, {});
  if (v.is_object()) STRATA_THROW("'", type_name(v), "' object is not reversible");
  const auto items = in.iterate(v);
  return items->empty() ? Value::undefined("No last item, sequence was empty.") : items->back();
}

// Python's float(str): surrounding whitespace, underscores between digits, inf/nan.
std::optional<double> parse_py_float(const std::string& text) {
  const std::string s = py_strip(text, nullptr, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty()) return std::nullopt;
  const std::string low = py_lower(clean);
  const std::string body = (low[0] == '+' || low[0] == '-') ? low.substr(1) : low;
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double x = body == "nan" ? NAN : INFINITY;
    return low[0] == '-' ? -x : x;
  }
  for (char c : body)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != '+' && c != '-')
      return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

Value f_float(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder b("float", a, {"default"});
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (v.is_number()) return Value::number(v.to_double());
  if (v.is_string())
    if (const auto d = parse_py_float(v.as_string())) return Value::number(*d);
  return b.has(0) ? b.get(0) : Value::number(0.0);
}

// Python's int(str, base).
std::optional<int64_t> parse_py_int(const std::string& text, int64_t base) {
  std::string s = py_strip(text, nullptr, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) neg = s[0] == '-', s.erase(0, 1);
  if (s.size() > 2 && s[0] == '0') {
    const char p = static_cast<char>(s[1] | 0x20);
    const int64_t prefix_base = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
    if (prefix_base && (base == prefix_base || base == 0)) s.erase(0, 2), base = prefix_base;
  }
  if (base == 0) base = 10;
  if (s.empty() || s.front() == '_' || s.back() == '_' || s.find("__") != std::string::npos)
    return std::nullopt;
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, static_cast<int>(base));
  if (errno == ERANGE || end != s.c_str() + s.size() || s[0] == '-' || s[0] == '+' || s[0] == ' ')
    return std::nullopt;
  return neg ? -v : v;
}

Value f_int(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder b("int", a, {"default", "base"});
  const Value def = b.has(0) ? b.get(0) : Value::integer(0);
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (v.is_int() || v.is_bool()) return Value::integer(v.to_int());
  if (v.is_float()) {
    const double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18)
      STRATA_THROW("cannot convert float ", py_float_repr(d), " to integer");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    const int64_t base = b.has(1) ? int_arg(b.get(1), "int()") : 10;
    if (base != 0 && (base < 2 || base > 36)) STRATA_THROW("int() base must be >= 2 and <= 36, or 0");
    if (const auto i = parse_py_int(v.as_string(), base)) return Value::integer(*i);
    if (const auto d = parse_py_float(v.as_string()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(std::trunc(*d)));
  }
  return def;
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("indent", a, {"width", "first", "blank"});
  std::string indention = "    ";
  if (b.has(0)) {
    if (b.get(0).is_string()) {
      indention = b.get(0).as_string();
    } else {
      const int64_t w = int_arg(b.get(0), "indent()");
      in.check_string_size(static_cast<size_t>(std::max<int64_t>(w, 0)));
      indention = std::string(static_cast<size_t>(std::max<int64_t>(w, 0)), ' ');
    }
  }
  const std::vector<std::string> lines = py_splitlines(soft_str(in, v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    const bool indent_line = i == 0 ? truthy(b.get(1)) : (truthy(b.get(2)) || !lines[i].empty());
    if (indent_line) out += indention;
    out += lines[i];
    in.check_string_size(out.size());
  }
  return in.new_string(std::move(out));
}

Value f_items(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("items", a, {});
  if (v.is_undefined()) return in.new_iterator({}, "generator");
  if (!v.is_dict()) STRATA_THROW("Can only get item pairs from a mapping.");
  Items pairs;
  for (const auto& [k, val] : v.as_dict().items()) pairs.push_back(in.new_list({k, val}, true));
  return in.new_iterator(std::move(pairs), "generator");
}

Value f_join(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("join", a, {"d", "attribute"});
  const std::string sep = b.has(0) ? soft_str(in, b.get(0)) : "";
  const std::vector<Value> parts = attribute_parts(b.get(1));
  std::string out;
  bool first = true;
  const auto iterated = in.iterate(v);
  for (const Value& item : *iterated) {
    if (!first) out += sep;
    first = false;
    out += soft_str(in, b.has(1) ? lookup_path(in, item, parts, nullptr) : item);
    in.check_string_size(out.size());
  }
  return in.new_string(std::move(out));
}

Value f_list(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("list", a, {});
  return in.new_list(items_of(in, v));
}

Value f_lower(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("lower", a, {});
  return in.new_string(py_lower(soft_str(in, v)));
}

Value f_upper(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("upper", a, {});
  return in.new_string(py_upper(soft_str(in, v)));
}

Value f_map(Interpreter& in, const Value& v, const CallArgs& a) {
  Items out;
  if (!truthy(v)) return in.new_iterator({}, "generator");
  const Items items = items_of(in, v);
  const bool by_attribute =
      a.args.empty() &&
      std::any_of(a.kwargs.begin(), a.kwargs.end(), [](const auto& kw) { return kw.first == "attribute"; });
  if (by_attribute) {
    ArgBinder b("map", a, {"attribute", "default"});
    const std::vector<Value> parts = attribute_parts(b.get(0));
    const Value def = b.get(1);
    const bool use_default = b.has(1) && !def.is_none();
    for (const Value& item : items) out.push_back(lookup_path(in, item, parts, use_default ? &def : nullptr));
  } else {
    if (a.args.empty()) STRATA_THROW("map requires a filter argument");
    const std::string& name = string_arg(a.args[0], "map()");
    CallArgs rest{{a.args.begin() + 1, a.args.end()}, a.kwargs};
    for (const Value& item : items) out.push_back(in.call_filter(name, item, rest));
  }
  return in.new_iterator(std::move(out), "generator");
}

Value min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  ArgBinder b(want_max ? "max" : "min", a, {"case_sensitive", "attribute"});
  const Items items = items_of(in, v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const KeyFn key = make_key(b.get(1), truthy(b.get(0)), false);
  size_t best = 0;
  Value best_key = key(in, items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(in, items[i]);
    const int c = py_compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) best = i, best_key = std::move(k);
  }
  return items[best];
}

Value f_max(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_max(in, v, a, true);
}
Value f_min(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_max(in, v, a, false);
}

// select / reject / selectattr / rejectattr.
Value select_or_reject(Interpreter& in, const Value& v, const CallArgs& a, bool keep_if, bool by_attr) {
  if (!truthy(v)) return in.new_iterator({}, "generator");
  size_t off = 0;
  std::vector<Value> parts;
  if (by_attr) {
    if (a.args.empty()) STRATA_THROW("Missing parameter for attribute name");
    parts = attribute_parts(a.args[0]);
    off = 1;
  }
  const bool has_test = a.args.size() > off;
  std::string test;
  if (has_test) test = string_arg(a.args[off], "select()");
  const CallArgs rest{
      has_test ? Items(a.args.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.args.end()) : Items{},
      a.kwargs};
  Items out;
  for (const Value& item : items_of(in, v)) {
    const Value subject = by_attr ? lookup_path(in, item, parts, nullptr) : item;
    const bool ok = has_test ? in.call_test(test, subject, rest) : truthy(subject);
    if (ok == keep_if) out.push_back(item);
  }
  return in.new_iterator(std::move(out), "generator");
}

Value f_select(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, true, false);
}
Value f_reject(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, false, true);
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("replace", a, {"old", "new", "count"});
  const int64_t count = b.has(2) && !b.get(2).is_none() ? int_arg(b.get(2), "replace()") : -1;
  const std::string s = soft_str(in, v), old_sub = soft_str(in, b.get(0)), new_sub = soft_str(in, b.get(1));
  in.check_string_size(py_replace_size(s, old_sub, new_sub, count));
  return in.new_string(py_replace(s, old_sub, new_sub, count, in.limits().max_output_bytes));
}

Value f_reverse(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("reverse", a, {});
  if (v.is_string()) return slice_value(in, v, std::nullopt, std::nullopt, -1);
  Items items = items_of(in, v);
  std::reverse(items.begin(), items.end());
  if (v.is_list()) return in.new_iterator(std::move(items), "list_reverseiterator");
  if (v.is_dict()) return in.new_iterator(std::move(items), "dict_reversekeyiterator");
  return in.new_list(std::move(items));
}

// round(x, n) on floats: correctly rounded, ties to even on the exact binary value, as
// CPython does; printf's %.Nf has the same semantics.
double py_round(double x, int64_t n) {
  if (!std::isfinite(x) || n > 300) return x;
  if (n < -308) return 0.0 * x;
  if (n >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(n), x);
    return std::strtod(buf, nullptr);
  }
  const double scale = std::pow(10.0, static_cast<double>(-n));
  return std::nearbyint(x / scale) * scale;
}

Value f_round(Interpreter&, const Value& v, const CallArgs& a) {
  ArgBinder b("round", a, {"precision", "method"});
  const int64_t precision = b.has(0) ? int_arg(b.get(0), "round()") : 0;
  const std::string method = b.has(1) ? string_arg(b.get(1), "round()") : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    STRATA_THROW("method must be common, ceil or floor");
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (!v.is_number()) STRATA_THROW("type ", type_name(v), " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float() && precision >= 0) return Value::integer(v.to_int());
    const double r = py_round(v.to_double(), precision);
    return v.is_float() ? Value::number(r) : Value::integer(static_cast<int64_t>(r));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.to_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("safe", a, {});
  return v.is_string() ? v : in.new_string(soft_str(in, v));
}

Value f_sort(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("sort", a, {"reverse", "case_sensitive", "attribute"});
  Items items = items_of(in, v);
  sort_by_key(in, items, make_key(b.get(2), truthy(b.get(1)), true), truthy(b.get(0)));
  return in.new_list(std::move(items));
}

Value f_string(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("string", a, {});
  return v.is_string() ? v : in.new_string(soft_str(in, v));
}

Value f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("sum", a, {"attribute", "start"});
  Value total = b.has(1) ? b.get(1) : Value::integer(0);
  if (total.is_string()) STRATA_THROW("sum() can't sum strings [use ''.join(seq) instead]");
  const std::vector<Value> parts = attribute_parts(b.get(0));
  for (const Value& item : items_of(in, v))
    total = binary_op(in, BinaryOp::Add, total, b.has(0) ? lookup_path(in, item, parts, nullptr) : item);
  return total;
}

Value f_title(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("title", a, {});
  // Jinja capitalises each piece after a run of '-', whitespace, '(', '{', '[' or '<'.
  const std::string s = soft_str(in, v);
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    const bool delim = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_py_space(c);
    utf8_append(out, delim ? c : (word_start ? to_upper(c) : to_lower(c)));
    word_start = delim;
  }
  return in.new_string(std::move(out));
}

// HF's override: tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value f_tojson(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("tojson", a, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = truthy(b.get(0));
  const Value& indent = b.get(1);
  if (indent.is_string()) {
    o.indent = indent.as_string();
  } else if (indent.is_int() || indent.is_bool()) {
    const int64_t n = std::max<int64_t>(indent.to_int(), 0);
    in.check_string_size(static_cast<size_t>(n));
    o.indent = std::string(static_cast<size_t>(n), ' ');
  } else if (!indent.is_none() && !indent.is_undefined()) {
    STRATA_THROW("tojson() indent must be an int or a string, not ", type_name(indent));
  }
  const Value& seps = b.get(2);
  if (seps.is_list()) {
    const auto& s = seps.as_list().items;
    if (s.size() != 2 || !s[0].is_string() || !s[1].is_string())
      STRATA_THROW("tojson() separators must be a pair of strings");
    o.item_separator = s[0].as_string();
    o.key_separator = s[1].as_string();
  } else if (!seps.is_none() && !seps.is_undefined()) {
    STRATA_THROW("tojson() separators must be a pair of strings");
  }
  o.sort_keys = truthy(b.get(3));
  o.max_bytes = in.limits().max_output_bytes;
  return in.new_string(json_dumps(v, o));
}

Value f_trim(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("trim", a, {"chars"});
  const std::string chars = b.has(0) && !b.get(0).is_none() ? soft_str(in, b.get(0)) : "";
  const bool custom = b.has(0) && !b.get(0).is_none();
  return in.new_string(py_strip(soft_str(in, v), custom ? &chars : nullptr, true, true));
}

Value f_truncate(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("truncate", a, {"length", "killwords", "end", "leeway"});
  const int64_t length = b.has(0) ? int_arg(b.get(0), "truncate()") : 255;
  const std::string end = b.has(2) ? soft_str(in, b.get(2)) : "...";
  const int64_t leeway = b.has(3) && !b.get(3).is_none() ? int_arg(b.get(3), "truncate()") : 5;
  const auto end_len = static_cast<int64_t>(utf8_length(end));
  if (length < end_len) STRATA_THROW("expected length >= ", end_len, ", got ", length);
  if (leeway < 0) STRATA_THROW("expected leeway >= 0, got ", leeway);
  const std::string s = soft_str(in, v);
  if (static_cast<int64_t>(utf8_length(s)) <= length + leeway) return Value::string(s);
  const Value head = slice_value(in, Value::string(s), std::nullopt, length - end_len, std::nullopt);
  if (truthy(b.get(1))) return in.new_string(head.as_string() + end);
  const std::string sep = " ";
  return in.new_string(py_rsplit(head.as_string(), &sep, 1)[0] + end);
}

Value f_unique(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder b("unique", a, {"case_sensitive", "attribute"});
  const KeyFn key = make_key(b.get(1), truthy(b.get(0)), false);
  std::unordered_set<std::string> seen;
  Items out;
  for (const Value& item : items_of(in, v)) {
    const Value k = key(in, item);
    if (!is_hashable(k)) STRATA_THROW("unhashable type: '", type_name(k), "'");
    if (seen.insert(hash_key(k)).second) out.push_back(item);
  }
  return in.new_iterator(std::move(out), "generator");
}

Value f_wordcount(Interpreter& in, const Value& v, const CallArgs& a) {
  ArgBinder("wordcount", a, {});
  const std::string s = soft_str(in, v);
  int64_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    const bool w = is_alnum(c) || c == '_';
    if (w && !in_word) ++words;
    in_word = w;
  }
  return Value::integer(words);
}

Value f_format(Interpreter& in, const Value& v, const CallArgs& a) {
  if (!a.args.empty() && !a.kwargs.empty())
    STRATA_THROW("can't handle positional and keyword arguments at the same time");
  if (!a.kwargs.empty()) {
    DictData d;
    for (const auto& [k, val] : a.kwargs) d.set(Value::string(k), val);
    return in.new_string(percent_format(in, soft_str(in, v), Value::dict(std::move(d))));
  }
  return in.new_string(percent_format(in, soft_str(in, v), Value::list(a.args, true)));
}

const std::unordered_map<std::string_view, FilterFn>& filter_table() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

// ---- tests ---------------------------------------------------------------------------------

const Value& single_arg(const CallArgs& a, const char* test) {
  ArgBinder b(test, a, {"other"});
  if (!b.has(0)) STRATA_THROW(test, "() missing 1 required positional argument");
  return b.get(0);
}

void no_args(const CallArgs& a, const char* test) {
  ArgBinder(test, a, {});
}

bool t_defined(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "defined"), !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "undefined"), v.is_undefined();
}
bool t_none(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "none"), v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "boolean"), v.is_bool();
}
bool t_false(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "false"), v.is_bool() && !v.as_bool();
}
bool t_true(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "true"), v.is_bool() && v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "integer"), v.is_int();
}
bool t_float(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "float"), v.is_float();
}
bool t_number(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "number"), v.is_number();
}
bool t_string(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "string"), v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "mapping"), v.is_dict();
}
bool t_iterable(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "iterable");
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() ||
         (v.is_object() && (v.as_object().iterable() || v.as_object().type_name() == "LoopContext"));
}
bool t_sequence(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "sequence");
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_callable(Interpreter&, const Value& v, const CallArgs& a) {
  // Python's callable(): true for Undefined too (calling it raises the undefined error).
  return no_args(a, "callable"), v.is_undefined() || (v.is_object() && v.as_object().callable());
}
bool t_escaped(Interpreter&, const Value&, const CallArgs& a) {
  return no_args(a, "escaped"), false;
}

bool t_sameas(Interpreter&, const Value& v, const CallArgs& a) {
  const Value& o = single_arg(a, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Value::Kind::List:
      return v.list_ptr() == o.list_ptr();
    case Value::Kind::Dict:
      return &v.as_dict() == &o.as_dict();
    case Value::Kind::Object:
      return v.object_ptr() == o.object_ptr();
    case Value::Kind::Undefined:
      return false;
    default:
      return py_equal(v, o);
  }
}

bool t_in(Interpreter& in, const Value& v, const CallArgs& a) {
  return contains(in, single_arg(a, "in"), v);
}

bool string_case_test(const Value& v, bool upper) {
  if (!v.is_string()) return false;
  bool cased = false;
  const std::string& s = v.as_string();
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    if (upper ? is_lower(c) : is_upper(c)) return false;
    cased = cased || is_upper(c) || is_lower(c);
  }
  return cased;
}
bool t_lower(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "lower"), string_case_test(v, false);
}
bool t_upper(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "upper"), string_case_test(v, true);
}

bool mod_is_zero(Interpreter& in, const Value& v, const Value& divisor) {
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (!v.is_number() || !divisor.is_number())
    STRATA_THROW("unsupported operand type(s) for %: '", type_name(v), "' and '", type_name(divisor), "'");
  return !truthy(binary_op(in, BinaryOp::Mod, v, divisor));
}
bool t_odd(Interpreter& in, const Value& v, const CallArgs& a) {
  return no_args(a, "odd"), !mod_is_zero(in, v, Value::integer(2));
}
bool t_even(Interpreter& in, const Value& v, const CallArgs& a) {
  return no_args(a, "even"), mod_is_zero(in, v, Value::integer(2));
}
bool t_divisibleby(Interpreter& in, const Value& v, const CallArgs& a) {
  return mod_is_zero(in, v, single_arg(a, "divisibleby"));
}

bool t_eq(Interpreter&, const Value& v, const CallArgs& a) {
  return py_equal(v, single_arg(a, "eq"));
}
bool t_ne(Interpreter&, const Value& v, const CallArgs& a) {
  return !py_equal(v, single_arg(a, "ne"));
}
bool t_lt(Interpreter&, const Value& v, const CallArgs& a) {
  return py_compare(v, single_arg(a, "lt"), "<") < 0;
}
bool t_le(Interpreter&, const Value& v, const CallArgs& a) {
  return py_compare(v, single_arg(a, "le"), "<=") <= 0;
}
bool t_gt(Interpreter&, const Value& v, const CallArgs& a) {
  return py_compare(v, single_arg(a, "gt"), ">") > 0;
}
bool t_ge(Interpreter&, const Value& v, const CallArgs& a) {
  return py_compare(v, single_arg(a, "ge"), ">=") >= 0;
}

bool t_filter(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "filter"), v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, const CallArgs& a) {
  return no_args(a, "test"), v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::unordered_map<std::string_view, TestFn>& test_table() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"number", t_number},
      {"string", t_string},
      {"mapping", t_mapping},
      {"iterable", t_iterable},
      {"sequence", t_sequence},
      {"callable", t_callable},
      {"sameas", t_sameas},
      {"escaped", t_escaped},
      {"in", t_in},
      {"lower", t_lower},
      {"upper", t_upper},
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"==", t_eq},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"!=", t_ne},
      {"ne", t_ne},
      {"<", t_lt},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<=", t_le},
      {"le", t_le},
      {">", t_gt},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">=", t_ge},
      {"ge", t_ge},
      {"filter", t_filter},
      {"test", t_test},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& t = filter_table();
  const auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

TestFn find_test(std::string_view name) {
  const auto& t = test_table();
  const auto it = t.find(name);
  return it == t.end() ? nullptr : it->second;
}

}  // namespace strata::jinja
