#include "search/partition_by_topological_runs.h"

#include <algorithm>

#include "search/block_states.h"
#include "search/partition_options_check.h"

namespace autograph {

std::vector<std::vector<int>> PartitionByTopologicalRuns(const OpGraph& graph, const PartitionOptions& options) {
  CheckPartitionOptions(options, "PartitionByTopologicalRuns");
  // Adding an op never lowers a run's state count, so the longest run that fits is found by
  // bisection over its length: a few counts per block instead of one per op.
  auto fits = [&](int begin, int length) {
    if (length <= 1 || options.max_block_states <= 0) return true;
    std::vector<int> run(length);
    for (int i = 0; i < length; ++i) run[i] = begin + i;
    return BlockStatesAtMost(graph, run, options.max_block_states);
  };
  std::vector<std::vector<int>> blocks;
  for (int begin = 0; begin < graph.size();) {
    int lo = 1, hi = std::min(options.max_block_ops, graph.size() - begin);  // fits(lo) holds
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (fits(begin, mid)) lo = mid;
      else hi = mid - 1;
    }
    std::vector<int> run(lo);
    for (int i = 0; i < lo; ++i) run[i] = begin + i;
    blocks.push_back(std::move(run));
    begin += lo;
  }
  return blocks;
}

}  // namespace autograph
