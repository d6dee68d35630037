#include "api/optimize_exported.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "api/plan_schedule.h"
#include "api/timeline.h"
#include "autograph/error.h"
#include "core/aten_graph.h"
#include "executor/aten_program.h"
#include "executor/validate_schedule.h"
#include "graph_pass/import_aten_graph.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_model.h"

namespace autograph {

std::string OptimizeExported(const nlohmann::json& graph_json, const std::vector<at::Tensor>& tensors,
                             const OptimizeOptions& requested, OptimizeReport* report) {
  OptimizeOptions options = requested;
  options.executor.cuda_graph = requested.executor.cuda_graph && requested.executor.device.is_cuda();
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

  *report = OptimizeReport{};
  at::NoGradGuard no_grad;
  const auto start = std::chrono::steady_clock::now();
  Schedule schedule = PlanSchedule(graph, inputs, nullptr, options, report);
  const double search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ValidateSchedule(schedule, graph);
  AtenProgram program(graph, schedule, ExecutorOptions{options.executor.device, options.executor.cuda_graph});

  report->device = options.executor.device.str();
  for (const OpNode& n : graph.nodes()) {
    report->operators_before += n.kind != OpKind::View;
    report->memory_bound_before += n.kind == OpKind::MemoryBound;
    report->memory_bound_after += n.kind == OpKind::MemoryBound;
    report->operators_optimized += n.kind != OpKind::View;
  }
  report->operators_after = KernelsLaunched(graph, schedule);
  report->stages = static_cast<int>(schedule.stages.size());
  report->groups = schedule.num_groups();
  report->streams = schedule.max_groups();
  report->search_seconds = search_seconds;
  report->schedule = schedule;
  try {
    AnalyticalCostModel analytical(DeviceModel::ByName(DeviceModelName(options)));
    report->timeline = BuildTimeline(graph, schedule, analytical);
  } catch (const Error& e) {
    TORCH_WARN("autograph: no timeline of the schedule: ", e.what());
  }
  return program.ToText();
}

}  // namespace autograph
