#pragma once
// Schedulers that need no cost model: baselines, starting points for searches, and test inputs.
#include <cstdint>

#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

// One stage with one group listing every op in id (topological) order; no stages for an empty graph.
Schedule SequentialSchedule(const OpGraph& graph);

// Wavefront list scheduling with at most max_groups groups per stage, critical path first; the full
// rule is in greedy_schedule.cpp. Throws ScheduleError when max_groups < 1.
Schedule GreedySchedule(const OpGraph& graph, int max_groups);

// A random valid schedule with at most max_groups groups per stage, the same for the same seed (on
// every platform). Every valid schedule of the graph has a nonzero chance, so property tests see
// one-op stages, long chains and full-width stages. Throws ScheduleError when max_groups < 1.
Schedule RandomSchedule(const OpGraph& graph, uint64_t seed, int max_groups);

}  // namespace autograph
