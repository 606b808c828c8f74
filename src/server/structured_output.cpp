#include "server/structured_output.h"

#include "grammar/constraint_spec.h"
#include "grammar/limits.h"
#include "server/api_error.h"

namespace strata::server {
namespace {

using grammar::ConstraintKind;
using grammar::ConstraintSpec;

constexpr size_t kMaxGrammarText = grammar::kMaxGrammarBytes;

// A schema given as an object, or as JSON text (vLLM accepts both for guided_json).
ChatJson schema_of(const ChatJson& v, const std::string& name) {
  if (v.is_object() || v.is_boolean()) return v;
  if (v.is_string()) {
    try {
      return parse_json_body(v.get_ref<const std::string&>());
    } catch (const ApiError&) {
      throw invalid_value(name, "'" + name + "' must be a JSON Schema (an object, or its JSON text).");
    }
  }
  throw invalid_type(
      name, "'" + name + "' must be a JSON Schema object, got " + std::string(json_type_phrase(v)) + ".");
}

std::vector<std::string> choices_of(const ChatJson& v, const std::string& name) {
  if (!v.is_array() || v.empty())
    throw invalid_type(name, "'" + name + "' must be a non-empty array of strings.");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i)
    out.push_back(json_string(v[i], name + "[" + std::to_string(i) + "]", kMaxGrammarText));
  return out;
}

ConstraintSpec text_spec(ConstraintKind kind, const ChatJson& v, const std::string& name) {
  ConstraintSpec spec;
  spec.kind = kind;
  spec.text = json_string(v, name, kMaxGrammarText);
  return spec;
}

ConstraintSpec schema_spec(const ChatJson& v, const std::string& name) {
  ConstraintSpec spec;
  spec.kind = ConstraintKind::JsonSchema;
  spec.schema = schema_of(v, name);
  return spec;
}

ConstraintSpec json_object_spec() {
  ConstraintSpec spec;
  spec.kind = ConstraintKind::JsonObject;
  return spec;
}

// response_format; nullopt for {"type": "text"}.
std::optional<ConstraintSpec> response_format_spec(const ChatJson& v) {
  if (!v.is_object()) throw invalid_type("response_format", "'response_format' must be an object.");
  const JsonFields f(v);
  const std::string type = f.string("type", 64).value_or("");
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (const ChatJson* schema = f.get("schema")) return schema_spec(*schema, "response_format.schema");
    return json_object_spec();
  }
  if (type == "json_schema") {
    const ChatJson* js = f.get("json_schema");
    if (!js || !js->is_object())
      throw invalid_value("response_format.json_schema", "'response_format.json_schema' must be an object.");
    const JsonFields jf(*js);
    jf.string("name", 256);  // type-checked; OpenAI requires it, nothing here uses it
    jf.boolean("strict");    // the schema is always enforced
    if (const ChatJson* schema = jf.get("schema"))
      return schema_spec(*schema, "response_format.json_schema.schema");
    return json_object_spec();
  }
  throw invalid_value("response_format",
                      "'response_format' type must be 'text', 'json_object' or 'json_schema'" +
                          (type.empty() ? std::string(".") : ", got '" + type + "'."));
}

ConstraintSpec structured_outputs_spec(const ChatJson& v, std::vector<std::string>& given) {
  if (!v.is_object()) throw invalid_type("structured_outputs", "'structured_outputs' must be an object.");
  const JsonFields f(v);
  std::optional<ConstraintSpec> spec;
  auto take = [&](const char* key, auto make) {
    if (const ChatJson* x = f.get(key)) {
      given.push_back(std::string("structured_outputs.") + key);
      spec = make(*x, std::string("structured_outputs.") + key);
    }
  };
  take("json", [](const ChatJson& x, const std::string& n) { return schema_spec(x, n); });
  take("regex",
       [](const ChatJson& x, const std::string& n) { return text_spec(ConstraintKind::Regex, x, n); });
  take("grammar",
       [](const ChatJson& x, const std::string& n) { return text_spec(ConstraintKind::Gbnf, x, n); });
  take("choice", [](const ChatJson& x, const std::string& n) {
    ConstraintSpec s;
    s.kind = ConstraintKind::Choice;
    s.choices = choices_of(x, n);
    return s;
  });
  if (f.boolean("json_object").value_or(false)) {
    given.push_back("structured_outputs.json_object");
    spec = json_object_spec();
  }
  if (f.has("structural_tag"))
    throw invalid_value("structured_outputs.structural_tag",
                        "'structured_outputs.structural_tag' is not supported.");
  if (!spec)
    throw invalid_value(
        "structured_outputs",
        "'structured_outputs' names no constraint (json, regex, choice, grammar or json_object).");
  return *spec;
}

}  // namespace

void parse_structured_output(const JsonFields& f, const ServedModel& model, GenerationRequest& req) {
  std::vector<std::string> given;  // the fields that ask for structured output
  std::optional<ConstraintSpec> spec;
  std::string param;
  auto use = [&](const char* name, std::optional<ConstraintSpec> s) {
    given.push_back(name);
    if (s) spec = std::move(s), param = name;
  };
  if (const ChatJson* v = f.get("response_format")) {
    std::optional<ConstraintSpec> s = response_format_spec(*v);
    if (s) use("response_format", std::move(s));
  }
  if (const ChatJson* v = f.get("grammar")) use("grammar", text_spec(ConstraintKind::Gbnf, *v, "grammar"));
  if (const ChatJson* v = f.get("json_schema")) use("json_schema", schema_spec(*v, "json_schema"));
  if (const ChatJson* v = f.get("guided_json")) use("guided_json", schema_spec(*v, "guided_json"));
  if (const ChatJson* v = f.get("guided_regex"))
    use("guided_regex", text_spec(ConstraintKind::Regex, *v, "guided_regex"));
  if (const ChatJson* v = f.get("guided_grammar"))
    use("guided_grammar", text_spec(ConstraintKind::Gbnf, *v, "guided_grammar"));
  if (const ChatJson* v = f.get("guided_choice")) {
    ConstraintSpec s;
    s.kind = ConstraintKind::Choice;
    s.choices = choices_of(*v, "guided_choice");
    use("guided_choice", std::move(s));
  }
  if (const ChatJson* v = f.get("structured_outputs")) {
    std::vector<std::string> inner;
    ConstraintSpec s = structured_outputs_spec(*v, inner);
    if (inner.size() > 1)
      throw invalid_value("structured_outputs", "'structured_outputs' may name only one constraint.");
    use("structured_outputs", std::move(s));
  }
  f.string("guided_decoding_backend", 64);  // accepted and ignored: there is one engine
  if (given.size() > 1)
    throw invalid_value(given[1], "Only one structured-output field may be given; got '" + given[0] +
                                      "' and '" + given[1] + "'.");
  if (!spec) return;
  if (!model.constraints) throw invalid_value(param, "Structured output is not available for this model.");
  try {
    req.params.constraint = model.constraints->get(*spec);
  } catch (const grammar::GrammarError& e) {
    throw invalid_value(param, "Invalid '" + param + "': " + e.what());
  }
}

}  // namespace strata::server
