// autograph optimize MODEL.pt -o OUT.pt [--method sequential|greedy|nimble|ios|autograph]
//                    [--cost analytical|measured] [--device cpu|cuda|cuda:N] [--json] ...
//                    [--precision bf16 [--tolerance T] [--calibration INPUTS.pt]]
// Every optimize option is a flag made from the option table (option_flags.cpp).
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "api/option_table.h"
#include "api/timeline_svg.h"
#include "commands.h"
#include "progress_bar.h"

namespace autograph::cli {

namespace {

struct OptimizeCommandOptions {
  std::string model, output;
  InputOptions inputs;
  nlohmann::json options;  // the optimize options given, by name (AddOptimizeOptionFlags)
  bool json = false;
  int measure_runs = 0;
  std::string trace, timeline;
  std::string calibration;  // --calibration FILE
};

// Median wall time of `runs` forward calls after `runs / 5 + 1` warm-up calls; on CUDA each call is
// followed by a device synchronize, so the time covers the kernels, not only their launch.
double MeasureMilliseconds(torch::jit::Module& module, const std::vector<c10::IValue>& inputs, int runs,
                           c10::Device device) {
  auto call = [&] {
    module.forward(inputs);
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  for (int i = 0; i < runs / 5 + 1; ++i) call();
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    call();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

void WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw Error("cannot write '" + path + "': " + std::strerror(errno));
}

OptimizeOptions OptionsOf(const OptimizeCommandOptions& o) {
  OptimizeOptions options = OptimizeOptionsFromJson(o.options);  // InputError naming a bad value
  options.example_inputs = MakeExampleInputs(ResolveInputSpecs(o.model, o.inputs));  // optimize moves them
  if (!o.calibration.empty()) options.calibration_inputs = ReadCalibrationInputs(o.calibration);
  return options;
}

int RunOptimize(const OptimizeCommandOptions& o) {
  // Every flag given is set, at its default value too: an export-path flag (--no-openvino) is refused
  // here, before the model loads, not ignored.
  CheckOptionsApplyOn(OptionKeysOf(o.options), ModelPath::TorchScript);
  torch::jit::Module module = LoadModule(o.model);
  OptimizeOptions options = OptionsOf(o);
  ProgressBar progress(options.search.method + " search");
  options.search.progress = [&progress](int done, int total) { progress.Update(done, total); };
  OptimizeReport report;
  torch::jit::Module optimized = optimize(module, options, &report);
  try {
    optimized.save(o.output);
  } catch (const c10::Error& e) {
    throw Error("cannot write '" + o.output + "': " + FirstLineOf(e));
  }
  nlohmann::json measured = nullptr;
  if (report.measured_ms >= 0) measured = report.measured_ms;
  if (o.measure_runs > 0) {
    std::vector<c10::IValue> inputs = InputsOn(options.example_inputs, options.executor.device);
    measured = MeasureMilliseconds(optimized, inputs, o.measure_runs, options.executor.device);
  }

  if (!o.trace.empty()) WriteTrace(optimized, InputsOn(options.example_inputs, options.executor.device),
                                   options.executor.device, o.trace);

  if (!o.timeline.empty()) {
    if (report.timeline.stages.empty())
      throw Error("no timeline to draw: " + (report.fallback.empty()
                                                  ? std::string("see the warning above")
                                                  : "optimize returned the model unchanged (" + report.fallback + ")"));
    const std::string name = std::filesystem::path(o.model).filename().string();
    WriteTextFile(o.timeline, TimelineSvg(report.timeline, name + ": " + report.method + " schedule on " + report.device));
  }

  nlohmann::json result = ReportToJson(report);
  result["model"] = o.model;
  if (!o.trace.empty()) result["trace"] = o.trace;
  if (!o.timeline.empty()) result["timeline_svg"] = o.timeline;
  result["measured_ms"] = measured;
  result["output"] = o.output;
  if (o.json) {
    std::cout << result.dump() << std::endl;
  } else {
    std::cout << "wrote " << o.output << ": " << report.method << " schedule, " << report.stages << " stages, "
              << report.groups << " groups on up to " << report.streams << " streams, " << report.operators_before
              << " operators -> " << report.operators_after << " kernels\n";
    if (!report.cost.empty())
      std::cout << "search: " << report.search_seconds << " s, " << report.states_explored << " states, "
                << report.stages_evaluated << " stages costed (" << report.cost << "), predicted "
                << report.predicted_ms << " ms\n";
    if (report.stages_measured + report.cost_cache_hits > 0)
      std::cout << "measured cost: " << report.stages_measured << " stages run, " << report.cost_cache_hits
                << " from the memo or the disk cache\n";
    for (const RewriteDecision& r : report.rewrites)
      std::cout << "rewrite " << r.name << ": " << r.changes << " change(s), "
                << (r.with_ms >= 0 ? std::to_string(r.without_ms) + " -> " + std::to_string(r.with_ms) + " ms, " : "")
                << (r.kept ? "kept" : "not kept") << "\n";
    for (const CandidateTiming& c : report.candidates)
      std::cout << "candidate " << c.name << ": " << c.measured_ms << " ms" << (c.name == report.chosen ? " (kept)" : "")
                << "\n";
    if (report.precision) {
      const PrecisionDecision& p = *report.precision;
      std::cout << "precision: kept " << p.kept << " (asked " << p.asked << ", tolerance " << p.tolerance;
      if (p.error >= 0) std::cout << ", error " << p.error;
      if (p.fp32_ms >= 0) std::cout << ", fp32 " << p.fp32_ms << " ms, " << p.asked << " " << p.lowered_ms << " ms";
      std::cout << ")" << (p.note.empty() ? "" : ": " + p.note) << "\n";
    }
    if (!measured.is_null()) std::cout << "measured: " << measured.get<double>() << " ms\n";
    if (!o.trace.empty()) std::cout << "trace of one run: " << o.trace << " (chrome://tracing or ui.perfetto.dev)\n";
    if (!o.timeline.empty()) std::cout << "timeline of the schedule: " << o.timeline << "\n";
  }
  return 0;
}

}  // namespace

Command AddOptimizeCommand(CLI::App& app) {
  auto o = std::make_shared<OptimizeCommandOptions>();
  CLI::App* cmd = app.add_subcommand("optimize", "Plan a schedule and write an optimized TorchScript module");
  cmd->add_option("model", o->model, "TorchScript file (.pt)")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the optimized module")->required();
  AddOptimizeOptionFlags(cmd, &o->options);
  cmd->add_option("--measure", o->measure_runs, "Time N runs of the optimized module (median ms in measured_ms)");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  cmd->add_option("--trace", o->trace,
                  "Write a Chrome / Perfetto trace (JSON) of one run of the optimized module: each operator's "
                  "start and end on its thread or CUDA stream");
  cmd->add_option("--timeline", o->timeline,
                  "Write the kept schedule as an SVG picture: stages x streams, each operator a box as wide as "
                  "its predicted time, merged and stitched kernels marked");
  AddInputOptions(cmd, &o->inputs);
  cmd->add_option("--calibration", o->calibration,
                  "More inputs on which a program below float32 must meet --tolerance: a list of input tuples "
                  "saved by torch.save([(x1,), (x2,)], FILE), each like the example inputs");
  return [o] { return RunOptimize(*o); };
}

}  // namespace autograph::cli
