#pragma once
// Whether a schedule can run on its graph: the executor checks every schedule it is given (one built
// by a search, or restored from a saved Program) before it plans a run.
#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

// Throws ScheduleError naming the op, stage and group at fault unless: every op of `graph` appears
// exactly once; no stage or group is empty; for every edge u -> v either stage(u) < stage(v), or u
// and v are in the same group with u before v (groups of one stage run concurrently, so an edge
// between them is a violation); and every Merge stage has >= 2 groups of exactly one op each, whose
// ops CanMergeConvolutions accepts (the message names the stage and quotes its reason).
void ValidateSchedule(const Schedule& schedule, const OpGraph& graph);

}  // namespace autograph
