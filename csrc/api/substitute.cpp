#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

#include <optional>

#include "api/prepare_module.h"
#include "autograph/error.h"
#include "autograph/substitute.h"
#include "graph_pass/fold_convolution_add_relu.h"
#include "graph_pass/fuse_attention.h"
#include "graph_pass/graph_values.h"
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
  // One run of the graph, again only after a substitution changed it and another needs values.
  std::optional<GraphValues> recorded;
  auto values = [&]() -> const GraphValues& {
    if (!recorded || !recorded->Fits(*lowered)) recorded = GraphValues::Record(lowered, inputs);
    return *recorded;
  };
  if (options.substitutions.fuse_attention) counts.attentions_fused = FuseScaledDotProductAttention(lowered, values());
  if (options.substitutions.merge_linears) counts.linears_merged = MergeSiblingLinears(lowered);
  if (options.substitutions.regroup_convolutions) counts.convolutions_regrouped = RegroupGroupedConvolutions(lowered, values()).regrouped;
  if (options.substitutions.fold_conv_relu && options.executor.device.is_cuda()) {
    const int before = CountAtenNodes(*lowered);
    counts.convolutions_folded = FoldConvolutionAddRelu(lowered, values());
    counts.ops_folded = before - CountAtenNodes(*lowered);
  }
  return counts;
}

torch::jit::Module substitute(const torch::jit::Module& module, const OptimizeOptions& options, OptimizeReport* report) {
  PreparedModule prepared = PrepareModule(module, options, "substitute");
  std::shared_ptr<torch::jit::Graph>& graph = prepared.lowered;
  const std::vector<c10::IValue>& inputs = prepared.inputs;
  const int before = CountAtenNodes(*graph);
  const SubstitutionCounts counts = ApplySubstitutions(graph, inputs, options);

  // A fresh module whose forward is the rewritten graph (the frozen weights are its constants).
  torch::jit::Module substituted("__torch__.autograph.SubstitutedModule");
  substituted.register_attribute("training", c10::BoolType::get(), false);
  torch::jit::Value* self = graph->insertInput(0, "self");
  self->setType(substituted._ivalue()->type());
  auto* forward = substituted._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*substituted.type()->name(), "forward"), graph);
  // The original's schema, so that argument names and defaults stay as the user's model has them
  // (the lowered graph keeps forward's arguments one for one).
  c10::FunctionSchema schema = ForwardSchemaFor(module, substituted._ivalue()->type());
  if (schema.arguments().size() == graph->inputs().size()) forward->setSchema(std::move(schema));
  substituted.type()->addMethod(forward);

  if (report) {
    *report = OptimizeReport{};
    report->method = "substitutions";
    report->device = options.executor.device.str();
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
