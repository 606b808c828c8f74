#include "engine/spec/suffix_tree.h"

#include <algorithm>

#include "core/check.h"

namespace strata {
namespace {

uint64_t edge_key(int32_t node, int32_t token) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(node)) << 32) | static_cast<uint32_t>(token);
}

}  // namespace

SuffixTree::SuffixTree(int32_t depth) : depth_(depth) {
  STRATA_CHECK(depth >= 2);
  clear();
}

void SuffixTree::clear() {
  nodes_.assign(1, Node{});
  edges_.clear();
}

int32_t SuffixTree::child(int32_t node, int32_t token) const {
  const auto it = edges_.find(edge_key(node, token));
  return it == edges_.end() ? -1 : it->second;
}

int32_t SuffixTree::add_child(int32_t node, int32_t token) {
  int32_t c = child(node, token);
  if (c < 0) {
    c = static_cast<int32_t>(nodes_.size());
    nodes_.push_back(Node{token, 0, -1});
    edges_.emplace(edge_key(node, token), c);
  }
  return c;
}

void SuffixTree::add(const std::vector<int32_t>& tokens, size_t from) {
  // The window [start, end] for every end >= from and every start within depth: walking from
  // each start adds one count to the path of each window that ends at or after `from`.
  const size_t n = tokens.size();
  if (from >= n) return;
  const size_t first_start =
      from + 1 >= static_cast<size_t>(depth_) ? from + 1 - static_cast<size_t>(depth_) : 0;
  for (size_t start = first_start; start < n; ++start) {
    int32_t node = 0;
    const size_t stop = std::min(n, start + static_cast<size_t>(depth_));
    for (size_t i = start; i < stop; ++i) {
      const int32_t c = add_child(node, tokens[i]);
      if (i >= from) {
        ++nodes_[static_cast<size_t>(c)].count;
        Node& parent = nodes_[static_cast<size_t>(node)];
        if (parent.best_child < 0 ||
            nodes_[static_cast<size_t>(parent.best_child)].count < nodes_[static_cast<size_t>(c)].count)
          parent.best_child = c;
      }
      node = c;
    }
  }
}

int32_t SuffixTree::follow(const std::vector<int32_t>& context, int32_t max_tokens,
                           std::vector<int32_t>& out) const {
  const int32_t n = static_cast<int32_t>(context.size());
  for (int32_t len = std::min(n, depth_ - 1); len >= 1; --len) {
    int32_t node = 0;
    for (int32_t i = n - len; i < n && node >= 0; ++i) node = child(node, context[static_cast<size_t>(i)]);
    if (node < 0 || nodes_[static_cast<size_t>(node)].best_child < 0) continue;
    for (int32_t d = len; d < depth_ && static_cast<int32_t>(out.size()) < max_tokens; ++d) {
      node = nodes_[static_cast<size_t>(node)].best_child;
      if (node < 0) break;
      out.push_back(nodes_[static_cast<size_t>(node)].token);
    }
    return len;
  }
  return 0;
}

int32_t SuffixTree::propose(const std::vector<int32_t>& context, int32_t max_tokens,
                            std::vector<int32_t>& out) const {
  // A walk ends at the trie's depth; the drafted tokens then extend the context for the next.
  const size_t first = out.size();
  const int32_t matched = follow(context, max_tokens, out);
  while (matched > 0 && static_cast<int32_t>(out.size()) < max_tokens) {
    std::vector<int32_t> extended = context;
    extended.insert(extended.end(), out.begin() + static_cast<std::ptrdiff_t>(first), out.end());
    const size_t before = out.size();
    if (follow(extended, max_tokens, out) == 0 || out.size() == before) break;
  }
  return matched;
}

}  // namespace strata
