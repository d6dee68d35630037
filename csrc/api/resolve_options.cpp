// Options checked and resolved once; see resolve_options.h.
#include "api/resolve_options.h"

#include "api/plan_schedule.h"
#include "autograph/error.h"

namespace autograph {

Method MethodOf(const OptimizeOptions& options) {
  const std::string& name = options.search.method;
  if (name == "sequential") return Method::Sequential;
  if (name == "greedy") return Method::Greedy;
  if (name == "nimble") return Method::Nimble;
  if (name == "ios") return Method::Ios;
  if (name == "autograph") return Method::Autograph;
  throw InputError("option 'method' is \"" + name + "\"; use one of autograph, sequential, greedy, nimble, ios");
}

OptimizeOptions ResolveOptions(const OptimizeOptions& requested, ModelPath path) {
  CheckOptimizeOptions(requested);
  CheckOptionsApplyOn(OptionsSetIn(requested), path);
  MethodOf(requested);  // the table and the enum list the same names
  OptimizeOptions options = requested;
  options.executor.cuda_graph = requested.executor.cuda_graph && requested.executor.device.is_cuda();
  options.cost.model = CostModelName(options);
  options.cost.device_model = DeviceModelName(options);
  return options;
}

}  // namespace autograph
