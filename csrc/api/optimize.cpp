// The rewrite: lower, import, schedule, and wrap the result in a new module whose forward calls
// autograph::call with a Program attribute.
#include <ATen/Context.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/script.h>

#include <chrono>
#include <map>
#include <optional>

#include "api/apply_rewrites.h"
#include "api/choose_precision.h"
#include "api/option_table.h"
#include "api/plan_other_shapes.h"
#include "api/plan_schedule.h"
#include "api/prepare_module.h"
#include "api/resolve_options.h"
#include "autograph/error.h"
#include "autograph/optimize.h"
#include "executor/program.h"
#include "executor/validate_schedule.h"
#include "graph_pass/lower_precision.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/merge_sibling_linears.h"
#include "graph_pass/top_level_nodes.h"
#include "search/cost/device_model.h"
#include "search/simple_schedulers.h"

namespace autograph {

namespace {

// The optimized module's forward, built as IR from the original's schema: the same arguments (names,
// types, defaults) packed into one tuple for autograph::call, and what that returns cast back to the
// original's return type. So any structure in and out passes through exactly as the original has it.
void DefineForward(torch::jit::Module& optimized, const torch::jit::Module& original) {
  c10::FunctionSchema schema = ForwardSchemaFor(original, optimized._ivalue()->type());
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::Value* self = graph->addInput("self")->setType(optimized._ivalue()->type());
  std::vector<torch::jit::Value*> values;
  for (size_t i = 1; i < schema.arguments().size(); ++i) {
    const c10::Argument& a = schema.arguments()[i];
    values.push_back(graph->addInput(a.name())->setType(a.type()));
  }
  torch::jit::WithInsertPoint guard(graph->block());
  torch::jit::Value* packed = graph->insertNode(graph->createTuple(values))->output();
  torch::jit::Value* program = graph->insertGetAttr(self, "program");
  torch::jit::Value* result = graph->insert(c10::Symbol::fromQualString("autograph::call"), {packed, program});
  graph->registerOutput(graph->insertUncheckedCast(result, schema.returns()[0].type()));
  auto* forward = optimized._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*optimized.type()->name(), "forward"), graph);
  forward->setSchema(std::move(schema));
  optimized.type()->addMethod(forward);
}

// What of the planned graph runs as plain TorchScript, by kind and reason; the rest is optimized.
void CountTorchScriptParts(const OpGraph& graph, OptimizeReport* report) {
  std::map<std::pair<std::string, std::string>, int> parts;
  for (const OpNode& n : graph.nodes()) {
    bool effects = false;
    for (torch::jit::Node* node : n.jit_nodes) effects = effects || HasOrderedSideEffects(node);
    if (n.kind == OpKind::ControlFlow) {
      ++parts[{n.op, "control flow: the TorchScript interpreter runs it, as one operator of the schedule"}];
    } else if (effects) {  // a print reads no tensor (a "view"), yet keeps its place
      ++parts[{n.op, "side effects: runs alone, where the original runs it"}];
    } else if (n.kind == OpKind::View) {
      continue;  // launches nothing either way
    } else {
      ++report->operators_optimized;
    }
  }
  for (const auto& [key, count] : parts) report->left_to_torchscript.push_back({key.first, key.second, count});
}

torch::jit::Module OptimizeModule(const torch::jit::Module& module, const OptimizeOptions& requested,
                                  OptimizeReport* report);

torch::jit::Module Unchanged(const torch::jit::Module& module, const OptimizeOptions& options, const std::string& why,
                             OptimizeReport* report) {
  *report = OptimizeReport{};
  report->method = options.search.method;
  report->device = options.executor.device.str();
  report->fallback = why;
  TORCH_WARN("autograph: ", why, "; optimize returns the module unchanged");
  return module;
}

}  // namespace

torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& options, OptimizeReport* report) {
  OptimizeReport local_report;
  if (!report) report = &local_report;
  try {
    return OptimizeModule(module, options, report);
  } catch (const UnsupportedModelError& e) {
    // Nothing of it can be optimized: the user keeps the model as it is, and is told why once.
    return Unchanged(module, options, e.what(), report);
  } catch (const c10::Error& e) {
    // A check inside autograph or libtorch failed on this model (autograph's own errors about the
    // user's inputs and options are autograph::Error and reach the caller): our bug, not the user's;
    // they keep a working model, and the message asks for a report.
    return Unchanged(module, options, "internal error while optimizing (" + FirstLineOf(e) + "); please report it",
                     report);
  }
}

namespace {

// One plan of the lowered graph: its rewrites, the schedule the search chose, and the program that runs
// it. The OpGraph refers to the rewritten graph's nodes, which `lowered` keeps.
struct PlannedGraph {
  std::shared_ptr<torch::jit::Graph> lowered;  // after the rewrites
  std::vector<c10::IValue> inputs;              // the example inputs on the device
  std::shared_ptr<OpGraph> graph;
  Schedule schedule;
  double search_seconds = 0;
  c10::intrusive_ptr<Program> program;
};

// `recorded`: the lowered graph's run on the example inputs, after the pattern rewrites (its graph is
// rewritten in place where rewrites are not checked). `lowering`: the plan computes the matrix products
// and convolutions it chooses below float32; where it chooses none, nothing is planned (no program).
// Fills `report` with the rewrites after the patterns and the search.
PlannedGraph PlanGraph(GraphValues recorded, const std::vector<InputSignature>& signature,
                       const OptimizeOptions& options, LoweringRequest* lowering, OptimizeReport* report) {
  const bool searched = Searches(MethodOf(options));
  recorded = ApplyRewrites(std::move(recorded), options, searched, report, RewriteSet::AfterPatterns, lowering);
  PlannedGraph plan;
  if (lowering && lowering->lowered == 0) return plan;
  plan.lowered = recorded.graph();
  if (options.search.merge && searched) PrepareSiblingLinearsForMerging(plan.lowered);  // the search may merge them
  if (!recorded.Fits(*plan.lowered)) recorded = GraphValues::Record(plan.lowered, recorded.inputs());
  plan.inputs = recorded.inputs();
  plan.graph = std::make_shared<OpGraph>(ImportOpGraph(recorded));
  const auto start = std::chrono::steady_clock::now();
  plan.schedule = PlanSchedule(*plan.graph, recorded.inputs(), &recorded, options, report);
  plan.search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ValidateSchedule(plan.schedule, *plan.graph);
  plan.program = c10::make_intrusive<Program>(*plan.graph, plan.schedule, signature, options.executor);
  return plan;
}

torch::jit::Module OptimizeModule(const torch::jit::Module& module, const OptimizeOptions& requested,
                                  OptimizeReport* report) {
  OptimizeOptions options = ResolveOptions(requested, ModelPath::TorchScript);
  // The tensors inside the example inputs, whatever structure holds them: what the Program checks.
  const std::vector<InputSignature> signature = InputSignaturesOf(options.example_inputs);
  PreparedModule prepared = PrepareModule(module, options, "optimize");
  // The one run on the example inputs that every rewrite and the search read shapes and values from
  // (a rewrite that changes the graph records the new graph once).
  GraphValues recorded = GraphValues::Record(prepared.lowered, prepared.inputs);
  // What the original launches, counted on the graph as TorchScript would run it.
  int kernels_before = 0, memory_bound_before = 0;
  {
    const OpGraph original = ImportOpGraph(recorded);  // named: nodes() must not outlive it
    kernels_before = KernelsLaunched(original, SequentialSchedule(original));  // the report's one definition
    for (const OpNode& n : original.nodes()) memory_bound_before += n.kind == OpKind::MemoryBound;
  }
  *report = OptimizeReport{};
  recorded = ApplyRewrites(std::move(recorded), options, Searches(MethodOf(options)), report, RewriteSet::Patterns);
  // The plan lowered below float32 (option precision) forks from the graph after the pattern rewrites,
  // whose decisions hold for it too (they find operators whatever their dtype): they are not timed twice.
  std::optional<GraphValues> after_patterns;
  OptimizeReport lowered_report;
  if (OffersLoweredPlan(options)) {
    after_patterns = recorded.ForCopy(recorded.graph()->copy());
    lowered_report = *report;
  }
  PlannedGraph planned = PlanGraph(std::move(recorded), signature, options, nullptr, report);

  std::optional<PlannedGraph> lowered_plan;
  LoweredPlan lowered;
  if (after_patterns) {
    LoweringRequest& request = lowered.selection;
    request.dtype = LoweredDtype(options.numerics.precision);
    request.tolerance = options.numerics.tolerance;
    request.accuracy = options.numerics.accuracy;
    const DeviceModel device = DeviceModel::ByName(DeviceModelName(options));
    request.least_flops_per_byte = device.fp32_tflops * 1e3 / device.memory_gbps;  // the roofline's ridge
    request.calibration = prepared.calibration;
    try {
      lowered_plan = PlanGraph(std::move(*after_patterns), signature, options, &request, &lowered_report);
      lowered.program = lowered_plan->program;
    } catch (const std::exception& e) {  // a kernel without the dtype, say: the float32 plan stands
      lowered.failure = FirstLineOf(e);
    }
  }
  c10::intrusive_ptr<Program> program =
      ChoosePrecision(planned.program, after_patterns ? &lowered : nullptr, planned.inputs, options, report,
                      prepared.calibration);
  if (lowered_plan && program.get() == lowered_plan->program.get()) {
    std::optional<PrecisionDecision> decision = report->precision;
    *report = std::move(lowered_report);
    report->precision = std::move(decision);
    planned = std::move(*lowered_plan);
  }

  torch::jit::Module optimized("__torch__.autograph.OptimizedModule");
  optimized.register_attribute("training", c10::BoolType::get(), false);
  optimized.register_attribute("program", c10::getCustomClassType<c10::intrusive_ptr<Program>>(),
                               c10::IValue(program));
  DefineForward(optimized, module);

  report->operators_before = kernels_before;
  report->memory_bound_before = memory_bound_before;
  ReportSchedule(*planned.graph, planned.schedule, options, planned.search_seconds, report);  // (+ linears merged)
  CountTorchScriptParts(*planned.graph, report);
  // After the report's lines for the example's plan; their search time adds to search_seconds.
  PlanOtherShapes(planned.lowered, planned.inputs, *planned.graph, options, program.get(), report);
  if (options.plan_new_shapes > 0) program->PlanNewShapes(options.plan_new_shapes, OptimizeOptionsToJson(requested).dump());
  return optimized;
}

}  // namespace
}  // namespace autograph
