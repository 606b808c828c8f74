// The KV cache memory of all layers, as fixed-size blocks in backend memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace strata {

// The element types of the cache, as chosen on the command line (--cache-type-k/-v,
// --no-kv-rotation).
struct KvCacheType {
  KvType k = KvType::F16;
  KvType v = KvType::F16;
  // Hadamard rotation of K and Q (KvLayerView::rotate_k) for the K types quantized per token
  // (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL). Float K is never rotated, and neither is KIVI K: it is
  // quantized per channel, KIVI's own answer to outlier channels, which a rotation would spread
  // over every channel (measured: stories260K KIVI4 K mean KLD 0.032 rotated, 0.009 not).
  bool rotate_k = true;

  bool operator==(const KvCacheType&) const = default;
};

// "f16", or "k q4_0 (rotated) / v q8_0".
std::string type_name(const KvCacheType& type);

struct KvGeometry {
  int32_t n_layer = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;    // of K
  int32_t head_dim_v = 0;  // of V; 0: same as head_dim
  bool v_in_k = false;     // MLA: V is the first head_dim_v elements of each K row, not stored
  int32_t block_size = 16;
  KvCacheType type;
  // KIVI types: F16 staging slots for blocks being filled (at most one per sequence is, so
  // this bounds the sequences that fill blocks at once without early quantization).
  int32_t staging_slots = 64;

  int32_t v_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
  bool rotate_k() const {
    return type.rotate_k && !kv_type_is_float(type.k) && !kv_type_is_kivi(type.k) && !v_in_k;
  }
  bool staged() const { return kv_type_is_kivi(type.k) || (!v_in_k && kv_type_is_kivi(type.v)); }
  // Bytes of K and V of one block across all layers, as laid out by kv_tile_layout.
  size_t bytes_per_block() const;
  // Bytes of the KIVI staging area across all layers for a pool of n_blocks (0 for other types).
  size_t staging_bytes(int32_t n_blocks) const;
};

class KvStorage {
 public:
  // Allocates n_blocks blocks for every layer. Throws strata::Error if the memory is not there or
  // the types cannot store this geometry.
  KvStorage(Backend& backend, const KvGeometry& geometry, int32_t n_blocks);

  const KvGeometry& geometry() const { return geometry_; }
  int32_t block_size() const { return geometry_.block_size; }
  int32_t n_blocks() const { return n_blocks_; }
  const KvLayerView& layer(int32_t il) const { return layers_[static_cast<size_t>(il)]; }
  // All the memory: blocks and staging.
  size_t bytes() const;

  // One block's bytes over all layers (K tiles then V tiles per layer), bytes_per_block() of
  // them: what the offload tiers store (kv_offload.h). Not for staged (KIVI) geometries.
  void read_block(int32_t block, uint8_t* out) const;
  void write_block(int32_t block, const uint8_t* in);

  // Blocks that fit in `bytes` of memory with their staging area (at least 1).
  static int32_t blocks_for_bytes(const KvGeometry& geometry, size_t bytes);

 private:
  KvGeometry geometry_;
  int32_t n_blocks_;
  std::vector<std::unique_ptr<BackendBuffer>> buffers_;  // K, V and staging per layer
  std::vector<std::unique_ptr<KvStaging>> staging_;      // [n_layer] when staged
  std::vector<KvLayerView> layers_;                      // [n_layer]
};

}  // namespace strata
