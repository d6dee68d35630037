// AutoGraph's search over one block: the dynamic program of IOS (best[S] = min over endings E of
// best[S - E] + StageMs(E), states and endings from BlockDag) solved depth-first with backtracking:
//  - Ranking. The endings of a state are tried in order of Estimate(E) + Estimate(S - E), the mixed
//    critical path cost (mixed_critical_path.h) of the stage and of what would remain, so the first
//    descent already finds a good schedule. Merge endings are ranked by their stage cost instead (a
//    merged kernel is not its operators in series).
//  - Backtracking. An ending is abandoned, and the states only it leads to are never solved, when a
//    lower bound of its stage (its longest chain) plus the longest path of the rest (a lower bound on
//    any schedule of the rest) cannot beat the best ending found so far; else its stage is costed
//    (the expensive step with a measured model) and the test repeated with the true stage cost.
//    Solved states are memoized, so each is expanded once. (A
//    bound passed down into sub-states would prune more per visit but re-expands states reached
//    again under looser bounds; on random blocks that expanded several times IOS's states, so it is not
//    done.)
//  - Exactness. A pruned ending costs at least the best found, so while the block stays within
//    budget the result is exactly IOS's optimum over the same (r, s, merge) space. The lower bound
//    needs each stage to cost at least the sum of OperatorMs over each of its groups — true of the
//    analytical model (a stage is at least its slowest stream) and, up to noise, of measured costs;
//    ops that may be merged get weight 0 there.
//  - Budget. Past `budget` expanded states (or past the block's share of the time limit), each
//    state being solved stops at the first ending that gave it a schedule, and each further state
//    takes its best-ranked ending only, among a few packed endings rather than all of them, so any
//    block finishes quickly; the schedule is then valid but maybe not optimal. A state with more than max_endings_per_state
//    endings (a wide block: their number grows like pieces^s) likewise tries the packed ones
//    besides those listed before the limit.
//  - Candidates. At the root the k best endings (with their optimal rests) are kept: the k best
//    schedules whose last stages differ, for on-board verification.
#include "search/autograph_schedule.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "search/block_dag.h"
#include "search/mixed_critical_path.h"
#include "search/stage_cost_memo.h"

namespace autograph {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
using Clock = std::chrono::steady_clock;

class AutographBlockSearch {
 public:
  AutographBlockSearch(const BlockDag& dag, CostModel& cost, const AutographOptions& options,
                       std::optional<Clock::time_point> deadline)
      : dag_(dag),
        options_(options),
        deadline_(deadline),
        path_(dag, Weights(dag, cost, options), options.alpha),
        stage_cost_(dag, cost) {}

  // The k best schedules, best first, and their costs.
  std::vector<std::pair<double, Schedule>> Run(int k, AutographStats* stats) {
    std::vector<std::pair<double, Schedule>> out;
    if (dag_.size() == 0) {
      out.emplace_back(0.0, Schedule{});
      return out;
    }
    const OpMask all = dag_.all();
    std::vector<Choice> best;  // ascending cost, at most k
    for (const Candidate& c : Candidates(all)) {
      const double kth = static_cast<int>(best.size()) < k ? kInfinity : best.back().ms;
      const OpMask rest = all & ~c.ending;
      const double stage_ms = StageMsUnless(c, path_.LowerBound(rest), kth);
      if (stage_ms == kInfinity) continue;
      const double ms = stage_ms + Solve(rest);
      if (ms >= kth) continue;
      best.insert(std::upper_bound(best.begin(), best.end(), ms, [](double v, const Choice& x) { return v < x.ms; }),
                  Choice{ms, c.ending, c.strategy});
      if (static_cast<int>(best.size()) > k) best.pop_back();
      if (OverBudget() && !best.empty()) break;
    }
    for (const Choice& root : best) {
      Schedule schedule = Reconstruct(all & ~root.ending);
      schedule.stages.push_back(dag_.MakeStage(root.ending, root.strategy));
      out.emplace_back(root.ms, std::move(schedule));
    }
    if (stats) {
      stats->blocks += 1;
      stats->blocks_over_budget += OverBudget() || truncated_ > 0 ? 1 : 0;
      stats->states += expanded_;
      stats->stages_evaluated += stage_cost_.size();
      stats->endings += endings_;
      stats->pruned += pruned_;
    }
    return out;
  }

 private:
  struct Candidate {
    OpMask ending;
    StageStrategy strategy;
    double stage_lb, key;  // stage_lb <= StageMs(ending)
  };
  struct Choice {
    double ms;
    OpMask ending;
    StageStrategy strategy;
  };
  struct Record {
    double ms = kInfinity;  // best[S]
    OpMask ending = 0;
    StageStrategy strategy = StageStrategy::Concurrent;
  };

  static std::vector<double> Weights(const BlockDag& dag, CostModel& cost, const AutographOptions& options) {
    std::set<int> mergeable;
    for (const auto& merge_class : options.merge_classes) mergeable.insert(merge_class.begin(), merge_class.end());
    std::vector<double> weights(dag.size(), 0.0);
    for (int i = 0; i < dag.size(); ++i)
      if (!mergeable.count(dag.op(i))) weights[i] = std::max(0.0, cost.OperatorMs(dag.graph(), dag.op(i)));
    return weights;
  }

  bool OverBudget() {
    if (!over_budget_)
      over_budget_ = expanded_ > options_.budget || (deadline_ && Clock::now() > *deadline_);
    return over_budget_;
  }

  // The candidate's stage cost, or infinity (counted as pruned) when it cannot lead below `bound`
  // given a lower bound of the rest; the stage is costed only when its lower bound does not decide.
  double StageMsUnless(const Candidate& c, double rest_lb, double bound) {
    if (c.stage_lb + rest_lb >= bound) {
      ++pruned_;
      return kInfinity;
    }
    const double ms = stage_cost_(c.ending, c.strategy);
    if (ms + rest_lb >= bound) {
      ++pruned_;
      return kInfinity;
    }
    return ms;
  }

  // best[state], exact unless the budget ran out. Each state is expanded once.
  double Solve(OpMask state) {
    if (state == 0) return 0;
    if (auto it = memo_.find(state); it != memo_.end()) return it->second.ms;
    ++expanded_;
    const bool greedy = OverBudget();
    Record record;
    for (const Candidate& c : Candidates(state)) {
      if (record.ms < kInfinity && OverBudget()) break;  // budget ran out while this state was open
      const OpMask rest = state & ~c.ending;
      const double stage_ms = StageMsUnless(c, path_.LowerBound(rest), record.ms);
      if (stage_ms == kInfinity) continue;
      const double ms = stage_ms + Solve(rest);
      if (ms < record.ms) {
        record = Record{ms, c.ending, c.strategy};
        if (greedy) break;
      }
    }
    memo_.emplace(state, record);
    return record.ms;
  }

  // The endings of `state` in order of rank: all of them while within budget and while a state has
  // at most max_endings_per_state; else the packed ones (PackedEndings) besides those already
  // listed. Concurrent stages are not costed here (see StageMsUnless).
  std::vector<Candidate> Candidates(OpMask state) {
    std::vector<Candidate> out;
    std::unordered_set<OpMask> listed;
    auto add = [&](OpMask ending, StageStrategy strategy) {
      ++endings_;
      const double rest = path_.Estimate(state & ~ending);
      if (strategy == StageStrategy::Merge) {
        const double ms = stage_cost_(ending, strategy);
        out.push_back(Candidate{ending, strategy, ms, ms + rest});
      } else {
        const auto [lb, estimate] = path_.StageBoundAndEstimate(ending);
        out.push_back(Candidate{ending, strategy, lb, estimate + rest});
      }
    };
    bool complete = false;
    if (!OverBudget()) {
      complete = dag_.ForEachConcurrentEnding(
          state, options_.max_ops_per_group, options_.max_groups_per_stage,
          [&](OpMask ending) {
            listed.insert(ending);
            add(ending, StageStrategy::Concurrent);
          },
          options_.max_endings_per_state);
      if (!complete) ++truncated_;
    }
    if (!complete)
      for (OpMask ending : PackedEndings(state))
        if (listed.insert(ending).second) add(ending, StageStrategy::Concurrent);
    dag_.ForEachMergeEnding(state, [&](OpMask ending) { add(ending, StageStrategy::Merge); });
    std::stable_sort(out.begin(), out.end(), [](const Candidate& a, const Candidate& b) { return a.key < b.key; });
    return out;
  }

  // A few good Concurrent endings without enumerating them all (nor costing them: ranked like all
  // endings, by estimate): the pieces ranked alone, then from
  // each of the best few, the union grown by the next best pieces that fit (disjoint, non-adjacent,
  // at most s), every prefix of that growth being one ending. Linear in the number of pieces.
  std::vector<OpMask> PackedEndings(OpMask state) {
    constexpr size_t kSeeds = 16;
    std::vector<std::pair<double, BlockDag::Piece>> ranked;
    for (const BlockDag::Piece& piece : dag_.Pieces(state, options_.max_ops_per_group))
      ranked.emplace_back(path_.Estimate(piece.ops, false) + path_.Estimate(state & ~piece.ops), piece);
    std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<OpMask> endings;
    for (const auto& entry : ranked) endings.push_back(entry.second.ops);
    for (size_t seed = 0; seed < std::min(kSeeds, ranked.size()); ++seed) {
      OpMask ending = ranked[seed].second.ops, blocked = ranked[seed].second.closed;
      int groups = 1;
      for (size_t j = 0; j < ranked.size() && groups < options_.max_groups_per_stage; ++j) {
        if (ranked[j].second.ops & blocked) continue;
        ending |= ranked[j].second.ops;
        blocked |= ranked[j].second.closed;
        ++groups;
        endings.push_back(ending);
      }
    }
    return endings;
  }


  // The optimal schedule of a state whose exact optimum is known, following the recorded choices.
  Schedule Reconstruct(OpMask state) const {
    std::vector<Stage> reversed;
    while (state != 0) {
      const Record& record = memo_.at(state);
      reversed.push_back(dag_.MakeStage(record.ending, record.strategy));
      state &= ~record.ending;
    }
    Schedule schedule;
    schedule.stages.assign(reversed.rbegin(), reversed.rend());
    return schedule;
  }

  const BlockDag& dag_;
  const AutographOptions& options_;
  const std::optional<Clock::time_point> deadline_;
  bool over_budget_ = false;
  MixedCriticalPath path_;
  std::unordered_map<OpMask, Record> memo_;
  StageCostMemo stage_cost_;
  int64_t expanded_ = 0, endings_ = 0, pruned_ = 0, truncated_ = 0;
};

void CheckOptions(const AutographOptions& options) {
  if (options.max_ops_per_group < 1 || options.max_groups_per_stage < 1)
    throw Error("AutographSchedule: max_ops_per_group (r) is " + std::to_string(options.max_ops_per_group) +
                " and max_groups_per_stage (s) is " + std::to_string(options.max_groups_per_stage) +
                "; both must be at least 1");
  if (!(options.alpha >= 0)) throw Error("AutographSchedule: alpha must be >= 0, got " + std::to_string(options.alpha));
  if (options.candidates < 1)
    throw Error("AutographSchedule: candidates must be at least 1, got " + std::to_string(options.candidates));
  if (options.budget < 0 || options.max_endings_per_state < 1)
    throw Error("AutographSchedule: budget must be >= 0 and max_endings_per_state >= 1");
  if (!(options.time_limit_seconds >= 0))
    throw Error("AutographSchedule: time_limit_seconds must be >= 0 (0 = no limit), got " +
                std::to_string(options.time_limit_seconds));
}

}  // namespace

namespace {

std::vector<Schedule> BlockSchedules(const OpGraph& graph, const std::vector<int>& block, CostModel& cost,
                                     const AutographOptions& options, std::optional<Clock::time_point> deadline,
                                     AutographStats* stats, std::vector<double>* predicted_ms) {
  const auto start = Clock::now();
  const BlockDag dag(graph, block, "AutographSchedule", options.merge_classes);
  auto ranked = AutographBlockSearch(dag, cost, options, deadline).Run(options.candidates, stats);
  std::vector<Schedule> schedules;
  if (predicted_ms) predicted_ms->clear();
  for (auto& [ms, schedule] : ranked) {
    if (predicted_ms) predicted_ms->push_back(ms);
    schedules.push_back(std::move(schedule));
  }
  if (stats) {
    stats->predicted_ms = ranked.front().first;
    stats->seconds += std::chrono::duration<double>(Clock::now() - start).count();
  }
  return schedules;
}

std::chrono::duration<double> Seconds(double s) { return std::chrono::duration<double>(s); }

}  // namespace

std::vector<Schedule> AutographBlockSchedules(const OpGraph& graph, const std::vector<int>& block, CostModel& cost,
                                              const AutographOptions& options, AutographStats* stats,
                                              std::vector<double>* predicted_ms) {
  CheckOptions(options);
  std::optional<Clock::time_point> deadline;
  if (options.time_limit_seconds > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(Seconds(options.time_limit_seconds));
  return BlockSchedules(graph, block, cost, options, deadline, stats, predicted_ms);
}

AutographResult AutographSearch(const OpGraph& graph, const std::vector<std::vector<int>>& blocks, CostModel& cost,
                                const AutographOptions& options) {
  CheckOptions(options);
  const auto start = Clock::now();
  AutographResult result;
  std::vector<std::vector<Schedule>> per_block;
  for (size_t b = 0; b < blocks.size(); ++b) {
    std::optional<Clock::time_point> deadline;
    if (options.time_limit_seconds > 0) {  // an equal share of what is left
      const auto left = Seconds(options.time_limit_seconds) - (Clock::now() - start);
      deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(left / double(blocks.size() - b));
    }
    per_block.push_back(BlockSchedules(graph, blocks[b], cost, options, deadline, &result.stats, nullptr));
    if (options.progress) options.progress(static_cast<int>(b + 1), static_cast<int>(blocks.size()));
  }
  size_t most = 1;
  for (const auto& schedules : per_block) most = std::max(most, schedules.size());
  std::set<std::string> seen;
  for (size_t j = 0; j < most; ++j) {
    Schedule whole;
    for (const auto& schedules : per_block) {
      const Schedule& part = schedules[std::min(j, schedules.size() - 1)];
      whole.stages.insert(whole.stages.end(), part.stages.begin(), part.stages.end());
    }
    if (!seen.insert(ScheduleToJson(whole).dump()).second) continue;
    result.predicted_ms.push_back(cost.ScheduleMs(graph, whole));
    result.candidates.push_back(std::move(whole));
  }
  // Candidate 0 is the best of every block, hence the best overall under the cost model.
  result.stats.predicted_ms = result.predicted_ms.front();
  result.stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace autograph
