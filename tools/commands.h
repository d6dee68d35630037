#pragma once
// Subcommands of the `autograph` CLI. Each registers itself on the app and returns its exit code.
#include <CLI/CLI.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "autograph/model_loading.h"

namespace autograph::cli {

using Command = std::function<int()>;

Command AddInspectCommand(CLI::App& app);
Command AddOptimizeCommand(CLI::App& app);
Command AddBenchCommand(CLI::App& app);
Command AddCalibrateCommand(CLI::App& app);

// Markdown table of the host time each executor adds per operator (tools/host_overhead.cpp).
std::string MeasureHostOverhead();

// Runs `module` on `inputs` three times, then once under PyTorch's profiler, and saves that run as a
// Chrome / Perfetto trace at `path` (tools/trace_run.cpp). Throws Error when it cannot be written.
void WriteTrace(torch::jit::Module& module, const std::vector<c10::IValue>& inputs, c10::Device device,
                const std::string& path);

// One flag per optimize option, made from the option table (tools/option_flags.cpp); the options given
// land in `given` by name, for OptimizeOptionsFromJson.
void AddOptimizeOptionFlags(CLI::App* cmd, nlohmann::json* given);

// --input-shape / --dtype, shared by the commands that run a model.
struct InputOptions {
  std::vector<std::string> shapes;
  std::vector<std::string> dtypes;
  std::string file;  // --inputs: a description in NAME.json's format (any structure)
};
void AddInputOptions(CLI::App* cmd, InputOptions* options);
// Shapes from the options (--input-shape, or --inputs FILE), else from NAME.json beside the model;
// InputError when none exists or both options are given.
std::vector<InputSpec> ResolveInputSpecs(const std::string& model, const InputOptions& options);
// --calibration FILE: the calls' arguments saved by torch.save([(x1,), (x2,)], FILE) (an entry may be one
// tensor, a model's one argument); InputError where the file is missing or holds anything else.
std::vector<std::vector<c10::IValue>> ReadCalibrationInputs(const std::string& path);

}  // namespace autograph::cli
