#include "template/json_dumps.h"

#include <algorithm>

#include "core/check.h"
#include "template/text_util.h"

namespace strata::jinja {

namespace {

constexpr int kMaxRecursion = 4096;

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o)
      : o_(o), item_sep_(o.item_separator ? *o.item_separator : (o.indent ? "," : ", ")) {}

  void dump(const Value& v, int level) {
    if (level > kMaxRecursion) STRATA_THROW("value nested too deeply for tojson");
    switch (v.kind()) {
      case Value::Kind::None:
        append("null");
        break;
      case Value::Kind::Bool:
        append(v.as_bool() ? "true" : "false");
        break;
      case Value::Kind::Int:
        append(std::to_string(v.as_int()));
        break;
      case Value::Kind::Float:
        append(float_text(v.as_float()));
        break;
      case Value::Kind::String: {
        std::string quoted;
        json_quote(quoted, v.as_string(), o_.ensure_ascii);
        append(quoted);
        break;
      }
      case Value::Kind::List:
        dump_list(v.as_list(), level);
        break;
      case Value::Kind::Dict:
        dump_dict(v.as_dict(), level);
        break;
      default:
        STRATA_THROW("Object of type ", type_name(v), " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  static std::string float_text(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return py_float_repr(d);
  }

  void append(std::string_view s) {
    if (out_.size() + s.size() > o_.max_bytes)
      STRATA_THROW("tojson output exceeds the limit of ", o_.max_bytes, " bytes");
    out_.append(s);
  }

  void newline(int level) {
    if (!o_.indent) return;
    append("\n");
    for (int i = 0; i < level; ++i) append(*o_.indent);
  }

  void dump_list(const ListData& l, int level) {
    if (l.items.empty()) return append("[]");
    append("[");
    newline(level + 1);
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) {
        append(item_sep_);
        newline(level + 1);
      }
      dump(l.items[i], level + 1);
    }
    newline(level);
    append("]");
  }

  std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String:
        return k.as_string();
      case Value::Kind::None:
        return "null";
      case Value::Kind::Bool:
        return k.as_bool() ? "true" : "false";
      case Value::Kind::Int:
        return std::to_string(k.as_int());
      case Value::Kind::Float:
        return float_text(k.as_float());
      default:
        STRATA_THROW("keys must be str, int, float, bool or None, not ", type_name(k));
    }
  }

  void dump_dict(const DictData& d, int level) {
    if (d.size() == 0) return append("{}");
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.items()) entries.push_back(&e);
    if (o_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return py_compare(a->first, b->first, "<") < 0; });
    }
    append("{");
    newline(level + 1);
    bool first = true;
    for (const auto* e : entries) {
      if (!first) {
        append(item_sep_);
        newline(level + 1);
      }
      first = false;
      std::string key;
      json_quote(key, key_text(e->first), o_.ensure_ascii);
      append(key);
      append(o_.key_separator);
      dump(e->second, level + 1);
    }
    newline(level);
    append("}");
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string out_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Dumper d(options);
  d.dump(v, 0);
  return d.take();
}

}  // namespace strata::jinja
