// Argument conversions shared by the builtin filters, tests, methods and globals.
#pragma once

#include <string>
#include <string_view>

#include "core/check.h"
#include "template/interpreter.h"
#include "template/value.h"

namespace strata::jinja {

// An int argument (bool counts, as in Python); TypeError wording otherwise.
inline int64_t int_arg(const Value& v, std::string_view what) {
  if (v.is_int() || v.is_bool()) return v.to_int();
  if (v.is_undefined()) throw Error(v.undefined_message());
  STRATA_THROW(what, ": '", type_name(v), "' object cannot be interpreted as an integer");
}

// A str argument (str.method(x) requires a real str).
inline const std::string& string_arg(const Value& v, std::string_view what) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) throw Error(v.undefined_message());
  STRATA_THROW(what, " argument must be str, not ", type_name(v));
}

// Jinja's soft_str: str(v), with undefined as "".
inline std::string soft_str(Interpreter& in, const Value& v) {
  return v.is_string() ? v.as_string() : in.str(v);
}

}  // namespace strata::jinja
