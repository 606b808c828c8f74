// Scalar reference of the interleaved-layout kernels (packed_kernels.h): the activation
// quantizer and the group x token-tile product. They compute exactly what the row kernels of
// dot_<type>.cpp compute (same integer sums, same float expression per block), so a packed
// matrix multiplies bit-identically to its rows at the scalar level.
#include <bit>
#include <cmath>
#include <cstring>

#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/packed_kind.h"
#include "core/check.h"
#include "quant/blocks.h"
#include "quant/iq_tables.h"

namespace strata::cpu {
namespace {

constexpr size_t kScalesBytes = kPackRows * sizeof(fp16_t);
constexpr size_t kChunkBytes = kPackRows * 4;

fp16_t load_fp16(const uint8_t* p) {
  fp16_t h;
  std::memcpy(&h, p, sizeof h);
  return h;
}

// Unsigned quant of element e (0..31) of row r in one packed block (see the layout table).
int packed_quant(TensorType type, const uint8_t* qs, int r, int e) {
  const int k = e / 4, i = e % 4;
  if (type == TensorType::Q8_0) return qs[k * kChunkBytes + 4 * r + i];
  const uint8_t byte = qs[(k % 4) * kChunkBytes + 4 * r + i];
  int q = k < 4 ? (byte & 0x0f) : (byte >> 4);
  if (type == TensorType::IQ4_NL) return kIq4nlValues[q] + 128;
  if (type == TensorType::MXFP4) return kMxfp4Values[q] + 128;
  if (type == TensorType::Q5_0 || type == TensorType::Q5_1) {
    const uint8_t* masks = qs + 4 * kChunkBytes;
    const int bit = 4 * r + i;
    if ((masks[k * 8 + bit / 8] >> (bit % 8)) & 1) q |= 16;
  }
  return q;
}

// Unsigned quant of element e (0..31) of row r in a sub-block of a kHalfScaled kind: Q6_K's low
// nibble and 2-bit plane, Q3_K's 2-bit and 1-bit planes, Q2_K's 2-bit planes.
template <packed::Kind K>
int half_scaled_quant(const uint8_t* qs, int r, int e) {
  using namespace packed;
  const int k = e % 16 / 4, byte = 4 * r + e % 4;
  if constexpr (K == Kind::Q6_K)
    return packed_quant(TensorType::Q4_0, qs, r, e) |
           ((qs[kQ6kQhOffset + (e / 16) * kChunkBytes + byte] >> (2 * k)) & 3) << 4;
  const int low2 = (qs[(e / 16) * kChunkBytes + byte] >> (2 * k)) & 3;
  if constexpr (K == Kind::Q3_K) return low2 | ((qs[kQ3kHiOffset + byte] >> (4 * (e / 16) + k)) & 1) << 2;
  return low2;
}

// The super-block kinds (packed_kernels.h). Q4_K, Q5_K: per sub-block the Q4_1 / Q5_1 expression with scale
// d * sc and min -dmin * m; IQ4_XS: the IQ4_NL expression with scale d * sc; Q6_K, Q3_K: per
// 16-column half the integer sum of (u - zero point) * a with scale d * sc; Q2_K: per half the sum
// of u * a with scale d * scale, minus dmin * min * d_a * the activation's half sum. (Not the row
// kernels': those quantize activations per 256 as Q8_K.) Q4_K, Q5_K with kPackedSuperSums
// activations: the super-block's integer sums of sc * (u . a) and m * sum(a), scaled once; Q6_K
// and Q3_K with kPackedSuperHalfSums: the integer sum of sc * ((u - z) . a), scaled once; IQ4_XS with
// kPackedSuperSums: its integer sum of sc * (v . a), scaled once; Q2_K with kPackedSuperHalfSums: the
// integer sums of scale * (u . a) and of min * sum(a), each scaled once.
template <packed::Kind K>
void packed_gemm_super_scalar(const uint8_t* w, int64_t nb, const PackedActTile& a, int nc, float* y,
                              size_t y_stride, int n_rows) {
  using namespace packed;
  for (int c = 0; c < nc; ++c)
    for (int r = 0; r < n_rows; ++r) {
      float sum = 0.0f;
      int32_t sup_sum = 0, sup_min = 0;  // kPackedSuperSums: the super-block's integer sums
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* sup = w + static_cast<size_t>(b / kSubBlocks<K>) * kBlockBytes<K>;
        const int j = static_cast<int>(b % kSubBlocks<K>);
        const uint8_t* qs = sup + kQsOffset<K> + kSubBlockBytes<K> * j;
        const int8_t* aq = a.qs + (static_cast<size_t>(b) * kPackCols + c) * 32;
        const PackedActMeta& am = a.meta[static_cast<size_t>(b) * kPackCols + c];
        const float d = fp16_to_f32(load_fp16(sup + r * sizeof(fp16_t)));
        int sumi = 0;
        if constexpr (kKScaleMin<K>) {
          // Q5_K's fifth bits are Q5_0's masks after the nibbles (Q5_1's unsigned quant).
          const TensorType quants = K == Kind::Q5_K ? TensorType::Q5_1 : TensorType::Q4_0;
          for (int e = 0; e < 32; ++e) sumi += packed_quant(quants, qs, r, e) * aq[e];
          if (a.super_sums) {  // d * d_a * sum(sc * sumi) - dmin * d_a * sum(m * sum(a)), per 256
            sup_sum += static_cast<int32_t>(sup[kQ4kScOffset + 16 * j + r]) * sumi;
            sup_min += static_cast<int32_t>(sup[kQ4kMOffset + 16 * j + r]) * pair_sum(am.extra, j);
            if (j == kSubBlocks<K> - 1) {
              const float dmin = fp16_to_f32(load_fp16(sup + kQ4kDminOffset + r * sizeof(fp16_t)));
              sum += d * am.d * static_cast<float>(sup_sum) - dmin * am.d * static_cast<float>(sup_min);
              sup_sum = sup_min = 0;
            }
            continue;
          }
          const float dw = d * static_cast<float>(sup[kQ4kScOffset + 16 * j + r]);
          const float mw = -fp16_to_f32(load_fp16(sup + kQ4kDminOffset + r * sizeof(fp16_t))) *
                           static_cast<float>(sup[kQ4kMOffset + 16 * j + r]);
          sum += dw * am.d * static_cast<float>(sumi) + mw * std::bit_cast<float>(am.extra);
        } else if constexpr (kHalfScaled<K>) {
          for (int hh = 0; hh < 2; ++hh) {  // the two 16-column halves, each with its scale
            int sumh = 0;
            for (int e = 16 * hh; e < 16 * hh + 16; ++e)
              sumh += (half_scaled_quant<K>(qs, r, e) - kHalfZeroPoint<K>)*aq[e];
            const uint8_t sc = sup[kHalfScOffset<K> + 16 * (2 * j + hh) + r];
            if (a.super_sums) {  // d * d_a * sum(sc * sumh) [- dmin * d_a * sum(min * sum(a))], per 256
              if constexpr (K == Kind::Q2_K) {
                sup_sum += (sc & 0x0f) * sumh;
                sup_min += (sc >> 4) * half_sum(am.extra, hh);
              } else {
                sup_sum += static_cast<int8_t>(sc) * sumh;
              }
              if (j == kSubBlocks<K> - 1 && hh == 1) {
                sum += d * am.d * static_cast<float>(sup_sum);
                if constexpr (K == Kind::Q2_K)
                  sum -= fp16_to_f32(load_fp16(sup + kQ2kDminOffset + r * sizeof(fp16_t))) * am.d *
                         static_cast<float>(sup_min);
                sup_sum = sup_min = 0;
              }
              continue;
            }
            if constexpr (K == Kind::Q2_K) {  // d * scale * u - dmin * min
              const float dmin = fp16_to_f32(load_fp16(sup + kQ2kDminOffset + r * sizeof(fp16_t)));
              sum += static_cast<float>(sumh) * (d * static_cast<float>(sc & 0x0f)) * am.d;
              sum +=
                  -dmin * static_cast<float>(sc >> 4) * (am.d * static_cast<float>(half_sum(am.extra, hh)));
            } else {
              sum += static_cast<float>(sumh) * (d * static_cast<float>(static_cast<int8_t>(sc))) * am.d;
            }
          }
        } else {
          for (int e = 0; e < 32; ++e) sumi += (packed_quant(TensorType::IQ4_NL, qs, r, e) - 128) * aq[e];
          const int sc = static_cast<int8_t>(sup[kIq4xsScOffset + 16 * j + r]);
          if (a.super_sums) {  // d * d_a * sum(sc * sumi), per 256
            sup_sum += sc * sumi;
            if (j == kSubBlocks<K> - 1) {
              sum += d * am.d * static_cast<float>(sup_sum);
              sup_sum = 0;
            }
            continue;
          }
          const float dw = d * static_cast<float>(sc);
          sum += static_cast<float>(sumi) * dw * am.d;
        }
      }
      y[c * y_stride + r] = sum;
    }
}

// kPackedSuperSums: one d per 8 blocks, each block's quant sum in its pair's int16 halves;
// kPackedSuperHalfSums: the same d, each block's half sums.
void quantize_super_sums_scalar(const float* x, int64_t n_blocks, int mode, int8_t* qs,
                                size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride) {
  STRATA_CHECK(n_blocks % 8 == 0, "super-block activations take whole super-blocks, not ", n_blocks,
               " blocks");
  for (int64_t s = 0; s < n_blocks; s += 8, x += 256) {
    float amax = 0.0f;
    for (int i = 0; i < 256; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sums[8] = {}, half[8][2] = {};
    for (int j = 0; j < 8; ++j) {
      int8_t* q = qs + static_cast<size_t>(s + j) * qs_block_stride;
      for (int e = 0; e < 32; ++e) {
        q[e] = static_cast<int8_t>(std::nearbyint(x[32 * j + e] * id));
        half[j][e / 16] += q[e];
      }
      sums[j] = half[j][0] + half[j][1];
    }
    for (int j = 0; j < 8; ++j)
      meta[static_cast<size_t>(s + j) * meta_block_stride] = {
          d, mode == kPackedSuperHalfSums ? pack_half_sums(half[j][0], half[j][1])
                                          : pack_half_sums(sums[j & ~1], sums[j | 1])};
  }
}

}  // namespace

void quantize_packed_act_scalar(const float* x, int64_t n_blocks, int zero_point, int8_t* qs,
                                size_t qs_block_stride, PackedActMeta* meta, size_t meta_block_stride) {
  if (is_super_act_mode(zero_point))
    return quantize_super_sums_scalar(x, n_blocks, zero_point, qs, qs_block_stride, meta, meta_block_stride);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float* xb = x + b * 32;
    int8_t* q = qs + static_cast<size_t>(b) * qs_block_stride;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(xb[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int half[2] = {0, 0};  // sums of elements 0..15 and 16..31
    for (int j = 0; j < 32; ++j) {
      q[j] = static_cast<int8_t>(std::nearbyint(xb[j] * id));
      half[j / 16] += q[j];
    }
    const int sum = half[0] + half[1];
    PackedActMeta& m = meta[static_cast<size_t>(b) * meta_block_stride];
    m.d = fp16_to_f32(f32_to_fp16(d));
    m.extra = zero_point == kPackedHalfSums ? pack_half_sums(half[0], half[1])
              : zero_point != 0
                  ? -zero_point * sum
                  : std::bit_cast<int32_t>(fp16_to_f32(f32_to_fp16(d * static_cast<float>(sum))));
  }
}

void packed_gemm_scalar(TensorType type, const uint8_t* w, int64_t nb, const PackedActTile& a, int nc,
                        float* y, size_t y_stride, int n_rows) {
  STRATA_CHECK(nc >= 1 && nc <= kPackCols && n_rows >= 1 && n_rows <= kPackRows);
  if (type == TensorType::Q4_K)
    return packed_gemm_super_scalar<packed::Kind::Q4_K>(w, nb, a, nc, y, y_stride, n_rows);
  if (type == TensorType::Q5_K)
    return packed_gemm_super_scalar<packed::Kind::Q5_K>(w, nb, a, nc, y, y_stride, n_rows);
  if (type == TensorType::IQ4_XS)
    return packed_gemm_super_scalar<packed::Kind::IQ4_XS>(w, nb, a, nc, y, y_stride, n_rows);
  if (type == TensorType::Q6_K)
    return packed_gemm_super_scalar<packed::Kind::Q6_K>(w, nb, a, nc, y, y_stride, n_rows);
  if (type == TensorType::Q3_K)
    return packed_gemm_super_scalar<packed::Kind::Q3_K>(w, nb, a, nc, y, y_stride, n_rows);
  if (type == TensorType::Q2_K)
    return packed_gemm_super_scalar<packed::Kind::Q2_K>(w, nb, a, nc, y, y_stride, n_rows);
  STRATA_CHECK(!a.super_sums, "super-block activations for a 32-column kind");
  const size_t block_bytes = packed_block_bytes(type);
  const bool has_min = type == TensorType::Q4_1 || type == TensorType::Q5_1;
  const int zero_point = packed_zero_point(type);
  for (int c = 0; c < nc; ++c)
    for (int r = 0; r < n_rows; ++r) {
      float sum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = w + static_cast<size_t>(b) * block_bytes;
        const uint8_t* qs = blk + (has_min ? 2 : 1) * kScalesBytes;
        const int8_t* aq = a.qs + (static_cast<size_t>(b) * kPackCols + c) * 32;
        const PackedActMeta& am = a.meta[static_cast<size_t>(b) * kPackCols + c];
        // Integer part as the row kernels: sum of (u - zero_point) * a.
        int sumi = 0;
        for (int e = 0; e < 32; ++e) sumi += (packed_quant(type, qs, r, e) - zero_point) * aq[e];
        const float dw = fp16_to_f32(load_fp16(blk + r * sizeof(fp16_t)));
        if (has_min) {
          const float mw = fp16_to_f32(load_fp16(blk + kScalesBytes + r * sizeof(fp16_t)));
          sum += dw * am.d * static_cast<float>(sumi) + mw * std::bit_cast<float>(am.extra);
        } else {
          sum += static_cast<float>(sumi) * dw * am.d;
        }
      }
      y[c * y_stride + r] = sum;
    }
}

}  // namespace strata::cpu
