// JSON Schema per type: objects (ordered properties, optional ones skippable), arrays (prefix
// items, counts), strings (lengths, patterns, formats) and numbers (bounds).
#include <algorithm>
#include <map>
#include <set>

#include "grammar/json_schema_compiler.h"
#include "grammar/regex_parser.h"
#include "grammar/utf8_reader.h"

namespace strata::grammar {
namespace {

int32_t count_field(const Json& s, const char* key, const std::string& path, int32_t fallback) {
  const auto it = s.find(key);
  if (it == s.end()) return fallback;
  if (!it->is_number_integer() &&
      !(it->is_number_float() && it->get<double>() == static_cast<int64_t>(it->get<double>())))
    STRATA_GRAMMAR_THROW("schema at ", path, ": '", key, "' must be a non-negative integer");
  const double v = it->get<double>();
  if (v < 0) STRATA_GRAMMAR_THROW("schema at ", path, ": '", key, "' must be a non-negative integer");
  if (v > kMaxRepeat)
    STRATA_GRAMMAR_THROW("schema at ", path, ": '", key, "' above ", kMaxRepeat, " is not supported");
  return static_cast<int32_t>(v);
}

// Regexes of the string formats (matched as the whole string). Host names are built from
// the shared `label` below, in string_format().
const std::map<std::string, std::string>& format_patterns() {
  static const std::string date =
      "[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|"
      "02-(?:0[1-9]|1[0-9]|2[0-8]))";
  static const std::string time =
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string octet = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  static const std::map<std::string, std::string> f = {
      {"date", date},
      {"time", time},
      {"date-time", date + "T" + time},
      {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
      {"ipv4", "(?:" + octet + "\\.){3}" + octet},
      {"ipv6", "[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){7}"},
      // A DNS label (RFC 1123): letters and digits, inner hyphens, at most 63 characters.
      {"label", "[a-z0-9]{1,24}(?:-[a-z0-9]{1,24})?"},
      {"email-local", "[a-zA-Z0-9_+-]+(?:\\.[a-zA-Z0-9_+-]+)*"},
      {"uri-path", "(?:/[a-zA-Z0-9._~-]*)*"},
  };
  return f;
}

}  // namespace

ExprId SchemaCompiler::shared(const std::string& key, const std::function<ExprId()>& build) {
  auto [it, fresh] = shared_rules_.emplace(key, -1);
  if (fresh) {
    const ExprId body = build();
    it->second =
        ast_.add_rule(prefix() + "shared-" + std::to_string(ast_.rules.size()), body, /*shared=*/true);
  }
  return ast_.ref(it->second);
}

ExprId SchemaCompiler::as_rule(ExprId e, const std::string& name) {
  if (ast_.expr(e).kind == ExprKind::RuleRef) return e;
  return ast_.ref(ast_.add_rule(name, e));
}

ExprId SchemaCompiler::string_format(const std::string& format, const std::string& path) {
  auto regex = [&](const char* name) {
    return shared(std::string("format-part:") + name,
                  [&] { return parse_regex(format_patterns().at(name), ast_, /*json_escape=*/true); });
  };
  // At most four labels: a name of up to 4 * 49 + 3 characters, within RFC 1123's 253.
  auto host = [&](int32_t min_dots) {
    return ast_.seq(
        {regex("label"), ast_.repeat(ast_.seq({ast_.literal("."), regex("label")}), min_dots, 3)});
  };
  if (format == "hostname") return host(0);
  if (format == "email") return ast_.seq({regex("email-local"), ast_.literal("@"), host(1)});
  if (format == "uri")
    return ast_.seq(
        {ast_.alt({ast_.literal("https://"), ast_.literal("http://")}), host(0), regex("uri-path")});
  if (format == "label" || format.starts_with("email-") || format.starts_with("uri-") ||
      !format_patterns().count(format))
    fail(path, "the string format '" + format + "' is not supported");
  return parse_regex(format_patterns().at(format), ast_, /*json_escape=*/true);
}

ExprId SchemaCompiler::visit_string(const Json& s, const std::string& path) {
  const int32_t min = count_field(s, "minLength", path, 0);
  const int32_t max = count_field(s, "maxLength", path, kUnbounded);
  if (max != kUnbounded && max < min) fail(path, "'maxLength' is below 'minLength'");
  const bool lengths = s.contains("minLength") || s.contains("maxLength");
  const ExprId quote = ast_.literal("\"");
  if (const auto it = s.find("pattern"); it != s.end()) {
    if (!it->is_string()) fail(path, "'pattern' must be a string");
    if (lengths || s.contains("format"))
      fail(path, "'pattern' together with a length or 'format' is not supported");
    const std::string pattern = it->get<std::string>();
    try {
      return shared("pattern:" + pattern, [&] {
        return ast_.seq({quote, parse_regex(pattern, ast_, true), quote});
      });
    } catch (const GrammarError& e) {
      fail(path, std::string("'pattern': ") + e.what());
    }
  }
  if (const auto it = s.find("format"); it != s.end()) {
    if (!it->is_string()) fail(path, "'format' must be a string");
    if (lengths) fail(path, "'format' together with a length is not supported");
    const std::string format = it->get<std::string>();
    return shared("format:" + format, [&] { return ast_.seq({quote, string_format(format, path), quote}); });
  }
  if (!lengths) return json_.string();
  return json_.string_of_length(min, max);
}

ExprId SchemaCompiler::visit_number(const Json& s, const std::string& path, bool integer) {
  NumberBounds b;
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = s.find(key);
    if (it == s.end() || it->is_boolean()) return std::nullopt;
    if (!it->is_number()) fail(path, std::string("'") + key + "' must be a number");
    return it->get<double>();
  };
  b.min = number("minimum");
  b.max = number("maximum");
  // Draft 4: exclusiveMinimum is a boolean modifying minimum; later drafts: a number.
  if (const auto it = s.find("exclusiveMinimum"); it != s.end() && it->is_boolean())
    b.min_exclusive = it->get<bool>();
  if (const auto it = s.find("exclusiveMaximum"); it != s.end() && it->is_boolean())
    b.max_exclusive = it->get<bool>();
  if (const auto x = number("exclusiveMinimum"); x && (!b.min || *x >= *b.min))
    b.min = x, b.min_exclusive = true;
  if (const auto x = number("exclusiveMaximum"); x && (!b.max || *x <= *b.max))
    b.max = x, b.max_exclusive = true;
  if (!b.min && !b.max) return integer ? json_.integer() : json_.number();
  const ExprId e = integer ? integer_in(ast_, b) : number_in(ast_, b);
  if (e < 0) fail(path, "no number this server can produce lies within the bounds");
  return e;
}

// Extra property values: additionalProperties as a schema, or any value when true. `allowed`
// is false when none may appear.
ExprId SchemaCompiler::additional_value(const Json& s, const std::string& path, int depth, bool& allowed) {
  const auto it = s.find("additionalProperties");
  const bool has_props = s.contains("properties") && s["properties"].is_object() && !s["properties"].empty();
  if (it == s.end()) {
    allowed = !has_props;
    return allowed ? json_.value() : -1;
  }
  if (it->is_boolean()) {
    allowed = it->get<bool>();
    return allowed ? json_.value() : -1;
  }
  allowed = true;
  return visit(*it, path + "/additionalProperties", depth + 1);
}

// A JSON string key equal to none of `names`: a trie over the names' characters where leaving
// the trie (or ending off a name's end) is free.
ExprId SchemaCompiler::key_not_in(const std::vector<std::string>& names) {
  if (names.empty()) return json_.string();
  struct Node {
    std::map<uint32_t, int> children;
    bool end = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    int n = 0;
    for (Utf8Reader r(name); !r.done();) {
      const int32_t c = r.next();
      if (c < 0) STRATA_GRAMMAR_THROW("a property name in the schema is not valid UTF-8");
      auto found = trie[static_cast<size_t>(n)].children.find(static_cast<uint32_t>(c));
      if (found == trie[static_cast<size_t>(n)].children.end()) {
        trie.push_back({});
        found = trie[static_cast<size_t>(n)]
                    .children.emplace(static_cast<uint32_t>(c), static_cast<int>(trie.size() - 1))
                    .first;
      }
      n = found->second;
    }
    trie[static_cast<size_t>(n)].end = true;
  }
  const ExprId any_rest = ast_.repeat(ast_.chars(CodepointSet::any(), true), 0, kUnbounded);
  // Built bottom-up: children have larger indices than their parents.
  std::vector<ExprId> rest(trie.size());
  for (size_t i = trie.size(); i-- > 0;) {
    std::vector<ExprId> alts;
    if (!trie[i].end) alts.push_back(ast_.empty());
    CodepointSet others = CodepointSet::any();
    for (const auto& [c, child] : trie[i].children) {
      alts.push_back(ast_.seq({ast_.chars(CodepointSet(c), true), rest[static_cast<size_t>(child)]}));
      others = others.intersect(CodepointSet(c).complement());
    }
    alts.push_back(ast_.seq({ast_.chars(others, true), any_rest}));
    rest[i] = ast_.alt(std::move(alts));
  }
  return ast_.seq({ast_.literal("\""), rest[0], ast_.literal("\"")});
}

// {"a": .., "b": ..} with the properties in schema order: F[k] is "the members from k on, none
// written yet, at least one now", R[k] "the members from k on, some already written" (each
// then starts with a comma). Optional members may be skipped; extra members come last.
ExprId SchemaCompiler::visit_object(const Json& s, const std::string& path, int depth) {
  const int id = n_objects_++;
  std::vector<std::string> names;
  std::vector<ExprId> members;
  std::vector<uint8_t> required;
  std::set<std::string> req;
  if (const auto it = s.find("required"); it != s.end()) {
    if (!it->is_array()) fail(path, "'required' must be an array");
    for (const Json& r : *it) {
      if (!r.is_string()) fail(path, "'required' must list strings");
      req.insert(r.get<std::string>());
    }
  }
  if (const auto it = s.find("properties"); it != s.end()) {
    if (!it->is_object()) fail(path, "'properties' must be an object");
    if (it->size() > kMaxProperties)
      fail(path, "more than " + std::to_string(kMaxProperties) + " properties");
    for (const auto& [name, schema] : it->items()) {
      names.push_back(name);
      const ExprId member = ast_.seq(
          {json_.quoted(name), json_.colon(), visit(schema, path + "/properties/" + name, depth + 1)});
      members.push_back(as_rule(
          member, prefix() + "object" + std::to_string(id) + "-m" + std::to_string(members.size() + 1)));
      required.push_back(req.count(name) ? 1 : 0);
    }
  }
  // Required but not described: an additional property, valued as additionalProperties says.
  const auto additional = s.find("additionalProperties");
  for (const std::string& name : req) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    ExprId value;
    if (additional == s.end() || (additional->is_boolean() && additional->get<bool>())) {
      value = json_.value();
    } else if (additional->is_boolean()) {
      fail(path, "the required property '" + name + "' is not allowed by 'additionalProperties': false");
    } else {
      value = visit(*additional, path + "/additionalProperties", depth + 1);
    }
    names.push_back(name);
    members.push_back(
        as_rule(ast_.seq({json_.quoted(name), json_.colon(), value}),
                prefix() + "object" + std::to_string(id) + "-m" + std::to_string(members.size() + 1)));
    required.push_back(1);
  }
  bool extra_allowed = false;
  const ExprId extra_value = additional_value(s, path, depth, extra_allowed);
  const size_t n = members.size();
  const std::string base = prefix() + "object" + std::to_string(id);
  // Tails after the named members: the extra members.
  ExprId r_next = ast_.empty();  // R[n]
  ExprId f_next = -1;            // F[n]: -1 = impossible (nothing left to write)
  if (extra_allowed) {
    const ExprId extra = ast_.seq({key_not_in(names), json_.colon(), extra_value});
    const ExprId more = ast_.repeat(ast_.seq({json_.comma(), extra}), 0, kUnbounded);
    r_next = more;
    f_next = ast_.seq({extra, more});
  }
  for (size_t k = n; k-- > 0;) {
    const int32_t r_rule = ast_.add_rule(base + "-r" + std::to_string(k + 1), r_next);
    const ExprId r_ref = ast_.ref(r_rule);
    const ExprId with_k = ast_.seq({members[k], r_ref});
    const ExprId r_k = required[k]
                           ? ast_.seq({json_.comma(), with_k})
                           : ast_.seq({ast_.repeat(ast_.seq({json_.comma(), members[k]}), 0, 1), r_ref});
    ExprId f_k = with_k;
    if (!required[k] && f_next >= 0) f_k = ast_.alt({with_k, f_next});
    const int32_t f_rule = ast_.add_rule(base + "-f" + std::to_string(k + 1), f_k);
    f_next = ast_.ref(f_rule);
    r_next = r_k;
  }
  const ExprId open = ast_.seq({ast_.literal("{"), json_.ws()});
  const ExprId close = ast_.literal("}");
  if (f_next < 0) return ast_.seq({open, close});  // no members at all
  const bool all_optional = std::none_of(required.begin(), required.end(), [](uint8_t r) { return r; });
  const ExprId body = ast_.seq({f_next, json_.ws()});
  return ast_.seq({open, all_optional ? ast_.repeat(body, 0, 1) : body, close});
}

// [e1, e2, ...]: prefixItems first, then `items` (or additionalItems after a tuple `items`),
// with minItems..maxItems elements in all.
ExprId SchemaCompiler::visit_array(const Json& s, const std::string& path, int depth) {
  std::vector<const Json*> tuple;
  const Json* rest = nullptr;  // schema of the elements after the prefix; nullptr: none allowed
  static const Json kAny = true;
  const Json* items = s.contains("items") ? &s["items"] : nullptr;
  std::string prefix_key = "prefixItems";
  if (const auto it = s.find("prefixItems"); it != s.end()) {
    if (!it->is_array()) fail(path, "'prefixItems' must be an array");
    for (const Json& x : *it) tuple.push_back(&x);
    rest = items ? items : &kAny;
  } else if (items && items->is_array()) {  // draft 4-2019 tuple form
    prefix_key = "items";
    for (const Json& x : *items) tuple.push_back(&x);
    rest = s.contains("additionalItems") ? &s["additionalItems"] : &kAny;
  } else {
    rest = items ? items : &kAny;
  }
  if (rest->is_boolean() && !rest->get<bool>()) rest = nullptr;
  const int32_t min = count_field(s, "minItems", path, 0);
  int32_t max = count_field(s, "maxItems", path, kUnbounded);
  if (max != kUnbounded && max < min) fail(path, "'maxItems' is below 'minItems'");
  const auto p = static_cast<int32_t>(tuple.size());
  if (!rest) max = max == kUnbounded ? p : std::min(max, p);
  if (max != kUnbounded && min > max) fail(path, "'minItems' exceeds the items the schema allows");
  const ExprId open = ast_.seq({ast_.literal("["), json_.ws()});
  const ExprId close = ast_.literal("]");
  if (max == 0) return ast_.seq({open, close});
  std::vector<ExprId> elems;  // the first min(p, max) elements
  for (int32_t i = 0; i < p && (max == kUnbounded || i < max); ++i)
    elems.push_back(
        visit(*tuple[static_cast<size_t>(i)], path + "/" + prefix_key + "/" + std::to_string(i), depth + 1));
  ExprId rest_elem = -1;
  if (rest && (max == kUnbounded || max > p))
    rest_elem = as_rule(visit(*rest, path + "/items", depth + 1),
                        prefix() + "array" + std::to_string(n_objects_++) + "-item");
  const auto n_elems = static_cast<int32_t>(elems.size());
  // The tail after the explicit elements: up to max - p more of `rest`.
  ExprId tail = ast_.empty();
  if (rest_elem >= 0) {
    const int32_t lo = std::max(0, min - n_elems);
    const int32_t hi = max == kUnbounded ? kUnbounded : max - n_elems;
    if (n_elems == 0) {
      // The first element has no comma before it.
      tail = ast_.seq({rest_elem, ast_.repeat(ast_.seq({json_.comma(), rest_elem}), std::max(0, lo - 1),
                                              hi == kUnbounded ? kUnbounded : hi - 1)});
    } else {
      tail = ast_.repeat(ast_.seq({json_.comma(), rest_elem}), lo, hi);
    }
  }
  // Elements 2..n nest: element i is there only if i-1 is, required when i <= minItems.
  ExprId after = tail;
  for (int32_t i = n_elems; i-- > 1;) {
    const ExprId with_i = ast_.seq({json_.comma(), elems[static_cast<size_t>(i)], after});
    after = i < min ? with_i : ast_.repeat(with_i, 0, 1);
  }
  const ExprId all = n_elems > 0 ? ast_.seq({elems[0], after}) : tail;
  const ExprId body = ast_.seq({all, json_.ws()});
  return ast_.seq({open, min > 0 ? body : ast_.repeat(body, 0, 1), close});
}

}  // namespace strata::grammar
