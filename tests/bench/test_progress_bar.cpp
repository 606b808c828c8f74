#include <gtest/gtest.h>

#include "bench/progress_bar.h"

namespace strata::bench {
namespace {

TEST(ProgressBar, RendersCountsAndFill) {
  LoadProgress p;
  p.total = 10;
  p.finished = 3;
  p.failed = 1;
  p.in_flight = 2;
  p.elapsed_s = 1.5;
  EXPECT_EQ(ProgressBar::render("c4", p, 10), "c4 [###.......] 3/10  failed 1  in flight 2  1.5s");
  p.finished = 10;
  EXPECT_EQ(ProgressBar::render("", p, 4), "[####] 10/10  failed 1  in flight 2  1.5s");
}

TEST(ProgressBar, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  {
    ProgressBar bar(false, "x", f);
    bar.update({5, 1, 0, 1, 0.1});
  }
  EXPECT_EQ(std::ftell(f), 0);
  {
    ProgressBar bar(true, "x", f);
    bar.update({5, 1, 0, 1, 0.1});
  }  // the destructor ends the line
  EXPECT_GT(std::ftell(f), 0);
  std::rewind(f);
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  EXPECT_EQ(buf[0], '\r');
  EXPECT_EQ(buf[n - 1], '\n');
  std::fclose(f);
}

}  // namespace
}  // namespace strata::bench
