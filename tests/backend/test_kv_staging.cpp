// The KIVI staging area (KvStaging, backend.h) through Backend::store_kv / copy_kv_block: blocks
// stay in F16 while being filled, are quantized when full, are quantized early and restored when
// their slot is needed by another block, and copy with their staged tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "kv_test_decoder.h"

namespace strata {
namespace {

constexpr int kHd = 32, kBs = 16, kBlocks = 4;

struct Cache {
  std::vector<uint8_t> k, v;
  std::vector<uint16_t> sk, sv;
  KvStaging st;
  KvLayerView kv;
  explicit Cache(int n_slots) {
    kv.k_type = KvType::KIVI4;
    kv.v_type = KvType::KIVI2;
    kv.n_blocks = kBlocks;
    kv.block_size = kBs;
    kv.n_head_kv = 1;
    kv.head_dim = kHd;
    k.assign(kBlocks * kv.k_layout().bytes, 0);
    v.assign(kBlocks * kv.v_layout().bytes, 0);
    sk.assign(size_t(n_slots) * kHd * kBs, 0);
    sv.assign(size_t(n_slots) * kHd * kBs, 0);
    st.n_slots = n_slots;
    st.slot_of_block.assign(kBlocks, -1);
    st.block_of_slot.assign(n_slots, -1);
    st.n_written.assign(n_slots, 0);
    st.last_write.assign(n_slots, 0);
    st.k = sk.data();
    st.v = sv.data();
    kv.k = k.data();
    kv.v = v.data();
    kv.staging = &st;
  }
};

struct Tokens {
  std::vector<float> k, v;  // [n, kHd]
  explicit Tokens(uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    k.resize(kBs * kHd), v.resize(kBs * kHd);
    for (float& x : k) x = d(gen);
    for (float& x : v) x = d(gen);
  }
};

// Stores tokens [first, last] of one block's worth into `block`, one store_kv call per token.
void store(Backend& b, const KvLayerView& kv, const Tokens& t, int32_t block, int first, int last) {
  for (int p = first; p <= last; ++p) {
    const int32_t pos = p, seq = 0;
    const int64_t slot = int64_t(block) * kBs + p;
    const int32_t table = block;
    AttentionBatch ab;
    ab.n_tokens = 1;
    ab.pos = &pos;
    ab.seq = &seq;
    ab.slot = &slot;
    ab.block_tables = {&table};
    ab.n_blocks = {1};
    b.store_kv(kv, t.k.data() + p * kHd, t.v.data() + p * kHd, ab);
  }
}

double step(const std::vector<double>& x, int bits) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  return (*hi - *lo) / ((1 << bits) - 1);
}

TEST(KvStaging, BlocksStayF16UntilFullThenQuantize) {
  auto backend = make_cpu_backend(1);
  Cache c(2);
  const Tokens a(1);
  store(*backend, c.kv, a, 2, 0, 9);
  ASSERT_GE(c.st.slot_of_block[2], 0);
  for (int t = 0; t < 10; ++t)
    for (int e = 0; e < kHd; ++e) {  // staged: F16 of the given values
      ASSERT_EQ(kvtest::cache_element(c.kv, true, 2, 0, t, e), fp16_to_f32(f32_to_fp16(a.k[t * kHd + e])));
      ASSERT_EQ(kvtest::cache_element(c.kv, false, 2, 0, t, e), fp16_to_f32(f32_to_fp16(a.v[t * kHd + e])));
    }
  store(*backend, c.kv, a, 2, 10, 15);
  EXPECT_EQ(c.st.slot_of_block[2], -1);  // full: quantized, slot free
  EXPECT_EQ(c.st.block_of_slot[0], -1);
  for (int e = 0; e < kHd; ++e) {
    std::vector<double> ch;
    for (int t = 0; t < kBs; ++t) ch.push_back(fp16_to_f32(f32_to_fp16(a.k[t * kHd + e])));
    for (int t = 0; t < kBs; ++t)
      ASSERT_LE(std::fabs(kvtest::cache_element(c.kv, true, 2, 0, t, e) - a.k[t * kHd + e]),
                step(ch, 4) / 2 + 2e-3 * (1 + std::fabs(a.k[t * kHd + e])));
  }
}

// One slot for two blocks filled in turns: each turn quantizes the other block early (over the
// tokens it has) and restores this one, so early tokens are quantized twice: within half a step of
// the first grid plus half a step of the final one.
TEST(KvStaging, EvictedBlocksAreQuantizedEarlyAndRestored) {
  auto backend = make_cpu_backend(1);
  Cache c(1);
  const Tokens a(2), b(3);
  store(*backend, c.kv, a, 0, 0, 9);
  store(*backend, c.kv, b, 1, 0, 9);  // evicts block 0 (10 tokens)
  EXPECT_EQ(c.st.slot_of_block[0], -1);
  EXPECT_EQ(c.st.slot_of_block[1], 0);
  store(*backend, c.kv, a, 0, 10, 15);  // evicts block 1, restores and completes block 0
  store(*backend, c.kv, b, 1, 10, 15);
  for (int32_t block : {0, 1}) {
    const Tokens& t = block == 0 ? a : b;
    for (int e = 0; e < kHd; ++e) {
      std::vector<double> early, all;
      for (int p = 0; p < kBs; ++p) (p < 10 ? early : all).push_back(t.k[p * kHd + e]);
      all.insert(all.end(), early.begin(), early.end());
      const double bound = step(early, 4) / 2 + step(all, 4) / 2 + 1e-2;
      for (int p = 0; p < kBs; ++p)
        ASSERT_LE(std::fabs(kvtest::cache_element(c.kv, true, block, 0, p, e) - t.k[p * kHd + e]), bound)
            << "block " << block << " token " << p << " channel " << e;
    }
    for (int p = 0; p < kBs; ++p)  // V is per token: its early tokens round to the same levels again
      for (int g = 0; g < kHd; g += 32) {
        std::vector<double> row(t.v.begin() + p * kHd + g, t.v.begin() + p * kHd + g + 32);
        for (int e = 0; e < 32; ++e)
          ASSERT_LE(std::fabs(kvtest::cache_element(c.kv, false, block, 0, p, g + e) - row[e]),
                    step(row, 2) + 1e-2);
      }
  }
}

TEST(KvStaging, CopiesCarryTheStagedTokens) {
  auto backend = make_cpu_backend(1);
  Cache c(2);
  const Tokens a(4);
  store(*backend, c.kv, a, 1, 0, 4);
  backend->copy_kv_block(c.kv, 1, 3);  // copy-on-write of a partly filled block
  ASSERT_GE(c.st.slot_of_block[3], 0);
  ASSERT_NE(c.st.slot_of_block[3], c.st.slot_of_block[1]);
  for (int p = 0; p < 5; ++p)
    for (int e = 0; e < kHd; ++e) {
      ASSERT_EQ(kvtest::cache_element(c.kv, true, 3, 0, p, e), kvtest::cache_element(c.kv, true, 1, 0, p, e));
      ASSERT_EQ(kvtest::cache_element(c.kv, false, 3, 0, p, e),
                kvtest::cache_element(c.kv, false, 1, 0, p, e));
    }
  // The copy grows on its own; the original keeps its tokens.
  const Tokens other(5);
  store(*backend, c.kv, other, 3, 5, 15);
  EXPECT_EQ(c.st.slot_of_block[3], -1);
  ASSERT_GE(c.st.slot_of_block[1], 0);
  for (int e = 0; e < kHd; ++e)
    ASSERT_EQ(kvtest::cache_element(c.kv, true, 1, 0, 4, e), fp16_to_f32(f32_to_fp16(a.k[4 * kHd + e])));
  // With a single slot, the source is quantized and the copy is of the quantized block.
  Cache one(1);
  store(*backend, one.kv, a, 0, 0, 7);
  backend->copy_kv_block(one.kv, 0, 2);
  EXPECT_EQ(one.st.slot_of_block[0], -1);
  EXPECT_EQ(one.st.slot_of_block[2], -1);
  for (int p = 0; p < 8; ++p)
    for (int e = 0; e < kHd; ++e)
      ASSERT_EQ(kvtest::cache_element(one.kv, true, 2, 0, p, e),
                kvtest::cache_element(one.kv, true, 0, 0, p, e));
}

}  // namespace
}  // namespace strata
