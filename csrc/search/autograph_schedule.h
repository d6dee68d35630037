#pragma once
// AutoGraph's schedule search: per block of a partition (PartitionByMinCut), a dynamic program over
// states with backtracking — branch and bound whose candidates are ranked by the mixed critical path
// cost — keeping the few best schedules for on-board verification. How it works is written out in
// csrc/search/autograph_schedule.cpp.
#include <cstdint>
#include <functional>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "search/cost/cost_model.h"

namespace autograph {

struct AutographOptions {
  // Mixed critical path cost C = alpha * (critical path) + (total work): the weight of the longest
  // dependent chain against the work concurrent kernels compete for. Ranks candidates only.
  double alpha = 1.0;
  int max_ops_per_group = 4;     // r: operators in one group (stream) of a stage
  int max_groups_per_stage = 8;  // s: groups (streams) in one stage
  // Sets of op ids any two or more of which may run as one merged kernel (MergeableClasses).
  std::vector<std::vector<int>> merge_classes;
  // States expanded per block with full backtracking; past it, each remaining state takes its
  // best-ranked ending only (the search stays exact while within budget).
  int64_t budget = 20000;
  // Endings listed per state before the search falls back to a few packed ones for that state.
  int64_t max_endings_per_state = 5000;
  int candidates = 3;  // complete schedules kept per block, best first, for on-board verification
  // Seconds for the whole search, 0 = no limit. Each block gets an equal share of what is left when
  // it starts (blocks that finish early pass their time on); past its share a block finishes as past
  // the budget. For costs that take real time to ask (a measured cost model).
  double time_limit_seconds = 0;
  // Called after each block with (blocks done, blocks in all).
  std::function<void(int, int)> progress;
};

struct AutographStats {
  int blocks = 0;
  int blocks_over_budget = 0;    // blocks not searched exhaustively: budget, time or endings per state exceeded
  int64_t states = 0;            // states expanded (their endings enumerated)
  int64_t stages_evaluated = 0;  // distinct stages costed with CostModel::StageMs
  int64_t endings = 0;           // (state, ending) pairs considered
  int64_t pruned = 0;            // endings and states cut off by the lower bound
  double predicted_ms = 0;       // cost.ScheduleMs of the best candidate
  double seconds = 0;
};

struct AutographResult {
  // Whole-graph schedules, best predicted first: candidate j takes each block's j-th best schedule
  // (its best when it has fewer). Duplicates removed.
  std::vector<Schedule> candidates;
  std::vector<double> predicted_ms;  // per candidate
  AutographStats stats;
};

// The best schedules of one convex block of at most 64 operators (ids, any order), at most
// options.candidates of them, best first; the first is optimal among the schedules whose stages are
// Concurrent with at most s weakly connected groups of at most r ops, or Merge over two or more ops
// of one merge class — the same space IOS searches with the same r and s — whenever the block
// finishes within budget. Throws autograph::Error for bad blocks (see IosSchedule) and options.
std::vector<Schedule> AutographBlockSchedules(const OpGraph& graph, const std::vector<int>& block, CostModel& cost,
                                              const AutographOptions& options, AutographStats* stats = nullptr,
                                              std::vector<double>* predicted_ms = nullptr);

// Every block of `blocks` (a partition of all operators into convex blocks in an order where edges
// go forward, as PartitionByMinCut returns) searched and the results concatenated.
AutographResult AutographSearch(const OpGraph& graph, const std::vector<std::vector<int>>& blocks, CostModel& cost,
                                const AutographOptions& options);

}  // namespace autograph
