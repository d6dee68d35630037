#include "autograph/graph_serialization.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <cctype>

#include "autograph/error.h"

namespace autograph {

namespace {

bool IsTensorConstant(const torch::jit::Node* n) {
  return n->kind() == c10::prim::Constant && n->output()->type()->kind() == c10::TypeKind::TensorType &&
         n->hasAttribute(c10::attr::value);
}

template <typename F>
void ForEachNode(torch::jit::Block* block, const F& f) {
  for (torch::jit::Node* n : block->nodes()) {
    f(n);
    for (torch::jit::Block* b : n->blocks()) ForEachNode(b, f);
  }
}

// What the IR parser cannot read back is taken out before printing: names that start with a digit
// ("%29_fused_bn" reads as 29 then junk) get a letter in front, refined types (sizes, strides,
// "*") print as their plain type, and tensor constants become trailing graph inputs.
void MakeParseable(torch::jit::Graph& graph, std::vector<at::Tensor>* lifted) {
  auto fix = [](torch::jit::Value* v) {
    if (v->hasDebugName() && std::isdigit(static_cast<unsigned char>(v->debugName()[0])))
      v->setDebugName("v" + v->debugName());
    v->setType(c10::unshapedType(v->type()));
  };
  for (torch::jit::Value* v : graph.inputs()) fix(v);
  std::vector<torch::jit::Node*> constants;
  ForEachNode(graph.block(), [&](torch::jit::Node* n) {
    for (torch::jit::Value* v : n->outputs()) fix(v);
    for (torch::jit::Block* b : n->blocks())
      for (torch::jit::Value* v : b->inputs()) fix(v);
    if (IsTensorConstant(n)) constants.push_back(n);
  });
  for (torch::jit::Node* n : constants) {
    lifted->push_back(n->t(c10::attr::value));
    torch::jit::Value* input = graph.addInput()->setType(c10::TensorType::get());
    n->output()->replaceAllUsesWith(input);
    n->destroy();
  }
}

}  // namespace

SerializedGraph SerializeGraph(const torch::jit::Graph& graph) {
  SerializedGraph out;
  // copy() is not const-qualified; the copy keeps the node order and shares the tensors.
  std::shared_ptr<torch::jit::Graph> copy = const_cast<torch::jit::Graph&>(graph).copy();
  MakeParseable(*copy, &out.tensor_constants);
  out.ir = copy->toString(/*print_source_locations=*/false);
  return out;
}

std::shared_ptr<torch::jit::Graph> DeserializeGraph(const SerializedGraph& serialized) {
  auto graph = std::make_shared<torch::jit::Graph>();
  try {
    torch::jit::parseIR(serialized.ir, graph.get());
  } catch (const std::exception& e) {
    throw Error("corrupted program: its graph does not parse (" + FirstLineOf(e) + ")");
  }
  const size_t lifted = serialized.tensor_constants.size();
  if (graph->inputs().size() < lifted) {
    throw Error("corrupted program: " + std::to_string(lifted) + " tensor constants for a graph of " +
                std::to_string(graph->inputs().size()) + " inputs");
  }
  // The lifted inputs become constants again, at the top of the graph.
  const size_t first = graph->inputs().size() - lifted;
  torch::jit::WithInsertPoint guard(graph->block()->nodes().front());
  for (size_t i = 0; i < lifted; ++i) {
    torch::jit::Value* constant = graph->insertConstant(serialized.tensor_constants[i]);
    graph->inputs()[first + i]->replaceAllUsesWith(constant);
  }
  for (size_t i = graph->inputs().size(); i-- > first;) graph->eraseInput(i);
  return graph;
}

}  // namespace autograph
