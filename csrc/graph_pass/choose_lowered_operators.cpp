#include "graph_pass/choose_lowered_operators.h"

#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/operator_flops.h"
#include "core/output_error.h"
#include "executor/compiled_graph.h"
#include "executor/float32_switches.h"
#include "graph_pass/graph_values.h"
#include "graph_pass/lower_precision.h"
#include "graph_pass/top_level_nodes.h"

namespace autograph {
namespace {

std::vector<at::Tensor> TensorsOf(const std::vector<c10::IValue>& values) {
  std::vector<at::Tensor> out;
  for (const c10::IValue& v : values) CollectTensors(v, &out);
  return out;
}

// The graph's outputs on each of `calls` (arguments), run as TorchScript runs it.
std::vector<std::vector<at::Tensor>> OutputsOn(const std::shared_ptr<torch::jit::Graph>& graph,
                                               const std::vector<std::vector<c10::IValue>>& calls) {
  std::vector<std::vector<at::Tensor>> out;
  for (const std::vector<c10::IValue>& call : calls) out.push_back(TensorsOf(GraphValues::Record(graph, call).outputs()));
  return out;
}

// The reference: the graph's outputs in full float32, a traced convolution's own allow_tf32 argument
// (fixed at trace time, out of reach of the process's switches) read as false too.
std::vector<std::vector<at::Tensor>> Float32OutputsOn(const std::shared_ptr<torch::jit::Graph>& graph,
                                                      const std::vector<std::vector<c10::IValue>>& calls) {
  at::NoGradGuard no_grad;
  const CompiledGraph compiled(graph, TopLevelNodesOf(*graph).order, /*full_float32=*/true);
  std::vector<std::vector<at::Tensor>> out;
  for (const std::vector<c10::IValue>& call : calls) out.push_back(TensorsOf(compiled.Run(call)));
  return out;
}

// The graph's outputs on `calls` with the `chosen` operators lowered (a copy of the graph).
std::vector<std::vector<at::Tensor>> OutputsLowered(const GraphValues& values, const std::vector<bool>& chosen,
                                                    c10::ScalarType dtype,
                                                    const std::vector<std::vector<c10::IValue>>& calls) {
  std::shared_ptr<torch::jit::Graph> copy = values.graph()->copy();
  LowerMatmulsAndConvolutions(copy, values.ForCopy(copy), dtype, &chosen);
  return OutputsOn(copy, calls);
}

// Bytes a float32 operator reads and writes: its tensor inputs and its output.
double BytesMoved(const std::vector<c10::IValue>& inputs, const c10::IValue* output) {
  double elements = 0;
  for (const c10::IValue& v : inputs)
    if (v.isTensor()) elements += static_cast<double>(v.toTensor().numel());
  if (output && output->isTensor()) elements += static_cast<double>(output->toTensor().numel());
  return 4.0 * elements;
}

// Each operator's run (of at most `runs`, contiguous in order, of about equal shares of `flops`; an
// operator of many FLOPs may leave the run after it empty).
std::vector<int> RunsOf(const std::vector<double>& flops, int runs) {
  const double total = std::accumulate(flops.begin(), flops.end(), 0.0);
  std::vector<int> run_of(flops.size());
  double before = 0;
  for (size_t i = 0; i < flops.size(); ++i) {
    run_of[i] = std::min(runs - 1, static_cast<int>(before / total * runs));
    before += flops[i];
  }
  return run_of;
}

}  // namespace

void ChooseLoweredOperators(const GraphValues& values, LoweringRequest* request) {
  const FullPrecisionScope full;  // the reference and the trials: no TF32 from the user's switches
  const std::vector<torch::jit::Node*> found = LowerableOperators(*values.graph(), values);
  request->chosen.assign(found.size(), false);
  request->lowered = 0;
  request->whole_error = request->error = -1;
  request->runs_tried.clear();
  // The compute-bound ones (positions in `found`) and their FLOPs.
  std::vector<size_t> candidates;
  std::vector<double> flops;
  for (size_t i = 0; i < found.size(); ++i) {
    const std::vector<c10::IValue>& in = *values.InputsOf(found[i]);
    const c10::IValue* out = values.Find(found[i]->output());
    const double f = EstimateFlops(found[i]->kind().toQualString(), in,
                                   out ? std::vector<c10::IValue>{*out} : std::vector<c10::IValue>{});
    if (f < request->least_flops_per_byte * BytesMoved(in, out)) continue;
    candidates.push_back(i);
    flops.push_back(std::max(1.0, f));
  }
  const size_t n = candidates.size();
  request->lowerable = static_cast<int>(n);
  if (n == 0) return;
  std::vector<std::vector<c10::IValue>> calls = {values.inputs()};
  calls.insert(calls.end(), request->calibration.begin(), request->calibration.end());
  const std::vector<std::vector<at::Tensor>> reference = Float32OutputsOn(values.graph(), calls);
  // A trial whose graph fails to run (an operator without a kernel for the dtype on this device) counts
  // as beyond any tolerance: the runs without that operator may still be lowered.
  auto error_with = [&](const std::vector<bool>& chosen) {
    std::vector<bool> marked(found.size(), false);
    for (size_t k = 0; k < n; ++k) marked[candidates[k]] = chosen[k];
    try {
      return MeasureOutputs(request->accuracy, OutputsLowered(values, marked, request->dtype, calls), reference).loss;
    } catch (const std::exception&) {
      return std::numeric_limits<double>::infinity();
    }
  };
  auto mark = [&](const std::vector<bool>& chosen) {
    for (size_t k = 0; k < n; ++k) request->chosen[candidates[k]] = chosen[k];
    request->lowered = static_cast<int>(std::count(chosen.begin(), chosen.end(), true));
  };
  const std::vector<bool> all(n, true);
  request->whole_error = error_with(all);
  if (request->whole_error <= request->tolerance) {  // (NaN is not)
    mark(all);
    request->error = request->whole_error;
    return;
  }
  const std::vector<int> run_of = RunsOf(flops, std::max(1, std::min<int>(request->runs, static_cast<int>(n))));
  std::vector<LoweredRun>& tried = request->runs_tried;
  tried.assign(run_of.back() + 1, LoweredRun{});
  for (size_t i = 0; i < n; ++i) {
    ++tried[run_of[i]].operators;
    tried[run_of[i]].flops += flops[i];
  }
  std::vector<int> order(tried.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return tried[a].flops > tried[b].flops; });
  std::vector<bool> chosen(n, false);
  for (int run : order) {
    if (tried[run].flops <= 0) continue;
    std::vector<bool> tentative = chosen;
    for (size_t i = 0; i < n; ++i) tentative[i] = tentative[i] || run_of[i] == run;
    if (tentative == all) {  // the whole graph, which missed already
      tried[run].error = request->whole_error;
      continue;
    }
    const double error = error_with(tentative);
    tried[run].error = error;
    if (error <= request->tolerance) {
      chosen = std::move(tentative);
      request->error = error;
      tried[run].lowered = true;
    }
  }
  mark(chosen);
}

}  // namespace autograph
