// Regular expressions as grammar expressions: vLLM's guided_regex and JSON Schema's `pattern`.
//
// The syntax is the common part of Python's re and ECMAScript: literals, `.` (any character
// but newline), classes [a-z] [^...] with \d \w \s inside, \d \D \w \W \s \S, escapes (\n \t
// \xHH \uHHHH \. ...), groups ( ) (?: ) (?P<name> ) (?<name> ), alternation, and the
// quantifiers * + ? {m} {m,} {m,n} {,n} (lazy forms too: same language). The whole string
// must match: ^ and $ are accepted only at the ends. Backreferences, lookaround, word
// boundaries, inline flags and Unicode property classes are errors naming the construct.
//
// \d \w \s mean their ASCII sets and the negations \D \W \S (and [^...] classes holding them)
// stay within ASCII: Python's Unicode-aware classes are wider, so every string matched here
// is also matched by Python's re (a subset, never a superset).
#pragma once

#include <string_view>

#include "grammar/expr.h"

namespace strata::grammar {

// The expression of `pattern` in `ast`. json_escape: characters are produced as inside a JSON
// string literal (for `pattern` of a JSON string). Throws GrammarError "regex ...".
ExprId parse_regex(std::string_view pattern, GrammarAst& ast, bool json_escape = false);

// root ::= the pattern.
GrammarAst regex_grammar(std::string_view pattern);

}  // namespace strata::grammar
