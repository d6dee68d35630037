#include "graph_pass/lower_module.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/passes/common_subexpression_elimination.h>
#include <torch/csrc/jit/passes/constant_propagation.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/frozen_conv_folding.h>
#include <torch/csrc/jit/passes/frozen_linear_folding.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/passes/remove_dropout.h>
#include <torch/csrc/jit/passes/remove_mutation.h>  // RemoveListMutation

#include "autograph/error.h"

namespace autograph {

void LowerFrozenGraph(std::shared_ptr<torch::jit::Graph>& graph) {
  torch::jit::Inline(*graph);
  torch::jit::removeDropout(graph);
  torch::jit::ConstantPropagation(graph);
  // Folding repeats until nothing changes: conv -> bn -> add chains fold step by step.
  bool changed = true;
  while (changed) {
    changed = torch::jit::FoldFrozenConvBatchnorm(graph);
    changed |= torch::jit::FoldFrozenConvAddOrSub(graph);
    changed |= torch::jit::FoldFrozenConvMulOrDiv(graph);
    changed |= torch::jit::FoldFrozenLinearBatchnorm(graph);
  }
  // List mutation becomes functional; in-place tensor ops (relu_, add_) stay: on CPU their
  // functional forms cost a fresh allocation each (ResNet-50 measured slower with them), and the
  // import orders every reader of a written tensor around the write (alias analysis), so they are
  // safe under any schedule.
  torch::jit::RemoveListMutation(graph);
  torch::jit::ConstantPropagation(graph);
  torch::jit::EliminateCommonSubexpression(graph);
  torch::jit::EliminateDeadCode(graph);
}

std::shared_ptr<torch::jit::Graph> LowerModule(const torch::jit::Module& module) {
  torch::jit::Module copy = module.clone();
  copy.eval();
  torch::jit::Module frozen;
  try {
    frozen = torch::jit::freeze(copy, std::nullopt, /*optimize_numerics=*/false);
  } catch (const c10::Error& e) {
    throw UnsupportedModelError("cannot freeze the module (" + FirstLineOf(e) +
                                "); autograph needs a module whose forward can be frozen (see torch.jit.freeze)");
  }
  auto graph = frozen.get_method("forward").graph()->copy();
  LowerFrozenGraph(graph);
  torch::jit::Value* self = graph->inputs().at(0);
  if (self->hasUses()) {
    throw UnsupportedModelError(
        "forward still reads the module after freezing (" + std::to_string(self->uses().size()) +
        " use(s) of self, e.g. " + self->uses()[0].user->kind().toQualString() +
        "); autograph needs a module whose attributes can be frozen — avoid mutating attributes in forward");
  }
  graph->eraseInput(0);
  return graph;
}

}  // namespace autograph
