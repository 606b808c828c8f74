// Global functions of the template environment: Jinja's range, dict, namespace, cycler and
// joiner (no lipsum), and the raise_exception / strftime_now that transformers adds.
#include <time.h>

#include <chrono>

#include "template/builtin_args.h"
#include "template/builtins.h"
#include "template/objects.h"

namespace strata::jinja {

namespace {

// Jinja's sandbox refuses ranges longer than this.
constexpr int64_t kMaxRange = 100000;

Value g_range(Interpreter& in, CallArgs& a) {
  if (!a.kwargs.empty()) STRATA_THROW("range() takes no keyword arguments");
  if (a.args.empty() || a.args.size() > 3)
    STRATA_THROW("range expected at least 1 argument, got ", a.args.size());
  int64_t start = 0, stop, step = 1;
  if (a.args.size() == 1) {
    stop = int_arg(a.args[0], "range()");
  } else {
    start = int_arg(a.args[0], "range()");
    stop = int_arg(a.args[1], "range()");
    if (a.args.size() == 3) step = int_arg(a.args[2], "range()");
  }
  if (step == 0) STRATA_THROW("range() arg 3 must not be zero");
  // Count without overflow: (stop - start) may not fit in int64.
  const __int128 span = static_cast<__int128>(stop) - start;
  __int128 n = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
  if (n < 0) n = 0;
  if (n > kMaxRange)
    STRATA_THROW("Range too big. The sandbox blocks ranges larger than MAX_RANGE (", kMaxRange, ").");
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) items.push_back(Value::integer(start + i * step));
  return in.new_list(std::move(items));
}

Value g_dict(Interpreter& in, CallArgs& a) {
  DictData d;
  if (a.args.size() > 1) STRATA_THROW("dict expected at most 1 argument, got ", a.args.size());
  if (a.args.size() == 1) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict().items()) d.set(k, v);
    } else {
      const auto iterated = in.iterate(src);
      for (const Value& pair : *iterated) {
        const auto kv = in.iterate(pair);
        if (kv->size() != 2)
          STRATA_THROW("dictionary update sequence element has length ", kv->size(), "; 2 is required");
        d.set((*kv)[0], (*kv)[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kwargs) d.set(Value::string(k), v);
  return in.new_dict(std::move(d));
}

Value g_namespace(Interpreter& in, CallArgs& a) {
  auto ns = std::make_shared<NamespaceObject>();
  if (a.args.size() > 1) STRATA_THROW("namespace() takes at most 1 positional argument");
  if (a.args.size() == 1) {
    CallArgs init{{a.args[0]}, {}};
    const Value d = g_dict(in, init);
    for (const auto& [k, v] : d.as_dict().items()) {
      if (!k.is_string()) STRATA_THROW("namespace() keywords must be strings");
      ns->set(k.as_string(), v);
    }
  }
  for (const auto& [k, v] : a.kwargs) ns->set(k, v);
  return Value::object(ns);
}

Value g_cycler(Interpreter&, CallArgs& a) {
  if (!a.kwargs.empty()) STRATA_THROW("cycler() takes no keyword arguments");
  return Value::object(std::make_shared<CyclerObject>(a.args));
}

Value g_joiner(Interpreter& in, CallArgs& a) {
  ArgBinder b("joiner", a, {"sep"});
  return Value::object(std::make_shared<JoinerObject>(b.has(0) ? soft_str(in, b.get(0)) : ", "));
}

Value g_raise_exception(Interpreter& in, CallArgs& a) {
  ArgBinder b("raise_exception", a, {"message"});
  in.raise_from_template(soft_str(in, b.get(0)));
}

// datetime.now().strftime(format): Python itself expands %f (microseconds) and, for a naive
// datetime, %z and %Z (empty); the rest goes to the C library in the C locale.
Value g_strftime_now(Interpreter& in, CallArgs& a) {
  ArgBinder b("strftime_now", a, {"format"});
  const std::string& fmt = string_arg(b.get(0), "strftime_now()");
  if (fmt.size() > 4096) STRATA_THROW("strftime_now() format is too long");
  struct tm tm_now {};
  int64_t micros = 0;
  if (in.now_unix()) {
    const time_t t = static_cast<time_t>(*in.now_unix());
    gmtime_r(&t, &tm_now);
  } else {
    const auto now = std::chrono::system_clock::now();
    const time_t t = std::chrono::system_clock::to_time_t(now);
    localtime_r(&t, &tm_now);
    micros = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() % 1000000;
  }
  std::string out;
  std::string chunk;  // literal text and C directives, flushed through strftime
  auto flush = [&] {
    if (chunk.empty()) return;
    char buf[8192];
    // A leading space keeps a legitimately empty expansion apart from an overflow (0).
    const std::string c_fmt = " " + chunk;
    const size_t n = strftime(buf, sizeof buf, c_fmt.c_str(), &tm_now);
    if (n == 0) STRATA_THROW("strftime_now() result is too long");
    out.append(buf + 1, n - 1);
    chunk.clear();
  };
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] == '%' && i + 1 < fmt.size()) {
      const char d = fmt[i + 1];
      if (d == 'f' || d == 'z' || d == 'Z') {
        flush();
        if (d == 'f') {
          char buf[16];
          std::snprintf(buf, sizeof buf, "%06lld", static_cast<long long>(micros));
          out += buf;
        }
        ++i;
        continue;
      }
      chunk += fmt.substr(i, 2);
      ++i;
      continue;
    }
    if (fmt[i] == '\0') STRATA_THROW("embedded null character");
    chunk.push_back(fmt[i]);
  }
  flush();
  return in.new_string(std::move(out));
}

}  // namespace

void add_builtin_globals(Scope& globals) {
  globals.set("range", native_function("range", g_range));
  globals.set("dict", native_function("dict", g_dict));
  globals.set("namespace", native_function("namespace", g_namespace));
  globals.set("cycler", native_function("cycler", g_cycler));
  globals.set("joiner", native_function("joiner", g_joiner));
  globals.set("raise_exception", native_function("raise_exception", g_raise_exception));
  globals.set("strftime_now", native_function("strftime_now", g_strftime_now));
}

}  // namespace strata::jinja
