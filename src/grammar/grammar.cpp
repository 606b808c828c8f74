#include "grammar/grammar.h"

#include <algorithm>
#include <functional>

#include "grammar/limits.h"
#include "grammar/rule_fsm.h"

namespace strata::grammar {
namespace {

constexpr int64_t kSizeCap = int64_t{1} << 40;
constexpr int64_t kInlineSmall = 128;     // always copied into callers
constexpr int64_t kInlineOnce = 1 << 16;  // copied into its only caller
constexpr int32_t kMaxInlineHeight = 16;  // chains of copied rules

void collect_refs(const GrammarAst& ast, ExprId id, std::vector<int32_t>& out) {
  const Expr& e = ast.expr(id);
  if (e.kind == ExprKind::RuleRef) out.push_back(e.rule);
  for (ExprId item : e.items) collect_refs(ast, item, out);
}

// Strongly connected components of the rule graph (Tarjan, iterative), in reverse topological
// order: a component comes after every component it references.
std::vector<std::vector<int32_t>> rule_components(const std::vector<std::vector<int32_t>>& refs,
                                                  const std::vector<uint8_t>& reachable) {
  const size_t n = refs.size();
  std::vector<int32_t> index(n, -1), low(n, 0);
  std::vector<uint8_t> on_stack(n, 0);
  std::vector<int32_t> stack;
  std::vector<std::vector<int32_t>> out;
  int32_t next = 0;
  struct Frame {
    int32_t v;
    size_t edge;
  };
  for (size_t root = 0; root < n; ++root) {
    if (!reachable[root] || index[root] >= 0) continue;
    std::vector<Frame> frames{{static_cast<int32_t>(root), 0}};
    index[root] = low[root] = next++;
    stack.push_back(static_cast<int32_t>(root));
    on_stack[root] = 1;
    while (!frames.empty()) {
      Frame& f = frames.back();
      const auto v = static_cast<size_t>(f.v);
      if (f.edge < refs[v].size()) {
        const auto w = static_cast<size_t>(refs[v][f.edge++]);
        if (index[w] < 0) {
          index[w] = low[w] = next++;
          stack.push_back(static_cast<int32_t>(w));
          on_stack[w] = 1;
          frames.push_back({static_cast<int32_t>(w), 0});
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      if (low[v] == index[v]) {
        std::vector<int32_t> comp;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[static_cast<size_t>(w)] = 0;
          comp.push_back(w);
        } while (w != f.v);
        out.push_back(std::move(comp));
      }
      frames.pop_back();
      if (!frames.empty()) {
        const auto u = static_cast<size_t>(frames.back().v);
        low[u] = std::min(low[u], low[v]);
      }
    }
  }
  return out;
}

}  // namespace

class GrammarAssembler {
 public:
  explicit GrammarAssembler(const GrammarAst& ast) : ast_(ast), budget_(kMaxCompileWork) {}

  Grammar run() {
    if (ast_.root < 0 || ast_.rules[static_cast<size_t>(ast_.root)].body < 0)
      STRATA_GRAMMAR_THROW("the grammar has no root rule");
    for (const RuleDef& r : ast_.rules)
      if (r.body < 0) STRATA_GRAMMAR_THROW("undefined rule '", r.name, "'");
    decide_inlining();
    build_automata();
    analyze();
    return std::move(g_);
  }

 private:
  std::vector<int32_t>& rule_start() { return g_.rule_start_; }

  void decide_inlining() {
    const size_t n = ast_.rules.size();
    refs_.assign(n, {});
    for (size_t r = 0; r < n; ++r) collect_refs(ast_, ast_.rules[r].body, refs_[r]);
    reachable_.assign(n, 0);
    std::vector<int32_t> stack{ast_.root};
    reachable_[static_cast<size_t>(ast_.root)] = 1;
    std::vector<int32_t> ref_count(n, 0);
    while (!stack.empty()) {
      const int32_t r = stack.back();
      stack.pop_back();
      for (int32_t x : refs_[static_cast<size_t>(r)]) {
        ++ref_count[static_cast<size_t>(x)];
        if (!reachable_[static_cast<size_t>(x)]) reachable_[static_cast<size_t>(x)] = 1, stack.push_back(x);
      }
    }
    inline_.assign(n, 0);
    std::vector<int64_t> size(n, 1);
    std::vector<int32_t> height(n, 0);
    for (const std::vector<int32_t>& comp : rule_components(refs_, reachable_)) {
      const int32_t r = comp[0];
      const auto& own = refs_[static_cast<size_t>(r)];
      const bool recursive = comp.size() > 1 || std::find(own.begin(), own.end(), r) != own.end();
      if (recursive) continue;
      int32_t h = 0;
      for (int32_t x : own)
        if (inline_[static_cast<size_t>(x)]) h = std::max(h, height[static_cast<size_t>(x)] + 1);
      height[static_cast<size_t>(r)] = h;
      size[static_cast<size_t>(r)] = expr_size(ast_.rules[static_cast<size_t>(r)].body, size);
      const int64_t sz = size[static_cast<size_t>(r)];
      inline_[static_cast<size_t>(r)] =
          r != ast_.root && !ast_.rules[static_cast<size_t>(r)].shared && h < kMaxInlineHeight &&
          (sz <= kInlineSmall || (ref_count[static_cast<size_t>(r)] == 1 && sz <= kInlineOnce));
    }
  }

  // Roughly the automaton states an expression needs (copied rules included).
  int64_t expr_size(ExprId id, const std::vector<int64_t>& rule_size) const {
    const Expr& e = ast_.expr(id);
    switch (e.kind) {
      case ExprKind::Empty:
        return 1;
      case ExprKind::Literal:
        return static_cast<int64_t>(e.literal.size());
      case ExprKind::Chars:
        return 2 + 2 * static_cast<int64_t>(e.chars.ranges().size());
      case ExprKind::RuleRef:
        return inline_[static_cast<size_t>(e.rule)] ? rule_size[static_cast<size_t>(e.rule)] : 1;
      case ExprKind::Seq:
      case ExprKind::Alt: {
        int64_t s = 1;
        for (ExprId item : e.items) s = std::min(kSizeCap, s + expr_size(item, rule_size));
        return s;
      }
      case ExprKind::Repeat: {
        const int64_t copies = e.max == kUnbounded ? e.min + 1 : std::max(e.max, 1);
        return std::min(kSizeCap, 1 + copies * expr_size(e.items[0], rule_size));
      }
    }
    return 1;
  }

  void build_automata() {
    const size_t n = ast_.rules.size();
    rule_start().assign(n, -1);
    g_.rule_names_.resize(n);
    for (size_t r = 0; r < n; ++r) g_.rule_names_[r] = ast_.rules[r].name;
    for (size_t r = 0; r < n; ++r) {
      if (!reachable_[r] || inline_[r]) continue;
      RuleFsm fsm = build_rule_fsm(ast_, static_cast<int32_t>(r), inline_, budget_);
      const auto base = static_cast<int32_t>(g_.states_.size());
      if (g_.states_.size() + fsm.states.size() > kMaxStates)
        STRATA_GRAMMAR_THROW("the grammar needs more than ", kMaxStates, " automaton states");
      rule_start()[r] = base;
      for (const RuleFsm::St& st : fsm.states) {
        State s;
        s.rule = static_cast<int32_t>(r);
        s.final = st.final;
        s.bytes_begin = static_cast<uint32_t>(g_.byte_edges_.size());
        for (const ByteEdge& e : st.bytes) g_.byte_edges_.push_back({e.lo, e.hi, e.target + base});
        s.bytes_end = static_cast<uint32_t>(g_.byte_edges_.size());
        s.refs_begin = static_cast<uint32_t>(g_.ref_edges_.size());
        for (const RefEdge& e : st.refs) g_.ref_edges_.push_back({e.rule, e.target + base});
        s.refs_end = static_cast<uint32_t>(g_.ref_edges_.size());
        g_.states_.push_back(s);
      }
    }
    g_.root_ = ast_.root;
  }

  // Rules whose automaton reaches a final state from its start using byte edges (when
  // `with_bytes`) and references to rules already known to have the property.
  std::vector<uint8_t> rule_fixpoint(bool with_bytes) const {
    const size_t n = ast_.rules.size();
    std::vector<uint8_t> has(n, 0);
    const std::vector<std::vector<int32_t>> callers = automaton_callers();
    std::vector<int32_t> work;
    for (size_t r = 0; r < n; ++r)
      if (g_.rule_start_[r] >= 0) work.push_back(static_cast<int32_t>(r));
    std::vector<int32_t> seen(g_.states_.size(), -1);
    int32_t visit = 0;
    while (!work.empty()) {
      const int32_t r = work.back();
      work.pop_back();
      if (has[static_cast<size_t>(r)]) continue;
      ++visit;
      std::vector<int32_t> stack{g_.rule_start_[static_cast<size_t>(r)]};
      bool found = false;
      while (!stack.empty() && !found) {
        const int32_t s = stack.back();
        stack.pop_back();
        if (seen[static_cast<size_t>(s)] == visit) continue;
        seen[static_cast<size_t>(s)] = visit;
        if (g_.state(s).final) found = true;
        if (with_bytes)
          for (const ByteEdge& e : g_.byte_edges(s)) stack.push_back(e.target);
        for (const RefEdge& e : g_.ref_edges(s))
          if (has[static_cast<size_t>(e.rule)]) stack.push_back(e.target);
      }
      if (!found) continue;
      has[static_cast<size_t>(r)] = 1;
      for (int32_t c : callers[static_cast<size_t>(r)]) work.push_back(c);
    }
    return has;
  }

  // callers[x]: the rules whose automata reference x (once per referencing state).
  std::vector<std::vector<int32_t>> automaton_callers() const {
    std::vector<std::vector<int32_t>> callers(ast_.rules.size());
    for (size_t s = 0; s < g_.states_.size(); ++s)
      for (const RefEdge& e : g_.ref_edges(static_cast<int32_t>(s)))
        if (e.rule >= 0) callers[static_cast<size_t>(e.rule)].push_back(g_.states_[s].rule);
    return callers;
  }

  void analyze() {
    const std::vector<uint8_t> productive = rule_fixpoint(true);
    if (!productive[static_cast<size_t>(ast_.root)])
      STRATA_GRAMMAR_THROW("the grammar matches no string: rule 'root' can never be completed");
    drop_unproductive(productive);
    g_.nullable_ = rule_fixpoint(false);
    check_left_recursion();
    collect_live_states();
  }

  // References to rules that can never complete lead nowhere; states left without a way to
  // their rule's end are cut off, so every recognizer item can still finish.
  void drop_unproductive(const std::vector<uint8_t>& productive) {
    for (RefEdge& e : g_.ref_edges_)
      if (!productive[static_cast<size_t>(e.rule)]) e.rule = -1;
    const size_t n = g_.states_.size();
    std::vector<std::vector<int32_t>> preds(n);
    for (size_t s = 0; s < n; ++s) {
      for (const ByteEdge& e : g_.byte_edges(static_cast<int32_t>(s)))
        preds[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
      for (const RefEdge& e : g_.ref_edges(static_cast<int32_t>(s)))
        if (e.rule >= 0) preds[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
    }
    std::vector<uint8_t> live(n, 0);
    std::vector<int32_t> stack;
    for (size_t s = 0; s < n; ++s)
      if (g_.states_[s].final) live[s] = 1, stack.push_back(static_cast<int32_t>(s));
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      for (int32_t p : preds[static_cast<size_t>(s)])
        if (!live[static_cast<size_t>(p)]) live[static_cast<size_t>(p)] = 1, stack.push_back(p);
    }
    // Rebuild the edge arrays without edges into dead states.
    std::vector<ByteEdge> bytes;
    std::vector<RefEdge> refs;
    for (size_t s = 0; s < n; ++s) {
      State& st = g_.states_[s];
      const uint32_t bb = static_cast<uint32_t>(bytes.size()), rb = static_cast<uint32_t>(refs.size());
      for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i)
        if (live[static_cast<size_t>(g_.byte_edges_[i].target)]) bytes.push_back(g_.byte_edges_[i]);
      for (uint32_t i = st.refs_begin; i < st.refs_end; ++i) {
        const RefEdge& e = g_.ref_edges_[i];
        if (e.rule >= 0 && live[static_cast<size_t>(e.target)]) refs.push_back(e);
      }
      st.bytes_begin = bb;
      st.bytes_end = static_cast<uint32_t>(bytes.size());
      st.refs_begin = rb;
      st.refs_end = static_cast<uint32_t>(refs.size());
    }
    g_.byte_edges_ = std::move(bytes);
    g_.ref_edges_ = std::move(refs);
  }

  // States reachable from `s` without reading a byte (through references to nullable rules).
  void nullable_closure(int32_t s, std::vector<int32_t>& out, std::vector<int32_t>& seen,
                        int32_t visit) const {
    std::vector<int32_t> stack{s};
    while (!stack.empty()) {
      const int32_t q = stack.back();
      stack.pop_back();
      if (seen[static_cast<size_t>(q)] == visit) continue;
      seen[static_cast<size_t>(q)] = visit;
      out.push_back(q);
      for (const RefEdge& e : g_.ref_edges(q))
        if (g_.nullable_[static_cast<size_t>(e.rule)]) stack.push_back(e.target);
    }
  }

  void check_left_recursion() {
    const size_t n = ast_.rules.size();
    std::vector<std::vector<int32_t>> left(n);  // rules a rule can start with
    std::vector<int32_t> seen(g_.states_.size(), -1), states;
    for (size_t r = 0; r < n; ++r) {
      if (g_.rule_start_[r] < 0) continue;
      states.clear();
      nullable_closure(g_.rule_start_[r], states, seen, static_cast<int32_t>(r));
      for (int32_t q : states)
        for (const RefEdge& e : g_.ref_edges(q)) left[r].push_back(e.rule);
    }
    // Depth-first search for a cycle; the path on the stack names it.
    std::vector<uint8_t> color(n, 0);  // 0 new, 1 on the path, 2 done
    for (size_t start = 0; start < n; ++start) {
      if (color[start] || g_.rule_start_[start] < 0) continue;
      std::vector<std::pair<int32_t, size_t>> path{{static_cast<int32_t>(start), 0}};
      color[start] = 1;
      while (!path.empty()) {
        auto& [v, i] = path.back();
        if (i == left[static_cast<size_t>(v)].size()) {
          color[static_cast<size_t>(v)] = 2;
          path.pop_back();
          continue;
        }
        const int32_t w = left[static_cast<size_t>(v)][i++];
        if (color[static_cast<size_t>(w)] == 1) {
          std::string cycle;
          bool on = false;
          for (const auto& [u, j] : path) {
            on = on || u == w;
            if (on) cycle += "'" + g_.rule_names_[static_cast<size_t>(u)] + "' -> ";
          }
          STRATA_GRAMMAR_THROW("left recursion is not supported: ", cycle, "'",
                               g_.rule_names_[static_cast<size_t>(w)], "'");
        }
        if (color[static_cast<size_t>(w)] == 0) {
          color[static_cast<size_t>(w)] = 1;
          path.push_back({w, 0});
        }
      }
    }
  }

  void collect_live_states() {
    std::vector<uint8_t> seen(g_.states_.size(), 0);
    std::vector<int32_t> stack{g_.rule_start_[static_cast<size_t>(ast_.root)]};
    while (!stack.empty()) {
      const int32_t s = stack.back();
      stack.pop_back();
      if (seen[static_cast<size_t>(s)]) continue;
      seen[static_cast<size_t>(s)] = 1;
      for (const ByteEdge& e : g_.byte_edges(s)) stack.push_back(e.target);
      for (const RefEdge& e : g_.ref_edges(s)) {
        stack.push_back(e.target);
        stack.push_back(g_.rule_start_[static_cast<size_t>(e.rule)]);
      }
    }
    for (size_t s = 0; s < seen.size(); ++s)
      if (seen[s]) g_.live_states_.push_back(static_cast<int32_t>(s));
  }

  const GrammarAst& ast_;
  WorkBudget budget_;
  Grammar g_;
  std::vector<std::vector<int32_t>> refs_;
  std::vector<uint8_t> reachable_, inline_;
};

Grammar compile_grammar(const GrammarAst& ast) {
  return GrammarAssembler(ast).run();
}

std::vector<int32_t> bytes_to_rule_end(const Grammar& g) {
  constexpr int32_t kInf = INT32_MAX / 4;
  std::vector<int32_t> dist(static_cast<size_t>(g.n_states()), kInf);
  // Bellman-Ford over all states at once: dist(s) = 0 if final, else the cheapest edge, a
  // byte costing 1 and a reference the called rule's start distance.
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t s = g.n_states(); s-- > 0;) {
      int32_t best = g.state(s).final ? 0 : kInf;
      for (const ByteEdge& e : g.byte_edges(s))
        best = std::min(best, dist[static_cast<size_t>(e.target)] + 1);
      for (const RefEdge& e : g.ref_edges(s))
        best = std::min(
            best, dist[static_cast<size_t>(g.rule_start(e.rule))] + dist[static_cast<size_t>(e.target)]);
      if (best < dist[static_cast<size_t>(s)]) dist[static_cast<size_t>(s)] = best, changed = true;
    }
  }
  return dist;
}

}  // namespace strata::grammar
