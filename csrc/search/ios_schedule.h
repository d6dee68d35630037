#pragma once
// IOS: the optimal stage schedule of a block of operators by dynamic programming over "endings"
// (the last stage of a set of operators), under a cost model. The rule and the way endings are
// enumerated are written out in csrc/search/ios_schedule.cpp.
#include <cstdint>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "search/cost/cost_model.h"

namespace autograph {

struct IosOptions {
  int max_ops_per_group = 3;     // r: operators in one group (one stream) of a stage
  int max_groups_per_stage = 8;  // s: groups (streams) in one stage
  // Merge stages: sets of op ids any two or more of which may run as one merged kernel (from
  // MergeableClasses); empty: Concurrent stages only.
  std::vector<std::vector<int>> merge_classes;
  // Seconds for the search of this block; 0 = none. Past it, states not yet solved end greedily (see
  // IosSchedule), so the search stops within about one stage measurement per remaining operator.
  double time_limit_seconds = 0;
};

struct SearchStats {
  int64_t states = 0;            // distinct non-empty states (sets of operators) whose optimum was computed
  int64_t stages_evaluated = 0;  // distinct stages (operator sets) costed with CostModel::StageMs
  int64_t endings = 0;           // (state, ending) pairs tried: IOS's #(S, S')
  double predicted_ms = 0;       // the optimum: cost.ScheduleMs of the returned schedule
  double seconds = 0;            // wall time of the search
  bool over_time = false;        // the time limit cut the search short: the result may not be optimal
};

// The schedule of the operators `block` with the least cost.ScheduleMs among the schedules whose
// stages are either Concurrent, each group a weakly connected set of the stage's operators listed in
// id order, with at most r operators, and at most s groups (groups of one stage share no edge, so
// they are exactly the weakly connected components of the stage); or Merge, two or more operators of
// one merge class, one per group. Only edges inside the block count: operators outside it run before
// or after the whole block.
//
// With a time limit, once it has passed, a state still unsolved takes one ending only, the first of
// these: up to s of its sinks run concurrently, one per group (sinks are never adjacent, so that is
// always allowed), and the endings a state had started to try are not tried further.
//
// `block`: distinct op ids of `graph` (any order; ids are a topological order) forming a convex set
// (no path leaves the block and comes back); pass all ids to schedule the whole graph. At most 64
// operators: partition larger graphs into blocks first. An empty block gives an empty schedule.
// Throws autograph::Error for a block that is too large, not convex or lists a bad or repeated id,
// for r or s below 1, and for a negative time limit.
Schedule IosSchedule(const OpGraph& graph, const std::vector<int>& block, CostModel& cost, const IosOptions& options,
                     SearchStats* stats = nullptr);

}  // namespace autograph
