// The kernels of score-based KV eviction (kv/kv_evict_policy.h) against references written here:
//  - Backend::attention_scores against SnapKV's score (Li et al. 2024, eq. for C = sum over the
//    observation window of softmax(q k^T / sqrt(d)), per kv head summed over its query heads),
//    computed in float64 from the keys before they were stored;
//  - Backend::move_kv_tokens (the compaction, partly in place) followed by Backend::attention
//    against a float64 attention over only the kept tokens, and against a cache the kept tokens
//    were stored into directly (the same bytes: the outputs are identical).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/backend.h"

namespace strata {
namespace {

constexpr int kHd = 64, kHeads = 4, kHeadsKv = 2, kGroup = kHeads / kHeadsKv, kBs = 16;

struct Cache {
  KvLayerView kv;
  std::vector<uint8_t> kbuf, vbuf;
  Cache(KvType kt, KvType vt, int n_blocks) {
    kv.k_type = kt;
    kv.v_type = vt;
    kv.n_blocks = n_blocks;
    kv.block_size = kBs;
    kv.n_head_kv = kHeadsKv;
    kv.head_dim = kHd;
    kv.rotate_k = !kv_type_is_float(kt);
    kbuf.assign(size_t(n_blocks) * kHeadsKv * kv.k_layout().bytes, 0);
    vbuf.assign(size_t(n_blocks) * kHeadsKv * kv.v_layout().bytes, 0);
    kv.k = kbuf.data();
    kv.v = vbuf.data();
  }
};

std::vector<float> randoms(std::mt19937& gen, size_t n, float sd) {
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = nd(gen);
  return v;
}

// Stores rows k, v ([n, n_head_kv, head_dim]) at positions 0..n-1 of `table`.
void store(Backend& be, const Cache& c, const std::vector<int32_t>& table, const std::vector<float>& k,
           const std::vector<float>& v, int n) {
  std::vector<int32_t> pos(n), seq(n, 0);
  std::vector<int64_t> slot(n);
  for (int p = 0; p < n; ++p) pos[p] = p, slot[p] = int64_t(table[p / kBs]) * kBs + p % kBs;
  AttentionBatch b;
  b.n_tokens = n;
  b.pos = pos.data();
  b.seq = seq.data();
  b.slot = slot.data();
  b.block_tables = {table.data()};
  b.n_blocks = {int32_t(table.size())};
  be.store_kv(c.kv, k.data(), v.data(), b);
}

AttentionParams params(float softcap) {
  AttentionParams ap;
  ap.n_head = kHeads;
  ap.n_head_kv = kHeadsKv;
  ap.head_dim = kHd;
  ap.scale = 1.0f / std::sqrt(float(kHd));
  ap.softcap = softcap;
  return ap;
}

struct ScoreCase {
  KvType k_type;
  int n_keys, n_obs;
  float softcap;
  bool learned_sinks;
  double tol;  // absolute, on scores that sum to n_obs * group
};

class EvictScores : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(EvictScores, MatchTheFloat64SnapKvScore) {
  const ScoreCase c = GetParam();
  auto be = make_cpu_backend(2);
  std::mt19937 gen(11);
  const int nb = (c.n_keys + kBs - 1) / kBs;
  Cache cache(c.k_type, KvType::F16, nb + 3);
  std::vector<int32_t> table(nb);
  for (int b = 0; b < nb; ++b) table[b] = nb + 2 - b;  // reversed, not starting at 0
  const auto k = randoms(gen, size_t(c.n_keys) * kHeadsKv * kHd, 1.0f);
  const auto v = randoms(gen, size_t(c.n_keys) * kHeadsKv * kHd, 1.0f);
  const auto q = randoms(gen, size_t(c.n_obs) * kHeads * kHd, 1.5f);  // [n_obs, n_head, hd]
  store(*be, cache, table, k, v, c.n_keys);
  const std::vector<float> sinks = {0.5f, -1.0f, 2.0f, 0.0f};

  // The batch: the last n_obs positions; the sink covers all but the first of them.
  const int first = c.n_keys - c.n_obs;
  std::vector<int32_t> pos(c.n_obs), seq(c.n_obs, 0);
  std::vector<int64_t> slot(c.n_obs);
  for (int i = 0; i < c.n_obs; ++i) pos[i] = first + i, slot[i] = 0;
  AttentionBatch b;
  b.n_tokens = c.n_obs;
  b.pos = pos.data();
  b.seq = seq.data();
  b.slot = slot.data();
  b.block_tables = {table.data()};
  b.n_blocks = {nb};
  AttentionParams ap = params(c.softcap);
  if (c.learned_sinks) ap.sinks = sinks.data();
  std::vector<float> acc(size_t(kHeadsKv) * c.n_keys, 0.25f);  // accumulates onto what is there
  AttentionScoreSink sk{acc.data(), c.n_keys, first + 1, c.n_keys};
  be->attention_scores(q.data(), cache.kv, b, ap, {sk});

  std::vector<double> ref(acc.size(), 0.25);
  for (int i = 1; i < c.n_obs; ++i) {
    const int P = first + i;
    for (int h = 0; h < kHeads; ++h) {
      const int g = h / kGroup;
      std::vector<double> s(P + 1);
      for (int j = 0; j <= P; ++j) {
        double d = 0;
        for (int e = 0; e < kHd; ++e)
          d += double(q[(size_t(i) * kHeads + h) * kHd + e]) * k[(size_t(j) * kHeadsKv + g) * kHd + e];
        d /= std::sqrt(double(kHd));
        s[j] = c.softcap > 0 ? c.softcap * std::tanh(d / c.softcap) : d;
      }
      double mx = *std::max_element(s.begin(), s.end());
      if (c.learned_sinks) mx = std::max(mx, double(sinks[h]));
      double z = c.learned_sinks ? std::exp(sinks[h] - mx) : 0.0;
      for (double x : s) z += std::exp(x - mx);
      for (int j = 0; j <= P; ++j) ref[size_t(g) * c.n_keys + j] += std::exp(s[j] - mx) / z;
    }
  }
  double max_err = 0;
  for (size_t j = 0; j < acc.size(); ++j) max_err = std::max(max_err, std::abs(acc[j] - ref[j]));
  EXPECT_LE(max_err, c.tol) << kv_type_name(c.k_type);
}

INSTANTIATE_TEST_SUITE_P(Types, EvictScores,
                         ::testing::Values(ScoreCase{KvType::F32, 75, 6, 0.0f, false, 1e-5},
                                           ScoreCase{KvType::F32, 1, 1, 0.0f, false, 1e-6},
                                           ScoreCase{KvType::F32, 33, 33, 0.0f, false, 1e-5},
                                           ScoreCase{KvType::F32, 257, 9, 30.0f, false, 1e-5},
                                           ScoreCase{KvType::F32, 40, 5, 0.0f, true, 1e-5},
                                           ScoreCase{KvType::F16, 75, 6, 0.0f, false, 2e-3},
                                           ScoreCase{KvType::BF16, 75, 6, 0.0f, false, 2e-2},
                                           ScoreCase{KvType::Q8_0, 75, 6, 0.0f, false, 2e-2},
                                           ScoreCase{KvType::Q4_0, 75, 6, 0.0f, false, 0.2},
                                           ScoreCase{KvType::IQ4_NL, 75, 6, 0.0f, false, 0.2}));

struct MoveCase {
  KvType k_type, v_type;
};

class EvictCompaction : public ::testing::TestWithParam<MoveCase> {};

// Keeps, per kv head, a random `budget` of the first n_prefix tokens and every token after them,
// compacted in place into the leading blocks of the same table, as the engine does.
TEST_P(EvictCompaction, AttentionOverTheCompactedCacheIsAttentionOverTheKeptTokens) {
  const MoveCase c = GetParam();
  auto be = make_cpu_backend(2);
  std::mt19937 gen(5);
  const int n = 83, n_prefix = 61, budget = 19, n_keep = budget + (n - n_prefix);
  const int nb = (n + kBs - 1) / kBs;
  Cache cache(c.k_type, c.v_type, nb + 2), direct(c.k_type, c.v_type, nb + 2);
  std::vector<int32_t> table(nb);
  for (int b = 0; b < nb; ++b) table[b] = (b * 3 + 1) % (nb + 2);
  const auto k = randoms(gen, size_t(n) * kHeadsKv * kHd, 1.0f);
  const auto v = randoms(gen, size_t(n) * kHeadsKv * kHd, 1.0f);
  store(*be, cache, table, k, v, n);

  std::vector<std::vector<int>> kept(kHeadsKv);  // per head: kept token of each compacted slot
  for (int g = 0; g < kHeadsKv; ++g) {
    std::vector<int> all(n_prefix);
    std::iota(all.begin(), all.end(), 0);
    std::shuffle(all.begin(), all.end(), gen);
    all.resize(budget);
    std::sort(all.begin(), all.end());
    for (int t = n_prefix; t < n; ++t) all.push_back(t);
    kept[g] = all;
  }
  auto slot = [](const std::vector<int32_t>& t, int i) { return int64_t(t[i / kBs]) * kBs + i % kBs; };
  std::vector<KvTokenMove> moves;
  for (int g = 0; g < kHeadsKv; ++g)
    for (int d = 0; d < budget; ++d) moves.push_back({slot(table, kept[g][d]), slot(table, d), g});
  for (int d = budget; d < n_keep; ++d)
    moves.push_back({slot(table, n_prefix + d - budget), slot(table, d), -1});
  be->move_kv_tokens(cache.kv, moves.data(), int64_t(moves.size()));

  // The same kept rows stored straight into their compacted slots.
  std::vector<float> kd(size_t(n_keep) * kHeadsKv * kHd), vd(kd.size());
  for (int d = 0; d < n_keep; ++d)
    for (int g = 0; g < kHeadsKv; ++g)
      for (int e = 0; e < kHd; ++e) {
        kd[(size_t(d) * kHeadsKv + g) * kHd + e] = k[(size_t(kept[g][d]) * kHeadsKv + g) * kHd + e];
        vd[(size_t(d) * kHeadsKv + g) * kHd + e] = v[(size_t(kept[g][d]) * kHeadsKv + g) * kHd + e];
      }
  store(*be, direct, table, kd, vd, n_keep);

  // Queries at the last compacted position see every kept key.
  const int n_q = 3;
  const auto q = randoms(gen, size_t(n_q) * kHeads * kHd, 1.0f);
  std::vector<int32_t> pos(n_q, n_keep - 1), seq(n_q, 0);
  std::vector<int64_t> sl(n_q, 0);
  AttentionBatch b;
  b.n_tokens = n_q;
  b.pos = pos.data();
  b.seq = seq.data();
  b.slot = sl.data();
  b.block_tables = {table.data()};
  b.n_blocks = {int32_t((n_keep + kBs - 1) / kBs)};
  const AttentionParams ap = params(0.0f);
  std::vector<float> out(size_t(n_q) * kHeads * kHd), out_direct(out.size());
  be->attention(q.data(), cache.kv, b, ap, out.data());
  be->attention(q.data(), direct.kv, b, ap, out_direct.data());
  EXPECT_EQ(out, out_direct) << "compaction moved other bytes than the kept tokens'";

  if (c.k_type != KvType::F32 || c.v_type != KvType::F32) return;
  double max_err = 0;
  for (int i = 0; i < n_q; ++i)
    for (int h = 0; h < kHeads; ++h) {
      const int g = h / kGroup;
      std::vector<double> s(n_keep);
      for (int d = 0; d < n_keep; ++d) {
        double dot = 0;
        for (int e = 0; e < kHd; ++e)
          dot += double(q[(size_t(i) * kHeads + h) * kHd + e]) *
                 k[(size_t(kept[g][d]) * kHeadsKv + g) * kHd + e];
        s[d] = dot / std::sqrt(double(kHd));
      }
      const double mx = *std::max_element(s.begin(), s.end());
      double z = 0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int e = 0; e < kHd; ++e) {
        double o = 0;
        for (int d = 0; d < n_keep; ++d) o += s[d] / z * v[(size_t(kept[g][d]) * kHeadsKv + g) * kHd + e];
        max_err = std::max(max_err, std::abs(o - out[(size_t(i) * kHeads + h) * kHd + e]));
      }
    }
  EXPECT_LE(max_err, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(
    Types, EvictCompaction,
    ::testing::Values(MoveCase{KvType::F32, KvType::F32}, MoveCase{KvType::F16, KvType::F16},
                      MoveCase{KvType::BF16, KvType::F16}, MoveCase{KvType::Q8_0, KvType::Q8_0},
                      MoveCase{KvType::Q4_0, KvType::Q4_1}, MoveCase{KvType::Q5_0, KvType::Q5_1},
                      MoveCase{KvType::IQ4_NL, KvType::IQ4_NL}));

TEST(EvictKernels, KiviCachesAreRefused) {
  auto be = make_cpu_backend(1);
  KvLayerView kv;
  kv.k_type = KvType::KIVI4;
  KvTokenMove m{0, 1, -1};
  EXPECT_DEATH(be->move_kv_tokens(kv, &m, 1), "KIVI");
}

}  // namespace
}  // namespace strata
