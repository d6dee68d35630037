#pragma once
// Schedule: the plan every search returns and the executor runs. Stages run one after another; the
// groups of a stage run side by side (one stream each); the operators of a group run in order.
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "autograph/error.h"
#include "autograph/schedule.h"  // Stage, Schedule: public, the report carries one
#include "core/op_graph.h"

namespace autograph {

// A schedule that is malformed, does not fit its graph, or cannot be built as asked.
class ScheduleError : public Error {
 public:
  using Error::Error;
};

// Kernels one run of `schedule` launches: one per operator that launches work (kind other than
// View), a Merge stage counting once. (What OptimizeReport::operators_after reports.)
int KernelsLaunched(const OpGraph& graph, const Schedule& schedule);

// `schedule` with each run of consecutive Concurrent stages of one group each, on one stream, joined
// into one stage: it runs the same operators in the same order on the same stream (without the
// boundaries between them), so on-board verification need not time both forms.
Schedule JoinOneGroupStages(const Schedule& schedule);

// What on-board verification times once: equal keys for schedules that run alike. The JSON of the
// joined schedule (JoinOneGroupStages), except that a schedule whose joined form is one group (every
// operator one after another on one stream) keys on its stream and its operators, sorted: orders of
// one stream's kernels launch the same kernels one at a time, and measured within the device's noise
// of each other (BERT-base's four such orders on the CPU).
std::string TimingKey(const Schedule& schedule);

// {"version":1,"stages":[{"strategy":"concurrent","groups":[[0,1],[2]]}, ...]}
nlohmann::json ScheduleToJson(const Schedule& schedule);

// Inverse of ScheduleToJson. Throws ScheduleError on anything malformed: not an object, missing or
// unknown keys, wrong types, unknown strategy, negative or non-integer ids, version other than 1.
// Checks the format only; ValidateSchedule checks the result against a graph.
Schedule ScheduleFromJson(const nlohmann::json& json);

}  // namespace autograph
