// Q5_K x Q8_K dot products for AVX2 (+FMA, F16C).//
// Per super-block and 32-element chunk: the quants are widened to unsigned bytes in element
// order, vpmaddubsw multiplies them with the int8 activations into int16 pair sums and vpmaddwd
// with the sub-block scale into exact int32 sums. Once per super-block the sums are scaled by
// d_w * d_a in float; the min term -dmin * m * sum(a) comes from the activation's bsums.
// gemm_tile keeps R x C accumulators in registers so each unpacked weight
// chunk is used C times and each activation chunk R times.
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "quant/blocks.h"

namespace strata::cpu {

namespace {

constexpr size_t kBlockBytes = sizeof(BlockQ5_K);
// The preferred register tile: the best GEMM throughput among the shapes measured on Zen 4
// (also tried: 2x2, 2x4, 4x2, 3x2); GEMV (3 x 1 tiles) was within noise of the others.
constexpr int kTileR = 3;
constexpr int kTileC = 3;

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

static inline __m256i load256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Bits of every byte shifted left by s (s < 0: right by -s); 16-bit shifts are fine as the
// callers mask out the bits that cross into the neighbouring byte.
static inline __m256i shift_bytes(__m256i x, int s) {
  return s >= 0 ? _mm256_slli_epi16(x, s) : _mm256_srli_epi16(x, -s);
}

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
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
  __m256i qh;         // [32] fifth bits: bit k of byte l for element 32k + l
  __m256i scales;     // int16 x8 sub-block scales, in both 128-bit lanes
  __m256i mins;       // int16 x16: m[g / 2] for bsum group g
  float d, neg_dmin;
};

static inline Row load_row(const uint8_t* blk) {
  Row row;
  row.d = load_f16(blk + offsetof(BlockQ5_K, d));
  row.neg_dmin = -load_f16(blk + offsetof(BlockQ5_K, dmin));
  row.qs = blk + offsetof(BlockQ5_K, qs);
  row.qh = load256(blk + offsetof(BlockQ5_K, qh));
  const __m128i scm = unpack_scale_min(blk + offsetof(BlockQ5_K, scales));
  row.scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
  const __m128i m8 = _mm_unpackhi_epi64(scm, scm);
  row.mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));
  return row;
}

// Unsigned quants of elements 32k..32k+31: low (k even) or high (k odd) nibbles of
// qs[32(k/2)..], plus 16 where bit k of qh is set.
static inline __m256i chunk_quants(const Row& row, int k) {
  const __m256i x = load256(row.qs + 32 * (k / 2));
  const __m256i low = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(x, 4) : x, _mm256_set1_epi8(0x0f));
  return _mm256_or_si256(low, _mm256_and_si256(shift_bytes(row.qh, 4 - k), _mm256_set1_epi8(0x10)));
}

// int16 scale of chunk k (32 elements = sub-block k) in every lane.
static inline __m256i chunk_scales(const Row& row, int k) {
  const __m256i pick = _mm256_set1_epi16(static_cast<short>((2 * k) | ((2 * k + 1) << 8)));
  return _mm256_shuffle_epi8(row.scales, pick);
}

// One activation super-block.
struct Col {
  const uint8_t* qs;  // [256] int8
  __m256i bsums;      // int16 x16: bsums[g]
  float d;
};

static inline Col load_col(const uint8_t* blk) {
  Col col;
  col.d = load_f32(blk + offsetof(BlockQ8_K, d));
  col.qs = blk + offsetof(BlockQ8_K, qs);
  col.bsums = load256(blk + offsetof(BlockQ8_K, bsums));
  return col;
}

// accf + this super-block's contribution: d_w * d_a * (int sum) - dmin * d_a * sum_g m[g] * bsums[g].
static inline __m256 finish_block(__m256 accf, __m256i acc, const Row& row, const Col& col) {
  accf = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(row.d * col.d), accf);
  const __m256i msum = _mm256_madd_epi16(col.bsums, row.mins);
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(msum), _mm256_set1_ps(row.neg_dmin * col.d), accf);
}

// out[c * os + r] = dot(row r of w, column c of a) for r < R, c < C over nb super-blocks.
template <int R, int C>
void tile(int64_t nb, const uint8_t* w, size_t ws,  // [R rows, ws bytes apart] x [nb] weight blocks
          const uint8_t* a, size_t as,              // [C rows, as bytes apart] x [nb] Q8_K blocks
          float* out, size_t os) {                  // [C, os floats apart] x [R]
  __m256 accf[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) accf[r][c] = _mm256_setzero_ps();

  for (int64_t b = 0; b < nb; ++b) {
    Row rows[R];
    Col cols[C];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) rows[r] = load_row(w + r * ws + b * kBlockBytes);
#pragma GCC unroll 16
    for (int c = 0; c < C; ++c) cols[c] = load_col(a + c * as + b * sizeof(BlockQ8_K));

    __m256i acc[R][C];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) {
        const __m256i q = chunk_quants(rows[r], k);
        const __m256i sc = chunk_scales(rows[r], k);
#pragma GCC unroll 16
        for (int c = 0; c < C; ++c) {
          const __m256i p = _mm256_maddubs_epi16(q, load256(cols[c].qs + 32 * k));
          const __m256i s = _mm256_madd_epi16(p, sc);
          acc[r][c] = k == 0 ? s : _mm256_add_epi32(acc[r][c], s);
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
    for (int c = 0; c < C; ++c) out[c * os + r] = hsum(accf[r][c]);
}

using TileFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, size_t);

const TileFn kTiles[kTileR][kTileC] = {
    {tile<1, 1>, tile<1, 2>, tile<1, 3>},
    {tile<2, 1>, tile<2, 2>, tile<2, 3>},
    {tile<3, 1>, tile<3, 2>, tile<3, 3>},
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

const TypeKernels& q5_k_kernels_avx2() {
  static constexpr TypeKernels kernels{.vec_dot_type = TensorType::Q8_K,
                                       .from_float = quantize_row_q8_k_avx2,
                                       .vec_dot = vec_dot,
                                       .gemm_tile = gemm_tile,
                                       .tile_rows = kTileR,
                                       .tile_cols = kTileC};
  return kernels;
}

}  // namespace strata::cpu
