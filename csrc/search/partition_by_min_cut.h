#pragma once
// Flow-based partition: cuts an OpGraph into convex blocks of bounded size, so that a schedule search
// that is exponential in a block's size (IOS, AutoGraph) can run block by block. Cuts go where the
// tensors crossing are smallest (a minimum s-t cut); the rule is written out in
// csrc/search/partition_by_min_cut.cpp.
#include <cstdint>
#include <vector>

#include "core/op_graph.h"

namespace autograph {

struct PartitionOptions {
  int max_block_ops = 32;  // at most this many operators per block (>= 1, <= 64 when max_block_states is set)
  // At most this many states per block, 0 = no bound. A state is a predecessor-closed subset of the
  // block: what the schedule searches' dynamic programs range over, so their time follows it far
  // more closely than the number of ops (a chain of 32 ops has 33 states, 32 independent ops 2^32).
  // A block of one op always fits.
  int64_t max_block_states = 0;
};

// Splits all operators of `graph` into blocks for the schedule search: each block convex (no path leaves it and re-enters),
// at most max_block_ops operators, ids ascending within a block; blocks listed in an order such that every edge goes from
// an earlier block to a later one or stays inside a block; every op in exactly one block. Cuts where the tensors crossing
// are smallest (min s-t cut, capacity = bytes of the producer's output(s), at least 1), so concurrent branches stay together.
// With max_block_states, a part within max_block_ops but with too many states is bisected too.
// Throws autograph::Error for max_block_ops < 1, max_block_states < 0, or max_block_ops > 64 with max_block_states.
std::vector<std::vector<int>> PartitionByMinCut(const OpGraph& graph, const PartitionOptions& options = {});

}  // namespace autograph
