#include "graph_pass/prepack_for_onednn.h"

#include <ATen/Context.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/frozen_linear_transpose.h>
#include <torch/csrc/jit/passes/frozen_ops_to_mkldnn.h>

#include <vector>

namespace autograph {

int PrepackForOneDnn(std::shared_ptr<torch::jit::Graph>& graph) {
  if (!at::hasMKLDNN()) return 0;
  auto count_linears = [&] {
    int n = 0;
    for (const torch::jit::Node* node : graph->nodes()) n += node->kind() == c10::aten::linear;
    return n;
  };
  torch::jit::ConvertFrozenOpsToMKLDNN(graph);
  // Linears with a constant weight get it transposed once (aten::matmul on the transposed constant).
  const int linears = count_linears();
  torch::jit::FrozenLinearTranspose(graph);
  const int transposed = linears - count_linears();
  // PyTorch keeps oneDNN constants in their own node kind (prim::ConstantMKLDNNTensor) because
  // TorchScript cannot serialize them; autograph serializes them itself (as dense tensors, reordered
  // again on load), so they become plain constants the rest of the pipeline already understands.
  std::vector<torch::jit::Node*> opaque;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::prim::ConstantMKLDNNTensor) opaque.push_back(n);
  int prepacked = 0;
  for (torch::jit::Node* n : opaque) {
    torch::jit::Node* constant = graph->create(c10::prim::Constant);
    constant->t_(c10::attr::value, n->t(c10::attr::value));
    constant->output()->setType(c10::TensorType::get());
    constant->insertBefore(n);
    n->output()->replaceAllUsesWith(constant->output());
    n->destroy();
  }
  for (const torch::jit::Node* n : graph->nodes()) {
    for (const torch::jit::Value* v : n->inputs()) {
      if (v->node()->kind() != c10::prim::Constant || !v->node()->hasAttribute(c10::attr::value) ||
          v->node()->kindOf(c10::attr::value) != torch::jit::AttributeKind::t)
        continue;
      if (v->node()->t(c10::attr::value).is_mkldnn()) {
        ++prepacked;
        break;
      }
    }
  }
  torch::jit::EliminateDeadCode(graph);
  return prepacked + transposed;
}

}  // namespace autograph
