// IosSchedule: IOS's dynamic program over endings (the last stage of a set of operators):
//     best[S] = min over endings E of S (best[S - E] + StageMs(E)),   best[{}] = 0,
// and the answer is best[block]. States, endings and their exact enumeration are BlockDag's
// (search/block_dag.h); every state reachable from the block is solved and every allowed ending of
// it is costed. States and stage latencies are memoized by 64-bit masks over the block's operators.
#include "search/ios_schedule.h"

#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "autograph/error.h"
#include "search/block_dag.h"
#include "search/stage_cost_memo.h"

namespace autograph {

namespace {

class IosDynamicProgram {
 public:
  using Clock = std::chrono::steady_clock;

  IosDynamicProgram(const BlockDag& dag, CostModel& cost, const IosOptions& options)
      : dag_(dag), max_ops_per_group_(options.max_ops_per_group),
        max_groups_per_stage_(options.max_groups_per_stage), stage_cost_(dag, cost) {
    if (options.time_limit_seconds > 0)
      deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.time_limit_seconds));
  }

  Schedule Solve(SearchStats* stats) {
    const auto start = std::chrono::steady_clock::now();
    const double ms = dag_.size() == 0 ? 0.0 : Optimum(dag_.all());
    // Follow the choices back from the whole block: each is the last stage of what remains.
    std::vector<Stage> reversed;
    for (OpMask state = dag_.all(); state != 0;) {
      const Best& best = best_.at(state);
      reversed.push_back(dag_.MakeStage(best.ending, best.strategy));
      state &= ~best.ending;
    }
    Schedule schedule;
    schedule.stages.assign(reversed.rbegin(), reversed.rend());
    if (stats) {
      stats->states = static_cast<int64_t>(best_.size());
      stats->stages_evaluated = stage_cost_.size();
      stats->endings = endings_tried_;
      stats->predicted_ms = ms;
      stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      stats->over_time = over_time_;
    }
    return schedule;
  }

 private:
  struct Best {
    double ms = std::numeric_limits<double>::infinity();
    OpMask ending = 0;
    StageStrategy strategy = StageStrategy::Concurrent;
  };

  double Optimum(OpMask state) {
    if (state == 0) return 0;
    if (auto it = best_.find(state); it != best_.end()) return it->second.ms;
    Best best;
    struct StopEnumerating {};
    auto consider = [&](OpMask ending, StageStrategy strategy) {
      // Past the limit, keep what was found: the enumeration itself can be long (unions of pieces).
      if (best.ending != 0 && OverTime()) throw StopEnumerating{};
      ++endings_tried_;
      const double ms = Optimum(state & ~ending) + stage_cost_(ending, strategy);
      if (ms < best.ms) best = Best{ms, ending, strategy};
    };
    if (!OverTime()) {
      try {
        dag_.ForEachConcurrentEnding(state, max_ops_per_group_, max_groups_per_stage_,
                                     [&](OpMask ending) { consider(ending, StageStrategy::Concurrent); });
        dag_.ForEachMergeEnding(state, [&](OpMask ending) { consider(ending, StageStrategy::Merge); });
      } catch (const StopEnumerating&) {
      }
    }
    if (best.ending == 0) consider(GreedyEnding(state), StageStrategy::Concurrent);
    if (best.ending == 0)  // cannot happen with r, s >= 1: a single sink of the state is always an ending
      throw Error("IosSchedule: internal error: no ending found for a state of " + std::to_string(BitCount(state)) +
                  " operators");
    best_.emplace(state, best);
    return best.ms;
  }

  bool OverTime() {
    if (!over_time_ && deadline_ && Clock::now() > *deadline_) over_time_ = true;
    return over_time_;
  }

  // Up to s sinks of the state, the highest ids first: pairwise non-adjacent, so one group each.
  OpMask GreedyEnding(OpMask state) const {
    OpMask ending = 0;
    OpMask sinks = dag_.Sinks(state);
    for (int groups = 0; sinks != 0 && groups < max_groups_per_stage_; ++groups) {
      const OpMask top = MaskBit(HighestBit(sinks));
      ending |= top;
      sinks &= ~top;
    }
    return ending;
  }

  const BlockDag& dag_;
  const int max_ops_per_group_, max_groups_per_stage_;
  std::optional<Clock::time_point> deadline_;
  bool over_time_ = false;
  std::unordered_map<OpMask, Best> best_;
  StageCostMemo stage_cost_;
  int64_t endings_tried_ = 0;
};

}  // namespace

Schedule IosSchedule(const OpGraph& graph, const std::vector<int>& block, CostModel& cost, const IosOptions& options,
                     SearchStats* stats) {
  if (options.max_ops_per_group < 1 || options.max_groups_per_stage < 1)
    throw Error("IosSchedule: max_ops_per_group (r) is " + std::to_string(options.max_ops_per_group) +
                " and max_groups_per_stage (s) is " + std::to_string(options.max_groups_per_stage) +
                "; both must be at least 1");
  if (!(options.time_limit_seconds >= 0))
    throw Error("IosSchedule: time_limit_seconds must be >= 0 (0 = no limit), got " +
                std::to_string(options.time_limit_seconds));
  const BlockDag dag(graph, block, "IosSchedule", options.merge_classes);
  return IosDynamicProgram(dag, cost, options).Solve(stats);
}

}  // namespace autograph
