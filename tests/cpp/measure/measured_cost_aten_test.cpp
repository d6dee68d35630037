// The measured cost model on an exported program's graph (AtenGraph): every value recorded by id, a
// stage cut out into an AtenGraph of its own that runs alone, its signature, and the model's memo.
// Timings are only checked to be sane (a shared CI machine).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/stage_executor.h"
#include "graph_pass/describe_aten_merge_candidate.h"
#include "graph_pass/import_aten_graph.h"
#include "measure/extract_stage.h"
#include "measure/measured_cost_model.h"
#include "measure/record_values.h"
#include "measure/stage_signature.h"

namespace {

using autograph::MeasuredCostModel;
using autograph::MeasuredCostOptions;
using autograph::OpGraph;
using autograph::Stage;
using autograph::StageStrategy;

MeasuredCostOptions Quick() {
  MeasuredCostOptions o;
  o.warmup = 1;
  o.repeats = 3;
  o.cache_path = "none";
  return o;
}

bool Sane(double ms) { return std::isfinite(ms) && ms > 0 && ms < 10'000; }

// An exported program's graph (AtenGraph JSON as export.py writes it): w (a weight) and x; mm(x, t(w))
// and relu(x) side by side, their sum. Value ids follow `order` so that two numberings of one graph
// can be compared.
std::shared_ptr<const autograph::AtenGraph> AtenForkJoin(int64_t n = 4) {
  const std::string N = std::to_string(n);
  const std::string tensor = R"({"tensor": true, "shape": [)" + N + ", " + N + R"(], "stride": [)" + N +
                             R"(, 1], "dtype": "Float"})";
  const std::string transposed = R"({"tensor": true, "shape": [)" + N + ", " + N + R"(], "stride": [1, )" + N +
                                 R"(], "dtype": "Float"})";
  const std::string text = R"({"version": 1, "values": [)" + tensor + ", " + tensor + ", " + transposed + ", " +
                           tensor + ", " + tensor + ", " + tensor + R"(],
  "inputs": [0, 1], "weights": [true, false],
  "nodes": [
    {"op": "aten::t", "overload": "default", "name": "t", "args": [{"value": 0}], "kwargs": {}, "outputs": [2]},
    {"op": "aten::mm", "overload": "default", "name": "mm", "args": [{"value": 1}, {"value": 2}], "kwargs": {}, "outputs": [3]},
    {"op": "aten::relu", "overload": "default", "name": "relu", "args": [{"value": 1}], "kwargs": {}, "outputs": [4]},
    {"op": "aten::add", "overload": "Tensor", "name": "add", "args": [{"value": 3}, {"value": 4}], "kwargs": {"alpha": 1}, "outputs": [5]}
  ],
  "outputs": [5]})";
  return std::make_shared<const autograph::AtenGraph>(autograph::AtenGraph::FromJson(nlohmann::json::parse(text)));
}

int OpNamed(const OpGraph& graph, const std::string& op) {
  for (const auto& n : graph.nodes())
    if (n.op == op) return n.id;
  throw std::runtime_error("no " + op);
}

TEST(MeasuredCostModelAten, RecordsEveryValueAndExtractsAStageThatRunsAlone) {
  torch::NoGradGuard no_grad;
  OpGraph graph = autograph::ImportAtenGraph(AtenForkJoin());
  const torch::Tensor w = torch::randn({4, 4}), x = torch::randn({4, 4});
  const autograph::AtenValueRecord values = autograph::RecordAtenValues(graph, {w, x});
  ASSERT_EQ(values.size(), 6u);
  EXPECT_TRUE(torch::allclose(values[3].toTensor(), x.mm(w.t())));
  EXPECT_TRUE(torch::allclose(values[5].toTensor(), x.mm(w.t()) + x.relu()));

  const int mm = OpNamed(graph, "aten::mm"), relu = OpNamed(graph, "aten::relu");
  autograph::StageSubgraph sub =
      autograph::ExtractStage(graph, Stage{StageStrategy::Concurrent, {{mm}, {relu}}}, values);
  ASSERT_TRUE(sub.graph.aten_graph());
  const autograph::AtenGraph& cut = *sub.graph.aten_graph();
  ASSERT_EQ(sub.inputs.size(), 2u);  // x and w, in the order the stage reads them; the view t() comes along
  EXPECT_EQ(cut.nodes.size(), 3u);
  EXPECT_EQ(cut.outputs.size(), 2u);  // mm's and relu's outputs: the add after the stage reads them
  EXPECT_EQ(std::count(cut.input_is_weight.begin(), cut.input_is_weight.end(), true), 1);
  EXPECT_EQ(sub.mutated, std::vector<bool>(2, false));
  EXPECT_EQ(sub.schedule.stages.at(0).groups.size(), 2u);
  autograph::StageExecutor executor(sub.graph, sub.schedule, autograph::ExecutorOptions{});
  std::vector<c10::IValue> outputs = executor.Run(sub.inputs);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(torch::allclose(outputs[0].toTensor(), values[3].toTensor()));
  EXPECT_TRUE(torch::allclose(outputs[1].toTensor(), values[4].toTensor()));

  // Values recorded on another graph do not fit.
  EXPECT_THROW(autograph::ExtractStage(graph, Stage{StageStrategy::Concurrent, {{mm}}}, autograph::AtenValueRecord(3)),
               autograph::Error);
  EXPECT_THROW(autograph::RecordAtenValues(graph, {x}), autograph::InputError);  // one input short
  EXPECT_THROW(autograph::RecordAtenValues(OpGraph(), {x}), autograph::Error);  // no exported graph
}

TEST(MeasuredCostModelAten, SignatureNamesOperatorsAndShapesNotNumbers) {
  torch::NoGradGuard no_grad;
  auto signature = [](int64_t n, const std::string& op, StageStrategy strategy = StageStrategy::Concurrent) {
    OpGraph graph = autograph::ImportAtenGraph(AtenForkJoin(n));
    const autograph::AtenValueRecord values = autograph::RecordAtenValues(graph, {torch::randn({n, n}), torch::randn({n, n})});
    return autograph::StageSignature(graph, Stage{strategy, {{OpNamed(graph, op)}}}, values, "cpu:test");
  };
  const std::string mm = signature(4, "aten::mm");
  EXPECT_EQ(mm, signature(4, "aten::mm"));  // another graph, other tensors, same stage
  EXPECT_NE(mm, signature(5, "aten::mm"));
  EXPECT_NE(mm, signature(4, "aten::relu"));
  EXPECT_NE(mm, signature(4, "aten::mm", StageStrategy::Merge));
  EXPECT_NE(mm.find("aten::mm($0:T[4,4]Float, ~:T[4,4]Float"), std::string::npos) << mm;
  EXPECT_NE(mm.find("with aten::t"), std::string::npos) << mm;  // the folded view
  EXPECT_NE(mm.find("/s[1,4]"), std::string::npos) << mm;  // t()'s output is transposed
  const std::string add = signature(4, "aten::add");
  EXPECT_NE(add.find("alpha=c:1"), std::string::npos) << add;
}

TEST(MeasuredCostModelAten, MeasuresStagesOfAnExportedGraphOnceEach) {
  torch::NoGradGuard no_grad;
  OpGraph graph = autograph::ImportAtenGraph(AtenForkJoin(64));
  MeasuredCostModel model(graph, {torch::randn({64, 64}), torch::randn({64, 64})}, Quick());
  const int mm = OpNamed(graph, "aten::mm"), relu = OpNamed(graph, "aten::relu");
  EXPECT_TRUE(Sane(model.OperatorMs(graph, mm)));
  EXPECT_TRUE(Sane(model.StageMs(graph, Stage{StageStrategy::Concurrent, {{mm}, {relu}}})));
  EXPECT_EQ(model.measurements(), 2);
  EXPECT_TRUE(Sane(model.OperatorMs(graph, mm)));
  EXPECT_EQ(model.measurements(), 2);
  EXPECT_EQ(model.cache_hits(), 1);
  OpGraph other = autograph::ImportAtenGraph(AtenForkJoin(64));
  EXPECT_THROW(model.OperatorMs(other, mm), autograph::Error);  // bound to the graph it was built with
}

// Two linears of x whose weights are the program's (w1 [6, 8] with bias b1, w2 [5, 8] without).
std::shared_ptr<const autograph::AtenGraph> SiblingLinears() {
  const char* text = R"({"version": 1, "values": [
    {"tensor": true, "shape": [6, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [6], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [5, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 6], "stride": [6, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 5], "stride": [5, 1], "dtype": "Float"}],
  "inputs": [0, 1, 2, 3], "weights": [true, true, true, false],
  "nodes": [
    {"op": "aten::linear", "overload": "default", "name": "a", "args": [{"value": 3}, {"value": 0}, {"value": 1}], "kwargs": {}, "outputs": [4]},
    {"op": "aten::linear", "overload": "default", "name": "b", "args": [{"value": 3}, {"value": 2}], "kwargs": {}, "outputs": [5]}],
  "outputs": [4, 5]})";
  return std::make_shared<const autograph::AtenGraph>(autograph::AtenGraph::FromJson(nlohmann::json::parse(text)));
}

TEST(MeasuredCostModelAten, AMergeStageIsCutOutWithItsWeightsAndTimed) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> tensors = {torch::randn({6, 8}), torch::randn({6}), torch::randn({5, 8}),
                                              torch::randn({3, 8})};
  OpGraph graph = autograph::ImportAtenGraph(SiblingLinears());
  for (int id = 0; id < graph.size(); ++id) graph.node(id).merge = autograph::DescribeAtenMergeCandidate(graph, id, tensors);
  const Stage merge{StageStrategy::Merge, {{0}, {1}}};
  const autograph::AtenValueRecord values = autograph::RecordAtenValues(graph, {tensors.begin(), tensors.end()});
  autograph::StageSubgraph sub = autograph::ExtractStage(graph, merge, values);
  // The stage reads x first, then the weights: each candidate names its weight's position there.
  const autograph::AtenGraph& cut = *sub.graph.aten_graph();
  for (int id = 0; id < sub.graph.size(); ++id) {
    const autograph::MergeCandidate& c = sub.graph.node(id).merge;
    ASSERT_GE(c.weight_input, 0);
    EXPECT_TRUE(cut.input_is_weight.at(c.weight_input));
    EXPECT_TRUE(sub.inputs.at(c.weight_input).toTensor().is_same(c.weight));
  }
  autograph::StageExecutor executor(sub.graph, sub.schedule, autograph::ExecutorOptions{});
  std::vector<c10::IValue> outputs = executor.Run(sub.inputs);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_TRUE(torch::allclose(outputs[0].toTensor(), torch::linear(tensors[3], tensors[0], tensors[1]), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(outputs[1].toTensor(), torch::linear(tensors[3], tensors[2]), 1e-5, 1e-6));
  MeasuredCostModel model(graph, {tensors.begin(), tensors.end()}, Quick());
  EXPECT_TRUE(Sane(model.StageMs(graph, merge)));
}

}  // namespace
