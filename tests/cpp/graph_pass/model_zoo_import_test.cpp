// Every zoo model: lowering + import + the sequential executor reproduce the module's outputs, and
// the operator counts match the published figures.
#include <gtest/gtest.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include <filesystem>

#include "autograph/model_loading.h"
#include "core/graph_statistics.h"
#include "executor/sequential_executor.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "zoo_test_util.h"

namespace {

using autograph::testing::Flatten;
using autograph::testing::ZooModel;

struct ZooCase {
  std::string name;
  double published_gmac;  // convolution + GEMM multiply-adds
  const char* source;
};

std::ostream& operator<<(std::ostream& os, const ZooCase& c) { return os << c.name; }

class ModelZoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ModelZoo, SequentialExecutorReproducesOutputsAndFlops) {
  const ZooCase& c = GetParam();
  const std::string path = ZooModel(c.name);
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing: run models/export.py (scripts/test.sh does)";
  torch::NoGradGuard no_grad;
  torch::jit::Module module = autograph::LoadModule(path);
  auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));

  auto graph = autograph::LowerModule(module);
  autograph::OpGraph op_graph = autograph::ImportOpGraph(graph, inputs);
  auto ours = Flatten(autograph::SequentialExecutor(op_graph).Run(inputs));

  // Same lowered graph through the TorchScript interpreter: the same kernels on the same data, in
  // an order that differs only between independent operators, so the result must be bit-identical.
  torch::jit::Code code(graph, "lowered");
  torch::jit::Stack stack(inputs.begin(), inputs.end());
  torch::jit::InterpreterState(code).run(stack);
  auto lowered = Flatten(stack);

  // The original module: lowering folded batch norms into convolution weights, which changes
  // rounding by about one float32 ulp per folded layer (eps 1.2e-7); over a hundred layers that
  // stays orders of magnitude below the tolerance |a - b| <= 1e-4 + 1e-3 * max|reference|.
  module.eval();
  auto reference = Flatten({module.forward(inputs)});

  ASSERT_EQ(ours.size(), reference.size());
  ASSERT_EQ(ours.size(), lowered.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    EXPECT_TRUE(torch::equal(ours[i], lowered[i])) << "output " << i << " differs from the interpreter's";
    ASSERT_EQ(ours[i].sizes(), reference[i].sizes());
    double scale = reference[i].abs().max().item<double>();
    double error = (ours[i] - reference[i]).abs().max().item<double>();
    EXPECT_LE(error, 1e-4 + 1e-3 * scale) << "output " << i << " max|ref| " << scale;
  }

  double gmac = 0;
  for (const auto& n : op_graph.nodes())
    if (n.kind == autograph::OpKind::ComputeBound) gmac += n.flops / 2e9;
  EXPECT_NEAR(gmac, c.published_gmac, 0.03 * c.published_gmac) << c.source;
}

INSTANTIATE_TEST_SUITE_P(
    Zoo, ModelZoo,
    ::testing::Values(
        ZooCase{"resnet50", 4.09, "He et al. 2016 / torchvision: 4.09 GMAC at 224"},
        ZooCase{"resnext50_32x4d", 4.23, "torchvision: 4.23 GMAC at 224"},
        ZooCase{"inception_v3", 5.71, "torchvision: 5.71 GMAC at 299"},
        ZooCase{"squeezenet", 0.82, "torchvision squeezenet1_0: 0.82 GMAC"},
        ZooCase{"nasnet_a_large", 23.8, "Zoph et al. 2018: 23.8 G mult-adds at 331"},
        ZooCase{"nasnet_a_mobile", 0.564, "Zoph et al. 2018: 564 M mult-adds at 224"},
        ZooCase{"randwire", 0.583, "Xie et al. 2019, RandWire-WS small C=78: 583 M FLOPs (mult-adds)"},
        // BERT-base at 128 tokens: 12 x (4*768^2*128 + 2*128^2*768 + 2*768*3072*128) MAC.
        ZooCase{"bert_base", 11.17, "derived from the architecture (Devlin et al. 2019)"},
        // One SRU layer, 20 steps, three 1024x1024 linears per step, plus the 1024->2 classifier.
        ZooCase{"rnntc_sru", 0.0629, "derived from the architecture (MetaFlow RNNTC-SRU)"}),
    [](const ::testing::TestParamInfo<ZooCase>& info) { return info.param.name; });

TEST(ModelZooStructure, ResNet50HasTheExpectedOperators) {
  torch::NoGradGuard no_grad;
  const std::string path = ZooModel("resnet50");
  torch::jit::Module module = autograph::LoadModule(path);
  auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));
  auto s = autograph::ComputeStatistics(autograph::ImportOpGraph(autograph::LowerModule(module), inputs));
  EXPECT_EQ(s.ops_by_kind.at("compute"), 54);  // 53 convolutions (batch norms folded) + the classifier
  EXPECT_EQ(s.ops_by_kind.at("memory"), 67);   // 49 relu, 16 residual adds, max pool, average pool
  EXPECT_EQ(s.ops_by_kind.count("view"), 0u);  // flatten is a view folded into the classifier
  EXPECT_EQ(s.width, 2);                       // a downsample branch beside the main path
  EXPECT_EQ(s.ops_by_type.count("aten::batch_norm"), 0u);
}

}  // namespace
