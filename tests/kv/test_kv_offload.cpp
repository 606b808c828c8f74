// Offloading behind the prefix cache: evicted blocks are demoted and restored bit for bit, a
// restart restores from disk, and a long randomized run (pool under pressure, host and disk
// tiers on) keeps the pool's reference counts exact and every reused block's bytes equal to
// the bytes its computation wrote.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>

#include "backend/backend.h"
#include "kv/disk_tier.h"
#include "kv/kv_cache_manager.h"
#include "kv/kv_offload.h"
#include "kv/prefix_hash.h"

namespace fs = std::filesystem;

namespace strata {
namespace {

constexpr int32_t kBs = 4;

KvGeometry geometry(KvType type) {
  KvGeometry g;
  g.n_layer = 2;
  g.n_head_kv = 2;
  g.head_dim = 32;
  g.block_size = kBs;
  g.type = KvCacheType{type, type, true};
  return g;
}

// What "computing" a block writes: bytes determined by the block's prefix hash alone, so a
// block reused by hash must hold exactly these bytes.
std::vector<uint8_t> content(const BlockHash& h, size_t n) {
  std::vector<uint8_t> b(n);
  std::seed_seq seed(h.begin(), h.end());
  std::mt19937 rng(seed);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("strata-offload-" + std::to_string(::getpid()) + "-" + tag);
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// The hashes of the full blocks of `tokens`, computed here from the hash definition.
std::vector<BlockHash> hashes_of(const std::vector<int32_t>& tokens, const BlockHash& root) {
  std::vector<BlockHash> out;
  for (size_t i = 0; (i + 1) * kBs <= tokens.size(); ++i)
    out.push_back(chain_block_hash(out.empty() ? root : out.back(), tokens.data() + i * kBs, kBs));
  return out;
}

// Computes [from, to) of a sequence: writes every block that becomes full, then publishes.
void compute(KvCacheManager& kv, KvStorage& st, SequenceKv& s, const std::vector<int32_t>& tokens,
             int64_t from, int64_t to, const BlockHash& root) {
  const auto hs = hashes_of(tokens, root);
  for (int64_t b = from / kBs; b < to / kBs; ++b)
    st.write_block(s.blocks[static_cast<size_t>(b)],
                   content(hs[static_cast<size_t>(b)], st.geometry().bytes_per_block()).data());
  kv.publish(s, tokens, to, root);
}

// Every full computed block of the sequence holds its hash's bytes.
::testing::AssertionResult blocks_hold_their_bytes(const KvStorage& st, const SequenceKv& s,
                                                   const std::vector<int32_t>& tokens, int64_t computed,
                                                   const BlockHash& root) {
  const auto hs = hashes_of(tokens, root);
  std::vector<uint8_t> got(st.geometry().bytes_per_block());
  for (size_t b = 0; b < static_cast<size_t>(computed / kBs) && b < s.blocks.size(); ++b) {
    st.read_block(s.blocks[b], got.data());
    if (got != content(hs[b], got.size()))
      return ::testing::AssertionFailure() << "block " << b << " differs";
  }
  return ::testing::AssertionSuccess();
}

TEST(KvOffload, AnEvictedPrefixIsRestoredFromHostRamBitForBit) {
  auto backend = make_cpu_backend(1);
  for (KvType type : {KvType::F16, KvType::Q8_0, KvType::Q4_0}) {
    KvStorage st(*backend, geometry(type), 4);
    KvCacheManager kv(4, kBs, true);
    KvOffload off(st, 1 << 20, nullptr);
    kv.set_offload(&off);
    const BlockHash root = prefix_root_hash({"m"});
    std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7, 8, 9};  // 2 full blocks + 1 token
    SequenceKv s;
    std::vector<BlockCopy> copies;
    ASSERT_TRUE(kv.reserve(s, 8, 0, copies));
    compute(kv, st, s, a, 0, 8, root);
    kv.free(s);
    // Another sequence takes the whole pool: a's blocks are evicted (demoted to RAM).
    SequenceKv other;
    ASSERT_TRUE(kv.reserve(other, 16, 0, copies));
    compute(kv, st, other, {50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65}, 0, 16, root);
    EXPECT_EQ(off.host_stats()->blocks_stored, 2);
    kv.free(other);  // now the pool holds other's 4 blocks cached; a's are only in RAM
    SequenceKv again;
    EXPECT_EQ(kv.acquire_prefix(again, a, 8, root), 8) << kv_type_name(type);
    EXPECT_EQ(off.host_stats()->hits, 2);
    EXPECT_TRUE(blocks_hold_their_bytes(st, again, a, 8, root));
    kv.free(again);
  }
}

TEST(KvOffload, ANewManagerOnTheSameDirectoryRestoresThePrefixFromDisk) {
  TempDir dir("restart");
  auto backend = make_cpu_backend(1);
  const KvGeometry g = geometry(KvType::F16);
  const BlockHash root = prefix_root_hash({"m"});
  const BlockHash fingerprint = prefix_root_hash({"fingerprint"});
  std::vector<int32_t> a;
  for (int i = 0; i < 21; ++i) a.push_back(100 + i);  // 5 full blocks
  {
    KvStorage st(*backend, g, 8);
    KvCacheManager kv(8, kBs, true);
    KvOffload off(st, 0,
                  std::make_unique<DiskTier>(dir.path.string(), 1 << 20, fingerprint, g.bytes_per_block()));
    kv.set_offload(&off);
    SequenceKv s;
    std::vector<BlockCopy> copies;
    ASSERT_TRUE(kv.reserve(s, 21, 0, copies));
    compute(kv, st, s, a, 0, 21, root);  // published blocks are written through to disk
    kv.free(s);
  }  // "shutdown": the disk tier writes out its queue
  KvStorage st(*backend, g, 8);
  KvCacheManager kv(8, kBs, true);
  KvOffload off(st, 0,
                std::make_unique<DiskTier>(dir.path.string(), 1 << 20, fingerprint, g.bytes_per_block()));
  kv.set_offload(&off);
  SequenceKv s;
  EXPECT_EQ(kv.acquire_prefix(s, a, 20, root), 20);
  EXPECT_EQ(off.disk_stats()->hits, 5);
  EXPECT_TRUE(blocks_hold_their_bytes(st, s, a, 20, root));
  // The restored blocks are in the pool now: a second sequence shares them without the disk.
  SequenceKv t;
  EXPECT_EQ(kv.acquire_prefix(t, a, 20, root), 20);
  EXPECT_EQ(off.disk_stats()->hits, 5);
  EXPECT_EQ(t.blocks, s.blocks);
  kv.free(s);
  kv.free(t);
}

TEST(KvOffload, RandomizedInvariantsOverManyStepsWithTiers) {
  constexpr int kBlocks = 24;
  TempDir dir("random");
  auto backend = make_cpu_backend(1);
  const KvGeometry g = geometry(KvType::Q8_0);
  const size_t bpb = g.bytes_per_block();
  KvStorage st(*backend, g, kBlocks);
  KvCacheManager kv(kBlocks, kBs, true);
  // RAM for 16 blocks, disk for 64: both fill up and evict.
  KvOffload off(
      st, 16 * bpb,
      std::make_unique<DiskTier>(dir.path.string(), 64 * (bpb + 96), prefix_root_hash({"fp"}), bpb));
  kv.set_offload(&off);
  const BlockHash root = prefix_root_hash({"model"});
  std::mt19937 rng(99);
  struct Seq {
    std::vector<int32_t> tokens;
    int64_t computed = 0;
    SequenceKv kv;
  };
  std::map<int, Seq> live;
  int next_id = 0;
  int64_t hits = 0, preemptions = 0;
  std::vector<int> refs(kBlocks);
  auto check_refs = [&] {
    std::fill(refs.begin(), refs.end(), 0);
    for (auto& [id, s] : live)
      for (BlockId b : s.kv.blocks) ++refs[static_cast<size_t>(b)];
    int used = 0;
    for (BlockId b = 0; b < kBlocks; ++b) {
      ASSERT_EQ(kv.pool().ref_count(b), refs[static_cast<size_t>(b)]) << b;
      used += refs[static_cast<size_t>(b)] > 0;
    }
    ASSERT_EQ(kv.pool().n_free() + used, kBlocks);
  };
  for (int step = 0; step < 100000; ++step) {
    int op = static_cast<int>(rng() % 10);
    if (live.size() >= 6 && (op < 3 || op == 7)) op = 8;  // few live sequences: most blocks cached
    if (op < 3 || live.empty()) {  // arrival: one of 12 shared 12-token prefixes + a random tail
      Seq s;
      const int family = static_cast<int>(rng() % 12);
      const int len = 1 + static_cast<int>(rng() % 20);
      for (int i = 0; i < len; ++i)
        s.tokens.push_back(i < 12 ? family * 100 + i : static_cast<int32_t>(rng() % 50));
      s.computed = kv.acquire_prefix(s.kv, s.tokens, static_cast<int32_t>(s.tokens.size()) - 1, root);
      hits += s.computed;
      ASSERT_TRUE(blocks_hold_their_bytes(st, s.kv, s.tokens, s.computed, root)) << "step " << step;
      live.emplace(next_id++, std::move(s));
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      Seq& s = it->second;
      if (op < 7) {  // compute a chunk (or one decode token)
        if (s.computed == static_cast<int64_t>(s.tokens.size()))
          s.tokens.push_back(static_cast<int32_t>(rng() % 50));
        const int64_t n =
            std::min<int64_t>(static_cast<int64_t>(s.tokens.size()) - s.computed, 1 + rng() % 6);
        std::vector<BlockCopy> copies;
        if (kv.reserve(s.kv, s.computed + n, s.computed, copies)) {
          for (const BlockCopy& c : copies) {  // copy-on-write, as the executor would
            std::vector<uint8_t> tmp(bpb);
            st.read_block(c.src, tmp.data());
            st.write_block(c.dst, tmp.data());
          }
          compute(kv, st, s.kv, s.tokens, s.computed, s.computed + n, root);
          s.computed += n;
        } else {  // out of blocks: preempt (its published blocks may be swapped out to the tiers)
          kv.free(s.kv);
          s.computed = 0;
          ++preemptions;
        }
      } else if (op < 8 && !s.kv.blocks.empty()) {  // fork (parallel sampling)
        Seq child;
        child.tokens = s.tokens;
        child.computed = s.computed;
        kv.fork(s.kv, child.kv);
        live.emplace(next_id++, std::move(child));
      } else {  // finish or abort
        kv.free(s.kv);
        live.erase(it);
      }
    }
    check_refs();
    if (::testing::Test::HasFatalFailure()) return;
    if (step % 97 == 0) {
      for (auto& [id, s] : live) ASSERT_TRUE(blocks_hold_their_bytes(st, s.kv, s.tokens, s.computed, root));
    }
  }
  for (auto& [id, s] : live) kv.free(s.kv);
  live.clear();
  check_refs();
  EXPECT_EQ(kv.pool().n_free(), kBlocks);
  EXPECT_GT(hits, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(off.host_stats()->hits, 0);
  EXPECT_GT(off.disk_stats()->hits, 0);
}

}  // namespace
}  // namespace strata
