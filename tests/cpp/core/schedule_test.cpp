#include "core/schedule.h"
#include "executor/validate_schedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <set>
#include <string>

#include "search/simple_schedulers.h"
#include "toy_op_graph.h"

namespace {

using autograph::GreedySchedule;
using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::RandomSchedule;
using autograph::Schedule;
using autograph::ScheduleError;
using autograph::ScheduleFromJson;
using autograph::ScheduleToJson;
using autograph::SequentialSchedule;
using autograph::testing::AddOp;
using autograph::Stage;
using autograph::StageStrategy;
using Groups = std::vector<std::vector<int>>;

OpGraph MakeGraph(int n, const std::vector<std::pair<int, int>>& edges, OpKind kind = OpKind::MemoryBound) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, 1, 0, kind);
  for (auto [u, v] : edges) g.AddEdge(u, v);
  return g;
}

// n nodes, each forward edge with a random density; about a quarter are views (no FLOPs).
OpGraph RandomDag(std::mt19937& rng, int n) {
  OpGraph g;
  for (int i = 0; i < n; ++i) {
    const int roll = rng() % 4;
    const OpKind kind = roll == 0 ? OpKind::View : roll == 1 ? OpKind::ComputeBound : OpKind::MemoryBound;
    AddOp(g, kind == OpKind::View ? 0 : rng() % 100, 0, kind);
  }
  const double density = (rng() % 50) / 100.0;
  for (int u = 0; u < n; ++u)
    for (int v = u + 1; v < n; ++v)
      if ((rng() % 1000) / 1000.0 < density) g.AddEdge(u, v);
  return g;
}

Schedule MakeSchedule(const std::vector<Groups>& stages) {
  Schedule s;
  for (const auto& groups : stages) s.stages.push_back(Stage{StageStrategy::Concurrent, groups});
  return s;
}

std::vector<Groups> StagesOf(const Schedule& s) {
  std::vector<Groups> out;
  for (const Stage& stage : s.stages) out.push_back(stage.groups);
  return out;
}

bool SameSchedule(const Schedule& a, const Schedule& b) {
  if (a.stages.size() != b.stages.size()) return false;
  for (size_t i = 0; i < a.stages.size(); ++i)
    if (a.stages[i].strategy != b.stages[i].strategy || a.stages[i].groups != b.stages[i].groups) return false;
  return true;
}

// The ScheduleError message of ValidateSchedule, or "" when the schedule is valid.
std::string ValidationError(const Schedule& s, const OpGraph& g) {
  try {
    autograph::ValidateSchedule(s, g);
  } catch (const ScheduleError& e) {
    return e.what();
  }
  return "";
}

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --- Schedule counts ------------------------------------------------------------------------------

TEST(ScheduleCounts, OpsGroupsAndWidestStage) {
  Schedule s = MakeSchedule({{{0, 1}, {2}}, {{3}, {4}, {5, 6, 7}}, {{8}}});
  EXPECT_EQ(s.num_ops(), 9);
  EXPECT_EQ(s.num_groups(), 6);
  EXPECT_EQ(s.max_groups(), 3);
  Schedule empty;
  EXPECT_EQ(empty.num_ops(), 0);
  EXPECT_EQ(empty.num_groups(), 0);
  EXPECT_EQ(empty.max_groups(), 0);
}

TEST(JoinOneGroupStages, JoinsRunsOfOneGroupOnOneStreamOnly) {
  // 0 | 1 | {2, 3} | 4 | 5 (stream 1) | merge {6}, {7} | 8 | 9
  Schedule s = MakeSchedule({{{0}}, {{1}}, {{2}, {3}}, {{4}}, {{5}}, {{6}, {7}}, {{8}}, {{9}}});
  s.stages[4].streams = {1};
  s.stages[5].strategy = autograph::StageStrategy::Merge;
  const Schedule joined = autograph::JoinOneGroupStages(s);
  ASSERT_EQ(joined.stages.size(), 6u);
  EXPECT_EQ(joined.stages[0].groups, (std::vector<std::vector<int>>{{0, 1}}));
  EXPECT_EQ(joined.stages[1].groups.size(), 2u);  // side by side: as it was
  EXPECT_EQ(joined.stages[2].groups, (std::vector<std::vector<int>>{{4}}));
  EXPECT_EQ(joined.stages[3].groups, (std::vector<std::vector<int>>{{5}}));  // another stream
  EXPECT_EQ(joined.stages[4].strategy, autograph::StageStrategy::Merge);
  EXPECT_EQ(joined.stages[5].groups, (std::vector<std::vector<int>>{{8, 9}}));
  EXPECT_EQ(autograph::JoinOneGroupStages(joined).stages.size(), 6u);
  // A sequence of one-operator stages is the sequential schedule.
  EXPECT_EQ(autograph::ScheduleToJson(autograph::JoinOneGroupStages(MakeSchedule({{{0}}, {{1}}, {{2}}}))),
            autograph::ScheduleToJson(MakeSchedule({{{0, 1, 2}}})));
}

TEST(TimingKey, OrdersOfOneStreamAreOneKeyAndEverythingElseKeepsItsShape) {
  using autograph::TimingKey;
  // One stream: the order of its operators does not matter, the operators and the stream do.
  EXPECT_EQ(TimingKey(MakeSchedule({{{0, 1, 2}}})), TimingKey(MakeSchedule({{{0}}, {{2}}, {{1}}})));
  EXPECT_NE(TimingKey(MakeSchedule({{{0, 1, 2}}})), TimingKey(MakeSchedule({{{0, 1}}})));
  Schedule other_stream = MakeSchedule({{{0, 1, 2}}});
  other_stream.stages[0].streams = {1};
  EXPECT_NE(TimingKey(MakeSchedule({{{0, 1, 2}}})), TimingKey(other_stream));
  // Side by side, or merged: the schedule itself, order included.
  EXPECT_NE(TimingKey(MakeSchedule({{{0}}, {{1}, {2}}})), TimingKey(MakeSchedule({{{0}}, {{2}, {1}}})));
  EXPECT_EQ(TimingKey(MakeSchedule({{{0}}, {{1}, {2}}})), TimingKey(MakeSchedule({{{0}}, {{1}, {2}}})));
  Schedule merged = MakeSchedule({{{0}}, {{1}, {2}}});
  merged.stages[1].strategy = autograph::StageStrategy::Merge;
  EXPECT_NE(TimingKey(merged), TimingKey(MakeSchedule({{{0}}, {{1}, {2}}})));
  EXPECT_NE(TimingKey(merged), TimingKey(MakeSchedule({{{0, 1, 2}}})));
}

// --- ValidateSchedule: one hand-written violation per rule -----------------------------------------

// Diamond 0 -> {1, 2} -> 3.
OpGraph Diamond() { return MakeGraph(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}); }

TEST(ScheduleValidate, AcceptsValidSchedules) {
  OpGraph g = Diamond();
  EXPECT_EQ(ValidationError(MakeSchedule({{{0}}, {{1}, {2}}, {{3}}}), g), "");
  EXPECT_EQ(ValidationError(MakeSchedule({{{0, 2, 1, 3}}}), g), "");
  EXPECT_EQ(ValidationError(MakeSchedule({{{0, 1}}, {{2, 3}}}), g), "");
  EXPECT_EQ(ValidationError(Schedule{}, OpGraph{}), "");
}

// Merge stages need convolutions of one input (merged_convolution_test.cpp accepts real ones); the
// structure is checked first: >= 2 groups of exactly one op each.
TEST(ScheduleValidate, RejectsMergeStagesThatCannotBeOneKernel) {
  OpGraph g = Diamond();
  Schedule s = MakeSchedule({{{0}}, {{1}, {2}}, {{3}}});
  s.stages[1].strategy = StageStrategy::Merge;
  std::string msg = ValidationError(s, g);
  EXPECT_TRUE(Contains(msg, "merge stage 1 cannot run as one kernel: op 1 (test::op1) has no TorchScript node")) << msg;
  s = MakeSchedule({{{0}}, {{1, 2}}, {{3}}});
  s.stages[1].strategy = StageStrategy::Merge;
  msg = ValidationError(s, g);
  EXPECT_TRUE(Contains(msg, "merge stage 1 has 1 group")) << msg;
  s = MakeSchedule({{{0, 1}, {2}}});
  s.stages[0].strategy = StageStrategy::Merge;
  msg = ValidationError(s, MakeGraph(3, {}));
  EXPECT_TRUE(Contains(msg, "merge stage 0 group 0 lists 2 ops, starting with op 0 (test::op0)")) << msg;
}

TEST(ScheduleCounts, KernelsLaunchedCountsAMergeStageOnce) {
  OpGraph g;
  for (OpKind kind : {OpKind::ComputeBound, OpKind::ComputeBound, OpKind::ComputeBound, OpKind::View, OpKind::MemoryBound})
    AddOp(g, 1, 0, kind);
  EXPECT_EQ(autograph::KernelsLaunched(g, MakeSchedule({{{0, 1, 2, 3, 4}}})), 4);  // the view launches none
  Schedule s = MakeSchedule({{{0}, {1}, {2}}, {{3}, {4}}});
  EXPECT_EQ(autograph::KernelsLaunched(g, s), 4);
  s.stages[0].strategy = StageStrategy::Merge;  // counted without validating
  EXPECT_EQ(autograph::KernelsLaunched(g, s), 2);
}

TEST(ScheduleValidate, RejectsMissingOp) {
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{1}, {2}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "op 3 (test::op3) is not in the schedule")) << msg;
}

TEST(ScheduleValidate, RejectsDuplicateOp) {
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{1}, {2}}, {{3, 1}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "op 1 (test::op1) appears twice")) << msg;
  EXPECT_TRUE(Contains(msg, "stage 1 group 0 position 0")) << msg;
  EXPECT_TRUE(Contains(msg, "stage 2 group 0 position 1")) << msg;
}

TEST(ScheduleValidate, RejectsIdsOutsideTheGraph) {
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{1}, {2}}, {{3, 7}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "stage 2 group 0 position 1 lists op 7")) << msg;
  msg = ValidationError(MakeSchedule({{{-1, 0}}, {{1}, {2}}, {{3}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "lists op -1")) << msg;
}

TEST(ScheduleValidate, RejectsEmptyStage) {
  std::string msg = ValidationError(MakeSchedule({{{0}}, {}, {{1}, {2}}, {{3}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "stage 1 has no groups")) << msg;
}

TEST(ScheduleValidate, RejectsEmptyGroup) {
  std::string msg = ValidationError(MakeSchedule({{{0}, {}}, {{1}, {2}}, {{3}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "stage 0 group 1 is empty")) << msg;
}

TEST(ScheduleValidate, RejectsEdgeIntoAnEarlierStage) {
  // 2 -> 3, but 2 runs in the stage after 3.
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{1}}, {{3}}, {{2}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "op 3 (test::op3) at stage 2 group 0 position 0 depends on op 2 (test::op2)")) << msg;
  EXPECT_TRUE(Contains(msg, "a later stage")) << msg;
}

TEST(ScheduleValidate, RejectsEdgeBetweenGroupsOfOneStage) {
  // 1 -> 3 crosses from group 0 to group 1 of stage 1.
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{1}, {2, 3}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "op 3 (test::op3) at stage 1 group 1 position 1 depends on op 1 (test::op1)")) << msg;
  EXPECT_TRUE(Contains(msg, "another group of the same stage")) << msg;
}

TEST(ScheduleValidate, RejectsEdgeBetweenGroupsOfAMergeStage) {
  Schedule s = MakeSchedule({{{0}}, {{1}, {2, 3}}});
  s.stages[1].strategy = StageStrategy::Merge;
  std::string msg = ValidationError(s, Diamond());
  EXPECT_TRUE(Contains(msg, "op 3 (test::op3)")) << msg;
  EXPECT_TRUE(Contains(msg, "another group of the same stage")) << msg;
}

TEST(ScheduleValidate, RejectsEdgeBackwardsInsideAGroup) {
  // 1 -> 3, but 3 comes first in their group.
  std::string msg = ValidationError(MakeSchedule({{{0}}, {{2}}, {{3, 1}}}), Diamond());
  EXPECT_TRUE(Contains(msg, "op 3 (test::op3) at stage 2 group 0 position 0 depends on op 1 (test::op1)")) << msg;
  EXPECT_TRUE(Contains(msg, "later in the same group")) << msg;
}

TEST(ScheduleValidate, StreamsNameOneDistinctStreamPerGroup) {
  Schedule s = MakeSchedule({{{0}}, {{1}, {2}}, {{3}}});
  s.stages[1].streams = {5, 2};  // a stage may use any streams; the widest stream id counts
  s.stages[2].streams = {5};
  EXPECT_EQ(ValidationError(s, Diamond()), "");
  EXPECT_EQ(s.max_groups(), 6);
  EXPECT_EQ(s.stages[1].StreamOf(0), 5);
  EXPECT_EQ(s.stages[0].StreamOf(0), 0);  // none given: group index
  s.stages[1].streams = {2, 2};
  EXPECT_TRUE(Contains(ValidationError(s, Diamond()), "puts groups 0 and 1 on stream 2")) << ValidationError(s, Diamond());
  s.stages[1].streams = {1};
  EXPECT_TRUE(Contains(ValidationError(s, Diamond()), "has 2 groups but 1 streams")) << ValidationError(s, Diamond());
  s.stages[1].streams = {1, autograph::kMaxStreams};
  EXPECT_TRUE(Contains(ValidationError(s, Diamond()), "streams are 0..63")) << ValidationError(s, Diamond());
  s.stages[1].streams = {};
  s.stages[2].strategy = StageStrategy::Merge;
  s.stages[2].streams = {1};
  EXPECT_TRUE(Contains(ValidationError(s, Diamond()), "merge stage with streams")) << ValidationError(s, Diamond());
}

// --- JSON -------------------------------------------------------------------------------------------------

TEST(ScheduleJson, StreamsRoundTripAndStayOptional) {
  Schedule s = MakeSchedule({{{0}}, {{1}, {2}}, {{3}}});
  s.stages[1].streams = {3, 0};
  const nlohmann::json json = ScheduleToJson(s);
  EXPECT_EQ(json["stages"][1]["streams"], nlohmann::json::parse("[3, 0]"));
  EXPECT_FALSE(json["stages"][0].contains("streams"));
  EXPECT_EQ(ScheduleFromJson(json).stages[1].streams, (std::vector<int>{3, 0}));
  EXPECT_TRUE(ScheduleFromJson(json).stages[0].streams.empty());
  EXPECT_THROW(ScheduleFromJson(nlohmann::json::parse(
                   R"({"version": 1, "stages": [{"strategy": "concurrent", "groups": [[0]], "streams": 1}]})")),
               autograph::ScheduleError);
}

TEST(ScheduleJson, WritesTheDocumentedFormat) {
  Schedule s = MakeSchedule({{{0, 1}, {2}}, {{3}}});
  s.stages[1].strategy = StageStrategy::Merge;
  EXPECT_EQ(ScheduleToJson(s), nlohmann::json::parse(R"({"version": 1, "stages": [
      {"strategy": "concurrent", "groups": [[0, 1], [2]]},
      {"strategy": "merge", "groups": [[3]]}]})"));
  EXPECT_EQ(ScheduleToJson(Schedule{}), nlohmann::json::parse(R"({"version": 1, "stages": []})"));
}

TEST(ScheduleJson, ReadsAWellFormedDocument) {
  Schedule s = ScheduleFromJson(nlohmann::json::parse(
      R"({"version": 1, "stages": [{"strategy": "merge", "groups": [[2, 0], [1]]}, {"strategy": "concurrent", "groups": [[3]]}]})"));
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].strategy, StageStrategy::Merge);
  EXPECT_EQ(s.stages[0].groups, (Groups{{2, 0}, {1}}));
  EXPECT_EQ(s.stages[1].strategy, StageStrategy::Concurrent);
  EXPECT_EQ(s.stages[1].groups, (Groups{{3}}));
}

TEST(ScheduleJson, RejectsMalformedDocuments) {
  const std::string stage_prefix = R"({"version": 1, "stages": [)";
  struct Case {
    std::string text;
    std::string expected_in_message;
  };
  const std::vector<Case> cases = {
      {R"([])", "expected an object"},
      {R"({"stages": []})", "no \"version\""},
      {R"({"version": 2, "stages": []})", "version is 2"},
      {R"({"version": "1", "stages": []})", "version is \"1\""},
      {R"({"version": 1.0, "stages": []})", "version is 1.0"},
      {R"({"version": 1})", "no \"stages\""},
      {R"({"version": 1, "stages": {}})", "stages is an object"},
      {R"({"version": 1, "stages": [], "note": "x"})", "unknown key \"note\""},
      {stage_prefix + R"([[0]]]})", "stages[0] is an array"},
      {stage_prefix + R"({"groups": [[0]]}]})", "stages[0] has no \"strategy\""},
      {stage_prefix + R"({"strategy": "parallel", "groups": [[0]]}]})", "stages[0].strategy is \"parallel\""},
      {stage_prefix + R"({"strategy": 1, "groups": [[0]]}]})", "stages[0].strategy is 1"},
      {stage_prefix + R"({"strategy": "concurrent"}]})", "stages[0] has no \"groups\""},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[0]], "stream": 2}]})", "unknown key \"stream\""},
      {stage_prefix + R"({"strategy": "concurrent", "groups": {}}]})", "stages[0].groups is an object"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [0]}]})", "stages[0].groups[0] is 0"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[0], [1, -1]]}]})", "stages[0].groups[1][1] is -1"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[1.5]]}]})", "stages[0].groups[0][0] is 1.5"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [["0"]]}]})", "stages[0].groups[0][0] is \"0\""},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[true]]}]})", "stages[0].groups[0][0] is true"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[null]]}]})", "stages[0].groups[0][0] is null"},
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[4294967296]]}]})", "too large"},
  };
  for (const Case& c : cases) {
    const nlohmann::json json = nlohmann::json::parse(c.text);
    try {
      ScheduleFromJson(json);
      ADD_FAILURE() << "accepted " << c.text;
    } catch (const ScheduleError& e) {
      EXPECT_TRUE(Contains(e.what(), c.expected_in_message)) << c.text << ": " << e.what();
    }
  }
}

TEST(ScheduleJson, RoundTripsRandomSchedules) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    OpGraph g = RandomDag(rng, 1 + rng() % 40);
    Schedule s = RandomSchedule(g, trial, 1 + trial % 8);
    for (Stage& stage : s.stages)
      if (rng() % 2) stage.strategy = StageStrategy::Merge;
    Schedule back = ScheduleFromJson(nlohmann::json::parse(ScheduleToJson(s).dump()));
    EXPECT_TRUE(SameSchedule(s, back)) << "trial " << trial << ": " << ScheduleToJson(s).dump() << " came back as "
                                       << ScheduleToJson(back).dump();
  }
}

// --- Simple schedulers on random DAGs --------------------------------------------------------------

// Greedy fills a stage before anything waits: a stage with a free stream leaves no ready kernel op
// behind; and views hold a group of their own only when nothing else could.
void ExpectGreedyShape(const Schedule& s, const OpGraph& g, int max_groups, const std::string& context) {
  std::vector<int> stage_of(g.size(), -1);
  for (int st = 0; st < static_cast<int>(s.stages.size()); ++st)
    for (const auto& group : s.stages[st].groups)
      for (int v : group) stage_of[v] = st;
  for (int st = 0; st < static_cast<int>(s.stages.size()); ++st) {
    const auto& groups = s.stages[st].groups;
    if (static_cast<int>(groups.size()) < max_groups) {
      for (int v = 0; v < g.size(); ++v) {
        if (g.node(v).kind == OpKind::View || stage_of[v] <= st) continue;
        bool ready = std::all_of(g.preds(v).begin(), g.preds(v).end(), [&](int p) { return stage_of[p] < st; });
        EXPECT_FALSE(ready) << context << ": op " << v << " was ready for stage " << st << " with a free group";
      }
    }
    for (const auto& group : groups) {
      bool views_only =
          std::all_of(group.begin(), group.end(), [&](int v) { return g.node(v).kind == OpKind::View; });
      if (views_only) EXPECT_EQ(groups.size(), 1u) << context << ": stage " << st << " has a group of views only";
    }
  }
}

TEST(ScheduleSimpleSchedulers, ValidOnRandomDags) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    OpGraph g = RandomDag(rng, 1 + rng() % 40);
    const std::string graph = "trial " + std::to_string(trial) + " n=" + std::to_string(g.size());
    Schedule sequential = SequentialSchedule(g);
    EXPECT_EQ(ValidationError(sequential, g), "") << graph;
    EXPECT_EQ(sequential.num_groups(), 1) << graph;
    for (int max_groups = 1; max_groups <= 8; ++max_groups) {
      const std::string context = graph + " max_groups=" + std::to_string(max_groups);
      Schedule greedy = GreedySchedule(g, max_groups);
      EXPECT_EQ(ValidationError(greedy, g), "") << context;
      EXPECT_LE(greedy.max_groups(), max_groups) << context;
      ExpectGreedyShape(greedy, g, max_groups, context);
      Schedule random = RandomSchedule(g, trial * 10 + max_groups, max_groups);
      EXPECT_EQ(ValidationError(random, g), "") << context;
      EXPECT_LE(random.max_groups(), max_groups) << context;
    }
  }
}

TEST(ScheduleSimpleSchedulers, EmptyGraphGivesEmptySchedule) {
  OpGraph g;
  EXPECT_TRUE(SequentialSchedule(g).stages.empty());
  EXPECT_TRUE(GreedySchedule(g, 4).stages.empty());
  EXPECT_TRUE(RandomSchedule(g, 1, 4).stages.empty());
}

TEST(ScheduleSimpleSchedulers, SequentialListsIdsInOrder) {
  EXPECT_EQ(StagesOf(SequentialSchedule(Diamond())), (std::vector<Groups>{{{0, 1, 2, 3}}}));
}

TEST(ScheduleSimpleSchedulers, RejectMaxGroupsBelowOne) {
  EXPECT_THROW(GreedySchedule(Diamond(), 0), ScheduleError);
  EXPECT_THROW(RandomSchedule(Diamond(), 1, 0), ScheduleError);
  EXPECT_THROW(GreedySchedule(Diamond(), -3), ScheduleError);
}

// --- GreedySchedule ----------------------------------------------------------------------------------

OpGraph ForkJoin() { return MakeGraph(5, {{0, 1}, {0, 2}, {0, 3}, {1, 4}, {2, 4}, {3, 4}}); }

TEST(ScheduleGreedy, ForkJoinRunsTheBranchesInOneStage) {
  EXPECT_EQ(StagesOf(GreedySchedule(ForkJoin(), 8)), (std::vector<Groups>{{{0}}, {{1}, {2}, {3}}, {{4}}}));
}

TEST(ScheduleGreedy, ForkJoinRespectsTheCap) {
  OpGraph g = ForkJoin();
  Schedule s = GreedySchedule(g, 2);
  EXPECT_EQ(ValidationError(s, g), "");
  EXPECT_EQ(s.max_groups(), 2);
  EXPECT_EQ(s.stages.size(), 3u);
}

TEST(ScheduleGreedy, ChainIsOneGroup) {
  OpGraph g = MakeGraph(4, {{0, 1}, {1, 2}, {2, 3}});
  EXPECT_EQ(StagesOf(GreedySchedule(g, 4)), (std::vector<Groups>{{{0, 1, 2, 3}}}));
}

TEST(ScheduleGreedy, HeaviestRemainingPathFirst) {
  // Independent ops: the two heaviest share the first stage, heaviest first.
  OpGraph independent;
  AddOp(independent, 1, 0, OpKind::ComputeBound);
  AddOp(independent, 50, 0, OpKind::ComputeBound);
  AddOp(independent, 10, 0, OpKind::ComputeBound);
  EXPECT_EQ(StagesOf(GreedySchedule(independent, 2)), (std::vector<Groups>{{{1}, {2}}, {{0}}}));
  // 0 is light but leads to a heavy op; the path counts, not the op alone.
  OpGraph path;
  AddOp(path, 1, 0, OpKind::ComputeBound);
  AddOp(path, 100, 0, OpKind::ComputeBound);
  AddOp(path, 50, 0, OpKind::ComputeBound);
  path.AddEdge(0, 1);
  EXPECT_EQ(StagesOf(GreedySchedule(path, 1)), (std::vector<Groups>{{{0, 1}}, {{2}}}));
}

TEST(ScheduleGreedy, OperatorCountBreaksFlopTies) {
  // No FLOPs anywhere: the longer chain (2 -> 3 -> 4) goes first; then the lower id.
  OpGraph g = MakeGraph(5, {{0, 1}, {2, 3}, {3, 4}}, OpKind::MemoryBound);
  for (int v = 0; v < g.size(); ++v) g.node(v).flops = 0;
  EXPECT_EQ(StagesOf(GreedySchedule(g, 1)), (std::vector<Groups>{{{2, 3, 4}}, {{0, 1}}}));
}

TEST(ScheduleGreedy, ViewJoinsTheGroupOfItsProducer) {
  // 0 -> 1 (view) -> 2 and 0 -> 3: the view rides with 0 instead of taking a stream next stage.
  OpGraph g;
  AddOp(g, 10, 0, OpKind::ComputeBound);
  AddOp(g, 0, 0, OpKind::View);
  AddOp(g, 10, 0, OpKind::ComputeBound);
  AddOp(g, 10, 0, OpKind::ComputeBound);
  g.AddEdge(0, 1);
  g.AddEdge(1, 2);
  g.AddEdge(0, 3);
  EXPECT_EQ(StagesOf(GreedySchedule(g, 8)), (std::vector<Groups>{{{0, 1}}, {{2}, {3}}}));
}

TEST(ScheduleGreedy, ReadyViewJoinsAnExistingGroup) {
  // 0 (view, no inputs) -> 2; 1 independent. The view does not open a second group.
  OpGraph g;
  AddOp(g, 0, 0, OpKind::View);
  AddOp(g, 10, 0, OpKind::ComputeBound);
  AddOp(g, 10, 0, OpKind::ComputeBound);
  g.AddEdge(0, 2);
  EXPECT_EQ(StagesOf(GreedySchedule(g, 8)), (std::vector<Groups>{{{1, 0}}, {{2}}}));
}

TEST(ScheduleGreedy, OnlyViewsReadyStillMakesProgress) {
  OpGraph g;
  AddOp(g, 0, 0, OpKind::View);
  AddOp(g, 0, 0, OpKind::View);
  AddOp(g, 10, 0, OpKind::ComputeBound);
  g.AddEdge(0, 2);
  g.AddEdge(1, 2);
  EXPECT_EQ(StagesOf(GreedySchedule(g, 8)), (std::vector<Groups>{{{0, 1}}, {{2}}}));
}

// --- RandomSchedule ------------------------------------------------------------------------------------

TEST(ScheduleRandom, SameSeedSameScheduleOtherSeedsDiffer) {
  std::mt19937 rng(5);
  OpGraph g = RandomDag(rng, 30);
  EXPECT_TRUE(SameSchedule(RandomSchedule(g, 42, 4), RandomSchedule(g, 42, 4)));
  std::set<std::string> distinct;
  for (uint64_t seed = 0; seed < 10; ++seed) distinct.insert(ScheduleToJson(RandomSchedule(g, seed, 4)).dump());
  EXPECT_GE(distinct.size(), 5u);
}

// Every schedule of a small graph, by brute force: a schedule is an order of the ops plus, between
// neighbours, "same group", "next group" or "next stage"; keep the valid ones within max_groups.
std::set<std::string> AllValidSchedules(const OpGraph& g, int max_groups) {
  std::set<std::string> all;
  std::vector<int> order(g.size());
  for (int i = 0; i < g.size(); ++i) order[i] = i;
  int cuts = 1;
  for (int i = 1; i < g.size(); ++i) cuts *= 3;
  do {
    for (int code = 0; code < cuts; ++code) {
      Schedule s = MakeSchedule({{{order[0]}}});
      for (int i = 1, c = code; i < g.size(); ++i, c /= 3) {
        if (c % 3 == 1) s.stages.back().groups.emplace_back();
        if (c % 3 == 2) s.stages.emplace_back(Stage{StageStrategy::Concurrent, {{}}});
        s.stages.back().groups.back().push_back(order[i]);
      }
      if (s.max_groups() <= max_groups && ValidationError(s, g).empty()) all.insert(ScheduleToJson(s).dump());
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return all;
}

TEST(ScheduleRandom, ReachesEveryValidScheduleOfSmallGraphs) {
  struct Case {
    OpGraph graph;
    int max_groups;
  };
  std::vector<Case> cases;
  cases.push_back({MakeGraph(4, {{0, 2}, {1, 2}, {1, 3}}), 2});
  cases.push_back({MakeGraph(3, {}), 2});  // 48 schedules; 4 ops and 3 groups would be 624, too many to draw
  cases.push_back({MakeGraph(4, {{0, 1}, {1, 2}, {2, 3}}), 8});
  cases.push_back({Diamond(), 8});
  for (size_t c = 0; c < cases.size(); ++c) {
    const std::set<std::string> expected = AllValidSchedules(cases[c].graph, cases[c].max_groups);
    std::set<std::string> seen;
    for (uint64_t seed = 0; seed < 20000; ++seed)
      seen.insert(ScheduleToJson(RandomSchedule(cases[c].graph, seed, cases[c].max_groups)).dump());
    EXPECT_GE(expected.size(), 8u) << "case " << c;  // a chain of 4 has 8: the ways to cut it into stages
    for (const std::string& s : seen) EXPECT_EQ(expected.count(s), 1u) << "case " << c << ": not valid: " << s;
    for (const std::string& s : expected) EXPECT_EQ(seen.count(s), 1u) << "case " << c << ": never drawn: " << s;
  }
}

TEST(ScheduleRandom, ProducesOneOpStagesLongChainsAndFullWidth) {
  OpGraph chain = MakeGraph(12, {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 8}, {8, 9}, {9, 10},
                                 {10, 11}});
  OpGraph antichain = MakeGraph(8, {});
  bool one_group_chain = false, one_op_stages = false, full_width = false;
  for (uint64_t seed = 0; seed < 500; ++seed) {
    Schedule c = RandomSchedule(chain, seed, 8);
    one_group_chain |= c.stages.size() == 1;
    one_op_stages |= c.stages.size() == 12;
    Schedule a = RandomSchedule(antichain, seed, 8);
    full_width |= a.stages.size() == 1 && a.max_groups() == 8;
  }
  EXPECT_TRUE(one_group_chain);
  EXPECT_TRUE(one_op_stages);
  EXPECT_TRUE(full_width);
}

}  // namespace
