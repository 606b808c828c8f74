// The attention driver (attention.h): block walk, tile conversion and per-row softmax state; the
// arithmetic on each tile is the ISA's tile steps (attention_tile.h), the KV codecs
// (kv_codec.h), for block-quantized keys the integer key dot products (kv_key_dot.h,
// kv_key_tile.h) and for Q8_0 values the integer weighted sums (kv_value_tile.h).
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/attention_tile.h"
#include "backend/cpu/kv_codec.h"
#include "backend/cpu/kv_key_dot.h"
#include "backend/cpu/kv_key_tile.h"
#include "backend/cpu/kv_value_tile.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

// Query rows (tokens x heads) of one chunk: 64, or one token's heads when a group is larger
// (MLA's 128 heads over one latent kv head).
constexpr int kMaxRows = kMaxGroup > 64 ? kMaxGroup : 64;

// A 64-byte aligned buffer that only grows.
class AlignedBytes {
 public:
  ~AlignedBytes() { std::free(data_); }
  void* get(size_t n) {
    if (n > cap_) {
      std::free(data_);
      cap_ = (n + 63) / 64 * 64;
      data_ = std::aligned_alloc(64, cap_);
      if (!data_) {
        cap_ = 0;
        throw std::bad_alloc();
      }
    }
    return data_;
  }
  float* floats(size_t n) { return static_cast<float*>(get(n * sizeof(float))); }

 private:
  void* data_ = nullptr;
  size_t cap_ = 0;
};

// Per-thread scratch: with MLA's shapes (576-wide keys, 128 rows) the tiles and accumulators are
// far too large for a thread's stack.
struct Scratch {
  AlignedBytes kt, vf, acc, q_rot, q_int;
  AlignedBytes q_rot_sink, q_int_sink;  // the same for the attention sinks' queries
  float m[kMaxRows], l[kMaxRows];       // running max and sum per row
  float row[kMaxHeadDim + 32];          // one dequantized or padded row
};

// The state of one chunk's rows across the blocks.
struct ChunkState {
  const AttentionChunk& c;
  const KvLayerView& kv;
  const AttentionTileKernels& tk;
  const KvCodecKernels& codec;
  const TypeKernels* key_dot;            // TokenRows K (Q4_1, Q5_0, Q5_1, IQ4_NL): integer scores per key row
  const KvKeyTileKernels* key_tile;      // Interleaved K (Q8_0, Q4_0): integer scores, 16 keys a vector
  const KvValueTileKernels* value_tile;  // Q8_0 V: integer weighted sums, or null (V dequantized)
  KvTileLayout kl, vl;
  int hd, hd_v, bs;
  ScoreMap sm;
  float* kt;             // [hd][bs] K tile, transposed (float scores)
  float* vf;             // [bs][hd_v] V tile
  float* acc;            // [rows][hd_v]
  float* m;              // [rows]
  float* l;              // [rows]
  float* row;            // [kMaxHeadDim + 32]
  const float* q_base;   // c.q, or c.q_sink for the attention sinks' pass
  const float* q_rot;    // [rows][hd] rotated queries, or null (read q_base)
  const uint8_t* q_int;  // [rows][q_int_bytes] queries in key_dot's activation format
  size_t q_int_bytes = 0;
  const uint8_t* k_tile = nullptr;  // block-quantized K: the current tile's rows
  const uint8_t* v_tile = nullptr;  // Q8_0 V for value_tile: the current tile's rows
  int v_keys = 0;                   // tokens of v_tile not yet dequantized into vf (0: vf holds V)
};

const float* query_row(const ChunkState& st, int t, int h) {
  if (st.q_rot) return st.q_rot + static_cast<int64_t>(t * st.c.group + h) * st.hd;
  return st.q_base + t * st.c.q_stride + static_cast<int64_t>(h) * st.hd;
}

// Rotated keys get rotated queries (same R, so scores are unchanged); block-quantized keys get
// queries in their activation format, padded with zeros as the keys are.
void prepare_queries(ChunkState& st, AlignedBytes& rot_buf, AlignedBytes& int_buf) {
  const AttentionChunk& c = st.c;
  const int rows = c.n_q * c.group;
  st.q_rot = nullptr;
  if (st.kv.rotate_k) {
    float* q = rot_buf.floats(static_cast<size_t>(rows) * st.hd);
    for (int t = 0; t < c.n_q; ++t)
      for (int h = 0; h < c.group; ++h) {
        float* dst = q + static_cast<int64_t>(t * c.group + h) * st.hd;
        std::memcpy(dst, st.q_base + t * c.q_stride + static_cast<int64_t>(h) * st.hd, sizeof(float) * st.hd);
        st.codec.rotate(dst, st.hd);
      }
    st.q_rot = q;
  }
  if (!st.key_dot && !st.key_tile) return;
  const int32_t n_groups = st.kl.padded_dim / 32;
  st.q_int_bytes =
      st.key_tile ? kv_query_int8_bytes(n_groups) : row_bytes(st.key_dot->vec_dot_type, st.kl.padded_dim);
  auto* q8 = static_cast<uint8_t*>(int_buf.get(static_cast<size_t>(rows) * st.q_int_bytes));
  std::fill(st.row, st.row + st.kl.padded_dim, 0.0f);
  for (int t = 0; t < c.n_q; ++t)
    for (int h = 0; h < c.group; ++h) {
      std::memcpy(st.row, query_row(st, t, h), sizeof(float) * st.hd);
      uint8_t* dst = q8 + static_cast<size_t>(t * c.group + h) * st.q_int_bytes;
      if (st.key_tile)
        st.key_tile->prepare_query(st.row, n_groups, dst);
      else
        st.key_dot->from_float(st.row, dst, st.kl.padded_dim);
    }
  st.q_int = q8;
}

// Sinks start each row's running max at its sink logit with a sum of 1 (exp(sink - sink)) and
// nothing accumulated: the sink joins the denominator and contributes no value.
void init_rows(ChunkState& st) {
  const AttentionChunk& c = st.c;
  const int rows = c.n_q * c.group;
  for (int r = 0; r < rows; ++r) {
    st.m[r] = c.sinks ? c.sinks[r % c.group] : -INFINITY;
    st.l[r] = c.sinks ? 1.0f : 0.0f;
  }
  std::fill(st.acc, st.acc + static_cast<int64_t>(rows) * st.hd_v, 0.0f);
}

int32_t window_start(const AttentionChunk& c, int t) {
  return c.sliding_window > 0 ? std::max(0, c.pos[t] - c.sliding_window + 1) : 0;
}

// The sink keys row t reads with q_sink: [0, sink_end) below its window (the window's own keys
// are read with q in the window pass).
int32_t sink_end(const AttentionChunk& c, int t) {
  return std::min(c.n_sink_tokens, window_start(c, t));
}

// The next block's tiles live anywhere in the pool: fetch them while this one runs.
void prefetch_tiles(const ChunkState& st, int32_t block) {
  const size_t tile = static_cast<size_t>(block) * st.kv.n_head_kv + st.c.kv_head;
  const char* nk = static_cast<const char*>(st.kv.k) + tile * st.kl.bytes;
  for (size_t off = 0; off < st.kl.bytes; off += 64) __builtin_prefetch(nk + off);
  if (st.kv.v_in_k) return;
  const char* nv = static_cast<const char*>(st.kv.v) + tile * st.vl.bytes;
  for (size_t off = 0; off < st.vl.bytes; off += 64) __builtin_prefetch(nv + off);
}

// Token row j of a TokenRows tile -> dst: [n] f32 (the first n of its padded_dim elements).
void dequantize_token(const ChunkState& st, const KvTileLayout& layout, const uint8_t* tile, int j, int n,
                      float* dst) {
  const uint8_t* src = tile + static_cast<size_t>(j) * layout.row_bytes;
  if (layout.padded_dim == n) return st.codec.dequantize_row(layout.type, src, layout.dim, dst);
  st.codec.dequantize_row(layout.type, src, layout.dim, st.row);
  std::memcpy(dst, st.row, sizeof(float) * n);
}

// The K tile of `block` for float scores (st.kt, [hd][bs]), or its rows for integer scores
// (st.k_tile); MLA's V from the K rows. n_keys: the tile's keys any row of the chunk reads.
void load_k(ChunkState& st, int32_t block, int n_keys, int slot) {
  const KvLayerView& kv = st.kv;
  const size_t tile = static_cast<size_t>(block) * kv.n_head_kv + st.c.kv_head;
  const auto* src = static_cast<const uint8_t*>(kv.k) + tile * st.kl.bytes;
  if (slot >= 0 && kv.staging->k) {  // KIVI block being filled: F16, as an F16 K tile
    const size_t staged = (static_cast<size_t>(slot) * kv.n_head_kv + st.c.kv_head) * st.hd * st.bs;
    st.codec.to_f32(KvType::F16, static_cast<const fp16_t*>(kv.staging->k) + staged, st.kt,
                    static_cast<int64_t>(st.hd) * st.bs);
  } else if (st.kl.order == KvTileOrder::Transposed) {
    st.codec.to_f32(kv.k_type, src, st.kt, static_cast<int64_t>(st.hd) * st.bs);
  } else if (st.kl.order == KvTileOrder::ChannelRows) {
    for (int e = 0; e < st.hd; ++e)
      st.codec.dequantize_channel(kv_kivi_bits(kv.k_type), src + e * st.kl.row_bytes, st.bs,
                                  st.kt + e * st.bs);
  } else if (st.kl.order == KvTileOrder::Interleaved) {
    st.k_tile = src;
    if (kv.v_in_k)
      for (int j = 0; j < n_keys; ++j) {
        st.codec.load_interleaved(kv.k_type, src, st.hd, st.bs, j, st.row);
        std::memcpy(st.vf + j * st.hd_v, st.row, sizeof(float) * st.hd_v);
      }
    return;
  } else {
    st.k_tile = src;
    if (kv.v_in_k)
      for (int j = 0; j < n_keys; ++j) dequantize_token(st, st.kl, src, j, st.hd_v, st.vf + j * st.hd_v);
    return;
  }
  if (kv.v_in_k)
    for (int j = 0; j < n_keys; ++j)
      for (int e = 0; e < st.hd_v; ++e) st.vf[j * st.hd_v + e] = st.kt[e * st.bs + j];
}

void load_v(ChunkState& st, int32_t block, int n_keys, int slot) {
  const KvLayerView& kv = st.kv;
  st.v_tile = nullptr;
  st.v_keys = 0;
  if (kv.v_in_k) return;
  const size_t tile = static_cast<size_t>(block) * kv.n_head_kv + st.c.kv_head;
  const auto* src = static_cast<const uint8_t*>(kv.v) + tile * st.vl.bytes;
  if (slot >= 0 && kv.staging->v) {  // KIVI block being filled: F16 token rows
    const size_t staged = (static_cast<size_t>(slot) * kv.n_head_kv + st.c.kv_head) * st.bs * st.hd_v;
    st.codec.to_f32(KvType::F16, static_cast<const fp16_t*>(kv.staging->v) + staged, st.vf,
                    static_cast<int64_t>(n_keys) * st.hd_v);
  } else if (kv_type_is_float(kv.v_type)) {
    st.codec.to_f32(kv.v_type, src, st.vf, static_cast<int64_t>(n_keys) * st.hd_v);
  } else if (st.value_tile) {  // integer sums: dequantized only if a tile needs the float path
    st.v_tile = src;
    st.v_keys = n_keys;
  } else {
    st.codec.dequantize_rows(kv.v_type, src, st.vl.row_bytes, st.hd_v, n_keys, st.vf, st.hd_v);
  }
}

// s: [n_rows][bs] raw scores of rows r0.. (heads h0.. of token t) over the block's first n_keys.
void score_rows(const ChunkState& st, int t, int h0, int n_rows, int n_keys, float* s) {
  if (st.key_tile) {
    st.key_tile->scores(st.kv.k_type, st.q_int + static_cast<size_t>(t * st.c.group + h0) * st.q_int_bytes,
                        st.q_int_bytes, n_rows, st.k_tile, st.kl.padded_dim / 32, st.bs, s);
    return;
  }
  if (!st.key_dot) {
    const float* qr[kRowsPerPass];
    for (int i = 0; i < n_rows; ++i) qr[i] = query_row(st, t, h0 + i);
    st.tk.scores(qr, n_rows, st.kt, st.hd, st.bs, s);
    return;
  }
  const uint8_t* q = st.q_int + static_cast<size_t>(t * st.c.group + h0) * st.q_int_bytes;
  for (int j0 = 0; j0 < n_keys; j0 += kMaxTileRows)
    st.key_dot->gemm_tile(st.kl.padded_dim, std::min(kMaxTileRows, n_keys - j0), n_rows,
                          st.k_tile + static_cast<size_t>(j0) * st.kl.row_bytes, st.kl.row_bytes, q,
                          st.q_int_bytes, s + j0, static_cast<size_t>(st.bs));
}

// The weighted sum of the tile's V into n_rows accumulators: integer for Q8_0 V where the tile's
// scales allow it (kv_value_tile.h), else over the f32 V tile (dequantized on first need).
void accumulate_rows(ChunkState& st, float* const* ar, int n_rows, const float* p, int first, int last,
                     const float* corr) {
  if (st.v_tile) {
    if (st.value_tile->accumulate_q8_0(ar, n_rows, p, st.bs, st.v_tile, st.vl.row_bytes, st.hd_v, first, last,
                                       corr))
      return;
    if (st.v_keys > 0) {
      st.codec.dequantize_rows(st.kv.v_type, st.v_tile, st.vl.row_bytes, st.hd_v, st.v_keys, st.vf, st.hd_v);
      st.v_keys = 0;
    }
  }
  st.tk.accumulate(ar, n_rows, p, st.bs, st.vf, st.hd_v, first, last, corr);
}

// Every row of the chunk over the keys of block bi (already loaded), kRowsPerPass heads of one
// token at a time: its window's keys, or (sink_pass) its sink keys below the window.
void attend_block(ChunkState& st, int32_t bi, int n_keys, bool sink_pass) {
  const AttentionChunk& c = st.c;
  const int32_t base = bi * st.bs;
  alignas(64) float s[kRowsPerPass * kMaxBlockSize], p[kRowsPerPass * kMaxBlockSize];
  float corr[kRowsPerPass];
  for (int t = 0; t < c.n_q; ++t) {
    const int32_t first = sink_pass ? 0 : std::max(window_start(c, t), base) - base;
    const int32_t last = std::min(sink_pass ? sink_end(c, t) - 1 : c.pos[t], base + st.bs - 1) - base;
    if (first > last) continue;
    for (int h0 = 0; h0 < c.group; h0 += kRowsPerPass) {
      const int n_rows = std::min(kRowsPerPass, c.group - h0);
      const int r0 = t * c.group + h0;
      float* ar[kRowsPerPass];
      for (int i = 0; i < n_rows; ++i) ar[i] = st.acc + static_cast<int64_t>(r0 + i) * st.hd_v;
      score_rows(st, t, h0, n_rows, n_keys, s);
      st.tk.softmax(s, n_rows, st.bs, first, last, st.sm, st.m + r0, st.l + r0, p, corr);
      accumulate_rows(st, ar, n_rows, p, first, last, corr);
    }
  }
}

void load_tiles(ChunkState& st, int32_t block, int n_keys) {
  const int slot = st.kv.staging ? st.kv.staging->slot_of_block[static_cast<size_t>(block)] : -1;
  load_k(st, block, n_keys, slot);
  load_v(st, block, n_keys, slot);
}

// The attention sinks' pass: the sink blocks below every row's window, scored with q_sink. It
// shares the rows' softmax state with the window pass (the online softmax does not depend on
// the order the keys come in).
void attend_sinks(const ChunkState& st, Scratch& scratch) {
  const AttentionChunk& c = st.c;
  STRATA_CHECK(c.q_sink && c.sliding_window > 0, "attention sinks need q_sink and a window");
  int32_t end_max = 0;
  for (int t = 0; t < c.n_q; ++t) end_max = std::max(end_max, sink_end(c, t));
  if (end_max == 0) return;
  ChunkState sink = st;
  sink.q_base = c.q_sink;
  prepare_queries(sink, scratch.q_rot_sink, scratch.q_int_sink);
  for (int32_t bi = 0; bi * st.bs < end_max; ++bi) {
    const int n_keys = std::min(st.bs, end_max - bi * st.bs);
    load_tiles(sink, c.block_table[bi], n_keys);
    attend_block(sink, bi, n_keys, true);
  }
}

void write_outputs(const ChunkState& st) {
  const AttentionChunk& c = st.c;
  for (int t = 0; t < c.n_q; ++t)
    for (int h = 0; h < c.group; ++h) {
      const int r = t * c.group + h;
      float* o = c.out + t * c.out_stride + static_cast<int64_t>(h) * st.hd_v;
      const float inv = st.l[r] > 0.0f ? 1.0f / st.l[r] : 0.0f;
      const float* a = st.acc + static_cast<int64_t>(r) * st.hd_v;
      for (int e = 0; e < st.hd_v; ++e) o[e] = a[e] * inv;
    }
}

}  // namespace

namespace {

ChunkState make_state(const AttentionChunk& c, const KvLayerView& kv, IsaLevel isa, Scratch& scratch) {
  const int hd = kv.head_dim, hd_v = kv.v_dim(), bs = kv.block_size;
  const int rows = c.n_q * c.group;
  STRATA_CHECK(rows <= kMaxRows && hd <= kMaxHeadDim && hd_v <= kMaxHeadDim && bs <= kMaxBlockSize);
  const KvTileLayout kl = kv.k_layout();
  const bool row_keys = kl.order == KvTileOrder::TokenRows;
  const bool q8_values =
      !kv.v_in_k && kv.v_type == KvType::Q8_0 && kv_value_tile_kernels(isa).accumulate_q8_0;
  return ChunkState{c,
                    kv,
                    attention_tile_kernels(isa),
                    kv_codec_kernels(isa),
                    row_keys ? &kv_key_kernels(kv.k_type, isa) : nullptr,
                    kl.order == KvTileOrder::Interleaved ? &kv_key_tile_kernels(isa) : nullptr,
                    q8_values ? &kv_value_tile_kernels(isa) : nullptr,
                    kl,
                    kv.v_in_k ? KvTileLayout{} : kv.v_layout(),
                    hd,
                    hd_v,
                    bs,
                    c.softcap > 0.0f ? ScoreMap{c.scale / c.softcap, c.softcap} : ScoreMap{c.scale, 0.0f},
                    scratch.kt.floats(static_cast<size_t>(hd) * bs),
                    scratch.vf.floats(static_cast<size_t>(bs) * hd_v),
                    scratch.acc.floats(static_cast<size_t>(rows) * hd_v),
                    scratch.m,
                    scratch.l,
                    scratch.row,
                    c.q,
                    nullptr,
                    nullptr};
}

}  // namespace

void attention_chunks(const AttentionChunk* cs, int n, const KvLayerView& kv, IsaLevel isa) {
  STRATA_CHECK(n >= 1 && n <= kMaxInterleavedChunks);
  thread_local Scratch scratch[kMaxInterleavedChunks];
  alignas(ChunkState) unsigned char storage[kMaxInterleavedChunks][sizeof(ChunkState)];
  ChunkState* st[kMaxInterleavedChunks];
  for (int i = 0; i < n; ++i) {
    st[i] = new (storage[i]) ChunkState(make_state(cs[i], kv, isa, scratch[i]));
    prepare_queries(*st[i], scratch[i].q_rot, scratch[i].q_int);
    init_rows(*st[i]);
    if (cs[i].n_sink_tokens > 0) attend_sinks(*st[i], scratch[i]);
  }
  // The chunks share their tokens (so their block range) and their sequence's block table.
  const AttentionChunk& c = cs[0];
  const int bs = kv.block_size;
  int32_t lo_min = INT32_MAX, hi_max = -1;
  for (int t = 0; t < c.n_q; ++t) {
    lo_min = std::min(lo_min, window_start(c, t));
    hi_max = std::max(hi_max, c.pos[t]);
  }
  for (int32_t bi = lo_min / bs; bi <= hi_max / bs; ++bi) {
    const int32_t block = c.block_table[bi];
    // Two blocks ahead: a block's work is too short to hide a whole memory round trip. The
    // chunks' tiles of one block are neighbours in the pool: together they read it in order.
    for (int i = 0; i < n; ++i) {
      if (bi == lo_min / bs && bi + 1 <= hi_max / bs) prefetch_tiles(*st[i], c.block_table[bi + 1]);
      if (bi + 2 <= hi_max / bs) prefetch_tiles(*st[i], c.block_table[bi + 2]);
    }
    const int n_keys = std::min(bs, hi_max - bi * bs + 1);
    const int slot = kv.staging ? kv.staging->slot_of_block[static_cast<size_t>(block)] : -1;
    for (int i = 0; i < n; ++i) {
      load_k(*st[i], block, n_keys, slot);
      load_v(*st[i], block, n_keys, slot);
      attend_block(*st[i], bi, n_keys, false);
    }
  }
  for (int i = 0; i < n; ++i) {
    write_outputs(*st[i]);
    st[i]->~ChunkState();
  }
}

void attention_chunk(const AttentionChunk& c, const KvLayerView& kv, IsaLevel isa) {
  attention_chunks(&c, 1, kv, isa);
}

}  // namespace strata::cpu
