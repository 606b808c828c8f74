// The integer Q8_0 V accumulation (kv_value_tile.h) of every ISA level that has one: against the
// scalar reference (the same integer weights and dot products, so equal up to float rounding of
// the final multiply-add), and against float64 arithmetic on the dequantized tile within the
// bound of the 8-bit weights; over awkward head sizes, block sizes, key ranges, row strides and
// unaligned pointers. Negative or non-finite scales are refused with the accumulators untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/kv_value_tile.h"
#include "core/cpu_features.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out;
  for (IsaLevel isa : {IsaLevel::Scalar, IsaLevel::Avx2, IsaLevel::AvxVnni, IsaLevel::Avx512})
    if (isa_supported(isa) && kv_value_tile_kernels(isa).accumulate_q8_0) out.push_back(isa);
  return out;
}

// A Q8_0 V tile of bs token rows, row_bytes apart, starting `offset` bytes into its buffer.
struct Tile {
  int bs, hd_v, n_groups;
  size_t row_bytes;
  std::vector<uint8_t> buf;
  size_t offset;
  Tile(int bs_, int hd_v_, size_t pad, size_t offset_, uint32_t seed)
      : bs(bs_),
        hd_v(hd_v_),
        n_groups((hd_v_ + 31) / 32),
        row_bytes(34 * size_t((hd_v_ + 31) / 32) + pad),
        buf(offset_ + row_bytes * bs_ + 64, 0xAB),
        offset(offset_) {
    std::mt19937 gen(seed);
    std::uniform_int_distribution<int> lv(-128, 127);
    std::uniform_real_distribution<float> sc(0.001f, 0.05f);
    for (int j = 0; j < bs; ++j)
      for (int g = 0; g < n_groups; ++g) {
        uint8_t* blk = data() + j * row_bytes + g * 34;
        const fp16_t d = f32_to_fp16(sc(gen));
        std::memcpy(blk, &d, 2);
        for (int e = 0; e < 32; ++e) blk[2 + e] = static_cast<uint8_t>(static_cast<int8_t>(lv(gen)));
      }
  }
  uint8_t* data() { return buf.data() + offset; }
  float d(int j, int g) {
    fp16_t h;
    std::memcpy(&h, data() + j * row_bytes + g * 34, 2);
    return fp16_to_f32(h);
  }
  int q(int j, int e) { return static_cast<int8_t>(data()[j * row_bytes + (e / 32) * 34 + 2 + e % 32]); }
};

struct Rows {
  std::vector<float> p, acc0,
      corr;  // p: [n_rows][bs] after 1 float (unaligned); acc0: 1 float, then [n_rows][hd_v + 1]
  int n_rows, bs, hd_v;
  Rows(int n_rows_, int bs_, int hd_v_, int first, int last, uint32_t seed)
      : p(size_t(n_rows_) * bs_ + 1, 0.0f),
        acc0(size_t(n_rows_) * (hd_v_ + 1) + 1),
        corr(n_rows_),
        n_rows(n_rows_),
        bs(bs_),
        hd_v(hd_v_) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (int r = 0; r < n_rows; ++r)
      for (int j = first; j <= last; ++j)  // probabilities of a softmax step: spread over decades
        p[1 + r * bs + j] = (r == 1) ? 0.0f : std::exp(-8.0f * u(gen));
    for (auto& x : acc0) x = nd(gen);
    for (auto& x : corr) x = u(gen);
  }
  const float* probs() const { return p.data() + 1; }
  float* acc_row(std::vector<float>& a, int r) const { return a.data() + 1 + size_t(r) * (hd_v + 1); }
};

struct Case {
  int hd_v, bs, first, last;
};

TEST(KvValueTile, MatchesScalarAndFloat64) {
  const Case cases[] = {{64, 16, 0, 15},  {64, 16, 3, 9},  {32, 1, 0, 0},   {31, 7, 2, 6},
                        {33, 17, 0, 16},  {80, 32, 5, 31}, {96, 8, 0, 7},   {257, 16, 0, 15},
                        {576, 32, 0, 31}, {1, 31, 30, 30}, {64, 13, 0, 12}, {128, 32, 17, 20}};
  const std::vector<IsaLevel> isas = levels();
  ASSERT_FALSE(isas.empty());
  for (const Case& c : cases)
    for (int n_rows : {1, 3, 8})
      for (size_t pad : {size_t{0}, size_t{3}})
        for (size_t offset : {size_t{0}, size_t{1}}) {
          Tile tile(c.bs, c.hd_v, pad, offset, 7 + c.hd_v);
          const Rows rows(n_rows, c.bs, c.hd_v, c.first, c.last, 11 + c.bs);
          std::vector<float> want_scalar = rows.acc0;
          {
            float* ar[8];
            for (int r = 0; r < n_rows; ++r) ar[r] = rows.acc_row(want_scalar, r);
            ASSERT_TRUE(kv_value_tile_kernels_scalar().accumulate_q8_0(ar, n_rows, rows.probs(), c.bs,
                                                                       tile.data(), tile.row_bytes, c.hd_v,
                                                                       c.first, c.last, rows.corr.data()));
          }
          for (IsaLevel isa : isas) {
            std::vector<float> got = rows.acc0;
            float* ar[8];
            for (int r = 0; r < n_rows; ++r) ar[r] = rows.acc_row(got, r);
            ASSERT_TRUE(kv_value_tile_kernels(isa).accumulate_q8_0(ar, n_rows, rows.probs(), c.bs,
                                                                   tile.data(), tile.row_bytes, c.hd_v,
                                                                   c.first, c.last, rows.corr.data()));
            for (int r = 0; r < n_rows; ++r) {
              // Float64 on the dequantized tile; the 8-bit weights err by at most half a step of
              // 1/255 of the row's largest weight in the group.
              for (int e = 0; e < c.hd_v; ++e) {
                const int g = e / 32;
                double wmax = 0, sum = 0, mag = 0;
                for (int j = c.first; j <= c.last; ++j)
                  wmax = std::max(wmax, double(rows.probs()[r * c.bs + j]) * tile.d(j, g));
                for (int j = c.first; j <= c.last; ++j) {
                  const double term = double(rows.probs()[r * c.bs + j]) * tile.d(j, g) * tile.q(j, e);
                  sum += term;
                  mag += std::fabs(term) + 0.5 * wmax / 255.0 * std::abs(tile.q(j, e));
                }
                const double a0 = rows.acc_row(const_cast<std::vector<float>&>(rows.acc0), r)[e];
                const double want = a0 * rows.corr[r] + sum;
                const double bound = 0.5 * wmax / 255.0 * [&] {
                  double s = 0;
                  for (int j = c.first; j <= c.last; ++j) s += std::abs(tile.q(j, e));
                  return s;
                }() + 1e-5 * (mag + std::fabs(a0));
                const float got_e = rows.acc_row(got, r)[e], ref_e = rows.acc_row(want_scalar, r)[e];
                ASSERT_NEAR(got_e, want, bound)
                    << isa_name(isa) << " hd_v=" << c.hd_v << " bs=" << c.bs << " r=" << r << " e=" << e;
                ASSERT_NEAR(got_e, ref_e, 1e-6 * (mag + std::fabs(a0)) + 1e-7)
                    << "vs scalar " << isa_name(isa) << " hd_v=" << c.hd_v << " bs=" << c.bs << " r=" << r;
              }
              // Nothing written past the row (the unaligned gap floats stay as they were).
              ASSERT_EQ(rows.acc_row(got, r)[c.hd_v],
                        rows.acc_row(const_cast<std::vector<float>&>(rows.acc0), r)[c.hd_v])
                  << "wrote past the row: " << isa_name(isa) << " hd_v=" << c.hd_v << " bs=" << c.bs
                  << " r=" << r;
            }
          }
        }
}

TEST(KvValueTile, RefusesNegativeOrNonFiniteScales) {
  for (fp16_t bad : {f32_to_fp16(-0.01f), fp16_t{0x7C00}, fp16_t{0x7E00}})
    for (IsaLevel isa : levels()) {
      Tile tile(16, 64, 0, 1, 3);
      std::memcpy(tile.data() + 5 * tile.row_bytes + 34, &bad, 2);  // token 5, group 1
      const Rows rows(8, 16, 64, 0, 15, 4);
      std::vector<float> got = rows.acc0;
      float* ar[8];
      for (int r = 0; r < 8; ++r) ar[r] = rows.acc_row(got, r);
      EXPECT_FALSE(kv_value_tile_kernels(isa).accumulate_q8_0(ar, 8, rows.probs(), 16, tile.data(),
                                                              tile.row_bytes, 64, 0, 15, rows.corr.data()))
          << isa_name(isa);
      EXPECT_EQ(got, rows.acc0) << isa_name(isa);
      // Outside [first, last] the scale is not read: accepted.
      std::vector<float> ok = rows.acc0;
      for (int r = 0; r < 8; ++r) ar[r] = rows.acc_row(ok, r);
      EXPECT_TRUE(kv_value_tile_kernels(isa).accumulate_q8_0(ar, 8, rows.probs(), 16, tile.data(),
                                                             tile.row_bytes, 64, 6, 15, rows.corr.data()))
          << isa_name(isa);
    }
}

// A row's result does not depend on the other rows of the call.
TEST(KvValueTile, RowsAreIndependent) {
  for (IsaLevel isa : levels()) {
    Tile tile(32, 96, 0, 0, 9);
    const Rows rows(8, 32, 96, 0, 31, 10);
    std::vector<float> all = rows.acc0, one = rows.acc0;
    float* ar[8];
    for (int r = 0; r < 8; ++r) ar[r] = rows.acc_row(all, r);
    ASSERT_TRUE(kv_value_tile_kernels(isa).accumulate_q8_0(ar, 8, rows.probs(), 32, tile.data(),
                                                           tile.row_bytes, 96, 0, 31, rows.corr.data()));
    for (int r = 0; r < 8; ++r) {
      float* a1 = rows.acc_row(one, r);
      ASSERT_TRUE(kv_value_tile_kernels(isa).accumulate_q8_0(
          &a1, 1, rows.probs() + r * 32, 32, tile.data(), tile.row_bytes, 96, 0, 31, rows.corr.data() + r));
      for (int e = 0; e < 96; ++e) ASSERT_EQ(a1[e], rows.acc_row(all, r)[e]) << isa_name(isa) << " r=" << r;
    }
  }
}

}  // namespace
}  // namespace strata::cpu
