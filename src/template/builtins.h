// Built-in filters, tests, globals and methods of str/list/dict, as Jinja2 (with HF's
// overrides) provides them.
#pragma once

#include <optional>
#include <string_view>

#include "template/value.h"

namespace strata::jinja {

class Scope;

using FilterFn = Value (*)(Interpreter& in, const Value& input, const CallArgs& args);
using TestFn = bool (*)(Interpreter& in, const Value& input, const CallArgs& args);

// nullptr when there is no filter/test of that name.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// Python attribute lookup on a str/list/dict/number value: bound methods. nullopt when the
// value has no such attribute (the caller then tries item lookup); an undefined value whose
// message is a security error for attributes the sandbox forbids (list.append, __class__, ...).
std::optional<Value> python_attribute(Interpreter& in, const Value& obj, std::string_view name);

// Defines range, dict, namespace, cycler and joiner, plus HF's raise_exception and
// strftime_now, in `globals`.
void add_builtin_globals(Scope& globals);

}  // namespace strata::jinja
