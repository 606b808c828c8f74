#include "grammar/token_vocab.h"

#include <algorithm>

#include "core/check.h"

namespace strata::grammar {

TokenVocab::TokenVocab(std::vector<std::string> pieces, std::vector<int32_t> eog) : eog_(std::move(eog)) {
  offsets_.reserve(pieces.size() + 1);
  offsets_.push_back(0);
  for (const std::string& p : pieces) {
    bytes_ += p;
    offsets_.push_back(static_cast<uint32_t>(bytes_.size()));
    max_piece_ = std::max(max_piece_, p.size());
  }
  is_eog_.assign(pieces.size(), 0);
  std::sort(eog_.begin(), eog_.end());
  eog_.erase(std::unique(eog_.begin(), eog_.end()), eog_.end());
  for (int32_t id : eog_) {
    STRATA_CHECK(id >= 0 && id < n_vocab());
    is_eog_[static_cast<size_t>(id)] = 1;
  }
  build_trie();
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tok, int32_t n_total) {
  std::vector<std::string> pieces(static_cast<size_t>(std::max(tok.n_vocab(), n_total)));
  for (int32_t id = 0; id < tok.n_vocab(); ++id) pieces[static_cast<size_t>(id)] = tok.token_to_piece(id);
  return std::make_shared<TokenVocab>(std::move(pieces), tok.eog_tokens());
}

void TokenVocab::build_trie() {
  for (int32_t id = 0; id < n_vocab(); ++id)
    if (!piece(id).empty() && !is_eog_[static_cast<size_t>(id)]) ranked_.push_back(id);
  std::sort(ranked_.begin(), ranked_.end(), [&](int32_t a, int32_t b) {
    const std::string_view pa = piece(a), pb = piece(b);
    return pa != pb ? pa < pb : a < b;
  });
  nodes_.push_back({0, 0, 0, 0, 0});
  std::vector<int32_t> path{0};  // path[d]: node at depth d on the current branch
  std::string_view prev;
  for (size_t rank = 0; rank < ranked_.size(); ++rank) {
    const std::string_view p = piece(ranked_[rank]);
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    // Close the nodes deeper than the common prefix: their subtrees end here.
    while (path.size() > common + 1) {
      nodes_[static_cast<size_t>(path.back())].skip = static_cast<int32_t>(nodes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < p.size(); ++d) {
      path.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back(
          {static_cast<uint8_t>(p[d]), static_cast<uint16_t>(d + 1), 0, static_cast<int32_t>(rank), 0});
    }
    ++nodes_[static_cast<size_t>(path.back())].n_here;
    prev = p;
  }
  while (!path.empty()) {
    nodes_[static_cast<size_t>(path.back())].skip = static_cast<int32_t>(nodes_.size());
    path.pop_back();
  }
}

}  // namespace strata::grammar
