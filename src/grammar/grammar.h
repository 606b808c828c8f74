// A compiled grammar: every rule is a byte-level automaton whose edges read a byte range or
// call another rule. Rules are determinized where that stays small (one recognizer item per
// rule instance), small non-recursive rules are copied into their callers, and the result is
// checked: undefined or unproductive rules, left recursion (llama.cpp rejects it too) and the
// size limits are errors.
#pragma once

#include <bitset>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "grammar/expr.h"

namespace strata::grammar {

using ByteSet = std::bitset<256>;

struct ByteEdge {
  uint8_t lo, hi;  // inclusive byte range
  int32_t target;
};

struct RefEdge {
  int32_t rule;    // a match of this rule, then
  int32_t target;  // continue here
};

struct State {
  int32_t rule = -1;                        // the rule this state belongs to
  bool final = false;                       // the rule may end here
  uint32_t bytes_begin = 0, bytes_end = 0;  // into byte edges, sorted by lo, disjoint when deterministic
  uint32_t refs_begin = 0, refs_end = 0;    // into ref edges
};

class Grammar {
 public:
  int32_t n_states() const { return static_cast<int32_t>(states_.size()); }
  const State& state(int32_t s) const { return states_[static_cast<size_t>(s)]; }
  std::span<const ByteEdge> byte_edges(int32_t s) const {
    const State& st = state(s);
    return {byte_edges_.data() + st.bytes_begin, st.bytes_end - st.bytes_begin};
  }
  std::span<const RefEdge> ref_edges(int32_t s) const {
    const State& st = state(s);
    return {ref_edges_.data() + st.refs_begin, st.refs_end - st.refs_begin};
  }
  int32_t n_rules() const { return static_cast<int32_t>(rule_start_.size()); }
  int32_t root() const { return root_; }
  // The start state of a rule that has its own automaton (-1 for rules copied into callers).
  int32_t rule_start(int32_t rule) const { return rule_start_[static_cast<size_t>(rule)]; }
  bool nullable(int32_t rule) const { return nullable_[static_cast<size_t>(rule)]; }
  const std::string& rule_name(int32_t rule) const { return rule_names_[static_cast<size_t>(rule)]; }
  // States reachable from the root's start (those a recognizer can be in), ascending.
  const std::vector<int32_t>& live_states() const { return live_states_; }

 private:
  friend class GrammarAssembler;
  std::vector<State> states_;
  std::vector<ByteEdge> byte_edges_;
  std::vector<RefEdge> ref_edges_;
  std::vector<int32_t> rule_start_;
  std::vector<uint8_t> nullable_;
  std::vector<std::string> rule_names_;
  std::vector<int32_t> live_states_;
  int32_t root_ = -1;
};

// Throws GrammarError for a grammar that cannot be compiled (see the file comment).
Grammar compile_grammar(const GrammarAst& ast);

// For every state, the fewest bytes that reach a final state of its rule (called rules count
// their own fewest bytes); used to steer an output towards completion.
std::vector<int32_t> bytes_to_rule_end(const Grammar& g);

}  // namespace strata::grammar
