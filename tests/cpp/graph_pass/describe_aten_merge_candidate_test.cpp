// Merges on an exported program's graph: which operators the import describes as merge candidates
// (their weights are inputs of the graph), schedules with Merge stages run on the dispatcher as ATen
// does, and an AtenProgram that merges binds the weights each run brings (again when they change).
#include "graph_pass/describe_aten_merge_candidate.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "autograph/error.h"
#include "merge_schedule_util.h"
#include "core/aten_graph.h"
#include "executor/aten_program.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_aten_graph.h"
#include "merge/merged_kernel.h"

namespace {

using autograph::AtenGraph;
using autograph::MergeCandidate;
using autograph::OpGraph;
using nlohmann::json;

// x [2,8,5,5] -> conv2d(w1 1x1, b1) -> relu ; conv2d(w2 3x3, b2, padding 1) -> sigmoid (siblings)
// y [3,8] -> linear(w3, b3) ; linear(w4, no bias) (siblings)
const char* kGraph = R"JSON({
  "version": 1,
  "values": [
    {"tensor": true, "shape": [4, 8, 1, 1], "stride": [8, 1, 1, 1], "dtype": "Float"},
    {"tensor": true, "shape": [4], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [6, 8, 3, 3], "stride": [72, 9, 3, 1], "dtype": "Float"},
    {"tensor": true, "shape": [6], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [5, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [5], "stride": [1], "dtype": "Float"},
    {"tensor": true, "shape": [7, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 8, 5, 5], "stride": [200, 25, 5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 8], "stride": [8, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4, 5, 5], "stride": [100, 25, 5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 6, 5, 5], "stride": [150, 25, 5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 4, 5, 5], "stride": [100, 25, 5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [2, 6, 5, 5], "stride": [150, 25, 5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 5], "stride": [5, 1], "dtype": "Float"},
    {"tensor": true, "shape": [3, 7], "stride": [7, 1], "dtype": "Float"}
  ],
  "inputs": [0, 1, 2, 3, 4, 5, 6, 7, 8],
  "weights": [true, true, true, true, true, true, true, false, false],
  "nodes": [
    {"op": "aten::conv2d", "overload": "default", "name": "conv_a", "args": [{"value": 7}, {"value": 0}, {"value": 1}], "kwargs": {}, "outputs": [9]},
    {"op": "aten::conv2d", "overload": "default", "name": "conv_b", "args": [{"value": 7}, {"value": 2}, {"value": 3}, {"ints": [1, 1]}, {"ints": [1, 1]}], "kwargs": {}, "outputs": [10]},
    {"op": "aten::relu", "overload": "default", "name": "relu", "args": [{"value": 9}], "kwargs": {}, "outputs": [11]},
    {"op": "aten::sigmoid", "overload": "default", "name": "sigmoid", "args": [{"value": 10}], "kwargs": {}, "outputs": [12]},
    {"op": "aten::linear", "overload": "default", "name": "linear_c", "args": [{"value": 8}, {"value": 4}, {"value": 5}], "kwargs": {}, "outputs": [13]},
    {"op": "aten::linear", "overload": "default", "name": "linear_d", "args": [{"value": 8}, {"value": 6}, null], "kwargs": {}, "outputs": [14]}
  ],
  "outputs": [11, 12, 13, 14]
})JSON";

std::shared_ptr<const AtenGraph> Graph(const std::string& text = kGraph) {
  return std::make_shared<const AtenGraph>(AtenGraph::FromJson(json::parse(text)));
}

std::string Replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::vector<torch::Tensor> Tensors(int seed = 0) {
  torch::manual_seed(seed);
  return {torch::randn({4, 8, 1, 1}), torch::randn({4}), torch::randn({6, 8, 3, 3}), torch::randn({6}),
          torch::randn({5, 8}),       torch::randn({5}), torch::randn({7, 8}),       torch::randn({2, 8, 5, 5}),
          torch::randn({3, 8})};
}

std::vector<torch::Tensor> Reference(const std::vector<torch::Tensor>& t) {
  return {torch::relu(torch::conv2d(t[7], t[0], t[1])), torch::sigmoid(torch::conv2d(t[7], t[2], t[3], 1, 1)),
          torch::linear(t[8], t[4], t[5]), torch::linear(t[8], t[6])};
}

OpGraph Described(std::shared_ptr<const AtenGraph> aten, const std::vector<torch::Tensor>& tensors) {
  OpGraph g = autograph::ImportAtenGraph(std::move(aten));
  for (int id = 0; id < g.size(); ++id) g.node(id).merge = autograph::DescribeAtenMergeCandidate(g, id, tensors);
  return g;
}

int OpNamed(const OpGraph& g, const std::string& name) {
  for (const auto& op : g.nodes())
    if (g.aten_graph()->nodes[op.aten_anchor].name == name) return op.id;
  ADD_FAILURE() << "no operator " << name;
  return -1;
}

void ExpectOutputs(const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  // Merged kernels sum the same products in another order (zero taps, wider GEMMs): float32 rounding.
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-5)) << "output " << i;
}

TEST(DescribeAtenMergeCandidate, ConvolutionsAndLinearsOnTheProgramsWeights) {
  const auto tensors = Tensors();
  OpGraph g = Described(Graph(), tensors);
  const MergeCandidate& a = g.node(OpNamed(g, "conv_a")).merge;
  const MergeCandidate& b = g.node(OpNamed(g, "conv_b")).merge;
  ASSERT_EQ(a.kind, MergeCandidate::Kind::Convolution) << a.problem;
  ASSERT_EQ(b.kind, MergeCandidate::Kind::Convolution) << b.problem;
  EXPECT_EQ(a.weight_input, 0);
  EXPECT_EQ(a.bias_input, 1);
  EXPECT_TRUE(a.weight.is_same(tensors[0]));
  EXPECT_EQ(a.padding, (std::vector<int64_t>{0, 0}));  // the schema's defaults
  EXPECT_EQ(a.stride, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(b.padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a.input, b.input);
  const MergeCandidate& c = g.node(OpNamed(g, "linear_c")).merge;
  const MergeCandidate& d = g.node(OpNamed(g, "linear_d")).merge;
  ASSERT_EQ(c.kind, MergeCandidate::Kind::Linear) << c.problem;
  ASSERT_EQ(d.kind, MergeCandidate::Kind::Linear) << d.problem;
  EXPECT_EQ(d.bias_input, -1);
  EXPECT_FALSE(d.bias.has_value());
  EXPECT_EQ(autograph::MergeableClasses(g).size(), 2u);
  EXPECT_EQ(g.node(OpNamed(g, "relu")).merge.kind, MergeCandidate::Kind::None);
}

TEST(DescribeAtenMergeCandidate, SaysWhyAnOperatorCannotMerge) {
  const auto tensors = Tensors();
  auto problem = [&](const std::string& text, const std::string& op) {
    OpGraph g = Described(Graph(text), tensors);
    const MergeCandidate& m = g.node(OpNamed(g, op)).merge;
    EXPECT_EQ(m.kind, MergeCandidate::Kind::None);
    return m.problem;
  };
  // A weight the caller passes (not a parameter of the program) changes from run to run.
  const std::string passed = problem(Replaced(kGraph, R"("weights": [true, true)", R"("weights": [false, true)"), "conv_a");
  EXPECT_NE(passed.find("passed by the caller"), std::string::npos) << passed;
  const std::string grouped = problem(Replaced(kGraph, R"({"value": 0}, {"value": 1}])",
                                               R"({"value": 0}, {"value": 1}, {"ints": [1, 1]}, {"ints": [0, 0]}, {"ints": [1, 1]}, 2])"),
                                      "conv_a");
  EXPECT_NE(grouped.find("groups = 2"), std::string::npos) << grouped;
  EXPECT_NE(grouped.find("conv"), std::string::npos) << grouped;  // names the operator
}

TEST(AtenMerge, MergeStagesComputeWhatATenDoes) {
  const auto tensors = Tensors();
  OpGraph g = Described(Graph(), tensors);
  const autograph::Schedule schedule = autograph::testing::ScheduleWithMergeStages(g, autograph::MergeableClasses(g), 2);
  int merges = 0;
  for (const auto& stage : schedule.stages) merges += stage.strategy == autograph::StageStrategy::Merge;
  ASSERT_EQ(merges, 2);
  autograph::StageExecutor executor(g, schedule);
  std::vector<c10::IValue> inputs(tensors.begin(), tensors.end());
  std::vector<torch::Tensor> got;
  for (const auto& v : executor.Run(inputs)) got.push_back(v.toTensor());
  ExpectOutputs(got, Reference(tensors));
  // Graph outputs are tensors of their own, not slices of the merged output.
  EXPECT_TRUE(got[2].is_contiguous());
  EXPECT_EQ(got[2].storage().nbytes(), got[2].nbytes());
}

TEST(AtenMerge, ProgramBindsTheWeightsEachRunBrings) {
  const auto tensors = Tensors();
  OpGraph g = Described(Graph(), tensors);
  const autograph::Schedule schedule = autograph::testing::ScheduleWithMergeStages(g, autograph::MergeableClasses(g));
  const std::string text = autograph::AtenProgram(g, schedule, {}).ToText();
  auto program = autograph::AtenProgram::FromText(text);  // merge candidates without tensors: bound on each run
  ExpectOutputs(program->Run(tensors), Reference(tensors));
  EXPECT_EQ(program->ToText(), text);

  // Weights written in place since: merged again, not the stale copy.
  std::vector<torch::Tensor> changed = tensors;
  {
    torch::NoGradGuard no_grad;
    changed[0].mul_(2);
    changed[6].add_(1);
  }
  ExpectOutputs(program->Run(changed), Reference(changed));
  // Other weight tensors (another exported program of the same text).
  const auto others = Tensors(1);
  ExpectOutputs(program->Run(others), Reference(others));
  ExpectOutputs(program->Run(changed), Reference(changed));
  // A weight of another shape than the program merged is refused, with what to do.
  std::vector<torch::Tensor> wrong = tensors;
  wrong[4] = torch::randn({5, 9});
  EXPECT_THROW(program->Run(wrong), autograph::InputError);
}

TEST(AtenMerge, ASavedMergeOfNoWeightIsACorruptedProgram) {
  const auto tensors = Tensors();
  OpGraph g = Described(Graph(), tensors);
  const autograph::Schedule schedule = autograph::testing::ScheduleWithMergeStages(g, autograph::MergeableClasses(g));
  for (int id = 0; id < g.size(); ++id)
    if (g.node(id).merge.weight_input == 4) g.node(id).merge.weight_input = 7;  // the user's x, not a weight
  try {
    autograph::AtenProgram::FromText(autograph::AtenProgram(g, schedule, {}).ToText());
    FAIL() << "a merge of the caller's tensor loaded";
  } catch (const autograph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("not one of the program's weights"), std::string::npos) << e.what();
  }
}

}  // namespace
