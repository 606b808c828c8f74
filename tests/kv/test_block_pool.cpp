#include <gtest/gtest.h>

#include "kv/block_pool.h"

namespace strata {
namespace {

TEST(BlockPool, AllocatesLowestIdsFirstAndAllOrNothing) {
  BlockPool pool(4);
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.allocate(3, got));
  EXPECT_EQ(got, (std::vector<BlockId>{0, 1, 2}));
  EXPECT_EQ(pool.n_free(), 1);
  std::vector<BlockId> more;
  EXPECT_FALSE(pool.allocate(2, more));  // only one left: nothing taken
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(pool.n_free(), 1);
}

TEST(BlockPool, SharedBlockFreedAfterLastRelease) {
  BlockPool pool(2);
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.allocate(1, got));
  pool.retain(got[0]);
  EXPECT_EQ(pool.ref_count(got[0]), 2);
  pool.release(got[0]);
  EXPECT_EQ(pool.n_free(), 1);
  pool.release(got[0]);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.ref_count(got[0]), 0);
}

TEST(BlockPool, RecentlyFreedBlockIsReusedFirst) {
  BlockPool pool(3);
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.allocate(3, got));
  pool.release(1);
  std::vector<BlockId> again;
  ASSERT_TRUE(pool.allocate(1, again));
  EXPECT_EQ(again[0], 1);
}

TEST(BlockPoolDeathTest, DoubleFreeAborts) {
  BlockPool pool(1);
  std::vector<BlockId> got;
  ASSERT_TRUE(pool.allocate(1, got));
  pool.release(0);
  EXPECT_DEATH(pool.release(0), "double free");
}

}  // namespace
}  // namespace strata
