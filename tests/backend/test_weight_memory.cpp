// WeightMemory: the owned memory of repacked weights (weight_memory.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "backend/cpu/weight_memory.h"

namespace strata::cpu {
namespace {

TEST(WeightMemory, StartsOnAHugePageAndHoldsEveryByte) {
  for (size_t bytes : {size_t{1}, size_t{4095}, size_t{4097}, (size_t{2} << 20) + 1, size_t{5} << 20}) {
    WeightMemory m(bytes);
    ASSERT_NE(m.data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data()) % (size_t{2} << 20), 0u) << bytes;
    EXPECT_EQ(m.bytes(), bytes);
    std::memset(m.data(), 0x5a, bytes);  // every byte writable (ASan/segfault otherwise)
    EXPECT_EQ(m.data()[0], 0x5a);
    EXPECT_EQ(m.data()[bytes - 1], 0x5a);
  }
}

TEST(WeightMemory, MovesLeaveTheSourceEmpty) {
  WeightMemory a(100);
  a.data()[99] = 7;
  uint8_t* p = a.data();
  WeightMemory b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.bytes(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[99], 7);
  WeightMemory c(200);
  c = std::move(b);  // releases c's own mapping
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.bytes(), 100u);
  WeightMemory empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.bytes(), 0u);
}

}  // namespace
}  // namespace strata::cpu
