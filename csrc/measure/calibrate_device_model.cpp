// Calibration of a DeviceModel against measured operator times; see calibrate_device_model.h.
#include "measure/calibrate_device_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "autograph/error.h"
#include "search/cost/analytical_cost_model.h"

namespace autograph {

namespace {

// One fitted factor: where it lives in the DeviceModel and its valid range.
struct Factor {
  const char* name;
  double DeviceModel::*field;
  double lo, hi;
};
const Factor kFactors[] = {
    {"gemm_efficiency", &DeviceModel::gemm_efficiency, 1e-4, 1.0},
    {"vector_efficiency", &DeviceModel::vector_efficiency, 1e-4, 1.0},
    // Up to 64: above 1, the measured operators move data faster than the DRAM peak (tensors that
    // stay in cache: an L2 of 50 MB on an H100, an L3 on a CPU), and Normalized() raises
    // memory_gbps instead, an efficiency staying a fraction of the peak.
    {"memory_efficiency", &DeviceModel::memory_efficiency, 1e-4, 64.0},
    {"launch_us", &DeviceModel::launch_us, 0.05, 2000.0},
    {"sm_bandwidth_share", &DeviceModel::sm_bandwidth_share, 0.05, 256.0},
    // Moves only where stitched kernels are among the timings (the error is flat in it otherwise).
    {"stitch_overhead_us", &DeviceModel::stitch_overhead_us, 0.01, 2000.0},
};

constexpr int kScanPoints = 33;
constexpr int kGoldenSteps = 40;
constexpr int kMaxSweeps = 12;

// A memory "efficiency" above 1 becomes effective bandwidth: the same predictions, a valid model.
DeviceModel Normalized(DeviceModel device) {
  if (device.memory_efficiency > 1) {
    device.memory_gbps *= device.memory_efficiency;
    device.memory_efficiency = 1;
  }
  return device;
}

bool Launches(const OpNode& node) { return node.kind == OpKind::ComputeBound || node.kind == OpKind::MemoryBound; }

// ln(predicted / measured) per operator timing.
std::vector<double> LogRatios(const DeviceModel& device, const std::vector<OperatorTiming>& timings) {
  AnalyticalCostModel model(Normalized(device));
  std::vector<double> ratios;
  ratios.reserve(timings.size());
  for (const OperatorTiming& t : timings)
    ratios.push_back(std::log(std::max(model.OperatorMs(*t.graph, t.op), 1e-12) / t.measured_ms));
  return ratios;
}

// ln(predicted / measured) per stage timing.
std::vector<double> LogRatios(const DeviceModel& device, const std::vector<StageTiming>& timings) {
  AnalyticalCostModel model(device);
  std::vector<double> ratios;
  ratios.reserve(timings.size());
  for (const StageTiming& t : timings)
    ratios.push_back(std::log(std::max(model.StageMs(*t.graph, t.stage), 1e-12) / t.measured_ms));
  return ratios;
}

double MeanSquare(const std::vector<double>& ratios) {
  double sum = 0;
  for (double r : ratios) sum += r * r;
  return sum / static_cast<double>(ratios.size());
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

CalibrationError ErrorOf(const std::vector<double>& ratios) {
  std::vector<double> abs;
  for (double r : ratios) abs.push_back(std::fabs(r));
  return CalibrationError{Quantile(abs, 0.5), Quantile(abs, 0.9), std::sqrt(MeanSquare(ratios))};
}

// Minimizes error(x) over x in [lo, hi] in log space, starting from `current` whose error is
// `*best`: the error is piecewise smooth (maxima of rooflines) and may have plateaus, so a scan, then
// golden-section refinement around the best point so far, which brackets the minimum between its
// neighbours. Returns the best x found when its error is below `*best` (and lowers `*best`), else
// nullopt.
std::optional<double> MinimizeInLogSpace(double lo, double hi, double current,
                                         const std::function<double(double)>& error, double* best) {
  const double log_lo = std::log(lo), log_hi = std::log(hi);
  auto error_at = [&](double log_x) { return error(std::clamp(std::exp(log_x), lo, hi)); };
  const double step = (log_hi - log_lo) / (kScanPoints - 1);
  double best_x = std::log(std::clamp(current, lo, hi)), best_error = *best;
  for (int i = 0; i < kScanPoints; ++i) {
    const double x = log_lo + i * step;
    const double e = error_at(x);
    if (e < best_error) best_error = e, best_x = x;
  }
  double a = std::max(log_lo, best_x - step), b = std::min(log_hi, best_x + step);
  const double ratio = (std::sqrt(5.0) - 1) / 2;
  double c = b - ratio * (b - a), d = a + ratio * (b - a);
  double ec = error_at(c), ed = error_at(d);
  for (int i = 0; i < kGoldenSteps; ++i) {
    if (ec < ed) {
      b = d, d = c, ed = ec;
      c = b - ratio * (b - a);
      ec = error_at(c);
    } else {
      a = c, c = d, ec = ed;
      d = a + ratio * (b - a);
      ed = error_at(d);
    }
  }
  if (ec < best_error) best_error = ec, best_x = c;
  if (ed < best_error) best_error = ed, best_x = d;
  if (!(best_error < *best)) return std::nullopt;
  *best = best_error;
  return std::clamp(std::exp(best_x), lo, hi);
}

// Minimizes the operators' error over one factor, the others fixed. Changes `device` only when that
// lowers the error below `*best`.
void FitFactor(const Factor& f, DeviceModel* device, const std::vector<OperatorTiming>& timings, double* best) {
  DeviceModel trial = *device;
  const auto value = MinimizeInLogSpace(f.lo, f.hi, device->*f.field, [&](double x) {
    trial.*f.field = x;
    return MeanSquare(LogRatios(trial, timings));
  }, best);
  if (value) device->*f.field = *value;
}

}  // namespace

std::vector<StageTiming> MeasureConcurrentPairs(const OpGraph& graph, MeasuredCostModel& measured, int max_pairs) {
  const int n = graph.size();
  std::vector<int> launching;
  for (const OpNode& node : graph.nodes())
    if (Launches(node)) launching.push_back(node.id);
  if (max_pairs <= 0 || launching.size() < 2) return {};
  // reaches[i][j]: a path from i to j (ids are topological: every edge goes from a lower id).
  std::vector<std::vector<bool>> reaches(n, std::vector<bool>(n, false));
  for (int i = n - 1; i >= 0; --i)
    for (int s : graph.succs(i)) {
      reaches[i][s] = true;
      for (int j = s + 1; j < n; ++j)
        if (reaches[s][j]) reaches[i][j] = true;
    }
  // Each operator pairs with the nearest later independent one; after a pair the next first operator
  // is `stride` further on, so the pairs spread over the graph.
  std::vector<StageTiming> timings;
  std::vector<bool> used(n, false);
  const size_t stride = std::max<size_t>(1, launching.size() / static_cast<size_t>(max_pairs));
  for (size_t k = 0; k < launching.size() && static_cast<int>(timings.size()) < max_pairs; ++k) {
    const int a = launching[k];
    if (used[a]) continue;
    for (size_t l = k + 1; l < launching.size(); ++l) {
      const int b = launching[l];
      if (used[b] || reaches[a][b]) continue;
      Stage stage;
      stage.groups = {{a}, {b}};
      timings.push_back(StageTiming{&graph, stage, measured.StageMs(graph, stage)});
      used[a] = used[b] = true;
      k += stride - 1;
      break;
    }
  }
  return timings;
}

DeviceModel FitStageOverheads(const DeviceModel& start, const std::vector<StageTiming>& timings,
                              CalibrationReport* report) {
  ValidateDeviceModel(start);
  std::vector<StageTiming> usable;
  for (const StageTiming& t : timings)
    if (t.graph && t.measured_ms > 0 && std::isfinite(t.measured_ms) && t.stage.groups.size() >= 2) usable.push_back(t);
  if (report) {
    report->stages = static_cast<int>(usable.size());
    report->sync_us_before = start.sync_us;
    report->stage_timings = usable;
  }
  if (usable.empty()) return start;
  DeviceModel fitted = start, trial = start;
  auto error_at = [&](double sync_us) {
    trial.sync_us = sync_us;
    return MeanSquare(LogRatios(trial, usable));
  };
  double best = error_at(start.sync_us);
  // Zero (concurrency costs nothing beyond its groups), then 0.01 us .. 5000 us in log space.
  if (const double e = error_at(0); e < best) best = e, fitted.sync_us = 0;
  if (const auto value = MinimizeInLogSpace(0.01, 5000.0, fitted.sync_us, error_at, &best)) fitted.sync_us = *value;
  ValidateDeviceModel(fitted);
  if (report) {
    report->stages_before = ErrorOf(LogRatios(start, usable));
    report->stages_after = ErrorOf(LogRatios(fitted, usable));
    report->fitted = fitted;
  }
  return fitted;
}

std::vector<OperatorTiming> MeasureOperators(const OpGraph& graph, MeasuredCostModel& measured) {
  std::vector<OperatorTiming> timings;
  for (const OpNode& node : graph.nodes()) {
    if (!Launches(node)) continue;
    timings.push_back(OperatorTiming{&graph, node.id, measured.OperatorMs(graph, node.id)});
  }
  return timings;
}

DeviceModel FitDeviceModel(const DeviceModel& start, const std::vector<OperatorTiming>& timings,
                           CalibrationReport* report) {
  ValidateDeviceModel(start);
  const auto begin = std::chrono::steady_clock::now();
  std::vector<OperatorTiming> usable;
  for (const OperatorTiming& t : timings)
    if (t.graph && t.measured_ms > 0 && std::isfinite(t.measured_ms)) usable.push_back(t);
  if (usable.empty())
    throw Error("calibration of device model \"" + start.name +
                "\": no operator with a measured time to fit; give a model with convolutions, GEMMs or "
                "elementwise operators");

  DeviceModel fitted = start;
  // Start inside the ranges (a preset may sit on a bound, e.g. launch_us 0).
  for (const Factor& f : kFactors) fitted.*f.field = std::clamp(fitted.*f.field, f.lo, f.hi);
  double error = MeanSquare(LogRatios(fitted, usable));
  const double start_error = MeanSquare(LogRatios(start, usable));
  if (start_error < error) fitted = start, error = start_error;
  for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
    const double before = error;
    for (const Factor& f : kFactors) FitFactor(f, &fitted, usable, &error);
    if (before - error <= 1e-9 * std::max(1.0, before)) break;
  }
  const std::string suffix = "-calibrated";
  if (fitted.name.size() < suffix.size() ||
      fitted.name.compare(fitted.name.size() - suffix.size(), suffix.size(), suffix) != 0)
    fitted.name += suffix;
  fitted = Normalized(fitted);
  ValidateDeviceModel(fitted);

  if (report) {
    report->operators = static_cast<int>(usable.size());
    report->before = ErrorOf(LogRatios(start, usable));
    report->after = ErrorOf(LogRatios(fitted, usable));
    report->fitted = fitted;
    report->timings = usable;
    report->fit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  }
  return fitted;
}

DeviceModel CalibrateDeviceModel(const DeviceModel& start, const std::vector<CalibrationGraph>& graphs,
                                 CalibrationReport* report) {
  const auto begin = std::chrono::steady_clock::now();
  std::vector<OperatorTiming> timings;
  int64_t measurements = 0;
  for (const CalibrationGraph& g : graphs) {
    if (!g.graph || !g.measured) throw Error("CalibrateDeviceModel: a graph without its MeasuredCostModel");
    const int64_t before = g.measured->measurements();
    std::vector<OperatorTiming> part = MeasureOperators(*g.graph, *g.measured);
    measurements += g.measured->measurements() - before;
    timings.insert(timings.end(), part.begin(), part.end());
  }
  double measure_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  DeviceModel fitted = FitDeviceModel(start, timings, report);
  // What concurrency costs, priced with the operators' fitted factors.
  const auto stages_begin = std::chrono::steady_clock::now();
  std::vector<StageTiming> stages;
  for (const CalibrationGraph& g : graphs) {
    const int64_t before = g.measured->measurements();
    std::vector<StageTiming> part = MeasureConcurrentPairs(*g.graph, *g.measured);
    measurements += g.measured->measurements() - before;
    stages.insert(stages.end(), part.begin(), part.end());
  }
  measure_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - stages_begin).count();
  fitted = FitStageOverheads(fitted, stages, report);
  if (report) {
    report->measurements = measurements;
    report->measure_seconds = measure_seconds;
  }
  return fitted;
}

DeviceModel CalibrateDeviceModel(const DeviceModel& start, const OpGraph& graph, MeasuredCostModel& measured,
                                 CalibrationReport* report) {
  return CalibrateDeviceModel(start, {CalibrationGraph{&graph, &measured}}, report);
}

}  // namespace autograph
