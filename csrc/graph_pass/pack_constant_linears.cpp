#include "graph_pass/pack_constant_linears.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <vector>

namespace autograph {
namespace {

// What packed_linear packs (its own test, repeated where the graph is known): a dense float32 CPU
// matrix, and a float32 vector or None for the bias, all constants.
bool Packable(const torch::jit::Node* linear) {
  const std::optional<c10::IValue> weight = torch::jit::toIValue(linear->input(1));
  if (!weight || !weight->isTensor()) return false;
  const at::Tensor& w = weight->toTensor();
  if (w.layout() != at::kStrided || !w.is_cpu() || w.scalar_type() != at::kFloat || w.dim() != 2 ||
      !w.is_contiguous() || w.numel() == 0)
    return false;
  const std::optional<c10::IValue> bias = torch::jit::toIValue(linear->input(2));
  return bias && (bias->isNone() ||
                  (bias->isTensor() && bias->toTensor().scalar_type() == at::kFloat && bias->toTensor().dim() == 1));
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
