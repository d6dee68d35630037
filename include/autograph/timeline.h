#pragma once
// Timeline: a kept schedule laid out in time, for people — stages one after another, each group on
// its stream, each operator a span as long as the cost model predicts. What `--timeline` draws and
// the report carries as "timeline".
#include <string>
#include <vector>

#include "autograph/op_kind.h"

namespace autograph {

struct TimelineOp {
  int id = -1;          // OpGraph node id
  std::string op;       // schema name, e.g. "aten::conv2d"
  OpKind kind = OpKind::View;
  bool stitched = false;  // a stitched kernel (autograph::stitched), standing for several operators
  std::string shape;      // its first output's shape, e.g. "[1,64,56,56]"
  double start_ms = 0, ms = 0;
};

struct TimelineSpan {  // one stream's part of a stage
  int stream = 0;
  std::vector<TimelineOp> ops;  // in the order they run; views (no kernel) left out
};

struct TimelineStage {
  bool merged = false;  // a Merge stage: its spans' operators run as one kernel on the first span's stream
  double start_ms = 0, ms = 0;
  std::vector<TimelineSpan> spans;
};

struct Timeline {
  std::string times;  // where the durations come from, e.g. "predicted by analytical:cpu"
  double total_ms = 0;
  int streams = 0;
  std::vector<TimelineStage> stages;
};

}  // namespace autograph
