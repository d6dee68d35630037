// Fallback instead of refusal: an operator autograph knows nothing of is scheduled around like any
// other, operators with side effects keep their place, and a model autograph cannot take apart comes
// back unchanged with one warning and the reason in the report.
#include <gtest/gtest.h>
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/library.h>
#include <torch/script.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "autograph/optimize.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"

namespace {

// What autograph_test::mark saw, in order: the sum of the tensor it was given.
std::mutex marks_mutex;
std::vector<double> marks;

at::Tensor Offset(const at::Tensor& x, double c) { return x + c; }

at::Tensor Mark(const at::Tensor& x) {
  std::lock_guard<std::mutex> lock(marks_mutex);
  marks.push_back(x.sum().item<double>());
  return x.clone();
}

}  // namespace

// Operators of another library, unknown to autograph: a pure one (its schema says it) and one with
// side effects (conservative alias analysis: it may touch anything).
TORCH_LIBRARY(autograph_test, m) {
  m.def("offset(Tensor x, float c) -> Tensor", &Offset);
  m.def(torch::schema("mark(Tensor x) -> Tensor", c10::AliasAnalysisKind::CONSERVATIVE), &Mark);
}

namespace {

// `torch` is aten, `autograph_test` the test's library, as in Python's torch.ops.autograph_test.
struct TestResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    if (name == "torch") return std::make_shared<torch::jit::BuiltinModule>("aten");
    if (name == "autograph_test") return std::make_shared<torch::jit::BuiltinModule>("autograph_test");
    return nullptr;
  }
};

torch::jit::Module Scripted(const std::string& forward) {
  torch::jit::Module m("__torch__.FallbackModel");
  torch::manual_seed(0);
  m.register_parameter("w", torch::randn({8, 8}), false);
  m.register_parameter("v", torch::randn({8, 8}), false);
  m.define(forward, std::make_shared<TestResolver>());
  m.eval();
  return m;
}

autograph::OptimizeOptions Options(const std::string& method) {
  autograph::OptimizeOptions options;
  options.example_inputs = {torch::randn({4, 8})};
  options.search.method = method;
  options.substitutions.check_rewrites = false;
  options.search.verify = 0;
  return options;
}

class Fallback : public ::testing::TestWithParam<std::string> {};

TEST_P(Fallback, UnknownCustomOperatorIsScheduledAround) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(R"(
def forward(self, x: Tensor) -> Tensor:
    a = torch.relu(torch.matmul(x, self.w))
    b = autograph_test.offset(torch.matmul(x, self.v), 0.25)
    return torch.tanh(a) + torch.sigmoid(b)
)");
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(model, Options(GetParam()), &report);
  EXPECT_TRUE(report.fallback.empty()) << report.fallback;
  EXPECT_TRUE(report.left_to_torchscript.empty());
  EXPECT_GE(report.operators_optimized, 3);  // two matmuls and the custom op at least (the rest may be stitched)
  const at::Tensor x = torch::randn({4, 8});
  EXPECT_TRUE(torch::allclose(optimized.forward({x}).toTensor(), model.forward({x}).toTensor(), 1e-5, 1e-5));
}

// print() is a vararg operator: it reads its input count from the stack, as the interpreter pushes
// it (found from Python: a scripted model with a print failed with "expected int").
TEST_P(Fallback, PrintRunsWhereTheOriginalRunsIt) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(R"(
def forward(self, x: Tensor) -> Tensor:
    a = torch.relu(torch.matmul(x, self.w))
    print("autograph fallback test:", a.size(0))
    return a + 1
)");
  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(model, Options(GetParam()), &report);
  EXPECT_TRUE(report.fallback.empty()) << report.fallback;
  ASSERT_EQ(report.left_to_torchscript.size(), 1u);
  EXPECT_EQ(report.left_to_torchscript[0].op, "prim::Print");
  const at::Tensor x = torch::randn({4, 8});
  EXPECT_TRUE(torch::allclose(optimized.forward({x}).toTensor(), model.forward({x}).toTensor(), 1e-5, 1e-5));
}

// Two independent branches each mark what they computed: the marks order the graph, so the optimized
// module (which would otherwise put the branches on two streams, i.e. two CPU threads) marks in the
// original's order on every run.
TEST_P(Fallback, SideEffectsKeepTheirOrder) {
  torch::NoGradGuard no_grad;
  torch::jit::Module model = Scripted(R"(
def forward(self, x: Tensor) -> Tensor:
    a = autograph_test.mark(torch.relu(torch.matmul(x, self.w)))
    b = torch.sigmoid(torch.matmul(x, self.v))
    c = autograph_test.mark(b * 2.0)
    return a + c
)");
  // Each mark is a barrier of the operator graph: every other operator has a path to it or from it.
  const autograph::OpGraph graph =
      autograph::ImportOpGraph(autograph::LowerModule(model), {torch::randn({4, 8})});
  auto reaches = [&](int from, int to) {
    std::vector<int> todo = {from};
    std::vector<bool> seen(graph.size(), false);
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      if (v == to) return true;
      for (int w : graph.succs(v))
        if (!seen[w]) seen[w] = true, todo.push_back(w);
    }
    return false;
  };
  int barriers = 0;
  for (const autograph::OpNode& mark : graph.nodes()) {
    if (mark.op != "autograph_test::mark") continue;
    ++barriers;
    for (const autograph::OpNode& other : graph.nodes())
      if (other.id != mark.id) EXPECT_TRUE(reaches(other.id, mark.id) || reaches(mark.id, other.id)) << other.op;
  }
  EXPECT_EQ(barriers, 2);

  autograph::OptimizeReport report;
  torch::jit::Module optimized = autograph::optimize(model, Options(GetParam()), &report);
  ASSERT_EQ(report.left_to_torchscript.size(), 1u);
  EXPECT_EQ(report.left_to_torchscript[0].op, "autograph_test::mark");
  EXPECT_EQ(report.left_to_torchscript[0].count, 2);
  EXPECT_NE(report.left_to_torchscript[0].reason.find("side effects"), std::string::npos);
  for (int run = 0; run < 20; ++run) {
    const at::Tensor x = torch::randn({4, 8});
    marks.clear();
    const at::Tensor want = model.forward({x}).toTensor();
    const std::vector<double> want_marks = marks;
    marks.clear();
    EXPECT_TRUE(torch::allclose(optimized.forward({x}).toTensor(), want, 1e-5, 1e-5));
    ASSERT_EQ(marks.size(), 2u);
    EXPECT_NEAR(marks[0], want_marks[0], 1e-3 * std::max(1.0, std::abs(want_marks[0]))) << "run " << run;
    EXPECT_NEAR(marks[1], want_marks[1], 1e-3 * std::max(1.0, std::abs(want_marks[1]))) << "run " << run;
  }
}

TEST_P(Fallback, ModelThatCannotBeTakenApartComesBackUnchanged) {
  torch::jit::Module model("__torch__.Counter");
  model.register_attribute("count", c10::IntType::get(), 0);
  model.define(R"(
def forward(self, x: Tensor) -> Tensor:
    self.count += 1
    return x * self.count
)");
  autograph::OptimizeReport report;
  torch::jit::Module same;
  struct Warnings : c10::WarningHandler {
    std::vector<std::string> messages;
    void process(const c10::Warning& w) override { messages.push_back(w.msg()); }
  } warnings;
  {
    c10::WarningUtils::WarningHandlerGuard guard(&warnings);
    same = autograph::optimize(model, Options(GetParam()), &report);
  }
  ASSERT_EQ(warnings.messages.size(), 1u) << "one warning";
  EXPECT_NE(warnings.messages[0].find("returns the module unchanged"), std::string::npos) << warnings.messages[0];
  EXPECT_NE(report.fallback.find("reads the module after freezing"), std::string::npos) << report.fallback;
  EXPECT_EQ(same._ivalue(), model._ivalue()) << "the very module the caller gave";
  const at::Tensor x = torch::ones({2});
  EXPECT_TRUE(torch::equal(same.forward({x}).toTensor(), x * 1));
  EXPECT_EQ(model.attr("count").toInt(), 1) << "its state is the caller's";
}

INSTANTIATE_TEST_SUITE_P(Methods, Fallback, ::testing::Values("autograph", "nimble"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
