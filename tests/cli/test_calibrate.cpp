// `strata calibrate` and `strata quantize --imatrix / --method` end to end on stories260K: the
// imatrix files are llama.cpp's layouts (checked with the generic GGUF reader and by the .dat
// bytes), the importance is what the format defines (matrices reading the same input, q/k/v and
// gate/up, get the same numbers; counts are the rows seen), and the quantized files hold only
// standard GGUF types with llama-quantize's imatrix keys.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/fixtures.h"
#include "formats/gguf_reader.h"
#include "quant/quantize.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

class CalibrateCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-calibrate-" + std::to_string(::getpid()));
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

std::vector<float> floats(const TensorInfo& t) {
  const auto* p = static_cast<const float*>(t.data);
  return std::vector<float>(p, p + t.n_elements());
}

TEST_F(CalibrateCli, WritesLlamaImatrixGguf) {
  const auto r =
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "3", "-c", "128", "-o", out("i.gguf")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = GgufFile::open(out("i.gguf"));
  EXPECT_EQ(f->metadata().get_string("general.type").value_or(""), "imatrix");
  EXPECT_EQ(f->metadata().get_int("imatrix.chunk_count").value_or(0), 3);
  EXPECT_EQ(f->metadata().get_int("imatrix.chunk_size").value_or(0), 128);
  const TensorInfo* q = f->find_tensor("blk.0.attn_q.weight.in_sum2");
  const TensorInfo* k = f->find_tensor("blk.0.attn_k.weight.in_sum2");
  const TensorInfo* c = f->find_tensor("blk.0.attn_q.weight.counts");
  const TensorInfo* down = f->find_tensor("blk.4.ffn_down.weight.in_sum2");
  const TensorInfo* outw = f->find_tensor("output.weight.in_sum2");
  ASSERT_TRUE(q && k && c && down && outw);
  EXPECT_EQ(q->ne[0], 64);
  EXPECT_EQ(down->ne[0], 172);
  EXPECT_EQ(floats(*c)[0], 3.0f * 128);  // every position of 3 chunks of 128 tokens
  EXPECT_EQ(floats(*q), floats(*k));     // the same input
  for (float v : floats(*down)) EXPECT_GE(v, 0.0f);
  // No Gram matrices unless asked.
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight.gram"), nullptr);
}

TEST_F(CalibrateCli, LegacyDatMatchesGgufImportance) {
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "64", "-o", out("i.gguf")})
          .exit_code,
      0);
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "64", "-o", out("i.dat")})
          .exit_code,
      0);
  const auto g = GgufFile::open(out("i.gguf"));
  const std::string dat = test::read_file(out("i.dat"));
  // Find output.weight in the .dat: i32 count, then entries (i32 len, name, i32 ncall, i32 nval, values).
  size_t p = 4;
  int32_t n = 0;
  std::memcpy(&n, dat.data(), 4);
  bool found = false;
  for (int32_t e = 0; e < n; ++e) {
    int32_t len, ncall, nval;
    std::memcpy(&len, dat.data() + p, 4);
    const std::string name = dat.substr(p + 4, static_cast<size_t>(len));
    p += 4 + static_cast<size_t>(len);
    std::memcpy(&ncall, dat.data() + p, 4);
    std::memcpy(&nval, dat.data() + p + 4, 4);
    p += 8;
    if (name == "output.weight") {
      found = true;
      const std::vector<float> s2 = floats(*g->find_tensor("output.weight.in_sum2"));
      const float count = floats(*g->find_tensor("output.weight.counts"))[0];
      ASSERT_EQ(nval, 64);
      EXPECT_EQ(ncall, 2);  // 128 rows in chunks of 64
      for (int i = 0; i < nval; ++i) {
        float v;
        std::memcpy(&v, dat.data() + p + 4 * static_cast<size_t>(i), 4);
        EXPECT_NEAR(v / ncall, s2[static_cast<size_t>(i)] / count, 1e-5 * v);
      }
    }
    p += 4 * static_cast<size_t>(nval);
  }
  EXPECT_TRUE(found);
}

TEST_F(CalibrateCli, QuantizeWithImatrixAndGptq) {
  ASSERT_EQ(
      strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "128", "-o", out("i.dat")})
          .exit_code,
      0);
  auto r = strata({"quantize", model(), out("im.gguf"), "Q4_0", "--imatrix", out("i.dat"), "--no-summary"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto f = GgufFile::open(out("im.gguf"));
  EXPECT_EQ(f->metadata().get_string("quantize.imatrix.file").value_or(""), out("i.dat"));
  EXPECT_EQ(f->find_tensor("blk.0.attn_q.weight")->type, TensorType::Q4_0);

  // GPTQ needs Gram matrices: a plain imatrix is refused with a clear message, a --gram file works.
  r = strata({"quantize", model(), out("g.gguf"), "Q4_0", "--method", "gptq", "--imatrix", out("i.dat")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("Gram matrices"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out("g.gguf")));
  ASSERT_EQ(strata({"calibrate", "-m", model(), "-f", text(), "--chunks", "2", "-c", "128", "--gram", "-o",
                    out("g.imatrix")})
                .exit_code,
            0);
  r = strata({"quantize", model(), out("g.gguf"), "Q4_0", "--method", "gptq", "--imatrix", out("g.imatrix"),
              "--no-summary"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  f = GgufFile::open(out("g.gguf"));
  EXPECT_EQ(f->metadata().get_string("strata.quantize.method").value_or(""), "gptq");
  for (const TensorInfo& t : f->tensors()) {
    SCOPED_TRACE(t.name);
    EXPECT_TRUE(t.type == TensorType::F32 || t.type == TensorType::F16 || t.type == TensorType::Q4_0 ||
                t.type == TensorType::Q8_0);
    // Every block decodes to finite values.
    std::vector<float> row(static_cast<size_t>(t.ne[0]));
    dequantize_row(t.type, t.data, row.data(), t.ne[0]);
    for (float v : row) ASSERT_TRUE(std::isfinite(v));
  }
}

TEST_F(CalibrateCli, BadInputsFailCleanly) {
  fs::path bad = dir_ / "bad.dat";
  { std::ofstream(bad) << "not an imatrix"; }
  auto r = strata({"quantize", model(), out("x.gguf"), "Q4_0", "--imatrix", bad.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("strata: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(out("x.gguf")));
  r = strata({"quantize", model(), out("x.gguf"), "Q4_0", "--method", "awq"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("needs calibration data"), std::string::npos) << r.err;
  r = strata({"calibrate", "-m", model(), "-f", text(), "--gram", "-o", out("x.dat")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot hold Gram matrices"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace strata
