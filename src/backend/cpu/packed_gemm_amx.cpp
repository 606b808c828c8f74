// AMX (AMX-INT8) kernel of the interleaved layout (packed_kernels.h).
//
// The packed block is already AMX's B-operand layout: chunk k is "elements 4k..4k+3 of 16 rows",
// i.e. one 64-byte tile row of K-quadruples for 16 columns. The activation tile is the A operand
// (one 32-byte row per token). So one `tdpbsud` (signed activations x unsigned weights) gives a
// block's whole [tokens, 16 rows] integer product, where the AVX-512 kernel spends 8 vpdpbusd per
// token. Q8_0's weights feed the tile straight from the packed block; the 4-bit and 5-bit types are
// first widened to bytes exactly as the AVX-512 kernel widens them into registers.
//
// The float part is the AVX-512 kernel's, operation for operation: per block and token the
// integer sum (plus the activation's -zero_point * sum(a)) is converted and multiplied by d_w * d_a
// into the float accumulator. The integer sums are exact, so every output is bit-identical to the
// AVX-512 level's. Blocks alternate between two sets of tiles so that a block's tile product runs
// while the previous block's sums are being scaled.
//
// Tile configuration: amx_tiles.h.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <array>
#include <bit>
#include <cstring>
#include <utility>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "backend/cpu/packed_widen_avx512.h"
#include "core/amx_tiles.h"
#include "core/check.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

using namespace packed;

// Tiles 0/1: C, int32 [nc, 16]; 2/3: A, int8 [nc, 32]; 4/5: B, [8, 64] (two sets, by block parity).
void configure_tiles(int nc) {
  AmxTileConfig cfg;
  for (int t = 0; t < 6; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(t < 4 ? nc : 8);
    cfg.colsb[t] = static_cast<uint16_t>(t == 2 || t == 3 ? 32 : 64);
  }
  amx_configure(cfg);
}

// The B operand of one block: Q8_0's packed quants as they are, the others widened into `buf`
// ([8, 64] bytes: row k = elements 4k..4k+3 of the 16 rows, as the AVX-512 weight registers).
template <Kind K>
static inline const uint8_t* weight_tile(const uint8_t* qs, uint8_t* buf) {
  if constexpr (K == Kind::Q8_0) {
    return qs;
  } else {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i lo, hi;
      widen_chunk<K>(qs, k, lo, hi);
      _mm512_store_si512(buf + 64 * k, lo);
      _mm512_store_si512(buf + 64 * (k + 4), hi);
    }
    return buf;
  }
}

// Starts block b's tile product in tile set S (0 or 1).
template <Kind K, int S>
static inline void issue_block(const uint8_t* w, const int8_t* aq, int64_t b, uint8_t* buf) {
  const uint8_t* blk = w + static_cast<size_t>(b) * kBlockBytes<K>;
  const uint8_t* bt = weight_tile<K>(blk + kQsOffset<K>, buf);
  const int8_t* at = aq + static_cast<size_t>(b) * kPackCols * 32;
  if constexpr (S == 0) {
    _tile_zero(0);
    _tile_loadd(2, at, 32);
    _tile_loadd(4, bt, 64);
    _tile_dpbsud(0, 2, 4);
  } else {
    _tile_zero(1);
    _tile_loadd(3, at, 32);
    _tile_loadd(5, bt, 64);
    _tile_dpbsud(1, 3, 5);
  }
}

// Waits for block b's product (tile set S) and scales it into the float accumulators.
template <Kind K, int NC, int S>
static inline void finish_block(const uint8_t* w, const PackedActMeta* am, int64_t b, int32_t (*sums)[16],
                                __m512 (&accf)[NC]) {
  if constexpr (S == 0)
    _tile_stored(0, sums, 64);
  else
    _tile_stored(1, sums, 64);
  const uint8_t* blk = w + static_cast<size_t>(b) * kBlockBytes<K>;
  const PackedActMeta* m = am + static_cast<size_t>(b) * kPackCols;
  const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) {
    __m512i acc = _mm512_load_si512(sums[c]);
    if constexpr (!kHasMin<K>) acc = _mm512_add_epi32(_mm512_set1_epi32(m[c].extra), acc);
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(m[c].d));
    accf[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), scale, accf[c]);
  }
  if constexpr (kHasMin<K>) {
    const __m512 mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c)
      accf[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(std::bit_cast<float>(m[c].extra)), accf[c]);
  }
}

// w: [nb] packed blocks of one group; y[c * y_stride + r] for r < n_rows, c < NC.
template <Kind K, int NC>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, float* y, size_t y_stride,
                  int n_rows) {
  configure_tiles(NC);
  __m512 accf[NC];
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) accf[c] = _mm512_setzero_ps();
  alignas(64) int32_t sums[kPackCols][16];
  alignas(64) uint8_t wbuf[2][8 * 64];
  issue_block<K, 0>(w, a.qs, 0, wbuf[0]);
  for (int64_t b = 0; b < nb; b += 2) {
    if (b + 1 < nb) issue_block<K, 1>(w, a.qs, b + 1, wbuf[1]);
    finish_block<K, NC, 0>(w, a.meta, b, sums, accf);
    if (b + 1 < nb) {
      if (b + 2 < nb) issue_block<K, 0>(w, a.qs, b + 2, wbuf[0]);
      finish_block<K, NC, 1>(w, a.meta, b + 1, sums, accf);
    }
  }
  const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(y + c * y_stride, rows, accf[c]);
}

using GroupKernel = void (*)(const uint8_t*, int64_t, const PackedActTile&, float*, size_t, int);

template <Kind K, size_t... I>
constexpr std::array<GroupKernel, sizeof...(I)> make_table(std::index_sequence<I...>) {
  return {group_kernel<K, static_cast<int>(I) + 1>...};
}

template <Kind K>
constexpr auto kTable = make_table<K>(std::make_index_sequence<kPackCols>{});

// Up to this many tokens a call runs the AVX-512 kernel instead (bit-identical, see above). A tile
// product costs the same for 1 token as for 12, and each block pays the B tile's widening stores,
// the C tile's store and reload: with few tokens AMX loses. bench_matmul's BM_Gemm at the 5632 x
// 2048 gate shape, Sapphire Rapids, 2 threads, AMX vs AVX-512 (ms, medians of 3):
//   Q4_0: 1 token 0.452 vs 0.186, 6: 0.547 vs 0.354, 8: 0.505 vs 0.419, 12: 0.588 vs 0.595
//   Q8_0: 1 token 0.839 vs 0.335, 4: 0.41-0.46 vs 0.36, 6: 0.395 vs 0.472, 12: 0.575 vs 0.701
// (decode and a speculative draft are 1 token, a verification step a few). Q8_0's B tile is its
// packed block as it is, so AMX pays from fewer tokens; the other 4/5-bit types widen as Q4_0.
template <Kind K>
constexpr int kAvx512MaxTokens = K == Kind::Q8_0 ? 4 : 8;

}  // namespace

void packed_gemm_amx_tiles(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                           float* y, size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows && nb >= 1);
  const size_t i = static_cast<size_t>(nc - 1);
  with_kind(type, [&](auto kind) { kTable<decltype(kind)::value>[i](w, nb, a, y, y_stride, n_rows); });
}

void packed_gemm_amx(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                     size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows && nb >= 1);
  // The super-block kinds have no tile kernel: their per-sub-block scales would cost the tiles'
  // advantage. MXFP4 has none either (not written: no AMX machine to measure it on).
  if (type == TensorType::Q4_K || type == TensorType::Q5_K || type == TensorType::IQ4_XS ||
      type == TensorType::Q6_K || type == TensorType::Q3_K || type == TensorType::Q2_K ||
      type == TensorType::MXFP4)
    return packed_gemm_avx512(type, w, nb, a, nc, y, y_stride, n_rows);
  const size_t i = static_cast<size_t>(nc - 1);
  with_kind(type, [&](auto kind) {
    constexpr Kind K = decltype(kind)::value;
    if (nc <= kAvx512MaxTokens<K>) return packed_gemm_avx512(type, w, nb, a, nc, y, y_stride, n_rows);
    kTable<K>[i](w, nb, a, y, y_stride, n_rows);
  });
}

}  // namespace strata::cpu
