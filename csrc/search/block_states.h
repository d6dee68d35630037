#pragma once
// The states of a block: its predecessor-closed subsets, over which the schedule searches' dynamic
// programs range. Their number, not the number of ops, is what a block's search time follows.
#include <cstdint>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

// Whether `ops` (ascending ids of a convex set, at most 64) has at most `bound` states (the empty
// and the full set included). Counts by peeling one sink at a time from the full set and stops past
// `bound`, so it costs O(min(states, bound) * ops).
bool BlockStatesAtMost(const OpGraph& graph, const std::vector<int>& ops, int64_t bound);

}  // namespace autograph
