// Portable source of the CPU op kernels, compiled once per ISA level (see cpu_ops.h).
// Everything here has internal linkage: each including translation unit gets its own copy,
// vectorized for the flags of that file. Loops are written in fixed-width lanes so the
// compiler can vectorize the float reductions without -ffast-math.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "backend/cpu/cpu_ops.h"
#include "core/fp16.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace strata::cpu {
namespace {

constexpr int kLanes = 16;
// Query rows (tokens x heads) of one attention chunk: 64, or one token's heads when a group is
// larger (MLA's 128 heads over one latent kv head).
constexpr int kMaxRows = kMaxGroup > 64 ? kMaxGroup : 64;

// exp(x) to ~2e-7 relative error; vectorizable (no libm call). x is clamped to the range where
// the result is a normal float, so masked-out scores must not be passed in.
inline float fast_exp(float x) {
  x = std::min(88.0f, std::max(-87.0f, x));
  const float t = x * 1.44269504088896341f;
  const float r = (t + 12582912.0f) - 12582912.0f;  // round to nearest integer
  const float f = t - r;                            // [-0.5, 0.5]
  float p = 1.5403530393381610e-4f;
  p = p * f + 1.3333558146428443e-3f;
  p = p * f + 9.6181291076284772e-3f;
  p = p * f + 5.5504108664821580e-2f;
  p = p * f + 2.4022650695910071e-1f;
  p = p * f + 6.9314718055994531e-1f;
  p = p * f + 1.0f;
  const int32_t e = static_cast<int32_t>(r) + 127;
  return p * std::bit_cast<float>(e << 23);
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) acc[j] += a[i + j] * b[i + j];
  float s = 0.0f;
  for (int j = 0; j < kLanes; ++j) s += acc[j];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void convert_f16_to_f32(const uint16_t* x, float* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) y[i] = fp16_to_f32(x[i]);
}

void op_f32_to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) y[i] = f32_to_fp16(x[i]);
}

void op_rms_norm_row(const float* x, const float* w, float* y, int64_t n, float eps) {
  const float mean = dot_f32(x, x, n) / static_cast<float>(n);
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale * w[i];
}

void op_swiglu(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + fast_exp(-g)) * up[i];
  }
}

void op_add(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void op_rope_row(float* x, const float* cos_sin, int64_t n_heads, int64_t head_dim, int n_rot, bool neox) {
  const int half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    if (neox) {
      for (int i = 0; i < half; ++i) {
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
      }
    } else {
      for (int i = 0; i < half; ++i) {
        const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * c - b * s;
        v[2 * i + 1] = a * s + b * c;
      }
    }
  }
}

// Sum / max of 16 lanes as a fixed pairwise tree: short dependency chains, and the same
// order wherever the row is computed.
inline float tree_sum16(float* t) {
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) t[j] = t[j] + t[j + w];
  return t[0];
}
inline float tree_max16(float* t) {
  for (int w = 8; w > 0; w /= 2)
    for (int j = 0; j < w; ++j) t[j] = t[j] > t[j + w] ? t[j] : t[j + w];
  return t[0];
}

#if defined(__AVX512F__)
// tree_sum16 / tree_max16 of a register: halving the vector pairs lane j with lane j + w, the
// same pairs in the same order as the loops, without a round trip through memory.
template <typename Op>
inline float tree_reduce16(__m512 v, Op op) {
  const __m256 lo = _mm512_castps512_ps256(v);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
  const __m128 a = op(_mm256_castps256_ps128(lo), _mm256_castps256_ps128(hi));      // j, j + 8 for j < 4
  const __m128 b = op(_mm256_extractf128_ps(lo, 1), _mm256_extractf128_ps(hi, 1));  // j = 4..7
  const __m128 c = op(a, b);                                                        // j, j + 4
  const __m128 d = op(c, _mm_movehl_ps(c, c));                                      // j, j + 2
  return _mm_cvtss_f32(op(d, _mm_movehdup_ps(d)));                                  // 0, 1
}
inline float tree_sum16(__m512 v) {
  return tree_reduce16(v, [](__m128 x, __m128 y) { return _mm_add_ps(x, y); });
}
inline float tree_max16(__m512 v) {  // maxps(x, y) = x > y ? x : y, as the loop
  return tree_reduce16(v, [](__m128 x, __m128 y) { return _mm_max_ps(x, y); });
}

// fast_exp of 16 lanes, step for step.
inline __m512 fast_exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.0f), _mm512_max_ps(_mm512_set1_ps(-87.0f), x));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 magic = _mm512_set1_ps(12582912.0f);
  const __m512 r = _mm512_sub_ps(_mm512_add_ps(t, magic), magic);
  const __m512 f = _mm512_sub_ps(t, r);
  __m512 p = _mm512_set1_ps(1.5403530393381610e-4f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(r), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}
#endif

// tanh(x) through fast_exp: |x| -> (1 - e) / (1 + e) with e = exp(-2|x|), sign restored. The
// absolute error stays below ~3e-7 (the relative error of e, scaled by e <= 1).
inline float fast_tanh(float x) {
  const float e = fast_exp(-2.0f * std::fabs(x));
  return std::copysign((1.0f - e) / (1.0f + e), x);
}

#if defined(__AVX512F__)
inline __m512 fast_tanh16(__m512 x) {
  const __m512 sign = _mm512_set1_ps(-0.0f);
  const __m512 e = fast_exp16(_mm512_mul_ps(_mm512_set1_ps(-2.0f), _mm512_andnot_ps(sign, x)));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 t = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  return _mm512_or_ps(t, _mm512_and_ps(sign, x));
}
#endif

// How raw scores q.k become logits: x = s * pre, then x = cap * tanh(x) when cap > 0 (gemma2's
// soft-capping, with pre = scale / cap); pre = scale otherwise.
struct ScoreMap {
  float pre;
  float cap;
};

constexpr int kRowsPerPass = 8;  // query rows scored together (independent FMA chains)

// Online-softmax update of up to kRowsPerPass query rows (the heads of one token that share
// this kv head) with the keys [first, last] of one tile of 16 keys. kt: [hd][16] K tile,
// vf: [16][hd_v] V tile, ar[r]: [hd_v] accumulators. Each row's arithmetic is the same
// whatever the other rows are.
inline void attend_tile16(const float* const* qr, int n_rows, const float* kt, const float* vf, int hd,
                          int hd_v, int first, int last, ScoreMap sm, float* m, float* l, float* const* ar) {
  constexpr int BS = 16;
  alignas(64) float s[kRowsPerPass][BS] = {};
#if defined(__AVX512F__)
  // One zmm of 16 key scores per row, all rows in registers: 8 independent FMA chains.
  static const float kZeroRow[kMaxHeadDim] = {};
  const float* q[kRowsPerPass];
  for (int r = 0; r < kRowsPerPass; ++r) q[r] = r < n_rows ? qr[r] : kZeroRow;
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int e = 0; e < hd; ++e) {
    const __m512 k = _mm512_load_ps(kt + e * BS);
    a0 = _mm512_fmadd_ps(_mm512_set1_ps(q[0][e]), k, a0);
    a1 = _mm512_fmadd_ps(_mm512_set1_ps(q[1][e]), k, a1);
    a2 = _mm512_fmadd_ps(_mm512_set1_ps(q[2][e]), k, a2);
    a3 = _mm512_fmadd_ps(_mm512_set1_ps(q[3][e]), k, a3);
    a4 = _mm512_fmadd_ps(_mm512_set1_ps(q[4][e]), k, a4);
    a5 = _mm512_fmadd_ps(_mm512_set1_ps(q[5][e]), k, a5);
    a6 = _mm512_fmadd_ps(_mm512_set1_ps(q[6][e]), k, a6);
    a7 = _mm512_fmadd_ps(_mm512_set1_ps(q[7][e]), k, a7);
  }
  _mm512_store_ps(s[0], a0);
  _mm512_store_ps(s[1], a1);
  _mm512_store_ps(s[2], a2);
  _mm512_store_ps(s[3], a3);
  _mm512_store_ps(s[4], a4);
  _mm512_store_ps(s[5], a5);
  _mm512_store_ps(s[6], a6);
  _mm512_store_ps(s[7], a7);
#else
  for (int e = 0; e < hd; ++e) {
    const float* ke = kt + e * BS;
    for (int r = 0; r < kRowsPerPass; ++r) {
      const float qe = r < n_rows ? qr[r][e] : 0.0f;
      for (int j = 0; j < BS; ++j) s[r][j] += qe * ke[j];
    }
  }
#endif
  // Softmax bookkeeping per row: probabilities p (0 outside [first, last]) and the factor
  // `corr` that rescales the row's accumulator to the new running max.
  alignas(64) float p[kRowsPerPass][BS];
  float corr[kRowsPerPass];
#if defined(__AVX512F__)
  const __mmask16 valid = static_cast<__mmask16>((0xFFFFu << first) & (0xFFFFu >> (BS - 1 - last)));
#endif
  for (int r = 0; r < n_rows; ++r) {
#if defined(__AVX512F__)
    // In registers: the scalar loops below round-trip through a small array and stall.
    __m512 sv = _mm512_mul_ps(_mm512_load_ps(s[r]), _mm512_set1_ps(sm.pre));
    if (sm.cap > 0.0f) sv = _mm512_mul_ps(_mm512_set1_ps(sm.cap), fast_tanh16(sv));
    const float smax = std::max(m[r], tree_max16(_mm512_mask_blend_ps(valid, _mm512_set1_ps(-INFINITY), sv)));
    const __m512 e = _mm512_maskz_mov_ps(valid, fast_exp16(_mm512_sub_ps(sv, _mm512_set1_ps(smax))));
    _mm512_store_ps(p[r], e);
    float lsum = tree_sum16(e);
#else
    alignas(64) float t[BS];
    for (int j = 0; j < BS; ++j) {
      s[r][j] *= sm.pre;
      if (sm.cap > 0.0f) s[r][j] = sm.cap * fast_tanh(s[r][j]);
      t[j] = (j >= first && j <= last) ? s[r][j] : -INFINITY;
    }
    const float smax = std::max(m[r], tree_max16(t));
    for (int j = 0; j < BS; ++j) {
      const float e = fast_exp(s[r][j] - smax);
      p[r][j] = (j >= first && j <= last) ? e : 0.0f;
      t[j] = p[r][j];
    }
    float lsum = tree_sum16(t);
#endif
    corr[r] = 1.0f;
    if (m[r] != -INFINITY) {
      corr[r] = fast_exp(m[r] - smax);
      lsum += l[r] * corr[r];
    }
    m[r] = smax;
    l[r] = lsum;
  }
  // acc[r] = acc[r] * corr[r] + sum_j p[r][j] * v[j]: per row, the same operations in the same
  // order on every path.
#if defined(__AVX512F__)
  if (hd_v % 16 == 0) {
    // Four rows x up to four 16-float column chunks live in 16 zmm registers across the keys.
    for (int r0 = 0; r0 < n_rows; r0 += 4) {
      const int nr = std::min(4, n_rows - r0);
      for (int c0 = 0; c0 < hd_v; c0 += 64) {
        const int nc = std::min(4, (hd_v - c0) / 16);
        __m512 a[4][4];
        for (int r = 0; r < 4; ++r)
          for (int cc = 0; cc < 4; ++cc)
            a[r][cc] = (r < nr && cc < nc) ? _mm512_mul_ps(_mm512_loadu_ps(ar[r0 + r] + c0 + 16 * cc),
                                                           _mm512_set1_ps(corr[r0 + r]))
                                           : _mm512_setzero_ps();
        for (int j = first; j <= last; ++j) {
          const float* vr = vf + static_cast<int64_t>(j) * hd_v + c0;
          __m512 v[4];
          for (int cc = 0; cc < 4; ++cc)
            v[cc] = cc < nc ? _mm512_loadu_ps(vr + 16 * cc) : _mm512_setzero_ps();
          for (int r = 0; r < 4; ++r) {
            const __m512 pj = _mm512_set1_ps(p[r0 + r < n_rows ? r0 + r : r0][j]);
            for (int cc = 0; cc < 4; ++cc) a[r][cc] = _mm512_fmadd_ps(pj, v[cc], a[r][cc]);
          }
        }
        for (int r = 0; r < nr; ++r)
          for (int cc = 0; cc < nc; ++cc) _mm512_storeu_ps(ar[r0 + r] + c0 + 16 * cc, a[r][cc]);
      }
    }
    return;
  }
#endif
  for (int r = 0; r < n_rows; ++r) {
    float* a = ar[r];
    if (corr[r] != 1.0f)
      for (int e = 0; e < hd_v; ++e) a[e] *= corr[r];
    for (int j = first; j <= last; ++j) {
      const float pj = p[r][j];
      const float* vr = vf + static_cast<int64_t>(j) * hd_v;
      for (int e = 0; e < hd_v; ++e) a[e] += pj * vr[e];
    }
  }
}

// Any block size: one row at a time, plain loops.
inline void attend_tile_row(const float* qr, const float* kt, const float* vf, int bs, int hd, int hd_v,
                            int first, int last, ScoreMap sm, float& m, float& l, float* ar) {
  alignas(64) float s[kMaxBlockSize];
  alignas(64) float p[kMaxBlockSize];
  for (int j = 0; j < bs; ++j) s[j] = 0.0f;
  for (int e = 0; e < hd; ++e)
    for (int j = 0; j < bs; ++j) s[j] += qr[e] * kt[e * bs + j];
  float smax = m;
  for (int j = first; j <= last; ++j) {
    s[j] *= sm.pre;
    if (sm.cap > 0.0f) s[j] = sm.cap * fast_tanh(s[j]);
    smax = std::max(smax, s[j]);
  }
  float lsum = 0.0f;
  for (int j = first; j <= last; ++j) lsum += (p[j] = fast_exp(s[j] - smax));
  if (m != -INFINITY) {
    const float corr = fast_exp(m - smax);
    lsum += l * corr;
    for (int e = 0; e < hd_v; ++e) ar[e] *= corr;
  }
  for (int j = first; j <= last; ++j)
    for (int e = 0; e < hd_v; ++e) ar[e] += p[j] * vf[static_cast<int64_t>(j) * hd_v + e];
  m = smax;
  l = lsum;
}

template <typename KvT>
void load_tile(const KvT* src, float* dst, int64_t n) {
  if constexpr (sizeof(KvT) == 2)
    convert_f16_to_f32(src, dst, n);
  else
    std::copy(src, src + n, dst);
}

// A 64-byte aligned float buffer that only grows.
class AlignedFloats {
 public:
  ~AlignedFloats() { std::free(data_); }
  float* get(size_t n) {
    if (n > cap_) {
      std::free(data_);
      cap_ = (n + 15) / 16 * 16;
      data_ = static_cast<float*>(std::aligned_alloc(64, cap_ * sizeof(float)));
      if (!data_) {
        cap_ = 0;
        throw std::bad_alloc();
      }
    }
    return data_;
  }

 private:
  float* data_ = nullptr;
  size_t cap_ = 0;
};

// Per-thread scratch of attention_chunk: with MLA's shapes (576-wide keys, 128 rows) the tiles
// and accumulators are far too large for a thread's stack.
struct AttentionScratch {
  AlignedFloats kt, vf, acc, m, l;
};

// The first and last positions any token of the chunk attends to.
inline void chunk_key_range(const AttentionChunk& c, int32_t& lo_min, int32_t& hi_max) {
  lo_min = INT32_MAX, hi_max = -1;
  for (int t = 0; t < c.n_q; ++t) {
    const int32_t lo = c.sliding_window > 0 ? std::max(0, c.pos[t] - c.sliding_window + 1) : 0;
    lo_min = std::min(lo_min, lo);
    hi_max = std::max(hi_max, c.pos[t]);
  }
}

// Flash-attention style: one pass over the sequence's key blocks with a running max/sum per
// query row, so no score matrix larger than one block tile is ever materialized. Each K tile is
// converted once per chunk to f32 (the cache keeps K transposed, [head_dim][block]) so a row's
// scores are head_dim vector FMAs across the block's keys; each row's arithmetic depends only on
// its own position, never on the other rows of the chunk (batch invariance). MLA (v_in_k): the V
// tile is the first hd_v rows of the K tile, transposed. Sinks start each row's running max at
// its sink logit with a sum of 1 (exp(sink - sink)) and nothing accumulated: the sink joins the
// denominator and contributes no value.
template <typename KvT>
void attention_chunk(const AttentionChunk& c, const KvLayerView& kv) {
  const int hd = kv.head_dim;
  const int hd_v = kv.head_dim_v > 0 ? kv.head_dim_v : hd;
  const int bs = kv.block_size;
  const int rows = c.n_q * c.group;
  thread_local AttentionScratch scratch;
  float* kt = scratch.kt.get(static_cast<size_t>(hd) * bs);    // K tile, transposed in the cache: [hd][bs]
  float* vf = scratch.vf.get(static_cast<size_t>(bs) * hd_v);  // V tile [bs][hd_v]
  float* acc = scratch.acc.get(static_cast<size_t>(rows) * hd_v);  // [rows][hd_v]
  float* m = scratch.m.get(static_cast<size_t>(rows));             // [rows] running max
  float* l = scratch.l.get(static_cast<size_t>(rows));             // [rows] running sum
  for (int r = 0; r < rows; ++r) {
    m[r] = c.sinks ? c.sinks[r % c.group] : -INFINITY;
    l[r] = c.sinks ? 1.0f : 0.0f;
  }
  std::fill(acc, acc + static_cast<int64_t>(rows) * hd_v, 0.0f);
  const ScoreMap sm = c.softcap > 0.0f ? ScoreMap{c.scale / c.softcap, c.softcap} : ScoreMap{c.scale, 0.0f};

  int32_t lo_min, hi_max;
  chunk_key_range(c, lo_min, hi_max);
  const size_t k_tile_elems = static_cast<size_t>(bs) * hd;  // one (block, head) tile
  const size_t v_tile_elems = static_cast<size_t>(bs) * hd_v;
  for (int32_t bi = lo_min / bs; bi <= hi_max / bs; ++bi) {
    const size_t tile = static_cast<size_t>(c.block_table[bi]) * kv.n_head_kv + c.kv_head;
    if (bi < hi_max / bs) {
      // The next tiles live in other blocks, anywhere in the pool: fetch them while this one runs.
      const size_t next = static_cast<size_t>(c.block_table[bi + 1]) * kv.n_head_kv + c.kv_head;
      const char* nk = reinterpret_cast<const char*>(static_cast<const KvT*>(kv.k) + next * k_tile_elems);
      for (size_t off = 0; off < k_tile_elems * sizeof(KvT); off += 64) __builtin_prefetch(nk + off);
      if (!kv.v_in_k) {
        const char* nv = reinterpret_cast<const char*>(static_cast<const KvT*>(kv.v) + next * v_tile_elems);
        for (size_t off = 0; off < v_tile_elems * sizeof(KvT); off += 64) __builtin_prefetch(nv + off);
      }
    }
    load_tile(static_cast<const KvT*>(kv.k) + tile * k_tile_elems, kt, static_cast<int64_t>(k_tile_elems));
    if (kv.v_in_k) {
      for (int j = 0; j < bs; ++j)
        for (int e = 0; e < hd_v; ++e)
          vf[static_cast<size_t>(j) * hd_v + e] = kt[static_cast<size_t>(e) * bs + j];
    } else {
      load_tile(static_cast<const KvT*>(kv.v) + tile * v_tile_elems, vf, static_cast<int64_t>(v_tile_elems));
    }
    const int32_t base = bi * bs;
    for (int t = 0; t < c.n_q; ++t) {
      const int32_t lo = c.sliding_window > 0 ? std::max(0, c.pos[t] - c.sliding_window + 1) : 0;
      const int32_t first = std::max(lo, base) - base;
      const int32_t last = std::min(c.pos[t], base + bs - 1) - base;
      if (first > last) continue;
      for (int h0 = 0; h0 < c.group; h0 += kRowsPerPass) {
        const int n_rows = std::min(kRowsPerPass, c.group - h0);
        const float* qr[kRowsPerPass];
        float* ar[kRowsPerPass];
        for (int i = 0; i < n_rows; ++i) {
          qr[i] = c.q + t * c.q_stride + static_cast<int64_t>(h0 + i) * hd;
          ar[i] = acc + static_cast<int64_t>(t * c.group + h0 + i) * hd_v;
        }
        const int r0 = t * c.group + h0;
        if (bs == 16) {
          attend_tile16(qr, n_rows, kt, vf, hd, hd_v, first, last, sm, m + r0, l + r0, ar);
        } else {
          for (int i = 0; i < n_rows; ++i)
            attend_tile_row(qr[i], kt, vf, bs, hd, hd_v, first, last, sm, m[r0 + i], l[r0 + i], ar[i]);
        }
      }
    }
  }
  for (int t = 0; t < c.n_q; ++t)
    for (int h = 0; h < c.group; ++h) {
      const int r = t * c.group + h;
      float* o = c.out + t * c.out_stride + static_cast<int64_t>(h) * hd_v;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      for (int e = 0; e < hd_v; ++e) o[e] = acc[static_cast<int64_t>(r) * hd_v + e] * inv;
    }
}

void op_attention_f16(const AttentionChunk& c, const KvLayerView& kv) {
  attention_chunk<uint16_t>(c, kv);
}
void op_attention_f32(const AttentionChunk& c, const KvLayerView& kv) {
  attention_chunk<float>(c, kv);
}

constexpr OpKernels kOpKernels = {
    op_rms_norm_row, op_swiglu, op_add, op_rope_row, op_f32_to_f16, op_attention_f16, op_attention_f32,
};

}  // namespace
}  // namespace strata::cpu
