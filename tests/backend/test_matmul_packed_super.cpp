// The interleaved super-block layouts of Q4_K, Q5_K, IQ4_XS, Q6_K, Q3_K and Q2_K (packed_kernels.h): their
// repacking and the kernels of every level, against the exact dot products of the GGUF rows (dequantize_row)
// with the packed activations.
#include <gtest/gtest.h>

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

// Rows [n_out, n_super * 256] of type with their interleaved copy, and kPackCols tokens as
// activation rows (the reference) and as one packed activation tile.
struct Problem {
  TensorType type, act_type;
  int64_t n_in, n_out, n_groups;
  std::vector<uint8_t> rows, packed, act_rows;
  std::vector<int8_t> act_qs;
  std::vector<PackedActMeta> act_meta;

  Problem(TensorType type_, int64_t n_super, int64_t n_out_, uint32_t seed)
      : type(type_),
        act_type(testing::packed_act_type(type_)),
        n_in(n_super * 256),
        n_out(n_out_),
        n_groups((n_out_ + kPackRows - 1) / kPackRows) {
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
                                       act_rows.data() + c * row_bytes(act_type, n_in), n_in);
      quantize_packed_act_scalar(x.data() + c * n_in, nb(), packed_zero_point(type), act_qs.data() + c * 32,
                                 kPackCols * 32, act_meta.data() + c, kPackCols);
    }
  }
  int64_t nb() const { return n_in / 32; }
  size_t group_bytes() const { return static_cast<size_t>(nb()) * packed_block_bytes(type); }
  const uint8_t* group(int64_t g) const { return packed.data() + g * group_bytes(); }
  PackedActTile tile() const { return {act_qs.data(), act_meta.data()}; }
  testing::RefDot exact(int64_t o, int c) const {
    const uint8_t* w = rows.data() + o * row_bytes(type, n_in);
    const uint8_t* a = act_rows.data() + c * row_bytes(act_type, n_in);
    return testing::ref_dot_packed(type, w, a, n_in);
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
    for (int64_t n_super : {1, 3}) {
      const Problem p(type, n_super, 2 * kPackRows + 7, 40 + static_cast<uint32_t>(n_super));
      for (int64_t g = 0; g < p.n_groups; ++g) {
        const int n_rows = static_cast<int>(std::min<int64_t>(kPackRows, p.n_out - g * kPackRows));
        std::vector<float> y(kPackCols * kPackRows, -777.0f);
        packed_gemm_scalar(type, p.group(g), p.nb(), p.tile(), kPackCols, y.data(), kPackRows, n_rows);
        for (int c = 0; c < kPackCols; ++c)
          for (int r = 0; r < n_rows; ++r) {
            const auto exact = p.exact(g * kPackRows + r, c);
            ASSERT_NEAR(y[c * kPackRows + r], exact.value, dot_tolerance(2 * p.nb(), exact.abs_sum))
                << type_name(type) << ", " << n_super << " super-blocks, group " << g << " row " << r
                << " token " << c;
          }
      }
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
};

// Every token count 1..12 and row count 1..16, unaligned weights, activations and outputs;
// outputs past the call's rows and tokens untouched.
TEST_P(PackedSuperLevel, KernelMatchesExactForAllShapes) {
  for (int64_t n_super : {1, 9}) {
    const Problem p(type(), n_super, kPackRows, 50 + static_cast<uint32_t>(n_super));
    check_packed_call_shapes(
        kernels().gemm, type(), p.group(0), p.group_bytes(), p.nb(), p.act_qs, p.act_meta.data(),
        [&](int r, int c) {
          const auto exact = p.exact(r, c);
          return std::pair{exact.value, dot_tolerance(2 * p.nb(), exact.abs_sum)};
        },
        std::to_string(n_super) + " super-blocks");
  }
}

// Batch invariance (kernels.h): a token's outputs have the same bits whatever the tile's token
// count, its slot and the call's row count.
TEST_P(PackedSuperLevel, ResultBitsDoNotDependOnTileShapeOrSlot) {
  const Problem p(type(), 2, kPackRows, 61);
  testing::check_packed_batch_invariance(kernels().gemm, type(), p.group(0), p.nb(), p.act_qs, p.act_meta, 7);
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
