// Merged linears: sibling linears as one wider GEMM equal the separate ones; which linears of a
// graph can merge, and why others cannot; a Merge stage of linears runs in the executor and gives
// the sequential outputs; and the search decides by cost whether the merged GEMM or the same GEMMs
// on streams is better.
#include "merge/merged_linear.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "autograph/error.h"
#include "core/schedule.h"
#include "executor/validate_schedule.h"
#include "executor/sequential_executor.h"
#include "executor/stage_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/merge_sibling_linears.h"
#include "graph_test_util.h"
#include "merge/merged_kernel.h"
#include "merge_schedule_util.h"
#include "search/autograph_schedule.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_model.h"
#include "search/simple_schedulers.h"
#include "zoo_test_util.h"

namespace {

using autograph::OpGraph;
using autograph::Schedule;
using autograph::StageStrategy;
using Classes = std::vector<std::vector<int>>;

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The same dot products (37 products of O(1) values), possibly blocked differently by the wider
// GEMM: float32 reordering error is far below 1e-5.
void ExpectClose(const at::Tensor& got, const at::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << what << " differs by " << (got - want).abs().max().item<float>();
}

TEST(MergedLinear, EqualsSeparateLinears) {
  torch::manual_seed(0);
  const std::vector<at::Tensor> weights = {torch::randn({5, 37}), torch::randn({11, 37}), torch::randn({3, 37})};
  const std::vector<std::optional<at::Tensor>> biases = {torch::randn({5}), std::nullopt, torch::randn({3})};
  const autograph::MergedLinear merged = autograph::MergeLinears(weights, biases);
  EXPECT_EQ(merged.weight.sizes(), (std::vector<int64_t>{19, 37}));
  EXPECT_EQ(merged.out_features, (std::vector<int64_t>{5, 11, 3}));
  // 2-D and 3-D inputs, odd sizes, and a non-contiguous (permuted) input.
  for (const at::Tensor& x :
       {torch::randn({7, 37}), torch::randn({2, 9, 37}), torch::randn({37, 2, 9}).permute({1, 2, 0})}) {
    const std::vector<at::Tensor> outputs = autograph::RunMergedLinear(x, merged);
    ASSERT_EQ(outputs.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
      ExpectClose(outputs[i], at::linear(x, weights[i], biases[i]), "linear " + std::to_string(i) + " of " + c10::str(x.sizes()));
  }
}

TEST(MergedLinear, RejectsLinearsThatDoNotFitWithTheReason) {
  const at::Tensor w = torch::randn({4, 6});
  auto error = [](const std::vector<at::Tensor>& weights, const std::vector<std::optional<at::Tensor>>& biases) {
    try {
      autograph::MergeLinears(weights, biases);
    } catch (const autograph::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_TRUE(Contains(error({w}, {std::nullopt}), "at least 2 weights"));
  EXPECT_TRUE(Contains(error({w, w}, {std::nullopt}), "2 weights but 1 biases"));
  EXPECT_TRUE(Contains(error({w, torch::randn({4, 5})}, {std::nullopt, std::nullopt}), "linear 1 takes 5 in-features"));
  EXPECT_TRUE(Contains(error({w, torch::randn({4, 6}, torch::kDouble)}, {std::nullopt, std::nullopt}), "Double"));
  EXPECT_TRUE(Contains(error({w, torch::randn({2, 3, 6})}, {std::nullopt, std::nullopt}), "3-D weight"));
  EXPECT_TRUE(Contains(error({w, w}, {torch::randn({5}), std::nullopt}), "linear 0 has a bias of shape [5]"));
}

// q, k (no bias), v read %x; f reads %y; g reads %x but its output is written in place; h reads
// %x with a weight computed at run time. Readers of the outputs: a view (of q), the graph's return
// (k), an add (v).
constexpr const char* kSiblingsIR = R"IR(
graph(%x : Tensor, %y : Tensor, %wh : Tensor, %wq : Tensor, %bq : Tensor, %wk : Tensor, %wv : Tensor, %bv : Tensor, %wf : Tensor, %wg : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %m1 : int = prim::Constant[value=-1]()
  %two : int = prim::Constant[value=2]()
  %q : Tensor = aten::linear(%x, %wq, %bq)
  %k : Tensor = aten::linear(%x, %wk, %none)
  %v : Tensor = aten::linear(%x, %wv, %bv)
  %f : Tensor = aten::linear(%y, %wf, %none)
  %g : Tensor = aten::linear(%x, %wg, %none)
  %g2 : Tensor = aten::relu_(%g)
  %wh2 : Tensor = aten::mul(%wh, %two)
  %h : Tensor = aten::linear(%x, %wh2, %none)
  %n0 : int = aten::size(%q, %one)
  %shape : int[] = prim::ListConstruct(%n0, %two, %m1)
  %qh : Tensor = aten::view(%q, %shape)
  %v1 : Tensor = aten::add(%v, %v, %one)
  return (%qh, %k, %v1, %f, %g2, %h))IR";

std::shared_ptr<torch::jit::Graph> Siblings() {
  torch::manual_seed(1);
  return GraphWithConstants(kSiblingsIR, {{"wq", torch::randn({8, 12})}, {"bq", torch::randn({8})},
                                          {"wk", torch::randn({6, 12})}, {"wv", torch::randn({10, 12})},
                                          {"bv", torch::randn({10})}, {"wf", torch::randn({4, 12})},
                                          {"wg", torch::randn({4, 12})}});
}

std::vector<c10::IValue> SiblingInputs(int64_t batch) {
  return {torch::randn({batch, 5, 12}), torch::randn({batch, 12}), torch::randn({3, 12})};
}

// The linear operators, in graph order (q, k, v, f, g, h).
std::vector<int> LinearOps(const OpGraph& graph) {
  std::vector<int> ids;
  for (const auto& n : graph.nodes())
    if (n.op == "aten::linear") ids.push_back(n.id);
  return ids;
}

TEST(MergeableLinears, ClassesShareAnInputAndSayWhyOthersDoNot) {
  auto lowered = Siblings();
  EXPECT_EQ(autograph::PrepareSiblingLinearsForMerging(lowered), 3);  // q, k, v (g is written in place)
  const OpGraph graph = autograph::ImportOpGraph(lowered, SiblingInputs(2));
  const std::vector<int> linears = LinearOps(graph);
  ASSERT_EQ(linears.size(), 6u);
  const int q = linears[0], k = linears[1], v = linears[2], f = linears[3], g = linears[4], h = linears[5];
  EXPECT_EQ(autograph::MergeableLinearClasses(graph), (Classes{{q, k, v}}));
  EXPECT_EQ(autograph::MergeableClasses(graph), (Classes{{q, k, v}}));  // no convolutions here
  std::string why;
  EXPECT_TRUE(autograph::CanMergeOps(graph, {v, q}, &why)) << why;
  EXPECT_FALSE(autograph::CanMergeOps(graph, {q, f}, &why));
  EXPECT_TRUE(Contains(why, "reads %y, but op " + std::to_string(q))) << why;
  EXPECT_FALSE(autograph::CanMergeOps(graph, {q, g}, &why));
  EXPECT_TRUE(Contains(why, "op " + std::to_string(g)) && Contains(why, "written in place")) << why;
  EXPECT_FALSE(autograph::CanMergeOps(graph, {q, h}, &why));
  EXPECT_TRUE(Contains(why, "op " + std::to_string(h)) && Contains(why, "computed at run time")) << why;
  EXPECT_FALSE(autograph::CanMergeOps(graph, {q}, &why));
  EXPECT_TRUE(Contains(why, "at least 2 operators")) << why;
  EXPECT_THROW(autograph::MergeOps(graph, {q, q}), autograph::Error);
}

TEST(MergeableLinears, MergeStageRunsAsOneGemmAndEqualsTheSequentialRun) {
  torch::NoGradGuard no_grad;
  for (int64_t batch : {1, 3}) {
    auto lowered = Siblings();
    autograph::PrepareSiblingLinearsForMerging(lowered);
    const std::vector<c10::IValue> inputs = SiblingInputs(batch);
    const OpGraph graph = autograph::ImportOpGraph(lowered, inputs);
    const Classes classes = autograph::MergeableClasses(graph);
    ASSERT_EQ(classes.size(), 1u);
    const auto reference = autograph::testing::Flatten(autograph::SequentialExecutor(graph).Run(inputs));
    for (int max_groups : {1, 3}) {
      const std::string what = "batch " + std::to_string(batch) + " max_groups " + std::to_string(max_groups);
      Schedule schedule = autograph::testing::ScheduleWithMergeStages(graph, classes, max_groups);
      autograph::ValidateSchedule(schedule, graph);
      autograph::StageExecutor executor(graph, schedule);
      ASSERT_EQ(executor.plan().merged.size(), 1u);
      // q's reader is a reshape (a view of the slice is fine), k is returned (own memory), v is added.
      EXPECT_EQ(executor.plan().merged[0].contiguous, (std::vector<bool>{false, true, false})) << what;
      // The merged weight is the memory the separate linears read (their weights are row views of
      // it), not a second copy.
      const auto& weight = std::get<autograph::MergedLinear>(executor.plan().merged[0].kernel).weight;
      const at::Tensor q_weight = torch::jit::toIValue(graph.node(classes[0][0]).anchor->input(1))->toTensor();
      EXPECT_TRUE(weight.storage().is_alias_of(q_weight.storage())) << what;
      EXPECT_EQ(autograph::KernelsLaunched(graph, schedule),
                autograph::KernelsLaunched(graph, autograph::SequentialSchedule(graph)) - 2) << what;
      const auto outputs = autograph::testing::Flatten(executor.Run(inputs));
      ASSERT_EQ(outputs.size(), reference.size());
      for (size_t i = 0; i < outputs.size(); ++i) ExpectClose(outputs[i], reference[i], what + " output " + std::to_string(i));
    }
  }
}

// Two steps of an RNN apply the same three linears to two inputs: the two Merge stages share one
// merged kernel, whose weight is the one tensor every linear reads a view of.
TEST(MergeableLinears, UnrolledStepsShareOneMergedWeight) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  auto lowered = GraphWithConstants(R"IR(
graph(%x0 : Tensor, %x1 : Tensor, %w : Tensor, %wf : Tensor, %bf : Tensor, %wr : Tensor, %br : Tensor):
  %none : NoneType = prim::Constant()
  %a0 : Tensor = aten::linear(%x0, %w, %none)
  %f0 : Tensor = aten::linear(%x0, %wf, %bf)
  %r0 : Tensor = aten::linear(%x0, %wr, %br)
  %a1 : Tensor = aten::linear(%x1, %w, %none)
  %f1 : Tensor = aten::linear(%x1, %wf, %bf)
  %r1 : Tensor = aten::linear(%x1, %wr, %br)
  return (%a0, %f0, %r0, %a1, %f1, %r1))IR",
                                    {{"w", torch::randn({6, 5})}, {"wf", torch::randn({6, 5})}, {"bf", torch::randn({6})},
                                     {"wr", torch::randn({6, 5})}, {"br", torch::randn({6})}});
  EXPECT_EQ(autograph::PrepareSiblingLinearsForMerging(lowered), 6);
  const std::vector<c10::IValue> inputs = {torch::randn({1, 5}), torch::randn({1, 5})};
  const OpGraph graph = autograph::ImportOpGraph(lowered, inputs);
  const Classes classes = autograph::MergeableClasses(graph);
  ASSERT_EQ(classes.size(), 2u);
  // The second step's stage lists its linears in another order: the kernel is shared all the same.
  Schedule schedule = autograph::testing::ScheduleWithMergeStages(graph, classes);
  for (auto& stage : schedule.stages)
    if (stage.strategy == StageStrategy::Merge && stage.groups[0][0] == classes[1][0])
      std::reverse(stage.groups.begin(), stage.groups.end());
  autograph::StageExecutor executor(graph, schedule);
  const auto& merged = executor.plan().merged;
  ASSERT_EQ(merged.size(), 2u);
  const auto& first = std::get<autograph::MergedLinear>(merged[0].kernel);
  const auto& second = std::get<autograph::MergedLinear>(merged[1].kernel);
  EXPECT_EQ(first.weight.data_ptr(), second.weight.data_ptr());
  EXPECT_EQ(first.weight.sizes(), (std::vector<int64_t>{18, 5}));
  const auto reference = autograph::testing::Flatten(autograph::SequentialExecutor(graph).Run(inputs));
  const auto outputs = autograph::testing::Flatten(executor.Run(inputs));
  ASSERT_EQ(outputs.size(), reference.size());
  for (size_t i = 0; i < outputs.size(); ++i) ExpectClose(outputs[i], reference[i], "output " + std::to_string(i));
}

// The second step lists the same linears in another graph order (stitching may move nodes): both
// steps still read views of one concatenation, not one copy each (three copies of an RNN's weights
// may not fit a CPU's last-level cache where one does).
TEST(MergeableLinears, StepsInAnotherOrderShareOneConcatenation) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(6);
  auto lowered = GraphWithConstants(R"IR(
graph(%x0 : Tensor, %x1 : Tensor, %w : Tensor, %wf : Tensor, %wr : Tensor):
  %none : NoneType = prim::Constant()
  %a0 : Tensor = aten::linear(%x0, %w, %none)
  %f0 : Tensor = aten::linear(%x0, %wf, %none)
  %r0 : Tensor = aten::linear(%x0, %wr, %none)
  %r1 : Tensor = aten::linear(%x1, %wr, %none)
  %a1 : Tensor = aten::linear(%x1, %w, %none)
  %f1 : Tensor = aten::linear(%x1, %wf, %none)
  return (%a0, %f0, %r0, %a1, %f1, %r1))IR",
                                    {{"w", torch::randn({6, 5})}, {"wf", torch::randn({4, 5})}, {"wr", torch::randn({3, 5})}});
  const std::vector<at::Tensor> inputs = {torch::randn({2, 5}), torch::randn({2, 5})};
  const auto want = RunGraph(lowered, inputs);
  EXPECT_EQ(autograph::PrepareSiblingLinearsForMerging(lowered), 6);
  lowered->lint();
  std::set<const torch::jit::Value*> weights;
  std::set<const void*> storages;
  for (const torch::jit::Node* n : lowered->nodes())
    if (n->kind() == c10::aten::linear) {
      weights.insert(n->input(1));
      storages.insert(torch::jit::toIValue(n->input(1))->toTensor().storage().data());
    }
  EXPECT_EQ(weights.size(), 3u);   // one row view per weight, read by both steps
  EXPECT_EQ(storages.size(), 1u);  // all of one concatenation
  const auto got = RunGraph(lowered, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ExpectClose(got[i], want[i], "output " + std::to_string(i));
}

// The analytical model with Merge stages scaled by `factor`: how much the merged GEMM is worth.
class ScaledMergeCost : public autograph::AnalyticalCostModel {
 public:
  explicit ScaledMergeCost(double factor)
      : AnalyticalCostModel(autograph::DeviceModel::ByName("h100")), factor_(factor) {}
  double StageMs(const OpGraph& graph, const autograph::Stage& stage) override {
    const double ms = AnalyticalCostModel::StageMs(graph, stage);
    return stage.strategy == StageStrategy::Merge ? ms * factor_ : ms;
  }

 private:
  double factor_;
};

// The search weighs the merged GEMM against the same GEMMs on streams per candidate: a merged
// kernel that costs little is chosen, one that costs much is not, and both schedules run correctly.
TEST(MergeableLinears, SearchChoosesTheMergedGemmOnlyWhereItPays) {
  torch::NoGradGuard no_grad;
  auto lowered = Siblings();
  autograph::PrepareSiblingLinearsForMerging(lowered);
  const std::vector<c10::IValue> inputs = SiblingInputs(2);
  const OpGraph graph = autograph::ImportOpGraph(lowered, inputs);
  const auto reference = autograph::testing::Flatten(autograph::SequentialExecutor(graph).Run(inputs));
  autograph::AutographOptions options;
  options.merge_classes = autograph::MergeableClasses(graph);
  std::vector<int> all(graph.size());
  for (int i = 0; i < graph.size(); ++i) all[i] = i;
  for (double factor : {0.1, 10.0}) {
    ScaledMergeCost cost(factor);
    const Schedule schedule = autograph::AutographBlockSchedules(graph, all, cost, options).at(0);
    const bool merged = std::any_of(schedule.stages.begin(), schedule.stages.end(),
                                    [](const autograph::Stage& s) { return s.strategy == StageStrategy::Merge; });
    EXPECT_EQ(merged, factor < 1) << "merge stages cost x" << factor;
    const auto outputs = autograph::testing::Flatten(autograph::StageExecutor(graph, schedule).Run(inputs));
    ASSERT_EQ(outputs.size(), reference.size());
    for (size_t i = 0; i < outputs.size(); ++i) ExpectClose(outputs[i], reference[i], "output " + std::to_string(i));
  }
}

}  // namespace
