// The saved base run format (eval/base_logits_file.h): round trip accuracy against
// distributions built here, and clean errors for every kind of damaged or hostile file. Offsets
// below follow the layout documented in the header, not the implementation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "common/fixtures.h"
#include "core/check.h"
#include "eval/base_logits_file.h"

namespace strata::eval {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kVocab = 7;
constexpr size_t kHeader = 64;

// Independent reference: log-softmax in long double.
std::vector<double> reference_log_softmax(const std::vector<double>& logits) {
  long double m = -INFINITY, s = 0;
  for (double v : logits) m = std::max<long double>(m, v);
  for (double v : logits) s += std::exp(static_cast<long double>(v) - m);
  std::vector<double> out;
  for (double v : logits) out.push_back(static_cast<double>(v - m - std::log(s)));
  return out;
}

uint64_t fnv1a(const std::string& bytes, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

class BaseLogitsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("strata-eval-base-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // 13 tokens, ctx 6, stride 6: 2 windows, each scoring 6 - 1 - 3 = 2 rows -> 4 rows.
    header_.n_vocab = kVocab;
    header_.n_ctx = 6;
    header_.stride = 6;
    header_.n_windows = 2;
    header_.vocab_fingerprint = 0x0123456789abcdefull;
    header_.bos = 1;
    header_.tokens = {1, 4, 2, 6, 0, 3, 5, 5, 1, 2, 3, 4, 6};
    const std::vector<std::vector<double>> logits = {
        {0.5, -1.25, 3.0, 2.75, -0.5, 0.0, 1.0},
        {10.0, -60.0, 0.0, 9.5, -3.0, 2.0, 10.0},  // entries far below the top get clamped
        {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0},       // uniform: zero range
        {-2.0, -2.5, -1.0, 7.0, 6.9999, -30.0, 1.5},
    };
    for (const auto& l : logits) {
      BaseRow r;
      r.logp = reference_log_softmax(l);
      r.top1 = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
      r.nll = -r.logp[3];
      rows_.push_back(r);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_valid(const std::string& name) {
    BaseLogitsWriter w(path(name), header_);
    for (const BaseRow& r : rows_) w.write_row(r);
    w.finish();
    return path(name);
  }

  // Writes `bytes` with the trailing checksum recomputed (so field checks are reached).
  std::string write_fixed(const std::string& name, std::string bytes) {
    if (bytes.size() >= 8) {
      const uint64_t h = fnv1a(bytes, bytes.size() - 8);
      std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
    }
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  template <typename T>
  static void poke(std::string& bytes, size_t offset, T v) {
    std::memcpy(bytes.data() + offset, &v, sizeof v);
  }

  size_t record_offset(size_t i) const { return kHeader + 4 * header_.tokens.size() + i * (16 + 2 * kVocab); }

  void expect_rejected(const std::string& file, const std::string& what) {
    try {
      BaseLogitsReader reader(file);
      ADD_FAILURE() << what << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind(file + ": ", 0), 0u) << what << ": " << e.what();
    }
  }

  fs::path dir_;
  BaseLogitsHeader header_;
  std::vector<BaseRow> rows_;
};

TEST_F(BaseLogitsFile, RoundTripKeepsDistributionsWithinTheQuantizationBound) {
  const BaseLogitsReader reader(write_valid("ok.kld"));
  EXPECT_EQ(reader.header().n_vocab, kVocab);
  EXPECT_EQ(reader.header().n_ctx, 6);
  EXPECT_EQ(reader.header().stride, 6);
  EXPECT_EQ(reader.header().n_windows, 2);
  EXPECT_EQ(reader.header().bos, 1);
  EXPECT_EQ(reader.header().vocab_fingerprint, 0x0123456789abcdefull);
  EXPECT_EQ(reader.header().tokens, header_.tokens);
  ASSERT_EQ(reader.n_rows(), 4);
  ASSERT_EQ(reader.plan().windows.size(), 2u);
  EXPECT_EQ(reader.plan().windows[1].start, 6);
  EXPECT_EQ(fs::file_size(path("ok.kld")), kHeader + 4 * 13 + 4 * (16 + 2 * kVocab) + 8);
  BaseRow got;
  for (int64_t i = 0; i < 4; ++i) {
    const BaseRow& want = rows_[static_cast<size_t>(i)];
    reader.read_row(i, got);
    EXPECT_EQ(got.top1, want.top1);
    EXPECT_FLOAT_EQ(static_cast<float>(got.nll), static_cast<float>(want.nll));
    ASSERT_EQ(got.logp.size(), static_cast<size_t>(kVocab));
    const double hi = *std::max_element(want.logp.begin(), want.logp.end());
    double kl = 0.0, mass = 0.0;
    for (size_t j = 0; j < got.logp.size(); ++j) {
      mass += std::exp(got.logp[j]);
      kl += std::exp(want.logp[j]) * (want.logp[j] - got.logp[j]);
      // Within 40 nats of the top: step / 2 <= 40 / 65535 / 2 plus the re-normalisation shift.
      if (want.logp[j] >= hi - 40.0) {
        EXPECT_NEAR(got.logp[j], want.logp[j], 6.2e-4) << "row " << i << " id " << j;
      }
    }
    EXPECT_NEAR(mass, 1.0, 1e-12);
    EXPECT_LT(std::abs(kl), 1e-7) << "row " << i;
  }
}

TEST_F(BaseLogitsFile, NothingAppearsUntilFinished) {
  {
    BaseLogitsWriter w(path("unfinished.kld"), header_);
    w.write_row(rows_[0]);
    EXPECT_TRUE(fs::exists(path("unfinished.kld.partial")));
    EXPECT_FALSE(fs::exists(path("unfinished.kld")));
  }
  EXPECT_FALSE(fs::exists(path("unfinished.kld.partial")));
  EXPECT_FALSE(fs::exists(path("unfinished.kld")));
  EXPECT_THROW(BaseLogitsWriter(path("no/such/dir/x.kld"), header_), Error);
}

TEST_F(BaseLogitsFile, EveryTruncationIsRejected) {
  const std::string good = test::read_file(write_valid("good.kld"));
  for (size_t n = 0; n < good.size(); ++n) {
    std::ofstream(path("cut.kld"), std::ios::binary) << good.substr(0, n);
    expect_rejected(path("cut.kld"), "truncated to " + std::to_string(n));
  }
  std::ofstream(path("long.kld"), std::ios::binary) << good << '\0';
  expect_rejected(path("long.kld"), "trailing byte");
  expect_rejected(path("missing.kld"), "missing file");
}

TEST_F(BaseLogitsFile, DamagedFieldsAreRejected) {
  const std::string good = test::read_file(write_valid("good.kld"));
  struct Case {
    const char* what;
    std::function<void(std::string&)> damage;
  };
  const size_t r0 = record_offset(0);
  const std::vector<Case> cases = {
      {"magic", [](std::string& b) { b[0] = 'X'; }},
      {"version 2", [](std::string& b) { poke<uint32_t>(b, 8, 2); }},
      {"vocab 0", [](std::string& b) { poke<uint32_t>(b, 12, 0); }},
      {"vocab 8", [](std::string& b) { poke<uint32_t>(b, 12, 8); }},
      {"ctx 3", [](std::string& b) { poke<uint64_t>(b, 16, 3); }},
      {"ctx huge", [](std::string& b) { poke<uint64_t>(b, 16, ~uint64_t{0}); }},
      {"stride 0", [](std::string& b) { poke<uint64_t>(b, 24, 0); }},
      {"stride huge", [](std::string& b) { poke<uint64_t>(b, 24, ~uint64_t{0}); }},
      {"stride 1 (fewer rows)", [](std::string& b) { poke<uint64_t>(b, 24, 1); }},
      {"windows 0", [](std::string& b) { poke<uint64_t>(b, 32, 0); }},
      {"windows 3", [](std::string& b) { poke<uint64_t>(b, 32, 3); }},
      {"windows huge", [](std::string& b) { poke<uint64_t>(b, 32, uint64_t{1} << 62); }},
      {"tokens huge", [](std::string& b) { poke<uint64_t>(b, 40, uint64_t{1} << 61); }},
      {"tokens 12", [](std::string& b) { poke<uint64_t>(b, 40, 12); }},
      {"bos -2", [](std::string& b) { poke<int32_t>(b, 56, -2); }},
      {"bos 7", [](std::string& b) { poke<int32_t>(b, 56, 7); }},
      {"reserved", [](std::string& b) { poke<uint32_t>(b, 60, 1); }},
      {"token -1", [](std::string& b) { poke<int32_t>(b, kHeader + 8, -1); }},
      {"token 7", [](std::string& b) { poke<int32_t>(b, kHeader + 8, 7); }},
      {"nll NaN", [r0](std::string& b) { poke<float>(b, r0, NAN); }},
      {"nll -1", [r0](std::string& b) { poke<float>(b, r0, -1.0f); }},
      {"nll inf", [r0](std::string& b) { poke<float>(b, r0, INFINITY); }},
      {"top1 -1", [r0](std::string& b) { poke<int32_t>(b, r0 + 4, -1); }},
      {"top1 7", [r0](std::string& b) { poke<int32_t>(b, r0 + 4, 7); }},
      {"lo -inf", [r0](std::string& b) { poke<float>(b, r0 + 8, -INFINITY); }},
      {"lo NaN", [r0](std::string& b) { poke<float>(b, r0 + 8, NAN); }},
      {"step -1", [r0](std::string& b) { poke<float>(b, r0 + 12, -1.0f); }},
      {"step huge", [r0](std::string& b) { poke<float>(b, r0 + 12, 3e38f); }},
      {"range above 0", [r0](std::string& b) { poke<float>(b, r0 + 8, 0.5f); }},
      {"range too wide",
       [r0](std::string& b) {
         poke<float>(b, r0 + 8, -100.0f);
         poke<float>(b, r0 + 12, 100.0f / 65535.0f);
       }},
      {"top below -ln(vocab)",
       [r0](std::string& b) {
         poke<float>(b, r0 + 8, -30.0f);
         poke<float>(b, r0 + 12, 0.0f);
       }},
  };
  for (const Case& c : cases) {
    std::string bytes = good;
    c.damage(bytes);
    expect_rejected(write_fixed("bad.kld", bytes), c.what);
  }
  // A flipped payload byte without a matching checksum.
  std::string flipped = good;
  flipped[record_offset(2) + 20] ^= 0x10;
  std::ofstream(path("flip.kld"), std::ios::binary) << flipped;
  expect_rejected(path("flip.kld"), "checksum");
}

TEST_F(BaseLogitsFile, RandomDamageIsRejectedOrDecodesToDistributions) {
  const std::string good = test::read_file(write_valid("good.kld"));
  std::mt19937 rng(12345);
  int accepted = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string bytes = good;
    const int n = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) bytes[rng() % (bytes.size() - 8)] = static_cast<char>(rng());
    const std::string file = write_fixed("rand.kld", bytes);
    try {
      BaseLogitsReader reader(file);
      ++accepted;
      BaseRow row;
      for (int64_t i = 0; i < reader.n_rows(); ++i) {
        reader.read_row(i, row);
        double mass = 0.0;
        for (double lp : row.logp) mass += std::exp(lp);
        EXPECT_NEAR(mass, 1.0, 1e-9);
        EXPECT_GE(row.top1, 0);
        EXPECT_LT(row.top1, reader.header().n_vocab);
      }
    } catch (const Error&) {
    }
  }
  EXPECT_GT(accepted, 0);  // damage to quantized values alone is undetectable but harmless
}

}  // namespace
}  // namespace strata::eval
