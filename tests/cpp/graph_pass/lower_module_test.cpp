// Lowering: IR-level checks of LowerFrozenGraph, and LowerModule on modules defined in TorchScript.
#include "graph_pass/lower_module.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "autograph/error.h"

namespace {

using torch::jit::testing::FileCheck;

TEST(LowerFrozenGraph, RemovesDropoutDuplicatesAndDeadCode) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(R"IR(
graph(%x : Tensor):
  %false : bool = prim::Constant[value=0]()
  %p : float = prim::Constant[value=0.5]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %x)
  %d : Tensor = aten::dropout(%a, %p, %false)
  %r : Tensor = aten::relu_(%d)
  %s : Tensor = aten::sin(%x)
  %s2 : Tensor = aten::sin(%x)
  %c : Tensor = aten::add(%r, %s, %one)
  %e : Tensor = aten::add(%c, %s2, %one)
  %unused : Tensor = aten::sigmoid(%x)
  return (%e))IR",
                      graph.get());
  autograph::LowerFrozenGraph(graph);
  FileCheck()
      .check("aten::mul")
      ->check_not("aten::dropout")
      ->check("aten::relu_(")  // stays in place, now on the dropout's input
      ->run(*graph);
  FileCheck().check_count("aten::sin", 1, /*exactly=*/true)->check_not("aten::sigmoid")->run(*graph);
}

torch::jit::Module ConvBatchNormModule() {
  torch::jit::Module m("ConvBn");
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("weight", torch::randn({8, 3, 3, 3}), false);
  m.register_parameter("bias", torch::randn({8}), false);
  m.register_buffer("mean", torch::randn({8}) * 0.1);
  m.register_buffer("var", torch::rand({8}) + 0.5);
  m.register_parameter("gamma", torch::rand({8}) + 0.5, false);
  m.register_parameter("beta", torch::randn({8}), false);
  m.define(R"JIT(
    def forward(self, x):
        y = torch.conv2d(x, self.weight, self.bias, [1, 1], [1, 1])
        y = torch.batch_norm(y, self.gamma, self.beta, self.mean, self.var, False, 0.1, 1e-5, False)
        y = torch.dropout(y, 0.2, self.training)
        return torch.relu_(y)
  )JIT");
  return m;
}

TEST(LowerModule, FreezesFoldsBatchNormAndDropsSelf) {
  torch::jit::Module m = ConvBatchNormModule();
  auto graph = autograph::LowerModule(m);
  ASSERT_EQ(graph->inputs().size(), 1u);  // x only: self is gone
  FileCheck()
      .check("aten::conv2d")
      ->check_not("aten::batch_norm")
      ->check_not("aten::dropout")
      ->check("aten::relu_(")
      ->run(*graph);
  EXPECT_TRUE(m.is_training()) << "the caller's module is left as it was";

  // Folding changes rounding only: float32, |error| <= 1e-5 on values of order 1 (a few ulps).
  torch::Tensor x = torch::randn({2, 3, 10, 10});
  m.eval();
  torch::Tensor expected = m.forward({x}).toTensor();
  torch::jit::Stack stack{x};
  torch::jit::GraphFunction("lowered", graph, nullptr).run(stack);
  EXPECT_TRUE(torch::allclose(stack[0].toTensor(), expected, /*rtol=*/1e-5, /*atol=*/1e-5));
}

TEST(LowerModule, ModuleThatMutatesItsStateIsRejected) {
  torch::jit::Module m("Counter");
  m.register_attribute("count", c10::IntType::get(), 0);
  m.define(R"JIT(
    def forward(self, x):
        self.count += 1
        return x * self.count
  )JIT");
  try {
    autograph::LowerModule(m);
    FAIL() << "expected UnsupportedModelError";
  } catch (const autograph::UnsupportedModelError& e) {
    EXPECT_NE(std::string(e.what()).find("reads the module after freezing"), std::string::npos) << e.what();
  }
}

}  // namespace
