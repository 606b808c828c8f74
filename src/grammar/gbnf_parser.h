// GBNF, llama.cpp's grammar syntax:
//
//   root  ::= item ("," ws item)*      # rules: name ::= alternatives, one per line
//   item  ::= [a-z]+ | "\"" [^"]* "\"" | ( "x" | "y" ){2,4} | .
//
// Literals "..." and classes [...] (ranges a-z, negation [^...]) are over Unicode code points,
// with the escapes \x.. \u.... \U........ \t \r \n \\ \" \[ \]; `.` is any character;
// `*` `+` `?` `{m}` `{m,}` `{m,n}` repeat the preceding item; `#` starts a comment. A rule's
// alternatives continue on the next line after `|` or inside parentheses. Names are letters,
// digits, '-' (and '_', which llama.cpp does not accept). `root` is where matching starts.
// Token references (<...>) are not supported.
#pragma once

#include <string_view>

#include "grammar/expr.h"

namespace strata::grammar {

// Throws GrammarError "line L, column C: ..." for a syntax error, an undefined or doubly
// defined rule, a missing root, or input beyond the limits (grammar/limits.h).
GrammarAst parse_gbnf(std::string_view text);

}  // namespace strata::grammar
