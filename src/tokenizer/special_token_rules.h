// The corrections llama.cpp makes to a GGUF vocabulary's token types, which decide which tokens
// are special (GGUF files mark many of them wrongly or not at all).
//
// The rule that matters for tokenization: a token's text is matched in raw text before the
// model's tokenizer runs when the token is Control, UserDefined or Unknown; without
// parse_special only UserDefined tokens are (llama.cpp's tokenizer_st_partition skips CONTROL
// and UNKNOWN ones, as Hugging Face does with special added tokens). A token whose text names a
// role (end of turn, end of generation, fill-in-the-middle) is made Control, so e.g. Phi-3's
// user-defined "</s>" is plain text unless parse_special is set, and it ends generation.
#pragma once

#include "tokenizer/vocab.h"

namespace strata {

// Detects the EOT, EOM and FIM tokens by text where the metadata did not name them, makes them
// and every end-of-generation text Control, fills v.eog (those texts, eos, eot, eom and the FIM
// pad / repo / separator tokens) and applies llama.cpp's model-specific exceptions. The ids in
// `v` must hold the metadata's values already.
void apply_special_token_rules(VocabData& v);

// Phi-3's special tokens swallow the whitespace after them (llama.cpp sets this from the model
// name, since GGUF has no per-token attributes). Runs after apply_special_token_rules.
void apply_model_attributes(VocabData& v);

}  // namespace strata
