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

#include "autograph/simple_schedulers.h"

namespace autograph {

namespace {

class RandomStageBuilder {
 public:
  RandomStageBuilder(const OpGraph& graph, uint64_t seed, int max_groups)
      : graph_(graph), max_groups_(max_groups), rng_(seed), stage_of_(graph.size(), -1),
        group_of_(graph.size(), -1), pending_preds_(graph.size()), offered_(graph.size(), -1) {
    width_mode_ = static_cast<WidthMode>(Below(3));
    grow_quarters_ = Below(5);
    for (int v = 0; v < graph.size(); ++v) {
      pending_preds_[v] = static_cast<int>(graph.preds(v).size());
      if (pending_preds_[v] == 0) ready_.push_back(v);
    }
  }

  Schedule Build() {
    Schedule schedule;
    while (num_placed_ < graph_.size()) schedule.stages.push_back(BuildStage(schedule.stages.size()));
    return schedule;
  }

 private:
  size_t Below(size_t bound) { return static_cast<size_t>(rng_() % bound); }

  Stage BuildStage(int s) {
    stage_ = Stage{};
    stage_index_ = s;
    std::vector<int> pool = ready_;
    const size_t widest = std::min<size_t>(max_groups_, pool.size());
    const int k = static_cast<int>(width_mode_ == WidthMode::kRandom    ? 1 + Below(widest)
                                   : width_mode_ == WidthMode::kWidest ? widest
                                                                         : 1);
    for (int g = 0; g < k; ++g) {
      const size_t pick = Below(pool.size());
      stage_.groups.emplace_back();
      Place(pool[pick], g);
      pool.erase(pool.begin() + pick);
    }
    while (Below(4) < grow_quarters_) {
      auto moves = AllowedMoves();
      if (moves.empty()) break;
      const auto [op, group] = moves[Below(moves.size())];
      Place(op, group);
    }
    CloseStage();
    return std::move(stage_);
  }

  void Place(int v, int g) {
    stage_of_[v] = stage_index_;
    group_of_[v] = g;
    stage_.groups[g].push_back(v);
    ++num_placed_;
  }

  bool CanJoin(int w, int g) const {
    for (int p : graph_.preds(w)) {
      if (stage_of_[p] < 0) return false;
      if (stage_of_[p] == stage_index_ && group_of_[p] != g) return false;
    }
    return true;
  }

  // (op, group) pairs that may be appended now: a ready op may join any group; an op fed by this
  // stage only the group that feeds it.
  std::vector<std::pair<int, int>> AllowedMoves() {
    ++round_;
    std::vector<std::pair<int, int>> moves;
    const int k = static_cast<int>(stage_.groups.size());
    for (int v : ready_)
      if (stage_of_[v] < 0)
        for (int g = 0; g < k; ++g) moves.emplace_back(v, g);
    for (int g = 0; g < k; ++g) {
      for (int v : stage_.groups[g]) {
        for (int w : graph_.succs(v)) {
          if (stage_of_[w] >= 0 || offered_[w] == round_) continue;
          offered_[w] = round_;
          if (CanJoin(w, g)) moves.emplace_back(w, g);
        }
      }
    }
    return moves;
  }

  void CloseStage() {
    ready_.erase(std::remove_if(ready_.begin(), ready_.end(), [this](int v) { return stage_of_[v] >= 0; }),
                 ready_.end());
    for (const auto& group : stage_.groups)
      for (int v : group)
        for (int w : graph_.succs(v))
          if (--pending_preds_[w] == 0 && stage_of_[w] < 0) ready_.push_back(w);
  }

  enum class WidthMode { kRandom, kWidest, kOne };

  const OpGraph& graph_;
  const int max_groups_;
  std::mt19937_64 rng_;
  WidthMode width_mode_;
  size_t grow_quarters_;  // chance, in quarters, to append one more op to the stage
  std::vector<int> stage_of_, group_of_;  // -1 while unplaced
  std::vector<int> pending_preds_;        // predecessors not yet in a closed stage
  std::vector<int> offered_;              // round in which an op was last considered, to list it once
  std::vector<int> ready_;
  int num_placed_ = 0;
  int round_ = 0;
  Stage stage_;
  int stage_index_ = 0;
};

}  // namespace

Schedule RandomSchedule(const OpGraph& graph, uint64_t seed, int max_groups) {
  if (max_groups < 1)
    throw ScheduleError("RandomSchedule: max_groups is " + std::to_string(max_groups) + "; it must be at least 1");
  return RandomStageBuilder(graph, seed, max_groups).Build();
}

}  // namespace autograph
