// Options checked and resolved once; see resolve_options.h.
#include "api/resolve_options.h"

#include "api/option_table.h"
#include "api/plan_schedule.h"

namespace autograph {

OptimizeOptions ResolveOptions(const OptimizeOptions& requested) {
  CheckOptimizeOptions(requested);
  OptimizeOptions options = requested;
  options.executor.cuda_graph = requested.executor.cuda_graph && requested.executor.device.is_cuda();
  if (options.cost.model.empty()) options.cost.model = options.executor.device.is_cuda() ? "measured" : "analytical";
  options.cost.device_model = DeviceModelName(options);
  return options;
}

}  // namespace autograph
