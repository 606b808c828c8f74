// Token masks precomputed per automaton state, as xgrammar's adaptive token mask cache does.
//
// From a state alone (origin 0, nothing predicted: EarleyParser::reset_to_state), each token
// is walked down the vocabulary trie (a shared prefix is read once) and lands in one class:
//  - accepted: its bytes are read inside the state's own rule, so it is allowed whatever the
//    rule was called from;
//  - rejected: every path dies inside the rule;
//  - uncertain: no path survives inside the rule, but one completes the rule with bytes left
//    and the rest of the token is read by one of the places that call the rule (a second
//    recognizer, started at each such completion with every call site's continuation), or
//    completes the caller too. Only these are checked against the full recognizer at run time.
// Accepted sets are stored as token lists, or bitsets when large. States that read every
// token alike (state_equivalence.h) share one entry, computed once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/token_vocab.h"

namespace strata::grammar {

class TokenMaskCache {
 public:
  struct Entry {
    int32_t bitset = -1;                              // index of the accepted bitset, or -1: a list
    uint32_t accepted_begin = 0, accepted_end = 0;    // token ids, ascending
    uint32_t uncertain_begin = 0, uncertain_end = 0;  // ranks (TokenVocab::ranked), ascending
  };

  // Computes the entries of every live state with byte edges; states with equal masks
  // (state_equivalence.h) share one computed entry unless `share_equivalent` is false (the
  // tests' reference). Throws GrammarError when the work exceeds kMaxMaskWork.
  TokenMaskCache(const Grammar& g, const TokenVocab& vocab, bool share_equivalent = true);

  const Entry& entry(int32_t state) const { return entries_[static_cast<size_t>(state)]; }
  std::span<const int32_t> accepted(const Entry& e) const {
    return {accepted_.data() + e.accepted_begin, e.accepted_end - e.accepted_begin};
  }
  std::span<const int32_t> uncertain(const Entry& e) const {
    return {uncertain_.data() + e.uncertain_begin, e.uncertain_end - e.uncertain_begin};
  }
  const uint64_t* bitset(const Entry& e) const {
    return bits_.data() + static_cast<size_t>(e.bitset) * n_words_;
  }
  size_t n_words() const { return n_words_; }         // 64-bit words per bitset: ceil(n_vocab / 64)
  int64_t work() const { return work_; }              // trie steps spent
  int32_t n_computed() const { return n_computed_; }  // states whose entry was computed (not shared)

 private:
  void compute(int32_t state, const Grammar& g, const TokenVocab& vocab, class EarleyParser& inside,
               EarleyParser& callers);
  void store_accepted(Entry& entry, int64_t n_accepted, int32_t n_vocab);

  size_t n_words_;
  std::vector<Entry> entries_;  // [n_states]
  std::vector<int32_t> accepted_;
  std::vector<int32_t> uncertain_;
  std::vector<uint64_t> bits_;
  int64_t work_ = 0;
  int32_t n_computed_ = 0;
  std::vector<uint64_t> scratch_bits_;  // [n_words] accepted tokens of the state being computed
  struct Depth {
    int32_t fast;  // the inside item's state while it follows a DFA path, else -1
    bool inside;   // the state's own rule still reads the bytes so far
    bool popped;   // the state's rule can end after this depth's byte
    bool callers;  // the callers' recognizer has (or, once run, gets) a set for this depth
    // Set when the callers' recognizer has run to this depth:
    bool live;       // its set here has items (the callers read the bytes so far)
    bool uncertain;  // a caller could end before this depth: beyond it is context-dependent
    uint8_t byte;    // the byte leading to this depth
  };
  std::vector<Depth> depth_;                         // [max piece bytes + 2]
  std::vector<std::vector<int32_t>> continuations_;  // [n_rules]: states after each reference
};

}  // namespace strata::grammar
