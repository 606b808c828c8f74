// Python operators on template values: arithmetic, comparison, `in`, slicing and
// printf-style `%` formatting.
#pragma once

#include <optional>

#include "template/ast.h"
#include "template/value.h"

namespace strata::jinja {

Value unary_op(bool negate, const Value& v);
Value binary_op(Interpreter& in, BinaryOp op, const Value& a, const Value& b);
bool compare_op(Interpreter& in, CompareOp op, const Value& a, const Value& b);
// `item in container`.
bool contains(Interpreter& in, const Value& container, const Value& item);
// obj[start:stop:step] for strings (by code point), lists and tuples.
Value slice_value(Interpreter& in, const Value& obj, std::optional<int64_t> start,
                  std::optional<int64_t> stop, std::optional<int64_t> step);
// fmt % args (printf-style): args may be a tuple, a dict (for %(name)s) or one value.
std::string percent_format(Interpreter& in, const std::string& fmt, const Value& args);

}  // namespace strata::jinja
