// Rank-based BPE merging over a sequence of symbol ids: the adjacent pair with the lowest merge
// rank is merged first (ties: the leftmost), until no adjacent pair has a merge. This is the
// algorithm of GPT-2, Hugging Face's BPE model and llama.cpp's BPE tokenizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tokenizer/flat_hash.h"

namespace strata {

// One symbol of a word: its id (-1: matches no merge) and the number of input units it covers.
struct BpeSymbol {
  int32_t id = -1;
  uint32_t length = 0;
};

class MergeTable {
 public:
  struct Rule {
    int32_t rank;
    int32_t result;
  };
  // Keeps the first (lowest-rank) rule of a pair.
  void add(int32_t left, int32_t right, int32_t rank, int32_t result);
  const Rule* find(int32_t left, int32_t right) const;
  size_t size() const { return rules_.size(); }
  void reserve(size_t n) { rules_.reserve(n); }

 private:
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  FlatU64Map<Rule> rules_;
};

// Reusable buffers, so that tokenizing many words does not allocate for each.
struct BpeScratch {
  struct Node {
    int32_t id;
    int32_t prev, next;
    uint32_t length;  // 0: merged into its left neighbour
  };
  struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t left_id, right_id;
    int32_t result;
  };
  std::vector<Node> nodes;
  std::vector<Candidate> heap;
};

// Merges `word` in place: on return it holds the merged symbols, in order.
void bpe_merge(const MergeTable& table, std::vector<BpeSymbol>& word, BpeScratch& scratch);

}  // namespace strata
