#include "grammar/rule_fsm.h"

#include <algorithm>
#include <unordered_map>

#include "grammar/limits.h"
#include "grammar/utf8_sequences.h"

namespace strata::grammar {

void WorkBudget::exhausted() {
  STRATA_GRAMMAR_THROW("the grammar is too complex to compile within the limits");
}

namespace {

constexpr int32_t kEpsilon = -2;
constexpr int32_t kBytes = -1;

struct NfaEdge {
  int32_t from, target;
  int32_t rule;  // kBytes, kEpsilon or a rule index
  uint8_t lo, hi;
};

// An automaton with epsilon edges, built by Thompson's construction.
class Nfa {
 public:
  explicit Nfa(WorkBudget& budget) : budget_(budget) {}

  int32_t add_state() {
    budget_.spend(1);
    if (static_cast<size_t>(n_states_) >= kMaxNfaStates)
      STRATA_GRAMMAR_THROW("the grammar needs more than ", kMaxNfaStates, " automaton states");
    return n_states_++;
  }
  void add_edge(int32_t from, int32_t target, int32_t rule, uint8_t lo = 0, uint8_t hi = 0) {
    budget_.spend(1);
    edges_.push_back({from, target, rule, lo, hi});
  }
  // Groups the edges by source state (call once, after building).
  void index() {
    offsets_.assign(static_cast<size_t>(n_states_) + 1, 0);
    for (const NfaEdge& e : edges_) ++offsets_[static_cast<size_t>(e.from) + 1];
    for (size_t i = 1; i < offsets_.size(); ++i) offsets_[i] += offsets_[i - 1];
    std::vector<NfaEdge> sorted(edges_.size());
    std::vector<uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
    for (const NfaEdge& e : edges_) sorted[fill[static_cast<size_t>(e.from)]++] = e;
    edges_ = std::move(sorted);
  }
  std::span<const NfaEdge> out(int32_t s) const {
    return {edges_.data() + offsets_[static_cast<size_t>(s)],
            offsets_[static_cast<size_t>(s) + 1] - offsets_[static_cast<size_t>(s)]};
  }
  int32_t n_states() const { return n_states_; }
  WorkBudget& budget() { return budget_; }

 private:
  WorkBudget& budget_;
  int32_t n_states_ = 0;
  std::vector<NfaEdge> edges_;
  std::vector<uint32_t> offsets_;
};

class Thompson {
 public:
  Thompson(const GrammarAst& ast, const std::vector<uint8_t>& inline_rule, Nfa& nfa)
      : ast_(ast), inline_(inline_rule), nfa_(nfa) {}

  void build(ExprId id, int32_t from, int32_t to) {
    const Expr& e = ast_.expr(id);
    switch (e.kind) {
      case ExprKind::Empty:
        nfa_.add_edge(from, to, kEpsilon);
        return;
      case ExprKind::Literal: {
        int32_t cur = from;
        for (size_t i = 0; i < e.literal.size(); ++i) {
          const int32_t next = i + 1 == e.literal.size() ? to : nfa_.add_state();
          const auto b = static_cast<uint8_t>(e.literal[i]);
          nfa_.add_edge(cur, next, kBytes, b, b);
          cur = next;
        }
        return;
      }
      case ExprKind::Chars:
        build_chars(e, from, to);
        return;
      case ExprKind::RuleRef:
        if (inline_[static_cast<size_t>(e.rule)])
          build(ast_.rules[static_cast<size_t>(e.rule)].body, from, to);
        else
          nfa_.add_edge(from, to, e.rule);
        return;
      case ExprKind::Seq: {
        int32_t cur = from;
        for (size_t i = 0; i < e.items.size(); ++i) {
          const int32_t next = i + 1 == e.items.size() ? to : nfa_.add_state();
          build(e.items[i], cur, next);
          cur = next;
        }
        return;
      }
      case ExprKind::Alt:
        // Alternatives share both ends: no construction below loops back into `from` or out
        // of `to` (a loop always runs through a fresh state).
        for (ExprId item : e.items) build(item, from, to);
        return;
      case ExprKind::Repeat:
        build_repeat(e, from, to);
        return;
    }
  }

 private:
  void build_repeat(const Expr& e, int32_t from, int32_t to) {
    const ExprId item = e.items[0];
    if (e.max == kUnbounded) {
      int32_t cur = from;
      for (int32_t i = 0; i < e.min; ++i) {
        const int32_t next = nfa_.add_state();
        build(item, cur, next);
        cur = next;
      }
      const int32_t loop = nfa_.add_state();
      nfa_.add_edge(cur, loop, kEpsilon);
      build(item, loop, loop);
      nfa_.add_edge(loop, to, kEpsilon);
      return;
    }
    if (e.max == 0) nfa_.add_edge(from, to, kEpsilon);
    int32_t cur = from;
    for (int32_t i = 0; i < e.max; ++i) {
      if (i >= e.min) nfa_.add_edge(cur, to, kEpsilon);
      const int32_t next = i + 1 == e.max ? to : nfa_.add_state();
      build(item, cur, next);
      cur = next;
    }
  }

  // A byte trie from `from` to `to` over the UTF-8 sequences (and JSON escapes) of the set.
  // Trailing continuation bytes [80-BF] share states, so a class costs a handful of states.
  void build_chars(const Expr& e, int32_t from, int32_t to) {
    std::vector<ByteSequence> seqs = codepoint_byte_sequences(e.chars, e.json_escape);
    int32_t cont[4] = {to, -1, -1, -1};  // cont[k]: k continuation bytes, then `to`
    auto continuation = [&](int k) {
      for (int j = 1; j <= k; ++j) {
        if (cont[j] < 0) {
          cont[j] = nfa_.add_state();
          nfa_.add_edge(cont[j], cont[j - 1], kBytes, 0x80, 0xBF);
        }
      }
      return cont[k];
    };
    struct TrieEdge {
      int32_t from;
      uint8_t lo, hi;
      int32_t target;
    };
    std::vector<TrieEdge> trie;
    for (const ByteSequence& seq : seqs) {
      // Trailing full-continuation ranges become the shared chain.
      size_t n = seq.size();
      int k = 0;
      while (n > 1 && k < 3 && seq[n - 1].lo == 0x80 && seq[n - 1].hi == 0xBF) --n, ++k;
      int32_t cur = from;
      for (size_t i = 0; i + 1 < n; ++i) {
        const ByteRange r = seq[i];
        nfa_.budget().spend(static_cast<int64_t>(trie.size()));
        auto it = std::find_if(trie.begin(), trie.end(), [&](const TrieEdge& t) {
          return t.from == cur && t.lo == r.lo && t.hi == r.hi;
        });
        if (it == trie.end()) {
          const int32_t next = nfa_.add_state();
          nfa_.add_edge(cur, next, kBytes, r.lo, r.hi);
          trie.push_back({cur, r.lo, r.hi, next});
          cur = next;
        } else {
          cur = it->target;
        }
      }
      nfa_.add_edge(cur, continuation(k), kBytes, seq[n - 1].lo, seq[n - 1].hi);
    }
  }

  const GrammarAst& ast_;
  const std::vector<uint8_t>& inline_;
  Nfa& nfa_;
};

struct VectorHash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// Epsilon closures over the NFA, with a visit stamp per state.
class Closure {
 public:
  explicit Closure(const Nfa& nfa) : nfa_(nfa), stamp_(static_cast<size_t>(nfa.n_states()), 0) {}

  // Sorted closure of `seeds`.
  std::vector<int32_t> of(const std::vector<int32_t>& seeds, WorkBudget& budget) {
    ++gen_;
    std::vector<int32_t> out, stack;
    for (int32_t s : seeds) visit(s, out, stack);
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (const NfaEdge& e : nfa_.out(s))
        if (e.rule == kEpsilon) visit(e.target, out, stack);
    }
    budget.spend(static_cast<int64_t>(out.size()));
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  void visit(int32_t s, std::vector<int32_t>& out, std::vector<int32_t>& stack) {
    if (stamp_[static_cast<size_t>(s)] == gen_) return;
    stamp_[static_cast<size_t>(s)] = gen_;
    out.push_back(s);
    stack.push_back(s);
  }
  const Nfa& nfa_;
  std::vector<uint32_t> stamp_;
  uint32_t gen_ = 0;
};

// The outgoing labelled edges of a set of NFA states, grouped: disjoint byte intervals with
// their target sets, and per rule its target set.
struct GroupedEdges {
  std::vector<std::pair<ByteRange, std::vector<int32_t>>> bytes;
  std::vector<std::pair<int32_t, std::vector<int32_t>>> refs;
};

GroupedEdges group_edges(const Nfa& nfa, const std::vector<int32_t>& members, WorkBudget& budget) {
  std::vector<NfaEdge> byte_edges;
  GroupedEdges g;
  for (int32_t s : members) {
    for (const NfaEdge& e : nfa.out(s)) {
      if (e.rule == kBytes) {
        byte_edges.push_back(e);
      } else if (e.rule >= 0) {
        auto it =
            std::find_if(g.refs.begin(), g.refs.end(), [&](const auto& r) { return r.first == e.rule; });
        if (it == g.refs.end())
          g.refs.push_back({e.rule, {e.target}});
        else
          it->second.push_back(e.target);
      }
    }
  }
  std::vector<int32_t> bounds;  // interval starts
  for (const NfaEdge& e : byte_edges) {
    bounds.push_back(e.lo);
    bounds.push_back(e.hi + 1);
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  budget.spend(static_cast<int64_t>(bounds.size() * (byte_edges.size() + 1)));
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int32_t lo = bounds[i], hi = bounds[i + 1] - 1;
    std::vector<int32_t> targets;
    for (const NfaEdge& e : byte_edges)
      if (e.lo <= lo && hi <= e.hi) targets.push_back(e.target);
    if (!targets.empty())
      g.bytes.push_back({{static_cast<uint8_t>(lo), static_cast<uint8_t>(hi)}, std::move(targets)});
  }
  return g;
}

// Subset construction; false when the automaton would exceed `max_states`.
bool determinize(const Nfa& nfa, int32_t start, int32_t end, size_t max_states, RuleFsm& out,
                 WorkBudget& budget) {
  Closure closure(nfa);
  // Only states with labelled edges (and the end) decide how a subset behaves: keeping just
  // those merges subsets that differ in pass-through states (e.g. a loop's entry and body).
  std::vector<uint8_t> important(static_cast<size_t>(nfa.n_states()), 0);
  important[static_cast<size_t>(end)] = 1;
  for (int32_t s = 0; s < nfa.n_states(); ++s)
    for (const NfaEdge& e : nfa.out(s))
      if (e.rule != kEpsilon) important[static_cast<size_t>(s)] = 1;
  std::unordered_map<std::vector<int32_t>, int32_t, VectorHash> ids;
  std::vector<std::vector<int32_t>> subsets;
  auto intern = [&](std::vector<int32_t> set) {
    std::erase_if(set, [&](int32_t s) { return !important[static_cast<size_t>(s)]; });
    auto [it, fresh] = ids.emplace(std::move(set), static_cast<int32_t>(subsets.size()));
    if (fresh) subsets.push_back(it->first);
    return it->second;
  };
  intern(closure.of({start}, budget));
  out.states.clear();
  for (size_t d = 0; d < subsets.size(); ++d) {
    if (subsets.size() > max_states) return false;
    const std::vector<int32_t> members = subsets[d];
    RuleFsm::St st;
    st.final = std::binary_search(members.begin(), members.end(), end);
    GroupedEdges g = group_edges(nfa, members, budget);
    for (auto& [range, targets] : g.bytes) {
      const int32_t t = intern(closure.of(targets, budget));
      if (!st.bytes.empty() && st.bytes.back().target == t && st.bytes.back().hi + 1 == range.lo)
        st.bytes.back().hi = range.hi;
      else
        st.bytes.push_back({range.lo, range.hi, t});
    }
    for (auto& [rule, targets] : g.refs) st.refs.push_back({rule, intern(closure.of(targets, budget))});
    out.states.push_back(std::move(st));
  }
  out.deterministic = true;
  return true;
}

// The epsilon-free automaton: each state takes the labelled edges of its closure.
void remove_epsilons(const Nfa& nfa, int32_t start, int32_t end, RuleFsm& out, WorkBudget& budget) {
  Closure closure(nfa);
  std::vector<int32_t> local(static_cast<size_t>(nfa.n_states()), -1);
  std::vector<int32_t> order{start};
  local[static_cast<size_t>(start)] = 0;
  auto id = [&](int32_t s) {
    if (local[static_cast<size_t>(s)] < 0) {
      local[static_cast<size_t>(s)] = static_cast<int32_t>(order.size());
      order.push_back(s);
    }
    return local[static_cast<size_t>(s)];
  };
  out.states.clear();
  for (size_t i = 0; i < order.size(); ++i) {
    const std::vector<int32_t> members = closure.of({order[i]}, budget);
    RuleFsm::St st;
    st.final = std::binary_search(members.begin(), members.end(), end);
    for (int32_t m : members) {
      for (const NfaEdge& e : nfa.out(m)) {
        budget.spend(1);
        if (e.rule == kBytes)
          st.bytes.push_back({e.lo, e.hi, id(e.target)});
        else if (e.rule >= 0)
          st.refs.push_back({e.rule, id(e.target)});
      }
    }
    std::sort(st.bytes.begin(), st.bytes.end(), [](const ByteEdge& a, const ByteEdge& b) {
      return a.lo != b.lo ? a.lo < b.lo : a.target < b.target;
    });
    out.states.push_back(std::move(st));
  }
  out.deterministic = false;
}

// Drops the states from which no final state can be reached (the start stays, as state 0).
void trim(RuleFsm& fsm) {
  const size_t n = fsm.states.size();
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t s = 0; s < n; ++s) {
    for (const ByteEdge& e : fsm.states[s].bytes)
      preds[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
    for (const RefEdge& e : fsm.states[s].refs)
      preds[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
  }
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> stack;
  for (size_t s = 0; s < n; ++s)
    if (fsm.states[s].final) live[s] = 1, stack.push_back(static_cast<int32_t>(s));
  while (!stack.empty()) {
    const int32_t s = stack.back();
    stack.pop_back();
    for (int32_t p : preds[static_cast<size_t>(s)])
      if (!live[static_cast<size_t>(p)]) live[static_cast<size_t>(p)] = 1, stack.push_back(p);
  }
  std::vector<int32_t> renumber(n, -1);
  std::vector<RuleFsm::St> kept;
  for (size_t s = 0; s < n; ++s)
    if (live[s] || s == 0)
      renumber[s] = static_cast<int32_t>(kept.size()), kept.push_back(std::move(fsm.states[s]));
  for (RuleFsm::St& st : kept) {
    std::erase_if(st.bytes, [&](const ByteEdge& e) { return renumber[static_cast<size_t>(e.target)] < 0; });
    std::erase_if(st.refs, [&](const RefEdge& e) { return renumber[static_cast<size_t>(e.target)] < 0; });
    for (ByteEdge& e : st.bytes) e.target = renumber[static_cast<size_t>(e.target)];
    for (RefEdge& e : st.refs) e.target = renumber[static_cast<size_t>(e.target)];
  }
  fsm.states = std::move(kept);
}

}  // namespace

RuleFsm build_rule_fsm(const GrammarAst& ast, int32_t rule, const std::vector<uint8_t>& inline_rule,
                       WorkBudget& budget) {
  Nfa nfa(budget);
  const int32_t start = nfa.add_state();
  const int32_t end = nfa.add_state();
  Thompson(ast, inline_rule, nfa).build(ast.rules[static_cast<size_t>(rule)].body, start, end);
  nfa.index();
  RuleFsm fsm;
  // A DFA up to a few times the NFA's size; beyond (exponential subset blow-up) the NFA
  // serves, and the recognizer tracks its several states.
  const size_t max_dfa = std::max<size_t>(256, 4 * static_cast<size_t>(nfa.n_states()));
  if (!determinize(nfa, start, end, max_dfa, fsm, budget)) remove_epsilons(nfa, start, end, fsm, budget);
  trim(fsm);
  return fsm;
}

}  // namespace strata::grammar
