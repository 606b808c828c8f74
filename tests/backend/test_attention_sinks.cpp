// StreamingLLM attention sinks in Backend::attention (AttentionParams::n_sink_tokens, q_sink)
// against a float64 attention written here from the paper's definition (Xiao et al. 2023,
// "Efficient Streaming Language Models with Attention Sinks", section 3.2): a query at position P
// sees the first S tokens and the last W tokens up to itself; positions are those within the
// rolling cache, so once tokens were evicted (P > S + W - 1) the sinks sit at cache positions
// 0..S-1, window token p at S + p - (P - W + 1) and the query at S + W - 1, and rotary
// embeddings are applied at those positions to the raw q and k.
//
// The kernel gets what the model hands it: K rotated once at its own absolute position (never
// re-rotated), q rotated at P and q_sink rotated at min(P, S + W - 1). Blocks that no query may
// read point at a block of NaNs, so reading one would poison the output.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "core/cpu_features.h"

namespace strata {
namespace {

constexpr int kHd = 32, kHeads = 4, kHeadsKv = 2, kBs = 16;
constexpr double kBase = 10000.0;

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (isa_supported(IsaLevel::Avx2)) out.push_back(IsaLevel::Avx2);
  if (isa_supported(IsaLevel::Avx512)) out.push_back(IsaLevel::Avx512);
  return out;
}

// GGUF llama rotation of one head (pairs (2i, 2i+1) turned by pos * base^(-2i / hd)), in double.
std::vector<double> rope(const float* x, int pos) {
  std::vector<double> y(x, x + kHd);
  for (int i = 0; i < kHd / 2; ++i) {
    const double a = pos * std::pow(kBase, -2.0 * i / kHd);
    const double x0 = x[2 * i], x1 = x[2 * i + 1];
    y[2 * i] = x0 * std::cos(a) - x1 * std::sin(a);
    y[2 * i + 1] = x0 * std::sin(a) + x1 * std::cos(a);
  }
  return y;
}

struct Case {
  KvType k_type;
  int sinks, window, n_ctx;
  double tol;
};

class AttentionSinks : public ::testing::TestWithParam<Case> {};

TEST_P(AttentionSinks, MatchesTheRollingCacheDefinition) {
  const Case c = GetParam();
  const int n_blocks = (c.n_ctx + kBs - 1) / kBs, pool = n_blocks + 2, nan_block = pool - 1;
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto randoms = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = nd(gen);
    return v;
  };
  const std::vector<float> k_raw = randoms(size_t(c.n_ctx) * kHeadsKv * kHd);  // before RoPE
  const std::vector<float> v = randoms(size_t(c.n_ctx) * kHeadsKv * kHd);
  const std::vector<float> q_raw = randoms(size_t(c.n_ctx) * kHeads * kHd);
  const int S = c.sinks, W = c.window;

  // What the model stores and passes: K and q rotated at their positions, q_sink at the capped one.
  std::vector<float> k(k_raw.size()), q(q_raw.size()), q_sink(q_raw.size());
  for (int p = 0; p < c.n_ctx; ++p) {
    for (int g = 0; g < kHeadsKv; ++g) {
      const auto r = rope(&k_raw[(size_t(p) * kHeadsKv + g) * kHd], p);
      for (int e = 0; e < kHd; ++e) k[(size_t(p) * kHeadsKv + g) * kHd + e] = float(r[e]);
    }
    for (int h = 0; h < kHeads; ++h) {
      const float* src = &q_raw[(size_t(p) * kHeads + h) * kHd];
      const auto a = rope(src, p), b = rope(src, std::min(p, S + W - 1));
      for (int e = 0; e < kHd; ++e) {
        q[(size_t(p) * kHeads + h) * kHd + e] = float(a[e]);
        q_sink[(size_t(p) * kHeads + h) * kHd + e] = float(b[e]);
      }
    }
  }

  KvLayerView kv;
  kv.k_type = c.k_type;
  kv.v_type = KvType::F32;
  kv.n_blocks = pool;
  kv.block_size = kBs;
  kv.n_head_kv = kHeadsKv;
  kv.head_dim = kHd;
  kv.rotate_k = !kv_type_is_float(c.k_type);
  std::vector<uint8_t> kbuf(size_t(pool) * kHeadsKv * kv.k_layout().bytes, 0xFF);  // NaNs
  std::vector<uint8_t> vbuf(size_t(pool) * kHeadsKv * kv.v_layout().bytes, 0xFF);
  kv.k = kbuf.data();
  kv.v = vbuf.data();
  std::vector<int32_t> table(n_blocks), pos(c.n_ctx), seq(c.n_ctx, 0);
  std::vector<int64_t> slot(c.n_ctx);
  for (int b = 0; b < n_blocks; ++b) table[b] = n_blocks - b;  // reversed, block 0 unused
  for (int p = 0; p < c.n_ctx; ++p) pos[p] = p, slot[p] = int64_t(table[p / kBs]) * kBs + p % kBs;
  auto batch = [&](const std::vector<int32_t>& tbl, int first, int n) {
    AttentionBatch b;
    b.n_tokens = n;
    b.pos = pos.data() + first;
    b.seq = seq.data() + first;
    b.slot = slot.data() + first;
    b.block_tables = {tbl.data()};
    b.n_blocks = {static_cast<int32_t>(tbl.size())};
    return b;
  };
  AttentionParams ap;
  ap.n_head = kHeads;
  ap.n_head_kv = kHeadsKv;
  ap.head_dim = kHd;
  ap.scale = 1.0f / std::sqrt(float(kHd));
  ap.sliding_window = W;
  ap.n_sink_tokens = S;
  ap.q_sink = q_sink.data();

  // The reference output of the query at P, head h, from the definition.
  auto reference = [&](int P, int h) {
    const int g = h / (kHeads / kHeadsKv);
    const bool evicted = P > S + W - 1;
    const int cq = evicted ? S + W - 1 : P;
    const auto qr = rope(&q_raw[(size_t(P) * kHeads + h) * kHd], cq);
    std::vector<double> s;
    std::vector<int> keys;
    for (int p = 0; p <= P; ++p) {
      if (p >= S && p <= P - W) continue;  // neither a sink nor in the window
      const int ck = !evicted || p < S ? p : S + p - (P - W + 1);
      const auto kr = rope(&k_raw[(size_t(p) * kHeadsKv + g) * kHd], ck);
      double d = 0;
      for (int e = 0; e < kHd; ++e) d += qr[e] * kr[e];
      s.push_back(d / std::sqrt(double(kHd)));
      keys.push_back(p);
    }
    const double mx = *std::max_element(s.begin(), s.end());
    double z = 0;
    for (double& x : s) z += (x = std::exp(x - mx));
    std::vector<double> o(kHd, 0.0);
    for (size_t i = 0; i < keys.size(); ++i)
      for (int e = 0; e < kHd; ++e) o[e] += s[i] / z * v[(size_t(keys[i]) * kHeadsKv + g) * kHd + e];
    return o;
  };
  auto check = [&](const std::vector<float>& out, int first, int n, const char* what, IsaLevel isa) {
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < kHeads; ++h) {
        const auto want = reference(first + t, h);
        for (int e = 0; e < kHd; ++e)
          ASSERT_NEAR(out[(size_t(t) * kHeads + h) * kHd + e], want[e], c.tol)
              << what << " " << isa_name(isa) << " pos " << first + t << " head " << h << " elem " << e;
      }
  };

  const IsaLevel saved = isa_level();
  auto backend = make_cpu_backend(2);
  for (IsaLevel isa : levels()) {
    set_isa_level(isa);
    backend->store_kv(kv, k.data(), v.data(), batch(table, 0, c.n_ctx));
    // Every position, in chunks of 5 (prefill-like, straddling blocks and the eviction start).
    std::vector<float> out(size_t(c.n_ctx) * kHeads * kHd);
    for (int first = 0; first < c.n_ctx; first += 5) {
      const int n = std::min(5, c.n_ctx - first);
      ap.q_sink = q_sink.data() + size_t(first) * kHeads * kHd;
      backend->attention(q.data() + size_t(first) * kHeads * kHd, kv, batch(table, first, n), ap, out.data());
      ASSERT_NO_FATAL_FAILURE(check(out, first, n, "chunked", isa));
    }
    // The last few queries with the blocks between the sinks and the window given back.
    const int last = 3, first = c.n_ctx - last;
    std::vector<int32_t> dropped = table;
    for (int b = (S + kBs - 1) / kBs; (b + 1) * kBs <= first - W + 1; ++b) dropped[b] = nan_block;
    ap.q_sink = q_sink.data() + size_t(first) * kHeads * kHd;
    backend->attention(q.data() + size_t(first) * kHeads * kHd, kv, batch(dropped, first, last), ap,
                       out.data());
    ASSERT_NO_FATAL_FAILURE(check(out, first, last, "dropped blocks", isa));
  }
  set_isa_level(saved);
}

INSTANTIATE_TEST_SUITE_P(Types, AttentionSinks,
                         ::testing::Values(Case{KvType::F32, 4, 32, 150, 1e-4},   // sinks inside block 0
                                           Case{KvType::F32, 20, 16, 130, 1e-4},  // sinks span two blocks
                                           Case{KvType::F32, 1, 17, 77, 1e-4},    // window not block-aligned
                                           Case{KvType::F32, 0, 32, 100, 1e-4},   // a plain window
                                           Case{KvType::F16, 4, 48, 160, 5e-3},
                                           Case{KvType::Q8_0, 4, 32, 150, 5e-2}));  // rotated, int8 scores

}  // namespace
}  // namespace strata
