#pragma once
// Schedules with Merge stages for tests (no search makes them yet): every mergeable class of
// convolutions becomes one Merge stage, everything else runs in stages of up to `max_groups`
// independent operators, in id order.
#include <algorithm>
#include <set>
#include <vector>

#include "core/schedule.h"
#include "merge/merged_convolution.h"

namespace autograph::testing {

inline Schedule ScheduleWithMergeStages(const OpGraph& graph, const std::vector<std::vector<int>>& classes,
                                        int max_groups = 1) {
  std::vector<int> class_of(graph.size(), -1);
  for (size_t c = 0; c < classes.size(); ++c)
    for (int op : classes[c]) class_of[op] = static_cast<int>(c);
  std::vector<bool> done(graph.size(), false);
  auto ready = [&](int op) {
    return std::all_of(graph.preds(op).begin(), graph.preds(op).end(), [&](int p) { return done[p]; });
  };
  Schedule schedule;
  std::vector<int> pending;  // ops of the open concurrent stage (finished only when the stage closes)
  auto close_stage = [&] {
    if (pending.empty()) return;
    Stage stage;
    for (int op : pending) {
      stage.groups.push_back({op});
      done[op] = true;
    }
    schedule.stages.push_back(std::move(stage));
    pending.clear();
  };
  for (int op = 0; op < graph.size(); ++op) {
    if (done[op] || std::count(pending.begin(), pending.end(), op)) continue;
    const int c = class_of[op];
    if (c >= 0) {
      close_stage();  // so that `ready` sees the ops before
      const auto& members = classes[c];
      auto untouched = [&](int m) { return !done[m] && !std::count(pending.begin(), pending.end(), m); };
      if (std::all_of(members.begin(), members.end(), untouched) &&
          std::all_of(members.begin(), members.end(), ready)) {
        Stage stage{StageStrategy::Merge, {}, {}};
        for (int m : members) stage.groups.push_back({m});
        for (int m : members) done[m] = true;
        schedule.stages.push_back(std::move(stage));
        continue;
      }
    }
    if (!ready(op) || static_cast<int>(pending.size()) >= max_groups) close_stage();
    pending.push_back(op);
  }
  close_stage();
  return schedule;
}

}  // namespace autograph::testing
