#include "engine/spec/ngram_drafter.h"

#include <algorithm>

#include "core/check.h"

namespace strata {

uint64_t ngram_hash(const int32_t* tokens, int32_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int32_t i = 0; i < n; ++i) {
    h ^= static_cast<uint32_t>(tokens[i]);
    h *= 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return h;
}

NgramDrafter::NgramDrafter(int32_t n_min, int32_t n_max) : n_min_(n_min), n_max_(n_max) {
  STRATA_CHECK(n_min >= 1 && n_max >= n_min);
}

void NgramDrafter::extend(Index& ix, const std::vector<int32_t>& tokens) const {
  ix.last_end.resize(static_cast<size_t>(n_max_ - n_min_ + 1));
  // An n-gram ending at position e (tokens[e - n + 1 .. e]) is indexed once its successor
  // e + 1 exists; the newest occurrence overwrites older ones.
  const int64_t last = static_cast<int64_t>(tokens.size()) - 1;
  for (int64_t e = ix.n_indexed; e < last; ++e)
    for (int32_t n = n_min_; n <= n_max_; ++n)
      if (e + 1 >= n)
        ix.last_end[static_cast<size_t>(n - n_min_)][ngram_hash(tokens.data() + e - n + 1, n)] = e;
  ix.n_indexed = std::max(ix.n_indexed, last);
}

void NgramDrafter::draft(std::span<DraftSlot* const> slots) {
  for (DraftSlot* s : slots) {
    const std::vector<int32_t>& t = *s->tokens;
    Index& ix = index_[s->seq_id];
    if (ix.n_indexed > static_cast<int64_t>(t.size())) ix = Index{};  // the sequence was rewound
    extend(ix, t);
    const int64_t len = static_cast<int64_t>(t.size());
    for (int32_t n = std::min<int64_t>(n_max_, len); n >= n_min_ && s->draft.empty(); --n) {
      const auto& map = ix.last_end[static_cast<size_t>(n - n_min_)];
      const auto it = map.find(ngram_hash(t.data() + len - n, n));
      if (it == map.end()) continue;
      const int64_t e = it->second;
      // A hash match is checked against the tokens themselves.
      if (!std::equal(t.begin() + (e - n + 1), t.begin() + e + 1, t.begin() + (len - n))) continue;
      for (int64_t j = e + 1; j < len && static_cast<int32_t>(s->draft.size()) < s->max_draft; ++j)
        s->draft.push_back(t[static_cast<size_t>(j)]);
    }
  }
}

}  // namespace strata
