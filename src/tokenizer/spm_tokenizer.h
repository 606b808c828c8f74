// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"): spaces become "▁", a dummy
// "▁" prefix is added when the vocabulary says so, and characters without a token fall back to
// byte tokens <0xNN>.
//
// Without merges this is llama.cpp's SPM algorithm: repeatedly join the adjacent pair whose
// concatenation is the highest-scoring token (ties: leftmost). With tokenizer.ggml.merges (as
// written for Hugging Face BPE models with byte fallback, see formats/hf_tokenizer.h) it is
// Hugging Face's BPE: pairs are merged by merge rank, characters without a token become byte
// tokens when all of their bytes have one, otherwise one <unk> per run of unknown characters.
#pragma once

#include <array>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/flat_hash.h"
#include "tokenizer/vocab_tokenizer.h"

namespace strata {

class SpmTokenizer : public VocabTokenizer {
 public:
  explicit SpmTokenizer(VocabData vocab);

 protected:
  void encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const override;

 private:
  void encode_by_score(const std::string& text, std::vector<TokenId>& out) const;
  struct Symbol {
    int32_t prev, next;
    uint32_t begin, length;  // bytes of the escaped text; length 0 once merged away
  };
  struct Bigram {
    float score;
    int32_t left;
    uint32_t length;  // of the joined text, to detect stale entries
  };
  struct ScoreScratch {  // buffers reused across the segments of one text
    std::vector<Symbol> symbols;
    std::vector<Bigram> heap;
  };
  void encode_segment_by_score(std::string_view text, ScoreScratch& scratch, std::vector<TokenId>& out) const;
  void encode_by_rank(const std::string& text, std::vector<TokenId>& out) const;
  void append_bytes(std::string_view bytes, std::vector<TokenId>& out) const;
  // True when some token contains character `a` directly followed by character `b`. Where
  // that is not the case no merge can ever join across, so the text is cut there and each
  // piece merged on its own (same result, far less work on long texts).
  bool may_join(std::string_view a, std::string_view b) const;

  std::array<TokenId, 256> byte_tokens_{};    // <0xNN>, else the one-byte token, else unk, else -1
  std::array<TokenId, 256> byte_fallback_{};  // <0xNN> or -1
  size_t max_token_bytes_ = 0;
  bool use_merges_ = false;
  MergeTable merges_;
  FlatU64Map<uint8_t> inner_pairs_;  // adjacent characters inside tokens
};

}  // namespace strata
