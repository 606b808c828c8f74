// Byte-level BPE (tokenizer.ggml.model = "gpt2"), as llama.cpp runs it: the text is split into
// words by the pre-tokenizer of tokenizer.ggml.pre, each word's bytes are shown through GPT-2's
// byte map and merged by merge rank.
#pragma once

#include <array>
#include <string>
#include <unordered_map>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/vocab_tokenizer.h"

namespace strata {

class BpeTokenizer : public VocabTokenizer {
 public:
  explicit BpeTokenizer(VocabData vocab);

  const PreTokenizer& pre_tokenizer() const { return pre_; }

 protected:
  void encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;

 private:
  int32_t intern(const std::string& text);
  void encode_word(std::string_view word, std::vector<BpeSymbol>& syms, BpeScratch& scratch,
                   std::vector<TokenId>& out) const;

  PreTokenizer pre_;
  // Symbols are token ids; texts that merges produce or use but that are not tokens get ids
  // from n_vocab on (llama.cpp merges them too and falls back to single bytes at the end).
  std::unordered_map<std::string, int32_t> extra_symbols_;
  std::array<int32_t, 256> byte_symbol_{};  // symbol of each byte's GPT-2 character, or -1
  MergeTable merges_;
};

}  // namespace strata
