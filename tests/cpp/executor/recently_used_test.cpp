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

// A key that counts its copies.
struct CountedKey {
  std::string name;
  static int copies;
  explicit CountedKey(std::string n) : name(std::move(n)) {}
  CountedKey(const CountedKey& other) : name(other.name) { ++copies; }
  CountedKey& operator=(const CountedKey& other) {
    name = other.name;
    ++copies;
    return *this;
  }
  bool operator==(const CountedKey& other) const { return name == other.name; }
  bool operator<(const CountedKey& other) const { return name < other.name; }
};
int CountedKey::copies = 0;

TEST(RecentlyUsed, TheLatestKeyUsedAgainIsNeitherCopiedNorReordered) {
  autograph::RecentlyUsed<CountedKey> recent(2);
  const CountedKey a("a"), b("b"), c("c");
  recent.Use(a);
  recent.Use(b);
  CountedKey::copies = 0;
  EXPECT_TRUE(recent.Use(b).empty());
  EXPECT_TRUE(recent.Use(b).empty());
  EXPECT_EQ(CountedKey::copies, 0);
  // Still b the most recent and a the least: c evicts a.
  std::vector<CountedKey> evicted = recent.Use(c);
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].name, "a");
}

}  // namespace
