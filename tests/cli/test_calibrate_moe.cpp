// `strata calibrate` and `strata quantize --imatrix` on the llama-moe fixture (random weights,
// 4 experts, 2 used): the GGUF imatrix holds llama-imatrix's per-expert entries (in_sum2
// [n_in, n_expert], counts [1, n_expert] summing to n_tokens * n_expert_used; gate and up read the
// same rows); the legacy .dat holds llama-imatrix's expert layout (parsed here byte by byte:
// nval = n_in * n_expert, each expert's sum / count times the one ncall = ceil(max count / chunk
// size)); and quantize quantizes each expert with its own importance, from either file: each
// slice equals quantize_rows with in_sum2[e] / counts[e].
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "quant/quantize.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

// Legacy .dat entries: name -> (ncall, values).
std::map<std::string, std::pair<int32_t, std::vector<float>>> read_dat(const std::string& path) {
  const std::string b = test::read_file(path);
  size_t o = 0;
  auto i32 = [&] {
    int32_t v;
    std::memcpy(&v, b.data() + o, 4);
    o += 4;
    return v;
  };
  std::map<std::string, std::pair<int32_t, std::vector<float>>> m;
  const int32_t n = i32();
  for (int32_t e = 0; e < n; ++e) {
    const int32_t len = i32();
    std::string name = b.substr(o, static_cast<size_t>(len));
    o += static_cast<size_t>(len);
    const int32_t ncall = i32(), nval = i32();
    std::vector<float> v(static_cast<size_t>(nval));
    std::memcpy(v.data(), b.data() + o, 4 * static_cast<size_t>(nval));
    o += 4 * static_cast<size_t>(nval);
    m[name] = {ncall, v};
  }
  return m;
}

class MoeCalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-moe-stats-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  static std::string model() { return test::shared_path("models/arch/llama-moe-f16.gguf"); }
  static std::string text() { return test::source_dir() + "/data/stories260K-sampled.txt"; }
  test::CommandResult strata(std::vector<std::string> args) {
    args.insert(args.begin(), test::strata_binary());
    args.push_back("-t");
    args.push_back("1");
    return test::run_command(args);
  }
  fs::path dir_;
};

std::vector<float> floats(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < t.n_elements() / t.ne[0]; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * rb, v.data() + r * t.ne[0], t.ne[0]);
  return v;
}

TEST_F(MoeCalibrateCli, ExpertEntriesQuantizeAndLegacyFile) {
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "64", "-o", out("i.gguf")})
          .exit_code,
      0);
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "64", "-o", out("i.dat")})
          .exit_code,
      0);
  const auto src = GgufFile::open(model());
  const int64_t n_exp = src->metadata().get_int("llama.expert_count").value_or(0);
  const int64_t n_used = src->metadata().get_int("llama.expert_used_count").value_or(0);
  ASSERT_GT(n_exp, 1);
  ASSERT_GT(n_used, 0);
  const auto im = GgufFile::open(out("i.gguf"));
  const auto dat = read_dat(out("i.dat"));
  int checked = 0;
  for (const TensorInfo& t : src->tensors()) {
    if (t.name.find("_exps.weight") == std::string::npos) continue;
    const TensorInfo* s2 = im->find_tensor(t.name + ".in_sum2");
    const TensorInfo* c = im->find_tensor(t.name + ".counts");
    ASSERT_TRUE(s2 && c) << t.name;
    EXPECT_EQ(s2->ne[0], t.ne[0]);
    EXPECT_EQ(s2->ne[1], n_exp);
    EXPECT_EQ(c->n_elements(), n_exp);
    const std::vector<float> counts = floats(*c), sums = floats(*s2);
    double total = 0;
    for (float v : counts) total += v;
    EXPECT_EQ(total, 2.0 * 64 * n_used) << t.name;  // every position of 2 chunks, n_used experts each
    if (t.name.find("ffn_up_exps") != std::string::npos) {
      std::string gate = t.name;
      gate.replace(gate.find("ffn_up_exps"), 11, "ffn_gate_exps");
      EXPECT_EQ(floats(*im->find_tensor(gate + ".in_sum2")), sums);  // the same rows
    }
    // The legacy entry: all experts in one.
    const auto& [ncall, values] = dat.at(t.name);
    const float max_count = *std::max_element(counts.begin(), counts.end());
    EXPECT_EQ(ncall, static_cast<int32_t>(std::ceil(max_count / 64)));
    ASSERT_EQ(static_cast<int64_t>(values.size()), t.ne[0] * n_exp);
    for (int64_t e = 0; e < n_exp; ++e)
      for (int64_t i = 0; i < t.ne[0]; ++i) {
        const double want = counts[e] > 0 ? double(sums[e * t.ne[0] + i]) / counts[e] * ncall : ncall;
        EXPECT_NEAR(values[e * t.ne[0] + i], want, 1e-5 * want) << t.name << " " << e;
      }
    ++checked;
  }
  EXPECT_GE(checked, 3);

  // quantize --imatrix: each expert slice is quantize_rows with that expert's own importance,
  // from the GGUF file and from the legacy file alike.
  for (const std::string& imatrix : {out("i.gguf"), out("i.dat")}) {
    const auto r =
        strata({"quantize", model(), out("q.gguf"), "q4_0", "--pure", "--imatrix", imatrix, "--no-summary"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto q = GgufFile::open(out("q.gguf"));
    int differs_from_plain = 0;
    for (const TensorInfo& t : src->tensors()) {
      if (t.name.find("_exps.weight") == std::string::npos) continue;
      const TensorInfo* qt = q->find_tensor(t.name);
      ASSERT_EQ(qt->type, TensorType::Q4_0);
      const std::vector<float> w = floats(t), sums = floats(*im->find_tensor(t.name + ".in_sum2")),
                               counts = floats(*im->find_tensor(t.name + ".counts"));
      const int64_t n_in = t.ne[0], n_out = t.ne[1];
      const size_t slice = row_bytes(TensorType::Q4_0, n_in) * n_out;
      for (int64_t e = 0; e < n_exp; ++e) {
        std::vector<float> imp(static_cast<size_t>(n_in), 1.0f);
        if (counts[e] > 0)
          for (int64_t i = 0; i < n_in; ++i)
            imp[i] = static_cast<float>(double(sums[e * n_in + i]) / counts[e]);
        std::vector<uint8_t> want(slice), plain(slice);
        quantize_rows(TensorType::Q4_0, w.data() + e * n_in * n_out, want.data(), n_out, n_in, imp.data());
        quantize_rows(TensorType::Q4_0, w.data() + e * n_in * n_out, plain.data(), n_out, n_in);
        const uint8_t* got = static_cast<const uint8_t*>(qt->data) + e * slice;
        if (imatrix.ends_with(".gguf")) {
          EXPECT_EQ(std::memcmp(got, want.data(), slice), 0) << t.name << " expert " << e;
        } else {  // the legacy values went through (sum / count) * ncall / ncall in float
          int64_t diff = 0;
          for (size_t b = 0; b < slice; ++b) diff += got[b] != want[b];
          EXPECT_LT(diff, static_cast<int64_t>(slice / 100)) << t.name << " expert " << e;
        }
        differs_from_plain += std::memcmp(got, plain.data(), slice) != 0;
      }
    }
    EXPECT_GT(differs_from_plain, 0);
  }
}

}  // namespace
}  // namespace strata
