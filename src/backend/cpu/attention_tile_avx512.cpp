// AVX-512 attention tile steps (attention_tile.h): 16 keys or 16 V columns per zmm, masked at
// the edges, all rows of a pass in registers.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tile.h"
#include "backend/cpu/fast_math.h"

namespace strata::cpu {
namespace {

// Lanes [0, n) of a 16-lane mask, n clamped to [0, 16].
inline __mmask16 first_lanes(int n) {
  return n >= 16 ? static_cast<__mmask16>(0xFFFF) : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1);
}

// One zmm of up to 16 key scores per row, all kRowsPerPass rows in registers (independent FMA
// chains); missing rows score a zero query.
void scores(const float* const* qr, int n_rows, const float* kt, int hd, int bs, float* s) {
  static const float kZeroRow[kMaxHeadDim] = {};
  const float* q[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) q[r] = r < n_rows ? qr[r] : kZeroRow;
  for (int j0 = 0; j0 < bs; j0 += 16) {
    const __mmask16 keys = first_lanes(bs - j0);
    __m512 a[kRowsPerPass];
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r) a[r] = _mm512_setzero_ps();
    for (int e = 0; e < hd; ++e) {
      const __m512 k = _mm512_maskz_loadu_ps(keys, kt + e * bs + j0);
#pragma GCC unroll 8
      for (int r = 0; r < kRowsPerPass; ++r) a[r] = _mm512_fmadd_ps(_mm512_set1_ps(q[r][e]), k, a[r]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r)  // constant trip count: a[] stays in registers
      if (r < n_rows) _mm512_mask_storeu_ps(s + r * bs + j0, keys, a[r]);
  }
}

// Reduces each of 8 vectors to one value (lane r of the result: row r), in a fixed network of
// 128-bit shuffles: a row's value depends on its own 16 lanes only, in the same order always.
template <typename Op>
inline __m256 reduce8(const __m512* v, Op op) {
  __m512 h[4];  // [row 2i lanes 0..7 reduced with 8..15 | row 2i+1 likewise]
  for (int i = 0; i < 4; ++i)
    h[i] = op(_mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0x44),
              _mm512_shuffle_f32x4(v[2 * i], v[2 * i + 1], 0xEE));
  __m512 q[2];  // 128-bit lane k: 4 partials of row 4i + k
  for (int i = 0; i < 2; ++i)
    q[i] = op(_mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], 0x88),
              _mm512_shuffle_f32x4(h[2 * i], h[2 * i + 1], 0xDD));
  for (int i = 0; i < 2; ++i) {  // within each 128-bit lane: 4 -> 1 (in every element)
    q[i] = op(q[i], _mm512_permute_ps(q[i], 0x4E));
    q[i] = op(q[i], _mm512_permute_ps(q[i], 0xB1));
  }
  // Element 0 of each 128-bit lane: rows 0..3 from q[0], 4..7 from q[1].
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(_mm512_permutex2var_ps(q[0], idx, q[1]));
}

// All rows' maxima, sums and rescaling factors as 8-lane vectors: no per-row horizontal chains.
void softmax(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
             float* p, float* corr) {
  const int n_chunks = (bs + 15) / 16;  // bs <= 32: at most two zmm per row
  __mmask16 keys[2], valid[2];
  for (int c = 0; c < n_chunks; ++c) {
    keys[c] = first_lanes(bs - 16 * c);
    valid[c] = static_cast<__mmask16>(first_lanes(last + 1 - 16 * c) & ~first_lanes(first - 16 * c));
  }
  const __m512 neg_inf = _mm512_set1_ps(-INFINITY);
  __m512 x[kRowsPerPass][2], vmax[kRowsPerPass], vsum[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) {
    vmax[r] = neg_inf;
    for (int c = 0; c < n_chunks && r < n_rows; ++c) {
      x[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(keys[c], s + r * bs + 16 * c), _mm512_set1_ps(sm.pre));
      if (sm.cap > 0.0f) x[r][c] = _mm512_mul_ps(_mm512_set1_ps(sm.cap), fast_tanh16(x[r][c]));
      vmax[r] = _mm512_max_ps(vmax[r], _mm512_mask_blend_ps(valid[c], neg_inf, x[r][c]));
    }
  }
  const __mmask8 rows = static_cast<__mmask8>((1u << n_rows) - 1);
  const __m256 m_old = _mm256_mask_loadu_ps(_mm256_set1_ps(-INFINITY), rows, m);
  const __m256 smax =
      _mm256_max_ps(m_old, reduce8(vmax, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); }));
  alignas(32) float smax_r[kRowsPerPass];
  _mm256_store_ps(smax_r, smax);
  for (int r = 0; r < kRowsPerPass; ++r) {
    vsum[r] = _mm512_setzero_ps();
    for (int c = 0; c < n_chunks && r < n_rows; ++c) {
      const __m512 e =
          _mm512_maskz_mov_ps(valid[c], fast_exp16(_mm512_sub_ps(x[r][c], _mm512_set1_ps(smax_r[r]))));
      _mm512_mask_storeu_ps(p + r * bs + 16 * c, keys[c], e);
      vsum[r] = _mm512_add_ps(vsum[r], e);
    }
  }
  const __m256 lsum = reduce8(vsum, [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); });
  // corr = exp(m_old - smax), 1 for rows that had seen nothing (m_old = -inf, l_old = 0).
  const __mmask8 fresh = _mm256_cmp_ps_mask(m_old, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
  const __m256 c8 = _mm256_mask_blend_ps(fresh, fast_exp8(_mm256_sub_ps(m_old, smax)), _mm256_set1_ps(1.0f));
  const __m256 l_old = _mm256_maskz_loadu_ps(rows & ~fresh, l);
  _mm256_mask_storeu_ps(corr, rows, c8);
  _mm256_mask_storeu_ps(m, rows, smax);
  _mm256_mask_storeu_ps(l, rows, _mm256_fmadd_ps(l_old, c8, lsum));
}

// Four rows x up to four 16-float column chunks (64 columns) live in 16 zmm across the keys.
void accumulate(float* const* acc, int n_rows, const float* p, int bs, const float* v, int hd_v, int first,
                int last, const float* corr) {
  for (int r0 = 0; r0 < n_rows; r0 += 4) {
    const int nr = std::min(4, n_rows - r0);
    int pr[4];  // rows beyond nr repeat row r0: computed, never stored
    for (int r = 0; r < 4; ++r) pr[r] = (r < nr ? r0 + r : r0) * bs;
    for (int c0 = 0; c0 < hd_v; c0 += 64) {
      __mmask16 cols[4];
      for (int cc = 0; cc < 4; ++cc) cols[cc] = first_lanes(hd_v - c0 - 16 * cc);
      __m512 a[4][4];
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < 4; ++cc)
          a[r][cc] = r < nr ? _mm512_mul_ps(_mm512_maskz_loadu_ps(cols[cc], acc[r0 + r] + c0 + 16 * cc),
                                            _mm512_set1_ps(corr[r0 + r]))
                            : _mm512_setzero_ps();
      for (int j = first; j <= last; ++j) {
        const float* vj = v + static_cast<int64_t>(j) * hd_v + c0;
        __m512 vv[4];
        for (int cc = 0; cc < 4; ++cc) vv[cc] = _mm512_maskz_loadu_ps(cols[cc], vj + 16 * cc);
        for (int r = 0; r < 4; ++r) {
          const __m512 pj = _mm512_set1_ps(p[pr[r] + j]);
          for (int cc = 0; cc < 4; ++cc) a[r][cc] = _mm512_fmadd_ps(pj, vv[cc], a[r][cc]);
        }
      }
      for (int r = 0; r < 4; ++r)  // constant trip counts: a[][] stays in registers
        for (int cc = 0; cc < 4; ++cc)
          if (r < nr) _mm512_mask_storeu_ps(acc[r0 + r] + c0 + 16 * cc, cols[cc], a[r][cc]);
    }
  }
}

constexpr AttentionTileKernels kKernels = {scores, softmax, accumulate};

}  // namespace

const AttentionTileKernels& attention_tile_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
