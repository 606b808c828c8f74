#include "template/operators.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "template/interpreter.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

[[noreturn]] void unsupported(const char* op, const Value& a, const Value& b) {
  STRATA_THROW("unsupported operand type(s) for ", op, ": '", type_name(a), "' and '", type_name(b), "'");
}

void check_defined(const Value& a, const Value& b) {
  if (a.is_undefined()) throw Error(a.undefined_message());
  if (b.is_undefined()) throw Error(b.undefined_message());
}

bool both_int(const Value& a, const Value& b) {
  return a.is_number() && b.is_number() && !a.is_float() && !b.is_float();
}

int64_t checked(bool overflow, int64_t v) {
  if (overflow) STRATA_THROW("integer overflow (Python integers are limited to 64 bits here)");
  return v;
}

// Python's floor division and modulo on integers (result signs follow the divisor).
int64_t floor_div(int64_t a, int64_t b) {
  if (b == 0) STRATA_THROW("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) checked(true, 0);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == 0) STRATA_THROW("integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

Value repeat(Interpreter& in, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && static_cast<uint64_t>(n) > in.limits().max_output_bytes / s.size())
      in.check_string_size(in.limits().max_output_bytes + 1);
    const size_t total = s.size() * static_cast<size_t>(n);
    std::string out;
    out.reserve(total);
    if (n > 0) out = s;
    while (out.size() < total) out.append(out, 0, std::min(out.size(), total - out.size()));  // doubling
    return in.new_string(std::move(out));
  }
  const ListData& l = seq.as_list();
  if (!l.items.empty() && static_cast<uint64_t>(n) > in.limits().max_container_items / l.items.size())
    in.check_container_size(in.limits().max_container_items + 1);
  std::vector<Value> items;
  items.reserve(l.items.size() * static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) items.insert(items.end(), l.items.begin(), l.items.end());
  return in.new_list(std::move(items), l.is_tuple);
}

Value add(Interpreter& in, const Value& a, const Value& b) {
  if (both_int(a, b)) {
    int64_t r = 0;
    const bool overflow = __builtin_add_overflow(a.to_int(), b.to_int(), &r);
    return Value::integer(checked(overflow, r));
  }
  if (a.is_number() && b.is_number()) return Value::number(a.to_double() + b.to_double());
  if (a.is_string() && b.is_string()) {
    in.check_string_size(a.as_string().size() + b.as_string().size());
    return in.new_string(a.as_string() + b.as_string());
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    std::vector<Value> items = a.as_list().items;
    in.check_container_size(items.size() + b.as_list().items.size());
    items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
    return in.new_list(std::move(items), a.is_tuple());
  }
  if (a.is_string() || a.is_list())
    STRATA_THROW("can only concatenate ", type_name(a), " (not \"", type_name(b), "\") to ", type_name(a));
  unsupported("+", a, b);
}

Value multiply(Interpreter& in, const Value& a, const Value& b) {
  if (both_int(a, b)) {
    int64_t r = 0;
    const bool overflow = __builtin_mul_overflow(a.to_int(), b.to_int(), &r);
    return Value::integer(checked(overflow, r));
  }
  if (a.is_number() && b.is_number()) return Value::number(a.to_double() * b.to_double());
  const bool a_seq = a.is_string() || a.is_list(), b_seq = b.is_string() || b.is_list();
  if (a_seq && (b.is_int() || b.is_bool())) return repeat(in, a, b.to_int());
  if (b_seq && (a.is_int() || a.is_bool())) return repeat(in, b, a.to_int());
  if (a_seq || b_seq)
    STRATA_THROW("can't multiply sequence by non-int of type '", type_name(a_seq ? b : a), "'");
  unsupported("*", a, b);
}

Value power(const Value& a, const Value& b) {
  if (!a.is_number() || !b.is_number()) unsupported("** or pow()", a, b);
  if (both_int(a, b) && b.to_int() >= 0) {
    int64_t base = a.to_int(), exp = b.to_int(), result = 1;
    while (exp > 0) {
      if (exp & 1) checked(__builtin_mul_overflow(result, base, &result), 0);
      exp >>= 1;
      if (exp > 0) checked(__builtin_mul_overflow(base, base, &base), 0);
    }
    return Value::integer(result);
  }
  const double x = a.to_double(), y = b.to_double();
  if (x == 0.0 && y < 0) STRATA_THROW("0.0 cannot be raised to a negative power");
  if (x < 0 && y != std::floor(y)) STRATA_THROW("negative number cannot be raised to a fractional power");
  return Value::number(std::pow(x, y));
}

Value divide(const Value& a, const Value& b, BinaryOp op) {
  if (!a.is_number() || !b.is_number())
    unsupported(op == BinaryOp::Div ? "/" : (op == BinaryOp::Mod ? "%" : "//"), a, b);
  if (op == BinaryOp::Div) {
    if (b.to_double() == 0.0) STRATA_THROW("division by zero");
    return Value::number(a.to_double() / b.to_double());
  }
  if (both_int(a, b))
    return Value::integer(op == BinaryOp::FloorDiv ? floor_div(a.to_int(), b.to_int())
                                                   : floor_mod(a.to_int(), b.to_int()));
  const double x = a.to_double(), y = b.to_double();
  if (y == 0.0) STRATA_THROW(op == BinaryOp::FloorDiv ? "float floor division by zero" : "float modulo");
  if (op == BinaryOp::FloorDiv) return Value::number(std::floor(x / y));
  double r = std::fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return Value::number(r);
}

}  // namespace

Value unary_op(bool negate, const Value& v) {
  if (v.is_undefined()) throw Error(v.undefined_message());
  if (v.is_float()) return Value::number(negate ? -v.as_float() : v.as_float());
  if (v.is_int() || v.is_bool()) {
    const int64_t i = v.to_int();
    if (!negate) return Value::integer(i);
    return Value::integer(checked(i == INT64_MIN, -i));
  }
  STRATA_THROW("bad operand type for unary ", negate ? "-" : "+", ": '", type_name(v), "'");
}

Value binary_op(Interpreter& in, BinaryOp op, const Value& a, const Value& b) {
  check_defined(a, b);
  switch (op) {
    case BinaryOp::Add:
      return add(in, a, b);
    case BinaryOp::Sub:
      if (both_int(a, b)) {
        int64_t r = 0;
        const bool overflow = __builtin_sub_overflow(a.to_int(), b.to_int(), &r);
        return Value::integer(checked(overflow, r));
      }
      if (a.is_number() && b.is_number()) return Value::number(a.to_double() - b.to_double());
      unsupported("-", a, b);
    case BinaryOp::Mul:
      return multiply(in, a, b);
    case BinaryOp::Mod:
      if (a.is_string()) return in.new_string(percent_format(in, a.as_string(), b));
      return divide(a, b, op);
    case BinaryOp::Div:
    case BinaryOp::FloorDiv:
      return divide(a, b, op);
    case BinaryOp::Pow:
      return power(a, b);
  }
  return Value();
}

bool contains(Interpreter& in, const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string())
        STRATA_THROW("'in <string>' requires string as left operand, not ", type_name(item));
      return find_bytes(container.as_string(), item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.as_list().items)
        if (py_equal(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if (!is_hashable(item)) STRATA_THROW("unhashable type: '", type_name(item), "'");
      return container.as_dict().find(item) != nullptr;
    case Value::Kind::Undefined:
      return false;
    case Value::Kind::Object:
      if (container.as_object().iterable()) {
        const auto iterated = in.iterate(container);
        for (const Value& v : *iterated)
          if (py_equal(v, item)) return true;
        return false;
      }
      [[fallthrough]];
    default:
      STRATA_THROW("argument of type '", type_name(container), "' is not iterable");
  }
}

bool compare_op(Interpreter& in, CompareOp op, const Value& a, const Value& b) {
  switch (op) {
    case CompareOp::Eq:
      return py_equal(a, b);
    case CompareOp::Ne:
      return !py_equal(a, b);
    case CompareOp::Lt:
      return py_compare(a, b, "<") < 0;
    case CompareOp::Le:
      return py_compare(a, b, "<=") <= 0;
    case CompareOp::Gt:
      return py_compare(a, b, ">") > 0;
    case CompareOp::Ge:
      return py_compare(a, b, ">=") >= 0;
    case CompareOp::In:
      return contains(in, b, a);
    case CompareOp::NotIn:
      return !contains(in, b, a);
  }
  return false;
}

Value slice_value(Interpreter& in, const Value& obj, std::optional<int64_t> start,
                  std::optional<int64_t> stop, std::optional<int64_t> step_opt) {
  const int64_t step = step_opt.value_or(1);
  if (step == 0) STRATA_THROW("slice step cannot be zero");
  std::vector<size_t> offsets;
  const bool is_str = obj.is_string();
  const bool ascii = is_str && is_ascii(obj.as_string());
  if (is_str && !ascii) offsets = utf8_offsets(obj.as_string());
  const int64_t n = static_cast<int64_t>(is_str ? (ascii ? obj.as_string().size() : offsets.size() - 1)
                                                : obj.as_list().items.size());
  auto adjust = [n, step](std::optional<int64_t> v, bool is_start) -> int64_t {
    if (!v) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
    int64_t x = *v;
    if (x < 0) x += n;
    if (step > 0) return x < 0 ? 0 : (x > n ? n : x);
    return x < 0 ? -1 : (x >= n ? n - 1 : x);
  };
  const int64_t first = adjust(start, true), last = adjust(stop, false);
  std::vector<int64_t> idx;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) idx.push_back(i);
  if (is_str) {
    const std::string& s = obj.as_string();
    std::string out;
    for (int64_t i : idx) {
      const auto u = static_cast<size_t>(i);
      if (ascii)
        out.push_back(s[u]);
      else
        out.append(s, offsets[u], offsets[u + 1] - offsets[u]);
    }
    return in.new_string(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(idx.size());
  for (int64_t i : idx) items.push_back(obj.as_list().items[static_cast<size_t>(i)]);
  return in.new_list(std::move(items), obj.is_tuple());
}

namespace {

struct FormatSpec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char type = 's';
};

std::string format_one(Interpreter& in, const FormatSpec& spec, const Value& v) {
  std::string body;
  char buf[512];
  const std::string flags = spec.flags;
  // Numbers get their width from printf (for zero padding) when it fits the buffer.
  const std::string width = spec.width >= 0 && spec.width < 400 ? std::to_string(spec.width) : "";
  const std::string prec = spec.precision >= 0 ? "." + std::to_string(std::min(spec.precision, 100)) : "";
  switch (spec.type) {
    case 's':
      body = in.str(v);
      break;
    case 'r':
    case 'a':
      body = to_repr(v, in.limits().max_output_bytes);
      break;
    case 'd':
    case 'i':
    case 'u':
    case 'x':
    case 'X':
    case 'o': {
      if (!v.is_number())
        STRATA_THROW("%", spec.type, " format: a real number is required, not ", type_name(v));
      const long long i = v.is_float() ? static_cast<long long>(std::trunc(v.as_float())) : v.to_int();
      const char t = spec.type == 'i' || spec.type == 'u' ? 'd' : spec.type;
      std::snprintf(buf, sizeof buf, ("%" + flags + width + "ll" + std::string(1, t)).c_str(), i);
      body = buf;
      break;
    }
    case 'f':
    case 'F':
    case 'e':
    case 'E':
    case 'g':
    case 'G':
      if (!v.is_number()) STRATA_THROW("must be real number, not ", type_name(v));
      std::snprintf(buf, sizeof buf, ("%" + flags + width + prec + std::string(1, spec.type)).c_str(),
                    v.to_double());
      body = buf;
      break;
    case 'c':
      if (v.is_string() && utf8_length(v.as_string()) == 1)
        body = v.as_string();
      else if (v.is_int() && v.as_int() >= 0 && v.as_int() <= 0x10FFFF)
        utf8_append(body, static_cast<char32_t>(v.as_int()));
      else
        STRATA_THROW("%c requires an int or a unicode character");
      break;
    default:
      STRATA_THROW("unsupported format character '", spec.type, "'");
  }
  if ((spec.type == 's' || spec.type == 'r' || spec.type == 'a') && spec.precision >= 0) {
    const std::vector<size_t> off = utf8_offsets(body);
    if (static_cast<size_t>(spec.precision) < off.size() - 1)
      body.resize(off[static_cast<size_t>(spec.precision)]);
  }
  const auto len = static_cast<int>(utf8_length(body));
  if (spec.width > len) {
    in.check_string_size(static_cast<size_t>(spec.width));
    const bool left = flags.find('-') != std::string::npos;
    const std::string pad(static_cast<size_t>(spec.width - len), ' ');
    body = left ? body + pad : pad + body;
  }
  return body;
}

}  // namespace

std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  if (args.is_tuple())
    positional = args.as_list().items;
  else if (!args.is_dict())
    positional.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) STRATA_THROW("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string::npos || !args.is_dict()) STRATA_THROW("format requires a mapping");
      arg = args.as_dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
      if (!arg) STRATA_THROW("format key '", fmt.substr(i + 1, close - i - 1), "' not found");
      i = close + 1;
    }
    FormatSpec spec;
    while (i < fmt.size() && std::string_view("-+ 0#").find(fmt[i]) != std::string_view::npos)
      spec.flags += fmt[i++];
    constexpr int kMaxField = 1 << 30;  // keeps the arithmetic in range; sizes are checked later
    for (; i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9'; ++i)
      spec.width = std::min(std::max(spec.width, 0) * 10 + (fmt[i] - '0'), kMaxField);
    if (i < fmt.size() && fmt[i] == '.') {
      spec.precision = 0;
      for (++i; i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9'; ++i)
        spec.precision = std::min(spec.precision * 10 + (fmt[i] - '0'), kMaxField);
    }
    if (i >= fmt.size()) STRATA_THROW("incomplete format");
    spec.type = fmt[i];
    if (spec.type == '%') {
      out.push_back('%');
      continue;
    }
    if (!arg) {
      if (next >= positional.size()) STRATA_THROW("not enough arguments for format string");
      arg = &positional[next++];
    }
    out += format_one(in, spec, *arg);
    in.check_string_size(out.size());
  }
  if (!args.is_dict() && next < positional.size())
    STRATA_THROW("not all arguments converted during string formatting");
  return out;
}

}  // namespace strata::jinja
