// JSON Schema dispatch: keywords, references, composition (anyOf / oneOf / allOf), enum and
// const. The per-type grammars are in json_schema_types.cpp.
#include "grammar/json_schema.h"

#include <algorithm>
#include <set>

#include "grammar/json_schema_compiler.h"

namespace strata::grammar {
namespace {

// Keywords with no effect on which instances are valid.
const std::set<std::string>& annotation_keywords() {
  static const std::set<std::string> k = {
      "title",    "description",   "default",          "examples",        "$schema", "$id",
      "$comment", "deprecated",    "readOnly",         "writeOnly",       "$defs",   "definitions",
      "nullable", "discriminator", "contentMediaType", "contentEncoding", "$anchor", "strict"};
  return k;
}

// Keywords that constrain instances in ways this compiler cannot express.
const std::set<std::string>& unsupported_keywords() {
  static const std::set<std::string> k = {"not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentSchemas",
                                          "dependentRequired",
                                          "dependencies",
                                          "patternProperties",
                                          "propertyNames",
                                          "minProperties",
                                          "maxProperties",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "multipleOf",
                                          "unevaluatedProperties",
                                          "unevaluatedItems",
                                          "$dynamicRef",
                                          "$dynamicAnchor",
                                          "$recursiveRef",
                                          "$recursiveAnchor",
                                          "contentSchema"};
  return k;
}

bool is_constraint(const std::string& key) {
  static const std::set<std::string> k = {"type",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "additionalItems",
                                          "minItems",
                                          "maxItems",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "uniqueItems"};
  return k.count(key) > 0;
}

std::string pointer_unescape(const std::string& token) {
  std::string out;
  for (size_t i = 0; i < token.size(); ++i) {
    if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
      out += token[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out += token[i];
    }
  }
  return out;
}

std::string rule_name_for(const std::string& ref, size_t n) {
  std::string name = "ref";
  for (char c : ref)
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      name += c;
    else if (!name.empty() && name.back() != '-')
      name += '-';
  return name + "-" + std::to_string(n);
}

std::vector<std::string> type_list(const Json& t, const std::string& path) {
  std::vector<std::string> out;
  if (t.is_string()) {
    out.push_back(t.get<std::string>());
  } else if (t.is_array() && !t.empty()) {
    for (const Json& x : t) {
      if (!x.is_string())
        STRATA_GRAMMAR_THROW("schema at ", path, ": 'type' must be a string or a list of strings");
      out.push_back(x.get<std::string>());
    }
  } else {
    STRATA_GRAMMAR_THROW("schema at ", path, ": 'type' must be a string or a non-empty list of strings");
  }
  return out;
}

// The types a schema without 'type' constrains, from the keywords it has.
std::vector<std::string> inferred_types(const Json& s) {
  auto has = [&](std::initializer_list<const char*> keys) {
    return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return s.contains(k); });
  };
  std::vector<std::string> out;
  if (has({"properties", "required", "additionalProperties"})) out.push_back("object");
  if (has({"items", "prefixItems", "minItems", "maxItems", "additionalItems"})) out.push_back("array");
  if (has({"minLength", "maxLength", "pattern", "format"})) out.push_back("string");
  if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) out.push_back("number");
  return out;
}

}  // namespace

void SchemaCompiler::fail(const std::string& path, const std::string& msg) {
  STRATA_GRAMMAR_THROW("schema at ", path, ": ", msg);
}

void SchemaCompiler::check_keywords(const Json& s, const std::string& path) const {
  for (const auto& [key, value] : s.items()) {
    if (unsupported_keywords().count(key)) fail(path, "the keyword '" + key + "' is not supported");
    if (key == "uniqueItems" && value.is_boolean() && value.get<bool>())
      fail(path, "the keyword 'uniqueItems' (true) is not supported");
  }
}

ExprId SchemaCompiler::visit(const Json& s, const std::string& path, int depth) {
  if (depth > kMaxNesting)
    fail(path, "the schema nests deeper than " + std::to_string(kMaxNesting) + " levels");
  if (++visited_ > kMaxSchemaNodes)
    fail(path, "the schema has more than " + std::to_string(kMaxSchemaNodes) + " parts");
  if (s.is_boolean()) {
    if (s.get<bool>()) return json_.value();
    fail(path, "the schema 'false' matches no value");
  }
  if (!s.is_object()) fail(path, "a schema must be an object or a boolean");
  check_keywords(s, path);
  if (const auto it = s.find("$ref"); it != s.end()) {
    if (!it->is_string()) fail(path, "'$ref' must be a string");
    for (const auto& [key, value] : s.items())
      if (key != "$ref" && is_constraint(key))
        fail(path, "'$ref' together with the keyword '" + key + "' is not supported");
    return visit_ref(it->get<std::string>(), path, depth);
  }
  if (s.contains("allOf")) return visit(merge_all_of(s, path, depth), path, depth + 1);
  if (s.contains("anyOf")) return visit_any_of(s, "anyOf", path, depth);
  if (s.contains("oneOf")) return visit_any_of(s, "oneOf", path, depth);
  if (const auto it = s.find("const"); it != s.end()) return json_.literal(*it);
  if (const auto it = s.find("enum"); it != s.end()) return visit_enum(*it, path);
  std::vector<std::string> types = s.contains("type") ? type_list(s["type"], path) : inferred_types(s);
  if (types.empty()) return json_.value();
  std::vector<ExprId> alts;
  for (const std::string& t : types) alts.push_back(visit_type(t, s, path, depth));
  return ast_.alt(std::move(alts));
}

ExprId SchemaCompiler::visit_type(const std::string& type, const Json& s, const std::string& path,
                                  int depth) {
  if (type == "null") return json_.null();
  if (type == "boolean") return json_.boolean();
  if (type == "integer") return visit_number(s, path, true);
  if (type == "number") return visit_number(s, path, false);
  if (type == "string") return visit_string(s, path);
  if (type == "array") return visit_array(s, path, depth);
  if (type == "object") return visit_object(s, path, depth);
  fail(path, "unknown type '" + type + "'");
}

ExprId SchemaCompiler::visit_enum(const Json& values, const std::string& path) {
  if (!values.is_array() || values.empty()) fail(path, "'enum' must be a non-empty array");
  if (values.size() > kMaxEnumValues)
    fail(path, "'enum' has more than " + std::to_string(kMaxEnumValues) + " values");
  std::vector<ExprId> alts;
  std::set<std::string> seen;
  for (const Json& v : values) {
    const ExprId lit = json_.literal(v);
    if (seen.insert(ast_.expr(lit).literal).second) alts.push_back(lit);
  }
  return ast_.alt(std::move(alts));
}

const Json& SchemaCompiler::resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    fail(path, "only references within the schema ('#...') are supported, not '" + ref.substr(0, 200) + "'");
  const Json* node = &root_;
  size_t pos = 1;
  if (ref.size() > 1 && ref[1] != '/')
    fail(path, "the reference '" + ref.substr(0, 200) + "' is not a JSON pointer");
  while (pos < ref.size()) {
    const size_t next = ref.find('/', pos + 1);
    const std::string token =
        pointer_unescape(ref.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1));
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() &&
               token.find_first_not_of("0123456789") == std::string::npos && token.size() < 10 &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      fail(path, "the reference '" + ref.substr(0, 200) + "' points to nothing");
    }
    pos = next == std::string::npos ? ref.size() : next;
  }
  return *node;
}

ExprId SchemaCompiler::visit_ref(const std::string& ref, const std::string& path, int depth) {
  if (const auto it = ref_rules_.find(ref); it != ref_rules_.end()) return ast_.ref(it->second);
  const Json& target = resolve(ref, path);
  // Declared first, so that a recursive reference finds the rule.
  const int32_t rule = ast_.add_rule(prefix() + rule_name_for(ref, ref_rules_.size()), -1);
  ref_rules_.emplace(ref, rule);
  const ExprId body = visit(target, ref, depth + 1);
  ast_.rules[static_cast<size_t>(rule)].body = body;
  return ast_.ref(rule);
}

// A schema with its top-level $ref replaced by the target (for merging).
Json SchemaCompiler::resolved(const Json& s, const std::string& path, int depth) const {
  if (depth > kMaxNesting)
    fail(path, "references nest deeper than " + std::to_string(kMaxNesting) + " levels");
  if (!s.is_object() || !s.contains("$ref")) return s;
  if (!s["$ref"].is_string()) fail(path, "'$ref' must be a string");
  const std::string ref = s["$ref"].get<std::string>();
  Json target = resolved(resolve(ref, path), ref, depth + 1);
  if (target.is_boolean()) return target;
  for (const auto& [key, value] : s.items())
    if (key != "$ref") target[key] = value;
  return target;
}

ExprId SchemaCompiler::visit_any_of(const Json& s, const char* key, const std::string& path, int depth) {
  const Json& branches = s[key];
  if (!branches.is_array() || branches.empty())
    fail(path, std::string("'") + key + "' must be a non-empty array");
  // Keywords beside anyOf apply to every branch: each branch is merged with them.
  Json siblings = Json::object();
  for (const auto& [k, v] : s.items())
    if (k != key && is_constraint(k)) siblings[k] = v;
  std::vector<ExprId> alts;
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string p = path + "/" + key + "/" + std::to_string(i);
    alts.push_back(siblings.empty()
                       ? visit(branches[i], p, depth + 1)
                       : visit(merge(siblings, resolved(branches[i], p, depth), p, depth), p, depth + 1));
  }
  return ast_.alt(std::move(alts));
}

Json SchemaCompiler::merge_all_of(const Json& s, const std::string& path, int depth) const {
  const Json& members = s["allOf"];
  if (!members.is_array() || members.empty()) fail(path, "'allOf' must be a non-empty array");
  Json acc = Json::object();
  for (const auto& [k, v] : s.items())
    if (k != "allOf") acc[k] = v;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string p = path + "/allOf/" + std::to_string(i);
    acc = merge(acc, resolved(members[i], p, depth), p, depth);
  }
  return acc;
}

// Both schemas at once, where that is expressible as one schema.
Json SchemaCompiler::merge(const Json& a, const Json& b, const std::string& path, int depth) const {
  if (depth > kMaxNesting) fail(path, "'allOf' nests deeper than " + std::to_string(kMaxNesting) + " levels");
  if (a.is_boolean()) {
    if (!a.get<bool>()) fail(path, "the schema 'false' matches no value");
    return b;
  }
  if (b.is_boolean()) {
    if (!b.get<bool>()) fail(path, "the schema 'false' matches no value");
    return a;
  }
  if (!a.is_object() || !b.is_object()) fail(path, "a schema must be an object or a boolean");
  if (b.contains("allOf")) return merge(a, merge_all_of(b, path, depth + 1), path, depth + 1);
  Json out = a;
  auto tighter = [&](const char* key, bool take_max) {
    if (!b.contains(key)) return;
    if (!out.contains(key) || !out[key].is_number() || !b[key].is_number()) {
      out[key] = b[key];
      return;
    }
    const double x = out[key].get<double>(), y = b[key].get<double>();
    if (take_max ? y > x : y < x) out[key] = b[key];
  };
  for (const auto& [key, value] : b.items()) {
    if (annotation_keywords().count(key) || !out.contains(key)) {
      if (!out.contains(key)) out[key] = value;
      continue;
    }
    if (key == "minimum" || key == "minLength" || key == "minItems" || key == "exclusiveMinimum") {
      tighter(key.c_str(), true);
    } else if (key == "maximum" || key == "maxLength" || key == "maxItems" || key == "exclusiveMaximum") {
      tighter(key.c_str(), false);
    } else if (key == "required") {
      Json req = out[key];
      if (!req.is_array() || !value.is_array()) fail(path, "'required' must be an array");
      for (const Json& r : value)
        if (std::find(req.begin(), req.end(), r) == req.end()) req.push_back(r);
      out[key] = req;
    } else if (key == "properties") {
      if (!out[key].is_object() || !value.is_object()) fail(path, "'properties' must be an object");
      for (const auto& [name, schema] : value.items())
        out[key][name] = out[key].contains(name)
                             ? merge(resolved(out[key][name], path, depth), resolved(schema, path, depth),
                                     path + "/properties/" + name, depth + 1)
                             : schema;
    } else if (key == "type") {
      std::vector<std::string> ta = type_list(out[key], path), tb = type_list(value, path), both;
      for (const std::string& t : ta) {
        const bool in_b = std::find(tb.begin(), tb.end(), t) != tb.end() ||
                          (t == "integer" && std::find(tb.begin(), tb.end(), "number") != tb.end());
        if (in_b)
          both.push_back(t);
        else if (t == "number" && std::find(tb.begin(), tb.end(), "integer") != tb.end())
          both.push_back("integer");
      }
      if (both.empty()) fail(path, "'allOf' combines types that no value has");
      out[key] = both.size() == 1 ? Json(both[0]) : Json(both);
    } else if (key == "additionalProperties") {
      if (value.is_boolean() && !value.get<bool>())
        out[key] = false;
      else if (!(out[key].is_boolean() && !out[key].get<bool>()) && out[key] != value)
        fail(path, "'allOf' combines different 'additionalProperties' schemas");
    } else if (out[key] != value) {
      fail(path, "'allOf' combines different values of '" + key + "'");
    }
  }
  return out;
}

ExprId add_json_schema(GrammarAst& ast, const Json& schema, const std::string& prefix) {
  return SchemaCompiler(schema, ast, prefix).visit(schema, "#", 0);
}

GrammarAst json_schema_grammar(const Json& schema) {
  GrammarAst ast;
  const int32_t root = ast.add_rule("root", -1);
  const ExprId body = add_json_schema(ast, schema, "");
  ast.rules[static_cast<size_t>(root)].body = body;
  ast.root = root;
  return ast;
}

}  // namespace strata::grammar
