#pragma once
// Calibration of the analytical cost model: measure every kernel-launching operator alone on the
// device (MeasuredCostModel::OperatorMs), then fit the DeviceModel's factors — gemm_efficiency,
// vector_efficiency, memory_efficiency, launch_us, sm_bandwidth_share, and stitch_overhead_us where
// stitched kernels are among the operators — so that
// AnalyticalCostModel::OperatorMs matches the measurements in the least-squares sense on a log
// scale (a 2x error counts the same on a 10 us and on a 10 ms operator). Then what concurrency
// costs: pairs of independent operators are timed as one stage of two concurrent groups (on a CPU,
// two workers sharing the cores; on a GPU, two streams) and sync_us, the price of each extra group,
// is fitted to them the same way, the operators' factors fixed. Peak rates, SM count and
// max_concurrent_kernels are kept: they are published figures — with one exception: when
// memory-bound operators run faster than the DRAM peak allows (their tensors stay in cache, common
// at batch 1), memory_efficiency stays at 1 and memory_gbps is raised to the effective bandwidth.
#include <string>
#include <vector>

#include "core/op_graph.h"
#include "core/schedule.h"
#include "measure/measured_cost_model.h"
#include "search/cost/device_model.h"

namespace autograph {

// One measured operator.
struct OperatorTiming {
  const OpGraph* graph = nullptr;
  int op = -1;
  double measured_ms = 0;
};

// Spread of |ln(predicted / measured)| over the operators: 0 is a perfect fit, 0.69 a factor of 2.
struct CalibrationError {
  double median = 0, p90 = 0;
  double rms = 0;  // root mean square: what the fit minimizes
};

// One measured stage: concurrent groups of a graph's operators.
struct StageTiming {
  const OpGraph* graph = nullptr;
  Stage stage;
  double measured_ms = 0;
};

struct CalibrationReport {
  int operators = 0;                 // operators fitted (kernel-launching ones with a positive time)
  CalibrationError before, after;    // of the start model and of the fitted one
  DeviceModel fitted;
  std::vector<OperatorTiming> timings;
  int stages = 0;                              // concurrent stages sync_us was fitted to
  CalibrationError stages_before, stages_after;  // their error with the operators' fit, before and after sync_us
  double sync_us_before = 0;
  std::vector<StageTiming> stage_timings;
  int64_t measurements = 0;          // stages run for real (the others came from the memo or disk cache)
  double measure_seconds = 0, fit_seconds = 0;
};

// Times every ComputeBound and MemoryBound operator of `graph` alone (views and control flow are
// left out: the analytical model prices them as nothing and one launch).
std::vector<OperatorTiming> MeasureOperators(const OpGraph& graph, MeasuredCostModel& measured);

// Coordinate descent over the log of each factor within its valid range (efficiencies in
// [1e-4, 1], the memory one up to 64 as effective bandwidth, launch_us in [0.05, 2000],
// sm_bandwidth_share in [0.05, 256], stitch_overhead_us in [0.01, 2000]): per factor a coarse scan then golden-section refinement, a
// move kept only when it lowers the squared log error, so the fit never gets worse than `start`.
// Throws Error when no timing is usable. The result passes ValidateDeviceModel; its name is start's
// with "-calibrated" appended (once).
DeviceModel FitDeviceModel(const DeviceModel& start, const std::vector<OperatorTiming>& timings,
                           CalibrationReport* report = nullptr);

// Up to `max_pairs` pairs of independent kernel-launching operators of `graph` (neither reaches
// the other), spread over the graph, each timed as one Concurrent stage of two one-operator groups.
// A graph without independent operators (a chain) gives none.
std::vector<StageTiming> MeasureConcurrentPairs(const OpGraph& graph, MeasuredCostModel& measured, int max_pairs = 16);

// Fits sync_us (in [0, 5000] us: zero, then a scan in log space refined by golden section) so that
// AnalyticalCostModel::StageMs matches the stage timings in the least-squares sense on a log scale,
// every other field of `start` fixed; kept only where it lowers the error. No usable timing: `start`
// unchanged. Fills the stage fields of `report`.
DeviceModel FitStageOverheads(const DeviceModel& start, const std::vector<StageTiming>& timings,
                              CalibrationReport* report = nullptr);

struct CalibrationGraph {
  const OpGraph* graph = nullptr;
  MeasuredCostModel* measured = nullptr;  // bound to `graph`
};

// MeasureOperators on every graph, then FitDeviceModel on all the timings together; then
// MeasureConcurrentPairs on every graph and FitStageOverheads on those timings.
DeviceModel CalibrateDeviceModel(const DeviceModel& start, const std::vector<CalibrationGraph>& graphs,
                                 CalibrationReport* report = nullptr);
DeviceModel CalibrateDeviceModel(const DeviceModel& start, const OpGraph& graph, MeasuredCostModel& measured,
                                 CalibrationReport* report = nullptr);

}  // namespace autograph
