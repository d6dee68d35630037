#pragma once
// The prologue optimize and substitute share: the module on the asked device, frozen and lowered,
// and the example inputs moved there.
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

#include <memory>
#include <string>
#include <vector>

#include "autograph/optimize_options.h"

namespace torch::jit {
struct Graph;
struct Module;
}  // namespace torch::jit

namespace autograph {

struct PreparedModule {
  std::shared_ptr<torch::jit::Graph> lowered;
  std::vector<c10::IValue> inputs;  // options.example_inputs on options.executor.device
  std::vector<std::vector<c10::IValue>> calibration;  // options.calibration_inputs on it
};

// `caller` names the entry point in messages ("optimize", "substitute"). Throws InputError without
// example inputs or with calibration inputs unlike them (CheckCalibrationInputs), Error when a CUDA
// device is asked for and there is none, and what LowerModule throws.
PreparedModule PrepareModule(const torch::jit::Module& module, const OptimizeOptions& options,
                             const std::string& caller);

// The schema the new module's forward takes: the original's (argument names, types, defaults,
// return), with `self` of the new module's type. Throws UnsupportedModelError when forward has more
// than one return value or variable arguments.
c10::FunctionSchema ForwardSchemaFor(const torch::jit::Module& original, const c10::TypePtr& self_type);

}  // namespace autograph
