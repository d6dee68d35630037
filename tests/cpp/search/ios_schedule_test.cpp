#include "search/ios_schedule.h"

#include "search_test_util.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

namespace {

using namespace autograph::testing;

using autograph::CostModel;
using autograph::IosOptions;
using autograph::IosSchedule;
using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::Schedule;
using autograph::SearchStats;
using autograph::Stage;
using autograph::StageStrategy;
using Groups = std::vector<std::vector<int>>;
using Mask = uint64_t;

std::vector<Groups> StagesOf(const Schedule& s) {
  std::vector<Groups> out;
  for (const Stage& stage : s.stages) out.push_back(stage.groups);
  return out;
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The ops of `group` are weakly connected through edges among themselves.
bool GroupConnected(const OpGraph& g, const std::vector<int>& group) {
  std::set<int> members(group.begin(), group.end()), seen{group.front()};
  std::vector<int> todo{group.front()};
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    std::vector<int> adjacent = g.preds(v);
    adjacent.insert(adjacent.end(), g.succs(v).begin(), g.succs(v).end());
    for (int w : adjacent)
      if (members.count(w) && seen.insert(w).second) todo.push_back(w);
  }
  return seen.size() == members.size();
}

// The schedule obeys IOS's stage shape: every stage concurrent, at most s groups of at most r
// connected ops.
void ExpectIosShape(const Schedule& s, const OpGraph& g, const IosOptions& o, const std::string& context) {
  for (size_t st = 0; st < s.stages.size(); ++st) {
    EXPECT_EQ(s.stages[st].strategy, StageStrategy::Concurrent) << context;
    EXPECT_LE(static_cast<int>(s.stages[st].groups.size()), o.max_groups_per_stage) << context << " stage " << st;
    for (const auto& group : s.stages[st].groups) {
      EXPECT_LE(static_cast<int>(group.size()), o.max_ops_per_group) << context << " stage " << st;
      if (!group.empty()) {
        EXPECT_TRUE(GroupConnected(g, group)) << context << " stage " << st << ": " << Dump(s);
      }
    }
  }
}

// --- Brute force: every valid schedule of a small graph ---------------------------------------------

// A schedule is valid here when ValidateSchedule accepts it and each stage has at most s groups, each
// group at most r ops that are weakly connected among themselves (ops of one group run in id order).
// Stages are drawn as any subset of the ops left, split into groups by any set partition; those that
// break a rule are dropped. The candidates for a set of ops left are cached, the schedules are not.
class BruteForce {
 public:
  BruteForce(const OpGraph& g, CostModel& cost, const IosOptions& o) : g_(g), cost_(cost), o_(o) {
    Schedule current;
    Extend(g.size() == 64 ? ~Mask{0} : (Mask{1} << g.size()) - 1, current);
  }
  double best_ms = std::numeric_limits<double>::infinity();
  Schedule best;
  int64_t schedules = 0;

 private:
  void Extend(Mask left, Schedule& current) {
    if (left == 0) {
      ++schedules;
      const double ms = cost_.ScheduleMs(g_, current);
      if (ms < best_ms) {
        best_ms = ms;
        best = current;
      }
      return;
    }
    for (const auto& [ops, stage] : StagesFor(left)) {
      current.stages.push_back(stage);
      Extend(left & ~ops, current);
      current.stages.pop_back();
    }
  }

  const std::vector<std::pair<Mask, Stage>>& StagesFor(Mask left) {
    auto it = cache_.find(left);
    if (it != cache_.end()) return it->second;
    std::vector<std::pair<Mask, Stage>> stages;
    for (Mask sub = left; sub; sub = (sub - 1) & left) {
      std::vector<int> ops;
      for (int v = 0; v < g_.size(); ++v)
        if (sub >> v & 1) ops.push_back(v);
      Groups groups;
      Partitions(ops, 0, groups, left, sub, stages);
    }
    return cache_.emplace(left, std::move(stages)).first->second;
  }

  // Every set partition of `ops` (ascending), each group keeping ascending order.
  void Partitions(const std::vector<int>& ops, size_t i, Groups& groups, Mask left, Mask sub,
                  std::vector<std::pair<Mask, Stage>>& out) {
    if (i == ops.size()) {
      if (Allowed(groups, left)) out.emplace_back(sub, Stage{StageStrategy::Concurrent, groups});
      return;
    }
    for (size_t k = 0; k <= groups.size(); ++k) {
      if (k == groups.size()) {
        if (static_cast<int>(groups.size()) == o_.max_groups_per_stage) break;
        groups.emplace_back();
      }
      if (static_cast<int>(groups[k].size()) < o_.max_ops_per_group) {
        groups[k].push_back(ops[i]);
        Partitions(ops, i + 1, groups, left, sub, out);
        groups[k].pop_back();
      }
      if (groups[k].empty()) groups.pop_back();
    }
  }

  bool Allowed(const Groups& groups, Mask left) const {
    std::map<int, int> group_of;
    for (size_t k = 0; k < groups.size(); ++k)
      for (int v : groups[k]) group_of[v] = static_cast<int>(k);
    for (const auto& group : groups) {
      if (!GroupConnected(g_, group)) return false;
      for (int v : group)
        for (int p : g_.preds(v)) {
          if (!(left >> p & 1)) continue;  // ran in an earlier stage
          auto it = group_of.find(p);
          if (it == group_of.end() || it->second != group_of.at(v)) return false;
        }
    }
    return true;
  }

  const OpGraph& g_;
  CostModel& cost_;
  const IosOptions o_;
  std::map<Mask, std::vector<std::pair<Mask, Stage>>> cache_;
};

// --- Optimality against brute force -------------------------------------------------------------------

TEST(IosSchedule, MatchesBruteForceOnRandomSmallDags) {
  std::mt19937 rng(11);
  const int rs[] = {1, 2, 3};
  const int ss[] = {1, 2, 3, 8};
  const double densities[] = {0.0, 0.15, 0.3, 0.5, 0.8};
  int concurrent_optima = 0, sequential_optima = 0;
  for (int trial = 0; trial < 144; ++trial) {
    const int n = 1 + trial % 7;
    const double density = densities[rng() % 5];
    OpGraph g = RandomDag(rng, n, density);
    const IosOptions o{rs[trial % 3], ss[(trial / 3) % 4], {}};
    const std::string context = "trial " + std::to_string(trial) + " n=" + std::to_string(n) + " density=" +
                                std::to_string(density) + " r=" + std::to_string(o.max_ops_per_group) +
                                " s=" + std::to_string(o.max_groups_per_stage);
    ToyCost cost;
    SearchStats stats;
    const Schedule ios = IosSchedule(g, AllIds(g), cost, o, &stats);
    EXPECT_EQ(ValidationError(ios, g), "") << context << ": " << Dump(ios);
    ExpectIosShape(ios, g, o, context);
    EXPECT_DOUBLE_EQ(stats.predicted_ms, cost.ScheduleMs(g, ios)) << context;
    BruteForce brute(g, cost, o);
    ASSERT_GT(brute.schedules, 0) << context;
    EXPECT_EQ(ValidationError(brute.best, g), "") << context;
    EXPECT_NEAR(stats.predicted_ms, brute.best_ms, 1e-9)
        << context << "\n ios:   " << Dump(ios) << "\n brute: " << Dump(brute.best) << " (of " << brute.schedules
        << " schedules)";
    (ios.max_groups() > 1 ? concurrent_optima : sequential_optima)++;
  }
  // The toy model makes concurrency pay on some graphs and not on others.
  EXPECT_GE(concurrent_optima, 10);
  EXPECT_GE(sequential_optima, 10);
}

// A block inside a larger graph: the DP schedules exactly the block's ops, as well as the brute force
// on the block alone (a copy of the block's subgraph, same FLOPs).
TEST(IosSchedule, MatchesBruteForceOnBlocksOfLargerGraphs) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 60; ++trial) {
    OpGraph g = RandomDag(rng, 12, 0.1 + (rng() % 40) / 100.0);
    const int first = rng() % 8, size = 1 + rng() % std::min(7, 12 - first);
    std::vector<int> block;  // a range of ids is convex; listed backwards to check that order does not matter
    for (int v = first + size - 1; v >= first; --v) block.push_back(v);
    OpGraph sub;
    for (int v = first; v < first + size; ++v) AddOp(sub, g.node(v).flops, 0);
    for (int v = first; v < first + size; ++v)
      for (int w : g.succs(v))
        if (w < first + size) sub.AddEdge(v - first, w - first);
    const IosOptions o{1 + trial % 3, 1 + trial % 4, {}};
    const std::string context = "trial " + std::to_string(trial) + " block " + std::to_string(first) + ".." +
                                std::to_string(first + size - 1);
    ToyCost cost;
    SearchStats stats;
    const Schedule ios = IosSchedule(g, block, cost, o, &stats);
    Schedule renumbered = ios;  // the same schedule in the subgraph's ids
    for (Stage& stage : renumbered.stages)
      for (auto& group : stage.groups)
        for (int& v : group) {
          EXPECT_TRUE(v >= first && v < first + size) << context << ": op " << v << " is outside the block";
          v -= first;
        }
    EXPECT_EQ(ValidationError(renumbered, sub), "") << context << ": " << Dump(ios);
    ExpectIosShape(ios, g, o, context);
    EXPECT_DOUBLE_EQ(stats.predicted_ms, cost.ScheduleMs(g, ios)) << context;
    BruteForce brute(sub, cost, o);
    EXPECT_NEAR(stats.predicted_ms, brute.best_ms, 1e-9) << context << ": " << Dump(ios);
  }
}

// --- Enumeration of endings -------------------------------------------------------------------------

// Expected counts from the definitions, over all masks: the states are the non-empty
// predecessor-closed sets; the endings of a state are its non-empty successor-closed subsets whose
// weakly connected components number at most s and have at most r ops each.
struct ExpectedCounts {
  int64_t states = 0, endings = 0, stages = 0;
};

ExpectedCounts CountByDefinition(const OpGraph& g, const IosOptions& o) {
  const int n = g.size();
  auto closed = [&](Mask set, Mask within, bool preds) {
    for (int v = 0; v < n; ++v)
      if (set >> v & 1)
        for (int w : preds ? g.preds(v) : g.succs(v))
          if ((within >> w & 1) && !(set >> w & 1)) return false;
    return true;
  };
  auto allowed = [&](Mask set) {
    int components = 0;
    for (Mask rest = set; rest;) {
      Mask component = rest & (~rest + 1), frontier = component;
      while (frontier) {
        Mask next = 0;
        for (int v = 0; v < n; ++v)
          if (frontier >> v & 1) {
            for (int w : g.preds(v)) next |= Mask{1} << w;
            for (int w : g.succs(v)) next |= Mask{1} << w;
          }
        next &= rest & ~component;
        component |= next;
        frontier = next;
      }
      if (__builtin_popcountll(component) > o.max_ops_per_group) return false;
      ++components;
      rest &= ~component;
    }
    return components <= o.max_groups_per_stage;
  };
  ExpectedCounts counts;
  std::set<Mask> stages;
  const Mask all = (Mask{1} << n) - 1;
  for (Mask state = 1; state <= all; ++state) {
    if (!closed(state, all, true)) continue;
    ++counts.states;
    for (Mask e = state; e; e = (e - 1) & state)
      if (closed(e, state, false) && allowed(e)) {
        ++counts.endings;
        stages.insert(e);
      }
  }
  counts.stages = static_cast<int64_t>(stages.size());
  return counts;
}

// Every (state, ending) pair is tried exactly once: a missed ending or a duplicate changes the count.
TEST(IosSchedule, TriesEveryEndingOnce) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 80; ++trial) {
    OpGraph g = RandomDag(rng, 1 + rng() % 10, (rng() % 70) / 100.0);
    const IosOptions o{1 + static_cast<int>(rng() % 4), 1 + static_cast<int>(rng() % 4), {}};
    const std::string context = "trial " + std::to_string(trial) + " r=" + std::to_string(o.max_ops_per_group) +
                                " s=" + std::to_string(o.max_groups_per_stage);
    ToyCost cost;
    SearchStats stats;
    IosSchedule(g, AllIds(g), cost, o, &stats);
    const ExpectedCounts expected = CountByDefinition(g, o);
    EXPECT_EQ(stats.states, expected.states) << context;
    EXPECT_EQ(stats.endings, expected.endings) << context;
    EXPECT_EQ(stats.stages_evaluated, expected.stages) << context;
    EXPECT_EQ(cost.calls, stats.stages_evaluated) << context << ": stage latencies are memoized";
    EXPECT_GE(stats.seconds, 0) << context;
  }
}

// Two sinks with a common predecessor form one group although the sinks alone would be two: with
// s = 1 the whole fork must still be one stage. Growing endings sink by sink and pruning at more
// than s groups would never reach it.
TEST(IosSchedule, FindsEndingsJoinedOnlyByACommonPredecessor) {
  OpGraph g = MakeGraph({0, 0, 0}, {{0, 1}, {0, 2}});
  ToyCost cost;
  SearchStats stats;
  const Schedule s = IosSchedule(g, AllIds(g), cost, IosOptions{3, 1, {}}, &stats);
  EXPECT_EQ(StagesOf(s), (std::vector<Groups>{{{0, 1, 2}}}));
  EXPECT_DOUBLE_EQ(stats.predicted_ms, 0.07);
  // The same shape as a state inside a larger graph: 3 -> 4 and 3 -> 5 hang below the fork.
  OpGraph h = MakeGraph({50, 50, 50, 0, 0, 0}, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}, {3, 5}});
  const Schedule t = IosSchedule(h, AllIds(h), cost, IosOptions{3, 1, {}});
  ASSERT_FALSE(t.stages.empty());
  EXPECT_EQ(t.stages.back().groups, (Groups{{3, 4, 5}})) << Dump(t);
}

TEST(IosSchedule, CountsOnAChain) {
  // States: the 4 prefixes. Endings of the prefix of length k: its last 1..min(k, 3) ops.
  OpGraph g = MakeGraph({1, 2, 3, 4}, {{0, 1}, {1, 2}, {2, 3}});
  ToyCost cost;
  SearchStats stats;
  IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}}, &stats);
  EXPECT_EQ(stats.states, 4);
  EXPECT_EQ(stats.endings, 1 + 2 + 3 + 3);
  EXPECT_EQ(stats.stages_evaluated, 9);  // every (prefix, suffix) gives a different interval
}

// 3x3 grid: op 3i+j feeds 3(i+1)+j and 3i+j+1.
OpGraph Grid3x3() {
  std::vector<std::pair<int, int>> edges;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      if (i + 1 < 3) edges.push_back({3 * i + j, 3 * (i + 1) + j});
      if (j + 1 < 3) edges.push_back({3 * i + j, 3 * i + j + 1});
    }
  return MakeGraph({10, 20, 30, 40, 50, 60, 70, 80, 90}, edges);
}

TEST(IosSchedule, CountsOnAGrid) {
  OpGraph g = Grid3x3();
  for (const IosOptions& o : {IosOptions{3, 8, {}}, IosOptions{1, 3, {}}, IosOptions{9, 9, {}}}) {
    ToyCost cost;
    SearchStats stats;
    const Schedule s = IosSchedule(g, AllIds(g), cost, o, &stats);
    const ExpectedCounts expected = CountByDefinition(g, o);
    EXPECT_EQ(stats.states, expected.states);
    EXPECT_EQ(stats.endings, expected.endings);
    EXPECT_EQ(stats.stages_evaluated, expected.stages);
    EXPECT_EQ(ValidationError(s, g), "");
    EXPECT_NEAR(stats.predicted_ms, BruteForce(g, cost, o).best_ms, 1e-9) << Dump(s);
    std::cout << "3x3 grid r=" << o.max_ops_per_group << " s=" << o.max_groups_per_stage << ": " << stats.states
              << " states, " << stats.endings << " (state, ending) pairs, " << stats.stages_evaluated
              << " stages, " << stats.predicted_ms << " ms: " << Dump(s) << "\n";
  }
}

// --- Shapes of optimal schedules ------------------------------------------------------------------

TEST(IosSchedule, ChainIsOneGroupWhenItFits) {
  OpGraph g = MakeGraph({10, 20, 30, 40, 50}, {{0, 1}, {1, 2}, {2, 3}, {3, 4}});
  ToyCost cost;
  EXPECT_EQ(StagesOf(IosSchedule(g, AllIds(g), cost, IosOptions{5, 8, {}})),
            (std::vector<Groups>{{{0, 1, 2, 3, 4}}}));
  // With r = 3 it takes two one-group stages: 1.6 ms of work plus 0.01 per stage.
  SearchStats stats;
  const Schedule s = IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}}, &stats);
  EXPECT_EQ(s.stages.size(), 2u) << Dump(s);
  EXPECT_EQ(s.max_groups(), 1) << Dump(s);
  EXPECT_NEAR(stats.predicted_ms, 1.6 + 0.02, 1e-12);
}

TEST(IosSchedule, ForkJoinRunsLargeBranchesTogether) {
  OpGraph g = ForkJoin(90);
  ToyCost cost;
  SearchStats stats;
  const Schedule s = IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}}, &stats);
  EXPECT_EQ(StagesOf(s), (std::vector<Groups>{{{0}}, {{1}, {2}, {3}}, {{4}}}));
  // 0.03 + (0.6 * 2.76 + 0.01 + 0.10) + 0.03
  EXPECT_NEAR(stats.predicted_ms, 0.03 + 1.656 + 0.11 + 0.03, 1e-12);
  // Two streams at most: the three branches cannot share a stage.
  const Schedule narrow = IosSchedule(g, AllIds(g), cost, IosOptions{3, 2, {}});
  EXPECT_EQ(narrow.max_groups(), 2) << Dump(narrow);
  for (const Stage& stage : narrow.stages) EXPECT_LE(stage.groups.size(), 2u);
}

TEST(IosSchedule, ForkJoinRunsTinyBranchesInOneStream) {
  // 0.02 ms ops: an extra stream (0.05 ms) costs more than it hides.
  OpGraph g = ForkJoin(0);
  ToyCost cost;
  const Schedule s = IosSchedule(g, AllIds(g), cost, IosOptions{3, 8, {}});
  EXPECT_EQ(s.max_groups(), 1) << Dump(s);
  EXPECT_EQ(ValidationError(s, g), "");
}

// --- Limits and errors ------------------------------------------------------------------------------

TEST(IosSchedule, EmptyBlockGivesAnEmptySchedule) {
  OpGraph g = ForkJoin(1);
  ToyCost cost;
  SearchStats stats;
  stats.predicted_ms = 5;
  EXPECT_TRUE(IosSchedule(g, {}, cost, IosOptions{}, &stats).stages.empty());
  EXPECT_EQ(stats.predicted_ms, 0);
  EXPECT_EQ(stats.states, 0);
  EXPECT_TRUE(IosSchedule(OpGraph{}, {}, cost, IosOptions{}).stages.empty());
}

TEST(IosSchedule, TakesBlocksOfUpTo64Ops) {
  OpGraph chain;
  for (int i = 0; i < 65; ++i) {
    AddOp(chain, i, 0);
    if (i > 0) chain.AddEdge(i - 1, i);
  }
  std::vector<int> ids = AllIds(chain);
  ToyCost cost;
  try {
    IosSchedule(chain, ids, cost, IosOptions{});
    ADD_FAILURE() << "a block of 65 ops was accepted";
  } catch (const autograph::Error& e) {
    EXPECT_TRUE(Contains(e.what(), "65 operators")) << e.what();
    EXPECT_TRUE(Contains(e.what(), "at most 64")) << e.what();
  }
  // 64 ops use every bit of the masks; 1..64 as a block of the 65-op chain.
  ids.erase(ids.begin());
  SearchStats stats;
  const Schedule s = IosSchedule(chain, ids, cost, IosOptions{}, &stats);
  EXPECT_EQ(s.num_ops(), 64);
  EXPECT_EQ(stats.states, 64);
  EXPECT_EQ(s.stages.size(), 22u) << Dump(s);  // groups of at most 3 ops in a chain: ceil(64 / 3) stages
  EXPECT_DOUBLE_EQ(stats.predicted_ms, cost.ScheduleMs(chain, s));
}

TEST(IosSchedule, MergesSiblingsOfOneClassWhenCheaper) {
  OpGraph g = ForkJoin(90);
  ToyMergeCost cost;
  IosOptions options;
  options.merge_classes = {{1, 2, 3}};
  SearchStats stats;
  const Schedule s = IosSchedule(g, AllIds(g), cost, options, &stats);
  ASSERT_EQ(s.stages.size(), 3u) << Dump(s);
  EXPECT_EQ(s.stages[1].strategy, StageStrategy::Merge);
  EXPECT_EQ(s.stages[1].groups, (Groups{{1}, {2}, {3}}));
  EXPECT_NEAR(stats.predicted_ms, 0.03 + (0.02 + 1.35 + 0.01) + 0.03, 1e-12);
  // Every subset of two or more sinks of the class is costed once: {1,2,3} and three pairs.
  EXPECT_EQ(cost.merged_calls, 4);
  EXPECT_DOUBLE_EQ(stats.predicted_ms, cost.ScheduleMs(g, s));
}

TEST(IosSchedule, MergeStagesHoldOnlySinksOfOneClass) {
  // 1 -> 2 inside the class: 2 is a sink and 1 is not until 2 has run, so no merge stage pairs them.
  OpGraph g = MakeGraph({0, 90, 90, 90, 0}, {{0, 1}, {1, 2}, {0, 3}, {2, 4}, {3, 4}});
  ToyMergeCost cost;
  IosOptions options;
  options.merge_classes = {{1, 2}, {3, 99}};  // ids outside the block are ignored
  const Schedule s = IosSchedule(g, AllIds(g), cost, options);
  for (const Stage& stage : s.stages) EXPECT_EQ(stage.strategy, StageStrategy::Concurrent) << Dump(s);
  EXPECT_EQ(cost.merged_calls, 0);
  EXPECT_EQ(ValidationError(s, g), "");
}

TEST(IosSchedule, KeepsConcurrentStagesWhenMergingIsDearer) {
  OpGraph g = ForkJoin(1);  // tiny branches: one stream and no merge is cheapest under ToyMergeCost?
  ToyMergeCost cost;
  IosOptions options;
  options.merge_classes = {{1, 2, 3}};
  SearchStats merged_stats, plain_stats;
  IosSchedule(g, AllIds(g), cost, options, &merged_stats);
  IosSchedule(g, AllIds(g), cost, IosOptions{}, &plain_stats);
  // Allowing merges never makes the optimum worse: the Concurrent endings are all still there.
  EXPECT_LE(merged_stats.predicted_ms, plain_stats.predicted_ms + 1e-12);
}

TEST(IosSchedule, RejectsBadOptionsAndBlocks) {
  OpGraph g = MakeGraph({1, 1, 1, 1}, {{0, 1}, {1, 2}, {0, 3}});
  ToyCost cost;
  struct Case {
    std::vector<int> block;
    IosOptions options;
    std::string expected_in_message;
  };
  const std::vector<Case> cases = {
      {{0, 1, 2, 3}, IosOptions{0, 8, {}}, "max_ops_per_group (r) is 0"},
      {{0, 1, 2, 3}, IosOptions{3, 0, {}}, "max_groups_per_stage (s) is 0"},
      {{0, 1, 4}, IosOptions{}, "lists op 4"},
      {{-1, 0}, IosOptions{}, "lists op -1"},
      {{0, 1, 1}, IosOptions{}, "op 1 (test::op1) twice"},
      {{0, 2}, IosOptions{}, "not convex: op 2 (test::op2) is in it and depends on op 1 (test::op1)"},
  };
  for (const Case& c : cases) {
    try {
      IosSchedule(g, c.block, cost, c.options);
      ADD_FAILURE() << "accepted: " << c.expected_in_message;
    } catch (const autograph::Error& e) {
      EXPECT_TRUE(Contains(e.what(), c.expected_in_message)) << e.what();
    }
  }
  // Convex blocks that skip ids are fine: {0, 3} and {1, 2}.
  EXPECT_EQ(IosSchedule(g, {0, 3}, cost, IosOptions{}).num_ops(), 2);
  EXPECT_EQ(IosSchedule(g, {1, 2}, cost, IosOptions{}).num_ops(), 2);
}

}  // namespace

namespace {

// ToyCost that takes 0.2 ms of wall time per stage, as a measured cost model takes milliseconds.
class SlowToyCost : public autograph::testing::ToyCost {
 public:
  double StageMs(const OpGraph& graph, const Stage& stage) override {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return ToyCost::StageMs(graph, stage);
  }
};

TEST(IosSchedule, StopsAtItsTimeLimitWithAValidSchedule) {
  // 40 ops, sparse edges: far too many states to search in the time allowed.
  std::mt19937 rng(5);
  const OpGraph g = RandomDag(rng, 40, 0.05);
  SlowToyCost cost;
  IosOptions options;
  options.time_limit_seconds = 0.2;
  SearchStats stats;
  const auto start = std::chrono::steady_clock::now();
  const Schedule s = IosSchedule(g, AllIds(g), cost, options, &stats);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(stats.over_time);
  EXPECT_EQ(ValidationError(s, g), "");
  EXPECT_EQ(s.num_ops(), 40);
  // Past the limit each state still unsolved costs one stage: 40 ops along each path of the
  // recursion (at most 40 deep), 0.2 ms each, is well under the bound.
  EXPECT_LT(seconds, 5.0);
  EXPECT_DOUBLE_EQ(stats.predicted_ms, cost.ScheduleMs(g, s));

  // Without a limit a small block is searched whole, and a limit it keeps is not reported.
  const OpGraph small = ForkJoin(50);
  options.time_limit_seconds = 60;
  SearchStats small_stats;
  IosSchedule(small, AllIds(small), cost, options, &small_stats);
  EXPECT_FALSE(small_stats.over_time);
  options.time_limit_seconds = -1;
  EXPECT_THROW(IosSchedule(small, AllIds(small), cost, options), autograph::Error);
}

}  // namespace
