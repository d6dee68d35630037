#pragma once
// The simplest partition for a block-by-block schedule search: runs of consecutive operators in
// topological (id) order, each as long as the bounds allow. Any such run is convex (a path between
// two of its ops only visits ids in between), and every edge goes to the same or a later run. IOS's
// own code cuts a graph this way; autograph's search tries it beside the min-cut partition.
#include <vector>

#include "core/op_graph.h"
#include "search/partition_by_min_cut.h"

namespace autograph {

// Blocks in the order of their ops; the same bounds and errors as PartitionByMinCut. A run grows
// op by op while it stays within max_block_ops and max_block_states.
std::vector<std::vector<int>> PartitionByTopologicalRuns(const OpGraph& graph, const PartitionOptions& options = {});

}  // namespace autograph
