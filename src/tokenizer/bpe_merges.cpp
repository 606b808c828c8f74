#include "tokenizer/bpe_merges.h"

#include <algorithm>

namespace strata {
namespace {

// std::push_heap keeps the "largest" on top: the lowest rank, then the leftmost, is largest.
bool lower_priority(const BpeScratch::Candidate& a, const BpeScratch::Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
}

void push_candidate(const MergeTable& table, BpeScratch& s, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return;
  const int32_t lid = s.nodes[left].id, rid = s.nodes[right].id;
  if (lid < 0 || rid < 0) return;
  const MergeTable::Rule* rule = table.find(lid, rid);
  if (!rule) return;
  s.heap.push_back({rule->rank, left, lid, rid, rule->result});
  std::push_heap(s.heap.begin(), s.heap.end(), lower_priority);
}

}  // namespace

void MergeTable::add(int32_t left, int32_t right, int32_t rank, int32_t result) {
  rules_.insert(key(left, right), Rule{rank, result});
}

const MergeTable::Rule* MergeTable::find(int32_t left, int32_t right) const {
  return rules_.find(key(left, right));
}

void bpe_merge(const MergeTable& table, std::vector<BpeSymbol>& word, BpeScratch& s) {
  if (word.size() < 2) return;
  const auto n = static_cast<int32_t>(word.size());
  s.nodes.resize(word.size());
  for (int32_t i = 0; i < n; ++i) s.nodes[i] = {word[i].id, i - 1, i + 1 < n ? i + 1 : -1, word[i].length};
  s.heap.clear();
  for (int32_t i = 0; i + 1 < n; ++i) push_candidate(table, s, i, i + 1);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), lower_priority);
    const BpeScratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    BpeScratch::Node& left = s.nodes[c.left];
    // Stale when either side changed since the pair was queued (a merged symbol gets a new id).
    if (left.length == 0 || left.id != c.left_id || left.next < 0) continue;
    BpeScratch::Node& right = s.nodes[left.next];
    if (right.id != c.right_id) continue;
    left.id = c.result;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) s.nodes[right.next].prev = c.left;
    push_candidate(table, s, left.prev, c.left);
    push_candidate(table, s, c.left, left.next);
  }
  word.clear();
  for (int32_t i = 0; i >= 0; i = s.nodes[i].next) word.push_back({s.nodes[i].id, s.nodes[i].length});
}

}  // namespace strata
