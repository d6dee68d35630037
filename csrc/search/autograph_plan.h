#pragma once
// AutoGraph's planning over the whole graph: the backtracking DP (AutographSearch) per block of two
// partitions under the same bounds — the flow-based min cut, and runs in topological order, which
// suit graphs whose narrow points are not cheap tensors — and the candidates of both ranked together
// by predicted cost. What is kept is decided afterwards, by on-board verification (the driver's).
#include <functional>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "search/autograph_schedule.h"
#include "search/cost/cost_model.h"
#include "search/partition_by_min_cut.h"

namespace autograph {

struct AutographPlanOptions {
  PartitionOptions partition;  // bounds of both partitions' blocks
  AutographOptions search;     // its time_limit_seconds and progress are set per partition from the two below
  double time_limit_seconds = 0;           // both partitions: half to the first, what is left to the second; 0 = none
  std::function<void(int, int)> progress;  // (blocks done, blocks in all) over both partitions
};

struct RankedSchedule {
  double predicted_ms = 0;
  Schedule schedule;
};

// Distinct whole-graph candidates, best predicted first (ties: the min-cut partition's first).
// `stats` (optional) sums both searches.
std::vector<RankedSchedule> AutographPlan(const OpGraph& graph, CostModel& cost, const AutographPlanOptions& options,
                                          AutographStats* stats = nullptr);

}  // namespace autograph
