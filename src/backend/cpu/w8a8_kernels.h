// The W8A8 GEMM kernels: int8 weights with one scale per output channel times int8 activations
// with one scale per token (dynamic) or per tensor (static, from calibration).
//
// Because every scale covers a whole row, a kernel accumulates the row's full dot product in
// int32 and scales it once at the end: no per-block epilogue in the inner loop (the block scales
// of Q8_0 cost the interleaved kernels ~30% of the vpdpbusd peak).
//
// Weight layout (the same at every ISA level): rows are taken 16 at a time (a group); the inner
// dimension is padded with zeros to kp (a multiple of 4); within a group, the 4 quants k..k+3 of
// the 16 rows are 64 consecutive bytes:
//   group[(k / 4) * 64 + r * 4 + (k % 4)] = q[r][k] + 128   (u8; q in [-127, 127])
// so one 64-byte load (or two 32-byte halves: rows 0-7, 8-15) is "4 quants of 16 rows" and one
// 32-bit activation broadcast feeds all of them. Rows past n_out are zero quants with scale 0.
// VNNI kernels (vpdpbusd: u8 x s8) read the biased weights and subtract 128 * sum(a) per token at
// the end; the AVX2 kernel (vpmaddubsw) unbiases them and uses |w| x sign(a, w), which cannot
// saturate because |w|, |a| <= 127. Integer sums are exact (|dot| < 255 * 127 * kp < 2^31 for
// kp <= kW8A8MaxK), and every level scales them with the same float operations, so every level's
// output is bit-identical to the scalar reference's.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

constexpr int kW8A8Rows = 16;         // rows per group
constexpr int kW8A8Cols = 12;         // tokens per kernel call at most
constexpr int64_t kW8A8MaxK = 65536;  // inner dimension limit of exact int32 sums
// How far ahead of the current k step the kernels prefetch their group's weights. Decode and
// batched decode stream every matrix from memory once per step; without it a 16-sequence step
// ran 285-295 t/s at avx512 (tinyllama-1.1b Q8_0 --w8a8 dynamic, Zen 5), with it 445-459.
constexpr size_t kW8A8PrefetchBytes = 4096;

// Quantized activations of the tokens of one call.
struct W8A8ActTile {
  const int8_t* qs;    // [nc, stride] quants in [-127, 127], zero past n_in up to kp
  size_t stride;       // bytes between tokens (>= kp)
  const int32_t* sum;  // [nc] sum of each token's quants
  const float* scale;  // [nc] each token's scale: x ~= scale * q
};

// y[c * y_stride + r] = float(sum_k q_w[r][k] * q_a[c][k]) * (a.scale[c] * w_scale[r]) for
// r < n_rows (<= 16), c < nc (<= kW8A8Cols). w: one group ([kp / 4, 16, 4] biased u8);
// w_scale: [16]; kp: a multiple of 4, <= kW8A8MaxK.
using W8A8GemmFn = void (*)(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                            float* y, size_t y_stride, int n_rows);
void w8a8_gemm_scalar(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                      float* y, size_t y_stride, int n_rows);
void w8a8_gemm_avx2(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows);
void w8a8_gemm_avxvnni(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                       float* y, size_t y_stride, int n_rows);
void w8a8_gemm_avx512(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                      float* y, size_t y_stride, int n_rows);
void w8a8_gemm_amx(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc, float* y,
                   size_t y_stride, int n_rows);
void w8a8_gemm_neon(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows);
void w8a8_gemm_dotprod(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                       float* y, size_t y_stride, int n_rows);
void w8a8_gemm_i8mm(const uint8_t* w, int64_t kp, const float* w_scale, const W8A8ActTile& a, int nc,
                    float* y, size_t y_stride, int n_rows);

// Activation quantization of one token, x: [n_in] -> q: [kp] (zeros past n_in): d = amax / 127
// with amax = static_absmax if > 0, else max_k |x[k]| (NaNs skipped); q[k] = w8a8_quant_one(x[k]
// / d) (as x[k] * (1 / d), 0 when d = 0). Returns d and writes the sum of the quants to *sum.
// The SIMD levels do the same float operations (max is exact in any order, one rounded multiply,
// round-to-nearest-even, clamp), so their quants, sums and scales are bit-identical.
using W8A8QuantizeFn = float (*)(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                                 int32_t* sum);
float w8a8_quantize_act_scalar(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                               int32_t* sum);
float w8a8_quantize_act_avx2(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                             int32_t* sum);
float w8a8_quantize_act_avx512(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                               int32_t* sum);
float w8a8_quantize_act_neon(const float* x, int64_t n_in, int64_t kp, float static_absmax, int8_t* q,
                             int32_t* sum);

// One scaled activation v = x * (1 / d) to its quant: round to nearest, ties to even (the
// default rounding mode, as cvtps2dq), clamped to [-127, 127]. std::max(-127, NaN) is -127, as
// maxps(NaN, -127) is in the SIMD levels: bad input gives defined quants, not UB.
static inline int w8a8_quant_one(float v) {
  return static_cast<int>(std::min(127.0f, std::max(-127.0f, std::nearbyint(v))));
}

struct W8A8KernelSet {
  IsaLevel level;
  W8A8GemmFn gemm;
  W8A8QuantizeFn quantize;
};
// The kernel for `isa`: its own level's, else the first one below it on its chain that the CPU
// supports (scalar at the bottom).
const W8A8KernelSet& w8a8_kernels(IsaLevel isa);

}  // namespace strata::cpu
