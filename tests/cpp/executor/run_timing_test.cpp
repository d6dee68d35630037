// Timing pieces of work side by side: every piece runs every round, unless racing drops one that is
// clearly slower (its fastest run slower than the leader's median), which then stops being run. The
// pieces sleep for known times, far enough apart that the outcome does not depend on the machine's
// load; the racing decision's finer margins are tested on given samples.
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

TEST(RacingStopsAfterRound, TiesStopAndPiecesThatDifferRunOn) {
  // Given samples, not sleeps: a tie is 1% of the median, which a loaded machine's oversleeping breaks.
  const autograph::Racing racing{3};
  std::vector<bool> on(2, true);
  EXPECT_TRUE(autograph::RacingStopsAfterRound({{100, 100.5, 101}, {100.2, 100.8, 100.4}}, on, racing));
  EXPECT_TRUE(on[0] && on[1]);  // tied, neither dropped
  // 3% apart: not a tie, and not slower by the 5% that drops a piece: the rounds go on.
  EXPECT_FALSE(autograph::RacingStopsAfterRound({{100, 100, 100}, {103, 103, 103}}, on, racing));
  EXPECT_TRUE(on[0] && on[1]);
}

TEST(RacingStopsAfterRound, APieceWhoseFastestRunIsSlowerThanTheLeadersMedianByTheMarginIsDropped) {
  const autograph::Racing racing{3};
  std::vector<bool> on(3, true);
  // The third's fastest (106) is over 5% above the lowest median (100); the second's fastest (104) is not.
  EXPECT_FALSE(autograph::RacingStopsAfterRound({{100, 99, 101}, {104, 110, 112}, {106, 107, 108}}, on, racing));
  EXPECT_EQ(on, (std::vector<bool>{true, true, false}));
  // A dropped piece's samples no longer count; the one left alone ends the timing.
  on = {true, false, true};
  EXPECT_TRUE(autograph::RacingStopsAfterRound({{100, 99, 101}, {1, 1, 1}, {120, 121, 122}}, on, racing));
  EXPECT_EQ(on, (std::vector<bool>{true, false, false}));
}

TEST(TimeRunsSideBySide, RacingStopsWhenThePiecesTie) {
  // Equal sleeps of 100 ms under a tie of 50%: the decision on real timings, robust to oversleeping.
  int a = 0, b = 0;
  auto tied = autograph::TimeRunsSideBySide(c10::kCPU, 0, 10, {Sleeping(100, &a), Sleeping(100, &b)}, nullptr,
                                            autograph::Racing{3, 0.6, 0.5});
  EXPECT_EQ(tied[0].size(), 3u);
  EXPECT_EQ(tied[1].size(), 3u);
}

}  // namespace
