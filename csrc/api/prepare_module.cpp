#include "api/prepare_module.h"

#include <ATen/Context.h>
#include <torch/script.h>

#include "api/calibration_inputs.h"
#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/lower_module.h"

namespace autograph {

PreparedModule PrepareModule(const torch::jit::Module& module, const OptimizeOptions& options,
                             const std::string& caller) {
  const c10::Device device = options.executor.device;
  if (options.example_inputs.empty())
    throw InputError(caller + " needs example inputs, one per forward() argument, to plan for real shapes");
  CheckCalibrationInputs(options.calibration_inputs, options.example_inputs, caller);
  if (device.is_cuda() && !at::hasCUDA())
    throw Error("--device " + device.str() + " was asked for but no CUDA device is available here");
  torch::jit::Module on_device = module.clone();
  on_device.to(device);
  PreparedModule prepared;
  prepared.inputs = InputsOn(options.example_inputs, device);
  for (const std::vector<c10::IValue>& call : options.calibration_inputs)
    prepared.calibration.push_back(InputsOn(call, device));
  prepared.lowered = LowerModule(on_device);
  return prepared;
}

c10::FunctionSchema ForwardSchemaFor(const torch::jit::Module& original, const c10::TypePtr& self_type) {
  const c10::FunctionSchema& schema = original.get_method("forward").function().getSchema();
  if (schema.returns().size() != 1 || schema.is_vararg())
    throw UnsupportedModelError("forward has the schema " + c10::toString(schema) +
                                "; autograph needs one return value and no variable arguments");
  std::vector<c10::Argument> arguments = schema.arguments();
  arguments[0] = arguments[0].cloneWithType(self_type);
  return schema.cloneWithArguments(std::move(arguments));
}

}  // namespace autograph
