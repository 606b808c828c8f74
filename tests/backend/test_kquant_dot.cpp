// K-quant dot-product kernels (Q2_K..Q6_K x Q8_K): the scalar reference against double-precision
// dots of dequantized data (quant/quantize.h), and every SIMD kernel against the scalar reference.
//
// Tolerances. Every kernel computes, per super-block, exact integer sums and then a few float
// operations; the only differences are float rounding and summation order. They are bounded
// relative to the magnitude
//   M = sum_i |w_i * a_i|  (+ sum_blocks |d_a| * |dmin| * max_min * sum_e |q_e| for the types with
//       a min term, whose two float terms d * sum_q and dmin * sum_m may cancel)
// where w, a are the dequantized weights and activations. kRoundingTol * M with kRoundingTol =
// 1e-6 (about 16 float ulps of M) is ten times the largest difference observed (~2 ulps) and
// far below the effect of any wrong quant, scale or layout bit (>= 1 / 127 of one term).
// Against the original float activations x the Q8_K rounding is added: |x - d * q| <= |d| / 2,
// so |w . x - w . a| <= sum_blocks |d_a| / 2 * sum_{i in block} |w_i|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/kernel_decls.h"
#include "core/cpu_features.h"
#include "core/fp16.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace strata::cpu {
namespace {

constexpr double kRoundingTol = 1e-6;

using Getter = const TypeKernels& (*)();

struct KQuantType {
  const char* name;
  TensorType type;
  std::vector<size_t> fp16_offsets;  // fp16 scale fields inside a block (must be finite)
  int dmin_offset;                   // -1 for the types without a min term
  int max_min;                       // largest sub-block min multiplier
  Getter scalar;
};

const std::vector<KQuantType>& kquant_types() {
  static const std::vector<KQuantType> types = {
      {"Q2_K",
       TensorType::Q2_K,
       {offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)},
       offsetof(BlockQ2_K, dmin),
       15,
       q2_k_kernels_scalar},
      {"Q3_K", TensorType::Q3_K, {offsetof(BlockQ3_K, d)}, -1, 0, q3_k_kernels_scalar},
      {"Q4_K",
       TensorType::Q4_K,
       {offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)},
       offsetof(BlockQ4_K, dmin),
       63,
       q4_k_kernels_scalar},
      {"Q5_K",
       TensorType::Q5_K,
       {offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)},
       offsetof(BlockQ5_K, dmin),
       63,
       q5_k_kernels_scalar},
      {"Q6_K", TensorType::Q6_K, {offsetof(BlockQ6_K, d)}, -1, 0, q6_k_kernels_scalar},
  };
  return types;
}

// The kernels a level runs for a type (its own, or the level's fallback's).
const TypeKernels& level_kernels(const KQuantType& t, IsaLevel isa) {
  return type_kernels(t.type, isa);
}

const int kBlockCounts[] = {1, 2, 3, 5, 17};

size_t block_bytes(TensorType t) {
  return type_traits(t).block_bytes;
}

// A finite fp16: mostly ordinary magnitudes, sometimes the extremes (0, subnormal, 65504).
fp16_t random_fp16(std::mt19937_64& rng, bool extreme) {
  const uint16_t sign = (rng() & 1) ? 0x8000 : 0;
  if (extreme) {
    static const uint16_t kSpecial[] = {0x0000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0x3c00};
    return sign | kSpecial[rng() % 6];
  }
  const uint16_t exp = 8 + rng() % 14;  // 2^-7 .. 2^6
  return static_cast<fp16_t>(sign | (exp << 10) | (rng() & 0x3ff));
}

// Random bytes in every quant, scale and high-bit field; finite fp16 super-block scales.
std::vector<uint8_t> random_blocks(const KQuantType& t, int64_t nb, std::mt19937_64& rng, bool extreme) {
  std::vector<uint8_t> data(nb * block_bytes(t.type));
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < nb; ++i)
    for (size_t off : t.fp16_offsets) {
      const fp16_t h = random_fp16(rng, extreme && rng() % 3 == 0);
      std::memcpy(data.data() + i * block_bytes(t.type) + off, &h, sizeof(h));
    }
  return data;
}

// Weights as a model has them: quantized from Gaussian floats by the quantization engine.
std::vector<uint8_t> quantized_blocks(const KQuantType& t, int64_t nb, std::mt19937_64& rng) {
  std::normal_distribution<float> gauss(0.0f, 0.02f);
  std::vector<float> x(nb * kQK_K);
  for (auto& v : x) v = gauss(rng);
  std::vector<uint8_t> data(row_bytes(t.type, nb * kQK_K));
  quantize_row(t.type, x.data(), data.data(), nb * kQK_K);
  return data;
}

// Gaussian activations with a per-block magnitude, some blocks tiny or huge, a few outliers.
std::vector<float> random_activations(int64_t n, std::mt19937_64& rng, bool extreme) {
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  std::vector<float> x(n);
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    float scale = 1.0f;
    if (extreme) {
      static const float kScales[] = {1e-8f, 1e-3f, 1.0f, 30.0f, 1e4f};
      scale = kScales[rng() % 5];
    }
    for (int j = 0; j < kQK_K; ++j) x[b * kQK_K + j] = gauss(rng) * scale;
    if (rng() % 2) x[b * kQK_K + rng() % kQK_K] = 20.0f * scale;  // one outlier dominates amax
  }
  return x;
}

std::vector<float> dequantized(TensorType type, const uint8_t* data, int64_t n) {
  const size_t bytes = row_bytes(type, n);
  std::vector<uint64_t> aligned((bytes + 7) / 8);  // codecs may expect natural alignment
  std::memcpy(aligned.data(), data, bytes);
  std::vector<float> out(n);
  dequantize_row(type, aligned.data(), out.data(), n);
  return out;
}

std::vector<uint8_t> quantize_q8_k(const std::vector<float>& x) {
  std::vector<uint8_t> a(row_bytes(TensorType::Q8_K, static_cast<int64_t>(x.size())));
  quantize_row_q8_k_scalar(x.data(), a.data(), static_cast<int64_t>(x.size()));
  return a;
}

float q8k_scale(const uint8_t* a, int64_t block) {
  float d;
  std::memcpy(&d, a + block * sizeof(BlockQ8_K) + offsetof(BlockQ8_K, d), sizeof(d));
  return d;
}

// The magnitude M of the header comment for one weight row and one activation row.
double magnitude(const KQuantType& t, const uint8_t* w, const uint8_t* a, int64_t n) {
  const std::vector<float> wf = dequantized(t.type, w, n);
  const std::vector<float> af = dequantized(TensorType::Q8_K, a, n);
  double m = 0.0;
  for (int64_t i = 0; i < n; ++i) m += std::fabs(static_cast<double>(wf[i]) * af[i]);
  if (t.dmin_offset >= 0) {
    for (int64_t b = 0; b < n / kQK_K; ++b) {
      fp16_t h;
      std::memcpy(&h, w + b * block_bytes(t.type) + t.dmin_offset, sizeof(h));
      const double da = std::fabs(q8k_scale(a, b));
      double qsum = 0.0;  // sum |q| = sum |a| / |d_a|
      for (int j = 0; j < kQK_K; ++j)
        qsum += std::abs(static_cast<int8_t>(a[b * sizeof(BlockQ8_K) + offsetof(BlockQ8_K, qs) + j]));
      m += da * std::fabs(fp16_to_f32(h)) * t.max_min * qsum;
    }
  }
  return m;
}

// A buffer whose data() is misaligned by `offset` bytes from a 64-byte boundary.
class Misaligned {
 public:
  Misaligned(const std::vector<uint8_t>& src, size_t offset) : storage_(src.size() + 128) {
    const auto base = reinterpret_cast<uintptr_t>(storage_.data());
    ptr_ = storage_.data() + ((64 - base % 64) % 64) + offset;
    std::memcpy(ptr_, src.data(), src.size());
  }
  const uint8_t* data() const { return ptr_; }

 private:
  std::vector<uint8_t> storage_;
  uint8_t* ptr_;
};

std::string label(const KQuantType& t, int64_t nb, const char* what) {
  return std::string(t.name) + " " + what + " blocks=" + std::to_string(nb);
}

// Scalar vec_dot against double-precision dots of dequantized data.
TEST(KQuantDot, ScalarMatchesDequantizedDot) {
  std::mt19937_64 rng(1234);
  for (const KQuantType& t : kquant_types()) {
    const TypeKernels& k = t.scalar();
    ASSERT_EQ(k.vec_dot_type, TensorType::Q8_K);
    for (int64_t nb : kBlockCounts) {
      for (int trial = 0; trial < 6; ++trial) {
        const bool extreme = trial % 2 == 1;
        const int64_t n = nb * kQK_K;
        const std::vector<uint8_t> w =
            trial < 4 ? random_blocks(t, nb, rng, extreme) : quantized_blocks(t, nb, rng);
        const std::vector<float> x = random_activations(n, rng, extreme);
        const std::vector<uint8_t> a = quantize_q8_k(x);
        const std::vector<float> wf = dequantized(t.type, w.data(), n);
        const std::vector<float> af = dequantized(TensorType::Q8_K, a.data(), n);
        double dot_a = 0.0, dot_x = 0.0, q8_err = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          dot_a += static_cast<double>(wf[i]) * af[i];
          dot_x += static_cast<double>(wf[i]) * x[i];
          q8_err += std::fabs(static_cast<double>(wf[i])) * std::fabs(q8k_scale(a.data(), i / kQK_K)) * 0.5;
        }
        const double m = magnitude(t, w.data(), a.data(), n);
        const float got = k.vec_dot(n, w.data(), a.data());
        ASSERT_TRUE(std::isfinite(got)) << label(t, nb, "scalar");
        EXPECT_NEAR(got, dot_a, kRoundingTol * m + 1e-30) << label(t, nb, "scalar vs dequantized Q8_K");
        EXPECT_NEAR(got, dot_x, q8_err * (1 + 1e-5) + kRoundingTol * m + 1e-30)
            << label(t, nb, "scalar vs float activations");
      }
    }
  }
}

// A hand-built Q4_K block: every quant 1, sub-block scale j + 1, min 2 * j, d = 1, dmin = 0.5,
// against activations of all ones (q = -127, d = -1 / 127): sum_j 32 * ((j + 1) - 0.5 * 2j) = 256.
TEST(KQuantDot, HandBuiltQ4KBlock) {
  BlockQ4_K w{};
  w.d = f32_to_fp16(1.0f);
  w.dmin = f32_to_fp16(0.5f);
  uint8_t sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = static_cast<uint8_t>(j + 1);
    m[j] = static_cast<uint8_t>(2 * j);
  }
  pack_k4_scale_min(sc, m, w.scales);
  std::memset(w.qs, 0x11, sizeof(w.qs));
  std::vector<float> x(kQK_K, 1.0f);
  const std::vector<uint8_t> a = quantize_q8_k(x);
  for (const KQuantType& t : kquant_types()) {
    if (t.type != TensorType::Q4_K) continue;
    for (IsaLevel isa : supported_isa_levels())
      EXPECT_NEAR(level_kernels(t, isa).vec_dot(kQK_K, &w, a.data()), 256.0f, 1e-3f) << isa_name(isa);
  }
}

// Every SIMD vec_dot against the scalar reference: sizes, misaligned pointers, extreme scales.
TEST(KQuantDot, SimdVecDotMatchesScalar) {
  std::mt19937_64 rng(99);
  for (IsaLevel isa : supported_isa_levels()) {
    if (isa == IsaLevel::Scalar) continue;
    const std::string level = isa_name(isa);
    for (const KQuantType& t : kquant_types()) {
      const TypeKernels& ref = t.scalar();
      const TypeKernels& simd = level_kernels(t, isa);
      EXPECT_EQ(simd.vec_dot_type, TensorType::Q8_K);
      for (int64_t nb : kBlockCounts) {
        for (int trial = 0; trial < 8; ++trial) {
          const int64_t n = nb * kQK_K;
          const bool extreme = trial % 2 == 1;
          const std::vector<uint8_t> w =
              trial < 6 ? random_blocks(t, nb, rng, extreme) : quantized_blocks(t, nb, rng);
          const std::vector<uint8_t> a = quantize_q8_k(random_activations(n, rng, extreme));
          const Misaligned wm(w, trial % 4), am(a, (trial + 1) % 4);
          const float want = ref.vec_dot(n, w.data(), a.data());
          const float got = simd.vec_dot(n, wm.data(), am.data());
          EXPECT_NEAR(got, want, kRoundingTol * magnitude(t, w.data(), a.data(), n) + 1e-30)
              << label(t, nb, level.c_str()) << " trial " << trial;
        }
      }
    }
  }
}

// Every tile shape 1x1..8x8 (ISA and scalar), padded strides, misaligned pointers; output slots
// outside the tile stay untouched.
TEST(KQuantDot, GemmTileAllShapesMatchVecDot) {
  std::mt19937_64 rng(7);
  const int kRows = kMaxTileRows, kCols = kMaxTileCols;
  for (IsaLevel isa : supported_isa_levels()) {
    for (const KQuantType& t : kquant_types()) {
      const TypeKernels& ref = t.scalar();
      const TypeKernels& k = level_kernels(t, isa);
      EXPECT_GE(k.tile_rows, 1);
      EXPECT_LE(k.tile_rows, kMaxTileRows);
      EXPECT_GE(k.tile_cols, 1);
      EXPECT_LE(k.tile_cols, kMaxTileCols);
      for (int64_t nb : {1, 3, 17}) {
        const int64_t n = nb * kQK_K;
        const size_t w_stride = row_bytes(t.type, n) + (nb % 2) * 5;  // odd padding between rows
        const size_t a_stride = row_bytes(TensorType::Q8_K, n) + 3;
        std::vector<uint8_t> w(kRows * w_stride), a(kCols * a_stride);
        for (int r = 0; r < kRows; ++r) {
          const std::vector<uint8_t> row = random_blocks(t, nb, rng, r % 3 == 2);
          std::memcpy(w.data() + r * w_stride, row.data(), row.size());
        }
        for (int c = 0; c < kCols; ++c) {
          const std::vector<uint8_t> col = quantize_q8_k(random_activations(n, rng, c % 3 == 1));
          std::memcpy(a.data() + c * a_stride, col.data(), col.size());
        }
        double want[kMaxTileCols][kMaxTileRows], tol[kMaxTileCols][kMaxTileRows];
        for (int c = 0; c < kCols; ++c)
          for (int r = 0; r < kRows; ++r) {
            const uint8_t* wr = w.data() + r * w_stride;
            const uint8_t* ac = a.data() + c * a_stride;
            want[c][r] = ref.vec_dot(n, wr, ac);
            tol[c][r] = kRoundingTol * magnitude(t, wr, ac, n) + 1e-30;
          }
        const Misaligned wm(w, 1 + nb % 3), am(a, 2);
        for (int nr = 1; nr <= kRows; ++nr)
          for (int nc = 1; nc <= kCols; ++nc) {
            const size_t out_stride = nr + 2;
            std::vector<float> out(nc * out_stride + 1, -12345.0f);
            k.gemm_tile(n, nr, nc, wm.data(), w_stride, am.data(), a_stride, out.data(), out_stride);
            for (int c = 0; c < nc; ++c) {
              for (int r = 0; r < nr; ++r)
                ASSERT_NEAR(out[c * out_stride + r], want[c][r], tol[c][r])
                    << label(t, nb, isa_name(isa).c_str()) << " tile " << nr << "x" << nc << " r" << r << " c"
                    << c;
              for (size_t r = nr; r < out_stride; ++r) ASSERT_EQ(out[c * out_stride + r], -12345.0f);
            }
          }
      }
    }
  }
}

// The registry hands out kernels for every level the CPU has (STRATA_ISA / set_isa_level pick
// among them): the level's own where it has them (every K-quant has avx2 and avx512 kernels,
// Q4_K..Q6_K also avxvnni ones), never one the CPU lacks or one the level does not include.
TEST(KQuantDot, RegistryServesEveryLevel) {
  for (const KQuantType& t : kquant_types()) {
    ASSERT_TRUE(has_type_kernels(t.type)) << t.name;
    EXPECT_EQ(type_kernels(t.type, IsaLevel::Scalar).vec_dot, t.scalar().vec_dot) << t.name;
    for (IsaLevel isa : supported_isa_levels()) {
      const IsaLevel got = resolved_isa(t.type, isa);
      EXPECT_TRUE(isa_supported(got) && isa_includes(isa, got)) << t.name << " " << isa_name(isa);
      const bool own = isa == IsaLevel::Avx2 || isa == IsaLevel::Avx512 ||
                       (isa == IsaLevel::AvxVnni && t.type != TensorType::Q2_K && t.type != TensorType::Q3_K);
      if (own) {
        EXPECT_EQ(got, isa) << t.name << " " << isa_name(isa);
      }
    }
  }
}

// Zero activations (a zero Q8_K block) give exactly 0 whatever the weights.
TEST(KQuantDot, ZeroActivationsGiveZero) {
  std::mt19937_64 rng(5);
  for (IsaLevel isa : supported_isa_levels()) {
    for (const KQuantType& t : kquant_types()) {
      const TypeKernels& k = level_kernels(t, isa);
      const std::vector<uint8_t> w = random_blocks(t, 3, rng, false);
      const std::vector<uint8_t> a = quantize_q8_k(std::vector<float>(3 * kQK_K, 0.0f));
      EXPECT_EQ(k.vec_dot(3 * kQK_K, w.data(), a.data()), 0.0f) << t.name << " " << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace strata::cpu
