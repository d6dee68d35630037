// autograph calibrate MODEL.pt [MODEL2.pt ...] [-o FILE.json] [--device cpu|cuda] [--device-model NAME]
//                    [--input-shape ...] [--warmup N] [--repeats N] [--cache PATH|none] [--json]
// Measures every kernel-launching operator of the models alone on the device and fits the
// analytical cost model's efficiency factors and launch overhead to them, then times pairs of
// independent operators run concurrently and fits the price of an extra group (sync_us); writes the fitted
// DeviceModel, which `--device-model FILE.json` (DeviceModel::ByName) then loads; without -o it goes
// to this device's place in the cache (CalibratedDeviceModelPath), where optimize finds it by default.
#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <torch/script.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "api/apply_rewrites.h"
#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "commands.h"
#include "graph_pass/import_op_graph.h"
#include "graph_pass/lower_module.h"
#include "graph_pass/stitch_memory_bound_ops.h"
#include "measure/calibrate_device_model.h"
#include "measure/measured_cost_model.h"
#include "search/cost/analytical_cost_model.h"

namespace autograph::cli {

namespace {

struct CalibrateOptions {
  std::vector<std::string> models;
  std::string output, device = "cpu", device_model, cache;
  InputOptions inputs;
  int warmup = 2, repeats = 10;
  bool json = false;
  bool stitch = true;
};

nlohmann::json ErrorJson(const CalibrationError& e) {
  return {{"median", e.median}, {"p90", e.p90}, {"rms", e.rms}};
}

// The operators the fitted model predicts worst, worst first: where the analytical model's
// assumptions fail on this device.
nlohmann::json WorstOperators(const DeviceModel& fitted, const CalibrationReport& report, size_t count) {
  AnalyticalCostModel model(fitted);
  std::vector<std::pair<double, nlohmann::json>> rows;
  for (const OperatorTiming& t : report.timings) {
    const OpNode& node = t.graph->node(t.op);
    const double predicted = model.OperatorMs(*t.graph, t.op);
    nlohmann::json shapes = nlohmann::json::array();
    for (const TensorMeta& m : node.inputs) shapes.push_back(m.shape);
    rows.emplace_back(std::fabs(std::log(predicted / t.measured_ms)),
                      nlohmann::json{{"op", node.op}, {"inputs", shapes}, {"measured_ms", t.measured_ms},
                                     {"predicted_ms", predicted}});
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  nlohmann::json worst = nlohmann::json::array();
  for (size_t i = 0; i < rows.size() && i < count; ++i) worst.push_back(rows[i].second);
  return worst;
}

std::string Fixed(double x, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// What a calibration found and where it was written, for the two forms of output.
struct CalibrationOutcome {
  const CalibrateOptions& options;
  std::string device, device_id, start_name, output;
  int stitched_groups = 0;
  const CalibrationReport& report;
  const DeviceModel& fitted;
  nlohmann::json worst;  // WorstOperators
};

nlohmann::json OutcomeJson(const CalibrationOutcome& c) {
  const DeviceModel& fitted = c.fitted;
  const CalibrationReport& report = c.report;
  nlohmann::json factors = {{"gemm_efficiency", fitted.gemm_efficiency},
                            {"vector_efficiency", fitted.vector_efficiency},
                            {"memory_efficiency", fitted.memory_efficiency},
                            {"memory_gbps", fitted.memory_gbps},
                            {"launch_us", fitted.launch_us},
                            {"sm_bandwidth_share", fitted.sm_bandwidth_share},
                            {"sync_us", fitted.sync_us},
                            {"stitch_overhead_us", fitted.stitch_overhead_us}};
  nlohmann::json result = {{"models", c.options.models},
                           {"device", c.device},
                           {"device_id", c.device_id},
                           {"device_model", c.start_name},
                           {"operators", report.operators},
                           {"stitched_groups", c.stitched_groups},
                           {"measurements", report.measurements},
                           {"measure_seconds", report.measure_seconds},
                           {"fit_seconds", report.fit_seconds},
                           {"error_before", ErrorJson(report.before)},
                           {"error_after", ErrorJson(report.after)},
                           {"stages", report.stages},
                           {"sync_us_before", report.sync_us_before},
                           {"stage_error_before", ErrorJson(report.stages_before)},
                           {"stage_error_after", ErrorJson(report.stages_after)},
                           {"fitted", factors},
                           {"worst_operators", c.worst},
                           {"output", c.output}};
  return result;
}

void PrintOutcome(const CalibrationOutcome& c) {
  const DeviceModel& fitted = c.fitted;
  const CalibrationReport& report = c.report;
  std::cout << "calibrated " << c.start_name << " on " << c.device_id << " from " << report.operators
            << " operators (" << c.stitched_groups << " of them stitched groups; " << report.measurements << " measured in " << Fixed(report.measure_seconds, 1)
            << " s, the rest cached)\n"
            << "|ln(predicted/measured)|  median " << Fixed(report.before.median, 3) << " -> "
            << Fixed(report.after.median, 3) << ", p90 " << Fixed(report.before.p90, 3) << " -> "
            << Fixed(report.after.p90, 3) << "\n"
            << "gemm_efficiency " << Fixed(fitted.gemm_efficiency, 4) << ", vector_efficiency "
            << Fixed(fitted.vector_efficiency, 4) << ", memory_efficiency " << Fixed(fitted.memory_efficiency, 4)
            << " of " << Fixed(fitted.memory_gbps, 1) << " GB/s, launch_us " << Fixed(fitted.launch_us, 2)
            << ", sm_bandwidth_share " << Fixed(fitted.sm_bandwidth_share, 3) << ", stitch_overhead_us "
            << Fixed(fitted.stitch_overhead_us, 2) << "\n"
            << "concurrency: " << report.stages << " stages of two independent operators, sync_us "
            << Fixed(report.sync_us_before, 2) << " -> " << Fixed(fitted.sync_us, 2)
            << ", |ln(predicted/measured)| median " << Fixed(report.stages_before.median, 3) << " -> "
            << Fixed(report.stages_after.median, 3) << "\n"
            << "worst fitted operators (measured vs predicted ms):\n";
  for (const auto& row : c.worst)
    std::cout << "  " << row["op"].get<std::string>() << " " << row["inputs"].dump() << "  "
              << Fixed(row["measured_ms"].get<double>(), 4) << " vs " << Fixed(row["predicted_ms"].get<double>(), 4)
              << "\n";
  std::cout << "wrote " << c.output << (c.options.output.empty() ? " (optimize uses it by default on this device)" : "") << "\n";
}

int RunCalibrate(const CalibrateOptions& o) {
  const c10::Device device(o.device);
  if (device.is_cuda() && !at::hasCUDA())
    throw Error("--device cuda asked for, but no CUDA device is available here; use --device cpu");
  const std::string start_name = o.device_model.empty() ? (device.is_cuda() ? "h100" : "cpu") : o.device_model;
  const DeviceModel start = DeviceModel::ByName(start_name);

  at::NoGradGuard no_grad;
  MeasuredCostOptions measured_options;
  measured_options.device = device;
  measured_options.warmup = o.warmup;
  measured_options.repeats = o.repeats;
  measured_options.cache_path = o.cache;
  std::vector<std::unique_ptr<OpGraph>> graphs;
  std::vector<std::unique_ptr<MeasuredCostModel>> models;
  std::vector<CalibrationGraph> calibration;
  int stitched_groups = 0;
  for (const std::string& path : o.models) {
    torch::jit::Module module = LoadModule(path);
    module.to(device);
    auto inputs = MakeExampleInputs(ResolveInputSpecs(path, o.inputs), device);
    std::shared_ptr<torch::jit::Graph> lowered = LowerModule(module);
    // Stitched kernels are operators the search plans too: measured among the others, they show the
    // fit what a stitched group costs on this device.
    if (o.stitch) {
      // The planner's figures from the start model, as optimize's.
      stitched_groups += StitchMemoryBoundOps(lowered, inputs, StitchPlanOptionsFor(start)).groups;
    }
    graphs.push_back(std::make_unique<OpGraph>(ImportOpGraph(lowered, inputs)));
    models.push_back(std::make_unique<MeasuredCostModel>(*graphs.back(), inputs, measured_options));
    calibration.push_back(CalibrationGraph{graphs.back().get(), models.back().get()});
  }
  CalibrationReport report;
  const DeviceModel fitted = CalibrateDeviceModel(start, calibration, &report);
  for (auto& model : models) model->Flush();
  std::string output = o.output;
  if (output.empty()) {  // this device's calibration, which optimize then uses by default
    output = CalibratedDeviceModelPath(models.front()->device_id());
    if (output.empty()) throw InputError("neither XDG_CACHE_HOME nor HOME is set: give -o FILE.json");
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(output).parent_path(), ec);
  }
  SaveDeviceModel(fitted, output);

  const CalibrationOutcome outcome{o,      device.str(),    models.front()->device_id(), start_name, output,
                                   stitched_groups, report,     fitted,     WorstOperators(fitted, report, 5)};
  if (o.json) {
    std::cout << OutcomeJson(outcome).dump() << std::endl;
  } else {
    PrintOutcome(outcome);
  }
  return 0;
}

}  // namespace

Command AddCalibrateCommand(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Measure operators on the device and fit the analytical cost model's factors to them");
  cmd->add_option("models", o->models, "TorchScript files (.pt)")->required();
  cmd->add_option("-o,--output", o->output,
                  "Where to write the fitted device model (JSON); default: this device's calibration in "
                  "~/.cache/autograph/device_models/, which optimize then uses instead of the preset");
  cmd->add_option("--device", o->device, "Device to measure on")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--device-model", o->device_model,
                  "Device model to start from: h100, a100, v100, cpu or FILE.json (default: h100 on cuda, cpu on cpu)");
  cmd->add_option("--warmup", o->warmup, "Warm-up runs per measurement")->check(CLI::Range(0, 1000));
  cmd->add_option("--repeats", o->repeats, "Timed runs per measurement")->check(CLI::Range(1, 10000));
  cmd->add_option("--cache", o->cache,
                  "Measured-cost cache file (default ~/.cache/autograph/costs/<device>.json; none: no disk cache)");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  cmd->add_flag("--stitch,!--no-stitch", o->stitch,
                "Default on: measure the models with their memory-intensive operators stitched, as optimize plans them");
  AddInputOptions(cmd, &o->inputs);
  return [o] { return RunCalibrate(*o); };
}

}  // namespace autograph::cli
