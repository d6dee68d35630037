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

TEST(TimeRunsSideBySide, RacingStopsRunningAClearlySlowerPieceAndThenTheOneLeft) {
  int fast = 0, slow = 0;
  const auto samples = autograph::TimeRunsSideBySide(c10::kCPU, 1, 10, {Sleeping(10, &fast), Sleeping(40, &slow)},
                                                     nullptr, autograph::Racing{3});
  // After three rounds the slow piece's fastest run (40 ms) is far above the other's median (10 ms);
  // the one left decides nothing more.
  EXPECT_EQ(samples[0].size(), 3u);
  EXPECT_EQ(samples[1].size(), 3u);
  EXPECT_EQ(slow, 4);  // with its warm-up run
}

TEST(TimeRunsSideBySide, RacingStopsAtTiesAndRunsOnWhenPiecesDiffer) {
  // 100 ms sleeps: the 1% tie is 1 ms, which a loaded machine's oversleeping stays under (with shorter
  // sleeps a loaded CI machine broke the tie).
  int a = 0, b = 0;
  auto tied = autograph::TimeRunsSideBySide(c10::kCPU, 0, 10, {Sleeping(100, &a), Sleeping(100, &b)}, nullptr,
                                            autograph::Racing{3});
  EXPECT_EQ(tied[0].size(), 3u);  // medians within 1%
  EXPECT_EQ(tied[1].size(), 3u);
  // 3% apart: not a tie, and not slower by the 5% that drops a piece: every round runs.
  auto close = autograph::TimeRunsSideBySide(c10::kCPU, 0, 10, {Sleeping(100, &a), Sleeping(103, &b)}, nullptr,
                                             autograph::Racing{3});
  EXPECT_EQ(close[0].size(), 10u);
  EXPECT_EQ(close[1].size(), 10u);
}

}  // namespace
