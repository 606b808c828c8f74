#include "grammar/grammar_matcher.h"

#include <algorithm>

#include "core/check.h"

namespace strata::grammar {

CompiledConstraint::CompiledConstraint(Grammar grammar, std::shared_ptr<const TokenVocab> vocab)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), masks_(grammar_, *vocab_) {}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledConstraint> compiled)
    : c_(std::move(compiled)), parser_(c_->grammar()), words_(c_->masks().n_words()) {}

bool GrammarMatcher::is_complete() const {
  return ended_ || parser_.root_complete();
}

bool GrammarMatcher::can_continue() const {
  return !ended_ && parser_.can_scan();
}

bool GrammarMatcher::push_bytes(std::string_view bytes) {
  const size_t mark = parser_.n_sets();
  for (char b : bytes) {
    if (!parser_.push(static_cast<uint8_t>(b))) {
      parser_.truncate(mark);
      return false;
    }
  }
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  return !ended_ && push_bytes(bytes);
}

bool GrammarMatcher::accept(int32_t token) {
  const TokenVocab& v = c_->vocab();
  if (ended_ || token < 0 || token >= v.n_vocab()) return false;
  const auto mark = static_cast<uint32_t>(parser_.n_sets());
  if (v.is_eog(token)) {
    if (!parser_.root_complete()) return false;
    ended_ = true;
    history_.push_back({mark, true});
    return true;
  }
  const std::string_view piece = v.piece(token);
  if (piece.empty() || !push_bytes(piece)) return false;
  history_.push_back({mark, false});
  return true;
}

void GrammarMatcher::rollback(int32_t n) {
  STRATA_CHECK(n >= 0 && static_cast<size_t>(n) <= history_.size(), "rollback past the first token");
  if (n == 0) return;
  const Step first_undone = history_[history_.size() - static_cast<size_t>(n)];
  history_.resize(history_.size() - static_cast<size_t>(n));
  parser_.truncate(first_undone.n_sets);
  ended_ = !history_.empty() && history_.back().eog;
}

bool GrammarMatcher::token_allowed(int32_t token) {
  const TokenVocab& v = c_->vocab();
  if (ended_ || token < 0 || token >= v.n_vocab()) return false;
  if (v.is_eog(token)) return parser_.root_complete();
  const std::string_view piece = v.piece(token);
  if (piece.empty()) return false;
  const size_t mark = parser_.n_sets();
  const bool ok = push_bytes(piece);
  parser_.truncate(mark);
  return ok;
}

// The union of the cached accepted sets of the states that can read a byte now.
void GrammarMatcher::build_bitset() {
  const TokenMaskCache& masks = c_->masks();
  std::fill(words_.begin(), words_.end(), 0);
  parser_.scannable_states(states_);
  uncertain_.clear();
  for (int32_t s : states_) {
    const TokenMaskCache::Entry& e = masks.entry(s);
    if (e.bitset >= 0) {
      const uint64_t* b = masks.bitset(e);
      for (size_t w = 0; w < words_.size(); ++w) words_[w] |= b[w];
    } else {
      for (int32_t id : masks.accepted(e)) words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    const std::span<const int32_t> unc = masks.uncertain(e);
    uncertain_.insert(uncertain_.end(), unc.begin(), unc.end());
  }
  if (states_.size() > 1) {
    std::sort(uncertain_.begin(), uncertain_.end());
    uncertain_.erase(std::unique(uncertain_.begin(), uncertain_.end()), uncertain_.end());
  }
}

// Context-dependent tokens, read against the real recognizer in trie order: a token shares
// the bytes it has in common with the previous one, so only its new suffix is pushed.
void GrammarMatcher::check_uncertain() {
  const TokenVocab& v = c_->vocab();
  const size_t base = parser_.n_sets();
  std::string_view pushed;  // bytes currently read beyond `base`
  for (int32_t rank : uncertain_) {
    const int32_t id = v.ranked()[static_cast<size_t>(rank)];
    if (words_[static_cast<size_t>(id) >> 6] >> (id & 63) & 1) continue;
    const std::string_view p = v.piece(id);
    size_t common = 0;
    while (common < pushed.size() && common < p.size() && pushed[common] == p[common]) ++common;
    parser_.truncate(base + common);
    size_t depth = common;
    while (depth < p.size() && parser_.push(static_cast<uint8_t>(p[depth]))) ++depth;
    pushed = p.substr(0, depth);
    if (depth == p.size()) words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  }
  parser_.truncate(base);
}

void GrammarMatcher::mask(uint8_t* allowed) {
  const TokenVocab& v = c_->vocab();
  const int32_t n = v.n_vocab();
  if (ended_) {
    std::fill(allowed, allowed + n, 0);
    return;
  }
  build_bitset();
  check_uncertain();
  stats_ = {static_cast<int32_t>(states_.size()), static_cast<int32_t>(uncertain_.size())};
  if (parser_.root_complete())
    for (int32_t id : v.eog()) words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  for (int32_t w = 0; w * 64 < n; ++w) {
    const uint64_t bits = words_[static_cast<size_t>(w)];
    if (bits == ~uint64_t{0}) continue;
    uint8_t* a = allowed + w * 64;
    const int32_t len = std::min(64, n - w * 64);
    for (int32_t b = 0; b < len; ++b) a[b] &= static_cast<uint8_t>((bits >> b) & 1);
  }
}

}  // namespace strata::grammar
