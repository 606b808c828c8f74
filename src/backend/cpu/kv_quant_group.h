// Rounding helpers and the error-minimising symmetric group quantizer shared by the KV codecs
// (kv_codec_impl.h) and the query preparation of the interleaved key tiles (kv_key_tile_impl.h).
// Compiled once per ISA level; internal linkage only. No a * b + c forms that a compiler could
// contract into an FMA on one level and not on another: every level writes the same bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/kernel_decls.h"
#include "core/fp16.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// round(v) clamped to [lo, hi]; NaN gives lo.
inline int level(float v, int lo, int hi) {
  v = std::max(static_cast<float>(lo), v);  // max(lo, NaN) = lo
  v = std::min(static_cast<float>(hi), v);
  return static_cast<int>(std::nearbyint(v));
}

// The element of largest magnitude, with its sign (NaN ignored, +-inf kept as the largest float).
inline float signed_amax(const float* x, int n) {
  float amax = 0.0f, v = 0.0f;
  for (int j = 0; j < n; ++j) {
    const float a = std::fabs(x[j]);
    if (a > amax) amax = a, v = x[j];
  }
  return std::isfinite(v) ? v : std::copysign(3.0e38f, v);
}

// Squared error of rounding x: [n] to levels [lo, hi] of scale d, computed so that no level's
// result depends on FMA contraction: d * L is exact in double, the difference is rounded once to
// float, and its square is exact in double.
inline double rounding_error(const float* x, int n, float d, int lo, int hi) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  double err = 0.0;
  for (int j = 0; j < n; ++j) {
    const float e =
        static_cast<float>(static_cast<double>(x[j]) - static_cast<double>(d) * level(x[j] * id, lo, hi));
    err += static_cast<double>(e) * e;
  }
  return err;
}

// The fp16 scale of least squared error among d = v / -(top - k / 8), k = 0 .. max_eighths, v the
// element of largest magnitude, levels in [lo, hi]: the largest element maps to the negative side
// (where a two's-complement range has its extra level), and a larger k clips it by less than a
// step while the rest round on a different grid. x holds n elements; a group's zero padding has no
// rounding error at any scale and is left out.
inline fp16_t min_error_scale(const float* x, int n, int top, int lo, int hi, int max_eighths) {
  const float v = signed_amax(x, n);
  fp16_t dh = 0;
  double best = INFINITY;
  for (int k = 0; k <= max_eighths; ++k) {
    const float d = std::max(-65504.0f, std::min(65504.0f, v / -(static_cast<float>(top) - 0.125f * k)));
    const fp16_t h = f32_to_fp16(d);
    const double err = rounding_error(x, n, fp16_to_f32(h), lo, hi);
    if (err < best) best = err, dh = h;
  }
  return dh;
}

// llama.cpp's Q8_0 of one group x: [32] (d = amax / 127, the level's SIMD activation quantizer).
inline void quantize_q8_0_group_amax(const float* x, uint8_t* blk) {
#if defined(__AVX512F__)
  quantize_row_q8_0_avx512(x, blk, kQK);
#elif defined(__AVX2__)
  quantize_row_q8_0_avx2(x, blk, kQK);
#else
  quantize_row_q8_0_scalar(x, blk, kQK);
#endif
}

// Groups of at most this many elements before their zero padding get the searched scale; wider
// ones keep amax / 127: the search costs 33-41 roundings of every element, which on 64-wide heads
// (the 1.1B shape: 512 query rows a layer at 16 x 4096 decode) cost more than the scores, and its
// gain shrinks with the width (0.78x the squared error at 32 elements against 0.56x at 8).
constexpr int kMaxSearchedElements = 16;

// One Q8_0 group (BlockQ8_0: fp16 d, int8 qs[32]) of x: [32] f32. A group of n <= 16 elements
// before its trailing zeros (a head of 8 or 16 padded to 32) takes the scale of least squared
// error among the 41 with 123 <= |v| / d <= 128 (llama.cpp's amax / 127 is one of them) and levels
// in [lo, 127]: keys use lo = -128; queries lo = -127 (and |v| / d <= 127, 33 scales), as the AVX2
// scores multiply a query level by the key's sign. Few elements to round make the choice matter:
// for 8 Gaussian elements the best of the 41 grids has about 0.56x the expected squared error of
// amax / 127. Wider groups are amax / 127 (quantize_q8_0_group_amax).
inline void quantize_q8_0_group_kv(const float* x, uint8_t* blk, int lo = -128) {
  int n = kQK;  // trailing zeros (a narrow head's padding) round to 0 at any scale: not searched
  while (n > 0 && x[n - 1] == 0.0f) --n;
  if (n > kMaxSearchedElements) return quantize_q8_0_group_amax(x, blk);
  const fp16_t dh =
      lo == -128 ? min_error_scale(x, n, 128, -128, 127, 40) : min_error_scale(x, n, 127, lo, 127, 32);
  const float d = fp16_to_f32(dh), id = d != 0.0f ? 1.0f / d : 0.0f;
  std::memcpy(blk, &dh, 2);
  for (int j = 0; j < kQK; ++j)
    blk[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j < n ? level(x[j] * id, lo, 127) : 0));
}

}  // namespace
}  // namespace strata::cpu
