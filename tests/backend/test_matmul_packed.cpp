// The interleaved layout (packed_kernels.h): repacking, its activation quantizer and its
// kernels, against the row-layout scalar references.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_kernels.h"
#include "backend/cpu/w8a8_kernels.h"
#include "packed_test_util.h"
#include "quant/blocks.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::check_packed_call_shapes;
using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::random_floats;
using testing::ref_dot_rows;

// Weights [n_out, nb * 32] of one type, their interleaved copy, and kPackCols tokens of
// activations in both the row format (Q8_0 / Q8_1 rows) and the packed tile format.
struct Problem {
  TensorType type;
  int64_t n_in, n_out, n_groups;
  std::vector<uint8_t> rows, packed;
  std::vector<float> x;                 // [kPackCols, n_in]
  std::vector<uint8_t> act_rows;        // [kPackCols] rows of the vec_dot_type
  std::vector<int8_t> act_qs;           // one tile
  std::vector<PackedActMeta> act_meta;  // one tile

  Problem(TensorType t, int64_t nb, int64_t n_out_, uint32_t seed)
      : type(t), n_in(nb * 32), n_out(n_out_), n_groups((n_out_ + kPackRows - 1) / kPackRows) {
    const size_t rb = row_bytes(t, n_in);
    rows.resize(rb * static_cast<size_t>(n_out));
    fill_random_rows(t, n_in, n_out, rb, rows.data(), seed);
    packed.resize(packed_block_bytes(t) * static_cast<size_t>(nb * n_groups));
    for (int64_t g = 0; g < n_groups; ++g)
      repack_group(t, rows.data(), rb, n_out, g, nb, packed.data() + g * nb * packed_block_bytes(t));
    x = random_floats(static_cast<size_t>(kPackCols * n_in), seed + 1, 2.0f);
    for (int i = 0; i < 32; ++i) x[static_cast<size_t>(i)] = 0.0f;  // a zero block (d = 0)
    const TypeKernels& k = type_kernels(t, IsaLevel::Scalar);
    const size_t ab = row_bytes(k.vec_dot_type, n_in);
    act_rows.resize(ab * kPackCols);
    act_qs.resize(static_cast<size_t>(nb) * kPackCols * 32);
    act_meta.resize(static_cast<size_t>(nb) * kPackCols);
    for (int c = 0; c < kPackCols; ++c) {
      k.from_float(x.data() + c * n_in, act_rows.data() + c * ab, n_in);
      quantize_packed_act_scalar(x.data() + c * n_in, nb, packed_zero_point(t), act_qs.data() + c * 32,
                                 kPackCols * 32, act_meta.data() + c, kPackCols);
    }
  }
  int64_t nb() const { return n_in / 32; }
  const uint8_t* group(int64_t g) const { return packed.data() + g * nb() * packed_block_bytes(type); }
  PackedActTile tile() const { return {act_qs.data(), act_meta.data()}; }
  const uint8_t* row(int64_t o) const { return rows.data() + o * row_bytes(type, n_in); }
  const uint8_t* act_row(int c) const {
    return act_rows.data() + c * row_bytes(type_kernels(type, IsaLevel::Scalar).vec_dot_type, n_in);
  }
};

class Packed : public ::testing::TestWithParam<TensorType> {};

// The scalar kernel of the interleaved layout computes exactly the row kernels' expression.
TEST_P(Packed, ScalarKernelEqualsRowKernelBitForBit) {
  const Problem p(GetParam(), 5, 2 * kPackRows + 7, 31);
  const TypeKernels& k = type_kernels(p.type, IsaLevel::Scalar);
  for (int64_t g = 0; g < p.n_groups; ++g) {
    const int n_rows = static_cast<int>(std::min<int64_t>(kPackRows, p.n_out - g * kPackRows));
    std::vector<float> y(kPackCols * kPackRows);
    packed_gemm_scalar(p.type, p.group(g), p.nb(), p.tile(), kPackCols, y.data(), kPackRows, n_rows);
    for (int c = 0; c < kPackCols; ++c)
      for (int r = 0; r < n_rows; ++r)
        ASSERT_EQ(y[c * kPackRows + r], k.vec_dot(p.n_in, p.row(g * kPackRows + r), p.act_row(c)))
            << "group " << g << " row " << r << " token " << c;
  }
}

TEST_P(Packed, ActivationQuantizerMatchesRowQuantizer) {
  const Problem p(GetParam(), 33, 1, 7);
  const bool q8_1 = type_kernels(p.type, IsaLevel::Scalar).vec_dot_type == TensorType::Q8_1;
  const size_t block = q8_1 ? sizeof(BlockQ8_1) : sizeof(BlockQ8_0);
  const size_t qs_off = q8_1 ? offsetof(BlockQ8_1, qs) : offsetof(BlockQ8_0, qs);
  for (int c = 0; c < kPackCols; ++c)
    for (int64_t b = 0; b < p.nb(); ++b) {
      const uint8_t* rb = p.act_row(c) + b * block;
      const PackedActMeta& m = p.act_meta[static_cast<size_t>(b * kPackCols + c)];
      fp16_t d, s;
      std::memcpy(&d, rb, 2);
      ASSERT_EQ(m.d, fp16_to_f32(d));
      ASSERT_EQ(std::memcmp(p.act_qs.data() + (b * kPackCols + c) * 32, rb + qs_off, 32), 0);
      int sum = 0;
      for (int j = 0; j < 32; ++j) sum += static_cast<int8_t>(rb[qs_off + j]);
      if (q8_1) {
        std::memcpy(&s, rb + offsetof(BlockQ8_1, s), 2);
        ASSERT_EQ(std::bit_cast<float>(m.extra), fp16_to_f32(s));
      } else {
        ASSERT_EQ(m.extra, -packed_zero_point(p.type) * sum);
      }
    }
}

// The 32-column kinds: the legacy types and MXFP4 (IQ4_NL's layout with its own table).
std::vector<TensorType> block_types() {
  return {TensorType::Q4_0, TensorType::Q4_1,   TensorType::Q5_0, TensorType::Q5_1,
          TensorType::Q8_0, TensorType::IQ4_NL, TensorType::MXFP4};
}

INSTANTIATE_TEST_SUITE_P(LegacyTypes, Packed, ::testing::ValuesIn(block_types()),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// The SIMD kernel sets of the layout, one per ISA level of this architecture.
struct LevelCase {
  TensorType type;
  IsaLevel isa;
};

std::vector<LevelCase> level_cases() {
  std::vector<LevelCase> out;
  for (TensorType t : block_types())
    for (IsaLevel isa : testing::arch_simd_levels()) out.push_back({t, isa});
  return out;
}

class PackedLevel : public ::testing::TestWithParam<LevelCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
    // Every SIMD level has its own kernel set for the layout.
    ASSERT_EQ(packed_kernels(GetParam().isa).level, GetParam().isa);
  }
  const PackedKernelSet& kernels() const { return packed_kernels(GetParam().isa); }
};

TEST_P(PackedLevel, ActivationQuantizerIsBitIdentical) {
  for (int64_t nb : {1, 31, 33}) {
    const Problem p(GetParam().type, nb, 1, 8 + static_cast<uint32_t>(nb));
    // Unaligned input: one float past an aligned copy.
    std::vector<float> x(p.x.size() + 1);
    std::memcpy(x.data() + 1, p.x.data(), p.x.size() * sizeof(float));
    std::vector<int8_t> qs(p.act_qs.size());
    std::vector<PackedActMeta> meta(p.act_meta.size());
    for (int c = 0; c < kPackCols; ++c)
      kernels().quantize(x.data() + 1 + c * p.n_in, p.nb(), packed_zero_point(p.type), qs.data() + c * 32,
                         kPackCols * 32, meta.data() + c, kPackCols);
    EXPECT_EQ(qs, p.act_qs) << nb << " blocks";
    EXPECT_EQ(std::memcmp(meta.data(), p.act_meta.data(), meta.size() * sizeof(PackedActMeta)), 0)
        << nb << " blocks";
  }
}

// Every token count 1..12 and row count 1..16 (the last group's), unaligned weights,
// activations and outputs; rows and tokens past the call's untouched.
TEST_P(PackedLevel, KernelMatchesScalarForAllShapes) {
  for (int64_t nb : {1, 9, 33}) {
    const Problem p(GetParam().type, nb, kPackRows, 12 + static_cast<uint32_t>(nb));
    const TensorType at = type_kernels(p.type, IsaLevel::Scalar).vec_dot_type;
    std::vector<float> ref(kPackCols * kPackRows);
    packed_gemm_scalar(p.type, p.group(0), p.nb(), p.tile(), kPackCols, ref.data(), kPackRows, kPackRows);
    check_packed_call_shapes(
        kernels().gemm, p.type, p.group(0), static_cast<size_t>(p.nb()) * packed_block_bytes(p.type), p.nb(),
        p.act_qs, p.act_meta.data(),
        [&](int r, int c) {
          const auto exact = ref_dot_rows(p.type, p.row(r), at, p.act_row(c), p.n_in);
          return std::pair{static_cast<double>(ref[c * kPackRows + r]),
                           dot_tolerance(2 * p.nb(), exact.abs_sum)};
        },
        std::to_string(nb) + " blocks");
  }
}

// Batch invariance (kernels.h): a token's outputs have the same bits whatever the tile's token
// count, the token's slot in it and the number of rows of the call.
TEST_P(PackedLevel, ResultBitsDoNotDependOnTileShapeOrSlot) {
  const Problem p(GetParam().type, 17, kPackRows, 13);
  // 5 rows: a partial last group.
  testing::check_packed_batch_invariance(kernels().gemm, p.type, p.group(0), p.nb(), p.act_qs, p.act_meta, 5);
}

INSTANTIATE_TEST_SUITE_P(Levels, PackedLevel, ::testing::ValuesIn(level_cases()),
                         [](const ::testing::TestParamInfo<LevelCase>& info) {
                           return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa);
                         });

#if defined(__x86_64__)  // the AMX tile kernels exist only in x86 builds
// MXFP4 has no AMX tile kernel: the AMX level runs the AVX-512 one for it.
bool has_amx_tiles(TensorType t) {
  return t != TensorType::MXFP4;
}

// The AMX kernel does the AVX-512 kernel's float work on exact integer tile sums: every output has
// the same bits, for every token and row count.
TEST_P(Packed, AmxIsBitIdenticalToAvx512) {
  if (!isa_supported(IsaLevel::Amx)) GTEST_SKIP() << "CPU lacks amx";
  if (!has_amx_tiles(GetParam())) GTEST_SKIP() << "no AMX tile kernel";
  for (int64_t nb : {1, 2, 3, 34}) {
    const Problem p(GetParam(), nb, kPackRows, 40 + static_cast<uint32_t>(nb));
    for (int nc = 1; nc <= kPackCols; ++nc)
      for (int n_rows : {1, 7, kPackRows}) {
        std::vector<float> a(kPackCols * kPackRows, -1.0f), b(kPackCols * kPackRows, -1.0f);
        packed_kernels(IsaLevel::Avx512)
            .gemm(p.type, p.group(0), p.nb(), p.tile(), nc, a.data(), kPackRows, n_rows);
        packed_gemm_amx_tiles(p.type, p.group(0), p.nb(), p.tile(), nc, b.data(), kPackRows, n_rows);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << nb << " blocks, " << nc << " tokens, " << n_rows << " rows";
        // The level's entry point (tiles, or AVX-512 for few tokens) gives the same bits.
        std::vector<float> c(kPackCols * kPackRows, -1.0f);
        packed_kernels(IsaLevel::Amx)
            .gemm(p.type, p.group(0), p.nb(), p.tile(), nc, c.data(), kPackRows, n_rows);
        ASSERT_EQ(std::memcmp(a.data(), c.data(), a.size() * sizeof(float)), 0)
            << nb << " blocks, " << nc << " tokens, " << n_rows << " rows (level entry)";
      }
  }
}

// The AMX kernels of the packed layout and of W8A8 configure the tiles differently; one thread
// alternating between them must reload its configuration each time.
TEST_P(Packed, AmxStaysCorrectWhenW8A8KernelsRunOnTheSameThread) {
  if (!isa_supported(IsaLevel::Amx)) GTEST_SKIP() << "CPU lacks amx";
  if (!has_amx_tiles(GetParam())) GTEST_SKIP() << "no AMX tile kernel";
  const Problem p(GetParam(), 5, kPackRows, 77);
  std::vector<float> want(kPackCols * kPackRows), got(kPackCols * kPackRows);
  packed_kernels(IsaLevel::Avx512)
      .gemm(p.type, p.group(0), p.nb(), p.tile(), 3, want.data(), kPackRows, kPackRows);
  const int64_t kp = 100;  // a K tail: the W8A8 kernel configures 8 tiles
  std::vector<uint8_t> w8(static_cast<size_t>(kp * 16), 128);
  std::vector<int8_t> a8(static_cast<size_t>(kp * 5), 1);
  const std::vector<float> ws(16, 1.0f), as(5, 1.0f);
  const std::vector<int32_t> sums(5, static_cast<int32_t>(kp));
  const W8A8ActTile tile8{a8.data(), static_cast<size_t>(kp), sums.data(), as.data()};
  std::vector<float> y8(5 * 16);
  for (int round = 0; round < 3; ++round) {
    w8a8_kernels(IsaLevel::Amx).gemm(w8.data(), kp, ws.data(), tile8, 5, y8.data(), 16, 16);
    for (float v : y8) ASSERT_EQ(v, 0.0f);  // zero weights (128 - 128)
    packed_gemm_amx_tiles(p.type, p.group(0), p.nb(), p.tile(), 3, got.data(), kPackRows, kPackRows);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), 3 * kPackRows * sizeof(float)), 0) << "round " << round;
  }
}
#endif  // __x86_64__

// Every level resolves to a kernel set the CPU supports and the level includes.
TEST(PackedKernels, EveryLevelResolvesToASupportedSet) {
  for (IsaLevel isa : testing::arch_isa_levels()) {
    const IsaLevel got = packed_kernels(isa).level;
    EXPECT_TRUE(isa_supported(got)) << isa_name(isa);
    EXPECT_TRUE(isa_includes(isa, got)) << isa_name(isa);
    if (isa_supported(isa)) {
      EXPECT_EQ(got, isa) << isa_name(isa);
    }
  }
}

}  // namespace
}  // namespace strata::cpu
