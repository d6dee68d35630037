#pragma once
// Calibration of the analytical cost model: measure every kernel-launching operator alone on the
// device (MeasuredCostModel::OperatorMs), then fit the DeviceModel's factors — gemm_efficiency,
// vector_efficiency, memory_efficiency, launch_us, sm_bandwidth_share — so that
// AnalyticalCostModel::OperatorMs matches the measurements in the least-squares sense on a log
// scale (a 2x error counts the same on a 10 us and on a 10 ms operator). Peak rates, SM count and
// stage-level figures (sync_us, max_concurrent_kernels) are kept: they are published figures, and a
// one-operator measurement says nothing about them — with one exception: when memory-bound
// operators run faster than the DRAM peak allows (their tensors stay in cache, common at batch 1),
// memory_efficiency stays at 1 and memory_gbps is raised to the effective bandwidth.
#include <string>
#include <vector>

#include "autograph/device_model.h"
#include "autograph/measured_cost_model.h"
#include "autograph/op_graph.h"

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

struct CalibrationReport {
  int operators = 0;                 // operators fitted (kernel-launching ones with a positive time)
  CalibrationError before, after;    // of the start model and of the fitted one
  DeviceModel fitted;
  std::vector<OperatorTiming> timings;
  int64_t measurements = 0;          // stages run for real (the others came from the memo or disk cache)
  double measure_seconds = 0, fit_seconds = 0;
};

// Times every ComputeBound and MemoryBound operator of `graph` alone (views and control flow are
// left out: the analytical model prices them as nothing and one launch).
std::vector<OperatorTiming> MeasureOperators(const OpGraph& graph, MeasuredCostModel& measured);

// Coordinate descent over the log of each factor within its valid range (efficiencies in
// [1e-4, 1], the memory one up to 64 as effective bandwidth, launch_us in [0.05, 2000],
// sm_bandwidth_share in [0.05, 256]): per factor a coarse scan then golden-section refinement, a
// move kept only when it lowers the squared log error, so the fit never gets worse than `start`.
// Throws Error when no timing is usable. The result passes ValidateDeviceModel; its name is start's
// with "-calibrated" appended (once).
DeviceModel FitDeviceModel(const DeviceModel& start, const std::vector<OperatorTiming>& timings,
                           CalibrationReport* report = nullptr);

struct CalibrationGraph {
  const OpGraph* graph = nullptr;
  MeasuredCostModel* measured = nullptr;  // bound to `graph`
};

// MeasureOperators on every graph, then FitDeviceModel on all the timings together.
DeviceModel CalibrateDeviceModel(const DeviceModel& start, const std::vector<CalibrationGraph>& graphs,
                                 CalibrationReport* report = nullptr);
DeviceModel CalibrateDeviceModel(const DeviceModel& start, const OpGraph& graph, MeasuredCostModel& measured,
                                 CalibrationReport* report = nullptr);

}  // namespace autograph
