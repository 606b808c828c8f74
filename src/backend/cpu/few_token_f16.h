// The few-token GEMM of F16 weights: a verification step of speculative decoding (2..16 tokens)
// streams every weight row once and applies it to all of the step's activation rows.
//
// Why a path of its own: the F16 register tile (dot_f16_*.cpp) converts both the weight and the
// activation halves to float in the inner loop. At 4 tokens per tile half of the vector ALU
// work is these conversions, so a 4-token step cost ~1.25x a 1-token decode although the decode
// is memory-bound. Here the activation rows are rounded to half precision once (exactly as the
// F16 activation quantizer rounds them) and widened back to float, and the tile multiplies the
// converted weights with those floats straight from memory: per output the same products, the
// same FMA sequence over the same lanes and the same final sum as the F16 tile of the same ISA
// level, so the result is bitwise the one of the tile path (batch invariance, kernels.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/cpu_features.h"

namespace strata::cpu {

// Most activation rows one call takes (more tokens go through the prefill tile path).
constexpr int64_t kFewTokensMax = 16;

struct FewTokenF16Kernels {
  // h: [n] half floats -> x: [n] floats (exact).
  void (*widen)(const void* h, float* x, int64_t n) = nullptr;
  // out[c * out_stride + r] = sum_i w[r][i] * a[c][i] for r < nr, c < nc (nc <= kFewTokensMax).
  // w: [nr][n] F16 rows, w_stride bytes apart; a: [nc][n] floats that are F16 values,
  // a_stride floats apart; out: out_stride floats per column. Any alignment.
  void (*gemm)(int64_t n, int nr, int nc, const void* w, size_t w_stride, const float* a, size_t a_stride,
               float* out, size_t out_stride) = nullptr;
  int tile_rows = 1;  // rows the driver hands out together (a work item is a multiple)
};

// The kernels of the level the F16 tile resolves to, or nullptr where that level has none (the
// scalar level: its reference tile is the path).
const FewTokenF16Kernels* few_token_f16_kernels(IsaLevel level);

// Per-ISA getters (few_token_f16_<isa>.cpp).
const FewTokenF16Kernels& few_token_f16_kernels_avx2();
const FewTokenF16Kernels& few_token_f16_kernels_avx512();
const FewTokenF16Kernels& few_token_f16_kernels_neon();

}  // namespace strata::cpu
