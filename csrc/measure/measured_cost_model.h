#pragma once
// MeasuredCostModel: stage latencies measured by running each stage for real on the device, the way
// the optimized module runs it (StageExecutor: groups on CUDA streams or CPU threads), memoized per
// stage signature and kept in a disk cache, so that the same stage in another model, or the same
// model optimized again, costs nothing to measure. TimeSchedule times a whole schedule the same way,
// for the on-board verification of a search's best candidates.
#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph_pass/graph_values.h"
#include "search/cost/cost_model.h"

namespace autograph {

struct MeasuredCostOptions {
  c10::Device device = c10::kCPU;
  int warmup = 2, repeats = 10;     // per measurement
  double fastest_fraction = 0.3;    // robust statistic: mean of the fastest 30% of repeats
  // CUDA: time each stage as the program will run it — replayed from a CUDA Graph when the program
  // replays one (no host launch time is charged that a replay never pays), eagerly otherwise — and
  // with the L2 cache flushed before every sample (see TimeRuns). Both are part of the cache key.
  bool cuda_graph = false;
  bool flush_l2 = true;
  std::string cache_path;           // JSON file; empty = default under ~/.cache/autograph/costs/<device-id>.json
                                    // ($XDG_CACHE_HOME honoured); "none" = no disk cache
};

// Not thread-safe: one search thread owns one model.
class MeasuredCostModel : public CostModel {
 public:
  // Bound to one graph (a TorchScript graph's or an exported program's): `inputs` are the graph's
  // example inputs on options.device (an AtenGraph's: its weights, then the user's tensors). Runs the graph
  // once to record every intermediate value (the inputs a stage needs); they stay alive as long as
  // the model. Throws autograph::Error when called with another graph, InputError when the inputs
  // do not fit the graph.
  MeasuredCostModel(const OpGraph& graph, std::vector<c10::IValue> inputs, MeasuredCostOptions options = {});
  // The same from a recorded run of graph.graph() (no run of its own; Error for another graph's).
  MeasuredCostModel(const OpGraph& graph, const GraphValues& values, MeasuredCostOptions options = {});
  ~MeasuredCostModel() override;  // flushes new entries to the disk cache; errors swallowed
  MeasuredCostModel(const MeasuredCostModel&) = delete;
  MeasuredCostModel& operator=(const MeasuredCostModel&) = delete;

  std::string name() const override;  // "measured:<device id>"
  // The operator alone: a one-group stage of it.
  double OperatorMs(const OpGraph& graph, int op) override;
  double StageMs(const OpGraph& graph, const Stage& stage) override;

  int64_t measurements() const;  // stages actually run (memo and disk-cache misses)
  int64_t cache_hits() const;    // stages answered from the memo or the disk cache
  // Writes new entries to the disk cache (merged with what other writers added meanwhile; temp file
  // + rename). Throws Error naming the path when it cannot be written. No-op without a disk cache.
  void Flush();

  const std::string& device_id() const;  // e.g. "cuda:NVIDIA H100 80GB HBM3", "cpu:16 threads"
  const std::string& cache_path() const;  // the disk cache in use, or "" when none

 private:
  void Init(const OpGraph& graph, MeasuredCostOptions options);  // checks options, opens the disk cache
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs a whole schedule for real, as the optimized module would (StageExecutor, optional CUDA
// Graph), and returns the robust latency in ms plus median/p90. Used for on-board verification of
// the best candidates of a search. With cuda_graph the capture happens during warm-up (at least one
// warm-up run is made). Throws ScheduleError when the schedule does not fit the graph.
struct ScheduleTiming {
  double robust_ms, median_ms, p90_ms;
};
ScheduleTiming TimeSchedule(const OpGraph& graph, const Schedule& schedule, const std::vector<c10::IValue>& inputs,
                            c10::Device device, bool cuda_graph, int warmup, int repeats,
                            double fastest_fraction = 0.3);

}  // namespace autograph
