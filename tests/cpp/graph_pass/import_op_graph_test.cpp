// IR-level tests of ImportOpGraph: parse an IR string, import it on real inputs, check the grouping.
#include "graph_pass/import_op_graph.h"

#include <gtest/gtest.h>
#include <algorithm>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/torch.h>

#include "autograph/error.h"
#include "core/graph_statistics.h"
#include "executor/sequential_executor.h"

namespace {

using autograph::OpGraph;
using autograph::OpKind;

std::shared_ptr<torch::jit::Graph> Parse(const std::string& ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

std::vector<std::string> Ops(const OpGraph& g) {
  std::vector<std::string> ops;
  for (const auto& n : g.nodes()) ops.push_back(n.op);
  return ops;
}

TEST(ImportOpGraph, ForkJoinHasWidthTwo) {
  auto graph = Parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %b : Tensor = aten::sigmoid(%x)
  %c : Tensor = aten::add(%a, %b, %one)
  return (%c))IR");
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({2, 3})});
  EXPECT_EQ(Ops(g), (std::vector<std::string>{"aten::relu", "aten::sigmoid", "aten::add"}));
  auto s = autograph::ComputeStatistics(g);
  EXPECT_EQ(s.edges, 2);
  EXPECT_EQ(s.width, 2);
  EXPECT_EQ(s.critical_path_ops, 2);
  EXPECT_EQ(g.node(2).kind, OpKind::MemoryBound);
  EXPECT_EQ(g.node(2).outputs.at(0).shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.node(2).bytes_read, 2 * 6 * 4);
  EXPECT_EQ(g.node(2).bytes_written, 6 * 4);
}

TEST(ImportOpGraph, ViewsJoinProducerAndListsJoinConsumer) {
  // The view of %a belongs to relu (its only producer) so both linears may run in parallel; the
  // list built from two operators belongs to cat (its only consumer).
  auto graph = Parse(R"IR(
graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %minus1 : int = prim::Constant[value=-1]()
  %a : Tensor = aten::relu(%x)
  %n : int = aten::size(%a, %zero)
  %shape : int[] = prim::ListConstruct(%n, %minus1)
  %v : Tensor = aten::view(%a, %shape)
  %l1 : Tensor = aten::linear(%v, %w1, %none)
  %l2 : Tensor = aten::linear(%v, %w2, %none)
  %list : Tensor[] = prim::ListConstruct(%l1, %l2)
  %out : Tensor = aten::cat(%list, %zero)
  return (%out))IR");
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({4, 2, 3}), torch::randn({5, 6}), torch::randn({5, 6})});
  ASSERT_EQ(Ops(g), (std::vector<std::string>{"aten::relu", "aten::linear", "aten::linear", "aten::cat"}));
  EXPECT_EQ(g.node(0).jit_nodes.size(), 4u);  // relu, size, ListConstruct, view
  EXPECT_EQ(g.node(3).jit_nodes.size(), 2u);  // ListConstruct, cat
  EXPECT_EQ(g.node(1).kind, OpKind::ComputeBound);
  EXPECT_DOUBLE_EQ(g.node(1).flops, 2.0 * 4 * 5 * 6);
  EXPECT_EQ(g.node(1).weight_bytes, 0);  // weights are graph inputs here, not constants
  EXPECT_EQ(g.preds(3), (std::vector<int>{1, 2}));
  EXPECT_EQ(autograph::ComputeStatistics(g).width, 2);
}

TEST(ImportOpGraph, ReshapeThatCopiesIsAKernel) {
  auto graph = Parse(R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %minus1 : int = prim::Constant[value=-1]()
  %t : Tensor = aten::transpose(%x, %zero, %one)
  %shape : int[] = prim::ListConstruct(%minus1)
  %r : Tensor = aten::reshape(%t, %shape)
  %s : Tensor = aten::reshape(%x, %shape)
  %out : Tensor = aten::add(%r, %s, %one)
  return (%out))IR");
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({3, 4})});
  // transpose + reshape (a copy) is one memory-bound operator; the reshape of the contiguous input
  // is a view and joins add, its only consumer. The shape list (unfolded here, as no constant
  // propagation ran) feeds two operators, so it stands alone as a zero-cost view.
  ASSERT_EQ(Ops(g), (std::vector<std::string>{"prim::ListConstruct", "aten::reshape", "aten::add"}));
  EXPECT_EQ(g.node(0).kind, OpKind::View);
  EXPECT_EQ(g.node(1).kind, OpKind::MemoryBound);
  EXPECT_EQ(g.node(1).jit_nodes.size(), 2u);  // transpose, reshape
  EXPECT_EQ(g.node(2).kind, OpKind::MemoryBound);
  EXPECT_EQ(g.node(2).jit_nodes.size(), 2u);  // reshape (view), add
}

TEST(ImportOpGraph, InPlaceWriteOrdersEarlierReaders) {
  // sigmoid reads %a before relu_ overwrites it: the import must keep sigmoid before relu_.
  auto graph = Parse(R"IR(
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %x)
  %b : Tensor = aten::sigmoid(%a)
  %c : Tensor = aten::relu_(%a)
  %d : Tensor = aten::add(%c, %b, %one)
  return (%d))IR");
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({8})});
  ASSERT_EQ(Ops(g), (std::vector<std::string>{"aten::mul", "aten::sigmoid", "aten::relu_", "aten::add"}));
  EXPECT_EQ(g.preds(2), (std::vector<int>{0, 1}));
  torch::Tensor x = torch::randn({8});
  auto out = autograph::SequentialExecutor(g).Run({x});
  EXPECT_TRUE(torch::equal(out[0].toTensor(), torch::relu(x * x) + torch::sigmoid(x * x)));
}

TEST(ImportOpGraph, ViewAfterAnInPlaceWriteStandsAlone) {
  // MobileNetV3's pattern (found by the torchvision corpus on lraspp_mobilenet_v3_large): hardswish_
  // overwrites the conv's output, then size() reads that output. Joined to the conv's group, the size
  // would have to run both before hardswish_ (its group's anchor does) and after it (the write
  // orders it): a cycle. It stands alone, after the writer.
  auto graph = Parse(R"IR(
graph(%x : Tensor):
  %zero : int = prim::Constant[value=0]()
  %minus1 : int = prim::Constant[value=-1]()
  %a : Tensor = aten::sigmoid(%x)
  %b : Tensor = aten::hardswish_(%a)
  %n : int = aten::size(%a, %zero)
  %shape : int[] = prim::ListConstruct(%n, %minus1)
  %c : Tensor = aten::view(%b, %shape)
  %d : Tensor = aten::relu(%c)
  return (%d))IR");
  OpGraph g = autograph::ImportOpGraph(graph, {torch::randn({2, 3, 4})});
  const std::vector<std::string> ops = Ops(g);
  auto at = [&](const std::string& op) { return std::find(ops.begin(), ops.end(), op) - ops.begin(); };
  ASSERT_LT(at("aten::size"), static_cast<long>(ops.size()));
  EXPECT_LT(at("aten::sigmoid"), at("aten::hardswish_"));
  EXPECT_LT(at("aten::hardswish_"), at("aten::size"));
  EXPECT_EQ(g.node(at("aten::size")).kind, OpKind::View);
  auto preds = g.preds(static_cast<int>(at("aten::size")));
  EXPECT_NE(std::find(preds.begin(), preds.end(), at("aten::hardswish_")), preds.end());
}

TEST(ImportOpGraph, ControlFlowIsOneOpaqueOperator) {
  auto graph = Parse(R"IR(
graph(%x : Tensor, %flag : bool):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::relu(%x)
  %y : Tensor = prim::If(%flag)
    block0():
      %p : Tensor = aten::add(%a, %x, %one)
      -> (%p)
    block1():
      %q : Tensor = aten::mul(%a, %x)
      -> (%q)
  %z : Tensor = aten::neg(%y)
  return (%z))IR");
  torch::Tensor x = torch::randn({5});
  OpGraph g = autograph::ImportOpGraph(graph, {x, true});
  ASSERT_EQ(Ops(g), (std::vector<std::string>{"aten::relu", "prim::If", "aten::neg"}));
  EXPECT_EQ(g.node(1).kind, OpKind::ControlFlow);
  EXPECT_EQ(g.preds(1), (std::vector<int>{0}));
  autograph::SequentialExecutor exec(g);
  EXPECT_TRUE(torch::equal(exec.Run({x, true})[0].toTensor(), -(torch::relu(x) + x)));
  EXPECT_TRUE(torch::equal(exec.Run({x, false})[0].toTensor(), -(torch::relu(x) * x)));
}

TEST(ImportOpGraph, MismatchedInputsAreInputErrors) {
  auto graph = Parse(R"IR(
graph(%x : Tensor, %w : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  return (%y))IR");
  EXPECT_THROW(autograph::ImportOpGraph(graph, {torch::randn({2, 3})}), autograph::InputError);
  try {
    autograph::ImportOpGraph(graph, {torch::randn({2, 3}), torch::randn({4, 5})});
    FAIL() << "expected InputError";
  } catch (const autograph::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("aten::linear"), std::string::npos) << e.what();
  }
}

}  // namespace
