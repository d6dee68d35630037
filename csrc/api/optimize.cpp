// The rewrite: lower, import, schedule, and wrap the result in a new module whose forward calls
// autograph::run with a Program attribute.
#include <torch/csrc/jit/frontend/resolver.h>
#include <torch/csrc/jit/frontend/sugared_value.h>
#include <torch/csrc/jit/ir/ir.h>
#include <ATen/Context.h>
#include <torch/script.h>

#include <chrono>
#include <sstream>

#include "api/apply_rewrites.h"
#include "api/plan_schedule.h"
#include "api/prepare_module.h"
#include "autograph/error.h"
#include "autograph/optimize.h"
#include "autograph/program.h"
#include "executor/validate_schedule.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/merge_sibling_linears.h"

namespace autograph {

namespace {

// TorchScript expression that rebuilds one output from the flat tensor list `outs`.
std::string OutputExpression(const c10::IValue& value, int* next) {
  if (value.isTensor()) return "outs[" + std::to_string((*next)++) + "]";
  if (value.isTuple()) {
    std::string s = "(";
    for (const auto& e : value.toTupleRef().elements()) s += OutputExpression(e, next) + ", ";
    return s + ")";
  }
  if (value.isTensorList()) {
    std::string s = "[";
    for (size_t i = 0; i < value.toTensorVector().size(); ++i) s += (i ? ", " : "") + OutputExpression(value.toTensorVector()[i], next);
    return s + "]";
  }
  throw UnsupportedModelError(std::string("forward returns a ") + value.tagKind() +
                              "; autograph supports outputs that are tensors, or tuples and lists of tensors");
}

// Name resolution for the generated forward: `autograph.run` is the op autograph::run, `torch` is
// aten as usual (the native resolver has no `torch.ops`).
struct AutographResolver : torch::jit::Resolver {
  std::shared_ptr<torch::jit::SugaredValue> resolveValue(const std::string& name, torch::jit::GraphFunction&,
                                                         const torch::jit::SourceRange&) override {
    if (name == "autograph") return std::make_shared<torch::jit::BuiltinModule>("autograph");
    if (name == "torch") return std::make_shared<torch::jit::BuiltinModule>("aten");
    return nullptr;
  }
};

}  // namespace

torch::jit::Module optimize(const torch::jit::Module& module, const OptimizeOptions& requested, OptimizeReport* report) {
  OptimizeOptions options = requested;
  options.executor.cuda_graph = requested.executor.cuda_graph && requested.executor.device.is_cuda();  // CUDA only
  std::vector<InputSignature> signature;
  for (size_t i = 0; i < options.example_inputs.size(); ++i) {
    const c10::IValue& v = options.example_inputs[i];
    if (!v.isTensor()) {
      throw InputError("example input " + std::to_string(i) + " is a " + v.tagKind() +
                       "; optimized modules take tensor inputs only");
    }
    signature.push_back(InputSignature{v.toTensor().sizes().vec(), v.toTensor().scalar_type()});
  }
  PreparedModule prepared = PrepareModule(module, options, "optimize");
  std::shared_ptr<torch::jit::Graph>& lowered = prepared.lowered;
  const std::vector<c10::IValue>& inputs = prepared.inputs;
  std::vector<c10::IValue> outputs;
  // What the original launches, counted on the graph as TorchScript would run it (one extra run).
  int kernels_before = 0, memory_bound_before = 0;
  {
    const OpGraph original = ImportOpGraph(lowered, inputs);  // named: nodes() must not outlive it
    for (const OpNode& n : original.nodes()) {
      kernels_before += n.kind != OpKind::View;
      memory_bound_before += n.kind == OpKind::MemoryBound;
    }
  }
  OptimizeReport local_report;
  if (!report) report = &local_report;
  *report = OptimizeReport{};
  const bool searched = options.search.method == "ios" || options.search.method == "autograph";
  ApplyRewrites(lowered, inputs, options, searched, report);
  if (options.search.merge && searched) PrepareSiblingLinearsForMerging(lowered);  // the search may merge them
  OpGraph graph = ImportOpGraph(lowered, inputs, &outputs);

  auto start = std::chrono::steady_clock::now();
  Schedule schedule = PlanSchedule(graph, inputs, options, report);
  const double search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ValidateSchedule(schedule, graph);

  ExecutorOptions executor_options{options.executor.device, options.executor.cuda_graph};
  auto program = c10::make_intrusive<Program>(graph, schedule, signature, executor_options);

  std::ostringstream source;
  source << "def forward(self";
  for (size_t i = 0; i < signature.size(); ++i) source << ", x" << i << ": Tensor";
  source << "):\n    outs = autograph.run([";
  for (size_t i = 0; i < signature.size(); ++i) source << (i ? ", " : "") << "x" << i;
  source << "], self.program)\n    return ";
  int next = 0;
  if (outputs.size() == 1) {
    source << OutputExpression(outputs[0], &next) << "\n";
  } else {
    source << "(";
    for (const auto& o : outputs) source << OutputExpression(o, &next) << ", ";
    source << ")\n";
  }

  torch::jit::Module optimized("__torch__.autograph.OptimizedModule");
  optimized.register_attribute("training", c10::BoolType::get(), false);
  optimized.register_attribute("program", c10::getCustomClassType<c10::intrusive_ptr<Program>>(),
                               c10::IValue(program));
  optimized.define(source.str(), std::make_shared<AutographResolver>());

  {
    report->device = options.executor.device.str();
    report->operators_before = kernels_before;
    report->memory_bound_before = memory_bound_before;
    for (const OpNode& n : graph.nodes()) report->memory_bound_after += n.kind == OpKind::MemoryBound;
    // Linears merged by the substitution, and by Merge stages the search chose.
    for (const Stage& stage : schedule.stages)
      if (stage.strategy == StageStrategy::Merge && graph.node(stage.groups[0][0]).op == "aten::linear")
        report->linears_merged += static_cast<int>(stage.groups.size()) - 1;
    report->operators_after = KernelsLaunched(graph, schedule);
    report->stages = static_cast<int>(schedule.stages.size());
    report->groups = schedule.num_groups();
    report->streams = schedule.max_groups();
    report->search_seconds = search_seconds;
    report->schedule = schedule;
  }
  return optimized;
}

}  // namespace autograph
