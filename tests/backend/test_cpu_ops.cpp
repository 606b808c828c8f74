// The CPU op kernels at every ISA level against plain double-precision references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/cpu/cpu_ops.h"
#include "core/fp16.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  return supported_isa_levels();
}

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

TEST(CpuOps, RmsNormAndSwigluAndAdd) {
  for (IsaLevel isa : levels()) {
    const OpKernels& k = op_kernels(isa);
    for (int64_t n : {1, 31, 33, 257, 2048}) {
      // +1 float offsets make the pointers unaligned for vector loads.
      auto x = random_vec(n + 1, 1), w = random_vec(n + 1, 2), y = std::vector<float>(n + 1);
      k.rms_norm_row(x.data() + 1, w.data() + 1, y.data() + 1, n, 1e-5f);
      double ss = 0;
      for (int64_t i = 0; i < n; ++i) ss += double(x[i + 1]) * x[i + 1];
      const double scale = 1.0 / std::sqrt(ss / n + 1e-5);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(y[i + 1], x[i + 1] * scale * w[i + 1],
                    1e-5 * (1 + std::fabs(x[i + 1] * scale * w[i + 1])))
            << isa_name(isa) << " n=" << n;

      auto g = random_vec(n, 3, 4.0f), u = random_vec(n, 4), o = std::vector<float>(n);
      k.swiglu(g.data(), u.data(), o.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
        ASSERT_NEAR(o[i], ref, 1e-6 * (1 + std::fabs(ref))) << isa_name(isa);
      }
      auto a = random_vec(n, 5), b = random_vec(n, 6), sum = a;
      k.add(sum.data(), b.data(), n);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sum[i], a[i] + b[i]);
    }
  }
}

TEST(CpuOps, RopeRotatesPairsOrHalves) {
  for (IsaLevel isa : levels()) {
    const OpKernels& k = op_kernels(isa);
    const int hd = 8, heads = 2, n_rot = 8;
    const auto x0 = random_vec(hd * heads, 7);
    std::vector<float> cs(n_rot);
    for (int i = 0; i < n_rot / 2; ++i) {
      cs[2 * i] = std::cos(0.3f * (i + 1));
      cs[2 * i + 1] = std::sin(0.3f * (i + 1));
    }
    for (bool neox : {false, true}) {
      auto x = x0;
      k.rope_row(x.data(), cs.data(), heads, hd, n_rot, neox);
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < n_rot / 2; ++i) {
          const int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
          const float xa = x0[h * hd + a], xb = x0[h * hd + b];
          EXPECT_NEAR(x[h * hd + a], xa * cs[2 * i] - xb * cs[2 * i + 1], 1e-6);
          EXPECT_NEAR(x[h * hd + b], xa * cs[2 * i + 1] + xb * cs[2 * i], 1e-6);
        }
    }
  }
}

// Naive attention in double over the logical (position-ordered) keys of one sequence.
struct AttnCase {
  int hd, n_head, n_head_kv, block_size, n_ctx, n_q, window;
  bool f16;
};

class AttentionTest : public ::testing::TestWithParam<AttnCase> {};

TEST_P(AttentionTest, MatchesNaiveSoftmaxAttention) {
  const AttnCase c = GetParam();
  const int group = c.n_head / c.n_head_kv;
  const int n_blocks = (c.n_ctx + c.block_size - 1) / c.block_size;
  // Shuffled block table: the kernel must follow it, not assume contiguity.
  std::vector<int32_t> table(n_blocks);
  for (int i = 0; i < n_blocks; ++i) table[i] = (i * 7 + 3) % n_blocks;
  if (std::gcd(7, n_blocks) != 1)
    for (int i = 0; i < n_blocks; ++i) table[i] = n_blocks - 1 - i;
  const size_t per_block = size_t(c.n_head_kv) * c.block_size * c.hd;
  const auto kf = random_vec(n_blocks * per_block, 11), vf = random_vec(n_blocks * per_block, 12);
  std::vector<uint16_t> kh(kf.size()), vh(vf.size());
  std::vector<float> kr(kf), vr(vf);  // the values the kernel really sees
  for (size_t i = 0; i < kf.size(); ++i) {
    kh[i] = f32_to_fp16(kf[i]);
    vh[i] = f32_to_fp16(vf[i]);
    if (c.f16) {
      kr[i] = fp16_to_f32(kh[i]);
      vr[i] = fp16_to_f32(vh[i]);
    }
  }
  KvLayerView kv;
  kv.k = c.f16 ? static_cast<void*>(kh.data()) : static_cast<void*>(kr.data());
  kv.v = c.f16 ? static_cast<void*>(vh.data()) : static_cast<void*>(vr.data());
  kv.type = c.f16 ? TensorType::F16 : TensorType::F32;
  kv.n_blocks = n_blocks;
  kv.block_size = c.block_size;
  kv.n_head_kv = c.n_head_kv;
  kv.head_dim = c.hd;
  const int64_t stride = int64_t(c.n_head) * c.hd;
  const auto q = random_vec(c.n_q * stride, 13);
  std::vector<int32_t> pos(c.n_q);
  for (int t = 0; t < c.n_q; ++t) pos[t] = c.n_ctx - c.n_q + t;
  const float scale = 1.0f / std::sqrt(float(c.hd));

  // The cache layout (backend.h): per (block, kv head) tile, K transposed [hd][bs], V [bs][hd].
  auto key = [&](const std::vector<float>& buf, int p, int g, int e) {
    const size_t tile = (size_t(table[p / c.block_size]) * c.n_head_kv + g) * c.block_size * c.hd;
    return buf[tile + size_t(e) * c.block_size + p % c.block_size];
  };
  auto value = [&](const std::vector<float>& buf, int p, int g, int e) {
    const size_t tile = (size_t(table[p / c.block_size]) * c.n_head_kv + g) * c.block_size * c.hd;
    return buf[tile + size_t(p % c.block_size) * c.hd + e];
  };
  for (IsaLevel isa : levels()) {
    std::vector<float> out(q.size(), -99.0f);
    for (int g = 0; g < c.n_head_kv; ++g) {
      AttentionChunk ch;
      ch.q = q.data() + size_t(g) * group * c.hd;
      ch.q_stride = stride;
      ch.out = out.data() + size_t(g) * group * c.hd;
      ch.pos = pos.data();
      ch.n_q = c.n_q;
      ch.group = group;
      ch.kv_head = g;
      ch.block_table = table.data();
      ch.scale = scale;
      ch.sliding_window = c.window;
      (c.f16 ? op_kernels(isa).attention_f16 : op_kernels(isa).attention_f32)(ch, kv);
    }
    for (int t = 0; t < c.n_q; ++t)
      for (int h = 0; h < c.n_head; ++h) {
        const int g = h / group;
        const int lo = c.window > 0 ? std::max(0, pos[t] - c.window + 1) : 0;
        std::vector<double> s;
        double mx = -1e300;
        for (int p = lo; p <= pos[t]; ++p) {
          double d = 0;
          for (int e = 0; e < c.hd; ++e) d += double(q[t * stride + h * c.hd + e]) * key(kr, p, g, e);
          s.push_back(d * scale);
          mx = std::max(mx, s.back());
        }
        double z = 0;
        for (double& v : s) z += (v = std::exp(v - mx));
        for (int e = 0; e < c.hd; ++e) {
          double o = 0;
          for (int p = lo; p <= pos[t]; ++p) o += s[p - lo] / z * value(vr, p, g, e);
          ASSERT_NEAR(out[t * stride + h * c.hd + e], o, 2e-5 + 2e-5 * std::fabs(o))
              << isa_name(isa) << " t=" << t << " h=" << h << " e=" << e;
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionTest,
                         ::testing::Values(AttnCase{64, 8, 4, 16, 1, 1, 0, true},    // first token
                                           AttnCase{64, 8, 4, 16, 37, 1, 0, true},   // decode, partial block
                                           AttnCase{64, 8, 4, 16, 37, 5, 0, true},   // chunk of 5 queries
                                           AttnCase{32, 4, 1, 16, 70, 8, 0, false},  // MQA, f32 cache
                                           AttnCase{128, 32, 4, 16, 100, 2, 0, true},
                                           AttnCase{80, 6, 6, 32, 65, 3, 0, true},   // MHA, block 32
                                           AttnCase{64, 4, 2, 16, 90, 4, 20, true},  // sliding window
                                           AttnCase{256, 2, 2, 8, 19, 3, 0, false}));

}  // namespace
}  // namespace strata::cpu
