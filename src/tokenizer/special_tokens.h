// Finds special-token texts (e.g. "<|im_start|>") in raw text before the model tokenizes it.
//
// Semantics follow llama.cpp: tokens are tried longest first (ties: lower id first); each one
// claims all its non-overlapping occurrences, leftmost first, in the text not yet claimed by a
// longer token. A token with rstrip/lstrip also drops the whitespace that follows/precedes it.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace strata {

// A piece of the input: either a matched special token or raw text [begin, end).
struct TextFragment {
  size_t begin = 0;
  size_t end = 0;
  TokenId token = -1;  // -1: raw text
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher() = default;
  // Matches the tokens of `vocab` whose kind `include(kind)` accepts (empty texts never match).
  template <typename Pred>
  SpecialTokenMatcher(const std::vector<VocabToken>& vocab, Pred include) {
    for (size_t i = 0; i < vocab.size(); ++i)
      if (!vocab[i].text.empty() && include(vocab[i].kind)) add(vocab[i], static_cast<TokenId>(i));
    finish();
  }

  bool empty() const { return tokens_.empty(); }
  // Splits `text` into raw text and special tokens, in order. Raw fragments are never empty.
  // Throws strata::Error when the tokens are so ambiguous on this text that matching would take
  // unbounded work (only possible with a hostile vocabulary).
  std::vector<TextFragment> partition(std::string_view text) const;

 private:
  struct Entry {
    TokenId id;
    uint32_t length;
    uint32_t priority;  // 0 = tried first
    bool lstrip, rstrip;
  };
  struct Node {
    uint32_t first_child = 0, n_children = 0;  // into edges_
    int32_t entry = -1;                        // token ending here
  };
  struct Edge {
    uint8_t byte;
    uint32_t node;
  };

  void add(const VocabToken& t, TokenId id);
  void finish();
  int32_t child(uint32_t node, uint8_t byte) const;

  std::vector<Entry> tokens_;
  std::vector<std::string_view> texts_;  // [tokens_] views into the vocabulary
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  bool first_byte_[256] = {};
};

}  // namespace strata
