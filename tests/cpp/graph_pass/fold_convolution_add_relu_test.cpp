// FoldConvolutionAddRelu: conv2d + relu and conv2d + (residual) add + relu, in- or out-of-place,
// become cuDNN's fused ops when the weight is a constant and the intermediates have no other reader.
// The rewrite is checked on IR here; the fused ops run only on CUDA (numerics: the GPU test below).
#include "graph_pass/fold_convolution_add_relu.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "autograph/model_loading.h"
#include "graph_pass/lower_module.h"
#include "graph_test_util.h"
#include "zoo_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

const char* kResidualBlockEnd = R"IR(
graph(%x : Tensor, %identity : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %p : int[] = prim::ListConstruct(%zero, %zero)
  %a : Tensor = aten::conv2d(%x, %w1, %b1, %s, %s, %s, %one)
  %ra : Tensor = aten::relu_(%a)
  %c : Tensor = aten::conv2d(%ra, %w2, %none, %s, %p, %s, %one)
  %sum : Tensor = aten::add_(%c, %identity, %one)
  %out : Tensor = aten::relu_(%sum)
  return (%out))IR";

std::shared_ptr<torch::jit::Graph> ResidualBlockEnd() {
  return GraphWithConstants(kResidualBlockEnd,
                            {{"w1", torch::randn({8, 8, 3, 3})}, {"b1", torch::randn({8})}, {"w2", torch::randn({8, 8, 1, 1})}});
}

// The example inputs of kResidualBlockEnd: x and the residual, both 1x8x6x6.
std::vector<c10::IValue> ResidualInputs() { return {torch::randn({1, 8, 6, 6}), torch::randn({1, 8, 6, 6})}; }

TEST(FoldConvolutionAddRelu, ResidualBlockBecomesTwoFusedConvolutions) {
  auto graph = ResidualBlockEnd();
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, ResidualInputs()), 2);
  graph->lint();
  FileCheck()
      .check("aten::cudnn_convolution_relu")
      ->check("aten::cudnn_convolution_add_relu")
      ->check_not("aten::conv2d")
      ->check_not("aten::relu")
      ->check_not("aten::add")
      ->run(*graph);
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, ResidualInputs()), 0);
}

TEST(FoldConvolutionAddRelu, KeepsTheGraphsOwnTypes) {
  // The fold reads measured shapes from types it sets for the duration of the rewrite only.
  auto graph = ResidualBlockEnd();
  autograph::FoldConvolutionAddRelu(graph, ResidualInputs());
  for (const torch::jit::Node* node : graph->nodes())
    for (const torch::jit::Value* v : node->outputs())
      if (node->kind() != c10::prim::Constant)  // tensor constants are typed by their value
        if (auto t = v->type()->cast<c10::TensorType>()) EXPECT_FALSE(t->sizes().concrete_sizes()) << *node;
  for (const torch::jit::Value* v : graph->inputs()) EXPECT_EQ(*v->type(), *c10::TensorType::get());
}

// relu(conv + z) with z broadcast, promoted or a number: cuDNN's fused add takes none of them.
TEST(FoldConvolutionAddRelu, LeavesAddsThatBroadcastPromoteOrAddANumber) {
  const char* ir = R"IR(
graph(%x : Tensor, %z : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %sum : Tensor = aten::add(%c, %z, %one)
  %out : Tensor = aten::relu(%sum)
  return (%out))IR";
  const at::Tensor x = torch::randn({1, 4, 6, 6});
  struct Case {
    const char* what;
    c10::IValue z;
  };
  for (const Case& c : {Case{"per-channel z (broadcast)", torch::randn({4, 1, 1})},
                        Case{"z of another batch (broadcast)", torch::randn({3, 4, 6, 6})},
                        Case{"double z (promotes)", torch::randn({1, 4, 6, 6}, torch::kFloat64)}}) {
    auto graph = GraphWithConstants(ir, {{"w", torch::randn({4, 4, 3, 3})}});
    EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, {x, c.z}), 0) << c.what;
    FileCheck().check("aten::conv2d")->check("aten::add")->check("aten::relu")->run(*graph);
  }
  auto graph = GraphWithConstants(ir, {{"w", torch::randn({4, 4, 3, 3})}});
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, {x, torch::randn({1, 4, 6, 6})}), 1) << "same shape and dtype";

  // add.Scalar(conv, 2.5, 1): the same node kind and arity as add.Tensor.
  auto scalar = GraphWithConstants(R"IR(
graph(%x : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=2.5]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %sum : Tensor = aten::add(%c, %half, %one)
  %out : Tensor = aten::relu(%sum)
  return (%out))IR",
                                   {{"w", torch::randn({4, 4, 3, 3})}});
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(scalar, {x}), 0);
  FileCheck().check("aten::add")->check_not("cudnn_convolution")->run(*scalar);
}

TEST(FoldConvolutionAddRelu, ResidualFirstInTheAddFoldsWithAlphaOne) {
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %z : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %sum : Tensor = aten::add(%z, %c, %one)
  %out : Tensor = aten::relu(%sum)
  %c2 : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %sum2 : Tensor = aten::add(%z, %c2, %two)
  %out2 : Tensor = aten::relu(%sum2)
  return (%out, %out2))IR",
                                  {{"w", torch::randn({4, 4, 3, 3})}});
  // z + 2 * conv is not relu(conv + alpha * z + bias): only the first folds.
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, {torch::randn({1, 4, 6, 6}), torch::randn({1, 4, 6, 6})}), 1);
  graph->lint();
  FileCheck().check_count("aten::cudnn_convolution_add_relu", 1, /*exactly=*/true)->check("aten::conv2d")->run(*graph);
}

TEST(FoldConvolutionAddRelu, LeavesSharedIntermediatesAndRuntimeWeightsAlone) {
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %v : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %c : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %r : Tensor = aten::relu(%c)
  %d : Tensor = aten::conv2d(%x, %v, %none, %s, %s, %s, %one)
  %q : Tensor = aten::relu(%d)
  return (%r, %c, %q))IR",
                                  {{"w", torch::randn({4, 4, 3, 3})}});
  // %c is also a graph output (the relu must not replace it); %v is not a constant.
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, {torch::randn({1, 4, 6, 6}), torch::randn({4, 4, 3, 3})}), 0);
  FileCheck().check_not("cudnn_convolution")->run(*graph);
}

TEST(FoldConvolutionAddRelu, TracedResNet50FoldsEveryBlockEnding) {
  // Traced convolutions are aten::_convolution; the stem and two convolutions per bottleneck end in
  // relu (1 + 2 * 16), and each bottleneck's last convolution in the residual add + relu (16).
  const std::string path = autograph::testing::ZooModel("resnet50");
  auto graph = autograph::LowerModule(autograph::LoadModule(path));
  const auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));
  EXPECT_EQ(autograph::FoldConvolutionAddRelu(graph, inputs), 49);
  graph->lint();
  FileCheck()
      .check_count("aten::cudnn_convolution_relu", 33, /*exactly=*/true)
      ->run(*graph);
  FileCheck().check_count("aten::cudnn_convolution_add_relu", 16, /*exactly=*/true)->check_not("aten::relu")->run(*graph);
}

TEST(FoldConvolutionAddRelu, FusedKernelsEqualTheOriginalOnCuda) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device: the fused cuDNN ops have no CPU kernel";
  torch::manual_seed(3);
  const auto cuda = torch::kCUDA;
  auto graph = GraphWithConstants(kResidualBlockEnd, {{"w1", torch::randn({8, 8, 3, 3}, cuda)},
                                                      {"b1", torch::randn({8}, cuda)},
                                                      {"w2", torch::randn({8, 8, 1, 1}, cuda)}});
  const std::vector<at::Tensor> inputs = {torch::randn({2, 8, 12, 12}, cuda), torch::randn({2, 8, 12, 12}, cuda)};
  // Inputs are cloned: the original graph writes in place (add_, relu_) into its own intermediates only.
  const auto want = RunGraph(graph, {inputs[0].clone(), inputs[1].clone()});
  ASSERT_EQ(autograph::FoldConvolutionAddRelu(graph, {inputs[0], inputs[1]}), 2);
  const auto got = RunGraph(graph, {inputs[0].clone(), inputs[1].clone()});
  // cuDNN may pick TF32 / other algorithms for the fused kernel: sums of 72 products of N(0,1)
  // values, compared at 1e-2 relative to the output's scale.
  const double scale = want[0].abs().max().item<double>();
  EXPECT_LE((want[0] - got[0]).abs().max().item<double>(), 1e-2 * scale);
}

}  // namespace
