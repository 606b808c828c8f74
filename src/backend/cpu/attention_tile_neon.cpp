// NEON attention tile steps (attention_tile.h): 4 keys or 4 V columns per register, the edges
// (fewer than 4 keys or columns) lane by lane with the same fused multiply-add. The softmax step
// is the scalar reference's: per tile it is a small share of the work next to the two products.
#include <arm_neon.h>

#include <algorithm>
#include <cmath>

#include "backend/cpu/attention.h"
#include "backend/cpu/attention_tile.h"

namespace strata::cpu {
namespace {

// Eight rows x 4 key scores in registers, for each group of 4 keys; the keys past the last
// whole group one at a time.
void scores(const float* const* qr, int n_rows, const float* kt, int hd, int bs, float* s) {
  static const float kZeroRow[kMaxHeadDim] = {};
  const float* q[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) q[r] = r < n_rows ? qr[r] : kZeroRow;
  int j0 = 0;
  for (; j0 + 4 <= bs; j0 += 4) {
    float32x4_t a[kRowsPerPass];
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r) a[r] = vdupq_n_f32(0.0f);
    for (int e = 0; e < hd; ++e) {
      const float32x4_t k = vld1q_f32(kt + e * bs + j0);
#pragma GCC unroll 8
      for (int r = 0; r < kRowsPerPass; ++r) a[r] = vfmaq_n_f32(a[r], k, q[r][e]);
    }
#pragma GCC unroll 8
    for (int r = 0; r < kRowsPerPass; ++r)  // constant trip count: a[] stays in registers
      if (r < n_rows) vst1q_f32(s + r * bs + j0, a[r]);
  }
  for (; j0 < bs; ++j0)
    for (int r = 0; r < n_rows; ++r) {
      float a = 0.0f;
      for (int e = 0; e < hd; ++e) a = std::fma(q[r][e], kt[e * bs + j0], a);
      s[r * bs + j0] = a;
    }
}

void softmax(const float* s, int n_rows, int bs, int first, int last, ScoreMap sm, float* m, float* l,
             float* p, float* corr) {
  attention_tile_kernels_scalar().softmax(s, n_rows, bs, first, last, sm, m, l, p, corr);
}

// Four rows x four 4-float column chunks (16 columns) in 16 registers across the keys; the
// columns past the last whole chunk one at a time.
void accumulate(float* const* acc, int n_rows, const float* p, int bs, const float* v, int hd_v, int first,
                int last, const float* corr) {
  const int hd_whole = hd_v / 4 * 4;
  for (int r0 = 0; r0 < n_rows; r0 += 4) {
    const int nr = std::min(4, n_rows - r0);
    int pr[4];  // rows beyond nr repeat row r0: computed, never stored
    for (int r = 0; r < 4; ++r) pr[r] = (r < nr ? r0 + r : r0) * bs;
    for (int c0 = 0; c0 < hd_whole; c0 += 16) {
      const int n_chunks = std::min(4, (hd_whole - c0) / 4);
      float32x4_t a[4][4];
      for (int r = 0; r < 4; ++r)
        for (int cc = 0; cc < 4; ++cc)
          a[r][cc] = r < nr && cc < n_chunks ? vmulq_n_f32(vld1q_f32(acc[r0 + r] + c0 + 4 * cc), corr[r0 + r])
                                             : vdupq_n_f32(0.0f);
      for (int j = first; j <= last; ++j) {
        const float* vj = v + static_cast<int64_t>(j) * hd_v + c0;
        float32x4_t vv[4];
        for (int cc = 0; cc < 4; ++cc) vv[cc] = cc < n_chunks ? vld1q_f32(vj + 4 * cc) : vdupq_n_f32(0.0f);
        for (int r = 0; r < 4; ++r) {
          const float pj = p[pr[r] + j];
          for (int cc = 0; cc < 4; ++cc) a[r][cc] = vfmaq_n_f32(a[r][cc], vv[cc], pj);
        }
      }
      for (int r = 0; r < 4; ++r)  // constant trip counts: a[][] stays in registers
        for (int cc = 0; cc < 4; ++cc)
          if (r < nr && cc < n_chunks) vst1q_f32(acc[r0 + r] + c0 + 4 * cc, a[r][cc]);
    }
    for (int r = 0; r < nr; ++r)
      for (int e = hd_whole; e < hd_v; ++e) {
        float a = acc[r0 + r][e] * corr[r0 + r];
        for (int j = first; j <= last; ++j)
          a = std::fma(p[pr[r] + j], v[static_cast<int64_t>(j) * hd_v + e], a);
        acc[r0 + r][e] = a;
      }
  }
}

constexpr AttentionTileKernels kKernels = {scores, softmax, accumulate};

}  // namespace

const AttentionTileKernels& attention_tile_kernels_neon() {
  return kKernels;
}

}  // namespace strata::cpu
