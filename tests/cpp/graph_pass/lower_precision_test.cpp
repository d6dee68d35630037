// LowerMatmulsAndConvolutions and ChooseLoweredOperators: matrix products and convolutions compute in
// bf16 with float32 around them (inputs, outputs, everything else), constant weights stored lowered
// once, an operand read by sibling products cast once (unless written in place), integer work left
// alone; where the whole graph misses the tolerance, the runs of operators chosen keep it.
// Tolerances: bf16 keeps 8 significant bits, so one product of these sizes moves its result by about
// 2^-8 = 3.9e-3 of its scale; 3e-2 admits that with room and 1e-6 cannot.
#include "graph_pass/lower_precision.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/torch.h>

#include "autograph/error.h"
#include "core/output_error.h"
#include "graph_pass/choose_lowered_operators.h"
#include "graph_pass/graph_values.h"
#include "graph_test_util.h"

namespace {

using torch::jit::testing::FileCheck;

// Two linears read x (siblings), a matmul multiplies their results, relu and a sum stay float32.
const char* kSiblings = R"IR(
graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor, %b : Tensor):
  %none : NoneType = prim::Constant()
  %q : Tensor = aten::linear(%x, %w1, %b)
  %k : Tensor = aten::linear(%x, %w2, %none)
  %one : int = prim::Constant[value=1]()
  %zero : int = prim::Constant[value=0]()
  %kt : Tensor = aten::transpose(%k, %zero, %one)
  %s : Tensor = aten::matmul(%q, %kt)
  %r : Tensor = aten::relu(%s)
  return (%r))IR";

std::shared_ptr<torch::jit::Graph> Siblings() {
  torch::manual_seed(0);
  return GraphWithConstants(kSiblings, {{"w1", torch::randn({32, 64})}, {"w2", torch::randn({32, 64})},
                                        {"b", torch::randn({32})}});
}

int Count(const torch::jit::Graph& g, const char* kind) {
  int n = 0;
  for (const torch::jit::Node* node : g.nodes()) n += std::string(node->kind().toQualString()) == kind;
  return n;
}

TEST(LowerMatmulsAndConvolutions, ProductsComputeInBf16WithFloat32Around) {
  auto graph = Siblings();
  const at::Tensor x = torch::randn({16, 64});
  const auto want = RunGraph(graph, {x});
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {x});
  EXPECT_EQ(autograph::LowerableOperators(*graph, values).size(), 3u);
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(graph, values, at::kBFloat16), 3);
  graph->lint();
  // x is cast once for both linears; the two results and the matmul's come back to float32 (3), and
  // the matmul reads q and k^T cast again (2): 1 + 3 + 2 casts.
  EXPECT_EQ(Count(*graph, "aten::to"), 6);
  FileCheck().check("aten::to")->check("aten::linear")->check("aten::to")->check("aten::linear")->check("aten::matmul")
      ->check("aten::to")->check("aten::relu")->run(*graph);
  int lowered_weights = 0;
  for (const torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::prim::Constant && n->output()->type()->isSubtypeOf(*c10::TensorType::get())) {
      EXPECT_EQ(n->t(c10::attr::value).scalar_type(), at::kBFloat16) << "a float32 weight left behind";
      ++lowered_weights;
    }
  EXPECT_EQ(lowered_weights, 3);  // w1, w2, b
  const auto got = RunGraph(graph, {x});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].scalar_type(), at::kFloat);
  const double error = autograph::RelativeError(got, want);
  EXPECT_GT(error, 0.0) << "bf16 rounds";
  EXPECT_LT(error, 3e-2);
}

TEST(LowerMatmulsAndConvolutions, AnOperandWrittenInPlaceIsCastBeforeEachReader) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %a : Tensor = aten::linear(%x, %w, %none)
  %y : Tensor = aten::relu_(%x)
  %b : Tensor = aten::linear(%x, %w, %none)
  %one : int = prim::Constant[value=1]()
  %s : Tensor = aten::sub(%a, %b, %one)
  return (%s))IR";
  torch::manual_seed(0);
  auto graph = GraphWithConstants(ir, {{"w", torch::randn({8, 8})}});
  const at::Tensor x = torch::randn({4, 8});
  const auto want = RunGraph(graph, {x.clone()});
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {x.clone()});
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(graph, values, at::kBFloat16), 2);
  graph->lint();
  // Each linear reads x as it is at that point: one cast before each (2), one back after each (2). A
  // cast shared by both would give the second linear x before relu_, and a difference of 0.
  EXPECT_EQ(Count(*graph, "aten::to"), 4);
  const auto got = RunGraph(graph, {x.clone()});
  EXPECT_LT(autograph::RelativeError(got, want), 3e-2);
}

TEST(LowerMatmulsAndConvolutions, ALoweredResultWrittenInPlaceIsCastBeforeEachReader) {
  const char* ir = R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::linear(%x, %w, %none)
  %b : Tensor = aten::linear(%a, %w, %none)
  %r : Tensor = aten::relu_(%a)
  %c : Tensor = aten::linear(%a, %w, %none)
  %s : Tensor = aten::sub(%b, %c, %one)
  return (%s))IR";
  torch::manual_seed(0);
  auto graph = GraphWithConstants(ir, {{"w", torch::randn({8, 8})}});
  const at::Tensor x = torch::randn({4, 8});
  const auto want = RunGraph(graph, {x});
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {x});
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(graph, values, at::kBFloat16), 3);
  graph->lint();
  // x down (1); a, b, c back (3); a down before b and again, after relu_, before c (2). One cast of a
  // shared by b and c would give c the values before relu_.
  EXPECT_EQ(Count(*graph, "aten::to"), 6);
  EXPECT_LT(autograph::RelativeError(RunGraph(graph, {x}), want), 3e-2);
}

TEST(LowerMatmulsAndConvolutions, IntegerAndDoubleWorkStays) {
  const char* ir = R"IR(
graph(%x : Tensor, %y : Tensor):
  %a : Tensor = aten::mm(%x, %x)
  %b : Tensor = aten::mm(%y, %y)
  return (%a, %b))IR";
  auto graph = GraphWithConstants(ir, {});
  const at::Tensor x = torch::randint(0, 5, {4, 4}, torch::kLong), y = torch::randn({4, 4}, torch::kDouble);
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {x, y});
  EXPECT_TRUE(autograph::LowerableOperators(*graph, values).empty());
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(graph, values, at::kBFloat16), 0);
  EXPECT_EQ(Count(*graph, "aten::to"), 0);
}

TEST(LowerMatmulsAndConvolutions, OnlyTheChosenOperatorsAreLowered) {
  auto graph = Siblings();
  const at::Tensor x = torch::randn({16, 64});
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {x});
  const std::vector<bool> chosen = {false, false, true};  // the matmul alone
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(graph, values, at::kBFloat16, &chosen), 1);
  EXPECT_EQ(Count(*graph, "aten::to"), 3);  // q and k^T cast down, the product back
  const std::vector<bool> wrong = {true};
  auto other = Siblings();
  EXPECT_THROW(autograph::LowerMatmulsAndConvolutions(other, autograph::GraphValues::Record(other, {x}), at::kBFloat16,
                                                      &wrong),
               autograph::Error);
}

// A chain of square linears whose weights make every layer's rounding grow through the layers after
// it: lowering the first ones moves the output more than lowering the last ones.
std::shared_ptr<torch::jit::Graph> Chain(int layers) {
  std::string ir = "graph(%x : Tensor";
  for (int i = 0; i < layers; ++i) ir += ", %w" + std::to_string(i) + " : Tensor";
  ir += "):\n  %none : NoneType = prim::Constant()\n";
  std::string last = "%x";
  for (int i = 0; i < layers; ++i) {
    const std::string h = "%h" + std::to_string(i);
    ir += "  " + h + " : Tensor = aten::linear(" + last + ", %w" + std::to_string(i) + ", %none)\n";
    last = h;
  }
  ir += "  return (" + last + ")";
  std::map<std::string, at::Tensor> weights;
  torch::manual_seed(0);
  for (int i = 0; i < layers; ++i) weights["w" + std::to_string(i)] = torch::randn({64, 64}) / 8.0;
  return GraphWithConstants(ir, weights);
}

// Chain(layers) run on a 2 x 64 input.
autograph::GraphValues ChainRun(int layers) {
  auto graph = Chain(layers);  // seeds the generator, then draws the weights before the input
  return autograph::GraphValues::Record(graph, {torch::randn({2, 64})});
}

TEST(ChooseLoweredOperators, AllWhereTheWholeGraphStaysWithinTheTolerance) {
  const autograph::GraphValues values = ChainRun(4);
  autograph::LoweringRequest request;
  request.tolerance = 0.5;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowerable, 4);
  EXPECT_EQ(request.lowered, 4);
  EXPECT_EQ(request.error, request.whole_error);
  EXPECT_GT(request.whole_error, 0.0);
}

TEST(ChooseLoweredOperators, NoneWhereNoRunStaysWithinTheTolerance) {
  const autograph::GraphValues values = ChainRun(4);
  autograph::LoweringRequest request;
  request.tolerance = 1e-6;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowered, 0);
  EXPECT_EQ(request.error, -1);
  EXPECT_GT(request.whole_error, 1e-6);
  EXPECT_EQ(request.chosen, std::vector<bool>(4, false));
}

// Each of Chain(4)'s linears on a 2 x 64 input does 2 * 2 * 64 * 64 = 16384 FLOPs and moves
// 4 * (128 + 4096 + 128) = 17408 bytes: 0.94 FLOPs per byte, memory-bound on a device whose ridge is 1.
TEST(ChooseLoweredOperators, MemoryBoundOperatorsStayFloat32) {
  const autograph::GraphValues values = ChainRun(4);
  autograph::LoweringRequest request;
  request.tolerance = 0.5;
  request.least_flops_per_byte = 1.0;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowerable, 0);
  EXPECT_EQ(request.lowered, 0);
  EXPECT_EQ(request.whole_error, -1);
  EXPECT_EQ(request.chosen, std::vector<bool>(4, false));
  request.least_flops_per_byte = 0.9;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowered, 4);
}

TEST(ChooseLoweredOperators, WhereTheWholeGraphMissesTheRunsKeptStayWithinIt) {
  const autograph::GraphValues values = ChainRun(8);
  const auto& graph = values.graph();
  autograph::LoweringRequest probe;
  probe.tolerance = 1.0;
  autograph::ChooseLoweredOperators(values, &probe);
  ASSERT_GT(probe.whole_error, 0.0);
  autograph::LoweringRequest request;
  request.tolerance = probe.whole_error * 0.6;  // the whole graph misses; some runs fit
  request.runs = 4;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_GT(request.lowered, 0);
  EXPECT_LT(request.lowered, 8);
  EXPECT_LE(request.error, request.tolerance);
  EXPECT_EQ(request.lowered % 2, 0) << "runs of two operators each";
  // Each run tried, as the report lists it: its operators, whether kept lowered, the error measured.
  ASSERT_EQ(request.runs_tried.size(), 4u);
  int lowered = 0;
  for (const autograph::LoweredRun& run : request.runs_tried) {
    EXPECT_EQ(run.operators, 2);
    EXPECT_GT(run.flops, 0.0);
    if (run.lowered) {
      lowered += run.operators;
      EXPECT_LE(run.error, request.tolerance);
    } else {
      EXPECT_GT(run.error, request.tolerance);
    }
  }
  EXPECT_EQ(lowered, request.lowered);
  // What was chosen, lowered and run, is what the request says.
  auto copy = graph->copy();
  EXPECT_EQ(autograph::LowerMatmulsAndConvolutions(copy, values.ForCopy(copy), request.dtype, &request.chosen),
            request.lowered);
  const auto got = RunGraph(copy, {values.inputs()[0].toTensor()});
  const auto want = RunGraph(graph, {values.inputs()[0].toTensor()});
  EXPECT_NEAR(autograph::RelativeError(got, want), request.error, 1e-9);
}

// On zeros every trial's outputs are exact (zeros); on a calibration input they are not: its error counts
// as the example's does.
TEST(ChooseLoweredOperators, TheCalibrationInputsCountLikeTheExample) {
  auto graph = Chain(4);
  const autograph::GraphValues values = autograph::GraphValues::Record(graph, {torch::zeros({2, 64})});
  autograph::LoweringRequest request;
  request.tolerance = 1e-6;
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowered, 4);
  EXPECT_EQ(request.whole_error, 0.0);
  request.calibration = {{torch::randn({2, 64})}};
  autograph::ChooseLoweredOperators(values, &request);
  EXPECT_EQ(request.lowered, 0);
  EXPECT_GT(request.whole_error, 1e-6);
}

}  // namespace
