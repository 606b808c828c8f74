// Content hashes of full KV blocks for prefix caching.
//
// hash(block i) = SHA-256(hash(block i-1) || token ids of block i || extra keys), with the
// extra keys naming the model and the request's cache salt: two blocks share a hash only if
// the whole token prefix up to their end and the keys are equal, so different salts never
// share blocks and a collision would need a SHA-256 collision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kv/block_pool.h"

namespace strata {

// Hash of the empty prefix for the given extra keys (model name, cache salt, ...).
BlockHash prefix_root_hash(const std::vector<std::string>& extra_keys);
// Chains one full block of tokens onto its parent's hash.
BlockHash chain_block_hash(const BlockHash& parent, const int32_t* tokens, int32_t n_tokens);

}  // namespace strata
