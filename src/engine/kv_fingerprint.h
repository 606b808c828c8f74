// The identity that KV blocks on disk are bound to (kv/tier_file.h): a block is only reused by
// an engine whose model and KV layout would have computed the same bytes.
#pragma once

#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "kv/kv_window_policy.h"
#include "model/model.h"

namespace strata {

// SHA-256 over: every tensor's name, type and shape, plus its first and last 4 KiB of data (a
// different checkpoint of the same architecture differs there; hashing all weights would cost
// seconds per GB at every start), and the KV geometry: element types of K and V, rotation,
// block size, layers, heads, head sizes, MLA and the block's byte size; and what changes the
// computed values without changing the file: the KV window (later layers' K/V depend on what
// earlier tokens could see), W8A8 at load (its mode and static ranges) and, for LongRoPE models,
// the context that picks the factors.
BlockHash kv_fingerprint(const Model& model, const KvGeometry& geometry, const KvWindowPolicy& window);

}  // namespace strata
