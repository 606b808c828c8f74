// A suffix trie of bounded depth over token sequences, with occurrence counts: every window of
// up to `depth` consecutive tokens is a path from the root, and each node counts how often its
// path occurred. Drafting follows the longest suffix of the context that is in the trie, then
// the most frequent continuation (SuffixDecoding, Oliaro et al. 2024).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace strata {

class SuffixTree {
 public:
  explicit SuffixTree(int32_t depth = 24);

  // Adds the windows of tokens that end at positions [from, tokens.size()): call with the
  // previous size as `from` to extend a growing sequence incrementally.
  void add(const std::vector<int32_t>& tokens, size_t from = 0);
  // The longest suffix of context (at most depth - 1 tokens) that is a path here: its length,
  // and up to max_tokens of the most frequent continuation in out (appended).
  int32_t propose(const std::vector<int32_t>& context, int32_t max_tokens, std::vector<int32_t>& out) const;

  size_t n_nodes() const { return nodes_.size(); }
  void clear();

 private:
  struct Node {
    int32_t token = -1;  // on the edge from the parent
    int32_t count = 0;
    int32_t best_child = -1;  // the child with the highest count
  };
  // One walk: the longest matching suffix of context and its continuation within the depth.
  int32_t follow(const std::vector<int32_t>& context, int32_t max_tokens, std::vector<int32_t>& out) const;
  int32_t child(int32_t node, int32_t token) const;
  int32_t add_child(int32_t node, int32_t token);

  int32_t depth_;
  std::vector<Node> nodes_;                      // [0] is the root
  std::unordered_map<uint64_t, int32_t> edges_;  // (node << 32 | token) -> child
};

}  // namespace strata
