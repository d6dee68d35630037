// GreedySchedule: wavefront list scheduling, critical path first.
//
// Priority of op v = flops(v) + 1 + the largest priority among its successors: the FLOP-weighted
// longest path from v to a sink plus one per operator, so that ties (and FLOP-free graphs) lean
// toward the longest chain; equal priorities go to the lower id.
//
// An op is ready when all its predecessors are in earlier stages. Each stage is built in three steps:
//  1. Heads: the ready ops that launch kernels (kind other than View), highest priority first, at
//     most max_groups; each starts a group. When only views are ready, the best view heads the one
//     group of the stage. Ready ops left over wait for the next stage.
//  2. Chains: after a group's last op v, append the highest-priority successor w of v whose
//     predecessors are all in earlier stages or in this group, and go on from w. At a fork (v has
//     several successors) the chain stops when the branches fit side by side in the next stage (at
//     most max_groups of them); a wider fork goes on into one branch, since they cannot all run
//     together anyway.
//  3. Views cost nothing, so they should not hold a stream of their own: in id order, every view
//     not yet placed whose predecessors are all placed, those in this stage all in one group, is
//     appended to that group; a view with no predecessor in this stage joins the first group.
#include <algorithm>
#include <set>
#include <string>

#include "search/simple_schedulers.h"
#include "search/stage_builder.h"

namespace autograph {

namespace {

std::vector<double> RemainingPathPriority(const OpGraph& graph) {
  std::vector<double> priority(graph.size(), 0);
  for (int v = graph.size() - 1; v >= 0; --v) {
    double tail = 0;
    for (int w : graph.succs(v)) tail = std::max(tail, priority[w]);
    priority[v] = graph.node(v).flops + 1 + tail;
  }
  return priority;
}

class GreedyStageBuilder {
 public:
  GreedyStageBuilder(const OpGraph& graph, int max_groups)
      : graph_(graph), max_groups_(max_groups), priority_(RemainingPathPriority(graph)), builder_(graph) {}

  Schedule Build() {
    Schedule schedule;
    while (!builder_.done()) schedule.stages.push_back(BuildStage(schedule.stages.size()));
    return schedule;
  }

 private:
  bool Higher(int a, int b) const { return priority_[a] != priority_[b] ? priority_[a] > priority_[b] : a < b; }

  Stage BuildStage(int s) {
    builder_.BeginStage(s);
    std::vector<int> ready = builder_.ready();
    std::sort(ready.begin(), ready.end(), [this](int a, int b) { return Higher(a, b); });
    std::vector<int> heads;
    for (int v : ready)
      if (graph_.node(v).kind != OpKind::View && static_cast<int>(heads.size()) < max_groups_) heads.push_back(v);
    if (heads.empty()) heads.push_back(ready.front());  // only views are ready; ready is never empty in a DAG
    for (int head : heads) {
      const int g = builder_.AddGroup();
      builder_.Place(head, g);
      ExtendChain(g);
    }
    AbsorbViews();
    return builder_.CloseStage();
  }

  void ExtendChain(int g) {
    for (;;) {
      // The successors of the group's last op are all unplaced: only this chain could have placed one.
      const auto& succs = graph_.succs(builder_.stage().groups[g].back());
      const int fork = static_cast<int>(succs.size());
      if (fork > 1 && fork <= max_groups_) return;  // the branches run side by side in the next stage
      int best = -1;
      for (int w : succs)
        if (builder_.CanJoin(w, g) && (best < 0 || Higher(w, best))) best = w;
      if (best < 0) return;
      builder_.Place(best, g);
    }
  }

  void AbsorbViews() {
    // Candidates in id order: ready views, and views fed by this stage; absorbing one adds its
    // successors, whose ids are larger, so one ordered pass also takes chains of views.
    std::set<int> candidates;
    for (int v : builder_.ready())
      if (!builder_.placed(v) && graph_.node(v).kind == OpKind::View) candidates.insert(v);
    for (const auto& group : builder_.stage().groups)
      for (int v : group)
        for (int w : graph_.succs(v))
          if (!builder_.placed(w) && graph_.node(w).kind == OpKind::View) candidates.insert(w);
    while (!candidates.empty()) {
      const int w = *candidates.begin();
      candidates.erase(candidates.begin());
      int group = 0;  // no predecessor in this stage: any group will do, take the first
      for (int p : graph_.preds(w))
        if (builder_.stage_of(p) == builder_.stage_index()) group = builder_.group_of(p);
      if (!builder_.CanJoin(w, group)) continue;  // a predecessor unplaced, or in another group of this stage
      builder_.Place(w, group);
      for (int x : graph_.succs(w))
        if (graph_.node(x).kind == OpKind::View) candidates.insert(x);
    }
  }

  const OpGraph& graph_;
  const int max_groups_;
  const std::vector<double> priority_;
  StageBuilder builder_;
};

}  // namespace

Schedule GreedySchedule(const OpGraph& graph, int max_groups) {
  if (max_groups < 1)
    throw ScheduleError("GreedySchedule: max_groups is " + std::to_string(max_groups) + "; it must be at least 1");
  return GreedyStageBuilder(graph, max_groups).Build();
}

}  // namespace autograph
