// RegroupGroupedConvolutions: a grouped convolution computed with fewer groups over a block-diagonal
// weight gives the same output; the pass rewrites only constant grouped conv2d nodes, and decides by
// timing unless told the group count.
#include "graph_pass/regroup_grouped_convolutions.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/lower_module.h"
#include "graph_test_util.h"
#include "zoo_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

// The regrouped conv adds exact zeros to the same products; only the summation order of float32
// products of N(0,1) values over <= 16 * 9 terms changes: well under 1e-4 absolute.
void ExpectClose(const at::Tensor& want, const at::Tensor& got) {
  ASSERT_EQ(want.sizes(), got.sizes());
  EXPECT_TRUE(torch::allclose(want, got, 1e-4, 1e-4)) << "max diff " << (want - got).abs().max().item<float>();
}

const char* kTwoGroupedConvs = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %w2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %eight : int = prim::Constant[value=8]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %a : Tensor = aten::conv2d(%x, %w, %b, %s, %s, %s, %eight)
  %r : Tensor = aten::relu(%a)
  %c : Tensor = aten::conv2d(%r, %w2, %none, %s, %s, %s, %eight)
  return (%c))IR";

std::shared_ptr<torch::jit::Graph> TwoGroupedConvs() {
  return GraphWithConstants(kTwoGroupedConvs, {{"w", torch::randn({16, 2, 3, 3})},
                                               {"b", torch::randn({16})},
                                               {"w2", torch::randn({32, 2, 3, 3})}});
}

TEST(RegroupGroupedConvolutions, BlockDiagonalWeightEqualsPerGroupConvolutions) {
  torch::manual_seed(0);
  const auto x = torch::randn({2, 24, 7, 9});
  const auto w = torch::randn({12, 4, 3, 3});  // 6 groups of 4 inputs -> 2 outputs
  const auto b = torch::randn({12});
  const auto want = torch::conv2d(x, w, b, 1, 1, 1, 6);
  for (int64_t factor : {2, 3, 6}) {
    const auto wide = autograph::BlockDiagonalWeight(w, 6, factor);
    EXPECT_EQ(wide.size(1), 4 * factor);
    ExpectClose(want, torch::conv2d(x, wide, b, 1, 1, 1, 6 / factor));
  }
  EXPECT_THROW(autograph::BlockDiagonalWeight(w, 6, 4), autograph::Error);
}

TEST(RegroupGroupedConvolutions, ForcedGroupCountRewritesEveryGroupedConv) {
  torch::manual_seed(1);
  auto graph = TwoGroupedConvs();
  const std::vector<at::Tensor> inputs = {torch::randn({1, 16, 10, 10})};
  const auto want = RunGraph(graph, inputs);
  autograph::RegroupOptions options;
  options.force_groups = 2;
  const auto report = autograph::RegroupGroupedConvolutions(graph, {inputs[0]}, options);
  graph->lint();
  EXPECT_EQ(report.grouped, 2);
  EXPECT_EQ(report.regrouped, 2);
  EXPECT_EQ(report.timed, 0);
  FileCheck()
      .check("prim::Constant[value=2]")
      ->check_count("aten::conv2d", 2, /*exactly=*/true)
      ->check_not("prim::Constant[value=8]")
      ->run(*graph);
  ExpectClose(want[0], RunGraph(graph, inputs)[0]);
  // A group count that does not divide the original leaves the convolution alone.
  auto other = TwoGroupedConvs();
  options.force_groups = 3;
  EXPECT_EQ(autograph::RegroupGroupedConvolutions(other, {inputs[0]}, options).regrouped, 0);
}

TEST(RegroupGroupedConvolutions, TimedDecisionKeepsOutputsAndTimesEachShapeOnce) {
  torch::manual_seed(2);
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %a : Tensor = aten::conv2d(%x, %w1, %none, %s, %s, %s, %four)
  %c : Tensor = aten::conv2d(%a, %w2, %none, %s, %s, %s, %four)
  return (%c))IR",
                                  {{"w1", torch::randn({8, 2, 3, 3})}, {"w2", torch::randn({8, 2, 3, 3})}});
  const std::vector<at::Tensor> inputs = {torch::randn({1, 8, 6, 6})};
  const auto want = RunGraph(graph, inputs);
  autograph::RegroupOptions options;
  options.warmup = 1;
  options.repeats = 3;
  const auto report = autograph::RegroupGroupedConvolutions(graph, {inputs[0]}, options);
  graph->lint();
  EXPECT_EQ(report.grouped, 2);
  EXPECT_EQ(report.timed, 1);  // both convolutions have one configuration
  ExpectClose(want[0], RunGraph(graph, inputs)[0]);
}

// Decisions taken per convolution are checked on the whole graph: a bar no graph can pass undoes
// every rewrite (the convolution has its 4 groups again), a bar every graph passes keeps them.
TEST(RegroupGroupedConvolutions, WholeGraphCheckKeepsOrUndoesTheRewrites) {
  torch::manual_seed(4);
  const std::string ir = R"IR(
graph(%x : Tensor, %w1 : Tensor):
  %one : int = prim::Constant[value=1]()
  %four : int = prim::Constant[value=4]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %a : Tensor = aten::conv2d(%x, %w1, %none, %s, %s, %s, %four)
  return (%a))IR";
  const at::Tensor w1 = torch::randn({8, 2, 3, 3});
  const std::vector<at::Tensor> inputs = {torch::randn({1, 8, 6, 6})};
  autograph::RegroupOptions options;
  options.warmup = 0;
  options.repeats = 2;
  options.keep_below = 1e9;  // every convolution's fastest candidate is taken
  for (double bar : {1e-9, 1e9}) {
    auto graph = GraphWithConstants(ir, {{"w1", w1}});
    options.keep_graph_below = bar;
    const auto report = autograph::RegroupGroupedConvolutions(graph, {inputs[0]}, options);
    graph->lint();
    EXPECT_GT(report.graph_ms, 0);
    EXPECT_GT(report.regrouped_graph_ms, 0);
    EXPECT_EQ(report.undone, bar < 1) << "bar " << bar;
    EXPECT_EQ(report.regrouped, bar < 1 ? 0 : 1) << "bar " << bar;
    int64_t groups = 0;
    for (const torch::jit::Node* n : graph->nodes())
      if (n->kind() == c10::aten::conv2d) groups = torch::jit::toIValue(n->input(6))->toInt();
    EXPECT_EQ(groups == 4, bar < 1) << "bar " << bar << ": the convolution has " << groups << " groups";
    ExpectClose(RunGraph(GraphWithConstants(ir, {{"w1", w1}}), inputs)[0], RunGraph(graph, inputs)[0]);
  }
}

TEST(RegroupGroupedConvolutions, LeavesOtherConvolutionsAlone) {
  // groups 1, a weight computed at run time, and a non-constant group count are not candidates.
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %v : Tensor, %g : int):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %a : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %b : Tensor = aten::conv2d(%x, %v, %none, %s, %s, %s, %two)
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %g)
  return (%a, %b, %c))IR",
                                  {{"w", torch::randn({4, 4, 3, 3})}});
  autograph::RegroupOptions options;
  options.force_groups = 1;
  EXPECT_EQ(autograph::RegroupGroupedConvolutions(graph, {}, options).grouped, 0);
}

TEST(RegroupGroupedConvolutions, ResNeXtWithEightGroupsEqualsTheOriginal) {
  // ResNeXt-50's 16 grouped 3x3 convolutions (32 groups) computed with 8, TASO's choice on a V100.
  const std::string path = autograph::testing::ZooModel("resnext50_32x4d");
  auto graph = autograph::LowerModule(autograph::LoadModule(path));
  auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));
  const auto want = RunGraph(graph, {inputs[0].toTensor()});
  autograph::RegroupOptions options;
  options.force_groups = 8;
  const auto report = autograph::RegroupGroupedConvolutions(graph, inputs, options);
  EXPECT_EQ(report.grouped, 16);
  EXPECT_EQ(report.regrouped, 16);
  // 50 layers of float32 sums reordered: relative to the logits' scale, 1e-4 (measured ~1e-6).
  const auto got = RunGraph(graph, {inputs[0].toTensor()});
  const double scale = want[0].abs().max().item<double>();
  EXPECT_LE((want[0] - got[0]).abs().max().item<double>(), 1e-4 * scale);
}

}  // namespace
