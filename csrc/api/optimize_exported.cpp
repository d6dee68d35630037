#include "api/optimize_exported.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "api/plan_schedule.h"
#include "api/resolve_options.h"
#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/aten_program.h"
#include "graph_pass/describe_aten_merge_candidate.h"
#include "graph_pass/import_aten_graph.h"

namespace autograph {

std::string OptimizeExported(const nlohmann::json& graph_json, const std::vector<at::Tensor>& tensors,
                             const OptimizeOptions& requested, OptimizeReport* report) {
  // Before the check of every option set (ResolveOptions): what the export path does instead.
  if (requested.plan_new_shapes > 0)
    throw InputError("plan_new_shapes: the export path plans shapes ahead of time only (shapes=...); a call of "
                     "another shape runs the program's graph for every shape");
  const OptimizeOptions options = ResolveOptions(requested, ModelPath::Export);
  if (!options.shapes.empty())
    throw InputError("shapes: on the export path each shape is exported again and planned from Python "
                     "(autograph.optimize(ep, shapes=...)); this call plans one graph of static shapes");
  auto aten = std::make_shared<const AtenGraph>(AtenGraph::FromJson(graph_json));
  if (tensors.size() != aten->inputs.size())
    throw InputError("the exported graph takes " + std::to_string(aten->inputs.size()) +
                     " tensors (weights and inputs), got " + std::to_string(tensors.size()));
  std::vector<c10::IValue> inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorMeta& meta = aten->values[aten->inputs[i]].meta;
    if (!aten->values[aten->inputs[i]].tensor || !tensors[i].defined() ||
        tensors[i].sizes() != at::IntArrayRef(meta.shape) || tensors[i].scalar_type() != meta.dtype)
      throw InputError("tensor " + std::to_string(i) + " does not match the exported graph's input " +
                       ShapeString(meta.shape) + " " + c10::toString(meta.dtype));
    inputs.emplace_back(tensors[i].to(options.executor.device));
  }
  OpGraph graph = ImportAtenGraph(aten);
  // Merges take the program's own weights, which arrive with every run; the search needs them now.
  std::vector<at::Tensor> on_device;
  for (const c10::IValue& v : inputs) on_device.push_back(v.toTensor());
  for (int id = 0; id < graph.size(); ++id) graph.node(id).merge = DescribeAtenMergeCandidate(graph, id, on_device);

  *report = OptimizeReport{};
  at::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  Schedule schedule = PlanSchedule(graph, inputs, nullptr, options, report);
  const double search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  AtenProgram program(graph, schedule, options.executor);

  for (const OpNode& n : graph.nodes()) {  // no rewrites on this path: every operator is scheduled as it is
    report->operators_before += n.kind != OpKind::View;
    report->memory_bound_before += n.kind == OpKind::MemoryBound;
  }
  report->operators_optimized = report->operators_before;
  ReportSchedule(graph, schedule, options, search_seconds, report);
  return program.ToText();
}

}  // namespace autograph
