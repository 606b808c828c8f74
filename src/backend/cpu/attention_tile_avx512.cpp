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

// Halving the vector: lane j meets lane j + w for w = 8, 4, 2, 1 (short dependency chains).
template <typename Op>
inline float tree_reduce16(__m512 v, Op op) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m128 a = op(_mm256_castps256_ps128(lo), _mm256_castps256_ps128(hi));
  const __m128 b = op(_mm256_extractf128_ps(lo, 1), _mm256_extractf128_ps(hi, 1));
  const __m128 c = op(a, b);
  const __m128 d = op(c, _mm_movehl_ps(c, c));
  return _mm_cvtss_f32(op(d, _mm_movehdup_ps(d)));
}
inline float tree_sum16(__m512 v) {
  return tree_reduce16(v, [](__m128 x, __m128 y) { return _mm_add_ps(x, y); });
}
inline float tree_max16(__m512 v) {
  return tree_reduce16(v, [](__m128 x, __m128 y) { return _mm_max_ps(x, y); });
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

void softmax(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
             float* p, float* corr) {
  const int n_chunks = (bs + 15) / 16;  // bs <= 32: at most two zmm per row
  __mmask16 keys[2], valid[2];
  for (int c = 0; c < n_chunks; ++c) {
    keys[c] = first_lanes(bs - 16 * c);
    valid[c] = static_cast<__mmask16>(first_lanes(last + 1 - 16 * c) & ~first_lanes(first - 16 * c));
  }
  for (int r = 0; r < n_rows; ++r) {
    __m512 x[2];
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int c = 0; c < n_chunks; ++c) {
      x[c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(keys[c], s + r * bs + 16 * c), _mm512_set1_ps(sm.pre));
      if (sm.cap > 0.0f) x[c] = _mm512_mul_ps(_mm512_set1_ps(sm.cap), fast_tanh16(x[c]));
      vmax = _mm512_max_ps(vmax, _mm512_mask_blend_ps(valid[c], _mm512_set1_ps(-INFINITY), x[c]));
    }
    const float smax = std::max(m[r], tree_max16(vmax));
    __m512 vsum = _mm512_setzero_ps();
    for (int c = 0; c < n_chunks; ++c) {
      const __m512 e = _mm512_maskz_mov_ps(valid[c], fast_exp16(_mm512_sub_ps(x[c], _mm512_set1_ps(smax))));
      _mm512_mask_storeu_ps(p + r * bs + 16 * c, keys[c], e);
      vsum = _mm512_add_ps(vsum, e);
    }
    float lsum = tree_sum16(vsum);
    corr[r] = 1.0f;
    if (m[r] != -INFINITY) {
      corr[r] = fast_exp(m[r] - smax);
      lsum += l[r] * corr[r];
    }
    m[r] = smax;
    l[r] = lsum;
  }
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
