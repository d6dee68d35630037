#pragma once
// IOS block by block, as IOS's own code cuts graphs: blocks are runs of at most `block_ops`
// consecutive operators in topological order, so the blocks' schedules concatenate into a valid one.
#include <functional>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "search/cost/cost_model.h"
#include "search/ios_schedule.h"

namespace autograph {

struct BlockwiseIosOptions {
  IosOptions ios;                          // its time_limit_seconds is set per block from the one below
  int block_ops = 24;                      // 1..64
  double time_limit_seconds = 0;           // the whole search; each block an equal share of what is left; 0 = none
  std::function<void(int, int)> progress;  // (blocks done, blocks in all)
};

struct BlockwiseIosStats {
  SearchStats total;            // states, stages and endings summed; predicted_ms the schedule's
  int blocks_over_budget = 0;   // blocks the time limit cut short
};

// Throws Error for a block size outside 1..64 and what IosSchedule throws.
Schedule BlockwiseIosSchedule(const OpGraph& graph, CostModel& cost, const BlockwiseIosOptions& options,
                              BlockwiseIosStats* stats = nullptr);

}  // namespace autograph
