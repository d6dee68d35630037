// BuildTimeline lays a schedule out in time as its cost model predicts it, the JSON form round-trips,
// and TimelineSvg draws merged and stitched kernels, escapes names and keeps labels inside their boxes.
#include "api/timeline.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/ir/irparser.h>

#include <regex>
#include <set>

#include "api/timeline_svg.h"
#include "autograph/error.h"
#include "graph_pass/import_op_graph.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_model.h"
#include "search/nimble_schedule.h"

namespace {

// Two branches off one input (two streams), a view, then a join.
autograph::OpGraph Branches() {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %w : Tensor):
  %a : Tensor = aten::matmul(%x, %w)
  %b : Tensor = aten::relu(%x)
  %c : Tensor = aten::sigmoid(%b)
  %t : Tensor = aten::t(%c)
  %d : Tensor = aten::matmul(%a, %t)
  return (%d))IR",
                      graph.get());
  return autograph::ImportOpGraph(graph, {torch::randn({64, 64}), torch::randn({64, 64})});
}

TEST(BuildTimeline, StagesFollowEachOtherAndOperatorsFitTheirStage) {
  const autograph::OpGraph graph = Branches();
  const autograph::Schedule schedule = autograph::NimbleSchedule(graph, 4);
  autograph::AnalyticalCostModel cost(autograph::DeviceModel::ByName("cpu"));
  const autograph::Timeline t = autograph::BuildTimeline(graph, schedule, cost);
  EXPECT_EQ(t.times, "predicted by " + cost.name());
  EXPECT_EQ(t.streams, schedule.max_groups());
  EXPECT_NEAR(t.total_ms, cost.ScheduleMs(graph, schedule), 1e-9);
  ASSERT_EQ(t.stages.size(), schedule.stages.size());
  double now = 0;
  std::multiset<std::string> drawn;
  for (const autograph::TimelineStage& stage : t.stages) {
    EXPECT_NEAR(stage.start_ms, now, 1e-9);
    for (const autograph::TimelineSpan& span : stage.spans) {
      double at = stage.start_ms;
      for (const autograph::TimelineOp& op : span.ops) {
        EXPECT_NEAR(op.start_ms, at, 1e-9) << "operators of a group run one after another";
        EXPECT_NEAR(op.ms, cost.OperatorMs(graph, op.id), 1e-12);
        EXPECT_LE(op.start_ms + op.ms, stage.start_ms + stage.ms + 1e-9) << op.op << " overruns its stage";
        at += op.ms;
        drawn.insert(op.op);
      }
    }
    now += stage.ms;
  }
  // Every operator that launches a kernel, once; the view (aten::t) is left out.
  EXPECT_EQ(drawn, (std::multiset<std::string>{"aten::matmul", "aten::matmul", "aten::relu", "aten::sigmoid"}));
  std::set<int> streams;
  for (const autograph::TimelineStage& stage : t.stages)
    for (const autograph::TimelineSpan& span : stage.spans) streams.insert(span.stream);
  EXPECT_EQ(streams.size(), 2u) << "the branches run side by side";

  const nlohmann::json json = autograph::TimelineToJson(t);
  EXPECT_EQ(autograph::TimelineToJson(autograph::TimelineFromJson(json)), json);
}

TEST(BuildTimeline, MalformedJsonIsATypedError) {
  EXPECT_THROW(autograph::TimelineFromJson(nlohmann::json::object()), autograph::Error);
  nlohmann::json bad = {{"times", "x"}, {"total_ms", 1.0}, {"streams", 1},
                        {"stages", {{{"merged", false}, {"start_ms", 0.0}, {"ms", 1.0},
                                     {"spans", {{{"stream", 3}, {"ops", nlohmann::json::array()}}}}}}}};
  EXPECT_THROW(autograph::TimelineFromJson(bad), autograph::Error) << "stream 3 of 1";
}

autograph::TimelineOp Op(int id, std::string name, autograph::OpKind kind, double start, double ms, bool stitched = false) {
  autograph::TimelineOp op;
  op.id = id;
  op.op = std::move(name);
  op.kind = kind;
  op.start_ms = start;
  op.ms = ms;
  op.stitched = stitched;
  op.shape = "[1,8]";
  return op;
}

TEST(TimelineSvg, MarksMergedAndStitchedKernelsAndKeepsLabelsInsideBoxes) {
  autograph::Timeline t;
  t.times = "predicted by test";
  t.streams = 2;
  autograph::TimelineStage merged;
  merged.merged = true;
  merged.ms = 2;
  for (int g = 0; g < 3; ++g) merged.spans.push_back({0, {Op(g, "aten::conv2d", autograph::OpKind::ComputeBound, 0, 2)}});
  autograph::TimelineStage concurrent;
  concurrent.start_ms = 2;
  concurrent.ms = 3;
  concurrent.spans.push_back({0, {Op(3, "autograph::stitched", autograph::OpKind::MemoryBound, 2, 3, true)}});
  concurrent.spans.push_back({1, {Op(4, "my<lib>::op&", autograph::OpKind::MemoryBound, 2, 0.01),
                                  Op(5, "aten::relu", autograph::OpKind::MemoryBound, 2.01, 1)}});
  t.stages = {merged, concurrent};
  t.total_ms = 5;
  const std::string svg = autograph::TimelineSvg(t, "model <test>");
  EXPECT_NE(svg.find("3x conv2d merged"), std::string::npos) << "one box for the merged kernel";
  EXPECT_NE(svg.find("merged kernel of 3 operators"), std::string::npos);
  EXPECT_NE(svg.find("(stitched kernel)"), std::string::npos);
  EXPECT_NE(svg.find("#59a14f"), std::string::npos) << "the stitched kernel's colour";
  EXPECT_EQ(svg.find("my<lib>"), std::string::npos) << "names are escaped";
  EXPECT_NE(svg.find("my&lt;lib&gt;::op&amp;"), std::string::npos);
  EXPECT_NE(svg.find("model &lt;test&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">stream 1<"), std::string::npos);
  // Each label is drawn only where it fits its box: 6.2 px a character at 11 px.
  std::regex box(R"re(<rect x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)" height="22"[^>]*/><text x="([0-9.]+)"[^>]*>([^<]*)</text>)re");
  int labels = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), box); it != std::sregex_iterator(); ++it, ++labels) {
    const double x = std::stod((*it)[1]), w = std::stod((*it)[2]), tx = std::stod((*it)[3]);
    EXPECT_LE(tx + (*it)[4].length() * 6.2, x + w + 1e-6) << (*it)[4] << " overflows its box";
  }
  EXPECT_GE(labels, 3);  // merged, stitched, relu; the 0.01 ms op is too narrow for a label
}

}  // namespace
