// What one constraint may cost to compile and to run. Grammars, schemas and regexes come from
// clients: every front end and the compiler stop with a GrammarError (a 400) before any of
// these is exceeded, so a hostile request costs bounded time and memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/check.h"

namespace strata::grammar {

class GrammarError : public Error {
 public:
  using Error::Error;
};

#define STRATA_GRAMMAR_THROW(...) throw ::strata::grammar::GrammarError(::strata::concat(__VA_ARGS__))

inline constexpr size_t kMaxGrammarBytes = 1u << 20;  // GBNF text, regex, schema text
inline constexpr size_t kMaxRegexBytes = 64u << 10;
inline constexpr size_t kMaxExprs = 1u << 20;  // syntax tree nodes
inline constexpr size_t kMaxRules = 1u << 16;
inline constexpr int32_t kMaxNesting = 128;        // parentheses, schema depth
inline constexpr int32_t kMaxRepeat = 10000;       // {m,n} bounds
inline constexpr size_t kMaxNfaStates = 1u << 21;  // all rules together, before determinizing
inline constexpr size_t kMaxStates = 1u << 19;     // compiled automaton states
// Automaton construction and analysis steps of one compile.
inline constexpr int64_t kMaxCompileWork = int64_t{1} << 26;
// Trie steps spent precomputing token masks (a wide state of a 32k vocabulary costs ~1e5).
inline constexpr int64_t kMaxMaskWork = int64_t{48} << 20;
// Recognizer: items in one Earley set, and over one sequence's whole output.
inline constexpr size_t kMaxItemsPerSet = 1u << 15;
inline constexpr size_t kMaxItemsTotal = 1u << 24;

}  // namespace strata::grammar
