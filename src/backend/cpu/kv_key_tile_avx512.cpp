// AVX-512 (VNNI) scores against interleaved Q8_0 / Q4_0 key tiles (kv_key_tile.h): one 64-byte
// load holds 4 elements of 16 keys as unsigned bytes u (Q8_0: q + 128, Q4_0: the nibble, q + 8);
// vpdpbusd adds u * q over the 4 elements into 16 int32 lanes for one query row, so a row's
// scores for 16 keys build up in one register with no horizontal sums. The zero point comes off
// once per group: sum u * q - zp * sum q.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/kv_key_tile_impl.h"

namespace strata::cpu {
namespace {

constexpr int kRows = 8;

inline __m512i broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// One chunk of up to 16 keys starting at j0, all rows.
template <bool kQ8>
void score_chunk(const uint8_t* const* rows, int n_rows, const uint8_t* tile, int32_t n_groups, int bs,
                 int j0, float* s) {
  const int nk = std::min(16, bs - j0);
  const __mmask64 bytes = nk == 16 ? ~0ull : (1ull << (4 * nk)) - 1;
  const __mmask16 keys = static_cast<__mmask16>(nk == 16 ? 0xFFFF : (1u << nk) - 1);
  __m512 acc[kRows];
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r) acc[r] = _mm512_setzero_ps();
  for (int32_t g = 0; g < n_groups; ++g) {
    __m512i dot[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) dot[r] = _mm512_setzero_si512();
    for (int c = 0; c < (kQ8 ? 8 : 4); ++c) {
      const __m512i raw =
          _mm512_maskz_loadu_epi8(bytes, tile + kv_interleaved_quants(n_groups, bs, g, c, j0, kQ8));
      if constexpr (kQ8) {
        const __m512i u = _mm512_xor_si512(raw, _mm512_set1_epi8(static_cast<char>(0x80)));
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r)
          dot[r] = _mm512_dpbusd_epi32(dot[r], u, broadcast4(query_levels(rows[r]) + g * kQK + 4 * c));
      } else {
        const __m512i mask = _mm512_set1_epi8(0x0F);
        const __m512i lo = _mm512_and_si512(raw, mask),
                      hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
          const int8_t* ql = query_levels(rows[r]) + g * kQK + 8 * c;
          dot[r] =
              _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(dot[r], lo, broadcast4(ql)), hi, broadcast4(ql + 4));
        }
      }
    }
    const __m512 dk = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(keys, tile + kv_interleaved_scale(bs, g, j0)));
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      const __m512i zp = _mm512_set1_epi32((kQ8 ? 128 : 8) * query_sum(rows[r], n_groups, g));
      const __m512 d = _mm512_mul_ps(dk, _mm512_set1_ps(query_scale(rows[r], n_groups, g)));
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dot[r], zp)), d, acc[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kRows; ++r)  // constant trip count: acc[] stays in registers
    if (r < n_rows) _mm512_mask_storeu_ps(s + r * bs + j0, keys, acc[r]);
}

void scores(KvType type, const uint8_t* q, size_t q_stride, int n_rows, const uint8_t* tile, int32_t n_groups,
            int bs, float* s) {
  score_in_blocks<kRows, 16>(type, q, q_stride, n_rows, bs, s,
                             [&](auto q8, const uint8_t* const* rows, int nr, int j0, float* out) {
                               score_chunk<decltype(q8)::value>(rows, nr, tile, n_groups, bs, j0, out);
                             });
}

constexpr KvKeyTileKernels kKernels = {prepare_query, scores};

}  // namespace

const KvKeyTileKernels& kv_key_tile_kernels_avx512() {
  return kKernels;
}

}  // namespace strata::cpu
