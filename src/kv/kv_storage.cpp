#include "kv/kv_storage.h"

#include <algorithm>

#include "core/check.h"

namespace strata {

size_t KvGeometry::bytes_per_block() const {
  const size_t elem = type == TensorType::F16 ? 2 : 4;
  const size_t dims = static_cast<size_t>(head_dim) + (v_in_k ? 0 : static_cast<size_t>(v_dim()));
  return static_cast<size_t>(n_layer) * n_head_kv * block_size * dims * elem;
}

KvStorage::KvStorage(Backend& backend, const KvGeometry& g, int32_t n_blocks)
    : geometry_(g), n_blocks_(n_blocks) {
  STRATA_CHECK(g.type == TensorType::F16 || g.type == TensorType::F32, "KV cache type must be F16 or F32");
  STRATA_CHECK(n_blocks > 0 && g.block_size > 0 && g.n_layer > 0);
  STRATA_CHECK(!g.v_in_k || g.v_dim() <= g.head_dim, "MLA: V must be a prefix of the K row");
  const size_t elem = g.type == TensorType::F16 ? 2 : 4;
  const size_t per_head = static_cast<size_t>(n_blocks) * g.n_head_kv * g.block_size * elem;
  for (int32_t il = 0; il < g.n_layer; ++il) {
    KvLayerView view;
    for (int kv = 0; kv < (g.v_in_k ? 1 : 2); ++kv) {
      const size_t bytes = per_head * static_cast<size_t>(kv == 0 ? g.head_dim : g.v_dim());
      std::unique_ptr<BackendBuffer> buf;
      try {
        buf = backend.alloc(bytes);
      } catch (const std::bad_alloc&) {
        STRATA_THROW("cannot allocate ", g.bytes_per_block() * static_cast<size_t>(n_blocks) / (1 << 20),
                     " MiB for the KV cache");
      }
      (kv == 0 ? view.k : view.v) = buf->data();
      buffers_.push_back(std::move(buf));
    }
    view.type = g.type;
    view.n_blocks = n_blocks;
    view.block_size = g.block_size;
    view.n_head_kv = g.n_head_kv;
    view.head_dim = g.head_dim;
    view.head_dim_v = g.v_dim();
    view.v_in_k = g.v_in_k;
    layers_.push_back(view);
  }
}

size_t KvStorage::bytes() const {
  return geometry_.bytes_per_block() * static_cast<size_t>(n_blocks_);
}

int32_t KvStorage::blocks_for_bytes(const KvGeometry& geometry, size_t bytes) {
  const size_t per = geometry.bytes_per_block();
  STRATA_CHECK(per > 0);
  return static_cast<int32_t>(std::clamp<size_t>(bytes / per, 1, INT32_MAX / 2));
}

}  // namespace strata
