// AVX-512 (VNNI) kernels of the interleaved layout (packed_kernels.h).
//
// One zmm register holds 4 quants of each of 16 rows, so `vpdpbusd acc, w, bcast(a[4k..4k+3])`
// adds 4 products to 16 rows' sums for one token. Per block and token the integer accumulator
// starts at the activation's bias (-zero_point * sum(a)), which removes the weights' zero point
// for free; after the block's 8 vpdpbusd it is scaled by d_w * d_a into a float accumulator.
// A call covers one group of 16 rows and up to 12 tokens: 12 integer + 12 float accumulators.
// GCC 12's AVX-512 intrinsic headers trip -W(maybe-)uninitialized on their own _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <array>
#include <bit>
#include <cstring>
#include <utility>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "backend/cpu/packed_widen_avx512.h"
#include "core/check.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

using namespace packed;

// How far ahead of the current block to prefetch. A group's blocks and the groups of a
// work item are contiguous, so this is one sequential stream per thread, which the hardware
// prefetchers alone read at ~15 GB/s on 2 threads of Sapphire Rapids (bench_matmul BM_Gemv,
// Q4_0 gate 5632 x 2048, quiet windows: 15.1-15.5 GB/s without; 17-20 at 1 KiB and 2 KiB
// ahead, 21.6-26.6 at 4 KiB, 18.5-20.1 at 6 KiB; whole-model Q8_0 decode 0.80, 0.83 and 0.94 of
// the adjacent roofline at 1, 2 and 4 KiB, BM_DecodeRoofline). Prefetches past the matrix are harmless.
constexpr size_t kPrefetchBytes = 4096;

static inline __m512i broadcast_i32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// 16 unsigned bytes -> 16 floats (Q4_K's and Q5_K's per-row sub-block scales or mins).
static inline __m512 u8x16_to_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}
// 16 signed bytes -> 16 floats (IQ4_XS's per-row sub-block scales).
static inline __m512 i8x16_to_ps(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// acc[c] += w . a[c][off..off+3] for every token c of the tile.
template <int NC>
static inline void dot4(__m512i (&acc)[NC], __m512i w, const int8_t* aq, int off) {
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], w, broadcast_i32(aq + c * 32 + off));
}

// The integer part of one block: sum_e u[r][e] * a[c][e] for the 16 rows r, added to acc[c]
// (even weight registers) and acc2[c] (odd ones). With few tokens the caller passes a second
// set of accumulators so that the 8 dependent vpdpbusd of a block form two chains of 4; the
// integer sums are exact, so the split does not change any result.
template <Kind K, int NC>
static inline void block_dots(__m512i (&acc)[NC], __m512i (&acc2)[NC], const uint8_t* qs, const int8_t* aq) {
  if constexpr (K == Kind::Q8_0) {
#pragma GCC unroll 4
    for (int k = 0; k < 8; k += 2) {
      dot4<NC>(acc, _mm512_loadu_si512(qs + 64 * k), aq, 4 * k);
      dot4<NC>(acc2, _mm512_loadu_si512(qs + 64 * (k + 1)), aq, 4 * (k + 1));
    }
  } else {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      __m512i lo, hi;
      widen_chunk<K>(qs, k, lo, hi);
      dot4<NC>(acc, lo, aq, 4 * k);
      dot4<NC>(acc2, hi, aq, 16 + 4 * k);
    }
  }
}

// Chunk C of element half HH (0: elements 4C..4C+3, 1: 16 + 4C..) of 16 rows of a half-scaled
// kind as unsigned quants (packed_kernels.h): Q6_K's u = low | high << 4 (the high bits are bits
// 2C..2C+1 of plane HH), Q3_K's low2 | third << 2 (bits 2C..2C+1 of lo plane HH, bit 4 HH + C of
// hi), Q2_K's low2.
template <Kind K, int C, int HH>
static inline __m512i half_quants(const uint8_t* qs) {
  if constexpr (K == Kind::Q6_K) {
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i p = _mm512_loadu_si512(qs + 64 * C);
    const __m512i low = HH == 0 ? _mm512_and_si512(p, m4) : _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
    const __m512i plane = _mm512_loadu_si512(qs + kQ6kQhOffset + 64 * HH);
    __m512i high;  // bits 2C..2C+1 moved to bits 4..5
    if constexpr (C <= 2)
      high = _mm512_slli_epi16(plane, 4 - 2 * C);
    else
      high = _mm512_srli_epi16(plane, 2);
    return _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi8(0x30), 0xF8);  // low | (high & 0x30)
  } else {
    const __m512i u =
        _mm512_and_si512(_mm512_srli_epi16(_mm512_loadu_si512(qs + 64 * HH), 2 * C), _mm512_set1_epi8(3));
    if constexpr (K == Kind::Q2_K) return u;
    const __m512i hi = _mm512_loadu_si512(qs + kQ3kHiOffset);
    constexpr int kShift = 4 * HH + C - 2;  // bit 4 HH + C moved to bit 2
    __m512i third;
    if constexpr (kShift >= 0)
      third = _mm512_srli_epi16(hi, kShift);
    else
      third = _mm512_slli_epi16(hi, -kShift);
    return _mm512_ternarylogic_epi32(u, third, _mm512_set1_epi8(4), 0xF8);  // u | (third & 4)
  }
}

// Element half HH of sub-block j of a half-scaled kind (Q6_K, Q3_K, Q2_K): the integer sums of
// u * a start at the activation's -zero_point * sum(a) of the half, so they are the exact sums of
// (u - zero_point) * a; each is scaled by d * sc of its half and d_a, and Q2_K adds
// -dmin * min * d_a * sum(a).
template <Kind K, int HH, int NC>
static inline void half_sums(__m512 (&accf)[NC], const uint8_t* w, int j, const int8_t* aq,
                             const PackedActMeta* am, __m512 d_super, [[maybe_unused]] __m512 neg_dmin) {
  const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
  __m512i acc[NC], acc2[NC];
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) {
    acc[c] = _mm512_set1_epi32(half_sum_bias(am[c].extra, HH, kHalfZeroPoint<K>));
    acc2[c] = _mm512_setzero_si512();
  }
  constexpr int off = 16 * HH;
  if constexpr (NC <= 6) {  // latency-bound otherwise: two chains per token
    dot4<NC>(acc, half_quants<K, 0, HH>(qs), aq, off);
    dot4<NC>(acc2, half_quants<K, 1, HH>(qs), aq, off + 4);
    dot4<NC>(acc, half_quants<K, 2, HH>(qs), aq, off + 8);
    dot4<NC>(acc2, half_quants<K, 3, HH>(qs), aq, off + 12);
#pragma GCC unroll 16
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(acc[c], acc2[c]);
  } else {
    dot4<NC>(acc, half_quants<K, 0, HH>(qs), aq, off);
    dot4<NC>(acc, half_quants<K, 1, HH>(qs), aq, off + 4);
    dot4<NC>(acc, half_quants<K, 2, HH>(qs), aq, off + 8);
    dot4<NC>(acc, half_quants<K, 3, HH>(qs), aq, off + 12);
  }
  const uint8_t* sc = w + kHalfScOffset<K> + 16 * (2 * j + HH);
  __m512 dw;
  [[maybe_unused]] __m512 mw;
  if constexpr (K == Kind::Q2_K) {
    const __m512i sc32 = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc)));
    dw = _mm512_mul_ps(d_super, _mm512_cvtepi32_ps(_mm512_and_si512(sc32, _mm512_set1_epi32(0x0f))));
    mw = _mm512_mul_ps(neg_dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(sc32, 4)));
  } else {
    dw = _mm512_mul_ps(d_super, i8x16_to_ps(sc));
  }
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) {
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(am[c].d));
    accf[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[c]), scale, accf[c]);
    if constexpr (K == Kind::Q2_K) {
      const float a_sum = am[c].d * static_cast<float>(half_sum(am[c].extra, HH));
      accf[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(a_sum), accf[c]);
    }
  }
}

// w: [nb] packed blocks of one group; y[c * y_stride + r] for r < n_rows, c < NC.
template <Kind K, int NC>
void group_kernel(const uint8_t* w, int64_t nb, const PackedActTile& a, float* y, size_t y_stride,
                  int n_rows) {
  __m512 accf[NC];
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) accf[c] = _mm512_setzero_ps();
  const int8_t* aq = a.qs;
  const PackedActMeta* am = a.meta;
  for (int64_t b = 0; b < nb; b += kSubBlocks<K>, w += kBlockBytes<K>) {
    [[maybe_unused]] __m512 d_super, neg_dmin;  // super-blocks: d; Q4_K, Q5_K, Q2_K: -dmin
    if constexpr (kSuper<K>)
      d_super = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
    if constexpr (kKScaleMin<K> || K == Kind::Q2_K) {
      constexpr size_t kDminOffset = K == Kind::Q2_K ? kQ2kDminOffset : kQ4kDminOffset;
      neg_dmin = _mm512_sub_ps(
          _mm512_setzero_ps(),
          _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + kDminOffset))));
    }
    for (int j = 0; j < kSubBlocks<K>; ++j, aq += kPackCols * 32, am += kPackCols) {
      // Fetch ahead of the hardware prefetcher in every call, not only decode's: batched decode
      // streams the weights too (16 sequences, Q4_0, Zen 5: 310-343 -> 454-487 t/s), and in
      // prefill a group already in L2 makes these few instructions next to 8 * NC vpdpbusd.
      prefetch_share<K>(w + kPrefetchBytes, j);
      if constexpr (kHalfScaled<K>) {
        half_sums<K, 0, NC>(accf, w, j, aq, am, d_super, neg_dmin);
        half_sums<K, 1, NC>(accf, w, j, aq, am, d_super, neg_dmin);
      } else {
        const uint8_t* qs = w + kQsOffset<K> + j * kSubBlockBytes<K>;
        __m512i acc[NC], acc2[NC];
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c)
          acc[c] = kHasMin<K> ? _mm512_setzero_si512() : _mm512_set1_epi32(am[c].extra);
        if constexpr (NC <= 6) {  // latency-bound otherwise: two chains per token
#pragma GCC unroll 16
          for (int c = 0; c < NC; ++c) acc2[c] = _mm512_setzero_si512();
          block_dots<K, NC>(acc, acc2, qs, aq);
#pragma GCC unroll 16
          for (int c = 0; c < NC; ++c) acc[c] = _mm512_add_epi32(acc[c], acc2[c]);
        } else {
          block_dots<K, NC>(acc, acc, qs, aq);
        }
        __m512 dw, mw;
        if constexpr (kKScaleMin<K>) {
          dw = _mm512_mul_ps(d_super, u8x16_to_ps(w + kQ4kScOffset + 16 * j));
          mw = _mm512_mul_ps(neg_dmin, u8x16_to_ps(w + kQ4kMOffset + 16 * j));
        } else if constexpr (K == Kind::IQ4_XS) {
          dw = _mm512_mul_ps(d_super, i8x16_to_ps(w + kIq4xsScOffset + 16 * j));
        } else {
          dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w)));
          if constexpr (kHasMin<K>)
            mw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32)));
        }
#pragma GCC unroll 16
        for (int c = 0; c < NC; ++c) {
          const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(am[c].d));
          accf[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[c]), scale, accf[c]);
        }
        if constexpr (kHasMin<K>) {
#pragma GCC unroll 16
          for (int c = 0; c < NC; ++c)
            accf[c] = _mm512_fmadd_ps(mw, _mm512_set1_ps(std::bit_cast<float>(am[c].extra)), accf[c]);
        }
      }
    }
  }
  const __mmask16 rows = static_cast<__mmask16>((1u << n_rows) - 1);
#pragma GCC unroll 16
  for (int c = 0; c < NC; ++c) _mm512_mask_storeu_ps(y + c * y_stride, rows, accf[c]);
}

using GroupKernel = void (*)(const uint8_t*, int64_t, const PackedActTile&, float*, size_t, int);

template <Kind K, size_t... I>
constexpr std::array<GroupKernel, sizeof...(I)> make_table(std::index_sequence<I...>) {
  return {group_kernel<K, static_cast<int>(I) + 1>...};
}

template <Kind K>
constexpr auto kTable = make_table<K>(std::make_index_sequence<kPackCols>{});

}  // namespace

void packed_gemm_avx512(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                        float* y, size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  const size_t i = static_cast<size_t>(nc - 1);
  with_any_kind(type, [&](auto kind) { kTable<decltype(kind)::value>[i](w, nb, a, y, y_stride, n_rows); });
}

void quantize_packed_act_avx512(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                                size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride) {
  STRATA_CHECK(!is_super_act_mode(zero_point), "no super-block activations at this level");
  const __m512 sign_mask = _mm512_set1_ps(-0.0f);
  for (int64_t b = 0; b < n_blocks; ++b, x += 32) {
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    const __m512 amax_v = _mm512_max_ps(_mm512_andnot_ps(sign_mask, x0), _mm512_andnot_ps(sign_mask, x1));
    const float d = _mm512_reduce_max_ps(amax_v) / 127.0f;
    const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, id));  // round to nearest even
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, id));
    int8_t* out = qs + static_cast<size_t>(b) * qs_block_stride;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_cvtepi32_epi8(q1));
    const int sum_lo = _mm512_reduce_add_epi32(q0), sum_hi = _mm512_reduce_add_epi32(q1);
    const int sum = sum_lo + sum_hi;
    PackedActMeta& m = meta[static_cast<size_t>(b) * meta_block_stride];
    m.d = _cvtsh_ss(_cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    m.extra = zero_point == kPackedHalfSums ? pack_half_sums(sum_lo, sum_hi)
              : zero_point != 0             ? -zero_point * sum
                                            : std::bit_cast<int32_t>(_cvtsh_ss(
                                                  _cvtss_sh(d * static_cast<float>(sum), _MM_FROUND_TO_NEAREST_INT)));
  }
}

}  // namespace strata::cpu
