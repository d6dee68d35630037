// GraphValues: one recorded run of a graph that the passes read instead of running it again.
#include "graph_pass/graph_values.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/custom_operator.h>
#include <torch/torch.h>

#include <atomic>

#include "autograph/error.h"
#include "graph_pass/import_op_graph.h"

namespace {

std::atomic<int> g_counted_runs{0};

// An operator that counts its calls: how many times a pass ran the graph.
torch::jit::RegisterOperators counted_op({torch::jit::Operator(
    "autograph_test::counted(Tensor x) -> Tensor",
    [](torch::jit::Stack& stack) {
      ++g_counted_runs;
      at::Tensor x = torch::jit::pop(stack).toTensor();
      torch::jit::push(stack, x * 2);
    },
    c10::AliasAnalysisKind::FROM_SCHEMA)});

std::shared_ptr<torch::jit::Graph> Parse(const std::string& ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

const char* kForkJoin = R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = autograph_test::counted(%x)
  %c : Tensor = aten::add(%a, %b, %one)
  return (%c))IR";

torch::jit::Node* NodeOfKind(torch::jit::Graph& graph, const std::string& kind) {
  for (torch::jit::Node* n : graph.nodes())
    if (n->kind().toQualString() == kind) return n;
  return nullptr;
}

TEST(GraphValues, RecordsInputsNodeValuesAndOutputs) {
  auto graph = Parse(kForkJoin);
  at::Tensor x = torch::randn({2, 3});
  auto values = autograph::GraphValues::Record(graph, {x});
  ASSERT_EQ(values.outputs().size(), 1u);
  EXPECT_TRUE(values.outputs()[0].toTensor().allclose(torch::relu(x) + 2 * x));
  EXPECT_TRUE(values.TensorOf(graph->inputs()[0]).equal(x));
  torch::jit::Node* relu = NodeOfKind(*graph, "aten::relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_TRUE(values.TensorOf(relu->output()).equal(torch::relu(x)));
  const auto* relu_inputs = values.InputsOf(relu);
  ASSERT_NE(relu_inputs, nullptr);
  ASSERT_EQ(relu_inputs->size(), 1u);
  EXPECT_TRUE((*relu_inputs)[0].toTensor().equal(x));
  // Constants are read from the graph, not recorded.
  torch::jit::Node* add = NodeOfKind(*graph, "aten::add");
  EXPECT_EQ(values.Find(add->inputs()[2]), nullptr);
  EXPECT_TRUE(values.Fits(*graph));
}

TEST(GraphValues, PassesReadTheRecordWithoutRunningTheGraphAgain) {
  auto graph = Parse(kForkJoin);
  int before = g_counted_runs;
  auto values = autograph::GraphValues::Record(graph, {torch::randn({2, 3})});
  EXPECT_EQ(g_counted_runs - before, 1);
  autograph::OpGraph ops = autograph::ImportOpGraph(values);
  EXPECT_EQ(ops.nodes().size(), 3u);
  EXPECT_EQ(ops.nodes().at(2).outputs.at(0).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g_counted_runs - before, 1);  // the import read shapes from the record
}

TEST(GraphValues, ForCopyMatchesValuesByPosition) {
  auto graph = Parse(kForkJoin);
  at::Tensor x = torch::randn({4, 5});
  auto values = autograph::GraphValues::Record(graph, {x});
  int before = g_counted_runs;
  auto copy = graph->copy();
  auto copied = values.ForCopy(copy);
  EXPECT_EQ(g_counted_runs, before);  // no run
  EXPECT_TRUE(copied.Fits(*copy));
  EXPECT_FALSE(copied.Fits(*graph));
  EXPECT_FALSE(values.Fits(*copy));
  torch::jit::Node* relu = NodeOfKind(*copy, "aten::relu");
  EXPECT_TRUE(copied.TensorOf(relu->output()).equal(torch::relu(x)));
  ASSERT_NE(copied.InputsOf(relu), nullptr);
  EXPECT_EQ(copied.InputsOf(NodeOfKind(*graph, "aten::relu")), nullptr);
  EXPECT_TRUE(copied.outputs()[0].toTensor().equal(values.outputs()[0].toTensor()));
}

TEST(GraphValues, ARewriteMakesTheRecordStale) {
  auto graph = Parse(kForkJoin);
  auto values = autograph::GraphValues::Record(graph, {torch::randn({2, 3})});
  // Replace relu by sigmoid, as a pass would.
  torch::jit::Node* relu = NodeOfKind(*graph, "aten::relu");
  torch::jit::WithInsertPoint guard(relu);
  torch::jit::Value* sigmoid = graph->insert(c10::Symbol::fromQualString("aten::sigmoid"), {relu->input()});
  relu->output()->replaceAllUsesWith(sigmoid);
  relu->destroy();
  EXPECT_FALSE(values.Fits(*graph));
  EXPECT_THROW(values.CheckFits(*graph, "test pass"), autograph::Error);
  EXPECT_THROW(autograph::ImportOpGraph(values), autograph::Error);
  EXPECT_THROW(values.ForCopy(graph->copy()), autograph::Error);
  // Recording again describes the new graph.
  auto again = autograph::GraphValues::Record(graph, {torch::randn({2, 3})});
  EXPECT_TRUE(again.Fits(*graph));
  EXPECT_EQ(autograph::ImportOpGraph(again).nodes().at(0).op, "aten::sigmoid");
}

TEST(GraphValues, RewiringAnInputMakesTheRecordStale) {
  auto graph = Parse(kForkJoin);
  auto values = autograph::GraphValues::Record(graph, {torch::randn({2, 3})});
  torch::jit::Node* add = NodeOfKind(*graph, "aten::add");
  add->replaceInput(1, add->inputs()[0]);  // add(a, a): same nodes, other wiring
  EXPECT_FALSE(values.Fits(*graph));
}

TEST(GraphValues, InputsThatDoNotFitAreATypedError) {
  auto graph = Parse(kForkJoin);
  EXPECT_THROW(autograph::GraphValues::Record(graph, {}), autograph::Error);
  EXPECT_THROW(autograph::GraphValues::Record(graph, {torch::randn({2, 3}), torch::randn({2, 3})}), autograph::Error);
}

}  // namespace
