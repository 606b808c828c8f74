// Backend::store_kv + Backend::attention at every ISA level against a float64 attention written
// here from the definitions: scores q.k * scale, optional soft-capping (gemma2:
// cap * tanh(s / cap)), causal mask with an optional sliding window, softmax whose denominator
// optionally includes one sink logit per query head (gpt-oss), and the weighted sum of V. V may
// be narrower than K (head_dim_v) or be the first head_dim_v elements of the K row (MLA).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "backend/backend.h"
#include "core/cpu_features.h"
#include "core/fp16.h"

namespace strata {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (max_supported_isa() >= IsaLevel::Avx2) out.push_back(IsaLevel::Avx2);
  if (max_supported_isa() >= IsaLevel::Avx512) out.push_back(IsaLevel::Avx512);
  return out;
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

struct AttnCase {
  const char* name;
  int hd, hd_v, n_head, n_head_kv, block_size, n_ctx, n_q, window;
  float softcap;
  bool sinks, v_in_k, f16;
};

// The float64 reference: out [n_q, n_head, hd_v] for queries at positions n_ctx - n_q + t over
// keys/values k: [n_ctx, n_head_kv, hd], v: [n_ctx, n_head_kv, hd_v] (as the cache holds them).
std::vector<double> reference(const AttnCase& c, const std::vector<float>& q, const std::vector<float>& k,
                              const std::vector<float>& v, const std::vector<float>& sinks, double scale) {
  const int group = c.n_head / c.n_head_kv;
  std::vector<double> out(size_t(c.n_q) * c.n_head * c.hd_v);
  for (int t = 0; t < c.n_q; ++t) {
    const int pos = c.n_ctx - c.n_q + t;
    const int lo = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      std::vector<double> s;
      for (int p = lo; p <= pos; ++p) {
        double d = 0;
        for (int e = 0; e < c.hd; ++e)
          d += double(q[(size_t(t) * c.n_head + h) * c.hd + e]) * k[(size_t(p) * c.n_head_kv + g) * c.hd + e];
        d *= scale;
        if (c.softcap > 0) d = c.softcap * std::tanh(d / c.softcap);
        s.push_back(d);
      }
      double mx = *std::max_element(s.begin(), s.end());
      if (c.sinks) mx = std::max(mx, double(sinks[h]));
      double z = c.sinks ? std::exp(sinks[h] - mx) : 0.0;
      for (double& x : s) z += (x = std::exp(x - mx));
      for (int e = 0; e < c.hd_v; ++e) {
        double o = 0;
        for (int p = lo; p <= pos; ++p) {
          const double ve = c.v_in_k ? k[(size_t(p) * c.n_head_kv + g) * c.hd + e]
                                     : v[(size_t(p) * c.n_head_kv + g) * c.hd_v + e];
          o += s[p - lo] / z * ve;
        }
        out[(size_t(t) * c.n_head + h) * c.hd_v + e] = o;
      }
    }
  }
  return out;
}

void PrintTo(const AttnCase& c, std::ostream* os) {
  *os << c.name;
}

class AttentionVariants : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionVariants, MatchesFloat64Reference) {
  const AttnCase c = GetParam();
  const int n_blocks = (c.n_ctx + c.block_size - 1) / c.block_size;
  const int pool_blocks = n_blocks + 3;
  // Shuffled block table into a larger pool: the kernels must follow it, not assume contiguity.
  std::vector<int32_t> table(n_blocks);
  for (int i = 0; i < n_blocks; ++i) table[i] = (i * 5 + 2) % pool_blocks;
  if (std::gcd(5, pool_blocks) != 1) std::iota(table.rbegin(), table.rend(), 1);

  auto k = random_vec(size_t(c.n_ctx) * c.n_head_kv * c.hd, 11);
  auto v = random_vec(size_t(c.n_ctx) * c.n_head_kv * c.hd_v, 12);
  const auto q = random_vec(size_t(c.n_q) * c.n_head * c.hd, 13);
  const auto sinks = random_vec(size_t(c.n_head), 14, 2.0f);
  if (c.f16) {  // the reference sees what the cache holds
    for (float& x : k) x = fp16_to_f32(f32_to_fp16(x));
    for (float& x : v) x = fp16_to_f32(f32_to_fp16(x));
  }

  const size_t elem = c.f16 ? 2 : 4;
  std::vector<uint8_t> kbuf(size_t(pool_blocks) * c.n_head_kv * c.block_size * c.hd * elem);
  std::vector<uint8_t> vbuf(c.v_in_k ? 0 : size_t(pool_blocks) * c.n_head_kv * c.block_size * c.hd_v * elem);
  KvLayerView kv;
  kv.k = kbuf.data();
  kv.v = c.v_in_k ? nullptr : vbuf.data();
  kv.type = c.f16 ? TensorType::F16 : TensorType::F32;
  kv.n_blocks = pool_blocks;
  kv.block_size = c.block_size;
  kv.n_head_kv = c.n_head_kv;
  kv.head_dim = c.hd;
  kv.head_dim_v = c.hd_v;
  kv.v_in_k = c.v_in_k;

  std::vector<int32_t> pos(c.n_ctx), seq(c.n_ctx, 0);
  std::vector<int64_t> slot(c.n_ctx);
  for (int p = 0; p < c.n_ctx; ++p) {
    pos[p] = p;
    slot[p] = int64_t(table[p / c.block_size]) * c.block_size + p % c.block_size;
  }
  AttentionBatch store;
  store.n_tokens = c.n_ctx;
  store.pos = pos.data();
  store.seq = seq.data();
  store.slot = slot.data();
  store.block_tables = {table.data()};
  store.n_blocks = {n_blocks};
  AttentionBatch query = store;
  query.n_tokens = c.n_q;
  query.pos = pos.data() + (c.n_ctx - c.n_q);
  query.slot = slot.data() + (c.n_ctx - c.n_q);

  AttentionParams ap;
  ap.n_head = c.n_head;
  ap.n_head_kv = c.n_head_kv;
  ap.head_dim = c.hd;
  ap.head_dim_v = c.hd_v;
  ap.scale = 1.0f / std::sqrt(float(c.hd));
  ap.sliding_window = c.window;
  ap.softcap = c.softcap;
  ap.sinks = c.sinks ? sinks.data() : nullptr;
  const auto want = reference(c, q, k, v, sinks, ap.scale);
  // Soft-capping goes through a fast tanh with ~3e-7 absolute error, i.e. cap * 3e-7 in a logit.
  const double tol = c.softcap > 0 ? 1e-4 : 3e-5;

  const IsaLevel saved = isa_level();
  auto backend = make_cpu_backend(2);
  for (IsaLevel isa : levels()) {
    set_isa_level(isa);
    std::fill(kbuf.begin(), kbuf.end(), uint8_t{0xFF});  // NaN-ish garbage in unwritten slots
    std::fill(vbuf.begin(), vbuf.end(), uint8_t{0xFF});
    backend->store_kv(kv, k.data(), c.v_in_k ? nullptr : v.data(), store);
    std::vector<float> out(want.size(), -99.0f);
    backend->attention(q.data(), kv, query, ap, out.data());
    for (size_t i = 0; i < out.size(); ++i)
      ASSERT_NEAR(out[i], want[i], tol * (1 + std::fabs(want[i])))
          << c.name << " " << isa_name(isa) << " at " << i << " (token " << i / (size_t(c.n_head) * c.hd_v)
          << ", head " << i / c.hd_v % c.n_head << ")";
  }
  set_isa_level(saved);
}

// hd, hd_v, n_head, n_head_kv, block, n_ctx, n_q, window, softcap, sinks, v_in_k, f16
INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionVariants,
    ::testing::Values(AttnCase{"first_token", 64, 64, 8, 4, 16, 1, 1, 0, 0, false, false, true},
                      AttnCase{"decode_partial", 64, 64, 8, 4, 16, 37, 1, 0, 0, false, false, true},
                      AttnCase{"chunk5", 64, 64, 8, 4, 16, 37, 5, 0, 0, false, false, true},
                      AttnCase{"mqa_f32", 32, 32, 4, 1, 16, 70, 8, 0, 0, false, false, false},
                      AttnCase{"gqa8", 128, 128, 32, 4, 16, 100, 2, 0, 0, false, false, true},
                      AttnCase{"mha_block32", 80, 80, 6, 6, 32, 65, 3, 0, 0, false, false, true},
                      AttnCase{"window", 64, 64, 4, 2, 16, 90, 4, 20, 0, false, false, true},
                      AttnCase{"hd256_block8", 256, 256, 2, 2, 8, 19, 3, 0, 0, false, false, false},
                      AttnCase{"odd_dims", 33, 31, 3, 1, 16, 41, 3, 0, 0, false, false, true},
                      AttnCase{"odd_block", 48, 48, 4, 2, 7, 30, 4, 9, 0, false, false, true},
                      // gemma2: soft-capping at 50 with a sliding window, head size 256
                      AttnCase{"softcap", 256, 256, 8, 4, 16, 70, 3, 32, 50.0f, false, false, true},
                      AttnCase{"softcap_small", 64, 64, 4, 4, 16, 33, 2, 0, 0.5f, false, false, false},
                      // gpt-oss: sinks, GQA 8, alternating window
                      AttnCase{"sinks", 64, 64, 16, 2, 16, 50, 4, 0, 0, true, false, true},
                      AttnCase{"sinks_window", 64, 64, 16, 2, 16, 50, 2, 8, 0, true, false, true},
                      // DeepSeek without absorption: q/k 192, v 128
                      AttnCase{"hd_v_smaller", 192, 128, 8, 8, 16, 45, 2, 0, 0, false, false, true},
                      AttnCase{"hd_v_larger", 64, 96, 4, 2, 16, 20, 1, 0, 0, false, false, false},
                      // DeepSeek V2/V3 absorbed MLA: one latent head of 512 + 64 rope, 128 heads
                      AttnCase{"mla_decode", 576, 512, 128, 1, 16, 40, 1, 0, 0, false, true, true},
                      AttnCase{"mla_chunk", 576, 512, 128, 1, 16, 23, 3, 0, 0, false, true, true},
                      AttnCase{"mla_small", 96, 64, 16, 1, 16, 35, 5, 0, 0, false, true, false},
                      AttnCase{"everything", 576, 512, 128, 1, 32, 50, 2, 40, 30.0f, true, true, false},
                      AttnCase{"group128_block7", 64, 48, 128, 1, 7, 19, 2, 0, 0, true, false, true}),
    [](const ::testing::TestParamInfo<AttnCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace strata
