// The interleaved super-block layouts of Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K and Q2_K (packed_kernels.h): their
// repacking and the kernels of every level, against the exact dot products of the GGUF rows (dequantize_row)
// with the packed activations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_kernels.h"
#include "packed_test_util.h"
#include "quant/blocks.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::check_packed_call_shapes;
using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::random_floats;

constexpr TensorType kSuperTypes[] = {TensorType::Q4_K, TensorType::Q5_K, TensorType::IQ4_XS,
                                      TensorType::Q6_K, TensorType::Q3_K, TensorType::Q2_K};

int super_mode(TensorType type) {
  return type == TensorType::Q6_K || type == TensorType::Q3_K || type == TensorType::Q2_K
             ? kPackedSuperHalfSums
             : kPackedSuperSums;
}

// Rows [n_out, n_super * 256] of type with their interleaved copy, and kPackCols tokens as
// activation rows (the reference) and as one packed activation tile, quantized per 32 or, with
// super_sums, with one scale per super-block (super_mode).
struct Problem {
  TensorType type, act_type;
  int64_t n_in, n_out, n_groups;
  bool super_sums;
  std::vector<uint8_t> rows, packed, act_rows;
  std::vector<int8_t> act_qs;
  std::vector<PackedActMeta> act_meta;

  Problem(TensorType type_, int64_t n_super, int64_t n_out_, uint32_t seed, bool super_sums_ = false)
      : type(type_),
        act_type(testing::packed_act_type(type_, super_sums_)),
        n_in(n_super * 256),
        n_out(n_out_),
        n_groups((n_out_ + kPackRows - 1) / kPackRows),
        super_sums(super_sums_) {
    const size_t rb = row_bytes(type, n_in);
    rows.resize(rb * static_cast<size_t>(n_out));
    fill_random_rows(type, n_in, n_out, rb, rows.data(), seed);
    packed.resize(group_bytes() * static_cast<size_t>(n_groups));
    for (int64_t g = 0; g < n_groups; ++g)
      repack_group(type, rows.data(), rb, n_out, g, nb(), packed.data() + g * group_bytes());
    std::vector<float> x = random_floats(static_cast<size_t>(kPackCols * n_in), seed + 1, 2.0f);
    for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.0f;  // a zero block (d = 0)
    act_rows.resize(row_bytes(act_type, n_in) * kPackCols);
    act_qs.resize(static_cast<size_t>(nb()) * kPackCols * 32);
    act_meta.resize(static_cast<size_t>(nb()) * kPackCols);
    for (int c = 0; c < kPackCols; ++c) {
      testing::quantize_packed_act_row(type, x.data() + c * n_in,
                                       act_rows.data() + c * row_bytes(act_type, n_in), n_in, super_sums);
      quantize_packed_act_scalar(x.data() + c * n_in, nb(),
                                 super_sums ? super_mode(type) : packed_zero_point(type),
                                 act_qs.data() + c * 32, kPackCols * 32, act_meta.data() + c, kPackCols);
    }
  }
  int64_t nb() const { return n_in / 32; }
  size_t group_bytes() const { return static_cast<size_t>(nb()) * packed_block_bytes(type); }
  const uint8_t* group(int64_t g) const { return packed.data() + g * group_bytes(); }
  PackedActTile tile() const { return {act_qs.data(), act_meta.data(), super_sums}; }
  testing::RefDot exact(int64_t o, int c) const {
    const uint8_t* w = rows.data() + o * row_bytes(type, n_in);
    const uint8_t* a = act_rows.data() + c * row_bytes(act_type, n_in);
    return testing::ref_dot_packed(type, w, a, n_in, super_sums);
  }
};

TEST(PackedSuperBlocks, LayoutIsOneSuperBlockPer16RowsOf256Columns) {
  EXPECT_TRUE(packable_type(TensorType::Q4_K));
  EXPECT_EQ(packed_block_bytes(TensorType::Q4_K) * 8, 2368u);
  EXPECT_EQ(packed_zero_point(TensorType::Q4_K), 0);
  EXPECT_TRUE(packable_type(TensorType::IQ4_XS));
  EXPECT_EQ(packed_block_bytes(TensorType::IQ4_XS) * 8, 2208u);
  EXPECT_EQ(packed_zero_point(TensorType::IQ4_XS), 128);
  EXPECT_TRUE(packable_type(TensorType::Q5_K));
  EXPECT_EQ(packed_block_bytes(TensorType::Q5_K) * 8, 2880u);
  EXPECT_EQ(packed_zero_point(TensorType::Q5_K), 0);
  EXPECT_TRUE(packable_type(TensorType::Q6_K));
  EXPECT_EQ(packed_block_bytes(TensorType::Q6_K) * 8, 3360u);
  EXPECT_EQ(packed_zero_point(TensorType::Q6_K), kPackedHalfSums);
  EXPECT_TRUE(packable_type(TensorType::Q3_K));
  EXPECT_EQ(packed_block_bytes(TensorType::Q3_K) * 8, 1824u);
  EXPECT_EQ(packed_zero_point(TensorType::Q3_K), kPackedHalfSums);
  EXPECT_TRUE(packable_type(TensorType::Q2_K));
  EXPECT_EQ(packed_block_bytes(TensorType::Q2_K) * 8, 1344u);
  EXPECT_EQ(packed_zero_point(TensorType::Q2_K), kPackedHalfSums);
}

// The scalar kernel against the exact values, in every group (the last one partial: its padding
// rows are zero and must not disturb the real ones).
TEST(PackedSuperBlocks, ScalarKernelMatchesDequantizedRows) {
  for (TensorType type : kSuperTypes)
    for (int64_t n_super : {1, 3})
      for (bool super_sums : {false, true}) {
        const Problem p(type, n_super, 2 * kPackRows + 7, 40 + static_cast<uint32_t>(n_super), super_sums);
        for (int64_t g = 0; g < p.n_groups; ++g) {
          const int n_rows = static_cast<int>(std::min<int64_t>(kPackRows, p.n_out - g * kPackRows));
          std::vector<float> y(kPackCols * kPackRows, -777.0f);
          packed_gemm_scalar(type, p.group(g), p.nb(), p.tile(), kPackCols, y.data(), kPackRows, n_rows);
          for (int c = 0; c < kPackCols; ++c)
            for (int r = 0; r < n_rows; ++r) {
              const auto exact = p.exact(g * kPackRows + r, c);
              ASSERT_NEAR(y[c * kPackRows + r], exact.value, dot_tolerance(2 * p.nb(), exact.abs_sum))
                  << type_name(type) << ", " << n_super << " super-blocks, group " << g << " row " << r
                  << " token " << c << (super_sums ? ", super-block sums" : "");
            }
        }
      }
}

// kPackedSuperSums against a direct computation: d = amax / 127 over each 256 elements (a float,
// not rounded), q = x / d rounded to nearest even, every block's meta d the super-block's, and
// its extra the quant sums of its block pair (the even block's in the low int16).
TEST(PackedSuperBlocks, SuperSumsQuantizerFollowsItsDefinition) {
  const int64_t nb = 24;
  std::vector<float> x = random_floats(static_cast<size_t>(nb * 32), 71, 3.0f);
  for (int i = 256; i < 512; ++i) x[static_cast<size_t>(i)] = 0.0f;  // a zero super-block (d = 0)
  x[600] = -9.5f;                                                    // a negative extreme
  std::vector<int8_t> qs(static_cast<size_t>(nb) * 40, 0x55);
  std::vector<PackedActMeta> meta(static_cast<size_t>(nb) * 2);
  quantize_packed_act_scalar(x.data(), nb, kPackedSuperSums, qs.data(), 40, meta.data(), 2);
  for (int64_t s = 0; s < nb / 8; ++s) {
    double amax = 0.0;
    for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(static_cast<double>(x[s * 256 + i])));
    const float d = static_cast<float>(amax) / 127.0f;
    int sums[8] = {};
    for (int j = 0; j < 8; ++j)
      for (int e = 0; e < 32; ++e) {
        const float v = x[static_cast<size_t>(s * 256 + 32 * j + e)];
        const int want = d == 0.0f ? 0 : static_cast<int>(std::nearbyint(v * (1.0f / d)));
        ASSERT_LE(std::abs(want), 127);
        ASSERT_EQ(qs[static_cast<size_t>((8 * s + j) * 40 + e)], want)
            << "super-block " << s << " element " << 32 * j + e;
        sums[j] += want;
      }
    for (int j = 0; j < 8; ++j) {
      const PackedActMeta& m = meta[static_cast<size_t>((8 * s + j) * 2)];
      ASSERT_EQ(m.d, d);
      EXPECT_EQ(pair_sum(m.extra, j), sums[j]);
      EXPECT_EQ(pair_sum(m.extra, j ^ 1), sums[j ^ 1]);
      EXPECT_EQ(static_cast<int16_t>(m.extra & 0xffff), sums[j & ~1]);
    }
  }
  EXPECT_EQ(qs[32], 0x55);  // the gaps between strided blocks untouched
  // kPackedSuperHalfSums: the same quants and d, each block's extra its own half sums.
  std::vector<int8_t> qs_h(qs.size(), 0x55);
  std::vector<PackedActMeta> meta_h(meta.size());
  quantize_packed_act_scalar(x.data(), nb, kPackedSuperHalfSums, qs_h.data(), 40, meta_h.data(), 2);
  EXPECT_EQ(qs_h, qs);
  for (int64_t b = 0; b < nb; ++b) {
    int half[2] = {};
    for (int e = 0; e < 32; ++e) half[e / 16] += qs[static_cast<size_t>(b * 40 + e)];
    const PackedActMeta& m = meta_h[static_cast<size_t>(b * 2)];
    EXPECT_EQ(m.d, meta[static_cast<size_t>(b * 2)].d);
    EXPECT_EQ(half_sum(m.extra, 0), half[0]) << "block " << b;
    EXPECT_EQ(half_sum(m.extra, 1), half[1]) << "block " << b;
  }
}

struct SuperCase {
  TensorType type;
  IsaLevel isa;
};

class PackedSuperLevel : public ::testing::TestWithParam<SuperCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
  }
  TensorType type() const { return GetParam().type; }
  const PackedKernelSet& kernels() const { return packed_kernels(GetParam().isa); }
  bool super_sums() const { return is_super_act_mode(packed_act_mode(type(), kernels())); }
};

// Every token count 1..12 and row count 1..16, unaligned weights, activations and outputs;
// outputs past the call's rows and tokens untouched.
TEST_P(PackedSuperLevel, KernelMatchesExactForAllShapes) {
  for (int64_t n_super : {1, 9}) {
    const Problem p(type(), n_super, kPackRows, 50 + static_cast<uint32_t>(n_super), super_sums());
    check_packed_call_shapes(
        kernels().gemm, type(), p.group(0), p.group_bytes(), p.nb(), p.act_qs, p.act_meta.data(),
        [&](int r, int c) {
          const auto exact = p.exact(r, c);
          return std::pair{exact.value, dot_tolerance(2 * p.nb(), exact.abs_sum)};
        },
        std::to_string(n_super) + " super-blocks", p.super_sums);
  }
}

// The level's quantizer in its mode for the type, bit-identical to the scalar one, from an
// unaligned input.
TEST_P(PackedSuperLevel, ActivationQuantizerIsBitIdentical) {
  if (GetParam().isa == IsaLevel::Scalar) GTEST_SKIP() << "the scalar quantizer is the reference";
  const int mode = packed_act_mode(type(), kernels());
  const Problem p(type(), 3, 1, 81, super_sums());
  std::vector<float> x = random_floats(static_cast<size_t>(kPackCols * p.n_in) + 1, 82, 2.0f);
  std::vector<int8_t> want(p.act_qs.size()), got(p.act_qs.size());
  std::vector<PackedActMeta> want_meta(p.act_meta.size()), got_meta(p.act_meta.size());
  for (int c = 0; c < kPackCols; ++c) {
    quantize_packed_act_scalar(x.data() + 1 + c * p.n_in, p.nb(), mode, want.data() + c * 32, kPackCols * 32,
                               want_meta.data() + c, kPackCols);
    kernels().quantize(x.data() + 1 + c * p.n_in, p.nb(), mode, got.data() + c * 32, kPackCols * 32,
                       got_meta.data() + c, kPackCols);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::memcmp(got_meta.data(), want_meta.data(), got_meta.size() * sizeof(PackedActMeta)), 0);
}

// Batch invariance (kernels.h): a token's outputs have the same bits whatever the tile's token
// count, its slot and the call's row count.
TEST_P(PackedSuperLevel, ResultBitsDoNotDependOnTileShapeOrSlot) {
  const Problem p(type(), 2, kPackRows, 61, super_sums());
  testing::check_packed_batch_invariance(kernels().gemm, type(), p.group(0), p.nb(), p.act_qs, p.act_meta, 7,
                                         p.super_sums);
}

std::vector<SuperCase> super_cases() {
  std::vector<SuperCase> cases;
  for (TensorType type : kSuperTypes)
    for (IsaLevel isa : testing::arch_isa_levels()) cases.push_back({type, isa});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Levels, PackedSuperLevel, ::testing::ValuesIn(super_cases()),
                         [](const ::testing::TestParamInfo<SuperCase>& info) {
                           return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa);
                         });

}  // namespace
}  // namespace strata::cpu
