// Decode (GEMV: one token x a weight matrix) through matmul() for the types models are shipped in,
// at every ISA level the CPU has: awkward row counts (the edges of the row tiles and of the
// 16-row interleaved groups), rows of one and several super-blocks, weights at odd addresses
// (the zero-copy row view) and in the default packed copy. Each output must equal the scalar
// reference dot product (kernels.h) within float tolerance and the float64 dot product of the
// dequantized rows (test_kernels_util.h), and be bitwise the output the same row gets as one
// token of a batch (the GEMV path prefetches and may use other tiles than GEMM; kernels.h's
// batch invariance).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "core/thread_pool.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

using testing::accumulation_terms;
using testing::dot_tolerance;
using testing::fill_random_rows;
using testing::packed_act_type;
using testing::packs_super_blocks;
using testing::quantize_packed_act_row;
using testing::random_floats;
using testing::ref_dot_packed;
using testing::ref_dot_rows;

class IsaGuard {
 public:
  IsaGuard() : saved_(isa_level()) {}
  ~IsaGuard() { set_isa_level(saved_); }

 private:
  IsaLevel saved_;
};

struct GemvCase {
  TensorType type;
  IsaLevel isa;
};

std::vector<GemvCase> gemv_cases() {
  const TensorType types[] = {TensorType::Q4_0,   TensorType::Q8_0, TensorType::IQ4_NL,
                              TensorType::IQ4_XS, TensorType::Q4_K, TensorType::Q5_K,
                              TensorType::Q6_K,   TensorType::Q2_K, TensorType::Q3_K};
  std::vector<GemvCase> cases;
  for (TensorType t : types)
    for (IsaLevel isa : testing::arch_isa_levels()) cases.push_back({t, isa});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<GemvCase>& info) {
  return std::string(type_name(info.param.type)) + "_" + isa_name(info.param.isa);
}

class Gemv : public ::testing::TestWithParam<GemvCase> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam().isa)) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam().isa);
  }
  IsaGuard guard_;
};

TEST_P(Gemv, MatchesScalarReferenceForAwkwardShapes) {
  const auto [wt, isa] = GetParam();
  set_isa_level(isa);
  const TypeKernels& ref = type_kernels(wt, IsaLevel::Scalar);
  ThreadPool pool(2);
  for (int64_t n_in : {int64_t{256}, int64_t{768}}) {
    const size_t wrow = row_bytes(wt, n_in);
    const std::vector<float> x =
        random_floats(static_cast<size_t>(3 * n_in), 41 + static_cast<uint32_t>(n_in));
    std::vector<uint8_t> act(row_bytes(ref.vec_dot_type, n_in));
    ref.from_float(x.data(), act.data(), n_in);
    // Interleaved super-blocks quantize the activations per 32 (packed_kernels.h).
    const TensorType packed_act = packed_act_type(wt);
    std::vector<uint8_t> act_packed(row_bytes(packed_act, n_in));
    quantize_packed_act_row(wt, x.data(), act_packed.data(), n_in);
    for (int64_t n_out : {1, 3, 7, 9, 31, 33, 257}) {
      for (int offset : {0, 3}) {
        // The row view reads the weights in place, at an odd address for offset != 0; Auto is the
        // copy decode runs on (huge pages or the interleaved layout).
        const PackLayout layout = offset == 0 ? PackLayout::Auto : PackLayout::Rows;
        std::vector<uint8_t> buf(wrow * static_cast<size_t>(n_out) + 4);
        uint8_t* w = buf.data() + offset;
        // The quantizer writes typed blocks, so it fills an aligned buffer that is then moved.
        std::vector<uint8_t> aligned(wrow * static_cast<size_t>(n_out));
        fill_random_rows(wt, n_in, n_out, wrow, aligned.data(),
                         7 + static_cast<uint32_t>(n_out * 5 + offset));
        std::memcpy(w, aligned.data(), aligned.size());
        const auto pm = pack_matrix(wt, n_in, n_out, w, layout);
        std::vector<float> y(static_cast<size_t>(n_out), -1.0f), y3(static_cast<size_t>(3 * n_out));
        matmul(pool, *pm, x.data(), y.data(), 1);
        matmul(pool, *pm, x.data(), y3.data(), 3);
        for (int64_t o = 0; o < n_out; ++o) {
          const uint8_t* row = w + o * wrow;
          const bool super_packed = packs_super_blocks(wt) && pm->interleaved();
          const auto exact = super_packed ? ref_dot_packed(wt, row, act_packed.data(), n_in)
                                          : ref_dot_rows(wt, row, ref.vec_dot_type, act.data(), n_in);
          const double tol =
              dot_tolerance(super_packed ? 2 * n_in / 32 : accumulation_terms(wt, n_in), exact.abs_sum);
          const std::string where = "n_in " + std::to_string(n_in) + " n_out " + std::to_string(n_out) +
                                    " offset " + std::to_string(offset) + " row " + std::to_string(o);
          if (!super_packed) {
            ASSERT_NEAR(y[static_cast<size_t>(o)], ref.vec_dot(n_in, row, act.data()), tol) << where;
          }
          ASSERT_NEAR(y[static_cast<size_t>(o)], exact.value, tol) << where;
          ASSERT_EQ(y[static_cast<size_t>(o)], y3[static_cast<size_t>(o)])
              << where << ": GEMV differs from GEMM";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DecodeTypes, Gemv, ::testing::ValuesIn(gemv_cases()), case_name);

}  // namespace
}  // namespace strata::cpu
