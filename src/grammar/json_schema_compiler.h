// The JSON-Schema compiler's state (internal to json_schema*.cpp): one instance per schema.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "grammar/json_values.h"
#include "grammar/limits.h"
#include "grammar/number_range.h"

namespace strata::grammar {

using Json = nlohmann::ordered_json;

inline constexpr int32_t kMaxSchemaNodes = 1 << 15;  // schema objects visited
inline constexpr size_t kMaxEnumValues = 1 << 14;
inline constexpr size_t kMaxProperties = 1 << 12;

class SchemaCompiler {
 public:
  // Rules are named with `prefix` first, so that several schemas can share one grammar.
  SchemaCompiler(const Json& root, GrammarAst& ast, const std::string& prefix = "")
      : root_(root), ast_(ast), json_(ast, prefix) {}

  // The expression of values valid against `s` (found at `path`, e.g. "#/properties/a").
  ExprId visit(const Json& s, const std::string& path, int depth);

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& msg);
  void check_keywords(const Json& s, const std::string& path) const;
  ExprId visit_ref(const std::string& ref, const std::string& path, int depth);
  const Json& resolve(const std::string& ref, const std::string& path) const;
  ExprId visit_any_of(const Json& s, const char* key, const std::string& path, int depth);
  ExprId visit_enum(const Json& values, const std::string& path);
  ExprId visit_type(const std::string& type, const Json& s, const std::string& path, int depth);
  Json merge_all_of(const Json& s, const std::string& path, int depth) const;
  Json merge(const Json& a, const Json& b, const std::string& path, int depth) const;
  Json resolved(const Json& s, const std::string& path, int depth) const;

  // json_schema_types.cpp
  ExprId visit_object(const Json& s, const std::string& path, int depth);
  ExprId visit_array(const Json& s, const std::string& path, int depth);
  ExprId visit_string(const Json& s, const std::string& path);
  ExprId visit_number(const Json& s, const std::string& path, bool integer);
  ExprId string_format(const std::string& format, const std::string& path);
  ExprId key_not_in(const std::vector<std::string>& names);
  ExprId additional_value(const Json& s, const std::string& path, int depth, bool& allowed);
  // A shared rule (never copied into callers) per key, built once.
  ExprId shared(const std::string& key, const std::function<ExprId()>& build);
  // `e` as a rule of its own when it is not one already: copies of a repetition (or both
  // places an object member appears in) then refer to one set of automaton states.
  ExprId as_rule(ExprId e, const std::string& name);

  const std::string& prefix() const { return json_.prefix(); }
  const Json& root_;
  GrammarAst& ast_;
  JsonBuilder json_;
  std::map<std::string, int32_t> ref_rules_;
  std::map<std::string, int32_t> shared_rules_;
  int32_t visited_ = 0;
  int32_t n_objects_ = 0;
};

}  // namespace strata::grammar
