// Hugging Face tokenizer files -> GGUF tokenizer metadata.
#pragma once

#include <string>

#include "formats/metadata.h"

namespace strata {

// Reads `dir`/tokenizer.json (and tokenizer_config.json / special_tokens_map.json when present)
// and adds the tokenizer.ggml.* keys (model, pre, tokens, scores, token_type, merges, special
// token ids, add_bos/add_eos flags) and tokenizer.chat_template to `md`, the way llama.cpp's
// converter would. Throws strata::Error when the files are missing or malformed.
void add_hf_tokenizer_metadata(const std::string& dir, Metadata& md);

}  // namespace strata
