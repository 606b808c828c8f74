// The KV cache memory of all layers, as fixed-size blocks in backend memory.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace strata {

struct KvGeometry {
  int32_t n_layer = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;    // of K
  int32_t head_dim_v = 0;  // of V; 0: same as head_dim
  bool v_in_k = false;     // MLA: V is the first head_dim_v elements of each K row, not stored
  int32_t block_size = 16;
  TensorType type = TensorType::F16;  // F16 (default) or F32

  int32_t v_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }

  // Bytes of K and V of one block across all layers.
  size_t bytes_per_block() const;
};

class KvStorage {
 public:
  // Allocates n_blocks blocks for every layer. Throws strata::Error if the memory is not there.
  KvStorage(Backend& backend, const KvGeometry& geometry, int32_t n_blocks);

  const KvGeometry& geometry() const { return geometry_; }
  int32_t n_blocks() const { return n_blocks_; }
  int32_t block_size() const { return geometry_.block_size; }
  const KvLayerView& layer(int32_t il) const { return layers_[static_cast<size_t>(il)]; }
  size_t bytes() const;

  // Blocks that fit in `bytes` of memory (at least 1).
  static int32_t blocks_for_bytes(const KvGeometry& geometry, size_t bytes);

 private:
  KvGeometry geometry_;
  int32_t n_blocks_;
  std::vector<std::unique_ptr<BackendBuffer>> buffers_;  // K and V per layer
  std::vector<KvLayerView> layers_;                      // [n_layer]
};

}  // namespace strata
