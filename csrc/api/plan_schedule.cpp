#include "api/plan_schedule.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <torch/cuda.h>

#include "autograph/analytical_cost_model.h"
#include "autograph/autograph_schedule.h"
#include "autograph/error.h"
#include "autograph/ios_schedule.h"
#include "autograph/merged_convolution.h"
#include "autograph/nimble_schedule.h"
#include "autograph/partition_by_min_cut.h"
#include "autograph/simple_schedulers.h"
#include "autograph/stage_executor.h"

namespace autograph {

namespace {

std::unique_ptr<CostModel> MakeCostModel(const OpGraph& graph, const std::vector<c10::IValue>& inputs,
                                         const OptimizeOptions& options) {
  if (options.cost == "analytical") {
    std::string device_model = options.device_model;
    if (device_model.empty()) device_model = options.device.is_cuda() ? "h100" : "cpu";
    return std::make_unique<AnalyticalCostModel>(DeviceModel::ByName(device_model));
  }
  if (options.cost == "measured")
    throw Error("--cost measured: the measured cost model is not in this build yet; use --cost analytical "
                "(autograph still verifies its best candidates on the device with --verify)");
  throw Error("unknown cost model '" + options.cost + "': use analytical or measured");
}

// IOS block by block: blocks are runs of at most `block` consecutive operators in topological order
// (any such run is convex, and earlier blocks hold every predecessor from outside), so the blocks'
// schedules concatenate into a valid one. Simple fixed cuts, as IOS's own code makes them.
Schedule BlockwiseIosSchedule(const OpGraph& graph, CostModel& cost, const OptimizeOptions& options,
                              OptimizeReport* report) {
  if (options.ios_block < 1 || options.ios_block > 64) throw Error("ios block size must be in 1..64");
  IosOptions ios;
  ios.max_ops_per_group = options.ios_r;
  ios.max_groups_per_stage = std::min(options.ios_s, options.max_streams);
  if (options.merge) ios.merge_classes = MergeableConvolutionClasses(graph);
  Schedule schedule;
  double predicted = 0;
  for (int begin = 0; begin < graph.size(); begin += options.ios_block) {
    std::vector<int> block;
    for (int v = begin; v < std::min(graph.size(), begin + options.ios_block); ++v) block.push_back(v);
    SearchStats stats;
    Schedule part = IosSchedule(graph, block, cost, ios, &stats);
    predicted += stats.predicted_ms;
    report->states_explored += stats.states;
    report->stages_evaluated += stats.stages_evaluated;
    for (Stage& stage : part.stages) schedule.stages.push_back(std::move(stage));
    if (options.progress) options.progress(std::min(graph.size(), begin + options.ios_block), graph.size());
  }
  report->predicted_ms = predicted;
  return schedule;
}

// Mean of the fastest 30% of `repeats` runs of the whole schedule on the device, after `warmup`
// runs (on CUDA each run ends with a device synchronize, so the time covers the kernels).
double RobustRunMs(const OpGraph& graph, const Schedule& schedule, const std::vector<c10::IValue>& inputs,
                   const OptimizeOptions& options, int warmup, int repeats) {
  StageExecutor executor(graph, schedule, ExecutorOptions{options.device, options.cuda_graph});
  auto run = [&] {
    executor.Run(inputs);
    if (options.device.is_cuda()) torch::cuda::synchronize();
  };
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const size_t fastest = std::max<size_t>(1, ms.size() * 3 / 10);
  double sum = 0;
  for (size_t i = 0; i < fastest; ++i) sum += ms[i];
  return sum / static_cast<double>(fastest);
}

// AutoGraph: flow-based partition, the backtracking DP per block, then on-board verification of the
// best few whole-graph candidates.
Schedule AutographPlan(const OpGraph& graph, const std::vector<c10::IValue>& inputs, CostModel& cost,
                       const OptimizeOptions& options, OptimizeReport* report) {
  PartitionOptions partition;
  partition.max_block_ops = options.block_ops;
  AutographOptions search;
  search.alpha = options.alpha;
  search.max_ops_per_group = options.autograph_r;
  search.max_groups_per_stage = options.max_streams;
  search.budget = options.budget;
  search.candidates = std::max(1, options.verify);
  if (options.merge) search.merge_classes = MergeableConvolutionClasses(graph);
  search.progress = options.progress;
  const AutographResult result = AutographSearch(graph, PartitionByMinCut(graph, partition), cost, search);
  report->states_explored = result.stats.states;
  report->stages_evaluated = result.stats.stages_evaluated;
  size_t chosen = 0;
  report->predicted_ms = result.predicted_ms[0];
  if (options.verify > 0) {
    // The measured latency of the whole run decides: a cost model sees stages one at a time.
    double fastest = 0;
    for (size_t i = 0; i < result.candidates.size() && static_cast<int>(i) < options.verify; ++i) {
      const double ms = RobustRunMs(graph, result.candidates[i], inputs, options, /*warmup=*/3, /*repeats=*/10);
      ++report->candidates_verified;
      if (i == 0 || ms < fastest) {
        fastest = ms;
        chosen = i;
      }
    }
    report->measured_ms = fastest;
    report->predicted_ms = result.predicted_ms[chosen];
  }
  return result.candidates[chosen];
}

}  // namespace

Schedule PlanSchedule(const OpGraph& graph, const std::vector<c10::IValue>& inputs, const OptimizeOptions& options,
                      OptimizeReport* report) {
  if (options.max_streams < 1) throw Error("max_streams must be at least 1");
  report->method = options.method;
  if (options.method == "sequential") return SequentialSchedule(graph);
  if (options.method == "greedy") return GreedySchedule(graph, options.max_streams);
  if (options.method == "nimble") return NimbleSchedule(graph, options.max_streams);
  if (options.method != "ios" && options.method != "autograph")
    throw Error("unknown method '" + options.method + "': use sequential, greedy, nimble, ios or autograph");
  std::unique_ptr<CostModel> cost = MakeCostModel(graph, inputs, options);
  report->cost = cost->name();
  if (options.method == "ios") return BlockwiseIosSchedule(graph, *cost, options, report);
  return AutographPlan(graph, inputs, *cost, options, report);
}

}  // namespace autograph
