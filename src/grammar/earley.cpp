#include "grammar/earley.h"

#include <algorithm>
#include <functional>
#include <map>

#include "core/check.h"
#include "grammar/limits.h"

namespace strata::grammar {

EarleyParser::EarleyParser(const Grammar& g) : g_(g) {
  reset();
}

void EarleyParser::reset() {
  root_mode_ = true;
  items_.clear();
  waits_.clear();
  sets_.clear();
  sets_.push_back({0, 0, 0});
  begin_set();
  add(g_.rule_start(g_.root()), 0);
  close_set();
}

void EarleyParser::reset_to_state(int32_t state) {
  root_mode_ = false;
  items_.clear();
  waits_.clear();
  sets_.clear();
  sets_.push_back({0, 0, 0});
  items_.push_back({state, 0});
  if (!g_.byte_edges(state).empty()) sets_.back().flags |= kScannable;
}

void EarleyParser::reset_empty() {
  root_mode_ = false;
  items_.clear();
  waits_.clear();
  sets_.clear();
  sets_.push_back({0, 0, 0});
}

// Opens a new set holding the items of the last one that read `byte` (not yet closed).
void EarleyParser::scan(uint8_t byte) {
  const Set cur = sets_.back();
  const auto end = static_cast<uint32_t>(items_.size());
  sets_.push_back({end, static_cast<uint32_t>(waits_.size()), 0});
  begin_set();
  overflow_ = false;
  for (uint32_t k = cur.items_begin; k < end; ++k) {
    const Item it = items_[k];
    for (const ByteEdge& e : g_.byte_edges(it.state)) {
      if (e.lo > byte) break;  // sorted by lo
      if (byte <= e.hi) add(e.target, it.origin);
    }
  }
}

bool EarleyParser::push_inject(uint8_t byte, std::span<const int32_t> inject) {
  const auto end = static_cast<uint32_t>(items_.size());
  scan(byte);
  for (int32_t s : inject) add(s, 0);
  if (items_.size() != end) close_set();
  if (overflow_) {
    // Too many items to follow: an empty set flagged as if a caller could end here, which
    // makes the token mask cache treat everything beyond as context-dependent.
    items_.resize(end);
    waits_.resize(sets_.back().waits_begin);
    sets_.back().flags = kOrigin0Final;
    return true;
  }
  return items_.size() != end;
}

void EarleyParser::begin_set() {
  hashing_ = false;
  if (++stamp_ == 0) {  // wrapped: clear stale stamps
    std::fill(hash_stamps_.begin(), hash_stamps_.end(), 0);
    stamp_ = 1;
  }
}

namespace {
uint64_t item_key(int32_t state, int32_t origin) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | static_cast<uint32_t>(origin);
}
}  // namespace

bool EarleyParser::hashed_contains_or_insert(uint64_t key) {
  const size_t mask = hash_keys_.size() - 1;
  size_t h = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (hash_stamps_[h] == stamp_) {
    if (hash_keys_[h] == key) return true;
    h = (h + 1) & mask;
  }
  hash_stamps_[h] = stamp_;
  hash_keys_[h] = key;
  return false;
}

// Adds (state, origin) to the set being built unless it is there; false on overflow.
bool EarleyParser::add(int32_t state, int32_t origin) {
  const uint32_t begin = sets_.back().items_begin;
  const auto size = static_cast<uint32_t>(items_.size()) - begin;
  const uint64_t key = item_key(state, origin);
  if (!hashing_) {
    for (uint32_t k = begin; k < items_.size(); ++k)
      if (items_[k].state == state && items_[k].origin == origin) return true;
    if (size >= kLinearScan) {
      // Switch to hashing; keep the table at most half full.
      size_t cap = 64;
      while (cap < 4 * static_cast<size_t>(size)) cap *= 2;
      if (hash_keys_.size() < cap) {
        hash_keys_.assign(cap, 0);
        hash_stamps_.assign(cap, 0);
        stamp_ = 1;
      }
      hashing_ = true;
      for (uint32_t k = begin; k < items_.size(); ++k)
        hashed_contains_or_insert(item_key(items_[k].state, items_[k].origin));
    }
  }
  if (hashing_) {
    if (2 * (static_cast<size_t>(size) + 1) > hash_keys_.size()) {
      // Grow and re-insert the set's items under a fresh stamp.
      hash_keys_.assign(hash_keys_.size() * 2, 0);
      hash_stamps_.assign(hash_keys_.size(), 0);
      stamp_ = 1;
      for (uint32_t k = begin; k < items_.size(); ++k)
        hashed_contains_or_insert(item_key(items_[k].state, items_[k].origin));
    }
    if (hashed_contains_or_insert(key)) return true;
  }
  if (size >= kMaxItemsPerSet || items_.size() >= kMaxItemsTotal) {
    overflow_ = true;
    return false;
  }
  items_.push_back({state, origin});
  return true;
}

void EarleyParser::close_set() {
  const auto m = static_cast<int32_t>(sets_.size() - 1);
  uint8_t flags = 0;
  for (size_t k = sets_.back().items_begin; k < items_.size() && !overflow_; ++k) {
    const Item it = items_[k];
    const State& st = g_.state(it.state);
    if (st.bytes_begin != st.bytes_end) flags |= kScannable;
    for (const RefEdge& ref : g_.ref_edges(it.state)) {
      waits_.push_back({ref.rule, ref.target, it.origin});
      add(g_.rule_start(ref.rule), m);
      if (g_.nullable(ref.rule)) add(ref.target, it.origin);
    }
    if (!st.final) continue;
    if (it.origin == 0) {
      flags |= kOrigin0Final;
      if (root_mode_ && st.rule == g_.root()) flags |= kRootComplete;
    }
    // An empty match (origin == m) was already stepped over at the prediction.
    if (it.origin == m) continue;
    const Set& from = sets_[static_cast<size_t>(it.origin)];
    const uint32_t wait_end = sets_[static_cast<size_t>(it.origin) + 1].waits_begin;
    for (uint32_t w = from.waits_begin; w < wait_end; ++w) {
      const Wait wt = waits_[w];
      if (wt.rule == st.rule) add(wt.target, wt.origin);
    }
  }
  sets_.back().flags = flags;
}

// A set of one item moving along one byte edge into a state that predicts nothing and
// completes nothing: the common case inside a rule, done without the general machinery.
bool EarleyParser::push_single(uint8_t byte, bool& done) {
  const Set cur = sets_.back();
  const auto end = static_cast<uint32_t>(items_.size());
  done = false;
  if (end - cur.items_begin != 1) return false;
  const Item it = items_[cur.items_begin];
  int32_t target = -1;
  for (const ByteEdge& e : g_.byte_edges(it.state)) {
    if (e.lo > byte) break;
    if (byte <= e.hi) {
      if (target >= 0) return false;  // several edges match (an NFA state)
      target = e.target;
    }
  }
  done = true;
  if (target < 0) return false;
  const State& st = g_.state(target);
  if (st.refs_begin != st.refs_end) return done = false;
  uint8_t flags = st.bytes_begin != st.bytes_end ? kScannable : 0;
  if (st.final) {
    const auto o = static_cast<size_t>(it.origin);
    const uint32_t wait_end =
        o + 1 < sets_.size() ? sets_[o + 1].waits_begin : static_cast<uint32_t>(waits_.size());
    for (uint32_t w = sets_[o].waits_begin; w < wait_end; ++w)
      if (waits_[w].rule == st.rule) return done = false;  // a completion: the general path
    if (it.origin == 0) {
      flags |= kOrigin0Final;
      if (root_mode_ && st.rule == g_.root()) flags |= kRootComplete;
    }
  }
  if (items_.size() >= kMaxItemsTotal) return false;  // done: failed
  sets_.push_back({end, static_cast<uint32_t>(waits_.size()), flags});
  items_.push_back({target, it.origin});
  return true;
}

bool EarleyParser::push(uint8_t byte) {
  bool done;
  const bool ok = push_single(byte, done);
  if (done) return ok;
  const auto end = static_cast<uint32_t>(items_.size());
  const auto wait_end = static_cast<uint32_t>(waits_.size());
  scan(byte);
  if (items_.size() != end) close_set();
  if (items_.size() == end || overflow_) {
    items_.resize(end);
    waits_.resize(wait_end);
    sets_.pop_back();
    return false;
  }
  return true;
}

int32_t EarleyParser::bytes_to_complete(const std::vector<int32_t>& to_rule_end) const {
  constexpr int32_t kInf = INT32_MAX / 4;
  // after[(set, rule)]: fewest bytes to finish everything once `rule`, started at `set`,
  // completes: the root needs nothing more; another rule continues its callers that waited
  // for it in that set.
  std::map<std::pair<int32_t, int32_t>, int32_t> memo;
  std::function<int32_t(int32_t, int32_t, int)> after = [&](int32_t set, int32_t rule, int depth) -> int32_t {
    if (set == 0 && rule == g_.root()) return 0;
    if (depth > 4096) return kInf;
    const auto key = std::make_pair(set, rule);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    memo[key] = kInf;  // cycles (nullable rules) add nothing
    int32_t best = kInf;
    const uint32_t end = static_cast<size_t>(set) + 1 < sets_.size()
                             ? sets_[static_cast<size_t>(set) + 1].waits_begin
                             : static_cast<uint32_t>(waits_.size());
    for (uint32_t w = sets_[static_cast<size_t>(set)].waits_begin; w < end; ++w) {
      const Wait& wt = waits_[w];
      if (wt.rule != rule) continue;
      const int32_t rest = to_rule_end[static_cast<size_t>(wt.target)];
      if (rest >= kInf) continue;
      best = std::min(best, rest + after(wt.origin, g_.state(wt.target).rule, depth + 1));
    }
    return memo[key] = best;
  };
  int32_t best = kInf;
  for (size_t k = sets_.back().items_begin; k < items_.size(); ++k) {
    const Item& it = items_[k];
    const int32_t own = to_rule_end[static_cast<size_t>(it.state)];
    if (own < kInf) best = std::min(best, own + after(it.origin, g_.state(it.state).rule, 0));
  }
  return best;
}

void EarleyParser::scannable_states(std::vector<int32_t>& out) const {
  out.clear();
  for (size_t k = sets_.back().items_begin; k < items_.size(); ++k) {
    const int32_t s = items_[k].state;
    if (!g_.byte_edges(s).empty()) out.push_back(s);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace strata::grammar
