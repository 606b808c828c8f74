// AVX2 attention tile steps (attention_tile.h): 8 keys or 8 V columns per ymm, masked loads and
// stores at the edges.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tile.h"
#include "backend/cpu/fast_math.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

// All-ones in lanes [0, n) of 8 32-bit lanes (the mask of vmaskmov / blendv), n clamped to [0, 8].
inline __m256i first_lanes(int n) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(std::max(0, std::min(8, n))), idx);
}

// Eight rows x one ymm of 8 key scores in registers, for each group of 8 keys.
void scores(const float* const* qr, int n_rows, const float* kt, int hd, int bs, float* s) {
  static const float kZeroRow[kMaxHeadDim] = {};
  const float* q[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) q[r] = r < n_rows ? qr[r] : kZeroRow;
  for (int j0 = 0; j0 < bs; j0 += 8) {
    const __m256i keys = first_lanes(bs - j0);
    __m256 a[kRowsPerPass];
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r) a[r] = _mm256_setzero_ps();
    for (int e = 0; e < hd; ++e) {
      const __m256 k = _mm256_maskload_ps(kt + e * bs + j0, keys);
#pragma GCC unroll 8
      for (int r = 0; r < kRowsPerPass; ++r) a[r] = _mm256_fmadd_ps(_mm256_set1_ps(q[r][e]), k, a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r)  // constant trip count: a[] stays in registers
      if (r < n_rows) _mm256_maskstore_ps(s + r * bs + j0, keys, a[r]);
  }
}

// Reduces each of 8 vectors to one value (lane r of the result: row r), in a fixed network of
// shuffles: a row's value depends on its own 8 lanes only, in the same order always.
template <typename Op>
inline __m256 reduce8(const __m256* v, Op op) {
  __m256 h[4];  // per 128-bit half: rows 2i, 2i+1, elements {0, 2} and {1, 3} combined
  for (int i = 0; i < 4; ++i)
    h[i] = op(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  __m256 q[2];  // per 128-bit half: one partial of each of rows 4i..4i+3
  for (int i = 0; i < 2; ++i)
    q[i] =
        op(_mm256_shuffle_ps(h[2 * i], h[2 * i + 1], 0x44), _mm256_shuffle_ps(h[2 * i], h[2 * i + 1], 0xEE));
  return op(_mm256_permute2f128_ps(q[0], q[1], 0x20), _mm256_permute2f128_ps(q[0], q[1], 0x31));
}

// All rows' maxima, sums and rescaling factors as 8-lane vectors (as on AVX-512): one vector exp
// for the 8 rows' corrections instead of a scalar one each, and no per-row horizontal chains.
// The scaled scores wait in p between the passes.
void softmax(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
             float* p, float* corr) {
  const int n_chunks = (bs + 7) / 8;  // bs <= 32: at most four ymm per row
  __m256i keys[4], valid[4];
  for (int c = 0; c < n_chunks; ++c) {
    keys[c] = first_lanes(bs - 8 * c);
    valid[c] = _mm256_andnot_si256(first_lanes(first - 8 * c), first_lanes(last + 1 - 8 * c));
  }
  const __m256 neg_inf = _mm256_set1_ps(-INFINITY);
  __m256 vmax[kRowsPerPass], vsum[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) {
    vmax[r] = neg_inf;
    for (int c = 0; c < n_chunks && r < n_rows; ++c) {
      __m256 x = _mm256_mul_ps(_mm256_maskload_ps(s + r * bs + 8 * c, keys[c]), _mm256_set1_ps(sm.pre));
      if (sm.cap > 0.0f) x = _mm256_mul_ps(_mm256_set1_ps(sm.cap), fast_tanh8(x));
      _mm256_maskstore_ps(p + r * bs + 8 * c, keys[c], x);
      vmax[r] = _mm256_max_ps(vmax[r], _mm256_blendv_ps(neg_inf, x, _mm256_castsi256_ps(valid[c])));
    }
  }
  const __m256i rows = first_lanes(n_rows);
  const __m256 m_old = _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(m, rows), _mm256_castsi256_ps(rows));
  const __m256 smax =
      _mm256_max_ps(m_old, reduce8(vmax, [](__m256 a, __m256 b) { return _mm256_max_ps(a, b); }));
  alignas(32) float smax_r[kRowsPerPass];
  _mm256_store_ps(smax_r, smax);
  for (int r = 0; r < kRowsPerPass; ++r) {
    vsum[r] = _mm256_setzero_ps();
    for (int c = 0; c < n_chunks && r < n_rows; ++c) {
      const __m256 x = _mm256_maskload_ps(p + r * bs + 8 * c, keys[c]);
      const __m256 e = _mm256_and_ps(_mm256_castsi256_ps(valid[c]),
                                     fast_exp8(_mm256_sub_ps(x, _mm256_set1_ps(smax_r[r]))));
      _mm256_maskstore_ps(p + r * bs + 8 * c, keys[c], e);
      vsum[r] = _mm256_add_ps(vsum[r], e);
    }
  }
  const __m256 lsum = reduce8(vsum, [](__m256 a, __m256 b) { return _mm256_add_ps(a, b); });
  // corr = exp(m_old - smax), 1 for rows that had seen nothing (m_old = -inf, l_old = 0).
  const __m256 fresh = _mm256_cmp_ps(m_old, neg_inf, _CMP_EQ_OQ);
  const __m256 c8 = _mm256_blendv_ps(fast_exp8(_mm256_sub_ps(m_old, smax)), _mm256_set1_ps(1.0f), fresh);
  const __m256 l_old = _mm256_maskload_ps(l, _mm256_andnot_si256(_mm256_castps_si256(fresh), rows));
  _mm256_maskstore_ps(corr, rows, c8);
  _mm256_maskstore_ps(m, rows, smax);
  _mm256_maskstore_ps(l, rows, _mm256_fmadd_ps(l_old, c8, lsum));
}

// Four rows x two 8-float column chunks (16 columns) in 8 ymm across the keys.
void accumulate(float* const* acc, int n_rows, const float* p, int bs, const float* v, int hd_v, int first,
                int last, const float* corr) {
  for (int r0 = 0; r0 < n_rows; r0 += 4) {
    const int nr = std::min(4, n_rows - r0);
    int pr[4];  // rows beyond nr repeat row r0: computed, never stored
    for (int r = 0; r < 4; ++r) pr[r] = (r < nr ? r0 + r : r0) * bs;
    for (int c0 = 0; c0 < hd_v; c0 += 16) {
      const __m256i cols[2] = {first_lanes(hd_v - c0), first_lanes(hd_v - c0 - 8)};
      __m256 a[4][2];
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < 2; ++cc)
          a[r][cc] = r < nr ? _mm256_mul_ps(_mm256_maskload_ps(acc[r0 + r] + c0 + 8 * cc, cols[cc]),
                                            _mm256_set1_ps(corr[r0 + r]))
                            : _mm256_setzero_ps();
      for (int j = first; j <= last; ++j) {
        const float* vj = v + static_cast<int64_t>(j) * hd_v + c0;
        const __m256 v0 = _mm256_maskload_ps(vj, cols[0]), v1 = _mm256_maskload_ps(vj + 8, cols[1]);
        for (int r = 0; r < 4; ++r) {
          const __m256 pj = _mm256_set1_ps(p[pr[r] + j]);
          a[r][0] = _mm256_fmadd_ps(pj, v0, a[r][0]);
          a[r][1] = _mm256_fmadd_ps(pj, v1, a[r][1]);
        }
      }
      for (int r = 0; r < 4; ++r)  // constant trip counts: a[][] stays in registers
        for (int cc = 0; cc < 2; ++cc)
          if (r < nr) _mm256_maskstore_ps(acc[r0 + r] + c0 + 8 * cc, cols[cc], a[r][cc]);
    }
  }
}

constexpr AttentionTileKernels kKernels = {scores, softmax, accumulate};

}  // namespace

const AttentionTileKernels& attention_tile_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
