#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>


#include "api/apply_rewrites.h"
#include "api/prepare_module.h"
#include "api/resolve_options.h"
#include "autograph/error.h"
#include "autograph/substitute.h"
#include "core/schedule.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/import_op_graph.h"
#include "search/simple_schedulers.h"

namespace autograph {

namespace {

// Kernels the graph launches run as TorchScript runs it: the operators of its operator graph that
// launch work (optimize's definition: views, constants and list plumbing launch nothing).
int KernelsOf(const GraphValues& recorded) {
  const OpGraph graph = ImportOpGraph(recorded);
  return KernelsLaunched(graph, SequentialSchedule(graph));
}

}  // namespace

torch::jit::Module substitute(const torch::jit::Module& module, const OptimizeOptions& options, OptimizeReport* report) {
  const OptimizeOptions resolved = ResolveOptions(options, ModelPath::TorchScript);  // InputError before any work
  PreparedModule prepared = PrepareModule(module, resolved, "substitute");
  GraphValues recorded = GraphValues::Record(prepared.lowered, prepared.inputs);
  const int before = KernelsOf(recorded);
  // The substitutions of optimize's rewrite registry, applied as the passes decide (unmeasured, as a
  // TASO-style baseline applies them).
  OptimizeOptions unmeasured = resolved;
  unmeasured.substitutions.check_rewrites = false;
  OptimizeReport counts;
  recorded = ApplyRewrites(std::move(recorded), unmeasured, /*searched=*/false, &counts, RewriteSet::Substitutions);
  std::shared_ptr<torch::jit::Graph> graph = recorded.graph()->copy();

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
    *report = std::move(counts);  // the rewrites' counts and decisions
    report->method = "substitutions";
    report->device = options.executor.device.str();
    report->operators_before = before;
    report->operators_after = KernelsOf(recorded);
  }
  return substituted;
}

}  // namespace autograph
