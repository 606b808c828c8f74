// Decimal numbers within bounds, as grammar expressions (JSON Schema minimum/maximum and
// their exclusive forms).
//
// Integers are exact: a range splits by digit count, then digit by digit ([lo, hi] of equal
// length: common prefix, then the first digit's sub-ranges). Unbounded sides stop at 16
// digits (the size every JSON number here has); explicit bounds work up to 18 digits.
// Numbers with a fraction are a subset: an integer part n with ".d..." is produced only when
// every n.xxx lies within the bounds (n + 1 <= maximum for positive n, and so on), and no
// exponent is used; all integers in the bounds are produced.
#pragma once

#include <cstdint>
#include <optional>

#include "grammar/expr.h"

namespace strata::grammar {

struct NumberBounds {
  std::optional<double> min, max;
  bool min_exclusive = false, max_exclusive = false;
};

// Integers n with lo <= n <= hi (nullopt: unbounded); -1 when there is none to produce.
ExprId integer_range(GrammarAst& ast, std::optional<int64_t> lo, std::optional<int64_t> hi);
// Integers within `b`; -1 when none.
ExprId integer_in(GrammarAst& ast, const NumberBounds& b);
// Numbers (integers and decimals) within `b`; -1 when none.
ExprId number_in(GrammarAst& ast, const NumberBounds& b);

}  // namespace strata::grammar
