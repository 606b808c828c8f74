// The matmul driver: activation quantization, work partitioning and cache blocking around the
// per-type kernels (kernels.h) and the interleaved kernels (packed_kernels.h).
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backend/cpu/few_token_f16.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_kernels.h"
#include "core/check.h"
#include "core/cpu_features.h"
#include "core/spin_wait.h"
#include "core/thread_pool.h"

namespace strata::cpu {
namespace {

// Weight bytes a work item keeps in L2 while every token tile of its panel passes over them
// (three quarters of a 1 MiB L2, leaving room for the activations; measured on Zen 4: chunks of
// 384 KiB ran prefill ~10% slower, each token tile's first pass coming from L3 more often).
constexpr size_t kL2WeightBudget = 768 * 1024;
// Work items per thread for dynamic load balance.
constexpr int64_t kItemsPerThread = 2;
// Decode (one token tile): the least bytes a work item streams.
constexpr size_t kMinStreamBytes = 64 * 1024;
// Up to this many token tiles (batched decode of a few dozen sequences) the interleaved weights
// are streamed once as in decode, all tiles passing over each group in turn, instead of in
// L2-sized chunks per panel of tiles, which read the weights from memory once per panel.
constexpr int64_t kStreamTiles = 4;
// Below this many weight bytes x tokens a call runs on the calling thread alone: waking the
// pool would cost more than it saves.
constexpr size_t kSerialWork = 32 * 1024;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Growable 64-byte-aligned scratch memory, one per calling thread: steady-state calls reuse it.
class Scratch {
 public:
  ~Scratch() { std::free(data_); }
  uint8_t* get(size_t bytes) {
    if (bytes > size_) {
      std::free(data_);
      size_ = std::max(bytes, size_ * 2);
      data_ = static_cast<uint8_t*>(std::aligned_alloc(64, (size_ + 63) / 64 * 64));
      if (!data_) throw std::bad_alloc();
    }
    return data_;
  }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

thread_local Scratch t_scratch;

// One-shot barrier for the threads of one pool.run().
class SpinBarrier {
 public:
  explicit SpinBarrier(int n) : n_(n) {}
  void arrive_and_wait() {
    count_.fetch_add(1, std::memory_order_acq_rel);
    spin_until([&] { return count_.load(std::memory_order_acquire) >= n_; });
  }

 private:
  const int n_;
  std::atomic<int> count_{0};
};

// Runs body(ith, nth) on the pool, or on the caller alone when the work is small.
template <typename Body>
void run_parallel(ThreadPool& pool, bool serial, const Body& body) {
  if (serial || pool.size() == 1) {
    body(0, 1);
  } else {
    pool.run([&](int ith, int nth) { body(ith, nth); });
  }
}

// Splits [0, n) into nth contiguous ranges; returns thread ith's.
std::pair<int64_t, int64_t> split_range(int64_t n, int ith, int nth) {
  return {n * ith / nth, n * (ith + 1) / nth};
}

// A 2-D grid of work items: chunks of row units (groups or row tiles) x panels of token tiles.
//  - Several token tiles (prefill): balanced partitions (sizes differ by at most one), an item
//    count that is a multiple of the thread count, so that equal items keep every thread busy
//    to the end.
//  - Up to stream_tiles token tiles (decode; batched decode in the interleaved layout): guided
//    chunks, each a fixed share of what is left (first ones a quarter of the matrix for 2
//    threads, down to kMinStreamBytes), every tile in one item: long sequential streams for the
//    prefetchers, small last pieces so that a thread slowed down by anything else on the
//    machine holds the others up little.
struct WorkGrid {
  static constexpr int kMaxGuided = 64;
  int64_t n_units = 0, n_chunks = 1;  // row units and the chunks they are split into
  int64_t n_tiles = 0, n_panels = 1;  // token tiles and panels
  bool guided = false;
  std::array<int64_t, kMaxGuided + 1> bounds{};  // guided chunk c: [bounds[c], bounds[c + 1])

  int64_t n_items() const { return n_chunks * n_panels; }
  // [begin, end) of part i of n split into k parts.
  static std::pair<int64_t, int64_t> part(int64_t n, int64_t k, int64_t i) {
    return {n * i / k, n * (i + 1) / k};
  }
  std::pair<int64_t, int64_t> chunk(int64_t item) const {
    const int64_t c = item / n_panels;
    return guided ? std::pair{bounds[static_cast<size_t>(c)], bounds[static_cast<size_t>(c) + 1]}
                  : part(n_units, n_chunks, c);
  }
  std::pair<int64_t, int64_t> panel(int64_t item) const { return part(n_tiles, n_panels, item % n_panels); }
};

WorkGrid make_grid(int64_t n_units, size_t unit_bytes, int64_t n_tiles, int nth, int64_t stream_tiles = 1) {
  WorkGrid g;
  g.n_units = n_units;
  g.n_tiles = n_tiles;
  if (n_tiles <= stream_tiles) {
    g.guided = true;
    const int64_t min_units =
        std::max<int64_t>(1, static_cast<int64_t>(kMinStreamBytes / std::max<size_t>(unit_bytes, 1)));
    int64_t c = 0;
    for (int64_t begin = 0; begin < n_units; ++c) {
      g.bounds[static_cast<size_t>(c)] = begin;
      const int64_t left = n_units - begin;
      int64_t take = std::max(min_units, left / (2 * nth));
      if (c == WorkGrid::kMaxGuided - 1) take = left;
      begin += std::min(left, take);
    }
    g.bounds[static_cast<size_t>(c)] = n_units;
    g.n_chunks = c;
    return g;
  }
  // Chunks as large as the L2 budget allows (each chunk's weights are reused by every token of
  // its panel), then panels of tokens to make up enough items.
  const int64_t want = kItemsPerThread * nth;
  const int64_t l2_units =
      std::max<int64_t>(1, static_cast<int64_t>(kL2WeightBudget / std::max<size_t>(unit_bytes, 1)));
  g.n_chunks = ceil_div(n_units, l2_units);
  if (g.n_chunks >= want) {
    g.n_chunks = std::min(n_units, ceil_div(g.n_chunks, nth) * nth);
  } else {
    g.n_panels = std::min(n_tiles, ceil_div(want, g.n_chunks));
    while (g.n_panels < n_tiles && (g.n_chunks * g.n_panels) % nth != 0) ++g.n_panels;
  }
  return g;
}

// Hands out work items 0..n-1 dynamically to the threads of one run.
template <typename Fn>
void for_each_item(std::atomic<int64_t>& next, int64_t n, const Fn& fn) {
  for (int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
       i = next.fetch_add(1, std::memory_order_relaxed))
    fn(i);
}

void matmul_rows(ThreadPool& pool, const PackedMatrix& w, const float* x, float* y, int64_t n_tokens) {
  const TypeKernels& k = type_kernels(w.type());
  const int64_t n_in = w.n_in(), n_out = w.n_out();
  const TypeTraits& at = type_traits(k.vec_dot_type);
  const int64_t act_blocks = n_in / at.block_size;
  const size_t act_stride = row_bytes(k.vec_dot_type, n_in);
  uint8_t* act = t_scratch.get(act_stride * static_cast<size_t>(n_tokens));

  const int tr = k.tile_rows, tc = k.tile_cols;
  const int64_t n_row_tiles = ceil_div(n_out, tr), n_col_tiles = ceil_div(n_tokens, tc);
  const bool serial = w.weight_bytes() * static_cast<size_t>(n_tokens) < kSerialWork;
  // Panel types decode their rows once per item: batched decode's few tiles all go in one item,
  // streamed as the interleaved layout's are (16 sequences at avx512 on Zen 5: IQ2_XXS 139-142 ->
  // 150, IQ3_S 111-114 -> 128-130 t/s).
  const WorkGrid grid = make_grid(n_row_tiles, w.row_stride() * tr, n_col_tiles, serial ? 1 : pool.size(),
                                  k.gemm_panel != nullptr ? kStreamTiles : 1);
  std::atomic<int64_t> next{0};
  SpinBarrier barrier(serial ? 1 : pool.size());

  run_parallel(pool, serial, [&](int ith, int nth) {
    // Phase 1: this thread's share of the activation blocks, token by token.
    auto [u0, u1] = split_range(n_tokens * act_blocks, ith, nth);
    while (u0 < u1) {
      const int64_t t = u0 / act_blocks, b0 = u0 % act_blocks, b1 = std::min(act_blocks, b0 + (u1 - u0));
      k.from_float(x + t * n_in + b0 * at.block_size, act + t * act_stride + b0 * at.block_bytes,
                   (b1 - b0) * at.block_size);
      u0 += b1 - b0;
    }
    barrier.arrive_and_wait();
    // Phase 2: items of row tiles x token tiles; inside, token tiles outer so a chunk of weights
    // stays in cache while the panel's tokens pass over it.
    for_each_item(next, grid.n_items(), [&](int64_t item) {
      const auto [rt0, rt1] = grid.chunk(item);
      const auto [ct0, ct1] = grid.panel(item);
      if (k.gemm_panel != nullptr && ct1 - ct0 > 1) {  // rows decoded once for all the item's tokens
        const int64_t c0 = ct0 * tc;
        const int nc = static_cast<int>(std::min(n_tokens, ct1 * tc) - c0);
        for (int64_t rt = rt0; rt < rt1; ++rt) {
          const int64_t r0 = rt * tr;
          const int nr = static_cast<int>(std::min<int64_t>(tr, n_out - r0));
          k.gemm_panel(n_in, nr, nc, w.data() + r0 * w.row_stride(), w.row_stride(), act + c0 * act_stride,
                       act_stride, y + c0 * n_out + r0, static_cast<size_t>(n_out));
        }
        return;
      }
      for (int64_t ct = ct0; ct < ct1; ++ct) {
        const int64_t c0 = ct * tc;
        const int nc = static_cast<int>(std::min<int64_t>(tc, n_tokens - c0));
        for (int64_t rt = rt0; rt < rt1; ++rt) {
          const int64_t r0 = rt * tr;
          const int nr = static_cast<int>(std::min<int64_t>(tr, n_out - r0));
          k.gemm_tile(n_in, nr, nc, w.data() + r0 * w.row_stride(), w.row_stride(), act + c0 * act_stride,
                      act_stride, y + c0 * n_out + r0, static_cast<size_t>(n_out));
        }
      }
    });
  });
}

void matmul_interleaved(ThreadPool& pool, const PackedMatrix& w, const float* x, float* y, int64_t n_tokens) {
  const PackedKernelSet& kernels = packed_kernels(isa_level());
  const PackedGemmFn gemm = kernels.gemm;
  const PackedActQuantizer quantize = kernels.quantize;
  const int64_t n_in = w.n_in(), n_out = w.n_out(), nb = n_in / 32;
  const int64_t n_groups = ceil_div(n_out, kPackRows), n_tiles = ceil_div(n_tokens, kPackCols);
  const size_t tile_qs = static_cast<size_t>(nb) * kPackCols * 32;
  const size_t tile_meta = static_cast<size_t>(nb) * kPackCols;
  uint8_t* buf = t_scratch.get(static_cast<size_t>(n_tiles) * (tile_qs + tile_meta * sizeof(PackedActMeta)));
  auto* act_qs = reinterpret_cast<int8_t*>(buf);
  auto* act_meta = reinterpret_cast<PackedActMeta*>(buf + static_cast<size_t>(n_tiles) * tile_qs);
  const int act_mode = packed_act_mode(w.type(), kernels);
  const bool super_sums = is_super_act_mode(act_mode);
  const int64_t unit = super_sums ? 8 : 1;  // blocks quantized together: a super-block shares d
  STRATA_CHECK(nb % unit == 0, "super-block activations for a row of ", n_in, " columns");

  const bool serial = w.weight_bytes() * static_cast<size_t>(n_tokens) < kSerialWork;
  const WorkGrid grid =
      make_grid(n_groups, w.group_stride(), n_tiles, serial ? 1 : pool.size(), kStreamTiles);
  std::atomic<int64_t> next{0};
  SpinBarrier barrier(serial ? 1 : pool.size());

  run_parallel(pool, serial, [&](int ith, int nth) {
    auto [v0, v1] = split_range(n_tokens * (nb / unit), ith, nth);
    int64_t u0 = v0 * unit;
    const int64_t u1 = v1 * unit;
    while (u0 < u1) {
      const int64_t t = u0 / nb, b0 = u0 % nb, b1 = std::min(nb, b0 + (u1 - u0));
      const int64_t tile = t / kPackCols, slot = t % kPackCols;
      quantize(x + t * n_in + b0 * 32, b1 - b0, act_mode,
               act_qs + tile * tile_qs + (b0 * kPackCols + slot) * 32, kPackCols * 32,
               act_meta + tile * tile_meta + b0 * kPackCols + slot, kPackCols);
      u0 += b1 - b0;
    }
    barrier.arrive_and_wait();
    auto group_tile = [&](int64_t g, int64_t t) {
      const PackedActTile tile{act_qs + t * tile_qs, act_meta + t * tile_meta, super_sums};
      const int nc = static_cast<int>(std::min<int64_t>(kPackCols, n_tokens - t * kPackCols));
      const int n_rows = static_cast<int>(std::min<int64_t>(kPackRows, n_out - g * kPackRows));
      gemm(w.type(), w.data() + g * w.group_stride(), nb, tile, nc, y + t * kPackCols * n_out + g * kPackRows,
           static_cast<size_t>(n_out), n_rows);
    };
    for_each_item(next, grid.n_items(), [&](int64_t item) {
      const auto [g0, g1] = grid.chunk(item);
      const auto [t0, t1] = grid.panel(item);
      if (grid.guided) {  // streamed once: every tile passes over a group while it is in L1
        for (int64_t g = g0; g < g1; ++g)
          for (int64_t t = t0; t < t1; ++t) group_tile(g, t);
      } else {  // a chunk stays in L2 while the panel's tiles pass over it
        for (int64_t t = t0; t < t1; ++t)
          for (int64_t g = g0; g < g1; ++g) group_tile(g, t);
      }
    });
  });
}

// F16 weights, 2..kFewTokensMax tokens (a speculative verification step): the activations are
// rounded to half precision and widened to float once, then every weight row tile is streamed
// once, in decode's guided chunks, against all the tokens (few_token_f16.h).
void matmul_few_f16(ThreadPool& pool, const PackedMatrix& w, const FewTokenF16Kernels& few, const float* x,
                    float* y, int64_t n_tokens) {
  const TypeKernels& k = type_kernels(w.type());
  const int64_t n_in = w.n_in(), n_out = w.n_out();
  const size_t half_bytes = row_bytes(TensorType::F16, n_in) * static_cast<size_t>(n_tokens);
  uint8_t* buf = t_scratch.get(half_bytes + static_cast<size_t>(n_tokens * n_in) * sizeof(float) + 64);
  uint8_t* half = buf;                                                      // [n_tokens, n_in] F16
  auto* act = reinterpret_cast<float*>(buf + (half_bytes + 63) / 64 * 64);  // [n_tokens, n_in]

  const int tr = few.tile_rows;
  const int64_t n_row_tiles = ceil_div(n_out, tr);
  const bool serial = w.weight_bytes() * static_cast<size_t>(n_tokens) < kSerialWork;
  const WorkGrid grid = make_grid(n_row_tiles, w.row_stride() * tr, 1, serial ? 1 : pool.size());
  std::atomic<int64_t> next{0};
  SpinBarrier barrier(serial ? 1 : pool.size());

  run_parallel(pool, serial, [&](int ith, int nth) {
    // Phase 1: this thread's share of the tokens' elements, in 64-element pieces.
    constexpr int64_t kPiece = 64;
    const int64_t pieces = ceil_div(n_in, kPiece);
    auto [u0, u1] = split_range(n_tokens * pieces, ith, nth);
    for (; u0 < u1; ++u0) {
      const int64_t t = u0 / pieces, e0 = (u0 % pieces) * kPiece, e = std::min(kPiece, n_in - e0);
      uint8_t* h = half + (t * n_in + e0) * 2;
      k.from_float(x + t * n_in + e0, h, e);
      few.widen(h, act + t * n_in + e0, e);
    }
    barrier.arrive_and_wait();
    for_each_item(next, grid.n_items(), [&](int64_t item) {
      // One row tile at a time: its rows stay in L1 while every token passes over them.
      const auto [rt0, rt1] = grid.chunk(item);
      for (int64_t rt = rt0; rt < rt1; ++rt) {
        const int64_t r0 = rt * tr;
        const int nr = static_cast<int>(std::min<int64_t>(tr, n_out - r0));
        few.gemm(n_in, nr, static_cast<int>(n_tokens), w.data() + r0 * w.row_stride(), w.row_stride(), act,
                 static_cast<size_t>(n_in), y + r0, static_cast<size_t>(n_out));
      }
    });
  });
}

// Auto packs the interleaved copy where a SIMD level has kernels for it (every level but
// scalar), else a copy of the rows.
bool auto_interleaves(TensorType type) {
  return packable_type(type) && packed_kernels(isa_level()).level != IsaLevel::Scalar;
}

}  // namespace

std::unique_ptr<PackedMatrix> pack_matrix(TensorType type, int64_t n_in, int64_t n_out, const void* data,
                                          PackLayout layout) {
  if (n_in <= 0 || n_out <= 0) STRATA_THROW("matrix of ", n_out, " x ", n_in, " elements has no data");
  if (!has_type_kernels(type)) STRATA_THROW("no CPU kernels for weight type ", type_name(type));
  const int64_t block = type_traits(type).block_size;
  if (n_in % block != 0)
    STRATA_THROW("matrix rows of ", n_in, " elements are not a whole number of ", type_name(type), " blocks");
  STRATA_CHECK(data != nullptr);
  const bool packable = packable_type(type);
  if (layout == PackLayout::Interleaved && !packable)
    STRATA_THROW("weight type ", type_name(type), " has no interleaved layout");
  const size_t row_stride = row_bytes(type, n_in);
  // Only where a repack may follow: the scan reads every block of a matrix that Rows uses in place.
  const bool data_packable =
      packable && layout != PackLayout::Rows && packable_data(type, data, row_stride, n_in, n_out);
  if (layout == PackLayout::Interleaved && !data_packable)
    STRATA_THROW("this ", type_name(type), " matrix has scales the interleaved layout cannot hold");
  // Auto: the interleaved copy where a SIMD level has kernels for it (every level but scalar),
  // else a copy of the rows in huge pages (decode reads rows of 4 KiB pages ~30% slower: each
  // page is a separate stream for the hardware prefetcher).
  const bool copy_rows = layout == PackLayout::Auto && !(auto_interleaves(type) && data_packable);
  if (layout == PackLayout::Auto) layout = copy_rows ? PackLayout::Rows : PackLayout::Interleaved;

  std::unique_ptr<PackedMatrix> m(new PackedMatrix());
  m->type_ = type;
  m->n_in_ = n_in;
  m->n_out_ = n_out;
  m->row_stride_ = row_stride;
  if (layout == PackLayout::Rows) {
    if (copy_rows) {
      m->owned_ = WeightMemory(m->row_stride_ * static_cast<size_t>(n_out));
      std::memcpy(m->owned_.data(), data, m->owned_.bytes());
      m->data_ = m->owned_.data();
      return m;
    }
    m->data_ = static_cast<const uint8_t*>(data);
    return m;
  }
  const int64_t nb = n_in / 32, n_groups = ceil_div(n_out, kPackRows);
  m->interleaved_ = true;
  m->group_stride_ = packed_block_bytes(type) * static_cast<size_t>(nb);
  m->owned_ = WeightMemory(m->group_stride_ * static_cast<size_t>(n_groups));
  uint8_t* dst = m->owned_.data();
  for (int64_t g = 0; g < n_groups; ++g)
    repack_group(type, static_cast<const uint8_t*>(data), m->row_stride_, n_out, g, nb,
                 dst + g * m->group_stride_);
  m->data_ = dst;
  return m;
}

void matmul(ThreadPool& pool, const PackedMatrix& w, const float* x, float* y, int64_t n_tokens) {
  STRATA_CHECK(n_tokens >= 0);
  if (n_tokens == 0) return;
  if (w.interleaved()) {
    matmul_interleaved(pool, w, x, y, n_tokens);
    return;
  }
  if (w.type() == TensorType::F16 && n_tokens >= 2 && n_tokens <= kFewTokensMax) {
    if (const FewTokenF16Kernels* few = few_token_f16_kernels(isa_level())) {
      matmul_few_f16(pool, w, *few, x, y, n_tokens);
      return;
    }
  }
  matmul_rows(pool, w, x, y, n_tokens);
}

IsaLevel matmul_kernel_level(const PackedMatrix& w) {
  return w.interleaved() ? packed_kernels(isa_level()).level : resolved_isa(w.type(), isa_level());
}

std::string matmul_kernel_description(TensorType type) {
  const bool interleaved = auto_interleaves(type);
  const IsaLevel level = interleaved ? packed_kernels(isa_level()).level : resolved_isa(type, isa_level());
  return std::string(type_name(type)) + (interleaved ? " interleaved " : " rows ") + isa_name(level);
}

}  // namespace strata::cpu
