#include "graph_pass/pack_constant_linears.h"

#include <torch/csrc/jit/ir/ir.h>

#include <vector>

namespace autograph {
namespace {

// The constant tensor `v` holds, when it is one.
std::optional<at::Tensor> ConstantTensor(const torch::jit::Value* v) {
  const torch::jit::Node* n = v->node();
  if (n->kind() != c10::prim::Constant || !n->hasAttribute(c10::attr::value) ||
      n->kindOf(c10::attr::value) != torch::jit::AttributeKind::t)
    return std::nullopt;
  return n->t(c10::attr::value);
}

// What packed_linear packs (its own test, repeated where the graph is known): a dense float32 CPU
// matrix, and a float32 vector or None for the bias.
bool Packable(const torch::jit::Node* linear) {
  const std::optional<at::Tensor> weight = ConstantTensor(linear->input(1));
  if (!weight || weight->layout() != at::kStrided || !weight->is_cpu() || weight->scalar_type() != at::kFloat ||
      weight->dim() != 2 || !weight->is_contiguous() || weight->numel() == 0)
    return false;
  const torch::jit::Value* bias = linear->input(2);
  if (bias->type()->kind() == c10::TypeKind::NoneType) return true;
  const std::optional<at::Tensor> b = ConstantTensor(bias);
  return b && b->scalar_type() == at::kFloat && b->dim() == 1;
}

}  // namespace

int PackConstantLinears(std::shared_ptr<torch::jit::Graph>& graph) {
  static const c10::Symbol kPackedLinear = c10::Symbol::fromQualString("autograph::packed_linear");
  std::vector<torch::jit::Node*> linears;
  for (torch::jit::Node* n : graph->nodes())
    if (n->kind() == c10::aten::linear && n->inputs().size() == 3 && Packable(n)) linears.push_back(n);
  for (torch::jit::Node* linear : linears) {
    torch::jit::Node* packed = graph->create(kPackedLinear, linear->inputs(), 1);
    packed->output()->setType(linear->output()->type());
    packed->insertBefore(linear);
    linear->output()->replaceAllUsesWith(packed->output());
    linear->destroy();
  }
  return static_cast<int>(linears.size());
}

}  // namespace autograph
