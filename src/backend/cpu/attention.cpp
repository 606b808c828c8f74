// The attention driver (attention.h): block walk, tile conversion and per-row softmax state; the
// arithmetic on each tile is the ISA's tile steps (attention_tile.h).
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>

#include "backend/cpu/attention_tile.h"
#include "backend/cpu/cpu_ops.h"
#include "core/check.h"

namespace strata::cpu {
namespace {

// Query rows (tokens x heads) of one chunk: 64, or one token's heads when a group is larger
// (MLA's 128 heads over one latent kv head).
constexpr int kMaxRows = kMaxGroup > 64 ? kMaxGroup : 64;

// A 64-byte aligned float buffer that only grows.
class AlignedFloats {
 public:
  ~AlignedFloats() { std::free(data_); }
  float* get(size_t n) {
    if (n > cap_) {
      std::free(data_);
      cap_ = (n + 15) / 16 * 16;
      data_ = static_cast<float*>(std::aligned_alloc(64, cap_ * sizeof(float)));
      if (!data_) {
        cap_ = 0;
        throw std::bad_alloc();
      }
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t cap_ = 0;
};

// Per-thread scratch: with MLA's shapes (576-wide keys, 128 rows) the tiles and accumulators are
// far too large for a thread's stack.
struct Scratch {
  AlignedFloats kt, vf, acc;
  float m[kMaxRows], l[kMaxRows];  // running max and sum per row
};

// The state of one chunk's rows across the blocks.
struct ChunkState {
  const AttentionChunk& c;
  const AttentionTileKernels& tk;
  int hd, hd_v, bs;
  ScoreMap sm;
  float* kt;   // [hd][bs] K tile, transposed as in the cache
  float* vf;   // [bs][hd_v] V tile
  float* acc;  // [rows][hd_v]
  float* m;    // [rows]
  float* l;    // [rows]
};

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

// Tile (block bi, the chunk's kv head) of the layer: its K and V converted to f32. MLA (v_in_k):
// the V tile is the first hd_v rows of the K tile, transposed.
template <typename KvT>
void load_tiles(ChunkState& st, const KvLayerView& kv, int32_t bi, int32_t last_bi, const OpKernels& ops) {
  const AttentionChunk& c = st.c;
  const size_t k_elems = static_cast<size_t>(st.bs) * st.hd, v_elems = static_cast<size_t>(st.bs) * st.hd_v;
  const size_t tile = static_cast<size_t>(c.block_table[bi]) * kv.n_head_kv + c.kv_head;
  if (bi < last_bi) {
    // The next tiles live in other blocks, anywhere in the pool: fetch them while this one runs.
    const size_t next = static_cast<size_t>(c.block_table[bi + 1]) * kv.n_head_kv + c.kv_head;
    const char* nk = reinterpret_cast<const char*>(static_cast<const KvT*>(kv.k) + next * k_elems);
    for (size_t off = 0; off < k_elems * sizeof(KvT); off += 64) __builtin_prefetch(nk + off);
    if (!kv.v_in_k) {
      const char* nv = reinterpret_cast<const char*>(static_cast<const KvT*>(kv.v) + next * v_elems);
      for (size_t off = 0; off < v_elems * sizeof(KvT); off += 64) __builtin_prefetch(nv + off);
    }
  }
  auto load = [&](const KvT* src, float* dst, size_t n) {
    if constexpr (sizeof(KvT) == 2)
      ops.f16_to_f32(src, dst, static_cast<int64_t>(n));
    else
      std::copy(src, src + n, dst);
  };
  load(static_cast<const KvT*>(kv.k) + tile * k_elems, st.kt, k_elems);
  if (kv.v_in_k) {
    for (int j = 0; j < st.bs; ++j)
      for (int e = 0; e < st.hd_v; ++e)
        st.vf[static_cast<size_t>(j) * st.hd_v + e] = st.kt[static_cast<size_t>(e) * st.bs + j];
  } else {
    load(static_cast<const KvT*>(kv.v) + tile * v_elems, st.vf, v_elems);
  }
}

// Every row of the chunk over the keys of block bi (already in st.kt / st.vf), kRowsPerPass
// heads of one token at a time.
void attend_block(ChunkState& st, int32_t bi) {
  const AttentionChunk& c = st.c;
  const int32_t base = bi * st.bs;
  alignas(64) float s[kRowsPerPass * kMaxBlockSize], p[kRowsPerPass * kMaxBlockSize];
  float corr[kRowsPerPass];
  for (int t = 0; t < c.n_q; ++t) {
    const int32_t first = std::max(window_start(c, t), base) - base;
    const int32_t last = std::min(c.pos[t], base + st.bs - 1) - base;
    if (first > last) continue;
    for (int h0 = 0; h0 < c.group; h0 += kRowsPerPass) {
      const int n_rows = std::min(kRowsPerPass, c.group - h0);
      const int r0 = t * c.group + h0;
      const float* qr[kRowsPerPass];
      float* ar[kRowsPerPass];
      for (int i = 0; i < n_rows; ++i) {
        qr[i] = c.q + t * c.q_stride + static_cast<int64_t>(h0 + i) * st.hd;
        ar[i] = st.acc + static_cast<int64_t>(r0 + i) * st.hd_v;
      }
      st.tk.scores(qr, n_rows, st.kt, st.hd, st.bs, s);
      st.tk.softmax(s, n_rows, st.bs, first, last, st.sm, st.m + r0, st.l + r0, p, corr);
      st.tk.accumulate(ar, n_rows, p, st.bs, st.vf, st.hd_v, first, last, corr);
    }
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

template <typename KvT>
void run_chunk(const AttentionChunk& c, const KvLayerView& kv, IsaLevel isa) {
  thread_local Scratch scratch;
  const int hd = kv.head_dim, hd_v = kv.head_dim_v > 0 ? kv.head_dim_v : kv.head_dim, bs = kv.block_size;
  const int rows = c.n_q * c.group;
  STRATA_CHECK(rows <= kMaxRows && hd <= kMaxHeadDim && hd_v <= kMaxHeadDim && bs <= kMaxBlockSize);
  ChunkState st{c,
                attention_tile_kernels(isa),
                hd,
                hd_v,
                bs,
                c.softcap > 0.0f ? ScoreMap{c.scale / c.softcap, c.softcap} : ScoreMap{c.scale, 0.0f},
                scratch.kt.get(static_cast<size_t>(hd) * bs),
                scratch.vf.get(static_cast<size_t>(bs) * hd_v),
                scratch.acc.get(static_cast<size_t>(rows) * hd_v),
                scratch.m,
                scratch.l};
  init_rows(st);
  int32_t lo_min = INT32_MAX, hi_max = -1;
  for (int t = 0; t < c.n_q; ++t) {
    lo_min = std::min(lo_min, window_start(c, t));
    hi_max = std::max(hi_max, c.pos[t]);
  }
  const OpKernels& ops = op_kernels(isa);
  for (int32_t bi = lo_min / bs; bi <= hi_max / bs; ++bi) {
    load_tiles<KvT>(st, kv, bi, hi_max / bs, ops);
    attend_block(st, bi);
  }
  write_outputs(st);
}

}  // namespace

void attention_chunk(const AttentionChunk& c, const KvLayerView& kv, IsaLevel isa) {
  if (kv.type == TensorType::F16)
    run_chunk<uint16_t>(c, kv, isa);
  else
    run_chunk<float>(c, kv, isa);
}

}  // namespace strata::cpu
