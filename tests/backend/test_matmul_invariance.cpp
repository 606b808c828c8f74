// Batch invariance of matmul: each output must be bitwise identical whatever the batch around
// it (the engine's determinism guarantee depends on it; see kernels.h).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/cpu/kernels.h"
#include "backend/cpu/matmul.h"
#include "core/thread_pool.h"
#include "quant/quantize.h"
#include "test_kernels_util.h"

namespace strata::cpu {
namespace {

class MatmulInvariance : public ::testing::TestWithParam<TensorType> {};

TEST_P(MatmulInvariance, OutputDoesNotDependOnBatchOrThreads) {
  const TensorType type = GetParam();
  // 64 tokens: 6 tiles of the interleaved layout, run in L2 chunks per panel; the sub-batches of
  // 17 (2 tiles) are streamed once group by group (matmul.cpp, kStreamTiles).
  const int64_t n_in = 512, n_out = 67, n_tok = 64;
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(n_in * n_out)), x(static_cast<size_t>(n_in * n_tok));
  for (auto& v : wf) v = nd(gen);
  for (auto& v : x) v = nd(gen);
  std::vector<uint8_t> w(row_bytes(type, n_in) * n_out);
  if (can_quantize(type))
    quantize_rows(type, wf.data(), w.data(), n_out, n_in);
  else  // decode-only types: random blocks
    testing::fill_random_rows(type, n_in, n_out, row_bytes(type, n_in), w.data(), 6);

  const IsaLevel saved = isa_level();
  for (IsaLevel isa : supported_isa_levels()) {
    set_isa_level(isa);
    for (PackLayout layout : {PackLayout::Auto, PackLayout::Rows}) {
      auto pm = pack_matrix(type, n_in, n_out, w.data(), layout);
      ThreadPool pool2(2), pool1(1);
      std::vector<float> full(static_cast<size_t>(n_out * n_tok));
      matmul(pool2, *pm, x.data(), full.data(), n_tok);
      // Every token alone, and in sub-batches of awkward sizes at awkward offsets.
      for (int64_t batch : {int64_t{1}, int64_t{3}, int64_t{17}}) {
        for (int64_t t0 = 0; t0 + batch <= n_tok; t0 += batch) {
          std::vector<float> part(static_cast<size_t>(n_out * batch));
          matmul(batch == 3 ? pool1 : pool2, *pm, x.data() + t0 * n_in, part.data(), batch);
          ASSERT_EQ(std::memcmp(part.data(), full.data() + t0 * n_out, part.size() * sizeof(float)), 0)
              << type_name(type) << " " << isa_name(isa) << " layout " << static_cast<int>(layout)
              << " batch " << batch << " at " << t0;
        }
      }
    }
  }
  set_isa_level(saved);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, MatmulInvariance,
    ::testing::Values(TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0, TensorType::Q4_0,
                      TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1, TensorType::Q2_K,
                      TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                      TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::MXFP4, TensorType::TQ1_0,
                      TensorType::TQ2_0, TensorType::IQ2_XXS, TensorType::IQ2_XS, TensorType::IQ2_S,
                      TensorType::IQ3_XXS, TensorType::IQ3_S, TensorType::IQ1_S, TensorType::IQ1_M),
    [](const auto& info) { return std::string(type_name(info.param)); });

}  // namespace
}  // namespace strata::cpu
