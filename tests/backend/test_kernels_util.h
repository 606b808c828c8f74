// Shared helpers of the kernel and matmul tests: random weights of every type, the
// double-precision reference built from quant/quantize.h's dequantize_row, and the error bound
// the tests allow.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_kernels.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "core/tensor_type.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace strata::cpu::testing {

// Every ISA level of the architecture the tests were built for, lowest first: the per-level
// tests are instantiated for all of them and skip the ones this CPU lacks (isa_supported).
inline std::vector<IsaLevel> arch_isa_levels() {
#if defined(__aarch64__)
  return {IsaLevel::Scalar, IsaLevel::Neon, IsaLevel::NeonDotprod, IsaLevel::NeonI8mm};
#else
  return {IsaLevel::Scalar, IsaLevel::Avx2, IsaLevel::AvxVnni, IsaLevel::Avx512, IsaLevel::Amx};
#endif
}

// The same without the scalar level (the references).
inline std::vector<IsaLevel> arch_simd_levels() {
  std::vector<IsaLevel> out = arch_isa_levels();
  out.erase(out.begin());
  return out;
}

inline const std::vector<TensorType>& legacy_and_float_types() {
  static const std::vector<TensorType> types = {TensorType::F32,  TensorType::F16,  TensorType::BF16,
                                                TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                                TensorType::Q5_1, TensorType::Q8_0};
  return types;
}

inline bool is_float_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = nd(gen);
  return v;
}

// A random block of the IQ / ternary / MXFP4 types made decodable without overflow: random bytes
// with a random finite fp16 scale (IQ1_M: spread over its scales' top nibbles) or, for MXFP4, an
// exponent of 2^-18 .. 2^11 times the fp4 values. blk: one block of `type`.
inline void make_iq_block_finite(TensorType type, uint8_t* blk, std::mt19937& gen) {
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  const fp16_t d = f32_to_fp16(scale(gen));
  size_t d_offset = 0;  // most blocks start with their fp16 d
  switch (type) {
    case TensorType::MXFP4:
      blk[0] = static_cast<uint8_t>(110 + gen() % 30);
      return;
    case TensorType::IQ1_M: {
      uint16_t sc[4];
      std::memcpy(sc, blk + 48, 8);
      for (int i = 0; i < 4; ++i)
        sc[i] = static_cast<uint16_t>((sc[i] & 0x0FFF) | (((d >> (4 * i)) & 0xF) << 12));
      std::memcpy(blk + 48, sc, 8);
      return;
    }
    case TensorType::TQ1_0:
      d_offset = 52;
      break;
    case TensorType::TQ2_0:
      d_offset = 64;
      break;
    default:
      break;
  }
  std::memcpy(blk + d_offset, &d, 2);
}

// n_rows rows of `type` with n elements each, `stride` bytes apart, written at dst. Legacy
// quantized blocks and the IQ / ternary / MXFP4 types are random bytes (every bit pattern is a
// valid block) with random finite scales (and mins); K-quant rows are quantized normal values;
// float rows are normal values.
inline void fill_random_rows(TensorType type, int64_t n, int64_t n_rows, size_t stride, uint8_t* dst,
                             uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const TypeTraits& tt = type_traits(type);
  for (int64_t r = 0; r < n_rows; ++r) {
    uint8_t* row = dst + static_cast<size_t>(r) * stride;
    if (!tt.quantized) {
      for (int64_t i = 0; i < n; ++i) {
        const float v = nd(gen);
        if (type == TensorType::F32) std::memcpy(row + 4 * i, &v, 4);
        const uint16_t h = type == TensorType::F16 ? f32_to_fp16(v) : f32_to_bf16(v);
        if (type != TensorType::F32) std::memcpy(row + 2 * i, &h, 2);
      }
      continue;
    }
    const bool iq = type >= TensorType::IQ2_XXS && type != TensorType::BF16;
    if (iq) {  // every bit pattern decodes: random bytes with usable scales
      for (size_t i = 0; i < row_bytes(type, n); ++i) row[i] = static_cast<uint8_t>(byte(gen));
      for (int64_t b = 0; b < n / tt.block_size; ++b)
        make_iq_block_finite(type, row + b * tt.block_bytes, gen);
      continue;
    }
    if (tt.block_size != 32) {  // K-quants: scales sit mid-block; quantize real values instead
      std::vector<float> v(static_cast<size_t>(n));
      for (auto& x : v) x = nd(gen);
      quantize_row(type, v.data(), row, n);
      continue;
    }
    for (size_t i = 0; i < row_bytes(type, n); ++i) row[i] = static_cast<uint8_t>(byte(gen));
    // Every legacy block starts with d (and, for Q4_1/Q5_1, m) as fp16: make them finite.
    const bool has_min = type == TensorType::Q4_1 || type == TensorType::Q5_1;
    for (int64_t b = 0; b < n / tt.block_size; ++b) {
      uint8_t* blk = row + static_cast<size_t>(b) * tt.block_bytes;
      const fp16_t d = f32_to_fp16(scale(gen)), m = f32_to_fp16(scale(gen) * 8.0f);
      std::memcpy(blk, &d, 2);
      if (has_min) std::memcpy(blk + 2, &m, 2);
    }
  }
}

// The row decoded by dequantize_row (from an aligned copy: the kernels' tests place rows at odd
// addresses, which dequantize_row does not promise to accept).
inline std::vector<double> dequantized(TensorType type, const uint8_t* row, int64_t n) {
  const std::vector<uint8_t> copy(row, row + row_bytes(type, n));
  std::vector<float> f(static_cast<size_t>(n));
  dequantize_row(type, copy.data(), f.data(), n);
  return {f.begin(), f.end()};
}

// Exact dot product of two dequantized rows and the sum of |products| it is measured against.
struct RefDot {
  double value = 0.0;
  double abs_sum = 0.0;
};

inline RefDot ref_dot(const std::vector<double>& w, const std::vector<double>& a) {
  RefDot r;
  for (size_t i = 0; i < w.size(); ++i) {
    r.value += w[i] * a[i];
    r.abs_sum += std::fabs(w[i] * a[i]);
  }
  return r;
}

// The exact value the kernels approximate for weight row w (type wtype) and activation row a
// (type atype), from dequantize_row. Q8_1 activations carry s = fp16(d * sum(q)) as llama.cpp's;
// the Q4_1/Q5_1 kernels multiply the weights' min by that stored s, so the reference does too.
inline RefDot ref_dot_rows(TensorType wtype, const uint8_t* w, TensorType atype, const uint8_t* a,
                           int64_t n) {
  const std::vector<double> wd = dequantized(wtype, w, n), ad = dequantized(atype, a, n);
  RefDot r = ref_dot(wd, ad);
  if (atype == TensorType::Q8_1) {
    const size_t wbytes = type_traits(wtype).block_bytes, abytes = type_traits(atype).block_bytes;
    for (int64_t b = 0; b < n / 32; ++b) {
      fp16_t mh, sh;
      std::memcpy(&mh, w + b * wbytes + 2, 2);  // Q4_1 / Q5_1: d, then m
      std::memcpy(&sh, a + b * abytes + 2, 2);  // Q8_1: d, then s
      double sum_a = 0.0;
      for (int64_t i = 32 * b; i < 32 * (b + 1); ++i) sum_a += ad[static_cast<size_t>(i)];
      const double m = fp16_to_f32(mh), s = fp16_to_f32(sh);
      r.value += m * (s - sum_a);
      r.abs_sum += std::fabs(m * s);
    }
  }
  return r;
}

// The exact value the interleaved Q4_K / Q5_K kernels approximate (packed_kernels.h) for row w
// of type wt and Q8_1 activation row a (the packed activation format): they multiply sub-block
// j's min dmin * m_j by the stored s = fp16(d_a * sum(q)) instead of the exact sum of the
// activations. Both blocks start d, dmin, scales[12].
inline RefDot ref_dot_k_min_packed(TensorType wt, const uint8_t* w, const uint8_t* a, int64_t n) {
  const std::vector<double> wd = dequantized(wt, w, n), ad = dequantized(TensorType::Q8_1, a, n);
  const size_t block_bytes = type_traits(wt).block_bytes;
  RefDot r = ref_dot(wd, ad);
  for (int64_t b = 0; b < n / 32; ++b) {
    const uint8_t* blk = w + static_cast<size_t>(b / 8) * block_bytes;
    fp16_t dmin;
    std::memcpy(&dmin, blk + 2, 2);
    uint8_t sc, m;
    unpack_k4_scale_min(blk + 4, static_cast<int>(b % 8), &sc, &m);
    fp16_t sh;
    std::memcpy(&sh, a + b * sizeof(BlockQ8_1) + 2, 2);  // Q8_1: d, then s
    double sum_a = 0.0;
    for (int64_t i = 32 * b; i < 32 * (b + 1); ++i) sum_a += ad[static_cast<size_t>(i)];
    const double min = static_cast<double>(fp16_to_f32(dmin)) * m, s = fp16_to_f32(sh);
    r.value -= min * (s - sum_a);
    r.abs_sum += std::fabs(min * s);
  }
  return r;
}

// The exact value the interleaved super-block kernels approximate for weight row w of type wt and a
// super-block activation row a (kPackedSuperSums, kPackedSuperHalfSums) written as Q8_K blocks
// (quantize_packed_act_row): the dequantized rows' dot product. abs_sum also counts the min part of
// Q4_K's and Q5_K's sub-blocks (dmin * m * sum|a|) and of Q2_K's halves, which those kernels sum in int32
// apart from the scaled part (the two can cancel in the value).
inline RefDot ref_dot_super_sums(TensorType wt, const uint8_t* w, const uint8_t* a, int64_t n) {
  const std::vector<double> ad = dequantized(TensorType::Q8_K, a, n);
  RefDot r = ref_dot(dequantized(wt, w, n), ad);
  const bool k4 = wt == TensorType::Q4_K || wt == TensorType::Q5_K;
  if (!k4 && wt != TensorType::Q2_K) return r;  // one exact integer sum per super-block
  const int span = k4 ? 32 : 16;                // elements per min
  for (int64_t b = 0; b < n / span; ++b) {
    const uint8_t* blk = w + static_cast<size_t>(b * span / 256) * type_traits(wt).block_bytes;
    const int j = static_cast<int>(b % (256 / span));
    fp16_t dmin;
    uint8_t m;
    if (k4) {
      std::memcpy(&dmin, blk + 2, 2);  // Q4_K and Q5_K blocks start d, dmin, scales[12]
      uint8_t sc;
      unpack_k4_scale_min(blk + 4, j, &sc, &m);
    } else {
      std::memcpy(&dmin, blk + offsetof(BlockQ2_K, dmin), 2);
      m = static_cast<uint8_t>(blk[j] >> 4);  // scales[16]: scale | min << 4
    }
    double abs_a = 0.0;
    for (int64_t i = span * b; i < span * (b + 1); ++i) abs_a += std::fabs(ad[static_cast<size_t>(i)]);
    r.abs_sum += 2.0 * static_cast<double>(fp16_to_f32(dmin)) * m * abs_a;
  }
  return r;
}

// The interleaved super-block layouts (packed_kernels.h) quantize activations per 32 as Q8_1
// for Q4_K and Q5_K and as Q8_0 for IQ4_XS, Q6_K, Q3_K and Q2_K, except where the level's set
// takes one scale per super-block for one of them (is_super_act_mode: one float d per
// 256, written here as Q8_K blocks). packed_act_type names the format at the current level (isa_level(), what
// matmul runs); ref_dot_packed is the exact value those kernels approximate for weight row w of type wt and
// an activation row a of that format.
inline bool packs_super_blocks(TensorType wt) {
  return wt == TensorType::Q4_K || wt == TensorType::Q5_K || wt == TensorType::IQ4_XS ||
         wt == TensorType::Q6_K || wt == TensorType::Q3_K || wt == TensorType::Q2_K;
}
inline bool packed_super_sums(TensorType wt) {
  return is_super_act_mode(packed_act_mode(wt, packed_kernels(isa_level())));
}
inline TensorType packed_act_type(TensorType wt, bool super_sums) {
  if (super_sums) return TensorType::Q8_K;
  return wt == TensorType::Q4_K || wt == TensorType::Q5_K ? TensorType::Q8_1 : TensorType::Q8_0;
}
// Quantizes x ([n]) into dst as packed_act_type(wt, super_sums), exactly as the packed quantizer
// does (the scalar kernels of Q4_1 and Q4_0 make Q8_1 and Q8_0 rows; kPackedSuperSums: the scalar
// packed quantizer's d and quants in Q8_K blocks, bsums of 16).
inline void quantize_packed_act_row(TensorType wt, const float* x, uint8_t* dst, int64_t n, bool super_sums) {
  if (super_sums) {
    std::vector<int8_t> qs(static_cast<size_t>(n));
    std::vector<PackedActMeta> meta(static_cast<size_t>(n / 32));
    quantize_packed_act_scalar(x, n / 32, kPackedSuperSums, qs.data(), 32, meta.data(), 1);
    for (int64_t s = 0; s < n / 256; ++s) {
      BlockQ8_K blk{};
      blk.d = meta[static_cast<size_t>(8 * s)].d;
      for (int i = 0; i < 256; ++i) {
        blk.qs[i] = qs[static_cast<size_t>(256 * s + i)];
        blk.bsums[i / 16] = static_cast<int16_t>(blk.bsums[i / 16] + blk.qs[i]);
      }
      std::memcpy(dst + s * sizeof(BlockQ8_K), &blk, sizeof blk);
    }
    return;
  }
  const TensorType maker =
      packed_act_type(wt, false) == TensorType::Q8_1 ? TensorType::Q4_1 : TensorType::Q4_0;
  type_kernels(maker, IsaLevel::Scalar).from_float(x, dst, n);
}
inline RefDot ref_dot_packed(TensorType wt, const uint8_t* w, const uint8_t* a, int64_t n, bool super_sums) {
  const TensorType at = packed_act_type(wt, super_sums);
  if (at == TensorType::Q8_K) return ref_dot_super_sums(wt, w, a, n);
  if (at == TensorType::Q8_1) return ref_dot_k_min_packed(wt, w, a, n);
  return ref_dot_rows(wt, w, at, a, n);
}
// The same at the current level.
inline TensorType packed_act_type(TensorType wt) {
  return packed_act_type(wt, packed_super_sums(wt));
}
inline void quantize_packed_act_row(TensorType wt, const float* x, uint8_t* dst, int64_t n) {
  quantize_packed_act_row(wt, x, dst, n, packed_super_sums(wt));
}
inline RefDot ref_dot_packed(TensorType wt, const uint8_t* w, const uint8_t* a, int64_t n) {
  return ref_dot_packed(wt, w, a, n, packed_super_sums(wt));
}

// Error allowed between a float-accumulated dot product and the exact one: each of `terms`
// float additions (32-element block contributions, or single products for float types) and the
// few roundings per term may each lose half an ulp of a partial sum bounded by abs_sum; two
// such computations (kernel and reference) may err in opposite directions.
inline double dot_tolerance(int64_t terms, double abs_sum) {
  return (2.0 * static_cast<double>(terms) + 8.0) * FLT_EPSILON * abs_sum + 1e-30;
}

// Terms of the float accumulation for a row of n elements of `type`.
inline int64_t accumulation_terms(TensorType type, int64_t n) {
  return type_traits(type).quantized ? n / type_traits(type).block_size * 2 : n;
}

}  // namespace strata::cpu::testing
