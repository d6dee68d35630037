#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include "autograph/error.h"
#include "autograph/substitute.h"
#include "graph_pass/fold_convolution_add_relu.h"
#include "graph_pass/fuse_attention.h"
#include "graph_pass/lower_module.h"
#include "graph_pass/merge_sibling_linears.h"
#include "graph_pass/regroup_grouped_convolutions.h"

namespace autograph {

namespace {

// Top-level aten nodes: before and after the fold, their difference is the relu / add kernels folded.
int CountAtenNodes(const torch::jit::Graph& graph) {
  int n = 0;
  for (const torch::jit::Node* node : graph.nodes()) n += node->kind().is_aten();
  return n;
}

}  // namespace

SubstitutionCounts ApplySubstitutions(std::shared_ptr<torch::jit::Graph>& lowered, const std::vector<c10::IValue>& inputs,
                                      const OptimizeOptions& options) {
  SubstitutionCounts counts;
  if (options.fuse_attention) counts.attentions_fused = FuseScaledDotProductAttention(lowered, inputs);
  if (options.merge_linears) counts.linears_merged = MergeSiblingLinears(lowered);
  if (options.regroup_convolutions) counts.convolutions_regrouped = RegroupGroupedConvolutions(lowered, inputs).regrouped;
  if (options.fold_conv_relu && options.device.is_cuda()) {
    const int before = CountAtenNodes(*lowered);
    counts.convolutions_folded = FoldConvolutionAddRelu(lowered, inputs);
    counts.ops_folded = before - CountAtenNodes(*lowered);
  }
  return counts;
}

torch::jit::Module substitute(const torch::jit::Module& module, const OptimizeOptions& options, OptimizeReport* report) {
  if (options.example_inputs.empty())
    throw InputError("substitute needs example inputs, one per forward() argument (regrouping times real shapes)");
  torch::jit::Module on_device = module.clone();
  on_device.to(options.device);
  std::vector<c10::IValue> inputs;
  for (const auto& v : options.example_inputs) inputs.push_back(v.isTensor() ? c10::IValue(v.toTensor().to(options.device)) : v);
  std::shared_ptr<torch::jit::Graph> graph = LowerModule(on_device);
  const int before = CountAtenNodes(*graph);
  const SubstitutionCounts counts = ApplySubstitutions(graph, inputs, options);

  // A fresh module whose forward is the rewritten graph (the frozen weights are its constants).
  torch::jit::Module substituted("__torch__.autograph.SubstitutedModule");
  substituted.register_attribute("training", c10::BoolType::get(), false);
  torch::jit::Value* self = graph->insertInput(0, "self");
  self->setType(substituted._ivalue()->type());
  auto* forward = substituted._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*substituted.type()->name(), "forward"), graph);
  substituted.type()->addMethod(forward);

  if (report) {
    *report = OptimizeReport{};
    report->method = "substitutions";
    report->operators_before = before;
    report->operators_after = CountAtenNodes(*graph);
    report->linears_merged = counts.linears_merged;
    report->convolutions_regrouped = counts.convolutions_regrouped;
    report->convolutions_folded = counts.convolutions_folded;
    report->ops_folded = counts.ops_folded;
    report->attentions_fused = counts.attentions_fused;
  }
  return substituted;
}

}  // namespace autograph
