#include "search/blockwise_ios_schedule.h"

#include <algorithm>
#include <chrono>

#include "autograph/error.h"
#include "search/partition_by_topological_runs.h"

namespace autograph {

Schedule BlockwiseIosSchedule(const OpGraph& graph, CostModel& cost, const BlockwiseIosOptions& options,
                              BlockwiseIosStats* stats) {
  if (options.block_ops < 1 || options.block_ops > 64) throw Error("ios block size must be in 1..64");
  PartitionOptions partition;
  partition.max_block_ops = options.block_ops;
  const std::vector<std::vector<int>> blocks = PartitionByTopologicalRuns(graph, partition);
  // Measured costs run every distinct stage on the device (IOS measured ~213k of them on NasNet):
  // with a time limit each block gets an equal share of what is left.
  IosOptions ios = options.ios;
  BlockwiseIosStats sum;
  const auto start = std::chrono::steady_clock::now();
  Schedule schedule;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (options.time_limit_seconds > 0) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ios.time_limit_seconds =
          std::max(1e-3, (options.time_limit_seconds - spent) / static_cast<double>(blocks.size() - b));
    }
    SearchStats block;
    Schedule part = IosSchedule(graph, blocks[b], cost, ios, &block);
    sum.blocks_over_budget += block.over_time;
    sum.total.predicted_ms += block.predicted_ms;
    sum.total.states += block.states;
    sum.total.stages_evaluated += block.stages_evaluated;
    sum.total.endings += block.endings;
    sum.total.over_time |= block.over_time;
    for (Stage& stage : part.stages) schedule.stages.push_back(std::move(stage));
    if (options.progress) options.progress(static_cast<int>(b + 1), static_cast<int>(blocks.size()));
  }
  sum.total.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (stats) *stats = sum;
  return schedule;
}

}  // namespace autograph
