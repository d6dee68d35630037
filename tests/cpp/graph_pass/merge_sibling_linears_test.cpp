// MergeSiblingLinears: linears sharing an input with constant weights become one wider linear plus a
// split; the rewritten graph gives the original outputs. Weights are constants, as in frozen models.
#include "graph_pass/merge_sibling_linears.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <map>
#include <string>
#include <algorithm>
#include <vector>

#include "graph_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

// Same dot products, possibly blocked differently by a wider GEMM: float32 reordering of sums of 16
// products. Downstream, attention scores (sums of 16 products of values of a few units) go through
// a softmax, which carries that rounding on at ~1e-6 of the output's scale: 1e-5 of the scale
// bounds it (an absolute 1e-5 failed once at 1.8e-5 on outputs of scale ~5, in the ASan build,
// whose GEMM blocks differently).
void ExpectSameOutputs(const std::vector<at::Tensor>& want, const std::vector<at::Tensor>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(want[i].sizes(), got[i].sizes()) << "output " << i;
    const double scale = std::max(1.0, want[i].abs().max().item<double>());
    const double err = (want[i] - got[i]).abs().max().item<double>();
    EXPECT_LE(err, 1e-5 * scale) << "output " << i << " differs by " << err << " at scale " << scale;
  }
}

TEST(MergeSiblingLinears, QueryKeyValueBecomeOneLinearAndASplit) {
  torch::manual_seed(0);
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %wq : Tensor, %bq : Tensor, %wk : Tensor, %bk : Tensor, %wv : Tensor, %bv : Tensor):
  %m1 : int = prim::Constant[value=-1]()
  %m2 : int = prim::Constant[value=-2]()
  %none : NoneType = prim::Constant()
  %q : Tensor = aten::linear(%x, %wq, %bq)
  %k : Tensor = aten::linear(%x, %wk, %bk)
  %v : Tensor = aten::linear(%x, %wv, %bv)
  %kt : Tensor = aten::transpose(%k, %m1, %m2)
  %s : Tensor = aten::matmul(%q, %kt)
  %p : Tensor = aten::softmax(%s, %m1, %none)
  %o : Tensor = aten::matmul(%p, %v)
  return (%o))IR",
                                  {{"wq", torch::randn({8, 16})}, {"bq", torch::randn({8})},
                                   {"wk", torch::randn({8, 16})}, {"bk", torch::randn({8})},
                                   {"wv", torch::randn({12, 16})}, {"bv", torch::randn({12})}});
  const std::vector<at::Tensor> inputs = {torch::randn({2, 5, 16})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 2);
  graph->lint();
  FileCheck()
      .check_count("aten::linear", 1, /*exactly=*/true)
      ->check("aten::split_with_sizes")
      ->check("prim::ListUnpack")
      ->run(*graph);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 0);  // nothing left to merge
}

TEST(MergeSiblingLinears, MergesOnlyWhatOneGemmCanDo) {
  torch::manual_seed(1);
  // a + b + c: one group (c's view becomes a reshape); d + e: another (no bias; g's output is
  // written in place through a view, so g stays apart); f reads another input.
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %y : Tensor, %wa : Tensor, %wb : Tensor, %wc : Tensor, %wd : Tensor, %we : Tensor,
      %wf : Tensor, %wg : Tensor, %ba : Tensor, %bb : Tensor, %bc : Tensor):
  %none : NoneType = prim::Constant()
  %m1 : int = prim::Constant[value=-1]()
  %shape : int[] = prim::ListConstruct(%m1)
  %a : Tensor = aten::linear(%x, %wa, %ba)
  %b : Tensor = aten::linear(%x, %wb, %bb)
  %c0 : Tensor = aten::linear(%x, %wc, %bc)
  %c : Tensor = aten::view(%c0, %shape)
  %d : Tensor = aten::linear(%x, %wd, %none)
  %e : Tensor = aten::linear(%x, %we, %none)
  %f : Tensor = aten::linear(%y, %wf, %none)
  %g0 : Tensor = aten::linear(%x, %wg, %none)
  %g1 : Tensor = aten::view(%g0, %shape)
  %g : Tensor = aten::relu_(%g1)
  return (%a, %b, %c, %d, %e, %f, %g))IR",
                                  {{"wg", torch::randn({4, 16})},
                                   {"wa", torch::randn({4, 16})}, {"wb", torch::randn({4, 16})},
                                   {"wc", torch::randn({4, 16})}, {"wd", torch::randn({4, 16})},
                                   {"we", torch::randn({4, 16})}, {"wf", torch::randn({4, 8})},
                                   {"ba", torch::randn({4})}, {"bb", torch::randn({4})}, {"bc", torch::randn({4})}});
  const std::vector<at::Tensor> inputs = {torch::randn({3, 16}), torch::randn({3, 8})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 3);
  graph->lint();
  FileCheck().check_count("aten::linear", 4, /*exactly=*/true)->run(*graph);  // a+b+c, d+e, f, g
  FileCheck().check_count("aten::split_with_sizes", 2, /*exactly=*/true)->run(*graph);
  FileCheck().check_count("aten::view(", 1, /*exactly=*/true)->check("aten::relu_")->run(*graph);
  FileCheck().check_count("aten::reshape(", 1, /*exactly=*/true)->run(*graph);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
}

TEST(MergeSiblingLinears, GroupsReadingMergedOutputsMergeToo) {
  torch::manual_seed(2);
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %wa : Tensor, %wb : Tensor, %wc : Tensor, %wd : Tensor):
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::linear(%x, %wa, %none)
  %b : Tensor = aten::linear(%x, %wb, %none)
  %c : Tensor = aten::linear(%a, %wc, %none)
  %d : Tensor = aten::linear(%a, %wd, %none)
  return (%b, %c, %d))IR",
                                  {{"wa", torch::randn({6, 16})}, {"wb", torch::randn({6, 16})},
                                   {"wc", torch::randn({5, 6})}, {"wd", torch::randn({7, 6})}});
  const std::vector<at::Tensor> inputs = {torch::randn({2, 3, 16})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 2);
  graph->lint();
  FileCheck().check_count("aten::linear", 2, /*exactly=*/true)->run(*graph);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
}

}  // namespace

namespace {

// Tensor constants left in the graph: one per distinct concatenated weight.
int TensorConstants(const torch::jit::Graph& graph) {
  int count = 0;
  for (const torch::jit::Node* n : graph.nodes())
    count += n->kind() == c10::prim::Constant && n->output()->type()->cast<c10::TensorType>() != nullptr;
  return count;
}

TEST(MergeSiblingLinears, RepeatedLayersShareOneMergedWeight) {
  // The same two linears applied to two inputs (an unrolled RNN's steps): two merges, one copy of
  // the concatenated weight.
  torch::manual_seed(3);
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %y : Tensor, %wq : Tensor, %wk : Tensor):
  %none : NoneType = prim::Constant()
  %q1 : Tensor = aten::linear(%x, %wq, %none)
  %k1 : Tensor = aten::linear(%x, %wk, %none)
  %q2 : Tensor = aten::linear(%y, %wq, %none)
  %k2 : Tensor = aten::linear(%y, %wk, %none)
  return (%q1, %k1, %q2, %k2))IR",
                                  {{"wq", torch::randn({8, 16})}, {"wk", torch::randn({8, 16})}});
  const std::vector<at::Tensor> inputs = {torch::randn({3, 16}), torch::randn({3, 16})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 2);
  graph->lint();
  EXPECT_EQ(TensorConstants(*graph), 1);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
}

TEST(MergeSiblingLinears, StepsInAnotherOrderShareOneMergedWeight) {
  // The second step lists its linears in another graph order: still one concatenated weight.
  torch::manual_seed(4);
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %y : Tensor, %wq : Tensor, %wk : Tensor):
  %none : NoneType = prim::Constant()
  %q1 : Tensor = aten::linear(%x, %wq, %none)
  %k1 : Tensor = aten::linear(%x, %wk, %none)
  %k2 : Tensor = aten::linear(%y, %wk, %none)
  %q2 : Tensor = aten::linear(%y, %wq, %none)
  return (%q1, %k1, %q2, %k2))IR",
                                  {{"wq", torch::randn({8, 16})}, {"wk", torch::randn({5, 16})}});
  const std::vector<at::Tensor> inputs = {torch::randn({3, 16}), torch::randn({3, 16})};
  const auto want = RunGraph(graph, inputs);
  EXPECT_EQ(autograph::MergeSiblingLinears(graph), 2);
  graph->lint();
  EXPECT_EQ(TensorConstants(*graph), 1);
  ExpectSameOutputs(want, RunGraph(graph, inputs));
}

}  // namespace
