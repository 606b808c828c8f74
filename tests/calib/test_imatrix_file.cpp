// The importance-matrix files against llama.cpp's formats as its imatrix tool documents them:
// GGUF (general.type "imatrix", imatrix.datasets / chunk_count / chunk_size, per matrix NAME
// the F32 tensors NAME.in_sum2 [n_in, n_mat] and NAME.counts [1, n_mat]; importance =
// in_sum2 / counts) and the legacy .dat (i32 entries; per entry i32 name length, name, i32
// ncall, i32 nval, f32 values = mean x^2 * ncall; trailer i32 chunks, i32 length, dataset).
// Files are built byte by byte or with the generic GGUF writer here, not with imatrix_file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "calib/activation_stats.h"
#include "calib/imatrix_file.h"
#include "common/fixtures.h"
#include "core/check.h"
#include "formats/gguf_reader.h"
#include "formats/gguf_writer.h"

namespace strata::calib {
namespace {

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_test_imatrix_" + name)).string();
}

void put_i32(std::string& s, int32_t v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}
void put_f32(std::string& s, float v) {
  s.append(reinterpret_cast<const char*>(&v), 4);
}

// A llama.cpp legacy file: two entries and the trailer.
std::string legacy_bytes(const std::vector<float>& a, int32_t ncall_a, const std::vector<float>& b,
                         int32_t ncall_b) {
  std::string s;
  put_i32(s, 2);
  auto entry = [&](const std::string& name, int32_t ncall, const std::vector<float>& v) {
    put_i32(s, static_cast<int32_t>(name.size()));
    s += name;
    put_i32(s, ncall);
    put_i32(s, static_cast<int32_t>(v.size()));
    for (float x : v) put_f32(s, x);
  };
  entry("blk.0.attn_q.weight", ncall_a, a);
  entry("blk.0.ffn_down.weight", ncall_b, b);
  put_i32(s, 7);
  put_i32(s, 9);
  s += "wiki.text";
  return s;
}

TEST(ImatrixFile, ReadsLlamaLegacyDat) {
  const std::vector<float> a = {2.0f, 4.0f, 6.0f, 0.5f}, b = {3.0f, 9.0f};
  const std::string bytes = legacy_bytes(a, 2, b, 3);
  const CalibrationFile f = parse_calibration_file(bytes.data(), bytes.size(), "x.dat");
  EXPECT_TRUE(f.legacy);
  ASSERT_EQ(f.stats.size(), 2u);
  EXPECT_EQ(f.chunk_count, 7);
  ASSERT_EQ(f.datasets.size(), 1u);
  EXPECT_EQ(f.datasets[0], "wiki.text");
  // llama-quantize's importance: values / ncall.
  const std::vector<float> ia = f.stats.at("blk.0.attn_q.weight").importance();
  ASSERT_EQ(ia.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(ia[i], a[i] / 2.0f);
  const std::vector<float> ib = f.stats.at("blk.0.ffn_down.weight").importance();
  for (size_t i = 0; i < b.size(); ++i) EXPECT_FLOAT_EQ(ib[i], b[i] / 3.0f);
}

TEST(ImatrixFile, ReadsLlamaGguf) {
  // Written with the generic GGUF writer in llama-imatrix's layout; one dense matrix, one with
  // two experts (the second never routed to: count 0, importance 1 as in llama-quantize).
  GgufWriter w;
  w.metadata().add("general.type", GgufValue::of_string("imatrix"));
  GgufArray ds;
  ds.elem_type = GgufType::STRING;
  ds.strings = {"calib.txt"};
  w.metadata().add("imatrix.datasets", GgufValue::of_array(ds));
  w.metadata().add("imatrix.chunk_count", GgufValue::of_u32(5));
  w.metadata().add("imatrix.chunk_size", GgufValue::of_u32(512));
  const std::vector<float> q_sum2 = {10, 20, 30}, q_counts = {5};
  const std::vector<float> e_sum2 = {8, 16, 1, 2}, e_counts = {4, 0};
  w.add_tensor("blk.0.attn_q.weight.in_sum2", TensorType::F32, {3, 1}, q_sum2.data());
  w.add_tensor("blk.0.attn_q.weight.counts", TensorType::F32, {1, 1}, q_counts.data());
  w.add_tensor("blk.0.ffn_up_exps.weight.in_sum2", TensorType::F32, {2, 2}, e_sum2.data());
  w.add_tensor("blk.0.ffn_up_exps.weight.counts", TensorType::F32, {1, 2}, e_counts.data());
  const std::string path = tmp_path("llama.gguf");
  w.write(path);
  const CalibrationFile f = read_calibration_file(path);
  std::filesystem::remove(path);
  EXPECT_FALSE(f.legacy);
  EXPECT_EQ(f.chunk_count, 5);
  EXPECT_EQ(f.chunk_size, 512);
  ASSERT_EQ(f.datasets, std::vector<std::string>{"calib.txt"});
  const std::vector<float> iq = f.stats.at("blk.0.attn_q.weight").importance();
  EXPECT_FLOAT_EQ(iq[0], 2.0f);
  EXPECT_FLOAT_EQ(iq[1], 4.0f);
  EXPECT_FLOAT_EQ(iq[2], 6.0f);
  const TensorStats& e = f.stats.at("blk.0.ffn_up_exps.weight");
  EXPECT_EQ(e.n_mat, 2);
  EXPECT_FLOAT_EQ(e.importance(0)[0], 2.0f);
  EXPECT_FLOAT_EQ(e.importance(0)[1], 4.0f);
  EXPECT_FLOAT_EQ(e.importance(1)[0], 1.0f);
  EXPECT_FLOAT_EQ(e.importance(1)[1], 1.0f);
}

// Statistics of random rows, with the float64 sums computed here.
struct Recorded {
  TensorStats st;
  std::vector<double> sum_sq;
  double rows = 0;
};

Recorded record_random(int64_t n_in, int64_t n_rows, uint32_t seed) {
  Recorded r;
  r.st = TensorStats(n_in, 1);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.5f);
  std::vector<float> x(static_cast<size_t>(n_in * n_rows));
  for (auto& v : x) v = d(rng);
  r.st.accumulate(0, x.data(), n_rows / 2);
  r.st.accumulate(0, x.data() + (n_rows / 2) * n_in, n_rows - n_rows / 2);
  r.sum_sq.assign(static_cast<size_t>(n_in), 0.0);
  for (int64_t t = 0; t < n_rows; ++t)
    for (int64_t i = 0; i < n_in; ++i)
      r.sum_sq[static_cast<size_t>(i)] += double(x[t * n_in + i]) * x[t * n_in + i];
  r.rows = static_cast<double>(n_rows);
  return r;
}

TEST(ImatrixFile, WrittenGgufIsLlamaLayout) {
  Recorded a = record_random(33, 70, 1), b = record_random(64, 70, 2);
  CalibrationFile f;
  f.stats.emplace("blk.1.ffn_gate.weight", a.st);
  f.stats.emplace("blk.0.attn_k.weight", b.st);
  f.datasets = {"data/x.txt"};
  f.chunk_count = 3;
  f.chunk_size = 64;
  const std::string path = tmp_path("strata.gguf");
  write_imatrix_gguf(f, path, false);
  const auto g = GgufFile::open(path);
  EXPECT_EQ(g->metadata().get_string("general.type").value_or(""), "imatrix");
  EXPECT_EQ(g->metadata().get_int("imatrix.chunk_count").value_or(-1), 3);
  EXPECT_EQ(g->metadata().get_int("imatrix.chunk_size").value_or(-1), 64);
  ASSERT_NE(g->metadata().get_array("imatrix.datasets"), nullptr);
  EXPECT_EQ(g->metadata().get_array("imatrix.datasets")->strings, std::vector<std::string>{"data/x.txt"});
  for (const auto& [name, rec] : {std::pair<std::string, Recorded*>{"blk.1.ffn_gate.weight", &a},
                                  std::pair<std::string, Recorded*>{"blk.0.attn_k.weight", &b}}) {
    const TensorInfo* s2 = g->find_tensor(name + ".in_sum2");
    const TensorInfo* c = g->find_tensor(name + ".counts");
    ASSERT_NE(s2, nullptr);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(s2->type, TensorType::F32);
    EXPECT_EQ(s2->ne[0], rec->st.n_in);
    EXPECT_EQ(s2->ne[1], 1);
    EXPECT_EQ(c->ne[0], 1);
    EXPECT_EQ(static_cast<const float*>(c->data)[0], static_cast<float>(rec->rows));
    for (int64_t i = 0; i < rec->st.n_in; ++i)
      EXPECT_NEAR(static_cast<const float*>(s2->data)[i], rec->sum_sq[static_cast<size_t>(i)],
                  1e-5 * rec->sum_sq[static_cast<size_t>(i)]);
  }
  // llama-imatrix writes the entries in name order.
  std::vector<std::string> names;
  for (const TensorInfo& t : g->tensors())
    if (t.name.ends_with(".in_sum2")) names.push_back(t.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"blk.0.attn_k.weight.in_sum2", "blk.1.ffn_gate.weight.in_sum2"}));
  // And read back: the same importance.
  const CalibrationFile back = read_calibration_file(path);
  std::filesystem::remove(path);
  const std::vector<float> ia = back.stats.at("blk.1.ffn_gate.weight").importance();
  for (size_t i = 0; i < ia.size(); ++i) EXPECT_NEAR(ia[i], a.sum_sq[i] / a.rows, 1e-5 * ia[i]);
}

TEST(ImatrixFile, WrittenDatIsLlamaLayout) {
  Recorded a = record_random(31, 130, 3);  // 130 rows of chunks of 64: ncall = ceil(130 / 64) = 3
  CalibrationFile f;
  f.stats.emplace("output.weight", a.st);
  f.datasets = {"calib"};
  f.chunk_count = 2;
  f.chunk_size = 64;
  const std::string path = tmp_path("strata.dat");
  write_imatrix_dat(f, path);
  const std::string bytes = test::read_file(path);
  std::filesystem::remove(path);
  size_t p = 0;
  auto i32 = [&] {
    int32_t v;
    std::memcpy(&v, bytes.data() + p, 4);
    p += 4;
    return v;
  };
  ASSERT_EQ(bytes.size(), 4 + 4 + 13 + 4 + 4 + 31 * 4 + 4 + 4 + 5u);
  EXPECT_EQ(i32(), 1);
  EXPECT_EQ(i32(), 13);
  EXPECT_EQ(bytes.substr(p, 13), "output.weight");
  p += 13;
  const int32_t ncall = i32();
  EXPECT_EQ(ncall, 3);
  EXPECT_EQ(i32(), 31);
  for (int i = 0; i < 31; ++i) {
    float v;
    std::memcpy(&v, bytes.data() + p, 4);
    p += 4;
    EXPECT_NEAR(v / ncall, a.sum_sq[static_cast<size_t>(i)] / a.rows, 1e-5 * v);
  }
  EXPECT_EQ(i32(), 2);
  EXPECT_EQ(i32(), 5);
  EXPECT_EQ(bytes.substr(p), "calib");
}

TEST(ImatrixFile, GramMatricesRoundTrip) {
  const int64_t n = 17;
  CalibrationFile f;
  TensorStats st(n, 1);
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  std::vector<float> x(static_cast<size_t>(n * 40));
  for (auto& v : x) v = d(rng);
  st.accumulate(0, x.data(), 40);
  st.gram[0] = std::make_shared<GramMatrix>(n);
  st.gram[0]->accumulate(x.data(), 40, nullptr);
  st.gram[0]->finalize();
  TensorStats k = st;
  k.gram_leader = "blk.0.attn_q.weight";
  f.stats.emplace("blk.0.attn_q.weight", st);
  f.stats.emplace("blk.0.attn_k.weight", k);
  f.chunk_size = 40;
  const std::string path = tmp_path("gram.gguf");
  write_imatrix_gguf(f, path, true);
  const CalibrationFile back = read_calibration_file(path);
  std::filesystem::remove(path);
  const GramMatrix* gq = back.stats.at("blk.0.attn_q.weight").gram_of(0);
  const GramMatrix* gk = back.stats.at("blk.0.attn_k.weight").gram_of(0);
  ASSERT_NE(gq, nullptr);
  EXPECT_EQ(gq, gk);  // shared, stored once
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = 0;
      for (int t = 0; t < 40; ++t) ref += double(x[t * n + i]) * x[t * n + j];
      EXPECT_NEAR(gq->g[static_cast<size_t>(i * n + j)], ref, 1e-4 * (1 + std::fabs(ref)));
    }
}

void expect_error(const std::string& bytes, const char* what) {
  try {
    parse_calibration_file(bytes.data(), bytes.size(), "bad");
    ADD_FAILURE() << what << ": accepted";
  } catch (const Error&) {
  }
}

TEST(ImatrixFile, HostileLegacyFiles) {
  const std::string good = legacy_bytes({1, 2, 3}, 1, {4, 5}, 1);
  // Every truncation that cuts an entry is an error (the trailer is optional only as a whole).
  const size_t entries_end = good.size() - 4 - 4 - 9;
  for (size_t n = 0; n < entries_end; ++n) expect_error(good.substr(0, n), "truncated");
  for (size_t n = entries_end + 1; n < good.size(); ++n) expect_error(good.substr(0, n), "truncated trailer");
  std::string nan = legacy_bytes({1, std::nanf(""), 3}, 1, {4, 5}, 1);
  expect_error(nan, "NaN value");
  std::string neg = legacy_bytes({1, -2, 3}, 1, {4, 5}, 1);
  expect_error(neg, "negative sum of squares");
  std::string huge = good;
  const int32_t big = 0x7fffffff;
  std::memcpy(huge.data(), &big, 4);
  expect_error(huge, "huge entry count");
  std::string dup = legacy_bytes({1, 2, 3}, 1, {4, 5}, 1);
  const std::string n0 = "blk.0.attn_q.weight", n1 = "blk.0.ffn_down.weight";
  (void)n1;
  std::string twice;
  put_i32(twice, 2);
  for (int k = 0; k < 2; ++k) {
    put_i32(twice, static_cast<int32_t>(n0.size()));
    twice += n0;
    put_i32(twice, 1);
    put_i32(twice, 1);
    put_f32(twice, 1.0f);
  }
  expect_error(twice, "duplicate entry");
}

TEST(ImatrixFile, HostileGgufFiles) {
  auto make = [](std::vector<int64_t> sum2_ne, std::vector<float> sum2, std::vector<float> counts,
                 bool keys) {
    GgufWriter w;
    if (keys) {
      w.metadata().add("general.type", GgufValue::of_string("imatrix"));
      GgufArray ds;
      ds.elem_type = GgufType::STRING;
      ds.strings = {"x"};
      w.metadata().add("imatrix.datasets", GgufValue::of_array(ds));
      w.metadata().add("imatrix.chunk_count", GgufValue::of_u32(1));
      w.metadata().add("imatrix.chunk_size", GgufValue::of_u32(8));
    }
    w.add_tensor("a.weight.in_sum2", TensorType::F32, sum2_ne, sum2.data());
    w.add_tensor("a.weight.counts", TensorType::F32, {1, static_cast<int64_t>(counts.size())}, counts.data());
    const std::string path = tmp_path("hostile.gguf");
    w.write(path);
    std::string bytes = test::read_file(path);
    std::filesystem::remove(path);
    return bytes;
  };
  const std::string good = make({2, 1}, {1, 2}, {1}, true);
  EXPECT_NO_THROW(parse_calibration_file(good.data(), good.size(), "good"));
  expect_error(make({2, 1}, {1, 2}, {1}, false), "missing imatrix keys");
  expect_error(make({2, 1}, {1, std::nanf("")}, {1}, true), "NaN");
  expect_error(make({2, 1}, {1, 2}, {-1}, true), "negative count");
  expect_error(make({1, 2}, {1, 2}, {1}, true), "counts for the wrong number of matrices");
  // The writer pads the file to its 32-byte alignment after the last tensor: a cut there loses
  // nothing. Every cut before the last tensor's data ends is an error.
  for (size_t n = 0; n + 31 < good.size(); n += 7) expect_error(good.substr(0, n), "truncated GGUF");
}

}  // namespace
}  // namespace strata::calib
