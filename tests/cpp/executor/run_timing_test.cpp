// Timing pieces of work side by side: every piece runs every round, unless racing drops one that is
// clearly slower (its fastest run slower than the leader's median), which then stops being run. The
// pieces sleep for known times, so the outcome does not depend on the machine's load.
#include "executor/run_timing.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace {

std::function<void()> Sleeping(int ms, int* calls) {
  return [ms, calls] {
    ++*calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  };
}

TEST(TimeRunsSideBySide, EveryPieceRunsEveryRoundWithoutRacing) {
  int fast = 0, slow = 0;
  const auto samples = autograph::TimeRunsSideBySide(c10::kCPU, 1, 6, {Sleeping(2, &fast), Sleeping(8, &slow)});
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].size(), 6u);
  EXPECT_EQ(samples[1].size(), 6u);
  EXPECT_EQ(fast, 7);  // one warm-up run each
  EXPECT_EQ(slow, 7);
}

TEST(TimeRunsSideBySide, RacingStopsRunningAClearlySlowerPiece) {
  int fast = 0, same = 0, slow = 0;
  const auto samples = autograph::TimeRunsSideBySide(c10::kCPU, 1, 10, {Sleeping(10, &fast), Sleeping(10, &same), Sleeping(40, &slow)},
                                                     nullptr, autograph::Racing{3, 0.05});
  EXPECT_EQ(samples[2].size(), 3u);  // its fastest run (40 ms) is far above the others' median (10 ms)
  EXPECT_EQ(slow, 4);
  // Two pieces of one speed both run to the end: neither's fastest run is 5% above the lowest median
  // (a sleep overshoots by well under 0.5 ms).
  EXPECT_EQ(samples[0].size(), 10u);
  EXPECT_EQ(samples[1].size(), 10u);
  EXPECT_EQ(fast + same, 22);
}

}  // namespace
