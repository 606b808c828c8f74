// `strata prune` end to end on stories260K: the written GGUF read back with the generic reader has
// zeros exactly where an independent definition of the mask says (magnitude: each row's lowest
// |w|; Wanda: each row's and group's lowest |w| * sqrt(imatrix), from the imatrix file of
// `strata calibrate`), every other weight bit-identical to the source, the tensors that are not
// linear layers untouched; SparseGPT's output keeps the N:M pattern on every row and moves the
// kept weights; hostile flags are clear errors that write nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "quant/quantize.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class PruneCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-prune-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  static std::string model() { return test::shared_path("models/stories260K/stories260K.gguf"); }
  static std::string text() { return test::source_dir() + "/data/stories260K-sampled.txt"; }
  test::CommandResult strata(std::vector<std::string> args) {
    args.insert(args.begin(), test::strata_binary());
    args.push_back("-t");
    args.push_back("2");
    return test::run_command(args);
  }
  fs::path dir_;
};

std::vector<float> values(const TensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  const size_t rb = row_bytes(t.type, t.ne[0]);
  for (int64_t r = 0; r < t.n_elements() / t.ne[0]; ++r)
    dequantize_row(t.type, static_cast<const uint8_t*>(t.data) + r * rb, v.data() + r * t.ne[0], t.ne[0]);
  return v;
}

bool linear_layer(const std::string& name) {
  return name.starts_with("blk.") &&
         (name.find(".attn_") != std::string::npos || name.find(".ffn_") != std::string::npos) &&
         name.find("norm") == std::string::npos;
}

// Zeroed positions by definition: in each group of `group` inputs of every row, the `k` lowest
// scores (ties: lower column).
std::vector<bool> expected_mask(const std::vector<float>& w, const std::vector<float>* col_scale,
                                int64_t n_in, int64_t group, int64_t k) {
  std::vector<bool> mask(w.size(), false);
  for (int64_t r = 0; r < static_cast<int64_t>(w.size()) / n_in; ++r)
    for (int64_t g = 0; g < n_in; g += group) {
      std::vector<std::pair<float, int64_t>> v;
      for (int64_t c = g; c < g + group; ++c)
        v.emplace_back(std::fabs(w[static_cast<size_t>(r * n_in + c)]) *
                           (col_scale ? (*col_scale)[static_cast<size_t>(c)] : 1.0f),
                       c);
      std::sort(v.begin(), v.end());
      for (int64_t i = 0; i < k; ++i)
        mask[static_cast<size_t>(r * n_in + v[static_cast<size_t>(i)].second)] = true;
    }
  return mask;
}

// Checks out against the source: linear layers zero exactly at the mask, the rest of their
// weights equal; other tensors byte-identical. scale(name) gives Wanda's column scale or null.
void check_pruned(const GgufFile& src, const GgufFile& dst, int64_t group_of_row, int64_t k_per_group,
                  const std::function<const std::vector<float>*(const std::string&)>& scale) {
  int pruned = 0;
  for (const TensorInfo& s : src.tensors()) {
    const TensorInfo* d = dst.find_tensor(s.name);
    ASSERT_NE(d, nullptr) << s.name;
    ASSERT_EQ(d->ne, s.ne) << s.name;
    if (!linear_layer(s.name)) {
      ASSERT_EQ(d->type, s.type);
      EXPECT_EQ(std::memcmp(d->data, s.data, s.nbytes), 0) << s.name;
      continue;
    }
    ++pruned;
    const std::vector<float> a = values(s), b = values(*d);
    const int64_t n_in = s.ne[0];
    const int64_t group = group_of_row ? group_of_row : n_in;
    const std::vector<bool> mask =
        expected_mask(a, scale(s.name), n_in, group, k_per_group ? k_per_group : n_in / 2);
    int64_t mismatches = 0;
    for (size_t i = 0; i < a.size(); ++i) mismatches += b[i] != (mask[i] ? 0.0f : a[i]);
    EXPECT_EQ(mismatches, 0) << s.name;
  }
  EXPECT_EQ(pruned, 35);  // 5 layers of q, k, v, o, gate, up, down
}

TEST_F(PruneCli, MagnitudeZeroesEachRowsSmallestWeights) {
  const auto r = strata({"prune", model(), out("m.gguf"), "--sparsity", "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto src = GgufFile::open(model());
  const auto dst = GgufFile::open(out("m.gguf"));
  EXPECT_EQ(dst->metadata().get_string("strata.prune.method").value_or(""), "magnitude");
  EXPECT_EQ(dst->metadata().get_string("strata.prune.pattern").value_or(""), "50%");
  check_pruned(*src, *dst, 0, 0, [](const std::string&) { return nullptr; });
}

TEST_F(PruneCli, WandaTwoFourFromImatrix) {
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "128", "-o", out("i.gguf")})
          .exit_code,
      0);
  const auto r = strata(
      {"prune", model(), out("w.gguf"), "--method", "wanda", "--pattern", "2:4", "--imatrix", out("i.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto im = GgufFile::open(out("i.gguf"));
  std::map<std::string, std::vector<float>> norms;  // ||X_j|| up to a common factor: sqrt(sum x^2)
  for (const TensorInfo& t : im->tensors()) {
    if (!t.name.ends_with(".in_sum2")) continue;
    std::vector<float> v = values(t);
    for (float& x : v) x = std::sqrt(x);
    norms[t.name.substr(0, t.name.size() - 8)] = v;
  }
  check_pruned(*GgufFile::open(model()), *GgufFile::open(out("w.gguf")), 4, 2, [&](const std::string& n) {
    const auto it = norms.find(n);
    EXPECT_NE(it, norms.end()) << n;
    return it == norms.end() ? nullptr : &it->second;
  });
}

TEST_F(PruneCli, SparseGptKeepsPatternAndMovesKeptWeights) {
  const auto r = strata({"prune", model(), out("s.gguf"), "--method", "sparsegpt", "--pattern", "2:4",
                         "--calib-file", text(), "--calib-chunks", "2", "--calib-ctx", "128"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto src = GgufFile::open(model());
  const auto dst = GgufFile::open(out("s.gguf"));
  for (const TensorInfo& s : src->tensors()) {
    if (!linear_layer(s.name)) continue;
    const std::vector<float> a = values(s), b = values(*dst->find_tensor(s.name));
    int64_t moved = 0;
    for (size_t g = 0; g < b.size(); g += 4) {
      int zeros = 0;
      for (size_t i = g; i < g + 4; ++i) {
        zeros += b[i] == 0.0f;
        moved += b[i] != 0.0f && b[i] != a[i];
      }
      ASSERT_EQ(zeros, 2) << s.name << " group " << g;
    }
    EXPECT_GT(moved, static_cast<int64_t>(a.size()) / 4) << s.name;  // error compensation
  }
}

// --sequential: layer 0 sees the same dense inputs either way (the same Wanda masks); the later
// layers see the pruned layers' outputs, so their statistics and masks change.
TEST_F(PruneCli, SequentialCalibratesOnPrunedPrefix) {
  const std::vector<std::string> common = {"--method",     "wanda", "--sparsity",     "0.5",
                                           "--calib-file", text(),  "--calib-chunks", "2",
                                           "--calib-ctx",  "128"};
  std::vector<std::string> a = {"prune", model(), out("a.gguf")},
                           b = {"prune", model(), out("b.gguf"), "--sequential"};
  a.insert(a.end(), common.begin(), common.end());
  b.insert(b.end(), common.begin(), common.end());
  ASSERT_EQ(strata(a).exit_code, 0);
  const auto r = strata(b);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("5 calibration pass(es)"), std::string::npos) << r.err;  // one per layer
  const auto fa = GgufFile::open(out("a.gguf"));
  const auto fb = GgufFile::open(out("b.gguf"));
  int differ_later = 0;
  for (const TensorInfo& t : fa->tensors()) {
    if (!linear_layer(t.name)) continue;
    const bool same = std::memcmp(t.data, fb->find_tensor(t.name)->data, t.nbytes) == 0;
    if (t.name.starts_with("blk.0."))
      EXPECT_TRUE(same) << t.name;
    else
      differ_later += !same;
  }
  EXPECT_GE(differ_later, 20);  // of the 28 matrices of layers 1-4
}

TEST_F(PruneCli, TypeQuantizesPrunedMatrices) {
  const auto r = strata({"prune", model(), out("q.gguf"), "--sparsity", "0.5", "--type", "q8_0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto src = GgufFile::open(model());
  const auto dst = GgufFile::open(out("q.gguf"));
  for (const TensorInfo& s : src->tensors()) {
    if (!linear_layer(s.name)) continue;
    const TensorInfo* d = dst->find_tensor(s.name);
    // ffn_down's rows of 172 do not split into Q8_0's blocks of 32: F16, as llama-quantize falls back.
    EXPECT_EQ(d->type, s.ne[0] % 32 == 0 ? TensorType::Q8_0 : TensorType::F16) << s.name;
    const std::vector<float> a = values(s), b = values(*d);
    const std::vector<bool> mask = expected_mask(a, nullptr, s.ne[0], s.ne[0], s.ne[0] / 2);
    for (size_t i = 0; i < a.size(); ++i)
      if (mask[i]) {
        ASSERT_EQ(b[i], 0.0f) << s.name;  // Q8_0 and F16 represent 0 exactly
      }
  }
}

TEST_F(PruneCli, HostileFlagsAreClearErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sparsity", "0"}, "--sparsity must be in (0, 1)"},
      {{"--sparsity", "1"}, "--sparsity must be in (0, 1)"},
      {{"--sparsity", "-0.5"}, "--sparsity must be in (0, 1)"},
      {{"--pattern", "5:4"}, "bad --pattern '5:4'"},
      {{"--pattern", "2-4"}, "bad --pattern"},
      {{"--pattern", "3:5"}, "do not split into groups of 5"},
      {{}, "give exactly one of --sparsity"},
      {{"--sparsity", "0.5", "--pattern", "2:4"}, "give exactly one of --sparsity"},
      {{"--sparsity", "0.5", "--method", "wanda"}, "needs calibration data"},
      {{"--sparsity", "0.5", "--method", "wanda", "--calib-file", "/nonexistent/calib.txt"},
       "/nonexistent/calib.txt"},
      {{"--sparsity", "0.5", "--method", "obs"}, "unknown pruning method 'obs'"},
      {{"--sparsity", "0.5", "--type", "iq2_xxs"}, "cannot quantize to"},
      {{"--sparsity", "0.5", "--type", "q9_9"}, "unknown type 'q9_9'"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = {"prune", model(), out("bad.gguf")};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto r = strata(args);
    EXPECT_NE(r.exit_code, 0) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out("bad.gguf"))) << message;
  }
  // SparseGPT with an imatrix that has no Gram matrices.
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "1", "-c", "64", "-o", out("i.gguf")})
          .exit_code,
      0);
  const auto r = strata({"prune", model(), out("bad.gguf"), "--method", "sparsegpt", "--sparsity", "0.5",
                         "--imatrix", out("i.gguf")});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("Gram matrices"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata
