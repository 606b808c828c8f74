#include "backend/cpu/kv_store.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/attention.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

size_t tile_index(const KvLayerView& kv, int64_t block, int32_t g) {
  return static_cast<size_t>(block) * kv.n_head_kv + static_cast<size_t>(g);
}

// Head g of k, rotated into buf when the layer rotates its keys.
const float* key_head(const KvLayerView& kv, const KvCodecKernels& codec, const float* k, int32_t g,
                      float* buf) {
  const float* kh = k + static_cast<int64_t>(g) * kv.head_dim;
  if (!kv.rotate_k) return kh;
  std::memcpy(buf, kh, sizeof(float) * kv.head_dim);
  codec.rotate(buf, kv.head_dim);
  return buf;
}

// ---- the staging area ---------------------------------------------------------------------

fp16_t* staged_k(const KvLayerView& kv, int32_t slot, int32_t g) {  // [head_dim][block_size]
  return static_cast<fp16_t*>(kv.staging->k) + tile_index(kv, slot, g) * kv.head_dim * kv.block_size;
}
fp16_t* staged_v(const KvLayerView& kv, int32_t slot, int32_t g) {  // [block_size][head_dim_v]
  return static_cast<fp16_t*>(kv.staging->v) + tile_index(kv, slot, g) * kv.block_size * kv.v_dim();
}

// The slot's first n_written tokens, quantized into its block's cache tiles; the slot is freed.
void flush(const KvLayerView& kv, const KvCodecKernels& codec, int32_t slot) {
  KvStaging& st = *kv.staging;
  const int32_t block = st.block_of_slot[static_cast<size_t>(slot)];
  const int32_t n = st.n_written[static_cast<size_t>(slot)], bs = kv.block_size;
  float x[kMaxHeadDim > kMaxBlockSize ? kMaxHeadDim : kMaxBlockSize];
  for (int32_t g = 0; g < kv.n_head_kv && n > 0; ++g) {
    if (st.k) {
      const KvTileLayout kl = kv.k_layout();
      auto* tile = static_cast<uint8_t*>(kv.k) + tile_index(kv, block, g) * kl.bytes;
      for (int32_t e = 0; e < kv.head_dim; ++e) {
        codec.to_f32(KvType::F16, staged_k(kv, slot, g) + static_cast<size_t>(e) * bs, x, bs);
        std::fill(x + n, x + bs, x[n - 1]);  // unwritten tokens must not widen the channel's range
        codec.quantize_channel(kv_kivi_bits(kv.k_type), x, bs, tile + e * kl.row_bytes);
      }
    }
    if (st.v) {
      const KvTileLayout vl = kv.v_layout();
      auto* tile = static_cast<uint8_t*>(kv.v) + tile_index(kv, block, g) * vl.bytes;
      for (int32_t j = 0; j < n; ++j) {
        codec.to_f32(KvType::F16, staged_v(kv, slot, g) + static_cast<size_t>(j) * kv.v_dim(), x, kv.v_dim());
        codec.quantize_row(kv.v_type, x, kv.v_dim(), tile + j * vl.row_bytes);
      }
    }
  }
  st.slot_of_block[static_cast<size_t>(block)] = -1;
  st.block_of_slot[static_cast<size_t>(slot)] = -1;
  st.n_written[static_cast<size_t>(slot)] = 0;
}

// A block quantized earlier and written again: its tokens back into the slot, dequantized.
void unflush(const KvLayerView& kv, const KvCodecKernels& codec, int32_t slot, int32_t block) {
  const int32_t bs = kv.block_size;
  float x[kMaxHeadDim + 32];
  for (int32_t g = 0; g < kv.n_head_kv; ++g) {
    if (kv.staging->k) {
      const KvTileLayout kl = kv.k_layout();
      const auto* tile = static_cast<const uint8_t*>(kv.k) + tile_index(kv, block, g) * kl.bytes;
      for (int32_t e = 0; e < kv.head_dim; ++e) {
        codec.dequantize_channel(kv_kivi_bits(kv.k_type), tile + e * kl.row_bytes, bs, x);
        codec.from_f32(KvType::F16, x, staged_k(kv, slot, g) + static_cast<size_t>(e) * bs, bs);
      }
    }
    if (kv.staging->v) {
      const KvTileLayout vl = kv.v_layout();
      const auto* tile = static_cast<const uint8_t*>(kv.v) + tile_index(kv, block, g) * vl.bytes;
      for (int32_t j = 0; j < bs; ++j) {
        codec.dequantize_row(kv.v_type, tile + j * vl.row_bytes, kv.v_dim(), x);
        codec.from_f32(KvType::F16, x, staged_v(kv, slot, g) + static_cast<size_t>(j) * kv.v_dim(),
                       kv.v_dim());
      }
    }
  }
}

// The slot staging `block`, bound now if it has none: a free slot, else the least recently written
// one, flushed. A block written at offset > 0 without a slot was quantized before: restored.
int32_t acquire(const KvLayerView& kv, const KvCodecKernels& codec, int32_t block, int32_t offset) {
  KvStaging& st = *kv.staging;
  int32_t slot = st.slot_of_block[static_cast<size_t>(block)];
  if (slot >= 0) return slot;
  for (int32_t s = 0; s < st.n_slots && slot < 0; ++s)
    if (st.block_of_slot[static_cast<size_t>(s)] < 0) slot = s;
  if (slot < 0) {
    slot = 0;
    for (int32_t s = 1; s < st.n_slots; ++s)
      if (st.last_write[static_cast<size_t>(s)] < st.last_write[static_cast<size_t>(slot)]) slot = s;
    flush(kv, codec, slot);
  }
  st.slot_of_block[static_cast<size_t>(block)] = slot;
  st.block_of_slot[static_cast<size_t>(slot)] = block;
  st.n_written[static_cast<size_t>(slot)] = offset;
  if (offset > 0) unflush(kv, codec, slot, block);
  return slot;
}

}  // namespace

void store_token(const KvLayerView& kv, const KvCodecKernels& codec, const float* k, const float* v,
                 int64_t block, int32_t offset) {
  float rot[kMaxHeadDim];
  uint8_t elems[kMaxHeadDim * 4];
  const KvTileLayout kl = kv.k_layout();
  const bool store_v = !kv.v_in_k && !kv_type_is_kivi(kv.v_type);
  const KvTileLayout vl = store_v ? kv.v_layout() : KvTileLayout{};
  for (int32_t g = 0; g < kv.n_head_kv; ++g) {
    if (!kv_type_is_kivi(kv.k_type)) {
      const float* kh = key_head(kv, codec, k, g, rot);
      auto* tile = static_cast<uint8_t*>(kv.k) + tile_index(kv, block, g) * kl.bytes;
      if (kl.order == KvTileOrder::Transposed) {
        codec.from_f32(kv.k_type, kh, elems, kv.head_dim);
        for (int32_t e = 0; e < kv.head_dim; ++e)  // element e of token `offset` at e * block_size + offset
          std::memcpy(tile + (static_cast<size_t>(e) * kv.block_size + offset) * kl.elem_bytes,
                      elems + static_cast<size_t>(e) * kl.elem_bytes, kl.elem_bytes);
      } else if (kl.order == KvTileOrder::Interleaved) {
        codec.store_interleaved(kv.k_type, kh, kv.head_dim, kv.block_size, offset, tile);
      } else {
        codec.quantize_row(kv.k_type, kh, kv.head_dim, tile + offset * kl.row_bytes);
      }
    }
    if (store_v) {
      auto* tile = static_cast<uint8_t*>(kv.v) + tile_index(kv, block, g) * vl.bytes;
      codec.quantize_row(kv.v_type, v + static_cast<int64_t>(g) * kv.v_dim(), kv.v_dim(),
                         tile + offset * vl.row_bytes);
    }
  }
}

void store_staged(const KvLayerView& kv, const KvCodecKernels& codec, const float* k, const float* v,
                  const AttentionBatch& batch) {
  KvStaging& st = *kv.staging;
  const int64_t k_row = static_cast<int64_t>(kv.n_head_kv) * kv.head_dim;
  const int64_t v_row = static_cast<int64_t>(kv.n_head_kv) * kv.v_dim();
  float rot[kMaxHeadDim];
  fp16_t h[kMaxHeadDim];
  for (int64_t t = 0; t < batch.n_tokens; ++t) {
    const int32_t block = static_cast<int32_t>(batch.slot[t] / kv.block_size);
    const int32_t offset = static_cast<int32_t>(batch.slot[t] % kv.block_size);
    const int32_t slot = acquire(kv, codec, block, offset);
    for (int32_t g = 0; g < kv.n_head_kv; ++g) {
      if (st.k) {
        codec.from_f32(KvType::F16, key_head(kv, codec, k + t * k_row, g, rot), h, kv.head_dim);
        fp16_t* dst = staged_k(kv, slot, g) + offset;
        for (int32_t e = 0; e < kv.head_dim; ++e) dst[static_cast<size_t>(e) * kv.block_size] = h[e];
      }
      if (st.v)
        codec.from_f32(KvType::F16, v + t * v_row + static_cast<int64_t>(g) * kv.v_dim(),
                       staged_v(kv, slot, g) + static_cast<size_t>(offset) * kv.v_dim(), kv.v_dim());
    }
    st.n_written[static_cast<size_t>(slot)] = std::max(st.n_written[static_cast<size_t>(slot)], offset + 1);
    st.last_write[static_cast<size_t>(slot)] = ++st.clock;
    if (st.n_written[static_cast<size_t>(slot)] == kv.block_size) flush(kv, codec, slot);
  }
}

// The staging side of copy_block: dst loses its own staged tokens and takes a copy of src's.
static void copy_staged(const KvLayerView& kv, const KvCodecKernels& codec, int32_t src, int32_t dst) {
  KvStaging& st = *kv.staging;
  const int32_t dst_slot = st.slot_of_block[static_cast<size_t>(dst)];
  if (dst_slot >= 0) {
    st.slot_of_block[static_cast<size_t>(dst)] = -1;
    st.block_of_slot[static_cast<size_t>(dst_slot)] = -1;
    st.n_written[static_cast<size_t>(dst_slot)] = 0;
  }
  const int32_t src_slot = st.slot_of_block[static_cast<size_t>(src)];
  if (src_slot < 0) return;
  if (st.n_slots == 1) {  // no second slot: src is quantized into its tiles, which are copied next
    flush(kv, codec, src_slot);
    return;
  }
  st.last_write[static_cast<size_t>(src_slot)] = ++st.clock;  // so the eviction below spares it
  const int32_t slot = acquire(kv, codec, dst, 0);
  for (int32_t g = 0; g < kv.n_head_kv; ++g) {
    if (st.k)
      std::memcpy(staged_k(kv, slot, g), staged_k(kv, src_slot, g),
                  sizeof(fp16_t) * kv.head_dim * kv.block_size);
    if (st.v)
      std::memcpy(staged_v(kv, slot, g), staged_v(kv, src_slot, g),
                  sizeof(fp16_t) * kv.block_size * kv.v_dim());
  }
  st.n_written[static_cast<size_t>(slot)] = st.n_written[static_cast<size_t>(src_slot)];
  st.last_write[static_cast<size_t>(slot)] = ++st.clock;
}

void copy_block(const KvLayerView& kv, const KvCodecKernels& codec, int32_t src, int32_t dst) {
  if (src == dst) return;
  if (kv.staging) copy_staged(kv, codec, src, dst);
  const size_t k_bytes = kv.k_layout().bytes * static_cast<size_t>(kv.n_head_kv);
  std::memcpy(static_cast<uint8_t*>(kv.k) + k_bytes * static_cast<size_t>(dst),
              static_cast<const uint8_t*>(kv.k) + k_bytes * static_cast<size_t>(src), k_bytes);
  if (!kv.v_in_k) {
    const size_t v_bytes = kv.v_layout().bytes * static_cast<size_t>(kv.n_head_kv);
    std::memcpy(static_cast<uint8_t*>(kv.v) + v_bytes * static_cast<size_t>(dst),
                static_cast<const uint8_t*>(kv.v) + v_bytes * static_cast<size_t>(src), v_bytes);
  }
}

}  // namespace strata::cpu
