#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/check.h"
#include "tokenizer/unicode.h"

namespace strata {
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

// A character (1-4 bytes) as a number; distinct characters get distinct numbers.
uint64_t pack(std::string_view ch) {
  uint32_t v = 0;
  std::memcpy(&v, ch.data(), std::min<size_t>(ch.size(), 4));
  return v;
}

size_t char_length(std::string_view s, size_t pos) {
  return std::min(unicode::utf8_sequence_length(static_cast<uint8_t>(s[pos])), s.size() - pos);
}

}  // namespace

SpmTokenizer::SpmTokenizer(VocabData vocab) : VocabTokenizer(std::move(vocab)) {
  const VocabData& v = this->vocab();
  for (const VocabToken& t : v.tokens) max_token_bytes_ = std::max(max_token_bytes_, t.text.size());
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    TokenId id = find_token(name);
    byte_fallback_[b] = id;
    if (id < 0) id = find_token(std::string(1, static_cast<char>(b)));
    byte_tokens_[b] = id >= 0 ? id : v.unk;
  }
  for (const VocabToken& t : v.tokens) {
    const std::string_view text = t.text;
    for (size_t pos = 0, len = 0; pos < text.size(); pos += len) {
      len = char_length(text, pos);
      if (pos + len < text.size()) {
        const std::string_view next = text.substr(pos + len, char_length(text, pos + len));
        inner_pairs_.insert(pack(text.substr(pos, len)) | (pack(next) << 32), 1);
      }
    }
  }
  use_merges_ = !v.merges.empty();
  merges_.reserve(v.merges.size());
  for (size_t rank = 0; rank < v.merges.size(); ++rank) {
    const std::string& m = v.merges[rank];
    const size_t sp = m.find(' ', 1);
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    const TokenId a = find_token(left), b = find_token(right);
    const TokenId joined = find_token(std::string(left) + std::string(right));
    if (a < 0 || b < 0 || joined < 0)
      STRATA_THROW("tokenizer: merge ", rank, " ('", m, "') refers to text that is not in the vocabulary");
    merges_.add(a, b, static_cast<int32_t>(rank), joined);
  }
}

void SpmTokenizer::encode_fragment(std::string_view raw, bool after_special,
                                   std::vector<TokenId>& out) const {
  std::string text;
  text.reserve(raw.size() + raw.size() / 4 + 3);
  if (after_special && adds_space_prefix()) text += kSpaceMark;
  for (char c : raw) {
    if (c == ' ')
      text += kSpaceMark;
    else
      text += c;
  }
  if (use_merges_)
    encode_by_rank(text, out);
  else
    encode_by_score(text, out);
}

void SpmTokenizer::append_bytes(std::string_view bytes, std::vector<TokenId>& out) const {
  for (char c : bytes) {
    const TokenId id = byte_tokens_[static_cast<uint8_t>(c)];
    if (id >= 0) out.push_back(id);
  }
}

bool SpmTokenizer::may_join(std::string_view a, std::string_view b) const {
  return inner_pairs_.find(pack(a) | (pack(b) << 32)) != nullptr;
}

void SpmTokenizer::encode_by_score(const std::string& text, std::vector<TokenId>& out) const {
  const std::string_view all(text);
  ScoreScratch scratch;
  size_t begin = 0;
  for (size_t pos = 0, len = 0; pos < all.size(); pos += len) {
    len = char_length(all, pos);
    const size_t next = pos + len;
    if (next < all.size() && !may_join(all.substr(pos, len), all.substr(next, char_length(all, next)))) {
      encode_segment_by_score(all.substr(begin, next - begin), scratch, out);
      begin = next;
    }
  }
  if (begin < all.size()) encode_segment_by_score(all.substr(begin), scratch, out);
}

// llama.cpp's SPM: symbols start as UTF-8 characters (a malformed lead byte still announces its
// length) and the best-scoring adjacent pair that forms a token is joined until none is left.
void SpmTokenizer::encode_segment_by_score(std::string_view text, ScoreScratch& scratch,
                                           std::vector<TokenId>& out) const {
  std::vector<Symbol>& syms = scratch.symbols;
  std::vector<Bigram>& heap = scratch.heap;
  // Highest score first, then leftmost (the heap keeps the "largest" on top).
  const auto lower_priority = [](const Bigram& a, const Bigram& b) {
    return a.score != b.score ? a.score < b.score : a.left > b.left;
  };
  syms.clear();
  heap.clear();
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = char_length(text, pos);
    const auto index = static_cast<int32_t>(syms.size());
    syms.push_back({index - 1, pos + len < text.size() ? index + 1 : -1, static_cast<uint32_t>(pos),
                    static_cast<uint32_t>(len)});
    pos += len;
  }
  const auto try_pair = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const size_t len = syms[left].length + syms[right].length;
    if (len > max_token_bytes_) return;
    const TokenId id = find_token(text.substr(syms[left].begin, len));
    if (id < 0) return;
    heap.push_back({vocab().tokens[id].score, left, static_cast<uint32_t>(len)});
    std::push_heap(heap.begin(), heap.end(), lower_priority);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(syms.size()); ++i) try_pair(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& left = syms[b.left];
    if (left.length == 0 || left.next < 0) continue;
    Symbol& right = syms[left.next];
    if (left.length + right.length != b.length) continue;  // one side changed since
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (left.next >= 0) syms[left.next].prev = b.left;
    try_pair(left.prev, b.left);
    try_pair(b.left, left.next);
  }
  for (int32_t i = syms.empty() ? -1 : 0; i >= 0; i = syms[i].next) {
    const std::string_view piece = text.substr(syms[i].begin, syms[i].length);
    const TokenId id = find_token(piece);
    if (id >= 0)
      out.push_back(id);
    else
      append_bytes(piece, out);
  }
}

// Hugging Face BPE with byte fallback over the escaped text.
void SpmTokenizer::encode_by_rank(const std::string& text, std::vector<TokenId>& out) const {
  std::vector<BpeSymbol> word;
  BpeScratch scratch;
  const auto flush = [&] {
    bpe_merge(merges_, word, scratch);
    for (const BpeSymbol& s : word) out.push_back(s.id);
    word.clear();
  };
  const std::string_view all(text);
  bool prev_unknown = false;
  std::string_view prev_plain;  // previous character when it is a token by itself
  for (size_t pos = 0, len = 0; pos < all.size(); pos += len) {
    len = char_length(all, pos);
    const std::string_view ch = all.substr(pos, len);
    if (const TokenId id = find_token(ch); id >= 0) {
      if (!prev_plain.empty() && !may_join(prev_plain, ch)) flush();
      word.push_back({id, 1});
      prev_plain = ch;
      prev_unknown = false;
      continue;
    }
    prev_plain = {};
    bool all_bytes = true;
    for (char c : ch) all_bytes = all_bytes && byte_fallback_[static_cast<uint8_t>(c)] >= 0;
    if (all_bytes) {
      for (char c : ch) word.push_back({byte_fallback_[static_cast<uint8_t>(c)], 1});
      prev_unknown = false;
    } else if (unk() >= 0 && !prev_unknown) {
      word.push_back({unk(), 1});  // consecutive unknown characters share one <unk>
      prev_unknown = true;
    }
  }
  flush();
}

}  // namespace strata
