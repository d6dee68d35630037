#include "api/plan_other_shapes.h"

#include <algorithm>
#include <chrono>

#include "api/option_table.h"
#include "api/plan_schedule.h"
#include "api/resolve_options.h"
#include "autograph/error.h"
#include "executor/clone_tensors.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/import_op_graph.h"

namespace autograph {

namespace {

at::Tensor Resized(const at::Tensor& t, const std::vector<int64_t>& sizes) {
  at::Tensor r = t;
  for (int64_t d = 0; d < r.dim(); ++d) {
    const int64_t want = sizes[d], have = r.size(d);
    if (want == have) continue;
    if (have == 0) {  // nothing to tile: zeros of the new size
      std::vector<int64_t> s = r.sizes().vec();
      s[d] = want;
      r = at::zeros(s, r.options());
      continue;
    }
    if (want > have) {
      std::vector<int64_t> repeats(r.dim(), 1);
      repeats[d] = (want + have - 1) / have;
      r = r.repeat(repeats);
    }
    r = r.narrow(d, 0, want);
  }
  return r.contiguous();
}

// The same operators over the same TorchScript nodes: a schedule of one fits the other.
bool SameOperators(const OpGraph& a, const OpGraph& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i)
    if (a.node(i).op != b.node(i).op || a.node(i).jit_nodes != b.node(i).jit_nodes) return false;
  return true;
}

// Loading the planning library makes every Program in the process able to plan new shapes.
const bool kShapePlannerRegistered = (SetShapePlanner(&PlanNewShape), true);

}  // namespace

std::optional<Schedule> PlanNewShape(const OpGraph& graph, const std::vector<c10::IValue>& arguments,
                                     const std::string& options_json) {
  const OptimizeOptions options = ResolveOptions(OptimizeOptionsFromJson(nlohmann::json::parse(options_json)),
                                                ModelPath::TorchScript);
  at::NoGradGuard no_grad;
  GraphValues recorded = GraphValues::Record(graph.graph(), arguments);
  OpGraph at_shape = ImportOpGraph(recorded);
  if (!SameOperators(at_shape, graph)) return std::nullopt;
  OptimizeReport report;
  return PlanSchedule(at_shape, recorded.inputs(), &recorded, options, &report);
}

std::vector<c10::IValue> ResizedInputs(const std::vector<c10::IValue>& example,
                                       const std::vector<std::vector<int64_t>>& shapes) {
  size_t count = 0;
  for (const c10::IValue& v : example) MapTensors(v, [&](const at::Tensor& t) { return ++count, t; });
  if (shapes.size() != count)
    throw InputError("shapes: \"" + ShapesText({shapes}) + "\" gives " + std::to_string(shapes.size()) +
                     " tensor shapes, the example inputs hold " + std::to_string(count) +
                     " tensors (separate a shape's tensors with ',', shapes with ';')");
  size_t next = 0;
  std::vector<c10::IValue> resized;
  for (const c10::IValue& v : example) {
    resized.push_back(MapTensors(v, [&](const at::Tensor& t) {
      const std::vector<int64_t>& sizes = shapes[next++];
      if (static_cast<int64_t>(sizes.size()) != t.dim())
        throw InputError("shapes: tensor " + std::to_string(next - 1) + " of \"" + ShapesText({shapes}) + "\" has rank " +
                         std::to_string(sizes.size()) + ", the example's has rank " + std::to_string(t.dim()) +
                         ": shapes may change sizes, not ranks");
      return Resized(t, sizes);
    }));
  }
  return resized;
}

void PlanOtherShapes(const std::shared_ptr<torch::jit::Graph>& lowered, const std::vector<c10::IValue>& example,
                     const OpGraph& graph, const OptimizeOptions& options, Program* program, OptimizeReport* report) {
  for (const std::vector<std::vector<int64_t>>& shapes : options.shapes) {
    ShapePlan line;
    line.shapes = shapes;
    const std::vector<c10::IValue> inputs = ResizedInputs(example, shapes);
    GraphValues recorded = GraphValues::Record(lowered, inputs);
    OpGraph at_shape = ImportOpGraph(recorded);
    if (!SameOperators(at_shape, graph)) {
      line.skipped = "the graph imports other operators at these shapes; they run the example's schedule";
      report->shape_plans.push_back(std::move(line));
      continue;
    }
    OptimizeReport planned;
    const auto start = std::chrono::steady_clock::now();
    Schedule schedule = PlanSchedule(at_shape, recorded.inputs(), &recorded, options, &planned);
    report->search_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    line.stages = static_cast<int>(schedule.stages.size());
    for (const Stage& stage : schedule.stages) line.streams = std::max(line.streams, static_cast<int>(stage.groups.size()));
    line.predicted_ms = planned.predicted_ms;
    line.measured_ms = planned.measured_ms;
    program->AddPlan(InputSignaturesOf(inputs), std::move(schedule));
    report->shape_plans.push_back(std::move(line));
  }
}

}  // namespace autograph
