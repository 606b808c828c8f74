// The IQ4_NL key dot products (kv_key_dot.h) at every ISA level against float64 sums over the
// decoded blocks (kv_test_decoder.h), for awkward tile shapes and unaligned rows; and the GGUF
// key types' kernels are the matmul's (same vec_dot_type contract).
#include <gtest/gtest.h>

#include <random>

#include "backend/cpu/kernel_decls.h"
#include "backend/cpu/kv_codec.h"
#include "backend/cpu/kv_key_dot.h"
#include "backend/cpu/kv_key_tile.h"
#include "kv_test_decoder.h"
#include "quant/blocks.h"

namespace strata::cpu {
namespace {

std::vector<IsaLevel> levels() {
  std::vector<IsaLevel> out = {IsaLevel::Scalar};
  if (isa_supported(IsaLevel::Avx2)) out.push_back(IsaLevel::Avx2);
  if (isa_supported(IsaLevel::Avx512)) out.push_back(IsaLevel::Avx512);
  if (isa_supported(IsaLevel::Neon)) out.push_back(IsaLevel::Neon);
  if (isa_supported(IsaLevel::NeonDotprod)) out.push_back(IsaLevel::NeonDotprod);
  return out;
}

TEST(KvKeyDot, Iq4nlTilesMatchFloat64) {
  std::mt19937 gen(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int n : {32, 64, 96, 576})
    for (int nr : {1, 3, 8})
      for (int nc : {1, 5, 8}) {
        const size_t kb = size_t(n / 32) * sizeof(BlockIQ4_NL), qb = size_t(n / 32) * sizeof(BlockQ8_0);
        std::vector<uint8_t> keys(nr * kb + 1), queries(nc * qb + 1);  // +1: rows at odd addresses
        std::vector<float> x(n);
        for (int r = 0; r < nr; ++r) {
          for (float& v : x) v = nd(gen);
          kv_codec_kernels(IsaLevel::Scalar)
              .quantize_row(KvType::IQ4_NL, x.data(), n, keys.data() + 1 + r * kb);
        }
        for (int c = 0; c < nc; ++c) {
          for (float& v : x) v = nd(gen);
          quantize_row_q8_0_scalar(x.data(), queries.data() + 1 + c * qb, n);
        }
        for (IsaLevel isa : levels()) {
          const TypeKernels& k = kv_key_kernels(KvType::IQ4_NL, isa);
          ASSERT_EQ(k.vec_dot_type, TensorType::Q8_0);
          std::vector<float> out(size_t(nc) * nr);
          k.gemm_tile(n, nr, nc, keys.data() + 1, kb, queries.data() + 1, qb, out.data(), nr);
          for (int c = 0; c < nc; ++c)
            for (int r = 0; r < nr; ++r) {
              double want = 0;
              for (int b = 0; b < n / 32; ++b) {
                double kd[32], qd[32];
                kvtest::decode_group(KvType::IQ4_NL, keys.data() + 1 + r * kb + b * sizeof(BlockIQ4_NL), kd);
                kvtest::decode_group(KvType::Q8_0, queries.data() + 1 + c * qb + b * sizeof(BlockQ8_0), qd);
                for (int j = 0; j < 32; ++j) want += kd[j] * qd[j];
              }
              ASSERT_NEAR(out[size_t(c) * nr + r], want, 1e-4 * (1 + std::fabs(want)))
                  << isa_name(isa) << " n=" << n << " r=" << r << " c=" << c;
            }
        }
      }
}

// Interleaved Q8_0 / Q4_0 key tiles: every level's scores against float64 over the tile as the
// decoder reads it and the query levels/scales the prepared rows hold; stores and loads of tokens.
TEST(KvKeyDot, InterleavedTilesMatchFloat64) {
  std::mt19937 gen(6);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (KvType type : {KvType::Q8_0, KvType::Q4_0})
    for (int dim : {8, 16, 32, 33, 64, 80, 576})
      for (int bs : {1, 7, 16, 17, 32}) {
        KvLayerView kv;
        kv.k_type = type;
        kv.n_blocks = 1;
        kv.block_size = bs;
        kv.n_head_kv = 1;
        kv.head_dim = dim;
        const KvTileLayout layout = kv.k_layout();
        ASSERT_EQ(layout.order, KvTileOrder::Interleaved);
        std::vector<uint8_t> buf(layout.bytes + 1);
        kv.k = buf.data() + 1;  // odd address
        std::vector<float> x(dim);
        std::vector<std::vector<float>> tokens;
        for (int t = 0; t < bs; ++t) {
          for (float& v : x) v = nd(gen);
          tokens.push_back(x);
          kv_codec_kernels(IsaLevel::Scalar).store_interleaved(type, x.data(), dim, bs, t, kv.k);
        }
        const int n_groups = layout.padded_dim / 32;
        for (int t = 0; t < bs; ++t) {  // the tile holds the tokens, as the GGUF block quantizer rounds them
          std::vector<float> y(layout.padded_dim);
          kv_codec_kernels(IsaLevel::Scalar).load_interleaved(type, kv.k, dim, bs, t, y.data());
          std::vector<uint8_t> row(kv_tile_layout(type, false, dim, 1).row_bytes);
          kv_codec_kernels(IsaLevel::Scalar).quantize_row(type, tokens[t].data(), dim, row.data());
          for (int e = 0; e < layout.padded_dim; ++e) {
            double want[32];
            kvtest::decode_group(type, row.data() + (e / 32) * kvtest::group_bytes(type), want);
            ASSERT_EQ(y[e], want[e % 32]);
            ASSERT_EQ(kvtest::cache_element(kv, true, 0, 0, t, e), want[e % 32]);
          }
        }
        for (int n_rows : {1, 3, 8}) {
          const size_t qb = kv_query_int8_bytes(n_groups);
          std::vector<uint8_t> q(n_rows * qb + 1);
          std::vector<float> xq(layout.padded_dim, 0.0f);
          for (IsaLevel isa : levels()) {
            const KvKeyTileKernels& k = kv_key_tile_kernels(isa);
            std::mt19937 qgen(7);
            for (int r = 0; r < n_rows; ++r) {
              for (int e = 0; e < dim; ++e) xq[e] = nd(qgen);
              k.prepare_query(xq.data(), n_groups, q.data() + 1 + r * qb);
            }
            std::vector<float> s(size_t(n_rows) * bs + 1, -7.0f);
            k.scores(type, q.data() + 1, qb, n_rows, static_cast<const uint8_t*>(kv.k), n_groups, bs,
                     s.data());
            ASSERT_EQ(s.back(), -7.0f) << "wrote past the scores";
            for (int r = 0; r < n_rows; ++r)
              for (int j = 0; j < bs; ++j) {
                const uint8_t* row = q.data() + 1 + r * qb;
                double want = 0;
                for (int e = 0; e < layout.padded_dim; ++e) {
                  float d;
                  std::memcpy(&d, row + n_groups * 32 + 4 * (e / 32), 4);
                  want +=
                      double(d) * static_cast<int8_t>(row[e]) * kvtest::cache_element(kv, true, 0, 0, j, e);
                }
                ASSERT_NEAR(s[r * bs + j], want, 1e-4 * (1 + std::fabs(want)))
                    << kv_type_name(type) << " " << isa_name(isa) << " dim " << dim << " bs " << bs << " r "
                    << r;
              }
          }
        }
      }
}

// Prepared queries: the same bytes at every level, levels in [-127, 127] (the AVX2 sign trick
// negates them), each group's squared error at most that of llama.cpp's d = amax / 127 (in
// float64 here), and the stored sums are the sums of the levels.
TEST(KvKeyDot, PreparedQueriesMinimiseTheSquaredError) {
  std::mt19937 gen(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int dim : {1, 8, 16, 31, 32, 33, 64, 576})
    for (int trial = 0; trial < 50; ++trial) {
      const int n_groups = (dim + 31) / 32;
      std::vector<float> x(size_t(n_groups) * 32, 0.0f);
      for (int e = 0; e < dim; ++e) x[e] = nd(gen) * (e == dim / 2 ? 10.0f : 1.0f);
      const size_t qb = kv_query_int8_bytes(n_groups);
      std::vector<uint8_t> ref(qb);
      for (IsaLevel isa : levels()) {
        std::vector<uint8_t> row(qb + 1);
        kv_key_tile_kernels(isa).prepare_query(x.data(), n_groups, row.data() + 1);  // odd address
        if (isa == IsaLevel::Scalar) ref.assign(row.begin() + 1, row.end());
        ASSERT_TRUE(std::equal(ref.begin(), ref.end(), row.begin() + 1)) << isa_name(isa) << " dim " << dim;
      }
      for (int g = 0; g < n_groups; ++g) {
        float d;
        int32_t sum;
        std::memcpy(&d, ref.data() + n_groups * 32 + 4 * g, 4);
        std::memcpy(&sum, ref.data() + n_groups * 36 + 4 * g, 4);
        double amax = 0, err = 0, base = 0;
        int32_t want_sum = 0;
        for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(double(x[g * 32 + e])));
        // llama.cpp's quantize_row_q8_0: levels from the float d = amax / 127, decoded with its fp16
        const float d_f = float(amax) / 127.0f, id = d_f != 0.0f ? 1.0f / d_f : 0.0f;
        const double d127 = fp16_to_f32(f32_to_fp16(d_f));
        for (int e = 0; e < 32; ++e) {
          const int q = static_cast<int8_t>(ref[g * 32 + e]);
          ASSERT_GE(q, -127);
          want_sum += q;
          const double v = x[g * 32 + e], r = std::nearbyint(x[g * 32 + e] * id);
          err += (v - double(d) * q) * (v - double(d) * q);
          base += (v - d127 * r) * (v - d127 * r);
        }
        ASSERT_EQ(sum, want_sum);
        ASSERT_LE(err, base * (1 + 1e-4) + 1e-30) << "dim " << dim << " group " << g;
      }
    }
}

TEST(KvKeyDot, GgufKeyTypesUseTheirActivationFormat) {
  for (IsaLevel isa : levels()) {
    EXPECT_EQ(kv_key_kernels(KvType::Q8_0, isa).vec_dot_type, TensorType::Q8_0);
    EXPECT_EQ(kv_key_kernels(KvType::Q4_0, isa).vec_dot_type, TensorType::Q8_0);
    EXPECT_EQ(kv_key_kernels(KvType::Q5_0, isa).vec_dot_type, TensorType::Q8_0);
    EXPECT_EQ(kv_key_kernels(KvType::Q4_1, isa).vec_dot_type, TensorType::Q8_1);
    EXPECT_EQ(kv_key_kernels(KvType::Q5_1, isa).vec_dot_type, TensorType::Q8_1);
  }
}

}  // namespace
}  // namespace strata::cpu
