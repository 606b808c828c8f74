// Importance matrices made by llama.cpp's llama-imatrix itself (tests/calib/llama-imatrix/, with
// how they were made): Strata reads both its formats, and `strata calibrate`'s statistics over
// the same text and chunking reproduce llama.cpp's sums of x^2.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "calib/imatrix_file.h"
#include "calib/stats_source.h"
#include "common/fixtures.h"

namespace strata::calib {
namespace {

std::string fixture(const std::string& name) {
  return test::source_dir() + "/tests/calib/llama-imatrix/" + name;
}

double rel_l2(const std::vector<float>& ref, const std::vector<float>& x) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(x[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
  }
  return std::sqrt(num / den);
}

TEST(LlamaMadeImatrix, BothFormatsReadAlike) {
  const CalibrationFile gguf = read_calibration_file(fixture("stories260K-sampled.imatrix.gguf"));
  const CalibrationFile dat = read_calibration_file(fixture("stories260K-sampled.imatrix.dat"));
  EXPECT_FALSE(gguf.legacy);
  EXPECT_TRUE(dat.legacy);
  EXPECT_EQ(gguf.chunk_count, 50);
  EXPECT_EQ(dat.chunk_count, 50);
  EXPECT_EQ(gguf.chunk_size, 512);
  ASSERT_EQ(gguf.stats.size(), 35u);  // 5 layers x 7 matrices; llama-imatrix skips output.weight
  ASSERT_EQ(dat.stats.size(), gguf.stats.size());
  for (const auto& [name, st] : gguf.stats) {
    ASSERT_TRUE(dat.stats.contains(name)) << name;
    const std::vector<float> a = st.importance(), b = dat.stats.at(name).importance();
    ASSERT_EQ(a.size(), b.size()) << name;
    // The .dat stores mean(x^2) * calls in float: one more rounding than the GGUF's sums.
    EXPECT_LE(rel_l2(a, b), 1e-6) << name;
  }
}

TEST(LlamaMadeImatrix, CalibrateReproducesLlamaImatrix) {
  const CalibrationFile ref = read_calibration_file(fixture("stories260K-sampled.imatrix.gguf"));
  const std::string text = test::read_file(test::source_dir() + "/data/stories260K-sampled.txt");
  auto source = StatsSource::from_text(test::shared_path("models/stories260K/stories260K.gguf"), "", text,
                                       "stories260K-sampled.txt", 512, 0, 1);
  source->prepare({});
  EXPECT_EQ(source->chunk_count, ref.chunk_count);
  const StatsMap& ours = source->stats();
  double worst = 0.0;
  for (const auto& [name, st] : ref.stats) {
    ASSERT_TRUE(ours.contains(name)) << name;
    const TensorStats& o = ours.at(name);
    ASSERT_EQ(o.n_in, st.n_in) << name;
    EXPECT_EQ(o.count, st.count) << name;  // tokens seen
    // Measured 6.2e-4 at worst: llama.cpp keeps K/V in F16 and rounds some activations to F16.
    const double e = rel_l2(st.importance(), o.importance());
    worst = std::max(worst, e);
    EXPECT_LE(e, 2e-3) << name;
  }
  std::printf("worst relative L2 of the importance against llama-imatrix: %.2e over %zu matrices\n", worst,
              ref.stats.size());
}

}  // namespace
}  // namespace strata::calib
