// ExecutorOptions::full_float32 through CompiledGraph: a traced convolution holds cuDNN's TF32 switch as
// it was at trace time (aten::_convolution's allow_tf32 argument), which the process's switches cannot
// reach; the float32 reference reads it as false. What each node received is observed, so this runs
// on the CPU (where the argument changes no result).
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "executor/compiled_graph.h"

namespace {

using autograph::CompiledGraph;

std::shared_ptr<torch::jit::Graph> TracedConvolution() {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %no : bool = prim::Constant[value=0]()
  %yes : bool = prim::Constant[value=1]()
  %ones : int[] = prim::ListConstruct(%one, %one)
  %zeros : int[] = prim::ListConstruct(%zero, %zero)
  %y : Tensor = aten::_convolution(%x, %w, %none, %ones, %zeros, %ones, %no, %zeros, %one, %no, %no, %yes, %yes)
  %z : Tensor = aten::relu(%y)
  return (%z, %yes)
)IR",
                      graph.get());
  return graph;
}

// What the convolution's allow_tf32 argument (its 13th) was on a run, and the graph's outputs.
std::pair<bool, std::vector<c10::IValue>> RunTraced(bool full_float32) {
  const auto graph = TracedConvolution();
  std::vector<torch::jit::Node*> order;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() != c10::prim::Constant) order.push_back(n);
  const CompiledGraph compiled(graph, order, full_float32);
  bool allow_tf32 = false;
  CompiledGraph::Observer observer = [&](const torch::jit::Node* n, const std::vector<c10::IValue>& in,
                                         const std::vector<c10::IValue>&) {
    if (n->kind() == c10::Symbol::fromQualString("aten::_convolution")) allow_tf32 = in.at(12).toBool();
  };
  torch::manual_seed(0);
  auto outputs = compiled.Run({torch::randn({1, 2, 5, 5}), torch::randn({3, 2, 3, 3})}, &observer);
  return {allow_tf32, std::move(outputs)};
}

TEST(FullFloat32, ATracedConvolutionsOwnTf32SwitchReadsFalse) {
  const auto [as_traced, traced_outputs] = RunTraced(false);
  EXPECT_TRUE(as_traced) << "the graph as traced asks for TF32";
  const auto [full, full_outputs] = RunTraced(true);
  EXPECT_FALSE(full) << "the reference must not";
  // Only that argument: the same constant read elsewhere (the graph's second output) is untouched, and
  // on the CPU the convolution computes the same either way.
  EXPECT_TRUE(full_outputs.at(1).toBool());
  EXPECT_TRUE(torch::equal(full_outputs.at(0).toTensor(), traced_outputs.at(0).toTensor()));
}

}  // namespace
