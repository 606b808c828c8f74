// The vocabulary as a grammar sees it: each token's bytes (token_to_piece: byte tokens as their
// byte, SentencePiece's "▁" as a space, byte-level BPE symbols mapped back to bytes) and a
// byte trie over them, stored in pre-order so that a depth-first walk is a linear scan and a
// subtree is an index range.
//
// Control tokens (empty pieces) never match text; end-of-generation tokens are kept apart:
// a constraint allows them exactly when its match is complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace strata::grammar {

class TokenVocab {
 public:
  struct Node {
    uint8_t byte;        // the byte leading into this node (root: 0)
    uint16_t depth;      // bytes from the root
    int32_t skip;        // first node after this node's subtree
    int32_t rank_begin;  // first rank in the subtree; tokens ending here come first
    int32_t n_here;      // tokens whose bytes end exactly here
  };

  // pieces[id]: the token's bytes ("" for tokens that never appear in text).
  TokenVocab(std::vector<std::string> pieces, std::vector<int32_t> eog);
  // n_total: the model's vocabulary size when its output has more rows than the tokenizer has
  // tokens (padded embeddings); the extra ids are never allowed.
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tok, int32_t n_total = 0);

  int32_t n_vocab() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view piece(int32_t id) const {
    return std::string_view(bytes_).substr(
        offsets_[static_cast<size_t>(id)],
        offsets_[static_cast<size_t>(id) + 1] - offsets_[static_cast<size_t>(id)]);
  }
  const std::vector<int32_t>& eog() const { return eog_; }
  bool is_eog(int32_t id) const { return id >= 0 && id < n_vocab() && is_eog_[static_cast<size_t>(id)]; }

  // Tokens in the trie sorted by bytes: rank -> id.
  const std::vector<int32_t>& ranked() const { return ranked_; }
  const std::vector<Node>& nodes() const { return nodes_; }  // nodes()[0] is the root
  // One past the last rank in the subtree of `node`.
  int32_t rank_end(int32_t node) const {
    const int32_t next = nodes_[static_cast<size_t>(node)].skip;
    return next < static_cast<int32_t>(nodes_.size()) ? nodes_[static_cast<size_t>(next)].rank_begin
                                                      : static_cast<int32_t>(ranked_.size());
  }
  // Longest piece in bytes.
  size_t max_piece_bytes() const { return max_piece_; }

 private:
  void build_trie();

  std::string bytes_;
  std::vector<uint32_t> offsets_;  // [n_vocab + 1]
  std::vector<int32_t> eog_;
  std::vector<uint8_t> is_eog_;
  std::vector<int32_t> ranked_;
  std::vector<Node> nodes_;
  size_t max_piece_ = 0;
};

}  // namespace strata::grammar
