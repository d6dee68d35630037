#pragma once
// On-board verification: candidate schedules of one graph run for real, side by side, and the fastest
// measured one is kept. A search ranks candidates with a cost model that sees stages one at a time;
// what a user gets is decided by the whole run on the device, against the schedules the search could
// have settled for (one stream, Nimble's) as well as its own best.
#include <c10/core/Device.h>
#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "autograph/candidate_timing.h"

namespace autograph {

struct ScheduleCandidate {
  std::string name;          // e.g. "autograph 1", "sequential", "nimble"
  Schedule schedule;
  double predicted_ms = -1;  // under the search's cost model; -1 when none predicted it
};


struct FastestScheduleOptions {
  int warmup = 3;
  int rounds = 10;
  double fastest_fraction = 0.3;
  // A candidate clearly slower after this many rounds runs no more (Racing); 0: all run every round.
  int race_after = 3;
  bool cuda_graph = false;  // run each candidate the way the optimized module will (CUDA only)
};

// Times every candidate as the optimized module runs it (StageExecutor on `device`), round after round
// in turn, and returns the index of the one with the lowest robust latency (ties: the earlier one).
// `timings` (optional) gets one entry per candidate, in order. Throws ScheduleError when a candidate
// does not fit the graph, Error when there is none.
size_t FastestSchedule(const OpGraph& graph, const std::vector<ScheduleCandidate>& candidates,
                       const std::vector<c10::IValue>& inputs, c10::Device device,
                       const FastestScheduleOptions& options = {}, std::vector<CandidateTiming>* timings = nullptr);

}  // namespace autograph
