// The attention tile steps (attention_tile.h) of every ISA level against the scalar reference
// and against float64 arithmetic, over awkward sizes and unaligned pointers; and each level's
// batch invariance (a row's result does not depend on the other rows of its pass).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/attention_tile.h"
#include "core/cpu_features.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (isa_supported(IsaLevel::Avx2)) out.push_back(IsaLevel::Avx2);
  if (isa_supported(IsaLevel::Avx512)) out.push_back(IsaLevel::Avx512);
  if (isa_supported(IsaLevel::Neon)) out.push_back(IsaLevel::Neon);
  return out;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

// Buffers start one float past an aligned address: no kernel may assume alignment.
struct Unaligned {
  std::vector<float> buf;
  explicit Unaligned(std::vector<float> v) : buf(v.size() + 1) {
    std::copy(v.begin(), v.end(), buf.begin() + 1);
  }
  float* data() { return buf.data() + 1; }
};

TEST(AttentionTile, ScoresMatchFloat64) {
  for (int hd : {1, 31, 33, 64, 257, 576})
    for (int bs : {1, 7, 16, 17, 32})
      for (int n_rows : {1, 3, 8}) {
        Unaligned kt(random_vec(size_t(hd) * bs, 1));
        std::vector<Unaligned> q;
        const float* qr[kRowsPerPass];
        for (int r = 0; r < n_rows; ++r) q.emplace_back(random_vec(hd, 10 + r));
        for (int r = 0; r < n_rows; ++r) qr[r] = q[r].data();
        for (IsaLevel isa : levels()) {
          Unaligned s(std::vector<float>(size_t(n_rows) * bs + 8, -7.0f));
          attention_tile_kernels(isa).scores(qr, n_rows, kt.data(), hd, bs, s.data());
          for (int r = 0; r < n_rows; ++r)
            for (int j = 0; j < bs; ++j) {
              double want = 0, mag = 0;
              for (int e = 0; e < hd; ++e) {
                want += double(qr[r][e]) * kt.data()[e * bs + j];
                mag += std::fabs(double(qr[r][e]) * kt.data()[e * bs + j]);
              }
              ASSERT_NEAR(s.data()[r * bs + j], want, 1e-6 * mag + 1e-7)
                  << isa_name(isa) << " hd=" << hd << " bs=" << bs << " r=" << r << " j=" << j;
            }
          for (int i = n_rows * bs; i < n_rows * bs + 8; ++i)
            ASSERT_EQ(s.data()[i], -7.0f) << "wrote past the rows";
        }
      }
}

struct SoftmaxCase {
  int bs, first, last;
  float cap;
  bool fresh;  // running max still -inf
};

TEST(AttentionTile, SoftmaxMatchesFloat64) {
  const SoftmaxCase cases[] = {{16, 0, 15, 0, true},  {16, 3, 9, 0, false},   {1, 0, 0, 0, true},
                               {7, 2, 6, 0, false},   {17, 0, 16, 0, false},  {32, 5, 31, 0, false},
                               {31, 30, 30, 0, true}, {16, 0, 15, 50, false}, {32, 0, 20, 0.7f, true}};
  for (const SoftmaxCase& c : cases)
    for (int n_rows : {1, 5, 8}) {
      const auto s = random_vec(size_t(n_rows) * c.bs, 3, 4.0f);
      const auto m0 = random_vec(n_rows, 4), l0 = random_vec(n_rows, 5);
      const ScoreMap sm = c.cap > 0 ? ScoreMap{0.125f / c.cap, c.cap} : ScoreMap{0.125f, 0.0f};
      for (IsaLevel isa : levels()) {
        std::vector<float> m(n_rows), l(n_rows), corr(n_rows);
        Unaligned p(std::vector<float>(size_t(n_rows) * c.bs, -9.0f));
        for (int r = 0; r < n_rows; ++r) {
          m[r] = c.fresh ? -INFINITY : m0[r];
          l[r] = c.fresh ? 0.0f : std::fabs(l0[r]);
        }
        Unaligned sv(s);
        attention_tile_kernels(isa).softmax(sv.data(), n_rows, c.bs, c.first, c.last, sm, m.data(), l.data(),
                                            p.data(), corr.data());
        for (int r = 0; r < n_rows; ++r) {
          std::vector<double> x(c.bs);
          double mx = c.fresh ? -INFINITY : m0[r];
          for (int j = c.first; j <= c.last; ++j) {
            x[j] = double(s[r * c.bs + j]) * sm.pre;
            if (c.cap > 0) x[j] = c.cap * std::tanh(x[j]);
            mx = std::max(mx, x[j]);
          }
          double sum = c.fresh ? 0.0 : std::fabs(l0[r]) * std::exp(m0[r] - mx);
          for (int j = 0; j < c.bs; ++j) {
            const double want = (j >= c.first && j <= c.last) ? std::exp(x[j] - mx) : 0.0;
            sum += want;
            ASSERT_NEAR(p.data()[r * c.bs + j], want, 2e-6 + (c.cap > 0 ? c.cap * 1e-6 : 0.0))
                << isa_name(isa);
          }
          ASSERT_NEAR(m[r], mx, 1e-5 * (1 + std::fabs(mx))) << isa_name(isa);
          ASSERT_NEAR(l[r], sum, 1e-5 * sum) << isa_name(isa);
          if (!c.fresh) {
            ASSERT_NEAR(corr[r], std::exp(m0[r] - mx), 1e-6) << isa_name(isa);
          }
        }
      }
    }
}

TEST(AttentionTile, AccumulateMatchesFloat64) {
  for (int hd_v : {1, 15, 17, 64, 80, 130, 512})
    for (int bs : {1, 7, 16, 32})
      for (int n_rows : {1, 3, 8}) {
        const int first = bs > 2 ? 1 : 0, last = bs - 1;
        Unaligned v(random_vec(size_t(bs) * hd_v, 6));
        Unaligned p(random_vec(size_t(n_rows) * bs, 7));
        const auto corr = random_vec(n_rows, 8);
        const auto acc0 = random_vec(size_t(n_rows) * hd_v, 9);
        for (IsaLevel isa : levels()) {
          std::vector<Unaligned> acc;
          float* ar[kRowsPerPass];
          for (int r = 0; r < n_rows; ++r) {
            std::vector<float> row(acc0.begin() + r * hd_v, acc0.begin() + (r + 1) * hd_v);
            row.push_back(-5.0f);  // guard
            acc.emplace_back(row);
          }
          for (int r = 0; r < n_rows; ++r) ar[r] = acc[r].data();
          attention_tile_kernels(isa).accumulate(ar, n_rows, p.data(), bs, v.data(), hd_v, first, last,
                                                 corr.data());
          for (int r = 0; r < n_rows; ++r) {
            for (int e = 0; e < hd_v; ++e) {
              double want = double(acc0[r * hd_v + e]) * corr[r], mag = std::fabs(want);
              for (int j = first; j <= last; ++j) {
                want += double(p.data()[r * bs + j]) * v.data()[j * hd_v + e];
                mag += std::fabs(double(p.data()[r * bs + j]) * v.data()[j * hd_v + e]);
              }
              ASSERT_NEAR(ar[r][e], want, 1e-6 * mag + 1e-7)
                  << isa_name(isa) << " hd_v=" << hd_v << " bs=" << bs;
            }
            ASSERT_EQ(ar[r][hd_v], -5.0f) << "wrote past the row";
          }
        }
      }
}

// Row 0's scores, probabilities and accumulator are bitwise the same alone or in a full pass.
TEST(AttentionTile, RowsAreIndependentOfTheirPass) {
  const int hd = 80, bs = 16, hd_v = 80;
  const auto kt = random_vec(size_t(hd) * bs, 1), v = random_vec(size_t(bs) * hd_v, 2);
  std::vector<std::vector<float>> q;
  for (int r = 0; r < kRowsPerPass; ++r) q.push_back(random_vec(hd, 20 + r));
  for (IsaLevel isa : levels()) {
    const AttentionTileKernels& k = attention_tile_kernels(isa);
    std::vector<float> acc_out[2];
    for (int n_rows : {1, kRowsPerPass}) {
      const float* qr[kRowsPerPass];
      std::vector<std::vector<float>> acc(n_rows, std::vector<float>(hd_v, 0.5f));
      float* ar[kRowsPerPass];
      for (int r = 0; r < n_rows; ++r) qr[r] = q[r].data(), ar[r] = acc[r].data();
      std::vector<float> s(size_t(n_rows) * bs), p(s.size()), m(n_rows, 0.25f), l(n_rows, 1.0f), corr(n_rows);
      k.scores(qr, n_rows, kt.data(), hd, bs, s.data());
      k.softmax(s.data(), n_rows, bs, 2, 13, ScoreMap{0.1f, 0.0f}, m.data(), l.data(), p.data(), corr.data());
      k.accumulate(ar, n_rows, p.data(), bs, v.data(), hd_v, 2, 13, corr.data());
      acc[0].push_back(m[0]);
      acc[0].push_back(l[0]);
      acc_out[n_rows == 1 ? 0 : 1] = acc[0];
    }
    EXPECT_EQ(acc_out[0], acc_out[1]) << isa_name(isa);
  }
}

}  // namespace
}  // namespace strata::cpu
