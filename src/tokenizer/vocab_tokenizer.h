// The part of a vocabulary-based tokenizer shared by SPM and byte-level BPE: special-token
// handling, BOS/EOS, pieces for detokenization and the vocabulary queries of Tokenizer.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/flat_hash.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace strata {

class VocabTokenizer : public Tokenizer {
 public:
  explicit VocabTokenizer(VocabData vocab);
  // The matchers and the id map hold views into the vocabulary: not copyable.
  VocabTokenizer(const VocabTokenizer&) = delete;
  VocabTokenizer& operator=(const VocabTokenizer&) = delete;

  std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const override;
  std::string token_to_piece(TokenId id, bool render_special = false) const override;

  int32_t n_vocab() const override { return static_cast<int32_t>(v_.tokens.size()); }
  std::string_view token_text(TokenId id) const override;
  TokenKind token_kind(TokenId id) const override;
  TokenId bos() const override { return v_.bos; }
  TokenId eos() const override { return v_.eos; }
  TokenId eot() const override { return v_.eot; }
  TokenId unk() const override { return v_.unk; }
  bool add_bos() const override { return v_.add_bos; }
  bool add_eos() const override { return v_.add_eos; }
  bool is_eog(TokenId id) const override;
  const std::vector<TokenId>& eog_tokens() const override { return v_.eog; }
  bool adds_space_prefix() const override { return v_.add_space_prefix; }
  std::string model_name() const override { return v_.model; }
  const std::string& chat_template() const override { return v_.chat_template; }
  TokenId find_token(std::string_view text) const override;

 protected:
  // Tokenizes one piece of raw text (no special tokens in it) and appends the ids. `after_special`:
  // it starts the text or directly follows a special token (SPM adds its dummy prefix there).
  virtual void encode_fragment(std::string_view text, bool after_special,
                               std::vector<TokenId>& out) const = 0;

  const VocabData& vocab() const { return v_; }

 private:
  void check_id(TokenId id) const;
  std::string make_piece(TokenId id) const;

  VocabData v_;
  StringIndex ids_;                   // text -> id (the last id of a duplicate text)
  std::vector<std::string> pieces_;   // [n_vocab] piece with render_special
  std::vector<uint8_t> is_eog_;       // [n_vocab]
  SpecialTokenMatcher user_defined_;  // matched even without parse_special
  SpecialTokenMatcher all_special_;   // control, user-defined and unknown tokens
};

}  // namespace strata
