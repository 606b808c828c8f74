// NEON scores against interleaved Q8_0 / Q4_0 key tiles (kv_key_tile.h), shared by the NEON and
// DotProd levels' files: a 16-byte load holds 4 elements of 4 keys (the tile's token-contiguous
// 4-byte units), and the 4 query levels of those elements are the same in every lane, so each
// key's 4 products add into its own int32 lane: `sdot` where the CPU has it, else vmull_s8 and a
// pairwise add. Q4_0's nibbles become signed levels (u - 8) before the products, so both types
// share one integer path. Four query rows at a time share each key load.
// Internal linkage only.
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kv_key_tile_impl.h"

namespace strata::cpu {
namespace {

constexpr int kNeonKeyRows = 4;

// The int32 dot products of 4 keys with 4 query levels (one per lane, [4 keys]).
#if defined(__ARM_FEATURE_DOTPROD)
struct KeyDots {
  int32x4_t acc = vdupq_n_s32(0);
  void add(int8x16_t keys, int8x16_t q4) { acc = vdotq_s32(acc, keys, q4); }
  int32x4_t sums() const { return acc; }
};
#else
struct KeyDots {
  int32x4_t lo = vdupq_n_s32(0), hi = vdupq_n_s32(0);  // keys 0, 1 / 2, 3: two pair sums each
  void add(int8x16_t keys, int8x16_t q4) {
    lo = vpadalq_s16(lo, vmull_s8(vget_low_s8(keys), vget_low_s8(q4)));  // |product| <= 128 * 127
    hi = vpadalq_s16(hi, vmull_high_s8(keys, q4));
  }
  int32x4_t sums() const { return vpaddq_s32(lo, hi); }
};
#endif

inline int8x16_t broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(v));
}

// nk (1..4) 4-byte key units from p, zero past them: the last chunk of a tile must not be read
// beyond its keys (the tile may end there).
inline uint8x16_t load_keys(const uint8_t* p, int nk) {
  if (nk == 4) return vld1q_u8(p);
  uint8_t buf[16] = {};
  std::memcpy(buf, p, 4 * static_cast<size_t>(nk));
  return vld1q_u8(buf);
}

// The fp16 scales of nk keys as floats (0 past them).
inline float32x4_t load_key_scales(const uint8_t* p, int nk) {
  uint16_t h[4] = {};
  std::memcpy(h, p, 2 * static_cast<size_t>(nk));
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

// Keys j0..j0+3 (those below bs) for kNeonKeyRows rows (the first n_rows of them stored).
template <bool kQ8>
void score_keys(const uint8_t* const* rows, int n_rows, const uint8_t* tile, int32_t n_groups, int bs, int j0,
                float* s) {
  const int nk = std::min(4, bs - j0);
  float32x4_t acc[kNeonKeyRows];
  for (int r = 0; r < kNeonKeyRows; ++r) acc[r] = vdupq_n_f32(0.0f);
  for (int32_t g = 0; g < n_groups; ++g) {
    KeyDots dot[kNeonKeyRows];
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      const uint8x16_t raw = load_keys(tile + kv_interleaved_quants(n_groups, bs, g, c, j0, kQ8), nk);
      if constexpr (kQ8) {
        const int8x16_t k = vreinterpretq_s8_u8(raw);
        for (int r = 0; r < kNeonKeyRows; ++r)
          dot[r].add(k, broadcast4(query_levels(rows[r]) + g * kQK + 4 * c));
      } else {  // subgroup c: elements 8c..8c+3 in the low nibbles, 8c+4..8c+7 in the high ones
        const int8x16_t eight = vdupq_n_s8(8);
        const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(0x0F))), eight);
        const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), eight);
        for (int r = 0; r < kNeonKeyRows; ++r) {
          const int8_t* ql = query_levels(rows[r]) + g * kQK + 8 * c;
          dot[r].add(lo, broadcast4(ql));
          dot[r].add(hi, broadcast4(ql + 4));
        }
      }
    }
    const float32x4_t dk = load_key_scales(tile + kv_interleaved_scale(bs, g, j0), nk);
    for (int r = 0; r < kNeonKeyRows; ++r) {
      const float32x4_t d = vmulq_n_f32(dk, query_scale(rows[r], n_groups, g));
      acc[r] = vfmaq_f32(acc[r], vcvtq_f32_s32(dot[r].sums()), d);
    }
  }
  for (int r = 0; r < kNeonKeyRows; ++r) {  // constant trip count: acc[] stays in registers
    if (r >= n_rows) continue;
    if (nk == 4) {
      vst1q_f32(s + r * bs + j0, acc[r]);
    } else {
      float out[4];
      vst1q_f32(out, acc[r]);
      std::memcpy(s + r * bs + j0, out, sizeof(float) * static_cast<size_t>(nk));
    }
  }
}

void neon_scores(KvType type, const uint8_t* q, size_t q_stride, int n_rows, const uint8_t* tile,
                 int32_t n_groups, int bs, float* s) {
  score_in_blocks<kNeonKeyRows, 4>(type, q, q_stride, n_rows, bs, s,
                                   [&](auto q8, const uint8_t* const* rows, int nr, int j0, float* out) {
                                     score_keys<decltype(q8)::value>(rows, nr, tile, n_groups, bs, j0, out);
                                   });
}

// The table both levels' files export (each compiled for its own level).
constexpr KvKeyTileKernels kNeonKeyTileKernels = {prepare_query, neon_scores};

}  // namespace
}  // namespace strata::cpu
