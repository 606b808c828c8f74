#include "tokenizer/bpe_tokenizer.h"

#include "core/log.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace strata {

namespace {

PreTokenizer pre_tokenizer_for(const std::string& pre) {
  bool known = false;
  PreTokenizer p = PreTokenizer::for_name(pre, &known);
  if (!known)
    log_warn("tokenizer: unknown or missing pre-tokenizer '", pre, "', using 'default' (as llama.cpp)");
  return p;
}

}  // namespace

BpeTokenizer::BpeTokenizer(VocabData vocab)
    : VocabTokenizer(std::move(vocab)), pre_(pre_tokenizer_for(this->vocab().pre)) {
  const std::vector<std::string>& merges = this->vocab().merges;
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    const size_t sp = m.find(' ', 1);
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    const int32_t a = intern(left), b = intern(right), joined = intern(left + right);
    merges_.add(a, b, static_cast<int32_t>(rank), joined);
  }
  for (int b = 0; b < 256; ++b) {
    const std::string& sym = byte_level::byte_to_symbol(static_cast<uint8_t>(b));
    const TokenId id = find_token(sym);
    const auto it = extra_symbols_.find(sym);
    byte_symbol_[b] = id >= 0 ? id : (it != extra_symbols_.end() ? it->second : -1);
  }
}

int32_t BpeTokenizer::intern(const std::string& text) {
  if (const TokenId id = find_token(text); id >= 0) return id;
  const auto next = static_cast<int32_t>(n_vocab() + extra_symbols_.size());
  return extra_symbols_.try_emplace(text, next).first->second;
}

void BpeTokenizer::encode_fragment(std::string_view text, bool, std::vector<TokenId>& out) const {
  const std::vector<uint32_t> cps = unicode::to_codepoints(text);
  std::vector<BpeSymbol> syms;
  BpeScratch scratch;
  std::string word;
  size_t begin = 0;
  for (size_t end : pre_.split(cps)) {
    word.clear();
    for (size_t i = begin; i < end; ++i) unicode::append_utf8(word, cps[i]);
    begin = end;
    encode_word(word, syms, scratch, out);
  }
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<BpeSymbol>& syms, BpeScratch& scratch,
                               std::vector<TokenId>& out) const {
  if (pre_.ignore_merges()) {
    if (const TokenId id = find_token(byte_level::encode(word)); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  syms.clear();
  for (char c : word) syms.push_back({byte_symbol_[static_cast<uint8_t>(c)], 1});
  bpe_merge(merges_, syms, scratch);
  size_t offset = 0;
  for (const BpeSymbol& s : syms) {
    if (s.id >= 0 && s.id < n_vocab()) {
      out.push_back(s.id);
    } else {
      // Not a token: llama.cpp looks up each byte of the symbol's text on its own.
      for (char raw : word.substr(offset, s.length))
        for (char c : byte_level::byte_to_symbol(static_cast<uint8_t>(raw)))
          if (const TokenId id = find_token(std::string_view(&c, 1)); id >= 0) out.push_back(id);
    }
    offset += s.length;
  }
}

}  // namespace strata
