// Writing K/V into the cache tiles of any KV type (kv_layout.h), copying blocks, and the KIVI
// staging area (KvStaging in backend.h) — the CPU side of Backend::store_kv / copy_kv_block.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/kv_codec.h"

namespace strata::cpu {

// One token's K (k: [n_head_kv, head_dim]) and V (v: [n_head_kv, head_dim_v], unread when
// v_in_k) into offset `offset` of block `block`, for the parts that are not staged (every part
// that is not a KIVI type). Rotates K first when kv.rotate_k. Tokens of different slots may be
// stored concurrently.
void store_token(const KvLayerView& kv, const KvCodecKernels& codec, const float* k, const float* v,
                 int64_t block, int32_t offset);

// The KIVI parts of every token of the batch, in batch order, through the staging area: a block
// is quantized into the cache when its last token is written. Not thread-safe (one caller per
// layer at a time, as the model runs).
void store_staged(const KvLayerView& kv, const KvCodecKernels& codec,
                  const float* k /* [n, n_head_kv, head_dim] */,
                  const float* v /* [n, n_head_kv, head_dim_v] */, const AttentionBatch& batch);

// Block src -> block dst: the cache tiles of K and V and, for a staged src, its staging slot.
void copy_block(const KvLayerView& kv, const KvCodecKernels& codec, int32_t src, int32_t dst);

}  // namespace strata::cpu
