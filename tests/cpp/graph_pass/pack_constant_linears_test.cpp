// PackConstantLinears: a linear with a constant float32 matrix weight calls autograph::packed_linear
// (the weight packed once, for the faster of MKL's and oneDNN's GEMM) and computes what it did; a
// linear whose weight is an input, or not float32, stays aten::linear.
#include "graph_pass/pack_constant_linears.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include "graph_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

// Another GEMM (MKL's packed one or oneDNN's) sums in another order than aten::linear's: float32
// rounding of sums of 32 products, well under 1e-5 of the output's scale.
void ExpectClose(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * want.abs().max().item<double>() + 1e-6);
}

const char* kTwoLinears = R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor, %w2 : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %b)
  %r : Tensor = aten::relu(%y)
  %z : Tensor = aten::linear(%r, %w2, %none)
  return (%z))IR";

TEST(PackConstantLinears, LinearsWithConstantWeightsCallPackedLinearAndComputeTheSame) {
  auto graph = GraphWithConstants(kTwoLinears, {{"w", torch::randn({16, 32}) * 0.2},
                                                {"b", torch::randn({16})},
                                                {"w2", torch::randn({8, 16}) * 0.2}});
  // Rows of the first call (packed for), then other row counts and a 3-d input.
  const std::vector<at::Tensor> inputs = {torch::randn({4, 32}), torch::randn({7, 32}), torch::randn({2, 5, 32})};
  std::vector<at::Tensor> want;
  for (const at::Tensor& x : inputs) want.push_back(RunGraph(graph, {x})[0]);
  EXPECT_EQ(autograph::PackConstantLinears(graph), 2);
  graph->lint();
  FileCheck().check("autograph::packed_linear")->check("aten::relu")->check("autograph::packed_linear")
      ->check_not("aten::linear")->run(*graph);
  for (size_t i = 0; i < inputs.size(); ++i) ExpectClose(RunGraph(graph, {inputs[i]})[0], want[i]);
}

TEST(PackConstantLinears, WeightsThatAreInputsOrNotFloat32StayAtenLinear) {
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %xd : Tensor, %wd : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  %z : Tensor = aten::linear(%xd, %wd, %none)
  return (%y, %z))IR",
                                  {{"wd", torch::randn({4, 3}, torch::kDouble)}});
  EXPECT_EQ(autograph::PackConstantLinears(graph), 0);  // %w is an input; %wd is float64
  FileCheck().check_count("aten::linear", 2)->check_not("packed_linear")->run(*graph);
}

}  // namespace
