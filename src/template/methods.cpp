// Python methods of str, list and dict as the immutable sandbox exposes them: every
// non-mutating method is available; list.append, dict.update & co. are "unsafe".
#include <algorithm>
#include <unordered_map>

#include "template/builtin_args.h"
#include "template/builtins.h"
#include "template/objects.h"
#include "template/operators.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

using StrMethod = Value (*)(Interpreter& in, const std::string& self, const CallArgs& a);

Value unsafe(std::string_view name, const Value& obj) {
  return Value::undefined(
      concat("access to attribute '", name, "' of '", type_name(obj), "' object is unsafe."));
}

// self[start:end] for the optional start/end arguments of find, count, startswith, ...
std::string sub_range(Interpreter& in, const std::string& self, const ArgBinder& b, size_t first) {
  if (!b.has(first) && !b.has(first + 1)) return self;
  auto bound = [&](size_t i) -> std::optional<int64_t> {
    if (!b.has(i) || b.get(i).is_none()) return std::nullopt;
    return int_arg(b.get(i), "slice");
  };
  return slice_value(in, Value::string(self), bound(first), bound(first + 1), std::nullopt).as_string();
}

Value m_capitalize(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder("capitalize", a, {});
  return in.new_string(py_capitalize(s));
}
Value m_lower(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder("lower", a, {});
  return in.new_string(py_lower(s));
}
Value m_upper(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder("upper", a, {});
  return in.new_string(py_upper(s));
}
Value m_swapcase(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder("swapcase", a, {});
  return in.new_string(py_swapcase(s));
}
Value m_title(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder("title", a, {});
  return in.new_string(py_title(s));
}

// center / ljust / rjust.
Value justify(Interpreter& in, const std::string& s, const CallArgs& a, const char* name, int where) {
  ArgBinder b(name, a, {"width", "fillchar"});
  if (!b.has(0)) STRATA_THROW(name, "() takes at least 1 argument (0 given)");
  const int64_t width = int_arg(b.get(0), name);
  const std::string fill = b.has(1) ? string_arg(b.get(1), name) : " ";
  if (utf8_length(fill) != 1) STRATA_THROW("The fill character must be exactly one character long");
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value::string(s);
  in.check_string_size(static_cast<size_t>(width) * fill.size());
  int64_t left = where < 0 ? 0 : (where > 0 ? width - len : (width - len) / 2 + ((width - len) & width & 1));
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = left + len; i < width; ++i) out += fill;
  return in.new_string(std::move(out));
}
Value m_center(Interpreter& in, const std::string& s, const CallArgs& a) {
  return justify(in, s, a, "center", 0);
}
Value m_ljust(Interpreter& in, const std::string& s, const CallArgs& a) {
  return justify(in, s, a, "ljust", -1);
}
Value m_rjust(Interpreter& in, const std::string& s, const CallArgs& a) {
  return justify(in, s, a, "rjust", 1);
}

Value m_zfill(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("zfill", a, {"width"});
  const int64_t width = int_arg(b.get(0), "zfill");
  const auto len = static_cast<int64_t>(utf8_length(s));
  if (width <= len) return Value::string(s);
  in.check_string_size(static_cast<size_t>(width));
  const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
  return in.new_string((sign ? s.substr(0, 1) : "") + std::string(static_cast<size_t>(width - len), '0') +
                       (sign ? s.substr(1) : s));
}

Value m_count(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("count", a, {"sub", "start", "end"});
  return Value::integer(py_count(sub_range(in, s, b, 1), string_arg(b.get(0), "count()")));
}

// startswith / endswith: the prefix may be a tuple of candidates.
Value affix_test(Interpreter& in, const std::string& s, const CallArgs& a, bool starts) {
  ArgBinder b(starts ? "startswith" : "endswith", a, {"prefix", "start", "end"});
  const std::string hay = sub_range(in, s, b, 1);
  std::vector<Value> candidates;
  if (b.get(0).is_tuple())
    candidates = b.get(0).as_list().items;
  else
    candidates.push_back(b.get(0));
  for (const Value& c : candidates) {
    const std::string& x = string_arg(c, starts ? "startswith" : "endswith");
    if (hay.size() >= x.size() &&
        (starts ? hay.compare(0, x.size(), x) : hay.compare(hay.size() - x.size(), x.size(), x)) == 0)
      return Value::boolean(true);
  }
  return Value::boolean(false);
}
Value m_startswith(Interpreter& in, const std::string& s, const CallArgs& a) {
  return affix_test(in, s, a, true);
}
Value m_endswith(Interpreter& in, const std::string& s, const CallArgs& a) {
  return affix_test(in, s, a, false);
}

Value find_impl(const std::string& s, const CallArgs& a, const char* name, bool reverse, bool raise) {
  ArgBinder b(name, a, {"sub", "start", "end"});
  const int64_t start = b.has(1) && !b.get(1).is_none() ? int_arg(b.get(1), name) : 0;
  const int64_t end = b.has(2) && !b.get(2).is_none() ? int_arg(b.get(2), name) : INT64_MAX / 2;
  const int64_t pos = py_find(s, string_arg(b.get(0), name), start, end, reverse);
  if (pos < 0 && raise) STRATA_THROW("substring not found");
  return Value::integer(pos);
}
Value m_find(Interpreter&, const std::string& s, const CallArgs& a) {
  return find_impl(s, a, "find", false, false);
}
Value m_rfind(Interpreter&, const std::string& s, const CallArgs& a) {
  return find_impl(s, a, "rfind", true, false);
}
Value m_index(Interpreter&, const std::string& s, const CallArgs& a) {
  return find_impl(s, a, "index", false, true);
}
Value m_rindex(Interpreter&, const std::string& s, const CallArgs& a) {
  return find_impl(s, a, "rindex", true, true);
}

template <bool (*Pred)(char32_t)>
Value char_class(const std::string& s, const CallArgs& a, const char* name) {
  ArgBinder(name, a, {});
  if (s.empty()) return Value::boolean(false);
  for (size_t i = 0; i < s.size();)
    if (!Pred(utf8_next(s, i))) return Value::boolean(false);
  return Value::boolean(true);
}
Value m_isalnum(Interpreter&, const std::string& s, const CallArgs& a) {
  return char_class<is_alnum>(s, a, "isalnum");
}
Value m_isalpha(Interpreter&, const std::string& s, const CallArgs& a) {
  return char_class<is_alpha>(s, a, "isalpha");
}
Value m_isdigit(Interpreter&, const std::string& s, const CallArgs& a) {
  return char_class<is_digit>(s, a, "isdigit");
}
Value m_isspace(Interpreter&, const std::string& s, const CallArgs& a) {
  return char_class<is_py_space>(s, a, "isspace");
}
Value m_isprintable(Interpreter&, const std::string& s, const CallArgs& a) {
  ArgBinder("isprintable", a, {});
  for (size_t i = 0; i < s.size();)
    if (!is_py_printable(utf8_next(s, i))) return Value::boolean(false);
  return Value::boolean(true);
}
Value m_isascii(Interpreter&, const std::string& s, const CallArgs& a) {
  ArgBinder("isascii", a, {});
  return Value::boolean(is_ascii(s));
}

Value case_class(const std::string& s, const CallArgs& a, bool upper) {
  ArgBinder(upper ? "isupper" : "islower", a, {});
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    if (upper ? is_lower(c) : is_upper(c)) return Value::boolean(false);
    cased = cased || is_upper(c) || is_lower(c);
  }
  return Value::boolean(cased);
}
Value m_islower(Interpreter&, const std::string& s, const CallArgs& a) {
  return case_class(s, a, false);
}
Value m_isupper(Interpreter&, const std::string& s, const CallArgs& a) {
  return case_class(s, a, true);
}

Value m_istitle(Interpreter&, const std::string& s, const CallArgs& a) {
  ArgBinder("istitle", a, {});
  bool cased = false, previous_cased = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = utf8_next(s, i);
    if (is_upper(c)) {
      if (previous_cased) return Value::boolean(false);
      previous_cased = cased = true;
    } else if (is_lower(c)) {
      if (!previous_cased) return Value::boolean(false);
      previous_cased = cased = true;
    } else {
      previous_cased = false;
    }
  }
  return Value::boolean(cased);
}

Value m_join(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("join", a, {"iterable"});
  std::string out;
  size_t i = 0;
  const auto iterated = in.iterate(b.get(0));
  for (const Value& item : *iterated) {
    if (!item.is_string())
      STRATA_THROW("sequence item ", i, ": expected str instance, ", type_name(item), " found");
    if (i++) out += s;
    out += item.as_string();
    in.check_string_size(out.size());
  }
  return in.new_string(std::move(out));
}

Value strip_impl(Interpreter& in, const std::string& s, const CallArgs& a, const char* name, bool l, bool r) {
  ArgBinder b(name, a, {"chars"});
  if (!b.has(0) || b.get(0).is_none()) return in.new_string(py_strip(s, nullptr, l, r));
  return in.new_string(py_strip(s, &string_arg(b.get(0), name), l, r));
}
Value m_strip(Interpreter& in, const std::string& s, const CallArgs& a) {
  return strip_impl(in, s, a, "strip", true, true);
}
Value m_lstrip(Interpreter& in, const std::string& s, const CallArgs& a) {
  return strip_impl(in, s, a, "lstrip", true, false);
}
Value m_rstrip(Interpreter& in, const std::string& s, const CallArgs& a) {
  return strip_impl(in, s, a, "rstrip", false, true);
}

Value partition_impl(Interpreter& in, const std::string& s, const CallArgs& a, bool reverse) {
  ArgBinder b(reverse ? "rpartition" : "partition", a, {"sep"});
  const std::string& sep = string_arg(b.get(0), "partition");
  if (sep.empty()) STRATA_THROW("empty separator");
  const size_t pos = reverse ? rfind_bytes(s, sep) : find_bytes(s, sep);
  if (pos == std::string::npos) {
    return reverse ? in.new_list({Value::string(""), Value::string(""), Value::string(s)}, true)
                   : in.new_list({Value::string(s), Value::string(""), Value::string("")}, true);
  }
  return in.new_list(
      {Value::string(s.substr(0, pos)), Value::string(sep), Value::string(s.substr(pos + sep.size()))}, true);
}
Value m_partition(Interpreter& in, const std::string& s, const CallArgs& a) {
  return partition_impl(in, s, a, false);
}
Value m_rpartition(Interpreter& in, const std::string& s, const CallArgs& a) {
  return partition_impl(in, s, a, true);
}

Value m_removeprefix(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("removeprefix", a, {"prefix"});
  const std::string& p = string_arg(b.get(0), "removeprefix()");
  return in.new_string(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
}
Value m_removesuffix(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("removesuffix", a, {"suffix"});
  const std::string& p = string_arg(b.get(0), "removesuffix()");
  const bool has = !p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
  return in.new_string(has ? s.substr(0, s.size() - p.size()) : s);
}

Value m_replace(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("replace", a, {"old", "new", "count"});
  const int64_t count = b.has(2) ? int_arg(b.get(2), "replace()") : -1;
  const std::string& old_sub = string_arg(b.get(0), "replace()");
  const std::string& new_sub = string_arg(b.get(1), "replace()");
  in.check_string_size(py_replace_size(s, old_sub, new_sub, count));
  return in.new_string(py_replace(s, old_sub, new_sub, count, in.limits().max_output_bytes));
}

Value split_impl(Interpreter& in, const std::string& s, const CallArgs& a, bool reverse) {
  ArgBinder b(reverse ? "rsplit" : "split", a, {"sep", "maxsplit"});
  const int64_t maxsplit = b.has(1) ? int_arg(b.get(1), "split()") : -1;
  const std::string* sep = b.has(0) && !b.get(0).is_none() ? &string_arg(b.get(0), "split()") : nullptr;
  // Bound the number of pieces before building them.
  if (sep && !sep->empty())
    in.check_container_size(static_cast<size_t>(py_count(s, *sep)) + 1);
  else
    in.check_container_size(s.size() / 2 + 1);
  std::vector<Value> parts;
  for (std::string& p : reverse ? py_rsplit(s, sep, maxsplit) : py_split(s, sep, maxsplit))
    parts.push_back(Value::string(std::move(p)));
  return in.new_list(std::move(parts));
}
Value m_split(Interpreter& in, const std::string& s, const CallArgs& a) {
  return split_impl(in, s, a, false);
}
Value m_rsplit(Interpreter& in, const std::string& s, const CallArgs& a) {
  return split_impl(in, s, a, true);
}

Value m_splitlines(Interpreter& in, const std::string& s, const CallArgs& a) {
  ArgBinder b("splitlines", a, {"keepends"});
  in.check_container_size(static_cast<size_t>(std::count(s.begin(), s.end(), '\n')) + 1);
  std::vector<Value> lines;
  for (std::string& l : py_splitlines(s, truthy(b.get(0)))) lines.push_back(Value::string(std::move(l)));
  return in.new_list(std::move(lines));
}

// str.format with {}, {0}, {name}, {{, }} and the !s / !r conversions (no format specs).
Value m_format(Interpreter& in, const std::string& s, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '}') {
      if (i + 1 < s.size() && s[i + 1] == '}')
        ++i;
      else
        STRATA_THROW("Single '}' encountered in format string");
      out.push_back('}');
      continue;
    }
    if (s[i] != '{') {
      out.push_back(s[i]);
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = s.find('}', i);
    if (close == std::string::npos) STRATA_THROW("Single '{' encountered in format string");
    std::string field = s.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      conversion = bang + 1 < field.size() ? field[bang + 1] : 's';
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos)
      STRATA_THROW("format specifications in str.format are not supported");
    const Value* arg = nullptr;
    if (field.empty()) {
      if (auto_index >= a.args.size()) STRATA_THROW("Replacement index ", auto_index, " out of range");
      arg = &a.args[auto_index++];
    } else if (std::all_of(field.begin(), field.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      const size_t idx = std::stoul(field);
      if (idx >= a.args.size()) STRATA_THROW("Replacement index ", idx, " out of range");
      arg = &a.args[idx];
    } else {
      for (const auto& [k, v] : a.kwargs)
        if (k == field) arg = &v;
      if (!arg) STRATA_THROW("'", field, "'");
    }
    out += conversion == 'r' ? to_repr(*arg, in.limits().max_output_bytes) : in.str(*arg);
    in.check_string_size(out.size());
  }
  return in.new_string(std::move(out));
}

const std::unordered_map<std::string_view, StrMethod>& str_methods() {
  static const std::unordered_map<std::string_view, StrMethod> table = {
      {"capitalize", m_capitalize},
      {"casefold", m_lower},
      {"center", m_center},
      {"count", m_count},
      {"endswith", m_endswith},
      {"find", m_find},
      {"format", m_format},
      {"index", m_index},
      {"isalnum", m_isalnum},
      {"isalpha", m_isalpha},
      {"isascii", m_isascii},
      {"isdecimal", m_isdigit},
      {"isdigit", m_isdigit},
      {"islower", m_islower},
      {"isnumeric", m_isdigit},
      {"isprintable", m_isprintable},
      {"isspace", m_isspace},
      {"istitle", m_istitle},
      {"isupper", m_isupper},
      {"join", m_join},
      {"ljust", m_ljust},
      {"lower", m_lower},
      {"lstrip", m_lstrip},
      {"partition", m_partition},
      {"removeprefix", m_removeprefix},
      {"removesuffix", m_removesuffix},
      {"replace", m_replace},
      {"rfind", m_rfind},
      {"rindex", m_rindex},
      {"rjust", m_rjust},
      {"rpartition", m_rpartition},
      {"rsplit", m_rsplit},
      {"rstrip", m_rstrip},
      {"split", m_split},
      {"splitlines", m_splitlines},
      {"startswith", m_startswith},
      {"strip", m_strip},
      {"swapcase", m_swapcase},
      {"title", m_title},
      {"upper", m_upper},
      {"zfill", m_zfill},
  };
  return table;
}

bool is_unsupported_str_method(std::string_view name) {
  return name == "encode" || name == "expandtabs" || name == "format_map" || name == "maketrans" ||
         name == "translate" || name == "isidentifier";
}

std::optional<Value> list_method(const Value& obj, std::string_view name) {
  static const char* const kUnsafe[] = {"append", "clear",  "extend",  "insert",
                                        "pop",    "remove", "reverse", "sort"};
  for (const char* u : kUnsafe)
    if (name == u) return unsafe(name, obj);
  if (name == "copy") return native_function("copy", [obj](Interpreter&, CallArgs&) { return obj; });
  if (name == "count") {
    return native_function("count", [obj](Interpreter&, CallArgs& a) {
      ArgBinder b("count", a, {"value"});
      int64_t n = 0;
      for (const Value& v : obj.as_list().items) n += py_equal(v, b.get(0));
      return Value::integer(n);
    });
  }
  if (name == "index") {
    return native_function("index", [obj](Interpreter& in, CallArgs& a) {
      ArgBinder b("index", a, {"value", "start", "stop"});
      const auto& items = obj.as_list().items;
      const Value sliced = slice_value(
          in, obj, b.has(1) ? std::optional<int64_t>(int_arg(b.get(1), "index")) : std::nullopt,
          b.has(2) ? std::optional<int64_t>(int_arg(b.get(2), "index")) : std::nullopt, std::nullopt);
      int64_t offset = 0;
      if (b.has(1)) {
        offset = int_arg(b.get(1), "index");
        if (offset < 0) offset = std::max<int64_t>(0, offset + static_cast<int64_t>(items.size()));
      }
      const auto& window = sliced.as_list().items;
      for (size_t i = 0; i < window.size(); ++i)
        if (py_equal(window[i], b.get(0))) return Value::integer(offset + static_cast<int64_t>(i));
      STRATA_THROW("value is not in list");
    });
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& obj, std::string_view name) {
  static const char* const kUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};
  for (const char* u : kUnsafe)
    if (name == u) return unsafe(name, obj);
  if (name == "get") {
    return native_function("get", [obj](Interpreter&, CallArgs& a) {
      ArgBinder b("get", a, {"key", "default"});
      if (!b.has(0)) STRATA_THROW("get expected at least 1 argument, got 0");
      if (!is_hashable(b.get(0))) STRATA_THROW("unhashable type: '", type_name(b.get(0)), "'");
      const Value* v = obj.as_dict().find(b.get(0));
      return v ? *v : (b.has(1) ? b.get(1) : Value::none());
    });
  }
  if (name == "copy") return native_function("copy", [obj](Interpreter&, CallArgs&) { return obj; });
  if (name == "items" || name == "keys" || name == "values") {
    const std::string which(name);
    return native_function(which, [obj, which](Interpreter& in, CallArgs& a) {
      ArgBinder(which, a, {});
      std::vector<Value> out;
      for (const auto& [k, v] : obj.as_dict().items())
        out.push_back(which == "items" ? in.new_list({k, v}, true) : (which == "keys" ? k : v));
      return in.new_list(std::move(out));
    });
  }
  return std::nullopt;
}

}  // namespace

std::optional<Value> python_attribute(Interpreter&, const Value& obj, std::string_view name) {
  if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__")
    return unsafe(name, obj);
  switch (obj.kind()) {
    case Value::Kind::String: {
      const auto& table = str_methods();
      const auto it = table.find(name);
      if (it != table.end()) {
        const StrMethod fn = it->second;
        return native_function(std::string(name), [obj, fn](Interpreter& in, CallArgs& a) {
          return fn(in, obj.as_string(), a);
        });
      }
      if (is_unsupported_str_method(name))
        return Value::undefined(concat("str.", name, "() is not supported by this template engine"));
      return std::nullopt;
    }
    case Value::Kind::List:
      return list_method(obj, name);
    case Value::Kind::Dict:
      return dict_method(obj, name);
    default:
      return std::nullopt;
  }
}

}  // namespace strata::jinja
