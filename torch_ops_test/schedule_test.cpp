#include "autograph/schedule.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <string>

namespace {

using autograph::OpGraph;
using autograph::OpKind;
using autograph::OpNode;
using autograph::Schedule;
using autograph::ScheduleError;
using autograph::ScheduleFromJson;
using autograph::ScheduleToJson;
using autograph::Stage;
using autograph::StageStrategy;
using Groups = std::vector<std::vector<int>>;

// Node i is named "test::op<i>" so that a message can be checked for naming the right op.
int AddOp(OpGraph& g, OpKind kind, double flops = 1) {
  OpNode node;
  node.op = "test::op" + std::to_string(g.size());
  node.kind = kind;
  node.flops = flops;
  return g.AddNode(node);
}

OpGraph MakeGraph(int n, const std::vector<std::pair<int, int>>& edges, OpKind kind = OpKind::MemoryBound) {
  OpGraph g;
  for (int i = 0; i < n; ++i) AddOp(g, kind);
  for (auto [u, v] : edges) g.AddEdge(u, v);
  return g;
}

Schedule MakeSchedule(const std::vector<Groups>& stages) {
  Schedule s;
  for (const auto& groups : stages) s.stages.push_back(Stage{StageStrategy::Concurrent, groups});
  return s;
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

// --- ValidateSchedule: one hand-written violation per rule -----------------------------------------

// Diamond 0 -> {1, 2} -> 3.
OpGraph Diamond() { return MakeGraph(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}}); }

TEST(ScheduleValidate, AcceptsValidSchedules) {
  OpGraph g = Diamond();
  EXPECT_EQ(ValidationError(MakeSchedule({{{0}}, {{1}, {2}}, {{3}}}), g), "");
  EXPECT_EQ(ValidationError(MakeSchedule({{{0, 2, 1, 3}}}), g), "");
  EXPECT_EQ(ValidationError(MakeSchedule({{{0, 1}}, {{2, 3}}}), g), "");
  Schedule merge = MakeSchedule({{{0}}, {{1}, {2}}, {{3}}});
  merge.stages[1].strategy = StageStrategy::Merge;
  EXPECT_EQ(ValidationError(merge, g), "");
  EXPECT_EQ(ValidationError(Schedule{}, OpGraph{}), "");
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

// --- JSON -------------------------------------------------------------------------------------------------

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
      {stage_prefix + R"({"strategy": "concurrent", "groups": [[0]], "streams": 2}]})", "unknown key \"streams\""},
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

}  // namespace
