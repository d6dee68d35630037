#include "api/plan_schedule.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "measure/fastest_schedule.h"
#include "measure/measured_cost_model.h"
#include "merge/merged_kernel.h"
#include "search/autograph_schedule.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_id.h"
#include "search/cost/device_model.h"
#include "search/ios_schedule.h"
#include "search/nimble_schedule.h"
#include "search/partition_by_min_cut.h"
#include "search/partition_by_topological_runs.h"
#include "search/simple_schedulers.h"

namespace autograph {

namespace {

// The cost model asked for; by default measured on CUDA, analytical on CPU.
std::string CostModelName(const OptimizeOptions& options) {
  if (!options.cost.empty()) return options.cost;
  return options.device.is_cuda() ? "measured" : "analytical";
}

std::unique_ptr<CostModel> MakeCostModel(const OpGraph& graph, const std::vector<c10::IValue>& inputs,
                                         const OptimizeOptions& options) {
  const std::string name = CostModelName(options);
  if (name == "analytical") {
    return std::make_unique<AnalyticalCostModel>(DeviceModel::ByName(DeviceModelName(options)));
  }
  if (name == "measured") {
    MeasuredCostOptions measured;
    measured.device = options.device;
    measured.cache_path = options.cost_cache;
    measured.cuda_graph = options.cuda_graph;  // stages timed the way the program will run them
    return std::make_unique<MeasuredCostModel>(graph, inputs, measured);
  }
  throw Error("unknown cost model '" + name + "': use analytical or measured");
}

// Seconds for a search: the option, or when it is negative 60 with measured costs (every new stage
// runs on the device) and none with analytical ones.
double SearchTimeLimit(const OptimizeOptions& options) {
  if (options.time_limit >= 0) return options.time_limit;
  return CostModelName(options) == "measured" ? 60.0 : 0.0;
}

// IOS block by block: blocks are runs of at most `block` consecutive operators in topological order,
// so the blocks' schedules concatenate into a valid one. Simple fixed cuts, as IOS's own code makes
// them.
Schedule BlockwiseIosSchedule(const OpGraph& graph, CostModel& cost, const OptimizeOptions& options,
                              OptimizeReport* report) {
  if (options.ios_block < 1 || options.ios_block > 64) throw Error("ios block size must be in 1..64");
  IosOptions ios;
  ios.max_ops_per_group = options.ios_r;
  ios.max_groups_per_stage = std::min(options.ios_s, options.max_streams);
  if (options.merge) ios.merge_classes = MergeableClasses(graph);
  PartitionOptions partition;
  partition.max_block_ops = options.ios_block;
  const std::vector<std::vector<int>> blocks = PartitionByTopologicalRuns(graph, partition);
  // Measured costs run every distinct stage on the device (IOS measured ~213k of them on NasNet):
  // by default the search gets 60 s, each block an equal share of what is left.
  const double time_limit = SearchTimeLimit(options);
  const auto start = std::chrono::steady_clock::now();
  Schedule schedule;
  double predicted = 0;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (time_limit > 0) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ios.time_limit_seconds = std::max(1e-3, (time_limit - spent) / static_cast<double>(blocks.size() - b));
    }
    SearchStats stats;
    Schedule part = IosSchedule(graph, blocks[b], cost, ios, &stats);
    report->blocks_over_budget += stats.over_time;
    predicted += stats.predicted_ms;
    report->states_explored += stats.states;
    report->stages_evaluated += stats.stages_evaluated;
    for (Stage& stage : part.stages) schedule.stages.push_back(std::move(stage));
    if (options.progress) options.progress(static_cast<int>(b + 1), static_cast<int>(blocks.size()));
  }
  report->predicted_ms = predicted;
  return schedule;
}

// AutoGraph: the backtracking DP per block over two partitions under the same bounds (the flow-based
// min cut, and runs in topological order, which suit graphs whose narrow points are not cheap
// tensors), the candidates of both ranked together, then on-board verification of the best few.
Schedule AutographPlan(const OpGraph& graph, const std::vector<c10::IValue>& inputs, CostModel& cost,
                       const OptimizeOptions& options, OptimizeReport* report) {
  PartitionOptions partition;
  partition.max_block_ops = options.block_ops;
  partition.max_block_states = options.block_states;
  AutographOptions search;
  search.alpha = options.alpha;
  search.max_ops_per_group = options.autograph_r;
  search.max_groups_per_stage = options.max_streams;
  search.budget = options.budget;
  search.candidates = std::max(1, options.verify);
  if (options.merge) search.merge_classes = MergeableClasses(graph);
  const std::vector<std::vector<int>> partitions[] = {PartitionByMinCut(graph, partition),
                                                      PartitionByTopologicalRuns(graph, partition)};
  const int total_blocks = static_cast<int>(partitions[0].size() + partitions[1].size());
  int blocks_before = 0;
  std::vector<std::pair<double, Schedule>> ranked;  // (predicted ms, candidate), distinct schedules
  std::set<std::string> seen;
  const double time_limit = SearchTimeLimit(options);
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < 2; ++p) {
    const std::vector<std::vector<int>>& blocks = partitions[p];
    if (time_limit > 0) {  // half to the first partition, what is left to the second
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      search.time_limit_seconds = std::max(1e-3, p == 0 ? time_limit / 2 : time_limit - spent);
    }
    if (options.progress)
      search.progress = [&, blocks_before](int done, int) { options.progress(blocks_before + done, total_blocks); };
    AutographResult one = AutographSearch(graph, blocks, cost, search);
    blocks_before += static_cast<int>(blocks.size());
    report->states_explored += one.stats.states;
    report->stages_evaluated += one.stats.stages_evaluated;
    report->blocks_over_budget += one.stats.blocks_over_budget;
    for (size_t i = 0; i < one.candidates.size(); ++i)
      if (seen.insert(ScheduleToJson(one.candidates[i]).dump()).second)
        ranked.emplace_back(one.predicted_ms[i], std::move(one.candidates[i]));
  }
  // Best predicted first; ties keep the min-cut partition's candidates ahead.
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  report->predicted_ms = ranked[0].first;
  if (options.verify <= 0) return std::move(ranked[0].second);
  // On-board verification: the measured latency of the whole run decides (a cost model sees stages
  // one at a time), among the search's best and the schedules it could have settled for instead.
  std::vector<ScheduleCandidate> candidates;
  std::map<std::string, size_t> index_of;  // schedule JSON -> candidate, so each runs once
  auto add = [&](std::string name, Schedule schedule, double predicted_ms) {
    const std::string key = ScheduleToJson(schedule).dump();
    auto it = index_of.find(key);
    if (it != index_of.end()) {
      candidates[it->second].name += " = " + name;
      return;
    }
    index_of[key] = candidates.size();
    candidates.push_back(ScheduleCandidate{std::move(name), std::move(schedule), predicted_ms});
  };
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < options.verify; ++i)
    add("autograph " + std::to_string(i + 1), std::move(ranked[i].second), ranked[i].first);
  Schedule sequential = SequentialSchedule(graph), nimble = NimbleSchedule(graph, options.max_streams);
  const double sequential_ms = cost.ScheduleMs(graph, sequential), nimble_ms = cost.ScheduleMs(graph, nimble);
  add("sequential", std::move(sequential), sequential_ms);
  add("nimble", std::move(nimble), nimble_ms);
  FastestScheduleOptions timing;
  timing.cuda_graph = options.cuda_graph;
  const size_t chosen = FastestSchedule(graph, candidates, inputs, options.device, timing, &report->candidates);
  report->candidates_verified = static_cast<int>(candidates.size());
  report->chosen = candidates[chosen].name;
  report->measured_ms = report->candidates[chosen].measured_ms;
  report->predicted_ms = candidates[chosen].predicted_ms;
  return std::move(candidates[chosen].schedule);
}

}  // namespace

std::string DeviceModelName(const OptimizeOptions& options) {
  if (!options.device_model.empty()) return options.device_model;
  const std::string calibrated = CalibratedDeviceModelPath(DeviceId(options.device));
  std::error_code ec;
  if (!calibrated.empty() && std::filesystem::is_regular_file(calibrated, ec)) return calibrated;
  return options.device.is_cuda() ? "h100" : "cpu";
}

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
  Schedule schedule = options.method == "ios" ? BlockwiseIosSchedule(graph, *cost, options, report)
                                               : AutographPlan(graph, inputs, *cost, options, report);
  if (auto* measured = dynamic_cast<MeasuredCostModel*>(cost.get())) {
    report->stages_measured = measured->measurements();
    report->cost_cache_hits = measured->cache_hits();
    measured->Flush();  // a cache that cannot be written is an error here, not a silent miss next time
  }
  return schedule;
}

}  // namespace autograph
