// Q6_K x Q8_K dot products for AVX-512 (F, BW, VNNI).
//
// Per super-block and 64-element chunk: the 6-bit quants are widened to unsigned bytes
// q' = q + 32 in [0, 63], vpmaddubsw multiplies them with the int8 activations into int16 pair
// sums (<= 2 * 63 * 127, no saturation), and vpdpwssd multiplies those by the int8 scale of
// their 16-element sub-block and accumulates in int32. The +32 bias is removed exactly with the
// activation's bsums (-32 * scale * bsum), then the sums are scaled by d_w * d_a in float.
// gemm_tile keeps R x C accumulators in registers so each unpacked weight chunk is used C times
// and each activation chunk R times.
#include <immintrin.h>

// GCC 12's AVX-512 headers self-initialise their "undefined" vectors, which -Wall reports as
// uninitialised once inlined; the values are never used.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cstddef>
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ6_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 4x4, 3x8, 4x8, 8x1); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 4;

static inline float load_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return fp16_to_f32(h);
}

static inline float load_f32(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, sizeof(f));
  return f;
}

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* ql;  // [128] low 4 bits
  const uint8_t* qh;  // [64] high 2 bits
  __m512i scales;     // int16 lanes 0..15: sub-block scales
  __m512i offsets;    // int16 lanes 0..15: -32 * scales; lanes 16..31: 0
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_f16(blk + offsetof(BlockQ6_K, d));
  row.ql = blk + offsetof(BlockQ6_K, ql);
  row.qh = blk + offsetof(BlockQ6_K, qh);
  const __m256i sc16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + offsetof(BlockQ6_K, scales))));
  row.scales = _mm512_zextsi256_si512(sc16);
  row.offsets = _mm512_zextsi256_si512(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5)));
  return row;
}

// q' = q + 32 of elements 64k..64k+63 in element order. Half h = k / 2 of the block: element
// 128h + 32g + l has its low nibble in ql[64h + 32(g % 2) + l] (low nibble for g < 2, high for
// g >= 2) and its top 2 bits in bits 2g..2g+1 of qh[32h + l]; chunk k holds g = 2(k % 2), +1.
static inline __m512i chunk_quants(const Row& row, int k) {
  const int h = k / 2;
  const __m512i ql = _mm512_loadu_si512(row.ql + 64 * h);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.qh + 32 * h));
  const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
  const __m512i nib = _mm512_set1_epi8(0x0f), top = _mm512_set1_epi8(0x30);
  if (k % 2 == 0)
    return _mm512_or_si512(_mm512_and_si512(ql, nib), _mm512_and_si512(_mm512_slli_epi16(qh2, 4), top));
  return _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), nib), _mm512_and_si512(qh2, top));
}

// int16 scale of every element pair of chunk k: sub-blocks 4k..4k+3 of 16 elements, 8 lanes each.
static inline __m512i chunk_scales(const Row& row, int k) {
  const __m512i sub =
      _mm512_set_epi32(0x00030003, 0x00030003, 0x00030003, 0x00030003, 0x00020002, 0x00020002, 0x00020002,
                       0x00020002, 0x00010001, 0x00010001, 0x00010001, 0x00010001, 0, 0, 0, 0);
  return _mm512_permutexvar_epi16(_mm512_add_epi16(sub, _mm512_set1_epi16(static_cast<short>(4 * k))),
                                  row.scales);
}

// One activation super-block.
struct Col {
  const uint8_t* qs;  // [256] int8
  __m512i bsums;      // int16 lanes 0..15: bsums[g]; lanes 16..31: 0
  float d;
};

static inline Col load_col(const uint8_t* blk) {
  Col col;
  col.d = load_f32(blk + offsetof(BlockQ8_K, d));
  col.qs = blk + offsetof(BlockQ8_K, qs);
  col.bsums = _mm512_zextsi256_si512(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ8_K, bsums))));
  return col;
}

// accf + this super-block's contribution: the quants were summed with a positive bias, removed
// here exactly in int32 (offsets = -bias * scale per bsum group), then scaled by d_w * d_a.
static inline __m512 finish_block(__m512 accf, __m512i acc, const Row& row, const Col& col) {
  acc = _mm512_dpwssd_epi32(acc, col.bsums, row.offsets);
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(row.d * col.d), accf);
}

// out[c * os + r] = dot(row r of w, column c of a) for r < R, c < C over nb super-blocks.
template <int R, int C>
void tile(int64_t nb, const uint8_t* w, size_t ws,  // [R rows, ws bytes apart] x [nb] weight blocks
          const uint8_t* a, size_t as,              // [C rows, as bytes apart] x [nb] Q8_K blocks
          float* out, size_t os) {                  // [C, os floats apart] x [R]
  __m512 accf[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) accf[r][c] = _mm512_setzero_ps();

  for (int64_t b = 0; b < nb; ++b) {
    Row rows[R];
    Col cols[C];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) rows[r] = load_row(w + r * ws + b * kBlockBytes);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) cols[c] = load_col(a + c * as + b * sizeof(BlockQ8_K));

    __m512i acc[R][C];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m512i q = chunk_quants(rows[r], k);
        const __m512i sc = chunk_scales(rows[r], k);
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
          const __m512i av = _mm512_loadu_si512(cols[c].qs + 64 * k);
          const __m512i p = _mm512_maddubs_epi16(q, av);
          acc[r][c] = k == 0 ? _mm512_madd_epi16(p, sc) : _mm512_dpwssd_epi32(acc[r][c], p, sc);
        }
      }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
      for (int c = 0; c < C; ++c) accf[r][c] = finish_block(accf[r][c], acc[r][c], rows[r], cols[c]);
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) out[c * os + r] = _mm512_reduce_add_ps(accf[r][c]);
}

using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

const TileFn kTiles[kTileR][kTileC] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>, tile<1, 4>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>, tile<2, 4>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>, tile<3, 4>},
};

float vec_dot(int64_t n, const void* w, const void* a) {  // w: [n / 256] blocks, a: [n / 256] Q8_K
  float out;
  tile<1, 1>(n / kQK_K, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0, &out, 0);
  return out;
}

// w: [nr rows] x [n / 256] blocks, a: [nc rows] x [n / 256] Q8_K blocks, out: [nc, out_stride] x [nr].
// Full kTileR x kTileC register tiles, smaller ones at the edges.
void gemm_tile(int64_t n, int nr, int nc, const void* w, size_t w_stride, const void* a, size_t a_stride,
               float* out, size_t out_stride) {
  const auto* wp = static_cast<const uint8_t*>(w);
  const auto* ap = static_cast<const uint8_t*>(a);
  for (int r0 = 0; r0 < nr; r0 += kTileR) {
    const int r = nr - r0 < kTileR ? nr - r0 : kTileR;
    for (int c0 = 0; c0 < nc; c0 += kTileC) {
      const int c = nc - c0 < kTileC ? nc - c0 : kTileC;
      kTiles[r - 1][c - 1](n / kQK_K, wp + r0 * w_stride, w_stride, ap + c0 * a_stride, a_stride,
                           out + c0 * out_stride + r0, out_stride);
    }
  }
}

}  // namespace

const TypeKernels& q6_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
