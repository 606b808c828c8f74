// A parsed and validated /v1/embeddings request: the token sequences to embed and how to encode
// the answer.
#pragma once

#include <cstdint>
#include <vector>

#include "server/generation_request.h"

namespace strata::server {

// OpenAI's limit on the inputs of one request.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

struct EmbeddingRequest {
  std::vector<std::vector<int32_t>>
      inputs;           // one engine request each (text tokenized, BOS as the vocabulary wants)
  bool base64 = false;  // encoding_format "base64": little-endian float32 bytes
};

// input: "text" | ["text", ...] | [id, ...] | [[id, ...], ...] (as OpenAI accepts); model as the
// other routes; encoding_format "float" | "base64"; dimensions only equal to n_embd (these models
// have no truncatable embedding). Throws ApiError: 400 for invalid fields, empty or too long
// inputs (beyond model.max_sequence_tokens), 404 for another model.
EmbeddingRequest parse_embedding_request(const ChatJson& body, const ServedModel& model, int64_t n_embd);

}  // namespace strata::server
