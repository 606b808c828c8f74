// Q4_K x Q8_K dot products for AVX-512 (F, BW, VNNI).
//
// Per super-block and 64-element chunk: the 4-bit quants are widened to bytes in element order,
// vpmaddubsw multiplies them with the int8 activations into int16 pair sums, and vpdpwssd
// multiplies those by the sub-block scale and accumulates in int32 (exact). Once per super-block
// the int32 sums are scaled by d_w * d_a in float, and the min term -dmin * m[s] * sum(a) comes
// from the activation's bsums. gemm_tile keeps a tile of R rows x C columns of accumulators in
// registers so each unpacked weight chunk is used C times and each activation chunk R times.
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

constexpr size_t kBlockBytes = sizeof(BlockQ4_K);
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

// 12 bytes of 6-bit (scale, min) pairs (see blocks.h) -> bytes sc[0..7], m[0..7]. Reads 16 bytes:
// the block continues after the scales.
static inline __m128i unpack_scale_min(const uint8_t* p) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));  // dwords s0 s1 s2 (junk)
  // sc[0..3] = s0 & 63, sc[4..7] = (s2 & 15) | (s0 >> 6) << 4, m[0..3] = s1 & 63,
  // m[4..7] = (s2 >> 4) | (s1 >> 6) << 4, per byte.
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, 0x98), _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(_mm_shuffle_epi32(u, 0x50), _mm_setr_epi32(0, 2, 0, 2)),
                                     _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  return _mm_or_si128(low, high);
}

// One weight super-block, ready for the chunk loop.
struct Row {
  const uint8_t* qs;  // [128] packed nibbles
  __m512i scales;     // int16 lanes 0..7: sub-block scales sc[0..7]
  __m512 mins;        // [16] -dmin * m[g / 2] for bsum group g (16 elements each)
  float d;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_f16(blk + offsetof(BlockQ4_K, d));
  const float dmin = load_f16(blk + offsetof(BlockQ4_K, dmin));
  row.qs = blk + offsetof(BlockQ4_K, qs);
  const __m128i scm = unpack_scale_min(blk + offsetof(BlockQ4_K, scales));
  row.scales = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(scm));
  const __m512 m16 = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpackhi_epi8(scm, scm)));
  row.mins = _mm512_mul_ps(m16, _mm512_set1_ps(-dmin));
  return row;
}

// Unsigned quants of elements 64k..64k+63 in element order: low nibbles of qs[32k..32k+31]
// then their high nibbles.
static inline __m512i chunk_quants(const Row& row, int k) {
  const __m512i x =
      _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row.qs + 32 * k)));
  const __m512i shifted = _mm512_mask_srli_epi16(x, 0xffff0000u, x, 4);  // upper half: high nibbles
  return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0f));
}

// int16 scale of every element pair of chunk k: sc[2k] for lanes 0..15, sc[2k+1] for 16..31.
static inline __m512i chunk_scales(const Row& row, int k) {
  const __m512i sel = _mm512_mask_blend_epi16(0xffff0000u, _mm512_set1_epi16(static_cast<short>(2 * k)),
                                              _mm512_set1_epi16(static_cast<short>(2 * k + 1)));
  return _mm512_permutexvar_epi16(sel, row.scales);
}

// One activation super-block.
struct Col {
  const uint8_t* qs;  // [256] int8
  __m512 bsums;       // [16] d_a * bsums[g]
  float d;
};

static inline Col load_col(const uint8_t* blk) {
  Col col;
  col.d = load_f32(blk + offsetof(BlockQ8_K, d));
  col.qs = blk + offsetof(BlockQ8_K, qs);
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + offsetof(BlockQ8_K, bsums)));
  col.bsums = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(bs)), _mm512_set1_ps(col.d));
  return col;
}

// accf + this super-block's contribution: d_w * d_a * (int sum) - dmin * d_a * sum_g m * bsums.
static inline __m512 finish_block(__m512 accf, __m512i acc, const Row& row, const Col& col) {
  accf = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(row.d * col.d), accf);
  return _mm512_fmadd_ps(row.mins, col.bsums, accf);
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

const TypeKernels& q4_k_kernels_avx512() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx512,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
