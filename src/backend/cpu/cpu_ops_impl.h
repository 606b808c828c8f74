// Portable source of the CPU op kernels, compiled once per ISA level (see cpu_ops.h).
// Everything here has internal linkage: each including translation unit gets its own copy,
// vectorized for the flags of that file. Loops are written in fixed-width lanes so the
// compiler can vectorize the float reductions without -ffast-math.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "backend/cpu/cpu_ops.h"
#include "core/fp16.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace strata::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kMaxRows = 64;  // query rows (tokens x heads) of one attention chunk

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

// Flash-attention style: one pass over the sequence's key blocks with a running max/sum per
// query row, so no score matrix larger than one block tile is ever materialized. Each K tile is
// converted once per chunk into a transposed f32 copy [head_dim][block] so a row's scores are
// head_dim vector FMAs across the block's keys; each row's arithmetic depends only on its own
// position, never on the other rows of the chunk (batch invariance).
template <typename KvT>
void load_tile(const KvT* src, float* dst, int64_t n) {
  if constexpr (sizeof(KvT) == 2) convert_f16_to_f32(src, dst, n);
  else std::copy(src, src + n, dst);
}

template <typename KvT>
void attention_chunk(const AttentionChunk& c, const KvLayerView& kv) {
  const int hd = kv.head_dim;
  const int bs = kv.block_size;
  const int rows = c.n_q * c.group;
  alignas(64) float kf[kMaxBlockSize * kMaxHeadDim];  // K tile [bs][hd]
  alignas(64) float kt[kMaxHeadDim * kMaxBlockSize];  // K tile transposed [hd][bs]
  alignas(64) float vf[kMaxBlockSize * kMaxHeadDim];  // V tile [bs][hd]
  alignas(64) float acc[kMaxRows * kMaxHeadDim];      // [rows][hd]
  alignas(64) float s[kMaxBlockSize];
  float m[kMaxRows], l[kMaxRows];
  std::fill(m, m + rows, -INFINITY);
  std::fill(l, l + rows, 0.0f);
  std::fill(acc, acc + static_cast<int64_t>(rows) * hd, 0.0f);

  int32_t lo_min = INT32_MAX, hi_max = -1;
  for (int t = 0; t < c.n_q; ++t) {
    const int32_t lo = c.sliding_window > 0 ? std::max(0, c.pos[t] - c.sliding_window + 1) : 0;
    lo_min = std::min(lo_min, lo);
    hi_max = std::max(hi_max, c.pos[t]);
  }
  const size_t tile_elems = static_cast<size_t>(bs) * hd;  // one (block, head) tile
  for (int32_t bi = lo_min / bs; bi <= hi_max / bs; ++bi) {
    const size_t tile = (static_cast<size_t>(c.block_table[bi]) * kv.n_head_kv + c.kv_head) * tile_elems;
    load_tile(static_cast<const KvT*>(kv.k) + tile, kf, static_cast<int64_t>(tile_elems));
    load_tile(static_cast<const KvT*>(kv.v) + tile, vf, static_cast<int64_t>(tile_elems));
    for (int j = 0; j < bs; ++j)
      for (int e = 0; e < hd; ++e) kt[e * bs + j] = kf[j * hd + e];
    const int32_t base = bi * bs;
    for (int t = 0; t < c.n_q; ++t) {
      const int32_t lo = c.sliding_window > 0 ? std::max(0, c.pos[t] - c.sliding_window + 1) : 0;
      const int32_t first = std::max(lo, base) - base;
      const int32_t last = std::min(c.pos[t], base + bs - 1) - base;
      if (first > last) continue;
      for (int h = 0; h < c.group; ++h) {
        const int r = t * c.group + h;
        const float* qr = c.q + t * c.q_stride + static_cast<int64_t>(h) * hd;
        for (int j = 0; j < bs; ++j) s[j] = 0.0f;
        for (int e = 0; e < hd; ++e) {
          const float qe = qr[e];
          const float* ke = kt + e * bs;
          for (int j = 0; j < bs; ++j) s[j] += qe * ke[j];
        }
        float smax = m[r];
        for (int j = first; j <= last; ++j) {
          s[j] *= c.scale;
          smax = std::max(smax, s[j]);
        }
        float* ar = acc + static_cast<int64_t>(r) * hd;
        float lsum = 0.0f;
        if (m[r] != -INFINITY) {
          const float corr = fast_exp(m[r] - smax);
          lsum = l[r] * corr;
          if (corr != 1.0f)
            for (int e = 0; e < hd; ++e) ar[e] *= corr;
        }
        for (int j = first; j <= last; ++j) {
          const float p = fast_exp(s[j] - smax);
          lsum += p;
          const float* vr = vf + static_cast<int64_t>(j) * hd;
          for (int e = 0; e < hd; ++e) ar[e] += p * vr[e];
        }
        m[r] = smax;
        l[r] = lsum;
      }
    }
  }
  for (int t = 0; t < c.n_q; ++t)
    for (int h = 0; h < c.group; ++h) {
      const int r = t * c.group + h;
      float* o = c.out + t * c.q_stride + static_cast<int64_t>(h) * hd;
      const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
      for (int e = 0; e < hd; ++e) o[e] = acc[static_cast<int64_t>(r) * hd + e] * inv;
    }
}

void op_attention_f16(const AttentionChunk& c, const KvLayerView& kv) { attention_chunk<uint16_t>(c, kv); }
void op_attention_f32(const AttentionChunk& c, const KvLayerView& kv) { attention_chunk<float>(c, kv); }

constexpr OpKernels kOpKernels = {
    op_rms_norm_row, op_swiglu, op_add, op_rope_row, op_f32_to_f16, op_attention_f16, op_attention_f32,
};

}  // namespace
}  // namespace strata::cpu
