// Identity of a vocabulary, to make sure a base and a model (or a saved base run) score the
// same token ids.
#pragma once

#include <cstdint>

#include "tokenizer/tokenizer.h"

namespace strata::eval {

// 64-bit FNV-1a over the vocabulary size and every token's text (length-prefixed) and kind.
uint64_t vocab_fingerprint(const Tokenizer& tok);

// Throws strata::Error naming the first difference when the two vocabularies differ in size,
// token texts, token kinds, or the BOS that starts each window.
void check_same_vocab(const Tokenizer& base, const Tokenizer& model);

}  // namespace strata::eval
