// The grammar syntax tree shared by every front end (GBNF text, regular expressions, JSON
// Schema, choice lists): named rules whose bodies are expressions over Unicode code points.
// compile_grammar (grammar.h) turns it into byte-level automata.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::grammar {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;

struct CodepointRange {
  uint32_t lo, hi;  // inclusive
};

// A set of Unicode scalar values: sorted, disjoint, non-adjacent ranges. Surrogates
// (U+D800..U+DFFF) are never members: they have no UTF-8 encoding.
class CodepointSet {
 public:
  CodepointSet() = default;
  explicit CodepointSet(uint32_t c) { add(c, c); }
  CodepointSet(uint32_t lo, uint32_t hi) { add(lo, hi); }

  void add(uint32_t lo, uint32_t hi);
  void add(uint32_t c) { add(c, c); }
  void add(const CodepointSet& other);
  // Every scalar value not in this set.
  CodepointSet complement() const;
  // Members that are also in `other`.
  CodepointSet intersect(const CodepointSet& other) const;
  bool contains(uint32_t c) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<CodepointRange>& ranges() const { return ranges_; }

  static CodepointSet any() { return CodepointSet(0, kMaxCodepoint); }

 private:
  std::vector<CodepointRange> ranges_;
};

// Appends the UTF-8 encoding of `c` (a scalar value) to `out`.
void append_utf8(uint32_t c, std::string& out);

enum class ExprKind : uint8_t {
  Empty,    // matches ""
  Literal,  // bytes
  Chars,    // one code point of a set, UTF-8 encoded (or as JSON string content)
  RuleRef,  // a rule by index
  Seq,      // items in order
  Alt,      // one of items
  Repeat,   // items[0], min..max times
};

using ExprId = int32_t;
inline constexpr int32_t kUnbounded = -1;

struct Expr {
  ExprKind kind = ExprKind::Empty;
  // Chars: encode each code point as it appears inside a JSON string literal ('"' as \",
  // '\' as \\, control characters as \n, \u001f, ...) instead of as raw UTF-8.
  bool json_escape = false;
  int32_t rule = -1;          // RuleRef
  int32_t min = 0, max = 0;   // Repeat; max kUnbounded: no upper bound
  std::string literal;        // Literal
  CodepointSet chars;         // Chars
  std::vector<ExprId> items;  // Seq, Alt, Repeat (one item)
};

struct RuleDef {
  std::string name;
  ExprId body = -1;  // -1: declared (referenced) but not defined yet
  // Never copied into the rules that reference it: a shared rule keeps one set of automaton
  // states, so its token masks are computed once (JSON strings, whitespace).
  bool shared = false;
};

// Rules and their expressions. Nodes are stored in one pool and referred to by index.
class GrammarAst {
 public:
  ExprId empty();
  ExprId literal(std::string bytes);
  ExprId chars(CodepointSet set, bool json_escape = false);
  ExprId ref(int32_t rule);
  ExprId seq(std::vector<ExprId> items);
  ExprId alt(std::vector<ExprId> items);
  ExprId repeat(ExprId item, int32_t min, int32_t max);

  // Index of the rule named `name`, declaring it (undefined) when new.
  int32_t rule_index(std::string_view name);
  // -1 when absent.
  int32_t find_rule(std::string_view name) const;
  int32_t add_rule(std::string name, ExprId body, bool shared = false);

  const Expr& expr(ExprId id) const { return exprs_[static_cast<size_t>(id)]; }
  size_t n_exprs() const { return exprs_.size(); }

  std::vector<RuleDef> rules;
  int32_t root = -1;

 private:
  ExprId add(Expr e);
  std::vector<Expr> exprs_;
  std::unordered_map<std::string, int32_t> by_name_;
};

// The grammar as GBNF-like text, for reading (JSON-escaped classes print as [json:...]).
std::string to_gbnf(const GrammarAst& ast);

}  // namespace strata::grammar
