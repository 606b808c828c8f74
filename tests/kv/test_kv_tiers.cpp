// The host-RAM and disk tiers: LRU bounds, spill from RAM to disk, reuse of a directory by a
// new instance (a restart), and rejection (with deletion) of every file that does not verify.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kv/disk_tier.h"
#include "kv/host_tier.h"
#include "kv/prefix_hash.h"
#include "kv/tier_file.h"

namespace fs = std::filesystem;

namespace strata {
namespace {

BlockHash h(int v) {
  const int32_t t[1] = {v};
  return chain_block_hash(prefix_root_hash({"tiers"}), t, 1);
}

constexpr size_t kBytes = 96;

std::vector<uint8_t> block(int v) {
  std::vector<uint8_t> b(kBytes);
  for (size_t i = 0; i < kBytes; ++i) b[i] = static_cast<uint8_t>(v * 31 + static_cast<int>(i));
  return b;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("strata-tiers-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

bool fetch_equals(KvTier& t, int v) {
  std::vector<uint8_t> out(kBytes);
  return t.fetch(h(v), out.data(), out.size()) && out == block(v);
}

TEST(HostTier, KeepsTheMostRecentlyUsedBlocksAndSpillsTheRestToTheNextTier) {
  HostTier next(100 * kBytes, nullptr);
  HostTier host(3 * kBytes, &next);
  for (int v = 0; v < 3; ++v) host.insert(h(v), block(v).data(), kBytes);
  EXPECT_TRUE(fetch_equals(host, 0));  // 0 is now the most recently used: LRU order 1 2 0
  host.insert(h(3), block(3).data(), kBytes);
  EXPECT_FALSE(host.lookup(h(1)));
  EXPECT_TRUE(next.lookup(h(1)));
  EXPECT_TRUE(fetch_equals(next, 1));
  for (int v : {0, 2, 3}) EXPECT_TRUE(fetch_equals(host, v)) << v;
  EXPECT_EQ(host.bytes(), 3 * kBytes);
  EXPECT_EQ(host.stats().hits, 4);
  EXPECT_EQ(host.stats().blocks_stored, 3);
  // Inserting a held block only touches it.
  host.insert(h(0), nullptr, 0);
  EXPECT_TRUE(fetch_equals(host, 0));
  std::vector<uint8_t> wrong(kBytes + 1);
  EXPECT_FALSE(host.fetch(h(0), wrong.data(), wrong.size()));
}

TEST(DiskTier, ANewInstanceOnTheSameDirectoryFindsTheBlocks) {
  TempDir d;
  {
    DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
    for (int v = 0; v < 5; ++v) disk.insert(h(v), block(v).data(), kBytes);
    EXPECT_TRUE(disk.lookup(h(4)));  // queued or written: found either way
    EXPECT_TRUE(fetch_equals(disk, 4));
    disk.flush();
    EXPECT_EQ(disk.n_files(), 5u);
    EXPECT_EQ(disk.stats().bytes_written, static_cast<int64_t>(5 * kBytes));
  }
  DiskTier again(d.path.string(), 1 << 20, h(100), kBytes);
  EXPECT_EQ(again.n_files(), 5u);
  for (int v = 0; v < 5; ++v) EXPECT_TRUE(fetch_equals(again, v)) << v;
  EXPECT_FALSE(again.lookup(h(5)));
  std::vector<uint8_t> out(kBytes);
  EXPECT_FALSE(again.fetch(h(5), out.data(), out.size()));
  EXPECT_EQ(again.stats().rejected, 0);
}

TEST(DiskTier, FilesOfAnotherModelOrLayoutAreDeletedAtStart) {
  TempDir d;
  {
    DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
    for (int v = 0; v < 3; ++v) disk.insert(h(v), block(v).data(), kBytes);
  }
  {
    DiskTier other_size(d.path.string(), 1 << 20, h(100), kBytes * 2);  // another KV layout
    EXPECT_EQ(other_size.n_files(), 0u);
    EXPECT_EQ(other_size.stats().rejected, 3);
  }
  EXPECT_TRUE(fs::is_empty(d.path));
  {
    DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
    disk.insert(h(0), block(0).data(), kBytes);
  }
  DiskTier other_model(d.path.string(), 1 << 20, h(101), kBytes);
  EXPECT_EQ(other_model.n_files(), 0u);
  EXPECT_EQ(other_model.stats().rejected, 1);
  EXPECT_TRUE(fs::is_empty(d.path));
}

TEST(DiskTier, TruncatedCorruptedRenamedAndUnfinishedFilesAreRejectedAndDeleted) {
  TempDir d;
  fs::path corrupt;
  {
    DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
    for (int v = 0; v < 4; ++v) disk.insert(h(v), block(v).data(), kBytes);
    disk.flush();
    corrupt = disk.file_of(h(3));
    fs::resize_file(disk.file_of(h(0)), kTierHeaderBytes + kBytes - 1);  // truncated
    fs::rename(disk.file_of(h(1)), disk.file_of(h(7)));                  // name != its hash
  }
  std::ofstream(d.path / "abc.kv.tmp.1.0") << "half";  // a write that never finished
  std::ofstream(d.path / "notes.txt") << "not ours";   // left alone
  DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
  EXPECT_EQ(disk.stats().rejected, 3);
  EXPECT_EQ(disk.n_files(), 2u);
  EXPECT_FALSE(fs::exists(d.path / "abc.kv.tmp.1.0"));
  EXPECT_TRUE(fs::exists(d.path / "notes.txt"));
  EXPECT_FALSE(disk.lookup(h(0)));
  EXPECT_FALSE(disk.lookup(h(7)));
  EXPECT_TRUE(fetch_equals(disk, 2));
  // A payload byte flipped after the start: found by the index, rejected on read, deleted.
  {
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kTierHeaderBytes + 5));
    f.put('\x5a');
  }
  EXPECT_TRUE(disk.lookup(h(3)));
  std::vector<uint8_t> out(kBytes);
  EXPECT_FALSE(disk.fetch(h(3), out.data(), out.size()));
  EXPECT_FALSE(disk.lookup(h(3)));
  EXPECT_FALSE(fs::exists(corrupt));
  EXPECT_EQ(disk.stats().rejected, 4);
}

TEST(DiskTier, SizeBoundEvictsTheLeastRecentlyUsedFiles) {
  TempDir d;
  const size_t file = kTierHeaderBytes + kBytes;
  DiskTier disk(d.path.string(), 3 * file, h(100), kBytes);
  for (int v = 0; v < 3; ++v) disk.insert(h(v), block(v).data(), kBytes);
  disk.flush();
  EXPECT_TRUE(fetch_equals(disk, 0));  // LRU order 1 2 0
  disk.insert(h(3), block(3).data(), kBytes);
  disk.flush();
  EXPECT_EQ(disk.n_files(), 3u);
  EXPECT_FALSE(disk.lookup(h(1)));
  EXPECT_FALSE(fs::exists(disk.file_of(h(1))));
  for (int v : {0, 2, 3}) EXPECT_TRUE(fetch_equals(disk, v)) << v;
  EXPECT_EQ(disk.stats().bytes_stored, static_cast<int64_t>(3 * file));
}

TEST(DiskTier, AWriteThatFailsIsDroppedNotFatal) {
  TempDir d;
  DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes);
  fs::remove_all(d.path);
  std::ofstream(d.path) << "a file where the directory was";  // every write now fails
  disk.insert(h(0), block(0).data(), kBytes);
  disk.insert(h(1), block(1).data(), kBytes);
  disk.flush();
  EXPECT_EQ(disk.stats().dropped, 2);
  EXPECT_EQ(disk.n_files(), 0u);
  EXPECT_FALSE(disk.lookup(h(0)));
  fs::remove(d.path);
}

TEST(DiskTier, AFullQueueDropsInsteadOfBlocking) {
  TempDir d;
  // The queue holds at least 4 blocks; many more inserts than that at once must not wait.
  DiskTier disk(d.path.string(), 1 << 20, h(100), kBytes, /*queue_bytes=*/0);
  for (int v = 0; v < 2000; ++v) disk.insert(h(v), block(v).data(), kBytes);
  disk.flush();
  EXPECT_EQ(static_cast<int64_t>(disk.n_files()) + disk.stats().dropped, 2000);
  for (int v = 0; v < 2000; ++v)
    if (disk.lookup(h(v))) {
      EXPECT_TRUE(fetch_equals(disk, v)) << v;
    }
}

}  // namespace
}  // namespace strata
