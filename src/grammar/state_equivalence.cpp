#include "grammar/state_equivalence.h"

#include <map>

namespace strata::grammar {
namespace {

// Signature entries one refinement may build (a few times a typical grammar's need).
constexpr int64_t kMaxRefinementWork = int64_t{16} << 20;

// A state the refinement must not merge with any other.
bool kept_apart(const Grammar& g, int32_t s) {
  if (!g.ref_edges(s).empty()) return true;
  const std::span<const ByteEdge> edges = g.byte_edges(s);
  for (size_t i = 1; i < edges.size(); ++i)
    if (edges[i].lo <= edges[i - 1].hi) return true;  // overlapping: not deterministic
  return false;
}

// Numbers the distinct signatures in order of first appearance.
class Numbering {
 public:
  int32_t id(const std::vector<int64_t>& signature) {
    const auto [it, inserted] = ids_.try_emplace(signature, static_cast<int32_t>(ids_.size()));
    return it->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  std::map<std::vector<int64_t>, int32_t> ids_;
};

}  // namespace

std::vector<int32_t> bounded_equivalence_classes(const Grammar& g, size_t depth, int64_t& work) {
  const int32_t n = g.n_states();
  std::vector<uint8_t> apart(static_cast<size_t>(n));
  for (int32_t s = 0; s < n; ++s) apart[static_cast<size_t>(s)] = kept_apart(g, s);
  // Round 0: what a state says without reading a byte (its rule: where a completion returns).
  std::vector<int32_t> cls(static_cast<size_t>(n));
  std::vector<int64_t> sig;
  size_t n_classes = 0;
  {
    Numbering numbering;
    for (int32_t s = 0; s < n; ++s) {
      const State& st = g.state(s);
      sig = apart[static_cast<size_t>(s)] ? std::vector<int64_t>{-1, s}
                                          : std::vector<int64_t>{st.rule, st.final ? 1 : 0};
      cls[static_cast<size_t>(s)] = numbering.id(sig);
    }
    n_classes = numbering.size();
  }
  const int64_t budget = work + kMaxRefinementWork;
  // Round k + 1: the round-k class and, per byte range, the round-k class of its target.
  for (size_t round = 0; round < depth; ++round) {
    Numbering numbering;
    std::vector<int32_t> next(static_cast<size_t>(n));
    for (int32_t s = 0; s < n; ++s) {
      sig.assign(1, cls[static_cast<size_t>(s)]);
      if (!apart[static_cast<size_t>(s)]) {
        for (const ByteEdge& e : g.byte_edges(s)) {
          sig.push_back(int64_t{e.lo} << 8 | e.hi);
          sig.push_back(cls[static_cast<size_t>(e.target)]);
        }
      }
      work += static_cast<int64_t>(sig.size());
      next[static_cast<size_t>(s)] = numbering.id(sig);
    }
    if (work > budget) {  // a huge grammar: no sharing (a coarser partition would be wrong)
      for (int32_t s = 0; s < n; ++s) cls[static_cast<size_t>(s)] = s;
      return cls;
    }
    cls.swap(next);
    // No class split: the partition is stable, further rounds change nothing.
    if (numbering.size() == n_classes) break;
    n_classes = numbering.size();
  }
  return cls;
}

}  // namespace strata::grammar
