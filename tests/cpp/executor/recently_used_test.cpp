// RecentlyUsed: the bounded use order behind the CUDA backend's max_cuda_graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "executor/recently_used.h"

namespace {

using Keys = std::vector<std::string>;

TEST(RecentlyUsed, EvictsTheLeastRecentlyUsedBeyondTheLimit) {
  autograph::RecentlyUsed<std::string> recent(2);
  EXPECT_EQ(recent.Use("a"), Keys{});
  EXPECT_EQ(recent.Use("b"), Keys{});
  EXPECT_EQ(recent.Use("a"), Keys{});   // a is now the most recent
  EXPECT_EQ(recent.Use("c"), Keys{"b"});  // so b goes, not a
  EXPECT_EQ(recent.Use("a"), Keys{});
  EXPECT_EQ(recent.Use("d"), Keys{"c"});
  EXPECT_EQ(recent.size(), 2u);
}

TEST(RecentlyUsed, ALimitOfOneKeepsTheLatestAndZeroMeansOne) {
  autograph::RecentlyUsed<std::string> one(1);
  EXPECT_EQ(one.Use("a"), Keys{});
  EXPECT_EQ(one.Use("a"), Keys{});  // a repeated use evicts nothing
  EXPECT_EQ(one.Use("b"), Keys{"a"});
  autograph::RecentlyUsed<std::string> zero(0);
  EXPECT_EQ(zero.limit(), 1u);
  EXPECT_EQ(zero.Use("a"), Keys{});
  EXPECT_EQ(zero.Use("b"), Keys{"a"});
}

}  // namespace
