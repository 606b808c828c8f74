// One rule's body as a byte-level automaton: Thompson construction from the syntax tree (code
// points expanded to UTF-8 byte sequences, rules marked for inlining copied in place), then
// subset construction while the result stays small, else the epsilon-free NFA, then states
// that cannot reach the end are dropped.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/expr.h"
#include "grammar/grammar.h"

namespace strata::grammar {

// Counts work units (automaton states, closure and partition steps) across one compile and
// throws GrammarError once the budget is spent.
class WorkBudget {
 public:
  explicit WorkBudget(int64_t limit) : left_(limit) {}
  void spend(int64_t n) {
    left_ -= n;
    if (left_ < 0) exhausted();
  }

 private:
  [[noreturn]] static void exhausted();
  int64_t left_;
};

struct RuleFsm {
  struct St {
    bool final = false;
    std::vector<ByteEdge> bytes;  // targets are local state ids
    std::vector<RefEdge> refs;
  };
  std::vector<St> states;  // states[0] is the start
  bool deterministic = false;
};

// Builds the automaton of `rule`. inline_rule[r]: references to r are replaced by r's body.
RuleFsm build_rule_fsm(const GrammarAst& ast, int32_t rule, const std::vector<uint8_t>& inline_rule,
                       WorkBudget& budget);

}  // namespace strata::grammar
