// PrepackForOneDnn: convolutions and linears with constant float weights run on prepacked oneDNN
// weights (as torch.jit.optimize_for_inference does), the operators between them stay in oneDNN's
// layout, and the prepacked weights are plain constants that serialize and load back.
#include "graph_pass/prepack_for_onednn.h"

#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include <filesystem>

#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "executor/graph_serialization.h"
#include "graph_pass/import_op_graph.h"
#include "graph_test_util.h"
#include "zoo_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

const char* kResidualBlock = R"IR(
graph(%x : Tensor, %w1 : Tensor, %b1 : Tensor, %w2 : Tensor):
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %p : int[] = prim::ListConstruct(%zero, %zero)
  %a : Tensor = aten::conv2d(%x, %w1, %b1, %s, %s, %s, %one)
  %ra : Tensor = aten::relu_(%a)
  %c : Tensor = aten::conv2d(%ra, %w2, %none, %s, %p, %s, %one)
  %sum : Tensor = aten::add_(%c, %x, %one)
  %out : Tensor = aten::relu_(%sum)
  return (%out))IR";

std::shared_ptr<torch::jit::Graph> ResidualBlock() {
  return GraphWithConstants(kResidualBlock, {{"w1", torch::randn({8, 8, 3, 3}) * 0.2},
                                             {"b1", torch::randn({8})},
                                             {"w2", torch::randn({8, 8, 1, 1}) * 0.3}});
}

int CountOneDnnConstants(const torch::jit::Graph& graph) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes())
    n += node->kind() == c10::prim::Constant && node->hasAttribute(c10::attr::value) &&
         node->kindOf(c10::attr::value) == torch::jit::AttributeKind::t && node->t(c10::attr::value).is_mkldnn();
  return n;
}

// oneDNN's blocked convolution sums in another order than ATen's path: float32 rounding of sums of
// 72 products, well under 1e-5 of the output's scale.
void ExpectClose(const at::Tensor& got, const at::Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_LE((got - want).abs().max().item<double>(), 1e-5 * want.abs().max().item<double>() + 1e-6);
}

TEST(PrepackForOneDnn, ResidualBlockRunsInOneDnnLayoutBetweenTwoConversions) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "PyTorch built without oneDNN";
  auto graph = ResidualBlock();
  const at::Tensor x = torch::randn({1, 8, 6, 6});
  const at::Tensor want = RunGraph(graph, {x})[0];
  EXPECT_EQ(autograph::PrepackForOneDnn(graph), 2);
  graph->lint();
  // One conversion in, one out: relu and the residual add run on oneDNN tensors in between.
  FileCheck()
      .check_count("aten::to_mkldnn", 1, /*exactly=*/true)
      ->check_count("prim::mkldnn_convolution", 2, /*exactly=*/true)
      ->check_count("aten::to_dense", 1, /*exactly=*/true)
      ->check_not("aten::conv2d")
      ->check_not("prim::ConstantMKLDNNTensor")
      ->run(*graph);
  EXPECT_EQ(CountOneDnnConstants(*graph), 3);  // two weights (reordered) and the bias
  ExpectClose(RunGraph(graph, {x})[0], want);
  // The search sees oneDNN convolutions as the convolutions they are.
  const autograph::OpGraph imported = autograph::ImportOpGraph(graph, {x});
  int convolutions = 0;
  for (const autograph::OpNode& n : imported.nodes())
    if (n.op == "prim::mkldnn_convolution") {
      EXPECT_EQ(n.kind, autograph::OpKind::ComputeBound);
      EXPECT_DOUBLE_EQ(n.flops, 2.0 * 8 * 6 * 6 * 8 * (convolutions == 0 ? 9 : 1));
      ++convolutions;
    }
  EXPECT_EQ(convolutions, 2);
}

// PyTorch 2.11's oneDNN regions start at convolutions only; a linear gets its weight transposed
// once (matmul on the transposed constant) instead of on every call.
TEST(PrepackForOneDnn, LinearReadsAPretransposedWeight) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "PyTorch built without oneDNN";
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %y : Tensor = aten::linear(%x, %w, %b)
  %z : Tensor = aten::relu(%y)
  return (%z))IR",
                                  {{"w", torch::randn({16, 32}) * 0.2}, {"b", torch::randn({16})}});
  const at::Tensor x = torch::randn({4, 32});
  const at::Tensor want = RunGraph(graph, {x})[0];
  EXPECT_EQ(autograph::PrepackForOneDnn(graph), 1);
  graph->lint();
  FileCheck().check("aten::matmul")->check_not("aten::linear")->run(*graph);
  ExpectClose(RunGraph(graph, {x})[0], want);
}

TEST(PrepackForOneDnn, GraphsWithoutConstantWeightsStayAsTheyAre) {
  auto graph = GraphWithConstants(R"IR(
graph(%x : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s : int[] = prim::ListConstruct(%one, %one)
  %y : Tensor = aten::conv2d(%x, %w, %none, %s, %s, %s, %one)
  %z : Tensor = aten::relu(%y)
  return (%z))IR",
                                  {});
  EXPECT_EQ(autograph::PrepackForOneDnn(graph), 0);  // the weight is an input: nothing to prepack
  FileCheck().check("aten::conv2d")->check("aten::relu")->check_not("mkldnn")->run(*graph);
}

TEST(PrepackForOneDnn, SerializedGraphRestoresReorderedWeights) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "PyTorch built without oneDNN";
  auto graph = ResidualBlock();
  autograph::PrepackForOneDnn(graph);
  const at::Tensor x = torch::randn({1, 8, 6, 6});
  const at::Tensor want = RunGraph(graph, {x})[0];
  autograph::SerializedGraph serialized = autograph::SerializeGraph(*graph);
  ASSERT_EQ(serialized.constant_layouts.size(), serialized.tensor_constants.size());
  int conv_weights = 0, plain = 0;
  for (size_t i = 0; i < serialized.tensor_constants.size(); ++i) {
    EXPECT_FALSE(serialized.tensor_constants[i].is_mkldnn()) << "constants travel dense";
    conv_weights += serialized.constant_layouts[i] == autograph::kOneDnnConvWeightLayout;
    plain += serialized.constant_layouts[i] == autograph::kOneDnnLayout;
  }
  EXPECT_EQ(conv_weights, 2);
  EXPECT_EQ(plain, 1);
  auto restored = autograph::DeserializeGraph(serialized);
  EXPECT_EQ(CountOneDnnConstants(*restored), 3);
  // The same reorder of the same weights: the same kernels, the same bits.
  EXPECT_TRUE(torch::equal(RunGraph(restored, {x})[0], want));
  serialized.constant_layouts[0] = "blocked_somehow";
  EXPECT_THROW(autograph::DeserializeGraph(serialized), autograph::Error);
}

// End to end on a zoo CNN: the default options keep the prepacked graph only when it measures
// faster, and the module saves and loads back with its oneDNN weights.
TEST(PrepackForOneDnn, OptimizedSqueezeNetSavesAndLoadsBack) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "PyTorch built without oneDNN";
  torch::NoGradGuard no_grad;
  torch::jit::Module module = autograph::LoadModule(autograph::testing::ZooModel("squeezenet"));
  module.eval();
  const at::Tensor x = torch::randn({1, 3, 64, 64});
  autograph::OptimizeOptions options;
  options.example_inputs = {x};
  options.search.method = "sequential";
  options.substitutions.check_rewrites = false;  // kept unmeasured: this test is about what the rewrite does
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(module, options, &report);
  EXPECT_EQ(report.ops_prepacked, 26);  // SqueezeNet's 26 convolutions
  const auto path = (std::filesystem::temp_directory_path() / "autograph_prepacked_squeezenet.pt").string();
  optimized.save(path);
  torch::jit::Module loaded = torch::jit::load(path);
  const at::Tensor want = module.forward({x}).toTensor();
  ExpectClose(loaded.forward({x}).toTensor(), want);
  EXPECT_TRUE(torch::equal(loaded.forward({x}).toTensor(), optimized.forward({x}).toTensor()));
  std::filesystem::remove(path);
}

}  // namespace
