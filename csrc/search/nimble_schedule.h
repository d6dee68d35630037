#pragma once
// Nimble's stream assignment (Kwon et al., NeurIPS 2020) as a Schedule: the baseline that decides
// streams from the graph's structure alone. The steps and why the result is a valid schedule are
// written out in csrc/search/nimble_schedule.cpp.
#include "core/op_graph.h"
#include "core/schedule.h"

namespace autograph {

struct NimbleStats {
  int chains = 0;              // chains of the minimum path cover (kernel operators only)
  int streams = 0;             // streams used after reusing streams across chains and folding to max_streams
  int cross_stream_edges = 0;  // edges of the graph whose two operators run on different streams
};

// Nimble (Kwon et al., NeurIPS 2020): no profiling. The kernel operators' DAG is reduced transitively
// and covered by the fewest vertex-disjoint chains (maximum bipartite matching), which gives maximal
// logical concurrency with the fewest synchronizations; chains that cannot overlap (one ends before
// the other starts) share a stream, found by a second matching; streams beyond max_streams are folded
// into the least-loaded ones. View operators (no kernel) run on their producer's stream. The stream
// of each operator becomes a Schedule: an operator's stage is the latest of its predecessors' stages,
// plus one after a predecessor on another stream or one that another stream waits for; a stage holds
// one group per stream (ops in id order), groups ordered by stream. The result always validates
// (ValidateSchedule), and every stage has at most max_streams groups. Throws ScheduleError when
// max_streams < 1.
Schedule NimbleSchedule(const OpGraph& graph, int max_streams, NimbleStats* stats = nullptr);

}  // namespace autograph
