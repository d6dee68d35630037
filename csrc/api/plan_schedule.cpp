#include "api/plan_schedule.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/resolve_options.h"
#include "api/timeline.h"
#include "autograph/error.h"
#include "measure/fastest_schedule.h"
#include "measure/measured_cost_model.h"
#include "merge/merged_kernel.h"
#include "search/autograph_plan.h"
#include "search/blockwise_ios_schedule.h"
#include "search/cost/analytical_cost_model.h"
#include "search/cost/device_id.h"
#include "search/cost/device_model.h"
#include "search/nimble_schedule.h"
#include "search/simple_schedulers.h"

namespace autograph {

namespace {

// `values`: the TorchScript graph's recorded run, when there is one; an exported program's graph is
// recorded by the measured model itself on `inputs`.
std::unique_ptr<CostModel> MakeCostModel(const OpGraph& graph, const std::vector<c10::IValue>& inputs,
                                         const GraphValues* values, const OptimizeOptions& options) {
  const std::string name = CostModelName(options);
  if (name == "analytical") {
    return std::make_unique<AnalyticalCostModel>(DeviceModel::ByName(DeviceModelName(options)));
  }
  if (name == "measured") {
    MeasuredCostOptions measured;
    measured.device = options.executor.device;
    measured.cache_path = options.cost.cache;
    measured.cuda_graph = options.executor.cuda_graph;  // stages timed the way the program will run them
    if (values) return std::make_unique<MeasuredCostModel>(graph, *values, measured);
    return std::make_unique<MeasuredCostModel>(graph, inputs, measured);
  }
  throw Error("unknown cost model '" + name + "': use analytical or measured");
}

// Seconds for a search: the option, or when it is negative 60 with measured costs (every new stage
// runs on the device) and none with analytical ones.
double SearchTimeLimit(const OptimizeOptions& options, const CostModel& cost) {
  if (options.search.time_limit >= 0) return options.search.time_limit;
  return dynamic_cast<const MeasuredCostModel*>(&cost) ? 60.0 : 0.0;
}

// On-board verification: the measured latency of the whole run decides (a cost model sees stages one
// at a time), among the search's best and the schedules it could have settled for instead.
Schedule VerifyOnBoard(const OpGraph& graph, const std::vector<c10::IValue>& inputs, CostModel& cost,
                       const OptimizeOptions& options, std::vector<RankedSchedule> ranked, OptimizeReport* report) {
  std::vector<ScheduleCandidate> candidates;
  std::map<std::string, size_t> index_of;  // TimingKey -> candidate, so each runs once
  auto add = [&](std::string name, Schedule schedule, double predicted_ms) {
    // Schedules that run alike (the same operators on one stream, or the same stages) are timed once,
    // as the first of them (the search's best comes first).
    const std::string key = TimingKey(schedule);
    schedule = JoinOneGroupStages(schedule);
    auto it = index_of.find(key);
    if (it != index_of.end()) {
      candidates[it->second].name += " = " + name;
      return;
    }
    index_of[key] = candidates.size();
    candidates.push_back(ScheduleCandidate{std::move(name), std::move(schedule), predicted_ms});
  };
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < options.search.verify; ++i)
    add("autograph " + std::to_string(i + 1), std::move(ranked[i].schedule), ranked[i].predicted_ms);
  Schedule sequential = SequentialSchedule(graph), nimble = NimbleSchedule(graph, options.search.max_streams);
  const double sequential_ms = cost.ScheduleMs(graph, sequential), nimble_ms = cost.ScheduleMs(graph, nimble);
  add("sequential", std::move(sequential), sequential_ms);
  add("nimble", std::move(nimble), nimble_ms);
  FastestScheduleOptions timing;
  timing.cuda_graph = options.executor.cuda_graph;
  const size_t chosen = FastestSchedule(graph, candidates, inputs, options.executor.device, timing, &report->candidates);
  report->candidates_verified = static_cast<int>(candidates.size());
  report->chosen = candidates[chosen].name;
  report->measured_ms = report->candidates[chosen].measured_ms;
  report->predicted_ms = candidates[chosen].predicted_ms;
  return std::move(candidates[chosen].schedule);
}

// IOS block by block over fixed cuts in topological order, as IOS's own code makes them.
Schedule PlanIos(const OpGraph& graph, CostModel& cost, const OptimizeOptions& options, OptimizeReport* report) {
  BlockwiseIosOptions blockwise;
  blockwise.ios.max_ops_per_group = options.search.ios_r;
  blockwise.ios.max_groups_per_stage = std::min(options.search.ios_s, options.search.max_streams);
  blockwise.block_ops = options.search.ios_block;
  if (options.search.merge) blockwise.ios.merge_classes = MergeableClasses(graph);
  // Measured costs run every distinct stage on the device: by default the search gets 60 s.
  blockwise.time_limit_seconds = SearchTimeLimit(options, cost);
  blockwise.progress = options.search.progress;
  BlockwiseIosStats stats;
  Schedule schedule = BlockwiseIosSchedule(graph, cost, blockwise, &stats);
  report->blocks_over_budget += stats.blocks_over_budget;
  report->states_explored += stats.total.states;
  report->stages_evaluated += stats.total.stages_evaluated;
  report->predicted_ms = stats.total.predicted_ms;
  return schedule;
}

// AutoGraph: the search's ranked candidates (search/autograph_plan.h), then on-board verification of
// the best few beside the schedules it could have settled for instead.
Schedule PlanAutograph(const OpGraph& graph, const std::vector<c10::IValue>& inputs, CostModel& cost,
                       const OptimizeOptions& options, OptimizeReport* report) {
  AutographPlanOptions plan;
  plan.partition.max_block_ops = options.search.block_ops;
  plan.partition.max_block_states = options.search.block_states;
  plan.search.alpha = options.search.alpha;
  plan.search.max_ops_per_group = options.search.autograph_r;
  plan.search.max_groups_per_stage = options.search.max_streams;
  plan.search.budget = options.search.budget;
  plan.search.candidates = std::max(1, options.search.verify);
  if (options.search.merge) plan.search.merge_classes = MergeableClasses(graph);
  plan.time_limit_seconds = SearchTimeLimit(options, cost);
  plan.progress = options.search.progress;
  AutographStats stats;
  std::vector<RankedSchedule> ranked = AutographPlan(graph, cost, plan, &stats);
  report->states_explored += stats.states;
  report->stages_evaluated += stats.stages_evaluated;
  report->blocks_over_budget += stats.blocks_over_budget;
  if (ranked.empty()) throw Error("the autograph search returned no schedule (internal error)");
  report->predicted_ms = ranked[0].predicted_ms;
  if (options.search.verify <= 0) return std::move(ranked[0].schedule);
  return VerifyOnBoard(graph, inputs, cost, options, std::move(ranked), report);
}

}  // namespace

std::string CostModelName(const OptimizeOptions& options) {
  if (!options.cost.model.empty()) return options.cost.model;
  return options.executor.device.is_cuda() ? "measured" : "analytical";
}

std::string DeviceModelName(const OptimizeOptions& options) {
  if (!options.cost.device_model.empty()) return options.cost.device_model;
  const std::string calibrated = CalibratedDeviceModelPath(DeviceId(options.executor.device));
  std::error_code ec;
  if (!calibrated.empty() && std::filesystem::is_regular_file(calibrated, ec)) return calibrated;
  return options.executor.device.is_cuda() ? "h100" : "cpu";
}

Schedule PlanSchedule(const OpGraph& graph, const std::vector<c10::IValue>& inputs, const GraphValues* values,
                      const OptimizeOptions& options, OptimizeReport* report) {
  if (options.search.max_streams < 1) throw Error("max_streams must be at least 1");
  report->method = options.search.method;
  const Method method = MethodOf(options);
  switch (method) {
    case Method::Sequential: return SequentialSchedule(graph);
    case Method::Greedy: return GreedySchedule(graph, options.search.max_streams);
    case Method::Nimble: return NimbleSchedule(graph, options.search.max_streams);
    case Method::Ios:
    case Method::Autograph: break;
  }
  std::unique_ptr<CostModel> cost = MakeCostModel(graph, inputs, values, options);
  report->cost = cost->name();
  Schedule schedule = method == Method::Ios ? PlanIos(graph, *cost, options, report)
                                            : PlanAutograph(graph, inputs, *cost, options, report);
  if (auto* measured = dynamic_cast<MeasuredCostModel*>(cost.get())) {
    report->stages_measured = measured->measurements();
    report->cost_cache_hits = measured->cache_hits();
    measured->Flush();  // a cache that cannot be written is an error here, not a silent miss next time
  }
  return schedule;
}

void ReportSchedule(const OpGraph& graph, const Schedule& schedule, const OptimizeOptions& options,
                    double search_seconds, OptimizeReport* report) {
  report->device = options.executor.device.str();
  for (const OpNode& n : graph.nodes()) report->memory_bound_after += n.kind == OpKind::MemoryBound;
  for (const Stage& stage : schedule.stages)
    if (stage.strategy == StageStrategy::Merge && graph.node(stage.groups[0][0]).op == "aten::linear")
      report->linears_merged += static_cast<int>(stage.groups.size()) - 1;
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
}

}  // namespace autograph
