// AutoGraph's search against IOS's exhaustive dynamic program under the same cost model: never
// worse, equal within budget, cheaper to run; candidates ranked and valid; bad options rejected.
#include "search/autograph_schedule.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "search/cost/analytical_cost_model.h"
#include "search/ios_schedule.h"
#include "search_test_util.h"

namespace {

using namespace autograph;
using namespace autograph::testing;

AutographOptions SameSpaceAsIos(int r, int s) {
  AutographOptions o;
  o.max_ops_per_group = r;
  o.max_groups_per_stage = s;
  return o;
}

TEST(AutographSchedule, EqualsIosOptimumOnRandomDagsWithinBudget) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 14);
    const double density = (rng() % 6) / 10.0;
    const OpGraph g = RandomDag(rng, n, density);
    const int r = 1 + static_cast<int>(rng() % 3), s = 1 + static_cast<int>(rng() % 4);
    ToyCost cost;
    SearchStats ios;
    IosSchedule(g, AllIds(g), cost, IosOptions{r, s, {}}, &ios);
    AutographStats stats;
    const auto schedules = AutographBlockSchedules(g, AllIds(g), cost, SameSpaceAsIos(r, s), &stats);
    const std::string context = "trial " + std::to_string(trial) + ": " + Dump(schedules.front());
    EXPECT_EQ(stats.blocks_over_budget, 0) << context;
    EXPECT_NEAR(cost.ScheduleMs(g, schedules.front()), ios.predicted_ms, 1e-9) << context;
    EXPECT_NEAR(stats.predicted_ms, ios.predicted_ms, 1e-9) << context;
    EXPECT_EQ(ValidationError(schedules.front(), g), "") << context;
  }
}

TEST(AutographSchedule, NeverWorseThanIosWithMergeStages) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 30; ++trial) {
    const OpGraph g = RandomDag(rng, 4 + static_cast<int>(rng() % 12), 0.25);
    // A merge class of the ops that read exactly op 0 (siblings, as convolutions on one input).
    std::vector<int> siblings;
    for (int v = 1; v < g.size(); ++v)
      if (g.preds(v) == std::vector<int>{0}) siblings.push_back(v);
    ToyMergeCost cost;
    IosOptions ios_options{3, 8, {siblings}};
    SearchStats ios;
    IosSchedule(g, AllIds(g), cost, ios_options, &ios);
    AutographOptions options = SameSpaceAsIos(3, 8);
    options.merge_classes = {siblings};
    AutographStats stats;
    const auto best = AutographBlockSchedules(g, AllIds(g), cost, options, &stats).front();
    EXPECT_LE(cost.ScheduleMs(g, best), ios.predicted_ms + 1e-9) << "trial " << trial << ": " << Dump(best);
  }
}

TEST(AutographSchedule, ExpandsFewerStatesThanIos) {
  std::mt19937 rng(3);
  int64_t ios_states = 0, autograph_states = 0;
  for (int trial = 0; trial < 6; ++trial) {
    const OpGraph g = RandomDag(rng, 20, 0.15);
    ToyCost cost;
    SearchStats ios;
    IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}}, &ios);
    AutographStats stats;
    const auto best = AutographBlockSchedules(g, AllIds(g), cost, SameSpaceAsIos(3, 8), &stats).front();
    EXPECT_NEAR(cost.ScheduleMs(g, best), ios.predicted_ms, 1e-9) << "trial " << trial;
    ios_states += ios.states;
    EXPECT_LE(stats.states, ios.states) << "trial " << trial;
    autograph_states += stats.states;
  }
  EXPECT_LT(autograph_states, ios_states) << "AutoGraph expanded " << autograph_states << " states, IOS "
                                              << ios_states;
}

TEST(AutographSchedule, KeepsDistinctRankedCandidates) {
  std::mt19937 rng(23);
  const OpGraph g = RandomDag(rng, 12, 0.2);
  ToyCost cost;
  AutographOptions options;
  options.candidates = 4;
  std::vector<double> predicted;
  const auto schedules = AutographBlockSchedules(g, AllIds(g), cost, options, nullptr, &predicted);
  ASSERT_EQ(schedules.size(), 4u);
  ASSERT_EQ(predicted.size(), 4u);
  for (size_t i = 0; i < schedules.size(); ++i) {
    EXPECT_EQ(ValidationError(schedules[i], g), "");
    EXPECT_NEAR(cost.ScheduleMs(g, schedules[i]), predicted[i], 1e-9);
    if (i > 0) {
      EXPECT_LE(predicted[i - 1], predicted[i]);
      EXPECT_NE(Dump(schedules[i - 1]), Dump(schedules[i]));
    }
  }
}

TEST(AutographSchedule, ZeroBudgetStillGivesAValidSchedule) {
  std::mt19937 rng(8);
  for (int trial = 0; trial < 10; ++trial) {
    const OpGraph g = RandomDag(rng, 40, 0.1);
    ToyCost cost;
    AutographOptions options;
    options.budget = 0;
    AutographStats stats;
    const auto best = AutographBlockSchedules(g, AllIds(g), cost, options, &stats).front();
    EXPECT_EQ(ValidationError(best, g), "") << Dump(best);
    EXPECT_EQ(best.num_ops(), g.size());
    EXPECT_EQ(stats.blocks_over_budget, 1);
    EXPECT_LE(stats.states, g.size() + 1);  // one descent: each state peels at least one op
  }
}

// A time limit already past when the search starts: every block is searched as past the budget (one
// descent, a few stages costed per state), and the schedules stay valid. The same search without a
// limit costs far more stages.
TEST(AutographSchedule, TimeLimitCutsTheSearchShortAndStaysValid) {
  std::mt19937 rng(8);
  const OpGraph g = RandomDag(rng, 28, 0.1);
  std::vector<std::vector<int>> blocks(2);
  for (int v = 0; v < g.size(); ++v) blocks[v / 14].push_back(v);
  ToyCost unlimited_cost, limited_cost;
  AutographOptions options;
  const AutographResult unlimited = AutographSearch(g, blocks, unlimited_cost, options);
  options.time_limit_seconds = 1e-12;
  const AutographResult limited = AutographSearch(g, blocks, limited_cost, options);
  EXPECT_EQ(unlimited.stats.blocks_over_budget, 0);
  EXPECT_EQ(limited.stats.blocks_over_budget, 2);
  EXPECT_LE(limited.stats.states, g.size() + 2);  // one descent per block
  EXPECT_LT(limited_cost.calls * 10, unlimited_cost.calls) << limited_cost.calls << " vs " << unlimited_cost.calls;
  for (const Schedule& s : limited.candidates) EXPECT_EQ(ValidationError(s, g), "") << Dump(s);
  EXPECT_GE(limited.predicted_ms.front(), unlimited.predicted_ms.front() - 1e-12);
  options.time_limit_seconds = -1;
  EXPECT_THROW(AutographSearch(g, blocks, limited_cost, options), autograph::Error);
}

TEST(AutographSchedule, SearchConcatenatesBlocksOfAPartition) {
  std::mt19937 rng(2);
  const OpGraph g = RandomDag(rng, 30, 0.1);
  // Contiguous id ranges are convex and edges only go forward between them.
  std::vector<std::vector<int>> blocks(3);
  for (int v = 0; v < g.size(); ++v) blocks[v / 10].push_back(v);
  ToyCost cost;
  int progress_calls = 0;
  AutographOptions options;
  options.progress = [&](int done, int total) {
    ++progress_calls;
    EXPECT_EQ(total, 3);
    EXPECT_EQ(done, progress_calls);
  };
  const AutographResult result = AutographSearch(g, blocks, cost, options);
  EXPECT_EQ(progress_calls, 3);
  EXPECT_EQ(result.stats.blocks, 3);
  ASSERT_FALSE(result.candidates.empty());
  double sum = 0;
  for (const auto& block : blocks) {
    AutographStats stats;
    AutographBlockSchedules(g, block, cost, options, &stats);
    sum += stats.predicted_ms;
  }
  EXPECT_NEAR(result.predicted_ms.front(), sum, 1e-9);
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    EXPECT_EQ(ValidationError(result.candidates[i], g), "");
    EXPECT_NEAR(result.predicted_ms[i], cost.ScheduleMs(g, result.candidates[i]), 1e-9);
    EXPECT_LE(result.predicted_ms.front(), result.predicted_ms[i]);
  }
}

TEST(AutographSchedule, AnalyticalModelBoundHoldsOnForkJoin) {
  // The lower bound (longest path of OperatorMs) must never exceed what a stage really costs under
  // the analytical model; if it did, the search would prune the optimum and lose to IOS.
  OpGraph g = ForkJoin(0);
  for (int v = 0; v < g.size(); ++v) {
    g.node(v).flops = 2e9;
    g.node(v).bytes_read = g.node(v).bytes_written = 1 << 20;
  }
  AnalyticalCostModel cost(DeviceModel::ByName("h100"));
  SearchStats ios;
  IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}}, &ios);
  const auto best = AutographBlockSchedules(g, AllIds(g), cost, SameSpaceAsIos(3, 8)).front();
  EXPECT_NEAR(cost.ScheduleMs(g, best), ios.predicted_ms, 1e-9);
}

TEST(AutographSchedule, RejectsBadOptions) {
  OpGraph g = ForkJoin(1);
  ToyCost cost;
  const std::vector<std::pair<AutographOptions, std::string>> cases = [] {
    std::vector<std::pair<AutographOptions, std::string>> c;
    AutographOptions o;
    o.max_ops_per_group = 0;
    c.emplace_back(o, "max_ops_per_group (r) is 0");
    o = {};
    o.alpha = -1;
    c.emplace_back(o, "alpha must be >= 0");
    o = {};
    o.candidates = 0;
    c.emplace_back(o, "candidates must be at least 1");
    return c;
  }();
  for (const auto& [options, message] : cases) {
    try {
      AutographBlockSchedules(g, AllIds(g), cost, options);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
  try {
    AutographBlockSchedules(g, {0, 4}, cost, AutographOptions{});
    ADD_FAILURE() << "a non-convex block was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("AutographSchedule: the block is not convex"), std::string::npos) << e.what();
  }
}

}  // namespace
