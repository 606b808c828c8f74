// AVX2 scores against interleaved Q8_0 / Q4_0 key tiles (kv_key_tile.h): one 32-byte load holds
// 4 elements of 8 keys; maddubs + madd add the 4 products per key into 8 int32 lanes (Q8_0 with
// the sign trick, |k| * sign(q, k), so no pair saturates; Q4_0 as unsigned nibbles q + 8 with the
// zero point taken off per group), four query rows at a time.
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/kv_key_tile_impl.h"
#include "backend/cpu/simd_avx2.h"

namespace strata::cpu {
namespace {

constexpr int kRows = 4;

inline __m256i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Lanes [0, n) of 8 32-bit lanes.
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// One chunk of up to 8 keys starting at j0, for kRows rows.
template <bool kQ8>
void score_chunk(const uint8_t* const* rows, int n_rows, const uint8_t* tile, int32_t n_groups, int bs,
                 int j0, float* s) {
  const __m256i keys = first_lanes(std::min(8, bs - j0));
  __m256 acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_ps();
  for (int32_t g = 0; g < n_groups; ++g) {
    __m256i dot[kRows];
    for (int r = 0; r < kRows; ++r) dot[r] = _mm256_setzero_si256();
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      const __m256i raw = _mm256_maskload_epi32(
          reinterpret_cast<const int*>(tile + kv_interleaved_quants(n_groups, bs, g, c, j0, kQ8)), keys);
      if constexpr (kQ8) {
        const __m256i k_abs = _mm256_sign_epi8(raw, raw);
        for (int r = 0; r < kRows; ++r) {
          const __m256i qs = _mm256_sign_epi8(broadcast4(query_levels(rows[r]) + g * kQK + 4 * c), raw);
          dot[r] = _mm256_add_epi32(dot[r], dot_u8s8_i32(k_abs, qs));
        }
      } else {
        const __m256i mask = _mm256_set1_epi8(0x0F);
        const __m256i lo = _mm256_and_si256(raw, mask),
                      hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
        for (int r = 0; r < kRows; ++r) {
          const int8_t* ql = query_levels(rows[r]) + g * kQK + 8 * c;
          dot[r] = _mm256_add_epi32(dot[r], _mm256_add_epi32(dot_u8s8_i32(lo, broadcast4(ql)),
                                                             dot_u8s8_i32(hi, broadcast4(ql + 4))));
        }
      }
    }
    alignas(32) uint16_t dh[8] = {};
    const int nk = std::min(8, bs - j0);
    std::memcpy(dh, tile + kv_interleaved_scale(bs, g, j0), 2 * static_cast<size_t>(nk));
    const __m256 dk = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dh)));
    for (int r = 0; r < kRows; ++r) {
      __m256i d32 = dot[r];
      if constexpr (!kQ8) d32 = _mm256_sub_epi32(d32, _mm256_set1_epi32(8 * query_sum(rows[r], n_groups, g)));
      const __m256 d = _mm256_mul_ps(dk, _mm256_set1_ps(query_scale(rows[r], n_groups, g)));
      acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d32), d, acc[r]);
    }
  }
  for (int r = 0; r < kRows; ++r)  // constant trip count: acc[] stays in registers
    if (r < n_rows) _mm256_maskstore_ps(s + r * bs + j0, keys, acc[r]);
}

void scores(KvType type, const uint8_t* q, size_t q_stride, int n_rows, const uint8_t* tile, int32_t n_groups,
            int bs, float* s) {
  score_in_blocks<kRows, 8>(type, q, q_stride, n_rows, bs, s,
                            [&](auto q8, const uint8_t* const* rows, int nr, int j0, float* out) {
                              score_chunk<decltype(q8)::value>(rows, nr, tile, n_groups, bs, j0, out);
                            });
}

constexpr KvKeyTileKernels kKernels = {prepare_query, scores};

}  // namespace

const KvKeyTileKernels& kv_key_tile_kernels_avx2() {
  return kKernels;
}

}  // namespace strata::cpu
