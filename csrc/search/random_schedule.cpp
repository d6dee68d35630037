// RandomSchedule: random valid schedules for property tests.
//
// Two knobs are drawn once per schedule, so that extreme shapes are common rather than a product
// of many lucky draws: a width mode (random, always the widest, always one group) and a chance to
// go on growing a stage (0, 1/4, 1/2, 3/4 or 1). Stages are then built one after another from the
// ready ops (all predecessors in earlier stages):
//  1. k groups, k in 1..min(max_groups, ready ops) as the width mode says; k distinct ready ops,
//     drawn in random order, head them (a group's first op is always a ready op).
//  2. While a draw says go on, append a uniformly drawn (op, group) pair among those allowed: op not
//     yet placed, its predecessors all in earlier stages or in that group.
// Any valid stage is its heads followed by its other ops appended in order, each allowed when it is
// appended; with random width and a chance strictly between 0 and 1 every draw sequence is
// possible, so every valid schedule has a nonzero chance: one-op stages, long chains, full width.
// Draws use mt19937_64 and plain modulo (no std distributions), so a seed means the same schedule
// with every standard library.
#include <algorithm>
#include <random>
#include <string>
#include <utility>

#include "search/simple_schedulers.h"
#include "search/stage_builder.h"

namespace autograph {

namespace {

class RandomStageBuilder {
 public:
  RandomStageBuilder(const OpGraph& graph, uint64_t seed, int max_groups)
      : graph_(graph), max_groups_(max_groups), rng_(seed), builder_(graph), offered_(graph.size(), -1) {
    width_mode_ = static_cast<WidthMode>(Below(3));
    grow_quarters_ = Below(5);
  }

  Schedule Build() {
    Schedule schedule;
    while (!builder_.done()) schedule.stages.push_back(BuildStage(schedule.stages.size()));
    return schedule;
  }

 private:
  size_t Below(size_t bound) { return static_cast<size_t>(rng_() % bound); }

  Stage BuildStage(int s) {
    builder_.BeginStage(s);
    std::vector<int> pool = builder_.ready();
    const size_t widest = std::min<size_t>(max_groups_, pool.size());
    const int k = static_cast<int>(width_mode_ == WidthMode::kRandom    ? 1 + Below(widest)
                                   : width_mode_ == WidthMode::kWidest ? widest
                                                                         : 1);
    for (int g = 0; g < k; ++g) {
      const size_t pick = Below(pool.size());
      builder_.Place(pool[pick], builder_.AddGroup());
      pool.erase(pool.begin() + pick);
    }
    while (Below(4) < grow_quarters_) {
      auto moves = AllowedMoves();
      if (moves.empty()) break;
      const auto [op, group] = moves[Below(moves.size())];
      builder_.Place(op, group);
    }
    return builder_.CloseStage();
  }

  // (op, group) pairs that may be appended now: a ready op may join any group; an op fed by this
  // stage only the group that feeds it.
  std::vector<std::pair<int, int>> AllowedMoves() {
    ++round_;
    std::vector<std::pair<int, int>> moves;
    const auto& groups = builder_.stage().groups;
    const int k = static_cast<int>(groups.size());
    for (int v : builder_.ready())
      if (!builder_.placed(v))
        for (int g = 0; g < k; ++g) moves.emplace_back(v, g);
    for (int g = 0; g < k; ++g) {
      for (int v : groups[g]) {
        for (int w : graph_.succs(v)) {
          if (builder_.placed(w) || offered_[w] == round_) continue;
          offered_[w] = round_;
          if (builder_.CanJoin(w, g)) moves.emplace_back(w, g);
        }
      }
    }
    return moves;
  }

  enum class WidthMode { kRandom, kWidest, kOne };

  const OpGraph& graph_;
  const int max_groups_;
  std::mt19937_64 rng_;
  WidthMode width_mode_;
  size_t grow_quarters_;  // chance, in quarters, to append one more op to the stage
  StageBuilder builder_;
  std::vector<int> offered_;  // round in which an op was last considered, to list it once
  int round_ = 0;
};

}  // namespace

Schedule RandomSchedule(const OpGraph& graph, uint64_t seed, int max_groups) {
  if (max_groups < 1)
    throw ScheduleError("RandomSchedule: max_groups is " + std::to_string(max_groups) + "; it must be at least 1");
  return RandomStageBuilder(graph, seed, max_groups).Build();
}

}  // namespace autograph
