#include "tokenizer/tokenizer.h"

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"
#include "tokenizer/vocab.h"

namespace strata {

std::unique_ptr<Tokenizer> Tokenizer::from_metadata(const Metadata& md) {
  VocabData v = read_vocab(md);
  if (v.model == "gpt2") return std::make_unique<BpeTokenizer>(std::move(v));
  return std::make_unique<SpmTokenizer>(std::move(v));
}

std::string Tokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string out;
  bool after_bos = false;
  for (TokenId id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (after_bos && adds_space_prefix() && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    out += piece;
    after_bos = id == bos();
  }
  return out;
}

}  // namespace strata
