// The NEON kernels of the IQ and ternary types (iq_kernels_neon.cpp, iq_kernels_dotprod.cpp):
// each super-block is decoded by the type's scalar decoder (iq_decoders.h) into w[256] and
// sc[16], and its exact integer dot with a Q8_K row, sum_h sc[h] * sum(w * a over 16 elements),
// runs on 16-byte vectors (sdot with +dotprod, else vmull_s8 / vpadal). Decoding is most of the
// work, so as on x86 prefill decodes each row once for all the tokens of a call (gemm_panel) and
// the tile decodes its rows once for its TC tokens. Every output is sum over the super-blocks of
// f * d_a * float(sumi), in block order, as the scalar reference computes it: the kernels give
// its bits at any tile shape (batch invariance, kernels.h). Internal linkage: aarch64 files only.
#pragma once

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/cpu/block_access.h"
#include "backend/cpu/iq_decoders.h"
#include "backend/cpu/kernels.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

// One row's super-block, decoded.
struct alignas(16) IqNeonBlock {
  int8_t w[kQK_K];
  int sc[kQK_K / 16];
  float f;
};

// sum_h sc[h] * sum_{e in 16h..16h+15} w[e] * a[e], exact (|sumi| < 256 * 128 * 128 * 63 < 2^31).
static inline int32_t block_dot(const IqNeonBlock& b, const int8_t* a) {
  int32x4_t acc = vdupq_n_s32(0);
  for (int h = 0; h < kQK_K / 16; ++h) {
    const int8x16_t w = vld1q_s8(b.w + 16 * h), x = vld1q_s8(a + 16 * h);
#if defined(__ARM_FEATURE_DOTPROD)
    const int32x4_t p = vdotq_s32(vdupq_n_s32(0), w, x);
#else
    const int32x4_t p =
        vpadalq_s16(vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x))), vmull_high_s8(w, x));
#endif
    acc = vmlaq_n_s32(acc, p, b.sc[h]);
  }
  return vaddvq_s32(acc);
}

template <size_t kBlockBytes, IqDecodeFn Decode>
struct IqNeon {
  static constexpr int kTileRows = 4, kTileCols = 4;

  static void decode(const uint8_t* blk, IqNeonBlock& out) { out.f = Decode(blk, out.w, out.sc); }

  // The float step of one output and super-block, as iq_vec_dot writes it.
  static float step(float sum, const IqNeonBlock& b, const uint8_t* act) {
    const float d = load_f32(act + offsetof(BlockQ8_K, d));
    return sum + b.f * d *
                     static_cast<float>(
                         block_dot(b, reinterpret_cast<const int8_t*>(act + offsetof(BlockQ8_K, qs))));
  }

  static float vec_dot(int64_t n, const void* w, const void* a) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    IqNeonBlock b;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK_K; ++i) {
      decode(wb + i * kBlockBytes, b);
      sum = step(sum, b, ab + i * sizeof(BlockQ8_K));
    }
    return sum;
  }

  // nr <= kTileRows rows x nc <= kTileCols tokens, each super-block of a row decoded once.
  static void gemm_tile(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as,
                        float* out, size_t os) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    float sum[kMaxTileRows][kMaxTileCols] = {};
    IqNeonBlock b;
    for (int64_t i = 0; i < n / kQK_K; ++i)
      for (int r = 0; r < nr; ++r) {
        decode(wb + r * ws + i * kBlockBytes, b);
        for (int c = 0; c < nc; ++c) sum[r][c] = step(sum[r][c], b, ab + c * as + i * sizeof(BlockQ8_K));
      }
    for (int c = 0; c < nc; ++c)
      for (int r = 0; r < nr; ++r) out[c * os + r] = sum[r][c];
  }

  // gemm_tile's outputs for nr rows and any nc: each row decoded once into this thread's panel.
  static void gemm_panel(int64_t n, int nr, int nc, const void* w, size_t ws, const void* a, size_t as,
                         float* out, size_t os) {
    const auto* wb = static_cast<const uint8_t*>(w);
    const auto* ab = static_cast<const uint8_t*>(a);
    const int64_t nb = n / kQK_K;
    thread_local std::vector<IqNeonBlock> panel;
    panel.resize(static_cast<size_t>(nb));
    for (int r = 0; r < nr; ++r) {
      for (int64_t i = 0; i < nb; ++i) decode(wb + r * ws + i * kBlockBytes, panel[static_cast<size_t>(i)]);
      for (int c = 0; c < nc; ++c) {
        float sum = 0.0f;
        for (int64_t i = 0; i < nb; ++i)
          sum = step(sum, panel[static_cast<size_t>(i)], ab + c * as + i * sizeof(BlockQ8_K));
        out[c * os + r] = sum;
      }
    }
  }

  static constexpr TypeKernels kernels(void (*from_float)(const float*, void*, int64_t)) {
    return {TensorType::Q8_K, from_float, vec_dot, gemm_tile, kTileRows, kTileCols, gemm_panel};
  }
};

}  // namespace
}  // namespace strata::cpu

// The getters of kernel_decls.h for one NEON level (LEVEL: neon, dotprod), in its file.
#define STRATA_IQ_NEON_GETTER(TYPE, BLOCK, LEVEL)                                \
  const TypeKernels& TYPE##_kernels_##LEVEL() {                                  \
    static constexpr TypeKernels k =                                             \
        IqNeon<sizeof(BLOCK), TYPE##_decode>::kernels(quantize_row_q8_k_scalar); \
    return k;                                                                    \
  }
#define STRATA_IQ_NEON_GETTERS(LEVEL)                 \
  STRATA_IQ_NEON_GETTER(iq2_xxs, BlockIQ2_XXS, LEVEL) \
  STRATA_IQ_NEON_GETTER(iq2_xs, BlockIQ2_XS, LEVEL)   \
  STRATA_IQ_NEON_GETTER(iq2_s, BlockIQ2_S, LEVEL)     \
  STRATA_IQ_NEON_GETTER(iq3_xxs, BlockIQ3_XXS, LEVEL) \
  STRATA_IQ_NEON_GETTER(iq3_s, BlockIQ3_S, LEVEL)     \
  STRATA_IQ_NEON_GETTER(iq1_s, BlockIQ1_S, LEVEL)     \
  STRATA_IQ_NEON_GETTER(iq1_m, BlockIQ1_M, LEVEL)     \
  STRATA_IQ_NEON_GETTER(tq1_0, BlockTQ1_0, LEVEL)     \
  STRATA_IQ_NEON_GETTER(tq2_0, BlockTQ2_0, LEVEL)
