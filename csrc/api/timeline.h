#pragma once
// Timeline: a kept schedule laid out in time, for people — stages one after another, each group on
// its stream, each operator a span as long as the cost model predicts. What `--timeline` draws
// (timeline_svg.h) and the report carries as "timeline".
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

#include "core/op_graph.h"
#include "autograph/timeline.h"  // the structs: public, the report carries one
#include "core/schedule.h"

namespace autograph {

class CostModel;

// Stage durations are the cost model's StageMs (concurrency and merging included), operator spans its
// OperatorMs laid end to end from the stage's start; a group the model says runs longer than its
// stage (it is not, by the models here) would overrun the stage's end.
Timeline BuildTimeline(const OpGraph& graph, const Schedule& schedule, CostModel& cost);

// {"times": ..., "total_ms": ..., "streams": ..., "stages": [{"merged", "start_ms", "ms",
//   "spans": [{"stream", "ops": [{"id", "op", "kind", "stitched", "shape", "start_ms", "ms"}]}]}]}
nlohmann::json TimelineToJson(const Timeline& timeline);
// Inverse of TimelineToJson (the Python side hands a report's timeline back to be drawn); throws
// autograph::Error on a malformed one.
Timeline TimelineFromJson(const nlohmann::json& json);

}  // namespace autograph
