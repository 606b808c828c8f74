// AVX2 helpers shared by the *_avx2.cpp and *_avx512.cpp kernel files. Static inline only (see
// DEVELOPERS.md): each including file gets its own copy compiled for its ISA.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace strata::cpu {

static inline float hsum_f32x8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hmax_f32x8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline int hsum_i32x8(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// Decode (one token) over rows: a tile reads block b of its R rows (ws bytes apart) and the next
// tile of the same work chunk starts R rows further on. Prefetching block b of those next rows
// keeps R * ws bytes of every row stream in flight: the rows are short streams (a few KiB each,
// all read at once) that the hardware prefetchers ramp up on too late, so without it the row
// kernels read DRAM at about half the rate of the prefetching interleaved ones. Prefetches past
// the matrix do not fault.
template <int R>
static inline void prefetch_next_rows(const uint8_t* blk, size_t ws, size_t block_bytes) {
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const char* p = reinterpret_cast<const char*>(blk + (R + r) * ws);
    for (size_t off = 0; off < block_bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
    _mm_prefetch(p + block_bytes - 1, _MM_HINT_T0);
  }
}

// The first rows (> 0) of the 8 lanes of v to out: all 8 at once, or through a buffer at a
// group's partial last 8 rows (nothing past them is written).
static inline void store_rows8(float* out, __m256 v, int rows) {
  if (rows >= 8) {
    _mm256_storeu_ps(out, v);
  } else {
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    std::memcpy(out, tmp, sizeof(float) * static_cast<size_t>(rows));
  }
}

static inline __m256i loadu_256(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Bits of every byte shifted left by s (s < 0: right by -s); 16-bit shifts are fine as the
// callers mask out the bits that cross into the neighbouring byte.
static inline __m256i shift_bytes(__m256i x, int s) {
  return s >= 0 ? _mm256_slli_epi16(x, s) : _mm256_srli_epi16(x, -s);
}

// 16 bytes of packed nibbles -> 32 bytes in element order: low nibbles (elements 0..15), then
// high nibbles (elements 16..31), each 0..15.
static inline __m256i nibbles_to_bytes(const uint8_t* qs) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(x, 4), x);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Bit j of bits -> byte j = 0xFF if set, else 0.
static inline __m256i bits_to_bytes(uint32_t bits) {
  const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2,
                                        2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), shuf);
  const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, select), select);
}

// Sums of 4 adjacent products u8 * s8 into 8 int32 lanes (pairs saturate at int16: callers keep
// 2 * max|u| * max|s| <= 32767).
static inline __m256i dot_u8s8_i32(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// The 4 bytes at p in every 32-bit lane.
static inline __m256i broadcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Stores rows [0, n_rows) of a 16-row result held in two halves (rows 0-7, 8-15).
static inline void store_rows16(float* y, __m256 lo, __m256 hi, int n_rows) {
  if (n_rows == 16) {
    _mm256_storeu_ps(y, lo);
    _mm256_storeu_ps(y + 8, hi);
    return;
  }
  alignas(32) float tmp[16];
  _mm256_store_ps(tmp, lo);
  _mm256_store_ps(tmp + 8, hi);
  std::memcpy(y, tmp, sizeof(float) * static_cast<size_t>(n_rows));
}

}  // namespace strata::cpu
