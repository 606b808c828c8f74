#include "grammar/token_mask_cache.h"

#include <algorithm>

#include "grammar/earley.h"
#include "grammar/limits.h"
#include "grammar/state_equivalence.h"

namespace strata::grammar {

TokenMaskCache::TokenMaskCache(const Grammar& g, const TokenVocab& vocab, bool share_equivalent)
    : n_words_((static_cast<size_t>(vocab.n_vocab()) + 63) / 64),
      entries_(static_cast<size_t>(g.n_states())),
      scratch_bits_(n_words_, 0),
      depth_(vocab.max_piece_bytes() + 2),
      continuations_(static_cast<size_t>(g.n_rules())) {
  for (int32_t s : g.live_states())
    for (const RefEdge& e : g.ref_edges(s)) continuations_[static_cast<size_t>(e.rule)].push_back(e.target);
  for (std::vector<int32_t>& c : continuations_) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  std::vector<int32_t> cls;
  if (share_equivalent) {
    int64_t refinement_work = 0;
    cls = bounded_equivalence_classes(g, vocab.max_piece_bytes(), refinement_work);
  }
  std::vector<int32_t> computed_state(static_cast<size_t>(g.n_states()), -1);  // [class]
  EarleyParser inside(g), callers(g);
  for (int32_t s : g.live_states()) {
    if (g.byte_edges(s).empty()) continue;
    int32_t& done = computed_state[static_cast<size_t>(cls.empty() ? s : cls[static_cast<size_t>(s)])];
    if (done >= 0) {
      entries_[static_cast<size_t>(s)] = entries_[static_cast<size_t>(done)];
      continue;
    }
    compute(s, g, vocab, inside, callers);
    ++n_computed_;
    done = s;
  }
}

namespace {

// The one byte edge of `s` that reads `byte`: its target, -1 for none, -2 for several.
int32_t unique_target(const Grammar& g, int32_t s, uint8_t byte) {
  int32_t target = -1;
  for (const ByteEdge& e : g.byte_edges(s)) {
    if (e.lo > byte) break;
    if (byte <= e.hi) {
      if (target >= 0) return -2;
      target = e.target;
    }
  }
  return target;
}

}  // namespace

// One depth-first walk of the trie with two recognizers in step: `inside` from the state
// alone, `callers` holding what follows the state's rule wherever it is called, entered each
// time `inside` can complete the rule. While `inside` is one item moving through states
// without references (a DFA path), it is followed as a state number per depth; the Earley
// recognizer takes over from the first state that calls a rule.
//
// `callers` is only consulted where `inside` has died, so its sets are computed then, for the
// depths of the current path not yet computed: below a token that `inside` reads (most of the
// trie: every leaf of an accepted subtree) it is never run at all.
void TokenMaskCache::compute(int32_t state, const Grammar& g, const TokenVocab& vocab, EarleyParser& inside,
                             EarleyParser& callers) {
  ByteSet first;
  for (const ByteEdge& e : g.byte_edges(state))
    for (int b = e.lo; b <= e.hi; ++b) first.set(static_cast<size_t>(b));
  const std::vector<int32_t>& after_rule = continuations_[static_cast<size_t>(g.state(state).rule)];
  const std::vector<TokenVocab::Node>& nodes = vocab.nodes();
  const std::vector<int32_t>& ranked = vocab.ranked();
  Entry& entry = entries_[static_cast<size_t>(state)];
  entry.uncertain_begin = static_cast<uint32_t>(uncertain_.size());
  std::fill(scratch_bits_.begin(), scratch_bits_.end(), 0);
  int64_t n_accepted = 0;
  // Per depth on the current path.
  Depth* at = depth_.data();
  at[0] = {state, true, false, false, false, false, 0};
  size_t inside_base = 0, callers_base = 0;  // depth of each recognizer's set 0
  size_t callers_done = 0;  // depths 1 .. callers_done of the current path have their callers fields
  // Runs `callers` along the current path up to depth d (its sets, `live` and `uncertain`).
  // Once entered on a path, it gets a set at every depth (empty ones too), so that its set
  // index stays depth - callers_base.
  auto run_callers = [&](size_t d) {
    for (size_t k = callers_done + 1; k <= d; ++k) {
      const Depth& up = at[k - 1];
      Depth& here = at[k];
      here.uncertain = up.uncertain || (up.callers && callers.origin0_final_at(k - 1 - callers_base));
      here.live = false;
      if (!here.callers) continue;
      if (up.callers) {
        callers.truncate(k - callers_base);
      } else {
        callers.reset_empty();
        callers_base = k - 1;
      }
      here.live = callers.push_inject(
          here.byte, here.popped ? std::span<const int32_t>(after_rule) : std::span<const int32_t>());
    }
    callers_done = d;
  };
  int64_t steps = 0;
  const auto n_nodes = static_cast<int32_t>(nodes.size());
  for (int32_t i = 1; i < n_nodes;) {
    const TokenVocab::Node& nd = nodes[static_cast<size_t>(i)];
    if (nd.depth == 1 && !first.test(nd.byte)) {
      i = nd.skip;
      continue;
    }
    ++steps;
    const size_t d = nd.depth;
    const Depth& up = at[d - 1];
    Depth& here = at[d];
    callers_done = std::min(callers_done, d - 1);
    here = {-1, false, false, false, false, false, nd.byte};
    bool popped = false;
    if (up.inside && up.fast >= 0) {
      const int32_t t = unique_target(g, up.fast, nd.byte);
      if (t >= 0 && g.ref_edges(t).empty()) {
        here.fast = t;
        here.inside = true;
        popped = g.state(t).final;
      } else if (t != -1) {
        inside.reset_to_state(up.fast);
        inside_base = d - 1;
        here.inside = inside.push(nd.byte);
        popped = here.inside && inside.origin0_final();
      }
    } else if (up.inside) {
      inside.truncate(d - inside_base);
      here.inside = inside.push(nd.byte);
      popped = here.inside && inside.origin0_final();
    }
    here.popped = popped;
    here.callers = up.callers || popped;
    if (here.inside) {
      for (int32_t r = nd.rank_begin; r < nd.rank_begin + nd.n_here; ++r) {
        const int32_t id = ranked[static_cast<size_t>(r)];
        scratch_bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
      }
      n_accepted += nd.n_here;
      ++i;
      continue;
    }
    run_callers(d);
    if (here.live) {
      for (int32_t r = nd.rank_begin; r < nd.rank_begin + nd.n_here; ++r) uncertain_.push_back(r);
      ++i;
    } else {
      if (here.uncertain)
        for (int32_t r = nd.rank_begin; r < vocab.rank_end(i); ++r) uncertain_.push_back(r);
      i = nd.skip;
    }
  }
  work_ += steps;
  if (work_ > kMaxMaskWork)
    STRATA_GRAMMAR_THROW("the grammar is too complex: its token masks exceed the precomputation limit");
  entry.uncertain_end = static_cast<uint32_t>(uncertain_.size());
  store_accepted(entry, n_accepted, vocab.n_vocab());
}

// The accepted tokens of scratch_bits_ as a bitset when they are many, else as a list.
void TokenMaskCache::store_accepted(Entry& entry, int64_t n_accepted, int32_t n_vocab) {
  if (n_accepted * 32 > n_vocab) {
    entry.bitset = static_cast<int32_t>(bits_.size() / n_words_);
    bits_.insert(bits_.end(), scratch_bits_.begin(), scratch_bits_.end());
    return;
  }
  entry.accepted_begin = static_cast<uint32_t>(accepted_.size());
  for (size_t w = 0; w < n_words_; ++w)
    for (uint64_t bits = scratch_bits_[w]; bits; bits &= bits - 1)
      accepted_.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits))));
  entry.accepted_end = static_cast<uint32_t>(accepted_.size());
}

}  // namespace strata::grammar
