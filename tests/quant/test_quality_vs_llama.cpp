// Quality criterion: quantizing the synth-tiny f32 weights with our quantizers must give an RMS
// error at most 1.05x that of the file llama.cpp made of the same type, compared tensor by tensor
// wherever the llama.cpp tensor has the type in question (the _S/_M files mix types).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "quant_test_util.h"

namespace strata::test {
namespace {

constexpr double kMaxRatio = 1.05;

struct Row {
  TensorType type;
  int tensors = 0;
  int64_t weights = 0;
  double llama_se = 0, ours_se = 0;
};

class QualityVsLlama : public ::testing::TestWithParam<TensorType> {
 protected:
  static void SetUpTestSuite() {
    f32_ = GgufFile::open(synth_tiny_path("f32")).release();
    pool_ = new ThreadPool(2);
  }
  static void TearDownTestSuite() {
    std::printf("\n  type   tensors   weights   llama.cpp RMS   ours RMS      ours/llama.cpp\n");
    for (const Row& r : rows_)
      std::printf("  %-5s  %7d  %8lld    %.5e    %.5e   %.4f\n", std::string(type_name(r.type)).c_str(),
                  r.tensors, static_cast<long long>(r.weights), std::sqrt(r.llama_se / r.weights),
                  std::sqrt(r.ours_se / r.weights), std::sqrt(r.ours_se / r.llama_se));
    delete pool_;
    delete f32_;
  }
  static GgufFile* f32_;
  static ThreadPool* pool_;
  static std::vector<Row> rows_;
};
GgufFile* QualityVsLlama::f32_ = nullptr;
ThreadPool* QualityVsLlama::pool_ = nullptr;
std::vector<Row> QualityVsLlama::rows_;

TEST_P(QualityVsLlama, OursAtMostFivePercentWorse) {
  const TensorType type = GetParam();
  Row row{type};
  std::set<std::string> seen;  // Q4_K tensors appear in both Q4_K_S and Q4_K_M
  for (const SynthFile& f : synth_files()) {
    const auto file = GgufFile::open(synth_tiny_path(f.suffix));
    for (const TensorInfo& t : file->tensors()) {
      if (t.type != type || !seen.insert(t.name).second) continue;
      const TensorInfo* o = f32_->find_tensor(t.name);
      ASSERT_NE(o, nullptr) << t.name;
      const float* x = static_cast<const float*>(o->data);
      const int64_t n = t.n_elements(), row_len = t.ne[0];
      const std::vector<float> theirs = decode_tensor(t);

      std::vector<uint8_t> q(row_bytes(type, row_len) * (n / row_len));
      quantize_rows(type, x, q.data(), n / row_len, row_len, nullptr, pool_);
      TensorInfo mine = t;
      mine.data = q.data();
      const std::vector<float> ours = decode_tensor(mine);

      const double llama_se = sq_error(theirs.data(), x, n), ours_se = sq_error(ours.data(), x, n);
      EXPECT_LE(std::sqrt(ours_se / llama_se), kMaxRatio) << f.suffix << " " << t.name;
      row.tensors++;
      row.weights += n;
      row.llama_se += llama_se;
      row.ours_se += ours_se;
    }
  }
  ASSERT_GT(row.tensors, 0) << "no llama.cpp tensor of type " << type_name(type);
  const double ratio = std::sqrt(row.ours_se / row.llama_se);
  std::printf("  %-5s over %d tensors: llama.cpp RMS %.5e, ours %.5e, ratio %.4f\n",
              std::string(type_name(type)).c_str(), row.tensors, std::sqrt(row.llama_se / row.weights),
              std::sqrt(row.ours_se / row.weights), ratio);
  EXPECT_LE(ratio, kMaxRatio);
  rows_.push_back(row);
}

INSTANTIATE_TEST_SUITE_P(AllStorageTypes, QualityVsLlama,
                         ::testing::Values(TensorType::F16, TensorType::BF16, TensorType::Q8_0,
                                           TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0,
                                           TensorType::Q5_1, TensorType::Q2_K, TensorType::Q3_K,
                                           TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K),
                         [](const ::testing::TestParamInfo<TensorType>& info) {
                           return std::string(type_name(info.param));
                         });

}  // namespace
}  // namespace strata::test
