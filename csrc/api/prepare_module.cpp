#include "api/prepare_module.h"

#include <ATen/Context.h>
#include <torch/script.h>

#include "autograph/error.h"
#include "autograph/model_loading.h"
#include "graph_pass/lower_module.h"

namespace autograph {

PreparedModule PrepareModule(const torch::jit::Module& module, const OptimizeOptions& options,
                             const std::string& caller) {
  const c10::Device device = options.executor.device;
  if (options.example_inputs.empty())
    throw InputError(caller + " needs example inputs, one per forward() argument, to plan for real shapes");
  if (device.is_cuda() && !at::hasCUDA())
    throw Error("--device " + device.str() + " was asked for but no CUDA device is available here");
  torch::jit::Module on_device = module.clone();
  on_device.to(device);
  PreparedModule prepared;
  prepared.inputs = InputsOn(options.example_inputs, device);
  prepared.lowered = LowerModule(on_device);
  return prepared;
}

}  // namespace autograph
