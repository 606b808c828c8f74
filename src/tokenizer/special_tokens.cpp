#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "core/check.h"

namespace strata {
namespace {

bool is_c_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct Match {
  uint32_t priority;
  uint32_t entry;
  size_t pos;
};

}  // namespace

void SpecialTokenMatcher::add(const VocabToken& t, TokenId id) {
  tokens_.push_back({id, static_cast<uint32_t>(t.text.size()), 0, t.lstrip, t.rstrip});
  texts_.push_back(t.text);
}

// Builds a byte trie of the token texts (sorted children per node) and the priorities.
void SpecialTokenMatcher::finish() {
  std::vector<uint32_t> order(tokens_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (tokens_[a].length != tokens_[b].length) return tokens_[a].length > tokens_[b].length;
    return tokens_[a].id < tokens_[b].id;
  });
  for (uint32_t p = 0; p < order.size(); ++p) tokens_[order[p]].priority = p;

  // Insert into a map-based trie first, then flatten.
  std::vector<std::map<uint8_t, uint32_t>> kids(1);
  std::vector<int32_t> entry_of(1, -1);
  for (uint32_t e = 0; e < tokens_.size(); ++e) {
    uint32_t node = 0;
    for (char c : texts_[e]) {
      const auto b = static_cast<uint8_t>(c);
      auto it = kids[node].find(b);
      if (it == kids[node].end()) {
        it = kids[node].emplace(b, static_cast<uint32_t>(kids.size())).first;
        kids.emplace_back();
        entry_of.push_back(-1);
      }
      node = it->second;
    }
    // Duplicate texts: the one tried first (lower id) wins.
    if (entry_of[node] < 0 || tokens_[e].priority < tokens_[entry_of[node]].priority)
      entry_of[node] = static_cast<int32_t>(e);
    first_byte_[static_cast<uint8_t>(texts_[e][0])] = true;
  }
  nodes_.resize(kids.size());
  for (size_t n = 0; n < kids.size(); ++n) {
    nodes_[n].first_child = static_cast<uint32_t>(edges_.size());
    nodes_[n].n_children = static_cast<uint32_t>(kids[n].size());
    nodes_[n].entry = entry_of[n];
    for (const auto& [b, child] : kids[n]) edges_.push_back({b, child});
  }
}

int32_t SpecialTokenMatcher::child(uint32_t node, uint8_t byte) const {
  const Node& n = nodes_[node];
  const Edge* begin = edges_.data() + n.first_child;
  const Edge* end = begin + n.n_children;
  const Edge* it = std::lower_bound(begin, end, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
  return it != end && it->byte == byte ? static_cast<int32_t>(it->node) : -1;
}

std::vector<TextFragment> SpecialTokenMatcher::partition(std::string_view text) const {
  std::vector<TextFragment> out;
  if (text.empty()) return out;
  // 1. Every occurrence of every token, found by walking the trie from each candidate position.
  //    Work and matches are bounded so that a hostile vocabulary cannot make this quadratic.
  const size_t work_limit = 64 * text.size() + (size_t{1} << 20);
  const size_t match_limit = 2 * text.size() + (size_t{1} << 16);
  size_t work = 0;
  std::vector<Match> matches;
  for (size_t pos = 0; !tokens_.empty() && pos < text.size(); ++pos) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) continue;
    int32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      node = child(static_cast<uint32_t>(node), static_cast<uint8_t>(text[i]));
      if (node < 0) break;
      if (++work > work_limit) STRATA_THROW("tokenizer: special tokens too ambiguous to match in this text");
      if (const int32_t e = nodes_[node].entry; e >= 0) {
        if (matches.size() >= match_limit)
          STRATA_THROW("tokenizer: too many special token matches in this text");
        matches.push_back({tokens_[e].priority, static_cast<uint32_t>(e), pos});
      }
    }
  }
  if (matches.empty()) {
    out.push_back({0, text.size(), -1});
    return out;
  }
  // 2. Claim them in llama.cpp's order: by token priority, then left to right. Checking a span
  //    costs its length, which the walk above already paid for.
  std::sort(matches.begin(), matches.end(), [](const Match& a, const Match& b) {
    return a.priority != b.priority ? a.priority < b.priority : a.pos < b.pos;
  });
  std::vector<uint8_t> taken(text.size(), 0);  // [text bytes] claimed by a token or dropped
  std::vector<TextFragment> claims;            // tokens and dropped whitespace (token -2)
  for (const Match& m : matches) {
    const Entry& t = tokens_[m.entry];
    const size_t b = m.pos, e = m.pos + t.length;
    if (std::find(taken.begin() + b, taken.begin() + e, 1) != taken.begin() + e) continue;
    std::fill(taken.begin() + b, taken.begin() + e, 1);
    claims.push_back({b, e, t.id});
    if (t.rstrip) {
      size_t s = e;
      while (s < text.size() && !taken[s] && is_c_space(text[s])) taken[s++] = 1;
      if (s > e) claims.push_back({e, s, -2});
    }
    if (t.lstrip) {
      size_t s = b;
      while (s > 0 && !taken[s - 1] && is_c_space(text[s - 1])) taken[--s] = 1;
      if (s < b) claims.push_back({s, b, -2});
    }
  }
  // 3. Raw text between the claims.
  std::sort(claims.begin(), claims.end(),
            [](const TextFragment& a, const TextFragment& b) { return a.begin < b.begin; });
  size_t pos = 0;
  for (const TextFragment& c : claims) {
    if (c.begin > pos) out.push_back({pos, c.begin, -1});
    if (c.token >= 0) out.push_back(c);
    pos = c.end;
  }
  if (pos < text.size()) out.push_back({pos, text.size(), -1});
  return out;
}

}  // namespace strata
