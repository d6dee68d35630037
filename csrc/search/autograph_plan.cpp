#include "search/autograph_plan.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "search/partition_by_topological_runs.h"

namespace autograph {

std::vector<RankedSchedule> AutographPlan(const OpGraph& graph, CostModel& cost, const AutographPlanOptions& options,
                                          AutographStats* stats) {
  const std::vector<std::vector<int>> partitions[] = {PartitionByMinCut(graph, options.partition),
                                                      PartitionByTopologicalRuns(graph, options.partition)};
  const int total_blocks = static_cast<int>(partitions[0].size() + partitions[1].size());
  AutographOptions search = options.search;
  AutographStats total;
  int blocks_before = 0;
  std::vector<RankedSchedule> ranked;
  std::set<std::string> seen;
  const auto start = std::chrono::steady_clock::now();
  for (int p = 0; p < 2; ++p) {
    const std::vector<std::vector<int>>& blocks = partitions[p];
    if (options.time_limit_seconds > 0) {  // half to the first partition, what is left to the second
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      search.time_limit_seconds =
          std::max(1e-3, p == 0 ? options.time_limit_seconds / 2 : options.time_limit_seconds - spent);
    }
    if (options.progress)
      search.progress = [&, blocks_before](int done, int) { options.progress(blocks_before + done, total_blocks); };
    AutographResult one = AutographSearch(graph, blocks, cost, search);
    blocks_before += static_cast<int>(blocks.size());
    total.blocks += one.stats.blocks;
    total.blocks_over_budget += one.stats.blocks_over_budget;
    total.states += one.stats.states;
    total.stages_evaluated += one.stats.stages_evaluated;
    total.endings += one.stats.endings;
    total.pruned += one.stats.pruned;
    total.seconds += one.stats.seconds;
    for (size_t i = 0; i < one.candidates.size(); ++i)
      if (seen.insert(ScheduleToJson(one.candidates[i]).dump()).second)
        ranked.push_back({one.predicted_ms[i], std::move(one.candidates[i])});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedSchedule& a, const RankedSchedule& b) { return a.predicted_ms < b.predicted_ms; });
  total.predicted_ms = ranked.empty() ? 0 : ranked[0].predicted_ms;
  if (stats) *stats = total;
  return ranked;
}

}  // namespace autograph
