// substitute: the TASO + JIT baseline — substitutions applied to the frozen graph, the result an
// ordinary TorchScript module that equals the original and survives save/load.
#include "autograph/substitute.h"

#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <sstream>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "zoo_test_util.h"

namespace {

at::Tensor First(const c10::IValue& out) {
  return autograph::testing::Flatten({out}).at(0);
}

TEST(Substitute, BertWithMergedLinearsIsAPlainModuleWithTheSameOutputs) {
  torch::NoGradGuard no_grad;
  torch::jit::Module bert = autograph::LoadModule(autograph::testing::ZooModel("bert_base"));
  bert.eval();
  const at::Tensor tokens = torch::randint(0, 30522, {1, 16});
  autograph::OptimizeOptions options;
  options.example_inputs = {tokens};
  options.substitutions.merge_linears = options.substitutions.regroup_convolutions = options.substitutions.fold_conv_relu = true;
  autograph::OptimizeReport report;
  torch::jit::Module substituted = autograph::substitute(bert, options, &report);
  EXPECT_EQ(report.linears_merged, 24);  // 12 layers: Q, K, V -> one linear
  EXPECT_EQ(report.convolutions_folded, 0);  // CPU: no cuDNN fold
  EXPECT_LE(report.operators_after, report.operators_before - 24);  // kernels, as optimize counts them (attention fused too)
  // The substitutions of optimize's rewrite registry alone: no CPU layout rewrite, no stitching.
  ASSERT_FALSE(report.rewrites.empty());
  for (const auto& decision : report.rewrites)
    EXPECT_TRUE(decision.name == "fuse_attention" || decision.name == "merge_linears" ||
                decision.name == "regroup_convolutions" || decision.name == "fold_conv_relu")
        << decision.name;
  const at::Tensor want = First(bert.forward({tokens}));
  const at::Tensor got = First(substituted.forward({tokens}));
  // Wider GEMMs block the same dot products differently through 12 layers: float32 rounding.
  EXPECT_LE((want - got).abs().max().item<double>(), 1e-4 * want.abs().max().item<double>());

  std::stringstream saved;
  substituted.save(saved);
  torch::jit::Module loaded = torch::jit::load(saved);
  EXPECT_TRUE(torch::equal(got, First(loaded.forward({tokens}))));
}

TEST(Substitute, NeedsExampleInputs) {
  torch::jit::Module bert = autograph::LoadModule(autograph::testing::ZooModel("bert_base"));
  EXPECT_THROW(autograph::substitute(bert, autograph::OptimizeOptions{}), autograph::InputError);
}

}  // namespace
