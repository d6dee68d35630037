#include "executor/validate_schedule.h"

#include <sstream>
#include <string>
#include <vector>

#include "merge/merged_kernel.h"

namespace autograph {

namespace {

// Where an op sits in a schedule.
struct Placement {
  int stage = -1;
  int group = -1;
  int position = -1;
};

std::string Where(const Placement& p) {
  std::ostringstream out;
  out << "stage " << p.stage << " group " << p.group << " position " << p.position;
  return out.str();
}

// "op 4 (aten::relu)": the id plus the schema name, so a message can be matched to the model.
[[noreturn]] void Fail(const std::string& what) { throw ScheduleError("invalid schedule: " + what); }

}  // namespace

void ValidateSchedule(const Schedule& schedule, const OpGraph& graph) {
  const int n = graph.size();
  std::vector<Placement> placement(n);
  for (int s = 0; s < static_cast<int>(schedule.stages.size()); ++s) {
    const auto& groups = schedule.stages[s].groups;
    if (groups.empty()) Fail("stage " + std::to_string(s) + " has no groups");
    const auto& streams = schedule.stages[s].streams;
    if (!streams.empty()) {
      if (schedule.stages[s].strategy == StageStrategy::Merge)
        Fail("stage " + std::to_string(s) + " is a merge stage with streams; a merged kernel runs on stream 0");
      if (streams.size() != groups.size())
        Fail("stage " + std::to_string(s) + " has " + std::to_string(groups.size()) + " groups but " +
             std::to_string(streams.size()) + " streams; give one stream per group, or none");
      for (size_t g = 0; g < streams.size(); ++g) {
        if (streams[g] < 0 || streams[g] >= kMaxStreams)
          Fail("stage " + std::to_string(s) + " group " + std::to_string(g) + " is on stream " +
               std::to_string(streams[g]) + "; streams are 0.." + std::to_string(kMaxStreams - 1));
        for (size_t h = 0; h < g; ++h)
          if (streams[h] == streams[g])
            Fail("stage " + std::to_string(s) + " puts groups " + std::to_string(h) + " and " + std::to_string(g) +
                 " on stream " + std::to_string(streams[g]) + "; the groups of a stage run on distinct streams");
      }
    }
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      if (groups[g].empty()) Fail("stage " + std::to_string(s) + " group " + std::to_string(g) + " is empty");
      for (int i = 0; i < static_cast<int>(groups[g].size()); ++i) {
        const int id = groups[g][i];
        const Placement here{s, g, i};
        if (id < 0 || id >= n) {
          Fail(Where(here) + " lists op " + std::to_string(id) + ", but the graph has " + std::to_string(n) +
               " operators (ids 0.." + std::to_string(n - 1) + ")");
        }
        if (placement[id].stage >= 0)
          Fail(OpLabel(graph, id) + " appears twice: at " + Where(placement[id]) + " and at " + Where(here));
        placement[id] = here;
      }
    }
  }
  for (int id = 0; id < n; ++id)
    if (placement[id].stage < 0) Fail(OpLabel(graph, id) + " is not in the schedule");

  for (int v = 0; v < n; ++v) {
    const Placement& pv = placement[v];
    for (int u : graph.preds(v)) {
      const Placement& pu = placement[u];
      if (pu.stage < pv.stage) continue;
      const std::string edge = OpLabel(graph, v) + " at " + Where(pv) + " depends on " + OpLabel(graph, u) + " at " +
                               Where(pu);
      if (pu.stage > pv.stage) Fail(edge + ", a later stage");
      if (pu.group != pv.group) {
        Fail(edge + ", another group of the same stage; groups of a stage run concurrently, so the edge must "
                    "cross a stage boundary or stay inside one group");
      }
      if (pu.position > pv.position) Fail(edge + ", later in the same group");
    }
  }

  // Merge stages: one operator per group, all of one class (CanMergeOps).
  for (int s = 0; s < static_cast<int>(schedule.stages.size()); ++s) {
    const Stage& stage = schedule.stages[s];
    if (stage.strategy != StageStrategy::Merge) continue;
    const std::string where = "merge stage " + std::to_string(s);
    if (stage.groups.size() < 2) {
      Fail(where + " has " + std::to_string(stage.groups.size()) +
           " group; a merge stage merges >= 2 operators, one per group (make it a concurrent stage)");
    }
    std::vector<int> ops;
    for (int g = 0; g < static_cast<int>(stage.groups.size()); ++g) {
      if (stage.groups[g].size() != 1) {
        Fail(where + " group " + std::to_string(g) + " lists " + std::to_string(stage.groups[g].size()) +
             " ops, starting with " + OpLabel(graph, stage.groups[g][0]) +
             "; each group of a merge stage is exactly one convolution or linear");
      }
      ops.push_back(stage.groups[g][0]);
    }
    std::string why;
    if (!CanMergeOps(graph, ops, &why)) Fail(where + " cannot run as one kernel: " + why);
  }
}

}  // namespace autograph
