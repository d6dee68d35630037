// Every zoo model's lowered graph survives IR text + tensor constants and runs bit-identically.
#include "executor/graph_serialization.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/interpreter.h>
#include <torch/script.h>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/lower_module.h"
#include "zoo_test_util.h"

namespace {

class GraphSerialization : public ::testing::TestWithParam<std::string> {};

TEST_P(GraphSerialization, RoundTripRunsIdentically) {
  const std::string path = autograph::testing::ZooModel(GetParam());
  auto graph = autograph::LowerModule(autograph::LoadModule(path));
  auto serialized = autograph::SerializeGraph(*graph);
  auto restored = autograph::DeserializeGraph(serialized);
  std::vector<std::string> kinds, restored_kinds;
  for (auto* n : graph->nodes())
    if (n->kind() != c10::prim::Constant) kinds.push_back(n->kind().toQualString());
  for (auto* n : restored->nodes())
    if (n->kind() != c10::prim::Constant) restored_kinds.push_back(n->kind().toQualString());
  EXPECT_EQ(kinds, restored_kinds) << "non-constant nodes keep their order";
  EXPECT_EQ(restored->inputs().size(), graph->inputs().size());
  auto inputs = autograph::MakeExampleInputs(autograph::ReadInputSpecs(*autograph::InputSpecPathFor(path)));
  torch::NoGradGuard no_grad;
  torch::jit::Stack a(inputs.begin(), inputs.end()), b(inputs.begin(), inputs.end());
  // The plain interpreter (a GraphFunction would profile and re-optimize both graphs first).
  torch::jit::InterpreterState(torch::jit::Code(graph, "original")).run(a);
  torch::jit::InterpreterState(torch::jit::Code(restored, "restored")).run(b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].toTensor().equal(b[i].toTensor()));
}

INSTANTIATE_TEST_SUITE_P(Zoo, GraphSerialization,
                         ::testing::Values("inception_v3", "resnet50", "resnext50_32x4d", "squeezenet",
                                           "nasnet_a_large", "nasnet_a_mobile", "randwire", "rnntc_sru",
                                           "bert_base"));

TEST(GraphSerialization, ScopesOfATraceInThisProcessAreDropped) {
  // torch.jit.trace in the same process leaves "scope: __module.a" on each node, which the IR parser
  // does not read back (found by autograph.optimize from Python: saving such a module failed to load).
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n", graph.get());
  auto root = c10::make_intrusive<torch::jit::Scope>();
  for (torch::jit::Node* n : graph->nodes()) n->setScope(root->push(c10::Symbol::scope("__module.a")));
  ASSERT_NE(graph->toString(false).find("scope:"), std::string::npos);
  auto serialized = autograph::SerializeGraph(*graph);
  EXPECT_EQ(serialized.ir.find("scope:"), std::string::npos) << serialized.ir;
  auto restored = autograph::DeserializeGraph(serialized);
  at::Tensor x = torch::randn({3});
  torch::jit::Stack stack{x};
  torch::jit::InterpreterState(torch::jit::Code(restored, "restored")).run(stack);
  EXPECT_TRUE(stack.at(0).toTensor().equal(torch::relu(x)));
}

TEST(GraphSerialization, ConstantListsOfTensorsRoundTrip) {
  // A trace keeps the indices of x[:, idx] as a constant Tensor?[] whose elements the IR prints as
  // "<Tensors>" or as tensor text (found on torchvision's swin_v2: its optimized modules saved but did not load).
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n", graph.get());
  torch::jit::Node* relu = graph->nodes().front();
  at::Tensor idx = torch::tensor({2, 0, 1}, torch::kLong);
  at::Tensor other = torch::randn({3, 3});
  torch::jit::Value* indices;
  torch::jit::Value* tensors;
  {
    torch::jit::WithInsertPoint guard(relu);
    c10::List<std::optional<at::Tensor>> optional_list;
    optional_list.push_back(std::nullopt);
    optional_list.push_back(idx);
    indices = graph->insertConstant(optional_list);
    c10::List<at::Tensor> list;
    list.push_back(other);
    list.push_back(other * 2);
    tensors = graph->insertConstant(list);
  }
  torch::jit::WithInsertPoint guard(graph->return_node());
  torch::jit::Value* indexed = graph->insert(c10::aten::index, {relu->output(), indices});
  torch::jit::Value* stacked = graph->insert(c10::aten::stack, {tensors});
  torch::jit::Value* sum = graph->insert(c10::aten::add, {indexed, stacked});
  graph->return_node()->replaceInput(0, sum);
  {
    auto reparsed = std::make_shared<torch::jit::Graph>();
    EXPECT_ANY_THROW(torch::jit::parseIR(graph->toString(false), reparsed.get())) << "the IR prints what it cannot parse";
  }

  auto serialized = autograph::SerializeGraph(*graph);
  EXPECT_EQ(serialized.tensor_constants.size(), 3u) << "idx and the two tensors; None is not stored";
  auto restored = autograph::DeserializeGraph(serialized);
  EXPECT_EQ(restored->inputs().size(), 1u);
  at::Tensor x = torch::randn({2, 3, 3});
  torch::jit::Stack a{x}, b{x};
  torch::jit::InterpreterState(torch::jit::Code(graph, "original")).run(a);
  torch::jit::InterpreterState(torch::jit::Code(restored, "restored")).run(b);
  EXPECT_TRUE(a.at(0).toTensor().equal(b.at(0).toTensor()));
  EXPECT_TRUE(b.at(0).toTensor().equal(torch::relu(x).index({torch::indexing::Slice(), idx}) +
                                        torch::stack({other, other * 2})));

  // Corrupted layouts are refused, never read past the end: more tensors than were saved, None in a
  // list of plain tensors, an unknown element letter, a list of another type than its input's.
  auto corrupted = serialized;
  corrupted.tensor_constants.pop_back();
  EXPECT_THROW(autograph::DeserializeGraph(corrupted), autograph::Error);
  for (const std::string& layout : {"tensor_list:tnt", "tensor_list:txt", "optional_tensor_list:ntt", ""}) {
    corrupted = serialized;
    for (std::string& l : corrupted.constant_layouts)
      if (l.rfind("tensor_list:", 0) == 0) l = layout;
    EXPECT_THROW(autograph::DeserializeGraph(corrupted), autograph::Error) << layout;
  }
}

TEST(GraphSerializationErrors, MismatchedConstantsAreRejected) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n", graph.get());
  auto serialized = autograph::SerializeGraph(*graph);
  serialized.tensor_constants = {at::ones({2}), at::ones({2})};  // more constants than inputs
  EXPECT_THROW(autograph::DeserializeGraph(serialized), autograph::Error);
  serialized.ir = "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x\n";
  EXPECT_THROW(autograph::DeserializeGraph(serialized), autograph::Error);
}

}  // namespace
