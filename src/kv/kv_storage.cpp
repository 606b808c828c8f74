#include "kv/kv_storage.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"

namespace strata {
namespace {

// F16 bytes of one staging slot of one layer (K and V parts of the staged types).
size_t staging_slot_bytes(const KvGeometry& g) {
  size_t dims = 0;
  if (kv_type_is_kivi(g.type.k)) dims += static_cast<size_t>(g.head_dim);
  if (!g.v_in_k && kv_type_is_kivi(g.type.v)) dims += static_cast<size_t>(g.v_dim());
  return dims * static_cast<size_t>(g.n_head_kv) * g.block_size * sizeof(fp16_t);
}

int32_t slots_for(const KvGeometry& g, int32_t n_blocks) {
  return g.staged() ? std::max(1, std::min(n_blocks, g.staging_slots)) : 0;
}

std::unique_ptr<BackendBuffer> allocate(Backend& backend, size_t bytes, size_t total) {
  try {
    return backend.alloc(bytes);
  } catch (const std::bad_alloc&) {
    STRATA_THROW("cannot allocate ", total / (1 << 20), " MiB for the KV cache");
  }
}

}  // namespace

std::string type_name(const KvCacheType& t) {
  const char* rotated = t.rotate_k && !kv_type_is_float(t.k) && !kv_type_is_kivi(t.k) ? " (rotated)" : "";
  if (t.k == t.v) return std::string(kv_type_name(t.k)) + rotated;
  return "k " + std::string(kv_type_name(t.k)) + rotated + " / v " + std::string(kv_type_name(t.v));
}

size_t KvGeometry::bytes_per_block() const {
  size_t per_head = kv_tile_layout(type.k, true, head_dim, block_size).bytes;
  if (!v_in_k) per_head += kv_tile_layout(type.v, false, v_dim(), block_size).bytes;
  return static_cast<size_t>(n_layer) * n_head_kv * per_head;
}

size_t KvGeometry::staging_bytes(int32_t n_blocks) const {
  return static_cast<size_t>(n_layer) * slots_for(*this, n_blocks) * staging_slot_bytes(*this);
}

KvStorage::KvStorage(Backend& backend, const KvGeometry& g, int32_t n_blocks)
    : geometry_(g), n_blocks_(n_blocks) {
  STRATA_CHECK(n_blocks > 0 && g.block_size > 0 && g.n_layer > 0 && g.n_head_kv > 0 && g.head_dim > 0);
  STRATA_CHECK(!g.v_in_k || g.v_dim() <= g.head_dim, "MLA: V must be a prefix of the K row");
  const KvTileLayout kl = kv_tile_layout(g.type.k, true, g.head_dim, g.block_size);
  const KvTileLayout vl = kv_tile_layout(g.type.v, false, g.v_dim(), g.block_size);
  const size_t tiles = static_cast<size_t>(n_blocks) * g.n_head_kv;
  const int32_t n_slots = slots_for(g, n_blocks);
  const size_t per_head_slot = static_cast<size_t>(g.block_size) * sizeof(fp16_t);
  for (int32_t il = 0; il < g.n_layer; ++il) {
    KvLayerView view;
    buffers_.push_back(allocate(backend, tiles * kl.bytes, bytes()));
    view.k = buffers_.back()->data();
    if (!g.v_in_k) {
      buffers_.push_back(allocate(backend, tiles * vl.bytes, bytes()));
      view.v = buffers_.back()->data();
    }
    if (n_slots > 0) {
      auto st = std::make_unique<KvStaging>();
      st->n_slots = n_slots;
      st->slot_of_block.assign(static_cast<size_t>(n_blocks), -1);
      st->block_of_slot.assign(static_cast<size_t>(n_slots), -1);
      st->n_written.assign(static_cast<size_t>(n_slots), 0);
      st->last_write.assign(static_cast<size_t>(n_slots), 0);
      const size_t slot_heads = static_cast<size_t>(n_slots) * g.n_head_kv * per_head_slot;
      if (kv_type_is_kivi(g.type.k)) {
        buffers_.push_back(allocate(backend, slot_heads * g.head_dim, bytes()));
        st->k = buffers_.back()->data();
      }
      if (!g.v_in_k && kv_type_is_kivi(g.type.v)) {
        buffers_.push_back(allocate(backend, slot_heads * g.v_dim(), bytes()));
        st->v = buffers_.back()->data();
      }
      view.staging = st.get();
      staging_.push_back(std::move(st));
    }
    view.k_type = g.type.k;
    view.v_type = g.type.v;
    view.n_blocks = n_blocks;
    view.block_size = g.block_size;
    view.n_head_kv = g.n_head_kv;
    view.head_dim = g.head_dim;
    view.head_dim_v = g.v_dim();
    view.v_in_k = g.v_in_k;
    view.rotate_k = g.rotate_k();
    layers_.push_back(view);
  }
}

size_t KvStorage::bytes() const {
  return geometry_.bytes_per_block() * static_cast<size_t>(n_blocks_) + geometry_.staging_bytes(n_blocks_);
}

namespace {

// The K and V byte ranges of one block in one layer.
template <typename Fn>
void for_block_ranges(const KvLayerView& l, int32_t block, Fn&& fn) {
  const size_t k = l.k_layout().bytes * static_cast<size_t>(l.n_head_kv);
  fn(static_cast<uint8_t*>(l.k) + k * static_cast<size_t>(block), k);
  if (l.v_in_k) return;
  const size_t v = l.v_layout().bytes * static_cast<size_t>(l.n_head_kv);
  fn(static_cast<uint8_t*>(l.v) + v * static_cast<size_t>(block), v);
}

}  // namespace

void KvStorage::read_block(int32_t block, uint8_t* out) const {
  STRATA_CHECK(block >= 0 && block < n_blocks_ && !geometry_.staged());
  for (const KvLayerView& l : layers_)
    for_block_ranges(l, block, [&](const uint8_t* p, size_t n) {
      std::memcpy(out, p, n);
      out += n;
    });
}

void KvStorage::write_block(int32_t block, const uint8_t* in) {
  STRATA_CHECK(block >= 0 && block < n_blocks_ && !geometry_.staged());
  for (const KvLayerView& l : layers_)
    for_block_ranges(l, block, [&](uint8_t* p, size_t n) {
      std::memcpy(p, in, n);
      in += n;
    });
}

int32_t KvStorage::blocks_for_bytes(const KvGeometry& geometry, size_t bytes) {
  const size_t per = geometry.bytes_per_block();
  STRATA_CHECK(per > 0);
  // The staging area is fixed once the pool has staging_slots blocks: take it off the top.
  const size_t staging = geometry.staging_bytes(INT32_MAX / 2);
  const size_t left = bytes > staging ? bytes - staging : 0;
  return static_cast<int32_t>(std::clamp<size_t>(left / per, 1, INT32_MAX / 2));
}

}  // namespace strata
