// JSON Schema -> grammar: a grammar whose every match is a JSON text valid against the schema.
//
// Supported: type (one or a list), enum, const, anyOf, oneOf (as anyOf: branches should not
// overlap), allOf (merged: properties, required, bounds, types), $ref to "#..." JSON pointers
// ($defs, definitions, recursion), properties / required / additionalProperties (false, true
// or a schema; absent with `properties` given means no other keys, as OpenAI's strict mode),
// items / prefixItems / additionalItems / minItems / maxItems, minLength / maxLength,
// pattern (matched as a whole), format (date, time, date-time, uuid, email, ipv4, ipv6,
// hostname, uri), minimum / maximum / exclusiveMinimum / exclusiveMaximum (integers exactly,
// decimals as described in number_range.h). Properties come in schema order. Annotations
// (title, description, default, examples, ...) and unknown keys are ignored; keywords that
// constrain in ways not expressible here (not, if/then/else, patternProperties, multipleOf,
// uniqueItems, ...) are GrammarErrors naming the keyword and where it is.
#pragma once

#include <nlohmann/json.hpp>

#include "grammar/expr.h"

namespace strata::grammar {

GrammarAst json_schema_grammar(const nlohmann::ordered_json& schema);

// Adds the rules of `schema` to `ast`, their names starting with `prefix` (several schemas can
// then live in one grammar: one per tool of a tool-calling grammar), and returns the expression
// of a valid value.
ExprId add_json_schema(GrammarAst& ast, const nlohmann::ordered_json& schema, const std::string& prefix);

}  // namespace strata::grammar
