// A byte-at-a-time Earley recognizer over a compiled grammar.
//
// An item is (automaton state, origin): the rule of the state was entered at byte `origin`.
// Set k holds the items after k bytes. Reading a byte moves the items whose state has a
// matching byte edge; then the new set is closed: a reference edge predicts the called rule
// (and steps over it at once when the rule can match nothing, Aycock & Horspool), a final
// state completes its rule and advances the items that waited for it in the origin's set.
// Earlier sets stay (completion looks back into them), so undoing bytes is a truncation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar.h"

namespace strata::grammar {

class EarleyParser {
 public:
  // Starts at the root rule: set 0 is the root's start and everything it predicts.
  explicit EarleyParser(const Grammar& g);

  // Set 0 becomes the single item (state, 0), with nothing predicted from it: tokens read
  // from here see the state's own rule only (completing it at origin 0 is a "pop" the
  // token mask cache treats as context-dependent). reset() returns to the root.
  void reset_to_state(int32_t state);
  void reset();
  // Set 0 is empty (for push_inject).
  void reset_empty();

  // Reads one byte into a new set; false (and no new set) when no item can read it or the
  // set would exceed the limits.
  bool push(uint8_t byte);
  // Reads one byte into a new set, then adds the items (s, 0) for s in `inject` (they have
  // not read the byte) and closes the set. The set is kept even when empty; returns whether
  // it has items.
  bool push_inject(uint8_t byte, std::span<const int32_t> inject);
  // Keeps the first n sets (1 <= n <= n_sets()).
  void truncate(size_t n) {
    if (n >= sets_.size()) return;
    items_.resize(sets_[n].items_begin);
    waits_.resize(sets_[n].waits_begin);
    sets_.resize(n);
  }
  size_t n_sets() const { return sets_.size(); }

  // The last set, after the root rule matched all bytes read.
  bool root_complete() const { return sets_.back().flags & kRootComplete; }
  // The last set has an item that can read a byte.
  bool can_scan() const { return sets_.back().flags & kScannable; }
  // The last set has an item of origin 0 at a final state (the start item's rule can end).
  bool origin0_final() const { return sets_.back().flags & kOrigin0Final; }
  // Set k has an item of origin 0 at a final state.
  bool origin0_final_at(size_t k) const { return sets_[k].flags & kOrigin0Final; }
  // The fewest bytes that complete the root from the last set (root mode), given
  // bytes_to_rule_end(grammar); INT32_MAX / 4 when it cannot complete.
  int32_t bytes_to_complete(const std::vector<int32_t>& to_rule_end) const;
  // Distinct states of the last set's items that have byte edges, ascending.
  void scannable_states(std::vector<int32_t>& out) const;

 private:
  struct Item {
    int32_t state, origin;
  };
  struct Wait {
    int32_t rule, target, origin;
  };
  struct Set {
    uint32_t items_begin, waits_begin;
    uint8_t flags;
  };
  static constexpr uint8_t kRootComplete = 1, kScannable = 2, kOrigin0Final = 4;
  static constexpr uint32_t kLinearScan = 12;  // sets up to this size dedupe by scanning

  bool push_single(uint8_t byte, bool& done);
  void scan(uint8_t byte);
  void begin_set();
  bool add(int32_t state, int32_t origin);
  void close_set();
  bool hashed_contains_or_insert(uint64_t key);

  const Grammar& g_;
  bool root_mode_ = true;
  bool overflow_ = false;
  std::vector<Item> items_;
  std::vector<Wait> waits_;
  std::vector<Set> sets_;
  // Deduplication of the set being built: open addressing keyed by (state, origin), slots
  // valid when their stamp is the current one.
  std::vector<uint64_t> hash_keys_;
  std::vector<uint32_t> hash_stamps_;
  uint32_t stamp_ = 0;
  bool hashing_ = false;
};

}  // namespace strata::grammar
