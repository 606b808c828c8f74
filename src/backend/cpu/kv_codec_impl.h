// Portable source of the KV codecs (kv_codec.h), compiled once per ISA level. Everything here has
// internal linkage; the quantizers avoid a * b + c forms that a compiler could contract into an
// FMA on one level and not on another, so every level writes the same bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/cpu/block_access.h"
#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kv_codec.h"
#include "backend/cpu/kv_quant_group.h"
#include "backend/kv_layout.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace strata::cpu {
namespace {

constexpr int kMaxKiviTokens = 32;  // the largest block size (KIVI keys: one group per block)
constexpr int kMaxGroups = 18;      // 32-element groups of the widest head (576)

inline float finite_or_zero(float x) {
  return std::isfinite(x) ? x : 0.0f;
}

inline void min_max(const float* x, int n, float* lo, float* hi) {
  float mn = INFINITY, mx = -INFINITY;
  for (int j = 0; j < n; ++j) {
    if (x[j] < mn) mn = x[j];
    if (x[j] > mx) mx = x[j];
  }
  if (mn > mx) mn = mx = 0.0f;                        // all NaN
  *lo = std::max(-65504.0f, std::min(65504.0f, mn));  // fp16 range of the stored min
  *hi = std::max(*lo, std::min(65504.0f, mx));
}

// ---- symmetric groups: Q4_0, Q5_0 (Q8_0: kv_quant_group.h) ----------------------------

// The scale maps the element of largest magnitude v to level -(kHalf - delta) for delta in
// {0, 1/8, ..., 1}; the scale (in fp16) of least squared error wins. delta = 0 is round-to-nearest
// with d = v / -kHalf; a larger delta clips that element by less than a step and rounds the rest
// on a finer grid, which is better for the bell-shaped rows the rotation makes.
template <int kBits>
void quantize_signed_group(const float* x, uint8_t* blk) {
  constexpr int kHalf = 1 << (kBits - 1);
  const fp16_t dh = min_error_scale(x, kQK, kHalf, -kHalf, kHalf - 1, 8);
  const float id = fp16_to_f32(dh) != 0.0f ? 1.0f / fp16_to_f32(dh) : 0.0f;
  uint8_t q[kQK];
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>(level(x[j] * id, -kHalf, kHalf - 1) + kHalf);
  std::memcpy(blk, &dh, 2);
  uint8_t* qs = blk + 2 + (kBits == 5 ? 4 : 0);
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
  if constexpr (kBits == 5) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    std::memcpy(blk + 2, &qh, 4);
  }
}

// Q4_1 / Q5_1 / KIVI4 / KIVI2: x = d * q + m with q in [0, 2^bits - 1] over n elements.
template <int kBits>
void quantize_affine(const float* x, int n, fp16_t* dh, fp16_t* mh, uint8_t* q) {
  constexpr int kMax = (1 << kBits) - 1;
  float lo, hi;
  min_max(x, n, &lo, &hi);
  *dh = f32_to_fp16((hi - lo) / kMax);
  *mh = f32_to_fp16(lo);
  const float d = fp16_to_f32(*dh), m = fp16_to_f32(*mh);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < n; ++j) q[j] = static_cast<uint8_t>(level((x[j] - m) * id, 0, kMax));
}

template <int kBits>
void quantize_affine_group(const float* x, uint8_t* blk) {
  fp16_t d, m;
  uint8_t q[kQK];
  quantize_affine<kBits>(x, kQK, &d, &m, q);
  std::memcpy(blk, &d, 2);
  std::memcpy(blk + 2, &m, 2);
  if constexpr (kBits == 2) {
    for (int j = 0; j < kQK / 4; ++j)
      blk[4 + j] =
          static_cast<uint8_t>(q[4 * j] | (q[4 * j + 1] << 2) | (q[4 * j + 2] << 4) | (q[4 * j + 3] << 6));
    return;
  }
  uint8_t* qs = blk + 4 + (kBits == 5 ? 4 : 0);
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + kQK / 2] & 0xF) << 4));
  if constexpr (kBits == 5) {
    uint32_t qh = 0;
    for (int j = 0; j < kQK; ++j) qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    std::memcpy(blk + 4, &qh, 4);
  }
}

// ---- IQ4_NL -----------------------------------------------------------------------------

// Index of the grid level nearest to v (ties to the lower level): how many midpoints lie below.
inline int iq4nl_index(float v) {
  int i = 0;
  for (int k = 0; k < 15; ++k) i += v > 0.5f * (kIq4nlValues[k] + kIq4nlValues[k + 1]) ? 1 : 0;
  return i;
}

void quantize_iq4nl_group(const float* xin, uint8_t* blk) {
  float x[kQK];
  for (int j = 0; j < kQK; ++j) x[j] = std::max(-3.0e38f, std::min(3.0e38f, finite_or_zero(xin[j])));
  const float v = signed_amax(x, kQK);
  float best_d = 0.0f;
  double best_err = INFINITY;
  for (int k = -7; k <= 7 && v != 0.0f; ++k) {
    const float id = static_cast<float>(-127 + k) / v;
    double sxg = 0, sgg = 0;
    for (int j = 0; j < kQK; ++j) {
      const double g = kIq4nlValues[iq4nl_index(x[j] * id)];
      sxg += x[j] * g;
      sgg += g * g;
    }
    const double d = sgg > 0 ? sxg / sgg : 0.0;
    const double err = -sxg * d;  // sum (x - d g)^2 minus the constant sum x^2
    if (err < best_err) best_err = err, best_d = static_cast<float>(d);
  }
  const fp16_t dh = f32_to_fp16(std::max(-65504.0f, std::min(65504.0f, best_d)));
  const float d = fp16_to_f32(dh), id = d != 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(blk, &dh, 2);
  for (int j = 0; j < kQK / 2; ++j)
    blk[2 + j] = static_cast<uint8_t>(iq4nl_index(x[j] * id) | (iq4nl_index(x[j + kQK / 2] * id) << 4));
}

// ---- rows -------------------------------------------------------------------------------

void from_f32(KvType type, const float* x, void* dst, int64_t n) {
#if defined(__AVX512F__)
  if (type == KvType::F16) return quantize_row_f16_avx512(x, dst, n);
  if (type == KvType::BF16) return quantize_row_bf16_avx512(x, dst, n);
#elif defined(__AVX2__)
  if (type == KvType::F16) return quantize_row_f16_avx2(x, dst, n);
  if (type == KvType::BF16) return quantize_row_bf16_avx2(x, dst, n);
#else
  if (type == KvType::F16) return quantize_row_f16_scalar(x, dst, n);
  if (type == KvType::BF16) return quantize_row_bf16_scalar(x, dst, n);
#endif
  std::memcpy(dst, x, static_cast<size_t>(n) * sizeof(float));
}

void to_f32(KvType type, const void* src, float* y, int64_t n) {
  if (type == KvType::F32) {
    std::memcpy(y, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const auto* h = static_cast<const uint8_t*>(src);
  int64_t i = 0;
  if (type == KvType::BF16) {
    for (; i < n; ++i) {
      uint16_t b;
      std::memcpy(&b, h + 2 * i, 2);
      y[i] = bf16_to_f32(b);
    }
    return;
  }
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + 2 * i))));
#elif defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 2 * i))));
#endif
  for (; i < n; ++i) y[i] = load_half(h + 2 * i);
}

void quantize_row(KvType type, const float* x, int32_t dim, void* dst) {
  if (kv_type_is_float(type)) return from_f32(type, x, dst, dim);
  const int32_t padded = (dim + kQK - 1) / kQK * kQK;
  float buf[kQK];
  auto* out = static_cast<uint8_t*>(dst);
  const KvTileLayout layout = kv_tile_layout(type, false, dim, 1);
  const size_t group = layout.row_bytes / static_cast<size_t>(padded / kQK);
  for (int32_t g = 0; g < padded; g += kQK, out += group) {
    const float* xg = x + g;
    if (g + kQK > dim) {  // the last group, padded with zeros
      std::fill(buf, buf + kQK, 0.0f);
      std::copy(x + g, x + dim, buf);
      xg = buf;
    }
    switch (type) {
      case KvType::Q8_0:
        quantize_q8_0_group_kv(xg, out);
        break;
      case KvType::Q4_0:
        quantize_signed_group<4>(xg, out);
        break;
      case KvType::Q5_0:
        quantize_signed_group<5>(xg, out);
        break;
      case KvType::Q4_1:
      case KvType::KIVI4:
        quantize_affine_group<4>(xg, out);
        break;
      case KvType::Q5_1:
        quantize_affine_group<5>(xg, out);
        break;
      case KvType::KIVI2:
        quantize_affine_group<2>(xg, out);
        break;
      case KvType::IQ4_NL:
        quantize_iq4nl_group(xg, out);
        break;
      default:
        break;
    }
  }
}

// One group of 32 -> y: [32].
void dequantize_group(KvType type, const uint8_t* blk, float* y) {
  const float d = load_half(blk);
  switch (type) {
    case KvType::Q8_0:
      for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(static_cast<int8_t>(blk[2 + j]));
      return;
    case KvType::Q4_0:
    case KvType::IQ4_NL:
      for (int j = 0; j < kQK / 2; ++j) {
        const int lo = blk[2 + j] & 0xF, hi = blk[2 + j] >> 4;
        y[j] = d * static_cast<float>(type == KvType::Q4_0 ? lo - 8 : kIq4nlValues[lo]);
        y[j + kQK / 2] = d * static_cast<float>(type == KvType::Q4_0 ? hi - 8 : kIq4nlValues[hi]);
      }
      return;
    case KvType::Q5_0:
    case KvType::Q5_1: {
      const bool affine = type == KvType::Q5_1;
      const uint32_t qh = load_u32(blk + (affine ? 4 : 2));
      const uint8_t* qs = blk + (affine ? 8 : 6);
      const float m = affine ? load_half(blk + 2) : 0.0f;
      for (int j = 0; j < kQK; ++j) {
        const int q = ((j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4) | (((qh >> j) & 1) << 4)) - (affine ? 0 : 16);
        const float dq = d * static_cast<float>(q);
        y[j] = dq + m;
      }
      return;
    }
    case KvType::Q4_1:
    case KvType::KIVI4: {
      const float m = load_half(blk + 2);
      for (int j = 0; j < kQK / 2; ++j) {
        const float lo = d * static_cast<float>(blk[4 + j] & 0xF),
                    hi = d * static_cast<float>(blk[4 + j] >> 4);
        y[j] = lo + m;
        y[j + kQK / 2] = hi + m;
      }
      return;
    }
    case KvType::KIVI2: {
      const float m = load_half(blk + 2);
      for (int j = 0; j < kQK; ++j) {
        const float dq = d * static_cast<float>((blk[4 + j / 4] >> (2 * (j % 4))) & 3);
        y[j] = dq + m;
      }
      return;
    }
    default:
      return;
  }
}

#if defined(__AVX512F__) || defined(__AVX2__)
// y[0..32) = d * q of one Q8_0 (signed bytes) or Q4_0 (nibbles - 8) group, in vector registers.
inline void dequantize_group_simd(bool q8, const uint8_t* blk, float* y) {
  const float d = load_half(blk);
  __m128i b[2];
  if (q8) {
    b[0] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
    b[1] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18));
  } else {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)), m = _mm_set1_epi8(0x0F);
    b[0] = _mm_sub_epi8(_mm_and_si128(x, m), _mm_set1_epi8(8));
    b[1] = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(x, 4), m), _mm_set1_epi8(8));
  }
#if defined(__AVX512F__)
  const __m512 vd = _mm512_set1_ps(d);
  for (int h = 0; h < 2; ++h)
    _mm512_storeu_ps(y + 16 * h, _mm512_mul_ps(vd, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b[h]))));
#else
  const __m256 vd = _mm256_set1_ps(d);
  for (int h = 0; h < 2; ++h) {
    _mm256_storeu_ps(y + 16 * h, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b[h]))));
    _mm256_storeu_ps(y + 16 * h + 8,
                     _mm256_mul_ps(vd, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(b[h], 8)))));
  }
#endif
}
#endif

// n_rows token rows of `type`, row_bytes apart -> y: [n_rows][y_stride] f32, the first dim
// elements of each row (dim <= y_stride).
void dequantize_rows(KvType type, const void* src, size_t row_bytes, int32_t dim, int32_t n_rows, float* y,
                     int32_t y_stride) {
  const auto* in = static_cast<const uint8_t*>(src);
  if (kv_type_is_float(type)) {
    for (int32_t r = 0; r < n_rows; ++r)
      to_f32(type, in + r * row_bytes, y + static_cast<int64_t>(r) * y_stride, dim);
    return;
  }
  const int32_t padded = (dim + kQK - 1) / kQK * kQK;
  const size_t group = row_bytes / static_cast<size_t>(padded / kQK);
  float tail[kQK];
  for (int32_t r = 0; r < n_rows; ++r) {
    float* yr = y + static_cast<int64_t>(r) * y_stride;
    for (int32_t g = 0; g < padded; g += kQK) {
      const uint8_t* blk = in + r * row_bytes + static_cast<size_t>(g / kQK) * group;
      float* dst = g + kQK <= y_stride ? yr + g : tail;
#if defined(__AVX512F__) || defined(__AVX2__)
      if (type == KvType::Q8_0 || type == KvType::Q4_0)
        dequantize_group_simd(type == KvType::Q8_0, blk, dst);
      else
#endif
        dequantize_group(type, blk, dst);
      if (dst == tail) std::copy(tail, tail + std::min(kQK, dim - g), yr + g);
    }
  }
}

void dequantize_row(KvType type, const void* src, int32_t dim, float* y) {
  if (kv_type_is_float(type)) return to_f32(type, src, y, dim);
  const KvTileLayout layout = kv_tile_layout(type, false, dim, 1);
  const size_t group = layout.row_bytes / static_cast<size_t>(layout.padded_dim / kQK);
  const auto* in = static_cast<const uint8_t*>(src);
  for (int32_t g = 0; g < layout.padded_dim; g += kQK, in += group) dequantize_group(type, in, y + g);
}

// ---- interleaved keys ------------------------------------------------------------------

void store_interleaved(KvType type, const float* x, int32_t dim, int32_t bs, int32_t t, void* tile) {
  const int32_t n_groups = (dim + kQK - 1) / kQK;
  const bool q8 = type == KvType::Q8_0;
  uint8_t row[kMaxGroups * sizeof(BlockQ8_0)];
  quantize_row(type, x, dim, row);  // GGUF blocks of the row, then scattered
  auto* out = static_cast<uint8_t*>(tile);
  const size_t group = q8 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
  for (int32_t g = 0; g < n_groups; ++g) {
    const uint8_t* blk = row + g * group;
    std::memcpy(out + kv_interleaved_scale(bs, g, t), blk, 2);
    if (q8) {
      for (int c = 0; c < 8; ++c)
        std::memcpy(out + kv_interleaved_quants(n_groups, bs, g, c, t, true), blk + 2 + 4 * c, 4);
      continue;
    }
    auto level = [&](int e) { return e < 16 ? blk[2 + e] & 0xF : blk[2 + e - 16] >> 4; };  // q + 8
    for (int c = 0; c < 4; ++c)
      for (int i = 0; i < 4; ++i)
        out[kv_interleaved_quants(n_groups, bs, g, c, t, false) + i] =
            static_cast<uint8_t>(level(8 * c + i) | (level(8 * c + 4 + i) << 4));
  }
}

void load_interleaved(KvType type, const void* tile, int32_t dim, int32_t bs, int32_t t, float* y) {
  const int32_t n_groups = (dim + kQK - 1) / kQK;
  const bool q8 = type == KvType::Q8_0;
  const auto* in = static_cast<const uint8_t*>(tile);
  for (int32_t g = 0; g < n_groups; ++g) {
    const float d = load_half(in + kv_interleaved_scale(bs, g, t));
    for (int e = 0; e < kQK; ++e) {
      int q;
      if (q8) {
        q = static_cast<int8_t>(in[kv_interleaved_quants(n_groups, bs, g, e / 4, t, true) + e % 4]);
      } else {
        const uint8_t b = in[kv_interleaved_quants(n_groups, bs, g, e / 8, t, false) + e % 4];
        q = ((e % 8) < 4 ? (b & 0xF) : (b >> 4)) - 8;
      }
      y[g * kQK + e] = d * static_cast<float>(q);
    }
  }
}

// ---- KIVI channels ----------------------------------------------------------------------

void quantize_channel(int bits, const float* x, int32_t n, void* dst) {
  auto* out = static_cast<uint8_t*>(dst);
  fp16_t d, m;
  uint8_t q[kMaxKiviTokens];
  if (bits == 2)
    quantize_affine<2>(x, n, &d, &m, q);
  else
    quantize_affine<4>(x, n, &d, &m, q);
  std::memcpy(out, &d, 2);
  std::memcpy(out + 2, &m, 2);
  const int per_byte = 8 / bits;
  std::memset(out + kKiviChannelHeader, 0, static_cast<size_t>(n) * bits / 8);
  for (int t = 0; t < n; ++t)
    out[kKiviChannelHeader + t / per_byte] |= static_cast<uint8_t>(q[t] << (bits * (t % per_byte)));
}

void dequantize_channel(int bits, const void* src, int32_t n, float* y) {
  const auto* in = static_cast<const uint8_t*>(src);
  const float d = load_half(in), m = load_half(in + 2);
  const int per_byte = 8 / bits, mask = (1 << bits) - 1;
  for (int t = 0; t < n; ++t) {
    const float dq =
        d * static_cast<float>((in[kKiviChannelHeader + t / per_byte] >> (bits * (t % per_byte))) & mask);
    y[t] = dq + m;
  }
}

// ---- rotation ---------------------------------------------------------------------------

void rotate(float* x, int32_t dim) {
  for (int32_t i = 0; i < dim; ++i) x[i] *= kv_rotation_sign(i);
  for (int32_t off = 0; off < dim;) {
    int32_t n = 1;
    while (n * 2 <= dim - off) n *= 2;
    float* v = x + off;
    for (int32_t h = 1; h < n; h *= 2)
      for (int32_t i = 0; i < n; i += 2 * h)
        for (int32_t j = i; j < i + h; ++j) {
          const float a = v[j], b = v[j + h];
          v[j] = a + b;
          v[j + h] = a - b;
        }
    const float s = 1.0f / std::sqrt(static_cast<float>(n));
    for (int32_t j = 0; j < n; ++j) v[j] *= s;
    off += n;
  }
}

constexpr KvCodecKernels kKvCodec = {
    quantize_row,     dequantize_row,     dequantize_rows,   from_f32,         to_f32,
    quantize_channel, dequantize_channel, store_interleaved, load_interleaved, rotate};

}  // namespace
}  // namespace strata::cpu
