// autograph optimize MODEL.pt -o OUT.pt [--method sequential|greedy] [--device cpu|cuda] [--json] ...
#include <torch/cuda.h>
#include <torch/script.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "autograph/optimize.h"
#include "commands.h"

namespace autograph::cli {

namespace {

struct OptimizeCommandOptions {
  std::string model, output, method = "greedy", device = "cpu";
  InputOptions inputs;
  int max_streams = 8;
  bool cuda_graph = false, json = false;
  int measure_runs = 0;
  std::string device_model;
  int r = 3, s = 8, block = 24;
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

int RunOptimize(const OptimizeCommandOptions& o) {
  torch::jit::Module module = LoadModule(o.model);
  OptimizeOptions options;
  options.device = c10::Device(o.device);
  options.example_inputs = MakeExampleInputs(ResolveInputSpecs(o.model, o.inputs));  // optimize moves them
  options.method = o.method;
  options.max_streams = o.max_streams;
  options.cuda_graph = o.cuda_graph;
  options.device_model = o.device_model;
  options.ios_r = o.r;
  options.ios_s = o.s;
  options.ios_block = o.block;
  OptimizeReport report;
  torch::jit::Module optimized = optimize(module, options, &report);
  try {
    optimized.save(o.output);
  } catch (const c10::Error& e) {
    throw Error("cannot write '" + o.output + "': " + FirstLineOf(e));
  }
  nlohmann::json measured = nullptr;
  if (o.measure_runs > 0) {
    std::vector<c10::IValue> inputs;
    for (const auto& v : options.example_inputs) inputs.push_back(v.toTensor().to(options.device));
    measured = MeasureMilliseconds(optimized, inputs, o.measure_runs, options.device);
  }

  nlohmann::json result = {{"model", o.model},
                           {"method", report.method},
                           {"device", options.device.str()},
                           {"cost", report.method == "ios" ? nlohmann::json("analytical") : nlohmann::json(nullptr)},
                           {"operators_before", report.operators_before},
                           {"operators_after", report.operators_after},
                           {"stages", report.stages},
                           {"groups", report.groups},
                           {"streams", report.streams},
                           {"predicted_ms", report.predicted_ms >= 0 ? nlohmann::json(report.predicted_ms) : nlohmann::json(nullptr)},
                           {"measured_ms", measured},
                           {"search_seconds", report.search_seconds},
                           {"states_explored", report.states_explored},
                           {"output", o.output}};
  if (o.json) {
    std::cout << result.dump() << std::endl;
  } else {
    std::cout << "wrote " << o.output << ": " << report.method << " schedule, " << report.stages << " stages, "
              << report.groups << " groups on up to " << report.streams << " streams, " << report.operators_before
              << " operators";
    if (!measured.is_null()) std::cout << ", " << measured.get<double>() << " ms median";
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

Command AddOptimizeCommand(CLI::App& app) {
  auto o = std::make_shared<OptimizeCommandOptions>();
  CLI::App* cmd = app.add_subcommand("optimize", "Plan a schedule and write an optimized TorchScript module");
  cmd->add_option("model", o->model, "TorchScript file (.pt)")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the optimized module")->required();
  cmd->add_option("--method", o->method, "Scheduler")->check(CLI::IsMember({"sequential", "greedy", "ios"}));
  cmd->add_option("--device", o->device, "Device to plan and run on")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--max-streams", o->max_streams, "Most groups (streams/threads) per stage")->check(CLI::Range(1, 64));
  cmd->add_option("--device-model", o->device_model, "ios: device the analytical cost model describes")
      ->check(CLI::IsMember({"h100", "a100", "v100", "cpu"}));
  cmd->add_option("--r", o->r, "ios: most operators per group")->check(CLI::Range(1, 64));
  cmd->add_option("--s", o->s, "ios: most groups per stage")->check(CLI::Range(1, 64));
  cmd->add_option("--block", o->block, "ios: operators per block of the dynamic program")->check(CLI::Range(1, 64));
  cmd->add_flag("--cuda-graph", o->cuda_graph, "Capture the multi-stream run into a CUDA Graph (cuda only)");
  cmd->add_option("--measure", o->measure_runs, "Time N runs of the optimized module (median ms in measured_ms)");
  cmd->add_flag("--json", o->json, "One JSON object on stdout");
  AddInputOptions(cmd, &o->inputs);
  return [o] { return RunOptimize(*o); };
}

}  // namespace autograph::cli
